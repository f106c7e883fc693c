//! # The fast walk: a packet's way through a front end's tables
//!
//! ## What?
//! The forwarding loop every fast configuration runs: follow the
//! pipeline's control [`Graph`] from its start, look each applied table up
//! (through the front end's index or compiled code, with guards), count
//! the hit, run the entry's lowered ops ([`EntryOps`]), collect its
//! deferred ops, and at the end run the deferred set. In front of the
//! tables sit the worker's exact and megaflow caches ([`crate::cache`]):
//! a miss walks while recording and installs what it may; a hit re-checks
//! the guards its walk saw, then runs the entry's composed [`Program`] or
//! replays its chain of entries. [`burst`] stages up to [`BURST`] packets
//! so their cache misses overlap; [`burst_lent`] does the same on frames
//! in the caller's buffers (a port's receive buffers), without copying
//! them.
//!
//! ## Basic design
//! The walk knows no control protocol. A front end describes itself with
//! three traits: [`Frontend`] (its graph, tables, configuration, and the
//! forwarding the core does not own: ports, groups, meters, upcalls),
//! [`Table`] (lookups with and without un-wildcarding and guards) and
//! [`Entry`] (an entry's ops, guards and counters). The walk is generic
//! over them, so each front end gets its own monomorphised copy with no
//! indirect calls on the hot path. A front end keeps its own reference
//! walk beside this one (OpenFlow's is `sluice_pipeline::reference`) and
//! tests this one against it.
//!
//! What a front end decides, it decides once: `Frontend::ctx` gives the
//! context an entry's ops run in (OpenFlow: table id, cookie, packet-in
//! reason, group depth), captured into composed programs at install
//! time; forwarding ops ([`Op::Output`], [`Op::Group`]) and a TTL that
//! expires go back to the front end with that context.
//!
//! ## Costs
//! Per packet on a cache hit with a composed program: one exact-cache
//! probe (or the megaflow probes), the program's steps (counter adds and
//! ops), nothing else. On a miss: the lookups, the recording (masks OR-ed
//! per lookup), composing and installing. Without caches: the lookups and
//! the entries' ops. No allocation per packet once the worker's packet
//! pool and caches are warm.
//!
//! ## Invariants
//! - Same frames, upcalls, counters and guard invocation order as the
//!   front end's reference walk, for every configuration, cache mode and
//!   burst size (the front ends' differential tests).
//! - Bounded: a walk visits at most as many nodes as the graph has (the
//!   graph is acyclic, goto edges count as edges to every later table).
//! - Workers take no lock: everything shared is read-only or an atomic
//!   counter shard; the caches, packet pool and upcall queue are the
//!   worker's own.

use crate::adapt::{self, Governor};
use crate::cache::{
    hot_lines, CacheStats, Caches, Chain, Closed, Guarded, Hop, Item, RawKey, Recorder, Resolved,
    HOT_ADDRS, NO_PROG, RAW_BYTES,
};
use crate::extract::Extract;
use crate::graph::{Graph, Next, Node};
use crate::guard::{Answers, Chain as GuardChain, Guard, GuardAt, GuardInput, GuardSet};
use crate::keyop::KeyProg;
use crate::op::{DeferredSet, Edited, EntryOps, Op};
use crate::pkt::{Parse, Pkt};
use crate::prefetch;
use crate::tally::{Shard, Tally};
use crate::upcall::Upcall;
use sluice_packet::buf::PacketBuf;
use sluice_packet::key::{FlowKey, FlowMask};
use sluice_packet::parse::{refresh_metadata, Meta};
use std::fmt;
use std::sync::Arc;

/// Most frames one stage of [`burst`] holds.
pub const BURST: usize = 32;

/// A table's counters ([`Table::counters`]): lookups, then matches.
pub const TABLE_LOOKUPS: usize = 0;
pub const TABLE_MATCHED: usize = 1;
/// An entry's counters ([`Entry::counters`]): packets, bytes, and the
/// time of the last packet (a maximum, not a sum).
pub const ENTRY_PACKETS: usize = 0;
pub const ENTRY_BYTES: usize = 1;
pub const ENTRY_USED: usize = 2;

/// Where transmitted frames go.
pub trait Tx {
    /// Send `frame` on port `port` (the front end's port number), on
    /// `queue` if an op chose one.
    fn transmit(&mut self, port: u32, queue: Option<u32>, frame: &[u8]);

    /// A frame was output to port `port`, which does not exist (e.g. its
    /// interface was removed): not sent. For the front end's drop
    /// counters; the default ignores it.
    fn no_port(&mut self, _port: u32) {}
}

impl<F: FnMut(u32, Option<u32>, &[u8])> Tx for F {
    fn transmit(&mut self, port: u32, queue: Option<u32>, frame: &[u8]) {
        self(port, queue, frame)
    }
}

/// The outcome of one op on a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// The packet is gone (dropped by a meter, TTL expiry).
    Stop,
}

/// Which of an entry's counters a hit bumps (an OpenFlow rule may opt
/// out of packet or byte counting and always keeps its time of use; a
/// front end that reads none of an entry's counters keeps none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counting {
    pub packets: bool,
    pub bytes: bool,
    pub used: bool,
}

impl Counting {
    /// Every counter.
    pub const ALL: Counting = Counting { packets: true, bytes: true, used: true };
    /// None: a hit on the entry costs nothing.
    pub const NONE: Counting = Counting { packets: false, bytes: false, used: false };

    /// Whether a hit bumps anything.
    pub fn any(self) -> bool {
        self.packets || self.bytes || self.used
    }

    /// Count one packet of `bytes` at `now_ns` in `stats` (an entry's
    /// counters: [`ENTRY_PACKETS`], [`ENTRY_BYTES`], [`ENTRY_USED`]).
    #[inline]
    pub fn count(self, stats: &Tally, s: Shard, bytes: usize, now_ns: u64) {
        if self.packets {
            stats.add(s, ENTRY_PACKETS, 1);
        }
        if self.bytes {
            stats.add(s, ENTRY_BYTES, bytes as u64);
        }
        if self.used {
            stats.raise(s, ENTRY_USED, now_ns);
        }
    }
}

/// Which caches stand in front of the tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheMode {
    /// Every packet is classified by the tables. The default: measured with
    /// `sluice bench`, a cache hit (hash and compare of the 192-byte key,
    /// chain replay) still costs more than the tuple-space lookup it saves.
    #[default]
    Off,
    /// Megaflow cache only.
    Megaflow,
    /// Exact-match cache, then megaflow cache, then the tables.
    On,
    /// `On`, `Megaflow` or `Off`, whichever this worker measured to take
    /// the fewest cycles per packet on its recent traffic (see
    /// [`crate::adapt`]): a cache that does not pay gets out of the way.
    Auto,
}

/// The concrete mode `w` runs in now: the front end's, or in
/// [`CacheMode::Auto`] its governor's choice.
#[inline]
fn mode_of<F: Frontend>(f: &F, w: &Worker<F>) -> CacheMode {
    match f.cache_mode() {
        CacheMode::Auto => w.gov.mode(),
        m => m,
    }
}

/// One flow entry, as the walk sees it.
pub trait Entry {
    /// What the entry does, lowered when it was installed.
    fn ops(&self) -> &Arc<EntryOps>;
    /// Predicates run after its mask/value match.
    fn guards(&self) -> &GuardSet;
    /// Its counters ([`ENTRY_PACKETS`], [`ENTRY_BYTES`], [`ENTRY_USED`]).
    fn counters(&self) -> &Tally;
    /// Which counters a hit bumps.
    fn counting(&self) -> Counting;
    /// The address of what a hit reads first (the staged walk prefetches
    /// it): the entry itself, unless it is reached through a pointer.
    #[inline]
    fn hot_line(&self) -> *const u8 {
        (self as *const Self).cast()
    }
}

/// An entry behind an `Arc` (tables whose published copies share their
/// entries) is walked as the entry.
impl<E: Entry> Entry for Arc<E> {
    #[inline]
    fn ops(&self) -> &Arc<EntryOps> {
        (**self).ops()
    }
    #[inline]
    fn guards(&self) -> &GuardSet {
        (**self).guards()
    }
    #[inline]
    fn counters(&self) -> &Tally {
        (**self).counters()
    }
    #[inline]
    fn counting(&self) -> Counting {
        (**self).counting()
    }
    #[inline]
    fn hot_line(&self) -> *const u8 {
        Arc::as_ptr(self).cast()
    }
}

