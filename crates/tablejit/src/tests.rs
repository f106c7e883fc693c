//! Literal tables, and a proptest against [`linear_scan`].

use super::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::cell::Cell;

fn key(pairs: &[(usize, u64)]) -> FlowKey {
    let mut k = FlowKey::ZERO;
    for &(w, v) in pairs {
        k.words[w] = v;
    }
    k
}

fn rule(pairs: &[(usize, u64, u64)]) -> Rule {
    let mut m = [0u64; KEY_WORDS];
    let mut v = [0u64; KEY_WORDS];
    for &(w, mw, vw) in pairs {
        m[w] = mw;
        v[w] = vw;
    }
    (m, v)
}

/// Lookup through the compiled table, checked against the scan (index and
/// mask), returning the compiled answer and wildcard mask.
fn both(t: &CompiledTable, rules: &[Rule], k: &FlowKey) -> (Option<usize>, FlowMask) {
    let mut wc = FlowMask::ZERO;
    let got = t.lookup(k, &mut wc);
    let mut wc_ref = FlowMask::ZERO;
    let want = linear_scan(rules, k, &mut wc_ref);
    assert_eq!(got, want);
    assert_eq!(wc.words, wc_ref.words);
    (got, wc)
}

#[test]
fn empty_table_misses() {
    let t = CompiledTable::compile(&[]).unwrap();
    assert_eq!(t.len(), 0);
    assert!(t.is_empty());
    let mut wc = FlowMask::ZERO;
    wc.words[3] = 0x0f;
    assert_eq!(t.lookup(&key(&[(0, 1)]), &mut wc), None);
    // Nothing examined, nothing added; what was there stays.
    let mut want = [0u64; KEY_WORDS];
    want[3] = 0x0f;
    assert_eq!(wc.words, want);
}

#[test]
fn catch_all_matches_everything() {
    let rules = [rule(&[])];
    let t = CompiledTable::compile(&rules).unwrap();
    for k in [FlowKey::ZERO, key(&[(0, 7), (23, u64::MAX)])] {
        let (hit, wc) = both(&t, &rules, &k);
        assert_eq!(hit, Some(0));
        assert!(wc.is_zero());
    }
}

#[test]
fn exact_match_on_one_word() {
    let rules = [rule(&[(2, u64::MAX, 0x0800)])];
    let t = CompiledTable::compile(&rules).unwrap();
    assert_eq!(t.len(), 1);
    let (hit, wc) = both(&t, &rules, &key(&[(2, 0x0800), (5, 99)]));
    assert_eq!(hit, Some(0));
    assert_eq!(wc.words[2], u64::MAX);
    assert_eq!(wc.words.iter().filter(|&&w| w != 0).count(), 1);
    // One bit off, and a key with the value in the wrong word: misses.
    assert_eq!(both(&t, &rules, &key(&[(2, 0x0801)])).0, None);
    assert_eq!(both(&t, &rules, &key(&[(3, 0x0800)])).0, None);
    // The mask is still reported on a miss: the scan looked at word 2.
    assert_eq!(both(&t, &rules, &key(&[(3, 0x0800)])).1.words[2], u64::MAX);
}

