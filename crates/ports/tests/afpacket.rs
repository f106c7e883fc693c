//! Real AF_PACKET tests: two network namespaces joined by a veth pair; the sluice
//! port sits on one end, a plain packet socket (the test's generator and capture
//! point) on the other. Needs root (network namespaces): without it every
//! test fails, none skips.

use std::time::{Duration, Instant};

use sluice_ports::afpacket::{AfPacket, Config, RxMode};
use sluice_ports::link::{LinkChange, LinkEvent, LinkMonitor};
use sluice_ports::testutil::{self, test_frame, test_frame_seq, NetNs, RawSocket, Veth};
use sluice_ports::{Port, RxBuf, BURST};

const SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0b];
const DST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0a];

struct Topo {
    // Field order = drop order: the veth goes before its namespaces.
    veth: Veth,
    a: NetNs,
    b: NetNs,
}

fn topo() -> Topo {
    assert!(testutil::is_root(), "afpacket tests need root (network namespaces)");
    let a = NetNs::new("a").expect("netns a");
    let b = NetNs::new("b").expect("netns b");
    let veth = Veth::new(&a, &b).expect("veth");
    Topo { veth, a, b }
}

fn open_port(t: &Topo) -> AfPacket {
    let name = t.veth.a.clone();
    t.a.enter(move || AfPacket::open(&name, &Config::default())).expect("open afpacket port")
}

fn open_peer(t: &Topo) -> RawSocket {
    let name = t.veth.b.clone();
    t.b.enter(move || RawSocket::open(&name)).expect("open peer socket")
}

/// Receives test frames until `want` have arrived or `timeout` passes; returns them
/// (non-test frames are ignored) and the largest burst seen.
fn rx_test_frames(port: &mut AfPacket, want: usize, timeout: Duration) -> (Vec<Vec<u8>>, usize) {
    let mut bufs = RxBuf::burst(BURST);
    let mut got = Vec::new();
    let mut max_burst = 0;
    let deadline = Instant::now() + timeout;
    while got.len() < want && Instant::now() < deadline {
        let n = port.rx_burst(&mut bufs).expect("rx_burst");
        max_burst = max_burst.max(n);
        for b in &bufs[..n] {
            if test_frame_seq(b.frame()).is_some() {
                got.push(b.frame().to_vec());
            }
        }
        if n == 0 {
            let fd = port.raw_fd().expect("afpacket has an fd");
            testutil::wait_readable(fd, Duration::from_millis(20)).expect("poll");
        }
    }
    (got, max_burst)
}

fn capture(peer: &RawSocket, want: usize, timeout: Duration) -> Vec<Vec<u8>> {
    let mut buf = vec![0u8; 4096];
    let mut got = Vec::new();
    let deadline = Instant::now() + timeout;
    while got.len() < want {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match peer.recv(&mut buf, left).expect("recv") {
            Some(n) if test_frame_seq(&buf[..n.min(buf.len())]).is_some() => {
                got.push(buf[..n].to_vec())
            }
            Some(_) => {}
            None => break,
        }
    }
    got
}

#[test]
fn receives_exact_frames_in_bursts_of_32() {
    let t = topo();
    let mut port = open_port(&t);
    let peer = open_peer(&t);
    assert_eq!(port.name(), t.veth.a);
    assert!(port.link_up());

    // 100 frames of varied sizes, then a VLAN-tagged one (the kernel strips the tag
    // into metadata; the port must put it back).
    let mut sent: Vec<Vec<u8>> =
        (0..100u32).map(|i| test_frame(DST, SRC, i, 60 + (i as usize * 37) % 1455)).collect();
    let mut tagged = test_frame(DST, SRC, 1000, 80);
    tagged.splice(12..12, [0x81, 0x00, 0x20, 0x07]); // PCP 1, VID 7
                                                     // The tag is now in front of the 0x88b5 EtherType; test_frame_seq must not
                                                     // see it, so compare it separately below.
    for f in &sent {
        peer.send(f).expect("send");
    }
    peer.send(&tagged).expect("send tagged");
    // Let a block retire with everything in it, so bursts are full.
    std::thread::sleep(Duration::from_millis(50));

    let mut bufs = RxBuf::burst(BURST);
    let mut got: Vec<Vec<u8>> = Vec::new();
    let mut max_burst = 0;
    let deadline = Instant::now() + Duration::from_secs(5);
    while got.len() < 101 && Instant::now() < deadline {
        let n = port.rx_burst(&mut bufs).expect("rx_burst");
        max_burst = max_burst.max(n);
        for b in &bufs[..n] {
            let f = b.frame();
            if test_frame_seq(f).is_some() || f.get(16..18) == Some(&[0x88, 0xb5]) {
                got.push(f.to_vec());
            }
        }
        if n == 0 {
            testutil::wait_readable(port.raw_fd().unwrap(), Duration::from_millis(20)).unwrap();
        }
    }
    assert_eq!(got.len(), 101, "all frames received");
    assert_eq!(max_burst, BURST, "a burst is capped at the buffers given");
    sent.push(tagged);
    for (i, (g, s)) in got.iter().zip(&sent).enumerate() {
        assert_eq!(g, s, "frame {i} differs");
    }
    let st = port.stats();
    assert!(st.rx_packets >= 101);
}

