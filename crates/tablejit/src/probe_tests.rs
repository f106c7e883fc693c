//! [`ProbeTable`] against [`linear_scan`]: literal tables, large tables,
//! and proptests for the index and for the validity of the wildcard mask.

use super::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::cell::Cell;

use crate::tests::{key, rule};

/// The wildcard bits a probe lookup must add for answer `hit`,
/// recomputed from the rules: the OR of the distinct masks (of satisfiable
/// rules) whose first rule is at or before the answer (all on a miss).
fn expected_wc(rules: &[Rule], hit: Option<usize>) -> FlowMask {
    let limit = hit.unwrap_or(usize::MAX);
    let mut wc = FlowMask::ZERO;
    let mut seen: Vec<&[u64; KEY_WORDS]> = Vec::new();
    for (i, (m, v)) in rules.iter().enumerate() {
        if i > limit {
            break;
        }
        let sat = m.iter().zip(v).all(|(m, v)| v & !m == 0);
        if sat && !seen.contains(&m) {
            seen.push(m);
            for (w, m) in wc.words.iter_mut().zip(m) {
                *w |= m;
            }
        }
    }
    wc
}

/// JIT lookup, interpreted lookup and the scan agree on the index, both
/// lookups add exactly [`expected_wc`] (ORed onto a non-empty start), and
/// `probed_for` agrees. Returns the answer and the added mask.
fn check(t: &ProbeTable, rules: &[Rule], k: &FlowKey) -> (Option<usize>, FlowMask) {
    let mut start = FlowMask::ZERO;
    start.words[KEY_WORDS - 1] = 0x8000;
    let (mut wc, mut wc_i, mut wc_s) = (start, start, FlowMask::ZERO);
    let got = t.lookup(k, &mut wc);
    let got_i = t.lookup_interp(k, &mut wc_i);
    let want = linear_scan(rules, k, &mut wc_s);
    assert_eq!(got, want, "jit vs scan, key {k:?}");
    assert_eq!(got_i, want, "interp vs scan");
    let mut exp = expected_wc(rules, want);
    exp.words[KEY_WORDS - 1] |= 0x8000;
    assert_eq!(wc.words, exp.words, "jit wc");
    assert_eq!(wc_i.words, exp.words, "interp wc");
    (got, expected_wc(rules, want))
}

#[test]
fn tables_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<ProbeTable>();
    send_sync::<CompiledTable>();
}

#[test]
fn empty_table_misses_and_adds_nothing() {
    let t = ProbeTable::build::<Rule>(&[]).unwrap();
    assert!(t.is_empty());
    assert_eq!((t.len(), t.subtables(), t.stored_rules()), (0, 0, 0));
    let mut wc = FlowMask::ZERO;
    wc.words[3] = 0xf;
    assert_eq!(t.lookup(&key(&[(0, 1)]), &mut wc), None);
    assert_eq!(wc.words[3], 0xf);
    assert!(wc.words.iter().enumerate().all(|(i, &w)| i == 3 || w == 0));
}

