//! [`KeyProg::simplified`]: a program made cheaper to run, for one run
//! often (a composed cache entry's).
//!
//! # Basic design
//! Jumps go forward only, so the program is a DAG in instruction order
//! and each pass is one sweep:
//! - **Forward** ([`forward`]): what each register holds on entry to an
//!   instruction (a constant, a copy of another register, whether it is
//!   nonzero exactly when another is, how many low bits it may have) and
//!   which slots hold a constant the program stored, met over every edge
//!   that reaches it. An instruction whose operands are known becomes a
//!   constant; operands are read from the register a copy was made from;
//!   a jump whose condition is known is taken or dropped; a jump to a jump
//!   it would decide goes straight to where that one leads (the taken
//!   edge knows its condition was zero); code no edge reaches is dropped.
//! - **Backward** ([`backward`]): what is live after each instruction
//!   (registers read later, slots read before a store on every path
//!   overwrites them). A register write nothing reads, and a store every
//!   path overwrites unread, are dropped.
//! - **Compaction** ([`compact`]): dropped instructions removed, jump
//!   targets moved, and a jump to the next instruction dropped.
//!
//! The three repeat while the program shrinks (a few rounds at most).
//! Then [`join_sets`] stores constants bound for touching bits of one key
//! word in one [`Insn::Set`].
//!
//! # Invariants
//! - The simplified program changes every key exactly as the original
//!   does (the property test in the parent module runs both).
//! - It is never longer than the original, and reads what it read: its
//!   [`KeyProg::reads`] are the original's even where it no longer loads.

use super::{bin, ones, sext, BinOp, Insn, KeyProg, Reg, Slot, REGS};
use sluice_packet::key::FlowMask;

fn ix(r: Reg) -> usize {
    usize::from(r) & (REGS - 1)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Val {
    Unknown,
    Const(u64),
    /// Equal to this register, which is not itself a copy.
    Copy(Reg),
}

/// What is known on entry to an instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Facts {
    val: [Val; REGS],
    /// At most the low this-many bits may be set.
    bits: [u8; REGS],
    /// Nonzero exactly when this register (not a copy) is.
    truthy: [Option<Reg>; REGS],
    /// Slots holding a value the program stored, exactly.
    held: Vec<(Slot, u64)>,
    /// One past the highest register the program names: the others stay
    /// zero throughout, so the loops over registers stop here.
    n: usize,
}

fn bits_of(v: u64) -> u8 {
    (64 - v.leading_zeros()) as u8
}

fn overlap(a: Slot, b: Slot) -> bool {
    a.word == b.word && a.mask() & b.mask() != 0
}

impl Facts {
    /// At the start registers are zero and no slot is known; the
    /// program names registers below `n`.
    fn start(n: usize) -> Facts {
        Facts {
            val: [Val::Const(0); REGS],
            bits: [0; REGS],
            truthy: [None; REGS],
            held: Vec::new(),
            n: n.min(REGS),
        }
    }

    fn root(&self, r: Reg) -> Reg {
        match self.val[ix(r)] {
            Val::Copy(s) => s,
            _ => r,
        }
    }

    fn konst(&self, r: Reg) -> Option<u64> {
        match self.val[ix(self.root(r))] {
            Val::Const(c) => Some(c),
            _ => None,
        }
    }

    fn bits(&self, r: Reg) -> u8 {
        self.bits[ix(self.root(r))]
    }

    /// The register a jump on `r` may test instead: the root of its
    /// copies, or the register it is nonzero exactly with.
    fn cond(&self, r: Reg) -> Reg {
        let r = self.root(r);
        match self.truthy[ix(r)] {
            Some(x) => x,
            None => r,
        }
    }

    /// Whether `r` is known to be zero (`Some(true)`) or nonzero.
    fn zero(&self, r: Reg) -> Option<bool> {
        self.konst(r).or_else(|| self.konst(self.cond(r))).map(|v| v == 0)
    }

