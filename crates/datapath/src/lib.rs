//! # sluice-datapath: the switch daemon's moving parts
//!
//! ## What
//! Everything `sluice run` needs between the ports and the OpenFlow agent:
//! worker threads that forward frames between real ports through the
//! reference pipeline ([`Datapath`]), a control thread that follows link
//! state and port removal, the fail-standalone MAC-learning switch
//! ([`learn`]), configuration from a TOML file and flags ([`config`]), and
//! the glue that runs the agent ([`daemon`]).
//!
//! ## Basic design
//! ```text
//!   ports (afpacket, pcap, tap, afxdp)                    agent (tokio)
//!     │ rx_burst ≤ 32        tx_burst ▲                     │ handle / take_async
//!     ▼                               │                     ▼
//!   worker 0..N ── load once per burst ──▶ Published ◀── Publisher ◀── DatapathSwitch
//!     │  own Worker context, no lock        (a copy)      (master)    PACKET_OUT → ports
//!     └── push_async(PACKET_IN) ──▶ async queue (bounded) ──▶ agent
//!   control thread: LinkMonitor → set_link / remove / reopen; clock tick; late publications
//! ```
//! - **Workers** (default: available cores − 1, at least one) each own the
//!   ports they receive from and a `sluice_pipeline::Worker` context of
//!   their own (scratch buffers, exact and megaflow caches, packet-ins
//!   queued by their packets, and a counter shard). For each burst of up
//!   to 32 frames a worker loads the current published pipeline version
//!   (`arc-swap`, no lock), reads the clock once and runs every frame
//!   through it with `Pipeline::process_with(&self, …)`; versions change
//!   only between bursts. Counters (flows, tables, ports, groups) are
//!   per-worker shards of shared cells, merged when read; meters are
//!   shared state and take their own mutex, for metered packets only.
//! - **The control side** — controller messages ([`DatapathSwitch`]), port
//!   changes and the clock tick (control thread) — changes the *master*
//!   pipeline inside a `sluice_pipeline::publish::Publisher` (a mutex
//!   workers never take) and publishes: flow tables are brought up to date
//!   on the copy no worker reads by replaying logged changes (left-right),
//!   then swapped in. Controller messages are published per batch: when
//!   the agent has applied every message queued right now (at most 256,
//!   `Switch::idle`), so a flow-mod is visible to packets microseconds
//!   after it arrives and a burst of 100k flow-mods costs one publication
//!   per batch; a publication replays only the tables that changed. The
//!   control thread publishes what port changes and the clock tick
//!   changed.
//! - **Barrier ordering**: before answering a BARRIER_REQUEST the switch
//!   publishes and waits until no worker holds an older version. A worker
//!   holds its burst's version from the lookups until the burst's output
//!   was handed to the ports, so after the BARRIER_REPLY every packet is
//!   processed with every earlier flow-mod and no frame decided without
//!   them is still to be sent. The wait has no time limit (a warning is
//!   logged every 250 ms while it lasts); it cannot be held up by an idle
//!   worker (no version outside a burst) or by a worker thread that has
//!   ended (its version was dropped on return or unwinding). PACKET_OUT
//!   runs on the master directly (its frames are handed to the ports
//!   before the call returns).
//! - **Transmit** happens after the burst: its output is grouped per port
//!   and sent with `tx_burst`. Each port sits behind its own mutex because
//!   any worker (and PACKET_OUT) may send on it; the owner takes it for
//!   receiving.
//! - **Asynchronous messages**: PACKET_INs a worker's burst produced, and
//!   FLOW_REMOVED/PORT_STATUS from the control side, go into one bounded
//!   queue and the agent is notified; the agent takes them through
//!   [`DatapathSwitch`] (its `Switch` trait).
//!
//! ## Fail modes
//! While no controller is connected (as the agent counts them):
//! `standalone` forwards as a MAC-learning switch, bypassing the flow
//! tables (OpenFlow 1.3.5 §6.3.6); `secure` keeps using the flow tables and
//! drops table misses (PACKET_INs have nobody to go to). The daemon calls
//! [`Datapath::set_controller_connected`] as controllers come and go.
//!
//! ## Invariants
//! - Workers take no lock per packet: one version load per burst; locks
//!   they may take are a port's mutex (receive, transmit), the MAC table
//!   in standalone mode (once per burst) and a meter's mutex for metered
//!   packets.
//! - Lock order is publisher → MAC table → port table → one port
//!   (`shared.rs`); nothing takes them the other way round.
//! - Every loop is bounded and every queue has a cap; shutdown stops all
//!   threads within one poll timeout plus one control round.
//! - No per-packet allocation in steady state (reused receive buffers and
//!   transmit arena); asynchronous messages allocate, as they must.

