//! The verifier: decides whether a program is safe to run in the switch.
//!
//! What? A static check that every execution of the program terminates,
//! touches only memory it may touch, and never writes the packet. The
//! interpreter checks every access at run time anyway; the JIT does not, so
//! the JIT's memory safety rests on this module (see `jit.rs`).
//!
//! Basic design (the Linux verifier's, simplified): an abstract interpreter
//! walks every path from instruction 0 to `exit`, tracking for each register
//! and each stack byte an abstract value ([`Reg`]): uninitialised, scalar
//! with unsigned and signed bounds, pointer to context, to the stack (with
//! a constant offset), to the packet (fixed offset + bounded variable part +
//! the number of bytes proven in bounds), packet end, map, map value, map
//! value-or-NULL. Conditional jumps refine the bounds on each side and drop
//! infeasible sides. When the program has no back-edge, a state that is
//! covered by an already-seen state at the same instruction is pruned
//! (sound because without loops every stored state is explored to the end).
//!
//! Rules enforced (each has a test in `tests` below, name in brackets):
//! 1. At most [`Config::max_insns`] instructions, at least one (tests: `rule_size`).
//! 2. Every opcode is known and its reserved fields are zero; registers are
//!    r0..r10; r10 is read-only (tests: `rule_opcodes`, `rule_registers`).
//! 3. Jump targets lie inside the program and not inside an `LDDW` pair;
//!    an `LDDW` has its second slot; the last instruction cannot fall off
//!    the end; every instruction is reachable (tests: `rule_jumps`, `rule_lddw`, `rule_unreachable`).
//! 4. Loops: back-edges are allowed only when the abstract interpreter can
//!    unroll the loop completely within [`Config::max_processed`] steps —
//!    i.e. loops whose trip count is bounded by constants the verifier
//!    tracks (`for (i = 0; i < 8; i++)`). Any other loop is rejected as too
//!    complex; an endless loop can never run (tests: `rule_loops`).
//! 5. Registers are read only after being written; r0 at `exit` must be a
//!    scalar; pointers never leave the program (no pointer return, no
//!    pointer stored outside the stack, no pointer as scalar helper
//!    argument) (tests: `rule_uninit`, `rule_exit`, `rule_leaks`).
//! 6. Pointer arithmetic: only `+`/`-` of scalars on packet, map-value,
//!    stack (constant only) and context (constant) pointers; nothing on
//!    packet-end, map, or map-value-or-NULL pointers; no 32-bit arithmetic
//!    on pointers; `pkt - pkt` gives a scalar (tests: `rule_ptr_arith`).
//! 7. Stack accesses have a constant offset in `[-512, 0)`, are aligned to
//!    their size, and reads only touch initialised bytes. Pointers are
//!    spilled with aligned 8-byte stores and restored by aligned 8-byte loads
//!    (tests: `rule_stack`).
//! 8. Packet reads (XDP) only after a comparison against `data_end` proved
//!    them in bounds (`off + size <= range`, range tracked per pointer
//!    identity like Linux); variable offsets must be bounded (≤ 0xffff).
//!    Socket filters read the packet with `LD_ABS`/`LD_IND` only (which
//!    need r6 = context and return 0 when out of bounds); XDP programs
//!    cannot use them (tests: `rule_packet_read`, `rule_ld_abs`).
//! 9. No writes to the packet or the context, ever; atomic operations
//!    (add/or/and/xor with or without fetch, xchg, cmpxchg; 4 or 8 bytes)
//!    only on aligned stack slots and map values (tests: `rule_packet_write`,
//!    `rule_atomic`).
//! 10. Context reads only of the offered fields (XDP: `data`, `data_end`,
//!     `ingress_ifindex`, `rx_queue_index`; socket filter: `len`), 4 bytes,
//!     through the unmodified context pointer (tests: `rule_ctx`).
//! 11. Map values are used only after a NULL check; accesses stay inside
//!     `value_size` (tests: `rule_map_value`).
//! 12. Helper calls: only the offered helpers; argument types checked (map
//!     pointer, key of `key_size` readable bytes, value of `value_size`
//!     bytes, memory + constant non-zero size, scalars); r1-r5 are
//!     clobbered (tests: `rule_helpers`).
//! 13. Division and modulo by a constant zero are rejected; by a register
//!     that is zero at run time they follow Linux (`x / 0 = 0`, `x % 0 = x`);
//!     constant shifts must be smaller than the operand width (tests: `rule_div`).
//! 14. Comparisons involving pointers: packet vs packet end / packet,
//!     map-value-or-NULL vs 0 (NULL check), a never-NULL pointer vs 0
//!     (outcome known statically); others are rejected (tests: `rule_ptr_cmp`).
//!
//! Memory and time of verification are bounded: at most
//! [`Config::max_processed`] abstract steps, 8192 pending branches and
//! 16384 stored states (each a few KiB).
//!
//! Deliberately stricter than Linux (run as root): uninitialised stack
//! reads, pointer leaks (into maps, as return value, partial spills),
//! pointer comparisons other than the above, variable stack offsets,
//! `mov32` of a pointer, BPF ISA v4 instructions (sdiv/smod, movsx, memsx,
//! bswap, gotol), atomics on anything but stack and map values, bpf-to-bpf calls, kfuncs, global data and tail
//! calls are all rejected; context fields beyond the ones listed are not
//! offered. Every rejection carries the instruction index and a reason.

use std::collections::HashMap;

use crate::helpers;
use crate::insn::{alu, class, jmp, mode, size, size_bytes, Insn, LDDW, PSEUDO_MAP_FD};
use crate::interp::{alu32, alu64, ctx_field, endian, CtxField};
use crate::{ProgType, Program};

/// Verifier limits.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Maximum program length in instruction slots.
    pub max_insns: usize,
    /// Maximum number of abstract instruction executions ("complexity").
    pub max_processed: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config { max_insns: 4096, max_processed: 1_000_000 }
    }
}

/// A rejection: instruction index and reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("insn {pc}: {reason}")]
pub struct VerifyError {
    pub pc: usize,
    pub reason: String,
}

/// What the verifier learnt that the JIT needs: per instruction, the
/// context field an `LDX` reads (if its base is the context).
#[derive(Clone, Debug)]
pub struct Verified {
    pub ctx_loads: Vec<Option<CtxField>>,
    /// Number of abstract instruction executions.
    pub processed: usize,
    /// The program this result is about (private: only the verifier can
    /// vouch for a program).
    program: Program,
}

impl Verified {
    /// Is this the verification result of exactly this program (same
    /// instructions, type and map definitions)?
    pub fn is_for(&self, prog: &Program) -> bool {
        self.program.insns == prog.insns
            && self.program.prog_type == prog.prog_type
            && self.program.maps == prog.maps
    }
}

const MAX_PACKET_OFF: u64 = 0xffff;
/// Bound on pending branch states (memory), as Linux's jump-sequence limit.
const MAX_PENDING: usize = 8192;
/// Bound on states kept for pruning (memory).
const MAX_SEEN: usize = 16_384;
const MAX_PTR_OFF: i64 = 1 << 29;

/// Bounds of a scalar: unsigned and signed views, kept consistent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub umin: u64,
    pub umax: u64,
    pub smin: i64,
    pub smax: i64,
}

