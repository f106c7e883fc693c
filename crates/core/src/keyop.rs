//! Ops over key words: straight-line computation on the key itself.
//!
//! # What
//! A front end whose packets carry their headers in the key (P4's header
//! vector: the parse program fills the key, tables match it, actions write
//! it, the deparser reads it) lowers its action bodies and computed
//! conditions into a [`KeyProg`]: a short register program that loads bit
//! slots of the key, computes with them and stores results back. It runs
//! as one [`crate::op::Op::Key`], on the key alone: the frame is not
//! touched until the front end deparses it.
//!
//! # Basic design
//! A [`Slot`] is up to 64 bits inside one key word (front ends lay their
//! fields out so that none straddles a word; a wider field is several
//! slots). Registers hold `u64`s; every arithmetic instruction names the
//! width it computes in and leaves its result reduced to that width
//! (P4's `bit<W>` arithmetic is modular), comparisons give 0 or 1. Jumps
//! go forward only, so a program runs each instruction at most once.
//!
//! A program records the key bits it reads ([`KeyProg::reads`]): when a
//! walk is being recorded for the megaflow cache, those bits join the
//! entry's mask, because a later lookup or branch may depend on what the
//! program computed from them. A front end that knows a program's result
//! never reaches a lookup may narrow that set ([`KeyProg::with_reads`]).
//!
//! # Invariants
//! - [`KeyProg::new`] refuses anything that could index outside the key
//!   or the registers, or jump backwards; [`KeyProg::run`] never panics.
//! - Each instruction runs at most once per [`KeyProg::run`].

use sluice_packet::key::{FlowKey, FlowMask, KEY_WORDS};

mod simplify;

/// Registers a program may use.
pub const REGS: usize = 32;
/// Longest program.
pub const MAX_INSNS: usize = 4096;

/// Bits `shift .. shift + width` of key word `word` (bit 0 the least
/// significant), read right-aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slot {
    pub word: u8,
    pub shift: u8,
    pub width: u8,
}

impl Slot {
    /// The slot's bits within its word.
    #[inline]
    pub fn mask(self) -> u64 {
        ones(self.width) << self.shift
    }

    fn is_valid(self) -> bool {
        usize::from(self.word) < KEY_WORDS
            && (1..=64).contains(&self.width)
            && u32::from(self.shift) + u32::from(self.width) <= 64
    }

    /// The slot's value in `key` (zero if the slot is outside the key).
    #[inline]
    pub fn get(self, key: &FlowKey) -> u64 {
        let w = key.words.get(usize::from(self.word)).copied().unwrap_or(0);
        (w >> (self.shift & 63)) & ones(self.width)
    }

    /// Writes `v` (reduced to the slot's width) into `key`.
    #[inline]
    pub fn set(self, key: &mut FlowKey, v: u64) {
        if let Some(w) = key.words.get_mut(usize::from(self.word)) {
            let m = self.mask();
            *w = (*w & !m) | ((v << (self.shift & 63)) & m);
        }
    }
}

/// A [`Slot`] with its mask worked out once, for code that reads or
/// writes the same slots for every packet (a parse, a deparser): each
/// access gives what the slot's own method gives (in a release build),
/// in a few instructions fewer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaskedSlot {
    /// `ones(width)`.
    mask: u64,
    word: u8,
    /// The slot's shift modulo 64.
    shift: u8,
    width: u8,
}

impl From<Slot> for MaskedSlot {
    fn from(s: Slot) -> MaskedSlot {
        MaskedSlot { mask: ones(s.width), word: s.word, shift: s.shift & 63, width: s.width }
    }
}

impl MaskedSlot {
    /// The slot it was made from (its shift modulo 64).
    pub fn slot(self) -> Slot {
        Slot { word: self.word, shift: self.shift, width: self.width }
    }

    pub fn width(self) -> u8 {
        self.width
    }

    /// `v` reduced to the slot's width (what [`MaskedSlot::get`] reads
    /// back after [`MaskedSlot::set`] of `v`).
    #[inline]
    pub fn fit(self, v: u64) -> u64 {
        v & self.mask
    }

    /// The slot's value in `key` (zero if the slot is outside the key).
    #[inline]
    pub fn get(self, key: &FlowKey) -> u64 {
        let w = key.words.get(usize::from(self.word)).copied().unwrap_or(0);
        (w >> self.shift) & self.mask
    }

    /// Writes `v` (reduced to the slot's width) into `key`.
    #[inline]
    pub fn set(self, key: &mut FlowKey, v: u64) {
        if let Some(w) = key.words.get_mut(usize::from(self.word)) {
            let m = self.mask << self.shift;
            *w = (*w & !m) | ((v << self.shift) & m);
        }
    }
}

/// Ones in the low `n` bits (`n` ≥ 64: all).
#[inline]
pub fn ones(n: u8) -> u64 {
    // One load (every `u8` indexes it) in place of a compare, a shift
    // and a select: slots' masks are worked out for every access.
    ONES[usize::from(n)]
}

/// [`ones`] for every `n`.
static ONES: [u64; 256] = {
    let mut t = [u64::MAX; 256];
    let mut n = 0;
    while n < 64 {
        t[n] = (1u64 << n) - 1;
        n += 1;
    }
    t
};

/// A register's index.
pub type Reg = u8;

/// A two-operand operation; `width` in [`Insn::Bin`] is the width the
/// operands have and the result is reduced to (comparisons: 0 or 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    And,
    Or,
    Xor,
    /// Shift left by the second operand (≥ width gives 0).
    Shl,
    /// Logical shift right.
    Shr,
    /// Arithmetic shift right (the operand is a signed `width`-bit value).
    Sar,
    /// Saturating unsigned add and subtract (P4's `|+|`, `|-|` on `bit<W>`).
    AddSat,
    SubSat,
    /// Saturating signed add and subtract (on `int<W>`).
    AddSatS,
    SubSatS,
    Eq,
    Ne,
    /// Unsigned comparisons.
    Lt,
    Le,
    /// Signed comparisons of `width`-bit two's-complement values.
    LtS,
    LeS,
    /// Unsigned quotient and remainder; a zero divisor gives 0 (front
    /// ends decide what P4's division by zero means before they emit one).
    Div,
    Rem,
}

