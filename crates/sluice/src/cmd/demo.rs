//! `sluice demo`: a switch between a few hosts, with real traffic.
//!
//! What it does (as root; nothing outside the namespaces it creates is
//! touched):
//! 1. creates one network namespace for the switch and one per host, joined
//!    by veth pairs (host end `10.0.0.i/24`, MAC `02:00:00:00:00:0i`; switch
//!    end in the switch namespace). Names carry the process id;
//! 2. starts the datapath in-process with the switch ends as AF_PACKET
//!    ports 1..N, and either an **L2-learning pipeline** (default: a
//!    table-miss flow sends unknown traffic to a small in-process learning
//!    controller, which installs `dl_dst=MAC → output:PORT` flows and sends
//!    the packet on with PACKET_OUT) or, with `--standalone`, the fail-mode
//!    MAC-learning switch;
//! 3. sends traffic: ARP + ping from host 1 to every other host
//!    (`ip netns exec … ping`, iputils), then a UDP stream from every host
//!    to the next for `--seconds` (a built-in sender/receiver);
//! 4. shows per-port counters and the flow table, refreshed in place while
//!    traffic runs (snapshots when stdout is not a terminal), and a summary;
//! 5. removes everything it created on exit — also on Ctrl-C (the signal
//!    only sets a flag; every wait checks it) and on errors or panics (Drop
//!    guards) — and checks that no namespace was left behind.
//!
//! The exit status is non-zero if forwarding did not work (no ping reply,
//! or less than half of a UDP stream delivered), so the demo doubles as a
//! smoke test.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use sluice_datapath::agent::FailMode;
use sluice_datapath::config::{DatapathConfig, PortConfig};
use sluice_datapath::ports::testutil::{is_root, NetNs, Veth};
use sluice_datapath::ports::PortSpec;
use sluice_datapath::{Datapath, DatapathSwitch};
use sluice_ofp::action::Action;
use sluice_ofp::consts::{port_no, OFP_NO_BUFFER};
use sluice_ofp::message::{flow_mod_command, Message, PacketOut};
use sluice_ofp::ofctl::{parse_flow, Usage};
use sluice_ofp::oxm::{FieldId, Oxm};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Number of hosts (2..=8).
    #[arg(long, default_value_t = 3)]
    pub hosts: usize,
    /// Seconds of UDP traffic (1..=60).
    #[arg(long, default_value_t = 3)]
    pub seconds: u64,
    /// Forward with the fail-standalone MAC-learning switch instead of an
    /// OpenFlow L2-learning pipeline.
    #[arg(long)]
    pub standalone: bool,
}

const UDP_PORT: u16 = 5001;
const UDP_LEN: usize = 512;

/// One host: its namespace and its link to the switch. Field order is drop
/// order (the veth before the namespace).
struct Host {
    idx: usize,
    veth: Veth,
    ns: NetNs,
}

impl Host {
    fn ip(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, 0, 0, self.idx as u8)
    }
    fn mac(&self) -> String {
        format!("02:00:00:00:00:{:02x}", self.idx)
    }
}

/// Everything created in the kernel; removed on drop (hosts first).
struct Topology {
    hosts: Vec<Host>,
    sw: NetNs,
}

impl Topology {
    fn build(n: usize) -> anyhow::Result<Topology> {
        let sw = NetNs::new("sw").context("creating the switch namespace")?;
        let mut t = Topology { hosts: Vec::new(), sw };
        for idx in 1..=n {
            let ns = NetNs::new("h").with_context(|| format!("creating host {idx}'s namespace"))?;
            let veth =
                Veth::new(&ns, &t.sw).with_context(|| format!("creating host {idx}'s link"))?;
            let h = Host { idx, veth, ns };
            h.ns.exec(&["ip", "link", "set", "dev", &h.veth.a, "address", &h.mac()])?;
            h.ns.exec(&["ip", "addr", "add", &format!("{}/24", h.ip()), "dev", &h.veth.a])?;
            t.hosts.push(h);
        }
        Ok(t)
    }

    fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.hosts.iter().map(|h| h.ns.name().to_string()).collect();
        v.push(self.sw.name().to_string());
        v
    }
}