#[test]
fn transmits_exact_frames_including_bursts_over_32() {
    let t = topo();
    let mut port = open_port(&t);
    let peer = open_peer(&t);

    let frames: Vec<Vec<u8>> =
        (0..200u32).map(|i| test_frame(DST, SRC, i, 60 + (i as usize * 53) % 1455)).collect();
    let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
    let mut sent = 0;
    let deadline = Instant::now() + Duration::from_secs(5);
    while sent < refs.len() && Instant::now() < deadline {
        // Offer 70 at a time: more than a burst, less than the ring.
        let end = (sent + 70).min(refs.len());
        sent += port.tx_burst(&refs[sent..end]).expect("tx_burst");
    }
    assert_eq!(sent, 200);
    let got = capture(&peer, 200, Duration::from_secs(5));
    assert_eq!(got.len(), 200, "all frames captured on the peer");
    for (i, (g, s)) in got.iter().zip(&frames).enumerate() {
        assert_eq!(g, s, "frame {i} differs");
    }
    let st = port.stats();
    assert_eq!(st.tx_packets, 200);

    // Unsendable frames are consumed and counted, not retried forever.
    let runt = [0u8; 10];
    let giant = vec![0u8; 9000];
    assert_eq!(port.tx_burst(&[&runt, &giant]).unwrap(), 2);
    assert_eq!(port.stats().tx_errors, 2);
}

#[test]
fn round_trip_through_a_second_port() {
    // Port A transmits, port B (on the peer end) receives: both sides are sluice.
    let t = topo();
    let mut pa = open_port(&t);
    let name_b = t.veth.b.clone();
    let mut pb = t.b.enter(move || AfPacket::open(&name_b, &Config::default())).expect("port b");
    let frames: Vec<Vec<u8>> = (0..64u32).map(|i| test_frame(DST, SRC, i, 64)).collect();
    let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
    assert_eq!(pa.tx_burst(&refs).unwrap(), 64);
    let (got, _) = rx_test_frames(&mut pb, 64, Duration::from_secs(5));
    assert_eq!(got, frames);
}