/// One table, as the walk sees it: entries in priority order and the
/// lookups over them. Every lookup gives the first (highest priority,
/// oldest) matching entry's position, the scan's answer.
pub trait Table {
    type Entry: Entry;
    /// Lookups and matches ([`TABLE_LOOKUPS`], [`TABLE_MATCHED`]).
    fn counters(&self) -> &Arc<Tally>;
    /// Whether lookups bump [`Table::counters`]: a front end that never
    /// reads them says no, and its lookups and cached hits skip them.
    #[inline]
    fn counted(&self) -> bool {
        true
    }
    fn entries(&self) -> &[Self::Entry];
    /// Whether any entry carries guards.
    fn has_guards(&self) -> bool;
    /// The fast lookup (index or compiled code); ORs the key bits it
    /// consulted into `wc`.
    fn lookup_fast(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize>;
    /// The linear scan.
    fn lookup_scan(&self, key: &FlowKey) -> Option<usize>;
    /// The linear scan, OR-ing every examined entry's mask into `wc`.
    fn lookup_scan_wc(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize>;
    /// A lookup that offers matching guarded candidates to `accept` in
    /// priority order and takes the first accepted (unguarded entries are
    /// taken as they are); `indexed` picks the fast structures.
    fn lookup_guarded(
        &self,
        key: &FlowKey,
        wc: &mut FlowMask,
        indexed: bool,
        accept: &mut dyn FnMut(usize) -> bool,
    ) -> Option<usize>;
}

/// A front end's published pipeline, as the walk sees it.
pub trait Frontend: Sized {
    type Table: Table;
    /// The context an entry's ops run in; captured into composed programs.
    type Ctx: Copy + fmt::Debug;
    /// What the front end keeps per worker beside the core's state.
    type Ext: fmt::Debug;
    /// The front end's description of a rule, carried by
    /// [`Upcall::Removed`] (OpenFlow: the flow's match).
    type Rule: fmt::Debug;

    fn graph(&self) -> &Graph;
    fn table(&self, id: u8) -> Option<&Self::Table>;
    /// The flow generation: bumped by every change to any table; cache
    /// entries of another generation are misses.
    fn generation(&self) -> u64;
    fn cache_mode(&self) -> CacheMode;
    /// Whether lookups use the fast structures (else linear scans).
    fn indexed(&self) -> bool;
    /// The extract program every packet's parse runs (see [`Pkt::extract`]);
    /// `None`: the fixed parser's key only.
    fn extract(&self) -> Option<&Arc<Extract>> {
        None
    }
    /// The front end's own parser, if it replaces the fixed parser (see
    /// [`Pkt::parser`]).
    fn parser(&self) -> Option<&Arc<dyn Parse>> {
        None
    }
    /// Key bits only key programs ([`Op::Key`]), lookups and branches
    /// read (P4's locals and condition bits): of the ops, only those
    /// programs and ops other than [`Op::Output`] may read them. A
    /// composed program drops a key program that writes nothing but such
    /// bits when nothing after it reads them ([`compose`]).
    fn scratch(&self) -> Option<&FlowMask> {
        None
    }
    /// The context entry `e` of table `table` runs its ops in.
    fn ctx(&self, table: u8, e: &<Self::Table as Table>::Entry) -> Self::Ctx;
    /// Run meter `id` on the packet.
    fn meter(&self, w: &mut Worker<Self>, id: u32, pkt: &mut Pkt) -> Flow;
    /// Run a forwarding op ([`Op::Output`], [`Op::Group`]).
    fn forward(
        &self,
        w: &mut Worker<Self>,
        op: &Op,
        pkt: &mut Pkt,
        ctx: Self::Ctx,
        tx: &mut dyn Tx,
    ) -> Flow;
    /// A TTL decrement reached zero: the packet stops here; the front end
    /// may tell its controller.
    fn ttl_expired(&self, w: &mut Worker<Self>, pkt: &Pkt, ctx: Self::Ctx);
}

/// One step of a composed program.
#[derive(Debug)]
pub enum Step<C> {
    /// A lookup hit an entry: the table's lookup and match counters, the
    /// entry's counters.
    Hit { table: Option<Arc<Tally>>, entry: Tally, counting: Counting },
    /// A lookup missed where a miss ends the walk: count it, stop.
    Miss { table: Option<Arc<Tally>> },
    /// A lookup missed and the graph goes on: count it.
    MissOn { table: Arc<Tally> },
    /// Write the metadata.
    Metadata { value: u64, mask: u64 },
    /// One op, with the context of the entry it came from.
    Act { op: Op, ctx: C },
}

/// A cache entry's replay of a packet's whole way through the tables
/// ([`compose`]): the counters to bump and the ops to run, in the order
/// the walk would. The counters are the entries' own cells (shared), so
/// flow, table and idle-time statistics stay exact.
pub type Program<C> = [Step<C>];

/// The lines a hit on `prog` touches first, for the cache slot that
/// holds it ([`hot_lines`] entries): the counter cells (shard `s`) of the
/// entries it bumps, then its key programs and their instructions (each
/// a load that depends on the one before: the program's step, the shared
/// program, its instructions, all their lines), the first [`HOT_ADDRS`]
/// of them.
fn hot_addrs<C>(prog: &Program<C>, s: Shard) -> [usize; HOT_ADDRS] {
    let mut hot = [0; HOT_ADDRS];
    let hits = prog.iter().filter_map(|step| match step {
        Step::Hit { entry, counting, .. } if counting.any() => {
            Some(hot_lines(entry.shard_addr(s), 1))
        }
        _ => None,
    });
    let keys = prog.iter().flat_map(|step| match step {
        Step::Act { op: Op::Key(p), .. } => [
            // What a run reads of the program itself may straddle two
            // lines.
            Some(hot_lines(Arc::as_ptr(p) as usize, KeyProg::RUN_HEAD)),
            Some(hot_lines(p.insns().as_ptr() as usize, std::mem::size_of_val(p.insns()))),
        ],
        _ => [None, None],
    });
    for (h, a) in hot.iter_mut().zip(hits.chain(keys.flatten()).filter(|&a| a != 0)) {
        *h = a;
    }
    hot
}

/// One forwarding thread's private state: its counter shard, the clock
/// reading of its current burst, packet buffers, caches, the upcalls its
/// packets produced, and the front end's own part.
pub struct Worker<F: Frontend> {
    pub shard: Shard,
    pub now_ns: u64,
    /// Free packets (the packet and its copies), boxed so taking one and
    /// giving it back moves a pointer, not the key.
    #[allow(clippy::vec_box)]
    pool: Vec<Box<Pkt>>,
    /// The packets of the burst being staged (empty between bursts).
    #[allow(clippy::vec_box)]
    burst: Vec<Box<Pkt>>,
    /// The raw keys of the burst being staged (see [`stage_burst`]).
    raw: Vec<RawKey>,
    pub cache: Caches<Program<F::Ctx>>,
    /// Which caches to use in [`CacheMode::Auto`].
    pub gov: Governor,
    /// Upcalls of this worker's packets, oldest first.
    pub upcalls: Vec<Upcall<F::Rule>>,
    pub ext: F::Ext,
}

impl<F: Frontend> fmt::Debug for Worker<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("shard", &self.shard)
            .field("now_ns", &self.now_ns)
            .field("cache", &self.cache.stats)
            .field("upcalls", &self.upcalls.len())
            .field("ext", &self.ext)
            .finish_non_exhaustive()
    }
}

impl<F: Frontend> Worker<F> {
    pub fn new(shard: Shard, ext: F::Ext) -> Worker<F> {
        Worker {
            shard,
            now_ns: 0,
            pool: Vec::new(),
            burst: Vec::new(),
            raw: Vec::new(),
            cache: Caches::default(),
            gov: Governor::default(),
            upcalls: Vec::new(),
            ext,
        }
    }

    /// Move this worker's clock (never backwards): meters and idle times
    /// use it. Call once per burst.
    pub fn set_now(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
    }

