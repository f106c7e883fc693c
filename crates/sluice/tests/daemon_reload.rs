//! Configuration reload of `sluice run` (SIGHUP and `sluice ctl reload`)
//! while traffic flows: a port added and removed, a controller swapped,
//! an invalid file and a port that cannot be opened refused — and not one
//! frame of a steady stream between two other ports lost across all of it.
//!
//! The switch runs the real binary with AF_PACKET ports on veths inside a
//! switch namespace; each host end sits in its own namespace, driven by a
//! raw socket (frames of an experimental EtherType carrying a sequence
//! number, so each frame is identified exactly). The controllers are tiny
//! OpenFlow 1.3 peers written here (a TCP listener on 127.0.0.1); flows
//! are installed through them, in fail mode secure (kept while no
//! controller is connected).
//!
//! Needs root and `ip`; fails saying so otherwise. Namespaces (and the
//! veths in them), the scratch directory and the daemon (by pid) are
//! removed by Drop guards, also when the test fails; every wait is bounded
//! in time and every loop in count. Runs in about 10 s.

use std::collections::BTreeSet;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sluice_datapath::ports::testutil::{is_root, unique_name, NetNs, RawSocket};
use sluice_ofp::message::{port_reason, Hello, Message};

mod netlab;
mod of_controller;
use netlab::{have, Proc, Scratch};
use of_controller::{Controller, OfConn};

/// EtherType of the test frames.
const ETH_OK: u16 = 0x88b5;

const LOG_WAIT: Duration = Duration::from_secs(20);

fn mac(host: usize) -> [u8; 6] {
    [0x02, 0, 0, 0, 0x0b, host as u8 + 1]
}

fn mac_text(host: usize) -> String {
    mac(host).map(|b| format!("{b:02x}")).join(":")
}

fn eth_frame(dst: [u8; 6], src: [u8; 6], seq: u32) -> Vec<u8> {
    let mut f = Vec::with_capacity(64);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ETH_OK.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.resize(64, 0x5a);
    f
}

fn frame_seq(f: &[u8], src: [u8; 6]) -> Option<u32> {
    if f.get(6..12)? != src || f.get(12..14)? != ETH_OK.to_be_bytes() {
        return None;
    }
    Some(u32::from_be_bytes(f.get(14..18)?.try_into().ok()?))
}

/// Hosts h0..hN-1, each joined to the switch namespace by a veth (switch
/// end `sw_if[i]`), driven by a raw socket on the host end.
struct Lab {
    // Sockets first: dropped before the namespaces they live in.
    sock: Vec<RawSocket>,
    h: Vec<NetNs>,
    sw: NetNs,
    sw_if: Vec<String>,
}

impl Lab {
    fn new(n: usize) -> Lab {
        let sw = NetNs::new("rl-sw").expect("switch namespace");
        let mut lab = Lab { sock: Vec::new(), h: Vec::new(), sw, sw_if: Vec::new() };
        for i in 0..n {
            let h = NetNs::new("rl-h").expect("host namespace");
            let (sw_if, host_if) = (unique_name("rs"), unique_name("re"));
            let sw = &lab.sw;
            sw.exec(&["ip", "link", "add", &sw_if, "type", "veth", "peer", "name", &host_if])
                .expect("veth");
            sw.exec(&["ip", "link", "set", &host_if, "netns", h.name()]).expect("veth to host");
            h.exec(&["ip", "link", "set", "dev", &host_if, "address", &mac_text(i)])
                .expect("host mac");
            // No IPv6: no router solicitations or ND among the test frames.
            h.exec(&["sysctl", "-qw", &format!("net.ipv6.conf.{host_if}.disable_ipv6=1")])
                .expect("sysctl");
            sw.exec(&["ip", "link", "set", &sw_if, "up"]).expect("switch end up");
            h.exec(&["ip", "link", "set", &host_if, "up"]).expect("host end up");
            let name = host_if.clone();
            let s = h.enter(move || RawSocket::open(&name)).expect("raw socket on the host end");
            lab.sock.push(s);
            lab.h.push(h);
            lab.sw_if.push(sw_if);
        }
        lab
    }

