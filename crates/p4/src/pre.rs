//! The preprocessor, over tokens: `#include`, `#define`/`#undef`
//! (object- and function-like), `#if`/`#ifdef`/`#ifndef`/`#elif`/
//! `#else`/`#endif`, `#error`.
//!
//! `#include <core.p4>` and `#include <v1model.p4>` read sluice's own
//! built-in declarations; `#include "file"` reads a file next to the
//! including one. Every token keeps the span of the text it was lexed
//! from: a macro's body tokens point into the `#define` line, its
//! arguments at the use site. `#pragma`, `#line` and `#warning` are
//! ignored.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::diag::{Diagnostic, Sources, Span};
use crate::lex::{lex, Kw, Tok, Token};

/// sluice's built-in `core.p4`.
pub const CORE_P4: &str = include_str!("../builtin/core.p4");
/// sluice's built-in `v1model.p4`.
pub const V1MODEL_P4: &str = include_str!("../builtin/v1model.p4");

/// Nested `#include`s allowed before giving up (catches cycles).
const MAX_INCLUDE_DEPTH: usize = 64;
/// Nested macro expansions allowed.
const MAX_EXPANSION_DEPTH: usize = 64;
/// Tokens a whole program may expand to (bounds `#define A B B`-style
/// blow-ups).
const MAX_TOKENS: usize = 1_000_000;

/// Reads `path` and everything it includes; returns the program's tokens.
pub fn preprocess(sources: &mut Sources, path: &Path) -> Result<Vec<Token>, Diagnostic> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Diagnostic::bare(format!("cannot read `{}`: {e}", path.display())))?;
    let file = sources.add(path.display().to_string(), text);
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut pre = Pre::new(sources);
    pre.file(file, &dir, 0)?;
    Ok(pre.out)
}

/// Like [`preprocess`] for text in memory; `#include "x"` resolves
/// against the current directory.
pub fn preprocess_str(
    sources: &mut Sources,
    name: &str,
    text: &str,
) -> Result<Vec<Token>, Diagnostic> {
    let file = sources.add(name, text);
    let mut pre = Pre::new(sources);
    pre.file(file, Path::new("."), 0)?;
    Ok(pre.out)
}

#[derive(Clone, Debug)]
struct Macro {
    /// `Some` for a function-like macro.
    params: Option<Vec<String>>,
    body: Vec<Token>,
}

/// One open `#if` group.
struct Cond {
    /// Whether the enclosing text is being kept.
    outer: bool,
    /// Whether some branch of this group was already taken.
    taken: bool,
    /// Whether the current branch is kept.
    active: bool,
    seen_else: bool,
    span: Span,
}

struct Pre<'a> {
    sources: &'a mut Sources,
    macros: HashMap<String, Macro>,
    out: Vec<Token>,
    conds: Vec<Cond>,
    /// Built-ins already read: including one again does nothing (they
    /// are guarded anyway).
    builtins: HashSet<&'static str>,
}

impl<'a> Pre<'a> {
    fn new(sources: &'a mut Sources) -> Self {
        Pre {
            sources,
            macros: HashMap::new(),
            out: Vec::new(),
            conds: Vec::new(),
            builtins: HashSet::new(),
        }
    }

    fn active(&self) -> bool {
        self.conds.last().is_none_or(|c| c.active)
    }

    /// Preprocesses one file already in `sources`.
    fn file(&mut self, file: u32, dir: &Path, depth: usize) -> Result<(), Diagnostic> {
        let text = self.sources.get(file).map(|s| s.text.clone()).unwrap_or_default();
        let toks = lex(file, &text)?;
        let conds_at_start = self.conds.len();
        let mut pending: Vec<Token> = Vec::new();
        for tok in toks {
            match tok.kind {
                Tok::Directive { name, body, text } => {
                    if !pending.is_empty() {
                        let run = std::mem::take(&mut pending);
                        self.flush(&run)?;
                    }
                    self.directive(tok.span, &name, body, &text, dir, depth)?;
                }
                _ if self.active() => pending.push(tok),
                _ => {}
            }
        }
        self.flush(&pending)?;
        if self.conds.len() > conds_at_start {
            let span = self.conds[self.conds.len() - 1].span;
            return Err(Diagnostic::new(span, "unterminated conditional: missing `#endif`"));
        }
        Ok(())
    }

