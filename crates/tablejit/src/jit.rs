//! Cranelift code generation for one table, and the entry point into it.
//!
//! The generated function is `extern "C" fn(key: *const u64) -> u32`. Its
//! entry block loads every key word that some rule looks at (each word
//! once, into an SSA value), then falls into a chain of rule blocks. A rule
//! block tests its words one after the other (`band` with the constant mask,
//! skipped for an all-ones mask; `icmp_imm eq` with the constant value) and
//! branches to the next rule's block on the first mismatch; when every word
//! matched it returns the rule's index. The block after the last rule returns
//! [`MISS`]. A rule with an all-zero mask returns at once and ends the code
//! (nothing after it is reachable); a rule whose value has bits outside its
//! mask can never match and emits no code at all.
//!
//! The *resumable* variant ([`Resume`], for tables whose rules carry
//! guards) is `extern "C" fn(key: *const u64, start: u32) -> u32`: the
//! first matching rule with index `>= start`. Its entry block loads the
//! same words, then a `br_table` on `start` (one entry per rule index of
//! the full list, default: the miss block) jumps into the chain at the
//! first emitted rule with index `>= start`. Every satisfiable rule is
//! emitted, also after a catch-all (a guard may reject the catch-all, and
//! the lookup then resumes after it); a catch-all is a rule block that
//! returns at once. `start = 0` gives the plain answer.
//!
//! The rules come with the index to return (`IndexedRule`), so a
//! known-bits variant (`CompiledTable::compile_known`) can hand over a
//! reduced list and still return the original indices.
//!
//! [`Native::build`] is shared with the probe compiler (`probe_jit.rs`):
//! one way to finalize a function of signature `(pointer) -> i32`. The
//! module setup and the code memory (freed when the [`Code`] drops) are
//! `sluice-jit`'s.
//!
//! This module's `unsafe`: turning the finalized code addresses into
//! function pointers.
#![allow(unsafe_code)]

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, InstBuilder, JumpTableData, MemFlagsData, Signature, Value,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Linkage, Module};
use sluice_jit::{Code, JITModule};
use sluice_packet::key::{FlowKey, KEY_WORDS};

/// What the generated code returns when no rule matches.
pub(crate) const MISS: u32 = u32::MAX;

type Entry = extern "C" fn(*const u64) -> u32;
type ResumeEntry = extern "C" fn(*const u64, u32) -> u32;

/// The native code of one table. `Send + Sync` as [`Code`] is: the code
/// is immutable and only reads the key it is given.
pub(crate) struct Native {
    /// Points into `_code`'s memory, which is freed when `self` drops.
    entry: Entry,
    _code: Code,
}

impl Native {
    /// Runs the code on `key`: the index of the first matching rule, or
    /// [`MISS`].
    #[inline]
    pub(crate) fn run(&self, key: &FlowKey) -> u32 {
        // A plain `extern "C"` call is safe Rust; what makes it sound is
        // that the generated code only loads `key.words[w]` for constant
        // `w < KEY_WORDS` from the pointer of a live, aligned
        // `[u64; KEY_WORDS]`, and writes nothing.
        (self.entry)(key.words.as_ptr())
    }

    /// Generates and finalizes the straight-line code for `rules`: each is
    /// `(index, mask, value)`, in lookup order; a hit returns its `index`
    /// (which the caller keeps below [`MISS`]).
    pub(crate) fn compile(rules: &[IndexedRule]) -> Result<Native, String> {
        // SAFETY: the straight-line code loads only `key[w]` for constant
        // `w < KEY_WORDS` and writes nothing.
        unsafe { Native::build(|module| define(module, rules, None)) }
    }

    /// Creates a fresh module, lets `define` declare and define one
    /// function in it, finalizes it and wraps its entry point. `define` must
    /// declare a function of signature `(pointer) -> i32` (checked here).
    ///
    /// # Safety
    ///
    /// [`Native::run`] is safe, so the code `define` generates must be
    /// memory-safe for every `&FlowKey`: it may load the key's words
    /// `0..KEY_WORDS`, and other memory only if that memory stays valid and
    /// unchanged for as long as the returned `Native` lives; it must write
    /// nothing outside its own stack frame.
    pub(crate) unsafe fn build(
        define: impl FnOnce(&mut JITModule) -> Result<FuncId, String>,
    ) -> Result<Native, String> {
        let (code, address) = finalize(define, entry_signature)?;
        // SAFETY: `address` is the finalized entry of a function whose
        // Cranelift signature was checked to be exactly (pointer) -> i32
        // with the default (C) calling convention of this host; it is
        // stored next to `code`, which keeps it valid.
        let entry = unsafe { std::mem::transmute::<*const u8, Entry>(address) };
        Ok(Native { entry, _code: code })
    }
}

