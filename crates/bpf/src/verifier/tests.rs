//! One test per verifier rule (numbers as in the module doc), each with
//! programs that must be accepted and programs that must be rejected, and
//! the instruction index of the rejection.

use super::*;
use crate::asm::endian as bswap;
use crate::asm::*;
use crate::maps::{MapDef, BPF_MAP_TYPE_ARRAY, BPF_MAP_TYPE_HASH};
use crate::prog;

fn p(insns: Vec<Insn>) -> Program {
    pt(ProgType::Xdp, insns)
}
fn pt(t: ProgType, insns: Vec<Insn>) -> Program {
    Program {
        name: "t".into(),
        prog_type: t,
        insns,
        maps: vec![
            MapDef {
                name: "a".into(),
                map_type: BPF_MAP_TYPE_ARRAY,
                key_size: 4,
                value_size: 8,
                max_entries: 4,
                flags: 0,
            },
            MapDef {
                name: "h".into(),
                map_type: BPF_MAP_TYPE_HASH,
                key_size: 8,
                value_size: 16,
                max_entries: 4,
                flags: 0,
            },
        ],
    }
}
fn ok(insns: Vec<Insn>) {
    let prog = p(insns);
    if let Err(e) = verify(&prog) {
        panic!("rejected: {e}\n{}", crate::insn::disasm_program(&prog.insns));
    }
}
/// Must be rejected at `pc` with a reason containing `why`.
fn bad(insns: Vec<Insn>, pc: usize, why: &str) {
    bad_t(ProgType::Xdp, insns, pc, why)
}
fn bad_t(t: ProgType, insns: Vec<Insn>, pc: usize, why: &str) {
    match verify(&pt(t, insns)) {
        Ok(_) => panic!("accepted, expected rejection at {pc}: {why}"),
        Err(e) => {
            assert_eq!(e.pc, pc, "{e}");
            assert!(e.reason.contains(why), "reason {:?} does not contain {why:?}", e.reason);
        }
    }
}
/// r2 = data, r3 = data_end, checked for `n` bytes (fall-through = in bounds).
fn pkt(n: i32) -> Vec<Insn> {
    prog![
        ldx(sz::W, 2, 1, 0),
        ldx(sz::W, 3, 1, 4),
        mov64_reg(4, 2),
        alu64_imm(op::ADD, 4, n),
        mov64_imm(0, 0),
        jmp_reg(j::JGT, 4, 3, 100),
    ]
}
/// Appends an exit at the jump target of `pkt` (offset 100 from insn 5).
fn pkt_prog(n: i32, body: Vec<Insn>) -> Vec<Insn> {
    let mut v = pkt(n);
    let after = v.len();
    v.extend(body);
    v.push(mov64_imm(0, 0));
    v.push(exit());
    let target = 5 + 1 + 100;
    if v.len() > target {
        panic!("body too long");
    }
    // Retarget the guard to the final `exit`.
    v[5] = jmp_reg(j::JGT, 4, 3, (v.len() - 1 - 6) as i16);
    let _ = after;
    v
}
fn key_fp(k: i32) -> Vec<Insn> {
    prog![st(sz::W, 10, -4, k), mov64_reg(2, 10), alu64_imm(op::ADD, 2, -4)]
}

#[test]
fn rule_size() {
    bad(vec![], 0, "empty");
    let mut big = vec![mov64_imm(0, 0); 4096];
    big.push(exit());
    bad(big, 4096, "too large");
    let mut fits = vec![mov64_imm(0, 0); 4095];
    fits.push(exit());
    ok(fits);
}