    fn flush(&mut self, run: &[Token]) -> Result<(), Diagnostic> {
        let mut out = std::mem::take(&mut self.out);
        let r = self.expand(run, &mut Vec::new(), 0, &mut out);
        self.out = out;
        r
    }

    fn directive(
        &mut self,
        span: Span,
        name: &str,
        body: Vec<Token>,
        text: &str,
        dir: &Path,
        depth: usize,
    ) -> Result<(), Diagnostic> {
        // Conditionals are tracked even inside skipped text.
        match name {
            "if" | "ifdef" | "ifndef" => {
                let outer = self.active();
                let active = outer
                    && match name {
                        "if" => self.eval_if(span, body)?,
                        "ifdef" => self.is_defined(span, &body)?,
                        _ => !self.is_defined(span, &body)?,
                    };
                self.conds.push(Cond { outer, taken: active, active, seen_else: false, span });
                return Ok(());
            }
            "elif" | "else" | "endif" => {
                let Some(c) = self.conds.last() else {
                    return Err(Diagnostic::new(span, format!("`#{name}` without `#if`")));
                };
                if c.seen_else && name != "endif" {
                    return Err(Diagnostic::new(span, format!("`#{name}` after `#else`")));
                }
                let (outer, taken) = (c.outer, c.taken);
                match name {
                    "endif" => {
                        self.conds.pop();
                    }
                    "else" => {
                        let c = self.conds.last_mut().expect("checked above");
                        c.active = outer && !taken;
                        c.taken = true;
                        c.seen_else = true;
                    }
                    _ => {
                        let active = outer && !taken && self.eval_if(span, body)?;
                        let c = self.conds.last_mut().expect("checked above");
                        c.active = active;
                        c.taken |= active;
                    }
                }
                return Ok(());
            }
            _ => {}
        }
        if !self.active() {
            return Ok(());
        }
        match name {
            "include" => self.include(span, &body, dir, depth),
            "define" => self.define(span, body),
            "undef" => {
                let name = self.macro_name(span, &body)?;
                self.macros.remove(&name);
                Ok(())
            }
            "error" => Err(Diagnostic::new(span, format!("#error {text}"))),
            "warning" | "pragma" | "line" => Ok(()),
            "" => Ok(()), // a lone `#` is a null directive
            _ => Err(Diagnostic::new(span, format!("unknown directive `#{name}`"))),
        }
    }

    fn macro_name(&self, span: Span, body: &[Token]) -> Result<String, Diagnostic> {
        match body.first().map(|t| &t.kind) {
            Some(Tok::Ident(n)) => Ok(n.clone()),
            Some(Tok::Kw(k)) => Ok(k.as_str().to_string()),
            Some(_) => Err(Diagnostic::new(body[0].span, "expected a macro name")),
            None => Err(Diagnostic::new(span, "expected a macro name")),
        }
    }

    fn is_defined(&self, span: Span, body: &[Token]) -> Result<bool, Diagnostic> {
        Ok(self.macros.contains_key(&self.macro_name(span, body)?))
    }

