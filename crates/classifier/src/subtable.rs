//! One subtable: every rule with one particular mask, in a hash table keyed
//! by the hash of the masked words (see the crate docs for the design).
//!
//! Layout (all indices are dense `u32` slots, no pointer graph):
//! - `words`/`mask_words`: the key words the mask looks at, in stage order,
//!   and the mask of each; `stage_ends[s]` is where stage `s` ends in them.
//! - `stages[s]` (every stage but the last): the set of running hashes, at
//!   the end of stage `s`, of the distinct rule values ("some rule agrees
//!   with the key so far"), with a count per hash so removal is exact.
//! - `map`: full hash → first group of a collision chain.
//! - `groups[g]`: all rules with one masked value (same mask, same value,
//!   different priorities), best first; `next` chains groups whose full
//!   hashes are equal. Freed slots go to `free`.
//! - `recs[g * stride ..][..stride]`: what a lookup reads of group `g`, in
//!   one contiguous record: `[next, best id, best rank (2 words), the
//!   n = words.len() masked words of the value]` (stride = 4 + n). A hit
//!   touches the hash-table bucket and this record, nothing else;
//!   `groups` (the authority for `best`, `rest`, `next`) is written only
//!   by the writer and copied into the record header by `sync` after
//!   every change; of it, lookups read only `rest`, and only a guarded
//!   lookup whose guard rejected the group's best rule.
//! - `ranks`: every rule's rank, so the subtable's best rank (`max_rank`,
//!   which orders the subtables) survives removals in O(log n).

use crate::hash::{add, finish, IdBuild, SEED};
use crate::stage::{StagePlan, MAX_STAGES};
use crate::Rank;
use crate::RuleId;
use sluice_packet::key::{FlowKey, FlowMask, KEY_WORDS};
use std::collections::{BTreeSet, HashMap};

/// End of a collision chain.
const NONE: u32 = u32::MAX;

/// Header words of a lookup record: next, best id, best rank hi, lo.
const HDR: usize = 4;

/// A rule as a subtable stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Member {
    pub(crate) rank: Rank,
    pub(crate) id: RuleId,
}

#[derive(Clone, Debug)]
struct Group {
    /// Highest-ranked rule with this value (read by lookups).
    best: Member,
    /// The others, highest rank first (written only by the writer).
    rest: Vec<Member>,
    /// Next group with the same full hash, or [`NONE`].
    next: u32,
}

/// Counted set of stage hashes.
#[derive(Clone, Debug, Default)]
struct StageIndex {
    counts: HashMap<u64, u32, IdBuild>,
    /// The only hash when `counts.len() == 1`: a compare instead of a probe.
    single: u64,
}

impl StageIndex {
    #[inline(always)]
    fn contains(&self, h: u64) -> bool {
        if self.counts.len() == 1 {
            h == self.single
        } else {
            self.counts.contains_key(&h)
        }
    }
    fn inc(&mut self, h: u64) {
        *self.counts.entry(h).or_insert(0) += 1;
        self.refresh_single();
    }
    fn dec(&mut self, h: u64) {
        if let Some(c) = self.counts.get_mut(&h) {
            *c = c.saturating_sub(1);
            if *c == 0 {
                self.counts.remove(&h);
            }
        }
        self.refresh_single();
    }
    fn refresh_single(&mut self) {
        if self.counts.len() == 1 {
            self.single = self.counts.keys().next().copied().unwrap_or(0);
        }
    }
}

/// Rules sharing one mask.
#[derive(Clone, Debug)]
pub(crate) struct Subtable {
    mask: FlowMask,
    words: Box<[u8]>,
    mask_words: Box<[u64]>,
    stage_ends: Box<[u8]>,
    stages: Box<[StageIndex]>,
    map: HashMap<u64, u32, IdBuild>,
    groups: Vec<Group>,
    recs: Vec<u64>,
    free: Vec<u32>,
    ranks: BTreeSet<Rank>,
    max_rank: Rank,
}