/// The resumable straight-line code of one table: `run(key, start)` is
/// the first matching rule with index `>= start`. `Send + Sync` as
/// [`Code`] is.
pub(crate) struct Resume {
    /// Points into `_code`'s memory, which is freed when `self` drops.
    entry: ResumeEntry,
    _code: Code,
}

impl Resume {
    /// Runs the code on `key` from rule index `start`: the index of the
    /// first matching rule at or after `start`, or [`MISS`] (also for any
    /// `start` past the last rule).
    #[inline]
    pub(crate) fn run(&self, key: &FlowKey, start: u32) -> u32 {
        // Sound for the same reason as `Native::run`: the code loads only
        // `key.words[w]` for constant `w < KEY_WORDS`; `start` only picks
        // a branch (an out-of-range `start` takes the jump table's
        // default, the miss).
        (self.entry)(key.words.as_ptr(), start)
    }

    /// Generates and finalizes the resumable code for `rules` (as for
    /// [`Native::compile`]); `len` is the length of the full rule list,
    /// the size of the jump table on `start`.
    pub(crate) fn compile(rules: &[IndexedRule], len: usize) -> Result<Resume, String> {
        let (code, address) =
            finalize(|module| define(module, rules, Some(len)), resume_signature)?;
        // SAFETY: as in `Native::build`, for the checked signature
        // (pointer, i32) -> i32; the code loads only `key[w]` for constant
        // `w < KEY_WORDS` and writes nothing, so it is memory-safe for
        // every key and every `start`.
        let entry = unsafe { std::mem::transmute::<*const u8, ResumeEntry>(address) };
        Ok(Resume { entry, _code: code })
    }
}

/// Creates a fresh module, lets `define` declare and define one function
/// in it, checks its signature against `sig`, finalizes it and returns
/// the code and the function's address.
fn finalize(
    define: impl FnOnce(&mut JITModule) -> Result<FuncId, String>,
    sig: fn(&JITModule) -> Signature,
) -> Result<(Code, *const u8), String> {
    let (mut code, id) = sluice_jit::build(&[], |module| {
        let id = define(module)?;
        if module.declarations().get_function_decl(id).signature != sig(module) {
            return Err("internal: generated function has the wrong signature".into());
        }
        Ok(id)
    })?;
    let address = code.function(id);
    Ok((code, address))
}

/// One rule for the straight-line compiler: `(index returned on a hit,
/// mask, value)`.
pub(crate) type IndexedRule = (usize, [u64; KEY_WORDS], [u64; KEY_WORDS]);

/// The signature of every generated entry point: `(key: *const u64) -> u32`.
pub(crate) fn entry_signature(module: &JITModule) -> Signature {
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(module.target_config().pointer_type()));
    sig.returns.push(AbiParam::new(types::I32));
    sig
}

/// The signature of the resumable entry: `(key: *const u64, start: u32) -> u32`.
fn resume_signature(module: &JITModule) -> Signature {
    let mut sig = entry_signature(module);
    sig.params.push(AbiParam::new(types::I32));
    sig
}

/// Whether rule `(mask, value)` can match at all: a value bit outside its
/// mask never equals a masked key bit (same answer as the linear scan).
pub(crate) fn satisfiable(mask: &[u64; KEY_WORDS], value: &[u64; KEY_WORDS]) -> bool {
    mask.iter().zip(value).all(|(m, v)| v & !m == 0)
}

