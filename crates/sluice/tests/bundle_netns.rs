//! Bundles are atomic for traffic: `ovs-ofctl --bundle replace-flows`
//! against `sluice run` while frames flow, and not one frame is forwarded
//! by a half-applied set.
//!
//! Three hosts (`Lab`, octet 80). Host 1 (port 1) sends test frames
//! (EtherType 0x88b5) to host 2 without pause; hosts 2 (port 2) and 3
//! (port 3, the canary) count the frames they receive. Two flow sets, A
//! and B, each forward the frames in two steps: table 0 writes a tag into
//! the metadata (0xa or 0xb) and goes to table 1, where a flow matching
//! that tag outputs to port 2; table 1's table-miss flow (in both sets)
//! outputs to the canary. Each set also has 200 filler flows of its own,
//! so a commit is a few hundred messages. Any state between A and B (one
//! table's flow changed, the other's not) sends frames to the canary.
//!
//! - The canary works: changing table 0 alone (a plain `mod-flows`, no
//!   bundle) for a moment sends frames to port 3.
//! - Bundles are atomic: 20 commits alternating A and B while frames flow;
//!   port 2 keeps receiving, the canary receives nothing, and the last
//!   set's flows counted frames (traffic crossed the commits).
//!
//! Needs root and `ovs-ofctl` (a missing tool fails the test). Namespaces,
//! the switch (killed by PID) and scratch files are removed by guards,
//! also on failure; the sender and receivers stop on a flag and on a
//! deadline, and every `ovs-ofctl` runs under `timeout`.

mod netlab;

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use netlab::{need_root_and, Lab, RawSocket, Scratch};
use sluice_datapath::ports::testutil::{test_frame, test_frame_seq};

const OCTET: u8 = 80;
/// Longest the traffic may run, whatever happens.
const TRAFFIC_LIMIT: Duration = Duration::from_secs(120);

fn ofctl(args: &[&str]) -> String {
    let o = Command::new("timeout")
        .arg("30")
        .arg("ovs-ofctl")
        .args(["-O", "OpenFlow13"])
        .args(args)
        .output()
        .expect("running ovs-ofctl");
    assert!(
        o.status.success(),
        "ovs-ofctl {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Flow set `tag` (0xa or 0xb).
fn flow_set(tag: u32) -> String {
    let mut s = format!(
        "table=0,priority=10,in_port=1,dl_type=0x88b5,actions=write_metadata:{tag:#x}/0xff,goto_table:1\n\
         table=1,priority=10,metadata={tag:#x}/0xff,actions=output:2\n\
         table=1,priority=0,actions=output:3\n"
    );
    for i in 0..200 {
        s += &format!("table=2,priority={},udp,tp_dst={},actions=drop\n", tag * 1000 + i, i + 1);
    }
    s
}

/// Frames received on `h`'s interface, counted into `n` until `stop`.
fn count_frames(lab: &Lab, h: usize, n: &AtomicU64, stop: &AtomicBool) {
    lab.h[h].enter(|| {
        let s = RawSocket::open(&lab.host_if[h]).expect("receiver socket");
        let mut buf = [0u8; 2048];
        let deadline = Instant::now() + TRAFFIC_LIMIT;
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            if let Ok(Some(len)) = s.recv(&mut buf, Duration::from_millis(50)) {
                if test_frame_seq(&buf[..len.min(buf.len())]).is_some() {
                    n.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    });
}

/// Sends test frames from host 0 to host 1 until `stop`, in bursts of
/// 32 with a 1 ms rest (tens of thousands per second).
fn send_frames(lab: &Lab, sent: &AtomicU64, stop: &AtomicBool) {
    lab.h[0].enter(|| {
        let s = RawSocket::open(&lab.host_if[0]).expect("sender socket");
        let deadline = Instant::now() + TRAFFIC_LIMIT;
        let mut seq = 0u32;
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            for _ in 0..32 {
                let f = test_frame(lab.mac_bytes(1), lab.mac_bytes(0), seq, 64);
                if s.send(&f).is_ok() {
                    sent.fetch_add(1, Ordering::Relaxed);
                }
                seq = seq.wrapping_add(1);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

/// Sets `stop` when dropped, so the traffic threads end even if an
/// assertion in the scope fails.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[test]
fn bundled_replace_flows_is_atomic_under_traffic() {
    need_root_and(&["ovs-ofctl", "timeout"]);
    let dir = Scratch::new("bundle-netns");
    let lab = Lab::new(3, OCTET);
    let (mut sw, t) = lab.start_secure_switch(&dir);
    let (a, b) = (dir.path("a.flows"), dir.path("b.flows"));
    std::fs::write(&a, flow_set(0xa)).expect("write a.flows");
    std::fs::write(&b, flow_set(0xb)).expect("write b.flows");
    let (a, b) = (a.display().to_string(), b.display().to_string());
    ofctl(&["--bundle", "replace-flows", &t, &a]);

    let (sent, port2, canary) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let _stop = StopOnDrop(&stop);
        s.spawn(|| count_frames(&lab, 1, &port2, &stop));
        s.spawn(|| count_frames(&lab, 2, &canary, &stop));
        s.spawn(|| send_frames(&lab, &sent, &stop));
        let settle = || std::thread::sleep(Duration::from_millis(300));
        let wait_for = |n: &AtomicU64, what: &str| {
            let start = n.load(Ordering::Relaxed);
            let deadline = Instant::now() + Duration::from_secs(20);
            while n.load(Ordering::Relaxed) < start + 100 {
                assert!(Instant::now() < deadline, "no frames reach {what}");
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        wait_for(&port2, "port 2 through set A");
        assert_eq!(canary.load(Ordering::Relaxed), 0, "set A alone sent frames to the canary");

        // The canary works: table 0 of set B with table 1 of set A, for a
        // moment, without a bundle.
        ofctl(&[
            "mod-flows",
            &t,
            "table=0,in_port=1,dl_type=0x88b5,actions=write_metadata:0xb/0xff,goto_table:1",
        ]);
        wait_for(&canary, "the canary from a half-applied set");
        ofctl(&["--bundle", "replace-flows", &t, &a]);
        settle();
        sw.assert_running();

        // Bundled commits, alternating, while frames flow.
        let (c0, p0) = (canary.load(Ordering::Relaxed), port2.load(Ordering::Relaxed));
        for round in 0..20 {
            ofctl(&["--bundle", "replace-flows", &t, if round % 2 == 0 { &b } else { &a }]);
            std::thread::sleep(Duration::from_millis(20));
        }
        settle();
        let (c1, p1) = (canary.load(Ordering::Relaxed), port2.load(Ordering::Relaxed));
        stop.store(true, Ordering::Relaxed);
        sw.assert_running();
        assert_eq!(c1 - c0, 0, "frames forwarded by a half-applied bundle reached the canary");
        assert!(
            p1 - p0 >= 1000,
            "too few frames crossed the commits to show anything: {}",
            p1 - p0
        );
        // The last commit installed set A; its tag flow counted frames.
        let dump = ofctl(&["dump-flows", &t, "table=1,metadata=0xa/0xff"]);
        let n: u64 = dump
            .split("n_packets=")
            .nth(1)
            .and_then(|r| r.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no n_packets in {dump}"));
        assert!(n > 0, "set A's tag flow counted nothing after the last commit: {dump}");
        eprintln!(
            "sent {}, port 2 got {} during 20 commits, canary {}",
            sent.load(Ordering::Relaxed),
            p1 - p0,
            c1 - c0
        );
    });
}
