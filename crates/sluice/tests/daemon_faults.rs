//! Fault tests for `sluice run`: what the daemon does when its controller
//! dies and comes back (in both fail modes), when a port's interface is
//! deleted and re-created, and when the controller stops reading its socket
//! while the switch has many PACKET_INs for it.
//!
//! Every test runs the real binary (`CARGO_BIN_EXE_sluice`) with AF_PACKET
//! ports on veths inside a switch namespace the test creates; each host end
//! sits in its own namespace and is driven through a raw AF_PACKET socket
//! (frames of experimental EtherTypes carrying a sequence number, so every
//! frame is identified exactly). The controller is written here: a TCP
//! listener speaking OpenFlow 1.3 through `sluice-ofp`, so a test decides
//! exactly when it stops, restarts or stops reading.
//!
//! Non-delivery is never concluded from a quiet wait alone: the frames that
//! must be dropped are followed, from the same host and port, by a marker
//! frame that must arrive; frames of one ingress port are processed in
//! order, so once the marker is seen the earlier frames had their chance.
//!
//! Needs root, `ip` and `ovs-ofctl` (dump-flows through the daemon's
//! passive listener), and `sysctl`; without them the tests fail saying what is missing.
//! Namespaces (and the veths in them), the config file and the daemon (by
//! pid) are removed by Drop guards, also when a test fails; every wait is
//! bounded in time and every loop in count.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use sluice_ofp::message::{port_reason, Message};

mod of_controller;
use of_controller::{Controller, Got, OfConn};

mod faultlab;
mod netlab;
use faultlab::*;

// ---------------------------------------------------------------------------
// Tests

