//! The writer's classifier, the readers' snapshots and the publisher that
//! hands one to the other. See the crate docs for the design.

use crate::hash::SeqBuild;
use crate::stage::StagePlan;
use crate::subtable::{Member, Subtable};
use crate::{ClsError, Hit, Rank, RuleId, RuleSpec};
use arc_swap::ArcSwap;
use sluice_packet::key::{FlowKey, FlowMask, KEY_WORDS};
use std::collections::HashMap;
use std::sync::Arc;

/// Dense index of a subtable inside one [`Classifier`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubtableId(pub u32);

/// What the writer remembers about one rule: its subtable (which holds
/// the mask) and the words of its value under that mask — not the whole
/// key-sized mask and value (~400 bytes, written once per copy of the
/// table for every flow-mod, and moved at every growth of the map).
#[derive(Clone, Debug)]
struct Entry {
    priority: u16,
    seq: u64,
    subtable: SubtableId,
    /// `value.words[w]` for every `w` with `mask.words[w] != 0`, in
    /// order of `w` (the other words of a pre-masked value are zero).
    value: Box<[u64]>,
}

impl Entry {
    fn new(spec: &RuleSpec, subtable: SubtableId) -> Entry {
        let value = (0..KEY_WORDS)
            .filter(|&w| spec.mask.words[w] != 0)
            .map(|w| spec.value.words[w])
            .collect();
        Entry { priority: spec.priority, seq: spec.seq, subtable, value }
    }

    /// The rule again, given its subtable's mask.
    fn spec(&self, mask: &FlowMask) -> RuleSpec {
        let mut value = FlowKey::ZERO;
        let words = (0..KEY_WORDS).filter(|&w| mask.words[w] != 0);
        for (w, &v) in words.zip(self.value.iter()) {
            value.words[w] = v;
        }
        RuleSpec { mask: *mask, value, priority: self.priority, seq: self.seq }
    }

    fn rank(&self) -> Rank {
        Rank::new(self.priority, self.seq)
    }
}

/// The writer side: a mutable tuple-space classifier.
///
/// Mutations (`insert`, `remove`, `replace`) take `&mut self`; readers on
/// other threads never see this value, only [`Snapshot`]s taken from it
/// with [`Classifier::snapshot`]. Lookups on the writer itself
/// ([`Classifier::lookup`]) are for the control plane and tests.
#[derive(Clone, Debug)]
pub struct Classifier {
    plan: StagePlan,
    /// Indexed by `SubtableId`; `None` marks a free id.
    subtables: Vec<Option<Arc<Subtable>>>,
    free_ids: Vec<u32>,
    by_mask: HashMap<FlowMask, SubtableId>,
    /// Live subtables, best `max_rank` first: the probe order.
    order: Vec<(Rank, SubtableId)>,
    rules: HashMap<RuleId, Entry, SeqBuild>,
    seqs: HashMap<u64, RuleId, SeqBuild>,
    /// Number of snapshots taken so far.
    version: u64,
}

impl Default for Classifier {
    fn default() -> Self {
        Classifier::new()
    }
}

impl Classifier {
    /// An empty classifier using [`StagePlan::OXM`].
    pub fn new() -> Classifier {
        Classifier::with_plan(StagePlan::OXM)
    }

    /// An empty classifier with its own stage plan.
    pub fn with_plan(plan: StagePlan) -> Classifier {
        Classifier {
            plan,
            subtables: Vec::new(),
            free_ids: Vec::new(),
            by_mask: HashMap::new(),
            order: Vec::new(),
            rules: HashMap::default(),
            seqs: HashMap::default(),
            version: 0,
        }
    }

    /// The stage plan.
    pub fn plan(&self) -> &StagePlan {
        &self.plan
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Number of subtables (distinct masks).
    pub fn n_subtables(&self) -> usize {
        self.order.len()
    }

    /// The rule with this id (rebuilt from its subtable's mask and the
    /// value words kept for it).
    pub fn get(&self, id: RuleId) -> Option<RuleSpec> {
        self.rules.get(&id).and_then(|e| self.spec_of(e))
    }

    /// Every rule, in no particular order.
    pub fn rules(&self) -> impl Iterator<Item = (RuleId, RuleSpec)> + '_ {
        self.rules.iter().filter_map(|(&id, e)| Some((id, self.spec_of(e)?)))
    }