impl Range {
    pub const UNKNOWN: Range = Range { umin: 0, umax: u64::MAX, smin: i64::MIN, smax: i64::MAX };
    pub fn konst(v: u64) -> Range {
        Range { umin: v, umax: v, smin: v as i64, smax: v as i64 }
    }
    pub fn unsigned(lo: u64, hi: u64) -> Range {
        Range { umin: lo, umax: hi, ..Range::UNKNOWN }.norm()
    }
    fn as_const(&self) -> Option<u64> {
        (self.umin == self.umax).then_some(self.umin)
    }
    fn is_empty(&self) -> bool {
        self.umin > self.umax || self.smin > self.smax
    }
    /// Propagates information between the signed and unsigned views.
    fn norm(mut self) -> Range {
        for _ in 0..2 {
            if self.umax <= i64::MAX as u64 {
                // Whole unsigned range is non-negative as signed.
                self.smin = self.smin.max(self.umin as i64);
                self.smax = self.smax.min(self.umax as i64);
            } else if self.umin > i64::MAX as u64 {
                // Whole unsigned range is negative as signed.
                self.smin = self.smin.max(self.umin as i64);
                self.smax = self.smax.min(self.umax as i64);
            }
            if self.smin >= 0 || self.smax < 0 {
                // Signed range does not cross the sign boundary.
                self.umin = self.umin.max(self.smin as u64);
                self.umax = self.umax.min(self.smax as u64);
            }
        }
        self
    }
    fn contains(&self, o: &Range) -> bool {
        self.umin <= o.umin && o.umax <= self.umax && self.smin <= o.smin && o.smax <= self.smax
    }
    fn fits_u32(&self) -> bool {
        self.umax <= u32::MAX as u64
    }
}

/// Abstract value of a register or spilled stack slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reg {
    Uninit,
    Scalar(Range),
    Ctx {
        off: i64,
    },
    Stack {
        off: i64,
    },
    /// `data + var + off`; bytes `[data+var, data+var+range)` are in bounds.
    Pkt {
        id: u32,
        off: i64,
        var: Range,
        range: i64,
    },
    PktEnd,
    Map(usize),
    MapValue {
        map: usize,
        off: i64,
        var: Range,
    },
    MapValueOrNull {
        map: usize,
        id: u32,
    },
}

impl Reg {
    fn is_ptr(&self) -> bool {
        !matches!(self, Reg::Uninit | Reg::Scalar(_))
    }
    fn name(&self) -> &'static str {
        match self {
            Reg::Uninit => "uninit",
            Reg::Scalar(_) => "scalar",
            Reg::Ctx { .. } => "ctx",
            Reg::Stack { .. } => "fp",
            Reg::Pkt { .. } => "pkt",
            Reg::PktEnd => "pkt_end",
            Reg::Map(_) => "map_ptr",
            Reg::MapValue { .. } => "map_value",
            Reg::MapValueOrNull { .. } => "map_value_or_null",
        }
    }
}

const STACK: usize = 512;

#[derive(Clone, Debug, PartialEq, Eq)]
struct State {
    pc: usize,
    regs: [Reg; 11],
    /// Per stack byte: initialised?
    init: [bool; STACK],
    /// Per 8-byte slot: a spilled register (whole slot).
    spill: [Option<Reg>; STACK / 8],
}

type VResult<T> = Result<T, VerifyError>;

struct Ctx<'a> {
    prog: &'a Program,
    ctx_loads: Vec<Option<Option<CtxField>>>,
}

fn rej<T>(pc: usize, reason: impl Into<String>) -> VResult<T> {
    Err(VerifyError { pc, reason: reason.into() })
}

/// Verifies with the default limits.
pub fn verify(prog: &Program) -> VResult<Verified> {
    verify_with(prog, Config::default())
}

/// Verifies a program.
pub fn verify_with(prog: &Program, cfg: Config) -> VResult<Verified> {
    let insns = &prog.insns;
    if insns.is_empty() {
        return rej(0, "empty program");
    }
    if insns.len() > cfg.max_insns {
        return rej(
            insns.len() - 1,
            format!("program too large: {} > {} instructions", insns.len(), cfg.max_insns),
        );
    }
    let has_back_edge = check_static(prog)?;
    let mut cx = Ctx { prog, ctx_loads: vec![None; insns.len()] };
    let mut init_regs = [Reg::Uninit; 11];
    init_regs[1] = Reg::Ctx { off: 0 };
    init_regs[10] = Reg::Stack { off: 0 };
    let mut work =
        vec![State { pc: 0, regs: init_regs, init: [false; STACK], spill: [None; STACK / 8] }];
    let mut seen: HashMap<usize, Vec<State>> = HashMap::new();
    let targets = jump_targets(insns);
    let mut processed = 0usize;
    let mut seen_total = 0usize;
    while let Some(mut st) = work.pop() {
        loop {
            processed += 1;
            if processed > cfg.max_processed {
                return rej(st.pc, format!("program too complex: more than {} instructions processed (unbounded loop?)", cfg.max_processed));
            }
            if !has_back_edge && targets.get(st.pc).copied().unwrap_or(false) {
                let list = seen.entry(st.pc).or_default();
                if list.iter().any(|old| covers(old, &st)) {
                    break;
                }
                if list.len() < 32 && seen_total < MAX_SEEN {
                    seen_total += 1;
                    list.push(st.clone());
                }
            }
            match step(&mut cx, &mut st)? {
                Flow::Next => {}
                Flow::Exit => break,
                Flow::Branch(other) => {
                    if work.len() >= MAX_PENDING {
                        return rej(
                            st.pc,
                            format!("sequence of {MAX_PENDING} jumps is too complex"),
                        );
                    }
                    work.push(*other)
                }
                Flow::Dead => break,
            }
        }
    }
    Ok(Verified {
        ctx_loads: cx.ctx_loads.into_iter().map(Option::flatten).collect(),
        processed,
        program: prog.clone(),
    })
}

fn jump_targets(insns: &[Insn]) -> Vec<bool> {
    let mut t = vec![false; insns.len() + 1];
    for (pc, i) in insns.iter().enumerate() {
        if matches!(i.class(), class::JMP | class::JMP32)
            && !matches!(i.op(), jmp::CALL | jmp::EXIT)
        {
            let tg = pc as i64 + 1 + i.off as i64;
            if let Some(x) = t.get_mut(tg as usize) {
                *x = true;
            }
            if let Some(x) = t.get_mut(pc + 1) {
                *x = true;
            }
        }
    }
    t
}