/// Fail mode secure, the controller killed and restarted 20 times while
/// traffic flows (both directions forwarded by flows, table misses from
/// host 0): the flows stay (dump-flows unchanged) and forward every frame,
/// misses are dropped (no flooding or learning), the switch reconnects
/// each time within the configured backoff and does HELLO / FEATURES
/// again, and every frame is accounted for (conservation, `faultlab`).
#[test]
fn secure_controller_killed_and_restarted() {
    if !can_run() {
        return;
    }
    let lab = Lab::new(2);
    let ctl = Controller::bind(0);
    let cport = ctl.port;
    let lport = free_port();
    let cfg = TempFile::config(
        "[agent]\nbackoff_min_ms = 100\nbackoff_max_ms = 400\nprobe_interval_ms = 30000\n",
    );
    let mut sw = Switch::start(&switch_args(&lab, &cfg, "secure", cport, Some(lport), DPID));
    let mut c = ctl.accept(Duration::from_secs(20), &mut sw);
    assert_eq!(c.handshake().datapath_id, DPID);
    c.add_flow("priority=100,in_port=1,dl_type=0x88b5,actions=output:2");
    c.add_flow("priority=100,in_port=2,dl_type=0x88b5,actions=output:1");
    // Host 1's broadcasts go to the controller (unsent while it is down).
    c.add_flow("priority=50,in_port=2,dl_dst=ff:ff:ff:ff:ff:ff,actions=controller:128");
    c.barrier();
    lab.assert_forwards(0, 1, 0, 50, 45);
    lab.assert_forwards(1, 0, 0, 50, 45);
    lab.assert_misses_dropped(0, 1, 1000);
    sw.wait_port(lport);
    let flows = dump_flows(lport);
    assert_eq!(flows.len(), 3, "{flows:?}");
    let before = sw.ledger(&lab, false, "before the faults");

    // 20 kills and restarts under traffic (~2000 frames/s of each stream).
    let streams = [
        (0, mac(1), ETH_OK),
        (1, mac(0), ETH_OK),
        (0, mac(1), ETH_MISS),
        (0, BROADCAST, ETH_MISS),
        (1, BROADCAST, ETH_MISS),
    ];
    let mut ctl = Some(ctl);
    let mut c = Some(c);
    let (reconnects, sent) = lab.under_traffic(&streams, 10_000, 20, || {
        let mut worst = Duration::ZERO;
        for round in 0..20 {
            // Kill the controller (socket and listener): nothing listens now.
            drop(c.take());
            drop(ctl.take());
            sw.wait_log("controller connection ended", round + 1, Duration::from_secs(10));
            if round % 5 == 0 {
                assert_eq!(dump_flows(lport), flows, "flows changed when the controller left");
            }
            std::thread::sleep(Duration::from_millis(200));
            // It comes back on the same port: the switch reconnects (backoff
            // at most 400 ms; 10 s is the generous bound) and starts over.
            let l = Controller::bind(cport);
            let t0 = Instant::now();
            let mut conn = l.accept(Duration::from_secs(10), &mut sw);
            worst = worst.max(t0.elapsed());
            assert_eq!(conn.handshake().datapath_id, DPID, "FEATURES_REPLY after reconnect");
            conn.barrier();
            ctl = Some(l);
            c = Some(conn);
        }
        worst
    });
    eprintln!("20 restarts: slowest reconnect {reconnects:?}; frames sent per stream {sent:?}");
    assert_eq!(dump_flows(lport), flows, "flows changed when the controller came back");
    let after = sw.ledger(&lab, false, "after 20 controller restarts");
    // Fail-secure: every forwardable frame forwarded, every miss dropped.
    let ok = sent[0] + sent[1];
    let miss = sent[2] + sent[3];
    assert_eq!(after.matches - before.matches, ok + sent[4], "frames the flows matched");
    assert_eq!(after.to_controller() - before.to_controller(), sent[4], "PACKET_INs");
    assert!(after.pin_unsent > before.pin_unsent, "no PACKET_IN met a missing controller");
    assert_eq!(after.tx - before.tx, ok, "frames sent by the switch");
    assert_eq!(
        (after.lookups - after.matches) - (before.lookups - before.matches),
        miss,
        "table misses dropped"
    );
    assert!(ok > 0 && miss > 0, "no traffic flowed: {sent:?}");
    let mut c = c.expect("connected");
    lab.assert_forwards(0, 1, 4000, 50, 45);
    lab.assert_misses_dropped(1, 0, 5000);
    c.barrier();
    sw.ledger(&lab, false, "at the end");

    let (clean, log) = sw.stop();
    assert!(clean, "sluice run did not exit cleanly on SIGTERM:\n{log}");
    assert!(!log.contains("MAC-learning"), "secure mode fell back to learning:\n{log}");
}

