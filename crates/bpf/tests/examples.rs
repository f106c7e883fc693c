//! The example C programs (`examples/bpf/*.c`), compiled with clang by the
//! test itself: loaded, verified, run by the interpreter and the JIT on a
//! TCP trace, and compared with the Linux kernel (verdict, return values,
//! map contents). Fails, never skips, without clang (`scripts/install-deps`
//! installs it) or without a usable `bpf()` syscall (run as root).

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use sluice_bpf::corpus::{self, tcp_flags, Tcp};
use sluice_bpf::helpers::{Clock, Env};
use sluice_bpf::interp::{self, Input};
use sluice_bpf::kernel::{self, Mode};
use sluice_bpf::maps::Map;
use sluice_bpf::{elf, jit, verifier, Program};

pub const EXAMPLES: [&str; 5] = ["tcp_firewall", "p0f_syn", "rate_limiter", "dapper", "port_knock"];

/// A temporary path no other test in this process uses: tests run on
/// several threads of one process, and two of them compile the same example.
fn scratch(stem: &str, ext: &str) -> PathBuf {
    static SERIAL: AtomicUsize = AtomicUsize::new(0);
    let n = SERIAL.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("sluice-bpf-{}-{n}-{stem}.{ext}", std::process::id()))
}

fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/bpf")
}

/// Compiles an example (panics if clang is missing or fails: the test must
/// not pass without it).
pub fn compile(name: &str) -> Vec<u8> {
    let out = scratch(name, "o");
    let st = Command::new("clang")
        .args(["-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c"])
        .arg(examples_dir().join(format!("{name}.c")))
        .arg("-o")
        .arg(&out)
        .status();
    match st {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("clang failed on {name}: {s}"),
        Err(e) => panic!("clang not available (scripts/install-deps installs it): {e}"),
    }
    let bytes = std::fs::read(&out)
        .unwrap_or_else(|e| panic!("clang wrote no object for {name} ({}): {e}", out.display()));
    let _ = std::fs::remove_file(&out);
    bytes
}

/// Panics unless the kernel oracle can be used.
fn need_kernel() {
    assert!(
        kernel::available(),
        "the bpf() syscall is not usable here: run the tests as root (CAP_BPF/CAP_SYS_ADMIN) \
         on a kernel with bpf() enabled"
    );
}

fn env_for(p: &Program) -> Env {
    let maps = p.maps.iter().map(|d| Map::new(d.clone(), 1).unwrap()).collect();
    let mut e = Env::new(maps);
    e.clock = Clock::Fixed(1_000_000_000);
    e
}

#[test]
fn examples_load_verify_and_agree_with_kernel() {
    need_kernel();
    for name in EXAMPLES {
        let obj = compile(name);
        let progs = elf::load(&obj).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(progs.len(), 1, "{name}");
        let p = &progs[0];
        assert!(!p.maps.is_empty(), "{name}: maps parsed from BTF");
        let v = verifier::verify(p).unwrap_or_else(|e| {
            panic!("{name}: sluice rejects: {e}\n{}", sluice_bpf::insn::disasm_program(&p.insns))
        });
        println!("{name}: {} insns, {} processed, maps {:?}", p.insns.len(), v.processed, p.maps);
        let j = jit::compile(p, &v).unwrap();
        let (mut ei, mut ej) = (env_for(p), env_for(p));
        let trace = corpus::tcp_trace();
        let mut rets = Vec::new();
        for pkt in &trace {
            let mut input = Input::packet(pkt);
            input.ingress_ifindex = 1;
            let r = interp::run(&p.insns, p.prog_type, &mut ei, input).unwrap();
            assert_eq!(r, j.run(&mut ej, input), "{name}: interpreter vs JIT");
            rets.push(r);
        }
        for (a, b) in ei.maps.iter().zip(&ej.maps) {
            assert_eq!(a.entries(), b.entries(), "{name}: maps interpreter vs JIT");
        }
        println!("{name}: returns {rets:?}");
        let kp =
            kernel::load(p, Mode::Root).unwrap_or_else(|e| panic!("{name}: kernel rejects:\n{e}"));
        if name == "rate_limiter" {
            // rate_limiter reads bpf_ktime_get_ns, yet its return values do
            // not depend on time on this trace: no IPv4 source sends more
            // than the bucket (20), and a bucket starts with 19 tokens, so
            // every verdict is 1 however much time passes. Checked here.
            let mut per_src = std::collections::HashMap::<&[u8], usize>::new();
            for pkt in &trace {
                if pkt.len() >= 34 && pkt[12..14] == [0x08, 0x00] {
                    *per_src.entry(&pkt[26..30]).or_default() += 1;
                }
            }
            assert!(per_src.values().all(|&n| n <= 20), "{name}: trace exceeds the bucket");
        }
        for (i, pkt) in trace.iter().enumerate() {
            assert_eq!(
                kp.test_run(pkt).unwrap(),
                rets[i] as u32,
                "{name}: packet {i} kernel vs sluice"
            );
        }
        for (m, map) in ei.maps.iter().enumerate() {
            let (ke, se) = (kp.map_entries(m).unwrap(), map.entries());
            if name == "rate_limiter" {
                // Of rate_limiter's map only the keys are compared here:
                // tokens and last_ns depend on the kernel's clock (they are
                // compared in tests/rate_limiter_kernel.rs).
                let keys =
                    |e: &kernel::Entries| e.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
                assert_eq!(
                    keys(&ke),
                    keys(&se),
                    "{name}: map {} keys kernel vs sluice",
                    map.def.name
                );
                assert!(!se.is_empty(), "{name}: buckets created");
                continue;
            }
            assert_eq!(ke, se, "{name}: map {} kernel vs sluice", map.def.name);
        }
    }
}