    /// `d` is about to be written: its copies and what was nonzero with
    /// it hold its old value, so the first copy becomes their root.
    fn forget(&mut self, d: Reg) {
        let heir = (0..self.n).find(|&r| self.val[r] == Val::Copy(d)).map(|r| r as Reg);
        if let Some(h) = heir {
            for r in 0..self.n {
                if self.val[r] == Val::Copy(d) {
                    self.val[r] = if r == ix(h) { Val::Unknown } else { Val::Copy(h) };
                }
            }
            self.truthy[ix(h)] = self.truthy[ix(d)];
            self.bits[ix(h)] = self.bits[ix(d)];
        }
        for t in self.truthy.iter_mut() {
            if *t == Some(d) {
                *t = heir;
            }
        }
        self.truthy[ix(d)] = None;
    }

    /// `d` now holds `val`, with at most `bits` low bits set.
    fn set(&mut self, d: Reg, val: Val, bits: u8, truthy: Option<Reg>) {
        self.forget(d);
        let (val, bits) = match val {
            Val::Const(c) => (Val::Const(c), bits_of(c)),
            v => (v, bits),
        };
        self.val[ix(d)] = val;
        self.bits[ix(d)] = bits;
        self.truthy[ix(d)] = truthy.filter(|&t| t != d);
    }

    /// On a jump's taken edge: `r` (and so its copies, and whatever is
    /// nonzero exactly with it) is zero.
    fn assume_zero(&mut self, r: Reg) {
        // Registers still to visit and those visited, a bit each.
        let (mut work, mut seen) = (1u32 << ix(self.root(r)), 0u32);
        while work != 0 {
            let r = work.trailing_zeros() as Reg;
            seen |= 1 << ix(r);
            for q in 0..self.n {
                if q == ix(r) || self.val[q] == Val::Copy(r) {
                    self.val[q] = Val::Const(0);
                    self.bits[q] = 0;
                }
                if self.truthy[q] == Some(r) {
                    work |= 1 << q;
                }
            }
            if let Some(t) = self.truthy[ix(r)] {
                work |= 1 << ix(t);
            }
            work &= !seen;
        }
    }

    /// On a jump's fall-through edge: `r` is nonzero, so one with at
    /// most one bit is 1.
    fn assume_nonzero(&mut self, r: Reg) {
        let r = self.root(r);
        if self.bits[ix(r)] <= 1 && self.val[ix(r)] == Val::Unknown {
            for q in 0..self.n {
                if q == ix(r) || self.val[q] == Val::Copy(r) {
                    self.val[q] = Val::Const(1);
                }
            }
        }
    }

    /// What holds on both this edge and `o`.
    fn meet(&mut self, o: &Facts) {
        for r in 0..self.n {
            if self.val[r] != o.val[r] {
                self.val[r] = Val::Unknown;
            }
            self.bits[r] = self.bits[r].max(o.bits[r]);
            if self.truthy[r] != o.truthy[r] {
                self.truthy[r] = None;
            }
        }
        // A copy of a register that is no longer a root in both is not
        // kept: only roots are copied from.
        for r in 0..self.n {
            if let Val::Copy(s) = self.val[r] {
                if self.val[ix(s)] == Val::Unknown {
                    continue;
                }
                self.val[r] = Val::Unknown;
            }
        }
        for r in 0..self.n {
            if let Some(t) = self.truthy[r] {
                if matches!(self.val[ix(t)], Val::Copy(_)) {
                    self.truthy[r] = None;
                }
            }
        }
        self.held.retain(|h| o.held.contains(h));
    }
}