    fn spec_of(&self, e: &Entry) -> Option<RuleSpec> {
        Some(e.spec(self.subtable(e.subtable)?.mask()))
    }

    /// The rule ids of every subtable, in probe order, with its mask and
    /// its number of rules (for `trace` and tests).
    pub fn subtables(&self) -> impl Iterator<Item = (SubtableId, &FlowMask, usize)> + '_ {
        self.order.iter().filter_map(|&(_, id)| {
            let st = self.subtable(id)?;
            Some((id, st.mask(), st.n_rules()))
        })
    }

    fn subtable(&self, id: SubtableId) -> Option<&Subtable> {
        self.subtables.get(id.0 as usize)?.as_deref()
    }

    /// Add a rule. Fails (changing nothing) if `id` or `spec.seq` is
    /// already in use or `spec.value` has bits outside `spec.mask`.
    pub fn insert(&mut self, id: RuleId, spec: RuleSpec) -> Result<(), ClsError> {
        if self.rules.contains_key(&id) {
            return Err(ClsError::DuplicateId(id));
        }
        if self.seqs.contains_key(&spec.seq) {
            return Err(ClsError::DuplicateSeq(spec.seq));
        }
        check_value(&spec)?;
        self.insert_unchecked(id, spec);
        Ok(())
    }

    /// Remove a rule; returns it.
    pub fn remove(&mut self, id: RuleId) -> Option<RuleSpec> {
        let entry = self.rules.get(&id)?;
        // Every entry's subtable exists (invariant, checked by `check`).
        let spec = self.spec_of(entry)?;
        let sid = entry.subtable;
        let member = Member { rank: entry.rank(), id };
        self.rules.remove(&id);
        self.seqs.remove(&spec.seq);
        let mut emptied = false;
        let mut new_rank = Rank::MIN;
        if let Some(Some(arc)) = self.subtables.get_mut(sid.0 as usize) {
            let st = Arc::make_mut(arc);
            let found = st.remove(&spec.value, member);
            debug_assert!(found, "classifier index out of step with subtable");
            emptied = st.n_rules() == 0;
            new_rank = st.max_rank();
        }
        if emptied {
            if let Some(slot) = self.subtables.get_mut(sid.0 as usize) {
                *slot = None;
            }
            self.free_ids.push(sid.0);
            self.by_mask.remove(&spec.mask);
            self.order.retain(|&(_, s)| s != sid);
        } else {
            self.reorder(sid, new_rank);
        }
        Some(spec)
    }

    /// Replace rule `id` by `spec` (any mask, priority or seq; `spec.seq`
    /// may equal the old rule's). Returns the old rule. Fails (changing
    /// nothing) if `id` is unknown, the new seq belongs to another rule or
    /// the value has bits outside the mask. Readers of snapshots see the old
    /// rule or the new one, never neither.
    pub fn replace(&mut self, id: RuleId, spec: RuleSpec) -> Result<RuleSpec, ClsError> {
        let old_seq = self.rules.get(&id).ok_or(ClsError::NoSuchRule(id))?.seq;
        if spec.seq != old_seq && self.seqs.contains_key(&spec.seq) {
            return Err(ClsError::DuplicateSeq(spec.seq));
        }
        check_value(&spec)?;
        let old = self.remove(id).ok_or(ClsError::NoSuchRule(id))?;
        self.insert_unchecked(id, spec);
        Ok(old)
    }

    fn insert_unchecked(&mut self, id: RuleId, spec: RuleSpec) {
        let sid = match self.by_mask.get(&spec.mask) {
            Some(&sid) => sid,
            None => {
                let st = Arc::new(Subtable::new(&spec.mask, &self.plan));
                let sid = match self.free_ids.pop() {
                    Some(i) => {
                        if let Some(slot) = self.subtables.get_mut(i as usize) {
                            *slot = Some(st);
                        }
                        SubtableId(i)
                    }
                    None => {
                        self.subtables.push(Some(st));
                        SubtableId((self.subtables.len() - 1) as u32)
                    }
                };
                self.by_mask.insert(spec.mask, sid);
                sid
            }
        };
        let member = Member { rank: spec.rank(), id };
        let mut new_rank = Rank::MIN;
        if let Some(Some(arc)) = self.subtables.get_mut(sid.0 as usize) {
            let st = Arc::make_mut(arc);
            st.insert(&spec.value, member);
            new_rank = st.max_rank();
        }
        self.reorder(sid, new_rank);
        self.seqs.insert(spec.seq, id);
        self.rules.insert(id, Entry::new(&spec, sid));
    }

    /// Put `sid` at its place in the probe order (O(number of subtables)).
    fn reorder(&mut self, sid: SubtableId, rank: Rank) {
        if let Some(pos) = self.order.iter().position(|&(_, s)| s == sid) {
            if self.order[pos].0 == rank {
                return;
            }
            self.order.remove(pos);
        }
        let at = self.order.partition_point(|&(r, _)| r > rank);
        self.order.insert(at, (rank, sid));
    }

    /// The best rule matching `key`; ORs the key bits consulted into `wc`.
    /// Same result as [`Snapshot::lookup`] on a snapshot taken now.
    pub fn lookup(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<Hit> {
        lookup_ordered(
            self.order.iter().filter_map(|&(r, sid)| Some((r, self.subtable(sid)?))),
            key,
            wc,
        )
    }

    /// The first rule matching `key` that `accept` accepts, offering the
    /// matching rules in the reference scan's order (priority descending,
    /// then lowest seq), each at most once, and stopping at the first
    /// accepted; ORs the key bits consulted into `wc`. With an `accept`
    /// that always says yes, the same answer as [`Classifier::lookup`].
    /// Same as [`Snapshot::lookup_guarded`] on a snapshot taken now.
    pub fn lookup_guarded(
        &self,
        key: &FlowKey,
        wc: &mut FlowMask,
        accept: impl FnMut(Hit) -> bool,
    ) -> Option<Hit> {
        crate::guard::lookup_guarded(
            self.order.iter().filter_map(|&(r, sid)| Some((r, self.subtable(sid)?))),
            key,
            wc,
            accept,
        )
    }

    /// An immutable copy of the current rules for readers. Costs one `Arc`
    /// clone per subtable; the next mutation of a subtable shared with a
    /// live snapshot copies that subtable (copy-on-write).
    pub fn snapshot(&mut self) -> Arc<Snapshot> {
        self.version += 1;
        let mut max_ranks = Vec::with_capacity(self.order.len());
        let mut subtables = Vec::with_capacity(self.order.len());
        for &(r, sid) in &self.order {
            if let Some(Some(st)) = self.subtables.get(sid.0 as usize) {
                max_ranks.push(r);
                subtables.push(Arc::clone(st));
            }
        }
        Arc::new(Snapshot {
            version: self.version,
            n_rules: self.rules.len(),
            max_ranks: max_ranks.into_boxed_slice(),
            subtables: subtables.into_boxed_slice(),
        })
    }
}

