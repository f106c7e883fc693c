//! This process's memory counters, for tests that compile and drop code
//! many times and check that the memory comes back.
//!
//! Both read `/proc/self/status` (Linux) and return `None` when it is
//! missing or unreadable; such a test must then fail, not skip.

/// Resident set size of this process in bytes (`VmRSS`).
pub fn resident_bytes() -> Option<u64> {
    status_kib("VmRSS:").map(|k| k * 1024)
}

/// Size of this process's address space in bytes (`VmSize`).
pub fn mapped_bytes() -> Option<u64> {
    status_kib("VmSize:").map(|k| k * 1024)
}

/// The value of `field` (e.g. `"VmRSS:"`, given in kB) in
/// `/proc/self/status`.
fn status_kib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_counters() {
        let rss = super::resident_bytes().expect("no VmRSS in /proc/self/status");
        let size = super::mapped_bytes().expect("no VmSize in /proc/self/status");
        assert!(rss > 0 && size >= rss, "VmRSS {rss}, VmSize {size}");
    }
}