/// Opcode/field validity, jump targets, LDDW pairs, reachability.
/// Returns whether the program has a back-edge.
fn check_static(prog: &Program) -> VResult<bool> {
    let insns = &prog.insns;
    let n = insns.len();
    let mut is_second = vec![false; n];
    let mut pc = 0;
    while pc < n {
        let i = insns[pc];
        check_fields(prog, pc, &i)?;
        if i.code == LDDW {
            let Some(hi) = insns.get(pc + 1) else {
                return rej(pc, "invalid bpf_ld_imm64 insn: missing second slot");
            };
            if hi.code != 0 || hi.dst != 0 || hi.src != 0 || hi.off != 0 {
                return rej(pc, "invalid bpf_ld_imm64 insn: bad second slot");
            }
            if i.src == PSEUDO_MAP_FD && hi.imm != 0 {
                return rej(pc, "invalid bpf_ld_imm64 insn: map reference with offset");
            }
            is_second[pc + 1] = true;
            pc += 2;
        } else {
            pc += 1;
        }
    }
    // Successors, reachability and back-edges.
    let succ = |pc: usize| -> VResult<Vec<usize>> {
        let i = insns[pc];
        let step = if i.code == LDDW { 2 } else { 1 };
        let mut v = Vec::new();
        let is_jmp = matches!(i.class(), class::JMP | class::JMP32);
        if is_jmp && i.op() == jmp::EXIT {
            return Ok(v);
        }
        if is_jmp && i.op() != jmp::CALL {
            let t = pc as i64 + 1 + i.off as i64;
            if t < 0 || t >= n as i64 {
                return rej(pc, format!("jump out of range from insn {pc} to {t}"));
            }
            if is_second[t as usize] {
                return rej(pc, format!("jump into the middle of ldimm64 insn {}", t - 1));
            }
            v.push(t as usize);
            if i.op() == jmp::JA {
                return Ok(v);
            }
        }
        if pc + step >= n {
            return rej(pc, "last insn is not an exit or jmp (falls off the end)");
        }
        v.push(pc + step);
        Ok(v)
    };
    let mut color = vec![0u8; n]; // 0 white, 1 on stack, 2 done
    let mut back_edge = false;
    let mut stack: Vec<(usize, Vec<usize>, usize)> = vec![(0, succ(0)?, 0)];
    color[0] = 1;
    while let Some(top) = stack.last_mut() {
        if top.2 < top.1.len() {
            let s = top.1[top.2];
            top.2 += 1;
            match color[s] {
                0 => {
                    color[s] = 1;
                    let ss = succ(s)?;
                    stack.push((s, ss, 0));
                }
                1 => back_edge = true,
                _ => {}
            }
        } else {
            color[top.0] = 2;
            stack.pop();
        }
    }
    for pc in 0..n {
        if color[pc] == 0 && !is_second[pc] {
            return rej(pc, format!("unreachable insn {pc}"));
        }
    }
    Ok(back_edge)
}

fn check_fields(prog: &Program, pc: usize, i: &Insn) -> VResult<()> {
    if i.dst > 10 || i.src > 10 {
        return rej(pc, format!("invalid register (dst r{}, src r{})", i.dst, i.src));
    }
    let reserved = |what: &str| rej(pc, format!("{what} uses reserved fields"));
    match i.class() {
        class::ALU | class::ALU64 => {
            let op = i.op();
            if op > alu::END {
                return rej(pc, format!("invalid BPF_ALU opcode {:#04x}", i.code));
            }
            if op == alu::END {
                if i.class() == class::ALU64 {
                    return rej(pc, "unsupported instruction: bswap (BPF ISA v4)");
                }
                if i.src != 0 || i.off != 0 || !matches!(i.imm, 16 | 32 | 64) {
                    return reserved("BPF_END");
                }
            } else if op == alu::NEG {
                if i.is_src_x() || i.src != 0 || i.off != 0 || i.imm != 0 {
                    return reserved("BPF_NEG");
                }
            } else if i.is_src_x() {
                if i.imm != 0 || i.off != 0 {
                    return if i.off != 0 {
                        rej(pc, "unsupported instruction: BPF ISA v4 (movsx/sdiv/smod)")
                    } else {
                        reserved("BPF_ALU")
                    };
                }
            } else if i.src != 0 || i.off != 0 {
                return if i.off != 0 {
                    rej(pc, "unsupported instruction: BPF ISA v4 (sdiv/smod)")
                } else {
                    reserved("BPF_ALU")
                };
            }
            if !i.is_src_x() && matches!(op, alu::DIV | alu::MOD) && i.imm == 0 {
                return rej(pc, "div by zero");
            }
            if !i.is_src_x() && matches!(op, alu::LSH | alu::RSH | alu::ARSH) {
                let w = if i.class() == class::ALU64 { 64 } else { 32 };
                if i.imm < 0 || i.imm >= w {
                    return rej(pc, format!("invalid shift {}", i.imm));
                }
            }
            if i.dst == 10 {
                return rej(pc, "frame pointer is read only");
            }
        }
        class::JMP | class::JMP32 => {
            let op = i.op();
            let j32 = i.class() == class::JMP32;
            match op {
                jmp::JA => {
                    if j32 {
                        return rej(pc, "unsupported instruction: gotol (BPF ISA v4)");
                    }
                    if i.is_src_x() || i.src != 0 || i.dst != 0 || i.imm != 0 {
                        return reserved("BPF_JA");
                    }
                }
                jmp::CALL | jmp::EXIT if j32 => {
                    return rej(pc, format!("invalid BPF_JMP32 opcode {:#04x}", i.code))
                }
                jmp::CALL => {
                    if i.is_src_x() || i.off != 0 || i.dst != 0 {
                        return reserved("BPF_CALL");
                    }
                    if i.src == 1 {
                        return rej(pc, "bpf-to-bpf calls are not supported");
                    }
                    if i.src != 0 {
                        return rej(pc, "kfunc calls are not supported");
                    }
                }
                jmp::EXIT => {
                    if i.is_src_x() || i.src != 0 || i.dst != 0 || i.off != 0 || i.imm != 0 {
                        return reserved("BPF_EXIT");
                    }
                }
                0xe0 | 0xf0 => return rej(pc, format!("invalid BPF_JMP opcode {:#04x}", i.code)),
                _ => {
                    if i.is_src_x() && i.imm != 0 || !i.is_src_x() && i.src != 0 {
                        return reserved("BPF_JMP/JMP32");
                    }
                }
            }
        }
        class::LDX => {
            if i.mode() == mode::MEMSX {
                return rej(pc, "unsupported instruction: sign-extending load (BPF ISA v4)");
            }
            if i.mode() != mode::MEM {
                return rej(pc, format!("invalid BPF_LDX mode {:#04x}", i.code));
            }
            if i.imm != 0 {
                return reserved("BPF_LDX");
            }
            if i.dst == 10 {
                return rej(pc, "frame pointer is read only");
            }
        }
        class::STX => {
            if i.mode() == mode::ATOMIC {
                if !crate::insn::atomic::valid(i.imm) {
                    return rej(
                        pc,
                        format!("BPF_ATOMIC uses invalid atomic opcode {:#04x}", i.imm),
                    );
                }
                if !matches!(i.size(), size::W | size::DW) {
                    return rej(pc, "invalid atomic operand size");
                }
            } else if i.mode() != mode::MEM || i.imm != 0 {
                return reserved("BPF_STX");
            }
        }
        class::ST if i.mode() != mode::MEM || i.src != 0 => {
            return reserved("BPF_ST");
        }
        class::LD => {
            if i.code == LDDW {
                if i.off != 0 {
                    return reserved("BPF_LD_IMM");
                }
                match i.src {
                    0 => {}
                    PSEUDO_MAP_FD => {
                        if i.imm < 0 || i.imm as usize >= prog.maps.len() {
                            return rej(pc, format!("map index {} out of range", i.imm));
                        }
                    }
                    s => {
                        return rej(
                            pc,
                            format!("unsupported ldimm64 source {s} (global data, BTF ids)"),
                        )
                    }
                }
                if i.dst == 10 {
                    return rej(pc, "frame pointer is read only");
                }
            } else if matches!(i.mode(), mode::ABS | mode::IND) {
                if i.size() == size::DW
                    || i.off != 0
                    || i.dst != 0
                    || (i.mode() == mode::ABS && i.src != 0)
                {
                    return reserved("BPF_LD_[ABS|IND]");
                }
            } else {
                return rej(pc, format!("invalid BPF_LD mode {:#04x}", i.code));
            }
        }
        _ => {}
    }
    Ok(())
}

