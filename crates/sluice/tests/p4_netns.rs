//! `sluice p4 run` with the router example (`examples/p4/router.p4`) on
//! veths, routes added with `sluice p4 ctl`, real ping and TCP between
//! three namespaces.
//!
//! Host `i` (namespace of `Lab::new(3, 81)`, re-addressed here) is
//! 10.81.(i+1).2/24 with its default route via 10.81.(i+1).1, whose MAC
//! (the router's port `i+1`, 02:00:00:00:51:(i+1)) is a static neighbour:
//! the program routes IPv4 only and drops ARP. `sluice p4 ctl` adds one
//! /24 route per host (`forward(host MAC, port MAC, port)`), then:
//! - ping works between every pair (TTL decremented, checksum recomputed
//!   by the program, or the hosts would drop the replies);
//! - 256 KiB over TCP arrive whole and in order (transport checksums the
//!   sender left to the veth are completed before the program runs);
//! - a refused command names its bad token and exits 1; `table_dump`
//!   shows the routes; deleting one route stops its pings.
//!
//! And the learning L2 switch (`examples/p4/l2switch.p4`, `Lab::new(3,
//! 82)` as addressed), compiled into the core, with multicast group 1 made by `mc_*` commands and
//! the example controller `examples/p4/l2-learn` turning digests into
//! entries: ping works between every pair, every host's MAC is learned,
//! and a unicast ping between two learned hosts no longer reaches the
//! third (no flooding).
//!
//! And the calculator (`examples/p4/calc.p4`, `Lab::new(1, 83)`): a
//! frame with the `calc` header sent from a host's raw socket comes back
//! to it with the result filled in and the MACs swapped.
//!
//! Needs root and `ping`; a missing tool fails the test. Namespaces, the
//! switch (killed by PID) and scratch files are removed by guards, also
//! on failure; every wait is bounded.

mod netlab;

use std::net::SocketAddrV4;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use netlab::{free_port, need_root_and, tcp_transfer, Lab, Proc, RawSocket, Scratch};

const OCTET: u8 = 81;
const BYTES: usize = 256 * 1024;

fn port_mac(i: usize) -> String {
    format!("02:00:00:00:{OCTET:02x}:{:02x}", i + 1)
}

/// `sluice p4 ctl TARGET ARGS...`, bounded.
fn p4ctl(target: &str, args: &[&str]) -> Output {
    Command::new("timeout")
        .arg("60")
        .arg(env!("CARGO_BIN_EXE_sluice"))
        .args(["p4", "ctl", target])
        .args(args)
        .output()
        .expect("running sluice p4 ctl")
}

fn ok(target: &str, args: &[&str]) -> String {
    let o = p4ctl(target, args);
    assert!(
        o.status.success(),
        "p4 ctl {args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn ping(lab: &Lab, from: usize, to: usize) -> bool {
    Command::new("ip")
        .args(["netns", "exec", lab.h[from].name(), "ping", "-n", "-c", "1", "-W", "1"])
        .arg(lab.routed_ip(to).to_string())
        .output()
        .expect("running ping")
        .status
        .success()
}

fn ping_within(lab: &Lab, from: usize, to: usize, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if ping(lab, from, to) {
            return true;
        }
    }
    false
}