    /// This worker's cache hits and misses.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats
    }

    /// What its governor chose ([`CacheMode::Auto`]).
    pub fn cache_choices(&self) -> adapt::Choices {
        self.gov.choices()
    }

    /// The counter shard this worker writes.
    pub fn shard(&self) -> Shard {
        self.shard
    }

    /// Whether packets queued upcalls.
    pub fn has_upcalls(&self) -> bool {
        !self.upcalls.is_empty()
    }

    /// A packet from the pool (allocated on first use only).
    #[inline]
    pub fn take_pkt(&mut self) -> Box<Pkt> {
        self.pool.pop().unwrap_or_default()
    }

    /// Give a packet back to the pool.
    #[inline]
    pub fn put_pkt(&mut self, p: Box<Pkt>) {
        self.pool.push(p);
    }
}

/// A guard's position, as answers and cache entries record it: table,
/// entry position and index in the entry's guards (stable within a flow
/// generation, which is all a cache entry lives).
pub fn tag(table: u8, entry: usize, guard: usize) -> u64 {
    (u64::from(table) << 56) | ((entry as u64 & 0xff_ffff_ffff) << 16) | (guard as u64 & 0xffff)
}

/// The inverse of [`tag`].
pub fn untag(t: u64) -> (u8, usize, usize) {
    ((t >> 56) as u8, ((t >> 16) & 0xff_ffff_ffff) as usize, (t & 0xffff) as usize)
}

/// Run one loaded packet from the graph's start: through the caches when
/// they are on, else straight through the lookups.
pub fn run<F: Frontend>(f: &F, w: &mut Worker<F>, pkt: &mut Pkt, tx: &mut dyn Tx) {
    let auto = f.cache_mode() == CacheMode::Auto;
    let start = if auto { adapt::cycles() } else { 0 };
    // Set apart while the packet runs, so a hit's program can be run
    // straight from it while the worker is borrowed mutably.
    let mut cache = std::mem::take(&mut w.cache);
    run_with(f, w, &mut cache, pkt, tx);
    w.cache = cache;
    if auto {
        w.gov.account(1, adapt::cycles().wrapping_sub(start));
    }
}

/// Which cache served a packet run by [`run_served`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Served {
    /// The caches are off: the tables.
    Tables,
    /// An exact-match cache hit.
    Exact,
    /// A megaflow cache hit.
    Megaflow,
    /// A miss: the tables, recording; what the recording gave.
    Miss(Box<Recording>),
}

/// What a cache miss's recording gave (see [`Served::Miss`]): the same
/// [`Recorder`] every miss fills, read back after the install.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recording {
    /// The key the entries are for (the packet's key as received).
    pub key: FlowKey,
    /// The un-wildcarding mask: every key bit the walk consulted while it
    /// recorded. The megaflow entry matches `key & wc`.
    pub wc: FlowMask,
    /// Hops (lookups and key-bit branches) recorded.
    pub hops: usize,
    /// Why the recording ended before the walk did, if it did: the
    /// lookups after that run live on a hit.
    pub closed: Option<Closed>,
    /// Whether entries were installed (not when nothing was recorded or
    /// a lookup saw more guard results than an entry holds).
    pub installed: bool,
    /// Whether the entry got a composed program.
    pub composed: bool,
}

/// [`run`] for traces and tests: the same caches, lookups and recording,
/// run in cache mode `mode` instead of the front end's (a trace of a
/// pipeline with caches off passes [`CacheMode::Megaflow`] to see what a
/// cache would install), and it says which cache served the packet and,
/// on a miss, what the recording gave. A hit whose guards answer
/// differently goes on to the slow path as in [`run`] and is still
/// reported as the hit. Not for the forwarding path: it copies the
/// recorder out.
pub fn run_served<F: Frontend>(
    f: &F,
    w: &mut Worker<F>,
    pkt: &mut Pkt,
    tx: &mut dyn Tx,
    mode: CacheMode,
) -> Served {
    let mut cache = std::mem::take(&mut w.cache);
    let served = served_with(f, w, &mut cache, pkt, tx, mode);
    w.cache = cache;
    served
}

fn served_with<F: Frontend>(
    f: &F,
    w: &mut Worker<F>,
    cache: &mut Caches<Program<F::Ctx>>,
    pkt: &mut Pkt,
    tx: &mut dyn Tx,
    mode: CacheMode,
) -> Served {
    // `mode` may differ from the front end's (see `run_served`); Auto
    // is this worker's governor's choice, as in `mode_of`.
    let mode = match mode {
        CacheMode::Auto => w.gov.mode(),
        m => m,
    };
    if mode == CacheMode::Off {
        walk(f, w, cache, pkt, tx, None, None);
        return Served::Tables;
    }
    if let (Some(r), exact) = lookup(cache, &pkt.key, f.generation(), mode) {
        run_hit(f, w, cache, pkt, tx, &r);
        return if exact { Served::Exact } else { Served::Megaflow };
    }
    let mut rec = Recorder::new(pkt.key, None);
    let (installed, composed) = record_into(f, w, cache, pkt, tx, &mut rec, mode);
    Served::Miss(Box::new(Recording {
        key: rec.key,
        wc: rec.wc,
        hops: rec.chain.hops().len(),
        closed: rec.closed,
        installed,
        composed,
    }))
}

fn run_with<F: Frontend>(
    f: &F,
    w: &mut Worker<F>,
    cache: &mut Caches<Program<F::Ctx>>,
    pkt: &mut Pkt,
    tx: &mut dyn Tx,
) {
    let mode = mode_of(f, w);
    if mode == CacheMode::Off {
        walk(f, w, cache, pkt, tx, None, None);
        return;
    }
    match lookup(cache, &pkt.key, f.generation(), mode).0 {
        Some(r) => run_hit(f, w, cache, pkt, tx, &r),
        None => record_walk(f, w, cache, pkt, tx, None),
    }
}

/// The lookups of a caching mode (`On` or `Megaflow`) for one packet:
/// with `On` the exact-match cache first, then the megaflow cache, whose
/// hit `On` promotes to exact match. The answer, and whether the
/// exact-match cache gave it.
#[inline]
fn lookup<P: ?Sized>(
    cache: &mut Caches<P>,
    key: &FlowKey,
    gen: u64,
    mode: CacheMode,
) -> (Option<Resolved>, bool) {
    if mode == CacheMode::On {
        if let Some(r) = cache.lookup_exact(key, gen) {
            return (Some(r), true);
        }
    }
    let hit = cache.lookup_megaflow(key, gen);
    if let (Some(r), CacheMode::On) = (&hit, mode) {
        cache.promote(key, r, gen);
    }
    (hit, false)
}

/// A packet whose cache entry (or, caches off, first lookup) is `r`.
#[inline]
fn run_hit<F: Frontend>(
    f: &F,
    w: &mut Worker<F>,
    cache: &mut Caches<Program<F::Ctx>>,
    pkt: &mut Pkt,
    tx: &mut dyn Tx,
    r: &Resolved,
) {
    let at = GuardAt { now_ns: w.now_ns, worker: w.shard.index(), dry: w.shard.is_dry() };
    let mut r = *r;
    if let Some(fresh) = recheck_guards(f, cache, r.prog, pkt, at) {
        // The entry's alternate may have been recorded with these answers.
        match cache.alt(r.prog).map(|b| (b, recheck_alt(f, cache, b.prog, &fresh, pkt, at))) {
            Some((b, None)) => {
                cache.stats.guard_alt_hits += 1;
                r = b;
            }
            Some((_, Some(more))) => {
                record_walk(f, w, cache, pkt, tx, Some(Box::new(Answers::primed(more))));
                return;
            }
            None => {
                record_walk(f, w, cache, pkt, tx, Some(Box::new(Answers::primed(fresh))));
                return;
            }
        }
    }
    match cache.program(r.prog) {
        Some(prog) => run_program(f, w, pkt, prog, tx),
        None => walk(f, w, cache, pkt, tx, Some(&r.chain), None),
    }
}

/// A cache hit's guard check: re-runs the guards entry item `id`'s walk
/// recorded, in order (see [`crate::guard`]). `None` when every result is
/// the recorded one (or nothing was recorded); otherwise the results
/// computed, to prime the slow path.
#[inline]
fn recheck_guards<F: Frontend>(
    f: &F,
    cache: &mut Caches<Program<F::Ctx>>,
    id: u32,
    pkt: &Pkt,
    at: GuardAt,
) -> Option<GuardChain> {
    if !cache.has_guarded_items() {
        return None;
    }
    recheck_recorded(f, cache, id, pkt, at)
}

