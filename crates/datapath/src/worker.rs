//! Worker threads: receive a burst, run it through the published pipeline
//! (no lock), transmit what came out.
//!
//! Each worker owns a set of ports for receiving (assigned by the control
//! thread through its [`Inbox`]). One round of the loop:
//! 1. pick up newly assigned ports and forget ports marked gone;
//! 2. `poll(2)` the ports' descriptors for at most `poll_timeout` (ports
//!    without a descriptor, e.g. pcap, make the timeout 1 ms) — skipped
//!    while busy: a round that received frames is followed at once by the
//!    next, without a syscall (NAPI-style), and so are empty rounds until
//!    `busy_poll` (default 1 ms) has passed since the last frame: waking
//!    from `poll` costs tens of microseconds per hop, and a reply or the
//!    next frame of a flow usually comes within that window, so light
//!    traffic is not delayed by the scheduler (the price: up to
//!    `busy_poll` of CPU time after each frame; `--busy-poll-us 0` turns
//!    it off);
//! 3. for every port, up to [`MAX_BURSTS_PER_ROUND`] bursts of up to
//!    [`BURST`] frames: complete partial checksums, then load the current
//!    published pipeline version **once per burst** (an `arc-swap` load:
//!    no lock; versions change only between bursts), read the clock once,
//!    process every frame with this worker's own context (caches, scratch
//!    buffers, counter shard — see `sluice_pipeline::Worker`), or hand it
//!    to the MAC-learning table in standalone mode (frames go through
//!    `process_burst_with`, staged so the burst's cache misses overlap);
//! 4. tell the output ports to send what the burst queued on them, hand
//!    the asynchronous messages to the agent, transmit what went through
//!    the arena, then let go of the version. Holding it through transmit
//!    is what lets a barrier promise that no frame decided by an older
//!    version leaves after the BARRIER_REPLY (transmitting never blocks and
//!    retries are capped, so this is short); the version is never held
//!    across `poll(2)` or `rx_burst`.
//!
//! One buffer from receive to transmit: received frames are not copied
//! into the pipeline (each `RxBuf` is lent to it for the burst,
//! `Pipeline::process_lent_with`), and a frame the pipeline emits is
//! written from that buffer straight into the output port's transmit ring
//! ([`BurstTx`], `Port::tx_queue`), with one kick per port at the end of
//! the burst (`Port::tx_flush`). For that the worker takes each output
//! port's lock the first time the burst emits to it, with `try_lock` only,
//! and keeps it until the kick. Where it cannot — another thread holds the
//! port (a worker receiving from it or sending to it, a PACKET_OUT), the
//! ring is full, or the burst already writes to [`MAX_DIRECT`] ports — the
//! frame is copied into a reusable per-worker arena ([`TxBatch`]) instead,
//! and the rest of the burst's frames for that port follow it there, so a
//! port's frames leave in the order they were emitted. The arena is sent
//! after the direct ports have been let go (blocking locks, bounded
//! retries); it is bounded ([`TX_ARENA_MAX`]) and not reallocated once
//! warm, so steady-state forwarding allocates nothing. A worker never
//! waits for a lock while it holds a port's; the cost is that a worker
//! receiving from a port another worker is writing to waits for the end of
//! that burst (microseconds).
//!
//! Every loop is bounded: a round does at most `ports × 8` bursts, transmit
//! retries are capped, and a descriptor that is "ready" with nothing to
//! read (an error state) makes the worker sleep 1 ms instead of spinning.

use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::Arc;
use std::time::Duration;

use std::sync::{MutexGuard, TryLockError};

use sluice_pipeline::ports::PortCounter;
use sluice_pipeline::{Pipeline, Tx, Worker, WorkerExt};
use sluice_ports::{Port, RxBuf, BURST};
use tracing::{debug, warn};

use crate::csum::complete_l4_checksum;
use crate::learn::{Forward, MacTable};
use crate::shared::{lock, PortSlot, Shared};
use crate::sys::{poll, PollEntry};

/// Bursts taken from one port per round before moving to the next (fairness).
pub const MAX_BURSTS_PER_ROUND: usize = 8;