enum Flow {
    Next,
    Exit,
    Branch(Box<State>),
    Dead,
}

fn read_reg(st: &State, pc: usize, r: u8) -> VResult<Reg> {
    let v = st.regs[r as usize];
    if v == Reg::Uninit {
        return rej(pc, format!("R{r} !read_ok (uninitialised register)"));
    }
    Ok(v)
}

fn step(cx: &mut Ctx<'_>, st: &mut State) -> VResult<Flow> {
    let pc = st.pc;
    let Some(&i) = cx.prog.insns.get(pc) else {
        return rej(pc, "fell off the end of the program");
    };
    match i.class() {
        class::ALU | class::ALU64 => {
            do_alu(st, pc, &i)?;
            st.pc += 1;
            Ok(Flow::Next)
        }
        class::JMP | class::JMP32 => do_jmp(cx, st, pc, &i),
        class::LDX => {
            let base = read_reg(st, pc, i.src)?;
            let n = size_bytes(i.size());
            let v = mem_access(cx, st, pc, base, i.off as i64, n, Access::Read)?;
            st.regs[i.dst as usize] = v;
            st.pc += 1;
            Ok(Flow::Next)
        }
        class::STX if i.mode() == mode::ATOMIC => {
            do_atomic(cx, st, pc, &i)?;
            st.pc += 1;
            Ok(Flow::Next)
        }
        class::STX | class::ST => {
            let base = read_reg(st, pc, i.dst)?;
            let val = if i.class() == class::STX {
                read_reg(st, pc, i.src)?
            } else {
                Reg::Scalar(Range::konst(i.imm as i64 as u64))
            };
            let n = size_bytes(i.size());
            mem_access(cx, st, pc, base, i.off as i64, n, Access::Write(val))?;
            // Record that this store's base is not the context.
            st.pc += 1;
            Ok(Flow::Next)
        }
        class::LD if i.code == LDDW => {
            let hi = cx.prog.insns.get(pc + 1).map(|h| h.imm).unwrap_or(0);
            st.regs[i.dst as usize] = if i.src == PSEUDO_MAP_FD {
                Reg::Map(i.imm as usize)
            } else {
                Reg::Scalar(Range::konst((i.imm as u32 as u64) | ((hi as u32 as u64) << 32)))
            };
            st.pc += 2;
            Ok(Flow::Next)
        }
        class::LD => {
            // LD_ABS / LD_IND.
            if cx.prog.prog_type != ProgType::SocketFilter {
                return rej(pc, "BPF_LD_[ABS|IND] instructions not allowed for this program type");
            }
            if !matches!(st.regs[6], Reg::Ctx { off: 0 }) {
                return rej(pc, "at the time of BPF_LD_ABS|IND R6 != pointer to skb");
            }
            if i.mode() == mode::IND {
                match read_reg(st, pc, i.src)? {
                    Reg::Scalar(_) => {}
                    r => {
                        return rej(
                            pc,
                            format!("R{} is {}: LD_IND needs a scalar", i.src, r.name()),
                        )
                    }
                }
            }
            let n = size_bytes(i.size());
            for r in 1..=5 {
                st.regs[r] = Reg::Uninit;
            }
            st.regs[0] = Reg::Scalar(Range::unsigned(0, (1u64 << (8 * n)) - 1));
            st.pc += 1;
            Ok(Flow::Next)
        }
        _ => rej(pc, format!("invalid opcode {:#04x}", i.code)),
    }
}

/// `BPF_ATOMIC`: read-modify-write of a stack slot or map value, aligned,
/// with a scalar operand; FETCH variants load the old value into src
/// (r0 for CMPXCHG).
fn do_atomic(cx: &mut Ctx<'_>, st: &mut State, pc: usize, i: &Insn) -> VResult<()> {
    use crate::insn::atomic;
    let base = read_reg(st, pc, i.dst)?;
    let val = read_reg(st, pc, i.src)?;
    if val.is_ptr() {
        return rej(pc, format!("R{} leaks addr into mem", i.src));
    }
    if i.imm == atomic::CMPXCHG {
        match read_reg(st, pc, 0)? {
            Reg::Scalar(_) => {}
            _ => return rej(pc, "R0 leaks addr into mem"),
        }
    }
    let n = size_bytes(i.size());
    match base {
        Reg::Stack { .. } => {}
        Reg::MapValue { off, var, .. } => {
            if var.as_const().is_none() || (off + i.off as i64 + var.umin as i64) % n as i64 != 0 {
                return rej(
                    pc,
                    format!("misaligned or variable-offset atomic access on map value (size {n})"),
                );
            }
        }
        other => {
            return rej(
                pc,
                format!("BPF_ATOMIC stores into R{} {} is not allowed", i.dst, other.name()),
            )
        }
    }
    mem_access(cx, st, pc, base, i.off as i64, n, Access::Read)?;
    mem_access(cx, st, pc, base, i.off as i64, n, Access::Write(Reg::Scalar(Range::UNKNOWN)))?;
    if let Reg::Stack { off } = base {
        // The slot now holds an unknown value, not the spilled scalar.
        let o = off + i.off as i64 + STACK as i64;
        if let Some(slot) = st.spill.get_mut(o as usize / 8) {
            *slot = None;
        }
    }
    if i.imm & atomic::FETCH != 0 {
        let r = if i.imm == atomic::CMPXCHG { 0 } else { i.src as usize };
        st.regs[r] = scalar_of_size(n);
    }
    Ok(())
}

fn do_alu(st: &mut State, pc: usize, i: &Insn) -> VResult<()> {
    let wide = i.class() == class::ALU64;
    let op = i.op();
    let d = i.dst as usize;
    if op == alu::END {
        let v = read_reg(st, pc, i.dst)?;
        let Reg::Scalar(r) = v else {
            return rej(pc, format!("R{d} byte swap on pointer prohibited"));
        };
        st.regs[d] = Reg::Scalar(match r.as_const() {
            Some(c) => Range::konst(endian(c, i.imm, i.is_src_x()).unwrap_or(0)),
            None if i.imm == 64 => Range::UNKNOWN,
            None => Range::unsigned(0, (1u64 << i.imm) - 1),
        });
        return Ok(());
    }
    let src = if op == alu::NEG {
        Reg::Scalar(Range::konst(0))
    } else if i.is_src_x() {
        read_reg(st, pc, i.src)?
    } else {
        Reg::Scalar(Range::konst(i.imm as i64 as u64))
    };
    if op == alu::MOV {
        if !wide && src.is_ptr() {
            return rej(pc, format!("R{} partial copy of pointer", i.src));
        }
        st.regs[d] = match src {
            Reg::Scalar(r) if !wide => Reg::Scalar(trunc32(r)),
            other => other,
        };
        return Ok(());
    }
    let dst = read_reg(st, pc, i.dst)?;
    match (dst, src) {
        (Reg::Scalar(a), Reg::Scalar(b)) => {
            st.regs[d] = Reg::Scalar(scalar_op(op, a, b, wide));
            Ok(())
        }
        _ => {
            if !wide {
                return rej(pc, format!("R{d} 32-bit pointer arithmetic prohibited"));
            }
            let r = ptr_arith(st, pc, op, dst, src, i)?;
            st.regs[d] = r;
            Ok(())
        }
    }
}

