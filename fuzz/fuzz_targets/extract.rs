//! Windows and a frame from the bytes: after the fixed parser, the extract
//! program must capture every window exactly as a bit-by-bit reading of
//! the frame does, and touch no other key bit (see `fuzz_extract`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice_core::fuzz_extract(data);
});