/// [`recheck_guards`] once some item holds guard results (kept out of
/// the hit path of a pipeline without guards).
#[inline(never)]
fn recheck_recorded<F: Frontend>(
    f: &F,
    cache: &mut Caches<Program<F::Ctx>>,
    id: u32,
    pkt: &Pkt,
    at: GuardAt,
) -> Option<GuardChain> {
    let input = GuardInput { frame: pkt.data(), in_port: pkt.meta.in_port, at };
    let fresh = recheck_item(f, cache.guarded(id)?, 0, &input);
    cache.stats.guard_rechecks += 1;
    cache.stats.guard_changed += u64::from(fresh.is_some());
    fresh
}

/// Whether item `id`'s recorded guard results are the packet's, given
/// `fresh`, the results already computed for it (a prefix of what its walk
/// would record): `None` if they are, running only the guards `fresh`
/// does not cover; otherwise `fresh` with what was computed added, up to
/// the first difference, to prime the slow path.
#[inline(never)]
fn recheck_alt<F: Frontend>(
    f: &F,
    cache: &Caches<Program<F::Ctx>>,
    id: u32,
    fresh: &GuardChain,
    pkt: &Pkt,
    at: GuardAt,
) -> Option<GuardChain> {
    let Some(g) = cache.guarded(id) else { return Some(*fresh) };
    let have = fresh.items();
    if !g.chain.items().starts_with(have) {
        return Some(*fresh);
    }
    let input = GuardInput { frame: pkt.data(), in_port: pkt.meta.in_port, at };
    recheck_item(f, g, have.len(), &input)
}

/// [`Answers::recheck`] of an item's recorded results from position
/// `from`, through the guards it holds (or, if it could not resolve them
/// all, found by tag).
fn recheck_item<F: Frontend>(
    f: &F,
    g: &Guarded,
    from: usize,
    input: &GuardInput<'_>,
) -> Option<GuardChain> {
    if g.refs.len() == g.chain.items().len() {
        Answers::recheck(&g.chain, from, |i, _| g.refs.get(i).map(|r| &**r), input)
    } else {
        Answers::recheck(&g.chain, from, |_, tag| find_guard(f, tag).map(|r| &**r), input)
    }
}

/// The guard a recorded tag names (see [`untag`]).
fn find_guard<F: Frontend>(f: &F, tag: u64) -> Option<&Arc<dyn Guard>> {
    let (table, entry, index) = untag(tag);
    f.table(table)?.entries().get(entry)?.guards().as_slice().get(index)
}

/// The slow path of a cache miss: walk the tables recording the lookups,
/// then install the entry (see [`crate::cache`]).
fn record_walk<F: Frontend>(
    f: &F,
    w: &mut Worker<F>,
    cache: &mut Caches<Program<F::Ctx>>,
    pkt: &mut Pkt,
    tx: &mut dyn Tx,
    answers: Option<Box<Answers>>,
) {
    // The walk may rewrite the packet's key: the recorder keeps the one
    // the cache entry is for.
    let mut rec = Recorder::new(pkt.key, answers);
    let mode = mode_of(f, w);
    record_into(f, w, cache, pkt, tx, &mut rec, mode);
}

/// [`record_walk`] with the recorder and cache mode given: walks, then
/// installs what it may. Returns whether it installed and whether the
/// entry got a composed program.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn record_into<F: Frontend>(
    f: &F,
    w: &mut Worker<F>,
    cache: &mut Caches<Program<F::Ctx>>,
    pkt: &mut Pkt,
    tx: &mut dyn Tx,
    rec: &mut Recorder,
    mode: CacheMode,
) -> (bool, bool) {
    let gen = f.generation();
    rec.windows = pkt.extract.is_some();
    walk(f, w, cache, pkt, tx, None, Some(&mut *rec));
    if rec.chain.is_empty() || rec.guard_overflow {
        cache.stats.uncacheable += 1;
        return (false, false);
    }
    cache.stats.installs += 1;
    let composed = compose(f, &rec.chain);
    let was_composed = composed.is_some();
    if was_composed {
        cache.stats.composed += 1;
    }
    let hot = composed.as_deref().map_or([0; HOT_ADDRS], |p| hot_addrs(p, w.shard));
    let prog = match (composed, rec.guard_chain()) {
        (None, None) => NO_PROG,
        (Some(p), None) => cache.add_program(p, hot),
        (p, g) => {
            let guards = g.map(|chain| {
                let refs: Option<Vec<_>> =
                    chain.items().iter().map(|&(tag, _)| find_guard(f, tag).cloned()).collect();
                Box::new(Guarded { chain, refs: refs.unwrap_or_default().into() })
            });
            cache.add_item(Item { prog: p, guards, alt: None }, hot)
        }
    };
    let res = Resolved { chain: rec.chain, prog };
    if mode == CacheMode::On {
        cache.install_exact(&rec.key, res, gen);
    }
    cache.install_megaflow(&rec.key, &rec.wc, res, gen);
    if prog != NO_PROG {
        cache.drop_if_unused(prog);
    }
    (true, was_composed)
}

