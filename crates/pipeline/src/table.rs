//! Flow tables: a priority-sorted vector (the reference order), plus an
//! optional tuple-space index over the same entries.
//!
//! The vector is deliberately the simplest correct structure (BOFUSS's
//! linear list, but with matches compiled to key words): it *defines*
//! lookup semantics, and [`FlowTable::lookup`] is the linear scan every
//! fast path is tested against. Ties between overlapping entries of equal
//! priority — which the spec leaves undefined — are broken by insertion
//! order (the older entry, lower `seq`, wins), so the reference is
//! deterministic.
//!
//! With `Datapath::Classifier` the table also keeps a
//! [`sluice_classifier::Classifier`] holding one rule per entry, keyed by
//! the entry's `seq` (`RuleId(seq)`, same priority and same `seq`
//! tie-break, hence the same answer). A classifier hit names a `seq`; a
//! `seq → index` map turns it into the entry's place in the vector in O(1).
//!
//! ## Cost of flow-mods
//! The vector holds shared pointers to the entries, so every move below
//! moves pointers (a rule alone is 48 words).
//! - insert: binary search, `Vec::insert` (moves the pointers after the
//!   insertion point: O(n) memmove of 8-byte pointers), classifier insert
//!   (O(log n) plus O(number of masks) to keep the probe order), and
//!   marking the `seq → index` map stale from the insertion point.
//! - DELETE_STRICT ([`FlowTable::remove_strict`]): the strict index's
//!   hash probe and a binary search find the entry; removing it moves the
//!   pointers after it. Other deletes (`remove_where`): one O(n) pass
//!   compacting in place. Either way one classifier remove per removed
//!   entry, and the map marked stale from the first removed position.
//! - A published copy replays a removal of a few entries by binary search
//!   per entry, of many by one pass.
//! - The stale part of the map is rebuilt on the next indexed lookup
//!   (O(n − first stale position) once per batch of flow-mods, not per
//!   flow-mod). Appends at the end of a priority level, the common case of
//!   bulk loads in priority order, touch one map slot.
//! - Every ADD first looks for an identical entry (same priority and
//!   rule): a hash probe on (priority, rule) for candidate seqs, then a
//!   binary search for each one's position, so bulk loads stay
//!   O(n log n) instead of O(n²). A hash's seqs are one inline value
//!   unless (priority, rule) repeats, so an ADD allocates nothing there.
//! - Published copies replay the logged ops (below); the two log
//!   buffers are reused from one publication to the next.
//! - modify (instructions only) and replace (same rule, priority and seq)
//!   do not touch the index.
//!
//! ## Compiled tables (`Datapath::Compiled`)
//! Every table also gets native code (`codegen.rs`, `sluice-tablejit`):
//! straight-line tests for at most [`COMPILE_MAX`] entries (per-port
//! variants when entries match on `in_port`), Cranelift hash probes with
//! constant masks above. The code gives the same entry as
//! [`FlowTable::lookup`]; built when the table is settled after a change
//! (on the control side, never per packet) — on the compiler thread when
//! [`JitOptions::background`] is set, large tables only after
//! [`QUIET`] without changes. Until code is installed, when a table has
//! too many masks for probes, or when Cranelift fails, lookups use the
//! tuple-space index. A change drops the code and cancels a pending
//! build, so installed code always matches the entries. Published copies
//! never compile: they take the master's code (same entries, same order)
//! at the publication after it was installed.
//!
//! ## Publishing (two copies, one log)
//! The daemon's workers read published copies of the tables (see
//! `crate::publish`). Cloning a 100k-entry table per flow-mod batch would
//! make flow-mods O(table size), so a table being published records its
//! changes as [`TableOp`]s (insert, batch removal by seq, replace) and the
//! publisher replays them on the copy no worker reads any more — the
//! left-right scheme: two copies, each brought up to date with the ops it
//! missed. Replaying is deterministic because ops name entries by
//! (priority, seq), never by a predicate that could see other counters.
//! Counters are not part of the log: an entry's [`Tally`] is shared by
//! every copy of it.
//!
//! ## Invariants
//! - `entries` is sorted by (priority desc, seq asc); seqs are unique.
//! - With an index: the classifier holds exactly one rule per entry, with
//!   that entry's mask, value, priority and seq; map slots for positions
//!   below `stale_from` are exact.
//! - Callers that change entries in place (counters, instructions) never
//!   change `rule`, `priority` or `seq` ([`FlowTable::update`] is
//!   crate-private for that reason).

use crate::codegen::{self, Code, Compiler, JitOptions, Job, QUIET};
use crate::rule::Rule;
use crate::tally::{Shard, Tally};
use sluice_classifier::{Classifier, RuleId, RuleSpec};
use sluice_core::guard::GuardSet;
use sluice_core::op::EntryOps;
use sluice_core::walk::Counting;
use sluice_ofp::instruction::Instruction;
use sluice_ofp::oxm::Match;
use sluice_packet::key::{FlowKey, FlowMask};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// One flow entry.
///
/// `repr(C, align(64))` with what a forwarded packet reads first: the ops,
/// the counters, the guards and the flags share the entry's first cache
/// line, which the staged burst prefetches, instead of three lines spread
/// over the 512-byte entry where Rust's own field order put them. With
/// 10k and 100k rules and no cache that was 15–45 % of the packet rate
/// (`docs/BENCHMARKS.md`, issue 12's fourth session).
#[derive(Clone, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct FlowEntry {
    /// The instructions lowered to the core's ops when the entry was
    /// installed or modified (`lower.rs`): what every other datapath runs.
    /// Always `lower_instructions(&instructions)`.
    pub ops: Arc<EntryOps>,
    /// Packets, bytes and last-use time ([`FlowEntry::PACKETS`], …), per
    /// worker; shared by every published copy of this entry.
    pub stats: Tally,
    /// Predicates run after the match (see `sluice_core::guard`); empty
    /// for an OpenFlow rule without sluice's guard extensions.
    pub guards: GuardSet,
    /// `OFPFF_*` flags.
    pub flags: u16,
    pub priority: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub cookie: u64,
    /// Pipeline time (ns) when installed (or last replaced by ADD).
    pub installed_ns: u64,
    /// Insertion sequence number: breaks priority ties, oldest first.
    pub seq: u64,
    /// As the controller sent them (echoed in replies, and what the
    /// reference datapath and `Pipeline::trace` interpret).
    pub instructions: Arc<[Instruction]>,
    /// The match as the controller sent it (echoed in replies).
    pub r#match: Match,
    pub rule: Rule,
}

