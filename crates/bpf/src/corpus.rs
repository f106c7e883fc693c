//! A corpus of small programs, each exercising one instruction class or one
//! verifier rule, plus test packets. Used by the kernel-oracle tests, the
//! interpreter/JIT differential tests and as fuzz seeds.
//!
//! A program's expected verdict is *not* written here: the Linux kernel
//! decides it (tests compare). `sluice_stricter` names the programs where
//! sluice deliberately rejects what the kernel accepts, with the reason;
//! `sluice_only` marks programs using sluice-only helpers.

use crate::asm::*;
use crate::insn::Insn;
use crate::maps::MapDef;
use crate::prog;
use crate::{ProgType, Program};

/// One corpus entry.
#[derive(Clone, Debug)]
pub struct Case {
    pub program: Program,
    /// Why sluice rejects although the (root) kernel accepts, if it does.
    pub sluice_stricter: Option<&'static str>,
    /// Uses a sluice-only helper: the kernel must reject, sluice may accept.
    pub sluice_only: bool,
    /// Return value depends on the clock: compare only verdicts.
    pub nondeterministic: bool,
}

fn case(name: &str, t: ProgType, insns: Vec<Insn>, maps: Vec<MapDef>) -> Case {
    Case {
        program: Program { name: name.to_string(), prog_type: t, insns, maps },
        sluice_stricter: None,
        sluice_only: false,
        nondeterministic: false,
    }
}

fn map(name: &str, t: u32, k: u32, v: u32, n: u32) -> MapDef {
    MapDef { name: name.into(), map_type: t, key_size: k, value_size: v, max_entries: n, flags: 0 }
}

/// Test packets (Ethernet frames, all at least 14 bytes as the kernel's
/// `BPF_PROG_TEST_RUN` requires).
pub fn packets() -> Vec<Vec<u8>> {
    let mut tcp_syn = vec![
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0x08,
        0x00, // eth
        0x45, 0x00, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x00, 0x00, // ip
        10, 0, 0, 1, 10, 0, 0, 2, // addrs
        0x30, 0x39, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0x72, 0x10, 0, 0, 0,
        0, // tcp syn
    ];
    tcp_syn.resize(60, 0);
    let mut udp = vec![
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0x1c, 0, 0, 0, 0, 0x40, 0x11, 0, 0, 192, 168, 1, 1, 192, 168, 1,
        255, //
        0x00, 0x35, 0x00, 0x35, 0x00, 0x08, 0x00, 0x00,
    ];
    udp.resize(64, 0x5a);
    let min = vec![0x80, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0x86, 0xdd];
    let zeros = vec![0u8; 64];
    let ones = vec![0xffu8; 64];
    let mut x: u32 = 0x1234_5678;
    let rnd: Vec<u8> = (0..100)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    vec![tcp_syn, udp, min, zeros, ones, rnd]
}

/// XDP prologue: r2 = data, r3 = data_end, bounds check `need` bytes; if
/// the check fails return 1. Then `body`, then exit with r0 as set by body.
fn xdp_guarded(need: i32, body: Vec<Insn>) -> Vec<Insn> {
    let mut v = prog![
        ldx(sz::W, 2, 1, 0),
        ldx(sz::W, 3, 1, 4),
        mov64_reg(4, 2),
        alu64_imm(op::ADD, 4, need),
    ];
    v.push(jmp_reg(j::JGT, 4, 3, body.len() as i16 + 1));
    v.extend(body);
    v.push(exit());
    v.extend(prog![mov64_imm(0, 1), exit()]);
    v
}

/// r5 = *(u64 *)(data), r6 = *(u64 *)(data + 8), then `body`, then
/// r0 = r5 ^ (r5 >> 32).
fn two_operands(body: Vec<Insn>) -> Vec<Insn> {
    let mut b = prog![ldx(sz::DW, 5, 2, 0), ldx(sz::DW, 6, 2, 8)];
    b.extend(body);
    b.extend(prog![
        mov64_reg(0, 5),
        mov64_reg(7, 0),
        alu64_imm(op::RSH, 7, 32),
        alu64_reg(op::XOR, 0, 7)
    ]);
    xdp_guarded(16, b)
}

const ALU_OPS: [(u8, &str); 12] = [
    (op::ADD, "add"),
    (op::SUB, "sub"),
    (op::MUL, "mul"),
    (op::DIV, "div"),
    (op::OR, "or"),
    (op::AND, "and"),
    (op::LSH, "lsh"),
    (op::RSH, "rsh"),
    (op::MOD, "mod"),
    (op::XOR, "xor"),
    (op::MOV, "mov"),
    (op::ARSH, "arsh"),
];

const JMP_OPS: [(u8, &str); 11] = [
    (j::JEQ, "jeq"),
    (j::JGT, "jgt"),
    (j::JGE, "jge"),
    (j::JSET, "jset"),
    (j::JNE, "jne"),
    (j::JSGT, "jsgt"),
    (j::JSGE, "jsge"),
    (j::JLT, "jlt"),
    (j::JLE, "jle"),
    (j::JSLT, "jslt"),
    (j::JSLE, "jsle"),
];

