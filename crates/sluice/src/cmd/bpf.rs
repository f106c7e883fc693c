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
    ///
    /// First one untimed pass runs both engines on every packet: a
    /// different return value (or one engine faulting where the other does
    /// not) is an error naming the packet and both answers. Faults are
    /// counted per engine, in that pass and in the timed ones, and
    /// reported; any fault makes the command fail unless
    /// `--faults-expected` is given.
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
        /// Faults are expected: report them but exit 0 (the interpreter
        /// and the JIT must still agree on which packets fault).
        #[arg(long)]
        faults_expected: bool,
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

/// How one packet's runs ended, in words: the value, or the fault.
fn outcome(r: &Result<u64, interp::Fault>) -> String {
    match r {
        Ok(v) => format!("returned {v}"),
        Err(f) => format!("faulted at insn {} ({})", f.pc, f.reason),
    }
}

/// Faults seen by one engine: how many, and the first (packet, fault).
#[derive(Debug, Default)]
struct Faults {
    count: u64,
    first: Option<(usize, interp::Fault)>,
}

impl Faults {
    /// Counts `r` if it is a fault (of packet `i`); its value otherwise.
    fn note(&mut self, i: usize, r: Result<u64, interp::Fault>) -> u64 {
        match r {
            Ok(v) => v,
            Err(f) => {
                self.count += 1;
                self.first.get_or_insert((i, f));
                0
            }
        }
    }

    fn report(&self, engine: &str) -> String {
        match &self.first {
            None => format!("{engine} faults: 0"),
            Some((i, f)) => format!(
                "{engine} faults: {} (first: packet {i} at insn {}: {})",
                self.count, f.pc, f.reason
            ),
        }
    }
}

/// The bench's exit: an error if either engine faulted, unless the
/// faults are expected.
fn verdict(fi: &Faults, fj: &Faults, faults_expected: bool) -> anyhow::Result<()> {
    if (fi.count > 0 || fj.count > 0) && !faults_expected {
        anyhow::bail!(
            "{} interpreter and {} JIT faults (pass --faults-expected if the program is meant \
             to fault)",
            fi.count,
            fj.count
        );
    }
    Ok(())
}

/// Packet `i`'s interpreter and JIT outcomes must be the same: equal
/// values, or both a fault (the fault's pc and wording may differ between
/// engines). A mismatch is an error naming the packet and both outcomes.
fn compare(
    i: usize,
    ri: &Result<u64, interp::Fault>,
    rj: &Result<u64, interp::Fault>,
) -> anyhow::Result<()> {
    let same = match (ri, rj) {
        (Ok(a), Ok(b)) => a == b,
        (Err(_), Err(_)) => true,
        _ => false,
    };
    if !same {
        anyhow::bail!("packet {i}: the interpreter {}, the JIT {}", outcome(ri), outcome(rj));
    }
    Ok(())
}

