//! Compiling and dropping many tables gives the code memory back.
//!
//! Its own test binary, so no other test thread moves the address-space
//! size while it is measured. Cranelift's default JIT memory provider leaks
//! its mmap'd pages unless `free_memory` is called: at least one page per
//! table, 4 MiB over 1000 tables, well above the bound below.

use sluice_packet::key::{FlowKey, FlowMask, KEY_WORDS};
use sluice_tablejit::{linear_scan, CompiledTable, Rule};

/// `VmSize` of this process in KiB. Without `/proc/self/status` the test
/// fails: it must not pass without measuring.
fn vm_size_kib() -> u64 {
    let bytes = sluice_jit::testutil::mapped_bytes();
    bytes.expect("no VmSize in /proc/self/status: cannot measure the address space") / 1024
}

fn rules(n: u64) -> Vec<Rule> {
    (0..n)
        .map(|i| {
            let mut m = [0u64; KEY_WORDS];
            let mut v = [0u64; KEY_WORDS];
            m[(i % 6) as usize] = u64::MAX;
            v[(i % 6) as usize] = i;
            m[10] = 0xffff;
            v[10] = 0x0800;
            (m, v)
        })
        .collect()
}

#[test]
fn compile_drop_1000_tables_frees_memory() {
    let r = rules(16);
    // Words 0..6 that no rule wants, except word 3 = rule 3's value.
    let mut k = FlowKey::ZERO;
    k.words[..6].fill(100);
    k.words[3] = 3;
    k.words[10] = 0x0800;
    let round = |n: usize| {
        for _ in 0..n {
            let t = CompiledTable::compile(&r).unwrap();
            let mut wc = FlowMask::ZERO;
            let mut wc_ref = FlowMask::ZERO;
            assert_eq!(t.lookup(&k, &mut wc), Some(3));
            assert_eq!(linear_scan(&r, &k, &mut wc_ref), Some(3));
            assert_eq!(wc.words, wc_ref.words);
        }
    };
    // Warm up allocator arenas and Cranelift's lazily built state.
    round(50);
    let before = vm_size_kib();
    round(1000);
    let after = vm_size_kib();
    let grown = after.saturating_sub(before);
    eprintln!("VmSize {before} KiB -> {after} KiB over 1000 tables (+{grown} KiB)");
    assert!(grown < 2048, "address space grew by {grown} KiB over 1000 tables");
}