#[cfg(test)]
impl Classifier {
    /// Check every internal invariant (tests only).
    pub(crate) fn check(&self) {
        let mut n = 0;
        for w in self.order.windows(2) {
            assert!(w[0].0 > w[1].0, "probe order");
        }
        for &(r, sid) in &self.order {
            let st = self.subtable(sid).expect("ordered subtable exists");
            st.check();
            assert_eq!(st.max_rank(), r);
            assert_eq!(self.by_mask.get(st.mask()), Some(&sid));
            n += st.n_rules();
        }
        assert_eq!(n, self.rules.len());
        assert_eq!(self.by_mask.len(), self.order.len());
        assert_eq!(self.seqs.len(), self.rules.len());
        for (&id, e) in &self.rules {
            let st = self.subtable(e.subtable).expect("a rule's subtable exists");
            let words = st.mask().words.iter().filter(|&&m| m != 0).count();
            assert_eq!(e.value.len(), words, "value words of {id:?}");
            assert_eq!(self.seqs.get(&e.seq), Some(&id));
        }
    }
}

fn check_value(spec: &RuleSpec) -> Result<(), ClsError> {
    let outside = (0..KEY_WORDS).any(|i| spec.value.words[i] & !spec.mask.words[i] != 0);
    if outside {
        Err(ClsError::ValueOutsideMask)
    } else {
        Ok(())
    }
}

/// The lookup proper, over subtables in probe order (best `max_rank`
/// first). Stops as soon as the best hit so far outranks every rule of the
/// next subtable; unprobed subtables add nothing to `wc`.
#[inline]
fn lookup_ordered<'a>(
    subtables: impl Iterator<Item = (Rank, &'a Subtable)>,
    key: &FlowKey,
    wc: &mut FlowMask,
) -> Option<Hit> {
    let mut best: Option<Member> = None;
    for (max_rank, st) in subtables {
        if let Some(b) = best {
            if b.rank > max_rank {
                break;
            }
        }
        if let Some(m) = st.lookup(key, wc) {
            if best.is_none_or(|b| m.rank > b.rank) {
                best = Some(m);
            }
        }
    }
    best.map(|m| Hit { id: m.id, priority: m.rank.priority(), seq: m.rank.seq() })
}