/// Largest number of bytes one burst may emit (a burst flooded to many ports
/// is truncated beyond this and the excess counted as dropped).
pub const TX_ARENA_MAX: usize = 8 << 20;

/// Transmit attempts for frames a port did not take at once (ring full).
const TX_RETRIES: usize = 4;

/// Frames produced by one burst, waiting to be transmitted.
pub(crate) struct TxBatch {
    data: Vec<u8>,
    /// (port, start, end) into `data`, in emission order.
    frames: Vec<(u32, usize, usize)>,
    /// Distinct output ports of this burst, in first-use order.
    ports: Vec<u32>,
    /// Frames refused because the arena was full.
    pub overflow: u64,
}

impl TxBatch {
    pub(crate) fn new() -> TxBatch {
        TxBatch { data: Vec::new(), frames: Vec::new(), ports: Vec::new(), overflow: 0 }
    }

    fn clear(&mut self) {
        self.data.clear();
        self.frames.clear();
        self.ports.clear();
    }

    pub(crate) fn push(&mut self, port: u32, frame: &[u8]) {
        if self.data.len() + frame.len() > TX_ARENA_MAX {
            self.overflow += 1;
            return;
        }
        let start = self.data.len();
        self.data.extend_from_slice(frame);
        self.frames.push((port, start, self.data.len()));
        if !self.ports.contains(&port) {
            self.ports.push(port);
        }
    }

    /// Transmits everything and empties the batch; returns frames dropped.
    pub(crate) fn flush(&mut self, ports: &OutPorts) -> u64 {
        let mut dropped = 0u64;
        for &port_no in &self.ports {
            let slot = ports.slot(port_no);
            let mut chunk: [&[u8]; BURST] = [&[]; BURST];
            let mut n = 0;
            let frames = self.frames.iter().filter(|(p, _, _)| *p == port_no);
            let Some(slot) = slot else {
                dropped += frames.count() as u64;
                continue;
            };
            let mut port = lock(&slot.port);
            for &(_, s, e) in frames {
                chunk[n] = self.data.get(s..e).unwrap_or(&[]);
                n += 1;
                if n == BURST {
                    dropped += send(slot, &mut **port, &chunk[..n]);
                    n = 0;
                }
            }
            if n > 0 {
                dropped += send(slot, &mut **port, &chunk[..n]);
            }
        }
        self.clear();
        dropped
    }
}

/// Most output ports one burst writes to directly; frames for further
/// ports go through the arena.
pub const MAX_DIRECT: usize = 8;

/// The worker's own copy of the port table, for transmitting: refreshed
/// when [`Shared::ports_gen`] moves, so a burst finds its output ports
/// without the shared table's lock.
pub(crate) struct OutPorts {
    gen: u64,
    /// In port-number order.
    slots: Vec<Arc<PortSlot>>,
}

impl OutPorts {
    pub(crate) fn new() -> OutPorts {
        OutPorts { gen: u64::MAX, slots: Vec::new() }
    }

    pub(crate) fn refresh(&mut self, shared: &Shared) {
        if shared.ports_gen.load(Acquire) != self.gen {
            (self.gen, self.slots) = shared.port_slots();
        }
    }

    /// Port `no`, also when it is marked gone (sending to it then fails
    /// and is counted as a failed port's).
    fn slot(&self, no: u32) -> Option<&PortSlot> {
        let i = self.slots.binary_search_by_key(&no, |s| s.no).ok()?;
        self.slots.get(i).map(|s| &**s)
    }

    /// Port `no` unless it is gone.
    fn get(&self, no: u32) -> Option<&PortSlot> {
        self.slot(no).filter(|s| !s.is_gone())
    }
}

/// An output port of the current burst.
struct Held<'w> {
    no: u32,
    slot: Option<&'w PortSlot>,
    /// The port's lock while frames go straight into its ring.
    guard: Option<MutexGuard<'w, Box<dyn Port>>>,
    /// False once this port's frames go through the arena (lock taken by
    /// someone else, ring full, or a transmit error).
    direct: bool,
}

