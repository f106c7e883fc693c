//! Packet processing: tables, instructions, the action set, actions,
//! groups, meters, outputs and packet-ins (OpenFlow 1.3.5 §5.1–§5.12).
//!
//! One packet at a time, straight from the spec:
//! 1. A packet received on a port that is down or `NO_RECV` is dropped
//!    (counted as `rx_dropped`).
//! 2. From table 0: look up the highest-priority matching entry; none and
//!    no table-miss entry means drop. Counters of the table and the entry
//!    are updated (unless the entry has `NO_PKT_COUNTS`/`NO_BYT_COUNTS`).
//! 3. The entry's instructions run in the spec's order: meter, apply-
//!    actions, clear-actions, write-actions, write-metadata, goto-table.
//!    Without goto-table, the accumulated action set executes, in the
//!    spec's order (§5.10): copy-TTL-in, pops, push-MPLS, push-PBB,
//!    push-VLAN, copy-TTL-out, decrements, sets, set-queue, then group (if
//!    any) else output.
//! 4. After any action that changes headers the packet is re-parsed, so
//!    later matches (goto-table) and actions see the new packet.
//!
//! Two walks, one meaning: the reference walk (`reference.rs`), for the
//! oracle configuration and every trace, scans each table linearly and
//! interprets the entry's `Instruction`s and `Action`s straight from the
//! spec (`ActionSet`, [`Pipeline::action`], `edit.rs`); the fast walk
//! here, for every other configuration, looks up through the index or
//! compiled code and the caches and runs the ops the flow-mod lowered the
//! instructions to (`FlowEntry::ops`, `lower.rs`) with the core's deferred
//! set, and so do cache entries' composed programs. The differential
//! tests hold the two to the same results; ports, groups, meters and
//! packet-ins (below) serve both.
//!
//! Packet-ins carry the reason (`NO_MATCH` when the entry was a table-miss
//! entry, `ACTION` otherwise, `INVALID_TTL` for TTL expiry), the table id,
//! the entry's cookie and the pipeline fields as the match. Data is cut to
//! the output action's `max_len` (the switch's `miss_send_len` for
//! invalid-TTL packet-ins) and the whole frame is kept in a bounded buffer
//! pool, unless `max_len` is `OFPCML_NO_BUFFER` or the pool is full.

use crate::edit;
use crate::group::select_bucket;
use crate::lower::lower;
use crate::meter::Verdict;
use crate::ports::PortCounter;
use crate::table::{FlowEntry, FlowTable};
use crate::tally::{Shard, Tally};
use crate::{CacheMode, Datapath, Pipeline};
use sluice_core::cache::{CacheStats, Chain, Hop, Item, Recorder, Resolved, NO_PROG};
use sluice_core::graph::{Next, Node};
use sluice_core::guard::{Answers, Chain as GuardChain, GuardInput};
use sluice_core::op::{DeferredSet, Edited, Op};
pub use sluice_core::pkt::{Pkt, MAX_FRAME};
use sluice_core::prefetch;
use sluice_core::upcall::{Reason, Upcall};
use sluice_ofp::action::Action;
use sluice_ofp::consts::{port_no, OFPCML_NO_BUFFER, OFP_NO_BUFFER};
use sluice_ofp::error::{ErrorCode, Result};
use sluice_ofp::group::GroupType;
use sluice_ofp::instruction::Instruction;
use sluice_ofp::message::{packet_in_reason, Message, PacketIn, PacketOut};
use sluice_ofp::oxm::{FieldBytes, FieldId, Match, Oxm};
use sluice_packet::key::{FlowKey, FlowMask, FIXED_LAYOUT};
use sluice_packet::parse::{refresh_metadata, Meta};
use std::sync::Arc;

/// Where transmitted frames go.
pub trait Tx {
    /// Send `frame` on OpenFlow port `port` (a physical port or LOCAL),
    /// on `queue` if a SET_QUEUE preceded the output.
    fn transmit(&mut self, port: u32, queue: Option<u32>, frame: &[u8]);
}

impl<F: FnMut(u32, Option<u32>, &[u8])> Tx for F {
    fn transmit(&mut self, port: u32, queue: Option<u32>, frame: &[u8]) {
        self(port, queue, frame)
    }
}

/// The bounded pool of packets buffered for PACKET_IN.
#[derive(Debug, Default)]
pub struct Buffers {
    slots: Vec<Option<(u32, u32, Vec<u8>)>>,
    next_id: u32,
}

impl Buffers {
    pub fn new(n: usize) -> Self {
        Buffers { slots: vec![None; n], next_id: 0 }
    }

    /// Store a frame; returns its buffer id, or `None` if buffering is off.
    /// The oldest buffer in the slot is overwritten (the pool is a ring).
    pub fn store(&mut self, in_port: u32, frame: &[u8]) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1) % (OFP_NO_BUFFER - 1);
        let slot = id as usize % self.slots.len();
        self.slots[slot] = Some((id, in_port, frame.to_vec()));
        Some(id)
    }

    /// Take a buffered frame (a buffer can be used once).
    pub fn take(&mut self, id: u32) -> Option<(u32, Vec<u8>)> {
        if self.slots.is_empty() {
            return None;
        }
        let slot = id as usize % self.slots.len();
        match &self.slots[slot] {
            Some((i, _, _)) if *i == id => self.slots[slot].take().map(|(_, p, d)| (p, d)),
            _ => None,
        }
    }
}

/// Reused per-packet storage (no allocation once warmed up).
#[derive(Debug, Default)]
pub struct Scratch {
    /// Free packets (the packet and its group-bucket copies), boxed so
    /// taking one and giving it back moves a pointer, not the key.
    #[allow(clippy::vec_box)]
    pool: Vec<Box<Pkt>>,
    /// The packets of the burst being staged (empty between bursts).
    #[allow(clippy::vec_box)]
    burst: Vec<Box<Pkt>>,
    /// Trace being recorded, if any.
    pub(crate) trace: Option<Vec<TraceEvent>>,
}

/// Most frames one stage of [`Pipeline::process_burst_with`] holds.
pub const BURST: usize = 32;

impl Scratch {
    fn take_pkt(&mut self) -> Box<Pkt> {
        self.pool.pop().unwrap_or_default()
    }
}

/// The value of OXM field `f` in `pkt`'s key (which must be fresh).
pub(crate) fn field(pkt: &Pkt, f: FieldId) -> u128 {
    debug_assert!(!pkt.stale, "key read while it lags behind the bytes");
    FIXED_LAYOUT.get(&pkt.key, crate::oxm_field::field(f)).to_u128()
}

