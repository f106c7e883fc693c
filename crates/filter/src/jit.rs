//! Native code for an IR program through Cranelift.
//!
//! Every reachable DAG node becomes one basic block: an `If` computes its
//! test and branches, `Ret(n)` returns `n`, `Fail` returns the program's
//! fail code. The generated function has the signature
//! `extern "C" fn(pkt: *const u8, caplen: u32, wirelen: u32) -> u32`.
//!
//! Filters also get a batch entry, `extern "C" fn(pkts: *const *const u8,
//! caplens: *const u32, wirelens: *const u32, n: u32, out: *mut u8)`: one
//! native loop whose body is the same DAG, where every verdict is stored to
//! `out[i]` (1 accept, 0 reject) before moving to the next packet. It
//! removes the per-packet call and setup that dominate cheap filters
//! (`ip`); [`Compiled::matches_batch`] is its safe wrapper. An `If` whose two
//! successors are leaves becomes a `select`, not a branch.
//!
//! # Memory safety
//!
//! Packet reads are emitted *without* a bounds check only where a dataflow
//! pass over the DAG proves them in range on every path (a dominating
//! `caplen >= n` for constant offsets, or an `InBounds` test with the same
//! base value). Any other read gets an inline check that sends the packet to
//! the fail block, as does a zero divisor — the IR guards make these checks
//! dead in practice, but correctness of the native code never depends on the
//! optimiser. Shifts by 32 or more give 0 as in `bpf_filter`.
//!
//! This is the only module with `unsafe`: turning the finalized code into
//! function pointers, and the protochain helper that rebuilds a slice from
//! the pointer it is given. The module setup and the code memory (freed
//! when the [`Compiled`] drops) are `sluice-jit`'s.
#![allow(unsafe_code)]

use crate::ir::{chain_eval, Chain, CmpOp, Node, NodeId, Program, Test, Val, ValId, REJECT};
use crate::parse::ArOp;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, Block, FuncRef, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_module::{FuncId, Linkage, Module};
use sluice_jit::{Code, JITModule};
use std::collections::{BTreeSet, HashMap};

type Entry = extern "C" fn(*const u8, u32, u32) -> u32;
/// `(pkts, caplens, wirelens, n, out)`: for each `i < n`, `out[i] = 1` if
/// the filter accepts packet `pkts[i]` (`caplens[i]` bytes), else 0.
type BatchEntry = extern "C" fn(*const *const u8, *const u32, *const u32, u32, *mut u8);

/// Packets per call of the batch entry (the size of the on-stack arrays).
const BATCH: usize = 64;

/// Native code for one program. `Send + Sync` as its [`Code`] is:
/// concurrent calls only read packet memory.
pub struct Compiled {
    /// `entry` and `batch` point into `_code`'s memory, freed when `self`
    /// drops.
    entry: Entry,
    batch: Option<BatchEntry>,
    _code: Code,
    /// Cranelift IR before compilation.
    pub clif: String,
    /// Cranelift's machine-code listing (VCode).
    pub asm: String,
    /// Number of packet reads that needed an inline bounds check.
    pub checked_loads: usize,
}

/// `sluice_chain(pkt, caplen, v6, nh, proto)`: 0 false, 1 true, 2 fail.
extern "C" fn sluice_chain(pkt: *const u8, caplen: u32, v6: u32, nh: u32, proto: u32) -> u32 {
    if pkt.is_null() {
        return 2;
    }
    // SAFETY: the generated code passes exactly the pointer and captured
    // length it was given by `Compiled::run`, which come from a live slice.
    let s = unsafe { std::slice::from_raw_parts(pkt, caplen as usize) };
    match chain_eval(Chain { v6: v6 != 0, nh, proto }, s) {
        Some(false) => 0,
        Some(true) => 1,
        None => 2,
    }
}

#[derive(Clone, Default, PartialEq, Eq)]
struct Facts {
    min_cap: u64,
    inb: BTreeSet<(ValId, u32, u8)>,
}

fn meet(a: &mut Option<Facts>, b: Facts) {
    match a {
        None => *a = Some(b),
        Some(x) => {
            x.min_cap = x.min_cap.min(b.min_cap);
            x.inb = x.inb.intersection(&b.inb).copied().collect();
        }
    }
}

