//! The runtime key layout: allocation fills and fails cleanly, declared
//! windows never share a bit with the fixed parser's slots, its presence
//! word or each other, and rules built with the layout's API match exactly
//! the packets whose window bits match.

use proptest::prelude::*;
use sluice_core::extract::Extract;
use sluice_core::layout::{
    Base, KeyBit, KeyLayout, LayoutError, MatchError, Window, WindowId, MAX_WINDOW_BITS,
};
use sluice_packet::key::{presence, POF_FIRST_WORD, PRESENCE_WORD};
use sluice_packet::parse::{Meta, ParseInfo};
use sluice_packet::{Field, FlowKey, FlowMask, FIXED_LAYOUT, KEY_WORDS};

/// Bits of the fixed layout, computed from its slots here (independently
/// of the layout module).
fn fixed_bits() -> [u64; KEY_WORDS] {
    let mut used = [0u64; KEY_WORDS];
    used[PRESENCE_WORD] |= (1u64 << presence::COUNT) - 1;
    for &f in Field::ALL {
        let s = FIXED_LAYOUT.slot(f);
        let w = usize::from(s.word);
        if s.width == 128 {
            used[w] = u64::MAX;
            used[w + 1] = u64::MAX;
        } else {
            for b in s.shift..s.shift + s.width {
                used[w] |= 1u64 << b;
            }
        }
    }
    used
}

fn model(frame: &[u8], info: &ParseInfo, w: &Window) -> Option<u64> {
    let base = match w.base {
        Base::Frame => Some(0usize),
        Base::L2End => info.ethertype_offset.map(|o| usize::from(o) + 2),
        Base::L2_5 => info.l2_5.map(usize::from),
        Base::L3 => info.l3.map(usize::from),
        Base::L4 => info.l4.map(usize::from),
        Base::Payload => info.payload.map(usize::from),
    }?;
    let first = base * 8 + w.bit_offset as usize;
    let mut v = 0u64;
    for i in first..first + usize::from(w.bit_len) {
        let byte = frame.get(i / 8)?;
        v = (v << 1) | u64::from(byte >> (7 - i % 8) & 1);
    }
    Some(v)
}

fn assert_no_overlap(l: &KeyLayout) {
    let fixed = fixed_bits();
    let mut used = fixed;
    for (i, s) in l.windows().iter().enumerate() {
        assert_eq!(s.width, s.window.bit_len);
        assert!((1..=MAX_WINDOW_BITS).contains(&s.width));
        assert!(u32::from(s.shift) + u32::from(s.width) <= 64, "window {i}");
        let (w, pw) = (usize::from(s.word), usize::from(s.presence.word));
        assert!((POF_FIRST_WORD..KEY_WORDS).contains(&w), "window {i} value in word {w}");
        assert!(pw < POF_FIRST_WORD, "window {i} presence in word {pw}");
        assert_eq!(used[w] & s.value_mask(), 0, "window {i} value overlaps");
        used[w] |= s.value_mask();
        assert_eq!(used[pw] & s.presence.mask(), 0, "window {i} presence overlaps");
        used[pw] |= s.presence.mask();
        assert_eq!(fixed[pw] & s.presence.mask(), 0);
    }
    assert_eq!(l.validate(), Ok(()));
    // window bits as a mask agree with the slots
    let owned = l.window_bits();
    for i in 0..KEY_WORDS {
        assert_eq!(owned.words[i] & fixed[i], 0, "word {i}");
        assert_eq!(owned.words[i] | fixed[i], used[i], "word {i}");
    }
}

