//! The lab the fault tests share (`daemon_faults.rs`, `faults_load.rs`):
//! `sluice run` as a child process ([`Switch`]), host namespaces joined to
//! a switch namespace by veths and driven by raw sockets ([`Lab`], which
//! counts every frame its hosts send and every frame they receive from the
//! switch), `ovs-ofctl` through the daemon's passive listener, and the
//! conservation check ([`Ledger`]): every frame the hosts sent is
//! accounted for by sluice's counters as forwarded, dropped with a reason,
//! or sent to the controller, and the frames forwarded are the frames the
//! hosts received.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use sluice_datapath::ports::testutil::{is_root, unique_name, NetNs, RawSocket};

use crate::netlab::Proc;
pub use crate::netlab::{free_port, have};
use crate::of_controller::Watched;

/// EtherType of frames the installed flows forward.
pub const ETH_OK: u16 = 0x88b5;
/// EtherType no flow matches (a table miss).
pub const ETH_MISS: u16 = 0x88b6;
pub const BROADCAST: [u8; 6] = [0xff; 6];

// ---------------------------------------------------------------------------
// Environment

pub fn can_run() -> bool {
    assert!(is_root(), "needs root (network namespaces)");
    for t in ["ip", "ovs-ofctl"] {
        assert!(have(t), "`{t}` is not installed (scripts/install-deps installs it)");
    }
    true
}

/// A file removed on drop.
pub struct TempFile(PathBuf);

impl TempFile {
    pub fn config(text: &str) -> TempFile {
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

/// `sluice run` (a [`Proc`]: killed by its pid and reaped on drop, its
/// log in a file whose tail a failing test prints), with its metrics port.
pub struct Switch {
    proc: Proc,
    /// The `--metrics` port, if given.
    pub metrics: Option<u16>,
}

impl Switch {
    pub fn start(args: &[String]) -> Switch {
        // Tests run switches side by side: no shared control socket.
        let argv: Vec<&str> =
            std::iter::once("--no-control-socket").chain(args.iter().map(String::as_str)).collect();
        let proc = Proc::sluice_run(&argv);
        let metrics = args
            .iter()
            .position(|a| a == "--metrics")
            .and_then(|i| args.get(i + 1)?.rsplit(':').next()?.parse().ok());
        let mut sw = Switch { proc, metrics };
        if let Some(p) = metrics {
            sw.wait_port(p);
        }
        sw
    }

    /// Waits (bounded: 20 s) until 127.0.0.1:`port` accepts connections.
    pub fn wait_port(&mut self, port: u16) {
        self.proc.wait_listening_within(port, Duration::from_secs(20));
    }

    /// The conservation check on this switch's counters ([`Ledger::settled`]).
    pub fn ledger(&self, lab: &Lab, miss_flow: bool, what: &str) -> Ledger {
        Ledger::settled(lab, self.metrics.expect("the switch runs with --metrics"), miss_flow, what)
    }

    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    /// Waits (bounded) until `needle` occurs at least `count` times in the log.
    pub fn wait_log(&mut self, needle: &str, count: usize, timeout: Duration) {
        self.proc.wait_log_n(needle, count, timeout);
    }

    /// CPU time (user + system) the switch used so far, from
    /// /proc/PID/stat, in clock ticks (100 per second on Linux).
    pub fn cpu_ticks(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid()))
            .expect("reading /proc/PID/stat");
        // Fields after the command (which is in parentheses and may hold spaces).
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<&str> = rest.split_whitespace().collect();
        // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
        let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).expect("utime/stime");
        n(11) + n(12)
    }

    /// Resident set size in KiB, from /proc/PID/status.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("reading /proc/PID/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .expect("VmRSS in /proc/PID/status")
    }

    /// SIGTERM, then a bounded wait; whether it exited successfully, and its log.
    pub fn stop(self) -> (bool, String) {
        self.proc.stop()
    }

    /// [`Switch::stop`] giving the switch `limit` to exit (it prints how
    /// long the exit took).
    pub fn stop_within(self, limit: Duration) -> (bool, String) {
        self.proc.stop_within(limit)
    }
}

impl Watched for Switch {
    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.proc.try_wait()
    }

    fn log_text(&self) -> String {
        self.proc.log()
    }
}

