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

/// Ones in the low `n` bits (`n` ≥ 64: all).
#[inline]
pub fn ones(n: u8) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

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

/// A checked program over key words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyProg {
    insns: Box<[Insn]>,
    reads: FlowMask,
}

impl KeyProg {
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
        Ok(KeyProg { insns: insns.into_boxed_slice(), reads })
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
        let mut n = 0;
        for i in self.insns.iter() {
            let (dst, srcs) = i.regs();
            for r in srcs.into_iter().chain([dst]).flatten() {
                n = n.max(usize::from(r) + 1);
            }
        }
        n
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

    /// The same effect on the key in as few instructions as this pass
    /// finds, for a program run often (a cache entry's): constants
    /// folded through registers (which start at zero) and through slots
    /// (a load of a slot the program set), a store of a known value made
    /// an [`Insn::Set`], a constant second operand an [`Insn::BinImm`], a
    /// store that a later one overwrites unread dropped, and what no
    /// store depends on dropped. In a program with jumps, only the
    /// straight-line part before the first jump is simplified (what
    /// follows keeps every register it reads, and the jumps are moved).
    pub fn simplified(&self) -> KeyProg {
        let first_jump = self
            .insns
            .iter()
            .position(|i| matches!(i, Insn::Jump { .. } | Insn::JumpIfZero { .. }))
            .unwrap_or(self.insns.len());
        let (head, tail) = self.insns.split_at(first_jump);
        let ix = |r: Reg| usize::from(r) & (REGS - 1);
        // Registers the rest reads: live after the head.
        let mut live = [false; REGS];
        for &i in tail {
            for r in i.regs().1.into_iter().flatten() {
                live[ix(r)] = true;
            }
        }
        let mut known = [Some(0u64); REGS];
        // Slots holding a value the program stored, exactly.
        let mut held: Vec<(Slot, u64)> = Vec::new();
        let overlap = |a: Slot, b: Slot| a.word == b.word && a.mask() & b.mask() != 0;
        let mut out = Vec::with_capacity(self.insns.len());
        for &i in head {
            // The instruction's result when its operands are known.
            let folded = match i {
                Insn::Const { value, .. } => Some(value),
                Insn::Bin { op, a, b, width, .. } => {
                    known[ix(a)].zip(known[ix(b)]).map(|(x, y)| bin(op, x, y, width))
                }
                Insn::BinImm { op, a, imm, width, .. } => {
                    known[ix(a)].map(|x| bin(op, x, imm, width))
                }
                Insn::Not { a, width, .. } => known[ix(a)].map(|x| !x & ones(width)),
                Insn::Neg { a, width, .. } => known[ix(a)].map(|x| x.wrapping_neg() & ones(width)),
                Insn::SExt { a, from, .. } => known[ix(a)].map(|x| sext(x, from) as u64),
                Insn::Trunc { a, width, .. } => known[ix(a)].map(|x| x & ones(width)),
                Insn::Mov { a, .. } => known[ix(a)],
                _ => None,
            };
            match i {
                Insn::Store { to, .. } | Insn::Set { to, .. } => {
                    let value = match i {
                        Insn::Store { src, .. } => known[ix(src)],
                        Insn::Set { value, .. } => Some(value),
                        _ => None,
                    };
                    held.retain(|&(s, _)| !overlap(s, to));
                    match value {
                        Some(value) => {
                            held.push((to, value & ones(to.width)));
                            out.push(Insn::Set { to, value });
                        }
                        None => out.push(i),
                    }
                }
                Insn::Load { dst, from } => {
                    known[ix(dst)] = held.iter().find(|&&(s, _)| s == from).map(|&(_, v)| v);
                    out.push(match known[ix(dst)] {
                        Some(value) => Insn::Const { dst, value },
                        None => i,
                    });
                }
                Insn::Const { dst, .. }
                | Insn::Bin { dst, .. }
                | Insn::BinImm { dst, .. }
                | Insn::Not { dst, .. }
                | Insn::Neg { dst, .. }
                | Insn::SExt { dst, .. }
                | Insn::Trunc { dst, .. }
                | Insn::Mov { dst, .. } => {
                    known[ix(dst)] = folded;
                    out.push(match (folded, i) {
                        (Some(value), _) => Insn::Const { dst, value },
                        (None, Insn::Bin { op, dst, a, b, width }) => match known[ix(b)] {
                            Some(imm) => Insn::BinImm { op, dst, a, imm, width },
                            None => i,
                        },
                        _ => i,
                    });
                }
                Insn::Jump { .. } | Insn::JumpIfZero { .. } => out.push(i),
            }
        }
        // Backwards: keep what a store depends on, and a store only if no
        // later store in the head overwrites it before a load reads it.
        let mut covered = FlowMask::ZERO;
        let mut keep = vec![true; out.len()];
        for (k, &i) in out.iter().enumerate().rev() {
            match i {
                Insn::Store { to, .. } | Insn::Set { to, .. } => {
                    let c = &mut covered.words[usize::from(to.word)];
                    if *c & to.mask() == to.mask() {
                        keep[k] = false;
                        continue;
                    }
                    *c |= to.mask();
                    if let Insn::Store { src, .. } = i {
                        live[ix(src)] = true;
                    }
                    continue;
                }
                // Only a load something uses reads the slot.
                Insn::Load { dst, from } if live[ix(dst)] => {
                    covered.words[usize::from(from.word)] &= !from.mask();
                }
                _ => {}
            }
            let (Some(dst), srcs) = i.regs() else { continue };
            if !live[ix(dst)] {
                keep[k] = false;
                continue;
            }
            live[ix(dst)] = false;
            for r in srcs.into_iter().flatten() {
                live[ix(r)] = true;
            }
        }
        let mut insns: Vec<Insn> =
            out.into_iter().zip(keep).filter_map(|(i, k)| k.then_some(i)).collect();
        // The rest, its jump targets moved by what the head lost.
        let shift = first_jump - insns.len();
        insns.extend(tail.iter().map(|&i| match i {
            Insn::Jump { to } => Insn::Jump { to: to - shift as u16 },
            Insn::JumpIfZero { cond, to } => Insn::JumpIfZero { cond, to: to - shift as u16 },
            i => i,
        }));
        match KeyProg::new(insns) {
            Ok(p) => p.with_reads(self.reads),
            Err(_) => self.clone(),
        }
    }

