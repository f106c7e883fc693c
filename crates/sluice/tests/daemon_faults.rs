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
//! passive listener). Without them the tests say so on stderr and pass.
//! Namespaces (and the veths in them), the config file and the daemon (by
//! pid) are removed by Drop guards, also when a test fails; every wait is
//! bounded in time and every loop in count.

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sluice_datapath::ports::testutil::{is_root, unique_name, NetNs, RawSocket};
use sluice_ofp::message::{port_reason, Message};

mod of_controller;
use of_controller::{Controller, Got, OfConn, Watched};

/// EtherType of frames the installed flows forward.
const ETH_OK: u16 = 0x88b5;
/// EtherType no flow matches (a table miss).
const ETH_MISS: u16 = 0x88b6;
const BROADCAST: [u8; 6] = [0xff; 6];

// ---------------------------------------------------------------------------
// Environment

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn can_run() -> bool {
    assert!(is_root(), "needs root (network namespaces)");
    for t in ["ip", "ovs-ofctl"] {
        assert!(have(t), "`{t}` is not installed (scripts/install-deps installs it)");
    }
    true
}

/// A file removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn config(text: &str) -> TempFile {
        let p = std::env::temp_dir().join(format!("{}.toml", unique_name("sluice-faults-")));
        std::fs::write(&p, text).expect("writing the config file");
        TempFile(p)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

// ---------------------------------------------------------------------------
// The switch process

/// `sluice run`, killed (by its pid) and reaped on drop. Its log goes to a
/// file (a pipe nobody reads could fill and stall it); a failing test
/// prints the log's tail.
struct Switch {
    child: Option<Child>,
    log: PathBuf,
}