/// The whole corpus.
pub fn cases() -> Vec<Case> {
    use crate::maps::*;
    use ProgType::{SocketFilter as Sk, Xdp};
    let mut c = Vec::new();
    // --- ALU: every op, 64/32 bit, register and immediate source.
    for (o, name) in ALU_OPS {
        c.push(case(
            &format!("alu64_{name}_x"),
            Xdp,
            two_operands(vec![alu64_reg(o, 5, 6)]),
            vec![],
        ));
        c.push(case(
            &format!("alu32_{name}_x"),
            Xdp,
            two_operands(vec![alu32_reg(o, 5, 6)]),
            vec![],
        ));
        let imm = if matches!(o, op::LSH | op::RSH | op::ARSH) { 13 } else { -7 };
        c.push(case(
            &format!("alu64_{name}_k"),
            Xdp,
            two_operands(vec![alu64_imm(o, 5, imm)]),
            vec![],
        ));
        c.push(case(
            &format!("alu32_{name}_k"),
            Xdp,
            two_operands(vec![alu32_imm(o, 5, imm)]),
            vec![],
        ));
    }
    c.push(case("alu64_neg", Xdp, two_operands(vec![alu64_imm(op::NEG, 5, 0)]), vec![]));
    c.push(case("alu32_neg", Xdp, two_operands(vec![alu32_imm(op::NEG, 5, 0)]), vec![]));
    for (w, be) in [(16, false), (32, false), (64, false), (16, true), (32, true), (64, true)] {
        let n = format!("endian_{}{w}", if be { "be" } else { "le" });
        c.push(case(&n, Xdp, two_operands(vec![endian(be, 5, w)]), vec![]));
    }
    c.push(case(
        "lddw",
        Xdp,
        two_operands(prog![lddw(6, 0x1122_3344_5566_7788), alu64_reg(op::ADD, 5, 6)]),
        vec![],
    ));
    // --- Jumps: every condition, 64/32 bit, register and immediate.
    for (o, name) in JMP_OPS {
        let body = |jcc: Insn| prog![jcc, mov64_imm(5, 1), ja(1), mov64_imm(5, 2)];
        c.push(case(
            &format!("jmp_{name}_x"),
            Xdp,
            two_operands(body(jmp_reg(o, 5, 6, 2))),
            vec![],
        ));
        c.push(case(
            &format!("jmp32_{name}_x"),
            Xdp,
            two_operands(body(jmp32_reg(o, 5, 6, 2))),
            vec![],
        ));
        c.push(case(
            &format!("jmp_{name}_k"),
            Xdp,
            two_operands(body(jmp_imm(o, 5, 0x7788_99aa, 2))),
            vec![],
        ));
        c.push(case(
            &format!("jmp32_{name}_k"),
            Xdp,
            two_operands(body(jmp32_imm(o, 5, -0x5566, 2))),
            vec![],
        ));
    }
    // --- Loads and stores.
    for (s, n) in [(sz::B, "b"), (sz::H, "h"), (sz::W, "w"), (sz::DW, "dw")] {
        c.push(case(
            &format!("pkt_load_{n}"),
            Xdp,
            xdp_guarded(24, prog![ldx(s, 0, 2, 16)]),
            vec![],
        ));
        c.push(case(
            &format!("stack_st_{n}"),
            Xdp,
            xdp_guarded(8, prog![st(s, 10, -8, -0x1234_5678), ldx(s, 0, 10, -8)]),
            vec![],
        ));
        c.push(case(
            &format!("stack_stx_{n}"),
            Xdp,
            xdp_guarded(8, prog![ldx(sz::DW, 6, 2, 0), stx(s, 10, 6, -16), ldx(s, 0, 10, -16)]),
            vec![],
        ));
    }
    c.push(case(
        "stack_spill_pkt_ptr",
        Xdp,
        xdp_guarded(8, prog![stx(sz::DW, 10, 2, -8), ldx(sz::DW, 7, 10, -8), ldx(sz::B, 0, 7, 3)]),
        vec![],
    ));
    c.push(case(
        "pkt_var_offset",
        Xdp,
        xdp_guarded(
            20,
            prog![
                // ihl-style: r6 = (byte14 & 0xf) * 4; p = data + r6; check p+2 <= end
                ldx(sz::B, 6, 2, 14),
                alu64_imm(op::AND, 6, 0xf),
                alu64_imm(op::LSH, 6, 2),
                mov64_reg(7, 2),
                alu64_reg(op::ADD, 7, 6),
                mov64_reg(8, 7),
                alu64_imm(op::ADD, 8, 2),
                mov64_imm(0, 3),
                jmp_reg(j::JGT, 8, 3, 1),
                ldx(sz::H, 0, 7, 0),
            ],
        ),
        vec![],
    ));
    c.push(case("ctx_ingress_ifindex", Xdp, prog![ldx(sz::W, 0, 1, 12), exit()], vec![]));
    c.push(case("ctx_rx_queue", Xdp, prog![ldx(sz::W, 0, 1, 16), exit()], vec![]));
    c.push(case(
        "pkt_len",
        Xdp,
        prog![ldx(sz::W, 2, 1, 0), ldx(sz::W, 0, 1, 4), alu64_reg(op::SUB, 0, 2), exit()],
        vec![],
    ));
    // --- Socket filters: LD_ABS / LD_IND / len.
    for (s, n) in [(sz::B, "b"), (sz::H, "h"), (sz::W, "w")] {
        c.push(case(
            &format!("ld_abs_{n}"),
            Sk,
            prog![mov64_reg(6, 1), ld_abs(s, 9), exit()],
            vec![],
        ));
        c.push(case(
            &format!("ld_ind_{n}"),
            Sk,
            prog![mov64_reg(6, 1), mov64_imm(7, 3), ld_ind(s, 7, 6), exit()],
            vec![],
        ));
    }
    c.push(case(
        "ld_abs_oob",
        Sk,
        prog![mov64_reg(6, 1), ld_abs(sz::W, 1000), mov64_imm(0, 7), exit()],
        vec![],
    ));
    c.push(case("sk_len", Sk, prog![ldx(sz::W, 0, 1, 0), exit()], vec![]));
    // --- Maps and helpers.
    let arr = || vec![map("arr", BPF_MAP_TYPE_ARRAY, 4, 8, 4)];
    let key_on_stack =
        |k: i32| prog![st(sz::W, 10, -4, k), mov64_reg(2, 10), alu64_imm(op::ADD, 2, -4)];
    c.push(case(
        "map_array_counter",
        Xdp,
        prog![
            key_on_stack(1),
            ld_map(1, 0),
            call(1),
            mov64_imm(6, 0),
            jmp_imm(j::JEQ, 0, 0, 4),
            ldx(sz::DW, 6, 0, 0),
            alu64_imm(op::ADD, 6, 1),
            stx(sz::DW, 0, 6, 0),
            ja(0),
            mov64_reg(0, 6),
            exit()
        ],
        arr(),
    ));
    let hash = || vec![map("h", BPF_MAP_TYPE_HASH, 4, 8, 8)];
    let lru = || vec![map("l", BPF_MAP_TYPE_LRU_HASH, 4, 8, 8)];
    for (nm, maps) in [("map_hash_update", hash()), ("map_lru_update", lru())] {
        c.push(case(
            nm,
            Xdp,
            xdp_guarded(
                16,
                prog![
                    // key = low byte of packet byte 0 & 3, value = packet bytes 8..16
                    ldx(sz::B, 6, 2, 0),
                    alu64_imm(op::AND, 6, 3),
                    stx(sz::W, 10, 6, -4),
                    ldx(sz::DW, 7, 2, 8),
                    stx(sz::DW, 10, 7, -16),
                    ld_map(1, 0),
                    mov64_reg(2, 10),
                    alu64_imm(op::ADD, 2, -4),
                    mov64_reg(3, 10),
                    alu64_imm(op::ADD, 3, -16),
                    mov64_imm(4, 0),
                    call(2),
                ],
            ),
            maps,
        ));
    }
    c.push(case(
        "map_update_noexist_twice",
        Xdp,
        prog![
            key_on_stack(2),
            st(sz::DW, 10, -16, 5),
            ld_map(1, 0),
            mov64_reg(3, 10),
            alu64_imm(op::ADD, 3, -16),
            mov64_imm(4, 1),
            call(2),
            exit()
        ],
        hash(),
    ));
    c.push(case("map_delete", Xdp, prog![key_on_stack(0), ld_map(1, 0), call(3), exit()], hash()));
    c.push(case(
        "map_percpu_counter",
        Xdp,
        prog![
            key_on_stack(0),
            ld_map(1, 0),
            call(1),
            jmp_imm(j::JEQ, 0, 0, 4),
            ldx(sz::DW, 6, 0, 0),
            alu64_imm(op::ADD, 6, 3),
            stx(sz::DW, 0, 6, 0),
            mov64_reg(0, 6),
            exit()
        ],
        vec![map("pc", BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, 2)],
    ));
    c.push(case(
        "map_value_var_offset",
        Xdp,
        xdp_guarded(
            1,
            prog![
                ldx(sz::B, 7, 2, 0),
                alu64_imm(op::AND, 7, 7),
                key_on_stack(0),
                ld_map(1, 0),
                call(1),
                mov64_imm(6, 9),
                jmp_imm(j::JEQ, 0, 0, 3),
                alu64_reg(op::ADD, 0, 7),
                ldx(sz::B, 6, 0, 0),
                ja(0),
                mov64_reg(0, 6),
            ],
        ),
        vec![map("arr32", BPF_MAP_TYPE_ARRAY, 4, 8, 1)],
    ));
    let mut kt = case("ktime", Xdp, prog![call(5), mov64_imm(0, 2), exit()], vec![]);
    kt.nondeterministic = true;
    c.push(kt);
    c.push(case(
        "trace_printk",
        Xdp,
        prog![
            st(sz::DW, 10, -8, 0x0a_64_25),
            mov64_reg(1, 10),
            alu64_imm(op::ADD, 1, -8),
            mov64_imm(2, 4),
            mov64_imm(3, 42),
            call(6),
            mov64_imm(0, 0),
            exit()
        ],
        vec![],
    ));
    let mut sh = case(
        "sluice_hash",
        Xdp,
        xdp_guarded(
            8,
            prog![
                mov64_reg(1, 2),
                mov64_imm(2, 8),
                mov64_imm(3, 0),
                call(crate::helpers::SLUICE_HASH)
            ],
        ),
        vec![],
    );
    sh.sluice_only = true;
    c.push(sh);
    // --- Loops.
    c.push(case(
        "loop_bounded",
        Xdp,
        prog![
            mov64_imm(0, 0),
            mov64_imm(6, 0),
            alu64_imm(op::ADD, 0, 3),
            alu64_imm(op::ADD, 6, 1),
            jmp_imm(j::JLT, 6, 10, -3),
            exit()
        ],
        vec![],
    ));
    c.push(case("loop_infinite", Xdp, prog![mov64_imm(0, 0), ja(-1), exit()], vec![]));
    c.push(case(
        "loop_unbounded_pkt",
        Xdp,
        xdp_guarded(
            8,
            prog![
                ldx(sz::DW, 6, 2, 0),
                mov64_imm(0, 0),
                alu64_imm(op::ADD, 0, 1),
                jmp_reg(j::JLT, 0, 6, -2)
            ],
        ),
        vec![],
    ));
    // --- Packet bounds: all eight comparison forms, access on the proven
    // side (accept) and on the other side (reject), r4 = data + 8.
    for (o, name) in [(j::JGT, "jgt"), (j::JGE, "jge"), (j::JLT, "jlt"), (j::JLE, "jle")] {
        for pkt_is_dst in [true, false] {
            for on_taken in [true, false] {
                let cmp = if pkt_is_dst { jmp_reg(o, 4, 3, 2) } else { jmp_reg(o, 3, 4, 2) };
                // fall-through: 2 insns (access; exit), taken: access; exit.
                let access = ldx(sz::B, 0, 2, 7);
                let body = if on_taken {
                    prog![cmp, mov64_imm(0, 0), exit(), access, exit()]
                } else {
                    prog![cmp, access, exit(), mov64_imm(0, 0), exit()]
                };
                let mut v = prog![
                    ldx(sz::W, 2, 1, 0),
                    ldx(sz::W, 3, 1, 4),
                    mov64_reg(4, 2),
                    alu64_imm(op::ADD, 4, 8),
                    mov64_imm(0, 0)
                ];
                v.extend(body);
                let n = format!(
                    "pkt_bounds_{}_{name}_{}",
                    if pkt_is_dst { "pkt" } else { "end" },
                    if on_taken { "taken" } else { "fall" }
                );
                c.push(case(&n, Xdp, v, vec![]));
            }
        }
    }
    // Strict vs non-strict bound: data + 8 < end allows reading byte 8.
    c.push(case(
        "pkt_bounds_strict_plus_one",
        Xdp,
        prog![
            ldx(sz::W, 2, 1, 0),
            ldx(sz::W, 3, 1, 4),
            mov64_reg(4, 2),
            alu64_imm(op::ADD, 4, 8),
            mov64_imm(0, 0),
            jmp_reg(j::JLT, 4, 3, 1),
            exit(),
            ldx(sz::B, 0, 2, 8),
            exit()
        ],
        vec![],
    ));
    c.push(case(
        "pkt_bounds_nonstrict_plus_one",
        Xdp,
        prog![
            ldx(sz::W, 2, 1, 0),
            ldx(sz::W, 3, 1, 4),
            mov64_reg(4, 2),
            alu64_imm(op::ADD, 4, 8),
            mov64_imm(0, 0),
            jmp_reg(j::JLE, 4, 3, 1),
            exit(),
            ldx(sz::B, 0, 2, 8),
            exit()
        ],
        vec![],
    ));
    // Scalar range tracking deciding safety of a map value access.
    for (lim, name) in [(7, "in"), (8, "out")] {
        c.push(case(
            &format!("map_value_bounded_index_{name}"),
            Xdp,
            xdp_guarded(
                1,
                prog![
                    ldx(sz::B, 7, 2, 0),
                    key_on_stack(0),
                    ld_map(1, 0),
                    call(1),
                    mov64_imm(6, 9),
                    jmp_imm(j::JEQ, 0, 0, 4),
                    jmp_imm(j::JGT, 7, lim, 3),
                    alu64_reg(op::ADD, 0, 7),
                    ldx(sz::B, 6, 0, 0),
                    ja(0),
                    mov64_reg(0, 6),
                ],
            ),
            vec![map("arr8", BPF_MAP_TYPE_ARRAY, 4, 8, 1)],
        ));
    }
    // JMP32 on a 64-bit value does not bound the upper half.
    c.push(case(
        "jmp32_does_not_bound_64",
        Xdp,
        xdp_guarded(
            8,
            prog![
                ldx(sz::DW, 7, 2, 0),
                key_on_stack(0),
                ld_map(1, 0),
                call(1),
                mov64_imm(6, 9),
                jmp_imm(j::JEQ, 0, 0, 4),
                jmp32_imm(j::JGT, 7, 7, 3),
                alu64_reg(op::ADD, 0, 7),
                ldx(sz::B, 6, 0, 0),
                ja(0),
                mov64_reg(0, 6),
            ],
        ),
        vec![map("arr8", BPF_MAP_TYPE_ARRAY, 4, 8, 1)],
    ));
    // --- Atomics on the stack and on map values.
    {
        use crate::insn::{atomic, class, mode, Insn};
        let bad =
            |c: &mut Vec<Case>, name: &str, t: ProgType, insns: Vec<Insn>, maps: Vec<MapDef>| {
                c.push(case(name, t, insns, maps));
            };
        let at = |s: u8, dst: u8, src: u8, off: i16, imm: i32| {
            Insn::new(class::STX | mode::ATOMIC | s, dst, src, off, imm)
        };
        let ops = [
            (atomic::ADD, "add"),
            (atomic::OR, "or"),
            (atomic::AND, "and"),
            (atomic::XOR, "xor"),
            (atomic::ADD | atomic::FETCH, "fetch_add"),
            (atomic::OR | atomic::FETCH, "fetch_or"),
            (atomic::AND | atomic::FETCH, "fetch_and"),
            (atomic::XOR | atomic::FETCH, "fetch_xor"),
            (atomic::XCHG, "xchg"),
            (atomic::CMPXCHG, "cmpxchg"),
        ];
        for (imm, name) in ops {
            for (s, w) in [(sz::W, "w"), (sz::DW, "dw")] {
                // Stack: slot = pkt[0..8], operand = pkt[8..16], r0 = pkt[16..24].
                c.push(case(
                    &format!("atomic_stack_{name}_{w}"),
                    Xdp,
                    xdp_guarded(
                        24,
                        prog![
                            ldx(sz::DW, 6, 2, 0),
                            stx(sz::DW, 10, 6, -8),
                            ldx(sz::DW, 7, 2, 8),
                            ldx(sz::DW, 0, 2, 16),
                            at(s, 10, 7, -8, imm),
                            ldx(sz::DW, 6, 10, -8),
                            alu64_reg(op::XOR, 0, 6),
                            alu64_reg(op::XOR, 0, 7),
                            mov64_reg(6, 0),
                            alu64_imm(op::RSH, 6, 32),
                            alu64_reg(op::XOR, 0, 6),
                        ],
                    ),
                    vec![],
                ));
            }
        }
        // Map value counter with atomic add (what clang emits for __sync_fetch_and_add).
        c.push(case(
            "atomic_map_counter",
            Xdp,
            xdp_guarded(
                8,
                prog![
                    ldx(sz::DW, 7, 2, 0),
                    key_on_stack(1),
                    ld_map(1, 0),
                    call(1),
                    jmp_imm(j::JEQ, 0, 0, 2),
                    at(sz::DW, 0, 7, 0, atomic::ADD | atomic::FETCH),
                    mov64_reg(0, 7),
                ],
            ),
            arr(),
        ));
        bad(
            &mut c,
            "bad_atomic_on_ctx",
            Xdp,
            prog![mov64_imm(2, 1), at(sz::W, 1, 2, 0, atomic::ADD), mov64_imm(0, 0), exit()],
            vec![],
        );
        bad(
            &mut c,
            "bad_atomic_on_pkt",
            Xdp,
            xdp_guarded(8, prog![mov64_imm(6, 1), at(sz::W, 2, 6, 0, atomic::ADD)]),
            vec![],
        );
        bad(
            &mut c,
            "bad_atomic_byte",
            Xdp,
            prog![
                st(sz::DW, 10, -8, 0),
                mov64_imm(2, 1),
                at(sz::B, 10, 2, -8, atomic::ADD),
                mov64_imm(0, 0),
                exit()
            ],
            vec![],
        );
        bad(
            &mut c,
            "bad_atomic_op",
            Xdp,
            prog![
                st(sz::DW, 10, -8, 0),
                mov64_imm(2, 1),
                at(sz::DW, 10, 2, -8, 0x10),
                mov64_imm(0, 0),
                exit()
            ],
            vec![],
        );
        bad(
            &mut c,
            "bad_atomic_misaligned",
            Xdp,
            prog![
                st(sz::DW, 10, -8, 0),
                mov64_imm(2, 1),
                at(sz::W, 10, 2, -6, atomic::ADD),
                mov64_imm(0, 0),
                exit()
            ],
            vec![],
        );
    }
    // --- Known-bad programs (verifier rules).
    let bad = |c: &mut Vec<Case>, name: &str, t: ProgType, insns: Vec<Insn>, maps: Vec<MapDef>| {
        c.push(case(name, t, insns, maps));
    };
    bad(
        &mut c,
        "bad_pkt_read_unchecked",
        Xdp,
        prog![ldx(sz::W, 2, 1, 0), ldx(sz::B, 0, 2, 0), exit()],
        vec![],
    );
    bad(
        &mut c,
        "bad_pkt_read_beyond_check",
        Xdp,
        xdp_guarded(8, prog![ldx(sz::W, 0, 2, 6)]),
        vec![],
    );
    bad(&mut c, "bad_pkt_read_negative", Xdp, xdp_guarded(8, prog![ldx(sz::B, 0, 2, -1)]), vec![]);
    bad(
        &mut c,
        "bad_pkt_var_unbounded",
        Xdp,
        xdp_guarded(8, prog![ldx(sz::DW, 6, 2, 0), alu64_reg(op::ADD, 2, 6), ldx(sz::B, 0, 2, 0)]),
        vec![],
    );
    bad(
        &mut c,
        "bad_map_value_unchecked",
        Xdp,
        prog![key_on_stack(0), ld_map(1, 0), call(1), ldx(sz::DW, 0, 0, 0), exit()],
        hash(),
    );
    let mut ck = case(
        "array_const_key_no_null_check",
        Xdp,
        prog![key_on_stack(0), ld_map(1, 0), call(1), ldx(sz::DW, 0, 0, 0), exit()],
        arr(),
    );
    ck.sluice_stricter = Some("Linux knows an array lookup with a constant in-range key is never NULL; sluice always requires the NULL check");
    c.push(ck);
    bad(
        &mut c,
        "bad_map_value_oob",
        Xdp,
        prog![
            key_on_stack(0),
            ld_map(1, 0),
            call(1),
            jmp_imm(j::JEQ, 0, 0, 1),
            ldx(sz::DW, 0, 0, 4),
            exit()
        ],
        arr(),
    );
    let mut uninit =
        case("bad_stack_uninit_read", Xdp, prog![ldx(sz::DW, 0, 10, -8), exit()], vec![]);
    uninit.sluice_stricter = Some("uninitialised stack read (root kernel allows it)");
    c.push(uninit);
    bad(
        &mut c,
        "bad_stack_oob",
        Xdp,
        prog![st(sz::DW, 10, -520, 0), mov64_imm(0, 0), exit()],
        vec![],
    );
    bad(
        &mut c,
        "bad_stack_above_fp",
        Xdp,
        prog![st(sz::DW, 10, 0, 0), mov64_imm(0, 0), exit()],
        vec![],
    );
    bad(
        &mut c,
        "bad_stack_misaligned",
        Xdp,
        prog![st(sz::W, 10, -6, 0), mov64_imm(0, 0), exit()],
        vec![],
    );
    bad(&mut c, "bad_back_edge", Xdp, prog![mov64_imm(0, 0), ja(-2)], vec![]);
    bad(
        &mut c,
        "bad_helper_key_scalar",
        Xdp,
        prog![ld_map(1, 0), mov64_imm(2, 0), call(1), mov64_imm(0, 0), exit()],
        arr(),
    );
    let mut ku = case(
        "bad_helper_key_uninit",
        Xdp,
        prog![
            ld_map(1, 0),
            mov64_reg(2, 10),
            alu64_imm(op::ADD, 2, -8),
            call(1),
            mov64_imm(0, 0),
            exit()
        ],
        arr(),
    );
    ku.sluice_stricter = Some("uninitialised stack passed to a helper (root kernel allows it)");
    c.push(ku);
    bad(
        &mut c,
        "bad_helper_map_not_map",
        Xdp,
        prog![key_on_stack(0), mov64_imm(1, 0), call(1), mov64_imm(0, 0), exit()],
        vec![],
    );
    bad(&mut c, "bad_helper_unknown", Xdp, prog![call(9999), mov64_imm(0, 0), exit()], vec![]);
    bad(
        &mut c,
        "helper_value_two_stores",
        Xdp,
        prog![
            key_on_stack(0),
            st(sz::W, 10, -8, 0),
            ld_map(1, 0),
            mov64_reg(3, 10),
            alu64_imm(op::ADD, 3, -8),
            mov64_imm(4, 0),
            call(2),
            mov64_imm(0, 0),
            exit()
        ],
        arr(),
    );
    bad(
        &mut c,
        "bad_printk_zero_size",
        Xdp,
        prog![
            st(sz::DW, 10, -8, 0),
            mov64_reg(1, 10),
            alu64_imm(op::ADD, 1, -8),
            mov64_imm(2, 0),
            call(6),
            mov64_imm(0, 0),
            exit()
        ],
        vec![],
    );
    let mut pw = case(
        "bad_pkt_write",
        Xdp,
        xdp_guarded(8, prog![st(sz::B, 2, 0, 1), mov64_imm(0, 0)]),
        vec![],
    );
    pw.sluice_stricter =
        Some("packet write (XDP may write the packet; sluice filter programs may not)");
    c.push(pw);
    bad(&mut c, "bad_ctx_write", Xdp, prog![st(sz::W, 1, 0, 0), mov64_imm(0, 0), exit()], vec![]);
    bad(&mut c, "bad_ctx_offset", Xdp, prog![ldx(sz::W, 0, 1, 2), exit()], vec![]);
    bad(&mut c, "bad_ctx_size", Xdp, prog![ldx(sz::B, 0, 1, 12), exit()], vec![]);
    bad(
        &mut c,
        "bad_ctx_modified",
        Xdp,
        prog![alu64_imm(op::ADD, 1, 4), ldx(sz::W, 0, 1, 0), exit()],
        vec![],
    );
    bad(&mut c, "bad_sk_data", Sk, prog![ldx(sz::W, 0, 1, 76), exit()], vec![]);
    bad(&mut c, "bad_ld_abs_in_xdp", Xdp, prog![mov64_reg(6, 1), ld_abs(sz::B, 0), exit()], vec![]);
    bad(&mut c, "bad_ld_abs_no_r6", Sk, prog![ld_abs(sz::B, 0), exit()], vec![]);
    bad(&mut c, "bad_ld_abs_dw", Sk, prog![mov64_reg(6, 1), ld_abs(sz::DW, 0), exit()], vec![]);
    bad(
        &mut c,
        "bad_invalid_opcode",
        Xdp,
        prog![Insn::new(0xff, 0, 0, 0, 0), mov64_imm(0, 0), exit()],
        vec![],
    );
    bad(
        &mut c,
        "bad_invalid_alu_op",
        Xdp,
        prog![Insn::new(0xe7, 0, 0, 0, 0), mov64_imm(0, 0), exit()],
        vec![],
    );
    bad(&mut c, "bad_jump_out_of_range", Xdp, prog![mov64_imm(0, 0), ja(5), exit()], vec![]);
    bad(&mut c, "bad_jump_into_lddw", Xdp, prog![ja(1), lddw(0, 1), exit()], vec![]);
    bad(
        &mut c,
        "bad_lddw_truncated",
        Xdp,
        prog![mov64_imm(0, 0), exit(), Insn::new(0x18, 0, 0, 0, 0)],
        vec![],
    );
    bad(&mut c, "bad_fall_off_end", Xdp, prog![mov64_imm(0, 0)], vec![]);
    bad(
        &mut c,
        "bad_unreachable",
        Xdp,
        prog![mov64_imm(0, 0), exit(), mov64_imm(0, 1), exit()],
        vec![],
    );
    bad(&mut c, "bad_write_r10", Xdp, prog![mov64_imm(10, 0), mov64_imm(0, 0), exit()], vec![]);
    bad(&mut c, "bad_register_11", Xdp, prog![mov64_imm(11, 0), mov64_imm(0, 0), exit()], vec![]);
    bad(
        &mut c,
        "bad_div_zero_imm",
        Xdp,
        prog![mov64_imm(0, 1), alu64_imm(op::DIV, 0, 0), exit()],
        vec![],
    );
    bad(
        &mut c,
        "bad_mod_zero_imm32",
        Xdp,
        prog![mov64_imm(0, 1), alu32_imm(op::MOD, 0, 0), exit()],
        vec![],
    );
    bad(
        &mut c,
        "bad_shift_imm",
        Xdp,
        prog![mov64_imm(0, 1), alu64_imm(op::LSH, 0, 64), exit()],
        vec![],
    );
    bad(
        &mut c,
        "bad_shift_imm32",
        Xdp,
        prog![mov64_imm(0, 1), alu32_imm(op::RSH, 0, 32), exit()],
        vec![],
    );
    bad(&mut c, "bad_uninit_reg", Xdp, prog![mov64_reg(0, 5), exit()], vec![]);
    bad(&mut c, "bad_exit_r0_uninit", Xdp, prog![exit()], vec![]);
    bad(&mut c, "bad_reserved_alu_src", Xdp, prog![Insn::new(0xb7, 0, 3, 0, 0), exit()], vec![]);
    bad(
        &mut c,
        "bad_pkt_end_arith",
        Xdp,
        prog![ldx(sz::W, 3, 1, 4), alu64_imm(op::ADD, 3, 1), mov64_imm(0, 0), exit()],
        vec![],
    );
    bad(
        &mut c,
        "bad_ptr_alu32",
        Xdp,
        prog![ldx(sz::W, 2, 1, 0), alu32_imm(op::ADD, 2, 1), mov64_imm(0, 0), exit()],
        vec![],
    );
    bad(
        &mut c,
        "bad_ptr_mul",
        Xdp,
        prog![ldx(sz::W, 2, 1, 0), alu64_imm(op::MUL, 2, 2), mov64_imm(0, 0), exit()],
        vec![],
    );
    bad(
        &mut c,
        "bad_map_ptr_arith",
        Xdp,
        prog![ld_map(1, 0), alu64_imm(op::ADD, 1, 8), mov64_imm(0, 0), exit()],
        arr(),
    );
    let mut na = case(
        "bad_null_arith",
        Xdp,
        prog![
            key_on_stack(0),
            ld_map(1, 0),
            call(1),
            alu64_imm(op::ADD, 0, 8),
            mov64_imm(0, 0),
            exit()
        ],
        arr(),
    );
    na.sluice_stricter =
        Some("arithmetic on a maybe-NULL map value (root kernel turns it into a leaked scalar)");
    c.push(na);
    bad(&mut c, "bad_r1_after_call", Xdp, prog![call(5), mov64_reg(0, 1), exit()], vec![]);
    let mut leak = case("bad_return_pointer", Xdp, prog![mov64_reg(0, 10), exit()], vec![]);
    leak.sluice_stricter = Some("pointer as return value (root kernel may allow pointer leaks)");
    c.push(leak);
    let mut leak2 = case(
        "bad_pointer_into_map",
        Xdp,
        prog![
            key_on_stack(0),
            ld_map(1, 0),
            call(1),
            jmp_imm(j::JEQ, 0, 0, 1),
            stx(sz::DW, 0, 10, 0),
            mov64_imm(0, 0),
            exit()
        ],
        arr(),
    );
    leak2.sluice_stricter =
        Some("storing a pointer into a map value (root kernel allows pointer leaks)");
    c.push(leak2);
    c
}