/// How one burst transmits (module docs, "one buffer from receive to
/// transmit"): straight into the output ports' rings where the worker can
/// take their locks without waiting, into the arena otherwise.
pub(crate) struct BurstTx<'w> {
    ports: &'w OutPorts,
    held: [Held<'w>; MAX_DIRECT],
    n_held: usize,
    arena: &'w mut TxBatch,
    /// Frames for ports that do not exist (any more) or failed.
    dropped: u64,
    /// Frames the pipeline output to ports it does not have (removed).
    pub(crate) no_port: u64,
}

impl<'w> BurstTx<'w> {
    pub(crate) fn new(ports: &'w OutPorts, arena: &'w mut TxBatch) -> BurstTx<'w> {
        BurstTx {
            ports,
            held: std::array::from_fn(|_| Held { no: 0, slot: None, guard: None, direct: false }),
            n_held: 0,
            arena,
            dropped: 0,
            no_port: 0,
        }
    }

    /// This burst's entry for `port`, made on first use; `None` when the
    /// port does not exist or the burst already holds [`MAX_DIRECT`] ports.
    fn held(&mut self, port: u32) -> Option<&mut Held<'w>> {
        let n = self.n_held;
        if let Some(i) = self.held[..n].iter().position(|h| h.no == port) {
            return self.held.get_mut(i);
        }
        let slot = self.ports.get(port)?;
        let h = self.held.get_mut(n)?;
        let guard = match slot.port.try_lock() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        };
        *h = Held { no: port, slot: Some(slot), direct: guard.is_some(), guard };
        self.n_held += 1;
        Some(h)
    }

    /// Kicks every port written directly and lets go of its lock; returns
    /// frames dropped (for ports that do not exist, or that failed).
    pub(crate) fn finish_direct(&mut self) -> u64 {
        for h in &mut self.held[..self.n_held] {
            if let (Some(mut g), Some(slot)) = (h.guard.take(), h.slot) {
                if let Err(e) = g.tx_flush() {
                    port_failed(slot, &e);
                }
            }
        }
        self.n_held = 0;
        std::mem::take(&mut self.dropped)
    }
}

impl Tx for BurstTx<'_> {
    fn no_port(&mut self, _port: u32) {
        self.no_port += 1;
    }

    fn transmit(&mut self, port: u32, _queue: Option<u32>, frame: &[u8]) {
        let Some(h) = self.held(port) else {
            if self.ports.get(port).is_some() {
                self.arena.push(port, frame);
            } else {
                self.dropped += 1;
            }
            return;
        };
        if let (true, Some(g), Some(slot)) = (h.direct, h.guard.as_mut(), h.slot) {
            match g.tx_queue(frame) {
                Ok(true) => return,
                // Ring full: this and the burst's later frames for the port
                // wait in the arena, sent after this burst's kick.
                Ok(false) => h.direct = false,
                Err(e) => {
                    port_failed(slot, &e);
                    slot.tx_failed.fetch_add(1, Relaxed);
                    h.direct = false;
                    self.dropped += 1;
                    return;
                }
            }
        }
        self.arena.push(port, frame);
    }
}

/// A transmit error: a port whose interface is gone is marked so.
fn port_failed(slot: &PortSlot, e: &std::io::Error) {
    if e.kind() == std::io::ErrorKind::NotFound {
        slot.mark_gone();
    }
    debug!(port = slot.no, "transmit failed: {e}");
}

/// Sends `frames` on `port`, retrying a few times when the ring is full;
/// returns how many were dropped.
pub(crate) fn send(slot: &PortSlot, port: &mut dyn Port, frames: &[&[u8]]) -> u64 {
    let mut sent = 0;
    let mut tries = 0;
    while sent < frames.len() && tries < TX_RETRIES {
        match port.tx_burst(&frames[sent..]) {
            Ok(0) => {
                tries += 1;
                std::thread::yield_now();
            }
            Ok(k) => sent += k.min(frames.len() - sent),
            Err(e) => {
                port_failed(slot, &e);
                break;
            }
        }
    }
    let dropped = (frames.len() - sent) as u64;
    if dropped > 0 {
        slot.tx_failed.fetch_add(dropped, Relaxed);
    }
    dropped
}

