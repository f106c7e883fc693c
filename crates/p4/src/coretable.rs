//! P4 table entries as core mask/value rules.
//!
//! # What
//! The index a compiled P4 table looks its entries up in: each entry's
//! key patterns (exact, ternary, LPM, optional and `_` are all a value
//! under a mask; a range is expanded into prefixes) become rules of
//! sluice's tuple-space classifier over the key words where the table's
//! key values live ([`KeyPlace`]). A lookup answers the entry the P4
//! reference ([`crate::interp`]) picks, and ORs the key bits it consulted
//! into the megaflow mask, like every core table.
//!
//! # Basic design
//! The reference orders matching entries by a *rank*: in a table with an
//! LPM key, the prefix length first, then the priority (larger wins),
//! then the order of adding (older wins); in other tables the priority,
//! then the order. The classifier orders by a 16-bit priority, then by a
//! unique sequence number (lower wins). So each distinct `(prefix length,
//! priority)` pair gets a dense classifier priority (its position among
//! the pairs in use, ascending), and a rule's sequence number is the
//! entry's order of adding shifted left by 16 with the rule's index among
//! the entry's expansions below: expansions of one entry are disjoint, so
//! only the entry's order matters. A new pair that sorts below others
//! shifts their dense priorities up: those rules are re-inserted (tables
//! with few distinct pairs — exact, LPM — rarely move anything).
//!
//! # Invariants
//! - [`Index::lookup`] answers what [`scan`] (a direct reading of the
//!   reference's rules) answers, for every key (`tests` below check it on
//!   random tables, ranges included).
//! - At most [`MAX_EXPANSION`] rules per entry and 65 536 distinct
//!   `(prefix length, priority)` pairs per table; past either the entry is
//!   refused, nothing changed.

use std::collections::{BTreeMap, HashMap};

use sluice_classifier::{Classifier, RuleId, RuleSpec};
use sluice_core::keyop::Slot;
use sluice_packet::key::{FlowKey, FlowMask};

use crate::value::Bits;

/// Most classifier rules one entry may expand into (ranges multiply).
pub const MAX_EXPANSION: usize = 4096;

/// Where one key's value lives: slots, most significant first, whose
/// widths add up to `width`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPlace {
    pub slots: Vec<Slot>,
    pub width: u32,
}

impl KeyPlace {
    /// The key's value in `key`.
    pub fn get(&self, key: &FlowKey) -> Bits {
        let mut v = Bits::zero(self.width);
        for s in &self.slots {
            v = v.shl(u64::from(s.width)).or(&Bits::from_u64(self.width, s.get(key)));
        }
        v
    }

    /// Writes `value` (this key's width) under `mask` into a rule's mask
    /// and value.
    fn place(&self, value: &Bits, mask: &Bits, m: &mut FlowMask, k: &mut FlowKey) {
        let mut hi = self.width;
        for s in &self.slots {
            let lo = hi - u32::from(s.width);
            let mv = mask.slice(hi - 1, lo).low_u64();
            let vv = value.slice(hi - 1, lo).low_u64() & mv;
            let w = usize::from(s.word);
            m.words[w] |= mv << s.shift;
            k.words[w] |= vv << s.shift;
            hi = lo;
        }
    }
}

/// One key's pattern in an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pat {
    /// `key & mask == value & mask` (exact: all ones; LPM: a prefix;
    /// `_`: zero).
    Masked { value: Bits, mask: Bits },
    /// `lo <= key <= hi` (keys of at most 64 bits).
    Range { lo: Bits, hi: Bits },
}

impl Pat {
    fn matches(&self, k: &Bits) -> bool {
        match self {
            Pat::Masked { value, mask } => k.and(mask) == value.and(mask),
            Pat::Range { lo, hi } => lo.cmp_unsigned(k).is_le() && k.cmp_unsigned(hi).is_le(),
        }
    }
}

/// An entry as the index orders it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub pats: Vec<Pat>,
    /// The LPM key's prefix length in a table with one; else 0.
    pub prefix: u32,
    pub prio: i128,
    /// Order of adding, unique in the table (older: smaller).
    pub seq: u64,
}