fn wait_link(port: &AfPacket, up: bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if port.link_up() == up {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn wait_event(mon: &mut LinkMonitor, name: &str, change: LinkChange) -> bool {
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut ev: Vec<LinkEvent> = Vec::new();
    while Instant::now() < deadline {
        ev.clear();
        mon.poll(&mut ev).expect("monitor poll");
        if ev.iter().any(|e| e.name == name && e.change == change) {
            return true;
        }
        testutil::wait_readable(mon.raw_fd(), Duration::from_millis(50)).unwrap();
    }
    false
}

#[test]
fn link_down_and_up_is_seen_and_tx_recovers() {
    let t = topo();
    let mut port = open_port(&t);
    let peer = open_peer(&t);
    let a = t.veth.a.clone();
    let mut mon = t.a.enter(LinkMonitor::new).expect("monitor");
    assert!(wait_event(&mut mon, &a, LinkChange::Up), "dump reports the link up");
    assert_eq!(mon.state_of(&a), Some(true));

    // Peer down: our carrier goes away.
    t.b.exec(&["ip", "link", "set", &t.veth.b, "down"]).unwrap();
    assert!(wait_link(&port, false), "carrier loss seen by link_up");
    assert!(wait_event(&mut mon, &a, LinkChange::Down), "monitor reports down");
    t.b.exec(&["ip", "link", "set", &t.veth.b, "up"]).unwrap();
    assert!(wait_link(&port, true), "carrier back");
    assert!(wait_event(&mut mon, &a, LinkChange::Up), "monitor reports up");

    // Our end administratively down: rx is quiet (not an error), tx fails.
    t.a.exec(&["ip", "link", "set", &a, "down"]).unwrap();
    assert!(wait_link(&port, false));
    let mut bufs = RxBuf::burst(BURST);
    for _ in 0..40 {
        assert_eq!(port.rx_burst(&mut bufs).expect("rx on a down link is not an error"), 0);
    }
    let f = test_frame(DST, SRC, 7, 100);
    let r = port.tx_burst(&[&f, &f, &f]);
    assert!(r.is_err(), "tx on a down link reports an error, got {r:?}");
    assert_eq!(port.stats().tx_dropped, 3);

    // Back up: the ring is still in step with the kernel, frames go out exactly.
    t.a.exec(&["ip", "link", "set", &a, "up"]).unwrap();
    assert!(wait_link(&port, true));
    let frames: Vec<Vec<u8>> = (0..40u32).map(|i| test_frame(DST, SRC, 500 + i, 90)).collect();
    let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
    assert_eq!(port.tx_burst(&refs).unwrap(), 40);
    let got = capture(&peer, 40, Duration::from_secs(5));
    assert_eq!(got, frames, "after down/up exactly the new frames arrive, in order");

    // And receive works again.
    for f in &frames[..5] {
        peer.send(f).unwrap();
    }
    let (got, _) = rx_test_frames(&mut port, 5, Duration::from_secs(5));
    assert_eq!(got, frames[..5].to_vec());
}

fn expect_removed(port: &mut AfPacket) {
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
    let e = err.expect("rx_burst reports the removed interface");
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
    let f = test_frame(DST, SRC, 1, 60);
    let e = port.tx_burst(&[&f]).expect_err("tx_burst on a removed interface fails");
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    assert!(!port.link_up());
    // Still an error, still no panic.
    assert!(port.rx_burst(&mut bufs).is_err());
}

#[test]
fn deleted_interface_is_reported_cleanly() {
    let t = topo();
    let mut port = open_port(&t);
    let a = t.veth.a.clone();
    let mut mon = t.a.enter(LinkMonitor::new).expect("monitor");
    assert!(wait_event(&mut mon, &a, LinkChange::Up));
    t.a.exec(&["ip", "link", "del", &a]).unwrap();
    expect_removed(&mut port);
    assert!(wait_event(&mut mon, &a, LinkChange::Removed), "monitor reports removal");
    assert_eq!(mon.state_of(&a), None);
}

#[test]
fn deleted_while_down_is_reported_too() {
    // The ENETDOWN socket error is consumed while the link is down, so removal
    // must be noticed some other way (the socket's binding).
    let t = topo();
    let mut port = open_port(&t);
    let a = t.veth.a.clone();
    t.a.exec(&["ip", "link", "set", &a, "down"]).unwrap();
    let mut bufs = RxBuf::burst(BURST);
    for _ in 0..40 {
        assert_eq!(port.rx_burst(&mut bufs).unwrap(), 0);
    }
    t.a.exec(&["ip", "link", "del", &a]).unwrap();
    expect_removed(&mut port);
}

#[test]
fn small_rings_wrap_around_many_times() {
    // 4 RX blocks of 16 KiB (≈ 15 frames of 1000 bytes each) and 64 TX slots:
    // 2000 frames each way go around both rings dozens of times.
    let t = topo();
    let cfg = Config { rx: RxMode::Ring, blocks: 4, block_size: 16384, tov_ms: 1, tx_frames: 64 };
    let na = t.veth.a.clone();
    let mut port = t.a.enter(move || AfPacket::open(&na, &cfg)).expect("open");
    let peer = open_peer(&t);
    let frames: Vec<Vec<u8>> = (0..2000u32).map(|i| test_frame(DST, SRC, i, 1000)).collect();

    // Peer -> port, in steps small enough that the ring never overflows.
    let mut got: Vec<Vec<u8>> = Vec::new();
    for chunk in frames.chunks(10) {
        for f in chunk {
            peer.send(f).unwrap();
        }
        let want = got.len() + chunk.len();
        let (more, _) = rx_test_frames(&mut port, chunk.len(), Duration::from_secs(5));
        got.extend(more);
        assert_eq!(got.len(), want, "frames lost at {want}");
    }
    assert!(got == frames, "received frames differ from sent");
    assert_eq!(port.stats().rx_dropped, 0);

    // Port -> peer through the 64-slot TX ring.
    let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
    let mut cap = Vec::new();
    let mut sent = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while (sent < refs.len() || cap.len() < refs.len()) && Instant::now() < deadline {
        if sent < refs.len() {
            let end = (sent + 48).min(refs.len());
            sent += port.tx_burst(&refs[sent..end]).expect("tx_burst");
        }
        let want = sent - cap.len();
        cap.extend(capture(&peer, want, Duration::from_millis(500)));
    }
    assert_eq!(cap.len(), frames.len());
    assert!(cap == frames, "captured frames differ from sent");
}

#[test]
fn queued_frames_leave_in_order_at_the_flush_and_a_full_ring_says_so() {
    // 16 TX slots (rounded up to whole blocks): queueing 100 frames without a
    // flush must stop at the ring's size (the kernel is not told, so it frees
    // nothing), and after flushes the rest go out; the peer sees all 100, in
    // order, exactly.
    let t = topo();
    let cfg = Config { tx_frames: 16, ..Config::default() };
    let na = t.veth.a.clone();
    let mut port = t.a.enter(move || AfPacket::open(&na, &cfg)).expect("open");
    let peer = open_peer(&t);
    let frames: Vec<Vec<u8>> =
        (0..100u32).map(|i| test_frame(DST, SRC, i, 60 + (i as usize * 97) % 1400)).collect();
    let mut queued = 0;
    while queued < frames.len() && port.tx_queue(&frames[queued]).expect("tx_queue") {
        queued += 1;
    }
    assert!((16..64).contains(&queued), "the ring took {queued} frames before the kernel was told");
    assert_eq!(port.stats().tx_packets, 0, "nothing counted before the kick");
    let deadline = Instant::now() + Duration::from_secs(5);
    while queued < frames.len() && Instant::now() < deadline {
        port.tx_flush().expect("tx_flush");
        while queued < frames.len() && port.tx_queue(&frames[queued]).expect("tx_queue") {
            queued += 1;
        }
    }
    port.tx_flush().expect("tx_flush");
    assert_eq!(queued, 100);
    let got = capture(&peer, 100, Duration::from_secs(5));
    assert!(got == frames, "captured {} frames, not the 100 queued in order", got.len());
    assert_eq!(port.stats().tx_packets, 100);
    // A frame the port can never send is consumed and counted.
    assert!(port.tx_queue(&[0u8; 10]).unwrap());
    assert_eq!(port.stats().tx_errors, 1);
}

/// `rx=recv` (the default) hands a lone frame over at once: with a block
/// timeout of 10 s, a TPACKET_V3 ring (`rx=ring`) would keep it (and its
/// descriptor would not even poll readable) for those 10 s; the wait below
/// gives up after 5 s.
#[test]
fn a_lone_frame_does_not_wait_for_a_block_timeout() {
    let t = topo();
    let cfg = Config { tov_ms: 10_000, ..Config::default() };
    let na = t.veth.a.clone();
    let mut port = t.a.enter(move || AfPacket::open(&na, &cfg)).expect("open");
    let peer = open_peer(&t);
    let fd = port.raw_fd().expect("afpacket has an fd");
    let mut bufs = RxBuf::burst(BURST);
    for i in 0..3u32 {
        let f = test_frame(DST, SRC, i, 100);
        peer.send(&f).expect("send");
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut got = None;
        while got.is_none() && Instant::now() < deadline {
            // Readable as soon as the frame is there (no spinning here).
            testutil::wait_readable(fd, Duration::from_millis(500)).expect("poll");
            let n = port.rx_burst(&mut bufs).expect("rx_burst");
            got = bufs[..n]
                .iter()
                .find(|b| test_frame_seq(b.frame()).is_some())
                .map(|b| b.frame().to_vec());
        }
        assert_eq!(got.as_deref(), Some(&f[..]), "frame {i} was not handed over");
    }
}