#[test]
fn order_decides_between_overlapping_rules() {
    // A /24 prefix and a /16 prefix on word 4 (an IPv4 address in the high
    // half), plus an exact port on word 6 for the first.
    let p24 = 0xffff_ff00_0000_0000u64;
    let p16 = 0xffff_0000_0000_0000u64;
    let narrow = rule(&[(4, p24, 0x0a00_0100_0000_0000), (6, 0xffff, 80)]);
    let wide = rule(&[(4, p16, 0x0a00_0000_0000_0000)]);
    let k = key(&[(4, 0x0a00_0105_0000_0000), (6, 80)]);

    let rules = [narrow, wide];
    let t = CompiledTable::compile(&rules).unwrap();
    let (hit, wc) = both(&t, &rules, &k);
    assert_eq!(hit, Some(0));
    assert_eq!((wc.words[4], wc.words[6]), (p24, 0xffff));
    // Another port: the narrow rule fails on word 6, the wide one hits and
    // the mask holds both rules' bits.
    let k2 = key(&[(4, 0x0a00_0105_0000_0000), (6, 443)]);
    let (hit, wc) = both(&t, &rules, &k2);
    assert_eq!(hit, Some(1));
    assert_eq!((wc.words[4], wc.words[6]), (p24, 0xffff));

    // Reversed: the wide rule shadows the narrow one.
    let rules = [wide, narrow];
    let t = CompiledTable::compile(&rules).unwrap();
    let (hit, wc) = both(&t, &rules, &k);
    assert_eq!(hit, Some(0));
    assert_eq!((wc.words[4], wc.words[6]), (p16, 0));

    // Outside both prefixes: miss, every mask reported.
    let (hit, wc) = both(&t, &rules, &key(&[(4, 0x0b00_0000_0000_0000), (6, 80)]));
    assert_eq!(hit, None);
    assert_eq!((wc.words[4], wc.words[6]), (p24, 0xffff));
}

#[test]
fn rules_after_a_catch_all_are_unreachable_but_examined_rules_only_count() {
    let rules = [rule(&[(0, 1, 1)]), rule(&[]), rule(&[(1, u64::MAX, 5)])];
    let t = CompiledTable::compile(&rules).unwrap();
    assert_eq!(t.len(), 3);
    let (hit, wc) = both(&t, &rules, &key(&[(1, 5)]));
    assert_eq!(hit, Some(1));
    assert_eq!((wc.words[0], wc.words[1]), (1, 0));
    assert_eq!(both(&t, &rules, &key(&[(0, 1), (1, 5)])).0, Some(0));
}

#[test]
fn value_outside_mask_never_matches() {
    // Word 3 has value bits the mask does not cover; word 9 has a value
    // under a zero mask. Neither rule can match; the catch-all after them
    // catches the key, and both masks were examined.
    let rules = [rule(&[(3, 0xff, 0x1ff)]), rule(&[(9, 0, 1)]), rule(&[])];
    let t = CompiledTable::compile(&rules).unwrap();
    let (hit, wc) = both(&t, &rules, &key(&[(3, 0x1ff), (9, 1)]));
    assert_eq!(hit, Some(2));
    assert_eq!(wc.words[3], 0xff);
}

#[test]
fn too_many_rules_is_an_error() {
    let rules = vec![rule(&[(0, u64::MAX, 1)]); MAX_RULES + 1];
    assert!(CompiledTable::compile(&rules).is_err());
    let t = CompiledTable::compile(&rules[..MAX_RULES]).unwrap();
    assert_eq!(t.len(), MAX_RULES);
    assert_eq!(both(&t, &rules[..MAX_RULES], &key(&[(0, 1)])).0, Some(0));
}

#[test]
fn last_of_max_rules_hits() {
    // Distinct exact values: key `i` hits rule `i`, including index 255.
    let rules: Vec<Rule> =
        (0..MAX_RULES as u64).map(|i| rule(&[(1, u64::MAX, i), (7, 0xf0, 0x30)])).collect();
    let t = CompiledTable::compile(&rules).unwrap();
    for i in [0usize, 1, 100, MAX_RULES - 1] {
        assert_eq!(both(&t, &rules, &key(&[(1, i as u64), (7, 0x3a)])).0, Some(i));
    }
    assert_eq!(both(&t, &rules, &key(&[(1, 3), (7, 0x4a)])).0, None);
}

/// Realistic mask word shapes: full, prefix, single bit, low field, zero.
fn mask_word() -> impl Strategy<Value = u64> {
    prop_oneof![
        10 => Just(u64::MAX),
        10 => (1u32..64).prop_map(|n| u64::MAX << (64 - n)),
        10 => (0u32..64).prop_map(|b| 1u64 << b),
        10 => prop_oneof![Just(0xffffu64), Just(0xffff_0000), Just(0xff)],
        // Rare: a one-word rule with it is a catch-all.
        1 => Just(0u64),
    ]
}