#[test]
fn literal_table_with_overlaps_duplicates_and_dead_rules() {
    let ip = 0xffff_ffff_0000_0000u64;
    let p24 = 0xffff_ff00_0000_0000u64;
    let rules = [
        rule(&[(4, ip, 0x0a00_0001 << 32)]),  // 0: /32 10.0.0.1
        rule(&[(3, 0xff, 0x1ff)]),            // 1: unsatisfiable
        rule(&[(4, p24, 0x0a00_0000 << 32)]), // 2: /24 10.0.0.0
        rule(&[(4, ip, 0x0a00_0002 << 32)]),  // 3: /32 10.0.0.2
        rule(&[(4, ip, 0x0a00_0001 << 32)]),  // 4: duplicate of 0
        rule(&[(4, p24, 0x0a00_0100 << 32), (6, 0xffff, 80)]), // 5
        rule(&[]),                            // 6: catch-all
        rule(&[(4, ip, 0x0a00_0103 << 32)]),  // 7: after the catch-all
    ];
    let t = ProbeTable::build(&rules).unwrap();
    assert_eq!(t.len(), 8);
    // Masks: /32, /24, /24+port, zero.
    assert_eq!(t.subtables(), 4);
    // Rule 1 is dropped and rule 4 loses to rule 0.
    assert_eq!(t.stored_rules(), 6);
    let a = |x: u64| x << 32;
    let (hit, wc) = check(&t, &rules, &key(&[(4, a(0x0a00_0001))]));
    assert_eq!(hit, Some(0));
    // Only the /32 subtable was probed: the answer is below every other
    // subtable's first rule.
    assert_eq!(wc.words[4], ip);
    assert_eq!(wc.words.iter().filter(|&&w| w != 0).count(), 1);
    assert_eq!(t.probed_for(hit), 1);
    assert_eq!(check(&t, &rules, &key(&[(4, a(0x0a00_0002))])).0, Some(2));
    assert_eq!(check(&t, &rules, &key(&[(4, a(0x0a00_0105)), (6, 80)])).0, Some(5));
    // 10.0.1.3 is rule 7's /32 but the catch-all comes first.
    let (hit, wc) = check(&t, &rules, &key(&[(4, a(0x0a00_0103))]));
    assert_eq!(hit, Some(6));
    assert_eq!((wc.words[4], wc.words[6]), (ip, 0xffff));
    assert_eq!(t.probed_for(hit), 4);
    // Without the catch-all: a miss probes every subtable.
    let t = ProbeTable::build(&rules[..6]).unwrap();
    let (hit, wc) = check(&t, &rules[..6], &key(&[(4, a(0x0b00_0000))]));
    assert_eq!(hit, None);
    assert_eq!((wc.words[4], wc.words[6]), (ip, 0xffff));
}

#[test]
fn too_many_masks_is_an_error() {
    // Distinct single-bit masks on word 0..2: 65 of them.
    let rules: Vec<Rule> =
        (0..65).map(|i| rule(&[(i / 64, 1u64 << (i % 64), 1u64 << (i % 64))])).collect();
    assert!(ProbeTable::build(&rules).is_err());
    let t = ProbeTable::build(&rules[..64]).unwrap();
    assert_eq!(t.subtables(), MAX_PROBE_MASKS);
    // Unsatisfiable rules do not count as masks.
    let mut more = rules[..64].to_vec();
    more.push(rule(&[(5, 1, 3)]));
    assert!(ProbeTable::build(&more).is_ok());
    for k in [key(&[(0, 1 << 63)]), key(&[(1, 1)]), key(&[(2, 5)])] {
        check(&t, &rules[..64], &k);
    }
}

#[test]
fn hundred_thousand_host_routes_and_a_default() {
    // /32 destination addresses in the high half of word 4, an exact
    // ethertype in word 2, and a default rule at the end.
    let n = 100_000u64;
    let ip = 0xffff_ffff_0000_0000u64;
    let addr = |i: u64| (0x0a00_0000u64 + i * 7) << 32;
    let mut rules: Vec<Rule> =
        (0..n).map(|i| rule(&[(2, 0xffff, 0x0800), (4, ip, addr(i))])).collect();
    rules.push(rule(&[]));
    let t = ProbeTable::build(&rules).unwrap();
    assert_eq!((t.subtables(), t.stored_rules()), (2, n as usize + 1));
    eprintln!("100k /32: longest probe {} slots", t.max_probe_len());
    assert!(t.max_probe_len() <= 64, "longest probe {}", t.max_probe_len());
    for i in 0..n {
        // Noise in the bits no rule looks at.
        let k = key(&[(2, 0x0800), (4, addr(i) | (i & 0xffff)), (9, i)]);
        let mut wc = FlowMask::ZERO;
        assert_eq!(t.lookup(&k, &mut wc), Some(i as usize));
        assert_eq!((wc.words[2], wc.words[4]), (0xffff, ip));
        if i % 1000 == 0 {
            assert_eq!(t.lookup_interp(&k, &mut wc), Some(i as usize));
        }
    }
    // Misses of the /32s fall to the default and un-wildcard both masks.
    for k in [key(&[(2, 0x0800), (4, addr(n))]), key(&[(2, 0x86dd), (4, addr(5))])] {
        let (hit, wc) = check(&t, &rules, &k);
        assert_eq!(hit, Some(n as usize));
        assert_eq!((wc.words[2], wc.words[4]), (0xffff, ip));
    }
    assert_eq!(t.probed_for(Some(n as usize)), 2);
}