/// The program that replays a packet's whole way through the tables
/// along `chain`, or `None` when the chain does not cover it (recording
/// stopped before the last lookup) or a meter is on the way (a meter may
/// drop or remark depending on time, and the walk keeps that live). Built
/// from the entries as they are now; the cache entry holding it is
/// dropped with the flow generation.
pub fn compose<F: Frontend>(f: &F, chain: &Chain) -> Option<Box<Program<F::Ctx>>> {
    let graph = f.graph();
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
                // The recorded decision (every packet of the entry takes
                // it: the entry holds the bits it read).
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
        let t = f.table(table)?;
        let counted = t.counted();
        let hit = if h.entry == Hop::NO_ENTRY {
            if let Next::Entry = next {
                // A miss on an entry edge ends the walk (OpenFlow: no
                // table-miss entry drops).
                steps.push(Step::Miss { table: counted.then(|| t.counters().clone()) });
                return hops.next().is_none().then(|| steps.into());
            }
            if counted {
                steps.push(Step::MissOn { table: t.counters().clone() });
            }
            None
        } else {
            let e = t.entries().get(h.entry as usize)?;
            let counting = e.counting();
            // A hit nothing counts is not a step.
            if counted || counting.any() {
                steps.push(Step::Hit {
                    table: counted.then(|| t.counters().clone()),
                    entry: e.counters().clone(),
                    counting,
                });
            }
            let ctx = f.ctx(table, e);
            last_ctx = Some(ctx);
            let ops = &**e.ops();
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
    hops.next().is_none().then(|| join_keys(steps, f.scratch()).into())
}

/// A composed program's key programs made cheaper to run: one writing
/// only `scratch` bits that nothing after it reads is dropped (its
/// results fed the branches and lookups the chain has already decided),
/// and each stretch of them with only counter steps between becomes one
/// program ([`KeyProg::then`]), simplified ([`KeyProg::simplified`]),
/// run after those counter steps (which neither read nor write the key).
fn join_keys<C: Copy>(steps: Vec<Step<C>>, scratch: Option<&FlowMask>) -> Vec<Step<C>> {
    let mut dead = vec![false; steps.len()];
    if let Some(scratch) = scratch {
        let mut live = FlowMask::ZERO;
        for (i, step) in steps.iter().enumerate().rev() {
            let Step::Act { op, .. } = step else { continue };
            match op {
                Op::Key(p) => {
                    let w = p.writes();
                    let only_scratch = w.words.iter().zip(&scratch.words).all(|(w, s)| w & !s == 0);
                    if only_scratch && w.words.iter().zip(&live.words).all(|(w, l)| w & l == 0) {
                        dead[i] = true;
                        continue;
                    }
                    for ((l, r), s) in
                        live.words.iter_mut().zip(p.loads().words).zip(&scratch.words)
                    {
                        *l |= r & s;
                    }
                }
                Op::Output { .. } => {}
                _ => live = *scratch,
            }
        }
    }
    let mut out = Vec::with_capacity(steps.len());
    let mut pending: Option<(KeyProg, C)> = None;
    let flush = |out: &mut Vec<Step<C>>, pending: &mut Option<(KeyProg, C)>| {
        if let Some((p, ctx)) = pending.take() {
            out.push(Step::Act { op: Op::Key(Arc::new(p.simplified())), ctx });
        }
    };
    for (step, dead) in steps.into_iter().zip(dead) {
        match step {
            Step::Act { op: Op::Key(_), .. } if dead => {}
            Step::Act { op: Op::Key(p), ctx } => {
                pending = Some(match pending.take() {
                    None => ((*p).clone(), ctx),
                    Some((q, c)) => match q.then(&p) {
                        Some(j) => (j, ctx),
                        None => {
                            flush(&mut out, &mut Some((q, c)));
                            ((*p).clone(), ctx)
                        }
                    },
                });
            }
            s @ (Step::Hit { .. } | Step::MissOn { .. }) => out.push(s),
            s => {
                flush(&mut out, &mut pending);
                out.push(s);
            }
        }
    }
    flush(&mut out, &mut pending);
    out
}

/// Run a composed program: what [`walk`] does along the program's chain
/// (counters of every table and entry, metadata, every op in order with
/// its entry's context), without reading the entries.
fn run_program<F: Frontend>(
    f: &F,
    w: &mut Worker<F>,
    pkt: &mut Pkt,
    prog: &Program<F::Ctx>,
    tx: &mut dyn Tx,
) {
    let (shard, now) = (w.shard, w.now_ns);
    for step in prog {
        match step {
            Step::Hit { table, entry, counting } => {
                if let Some(table) = table {
                    table.add(shard, TABLE_LOOKUPS, 1);
                    table.add(shard, TABLE_MATCHED, 1);
                }
                counting.count(entry, shard, pkt.data().len(), now);
            }
            Step::Miss { table } => {
                if let Some(table) = table {
                    table.add(shard, TABLE_LOOKUPS, 1);
                }
                return;
            }
            Step::MissOn { table } => table.add(shard, TABLE_LOOKUPS, 1),
            Step::Metadata { value, mask } => {
                pkt.meta.metadata = (pkt.meta.metadata & !mask) | (value & mask);
                refresh_metadata(&mut pkt.key, &pkt.meta);
            }
            Step::Act { op, ctx } => {
                if let Flow::Stop = run_op(f, w, op, pkt, *ctx, tx) {
                    return;
                }
            }
        }
    }
}

/// The table walk proper. With `chain`, the hops it names replace the
/// lookups (further lookups are live); with `rec`, lookups are recorded
/// for a cache entry while the packet's key stays predictable.
fn walk<F: Frontend>(
    f: &F,
    w: &mut Worker<F>,
    cache: &mut Caches<Program<F::Ctx>>,
    pkt: &mut Pkt,
    tx: &mut dyn Tx,
    chain: Option<&Chain>,
    mut rec: Option<&mut Recorder>,
) {
    let graph = f.graph();
    let mut node = graph.start();
    // The context of the last entry hit: the deferred set runs in it.
    let mut last_ctx: Option<F::Ctx> = None;
    let now = w.now_ns;
    let shard = w.shard;
    let indexed = f.indexed();
    let mut deferred = DeferredSet::default();
    let mut hop_i = 0usize;
    // The fast lookups always report consulted bits; unrecorded walks
    // collect them here and ignore them.
    let mut unused_wc = FlowMask::ZERO;
    // Guard results of an unrecorded walk (a recorded one keeps them in
    // its recorder).
    let mut live_answers: Option<Box<Answers>> = None;
    // Bounded: a graph is acyclic and its goto edges only go to higher
    // tables, so no walk visits more nodes than the graph has.
    for _ in 0..=graph.nodes().len() {
        let (table, next) = match graph.node(node) {
            Some(Node::Apply { table, next }) => (*table, next),
            Some(Node::Branch { test, then, otherwise }) => {
                pkt.fresh();
                let taken = test.eval(&pkt.key);
                // A replayed chain holds the decision it recorded here;
                // the live one must be the same (the entry holds the bits
                // the branch reads).
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
                            r.close(Closed::ChainFull);
                        }
                    }
                }
                node = if taken { *then } else { *otherwise };
                continue;
            }
            Some(Node::End) | None => break,
        };
        let hop = chain.and_then(|c| c.hops().get(hop_i).copied());
        hop_i += 1;
        let Some(t) = f.table(table) else { return };
        pkt.fresh();
        let counted = t.counted();
        if counted {
            t.counters().add(shard, TABLE_LOOKUPS, 1);
        }
        let found = match hop {
            Some(h)
                if h.table == table
                    && (h.entry == Hop::NO_ENTRY || (h.entry as usize) < t.entries().len()) =>
            {
                (h.entry != Hop::NO_ENTRY).then_some(h.entry as usize)
            }
            other => {
                if other.is_some() {
                    cache.stats.chain_mismatches += 1;
                }
                let (rec, live) = (rec.as_deref_mut(), &mut live_answers);
                let at = GuardAt { now_ns: w.now_ns, worker: shard.index(), dry: shard.is_dry() };
                walk_lookup(t, table, pkt, cache, rec, live, &mut unused_wc, indexed, at)
            }
        };
        let Some(i) = found else {
            if let Next::Entry = next {
                // A miss on an entry edge ends the walk (OpenFlow: no
                // entry and no table-miss entry drops).
                return;
            }
            // A graph that goes on after a miss (P4's default path).
            match graph.after(table, next, None) {
                Some(n) => node = n,
                None => break,
            }
            continue;
        };
        if counted {
            t.counters().add(shard, TABLE_MATCHED, 1);
        }
        let Some(e) = t.entries().get(i) else { return };
        e.counting().count(e.counters(), shard, pkt.data().len(), now);
        let ctx = f.ctx(table, e);
        last_ctx = Some(ctx);
        let ops = &**e.ops();
        if let Some(m) = ops.meter {
            // A DSCP remark would change the key by time, not by key:
            // later lookups are not predictable.
            if let Some(r) = rec.as_deref_mut() {
                r.close(Closed::Meter);
            }
            if let Flow::Stop = f.meter(w, m, pkt) {
                return;
            }
        }
        if !ops.apply.is_empty() {
            if let Some(r) = rec.as_deref_mut() {
                r.note_ops(&ops.apply);
            }
            if let Flow::Stop = run_ops(f, w, &ops.apply, pkt, ctx, tx) {
                return;
            }
        }
        if ops.clear {
            deferred.clear();
        }
        if !ops.write.is_empty() {
            deferred.write(&ops.write);
        }
        if let Some((value, mask)) = ops.metadata {
            pkt.meta.metadata = (pkt.meta.metadata & !mask) | (value & mask);
            refresh_metadata(&mut pkt.key, &pkt.meta);
        }
        match graph.after(table, next, Some((ops.action, ops.next))) {
            Some(n) => node = n,
            None => break,
        }
    }
    // The end of the walk: the deferred ops, in the context of the last
    // entry hit.
    if let (Some(ctx), false) = (last_ctx, deferred.is_empty()) {
        run_ops(f, w, deferred.ordered(), pkt, ctx, tx);
    }
}

/// One lookup of a walk that is not replaying a recorded hop: recorded in
/// `rec` while the recording is open (see [`crate::cache`]), live
/// otherwise. A guarded lookup is recorded only while the frame is the
/// one received (a hit rechecks the recorded guards up front, on that
/// frame); one that cannot be recorded closes the recording, so on a hit
/// it and everything after it run live, guards included. Guard results go
/// to the recorder's answers, or with no recorder to `live`'s.
#[allow(clippy::too_many_arguments)]
#[inline]
fn walk_lookup<T: Table, P: ?Sized>(
    t: &T,
    table: u8,
    pkt: &Pkt,
    cache: &Caches<P>,
    rec: Option<&mut Recorder>,
    live: &mut Option<Box<Answers>>,
    unused_wc: &mut FlowMask,
    indexed: bool,
    at: GuardAt,
) -> Option<usize> {
    let guarded = t.has_guards();
    match rec {
        Some(r) if r.open && !(guarded && pkt.edited) => {
            cache.settle(r);
            let i = if guarded {
                let answers = r.answers.get_or_insert_default();
                let i = lookup_guarded(t, table, pkt, &mut r.wc, indexed, answers, at);
                r.guard_len = answers.chain().items().len();
                r.guard_overflow |= answers.chain().overflowed();
                i
            } else if indexed {
                t.lookup_fast(&pkt.key, &mut r.wc)
            } else {
                t.lookup_scan_wc(&pkt.key, &mut r.wc)
            };
            if !r.chain.push(Hop { table, entry: i.map_or(Hop::NO_ENTRY, |i| i as u32) }) {
                r.close(Closed::ChainFull);
            }
            i
        }
        rec => {
            let answers = match rec {
                Some(r) => {
                    if guarded && r.open {
                        r.close(Closed::GuardAfterEdit);
                    }
                    &mut r.answers
                }
                None => live,
            };
            if guarded {
                let answers = answers.get_or_insert_default();
                lookup_guarded(t, table, pkt, unused_wc, indexed, answers, at)
            } else if indexed {
                t.lookup_fast(&pkt.key, unused_wc)
            } else {
                t.lookup_scan(&pkt.key)
            }
        }
    }
}