/// One forward sweep: each reachable instruction rewritten with what is
/// known on entry to it, `None` for one dropped (unreachable, or a jump
/// decided to fall through, or a move of a register onto itself).
fn forward(insns: &[Insn]) -> (Vec<Option<Insn>>, Vec<bool>) {
    let n = insns.len();
    // What falls through into the next instruction, and what jumps carry
    // to instructions ahead (few: kept in a list, not one per
    // instruction, so a straight program copies no facts at all).
    // `cur` is what holds on entry to the instruction at hand, while
    // `live` (something reaches it); kept in place, not moved per
    // instruction: a `Facts` is some 600 bytes.
    let mut cur = Facts::start(usize::from(super::regs_named(insns)));
    let mut live = true;
    let mut ahead: Vec<(usize, Facts)> = Vec::with_capacity(4);
    let mut out = vec![None; n];
    // Instructions that overwrite a register with a value nonzero exactly
    // when the old one was (`r = r != 0`).
    let mut same_truth = vec![false; n];
    let flow = |ahead: &mut Vec<(usize, Facts)>, to: usize, f: Facts| match ahead
        .iter_mut()
        .find(|(t, _)| *t == to)
    {
        Some((_, g)) => g.meet(&f),
        None => ahead.push((to, f)),
    };
    // Where an edge carrying `f` into `t` really leads: through jumps `f`
    // decides, to the first instruction that does something.
    let chase = |mut t: usize, f: &Facts| {
        while t < n {
            match insns[t] {
                Insn::Jump { to } => t = usize::from(to),
                Insn::JumpIfZero { cond, to } => match f.zero(cond) {
                    Some(true) => t = usize::from(to),
                    Some(false) => t += 1,
                    None => break,
                },
                _ => break,
            }
        }
        t
    };
    for k in 0..n {
        while let Some(j) = ahead.iter().position(|(t, _)| *t == k) {
            let (_, g) = ahead.swap_remove(j);
            if live {
                cur.meet(&g);
            } else {
                cur = g;
                live = true;
            }
        }
        if !live {
            continue;
        }
        let f = &mut cur;
        let i = insns[k];
        let mut falls = true;
        out[k] = match i {
            Insn::Const { dst, value } => {
                f.set(dst, Val::Const(value), 0, None);
                Some(i)
            }
            Insn::Load { dst, from } => {
                match f.held.iter().find(|&&(s, _)| s == from).map(|&(_, v)| v) {
                    Some(value) => {
                        f.set(dst, Val::Const(value), 0, None);
                        Some(Insn::Const { dst, value })
                    }
                    None => {
                        f.set(dst, Val::Unknown, from.width, None);
                        Some(i)
                    }
                }
            }
            Insn::Store { to, .. } | Insn::Set { to, .. } => {
                let value = match i {
                    Insn::Set { value, .. } => Some(value),
                    Insn::Store { src, .. } => f.konst(src),
                    _ => None,
                };
                f.held.retain(|&(s, _)| !overlap(s, to));
                match value {
                    Some(value) => {
                        f.held.push((to, value & ones(to.width)));
                        Some(Insn::Set { to, value })
                    }
                    None => match i {
                        Insn::Store { src, .. } => Some(Insn::Store { src: f.root(src), to }),
                        _ => Some(i),
                    },
                }
            }
            Insn::Mov { dst, a } => {
                let a = f.root(a);
                match f.konst(a) {
                    Some(value) if f.root(dst) != a => {
                        f.set(dst, Val::Const(value), 0, None);
                        Some(Insn::Const { dst, value })
                    }
                    _ => copy(f, dst, a),
                }
            }
            Insn::Bin { op, dst, a, b, width } => {
                let (i, t) = binary(f, op, dst, a, Err(b), width);
                same_truth[k] = t;
                i
            }
            Insn::BinImm { op, dst, a, imm, width } => {
                let (i, t) = binary(f, op, dst, a, Ok(imm), width);
                same_truth[k] = t;
                i
            }
            Insn::Not { dst, a, width }
            | Insn::Neg { dst, a, width }
            | Insn::Trunc { dst, a, width } => {
                let a = f.root(a);
                let folded = f.konst(a).map(|x| match i {
                    Insn::Not { .. } => !x & ones(width),
                    Insn::Neg { .. } => x.wrapping_neg() & ones(width),
                    _ => x & ones(width),
                });
                match folded {
                    Some(value) => {
                        f.set(dst, Val::Const(value), 0, None);
                        Some(Insn::Const { dst, value })
                    }
                    // Keeping bits a register cannot have is a copy.
                    None if matches!(i, Insn::Trunc { .. }) && f.bits(a) <= width => {
                        copy(f, dst, a)
                    }
                    None => {
                        f.set(dst, Val::Unknown, width, None);
                        Some(match i {
                            Insn::Not { .. } => Insn::Not { dst, a, width },
                            Insn::Neg { .. } => Insn::Neg { dst, a, width },
                            _ => Insn::Trunc { dst, a, width },
                        })
                    }
                }
            }
            Insn::SExt { dst, a, from } => {
                let a = f.root(a);
                match f.konst(a) {
                    Some(x) => {
                        let value = sext(x, from) as u64;
                        f.set(dst, Val::Const(value), 0, None);
                        Some(Insn::Const { dst, value })
                    }
                    None => {
                        f.set(dst, Val::Unknown, 64, None);
                        Some(Insn::SExt { dst, a, from })
                    }
                }
            }
            Insn::Jump { to } => {
                falls = false;
                let t = chase(usize::from(to), f);
                flow(&mut ahead, t, f.clone());
                Some(Insn::Jump { to: t as u16 })
            }
            Insn::JumpIfZero { cond, to } => {
                let c = f.cond(cond);
                match f.zero(cond) {
                    Some(true) => {
                        falls = false;
                        let t = chase(usize::from(to), f);
                        flow(&mut ahead, t, f.clone());
                        Some(Insn::Jump { to: t as u16 })
                    }
                    Some(false) => None,
                    None => {
                        // Zero too: `c` (the root, or what it is nonzero with).
                        let mut taken = f.clone();
                        taken.assume_zero(cond);
                        let t = chase(usize::from(to), &taken);
                        flow(&mut ahead, t, taken);
                        f.assume_nonzero(c);
                        f.assume_nonzero(cond);
                        Some(Insn::JumpIfZero { cond: c, to: t as u16 })
                    }
                }
            }
        };
        live = falls;
    }
    (out, same_truth)
}