mod capture;
mod compiler;
pub mod config;
mod control;
pub mod csum;
pub mod daemon;
pub mod flowpacket;
pub mod learn;
pub mod metrics;
pub mod p4switch;
pub mod reload;
mod shared;
mod sys;
pub mod trace;
pub mod worker;

#[cfg(test)]
mod barrier_tests;

pub use compiler::compiler;
pub use sluice_agent as agent;
pub use sluice_ports as ports;

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::Ordering::{Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{mpsc, Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sluice_agent::{ConnId, Switch};
use sluice_ofp::message::Message;
use sluice_pipeline::ports::PortCounters;
use sluice_pipeline::publish::Publisher;
use sluice_pipeline::{Outgoing, Pipeline, Tx};

pub use config::{DaemonConfig, DatapathConfig, Overrides, PortConfig};
pub use sys::enter_netns;

use learn::MacTable;
use shared::{lock, Counters, Inbox, Shared};

/// One port as [`Datapath::ports`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortReport {
    pub port_no: u32,
    pub name: String,
    /// Link up and not administratively down.
    pub live: bool,
    /// The pipeline's counters (what OpenFlow port stats report).
    pub counters: PortCounters,
    /// The port's own counters (kernel drops, transmit errors).
    pub port: sluice_ports::PortStats,
    /// Frames the port refused on transmit.
    pub tx_failed: u64,
}

/// Datapath-wide counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DatapathStats {
    pub bursts: u64,
    pub packets: u64,
    /// Frames produced by the pipeline that no port took.
    pub tx_dropped: u64,
    /// Asynchronous messages dropped because the agent did not take them.
    pub async_dropped: u64,
    /// Whether MAC learning (fail standalone) is forwarding right now.
    pub standalone: bool,
    /// Frames MAC learning received (their ports counted them as
    /// received; they never met the flow tables), and those it dropped
    /// because their destination was learned on their ingress port.
    pub learned: u64,
    pub learn_dropped: u64,
    /// Frames the pipeline output to a port it does not have (removed).
    pub no_port: u64,
}

/// The running datapath: workers, control thread, shared pipeline.
/// Dropping it stops everything.
pub struct Datapath {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// Port changes for the control thread (configuration reload).
    ports_cmd: mpsc::Sender<control::PortsCmd>,
}

impl Datapath {
    /// Opens the configured ports (failing if any cannot be opened), starts
    /// the control thread and the workers.
    pub fn start(cfg: DatapathConfig) -> anyhow::Result<Datapath> {
        let workers = cfg.workers.clamp(1, cfg.ports.len().max(1));
        if workers < cfg.workers {
            tracing::info!(
                requested = cfg.workers,
                workers,
                "fewer workers than requested: one per port at most"
            );
        }
        let mut pcfg = cfg.pipeline.clone();
        pcfg.workers = workers;
        if pcfg.jit.background && pcfg.compiler.is_none() {
            pcfg.compiler = Some(compiler());
        }
        let mut master = Pipeline::new(pcfg);
        let contexts: Vec<sluice_pipeline::Worker> =
            (0..workers).map(|_| master.worker()).collect();
        let publisher = Publisher::new(master);
        let shared = Arc::new(Shared {
            published: publisher.published(),
            publisher: Mutex::new(publisher),
            learn: Mutex::new(MacTable::new(cfg.mac_table_size, cfg.mac_aging.as_nanos() as u64)),
            ports: RwLock::new(BTreeMap::new()),
            ports_gen: AtomicU64::new(0),
            inboxes: (0..workers).map(|_| Inbox::default()).collect(),
            fail_standalone: AtomicBool::new(cfg.fail_mode == sluice_agent::FailMode::Standalone),
            controller_connected: AtomicBool::new(false),
            standalone: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            control_wake: AtomicBool::new(false),
            epoch: Instant::now(),
            poll_timeout: cfg.poll_timeout,
            busy_poll_ns: AtomicU64::new(cfg.busy_poll.as_nanos() as u64),
            async_q: Mutex::new(VecDeque::new()),
            async_cap: cfg.async_queue_len.max(1),
            notifier: RwLock::new(None),
            counters: Counters::default(),
            workers: (0..workers).map(|_| Default::default()).collect(),
            captures: Mutex::default(),
        });
        shared.update_mode();
        let (ports_cmd, cmds) = mpsc::channel();
        let mut dp = Datapath { shared: shared.clone(), threads: Vec::new(), ports_cmd };
        let (ready_tx, ready_rx) = mpsc::channel();
        let s = shared.clone();
        let ports = cfg.ports.clone();
        let netns = cfg.netns.clone();
        dp.threads.push(
            std::thread::Builder::new()
                .name("sluice-control".into())
                .spawn(move || control::run(s, ports, netns, ready_tx, cmds))?,
        );
        match ready_rx.recv_timeout(Duration::from_secs(30)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => anyhow::bail!(e),
            Err(_) => anyhow::bail!("the control thread did not open the ports within 30 s"),
        }
        for (id, ctx) in contexts.into_iter().enumerate() {
            let s = shared.clone();
            dp.threads.push(
                std::thread::Builder::new()
                    .name(format!("sluice-worker{id}"))
                    .spawn(move || worker::run(id, s, ctx))?,
            );
        }
        tracing::info!(
            dpid = format_args!("{:#018x}", cfg.pipeline.datapath_id),
            ports = cfg.ports.len(),
            workers,
            fail_mode = ?cfg.fail_mode,
            "datapath started"
        );
        Ok(dp)
    }

