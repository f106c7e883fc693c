//! Literal tables, and a proptest against [`linear_scan`].

use super::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::cell::Cell;

/// A key with the given (word, value) pairs set (shared with `probe_tests`).
pub(crate) fn key(pairs: &[(usize, u64)]) -> FlowKey {
    let mut k = FlowKey::ZERO;
    for &(w, v) in pairs {
        k.words[w] = v;
    }
    k
}

/// A rule from (word, mask, value) triples (shared with `probe_tests`).
pub(crate) fn rule(pairs: &[(usize, u64, u64)]) -> Rule {
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
                let got = agrees(&t, &rules, &k)?;
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

// ---- Known-bits (per-port) variants ----

/// In-port rules: word 0, low 32 bits (as in `FIXED_LAYOUT`).
const PORT: u64 = 0xffff_ffff;

fn port_known(port: u64) -> (FlowMask, FlowKey) {
    let mut m = FlowMask::ZERO;
    m.words[0] = PORT;
    (m, key(&[(0, port)]))
}

/// [`both`] for proptests, starting from a non-empty mask (lookup must
/// OR into it, not store).
fn agrees(t: &CompiledTable, rules: &[Rule], k: &FlowKey) -> Result<Option<usize>, TestCaseError> {
    let mut wc = FlowMask::ZERO;
    wc.words[KEY_WORDS - 1] = 0x8000;
    let mut wc_ref = wc;
    let got = t.lookup(k, &mut wc);
    let want = linear_scan(rules, k, &mut wc_ref);
    prop_assert_eq!(got, want);
    prop_assert_eq!(wc.words, wc_ref.words);
    Ok(got)
}

/// Lookup through a known-bits variant, checked against the full scan.
fn both_known(t: &CompiledTable, rules: &[Rule], k: &FlowKey) -> Option<usize> {
    both(t, rules, k).0
}

#[test]
fn known_port_drops_other_ports_rules_and_keeps_indices() {
    let rules = [
        rule(&[(0, PORT, 1), (2, 0xffff, 0x0800)]), // port 1, IPv4
        rule(&[(0, PORT, 2), (2, 0xffff, 0x0800)]), // port 2, IPv4
        rule(&[(2, 0xffff, 0x86dd)]),               // any port, IPv6
        rule(&[(0, PORT, 2)]),                      // port 2, anything
        rule(&[(0, 0xff, 1), (4, u64::MAX, 9)]),    // low port byte 1
        rule(&[]),                                  // catch-all
    ];
    let full = CompiledTable::compile(&rules).unwrap();
    assert_eq!(full.live_rules(), 6);
    let (m, v) = port_known(2);
    let t = CompiledTable::compile_known(&rules, &m, &v).unwrap();
    assert_eq!(t.len(), 6);
    // Rules 0 and 4 need port 1; rule 3 is a catch-all on port 2, so the
    // catch-all after it is dead.
    assert_eq!(t.live_rules(), 3);
    assert_eq!(both_known(&t, &rules, &key(&[(0, 2), (2, 0x0800)])), Some(1));
    assert_eq!(both_known(&t, &rules, &key(&[(0, 2), (2, 0x86dd)])), Some(2));
    assert_eq!(both_known(&t, &rules, &key(&[(0, 2), (2, 0x0806)])), Some(3));

    let (m, v) = port_known(1);
    let t = CompiledTable::compile_known(&rules, &m, &v).unwrap();
    // Rules 1 and 3 are for port 2.
    assert_eq!(t.live_rules(), 4);
    assert_eq!(both_known(&t, &rules, &key(&[(0, 1), (2, 0x0800)])), Some(0));
    assert_eq!(both_known(&t, &rules, &key(&[(0, 1), (4, 9)])), Some(4));
    assert_eq!(both_known(&t, &rules, &key(&[(0, 1), (4, 8)])), Some(5));
    // The wc on a late hit holds the masks of the dropped rules too.
    let mut wc = FlowMask::ZERO;
    assert_eq!(t.lookup(&key(&[(0, 1), (4, 8)]), &mut wc), Some(5));
    assert_eq!((wc.words[0], wc.words[2], wc.words[4]), (PORT, 0xffff, u64::MAX));

    // Port 7 matches no port rule: only the IPv6 rule and the catch-all.
    let (m, v) = port_known(7);
    let t = CompiledTable::compile_known(&rules, &m, &v).unwrap();
    assert_eq!(t.live_rules(), 2);
    assert_eq!(both_known(&t, &rules, &key(&[(0, 7)])), Some(5));
}

#[test]
fn known_bits_outside_the_known_value_are_ignored_and_empty_known_is_full() {
    let rules = [rule(&[(1, 0xf0, 0x30)]), rule(&[(1, 0x0f, 0x05)])];
    // A known value with bits outside the known mask: only the masked part
    // counts (word 1 high nibble known to be 3).
    let mut m = FlowMask::ZERO;
    m.words[1] = 0xf0;
    let v = key(&[(1, 0x3f)]);
    let t = CompiledTable::compile_known(&rules, &m, &v).unwrap();
    // Rule 0 is then a catch-all.
    assert_eq!(t.live_rules(), 1);
    assert_eq!(both_known(&t, &rules, &key(&[(1, 0x35)])), Some(0));
    let t = CompiledTable::compile_known(&rules, &FlowMask::ZERO, &FlowKey::ZERO).unwrap();
    assert_eq!(t.live_rules(), 2);
    assert_eq!(both_known(&t, &rules, &key(&[(1, 0x45)])), Some(1));
    assert_eq!(both_known(&t, &rules, &key(&[(1, 0x46)])), None);
    let too_many = vec![rule(&[]); MAX_RULES + 1];
    assert!(CompiledTable::compile_known(&too_many, &m, &v).is_err());
}

/// A rule that is, by a coin, also pinned to one of four in-ports.
fn port_rule_strategy() -> impl Strategy<Value = Rule> {
    (rule_strategy(), prop_oneof![Just(None), (0u64..4).prop_map(Some)]).prop_map(
        |((mut m, mut v), port)| {
            if let Some(p) = port {
                m[0] = PORT;
                v[0] = p;
            }
            (m, v)
        },
    )
}

#[test]
fn known_variant_matches_linear_scan() {
    let keys = Cell::new(0usize);
    let dropped = Cell::new(0usize);
    let strategy = (
        prop::collection::vec(port_rule_strategy(), 1..=48),
        0u64..5,
        // Extra known bits besides the port, sometimes.
        prop::option::of((0usize..6, mask_word(), any::<u64>())),
        prop::collection::vec(
            (
                prop::option::weighted(0.7, any::<prop::sample::Index>()),
                prop::array::uniform24(any::<u64>()),
            ),
            1..=24,
        ),
    );
    let mut runner = TestRunner::new(Config { cases: 256, ..Config::default() });
    runner
        .run(&strategy, |(rules, port, extra, specs)| {
            let (mut km, mut kv) = port_known(port);
            if let Some((w, mw, vw)) = extra {
                km.words[w] |= mw;
                kv.words[w] = (kv.words[w] & !mw) | (vw & mw);
            }
            let t = CompiledTable::compile_known(&rules, &km, &kv).map_err(TestCaseError::fail)?;
            let full = CompiledTable::compile(&rules).map_err(TestCaseError::fail)?;
            prop_assert!(t.live_rules() <= full.live_rules());
            dropped.set(dropped.get() + full.live_rules() - t.live_rules());
            for (pick, noise) in specs {
                let mut k = FlowKey { words: noise };
                if let Some(ix) = pick {
                    let (m, v) = &rules[ix.index(rules.len())];
                    for w in 0..KEY_WORDS {
                        k.words[w] = v[w] | (noise[w] & !m[w]);
                    }
                }
                // Force the known bits.
                for w in 0..KEY_WORDS {
                    k.words[w] = (k.words[w] & !km.words[w]) | (kv.words[w] & km.words[w]);
                }
                agrees(&t, &rules, &k)?;
                keys.set(keys.get() + 1);
            }
            Ok(())
        })
        .unwrap();
    eprintln!("{} keys; variants dropped {} rules in all", keys.get(), dropped.get());
    assert!(dropped.get() > 0);
}
