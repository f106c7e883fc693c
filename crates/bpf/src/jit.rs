//! Cranelift JIT: native code with the interpreter's semantics.
//!
//! What? Translates a *verified* program into one native function
//! `fn(&JitCtx) -> u64`. eBPF registers become Cranelift variables, each
//! basic block (jump target or fall-through after a jump) a Cranelift block;
//! the 512-byte eBPF stack is a stack slot of the native frame.
//!
//! Memory safety. Unlike uBPF's JIT, no access is unchecked *and*
//! unproven: every `LDX`/`STX`/`ST` through a stack, packet or map-value
//! pointer was proven in bounds by the verifier (the only way to obtain a
//! [`Jitted`] is from a [`Verified`] of the same instructions, checked at
//! compile time); context loads are translated to loads from the
//! [`JitCtx`] field the verifier identified; `LD_ABS`/`LD_IND` are guarded
//! at run time (out of bounds returns 0, as in Linux); helpers go through
//! one trampoline that rebuilds Rust slices from the pointers using the
//! sizes the verifier checked. Loops were unrolled by the verifier, so the
//! code terminates. Map value memory is never reallocated (see `maps.rs`),
//! so value pointers stay valid for the run; [`Jitted::run`] refuses an
//! [`Env`] whose map definitions differ from the program's.
//!
//! Semantics shared with the interpreter: Linux division (`x/0 = 0`,
//! `x%0 = x`), masked shift amounts (Cranelift masks like eBPF), 32-bit ops
//! zero-extend, r1-r5 read as 0 after a call.
#![allow(unsafe_code)]

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, Block, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Value,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_module::{FuncId, Linkage, Module};
use sluice_jit::{Code, JITModule};

use crate::helpers::{self, Env};
use crate::insn::{alu, class, jmp, mode, size, size_bytes, LDDW, PSEUDO_MAP_FD};
use crate::interp::{addr, CtxField, Fault, Input, STACK_SIZE, TAG_MAP, TAG_SHIFT};
use crate::maps::MapDef;
use crate::verifier::Verified;
use crate::Program;

/// The context the native code reads (its address is eBPF r1).
#[repr(C)]
pub struct JitCtx {
    data: u64,
    data_end: u64,
    len: u64,
    ingress_ifindex: u64,
    rx_queue_index: u64,
    env: *mut Env,
}

const OFF_DATA: i32 = 0;
const OFF_DATA_END: i32 = 8;
const OFF_LEN: i32 = 16;
const OFF_IFINDEX: i32 = 24;
const OFF_RXQ: i32 = 32;

/// A compiled program. Its code memory is freed when it drops. `Send +
/// Sync`: the code is immutable, and a run touches only the stack, the
/// packet and the [`Env`] it is given.
pub struct Jitted {
    /// Points into `_code`'s memory, freed when `self` drops.
    func: extern "C" fn(*const JitCtx) -> u64,
    _code: Code,
    maps: Vec<MapDef>,
}

impl std::fmt::Debug for Jitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Jitted")
    }
}

/// Bytes a helper argument copied into an inline buffer hold at most.
const ARG_BUF: usize = 64;

/// A helper's pointer argument, copied: the first `n` bytes of an inline
/// buffer, or on the heap when larger.
enum Arg {
    Inline(usize),
    Heap(Vec<u8>),
}

impl Arg {
    fn get<'a>(&'a self, buf: &'a [u8; ARG_BUF]) -> &'a [u8] {
        match self {
            Arg::Inline(n) => &buf[..*n],
            Arg::Heap(v) => v,
        }
    }
}

