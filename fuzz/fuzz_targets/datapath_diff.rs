//! Bytes read as a small pipeline plus a sequence of packets, flow-mods,
//! clock steps and packet-outs, run through the reference datapath and
//! every fast-path configuration (classifier, megaflow cache, exact +
//! megaflow cache): any difference in transmitted frames, results,
//! asynchronous messages or statistics panics (see
//! `sluice_pipeline::fuzz_datapath_diff`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice_pipeline::fuzz_datapath_diff(data);
});