/// TCP flag bits.
pub mod tcp_flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
}

/// Parameters of a synthetic IPv4/TCP frame.
#[derive(Clone, Copy, Debug)]
pub struct Tcp {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub sport: u16,
    pub dport: u16,
    pub flags: u8,
    pub seq: u32,
    pub window: u16,
    pub ttl: u8,
    pub payload: usize,
    /// Linux-style SYN options (MSS, SACK-OK, timestamps, NOP, WS 7).
    pub linux_options: bool,
}

impl Tcp {
    pub fn new(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, flags: u8) -> Tcp {
        Tcp {
            src,
            dst,
            sport,
            dport,
            flags,
            seq: 1000,
            window: 64240,
            ttl: 64,
            payload: 0,
            linux_options: false,
        }
    }
    /// The reverse direction.
    pub fn reply(&self, flags: u8) -> Tcp {
        Tcp { src: self.dst, dst: self.src, sport: self.dport, dport: self.sport, flags, ..*self }
    }
    /// Builds the Ethernet frame (checksums left zero: programs do not check them).
    pub fn frame(&self) -> Vec<u8> {
        let opts: &[u8] = if self.linux_options {
            &[2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7]
        } else {
            &[]
        };
        let tcp_len = 20 + opts.len();
        let ip_len = 20 + tcp_len + self.payload;
        let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend_from_slice(&[
            0x45,
            0,
            (ip_len >> 8) as u8,
            ip_len as u8,
            0,
            1,
            0x40,
            0,
            self.ttl,
            6,
            0,
            0,
        ]);
        f.extend_from_slice(&self.src);
        f.extend_from_slice(&self.dst);
        f.extend_from_slice(&self.sport.to_be_bytes());
        f.extend_from_slice(&self.dport.to_be_bytes());
        f.extend_from_slice(&self.seq.to_be_bytes());
        f.extend_from_slice(&0u32.to_be_bytes());
        f.push(((tcp_len / 4) << 4) as u8);
        f.push(self.flags);
        f.extend_from_slice(&self.window.to_be_bytes());
        f.extend_from_slice(&[0, 0, 0, 0]);
        f.extend_from_slice(opts);
        f.extend(std::iter::repeat_n(0x61u8, self.payload));
        f
    }
}