/// The entry a direct reading of the reference's rules picks for `key`:
/// its `seq`.
pub fn scan<'a>(
    places: &[KeyPlace],
    rules: impl IntoIterator<Item = &'a Rule>,
    key: &FlowKey,
) -> Option<u64> {
    let rules: Vec<&Rule> = rules.into_iter().collect();
    scan_pos(places, rules.iter().copied(), key).map(|i| rules[i].seq)
}

/// [`scan`] answering the chosen rule's position among `rules`.
pub fn scan_pos<'a>(
    places: &[KeyPlace],
    rules: impl IntoIterator<Item = &'a Rule>,
    key: &FlowKey,
) -> Option<usize> {
    let vals: Vec<Bits> = places.iter().map(|p| p.get(key)).collect();
    let mut best: Option<(usize, &Rule)> = None;
    for (i, r) in rules.into_iter().enumerate() {
        if !r.pats.iter().zip(&vals).all(|(p, v)| p.matches(v)) {
            continue;
        }
        let better = match best {
            None => true,
            Some((_, b)) => {
                (r.prefix, r.prio, std::cmp::Reverse(r.seq))
                    > (b.prefix, b.prio, std::cmp::Reverse(b.seq))
            }
        };
        if better {
            best = Some((i, r));
        }
    }
    best.map(|(i, _)| i)
}

/// An entry's place in the order before its age: `(prefix length,
/// priority)`.
type Pair = (u32, i128);

/// A table's entries in the classifier.
#[derive(Debug)]
pub struct Index {
    places: Vec<KeyPlace>,
    cls: Classifier,
    /// Distinct `(prefix, prio)` pairs in use, with how many entries use each.
    ranks: BTreeMap<Pair, usize>,
    /// Each entry's pair, its rules' masks and values and its handle
    /// (what a lookup answers), by `seq`.
    entries: HashMap<u64, (Pair, Masked, u64)>,
}

/// An entry's classifier rules: masks and (masked) values.
type Masked = Vec<(FlowMask, FlowKey)>;

impl Index {
    pub fn new(places: Vec<KeyPlace>) -> Index {
        Index { places, cls: Classifier::new(), ranks: BTreeMap::new(), entries: HashMap::new() }
    }