/// A deterministic generator for the large tests.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn lpm_longest_prefix_first() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let plens = [32u32, 28, 24, 20, 16, 12, 8];
    let pm = |p: u32| (u64::MAX << (64 - p)) & 0xffff_ffff_0000_0000;
    let mut rules: Vec<Rule> = Vec::new();
    for &p in &plens {
        for _ in 0..(300 * p as usize / 8) {
            rules.push(rule(&[(
                4,
                pm(p),
                rng.next() & pm(p) & 0xffff_ff00_0000_0000 | 0x0a << 56,
            )]));
        }
    }
    let t = ProbeTable::build(&rules).unwrap();
    assert_eq!(t.subtables(), plens.len());
    let mut by_len = [0usize; 8];
    for _ in 0..3000 {
        // Keys copied from a random rule's prefix with random host bits, so
        // many hit a prefix longer than the one copied from.
        let (m, v) = &rules[(rng.next() % rules.len() as u64) as usize];
        let k = key(&[(4, v[4] | (rng.next() & !m[4]))]);
        let (hit, _) = check(&t, &rules, &k);
        if let Some(i) = hit {
            let p = rules[i].0[4].count_ones();
            by_len[(p / 4 - 1) as usize] += 1;
        }
    }
    eprintln!("LPM hits by prefix length /4../32: {by_len:?}");
    assert!(by_len.iter().filter(|&&c| c > 0).count() >= 4);
}

/// Masks: full, prefix, single bit, low field; rarely zero.
fn mask_word() -> impl Strategy<Value = u64> {
    prop_oneof![
        10 => Just(u64::MAX),
        10 => (1u32..64).prop_map(|n| u64::MAX << (64 - n)),
        5 => (0u32..64).prop_map(|b| 1u64 << b),
        10 => prop_oneof![Just(0xffffu64), Just(0xffff_0000), Just(0xff)],
        1 => Just(0u64),
    ]
}

/// A mask touching 1..=3 of the first eight words (or, rarely, none).
fn mask_strategy() -> impl Strategy<Value = [u64; KEY_WORDS]> {
    let len = prop_oneof![1 => Just(0usize), 20 => 1usize..=3];
    len.prop_flat_map(|n| prop::collection::vec((0usize..8, mask_word()), n)).prop_map(|ws| {
        let mut m = [0u64; KEY_WORDS];
        for (w, mw) in ws {
            m[w] = mw;
        }
        m
    })
}

type KeySpec = (Option<prop::sample::Index>, [u64; KEY_WORDS]);

/// Rules drawn from 1..=10 masks; values from a small pool (so duplicate
/// values at different indices are common) or random; one rule in about
/// 30 has value bits outside its mask.
fn table_strategy() -> impl Strategy<Value = (Vec<Rule>, Vec<KeySpec>)> {
    let rules = prop::collection::vec(mask_strategy(), 1..=10).prop_flat_map(|masks| {
        let one = (
            any::<prop::sample::Index>(),
            prop::array::uniform24(prop_oneof![0u64..4, any::<u64>()]),
            prop::option::weighted(0.03, (0usize..KEY_WORDS, any::<u64>())),
        )
            .prop_map(move |(ix, vals, bad)| {
                let m = masks[ix.index(masks.len())];
                let mut v = [0u64; KEY_WORDS];
                for w in 0..KEY_WORDS {
                    v[w] = vals[w] & m[w];
                }
                if let Some((w, x)) = bad {
                    v[w] |= x & !m[w];
                }
                (m, v)
            });
        prop::collection::vec(one, 1..=120)
    });
    let noise = prop::array::uniform24(prop_oneof![0u64..4, any::<u64>()]);
    let specs = prop::collection::vec(
        (prop::option::weighted(0.7, any::<prop::sample::Index>()), noise),
        1..=24,
    );
    (rules, specs)
}

