//! `fuzz_pipeline` on random bytes and on structured seeds that reach deep
//! into the pipeline (flows with actions, groups, a real packet): it must
//! never panic. The same entry point is the cargo-fuzz target.

use proptest::prelude::*;
use sluice_pipeline::fuzz_pipeline;

/// A recipe that decodes to: one ALL group with two buckets, two flows
/// (table 0: apply push_vlan + group 1, goto 1; table 1: write output ALL),
/// then a UDP/IPv4 frame.
fn seed() -> Vec<u8> {
    let mut s = vec![
        1, // one group
        0, // type ALL
        2, // two buckets
        0,
        0,
        1,
        14,
        2, // bucket: weight 0, watch p2, 1 action: group 2 (absent)
        0,
        1,
        2,
        0,
        5,
        0,
        0, // bucket: output:2 max_len 0, push_vlan 0x8100 — two actions
        2, // two flows
        0,
        10,
        0,
        2 | 32,
        2,
        1,
        0,
        14,
        1, // t0 prio 10, no match, apply [push_vlan, group 1], goto
        1,
        5,
        0,
        8,
        1,
        0,
        5,
        0, // t1 prio 5, write [output ALL]
    ];
    s.extend_from_slice(&[
        0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0x66,
        0xce, 10, 0, 0, 1, 10, 0, 0, 2, 0x03, 0xe8, 0, 53, 0, 8, 0, 0,
    ]);
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..300)) {
        fuzz_pipeline(&data);
    }

    #[test]
    fn mutated_seeds_never_panic(
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 0..12),
        cut in any::<usize>(),
    ) {
        let mut s = seed();
        for (i, v) in edits {
            let n = s.len();
            s[i % n] = v;
        }
        let keep = s.len() - cut % 20;
        s.truncate(keep);
        fuzz_pipeline(&s);
    }
}

#[test]
fn seed_runs() {
    fuzz_pipeline(&seed());
    fuzz_pipeline(&[]);
    fuzz_pipeline(&[0xff; 4096]);
}

/// The committed seeds of cargo-fuzz target `target`, sorted.
fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds").join(target);
    let mut v: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{target} seeds: {e}"))
        .flatten()
        .map(|e| std::fs::read(e.path()).expect("seed"))
        .collect();
    v.sort();
    v
}

/// A xorshift64 generator from `state` (deterministic test inputs).
fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// `fuzz_datapath_diff` (the cargo-fuzz target `datapath_diff`) on its
/// committed seeds and on mutations of them: every datapath, cache and the
/// published path must agree with the reference (the entry panics if not).
/// About 450 mutations in all, however many seeds the fuzz campaign has
/// grown (each run compiles tables).
#[test]
fn datapath_diff_seeds_agree() {
    let seeds = seeds("datapath_diff");
    assert!(seeds.len() >= 5, "{} seeds", seeds.len());
    let (per_seed, every) = ((450 / seeds.len()).max(1), seeds.len().div_ceil(450));
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    for (i, s) in seeds.iter().enumerate() {
        sluice_pipeline::fuzz_datapath_diff(s);
        let n = if i % every == 0 { per_seed } else { 0 };
        for _ in 0..n {
            let mut m = s.clone();
            for _ in 0..3 {
                let state = next();
                if let Some(b) = m.get_mut(state as usize % s.len().max(1)) {
                    *b ^= (state >> 32) as u8;
                }
            }
            sluice_pipeline::fuzz_datapath_diff(&m);
        }
    }
}

/// Encodes a random action list the way `fuzz_ops` decodes one (a count,
/// then per action its kind and exactly the bytes that kind reads), so the
/// frame that follows starts where the decoder expects it.
fn encode_actions(next: &mut impl FnMut() -> u64) -> Vec<u8> {
    let mut out = Vec::new();
    let n = (next() % 9) as u8;
    out.push(n);
    for _ in 0..n {
        let kind = (next() % 20) as u8;
        out.push(kind);
        match kind {
            0 => {
                let p = (next() % 10) as u8;
                out.push(p);
                if p <= 3 {
                    out.push((next() % 4) as u8);
                }
                out.push(next() as u8);
            }
            1 | 4 | 9 | 10 | 13 | 14 => out.push(next() as u8),
            15..=19 => {
                let f = (next() % 40) as usize;
                out.push(f as u8);
                let len = sluice_ofp::oxm::FieldId::ALL[f].len();
                // Small values more often, so set-fields fit their width.
                let small = next() % 2 == 0;
                for i in 0..len {
                    out.push(if small && i + 1 < len { 0 } else { next() as u8 });
                }
            }
            _ => {}
        }
    }
    out
}

/// `fuzz_ops` (the cargo-fuzz target `ops`) on the committed `ops` seeds,
/// and on every committed packet seed (real frames: VLAN, MPLS, PBB, ARP,
/// IPv4/IPv6 with TCP, UDP, SCTP, ICMP, ND, fragments, truncations) under
/// 30 random action lists each: every lowered op must do what the spec's
/// reading of its action does (the entry panics if not).
#[test]
fn ops_agree_with_actions_on_real_frames() {
    let ops = seeds("ops");
    assert!(ops.len() >= 4, "{} ops seeds", ops.len());
    for s in &ops {
        sluice_pipeline::fuzz_ops(s);
    }
    let frames = seeds("packet_parse");
    assert!(frames.len() >= 50, "{} packet seeds", frames.len());
    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    for f in &frames {
        for _ in 0..30 {
            let mut input = encode_actions(&mut next);
            input.extend_from_slice(f);
            sluice_pipeline::fuzz_ops(&input);
        }
    }
}
