//! A window edit, a buffer's head- and tailroom, metadata and a frame from
//! the bytes: the edit must do to the frame and the metadata exactly what
//! a bit-by-bit model of it does (see `fuzz_window`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sluice_core::fuzz_window(data);
});