/// An immutable version of the rules, shared by readers.
#[derive(Debug)]
pub struct Snapshot {
    version: u64,
    n_rules: usize,
    max_ranks: Box<[Rank]>,
    subtables: Box<[Arc<Subtable>]>,
}

impl Snapshot {
    /// A snapshot with no rules (version 0).
    pub fn empty() -> Snapshot {
        Snapshot { version: 0, n_rules: 0, max_ranks: Box::new([]), subtables: Box::new([]) }
    }

    /// Which [`Classifier::snapshot`] call made this (1, 2, …; 0 = empty).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.n_rules
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.n_rules == 0
    }

    /// Number of subtables.
    pub fn n_subtables(&self) -> usize {
        self.subtables.len()
    }

    /// Total lookup stages over all subtables (a cost figure for `trace`).
    pub fn n_stages(&self) -> usize {
        self.subtables.iter().map(|s| s.n_stages()).sum()
    }

    /// The best rule matching `key` (highest priority; among equal
    /// priorities the lowest seq). ORs every key bit the lookup consulted
    /// into `wc` (clear it first for a fresh mask). Never allocates.
    #[inline]
    pub fn lookup(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<Hit> {
        lookup_ordered(
            self.max_ranks.iter().copied().zip(self.subtables.iter().map(|s| &**s)),
            key,
            wc,
        )
    }

    /// The first rule matching `key` that `accept` accepts. `accept` is
    /// called only on rules matching `key`, in the reference scan's order
    /// (priority descending, then lowest seq), each at most once, until it
    /// returns `true`; a `false` moves on to the next candidate. ORs every
    /// key bit consulted into `wc`, which is valid given the same sequence
    /// of `accept` answers (crate docs, *Guards*). With an `accept` that
    /// always says yes: the same answer and `wc` as [`Snapshot::lookup`].
    /// Allocates only past 16 matching subtables.
    #[inline]
    pub fn lookup_guarded(
        &self,
        key: &FlowKey,
        wc: &mut FlowMask,
        accept: impl FnMut(Hit) -> bool,
    ) -> Option<Hit> {
        crate::guard::lookup_guarded(
            self.max_ranks.iter().copied().zip(self.subtables.iter().map(|s| &**s)),
            key,
            wc,
            accept,
        )
    }
}

/// Where the writer publishes snapshots and workers pick them up, without
/// locks (`arc-swap`). A worker loads once per burst and keeps that
/// snapshot for the whole burst.
#[derive(Debug)]
pub struct Publisher {
    current: ArcSwap<Snapshot>,
}

impl Default for Publisher {
    fn default() -> Self {
        Publisher::new(Arc::new(Snapshot::empty()))
    }
}

impl Publisher {
    /// A publisher holding `first`.
    pub fn new(first: Arc<Snapshot>) -> Publisher {
        Publisher { current: ArcSwap::new(first) }
    }

    /// Make `s` the snapshot every later [`Publisher::load`] returns.
    pub fn publish(&self, s: Arc<Snapshot>) {
        self.current.store(s);
    }

