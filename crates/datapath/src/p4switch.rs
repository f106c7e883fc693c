//! `sluice p4 run`: a P4 program on real ports, managed over the OpenFlow
//! channel with `sluice p4 ctl`.
//!
//! The engine (`sluice_p4::engines::Engine`) is the program compiled into
//! the core (`sluice_p4::lower::engine`: the core's walk with its caches)
//! when the lowering takes it, else the P4 reference interpreter
//! (`sluice_p4::interp`, bmv2 simple_switch semantics: correct, not
//! fast); `sluice p4 run` logs which and why. One forwarding
//! thread owns the ports (opened in `netns` if given): it waits in
//! `poll(2)` on the ports that have a descriptor (1 ms rounds when a
//! pcap port has none), takes bursts of up to 32 frames per port, runs
//! each burst through the program (`Target::burst_into`, the port number
//! as `ingress_port`; the compiled engine probes its caches for the whole
//! burst first), and sends what comes out on the ports the program chose
//! (an output to a port the switch does not have is counted and
//! dropped). Transport checksums a local stack left to the device are
//! completed first, as the OpenFlow workers do (`csum.rs`).
//!
//! The agent answers each `P4_CTL_REQUEST` (`sluice_ofp::p4ctl`) with the
//! result of the command line (`sluice_p4::ctl`'s vocabulary, plus
//! `digests`: the digests queued since the last call, one per line,
//! oldest first; at most `sluice_p4::interp::MAX_DIGESTS` wait, later
//! ones are dropped and the count is reported as a `#` line),
//! FEATURES_REQUEST and BARRIER_REQUEST as any switch does, and
//! everything else with `OFPBRC_BAD_TYPE` (an experimenter
//! message of another kind: `OFPBRC_BAD_EXPERIMENTER` or
//! `OFPBRC_BAD_EXP_TYPE`). Commands and packets take turns on one lock:
//! a command sees the tables between two packets, never during one.
//!
//! With `p4runtime` set, a P4Runtime server (`sluice_p4rt`) runs on its
//! own tokio runtime (thread `sluice-p4rt`) over the same engine lock:
//! a pipeline it loads replaces the engine the forwarding thread runs
//! between two packets. At the start of each round the forwarding
//! thread injects the queued packet-outs at the CPU port (so a
//! packet-out waits at most one poll round, 50 ms); what the program
//! sends to the CPU port goes to every role's primary controller as a
//! packet-in instead of to a port. `sluice p4 ctl` commands run through
//! the server's device (`Device::with_engine`), so its entry index
//! follows what they do to the tables: P4Runtime reads, deletes and
//! watches the entries a command added. At the end of each round it hands the digests
//! the program queued to the server (`Device::hand_over_digests`), whose
//! digest task sends them as `DigestList`s; `sluice p4 ctl digests` then
//! sees none (the server took them).

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use sluice_agent::{Agent, AgentConfig, Switch};
use sluice_ofp::consts::SLUICE_EXPERIMENTER_ID;
use sluice_ofp::error::ErrorCode;
use sluice_ofp::message::{error_reply, FeaturesReply, Message, Outgoing};
use sluice_ofp::p4ctl::{self, CtlReply};
use sluice_p4::engines::Engine;
use sluice_p4::interp::Digest;
use sluice_p4::target::Target as _;
use sluice_p4::value::Value;
use sluice_ports::{Port, PortSpec, RxBuf};
use tracing::{info, warn};

use crate::sys::{self, PollEntry};

/// Frames taken from one port per round.
const BURST: usize = 32;

/// What `sluice p4 run` was asked to run.
pub struct P4RunConfig {
    /// `(port number, spec)`: the number is the program's
    /// `ingress_port`/`egress_spec` for that port.
    pub ports: Vec<(u32, PortSpec)>,
    /// Open the ports in this network namespace.
    pub netns: Option<String>,
    /// Listeners and controllers for `sluice p4 ctl`.
    pub agent: AgentConfig,
    pub datapath_id: u64,
    /// Why the program runs on the reference interpreter (none: it is
    /// compiled into the core); logged at start.
    pub fallback: Option<String>,
    /// Serve P4Runtime too.
    pub p4runtime: Option<P4RuntimeRun>,
}