#[test]
fn router_program_forwards_ping_and_tcp_between_three_namespaces() {
    need_root_and(&["ip", "ping", "timeout"]);
    let dir = Scratch::new("p4-router");
    let lab = Lab::new(3, OCTET);
    lab.behind_router(port_mac);
    let (mut sw, t) = start_p4(&lab, &dir, "router.p4");

    // Nothing routed yet: the default action drops.
    assert!(!ping(&lab, 0, 1), "ping crossed a router without routes");
    for i in 0..3 {
        let route = format!("10.{OCTET}.{}.0/24", i + 1);
        let out = ok(
            &t,
            &[
                "table_add",
                "routes",
                "forward",
                &route,
                "=>",
                &lab.mac(i),
                &port_mac(i),
                &(i + 1).to_string(),
            ],
        );
        assert_eq!(out, format!("Entry has been added with handle {i}\n"));
    }
    let dump = ok(&t, &["table_dump", "routes"]);
    assert!(dump.starts_with("table RouterIngress.routes: 3 entries\n"), "{dump}");

    for (a, b) in [(0, 1), (1, 2), (2, 0)] {
        assert!(ping_within(&lab, a, b, Duration::from_secs(10)), "ping {a} -> {b}:\n{}", sw.log());
    }

    // TCP from host 0 to host 2.
    let data: Vec<u8> = (0..BYTES).map(|i| ((i * 7) ^ (i >> 9)) as u8).collect();
    let got = tcp_transfer(&lab.h[0], &lab.h[2], SocketAddrV4::new(lab.routed_ip(2), 5001), &data);
    assert!(got == data, "{} of {BYTES} bytes, in order: {}", got.len(), got == data);

    // The router is compiled into the core (the log says which engine runs).
    assert!(sw.log().contains("P4 program compiled into the core"), "{}", sw.log());
    // A refusal names the bad token; the switch goes on.
    let o = p4ctl(&t, &["table_add", "routes", "forward", "10.81.9.0/33", "=>", "1", "2", "3"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("prefix length 33"), "{err}");
    // Deleting the route to host 1 stops its pings; host 2 still answers.
    ok(&t, &["table_delete", "routes", "1"]);
    assert!(!ping(&lab, 0, 1), "ping crossed a deleted route");
    assert!(ping_within(&lab, 0, 2, Duration::from_secs(5)));
    sw.assert_running();
}

fn start_p4(lab: &Lab, dir: &Scratch, program: &str) -> (Proc, String) {
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/p4").join(program);
    start_p4_at(lab, dir, &program)
}

fn start_p4_at(lab: &Lab, dir: &Scratch, program: &Path) -> (Proc, String) {
    let port = free_port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    cmd.args(["p4", "run"])
        .arg(program)
        .args(["--netns", lab.sw.name()])
        .args(["--listen", &format!("ptcp:{port}:127.0.0.1")])
        .args(lab.port_args())
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1");
    let mut sw = Proc::spawn("sluice p4 run", &mut cmd, dir.path("p4run.log"));
    sw.wait_listening(port);
    (sw, format!("tcp:127.0.0.1:{port}"))
}

#[test]
fn l2_switch_learns_through_digests_and_stops_flooding() {
    need_root_and(&["ip", "ping", "timeout"]);
    let dir = Scratch::new("p4-l2");
    let lab = Lab::new(3, 82);
    let (mut sw, t) = start_p4(&lab, &dir, "l2switch.p4");
    assert_eq!(ok(&t, &["mc_mgrp_create", "1"]), "Creating multicast group 1\n");
    assert_eq!(ok(&t, &["mc_node_create", "0", "1", "2", "3"]), "node was created with handle 0\n");
    ok(&t, &["mc_node_associate", "1", "0"]);

    let learner = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/p4/l2-learn");
    let mut cmd = Command::new(learner);
    cmd.arg(&t).env("SLUICE", env!("CARGO_BIN_EXE_sluice"));
    let mut learn = Proc::spawn("l2-learn", &mut cmd, dir.path("learn.log"));

    for (a, b) in [(0, 1), (1, 2), (2, 0)] {
        assert!(
            lab.ping_ok_within(a, b, Duration::from_secs(10)),
            "ping {a} -> {b}:\n{}\n{}",
            sw.log(),
            learn.log()
        );
        // Multicast and digests are compiled: the core runs the program.
        assert!(sw.log().contains("P4 program compiled into the core"), "{}", sw.log());
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let dump = ok(&t, &["table_dump", "forwarding"]);
        if dump.contains(": 3 entries") {
            for i in 0..3 {
                let mac = u64::from_be_bytes([0, 0, 2, 0, 0, 0, 82, i as u8 + 1]);
                let port = format!("port=0x{:x})", i + 1);
                assert!(
                    dump.lines().any(|l| l.contains(&format!("=0x{mac:x} ")) && l.ends_with(&port)),
                    "host {i} learned on its port:\n{dump}"
                );
            }
            break;
        }
        learn.assert_running();
        assert!(Instant::now() < deadline, "not every host learned:\n{dump}\n{}", learn.log());
        std::thread::sleep(Duration::from_millis(100));
    }

    // Learned: host 0 -> host 1 is unicast, host 2 sees none of it.
    let h1_mac = lab.mac_bytes(1);
    let seen_by_2 = std::thread::scope(|s| {
        let counter = s.spawn(|| {
            lab.h[2].enter(|| {
                let sock = RawSocket::open(&lab.host_if[2]).expect("capture on host 2");
                let (mut n, mut buf) = (0, [0u8; 2048]);
                let deadline = Instant::now() + Duration::from_secs(3);
                while Instant::now() < deadline {
                    if let Ok(Some(len)) = sock.recv(&mut buf, Duration::from_millis(100)) {
                        if len >= 6 && buf[..6] == h1_mac {
                            n += 1;
                        }
                    }
                }
                n
            })
        });
        std::thread::sleep(Duration::from_millis(300));
        assert!(lab.ping(0, 1, 3).status.success(), "ping 0 -> 1 after learning");
        counter.join().expect("capture thread")
    });
    assert_eq!(seen_by_2, 0, "frames to host 1 were flooded to host 2 after learning");
    sw.assert_running();
    learn.assert_running();
}

#[test]
fn calculator_answers_its_sender() {
    need_root_and(&["ip", "timeout"]);
    let dir = Scratch::new("p4-calc");
    let lab = Lab::new(1, 83);
    let (mut sw, _t) = start_p4(&lab, &dir, "calc.p4");
    let (me, switch_mac) = (lab.mac_bytes(0), [2u8, 0, 0, 0, 83, 0xfe]);
    // ethertype 0x1234, "P4", version 1, op, a, b, result 0, then a tail.
    let frame = |op: u8, a: u32, b: u32| {
        let mut f = switch_mac.to_vec();
        f.extend_from_slice(&me);
        f.extend_from_slice(&[0x12, 0x34, b'P', b'4', 1, op]);
        for x in [a, b, 0] {
            f.extend_from_slice(&x.to_be_bytes());
        }
        f.extend_from_slice(b"tail-of-the-frame-padding-to-sixty-bytes!!!");
        f
    };
    let answers = lab.h[0].enter(|| {
        let sock = RawSocket::open(&lab.host_if[0]).expect("raw socket");
        let mut got = Vec::new();
        for (op, a, b) in [(b'+', 5u32, 7u32), (b'-', 2, 5), (b'^', 0xff00, 0x0ff0)] {
            sock.send(&frame(op, a, b)).expect("send");
            let deadline = Instant::now() + Duration::from_secs(10);
            let mut buf = [0u8; 2048];
            loop {
                assert!(Instant::now() < deadline, "no answer to {}", op as char);
                let Ok(Some(len)) = sock.recv(&mut buf, Duration::from_millis(200)) else {
                    continue;
                };
                // Our own frame is seen going out: the answer is the one to us.
                if len >= 34 && buf[..6] == me && buf[12..14] == [0x12, 0x34] {
                    got.push(buf[..len.min(buf.len())].to_vec());
                    break;
                }
            }
        }
        got
    });
    let results: Vec<u32> =
        answers.iter().map(|f| u32::from_be_bytes(f[26..30].try_into().unwrap())).collect();
    assert_eq!(results, [12, 2u32.wrapping_sub(5), 0xf0f0]);
    for f in &answers {
        assert_eq!(f[6..12], switch_mac, "the source is the address the request went to");
    }
    sw.assert_running();
}

/// A program that reads a register runs with its caches off whatever
/// `--cache` says (the engine decides it, `Compiled::stateful`); the
/// daemon says so in its log, and says nothing of the kind for a
/// stateless program.
#[test]
fn a_register_reading_program_is_logged_as_running_without_caches() {
    need_root_and(&["ip"]);
    const LINE: &str = "reads a register";
    let dir = Scratch::new("p4-stateful");
    let lab = Lab::new(1, 86);
    let program = dir.path("count.p4");
    std::fs::write(
        &program,
        r#"#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> ty; }
struct headers { eth_t eth; }
struct meta_t { }
parser P(packet_in pkt, out headers h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.eth); transition accept; }
}
control VC(inout headers h, inout meta_t m) { apply { } }
control I(inout headers h, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<32>>(8) seen;
    apply {
        bit<32> n;
        seen.read(n, (bit<32>)sm.ingress_port);
        seen.write((bit<32>)sm.ingress_port, n + 1);
        mark_to_drop(sm);
    }
}
control E(inout headers h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers h) { apply { pkt.emit(h.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"#,
    )
    .expect("write count.p4");
    let (sw, _t) = start_p4_at(&lab, &dir, &program);
    let log = sw.log();
    assert!(log.contains("compiled into the core"), "not compiled:\n{log}");
    assert!(log.contains(LINE), "no word of the caches being off:\n{log}");
    drop(sw);
    let (sw, _t) = start_p4(&lab, &dir, "calc.p4");
    let log = sw.log();
    assert!(log.contains("compiled into the core"), "calc.p4 not compiled:\n{log}");
    assert!(!log.contains(LINE), "a stateless program is not stateful:\n{log}");
}