/// One instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Insn {
    Const {
        dst: Reg,
        value: u64,
    },
    Load {
        dst: Reg,
        from: Slot,
    },
    /// Stores the low bits of `src` into the slot.
    Store {
        src: Reg,
        to: Slot,
    },
    Bin {
        op: BinOp,
        dst: Reg,
        a: Reg,
        b: Reg,
        width: u8,
    },
    /// Bitwise complement within `width`.
    Not {
        dst: Reg,
        a: Reg,
        width: u8,
    },
    /// Two's-complement negation within `width`.
    Neg {
        dst: Reg,
        a: Reg,
        width: u8,
    },
    /// Sign-extends a `from`-bit value to 64 bits.
    SExt {
        dst: Reg,
        a: Reg,
        from: u8,
    },
    /// Keeps the low `width` bits.
    Trunc {
        dst: Reg,
        a: Reg,
        width: u8,
    },
    Mov {
        dst: Reg,
        a: Reg,
    },
    /// Skips forward to instruction `to` if `cond` is zero.
    JumpIfZero {
        cond: Reg,
        to: u16,
    },
    /// Skips forward to instruction `to`.
    Jump {
        to: u16,
    },
    /// Stores `value` (reduced to the slot's width) into the slot.
    Set {
        to: Slot,
        value: u64,
    },
    /// [`Insn::Bin`] with a constant second operand.
    BinImm {
        op: BinOp,
        dst: Reg,
        a: Reg,
        imm: u64,
        width: u8,
    },
}

impl Insn {
    /// The register the instruction writes, and those it reads.
    fn regs(self) -> (Option<Reg>, [Option<Reg>; 2]) {
        match self {
            Insn::Const { dst, .. } | Insn::Load { dst, .. } => (Some(dst), [None, None]),
            Insn::Store { src, .. } => (None, [Some(src), None]),
            Insn::Bin { dst, a, b, .. } => (Some(dst), [Some(a), Some(b)]),
            Insn::BinImm { dst, a, .. }
            | Insn::Not { dst, a, .. }
            | Insn::Neg { dst, a, .. }
            | Insn::SExt { dst, a, .. }
            | Insn::Trunc { dst, a, .. }
            | Insn::Mov { dst, a } => (Some(dst), [Some(a), None]),
            Insn::JumpIfZero { cond, .. } => (None, [Some(cond), None]),
            Insn::Jump { .. } | Insn::Set { .. } => (None, [None, None]),
        }
    }
}

/// Why a program was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyProgError {
    TooLong(usize),
    BadSlot {
        at: usize,
        slot: Slot,
    },
    BadReg {
        at: usize,
        reg: Reg,
    },
    BadWidth {
        at: usize,
        width: u8,
    },
    /// A jump that does not go forward within the program (or to its end).
    BadJump {
        at: usize,
        to: u16,
    },
}

impl std::fmt::Display for KeyProgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyProgError::TooLong(n) => write!(f, "{n} instructions; at most {MAX_INSNS}"),
            KeyProgError::BadSlot { at, slot } => write!(
                f,
                "instruction {at}: slot word {} bits {}+{} is outside the key",
                slot.word, slot.shift, slot.width
            ),
            KeyProgError::BadReg { at, reg } => {
                write!(f, "instruction {at}: register {reg}; there are {REGS}")
            }
            KeyProgError::BadWidth { at, width } => {
                write!(f, "instruction {at}: width {width}, not 1 to 64")
            }
            KeyProgError::BadJump { at, to } => {
                write!(f, "instruction {at}: jump to {to} does not go forward")
            }
        }
    }
}

impl std::error::Error for KeyProgError {}

/// A checked program over key words. `repr(C)`, instructions first: a
/// run reads the box's pointer from the program's first cache line (the
/// line a cached hit prefetches, `walk::hot_addrs`), not from past the
/// 192-byte mask.
#[derive(Clone, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct KeyProg {
    insns: Box<[Insn]>,
    /// Every register the program names is below 8: a run zeroes 8
    /// registers, not [`REGS`].
    few_regs: bool,
    /// One past the highest register the program names (in the padding
    /// before `reads`; joining programs reads it, not every instruction).
    regs: u8,
    reads: FlowMask,
}

/// One past the highest register `insns` name.
pub(crate) fn regs_named(insns: &[Insn]) -> u8 {
    let mut regs = 0;
    for i in insns {
        let (dst, srcs) = i.regs();
        for r in srcs.into_iter().chain([dst]).flatten() {
            regs = regs.max(r + 1);
        }
    }
    regs
}

impl KeyProg {
    /// The bytes at the start of a program that a run reads (the
    /// instructions' pointer and length, then the register flag), for a
    /// cached hit to prefetch (`walk::hot_addrs`).
    pub(crate) const RUN_HEAD: usize = std::mem::offset_of!(KeyProg, few_regs) + 1;