/// `dst = a` (`a` a root): dropped when `dst` holds `a` already.
fn copy(f: &mut Facts, dst: Reg, a: Reg) -> Option<Insn> {
    if f.root(dst) == a {
        return None;
    }
    let bits = f.bits(a);
    f.set(dst, Val::Copy(a), bits, None);
    Some(Insn::Mov { dst, a })
}

/// A two-operand instruction with what `f` knows: folded, or given a
/// constant operand, its operands read from the registers copied.
fn binary(
    f: &mut Facts,
    op: BinOp,
    dst: Reg,
    a: Reg,
    b: Result<u64, Reg>,
    width: u8,
) -> (Option<Insn>, bool) {
    let commutes = matches!(
        op,
        BinOp::Add | BinOp::Mul | BinOp::And | BinOp::Or | BinOp::Xor | BinOp::Eq | BinOp::Ne
    );
    let a = f.root(a);
    let b = match b {
        Ok(imm) => Ok(imm),
        Err(b) => f.konst(b).ok_or(f.root(b)),
    };
    let (a, b) = match (f.konst(a), b) {
        (Some(x), Ok(y)) => {
            let value = bin(op, x, y, width);
            f.set(dst, Val::Const(value), 0, None);
            return (Some(Insn::Const { dst, value }), false);
        }
        (Some(x), Err(b)) if commutes => (b, Ok(x)),
        (_, b) => (a, b),
    };
    let bits = match op {
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::LtS | BinOp::LeS => 1,
        BinOp::And => match b {
            Ok(y) => f.bits(a).min(bits_of(y & ones(width))),
            Err(b) => f.bits(a).min(f.bits(b)),
        }
        .min(width),
        _ => width,
    };
    // `a != 0` is nonzero exactly when `a` is (when `a` fits the width).
    let truthy = (op == BinOp::Ne && b == Ok(0) && f.bits(a) <= width).then_some(a);
    f.set(dst, Val::Unknown, bits, truthy);
    let insn = match b {
        Ok(imm) => Insn::BinImm { op, dst, a, imm, width },
        Err(b) => Insn::Bin { op, dst, a, b, width },
    };
    (Some(insn), truthy.is_some() && a == dst)
}

