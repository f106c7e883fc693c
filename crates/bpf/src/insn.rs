//! eBPF instruction encoding: decoding 8-byte slots and a disassembler.
//!
//! What? An eBPF program is a sequence of 8-byte slots
//! `code:u8 | dst:4 src:4 | off:i16 le | imm:i32 le`. `LDDW` (`0x18`) spans
//! two slots: the second slot carries the upper 32 bits of the immediate.
//! This module only decodes; whether an instruction is *allowed* is the
//! verifier's business (`verifier.rs`). Decoding never fails: every 8 bytes
//! are some instruction, and the disassembler prints unknown opcodes as
//! `invalid opcode 0x..` rather than dropping them.
//!
//! Numbering follows Linux `include/uapi/linux/bpf.h` and `bpf_common.h`.

use std::fmt;

/// Instruction classes (low 3 bits of the opcode).
pub mod class {
    pub const LD: u8 = 0x00;
    pub const LDX: u8 = 0x01;
    pub const ST: u8 = 0x02;
    pub const STX: u8 = 0x03;
    pub const ALU: u8 = 0x04;
    pub const JMP: u8 = 0x05;
    pub const JMP32: u8 = 0x06;
    pub const ALU64: u8 = 0x07;
}

/// Access sizes (bits 3-4 of load/store opcodes).
pub mod size {
    pub const W: u8 = 0x00;
    pub const H: u8 = 0x08;
    pub const B: u8 = 0x10;
    pub const DW: u8 = 0x18;
}

/// Load/store modes (bits 5-7 of load/store opcodes).
pub mod mode {
    pub const IMM: u8 = 0x00;
    pub const ABS: u8 = 0x20;
    pub const IND: u8 = 0x40;
    pub const MEM: u8 = 0x60;
    pub const MEMSX: u8 = 0x80;
    pub const ATOMIC: u8 = 0xc0;
}

/// ALU operations (bits 4-7 of ALU opcodes).
pub mod alu {
    pub const ADD: u8 = 0x00;
    pub const SUB: u8 = 0x10;
    pub const MUL: u8 = 0x20;
    pub const DIV: u8 = 0x30;
    pub const OR: u8 = 0x40;
    pub const AND: u8 = 0x50;
    pub const LSH: u8 = 0x60;
    pub const RSH: u8 = 0x70;
    pub const NEG: u8 = 0x80;
    pub const MOD: u8 = 0x90;
    pub const XOR: u8 = 0xa0;
    pub const MOV: u8 = 0xb0;
    pub const ARSH: u8 = 0xc0;
    pub const END: u8 = 0xd0;
}

/// Jump operations (bits 4-7 of JMP/JMP32 opcodes).
pub mod jmp {
    pub const JA: u8 = 0x00;
    pub const JEQ: u8 = 0x10;
    pub const JGT: u8 = 0x20;
    pub const JGE: u8 = 0x30;
    pub const JSET: u8 = 0x40;
    pub const JNE: u8 = 0x50;
    pub const JSGT: u8 = 0x60;
    pub const JSGE: u8 = 0x70;
    pub const CALL: u8 = 0x80;
    pub const EXIT: u8 = 0x90;
    pub const JLT: u8 = 0xa0;
    pub const JLE: u8 = 0xb0;
    pub const JSLT: u8 = 0xc0;
    pub const JSLE: u8 = 0xd0;
}

/// Source operand flag: `K` = immediate, `X` = register.
pub const SRC_X: u8 = 0x08;

/// Atomic operations (`imm` of `BPF_STX | BPF_ATOMIC`).
pub mod atomic {
    pub const FETCH: i32 = 0x01;
    pub const ADD: i32 = 0x00;
    pub const OR: i32 = 0x40;
    pub const AND: i32 = 0x50;
    pub const XOR: i32 = 0xa0;
    pub const XCHG: i32 = 0xe0 | FETCH;
    pub const CMPXCHG: i32 = 0xf0 | FETCH;
    /// Is `imm` an atomic operation sluice supports?
    pub fn valid(imm: i32) -> bool {
        matches!(imm & !FETCH, ADD | OR | AND | XOR) || imm == XCHG || imm == CMPXCHG
    }
}

/// `LDDW` opcode (`BPF_LD | BPF_IMM | BPF_DW`).
pub const LDDW: u8 = 0x18;
/// `src` value of an `LDDW` whose immediate is a map (Linux `BPF_PSEUDO_MAP_FD`).
pub const PSEUDO_MAP_FD: u8 = 1;
/// `src` value of an `LDDW` whose immediate is a map value address (`BPF_PSEUDO_MAP_VALUE`).
pub const PSEUDO_MAP_VALUE: u8 = 2;

