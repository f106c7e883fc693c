//! Guarded lookups against a linear model: the same answer *and* the same
//! sequence of guard calls, on the writer and on snapshots, with guards
//! that reject a fixed subset of rules and guards with state (reject the
//! first N calls); plus the un-wildcarding invariant under replayed guard
//! answers.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use sluice_classifier::{Classifier, Hit, RuleId, RuleSpec, StagePlan};
use sluice_packet::key::{FlowKey, FlowMask, KEY_WORDS};
use std::cell::Cell;

/// Words the random masks touch: one in each stage of `StagePlan::OXM`
/// (metadata 0, L2 1 and 7, L3 3, L4 4) and one POF word (as in
/// `differential.rs`).
const LANES: [usize; 6] = [0, 1, 3, 4, 7, 22];

/// The reference: scan the rules in (priority desc, seq asc) order, offer
/// every matching one to `accept`, return the first accepted.
fn model(
    rules: &[(RuleId, RuleSpec)],
    key: &FlowKey,
    mut accept: impl FnMut(Hit) -> bool,
) -> Option<Hit> {
    let mut sorted: Vec<&(RuleId, RuleSpec)> = rules.iter().collect();
    sorted.sort_by_key(|(_, s)| (std::cmp::Reverse(s.priority), s.seq));
    sorted
        .into_iter()
        .filter(|(_, s)| key.matches(&s.mask, &s.value))
        .map(|(id, s)| Hit { id: *id, priority: s.priority, seq: s.seq })
        .find(|h| accept(*h))
}

/// A guard: which rules it rejects, by a fixed subset or by call count.
#[derive(Clone, Copy, Debug)]
enum Guard {
    /// Accepts everything.
    Yes,
    /// Rejects the rules whose id bit is set.
    Subset(u32),
    /// Rejects the first `n` calls, accepts from then on.
    FirstN(usize),
    /// Rejects when `(calls * 7 + id) % 3 == 0`: depends on both.
    Mixed,
}

/// Runs `lookup` with `guard`, recording the offered rules and answers.
fn run_guard(
    guard: Guard,
    lookup: impl FnOnce(&mut dyn FnMut(Hit) -> bool) -> Option<Hit>,
) -> (Option<Hit>, Vec<(RuleId, bool)>) {
    let mut calls: Vec<(RuleId, bool)> = Vec::new();
    let got = lookup(&mut |h: Hit| {
        let n = calls.len();
        let yes = match guard {
            Guard::Yes => true,
            Guard::Subset(bits) => bits >> (h.id.0 % 32) & 1 == 0,
            Guard::FirstN(k) => n >= k,
            Guard::Mixed => (n as u64 * 7 + h.id.0) % 3 != 0,
        };
        calls.push((h.id, yes));
        yes
    });
    (got, calls)
}

/// Runs `lookup` answering with `answers` in order (`true` once they run
/// out, which the caller then sees as extra calls); records the calls.
fn replay(
    answers: &[(RuleId, bool)],
    lookup: impl FnOnce(&mut dyn FnMut(Hit) -> bool) -> Option<Hit>,
) -> (Option<Hit>, Vec<(RuleId, bool)>) {
    let mut calls: Vec<(RuleId, bool)> = Vec::new();
    let got = lookup(&mut |h: Hit| {
        let yes = answers.get(calls.len()).is_none_or(|a| a.1);
        calls.push((h.id, yes));
        yes
    });
    (got, calls)
}

/// A mask word: mostly structured (whole fields, prefixes), sometimes
/// arbitrary bits; often zero, so that masks nest and rules overlap.
fn mask_word() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => Just(0u64),
        2 => Just(u64::MAX),
        2 => Just(0xffff),
        2 => (0u32..=32).prop_map(|p| if p == 0 { 0 } else { u64::from(u32::MAX << (32 - p)) }),
        1 => any::<u64>(),
    ]
}

/// Value words from a small palette, mostly zero, so that a key matches
/// several rules (the interesting case for guards).
fn value_word() -> impl Strategy<Value = u64> {
    prop_oneof![
        10 => Just(0u64),
        2 => Just(u64::MAX),
        1 => Just(0x0800),
        1 => any::<u64>(),
    ]
}

fn on_lanes(l: [u64; LANES.len()]) -> [u64; KEY_WORDS] {
    let mut w = [0u64; KEY_WORDS];
    for (i, &lane) in LANES.iter().enumerate() {
        w[lane] = l[i];
    }
    w
}

/// A rule before placement: mask index, value lanes, priority, and a
/// random number that decides its seq (so seq order is not insertion
/// order).
type RawRule = (usize, [u64; LANES.len()], u16, u32);

/// A key: a rule to copy (or zero), bits to flip, noise for the wc check.
type RawKey = (usize, [u64; LANES.len()], [u64; LANES.len()]);

/// Masks, rules, keys, and rules to remove after inserting (indices).
type World = (Vec<[u64; KEY_WORDS]>, Vec<RawRule>, Vec<RawKey>, Vec<usize>);

