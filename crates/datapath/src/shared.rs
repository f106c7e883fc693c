//! State shared by the workers, the control thread and the agent adapter.
//!
//! The pipeline is split in two (see `sluice_pipeline::publish`): the
//! control side's [`Publisher`] (the master pipeline that controller
//! messages, port changes and the clock change, behind a mutex that
//! workers never take) and the [`Published`] copy workers read once per
//! burst without a lock.
//!
//! Lock order (always taken in this order, never the reverse):
//! `publisher` → `learn` → `ports` (the table) → one port's mutex;
//! `async_q` and `notifier` are leaves (taken last; nothing else is locked
//! while holding them), so the control side may queue asynchronous
//! messages under the publisher lock, which keeps them in pipeline order.

use std::collections::{BTreeMap, VecDeque};
use std::os::fd::RawFd;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use sluice_agent::FailMode;
use sluice_ofp::message::Message;
use sluice_ofp::port::{features, state, Port as OfpPort};
use sluice_pipeline::publish::{Published, Publisher};
use sluice_pipeline::CacheStats;
use sluice_ports::Port;
use tracing::info;

use crate::learn::MacTable;

/// Locks a mutex, carrying on if a thread panicked while holding it (the
/// protected state has no invariant a half-done packet could break that
/// stopping the switch would fix).
pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One open port.
pub(crate) struct PortSlot {
    pub no: u32,
    pub name: String,
    pub port: Mutex<Box<dyn Port>>,
    pub fd: Option<RawFd>,
    gone: AtomicBool,
    /// Frames the port would not take (ring full, link down, gone).
    pub tx_failed: AtomicU64,
    /// A capture records what this port receives (`capture.rs`): the one
    /// load a worker pays per burst when nobody captures.
    pub capturing: AtomicBool,
}

impl PortSlot {
    pub(crate) fn new(no: u32, port: Box<dyn Port>) -> PortSlot {
        PortSlot {
            no,
            name: port.name().to_string(),
            fd: port.raw_fd(),
            port: Mutex::new(port),
            gone: AtomicBool::new(false),
            tx_failed: AtomicU64::new(0),
            capturing: AtomicBool::new(false),
        }
    }

    pub(crate) fn is_gone(&self) -> bool {
        self.gone.load(Relaxed)
    }

    pub(crate) fn mark_gone(&self) {
        self.gone.store(true, Release);
    }
}

/// Ports handed to one worker.
#[derive(Default)]
pub(crate) struct Inbox {
    pub pending: Mutex<Vec<Arc<PortSlot>>>,
    pub dirty: AtomicBool,
    /// Ports the worker currently serves (for balancing).
    pub load: AtomicUsize,
}

/// Datapath-wide counters.
#[derive(Default)]
pub(crate) struct Counters {
    pub bursts: AtomicU64,
    pub packets: AtomicU64,
    pub tx_dropped: AtomicU64,
    pub async_dropped: AtomicU64,
    /// Frames received while MAC learning forwarded (fail standalone), and
    /// those of them it dropped (destination learned on the ingress port).
    pub learned: AtomicU64,
    pub learn_dropped: AtomicU64,
    /// Frames the pipeline output to a port it does not have (removed).
    pub no_port: AtomicU64,
}

/// One worker's own counters: written by that worker only (relaxed
/// stores once per busy round, never per packet), read on a scrape.
#[derive(Default)]
pub(crate) struct WorkerStats {
    /// Nanoseconds spent in rounds that received frames (the rest of the
    /// worker's life it waited in `poll(2)` or found nothing).
    pub busy_ns: AtomicU64,
    /// Rounds that received frames.
    pub busy_rounds: AtomicU64,
    /// Frames received (all in busy rounds, by definition): with
    /// `busy_ns`, the busy time per packet that Open vSwitch's
    /// `pmd-stats-show` calls processing cycles per packet.
    pub packets: AtomicU64,
    /// The worker's cache counters, copied after a busy round unless a
    /// reader holds the lock at that moment (then the next round copies
    /// them): the worker never waits for a scrape.
    pub cache: Mutex<CacheStats>,
}

impl WorkerStats {
    /// Records a round that received `packets` frames and took `busy_ns`.
    pub(crate) fn note_round(&self, busy_ns: u64, packets: u64, cache: &CacheStats) {
        self.busy_ns.fetch_add(busy_ns, Relaxed);
        self.busy_rounds.fetch_add(1, Relaxed);
        self.packets.fetch_add(packets, Relaxed);
        if let Ok(mut c) = self.cache.try_lock() {
            *c = *cache;
        }
    }
}