/// The helper trampoline called by native code.
extern "C" fn helper_trampoline(
    ctx: *const JitCtx,
    id: u64,
    r1: u64,
    r2: u64,
    r3: u64,
    r4: u64,
    r5: u64,
) -> u64 {
    // SAFETY: `ctx` is the `JitCtx` that `Jitted::run` passed to the native
    // function and that lives on `run`'s stack for the whole call; its
    // `env` field is the `&mut Env` that `run` holds exclusively.
    let (ctx, env) = unsafe { (&*ctx, &mut *(*ctx).env) };
    let _ = ctx;
    // Pointer arguments: the verifier proved (rule 12) that each points to
    // at least the given number of readable, initialised bytes in the
    // native stack frame, the packet or a map value slab, all of which are
    // live during this call and not mutated while the slice exists.
    // Copied (into `buf` when they fit, so the common case allocates
    // nothing): a key or value may point into a map's own slab, which the
    // helper then writes.
    let bytes = |p: u64, n: u64, buf: &mut [u8; ARG_BUF]| -> Arg {
        // SAFETY: see above; `n` is the size the verifier checked.
        let src = unsafe { std::slice::from_raw_parts(p as *const u8, n as usize) };
        match buf.get_mut(..src.len()) {
            Some(dst) => {
                dst.copy_from_slice(src);
                Arg::Inline(src.len())
            }
            None => Arg::Heap(src.to_vec()),
        }
    };
    let (mut kbuf, mut vbuf) = ([0u8; ARG_BUF], [0u8; ARG_BUF]);
    let map_idx = |v: u64| -> Option<usize> {
        (v >> TAG_SHIFT == TAG_MAP).then_some((v & ((1 << TAG_SHIFT) - 1)) as usize)
    };
    match id as i32 {
        helpers::MAP_LOOKUP | helpers::MAP_UPDATE | helpers::MAP_DELETE => {
            let Some(m) = map_idx(r1) else { return 0 };
            let Some(map) = env.maps.get(m) else { return 0 };
            let (ks, vs) = (map.def.key_size as u64, map.def.value_size as u64);
            let key = bytes(r2, ks, &mut kbuf);
            let key = key.get(&kbuf);
            match id as i32 {
                helpers::MAP_LOOKUP => match env.lookup(m, key) {
                    Some(v) => {
                        let base = env.maps[m].slab_ptr(v.slab);
                        base as u64 + v.offset as u64
                    }
                    None => 0,
                },
                helpers::MAP_UPDATE => {
                    let val = bytes(r3, vs, &mut vbuf);
                    env.update(m, key, val.get(&vbuf), r4)
                }
                _ => env.delete(m, key),
            }
        }
        helpers::KTIME_GET_NS => env.ktime_ns(),
        helpers::TRACE_PRINTK => {
            let fmt = bytes(r1, r2, &mut kbuf);
            env.trace_printk(fmt.get(&kbuf), [r3, r4, r5])
        }
        helpers::SLUICE_HASH => {
            let data = bytes(r1, r2, &mut kbuf);
            helpers::sluice_hash(data.get(&kbuf), r3)
        }
        _ => 0,
    }
}

impl Jitted {
    /// Runs the native code on one packet.
    #[inline]
    pub fn run(&self, env: &mut Env, input: Input<'_>) -> u64 {
        self.try_run(env, input).unwrap_or(0)
    }

    /// Like [`Jitted::run`] but reports an environment mismatch. Inlined,
    /// so the context is built from the caller's registers (a `JitCtx`
    /// filled from an `Input` in memory stalled on store forwarding).
    #[inline]
    pub fn try_run(&self, env: &mut Env, input: Input<'_>) -> Result<u64, Fault> {
        if env.maps.len() != self.maps.len()
            || env.maps.iter().zip(&self.maps).any(|(m, d)| !m.def.same_memory(d))
        {
            return Err(Fault {
                pc: 0,
                reason: "environment maps do not match the program's".into(),
            });
        }
        let p = input.packet;
        let ctx = JitCtx {
            data: p.as_ptr() as u64,
            data_end: p.as_ptr() as u64 + p.len() as u64,
            len: p.len() as u64,
            ingress_ifindex: input.ingress_ifindex as u64,
            rx_queue_index: input.rx_queue_index as u64,
            env: env as *mut Env,
        };
        // SAFETY: the function was compiled from instructions the verifier
        // accepted (checked in `compile`); its memory accesses stay within
        // the native stack slot, `p` (borrowed for this call), the map slabs
        // of `env` (checked above to match the verified definitions, never
        // reallocated) and `ctx` (on this stack frame). It terminates
        // because the verifier unrolled every loop.
        Ok((self.func)(&ctx))
    }
}