/// One 8-byte instruction slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Insn {
    pub code: u8,
    pub dst: u8,
    pub src: u8,
    pub off: i16,
    pub imm: i32,
}

impl Insn {
    /// Builds an instruction (used by tests and program builders).
    pub const fn new(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
        Insn { code, dst, src, off, imm }
    }

    /// Decodes one slot.
    pub fn decode(b: [u8; 8]) -> Insn {
        Insn {
            code: b[0],
            dst: b[1] & 0x0f,
            src: b[1] >> 4,
            off: i16::from_le_bytes([b[2], b[3]]),
            imm: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }

    /// Encodes one slot.
    pub fn encode(&self) -> [u8; 8] {
        let o = self.off.to_le_bytes();
        let i = self.imm.to_le_bytes();
        [self.code, (self.dst & 0x0f) | (self.src << 4), o[0], o[1], i[0], i[1], i[2], i[3]]
    }

    pub fn class(&self) -> u8 {
        self.code & 0x07
    }
    /// ALU/JMP operation bits.
    pub fn op(&self) -> u8 {
        self.code & 0xf0
    }
    /// Load/store mode bits.
    pub fn mode(&self) -> u8 {
        self.code & 0xe0
    }
    /// Load/store size bits.
    pub fn size(&self) -> u8 {
        self.code & 0x18
    }
    /// True if the source operand is a register.
    pub fn is_src_x(&self) -> bool {
        self.code & SRC_X != 0
    }
}

/// Decodes a byte string into instruction slots. Trailing bytes that do not
/// fill a slot are reported as an error by the caller (loader); here they
/// are ignored and their count returned.
pub fn decode_all(bytes: &[u8]) -> (Vec<Insn>, usize) {
    let mut out = Vec::with_capacity(bytes.len() / 8);
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        out.push(Insn::decode(b));
    }
    (out, chunks.remainder().len())
}

/// Encodes slots back to bytes (for the kernel loader and round-trip tests).
pub fn encode_all(insns: &[Insn]) -> Vec<u8> {
    insns.iter().flat_map(|i| i.encode()).collect()
}

/// Size in bytes of a load/store size field.
pub fn size_bytes(sz: u8) -> u32 {
    match sz {
        size::B => 1,
        size::H => 2,
        size::W => 4,
        _ => 8,
    }
}

fn size_name(sz: u8) -> &'static str {
    match sz {
        size::B => "u8",
        size::H => "u16",
        size::W => "u32",
        _ => "u64",
    }
}

fn alu_sym(op: u8) -> Option<&'static str> {
    Some(match op {
        alu::ADD => "+=",
        alu::SUB => "-=",
        alu::MUL => "*=",
        alu::DIV => "/=",
        alu::OR => "|=",
        alu::AND => "&=",
        alu::LSH => "<<=",
        alu::RSH => ">>=",
        alu::MOD => "%=",
        alu::XOR => "^=",
        alu::MOV => "=",
        alu::ARSH => "s>>=",
        _ => return None,
    })
}

fn jmp_sym(op: u8) -> Option<&'static str> {
    Some(match op {
        jmp::JEQ => "==",
        jmp::JGT => ">",
        jmp::JGE => ">=",
        jmp::JSET => "&",
        jmp::JNE => "!=",
        jmp::JSGT => "s>",
        jmp::JSGE => "s>=",
        jmp::JLT => "<",
        jmp::JLE => "<=",
        jmp::JSLT => "s<",
        jmp::JSLE => "s<=",
        _ => return None,
    })
}