    /// Runs `f` on the master pipeline (controller messages wait while it
    /// runs; workers do not).
    pub fn with_master<R>(&self, f: impl FnOnce(&Pipeline) -> R) -> R {
        f(lock(&self.shared.publisher).master())
    }

    /// Number of pipeline versions published so far.
    pub fn version(&self) -> u64 {
        self.shared.published.version()
    }

    /// The agent's view of this switch.
    pub fn switch(&self) -> DatapathSwitch {
        DatapathSwitch { shared: self.shared.clone() }
    }

    /// Called (from any thread, must not block) whenever asynchronous
    /// messages are queued.
    pub fn set_notifier(&self, f: impl Fn() + Send + Sync + 'static) {
        *self.shared.notifier.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(f));
    }

    /// Whether at least one controller is connected (leaves or enters the
    /// fail mode).
    pub fn set_controller_connected(&self, connected: bool) {
        self.shared.controller_connected.store(connected, Relaxed);
        self.shared.update_mode();
    }

    /// Configuration reload: removes the ports `remove` and adds the ports
    /// `add` while the others keep forwarding (see `control.rs`). Every
    /// added port is opened before anything changes; if one cannot be
    /// opened, nothing changes and the error says which.
    pub fn reconfigure_ports(
        &self,
        remove: Vec<PortConfig>,
        add: Vec<PortConfig>,
    ) -> anyhow::Result<()> {
        let (reply, answer) = mpsc::channel();
        self.ports_cmd
            .send(control::PortsCmd { remove, add, reply })
            .map_err(|_| anyhow::anyhow!("the control thread has stopped"))?;
        match answer.recv_timeout(Duration::from_secs(30)) {
            Ok(r) => r.map_err(anyhow::Error::msg),
            Err(_) => {
                anyhow::bail!("the control thread did not apply the port changes within 30 s")
            }
        }
    }

    /// Configuration reload: a new `busy_poll` (workers read it each round).
    pub fn set_busy_poll(&self, d: Duration) {
        self.shared.busy_poll_ns.store(d.as_nanos() as u64, Relaxed);
    }

    /// Configuration reload: a new fail mode (takes effect at once if no
    /// controller is connected).
    pub fn set_fail_mode(&self, mode: sluice_agent::FailMode) {
        self.shared.set_fail_mode(mode);
    }

    /// A handle that only switches the fail mode (for a task that follows
    /// the agent's controller count).
    pub fn mode_handle(&self) -> ModeHandle {
        ModeHandle { shared: self.shared.clone() }
    }

    /// Whether MAC learning (fail standalone) forwards right now.
    pub fn standalone_active(&self) -> bool {
        self.shared.standalone.load(Relaxed)
    }

    /// Ports in the pipeline, by number, with their counters.
    pub fn ports(&self) -> Vec<PortReport> {
        port_reports(&self.shared)
    }

    pub fn stats(&self) -> DatapathStats {
        datapath_stats(&self.shared)
    }

    /// A read-only handle on the counters, for other threads (metrics).
    pub fn probe(&self) -> metrics::Probe {
        metrics::Probe { shared: self.shared.clone() }
    }

    /// Nanoseconds on the pipeline clock.
    pub fn now_ns(&self) -> u64 {
        self.shared.now_ns()
    }

    /// Stops the threads and waits for them.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    /// Stops the workers and closes the ports, as dropping the datapath
    /// does, but never frees the pipeline: the flow tables, their indexes
    /// and compiled code, the published copies. Freeing a million flows
    /// entry by entry took 2.2 s of `sluice run`'s exit (debug build); for
    /// a process about to exit, the kernel takes the memory back at once.
    /// Only for that: the memory stays taken until the process ends.
    pub fn stop_for_exit(mut self) {
        self.stop_and_join();
        // Ports have work to do when closed (a pcap port writes its file
        // out): they are dropped here, as a drop of the datapath would.
        let ports =
            std::mem::take(&mut *self.shared.ports.write().unwrap_or_else(|e| e.into_inner()));
        drop(ports);
        std::mem::forget(Arc::clone(&self.shared));
    }

    fn stop_and_join(&mut self) {
        self.shared.stop.store(true, Release);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn port_reports(shared: &Shared) -> Vec<PortReport> {
    let entries: Vec<(u32, String, bool, PortCounters)> = {
        let pb = lock(&shared.publisher);
        let p = pb.master();
        p.ports()
            .iter()
            .map(|e| {
                (
                    e.desc.port_no,
                    e.desc.name.clone(),
                    p.ports().is_live(e.desc.port_no),
                    e.counters(),
                )
            })
            .collect()
    };
    entries
        .into_iter()
        .map(|(port_no, name, live, counters)| {
            let (port, tx_failed) = match shared.slot(port_no) {
                Some(s) => (lock(&s.port).stats(), s.tx_failed.load(Relaxed)),
                None => (Default::default(), 0),
            };
            PortReport { port_no, name, live, counters, port, tx_failed }
        })
        .collect()
}

fn datapath_stats(shared: &Shared) -> DatapathStats {
    let c = &shared.counters;
    DatapathStats {
        bursts: c.bursts.load(Relaxed),
        packets: c.packets.load(Relaxed),
        tx_dropped: c.tx_dropped.load(Relaxed),
        async_dropped: c.async_dropped.load(Relaxed),
        standalone: shared.standalone.load(Relaxed),
        learned: c.learned.load(Relaxed),
        learn_dropped: c.learn_dropped.load(Relaxed),
        no_port: c.no_port.load(Relaxed),
    }
}

impl Drop for Datapath {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// See [`Datapath::mode_handle`].
#[derive(Clone)]
pub struct ModeHandle {
    shared: Arc<Shared>,
}

impl ModeHandle {
    pub fn set_controller_connected(&self, connected: bool) {
        self.shared.controller_connected.store(connected, Relaxed);
        self.shared.update_mode();
    }
}

/// The switch as the agent sees it: controller messages go to the shared
/// pipeline (PACKET_OUT frames straight to the ports), asynchronous messages
/// come from the datapath's queue.
pub struct DatapathSwitch {
    shared: Arc<Shared>,
}

/// Transmits PACKET_OUT (and buffered flow-mod) frames directly.
struct PortTx<'a> {
    shared: &'a Shared,
}

impl Tx for PortTx<'_> {
    fn transmit(&mut self, port: u32, _queue: Option<u32>, frame: &[u8]) {
        let dropped = match self.shared.slot(port) {
            Some(slot) => {
                let mut p = lock(&slot.port);
                worker::send(&slot, &mut **p, &[frame])
            }
            None => 1,
        };
        if dropped > 0 {
            self.shared.counters.tx_dropped.fetch_add(dropped, Relaxed);
        }
    }
}

