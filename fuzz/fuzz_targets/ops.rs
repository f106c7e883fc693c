//! The op IR: each lowered OpenFlow action must do to a packet what the
//! spec's reading of the action does (see `sluice_pipeline::fuzz_ops`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice_pipeline::fuzz_ops(data);
});
