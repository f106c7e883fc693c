//! eBPF filter-program engine: ELF loader, verifier, maps, helpers, interpreter and JIT.
//!
//! What? Oko-style stateful *filter programs*: a program gets a packet,
//! may read and update persistent maps, and returns a value (non-zero =
//! match). It can never write the packet. The pipeline is
//!
//! ```text
//! ELF object (clang -target bpf) --elf--> Program {insns, maps}
//!        --verifier--> Verified (per-instruction facts for the JIT)
//!        --interp / jit--> return value, map updates
//! ```
//!
//! Modules: [`insn`] (decode, disassemble), [`elf`] (loader, BTF map
//! definitions, map relocations), [`maps`] (Linux map types),
//! [`helpers`] (Linux helper ids, runtime [`helpers::Env`]), [`verifier`]
//! (the safety argument), [`interp`] (reference semantics, checked
//! accesses), [`jit`] (Cranelift), [`kernel`] (Linux `bpf()` syscall, used
//! as the test oracle), [`corpus`] (programs and packets for the oracle and
//! differential tests), [`asm`] (instruction builders), [`pcap`].
//!
//! Testing: `tests/kernel_oracle.rs` compares verdicts, return values and
//! map contents with the running kernel over the corpus;
//! `tests/examples.rs` does the same for the clang-built examples in
//! `examples/bpf/`; `tests/jit_diff.rs` is the interpreter-vs-JIT property
//! test. [`fuzz_load`] and [`fuzz_verify_run`] are the fuzz entry points.
//!
//! Unsafe code lives in two modules only: [`jit`] (entering native code,
//! helper trampoline) and [`kernel`] (syscalls).
//!
//! Program types: [`ProgType::Xdp`] (context `struct xdp_md`, direct packet
//! access through `data`/`data_end`, as in Linux XDP) and
//! [`ProgType::SocketFilter`] (context `struct __sk_buff` with `len`,
//! packet access with `LD_ABS`/`LD_IND` only, as in Linux socket filters).
//! The packet length a program sees is always the length of the packet it
//! was given (Oko passed a wrong one).

pub mod asm;
pub mod corpus;
pub mod elf;
pub mod helpers;
pub mod insn;
pub mod interp;
pub mod jit;
#[cfg(target_os = "linux")]
pub mod kernel;
pub mod maps;
pub mod pcap;
pub mod verifier;

use insn::Insn;

/// Which context and packet-access rules a program follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProgType {
    /// `BPF_PROG_TYPE_XDP` (6).
    Xdp,
    /// `BPF_PROG_TYPE_SOCKET_FILTER` (1).
    SocketFilter,
}

impl ProgType {
    /// The Linux program type number.
    pub fn linux_number(self) -> u32 {
        match self {
            ProgType::Xdp => 6,
            ProgType::SocketFilter => 1,
        }
    }
}

/// A loaded (not yet verified) program: instructions plus the maps it
/// references. `LDDW` instructions with `src == 1` carry an index into
/// `maps` as immediate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    pub name: String,
    pub prog_type: ProgType,
    pub insns: Vec<Insn>,
    pub maps: Vec<maps::MapDef>,
}

/// Loads an object, verifies its first program (or the one named
/// `section`), and returns it with the verification result.
pub fn load_and_verify(
    object: &[u8],
    section: Option<&str>,
) -> Result<(Program, verifier::Verified), String> {
    let progs = elf::load(object).map_err(|e| e.to_string())?;
    let prog = match section {
        Some(s) => progs
            .into_iter()
            .find(|p| p.name == s)
            .ok_or_else(|| format!("no program section {s}"))?,
        None => progs.into_iter().next().ok_or("no program")?,
    };
    let v = verifier::verify(&prog).map_err(|e| format!("{}: rejected: {e}", prog.name))?;
    Ok((prog, v))
}

/// Fuzz entry: arbitrary bytes as an ELF object. Must never panic.
pub fn fuzz_load(data: &[u8]) {
    if let Ok(progs) = elf::load(data) {
        for p in &progs {
            let _ = insn::disasm_program(&p.insns);
            let _ = verifier::verify(p);
        }
    }
}

/// Fuzz entry: arbitrary bytes as an instruction stream (first byte picks
/// the program type, the next 4 a map layout). The verifier must reject it
/// or it must run without fault in the interpreter and give the same
/// result in the JIT: a fault or a disagreement after acceptance is a bug
/// and panics (that is what the fuzzer looks for).
pub fn fuzz_verify_run(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else { return };
    let prog_type = if sel & 1 == 0 { ProgType::Xdp } else { ProgType::SocketFilter };
    let (insns, _) = insn::decode_all(rest);
    let maps = vec![
        maps::MapDef {
            name: "a".into(),
            map_type: maps::BPF_MAP_TYPE_ARRAY,
            key_size: 4,
            value_size: 8,
            max_entries: 4,
            flags: 0,
        },
        maps::MapDef {
            name: "h".into(),
            map_type: maps::BPF_MAP_TYPE_HASH,
            key_size: 4,
            value_size: 16,
            max_entries: 4,
            flags: 0,
        },
    ];
    let prog = Program { name: "fuzz".into(), prog_type, insns, maps };
    let Ok(v) =
        verifier::verify_with(&prog, verifier::Config { max_insns: 4096, max_processed: 100_000 })
    else {
        return;
    };
    let jit = if sel & 2 != 0 { jit::compile(&prog, &v).ok() } else { None };
    let new_env = || {
        let ms = prog.maps.iter().filter_map(|d| maps::Map::new(d.clone(), 1).ok()).collect();
        let mut e = helpers::Env::new(ms);
        e.clock = helpers::Clock::Fixed(7);
        e
    };
    let (mut e1, mut e2) = (new_env(), new_env());
    for pkt in corpus::packets() {
        let input = interp::Input::packet(&pkt);
        let r = interp::run(&prog.insns, prog_type, &mut e1, input);
        let r = match r {
            Ok(r) => r,
            Err(f) => panic!(
                "verifier accepted a program that faults: {f:?}\n{}",
                insn::disasm_program(&prog.insns)
            ),
        };
        if let Some(j) = &jit {
            let jr = j.run(&mut e2, input);
            assert_eq!(
                r,
                jr,
                "interpreter and JIT disagree\n{}",
                insn::disasm_program(&prog.insns)
            );
        }
    }
}