fn trunc32(r: Range) -> Range {
    if r.fits_u32() {
        r
    } else if let Some(c) = r.as_const() {
        Range::konst(c as u32 as u64)
    } else {
        Range::unsigned(0, u32::MAX as u64)
    }
}

/// Abstract ALU on scalars.
fn scalar_op(op: u8, a: Range, b: Range, wide: bool) -> Range {
    let (a, b) = if wide { (a, b) } else { (trunc32(a), trunc32(b)) };
    if let (Some(x), Some(y)) = (a.as_const(), b.as_const()) {
        let v = if wide { alu64(op, x, y) } else { alu32(op, x, y) };
        return v.map(Range::konst).unwrap_or(Range::UNKNOWN);
    }
    let r = match op {
        alu::ADD => match (a.umin.checked_add(b.umin), a.umax.checked_add(b.umax)) {
            (Some(lo), Some(hi)) => Range::unsigned(lo, hi),
            _ => Range::UNKNOWN,
        },
        alu::SUB => match (a.umin.checked_sub(b.umax), a.umax.checked_sub(b.umin)) {
            (Some(lo), Some(hi)) => Range::unsigned(lo, hi),
            _ => Range::UNKNOWN,
        },
        alu::MUL => match a.umax.checked_mul(b.umax) {
            Some(hi) => Range::unsigned(a.umin.saturating_mul(b.umin), hi),
            None => Range::UNKNOWN,
        },
        alu::DIV => match b.as_const() {
            Some(c) if c > 0 => Range::unsigned(a.umin / c, a.umax / c),
            _ => Range::unsigned(0, a.umax),
        },
        alu::MOD => match b.as_const() {
            Some(c) if c > 0 => Range::unsigned(0, (c - 1).min(a.umax)),
            // x % 0 == x, x % y <= x.
            _ => Range::unsigned(0, a.umax),
        },
        alu::AND => Range::unsigned(0, a.umax.min(b.umax)),
        alu::OR | alu::XOR => {
            // Result has no bit above the highest bit of either operand.
            let hi = a.umax | b.umax;
            let bits = 64 - hi.leading_zeros();
            let max = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
            let lo = if op == alu::OR { a.umin.max(b.umin) } else { 0 };
            Range::unsigned(lo, max)
        }
        alu::RSH => match b.as_const() {
            Some(c) if c < 64 => Range::unsigned(a.umin >> c, a.umax >> c),
            _ => Range::unsigned(0, a.umax),
        },
        alu::LSH => match b.as_const() {
            Some(c) if c < 64 && a.umax.leading_zeros() as u64 >= c => {
                Range::unsigned(a.umin << c, a.umax << c)
            }
            _ => Range::UNKNOWN,
        },
        alu::ARSH => match b.as_const() {
            Some(c) if c < 64 => {
                Range { smin: a.smin >> c, smax: a.smax >> c, ..Range::UNKNOWN }.norm()
            }
            _ => Range::UNKNOWN,
        },
        _ => Range::UNKNOWN,
    };
    if wide {
        r
    } else if !r.fits_u32() {
        Range::unsigned(0, u32::MAX as u64)
    } else if op == alu::ARSH {
        // 32-bit arithmetic shift of a value with bit 31 set.
        Range::unsigned(0, u32::MAX as u64)
    } else {
        r
    }
}

fn ptr_arith(st: &mut State, pc: usize, op: u8, dst: Reg, src: Reg, i: &Insn) -> VResult<Reg> {
    let d = i.dst;
    if op != alu::ADD && op != alu::SUB {
        return rej(pc, format!("R{d} pointer arithmetic with operator {:#x} prohibited", op));
    }
    // pkt - pkt, pkt_end - pkt, pkt - pkt_end => scalar (a length, not an address).
    if op == alu::SUB {
        if let (Reg::Pkt { .. } | Reg::PktEnd, Reg::Pkt { .. } | Reg::PktEnd) = (dst, src) {
            return Ok(Reg::Scalar(Range::UNKNOWN));
        }
    }
    // Normalise to (pointer, scalar).
    let (p, s) = match (dst, src) {
        (p, Reg::Scalar(s)) if p.is_ptr() => (p, s),
        (Reg::Scalar(s), p) if p.is_ptr() && op == alu::ADD => (p, s),
        _ => {
            return rej(
                pc,
                format!("R{d} pointer arithmetic on {} and {} prohibited", dst.name(), src.name()),
            )
        }
    };
    let neg = op == alu::SUB;
    let konst = s.as_const().map(|c| c as i64);
    let add_off = |off: i64, c: i64| -> VResult<i64> {
        let n = if neg { off.checked_sub(c) } else { off.checked_add(c) };
        match n {
            Some(n) if n.abs() < MAX_PTR_OFF => Ok(n),
            _ => rej(pc, format!("R{d} pointer offset out of range")),
        }
    };
    match p {
        Reg::Ctx { off } => match konst {
            Some(c) => Ok(Reg::Ctx { off: add_off(off, c)? }),
            None => rej(pc, format!("R{d} variable ctx access prohibited")),
        },
        Reg::Stack { off } => match konst {
            Some(c) => Ok(Reg::Stack { off: add_off(off, c)? }),
            None => rej(pc, format!("R{d} variable stack access prohibited")),
        },
        Reg::Pkt { id, off, var, range } => match konst {
            Some(c) => Ok(Reg::Pkt { id, off: add_off(off, c)?, var, range }),
            None if !neg => {
                let nv = Range::unsigned(
                    var.umin.saturating_add(s.umin),
                    var.umax.saturating_add(s.umax),
                );
                if nv.umax > MAX_PACKET_OFF || s.umax > MAX_PACKET_OFF {
                    return rej(pc, format!("R{d} unbounded packet offset (max {})", s.umax));
                }
                let _ = id;
                let _ = range;
                Ok(Reg::Pkt { id: fresh_id(st), off, var: nv, range: 0 })
            }
            None => {
                rej(pc, format!("R{d} subtraction of a variable from a packet pointer prohibited"))
            }
        },
        Reg::MapValue { map, off, var } => match konst {
            Some(c) => Ok(Reg::MapValue { map, off: add_off(off, c)?, var }),
            None if !neg => {
                if s.umax > 1 << 20 {
                    return rej(pc, format!("R{d} unbounded map value offset"));
                }
                Ok(Reg::MapValue {
                    map,
                    off,
                    var: Range::unsigned(var.umin + s.umin, var.umax + s.umax),
                })
            }
            None => rej(
                pc,
                format!("R{d} subtraction of a variable from a map value pointer prohibited"),
            ),
        },
        other => rej(pc, format!("R{d} pointer arithmetic on {} prohibited", other.name())),
    }
}

/// Fresh identities for packet pointers / map-value-or-null, derived from
/// the state so that equal histories give equal ids (helps pruning).
fn fresh_id(st: &State) -> u32 {
    let mut max = 0;
    let mut see = |r: &Reg| match r {
        Reg::Pkt { id, .. } | Reg::MapValueOrNull { id, .. } => max = max.max(*id),
        _ => {}
    };
    st.regs.iter().for_each(&mut see);
    st.spill.iter().flatten().for_each(&mut see);
    max + 1
}

enum Access {
    Read,
    Write(Reg),
}

fn scalar_of_size(n: u32) -> Reg {
    if n >= 8 {
        Reg::Scalar(Range::UNKNOWN)
    } else {
        Reg::Scalar(Range::unsigned(0, (1u64 << (8 * n)) - 1))
    }
}