#[test]
fn value_space_fills_and_errors_cleanly() {
    let mut l = KeyLayout::new();
    let ids: Vec<WindowId> =
        (0..3).map(|i| l.declare(Window::new(Base::Frame, i * 64, 64)).unwrap()).collect();
    assert_eq!(ids, [WindowId(0), WindowId(1), WindowId(2)]);
    let before = l.clone();
    assert_eq!(
        l.declare(Window::new(Base::Frame, 1000, 64)),
        Err(LayoutError::NoValueSpace { width: 64 })
    );
    assert_eq!(l.declare(Window::new(Base::L4, 0, 1)), Err(LayoutError::NoValueSpace { width: 1 }));
    assert_eq!(l, before, "a failed declaration changes nothing");
    // already declared: found, not allocated
    assert_eq!(l.declare(Window::new(Base::Frame, 64, 64)), Ok(WindowId(1)));
    assert_no_overlap(&l);

    // first fit strands space: 3 × 40 bits take a word each
    let mut l = KeyLayout::new();
    for i in 0..3 {
        l.declare(Window::new(Base::L3, i * 40, 40)).unwrap();
    }
    assert_eq!(
        l.declare(Window::new(Base::L3, 500, 64)),
        Err(LayoutError::NoValueSpace { width: 64 })
    );
    for i in 0..3 {
        let id = l.declare(Window::new(Base::L4, i * 24, 24)).unwrap();
        assert_eq!(l.slot(id).unwrap().shift, 40);
    }
    assert!(l.declare(Window::new(Base::L4, 0, 1)).is_err());
    assert_no_overlap(&l);
}

#[test]
fn presence_area_fills_and_errors_cleanly() {
    let mut l = KeyLayout::new();
    let cap = l.presence_capacity();
    assert_eq!(cap, 67);
    for i in 0..cap {
        assert_eq!(l.declare(Window::new(Base::Payload, i as u32, 1)), Ok(WindowId(i as u16)));
    }
    let before = l.clone();
    assert_eq!(l.declare(Window::new(Base::Payload, 999, 1)), Err(LayoutError::NoPresenceBit));
    assert_eq!(l, before);
    assert_no_overlap(&l);
    // the documented free bits, and every one of them used
    let mut expect: Vec<KeyBit> = (41..44).map(|bit| KeyBit { word: 12, bit }).collect();
    for word in [14, 15, 18, 19] {
        expect.extend((0..16).map(|bit| KeyBit { word, bit }));
    }
    let got: Vec<KeyBit> = l.windows().iter().map(|s| s.presence).collect();
    assert_eq!(got, expect);
    // and they are exactly what the fixed layout leaves free below the
    // reserved words
    let fixed = fixed_bits();
    let free: u32 = fixed[..POF_FIRST_WORD].iter().map(|w| w.count_zeros()).sum();
    assert_eq!(free as usize, cap);
}

#[test]
fn bad_widths() {
    let mut l = KeyLayout::new();
    assert_eq!(l.declare(Window::new(Base::Frame, 0, 0)), Err(LayoutError::BadWidth(0)));
    assert_eq!(l.declare(Window::new(Base::Frame, 0, 65)), Err(LayoutError::BadWidth(65)));
    assert_eq!(l, KeyLayout::new());
}

#[test]
fn rule_api_errors_and_roundtrip() {
    let mut l = KeyLayout::new();
    let a = l.declare(Window::new(Base::L3, 12, 4)).unwrap();
    let b = l.declare(Window::new(Base::Frame, 0, 64)).unwrap();
    let (mut v, mut m) = (FlowKey::ZERO, FlowMask::ZERO);
    assert_eq!(l.add_match(&mut v, &mut m, a, 0x10, None), Err(MatchError::BadValue));
    assert_eq!(l.add_match(&mut v, &mut m, a, 0x3, Some(0x1)), Err(MatchError::ValueOutsideMask));
    let bogus = WindowId(7);
    assert_eq!(l.add_match(&mut v, &mut m, bogus, 0, None), Err(MatchError::UnknownWindow(bogus)));
    assert_eq!((v, m), (FlowKey::ZERO, FlowMask::ZERO));
    // a zero mask requires nothing, not even presence
    l.add_match(&mut v, &mut m, a, 0, Some(0)).unwrap();
    assert!(m.is_zero());
    // mask bits above the width are dropped
    let mut m2 = FlowMask::ZERO;
    l.set_mask(&mut m2, a, u64::MAX).unwrap();
    let s = l.slot(a).unwrap();
    assert_eq!(m2.words[usize::from(s.word)], 0xf << s.shift);
    assert_eq!(m2.words[usize::from(s.presence.word)], s.presence.mask());
    let mut k = FlowKey::ZERO;
    l.put(&mut k, b, u64::MAX).unwrap();
    l.put(&mut k, a, 0x9).unwrap();
    assert_eq!(l.get(&k, a), Some(0x9));
    assert_eq!(l.get(&k, b), Some(u64::MAX));
    assert!(l.present(&k, a) && l.present(&k, b) && !l.present(&k, bogus));
    assert_eq!(l.get(&k, bogus), None);
    assert_eq!(l.put(&mut k, a, 0x10), Err(MatchError::BadValue));
    // a put writes nothing the fixed layout reads
    for &f in Field::ALL {
        assert_eq!(FIXED_LAYOUT.get(&k, f).to_u128(), 0, "{f:?}");
    }
    assert_eq!(k.words[PRESENCE_WORD], 0);
}

