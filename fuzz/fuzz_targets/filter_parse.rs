//! Arbitrary bytes as pcap-filter source: the parser and compiler reject
//! or accept, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice_filter::fuzz_parse(data);
});