/// An Ethernet/IPv4/UDP frame from `src` to port `dport` (checksums are
/// not the program's business).
fn udp_frame(src: [u8; 4], dport: u16) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0, 0, 32, 0, 0, 0x40, 0, 64, 17, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[10, 0, 0, 2]);
    f.extend_from_slice(&40000u16.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&[0, 12, 0, 0, b'k', b'n', b'o', b'c']);
    f
}

/// `port_knock.c`: the OpenState sequence, packet by packet, in the
/// interpreter and the JIT with the clock under the test's control, and
/// the same packets (all well inside the knock window) in the kernel.
#[test]
fn port_knock_opens_only_after_the_sequence() {
    let obj = compile("port_knock");
    let p = &elf::load(&obj).unwrap()[0];
    let v = verifier::verify(p).unwrap();
    let j = jit::compile(p, &v).unwrap();
    let host = [10, 0, 0, 1];
    let tcp = |dport: u16| Tcp::new(host, [10, 0, 0, 2], 40001, dport, tcp_flags::SYN).frame();
    let (k1, k2, k3) = (udp_frame(host, 5001), udp_frame(host, 6002), udp_frame(host, 7003));
    // (packet, verdict, state after it)
    let steps: Vec<(&str, Vec<u8>, u64, u32)> = vec![
        ("closed: the port is shut", tcp(2222), 0, u32::MAX),
        ("knock 1", k1.clone(), 0, 1),
        ("knock 2", k2.clone(), 0, 2),
        ("knock 3 opens", k3.clone(), 0, 3),
        ("open: passes", tcp(2222), 1, 3),
        ("open: passes again", tcp(2222), 1, 3),
        ("another port resets", tcp(80), 0, 0),
        ("closed again", tcp(2222), 0, 0),
        ("knock 1", k1.clone(), 0, 1),
        ("knock 3 out of order resets", k3.clone(), 0, 0),
        ("knock 2 without 1 stays closed", k2.clone(), 0, 0),
    ];
    let state = |e: &Env| -> u32 {
        let m = e.maps[0].entries();
        match m.as_slice() {
            [] => u32::MAX,
            [(k, v)] => {
                assert_eq!(k, &host.to_vec());
                u32::from_le_bytes(v[..4].try_into().unwrap())
            }
            more => panic!("one host, several entries: {more:?}"),
        }
    };
    let (mut ei, mut ej) = (env_for(p), env_for(p));
    for (what, pkt, verdict, after) in &steps {
        let ri = interp::run(&p.insns, p.prog_type, &mut ei, Input::packet(pkt)).unwrap();
        let rj = j.run(&mut ej, Input::packet(pkt));
        assert_eq!((ri, rj), (*verdict, *verdict), "{what}");
        assert_eq!((state(&ei), state(&ej)), (*after, *after), "{what}");
    }
    // Timing: knocks 2 s apart at most; open lasts 10 s of silence.
    let at = |e: &mut Env, s: f64| e.clock = Clock::Fixed(1_000_000_000 + (s * 1e9) as u64);
    let mut e = env_for(p);
    let run = |e: &mut Env, pkt: &[u8]| {
        interp::run(&p.insns, p.prog_type, e, Input::packet(pkt)).unwrap()
    };
    for (t, pkt) in [(0.0, &k1), (1.9, &k2), (3.8, &k3)] {
        at(&mut e, t);
        assert_eq!(run(&mut e, pkt), 0);
    }
    at(&mut e, 13.7);
    assert_eq!(run(&mut e, &tcp(2222)), 1, "open within 10 s of the last knock");
    at(&mut e, 23.8);
    assert_eq!(run(&mut e, &tcp(2222)), 0, "10 s of silence closed it");
    for (t, pkt) in [(30.0, &k1), (32.1, &k2), (32.2, &k3)] {
        at(&mut e, t);
        assert_eq!(run(&mut e, pkt), 0);
    }
    at(&mut e, 32.3);
    assert_eq!(run(&mut e, &tcp(2222)), 0, "a knock 2.1 s late restarts nothing");
    let resets = u32::from_le_bytes(e.maps[0].entries()[0].1[4..8].try_into().unwrap());
    // The idle close and the late knock 2; the stray knock 3 met CLOSED,
    // which has nothing to reset.
    assert_eq!(resets, 2);

    // The kernel on the untimed steps: verdicts and state (the deadline
    // is the kernel's clock's, so only state and resets are compared).
    need_kernel();
    let kp = kernel::load(p, Mode::Root).unwrap_or_else(|e| panic!("kernel rejects:\n{e}"));
    for (what, pkt, verdict, _) in &steps {
        assert_eq!(kp.test_run(pkt).unwrap(), *verdict as u32, "kernel: {what}");
    }
    let ke = kp.map_entries(0).unwrap();
    let se = ei.maps[0].entries();
    assert_eq!(ke.len(), 1);
    assert_eq!((&ke[0].0, &ke[0].1[..8]), (&se[0].0, &se[0].1[..8]), "kernel vs sluice state");
}