/// Facts holding on entry to each reachable node (edges go to older nodes,
/// so visiting in decreasing id order sees every predecessor first).
fn dataflow(p: &Program, order: &[NodeId]) -> HashMap<NodeId, Facts> {
    let mut inf: HashMap<NodeId, Option<Facts>> = HashMap::new();
    inf.insert(p.root, Some(Facts::default()));
    let mut out = HashMap::new();
    for &n in order {
        let f = inf.remove(&n).flatten().unwrap_or_default();
        match p.get_node(n) {
            Node::If { test, t, f: e } => {
                let mut ft = f.clone();
                match test {
                    Test::CapGe(k) => ft.min_cap = ft.min_cap.max(u64::from(k)),
                    Test::InBounds { base, k, size } => {
                        ft.inb.insert((base, k, size));
                    }
                    Test::Cmp(..) => {}
                }
                meet(inf.entry(t).or_default(), ft);
                meet(inf.entry(e).or_default(), f.clone());
            }
            Node::Chain { t, f: e, fail, .. } => {
                for x in [t, e, fail] {
                    meet(inf.entry(x).or_default(), f.clone());
                }
            }
            _ => {}
        }
        out.insert(n, f);
    }
    out
}

struct Gen<'a, 'b> {
    p: &'a Program,
    b: FunctionBuilder<'b>,
    pkt: Variable,
    cap: Variable,
    wire: Variable,
    fail_block: Block,
    ptr: types::Type,
    checked: usize,
}

impl Gen<'_, '_> {
    fn val(
        &mut self,
        v: ValId,
        facts: &Facts,
        cache: &mut HashMap<ValId, Value>,
        depth: u32,
    ) -> Result<Value, String> {
        if let Some(x) = cache.get(&v) {
            return Ok(*x);
        }
        if depth > 2000 {
            return Err("expression too deep for the JIT".into());
        }
        let r = match self.p.get_val(v) {
            Val::Const(c) => self.b.ins().iconst(types::I32, i64::from(c)),
            Val::WireLen => self.b.use_var(self.wire),
            Val::Neg(a) => {
                let a = self.val(a, facts, cache, depth + 1)?;
                self.b.ins().ineg(a)
            }
            Val::Bin(op, a, c) => {
                let x = self.val(a, facts, cache, depth + 1)?;
                let y = self.val(c, facts, cache, depth + 1)?;
                match op {
                    ArOp::Add => self.b.ins().iadd(x, y),
                    ArOp::Sub => self.b.ins().isub(x, y),
                    ArOp::Mul => self.b.ins().imul(x, y),
                    ArOp::And => self.b.ins().band(x, y),
                    ArOp::Or => self.b.ins().bor(x, y),
                    ArOp::Xor => self.b.ins().bxor(x, y),
                    ArOp::Shl | ArOp::Shr => {
                        let s = if op == ArOp::Shl {
                            self.b.ins().ishl(x, y)
                        } else {
                            self.b.ins().ushr(x, y)
                        };
                        if let Val::Const(k) = self.p.get_val(c) {
                            if k < 32 {
                                s
                            } else {
                                self.b.ins().iconst(types::I32, 0)
                            }
                        } else {
                            let big =
                                self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, y, 32);
                            let zero = self.b.ins().iconst(types::I32, 0);
                            self.b.ins().select(big, zero, s)
                        }
                    }
                    ArOp::Div | ArOp::Mod => {
                        let nonzero = matches!(self.p.get_val(c), Val::Const(k) if k != 0);
                        if !nonzero {
                            let cont = self.b.create_block();
                            self.b.ins().brif(y, cont, &[], self.fail_block, &[]);
                            self.b.switch_to_block(cont);
                            self.b.seal_block(cont);
                        }
                        if op == ArOp::Div {
                            self.b.ins().udiv(x, y)
                        } else {
                            self.b.ins().urem(x, y)
                        }
                    }
                }
            }
            Val::Load { base, k, size } => {
                let basev = self.val(base, facts, cache, depth + 1)?;
                let proven = match self.p.get_val(base) {
                    Val::Const(c) => u64::from(c) + u64::from(k) + u64::from(size) <= facts.min_cap,
                    _ => facts.inb.contains(&(base, k, size)),
                };
                let base64 = self.b.ins().uextend(types::I64, basev);
                let off = self.b.ins().iadd_imm_u(base64, i64::from(k));
                if !proven {
                    self.checked += 1;
                    let end = self.b.ins().iadd_imm_u(off, i64::from(size));
                    let cap = self.b.use_var(self.cap);
                    let cap64 = self.b.ins().uextend(types::I64, cap);
                    let ok = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, end, cap64);
                    let cont = self.b.create_block();
                    self.b.ins().brif(ok, cont, &[], self.fail_block, &[]);
                    self.b.switch_to_block(cont);
                    self.b.seal_block(cont);
                }
                let pkt = self.b.use_var(self.pkt);
                let off =
                    if self.ptr == types::I64 { off } else { self.b.ins().ireduce(self.ptr, off) };
                let addr = self.b.ins().iadd(pkt, off);
                let flags = MemFlagsData::new().with_notrap().with_readonly();
                match size {
                    1 => {
                        let x = self.b.ins().load(types::I8, flags, addr, 0);
                        self.b.ins().uextend(types::I32, x)
                    }
                    2 => {
                        let x = self.b.ins().load(types::I16, flags, addr, 0);
                        let x = self.b.ins().bswap(x);
                        self.b.ins().uextend(types::I32, x)
                    }
                    _ => {
                        let x = self.b.ins().load(types::I32, flags, addr, 0);
                        self.b.ins().bswap(x)
                    }
                }
            }
        };
        cache.insert(v, r);
        Ok(r)
    }
}

