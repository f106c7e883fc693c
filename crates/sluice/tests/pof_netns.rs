//! Protocol-oblivious forwarding end to end (issue 14, "a new protocol
//! with no code change"): `sluice run` as a child process with AF_PACKET
//! ports in network namespaces, flows installed over OpenFlow by the
//! binary's own client (`sluice ctl ... add-flows`, from the flows files in
//! `examples/pof/`, so the walkthrough there stays true), real traffic
//! between host namespaces, and the frames checked by an independent
//! decoder: scapy (`tests/pof/pofpkt.py`, run by `/usr/bin/python3`).
//!
//! - [`custom_protocol_with_pof_rules_only`]: a header the switch was built
//!   without (ethertype 0x88b5: service id, tag) matched and rewritten by
//!   POF rules alone; the exact bytes host B receives.
//! - [`tunnel_of_pof_actions_between_two_switches`]: two switches insert and
//!   strip an 8-byte shim with `pof_add` / `pof_del`, decrement the IPv4 TTL
//!   and fix its checksum with `pof_modify` / `pof_checksum`; ping and a
//!   TCP echo across, the shim and checksums checked on the link.
//! - [`kpofvs_rules_forward_ping`]: K_POFVS's `{96,16}` / `{240,32}` rules.
//! - [`malformed_pof_flow_mods_are_refused_and_the_switch_keeps_forwarding`]:
//!   raw OpenFlow bytes the text parser would refuse, each answered with
//!   its error; then the same connection installs valid flows that forward,
//!   and edits that run past the frame leave it alone.
//!
//! Needs root, `ip`, `ping` and `/usr/bin/python3` with scapy; a test
//! without them fails, naming what is missing. Namespace, veth and file
//! names are unique to the process; namespaces are removed by Drop guards
//! (removing one removes the veths inside it, all of which are created
//! inside namespaces); the switches and the Python helpers are killed by
//! PID on drop; every wait and loop is bounded.

mod netlab;
mod ofconn;

use netlab::{free_port, Proc};
use ofconn::Conn;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use sluice_datapath::ports::testutil::{is_root, unique_name, NetNs};
use sluice_ofp::action::Action;
use sluice_ofp::consts::{group_id, port_no, OFP_NO_BUFFER, SLUICE_EXPERIMENTER_ID};
use sluice_ofp::instruction::Instruction;
use sluice_ofp::message::{flow_mod_command, FlowMod, Message};
use sluice_ofp::oxm::{Match, Oxm};

/// The scapy helper (sender, capture and decoder, TCP echo).
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/pof/pofpkt.py");
/// The walkthrough's flows files.
const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/pof");
/// Debian's python, the one with scapy (the first `python3` on PATH may not
/// have it).
const PY: &str = "/usr/bin/python3";

const MAC_A: &str = "02:00:00:00:00:0a";
const MAC_B: &str = "02:00:00:00:00:0b";
const IP_A: &str = "10.0.0.1";
const IP_B: &str = "10.0.0.2";

/// Ethertypes: the custom service header, the tunnel shim, and one nobody
/// has a rule for.
const SVC_TYPE: u16 = 0x88b5;
const SHIM_TYPE: u16 = 0x88b6;
const OTHER_TYPE: u16 = 0x88b7;
/// The tunnel key of `examples/pof/tunnel-s*.flows` ("POF!").
const TUNNEL_KEY: u32 = 0x504f_4621;