/// What MAC learning did with one frame.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Learned {
    /// Not received (the port is down or unknown; counted as the port's).
    NotReceived,
    /// Sent to its learned port or flooded.
    Forwarded,
    /// Dropped: its destination was learned on its ingress port.
    Dropped,
}

/// Standalone (fail-open) forwarding of one frame: counters of the
/// pipeline's ports are kept (in this worker's shard) as if the pipeline
/// had forwarded it, so port stats stay meaningful.
#[allow(clippy::too_many_arguments)] // one call site; a struct would only rename them
fn learn_forward(
    p: &Pipeline,
    w: &Worker,
    t: &mut MacTable,
    flood: &[u32],
    in_port: u32,
    frame: &[u8],
    now: u64,
    out: &mut BurstTx,
) -> Learned {
    let len = frame.len() as u64;
    match p.ports().get(in_port) {
        Some(e) if p_can_receive(&e.desc) => {
            e.count(w.shard(), PortCounter::RxPackets, 1);
            e.count(w.shard(), PortCounter::RxBytes, len);
        }
        Some(e) => {
            e.count(w.shard(), PortCounter::RxDropped, 1);
            return Learned::NotReceived;
        }
        None => return Learned::NotReceived,
    }
    let mut emit = |port: u32| {
        if !p.ports().can_forward(port) {
            return;
        }
        if let Some(e) = p.ports().get(port) {
            e.count(w.shard(), PortCounter::TxPackets, 1);
            e.count(w.shard(), PortCounter::TxBytes, len);
        }
        out.transmit(port, None, frame);
    };
    match t.decide(in_port, frame, now) {
        Forward::Port(port) => emit(port),
        Forward::Flood => {
            for &port in flood.iter().filter(|&&q| q != in_port) {
                emit(port);
            }
        }
        Forward::Drop => return Learned::Dropped,
    }
    Learned::Forwarded
}

fn p_can_receive(desc: &sluice_ofp::port::Port) -> bool {
    use sluice_ofp::port::config;
    desc.config & (config::PORT_DOWN | config::NO_RECV) == 0
}