    pub fn places(&self) -> &[KeyPlace] {
        &self.places
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn rank_of(&self, pair: (u32, i128)) -> u16 {
        self.ranks.range(..pair).count() as u16
    }

    /// Adds an entry whose lookups answer its `seq`; see
    /// [`Index::insert_as`].
    pub fn insert(&mut self, r: &Rule) -> Result<(), String> {
        self.insert_as(r, r.seq)
    }

    /// Adds an entry whose lookups answer `handle` (below 2^48, e.g. the
    /// entry's position in its owner's list, so a hit needs no map from
    /// `seq`); refused (nothing changed) if its `seq` is in use, the
    /// handle is too large, it expands into too many rules or the table
    /// has too many distinct priorities.
    pub fn insert_as(&mut self, r: &Rule, handle: u64) -> Result<(), String> {
        if handle >> 48 != 0 {
            return Err(format!("entry handle {handle} is too large"));
        }
        if self.entries.contains_key(&r.seq) {
            return Err(format!("entry {} is already in the table", r.seq));
        }
        if r.pats.len() != self.places.len() {
            return Err(format!("{} key patterns for {} keys", r.pats.len(), self.places.len()));
        }
        let rules = self.expand(&r.pats)?;
        let pair = (r.prefix, r.prio);
        let new_pair = !self.ranks.contains_key(&pair);
        if new_pair && self.ranks.len() > usize::from(u16::MAX) {
            return Err("more than 65536 distinct priorities in one table".into());
        }
        if new_pair {
            // Pairs above this one move up by one: re-insert their rules.
            let above: Vec<(u32, i128)> = self
                .ranks
                .range((std::ops::Bound::Excluded(pair), std::ops::Bound::Unbounded))
                .map(|(k, _)| *k)
                .collect();
            self.ranks.insert(pair, 0);
            if !above.is_empty() {
                let moved: Vec<u64> = self
                    .entries
                    .iter()
                    .filter(|(_, (p, _, _))| above.contains(p))
                    .map(|(s, _)| *s)
                    .collect();
                for seq in moved {
                    self.reinsert(seq)?;
                }
            }
        }
        *self.ranks.entry(pair).or_insert(0) += 1;
        let prio = self.rank_of(pair);
        for (i, (mask, value)) in rules.iter().enumerate() {
            // The classifier orders by `seq`; the id carries the handle.
            let seq = (r.seq << 16) | i as u64;
            let spec = RuleSpec { mask: *mask, value: *value, priority: prio, seq };
            if let Err(e) = self.cls.insert(RuleId((handle << 16) | i as u64), spec) {
                // Undo this entry's rules and its pair (ranks above it were
                // shifted consistently, so they stay valid either way).
                for j in 0..i {
                    self.cls.remove(RuleId((handle << 16) | j as u64));
                }
                self.release(pair);
                return Err(format!("classifier refused a rule: {e:?}"));
            }
        }
        self.entries.insert(r.seq, (pair, rules, handle));
        Ok(())
    }

    /// Re-inserts entry `seq`'s rules at its pair's current rank.
    fn reinsert(&mut self, seq: u64) -> Result<(), String> {
        let Some((pair, rules, handle)) = self.entries.get(&seq) else { return Ok(()) };
        let prio = self.rank_of(*pair);
        for (i, (mask, value)) in rules.iter().enumerate() {
            let (id, s) = ((handle << 16) | i as u64, (seq << 16) | i as u64);
            let spec = RuleSpec { mask: *mask, value: *value, priority: prio, seq: s };
            self.cls.replace(RuleId(id), spec).map_err(|e| format!("classifier: {e:?}"))?;
        }
        Ok(())
    }

    fn release(&mut self, pair: (u32, i128)) {
        let gone = match self.ranks.get_mut(&pair) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            Some(_) => true,
            None => false,
        };
        if gone {
            self.ranks.remove(&pair);
            let above: Vec<u64> =
                self.entries.iter().filter(|(_, (p, _, _))| *p > pair).map(|(s, _)| *s).collect();
            for seq in above {
                let _ = self.reinsert(seq);
            }
        }
    }

    /// Removes entry `seq`; false if it is not in the table.
    pub fn remove(&mut self, seq: u64) -> bool {
        let Some((pair, rules, handle)) = self.entries.remove(&seq) else { return false };
        for i in 0..rules.len() {
            self.cls.remove(RuleId((handle << 16) | i as u64));
        }
        self.release(pair);
        true
    }