/// A worker's caches, holding the OpenFlow front end's composed programs.
pub(crate) type Caches = sluice_core::cache::Caches<Program>;

/// A cache entry's replay of a packet's whole way through the tables
/// (see [`Pipeline::compose`]): the counters to bump and the actions to
/// run, in the order the walk would. The counters are the entries' own
/// cells (shared), so flow, table and idle-time statistics stay exact.
/// Kept by the worker's cache (`sluice_core::cache`), run from there by
/// id.
pub(crate) type Program = [Step];

/// Start loading the counter cells `prog` will bump.
fn prefetch_counters(prog: &Program, s: Shard) {
    for step in prog {
        if let Step::Hit { entry, .. } = step {
            entry.prefetch(s);
        }
    }
}

#[derive(Debug)]
pub(crate) enum Step {
    /// A lookup hit an entry: the table's lookup and match counters, the
    /// entry's counters (honouring its `NO_*_COUNTS` flags).
    Hit { table: Arc<Tally>, entry: Tally, flags: u16 },
    /// A lookup missed without a table-miss entry: count it, drop.
    Miss { table: Arc<Tally> },
    /// A lookup missed and the graph goes on (not OpenFlow): count it.
    MissOn { table: Arc<Tally> },
    /// A write-metadata instruction.
    Metadata { value: u64, mask: u64 },
    /// One action, lowered to the core's op (`lower.rs`), with the
    /// context of the entry it came from.
    Act { op: Op, ctx: Ctx },
}

/// The OpenFlow message for an upcall: a `ToController` is a PACKET_IN
/// whose match carries the pipeline fields (`in_port`; `in_phy_port` when
/// it differs; `metadata` and `tunnel_id` when non-zero).
pub(crate) fn message_of(u: Upcall) -> Message {
    match u {
        Upcall::ToController { reason, table, cookie, buffer_id, total_len, data, meta } => {
            let b = |f: FieldId, v: u128| Oxm::Basic {
                field: f,
                value: FieldBytes::from_u128(v, f.len()),
                mask: None,
            };
            let mut m = Match { oxms: vec![b(FieldId::InPort, meta.in_port.into())] };
            if meta.in_phy_port != meta.in_port {
                m.oxms.push(b(FieldId::InPhyPort, meta.in_phy_port.into()));
            }
            if meta.metadata != 0 {
                m.oxms.push(b(FieldId::Metadata, meta.metadata.into()));
            }
            if meta.tunnel_id != 0 {
                m.oxms.push(b(FieldId::TunnelId, meta.tunnel_id.into()));
            }
            Message::PacketIn(PacketIn {
                buffer_id: buffer_id.unwrap_or(OFP_NO_BUFFER),
                total_len,
                reason: reason_code(reason),
                table_id: table,
                cookie,
                r#match: m,
                data,
            })
        }
    }
}

/// OpenFlow's `ofp_packet_in_reason` for an upcall's reason.
fn reason_code(r: Reason) -> u8 {
    match r {
        Reason::NoMatch => packet_in_reason::NO_MATCH,
        Reason::Action => packet_in_reason::ACTION,
        Reason::InvalidTtl => packet_in_reason::INVALID_TTL,
    }
}

/// A guard's position, as cache entries record it: table, entry position
/// and index in the entry's guards (stable within a flow generation, which
/// is all a cache entry lives).
pub(crate) fn tag(table: u8, entry: usize, guard: usize) -> u64 {
    (u64::from(table) << 56) | ((entry as u64 & 0xff_ffff_ffff) << 16) | (guard as u64 & 0xffff)
}

/// The inverse of [`tag`].
fn untag(t: u64) -> (u8, usize, usize) {
    ((t >> 56) as u8, ((t >> 16) & 0xff_ffff_ffff) as usize, (t & 0xffff) as usize)
}

/// Why a packet is on its way to the controller.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ctx {
    pub(crate) table_id: u8,
    pub(crate) cookie: u64,
    pub(crate) reason: Reason,
    /// Group chain depth left.
    pub(crate) depth: usize,
    /// Interpret the OpenFlow actions straight from the spec (the
    /// reference walk, `reference.rs`) rather than run their lowered ops.
    pub(crate) spec: bool,
}

/// One step of a packet's way through the pipeline, recorded by
/// [`Pipeline::trace`] (like `ovs-appctl ofproto/trace`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// Looked up `table`; `entry` is the hit entry's (priority, cookie,
    /// match) or `None` for a miss without a table-miss entry.
    Lookup {
        table: u8,
        entry: Option<(u16, u64, sluice_ofp::oxm::Match)>,
    },
    Instruction(Instruction),
    Meter {
        meter: u32,
        verdict: Verdict,
    },
    Group {
        group: u32,
        buckets: Vec<usize>,
    },
    /// The action set executed at the end of the pipeline.
    ActionSet(Vec<Action>),
    Output {
        port: u32,
    },
    PacketIn {
        reason: u8,
        table: u8,
    },
    Drop(&'static str),
}

/// The outcome of one action on a packet.
pub(crate) enum Flow {
    Continue,
    /// The packet is gone (dropped by a meter, TTL expiry).
    Stop,
}

/// One forwarding thread's private state: the clock reading of its
/// current burst, packet buffers, caches, the asynchronous messages its
/// packets produced and the counter shard it writes. Made by
/// [`Pipeline::worker`]; used with [`Pipeline::process_with`] on the
/// pipeline or any published copy of it.
#[derive(Debug)]
pub struct Worker {
    pub(crate) shard: Shard,
    pub(crate) now_ns: u64,
    pub(crate) scratch: Scratch,
    pub(crate) cache: Caches,
    /// Upcalls of this worker's packets, neutral (`sluice_core::upcall`),
    /// turned into OpenFlow messages when taken.
    pub(crate) async_out: Vec<Upcall>,
}

impl Worker {
    pub(crate) fn new(shard: Shard) -> Worker {
        Worker {
            shard,
            now_ns: 0,
            scratch: Scratch::default(),
            cache: Caches::default(),
            async_out: Vec::new(),
        }
    }

    /// Move this worker's clock (never backwards): meters and idle times
    /// use it. Call once per burst.
    pub fn set_now(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
    }

    /// Take the asynchronous messages (PACKET_IN) queued by this worker's
    /// packets, oldest first.
    pub fn take_async(&mut self) -> Vec<Message> {
        self.async_out.drain(..).map(message_of).collect()
    }

    /// Whether packets queued asynchronous messages.
    pub fn has_async(&self) -> bool {
        !self.async_out.is_empty()
    }