/// Fail mode standalone: while the controller is connected its (empty but
/// for one flow) tables decide; when it dies the switch floods unknown
/// destinations and learns addresses (a learned unicast destination is not
/// flooded to the third host); when it comes back the tables decide again
/// and the flow installed before is still there.
#[test]
fn standalone_controller_killed_and_restarted() {
    if !can_run() {
        return;
    }
    let lab = Lab::new(3);
    let ctl = Controller::bind(0);
    let cport = ctl.port;
    let cfg = TempFile::config(
        "[agent]\nbackoff_min_ms = 100\nbackoff_max_ms = 400\nprobe_interval_ms = 30000\n",
    );
    let mut sw = Switch::start(&switch_args(&lab, &cfg, "standalone", cport, None, DPID));
    let mut c = ctl.accept(Duration::from_secs(20), &mut sw);
    assert_eq!(c.handshake().datapath_id, DPID);
    c.add_flow("priority=100,in_port=1,dl_type=0x88b5,actions=output:2");
    c.barrier();
    sw.wait_log(
        "controller connected: forwarding through the flow tables",
        1,
        Duration::from_secs(10),
    );
    lab.assert_misses_dropped(0, 1, 0);

    drop(c);
    drop(ctl);
    // The second time: the first was logged at start, before the
    // controller connected.
    sw.wait_log("forwarding as a MAC-learning switch", 2, Duration::from_secs(10));

    // Unknown destination: flooded to both other hosts.
    lab.send(0, mac(1), ETH_MISS, 100..110, 100, 0);
    for h in [1, 2] {
        let got = lab.collect(h, 0, ETH_MISS, 10, Duration::from_secs(2));
        assert_eq!(got.len(), 10, "host {h}: unknown destination not flooded: {got:?}");
    }
    // Host 1 speaks (learned on port 2, and host 0 is known on port 1 by now).
    lab.send(1, mac(0), ETH_MISS, 200..210, 100, 0);
    let got = lab.collect(0, 1, ETH_MISS, 10, Duration::from_secs(2));
    assert_eq!(got.len(), 10, "learned unicast 1 -> 0: {got:?}");
    assert!(
        lab.collect(2, 1, ETH_MISS, 1, Duration::from_millis(300)).is_empty(),
        "learned unicast flooded"
    );
    // Now a known destination: only host 1 gets it. The broadcast marker
    // after it proves host 2 had its chance to see it.
    lab.drain(2);
    lab.send(0, mac(1), ETH_MISS, 300..320, 100, 0);
    lab.send(0, BROADCAST, ETH_MISS, 400..401, 100, 0);
    let got = lab.collect(1, 0, ETH_MISS, 21, Duration::from_secs(2));
    assert!((300..320).all(|s| got.contains(&s)), "host 1 missed learned unicast frames: {got:?}");
    let at2 = lab.collect(2, 0, ETH_MISS, 21, Duration::from_secs(2));
    assert!(at2.contains(&400), "broadcast marker not flooded to host 2: {at2:?}");
    assert!(at2.iter().all(|&s| s == 400), "frames to a learned address were flooded: {at2:?}");

    // The controller comes back: the tables decide again, the flow is kept.
    let ctl = Controller::bind(cport);
    let mut c = ctl.accept(Duration::from_secs(10), &mut sw);
    assert_eq!(c.handshake().datapath_id, DPID);
    sw.wait_log(
        "controller connected: forwarding through the flow tables",
        2,
        Duration::from_secs(10),
    );
    c.barrier();
    lab.assert_misses_dropped(0, 1, 500);
    lab.assert_forwards(0, 1, 600, 50, 45);
    let before = sw.ledger(&lab, false, "after the first restart");

    // 20 more kills and restarts under traffic: learning and the tables
    // take turns; every frame is accounted for.
    let streams = [
        (0, mac(1), ETH_OK),
        (1, mac(0), ETH_MISS),
        (2, BROADCAST, ETH_MISS),
        (0, mac(2), ETH_MISS),
    ];
    let mut ctl = Some(ctl);
    let mut c = Some(c);
    let (worst, sent) = lab.under_traffic(&streams, 10_000, 20, || {
        let mut worst = Duration::ZERO;
        for round in 0..20 {
            drop(c.take());
            drop(ctl.take());
            sw.wait_log("forwarding as a MAC-learning switch", 3 + round, Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(200));
            let l = Controller::bind(cport);
            let t0 = Instant::now();
            let mut conn = l.accept(Duration::from_secs(10), &mut sw);
            worst = worst.max(t0.elapsed());
            assert_eq!(conn.handshake().datapath_id, DPID);
            sw.wait_log(
                "controller connected: forwarding through the flow tables",
                3 + round,
                Duration::from_secs(10),
            );
            conn.barrier();
            ctl = Some(l);
            c = Some(conn);
        }
        worst
    });
    eprintln!("20 restarts: slowest reconnect {worst:?}; frames sent per stream {sent:?}");
    let after = sw.ledger(&lab, false, "after 20 controller restarts");
    assert!(after.learned > before.learned, "MAC learning never forwarded: {after:?}");
    assert!(after.lookups > before.lookups, "the tables never decided: {after:?}");
    let mut c = c.expect("connected");
    c.barrier();
    lab.assert_misses_dropped(0, 1, 700);

    let (clean, log) = sw.stop();
    assert!(clean, "sluice run did not exit cleanly on SIGTERM:\n{log}");
}

