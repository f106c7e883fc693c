//! Tuple-space search over one table, with the hash probes compiled.
//!
//! The data side of [`ProbeTable`] (grouping rules into subtables, the
//! open-addressing hash arrays, the hash function) and the plain-Rust
//! lookup [`ProbeTable::lookup_interp`], which is the reference for the
//! generated code. The code generation is in `probe_jit.rs`; the design is
//! described in the crate docs.

use crate::jit::satisfiable;
use crate::probe_jit::ProbeCode;
use crate::RuleWords;
use sluice_packet::key::{FlowKey, FlowMask, KEY_WORDS};
use std::collections::HashMap;

/// The most distinct masks (subtables) a [`ProbeTable`] accepts; above
/// that, tuple space search is the wrong tool and the caller should use
/// its own classifier.
pub const MAX_PROBE_MASKS: usize = 64;

/// The most rules a [`ProbeTable`] accepts, so that an index fits in the
/// 23 index bits of the generated code's return value, below the miss
/// marker.
pub const MAX_PROBE_RULES: usize = 1 << 22;

/// Bits of the generated code's return value that hold the rule index; the
/// bits above hold the number of subtables probed.
pub(crate) const IDX_BITS: u32 = 23;
/// The index part of the return value on a miss.
pub(crate) const IDX_MISS: u32 = (1 << IDX_BITS) - 1;
/// Marks an empty slot (in the slot's index word).
pub(crate) const EMPTY: u64 = u64::MAX;
/// Hash start value and multiplier (odd, bits without pattern: the
/// fractional part of the golden ratio and of pi).
pub(crate) const HASH_SEED: u64 = 0x9e37_79b9_7f4a_7c15;
pub(crate) const HASH_MUL: u64 = 0x243f_6a88_85a3_08d3;

/// Folded multiply: low and high halves of the 128-bit product, XORed.
/// Cranelift: `imul` + `umulhi` + `bxor`.
#[inline]
pub(crate) fn fold(x: u64) -> u64 {
    let p = u128::from(x) * u128::from(HASH_MUL);
    (p as u64) ^ ((p >> 64) as u64)
}

/// The hash of a subtable's masked key words, in word order:
/// `h = SEED; h = fold(h ^ w)` for each word.
#[inline]
pub(crate) fn hash(words: &[u64]) -> u64 {
    words.iter().fold(HASH_SEED, |h, &w| fold(h ^ w))
}

/// Removes and returns the lowest pending candidate if it is below
/// `limit`; its cursor moves on to the next rule with the same value, or
/// goes. `pending[..n]` are the live cursors.
fn pop_below(pending: &mut [(u32, &[u32])], n: &mut usize, limit: u32) -> Option<u32> {
    let live = pending.get_mut(..*n)?;
    let (at, &(i, rest)) = live.iter().enumerate().min_by_key(|(_, c)| c.0)?;
    if i >= limit {
        return None;
    }
    match rest.split_first() {
        Some((&next, more)) => live[at] = (next, more),
        None => {
            *n -= 1;
            live.swap(at, *n);
        }
    }
    Some(i)
}

/// All satisfiable rules with one mask.
pub(crate) struct Subtable {
    /// The mask, as `(word, mask word)` for each non-zero word, ascending.
    pub(crate) words: Vec<(usize, u64)>,
    /// The whole mask, for the wildcard bits.
    pub(crate) mask: [u64; KEY_WORDS],
    /// The lowest rule index in the subtable.
    pub(crate) min_index: u32,
    /// Number of distinct values (occupied slots).
    pub(crate) entries: usize,
    /// `bucket_mask + 1` slots of `stride() = words.len() + 1` words each:
    /// `[rule index or EMPTY, masked value words in `words` order]`.
    /// Never empty (at least two slots), at most half full, so every probe
    /// sequence meets an empty slot. Never changed after build: the
    /// generated code embeds its address.
    pub(crate) slots: Box<[u64]>,
    /// Slot count minus one (a power of two minus one).
    pub(crate) bucket_mask: u64,
    /// The longest probe sequence of an entry (slots visited), for
    /// diagnostics and tests.
    pub(crate) max_probe: usize,
    /// For a stored rule index whose value occurs again in later rules of
    /// this mask: those later indices, ascending. Only the guarded lookup
    /// reads them (a guard may reject the stored rule); empty when no
    /// value repeats.
    pub(crate) dups: HashMap<u32, Vec<u32>>,
}