/// One worker thread's loop; returns when the datapath stops.
pub(crate) fn run(id: usize, shared: Arc<Shared>, mut ctx: Worker) {
    let Some(inbox) = shared.inboxes.get(id) else { return };
    let mut ports: Vec<Arc<PortSlot>> = Vec::new();
    let mut set: Vec<PollEntry> = Vec::new();
    let mut fdless = false;
    let mut bufs = RxBuf::burst(BURST);
    let mut batch = TxBatch::new();
    let mut out = OutPorts::new();
    let mut flood: Vec<u32> = Vec::new();
    let timeout_ms = shared.poll_timeout.as_millis().clamp(1, 1000) as i32;
    let mut busy = false;
    // When the last frame came (`shared.now_ns()`).
    let mut last_rx = shared.now_ns();
    debug!(worker = id, "worker started");
    while !shared.stop.load(Acquire) {
        // How long to keep polling after the last frame; one relaxed load
        // per round: a configuration reload may change it.
        let spin_ns = shared.busy_poll_ns.load(Relaxed);
        let mut rebuild = false;
        if inbox.dirty.swap(false, Acquire) {
            ports.append(&mut lock(&inbox.pending));
            rebuild = true;
        }
        if ports.iter().any(|p| p.is_gone()) {
            ports.retain(|p| !p.is_gone());
            rebuild = true;
        }
        if rebuild {
            set = ports.iter().filter_map(|p| p.fd).map(PollEntry::readable).collect();
            fdless = ports.iter().any(|p| p.fd.is_none());
            inbox.load.store(ports.len(), Relaxed);
        }
        let timeout = if fdless { 1 } else { timeout_ms };
        // Busy: the last round received frames, so look again at once
        // instead of asking the kernel first (a poll syscall per round);
        // an empty round goes back to sleeping in poll.
        let ready = if busy {
            0
        } else if set.is_empty() {
            std::thread::sleep(Duration::from_millis(timeout as u64));
            0
        } else {
            match poll(&mut set, timeout) {
                Ok(n) => n,
                Err(e) => {
                    warn!(worker = id, "poll: {e}");
                    std::thread::sleep(Duration::from_millis(timeout as u64));
                    0
                }
            }
        };
        let round_start = shared.now_ns();
        let mut got = 0usize;
        for slot in &ports {
            for _ in 0..MAX_BURSTS_PER_ROUND {
                if slot.is_gone() {
                    break;
                }
                let rx = lock(&slot.port).rx_burst(&mut bufs);
                let n = match rx {
                    Ok(n) => n.min(bufs.len()),
                    Err(e) => {
                        warn!(port = slot.no, name = %slot.name, "receive failed, port removed: {e}");
                        slot.mark_gone();
                        shared.wake_control();
                        break;
                    }
                };
                if n == 0 {
                    break;
                }
                got += n;
                if slot.capturing.load(Relaxed) {
                    shared.capture_rx(slot.no, &bufs[..n]);
                }
                for b in bufs.iter_mut().take(n) {
                    if b.csum_partial() {
                        complete_l4_checksum(b.frame_mut());
                    }
                }
                out.refresh(&shared);
                let io = (&out, &mut batch);
                process_burst(&shared, &mut ctx, slot.no, &mut bufs[..n], io, &mut flood);
                if n < BURST {
                    break;
                }
            }
        }
        if ready > 0 && got == 0 {
            // A descriptor in an error state: do not spin on it.
            std::thread::sleep(Duration::from_millis(1));
        }
        // One clock read per empty round (its start, which also decides
        // whether to keep spinning), a second one after a round with frames.
        busy = if got > 0 {
            let end = shared.now_ns();
            last_rx = end;
            if let Some(st) = shared.workers.get(id) {
                st.note_round(end.saturating_sub(round_start), got as u64, &ctx.cache_stats());
            }
            true
        } else if ready == 0 && round_start.saturating_sub(last_rx) < spin_ns {
            // Busy-polling: look again without a syscall (module docs, step 2).
            std::hint::spin_loop();
            true
        } else {
            false
        };
    }
    debug!(worker = id, "worker stopped");
}