/// A tiny OpenFlow L2-learning controller driven in-process, over a
/// two-table pipeline:
/// - table 0 knows the sources: `in_port=P,dl_src=M → goto_table:1`; a miss
///   (a new source, or a host that moved) goes to the controller;
/// - table 1 forwards: `dl_dst=M → output:P`; a miss (unknown or broadcast
///   destination) floods.
///
/// On a PACKET_IN the controller installs both flows for the source and
/// sends the packet back through the pipeline (PACKET_OUT to TABLE), so the
/// datapath, not the controller, forwards and floods.
struct Learner {
    sw: DatapathSwitch,
    learned: HashMap<[u8; 6], u32>,
    packet_ins: u64,
    xid: u32,
}

impl Learner {
    fn apply(&mut self, msg: &Message) -> anyhow::Result<()> {
        self.xid = self.xid.wrapping_add(1);
        for r in self.sw.apply(self.xid, msg) {
            if let Message::Error(e) = &r.msg {
                bail!("the switch refused a message: {e:?}");
            }
        }
        Ok(())
    }

    fn flow(&mut self, text: &str) -> anyhow::Result<()> {
        let spec = parse_flow(text, Usage::Add).map_err(|e| anyhow::anyhow!(e.render(text)))?;
        self.apply(&Message::FlowMod(spec.to_flow_mod(flow_mod_command::ADD)))
    }

    fn install_pipeline(&mut self) -> anyhow::Result<()> {
        self.flow("table=0,priority=0,actions=controller:65535")?;
        self.flow("table=1,priority=0,actions=FLOOD")
    }

    fn step(&mut self) -> anyhow::Result<()> {
        use sluice_datapath::agent::Switch;
        for m in self.sw.take_async() {
            let Message::PacketIn(pi) = m else { continue };
            self.packet_ins += 1;
            let in_port = pi.r#match.oxms.iter().find_map(|o| match o {
                Oxm::Basic { field: FieldId::InPort, value, .. } => Some(value.to_u128() as u32),
                _ => None,
            });
            let (Some(in_port), Some(src)) = (in_port, pi.data.get(6..12)) else { continue };
            let mut s = [0u8; 6];
            s.copy_from_slice(src);
            if s[0] & 1 == 0 && self.learned.get(&s) != Some(&in_port) {
                self.learned.insert(s, in_port);
                let mac = s.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":");
                self.flow(&format!(
                    "table=0,priority=10,idle_timeout=120,in_port={in_port},dl_src={mac},actions=goto_table:1"
                ))?;
                self.flow(&format!(
                    "table=1,priority=10,idle_timeout=120,dl_dst={mac},actions=output:{in_port}"
                ))?;
            }
            let data = if pi.buffer_id == OFP_NO_BUFFER { pi.data } else { Vec::new() };
            // Back through the pipeline: it now knows the source.
            self.apply(&Message::PacketOut(PacketOut {
                buffer_id: pi.buffer_id,
                in_port,
                actions: vec![Action::Output { port: port_no::TABLE, max_len: 0 }],
                data,
            }))?;
        }
        Ok(())
    }
}

/// Redraws a block of lines in place on a terminal.
struct Screen {
    tty: bool,
    lines: usize,
}

impl Screen {
    /// A refresh while traffic runs: drawn in place on a terminal, skipped
    /// otherwise (a log would fill with near-identical tables).
    fn live(&mut self, text: &str) {
        if self.tty {
            self.show(text);
        }
    }

    fn show(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        if self.tty && self.lines > 0 {
            let _ = write!(out, "\x1b[{}A\x1b[J", self.lines);
        }
        let _ = write!(out, "{text}");
        let _ = out.flush();
        self.lines = text.lines().count();
    }

    /// Keep what is on screen; the next `show` starts below it.
    fn keep(&mut self) {
        self.lines = 0;
    }
}