#[test]
fn rate_limiter_limits() {
    let obj = compile("rate_limiter");
    let p = &elf::load(&obj).unwrap()[0];
    verifier::verify(p).unwrap();
    let mut env = env_for(p);
    let pkt = corpus::tcp_trace()[0].clone();
    let mut passed = 0;
    for _ in 0..100 {
        passed += interp::run(&p.insns, p.prog_type, &mut env, Input::packet(&pkt)).unwrap();
    }
    // Bucket depth 20, clock frozen: exactly 20 pass.
    assert_eq!(passed, 20);
    env.clock = Clock::Fixed(1_000_000_000 + 5_000_000); // +5 ms = 5 tokens
    let mut more = 0;
    for _ in 0..100 {
        more += interp::run(&p.insns, p.prog_type, &mut env, Input::packet(&pkt)).unwrap();
    }
    assert_eq!(more, 5);
}

/// Compiles `src` with clang (panics if clang is missing); `Err` if clang
/// refuses it or writes nothing.
fn compile_src(tag: &str, src: &str, extra: &[&str]) -> Result<Vec<u8>, String> {
    let (c, o) = (scratch(tag, "c"), scratch(tag, "o"));
    std::fs::write(&c, src).unwrap();
    let st = Command::new("clang")
        .args(["-O2", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu"])
        .args(extra)
        .arg(format!("-I{}", examples_dir().display()))
        .arg("-c")
        .arg(&c)
        .arg("-o")
        .arg(&o)
        .status();
    let _ = std::fs::remove_file(&c);
    match st {
        Err(e) => panic!("clang not available (scripts/install-deps installs it): {e}"),
        Ok(s) if !s.success() => Err(format!("clang failed: {s}")),
        Ok(_) => {
            let b = std::fs::read(&o).map_err(|e| e.to_string());
            let _ = std::fs::remove_file(&o);
            b
        }
    }
}

#[test]
fn loader_legacy_maps_section_and_socket_filter() {
    let src = r#"
#include <linux/bpf.h>
#define SEC(n) __attribute__((section(n), used))
struct bpf_map_def { unsigned int type, key_size, value_size, max_entries, map_flags; };
struct bpf_map_def SEC("maps") counts = { BPF_MAP_TYPE_ARRAY, 4, 8, 2, 0 };
struct bpf_map_def SEC("maps") seen = { BPF_MAP_TYPE_HASH, 4, 4, 16, 0 };
static void *(*lookup)(void *, const void *) = (void *)1;
unsigned long long load_byte(void *skb, unsigned long long off) asm("llvm.bpf.load.byte");
SEC("socket")
int sock(struct __sk_buff *skb) {
    unsigned int k = load_byte(skb, 9) == 6;
    unsigned long long *v = lookup(&counts, &k);
    if (v) *v += 1;
    unsigned int *s = lookup(&seen, &k);
    return (s ? 2 : 0) + k;
}
"#;
    let obj = compile_src("legacy", src, &["-g"]);
    let progs = elf::load(&obj.unwrap()).unwrap();
    let p = &progs[0];
    assert_eq!(p.name, "socket");
    assert_eq!(p.prog_type, sluice_bpf::ProgType::SocketFilter);
    assert_eq!(p.maps.len(), 2);
    assert_eq!(
        (p.maps[0].name.as_str(), p.maps[0].map_type, p.maps[0].value_size),
        ("counts", 2, 8)
    );
    assert_eq!(
        (p.maps[1].name.as_str(), p.maps[1].map_type, p.maps[1].max_entries),
        ("seen", 1, 16)
    );
    verifier::verify(p).unwrap();
    // TCP SYN (IP proto at offset 9 after the Ethernet header).
    let frame = corpus::tcp_trace()[0].clone();
    let mut env = env_for(p);
    let r = interp::run(&p.insns, p.prog_type, &mut env, Input::packet(&frame[14..])).unwrap();
    assert_eq!(r, 1);
    assert_eq!(env.maps[0].entries()[1].1, 1u64.to_le_bytes().to_vec());
    need_kernel();
    let kp = kernel::load(p, Mode::Root).unwrap();
    assert_eq!(kp.test_run(&frame).unwrap(), 1);
}

/// Two BTF-defined maps: in the object every DATASEC offset is 0, so each
/// map's place is its symbol's (a relocation to the second map must name
/// the second map, not the first).
#[test]
fn loader_places_several_btf_maps_by_symbol() {
    let src = r#"
#include "sluice_bpf.h"
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} first SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} second SEC(".maps");
SEC("xdp")
int two(struct xdp_md *ctx)
{
	__u32 k = 0;
	__u64 *a = bpf_map_lookup_elem(&first, &k);
	__u32 *b = bpf_map_lookup_elem(&second, &k);
	if (a)
		*a += 5;
	if (b)
		*b += 7;
	return 1;
}
"#;
    let obj = compile_src("twomaps", src, &["-g"]).unwrap();
    let progs = elf::load(&obj).unwrap();
    let p = &progs[0];
    let names: Vec<&str> = p.maps.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["first", "second"]);
    verifier::verify(p).unwrap();
    let mut env = env_for(p);
    let frame = corpus::tcp_trace()[0].clone();
    assert_eq!(interp::run(&p.insns, p.prog_type, &mut env, Input::packet(&frame)).unwrap(), 1);
    assert_eq!(env.maps[0].entries(), [(vec![0; 4], 5u64.to_le_bytes().to_vec())]);
    assert_eq!(env.maps[1].entries(), [(vec![0; 4], 7u32.to_le_bytes().to_vec())]);
}

