//! `sluice bpf`: verify, disassemble, run and benchmark eBPF filter programs
//! (ELF objects built with `clang -O2 -g -target bpf -c prog.c`).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{anyhow, Context};
use sluice_bpf::helpers::Env;
use sluice_bpf::interp::{self, Input};
use sluice_bpf::maps::Map;
use sluice_bpf::{elf, insn, jit, pcap, verifier, Program};

/// Arguments of `sluice bpf`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// `sluice bpf` subcommands.
#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Verify a program: prints OK or the rejection with the instruction.
    Verify {
        /// ELF object (`clang -O2 -g -target bpf -c prog.c -o prog.o`).
        object: PathBuf,
        /// Program section (default: the first).
        #[arg(long)]
        section: Option<String>,
        /// Also load it into the running kernel and print the kernel verifier's verdict.
        #[arg(long)]
        kernel: bool,
    },
    /// Disassemble all programs of an object.
    Dump {
        /// ELF object (`clang -O2 -g -target bpf -c prog.c -o prog.o`).
        object: PathBuf,
    },
    /// Run a program on every packet of a pcap: `PACKET_INDEX RETURN_VALUE`
    /// per packet, then the map contents.
    Run {
        /// ELF object (`clang -O2 -g -target bpf -c prog.c -o prog.o`).
        object: PathBuf,
        /// The packets, a pcap file (each one is the program's context).
        #[arg(long)]
        pcap: PathBuf,
        /// Use the Cranelift JIT instead of the interpreter.
        #[arg(long)]
        jit: bool,
        /// Program section (default: the first).
        #[arg(long)]
        section: Option<String>,
    },
    /// Packets per second, interpreter vs JIT, over a pcap (repeated).
    Bench {
        /// ELF object (`clang -O2 -g -target bpf -c prog.c -o prog.o`).
        object: PathBuf,
        /// The packets, a pcap file, run over and over.
        #[arg(long)]
        pcap: PathBuf,
        /// Program section (default: the first).
        #[arg(long)]
        section: Option<String>,
        /// Passes over the pcap per measurement (0, the default: enough
        /// for about 200 000 packets).
        #[arg(long, default_value_t = 0)]
        rounds: u32,
    },
}

fn read(path: &PathBuf) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

fn pick(progs: Vec<Program>, section: Option<&str>) -> anyhow::Result<Program> {
    match section {
        Some(s) => {
            progs.into_iter().find(|p| p.name == s).ok_or_else(|| anyhow!("no program section {s}"))
        }
        None => progs.into_iter().next().ok_or_else(|| anyhow!("no program")),
    }
}

fn new_env(p: &Program) -> anyhow::Result<Env> {
    let maps = p
        .maps
        .iter()
        .map(|d| Map::new(d.clone(), 1))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow!(e))?;
    Ok(Env::new(maps))
}

/// The error for packet `i`'s run ending in fault `f` (`what`: which
/// engine's, or just "fault").
fn fault(i: usize, what: &str, f: interp::Fault) -> anyhow::Error {
    anyhow!("packet {i}: {what} at insn {}: {}", f.pc, f.reason)
}

/// One untimed pass of the interpreter and the JIT side by side, each
/// with its own maps and the same fixed clock per packet: an interpreter
/// fault, a JIT fault, a different return value or different final map
/// contents is an error naming the packet or the map.
fn agree(p: &Program, j: &jit::Jitted, packets: &[Vec<u8>]) -> anyhow::Result<()> {
    let (mut ei, mut ej) = (new_env(p)?, new_env(p)?);
    for (i, pkt) in packets.iter().enumerate() {
        let now = sluice_bpf::helpers::Clock::Fixed(1_000_000 * (i as u64 + 1));
        ei.clock = now;
        ej.clock = now;
        let ri = interp::run(&p.insns, p.prog_type, &mut ei, Input::packet(pkt))
            .map_err(|f| fault(i, "interpreter fault", f))?;
        let rj = j.try_run(&mut ej, Input::packet(pkt)).map_err(|f| fault(i, "JIT fault", f))?;
        if ri != rj {
            anyhow::bail!("packet {i}: the interpreter returned {ri}, the JIT {rj}");
        }
    }
    for (mi, mj) in ei.maps.iter().zip(&ej.maps) {
        if mi.entries() != mj.entries() {
            anyhow::bail!(
                "map {}: the interpreter and the JIT left different contents",
                mi.def.name
            );
        }
    }
    Ok(())
}