/// Ends an `If` block on condition `c`. When both successors end the run
/// (`Ret`/`Fail`), the result is a `select` instead of a branch: the
/// verdict of the last test of a filter is data-dependent and badly
/// predicted, a conditional move is not.
fn branch(
    b: &mut FunctionBuilder<'_>,
    c: Value,
    t: NodeId,
    f: NodeId,
    blocks: &HashMap<NodeId, Block>,
    leaf: impl Fn(NodeId) -> Option<u32>,
    looping: Option<Block>,
) {
    match (leaf(t), leaf(f)) {
        (Some(rt), Some(rf)) => {
            let vt = b.ins().iconst(types::I32, i64::from(rt));
            let vf = b.ins().iconst(types::I32, i64::from(rf));
            let v = b.ins().select(c, vt, vf);
            match looping {
                Some(done) => b.ins().jump(done, &[v.into()]),
                None => b.ins().return_(&[v]),
            };
        }
        _ => {
            b.ins().brif(c, blocks[&t], &[], blocks[&f], &[]);
        }
    }
}

/// What both entry points are generated from.
struct Ctx<'a> {
    p: &'a Program,
    order: &'a [NodeId],
    facts: &'a HashMap<NodeId, Facts>,
    chain_id: FuncId,
    fail_ret: u32,
}

