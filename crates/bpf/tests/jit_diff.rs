//! Interpreter vs JIT differential property test over random *verified*
//! programs, plus smoke runs of the fuzz entry points on random input.
//!
//! The generator builds programs that are likely to pass the verifier:
//! a packet guard, scalar registers r0 and r4-r8, the checked data
//! pointer kept in r9; random ALU (64/32-bit, register/immediate, all ops),
//! byte swaps, stack spills/fills, packet loads, forward conditional jumps
//! (to operation boundaries) and map lookups/updates with NULL checks.
//! Programs the verifier rejects are skipped (and counted).

use proptest::prelude::*;
use sluice_bpf::asm::*;
use sluice_bpf::helpers::{Clock, Env};
use sluice_bpf::insn::Insn;
use sluice_bpf::interp::{self, Input};
use sluice_bpf::maps::{Map, MapDef, BPF_MAP_TYPE_ARRAY, BPF_MAP_TYPE_HASH};
use sluice_bpf::{jit, prog, verifier, ProgType, Program};

const SC: [u8; 6] = [0, 4, 5, 6, 7, 8];
const ALU: [u8; 13] = [
    op::ADD,
    op::SUB,
    op::MUL,
    op::DIV,
    op::OR,
    op::AND,
    op::LSH,
    op::RSH,
    op::NEG,
    op::MOD,
    op::XOR,
    op::MOV,
    op::ARSH,
];
const JMP: [u8; 11] =
    [j::JEQ, j::JGT, j::JGE, j::JSET, j::JNE, j::JSGT, j::JSGE, j::JLT, j::JLE, j::JSLT, j::JSLE];

#[derive(Clone, Debug)]
enum Op {
    Alu { wide: bool, op: usize, dst: usize, src: Option<usize>, imm: i32 },
    Swap { dst: usize, be: bool, w: usize },
    Spill { reg: usize, slot: u8 },
    Fill { reg: usize, slot: u8 },
    PktLoad { reg: usize, size: usize, off: u8 },
    Jump { wide: bool, op: usize, dst: usize, src: Option<usize>, imm: i32, skip: u8 },
    MapLookup { map: bool, key: usize, store: usize },
    MapUpdate { map: bool, key: usize, val: usize },
    Atomic { op: usize, wide: bool, reg: usize, slot: u8 },
}

const ATOMIC: [i32; 10] = [0x00, 0x40, 0x50, 0xa0, 0x01, 0x41, 0x51, 0xa1, 0xe1, 0xf1];

fn op_strategy() -> impl Strategy<Value = Op> {
    let r = || 0..SC.len();
    let imm = prop_oneof![any::<i32>(), -4i32..64];
    prop_oneof![
        4 => (any::<bool>(), 0..ALU.len(), r(), prop::option::of(r()), imm.clone())
            .prop_map(|(wide, op, dst, src, imm)| Op::Alu { wide, op, dst, src, imm }),
        1 => (r(), any::<bool>(), 0..3usize).prop_map(|(dst, be, w)| Op::Swap { dst, be, w }),
        1 => (r(), 1..8u8).prop_map(|(reg, slot)| Op::Spill { reg, slot }),
        1 => (r(), 1..8u8).prop_map(|(reg, slot)| Op::Fill { reg, slot }),
        2 => (r(), 0..4usize, 0..56u8).prop_map(|(reg, size, off)| Op::PktLoad { reg, size, off }),
        2 => (any::<bool>(), 0..JMP.len(), r(), prop::option::of(r()), imm, 1..6u8)
            .prop_map(|(wide, op, dst, src, imm, skip)| Op::Jump { wide, op, dst, src, imm, skip }),
        1 => (any::<bool>(), r(), r()).prop_map(|(map, key, store)| Op::MapLookup { map, key, store }),
        1 => (any::<bool>(), r(), r()).prop_map(|(map, key, val)| Op::MapUpdate { map, key, val }),
        1 => (0..ATOMIC.len(), any::<bool>(), r(), 1..8u8).prop_map(|(op, wide, reg, slot)| Op::Atomic { op, wide, reg, slot }),
    ]
}

fn sizes(i: usize) -> u8 {
    [sz::B, sz::H, sz::W, sz::DW][i % 4]
}

