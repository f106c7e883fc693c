//! The P4-16 parser: preprocessed tokens to the syntax tree ([`ast`]).
//!
//! Hand-written recursive descent with precedence climbing for
//! expressions (P4's table, where bitwise operators bind tighter than
//! comparisons). P4 needs to know which names are types to tell
//! `(T) e` from `(x) e`, `f<T>(x)` from `a < b`, and declarations from
//! statements, so the parser keeps a scoped set of type names: every
//! `typedef`, `type`, `header`, `header_union`, `struct`, `enum`,
//! `extern`, `parser`, `control` and `package` name, plus the type
//! parameters of the generic declaration being read.
//!
//! Two `>` tokens that touch make a shift (`a >> b`); apart they close
//! two type-argument lists (`register<bit<8>>`).
//!
//! Recursion is bounded ([`MAX_DEPTH`]): deeper nesting is an error, not
//! a stack overflow.

use std::collections::HashSet;
use std::fmt;
use std::path::Path;

use crate::ast::*;
use crate::diag::{Diagnostic, Sources, Span};
use crate::lex::{Kw, Tok, Token};
use crate::pre;

/// How deeply statements, expressions and types may nest.
pub const MAX_DEPTH: usize = 256;

/// A parsed program with the files it came from.
#[derive(Debug)]
pub struct Loaded {
    pub sources: Sources,
    pub program: Program,
}

/// Why a program did not load, with the files needed to render it.
#[derive(Debug)]
pub struct LoadError {
    pub sources: Sources,
    pub diag: Diagnostic,
}

impl LoadError {
    /// `file:line:col: error: ...`, the source line and a caret.
    pub fn render(&self) -> String {
        self.sources.render(&self.diag)
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

impl std::error::Error for LoadError {}

/// Preprocesses and parses the program at `path`.
pub fn load_file(path: &Path) -> Result<Loaded, LoadError> {
    let mut sources = Sources::default();
    let r = pre::preprocess(&mut sources, path).and_then(|t| parse_tokens(&t));
    finish(sources, r)
}

/// Preprocesses and parses `text` (named `name` in messages).
pub fn load_str(name: &str, text: &str) -> Result<Loaded, LoadError> {
    let mut sources = Sources::default();
    let r = pre::preprocess_str(&mut sources, name, text).and_then(|t| parse_tokens(&t));
    finish(sources, r)
}

fn finish(sources: Sources, r: Result<Program, Diagnostic>) -> Result<Loaded, LoadError> {
    match r {
        Ok(program) => Ok(Loaded { sources, program }),
        Err(diag) => Err(LoadError { sources, diag }),
    }
}

/// Parses a whole program from preprocessed tokens.
pub fn parse_tokens(tokens: &[Token]) -> Result<Program, Diagnostic> {
    let mut p = Parser::new(tokens);
    let mut decls = Vec::new();
    while p.pos < p.toks.len() {
        if p.eat_p(";") {
            continue;
        }
        decls.push(p.decl()?);
    }
    Ok(Program { decls })
}

type R<T> = Result<T, Diagnostic>;

struct Parser<'t> {
    toks: &'t [Token],
    pos: usize,
    /// Where "end of input" is reported.
    eof: Span,
    /// Type names in scope, innermost last.
    types: Vec<HashSet<String>>,
    depth: usize,
    /// Token positions where a cast (`Guess::Cast`) or a generic call
    /// (`Guess::TypeArgs`) was tried and failed: not tried again, which
    /// keeps nested failed guesses from taking exponential time.
    failed: HashSet<(usize, Guess)>,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Guess {
    Cast,
    TypeArgs,
}

/// Where to go back to when a guess fails.
#[derive(Clone, Copy)]
struct Mark {
    pos: usize,
    depth: usize,
    scopes: usize,
}

fn binop_of(p: &str) -> Option<(BinOp, u8)> {
    Some(match p {
        "||" => (BinOp::Or, 1),
        "&&" => (BinOp::And, 2),
        "==" => (BinOp::Eq, 3),
        "!=" => (BinOp::Ne, 3),
        "<" => (BinOp::Lt, 4),
        ">" => (BinOp::Gt, 4),
        "<=" => (BinOp::Le, 4),
        ">=" => (BinOp::Ge, 4),
        "|" => (BinOp::BitOr, 5),
        "^" => (BinOp::BitXor, 6),
        "&" => (BinOp::BitAnd, 7),
        "<<" => (BinOp::Shl, 8),
        "++" => (BinOp::Concat, 9),
        "+" => (BinOp::Add, 9),
        "-" => (BinOp::Sub, 9),
        "|+|" => (BinOp::AddSat, 9),
        "|-|" => (BinOp::SubSat, 9),
        "*" => (BinOp::Mul, 10),
        "/" => (BinOp::Div, 10),
        "%" => (BinOp::Mod, 10),
        _ => return None,
    })
}

fn assign_op(p: &str) -> Option<Option<BinOp>> {
    Some(match p {
        "=" => None,
        "+=" => Some(BinOp::Add),
        "-=" => Some(BinOp::Sub),
        "*=" => Some(BinOp::Mul),
        "/=" => Some(BinOp::Div),
        "%=" => Some(BinOp::Mod),
        "&=" => Some(BinOp::BitAnd),
        "|=" => Some(BinOp::BitOr),
        "^=" => Some(BinOp::BitXor),
        "<<=" => Some(BinOp::Shl),
        "|+|=" => Some(BinOp::AddSat),
        "|-|=" => Some(BinOp::SubSat),
        _ => return None,
    })
}

/// Keywords that may still be used as names (the spec's `nonTypeName`).
fn soft_kw(k: Kw) -> bool {
    matches!(
        k,
        Kw::Apply
            | Kw::Key
            | Kw::Actions
            | Kw::State
            | Kw::Entries
            | Kw::Type
            | Kw::Priority
            | Kw::List
    )
}

impl<'t> Parser<'t> {
    fn new(toks: &'t [Token]) -> Self {
        let eof =
            toks.last().map_or(Span::default(), |t| Span::new(t.span.file, t.span.end, t.span.end));
        Parser { toks, pos: 0, eof, types: vec![HashSet::new()], depth: 0, failed: HashSet::new() }
    }

    // ---- token helpers ----

    fn peek(&self) -> Option<&'t Tok> {
        self.toks.get(self.pos).map(|t| &t.kind)
    }

    fn peek_at(&self, n: usize) -> Option<&'t Tok> {
        self.toks.get(self.pos + n).map(|t| &t.kind)
    }

    fn span(&self) -> Span {
        self.toks.get(self.pos).map_or(self.eof, |t| t.span)
    }

    fn prev(&self) -> Span {
        match self.pos.checked_sub(1).and_then(|i| self.toks.get(i)) {
            Some(t) => t.span,
            None => self.span(),
        }
    }

    fn since(&self, start: Span) -> Span {
        start.to(self.prev())
    }

    fn bump(&mut self) {
        if self.pos < self.toks.len() {
            self.pos += 1;
        }
    }

    fn mark(&self) -> Mark {
        Mark { pos: self.pos, depth: self.depth, scopes: self.types.len() }
    }

    fn reset(&mut self, m: Mark) {
        self.pos = m.pos;
        self.depth = m.depth;
        self.types.truncate(m.scopes.max(1));
    }

    fn found(&self) -> String {
        match self.peek() {
            Some(Tok::Directive { name, .. }) => format!("directive `#{name}`"),
            Some(t) => t.describe(),
            None => "end of input".to_string(),
        }
    }

    fn err_here(&self, msg: impl fmt::Display) -> Diagnostic {
        Diagnostic::new(self.span(), format!("{msg}, found {}", self.found()))
    }

    fn is_p(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }

    fn is_p_at(&self, n: usize, p: &str) -> bool {
        matches!(self.peek_at(n), Some(Tok::Punct(q)) if *q == p)
    }

    fn eat_p(&mut self, p: &str) -> bool {
        let yes = self.is_p(p);
        if yes {
            self.bump();
        }
        yes
    }

    fn expect_p(&mut self, p: &str, ctx: &str) -> R<Span> {
        if self.is_p(p) {
            let s = self.span();
            self.bump();
            Ok(s)
        } else {
            Err(self.err_here(format_args!("expected `{p}` {ctx}")))
        }
    }

    fn is_kw(&self, k: Kw) -> bool {
        self.peek() == Some(&Tok::Kw(k))
    }

    fn eat_kw(&mut self, k: Kw) -> bool {
        let yes = self.is_kw(k);
        if yes {
            self.bump();
        }
        yes
    }

    /// Whether the `n`-th token ahead is the second `>` of a `>>`.
    fn touches(&self, n: usize) -> bool {
        match (self.toks.get(self.pos + n - 1), self.toks.get(self.pos + n)) {
            (Some(a), Some(b)) => a.span.file == b.span.file && a.span.end == b.span.start,
            _ => false,
        }
    }

    fn is_name_tok(t: Option<&Tok>) -> bool {
        match t {
            Some(Tok::Ident(_)) => true,
            Some(Tok::Kw(k)) => soft_kw(*k),
            _ => false,
        }
    }

