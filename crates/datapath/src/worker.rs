//! Worker threads: receive a burst, run it through the published pipeline
//! (no lock), transmit what came out.
//!
//! Each worker owns a set of ports for receiving (assigned by the control
//! thread through its [`Inbox`]). One round of the loop:
//! 1. pick up newly assigned ports and forget ports marked gone;
//! 2. `poll(2)` the ports' descriptors for at most `poll_timeout` (ports
//!    without a descriptor, e.g. pcap, make the timeout 1 ms) — skipped
//!    while busy: a round that received frames is followed at once by the
//!    next, without a syscall (NAPI-style; an empty round polls again);
//! 3. for every port, up to [`MAX_BURSTS_PER_ROUND`] bursts of up to
//!    [`BURST`] frames: complete partial checksums, then load the current
//!    published pipeline version **once per burst** (an `arc-swap` load:
//!    no lock; versions change only between bursts), read the clock once,
//!    process every frame with this worker's own context (caches, scratch
//!    buffers, counter shard — see `sluice_pipeline::Worker`), or hand it
//!    to the MAC-learning table in standalone mode (frames go through
//!    `process_burst_with`, staged so the burst's cache misses overlap);
//! 4. hand the asynchronous messages to the agent and transmit the burst's
//!    output, grouped per output port (`tx_burst` in chunks of up to 32),
//!    then let go of the version. Holding it through transmit is what lets
//!    a barrier promise that no frame decided by an older version leaves
//!    after the BARRIER_REPLY (`tx_burst` never blocks and retries are
//!    capped, so this is short); the version is never held across
//!    `poll(2)` or `rx_burst`.
//!
//! Received frames are not copied into the pipeline: each `RxBuf` is lent
//! to it for the burst (`Pipeline::process_lent_with`). Frames leaving the
//! pipeline are copied into one reusable per-worker
//! arena ([`TxBatch`]) because the pipeline lends them only for the
//! duration of the call; the arena is bounded ([`TX_ARENA_MAX`]) and is not
//! reallocated once warm, so steady-state forwarding allocates nothing.
//!
//! Every loop is bounded: a round does at most `ports × 8` bursts, transmit
//! retries are capped, and a descriptor that is "ready" with nothing to
//! read (an error state) makes the worker sleep 1 ms instead of spinning.

use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::Arc;
use std::time::Duration;

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
    pub(crate) fn flush(&mut self, shared: &Shared) -> u64 {
        let mut dropped = 0u64;
        for &port_no in &self.ports {
            let slot = shared.slot(port_no);
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
                    dropped += send(&slot, &mut **port, &chunk[..n]);
                    n = 0;
                }
            }
            if n > 0 {
                dropped += send(&slot, &mut **port, &chunk[..n]);
            }
        }
        self.clear();
        dropped
    }
}

impl Tx for TxBatch {
    fn transmit(&mut self, port: u32, _queue: Option<u32>, frame: &[u8]) {
        self.push(port, frame);
    }
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
                if e.kind() == std::io::ErrorKind::NotFound {
                    slot.mark_gone();
                }
                debug!(port = slot.no, "transmit failed: {e}");
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
    out: &mut TxBatch,
) {
    let len = frame.len() as u64;
    match p.ports().get(in_port) {
        Some(e) if p_can_receive(&e.desc) => {
            e.count(w.shard(), PortCounter::RxPackets, 1);
            e.count(w.shard(), PortCounter::RxBytes, len);
        }
        Some(e) => {
            e.count(w.shard(), PortCounter::RxDropped, 1);
            return;
        }
        None => return,
    }
    let mut emit = |port: u32| {
        if !p.ports().can_forward(port) {
            return;
        }
        if let Some(e) = p.ports().get(port) {
            e.count(w.shard(), PortCounter::TxPackets, 1);
            e.count(w.shard(), PortCounter::TxBytes, len);
        }
        out.push(port, frame);
    };
    match t.decide(in_port, frame, now) {
        Forward::Port(port) => emit(port),
        Forward::Flood => {
            for &port in flood.iter().filter(|&&q| q != in_port) {
                emit(port);
            }
        }
        Forward::Drop => {}
    }
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
    let mut flood: Vec<u32> = Vec::new();
    let timeout_ms = shared.poll_timeout.as_millis().clamp(1, 1000) as i32;
    let mut busy = false;
    debug!(worker = id, "worker started");
    while !shared.stop.load(Acquire) {
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
                for b in bufs.iter_mut().take(n) {
                    if b.csum_partial() {
                        complete_l4_checksum(b.frame_mut());
                    }
                }
                process_burst(&shared, &mut ctx, slot.no, &mut bufs[..n], &mut batch, &mut flood);
                if n < BURST {
                    break;
                }
            }
        }
        if ready > 0 && got == 0 {
            // A descriptor in an error state: do not spin on it.
            std::thread::sleep(Duration::from_millis(1));
        }
        busy = got > 0;
    }
    debug!(worker = id, "worker stopped");
}

/// One burst from `in_port`: one version load, one clock read.
fn process_burst(
    shared: &Shared,
    ctx: &mut Worker,
    in_port: u32,
    bufs: &mut [RxBuf],
    batch: &mut TxBatch,
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
    if standalone {
        flood.clear();
        flood.extend(p.ports().numbers().filter(|&n| n <= sluice_ports::spec::OFPP_MAX));
        let mut t = lock(&shared.learn);
        for b in bufs.iter() {
            learn_forward(&p, ctx, &mut t, flood, in_port, b.frame(), now, batch);
        }
    } else {
        // Staged (the burst's lookups overlap their cache misses), each
        // packet in its own receive buffer: no copy on the way in.
        p.process_lent_with(ctx, in_port, bufs, batch);
    }
    if ctx.has_upcalls() {
        shared.push_async(ctx.take_async());
    }
    // Counted before transmitting: whoever sees a frame of this burst on
    // the wire also sees the burst in the counters.
    shared.note_burst(bufs.len() as u64);
    let overflow = std::mem::take(&mut batch.overflow);
    shared.note_dropped(batch.flush(shared) + overflow);
    drop(p);
}

#[cfg(test)]
mod tests {
    use super::*;

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
