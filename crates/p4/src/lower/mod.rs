//! Compiling a P4 program into sluice's protocol-neutral core
//! (`sluice-core`): the first stage.
//!
//! # What
//! [`layout`] places the program's header vector — its headers, metadata
//! and standard metadata — in the core's key; [`parser`] compiles the P4
//! parser into a parse program over that layout, which implements the
//! core's [`sluice_core::pkt::Parse`] hook; [`action`] compiles actions
//! and straight-line code into key programs; `control` turns controls
//! into the core's control graph; [`engine`] puts them together with the
//! traffic manager, checksums and the deparser into
//! [`engine::Compiled`], which runs a program through the core's walk
//! and caches and offers the same control plane ([`crate::target`]) as
//! the interpreter.
//!
//! # Basic design
//! Each stage takes the syntax tree and the resolved types
//! ([`crate::types::TypeEnv`]) and either produces data for the core or a
//! [`Diagnostic`] at the construct it cannot lower, reading
//! `lowering: ... is not supported yet`: a program is refused, never
//! miscompiled. The reference interpreter ([`crate::interp`]) is the
//! specification: `tests/lower_parser.rs` compares the parse program's
//! key, decoded through the layout, with the interpreter's parse of the
//! same frames, and `tests/lower_engine.rs` runs every STF test the
//! interpreter passes on every program the engine compiles, in every
//! cache mode.
//!
//! # Invariants
//! - What is compiled behaves as the interpreter does on every frame
//!   (headers, validity, stack indices, metadata, `parser_error`; the
//!   engine's outputs).
//! - Compiled programs never panic and do bounded work per frame.

pub mod action;
pub(crate) mod control;
pub mod engine;
pub mod externs;
pub mod layout;
pub mod parser;

use crate::ast::{Decl, ExprKind, ParserDecl, Program, TypeKind};
use crate::diag::{Diagnostic, Result, Span};
use crate::types::{Ty, TypeEnv};

/// The refusal of a construct the lowering does not handle (yet).
pub fn refuse(span: Span, what: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::new(span, format!("lowering: {what} is not supported yet"))
}

/// The parser `main` (a v1model `V1Switch`) runs, with its headers,
/// metadata and standard metadata types.
pub fn pipeline_parser<'a>(prog: &'a Program, env: &TypeEnv) -> Result<(&'a ParserDecl, [Ty; 3])> {
    let main = prog
        .decls
        .iter()
        .find_map(|d| match d {
            Decl::Instance(i) if i.name.name == "main" => Some(i),
            _ => None,
        })
        .ok_or_else(|| Diagnostic::bare("the program has no `main` instance"))?;
    match &main.ty.kind {
        TypeKind::Named { name, .. } if name.name == "V1Switch" => {}
        _ => return Err(refuse(main.ty.span, "a package other than V1Switch")),
    }
    let Some(arg) = main.args.first() else {
        return Err(Diagnostic::new(main.span, "V1Switch without a parser"));
    };
    let name = match &arg.value.kind {
        ExprKind::Call { func, args, .. } if args.is_empty() => match &func.kind {
            ExprKind::Name { id, .. } => id,
            _ => return Err(refuse(arg.span, "this parser instantiation")),
        },
        _ => return Err(refuse(arg.span, "a parser given other than as `P()`")),
    };
    let p = prog
        .decls
        .iter()
        .find_map(|d| match d {
            Decl::Parser(p) if p.name.name == name.name => Some(p),
            _ => None,
        })
        .ok_or_else(|| Diagnostic::new(name.span, format!("no parser `{}`", name.name)))?;
    if p.params.len() != 4 {
        return Err(refuse(p.span, "a v1model parser without exactly four parameters"));
    }
    if !p.type_params.is_empty() {
        return Err(refuse(p.name.span, "a generic parser"));
    }
    let mut tys = Vec::with_capacity(3);
    for prm in &p.params[1..] {
        tys.push(env.resolve(&prm.ty, &[])?);
    }
    let [h, m, s] = <[Ty; 3]>::try_from(tys)
        .map_err(|_| Diagnostic::new(p.span, "internal error: parameter types"))?;
    Ok((p, [h, m, s]))
}