/// `--p4runtime`: where to listen, the device, and the running
/// program's pipeline (`None`: the server starts with none loaded).
pub struct P4RuntimeRun {
    pub addr: std::net::SocketAddr,
    pub device: sluice_p4rt::DeviceConfig,
    pub pipeline: Option<sluice_p4rt::pipeline::Pipeline>,
    /// Serve over TLS with this server configuration (mutual: the
    /// client's certificate must chain to the CA); `None`: plain TCP.
    pub tls: Option<Arc<sluice_p4rt::rustls::ServerConfig>>,
}

/// Counters of the forwarding thread.
#[derive(Debug, Default)]
pub struct P4Stats {
    pub rx: AtomicU64,
    pub tx: AtomicU64,
    /// Frames the program's run refused (an error the interpreter
    /// reports, e.g. a bound reached).
    pub errors: AtomicU64,
    /// Outputs to a port the switch does not have, or that the port would
    /// not take.
    pub tx_dropped: AtomicU64,
}

fn lock(m: &Mutex<Engine>) -> MutexGuard<'_, Engine> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs the program (`engine`) on the configured ports until `stop` is set.
pub fn run(engine: Engine, cfg: P4RunConfig, stop: &AtomicBool) -> anyhow::Result<()> {
    match &cfg.fallback {
        None => {
            info!(engine = engine.name(), "P4 program compiled into the core");
            if let Engine::Compiled(c) = &engine {
                if c.stateful() {
                    info!(
                        "the program reads a register, which the caches cannot see: it runs \
                         with its caches off whatever --cache says"
                    );
                }
            }
        }
        Some(why) => {
            warn!(engine = engine.name(), "P4 program on the reference interpreter: {why}")
        }
    }
    let interp = Arc::new(Mutex::new(engine));
    let ports = open_ports(&cfg)?;
    for (n, p) in &ports {
        info!(port = n, name = p.name(), "P4 port open");
    }
    let stats = Arc::new(P4Stats::default());
    let halt = Arc::new(AtomicBool::new(false));
    let p4rt = match cfg.p4runtime {
        None => None,
        Some(r) => {
            let device = Arc::new(sluice_p4rt::Device::new(r.device, interp.clone(), r.pipeline));
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("sluice-p4rt")
                .enable_all()
                .build()?;
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let tls = r.tls.is_some();
            let (addr, _task) =
                sluice_p4rt::server::spawn(&rt, device.clone(), r.addr, r.tls, async {
                    let _ = stop_rx.await;
                })
                .map_err(|e| anyhow::anyhow!("--p4runtime {}: {e}", r.addr))?;
            info!(
                addr = %addr,
                device_id = device.config.device_id,
                cpu_port = ?device.config.cpu_port,
                tls = tls,
                "P4Runtime server ready"
            );
            Some((rt, stop_tx, device))
        }
    };
    let fwd = {
        let (interp, stats, halt) = (interp.clone(), stats.clone(), halt.clone());
        let device = p4rt.as_ref().map(|(_, _, d)| d.clone());
        std::thread::Builder::new()
            .name("sluice-p4-fwd".into())
            .spawn(move || forward(&interp, ports, &stats, &halt, device.as_deref()))?
    };
    let agent = if cfg.agent.targets.is_empty() {
        info!("no listener or controller configured: the tables stay as the program sets them");
        None
    } else {
        let rt = crate::daemon::agent_runtime()?;
        let sw = P4Switch {
            interp: interp.clone(),
            session: sluice_p4::ctl::Session::default(),
            datapath_id: cfg.datapath_id,
            device: p4rt.as_ref().map(|(_, _, d)| d.clone()),
        };
        let agent = rt.block_on(Agent::start(cfg.agent, sw))?;
        for (t, a) in agent.listeners() {
            info!(target = %t, addr = %a, "OpenFlow listener ready (sluice p4 ctl)");
        }
        Some((rt, agent))
    };
    info!("P4 switch running; SIGINT or SIGTERM stops it");
    while !stop.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(100));
    }
    info!("shutting down");
    if let Some((rt, agent)) = agent {
        rt.block_on(agent.shutdown());
    }
    if let Some((rt, stop_tx, _)) = p4rt {
        let _ = stop_tx.send(());
        rt.shutdown_timeout(Duration::from_secs(1));
    }
    halt.store(true, Ordering::Release);
    if fwd.join().is_err() {
        warn!("the forwarding thread panicked");
    }
    let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
    info!(
        rx = l(&stats.rx),
        tx = l(&stats.tx),
        errors = l(&stats.errors),
        tx_dropped = l(&stats.tx_dropped),
        "stopped"
    );
    Ok(())
}

