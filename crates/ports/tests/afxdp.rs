//! AF_XDP port tests (feature `afxdp`), on a veth pair between two namespaces, in
//! copy mode. Needs root and a kernel with AF_XDP.
#![cfg(feature = "afxdp")]

use std::time::{Duration, Instant};

use sluice_ports::afxdp::{AfXdp, Config};
use sluice_ports::testutil::{self, test_frame, test_frame_seq, NetNs, RawSocket, Veth};
use sluice_ports::{Port, RxBuf, BURST};

const SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
const DST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];

struct Topo {
    veth: Veth,
    a: NetNs,
    b: NetNs,
}

fn topo() -> Option<Topo> {
    assert!(testutil::is_root(), "afxdp tests need root");
    let a = NetNs::new("xa").expect("netns");
    let b = NetNs::new("xb").expect("netns");
    let veth = Veth::new(&a, &b).expect("veth");
    Some(Topo { veth, a, b })
}

fn open(t: &Topo, mode: &str) -> AfXdp {
    let name = t.veth.a.clone();
    let cfg = Config { mode: mode.into(), ..Config::default() };
    t.a.enter(move || AfXdp::open(&name, &cfg)).expect("open afxdp port")
}

fn rx_frames(port: &mut AfXdp, want: usize, timeout: Duration) -> Vec<Vec<u8>> {
    let mut bufs = RxBuf::burst(BURST);
    let mut got = Vec::new();
    let deadline = Instant::now() + timeout;
    while got.len() < want && Instant::now() < deadline {
        let n = port.rx_burst(&mut bufs).expect("rx_burst");
        assert!(n <= BURST);
        got.extend(
            bufs[..n]
                .iter()
                .filter(|b| test_frame_seq(b.frame()).is_some())
                .map(|b| b.frame().to_vec()),
        );
        if n == 0 {
            testutil::wait_readable(port.raw_fd().unwrap(), Duration::from_millis(20)).unwrap();
        }
    }
    got
}

/// Test frames the peer receives, until `want` or 5 s.
fn capture(peer: &RawSocket, want: usize) -> Vec<Vec<u8>> {
    let mut buf = vec![0u8; 4096];
    let mut cap = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while cap.len() < want && Instant::now() < deadline {
        if let Some(n) = peer.recv(&mut buf, Duration::from_millis(200)).unwrap() {
            if test_frame_seq(&buf[..n]).is_some() {
                cap.push(buf[..n].to_vec());
            }
        }
    }
    cap
}

#[test]
fn afxdp_copy_mode_rx_tx_exact() {
    let Some(t) = topo() else { return };
    let mut port = open(&t, "copy");
    assert!(port.link_up());
    let nb = t.veth.b.clone();
    let peer = t.b.enter(move || RawSocket::open(&nb)).unwrap();

    let frames: Vec<Vec<u8>> =
        (0..100u32).map(|i| test_frame(DST, SRC, i, 60 + (i as usize * 37) % 1455)).collect();
    for f in &frames {
        peer.send(f).unwrap();
        // The veth → XDP path has a small ring; pace the generator a little.
        if f[17] % 16 == 15 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let got = rx_frames(&mut port, 100, Duration::from_secs(5));
    assert_eq!(got.len(), 100);
    assert_eq!(got, frames);

    let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
    let mut sent = 0;
    let deadline = Instant::now() + Duration::from_secs(5);
    while sent < refs.len() && Instant::now() < deadline {
        let end = (sent + 70).min(refs.len());
        sent += port.tx_burst(&refs[sent..end]).unwrap();
    }
    assert_eq!(sent, 100);
    let cap = capture(&peer, 100);
    let seqs: Vec<u32> = cap.iter().filter_map(|f| test_frame_seq(f)).collect();
    assert_eq!(cap.len(), 100, "captured seqs {seqs:?}, stats {:?}", port.stats());
    assert!(cap == frames, "captured frames differ from sent (seqs {seqs:?})");
    assert_eq!(port.stats().tx_packets, 100);

    // The same frames again, queued one by one and kicked once per 32 (as a
    // worker's burst does), retrying after a kick when the ring is full.
    let mut queued = 0;
    let deadline = Instant::now() + Duration::from_secs(5);
    while queued < frames.len() && Instant::now() < deadline {
        let stop = (queued + 32).min(frames.len());
        while queued < stop && port.tx_queue(&frames[queued]).unwrap() {
            queued += 1;
        }
        port.tx_flush().unwrap();
    }
    assert_eq!(queued, 100);
    let cap = capture(&peer, 100);
    assert!(cap == frames, "queued frames: captured {} of 100, or out of order", cap.len());
    assert_eq!(port.stats().tx_packets, 200);
}

#[test]
fn afxdp_reports_removal() {
    let Some(t) = topo() else { return };
    let mut port = open(&t, "copy");
    t.a.exec(&["ip", "link", "del", &t.veth.a]).unwrap();
    let mut bufs = RxBuf::burst(BURST);
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut err = None;
    while Instant::now() < deadline {
        match port.rx_burst(&mut bufs) {
            Ok(_) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    assert_eq!(err.expect("removal reported").kind(), std::io::ErrorKind::NotFound);
    assert!(port.tx_burst(&[&[0u8; 60][..]]).is_err());
    assert!(!port.link_up());
}

/// A queue the device does not have (a veth has one): the kernel refuses
/// the socket, and the error names the interface, the queue and the mode.
#[test]
fn afxdp_refused_socket_is_a_clear_error() {
    let Some(t) = topo() else { return };
    let name = t.veth.a.clone();
    let cfg = Config { queue: 7, mode: "copy".into(), ..Config::default() };
    let err = match t.a.enter(move || AfXdp::open(&name, &cfg)) {
        Ok(_) => panic!("an AF_XDP socket on queue 7 of a veth was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains(&format!("afxdp:{}:", t.veth.a)), "{err}");
    assert!(
        err.contains("refused") && err.contains("queue 7") && err.contains("mode copy"),
        "{err}"
    );
}