/// Defines the single-packet entry (`batch == false`) or the batch loop.
/// Returns the function id, its CLIF text, VCode listing and the number of
/// checked loads.
fn define(
    module: &mut JITModule,
    cx: &Ctx<'_>,
    batch: bool,
) -> Result<(FuncId, String, String, usize), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let Ctx { p, order, facts, chain_id, fail_ret } = *cx;
    let tcfg = module.target_config();
    let ptr = tcfg.pointer_type();
    let mut ctx = module.make_context();
    let sig = &mut ctx.func.signature;
    if batch {
        // (pkts, caplens, wirelens, n, out)
        for t in [ptr, ptr, ptr, types::I32, ptr] {
            sig.params.push(AbiParam::new(t));
        }
    } else {
        for t in [ptr, types::I32, types::I32] {
            sig.params.push(AbiParam::new(t));
        }
        sig.returns.push(AbiParam::new(types::I32));
    }

    let mut fbc = FunctionBuilderContext::new();
    let checked;
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fbc);
        let chain_ref: Option<FuncRef> =
            if order.iter().any(|n| matches!(p.get_node(*n), Node::Chain { .. })) {
                Some(module.declare_func_in_func(chain_id, b.func))
            } else {
                None
            };
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let pkt = b.declare_var(ptr);
        let cap = b.declare_var(types::I32);
        let wire = b.declare_var(types::I32);
        let params = b.block_params(entry).to_vec();
        let fail_block = b.create_block();
        let mut blocks: HashMap<NodeId, Block> = HashMap::new();
        for n in order {
            blocks.insert(*n, b.create_block());
        }
        let root_block = blocks[&p.root];
        // Batch mode: a loop over the packets whose body is the filter;
        // every verdict jumps to `done`, which stores it and loops.
        let looping = if batch {
            let i = b.declare_var(types::I32);
            let zero = b.ins().iconst(types::I32, 0);
            b.def_var(i, zero);
            let head = b.create_block();
            let body = b.create_block();
            let exit = b.create_block();
            let done = b.create_block();
            b.append_block_param(done, types::I32);
            b.ins().jump(head, &[]);
            b.switch_to_block(head);
            let iv = b.use_var(i);
            let more = b.ins().icmp(IntCC::UnsignedLessThan, iv, params[3]);
            b.ins().brif(more, body, &[], exit, &[]);
            b.switch_to_block(body);
            let ix = if ptr == types::I64 { b.ins().uextend(types::I64, iv) } else { iv };
            let flags = MemFlagsData::new().with_notrap().with_readonly();
            let po = b.ins().imul_imm_u(ix, i64::from(ptr.bytes()));
            let pa = b.ins().iadd(params[0], po);
            let pk = b.ins().load(ptr, flags, pa, 0);
            let lo = b.ins().imul_imm_u(ix, 4);
            let ca = b.ins().iadd(params[1], lo);
            let cl = b.ins().load(types::I32, flags, ca, 0);
            let wa = b.ins().iadd(params[2], lo);
            let wl = b.ins().load(types::I32, flags, wa, 0);
            b.def_var(pkt, pk);
            b.def_var(cap, cl);
            b.def_var(wire, wl);
            b.ins().jump(root_block, &[]);
            b.switch_to_block(exit);
            b.ins().return_(&[]);
            b.switch_to_block(done);
            let r = b.block_params(done)[0];
            let ok = b.ins().icmp_imm_u(IntCC::NotEqual, r, i64::from(REJECT));
            let iv = b.use_var(i);
            let ix = if ptr == types::I64 { b.ins().uextend(types::I64, iv) } else { iv };
            let oa = b.ins().iadd(params[4], ix);
            b.ins().store(MemFlagsData::new().with_notrap(), ok, oa, 0);
            let next = b.ins().iadd_imm_u(iv, 1);
            b.def_var(i, next);
            b.ins().jump(head, &[]);
            Some(done)
        } else {
            b.def_var(pkt, params[0]);
            b.def_var(cap, params[1]);
            b.def_var(wire, params[2]);
            b.ins().jump(root_block, &[]);
            None
        };
        // The return value of a node that ends the run at once.
        let leaf = |n: NodeId| match p.get_node(n) {
            Node::Ret(r) => Some(r),
            Node::Fail => Some(fail_ret),
            _ => None,
        };
        let mut g = Gen { p, b, pkt, cap, wire, fail_block, ptr, checked: 0 };
        for n in order {
            let blk = blocks[n];
            g.b.switch_to_block(blk);
            let nf = facts.get(n).cloned().unwrap_or_default();
            match p.get_node(*n) {
                Node::Ret(r) => {
                    let v = g.b.ins().iconst(types::I32, i64::from(r));
                    match looping {
                        Some(done) => g.b.ins().jump(done, &[v.into()]),
                        None => g.b.ins().return_(&[v]),
                    };
                }
                Node::Fail => {
                    g.b.ins().jump(fail_block, &[]);
                }
                Node::If { test, t, f } => {
                    let mut cache = HashMap::new();
                    let c = match test {
                        Test::CapGe(k) => {
                            let cap = g.b.use_var(cap);
                            g.b.ins().icmp_imm_u(
                                IntCC::UnsignedGreaterThanOrEqual,
                                cap,
                                i64::from(k),
                            )
                        }
                        Test::InBounds { base, k, size } => {
                            let bv = g.val(base, &nf, &mut cache, 0)?;
                            let b64 = g.b.ins().uextend(types::I64, bv);
                            let end = g.b.ins().iadd_imm_u(b64, i64::from(k) + i64::from(size));
                            let cap = g.b.use_var(cap);
                            let cap64 = g.b.ins().uextend(types::I64, cap);
                            g.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, end, cap64)
                        }
                        Test::Cmp(op, x, y) => {
                            let xv = g.val(x, &nf, &mut cache, 0)?;
                            let yv = if let Val::Const(k) = p.get_val(y) {
                                let cc = match op {
                                    CmpOp::Eq => IntCC::Equal,
                                    CmpOp::Gt => IntCC::UnsignedGreaterThan,
                                    CmpOp::Ge => IntCC::UnsignedGreaterThanOrEqual,
                                };
                                let c = g.b.ins().icmp_imm_u(cc, xv, i64::from(k));
                                branch(&mut g.b, c, t, f, &blocks, leaf, looping);
                                continue;
                            } else {
                                g.val(y, &nf, &mut cache, 0)?
                            };
                            let cc = match op {
                                CmpOp::Eq => IntCC::Equal,
                                CmpOp::Gt => IntCC::UnsignedGreaterThan,
                                CmpOp::Ge => IntCC::UnsignedGreaterThanOrEqual,
                            };
                            g.b.ins().icmp(cc, xv, yv)
                        }
                    };
                    branch(&mut g.b, c, t, f, &blocks, leaf, looping);
                }
                Node::Chain { chain, t, f, fail } => {
                    let Some(fr) = chain_ref else {
                        return Err("internal: chain helper missing".into());
                    };
                    let pk = g.b.use_var(pkt);
                    let cp = g.b.use_var(cap);
                    let v6 = g.b.ins().iconst(types::I32, i64::from(chain.v6));
                    let nh = g.b.ins().iconst(types::I32, i64::from(chain.nh));
                    let pr = g.b.ins().iconst(types::I32, i64::from(chain.proto));
                    let call = g.b.ins().call(fr, &[pk, cp, v6, nh, pr]);
                    let r = g.b.inst_results(call)[0];
                    let is_true = g.b.ins().icmp_imm_u(IntCC::Equal, r, 1);
                    let other = g.b.create_block();
                    g.b.ins().brif(is_true, blocks[&t], &[], other, &[]);
                    g.b.switch_to_block(other);
                    g.b.seal_block(other);
                    let is_false = g.b.ins().icmp_imm_u(IntCC::Equal, r, 0);
                    g.b.ins().brif(is_false, blocks[&f], &[], blocks[&fail], &[]);
                }
            }
        }
        g.b.switch_to_block(fail_block);
        let v = g.b.ins().iconst(types::I32, i64::from(fail_ret));
        match looping {
            Some(done) => g.b.ins().jump(done, &[v.into()]),
            None => g.b.ins().return_(&[v]),
        };
        checked = g.checked;
        g.b.seal_all_blocks();
        g.b.finalize(tcfg);
    }
    let clif = ctx.func.display().to_string();
    let name = if batch { "sluice_filter_batch" } else { "sluice_filter" };
    let id =
        module.declare_function(name, Linkage::Export, &ctx.func.signature).map_err(|x| e(&x))?;
    ctx.set_disasm(true);
    module.define_function(id, &mut ctx).map_err(|x| format!("{x:?}"))?;
    let asm = ctx.compiled_code().and_then(|c| c.vcode.clone()).unwrap_or_default();
    module.clear_context(&mut ctx);
    Ok((id, clif, asm, checked))
}

