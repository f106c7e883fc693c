//! The Linux kernel as oracle: for every corpus program, sluice's verifier
//! must agree with the kernel's (loaded as root), except where sluice is
//! documented stricter (`Case::sluice_stricter`); accepted programs must
//! return the same values on the same packets (BPF_PROG_TEST_RUN vs
//! interpreter vs JIT) and leave the same map contents. The verdict of a
//! kernel without CAP_PERFMON/CAP_SYS_ADMIN ("strict": no uninitialised
//! stack reads, no pointer leaks, Spectre-v1 restrictions, no
//! trace_printk) is reported alongside.
//!
//! Socket filters: the kernel's test run refuses some short frames
//! (EINVAL); those packets are skipped for socket filters only.
//!
//! Needs root and a usable `bpf()` syscall; skips loudly otherwise.

use sluice_bpf::corpus::{self, Case};
use sluice_bpf::helpers::{Clock, Env};
use sluice_bpf::interp::{self, Input};
use sluice_bpf::kernel::{self, Mode};
use sluice_bpf::maps::{Map, BPF_MAP_TYPE_PERCPU_ARRAY};
use sluice_bpf::{verifier, ProgType, Program};

fn sluice_input(t: ProgType, pkt: &[u8]) -> &[u8] {
    // The kernel's socket-filter test run strips the Ethernet header
    // (skb->data at the network header); XDP sees the whole frame.
    match t {
        ProgType::SocketFilter => pkt.get(14..).unwrap_or(&[]),
        ProgType::Xdp => pkt,
    }
}

/// Runs a program through the kernel and sluice; returns a mismatch description.
fn compare_runs(case: &Case, kp: &kernel::KernelProg) -> Result<(), String> {
    let p = &case.program;
    let maps = p.maps.iter().map(|d| Map::new(d.clone(), 1)).collect::<Result<Vec<_>, _>>()?;
    let mut env = Env::new(maps);
    env.clock = Clock::Fixed(1);
    let mut jit_env =
        Env::new(p.maps.iter().map(|d| Map::new(d.clone(), 1)).collect::<Result<Vec<_>, _>>()?);
    jit_env.clock = Clock::Fixed(1);
    let verified = verifier::verify(p).map_err(|e| e.to_string())?;
    let jitted = sluice_bpf::jit::compile(p, &verified).map_err(|e| format!("jit: {e}"))?;
    for (n, pkt) in corpus::packets().iter().enumerate() {
        let k = match kp.test_run(pkt) {
            Ok(k) => k,
            Err(_) if p.prog_type == ProgType::SocketFilter => continue,
            Err(e) => return Err(e),
        };
        let mut input = Input::packet(sluice_input(p.prog_type, pkt));
        if p.prog_type == ProgType::Xdp {
            // The kernel's XDP test run receives on the loopback device.
            input.ingress_ifindex = 1;
        }
        let s = interp::run(&p.insns, p.prog_type, &mut env, input)
            .map_err(|f| format!("packet {n}: interpreter fault {f:?}"))?;
        let jv = jitted.run(&mut jit_env, input);
        if case.nondeterministic {
            continue;
        }
        if k != s as u32 {
            return Err(format!("packet {n}: kernel returned {k:#x}, interpreter {s:#x}"));
        }
        if jv != s {
            return Err(format!("packet {n}: interpreter returned {s:#x}, JIT {jv:#x}"));
        }
    }
    for (m, def) in p.maps.iter().enumerate() {
        let mut ke = kp.map_entries(m)?;
        let se = env.maps[m].entries();
        let je = jit_env.maps[m].entries();
        if se != je {
            return Err(format!("map {}: interpreter and JIT contents differ", def.name));
        }
        if def.map_type == BPF_MAP_TYPE_PERCPU_ARRAY {
            // Sum the kernel's per-CPU u64 words (test runs may hop CPUs).
            let vs = def.value_size as usize;
            let stride = vs.div_ceil(8) * 8;
            for (_, v) in ke.iter_mut() {
                let mut sum = vec![0u8; vs];
                for cpu in v.chunks(stride) {
                    for (w, c) in sum.chunks_mut(8).zip(cpu.chunks(8)) {
                        let a = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
                        let b = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
                        w.copy_from_slice(&a.wrapping_add(b).to_le_bytes());
                    }
                }
                *v = sum;
            }
        }
        if ke != se {
            return Err(format!("map {}: kernel {:?} vs sluice {:?}", def.name, ke, se));
        }
    }
    Ok(())
}

fn verdict(r: &Result<kernel::KernelProg, String>) -> &'static str {
    if r.is_ok() {
        "accept"
    } else {
        "reject"
    }
}

fn short(p: &Program, e: &str) -> String {
    let last = e
        .lines()
        .rev()
        .find(|l| {
            !l.trim().is_empty()
                && !l.starts_with("processed ")
                && !l.starts_with("verification time")
        })
        .unwrap_or("")
        .to_string();
    let _ = p;
    last
}

#[test]
fn kernel_agreement() {
    assert!(kernel::available(), "the bpf() syscall is not usable here (needs root)");
    let cases = corpus::cases();
    let mut failures = Vec::new();
    let mut table = String::new();
    let (mut n_acc, mut n_rej, mut n_strict, mut n_runs) = (0, 0, 0, 0);
    for case in &cases {
        let p = &case.program;
        let s = verifier::verify(p);
        let kr = kernel::load(p, Mode::Root);
        let ks = kernel::load(p, Mode::Strict);
        let sv = if s.is_ok() { "accept" } else { "reject" };
        table.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            p.name,
            verdict(&kr),
            verdict(&ks),
            sv,
            match (&s, &ks) {
                (Err(e), _) => e.to_string(),
                (Ok(_), Err(e)) => format!("strict kernel: {}", short(p, e)),
                _ => String::new(),
            }
        ));
        let agree = s.is_ok() == kr.is_ok();
        if s.is_ok() {
            n_acc += 1;
        } else {
            n_rej += 1;
        }
        if case.sluice_only {
            if ks.is_ok() || kr.is_ok() {
                failures.push(format!("{}: kernel accepted a sluice-only helper", p.name));
            }
            continue;
        }
        if !agree {
            if s.is_err() && case.sluice_stricter.is_some() && kr.is_ok() {
                n_strict += 1;
            } else {
                failures.push(format!(
                    "{}: verdict mismatch: sluice {:?}, kernel(root) {}",
                    p.name,
                    s.as_ref().map(|_| ()).map_err(|e| e.to_string()),
                    kr.as_ref().map(|_| "accept".to_string()).unwrap_or_else(|e| short(p, e))
                ));
            }
            continue;
        }
        if case.sluice_stricter.is_some() {
            failures.push(format!("{}: documented as stricter but the root kernel agrees", p.name));
        }
        if let (Ok(_), Ok(kp)) = (&s, &kr) {
            n_runs += 1;
            if let Err(e) = compare_runs(case, kp) {
                failures.push(format!("{}: {e}", p.name));
            }
        }
    }
    println!("| program | kernel root | kernel strict | sluice | reason |\n|---|---|---|---|---|\n{table}");
    println!(
        "corpus: {} programs, sluice accepts {n_acc}, rejects {n_rej}; documented stricter than root kernel: {n_strict}; run-compared: {n_runs}",
        cases.len()
    );
    assert!(failures.is_empty(), "{} disagreements:\n{}", failures.len(), failures.join("\n"));
}