/// Compiles a verified program.
pub fn compile(prog: &Program, verified: &Verified) -> Result<Jitted, String> {
    if !verified.is_for(prog) {
        return Err("the verification result does not belong to this program".into());
    }
    let symbols = [("sluice_bpf_helper", helper_trampoline as *const u8)];
    let (mut code, func_id) = sluice_jit::build(&symbols, |module| define(module, prog, verified))?;
    let address = code.function(func_id);
    // SAFETY: `address` is the finalized machine code of `bpf_prog`, whose
    // signature is `(i64) -> i64` in the platform's default calling
    // convention, which is `extern "C" fn(*const JitCtx) -> u64`. The code
    // owning it is stored next to the pointer in `Jitted`.
    let func =
        unsafe { std::mem::transmute::<*const u8, extern "C" fn(*const JitCtx) -> u64>(address) };
    Ok(Jitted { func, _code: code, maps: prog.maps.clone() })
}

/// Declares the helper trampoline and defines `bpf_prog` in `module`.
fn define(module: &mut JITModule, prog: &Program, verified: &Verified) -> Result<FuncId, String> {
    let ptr = types::I64;

    let mut hsig = module.make_signature();
    hsig.params.push(AbiParam::new(ptr));
    for _ in 0..6 {
        hsig.params.push(AbiParam::new(types::I64));
    }
    hsig.returns.push(AbiParam::new(types::I64));
    let helper_id = module
        .declare_function("sluice_bpf_helper", Linkage::Import, &hsig)
        .map_err(|e| e.to_string())?;

    let mut ctx = module.make_context();
    ctx.func.signature.params.push(AbiParam::new(ptr));
    ctx.func.signature.returns.push(AbiParam::new(types::I64));
    let func_id = module
        .declare_function("bpf_prog", Linkage::Local, &ctx.func.signature)
        .map_err(|e| e.to_string())?;

    let frontend_cfg = module.target_config();
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let helper_ref = module.declare_func_in_func(helper_id, b.func);
        let insns = &prog.insns;
        let n = insns.len();
        // Leaders: 0, jump targets, instructions after jumps.
        let mut leader = vec![false; n + 1];
        leader[0] = true;
        for (pc, i) in insns.iter().enumerate() {
            if matches!(i.class(), class::JMP | class::JMP32) && !matches!(i.op(), jmp::CALL) {
                let t = pc as i64 + 1 + i.off as i64;
                if i.op() != jmp::EXIT && t >= 0 && (t as usize) < n {
                    leader[t as usize] = true;
                }
                leader[pc + 1] = true;
            }
        }
        let blocks: Vec<Option<Block>> =
            (0..n).map(|pc| leader[pc].then(|| b.create_block())).collect();
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let regs: Vec<Variable> = (0..11).map(|_| b.declare_var(types::I64)).collect();
        let ctxp = b.block_params(entry)[0];
        let slot = b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            STACK_SIZE as u32,
            3,
        ));
        let zero = b.ins().iconst(types::I64, 0);
        for r in &regs {
            b.def_var(*r, zero);
        }
        b.def_var(regs[1], ctxp);
        let fp = b.ins().stack_addr(ptr, slot, STACK_SIZE as i32);
        b.def_var(regs[10], fp);
        let first = blocks[0].ok_or("no entry block")?;
        b.ins().jump(first, &[]);

        let mf = MemFlagsData::trusted();
        let mut terminated = true;
        let mut pc = 0usize;
        while pc < n {
            if let Some(blk) = blocks[pc] {
                if !terminated {
                    b.ins().jump(blk, &[]);
                }
                b.switch_to_block(blk);
                terminated = false;
            } else if terminated {
                // Unreachable code after an unconditional jump (the
                // verifier rejects unreachable code; keep going safely).
                pc += 1;
                continue;
            }
            let i = insns[pc];
            let (d, s) = (i.dst as usize, i.src as usize);
            let imm = i.imm as i64;
            let block_at = |t: usize| {
                blocks.get(t).copied().flatten().ok_or_else(|| format!("bad jump target {t}"))
            };
            match i.class() {
                class::ALU | class::ALU64 => {
                    let wide = i.class() == class::ALU64;
                    let dv = b.use_var(regs[d]);
                    let r = if i.op() == alu::END {
                        let v = match i.imm {
                            16 => {
                                let x = b.ins().ireduce(types::I16, dv);
                                let x = if i.is_src_x() { b.ins().bswap(x) } else { x };
                                b.ins().uextend(types::I64, x)
                            }
                            32 => {
                                let x = b.ins().ireduce(types::I32, dv);
                                let x = if i.is_src_x() { b.ins().bswap(x) } else { x };
                                b.ins().uextend(types::I64, x)
                            }
                            _ => {
                                if i.is_src_x() {
                                    b.ins().bswap(dv)
                                } else {
                                    dv
                                }
                            }
                        };
                        v
                    } else {
                        let sv = if i.is_src_x() {
                            b.use_var(regs[s])
                        } else {
                            b.ins().iconst(types::I64, imm)
                        };
                        if wide {
                            alu_op(&mut b, i.op(), dv, sv, types::I64)?
                        } else {
                            let d32 = b.ins().ireduce(types::I32, dv);
                            let s32 = b.ins().ireduce(types::I32, sv);
                            let r = alu_op(&mut b, i.op(), d32, s32, types::I32)?;
                            b.ins().uextend(types::I64, r)
                        }
                    };
                    b.def_var(regs[d], r);
                }
                class::JMP | class::JMP32 => match i.op() {
                    jmp::JA => {
                        let t = block_at((pc as i64 + 1 + i.off as i64) as usize)?;
                        b.ins().jump(t, &[]);
                        terminated = true;
                    }
                    jmp::EXIT => {
                        let r0 = b.use_var(regs[0]);
                        b.ins().return_(&[r0]);
                        terminated = true;
                    }
                    jmp::CALL => {
                        let id = b.ins().iconst(types::I64, imm);
                        let mut args = vec![ctxp, id];
                        for r in &regs[1..=5] {
                            args.push(b.use_var(*r));
                        }
                        let call = b.ins().call(helper_ref, &args);
                        let r0 = b.inst_results(call)[0];
                        b.def_var(regs[0], r0);
                        let z = b.ins().iconst(types::I64, 0);
                        for r in &regs[1..=5] {
                            b.def_var(*r, z);
                        }
                    }
                    op => {
                        let wide = i.class() == class::JMP;
                        let mut a = b.use_var(regs[d]);
                        let mut c = if i.is_src_x() {
                            b.use_var(regs[s])
                        } else {
                            b.ins().iconst(types::I64, imm)
                        };
                        if !wide {
                            a = b.ins().ireduce(types::I32, a);
                            c = b.ins().ireduce(types::I32, c);
                        }
                        let cond = if op == jmp::JSET {
                            let x = b.ins().band(a, c);
                            b.ins().icmp_imm_s(IntCC::NotEqual, x, 0)
                        } else {
                            let cc = match op {
                                jmp::JEQ => IntCC::Equal,
                                jmp::JNE => IntCC::NotEqual,
                                jmp::JGT => IntCC::UnsignedGreaterThan,
                                jmp::JGE => IntCC::UnsignedGreaterThanOrEqual,
                                jmp::JLT => IntCC::UnsignedLessThan,
                                jmp::JLE => IntCC::UnsignedLessThanOrEqual,
                                jmp::JSGT => IntCC::SignedGreaterThan,
                                jmp::JSGE => IntCC::SignedGreaterThanOrEqual,
                                jmp::JSLT => IntCC::SignedLessThan,
                                jmp::JSLE => IntCC::SignedLessThanOrEqual,
                                _ => return Err(format!("insn {pc}: bad jump op")),
                            };
                            b.ins().icmp(cc, a, c)
                        };
                        let t = block_at((pc as i64 + 1 + i.off as i64) as usize)?;
                        let f = block_at(pc + 1)?;
                        b.ins().brif(cond, t, &[], f, &[]);
                        terminated = true;
                    }
                },
                class::LDX => {
                    let nbytes = size_bytes(i.size());
                    let v = match verified.ctx_loads.get(pc).copied().flatten() {
                        Some(f) => {
                            let off = match f {
                                CtxField::Data => OFF_DATA,
                                CtxField::DataEnd => OFF_DATA_END,
                                CtxField::Len => OFF_LEN,
                                CtxField::IngressIfindex => OFF_IFINDEX,
                                CtxField::RxQueueIndex => OFF_RXQ,
                            };
                            let base = b.use_var(regs[s]);
                            b.ins().load(types::I64, mf, base, off)
                        }
                        None => {
                            let base = b.use_var(regs[s]);
                            load_sized(&mut b, mf, nbytes, base, i.off as i32)
                        }
                    };
                    b.def_var(regs[d], v);
                }
                class::STX if i.mode() == mode::ATOMIC => {
                    use crate::insn::atomic;
                    use cranelift_codegen::ir::AtomicRmwOp;
                    let ty = if i.size() == size::DW { types::I64 } else { types::I32 };
                    let base = b.use_var(regs[d]);
                    let a = b.ins().iadd_imm_s(base, i.off as i64);
                    let mut v = b.use_var(regs[s]);
                    if ty == types::I32 {
                        v = b.ins().ireduce(types::I32, v);
                    }
                    let widen = |b: &mut FunctionBuilder<'_>, x: Value| {
                        if ty == types::I32 {
                            b.ins().uextend(types::I64, x)
                        } else {
                            x
                        }
                    };
                    if i.imm == atomic::CMPXCHG {
                        let mut expected = b.use_var(regs[0]);
                        if ty == types::I32 {
                            expected = b.ins().ireduce(types::I32, expected);
                        }
                        let old = b.ins().atomic_cas(mf, a, expected, v);
                        let old = widen(&mut b, old);
                        b.def_var(regs[0], old);
                    } else {
                        let op = match i.imm & !atomic::FETCH {
                            atomic::ADD => AtomicRmwOp::Add,
                            atomic::OR => AtomicRmwOp::Or,
                            atomic::AND => AtomicRmwOp::And,
                            atomic::XOR => AtomicRmwOp::Xor,
                            _ if i.imm == atomic::XCHG => AtomicRmwOp::Xchg,
                            _ => return Err(format!("insn {pc}: bad atomic op")),
                        };
                        let old = b.ins().atomic_rmw(ty, mf, op, a, v);
                        if i.imm & atomic::FETCH != 0 {
                            let old = widen(&mut b, old);
                            b.def_var(regs[s], old);
                        }
                    }
                }
                class::STX | class::ST => {
                    let nbytes = size_bytes(i.size());
                    let base = b.use_var(regs[d]);
                    let v = if i.class() == class::STX {
                        b.use_var(regs[s])
                    } else {
                        b.ins().iconst(types::I64, imm)
                    };
                    let v = match nbytes {
                        1 => b.ins().ireduce(types::I8, v),
                        2 => b.ins().ireduce(types::I16, v),
                        4 => b.ins().ireduce(types::I32, v),
                        _ => v,
                    };
                    b.ins().store(mf, v, base, i.off as i32);
                }
                class::LD if i.code == LDDW => {
                    let hi = insns.get(pc + 1).map(|h| h.imm).unwrap_or(0);
                    let v = if i.src == PSEUDO_MAP_FD {
                        addr(TAG_MAP, i.imm as u32 as u64)
                    } else {
                        (i.imm as u32 as u64) | ((hi as u32 as u64) << 32)
                    };
                    let c = b.ins().iconst(types::I64, v as i64);
                    b.def_var(regs[d], c);
                    pc += 2;
                    continue;
                }
                class::LD if matches!(i.mode(), mode::ABS | mode::IND) && i.size() != size::DW => {
                    // Guarded: off + n <= len, else return 0.
                    let nbytes = size_bytes(i.size()) as i64;
                    let off = if i.mode() == mode::IND {
                        let sv = b.use_var(regs[s]);
                        let s32 = b.ins().ireduce(types::I32, sv);
                        let s64 = b.ins().uextend(types::I64, s32);
                        b.ins().iadd_imm_s(s64, imm)
                    } else {
                        b.ins().iconst(types::I64, imm)
                    };
                    let len = b.ins().load(types::I64, mf, ctxp, OFF_LEN);
                    let end = b.ins().iadd_imm_s(off, nbytes);
                    // off may be negative (imm < 0): signed compare of off < 0 too.
                    let too_far = b.ins().icmp(IntCC::UnsignedGreaterThan, end, len);
                    let neg = b.ins().icmp_imm_s(IntCC::SignedLessThan, off, 0);
                    let bad = b.ins().bor(too_far, neg);
                    let ok_blk = b.create_block();
                    let bad_blk = b.create_block();
                    b.ins().brif(bad, bad_blk, &[], ok_blk, &[]);
                    b.switch_to_block(bad_blk);
                    let z = b.ins().iconst(types::I64, 0);
                    b.ins().return_(&[z]);
                    b.switch_to_block(ok_blk);
                    let data = b.ins().load(types::I64, mf, ctxp, OFF_DATA);
                    let a = b.ins().iadd(data, off);
                    let v = match nbytes {
                        1 => {
                            let x = b.ins().load(types::I8, mf, a, 0);
                            b.ins().uextend(types::I64, x)
                        }
                        2 => {
                            let x = b.ins().load(types::I16, mf, a, 0);
                            let x = b.ins().bswap(x);
                            b.ins().uextend(types::I64, x)
                        }
                        _ => {
                            let x = b.ins().load(types::I32, mf, a, 0);
                            let x = b.ins().bswap(x);
                            b.ins().uextend(types::I64, x)
                        }
                    };
                    b.def_var(regs[0], v);
                    let z = b.ins().iconst(types::I64, 0);
                    for r in &regs[1..=5] {
                        b.def_var(*r, z);
                    }
                }
                _ => return Err(format!("insn {pc}: cannot compile opcode {:#04x}", i.code)),
            }
            pc += 1;
        }
        if !terminated {
            // Verified programs never fall off the end; be safe anyway.
            let z = b.ins().iconst(types::I64, 0);
            b.ins().return_(&[z]);
        }
        b.seal_all_blocks();
        b.finalize(frontend_cfg);
    }
    module.define_function(func_id, &mut ctx).map_err(|e| format!("cranelift: {e:?}"))?;
    module.clear_context(&mut ctx);
    Ok(func_id)
}