fn mem_access(
    cx: &mut Ctx<'_>,
    st: &mut State,
    pc: usize,
    base: Reg,
    ioff: i64,
    n: u32,
    acc: Access,
) -> VResult<Reg> {
    // The same instruction must always access the same kind of memory
    // (context loads are translated by the JIT).
    if let Acc::Read = acc.kind() {
        let this = if let Reg::Ctx { off } = base {
            if off != 0 {
                return rej(pc, format!("dereference of modified ctx ptr off={off} disallowed"));
            }
            match ctx_field(cx.prog.prog_type, ioff, n) {
                Some(f) => Some(f),
                None => return rej(pc, format!("invalid bpf_context access off={ioff} size={n}")),
            }
        } else {
            None
        };
        match cx.ctx_loads.get_mut(pc) {
            Some(slot @ None) => *slot = Some(this),
            Some(Some(prev)) if *prev != this => {
                return rej(pc, "same insn cannot be used with different pointers")
            }
            _ => {}
        }
        if let Some(f) = this {
            return Ok(match f {
                CtxField::Data => Reg::Pkt { id: 0, off: 0, var: Range::konst(0), range: 0 },
                CtxField::DataEnd => Reg::PktEnd,
                _ => Reg::Scalar(Range::unsigned(0, u32::MAX as u64)),
            });
        }
    }
    if let Access::Write(v) = acc {
        if v == Reg::Uninit {
            return rej(pc, "storing an uninitialised register");
        }
        if v.is_ptr() && !matches!(base, Reg::Stack { .. }) {
            return rej(
                pc,
                format!(
                    "pointer leak: storing a {} pointer into {} memory prohibited",
                    v.name(),
                    base.name()
                ),
            );
        }
    }
    match base {
        Reg::Stack { off } => {
            let o = off + ioff;
            if o < -(STACK as i64) || o + n as i64 > 0 {
                return rej(pc, format!("invalid stack access off={o} size={n}"));
            }
            if o % n as i64 != 0 {
                return rej(pc, format!("misaligned stack access off={o} size={n}"));
            }
            let start = (o + STACK as i64) as usize;
            let slot = start / 8;
            match acc {
                Access::Read => {
                    if let Some(sp) = st.spill[slot] {
                        if n == 8 {
                            return Ok(sp);
                        }
                        if sp.is_ptr() {
                            return rej(
                                pc,
                                format!(
                                    "invalid size of register fill: partial read of spilled {}",
                                    sp.name()
                                ),
                            );
                        }
                        return Ok(scalar_of_size(n));
                    }
                    if st.init[start..start + n as usize].iter().any(|b| !b) {
                        return rej(
                            pc,
                            format!("invalid read from stack off {o}+0 size {n} (uninitialised)"),
                        );
                    }
                    Ok(scalar_of_size(n))
                }
                Access::Write(v) => {
                    if let Some(sp) = st.spill[slot] {
                        if sp.is_ptr() && n != 8 {
                            return rej(pc, "attempt to corrupt spilled pointer on stack");
                        }
                    }
                    if v.is_ptr() && n != 8 {
                        return rej(
                            pc,
                            format!(
                                "invalid size of register spill ({} pointer, {n} bytes)",
                                v.name()
                            ),
                        );
                    }
                    st.spill[slot] = None;
                    st.init[start..start + n as usize].fill(true);
                    if n == 8 {
                        // Scalars are spilled too, so their bounds survive.
                        st.spill[slot] = Some(v);
                    }
                    Ok(Reg::Uninit)
                }
            }
        }
        Reg::Pkt { off, var, range, .. } => {
            if let Access::Write(_) = acc {
                return rej(
                    pc,
                    "write into packet prohibited: filter programs never write the packet",
                );
            }
            let o = off + ioff;
            if o < 0 || o + n as i64 > range || var.umax > MAX_PACKET_OFF {
                return rej(pc, format!("invalid access to packet, off={o} size={n}, R{} range={range} (bounds not checked against data_end)", cx.prog.insns[pc].src));
            }
            Ok(scalar_of_size(n))
        }
        Reg::MapValue { map, off, var } => {
            let vs = cx.prog.maps.get(map).map(|m| m.value_size as i64).unwrap_or(0);
            let lo = off + ioff + var.umin as i64;
            let hi = off + ioff + var.umax as i64 + n as i64;
            if lo < 0 || hi > vs {
                return rej(
                    pc,
                    format!("invalid access to map value, value_size={vs} off={lo} size={n}"),
                );
            }
            Ok(match acc {
                Access::Read => scalar_of_size(n),
                Access::Write(_) => Reg::Uninit,
            })
        }
        Reg::Ctx { .. } => rej(pc, "invalid bpf_context access: context is read-only"),
        Reg::MapValueOrNull { .. } => {
            rej(pc, "invalid mem access 'map_value_or_null' (missing NULL check)")
        }
        Reg::PktEnd => rej(pc, "invalid mem access 'pkt_end'"),
        Reg::Map(_) => rej(pc, "invalid mem access 'map_ptr'"),
        Reg::Scalar(_) | Reg::Uninit => rej(pc, "invalid mem access 'scalar'"),
    }
}

enum Acc {
    Read,
    Write,
}
impl Access {
    fn kind(&self) -> Acc {
        match self {
            Access::Read => Acc::Read,
            Access::Write(_) => Acc::Write,
        }
    }
}

/// Checks that `ptr` points at `len` readable, initialised bytes.
fn check_mem_arg(
    cx: &Ctx<'_>,
    st: &State,
    pc: usize,
    regno: usize,
    len_lo: u64,
    len_hi: u64,
) -> VResult<()> {
    let r = st.regs[regno];
    if len_lo == 0 {
        return rej(pc, format!("R{regno} invalid zero-sized read"));
    }
    match r {
        Reg::Stack { off } => {
            if off < -(STACK as i64) || off + len_hi as i64 > 0 {
                return rej(
                    pc,
                    format!("invalid indirect access to stack R{regno} off={off} size={len_hi}"),
                );
            }
            let start = (off + STACK as i64) as usize;
            for b in start..start + len_hi as usize {
                if !st.init[b] && st.spill[b / 8].is_none() {
                    return rej(pc, format!("invalid indirect read from stack R{regno} off {off}+{} size {len_hi} (uninitialised)", b - start));
                }
                if let Some(sp) = st.spill[b / 8] {
                    if sp.is_ptr() {
                        return rej(
                            pc,
                            format!("R{regno}: helper reads spilled pointer from stack"),
                        );
                    }
                }
            }
            Ok(())
        }
        Reg::Pkt { off, var, range, .. } => {
            if off < 0 || off + len_hi as i64 > range || var.umax > MAX_PACKET_OFF {
                return rej(
                    pc,
                    format!(
                        "invalid access to packet R{regno}, off={off} size={len_hi}, range={range}"
                    ),
                );
            }
            Ok(())
        }
        Reg::MapValue { map, off, var } => {
            let vs = cx.prog.maps.get(map).map(|m| m.value_size as i64).unwrap_or(0);
            if off + (var.umin as i64) < 0 || off + var.umax as i64 + len_hi as i64 > vs {
                return rej(pc, format!("invalid access to map value R{regno}, value_size={vs} off={off} size={len_hi}"));
            }
            Ok(())
        }
        Reg::Uninit => rej(pc, format!("R{regno} !read_ok")),
        other => rej(pc, format!("R{regno} type={} expected=fp, pkt, map_value", other.name())),
    }
}