impl Compiled {
    /// Compiles filter `p` (a `Fail` node returns 0), with the batch entry
    /// point used by [`Compiled::matches_batch`].
    pub fn new(p: &Program) -> Result<Compiled, String> {
        Compiled::build(p, 0, true)
    }

    /// Compiles `p`; a `Fail` node returns `fail_ret`. No batch entry.
    pub fn with_fail(p: &Program, fail_ret: u32) -> Result<Compiled, String> {
        Compiled::build(p, fail_ret, false)
    }

    fn build(p: &Program, fail_ret: u32, batch: bool) -> Result<Compiled, String> {
        let e = |x: &dyn std::fmt::Display| x.to_string();
        let symbols = [("sluice_chain", sluice_chain as *const u8)];
        let (mut code, (id, batch_id, clif, asm, checked)) =
            sluice_jit::build(&symbols, |module| {
                let ptr = module.target_config().pointer_type();
                let mut csig = module.make_signature();
                csig.params.push(AbiParam::new(ptr));
                for _ in 0..4 {
                    csig.params.push(AbiParam::new(types::I32));
                }
                csig.returns.push(AbiParam::new(types::I32));
                let chain_id = module
                    .declare_function("sluice_chain", Linkage::Import, &csig)
                    .map_err(|x| e(&x))?;
                let order = p.reachable();
                let facts = dataflow(p, &order);
                let cx = Ctx { p, order: &order, facts: &facts, chain_id, fail_ret };
                let (id, clif, asm, checked) = define(module, &cx, false)?;
                let batch_id = if batch { Some(define(module, &cx, true)?.0) } else { None };
                Ok((id, batch_id, clif, asm, checked))
            })?;
        let address = code.function(id);
        // SAFETY: `address` is the finalized entry of a function whose
        // Cranelift signature is exactly (pointer, i32, i32) -> i32 with the
        // default (C) calling convention of this host; it is stored next to
        // `code`, which keeps it valid.
        let entry: Entry = unsafe { std::mem::transmute::<*const u8, Entry>(address) };
        let batch = batch_id.map(|b| {
            let address = code.function(b);
            // SAFETY: `address` is the finalized entry of a function whose
            // Cranelift signature is exactly (pointer, pointer, pointer, i32,
            // pointer) -> () with the default (C) calling convention; it is
            // stored next to `code`, as above.
            unsafe { std::mem::transmute::<*const u8, BatchEntry>(address) }
        });
        Ok(Compiled { entry, batch, _code: code, clif, asm, checked_loads: checked })
    }