const WAIT: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------
// Tools

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Fails (never skips) when the machine lacks what these tests need.
fn require_tools() {
    assert!(is_root(), "these tests need root (network namespaces)");
    for t in ["ip", "ping"] {
        assert!(have(t), "`{t}` is not installed (scripts/install-deps installs it)");
    }
    let scapy = Command::new(PY)
        .args(["-c", "import scapy.all"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(scapy, "`{PY}` cannot import scapy (apt-get install python3-scapy)");
}

// ---------------------------------------------------------------------------
// The switch

/// A `sluice run` child (a [`Proc`]) with its passive listener's port.
struct Switch {
    proc: Proc,
    port: u16,
}

impl Switch {
    /// Starts a secure-mode switch with one worker (frames keep their
    /// order), `ports` (`(interface, number)`) opened in `ns`, and a passive
    /// listener on a free local port; returns once it listens.
    fn start(ns: &NetNs, ports: &[(&str, u32)]) -> Switch {
        let port = free_port();
        let mut args: Vec<String> = vec![
            // Tests run switches side by side: no shared control socket.
            "--no-control-socket".into(),
            "--netns".into(),
            ns.name().into(),
            "--listen".into(),
            format!("ptcp:{port}:127.0.0.1"),
            "--fail-mode".into(),
            "secure".into(),
            "--workers".into(),
            "1".into(),
        ];
        for (ifname, n) in ports {
            args.push("--port".into());
            args.push(format!("afpacket:{ifname}={n}"));
        }
        let mut sw = Switch { proc: Proc::sluice_run(&args), port };
        sw.wait_listening();
        sw.wait_links_up(ports.len());
        sw
    }

    /// Waits (bounded) until all `n` ports are up: a new veth's operstate
    /// turns up only after the kernel's link watch runs (up to about a
    /// second), and until then the switch reports the port `LINK_DOWN` and
    /// cannot send on it.
    fn wait_links_up(&self, n: usize) {
        let deadline = Instant::now() + WAIT;
        loop {
            let desc = self.ctl(&["dump-ports-desc"]);
            if desc.matches("state:      LIVE").count() == n && !desc.contains("LINK_DOWN") {
                return;
            }
            assert!(Instant::now() < deadline, "ports not up within {WAIT:?}:\n{desc}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn wait_listening(&mut self) {
        self.proc.wait_listening_within(self.port, WAIT);
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.proc.try_wait()
    }

    fn log_text(&self) -> String {
        self.proc.log()
    }

    /// `sluice ctl tcp:127.0.0.1:PORT ARGS...`, which must succeed; its
    /// stdout.
    fn ctl(&self, args: &[&str]) -> String {
        let out = self.ctl_output(args);
        assert!(
            out.status.success(),
            "sluice ctl {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn ctl_output(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["ctl", "--timeout", "10", &format!("tcp:127.0.0.1:{}", self.port)])
            .args(args)
            .output()
            .expect("running sluice ctl")
    }

    /// Installs a flows file from `examples/pof/` and checks that
    /// `dump-flows` prints every flow back exactly as the file writes it
    /// (the file uses the printer's canonical form), so the walkthrough
    /// shows what a reader will see.
    fn add_flows_file(&self, name: &str) {
        let path = format!("{EXAMPLES}/{name}");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        self.ctl(&["add-flows", &path]);
        let dump = self.ctl(&["dump-flows"]);
        let flows: Vec<&str> =
            text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
        assert_eq!(dump.matches("priority=").count(), flows.len(), "{name}:\n{dump}");
        for f in flows {
            let printed = f.replacen(",actions=", " actions=", 1);
            assert!(
                dump.contains(&format!(" {printed}\n")),
                "dump-flows lacks {printed:?}:\n{dump}"
            );
        }
    }

    /// `(n_packets, flow text)` of every flow, in dump order.
    fn flow_counts(&self) -> Vec<(u64, String)> {
        self.ctl(&["dump-flows"])
            .lines()
            .filter_map(|l| {
                let n = l.split("n_packets=").nth(1)?;
                let n = n.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
                Some((n, l.trim().to_string()))
            })
            .collect()
    }

    /// SIGTERM, then wait (bounded) for the exit; whether it exited
    /// successfully, and its log.
    fn stop(self) -> (bool, String) {
        self.proc.stop()
    }
}

// ---------------------------------------------------------------------------
// Namespaces

/// A host: a namespace with one interface (MAC, IPv4 address, MTU set).
struct Host {
    ns: NetNs,
    ifname: String,
}

/// Creates the veth pair `a` (in `ns_a`) / `b` (in `ns_b`), created inside
/// `ns_a` (nothing is created in the root namespace), both ends up.
fn veth(ns_a: &NetNs, a: &str, ns_b: &NetNs, b: &str) {
    ns_a.exec(&["ip", "link", "add", a, "type", "veth", "peer", "name", b, "netns", ns_b.name()])
        .expect("veth pair");
    ns_a.exec(&["ip", "link", "set", a, "up"]).expect("veth end up");
    ns_b.exec(&["ip", "link", "set", b, "up"]).expect("veth end up");
}

impl Host {
    /// A host namespace joined to `sw` (the switch's port namespace) by a
    /// veth whose switch end is returned.
    fn attach(sw: &NetNs, mac: &str, ip: &str, mtu: u32) -> (Host, String) {
        let ns = NetNs::new("h").expect("host namespace");
        let ifname = unique_name("e");
        let sw_if = unique_name("s");
        veth(sw, &sw_if, &ns, &ifname);
        let mtu = mtu.to_string();
        ns.exec(&["ip", "link", "set", "dev", &ifname, "address", mac, "mtu", &mtu])
            .expect("host MAC and MTU");
        ns.exec(&["ip", "addr", "add", &format!("{ip}/24"), "dev", &ifname]).expect("host address");
        (Host { ns, ifname }, sw_if)
    }

    /// `ping` (iputils), bounded by its own deadline.
    fn ping(&self, dst: &str, count: u32, extra: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", self.ns.name(), "ping", "-n", "-c", &count.to_string()])
            .args(["-i", "0.2", "-W", "1", "-w", "10"])
            .args(extra)
            .arg(dst)
            .output()
            .expect("running ping")
    }

    /// One ping, one second to answer: whether it was answered.
    fn ping_once(&self, dst: &str) -> bool {
        Command::new("ip")
            .args(["netns", "exec", self.ns.name(), "ping", "-n", "-c", "1", "-W", "1", dst])
            .output()
            .expect("running ping")
            .status
            .success()
    }

    /// Pings once at a time until one round trip works or `timeout` passes.
    fn ping_ok_within(&self, dst: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.ping_once(dst) {
                return true;
            }
        }
        false
    }
}

/// One switch, host A on port 1, host B on port 2 (MTU 1500). Fields drop
/// in order: hosts first, then the switch namespace.
struct OneSwitchLab {
    a: Host,
    b: Host,
    sw: NetNs,
    sw_a: String,
    sw_b: String,
}

impl OneSwitchLab {
    fn new() -> OneSwitchLab {
        let sw = NetNs::new("sw").expect("switch namespace");
        let (a, sw_a) = Host::attach(&sw, MAC_A, IP_A, 1500);
        let (b, sw_b) = Host::attach(&sw, MAC_B, IP_B, 1500);
        OneSwitchLab { a, b, sw, sw_a, sw_b }
    }

    fn start_switch(&self) -> Switch {
        Switch::start(&self.sw, &[(&self.sw_a, 1), (&self.sw_b, 2)])
    }
}

// ---------------------------------------------------------------------------
// The Python helper

/// `ip netns exec NS /usr/bin/python3 pofpkt.py ARGS...` (`ip netns exec`
/// execs, so the child's pid is python's); stdout read line by line on a
/// thread, stderr kept for messages; killed by pid on drop.
struct Py {
    what: String,
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl Py {
    fn spawn(ns: &NetNs, args: &[&str]) -> Py {
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns.name(), PY, SCRIPT])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning python");
        let (tx, lines) = channel();
        let out = child.stdout.take().expect("python stdout");
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let (err, sink) = (child.stderr.take().expect("python stderr"), stderr.clone());
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = BufReader::new(err).read_to_string(&mut s);
            sink.lock().unwrap().push_str(&s);
        });
        let stdin = child.stdin.take();
        Py { what: args.join(" "), child: Some(child), stdin, lines, stderr }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The next line of output, within `timeout`.
    fn line(&mut self, timeout: Duration) -> String {
        match self.lines.recv_timeout(timeout) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => {
                panic!("`{}`: no output within {timeout:?}; stderr:\n{}", self.what, self.stderr())
            }
            Err(RecvTimeoutError::Disconnected) => {
                // Give the stderr thread a moment to collect the traceback.
                std::thread::sleep(Duration::from_millis(200));
                panic!("`{}` ended early; stderr:\n{}", self.what, self.stderr())
            }
        }
    }

    /// Reads lines until one equals `want` (at most 1000 lines, within
    /// `timeout`); the lines before it.
    fn until(&mut self, want: &str, timeout: Duration) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        for _ in 0..1000 {
            let left = deadline.saturating_duration_since(Instant::now());
            let l = self.line(left.max(Duration::from_millis(1)));
            if l == want {
                return seen;
            }
            seen.push(l);
        }
        panic!("`{}`: no {want:?} in 1000 lines: {seen:?}", self.what);
    }

    /// Waits (bounded) for the exit, which must be a success; all output.
    fn finish(mut self, timeout: Duration) -> Vec<String> {
        drop(self.stdin.take());
        let mut c = self.child.take().expect("python child");
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(st) = c.try_wait().expect("waiting for python") {
                break st;
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let _ = c.wait();
                panic!("`{}` did not finish within {timeout:?}", self.what);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut out = Vec::new();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(2)) {
            out.push(l);
        }
        assert!(status.success(), "`{}` failed ({status}): {out:?}\n{}", self.what, self.stderr());
        out
    }
}