fn make_key(rules: &[Rule], pick: Option<prop::sample::Index>, noise: [u64; KEY_WORDS]) -> FlowKey {
    let mut k = FlowKey { words: noise };
    if let Some(ix) = pick {
        let (m, v) = &rules[ix.index(rules.len())];
        for w in 0..KEY_WORDS {
            k.words[w] = (v[w] & m[w]) | (noise[w] & !m[w]);
        }
    }
    k
}

#[test]
fn matches_linear_scan() {
    let (keys, hits, late, hashed) = (Cell::new(0), Cell::new(0), Cell::new(0), Cell::new(0));
    let mut runner = TestRunner::new(Config { cases: 512, ..Config::default() });
    runner
        .run(&table_strategy(), |(rules, specs)| {
            let t = ProbeTable::build(&rules).map_err(TestCaseError::fail)?;
            if t.stored_rules() > 4 * t.subtables() {
                hashed.set(hashed.get() + 1);
            }
            for (pick, noise) in specs {
                let k = make_key(&rules, pick, noise);
                let (hit, _) = check(&t, &rules, &k);
                keys.set(keys.get() + 1);
                if let Some(i) = hit {
                    hits.set(hits.get() + 1);
                    if t.probed_for(hit) > 1 && i > 0 {
                        late.set(late.get() + 1);
                    }
                }
            }
            Ok(())
        })
        .unwrap();
    let (n, h, l) = (keys.get(), hits.get(), late.get());
    eprintln!(
        "{h} hits of {n} keys, {l} after probing several subtables; {} hashed tables",
        hashed.get()
    );
    assert!(h * 2 >= n && (n - h) * 50 >= n, "{h} hits of {n}");
    assert!(l * 10 >= n, "only {l} of {n} hits needed several subtables");
    assert!(hashed.get() * 4 >= 512, "too few tables with hashed subtables");
}

#[test]
fn wildcard_mask_is_valid() {
    // Any key that agrees with `k` on the bits the lookup added gets the
    // same answer (from the table and from the scan).
    let strategy =
        (table_strategy(), prop::collection::vec(prop::array::uniform24(any::<u64>()), 4));
    let changed = Cell::new(0usize);
    let mut runner = TestRunner::new(Config { cases: 512, ..Config::default() });
    runner
        .run(&strategy, |((rules, specs), perturb)| {
            let t = ProbeTable::build(&rules).map_err(TestCaseError::fail)?;
            for (pick, noise) in specs {
                let k = make_key(&rules, pick, noise);
                let mut wc = FlowMask::ZERO;
                let hit = t.lookup(&k, &mut wc);
                for p in &perturb {
                    let mut k2 = k;
                    for ((x, m), r) in k2.words.iter_mut().zip(&wc.words).zip(p) {
                        *x = (*x & m) | (r & !m);
                    }
                    if k2 != k {
                        changed.set(changed.get() + 1);
                    }
                    let mut wc2 = FlowMask::ZERO;
                    prop_assert_eq!(t.lookup(&k2, &mut wc2), hit);
                    let mut wc3 = FlowMask::ZERO;
                    prop_assert_eq!(linear_scan(&rules, &k2, &mut wc3), hit);
                }
            }
            Ok(())
        })
        .unwrap();
    assert!(changed.get() > 1000);
}