fn window() -> impl Strategy<Value = Window> {
    (0..Base::ALL.len(), 0u32..600, 1u8..=64)
        .prop_map(|(b, off, len)| Window::new(Base::ALL[b], off, len))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    /// Any declaration sequence: every window is disjoint from every fixed
    /// slot, the presence word and the other windows; values that do not
    /// fit fail with an error and change nothing.
    #[test]
    fn declarations_never_overlap(ws in prop::collection::vec(window(), 0..80)) {
        let mut l = KeyLayout::new();
        for w in ws {
            let before = l.clone();
            match l.declare(w) {
                Ok(id) => prop_assert_eq!(l.slot(id).unwrap().window, w),
                Err(LayoutError::NoValueSpace { .. } | LayoutError::NoPresenceBit) => {
                    prop_assert_eq!(&l, &before)
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert_no_overlap(&l);
        // every window all-ones: the fixed fields read back unchanged
        let frame: Vec<u8> = (0u8..100).collect();
        let mut parsed = FlowKey::ZERO;
        sluice_packet::parse(&frame, &Meta::default(), &mut parsed);
        let mut k = parsed;
        for i in 0..l.windows().len() {
            let id = WindowId(i as u16);
            l.put(&mut k, id, l.slot(id).unwrap().width_mask()).unwrap();
        }
        for &f in Field::ALL {
            prop_assert_eq!(FIXED_LAYOUT.get(&k, f), FIXED_LAYOUT.get(&parsed, f));
            prop_assert_eq!(FIXED_LAYOUT.present(&k, f), FIXED_LAYOUT.present(&parsed, f));
        }
    }

    /// A rule on some windows (random masks, values taken from one frame
    /// or random) matches a packet iff every window it looks at is present
    /// and equal under the mask, per the bit-by-bit model.
    #[test]
    fn rules_match_like_the_model(case in rule_case()) {
        run_rule_case(&case);
    }
}

/// Inputs of one rule test: windows, a frame and variants of it (one bit
/// flipped, truncated, unrelated), per-window rule parts `(use, mask,
/// value, value_from_frame)`, and an optional `eth_type` to match too.
#[derive(Clone, Debug)]
struct RuleCase {
    ws: Vec<Window>,
    frames: Vec<Vec<u8>>,
    rule: Vec<(bool, u64, u64, bool)>,
    eth_type: Option<u16>,
}

fn rule_case() -> impl Strategy<Value = RuleCase> {
    let mask = prop_oneof![
        Just(u64::MAX),
        any::<u64>(),
        (any::<u64>(), any::<u64>()).prop_map(|(a, b)| a & b)
    ];
    // mostly windows that fit a frame of this size, on bases random bytes
    // have (frame start, end of the Ethernet header)
    let near = (
        prop_oneof![3 => Just(Base::Frame), 2 => Just(Base::L2End), 1 => Just(Base::L3)],
        0u32..600,
        1u8..=64,
    )
        .prop_map(|(b, off, len)| Window::new(b, off, len));
    (
        prop::collection::vec(prop_oneof![3 => near, 1 => window()], 1..10),
        prop::collection::vec(any::<u8>(), 0..128),
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
        prop::collection::vec(any::<u8>(), 0..128),
        prop::collection::vec((any::<bool>(), mask, any::<u64>(), prop::bool::weighted(0.8)), 10),
        prop::option::weighted(0.2, prop_oneof![Just(0x0800u16), Just(0x86dd), any::<u16>()]),
    )
        .prop_map(|(ws, f0, flip, cut, other, rule, eth_type)| {
            let mut flipped = f0.clone();
            if !f0.is_empty() {
                let bit = flip.index(f0.len() * 8);
                flipped[bit / 8] ^= 0x80 >> (bit % 8);
            }
            let mut cut_short = f0.clone();
            cut_short.truncate(cut.index(f0.len() + 1));
            RuleCase { ws, frames: vec![f0, flipped, cut_short, other], rule, eth_type }
        })
}

/// Check one case; returns whether the rule matched each frame, or
/// nothing if the rule looks at no window bit.
fn run_rule_case(case: &RuleCase) -> Vec<bool> {
    let mut l = KeyLayout::new();
    let mut ids = Vec::new();
    for &w in &case.ws {
        if let Ok(id) = l.declare(w) {
            if !ids.iter().any(|&(i, _)| i == id) {
                ids.push((id, w));
            }
        }
    }
    let ex = Extract::compile(&l);
    let packets: Vec<(FlowKey, ParseInfo, &Vec<u8>)> = case
        .frames
        .iter()
        .map(|f| {
            let mut k = FlowKey::ZERO;
            let info = sluice_packet::parse(f, &Meta::default(), &mut k);
            ex.run(f, &info, &mut k);
            (k, info, f)
        })
        .collect();
    // the rule: the windows marked `use`, value from frame 0 when asked
    // and the window is present there
    let (mut value, mut mask) = (FlowKey::ZERO, FlowMask::ZERO);
    let mut conds = Vec::new();
    for (&(id, w), &(used, m, v, from_frame)) in ids.iter().zip(&case.rule) {
        if !used {
            continue;
        }
        let m = m & l.slot(id).unwrap().width_mask();
        let v = match model(packets[0].2, &packets[0].1, &w) {
            Some(x) if from_frame => x & m,
            _ => v & m,
        };
        l.add_match(&mut value, &mut mask, id, v, Some(m)).unwrap();
        conds.push((w, m, v));
    }
    if let Some(et) = case.eth_type {
        FIXED_LAYOUT
            .add_match(&mut value, &mut mask, Field::EthType, &et.to_be_bytes(), None)
            .unwrap();
    }
    let mut out = Vec::new();
    let looks = conds.iter().any(|&(_, m, _)| m != 0);
    for (k, info, f) in &packets {
        let want =
            conds.iter().all(|&(w, m, v)| m == 0 || model(f, info, &w).is_some_and(|x| x & m == v))
                && case.eth_type.is_none_or(|et| {
                    FIXED_LAYOUT.present(k, Field::EthType)
                        && FIXED_LAYOUT.get(k, Field::EthType).to_u128() == u128::from(et)
                });
        assert_eq!(k.matches(&mask, &value), want, "{conds:?} {f:?}");
        if looks {
            out.push(want);
        }
    }
    out
}

/// The rule property is not vacuous: rules that look at windows both hit
/// and miss, on the frame their values came from and on its variants.
#[test]
fn rule_cases_both_hit_and_miss() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strat = rule_case();
    let mut hits = [0usize; 4];
    let mut misses = [0usize; 4];
    for _ in 0..600 {
        let case = strat.new_tree(&mut runner).unwrap().current();
        for (i, hit) in run_rule_case(&case).into_iter().enumerate() {
            if hit {
                hits[i] += 1;
            } else {
                misses[i] += 1;
            }
        }
    }
    // the frame the values came from, its bit-flipped and truncated
    // variants: both outcomes often; the unrelated frame: mostly misses
    for i in 0..3 {
        assert!(
            hits[i] > 30 && misses[i] > 30,
            "frame {i}: {} hits, {} misses",
            hits[i],
            misses[i]
        );
    }
    assert!(hits[0] > hits[2] && misses[3] > 300, "{hits:?} {misses:?}");
}