/// A lookup in table `table` (`t`), which has guarded entries: each
/// matching guarded candidate's guards run through `answers`, in the
/// order of the guard semantics ([`Table::lookup_guarded`]). Out of line:
/// the walk of tables without guards stays as small as before.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn lookup_guarded<T: Table>(
    t: &T,
    table: u8,
    pkt: &Pkt,
    wc: &mut FlowMask,
    indexed: bool,
    answers: &mut Answers,
    at: GuardAt,
) -> Option<usize> {
    let input = GuardInput { frame: pkt.data(), in_port: pkt.meta.in_port, at };
    let entries = t.entries();
    t.lookup_guarded(&pkt.key, wc, indexed, &mut |i| match entries.get(i) {
        Some(e) => answers.all(e.guards().as_slice(), |g| tag(table, i, g), &input),
        None => false,
    })
}

/// Runs ops in order until one stops the packet.
pub fn run_ops<'a, F: Frontend>(
    f: &F,
    w: &mut Worker<F>,
    ops: impl IntoIterator<Item = &'a Op>,
    pkt: &mut Pkt,
    ctx: F::Ctx,
    tx: &mut dyn Tx,
) -> Flow {
    for op in ops {
        if let Flow::Stop = run_op(f, w, op, pkt, ctx, tx) {
            return Flow::Stop;
        }
    }
    Flow::Continue
}

/// Executes one op: header edits here ([`Pkt::edit`]), forwarding by the
/// front end.
#[inline]
pub fn run_op<F: Frontend>(
    f: &F,
    w: &mut Worker<F>,
    op: &Op,
    pkt: &mut Pkt,
    ctx: F::Ctx,
    tx: &mut dyn Tx,
) -> Flow {
    match op {
        Op::Output { .. } | Op::Group(_) | Op::Report(_) => f.forward(w, op, pkt, ctx, tx),
        Op::SetQueue(q) => {
            pkt.queue = Some(*q);
            Flow::Continue
        }
        Op::Key(p) => {
            p.run(&mut pkt.key);
            Flow::Continue
        }
        _ => match pkt.edit(op) {
            Edited::Changed | Edited::Unchanged | Edited::NotAnEdit => Flow::Continue,
            Edited::InvalidTtl => {
                f.ttl_expired(w, pkt, ctx);
                Flow::Stop
            }
        },
    }
}

/// Run frames received with `meta` in stages of up to [`BURST`], so the
/// cache misses of different packets overlap instead of queueing:
/// 1. start loading every frame; copy and parse each;
/// 2. hash each key for the exact cache and start loading its slot;
/// 3. find each packet's first hops (exact cache, megaflow cache, or with
///    caches off the first lookup) and start loading the cache item
///    (composed program) or the entry hit;
/// 4. start loading each item's program;
/// 5. start loading the counter cells each program or entry bumps (and an
///    entry's ops);
/// 6. run each packet, in order, exactly as [`run`] would (cache misses
///    take the recording slow path then).
///
/// Same results as running the frames one at a time: forwarding never
/// changes the tables, so looking up every packet before running the
/// first gives the same entries; meters, counters and upcalls still
/// happen packet by packet in stage 6. Only cache statistics can differ
/// (a flow's second packet in one burst misses where one at a time it
/// would hit the entry the first installed). A frame that does not fit a
/// packet buffer is dropped.
pub fn burst<F: Frontend>(f: &F, w: &mut Worker<F>, meta: Meta, frames: &[&[u8]], tx: &mut dyn Tx) {
    for chunk in frames.chunks(BURST) {
        stage_burst(f, w, meta, &mut Copied(chunk), tx);
    }
}

/// [`burst`] without copying the frames: each packet runs in the caller's
/// buffer, swapped with a pooled packet's for the burst and swapped back
/// after it (so the caller keeps its buffers, holding whatever the
/// packets' edits left; a port refills them on its next receive). The
/// frames may be pushed into their headroom and grown into their
/// tailroom like any packet's; an edit that needs more room than a
/// buffer has is refused as for any packet.
pub fn burst_lent<F: Frontend, B: AsRef<PacketBuf> + AsMut<PacketBuf>>(
    f: &F,
    w: &mut Worker<F>,
    meta: Meta,
    bufs: &mut [B],
    tx: &mut dyn Tx,
) {
    for chunk in bufs.chunks_mut(BURST) {
        stage_burst(f, w, meta, &mut Lent(chunk), tx);
    }
}

/// Where a staged burst's frames come from (at most [`BURST`]).
trait Frames {
    fn count(&self) -> usize;
    /// The first byte of frame `i`, to prefetch.
    fn first_byte(&self, i: usize) -> *const u8;
    /// Put frame `i` in `pkt`'s buffer (not parsed); false if it does not
    /// fit.
    fn place(&mut self, i: usize, pkt: &mut Pkt) -> bool;
    /// After the burst: give back what `place` took from frame `i`.
    fn restore(&mut self, i: usize, pkt: &mut Pkt);
}

/// Frames copied into pooled packets.
struct Copied<'a>(&'a [&'a [u8]]);

impl Frames for Copied<'_> {
    #[inline]
    fn count(&self) -> usize {
        self.0.len().min(BURST)
    }
    #[inline]
    fn first_byte(&self, i: usize) -> *const u8 {
        self.0.get(i).map_or(std::ptr::null(), |f| f.as_ptr())
    }
    #[inline]
    fn place(&mut self, i: usize, pkt: &mut Pkt) -> bool {
        self.0.get(i).is_some_and(|fr| pkt.buf.load(fr).is_ok())
    }
    #[inline]
    fn restore(&mut self, _: usize, _: &mut Pkt) {}
}

/// The caller's buffers, swapped into pooled packets for the burst.
struct Lent<'a, B>(&'a mut [B]);

impl<B: AsRef<PacketBuf> + AsMut<PacketBuf>> Frames for Lent<'_, B> {
    #[inline]
    fn count(&self) -> usize {
        self.0.len().min(BURST)
    }
    #[inline]
    fn first_byte(&self, i: usize) -> *const u8 {
        self.0.get(i).map_or(std::ptr::null(), |b| b.as_ref().data().as_ptr())
    }
    #[inline]
    fn place(&mut self, i: usize, pkt: &mut Pkt) -> bool {
        let Some(b) = self.0.get_mut(i) else { return false };
        std::mem::swap(&mut pkt.buf, b.as_mut());
        true
    }
    #[inline]
    fn restore(&mut self, i: usize, pkt: &mut Pkt) {
        if let Some(b) = self.0.get_mut(i) {
            std::mem::swap(&mut pkt.buf, b.as_mut());
        }
    }
}