#[test]
fn rule_opcodes() {
    bad(prog![Insn::new(0xff, 0, 0, 0, 0), exit()], 0, "opcode");
    bad(prog![Insn::new(0x8f, 0, 0, 0, 0), exit()], 0, "reserved"); // neg with X
    bad(prog![Insn::new(0xbf, 0, 1, 0, 5), exit()], 0, "reserved"); // mov X with imm
    bad(prog![Insn::new(0xbf, 0, 1, 8, 0), exit()], 0, "v4"); // movsx
    bad(prog![Insn::new(0xdb, 1, 2, 0, 0x10), mov64_imm(0, 0), exit()], 0, "invalid atomic opcode");
    bad(prog![mov64_imm(0, 0), Insn::new(0x95, 1, 0, 0, 0)], 1, "reserved");
    bad(prog![mov64_imm(0, 0), Insn::new(0x85, 0, 1, 0, 1), exit()], 1, "bpf-to-bpf");
    bad(prog![mov64_imm(0, 0), bswap(true, 0, 17), exit()], 1, "reserved");
    ok(prog![mov64_imm(0, 0), bswap(true, 0, 16), exit()]);
}

#[test]
fn rule_registers() {
    bad(prog![mov64_imm(11, 0), mov64_imm(0, 0), exit()], 0, "invalid register");
    bad(prog![alu64_imm(op::ADD, 10, 8), mov64_imm(0, 0), exit()], 0, "read only");
    bad(prog![ldx(sz::DW, 10, 1, 0), mov64_imm(0, 0), exit()], 0, "read only");
    // Reading r10 is allowed: copy it, derive a stack pointer, write and
    // read back through it, and spill it (a pointer may be stored on the stack).
    ok(prog![
        mov64_reg(1, 10),
        alu64_imm(op::ADD, 1, -8),
        st(sz::DW, 1, 0, 7),
        ldx(sz::DW, 0, 10, -8),
        stx(sz::DW, 10, 10, -16),
        ldx(sz::DW, 2, 10, -16),
        ldx(sz::DW, 0, 2, -8),
        exit()
    ]);
    // `fp - fp` reads r10 too, but pointer - pointer is only allowed for
    // packet pointers: sluice rejects it like the kernel without
    // CAP_PERFMON ("pointer -= pointer prohibited"); the root kernel accepts it.
    bad(
        prog![mov64_reg(0, 10), alu64_reg(op::SUB, 0, 10), exit()],
        1,
        "pointer arithmetic on fp and fp prohibited",
    );
}

#[test]
fn rule_jumps() {
    bad(prog![mov64_imm(0, 0), ja(3), exit()], 1, "out of range");
    bad(prog![mov64_imm(0, 0), ja(-3), exit()], 1, "out of range");
    bad(prog![mov64_imm(0, 0)], 0, "falls off");
    bad(prog![mov64_imm(0, 0), jmp_imm(j::JEQ, 0, 0, 0)], 1, "out of range");
    ok(prog![mov64_imm(0, 0), jmp_imm(j::JEQ, 0, 1, 0), exit()]);
}

#[test]
fn rule_lddw() {
    bad(prog![ja(1), lddw(0, 7), exit()], 0, "middle of ldimm64");
    bad(prog![mov64_imm(0, 0), exit(), Insn::new(LDDW, 0, 0, 0, 0)], 2, "missing second slot");
    bad(
        prog![Insn::new(LDDW, 0, 0, 0, 0), Insn::new(0x07, 0, 0, 0, 0), exit()],
        0,
        "bad second slot",
    );
    bad(prog![ld_map(1, 7), mov64_imm(0, 0), exit()], 0, "map index");
    bad(prog![Insn::new(LDDW, 0, 2, 0, 0), Insn::new(0, 0, 0, 0, 0), exit()], 0, "global data");
    ok(prog![lddw(0, 0x1_0000_0001), exit()]);
}

#[test]
fn rule_unreachable() {
    bad(prog![mov64_imm(0, 0), exit(), mov64_imm(0, 1), exit()], 2, "unreachable");
    bad(prog![mov64_imm(0, 0), ja(1), mov64_imm(0, 1), exit()], 2, "unreachable");
}

