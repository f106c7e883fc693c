//! Cranelift JIT support shared by sluice's code generators: the flow-table
//! compiler (`sluice-tablejit`), the pcap-filter JIT (`sluice-filter`) and
//! the eBPF JIT (`sluice-bpf`).
//!
//! # What?
//!
//! Each generator builds its own Cranelift IR (with `cranelift-codegen`,
//! `-frontend` and `-module`) and needs the same things around it: a JIT
//! module for the host, the finalized code's entry points, and the code
//! memory back when the code is no longer wanted. This crate is the one
//! place that creates a [`JITModule`]:
//!
//! - [`build`] sets up the host ISA and a module (with the imported symbols
//!   the caller names), runs the caller's closure that declares and defines
//!   functions, and finalizes them;
//! - [`Code`] owns the finalized module, gives out the address of each
//!   defined function by [`FuncId`](cranelift_module::FuncId)
//!   ([`Code::function`]), and frees the code memory when dropped.
//!
//! [`testutil`] reads this process's memory counters for the tests that
//! check that compiling and dropping code gives the memory back.
//!
//! # Basic design
//!
//! - Flags: `opt_level=speed`; `is_pic=false` (cranelift-jit requires it):
//!   addresses are absolute, so generated code may embed the addresses of
//!   memory it reads as immediates (the probe tables do); and
//!   `use_colocated_libcalls=false` (Cranelift's default, set explicitly as
//!   cranelift-jit's own `JITBuilder::with_flags` does), so libcalls, like
//!   calls to imported symbols, load the callee's absolute 64-bit address
//!   into a register and call through it: the callee may be anywhere in
//!   the address space, not only within ±2 GiB of the code.
//! - Imported symbols: `(name, address)` pairs given to [`build`] go into
//!   the module's symbol table; a function declared with
//!   `Linkage::Import` under one of those names calls that address. A
//!   name not in the table falls back to cranelift-jit's `dlsym` lookup.
//! - One module per [`Code`]: cranelift-jit frees code memory only for a
//!   whole module ([`JITModule::free_memory`]), and dropping a
//!   `JITModule` deliberately leaks its memory (so that stray function
//!   pointers stay valid). So every compiled unit — a table, a filter, an
//!   eBPF program — gets a module of its own, owned by a `Code`, whose
//!   `Drop` calls `free_memory`.
//! - Errors are `String`s, as the generators report them.
//!
//! # Costs
//!
//! A module maps whole pages for each kind of memory it uses (code,
//! read-only data), so even a tiny function holds at least one 4 KiB page
//! until its `Code` drops; freeing is `munmap`.
//!
//! # Invariants
//!
//! - This is the only crate that creates JIT modules.
//! - Every module [`build`] creates is either returned inside a [`Code`]
//!   or has its memory freed before `build` returns — on an error from the
//!   closure or from finalizing, and when the closure panics. A `Code`
//!   frees its memory when it drops. So no path leaks code memory.
//!
//! # Safety
//!
//! The `unsafe` here (all in `code.rs`): freeing the code memory in
//! [`Code`]'s `Drop`, and `Code`'s `Send`/`Sync` impls. The contract the
//! callers take on when they turn an address from [`Code::function`] into
//! an `extern "C"` function pointer (their own `unsafe` transmute): the
//! pointer is valid only while that `Code` lives, so they keep it next to
//! the `Code` in one struct and never call it once that struct drops.
//! Whether *running* the generated code is memory-safe is each generator's
//! argument, documented in its own crate.
//!
//! Code addresses obtained inside the [`build`] closure (by finalizing
//! early) are dead once `build` returns an error; the generators never do
//! that.

mod code;
pub mod testutil;

pub use code::{build, Code};
pub use cranelift_jit::JITModule;