/// `sluice run` arguments for `lab`'s ports.
pub fn switch_args(
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
    // Every switch of these tests serves its counters (the conservation check).
    a.push("--metrics".into());
    a.push(format!("127.0.0.1:{}", free_port()));
    for (i, n) in lab.sw_if.iter().enumerate() {
        a.push("--port".into());
        a.push(format!("afpacket:{n}={}", i + 1));
    }
    a
}

// ---------------------------------------------------------------------------
// Hosts and frames

pub fn mac(host: usize) -> [u8; 6] {
    [0x02, 0, 0, 0, 0x0a, host as u8 + 1]
}

/// Ethernet frame `dst`, `src`, `ethertype`, then the 4-byte big-endian
/// `seq` and padding to `len` (at least 60) bytes.
pub fn eth_frame(dst: [u8; 6], src: [u8; 6], ethertype: u16, seq: u32, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len.max(60));
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.resize(len.max(60), 0x5a);
    f
}

/// The sequence number of an [`eth_frame`] from `src` with `ethertype`.
pub fn frame_seq(f: &[u8], src: [u8; 6], ethertype: u16) -> Option<u32> {
    if f.get(6..12)? != src || f.get(12..14)? != ethertype.to_be_bytes() {
        return None;
    }
    Some(u32::from_be_bytes(f.get(14..18)?.try_into().ok()?))
}

/// Host namespaces h0..hN-1, each joined to the switch namespace by a veth
/// (switch end `sw_if[i]` = OpenFlow port i+1) and driven by a raw socket.
pub struct Lab {
    // Sockets first: dropped before the namespaces they live in.
    pub sock: Vec<Sock>,
    pub h: Vec<NetNs>,
    pub sw: NetNs,
    pub sw_if: Vec<String>,
    pub host_if: Vec<String>,
    /// Frames each host sent (successfully handed to its socket).
    pub sent: Vec<AtomicU64>,
    /// Frames each host received from the switch (any frame whose source
    /// is not the host itself), counted by every receive of the lab.
    pub seen: Vec<AtomicU64>,
    /// Link drops (veth counters, in and out) of interfaces deleted meanwhile.
    pub gone_link_drops: AtomicU64,
    pub gone_link_drops_out: AtomicU64,
    /// While set, [`Lab::under_traffic`]'s sender sends nothing
    /// ([`Lab::quiesce`], [`Lab::resume`]).
    hold: std::sync::atomic::AtomicBool,
}

/// A host's raw socket, replaceable while other threads use the lab (a
/// link re-created under traffic).
pub struct Sock(std::sync::RwLock<RawSocket>);

impl Sock {
    pub fn send(&self, frame: &[u8]) -> std::io::Result<()> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).send(frame)
    }

    pub fn recv(&self, buf: &mut [u8], timeout: Duration) -> std::io::Result<Option<usize>> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).recv(buf, timeout)
    }

    pub fn replace(&self, s: RawSocket) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = s;
    }
}

/// Turns IPv6 off in namespace `ns` (for interfaces created or moved in
/// after this): no neighbour or multicast listener frames, so the hosts
/// send exactly what a test sends.
fn quiet(ns: &NetNs) {
    for key in ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"] {
        ns.exec(&["sysctl", "-qw", key]).expect("sysctl (procps) turning IPv6 off");
    }
}

impl Lab {
    /// `n` hosts; namespaces and interfaces are named `fl...` (unique per
    /// process and lab).
    pub fn new(n: usize) -> Lab {
        let sw = NetNs::new("flsw").expect("switch namespace");
        quiet(&sw);
        let mut lab = Lab {
            sock: Vec::new(),
            h: Vec::new(),
            sw,
            sw_if: Vec::new(),
            host_if: Vec::new(),
            sent: (0..n).map(|_| AtomicU64::new(0)).collect(),
            seen: (0..n).map(|_| AtomicU64::new(0)).collect(),
            gone_link_drops: AtomicU64::new(0),
            gone_link_drops_out: AtomicU64::new(0),
            hold: std::sync::atomic::AtomicBool::new(false),
        };
        for i in 0..n {
            let h = NetNs::new("flh").expect("host namespace");
            quiet(&h);
            lab.h.push(h);
            lab.sw_if.push(unique_name("fls"));
            lab.host_if.push(unique_name("fle"));
            lab.link_down(i);
            let s = lab.open_socket(i);
            lab.sock.push(Sock(std::sync::RwLock::new(s)));
            lab.link_up(i);
        }
        lab
    }