/// A small TCP conversation plus stray packets, for the example programs.
pub fn tcp_trace() -> Vec<Vec<u8>> {
    use tcp_flags::*;
    let a = [10, 0, 0, 1];
    let b = [10, 0, 0, 2];
    let c = [192, 168, 7, 9];
    let mut syn = Tcp::new(a, b, 40000, 80, SYN);
    syn.linux_options = true;
    let mut v = vec![syn.frame()];
    let mut synack = syn.reply(SYN | ACK);
    synack.seq = 5000;
    v.push(synack.frame());
    let mut ack = Tcp::new(a, b, 40000, 80, ACK);
    ack.seq = 1001;
    v.push(ack.frame());
    let mut data = ack;
    data.flags = ACK | PSH;
    data.payload = 100;
    v.push(data.frame());
    v.push(data.frame()); // retransmission
    let mut zero = synack.reply(ACK);
    zero.window = 0;
    v.push(zero.frame());
    v.push(Tcp::new(c, b, 1234, 22, ACK).frame()); // unknown connection
    let mut wsyn = Tcp::new(c, b, 1235, 22, SYN);
    wsyn.ttl = 128;
    v.push(wsyn.frame()); // Windows-like TTL
    let mut fin = data;
    fin.flags = FIN | ACK;
    fin.seq = 1101;
    fin.payload = 0;
    v.push(fin.frame());
    v.push(Tcp::new(b, a, 80, 40000, RST).frame());
    v.push(Tcp::new(c, b, 1235, 22, RST).frame());
    v.extend(packets());
    v
}
