//! The `rate_limiter` example (examples/bpf/rate_limiter.c) against the
//! Linux kernel: return values and map contents of `BPF_PROG_TEST_RUN` vs
//! sluice's interpreter and JIT, packet by packet.
//!
//! The program reads `bpf_ktime_get_ns`, which the kernel cannot freeze, so
//! the comparison is made meaningful in two ways:
//!
//! 1. `rate_limiter_kernel_timing_independent`: sluice runs with a frozen
//!    clock on a trace where no IPv4 source sends more than BURST (20)
//!    packets. A new bucket starts with BURST - 1 tokens and every later
//!    packet takes at most one, so every verdict is 1 whatever the time
//!    between packets: return values are compared exactly. Map keys are
//!    compared exactly after every packet. Token counts are compared exactly
//!    while the kernel's bucket shows no refill (its `last_ns` is still the
//!    creation time); after a refill of A tokens the kernel's count must lie
//!    in `[sluice, min(BURST, sluice + A)]`. `last_ns` (an absolute kernel
//!    time) is not compared in this test.
//! 2. `rate_limiter_kernel_replayed_clock`: bursts longer than the bucket
//!    (so verdict 0 occurs). Sluice's clock for each packet is derived from
//!    the kernel's bucket for that source: on creation the kernel stores
//!    `last_ns = now`; on a refill of `add` tokens it advances `last_ns` by
//!    exactly `add * NS_PER_TOKEN`; otherwise `last_ns` stays. Giving sluice
//!    `now = kernel's last_ns after the packet` therefore reproduces the
//!    kernel's `add` exactly, and the return value, token count and
//!    `last_ns` are then compared exactly after every packet.
//!
//! Needs clang and root (`bpf()`); fails loudly without them.

use std::path::PathBuf;
use std::process::Command;

use sluice_bpf::corpus::{tcp_flags, Tcp};
use sluice_bpf::helpers::{Clock, Env};
use sluice_bpf::interp::{self, Input};
use sluice_bpf::kernel::{self, Entries, KernelProg, Mode};
use sluice_bpf::maps::Map;
use sluice_bpf::{elf, jit, verifier, Program};

const BURST: u64 = 20;
const NS_PER_TOKEN: u64 = 1_000_000;