fn world() -> impl Strategy<Value = World> {
    let masks = prop::collection::vec(prop::array::uniform6(mask_word()), 1..6)
        .prop_map(|v| v.into_iter().map(on_lanes).collect::<Vec<_>>());
    let rule = (0usize..8, prop::array::uniform6(value_word()), 0u16..3, any::<u32>());
    let flip = prop_oneof![10 => Just(0u64), 1 => any::<u64>()];
    let key = (any::<usize>(), prop::array::uniform6(flip), prop::array::uniform6(any::<u64>()));
    (
        masks,
        prop::collection::vec(rule, 1..28),
        prop::collection::vec(key, 1..10),
        // Rules to remove after inserting (indices into the rules).
        prop::collection::vec(any::<usize>(), 0..4),
    )
}

/// Builds the classifier and the model's rule list.
fn build(
    plan: StagePlan,
    masks: &[[u64; KEY_WORDS]],
    raw: &[RawRule],
    removes: &[usize],
) -> (Classifier, Vec<(RuleId, RuleSpec)>) {
    let mut cls = Classifier::with_plan(plan);
    let mut rules: Vec<(RuleId, RuleSpec)> = Vec::new();
    for (i, &(m, ref value, priority, salt)) in raw.iter().enumerate() {
        let mask = FlowMask { words: masks[m % masks.len()] };
        let mut v = FlowKey::ZERO;
        for (w, val) in v.words.iter_mut().zip(on_lanes(*value)) {
            *w = val;
        }
        for (w, m) in v.words.iter_mut().zip(mask.words) {
            *w &= m;
        }
        // Unique seqs in an order unrelated to insertion.
        let seq = (u64::from(salt) << 8) | i as u64;
        let spec = RuleSpec { mask, value: v, priority, seq };
        let id = RuleId(i as u64);
        cls.insert(id, spec).expect("unique ids and seqs");
        rules.push((id, spec));
    }
    for &r in removes {
        if rules.is_empty() {
            break;
        }
        let (id, _) = rules.remove(r % rules.len());
        assert!(cls.remove(id).is_some());
    }
    (cls, rules)
}

const GUARDS: fn(u32, usize) -> [Guard; 4] =
    |bits, n| [Guard::Yes, Guard::Subset(bits), Guard::FirstN(n), Guard::Mixed];

/// A guarded lookup under test.
type Guarded<'a> = &'a dyn Fn(&FlowKey, &mut FlowMask, &mut dyn FnMut(Hit) -> bool) -> Option<Hit>;
/// The plain lookup of the same classifier or snapshot.
type Plain<'a> = &'a dyn Fn(&FlowKey, &mut FlowMask) -> Option<Hit>;

/// One key through one lookup function (`what`, guarded and plain):
/// calls and result equal the model's, and `wc` survives replaying the
/// answers on other keys.
fn check_key(
    (what, lookup, plain): (&str, Guarded<'_>, Plain<'_>),
    rules: &[(RuleId, RuleSpec)],
    (key, noise): (&FlowKey, &FlowKey),
    guard: Guard,
    stats: &Cell<(usize, usize, usize)>,
) -> Result<(), TestCaseError> {
    let (want, want_calls) = run_guard(guard, |acc| model(rules, key, acc));
    let mut wc = FlowMask::ZERO;
    let (got, calls) = run_guard(guard, |acc| lookup(key, &mut wc, acc));
    prop_assert_eq!(&calls, &want_calls, "{}: guard calls, {:?}", what, guard);
    prop_assert_eq!(got, want, "{}: result, {:?}", what, guard);
    let (l, m, a) = stats.get();
    let late = got.is_some() && calls.len() > 1;
    stats.set((l + 1, m + usize::from(calls.len() > 1), a + usize::from(late)));
    if let Guard::Yes = guard {
        let mut wc_plain = FlowMask::ZERO;
        prop_assert_eq!(plain(key, &mut wc_plain), got, "{}: plain lookup", what);
        prop_assert_eq!(wc_plain, wc, "{}: plain lookup's wc", what);
    }
    // Every offered rule was matched: its mask is in wc.
    for (id, _) in &calls {
        if let Some((_, s)) = rules.iter().find(|r| r.0 == *id) {
            for i in 0..KEY_WORDS {
                prop_assert_eq!(s.mask.words[i] & !wc.words[i], 0, "{}: offered rule's mask", what);
            }
        }
    }
    // Un-wildcarding under replayed answers: keys agreeing on wc (random
    // elsewhere, or steered towards each rule's value) see the same calls
    // and the same result, from the classifier and from the model.
    let mut others = vec![*noise];
    others.extend(rules.iter().map(|(_, s)| s.value));
    for free in others {
        let mut other = FlowKey::ZERO;
        for i in 0..KEY_WORDS {
            other.words[i] = (key.words[i] & wc.words[i]) | (free.words[i] & !wc.words[i]);
        }
        let mut wc2 = FlowMask::ZERO;
        let (g2, c2) = replay(&calls, |acc| lookup(&other, &mut wc2, acc));
        prop_assert_eq!(&c2, &calls, "{}: calls under wc {:?}", what, wc);
        prop_assert_eq!(g2, got, "{}: result under wc", what);
        let (m2, mc2) = replay(&calls, |acc| model(rules, &other, acc));
        prop_assert_eq!(&mc2, &calls, "{}: model calls under wc", what);
        prop_assert_eq!(m2, got, "{}: model result under wc", what);
    }
    Ok(())
}