impl Subtable {
    pub(crate) fn stride(&self) -> usize {
        self.words.len() + 1
    }

    /// `key`'s masked words into `out[..words.len()]`.
    #[inline]
    fn masked<'a>(&self, key: &FlowKey, out: &'a mut [u64; KEY_WORDS]) -> &'a [u64] {
        let n = self.words.len();
        for (o, &(w, m)) in out.iter_mut().zip(&self.words) {
            *o = key.words.get(w).copied().unwrap_or(0) & m;
        }
        out.get(..n).unwrap_or(&[])
    }

    /// The slot holding masked words `mk`, or the empty slot that ends its
    /// probe sequence: `(slot start, found)`, `None` only if the array is
    /// full (never, by construction). Visits at most every slot once.
    fn find_slot(&self, mk: &[u64]) -> Option<(usize, bool, usize)> {
        let stride = self.stride();
        let mut pos = hash(mk) & self.bucket_mask;
        for visited in 1..=self.bucket_mask.saturating_add(1) {
            let start = usize::try_from(pos).ok()?.checked_mul(stride)?;
            let slot = self.slots.get(start..start.checked_add(stride)?)?;
            let (&idx, vals) = slot.split_first()?;
            if idx == EMPTY {
                return Some((start, false, visited as usize));
            }
            if vals == mk {
                return Some((start, true, visited as usize));
            }
            pos = (pos + 1) & self.bucket_mask;
        }
        None
    }

    /// The rule index stored for `key`'s masked words, if any.
    #[inline]
    fn lookup(&self, key: &FlowKey) -> Option<u32> {
        let mut buf = [0u64; KEY_WORDS];
        let mk = self.masked(key, &mut buf);
        match self.find_slot(mk) {
            Some((start, true, _)) => self.slots.get(start).and_then(|&i| u32::try_from(i).ok()),
            _ => None,
        }
    }

    /// Occupied slots as `(rule index, masked words)`, in slot order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (u32, &[u64])> {
        self.slots.chunks_exact(self.stride()).filter_map(|s| {
            let (&idx, vals) = s.split_first()?;
            if idx == EMPTY {
                None
            } else {
                Some((u32::try_from(idx).ok()?, vals))
            }
        })
    }

    /// A subtable for `mask` holding `indices` (ascending) of `rules`; a
    /// value met again keeps its first (lowest) index.
    fn build<R: RuleWords>(
        mask: &[u64; KEY_WORDS],
        indices: &[u32],
        rules: &[R],
    ) -> Result<Subtable, String> {
        let words: Vec<(usize, u64)> =
            mask.iter().copied().enumerate().filter(|&(_, m)| m != 0).collect();
        let stride = words.len() + 1;
        let n_slots = indices
            .len()
            .checked_mul(2)
            .map(|n| n.max(2).next_power_of_two())
            .ok_or("subtable too large")?;
        let total = n_slots.checked_mul(stride).ok_or("subtable too large")?;
        let mut slots: Vec<u64> = Vec::new();
        slots
            .try_reserve_exact(total)
            .map_err(|e| format!("{total} slot words for one subtable: {e}"))?;
        slots.resize(total, EMPTY);
        let mut st = Subtable {
            words,
            mask: *mask,
            min_index: indices.first().copied().unwrap_or(0),
            entries: 0,
            slots: slots.into_boxed_slice(),
            bucket_mask: (n_slots - 1) as u64,
            max_probe: 0,
            dups: HashMap::new(),
        };
        let mut buf = [0u64; KEY_WORDS];
        for &i in indices {
            let Some((_, value)) = rules.get(i as usize).map(R::words) else {
                return Err("internal: rule index out of range".into());
            };
            // The value is within the mask (satisfiable), so its words are
            // already masked.
            let key = FlowKey { words: *value };
            let mk = st.masked(&key, &mut buf);
            let Some((start, found, visited)) = st.find_slot(mk) else {
                return Err("internal: subtable full".into());
            };
            st.max_probe = st.max_probe.max(visited);
            if found {
                // An earlier rule has this value and wins, unless its
                // guard rejects it: remember this one behind it.
                let first = st.slots.get(start).and_then(|&x| u32::try_from(x).ok());
                let Some(first) = first else {
                    return Err("internal: found slot without an index".into());
                };
                st.dups.entry(first).or_default().push(i);
                continue;
            }
            let Some(slot) = st.slots.get_mut(start..start + stride) else {
                return Err("internal: slot out of range".into());
            };
            if let Some((idx, vals)) = slot.split_first_mut() {
                *idx = u64::from(i);
                vals.copy_from_slice(mk);
            }
            st.entries += 1;
        }
        Ok(st)
    }
}