/// Called when asynchronous messages are queued.
pub type Notifier = Arc<dyn Fn() + Send + Sync>;

pub(crate) struct Shared {
    /// The master pipeline and the copies (control side only).
    pub publisher: Mutex<Publisher>,
    /// What workers read.
    pub published: Arc<Published>,
    pub learn: Mutex<MacTable>,
    pub ports: RwLock<BTreeMap<u32, Arc<PortSlot>>>,
    /// Bumped after every change to `ports`: workers keep their own copy
    /// of the port table for transmitting and refresh it when this moves.
    pub ports_gen: AtomicU64,
    pub inboxes: Vec<Inbox>,
    /// The fail mode is `standalone` (else `secure`); a configuration
    /// reload may change it.
    pub fail_standalone: AtomicBool,
    pub controller_connected: AtomicBool,
    /// MAC learning instead of the pipeline (standalone mode, no controller).
    pub standalone: AtomicBool,
    pub stop: AtomicBool,
    /// Set by workers when a port failed; the control thread looks sooner.
    pub control_wake: AtomicBool,
    pub epoch: Instant,
    pub poll_timeout: Duration,
    /// See [`crate::config::DatapathConfig::busy_poll`], in nanoseconds
    /// (workers read it once per round; a configuration reload may change
    /// it).
    pub busy_poll_ns: AtomicU64,
    pub async_q: Mutex<VecDeque<Message>>,
    pub async_cap: usize,
    pub notifier: RwLock<Option<Notifier>>,
    pub counters: Counters,
    /// One per worker, by worker id.
    pub workers: Vec<WorkerStats>,
    /// Running port captures (`capture.rs`).
    pub captures: Mutex<crate::capture::Captures>,
}

impl Shared {
    /// Pipeline time: nanoseconds since the datapath started.
    pub(crate) fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Every open port, in port-number order, and the generation read
    /// before reading them.
    pub(crate) fn port_slots(&self) -> (u64, Vec<Arc<PortSlot>>) {
        let gen = self.ports_gen.load(Acquire);
        let slots =
            self.ports.read().unwrap_or_else(|e| e.into_inner()).values().cloned().collect();
        (gen, slots)
    }

    pub(crate) fn slot(&self, port_no: u32) -> Option<Arc<PortSlot>> {
        self.ports.read().unwrap_or_else(|e| e.into_inner()).get(&port_no).cloned()
    }

    pub(crate) fn wake_control(&self) {
        self.control_wake.store(true, Release);
    }

    pub(crate) fn note_burst(&self, packets: u64) {
        self.counters.bursts.fetch_add(1, Relaxed);
        self.counters.packets.fetch_add(packets, Relaxed);
    }

    /// Once per standalone burst (module docs of `worker`: never per frame).
    pub(crate) fn note_learned(&self, received: u64, dropped: u64) {
        if received > 0 {
            self.counters.learned.fetch_add(received, Relaxed);
        }
        if dropped > 0 {
            self.counters.learn_dropped.fetch_add(dropped, Relaxed);
        }
    }

    pub(crate) fn note_no_port(&self, n: u64) {
        if n > 0 {
            self.counters.no_port.fetch_add(n, Relaxed);
        }
    }

    pub(crate) fn note_dropped(&self, dropped: u64) {
        if dropped > 0 {
            self.counters.tx_dropped.fetch_add(dropped, Relaxed);
        }
    }

    /// Queues asynchronous messages for the agent (bounded: the oldest are
    /// dropped and counted) and wakes it.
    pub(crate) fn push_async(&self, msgs: Vec<Message>) {
        if msgs.is_empty() {
            return;
        }
        {
            let mut q = lock(&self.async_q);
            for m in msgs {
                if q.len() >= self.async_cap {
                    q.pop_front();
                    self.counters.async_dropped.fetch_add(1, Relaxed);
                }
                q.push_back(m);
            }
        }
        let n = self.notifier.read().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(n) = n {
            n();
        }
    }

    /// Sets the fail mode (start, configuration reload) and recomputes
    /// whether standalone forwarding is active.
    pub(crate) fn set_fail_mode(&self, mode: FailMode) {
        self.fail_standalone.store(mode == FailMode::Standalone, Relaxed);
        self.update_mode();
    }

