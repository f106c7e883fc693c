//! The extract stage against a bit-by-bit model: for random frames,
//! random bases (made up, and found by the fixed parser in random and in
//! well-formed frames) and random window sets, every window's value and
//! presence bit is what reading the frame one bit at a time gives, and no
//! key bit outside the windows' value and presence bits changes.

use proptest::prelude::*;
use sluice_core::extract::Extract;
use sluice_core::layout::{Base, KeyLayout, LayoutError, Window, WindowId};
use sluice_packet::parse::{Meta, ParseInfo};
use sluice_packet::{FlowKey, KEY_WORDS};

/// The window's bits read one at a time (bit 0 = most significant bit of
/// the byte at the base), or `None` if the base is absent or the window
/// runs past the frame.
fn model(frame: &[u8], info: &ParseInfo, w: &Window) -> Option<u64> {
    let base = match w.base {
        Base::Frame => Some(0usize),
        Base::L2End => info.ethertype_offset.map(|o| usize::from(o) + 2),
        Base::L2_5 => info.l2_5.map(usize::from),
        Base::L3 => info.l3.map(usize::from),
        Base::L4 => info.l4.map(usize::from),
        Base::Payload => info.payload.map(usize::from),
    }?;
    let bits: Vec<u8> = frame.iter().flat_map(|b| (0..8).rev().map(move |i| b >> i & 1)).collect();
    let first = base * 8 + w.bit_offset as usize;
    let window = bits.get(first..first + usize::from(w.bit_len))?;
    Some(window.iter().fold(0u64, |v, &b| (v << 1) | u64::from(b)))
}

fn window() -> impl Strategy<Value = Window> {
    (0..Base::ALL.len(), prop_oneof![3 => 0u32..1100, 1 => any::<u32>()], 1u8..=64)
        .prop_map(|(b, off, len)| Window::new(Base::ALL[b], off, len))
}

/// Declare `ws` (skipping those that do not fit) and return the layout
/// and the declared ones.
fn declare(ws: &[Window]) -> (KeyLayout, Vec<(WindowId, Window)>) {
    let mut l = KeyLayout::new();
    let mut ids = Vec::new();
    for &w in ws {
        match l.declare(w) {
            Ok(id) => ids.push((id, w)),
            Err(LayoutError::NoValueSpace { .. }) => {}
            Err(e) => panic!("{w:?}: {e}"),
        }
        l.validate().unwrap();
    }
    (l, ids)
}

/// Run extract on `before` and check it against the model.
fn check(frame: &[u8], info: &ParseInfo, ws: &[Window], before: FlowKey) -> FlowKey {
    let (layout, ids) = declare(ws);
    let ex = Extract::compile(&layout);
    assert_eq!(ex.len(), layout.windows().len());
    let mut key = before;
    ex.run(frame, info, &mut key);
    let owned = layout.window_bits();
    for i in 0..KEY_WORDS {
        assert_eq!(
            (key.words[i] ^ before.words[i]) & !owned.words[i],
            0,
            "word {i} changed outside the windows"
        );
    }
    for &(id, w) in &ids {
        let want = model(frame, info, &w);
        assert_eq!(layout.present(&key, id), want.is_some(), "{w:?} {info:?}");
        assert_eq!(layout.get(&key, id), Some(want.unwrap_or(0)), "{w:?} {info:?}");
    }
    key
}

fn opt_base() -> impl Strategy<Value = Option<u16>> {
    prop_oneof![1 => Just(None), 3 => (0u16..140).prop_map(Some), 1 => any::<u16>().prop_map(Some)]
}

