//! ns/lookup of a [`ProbeTable`] (generated code and the plain-Rust probe)
//! against the linear scan, and build time, at 10, 1k and 100k rules.
//! Time-boxed loops; prints numbers, asserts only that the answers agree.
//!
//! `cargo run -p sluice-tablejit --release --example probe_bench`
//!
//! The table is routing-like: an exact ethertype word, and IPv4
//! destination prefixes of eight lengths (/32 for half the rules) in the
//! high half of word 4, longest first, then a default rule: 9 subtables.

use sluice_packet::key::{FlowKey, FlowMask, KEY_WORDS};
use sluice_tablejit::{linear_scan, ProbeTable, Rule};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// xorshift64*, so runs are comparable.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

const PLENS: [u32; 8] = [32, 28, 24, 22, 20, 16, 12, 8];

/// `n` rules (at least 9): prefixes of every length, half of them /32s,
/// the last one the default.
fn table(n: usize, rng: &mut Rng) -> Vec<Rule> {
    let n = n.max(PLENS.len() + 1);
    let mut rules = Vec::with_capacity(n);
    let mut prefix = |p: u32| {
        let mut m = [0u64; KEY_WORDS];
        let mut v = [0u64; KEY_WORDS];
        m[2] = 0xffff;
        v[2] = 0x0800;
        m[4] = (u64::MAX << (64 - p)) & 0xffff_ffff_0000_0000;
        v[4] = rng.next() & m[4];
        (m, v)
    };
    let others = ((n - 1) / 2 / (PLENS.len() - 1)).max(1);
    let slash32 = n - 1 - others * (PLENS.len() - 1);
    for (j, &p) in PLENS.iter().enumerate() {
        for _ in 0..(if j == 0 { slash32 } else { others }) {
            rules.push(prefix(p));
        }
    }
    rules.push(([0; KEY_WORDS], [0; KEY_WORDS]));
    rules
}

/// Keys copied from a random rule (free bits random), one in four random.
fn keys(rules: &[Rule], rng: &mut Rng) -> Vec<FlowKey> {
    (0..4096)
        .map(|j| {
            let mut k = FlowKey::ZERO;
            for w in &mut k.words {
                *w = rng.next();
            }
            if j % 4 != 0 {
                let (m, v) = &rules[(rng.next() as usize) % rules.len()];
                for w in 0..KEY_WORDS {
                    k.words[w] = v[w] | (k.words[w] & !m[w]);
                }
            }
            k
        })
        .collect()
}

fn time(keys: &[FlowKey], budget: Duration, mut f: impl FnMut(&FlowKey) -> Option<usize>) -> f64 {
    let start = Instant::now();
    let mut n = 0u64;
    let mut sink = 0usize;
    while start.elapsed() < budget {
        for k in keys {
            sink = sink.wrapping_add(f(black_box(k)).unwrap_or(7));
        }
        n += keys.len() as u64;
    }
    black_box(sink);
    start.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    println!("rules  subtables  build ms  jit ns  interp ns  scan ns  longest probe");
    for n in [10usize, 1_000, 100_000] {
        let rules = table(n, &mut rng);
        let keys = keys(&rules, &mut rng);
        let start = Instant::now();
        let t = match ProbeTable::build(&rules) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("build failed: {e}");
                std::process::exit(1);
            }
        };
        let build_ms = start.elapsed().as_secs_f64() * 1e3;
        // Agreement on a sample (the scan over 100k rules is slow).
        for k in keys.iter().take(256) {
            let (mut wc, mut wc_ref) = (FlowMask::ZERO, FlowMask::ZERO);
            let want = linear_scan(&rules, k, &mut wc_ref);
            assert_eq!(t.lookup(k, &mut wc), want);
            assert_eq!(t.lookup_interp(k, &mut wc), want);
        }
        let budget = Duration::from_millis(400);
        let jit = time(&keys, budget, |k| {
            let mut wc = FlowMask::ZERO;
            let r = t.lookup(k, &mut wc);
            black_box(&wc);
            r
        });
        let interp = time(&keys, budget, |k| {
            let mut wc = FlowMask::ZERO;
            let r = t.lookup_interp(k, &mut wc);
            black_box(&wc);
            r
        });
        let scan_keys = if rules.len() > 10_000 { &keys[..64] } else { &keys[..] };
        let scan = time(scan_keys, budget, |k| {
            let mut wc = FlowMask::ZERO;
            let r = linear_scan(&rules, k, &mut wc);
            black_box(&wc);
            r
        });
        println!(
            "{:6} {:10} {:9.2} {:7.1} {:10.1} {:8.1} {:14}",
            rules.len(),
            t.subtables(),
            build_ms,
            jit,
            interp,
            scan,
            t.max_probe_len()
        );
    }
}