fn emit(o: &Op) -> Vec<Insn> {
    match *o {
        Op::Alu { wide, op, dst, src, imm } => {
            let (d, opc) = (SC[dst], ALU[op]);
            let mut imm = imm;
            if matches!(opc, op::LSH | op::RSH | op::ARSH) {
                imm = imm.rem_euclid(if wide { 64 } else { 32 });
            }
            if matches!(opc, op::DIV | op::MOD) && imm == 0 {
                imm = 3;
            }
            match (src, wide) {
                _ if opc == op::NEG => {
                    vec![if wide { alu64_imm(opc, d, 0) } else { alu32_imm(opc, d, 0) }]
                }
                (Some(s), true) => vec![alu64_reg(opc, d, SC[s])],
                (Some(s), false) => vec![alu32_reg(opc, d, SC[s])],
                (None, true) => vec![alu64_imm(opc, d, imm)],
                (None, false) => vec![alu32_imm(opc, d, imm)],
            }
        }
        Op::Swap { dst, be, w } => vec![endian(be, SC[dst], [16, 32, 64][w])],
        Op::Spill { reg, slot } => vec![stx(sz::DW, 10, SC[reg], -8 * slot as i16)],
        Op::Fill { reg, slot } => vec![ldx(sz::DW, SC[reg], 10, -8 * slot as i16)],
        Op::PktLoad { reg, size, off } => vec![ldx(sizes(size), SC[reg], 9, off as i16)],
        Op::Jump { .. } => vec![], // patched by the caller
        Op::Atomic { op, wide, reg, slot } => {
            let size = if wide { sz::DW } else { sz::W };
            vec![Insn::new(0x03 | 0xc0 | size, 10, SC[reg], -8 * slot as i16, ATOMIC[op])]
        }
        Op::MapLookup { map, key, store } => {
            let (vs, m) = if map { (16, 1) } else { (8, 0) };
            let _ = vs;
            prog![
                stx(sz::DW, 10, SC[key], -64),
                ld_map(1, m),
                mov64_reg(2, 10),
                alu64_imm(op::ADD, 2, -64),
                call(1),
                mov64_imm(4, 0),
                mov64_imm(5, 0),
                jmp_imm(j::JEQ, 0, 0, 3),
                ldx(sz::DW, 4, 0, 0),
                alu64_imm(op::ADD, 4, 1),
                stx(sz::DW, 0, 4, 0),
                mov64_reg(0, 4),
                if store == 0 { mov64_imm(0, 0) } else { mov64_reg(SC[store], 4) },
            ]
        }
        Op::MapUpdate { map, key, val } => {
            let m = if map { 1 } else { 0 };
            prog![
                stx(sz::DW, 10, SC[key], -64),
                stx(sz::DW, 10, SC[val], -80),
                stx(sz::DW, 10, SC[key], -72),
                ld_map(1, m),
                mov64_reg(2, 10),
                alu64_imm(op::ADD, 2, -64),
                mov64_reg(3, 10),
                alu64_imm(op::ADD, 3, -80),
                mov64_imm(4, 0),
                call(2),
                mov64_imm(4, 0),
                mov64_imm(5, 0),
            ]
        }
    }
}

fn build(ops: &[Op]) -> Vec<Insn> {
    let mut v = prog![
        ldx(sz::W, 2, 1, 0),
        ldx(sz::W, 3, 1, 4),
        mov64_reg(9, 2),
        alu64_imm(op::ADD, 2, 64),
        mov64_imm(0, 0),
        jmp_reg(j::JGT, 2, 3, 0), // patched: to the final exit
        ldx(sz::DW, 0, 9, 0),
        ldx(sz::DW, 4, 9, 8),
        ldx(sz::DW, 5, 9, 16),
        ldx(sz::W, 6, 9, 24),
        ldx(sz::H, 7, 9, 28),
        ldx(sz::B, 8, 9, 30),
    ];
    for k in 1..8 {
        v.push(stx(sz::DW, 10, SC[k % 6], -8 * k as i16));
    }
    let blocks: Vec<Vec<Insn>> = ops.iter().map(emit).collect();
    // Start index of every block (jumps have length 1).
    let mut starts = Vec::new();
    let mut at = v.len();
    for (b, o) in blocks.iter().zip(ops) {
        starts.push(at);
        at += if matches!(o, Op::Jump { .. }) { 1 } else { b.len() };
    }
    starts.push(at);
    for (k, (b, o)) in blocks.into_iter().zip(ops).enumerate() {
        if let Op::Jump { wide, op, dst, src, imm, skip } = *o {
            let target = starts[(k + 1 + skip as usize).min(ops.len())];
            let off = (target - starts[k] - 1) as i16;
            let (d, opc) = (SC[dst], JMP[op]);
            v.push(match (src, wide) {
                (Some(s), true) => jmp_reg(opc, d, SC[s], off),
                (Some(s), false) => jmp32_reg(opc, d, SC[s], off),
                (None, true) => jmp_imm(opc, d, imm, off),
                (None, false) => jmp32_imm(opc, d, imm, off),
            });
        } else {
            v.extend(b);
        }
    }
    v.push(exit());
    let last = v.len() - 1;
    v[5] = jmp_reg(j::JGT, 2, 3, (last - 6) as i16);
    v
}

