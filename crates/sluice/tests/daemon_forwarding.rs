//! `sluice run` end to end: two hosts in network namespaces, the switch as
//! a child process with its AF_PACKET ports in a third namespace, real ARP
//! and ICMP between the hosts (iputils `ping`), flows installed with
//! `ovs-ofctl -O OpenFlow13` through the daemon's passive listener.
//!
//! Needs root, `ip` and `ping`; the ovs-ofctl test also needs `ovs-ofctl`.
//! Without them a test fails with what to install (nothing is skipped). Every namespace is removed by a Drop guard (removing a
//! namespace removes the veths inside it), the daemon is killed by pid on
//! drop, and every wait is bounded.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use sluice_datapath::ports::testutil::{is_root, unique_name, NetNs};

mod netlab;
use netlab::{free_port, have, Proc};

fn can_run(extra: &[&str]) -> bool {
    assert!(is_root(), "needs root (network namespaces)");
    for t in ["ip", "ping"].iter().chain(extra) {
        assert!(have(t), "`{t}` is not installed (scripts/install-deps installs it)");
    }
    true
}

/// `sluice run ARGS`; tests run switches side by side, so without the
/// shared control socket.
fn start(args: &[&str]) -> Proc {
    Proc::sluice_run(&[&["--no-control-socket"], args].concat())
}

/// Hosts h1, h2 (10.9.0.1/2) and the switch namespace, with the switch ends
/// named `s1`/`s2`-style unique names so a test can re-create one.
struct Lab {
    h: Vec<NetNs>,
    sw: NetNs,
    sw_if: Vec<String>,
    host_if: Vec<String>,
}

impl Lab {
    fn new() -> Lab {
        let sw = NetNs::new("sw").expect("switch namespace");
        let mut lab = Lab { h: Vec::new(), sw, sw_if: Vec::new(), host_if: Vec::new() };
        for i in 0..2 {
            lab.h.push(NetNs::new("h").expect("host namespace"));
            lab.sw_if.push(unique_name("s"));
            lab.host_if.push(unique_name("e"));
            lab.link(i);
            let h = &lab.h[i];
            h.exec(&["ip", "addr", "add", &format!("10.9.0.{}/24", i + 1), "dev", &lab.host_if[i]])
                .expect("host address");
        }
        lab
    }

    /// Creates (or re-creates) the veth of host `i`, entirely inside the
    /// namespaces (nothing is ever created in the root namespace).
    fn link(&self, i: usize) {
        self.sw
            .exec(&[
                "ip",
                "link",
                "add",
                &self.sw_if[i],
                "type",
                "veth",
                "peer",
                "name",
                &self.host_if[i],
                "netns",
                self.h[i].name(),
            ])
            .expect("veth");
        self.sw.exec(&["ip", "link", "set", &self.sw_if[i], "up"]).expect("switch end up");
        self.h[i].exec(&["ip", "link", "set", &self.host_if[i], "up"]).expect("host end up");
        self.h[i]
            .exec(&[
                "ip",
                "link",
                "set",
                "dev",
                &self.host_if[i],
                "address",
                &format!("02:00:00:00:09:0{}", i + 1),
            ])
            .expect("host mac");
    }

    fn ping(&self, from: usize, to: usize, count: u32) -> Output {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", self.h[from].name(), "ping", "-n", "-c"])
            .arg(count.to_string())
            .args(["-i", "0.2", "-W", "1"])
            .arg(format!("10.9.0.{}", to + 1));
        cmd.output().expect("running ping")
    }

    /// Pings until one round trip works or `timeout` passes.
    fn ping_ok_within(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.ping(0, 1, 1).status.success() {
                return true;
            }
        }
        false
    }

    fn port_args(&self) -> Vec<String> {
        self.sw_if
            .iter()
            .enumerate()
            .flat_map(|(i, n)| ["--port".to_string(), format!("afpacket:{n}={}", i + 1)])
            .collect()
    }
}