impl Subtable {
    pub(crate) fn new(mask: &FlowMask, plan: &StagePlan) -> Subtable {
        let mut order: Vec<(usize, usize)> =
            (0..KEY_WORDS).filter(|&w| mask.words[w] != 0).map(|w| (plan.stage_of(w), w)).collect();
        order.sort_unstable();
        let words: Box<[u8]> = order.iter().map(|&(_, w)| w as u8).collect();
        let mask_words: Box<[u64]> = order.iter().map(|&(_, w)| mask.words[w]).collect();
        // One end per non-empty stage, in order.
        let mut ends: Vec<u8> = Vec::new();
        for (i, &(s, _)) in order.iter().enumerate() {
            let last_of_stage = order.get(i + 1).is_none_or(|&(s2, _)| s2 != s);
            if last_of_stage {
                ends.push((i + 1) as u8);
            }
        }
        if ends.is_empty() {
            ends.push(0); // the catch-all mask: one empty stage
        }
        let stages = (1..ends.len()).map(|_| StageIndex::default()).collect();
        Subtable {
            mask: *mask,
            words,
            mask_words,
            stage_ends: ends.into_boxed_slice(),
            stages,
            map: HashMap::default(),
            groups: Vec::new(),
            recs: Vec::new(),
            free: Vec::new(),
            ranks: BTreeSet::new(),
            max_rank: Rank::MIN,
        }
    }

    pub(crate) fn mask(&self) -> &FlowMask {
        &self.mask
    }

    pub(crate) fn max_rank(&self) -> Rank {
        self.max_rank
    }

    pub(crate) fn n_rules(&self) -> usize {
        self.ranks.len()
    }

    /// Number of lookup stages this subtable has (non-empty stages of its mask).
    pub(crate) fn n_stages(&self) -> usize {
        self.stage_ends.len()
    }

    /// OR the mask words of the first `upto` words into `wc`.
    #[inline(always)]
    fn unwildcard(&self, wc: &mut FlowMask, upto: usize) {
        for (&w, &m) in self.words.iter().zip(self.mask_words.iter()).take(upto) {
            wc.words[usize::from(w)] |= m;
        }
    }

