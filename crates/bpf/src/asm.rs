//! A tiny assembler for building programs in tests and in the kernel-oracle
//! corpus: one function per instruction form, named after the kernel's
//! `BPF_*` macros (`filter.h`).

use crate::insn::{alu, class, jmp, mode, Insn, LDDW, PSEUDO_MAP_FD, SRC_X};

pub use crate::insn::{alu as op, jmp as j, size as sz};

pub fn alu64_imm(op: u8, dst: u8, imm: i32) -> Insn {
    Insn::new(class::ALU64 | op, dst, 0, 0, imm)
}
pub fn alu64_reg(op: u8, dst: u8, src: u8) -> Insn {
    Insn::new(class::ALU64 | op | SRC_X, dst, src, 0, 0)
}
pub fn alu32_imm(op: u8, dst: u8, imm: i32) -> Insn {
    Insn::new(class::ALU | op, dst, 0, 0, imm)
}
pub fn alu32_reg(op: u8, dst: u8, src: u8) -> Insn {
    Insn::new(class::ALU | op | SRC_X, dst, src, 0, 0)
}
pub fn mov64_imm(dst: u8, imm: i32) -> Insn {
    alu64_imm(alu::MOV, dst, imm)
}
pub fn mov64_reg(dst: u8, src: u8) -> Insn {
    alu64_reg(alu::MOV, dst, src)
}
pub fn mov32_imm(dst: u8, imm: i32) -> Insn {
    alu32_imm(alu::MOV, dst, imm)
}
pub fn endian(to_be: bool, dst: u8, width: i32) -> Insn {
    Insn::new(class::ALU | alu::END | if to_be { SRC_X } else { 0 }, dst, 0, 0, width)
}
/// Two slots.
pub fn lddw(dst: u8, v: u64) -> [Insn; 2] {
    [Insn::new(LDDW, dst, 0, 0, v as u32 as i32), Insn::new(0, 0, 0, 0, (v >> 32) as u32 as i32)]
}
/// Two slots: map reference by index.
pub fn ld_map(dst: u8, map: i32) -> [Insn; 2] {
    [Insn::new(LDDW, dst, PSEUDO_MAP_FD, 0, map), Insn::new(0, 0, 0, 0, 0)]
}
pub fn ldx(sz: u8, dst: u8, src: u8, off: i16) -> Insn {
    Insn::new(class::LDX | mode::MEM | sz, dst, src, off, 0)
}
pub fn stx(sz: u8, dst: u8, src: u8, off: i16) -> Insn {
    Insn::new(class::STX | mode::MEM | sz, dst, src, off, 0)
}
pub fn st(sz: u8, dst: u8, off: i16, imm: i32) -> Insn {
    Insn::new(class::ST | mode::MEM | sz, dst, 0, off, imm)
}
pub fn ld_abs(sz: u8, imm: i32) -> Insn {
    Insn::new(class::LD | mode::ABS | sz, 0, 0, 0, imm)
}
pub fn ld_ind(sz: u8, src: u8, imm: i32) -> Insn {
    Insn::new(class::LD | mode::IND | sz, 0, src, 0, imm)
}
pub fn jmp_imm(op: u8, dst: u8, imm: i32, off: i16) -> Insn {
    Insn::new(class::JMP | op, dst, 0, off, imm)
}
pub fn jmp_reg(op: u8, dst: u8, src: u8, off: i16) -> Insn {
    Insn::new(class::JMP | op | SRC_X, dst, src, off, 0)
}
pub fn jmp32_imm(op: u8, dst: u8, imm: i32, off: i16) -> Insn {
    Insn::new(class::JMP32 | op, dst, 0, off, imm)
}
pub fn jmp32_reg(op: u8, dst: u8, src: u8, off: i16) -> Insn {
    Insn::new(class::JMP32 | op | SRC_X, dst, src, off, 0)
}
pub fn ja(off: i16) -> Insn {
    Insn::new(class::JMP | jmp::JA, 0, 0, off, 0)
}
pub fn call(id: i32) -> Insn {
    Insn::new(class::JMP | jmp::CALL, 0, 0, 0, id)
}
pub fn exit() -> Insn {
    Insn::new(class::JMP | jmp::EXIT, 0, 0, 0, 0)
}

/// Flattens a list of instruction groups (so `lddw` pairs can be mixed in).
#[macro_export]
macro_rules! prog {
    ($($e:expr),* $(,)?) => {{
        let mut v: Vec<$crate::insn::Insn> = Vec::new();
        $( $crate::asm::Push::push_to($e, &mut v); )*
        v
    }};
}

/// Anything that can be appended to an instruction list.
pub trait Push {
    fn push_to(self, v: &mut Vec<Insn>);
}
impl Push for Insn {
    fn push_to(self, v: &mut Vec<Insn>) {
        v.push(self);
    }
}
impl Push for [Insn; 2] {
    fn push_to(self, v: &mut Vec<Insn>) {
        v.extend_from_slice(&self);
    }
}
impl Push for Vec<Insn> {
    fn push_to(self, v: &mut Vec<Insn>) {
        v.extend(self);
    }
}