#[test]
fn rule_loops() {
    // Bounded by a constant: unrolled.
    ok(prog![
        mov64_imm(0, 0),
        mov64_imm(6, 0),
        alu64_imm(op::ADD, 0, 2),
        alu64_imm(op::ADD, 6, 1),
        jmp_imm(j::JLT, 6, 8, -3),
        exit()
    ]);
    // Endless.
    let e =
        verify(&p(prog![mov64_imm(0, 0), jmp_imm(j::JEQ, 0, 1, 1), ja(-2), exit()])).unwrap_err();
    assert!(e.reason.contains("too complex"), "{e}");
    // Bound from the packet: not provable.
    let mut v = pkt(8);
    v.extend(prog![
        ldx(sz::DW, 6, 2, 0),
        mov64_imm(0, 0),
        alu64_imm(op::ADD, 0, 1),
        jmp_reg(j::JLT, 0, 6, -2),
        exit()
    ]);
    v[5] = jmp_reg(j::JGT, 4, 3, 4);
    let e = verify(&p(v)).unwrap_err();
    assert!(e.reason.contains("too complex"), "{e}");
}

#[test]
fn rule_uninit() {
    bad(prog![mov64_reg(0, 3), exit()], 0, "!read_ok");
    bad(prog![call(5), alu64_imm(op::ADD, 2, 1), mov64_imm(0, 0), exit()], 1, "!read_ok");
    bad(prog![alu64_imm(op::ADD, 0, 1), exit()], 0, "!read_ok");
}

#[test]
fn rule_exit() {
    bad(prog![exit()], 0, "R0 !read_ok");
    bad(prog![mov64_reg(0, 1), exit()], 1, "leaks addr as return value");
    ok(prog![mov64_imm(0, 2), exit()]);
}

#[test]
fn rule_leaks() {
    let mut v = key_fp(0);
    v.extend(prog![
        ld_map(1, 0),
        call(1),
        jmp_imm(j::JEQ, 0, 0, 1),
        stx(sz::DW, 0, 1, 0),
        mov64_imm(0, 0),
        exit()
    ]);
    // r1 is clobbered by the call: uninit, not a leak; use r10 instead.
    let last = v.len() - 3;
    v[last] = stx(sz::DW, 0, 10, 0);
    bad(v, last, "pointer leak");
    // Pointer as scalar helper argument (flags of map_update).
    let mut u = key_fp(0);
    u.extend(prog![
        st(sz::DW, 10, -16, 0),
        ld_map(1, 0),
        mov64_reg(3, 10),
        alu64_imm(op::ADD, 3, -16),
        mov64_reg(4, 10),
        call(2),
        mov64_imm(0, 0),
        exit()
    ]);
    let at = u.len() - 3;
    bad(u, at, "leaks addr into helper");
    // Spilling a pointer to the stack is fine.
    ok(prog![stx(sz::DW, 10, 1, -8), ldx(sz::DW, 6, 10, -8), ldx(sz::W, 0, 6, 12), exit()]);
}

#[test]
fn rule_ptr_arith() {
    bad(
        prog![ldx(sz::W, 3, 1, 4), alu64_imm(op::ADD, 3, 1), mov64_imm(0, 0), exit()],
        1,
        "pkt_end",
    );
    bad(prog![alu32_imm(op::ADD, 1, 1), mov64_imm(0, 0), exit()], 0, "32-bit pointer");
    bad(prog![alu64_imm(op::AND, 1, 1), mov64_imm(0, 0), exit()], 0, "operator");
    bad(prog![ld_map(1, 0), alu64_imm(op::ADD, 1, 1), mov64_imm(0, 0), exit()], 2, "map_ptr");
    bad(
        prog![ldx(sz::W, 2, 1, 0), alu64_reg(op::ADD, 2, 1), mov64_imm(0, 0), exit()],
        1,
        "pointer arithmetic",
    );
    bad(prog![mov32_imm(0, 0), Insn::new(0xbc, 2, 1, 0, 0), exit()], 1, "partial copy");
    // Variable stack offsets are refused (sluice is stricter than Linux).
    bad(
        prog![call(5), mov64_reg(2, 10), alu64_reg(op::ADD, 2, 0), mov64_imm(0, 0), exit()],
        2,
        "variable stack",
    );
    // Length = data_end - data.
    ok(prog![ldx(sz::W, 2, 1, 0), ldx(sz::W, 0, 1, 4), alu64_reg(op::SUB, 0, 2), exit()]);
}