/// One burst from `in_port`: one version load, one clock read.
fn process_burst(
    shared: &Shared,
    ctx: &mut Worker,
    in_port: u32,
    bufs: &mut [RxBuf],
    (out, batch): (&OutPorts, &mut TxBatch),
    flood: &mut Vec<u32>,
) {
    let now = shared.now_ns();
    ctx.set_now(now);
    let standalone = shared.standalone.load(Relaxed);
    // This burst's version: the worker's read marker (see
    // `sluice_pipeline::publish`). It is held until the burst's output has
    // been handed to the ports, not just until the lookups are done: a
    // frame decided by a version is forwarded *with* that version, so a
    // BARRIER_REPLY, which waits until no worker holds an older version,
    // cannot go out while such a frame is still waiting to be sent. It is
    // let go before the next round's `poll(2)`, so an idle worker never
    // holds one, and on unwinding if the burst panics.
    let p = shared.published.load();
    let mut tx = BurstTx::new(out, batch);
    if standalone {
        flood.clear();
        flood.extend(p.ports().numbers().filter(|&n| n <= sluice_ports::spec::OFPP_MAX));
        let mut t = lock(&shared.learn);
        let (mut received, mut dropped) = (0u64, 0u64);
        for b in bufs.iter() {
            match learn_forward(&p, ctx, &mut t, flood, in_port, b.frame(), now, &mut tx) {
                Learned::NotReceived => {}
                Learned::Forwarded => received += 1,
                Learned::Dropped => (received, dropped) = (received + 1, dropped + 1),
            }
        }
        shared.note_learned(received, dropped);
    } else {
        // Staged (the burst's lookups overlap their cache misses), each
        // packet in its own receive buffer: no copy on the way in.
        p.process_lent_with(ctx, in_port, bufs, &mut tx);
    }
    // Counted before the ports are told to send: whoever sees a frame of
    // this burst on the wire also sees the burst in the counters. (Frames
    // queued directly sit in their port's ring until `finish_direct`, and
    // no other thread can kick that port while this burst holds it.)
    shared.note_burst(bufs.len() as u64);
    let missing = tx.finish_direct();
    shared.note_no_port(tx.no_port);
    drop(tx);
    if ctx.has_upcalls() {
        shared.push_async(ctx.take_async());
    }
    let overflow = std::mem::take(&mut batch.overflow);
    shared.note_dropped(batch.flush(out) + overflow + missing);
    drop(p);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::RawFd;
    use std::sync::Mutex;

    #[derive(Debug, PartialEq)]
    enum Ev {
        Queue(Vec<u8>),
        Flush,
    }

    /// A port with a transmit ring of `room` frames that records what the
    /// burst does to it; a flush empties the ring.
    struct Ring {
        log: Arc<Mutex<Vec<Ev>>>,
        room: usize,
        queued: usize,
        /// Every transmit fails as for a deleted interface.
        gone: bool,
    }

    impl Port for Ring {
        fn rx_burst(&mut self, _: &mut [RxBuf]) -> std::io::Result<usize> {
            Ok(0)
        }
        fn tx_burst(&mut self, frames: &[&[u8]]) -> std::io::Result<usize> {
            Ok(frames.len())
        }
        fn tx_queue(&mut self, frame: &[u8]) -> std::io::Result<bool> {
            if self.gone {
                return Err(std::io::Error::new(std::io::ErrorKind::NotFound, "gone"));
            }
            if self.queued == self.room {
                return Ok(false);
            }
            self.queued += 1;
            self.log.lock().unwrap().push(Ev::Queue(frame.to_vec()));
            Ok(true)
        }
        fn tx_flush(&mut self) -> std::io::Result<()> {
            self.queued = 0;
            self.log.lock().unwrap().push(Ev::Flush);
            Ok(())
        }
        fn link_up(&self) -> bool {
            true
        }
        fn name(&self) -> &str {
            "ring"
        }
        fn hw_addr(&self) -> [u8; 6] {
            [2, 0, 0, 0, 0, 9]
        }
        fn raw_fd(&self) -> Option<RawFd> {
            None
        }
    }

    /// Ports 1..=n, each with a ring of `room` frames, and their logs.
    fn ports(n: u32, room: usize) -> (OutPorts, Vec<Arc<Mutex<Vec<Ev>>>>) {
        let logs: Vec<_> = (0..n).map(|_| Arc::new(Mutex::new(Vec::new()))).collect();
        let slots = (1..=n)
            .zip(&logs)
            .map(|(no, log)| {
                let ring = Ring { log: log.clone(), room, queued: 0, gone: false };
                Arc::new(PortSlot::new(no, Box::new(ring)))
            })
            .collect();
        (OutPorts { gen: 0, slots }, logs)
    }

    fn arena_frames(b: &TxBatch, port: u32) -> Vec<Vec<u8>> {
        b.frames.iter().filter(|f| f.0 == port).map(|&(_, s, e)| b.data[s..e].to_vec()).collect()
    }

    #[test]
    fn burst_writes_straight_into_rings_and_kicks_each_port_once() {
        let (out, logs) = ports(2, 8);
        let mut arena = TxBatch::new();
        let mut tx = BurstTx::new(&out, &mut arena);
        tx.transmit(1, None, &[1]);
        tx.transmit(2, None, &[2]);
        tx.transmit(1, None, &[3]);
        // Held until the kick: nobody else can take the port meanwhile.
        assert!(out.slots[0].port.try_lock().is_err());
        assert_eq!(tx.finish_direct(), 0);
        drop(tx);
        assert!(out.slots[0].port.try_lock().is_ok(), "the burst let go of the port");
        assert_eq!(*logs[0].lock().unwrap(), [Ev::Queue(vec![1]), Ev::Queue(vec![3]), Ev::Flush]);
        assert_eq!(*logs[1].lock().unwrap(), [Ev::Queue(vec![2]), Ev::Flush]);
        assert!(arena.frames.is_empty(), "nothing was copied into the arena");
    }

    #[test]
    fn a_port_held_elsewhere_goes_through_the_arena_in_order() {
        let (out, logs) = ports(2, 8);
        let mut arena = TxBatch::new();
        let busy = out.slots[1].port.lock().unwrap();
        let mut tx = BurstTx::new(&out, &mut arena);
        tx.transmit(2, None, &[1]);
        tx.transmit(1, None, &[2]);
        tx.transmit(2, None, &[3]);
        tx.finish_direct();
        drop(tx);
        drop(busy);
        assert!(logs[1].lock().unwrap().is_empty(), "never waited for the held port");
        assert_eq!(arena_frames(&arena, 2), [vec![1], vec![3]]);
        assert_eq!(*logs[0].lock().unwrap(), [Ev::Queue(vec![2]), Ev::Flush]);
    }

    #[test]
    fn a_full_ring_sends_the_rest_of_the_burst_after_the_kick() {
        let (out, logs) = ports(1, 2);
        let mut arena = TxBatch::new();
        let mut tx = BurstTx::new(&out, &mut arena);
        for b in 1..=4u8 {
            tx.transmit(1, None, &[b]);
        }
        tx.finish_direct();
        drop(tx);
        // 3 did not fit; 4 follows it into the arena although the ring
        // might have had room again, so the port's order holds.
        assert_eq!(*logs[0].lock().unwrap(), [Ev::Queue(vec![1]), Ev::Queue(vec![2]), Ev::Flush]);
        assert_eq!(arena_frames(&arena, 1), [vec![3], vec![4]]);
    }

    #[test]
    fn a_failing_port_is_marked_gone_and_its_frame_counted() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let ring = Ring { log: log.clone(), room: 8, queued: 0, gone: true };
        let out = OutPorts { gen: 0, slots: vec![Arc::new(PortSlot::new(1, Box::new(ring)))] };
        let mut arena = TxBatch::new();
        let mut tx = BurstTx::new(&out, &mut arena);
        tx.transmit(1, None, &[1]);
        assert_eq!(tx.finish_direct(), 1);
        drop(tx);
        assert!(out.slots[0].is_gone());
        assert_eq!(out.slots[0].tx_failed.load(Relaxed), 1);
        assert!(!log.lock().unwrap().iter().any(|e| matches!(e, Ev::Queue(_))));
    }

    #[test]
    fn missing_ports_are_dropped_and_many_ports_spill_to_the_arena() {
        let n = MAX_DIRECT as u32 + 1;
        let (out, logs) = ports(n, 8);
        let mut arena = TxBatch::new();
        let mut tx = BurstTx::new(&out, &mut arena);
        tx.transmit(99, None, &[0]);
        for p in 1..=n {
            tx.transmit(p, None, &[p as u8]);
        }
        assert_eq!(tx.finish_direct(), 1, "the frame for port 99 is counted dropped");
        drop(tx);
        for (i, log) in logs.iter().enumerate().take(MAX_DIRECT) {
            assert_eq!(*log.lock().unwrap(), [Ev::Queue(vec![i as u8 + 1]), Ev::Flush]);
        }
        assert_eq!(arena_frames(&arena, n), [vec![n as u8]]);
    }

    #[test]
    fn batch_groups_by_port_in_order() {
        let mut b = TxBatch::new();
        b.push(2, &[1, 2]);
        b.push(1, &[3]);
        b.push(2, &[4]);
        assert_eq!(b.ports, vec![2, 1]);
        let f: Vec<&[u8]> =
            b.frames.iter().filter(|(p, _, _)| *p == 2).map(|&(_, s, e)| &b.data[s..e]).collect();
        assert_eq!(f, vec![&[1u8, 2][..], &[4u8][..]]);
        b.clear();
        assert!(b.frames.is_empty() && b.ports.is_empty() && b.data.is_empty());
    }

    #[test]
    fn batch_is_bounded() {
        let mut b = TxBatch::new();
        let big = vec![0u8; TX_ARENA_MAX / 2 + 1];
        b.push(1, &big);
        b.push(1, &big);
        assert_eq!(b.frames.len(), 1);
        assert_eq!(b.overflow, 1);
    }
}