impl Switch {
    fn start(args: &[String]) -> Switch {
        let log = std::env::temp_dir().join(format!("{}.log", unique_name("sluice-faults-")));
        let file = std::fs::File::create(&log).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .arg("run")
            // Tests run switches side by side: no shared control socket.
            .arg("--no-control-socket")
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("spawning sluice run");
        Switch { child: Some(child), log }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).expect("switch running")
    }

    /// Waits (bounded) until `needle` occurs at least `count` times in the log.
    fn wait_log(&mut self, needle: &str, count: usize, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let log = self.log_text();
            if log.matches(needle).count() >= count {
                return;
            }
            assert!(self.exited().is_none(), "sluice run exited:\n{log}");
            assert!(
                Instant::now() < deadline,
                "`{needle}` not logged {count} time(s) within {timeout:?}:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Resident set size in KiB, from /proc/PID/status.
    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("reading /proc/PID/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .expect("VmRSS in /proc/PID/status")
    }

    /// SIGTERM, then a bounded wait; whether it exited successfully, and its log.
    fn stop(mut self) -> (bool, String) {
        let mut ok = false;
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if let Ok(Some(st)) = c.try_wait() {
                    ok = st.success();
                    break;
                }
                if Instant::now() > deadline {
                    let _ = c.kill();
                    let _ = c.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        (ok, self.log_text())
    }
}

impl Watched for Switch {
    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if std::thread::panicking() {
            let log = self.log_text();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            eprintln!("--- sluice run log (last 40 lines) ---");
            for l in tail.iter().rev() {
                eprintln!("{l}");
            }
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

/// `sluice run` arguments for `lab`'s ports.
fn switch_args(
    lab: &Lab,
    cfg: &TempFile,
    fail_mode: &str,
    controller: u16,
    listen: Option<u16>,
    dpid: u64,
) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "--config".into(),
        cfg.0.display().to_string(),
        "--netns".into(),
        lab.sw.name().into(),
        "--fail-mode".into(),
        fail_mode.into(),
        "--workers".into(),
        "2".into(),
        "--dpid".into(),
        format!("{dpid:#x}"),
        "--controller".into(),
        format!("tcp:127.0.0.1:{controller}"),
    ];
    if let Some(p) = listen {
        a.push("--listen".into());
        a.push(format!("ptcp:{p}:127.0.0.1"));
    }
    for (i, n) in lab.sw_if.iter().enumerate() {
        a.push("--port".into());
        a.push(format!("afpacket:{n}={}", i + 1));
    }
    a
}

// ---------------------------------------------------------------------------
// Hosts and frames

fn mac(host: usize) -> [u8; 6] {
    [0x02, 0, 0, 0, 0x0a, host as u8 + 1]
}

/// Ethernet frame `dst`, `src`, `ethertype`, then the 4-byte big-endian
/// `seq` and padding to `len` (at least 60) bytes.
fn eth_frame(dst: [u8; 6], src: [u8; 6], ethertype: u16, seq: u32, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len.max(60));
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.resize(len.max(60), 0x5a);
    f
}

/// The sequence number of an [`eth_frame`] from `src` with `ethertype`.
fn frame_seq(f: &[u8], src: [u8; 6], ethertype: u16) -> Option<u32> {
    if f.get(6..12)? != src || f.get(12..14)? != ethertype.to_be_bytes() {
        return None;
    }
    Some(u32::from_be_bytes(f.get(14..18)?.try_into().ok()?))
}

/// Host namespaces h0..hN-1, each joined to the switch namespace by a veth
/// (switch end `sw_if[i]` = OpenFlow port i+1) and driven by a raw socket.
struct Lab {
    // Sockets first: dropped before the namespaces they live in.
    sock: Vec<RawSocket>,
    h: Vec<NetNs>,
    sw: NetNs,
    sw_if: Vec<String>,
    host_if: Vec<String>,
}

impl Lab {
    fn new(n: usize) -> Lab {
        let sw = NetNs::new("sw").expect("switch namespace");
        let mut lab =
            Lab { sock: Vec::new(), h: Vec::new(), sw, sw_if: Vec::new(), host_if: Vec::new() };
        for i in 0..n {
            lab.h.push(NetNs::new("h").expect("host namespace"));
            lab.sw_if.push(unique_name("s"));
            lab.host_if.push(unique_name("e"));
            lab.link(i);
            let s = lab.open_socket(i);
            lab.sock.push(s);
        }
        lab
    }

    /// Creates (or re-creates) the veth of host `i`, only inside the
    /// namespaces (nothing is created in the root namespace).
    fn link(&self, i: usize) {
        let (sw_if, host_if) = (&self.sw_if[i], &self.host_if[i]);
        let h = &self.h[i];
        self.sw
            .exec(&["ip", "link", "add", sw_if, "type", "veth", "peer", "name", host_if])
            .expect("veth");
        self.sw.exec(&["ip", "link", "set", host_if, "netns", h.name()]).expect("veth to host");
        let m = mac(i).map(|b| format!("{b:02x}")).join(":");
        h.exec(&["ip", "link", "set", "dev", host_if, "address", &m]).expect("host mac");
        self.sw.exec(&["ip", "link", "set", sw_if, "up"]).expect("switch end up");
        h.exec(&["ip", "link", "set", host_if, "up"]).expect("host end up");
    }

    fn open_socket(&self, i: usize) -> RawSocket {
        let name = self.host_if[i].clone();
        self.h[i].enter(move || RawSocket::open(&name)).expect("raw socket on the host end")
    }

    /// Sends `seqs` from host `from` to `dst`, pausing 10 ms after every
    /// `per_10ms` frames (a rate cap; 0 = no pause).
    fn send(
        &self,
        from: usize,
        dst: [u8; 6],
        ethertype: u16,
        seqs: std::ops::Range<u32>,
        len: usize,
        per_10ms: u32,
    ) {
        for s in seqs {
            self.sock[from].send(&eth_frame(dst, mac(from), ethertype, s, len)).expect("send");
            if per_10ms > 0 && s % per_10ms == per_10ms - 1 {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// Sequence numbers of the frames from host `src` with `ethertype` that
    /// host `at` receives, until `want` of them arrived, `quiet` passed
    /// without any such frame, or 15 s passed.
    fn collect(
        &self,
        at: usize,
        src: usize,
        ethertype: u16,
        want: usize,
        quiet: Duration,
    ) -> BTreeSet<u32> {
        let mut got = BTreeSet::new();
        let mut buf = vec![0u8; 2048];
        let end = Instant::now() + Duration::from_secs(15);
        let mut last = Instant::now();
        for _ in 0..1_000_000 {
            let now = Instant::now();
            if got.len() >= want || now > end || now.duration_since(last) > quiet {
                break;
            }
            match self.sock[at].recv(&mut buf, Duration::from_millis(20)) {
                Ok(Some(n)) => {
                    if let Some(s) = frame_seq(buf.get(..n).unwrap_or(&buf), mac(src), ethertype) {
                        got.insert(s);
                        last = Instant::now();
                    }
                }
                Ok(None) => {}
                Err(e) => panic!("receive on host {at}: {e}"),
            }
        }
        got
    }

    /// Discards whatever host `at` has queued.
    fn drain(&self, at: usize) {
        let mut buf = vec![0u8; 2048];
        for _ in 0..100_000 {
            if !matches!(self.sock[at].recv(&mut buf, Duration::from_millis(5)), Ok(Some(_))) {
                break;
            }
        }
    }

    /// Host `from` sends `n` ETH_OK frames (numbered from `base`) to host
    /// `to`; at least `min` must arrive (an assertion on counts, not time).
    fn assert_forwards(&self, from: usize, to: usize, base: u32, n: u32, min: usize) {
        self.drain(to);
        self.send(from, mac(to), ETH_OK, base..base + n, 100, 10);
        let got = self.collect(to, from, ETH_OK, n as usize, Duration::from_secs(2));
        assert!(
            got.len() >= min && got.iter().all(|s| (base..base + n).contains(s)),
            "host {from} -> host {to}: {} of {n} frames arrived (want >= {min})",
            got.len()
        );
    }

    /// Host `from` sends ETH_MISS frames (to host `to` and to broadcast),
    /// then an ETH_OK marker to `to` that a flow forwards. The marker must
    /// arrive; none of the miss frames may arrive at any other host.
    fn assert_misses_dropped(&self, from: usize, to: usize, base: u32) {
        for i in 0..self.sock.len() {
            self.drain(i);
        }
        self.send(from, mac(to), ETH_MISS, base..base + 10, 100, 0);
        self.send(from, BROADCAST, ETH_MISS, base + 10..base + 20, 100, 0);
        self.send(from, mac(to), ETH_OK, base..base + 1, 100, 0);
        let marker = self.collect(to, from, ETH_OK, 1, Duration::from_secs(5));
        assert!(marker.contains(&base), "the marker frame did not arrive at host {to}");
        for i in (0..self.sock.len()).filter(|&i| i != from) {
            let leaked = self.collect(i, from, ETH_MISS, 1, Duration::from_millis(300));
            assert!(leaked.is_empty(), "table-miss frames reached host {i}: {leaked:?}");
        }
    }
}

// ---------------------------------------------------------------------------
// ovs-ofctl through the daemon's passive listener (the controller the
// switch connects to is `of_controller`)

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

fn wait_listening(port: u16, sw: &mut Switch) {
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(sw.exited().is_none(), "sluice run exited early:\n{}", sw.log_text());
        assert!(Instant::now() < deadline, "sluice run did not listen on {addr} within 20 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `ovs-ofctl -O OpenFlow13 dump-flows`, each flow without its counters and
/// age (which change with traffic and time), sorted.
fn dump_flows(port: u16) -> Vec<String> {
    let out = Command::new("ovs-ofctl")
        .args(["-O", "OpenFlow13", "--timeout=10", "dump-flows", &format!("tcp:127.0.0.1:{port}")])
        .output()
        .expect("running ovs-ofctl");
    assert!(out.status.success(), "ovs-ofctl dump-flows: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut flows: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with("OFPST_FLOW") && !l.trim().is_empty())
        .map(|l| {
            l.trim()
                .split(", ")
                .filter(|f| {
                    !["duration=", "n_packets=", "n_bytes=", "idle_age=", "hard_age="]
                        .iter()
                        .any(|k| f.starts_with(k))
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect();
    flows.sort();
    flows
}

const DPID: u64 = 0xfa17;

// ---------------------------------------------------------------------------
// Tests

/// Fail mode secure: the controller installs flows and is killed; the flows
/// stay (dump-flows unchanged) and keep forwarding, table misses are
/// dropped (no flooding or learning), and when the controller comes back on
/// the same port the switch reconnects within the configured backoff and
/// does HELLO / FEATURES again.
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
    c.barrier();
    lab.assert_forwards(0, 1, 0, 50, 45);
    lab.assert_forwards(1, 0, 0, 50, 45);
    lab.assert_misses_dropped(0, 1, 1000);
    wait_listening(lport, &mut sw);
    let flows = dump_flows(lport);
    assert_eq!(flows.len(), 2, "{flows:?}");

    // Kill the controller (socket and listener): nothing is listening now.
    drop(c);
    drop(ctl);
    sw.wait_log("controller connection ended", 1, Duration::from_secs(10));

    // Flows are kept and still forward; misses are dropped, not flooded.
    assert_eq!(dump_flows(lport), flows, "flows changed when the controller left");
    lab.assert_forwards(0, 1, 2000, 50, 45);
    lab.assert_forwards(1, 0, 2000, 50, 45);
    lab.assert_misses_dropped(0, 1, 3000);
    lab.assert_misses_dropped(1, 0, 3000);
    assert_eq!(dump_flows(lport), flows);

    // The controller comes back on the same port: the switch reconnects
    // (backoff at most 400 ms; 10 s is the generous bound) and starts over.
    let ctl = Controller::bind(cport);
    let t0 = Instant::now();
    let mut c = ctl.accept(Duration::from_secs(10), &mut sw);
    eprintln!("reconnected {:?} after the controller came back", t0.elapsed());
    assert_eq!(c.handshake().datapath_id, DPID, "FEATURES_REPLY after reconnect");
    c.barrier();
    assert_eq!(dump_flows(lport), flows, "flows changed when the controller came back");
    lab.assert_forwards(0, 1, 4000, 50, 45);
    lab.assert_misses_dropped(1, 0, 5000);

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

    let (clean, log) = sw.stop();
    assert!(clean, "sluice run did not exit cleanly on SIGTERM:\n{log}");
}

/// Deleting a port's interface sends PORT_STATUS DELETE to the controller;
/// re-creating it (same name) sends PORT_STATUS ADD with the same port
/// number, and the flows forward through it again.
#[test]
fn port_deleted_and_recreated_reports_port_status() {
    if !can_run() {
        return;
    }
    let mut lab = Lab::new(2);
    let ctl = Controller::bind(0);
    let cfg = TempFile::config("[agent]\nprobe_interval_ms = 30000\n");
    let mut sw = Switch::start(&switch_args(&lab, &cfg, "secure", ctl.port, None, DPID));
    let mut c = ctl.accept(Duration::from_secs(20), &mut sw);
    assert_eq!(c.handshake().datapath_id, DPID);
    c.add_flow("priority=100,in_port=1,dl_type=0x88b5,actions=output:2");
    c.add_flow("priority=100,in_port=2,dl_type=0x88b5,actions=output:1");
    c.barrier();
    lab.assert_forwards(0, 1, 0, 50, 45);

    let name = lab.sw_if[1].clone();
    lab.sw.exec(&["ip", "link", "del", &name]).expect("deleting the veth");
    let del = c
        .wait_for(Duration::from_secs(10), |_, m| match m {
            Message::PortStatus(ps) if ps.reason == port_reason::DELETE => Some(ps.clone()),
            _ => None,
        })
        .expect("PORT_STATUS with reason OFPPR_DELETE");
    assert_eq!((del.desc.port_no, del.desc.name.as_str()), (2, name.as_str()), "{del:?}");

    lab.link(1);
    lab.sock[1] = lab.open_socket(1);
    let add = c
        .wait_for(Duration::from_secs(10), |_, m| match m {
            Message::PortStatus(ps) if ps.reason == port_reason::ADD => Some(ps.clone()),
            _ => None,
        })
        .expect("PORT_STATUS with reason OFPPR_ADD");
    assert_eq!((add.desc.port_no, add.desc.name.as_str()), (2, name.as_str()), "{add:?}");

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
    wait_listening(lport, &mut sw);
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

    let (clean, log) = sw.stop();
    assert!(clean, "sluice run did not exit cleanly on SIGTERM:\n{log}");
}