impl FlowEntry {
    /// Counters of [`FlowEntry::stats`].
    pub const PACKETS: usize = sluice_core::walk::ENTRY_PACKETS;
    pub const BYTES: usize = sluice_core::walk::ENTRY_BYTES;
    /// Pipeline time (ns) of the last packet (a maximum, not a sum).
    pub const USED: usize = sluice_core::walk::ENTRY_USED;

    /// Fresh counters for an entry, for a pipeline with `shards` shards.
    pub fn new_stats(shards: usize) -> Tally {
        Tally::new(3, shards)
    }

    /// A table-miss entry: priority 0 and no match fields.
    pub fn is_table_miss(&self) -> bool {
        self.priority == 0 && self.rule.is_catch_all()
    }

    pub fn packet_count(&self) -> u64 {
        self.stats.sum(Self::PACKETS)
    }

    pub fn byte_count(&self) -> u64 {
        self.stats.sum(Self::BYTES)
    }

    /// The idle and hard timeouts, in the core's terms.
    pub fn timeouts(&self) -> sluice_core::upcall::Timeouts {
        const S: u64 = 1_000_000_000;
        sluice_core::upcall::Timeouts {
            idle_ns: u64::from(self.idle_timeout) * S,
            hard_ns: u64::from(self.hard_timeout) * S,
        }
    }

    /// Pipeline time (ns) of the last packet, or of installation.
    pub fn last_used_ns(&self) -> u64 {
        self.stats.max(Self::USED).max(self.installed_ns)
    }

    /// Count one packet of `bytes` at `now_ns` (honouring `NO_PKT_COUNTS`
    /// and `NO_BYT_COUNTS`).
    #[inline]
    pub(crate) fn hit(&self, s: Shard, bytes: usize, now_ns: u64) {
        Self::counting(self.flags).count(&self.stats, s, bytes, now_ns);
    }

    /// Which counters a hit of an entry with `flags` bumps: OpenFlow's
    /// `NO_PKT_COUNTS` and `NO_BYT_COUNTS` opt out.
    #[inline]
    pub(crate) fn counting(flags: u16) -> Counting {
        use sluice_ofp::message::flow_mod_flags as ff;
        Counting {
            packets: flags & ff::NO_PKT_COUNTS == 0,
            bytes: flags & ff::NO_BYT_COUNTS == 0,
            used: true,
        }
    }
}

/// One change to a table, as replayed on a published copy.
#[derive(Clone, Debug)]
pub(crate) enum TableOp {
    Insert(Arc<FlowEntry>),
    /// Remove the entries with these (priority, seq).
    Remove(Vec<(u16, u64)>),
    /// Replace the entry with this (priority, seq).
    Replace(u16, u64, Arc<FlowEntry>),
    Indexed(bool),
    Compiled(bool),
}

/// Largest table compiled to native code (bigger ones use the index).
pub const COMPILE_MAX: usize = 64;

/// A table's compiled code, if any, and whether it is out of date (see
/// `codegen.rs`).
#[derive(Clone, Debug, Default)]
struct Jit {
    /// Compile at all (`Datapath::Compiled`).
    on: bool,
    /// A published copy: it takes the master's code and never compiles.
    follower: bool,
    opts: JitOptions,
    /// The entries changed since `code` was made or `job` submitted.
    stale: bool,
    /// When the entries last changed, by the compiler's clock (large
    /// tables wait for [`QUIET`]).
    changed_at: Option<u64>,
    /// Where background builds go (`None`: built at settle time).
    compiler: Option<Arc<dyn Compiler>>,
    code: Option<Arc<Code>>,
    /// A build on the compiler thread for the current entries.
    job: Option<Arc<Job>>,
}

impl Jit {
    /// What a published copy holds: the code, nothing to build.
    fn follower(&self) -> Jit {
        Jit {
            on: self.on,
            follower: true,
            opts: self.opts,
            stale: false,
            changed_at: None,
            compiler: None,
            code: self.code.clone(),
            job: None,
        }
    }

    /// Whether settling would install or submit something.
    fn waiting(&self) -> bool {
        !self.follower && self.on && (self.stale || self.job.is_some())
    }
}

/// Changes not yet replayed on the published copies: `cur` since the
/// last publication, `prev` those of the last publication, which the copy
/// that was published before it has not seen.
#[derive(Clone, Debug, Default)]
struct OpLog {
    on: bool,
    cur: Vec<TableOp>,
    prev: Vec<TableOp>,
}

impl OpLog {
    /// Largest buffer kept for reuse (ops): a one-off huge batch (a bundle
    /// commit) does not pin its memory.
    const KEEP: usize = 4096;

    /// An emptied buffer to reuse as `cur`.
    fn recycled(buf: Vec<TableOp>) -> Vec<TableOp> {
        debug_assert!(buf.is_empty());
        if buf.capacity() > Self::KEEP {
            Vec::new()
        } else {
            buf
        }
    }
}

