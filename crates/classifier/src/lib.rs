//! # sluice-classifier: tuple-space search over masked key words
//!
//! ## What?
//! A classifier holds rules — a [`FlowMask`], a pre-masked value
//! ([`FlowKey`]), a priority and a sequence number — and answers "which
//! rule does this packet's key hit?": among the rules with
//! `key & mask == value`, the one with the highest priority, and among
//! equal priorities the one with the **lowest seq** (the oldest). That is
//! exactly the order of the reference flow table
//! (`sluice_pipeline::table::FlowTable`: priority-sorted, insertion order
//! breaks ties), so the two are interchangeable and are tested against each
//! other. Sequence numbers must be unique within a classifier
//! ([`ClsError::DuplicateSeq`]); that makes the order total and every
//! answer deterministic.
//!
//! A lookup also returns the **un-wildcarding mask**: the key bits it
//! consulted. The megaflow cache will install `key & wc → result`, which is
//! only sound if every key agreeing with `key` on those bits gets the same
//! answer (see *Invariants*).
//!
//! The classifier never knows what a key word means: it works on words,
//! masks and a [`StagePlan`] (data) saying which words are checked first.
//!
//! ## Basic design: tuple space search
//! Rules are grouped by mask (Srinivasan et al.'s "tuples"; K_POFVS's
//! *mask table* kept separately from the flow table; Open vSwitch's
//! subtables). Each distinct mask gets one *subtable* with a
//! hash table from the hash of the masked key words to the rules with that
//! masked value. A lookup probes each subtable once: `O(number of distinct
//! masks)` hash probes instead of `O(number of rules)` compares. Typical
//! OpenFlow tables have few distinct masks (an L3 routing table: one per
//! prefix length; an L2 table: one).
//!
//! Inside a subtable, rules with the *same* masked value (identical match,
//! different priority) share one group, kept best first, so the lookup
//! reads only the group's head. Different values whose 64-bit hashes
//! collide are chained; the lookup compares the masked words, so a
//! collision costs time, never a wrong answer.
//!
//! Everything is in dense `Vec`s indexed by `u32` slots: groups,
//! subtables ([`SubtableId`]), and per subtable one flat `Vec<u64>` of
//! lookup records (chain link, best rule, masked value words), so a hit
//! reads one hash-table bucket and one contiguous record. A lookup never
//! allocates.
//!
//! ## Optimisations, and what each costs
//! **Priority-ordered subtables, early exit.** Subtables are probed in
//! order of their best rule's rank (priority, then lowest seq). Once the
//! best hit so far outranks the next subtable's best rule, no later
//! subtable can do better and the lookup stops. With LPM-style priorities
//! (priority = prefix length) a hit in the /32 subtable skips all others.
//! *Cost:* each subtable keeps the set of its rules' ranks (a `BTreeSet`,
//! O(log n) per insert/remove) so its best rank survives removals, and the
//! writer keeps the probe order sorted (O(number of subtables) per
//! insert/remove). Note the stop test is "outranks", not "priority ≥": a
//! later subtable may hold a rule of *equal* priority and lower seq, which
//! must win, as in the reference.
//!
//! **Staged lookup.** A subtable's words are split into stages by the
//! [`StagePlan`] (for OXM keys: metadata, L2, L3, L4). Each stage but the
//! last keeps the set of running hashes, taken at the stage's end, of its
//! rules' values. A lookup hashes stage by stage and stops as soon as the
//! running hash is not in the stage's set: no rule of the subtable agrees
//! with the key so far. Two wins: a miss costs only the words hashed so
//! far, and — more important for the megaflow cache — only the consulted
//! stages' mask bits are un-wildcarded, so a packet that fails on L2 does
//! not pin its L4 ports into the megaflow. *Cost:* one extra probe per
//! passed stage on a hit (a single compare when all rules of the subtable
//! agree on that stage, which is common: `eth_type=0x0800` in every L3
//! rule), one counted hash set per stage (memory ~ distinct prefixes ×
//! stages), and stage maintenance on insert/remove. `StagePlan::SINGLE`
//! turns staging off.
//!
//! **Prefix tracking (tries) — not done here.** Open vSwitch also keeps a
//! trie per IP-address field so that a miss in, say, the /24 subtable
//! un-wildcards only as many address bits as needed to prove it, instead of
//! all 24. That narrows megaflows further but costs a trie walk per lookup
//! and per-field knowledge (which words hold a prefix field) the
//! classifier deliberately does not have. It belongs with the megaflow
//! cache, where its benefit can be measured; staged lookup already gives
//! the coarse version (a miss on `eth_type` does not un-wildcard
//! addresses).
//!
//! **Hashing.** A folded 64×64→128-bit multiply per masked word
//! (see `hash`), fixed seed, and identity-hashed tables keyed by that
//! value: one multiply per word, no second hash.
//!
//! ## Guards
//! **What.** A rule may carry *guards*: predicates run after its mask/value
//! match (eBPF filter programs, pcap-filter expressions; the caller's, not
//! the classifier's). A guard may have side effects (map updates), so the
//! order in which guards run is part of the semantics (ARCHITECTURE.md,
//! *Guard semantics*): the candidates are the rules matching the key, tried
//! in the reference scan's order (priority descending, then oldest first),
//! each at most once, and the first whose guards pass is the hit.
//! [`Snapshot::lookup_guarded`] (and [`Classifier::lookup_guarded`]) take
//! the guards as one callback, `accept(Hit) -> bool`, and call it exactly
//! so: only on matching rules, in that order, until it says yes.
//!
//! **Design.** The same probe order and the same subtable probes as
//! `lookup`; only what happens to a hit changes. A probe yields the
//! subtable's matching *group* (at most one per subtable: its rules with
//! the key's masked value, best first; the head is in the lookup record,
//! the others in the writer-side group, read only when the head is
//! rejected). Each group found is *pending*, as a cursor. Before probing a
//! subtable whose best rank is `r`, every pending candidate that outranks
//! `r` is offered, best first: no rule of that subtable or of a later one
//! (their best ranks are lower still) can come before it. After the last
//! subtable the rest is offered in rank order. Ranks are unique, so rank
//! order is the reference's order exactly, and a subtable is skipped only
//! when an accepted candidate outranks every rule in it.
//!
//! **Cost.** With an `accept` that takes the first candidate: the same
//! probes as `lookup` plus a compare per subtable. Each candidate offered
//! costs a scan of the pending cursors (at most one per matching subtable,
//! so few). The cursors live in a 16-entry buffer on the stack; a lookup
//! allocates only if more than 16 subtables match one key. `lookup` is a
//! separate function and pays nothing for guards.
//!
//! **Invariants.**
//! - `accept` is called only on rules matching the key, in (priority desc,
//!   seq asc) order, each at most once, stopping at the first `true`; the
//!   result is that rule or `None`. With `|_| true` the result and `wc` are
//!   `lookup`'s. Tested against a linear model, comparing the whole call
//!   sequence.
//! - **Un-wildcarding holds given the same answers.** If a guarded lookup
//!   of `k` returns `wc`, then every `k'` with `k' & wc == k & wc`, offered
//!   the same answers, sees the same calls and gets the same result. Why:
//!   which subtable comes next, and which pending candidates are offered
//!   before it, depend on ranks and on earlier answers only; each probe's
//!   outcome (group found or not, stage misses) depends only on the
//!   consulted stages' bits, which are in `wc`, as for `lookup`. So every
//!   offered (matched) rule's mask is in `wc`, rejected ones included. The
//!   megaflow cache records the answers with the entry (ARCHITECTURE.md):
//!   a packet whose guards answer differently leaves the entry, so `wc`
//!   never has to cover the answers.
//!
//! ## Versioning
//! Readers never see a half-applied flow-mod because they never look at
//! the writer's structure. The writer ([`Classifier`], `&mut self`)
//! applies a whole flow-mod (or a bundle of them), then calls
//! [`Classifier::snapshot`], which returns an immutable [`Snapshot`]
//! holding an `Arc` of every subtable in probe order, and publishes it
//! with a [`Publisher`] (`arc-swap`). A worker loads a snapshot once per
//! burst; it keeps every rule of that version alive until it lets go, like
//! an RCU grace period ending when the last reader drops its `Arc`.
//! Snapshots are numbered ([`Snapshot::version`]).
//!
//! The subtables are shared copy-on-write (`Arc::make_mut`): taking a
//! snapshot costs one `Arc` clone per subtable, and the first mutation of a
//! subtable after a snapshot copies that one subtable; untouched subtables
//! stay shared. *Cost:* a flow-mod into a subtable of n rules that a live
//! snapshot still shares costs O(n) once per published version (not per
//! flow-mod: mutations between two snapshots copy at most once). Open
//! vSwitch instead marks rules with add/remove versions inside concurrent
//! hash maps, which needs epoch-based reclamation; sharding large
//! subtables into separately shared pieces is the cheaper next step if the
//! copy ever shows up in flow-mod latency.
//!
//! ## Thread-safety
//! [`Classifier`] is single-writer (`&mut self` for mutations). [`Snapshot`]
//! is immutable, `Send + Sync`, and shared by any number of readers with
//! no lock and no atomic operation per lookup. [`Publisher::load`] and
//! [`Publisher::publish`] are lock-free.
//!
//! ## Invariants
//! - **Same answer as the reference.** For every key, `lookup` returns the
//!   rule a linear scan in (priority desc, seq asc) order finds first; both
//!   the writer and every snapshot (for the rules of its version). Tested
//!   differentially against a model and against `FlowTable`.
//! - **Un-wildcarding may add false 1-bits, never false 0-bits.** If
//!   `lookup(k)` returns hit `h` and mask `wc`, then every `k'` with
//!   `k' & wc == k & wc` also gets `h` (1-bits of `wc` that were not
//!   strictly needed only make a megaflow narrower; a missing 1-bit would
//!   make it wrong). Why it holds: every branch a lookup takes — stage hash
//!   present or not, full hash present, masked words equal — is a function
//!   of `key & mask` over the words of the stages it consulted, and exactly
//!   those mask words are OR-ed into `wc`; a subtable skipped by the early
//!   exit is skipped because of ranks alone, never because of the key.
//!   `wc` always contains the mask of the returned rule.
//! - A rule's value has no bit outside its mask ([`ClsError::ValueOutsideMask`]
//!   otherwise); ids and seqs are unique.
//! - Within a subtable, stage counts equal the number of live groups, chains
//!   are acyclic, and groups are ordered best first (checked by
//!   `Subtable::check` in the tests).
//!
//! ## Testing
//! `tests/differential.rs` compares random interleavings of inserts,
//! removes, replaces, snapshots and lookups with a linear model and with
//! `sluice_pipeline::table::FlowTable`, and checks the un-wildcarding
//! invariant on every lookup. `tests/guarded.rs` compares guarded lookups
//! (writer and snapshots; guards rejecting a fixed subset, the first N
//! calls, or by both) with a linear model, call sequence included, and
//! checks un-wildcarding by replaying the recorded answers on keys that
//! agree on `wc`. [`fuzz_classifier`] is the same check as the first,
//! driven by cargo-fuzz. `examples/cls_bench.rs` measures lookups/s.

