//! Micro-benchmark of classifier lookups (not a test; prints numbers).
//!
//! Cases: N L3 rules (`eth_type=0x0800, ipv4_dst=A/P`, P uniform in
//! 24..=32, priority = P, so nine subtables and longest-prefix order) and
//! N L2 rules (`eth_dst=M` exact, one subtable), N = 10 … 100k, plus the
//! linear reference `FlowTable` at 1k rules for comparison. Traffic cycles
//! over one key per rule (the rule's value with random host bits and
//! random other fields), single-threaded, through a published `Snapshot`
//! with the un-wildcarding mask computed, as a worker would.
//!
//! Run: `cargo run --release -p sluice-classifier --example cls_bench`
//! (`-- quick` for a shorter run). Output: one line per case,
//! `CASE RULES MLOOKUPS_PER_S NS_PER_LOOKUP`.

use sluice_classifier::{Classifier, RuleId, RuleSpec, Snapshot};
use sluice_ofp::instruction::Instruction;
use sluice_ofp::oxm::Match;
use sluice_packet::key::{FlowKey, FlowMask, FIXED_LAYOUT};
use sluice_packet::Field as FieldId;
use sluice_pipeline::rule::Rule;
use sluice_pipeline::table::{FlowEntry, FlowTable};
use std::collections::HashSet;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// xorshift64*: deterministic, good enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

struct Case {
    rules: Vec<(Rule, u16)>,
    keys: Vec<FlowKey>,
}

/// Fields every packet has: IPv4/TCP with random addresses and ports.
fn base_key(rng: &mut Rng) -> FlowKey {
    let mut k = FlowKey::ZERO;
    let r = rng.next();
    let l = &FIXED_LAYOUT;
    l.put(&mut k, FieldId::InPort, &(1 + (r as u32 & 7)).to_be_bytes()).ok();
    l.put(&mut k, FieldId::EthSrc, &r.to_be_bytes()[2..]).ok();
    l.put(&mut k, FieldId::EthDst, &rng.next().to_be_bytes()[2..]).ok();
    l.put(&mut k, FieldId::EthType, &[8, 0]).ok();
    l.put(&mut k, FieldId::Ipv4Src, &(r >> 16).to_be_bytes()[4..]).ok();
    l.put(&mut k, FieldId::Ipv4Dst, &(r >> 24).to_be_bytes()[4..]).ok();
    l.put(&mut k, FieldId::IpProto, &[6]).ok();
    l.put(&mut k, FieldId::TcpSrc, &(r as u16).to_be_bytes()).ok();
    l.put(&mut k, FieldId::TcpDst, &((r >> 8) as u16).to_be_bytes()).ok();
    k
}

fn l3(n: usize, rng: &mut Rng) -> Case {
    let mut seen = HashSet::new();
    let mut rules = Vec::with_capacity(n);
    let mut keys = Vec::with_capacity(n);
    while rules.len() < n {
        let plen = 24 + (rng.next() % 9) as u32;
        let pmask = u32::MAX << (32 - plen);
        let addr = rng.next() as u32 & pmask;
        if !seen.insert((plen, addr)) {
            continue;
        }
        let (mut v, mut m) = (FlowKey::ZERO, FlowMask::ZERO);
        FIXED_LAYOUT.add_match(&mut v, &mut m, FieldId::EthType, &[8, 0], None).ok();
        FIXED_LAYOUT
            .add_match(
                &mut v,
                &mut m,
                FieldId::Ipv4Dst,
                &addr.to_be_bytes(),
                Some(&pmask.to_be_bytes()),
            )
            .ok();
        rules.push((Rule { mask: m, value: v }, plen as u16));
        let mut k = base_key(rng);
        let host = rng.next() as u32 & !pmask;
        FIXED_LAYOUT.put(&mut k, FieldId::Ipv4Dst, &(addr | host).to_be_bytes()).ok();
        keys.push(k);
    }
    Case { rules, keys }
}