    /// This worker's cache hits and misses.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats
    }

    /// The counter shard this worker writes.
    pub fn shard(&self) -> Shard {
        self.shard
    }

    /// Record a trace event; `e` is only built when tracing.
    #[inline]
    pub(crate) fn note(&mut self, e: impl FnOnce() -> TraceEvent) {
        if let Some(t) = &mut self.scratch.trace {
            t.push(e());
        }
    }
}

impl Pipeline {
    /// Run one frame received on `in_port` through the pipeline, with the
    /// owner's worker context (asynchronous messages go to
    /// [`Pipeline::take_async`]).
    pub fn process(&mut self, in_port: u32, frame: &[u8], tx: &mut dyn Tx) {
        self.with_local(|p, w| p.process_with(w, in_port, frame, tx));
    }

    /// Run a burst of frames received on `in_port`, in order (staged, see
    /// [`Pipeline::process_burst_with`]).
    pub fn process_burst(&mut self, in_port: u32, frames: &[&[u8]], tx: &mut dyn Tx) {
        self.with_local(|p, w| p.process_burst_with(w, in_port, frames, tx));
    }

    /// Runs `f` with the owner's worker context at the pipeline's clock,
    /// then moves what it queued to the pipeline's queue.
    fn with_local<R>(&mut self, f: impl FnOnce(&Pipeline, &mut Worker) -> R) -> R {
        self.settle();
        let mut w = self.local.take().unwrap_or_else(|| Box::new(Worker::new(Shard::OWNER)));
        w.set_now(self.now_ns);
        let r = f(self, &mut w);
        self.async_out.extend(w.async_out.drain(..).map(message_of));
        self.local = Some(w);
        r
    }

    /// Run a burst of frames received on `in_port` with a worker's context,
    /// in stages over up to [`BURST`] frames at a time, so the cache misses
    /// of different packets overlap instead of queueing:
    /// 1. start loading every frame; copy and parse each;
    /// 2. hash each key for the exact cache and start loading its slot;
    /// 3. find each packet's first hops (exact cache, megaflow cache, or
    ///    with caches off the table-0 lookup) and start loading the cache
    ///    item (composed program) or the entry hit;
    /// 4. start loading each item's program;
    /// 5. start loading the counter cells each program or entry bumps
    ///    (and an entry's ops);
    /// 6. run each packet, in order, exactly as [`Pipeline::process_with`]
    ///    would (cache misses take the recording slow path then).
    ///
    /// Same results as calling `process_with` per frame: processing never
    /// changes the tables, so looking up every packet before running the
    /// first gives the same entries; meters, counters and packet-ins still
    /// happen packet by packet in stage 6. Only cache statistics can differ
    /// (a flow's second packet in one burst misses where one at a time it
    /// would hit the entry the first installed).
    pub fn process_burst_with(
        &self,
        w: &mut Worker,
        in_port: u32,
        frames: &[&[u8]],
        tx: &mut dyn Tx,
    ) {
        if self.is_oracle(w) {
            // The reference walks one packet at a time.
            for f in frames {
                self.process_with(w, in_port, f, tx);
            }
            return;
        }
        for chunk in frames.chunks(BURST) {
            self.stage_burst(w, in_port, chunk, tx);
        }
    }

    /// One stage-by-stage burst of at most [`BURST`] frames.
    fn stage_burst(&self, w: &mut Worker, in_port: u32, frames: &[&[u8]], tx: &mut dyn Tx) {
        let n = frames.len().min(BURST);
        let frames = &frames[..n];
        match self.ports.get(in_port) {
            Some(p) => {
                if p.desc.config
                    & (sluice_ofp::port::config::PORT_DOWN | sluice_ofp::port::config::NO_RECV)
                    != 0
                {
                    p.count(w.shard, PortCounter::RxDropped, n as u64);
                    return;
                }
                p.count(w.shard, PortCounter::RxPackets, n as u64);
                let bytes = frames.iter().map(|f| f.len() as u64).sum();
                p.count(w.shard, PortCounter::RxBytes, bytes);
            }
            None if in_port > port_no::MAX => {}
            None => return,
        }
        for f in frames {
            prefetch(f.as_ptr());
        }
        let meta = Meta { in_port, in_phy_port: in_port, metadata: 0, tunnel_id: 0 };
        let mut pkts = std::mem::take(&mut w.scratch.burst);
        let mut loaded = [false; BURST];
        for (f, ok) in frames.iter().zip(loaded.iter_mut()) {
            let mut p = w.scratch.take_pkt();
            *ok = p.load(f, meta);
            pkts.push(p);
        }
        let mode = self.cfg.cache;
        // The cache is set apart for the burst, so a hit's program can be
        // run straight from it while the worker is borrowed mutably.
        let mut cache = std::mem::take(&mut w.cache);
        let mut hashes = [0u64; BURST];
        if mode == CacheMode::On {
            for ((p, ok), h) in pkts.iter().zip(&loaded).zip(hashes.iter_mut()) {
                if *ok {
                    *h = cache.exact_hash_prefetch(&p.key);
                }
            }
        }
        let mut hops: [Option<Resolved>; BURST] = [None; BURST];
        for (((p, ok), h), hop) in pkts.iter().zip(&loaded).zip(&hashes).zip(hops.iter_mut()) {
            if *ok {
                *hop = self.first_hops(&mut cache, &p.key, *h);
                match hop.as_ref() {
                    // Its item's slot first; the program it points to in
                    // the next stage (reading the slot here would wait for
                    // it: the slab of a large cache is mostly not cached).
                    Some(r) if r.prog != NO_PROG => cache.prefetch_item(r.prog),
                    Some(r) => {
                        if let Some(e) = self.first_entry(&r.chain) {
                            prefetch(e);
                        }
                    }
                    None => {}
                }
            }
        }
        for hop in hops.iter().take(n).flatten() {
            if let Some(prog) = cache.program(hop.prog) {
                prefetch(prog.as_ptr());
            }
        }
        // Only a packet that takes the slow path installs (a miss, or a hit
        // whose recorded guard results changed): without one, nothing the
        // burst resolved can be replaced before it runs.
        let pin = cache.has_guarded_items()
            || hops.iter().zip(&loaded).take(n).any(|(h, ok)| *ok && h.is_none());
        for hop in hops.iter().take(n).flatten() {
            if pin && hop.prog != NO_PROG {
                cache.pin(hop.prog);
            }
            match cache.program(hop.prog) {
                Some(prog) => prefetch_counters(prog, w.shard),
                None => {
                    if let Some(e) = self.first_entry(&hop.chain) {
                        e.stats.prefetch(w.shard);
                        prefetch(Arc::as_ptr(&e.ops));
                    }
                }
            }
        }
        for ((p, ok), hop) in pkts.iter_mut().zip(&loaded).zip(&hops) {
            if !*ok {
                w.note(|| TraceEvent::Drop("frame larger than the packet buffer"));
                continue;
            }
            match hop {
                Some(r) => {
                    if let Some(fresh) = self.recheck_guards(&mut cache, r.prog, p) {
                        let primed = Some(Box::new(Answers::primed(fresh)));
                        self.record_walk(w, &mut cache, p, tx, primed);
                        continue;
                    }
                    match cache.program(r.prog) {
                        Some(prog) => self.run_program(w, p, prog, tx),
                        None => self.walk(w, &mut cache, p, tx, Some(&r.chain), None),
                    }
                }
                None => self.record_walk(w, &mut cache, p, tx, None),
            }
        }
        for hop in hops.iter().take(n).flatten().filter(|h| pin && h.prog != NO_PROG) {
            cache.unpin(hop.prog);
        }
        w.cache = cache;
        w.scratch.pool.append(&mut pkts);
        w.scratch.burst = pkts;
    }

