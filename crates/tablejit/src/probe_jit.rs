//! Cranelift code for a [`ProbeTable`](crate::ProbeTable): one function
//! `extern "C" fn(key: *const u64) -> u32` probing the subtables in order.
//!
//! Layout of the generated function:
//!
//! - entry: load every key word some subtable's mask touches (once each);
//!   `best = IDX_MISS`.
//! - per subtable `j`, in order: if `j > 0` and `best < min_index(j)`
//!   (an immediate), return with `j` subtables probed. Otherwise mask the
//!   key words with the constant mask words (`band_imm`, dropped for an
//!   all-ones word), then either
//!   - *straight compare* (at most [`STRAIGHT_MAX`] stored values): compare
//!     the masked words with each stored value as immediates; or
//!   - *hash probe*: `h = SEED; h = fold(h ^ w)` per masked word with
//!     `fold(x) = lo(x * MUL) ^ hi(x * MUL)` (`imul`, `umulhi`, `bxor`),
//!     `pos = h & bucket_mask` (immediate), then loop: slot address =
//!     `base + pos * stride * 8` (base and stride immediates); an `EMPTY`
//!     index word ends the probe; equal words are a hit; else `pos = (pos
//!     + 1) & bucket_mask`.
//!
//!   A hit sets `best = umin(best, index)` (within a subtable each value is
//!   stored once, so there is at most one hit).
//! - after the last subtable: return with all `n` probed.
//!
//! The return value packs `probed << IDX_BITS | best`. The probe loop ends
//! because every hash array is at most half full (an empty slot is always
//! met), which is the same argument as for `Subtable::find_slot`.
//!
//! # Safety
//!
//! The generated code reads the key words (constant offsets below
//! `KEY_WORDS`) and the subtables' slot arrays, at addresses embedded as
//! immediates; a probe position is always masked with `bucket_mask`, so it
//! stays inside its array. [`ProbeCode`] owns both the code and the
//! subtables and gives out only shared references to the latter, so the
//! arrays live, unchanged, as long as the code can be called.
#![allow(unsafe_code)]

use crate::jit::{entry_signature, Native};
use crate::probe::{Subtable, EMPTY, HASH_MUL, HASH_SEED, IDX_BITS, IDX_MISS};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Linkage, Module};
use sluice_jit::JITModule;
use sluice_packet::key::{FlowKey, KEY_WORDS};

/// Subtables with at most this many stored values are compared as
/// immediates instead of hashed.
pub(crate) const STRAIGHT_MAX: usize = 4;

/// The subtables of a probe table and the code that reads them.
pub(crate) struct ProbeCode {
    // Field order: the code is dropped (freed) before the arrays it reads;
    // nothing runs during drop either way.
    native: Native,
    /// Never mutated or moved out: the code embeds the addresses of their
    /// `slots` (the heap arrays, which stay put when the `Vec` moves).
    subs: Vec<Subtable>,
}

impl ProbeCode {
    /// Compiles the probe code for `subs` (in probe order) and takes them.
    pub(crate) fn new(subs: Vec<Subtable>) -> Result<ProbeCode, String> {
        // SAFETY: the code reads the key words below KEY_WORDS and the slot
        // arrays of `subs`, at in-bounds positions (see the module docs);
        // `subs` is moved into the returned value next to the code and
        // never mutated, so the arrays outlive every call.
        let native = unsafe { Native::build(|module| define(module, &subs))? };
        Ok(ProbeCode { native, subs })
    }

    /// The subtables, in probe order.
    pub(crate) fn subs(&self) -> &[Subtable] {
        &self.subs
    }

    /// Runs the code: `probed << IDX_BITS | (index or IDX_MISS)`.
    #[inline]
    pub(crate) fn run(&self, key: &FlowKey) -> u32 {
        self.native.run(key)
    }
}