/// A table of any size with few distinct masks, looked up by compiled
/// tuple-space search; see the crate docs.
pub struct ProbeTable {
    /// The subtables (in probe order) and the code that reads them.
    code: ProbeCode,
    /// `wc_prefix[c]` = OR of the masks of subtables `0..c` (`c` = 0..=n).
    wc_prefix: Vec<FlowMask>,
    /// Number of rules given to `build`.
    len: usize,
}

impl ProbeTable {
    /// Builds the subtables for `rules` (lookup order) and compiles their
    /// probes. `Err` above [`MAX_PROBE_RULES`] rules or
    /// [`MAX_PROBE_MASKS`] distinct masks (of satisfiable rules), if memory
    /// for the hash arrays cannot be had, or if Cranelift fails.
    pub fn build<R: RuleWords>(rules: &[R]) -> Result<ProbeTable, String> {
        if rules.len() > MAX_PROBE_RULES {
            return Err(format!("{} rules, at most {MAX_PROBE_RULES} supported", rules.len()));
        }
        // Group by mask, in order of first appearance = of lowest index.
        let mut by_mask: HashMap<&[u64; KEY_WORDS], usize> = HashMap::new();
        let mut groups: Vec<(&[u64; KEY_WORDS], Vec<u32>)> = Vec::new();
        for (i, (mask, value)) in rules.iter().map(R::words).enumerate() {
            if !satisfiable(mask, value) {
                continue;
            }
            let g = match by_mask.get(mask) {
                Some(&g) => g,
                None => {
                    if groups.len() == MAX_PROBE_MASKS {
                        return Err(format!("more than {MAX_PROBE_MASKS} distinct masks"));
                    }
                    by_mask.insert(mask, groups.len());
                    groups.push((mask, Vec::new()));
                    groups.len() - 1
                }
            };
            if let Some((_, ix)) = groups.get_mut(g) {
                // `i < MAX_PROBE_RULES < 2^32`.
                ix.push(i as u32);
            }
        }
        drop(by_mask);
        let mut subs = Vec::with_capacity(groups.len());
        for (mask, indices) in &groups {
            subs.push(Subtable::build(mask, indices, rules)?);
        }
        drop(groups);
        let mut wc_prefix = Vec::with_capacity(subs.len() + 1);
        let mut acc = FlowMask::ZERO;
        wc_prefix.push(acc);
        for st in &subs {
            for (a, m) in acc.words.iter_mut().zip(&st.mask) {
                *a |= m;
            }
            wc_prefix.push(acc);
        }
        let code = ProbeCode::new(subs)?;
        Ok(ProbeTable { code, wc_prefix, len: rules.len() })
    }