/// Emits the rule chain. `resume: None` is the plain entry `(key) ->
/// u32`, which ends at the first catch-all. `resume: Some(len)` is the
/// resumable entry `(key, start) -> u32`: every satisfiable rule is
/// emitted (a guard may reject a catch-all, so the rules after it are
/// live), and a `br_table` on `start` (one target per index `0..len`, the
/// miss for anything else) enters the chain at the first emitted rule
/// with index `>= start`.
fn define(
    module: &mut JITModule,
    rules: &[IndexedRule],
    resume: Option<usize>,
) -> Result<FuncId, String> {
    let tcfg = module.target_config();
    let mut ctx = module.make_context();
    ctx.func.signature =
        if resume.is_some() { resume_signature(module) } else { entry_signature(module) };
    let mut fbc = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fbc);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let key = b.block_params(entry)[0];
        // The rules that emit code, in order: satisfiable ones, up to and
        // including the first catch-all unless resumable.
        let mut live: Vec<&IndexedRule> = Vec::with_capacity(rules.len());
        for r in rules.iter().filter(|(_, m, v)| satisfiable(m, v)) {
            live.push(r);
            if resume.is_none() && r.1.iter().all(|&m| m == 0) {
                break;
            }
        }
        // Load every word some live rule looks at, once.
        let mut used = [false; KEY_WORDS];
        for (_, m, _) in &live {
            for (u, w) in used.iter_mut().zip(m) {
                *u |= *w != 0;
            }
        }
        let flags = MemFlagsData::trusted().with_readonly();
        let mut words: [Option<Value>; KEY_WORDS] = [None; KEY_WORDS];
        for (w, slot) in words.iter_mut().enumerate() {
            if used[w] {
                // `w < KEY_WORDS = 24`, so the offset fits in i32.
                *slot = Some(b.ins().load(types::I64, flags, key, (w * 8) as i32));
            }
        }
        // One head block per live rule, then the miss block.
        let heads: Vec<_> = (0..=live.len()).map(|_| b.create_block()).collect();
        let (Some(&first), Some(&miss)) = (heads.first(), heads.last()) else {
            return Err("internal: no miss block".into());
        };
        match resume {
            None => {
                b.ins().jump(first, &[]);
            }
            Some(len) => {
                let start = b.block_params(entry)[1];
                // Target for `start = s`: the first live rule with index
                // `>= s` (live indices ascend), else the miss.
                let mut targets = Vec::with_capacity(len);
                let mut at = 0;
                for s in 0..len {
                    while live.get(at).is_some_and(|r| r.0 < s) {
                        at += 1;
                    }
                    let block = heads.get(at).copied().unwrap_or(miss);
                    targets.push(b.func.dfg.block_call(block, &[]));
                }
                let default = b.func.dfg.block_call(miss, &[]);
                let jt = b.create_jump_table(JumpTableData::new(default, &targets));
                b.ins().br_table(start, jt);
            }
        }
        for (k, &&(i, ref mask, ref value)) in live.iter().enumerate() {
            let (Some(&here), Some(&next)) = (heads.get(k), heads.get(k + 1)) else {
                return Err("internal: missing rule block".into());
            };
            b.switch_to_block(here);
            for w in 0..KEY_WORDS {
                if mask[w] == 0 {
                    continue;
                }
                let Some(k) = words[w] else {
                    return Err("internal: key word not loaded".into());
                };
                let x = if mask[w] == u64::MAX { k } else { b.ins().band_imm_u(k, mask[w] as i64) };
                let eq = b.ins().icmp_imm_u(IntCC::Equal, x, value[w] as i64);
                let cont = b.create_block();
                b.ins().brif(eq, cont, &[], next, &[]);
                b.switch_to_block(cont);
                b.seal_block(cont);
            }
            // `i < MAX_RULES`, checked by the caller, fits in u32 below MISS.
            // A catch-all tests nothing and returns at once.
            let r = b.ins().iconst(types::I32, i as i64);
            b.ins().return_(&[r]);
        }
        b.switch_to_block(miss);
        let m = b.ins().iconst(types::I32, i64::from(MISS));
        b.ins().return_(&[m]);
        b.seal_all_blocks();
        b.finalize(tcfg);
    }
    let id = module
        .declare_function("sluice_table", Linkage::Export, &ctx.func.signature)
        .map_err(|x| x.to_string())?;
    module.define_function(id, &mut ctx).map_err(|x| format!("{x:?}"))?;
    module.clear_context(&mut ctx);
    Ok(id)
}