    /// Checks `insns`; the program's [`KeyProg::reads`] are every slot it
    /// loads.
    pub fn new(insns: Vec<Insn>) -> Result<KeyProg, KeyProgError> {
        if insns.len() > MAX_INSNS {
            return Err(KeyProgError::TooLong(insns.len()));
        }
        let mut reads = FlowMask::ZERO;
        let n = insns.len();
        for (at, i) in insns.iter().enumerate() {
            let reg = |r: Reg| {
                if usize::from(r) < REGS {
                    Ok(())
                } else {
                    Err(KeyProgError::BadReg { at, reg: r })
                }
            };
            let width = |w: u8| {
                if (1..=64).contains(&w) {
                    Ok(())
                } else {
                    Err(KeyProgError::BadWidth { at, width: w })
                }
            };
            let jump = |to: u16| {
                if usize::from(to) > at && usize::from(to) <= n {
                    Ok(())
                } else {
                    Err(KeyProgError::BadJump { at, to })
                }
            };
            match *i {
                Insn::Const { dst, .. } => reg(dst)?,
                Insn::Load { dst, from } => {
                    reg(dst)?;
                    if !from.is_valid() {
                        return Err(KeyProgError::BadSlot { at, slot: from });
                    }
                    reads.words[usize::from(from.word)] |= from.mask();
                }
                Insn::Store { src, to } => {
                    reg(src)?;
                    if !to.is_valid() {
                        return Err(KeyProgError::BadSlot { at, slot: to });
                    }
                }
                Insn::Set { to, .. } => {
                    if !to.is_valid() {
                        return Err(KeyProgError::BadSlot { at, slot: to });
                    }
                }
                Insn::BinImm { dst, a, width: w, .. } => {
                    reg(dst)?;
                    reg(a)?;
                    width(w)?;
                }
                Insn::Bin { dst, a, b, width: w, .. } => {
                    reg(dst)?;
                    reg(a)?;
                    reg(b)?;
                    width(w)?;
                }
                Insn::Not { dst, a, width: w }
                | Insn::Neg { dst, a, width: w }
                | Insn::Trunc { dst, a, width: w }
                | Insn::SExt { dst, a, from: w } => {
                    reg(dst)?;
                    reg(a)?;
                    width(w)?;
                }
                Insn::Mov { dst, a } => {
                    reg(dst)?;
                    reg(a)?;
                }
                Insn::JumpIfZero { cond, to } => {
                    reg(cond)?;
                    jump(to)?;
                }
                Insn::Jump { to } => jump(to)?,
            }
        }
        let regs = regs_named(&insns);
        Ok(KeyProg { insns: insns.into_boxed_slice(), few_regs: regs <= 8, regs, reads })
    }

    /// The same program un-wildcarding `reads` instead of every slot it
    /// loads (see the module's *Basic design*).
    pub fn with_reads(mut self, reads: FlowMask) -> KeyProg {
        self.reads = reads;
        self
    }

    /// The key bits whose values the program's results depend on.
    pub fn reads(&self) -> &FlowMask {
        &self.reads
    }

    pub fn insns(&self) -> &[Insn] {
        &self.insns
    }

    /// Every key bit the program loads (whatever
    /// [`KeyProg::with_reads`] narrowed its reads to).
    pub fn loads(&self) -> FlowMask {
        let mut m = FlowMask::ZERO;
        for i in self.insns.iter() {
            if let Insn::Load { from, .. } = i {
                m.words[usize::from(from.word)] |= from.mask();
            }
        }
        m
    }

    /// Every key bit the program may write.
    pub fn writes(&self) -> FlowMask {
        let mut m = FlowMask::ZERO;
        for i in self.insns.iter() {
            if let Insn::Store { to, .. } | Insn::Set { to, .. } = i {
                m.words[usize::from(to.word)] |= to.mask();
            }
        }
        m
    }

    /// One past the highest register the program names.
    fn regs_used(&self) -> usize {
        usize::from(self.regs)
    }

    /// `self` then `next` as one program (reading what either reads),
    /// `next`'s registers renamed past `self`'s so each still starts from
    /// zeroed registers; `None` when together they need more than
    /// [`REGS`] registers or [`MAX_INSNS`] instructions.
    pub fn then(&self, next: &KeyProg) -> Option<KeyProg> {
        let base = self.regs_used();
        if base + next.regs_used() > REGS || self.insns.len() + next.insns.len() > MAX_INSNS {
            return None;
        }
        let (b, at) = (base as u8, self.insns.len() as u16);
        let mut insns = self.insns.to_vec();
        insns.extend(next.insns.iter().map(|&i| match i {
            Insn::Const { dst, value } => Insn::Const { dst: dst + b, value },
            Insn::Load { dst, from } => Insn::Load { dst: dst + b, from },
            Insn::Store { src, to } => Insn::Store { src: src + b, to },
            Insn::Set { to, value } => Insn::Set { to, value },
            Insn::Bin { op, dst, a, b: c, width } => {
                Insn::Bin { op, dst: dst + b, a: a + b, b: c + b, width }
            }
            Insn::BinImm { op, dst, a, imm, width } => {
                Insn::BinImm { op, dst: dst + b, a: a + b, imm, width }
            }
            Insn::Not { dst, a, width } => Insn::Not { dst: dst + b, a: a + b, width },
            Insn::Neg { dst, a, width } => Insn::Neg { dst: dst + b, a: a + b, width },
            Insn::SExt { dst, a, from } => Insn::SExt { dst: dst + b, a: a + b, from },
            Insn::Trunc { dst, a, width } => Insn::Trunc { dst: dst + b, a: a + b, width },
            Insn::Mov { dst, a } => Insn::Mov { dst: dst + b, a: a + b },
            Insn::JumpIfZero { cond, to } => Insn::JumpIfZero { cond: cond + b, to: to + at },
            Insn::Jump { to } => Insn::Jump { to: to + at },
        }));
        let mut reads = self.reads;
        for (w, r) in reads.words.iter_mut().zip(next.reads.words.iter()) {
            *w |= r;
        }
        KeyProg::new(insns).ok().map(|p| p.with_reads(reads))
    }

    /// Runs the program on `key`.
    #[inline]
    pub fn run(&self, key: &mut FlowKey) {
        if self.few_regs {
            self.run_with::<8>(key);
        } else {
            self.run_with::<REGS>(key);
        }
    }

    /// [`KeyProg::run`] with `N` registers (a power of two no greater
    /// than [`REGS`], above every register the program names).
    fn run_with<const N: usize>(&self, key: &mut FlowKey) {
        let mut r = [0u64; N];
        let mut pc = 0;
        while let Some(&i) = self.insns.get(pc) {
            pc += 1;
            // Indices were checked by `new` (and are below `N`);
            // `& (N - 1)` keeps the compiler from adding bounds checks
            // and cannot change them.
            let ix = |x: Reg| usize::from(x) & (N - 1);
            match i {
                Insn::Const { dst, value } => r[ix(dst)] = value,
                Insn::Load { dst, from } => r[ix(dst)] = from.get(key),
                Insn::Store { src, to } => to.set(key, r[ix(src)]),
                Insn::Bin { op, dst, a, b, width } => {
                    r[ix(dst)] = bin(op, r[ix(a)], r[ix(b)], width);
                }
                Insn::BinImm { op, dst, a, imm, width } => {
                    r[ix(dst)] = bin(op, r[ix(a)], imm, width);
                }
                Insn::Set { to, value } => to.set(key, value),
                Insn::Not { dst, a, width } => r[ix(dst)] = !r[ix(a)] & ones(width),
                Insn::Neg { dst, a, width } => r[ix(dst)] = r[ix(a)].wrapping_neg() & ones(width),
                Insn::SExt { dst, a, from } => r[ix(dst)] = sext(r[ix(a)], from) as u64,
                Insn::Trunc { dst, a, width } => r[ix(dst)] = r[ix(a)] & ones(width),
                Insn::Mov { dst, a } => r[ix(dst)] = r[ix(a)],
                Insn::JumpIfZero { cond, to } => {
                    if r[ix(cond)] == 0 {
                        pc = usize::from(to);
                    }
                }
                Insn::Jump { to } => pc = usize::from(to),
            }
        }
    }
}