#[test]
fn rule_stack() {
    bad(prog![ldx(sz::DW, 0, 10, -8), exit()], 0, "uninitialised");
    bad(prog![st(sz::W, 10, -8, 1), ldx(sz::DW, 0, 10, -8), exit()], 1, "uninitialised");
    bad(prog![st(sz::DW, 10, -520, 0), mov64_imm(0, 0), exit()], 0, "invalid stack access");
    bad(prog![st(sz::DW, 10, 0, 0), mov64_imm(0, 0), exit()], 0, "invalid stack access");
    bad(prog![st(sz::W, 10, -6, 0), mov64_imm(0, 0), exit()], 0, "misaligned");
    bad(prog![stx(sz::W, 10, 1, -8), mov64_imm(0, 0), exit()], 0, "spill");
    bad(prog![stx(sz::DW, 10, 1, -8), ldx(sz::W, 0, 10, -8), exit()], 1, "partial read of spilled");
    bad(
        prog![stx(sz::DW, 10, 1, -8), st(sz::W, 10, -8, 0), mov64_imm(0, 0), exit()],
        1,
        "corrupt spilled pointer",
    );
    ok(prog![st(sz::W, 10, -8, 1), st(sz::W, 10, -4, 2), ldx(sz::DW, 0, 10, -8), exit()]);
    ok(prog![st(sz::DW, 10, -512, 3), ldx(sz::B, 0, 10, -512), exit()]);
}

#[test]
fn rule_packet_read() {
    bad(prog![ldx(sz::W, 2, 1, 0), ldx(sz::B, 0, 2, 0), exit()], 1, "invalid access to packet");
    bad(pkt_prog(8, prog![ldx(sz::W, 0, 2, 6)]), 6, "invalid access to packet");
    bad(pkt_prog(8, prog![ldx(sz::B, 0, 2, -1)]), 6, "invalid access to packet");
    ok(pkt_prog(8, prog![ldx(sz::W, 0, 2, 4)]));
    ok(pkt_prog(8, prog![ldx(sz::DW, 0, 2, 0)]));
    // Reversed comparison: data_end >= data + 8 taken => in bounds.
    ok(prog![
        ldx(sz::W, 2, 1, 0),
        ldx(sz::W, 3, 1, 4),
        mov64_reg(4, 2),
        alu64_imm(op::ADD, 4, 8),
        mov64_imm(0, 0),
        jmp_reg(j::JGE, 3, 4, 1),
        exit(),
        ldx(sz::B, 0, 2, 7),
        exit()
    ]);
    // ... but the other side is not.
    bad(
        prog![
            ldx(sz::W, 2, 1, 0),
            ldx(sz::W, 3, 1, 4),
            mov64_reg(4, 2),
            alu64_imm(op::ADD, 4, 8),
            mov64_imm(0, 0),
            jmp_reg(j::JGE, 3, 4, 1),
            ldx(sz::B, 0, 2, 7),
            exit()
        ],
        6,
        "packet",
    );
    // Variable offset with its own check (same identity).
    ok(pkt_prog(
        20,
        prog![
            ldx(sz::B, 6, 2, 14),
            alu64_imm(op::AND, 6, 0xf),
            alu64_imm(op::LSH, 6, 2),
            alu64_reg(op::ADD, 2, 6),
            mov64_reg(7, 2),
            alu64_imm(op::ADD, 7, 2),
            jmp_reg(j::JGT, 7, 3, 1),
            ldx(sz::H, 0, 2, 0)
        ],
    ));
    // Variable offset, check made on a different pointer: rejected.
    bad(
        pkt_prog(
            20,
            prog![
                ldx(sz::B, 6, 2, 14),
                alu64_imm(op::AND, 6, 0xf),
                alu64_reg(op::ADD, 2, 6),
                ldx(sz::B, 0, 2, 0)
            ],
        ),
        9,
        "packet",
    );
    // Unbounded variable offset.
    bad(
        pkt_prog(8, prog![ldx(sz::DW, 6, 2, 0), alu64_reg(op::ADD, 2, 6), mov64_imm(0, 0)]),
        7,
        "unbounded",
    );
}