    /// The matching entry's handle (its `seq` unless inserted with
    /// [`Index::insert_as`]); ORs the bits consulted into `wc`.
    #[inline]
    pub fn lookup(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<u64> {
        self.cls.lookup(key, wc).map(|h| h.id.0 >> 16)
    }

    /// The masks and values of `pats` over this table's keys (ranges as
    /// prefixes, several ranges multiplied out).
    fn expand(&self, pats: &[Pat]) -> Result<Vec<(FlowMask, FlowKey)>, String> {
        let mut out = vec![(FlowMask::ZERO, FlowKey::ZERO)];
        for (p, place) in pats.iter().zip(&self.places) {
            let alts: Vec<(Bits, Bits)> = match p {
                Pat::Masked { value, mask } => vec![(value.clone(), mask.clone())],
                Pat::Range { lo, hi } => {
                    if place.width > 64 {
                        return Err(format!("a range on a {}-bit key (at most 64)", place.width));
                    }
                    let (Some(l), Some(h)) = (lo.to_u64(), hi.to_u64()) else {
                        return Err("a range bound wider than its key".into());
                    };
                    prefixes(l, h, place.width as u8)
                        .into_iter()
                        .map(|(v, m)| {
                            (Bits::from_u64(place.width, v), Bits::from_u64(place.width, m))
                        })
                        .collect()
                }
            };
            if out.len() * alts.len().max(1) > MAX_EXPANSION {
                return Err(format!(
                    "the entry's ranges expand into more than {MAX_EXPANSION} rules"
                ));
            }
            let mut next = Vec::with_capacity(out.len() * alts.len());
            for (m, k) in &out {
                for (v, mask) in &alts {
                    let (mut m2, mut k2) = (*m, *k);
                    place.place(v, mask, &mut m2, &mut k2);
                    next.push((m2, k2));
                }
            }
            out = next;
        }
        Ok(out)
    }
}

/// `lo..=hi` over `width`-bit values as `(value, mask)` prefixes (at most
/// `2 * width` of them; none if `lo > hi`).
pub fn prefixes(lo: u64, hi: u64, width: u8) -> Vec<(u64, u64)> {
    let full = sluice_core::keyop::ones(width);
    let (mut lo, hi) = (lo & full, hi & full);
    let mut out = Vec::new();
    if lo > hi {
        return out;
    }
    // The last offset of a block of 2^k values.
    let span = |k: u32| if k >= 64 { u64::MAX } else { (1u64 << k) - 1 };
    loop {
        // The largest block aligned at `lo` that stays within `hi`.
        let mut k =
            if lo == 0 { u32::from(width) } else { lo.trailing_zeros().min(u32::from(width)) };
        while k > 0 && span(k) > hi - lo {
            k -= 1;
        }
        let last = lo + span(k);
        out.push((lo, full & !span(k)));
        if last >= hi {
            return out;
        }
        lo = last + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny deterministic generator (xorshift).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n.max(1)
        }
    }