fn l2(n: usize, rng: &mut Rng) -> Case {
    let mut seen = HashSet::new();
    let mut rules = Vec::with_capacity(n);
    let mut keys = Vec::with_capacity(n);
    while rules.len() < n {
        let mac = rng.next() & 0xfeff_ffff_ffff; // unicast
        if !seen.insert(mac) {
            continue;
        }
        let bytes = &mac.to_be_bytes()[2..];
        let (mut v, mut m) = (FlowKey::ZERO, FlowMask::ZERO);
        FIXED_LAYOUT.add_match(&mut v, &mut m, FieldId::EthDst, bytes, None).ok();
        rules.push((Rule { mask: m, value: v }, 100));
        let mut k = base_key(rng);
        FIXED_LAYOUT.put(&mut k, FieldId::EthDst, bytes).ok();
        keys.push(k);
    }
    Case { rules, keys }
}

fn snapshot_of(case: &Case) -> std::sync::Arc<Snapshot> {
    let mut c = Classifier::new();
    for (i, (r, prio)) in case.rules.iter().enumerate() {
        let spec = RuleSpec { mask: r.mask, value: r.value, priority: *prio, seq: i as u64 };
        c.insert(RuleId(i as u64), spec).expect("distinct rules");
    }
    c.snapshot()
}

fn table_of(case: &Case) -> FlowTable {
    let mut t = FlowTable::new(usize::MAX, 2);
    // Insert in table order, so every insert appends.
    let mut sorted: Vec<(usize, &(Rule, u16))> = case.rules.iter().enumerate().collect();
    sorted.sort_by_key(|&(i, (_, prio))| (std::cmp::Reverse(*prio), i));
    for (i, (r, prio)) in sorted {
        t.insert(FlowEntry {
            rule: *r,
            r#match: Match::default(),
            priority: *prio,
            cookie: i as u64,
            idle_timeout: 0,
            hard_timeout: 0,
            flags: 0,
            instructions: Vec::<Instruction>::new().into(),
            ops: Default::default(),
            installed_ns: 0,
            stats: FlowEntry::new_stats(2),
            seq: i as u64,
            guards: Default::default(),
        });
    }
    t
}

/// Run `f` over the keys in a cycle for about `budget`; lookups per second.
fn measure(keys: &[FlowKey], budget: Duration, mut f: impl FnMut(&FlowKey) -> u64) -> f64 {
    let mut sink = 0u64;
    let mut done = 0u64;
    let start = Instant::now();
    loop {
        for k in keys.iter().cycle().take(4096) {
            sink = sink.wrapping_add(f(black_box(k)));
        }
        done += 4096;
        if start.elapsed() >= budget {
            break;
        }
    }
    black_box(sink);
    done as f64 / start.elapsed().as_secs_f64()
}

fn report(case: &str, rules: usize, per_s: f64) {
    println!("{case:<14} {rules:>7} {:>14.2} {:>13.1}", per_s / 1e6, 1e9 / per_s);
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let budget = Duration::from_millis(if quick { 100 } else { 500 });
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    println!("CASE             RULES MLOOKUPS_PER_S NS_PER_LOOKUP");
    for (name, make) in [("l3_dst_ip", l3 as fn(usize, &mut Rng) -> Case), ("l2_dst_mac", l2)] {
        for n in [10, 100, 1_000, 10_000, 100_000] {
            let case = make(n, &mut rng);
            let snap = snapshot_of(&case);
            // Every key must hit (its own rule or a better one); checked
            // against the reference on the first keys before timing.
            let table = table_of(&Case { rules: case.rules.clone(), keys: vec![] });
            for k in case.keys.iter().take(if n <= 1_000 { n } else { 200 }) {
                let mut wc = FlowMask::ZERO;
                let got = snap.lookup(k, &mut wc).map(|h| h.id.0);
                let want = table.lookup(k).map(|i| table.entries()[i].cookie);
                assert!(got.is_some() && got == want, "{name}: classifier disagrees");
            }
            let per_s = measure(&case.keys, budget, |k| {
                let mut wc = FlowMask::ZERO;
                let hit = snap.lookup(k, &mut wc).map_or(0, |h| h.id.0);
                hit ^ wc.words[3]
            });
            report(name, n, per_s);
            if n == 1_000 {
                let per_s =
                    measure(&case.keys, budget, |k| table.lookup(k).map_or(0, |i| i as u64));
                report(&format!("{name}_linear"), n, per_s);
            }
        }
    }
}
