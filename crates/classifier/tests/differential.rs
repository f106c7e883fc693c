//! Differential tests: the tuple-space classifier against (a) a linear
//! model written here and (b) the reference `FlowTable` through its public
//! API, on random interleavings of inserts, removes, replaces, snapshots
//! and lookups; plus the un-wildcarding invariant on every lookup.

use proptest::prelude::*;
use sluice_classifier::{Classifier, ClsError, Hit, RuleId, RuleSpec, Snapshot, StagePlan};
use sluice_ofp::oxm::Match;
use sluice_packet::key::{FlowKey, FlowMask, KEY_WORDS};
use sluice_pipeline::rule::Rule;
use sluice_pipeline::table::{FlowEntry, FlowTable};
use std::sync::Arc;

/// Words the random masks touch: one in each stage of `StagePlan::OXM`
/// (metadata 0, L2 1 and 7, L3 3, L4 4) and one POF word.
const LANES: [usize; 6] = [0, 1, 3, 4, 7, 22];

/// Trivial model: best = highest priority, then lowest seq.
#[derive(Clone, Default, Debug)]
struct Model(Vec<(RuleId, RuleSpec)>);

impl Model {
    fn lookup(&self, key: &FlowKey) -> Option<Hit> {
        self.0
            .iter()
            .filter(|(_, s)| key.matches(&s.mask, &s.value))
            .max_by_key(|(_, s)| (s.priority, std::cmp::Reverse(s.seq)))
            .map(|(id, s)| Hit { id: *id, priority: s.priority, seq: s.seq })
    }
}

fn entry(id: RuleId, s: &RuleSpec) -> FlowEntry {
    FlowEntry {
        rule: Rule { mask: s.mask, value: s.value },
        r#match: Match::default(),
        priority: s.priority,
        cookie: id.0,
        idle_timeout: 0,
        hard_timeout: 0,
        flags: 0,
        instructions: Vec::new().into(),
        ops: Default::default(),
        installed_ns: 0,
        stats: FlowEntry::new_stats(2),
        seq: s.seq,
        guards: Default::default(),
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert { id: u8, mask: usize, value: [u64; LANES.len()], priority: u16 },
    Remove { id: u8 },
    Replace { id: u8, mask: usize, value: [u64; LANES.len()], priority: u16 },
    Snapshot,
    Lookup { rule: usize, flip: [u64; LANES.len()], noise: [u64; LANES.len()] },
}

/// A mask word: mostly structured (whole fields, prefixes), sometimes
/// arbitrary bits.
fn mask_word() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => Just(0u64),
        2 => Just(u64::MAX),
        2 => Just(0xffff),
        2 => (0u32..=32).prop_map(|p| if p == 0 { 0 } else { u64::from(u32::MAX << (32 - p)) }),
        1 => Just(0xffff_ffff_ffff_0000),
        1 => any::<u64>(),
    ]
}

/// Value words from a small palette so that rules overlap and share
/// stage prefixes.
fn value_word() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => Just(0u64),
        2 => Just(0x0800),
        2 => Just(0x0a01_0203),
        2 => Just(u64::MAX),
        1 => any::<u64>(),
    ]
}

fn lanes<S: Strategy<Value = u64>>(s: S) -> impl Strategy<Value = [u64; LANES.len()]> {
    prop::array::uniform6(s)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..24, 0usize..8, lanes(value_word()), 0u16..4)
            .prop_map(|(id, mask, value, priority)| Op::Insert { id, mask, value, priority }),
        1 => (0u8..24).prop_map(|id| Op::Remove { id }),
        1 => (0u8..24, 0usize..8, lanes(value_word()), 0u16..4)
            .prop_map(|(id, mask, value, priority)| Op::Replace { id, mask, value, priority }),
        1 => Just(Op::Snapshot),
        6 => (any::<usize>(), lanes(prop_oneof![3 => Just(0u64), 1 => any::<u64>()]), lanes(any::<u64>()))
            .prop_map(|(rule, flip, noise)| Op::Lookup { rule, flip, noise }),
    ]
}

fn masks() -> impl Strategy<Value = Vec<FlowMask>> {
    prop::collection::vec(lanes(mask_word()), 1..5).prop_map(|v| {
        v.into_iter()
            .map(|l| {
                let mut m = FlowMask::ZERO;
                for (i, &w) in LANES.iter().enumerate() {
                    m.words[w] = l[i];
                }
                m
            })
            .collect()
    })
}

fn spec(masks: &[FlowMask], mask: usize, value: &[u64; 6], priority: u16, seq: u64) -> RuleSpec {
    let mask = masks[mask % masks.len()];
    let mut v = FlowKey::ZERO;
    for (i, &w) in LANES.iter().enumerate() {
        v.words[w] = value[i] & mask.words[w];
    }
    RuleSpec { mask, value: v, priority, seq }
}

struct World {
    cls: Classifier,
    model: Model,
    table: FlowTable,
    snaps: Vec<(Arc<Snapshot>, Model)>,
    seq: u64,
}