fn print_maps(env: &Env) {
    for m in &env.maps {
        println!("map {} (type {}):", m.def.name, m.def.map_type);
        for (k, v) in m.entries() {
            println!("  {} => {}", hex::encode(k), hex::encode(v));
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.cmd {
        Cmd::Verify { object, section, kernel } => {
            let progs = elf::load(&read(&object)?)?;
            let p = pick(progs, section.as_deref())?;
            let res = verifier::verify(&p);
            match &res {
                Ok(v) => {
                    println!("{}: OK ({} insns, {} processed)", p.name, p.insns.len(), v.processed)
                }
                Err(e) => {
                    let line = p
                        .insns
                        .get(e.pc)
                        .map(|i| insn::disasm(i, p.insns.get(e.pc + 1)))
                        .unwrap_or_default();
                    println!(
                        "{}: REJECTED at insn {}: {}\n  {:4}: {}",
                        p.name, e.pc, e.reason, e.pc, line
                    );
                }
            }
            if kernel {
                match sluice_bpf::kernel::load(&p, sluice_bpf::kernel::Mode::Root) {
                    Ok(_) => println!("kernel: OK"),
                    Err(log) => println!("kernel: REJECTED\n{log}"),
                }
            }
            if res.is_err() {
                anyhow::bail!("program rejected");
            }
            Ok(())
        }
        Cmd::Dump { object } => {
            for p in elf::load(&read(&object)?)? {
                println!("{} ({:?}):", p.name, p.prog_type);
                for (i, m) in p.maps.iter().enumerate() {
                    println!(
                        "  map[{i}] {}: type {} key {} value {} max_entries {}",
                        m.name, m.map_type, m.key_size, m.value_size, m.max_entries
                    );
                }
                print!("{}", insn::disasm_program(&p.insns));
            }
            Ok(())
        }
        Cmd::Run { object, pcap: pc, jit: use_jit, section } => {
            let p = pick(elf::load(&read(&object)?)?, section.as_deref())?;
            let v = verifier::verify(&p).map_err(|e| anyhow!("{}: rejected: {e}", p.name))?;
            let packets = pcap::read(&read(&pc)?).map_err(|e| anyhow!(e))?;
            let mut env = new_env(&p)?;
            let compiled =
                if use_jit { Some(jit::compile(&p, &v).map_err(|e| anyhow!(e))?) } else { None };
            for (i, pkt) in packets.iter().enumerate() {
                let input = Input::packet(pkt);
                let r = match &compiled {
                    Some(j) => j.try_run(&mut env, input),
                    None => interp::run(&p.insns, p.prog_type, &mut env, input),
                }
                .map_err(|f| fault(i, "fault", f))?;
                println!("{i} {r}");
            }
            print_maps(&env);
            for line in &env.trace {
                println!("trace: {line}");
            }
            Ok(())
        }
        Cmd::Bench { object, pcap: pc, section, rounds } => {
            let p = pick(elf::load(&read(&object)?)?, section.as_deref())?;
            let v = verifier::verify(&p).map_err(|e| anyhow!("{}: rejected: {e}", p.name))?;
            let packets = pcap::read(&read(&pc)?).map_err(|e| anyhow!(e))?;
            if packets.is_empty() {
                anyhow::bail!("empty pcap");
            }
            let rounds = if rounds == 0 { (200_000 / packets.len()).max(1) as u32 } else { rounds };
            let j = jit::compile(&p, &v).map_err(|e| anyhow!(e))?;
            agree(&p, &j, &packets)?;
            let total = packets.len() as f64 * rounds as f64;
            let mut env = new_env(&p)?;
            let t = Instant::now();
            let mut sink = 0u64;
            for _ in 0..rounds {
                for (i, pkt) in packets.iter().enumerate() {
                    let r = interp::run(&p.insns, p.prog_type, &mut env, Input::packet(pkt))
                        .map_err(|f| fault(i, "interpreter fault", f))?;
                    sink = sink.wrapping_add(r);
                }
            }
            let ti = t.elapsed().as_secs_f64();
            let mut env = new_env(&p)?;
            let t = Instant::now();
            for _ in 0..rounds {
                for (i, pkt) in packets.iter().enumerate() {
                    let r = j
                        .try_run(&mut env, Input::packet(pkt))
                        .map_err(|f| fault(i, "JIT fault", f))?;
                    sink = sink.wrapping_add(r);
                }
            }
            let tj = t.elapsed().as_secs_f64();
            let (mi, mj) = (total / ti / 1e6, total / tj / 1e6);
            println!(
                "{}: {} packets x {rounds} rounds (checksum {sink:#x}); interpreter and JIT \
                 agree on every return value and the final maps",
                p.name,
                packets.len()
            );
            println!("interpreter: {mi:.2} Mpps ({:.0} ns/packet)", ti * 1e9 / total);
            println!("jit:         {mj:.2} Mpps ({:.0} ns/packet)", tj * 1e9 / total);
            println!("speedup:     {:.1}x", mj / mi);
            Ok(())
        }
    }
}