    /// Runs the program on `key`.
    pub fn run(&self, key: &mut FlowKey) {
        let mut r = [0u64; REGS];
        let mut pc = 0;
        while let Some(i) = self.insns.get(pc) {
            pc += 1;
            // Indices were checked by `new`; `& (REGS - 1)` keeps the
            // compiler from adding bounds checks and cannot change them.
            let ix = |x: Reg| usize::from(x) & (REGS - 1);
            match *i {
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
        let slot = (0u8..2, 0u8..4).prop_map(|(w, k)| {
            let (shift, width) = [(0, 8), (8, 16), (24, 1), (0, 64)][usize::from(k)];
            Slot { word: w, shift, width }
        });
        let reg = 0u8..6;
        let width = prop_oneof![Just(1u8), Just(8), Just(16), Just(64), 1u8..=64];
        let value = prop_oneof![Just(0u64), Just(1), Just(u64::MAX), any::<u64>()];
        let op = (0usize..22).prop_map(|i| {
            use BinOp::*;
            [
                Add, Sub, Mul, And, Or, Xor, Shl, Shr, Sar, AddSat, SubSat, AddSatS, SubSatS, Eq,
                Ne, Lt, Le, LtS, LeS, Div, Rem, Add,
            ][i]
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

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// What a composed program runs (`walk::compose`): a simplified
        /// program, and two programs run as one, change the key exactly
        /// as the originals do.
        #[test]
        fn simplified_and_joined_programs_agree(
            a in arb_prog(),
            b in arb_prog(),
            words in proptest::array::uniform3(proptest::prelude::any::<u64>()),
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
        // the traffic manager does: 14 instructions become 7 (the port
        // forwarded from the slot it was set in, the first store to it
        // overwritten unread).
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
        assert_eq!(j.insns().len(), 7, "{:?}", j.insns());
        let mut k = FlowKey::ZERO;
        ttl.set(&mut k, 64);
        j.run(&mut k);
        assert_eq!((ttl.get(&k), eport.get(&k), spec.get(&k)), (63, 3, 0));
        assert_eq!(src.get(&k), 0x0200_0000_00fe);
    }
}