impl DatapathSwitch {
    /// Applies one controller message (as the agent would) — also usable
    /// without an agent, e.g. to install flows from a file.
    pub fn apply(&self, xid: u32, msg: &Message) -> Vec<Outgoing> {
        let raw = msg.encode(xid);
        self.apply_raw(0, xid, msg, &raw, true)
    }

    fn apply_raw(
        &self,
        conn: ConnId,
        xid: u32,
        msg: &Message,
        raw: &[u8],
        publish: bool,
    ) -> Vec<Outgoing> {
        if let Message::Experimenter(e) = msg {
            if let Some(req) = sluice_ofp::tracemsg::TraceRequest::parse(e) {
                return vec![self.live_trace(xid, req, raw)];
            }
            if let Some(req) = sluice_ofp::capturemsg::CaptureRequest::parse(e) {
                let msg = match self.shared.capture_request(conn, req) {
                    Ok(reply) => reply.to_message(),
                    Err(r) => r.to_error(raw),
                };
                return vec![Outgoing { xid, msg }];
            }
        }
        let mut tx = PortTx { shared: &self.shared };
        let mut pb = lock(&self.shared.publisher);
        if matches!(msg, Message::BarrierRequest) {
            barrier(&mut pb);
        }
        let p = pb.master_mut();
        p.advance(self.shared.now_ns());
        let out = p.handle_from(conn, xid, msg, raw, &mut tx);
        // A publication replays only the tables that changed (microseconds,
        // waiting only for a worker still in a burst on the copy being
        // reused); the agent batches them (`idle`).
        if publish {
            pb.publish();
        }
        out
    }
}