    /// Runs the native code on a captured packet.
    pub fn run(&self, pkt: &[u8], wirelen: u32) -> u32 {
        let caplen = u32::try_from(pkt.len()).unwrap_or(u32::MAX);
        (self.entry)(pkt.as_ptr(), caplen, wirelen)
    }

    /// Verdicts (accept = true) of `pkts[i]` = (packet, wirelen) into
    /// `out[i]`, for `i < min(pkts.len(), out.len())`, through one native
    /// loop per chunk of packets (no per-packet call). Falls back to
    /// [`Compiled::run`] when there is no batch entry (`with_fail`).
    pub fn matches_batch<P: AsRef<[u8]>>(&self, pkts: &[(P, u32)], out: &mut [bool]) {
        let Some(batch) = self.batch else {
            for (o, (p, wl)) in out.iter_mut().zip(pkts) {
                *o = self.run(p.as_ref(), *wl) != REJECT;
            }
            return;
        };
        let mut ptrs = [std::ptr::null::<u8>(); BATCH];
        let mut caps = [0u32; BATCH];
        let mut wires = [0u32; BATCH];
        for (ps, os) in pkts.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            let n = ps.len().min(os.len());
            for (i, (p, wl)) in ps.iter().take(n).enumerate() {
                let p = p.as_ref();
                ptrs[i] = p.as_ptr();
                // A packet longer than 4 GiB is seen as 4 GiB long: reads
                // stay inside the slice.
                caps[i] = u32::try_from(p.len()).unwrap_or(u32::MAX);
                wires[i] = *wl;
            }
            // `n <= BATCH`, so it fits in u32. The native loop reads
            // `ptrs/caps/wires[..n]` and writes `n` bytes to `os`, all in
            // bounds (`n <= os.len()`), and reads each packet only within
            // its own `caps[i]` bytes. It stores only 0 or 1, the two valid
            // bit patterns of a one-byte `bool`, so it writes the verdicts
            // straight into the caller's slice.
            let out = os.as_mut_ptr().cast::<u8>();
            batch(ptrs.as_ptr(), caps.as_ptr(), wires.as_ptr(), n as u32, out);
        }
    }
}
