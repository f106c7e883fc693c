//! Building and dropping many probe tables gives the code memory back.
//!
//! Its own test binary (see `drop.rs`): no other test thread moves the
//! address-space size while it is measured. Each table's hash arrays are
//! ordinary heap memory; the code is in mmap'd pages freed by
//! `sluice_jit::Code`'s `Drop`, at least one page per table if leaked
//! (4 MiB over 1000).

use sluice_packet::key::{FlowKey, FlowMask, KEY_WORDS};
use sluice_tablejit::{linear_scan, ProbeTable, Rule};

/// `VmSize` of this process in KiB. Without `/proc/self/status` the test
/// fails: it must not pass without measuring.
fn vm_size_kib() -> u64 {
    let bytes = sluice_jit::testutil::mapped_bytes();
    bytes.expect("no VmSize in /proc/self/status: cannot measure the address space") / 1024
}

/// 200 rules over three masks, so both hashed and straight subtables occur.
fn rules() -> Vec<Rule> {
    (0..200u64)
        .map(|i| {
            let mut m = [0u64; KEY_WORDS];
            let mut v = [0u64; KEY_WORDS];
            let w = if i < 3 { 1 } else { (i % 2) as usize * 2 };
            m[w] = u64::MAX;
            v[w] = i;
            (m, v)
        })
        .collect()
}

#[test]
fn build_drop_1000_probe_tables_frees_memory() {
    let r = rules();
    let mut k = FlowKey::ZERO;
    k.words[0] = 150;
    k.words[1] = 100;
    let round = |n: usize| {
        for _ in 0..n {
            let t = ProbeTable::build(&r).unwrap();
            let (mut wc, mut wc_ref) = (FlowMask::ZERO, FlowMask::ZERO);
            let want = linear_scan(&r, &k, &mut wc_ref);
            assert_eq!(want, Some(150));
            assert_eq!(t.lookup(&k, &mut wc), want);
        }
    };
    round(50);
    let before = vm_size_kib();
    round(1000);
    let after = vm_size_kib();
    let grown = after.saturating_sub(before);
    eprintln!("VmSize {before} KiB -> {after} KiB over 1000 probe tables (+{grown} KiB)");
    assert!(grown < 2048, "address space grew by {grown} KiB over 1000 tables");
}