    /// The current snapshot (lock-free; one atomic read-modify-write).
    pub fn load(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_packet::key::presence;

    /// eth_type=0x0800 (word 1), ipv4_dst/plen (word 3), presence ETH|IPV4.
    fn ipv4_dst(addr: u32, plen: u32, priority: u16, seq: u64) -> RuleSpec {
        let mut mask = FlowMask::ZERO;
        let mut value = FlowKey::ZERO;
        mask.words[1] = 0xffff;
        value.words[1] = 0x0800;
        let pm = (1u64 << presence::ETH) | (1u64 << presence::IPV4);
        mask.words[7] = pm;
        value.words[7] = pm;
        let m = if plen == 0 { 0 } else { u32::MAX << (32 - plen) };
        mask.words[3] = u64::from(m);
        value.words[3] = u64::from(addr & m);
        RuleSpec { mask, value, priority, seq }
    }

    fn pkt(eth_type: u64, dst: u32) -> FlowKey {
        let mut k = FlowKey::ZERO;
        k.words[1] = eth_type;
        k.words[3] = u64::from(dst) | 0xc0a8_0001_0000_0000; // ipv4_src 192.168.0.1
        k.words[4] = 0x0050_1234_0000_0000; // tcp ports
        k.words[7] = (1 << presence::ETH) | (1 << presence::IPV4) | (1 << presence::TCP);
        k
    }

    #[test]
    fn longest_prefix_by_priority() {
        let mut c = Classifier::new();
        c.insert(RuleId(1), ipv4_dst(0x0a00_0000, 8, 8, 1)).unwrap();
        c.insert(RuleId(2), ipv4_dst(0x0a01_0000, 16, 16, 2)).unwrap();
        c.insert(RuleId(3), ipv4_dst(0x0a01_0203, 32, 32, 3)).unwrap();
        assert_eq!(c.n_subtables(), 3);
        let mut wc = FlowMask::ZERO;
        let hit = c.lookup(&pkt(0x0800, 0x0a01_0203), &mut wc).unwrap();
        assert_eq!((hit.id, hit.priority, hit.seq), (RuleId(3), 32, 3));
        // the /32 subtable outranks the rest: only its mask was consulted
        assert_eq!(wc.words[3], 0xffff_ffff);
        assert_eq!(wc.words[1], 0xffff);
        let mut wc = FlowMask::ZERO;
        assert_eq!(c.lookup(&pkt(0x0800, 0x0a01_0909), &mut wc).unwrap().id, RuleId(2));
        // /32 missed (all 32 bits consulted), /16 hit, /8 skipped
        assert_eq!(wc.words[3], 0xffff_ffff);
        let mut wc = FlowMask::ZERO;
        assert_eq!(c.lookup(&pkt(0x0800, 0x0aff_0000), &mut wc).unwrap().id, RuleId(1));
        assert_eq!(c.lookup(&pkt(0x0800, 0x0b00_0000), &mut wc), None);
        c.check();
    }

    #[test]
    fn staged_miss_unwildcards_only_consulted_stages() {
        let mut c = Classifier::new();
        c.insert(RuleId(7), ipv4_dst(0x0a00_0000, 8, 5, 1)).unwrap();
        // ARP (0x0806): the L2 stage already fails, so no address bit and
        // no port bit is looked at.
        let mut wc = FlowMask::ZERO;
        assert_eq!(c.lookup(&pkt(0x0806, 0x0a00_0001), &mut wc), None);
        let mut want = FlowMask::ZERO;
        want.words[1] = 0xffff;
        want.words[7] = (1 << presence::ETH) | (1 << presence::IPV4);
        assert_eq!(wc, want);
        // Without staging the whole mask is un-wildcarded.
        let mut flat = Classifier::with_plan(StagePlan::SINGLE);
        flat.insert(RuleId(7), ipv4_dst(0x0a00_0000, 8, 5, 1)).unwrap();
        let mut wc = FlowMask::ZERO;
        assert_eq!(flat.lookup(&pkt(0x0806, 0x0a00_0001), &mut wc), None);
        want.words[3] = 0xff00_0000;
        assert_eq!(wc, want);
    }

    #[test]
    fn equal_priority_lowest_seq_wins_across_subtables() {
        let mut c = Classifier::new();
        // A newer rule in a subtable with a higher max priority ...
        c.insert(RuleId(1), ipv4_dst(0x0a00_0000, 8, 10, 50)).unwrap();
        c.insert(RuleId(9), ipv4_dst(0x0b00_0000, 8, 99, 60)).unwrap();
        // ... and an older rule of equal priority in another subtable: the
        // older one wins even though its subtable comes second.
        c.insert(RuleId(2), ipv4_dst(0x0a01_0000, 16, 10, 10)).unwrap();
        let mut wc = FlowMask::ZERO;
        assert_eq!(c.lookup(&pkt(0x0800, 0x0a01_0101), &mut wc).unwrap().id, RuleId(2));
        // Same value, same mask, two priorities: the group keeps both.
        c.insert(RuleId(3), ipv4_dst(0x0a01_0000, 16, 11, 70)).unwrap();
        assert_eq!(c.lookup(&pkt(0x0800, 0x0a01_0101), &mut wc).unwrap().id, RuleId(3));
        c.insert(RuleId(4), ipv4_dst(0x0a01_0000, 16, 11, 5)).unwrap();
        assert_eq!(c.lookup(&pkt(0x0800, 0x0a01_0101), &mut wc).unwrap().id, RuleId(4));
        assert_eq!(c.remove(RuleId(4)).map(|s| s.seq), Some(5));
        assert_eq!(c.lookup(&pkt(0x0800, 0x0a01_0101), &mut wc).unwrap().id, RuleId(3));
        c.remove(RuleId(3));
        assert_eq!(c.lookup(&pkt(0x0800, 0x0a01_0101), &mut wc).unwrap().id, RuleId(2));
        c.check();
    }

    #[test]
    fn errors_change_nothing() {
        let mut c = Classifier::new();
        c.insert(RuleId(1), ipv4_dst(0x0a00_0000, 8, 1, 1)).unwrap();
        assert_eq!(
            c.insert(RuleId(1), ipv4_dst(0, 8, 1, 2)),
            Err(ClsError::DuplicateId(RuleId(1)))
        );
        assert_eq!(c.insert(RuleId(2), ipv4_dst(0, 8, 1, 1)), Err(ClsError::DuplicateSeq(1)));
        let mut bad = ipv4_dst(0, 8, 1, 3);
        bad.value.words[4] = 1;
        assert_eq!(c.insert(RuleId(3), bad), Err(ClsError::ValueOutsideMask));
        assert_eq!(
            c.replace(RuleId(3), ipv4_dst(0, 8, 1, 3)),
            Err(ClsError::NoSuchRule(RuleId(3)))
        );
        assert_eq!(c.replace(RuleId(1), bad), Err(ClsError::ValueOutsideMask));
        assert_eq!(c.len(), 1);
        // replace keeping the seq is allowed
        let old = c.replace(RuleId(1), ipv4_dst(0x0c00_0000, 8, 1, 1)).unwrap();
        assert_eq!(old.value.words[3], 0x0a00_0000);
        assert_eq!(c.remove(RuleId(5)), None);
        c.check();
    }

    #[test]
    fn catch_all_and_empty_subtables() {
        let mut c = Classifier::new();
        let miss = RuleSpec { mask: FlowMask::ZERO, value: FlowKey::ZERO, priority: 0, seq: 1 };
        c.insert(RuleId(0), miss).unwrap();
        let mut wc = FlowMask::ZERO;
        assert_eq!(c.lookup(&pkt(0x86dd, 0), &mut wc).unwrap().id, RuleId(0));
        assert!(wc.is_zero());
        c.remove(RuleId(0));
        assert_eq!(c.n_subtables(), 0);
        assert_eq!(c.lookup(&pkt(0x86dd, 0), &mut wc), None);
        c.check();
    }

    #[test]
    fn readers_can_share_snapshots() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Snapshot>();
        send_sync::<Publisher>();
        send_sync::<Classifier>();
    }