/// Deleting a port's interface under traffic (host 0 sends frames a flow
/// forwards to that port, and table misses) sends PORT_STATUS DELETE to
/// the controller; re-creating it (same name) sends PORT_STATUS ADD with
/// the same port number, and the flows forward through it again. Every
/// frame is accounted for meanwhile (those for the missing port as
/// dropped on transmit).
#[test]
fn port_deleted_and_recreated_reports_port_status() {
    if !can_run() {
        return;
    }
    let lab = Lab::new(2);
    let ctl = Controller::bind(0);
    let cfg = TempFile::config("[agent]\nprobe_interval_ms = 30000\n");
    let mut sw = Switch::start(&switch_args(&lab, &cfg, "secure", ctl.port, None, DPID));
    let mut c = ctl.accept(Duration::from_secs(20), &mut sw);
    assert_eq!(c.handshake().datapath_id, DPID);
    c.add_flow("priority=100,in_port=1,dl_type=0x88b5,actions=output:2");
    c.add_flow("priority=100,in_port=2,dl_type=0x88b5,actions=output:1");
    c.barrier();
    lab.assert_forwards(0, 1, 0, 50, 45);
    let before = sw.ledger(&lab, false, "before the port goes");
    let seen_before = lab.seen[1].load(Relaxed);

    let name = lab.sw_if[1].clone();
    let streams = [(0, mac(1), ETH_OK), (0, mac(1), ETH_MISS)];
    let ((), sent) = lab.under_traffic(&streams, 10_000, 20, || {
        std::thread::sleep(Duration::from_millis(300));
        // Nothing in flight to host 1 when its link goes (a frame the
        // kernel had queued for it would vanish uncounted); frames sent
        // after it went meet the missing port.
        lab.quiesce(1);
        lab.unlink(1);
        lab.resume();
        let del = c
            .wait_for(Duration::from_secs(10), |_, m| match m {
                Message::PortStatus(ps) if ps.reason == port_reason::DELETE => Some(ps.clone()),
                _ => None,
            })
            .expect("PORT_STATUS with reason OFPPR_DELETE");
        assert_eq!((del.desc.port_no, del.desc.name.as_str()), (2, name.as_str()), "{del:?}");
        std::thread::sleep(Duration::from_millis(300));
        lab.relink(1);
        let add = c
            .wait_for(Duration::from_secs(10), |_, m| match m {
                Message::PortStatus(ps) if ps.reason == port_reason::ADD => Some(ps.clone()),
                _ => None,
            })
            .expect("PORT_STATUS with reason OFPPR_ADD");
        assert_eq!((add.desc.port_no, add.desc.name.as_str()), (2, name.as_str()), "{add:?}");
        std::thread::sleep(Duration::from_millis(500));
    });
    eprintln!("frames sent per stream while the port went and came back: {sent:?}");
    // The re-created port is a new port (its counters start over), so the
    // frames for it are followed from the hosts' side: every frame host 0
    // sent was looked up; each one for host 1 arrived there or is counted
    // as dropped (no port, port down, not taken, lost on the veth); each
    // miss is counted as one.
    let metrics = sw.metrics.expect("metrics");
    let end = Instant::now() + Duration::from_secs(15);
    let after = loop {
        lab.settle(Duration::from_millis(300));
        let l = Ledger::read(&lab, metrics);
        let arrived = lab.seen[1].load(Relaxed) - seen_before;
        let dropped = (l.tx_no_port + l.tx_port_dropped + l.tx_lost + l.link_out_dropped)
            - (before.tx_no_port
                + before.tx_port_dropped
                + before.tx_lost
                + before.link_out_dropped);
        let misses = (l.lookups - l.matches) - (before.lookups - before.matches);
        let input = l.link_in_dropped + l.ring_dropped + l.rx_errors + l.rx_dropped + l.rx;
        let facts = [
            ("frames sent = received by the switch", l.host_sent, input),
            ("frames looked up", l.lookups - before.lookups, sent[0] + sent[1]),
            ("misses dropped", misses, sent[1]),
            ("frames for host 1: arrived + dropped", arrived + dropped, sent[0]),
        ];
        let bad: Vec<_> = facts.iter().filter(|(_, a, b)| a != b).collect();
        if bad.is_empty() {
            eprintln!("port gone and back: {arrived} arrived, {dropped} dropped: {l:?}");
            break l;
        }
        assert!(Instant::now() < end, "frames unaccounted for: {bad:?}\n{l:#?}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(after.tx_no_port > before.tx_no_port, "no frame met the missing port: {after:?}");

    // The link may still be coming up: wait (bounded) for one frame, then
    // require a whole batch in each direction.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seq = 1000;
    loop {
        lab.send(0, mac(1), ETH_OK, seq..seq + 1, 100, 0);
        if !lab.collect(1, 0, ETH_OK, 1, Duration::from_millis(200)).is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "nothing forwarded to the re-created port within 10 s");
        seq += 1;
    }
    lab.assert_forwards(0, 1, 2000, 50, 45);
    lab.assert_forwards(1, 0, 2000, 50, 45);
    c.barrier();

    let (clean, log) = sw.stop();
    assert!(clean, "sluice run did not exit cleanly on SIGTERM:\n{log}");
}

/// One stall of the controller (it reads nothing meanwhile): host 2 floods
/// `FLOOD` 1400-byte table misses (≤ 3000/s) that become PACKET_INs,
/// while host 0 sends `N` frames (from `base`) that a flow forwards to
/// host 1. Returns how many of those arrived and the largest RSS (KiB)
/// sampled; checks that the listener answers dump-flows during the stall.
fn stall(lab: &Lab, sw: &Switch, lport: u16, base: u32) -> (usize, u64) {
    let mut rss_max = sw.rss_kib();
    let mut mid_flows = Vec::new();
    lab.drain(1);
    std::thread::scope(|s| {
        let flood = s.spawn(|| lab.send(2, mac(0), ETH_MISS, base..base + FLOOD, 1400, 30));
        let fwd = s.spawn(|| {
            std::thread::sleep(Duration::from_millis(500));
            lab.send(0, mac(1), ETH_OK, base..base + N, 200, 3)
        });
        for i in 0..300 {
            if flood.is_finished() && fwd.is_finished() {
                break;
            }
            rss_max = rss_max.max(sw.rss_kib());
            if i == 10 {
                // The agent's core still serves the other connection.
                mid_flows = dump_flows(lport);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        flood.join().expect("flood thread");
        fwd.join().expect("forwarding thread");
    });
    rss_max = rss_max.max(sw.rss_kib());
    assert_eq!(mid_flows.len(), 2, "dump-flows during the stall: {mid_flows:?}");
    let got = lab.collect(1, 0, ETH_OK, N as usize, Duration::from_secs(2));
    (got.len(), rss_max)
}

const FLOOD: u32 = 12_000;
const N: u32 = 1000;

/// Sends ECHO_REQUEST and BARRIER_REQUEST; the BARRIER_REPLY must come,
/// after the ECHO_REPLY. Returns the PACKET_INs read meanwhile, or why the
/// connection failed.
fn echo_and_barrier(c: &mut OfConn) -> Result<u64, String> {
    let echo_xid = c.send(&Message::EchoRequest(b"still there?".to_vec()));
    let barrier_xid = c.send(&Message::BarrierRequest);
    let mut packet_ins = 0u64;
    let mut echoed = false;
    c.wait_for(Duration::from_secs(30), |x, m| {
        match m {
            Message::PacketIn(_) => packet_ins += 1,
            Message::EchoReply(d) if x == echo_xid && d == b"still there?" => echoed = true,
            Message::BarrierReply if x == barrier_xid => return Some(()),
            _ => {}
        }
        None
    })?;
    assert!(echoed, "BARRIER_REPLY came without (or before) the ECHO_REPLY");
    Ok(packet_ins)
}

/// Five fresh table misses from host 2 arrive as PACKET_INs on `c`.
fn fresh_packet_ins(lab: &Lab, c: &mut OfConn, base: u32) {
    lab.send(2, mac(0), ETH_MISS, base..base + 5, 100, 0);
    let mut fresh = BTreeSet::new();
    c.wait_for(Duration::from_secs(10), |_, m| {
        if let Message::PacketIn(p) = m {
            if let Some(s) = frame_seq(&p.data, mac(2), ETH_MISS).filter(|s| *s >= base) {
                fresh.insert(s);
            }
        }
        (fresh.len() == 5).then_some(())
    })
    .expect("fresh PACKET_INs after the stall");
}

/// A controller that stops reading its socket while a table-miss flow
/// sends it a flood of large PACKET_INs: forwarding between two other
/// ports goes on, the switch's memory stays bounded (PACKET_INs that do
/// not fit are dropped, not buffered), the listener still answers.
///
/// Stall 1: the controller then reads its backlog first: the same
/// connection answers ECHO and BARRIER and delivers fresh PACKET_INs, and
/// fewer PACKET_INs than misses arrived (the rest were dropped).
/// Stall 2: the controller sends ECHO + BARRIER at once, while the switch's
/// outbound queue is still full. The switch may answer them or (its
/// documented choice: a reply that does not fit the queue closes the
/// connection) drop the connection; then it must reconnect within the
/// backoff and work again.
#[test]
fn slow_controller_does_not_stop_forwarding() {
    if !can_run() {
        return;
    }
    let lab = Lab::new(3);
    let ctl = Controller::bind(0);
    let lport = free_port();
    // Unlimited PACKET_IN rate and short queues: the only brake on the
    // flood is the stalled socket, and the queues overflow quickly.
    let cfg = TempFile::config(
        "[agent]\nbackoff_min_ms = 100\nbackoff_max_ms = 400\nprobe_interval_ms = 60000\n\
         packet_in_rate = 0\nqueue_len = 128\n\n[limits]\nasync_queue_len = 512\n",
    );
    let mut sw = Switch::start(&switch_args(&lab, &cfg, "secure", ctl.port, Some(lport), DPID));
    let mut c = ctl.accept(Duration::from_secs(20), &mut sw);
    assert_eq!(c.handshake().datapath_id, DPID);
    c.add_flow("priority=0,actions=controller:65535");
    c.add_flow("priority=100,in_port=1,dl_type=0x88b5,actions=output:2");
    c.barrier();
    lab.assert_forwards(0, 1, 0, 50, 45);
    // The miss path works: a frame from host 2 comes back as a PACKET_IN.
    fresh_packet_ins(&lab, &mut c, 0);
    sw.wait_port(lport);
    let rss_before = sw.rss_kib();

    // Stall 1, then resume by reading everything queued (until 1 s of quiet).
    let (fwd, rss_max) = stall(&lab, &sw, lport, 100_000);
    eprintln!(
        "stall 1: {fwd} of {N} frames forwarded; RSS {rss_before} KiB before, max {rss_max} KiB"
    );
    assert!(fwd >= (N as usize) * 9 / 10, "forwarding suffered: {fwd} of {N} frames");
    assert!(rss_max < 200 * 1024, "sluice run grew to {rss_max} KiB");
    let mut backlog = 0u64;
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        match c.recv(Duration::from_secs(1)) {
            Got::Msg(_, Message::PacketIn(_)) => backlog += 1,
            Got::Msg(_, m) => panic!("unexpected message after stall 1: {m:?}"),
            Got::Timeout => break,
            Got::Closed => {
                panic!("the switch closed a stalled connection that never sent a request")
            }
        }
        assert!(Instant::now() < end, "backlog still flowing after 30 s");
    }
    let more = echo_and_barrier(&mut c).expect("ECHO and BARRIER after stall 1");
    let delivered = backlog + more;
    eprintln!("stall 1: {delivered} of {FLOOD} PACKET_INs delivered afterwards");
    assert!(delivered > 0, "no PACKET_IN at all from the backlog");
    assert!(delivered < u64::from(FLOOD), "every PACKET_IN was kept for a stalled controller");
    fresh_packet_ins(&lab, &mut c, 200_000);

    // Stall 2, then ECHO + BARRIER straight away.
    let (fwd, rss_max2) = stall(&lab, &sw, lport, 300_000);
    eprintln!("stall 2: {fwd} of {N} frames forwarded; RSS max {rss_max2} KiB");
    assert!(fwd >= (N as usize) * 9 / 10, "forwarding suffered: {fwd} of {N} frames");
    assert!(rss_max2 < 200 * 1024, "sluice run grew to {rss_max2} KiB");
    let mut c = match echo_and_barrier(&mut c) {
        Ok(n) => {
            eprintln!(
                "stall 2: same connection answered ({n} PACKET_INs before the BARRIER_REPLY)"
            );
            c
        }
        Err(e) => {
            eprintln!("stall 2: connection lost ({e}); waiting for the reconnect");
            sw.wait_log("outbound queue overflow", 1, Duration::from_secs(5));
            let t0 = Instant::now();
            let mut c = ctl.accept(Duration::from_secs(10), &mut sw);
            eprintln!("stall 2: reconnected after {:?}", t0.elapsed());
            assert_eq!(c.handshake().datapath_id, DPID);
            c.barrier();
            c
        }
    };
    fresh_packet_ins(&lab, &mut c, 400_000);
    c.barrier();
    lab.assert_forwards(0, 1, 500_000, 50, 45);
    let l = sw.ledger(&lab, true, "after two stalls");
    assert!(l.pin_queue > 0, "no PACKET_IN was dropped for a full queue: {l:?}");

    let (clean, log) = sw.stop();
    assert!(clean, "sluice run did not exit cleanly on SIGTERM:\n{log}");
}

/// A packet-in storm: host 2 floods table misses (a table-miss flow sends
/// them to the controller) while host 0's frames are forwarded by a flow.
/// Controller A (the switch connects to it) takes PACKET_INs; controller B
/// (connected to the switch's listener, PACKET_INs masked off by
/// SET_ASYNC) keeps sending ECHO + BARRIER. The per-connection rate limit
/// holds (A receives at most burst + rate × elapsed), the rest are counted
/// as dropped by rate, B's replies all come (the agent is not starved),
/// forwarding goes on, and every frame is accounted for.
#[test]
fn packet_in_storm_is_rate_limited_and_does_not_starve_replies() {
    if !can_run() {
        return;
    }
    const RATE: u64 = 500;
    const BURST: u64 = 50;
    let lab = Lab::new(3);
    let ctl = Controller::bind(0);
    let lport = free_port();
    let cfg = TempFile::config(&format!(
        "[agent]\nprobe_interval_ms = 60000\npacket_in_rate = {RATE}\npacket_in_burst = {BURST}\n"
    ));
    let mut sw = Switch::start(&switch_args(&lab, &cfg, "secure", ctl.port, Some(lport), DPID));
    let mut a = ctl.accept(Duration::from_secs(20), &mut sw);
    assert_eq!(a.handshake().datapath_id, DPID);
    a.add_flow("priority=0,actions=controller:65535");
    a.add_flow("priority=100,in_port=1,dl_type=0x88b5,actions=output:2");
    a.barrier();
    sw.wait_port(lport);
    let mut b = OfConn::connect(lport);
    assert_eq!(b.handshake().datapath_id, DPID);
    b.send(&Message::SetAsync(sluice_ofp::message::AsyncConfig {
        packet_in_mask: [0, 0],
        port_status_mask: [0, 0],
        flow_removed_mask: [0, 0],
    }));
    b.barrier();
    lab.assert_forwards(0, 1, 0, 50, 45);
    let before = sw.ledger(&lab, true, "before the storm");

    let stop = std::sync::atomic::AtomicBool::new(false);
    let streams = [(2, mac(0), ETH_MISS), (0, mac(1), ETH_OK)];
    let t0 = Instant::now();
    let ((got_a, rtts, storm), sent) = lab.under_traffic(&streams, 10_000, 60, || {
        std::thread::scope(|s| {
            // A reads everything (bounded: 60 s), counting PACKET_INs.
            let reader = s.spawn(|| {
                let mut n = 0u64;
                let end = Instant::now() + Duration::from_secs(60);
                while !stop.load(Relaxed) && Instant::now() < end {
                    match a.recv(Duration::from_millis(50)) {
                        Got::Msg(_, Message::PacketIn(_)) => n += 1,
                        Got::Msg(x, Message::EchoRequest(d)) => {
                            let _ = std::io::Write::write_all(
                                &mut a.s,
                                &Message::EchoReply(d).encode(x),
                            );
                        }
                        Got::Msg(..) | Got::Timeout => {}
                        Got::Closed => panic!("the switch closed controller A's connection"),
                    }
                }
                n
            });
            std::thread::sleep(Duration::from_millis(300));
            let mut rtts = Vec::new();
            for _ in 0..20 {
                let t = Instant::now();
                let pins = echo_and_barrier(&mut b).expect("B's ECHO and BARRIER during the storm");
                assert_eq!(pins, 0, "B masked PACKET_INs off but got some");
                rtts.push(t.elapsed());
                std::thread::sleep(Duration::from_millis(100));
            }
            let storm = t0.elapsed();
            // Let A drain what the switch queued for it.
            std::thread::sleep(Duration::from_millis(500));
            stop.store(true, Relaxed);
            (reader.join().expect("reader"), rtts, storm)
        })
    });
    // A's last PACKET_INs: read until quiet.
    let mut got_a = got_a;
    for _ in 0..100_000 {
        match a.recv(Duration::from_millis(500)) {
            Got::Msg(_, Message::PacketIn(_)) => got_a += 1,
            _ => break,
        }
    }
    let elapsed = t0.elapsed();
    eprintln!(
        "storm: {sent:?} frames sent in {storm:?}; A got {got_a} PACKET_INs; B's ECHO+BARRIER \
         round trips: max {:?}",
        rtts.iter().max()
    );
    let l = sw.ledger(&lab, true, "after the storm");
    let sent_pins = l.pin_sent - before.pin_sent;
    let limited = l.pin_rate - before.pin_rate;
    assert_eq!(got_a, sent_pins, "PACKET_INs counted as sent but not received by A");
    // The bucket admits at most its burst plus RATE per second of the
    // storm; the storm lasted at most `elapsed` as the test saw it.
    let bound = BURST + RATE * (elapsed.as_millis() as u64 + 500) / 1000;
    assert!(sent_pins <= bound, "{sent_pins} PACKET_INs sent, the limit allows {bound}");
    assert!(limited > 0, "the rate limit never refused a PACKET_IN: {l:?}");
    assert_eq!(
        sent_pins + limited + (l.pin_queue - before.pin_queue) + (l.pin_unsent - before.pin_unsent),
        sent[0] + (l.upcall_dropped - before.upcall_dropped),
        "miss frames: sent + limited + dropped"
    );
    assert_eq!(l.tx - before.tx, sent[1], "forwarded frames during the storm");
    a.barrier();
    b.barrier();
    let (clean, log) = sw.stop();
    assert!(clean, "sluice run did not exit cleanly on SIGTERM:\n{log}");
}