    fn include(
        &mut self,
        span: Span,
        body: &[Token],
        dir: &Path,
        depth: usize,
    ) -> Result<(), Diagnostic> {
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(Diagnostic::new(span, "`#include` nested too deeply (a cycle?)"));
        }
        let Some(first) = body.first() else {
            return Err(Diagnostic::new(span, "expected `\"file\"` or `<file>` after `#include`"));
        };
        match &first.kind {
            Tok::HeaderName(n) => {
                let (n, text) = match n.as_str() {
                    "core.p4" => ("core.p4", CORE_P4),
                    "v1model.p4" => ("v1model.p4", V1MODEL_P4),
                    _ => {
                        return Err(Diagnostic::new(
                            first.span,
                            format!(
                                "unknown system include `<{n}>` (sluice provides <core.p4> and <v1model.p4>)"
                            ),
                        ))
                    }
                };
                if !self.builtins.insert(n) {
                    return Ok(());
                }
                let file = self.sources.add(format!("<builtin>/{n}"), text);
                self.file(file, Path::new("."), depth + 1)
            }
            Tok::Str(n) => {
                let path: PathBuf = dir.join(n);
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    Diagnostic::new(first.span, format!("cannot read `{}`: {e}", path.display()))
                })?;
                let file = self.sources.add(path.display().to_string(), text);
                let sub = path.parent().map(Path::to_path_buf).unwrap_or_default();
                self.file(file, &sub, depth + 1)
            }
            _ => {
                Err(Diagnostic::new(first.span, "expected `\"file\"` or `<file>` after `#include`"))
            }
        }
    }

    fn define(&mut self, span: Span, body: Vec<Token>) -> Result<(), Diagnostic> {
        let name = self.macro_name(span, &body)?;
        let mut rest = &body[1..];
        let mut params = None;
        // Function-like only when `(` touches the name.
        if let Some(open) = rest.first() {
            if open.kind == Tok::Punct("(") && open.span.start == body[0].span.end {
                let mut ps = Vec::new();
                let mut i = 1;
                loop {
                    match rest.get(i).map(|t| &t.kind) {
                        Some(Tok::Punct(")")) if ps.is_empty() => break,
                        Some(Tok::Ident(p)) => ps.push(p.clone()),
                        Some(Tok::Punct("...")) => {
                            return Err(Diagnostic::unsupported(rest[i].span, "variadic macros"))
                        }
                        _ => {
                            let at = rest.get(i).map_or(span, |t| t.span);
                            return Err(Diagnostic::new(at, "expected a macro parameter name"));
                        }
                    }
                    i += 1;
                    match rest.get(i).map(|t| &t.kind) {
                        Some(Tok::Punct(",")) => i += 1,
                        Some(Tok::Punct(")")) => break,
                        _ => {
                            let at = rest.get(i).map_or(span, |t| t.span);
                            return Err(Diagnostic::new(
                                at,
                                "expected `,` or `)` in macro parameters",
                            ));
                        }
                    }
                }
                rest = &rest[i + 1..];
                params = Some(ps);
            }
        }
        if let Some(t) = rest.iter().find(|t| matches!(t.kind, Tok::Punct("#") | Tok::Punct("##")))
        {
            return Err(Diagnostic::unsupported(t.span, "`#` and `##` in macro bodies"));
        }
        self.macros.insert(name, Macro { params, body: rest.to_vec() });
        Ok(())
    }

    /// Macro-expands `toks` into `out`; `disabled` holds the macros being
    /// expanded (not expanded again inside themselves).
    fn expand(
        &self,
        toks: &[Token],
        disabled: &mut Vec<String>,
        depth: usize,
        out: &mut Vec<Token>,
    ) -> Result<(), Diagnostic> {
        let mut i = 0;
        while i < toks.len() {
            let tok = &toks[i];
            if out.len() > MAX_TOKENS {
                return Err(Diagnostic::new(tok.span, "program too large after macro expansion"));
            }
            let Tok::Ident(name) = &tok.kind else {
                out.push(tok.clone());
                i += 1;
                continue;
            };
            let Some(m) = self.macros.get(name).filter(|_| !disabled.contains(name)) else {
                out.push(tok.clone());
                i += 1;
                continue;
            };
            if depth >= MAX_EXPANSION_DEPTH {
                return Err(Diagnostic::new(tok.span, "macro expansion nested too deeply"));
            }
            let body = match &m.params {
                None => {
                    i += 1;
                    m.body.clone()
                }
                Some(params) => {
                    if toks.get(i + 1).map(|t| &t.kind) != Some(&Tok::Punct("(")) {
                        // A function-like macro's name alone is not a use.
                        out.push(tok.clone());
                        i += 1;
                        continue;
                    }
                    let (args, next) = split_args(toks, i + 1)?;
                    let args = if params.is_empty() && args.len() == 1 && args[0].is_empty() {
                        Vec::new()
                    } else {
                        args
                    };
                    if args.len() != params.len() {
                        return Err(Diagnostic::new(
                            tok.span,
                            format!(
                                "macro `{name}` takes {} argument(s), {} given",
                                params.len(),
                                args.len()
                            ),
                        ));
                    }
                    let mut expanded = Vec::with_capacity(args.len());
                    for a in &args {
                        let mut e = Vec::new();
                        self.expand(a, disabled, depth + 1, &mut e)?;
                        expanded.push(e);
                    }
                    i = next;
                    let mut body = Vec::new();
                    for t in &m.body {
                        match &t.kind {
                            Tok::Ident(p) if params.contains(p) => {
                                let k = params.iter().position(|q| q == p).unwrap_or(0);
                                body.extend(expanded[k].iter().cloned());
                            }
                            _ => body.push(t.clone()),
                        }
                    }
                    body
                }
            };
            disabled.push(name.clone());
            let r = self.expand(&body, disabled, depth + 1, out);
            disabled.pop();
            r?;
        }
        Ok(())
    }

    /// `#if` / `#elif`: `defined`, macros, integer arithmetic.
    fn eval_if(&self, span: Span, body: Vec<Token>) -> Result<bool, Diagnostic> {
        // Resolve `defined X` / `defined(X)` before expanding macros.
        let mut toks = Vec::new();
        let mut i = 0;
        while i < body.len() {
            if body[i].kind == Tok::Ident("defined".into()) {
                let paren = body.get(i + 1).map(|t| &t.kind) == Some(&Tok::Punct("("));
                let at = if paren { i + 2 } else { i + 1 };
                let name = self.macro_name(body[i].span, body.get(at..).unwrap_or(&[]))?;
                if paren && body.get(at + 1).map(|t| &t.kind) != Some(&Tok::Punct(")")) {
                    let s = body.get(at + 1).map_or(body[i].span, |t| t.span);
                    return Err(Diagnostic::new(s, "expected `)` after `defined(NAME`"));
                }
                let v = self.macros.contains_key(&name) as u128;
                toks.push(Token {
                    kind: Tok::Int { value: crate::ast::BigValue::from_u128(v), width: None },
                    span: body[i].span,
                });
                i = at + 1 + paren as usize;
            } else {
                toks.push(body[i].clone());
                i += 1;
            }
        }
        let mut expanded = Vec::new();
        self.expand(&toks, &mut Vec::new(), 0, &mut expanded)?;
        if expanded.is_empty() {
            return Err(Diagnostic::new(span, "expected an expression after `#if`"));
        }
        let mut ev = CondEval { toks: &expanded, pos: 0, span, depth: 0 };
        let v = ev.expr()?;
        if let Some(t) = expanded.get(ev.pos) {
            return Err(Diagnostic::new(
                t.span,
                format!("unexpected {} in `#if` expression", t.kind.describe()),
            ));
        }
        Ok(v != 0)
    }
}