fn arg_scalar(st: &State, pc: usize, regno: usize) -> VResult<Range> {
    match st.regs[regno] {
        Reg::Scalar(r) => Ok(r),
        Reg::Uninit => rej(pc, format!("R{regno} !read_ok")),
        other => rej(pc, format!("R{regno} leaks addr into helper function ({})", other.name())),
    }
}

fn do_call(cx: &mut Ctx<'_>, st: &mut State, pc: usize, id: i32) -> VResult<()> {
    let ret = match id {
        helpers::MAP_LOOKUP | helpers::MAP_UPDATE | helpers::MAP_DELETE => {
            let Reg::Map(m) = st.regs[1] else {
                return rej(pc, format!("R1 type={} expected=map_ptr", st.regs[1].name()));
            };
            let def = cx.prog.maps.get(m).ok_or(VerifyError { pc, reason: "bad map".into() })?;
            let (ks, vs) = (def.key_size as u64, def.value_size as u64);
            check_mem_arg(cx, st, pc, 2, ks, ks)?;
            match id {
                helpers::MAP_LOOKUP => Reg::MapValueOrNull { map: m, id: fresh_id(st) },
                helpers::MAP_UPDATE => {
                    check_mem_arg(cx, st, pc, 3, vs, vs)?;
                    arg_scalar(st, pc, 4)?;
                    Reg::Scalar(Range::UNKNOWN)
                }
                _ => Reg::Scalar(Range::UNKNOWN),
            }
        }
        helpers::KTIME_GET_NS => Reg::Scalar(Range::UNKNOWN),
        helpers::TRACE_PRINTK | helpers::SLUICE_HASH => {
            let len = arg_scalar(st, pc, 2)?;
            if len.umax > 4096 {
                return rej(pc, format!("R2 unbounded memory access (max {})", len.umax));
            }
            check_mem_arg(cx, st, pc, 1, len.umin, len.umax)?;
            if id == helpers::SLUICE_HASH {
                arg_scalar(st, pc, 3)?;
                Reg::Scalar(Range::unsigned(0, u32::MAX as u64))
            } else {
                // Linux does not check arguments 3-5 of trace_printk; sluice
                // only refuses pointers there (they would leak addresses).
                for r in 3..=5 {
                    if st.regs[r].is_ptr() {
                        return rej(pc, format!("R{r} leaks addr into helper function"));
                    }
                }
                Reg::Scalar(Range::UNKNOWN)
            }
        }
        _ => return rej(pc, format!("invalid func unknown#{id} (helper not offered)")),
    };
    for r in 1..=5 {
        st.regs[r] = Reg::Uninit;
    }
    st.regs[0] = ret;
    Ok(())
}

fn do_jmp(cx: &mut Ctx<'_>, st: &mut State, pc: usize, i: &Insn) -> VResult<Flow> {
    let target = (pc as i64 + 1 + i.off as i64) as usize;
    match i.op() {
        jmp::JA => {
            st.pc = target;
            return Ok(Flow::Next);
        }
        jmp::EXIT => {
            return match st.regs[0] {
                Reg::Scalar(_) => Ok(Flow::Exit),
                Reg::Uninit => rej(pc, "R0 !read_ok at exit"),
                r => rej(pc, format!("R0 leaks addr as return value ({})", r.name())),
            };
        }
        jmp::CALL => {
            do_call(cx, st, pc, i.imm)?;
            st.pc += 1;
            return Ok(Flow::Next);
        }
        _ => {}
    }
    let wide = i.class() == class::JMP;
    let a = read_reg(st, pc, i.dst)?;
    let b = if i.is_src_x() {
        read_reg(st, pc, i.src)?
    } else {
        Reg::Scalar(Range::konst(i.imm as i64 as u64))
    };
    let mut taken = st.clone();
    taken.pc = target;
    st.pc += 1;
    let (t_ok, f_ok) = match (a, b) {
        (Reg::Scalar(x), Reg::Scalar(y)) => {
            let (t, f) = refine(i.op(), x, y, wide);
            if let Some((tx, ty)) = t {
                set_scalar(&mut taken, i, tx, ty);
            }
            if let Some((fx, fy)) = f {
                set_scalar(st, i, fx, fy);
            }
            (t.is_some(), f.is_some())
        }
        (Reg::Pkt { .. }, Reg::PktEnd) | (Reg::PktEnd, Reg::Pkt { .. }) if wide => {
            pkt_compare(i.op(), a, b, &mut taken, st);
            (true, true)
        }
        (Reg::Pkt { .. }, Reg::Pkt { .. }) if wide => (true, true),
        (Reg::MapValueOrNull { id, .. }, Reg::Scalar(z))
        | (Reg::Scalar(z), Reg::MapValueOrNull { id, .. })
            if wide && z.as_const() == Some(0) && matches!(i.op(), jmp::JEQ | jmp::JNE) =>
        {
            let (null_st, val_st) =
                if i.op() == jmp::JEQ { (&mut taken, &mut *st) } else { (&mut *st, &mut taken) };
            mark_null(null_st, id, true);
            mark_null(val_st, id, false);
            (true, true)
        }
        // A pointer that cannot be NULL compared with 0: the outcome is known
        // (in 64 bits only: the low half of a pointer may well be 0).
        (p, Reg::Scalar(z)) | (Reg::Scalar(z), p)
            if wide
                && p.is_ptr()
                && !matches!(p, Reg::MapValueOrNull { .. })
                && z.as_const() == Some(0)
                && matches!(i.op(), jmp::JEQ | jmp::JNE) =>
        {
            let ne = i.op() == jmp::JNE;
            (ne, !ne)
        }
        _ => {
            return rej(pc, format!("comparison of {} and {} prohibited", a.name(), b.name()));
        }
    };
    match (t_ok, f_ok) {
        (true, true) => Ok(Flow::Branch(Box::new(taken))),
        (true, false) => {
            *st = taken;
            Ok(Flow::Next)
        }
        (false, true) => Ok(Flow::Next),
        (false, false) => Ok(Flow::Dead),
    }
}

fn set_scalar(st: &mut State, i: &Insn, x: Range, y: Range) {
    st.regs[i.dst as usize] = Reg::Scalar(x);
    if i.is_src_x() {
        st.regs[i.src as usize] = Reg::Scalar(y);
    }
}

fn mark_null(st: &mut State, id: u32, null: bool) {
    let f = |r: &mut Reg| {
        if let Reg::MapValueOrNull { map, id: rid } = *r {
            if rid == id {
                *r = if null {
                    Reg::Scalar(Range::konst(0))
                } else {
                    Reg::MapValue { map, off: 0, var: Range::konst(0) }
                };
            }
        }
    };
    st.regs.iter_mut().for_each(f);
    st.spill.iter_mut().flatten().for_each(f);
}