fn define(module: &mut JITModule, subs: &[Subtable]) -> Result<FuncId, String> {
    let tcfg = module.target_config();
    let ptr = tcfg.pointer_type();
    if ptr != types::I64 {
        return Err("probe code needs a 64-bit target".into());
    }
    let mut ctx = module.make_context();
    ctx.func.signature = entry_signature(module);
    let mut fbc = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fbc);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let key = b.block_params(entry)[0];
        let key_flags = MemFlagsData::trusted().with_readonly();
        // Slot arrays are immutable while the code lives.
        let slot_flags = MemFlagsData::trusted().with_readonly();
        let mut used = [false; KEY_WORDS];
        for st in subs {
            for &(w, _) in &st.words {
                if let Some(u) = used.get_mut(w) {
                    *u = true;
                }
            }
        }
        let mut words: [Option<Value>; KEY_WORDS] = [None; KEY_WORDS];
        for (w, slot) in words.iter_mut().enumerate() {
            if used[w] {
                // `w < KEY_WORDS = 24`, so the offset fits in i32.
                *slot = Some(b.ins().load(types::I64, key_flags, key, (w * 8) as i32));
            }
        }
        let best = b.declare_var(types::I32);
        let probed = b.declare_var(types::I32);
        let miss = b.ins().iconst(types::I32, i64::from(IDX_MISS));
        b.def_var(best, miss);
        let mul = b.ins().iconst(types::I64, HASH_MUL as i64);
        let exit = b.create_block();

        for (j, st) in subs.iter().enumerate() {
            let next = b.create_block();
            if j > 0 {
                let cur = b.use_var(best);
                let done =
                    b.ins().icmp_imm_u(IntCC::UnsignedLessThan, cur, i64::from(st.min_index));
                let n = b.ins().iconst(types::I32, j as i64);
                b.def_var(probed, n);
                let go = b.create_block();
                b.ins().brif(done, exit, &[], go, &[]);
                b.switch_to_block(go);
            }
            // The masked key words, in `st.words` order.
            let mut mk = Vec::with_capacity(st.words.len());
            for &(w, m) in &st.words {
                let Some(k) = words.get(w).copied().flatten() else {
                    return Err("internal: key word not loaded".into());
                };
                mk.push(if m == u64::MAX { k } else { b.ins().band_imm_u(k, m as i64) });
            }
            if st.entries <= STRAIGHT_MAX {
                let mut entries: Vec<(u32, &[u64])> = st.entries().collect();
                entries.sort_unstable_by_key(|e| e.0);
                for (idx, vals) in entries {
                    let miss_block = b.create_block();
                    for (&k, &v) in mk.iter().zip(vals) {
                        let eq = b.ins().icmp_imm_u(IntCC::Equal, k, v as i64);
                        let cont = b.create_block();
                        b.ins().brif(eq, cont, &[], miss_block, &[]);
                        b.switch_to_block(cont);
                    }
                    let cur = b.use_var(best);
                    let i = b.ins().iconst(types::I32, i64::from(idx));
                    let nb = b.ins().umin(cur, i);
                    b.def_var(best, nb);
                    b.ins().jump(next, &[]);
                    b.switch_to_block(miss_block);
                }
                b.ins().jump(next, &[]);
            } else {
                let mut h = b.ins().iconst(types::I64, HASH_SEED as i64);
                for &k in &mk {
                    let x = b.ins().bxor(h, k);
                    let lo = b.ins().imul(x, mul);
                    let hi = b.ins().umulhi(x, mul);
                    h = b.ins().bxor(lo, hi);
                }
                let pos = b.declare_var(types::I64);
                let p0 = b.ins().band_imm_u(h, st.bucket_mask as i64);
                b.def_var(pos, p0);
                let head = b.create_block();
                b.ins().jump(head, &[]);
                b.switch_to_block(head);
                // Slot address: base + pos * stride * 8. `stride <= 25` and
                // the array holds at most 2^24 slots, so nothing overflows.
                let stride_bytes = (st.stride() * 8) as i64;
                let base = st.slots.as_ptr() as i64;
                let p = b.use_var(pos);
                let off = b.ins().imul_imm_u(p, stride_bytes);
                let addr = b.ins().iadd_imm_u(off, base);
                let idx = b.ins().load(types::I64, slot_flags, addr, 0);
                let empty = b.ins().icmp_imm_u(IntCC::Equal, idx, EMPTY as i64);
                let cmp = b.create_block();
                b.ins().brif(empty, next, &[], cmp, &[]);
                b.switch_to_block(cmp);
                let advance = b.create_block();
                for (i, &k) in mk.iter().enumerate() {
                    // `(i + 1) * 8 <= 24 * 8`: fits in i32.
                    let v = b.ins().load(types::I64, slot_flags, addr, ((i + 1) * 8) as i32);
                    let eq = b.ins().icmp(IntCC::Equal, k, v);
                    let cont = b.create_block();
                    b.ins().brif(eq, cont, &[], advance, &[]);
                    b.switch_to_block(cont);
                }
                // Hit: `idx < MAX_PROBE_RULES` fits in i32.
                let i32v = b.ins().ireduce(types::I32, idx);
                let cur = b.use_var(best);
                let nb = b.ins().umin(cur, i32v);
                b.def_var(best, nb);
                b.ins().jump(next, &[]);
                b.switch_to_block(advance);
                let p1 = b.ins().iadd_imm_u(p, 1);
                let p2 = b.ins().band_imm_u(p1, st.bucket_mask as i64);
                b.def_var(pos, p2);
                b.ins().jump(head, &[]);
            }
            b.switch_to_block(next);
        }
        let n = b.ins().iconst(types::I32, subs.len() as i64);
        b.def_var(probed, n);
        b.ins().jump(exit, &[]);
        b.switch_to_block(exit);
        let pr = b.use_var(probed);
        let hi = b.ins().ishl_imm_u(pr, i64::from(IDX_BITS));
        let lo = b.use_var(best);
        let r = b.ins().bor(hi, lo);
        b.ins().return_(&[r]);
        b.seal_all_blocks();
        b.finalize(tcfg);
    }
    let id = module
        .declare_function("sluice_probe", Linkage::Export, &ctx.func.signature)
        .map_err(|x| x.to_string())?;
    module.define_function(id, &mut ctx).map_err(|x| format!("{x:?}"))?;
    module.clear_context(&mut ctx);
    Ok(id)
}