/// The arguments of a function-like macro call whose `(` is at `open`:
/// comma-separated at paren depth one. Returns them and the index after
/// the closing `)`.
fn split_args(toks: &[Token], open: usize) -> Result<(Vec<Vec<Token>>, usize), Diagnostic> {
    let mut args = vec![Vec::new()];
    let mut depth = 0usize;
    let mut i = open + 1;
    while let Some(t) = toks.get(i) {
        match t.kind {
            Tok::Punct("(") => depth += 1,
            Tok::Punct(")") if depth == 0 => return Ok((args, i + 1)),
            Tok::Punct(")") => depth -= 1,
            Tok::Punct(",") if depth == 0 => {
                args.push(Vec::new());
                i += 1;
                continue;
            }
            _ => {}
        }
        if let Some(a) = args.last_mut() {
            a.push(t.clone());
        }
        i += 1;
    }
    Err(Diagnostic::new(toks[open].span, "unterminated macro arguments: missing `)`"))
}

/// Integer constant expressions of `#if` (C precedence, 64-bit signed).
struct CondEval<'t> {
    toks: &'t [Token],
    pos: usize,
    span: Span,
    depth: usize,
}

impl CondEval<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.kind)
    }

    fn here(&self) -> Span {
        self.toks.get(self.pos).map_or(self.span, |t| t.span)
    }

    /// The binary operator at `pos` and how many tokens it spans (`>>`
    /// is two adjacent `>`).
    fn binop(&self) -> Option<(&'static str, usize)> {
        let t = self.toks.get(self.pos)?;
        match t.kind {
            Tok::Punct(">") => {
                let n = self.toks.get(self.pos + 1);
                if n.is_some_and(|n| n.kind == Tok::Punct(">") && n.span.start == t.span.end) {
                    Some((">>", 2))
                } else {
                    Some((">", 1))
                }
            }
            Tok::Punct(
                p @ ("||" | "&&" | "|" | "^" | "&" | "==" | "!=" | "<" | "<=" | ">=" | "<<" | "+"
                | "-" | "*" | "/" | "%"),
            ) => Some((p, 1)),
            _ => None,
        }
    }

    fn expr(&mut self) -> Result<i64, Diagnostic> {
        self.depth += 1;
        if self.depth > 256 {
            return Err(Diagnostic::new(self.here(), "`#if` expression nested too deeply"));
        }
        let c = self.binary(0)?;
        let r = if self.peek() == Some(&Tok::Punct("?")) {
            self.pos += 1;
            let a = self.expr()?;
            if self.peek() != Some(&Tok::Punct(":")) {
                return Err(Diagnostic::new(self.here(), "expected `:` in `#if` expression"));
            }
            self.pos += 1;
            let b = self.expr()?;
            if c != 0 {
                a
            } else {
                b
            }
        } else {
            c
        };
        self.depth -= 1;
        Ok(r)
    }

    fn binary(&mut self, min: u8) -> Result<i64, Diagnostic> {
        let mut lhs = self.unary()?;
        while let Some((op, n)) = self.binop() {
            let prec = match op {
                "||" => 1,
                "&&" => 2,
                "|" => 3,
                "^" => 4,
                "&" => 5,
                "==" | "!=" => 6,
                "<" | ">" | "<=" | ">=" => 7,
                "<<" | ">>" => 8,
                "+" | "-" => 9,
                _ => 10,
            };
            if prec < min.max(1) {
                break;
            }
            let at = self.here();
            self.pos += n;
            let rhs = self.binary(prec + 1)?;
            lhs = match op {
                "||" => (lhs != 0 || rhs != 0) as i64,
                "&&" => (lhs != 0 && rhs != 0) as i64,
                "|" => lhs | rhs,
                "^" => lhs ^ rhs,
                "&" => lhs & rhs,
                "==" => (lhs == rhs) as i64,
                "!=" => (lhs != rhs) as i64,
                "<" => (lhs < rhs) as i64,
                ">" => (lhs > rhs) as i64,
                "<=" => (lhs <= rhs) as i64,
                ">=" => (lhs >= rhs) as i64,
                "<<" => lhs.wrapping_shl(rhs as u32),
                ">>" => lhs.wrapping_shr(rhs as u32),
                "+" => lhs.wrapping_add(rhs),
                "-" => lhs.wrapping_sub(rhs),
                "*" => lhs.wrapping_mul(rhs),
                _ => {
                    if rhs == 0 {
                        return Err(Diagnostic::new(at, "division by zero in `#if`"));
                    }
                    if op == "/" {
                        lhs.wrapping_div(rhs)
                    } else {
                        lhs.wrapping_rem(rhs)
                    }
                }
            };
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<i64, Diagnostic> {
        self.depth += 1;
        let r = self.unary_inner();
        self.depth -= 1;
        r
    }

    fn unary_inner(&mut self) -> Result<i64, Diagnostic> {
        let at = self.here();
        if self.depth > 256 {
            return Err(Diagnostic::new(at, "`#if` expression nested too deeply"));
        }
        let Some(t) = self.peek().cloned() else {
            return Err(Diagnostic::new(at, "unexpected end of `#if` expression"));
        };
        self.pos += 1;
        Ok(match t {
            Tok::Int { value, .. } => value
                .to_u128()
                .and_then(|v| i64::try_from(v).ok())
                .ok_or_else(|| Diagnostic::new(at, "integer too large in `#if`"))?,
            // Names left after macro expansion count as 0, as in C.
            Tok::Ident(_) => 0,
            Tok::Kw(Kw::True) => 1,
            Tok::Kw(_) => 0,
            Tok::Punct("!") => (self.unary()? == 0) as i64,
            Tok::Punct("~") => !self.unary()?,
            Tok::Punct("-") => self.unary()?.wrapping_neg(),
            Tok::Punct("+") => self.unary()?,
            Tok::Punct("(") => {
                let v = self.expr()?;
                if self.peek() != Some(&Tok::Punct(")")) {
                    return Err(Diagnostic::new(self.here(), "expected `)` in `#if` expression"));
                }
                self.pos += 1;
                v
            }
            other => {
                return Err(Diagnostic::new(
                    at,
                    format!("unexpected {} in `#if` expression", other.describe()),
                ))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Result<Vec<Tok>, Diagnostic> {
        let mut s = Sources::default();
        preprocess_str(&mut s, "t.p4", text).map(|v| v.into_iter().map(|t| t.kind).collect())
    }

    fn idents(text: &str) -> String {
        run(text)
            .unwrap()
            .iter()
            .map(|t| match t {
                Tok::Ident(s) => s.clone(),
                Tok::Int { value, .. } => value.to_u128().unwrap().to_string(),
                Tok::Punct(p) => p.to_string(),
                Tok::Kw(k) => k.as_str().to_string(),
                t => format!("{t:?}"),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn object_and_function_macros() {
        assert_eq!(
            idents("#define A 1\n#define F(x, y) (x + y * A)\nF(a, (b, c))"),
            "( a + ( b , c ) * 1 )"
        );
        assert_eq!(idents("#define F(x) x\nF"), "F");
        assert_eq!(idents("#define A A B\nA"), "A B");
        assert_eq!(idents("#define G() g\nG()"), "g");
        assert_eq!(idents("#define A 1\n#undef A\nA"), "A");
    }

    #[test]
    fn conditionals() {
        let t = "#define V 20200408\n#if V >= 20200408 && defined(V)\na\n#elif 1\nb\n#else\nc\n#endif\n\
                 #ifndef V\nd\n#else\ne\n#endif\n#if 0\n#if 1\nf\n#endif\n#elif (2 >> 1) == 1\ng\n#endif";
        assert_eq!(idents(t), "a e g");
        assert!(run("#if 1\na").is_err());
        assert!(run("#endif").is_err());
        assert!(run("#if 1 / 0\n#endif").is_err());
        assert!(run(&format!("#if {}1\n#endif", "!".repeat(100_000))).is_err());
        assert!(run(&format!("#if {}1\n#endif", "(".repeat(100_000))).is_err());
    }

    #[test]
    fn builtins_and_errors() {
        let toks = run("#include <core.p4>\n#include <v1model.p4>\n#include <core.p4>\n").unwrap();
        assert!(toks.contains(&Tok::Ident("standard_metadata_t".into())));
        let mut s = Sources::default();
        let e = preprocess_str(&mut s, "t.p4", "\n#include <tna.p4>\n").unwrap_err();
        assert_eq!(
            s.render(&e),
            "t.p4:2:10: error: unknown system include `<tna.p4>` (sluice provides <core.p4> and <v1model.p4>)\n#include <tna.p4>\n         ^^^^^^^^"
        );
        let e = preprocess_str(&mut s, "u.p4", "#foo bar\n").unwrap_err();
        assert_eq!(e.message, "unknown directive `#foo`");
        let e = preprocess_str(&mut s, "u.p4", "#error no way\n").unwrap_err();
        assert_eq!(e.message, "#error no way");
        assert!(run("#define F(x) #x\n").is_err());
        assert!(run("#define F(x) x\nF(1, 2)").is_err());
        assert!(run("#define A A A A A A A A A A\n#define B A A A A A A A A A A\n#define C B B B B B B B B B B\n\
                     #define D C C C C C C C C C C\n#define E D D D D D D D D D D\n#define G E E E E E E E E E E\n\
                     #define H G G G G G G G G G G\nH").is_err());
    }

    #[test]
    fn quoted_includes_resolve_next_to_the_includer() {
        let dir = std::env::temp_dir().join(format!("sluice-p4-pre-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("a.p4"), "#include \"sub/b.p4\"\nA\n").unwrap();
        std::fs::write(dir.join("sub/b.p4"), "#include \"c.p4\"\nB\n").unwrap();
        std::fs::write(dir.join("sub/c.p4"), "#define A a\nC\n").unwrap();
        let mut s = Sources::default();
        let toks = preprocess(&mut s, &dir.join("a.p4"));
        let names: Vec<Tok> = toks.unwrap().into_iter().map(|t| t.kind).collect();
        assert_eq!(names, ["C", "B", "a"].map(|n| Tok::Ident(n.into())));
        assert_eq!(s.files.len(), 3);
        let e = preprocess(&mut Sources::default(), &dir.join("missing.p4")).unwrap_err();
        assert!(e.message.starts_with("cannot read"));
        std::fs::write(dir.join("loop.p4"), "#include \"loop.p4\"\n").unwrap();
        let e = preprocess(&mut Sources::default(), &dir.join("loop.p4")).unwrap_err();
        assert!(e.message.contains("nested too deeply"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn macro_tokens_point_at_their_text() {
        let mut s = Sources::default();
        let toks = preprocess_str(&mut s, "t.p4", "#define A x\nA(y)").unwrap();
        assert_eq!(toks[0].span, Span::new(0, 10, 11));
        assert_eq!(toks[1].span, Span::new(0, 13, 14));
    }
}