    /// Host `from` sends `n` frames (numbered from `base`) to host `to`;
    /// returns how many arrived (waits until all did, or 1 s of quiet).
    fn deliver(&self, from: usize, to: usize, base: u32, n: u32) -> usize {
        for s in base..base + n {
            self.sock[from].send(&eth_frame(mac(to), mac(from), s)).expect("send");
        }
        let mut got = BTreeSet::new();
        let mut buf = vec![0u8; 2048];
        let mut last = Instant::now();
        for _ in 0..100_000 {
            if got.len() >= n as usize || last.elapsed() > Duration::from_secs(1) {
                break;
            }
            if let Ok(Some(len)) = self.sock[to].recv(&mut buf, Duration::from_millis(20)) {
                if let Some(s) = frame_seq(&buf[..len], mac(from)) {
                    if (base..base + n).contains(&s) {
                        got.insert(s);
                        last = Instant::now();
                    }
                }
            }
        }
        got.len()
    }
}

fn config(ports: &[(&str, u32)], controller: u16, extra: &str) -> String {
    let mut s = format!(
        "fail_mode = \"secure\"\nworkers = 2\ncontrollers = [\"tcp:127.0.0.1:{controller}\"]\n\
         {extra}\n[agent]\nprobe_interval_ms = 60000\nbackoff_min_ms = 100\nbackoff_max_ms = 400\n"
    );
    for (ifname, no) in ports {
        s.push_str(&format!("[[port]]\nspec = \"afpacket:{ifname}\"\nnumber = {no}\n"));
    }
    s
}

/// `sluice ctl --rundir DIR NAME ARGS...`; its stdout (fails the test if
/// the command fails).
fn ctl(rundir: &Path, name: &str, args: &[&str]) -> String {
    let (ok, out, err) = ctl_status(rundir, name, args);
    assert!(ok, "sluice ctl {args:?}: {err}");
    out
}

/// `sluice ctl` that may fail: (success, stdout, stderr).
fn ctl_status(rundir: &Path, name: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["ctl", "--rundir"])
        .arg(rundir)
        .arg(name)
        .args(args)
        .output()
        .expect("running sluice ctl");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// Port numbers `dump-ports` lists.
fn ports_listed(dump: &str) -> Vec<u32> {
    dump.lines()
        .filter_map(|l| l.trim_start().strip_prefix("port"))
        .filter_map(|r| r.trim_start().split(':').next()?.trim().parse().ok())
        .collect()
}

