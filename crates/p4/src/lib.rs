//! P4-16 for sluice: the front end for the v1model architecture and the
//! program's reference interpreter.
//!
//! # Pipeline
//!
//! 1. [`lex`] turns each file into tokens; [`pre`] runs the
//!    preprocessor over tokens (`#include` of the program's own files
//!    and of sluice's built-in `core.p4`/`v1model.p4`, object- and
//!    function-like `#define`, `#if`/`#ifdef` and friends), keeping every
//!    token's place in its file.
//! 2. [`parse`] builds the syntax tree ([`ast`]).
//! 3. [`interp`] is the P4 reference: a straightforward interpreter of
//!    the syntax tree with v1model's pipeline and externs, which every
//!    faster engine is tested against.
//! 4. [`lower`] compiles the program into sluice's core (the header
//!    vector layout, the parse program, controls, tables and externs).
//! 5. [`stf`] runs p4c's STF tests against any [`target::Target`].
//! 6. [`gen`] (a test and fuzz aid) generates small random programs
//!    and checks the compiled engine against the interpreter on them.
//! 7. [`p4info`] describes the program's control-plane API as
//!    P4Runtime's P4Info, with the ids p4c assigns.
//!
//! Compilation into sluice's core (ARCHITECTURE.md, "P4 in the core") is
//! being built in steps: [`coretable`] holds table entries as the core's
//! mask/value rules.
//!
//! Errors are [`diag::Diagnostic`]s rendered with `file:line:column`, the
//! source line and a caret; what sluice does not support is refused by
//! name, never miscompiled.

pub mod ast;
pub mod coretable;
pub mod ctl;
pub mod diag;
pub mod engines;
pub mod gen;
pub mod interp;
pub mod lex;
pub mod lower;
mod mcast;
pub mod meter;
pub mod p4info;
pub mod parse;
pub mod pre;
pub mod stf;
pub mod target;
pub mod types;
pub mod value;