impl Drop for Py {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A scapy capture on one interface, of some ethertypes.
struct Capture(Py);

impl Capture {
    /// Returns once the capture socket is open.
    fn start(ns: &NetNs, ifname: &str, ethertypes: &[u16]) -> Capture {
        let types: Vec<String> = ethertypes.iter().map(|t| format!("{t:#06x}")).collect();
        let mut p = Py::spawn(ns, &["sniff", ifname, &types.join(",")]);
        let before = p.until("ready", WAIT);
        assert!(before.is_empty(), "capture said {before:?} before ready");
        Capture(p)
    }

    /// Stops the capture; the decoder's description of every frame, in
    /// arrival order.
    fn finish(mut self) -> Vec<Value> {
        let stdin = self.0.stdin.as_mut().expect("capture stdin");
        stdin.write_all(b"stop\n").expect("stopping the capture");
        stdin.flush().expect("stopping the capture");
        let lines = self.0.until("done", WAIT);
        lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("decoder line {l:?}: {e}")))
            .collect()
    }
}

/// Sends service-header frames built by scapy from host `h`; the hex of
/// each frame sent.
fn send_service_frames(h: &Host, dst: &str, src: &str, specs: &[String]) -> Vec<String> {
    let mut args = vec!["svc", &h.ifname, dst, src];
    args.extend(specs.iter().map(String::as_str));
    Py::spawn(&h.ns, &args).finish(WAIT)
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn mac_bytes(mac: &str) -> Vec<u8> {
    mac.split(':').map(|h| u8::from_str_radix(h, 16).expect("MAC")).collect()
}

/// A service-header frame from A to B: `ethertype`, `service`, `tag`,
/// then `payload`.
fn service_frame(ethertype: u16, service: u16, tag: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = mac_bytes(MAC_B);
    f.extend(mac_bytes(MAC_A));
    f.extend(ethertype.to_be_bytes());
    f.extend(service.to_be_bytes());
    f.extend(tag.to_be_bytes());
    f.extend(payload);
    f
}

/// The `svc` spec of a frame `service_frame` describes.
fn service_spec(ethertype: u16, service: u16, tag: u32, payload: &[u8]) -> String {
    format!("{ethertype:#x}:{service:#x}:{tag:#x}:{}", to_hex(payload))
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("no {key:?} in {v}"))
}