/// A rule touching 1..=4 words, mostly among the first six (a word may come
/// twice: the last draw wins, and may be a zero mask); values drawn from a
/// small pool half the time so rules overlap. One rule in about 200 is an
/// explicit catch-all, so that tables with and without one both occur.
fn rule_strategy() -> impl Strategy<Value = Rule> {
    let word = prop_oneof![3 => 0usize..6, 1 => 0usize..KEY_WORDS];
    let val = prop_oneof![0u64..4, any::<u64>()];
    let len = prop_oneof![1 => Just(0usize), 200 => 1usize..=4];
    len.prop_flat_map(move |n| prop::collection::vec((word.clone(), mask_word(), val.clone()), n))
        .prop_map(|ws| {
            let mut m = [0u64; KEY_WORDS];
            let mut v = [0u64; KEY_WORDS];
            for (w, mw, vw) in ws {
                m[w] = mw;
                v[w] = vw & mw;
            }
            (m, v)
        })
}

/// Keys: `(Some(rule), noise)` copies a rule's value with `noise` in the
/// bits its mask leaves free (so it hits that rule or an earlier one);
/// `(None, noise)` is the noise itself.
type KeySpec = (Option<prop::sample::Index>, [u64; KEY_WORDS]);

fn table_strategy() -> impl Strategy<Value = (Vec<Rule>, Vec<KeySpec>)> {
    let noise = prop::array::uniform24(any::<u64>());
    (
        prop::collection::vec(rule_strategy(), 1..=64),
        prop::collection::vec(
            (prop::option::weighted(0.7, any::<prop::sample::Index>()), noise),
            1..=32,
        ),
    )
}

#[test]
fn matches_linear_scan() {
    let hits = Cell::new(0usize);
    let keys = Cell::new(0usize);
    let late_hits = Cell::new(0usize);
    let mut runner = TestRunner::new(Config { cases: 256, ..Config::default() });
    runner
        .run(&table_strategy(), |(rules, specs)| {
            let t = CompiledTable::compile(&rules).map_err(TestCaseError::fail)?;
            prop_assert_eq!(t.len(), rules.len());
            for (pick, noise) in specs {
                let mut k = FlowKey { words: noise };
                if let Some(ix) = pick {
                    let (m, v) = &rules[ix.index(rules.len())];
                    for w in 0..KEY_WORDS {
                        k.words[w] = v[w] | (noise[w] & !m[w]);
                    }
                }
                // Start from a non-empty mask: lookup must OR, not store.
                let mut wc = FlowMask::ZERO;
                wc.words[KEY_WORDS - 1] = 0x8000;
                let mut wc_ref = wc;
                let got = t.lookup(&k, &mut wc);
                let want = linear_scan(&rules, &k, &mut wc_ref);
                prop_assert_eq!(got, want);
                prop_assert_eq!(wc.words, wc_ref.words);
                keys.set(keys.get() + 1);
                if let Some(i) = got {
                    hits.set(hits.get() + 1);
                    if i > 0 {
                        late_hits.set(late_hits.get() + 1);
                    }
                }
            }
            Ok(())
        })
        .unwrap();
    let (h, n, l) = (hits.get(), keys.get(), late_hits.get());
    eprintln!("{h} hits of {n} keys, {l} on a rule after the first");
    // Copied keys are 70 % of the total and always hit: demand half.
    assert!(h * 2 >= n, "only {h} of {n} keys hit");
    assert!(l * 4 >= n, "only {l} of {n} keys hit a rule after the first");
    // Random keys mostly hit too (single-bit rules match half of all keys);
    // demand enough misses that the all-masks path is exercised.
    assert!((n - h) * 100 >= n, "only {} of {n} keys missed", n - h);
}