/// One backward sweep over what [`forward`] kept: a register write no
/// path reads, and a store every path overwrites before reading, are
/// dropped; so is `r = r != 0` ([`forward`]'s `same_truth`) where only
/// jumps test `r` afterwards.
fn backward(out: &mut [Option<Insn>], same_truth: &[bool]) {
    let n = out.len();
    // On entry to an instruction: registers whose value is read later,
    // those only jumps test (a bit each), and slot bits every path
    // stores before reading. Kept for the next instruction, and for the
    // few that jumps land on.
    let mut targets: Vec<(usize, Live)> = out
        .iter()
        .flatten()
        .filter_map(|i| match *i {
            Insn::Jump { to } | Insn::JumpIfZero { to, .. } => Some(usize::from(to)),
            _ => None,
        })
        .map(|t| (t, Live::END))
        .collect();
    let at = |targets: &[(usize, Live)], to: u16| {
        targets.iter().find(|(t, _)| *t == usize::from(to)).map_or(Live::END, |x| x.1)
    };
    let bit = |r: Reg| 1u32 << ix(r);
    let mut next = Live::END;
    for k in (0..n).rev() {
        let Live { value: mut v, truth: mut t, covered: mut c } = next;
        match out[k] {
            Some(Insn::Jump { to }) => {
                Live { value: v, truth: t, covered: c } = at(&targets, to);
            }
            Some(Insn::JumpIfZero { to, .. }) => {
                let o = at(&targets, to);
                v |= o.value;
                t |= o.truth;
                for (w, o) in c.words.iter_mut().zip(o.covered.words) {
                    *w &= o;
                }
            }
            _ => {}
        }
        match out[k] {
            None | Some(Insn::Jump { .. }) => {}
            Some(Insn::JumpIfZero { cond, .. }) => t |= bit(cond),
            Some(Insn::Store { to, .. } | Insn::Set { to, .. }) => {
                let w = &mut c.words[usize::from(to.word)];
                if *w & to.mask() == to.mask() {
                    out[k] = None;
                } else {
                    *w |= to.mask();
                    if let Some(Insn::Store { src, .. }) = out[k] {
                        v |= bit(src);
                    }
                }
            }
            Some(i) => {
                let (Some(d), srcs) = i.regs() else { unreachable!("writes a register") };
                if (v | t) & bit(d) == 0 {
                    out[k] = None;
                } else if same_truth[k] && v & bit(d) == 0 {
                    // Jumps may test the old value instead.
                    out[k] = None;
                } else {
                    v &= !bit(d);
                    t &= !bit(d);
                    if let Insn::Load { from, .. } = i {
                        c.words[usize::from(from.word)] &= !from.mask();
                    }
                    for r in srcs.into_iter().flatten() {
                        v |= bit(r);
                    }
                }
            }
        }
        next = Live { value: v, truth: t, covered: c };
        for (_, l) in targets.iter_mut().filter(|(t, _)| *t == k) {
            *l = next;
        }
    }
}

/// What [`backward`] knows on entry to an instruction.
#[derive(Clone, Copy)]
struct Live {
    value: u32,
    truth: u32,
    covered: FlowMask,
}

impl Live {
    /// After the last instruction: nothing is read, every slot may be.
    const END: Live = Live { value: 0, truth: 0, covered: FlowMask::ZERO };
}