/// `v`'s low `from` bits as a signed value.
#[inline]
pub fn sext(v: u64, from: u8) -> i64 {
    if from == 0 || from >= 64 {
        return v as i64;
    }
    let s = 64 - u32::from(from);
    ((v << s) as i64) >> s
}

/// One [`BinOp`] on `width`-bit operands.
pub fn bin(op: BinOp, a: u64, b: u64, width: u8) -> u64 {
    let m = ones(width);
    let (a, b) = (a & m, b & m);
    let smax = (m >> 1) as i64;
    let smin = -smax - 1;
    match op {
        BinOp::Add => a.wrapping_add(b) & m,
        BinOp::Sub => a.wrapping_sub(b) & m,
        BinOp::Mul => a.wrapping_mul(b) & m,
        BinOp::And => a & b,
        BinOp::Or => a | b,
        BinOp::Xor => a ^ b,
        BinOp::Shl => {
            if b >= u64::from(width) {
                0
            } else {
                (a << b) & m
            }
        }
        BinOp::Shr => {
            if b >= u64::from(width) {
                0
            } else {
                a >> b
            }
        }
        BinOp::Sar => {
            let sh = b.min(u64::from(width).saturating_sub(1)).min(63) as u32;
            (sext(a, width) >> sh) as u64 & m
        }
        BinOp::AddSat => a.checked_add(b).filter(|s| *s <= m).unwrap_or(m),
        BinOp::SubSat => a.saturating_sub(b),
        BinOp::AddSatS => {
            (i128::from(sext(a, width)) + i128::from(sext(b, width)))
                .clamp(smin.into(), smax.into()) as u64
                & m
        }
        BinOp::SubSatS => {
            (i128::from(sext(a, width)) - i128::from(sext(b, width)))
                .clamp(smin.into(), smax.into()) as u64
                & m
        }
        BinOp::Eq => u64::from(a == b),
        BinOp::Ne => u64::from(a != b),
        BinOp::Lt => u64::from(a < b),
        BinOp::Le => u64::from(a <= b),
        BinOp::LtS => u64::from(sext(a, width) < sext(b, width)),
        BinOp::LeS => u64::from(sext(a, width) <= sext(b, width)),
        BinOp::Div => a.checked_div(b).unwrap_or(0),
        BinOp::Rem => a.checked_rem(b).unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(word: u8, shift: u8, width: u8) -> Slot {
        Slot { word, shift, width }
    }

    #[test]
    fn slots_read_and_write_only_their_bits() {
        let mut k = FlowKey::ZERO;
        k.words[3] = u64::MAX;
        let s = slot(3, 8, 12);
        assert_eq!(s.get(&k), 0xfff);
        s.set(&mut k, 0x12345);
        assert_eq!(k.words[3], !(0xfffu64 << 8) | (0x345 << 8));
        assert_eq!(s.get(&k), 0x345);
        let whole = slot(5, 0, 64);
        whole.set(&mut k, 7);
        assert_eq!(whole.get(&k), 7);
    }

    #[test]
    fn ones_has_the_low_bits_set() {
        for n in 0..=255u8 {
            let want = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
            assert_eq!(ones(n), want, "{n}");
        }
    }

    #[test]
    fn masked_slots_read_and_write_their_bits_alone() {
        // Every valid slot of one word, and slots outside the key:
        // masked and plain slots against a bit-by-bit model.
        let mut shapes: Vec<Slot> = (0..64u8)
            .flat_map(|shift| (1..=64 - shift).map(move |width| slot(1, shift, width)))
            .collect();
        shapes.extend([slot(KEY_WORDS as u8, 0, 8), slot(200, 3, 64)]);
        let inside = |s: Slot| usize::from(s.word) < KEY_WORDS;
        let bits = |s: Slot| u32::from(s.shift)..u32::from(s.shift) + u32::from(s.width);
        let model_get = |k: &FlowKey, s: Slot| -> u64 {
            if !inside(s) {
                return 0;
            }
            bits(s).rev().fold(0, |acc, b| (acc << 1) | ((k.words[usize::from(s.word)] >> b) & 1))
        };
        let model_set = |k: &mut FlowKey, s: Slot, v: u64| {
            if inside(s) {
                for (i, b) in bits(s).enumerate() {
                    let w = &mut k.words[usize::from(s.word)];
                    *w = (*w & !(1 << b)) | (((v >> i) & 1) << b);
                }
            }
        };
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for s in shapes {
            let m = MaskedSlot::from(s);
            assert_eq!(m.slot(), s);
            for _ in 0..4 {
                x = x.wrapping_mul(0x5851_f42d_4c95_7f2d).wrapping_add(1442695040888963407);
                let mut k = FlowKey::ZERO;
                k.words[1] = x.rotate_left(17);
                let (mut a, mut b, mut c) = (k, k, k);
                assert_eq!(m.get(&k), model_get(&k, s), "{s:?}");
                assert_eq!(s.get(&k), model_get(&k, s), "{s:?}");
                model_set(&mut a, s, x);
                m.set(&mut b, x);
                s.set(&mut c, x);
                assert_eq!(a, b, "{s:?}");
                assert_eq!(a, c, "{s:?}");
                if inside(s) {
                    assert_eq!(m.get(&b), m.fit(x), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn ttl_decrement_and_compare() {
        // ttl = ttl - 1; flag = ttl == 0
        let ttl = slot(2, 16, 8);
        let flag = slot(2, 0, 1);
        let p = KeyProg::new(vec![
            Insn::Load { dst: 0, from: ttl },
            Insn::Const { dst: 1, value: 1 },
            Insn::Bin { op: BinOp::Sub, dst: 0, a: 0, b: 1, width: 8 },
            Insn::Store { src: 0, to: ttl },
            Insn::Const { dst: 2, value: 0 },
            Insn::Bin { op: BinOp::Eq, dst: 3, a: 0, b: 2, width: 8 },
            Insn::Store { src: 3, to: flag },
        ])
        .unwrap();
        let mut k = FlowKey::ZERO;
        ttl.set(&mut k, 1);
        p.run(&mut k);
        assert_eq!((ttl.get(&k), flag.get(&k)), (0, 1));
        p.run(&mut k);
        assert_eq!((ttl.get(&k), flag.get(&k)), (255, 0));
        assert_eq!(p.reads().words[2], ttl.mask());
    }

    #[test]
    fn forward_jumps_skip() {
        let out = slot(0, 0, 8);
        let p = KeyProg::new(vec![
            Insn::Load { dst: 0, from: slot(1, 0, 1) },
            Insn::JumpIfZero { cond: 0, to: 4 },
            Insn::Const { dst: 1, value: 10 },
            Insn::Jump { to: 5 },
            Insn::Const { dst: 1, value: 20 },
            Insn::Store { src: 1, to: out },
        ])
        .unwrap();
        let mut k = FlowKey::ZERO;
        p.run(&mut k);
        assert_eq!(out.get(&k), 20);
        k.words[1] = 1;
        p.run(&mut k);
        assert_eq!(out.get(&k), 10);
    }

    #[test]
    fn bad_programs_are_refused() {
        let bad = |i: Insn| KeyProg::new(vec![i]).unwrap_err();
        assert!(matches!(
            bad(Insn::Load { dst: 0, from: slot(24, 0, 8) }),
            KeyProgError::BadSlot { .. }
        ));
        assert!(matches!(
            bad(Insn::Load { dst: 0, from: slot(0, 60, 8) }),
            KeyProgError::BadSlot { .. }
        ));
        assert!(matches!(
            bad(Insn::Store { src: 0, to: slot(0, 0, 0) }),
            KeyProgError::BadSlot { .. }
        ));
        assert!(matches!(bad(Insn::Mov { dst: 32, a: 0 }), KeyProgError::BadReg { .. }));
        assert!(matches!(
            bad(Insn::Not { dst: 0, a: 0, width: 65 }),
            KeyProgError::BadWidth { .. }
        ));
        assert!(matches!(bad(Insn::Jump { to: 0 }), KeyProgError::BadJump { .. }));
        assert!(matches!(bad(Insn::Jump { to: 2 }), KeyProgError::BadJump { .. }));
        assert!(KeyProg::new(vec![Insn::Jump { to: 1 }]).is_ok());
    }

    #[test]
    fn arithmetic_matches_a_wide_model() {
        // Every op on every pair of 4-bit values against i128 arithmetic.
        let w = 4u8;
        let m = 15i128;
        let s = |v: u64| i128::from(sext(v, w));
        for a in 0..16u64 {
            for b in 0..16u64 {
                let (ai, bi) = (i128::from(a), i128::from(b));
                let cases = [
                    (BinOp::Add, (ai + bi) & m),
                    (BinOp::Sub, (ai - bi) & m),
                    (BinOp::Mul, (ai * bi) & m),
                    (BinOp::Shl, if b >= 4 { 0 } else { (ai << b) & m }),
                    (BinOp::Shr, if b >= 4 { 0 } else { ai >> b }),
                    (BinOp::Sar, (s(a) >> b.min(3)) & m),
                    (BinOp::AddSat, (ai + bi).min(m)),
                    (BinOp::SubSat, (ai - bi).max(0)),
                    (BinOp::AddSatS, (s(a) + s(b)).clamp(-8, 7) & m),
                    (BinOp::SubSatS, (s(a) - s(b)).clamp(-8, 7) & m),
                    (BinOp::Lt, i128::from(a < b)),
                    (BinOp::LeS, i128::from(s(a) <= s(b))),
                    (BinOp::Div, if b == 0 { 0 } else { ai / bi }),
                    (BinOp::Rem, if b == 0 { 0 } else { ai % bi }),
                    (BinOp::LtS, i128::from(s(a) < s(b))),
                ];
                for (op, want) in cases {
                    assert_eq!(i128::from(bin(op, a, b, w)), want, "{op:?} {a} {b}");
                }
            }
        }
        assert_eq!(bin(BinOp::Add, u64::MAX, 1, 64), 0);
        assert_eq!(bin(BinOp::AddSat, u64::MAX, 1, 64), u64::MAX);
        assert_eq!(bin(BinOp::Shl, 1, 64, 64), 0);
    }

    /// Random programs over a few slots and registers: with jumps or
    /// not, every instruction kind.
    fn arb_prog() -> impl proptest::strategy::Strategy<Value = KeyProg> {
        use proptest::prelude::*;
        let width = prop_oneof![Just(1u8), Just(8), Just(16), Just(64), 1u8..=64].boxed();
        let value = prop_oneof![Just(0u64), Just(1), Just(u64::MAX), any::<u64>()].boxed();
        let op = (0usize..22)
            .prop_map(|i| {
                use BinOp::*;
                [
                    Add, Sub, Mul, And, Or, Xor, Shl, Shr, Sar, AddSat, SubSat, AddSatS, SubSatS,
                    Eq, Ne, Lt, Le, LtS, LeS, Div, Rem, Add,
                ][i]
            })
            .boxed();
        arb_prog_of(0..6, width, value, op)
    }

    /// Branchy programs: three registers, tests against zero and small
    /// constants at widths narrower and wider than the slots loaded —
    /// the conditions, copies and widths the simplifier reasons about.
    fn arb_branchy() -> impl proptest::strategy::Strategy<Value = KeyProg> {
        use proptest::prelude::*;
        let width = prop_oneof![Just(1u8), Just(8), Just(16), Just(64)].boxed();
        let value = prop_oneof![Just(0u64), Just(1), Just(2), Just(255), Just(256)].boxed();
        let op = prop_oneof![
            Just(BinOp::Ne),
            Just(BinOp::Eq),
            Just(BinOp::And),
            Just(BinOp::Shr),
            Just(BinOp::Lt),
            Just(BinOp::Add),
        ]
        .boxed();
        arb_prog_of(0..3, width, value, op)
    }

    fn arb_prog_of(
        reg: std::ops::Range<u8>,
        width: proptest::strategy::BoxedStrategy<u8>,
        value: proptest::strategy::BoxedStrategy<u64>,
        op: proptest::strategy::BoxedStrategy<BinOp>,
    ) -> impl proptest::strategy::Strategy<Value = KeyProg> {
        use proptest::prelude::*;
        let slot = (0u8..2, 0u8..4).prop_map(|(w, k)| {
            let (shift, width) = [(0, 8), (8, 16), (24, 1), (0, 64)][usize::from(k)];
            Slot { word: w, shift, width }
        });
        let insn = prop_oneof![
            (reg.clone(), value.clone()).prop_map(|(dst, value)| Insn::Const { dst, value }),
            (reg.clone(), slot.clone()).prop_map(|(dst, from)| Insn::Load { dst, from }),
            (reg.clone(), slot.clone()).prop_map(|(src, to)| Insn::Store { src, to }),
            (slot, value.clone()).prop_map(|(to, value)| Insn::Set { to, value }),
            (op.clone(), reg.clone(), reg.clone(), reg.clone(), width.clone())
                .prop_map(|(op, dst, a, b, width)| Insn::Bin { op, dst, a, b, width }),
            (op, reg.clone(), reg.clone(), value, width.clone())
                .prop_map(|(op, dst, a, imm, width)| Insn::BinImm { op, dst, a, imm, width }),
            (0u8..6, reg.clone(), reg.clone(), width).prop_map(|(k, dst, a, w)| match k {
                0 => Insn::Not { dst, a, width: w },
                1 => Insn::Neg { dst, a, width: w },
                2 => Insn::SExt { dst, a, from: w },
                3 => Insn::Trunc { dst, a, width: w },
                _ => Insn::Mov { dst, a },
            }),
            // Twice as likely: the branches are what the simplifier decides.
            (reg.clone(), 1u16..4).prop_map(|(cond, d)| Insn::JumpIfZero { cond, to: d }),
            (reg, 1u16..4).prop_map(|(cond, d)| Insn::JumpIfZero { cond, to: d }),
            (1u16..4).prop_map(|d| Insn::Jump { to: d }),
        ];
        (proptest::collection::vec(insn, 0..24), any::<bool>()).prop_map(|(v, jumps)| {
            // Jump distances made targets; without `jumps`, none.
            let n = v.len();
            let v: Vec<Insn> = v
                .into_iter()
                .enumerate()
                .filter_map(|(at, i)| {
                    let to = |d: u16| ((at + usize::from(d)).min(n)) as u16;
                    match i {
                        Insn::JumpIfZero { cond, to: d } => {
                            jumps.then(|| Insn::JumpIfZero { cond, to: to(d) })
                        }
                        Insn::Jump { to: d } => jumps.then(|| Insn::Jump { to: to(d) }),
                        i => Some(i),
                    }
                })
                .collect();
            // Dropping jumps moved the rest: retarget within bounds.
            let n = v.len();
            let v = v
                .into_iter()
                .enumerate()
                .map(|(at, i)| match i {
                    Insn::JumpIfZero { cond, to } => {
                        Insn::JumpIfZero { cond, to: (usize::from(to).clamp(at + 1, n)) as u16 }
                    }
                    Insn::Jump { to } => {
                        Insn::Jump { to: (usize::from(to).clamp(at + 1, n)) as u16 }
                    }
                    i => i,
                })
                .collect();
            KeyProg::new(v).unwrap()
        })
    }

    /// Key words whose slots are often zero, small, or zero in their low
    /// bits only: where a wrongly simplified test or width goes wrong.
    fn arb_word() -> impl proptest::strategy::Strategy<Value = u64> {
        use proptest::prelude::*;
        prop_oneof![any::<u64>(), 0u64..4, (0u32..64).prop_map(|k| 1u64 << k)]
    }

    /// The instructions read one by one with all 32 registers: what
    /// [`KeyProg::run`] must do.
    fn reference(p: &KeyProg, key: &mut FlowKey) {
        let mut r = [0u64; REGS];
        let mut pc = 0;
        while let Some(&i) = p.insns().get(pc) {
            pc += 1;
            let x = |g: Reg| usize::from(g);
            match i {
                Insn::Const { dst, value } => r[x(dst)] = value,
                Insn::Load { dst, from } => r[x(dst)] = from.get(key),
                Insn::Store { src, to } => to.set(key, r[x(src)]),
                Insn::Set { to, value } => to.set(key, value),
                Insn::Bin { op, dst, a, b, width } => r[x(dst)] = bin(op, r[x(a)], r[x(b)], width),
                Insn::BinImm { op, dst, a, imm, width } => r[x(dst)] = bin(op, r[x(a)], imm, width),
                Insn::Not { dst, a, width } => r[x(dst)] = !r[x(a)] & ones(width),
                Insn::Neg { dst, a, width } => r[x(dst)] = r[x(a)].wrapping_neg() & ones(width),
                Insn::SExt { dst, a, from } => r[x(dst)] = sext(r[x(a)], from) as u64,
                Insn::Trunc { dst, a, width } => r[x(dst)] = r[x(a)] & ones(width),
                Insn::Mov { dst, a } => r[x(dst)] = r[x(a)],
                Insn::JumpIfZero { cond, to } if r[x(cond)] == 0 => pc = usize::from(to),
                Insn::JumpIfZero { .. } => {}
                Insn::Jump { to } => pc = usize::from(to),
            }
        }
    }

    /// Programs naming registers below `top`: just past 8 (where a run
    /// zeroes 8 registers or 32) or up to [`REGS`].
    fn arb_regs_below(top: u8) -> impl proptest::strategy::Strategy<Value = KeyProg> {
        use proptest::prelude::*;
        let width = prop_oneof![Just(8u8), Just(64), 1u8..=64].boxed();
        let value = prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()].boxed();
        let op = prop_oneof![Just(BinOp::Add), Just(BinOp::Xor), Just(BinOp::Lt)].boxed();
        arb_prog_of(0..top, width, value, op)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(5000))]
        /// `run` (8 registers when the program names no more) changes
        /// the key as the instructions say.
        #[test]
        fn runs_do_what_the_instructions_say(
            p in proptest::prop_oneof![arb_prog(), arb_regs_below(10), arb_regs_below(REGS as u8)],
            words in proptest::array::uniform3(arb_word()),
        ) {
            let mut k = FlowKey::ZERO;
            k.words[..3].copy_from_slice(&words);
            let (mut want, mut got) = (k, k);
            reference(&p, &mut want);
            p.run(&mut got);
            proptest::prop_assert_eq!(want, got, "{:?}", p.insns());
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20000))]
        /// What a composed program runs (`walk::compose`): a simplified
        /// program, and two programs run as one, change the key exactly
        /// as the originals do.
        #[test]
        fn simplified_and_joined_programs_agree(
            (a, b) in proptest::prop_oneof![(arb_prog(), arb_prog()), (arb_branchy(), arb_branchy())],
            words in proptest::array::uniform3(arb_word()),
        ) {
            let mut k = FlowKey::ZERO;
            k.words[..3].copy_from_slice(&words);
            let (mut want, mut got) = (k, k);
            a.run(&mut want);
            a.simplified().run(&mut got);
            proptest::prop_assert_eq!(want, got, "simplified {:?}", a.simplified());
            b.run(&mut want);
            let mut joined = k;
            match a.then(&b) {
                Some(j) => {
                    j.run(&mut joined);
                    proptest::prop_assert_eq!(want, joined, "joined {:?}", j);
                    let mut s = k;
                    j.simplified().run(&mut s);
                    proptest::prop_assert_eq!(want, s, "joined and simplified");
                    proptest::prop_assert!(j.simplified().insns().len() <= j.insns().len());
                }
                None => proptest::prop_assert!(a.regs_used() + b.regs_used() > REGS),
            }
        }
    }

    #[test]
    fn a_composed_router_action_shrinks() {
        // An action setting two MACs, the TTL and the port, then what
        // the traffic manager does: 14 instructions become 6 (the port
        // forwarded from the slot it was set in, the first store to it
        // overwritten unread, the port and the reset spec next to each
        // other in one word stored at once).
        let (src, dst, ttl, spec, eport) =
            (slot(2, 0, 48), slot(1, 0, 48), slot(1, 56, 8), slot(5, 0, 9), slot(5, 9, 9));
        let act = KeyProg::new(vec![
            Insn::Const { dst: 0, value: 0x0200_0000_00fe },
            Insn::Store { src: 0, to: src },
            Insn::Const { dst: 0, value: 0x0200_0000_0101 },
            Insn::Store { src: 0, to: dst },
            Insn::Load { dst: 0, from: ttl },
            Insn::Const { dst: 1, value: 1 },
            Insn::Bin { op: BinOp::Sub, dst: 0, a: 0, b: 1, width: 8 },
            Insn::Store { src: 0, to: ttl },
            Insn::Const { dst: 0, value: 3 },
            Insn::Store { src: 0, to: spec },
        ])
        .unwrap();
        let tm = KeyProg::new(vec![
            Insn::Load { dst: 0, from: spec },
            Insn::Store { src: 0, to: eport },
            Insn::Const { dst: 1, value: 512 },
            Insn::Store { src: 1, to: spec },
        ])
        .unwrap();
        let j = act.then(&tm).unwrap().simplified();
        assert_eq!(j.insns().len(), 6, "{:?}", j.insns());
        let mut k = FlowKey::ZERO;
        ttl.set(&mut k, 64);
        j.run(&mut k);
        assert_eq!((ttl.get(&k), eport.get(&k), spec.get(&k)), (63, 3, 0));
        assert_eq!(src.get(&k), 0x0200_0000_00fe);
    }

    /// `p` simplified changes each of `keys` (given as word 0, word 1)
    /// as `p` does.
    fn agrees_on(p: &KeyProg, keys: &[(u64, u64)]) {
        let q = p.simplified();
        for &(w0, w1) in keys {
            let mut k = FlowKey::ZERO;
            (k.words[0], k.words[1]) = (w0, w1);
            let (mut want, mut got) = (k, k);
            p.run(&mut want);
            q.run(&mut got);
            assert_eq!(want, got, "key {w0:#x} {w1:#x}: {:?} simplified to {:?}", p, q);
        }
    }

    #[test]
    fn conditions_and_copies_keep_their_widths() {
        let (wide, narrow, out) = (slot(0, 8, 16), slot(0, 0, 8), slot(1, 0, 16));
        let load = |from| Insn::Load { dst: 0, from };
        let imm = |op, dst, imm, width| Insn::BinImm { op, dst, a: 0, imm, width };
        let prog = |v: Vec<Insn>| KeyProg::new(v).unwrap();
        let keys = [(0, 0), (0x100, 0), (0x10000, 0), (0x80, 0), (4, 0), (6, 0), (0xff, 0)];
        // `r != 0` at a width narrower than `r`'s bits is not `r` as a
        // condition: 0x100 tested at 8 bits is zero.
        for dst in [0, 1] {
            agrees_on(
                &prog(vec![
                    load(wide),
                    imm(BinOp::Ne, dst, 0, 8),
                    Insn::JumpIfZero { cond: dst, to: 4 },
                    Insn::Set { to: out, value: 1 },
                ]),
                &keys,
            );
        }
        // `r = r != 0` tested by a jump only is the old `r` as the
        // condition; stored, it is not.
        let p = prog(vec![
            load(narrow),
            imm(BinOp::Ne, 0, 0, 8),
            Insn::Store { src: 0, to: out },
            Insn::JumpIfZero { cond: 0, to: 5 },
            Insn::Set { to: wide, value: 1 },
        ]);
        agrees_on(&p, &keys);
        let q = prog(vec![
            load(narrow),
            imm(BinOp::Ne, 0, 0, 8),
            Insn::JumpIfZero { cond: 0, to: 4 },
            Insn::Set { to: wide, value: 1 },
        ]);
        agrees_on(&q, &keys);
        assert_eq!(q.simplified().insns().len(), 3, "{:?}", q.simplified());
        // Nonzero is 1 only for a value of one bit: not `r >> 1`, not
        // `r & 6`.
        for op in [BinOp::Shr, BinOp::And, BinOp::Ne, BinOp::Lt] {
            let k = if op == BinOp::And { 6 } else { 1 };
            agrees_on(
                &prog(vec![
                    load(narrow),
                    imm(op, 1, k, 8),
                    Insn::JumpIfZero { cond: 1, to: 4 },
                    Insn::Store { src: 1, to: out },
                ]),
                &keys,
            );
        }
        // Keeping 7 bits of an 8-bit value is not a copy; keeping 8 is.
        for width in [7, 8] {
            let p = prog(vec![
                load(narrow),
                Insn::Trunc { dst: 1, a: 0, width },
                Insn::Store { src: 1, to: out },
            ]);
            agrees_on(&p, &keys);
            assert_eq!(p.simplified().insns().len(), if width == 8 { 2 } else { 3 });
        }
        // A copy outlives the register it copied being overwritten.
        agrees_on(
            &prog(vec![
                load(wide),
                Insn::Mov { dst: 1, a: 0 },
                Insn::Mov { dst: 2, a: 1 },
                Insn::Const { dst: 0, value: 5 },
                Insn::Store { src: 2, to: out },
                Insn::Store { src: 0, to: narrow },
            ]),
            &keys,
        );
    }

    #[test]
    fn stores_next_to_each_other_join_unless_a_jump_lands_between() {
        let (a, b, c) = (slot(0, 0, 8), slot(0, 8, 8), slot(0, 4, 8));
        let far = slot(0, 40, 8);
        let sets = vec![
            Insn::Set { to: a, value: 0x11 },
            Insn::Set { to: far, value: 0x22 },
            Insn::Set { to: b, value: 0x33 },
            Insn::Set { to: c, value: 0x1ff },
        ];
        let keys = [(0, 0), (u64::MAX, 1), (0x1234_5678_9abc_def0, 0)];
        let p = KeyProg::new(sets.clone()).unwrap();
        agrees_on(&p, &keys);
        // `a`, `b` and `c` touch: one store of bits 0..16; `far` apart.
        assert_eq!(
            p.simplified().insns(),
            [Insn::Set { to: slot(0, 0, 16), value: 0x3ff1 }, Insn::Set { to: far, value: 0x22 }]
        );
        // A jump into the run splits it: the path from the jump must not
        // store what the stores before it did.
        let mut branchy =
            vec![Insn::Load { dst: 0, from: slot(1, 0, 1) }, Insn::JumpIfZero { cond: 0, to: 4 }];
        branchy.extend(sets);
        let p = KeyProg::new(branchy).unwrap();
        agrees_on(&p, &keys);
        assert_eq!(p.simplified().insns().len(), 5, "{:?}", p.simplified().insns());
    }

    #[test]
    fn the_l2_egress_check_jumps_straight_to_the_end() {
        // What the L2 switch example's cache composes for a unicast hit
        // (the action, the traffic manager, the egress check
        // `mcast_grp != 0 && egress_port == ingress_port`): a unicast
        // packet's group is zero, and the simplified program decides it
        // in one test of the loaded group, with no copy or comparison.
        let (spec, eport, iport, mcast, scratch) =
            (slot(1, 48, 9), slot(2, 48, 9), slot(0, 49, 9), slot(6, 48, 16), slot(3, 0, 32));
        let p = KeyProg::new(vec![
            Insn::Const { dst: 0, value: 3 },
            Insn::Store { src: 0, to: spec },
            Insn::Load { dst: 1, from: spec },
            Insn::Store { src: 1, to: eport },
            Insn::Const { dst: 2, value: 512 },
            Insn::Store { src: 2, to: spec },
            Insn::Const { dst: 3, value: 0 },
            Insn::Store { src: 3, to: scratch },
            Insn::Load { dst: 4, from: mcast },
            Insn::Const { dst: 5, value: 0 },
            Insn::Bin { op: BinOp::Ne, dst: 4, a: 4, b: 5, width: 16 },
            Insn::Mov { dst: 5, a: 4 },
            Insn::Mov { dst: 6, a: 4 },
            Insn::JumpIfZero { cond: 6, to: 18 },
            Insn::Load { dst: 7, from: eport },
            Insn::Load { dst: 8, from: iport },
            Insn::Bin { op: BinOp::Eq, dst: 7, a: 7, b: 8, width: 9 },
            Insn::Mov { dst: 5, a: 7 },
            Insn::JumpIfZero { cond: 5, to: 23 },
            Insn::Const { dst: 8, value: 511 },
            Insn::Store { src: 8, to: spec },
            Insn::Const { dst: 8, value: 0 },
            Insn::Store { src: 8, to: mcast },
        ])
        .unwrap();
        let q = p.simplified();
        let end = q.insns().len() as u16;
        assert_eq!(
            q.insns()[..5],
            [
                Insn::Set { to: eport, value: 3 },
                // 512 reduced to the slot's 9 bits.
                Insn::Set { to: spec, value: 0 },
                Insn::Set { to: scratch, value: 0 },
                Insn::Load { dst: 4, from: mcast },
                Insn::JumpIfZero { cond: 4, to: end },
            ],
            "{:?}",
            q.insns()
        );
        for (group, port) in [(0, 3), (1, 3), (1, 4), (0x100, 3)] {
            let mut k = FlowKey::ZERO;
            mcast.set(&mut k, group);
            iport.set(&mut k, port);
            let (mut want, mut got) = (k, k);
            p.run(&mut want);
            q.run(&mut got);
            assert_eq!(want, got, "group {group} port {port}");
        }
    }
}