/// One stage-by-stage burst of at most [`BURST`] frames.
///
/// With both caches on, each frame first probes the raw-header cache
/// ([`RawKey`]: its first [`RAW_BYTES`] bytes, length and metadata, and
/// which parser or extract program parses it); a hit gives the key and
/// parse summary its parse would give and the exact entry for that key,
/// so the frame is neither parsed nor hashed as a key. A miss is parsed
/// and probes the exact cache, and when its parse read no byte past
/// [`RAW_BYTES`] ([`Pkt::parse_extent`]: the fixed parser's own account,
/// or what a front end's parser returned) and the exact cache now holds
/// its key, the raw cache learns the frame.
fn stage_burst<F: Frontend>(
    f: &F,
    w: &mut Worker<F>,
    meta: Meta,
    frames: &mut impl Frames,
    tx: &mut dyn Tx,
) {
    let n = frames.count();
    for i in 0..n {
        prefetch(frames.first_byte(i));
    }
    let mut pkts = std::mem::take(&mut w.burst);
    let mut raws = std::mem::take(&mut w.raw);
    raws.clear();
    let mut loaded = [false; BURST];
    let (extract, parser) = (f.extract(), f.parser());
    let auto = f.cache_mode() == CacheMode::Auto;
    let start = if auto { adapt::cycles() } else { 0 };
    let mode = mode_of(f, w);
    let raw_on = mode == CacheMode::On;
    // What parses the frame is part of a raw entry's identity.
    let xid = match parser {
        Some(p) => Arc::as_ptr(p).cast::<u8>() as usize,
        None => extract.map_or(0, |x| Arc::as_ptr(x) as usize),
    };
    // The cache is set apart for the burst, so a hit's program can be run
    // straight from it while the worker is borrowed mutably.
    let mut cache = std::mem::take(&mut w.cache);
    for (i, ok) in loaded.iter_mut().enumerate().take(n) {
        let mut p = w.take_pkt();
        p.set_extract(extract);
        p.set_parser(parser);
        *ok = frames.place(i, &mut p);
        if raw_on {
            let rk = RawKey::of(p.data(), &meta);
            cache.raw_prefetch(&rk);
            raws.push(rk);
        } else if *ok {
            p.adopt(meta);
        }
        pkts.push(p);
    }
    let gen = f.generation();
    let mut hops: [Option<Resolved>; BURST] = [None; BURST];
    let mut raw_hit = [false; BURST];
    let mut hashes = [0u64; BURST];
    for (i, ((p, ok), h)) in pkts.iter_mut().zip(&loaded).zip(hashes.iter_mut()).enumerate() {
        if !*ok {
            continue;
        }
        if let Some(rk) = raws.get(i) {
            let (key, info) = (&mut p.key, &mut p.info);
            if let Some(r) = cache.lookup_raw(rk, &meta, xid, gen, key, info) {
                p.adopt_parsed(meta);
                hops[i] = Some(r);
                raw_hit[i] = true;
                continue;
            }
            p.adopt(meta);
        }
        if mode == CacheMode::On {
            *h = cache.exact_hash_prefetch(&p.key);
        }
    }
    // The entry an uncached hit starts with, found once for the stages
    // below.
    let mut firsts: [Option<&<F::Table as Table>::Entry>; BURST] = [None; BURST];
    let stages = pkts.iter().zip(&loaded).zip(&hashes).zip(hops.iter_mut()).zip(firsts.iter_mut());
    for (i, ((((p, ok), h), hop), first)) in stages.enumerate() {
        if *ok {
            if !raw_hit[i] {
                *hop = first_hops(f, &mut cache, &p.key, *h, mode);
                // Learn the frame when its parse stayed inside the raw key.
                if let (Some(rk), Some(_)) = (raws.get(i), hop.as_ref()) {
                    if p.parse_extent().is_some_and(|x| x <= RAW_BYTES) {
                        cache.install_raw(rk, &meta, xid, (&p.key, &p.info), *h, gen);
                    }
                }
            }
            match hop.as_ref() {
                // Its item's slot first; the program it points to in the
                // next stage (reading the slot here would wait for it: the
                // slab of a large cache is mostly not cached).
                Some(r) if r.prog != NO_PROG => cache.prefetch_item(r.prog),
                Some(r) => {
                    *first = first_entry(f, &r.chain);
                    if let Some(e) = *first {
                        prefetch(e.hot_line());
                    }
                }
                None => {}
            }
        }
    }
    // Each hit's program and the counter cells it will bump, whose
    // addresses the slot prefetched just above keeps.
    for hop in hops.iter().take(n).flatten() {
        cache.prefetch_program(hop.prog);
    }
    // Only a packet that takes the slow path installs (a miss, or a hit
    // whose recorded guard results changed): without one, nothing the
    // burst resolved can be replaced before it runs.
    let pin = cache.has_guarded_items()
        || hops.iter().zip(&loaded).take(n).any(|(h, ok)| *ok && h.is_none());
    for (hop, first) in hops.iter().zip(&firsts).take(n) {
        let Some(hop) = hop else { continue };
        if pin && hop.prog != NO_PROG {
            cache.pin(hop.prog);
        }
        if let (NO_PROG, Some(e)) = (hop.prog, first) {
            e.counters().prefetch(w.shard);
            // `EntryOps` is 72 bytes: it may span two lines.
            let ops = Arc::as_ptr(e.ops());
            prefetch(ops);
            prefetch(ops.cast::<u8>().wrapping_add(64));
        }
    }
    // Uncached hits: the entries' first ops, whose address the line
    // prefetched just above holds (by now, mostly arrived).
    for e in firsts.iter().take(n).flatten() {
        if let Some(op) = e.ops().apply.first() {
            prefetch(op);
        }
    }
    for ((p, ok), hop) in pkts.iter_mut().zip(&loaded).zip(&hops) {
        if !*ok {
            continue;
        }
        match hop {
            Some(r) => run_hit(f, w, &mut cache, p, tx, r),
            None => record_walk(f, w, &mut cache, p, tx, None),
        }
    }
    for hop in hops.iter().take(n).flatten().filter(|h| pin && h.prog != NO_PROG) {
        cache.unpin(hop.prog);
    }
    cache.release_held();
    w.cache = cache;
    for (i, p) in pkts.iter_mut().enumerate() {
        frames.restore(i, p);
    }
    w.pool.append(&mut pkts);
    w.burst = pkts;
    w.raw = raws;
    if auto {
        w.gov.account(n, adapt::cycles().wrapping_sub(start));
    }
}

/// The first hops of a packet with `key` without running it: a cache
/// hit's chain, or with caches off the first table's lookup as a one-hop
/// chain (`None`: a cache miss, for the recording slow path).
#[inline]
fn first_hops<F: Frontend>(
    f: &F,
    cache: &mut Caches<Program<F::Ctx>>,
    key: &FlowKey,
    exact_hash: u64,
    mode: CacheMode,
) -> Option<Resolved> {
    if mode != CacheMode::Off {
        return cached_first_hops(f, cache, key, exact_hash, mode);
    }
    let t = f.table(0)?;
    if t.has_guards() || !f.graph().is_plain() {
        // Guards run in packet order, in the run stage, and a graph may
        // start elsewhere than table 0: no lookup ahead of time (an empty
        // chain: all live).
        return Some(Resolved { chain: Chain::default(), prog: NO_PROG });
    }
    let i = if f.indexed() {
        let mut unused_wc = FlowMask::ZERO;
        t.lookup_fast(key, &mut unused_wc)
    } else {
        t.lookup_scan(key)
    };
    let mut chain = Chain::default();
    chain.push(Hop { table: 0, entry: i.map_or(Hop::NO_ENTRY, |i| i as u32) });
    Some(Resolved { chain, prog: NO_PROG })
}

/// [`first_hops`] from the caches. Out of line: inlined into the burst,
/// the copy of the resolved chain out of the cache slot was compiled
/// field by field (about a hundred instructions a packet, measured with
/// cachegrind); here it is one struct copy.
#[inline(never)]
fn cached_first_hops<F: Frontend>(
    f: &F,
    cache: &mut Caches<Program<F::Ctx>>,
    key: &FlowKey,
    exact_hash: u64,
    mode: CacheMode,
) -> Option<Resolved> {
    let gen = f.generation();
    if mode == CacheMode::On {
        if let Some(r) = cache.lookup_exact_hashed(key, exact_hash, gen) {
            return Some(r);
        }
        let r = cache.lookup_megaflow(key, gen)?;
        cache.promote_staged(key, &r, gen);
        return Some(r);
    }
    cache.lookup_megaflow(key, gen)
}

