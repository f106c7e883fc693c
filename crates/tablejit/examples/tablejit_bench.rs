//! ns/lookup of a compiled table against the linear scan, and compile time
//! per table size. Time-boxed loops; prints numbers, asserts only that both
//! give the same answers.
//!
//! `cargo run -p sluice-tablejit --release --example tablejit_bench`

use sluice_packet::key::{FlowKey, FlowMask, KEY_WORDS};
use sluice_tablejit::{linear_scan, CompiledTable, Rule};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// A small deterministic generator (xorshift64*), so runs are comparable.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// `n` rules shaped like an ACL: an exact ethertype-ish word, an IPv4
/// prefix in the high half of word 4, and half of them an exact port.
fn table(n: usize, rng: &mut Rng) -> Vec<Rule> {
    (0..n)
        .map(|i| {
            let mut m = [0u64; KEY_WORDS];
            let mut v = [0u64; KEY_WORDS];
            m[2] = 0xffff;
            v[2] = 0x0800;
            let plen = 8 + (rng.next() % 25) as u32;
            m[4] = u64::MAX << (64 - plen);
            v[4] = rng.next() & m[4];
            if i % 2 == 0 {
                m[6] = 0xffff;
                v[6] = rng.next() & 0xffff;
            }
            (m, v)
        })
        .collect()
}

/// Keys: each copied from a rule (with noise in free bits) or random.
fn keys(rules: &[Rule], rng: &mut Rng) -> Vec<FlowKey> {
    (0..1024)
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

/// ns per call of `f` over `keys`, run for about `budget`.
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
    println!("lookup: rules  compiled ns  scan ns  hits");
    for n in [1usize, 8, 64] {
        let rules = table(n, &mut rng);
        let keys = keys(&rules, &mut rng);
        let t = match CompiledTable::compile(&rules) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("compile failed: {e}");
                std::process::exit(1);
            }
        };
        let mut hits = 0;
        for k in &keys {
            let (mut a, mut b) = (FlowMask::ZERO, FlowMask::ZERO);
            let got = t.lookup(k, &mut a);
            assert_eq!(got, linear_scan(&rules, k, &mut b));
            assert_eq!(a.words, b.words);
            hits += usize::from(got.is_some());
        }
        let budget = Duration::from_millis(300);
        let jit = time(&keys, budget, |k| {
            let mut wc = FlowMask::ZERO;
            let r = t.lookup(k, &mut wc);
            black_box(&wc);
            r
        });
        let scan = time(&keys, budget, |k| {
            let mut wc = FlowMask::ZERO;
            let r = linear_scan(&rules, k, &mut wc);
            black_box(&wc);
            r
        });
        println!("        {n:5}  {jit:11.1}  {scan:7.1}  {hits}/{}", keys.len());
    }
    println!("compile: rules  us/table (compile + drop)");
    for n in [1usize, 8, 64, 256] {
        let rules = table(n, &mut rng);
        let start = Instant::now();
        let mut count = 0u32;
        while count < 3 || start.elapsed() < Duration::from_millis(500) {
            match CompiledTable::compile(&rules) {
                Ok(t) => drop(black_box(t)),
                Err(e) => {
                    eprintln!("compile failed: {e}");
                    std::process::exit(1);
                }
            }
            count += 1;
        }
        let us = start.elapsed().as_secs_f64() * 1e6 / f64::from(count);
        println!("         {n:5}  {us:9.1}");
    }
}
