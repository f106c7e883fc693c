//! Software prefetch: ask the CPU to start loading a cache line that a
//! later stage of a burst will read (see `Pipeline::process_burst_with`).
//!
//! A prefetch is a hint: it never faults, whatever the address (dangling,
//! null, unmapped), and changes no program state, only timing. On targets
//! without a prefetch instruction this is a no-op.
#![allow(unsafe_code)]

/// Start loading the cache line holding `p` into all cache levels.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` never faults and reads or writes no program
    // state; SSE (which provides it) is part of the x86-64 baseline, so the
    // target feature is always present.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