fn check_lookup(
    what: &str,
    model: &Model,
    key: &FlowKey,
    noise: &FlowKey,
    lookup: impl Fn(&FlowKey, &mut FlowMask) -> Option<Hit>,
) -> Result<(), TestCaseError> {
    let mut wc = FlowMask::ZERO;
    let got = lookup(key, &mut wc);
    prop_assert_eq!(got, model.lookup(key), "{}: lookup {:?}", what, key);
    if let Some(h) = got {
        // wc covers the hit rule's mask
        let s = model.0.iter().find(|r| r.0 == h.id).map(|r| r.1.mask).unwrap_or_default();
        for i in 0..KEY_WORDS {
            prop_assert_eq!(s.words[i] & !wc.words[i], 0, "{}: wc misses rule mask", what);
        }
    }
    // Un-wildcarding: a key agreeing with `key` on wc only gets the same
    // answer, from the classifier and from the model.
    let mut other = FlowKey::ZERO;
    for i in 0..KEY_WORDS {
        other.words[i] = (key.words[i] & wc.words[i]) | (noise.words[i] & !wc.words[i]);
    }
    let mut wc2 = FlowMask::ZERO;
    prop_assert_eq!(lookup(&other, &mut wc2), got, "{}: un-wildcarding under {:?}", what, wc);
    prop_assert_eq!(model.lookup(&other), got, "{}: model disagrees under {:?}", what, wc);
    // Random noise rarely lands on a rule; steer the free bits towards
    // every rule's value in turn, the keys most likely to expose a
    // missing 1-bit.
    for (_, r) in &model.0 {
        for i in 0..KEY_WORDS {
            other.words[i] = (key.words[i] & wc.words[i]) | (r.value.words[i] & !wc.words[i]);
        }
        prop_assert_eq!(lookup(&other, &mut wc2), got, "{}: steered un-wildcarding", what);
    }
    Ok(())
}

fn run(plan: StagePlan, masks: &[FlowMask], ops: &[Op]) -> Result<(), TestCaseError> {
    let mut w = World {
        cls: Classifier::with_plan(plan),
        model: Model::default(),
        table: FlowTable::new(usize::MAX, 2),
        snaps: Vec::new(),
        seq: 0,
    };
    for op in ops {
        match *op {
            Op::Insert { id, mask, ref value, priority } => {
                w.seq += 1;
                let s = spec(masks, mask, value, priority, w.seq);
                let id = RuleId(u64::from(id));
                if w.model.0.iter().any(|r| r.0 == id) {
                    prop_assert_eq!(w.cls.insert(id, s), Err(ClsError::DuplicateId(id)));
                } else {
                    prop_assert_eq!(w.cls.insert(id, s), Ok(()));
                    w.model.0.push((id, s));
                    w.table.insert(entry(id, &s));
                }
            }
            Op::Remove { id } => {
                let id = RuleId(u64::from(id));
                let want = w.model.0.iter().position(|r| r.0 == id).map(|i| w.model.0.remove(i).1);
                prop_assert_eq!(w.cls.remove(id), want);
                let gone = w.table.remove_where(|e| e.cookie == id.0);
                prop_assert_eq!(gone.len(), usize::from(want.is_some()));
            }
            Op::Replace { id, mask, ref value, priority } => {
                w.seq += 1;
                let s = spec(masks, mask, value, priority, w.seq);
                let id = RuleId(u64::from(id));
                match w.model.0.iter_mut().find(|r| r.0 == id) {
                    Some(r) => {
                        let old = std::mem::replace(&mut r.1, s);
                        prop_assert_eq!(w.cls.replace(id, s), Ok(old));
                        w.table.remove_where(|e| e.cookie == id.0);
                        w.table.insert(entry(id, &s));
                    }
                    None => {
                        prop_assert_eq!(w.cls.replace(id, s), Err(ClsError::NoSuchRule(id)))
                    }
                }
            }
            Op::Snapshot => {
                w.snaps.push((w.cls.snapshot(), w.model.clone()));
            }
            Op::Lookup { rule, ref flip, ref noise } => {
                // Mostly keys derived from a rule value, so they hit.
                let mut key = match w.model.0.get(rule % w.model.0.len().max(1)) {
                    Some(r) if rule % 8 != 0 => r.1.value,
                    _ => FlowKey::ZERO,
                };
                let mut nz = FlowKey::ZERO;
                for (i, &lw) in LANES.iter().enumerate() {
                    key.words[lw] ^= flip[i];
                    nz.words[lw] = noise[i];
                }
                check_lookup("writer", &w.model, &key, &nz, |k, wc| w.cls.lookup(k, wc))?;
                let t = w.table.lookup(&key).map(|i| RuleId(w.table.entries()[i].cookie));
                prop_assert_eq!(t, w.model.lookup(&key).map(|h| h.id), "FlowTable");
                for (i, (s, m)) in w.snaps.iter().enumerate() {
                    check_lookup(&format!("snapshot {i}"), m, &key, &nz, |k, wc| s.lookup(k, wc))?;
                }
            }
        }
        prop_assert_eq!(w.cls.len(), w.model.0.len());
        prop_assert_eq!(w.table.len(), w.model.0.len());
        // The writer keeps each rule's value under its mask only: every
        // rule comes back whole.
        for (id, s) in &w.model.0 {
            prop_assert_eq!(w.cls.get(*id), Some(*s), "get {:?}", id);
        }
        prop_assert_eq!(w.cls.rules().count(), w.model.0.len());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn same_as_reference_staged(masks in masks(), ops in prop::collection::vec(op(), 1..160)) {
        run(StagePlan::OXM, &masks, &ops)?;
    }

    #[test]
    fn same_as_reference_unstaged(masks in masks(), ops in prop::collection::vec(op(), 1..160)) {
        run(StagePlan::SINGLE, &masks, &ops)?;
    }

    /// One stage per lane word: the most stage boundaries.
    #[test]
    fn same_as_reference_fine_stages(masks in masks(), ops in prop::collection::vec(op(), 1..160)) {
        let rest: Vec<usize> = (0..KEY_WORDS).filter(|w| !LANES.contains(w)).collect();
        let plan = StagePlan::new(&[&[22], &[4], &[3, 0], &[7], &[1], &rest]).unwrap();
        run(plan, &masks, &ops)?;
    }

    #[test]
    fn fuzz_entry_never_fails(data in prop::collection::vec(any::<u8>(), 0..2000)) {
        sluice_classifier::fuzz_classifier(&data);
    }
}
