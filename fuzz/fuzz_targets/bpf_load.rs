//! Arbitrary bytes as an ELF object: the loader rejects or loads, never
//! panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice_bpf::fuzz_load(data);
});
