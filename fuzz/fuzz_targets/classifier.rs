//! Random rule sets, flow-mods and lookups: the tuple-space classifier
//! agrees with a linear scan and its un-wildcarding mask is sound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice_classifier::fuzz_classifier(data);
});