fn ofctl(port: u16, args: &[&str]) -> String {
    let target = format!("tcp:127.0.0.1:{port}");
    let (cmd, rest) = args.split_first().expect("ovs-ofctl command");
    let out = Command::new("ovs-ofctl")
        .args(["-O", "OpenFlow13", "--timeout=10", cmd, &target])
        .args(rest)
        .output()
        .expect("running ovs-ofctl");
    assert!(
        out.status.success(),
        "ovs-ofctl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Secure mode: nothing passes until ovs-ofctl installs flows; then ARP and
/// ICMP pass and the flows count them. Then the link of host 2 is deleted
/// (the port disappears from the switch) and re-created (the port comes
/// back by itself and forwarding resumes).
#[test]
fn secure_mode_with_ovs_ofctl_flows_and_port_removal() {
    if !can_run(&["ovs-ofctl"]) {
        return;
    }
    let lab = Lab::new();
    let port = free_port();
    let listen = format!("ptcp:{port}:127.0.0.1");
    let mut args: Vec<String> = vec![
        "--netns".into(),
        lab.sw.name().into(),
        "--listen".into(),
        listen,
        "--fail-mode".into(),
        "secure".into(),
        "--workers".into(),
        "2".into(),
        "--dpid".into(),
        "0x5a".into(),
    ];
    args.extend(lab.port_args());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut sw = start(&argv);
    sw.wait_listening_within(port, Duration::from_secs(20));

    // The switch describes itself.
    let features = ofctl(port, &["show"]);
    assert!(features.contains("dpid:000000000000005a"), "{features}");
    let desc = ofctl(port, &["dump-ports-desc"]);
    assert!(desc.contains(&lab.sw_if[0]) && desc.contains(&lab.sw_if[1]), "{desc}");

    // Secure mode, empty tables: nothing gets through.
    assert!(!lab.ping(0, 1, 1).status.success(), "ping passed an empty secure switch");

    ofctl(port, &["add-flow", "in_port=1,actions=output:2"]);
    ofctl(port, &["add-flow", "in_port=2,actions=output:1"]);
    let out = lab.ping(0, 1, 3);
    assert!(out.status.success(), "ping failed: {}", String::from_utf8_lossy(&out.stdout));
    let flows = ofctl(port, &["dump-flows"]);
    // ARP request + 3 echo requests at least went 1 -> 2.
    let n: Vec<u64> = flows
        .lines()
        .filter_map(|l| l.split("n_packets=").nth(1))
        .filter_map(|r| r.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .collect();
    assert_eq!(n.len(), 2, "{flows}");
    assert!(n.iter().all(|&k| k >= 3), "{flows}");

    // Remove host 2's link: the port disappears from the switch.
    lab.sw.exec(&["ip", "link", "del", &lab.sw_if[1]]).expect("deleting veth");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let d = ofctl(port, &["dump-ports-desc"]);
        if !d.contains(&lab.sw_if[1]) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "port 2 still listed after its interface was deleted: {d}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!lab.ping(0, 1, 1).status.success());

    // Re-create it: the switch reopens port 2 and the flows work again.
    lab.link(1);
    lab.h[1].exec(&["ip", "addr", "add", "10.9.0.2/24", "dev", &lab.host_if[1]]).expect("address");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let d = ofctl(port, &["dump-ports-desc"]);
        if d.contains(&lab.sw_if[1]) {
            break;
        }
        assert!(Instant::now() < deadline, "port 2 did not come back: {d}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(lab.ping_ok_within(Duration::from_secs(10)), "no forwarding after the port came back");

    let (clean, log) = sw.stop();
    assert!(clean, "sluice run did not exit cleanly on SIGTERM:\n{log}");
    assert!(log.contains("port removed") && log.contains("reopened"), "{log}");
}

/// Standalone fail mode with no controller at all: a MAC-learning switch.
#[test]
fn standalone_mode_forwards_without_controller() {
    if !can_run(&[]) {
        return;
    }
    let lab = Lab::new();
    let mut args: Vec<String> =
        vec!["--netns".into(), lab.sw.name().into(), "--fail-mode".into(), "standalone".into()];
    args.extend(lab.port_args());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let sw = start(&argv);
    assert!(lab.ping_ok_within(Duration::from_secs(15)), "standalone switch did not forward");
    let out = lab.ping(1, 0, 3);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let (clean, log) = sw.stop();
    assert!(clean, "{log}");
    assert!(log.contains("MAC-learning"), "{log}");
}

/// Secure mode without any flow and no controller drops everything.
#[test]
fn secure_mode_without_flows_drops() {
    if !can_run(&[]) {
        return;
    }
    let lab = Lab::new();
    let mut args: Vec<String> = vec!["--netns".into(), lab.sw.name().into()];
    args.extend(lab.port_args());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let sw = start(&argv);
    std::thread::sleep(Duration::from_millis(500));
    assert!(!lab.ping(0, 1, 2).status.success(), "secure switch without flows forwarded");
    let (clean, log) = sw.stop();
    assert!(clean, "{log}");
}

/// Standalone fail mode follows the controller: while a controller is
/// connected the (empty) flow tables decide and nothing passes; when it goes
/// away the switch falls back to MAC learning. The "controller" is a bare
/// TCP socket in this test that completes the OpenFlow HELLO exchange.
#[test]
fn standalone_mode_yields_to_a_connected_controller() {
    if !can_run(&[]) {
        return;
    }
    let lab = Lab::new();
    let ctl = TcpListener::bind("127.0.0.1:0").expect("controller socket");
    let port = ctl.local_addr().unwrap().port();
    let cfg = std::env::temp_dir().join(format!("{}.toml", unique_name("sluice-cfg-")));
    std::fs::write(&cfg, "[agent]\nbackoff_min_ms = 100\nbackoff_max_ms = 200\n").unwrap();
    struct Rm(std::path::PathBuf);
    impl Drop for Rm {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _rm = Rm(cfg.clone());
    let mut args: Vec<String> = vec![
        "--config".into(),
        cfg.display().to_string(),
        "--netns".into(),
        lab.sw.name().into(),
        "--fail-mode".into(),
        "standalone".into(),
        "--controller".into(),
        format!("tcp:127.0.0.1:{port}"),
    ];
    args.extend(lab.port_args());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut sw = start(&argv);

    // Accept the switch's connection (bounded) and say HELLO (OpenFlow 1.3).
    ctl.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut conn = loop {
        match ctl.accept() {
            Ok((c, _)) => break c,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("the switch never connected: {e}"),
        }
    };
    assert!(sw.try_wait().is_none());
    conn.set_nonblocking(false).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    conn.write_all(&[0x04, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x01]).unwrap();
    let mut hello = [0u8; 8];
    conn.read_exact(&mut hello).expect("the switch's HELLO");
    assert_eq!((hello[0], hello[1]), (0x04, 0x00), "{hello:?}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !lab.ping(0, 1, 2).status.success(),
        "forwarded by learning while a controller was connected"
    );

    // The controller goes away (and stays away): learning takes over.
    drop(conn);
    drop(ctl);
    assert!(lab.ping_ok_within(Duration::from_secs(10)), "no fallback to standalone forwarding");
    let (clean, log) = sw.stop();
    assert!(clean, "{log}");
    assert!(log.contains("controller connected: forwarding through the flow tables"), "{log}");
}