    /// The first hops of a packet with `key` without running it: a cache
    /// hit's chain, or with caches off the table-0 lookup as a one-hop
    /// chain (`None`: a cache miss, for the recording slow path).
    #[inline]
    fn first_hops(&self, cache: &mut Caches, key: &FlowKey, exact_hash: u64) -> Option<Resolved> {
        let gen = self.flow_gen;
        match self.cfg.cache {
            CacheMode::Off => {
                let t = self.tables.first()?;
                if t.has_guards() || !self.graph.is_plain() {
                    // Guards run in packet order, in the run stage, and a
                    // graph may start elsewhere than table 0: no lookup
                    // ahead of time (an empty chain: all live).
                    return Some(Resolved { chain: Chain::default(), prog: NO_PROG });
                }
                let i = match self.cfg.datapath {
                    Datapath::Reference => t.lookup(key),
                    _ => {
                        let mut unused_wc = FlowMask::ZERO;
                        t.lookup_fast(key, &mut unused_wc)
                    }
                };
                let mut chain = Chain::default();
                chain.push(Hop { table: 0, entry: i.map_or(Hop::NO_ENTRY, |i| i as u32) });
                Some(Resolved { chain, prog: NO_PROG })
            }
            CacheMode::On => match cache.lookup_exact_hashed(key, exact_hash, gen) {
                Some(r) => Some(r),
                None => {
                    let r = cache.lookup_megaflow(key, gen)?;
                    cache.promote(key, &r, gen);
                    Some(r)
                }
            },
            CacheMode::Megaflow => cache.lookup_megaflow(key, gen),
        }
    }

    /// The entry a chain's first hop names, if any.
    #[inline]
    fn first_entry(&self, c: &Chain) -> Option<&crate::table::FlowEntry> {
        let h = c.hops().first()?;
        self.tables.get(usize::from(h.table))?.entries().get(h.entry as usize)
    }

    /// Run one frame received on `in_port` through the pipeline with a
    /// worker's context: `&self`, so any number of workers may share one
    /// (published) pipeline. Counters go to the worker's shard, packet-ins
    /// to its queue ([`Worker::take_async`]).
    pub fn process_with(&self, w: &mut Worker, in_port: u32, frame: &[u8], tx: &mut dyn Tx) {
        match self.ports.get(in_port) {
            Some(p) => {
                if p.desc.config
                    & (sluice_ofp::port::config::PORT_DOWN | sluice_ofp::port::config::NO_RECV)
                    != 0
                {
                    p.count(w.shard, PortCounter::RxDropped, 1);
                    return;
                }
                p.count(w.shard, PortCounter::RxPackets, 1);
                p.count(w.shard, PortCounter::RxBytes, frame.len() as u64);
            }
            // Reserved ports (LOCAL, CONTROLLER) may inject packets too.
            None if in_port > port_no::MAX => {}
            None => return,
        }
        let meta = Meta { in_port, in_phy_port: in_port, metadata: 0, tunnel_id: 0 };
        let mut pkt = w.scratch.take_pkt();
        if pkt.load(frame, meta) {
            self.run_tables(w, &mut pkt, tx);
        } else {
            w.note(|| TraceEvent::Drop("frame larger than the packet buffer"));
        }
        w.scratch.pool.push(pkt);
    }

    /// Run the walk from the graph's start: through the caches when they are
    /// on (see `cache.rs`), else straight through the lookups.
    fn run_tables(&self, w: &mut Worker, pkt: &mut Pkt, tx: &mut dyn Tx) {
        // Set apart while the packet runs (see `stage_burst`).
        let mut cache = std::mem::take(&mut w.cache);
        self.run_tables_with(w, &mut cache, pkt, tx);
        w.cache = cache;
    }

    fn run_tables_with(&self, w: &mut Worker, cache: &mut Caches, pkt: &mut Pkt, tx: &mut dyn Tx) {
        if self.is_oracle(w) {
            self.ref_walk(w, pkt, tx);
            return;
        }
        let mode = self.cfg.cache;
        if mode == CacheMode::Off {
            self.walk(w, cache, pkt, tx, None, None);
            return;
        }
        let gen = self.flow_gen;
        let mut hit = None;
        if mode == CacheMode::On {
            hit = cache.lookup_exact(&pkt.key, gen);
        }
        if hit.is_none() {
            hit = cache.lookup_megaflow(&pkt.key, gen);
            if let (Some(r), CacheMode::On) = (&hit, mode) {
                cache.promote(&pkt.key, r, gen);
            }
        }
        match hit {
            Some(r) => {
                if let Some(fresh) = self.recheck_guards(cache, r.prog, pkt) {
                    self.record_walk(w, cache, pkt, tx, Some(Box::new(Answers::primed(fresh))));
                    return;
                }
                match cache.program(r.prog) {
                    Some(prog) => self.run_program(w, pkt, prog, tx),
                    None => self.walk(w, cache, pkt, tx, Some(&r.chain), None),
                }
            }
            None => self.record_walk(w, cache, pkt, tx, None),
        }
    }

    /// A cache hit's guard check: re-runs the guards entry item `id`'s walk
    /// recorded, in order (see `sluice_core::guard`). `None` when every
    /// result is the recorded one (or nothing was recorded); otherwise the
    /// results computed, to prime the slow path.
    #[inline]
    fn recheck_guards(&self, cache: &mut Caches, id: u32, pkt: &Pkt) -> Option<GuardChain> {
        if !cache.has_guarded_items() {
            return None;
        }
        self.recheck_recorded(cache, id, pkt)
    }