    /// A counter of a veth end (`/sys/class/net/IF/statistics/NAME`); 0
    /// when the interface is gone.
    fn link_stat(ns: &NetNs, ifname: &str, name: &str) -> u64 {
        ns.exec(&["cat", &format!("/sys/class/net/{ifname}/statistics/{name}")])
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(0)
    }

    /// Frames the veths of host `i` dropped on the way into the switch
    /// (host end tx_dropped, switch end rx_dropped) and on the way out
    /// (switch end tx_dropped, host end rx_dropped).
    pub fn link_drops(&self, i: usize) -> (u64, u64) {
        let (h, sw) = (&self.h[i], &self.sw);
        let (hi, si) = (&self.host_if[i], &self.sw_if[i]);
        let inward = Self::link_stat(h, hi, "tx_dropped") + Self::link_stat(sw, si, "rx_dropped");
        let outward = Self::link_stat(sw, si, "tx_dropped") + Self::link_stat(h, hi, "rx_dropped");
        (inward, outward)
    }

    /// One frame at host `at` (counted in [`Lab::seen`] if the switch sent it).
    pub fn recv(&self, at: usize, buf: &mut [u8], timeout: Duration) -> Option<usize> {
        match self.sock[at].recv(buf, timeout) {
            Ok(Some(n)) => {
                if buf.get(6..12) != Some(&mac(at)[..]) {
                    self.seen[at].fetch_add(1, Relaxed);
                }
                Some(n)
            }
            Ok(None) => None,
            Err(e) => panic!("receive on host {at}: {e}"),
        }
    }

    /// Runs `f` while traffic flows: a sender thread sends, round-robin,
    /// one 100-byte frame of each `(from, dst, ethertype)` of `streams`
    /// (sequence numbers from `base`), `per_10ms` rounds every 10 ms, and
    /// a receiver thread reads every host (so no socket buffer overflows:
    /// every frame the switch sends is counted in [`Lab::seen`]). Both stop
    /// when `f` returns (bounded anyway: 2,000,000 rounds). Returns `f`'s
    /// value and the frames sent per stream.
    pub fn under_traffic<R>(
        &self,
        streams: &[(usize, [u8; 6], u16)],
        base: u32,
        per_10ms: u32,
        f: impl FnOnce() -> R,
    ) -> (R, Vec<u64>) {
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let sender = s.spawn(|| {
                let mut sent = vec![0u64; streams.len()];
                for round in 0..2_000_000u32 {
                    if stop.load(Relaxed) {
                        break;
                    }
                    if self.hold.load(Relaxed) {
                        std::thread::sleep(Duration::from_millis(1));
                        continue;
                    }
                    for (k, &(from, dst, ty)) in streams.iter().enumerate() {
                        let f = eth_frame(dst, mac(from), ty, base.wrapping_add(round), 100);
                        // A host whose link is being re-created cannot send: not counted.
                        if self.sock[from].send(&f).is_ok() {
                            self.sent[from].fetch_add(1, Relaxed);
                            sent[k] += 1;
                        }
                    }
                    if per_10ms > 0 && round % per_10ms == per_10ms - 1 {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
                sent
            });
            let receiver = s.spawn(|| {
                let mut buf = vec![0u8; 2048];
                for _ in 0..100_000_000u64 {
                    if stop.load(Relaxed) {
                        break;
                    }
                    for i in 0..self.sock.len() {
                        while self.recv(i, &mut buf, Duration::from_millis(1)).is_some() {}
                    }
                }
            });
            let r = f();
            stop.store(true, Relaxed);
            receiver.join().expect("receiver thread");
            (r, sender.join().expect("sender thread"))
        })
    }

    /// Stops [`Lab::under_traffic`]'s sender, then waits until host `i`
    /// has received nothing for 100 ms (bounded: 5 s), so no frame is on
    /// its way to it: what [`Lab::unlink`] needs under traffic (a frame
    /// queued for a veth end when it is deleted is freed by the kernel
    /// without a count). [`Lab::resume`] lets the sender go on.
    pub fn quiesce(&self, i: usize) {
        self.hold.store(true, Relaxed);
        let end = Instant::now() + Duration::from_secs(5);
        let mut last = (self.seen[i].load(Relaxed), Instant::now());
        while Instant::now() < end && last.1.elapsed() < Duration::from_millis(100) {
            std::thread::sleep(Duration::from_millis(5));
            let n = self.seen[i].load(Relaxed);
            if n != last.0 {
                last = (n, Instant::now());
            }
        }
    }

