//! Native code for an IR program through Cranelift.
//!
//! Every reachable DAG node becomes one basic block: an `If` computes its
//! test and branches, `Ret(n)` returns `n`, `Fail` returns the program's
//! fail code. The generated function has the signature
//! `extern "C" fn(pkt: *const u8, caplen: u32, wirelen: u32) -> u32`.
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
//! This is the only module with `unsafe`: calling the generated code, and
//! the protochain helper that rebuilds a slice from the pointer it is given.
#![allow(unsafe_code)]

use crate::ir::{chain_eval, Chain, CmpOp, Node, NodeId, Program, Test, Val, ValId};
use crate::parse::ArOp;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, Block, FuncRef, InstBuilder, MemFlagsData, Value};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};
use std::collections::{BTreeSet, HashMap};

type Entry = extern "C" fn(*const u8, u32, u32) -> u32;

/// Native code for one program.
pub struct Compiled {
    entry: Entry,
    module: Option<JITModule>,
    /// Cranelift IR before compilation.
    pub clif: String,
    /// Cranelift's machine-code listing (VCode).
    pub asm: String,
    /// Number of packet reads that needed an inline bounds check.
    pub checked_loads: usize,
}

// SAFETY: after `finalize_definitions` the code memory is immutable and the
// entry point is a plain function without shared mutable state; the module
// is only touched again in `drop`, which has exclusive access.
unsafe impl Send for Compiled {}
// SAFETY: as above: concurrent calls only read packet memory.
unsafe impl Sync for Compiled {}

impl Drop for Compiled {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: `entry` points into this module's memory and is never
            // called again once `self` is being dropped.
            unsafe { m.free_memory() };
        }
    }
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

impl Compiled {
    /// Compiles `p`; a `Fail` node returns 0.
    pub fn new(p: &Program) -> Result<Compiled, String> {
        Compiled::with_fail(p, 0)
    }

    /// Compiles `p`; a `Fail` node returns `fail_ret`.
    pub fn with_fail(p: &Program, fail_ret: u32) -> Result<Compiled, String> {
        let e = |x: &dyn std::fmt::Display| x.to_string();
        let mut fb = settings::builder();
        fb.set("opt_level", "speed").map_err(|x| e(&x))?;
        fb.set("use_colocated_libcalls", "false").map_err(|x| e(&x))?;
        fb.set("is_pic", "false").map_err(|x| e(&x))?;
        let isa = cranelift_native::builder()
            .map_err(|x| e(&x))?
            .finish(settings::Flags::new(fb))
            .map_err(|x| e(&x))?;
        let mut jb = JITBuilder::with_isa(isa, default_libcall_names());
        jb.symbol("sluice_chain", sluice_chain as *const u8);
        let mut module = JITModule::new(jb);
        let tcfg = module.target_config();
        let ptr = tcfg.pointer_type();
        let mut ctx = module.make_context();
        ctx.func.signature.params.push(AbiParam::new(ptr));
        ctx.func.signature.params.push(AbiParam::new(types::I32));
        ctx.func.signature.params.push(AbiParam::new(types::I32));
        ctx.func.signature.returns.push(AbiParam::new(types::I32));

        let mut csig = module.make_signature();
        csig.params.push(AbiParam::new(ptr));
        for _ in 0..4 {
            csig.params.push(AbiParam::new(types::I32));
        }
        csig.returns.push(AbiParam::new(types::I32));
        let chain_id =
            module.declare_function("sluice_chain", Linkage::Import, &csig).map_err(|x| e(&x))?;

        let order = p.reachable();
        let facts = dataflow(p, &order);
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
            b.def_var(pkt, params[0]);
            b.def_var(cap, params[1]);
            b.def_var(wire, params[2]);
            let fail_block = b.create_block();
            let mut blocks: HashMap<NodeId, Block> = HashMap::new();
            for n in &order {
                blocks.insert(*n, b.create_block());
            }
            let root_block = blocks[&p.root];
            b.ins().jump(root_block, &[]);
            let mut g = Gen { p, b, pkt, cap, wire, fail_block, ptr, checked: 0 };
            for n in &order {
                let blk = blocks[n];
                g.b.switch_to_block(blk);
                let nf = facts.get(n).cloned().unwrap_or_default();
                match p.get_node(*n) {
                    Node::Ret(r) => {
                        let v = g.b.ins().iconst(types::I32, i64::from(r));
                        g.b.ins().return_(&[v]);
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
                                    let tb = blocks[&t];
                                    let fb2 = blocks[&f];
                                    g.b.ins().brif(c, tb, &[], fb2, &[]);
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
                        let tb = blocks[&t];
                        let fb2 = blocks[&f];
                        g.b.ins().brif(c, tb, &[], fb2, &[]);
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
            g.b.ins().return_(&[v]);
            checked = g.checked;
            g.b.seal_all_blocks();
            g.b.finalize(tcfg);
        }
        let clif = ctx.func.display().to_string();
        let id = module
            .declare_function("sluice_filter", Linkage::Export, &ctx.func.signature)
            .map_err(|x| e(&x))?;
        ctx.set_disasm(true);
        module.define_function(id, &mut ctx).map_err(|x| format!("{x:?}"))?;
        let asm = ctx.compiled_code().and_then(|c| c.vcode.clone()).unwrap_or_default();
        module.clear_context(&mut ctx);
        module.finalize_definitions().map_err(|x| e(&x))?;
        let code = module.get_finalized_function(id);
        // SAFETY: `code` is the finalized entry of a function whose Cranelift
        // signature is exactly (pointer, i32, i32) -> i32 with the default
        // (C) calling convention of this host.
        let entry: Entry = unsafe { std::mem::transmute::<*const u8, Entry>(code) };
        Ok(Compiled { entry, module: Some(module), clif, asm, checked_loads: checked })
    }

    /// Runs the native code on a captured packet.
    pub fn run(&self, pkt: &[u8], wirelen: u32) -> u32 {
        let caplen = u32::try_from(pkt.len()).unwrap_or(u32::MAX);
        (self.entry)(pkt.as_ptr(), caplen, wirelen)
    }
}