fn open_ports(cfg: &P4RunConfig) -> anyhow::Result<Vec<(u32, Box<dyn Port>)>> {
    // Opened on a thread that joins the namespace, as the daemon does: the
    // ports keep using it, the agent's sockets stay in ours.
    let specs = cfg.ports.clone();
    let netns = cfg.netns.clone();
    let opened = std::thread::spawn(move || -> io::Result<Vec<(u32, Box<dyn Port>)>> {
        if let Some(ns) = &netns {
            sys::enter_netns(ns)
                .map_err(|e| io::Error::new(e.kind(), format!("netns {ns}: {e}")))?;
        }
        specs
            .iter()
            .map(|(n, s)| {
                sluice_ports::open(s)
                    .map(|p| (*n, p))
                    .map_err(|e| io::Error::new(e.kind(), format!("port {n} ({}): {e}", s.name)))
            })
            .collect()
    })
    .join()
    .map_err(|_| anyhow::anyhow!("opening the ports panicked"))??;
    Ok(opened)
}

/// Sends a packet's outputs: to the controller for the CPU port (with
/// P4Runtime), else to the port the program chose.
/// Sends one output of the program: to the controller as a packet-in if
/// it goes to the P4Runtime CPU port, else on the port the program chose.
fn send_one(
    port: u32,
    data: &[u8],
    ports: &mut [(u32, Box<dyn Port>)],
    stats: &P4Stats,
    device: Option<&sluice_p4rt::Device>,
) {
    if let Some(d) = device.filter(|d| d.config.cpu_port == Some(port)) {
        d.packet_in(data);
        return;
    }
    let sent = ports
        .iter_mut()
        .find(|(n, _)| *n == port)
        .is_some_and(|(_, p)| matches!(p.tx_burst(&[data]), Ok(1)));
    let c = if sent { &stats.tx } else { &stats.tx_dropped };
    c.fetch_add(1, Ordering::Relaxed);
}

fn forward(
    interp: &Mutex<Engine>,
    mut ports: Vec<(u32, Box<dyn Port>)>,
    stats: &P4Stats,
    halt: &AtomicBool,
    device: Option<&sluice_p4rt::Device>,
) {
    let mut bufs = RxBuf::burst(BURST);
    let all_pollable = ports.iter().all(|(_, p)| p.raw_fd().is_some());
    // The ports never change: one poll set for the thread's life.
    let mut set: Vec<PollEntry> =
        ports.iter().filter_map(|(_, p)| p.raw_fd()).map(PollEntry::readable).collect();
    while !halt.load(Ordering::Acquire) {
        if let Err(e) = sys::poll(&mut set, if all_pollable { 50 } else { 1 }) {
            warn!(error = %e, "poll failed");
            std::thread::sleep(Duration::from_millis(10));
        }
        // Packet-outs enter at the CPU port, as if received there.
        if let Some(d) = device {
            if let Some(cpu) = d.config.cpu_port {
                for f in d.take_packet_outs() {
                    let mut send = |p: u32, d: &[u8]| send_one(p, d, &mut ports, stats, device);
                    if let Err(e) = lock(interp).packet_into(cpu, &f, &mut send) {
                        stats.errors.fetch_add(1, Ordering::Relaxed);
                        tracing::debug!(error = %e, "the program refused a packet-out");
                    }
                }
            }
        }
        for i in 0..ports.len() {
            let in_port = ports[i].0;
            let n = match ports[i].1.rx_burst(&mut bufs) {
                Ok(n) => n,
                Err(e) => {
                    warn!(port = in_port, error = %e, "receive failed");
                    0
                }
            };
            if n == 0 {
                continue;
            }
            stats.rx.fetch_add(n as u64, Ordering::Relaxed);
            for b in &mut bufs[..n] {
                // A local stack's TCP/UDP checksum left to "hardware"
                // (veths): completed before the program sees the frame.
                if b.csum_partial() {
                    crate::csum::complete_l4_checksum(b.frame_mut());
                }
            }
            // The burst as one (the compiled engine probes its caches for
            // every frame before running the first). Outputs go out as the
            // program hands them over: the compiled engine lends its own
            // buffer, nothing is copied.
            let mut frames: [&[u8]; BURST] = [&[]; BURST];
            for (f, b) in frames.iter_mut().zip(&bufs[..n]) {
                *f = b.frame();
            }
            let frames = &frames[..n.min(BURST)];
            let mut send = |p: u32, d: &[u8]| send_one(p, d, &mut ports, stats, device);
            lock(interp).burst_into(in_port, frames, &mut send, &mut |_, e| {
                stats.errors.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(port = in_port, error = %e, "the program refused a frame");
            });
        }
        // Digests go to the P4Runtime server's digest task once per
        // round: a short queue push and a wake-up, never a wait.
        if let Some(d) = device {
            let ds = lock(interp).take_digests();
            d.hand_over_digests(ds);
        }
    }
}