#[test]
fn reload_adds_and_removes_ports_swaps_controllers_and_loses_no_frame() {
    assert!(is_root(), "needs root (network namespaces): run the tests as root");
    for t in ["ip", "sysctl"] {
        assert!(have(t), "`{t}` is not installed (scripts/install-deps installs it)");
    }
    let dir = Scratch::new("reload");
    let lab = Lab::new(3);
    let name = format!("rl{}", std::process::id());
    let cfg_path = dir.path("switch.toml");
    let (if1, if2, if3) = (lab.sw_if[0].as_str(), lab.sw_if[1].as_str(), lab.sw_if[2].as_str());
    let c1 = Controller::bind(0);
    std::fs::write(&cfg_path, config(&[(if1, 1), (if2, 2)], c1.port, "")).unwrap();
    let args: Vec<String> = vec![
        "--config".into(),
        cfg_path.display().to_string(),
        "--netns".into(),
        lab.sw.name().into(),
        "--rundir".into(),
        dir.0.display().to_string(),
        "--name".into(),
        name.clone(),
    ];
    let mut sw = Proc::sluice_run(&args);
    let mut of1 = c1.accept(Duration::from_secs(20), &mut sw);
    of1.handshake();
    of1.add_flow(&format!("priority=10,dl_dst={},actions=output:1", mac_text(0)));
    of1.add_flow(&format!("priority=10,dl_dst={},actions=output:2", mac_text(1)));
    of1.barrier();
    assert_eq!(lab.deliver(0, 1, 0, 20), 20, "h0 -> h1 before any reload");

    // The steady stream h0 -> h1, one frame about every millisecond, while
    // the reloads happen; h1 counts what arrives.
    let stop = AtomicBool::new(false);
    const STREAM_BASE: u32 = 100_000;
    const STREAM_MAX: u32 = 60_000;
    let (sent, received) = std::thread::scope(|s| {
        let sender = s.spawn(|| {
            let mut n = 0;
            while n < STREAM_MAX && !stop.load(Ordering::Acquire) {
                lab.sock[0].send(&eth_frame(mac(1), mac(0), STREAM_BASE + n)).expect("send");
                n += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            n
        });
        let receiver = s.spawn(|| {
            let mut got = BTreeSet::new();
            let mut buf = vec![0u8; 2048];
            let mut quiet_since: Option<Instant> = None;
            for _ in 0..10_000_000u32 {
                if let Ok(Some(len)) = lab.sock[1].recv(&mut buf, Duration::from_millis(20)) {
                    if let Some(seq) = frame_seq(&buf[..len], mac(0)) {
                        if seq >= STREAM_BASE {
                            got.insert(seq);
                            quiet_since = None;
                        }
                    }
                } else if stop.load(Ordering::Acquire) {
                    let q = *quiet_since.get_or_insert_with(Instant::now);
                    if q.elapsed() > Duration::from_secs(1) {
                        break;
                    }
                }
            }
            got
        });
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            reloads(&lab, &mut sw, &mut of1, &cfg_path, &dir.0, &name, [if1, if2, if3])
        }));
        stop.store(true, Ordering::Release);
        let sent = sender.join().expect("sender");
        let received = receiver.join().expect("receiver");
        if let Err(p) = result {
            std::panic::resume_unwind(p);
        }
        (sent, received)
    });
    let lost: Vec<u32> =
        (STREAM_BASE..STREAM_BASE + sent).filter(|s| !received.contains(s)).collect();
    eprintln!(
        "steady stream h0 -> h1 across 6 reloads: {sent} frames sent, {} received, {} lost",
        received.len(),
        lost.len()
    );
    assert!(sent > 500, "the stream ran too briefly to mean anything ({sent} frames)");
    assert!(lost.is_empty(), "{} of {sent} frames lost across the reloads: {lost:?}", lost.len());
}

