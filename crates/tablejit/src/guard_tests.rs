//! Guarded lookups of [`CompiledTable`] (resumable code) and
//! [`ProbeTable`] against [`linear_scan_guarded`]: the same answer, the
//! same sequence of guard calls, and the wildcard bits (exactly the
//! scan's for the straight-line code; valid under replayed guard answers
//! for the probes).

use super::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::cell::Cell;

use crate::tests::{key, rule};

/// A guard: which candidates it rejects.
#[derive(Clone, Copy, Debug)]
enum Guard {
    Yes,
    /// Rejects the indices whose bit (index mod 64) is set.
    Subset(u64),
    /// Rejects the first `n` calls.
    FirstN(usize),
    /// Rejects when `(calls * 5 + index) % 3 == 0`.
    Mixed,
}

fn guards(bits: u64, n: usize) -> [Guard; 4] {
    [Guard::Yes, Guard::Subset(bits), Guard::FirstN(n), Guard::Mixed]
}

/// Runs `lookup` with `guard`, recording every call and its answer.
fn run_guard<R>(
    guard: Guard,
    lookup: impl FnOnce(&mut dyn FnMut(usize) -> bool) -> R,
) -> (R, Vec<(usize, bool)>) {
    let mut calls: Vec<(usize, bool)> = Vec::new();
    let got = lookup(&mut |i| {
        let n = calls.len();
        let yes = match guard {
            Guard::Yes => true,
            Guard::Subset(bits) => bits >> (i % 64) & 1 == 0,
            Guard::FirstN(k) => n >= k,
            Guard::Mixed => (n * 5 + i) % 3 != 0,
        };
        calls.push((i, yes));
        yes
    });
    (got, calls)
}

/// Runs `lookup` answering with `answers` in order (`true` past their
/// end), recording the calls.
fn replay<R>(
    answers: &[(usize, bool)],
    lookup: impl FnOnce(&mut dyn FnMut(usize) -> bool) -> R,
) -> (R, Vec<(usize, bool)>) {
    let mut calls: Vec<(usize, bool)> = Vec::new();
    let got = lookup(&mut |i| {
        let yes = answers.get(calls.len()).is_none_or(|a| a.1);
        calls.push((i, yes));
        yes
    });
    (got, calls)
}

/// A mask over words 0..4 from a few shapes, often zero so that masks
/// nest and rules overlap.
fn mask_strategy() -> impl Strategy<Value = [u64; 4]> {
    prop::array::uniform4(prop_oneof![
        6 => Just(0u64),
        2 => Just(u64::MAX),
        2 => Just(0xff),
        1 => (0u32..64).prop_map(|b| 1u64 << b),
    ])
}

/// Rules over a pool of at most `masks` masks (a probe table takes at
/// most 64), values from a tiny pool, catch-alls and unsatisfiable rules
/// now and then.
fn rules_strategy(masks: usize, max_rules: usize) -> impl Strategy<Value = Vec<Rule>> {
    let val = prop_oneof![4 => Just(0u64), 2 => Just(1u64), 1 => any::<u64>()];
    let bad = prop::option::weighted(0.03, (0usize..4, any::<u64>()));
    let one = (any::<prop::sample::Index>(), prop::array::uniform4(val), bad);
    (prop::collection::vec(mask_strategy(), 1..=masks), prop::collection::vec(one, 1..=max_rules))
        .prop_map(|(pool, raw)| {
            raw.into_iter()
                .map(|(ix, vals, bad)| {
                    let mask = pool[ix.index(pool.len())];
                    let mut m = [0u64; KEY_WORDS];
                    let mut v = [0u64; KEY_WORDS];
                    for w in 0..4 {
                        m[w] = mask[w];
                        v[w] = vals[w] & mask[w];
                    }
                    if let Some((w, x)) = bad {
                        v[w] |= x & !m[w];
                    }
                    (m, v)
                })
                .collect()
        })
}

