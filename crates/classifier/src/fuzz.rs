//! The cargo-fuzz entry point: arbitrary bytes drive a random interleaving
//! of inserts, removes, replaces, snapshots and lookups, compared against a
//! linear-scan model after every step.

use crate::{Classifier, ClsError, Hit, RuleId, RuleSpec, Snapshot};
use sluice_packet::key::{FlowKey, FlowMask, KEY_WORDS};
use std::sync::Arc;

/// Key words the fuzzer's masks use: one per stage of `StagePlan::OXM`
/// (metadata, L2, L3, L4), plus the presence word.
const LANES: [usize; 5] = [0, 1, 3, 4, 7];

/// Linear-scan model: the best rule is the highest priority, then the
/// lowest seq, among the matching ones.
#[derive(Clone, Default)]
struct Model {
    rules: Vec<(RuleId, RuleSpec)>,
}

impl Model {
    fn lookup(&self, key: &FlowKey) -> Option<Hit> {
        let mut best: Option<&(RuleId, RuleSpec)> = None;
        for r in &self.rules {
            if key.matches(&r.1.mask, &r.1.value)
                && best.is_none_or(|b| {
                    (r.1.priority, u64::MAX - r.1.seq) > (b.1.priority, u64::MAX - b.1.seq)
                })
            {
                best = Some(r);
            }
        }
        best.map(|(id, s)| Hit { id: *id, priority: s.priority, seq: s.seq })
    }
}

/// Byte reader that yields zeros once the input runs out.
struct Bytes<'a> {
    data: &'a [u8],
}

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }
    fn u64(&mut self) -> u64 {
        (0..8).fold(0u64, |a, _| (a << 8) | u64::from(self.u8()))
    }
}

/// A lane pattern: the byte `b` placed in the low byte and (mirrored) in
/// the top byte of the word, so masks exercise high and low bits.
fn spread(b: u8) -> u64 {
    u64::from(b) | (u64::from(b.rotate_left(3)) << 56)
}

/// Drive a [`Classifier`] from `data` and compare it with a linear-scan
/// model; panics on any disagreement (that is a bug) and on nothing else.
pub fn fuzz_classifier(data: &[u8]) {
    let mut b = Bytes { data };
    // Up to four masks; few distinct masks make overlaps and shared stage
    // prefixes likely.
    let n_masks = usize::from(b.u8() % 4) + 1;
    let masks: Vec<FlowMask> = (0..n_masks)
        .map(|_| {
            let mut m = FlowMask::ZERO;
            let sel = b.u8();
            for (i, &w) in LANES.iter().enumerate() {
                if sel >> i & 1 != 0 {
                    m.words[w] = spread(b.u8());
                }
            }
            m
        })
        .collect();
    let mut cls = Classifier::new();
    let mut model = Model::default();
    let mut snaps: Vec<(Arc<Snapshot>, Model)> = Vec::new();
    let mut seq = 0u64;
    let mut steps = 0usize;
    while !b.data.is_empty() && steps < 4096 {
        steps += 1;
        let op = b.u8();
        let id = RuleId(u64::from(b.u8() % 16));
        match op % 6 {
            0 | 1 => {
                let spec = random_spec(&mut b, &masks, &mut seq);
                let want = if model.rules.iter().any(|r| r.0 == id) {
                    Err(ClsError::DuplicateId(id))
                } else {
                    model.rules.push((id, spec));
                    Ok(())
                };
                assert_eq!(cls.insert(id, spec), want);
            }
            2 => {
                let want =
                    model.rules.iter().position(|r| r.0 == id).map(|i| model.rules.remove(i).1);
                assert_eq!(cls.remove(id), want);
            }
            3 => {
                let spec = random_spec(&mut b, &masks, &mut seq);
                let want = match model.rules.iter_mut().find(|r| r.0 == id) {
                    Some(r) => Ok(core::mem::replace(&mut r.1, spec)),
                    None => Err(ClsError::NoSuchRule(id)),
                };
                assert_eq!(cls.replace(id, spec), want);
            }
            4 => {
                snaps.push((cls.snapshot(), model.clone()));
                if snaps.len() > 4 {
                    snaps.remove(0);
                }
            }
            _ => {
                let key = random_key(&mut b, &model);
                // Noise for the un-wildcarding check: lane words from a
                // byte each, the rest one repeated word.
                let fill = b.u64();
                let mut noise = FlowKey { words: [fill; KEY_WORDS] };
                for &w in &LANES {
                    noise.words[w] = spread(b.u8());
                }
                check_lookup(&model, &key, &noise, |k, wc| cls.lookup(k, wc));
                for (s, m) in &snaps {
                    check_lookup(m, &key, &noise, |k, wc| s.lookup(k, wc));
                }
            }
        }
        assert_eq!(cls.len(), model.rules.len());
        #[cfg(test)]
        cls.check();
    }
}