/// The reloads, while the stream runs.
fn reloads(
    lab: &Lab,
    sw: &mut Proc,
    of1: &mut OfConn,
    cfg_path: &Path,
    rundir: &Path,
    name: &str,
    [if1, if2, if3]: [&str; 3],
) {
    let ctl_ports = || ports_listed(&ctl(rundir, name, &["dump-ports"]));
    assert_eq!(ctl_ports(), [1, 2]);

    // 1. Add port 3 (h2), through `sluice ctl NAME reload`.
    let c1 = of1.s.local_addr().expect("local").port();
    std::fs::write(cfg_path, config(&[(if1, 1), (if2, 2), (if3, 3)], c1, "")).unwrap();
    let out = ctl(rundir, name, &["reload"]);
    assert!(out.contains(&format!("reload applied (sluice run, pid {})", sw.pid())), "{out}");
    assert!(out.contains("ports added: 3; removed: none"), "{out}");
    sw.wait_log_n("configuration reloaded", 1, LOG_WAIT);
    let ps = of1
        .wait_for(Duration::from_secs(10), |_, m| match m {
            Message::PortStatus(p) if p.reason == port_reason::ADD => Some(p.desc.clone()),
            _ => None,
        })
        .expect("PORT_STATUS ADD for the new port");
    assert_eq!((ps.port_no, ps.name.as_str()), (3, if3));
    assert_eq!(ctl_ports(), [1, 2, 3]);
    of1.add_flow(&format!("priority=10,dl_dst={},actions=output:3", mac_text(2)));
    of1.barrier();
    assert_eq!(lab.deliver(0, 2, 0, 20), 20, "h0 -> h2 through the added port");

    // 2. Remove it again (SIGHUP).
    std::fs::write(cfg_path, config(&[(if1, 1), (if2, 2)], c1, "")).unwrap();
    sw.signal("HUP");
    sw.wait_log_n("configuration reloaded", 2, LOG_WAIT);
    let ps = of1
        .wait_for(Duration::from_secs(10), |_, m| match m {
            Message::PortStatus(p) if p.reason == port_reason::DELETE => Some(p.desc.clone()),
            _ => None,
        })
        .expect("PORT_STATUS DELETE for the removed port");
    assert_eq!(ps.port_no, 3);
    assert_eq!(ctl_ports(), [1, 2], "port 3 still listed after its removal");
    // The flow that outputs to it stays (OpenFlow removes no flow with a
    // port); its packets go nowhere.
    let flows = ctl(rundir, name, &["dump-flows"]);
    assert!(flows.contains("output:3"), "{flows}");
    assert_eq!(lab.deliver(0, 2, 100, 20), 0, "frames reached the removed port's host");

    // 3. Swap the controller and add a listener; the dpid changes too,
    // which needs a restart.
    let c2 = Controller::bind(0);
    let lport = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("listen = [\"ptcp:{lport}:127.0.0.1\"]");
    std::fs::write(
        cfg_path,
        config(&[(if1, 1), (if2, 2)], c2.port, &format!("dpid = 77\n{listen}")),
    )
    .unwrap();
    sw.signal("HUP");
    let log = sw.wait_log_n("configuration reloaded", 3, LOG_WAIT);
    assert!(log.contains("needs a restart") && log.contains("dpid"), "{log}");
    let mut of2 = c2.accept(Duration::from_secs(20), sw);
    of2.handshake();
    let ended = of1.wait_for(Duration::from_secs(10), |_, _| None::<()>);
    assert_eq!(ended, Err("connection closed".to_string()), "the old controller was kept");
    let mut passive = TcpStream::connect(("127.0.0.1", lport)).expect("the added listener");
    passive.write_all(&Message::Hello(Hello::with_versions(&[4])).encode(1)).expect("hello");

    // 4. An invalid file: refused, naming the key; nothing changes.
    std::fs::write(cfg_path, config(&[(if1, 1), (if2, 2), (if3, 3)], c2.port, "workerz = 1"))
        .unwrap();
    let (ok, out, err) = ctl_status(rundir, name, &["reload"]);
    assert!(!ok, "ctl reload of an invalid file succeeded: {out}");
    assert!(out.contains("workerz") && err.contains("reload refused"), "{out}\n{err}");
    let log = sw.wait_log_n("reload refused", 1, LOG_WAIT);
    assert!(log.contains("workerz"), "{log}");
    assert_eq!(ctl_ports(), [1, 2]);
    of2.barrier();

    // 5. A port that cannot be opened: refused, nothing changes (not even
    // the other, valid addition).
    let bad = config(&[(if1, 1), (if2, 2), (if3, 3), ("nosuchrl0", 9)], c2.port, "");
    std::fs::write(cfg_path, bad).unwrap();
    sw.signal("HUP");
    let log = sw.wait_log_n("reload refused", 2, LOG_WAIT);
    assert!(log.contains("nosuchrl0"), "{log}");
    assert_eq!(ctl_ports(), [1, 2]);
    of2.barrier();
    assert_eq!(sw.log().matches("configuration reloaded").count(), 3);

    // 6. Remove the listener: its connection closes, the port is free.
    std::fs::write(cfg_path, config(&[(if1, 1), (if2, 2)], c2.port, "")).unwrap();
    sw.signal("HUP");
    sw.wait_log_n("configuration reloaded", 4, LOG_WAIT);
    passive.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut b = [0u8; 256];
    let mut closed = false;
    for _ in 0..100 {
        match passive.read(&mut b) {
            Ok(0) => {
                closed = true;
                break;
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => break,
            Err(_) => {
                closed = true;
                break;
            }
            Ok(_) => {} // the switch's HELLO
        }
    }
    assert!(closed, "the removed listener's connection stayed open");
    assert!(
        TcpStream::connect(("127.0.0.1", lport)).is_err(),
        "the removed listener still accepts"
    );
    of2.barrier();
}