#[test]
fn rule_ld_abs() {
    let sk = ProgType::SocketFilter;
    assert!(verify(&pt(sk, prog![mov64_reg(6, 1), ld_abs(sz::H, 12), exit()])).is_ok());
    bad_t(sk, prog![ld_abs(sz::H, 12), exit()], 0, "R6");
    bad_t(ProgType::Xdp, prog![mov64_reg(6, 1), ld_abs(sz::H, 12), exit()], 1, "not allowed");
    bad_t(sk, prog![mov64_reg(6, 1), ld_ind(sz::B, 3, 0), exit()], 1, "!read_ok");
    bad_t(sk, prog![mov64_reg(6, 1), ld_abs(sz::B, 0), mov64_reg(0, 1), exit()], 2, "!read_ok");
    // Direct packet access is not offered to socket filters.
    bad_t(sk, prog![ldx(sz::W, 0, 1, 76), exit()], 0, "context");
}

#[test]
fn rule_packet_write() {
    bad(pkt_prog(8, prog![st(sz::B, 2, 0, 1)]), 6, "write into packet");
    bad(pkt_prog(8, prog![stx(sz::W, 2, 0, 0)]), 6, "write into packet");
    bad(prog![st(sz::W, 1, 0, 0), mov64_imm(0, 0), exit()], 0, "context");
}

#[test]
fn rule_ctx() {
    ok(prog![ldx(sz::W, 0, 1, 12), exit()]);
    ok(prog![ldx(sz::W, 0, 1, 16), exit()]);
    bad(prog![ldx(sz::W, 0, 1, 8), exit()], 0, "context access"); // data_meta not offered
    bad(prog![ldx(sz::W, 0, 1, 20), exit()], 0, "context access");
    bad(prog![ldx(sz::DW, 0, 1, 0), exit()], 0, "context access");
    bad(prog![alu64_imm(op::ADD, 1, 4), ldx(sz::W, 0, 1, 0), exit()], 1, "modified ctx");
    assert!(verify(&pt(ProgType::SocketFilter, prog![ldx(sz::W, 0, 1, 0), exit()])).is_ok());
}

#[test]
fn rule_map_value() {
    let mut v = key_fp(0);
    v.extend(prog![ld_map(1, 0), call(1), ldx(sz::DW, 0, 0, 0), exit()]);
    bad(v.clone(), 6, "map_value_or_null");
    let mut w = key_fp(0);
    w.extend(prog![ld_map(1, 0), call(1), jmp_imm(j::JEQ, 0, 0, 1), ldx(sz::DW, 0, 0, 0), exit()]);
    ok(w.clone());
    let mut o = w.clone();
    o[7] = ldx(sz::DW, 0, 0, 1);
    bad(o, 7, "invalid access to map value");
    let mut n = w;
    n[6] = jmp_imm(j::JNE, 0, 0, 1);
    bad(n, 7, "invalid mem access 'scalar'");
    // The NULL check also covers copies of the pointer.
    let mut c = key_fp(0);
    c.extend(prog![
        ld_map(1, 0),
        call(1),
        mov64_reg(6, 0),
        jmp_imm(j::JEQ, 0, 0, 1),
        ldx(sz::DW, 0, 6, 0),
        exit()
    ]);
    ok(c);
}