fn compile_rate_limiter() -> Vec<u8> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/bpf/rate_limiter.c");
    // Tests run in parallel threads of one process: one output file each.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = std::env::temp_dir().join(format!("sluice-bpf-rlk-{}-{n}.o", std::process::id()));
    let st = Command::new("clang")
        .args(["-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status();
    match st {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("clang failed on rate_limiter.c: {s}"),
        Err(e) => panic!("clang not available (scripts/install-deps installs it): {e}"),
    }
    let bytes = std::fs::read(&out).expect("clang output");
    let _ = std::fs::remove_file(&out);
    bytes
}

/// The program, sluice's JIT of it, and the kernel's copy (with its maps).
struct Setup {
    prog: Program,
    jitted: jit::Jitted,
    kp: KernelProg,
}

fn setup() -> Setup {
    assert!(kernel::available(), "the bpf() syscall is not usable here (needs root)");
    let obj = compile_rate_limiter();
    let mut progs = elf::load(&obj).expect("load rate_limiter.o");
    assert_eq!(progs.len(), 1);
    let prog = progs.remove(0);
    assert_eq!(prog.maps.len(), 1, "one map: buckets");
    assert_eq!((prog.maps[0].key_size, prog.maps[0].value_size), (4, 16));
    let v = verifier::verify(&prog).expect("sluice verifier");
    let jitted = jit::compile(&prog, &v).expect("JIT");
    let kp = kernel::load(&prog, Mode::Root).unwrap_or_else(|e| panic!("kernel rejects:\n{e}"));
    Setup { prog, jitted, kp }
}

fn env_for(p: &Program) -> Env {
    let maps = p.maps.iter().map(|d| Map::new(d.clone(), 1).unwrap()).collect();
    let mut e = Env::new(maps);
    e.clock = Clock::Fixed(1_000_000_000);
    e
}

fn ipv4(src: [u8; 4], sport: u16) -> Vec<u8> {
    Tcp::new(src, [10, 9, 9, 9], sport, 80, tcp_flags::ACK).frame()
}

/// Frames the program must pass without touching the map, and a few that
/// create a bucket with the minimum length.
fn odd_frames() -> Vec<Vec<u8>> {
    let full = ipv4([172, 16, 0, 1], 1);
    let mut v = Vec::new();
    v.push(full[..14].to_vec()); // Ethernet header only (kernel minimum)
    v.push(full[..33].to_vec()); // IPv4 header one byte short: no bucket
    v.push(full[..34].to_vec()); // exactly Ethernet + IPv4 header: bucket for 172.16.0.1
    let mut ipv6 = full.clone();
    ipv6[12..14].copy_from_slice(&[0x86, 0xdd]);
    v.push(ipv6); // not IPv4: passes, no bucket
    let mut vlan = full.clone();
    vlan[12..14].copy_from_slice(&[0x81, 0x00]);
    v.push(vlan); // VLAN tag: not parsed, passes, no bucket
    let mut arp = full[..42].to_vec();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    v.push(arp);
    let mut big = ipv4([172, 16, 0, 2], 2);
    big.resize(1500, 0x33);
    v.push(big);
    v
}

/// Bucket of `src` in a map dump: (tokens, last_ns).
fn bucket(entries: &Entries, src: &[u8]) -> Option<(u64, u64)> {
    let (_, v) = entries.iter().find(|(k, _)| k.as_slice() == src)?;
    let t = u64::from_le_bytes(v.get(0..8)?.try_into().ok()?);
    let l = u64::from_le_bytes(v.get(8..16)?.try_into().ok()?);
    Some((t, l))
}

/// IPv4 source address the program keys on, if it parses the frame.
fn source(frame: &[u8]) -> Option<Vec<u8>> {
    if frame.len() < 34 || frame[12..14] != [0x08, 0x00] {
        return None;
    }
    Some(frame[26..30].to_vec())
}

fn keys(e: &Entries) -> Vec<&[u8]> {
    e.iter().map(|(k, _)| k.as_slice()).collect()
}

#[test]
fn rate_limiter_kernel_timing_independent() {
    let s = setup();
    let p = &s.prog;
    let (mut ei, mut ej) = (env_for(p), env_for(p));
    // Interleaved flows, none above BURST packets in total: A sends 20
    // (the whole bucket), B 12, C 1, plus frames of other kinds.
    let (a, b, c) = ([10, 1, 0, 1], [10, 1, 0, 2], [192, 0, 2, 77]);
    let mut trace = Vec::new();
    for i in 0..20u16 {
        trace.push(ipv4(a, 1000 + i));
        if i < 12 {
            trace.push(ipv4(b, 2000 + i));
        }
        if i == 7 {
            trace.push(ipv4(c, 3000));
        }
    }
    for (i, f) in odd_frames().into_iter().enumerate() {
        trace.insert(3 * i + 1, f);
    }
    let mut per_src = std::collections::HashMap::<Vec<u8>, u64>::new();
    for f in &trace {
        if let Some(k) = source(f) {
            *per_src.entry(k).or_default() += 1;
        }
    }
    assert!(per_src.values().all(|&n| n <= BURST), "trace must stay within the bucket");
    // Kernel `last_ns` of each bucket at its creation.
    let mut created = std::collections::HashMap::<Vec<u8>, u64>::new();
    let mut exact_tokens = 0;
    let mut bounded_tokens = 0;
    for (n, f) in trace.iter().enumerate() {
        if n == 30 {
            // Let kernel time pass (>= 2 tokens) so the refill path runs.
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
        let k = s.kp.test_run(f).unwrap_or_else(|e| panic!("packet {n}: {e}"));
        let mut input = Input::packet(f);
        input.ingress_ifindex = 1;
        let r = interp::run(&p.insns, p.prog_type, &mut ei, input).expect("interpreter");
        let rj = s.jitted.run(&mut ej, input);
        assert_eq!(k as u64, r, "packet {n}: kernel vs interpreter");
        assert_eq!(r, rj, "packet {n}: interpreter vs JIT");
        assert_eq!(r, 1, "packet {n}: within the bucket every verdict is 1");
        let ke = s.kp.map_entries(0).expect("kernel map");
        let se = ei.maps[0].entries();
        assert_eq!(se, ej.maps[0].entries(), "packet {n}: interpreter vs JIT map");
        assert_eq!(keys(&ke), keys(&se), "packet {n}: bucket keys kernel vs sluice");
        let Some(src) = source(f) else { continue };
        let (kt, kl) = bucket(&ke, &src).expect("kernel bucket");
        let (st, _) = bucket(&se, &src).expect("sluice bucket");
        let first = *created.entry(src.clone()).or_insert(kl);
        let refilled = (kl - first) / NS_PER_TOKEN;
        assert_eq!((kl - first) % NS_PER_TOKEN, 0, "packet {n}: last_ns moves in whole tokens");
        if refilled == 0 {
            assert_eq!(kt, st, "packet {n}: tokens kernel vs sluice (no refill yet)");
            exact_tokens += 1;
        } else {
            assert!(
                st <= kt && kt <= BURST.min(st + refilled),
                "packet {n}: kernel tokens {kt} not in [{st}, min({BURST}, {st}+{refilled})]"
            );
            bounded_tokens += 1;
        }
    }
    println!(
        "rate_limiter: {} packets, all verdicts equal; tokens exact {exact_tokens}, within refill bound {bounded_tokens}",
        trace.len()
    );
    assert!(trace.len() >= 40);
    assert!(exact_tokens >= 10 && bounded_tokens >= 1, "both token checks must have run");
}

#[test]
fn rate_limiter_kernel_replayed_clock() {
    let s = setup();
    let p = &s.prog;
    let (mut ei, mut ej) = (env_for(p), env_for(p));
    // Bursts well beyond the bucket (verdict 0 once it is empty, unless the
    // kernel took a millisecond per packet), interleaved with other flows.
    let (a, b, c) = ([10, 2, 0, 1], [10, 2, 0, 2], [10, 2, 0, 3]);
    let mut trace = Vec::new();
    for i in 0..60u16 {
        trace.push(ipv4(a, i));
        if i % 2 == 0 {
            trace.push(ipv4(b, i));
        }
        if i % 10 == 0 {
            trace.push(ipv4(c, i));
        }
    }
    for (i, f) in odd_frames().into_iter().enumerate() {
        trace.insert(11 * i + 5, f);
    }
    let mut zeros = 0;
    let mut refills = 0;
    let mut before = s.kp.map_entries(0).expect("kernel map");
    assert!(before.is_empty());
    for (n, f) in trace.iter().enumerate() {
        if n % 40 == 39 {
            // Let kernel time pass (>= 3 tokens) so buckets refill.
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
        let k = s.kp.test_run(f).unwrap_or_else(|e| panic!("packet {n}: {e}"));
        let after = s.kp.map_entries(0).expect("kernel map");
        if let Some(src) = source(f) {
            let (_, now) = bucket(&after, &src).expect("kernel bucket after an IPv4 packet");
            if let Some((_, last)) = bucket(&before, &src) {
                assert!(now >= last, "packet {n}: kernel last_ns went backwards");
                assert_eq!((now - last) % NS_PER_TOKEN, 0, "packet {n}: partial token");
                if now > last {
                    refills += 1;
                }
            }
            ei.clock = Clock::Fixed(now);
            ej.clock = Clock::Fixed(now);
        }
        let mut input = Input::packet(f);
        input.ingress_ifindex = 1;
        let r = interp::run(&p.insns, p.prog_type, &mut ei, input).expect("interpreter");
        let rj = s.jitted.run(&mut ej, input);
        assert_eq!(k as u64, r, "packet {n}: kernel vs interpreter");
        assert_eq!(r, rj, "packet {n}: interpreter vs JIT");
        if k == 0 {
            zeros += 1;
        }
        let se = ei.maps[0].entries();
        assert_eq!(se, ej.maps[0].entries(), "packet {n}: interpreter vs JIT map");
        assert_eq!(after, se, "packet {n}: map kernel vs sluice");
        before = after;
    }
    println!(
        "rate_limiter (replayed clock): {} packets equal, {zeros} dropped, {refills} refills, {} buckets",
        trace.len(),
        before.len()
    );
    // The sleeps guarantee refills; how many packets are dropped depends on
    // the kernel's timing (reported above, compared exactly, not asserted).
    assert!(refills >= 1, "the sleeps must have refilled a bucket");
    assert_eq!(before.len(), 5, "buckets for a, b, c and the two odd IPv4 frames");
}