#[test]
fn loader_refuses_global_data_and_btf_maps_without_debug_info() {
    let src = r#"
#include "sluice_bpf.h"
int counter;
SEC("xdp") int g(struct xdp_md *ctx) { counter++; return counter; }
"#;
    let obj = compile_src("global", src, &["-g"]);
    let e = elf::load(&obj.unwrap()).unwrap_err();
    assert!(e.0.contains("global data"), "{e}");

    let src = r#"
#include "sluice_bpf.h"
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, __u64); } m SEC(".maps");
SEC("xdp") int g(struct xdp_md *ctx) { __u32 k = 0; return bpf_map_lookup_elem(&m, &k) != 0; }
"#;
    let obj = compile_src("nobtf", src, &[]);
    let e = elf::load(&obj.unwrap()).unwrap_err();
    assert!(e.0.contains("-g"), "{e}");
    let obj = compile_src("btf", src, &["-g"]);
    let p = &elf::load(&obj.unwrap()).unwrap()[0];
    assert_eq!((p.maps[0].key_size, p.maps[0].value_size, p.maps[0].max_entries), (4, 8, 1));
    verifier::verify(p).unwrap();
}

#[test]
fn loader_rejects_garbage() {
    assert!(elf::load(b"").is_err());
    assert!(elf::load(b"\x7fELF\x02\x01\x01").is_err());
    assert!(elf::load(&[0u8; 64]).is_err());
}