/// Keys: a rule's value with noise in its free bits (zero noise often,
/// so that more rules match), or noise alone.
fn key_strategy() -> impl Strategy<Value = (Option<prop::sample::Index>, [u64; KEY_WORDS])> {
    let noise = prop_oneof![3 => Just(0u64), 1 => Just(1u64), 1 => any::<u64>()];
    (prop::option::weighted(0.8, any::<prop::sample::Index>()), prop::array::uniform24(noise))
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

type Case = (Vec<Rule>, Vec<(Option<prop::sample::Index>, [u64; KEY_WORDS])>, u64, usize);

fn case_strategy(masks: usize, max_rules: usize) -> impl Strategy<Value = Case> {
    (
        rules_strategy(masks, max_rules),
        prop::collection::vec(key_strategy(), 1..=12),
        any::<u64>(),
        0usize..6,
    )
}

/// Counts lookups, those offering several candidates, and those whose
/// answer came after a rejection; checks the cases were not trivial.
struct Stats(Cell<(usize, usize, usize)>);

impl Stats {
    fn add(&self, calls: &[(usize, bool)], hit: Option<usize>) {
        let (n, m, l) = self.0.get();
        let late = hit.is_some() && calls.len() > 1;
        self.0.set((n + 1, m + usize::from(calls.len() > 1), l + usize::from(late)));
    }
    fn check(&self, what: &str) {
        let (n, m, l) = self.0.get();
        eprintln!("{what}: {n} guarded lookups, {m} offered 2+ rules, {l} hit after a rejection");
        assert!(m * 5 >= n, "{what}: too few lookups with several candidates");
        assert!(l * 10 >= n, "{what}: too few hits after a rejection");
    }
}

#[test]
fn compiled_guarded_matches_guarded_scan() {
    let stats = Stats(Cell::new((0, 0, 0)));
    let mut runner = TestRunner::new(Config { cases: 256, ..Config::default() });
    runner
        .run(&(case_strategy(40, 40), 0u64..3), |((rules, specs, bits, n), port)| {
            let opts = CompileOptions { known: None, resumable: true };
            let t = CompiledTable::compile_with(&rules, &opts).map_err(TestCaseError::fail)?;
            prop_assert!(t.is_resumable());
            // A known-bits variant (word 0 fixed), resumable too.
            let mut km = FlowMask::ZERO;
            km.words[0] = 0xff;
            let kv = key(&[(0, port)]);
            let opts = CompileOptions { known: Some((km, kv)), resumable: true };
            let tk = CompiledTable::compile_with(&rules, &opts).map_err(TestCaseError::fail)?;
            let plain = CompiledTable::compile(&rules).map_err(TestCaseError::fail)?;
            for (pick, noise) in specs {
                let k = make_key(&rules, pick, noise);
                let mut kk = k;
                kk.words[0] = (kk.words[0] & !0xff) | port;
                for (t, k) in [(&t, k), (&tk, kk)] {
                    // Plain lookups on a resumable table are the scan's.
                    let (mut wc, mut wc_s) = (FlowMask::ZERO, FlowMask::ZERO);
                    prop_assert_eq!(t.lookup(&k, &mut wc), linear_scan(&rules, &k, &mut wc_s));
                    prop_assert_eq!(wc, wc_s);
                    for guard in guards(bits, n) {
                        let mut wc_s = FlowMask::ZERO;
                        let (want, want_calls) =
                            run_guard(guard, |acc| linear_scan_guarded(&rules, &k, &mut wc_s, acc));
                        let mut wc = FlowMask::ZERO;
                        wc.words[KEY_WORDS - 1] = 0x8000;
                        wc_s.words[KEY_WORDS - 1] |= 0x8000;
                        let (got, calls) =
                            run_guard(guard, |acc| t.lookup_guarded(&k, &mut wc, acc));
                        prop_assert_eq!(&calls, &want_calls, "{:?}", guard);
                        prop_assert_eq!(got, Ok(want));
                        prop_assert_eq!(wc, wc_s, "wc, {:?}", guard);
                        stats.add(&calls, want);
                        // Resuming by hand after each rejected candidate
                        // meets the next one.
                        for w in calls.windows(2) {
                            let mut wc = FlowMask::ZERO;
                            prop_assert_eq!(
                                t.lookup_from(&k, w[0].0 + 1, &mut wc),
                                Ok(Some(w[1].0))
                            );
                        }
                    }
                }
                // The plain table refuses, without calling the guard.
                let mut wc = FlowMask::ZERO;
                let (r, calls) =
                    run_guard(Guard::Yes, |acc| plain.lookup_guarded(&k, &mut wc, acc));
                prop_assert_eq!((r, calls.len()), (Err(NotResumable), 0));
                prop_assert!(wc.is_zero());
            }
            Ok(())
        })
        .unwrap();
    stats.check("compiled");
}

#[test]
fn resume_starts_at_or_after_start() {
    // 0: word 1 == 1; 1: catch-all; 2: unsatisfiable; 3: word 1 == 1;
    // 4: word 2 == 7.
    let rules = [
        rule(&[(1, u64::MAX, 1)]),
        rule(&[]),
        rule(&[(3, 0xf, 0x10)]),
        rule(&[(1, u64::MAX, 1)]),
        rule(&[(2, 0xff, 7)]),
    ];
    let opts = CompileOptions { known: None, resumable: true };
    let t = CompiledTable::compile_with(&rules, &opts).unwrap();
    assert_eq!(t.live_rules(), 4);
    let k = key(&[(1, 1), (2, 7), (3, 0x10)]);
    let from = |s: usize| {
        let mut wc = FlowMask::ZERO;
        (t.lookup_from(&k, s, &mut wc).unwrap(), wc)
    };
    assert_eq!(from(0).0, Some(0));
    assert_eq!(from(1).0, Some(1));
    // Past the catch-all: the rules after it are live.
    assert_eq!(from(2).0, Some(3));
    assert_eq!(from(4).0, Some(4));
    let (hit, wc) = from(5);
    assert_eq!(hit, None);
    // A miss reports every rule's mask, as the scan does.
    assert_eq!((wc.words[1], wc.words[2], wc.words[3]), (u64::MAX, 0xff, 0xf));
    assert_eq!(from(usize::MAX).0, None);
    assert_eq!(from(1 << 40).0, None);
    // A guard accepting only rule 4 sees the matching rules 0, 1, 3, 4.
    let mut seen = Vec::new();
    let mut wc = FlowMask::ZERO;
    let hit = t.lookup_guarded(&k, &mut wc, |i| {
        seen.push(i);
        i == 4
    });
    assert_eq!(hit, Ok(Some(4)));
    assert_eq!(seen, [0, 1, 3, 4]);
    // An empty resumable table misses from anywhere.
    let e = CompiledTable::compile_with(&[], &opts).unwrap();
    let mut wc = FlowMask::ZERO;
    assert_eq!(e.lookup_from(&k, 0, &mut wc), Ok(None));
    assert_eq!(e.lookup_guarded(&k, &mut wc, |_| true), Ok(None));
    assert!(wc.is_zero());
}

#[test]
fn probe_guarded_matches_guarded_scan() {
    let stats = Stats(Cell::new((0, 0, 0)));
    let perturbed = Cell::new(0usize);
    let strategy =
        (case_strategy(12, 120), prop::collection::vec(prop::array::uniform24(any::<u64>()), 2));
    let mut runner = TestRunner::new(Config { cases: 256, ..Config::default() });
    runner
        .run(&strategy, |((rules, specs, bits, n), perturb)| {
            let t = ProbeTable::build(&rules).map_err(TestCaseError::fail)?;
            for (pick, noise) in specs {
                let k = make_key(&rules, pick, noise);
                for guard in guards(bits, n) {
                    let mut wc_s = FlowMask::ZERO;
                    let (want, want_calls) =
                        run_guard(guard, |acc| linear_scan_guarded(&rules, &k, &mut wc_s, acc));
                    let mut wc = FlowMask::ZERO;
                    let (got, calls) = run_guard(guard, |acc| t.lookup_guarded(&k, &mut wc, acc));
                    prop_assert_eq!(&calls, &want_calls, "{:?}", guard);
                    prop_assert_eq!(got, want);
                    stats.add(&calls, want);
                    // The probed subtables for the final answer, as for
                    // an unguarded lookup with that answer.
                    let mut exp = FlowMask::ZERO;
                    let mut seen: Vec<&[u64; KEY_WORDS]> = Vec::new();
                    for (i, (m, v)) in rules.iter().enumerate() {
                        if want.is_some_and(|a| i > a) {
                            break;
                        }
                        if jit::satisfiable(m, v) && !seen.contains(&m) {
                            seen.push(m);
                            for (w, m) in exp.words.iter_mut().zip(m) {
                                *w |= m;
                            }
                        }
                    }
                    prop_assert_eq!(wc, exp, "wc, {:?}", guard);
                    if let Guard::Yes = guard {
                        let mut wc_p = FlowMask::ZERO;
                        prop_assert_eq!(t.lookup(&k, &mut wc_p), got);
                        prop_assert_eq!(wc_p, wc);
                    }
                    // Keys agreeing on wc, given the same answers, see the
                    // same calls and the same result.
                    for p in &perturb {
                        let mut k2 = k;
                        for ((x, m), r) in k2.words.iter_mut().zip(&wc.words).zip(p) {
                            *x = (*x & m) | (r & !m);
                        }
                        perturbed.set(perturbed.get() + usize::from(k2 != k));
                        let mut wc2 = FlowMask::ZERO;
                        let (g2, c2) = replay(&calls, |acc| t.lookup_guarded(&k2, &mut wc2, acc));
                        prop_assert_eq!(&c2, &calls);
                        prop_assert_eq!(g2, got);
                        let mut wc3 = FlowMask::ZERO;
                        let (g3, c3) =
                            replay(&calls, |acc| linear_scan_guarded(&rules, &k2, &mut wc3, acc));
                        prop_assert_eq!(&c3, &calls);
                        prop_assert_eq!(g3, got);
                    }
                }
            }
            Ok(())
        })
        .unwrap();
    stats.check("probe");
    assert!(perturbed.get() > 1000);
}

#[test]
fn probe_guarded_offers_duplicate_values_in_order() {
    // Rules 0, 2 and 5 share a mask and a value; 3 shares the value under
    // another mask; 1 and 4 never match the key.
    let rules = [
        rule(&[(1, 0xff, 1)]),
        rule(&[(1, 0xff, 2)]),
        rule(&[(1, 0xff, 1)]),
        rule(&[(1, 0x0f, 1)]),
        rule(&[(2, 0xff, 9)]),
        rule(&[(1, 0xff, 1)]),
    ];
    let t = ProbeTable::build(&rules).unwrap();
    assert_eq!(t.stored_rules(), 4);
    let k = key(&[(1, 1)]);
    for reject in 0..=4 {
        let mut wc = FlowMask::ZERO;
        let (got, calls) =
            run_guard(Guard::FirstN(reject), |acc| t.lookup_guarded(&k, &mut wc, acc));
        let order = [0, 2, 3, 5];
        assert_eq!(got, order.get(reject).copied());
        let want: Vec<usize> = order.iter().copied().take(reject + 1).collect();
        assert_eq!(calls.iter().map(|c| c.0).collect::<Vec<_>>(), want);
    }
}