    /// An identifier (or a keyword allowed as a name).
    fn name(&mut self, what: &str) -> R<Ident> {
        let name = match self.peek() {
            Some(Tok::Ident(n)) => n.clone(),
            Some(Tok::Kw(k)) if soft_kw(*k) => k.as_str().to_string(),
            _ => return Err(self.err_here(format_args!("expected {what}"))),
        };
        let span = self.span();
        self.bump();
        Ok(Ident { name, span })
    }

    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Diagnostic::new(
                self.span(),
                format!("nesting too deep (more than {MAX_DEPTH} levels)"),
            ));
        }
        Ok(())
    }

    // ---- type names ----

    fn is_type_name(&self, n: &str) -> bool {
        self.types.iter().any(|s| s.contains(n))
    }

    fn declare_type(&mut self, n: &Ident) {
        if let Some(s) = self.types.first_mut() {
            s.insert(n.name.clone());
        }
    }

    fn push_type_params(&mut self, ps: &[Ident]) {
        self.types.push(ps.iter().map(|p| p.name.clone()).collect());
    }

    fn pop_scope(&mut self) {
        if self.types.len() > 1 {
            self.types.pop();
        }
    }

    /// Whether a type can start at token `n` ahead (keyword types and
    /// known type names only: used for guesses).
    fn type_start_at(&self, n: usize) -> bool {
        match self.peek_at(n) {
            Some(Tok::Kw(
                Kw::Bit
                | Kw::Int
                | Kw::Varbit
                | Kw::Bool
                | Kw::String
                | Kw::Tuple
                | Kw::Error
                | Kw::MatchKind
                | Kw::Void
                | Kw::DontCare,
            )) => true,
            Some(Tok::Ident(name)) => self.is_type_name(name),
            Some(Tok::Punct(".")) => {
                matches!(self.peek_at(n + 1), Some(Tok::Ident(name)) if self.is_type_name(name))
            }
            _ => false,
        }
    }

    // ---- annotations ----

    fn annotations(&mut self) -> R<Vec<Annotation>> {
        let mut out = Vec::new();
        while self.is_p("@") {
            let start = self.span();
            self.bump();
            let name = match self.peek() {
                Some(Tok::Ident(n)) => n.clone(),
                Some(Tok::Kw(k)) => k.as_str().to_string(),
                _ => return Err(self.err_here("expected an annotation name after `@`")),
            };
            let name = Ident { name, span: self.span() };
            self.bump();
            let mut args = Vec::new();
            let close = if self.is_p("(") {
                ")"
            } else if self.is_p("[") {
                "]"
            } else {
                ""
            };
            if !close.is_empty() {
                let open = if close == ")" { "(" } else { "[" };
                self.bump();
                let mut depth = 0usize;
                loop {
                    let Some(t) = self.peek() else {
                        return Err(Diagnostic::new(
                            start,
                            format!("unterminated annotation: missing `{close}`"),
                        ));
                    };
                    match t {
                        Tok::Punct(p) if *p == close && depth == 0 => {
                            self.bump();
                            break;
                        }
                        Tok::Punct(p) if *p == close => depth -= 1,
                        Tok::Punct(p) if *p == open => depth += 1,
                        _ => {}
                    }
                    args.push(token_text(t));
                    self.bump();
                }
            }
            out.push(Annotation { name, args, span: self.since(start) });
        }
        Ok(out)
    }

    // ---- top-level declarations ----

    fn decl(&mut self) -> R<Decl> {
        let start = self.span();
        let annotations = self.annotations()?;
        match self.peek() {
            Some(Tok::Kw(Kw::Const)) => Ok(Decl::Const(self.const_decl(annotations, start)?)),
            Some(Tok::Kw(Kw::Typedef | Kw::Type)) => self.typedef(annotations, start),
            Some(Tok::Kw(Kw::Header | Kw::HeaderUnion | Kw::Struct)) => {
                Ok(Decl::Aggregate(self.aggregate(annotations, start)?))
            }
            Some(Tok::Kw(Kw::Enum)) => Ok(Decl::Enum(self.enum_decl(annotations, start)?)),
            Some(Tok::Kw(Kw::Error)) if self.is_p_at(1, "{") => {
                self.bump();
                let members = self.ident_list("an error name")?;
                Ok(Decl::Error { members, span: self.since(start) })
            }
            Some(Tok::Kw(Kw::MatchKind)) => {
                self.bump();
                let members = self.ident_list("a match kind name")?;
                Ok(Decl::MatchKind { members, span: self.since(start) })
            }
            Some(Tok::Kw(Kw::Extern)) => self.extern_decl(annotations, start),
            Some(Tok::Kw(Kw::Parser)) => self.parser_decl(annotations, start),
            Some(Tok::Kw(Kw::Control)) => self.control_decl(annotations, start),
            Some(Tok::Kw(Kw::Package)) => {
                self.bump();
                let name = self.name("a package name")?;
                self.declare_type(&name);
                let type_params = self.type_params()?;
                self.push_type_params(&type_params);
                let params = self.params("package")?;
                self.pop_scope();
                self.expect_p(";", "after the package declaration")?;
                Ok(Decl::Package(TypeDeclProto {
                    annotations,
                    name,
                    type_params,
                    params,
                    span: self.since(start),
                }))
            }
            Some(Tok::Kw(Kw::Action)) => Ok(Decl::Action(self.action(annotations, start)?)),
            Some(Tok::Directive { .. }) => Err(Diagnostic::new(
                self.span(),
                "unexpected directive (the preprocessor did not run)",
            )),
            Some(_) => {
                if !self.type_start_at(0) && !Self::is_name_tok(self.peek()) {
                    return Err(self.err_here("expected a declaration"));
                }
                let ty = self.ty()?;
                if self.is_p("(") {
                    return Ok(Decl::Instance(self.instantiation(annotations, ty, start)?));
                }
                let name = self.name("a name for the declaration")?;
                if self.is_p("<") || self.is_p("(") {
                    let type_params = self.type_params()?;
                    self.push_type_params(&type_params);
                    let r = (|| {
                        let params = self.params("function")?;
                        let body = self.block()?;
                        Ok((params, body))
                    })();
                    self.pop_scope();
                    let (params, body) = r?;
                    return Ok(Decl::Function(FunctionDecl {
                        annotations,
                        ret: ty,
                        name,
                        type_params,
                        params,
                        body,
                        span: self.since(start),
                    }));
                }
                if self.is_p("=") || self.is_p(";") {
                    return Err(Diagnostic::new(
                        name.span,
                        "top-level variables are not allowed (use `const`)",
                    ));
                }
                Err(self.err_here(format_args!(
                    "expected `(` after `{}` (a function or an instantiation)",
                    name.name
                )))
            }
            None => Err(self.err_here("expected a declaration after the annotations")),
        }
    }

    fn const_decl(&mut self, annotations: Vec<Annotation>, start: Span) -> R<ConstDecl> {
        self.bump(); // const
        let ty = self.ty()?;
        let name = self.name("a constant name")?;
        self.expect_p("=", "in a constant declaration (constants need a value)")?;
        let value = self.expr()?;
        self.expect_p(";", "after the constant declaration")?;
        Ok(ConstDecl { annotations, ty, name, value, span: self.since(start) })
    }

    fn typedef(&mut self, annotations: Vec<Annotation>, start: Span) -> R<Decl> {
        let new_type = self.is_kw(Kw::Type);
        self.bump();
        if matches!(
            self.peek(),
            Some(Tok::Kw(Kw::Header | Kw::HeaderUnion | Kw::Struct | Kw::Enum))
        ) {
            return Err(Diagnostic::unsupported(
                self.span(),
                "a type declaration inside `typedef` (declare it separately)",
            ));
        }
        let ty = self.ty()?;
        let name = self.name("a type name")?;
        self.declare_type(&name);
        self.expect_p(";", "after the type definition")?;
        Ok(Decl::Typedef { annotations, ty, name, new_type, span: self.since(start) })
    }

    fn aggregate(&mut self, annotations: Vec<Annotation>, start: Span) -> R<AggregateDecl> {
        let kind = match self.peek() {
            Some(Tok::Kw(Kw::Header)) => AggregateKind::Header,
            Some(Tok::Kw(Kw::HeaderUnion)) => AggregateKind::HeaderUnion,
            _ => AggregateKind::Struct,
        };
        self.bump();
        let name = self.name("a type name")?;
        self.declare_type(&name);
        if self.is_p("<") {
            return Err(Diagnostic::unsupported(self.span(), "generic struct and header types"));
        }
        self.expect_p("{", "to open the field list")?;
        let mut fields = Vec::new();
        while !self.eat_p("}") {
            let fstart = self.span();
            let annotations = self.annotations()?;
            if self.peek().is_none() {
                return Err(self.err_here("expected `}` to close the field list"));
            }
            let ty = self.ty()?;
            let fname = self.name("a field name")?;
            self.expect_p(";", "after the field declaration")?;
            fields.push(FieldDecl { annotations, ty, name: fname, span: self.since(fstart) });
        }
        Ok(AggregateDecl { annotations, kind, name, fields, span: self.since(start) })
    }

    fn enum_decl(&mut self, annotations: Vec<Annotation>, start: Span) -> R<EnumDecl> {
        self.bump(); // enum
        let underlying = if Self::is_name_tok(self.peek()) && self.is_p_at(1, "{") {
            None
        } else {
            Some(self.ty()?)
        };
        let name = self.name("an enum name")?;
        self.declare_type(&name);
        self.expect_p("{", "to open the enum's members")?;
        let mut members = Vec::new();
        while !self.eat_p("}") {
            let m = self.name("an enum member name")?;
            let value = if self.eat_p("=") { Some(self.expr()?) } else { None };
            members.push((m, value));
            if !self.eat_p(",") {
                self.expect_p("}", "after the enum member")?;
                break;
            }
        }
        Ok(EnumDecl { annotations, underlying, name, members, span: self.since(start) })
    }

    /// `{ a, b, c }` (a trailing comma allowed).
    fn ident_list(&mut self, what: &str) -> R<Vec<Ident>> {
        self.expect_p("{", "to open the list")?;
        let mut out = Vec::new();
        while !self.eat_p("}") {
            out.push(self.name(what)?);
            if !self.eat_p(",") {
                self.expect_p("}", "after the list")?;
                break;
            }
        }
        Ok(out)
    }

    fn type_params(&mut self) -> R<Vec<Ident>> {
        let mut out = Vec::new();
        if self.eat_p("<") {
            loop {
                out.push(self.name("a type parameter name")?);
                if !self.eat_p(",") {
                    break;
                }
            }
            self.expect_p(">", "to close the type parameters")?;
        }
        Ok(out)
    }

    fn params(&mut self, what: &str) -> R<Vec<Param>> {
        self.expect_p("(", &format!("to open the {what}'s parameters"))?;
        let mut out = Vec::new();
        if self.eat_p(")") {
            return Ok(out);
        }
        loop {
            let start = self.span();
            let annotations = self.annotations()?;
            let dir = if self.eat_kw(Kw::In) {
                Direction::In
            } else if self.eat_kw(Kw::Out) {
                Direction::Out
            } else if self.eat_kw(Kw::Inout) {
                Direction::InOut
            } else {
                Direction::None
            };
            let ty = self.ty()?;
            let name = self.name("a parameter name")?;
            let default = if self.eat_p("=") { Some(self.expr()?) } else { None };
            out.push(Param { annotations, dir, ty, name, default, span: self.since(start) });
            if !self.eat_p(",") {
                break;
            }
        }
        self.expect_p(")", "after the parameters")?;
        Ok(out)
    }

    fn extern_decl(&mut self, annotations: Vec<Annotation>, start: Span) -> R<Decl> {
        self.bump(); // extern
                     // `extern Name<T> {` is an object; anything else a function.
        if Self::is_name_tok(self.peek()) && (self.is_p_at(1, "{") || self.is_p_at(1, "<")) {
            let m = self.mark();
            let name = self.name("an extern name")?;
            if let Ok(type_params) = self.type_params() {
                if self.is_p("{") {
                    return self.extern_object(annotations, start, name, type_params);
                }
            }
            self.reset(m);
        }
        let proto = self.function_proto(annotations, start, false)?;
        self.expect_p(";", "after the extern function declaration")?;
        Ok(Decl::ExternFunction(proto))
    }

    fn extern_object(
        &mut self,
        annotations: Vec<Annotation>,
        start: Span,
        name: Ident,
        type_params: Vec<Ident>,
    ) -> R<Decl> {
        self.declare_type(&name);
        self.push_type_params(&type_params);
        let r = (|| {
            self.expect_p("{", "to open the extern's methods")?;
            let mut methods = Vec::new();
            while !self.eat_p("}") {
                let mstart = self.span();
                let ann = self.annotations()?;
                let is_abstract = self.eat_kw(Kw::Abstract);
                let is_ctor = matches!(self.peek(), Some(Tok::Ident(n)) if *n == name.name)
                    && self.is_p_at(1, "(");
                if is_ctor {
                    let cname = self.name("a constructor name")?;
                    let params = self.params("constructor")?;
                    self.expect_p(";", "after the constructor declaration")?;
                    methods.push(FunctionProto {
                        annotations: ann,
                        ret: None,
                        name: cname,
                        type_params: Vec::new(),
                        params,
                        is_abstract,
                        span: self.since(mstart),
                    });
                } else {
                    if self.peek().is_none() {
                        return Err(self.err_here("expected `}` to close the extern"));
                    }
                    let proto = self.function_proto(ann, mstart, is_abstract)?;
                    self.expect_p(";", "after the method declaration")?;
                    methods.push(proto);
                }
            }
            Ok(methods)
        })();
        self.pop_scope();
        Ok(Decl::ExternObject(ExternObjectDecl {
            annotations,
            name,
            type_params,
            methods: r?,
            span: self.since(start),
        }))
    }

    /// `R name<T>(params)`.
    fn function_proto(
        &mut self,
        annotations: Vec<Annotation>,
        start: Span,
        is_abstract: bool,
    ) -> R<FunctionProto> {
        let ret = self.ty()?;
        let name = self.name("a function name")?;
        let type_params = self.type_params()?;
        self.push_type_params(&type_params);
        let params = self.params("function");
        self.pop_scope();
        Ok(FunctionProto {
            annotations,
            ret: Some(ret),
            name,
            type_params,
            params: params?,
            is_abstract,
            span: self.since(start),
        })
    }

    /// `parser Name<T>(...)` then `;` (a type) or a body.
    fn parser_decl(&mut self, annotations: Vec<Annotation>, start: Span) -> R<Decl> {
        self.bump(); // parser
        let name = self.name("a parser name")?;
        self.declare_type(&name);
        let type_params = self.type_params()?;
        self.push_type_params(&type_params);
        let r = self.parser_rest(annotations, start, name, type_params);
        self.pop_scope();
        r
    }

    fn parser_rest(
        &mut self,
        annotations: Vec<Annotation>,
        start: Span,
        name: Ident,
        type_params: Vec<Ident>,
    ) -> R<Decl> {
        let params = self.params("parser")?;
        if self.eat_p(";") {
            return Ok(Decl::ParserType(TypeDeclProto {
                annotations,
                name,
                type_params,
                params,
                span: self.since(start),
            }));
        }
        let ctor_params =
            if self.is_p("(") { self.params("parser constructor")? } else { Vec::new() };
        self.expect_p("{", "to open the parser body (or `;` for a parser type)")?;
        let mut locals = Vec::new();
        let mut states = Vec::new();
        while !self.eat_p("}") {
            let lstart = self.span();
            let ann = self.annotations()?;
            match self.peek() {
                Some(Tok::Kw(Kw::State)) => states.push(self.parser_state(ann, lstart)?),
                Some(Tok::Kw(Kw::Const)) => {
                    locals.push(Local::Const(self.const_decl(ann, lstart)?))
                }
                Some(Tok::Kw(Kw::ValueSet)) => {
                    self.bump();
                    self.expect_p("<", "after `value_set`")?;
                    self.ty()?;
                    self.expect_p(">", "after the value_set's type")?;
                    self.expect_p("(", "for the value_set's size")?;
                    self.expr()?;
                    self.expect_p(")", "after the value_set's size")?;
                    let vname = self.name("a value_set name")?;
                    self.expect_p(";", "after the value_set declaration")?;
                    locals.push(Local::ValueSet { name: vname, span: self.since(lstart) });
                }
                None => return Err(self.err_here("expected `}` to close the parser")),
                _ => locals.push(self.var_or_instance(ann, lstart)?),
            }
        }
        Ok(Decl::Parser(ParserDecl {
            annotations,
            name,
            type_params,
            params,
            ctor_params,
            locals,
            states,
            span: self.since(start),
        }))
    }

    /// `T name [= e];` or `T(args) name;` in a parser or control.
    fn var_or_instance(&mut self, annotations: Vec<Annotation>, start: Span) -> R<Local> {
        if !self.type_start_at(0) && !Self::is_name_tok(self.peek()) {
            return Err(self.err_here("expected a declaration"));
        }
        let ty = self.ty()?;
        if self.is_p("(") {
            return Ok(Local::Instance(self.instantiation(annotations, ty, start)?));
        }
        Ok(Local::Var(self.var_rest(annotations, ty, start)?))
    }

    fn var_rest(&mut self, annotations: Vec<Annotation>, ty: Type, start: Span) -> R<VarDecl> {
        let name = self.name("a variable name")?;
        let init = if self.eat_p("=") { Some(self.expr()?) } else { None };
        self.expect_p(";", "after the variable declaration")?;
        Ok(VarDecl { annotations, ty, name, init, span: self.since(start) })
    }

    fn instantiation(
        &mut self,
        annotations: Vec<Annotation>,
        ty: Type,
        start: Span,
    ) -> R<Instantiation> {
        let args = self.args()?;
        let name = self.name("an instance name")?;
        if self.is_p("=") {
            return Err(Diagnostic::unsupported(
                self.span(),
                "instance initializers (`= { ... }`)",
            ));
        }
        self.expect_p(";", "after the instantiation")?;
        Ok(Instantiation { annotations, ty, args, name, span: self.since(start) })
    }

    fn parser_state(&mut self, annotations: Vec<Annotation>, start: Span) -> R<ParserState> {
        self.bump(); // state
        let name = self.name("a state name")?;
        self.expect_p("{", "to open the state")?;
        let mut body = Vec::new();
        let mut transition = None;
        loop {
            if self.eat_p("}") {
                break;
            }
            if self.is_kw(Kw::Transition) {
                transition = Some(self.transition()?);
                self.expect_p("}", "after the transition (it ends the state)")?;
                break;
            }
            if self.peek().is_none() {
                return Err(self.err_here("expected `}` to close the state"));
            }
            body.push(self.stmt()?);
        }
        Ok(ParserState { annotations, name, body, transition, span: self.since(start) })
    }

    fn transition(&mut self) -> R<Transition> {
        self.bump(); // transition
        if !self.is_kw(Kw::Select) {
            let next = self.name("a state name or `select` after `transition`")?;
            self.expect_p(";", "after the transition")?;
            return Ok(Transition::Direct(next));
        }
        let start = self.span();
        self.bump();
        self.expect_p("(", "after `select`")?;
        let mut exprs = Vec::new();
        if !self.is_p(")") {
            loop {
                exprs.push(self.expr()?);
                if !self.eat_p(",") {
                    break;
                }
            }
        }
        self.expect_p(")", "after the select expressions")?;
        self.expect_p("{", "to open the select cases")?;
        let mut cases = Vec::new();
        while !self.eat_p("}") {
            let cstart = self.span();
            if self.peek().is_none() {
                return Err(self.err_here("expected `}` to close the select"));
            }
            let keys = self.keyset()?;
            self.expect_p(":", "after the select case's keys")?;
            let next = self.name("a state name")?;
            self.expect_p(";", "after the select case")?;
            cases.push(SelectCase { keys, next, span: self.since(cstart) });
        }
        Ok(Transition::Select { exprs, cases, span: self.since(start) })
    }

    /// A select case's or table entry's keys: `(k, k, ...)` or one key.
    fn keyset(&mut self) -> R<Vec<Keyset>> {
        if self.is_p("(") {
            let m = self.mark();
            self.bump();
            let mut keys = Vec::new();
            let ok = loop {
                match self.simple_keyset() {
                    Ok(k) => keys.push(k),
                    Err(_) => break false,
                }
                if self.eat_p(",") {
                    continue;
                }
                break self.eat_p(")") && self.is_p(":");
            };
            if ok {
                return Ok(keys);
            }
            self.reset(m);
        }
        Ok(vec![self.simple_keyset()?])
    }

    fn simple_keyset(&mut self) -> R<Keyset> {
        if self.is_kw(Kw::Default) {
            let s = self.span();
            self.bump();
            return Ok(Keyset::Default(s));
        }
        if self.is_kw(Kw::DontCare) {
            let s = self.span();
            self.bump();
            return Ok(Keyset::DontCare(s));
        }
        let e = self.expr()?;
        if self.eat_p("&&&") {
            return Ok(Keyset::Mask(e, self.expr()?));
        }
        if self.eat_p("..") {
            return Ok(Keyset::Range(e, self.expr()?));
        }
        Ok(Keyset::Expr(e))
    }

    /// `control Name<T>(...)` then `;` (a type) or a body.
    fn control_decl(&mut self, annotations: Vec<Annotation>, start: Span) -> R<Decl> {
        self.bump(); // control
        let name = self.name("a control name")?;
        self.declare_type(&name);
        let type_params = self.type_params()?;
        self.push_type_params(&type_params);
        let r = self.control_rest(annotations, start, name, type_params);
        self.pop_scope();
        r
    }

    fn control_rest(
        &mut self,
        annotations: Vec<Annotation>,
        start: Span,
        name: Ident,
        type_params: Vec<Ident>,
    ) -> R<Decl> {
        let params = self.params("control")?;
        if self.eat_p(";") {
            return Ok(Decl::ControlType(TypeDeclProto {
                annotations,
                name,
                type_params,
                params,
                span: self.since(start),
            }));
        }
        let ctor_params =
            if self.is_p("(") { self.params("control constructor")? } else { Vec::new() };
        self.expect_p("{", "to open the control body (or `;` for a control type)")?;
        let mut locals = Vec::new();
        loop {
            if self.is_kw(Kw::Apply) && self.is_p_at(1, "{") {
                break;
            }
            let lstart = self.span();
            let ann = self.annotations()?;
            match self.peek() {
                Some(Tok::Kw(Kw::Const)) => {
                    locals.push(Local::Const(self.const_decl(ann, lstart)?))
                }
                Some(Tok::Kw(Kw::Action)) => locals.push(Local::Action(self.action(ann, lstart)?)),
                Some(Tok::Kw(Kw::Table)) => locals.push(Local::Table(self.table(ann, lstart)?)),
                Some(Tok::Punct("}")) | None => {
                    return Err(self.err_here("expected `apply { ... }` in the control"))
                }
                _ => locals.push(self.var_or_instance(ann, lstart)?),
            }
        }
        self.bump(); // apply
        let apply = self.block()?;
        self.expect_p("}", "to close the control after its `apply` block")?;
        Ok(Decl::Control(ControlDecl {
            annotations,
            name,
            type_params,
            params,
            ctor_params,
            locals,
            apply,
            span: self.since(start),
        }))
    }

    fn action(&mut self, annotations: Vec<Annotation>, start: Span) -> R<ActionDecl> {
        self.bump(); // action
        let name = self.name("an action name")?;
        let params = self.params("action")?;
        let body = self.block()?;
        Ok(ActionDecl { annotations, name, params, body, span: self.since(start) })
    }

    fn table(&mut self, annotations: Vec<Annotation>, start: Span) -> R<TableDecl> {
        self.bump(); // table
        let name = self.name("a table name")?;
        self.expect_p("{", "to open the table")?;
        let mut props = Vec::new();
        while !self.eat_p("}") {
            let pstart = self.span();
            let ann = self.annotations()?;
            let is_const = self.eat_kw(Kw::Const);
            match self.peek() {
                Some(Tok::Kw(Kw::Key)) if self.is_p_at(1, "=") => {
                    self.bump();
                    self.bump();
                    self.expect_p("{", "to open the key")?;
                    let mut elems = Vec::new();
                    while !self.eat_p("}") {
                        let kstart = self.span();
                        if self.peek().is_none() {
                            return Err(self.err_here("expected `}` to close the key"));
                        }
                        let expr = self.expr()?;
                        self.expect_p(":", "after the key expression")?;
                        let match_kind = self.name("a match kind")?;
                        let annotations = self.annotations()?;
                        self.expect_p(";", "after the key element")?;
                        elems.push(KeyElem {
                            annotations,
                            expr,
                            match_kind,
                            span: self.since(kstart),
                        });
                    }
                    self.eat_p(";");
                    props.push(TableProp::Key { elems, span: self.since(pstart) });
                }
                Some(Tok::Kw(Kw::Actions)) if self.is_p_at(1, "=") => {
                    self.bump();
                    self.bump();
                    self.expect_p("{", "to open the action list")?;
                    let mut actions = Vec::new();
                    while !self.eat_p("}") {
                        let astart = self.span();
                        let ann = self.annotations()?;
                        actions.push(self.action_ref(ann, astart)?);
                        self.expect_p(";", "after the action in the list")?;
                    }
                    self.eat_p(";");
                    props.push(TableProp::Actions { actions, span: self.since(pstart) });
                }
                Some(Tok::Kw(Kw::Entries)) if self.is_p_at(1, "=") => {
                    self.bump();
                    self.bump();
                    self.expect_p("{", "to open the entries")?;
                    let mut entries = Vec::new();
                    while !self.eat_p("}") {
                        if self.peek().is_none() {
                            return Err(self.err_here("expected `}` to close the entries"));
                        }
                        entries.push(self.entry()?);
                    }
                    self.eat_p(";");
                    props.push(TableProp::Entries { entries, is_const, span: self.since(pstart) });
                }
                Some(Tok::Ident(n)) if n == "default_action" && self.is_p_at(1, "=") => {
                    self.bump();
                    self.bump();
                    let astart = self.span();
                    let action = self.action_ref(Vec::new(), astart)?;
                    self.expect_p(";", "after the default action")?;
                    props.push(TableProp::DefaultAction {
                        action,
                        is_const,
                        span: self.since(pstart),
                    });
                }
                _ => {
                    let name = self.name("a table property")?;
                    self.expect_p("=", "after the table property name")?;
                    let value = self.expr()?;
                    self.expect_p(";", "after the table property")?;
                    props.push(TableProp::Other {
                        annotations: ann,
                        name,
                        is_const,
                        value,
                        span: self.since(pstart),
                    });
                }
            }
        }
        Ok(TableDecl { annotations, name, props, span: self.since(start) })
    }

    /// `name` or `name(args)` (`.name` allowed).
    fn action_ref(&mut self, annotations: Vec<Annotation>, start: Span) -> R<ActionRef> {
        self.eat_p(".");
        let name = self.name("an action name")?;
        let args = if self.is_p("(") { self.args()? } else { Vec::new() };
        Ok(ActionRef { annotations, name, args, span: self.since(start) })
    }

    fn entry(&mut self) -> R<TableEntry> {
        let start = self.span();
        let mut annotations = self.annotations()?;
        self.eat_kw(Kw::Const);
        let priority = if self.is_kw(Kw::Priority) && self.is_p_at(1, "=") {
            self.bump();
            self.bump();
            let p = self.expr()?;
            self.expect_p(":", "after the entry's priority")?;
            Some(p)
        } else {
            None
        };
        let keys = self.keyset()?;
        self.expect_p(":", "after the entry's keys")?;
        let astart = self.span();
        let action = self.action_ref(Vec::new(), astart)?;
        annotations.extend(self.annotations()?);
        self.expect_p(";", "after the table entry")?;
        Ok(TableEntry { annotations, priority, keys, action, span: self.since(start) })
    }

    // ---- types ----

    fn ty(&mut self) -> R<Type> {
        self.enter()?;
        let r = self.ty_inner();
        self.depth -= 1;
        r
    }

    fn ty_inner(&mut self) -> R<Type> {
        let start = self.span();
        let kind = match self.peek() {
            Some(Tok::Kw(k @ (Kw::Bit | Kw::Int))) => {
                let signed = *k == Kw::Int;
                self.bump();
                if self.eat_p("<") {
                    let width = self.width()?;
                    self.expect_p(">", "to close the width")?;
                    TypeKind::Bits { signed, width: Box::new(width) }
                } else if signed {
                    TypeKind::Int
                } else {
                    TypeKind::Bits {
                        signed: false,
                        width: Box::new(Expr {
                            kind: ExprKind::Int { value: BigValue::from_u128(1), width: None },
                            span: start,
                        }),
                    }
                }
            }
            Some(Tok::Kw(Kw::Varbit)) => {
                self.bump();
                self.expect_p("<", "after `varbit`")?;
                let width = self.width()?;
                self.expect_p(">", "to close the width")?;
                TypeKind::Varbit(Box::new(width))
            }
            Some(Tok::Kw(Kw::Bool)) => {
                self.bump();
                TypeKind::Bool
            }
            Some(Tok::Kw(Kw::Void)) => {
                self.bump();
                TypeKind::Void
            }
            Some(Tok::Kw(Kw::Error)) => {
                self.bump();
                TypeKind::Error
            }
            Some(Tok::Kw(Kw::MatchKind)) => {
                self.bump();
                TypeKind::MatchKind
            }
            Some(Tok::Kw(Kw::String)) => {
                self.bump();
                TypeKind::String
            }
            Some(Tok::Kw(Kw::DontCare)) => {
                self.bump();
                TypeKind::DontCare
            }
            Some(Tok::Kw(Kw::Tuple)) => {
                self.bump();
                TypeKind::Tuple(self.type_args()?)
            }
            Some(Tok::Kw(Kw::List)) if self.is_p_at(1, "<") => {
                return Err(Diagnostic::unsupported(start, "`list<T>` types"));
            }
            Some(Tok::Punct(".")) | Some(Tok::Ident(_)) => {
                let dot_prefix = self.eat_p(".");
                let name = self.name("a type name")?;
                let args = if self.is_p("<") { self.type_args()? } else { Vec::new() };
                TypeKind::Named { name, args, dot_prefix }
            }
            _ => return Err(self.err_here("expected a type")),
        };
        let mut t = Type { kind, span: self.since(start) };
        while self.is_p("[") {
            self.bump();
            let size = self.expr()?;
            self.expect_p("]", "after the header stack size")?;
            t = Type {
                kind: TypeKind::Stack { elem: Box::new(t), size: Box::new(size) },
                span: self.since(start),
            };
        }
        Ok(t)
    }

    /// `<A, B>` after a generic type's name.
    fn type_args(&mut self) -> R<Vec<Type>> {
        self.expect_p("<", "to open the type arguments")?;
        let mut out = Vec::new();
        if !self.is_p(">") {
            loop {
                out.push(self.ty()?);
                if !self.eat_p(",") {
                    break;
                }
            }
        }
        self.expect_p(">", "to close the type arguments")?;
        Ok(out)
    }

    /// The `W` of `bit<W>`: a literal, a name or `(expression)`.
    fn width(&mut self) -> R<Expr> {
        match self.peek() {
            Some(Tok::Int { .. }) | Some(Tok::Punct("(")) | Some(Tok::Ident(_)) => self.primary(),
            _ => Err(self.err_here("expected a width (an integer or `(expression)`)")),
        }
    }

    // ---- statements ----

    fn block(&mut self) -> R<Block> {
        let start = self.expect_p("{", "to open a block")?;
        let mut stmts = Vec::new();
        while !self.eat_p("}") {
            if self.peek().is_none() {
                return Err(self.err_here("expected `}` to close the block"));
            }
            stmts.push(self.stmt()?);
        }
        Ok(Block { stmts, span: self.since(start) })
    }

    fn stmt(&mut self) -> R<Stmt> {
        self.enter()?;
        let r = self.stmt_inner();
        self.depth -= 1;
        r
    }

    /// Whether a variable declaration starts here.
    fn starts_decl(&self) -> bool {
        match self.peek() {
            Some(Tok::Kw(Kw::Bit | Kw::Int | Kw::Varbit | Kw::Bool | Kw::String | Kw::Tuple)) => {
                true
            }
            Some(Tok::Kw(Kw::Error | Kw::MatchKind)) => !self.is_p_at(1, "."),
            Some(Tok::Ident(n)) => {
                Self::is_name_tok(self.peek_at(1))
                    || (self.is_type_name(n) && (self.is_p_at(1, "<") || self.is_p_at(1, "[")))
            }
            Some(Tok::Punct(".")) => {
                matches!(self.peek_at(1), Some(Tok::Ident(n)) if self.is_type_name(n))
                    && Self::is_name_tok(self.peek_at(2))
            }
            _ => false,
        }
    }

    fn stmt_inner(&mut self) -> R<Stmt> {
        let start = self.span();
        let Some(tok) = self.peek() else {
            return Err(self.err_here("expected a statement"));
        };
        match tok {
            Tok::Punct("@") => {
                let ann = self.annotations()?;
                if self.is_p("{") {
                    return Ok(Stmt::Block(self.block()?));
                }
                if self.is_kw(Kw::Const) {
                    return Ok(Stmt::Const(self.const_decl(ann, start)?));
                }
                if self.starts_decl() {
                    let ty = self.ty()?;
                    return Ok(Stmt::Var(self.var_rest(ann, ty, start)?));
                }
                Err(self.err_here("expected a declaration or a block after the annotations"))
            }
            Tok::Punct("{") => Ok(Stmt::Block(self.block()?)),
            Tok::Punct(";") => {
                self.bump();
                Ok(Stmt::Empty(start))
            }
            Tok::Kw(Kw::If) => {
                self.bump();
                self.expect_p("(", "after `if`")?;
                let cond = self.expr()?;
                self.expect_p(")", "after the `if` condition")?;
                let then = Box::new(self.stmt()?);
                let otherwise =
                    if self.eat_kw(Kw::Else) { Some(Box::new(self.stmt()?)) } else { None };
                Ok(Stmt::If { cond, then, otherwise, span: self.since(start) })
            }
            Tok::Kw(Kw::Switch) => self.switch(start),
            Tok::Kw(Kw::Exit) => {
                self.bump();
                self.expect_p(";", "after `exit`")?;
                Ok(Stmt::Exit(self.since(start)))
            }
            Tok::Kw(Kw::Return) => {
                self.bump();
                let value = if self.is_p(";") { None } else { Some(self.expr()?) };
                self.expect_p(";", "after the return statement")?;
                Ok(Stmt::Return(value, self.since(start)))
            }
            Tok::Kw(Kw::Const) => Ok(Stmt::Const(self.const_decl(Vec::new(), start)?)),
            Tok::Kw(k @ (Kw::For | Kw::Break | Kw::Continue)) => {
                Err(Diagnostic::unsupported(start, format_args!("`{}` statements", k.as_str())))
            }
            Tok::Kw(Kw::Transition) => Err(Diagnostic::new(
                start,
                "`transition` must be the last statement of a parser state",
            )),
            _ if self.starts_decl() => {
                let ty = self.ty()?;
                Ok(Stmt::Var(self.var_rest(Vec::new(), ty, start)?))
            }
            _ => self.assign_or_call(start),
        }
    }

    fn assign_or_call(&mut self, start: Span) -> R<Stmt> {
        let lhs = self.unary()?;
        let op = match self.peek() {
            Some(Tok::Punct(">")) if self.is_p_at(1, ">=") && self.touches(1) => {
                self.bump();
                Some(Some(BinOp::Shr))
            }
            Some(Tok::Punct(p)) => assign_op(p),
            _ => None,
        };
        if let Some(op) = op {
            self.bump();
            let rhs = self.expr()?;
            self.expect_p(";", "after the assignment")?;
            return Ok(Stmt::Assign { lhs, op, rhs, span: self.since(start) });
        }
        if matches!(lhs.kind, ExprKind::Call { .. }) {
            self.expect_p(";", "after the call")?;
            return Ok(Stmt::Call(lhs));
        }
        Err(self.err_here("expected `=` or a call in this statement"))
    }

    fn switch(&mut self, start: Span) -> R<Stmt> {
        self.bump(); // switch
        self.expect_p("(", "after `switch`")?;
        let expr = self.expr()?;
        self.expect_p(")", "after the switch expression")?;
        self.expect_p("{", "to open the switch cases")?;
        let mut cases = Vec::new();
        while !self.eat_p("}") {
            let cstart = self.span();
            let label = if self.is_kw(Kw::Default) {
                self.bump();
                SwitchLabel::Default(cstart)
            } else if self.peek().is_none() {
                return Err(self.err_here("expected `}` to close the switch"));
            } else {
                SwitchLabel::Expr(self.expr()?)
            };
            self.expect_p(":", "after the switch label")?;
            let body = if self.is_p("{") { Some(self.block()?) } else { None };
            cases.push(SwitchCase { label, body, span: self.since(cstart) });
        }
        Ok(Stmt::Switch { expr, cases, span: self.since(start) })
    }

    // ---- expressions ----

    fn expr(&mut self) -> R<Expr> {
        self.enter()?;
        let r = self.mux();
        self.depth -= 1;
        r
    }

    fn mux(&mut self) -> R<Expr> {
        let cond = self.binary(1)?;
        if !self.eat_p("?") {
            return Ok(cond);
        }
        let a = self.expr()?;
        self.expect_p(":", "in the conditional expression `c ? a : b`")?;
        let b = self.expr()?;
        let span = cond.span.to(b.span);
        Ok(Expr { kind: ExprKind::Mux(Box::new(cond), Box::new(a), Box::new(b)), span })
    }

    /// The binary operator here, its precedence and its token count.
    fn peek_binop(&self) -> Option<(BinOp, u8, usize)> {
        match self.peek()? {
            Tok::Punct(">") if self.is_p_at(1, ">") && self.touches(1) => Some((BinOp::Shr, 8, 2)),
            // `>>=` ends the expression (an assignment follows).
            Tok::Punct(">") if self.is_p_at(1, ">=") && self.touches(1) => None,
            Tok::Punct(p) => binop_of(p).map(|(op, prec)| (op, prec, 1)),
            _ => None,
        }
    }

    fn binary(&mut self, min: u8) -> R<Expr> {
        let mut lhs = self.unary()?;
        while let Some((op, prec, n)) = self.peek_binop() {
            if prec < min {
                break;
            }
            self.pos += n;
            let rhs = self.binary(prec + 1)?;
            let span = lhs.span.to(rhs.span);
            lhs = Expr { kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)), span };
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> R<Expr> {
        self.enter()?;
        let r = self.unary_inner();
        self.depth -= 1;
        r
    }

    fn unary_inner(&mut self) -> R<Expr> {
        let start = self.span();
        let op = match self.peek() {
            Some(Tok::Punct("!")) => Some(UnOp::Not),
            Some(Tok::Punct("~")) => Some(UnOp::BitNot),
            Some(Tok::Punct("-")) => Some(UnOp::Neg),
            Some(Tok::Punct("+")) => Some(UnOp::Plus),
            _ => None,
        };
        if let Some(op) = op {
            self.bump();
            let e = self.unary()?;
            let span = start.to(e.span);
            return Ok(Expr { kind: ExprKind::Unary(op, Box::new(e)), span });
        }
        if self.is_p("(")
            && self.type_start_at(1)
            && !self.failed.contains(&(self.pos, Guess::Cast))
        {
            let m = self.mark();
            self.bump();
            if let Ok(ty) = self.ty() {
                if self.eat_p(")") && self.can_start_expr() {
                    let e = self.unary()?;
                    let span = start.to(e.span);
                    return Ok(Expr { kind: ExprKind::Cast(Box::new(ty), Box::new(e)), span });
                }
            }
            self.reset(m);
            self.failed.insert((self.pos, Guess::Cast));
        }
        let e = self.primary()?;
        self.postfix(e)
    }

    fn can_start_expr(&self) -> bool {
        match self.peek() {
            Some(Tok::Int { .. } | Tok::Str(_) | Tok::Ident(_)) => true,
            Some(Tok::Kw(k)) => {
                soft_kw(*k)
                    || matches!(
                        k,
                        Kw::True
                            | Kw::False
                            | Kw::Error
                            | Kw::Bit
                            | Kw::Int
                            | Kw::Varbit
                            | Kw::Bool
                            | Kw::Tuple
                    )
            }
            Some(Tok::Punct(p)) => matches!(*p, "(" | "{" | "!" | "~" | "-" | "+" | "."),
            _ => false,
        }
    }

    fn primary(&mut self) -> R<Expr> {
        let start = self.span();
        let Some(tok) = self.peek() else {
            return Err(self.err_here("expected an expression"));
        };
        let kind = match tok {
            Tok::Int { value, width } => {
                self.bump();
                ExprKind::Int { value: value.clone(), width: *width }
            }
            Tok::Str(s) => {
                self.bump();
                ExprKind::Str(s.clone())
            }
            Tok::Kw(Kw::True) => {
                self.bump();
                ExprKind::Bool(true)
            }
            Tok::Kw(Kw::False) => {
                self.bump();
                ExprKind::Bool(false)
            }
            Tok::Kw(Kw::DontCare) => {
                self.bump();
                ExprKind::DontCare
            }
            Tok::Kw(Kw::Error) => {
                self.bump();
                ExprKind::Name {
                    id: Ident { name: "error".to_string(), span: start },
                    dot_prefix: false,
                }
            }
            Tok::Kw(
                Kw::Bit | Kw::Int | Kw::Varbit | Kw::Bool | Kw::String | Kw::Tuple | Kw::MatchKind,
            ) => ExprKind::TypeRef(Box::new(self.ty()?)),
            Tok::Kw(Kw::This) => return Err(Diagnostic::unsupported(start, "`this`")),
            Tok::Punct(".") => {
                self.bump();
                let id = self.name("a name after `.`")?;
                ExprKind::Name { id, dot_prefix: true }
            }
            Tok::Punct("(") => {
                self.bump();
                let e = self.expr()?;
                self.expect_p(")", "to close the parenthesis")?;
                return Ok(Expr { kind: e.kind, span: self.since(start) });
            }
            Tok::Punct("{") => self.brace_expr()?,
            Tok::Punct("...") => {
                return Err(Diagnostic::unsupported(start, "`...` in expressions"))
            }
            t if Self::is_name_tok(Some(t)) => {
                ExprKind::Name { id: self.name("a name")?, dot_prefix: false }
            }
            _ => return Err(self.err_here("expected an expression")),
        };
        Ok(Expr { kind, span: self.since(start) })
    }

    /// `{ a, b }` or `{ f = a, g = b }`.
    fn brace_expr(&mut self) -> R<ExprKind> {
        self.bump(); // {
        if self.is_p("#") {
            return Err(Diagnostic::unsupported(self.span(), "`{#}`"));
        }
        if Self::is_name_tok(self.peek()) && self.is_p_at(1, "=") {
            let mut fields = Vec::new();
            while !self.eat_p("}") {
                if self.is_p("...") {
                    return Err(Diagnostic::unsupported(self.span(), "`...` in initializers"));
                }
                let n = self.name("a field name")?;
                self.expect_p("=", "after the field name")?;
                fields.push((n, self.expr()?));
                if !self.eat_p(",") {
                    self.expect_p("}", "to close the initializer")?;
                    break;
                }
            }
            return Ok(ExprKind::StructInit(fields));
        }
        let mut items = Vec::new();
        while !self.eat_p("}") {
            items.push(self.expr()?);
            if !self.eat_p(",") {
                self.expect_p("}", "to close the list")?;
                break;
            }
        }
        Ok(ExprKind::List(items))
    }

    fn postfix(&mut self, mut e: Expr) -> R<Expr> {
        loop {
            let start = e.span;
            if self.is_p(".") {
                self.bump();
                let m = self.name("a member name after `.`")?;
                e = Expr { span: start.to(m.span), kind: ExprKind::Member(Box::new(e), m) };
            } else if self.is_p("[") {
                self.bump();
                let a = self.expr()?;
                if self.eat_p(":") {
                    let b = self.expr()?;
                    self.expect_p("]", "to close the slice")?;
                    e = Expr {
                        kind: ExprKind::Slice(Box::new(e), Box::new(a), Box::new(b)),
                        span: self.since(start),
                    };
                } else {
                    if self.is_p("+") && self.is_p_at(1, ":") {
                        return Err(Diagnostic::unsupported(self.span(), "`[e +: w]` slices"));
                    }
                    self.expect_p("]", "to close the index")?;
                    e = Expr {
                        kind: ExprKind::Index(Box::new(e), Box::new(a)),
                        span: self.since(start),
                    };
                }
            } else if self.is_p("(") {
                let args = self.args()?;
                e = Expr {
                    kind: ExprKind::Call { func: Box::new(e), type_args: Vec::new(), args },
                    span: self.since(start),
                };
            } else if self.is_p("<")
                && matches!(e.kind, ExprKind::Name { .. } | ExprKind::Member(..))
                && self.type_start_at(1)
                && !self.failed.contains(&(self.pos, Guess::TypeArgs))
            {
                // `f<T>(x)`: a guess, undone if no `(` follows the `>`.
                let m = self.mark();
                match self.type_args() {
                    Ok(type_args) if self.is_p("(") => {
                        let args = self.args()?;
                        e = Expr {
                            kind: ExprKind::Call { func: Box::new(e), type_args, args },
                            span: self.since(start),
                        };
                    }
                    _ => {
                        self.reset(m);
                        self.failed.insert((self.pos, Guess::TypeArgs));
                        return Ok(e);
                    }
                }
            } else {
                return Ok(e);
            }
        }
    }

    /// `(a, name = b, _)`.
    fn args(&mut self) -> R<Vec<Arg>> {
        self.expect_p("(", "to open the arguments")?;
        let mut out = Vec::new();
        if self.eat_p(")") {
            return Ok(out);
        }
        loop {
            let start = self.span();
            let name = if Self::is_name_tok(self.peek()) && self.is_p_at(1, "=") {
                let n = self.name("an argument name")?;
                self.bump();
                Some(n)
            } else {
                None
            };
            let value = self.expr()?;
            out.push(Arg { name, value, span: self.since(start) });
            if !self.eat_p(",") {
                break;
            }
        }
        self.expect_p(")", "after the arguments")?;
        Ok(out)
    }
}