    #[test]
    fn prefixes_cover_exactly_the_range() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for width in [1u8, 3, 8, 12] {
            let n = 1u64 << width;
            for _ in 0..300 {
                let (a, b) = (rng.below(n), rng.below(n));
                let (lo, hi) = (a.min(b), a.max(b));
                let ps = prefixes(lo, hi, width);
                assert!(ps.len() <= 2 * usize::from(width), "{lo}..{hi}: {ps:?}");
                for x in 0..n {
                    let hits = ps.iter().filter(|(v, m)| x & m == *v).count();
                    assert_eq!(hits, usize::from(lo <= x && x <= hi), "{x} in {lo}..{hi}: {ps:?}");
                }
            }
        }
        assert_eq!(prefixes(0, u64::MAX, 64), vec![(0, 0)]);
        assert_eq!(prefixes(5, 4, 8), vec![]);
        let top = prefixes(u64::MAX - 1, u64::MAX, 64);
        assert_eq!(top, vec![(u64::MAX - 1, !1)]);
    }

    fn places() -> Vec<KeyPlace> {
        vec![
            // An 8-bit key in one slot, and a 40-bit key split over two words.
            KeyPlace { slots: vec![Slot { word: 1, shift: 4, width: 8 }], width: 8 },
            KeyPlace {
                slots: vec![
                    Slot { word: 2, shift: 0, width: 8 },
                    Slot { word: 3, shift: 32, width: 32 },
                ],
                width: 40,
            },
        ]
    }

    fn random_pat(rng: &mut Rng, width: u32, kind: u64) -> Pat {
        let full = (1u64 << width) - 1;
        let v = rng.next() & full & 0x3ff; // small values, so keys hit
        match kind {
            0 => Pat::Masked { value: Bits::from_u64(width, v), mask: Bits::from_u64(width, full) },
            1 => {
                let m = rng.next() & full & 0x3ff;
                Pat::Masked { value: Bits::from_u64(width, v & m), mask: Bits::from_u64(width, m) }
            }
            2 => {
                let len = rng.below(u64::from(width) + 1) as u32;
                let m = if len == 0 { 0 } else { full & !((1u64 << (width - len)) - 1) };
                Pat::Masked { value: Bits::from_u64(width, v & m), mask: Bits::from_u64(width, m) }
            }
            _ => {
                let w = rng.below(300);
                Pat::Range {
                    lo: Bits::from_u64(width, v),
                    hi: Bits::from_u64(width, (v + w).min(full)),
                }
            }
        }
    }

    #[test]
    fn lookups_agree_with_the_reference_order() {
        let mut rng = Rng(42);
        for round in 0..40 {
            let places = places();
            let mut idx = Index::new(places.clone());
            let mut rules: Vec<Rule> = Vec::new();
            for seq in 0..(20 + round) {
                let (k0, k1) = (rng.below(4), rng.below(4));
                let pats = vec![random_pat(&mut rng, 8, k0), random_pat(&mut rng, 40, k1)];
                let r =
                    Rule { pats, prefix: rng.below(3) as u32, prio: rng.below(5) as i128 - 2, seq };
                idx.insert(&r).unwrap();
                rules.push(r);
                // Sometimes remove an older one.
                if rng.below(2) == 0 && !rules.is_empty() {
                    let i = rng.below(rules.len() as u64) as usize;
                    let gone = rules.remove(i);
                    assert!(idx.remove(gone.seq));
                }
            }
            assert_eq!(idx.len(), rules.len());
            for _ in 0..400 {
                let mut key = FlowKey::ZERO;
                for w in &mut key.words {
                    *w = rng.next();
                }
                // Bias the key values into the rules' small range.
                for p in &places {
                    let v = rng.below(0x400);
                    let mut hi = p.width;
                    for s in &p.slots {
                        let lo = hi - u32::from(s.width);
                        s.set(&mut key, (v >> lo) & sluice_core::keyop::ones(s.width));
                        hi = lo;
                    }
                }
                let mut wc = FlowMask::ZERO;
                let got = idx.lookup(&key, &mut wc);
                assert_eq!(got, scan(&places, &rules, &key), "round {round}");
                // Any key agreeing on the consulted bits gets the same answer.
                let mut other = key;
                for (o, m) in other.words.iter_mut().zip(wc.words) {
                    *o = (*o & m) | (rng.next() & !m);
                }
                assert_eq!(scan(&places, &rules, &other), got, "un-wildcarding, round {round}");
            }
        }
    }

    #[test]
    fn refusals_change_nothing() {
        let mut idx = Index::new(places());
        let any8 = Pat::Masked { value: Bits::zero(8), mask: Bits::zero(8) };
        let r = Rule {
            pats: vec![any8.clone(), Pat::Masked { value: Bits::zero(40), mask: Bits::zero(40) }],
            prefix: 0,
            prio: 1,
            seq: 7,
        };
        idx.insert(&r).unwrap();
        assert!(idx.insert(&r).unwrap_err().contains("already"));
        let wide = Rule {
            pats: vec![any8, Pat::Range { lo: Bits::zero(40), hi: Bits::from_u64(40, 5) }],
            prefix: 0,
            prio: 1,
            seq: 8,
        };
        assert!(idx.insert(&wide).is_ok(), "40-bit ranges are within 64");
        // Three ranges of 14, 78 and 14 prefixes: 15 288 rules.
        let mut three = places();
        three.push(KeyPlace { slots: vec![Slot { word: 5, shift: 0, width: 8 }], width: 8 });
        let mut idx3 = Index::new(three);
        let r8 = Pat::Range { lo: Bits::from_u64(8, 1), hi: Bits::from_u64(8, 254) };
        let many = Rule {
            pats: vec![
                r8.clone(),
                Pat::Range { lo: Bits::from_u64(40, 1), hi: Bits::from_u64(40, (1 << 40) - 2) },
                r8,
            ],
            prefix: 0,
            prio: 3,
            seq: 9,
        };
        assert!(idx3.insert(&many).unwrap_err().contains("more than"));
        assert!(idx3.is_empty() && idx3.ranks.is_empty());
        assert_eq!(idx.len(), 2);
        assert!(idx.remove(8) && !idx.remove(8));
    }
}
