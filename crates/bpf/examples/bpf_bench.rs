//! Interpreter vs JIT speed on the example programs.
//!
//! `cargo run --release -p sluice-bpf --example bpf_bench [-- PCAP]`
//! compiles `examples/bpf/*.c` with clang, then runs each program over the
//! packets (a pcap, or a synthetic mix of TCP packets from many flows) and
//! prints the median of 5 measurements in Mpps for both engines.

use std::time::Instant;

use sluice_bpf::corpus::{tcp_flags, Tcp};
use sluice_bpf::helpers::Env;
use sluice_bpf::interp::{self, Input};
use sluice_bpf::maps::Map;
use sluice_bpf::{elf, jit, pcap, verifier, Program};

fn mix() -> Vec<Vec<u8>> {
    let mut x: u32 = 7;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    (0..1024)
        .map(|_| {
            let c = [10, 0, (rnd() % 4) as u8, (rnd() % 200) as u8 + 1];
            let flags = [
                tcp_flags::SYN,
                tcp_flags::ACK,
                tcp_flags::ACK | tcp_flags::PSH,
                tcp_flags::FIN | tcp_flags::ACK,
            ][(rnd() % 4) as usize];
            let mut t = Tcp::new(c, [10, 1, 0, 1], 1024 + (rnd() % 64) as u16, 80, flags);
            t.payload = [0, 100, 1000][(rnd() % 3) as usize];
            t.seq = 1000 + (rnd() % 3) * 100;
            t.frame()
        })
        .collect()
}

fn env(p: &Program) -> Env {
    Env::new(p.maps.iter().map(|d| Map::new(d.clone(), 1).expect("map")).collect())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let packets = match std::env::args().nth(1) {
        Some(path) => pcap::read(&std::fs::read(path).expect("read pcap")).expect("parse pcap"),
        None => mix(),
    };
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/bpf");
    println!("| program | insns | interpreter Mpps | JIT Mpps | speedup |\n|---|---|---|---|---|");
    for name in ["tcp_firewall", "p0f_syn", "rate_limiter", "dapper"] {
        let out = std::env::temp_dir().join(format!("sluice-bench-{name}.o"));
        let ok = std::process::Command::new("clang")
            .args(["-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c"])
            .arg(format!("{dir}/{name}.c"))
            .arg("-o")
            .arg(&out)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            eprintln!("clang failed or missing for {name}");
            continue;
        }
        let obj = std::fs::read(&out).expect("object");
        let _ = std::fs::remove_file(&out);
        let p = elf::load(&obj).expect("load").remove(0);
        let v = verifier::verify(&p).expect("verify");
        let j = jit::compile(&p, &v).expect("jit");
        let rounds = 200;
        let total = (packets.len() * rounds) as f64;
        let mut ti = Vec::new();
        let mut tj = Vec::new();
        let mut sink = 0u64;
        for _ in 0..5 {
            let mut e = env(&p);
            let t = Instant::now();
            for _ in 0..rounds {
                for pkt in &packets {
                    sink = sink.wrapping_add(
                        interp::run(&p.insns, p.prog_type, &mut e, Input::packet(pkt)).unwrap_or(0),
                    );
                }
            }
            ti.push(total / t.elapsed().as_secs_f64() / 1e6);
            let mut e = env(&p);
            let t = Instant::now();
            for _ in 0..rounds {
                for pkt in &packets {
                    sink = sink.wrapping_add(j.run(&mut e, Input::packet(pkt)));
                }
            }
            tj.push(total / t.elapsed().as_secs_f64() / 1e6);
        }
        let (mi, mj) = (median(ti), median(tj));
        println!("| {name} | {} | {mi:.2} | {mj:.2} | {:.1}x |", p.insns.len(), mj / mi);
        std::hint::black_box(sink);
    }
}