/// A token's text in an annotation body.
fn token_text(t: &Tok) -> String {
    match t {
        Tok::Ident(s) | Tok::Str(s) => s.clone(),
        Tok::Kw(k) => k.as_str().to_string(),
        Tok::Int { value, width } => {
            let v = match value.to_u128() {
                Some(v) => v.to_string(),
                None => {
                    let mut s = String::from("0x");
                    for (i, l) in value.0.iter().rev().enumerate() {
                        if i == 0 {
                            s.push_str(&format!("{l:x}"));
                        } else {
                            s.push_str(&format!("{l:016x}"));
                        }
                    }
                    s
                }
            };
            match width {
                Some((signed, w)) => format!("{w}{}{v}", if *signed { 's' } else { 'w' }),
                None => v,
            }
        }
        Tok::Punct(p) => p.to_string(),
        Tok::Directive { name, .. } => format!("#{name}"),
        Tok::HeaderName(n) => format!("<{n}>"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Program {
        match load_str("t.p4", text) {
            Ok(l) => l.program,
            Err(e) => panic!("{}", e.render()),
        }
    }

    fn err(text: &str) -> String {
        load_str("t.p4", text).unwrap_err().render()
    }

    /// Expressions back to text, fully parenthesised.
    fn show(e: &Expr) -> String {
        match &e.kind {
            ExprKind::Int { value, width } => {
                let v = value.to_u128().unwrap();
                match width {
                    Some((s, w)) => format!("{w}{}{v}", if *s { 's' } else { 'w' }),
                    None => v.to_string(),
                }
            }
            ExprKind::Bool(b) => b.to_string(),
            ExprKind::Str(s) => format!("{s:?}"),
            ExprKind::Name { id, dot_prefix } => {
                format!("{}{}", if *dot_prefix { "." } else { "" }, id.name)
            }
            ExprKind::Member(e, m) => format!("{}.{}", show(e), m.name),
            ExprKind::Index(e, i) => format!("{}[{}]", show(e), show(i)),
            ExprKind::Slice(e, h, l) => format!("{}[{}:{}]", show(e), show(h), show(l)),
            ExprKind::Call { func, type_args, args } => {
                let ta: Vec<_> = type_args.iter().map(show_ty).collect();
                let a: Vec<_> = args
                    .iter()
                    .map(|a| match &a.name {
                        Some(n) => format!("{}={}", n.name, show(&a.value)),
                        None => show(&a.value),
                    })
                    .collect();
                let ta = if ta.is_empty() { String::new() } else { format!("<{}>", ta.join(",")) };
                format!("{}{ta}({})", show(func), a.join(","))
            }
            ExprKind::Unary(op, e) => format!("({op:?} {})", show(e)),
            ExprKind::Binary(op, a, b) => format!("({} {op:?} {})", show(a), show(b)),
            ExprKind::Mux(c, a, b) => format!("({} ? {} : {})", show(c), show(a), show(b)),
            ExprKind::Cast(t, e) => format!("(cast {} {})", show_ty(t), show(e)),
            ExprKind::List(l) => {
                format!("{{{}}}", l.iter().map(show).collect::<Vec<_>>().join(","))
            }
            ExprKind::StructInit(l) => format!(
                "{{{}}}",
                l.iter()
                    .map(|(n, e)| format!("{}={}", n.name, show(e)))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            ExprKind::DontCare => "_".into(),
            ExprKind::TypeRef(t) => format!("type {}", show_ty(t)),
        }
    }

    fn show_ty(t: &Type) -> String {
        match &t.kind {
            TypeKind::Bits { signed, width } => {
                format!("{}<{}>", if *signed { "int" } else { "bit" }, show(width))
            }
            TypeKind::Named { name, args, .. } if args.is_empty() => name.name.clone(),
            TypeKind::Named { name, args, .. } => {
                format!("{}<{}>", name.name, args.iter().map(show_ty).collect::<Vec<_>>().join(","))
            }
            TypeKind::Stack { elem, size } => format!("{}[{}]", show_ty(elem), show(size)),
            TypeKind::Tuple(args) => {
                format!("tuple<{}>", args.iter().map(show_ty).collect::<Vec<_>>().join(","))
            }
            other => format!("{other:?}"),
        }
    }

    /// The value of `const T c = <expr>;` after `prelude`.
    fn const_expr(prelude: &str, e: &str) -> String {
        let p = load(&format!("{prelude}\nconst bit<8> c = {e};"));
        match p.decls.last() {
            Some(Decl::Const(c)) => show(&c.value),
            d => panic!("{d:?}"),
        }
    }

    #[test]
    fn precedence_and_associativity() {
        let e = |s| const_expr("", s);
        assert_eq!(e("a + b * c == d & e"), "((a Add (b Mul c)) Eq (d BitAnd e))");
        assert_eq!(e("a | b ^ c & d"), "(a BitOr (b BitXor (c BitAnd d)))");
        assert_eq!(e("a < b | c"), "(a Lt (b BitOr c))");
        assert_eq!(e("a || b && c || d"), "((a Or (b And c)) Or d)");
        assert_eq!(e("a - b - c"), "((a Sub b) Sub c)");
        assert_eq!(e("x ++ y + z |+| w"), "(((x Concat y) Add z) AddSat w)");
        assert_eq!(e("a << 2 + 1"), "(a Shl (2 Add 1))");
        assert_eq!(e("a >> 1 >> 2"), "((a Shr 1) Shr 2)");
        assert_eq!(e("a > b"), "(a Gt b)");
        assert_eq!(e("-a[1] * ~b.c"), "((Neg a[1]) Mul (BitNot b.c))");
        assert_eq!(e("!a == b"), "((Not a) Eq b)");
        assert_eq!(e("a ? b : c ? d : e"), "(a ? b : (c ? d : e))");
        assert_eq!(e("a == b ? 8w1 : 4s3"), "((a Eq b) ? 8w1 : 4s3)");
        assert_eq!(e("h.f[7:4] |-| 1"), "(h.f[7:4] SubSat 1)");
        assert_eq!(e("{a, {b = 1, c = 2}}"), "{a,{b=1,c=2}}");
        assert_eq!(e("error.NoMatch"), "error.NoMatch");
        assert_eq!(e("bit<8>.minSizeInBits()"), "type bit<8>.minSizeInBits()");
        assert_eq!(e(".a + f(x = 1, y = _)"), "(.a Add f(x=1,y=_))");
    }

    #[test]
    fn cast_versus_parentheses() {
        let pre = "typedef bit<8> T; header h_t { bit<8> f; } enum E { A }";
        assert_eq!(const_expr(pre, "(T) x"), "(cast T x)");
        assert_eq!(const_expr(pre, "(bit<4>) -x + 1"), "((cast bit<4> (Neg x)) Add 1)");
        assert_eq!(const_expr(pre, "(x) + 1"), "(x Add 1)");
        assert_eq!(const_expr(pre, "(x) - 1"), "(x Sub 1)");
        assert_eq!(const_expr(pre, "(T) (x)"), "(cast T x)");
        assert_eq!(const_expr(pre, "(E.A == E.A)"), "(E.A Eq E.A)");
        assert_eq!(const_expr(pre, "(T)"), "T");
    }

    #[test]
    fn shifts_and_nested_type_arguments() {
        let p = load(
            "extern r<T> { r(bit<32> n); void read(out T v, in bit<32> i); }
             extern void f<T>(in T x);
             control c(inout bit<8> x) {
                 r<bit<8>>(4) regs;
                 r<r<bit<8>>>(4) odd;
                 apply {
                     x >>= 1;
                     x = x >> 2;
                     f<bit<8>>(x);
                     f<tuple<bit<8>, bit<4>>>({x, 4w1});
                     if (x < 3 || x > 4) { x = 0; }
                 }
             }",
        );
        let Some(Decl::Control(c)) = p.decls.last() else { panic!() };
        match &c.locals[0] {
            Local::Instance(i) => assert_eq!(show_ty(&i.ty), "r<bit<8>>"),
            l => panic!("{l:?}"),
        }
        match &c.locals[1] {
            Local::Instance(i) => assert_eq!(show_ty(&i.ty), "r<r<bit<8>>>"),
            l => panic!("{l:?}"),
        }
        let s = &c.apply.stmts;
        assert!(matches!(&s[0], Stmt::Assign { op: Some(BinOp::Shr), .. }));
        match &s[1] {
            Stmt::Assign { rhs, op: None, .. } => assert_eq!(show(rhs), "(x Shr 2)"),
            s => panic!("{s:?}"),
        }
        match &s[2] {
            Stmt::Call(e) => assert_eq!(show(e), "f<bit<8>>(x)"),
            s => panic!("{s:?}"),
        }
        match &s[3] {
            Stmt::Call(e) => assert_eq!(show(e), "f<tuple<bit<8>,bit<4>>>({x,4w1})"),
            s => panic!("{s:?}"),
        }
        match &s[4] {
            Stmt::If { cond, .. } => assert_eq!(show(cond), "((x Lt 3) Or (x Gt 4))"),
            s => panic!("{s:?}"),
        }
    }

    #[test]
    fn declarations_versus_statements() {
        let p = load(
            "header h_t { bit<8> f; }
             struct s_t { h_t[2] hs; }
             action a(inout s_t s, bit<8> v) {
                 h_t h;
                 h_t[2] st;
                 s.hs[1].f = v;
                 bit<8> x = 1;
                 error e = error.NoError;
                 s.hs.push_front(1);
                 { const bit<8> k = 2; }
                 ;
                 return;
             }",
        );
        let Some(Decl::Action(a)) = p.decls.last() else { panic!() };
        let kinds: Vec<&str> = a
            .body
            .stmts
            .iter()
            .map(|s| match s {
                Stmt::Var(_) => "var",
                Stmt::Assign { .. } => "assign",
                Stmt::Call(_) => "call",
                Stmt::Block(_) => "block",
                Stmt::Empty(_) => "empty",
                Stmt::Return(..) => "return",
                _ => "other",
            })
            .collect();
        assert_eq!(
            kinds,
            ["var", "var", "assign", "var", "var", "call", "block", "empty", "return"]
        );
    }

    #[test]
    fn parsers_tables_and_switch() {
        let p = load(
            "#include <core.p4>
             header h_t { bit<8> a; bit<16> b; }
             parser p(packet_in pk, out h_t h) {
                 value_set<bit<8>>(4) vs;
                 state start {
                     pk.extract(h);
                     transition select(h.a, h.b) {
                         (1, 2): accept;
                         (0x10 &&& 0xF0, 1 .. 5): next;
                         (_, default): reject;
                         default: accept;
                     }
                 }
                 state next { transition accept; }
                 state last { }
             }
             control c(inout h_t h) {
                 action set(bit<8> v) { h.a = v; }
                 table t {
                     key = { h.a: exact @name(\"A\"); h.b: ternary; }
                     actions = { set; @defaultonly NoAction; }
                     const entries = {
                         priority = 10: (1, 0x0F &&& 0xFF): set(2);
                         (2, _): NoAction();
                     }
                     const default_action = set(1);
                     size = 16;
                 }
                 apply {
                     switch (t.apply().action_run) {
                         set:
                         NoAction: { h.a = 1; }
                         default: {}
                     }
                 }
             }",
        );
        let Some(Decl::Parser(pd)) = p.decls.iter().find(|d| matches!(d, Decl::Parser(_))) else {
            panic!()
        };
        assert!(matches!(pd.locals[0], Local::ValueSet { .. }));
        assert_eq!(pd.states.len(), 3);
        assert!(pd.states[2].transition.is_none());
        let Some(Transition::Select { exprs, cases, .. }) = &pd.states[0].transition else {
            panic!()
        };
        assert_eq!(exprs.len(), 2);
        assert_eq!(cases.len(), 4);
        assert!(matches!(cases[1].keys[..], [Keyset::Mask(..), Keyset::Range(..)]));
        assert!(matches!(cases[2].keys[..], [Keyset::DontCare(_), Keyset::Default(_)]));
        assert!(matches!(cases[3].keys[..], [Keyset::Default(_)]));
        let Some(Decl::Control(c)) = p.decls.last() else { panic!() };
        let Local::Table(t) = &c.locals[1] else { panic!() };
        assert_eq!(t.props.len(), 5);
        match &t.props[0] {
            TableProp::Key { elems, .. } => {
                assert_eq!(elems[0].match_kind.name, "exact");
                assert_eq!(elems[0].annotations[0].args, ["A"]);
            }
            p => panic!("{p:?}"),
        }
        match &t.props[2] {
            TableProp::Entries { entries, is_const, .. } => {
                assert!(is_const);
                assert!(entries[0].priority.is_some());
                assert!(matches!(entries[0].keys[..], [Keyset::Expr(_), Keyset::Mask(..)]));
                assert_eq!(entries[0].action.args.len(), 1);
                assert!(matches!(entries[1].keys[..], [Keyset::Expr(_), Keyset::DontCare(_)]));
            }
            p => panic!("{p:?}"),
        }
        assert!(matches!(&t.props[3], TableProp::DefaultAction { is_const: true, .. }));
        assert!(matches!(&t.props[4], TableProp::Other { name, .. } if name.name == "size"));
        let Stmt::Switch { cases, .. } = &c.apply.stmts[0] else { panic!() };
        assert_eq!(cases.len(), 3);
        assert!(cases[0].body.is_none());
        assert!(cases[1].body.is_some());
        assert!(matches!(cases[2].label, SwitchLabel::Default(_)));
    }

    #[test]
    fn builtins_declare_the_architecture() {
        let p = load("#include <core.p4>\n#include <v1model.p4>\n");
        let names: Vec<String> = p
            .decls
            .iter()
            .filter_map(|d| match d {
                Decl::ExternObject(e) => Some(e.name.name.clone()),
                Decl::ExternFunction(f) => Some(f.name.name.clone()),
                Decl::Package(p) => Some(p.name.name.clone()),
                _ => None,
            })
            .collect();
        for n in ["packet_in", "register", "mark_to_drop", "hash", "V1Switch", "verify_checksum"] {
            assert!(names.iter().any(|x| x == n), "{n} missing");
        }
        let p = load("#define V1MODEL_VERSION 20200408\n#include <v1model.p4>\n");
        let reg = p.decls.iter().find_map(|d| match d {
            Decl::ExternObject(e) if e.name.name == "register" => Some(e),
            _ => None,
        });
        assert_eq!(reg.unwrap().type_params.len(), 2);
    }

    #[test]
    fn errors_point_at_the_offending_token() {
        assert_eq!(
            err("header h {\n    bit<8> x\n}\n"),
            "t.p4:3:1: error: expected `;` after the field declaration, found `}`\n}\n^"
        );
        assert_eq!(
            err("control c() {\n  apply {\n    x = 1 +;\n  }\n}\n"),
            "t.p4:3:12: error: expected an expression, found `;`\n    x = 1 +;\n           ^"
        );
        assert_eq!(
            err("const bit<8> x = 1"),
            "t.p4:1:19: error: expected `;` after the constant declaration, found end of input\nconst bit<8> x = 1\n                  ^"
        );
        assert!(err("struct s { bit<8> x; } /* open").contains("unterminated comment"));
        assert!(err("control c() { apply { for (;;) {} } }")
            .contains("not supported: `for` statements"));
    }

    #[test]
    fn empty_truncated_and_deep_inputs_do_not_panic() {
        assert!(load("").decls.is_empty());
        assert!(load(";;").decls.is_empty());
        let src = "control c(inout bit<8> x) { apply { x = (((1 + 2)) << 3); } }";
        for i in 0..src.len() {
            let _ = load_str("t.p4", &src[..i]);
        }
        for deep in [
            format!("const bit<8> c = {}1{};", "(".repeat(100_000), ")".repeat(100_000)),
            format!("const bit<8> c = {}1;", "-".repeat(100_000)),
            format!("const bit<8> c = {}1;", "{".repeat(100_000)),
            format!("control c() {{ apply {} }}", "{".repeat(100_000)),
            format!("control c() {{ apply {{ {} }} }}", "if (a) ".repeat(100_000)),
            format!("typedef {}bit<8>{} t;", "tuple<".repeat(100_000), ">".repeat(100_000)),
        ] {
            let e = load_str("t.p4", &deep).unwrap_err();
            assert!(e.diag.message.starts_with("nesting too deep"), "{}", e.diag.message);
        }
        // Failed guesses nested in each other stay fast.
        let n = 60;
        let guessy = format!(
            "typedef bit<8> T; const bit<8> c = {}1{};",
            "(T<(bit<(T)".repeat(n),
            ">)".repeat(n)
        );
        let t = std::time::Instant::now();
        let _ = load_str("t.p4", &guessy);
        assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
        let guessy =
            format!("const bit<8> c = {}1{};", "(bit<(bit<".repeat(n), ">)>)".repeat(n) + " x");
        let t = std::time::Instant::now();
        let _ = load_str("t.p4", &guessy);
        assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
        // Shallower nesting is fine.
        let ok = format!("const bit<8> c = {}1{};", "(".repeat(60), ")".repeat(60));
        load(&ok);
    }
}