/// Digests as text: `receiver=N field=0xV ...` per digest.
pub fn render_digests(ds: &[Digest]) -> String {
    let mut s = String::new();
    for d in ds {
        s.push_str(&format!("receiver={} {}\n", d.receiver, render_value(&d.data)));
    }
    s
}

fn render_value(v: &Value) -> String {
    match v {
        Value::Bits(b) | Value::Signed(b) => format!("0x{}", b.to_hex()),
        Value::Bool(x) => x.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Struct(a) | Value::Header(a) => {
            a.ty.fields
                .iter()
                .zip(&a.fields)
                .map(|((n, _), f)| format!("{n}={}", render_value(f)))
                .collect::<Vec<_>>()
                .join(" ")
        }
        other => format!("{other:?}"),
    }
}

/// The agent's view of the P4 switch.
struct P4Switch {
    interp: Arc<Mutex<Engine>>,
    /// Multicast nodes and groups made by `mc_*` commands.
    session: sluice_p4::ctl::Session,
    datapath_id: u64,
    /// The P4Runtime server's device, when one runs.
    device: Option<Arc<sluice_p4rt::Device>>,
}

impl P4Switch {
    fn command(&mut self, line: &str) -> CtlReply {
        let mut i = lock(&self.interp);
        if line.trim() == "digests" {
            let mut text = render_digests(&i.take_digests());
            let dropped = i.digests_dropped();
            if dropped > 0 {
                text.push_str(&format!("# {dropped} digests dropped so far (queue full)\n"));
            }
            return CtlReply { ok: true, text };
        }
        drop(i);
        let session = &mut self.session;
        let mut run = |e: &mut Engine| session.execute(e, line);
        // With P4Runtime serving, its entry index follows what the
        // command did to the tables.
        let r = match &self.device {
            Some(d) => d.with_engine(run),
            None => run(&mut lock(&self.interp)),
        };
        match r {
            Ok(text) => CtlReply { ok: true, text },
            Err(text) => CtlReply { ok: false, text },
        }
    }
}

impl Switch for P4Switch {
    fn handle(
        &mut self,
        _conn: sluice_agent::ConnId,
        xid: u32,
        msg: &Message,
        raw: &[u8],
    ) -> Vec<Outgoing> {
        let reply = match msg {
            Message::Experimenter(e) => match p4ctl::parse_request(e) {
                Some(Ok(line)) => self.command(&line).to_message(),
                Some(Err(why)) => CtlReply { ok: false, text: why }.to_message(),
                None if e.experimenter == SLUICE_EXPERIMENTER_ID => {
                    error_reply(ErrorCode::BRC_BAD_EXP_TYPE, raw)
                }
                None => error_reply(ErrorCode::BRC_BAD_EXPERIMENTER, raw),
            },
            Message::FeaturesRequest => Message::FeaturesReply(FeaturesReply {
                datapath_id: self.datapath_id,
                ..FeaturesReply::default()
            }),
            Message::BarrierRequest => Message::BarrierReply,
            _ => error_reply(ErrorCode::BRC_BAD_TYPE, raw),
        };
        vec![Outgoing { xid, msg: reply }]
    }

    fn take_async(&mut self) -> Vec<Message> {
        Vec::new()
    }
}