/// The entry a chain's first hop names, if any.
#[inline]
fn first_entry<'a, F: Frontend>(f: &'a F, c: &Chain) -> Option<&'a <F::Table as Table>::Entry> {
    let h = c.hops().first()?;
    f.table(h.table)?.entries().get(h.entry as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_packet::{Field, FIXED_LAYOUT};

    /// A rule of the test front end: a mask/value match and its ops.
    struct Rule {
        mask: FlowMask,
        value: FlowKey,
        ops: Arc<EntryOps>,
        guards: GuardSet,
        counters: Tally,
    }

    impl Entry for Rule {
        fn ops(&self) -> &Arc<EntryOps> {
            &self.ops
        }
        fn guards(&self) -> &GuardSet {
            &self.guards
        }
        fn counters(&self) -> &Tally {
            &self.counters
        }
        fn counting(&self) -> Counting {
            Counting::ALL
        }
    }

    /// A linear-scan table: every examined rule's mask is consulted.
    struct Scan {
        rules: Vec<Rule>,
        counters: Arc<Tally>,
    }

    impl Table for Scan {
        type Entry = Rule;
        fn counters(&self) -> &Arc<Tally> {
            &self.counters
        }
        fn entries(&self) -> &[Rule] {
            &self.rules
        }
        fn has_guards(&self) -> bool {
            false
        }
        fn lookup_fast(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize> {
            self.lookup_scan_wc(key, wc)
        }
        fn lookup_scan(&self, key: &FlowKey) -> Option<usize> {
            self.rules.iter().position(|r| key.matches(&r.mask, &r.value))
        }
        fn lookup_scan_wc(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize> {
            for (i, r) in self.rules.iter().enumerate() {
                for (w, m) in wc.words.iter_mut().zip(r.mask.words) {
                    *w |= m;
                }
                if key.matches(&r.mask, &r.value) {
                    return Some(i);
                }
            }
            None
        }
        fn lookup_guarded(
            &self,
            key: &FlowKey,
            wc: &mut FlowMask,
            _indexed: bool,
            _accept: &mut dyn FnMut(usize) -> bool,
        ) -> Option<usize> {
            self.lookup_scan_wc(key, wc)
        }
    }

    struct Front {
        graph: Graph,
        tables: Vec<Scan>,
        mode: CacheMode,
    }

    impl Frontend for Front {
        type Table = Scan;
        type Ctx = ();
        type Ext = ();
        type Rule = ();
        fn graph(&self) -> &Graph {
            &self.graph
        }
        fn table(&self, id: u8) -> Option<&Scan> {
            self.tables.get(usize::from(id))
        }
        fn generation(&self) -> u64 {
            1
        }
        fn cache_mode(&self) -> CacheMode {
            self.mode
        }
        fn indexed(&self) -> bool {
            true
        }
        fn ctx(&self, _table: u8, _e: &Rule) {}
        fn meter(&self, _w: &mut Worker<Self>, _id: u32, _pkt: &mut Pkt) -> Flow {
            Flow::Continue
        }
        fn forward(
            &self,
            _w: &mut Worker<Self>,
            op: &Op,
            pkt: &mut Pkt,
            _: (),
            tx: &mut dyn Tx,
        ) -> Flow {
            if let Op::Output { port, .. } = op {
                tx.transmit(*port, None, pkt.data());
            }
            Flow::Continue
        }
        fn ttl_expired(&self, _w: &mut Worker<Self>, _pkt: &Pkt, _ctx: ()) {}
    }

    /// A rule matching `field` exactly on `value`, whose ops are `apply`,
    /// going on to `next`.
    fn rule(fields: &[(Field, &[u8])], apply: Vec<Op>, next: Option<u8>) -> Rule {
        let (mut value, mut mask) = (FlowKey::ZERO, FlowMask::ZERO);
        for (f, v) in fields {
            FIXED_LAYOUT.add_match(&mut value, &mut mask, *f, v, None).expect("a valid field");
        }
        let ops = EntryOps { apply: apply.into(), next, ..EntryOps::default() };
        Rule {
            mask,
            value,
            ops: Arc::new(ops),
            guards: GuardSet::default(),
            counters: Tally::new(3, 1),
        }
    }

    fn table(rules: Vec<Rule>) -> Scan {
        Scan { rules, counters: Arc::new(Tally::new(2, 1)) }
    }

    /// Ethernet + IPv4 to 10.1.2.3, 60 bytes.
    fn frame() -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&46u16.to_be_bytes());
        f[22] = 64;
        f[30..34].copy_from_slice(&[10, 1, 2, 3]);
        f
    }

    fn run_once(front: &Front, w: &mut Worker<Front>, mode: CacheMode) -> (Served, Vec<u32>) {
        let mut pkt = w.take_pkt();
        let meta = Meta { in_port: 1, in_phy_port: 1, metadata: 0, tunnel_id: 0 };
        assert!(pkt.load(&frame(), meta));
        let mut out = Vec::new();
        let served = run_served(
            front,
            w,
            &mut pkt,
            &mut |p: u32, _: Option<u32>, _: &[u8]| out.push(p),
            mode,
        );
        w.put_pkt(pkt);
        (served, out)
    }

    fn mask_of(fields: &[Field]) -> FlowMask {
        let mut m = FlowMask::ZERO;
        for f in fields {
            let ones = vec![0xff; f.len()];
            FIXED_LAYOUT.set_field_mask(&mut m, *f, &ones).expect("a valid field");
        }
        // Only the fields' own bits (not the presence bits they depend on).
        m.words[sluice_packet::key::PRESENCE_WORD] = 0;
        m
    }

    /// The recording [`run_served`] reports is the one installed: its mask
    /// holds exactly the consulted fields, the second packet hits the
    /// cache the mode puts first, and a structural edit is named.
    #[test]
    fn run_served_reports_the_recording_and_the_serving_cache() {
        let eth = [0x08u8, 0x00];
        let t0 = table(vec![
            rule(&[(Field::EthDst, &[2, 0, 0, 0, 0, 9])], vec![], None),
            rule(&[(Field::EthType, &eth)], vec![], Some(1)),
        ]);
        let t1 = table(vec![rule(
            &[(Field::EthType, &eth), (Field::Ipv4Dst, &[10, 1, 2, 3])],
            vec![Op::Output { port: 2, max_len: 0 }],
            None,
        )]);
        let front = Front { graph: Graph::tables(2), tables: vec![t0, t1], mode: CacheMode::On };
        let mut w = Worker::new(Shard::OWNER, ());
        let (first, out) = run_once(&front, &mut w, CacheMode::On);
        assert_eq!(out, [2]);
        let Served::Miss(rec) = first else { panic!("a miss first: {first:?}") };
        assert!(rec.installed && rec.composed, "{rec:?}");
        assert_eq!(rec.hops, 2);
        assert_eq!(rec.closed, None);
        let want = mask_of(&[Field::EthDst, Field::EthType, Field::Ipv4Dst]);
        // The presence bits the fields depend on are consulted too.
        let fields_only = FlowMask {
            words: std::array::from_fn(|i| {
                if i == sluice_packet::key::PRESENCE_WORD {
                    0
                } else {
                    rec.wc.words[i]
                }
            }),
        };
        assert_eq!(fields_only, want);
        assert_eq!(run_once(&front, &mut w, CacheMode::On).0, Served::Exact);
        let mut w = Worker::new(Shard::OWNER, ());
        run_once(&front, &mut w, CacheMode::Megaflow);
        assert_eq!(run_once(&front, &mut w, CacheMode::Megaflow).0, Served::Megaflow);
        assert_eq!(run_once(&front, &mut w, CacheMode::Off).0, Served::Tables);

        // A pop of a (missing) VLAN tag in table 0 ends the recording:
        // table 1's lookup is not in the mask.
        let t0 = table(vec![rule(&[(Field::EthType, &eth)], vec![Op::PopVlan], Some(1))]);
        let t1 = table(vec![rule(&[(Field::Ipv4Dst, &[10, 1, 2, 3])], vec![], None)]);
        let front = Front { graph: Graph::tables(2), tables: vec![t0, t1], mode: CacheMode::On };
        let mut w = Worker::new(Shard::OWNER, ());
        let Served::Miss(rec) = run_once(&front, &mut w, CacheMode::Megaflow).0 else {
            panic!("a miss first")
        };
        assert_eq!(rec.closed, Some(Closed::Structural));
        assert!(rec.installed && !rec.composed);
        assert_eq!(rec.hops, 1);
        let ip = mask_of(&[Field::Ipv4Dst]);
        assert!(rec.wc.words.iter().zip(ip.words).all(|(w, m)| w & m == 0), "{:?}", rec.wc);
    }
}