#[test]
fn rule_helpers() {
    bad(prog![call(7), mov64_imm(0, 0), exit()], 0, "not offered");
    bad(
        prog![mov64_imm(1, 0), mov64_imm(2, 0), call(1), mov64_imm(0, 0), exit()],
        2,
        "expected=map_ptr",
    );
    let mut k = prog![ld_map(1, 1)];
    // 4 initialised bytes, but map 1 has 8-byte keys.
    k.extend(prog![st(sz::W, 10, -8, 0), mov64_reg(2, 10), alu64_imm(op::ADD, 2, -8)]);
    k.extend(prog![call(1), mov64_imm(0, 0), exit()]);
    bad(k, 5, "uninitialised");
    let mut u = key_fp(0);
    u.extend(prog![
        ld_map(1, 0),
        mov64_reg(3, 10),
        alu64_imm(op::ADD, 3, -16),
        mov64_imm(4, 0),
        call(2),
        mov64_imm(0, 0),
        exit()
    ]);
    bad(u, 8, "uninitialised");
    bad(
        prog![
            st(sz::DW, 10, -8, 0),
            mov64_reg(1, 10),
            alu64_imm(op::ADD, 1, -8),
            mov64_imm(2, 0),
            call(6),
            mov64_imm(0, 0),
            exit()
        ],
        4,
        "zero-sized",
    );
    bad(
        prog![
            st(sz::DW, 10, -8, 0),
            mov64_reg(1, 10),
            alu64_imm(op::ADD, 1, -8),
            mov64_imm(2, 16),
            call(6),
            mov64_imm(0, 0),
            exit()
        ],
        4,
        "stack",
    );
    ok(prog![
        st(sz::DW, 10, -8, 0x6425),
        mov64_reg(1, 10),
        alu64_imm(op::ADD, 1, -8),
        mov64_imm(2, 8),
        mov64_imm(3, 1),
        call(6),
        mov64_imm(0, 0),
        exit()
    ]);
    // sluice_hash over checked packet bytes.
    ok(pkt_prog(
        8,
        prog![mov64_reg(1, 2), mov64_imm(2, 8), mov64_imm(3, 0), call(helpers::SLUICE_HASH)],
    ));
    bad(
        pkt_prog(
            8,
            prog![mov64_reg(1, 2), mov64_imm(2, 9), mov64_imm(3, 0), call(helpers::SLUICE_HASH)],
        ),
        9,
        "packet",
    );
}

#[test]
fn rule_div() {
    bad(prog![mov64_imm(0, 1), alu64_imm(op::DIV, 0, 0), exit()], 1, "div by zero");
    bad(prog![mov64_imm(0, 1), alu32_imm(op::MOD, 0, 0), exit()], 1, "div by zero");
    bad(prog![mov64_imm(0, 1), alu64_imm(op::LSH, 0, 64), exit()], 1, "invalid shift");
    bad(prog![mov64_imm(0, 1), alu32_imm(op::ARSH, 0, 32), exit()], 1, "invalid shift");
    bad(prog![mov64_imm(0, 1), alu32_imm(op::ARSH, 0, -1), exit()], 1, "invalid shift");
    // Division by a register that may be zero is fine (Linux semantics).
    ok(prog![mov64_imm(0, 1), mov64_imm(1, 0), alu64_reg(op::DIV, 0, 1), exit()]);
}

#[test]
fn rule_ptr_cmp() {
    bad(
        prog![mov64_reg(2, 10), mov64_imm(0, 0), jmp_reg(j::JGT, 1, 2, 0), exit()],
        2,
        "comparison",
    );
    bad(
        prog![ldx(sz::W, 2, 1, 0), mov64_imm(0, 0), jmp_imm(j::JGT, 2, 5, 0), exit()],
        2,
        "comparison",
    );
    // Never-NULL pointer against 0: the branch is known (dead side not explored).
    ok(prog![mov64_imm(0, 0), jmp_imm(j::JEQ, 1, 0, 1), exit(), ldx(sz::DW, 0, 5, 0), exit()]);
}

