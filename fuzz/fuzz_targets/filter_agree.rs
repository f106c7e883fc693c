//! An expression, a NUL byte, then a packet: whatever compiles gives the
//! same verdict from the native code and the interpreter.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice_filter::fuzz_compile_agree(data);
});
