//! Helper functions and the runtime environment programs run in.
//!
//! What? [`Env`] holds what outlives one program run: the maps, the clock
//! and the debug output. Helpers are numbered as in Linux
//! (`enum bpf_func_id`) where Linux has them:
//!
//! | id | helper | arguments (checked by the verifier) |
//! |---|---|---|
//! | 1 | `bpf_map_lookup_elem(map, key)` | map pointer, pointer to `key_size` initialised bytes; returns map value or NULL |
//! | 2 | `bpf_map_update_elem(map, key, value, flags)` | map, key, pointer to `value_size` initialised bytes, scalar |
//! | 3 | `bpf_map_delete_elem(map, key)` | map, key |
//! | 5 | `bpf_ktime_get_ns()` | none |
//! | 6 | `bpf_trace_printk(fmt, fmt_size, a, b, c)` | pointer to `fmt_size` initialised bytes, constant size, scalars |
//! | [`SLUICE_HASH`] | `sluice_hash(ptr, len, seed)` | pointer to `len` initialised bytes, constant size, scalar; returns a 32-bit hash |
//!
//! `sluice_hash` has no Linux counterpart (Linux has no general hash helper
//! for XDP); its id is outside Linux's range so a kernel rejects such
//! programs instead of calling some other helper.
//!
//! Both the interpreter and the JIT resolve pointer arguments to byte slices
//! and then call the same methods here, so helper semantics cannot diverge.

use crate::maps::{Map, ValueRef};

/// Helper id of `sluice_hash` (not a Linux helper).
pub const SLUICE_HASH: i32 = 0x5100;
pub const MAP_LOOKUP: i32 = 1;
pub const MAP_UPDATE: i32 = 2;
pub const MAP_DELETE: i32 = 3;
pub const KTIME_GET_NS: i32 = 5;
pub const TRACE_PRINTK: i32 = 6;

/// Maximum number of debug lines kept (older ones are dropped).
pub const MAX_TRACE_LINES: usize = 1024;

/// Where `bpf_ktime_get_ns` takes its time from.
#[derive(Clone, Copy, Debug)]
pub enum Clock {
    /// `CLOCK_MONOTONIC` via `std::time::Instant`, relative to the given base.
    Monotonic(std::time::Instant),
    /// A fixed value (tests and differential runs need determinism).
    Fixed(u64),
}

/// The runtime state shared by successive runs of one program.
#[derive(Debug)]
pub struct Env {
    pub maps: Vec<Map>,
    pub clock: Clock,
    /// Debug lines written by `bpf_trace_printk`.
    pub trace: Vec<String>,
    /// Which slab per-worker arrays use.
    pub worker: usize,
}

impl Env {
    pub fn new(maps: Vec<Map>) -> Env {
        Env {
            maps,
            clock: Clock::Monotonic(std::time::Instant::now()),
            trace: Vec::new(),
            worker: 0,
        }
    }

    pub fn lookup(&mut self, map: usize, key: &[u8]) -> Option<ValueRef> {
        let w = self.worker;
        self.maps.get_mut(map)?.lookup(key, w)
    }
    pub fn update(&mut self, map: usize, key: &[u8], value: &[u8], flags: u64) -> u64 {
        let w = self.worker;
        match self.maps.get_mut(map) {
            Some(m) => m.update(key, value, flags, w) as u64,
            None => crate::maps::EINVAL.wrapping_neg() as u64,
        }
    }
    pub fn delete(&mut self, map: usize, key: &[u8]) -> u64 {
        match self.maps.get_mut(map) {
            Some(m) => m.delete(key) as u64,
            None => crate::maps::EINVAL.wrapping_neg() as u64,
        }
    }
    pub fn ktime_ns(&self) -> u64 {
        match self.clock {
            Clock::Monotonic(base) => base.elapsed().as_nanos() as u64,
            Clock::Fixed(t) => t,
        }
    }

    /// `bpf_trace_printk`: formats `%d %i %u %x %ld %lu %lx %lld %llu %llx %%`
    /// with up to three arguments; returns the number of bytes written.
    pub fn trace_printk(&mut self, fmt: &[u8], args: [u64; 3]) -> u64 {
        let line = format_printk(fmt, args);
        let n = line.len() as u64;
        if self.trace.len() >= MAX_TRACE_LINES {
            self.trace.remove(0);
        }
        self.trace.push(line);
        n
    }
}

/// `sluice_hash`: FNV-1a over the bytes, seeded, folded to 32 bits.
pub fn sluice_hash(data: &[u8], seed: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for &b in data {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h ^ (h >> 32)) & 0xffff_ffff
}

fn format_printk(fmt: &[u8], args: [u64; 3]) -> String {
    let end = fmt.iter().position(|&b| b == 0).unwrap_or(fmt.len());
    let fmt = &fmt[..end];
    let mut out = String::new();
    let mut next = 0usize;
    let mut i = 0usize;
    while i < fmt.len() {
        let c = fmt[i];
        i += 1;
        if c != b'%' {
            out.push(c as char);
            continue;
        }
        let mut longs = 0;
        while i < fmt.len() && fmt[i] == b'l' {
            longs += 1;
            i += 1;
        }
        let Some(&conv) = fmt.get(i) else { break };
        i += 1;
        if conv == b'%' {
            out.push('%');
            continue;
        }
        let v = args.get(next).copied().unwrap_or(0);
        next += 1;
        let v32 = longs == 0;
        match conv {
            b'd' | b'i' if v32 => out.push_str(&(v as u32 as i32).to_string()),
            b'd' | b'i' => out.push_str(&(v as i64).to_string()),
            b'u' if v32 => out.push_str(&(v as u32).to_string()),
            b'u' => out.push_str(&v.to_string()),
            b'x' if v32 => out.push_str(&format!("{:x}", v as u32)),
            b'x' => out.push_str(&format!("{v:x}")),
            other => {
                out.push('%');
                out.push(other as char);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printk_formats() {
        assert_eq!(
            format_printk(b"a=%d b=%llx c=%u%%\0junk", [(-5i64) as u64, 255, 7]),
            "a=-5 b=ff c=7%"
        );
        assert_eq!(format_printk(b"%", [0; 3]), "");
    }

    #[test]
    fn hash_depends_on_seed_and_data() {
        assert_ne!(sluice_hash(b"abc", 0), sluice_hash(b"abd", 0));
        assert_ne!(sluice_hash(b"abc", 0), sluice_hash(b"abc", 1));
        assert!(sluice_hash(b"abc", 0) <= 0xffff_ffff);
    }
}