    pub fn resume(&self) {
        self.hold.store(false, Relaxed);
    }

    /// Drains every host until all were quiet for `quiet` (bounded: 20 s).
    pub fn settle(&self, quiet: Duration) {
        let mut buf = vec![0u8; 2048];
        let end = Instant::now() + Duration::from_secs(20);
        let mut last = Instant::now();
        while Instant::now() < end && last.elapsed() < quiet {
            for i in 0..self.sock.len() {
                while self.recv(i, &mut buf, Duration::from_millis(5)).is_some() {
                    last = Instant::now();
                    if Instant::now() > end {
                        break;
                    }
                }
            }
        }
    }

    /// Creates (or re-creates) the veth of host `i`, only inside the
    /// namespaces (nothing is created in the root namespace).
    /// The host end stays down until [`Lab::link_up`]: the host's socket
    /// is opened before any frame can arrive (frames sent to a down peer
    /// are counted as the switch end's tx_dropped).
    pub fn link_down(&self, i: usize) {
        let (sw_if, host_if) = (&self.sw_if[i], &self.host_if[i]);
        let h = &self.h[i];
        self.sw
            .exec(&["ip", "link", "add", sw_if, "type", "veth", "peer", "name", host_if])
            .expect("veth");
        self.sw.exec(&["ip", "link", "set", host_if, "netns", h.name()]).expect("veth to host");
        let m = mac(i).map(|b| format!("{b:02x}")).join(":");
        h.exec(&["ip", "link", "set", "dev", host_if, "address", &m]).expect("host mac");
        self.sw.exec(&["ip", "link", "set", sw_if, "up"]).expect("switch end up");
    }

    pub fn link_up(&self, i: usize) {
        self.h[i].exec(&["ip", "link", "set", &self.host_if[i], "up"]).expect("host end up");
    }

    /// Deletes host `i`'s veth (from the switch end), keeping its link
    /// drop counters in [`Lab::gone_link_drops`]. Frames in flight when it
    /// goes are lost uncounted by the veth: the caller sends none to or
    /// from host `i` meanwhile ([`Lab::quiesce`] under traffic).
    pub fn unlink(&self, i: usize) {
        let (inward, outward) = self.link_drops(i);
        self.gone_link_drops.fetch_add(inward, Relaxed);
        self.gone_link_drops_out.fetch_add(outward, Relaxed);
        self.sw.exec(&["ip", "link", "del", &self.sw_if[i]]).expect("deleting the veth");
    }

    /// Re-creates host `i`'s veth (same names) and its socket.
    pub fn relink(&self, i: usize) {
        self.link_down(i);
        self.sock[i].replace(self.open_socket(i));
        self.link_up(i);
    }

    pub fn open_socket(&self, i: usize) -> RawSocket {
        let name = self.host_if[i].clone();
        self.h[i].enter(move || RawSocket::open(&name)).expect("raw socket on the host end")
    }

