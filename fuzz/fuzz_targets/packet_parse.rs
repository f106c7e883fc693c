//! Any bytes as an Ethernet frame: parsing never panics, is read-only, and
//! every field the parser reports is consistent (see `fuzz_parse`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice_packet::fuzz_parse(data);
});