fn pkt_compare(op: u8, a: Reg, b: Reg, taken: &mut State, fall: &mut State) {
    // Returns (branch where pkt+off <= end is known, bytes).
    let (pkt, pkt_is_dst) = match (a, b) {
        (p @ Reg::Pkt { .. }, _) => (p, true),
        (_, p) => (p, false),
    };
    let Reg::Pkt { id, off, .. } = pkt else { return };
    // (state-is-taken, strict) where strict means pkt < end.
    let which = match (op, pkt_is_dst) {
        (jmp::JGT, true) => Some((false, false)), // fall: pkt <= end
        (jmp::JGE, true) => Some((false, true)),  // fall: pkt < end
        (jmp::JLT, true) => Some((true, true)),   // taken: pkt < end
        (jmp::JLE, true) => Some((true, false)),  // taken: pkt <= end
        (jmp::JGT, false) => Some((true, true)),  // end > pkt
        (jmp::JGE, false) => Some((true, false)), // end >= pkt
        (jmp::JLT, false) => Some((false, false)), // fall: end >= pkt
        (jmp::JLE, false) => Some((false, true)), // fall: end > pkt
        _ => None,
    };
    let Some((in_taken, strict)) = which else { return };
    if off < 0 {
        return;
    }
    let new_range = off + strict as i64;
    let st = if in_taken { taken } else { fall };
    let f = |r: &mut Reg| {
        if let Reg::Pkt { id: rid, range, .. } = r {
            if *rid == id && *range < new_range {
                *range = new_range;
            }
        }
    };
    st.regs.iter_mut().for_each(f);
    st.spill.iter_mut().flatten().for_each(f);
}

type Side = Option<(Range, Range)>;

/// Refines two scalars for both sides of a conditional jump. `None` = side infeasible.
fn refine(op: u8, x: Range, y: Range, wide: bool) -> (Side, Side) {
    if !wide {
        // 32-bit compare: exact only when both values fit in 32 bits and,
        // for signed ops, are non-negative as i32.
        let ok = x.fits_u32() && y.fits_u32();
        let sok = ok && x.umax <= i32::MAX as u64 && y.umax <= i32::MAX as u64;
        let signed = matches!(op, jmp::JSGT | jmp::JSGE | jmp::JSLT | jmp::JSLE);
        if !(ok && (!signed || sok)) {
            if let (Some(a), Some(b)) = (x.as_const(), y.as_const()) {
                let c = crate::interp::cond(op, a, b, false).unwrap_or(false);
                return if c { (Some((x, y)), None) } else { (None, Some((x, y))) };
            }
            return (Some((x, y)), Some((x, y)));
        }
        let (sx, sy) = (x, y);
        return refine(op, sx, sy, true);
    }
    let chk = |a: Range, b: Range| -> Side {
        let (a, b) = (a.norm(), b.norm());
        (!a.is_empty() && !b.is_empty()).then_some((a, b))
    };
    // Helpers producing (x', y') for relation x OP y.
    let ult = |x: Range, y: Range, strict: bool| -> Side {
        // x < y (strict) or x <= y.
        let d = strict as u64;
        let xmax = y.umax.checked_sub(d)?;
        let ymin = x.umin.checked_add(d)?;
        chk(Range { umax: x.umax.min(xmax), ..x }, Range { umin: y.umin.max(ymin), ..y })
    };
    let slt = |x: Range, y: Range, strict: bool| -> Side {
        let d = strict as i64;
        let xmax = y.smax.checked_sub(d)?;
        let ymin = x.smin.checked_add(d)?;
        chk(Range { smax: x.smax.min(xmax), ..x }, Range { smin: y.smin.max(ymin), ..y })
    };
    let swap = |s: Side| s.map(|(a, b)| (b, a));
    match op {
        jmp::JEQ | jmp::JNE => {
            let lo = x.umin.max(y.umin);
            let hi = x.umax.min(y.umax);
            let slo = x.smin.max(y.smin);
            let shi = x.smax.min(y.smax);
            let eq = if lo <= hi && slo <= shi {
                let r = Range { umin: lo, umax: hi, smin: slo, smax: shi }.norm();
                (!r.is_empty()).then_some((r, r))
            } else {
                None
            };
            let ne = match (x.as_const(), y.as_const()) {
                (Some(a), Some(b)) if a == b => None,
                _ => {
                    // Shave a constant off an endpoint of the other range.
                    let shave = |r: Range, c: Option<u64>| -> Range {
                        match c {
                            Some(c) if r.umin == c && r.umax > c => {
                                Range { umin: c + 1, ..r }.norm()
                            }
                            Some(c) if r.umax == c && r.umin < c => {
                                Range { umax: c - 1, ..r }.norm()
                            }
                            _ => r,
                        }
                    };
                    Some((shave(x, y.as_const()), shave(y, x.as_const())))
                }
            };
            if op == jmp::JEQ {
                (eq, ne)
            } else {
                (ne, eq)
            }
        }
        jmp::JGT => (swap(ult(y, x, true)), ult(x, y, false)),
        jmp::JGE => (swap(ult(y, x, false)), ult(x, y, true)),
        jmp::JLT => (ult(x, y, true), swap(ult(y, x, false))),
        jmp::JLE => (ult(x, y, false), swap(ult(y, x, true))),
        jmp::JSGT => (swap(slt(y, x, true)), slt(x, y, false)),
        jmp::JSGE => (swap(slt(y, x, false)), slt(x, y, true)),
        jmp::JSLT => (slt(x, y, true), swap(slt(y, x, false))),
        jmp::JSLE => (slt(x, y, false), swap(slt(y, x, true))),
        jmp::JSET => match (x.as_const(), y.as_const()) {
            (Some(a), Some(b)) if a & b != 0 => (Some((x, y)), None),
            (Some(a), Some(b)) if a & b == 0 => (None, Some((x, y))),
            _ => (Some((x, y)), Some((x, y))),
        },
        _ => (Some((x, y)), Some((x, y))),
    }
}

/// Does `old` (already explored) cover `new`? Then exploring `new` is redundant.
fn covers(old: &State, new: &State) -> bool {
    let mut idmap: Vec<(u32, u32)> = Vec::new();
    for (a, b) in old.regs.iter().zip(new.regs.iter()) {
        if !reg_covers(a, b, &mut idmap) {
            return false;
        }
    }
    for k in 0..STACK {
        if old.init[k] && !new.init[k] {
            return false;
        }
    }
    for (a, b) in old.spill.iter().zip(new.spill.iter()) {
        match (a, b) {
            // Old saw plain bytes where new has a spilled pointer: a later
            // read would give new a pointer that old never checked.
            (None, Some(y)) if y.is_ptr() => return false,
            (None, _) => {}
            (Some(x), Some(y)) => {
                if !reg_covers(x, y, &mut idmap) {
                    return false;
                }
            }
            (Some(Reg::Scalar(r)), None) if *r == Range::UNKNOWN => {}
            _ => return false,
        }
    }
    true
}

fn same_id(idmap: &mut Vec<(u32, u32)>, a: u32, b: u32) -> bool {
    for &(x, y) in idmap.iter() {
        if x == a || y == b {
            return x == a && y == b;
        }
    }
    idmap.push((a, b));
    true
}

fn reg_covers(a: &Reg, b: &Reg, idmap: &mut Vec<(u32, u32)>) -> bool {
    match (a, b) {
        (Reg::Uninit, _) => true,
        (Reg::Scalar(x), Reg::Scalar(y)) => x.contains(y),
        (
            Reg::Pkt { id: i1, off: o1, var: v1, range: r1 },
            Reg::Pkt { id: i2, off: o2, var: v2, range: r2 },
        ) => o1 == o2 && v1 == v2 && r1 <= r2 && same_id(idmap, *i1, *i2),
        (Reg::MapValueOrNull { map: m1, id: i1 }, Reg::MapValueOrNull { map: m2, id: i2 }) => {
            m1 == m2 && same_id(idmap, *i1, *i2)
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests;
