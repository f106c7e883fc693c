//! The module setup and the owned, finalized code (see the crate docs).
//!
//! This module's `unsafe`: freeing the code memory when a [`Code`] drops,
//! and declaring `Code` `Send + Sync`.
#![allow(unsafe_code)]

use cranelift_codegen::settings::{self, Configurable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, FuncId};
use std::mem::ManuallyDrop;

/// Finalized native code: one JIT module whose memory is freed on drop.
///
/// Made only by [`build`]. Function addresses come from
/// [`Code::function`]; they are valid while the `Code` lives.
pub struct Code {
    /// Taken out only in `drop`.
    module: ManuallyDrop<JITModule>,
}

// SAFETY: the module is plain owned data (its code memory is mmap'd pages
// it alone owns, the rest heap values); nothing in it is tied to the thread
// that built it, so moving it to another thread and freeing it there is
// fine.
unsafe impl Send for Code {}
// SAFETY: `Code` has no `&self` method that touches the module (which is
// not `Sync`: its symbol cache is a `RefCell`): `function` takes
// `&mut self` and `drop` has exclusive access. The code memory itself is
// immutable after finalizing, so sharing addresses into it across threads
// shares nothing mutable.
unsafe impl Sync for Code {}

impl Drop for Code {
    fn drop(&mut self) {
        // SAFETY: `drop` runs once, so the module is taken exactly once and
        // `self.module` is not used afterwards.
        let module = unsafe { ManuallyDrop::take(&mut self.module) };
        // SAFETY: every code address handed out by `function` is, by the
        // contract in the crate docs, kept next to this `Code` and never
        // called once its owner drops, so none of the freed code can run
        // again. (If `build` failed, no address was handed out.)
        unsafe { module.free_memory() };
    }
}

impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Code")
    }
}

impl Code {
    /// The address of function `id`'s finalized machine code, valid until
    /// this `Code` drops. Turning it into a callable function pointer is
    /// the caller's `unsafe`: the pointer type must match the function's
    /// Cranelift signature (with the host's default, C, calling
    /// convention).
    ///
    /// Takes `&mut self` because reading the module is not thread-safe
    /// (see the `Sync` impl); callers look their entry points up right
    /// after [`build`].
    ///
    /// # Panics
    ///
    /// If `id` was not defined in this code's module.
    pub fn function(&mut self, id: FuncId) -> *const u8 {
        self.module.get_finalized_function(id)
    }
}

/// Creates a JIT module for the host (the crate docs list the flags) in
/// which each `(name, address)` of `symbols` resolves imports of `name`,
/// lets `define` declare and define functions in it, finalizes them, and
/// returns the owned code with `define`'s result (typically the
/// [`FuncId`]s of the entry points, for [`Code::function`]).
///
/// On an error from `define` or from finalizing — and if `define` panics —
/// the module's memory is freed before this returns.
pub fn build<T>(
    symbols: &[(&str, *const u8)],
    define: impl FnOnce(&mut JITModule) -> Result<T, String>,
) -> Result<(Code, T), String> {
    let mut code = Code { module: ManuallyDrop::new(new_module(symbols)?) };
    // From here on, every way out other than `Ok` drops `code`, which frees
    // the module's memory.
    let value = define(&mut code.module)?;
    code.module.finalize_definitions().map_err(|e| e.to_string())?;
    Ok((code, value))
}

/// The one place the host ISA and a JIT module are set up.
fn new_module(symbols: &[(&str, *const u8)]) -> Result<JITModule, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").map_err(|x| e(&x))?;
    flags.set("use_colocated_libcalls", "false").map_err(|x| e(&x))?;
    flags.set("is_pic", "false").map_err(|x| e(&x))?;
    let isa = cranelift_native::builder()
        .map_err(|x| e(&x))?
        .finish(settings::Flags::new(flags))
        .map_err(|x| e(&x))?;
    let mut builder = JITBuilder::with_isa(isa, default_libcall_names());
    for &(name, address) in symbols {
        builder.symbol(name, address);
    }
    Ok(JITModule::new(builder))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cranelift_codegen::ir::{types, AbiParam, InstBuilder};
    use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
    use cranelift_module::{Linkage, Module};

    extern "C" fn add_one(x: u64) -> u64 {
        x + 1
    }

    /// Defines `f(x) = add_one(x) * 2`, calling the imported `add_one`.
    fn define(module: &mut JITModule) -> Result<FuncId, String> {
        let mut sig = module.make_signature();
        sig.params.push(AbiParam::new(types::I64));
        sig.returns.push(AbiParam::new(types::I64));
        let import =
            module.declare_function("add_one", Linkage::Import, &sig).map_err(|e| e.to_string())?;
        let mut ctx = module.make_context();
        ctx.func.signature = sig.clone();
        let mut fbc = FunctionBuilderContext::new();
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fbc);
            let callee = module.declare_func_in_func(import, b.func);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            b.seal_block(entry);
            let x = b.block_params(entry)[0];
            let call = b.ins().call(callee, &[x]);
            let y = b.inst_results(call)[0];
            let r = b.ins().imul_imm_u(y, 2);
            b.ins().return_(&[r]);
            b.finalize(module.target_config());
        }
        let id = module.declare_function("f", Linkage::Local, &sig).map_err(|e| e.to_string())?;
        module.define_function(id, &mut ctx).map_err(|e| e.to_string())?;
        module.clear_context(&mut ctx);
        Ok(id)
    }

    #[test]
    fn builds_and_calls_an_imported_symbol() {
        let (mut code, id) = build(&[("add_one", add_one as *const u8)], define).unwrap();
        let ptr = code.function(id);
        // SAFETY: `f` has the Cranelift signature (i64) -> i64 in the
        // host's default calling convention, and `code` outlives the call.
        let f = unsafe { std::mem::transmute::<*const u8, extern "C" fn(u64) -> u64>(ptr) };
        assert_eq!(f(20), 42);
        // `Code` can be moved to and dropped on another thread.
        std::thread::spawn(move || drop(code)).join().unwrap();
    }

    #[test]
    fn errors_are_returned() {
        let r = build(&[], |_| Err::<(), _>("no".to_string()));
        assert_eq!(r.unwrap_err(), "no");
        // An error after code was emitted frees that code (the path must
        // at least run cleanly).
        let r = build(&[("add_one", add_one as *const u8)], |m| {
            define(m)?;
            Err::<(), _>("late".to_string())
        });
        assert_eq!(r.unwrap_err(), "late");
    }
}
