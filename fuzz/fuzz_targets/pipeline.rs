//! Bytes read as a small pipeline (groups, a meter, flows in four tables)
//! and a packet: processing, tracing, packet-out and buffer release never
//! panic (see `sluice_pipeline::fuzz_pipeline`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice_pipeline::fuzz_pipeline(data);
});