    /// [`Self::recheck_guards`] once some item holds guard results (kept
    /// out of the hit path of a pipeline without guards).
    #[inline(never)]
    fn recheck_recorded(&self, cache: &mut Caches, id: u32, pkt: &Pkt) -> Option<GuardChain> {
        let recorded = *cache.guard_chain(id)?;
        cache.stats.guard_rechecks += 1;
        let input = GuardInput { frame: pkt.data(), in_port: pkt.meta.in_port };
        let find = |tag: u64| {
            let (table, entry, index) = untag(tag);
            let e = self.tables.get(usize::from(table))?.entries().get(entry)?;
            e.guards.as_slice().get(index).map(|g| &**g)
        };
        let mut fresh = GuardChain::default();
        if Answers::recheck(&recorded, find, &input, &mut fresh) {
            return None;
        }
        cache.stats.guard_changed += 1;
        Some(fresh)
    }

    /// The slow path of a cache miss: walk the tables recording the
    /// lookups, then install the entry (see `cache.rs`).
    fn record_walk(
        &self,
        w: &mut Worker,
        cache: &mut Caches,
        pkt: &mut Pkt,
        tx: &mut dyn Tx,
        answers: Option<Box<Answers>>,
    ) {
        let (mode, gen) = (self.cfg.cache, self.flow_gen);
        // The walk may rewrite the packet's key: the recorder keeps the
        // one the cache entry is for.
        let mut rec = Recorder::new(pkt.key, answers);
        self.walk(w, cache, pkt, tx, None, Some(&mut rec));
        if rec.chain.is_empty() || rec.guard_overflow {
            cache.stats.uncacheable += 1;
            return;
        }
        cache.stats.installs += 1;
        let composed = self.compose(&rec.chain);
        if composed.is_some() {
            cache.stats.composed += 1;
        }
        let prog = match (composed, rec.guard_chain()) {
            (None, None) => NO_PROG,
            (Some(p), None) => cache.add_program(p),
            (p, g) => cache.add_item(Item { prog: p, guards: g.map(Box::new) }),
        };
        let res = Resolved { chain: rec.chain, prog };
        if mode == CacheMode::On {
            cache.install_exact(&rec.key, res, gen);
        }
        cache.install_megaflow(&rec.key, &rec.wc, res, gen);
        if prog != NO_PROG {
            cache.drop_if_unused(prog);
        }
    }

    /// The context actions of entry `e` of `table` run in (packet-in
    /// reason and cookie, group depth).
    pub(crate) fn entry_ctx(&self, table: u8, e: &FlowEntry) -> Ctx {
        Ctx {
            table_id: table,
            cookie: e.cookie,
            reason: if e.is_table_miss() { Reason::NoMatch } else { Reason::Action },
            depth: self.cfg.max_group_depth,
            spec: false,
        }
    }

    /// The program that replays a packet's whole way through the tables
    /// along `chain`, or `None` when the chain does not cover it (recording
    /// stopped before the last lookup) or a meter instruction is on the
    /// way (a meter may drop or remark depending on time, and the walk
    /// keeps that live). Built from the entries as they are now; the cache
    /// entry holding it is dropped with the flow generation.
    fn compose(&self, chain: &Chain) -> Option<Box<Program>> {
        let graph = &*self.graph;
        let mut steps = Vec::new();
        let mut set = DeferredSet::default();
        let mut hops = chain.hops().iter();
        let mut node = graph.start();
        // The context of the last entry hit: the deferred set runs in it.
        let mut last_ctx = None;
        // Each node at most once (the graph is acyclic).
        for _ in 0..=graph.nodes().len() {
            let (table, next) = match graph.node(node) {
                Some(Node::Branch { then, otherwise, .. }) => {
                    // The recorded decision (every packet of the entry
                    // takes it: the entry holds the bits it read).
                    let h = hops.next()?;
                    if h.table != Hop::BRANCH {
                        return None;
                    }
                    node = if h.entry == 1 { *then } else { *otherwise };
                    continue;
                }
                Some(Node::Apply { table, next }) => (*table, next),
                Some(Node::End) | None => break,
            };
            // The next lookup must be the chain's next hop.
            let h = hops.next()?;
            if h.table != table {
                return None;
            }
            let t = self.tables.get(usize::from(table))?;
            let hit = if h.entry == Hop::NO_ENTRY {
                if let Next::Entry = next {
                    // OpenFlow: a miss without a table-miss entry drops.
                    steps.push(Step::Miss { table: t.stats.clone() });
                    return hops.next().is_none().then(|| steps.into());
                }
                steps.push(Step::MissOn { table: t.stats.clone() });
                None
            } else {
                let e = t.entries().get(h.entry as usize)?;
                steps.push(Step::Hit {
                    table: t.stats.clone(),
                    entry: e.stats.clone(),
                    flags: e.flags,
                });
                let ctx = self.entry_ctx(table, e);
                last_ctx = Some(ctx);
                let ops = &*e.ops;
                if ops.meter.is_some() {
                    return None;
                }
                steps.extend(ops.apply.iter().map(|op| Step::Act { op: op.clone(), ctx }));
                if ops.clear {
                    set.clear();
                }
                set.write(&ops.write);
                if let Some((value, mask)) = ops.metadata {
                    steps.push(Step::Metadata { value, mask });
                }
                Some((ops.action, ops.next))
            };
            match graph.after(table, next, hit) {
                Some(n) => node = n,
                None => break,
            }
        }
        // The walk's end: the deferred set, and nothing left of the chain.
        if let Some(ctx) = last_ctx {
            steps.extend(set.ordered().map(|op| Step::Act { op: op.clone(), ctx }));
        }
        hops.next().is_none().then(|| steps.into())
    }

    /// Run a composed program: what [`Pipeline::walk`] does along the
    /// program's chain (counters of every table and entry, metadata,
    /// every action in order with its entry's context), without reading
    /// the entries.
    fn run_program(&self, w: &mut Worker, pkt: &mut Pkt, prog: &Program, tx: &mut dyn Tx) {
        let (shard, now) = (w.shard, w.now_ns);
        for step in prog {
            match step {
                Step::Hit { table, entry, flags } => {
                    table.add(shard, FlowTable::LOOKUPS, 1);
                    table.add(shard, FlowTable::MATCHED, 1);
                    FlowEntry::count(entry, *flags, shard, pkt.data().len(), now);
                }
                Step::Miss { table } => {
                    table.add(shard, FlowTable::LOOKUPS, 1);
                    return;
                }
                Step::MissOn { table } => table.add(shard, FlowTable::LOOKUPS, 1),
                Step::Metadata { value, mask } => {
                    pkt.meta.metadata = (pkt.meta.metadata & !mask) | (value & mask);
                    refresh_metadata(&mut pkt.key, &pkt.meta);
                }
                Step::Act { op, ctx } => {
                    if let Flow::Stop = self.op(w, op, pkt, *ctx, tx) {
                        return;
                    }
                }
            }
        }
    }

