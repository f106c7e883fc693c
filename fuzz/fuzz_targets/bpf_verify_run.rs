//! Arbitrary instruction streams: the verifier rejects them, or the
//! interpreter and the JIT run them safely and agree (see
//! `sluice_bpf::fuzz_verify_run`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice_bpf::fuzz_verify_run(data);
});