fn u64_of(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("no {key:?} in {v}"))
}

/// RFC 1071: whether `header` sums to 0xffff (its checksum verifies).
fn ipv4_checksum_ok(header: &[u8]) -> bool {
    let mut sum: u32 = header.chunks(2).map(|c| u32::from(c[0]) << 8 | u32::from(c[1])).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

// ---------------------------------------------------------------------------
// 1. A custom protocol

/// A header that did not exist when the switch was built (ethertype
/// 0x88b5: 16-bit service id, 32-bit tag), handled by the POF rules of
/// `examples/pof/custom-header.flows` alone. Host A sends five frames built
/// by scapy; host B's capture must hold exactly the three that should pass,
/// with their tags rewritten as the rules say, byte for byte.
#[test]
fn custom_protocol_with_pof_rules_only() {
    require_tools();
    let lab = OneSwitchLab::new();
    let sw = lab.start_switch();
    sw.add_flows_file("custom-header.flows");
    // (ethertype, service, tag), each with its own payload (46 bytes of its
    // number, so every frame is 66 bytes, no padding anywhere).
    let sent = [
        (SVC_TYPE, 7, 0x1111_1111),     // tag rewritten to 0xcafef00d
        (SVC_TYPE, 9, 0x1212_1212),     // dropped
        (SVC_TYPE, 0x142, 0x2222_2222), // masked match: tag 0xab222222
        (SVC_TYPE, 0x200, 0x3333_3333), // catch-all: unchanged
        (OTHER_TYPE, 7, 0x4444_4444),   // not the protocol: no rule, dropped
    ];
    let payload = |i: usize| vec![0xa0 + i as u8; 46];
    let frames: Vec<Vec<u8>> = sent
        .iter()
        .enumerate()
        .map(|(i, &(t, s, g))| service_frame(t, s, g, &payload(i)))
        .collect();
    let specs: Vec<String> =
        sent.iter().enumerate().map(|(i, &(t, s, g))| service_spec(t, s, g, &payload(i))).collect();

    let cap = Capture::start(&lab.b.ns, &lab.b.ifname, &[SVC_TYPE, OTHER_TYPE]);
    let out = send_service_frames(&lab.a, MAC_B, MAC_A, &specs);
    // scapy built exactly the bytes meant.
    let want_sent: Vec<String> = frames.iter().map(|f| to_hex(f)).collect();
    assert_eq!(out, want_sent, "scapy's frames differ from the test's");

    // Until the three frames are counted out of port 2 (bounded), then stop.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let tx = sw.ctl(&["dump-ports", "2"]);
        if tx.contains("tx pkts=3") {
            break;
        }
        assert!(Instant::now() < deadline, "port 2 did not send 3 frames:\n{tx}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let got = cap.finish();

    let rewritten = |i: usize, tag: u32| {
        let (t, s, _) = sent[i];
        to_hex(&service_frame(t, s, tag, &payload(i)))
    };
    let want = [rewritten(0, 0xcafe_f00d), rewritten(2, 0xab22_2222), want_sent[3].clone()];
    let got_hex: Vec<&str> = got.iter().map(|v| str_of(v, "hex")).collect();
    assert_eq!(got_hex, want, "frames at host B");
    // The decoder (scapy's own layer for the header) reads the same fields.
    let fields: Vec<(u64, u64)> =
        got.iter().map(|v| (u64_of(v, "service"), u64_of(v, "tag"))).collect();
    assert_eq!(fields, [(7, 0xcafe_f00d), (0x142, 0xab22_2222), (0x200, 0x3333_3333)]);

    // Every rule saw its frame: service 9 was dropped by its rule, the
    // 0x88b7 frame by the table miss.
    let counts: Vec<u64> = sw.flow_counts().iter().map(|(n, _)| *n).collect();
    assert_eq!(counts, [1, 1, 1, 1], "{:#?}", sw.flow_counts());
    let ports = sw.ctl(&["dump-ports", "1"]);
    assert!(ports.contains("rx pkts=5"), "{ports}");

    let (clean, log) = sw.stop();
    assert!(clean, "sluice run did not exit cleanly:\n{log}");
}

// ---------------------------------------------------------------------------
// 2. A tunnel of POF actions

/// Host A — switch 1 — link — switch 2 — host B, each switch's ports in its
/// own namespace, with `examples/pof/tunnel-s1.flows` / `tunnel-s2.flows`:
/// every ARP and IPv4 frame crosses the link inside an 8-byte shim
/// (ethertype 0x88b6, tunnel id, key, then the original ethertype) that
/// `pof_add` inserts and `pof_del` strips; the entry switch decrements the
/// IPv4 TTL and recomputes the header checksum at offsets that count the
/// shim. The hosts' MTU is 1492 so a full-size packet plus the shim still
/// fits the link's 1500.
#[test]
fn tunnel_of_pof_actions_between_two_switches() {
    require_tools();
    let s1 = NetNs::new("s1").expect("switch 1 namespace");
    let s2 = NetNs::new("s2").expect("switch 2 namespace");
    let (a, s1_a) = Host::attach(&s1, MAC_A, IP_A, 1492);
    let (b, s2_b) = Host::attach(&s2, MAC_B, IP_B, 1492);
    let (link1, link2) = (unique_name("l"), unique_name("l"));
    veth(&s1, &link1, &s2, &link2);

    let sw1 = Switch::start(&s1, &[(&s1_a, 1), (&link1, 2)]);
    let sw2 = Switch::start(&s2, &[(&link2, 1), (&s2_b, 2)]);
    sw1.add_flows_file("tunnel-s1.flows");
    sw2.add_flows_file("tunnel-s2.flows");

    // Frames arriving on each end of the link (a capture sees a link's
    // incoming frames; the switches send with PACKET_QDISC_BYPASS, which
    // taps on the sending side do not see). Plain ARP/IPv4 must never be
    // there.
    let kinds = [SHIM_TYPE, 0x0800, 0x0806];
    let cap_ab = Capture::start(&s2, &link2, &kinds);
    let cap_ba = Capture::start(&s1, &link1, &kinds);

    // Ping both ways: ARP and ICMP through the tunnel; the replies arrive
    // with the TTL one less (64 - 1: one tunnel entry on the way).
    assert!(a.ping_ok_within(IP_B, Duration::from_secs(10)), "no ping through the tunnel");
    let out = a.ping(IP_B, 3, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ping A -> B: {text}");
    let ttls: Vec<&str> = text.split("ttl=").skip(1).map(|r| &r[..2]).collect();
    assert!(
        !ttls.is_empty() && ttls.iter().all(|t| *t == "63"),
        "TTL not decremented once: {text}"
    );
    let out = b.ping(IP_A, 2, &[]);
    assert!(out.status.success(), "ping B -> A: {}", String::from_utf8_lossy(&out.stdout));
    // A full-size packet (1492 bytes, don't fragment) still fits with the shim.
    let out = a.ping(IP_B, 2, &["-M", "do", "-s", "1464"]);
    assert!(out.status.success(), "1492-byte ping: {}", String::from_utf8_lossy(&out.stdout));

    // TCP: 20000 bytes echoed (the kernel drops IPv4 with a bad header
    // checksum, so this passing says the checksums are right too).
    let mut server = Py::spawn(&b.ns, &["tcp-server", "5001"]);
    assert_eq!(server.line(WAIT), "listening");
    let client = Py::spawn(&a.ns, &["tcp-client", IP_B, "5001", "20000"]).finish(WAIT);
    assert_eq!(client, ["echoed 20000"]);
    assert_eq!(server.finish(WAIT), ["served 20000"]);

    // The link: every frame carries the shim with the right id and key,
    // every IPv4 header inside verifies (scapy and this test each check)
    // and has had its TTL decremented exactly once.
    for (cap, tunnel, src) in [(cap_ab, 1, IP_A), (cap_ba, 2, IP_B)] {
        let frames = cap.finish();
        let (mut arp, mut icmp, mut tcp) = (0, 0, 0);
        for f in &frames {
            let raw = hex::decode(str_of(f, "hex")).expect("hex");
            assert_eq!(raw[12..14], SHIM_TYPE.to_be_bytes(), "no shim at bytes 12..14: {f}");
            assert_eq!(u64_of(f, "tunnel"), tunnel, "{f}");
            assert_eq!(raw[14..16], (tunnel as u16).to_be_bytes());
            assert_eq!(raw[16..20], TUNNEL_KEY.to_be_bytes(), "{f}");
            assert_eq!(u64_of(f, "key"), u64::from(TUNNEL_KEY), "{f}");
            match u64_of(f, "inner_type") {
                0x0806 => {
                    assert_eq!(str_of(f, "arp_psrc"), src, "{f}");
                    arp += 1;
                }
                0x0800 => {
                    assert_eq!(str_of(f, "ip_src"), src, "{f}");
                    assert_eq!(f["ip_header_ok"], true, "scapy: bad IPv4 checksum in {f}");
                    assert!(ipv4_checksum_ok(&raw[22..42]), "bad IPv4 checksum in {f}");
                    assert_eq!(u64_of(f, "ttl"), 63, "{f}");
                    match u64_of(f, "proto") {
                        1 => icmp += 1,
                        6 => tcp += 1,
                        p => panic!("IPv4 protocol {p} in the tunnel: {f}"),
                    }
                }
                t => panic!("inner ethertype {t:#x}: {f}"),
            }
        }
        assert!(
            arp >= 1 && icmp >= 5 && tcp >= 5,
            "tunnel {tunnel}: {arp} ARP, {icmp} ICMP, {tcp} TCP frames: {frames:#?}"
        );
    }

    // Every rule of both switches was used.
    for sw in [&sw1, &sw2] {
        let counts = sw.flow_counts();
        assert!(counts.iter().all(|(n, _)| *n > 0), "an unused tunnel rule: {counts:#?}");
    }
    for sw in [sw2, sw1] {
        let (clean, log) = sw.stop();
        assert!(clean, "sluice run did not exit cleanly:\n{log}");
    }
}

// ---------------------------------------------------------------------------
// 3. K_POFVS's rules

/// K_POFVS's example rules (`examples/pof/kpofvs.flows`): ARP by `{96,16}`,
/// IPv4 by destination `{240,32}`, and ping works both ways.
#[test]
fn kpofvs_rules_forward_ping() {
    require_tools();
    let lab = OneSwitchLab::new();
    let sw = lab.start_switch();
    assert!(!lab.a.ping_once(IP_B), "ping passed an empty secure switch");
    sw.add_flows_file("kpofvs.flows");
    assert!(lab.a.ping_ok_within(IP_B, Duration::from_secs(10)), "no ping with K_POFVS's rules");
    let out = lab.a.ping(IP_B, 3, &[]);
    assert!(out.status.success(), "ping A -> B: {}", String::from_utf8_lossy(&out.stdout));
    let out = lab.b.ping(IP_A, 3, &[]);
    assert!(out.status.success(), "ping B -> A: {}", String::from_utf8_lossy(&out.stdout));
    let counts = sw.flow_counts();
    assert_eq!(counts.len(), 3, "{counts:#?}");
    // ARP: at least a request and a reply; IPv4: at least the 3 + 3
    // echoes each way (requests one way, replies the other).
    assert!(counts[0].1.contains("pof(96,16)=0x0806") && counts[0].0 >= 2, "{counts:#?}");
    assert!(counts[1..].iter().all(|(n, _)| *n >= 6), "{counts:#?}");
    let (clean, log) = sw.stop();
    assert!(clean, "sluice run did not exit cleanly:\n{log}");
}

// ---------------------------------------------------------------------------
// 4. Malformed POF flow-mods

/// A POF match field as the docs lay it out: `base, 0, bit length, bit
/// offset, value [, mask]` after the experimenter id.
fn pof_oxm(base: u8, bit_len: u16, offset: u32, value: &[u8], mask: Option<&[u8]>) -> Oxm {
    let mut payload = vec![base, 0];
    payload.extend(bit_len.to_be_bytes());
    payload.extend(offset.to_be_bytes());
    payload.extend(value);
    if let Some(m) = mask {
        payload.extend(m);
    }
    Oxm::Experimenter {
        experimenter: SLUICE_EXPERIMENTER_ID,
        field: 0,
        has_mask: mask.is_some(),
        payload,
    }
}

/// A POF action: `subtype` and `body`, zero-padded so the action is a
/// multiple of 8 bytes.
fn pof_action(subtype: u16, body: &[u8]) -> Action {
    let mut data = subtype.to_be_bytes().to_vec();
    data.extend(body);
    while (8 + data.len()) % 8 != 0 {
        data.push(0);
    }
    Action::Experimenter { experimenter: SLUICE_EXPERIMENTER_ID, data }
}

/// The body `base, byte1, len, offset` every POF action starts with.
fn pof_body(base: u8, byte1: u8, len: u16, offset: u32, rest: &[u8]) -> Vec<u8> {
    let mut b = vec![base, byte1];
    b.extend(len.to_be_bytes());
    b.extend(offset.to_be_bytes());
    b.extend(rest);
    b
}

fn flow_mod(xid: u32, priority: u16, oxms: Vec<Oxm>, actions: Vec<Action>) -> Vec<u8> {
    Message::FlowMod(FlowMod {
        command: flow_mod_command::ADD,
        priority,
        buffer_id: OFP_NO_BUFFER,
        out_port: port_no::ANY,
        out_group: group_id::ANY,
        r#match: Match::new(oxms),
        instructions: vec![Instruction::ApplyActions(actions)],
        ..FlowMod::default()
    })
    .encode(xid)
}

/// A refused flow-mod: what is wrong, its match, its actions, and the
/// error `(type, code)` it must get.
type BadFlowMod = (&'static str, Vec<Oxm>, Vec<Action>, (u16, u16));

fn output(port: u32) -> Action {
    Action::Output { port, max_len: 0 }
}

/// Flow-mods with POF fields and actions the text parser refuses, sent as
/// raw OpenFlow: each gets exactly its error (type, code) and installs
/// nothing. The same connection then installs valid POF flows (ARP by
/// ethertype, IPv4 by `l3+128`, the destination) that forward ping, and
/// edits that run past the frame's end leave frames alone while a match
/// past the end of a short frame does not match it. The switch stays up and
/// exits cleanly.
#[test]
fn malformed_pof_flow_mods_are_refused_and_the_switch_keeps_forwarding() {
    require_tools();
    let lab = OneSwitchLab::new();
    let mut sw = lab.start_switch();

    // The text parser refuses these, so only raw bytes can send them.
    for bad in [
        "pof(96,0)=0,actions=output:2",
        "pof(96,129)=0,actions=output:2",
        "pof(524280,8)=0,actions=output:2",
        "pof(96,16)=0x88b5,actions=pof_del(96,524288),output:2",
    ] {
        let out = sw.ctl_output(&["add-flow", bad]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "sluice ctl accepted {bad:?}");
        assert!(err.contains('^'), "no caret diagnostic for {bad:?}: {err}");
    }

    let mut c = Conn::open(sw.addr());
    let ether = |t: u16| pof_oxm(0, 16, 96, &t.to_be_bytes(), None);
    let del =
        |offset: u32, bits: u32| pof_action(3, &pof_body(0, 0, 0, offset, &bits.to_be_bytes()));
    // OFPET_BAD_MATCH = 4 (BAD_LEN 1, BAD_WILDCARDS 5, BAD_FIELD 6,
    // BAD_VALUE 7, DUP_FIELD 10), OFPET_BAD_ACTION = 2 (BAD_LEN 1,
    // BAD_ARGUMENT 5).
    let cases: Vec<BadFlowMod> = vec![
        ("match bit length 0", vec![pof_oxm(0, 0, 96, &[], None)], vec![output(2)], (4, 1)),
        (
            "match bit length 129",
            vec![pof_oxm(0, 129, 96, &[0; 17], None)],
            vec![output(2)],
            (4, 1),
        ),
        (
            "match value shorter than its length",
            vec![pof_oxm(0, 16, 96, &[0x88], None)],
            vec![output(2)],
            (4, 1),
        ),
        (
            "match offset past any frame",
            vec![pof_oxm(0, 8, 524_281, &[0], None)],
            vec![output(2)],
            (4, 6),
        ),
        (
            "match running past any frame",
            vec![pof_oxm(0, 16, 524_272, &[0, 0], None)],
            vec![output(2)],
            (4, 6),
        ),
        ("match base code 6", vec![pof_oxm(6, 16, 0, &[0, 0], None)], vec![output(2)], (4, 6)),
        (
            "match value wider than 4 bits",
            vec![pof_oxm(0, 4, 96, &[0x1f], None)],
            vec![output(2)],
            (4, 7),
        ),
        (
            "match value bits outside the mask",
            vec![pof_oxm(0, 16, 96, &[0x88, 0xb5], Some(&[0xff, 0x00]))],
            vec![output(2)],
            (4, 5),
        ),
        ("the same field twice", vec![ether(SVC_TYPE), ether(SVC_TYPE)], vec![output(2)], (4, 10)),
        (
            "pof_del of more bits than any frame",
            vec![ether(SVC_TYPE)],
            vec![del(96, 524_288), output(2)],
            (2, 5),
        ),
        ("pof_del of 12 bits", vec![ether(SVC_TYPE)], vec![del(96, 12), output(2)], (2, 5)),
        ("pof_del of 0 bits", vec![ether(SVC_TYPE)], vec![del(96, 0), output(2)], (2, 5)),
        (
            "pof_checksum into an 8-bit field",
            vec![ether(0x0800)],
            vec![pof_action(4, &pof_body(3, 3, 8, 80, &[0, 0, 0, 0, 0, 0, 0, 160]))],
            (2, 5),
        ),
        (
            "pof_modify increment as wide as the field",
            vec![ether(0x0800)],
            vec![pof_action(1, &pof_body(3, 0, 8, 64, &256i128.to_be_bytes()))],
            (2, 5),
        ),
        (
            "pof_set with non-zero padding",
            vec![ether(0x0800)],
            // Two value bytes where an 8-bit field has one: the action's
            // length (24) is right, but its padding is not zero.
            vec![pof_action(0, &pof_body(3, 0, 8, 64, &[0x40, 0x40]))],
            (2, 5),
        ),
        (
            "pof_set cut short",
            vec![ether(0x0800)],
            // Subtype SET_FIELD and 6 bytes: not even the 8-byte fixed part.
            vec![Action::Experimenter {
                experimenter: SLUICE_EXPERIMENTER_ID,
                data: vec![0, 0, 3, 0, 0, 8, 0, 0],
            }],
            (2, 1),
        ),
        (
            "pof_add of 12 bits",
            vec![ether(0x0800)],
            vec![pof_action(2, &pof_body(0, 0, 12, 96, &[0xab, 0xc0]))],
            (2, 5),
        ),
    ];
    for (i, (what, oxms, actions, want)) in cases.into_iter().enumerate() {
        let xid = 0x100 + i as u32;
        let msg = flow_mod(xid, 50, oxms, actions);
        let Some(err) = c.send_then_barrier(&msg, xid) else {
            panic!("{what}: accepted");
        };
        assert_eq!(err[1], 1, "{what}: not an OFPT_ERROR: {err:02x?}");
        let got = (u16::from_be_bytes([err[8], err[9]]), u16::from_be_bytes([err[10], err[11]]));
        assert_eq!(got, want, "{what}: error (type, code)");
        // The error carries (the start of) the offending request.
        let n = (err.len() - 12).min(msg.len());
        assert_eq!(err[12..12 + n], msg[..n], "{what}: error data");
    }
    assert!(sw.exited().is_none(), "the switch exited:\n{}", sw.log_text());
    assert_eq!(sw.flow_counts().len(), 0, "a refused flow-mod installed a flow");

    // The same connection installs valid flows: ARP by its ethertype,
    // IPv4 by the destination (`pof(l3+128,32)`), which forward ping.
    let ip = |s: &str| s.parse::<std::net::Ipv4Addr>().unwrap().octets();
    let valid = [
        flow_mod(0x200, 20, vec![ether(0x0806)], vec![output(port_no::FLOOD)]),
        flow_mod(0x201, 10, vec![pof_oxm(3, 32, 128, &ip(IP_B), None)], vec![output(2)]),
        flow_mod(0x202, 10, vec![pof_oxm(3, 32, 128, &ip(IP_A), None)], vec![output(1)]),
    ];
    for (i, m) in valid.iter().enumerate() {
        let r = c.send_then_barrier(m, 0x200 + i as u32);
        assert!(r.is_none(), "valid flow-mod {i} refused: {r:02x?}");
    }
    assert!(lab.a.ping_ok_within(IP_B, Duration::from_secs(10)), "no ping after the errors");
    let out = lab.a.ping(IP_B, 3, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));

    // Edits past the end of the frame do nothing (the frame is forwarded
    // as it came); a match past the end of a short frame does not match it.
    let past_end = vec![
        del(96, 524_184),                                     // pof_del(96,524184)
        pof_action(0, &pof_body(0, 0, 32, 8000, &[0xff; 4])), // pof_set(8000,32,0xffffffff)
        pof_action(2, &pof_body(0, 0, 8, 524_000, &[0xee])),  // pof_add(524000,8,0xee)
        output(2),
    ];
    let far_match = vec![ether(SVC_TYPE), pof_oxm(0, 32, 4000, &[0; 4], None)];
    let mark = vec![pof_action(0, &pof_body(0, 0, 16, 112, &[0xff, 0xff])), output(2)]; // pof_set(112,16,0xffff)
    for (i, m) in
        [flow_mod(0x300, 30, vec![ether(SVC_TYPE)], past_end), flow_mod(0x301, 40, far_match, mark)]
            .iter()
            .enumerate()
    {
        let r = c.send_then_barrier(m, 0x300 + i as u32);
        assert!(r.is_none(), "valid flow-mod {i} refused: {r:02x?}");
    }
    let short = service_frame(SVC_TYPE, 1, 0x0102_0304, &[0x5a; 46]);
    let long = service_frame(SVC_TYPE, 2, 0x0506_0708, &[0; 580]);
    let cap = Capture::start(&lab.b.ns, &lab.b.ifname, &[SVC_TYPE]);
    send_service_frames(
        &lab.a,
        MAC_B,
        MAC_A,
        &[
            service_spec(SVC_TYPE, 1, 0x0102_0304, &[0x5a; 46]),
            service_spec(SVC_TYPE, 2, 0x0506_0708, &[0; 580]),
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sw
        .flow_counts()
        .iter()
        .filter(|(_, f)| f.contains("pof(4000,32)") || f.contains("pof_del"))
        .all(|(n, _)| *n > 0)
    {
        assert!(Instant::now() < deadline, "the frames were not counted: {:#?}", sw.flow_counts());
        std::thread::sleep(Duration::from_millis(100));
    }
    let got: Vec<String> = cap.finish().iter().map(|v| str_of(v, "hex").to_string()).collect();
    let mut long_marked = long.clone();
    long_marked[14..16].copy_from_slice(&[0xff, 0xff]);
    assert_eq!(got, [to_hex(&short), to_hex(&long_marked)], "frames at host B");

    // Still in step, still up, and a clean exit.
    c.barrier(0x400);
    assert!(sw.exited().is_none(), "the switch exited:\n{}", sw.log_text());
    drop(c);
    let (clean, log) = sw.stop();
    assert!(clean, "sluice run did not exit cleanly:\n{log}");
}