/// The kept instructions, jump targets moved to where they went; then
/// jumps to the next instruction dropped, until none is.
fn compact(mut out: Vec<Option<Insn>>) -> Vec<Insn> {
    loop {
        let n = out.len();
        // Where each old index lands: the next kept instruction.
        let mut at = vec![0u16; n + 1];
        let mut kept = 0u16;
        for k in 0..n {
            at[k] = kept;
            kept += u16::from(out[k].is_some());
        }
        at[n] = kept;
        let moved: Vec<Insn> = out
            .iter()
            .flatten()
            .map(|&i| match i {
                Insn::Jump { to } => Insn::Jump { to: at[usize::from(to)] },
                Insn::JumpIfZero { cond, to } => Insn::JumpIfZero { cond, to: at[usize::from(to)] },
                i => i,
            })
            .collect();
        let mut changed = false;
        out = moved
            .iter()
            .enumerate()
            .map(|(k, &i)| match i {
                Insn::Jump { to } | Insn::JumpIfZero { to, .. } if usize::from(to) == k + 1 => {
                    changed = true;
                    None
                }
                i => Some(i),
            })
            .collect();
        if !changed {
            return moved;
        }
    }
}

/// Runs of [`Insn::Set`]s that no jump enters in the middle, their
/// stores to touching or overlapping bits of one word joined into one
/// store of the span they cover (stores to different words, or to bits
/// none of them shares, may run in any order).
fn join_sets(insns: Vec<Insn>) -> Vec<Option<Insn>> {
    let n = insns.len();
    let mut target = vec![false; n + 1];
    for i in &insns {
        if let Insn::Jump { to } | Insn::JumpIfZero { to, .. } = *i {
            target[usize::from(to)] = true;
        }
    }
    let mut out: Vec<Option<Insn>> = insns.iter().copied().map(Some).collect();
    let mut s = 0;
    while s < n {
        let mut e = s;
        while e < n && matches!(insns[e], Insn::Set { .. }) && (e == s || !target[e]) {
            e += 1;
        }
        if e - s < 2 {
            s = e.max(s + 1);
            continue;
        }
        // (word, bits covered, their values), in order of first store.
        let mut spans: Vec<(u8, u64, u64)> = Vec::new();
        for i in &insns[s..e] {
            let Insn::Set { to, value } = *i else { continue };
            let m = to.mask();
            let v = (value & ones(to.width)) << to.shift;
            // The latest span the store touches, if none after it shares
            // bits with the store (which must then come after it).
            let mut pick = None;
            for (j, sp) in spans.iter().enumerate().rev().filter(|(_, sp)| sp.0 == to.word) {
                let shares = sp.1 & m != 0;
                if pick.is_none() && (shares || touching(sp.1, m)) && contiguous(sp.1 | m) {
                    pick = Some(j);
                }
                if shares {
                    break;
                }
            }
            match pick {
                Some(j) => spans[j] = (to.word, spans[j].1 | m, (spans[j].2 & !m) | v),
                None => spans.push((to.word, m, v)),
            }
        }
        for (k, slot) in out[s..e].iter_mut().enumerate() {
            *slot = spans.get(k).map(|&(word, m, v)| {
                let shift = m.trailing_zeros() as u8;
                let width = m.count_ones() as u8;
                Insn::Set { to: Slot { word, shift, width }, value: v >> shift }
            });
        }
        s = e;
    }
    out
}

fn contiguous(m: u64) -> bool {
    if m == 0 {
        return false;
    }
    let low = m >> m.trailing_zeros();
    low & low.wrapping_add(1) == 0
}

/// Two disjoint spans next to each other.
fn touching(a: u64, b: u64) -> bool {
    a & (b << 1) != 0 || b & (a << 1) != 0
}

impl KeyProg {
    /// The same effect on the key in as few instructions as these passes
    /// find (see the module [`self`]), reading what `self` reads.
    pub fn simplified(&self) -> KeyProg {
        let mut insns = self.insns.to_vec();
        for _ in 0..4 {
            let (mut out, same_truth) = forward(&insns);
            backward(&mut out, &same_truth);
            let next = compact(out);
            let shrank = next.len() < insns.len();
            insns = next;
            if !shrank {
                break;
            }
        }
        insns = compact(join_sets(insns));
        match KeyProg::new(insns) {
            Ok(p) if p.insns.len() <= self.insns.len() => p.with_reads(self.reads),
            _ => self.clone(),
        }
    }
}