#[test]
fn scalar_bounds_decide_branches() {
    // r0 in [0, 255]; `if r0 > 255` never taken, so the bad read is dead.
    ok(pkt_prog(
        1,
        prog![
            ldx(sz::B, 6, 2, 0),
            jmp_imm(j::JGT, 6, 255, 1),
            ja(1),
            ldx(sz::DW, 0, 5, 0),
            mov64_reg(0, 6)
        ],
    ));
    // JMP32 on a value that fits in 32 bits also refines.
    ok(pkt_prog(
        1,
        prog![
            ldx(sz::B, 6, 2, 0),
            jmp32_imm(j::JGT, 6, 255, 1),
            ja(1),
            ldx(sz::DW, 0, 5, 0),
            mov64_reg(0, 6)
        ],
    ));
    // A bound learnt from a comparison makes a map value access safe.
    let mut v = pkt(1);
    v.extend(key_fp(0));
    v.extend(prog![
        ld_map(1, 0),
        call(1),
        jmp_imm(j::JEQ, 0, 0, 5),
        ldx(sz::B, 6, 0, 0),
        jmp_imm(j::JGT, 6, 7, 3),
        alu64_reg(op::ADD, 0, 6),
        ldx(sz::B, 0, 0, 0),
        exit(),
        mov64_imm(0, 0),
        exit()
    ]);
    v[5] = jmp_reg(j::JGT, 4, 3, (v.len() - 2 - 6) as i16);
    ok(v);
}

#[test]
fn rule_atomic() {
    use crate::insn::{atomic, class, mode};
    let at = |s: u8, dst: u8, src: u8, off: i16, imm: i32| {
        Insn::new(class::STX | mode::ATOMIC | s, dst, src, off, imm)
    };
    ok(prog![
        st(sz::DW, 10, -8, 0),
        mov64_imm(2, 1),
        at(sz::DW, 10, 2, -8, atomic::ADD | atomic::FETCH),
        mov64_reg(0, 2),
        exit()
    ]);
    bad(
        prog![mov64_imm(2, 1), at(sz::DW, 10, 2, -8, atomic::ADD), mov64_imm(0, 0), exit()],
        1,
        "uninitialised",
    );
    bad(
        prog![st(sz::DW, 10, -8, 0), at(sz::DW, 10, 1, -8, atomic::ADD), mov64_imm(0, 0), exit()],
        1,
        "leaks addr",
    );
    bad(
        prog![mov64_imm(2, 1), at(sz::W, 1, 2, 0, atomic::ADD), mov64_imm(0, 0), exit()],
        1,
        "not allowed",
    );
    bad(pkt_prog(8, prog![mov64_imm(6, 1), at(sz::W, 2, 6, 0, atomic::ADD)]), 7, "not allowed");
    bad(
        prog![
            st(sz::DW, 10, -8, 0),
            mov64_imm(2, 1),
            at(sz::H, 10, 2, -8, atomic::ADD),
            mov64_imm(0, 0),
            exit()
        ],
        2,
        "size",
    );
    bad(
        prog![
            st(sz::DW, 10, -8, 0),
            mov64_imm(2, 1),
            at(sz::DW, 10, 2, -8, 0x10),
            mov64_imm(0, 0),
            exit()
        ],
        2,
        "invalid atomic opcode",
    );
    // cmpxchg needs r0.
    bad(
        prog![
            st(sz::DW, 10, -8, 0),
            mov64_imm(2, 1),
            at(sz::DW, 10, 2, -8, atomic::CMPXCHG),
            mov64_imm(0, 0),
            exit()
        ],
        2,
        "R0",
    );
}

/// A non-NULL pointer compared with 0 has a known outcome in 64 bits
/// only; in a 32-bit jump its low half decides, which no program can know
/// (the fuzzer found the interpreter and the JIT taking different
/// branches), so the comparison is refused.
#[test]
fn pointer_null_test_only_in_64_bits() {
    ok(prog![jmp_imm(j::JEQ, 1, 0, 1), mov64_imm(0, 1), mov64_imm(0, 2), exit()]);
    bad(
        prog![jmp32_imm(j::JEQ, 1, 0, 1), mov64_imm(0, 1), mov64_imm(0, 2), exit()],
        0,
        "comparison of",
    );
}