mod classifier;
mod fuzz;
mod guard;
mod hash;
pub mod stage;
mod subtable;

pub use classifier::{Classifier, Publisher, Snapshot, SubtableId};
pub use fuzz::fuzz_classifier;
pub use stage::{PlanError, StagePlan};

use sluice_packet::key::{FlowKey, FlowMask};

/// Caller-chosen identity of a rule (e.g. the flow entry's index or seq).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleId(pub u64);

/// A rule: `key & mask == value`, with its place in the order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RuleSpec {
    pub mask: FlowMask,
    /// Pre-masked: no bit outside `mask`.
    pub value: FlowKey,
    pub priority: u16,
    /// Tie-breaker among equal priorities: lower wins (older entry). Unique.
    pub seq: u64,
}

impl RuleSpec {
    fn rank(&self) -> Rank {
        Rank::new(self.priority, self.seq)
    }
}

/// A lookup result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Hit {
    pub id: RuleId,
    pub priority: u16,
    pub seq: u64,
}

/// Why a mutation was refused (nothing was changed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClsError {
    /// A rule with this id exists already.
    DuplicateId(RuleId),
    /// Another rule has this seq.
    DuplicateSeq(u64),
    /// No rule with this id.
    NoSuchRule(RuleId),
    /// The value has a bit set where the mask is 0.
    ValueOutsideMask,
}

impl core::fmt::Display for ClsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ClsError::DuplicateId(id) => write!(f, "rule id {} already in use", id.0),
            ClsError::DuplicateSeq(s) => write!(f, "rule seq {s} already in use"),
            ClsError::NoSuchRule(id) => write!(f, "no rule with id {}", id.0),
            ClsError::ValueOutsideMask => f.write_str("rule value has bits outside its mask"),
        }
    }
}

impl std::error::Error for ClsError {}

/// Total order of rules: higher is better. Priority in the high bits,
/// `!seq` below it, so among equal priorities the lower seq ranks higher.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Rank(u128);

impl Rank {
    pub(crate) const MIN: Rank = Rank(0);

    pub(crate) fn new(priority: u16, seq: u64) -> Rank {
        Rank((u128::from(priority) << 64) | u128::from(u64::MAX - seq))
    }
    pub(crate) fn priority(self) -> u16 {
        (self.0 >> 64) as u16
    }
    pub(crate) fn seq(self) -> u64 {
        u64::MAX - self.0 as u64
    }
}