    /// The best rule of this subtable matching `key`, if any. ORs into
    /// `wc` the mask words of every stage it consulted.
    #[inline]
    pub(crate) fn lookup(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<Member> {
        let (_, rec) = self.probe(key, wc)?;
        let rank = (u128::from(rec[2]) << 64) | u128::from(rec[3]);
        Some(Member { rank: Rank(rank), id: RuleId(rec[1]) })
    }

    /// The group of rules matching `key` (they all share one masked value),
    /// if any: its slot and its best member. ORs into `wc` exactly what
    /// [`Subtable::lookup`] ORs. The other members, in order, are
    /// [`Subtable::group_rest`]`(slot)`.
    #[inline]
    pub(crate) fn lookup_group(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<(u32, Member)> {
        let (g, rec) = self.probe(key, wc)?;
        let rank = (u128::from(rec[2]) << 64) | u128::from(rec[3]);
        Some((g, Member { rank: Rank(rank), id: RuleId(rec[1]) }))
    }

    /// The members of group `g` after its best, best first (empty for a
    /// slot that is not a live group).
    #[inline]
    pub(crate) fn group_rest(&self, g: u32) -> &[Member] {
        self.groups.get(g as usize).map_or(&[], |grp| grp.rest.as_slice())
    }

    /// The probe shared by both lookups: the matching group's slot and
    /// lookup record, ORing the consulted stages' mask words into `wc`.
    #[inline(always)]
    fn probe(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<(u32, &[u64])> {
        let mut h = SEED;
        let mut i = 0usize;
        for (idx, &end) in self.stages.iter().zip(self.stage_ends.iter()) {
            let end = usize::from(end);
            while i < end {
                let w = usize::from(self.words[i]);
                h = add(h, key.words[w] & self.mask_words[i]);
                i += 1;
            }
            if !idx.contains(finish(h)) {
                self.unwildcard(wc, end);
                return None;
            }
        }
        let n = self.words.len();
        while i < n {
            let w = usize::from(self.words[i]);
            h = add(h, key.words[w] & self.mask_words[i]);
            i += 1;
        }
        self.unwildcard(wc, n);
        let mut g = *self.map.get(&finish(h))?;
        // Walk the (almost always one-long) collision chain; each step
        // moves to a different slot, and the chain is acyclic by
        // construction, so this ends.
        let stride = HDR + n;
        loop {
            let start = (g as usize).checked_mul(stride)?;
            let rec = self.recs.get(start..start + stride)?;
            let equal = self
                .words
                .iter()
                .zip(self.mask_words.iter())
                .zip(rec[HDR..].iter())
                .all(|((&w, &m), &v)| key.words[usize::from(w)] & m == v);
            if equal {
                return Some((g, rec));
            }
            g = rec[0] as u32;
        }
    }

    /// Stage hashes (one per non-final stage) and the full hash of a rule
    /// value.
    fn hashes(&self, value: &FlowKey) -> ([u64; MAX_STAGES], u64) {
        let mut out = [0u64; MAX_STAGES];
        let mut h = SEED;
        let mut i = 0usize;
        for (s, &end) in self.stage_ends.iter().enumerate() {
            while i < usize::from(end) {
                h = add(h, value.words[usize::from(self.words[i])] & self.mask_words[i]);
                i += 1;
            }
            if s + 1 < self.stage_ends.len() {
                if let Some(o) = out.get_mut(s) {
                    *o = finish(h);
                }
            }
        }
        (out, finish(h))
    }

    fn value_eq(&self, g: u32, value: &FlowKey) -> bool {
        let stride = HDR + self.words.len();
        let start = g as usize * stride;
        match self.recs.get(start + HDR..start + stride) {
            Some(vals) => {
                self.words.iter().zip(vals.iter()).all(|(&w, &v)| value.words[usize::from(w)] == v)
            }
            None => false,
        }
    }

    /// Copy group `g`'s `next` and `best` into its lookup record.
    fn sync(&mut self, g: u32) {
        let stride = HDR + self.words.len();
        let start = g as usize * stride;
        if let (Some(group), Some(hdr)) =
            (self.groups.get(g as usize), self.recs.get_mut(start..start + HDR))
        {
            hdr[0] = u64::from(group.next);
            hdr[1] = group.best.id.0;
            hdr[2] = (group.best.rank.0 >> 64) as u64;
            hdr[3] = group.best.rank.0 as u64;
        }
    }

    /// The group holding `value`, if any.
    fn find_group(&self, fh: u64, value: &FlowKey) -> Option<u32> {
        let mut g = *self.map.get(&fh)?;
        while let Some(group) = self.groups.get(g as usize) {
            if self.value_eq(g, value) {
                return Some(g);
            }
            g = group.next;
        }
        None
    }

    /// Add a rule. `value` must be masked by this subtable's mask (the
    /// classifier checks), and `m.rank` must not be in the subtable yet.
    pub(crate) fn insert(&mut self, value: &FlowKey, m: Member) {
        let (stage_h, fh) = self.hashes(value);
        if let Some(g) = self.find_group(fh, value) {
            if let Some(group) = self.groups.get_mut(g as usize) {
                if m.rank > group.best.rank {
                    let old = core::mem::replace(&mut group.best, m);
                    group.rest.insert(0, old);
                } else {
                    let at = group.rest.partition_point(|x| x.rank > m.rank);
                    group.rest.insert(at, m);
                }
            }
            self.sync(g);
        } else {
            let n = self.words.len();
            let next = self.map.get(&fh).copied().unwrap_or(NONE);
            let group = Group { best: m, rest: Vec::new(), next };
            let g = match self.free.pop() {
                Some(g) => {
                    if let Some(slot) = self.groups.get_mut(g as usize) {
                        *slot = group;
                    }
                    g
                }
                None => {
                    self.groups.push(group);
                    self.recs.resize(self.groups.len() * (HDR + n), 0);
                    (self.groups.len() - 1) as u32
                }
            };
            let start = g as usize * (HDR + n) + HDR;
            if let Some(vals) = self.recs.get_mut(start..start + n) {
                for (v, &w) in vals.iter_mut().zip(self.words.iter()) {
                    *v = value.words[usize::from(w)];
                }
            }
            self.map.insert(fh, g);
            self.sync(g);
            for (idx, &h) in self.stages.iter_mut().zip(stage_h.iter()) {
                idx.inc(h);
            }
        }
        self.ranks.insert(m.rank);
        self.max_rank = self.ranks.last().copied().unwrap_or(Rank::MIN);
    }

    /// Remove the rule `m` with value `value`. Returns whether it was there.
    pub(crate) fn remove(&mut self, value: &FlowKey, m: Member) -> bool {
        let (stage_h, fh) = self.hashes(value);
        let Some(g) = self.find_group(fh, value) else { return false };
        let Some(group) = self.groups.get_mut(g as usize) else { return false };
        let emptied = if group.best.id == m.id {
            if group.rest.is_empty() {
                true
            } else {
                group.best = group.rest.remove(0);
                false
            }
        } else {
            match group.rest.iter().position(|x| x.id == m.id) {
                Some(at) => {
                    group.rest.remove(at);
                    false
                }
                None => return false,
            }
        };
        if !emptied {
            self.sync(g);
        } else if let Some(group) = self.groups.get_mut(g as usize) {
            let next = group.next;
            group.next = NONE;
            group.rest = Vec::new();
            self.sync(g);
            // Unlink g from its chain.
            let head = self.map.get(&fh).copied().unwrap_or(NONE);
            if head == g {
                if next == NONE {
                    self.map.remove(&fh);
                } else {
                    self.map.insert(fh, next);
                }
            } else {
                let mut p = head;
                while let Some(pg) = self.groups.get_mut(p as usize) {
                    if pg.next == g {
                        pg.next = next;
                        self.sync(p);
                        break;
                    }
                    p = pg.next;
                }
            }
            self.free.push(g);
            for (idx, &h) in self.stages.iter_mut().zip(stage_h.iter()) {
                idx.dec(h);
            }
        }
        self.ranks.remove(&m.rank);
        self.max_rank = self.ranks.last().copied().unwrap_or(Rank::MIN);
        true
    }

    /// Debug check of the internal invariants (tests only).
    #[cfg(test)]
    pub(crate) fn check(&self) {
        let live: usize = self.groups.len() - self.free.len();
        let mut chained = 0;
        for &head in self.map.values() {
            let mut g = head;
            let mut steps = 0;
            while let Some(group) = self.groups.get(g as usize) {
                chained += 1;
                steps += 1;
                assert!(steps <= self.groups.len(), "cycle");
                let stride = HDR + self.words.len();
                let hdr = &self.recs[g as usize * stride..][..HDR];
                assert_eq!(hdr[0], u64::from(group.next), "record next");
                assert_eq!(hdr[1], group.best.id.0, "record best id");
                assert_eq!((u128::from(hdr[2]) << 64) | u128::from(hdr[3]), group.best.rank.0);
                let mut prev = group.best.rank;
                for r in &group.rest {
                    assert!(r.rank < prev, "group order");
                    prev = r.rank;
                }
                g = group.next;
            }
        }
        assert_eq!(chained, live);
        for idx in self.stages.iter() {
            assert!(idx.counts.values().sum::<u32>() as usize == live);
        }
        assert_eq!(self.max_rank, self.ranks.last().copied().unwrap_or(Rank::MIN));
    }
}