fn maps() -> Vec<MapDef> {
    vec![
        MapDef {
            name: "a".into(),
            map_type: BPF_MAP_TYPE_ARRAY,
            key_size: 4,
            value_size: 8,
            max_entries: 16,
            flags: 0,
        },
        MapDef {
            name: "h".into(),
            map_type: BPF_MAP_TYPE_HASH,
            key_size: 8,
            value_size: 16,
            max_entries: 8,
            flags: 0,
        },
    ]
}

fn env() -> Env {
    let mut e = Env::new(maps().into_iter().map(|d| Map::new(d, 1).unwrap()).collect());
    e.clock = Clock::Fixed(5);
    e
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn interpreter_and_jit_agree(ops in prop::collection::vec(op_strategy(), 1..40),
                                 pkts in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..120), 1..5)) {
        let prog = Program { name: "rand".into(), prog_type: ProgType::Xdp, insns: build(&ops), maps: maps() };
        let Ok(v) = verifier::verify(&prog) else { return Ok(()); };
        let j = jit::compile(&prog, &v).unwrap();
        let (mut ei, mut ej) = (env(), env());
        for p in &pkts {
            let input = Input::packet(p);
            let r = interp::run(&prog.insns, prog.prog_type, &mut ei, input);
            prop_assert!(r.is_ok(), "verified program faulted: {:?}\n{}", r, sluice_bpf::insn::disasm_program(&prog.insns));
            prop_assert_eq!(r.unwrap_or(0), j.run(&mut ej, input), "\n{}", sluice_bpf::insn::disasm_program(&prog.insns));
        }
        for (a, b) in ei.maps.iter().zip(&ej.maps) {
            prop_assert_eq!(a.entries(), b.entries());
        }
    }

    #[test]
    fn fuzz_verify_run_never_breaks(data in prop::collection::vec(any::<u8>(), 0..400)) {
        sluice_bpf::fuzz_verify_run(&data);
    }

    #[test]
    fn fuzz_load_never_panics(data in prop::collection::vec(any::<u8>(), 0..600)) {
        sluice_bpf::fuzz_load(&data);
    }
}

/// Most generated programs must pass the verifier, or the property test
/// above would be vacuous.
#[test]
fn generator_mostly_verifies() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strat = prop::collection::vec(op_strategy(), 1..40);
    let (mut ok, mut total) = (0, 0);
    let mut reasons = std::collections::BTreeMap::<String, usize>::new();
    for _ in 0..300 {
        let ops = strat.new_tree(&mut runner).unwrap().current();
        let prog = Program {
            name: "rand".into(),
            prog_type: ProgType::Xdp,
            insns: build(&ops),
            maps: maps(),
        };
        total += 1;
        match verifier::verify(&prog) {
            Ok(_) => ok += 1,
            Err(e) => {
                *reasons.entry(e.reason.split(':').next().unwrap_or("").to_string()).or_default() +=
                    1
            }
        }
    }
    println!("{ok}/{total} generated programs verified; rejections: {reasons:?}");
    assert!(ok * 2 > total, "only {ok}/{total} verified: {reasons:?}");
}

/// Mutated clang objects through the loader (no panic, bounded time).
#[test]
fn fuzz_load_mutated_objects() {
    let obj = std::process::Command::new("clang")
        .args(["-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c", "-o", "-"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/bpf/tcp_firewall.c"))
        .output();
    let out = obj.expect("clang not available (scripts/install-deps installs it)");
    let base = out.stdout;
    assert!(base.len() > 100);
    sluice_bpf::fuzz_load(&base);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..2000 {
        let mut m = base.clone();
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let at = (x as usize) % m.len();
            m[at] = (x >> 32) as u8;
        }
        sluice_bpf::fuzz_load(&m);
    }
}