    #[test]
    fn snapshots_are_immutable_versions() {
        let mut c = Classifier::new();
        let publisher = Publisher::default();
        assert_eq!(publisher.load().version(), 0);
        c.insert(RuleId(1), ipv4_dst(0x0a00_0000, 8, 8, 1)).unwrap();
        let v1 = c.snapshot();
        publisher.publish(Arc::clone(&v1));
        // one flow-mod = delete + add; readers of v1 see neither half
        c.remove(RuleId(1));
        c.insert(RuleId(2), ipv4_dst(0x0a00_0000, 8, 8, 2)).unwrap();
        let reader = publisher.load();
        let mut wc = FlowMask::ZERO;
        assert_eq!(reader.lookup(&pkt(0x0800, 0x0a00_0001), &mut wc).unwrap().id, RuleId(1));
        let v2 = c.snapshot();
        publisher.publish(v2);
        let reader2 = publisher.load();
        assert_eq!((reader.version(), reader2.version()), (1, 2));
        assert_eq!(reader2.lookup(&pkt(0x0800, 0x0a00_0001), &mut wc).unwrap().id, RuleId(2));
        assert_eq!(reader.lookup(&pkt(0x0800, 0x0a00_0001), &mut wc).unwrap().id, RuleId(1));
        assert_eq!((reader2.len(), reader2.n_subtables()), (1, 1));
        // readers on other threads
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let s = publisher.load();
                std::thread::spawn(move || {
                    let mut wc = FlowMask::ZERO;
                    s.lookup(&pkt(0x0800, 0x0a00_0001), &mut wc).map(|h| h.id)
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), Some(RuleId(2)));
        }
    }
}