    /// Sends `seqs` from host `from` to `dst`, pausing 10 ms after every
    /// `per_10ms` frames (a rate cap; 0 = no pause).
    pub fn send(
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
            self.sent[from].fetch_add(1, Relaxed);
            if per_10ms > 0 && s % per_10ms == per_10ms - 1 {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// Sequence numbers of the frames from host `src` with `ethertype` that
    /// host `at` receives, until `want` of them arrived, `quiet` passed
    /// without any such frame, or 15 s passed.
    pub fn collect(
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
            if let Some(n) = self.recv(at, &mut buf, Duration::from_millis(20)) {
                if let Some(s) = frame_seq(buf.get(..n).unwrap_or(&buf), mac(src), ethertype) {
                    got.insert(s);
                    last = Instant::now();
                }
            }
        }
        got
    }

    /// Discards whatever host `at` has queued.
    pub fn drain(&self, at: usize) {
        let mut buf = vec![0u8; 2048];
        for _ in 0..100_000 {
            if self.recv(at, &mut buf, Duration::from_millis(5)).is_none() {
                break;
            }
        }
    }

    /// Host `from` sends `n` ETH_OK frames (numbered from `base`) to host
    /// `to`; at least `min` must arrive (an assertion on counts, not time).
    pub fn assert_forwards(&self, from: usize, to: usize, base: u32, n: u32, min: usize) {
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
    pub fn assert_misses_dropped(&self, from: usize, to: usize, base: u32) {
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

/// `ovs-ofctl -O OpenFlow13 dump-flows`, each flow without its counters and
/// age (which change with traffic and time), sorted.
pub fn dump_flows(port: u16) -> Vec<String> {
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

pub const DPID: u64 = 0xfa17;

// ---------------------------------------------------------------------------
// Conservation

/// `GET /metrics` from `sluice run --metrics 127.0.0.1:PORT`: every sample
/// as (name, labels text, value).
pub fn scrape(port: u16) -> Vec<(String, String, f64)> {
    use std::io::{Read, Write};
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the metrics endpoint");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("metrics request");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("metrics answer");
    let (head, body) = raw.split_once("\r\n\r\n").expect("metrics: a head and a body");
    assert!(head.starts_with("HTTP/1.1 200"), "metrics: {head}");
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (key, value) = l.rsplit_once(' ').unwrap_or_else(|| panic!("sample line {l:?}"));
            let (name, labels) = match key.split_once('{') {
                Some((n, rest)) => (n, rest.trim_end_matches('}')),
                None => (key, ""),
            };
            let v = value.parse().unwrap_or_else(|_| panic!("sample value in {l:?}"));
            (name.to_string(), labels.to_string(), v)
        })
        .collect()
}

/// The sum of the samples named `name` whose labels contain `label`.
fn sum(samples: &[(String, String, f64)], name: &str, label: &str) -> u64 {
    samples.iter().filter(|(n, l, _)| n == name && l.contains(label)).map(|s| s.2 as u64).sum()
}

/// Every frame of a test, from the hosts' sockets through sluice's counters
/// back to the hosts' sockets. Read with [`Ledger::settled`]; the setups it
/// is for use flow table 0 only, flows with one output port (or the
/// controller), and one connection that takes PACKET_INs.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    /// Frames the hosts sent.
    pub host_sent: u64,
    /// Dropped by the veths on the way in (host tx, switch rx).
    pub link_in_dropped: u64,
    /// Lost in the AF_PACKET receive rings before sluice read them.
    pub ring_dropped: u64,
    /// Discarded on receive as malformed.
    pub rx_errors: u64,
    /// Dropped on receive by the pipeline (port down or NO_RECV).
    pub rx_dropped: u64,
    /// Received by the pipeline (OpenFlow port rx).
    pub rx: u64,
    /// Lookups and matches in table 0.
    pub lookups: u64,
    pub matches: u64,
    /// Received by MAC learning (fail standalone), and dropped by it.
    pub learned: u64,
    pub learn_dropped: u64,
    /// Sent by the pipeline (OpenFlow port tx), and not sent because the
    /// output port was down or missing.
    pub tx: u64,
    pub tx_port_dropped: u64,
    /// Output to a port the switch does not have (removed).
    pub tx_no_port: u64,
    /// Frames sent that no port took (ring full, port gone).
    pub tx_lost: u64,
    /// Dropped by the veths on the way out (switch tx, host rx).
    pub link_out_dropped: u64,
    /// Frames the hosts received from the switch.
    pub host_seen: u64,
    /// PACKET_INs: sent, refused by the rate limit, by a full queue,
    /// unsent (no connection), dropped from the full upcall queue, and
    /// still waiting in it.
    /// Frames sent to the controller (one each, however many
    /// connections took the PACKET_IN).
    pub pin_frames: u64,
    pub pin_sent: u64,
    pub pin_rate: u64,
    pub pin_queue: u64,
    pub pin_unsent: u64,
    pub upcall_dropped: u64,
    pub upcall_depth: u64,
}

impl Ledger {
    pub fn read(lab: &Lab, metrics: u16) -> Ledger {
        let m = scrape(metrics);
        let mut link_in = lab.gone_link_drops.load(Relaxed);
        let mut link_out = lab.gone_link_drops_out.load(Relaxed);
        for i in 0..lab.h.len() {
            let (a, b) = lab.link_drops(i);
            link_in += a;
            link_out += b;
        }
        Ledger {
            host_sent: lab.sent.iter().map(|c| c.load(Relaxed)).sum(),
            link_in_dropped: link_in,
            ring_dropped: sum(&m, "sluice_port_kernel_rx_dropped_total", ""),
            rx_errors: sum(&m, "sluice_port_rx_errors_total", ""),
            rx_dropped: sum(&m, "sluice_port_rx_dropped_total", ""),
            rx: sum(&m, "sluice_port_rx_packets_total", ""),
            lookups: sum(&m, "sluice_table_lookups_total", "table=\"0\""),
            matches: sum(&m, "sluice_table_matches_total", "table=\"0\""),
            learned: sum(&m, "sluice_standalone_packets_total", ""),
            learn_dropped: sum(&m, "sluice_standalone_dropped_total", ""),
            tx: sum(&m, "sluice_port_tx_packets_total", ""),
            tx_port_dropped: sum(&m, "sluice_port_tx_dropped_total", ""),
            tx_lost: sum(&m, "sluice_tx_dropped_total", ""),
            tx_no_port: sum(&m, "sluice_tx_no_port_total", ""),
            link_out_dropped: link_out,
            host_seen: lab.seen.iter().map(|c| c.load(Relaxed)).sum(),
            pin_frames: sum(&m, "sluice_packet_in_frames_total", ""),
            pin_sent: sum(&m, "sluice_packet_in_sent_total", ""),
            pin_rate: sum(&m, "sluice_packet_in_dropped_rate_total", ""),
            pin_queue: sum(&m, "sluice_packet_in_dropped_queue_total", ""),
            pin_unsent: sum(&m, "sluice_packet_in_unsent_total", ""),
            upcall_dropped: sum(&m, "sluice_upcall_dropped_total", ""),
            upcall_depth: sum(&m, "sluice_upcall_queue_depth", ""),
        }
    }

    /// Frames the tables sent to the controller: PACKET_INs the agent
    /// took (one per frame), dropped at the full upcall queue, or still in
    /// it.
    pub fn to_controller(&self) -> u64 {
        self.pin_frames + self.upcall_dropped + self.upcall_depth
    }

    /// The equations that do not hold (empty: every frame is accounted
    /// for). `miss_flow`: table 0 has a table-miss flow (its hits are
    /// matches), else table misses are dropped.
    pub fn violations(&self, miss_flow: bool) -> Vec<String> {
        let mut v = Vec::new();
        let mut short = None;
        let mut eq = |what: &str, l: u64, r: u64| {
            if l != r {
                v.push(format!("{what}: {l} != {r}"));
            }
        };
        eq(
            "sent = link drops in + ring drops + rx errors + rx dropped + rx",
            self.host_sent,
            self.link_in_dropped + self.ring_dropped + self.rx_errors + self.rx_dropped + self.rx,
        );
        eq("rx = table 0 lookups + MAC learning", self.rx, self.lookups + self.learned);
        let miss_dropped = self.lookups.saturating_sub(self.matches);
        if miss_flow {
            eq("table-miss flow: lookups = matches", self.lookups, self.matches);
        }
        if self.learned == 0 {
            // Every flow outputs to one port or to the controller.
            eq(
                "lookups = tx + tx dropped (port down, no port) + to controller + misses dropped",
                self.lookups,
                self.tx
                    + self.tx_port_dropped
                    + self.tx_no_port
                    + self.to_controller()
                    + miss_dropped,
            );
        }
        // Each PACKET_IN the agent took went to at least one connection
        // (sent, or dropped there by rate or queue) or to none (unsent);
        // one going to two connections counts on both.
        let outcomes = self.pin_sent + self.pin_rate + self.pin_queue + self.pin_unsent;
        if outcomes < self.pin_frames {
            short = Some(format!(
                "PACKET_INs taken <= sent + dropped by rate or queue + unsent: {} > {outcomes}",
                self.pin_frames
            ));
        }
        eq(
            "host received = tx - tx lost - link drops out",
            self.host_seen,
            self.tx.saturating_sub(self.tx_lost + self.link_out_dropped),
        );
        v.extend(short);
        v
    }

    /// Waits (bounded: 15 s) until the hosts are quiet and every frame is
    /// accounted for; fails with the ledger otherwise. Returns it.
    pub fn settled(lab: &Lab, metrics: u16, miss_flow: bool, what: &str) -> Ledger {
        let end = Instant::now() + Duration::from_secs(15);
        loop {
            lab.settle(Duration::from_millis(300));
            let l = Ledger::read(lab, metrics);
            let bad = l.violations(miss_flow);
            if bad.is_empty() {
                eprintln!("{what}: conservation holds: {l:?}");
                return l;
            }
            assert!(
                Instant::now() < end,
                "{what}: frames unaccounted for:\n{}\n{l:#?}",
                bad.join("\n")
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