fn load_sized(
    b: &mut FunctionBuilder<'_>,
    mf: MemFlagsData,
    n: u32,
    base: Value,
    off: i32,
) -> Value {
    match n {
        1 => {
            let x = b.ins().load(types::I8, mf, base, off);
            b.ins().uextend(types::I64, x)
        }
        2 => {
            let x = b.ins().load(types::I16, mf, base, off);
            b.ins().uextend(types::I64, x)
        }
        4 => {
            let x = b.ins().load(types::I32, mf, base, off);
            b.ins().uextend(types::I64, x)
        }
        _ => b.ins().load(types::I64, mf, base, off),
    }
}

fn alu_op(
    b: &mut FunctionBuilder<'_>,
    op: u8,
    d: Value,
    s: Value,
    ty: types::Type,
) -> Result<Value, String> {
    Ok(match op {
        alu::ADD => b.ins().iadd(d, s),
        alu::SUB => b.ins().isub(d, s),
        alu::MUL => b.ins().imul(d, s),
        alu::DIV | alu::MOD => {
            let one = b.ins().iconst(ty, 1);
            let zero = b.ins().iconst(ty, 0);
            let is0 = b.ins().icmp_imm_s(IntCC::Equal, s, 0);
            let safe = b.ins().select(is0, one, s);
            if op == alu::DIV {
                let q = b.ins().udiv(d, safe);
                b.ins().select(is0, zero, q)
            } else {
                let r = b.ins().urem(d, safe);
                b.ins().select(is0, d, r)
            }
        }
        alu::OR => b.ins().bor(d, s),
        alu::AND => b.ins().band(d, s),
        alu::LSH => b.ins().ishl(d, s),
        alu::RSH => b.ins().ushr(d, s),
        alu::ARSH => b.ins().sshr(d, s),
        alu::NEG => b.ins().ineg(d),
        alu::XOR => b.ins().bxor(d, s),
        alu::MOV => s,
        _ => return Err(format!("bad ALU op {op:#x}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asm::*;
    use crate::maps::{Map, BPF_MAP_TYPE_ARRAY};
    use crate::{prog, verifier, ProgType};

    fn program(insns: Vec<crate::insn::Insn>, value_size: u32) -> Program {
        Program {
            name: "t".into(),
            prog_type: ProgType::Xdp,
            insns,
            maps: vec![MapDef {
                name: "a".into(),
                map_type: BPF_MAP_TYPE_ARRAY,
                key_size: 4,
                value_size,
                max_entries: 1,
                flags: 0,
            }],
        }
    }

    #[test]
    fn runs_and_refuses_foreign_verification_results() {
        let p = program(
            prog![ldx(sz::W, 2, 1, 0), ldx(sz::W, 0, 1, 4), alu64_reg(op::SUB, 0, 2), exit()],
            8,
        );
        let v = verifier::verify(&p).unwrap();
        let j = compile(&p, &v).unwrap();
        let mut env = Env::new(vec![Map::new(p.maps[0].clone(), 1).unwrap()]);
        assert_eq!(j.run(&mut env, Input::packet(&[0; 42])), 42);
        // Same instructions, smaller map: the proof does not carry over.
        let q = program(p.insns.clone(), 4);
        assert!(compile(&q, &v).is_err());
        // An environment with different maps is refused at run time.
        let mut other = Env::new(vec![Map::new(q.maps[0].clone(), 1).unwrap()]);
        assert!(j.try_run(&mut other, Input::packet(&[0; 4])).is_err());
    }

    /// Keys of 8 bytes (copied inline) and 72 bytes (copied to the heap),
    /// and an update whose value points into the map's own slab.
    #[test]
    fn helper_arguments_of_every_size_reach_the_map() {
        use crate::maps::BPF_MAP_TYPE_HASH;
        for key_size in [8i16, 72] {
            let mut insns = Vec::new();
            // key = key_size bytes of 0x11 at fp - key_size; value 7 at fp - 80 - 8.
            for at in (0..key_size).step_by(8) {
                insns.push(st(sz::DW, 10, -key_size + at, 0x1111_1111));
            }
            insns.push(st(sz::DW, 10, -88, 7));
            let mut p = insns;
            p.extend(ld_map(1, 0));
            p.extend([
                mov64_reg(2, 10),
                alu64_imm(op::ADD, 2, -i32::from(key_size)),
                mov64_reg(3, 10),
                alu64_imm(op::ADD, 3, -88),
                mov64_imm(4, 0),
                call(crate::helpers::MAP_UPDATE),
            ]);
            p.extend(ld_map(1, 0));
            p.extend([
                mov64_reg(2, 10),
                alu64_imm(op::ADD, 2, -i32::from(key_size)),
                call(crate::helpers::MAP_LOOKUP),
                jmp_imm(j::JEQ, 0, 0, 9),
                // Update the same key with the value where it lives in the map.
                mov64_reg(3, 0),
                mov64_reg(2, 10),
                alu64_imm(op::ADD, 2, -i32::from(key_size)),
                mov64_imm(4, 0),
            ]);
            p.extend(ld_map(1, 0));
            p.extend([
                call(crate::helpers::MAP_UPDATE),
                mov64_imm(0, 1),
                exit(),
                mov64_imm(0, 0),
                exit(),
            ]);
            let prog = Program {
                name: "k".into(),
                prog_type: ProgType::Xdp,
                insns: p,
                maps: vec![MapDef {
                    name: "h".into(),
                    map_type: BPF_MAP_TYPE_HASH,
                    key_size: key_size as u32,
                    value_size: 8,
                    max_entries: 4,
                    flags: 0,
                }],
            };
            let v = verifier::verify(&prog).unwrap_or_else(|e| panic!("{key_size}: {e}"));
            let j = compile(&prog, &v).unwrap();
            let mut env = Env::new(vec![Map::new(prog.maps[0].clone(), 1).unwrap()]);
            assert_eq!(j.run(&mut env, Input::packet(&[0; 14])), 1, "key size {key_size}");
            let mut key = Vec::new();
            for _ in 0..key_size / 8 {
                key.extend_from_slice(&0x1111_1111u64.to_le_bytes());
            }
            assert_eq!(env.maps[0].entries(), vec![(key, 7u64.to_le_bytes().to_vec())]);
        }
    }

    #[test]
    fn division_by_zero_register_is_linux_defined() {
        let p = program(
            prog![
                mov64_imm(0, 9),
                mov64_imm(1, 0),
                alu64_reg(op::DIV, 0, 1),
                mov64_imm(2, 5),
                alu32_reg(op::MOD, 2, 1),
                alu64_reg(op::ADD, 0, 2),
                exit()
            ],
            8,
        );
        let v = verifier::verify(&p).unwrap();
        let j = compile(&p, &v).unwrap();
        let mut env = Env::new(vec![Map::new(p.maps[0].clone(), 1).unwrap()]);
        assert_eq!(j.run(&mut env, Input::packet(&[])), 5);
    }
}