    /// The table walk proper. With `chain`, the hops it names replace the
    /// lookups (further lookups are live); with `rec`, lookups are recorded
    /// for a cache entry while the packet's key stays predictable.
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        w: &mut Worker,
        cache: &mut Caches,
        pkt: &mut Pkt,
        tx: &mut dyn Tx,
        chain: Option<&Chain>,
        mut rec: Option<&mut Recorder>,
    ) {
        let graph = &*self.graph;
        let mut node = graph.start();
        // The context of the last entry hit: the deferred set runs in it.
        let mut last_ctx: Option<Ctx> = None;
        let now = w.now_ns;
        let shard = w.shard;
        // `Datapath::Reference` with caches on: linear-scan lookups (their
        // masks are valid un-wildcarding), lowered ops like every other
        // fast configuration.
        let indexed = self.cfg.datapath != Datapath::Reference;
        let mut deferred = DeferredSet::default();
        let mut hop_i = 0usize;
        // The classifier always reports consulted bits; unrecorded walks
        // collect them here and ignore them.
        let mut unused_wc = FlowMask::ZERO;
        // Guard results of an unrecorded walk (a recorded one keeps them
        // in its recorder).
        let mut live_answers: Option<Box<Answers>> = None;
        // Bounded: a graph is acyclic and its goto edges only go to
        // higher tables, so no walk visits more nodes than the graph has.
        for _ in 0..=graph.nodes().len() {
            let (table, next) = match graph.node(node) {
                Some(Node::Apply { table, next }) => (*table, next),
                Some(Node::Branch { test, then, otherwise }) => {
                    pkt.fresh();
                    let taken = test.eval(&pkt.key);
                    // A replayed chain holds the decision it recorded here;
                    // the live one must be the same (the entry holds the
                    // bits the branch reads).
                    if let Some(h) = chain.and_then(|c| c.hops().get(hop_i)) {
                        if h.table == Hop::BRANCH {
                            hop_i += 1;
                            if (h.entry == 1) != taken {
                                cache.stats.chain_mismatches += 1;
                            }
                        }
                    }
                    // The branch read these key bits: a cache entry recorded
                    // over it holds them, as it holds a lookup's, and the
                    // decision, for composing.
                    if let Some(r) = rec.as_deref_mut() {
                        if r.open {
                            cache.settle(r);
                            test.unwildcard(&mut r.wc);
                            if !r.chain.push(Hop { table: Hop::BRANCH, entry: u32::from(taken) }) {
                                r.open = false;
                            }
                        }
                    }
                    node = if taken { *then } else { *otherwise };
                    continue;
                }
                Some(Node::End) | None => {
                    self.finish(w, pkt, last_ctx, &mut deferred, tx);
                    return;
                }
            };
            let hop = chain.and_then(|c| c.hops().get(hop_i).copied());
            hop_i += 1;
            let Some(t) = self.tables.get(usize::from(table)) else { return };
            pkt.fresh();
            t.stats.add(shard, FlowTable::LOOKUPS, 1);
            let found = match hop {
                Some(h)
                    if h.table == table
                        && (h.entry == Hop::NO_ENTRY || (h.entry as usize) < t.len()) =>
                {
                    (h.entry != Hop::NO_ENTRY).then_some(h.entry as usize)
                }
                other => {
                    if other.is_some() {
                        cache.stats.chain_mismatches += 1;
                    }
                    let (rec, live) = (rec.as_deref_mut(), &mut live_answers);
                    self.walk_lookup(t, table, pkt, cache, rec, live, &mut unused_wc, indexed)
                }
            };
            let Some(i) = found else {
                if let Next::Entry = next {
                    // OpenFlow: no entry and no table-miss entry drops.
                    return;
                }
                // A graph that goes on after a miss (P4's default path).
                match graph.after(table, next, None) {
                    Some(n) => node = n,
                    None => {
                        self.finish(w, pkt, last_ctx, &mut deferred, tx);
                        return;
                    }
                }
                continue;
            };
            t.stats.add(shard, FlowTable::MATCHED, 1);
            let Some(e) = t.entries().get(i) else { return };
            e.hit(shard, pkt.data().len(), now);
            let ctx = self.entry_ctx(table, e);
            last_ctx = Some(ctx);
            let ops = &*e.ops;
            if let Some(m) = ops.meter {
                // A DSCP remark would change the key by time, not by key:
                // later lookups are not predictable.
                if let Some(r) = rec.as_deref_mut() {
                    r.open = false;
                }
                if let Flow::Stop = self.meter(w, m, pkt) {
                    return;
                }
            }
            if !ops.apply.is_empty() {
                if let Some(r) = rec.as_deref_mut() {
                    r.note_ops(&ops.apply);
                }
                if let Flow::Stop = self.run_ops(w, &ops.apply, pkt, ctx, tx) {
                    return;
                }
            }
            if ops.clear {
                deferred.clear();
            }
            deferred.write(&ops.write);
            if let Some((value, mask)) = ops.metadata {
                pkt.meta.metadata = (pkt.meta.metadata & !mask) | (value & mask);
                refresh_metadata(&mut pkt.key, &pkt.meta);
            }
            match graph.after(table, next, Some((ops.action, ops.next))) {
                Some(n) => node = n,
                None => {
                    self.finish(w, pkt, last_ctx, &mut deferred, tx);
                    return;
                }
            }
        }
    }

    /// The end of a walk: the deferred ops run in the context of the last
    /// entry hit.
    #[inline]
    fn finish(
        &self,
        w: &mut Worker,
        pkt: &mut Pkt,
        ctx: Option<Ctx>,
        deferred: &mut DeferredSet,
        tx: &mut dyn Tx,
    ) {
        let Some(ctx) = ctx else { return };
        self.run_ops(w, deferred.ordered(), pkt, ctx, tx);
    }

    /// One lookup of a walk that is not replaying a recorded hop: recorded
    /// in `rec` while the recording is open (see `cache.rs`), live
    /// otherwise. A guarded lookup is recorded only while the frame is the
    /// one received (a hit rechecks the recorded guards up front, on that
    /// frame); one that cannot be recorded closes the recording, so on a
    /// hit it and everything after it run live, guards included. Guard
    /// results go to the recorder's answers, or with no recorder to
    /// `live`'s.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn walk_lookup(
        &self,
        t: &FlowTable,
        table: u8,
        pkt: &Pkt,
        cache: &Caches,
        rec: Option<&mut Recorder>,
        live: &mut Option<Box<Answers>>,
        unused_wc: &mut FlowMask,
        indexed: bool,
    ) -> Option<usize> {
        let guarded = t.has_guards();
        match rec {
            Some(r) if r.open && !(guarded && pkt.edited) => {
                cache.settle(r);
                let i = if guarded {
                    let answers = r.answers.get_or_insert_default();
                    let i = self.lookup_guarded(t, table, pkt, &mut r.wc, indexed, answers);
                    r.guard_len = answers.chain().items().len();
                    r.guard_overflow |= answers.chain().overflowed();
                    i
                } else if indexed {
                    t.lookup_fast(&pkt.key, &mut r.wc)
                } else {
                    t.lookup_scan_wc(&pkt.key, &mut r.wc)
                };
                if !r.chain.push(Hop { table, entry: i.map_or(Hop::NO_ENTRY, |i| i as u32) }) {
                    r.open = false;
                }
                i
            }
            rec => {
                let answers = match rec {
                    Some(r) => {
                        if guarded {
                            r.open = false;
                        }
                        &mut r.answers
                    }
                    None => live,
                };
                if guarded {
                    let answers = answers.get_or_insert_default();
                    self.lookup_guarded(t, table, pkt, unused_wc, indexed, answers)
                } else if indexed {
                    t.lookup_fast(&pkt.key, unused_wc)
                } else {
                    t.lookup(&pkt.key)
                }
            }
        }
    }

    /// A lookup in table `table` (`t`), which has guarded entries: each
    /// matching guarded candidate's guards run through `answers`, in the
    /// order of the guard semantics (`FlowTable::lookup_guarded`). Out of
    /// line: the walk of tables without guards stays as small as before.
    #[inline(never)]
    fn lookup_guarded(
        &self,
        t: &FlowTable,
        table: u8,
        pkt: &Pkt,
        wc: &mut FlowMask,
        indexed: bool,
        answers: &mut Answers,
    ) -> Option<usize> {
        let input = GuardInput { frame: pkt.data(), in_port: pkt.meta.in_port };
        let entries = t.entries();
        t.lookup_guarded(&pkt.key, wc, indexed, &mut |i| match entries.get(i) {
            Some(e) => answers.all(e.guards.as_slice(), |g| tag(table, i, g), &input),
            None => false,
        })
    }

    pub(crate) fn meter(&self, w: &mut Worker, id: u32, pkt: &mut Pkt) -> Flow {
        let Some(m) = self.meters.get(id) else { return Flow::Continue };
        let verdict = m.apply(pkt.data().len(), w.now_ns);
        w.note(|| TraceEvent::Meter { meter: id, verdict });
        match verdict {
            Verdict::Pass => Flow::Continue,
            Verdict::Drop => Flow::Stop,
            Verdict::Remark(levels) => {
                pkt.fresh();
                edit::remark_dscp(pkt, levels);
                Flow::Continue
            }
        }
    }

    /// Runs ops in order until one stops the packet.
    fn run_ops<'a>(
        &self,
        w: &mut Worker,
        ops: impl IntoIterator<Item = &'a Op>,
        pkt: &mut Pkt,
        ctx: Ctx,
        tx: &mut dyn Tx,
    ) -> Flow {
        for op in ops {
            if let Flow::Stop = self.op(w, op, pkt, ctx, tx) {
                return Flow::Stop;
            }
        }
        Flow::Continue
    }

    /// Executes one op of a composed program: header edits in the core
    /// (`sluice_core::op::edit`), forwarding here. What [`Self::action`]
    /// does with the action the op was lowered from.
    fn op(&self, w: &mut Worker, op: &Op, pkt: &mut Pkt, ctx: Ctx, tx: &mut dyn Tx) -> Flow {
        match op {
            Op::Output { port, max_len } => self.output(w, *port, *max_len, pkt, ctx, tx),
            Op::Group(g) => self.group(w, *g, pkt, ctx, tx),
            Op::SetQueue(q) => pkt.queue = Some(*q),
            _ => match pkt.edit(op) {
                Edited::Changed | Edited::Unchanged | Edited::NotAnEdit => {}
                Edited::InvalidTtl => {
                    let ctx = Ctx { reason: Reason::InvalidTtl, ..ctx };
                    let len = self.switch_config.miss_send_len;
                    self.packet_in(w, pkt, ctx, len);
                    return Flow::Stop;
                }
            },
        }
        Flow::Continue
    }

    #[inline]
    pub(crate) fn output(
        &self,
        w: &mut Worker,
        port: u32,
        max_len: u16,
        pkt: &mut Pkt,
        ctx: Ctx,
        tx: &mut dyn Tx,
    ) {
        let in_port = pkt.meta.in_port;
        match port {
            port_no::CONTROLLER => self.packet_in(w, pkt, ctx, max_len),
            port_no::IN_PORT => self.send(w, in_port, pkt, tx),
            port_no::ALL | port_no::FLOOD => {
                // All standard ports (physical, logical and LOCAL: §4.1)
                // but the ingress port, skipping those that cannot forward
                // (down, NO_FWD: §4.5) and, for FLOOD, blocked ones.
                for p in self
                    .ports
                    .numbers()
                    .filter(|&p| p != in_port && (p <= port_no::MAX || p == port_no::LOCAL))
                {
                    let blocked = self
                        .ports
                        .get(p)
                        .is_some_and(|e| e.desc.state & sluice_ofp::port::state::BLOCKED != 0);
                    if !self.ports.can_forward(p) || (port == port_no::FLOOD && blocked) {
                        continue;
                    }
                    self.send(w, p, pkt, tx);
                }
            }
            port_no::TABLE => {
                // Only from PACKET_OUT (validated); resubmit to table 0.
                pkt.fresh();
                let mut copy = pkt.clone();
                copy.queue = None;
                self.run_tables(w, &mut copy, tx);
            }
            p if p == in_port => {} // OpenFlow never sends back out the ingress port implicitly.
            p => self.send(w, p, pkt, tx),
        }
    }

    #[inline]
    fn send(&self, w: &mut Worker, port: u32, pkt: &Pkt, tx: &mut dyn Tx) {
        if !self.ports.can_forward(port) {
            w.note(|| TraceEvent::Drop("output port is down, missing or NO_FWD"));
            if let Some(p) = self.ports.get(port) {
                p.count(w.shard, PortCounter::TxDropped, 1);
            }
            return;
        }
        let Some(p) = self.ports.get(port) else { return };
        let len = pkt.data().len() as u64;
        p.count(w.shard, PortCounter::TxPackets, 1);
        p.count(w.shard, PortCounter::TxBytes, len);
        if let Some(q) = pkt.queue {
            p.count_queue(w.shard, q, len);
        }
        tx.transmit(port, pkt.queue, pkt.data());
        w.note(|| TraceEvent::Output { port });
    }

    pub(crate) fn packet_in(&self, w: &mut Worker, pkt: &Pkt, ctx: Ctx, max_len: u16) {
        if !self.ports.packet_in_allowed(pkt.meta.in_port) {
            w.note(|| TraceEvent::Drop("ingress port has NO_PACKET_IN"));
            return;
        }
        w.note(|| TraceEvent::PacketIn { reason: reason_code(ctx.reason), table: ctx.table_id });
        let frame = pkt.data();
        let (buffer_id, data) =
            if max_len == OFPCML_NO_BUFFER || usize::from(max_len) >= frame.len() {
                (None, frame.to_vec())
            } else {
                let stored = self
                    .buffers
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .store(pkt.meta.in_port, frame);
                match stored {
                    Some(id) => (Some(id), frame[..usize::from(max_len)].to_vec()),
                    None => (None, frame.to_vec()),
                }
            };
        w.async_out.push(Upcall::ToController {
            reason: ctx.reason,
            table: ctx.table_id,
            cookie: ctx.cookie,
            buffer_id,
            total_len: frame.len().min(usize::from(u16::MAX)) as u16,
            data,
            meta: pkt.meta,
        });
    }

    pub(crate) fn group(&self, w: &mut Worker, id: u32, pkt: &mut Pkt, ctx: Ctx, tx: &mut dyn Tx) {
        if ctx.depth == 0 {
            return;
        }
        let ctx = Ctx { depth: ctx.depth - 1, ..ctx };
        let Some(g) = self.groups.get(id) else { return };
        let ports = &self.ports;
        let port_live = |p: u32| ports.is_live(p);
        let chosen: Vec<usize> = match g.group_type {
            GroupType::All => (0..g.buckets.len()).collect(),
            GroupType::Indirect => (0..g.buckets.len().min(1)).collect(),
            GroupType::Select => {
                pkt.fresh();
                let h = flow_hash(pkt);
                select_bucket(&g.buckets, |b| self.groups.bucket_live(b, &port_live, ctx.depth), h)
                    .into_iter()
                    .collect()
            }
            GroupType::FastFailover => g
                .buckets
                .iter()
                .position(|b| self.groups.bucket_live(b, &port_live, ctx.depth))
                .into_iter()
                .collect(),
            GroupType::Unknown(_) => vec![],
        };
        w.note(|| TraceEvent::Group { group: id, buckets: chosen.clone() });
        g.count(w.shard, &chosen, pkt.data().len() as u64);
        for &i in &chosen {
            let (Some(bucket), Some(ops)) = (g.buckets.get(i), g.ops.get(i)) else { continue };
            // Each bucket works on its own copy of the packet.
            let mut p = w.scratch.take_pkt();
            if p.copy_of(pkt) {
                if ctx.spec {
                    self.actions(w, &bucket.actions, &mut p, ctx, tx);
                } else {
                    self.run_ops(w, ops, &mut p, ctx, tx);
                }
            }
            w.scratch.pool.push(p);
        }
    }

    /// Run one frame like [`Pipeline::process`] and return what it met.
    pub fn trace(&mut self, in_port: u32, frame: &[u8], tx: &mut dyn Tx) -> Vec<TraceEvent> {
        self.with_local(|p, w| {
            w.scratch.trace = Some(Vec::new());
            p.process_with(w, in_port, frame, tx);
            w.scratch.trace.take().unwrap_or_default()
        })
    }

    /// Execute a PACKET_OUT.
    pub fn packet_out(&mut self, po: &PacketOut, tx: &mut dyn Tx) -> Result<()> {
        let in_port = po.in_port;
        if !(in_port <= port_no::MAX || in_port == port_no::CONTROLLER || in_port == port_no::LOCAL)
            || in_port == 0
        {
            return Err(ErrorCode::BRC_BAD_PORT);
        }
        self.validate_actions(&po.actions, &mut Default::default(), true)?;
        let data = if po.buffer_id == OFP_NO_BUFFER {
            po.data.clone()
        } else {
            self.take_buffer(po.buffer_id).ok_or(ErrorCode::BRC_BUFFER_UNKNOWN)?.1
        };
        let meta = Meta { in_port, in_phy_port: in_port, metadata: 0, tunnel_id: 0 };
        let ctx = Ctx {
            table_id: 0xff,
            cookie: u64::MAX,
            reason: Reason::Action,
            depth: self.cfg.max_group_depth,
            spec: self.cfg.is_oracle(),
        };
        // Lowered once per message, like a flow entry's at flow-mod time.
        let ops: Vec<Op> =
            if ctx.spec { Vec::new() } else { po.actions.iter().map(lower).collect() };
        self.with_local(|p, w| {
            let mut pkt = w.scratch.take_pkt();
            let r = if pkt.load(&data, meta) {
                if ctx.spec {
                    p.actions(w, &po.actions, &mut pkt, ctx, tx);
                } else {
                    p.run_ops(w, &ops, &mut pkt, ctx, tx);
                }
                Ok(())
            } else {
                Err(ErrorCode::BRC_BAD_PACKET)
            };
            w.scratch.pool.push(pkt);
            r
        })
    }

    /// Take a packet buffered for PACKET_IN (each buffer can be used once).
    pub(crate) fn take_buffer(&self, id: u32) -> Option<(u32, Vec<u8>)> {
        self.buffers.lock().unwrap_or_else(|e| e.into_inner()).take(id)
    }
}

/// A hash over L2–L4 (MACs, ethertype, VLAN, IP or ARP addresses, IP
/// protocol, ports) so that one flow always picks one SELECT bucket and
/// different flows spread.
pub fn flow_hash(pkt: &Pkt) -> u64 {
    const FIELDS: &[FieldId] = &[
        FieldId::EthSrc,
        FieldId::EthDst,
        FieldId::EthType,
        FieldId::VlanVid,
        FieldId::Ipv4Src,
        FieldId::Ipv4Dst,
        FieldId::Ipv6Src,
        FieldId::Ipv6Dst,
        FieldId::ArpSpa,
        FieldId::ArpTpa,
        FieldId::IpProto,
        FieldId::TcpSrc,
        FieldId::TcpDst,
        FieldId::UdpSrc,
        FieldId::UdpDst,
        FieldId::SctpSrc,
        FieldId::SctpDst,
    ];
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &f in FIELDS {
        let v = field(pkt, f);
        for w in [(v >> 64) as u64, v as u64] {
            h ^= w;
            h = h.wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29);
        }
    }
    // splitmix64 finaliser.
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}