/// Hasher for `seq` keys: one multiply (seqs are trusted and distinct).
#[derive(Clone, Copy, Debug, Default)]
struct SeqHasher(u64);

impl Hasher for SeqHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        let r = u128::from(n ^ self.0) * 0x9e37_79b9_7f4a_7c15;
        self.0 = (r as u64) ^ ((r >> 64) as u64);
    }
}

type SeqMap = HashMap<u64, u32, BuildHasherDefault<SeqHasher>>;

/// The seqs of the entries whose (priority, rule) share one strict hash:
/// almost always one, kept inline (a `Vec` per entry was an allocation
/// per flow-mod, three times over with the published copies).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seqs {
    One(u64),
    Many(Vec<u64>),
}

impl Seqs {
    fn as_slice(&self) -> &[u64] {
        match self {
            Seqs::One(s) => std::slice::from_ref(s),
            Seqs::Many(v) => v,
        }
    }

    fn push(&mut self, seq: u64) {
        match self {
            Seqs::One(s) => *self = Seqs::Many(vec![*s, seq]),
            Seqs::Many(v) => v.push(seq),
        }
    }

    /// Removes `seq`; returns whether none is left.
    fn remove(&mut self, seq: u64) -> bool {
        match self {
            Seqs::One(s) => *s == seq,
            Seqs::Many(v) => {
                v.retain(|&s| s != seq);
                match v.as_slice() {
                    [] => true,
                    &[s] => {
                        *self = Seqs::One(s);
                        false
                    }
                    _ => false,
                }
            }
        }
    }
}

/// The strict index: [`strict_hash`] (already a good hash, so the map
/// only folds it once more) → seqs.
type StrictMap = HashMap<u64, Seqs, BuildHasherDefault<SeqHasher>>;

/// An entry's place in table order: higher priority first, then older
/// (lower seq) first.
fn rank(priority: u16, seq: u64) -> (std::cmp::Reverse<u16>, u64) {
    (std::cmp::Reverse(priority), seq)
}

fn has_timeout(e: &FlowEntry) -> bool {
    e.idle_timeout != 0 || e.hard_timeout != 0
}

/// Hash of (priority, rule) for the strict index: a folded multiply per
/// word (the rules are the controller's, trusted; collisions only cost a
/// comparison). SipHash over the 48 words was a visible part of a bulk
/// flow-mod load.
fn strict_hash(priority: u16, rule: &Rule) -> u64 {
    let fold = |h: u64, w: u64| {
        let r = u128::from(h ^ w) * 0x9e37_79b9_7f4a_7c15;
        (r as u64) ^ ((r >> 64) as u64)
    };
    let words = rule.mask.words.iter().chain(rule.value.words.iter());
    words.fold(fold(0x243f_6a88_85a3_08d3, u64::from(priority)), |h, &w| fold(h, w))
}

/// The tuple-space index of a table's entries.
#[derive(Clone, Debug)]
struct Index {
    cls: Classifier,
    /// `seq` → position in `entries`; exact below `stale_from`.
    pos: SeqMap,
    stale_from: usize,
}

fn spec_of(e: &FlowEntry) -> RuleSpec {
    RuleSpec { mask: e.rule.mask, value: e.rule.value, priority: e.priority, seq: e.seq }
}

/// One flow table.
#[derive(Clone, Debug)]
pub struct FlowTable {
    /// Sorted by priority (highest first), then by `seq` (oldest first).
    /// Behind pointers: an insert or remove in the middle moves pointers,
    /// not entries (a rule alone is 48 words; moving whole entries was
    /// most of a flow-mod's cost in a table of thousands, and the vectors
    /// `remove_where` used to split off fragmented the heap). Shared: the
    /// published copies hold the same entries, not clones of them (an
    /// entry changed in place is copied first, [`FlowTable::update`]).
    entries: Vec<Arc<FlowEntry>>,
    /// Tuple-space index (`Datapath::Classifier`), or `None` (reference).
    index: Option<Box<Index>>,
    /// Hash of (priority, rule) → seqs of the entries with that hash: a
    /// strict lookup (the one every ADD does) without scanning the vector.
    strict: StrictMap,
    /// Entries with an idle or hard timeout (expiry scans skip tables
    /// without any).
    timed: usize,
    /// Entries with guards (lookups in tables without any never call a
    /// guard).
    guarded: usize,
    pub max_entries: usize,
    /// Lookups and matches ([`FlowTable::LOOKUPS`], [`FlowTable::MATCHED`]).
    pub stats: Arc<Tally>,
    /// Changes for the published copies (off unless published).
    log: OpLog,
    /// Native code for the table (`Datapath::Compiled`, small tables).
    jit: Jit,
    /// `OFPTC_*` config bits set by TABLE_MOD (all deprecated in 1.3; kept
    /// for reporting).
    pub config: u32,
}

impl FlowTable {
    pub const LOOKUPS: usize = sluice_core::walk::TABLE_LOOKUPS;
    pub const MATCHED: usize = sluice_core::walk::TABLE_MATCHED;

    /// An empty table counting into `shards` shards.
    pub fn new(max_entries: usize, shards: usize) -> Self {
        FlowTable {
            entries: Vec::new(),
            index: None,
            strict: StrictMap::default(),
            timed: 0,
            guarded: 0,
            max_entries,
            stats: Arc::new(Tally::new(2, shards)),
            log: OpLog::default(),
            jit: Jit::default(),
            config: 0,
        }
    }

    pub fn lookup_count(&self) -> u64 {
        self.stats.sum(Self::LOOKUPS)
    }

    pub fn matched_count(&self) -> u64 {
        self.stats.sum(Self::MATCHED)
    }

    fn log(&mut self, op: impl FnOnce() -> TableOp) {
        if self.log.on {
            self.log.cur.push(op());
        }
    }