/// One untimed pass of the interpreter and the JIT side by side, each
/// with its own maps and the same fixed clock per packet: every packet's
/// outcomes are compared ([`compare`]) and the final map contents too;
/// faults are counted into `fi` (interpreter) and `fj` (JIT).
fn agree(
    p: &Program,
    j: &jit::Jitted,
    packets: &[Vec<u8>],
    fi: &mut Faults,
    fj: &mut Faults,
) -> anyhow::Result<()> {
    let (mut ei, mut ej) = (new_env(p)?, new_env(p)?);
    for (i, pkt) in packets.iter().enumerate() {
        let now = sluice_bpf::helpers::Clock::Fixed(1_000_000 * (i as u64 + 1));
        ei.clock = now;
        ej.clock = now;
        let ri = interp::run(&p.insns, p.prog_type, &mut ei, Input::packet(pkt));
        let rj = j.try_run(&mut ej, Input::packet(pkt));
        compare(i, &ri, &rj)?;
        fi.note(i, ri);
        fj.note(i, rj);
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
        Cmd::Bench { object, pcap: pc, section, rounds, faults_expected } => {
            let p = pick(elf::load(&read(&object)?)?, section.as_deref())?;
            let v = verifier::verify(&p).map_err(|e| anyhow!("{}: rejected: {e}", p.name))?;
            let packets = pcap::read(&read(&pc)?).map_err(|e| anyhow!(e))?;
            if packets.is_empty() {
                anyhow::bail!("empty pcap");
            }
            let rounds = if rounds == 0 { (200_000 / packets.len()).max(1) as u32 } else { rounds };
            let j = jit::compile(&p, &v).map_err(|e| anyhow!(e))?;
            let (mut fi, mut fj) = (Faults::default(), Faults::default());
            agree(&p, &j, &packets, &mut fi, &mut fj)?;
            let total = packets.len() as f64 * rounds as f64;
            let mut env = new_env(&p)?;
            let t = Instant::now();
            let mut sink = 0u64;
            for _ in 0..rounds {
                for (i, pkt) in packets.iter().enumerate() {
                    let r = interp::run(&p.insns, p.prog_type, &mut env, Input::packet(pkt));
                    sink = sink.wrapping_add(fi.note(i, r));
                }
            }
            let ti = t.elapsed().as_secs_f64();
            let mut env = new_env(&p)?;
            let t = Instant::now();
            for _ in 0..rounds {
                for (i, pkt) in packets.iter().enumerate() {
                    sink = sink.wrapping_add(fj.note(i, j.try_run(&mut env, Input::packet(pkt))));
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
            println!("{}", fi.report("interpreter"));
            println!("{}", fj.report("jit"));
            println!("interpreter: {mi:.2} Mpps ({:.0} ns/packet)", ti * 1e9 / total);
            println!("jit:         {mj:.2} Mpps ({:.0} ns/packet)", tj * 1e9 / total);
            println!("speedup:     {:.1}x", mj / mi);
            verdict(&fi, &fj, faults_expected)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(pc: usize) -> Result<u64, interp::Fault> {
        Err(interp::Fault { pc, reason: "memory access out of bounds".into() })
    }

    #[test]
    fn compare_names_the_packet_and_both_answers() {
        assert!(compare(0, &Ok(2), &Ok(2)).is_ok());
        assert!(compare(0, &f(3), &f(7)).is_ok(), "both faulted: the same outcome");
        let e = compare(41, &Ok(1), &Ok(2)).unwrap_err().to_string();
        assert_eq!(e, "packet 41: the interpreter returned 1, the JIT returned 2");
        let e = compare(5, &f(3), &Ok(0)).unwrap_err().to_string();
        assert!(e.starts_with("packet 5: the interpreter faulted at insn 3"), "{e}");
        assert!(e.ends_with("the JIT returned 0"), "{e}");
        let e = compare(6, &Ok(9), &f(4)).unwrap_err().to_string();
        assert!(e.contains("returned 9") && e.contains("JIT faulted at insn 4"), "{e}");
    }

    #[test]
    fn faults_are_counted_with_the_first() {
        let mut t = Faults::default();
        assert_eq!(t.report("interpreter"), "interpreter faults: 0");
        assert_eq!(t.note(0, Ok(7)), 7);
        t.note(3, f(11));
        t.note(4, f(12));
        assert_eq!(t.count, 2);
        let none = Faults::default();
        assert!(verdict(&none, &none, false).is_ok());
        let e = verdict(&none, &t, false).unwrap_err().to_string();
        assert!(e.starts_with("0 interpreter and 2 JIT faults"), "{e}");
        assert!(verdict(&t, &none, false).is_err());
        assert!(verdict(&t, &t, true).is_ok(), "--faults-expected");
        assert_eq!(
            t.report("jit"),
            "jit faults: 2 (first: packet 3 at insn 11: memory access out of bounds)"
        );
    }
}