fn run(
    plan: StagePlan,
    (masks, raw, keys, removes): &World,
    (bits, n): (u32, usize),
    stats: &Cell<(usize, usize, usize)>,
) -> Result<(), TestCaseError> {
    let (mut cls, rules) = build(plan, masks, raw, removes);
    let snap = cls.snapshot();
    for &(pick, ref flip, ref noise) in keys {
        let mut key = match rules.get(pick % rules.len().max(1)) {
            Some(r) if pick % 8 != 0 => r.1.value,
            _ => FlowKey::ZERO,
        };
        for (w, f) in key.words.iter_mut().zip(on_lanes(*flip)) {
            *w ^= f;
        }
        let noise = FlowKey { words: on_lanes(*noise) };
        for guard in GUARDS(bits, n) {
            check_key(
                ("writer", &|k, wc, acc| cls.lookup_guarded(k, wc, acc), &|k, wc| {
                    cls.lookup(k, wc)
                }),
                &rules,
                (&key, &noise),
                guard,
                stats,
            )?;
            check_key(
                ("snapshot", &|k, wc, acc| snap.lookup_guarded(k, wc, acc), &|k, wc| {
                    snap.lookup(k, wc)
                }),
                &rules,
                (&key, &noise),
                guard,
                stats,
            )?;
        }
    }
    Ok(())
}

/// Runs the model comparison on random worlds with `plan`, and checks
/// that the cases were not trivial: many lookups offered several rules,
/// and many got their answer after a rejection.
fn prop_run(plan: StagePlan) {
    let stats = Cell::new((0usize, 0usize, 0usize));
    let mut runner = TestRunner::new(Config { cases: 512, ..Config::default() });
    runner
        .run(&(world(), any::<u32>(), 0usize..6), |(w, bits, n)| run(plan, &w, (bits, n), &stats))
        .unwrap();
    let (lookups, multi, late) = stats.get();
    eprintln!("{lookups} guarded lookups, {multi} offered 2+ rules, {late} hit after a rejection");
    assert!(multi * 5 >= lookups, "too few lookups with several candidates");
    assert!(late * 10 >= lookups, "too few hits after a rejection");
}

#[test]
fn guarded_same_as_model_staged() {
    prop_run(StagePlan::OXM);
}

#[test]
fn guarded_same_as_model_unstaged() {
    prop_run(StagePlan::SINGLE);
}

/// More matching subtables than the inline candidate buffer holds, each
/// with a better rule that does not match: every candidate stays pending
/// until the end, and they still come out in rank order.
#[test]
fn many_pending_candidates_keep_their_order() {
    let mut cls = Classifier::new();
    let mut rules = Vec::new();
    let mut seq = 0;
    for bit in 0..40u64 {
        let mut mask = FlowMask::ZERO;
        mask.words[3] = 1 << bit;
        // Never matches the all-ones key below, outranks every candidate.
        seq += 1;
        let blocker = RuleSpec { mask, value: FlowKey::ZERO, priority: 100, seq };
        // Matches; priorities interleave across subtables, seqs break ties.
        let mut value = FlowKey::ZERO;
        value.words[3] = 1 << bit;
        seq += 1;
        let cand = RuleSpec { mask, value, priority: (bit % 5) as u16, seq: 1000 - seq };
        for spec in [blocker, cand] {
            let id = RuleId(rules.len() as u64);
            cls.insert(id, spec).unwrap();
            rules.push((id, spec));
        }
    }
    let mut key = FlowKey::ZERO;
    key.words[3] = u64::MAX;
    let snap = cls.snapshot();
    for n in [0, 1, 17, 39, 40, 41] {
        let (want, want_calls) = run_guard(Guard::FirstN(n), |acc| model(&rules, &key, acc));
        let mut wc = FlowMask::ZERO;
        let (got, calls) =
            run_guard(Guard::FirstN(n), |acc| snap.lookup_guarded(&key, &mut wc, acc));
        assert_eq!(calls, want_calls);
        assert_eq!(got, want);
        assert_eq!(calls.len(), (n + 1).min(40));
        let (got, calls) =
            run_guard(Guard::FirstN(n), |acc| cls.lookup_guarded(&key, &mut wc, acc));
        assert_eq!((got, calls), (want, want_calls));
    }
}