    /// Index of the first matching rule, as [`linear_scan`] would answer,
    /// by the generated code. ORs into `wc` the masks of the subtables
    /// probed: a valid un-wildcarding (every key equal to `key` on those
    /// bits gets the same answer), usually narrower than the scan's.
    ///
    /// [`linear_scan`]: crate::linear_scan
    #[inline]
    pub fn lookup(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize> {
        let r = self.code.run(key);
        let probed = (r >> IDX_BITS) as usize;
        let idx = r & IDX_MISS;
        if let Some(m) = self.wc_prefix.get(probed).or(self.wc_prefix.last()) {
            for (w, m) in wc.words.iter_mut().zip(&m.words) {
                *w |= m;
            }
        }
        (idx != IDX_MISS).then_some(idx as usize)
    }

    /// The same answer and `wc` as [`lookup`](ProbeTable::lookup), computed
    /// in plain Rust over the same hash arrays (the reference for the
    /// generated code, and a fallback).
    pub fn lookup_interp(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize> {
        let (idx, probed) = self.probe_interp(key);
        if let Some(m) = self.wc_prefix.get(probed) {
            for (w, m) in wc.words.iter_mut().zip(&m.words) {
                *w |= m;
            }
        }
        (idx != IDX_MISS).then_some(idx as usize)
    }

    /// The first matching rule that `accept` accepts. `accept` is called
    /// on the matching rules' indices in list order, each at most once,
    /// until it returns `true` (the order of [`linear_scan_guarded`]).
    /// ORs into `wc` the masks of the subtables probed: those whose lowest
    /// rule index is at most the answer (all on a miss), as for
    /// [`lookup`](ProbeTable::lookup) with that answer. Runs in plain Rust
    /// over the hash arrays (a guard is a call out anyway); never
    /// allocates.
    ///
    /// Design: subtables are probed in order of their lowest index; a
    /// probe yields the subtable's stored rule for the key and the later
    /// rules with the same value. Before probing subtable `j`, every
    /// pending candidate below `min_index(j)` is offered, lowest first:
    /// no rule of `j` or later comes before it. So candidates are offered
    /// in index order, and a subtable is skipped only when an accepted
    /// rule precedes all of its rules.
    ///
    /// [`linear_scan_guarded`]: crate::linear_scan_guarded
    pub fn lookup_guarded(
        &self,
        key: &FlowKey,
        wc: &mut FlowMask,
        mut accept: impl FnMut(usize) -> bool,
    ) -> Option<usize> {
        // One cursor per matching subtable: the next candidate and the
        // ones after it. At most MAX_PROBE_MASKS subtables.
        let mut pending: [(u32, &[u32]); MAX_PROBE_MASKS] = [(0, &[]); MAX_PROBE_MASKS];
        let mut n = 0usize;
        let mut probed = 0usize;
        let mut found = None;
        'search: for st in self.code.subs() {
            while let Some(i) = pop_below(&mut pending, &mut n, st.min_index) {
                if accept(i as usize) {
                    found = Some(i);
                    break 'search;
                }
            }
            probed += 1;
            if let Some(first) = st.lookup(key) {
                let rest = st.dups.get(&first).map_or(&[][..], |v| v.as_slice());
                if let Some(slot) = pending.get_mut(n) {
                    *slot = (first, rest);
                    n += 1;
                }
            }
        }
        if found.is_none() {
            while let Some(i) = pop_below(&mut pending, &mut n, u32::MAX) {
                if accept(i as usize) {
                    found = Some(i);
                    break;
                }
            }
        }
        if let Some(m) = self.wc_prefix.get(probed) {
            for (w, m) in wc.words.iter_mut().zip(&m.words) {
                *w |= m;
            }
        }
        found.map(|i| i as usize)
    }

    /// `(best index or IDX_MISS, subtables probed)`.
    fn probe_interp(&self, key: &FlowKey) -> (u32, usize) {
        let mut best = IDX_MISS;
        let mut probed = 0;
        for st in self.code.subs() {
            // Subtables are in order of lowest index: once the best hit is
            // below this one's lowest, nothing here or later can win.
            if best < st.min_index {
                break;
            }
            probed += 1;
            if let Some(i) = st.lookup(key) {
                best = best.min(i);
            }
        }
        (best, probed)
    }

    /// The number of subtables [`lookup`](ProbeTable::lookup) probes for
    /// an answer `hit` (`None` = miss): those whose lowest rule index is
    /// at most the answer. Exposed for tests and statistics.
    pub fn probed_for(&self, hit: Option<usize>) -> usize {
        let a = hit.map_or(u64::MAX, |i| i as u64);
        self.code.subs().partition_point(|st| u64::from(st.min_index) <= a)
    }

    /// Number of rules given to [`build`](ProbeTable::build).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the table has no rules.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of subtables (distinct masks of satisfiable rules).
    pub fn subtables(&self) -> usize {
        self.code.subs().len()
    }

    /// Number of rules stored: satisfiable rules with a value not already
    /// taken by an earlier rule of the same mask.
    pub fn stored_rules(&self) -> usize {
        self.code.subs().iter().map(|s| s.entries).sum()
    }

    /// The longest probe sequence (slots visited) over all stored values,
    /// a measure of the hash's quality on this table (1 is ideal).
    pub fn max_probe_len(&self) -> usize {
        self.code.subs().iter().map(|s| s.max_probe).max().unwrap_or(0)
    }
}