    /// Recomputes whether standalone forwarding is active.
    pub(crate) fn update_mode(&self) {
        let on = self.fail_standalone.load(Relaxed) && !self.controller_connected.load(Relaxed);
        let was = self.standalone.swap(on, Relaxed);
        if on != was {
            if on {
                lock(&self.learn).clear();
                info!("no controller: fail mode standalone, forwarding as a MAC-learning switch");
            } else {
                info!("controller connected: forwarding through the flow tables");
            }
        }
    }

    /// Publishes the master's changes now (port changes, clock ticks).
    fn publish(pb: &mut Publisher) {
        let before = pb.fallbacks();
        pb.publish();
        if pb.fallbacks() > before {
            tracing::warn!("a worker held a pipeline version too long; published a full copy");
        }
    }

    /// Adds an opened port: to the table, to the pipeline (PORT_STATUS ADD)
    /// and to the least loaded worker.
    pub(crate) fn add_port(&self, port_no: u32, port: Box<dyn Port>) {
        let desc = port_desc(port_no, &*port);
        let slot = Arc::new(PortSlot::new(port_no, port));
        info!(port = port_no, name = %slot.name, link_up = desc.state & state::LINK_DOWN == 0, "port added");
        let ps = {
            let mut pb = lock(&self.publisher);
            self.ports.write().unwrap_or_else(|e| e.into_inner()).insert(port_no, slot.clone());
            self.ports_gen.fetch_add(1, Release);
            let now = self.now_ns();
            let ps = pb.master_mut().ports_mut().add(desc, now);
            Self::publish(&mut pb);
            ps
        };
        if let Some(inbox) = self.inboxes.iter().min_by_key(|i| i.load.load(Relaxed)) {
            inbox.load.fetch_add(1, Relaxed);
            lock(&inbox.pending).push(slot);
            inbox.dirty.store(true, Release);
        }
        self.push_async(vec![Message::PortStatus(ps)]);
    }

    /// Removes a port everywhere (PORT_STATUS DELETE); the worker lets go of
    /// it at its next round.
    pub(crate) fn remove_port(&self, port_no: u32, why: &str) {
        let ps = {
            let mut pb = lock(&self.publisher);
            lock(&self.learn).forget_port(port_no);
            if let Some(s) = self.ports.write().unwrap_or_else(|e| e.into_inner()).remove(&port_no)
            {
                s.mark_gone();
            }
            self.ports_gen.fetch_add(1, Release);
            let ps = pb.master_mut().ports_mut().remove(port_no);
            Self::publish(&mut pb);
            ps
        };
        info!(port = port_no, "port removed: {why}");
        if let Some(ps) = ps {
            self.push_async(vec![Message::PortStatus(ps)]);
        }
    }

    /// Records a link change (PORT_STATUS MODIFY if it changed anything).
    pub(crate) fn set_link(&self, port_no: u32, up: bool) {
        let ps = {
            let mut pb = lock(&self.publisher);
            if !up {
                lock(&self.learn).forget_port(port_no);
            }
            let ps = pb.master_mut().ports_mut().set_link(port_no, up);
            Self::publish(&mut pb);
            ps
        };
        if let Some(ps) = ps {
            info!(port = port_no, up, "link changed");
            self.push_async(vec![Message::PortStatus(ps)]);
        }
    }

    /// Moves the pipeline clock (timeouts fire even without traffic),
    /// collects what that queued, and publishes what changed.
    pub(crate) fn tick(&self) {
        let mut pb = lock(&self.publisher);
        let p = pb.master_mut();
        p.advance(self.now_ns());
        let msgs = p.take_async();
        Self::publish(&mut pb);
        self.push_async(msgs);
    }
}

/// The OpenFlow description of an opened port.
pub(crate) fn port_desc(port_no: u32, port: &dyn Port) -> OfpPort {
    let mut name = port.name().to_string();
    while name.len() > 15 {
        name.pop();
    }
    let feat = features::F_10GB_FD | features::COPPER;
    OfpPort {
        port_no,
        hw_addr: port.hw_addr(),
        name,
        config: 0,
        state: if port.link_up() { 0 } else { state::LINK_DOWN },
        curr: feat,
        advertised: feat,
        supported: feat,
        peer: 0,
        curr_speed: 10_000_000,
        max_speed: 10_000_000,
    }
}
