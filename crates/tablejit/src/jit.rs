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
//! The rules come with the index to return (`IndexedRule`), so a
//! known-bits variant (`CompiledTable::compile_known`) can hand over a
//! reduced list and still return the original indices.
//!
//! [`Native::build`] is shared with the probe compiler (`probe_jit.rs`):
//! one way to finalize a function of signature `(pointer) -> i32`. The
//! module setup and the code memory (freed when the [`Code`] drops) are
//! `sluice-jit`'s.
//!
//! This module's `unsafe`: turning the finalized code address into a
//! function pointer.
#![allow(unsafe_code)]

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, InstBuilder, MemFlagsData, Signature, Value};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Linkage, Module};
use sluice_jit::{Code, JITModule};
use sluice_packet::key::{FlowKey, KEY_WORDS};

/// What the generated code returns when no rule matches.
pub(crate) const MISS: u32 = u32::MAX;

type Entry = extern "C" fn(*const u64) -> u32;

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
        unsafe { Native::build(|module| define(module, rules)) }
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
        let (mut code, id) = sluice_jit::build(&[], |module| {
            let id = define(module)?;
            if module.declarations().get_function_decl(id).signature != entry_signature(module) {
                return Err("internal: generated function has the wrong signature".into());
            }
            Ok(id)
        })?;
        let address = code.function(id);
        // SAFETY: `address` is the finalized entry of a function whose
        // Cranelift signature was just checked to be exactly
        // (pointer) -> i32 with the default (C) calling convention of this
        // host; it is stored next to `code`, which keeps it valid.
        let entry = unsafe { std::mem::transmute::<*const u8, Entry>(address) };
        Ok(Native { entry, _code: code })
    }
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

/// Whether rule `(mask, value)` can match at all: a value bit outside its
/// mask never equals a masked key bit (same answer as the linear scan).
pub(crate) fn satisfiable(mask: &[u64; KEY_WORDS], value: &[u64; KEY_WORDS]) -> bool {
    mask.iter().zip(value).all(|(m, v)| v & !m == 0)
}

fn define(module: &mut JITModule, rules: &[IndexedRule]) -> Result<FuncId, String> {
    let tcfg = module.target_config();
    let mut ctx = module.make_context();
    ctx.func.signature = entry_signature(module);
    let mut fbc = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fbc);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let key = b.block_params(entry)[0];
        // Load every word some live rule looks at, once.
        let mut used = [false; KEY_WORDS];
        for (_, m, v) in rules {
            if satisfiable(m, v) {
                for (u, w) in used.iter_mut().zip(m) {
                    *u |= *w != 0;
                }
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
        let mut open = true;
        for &(i, ref mask, ref value) in rules {
            if satisfiable(mask, value) && mask.iter().all(|&m| m == 0) {
                // Matches every key: the rules after it are dead code.
                let r = b.ins().iconst(types::I32, i as i64);
                b.ins().return_(&[r]);
                open = false;
                break;
            }
            let next = b.create_block();
            if satisfiable(mask, value) {
                for w in 0..KEY_WORDS {
                    if mask[w] == 0 {
                        continue;
                    }
                    let Some(k) = words[w] else {
                        return Err("internal: key word not loaded".into());
                    };
                    let x =
                        if mask[w] == u64::MAX { k } else { b.ins().band_imm_u(k, mask[w] as i64) };
                    let eq = b.ins().icmp_imm_u(IntCC::Equal, x, value[w] as i64);
                    let cont = b.create_block();
                    b.ins().brif(eq, cont, &[], next, &[]);
                    b.switch_to_block(cont);
                    b.seal_block(cont);
                }
                // `i < MAX_RULES`, checked by the caller, fits in u32 below MISS.
                let r = b.ins().iconst(types::I32, i as i64);
                b.ins().return_(&[r]);
            } else {
                b.ins().jump(next, &[]);
            }
            b.switch_to_block(next);
            b.seal_block(next);
        }
        if open {
            let miss = b.ins().iconst(types::I32, i64::from(MISS));
            b.ins().return_(&[miss]);
        }
        b.finalize(tcfg);
    }
    let id = module
        .declare_function("sluice_table", Linkage::Export, &ctx.func.signature)
        .map_err(|x| x.to_string())?;
    module.define_function(id, &mut ctx).map_err(|x| format!("{x:?}"))?;
    module.clear_context(&mut ctx);
    Ok(id)
}