/// A frame the fixed parser understands down to L4 (or L2.5, or ARP),
/// then cut at a random length.
fn wellformed() -> impl Strategy<Value = Vec<u8>> {
    (0u8..5, any::<bool>(), prop::collection::vec(any::<u8>(), 100..128), 0usize..=128).prop_map(
        |(kind, vlan, mut f, cut)| {
            let mut et = 12;
            if vlan {
                f[12..14].copy_from_slice(&[0x81, 0x00]);
                et = 16;
            }
            let l3 = et + 2;
            match kind {
                0 | 1 => {
                    // IPv4 + TCP (0) or UDP (1)
                    f[et..l3].copy_from_slice(&[0x08, 0x00]);
                    let l4_len = if kind == 0 { 20 } else { 8 };
                    f[l3] = 0x45;
                    f[l3 + 2..l3 + 4].copy_from_slice(&(20u16 + l4_len + 30).to_be_bytes());
                    f[l3 + 6..l3 + 8].copy_from_slice(&[0, 0]);
                    f[l3 + 9] = if kind == 0 { 6 } else { 17 };
                    if kind == 0 {
                        f[l3 + 20 + 12] = 0x50;
                    } else {
                        f[l3 + 24..l3 + 26].copy_from_slice(&(8u16 + 30).to_be_bytes());
                    }
                }
                2 => {
                    // IPv6 + UDP
                    f[et..l3].copy_from_slice(&[0x86, 0xdd]);
                    f[l3] = 0x60;
                    f[l3 + 4..l3 + 6].copy_from_slice(&40u16.to_be_bytes());
                    f[l3 + 6] = 17;
                    f[l3 + 44..l3 + 46].copy_from_slice(&40u16.to_be_bytes());
                }
                3 => f[et..l3].copy_from_slice(&[0x88, 0x47]), // MPLS
                _ => {
                    // ARP, Ethernet/IPv4
                    f[et..l3].copy_from_slice(&[0x08, 0x06]);
                    f[l3..l3 + 6].copy_from_slice(&[0, 1, 8, 0, 6, 4]);
                }
            }
            f.truncate(cut);
            f
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// Made-up bases (a stale or foreign `ParseInfo` must be safe too) and
    /// an arbitrary key before the run.
    #[test]
    fn made_up_bases(
        frame in prop::collection::vec(any::<u8>(), 0..128),
        eth in opt_base(), l2_5 in opt_base(), l3 in opt_base(), l4 in opt_base(),
        payload in opt_base(),
        ws in prop::collection::vec(window(), 0..12),
        words in prop::array::uniform24(any::<u64>()),
    ) {
        let info = ParseInfo { ethertype_offset: eth, l2_5, l3, l4, payload, ..ParseInfo::default() };
        check(&frame, &info, &ws, FlowKey { words });
    }

    /// Random bytes through the fixed parser, then extract: the parser's
    /// key stays intact outside the windows.
    #[test]
    fn parsed_random_frames(
        frame in prop::collection::vec(any::<u8>(), 0..128),
        ws in prop::collection::vec(window(), 0..12),
    ) {
        let mut key = FlowKey::ZERO;
        let info = sluice_packet::parse(&frame, &Meta::default(), &mut key);
        check(&frame, &info, &ws, key);
    }

    /// Well-formed (then truncated) frames, so the L2.5, L3, L4 and payload
    /// bases are often present.
    #[test]
    fn parsed_wellformed_frames(
        frame in wellformed(),
        ws in prop::collection::vec(window(), 0..12),
    ) {
        let mut key = FlowKey::ZERO;
        let info = sluice_packet::parse(&frame, &Meta::default(), &mut key);
        let after = check(&frame, &info, &ws, key);
        // and running again changes nothing
        let (layout, _) = declare(&ws);
        let mut again = after;
        Extract::compile(&layout).run(&frame, &info, &mut again);
        prop_assert_eq!(again, after);
    }
}

/// The well-formed generator does reach every base (so the property above
/// is not vacuous for them).
#[test]
fn wellformed_frames_reach_every_base() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strat = wellformed();
    let (mut l2_5, mut l3, mut l4, mut payload) = (0, 0, 0, 0);
    for _ in 0..400 {
        let f = strat.new_tree(&mut runner).unwrap().current();
        let mut key = FlowKey::ZERO;
        let info = sluice_packet::parse(&f, &Meta::default(), &mut key);
        l2_5 += usize::from(info.l2_5.is_some());
        l3 += usize::from(info.l3.is_some());
        l4 += usize::from(info.l4.is_some());
        payload += usize::from(info.payload.is_some());
    }
    assert!(l2_5 > 10 && l3 > 50 && l4 > 30 && payload > 30, "{l2_5} {l3} {l4} {payload}");
}

/// `fuzz_extract` (the cargo-fuzz target `extract`) on its committed seeds
/// and on mutations of them.
#[test]
fn fuzz_seeds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/extract");
    let mut seeds: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .expect("extract seeds")
        .flatten()
        .map(|e| std::fs::read(e.path()).expect("seed"))
        .collect();
    seeds.sort();
    assert!(seeds.len() >= 4, "{} seeds", seeds.len());
    // About 1 200 mutations in all, however many seeds the fuzz campaign
    // has grown.
    let (per_seed, every) = ((1200 / seeds.len()).max(1), seeds.len().div_ceil(1200));
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for (i, s) in seeds.iter().enumerate() {
        sluice_core::fuzz_extract(s);
        let n = if i % every == 0 { per_seed } else { 0 };
        for _ in 0..n {
            let mut m = s.clone();
            for _ in 0..3 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if let Some(b) = m.get_mut(state as usize % s.len().max(1)) {
                    *b ^= (state >> 32) as u8;
                }
            }
            m.truncate(state as usize % (s.len() + 1));
            sluice_core::fuzz_extract(&m);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    /// The fuzz entry on arbitrary bytes.
    #[test]
    fn fuzz_entry_random(data in prop::collection::vec(any::<u8>(), 0..200)) {
        sluice_core::fuzz_extract(&data);
    }
}