    /// Start recording changes for published copies (the copies are made
    /// from this table as it is now).
    pub(crate) fn start_log(&mut self) {
        self.log = OpLog { on: true, cur: Vec::new(), prev: Vec::new() };
    }

    /// A copy to publish: same entries, index and counters, no log.
    pub(crate) fn replica(&self) -> FlowTable {
        let mut t = FlowTable {
            entries: self.entries.clone(),
            index: self.index.clone(),
            strict: self.strict.clone(),
            timed: self.timed,
            guarded: self.guarded,
            max_entries: self.max_entries,
            stats: self.stats.clone(),
            log: OpLog::default(),
            jit: self.jit.follower(),
            config: self.config,
        };
        t.settle();
        t
    }

    /// Bring `copy` (which has seen everything up to the publication
    /// before the last one) up to date with this table, and remember the
    /// changes since the last publication for the other copy.
    pub(crate) fn sync_copy(&mut self, copy: &mut FlowTable, code_changed: bool) {
        copy.max_entries = self.max_entries;
        copy.config = self.config;
        if self.log.cur.is_empty() && self.log.prev.is_empty() {
            // Nothing changed in this table since either copy was synced:
            // publications touching other tables cost nothing here, but
            // code finished since then is handed over.
            if code_changed {
                self.share_code(copy);
            }
            return;
        }
        // The previous publication's ops are replayed for the last time
        // (the other copy saw them then): moved, not cloned. Its buffer
        // becomes the next `cur`, so a burst of batches reuses two
        // buffers instead of growing a fresh one per publication.
        let mut prev = std::mem::take(&mut self.log.prev);
        for op in prev.drain(..) {
            copy.apply_owned(op);
        }
        for op in &self.log.cur {
            copy.apply(op);
        }
        self.log.prev = std::mem::replace(&mut self.log.cur, OpLog::recycled(prev));
        self.share_code(copy);
        copy.settle();
        debug_assert_eq!(copy.entries.len(), self.entries.len());
    }

    /// The copy due for syncing was replaced by a fresh replica (which
    /// has everything): the changes since the last publication are owed
    /// to the other copy only.
    pub(crate) fn skip_copy(&mut self) {
        let mut prev = std::mem::take(&mut self.log.prev);
        prev.clear();
        self.log.prev = std::mem::replace(&mut self.log.cur, OpLog::recycled(prev));
    }

    /// [`FlowTable::apply`] of an op no one needs afterwards.
    fn apply_owned(&mut self, op: TableOp) {
        match op {
            TableOp::Insert(e) => self.insert_shared(e),
            TableOp::Replace(priority, seq, e) => {
                if let Some(i) = self.position(priority, seq) {
                    self.replace_shared(i, e);
                }
            }
            other => self.apply(&other),
        }
    }

    fn apply(&mut self, op: &TableOp) {
        match op {
            TableOp::Insert(e) => self.insert_shared(e.clone()),
            TableOp::Remove(keys) => self.remove_keys(keys),
            TableOp::Replace(priority, seq, e) => {
                if let Some(i) = self.position(*priority, *seq) {
                    self.replace_shared(i, e.clone());
                }
            }
            TableOp::Indexed(on) => self.set_indexed(*on),
            TableOp::Compiled(on) => self.set_compiled(*on),
        }
    }

    /// Same entries in the same order as the master (settled before it
    /// publishes): the copy shares the master's code, never compiles.
    fn share_code(&self, copy: &mut FlowTable) {
        let same = match (&self.jit.code, &copy.jit.code) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if !same || copy.jit.on != self.jit.on {
            copy.jit = self.jit.follower();
        }
    }

    /// Compile (or stop compiling) this table to native code (see
    /// `codegen.rs`).
    pub fn set_compiled(&mut self, on: bool) {
        self.log(|| TableOp::Compiled(on));
        if let Some(j) = self.jit.job.take() {
            j.cancel();
        }
        self.jit = Jit {
            on,
            follower: self.jit.follower,
            opts: self.jit.opts,
            stale: on,
            changed_at: None,
            compiler: self.jit.compiler.take(),
            code: None,
            job: None,
        };
    }

    /// How this table is compiled (master tables only; copies follow).
    pub fn set_jit_options(&mut self, opts: JitOptions) {
        self.jit.opts = opts;
    }

    /// Where this table's code is built when `opts.background` is set.
    pub fn set_compiler(&mut self, c: Option<Arc<dyn Compiler>>) {
        self.jit.compiler = c;
    }

    /// Whether lookups currently run compiled code.
    pub fn is_compiled(&self) -> bool {
        self.jit.code.is_some()
    }