impl DatapathSwitch {
    /// Answers a live trace request (`sluice_ofp::tracemsg`): the packet
    /// through the master pipeline's reference trace and a fresh worker's
    /// caches ([`trace::answer`]); nothing is sent out of a port or to a
    /// controller, and nothing changes: both walks are dry runs
    /// (`Pipeline::trace`, `Pipeline::cache_trace`), leaving counters,
    /// idle times, meter buckets and filter-program maps as they were.
    /// (Like any message, the request moves the pipeline clock first,
    /// which expires flows whose timeouts have passed.) The master is not
    /// published afterwards: nothing in it changed. A request that cannot
    /// be traced gets `SLICTR_BAD_TRACE` with the reason.
    fn live_trace(
        &self,
        xid: u32,
        req: sluice_ofp::filterprog::Decoded<sluice_ofp::tracemsg::TraceRequest>,
        raw: &[u8],
    ) -> Outgoing {
        use sluice_ofp::filterprog::Refusal;
        let answer = req.and_then(|req| {
            let mut pb = lock(&self.shared.publisher);
            let p = pb.master_mut();
            p.advance(self.shared.now_ns());
            trace::answer(p, &req).map_err(|e| Refusal::exp(sluice_ofp::tracemsg::BAD_TRACE, e))
        });
        let msg = match answer {
            Ok(text) => sluice_ofp::tracemsg::reply(&text),
            Err(r) => r.to_error(raw),
        };
        Outgoing { xid, msg }
    }
}

/// How often a barrier that is still waiting for a worker says so.
const BARRIER_WARN_EVERY: Duration = Duration::from_millis(250);

/// Publishes everything applied so far and returns only when no worker can
/// still forward with an older version (see "Barrier ordering" in the
/// module docs). It never gives up: replying early would break the
/// guarantee, so a worker stuck inside a burst is reported (every
/// [`BARRIER_WARN_EVERY`]) and waited for.
///
/// - What a worker holds: its burst's version, from the load before the
///   lookups until its output was handed to the ports (`worker.rs`). A
///   worker between bursts (in `poll(2)`, sleeping, receiving) holds
///   nothing and cannot delay a barrier.
/// - A worker thread that ends: the version is a reference on the
///   worker's stack, so returning or unwinding from a panic inside the
///   burst gives it back; a dead worker never holds a barrier up. (With
///   `panic = "abort"` the whole process ends instead.)
/// - Copies given up on by an earlier publication (a worker held one past
///   `WAIT_LIMIT`) are still waited for: the publisher keeps track of them
///   (`Publisher::old_readers`).
/// - No deadlock: the publisher lock is held throughout (so the copies
///   waited for cannot be republished meanwhile; port changes and clock
///   ticks wait), and workers never take it; the locks a worker takes in
///   a burst (learning table, its output ports: by `try_lock` while it
///   forwards, blocking only for the arena after it let the others go)
///   are never held by the control side while it waits for the publisher
///   lock.
fn barrier(pb: &mut Publisher) {
    pb.publish();
    let start = Instant::now();
    while !pb.wait_readers(BARRIER_WARN_EVERY) {
        tracing::warn!(
            waited_ms = start.elapsed().as_millis() as u64,
            old_readers = pb.old_readers(),
            "barrier: a worker is still in a burst on an older pipeline version; \
             BARRIER_REPLY waits for it"
        );
    }
}

impl Switch for DatapathSwitch {
    fn handle(&mut self, conn: ConnId, xid: u32, msg: &Message, raw: &[u8]) -> Vec<Outgoing> {
        // Published when the agent has applied every message queued now
        // (`idle`), or before a BARRIER_REPLY: a burst of 100k flow-mods
        // costs a publication per batch, not per flow-mod.
        self.apply_raw(conn, xid, msg, raw, false)
    }

    /// The connection's open bundles are discarded.
    fn conn_closed(&mut self, conn: ConnId) {
        self.shared.capture_conn_closed(conn);
        lock(&self.shared.publisher).master_mut().conn_closed(conn);
    }

    fn idle(&mut self) {
        lock(&self.shared.publisher).publish();
    }

    fn take_async(&mut self) -> Vec<Message> {
        // Queued messages are older than anything still in the master.
        let mut out: Vec<Message> = lock(&self.shared.async_q).drain(..).collect();
        out.extend(lock(&self.shared.publisher).master_unpublished().take_async());
        out
    }
}