fn random_spec(b: &mut Bytes<'_>, masks: &[FlowMask], seq: &mut u64) -> RuleSpec {
    let mask = masks.get(usize::from(b.u8()) % masks.len().max(1)).copied().unwrap_or_default();
    let mut value = FlowKey::ZERO;
    for &w in &LANES {
        // A small palette, so that rules overlap and share stage prefixes.
        let v = match b.u8() % 8 {
            0..=2 => 0,
            3 => 0xff,
            4 => 0x0f,
            5 => 0x80,
            _ => b.u8(),
        };
        value.words[w] = spread(v) & mask.words[w];
    }
    *seq += 1 + u64::from(b.u8() % 3);
    RuleSpec { mask, value, priority: u16::from(b.u8() % 4), seq: *seq }
}

/// A key that mostly hits: some rule's value with a few bits flipped.
fn random_key(b: &mut Bytes<'_>, model: &Model) -> FlowKey {
    let pick = usize::from(b.u8());
    let mut key = match model.rules.get(pick % model.rules.len().max(1)) {
        Some(r) if pick & 0x80 == 0 => r.1.value,
        _ => FlowKey::ZERO,
    };
    let flips = b.u8();
    for (i, &w) in LANES.iter().enumerate() {
        if flips >> i & 1 != 0 {
            key.words[w] ^= spread(b.u8());
        }
    }
    key
}

/// Lookup `key` and check it against the model, then check the
/// un-wildcarding invariant with a key that agrees with `key` only on the
/// returned mask bits (and takes `noise` elsewhere).
fn check_lookup(
    model: &Model,
    key: &FlowKey,
    noise: &FlowKey,
    lookup: impl Fn(&FlowKey, &mut FlowMask) -> Option<Hit>,
) {
    let mut wc = FlowMask::ZERO;
    let got = lookup(key, &mut wc);
    assert_eq!(got, model.lookup(key), "lookup of {key:?}");
    let mut other = *key;
    for i in 0..other.words.len() {
        other.words[i] = (key.words[i] & wc.words[i]) | (noise.words[i] & !wc.words[i]);
    }
    let mut wc2 = FlowMask::ZERO;
    assert_eq!(lookup(&other, &mut wc2), got, "un-wildcarding: {key:?} vs {other:?} under {wc:?}");
    assert_eq!(model.lookup(&other), got);
    // Steer the free bits towards each rule's value: the keys most likely
    // to expose a missing 1-bit.
    for (_, r) in &model.rules {
        for i in 0..other.words.len() {
            other.words[i] = (key.words[i] & wc.words[i]) | (r.value.words[i] & !wc.words[i]);
        }
        assert_eq!(lookup(&other, &mut wc2), got, "steered un-wildcarding under {wc:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzz_entry_survives_edge_inputs() {
        fuzz_classifier(&[]);
        fuzz_classifier(&[0xff; 64]);
        fuzz_classifier(&[0; 64]);
        let ramp: Vec<u8> = (0..=255u8).cycle().take(4000).collect();
        fuzz_classifier(&ramp);
    }

    fn xorshift_runs(n: usize) {
        // A deterministic xorshift stream stands in for the fuzzer.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..n {
            let data: Vec<u8> = (0..600)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            fuzz_classifier(&data);
        }
    }

    #[test]
    fn fuzz_entry_random_inputs() {
        xorshift_runs(200);
    }

    #[test]
    fn fuzz_entry_with_colliding_hashes() {
        // Every hash reduced to 2 bits: collision chains and stage-set
        // false positives on almost every insert and lookup.
        crate::hash::WEAK.with(|w| w.set(true));
        xorshift_runs(200);
        crate::hash::WEAK.with(|w| w.set(false));
    }
}