    /// The kind of compiled code lookups run, if any.
    pub fn code_kind(&self) -> Option<&'static str> {
        self.jit.code.as_ref().map(|c| c.kind())
    }

    /// Whether compiled code is due to be installed or built (settle the
    /// table to make progress).
    pub(crate) fn jit_waiting(&self) -> bool {
        self.jit.waiting()
    }

    /// The entries changed: compiled code (positions) is out of date.
    fn entries_changed(&mut self) {
        if self.jit.on {
            self.jit.code = None;
            self.jit.stale = true;
            self.jit.changed_at = self.jit.compiler.as_ref().map(|c| c.now_ns());
            if let Some(j) = self.jit.job.take() {
                j.cancel();
            }
        }
    }

    /// Install finished code, or build / submit code for stale entries.
    /// Returns whether lookups now run other code than before.
    fn settle_jit(&mut self) -> bool {
        let jit = &mut self.jit;
        if !jit.on || jit.follower {
            return false;
        }
        let mut changed = false;
        if jit.job.as_ref().is_some_and(|j| j.is_done()) {
            jit.code = jit.job.take().and_then(|j| j.take());
            changed = true;
        }
        if !jit.stale {
            return changed;
        }
        let large = self.entries.len() > jit.opts.straight_max;
        let background = jit.compiler.as_ref().filter(|_| jit.opts.background);
        if let (true, Some(c), Some(at)) = (large, background, jit.changed_at) {
            if c.now_ns().saturating_sub(at) < QUIET.as_nanos() as u64 {
                return changed;
            }
        }
        jit.stale = false;
        // A snapshot of the entries (pointers): the code is built from it
        // while the table goes on changing.
        let rules = self.entries.clone();
        if let Some(c) = background {
            jit.job = Some(codegen::submit(rules, jit.opts, self.guarded > 0, &**c));
            changed
        } else {
            // On a compiler error (or a table left to the index) the index
            // serves the table.
            jit.code = codegen::build(&rules, &jit.opts, self.guarded > 0).map(Arc::new);
            true
        }
    }

    /// Rebuild the stale part of the `seq → position` map, so lookups
    /// need no binary search.
    /// Returns whether the table's compiled code changed (installed or
    /// built), which the published copies must then take.
    pub(crate) fn settle(&mut self) -> bool {
        if let Some(ix) = self.index.as_deref_mut() {
            if ix.stale_from < self.entries.len() {
                for (i, e) in self.entries.iter().enumerate().skip(ix.stale_from) {
                    ix.pos.insert(e.seq, i as u32);
                }
            }
            ix.stale_from = self.entries.len();
        }
        self.settle_jit()
    }

    /// The fastest lookup the table has: compiled code, else the
    /// tuple-space index, else the scan. Same answer as
    /// [`FlowTable::lookup`]; ORs the consulted key bits into `wc`.
    #[inline]
    pub fn lookup_fast(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize> {
        match &self.jit.code {
            Some(c) => c.lookup(key, wc),
            None => self.lookup_indexed(key, wc),
        }
    }

    /// Keep (or stop keeping) the tuple-space index. Building it costs one
    /// classifier insert per entry.
    pub fn set_indexed(&mut self, on: bool) {
        self.log(|| TableOp::Indexed(on));
        if !on {
            self.index = None;
            return;
        }
        if self.index.is_some() {
            return;
        }
        let mut ix = Index { cls: Classifier::new(), pos: SeqMap::default(), stale_from: 0 };
        for e in &self.entries {
            // Entries come from `Rule::compile` (value inside mask) and
            // have unique seqs, so this cannot fail.
            let r = ix.cls.insert(RuleId(e.seq), spec_of(e));
            debug_assert!(r.is_ok(), "index insert: {r:?}");
        }
        self.index = Some(Box::new(ix));
    }

    /// Whether the tuple-space index is kept.
    pub fn is_indexed(&self) -> bool {
        self.index.is_some()
    }

    /// The entries in table order (priority, highest first; then oldest
    /// first).
    pub fn entries(&self) -> &[Arc<FlowEntry>] {
        &self.entries
    }

    /// Change entry `i` in place (instructions, counters). `f` must not
    /// change `rule`, `priority` or `seq` (the order and the index depend
    /// on them).
    pub(crate) fn update(&mut self, i: usize, f: impl FnOnce(&mut FlowEntry)) {
        let Some(e) = self.entries.get_mut(i) else { return };
        // Copied first when the published copies share it: they keep the
        // old entry until they replay the Replace below.
        let e = Arc::make_mut(e);
        let before = (e.priority, e.seq, e.rule);
        let timed = has_timeout(e);
        let guards = e.guards.clone();
        f(e);
        debug_assert_eq!(before, (e.priority, e.seq, e.rule), "update changed the entry's key");
        debug_assert_eq!(timed, has_timeout(e));
        debug_assert_eq!(guards, e.guards, "update changed the entry's guards");
        if self.log.on {
            let (priority, seq) = (e.priority, e.seq);
            self.log.cur.push(TableOp::Replace(priority, seq, self.entries[i].clone()));
        }
    }

    /// Whether any entry has an idle or hard timeout.
    pub fn has_timeouts(&self) -> bool {
        self.timed > 0
    }

    /// Whether any entry has guards.
    pub fn has_guards(&self) -> bool {
        self.guarded > 0
    }

    /// The lookup of a table whose entries may carry guards: the first
    /// entry in table order (priority, then age) whose rule matches `key`
    /// and for which `accept(position)` returns true. `accept` is called
    /// only for matching entries that have guards (an entry without any
    /// is accepted at once), in table order, each at most once, and not
    /// after the first accepted: the guard semantics of ARCHITECTURE.md.
    /// `indexed` picks the fast structures (the table's compiled code when
    /// it was built resumable, else the tuple-space index when the table
    /// keeps one) over the scan, all with the same answers and calls; the
    /// key bits consulted are OR-ed into `wc`.
    pub fn lookup_guarded(
        &self,
        key: &FlowKey,
        wc: &mut FlowMask,
        indexed: bool,
        accept: &mut dyn FnMut(usize) -> bool,
    ) -> Option<usize> {
        let mut take =
            |i: usize| self.entries.get(i).is_some_and(|e| e.guards.is_empty() || accept(i));
        if let (true, Some(c)) = (indexed, self.jit.code.as_deref()) {
            if let Ok(hit) = c.lookup_guarded(key, wc, &mut take) {
                return hit;
            }
        }
        match self.index.as_deref() {
            Some(ix) if indexed => {
                let hit = ix.cls.lookup_guarded(key, wc, |h| {
                    match self.position(h.priority, h.id.0) {
                        Some(i) => take(i),
                        None => false,
                    }
                })?;
                self.position(hit.priority, hit.id.0)
            }
            _ => {
                for (i, e) in self.entries.iter().enumerate() {
                    for (w, m) in wc.words.iter_mut().zip(e.rule.mask.words.iter()) {
                        *w |= *m;
                    }
                    if e.rule.matches(key) && take(i) {
                        return Some(i);
                    }
                }
                None
            }
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.max_entries
    }

    /// Index of the entry a packet with `key` hits: the first (highest
    /// priority, oldest) matching entry.
    pub fn lookup(&self, key: &FlowKey) -> Option<usize> {
        self.entries.iter().position(|e| e.rule.matches(key))
    }

    /// [`FlowTable::lookup`] that also ORs the masks of every entry it
    /// examined into `wc`: a valid un-wildcarding mask (each skipped entry
    /// mismatched on bits of its own mask, the hit matched on its mask).
    pub fn lookup_scan_wc(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize> {
        for (i, e) in self.entries.iter().enumerate() {
            for (w, m) in wc.words.iter_mut().zip(e.rule.mask.words.iter()) {
                *w |= *m;
            }
            if e.rule.matches(key) {
                return Some(i);
            }
        }
        None
    }

    /// The same answer as [`FlowTable::lookup`], through the tuple-space
    /// index when the table keeps one (linear scan otherwise). ORs the key
    /// bits consulted into `wc`. The hit's position comes from the
    /// `seq → position` map when that part of it is exact (always, once
    /// [`FlowTable::settle`]d), else from a binary search.
    pub fn lookup_indexed(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize> {
        let Some(ix) = self.index.as_deref() else {
            return self.lookup_scan_wc(key, wc);
        };
        let hit = ix.cls.lookup(key, wc)?;
        let i = match ix.pos.get(&hit.id.0) {
            Some(&p) if (p as usize) < ix.stale_from => p as usize,
            _ => self.position(hit.priority, hit.id.0)?,
        };
        debug_assert_eq!(self.entries.get(i).map(|e| e.seq), Some(hit.id.0));
        Some(i)
    }

    /// Index of the entry with exactly this rule and priority: a hash probe
    /// for the candidates' seqs, a binary search for each one's position.
    pub fn find_strict(&self, rule: &Rule, priority: u16) -> Option<usize> {
        self.find_strict_by(rule, priority, |_| true)
    }

    /// [`FlowTable::find_strict`] among the entries `also` accepts (rules
    /// whose guard fields are part of their identity).
    pub fn find_strict_by(
        &self,
        rule: &Rule,
        priority: u16,
        also: impl Fn(&FlowEntry) -> bool,
    ) -> Option<usize> {
        let seqs = self.strict.get(&strict_hash(priority, rule))?;
        seqs.as_slice().iter().find_map(|&seq| {
            let i = self.position(priority, seq)?;
            let e = &self.entries[i];
            (e.rule == *rule && also(e)).then_some(i)
        })
    }

    /// Position of the entry with this priority and seq (binary search on
    /// the sort order).
    fn position(&self, priority: u16, seq: u64) -> Option<usize> {
        let at = self.entries.partition_point(|x| rank(x.priority, x.seq) < rank(priority, seq));
        self.entries.get(at).filter(|e| e.priority == priority && e.seq == seq).map(|_| at)
    }

    fn strict_add(&mut self, priority: u16, rule: &Rule, seq: u64) {
        match self.strict.entry(strict_hash(priority, rule)) {
            Entry::Occupied(mut o) => o.get_mut().push(seq),
            Entry::Vacant(v) => {
                v.insert(Seqs::One(seq));
            }
        }
    }

    fn strict_remove(&mut self, priority: u16, rule: &Rule, seq: u64) {
        let h = strict_hash(priority, rule);
        if self.strict.get_mut(&h).is_some_and(|v| v.remove(seq)) {
            self.strict.remove(&h);
        }
    }

    /// Insert keeping the order invariant.
    pub fn insert(&mut self, e: FlowEntry) {
        self.insert_shared(Arc::new(e))
    }

    fn insert_shared(&mut self, e: Arc<FlowEntry>) {
        let before = |x: &FlowEntry| rank(x.priority, x.seq) < rank(e.priority, e.seq);
        // Bulk loads append (same or falling priority, rising seq): check
        // the end before a binary search over the whole vector.
        let at = match self.entries.last() {
            Some(last) if !before(last) => self.entries.partition_point(|x| before(x)),
            _ => self.entries.len(),
        };
        if let Some(ix) = self.index.as_deref_mut() {
            let r = ix.cls.insert(RuleId(e.seq), spec_of(&e));
            debug_assert!(r.is_ok(), "index insert: {r:?}");
            ix.stale_from = ix.stale_from.min(at);
        }
        self.strict_add(e.priority, &e.rule, e.seq);
        self.timed += usize::from(has_timeout(&e));
        self.guarded += usize::from(!e.guards.is_empty());
        self.log(|| TableOp::Insert(e.clone()));
        self.entries.insert(at, e);
        self.entries_changed();
    }

    /// Remove the entries for which `f` is true; returns them in table order.
    /// `f` is called once per entry, in table order. Nothing is moved
    /// unless something is removed, and then only the pointers after the
    /// first removed entry, in place.
    pub fn remove_where(&mut self, mut f: impl FnMut(&FlowEntry) -> bool) -> Vec<Arc<FlowEntry>> {
        let Some(first_removed) = self.entries.iter().position(|e| f(e)) else {
            return Vec::new();
        };
        // Compact in place: kept entries slide down in order, removed ones
        // gather at the end (pointer swaps), then go in table order.
        let mut kept = first_removed;
        for i in first_removed + 1..self.entries.len() {
            if !f(&self.entries[i]) {
                self.entries.swap(kept, i);
                kept += 1;
            }
        }
        let mut removed = self.entries.split_off(kept);
        removed.sort_unstable_by_key(|e| rank(e.priority, e.seq));
        self.forget(&removed, first_removed);
        removed
    }

    /// Remove the entries with these (priority, seq) keys (absent ones
    /// are skipped). A few keys are found by binary search and removed
    /// one by one; many by one pass over the table.
    fn remove_keys(&mut self, keys: &[(u16, u64)]) {
        if keys.len().saturating_mul(32) > self.entries.len() {
            let keys: HashSet<(u16, u64)> = keys.iter().copied().collect();
            self.remove_where(|e| keys.contains(&(e.priority, e.seq)));
            return;
        }
        let mut at: Vec<usize> = keys.iter().filter_map(|&(p, s)| self.position(p, s)).collect();
        self.remove_at(&mut at);
    }

    /// Remove the entries at these positions; returns them in table order.
    fn remove_at(&mut self, at: &mut Vec<usize>) -> Vec<Arc<FlowEntry>> {
        at.sort_unstable();
        at.dedup();
        let Some(&first) = at.first() else { return Vec::new() };
        let mut removed: Vec<Arc<FlowEntry>> =
            at.iter().rev().map(|&i| self.entries.remove(i)).collect();
        removed.reverse();
        self.forget(&removed, first);
        removed
    }

    /// Remove the entries with exactly this priority and rule that `also`
    /// accepts (DELETE_STRICT): found through the strict index, not by a
    /// scan; returned in table order.
    pub fn remove_strict(
        &mut self,
        rule: &Rule,
        priority: u16,
        also: impl Fn(&FlowEntry) -> bool,
    ) -> Vec<Arc<FlowEntry>> {
        // A delete for all tables visits every table; most are empty,
        // and the hash is the costly part of the probe.
        if self.entries.is_empty() {
            return Vec::new();
        }
        let Some(seqs) = self.strict.get(&strict_hash(priority, rule)) else {
            return Vec::new();
        };
        let mut at: Vec<usize> = seqs
            .as_slice()
            .iter()
            .filter_map(|&seq| self.position(priority, seq))
            .filter(|&i| self.entries[i].rule == *rule && also(&self.entries[i]))
            .collect();
        self.remove_at(&mut at)
    }

    /// The bookkeeping for entries just taken out of `entries` (the first
    /// of them was at `first`): counts, strict index, tuple-space index,
    /// the copies' log, compiled code.
    fn forget(&mut self, removed: &[Arc<FlowEntry>], first: usize) {
        self.timed -= removed.iter().filter(|e| has_timeout(e)).count();
        self.guarded -= removed.iter().filter(|e| !e.guards.is_empty()).count();
        for e in removed {
            self.strict_remove(e.priority, &e.rule, e.seq);
        }
        if let Some(ix) = self.index.as_deref_mut() {
            for e in removed {
                ix.cls.remove(RuleId(e.seq));
                ix.pos.remove(&e.seq);
            }
            ix.stale_from = ix.stale_from.min(first);
        }
        self.log(|| TableOp::Remove(removed.iter().map(|e| (e.priority, e.seq)).collect()));
        self.entries_changed();
    }

    /// Replace the entry at `i` (same rule and priority, so order holds).
    pub fn replace(&mut self, i: usize, e: FlowEntry) {
        self.replace_shared(i, Arc::new(e))
    }

    fn replace_shared(&mut self, i: usize, e: Arc<FlowEntry>) {
        let Some(old) = self.entries.get(i) else { return };
        debug_assert!(old.priority == e.priority);
        let (old_priority, old_rule, old_seq) = (old.priority, old.rule, old.seq);
        let old_timed = has_timeout(old);
        let old_guarded = !old.guards.is_empty();
        // The indexes only care about (priority, rule, seq).
        if (old_priority, old_rule, old_seq) != (e.priority, e.rule, e.seq) {
            self.strict_remove(old_priority, &old_rule, old_seq);
            self.strict_add(e.priority, &e.rule, e.seq);
            if let Some(ix) = self.index.as_deref_mut() {
                let r = ix.cls.replace(RuleId(old_seq), spec_of(&e));
                debug_assert!(r.is_ok(), "index replace: {r:?}");
                ix.pos.remove(&old_seq);
                ix.stale_from = ix.stale_from.min(i);
            }
            self.entries_changed();
        }
        self.timed = self.timed + usize::from(has_timeout(&e)) - usize::from(old_timed);
        self.guarded = self.guarded + usize::from(!e.guards.is_empty()) - usize::from(old_guarded);
        self.log(|| TableOp::Replace(old_priority, old_seq, e.clone()));
        if let Some(slot) = self.entries.get_mut(i) {
            *slot = e;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_packet_reads_shares_the_entrys_first_cache_line() {
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!(align_of::<FlowEntry>(), 64);
        let hot = [
            ("ops", offset_of!(FlowEntry, ops), size_of::<Arc<EntryOps>>()),
            ("stats", offset_of!(FlowEntry, stats), size_of::<Tally>()),
            ("guards", offset_of!(FlowEntry, guards), size_of::<GuardSet>()),
            ("flags", offset_of!(FlowEntry, flags), size_of::<u16>()),
        ];
        for (name, off, len) in hot {
            assert!(off + len <= 64, "{name} at {off}..{} is past the first line", off + len);
        }
    }

    fn entry(priority: u16, seq: u64) -> FlowEntry {
        FlowEntry {
            rule: Rule::ANY,
            r#match: Match::default(),
            priority,
            cookie: seq,
            idle_timeout: 0,
            hard_timeout: 0,
            flags: 0,
            instructions: Arc::from(Vec::new()),
            ops: Arc::default(),
            installed_ns: 0,
            stats: FlowEntry::new_stats(2),
            seq,
            guards: GuardSet::default(),
        }
    }

    #[test]
    fn ordered_by_priority_then_age() {
        let mut t = FlowTable::new(10, 2);
        for (p, s) in [(5, 1), (10, 2), (5, 3), (0, 4), (10, 5)] {
            t.insert(entry(p, s));
        }
        let order: Vec<_> = t.entries().iter().map(|e| (e.priority, e.seq)).collect();
        assert_eq!(order, [(10, 2), (10, 5), (5, 1), (5, 3), (0, 4)]);
        assert_eq!(t.lookup(&FlowKey::ZERO), Some(0));
        assert!(t.entries()[4].is_table_miss());
        let gone = t.remove_where(|e| e.priority == 5);
        assert_eq!(gone.len(), 2);
        assert_eq!(t.len(), 3);
    }

    /// Entries with the same (priority, rule) share one strict-index slot:
    /// it goes from one inline seq to a list and back, and the strict
    /// lookup names the oldest remaining entry at each step.
    #[test]
    fn strict_index_shared_slot() {
        let mut t = FlowTable::new(10, 2);
        for s in [1, 3, 7] {
            t.insert(entry(5, s));
        }
        t.insert(entry(6, 9));
        let strict_seq = |t: &FlowTable| t.find_strict(&Rule::ANY, 5).map(|i| t.entries()[i].seq);
        assert_eq!(t.strict.len(), 2);
        assert_eq!(strict_seq(&t), Some(1));
        t.remove_where(|e| e.seq == 1);
        assert_eq!(strict_seq(&t), Some(3));
        t.remove_where(|e| e.seq == 3);
        assert_eq!(t.strict.get(&strict_hash(5, &Rule::ANY)), Some(&Seqs::One(7)));
        assert_eq!(strict_seq(&t), Some(7));
        t.insert(entry(5, 11));
        t.remove_where(|e| e.seq == 7);
        assert_eq!(strict_seq(&t), Some(11));
        t.remove_where(|e| e.seq == 11);
        assert_eq!(strict_seq(&t), None);
        assert_eq!(t.strict.len(), 1, "the emptied slot is removed");
        assert_eq!(t.find_strict(&Rule::ANY, 6).map(|i| t.entries()[i].seq), Some(9));
    }

    /// `in_port=PORT`, compiled.
    fn in_port_rule(port: u32) -> Rule {
        use sluice_ofp::oxm::{FieldBytes, FieldId, Oxm};
        let field = Oxm::Basic {
            field: FieldId::InPort,
            value: FieldBytes::from_u128(port.into(), 4),
            mask: None,
        };
        Rule::compile(&Match { oxms: vec![field] }).unwrap()
    }

    /// The index answers like the scan through inserts and removals that
    /// shift positions.
    #[test]
    fn index_follows_the_vector() {
        let rule = in_port_rule;
        let mut t = FlowTable::new(10, 2);
        t.set_indexed(true);
        let mut key = FlowKey::ZERO;
        for (p, s, port) in [(5, 1, 1), (10, 2, 2), (5, 3, 1), (7, 4, 3), (0, 5, 0)] {
            let mut e = entry(p, s);
            if port != 0 {
                e.rule = rule(port);
            }
            t.insert(e);
        }
        for port in 0..4u32 {
            key.words = rule(port).value.words;
            let mut wc = FlowMask::ZERO;
            assert_eq!(t.lookup_indexed(&key, &mut wc), t.lookup(&key), "port {port}");
        }
        t.remove_where(|e| e.seq == 2 || e.seq == 1);
        t.insert(entry(20, 6)); // catch-all in front: every position shifts
        for port in 0..4u32 {
            key.words = rule(port).value.words;
            let mut wc = FlowMask::ZERO;
            assert_eq!(t.lookup_indexed(&key, &mut wc), t.lookup(&key), "port {port}");
            assert_eq!(t.lookup(&key), Some(0));
        }
    }

    /// DELETE_STRICT through the strict index and the copies' keyed
    /// removes (a few keys one by one, many in one pass) leave the master
    /// and a published copy with the same entries, and the index agreeing
    /// with the scan in both.
    #[test]
    fn strict_and_keyed_removes_keep_copies_and_index_exact() {
        let rule = in_port_rule;
        let mut t = FlowTable::new(1000, 2);
        t.set_indexed(true);
        t.start_log();
        // Publications alternate between two copies (each sync replays
        // the other copy's last ops, then the new ones).
        let mut copies = [t.replica(), t.replica()];
        let mut seq = 0;
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        for round in 0..40 {
            // A burst of single changes (few keys per op), then every
            // fourth round a bulk remove (many keys in one op).
            for _ in 0..25 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let (port, priority) = ((x % 200) as u32, (x >> 32) as u16 % 3);
                let gone = t.remove_strict(&rule(port), priority, |_| true);
                assert!(gone.len() <= 1);
                if gone.is_empty() {
                    seq += 1;
                    let mut e = entry(priority, seq);
                    e.rule = rule(port);
                    t.insert(e);
                }
                assert_eq!(t.find_strict(&rule(port), priority).is_some(), gone.is_empty());
            }
            if round % 4 == 3 {
                t.remove_where(|e| e.seq % 3 == 0);
            }
            t.settle();
            let copy = &mut copies[round % 2];
            t.sync_copy(copy, false);
            let keys = |t: &FlowTable| -> Vec<(u16, u64)> {
                t.entries().iter().map(|e| (e.priority, e.seq)).collect()
            };
            assert_eq!(keys(&t), keys(copy), "round {round}");
            for port in 0..200u32 {
                let key = FlowKey { words: rule(port).value.words };
                for tab in [&t, &*copy] {
                    let mut wc = FlowMask::ZERO;
                    assert_eq!(tab.lookup_indexed(&key, &mut wc), tab.lookup(&key), "port {port}");
                }
            }
        }
        assert!(!t.is_empty());
    }
}