fn human(n: u64) -> String {
    match n {
        n if n >= 10_000_000_000 => format!("{}G", n / 1_000_000_000),
        n if n >= 10_000_000 => format!("{}M", n / 1_000_000),
        n if n >= 10_000 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

fn render(
    dp: &Datapath,
    topo: &Topology,
    title: &str,
    prev: &mut HashMap<u32, (u64, Instant)>,
) -> String {
    let mut s = format!("── {title} ──\n");
    s.push_str(" port  host  link  rx_pkts  rx_bytes  tx_pkts  tx_bytes   rx/s\n");
    for p in dp.ports() {
        let host =
            topo.hosts.iter().find(|h| h.idx as u32 == p.port_no).map(|h| format!("h{}", h.idx));
        let now = Instant::now();
        let rate = match prev.insert(p.port_no, (p.counters.rx_packets, now)) {
            Some((n0, t0)) if now > t0 => {
                (p.counters.rx_packets.saturating_sub(n0)) as f64 / (now - t0).as_secs_f64()
            }
            _ => 0.0,
        };
        s.push_str(&format!(
            " {:>4}  {:>4}  {:>4}  {:>7}  {:>8}  {:>7}  {:>8}  {:>6.0}\n",
            p.port_no,
            host.unwrap_or_default(),
            if p.live { "up" } else { "down" },
            human(p.counters.rx_packets),
            human(p.counters.rx_bytes),
            human(p.counters.tx_packets),
            human(p.counters.tx_bytes),
            rate
        ));
    }
    let st = dp.stats();
    if st.standalone {
        s.push_str(" forwarding: fail-standalone MAC learning (flow tables bypassed)\n");
    }
    dp.with_master(|p| {
        for (t, table) in p.tables().iter().enumerate().filter(|(_, t)| !t.is_empty()) {
            s.push_str(&format!(" table {t}: {} flows\n", table.len()));
            for e in table.entries() {
                s.push_str(&format!(
                    "   n_packets={:<6} {} actions={}\n",
                    e.packet_count(),
                    sluice_ofp::print::fields::match_with_priority(e.priority, &e.r#match),
                    sluice_ofp::print::actions::instructions(&e.instructions)
                ));
            }
        }
    });
    s
}

/// Sleeps up to `d` in small steps; false if interrupted.
fn nap(stop: &AtomicBool, d: Duration) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(
            Duration::from_millis(20).min(end.saturating_duration_since(Instant::now())),
        );
    }
    !stop.load(Ordering::Relaxed)
}

struct PingResult {
    to: usize,
    sent: u32,
    received: u32,
    avg_ms: Option<f64>,
}

fn parse_ping(to: usize, out: &str) -> PingResult {
    let mut r = PingResult { to, sent: 0, received: 0, avg_ms: None };
    for line in out.lines() {
        if line.contains("packets transmitted") {
            let nums: Vec<u32> =
                line.split(|c: char| !c.is_ascii_digit()).filter_map(|t| t.parse().ok()).collect();
            r.sent = nums.first().copied().unwrap_or(0);
            r.received = nums.get(1).copied().unwrap_or(0);
        }
        if let Some(rest) = line.strip_prefix("rtt min/avg/max/mdev = ") {
            r.avg_ms = rest.split('/').nth(1).and_then(|v| v.parse().ok());
        }
    }
    r
}

/// Kills (by pid) and reaps children still running.
struct Children(Vec<(usize, Child)>);

impl Drop for Children {
    fn drop(&mut self) {
        for (_, c) in &mut self.0 {
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

struct UdpFlow {
    from: usize,
    to: usize,
    sent: Arc<AtomicU64>,
    received: Arc<AtomicU64>,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    if !(2..=8).contains(&a.hosts) {
        bail!("--hosts must be 2..=8");
    }
    if !(1..=60).contains(&a.seconds) {
        bail!("--seconds must be 1..=60");
    }
    if !is_root() {
        bail!("sluice demo creates network namespaces and needs root: run it with sudo (or scripts/demo)");
    }
    sluice_datapath::daemon::init_logging_with("warn");
    let stop = sluice_datapath::daemon::stop_on_signals().context("installing signal handlers")?;
    let result = demo(&a, &stop);
    // Everything was dropped inside `demo`: check nothing is left.
    if let Ok(names) = &result {
        let listed = Command::new("ip").args(["netns", "list"]).output();
        let left: Vec<&String> = match &listed {
            Ok(o) => {
                let text = String::from_utf8_lossy(&o.stdout);
                names
                    .iter()
                    .filter(|n| {
                        text.lines().any(|l| l.split_whitespace().next() == Some(n.as_str()))
                    })
                    .collect()
            }
            Err(_) => Vec::new(),
        };
        if left.is_empty() {
            println!(
                "cleanup: removed {} namespaces and their veth pairs; nothing left behind",
                names.len()
            );
        } else {
            bail!("cleanup: namespaces left behind: {left:?}");
        }
    }
    if stop.load(Ordering::Relaxed) && result.is_ok() {
        bail!("interrupted (everything created was removed)");
    }
    result.map(drop)
}

/// The demo proper; returns the namespace names it created (all removed by
/// the time it returns, whatever happened).
fn demo(a: &Args, stop: &Arc<AtomicBool>) -> anyhow::Result<Vec<String>> {
    let tty = std::io::stdout().is_terminal();
    println!(
        "sluice demo: {} hosts on 10.0.0.0/24, one switch, pid {}",
        a.hosts,
        std::process::id()
    );
    let topo = Topology::build(a.hosts)?;
    let names = topo.names();
    println!(
        "  namespaces: switch {}, hosts {}",
        topo.sw.name(),
        topo.hosts.iter().map(|h| h.ns.name()).collect::<Vec<_>>().join(" ")
    );
    let ports: Vec<PortConfig> = topo
        .hosts
        .iter()
        .map(|h| {
            Ok(PortConfig {
                spec: PortSpec::parse(&format!("afpacket:{}", h.veth.b))?,
                port_no: h.idx as u32,
                reopen: false,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    let cfg = DatapathConfig {
        ports,
        netns: Some(topo.sw.name().to_string()),
        fail_mode: if a.standalone { FailMode::Standalone } else { FailMode::Secure },
        workers: 2,
        ..Default::default()
    };
    // Declared after `topo`: dropped (threads stopped, sockets closed) first.
    let dp = Datapath::start(cfg).context("starting the datapath")?;
    let learner_stop = Arc::new(AtomicBool::new(false));
    let learner = if a.standalone {
        println!("  forwarding: fail-standalone MAC learning (no flows)");
        None
    } else {
        let mut l = Learner { sw: dp.switch(), learned: HashMap::new(), packet_ins: 0, xid: 0 };
        l.install_pipeline()?;
        println!(
            "  pipeline: table 0 = known sources (miss → learning controller), table 1 = destinations (miss → FLOOD)"
        );
        let s = learner_stop.clone();
        Some(std::thread::spawn(move || -> anyhow::Result<Learner> {
            while !s.load(Ordering::Relaxed) {
                l.step()?;
                std::thread::sleep(Duration::from_millis(2));
            }
            l.step()?;
            Ok(l)
        }))
    };
    let outcome = traffic(a, stop, &dp, &topo, tty);
    learner_stop.store(true, Ordering::Relaxed);
    let learned = match learner.map(|h| h.join()) {
        Some(Ok(Ok(l))) => Some((l.learned.len(), l.packet_ins)),
        Some(Ok(Err(e))) => return Err(e.context("learning controller")),
        Some(Err(_)) => bail!("learning controller panicked"),
        None => None,
    };
    let st = dp.stats();
    drop(dp);
    drop(topo);
    let (pings, flows) = outcome?;
    if stop.load(Ordering::Relaxed) {
        return Ok(names);
    }
    println!("── summary ──");
    let mut failures = Vec::new();
    for p in &pings {
        println!(
            "  ping  h1 -> h{} (10.0.0.{}): {}/{} replies{}",
            p.to,
            p.to,
            p.received,
            p.sent,
            p.avg_ms.map(|v| format!(", avg {v:.2} ms")).unwrap_or_default()
        );
        if p.received == 0 {
            failures.push(format!("no ping reply from h{}", p.to));
        }
    }
    for f in &flows {
        let (s, r) = (f.sent.load(Ordering::Relaxed), f.received.load(Ordering::Relaxed));
        let pct = if s > 0 { r as f64 * 100.0 / s as f64 } else { 0.0 };
        println!("  udp   h{} -> h{}: {s} datagrams sent, {r} received ({pct:.1} %)", f.from, f.to);
        if s == 0 || r * 2 < s {
            failures.push(format!("udp h{} -> h{} delivered {r} of {s}", f.from, f.to));
        }
    }
    let per_burst = if st.bursts > 0 { st.packets as f64 / st.bursts as f64 } else { 0.0 };
    println!(
        "  switch: {} frames in {} bursts ({per_burst:.1} per burst), {} dropped on transmit",
        st.packets, st.bursts, st.tx_dropped
    );
    if let Some((flows, pins)) = learned {
        println!("  learning controller: {pins} packet-ins, {flows} addresses learned");
    }
    if !failures.is_empty() {
        bail!("forwarding failed: {}", failures.join("; "));
    }
    Ok(names)
}

type Outcome = (Vec<PingResult>, Vec<UdpFlow>);

fn traffic(
    a: &Args,
    stop: &Arc<AtomicBool>,
    dp: &Datapath,
    topo: &Topology,
    tty: bool,
) -> anyhow::Result<Outcome> {
    let mut screen = Screen { tty, lines: 0 };
    let mut prev = HashMap::new();
    let have_ping =
        Command::new("ping").arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();

    // Phase 1: ARP + ping from h1 to every other host.
    let mut pings = Vec::new();
    if have_ping {
        let h1 = &topo.hosts[0];
        let mut children = Children(Vec::new());
        for h in &topo.hosts[1..] {
            let c = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    h1.ns.name(),
                    "ping",
                    "-n",
                    "-c",
                    "4",
                    "-i",
                    "0.2",
                    "-W",
                    "2",
                ])
                .arg(h.ip().to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .context("running ping")?;
            children.0.push((h.idx, c));
        }
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            screen.live(&render(dp, topo, "ARP + ping from h1", &mut prev));
            let running = children.0.iter_mut().any(|(_, c)| matches!(c.try_wait(), Ok(None)));
            if !running || Instant::now() > deadline || !nap(stop, Duration::from_millis(250)) {
                break;
            }
        }
        if stop.load(Ordering::Relaxed) {
            return Ok((pings, Vec::new()));
        }
        for (idx, c) in std::mem::take(&mut children.0) {
            let mut c = c;
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
            }
            let out = c.wait_with_output().context("collecting ping output")?;
            pings.push(parse_ping(idx, &String::from_utf8_lossy(&out.stdout)));
        }
        screen.show(&render(dp, topo, "ARP + ping from h1: done", &mut prev));
        screen.keep();
    } else {
        println!("  (ping not installed — apt-get install iputils-ping — skipping the ping phase)");
    }

    // Phase 2: UDP from every host to the next.
    let n = topo.hosts.len();
    let done = Arc::new(AtomicBool::new(false));
    let mut flows = Vec::new();
    let mut threads = Vec::new();
    for (i, from) in topo.hosts.iter().enumerate() {
        let to = &topo.hosts[(i + 1) % n];
        let rx = to.ns.enter(|| UdpSocket::bind(SocketAddrV4::new(to.ip(), UDP_PORT)))?;
        rx.set_read_timeout(Some(Duration::from_millis(50)))?;
        let tx = from.ns.enter(|| UdpSocket::bind(SocketAddrV4::new(from.ip(), 0)))?;
        tx.connect(SocketAddrV4::new(to.ip(), UDP_PORT))?;
        let f = UdpFlow {
            from: from.idx,
            to: to.idx,
            sent: Arc::new(AtomicU64::new(0)),
            received: Arc::new(AtomicU64::new(0)),
        };
        let (received, d) = (f.received.clone(), done.clone());
        threads.push(std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while !d.load(Ordering::Relaxed) {
                if let Ok(len) = rx.recv(&mut buf) {
                    if len == UDP_LEN {
                        received.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
        let (sent, d, st, secs) = (f.sent.clone(), done.clone(), stop.clone(), a.seconds);
        threads.push(std::thread::spawn(move || {
            let end = Instant::now() + Duration::from_secs(secs);
            let mut seq = 0u64;
            let mut payload = [0x5au8; UDP_LEN];
            while Instant::now() < end && !st.load(Ordering::Relaxed) && !d.load(Ordering::Relaxed)
            {
                for _ in 0..8 {
                    payload[..8].copy_from_slice(&seq.to_be_bytes());
                    if tx.send(&payload).is_ok() {
                        sent.fetch_add(1, Ordering::Relaxed);
                    }
                    seq += 1;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }));
        flows.push(f);
    }
    let title = format!("UDP stream, every host to the next, {} s", a.seconds);
    let end = Instant::now() + Duration::from_secs(a.seconds) + Duration::from_millis(500);
    while Instant::now() < end {
        screen.live(&render(dp, topo, &title, &mut prev));
        if !nap(stop, Duration::from_millis(250)) {
            break;
        }
    }
    done.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    screen.show(&render(dp, topo, "final counters and flow table", &mut prev));
    screen.keep();
    Ok((pings, flows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ping_output_parsed() {
        let out = "PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data.\n\
                   64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.301 ms\n\n\
                   --- 10.0.0.2 ping statistics ---\n\
                   4 packets transmitted, 3 received, 25% packet loss, time 603ms\n\
                   rtt min/avg/max/mdev = 0.101/0.234/0.301/0.080 ms\n";
        let r = parse_ping(2, out);
        assert_eq!((r.sent, r.received), (4, 3));
        assert_eq!(r.avg_ms, Some(0.234));
        let r = parse_ping(2, "");
        assert_eq!((r.sent, r.received, r.avg_ms), (0, 0, None));
    }

    #[test]
    fn human_numbers() {
        assert_eq!(human(9_999), "9999");
        assert_eq!(human(12_345), "12k");
        assert_eq!(human(12_345_678), "12M");
    }
}