/// Disassembles one instruction in the kernel's (`bpftool prog dump xlated`)
/// style. `next` is the following slot, needed for `LDDW`.
pub fn disasm(i: &Insn, next: Option<&Insn>) -> String {
    let bad = || format!("invalid opcode {:#04x}", i.code);
    let (d, s) = (i.dst, i.src);
    match i.class() {
        class::ALU | class::ALU64 => {
            let w = if i.class() == class::ALU { "w" } else { "r" };
            match i.op() {
                alu::NEG => format!("{w}{d} = -{w}{d}"),
                alu::END => {
                    let dir = if i.is_src_x() { "be" } else { "le" };
                    if i.class() == class::ALU64 {
                        format!("r{d} = bswap{} r{d}", i.imm)
                    } else {
                        format!("r{d} = {dir}{} r{d}", i.imm)
                    }
                }
                op => match alu_sym(op) {
                    Some(sym) if i.is_src_x() => format!("{w}{d} {sym} {w}{s}"),
                    Some(sym) => format!("{w}{d} {sym} {}", i.imm),
                    None => bad(),
                },
            }
        }
        class::JMP | class::JMP32 => {
            let w = if i.class() == class::JMP32 { "w" } else { "r" };
            match i.op() {
                jmp::JA if i.class() == class::JMP => format!("goto {:+}", i.off),
                jmp::CALL if i.class() == class::JMP => match i.src {
                    0 => format!("call {}", helper_name(i.imm)),
                    1 => format!("call pc{:+}", i.imm),
                    _ => format!("call kfunc {}", i.imm),
                },
                jmp::EXIT if i.class() == class::JMP => "exit".to_string(),
                op => match jmp_sym(op) {
                    Some(sym) if i.is_src_x() => {
                        format!("if {w}{d} {sym} {w}{s} goto {:+}", i.off)
                    }
                    Some(sym) => format!("if {w}{d} {sym} {:#x} goto {:+}", i.imm, i.off),
                    None => bad(),
                },
            }
        }
        class::LDX if i.mode() == mode::MEM => {
            format!("r{d} = *({} *)(r{s} {:+})", size_name(i.size()), i.off)
        }
        class::STX if i.mode() == mode::MEM => {
            format!("*({} *)(r{d} {:+}) = r{s}", size_name(i.size()), i.off)
        }
        class::STX if i.mode() == mode::ATOMIC => {
            format!("lock *({} *)(r{d} {:+}) op{:#x}= r{s}", size_name(i.size()), i.off, i.imm)
        }
        class::ST if i.mode() == mode::MEM => {
            format!("*({} *)(r{d} {:+}) = {}", size_name(i.size()), i.off, i.imm)
        }
        class::LD if i.code == LDDW => {
            let hi = next.map(|n| n.imm).unwrap_or(0);
            match s {
                PSEUDO_MAP_FD => format!("r{d} = map[{}] ll", i.imm),
                PSEUDO_MAP_VALUE => format!("r{d} = map[{}] + {} ll", i.imm, hi),
                _ => {
                    let v = (i.imm as u32 as u64) | ((hi as u32 as u64) << 32);
                    format!("r{d} = {v:#x} ll")
                }
            }
        }
        class::LD if i.mode() == mode::ABS => {
            format!("r0 = ntoh(*({} *)skb[{}])", size_name(i.size()), i.imm)
        }
        class::LD if i.mode() == mode::IND => {
            format!("r0 = ntoh(*({} *)skb[r{s} + {}])", size_name(i.size()), i.imm)
        }
        _ => bad(),
    }
}

/// Name of a helper id (Linux numbering for the ones sluice offers).
pub fn helper_name(id: i32) -> String {
    match id {
        1 => "bpf_map_lookup_elem#1".into(),
        2 => "bpf_map_update_elem#2".into(),
        3 => "bpf_map_delete_elem#3".into(),
        5 => "bpf_ktime_get_ns#5".into(),
        6 => "bpf_trace_printk#6".into(),
        crate::helpers::SLUICE_HASH => format!("sluice_hash#{id}"),
        _ => format!("#{id}"),
    }
}

/// Disassembles a whole program, one numbered line per instruction
/// (the second slot of an `LDDW` is not printed separately).
pub fn disasm_program(insns: &[Insn]) -> String {
    let mut out = String::new();
    let mut pc = 0;
    while pc < insns.len() {
        let i = &insns[pc];
        let line = disasm(i, insns.get(pc + 1));
        out.push_str(&format!("{pc:4}: {line}\n"));
        pc += if i.code == LDDW { 2 } else { 1 };
    }
    out
}

impl fmt::Display for Insn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&disasm(self, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn decode_literal() {
        // r0 = *(u32 *)(r1 + 4)  : 61 10 04 00 00 00 00 00
        let i = Insn::decode([0x61, 0x10, 0x04, 0x00, 0, 0, 0, 0]);
        assert_eq!(i, Insn::new(0x61, 0, 1, 4, 0));
        assert_eq!(disasm(&i, None), "r0 = *(u32 *)(r1 +4)");
        // if r2 > r3 goto -2 : 2d 32 fe ff 00 00 00 00
        let j = Insn::decode([0x2d, 0x32, 0xfe, 0xff, 0, 0, 0, 0]);
        assert_eq!(disasm(&j, None), "if r2 > r3 goto -2");
        // r1 = map[0] ll
        let l = Insn::decode([0x18, 0x11, 0, 0, 0, 0, 0, 0]);
        assert_eq!(disasm(&l, None), "r1 = map[0] ll");
        assert_eq!(disasm(&Insn::new(0x95, 0, 0, 0, 0), None), "exit");
        assert_eq!(disasm(&Insn::new(0xff, 0, 0, 0, 0), None), "invalid opcode 0xff");
    }

    proptest! {
        #[test]
        fn encode_decode_roundtrip(b in any::<[u8; 8]>()) {
            prop_assert_eq!(Insn::decode(b).encode(), b);
        }
    }
}
