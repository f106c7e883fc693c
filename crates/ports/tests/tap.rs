//! TAP port tests inside a private namespace: frames the port transmits are seen by
//! the kernel side (a packet socket on the interface, and the IP stack answering
//! ARP); frames the kernel sends come out of `rx_burst`. Needs root.

use std::time::{Duration, Instant};

use sluice_ports::tap::Tap;
use sluice_ports::testutil::{self, test_frame, test_frame_seq, NetNs, RawSocket};
use sluice_ports::{Port, RxBuf, BURST};

const PEER_MAC: [u8; 6] = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];

fn arp_request(sha: [u8; 6], spa: [u8; 4], tpa: [u8; 4]) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&sha);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
    f.extend_from_slice(&sha);
    f.extend_from_slice(&spa);
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&tpa);
    f.resize(60, 0);
    f
}

fn rx_until(port: &mut Tap, timeout: Duration, pred: impl Fn(&[u8]) -> bool) -> Option<Vec<u8>> {
    let mut bufs = RxBuf::burst(BURST);
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        let n = port.rx_burst(&mut bufs).expect("rx_burst");
        if let Some(b) = bufs[..n].iter().find(|b| pred(b.frame())) {
            return Some(b.frame().to_vec());
        }
        if n == 0 {
            testutil::wait_readable(port.raw_fd().unwrap(), Duration::from_millis(20)).unwrap();
        }
    }
    None
}

#[test]
fn tap_exchanges_frames_with_the_kernel() {
    assert!(testutil::is_root(), "the tap test needs root");
    let ns = NetNs::new("t").unwrap();
    let name = testutil::unique_name("tp");
    let n2 = name.clone();
    let mut port = ns.enter(move || Tap::open(&n2)).expect("open tap");
    assert_eq!(port.name(), name);
    assert!(port.link_up(), "tap is up with carrier once opened");
    let mac = port.hw_addr();
    let n2 = name.clone();
    let sock = ns.enter(move || RawSocket::open(&n2)).expect("raw socket on tap");

    // Port -> kernel: exact bytes on the interface.
    let frames: Vec<Vec<u8>> =
        (0..40u32).map(|i| test_frame(mac, PEER_MAC, i, 60 + i as usize * 20)).collect();
    let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
    assert_eq!(port.tx_burst(&refs).unwrap(), 40);
    let mut buf = vec![0u8; 2048];
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while got.len() < 40 && Instant::now() < deadline {
        if let Some(n) = sock.recv(&mut buf, Duration::from_millis(200)).unwrap() {
            if test_frame_seq(&buf[..n]).is_some() {
                got.push(buf[..n].to_vec());
            }
        }
    }
    assert_eq!(got, frames);

    // Kernel -> port: exact bytes out of rx_burst.
    let f = test_frame(PEER_MAC, mac, 4242, 300);
    sock.send(&f).unwrap();
    let got = rx_until(&mut port, Duration::from_secs(5), |g| test_frame_seq(g) == Some(4242));
    assert_eq!(got.as_deref(), Some(f.as_slice()));

    // The IP stack answers an ARP request sent through the port.
    ns.exec(&["ip", "addr", "add", "10.77.0.1/24", "dev", &name]).unwrap();
    let req = arp_request(PEER_MAC, [10, 77, 0, 2], [10, 77, 0, 1]);
    assert_eq!(port.tx_burst(&[&req]).unwrap(), 1);
    let reply = rx_until(&mut port, Duration::from_secs(5), |g| {
        g.len() >= 42 && g[12..14] == [0x08, 0x06] && g[20..22] == [0, 2]
    })
    .expect("ARP reply from the kernel");
    assert_eq!(&reply[0..6], &PEER_MAC, "reply to the requester");
    assert_eq!(&reply[6..12], &mac, "from the tap's MAC");
    assert_eq!(&reply[22..28], &mac, "sender hardware address");
    assert_eq!(&reply[28..32], &[10, 77, 0, 1], "sender protocol address");
    assert_eq!(&reply[32..38], &PEER_MAC);
    assert_eq!(&reply[38..42], &[10, 77, 0, 2]);

    // Admin down is visible.
    ns.exec(&["ip", "link", "set", &name, "down"]).unwrap();
    assert!(!port.link_up());
    assert!(port.stats().tx_packets >= 41);
}
