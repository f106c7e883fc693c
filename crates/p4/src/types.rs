//! The program's type declarations resolved: typedef chains followed,
//! widths and `const` declarations evaluated, `error` and `match_kind`
//! members collected.
//!
//! [`TypeEnv::new`] walks the top-level declarations in order (P4
//! requires declaration before use) and records every named type. It
//! knows nothing of any engine's runtime state, so the interpreter, a
//! type checker and the compiler into sluice's core can all share it.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::ast::{self, AggregateKind, Decl, Expr, ExprKind, Type, TypeKind};
use crate::diag::{Diagnostic, Result, Span};
use crate::value::{self, Bits, Value, MAX_WIDTH};

/// A resolved type.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    Bits {
        signed: bool,
        width: u32,
    },
    Varbit(u32),
    Int,
    Bool,
    Error,
    MatchKind,
    String,
    Void,
    /// `_` as a type argument.
    DontCare,
    Enum(Arc<EnumTy>),
    Header(Arc<AggTy>),
    HeaderUnion(Arc<AggTy>),
    Struct(Arc<AggTy>),
    Stack(Box<Ty>, u32),
    Tuple(Vec<Ty>),
    /// An extern object type with its type arguments (`register<bit<8>>`,
    /// `packet_in`).
    Extern {
        name: String,
        args: Vec<Ty>,
    },
    /// A parser, control or package type or declaration, by name.
    Parser(String),
    Control(String),
    Package(String),
    /// A type parameter not bound here.
    Var(String),
}

/// A header, header union or struct.
#[derive(Clone, Debug, PartialEq)]
pub struct AggTy {
    pub kind: AggregateKind,
    pub name: String,
    pub fields: Vec<(String, Ty)>,
}

impl AggTy {
    pub fn field(&self, name: &str) -> Option<&Ty> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }
}

/// An enum; `underlying` is `Some((signed, width))` for a serializable
/// enum, whose members then have values.
#[derive(Clone, Debug, PartialEq)]
pub struct EnumTy {
    pub name: String,
    pub underlying: Option<(bool, u32)>,
    pub members: Vec<(String, Option<Value>)>,
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Bits { signed: false, width } => write!(f, "bit<{width}>"),
            Ty::Bits { signed: true, width } => write!(f, "int<{width}>"),
            Ty::Varbit(w) => write!(f, "varbit<{w}>"),
            Ty::Int => f.write_str("int"),
            Ty::Bool => f.write_str("bool"),
            Ty::Error => f.write_str("error"),
            Ty::MatchKind => f.write_str("match_kind"),
            Ty::String => f.write_str("string"),
            Ty::Void => f.write_str("void"),
            Ty::DontCare => f.write_str("_"),
            Ty::Enum(e) => f.write_str(&e.name),
            Ty::Header(a) | Ty::HeaderUnion(a) | Ty::Struct(a) => f.write_str(&a.name),
            Ty::Stack(e, n) => write!(f, "{e}[{n}]"),
            Ty::Tuple(ts) => {
                f.write_str("tuple<")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(">")
            }
            Ty::Extern { name, .. } => f.write_str(name),
            Ty::Parser(n) | Ty::Control(n) | Ty::Package(n) | Ty::Var(n) => f.write_str(n),
        }
    }
}

impl Ty {
    /// The width in bits of a fixed-size type as a packet holds it
    /// (headers: the sum of their fields; `None` for varbits and
    /// non-serializable types).
    pub fn bit_width(&self) -> Option<u32> {
        match self {
            Ty::Bits { width, .. } => Some(*width),
            Ty::Bool => Some(1),
            Ty::Enum(e) => e.underlying.map(|(_, w)| w),
            Ty::Header(a) | Ty::Struct(a) => {
                let mut sum = 0u32;
                for (_, t) in &a.fields {
                    sum = sum.checked_add(t.bit_width()?)?;
                }
                Some(sum)
            }
            Ty::Stack(e, n) => e.bit_width()?.checked_mul(*n),
            _ => None,
        }
    }

    /// `minSizeInBits`: varbits count as empty.
    pub fn min_size_bits(&self) -> Option<u32> {
        match self {
            Ty::Varbit(_) => Some(0),
            Ty::Header(a) | Ty::Struct(a) | Ty::HeaderUnion(a) => {
                let sizes = a.fields.iter().map(|(_, t)| t.min_size_bits());
                if a.kind == AggregateKind::HeaderUnion {
                    sizes.map(|s| s.unwrap_or(0)).min()
                } else {
                    let mut sum = 0u32;
                    for s in sizes {
                        sum = sum.checked_add(s?)?;
                    }
                    Some(sum)
                }
            }
            Ty::Stack(e, n) => e.min_size_bits()?.checked_mul(*n),
            other => other.bit_width(),
        }
    }

    /// The value a variable of this type starts with when not
    /// initialised: zero numbers, invalid headers, empty stacks, the
    /// first member of an enum, `error.NoError`.
    pub fn default_value(&self) -> Value {
        self.default_value_depth(0)
    }

    fn default_value_depth(&self, depth: u32) -> Value {
        if depth > 64 {
            return Value::Void;
        }
        match self {
            Ty::Bits { signed: false, width } => Value::Bits(Bits::zero(*width)),
            Ty::Bits { signed: true, width } => Value::Signed(Bits::zero(*width)),
            Ty::Varbit(max) => Value::Varbit { max: *max, bits: Bits::zero(0) },
            Ty::Int => Value::Int(0),
            Ty::Bool => Value::Bool(false),
            Ty::Error => Value::Error("NoError".into()),
            Ty::MatchKind => Value::MatchKind(String::new()),
            Ty::String => Value::Str(String::new()),
            Ty::Enum(e) => match e.underlying {
                Some((signed, width)) => Ty::Bits { signed, width }.default_value(),
                None => Value::Enum {
                    ty: e.name.clone(),
                    member: e.members.first().map(|m| m.0.clone()).unwrap_or_default(),
                },
            },
            Ty::Header(a) | Ty::HeaderUnion(a) | Ty::Struct(a) => {
                let agg = Box::new(value::Aggregate {
                    ty: a.clone(),
                    valid: false,
                    fields: a
                        .fields
                        .iter()
                        .map(|(_, t)| t.default_value_depth(depth + 1))
                        .collect(),
                });
                match self {
                    Ty::Header(_) => Value::Header(agg),
                    Ty::HeaderUnion(_) => Value::Union(agg),
                    _ => Value::Struct(agg),
                }
            }
            Ty::Stack(e, n) => Value::Stack(Box::new(value::Stack {
                elem: (**e).clone(),
                elems: (0..*n).map(|_| e.default_value_depth(depth + 1)).collect(),
                next_index: 0,
            })),
            Ty::Tuple(ts) => {
                Value::Tuple(ts.iter().map(|t| t.default_value_depth(depth + 1)).collect())
            }
            _ => Value::Void,
        }
    }
}

/// What a name at top level denotes as a type.
#[derive(Clone, Debug)]
enum Named {
    Ty(Ty),
    /// A generic extern object type (args applied at use).
    Extern,
}

/// The resolved type declarations of one program.
#[derive(Clone, Debug, Default)]
pub struct TypeEnv {
    named: HashMap<String, Named>,
    /// Every `error` member, in declaration order.
    pub errors: Vec<String>,
    /// Every `match_kind` member.
    pub match_kinds: Vec<String>,
    /// Top-level constants, with their declared types.
    pub consts: HashMap<String, (Ty, Value)>,
}

/// Looks up names that are not top-level constants (a control's local
/// constants, say) during constant evaluation.
pub type LocalConsts<'a> = &'a dyn Fn(&str) -> Option<Value>;

impl TypeEnv {
    /// Resolves every top-level type declaration and constant.
    pub fn new(program: &ast::Program) -> Result<TypeEnv> {
        let mut env = TypeEnv::default();
        for d in &program.decls {
            env.declare(d)?;
        }
        Ok(env)
    }

    fn declare(&mut self, d: &Decl) -> Result<()> {
        match d {
            Decl::Const(c) => {
                let ty = self.resolve(&c.ty, &[])?;
                let v = self.eval_const(&c.value, Some(&ty), &|_| None)?;
                let v = value::coerce(&v, &ty).map_err(|m| Diagnostic::new(c.value.span, m))?;
                self.consts.insert(c.name.name.clone(), (ty, v));
            }
            Decl::Typedef { ty, name, .. } => {
                let t = self.resolve(ty, &[])?;
                self.named.insert(name.name.clone(), Named::Ty(t));
            }
            Decl::Aggregate(a) => {
                let mut fields = Vec::with_capacity(a.fields.len());
                for f in &a.fields {
                    let t = self.resolve(&f.ty, &[])?;
                    if a.kind == AggregateKind::Header
                        && !matches!(t, Ty::Bits { .. } | Ty::Varbit(_) | Ty::Bool)
                        && !matches!(&t, Ty::Enum(e) if e.underlying.is_some())
                    {
                        return Err(Diagnostic::unsupported(
                            f.ty.span,
                            format!("header field of type {t}"),
                        ));
                    }
                    if fields.iter().any(|(n, _): &(String, Ty)| *n == f.name.name) {
                        return Err(Diagnostic::new(
                            f.name.span,
                            format!("duplicate field `{}`", f.name.name),
                        ));
                    }
                    fields.push((f.name.name.clone(), t));
                }
                let agg = Arc::new(AggTy { kind: a.kind, name: a.name.name.clone(), fields });
                if agg.fields.iter().map(|(_, t)| nesting(t)).max().unwrap_or(0) >= MAX_NESTING {
                    return Err(Diagnostic::unsupported(
                        a.name.span,
                        format!("structs nested more than {MAX_NESTING} deep"),
                    ));
                }
                let t = match a.kind {
                    AggregateKind::Header => Ty::Header(agg),
                    AggregateKind::HeaderUnion => Ty::HeaderUnion(agg),
                    AggregateKind::Struct => Ty::Struct(agg),
                };
                self.named.insert(a.name.name.clone(), Named::Ty(t));
            }
            Decl::Enum(e) => {
                let underlying = match &e.underlying {
                    None => None,
                    Some(t) => match self.resolve(t, &[])? {
                        Ty::Bits { signed, width } => Some((signed, width)),
                        other => {
                            return Err(Diagnostic::new(
                                t.span,
                                format!("an enum cannot be represented as {other}"),
                            ))
                        }
                    },
                };
                let mut members = Vec::with_capacity(e.members.len());
                for (id, init) in &e.members {
                    let v = match (underlying, init) {
                        (Some((signed, width)), Some(x)) => {
                            let ty = Ty::Bits { signed, width };
                            let v = self.eval_const(x, Some(&ty), &|_| None)?;
                            Some(value::cast(&v, &ty).map_err(|m| Diagnostic::new(x.span, m))?)
                        }
                        (None, None) => None,
                        (Some(_), None) => {
                            return Err(Diagnostic::new(
                                id.span,
                                "a member of a serializable enum needs a value",
                            ))
                        }
                        (None, Some(x)) => {
                            return Err(Diagnostic::new(
                                x.span,
                                "only serializable enums give members values",
                            ))
                        }
                    };
                    members.push((id.name.clone(), v));
                }
                let t =
                    Ty::Enum(Arc::new(EnumTy { name: e.name.name.clone(), underlying, members }));
                self.named.insert(e.name.name.clone(), Named::Ty(t));
            }
            Decl::Error { members, .. } => {
                for m in members {
                    if !self.errors.contains(&m.name) {
                        self.errors.push(m.name.clone());
                    }
                }
            }
            Decl::MatchKind { members, .. } => {
                for m in members {
                    if !self.match_kinds.contains(&m.name) {
                        self.match_kinds.push(m.name.clone());
                    }
                }
            }
            Decl::ExternObject(x) => {
                self.named.insert(x.name.name.clone(), Named::Extern);
            }
            Decl::ParserType(p) => {
                self.named.insert(p.name.name.clone(), Named::Ty(Ty::Parser(p.name.name.clone())));
            }
            Decl::ControlType(p) => {
                self.named.insert(p.name.name.clone(), Named::Ty(Ty::Control(p.name.name.clone())));
            }
            Decl::Package(p) => {
                self.named.insert(p.name.name.clone(), Named::Ty(Ty::Package(p.name.name.clone())));
            }
            Decl::Parser(p) => {
                self.named.insert(p.name.name.clone(), Named::Ty(Ty::Parser(p.name.name.clone())));
            }
            Decl::Control(c) => {
                self.named.insert(c.name.name.clone(), Named::Ty(Ty::Control(c.name.name.clone())));
            }
            Decl::ExternFunction(_) | Decl::Action(_) | Decl::Function(_) | Decl::Instance(_) => {}
        }
        Ok(())
    }

    /// The named type (struct, header, enum, typedef target, ...).
    pub fn named(&self, name: &str) -> Option<Ty> {
        match self.named.get(name)? {
            Named::Ty(t) => Some(t.clone()),
            Named::Extern => Some(Ty::Extern { name: name.to_string(), args: Vec::new() }),
        }
    }

    pub fn is_error(&self, name: &str) -> bool {
        self.errors.iter().any(|e| e == name)
    }

    /// Resolves a type as written; `type_params` are the names of the
    /// enclosing declaration's type parameters.
    pub fn resolve(&self, t: &Type, type_params: &[String]) -> Result<Ty> {
        self.resolve_depth(t, type_params, 0)
    }

    fn resolve_depth(&self, t: &Type, tps: &[String], depth: u32) -> Result<Ty> {
        if depth > 32 {
            return Err(Diagnostic::unsupported(t.span, "types nested this deeply"));
        }
        Ok(match &t.kind {
            TypeKind::Bits { signed, width } => {
                let w = self.const_width(width)?;
                if *signed && w == 0 {
                    return Err(Diagnostic::new(t.span, "int<0> is not a type"));
                }
                Ty::Bits { signed: *signed, width: w }
            }
            TypeKind::Varbit(w) => Ty::Varbit(self.const_width(w)?),
            TypeKind::Int => Ty::Int,
            TypeKind::Bool => Ty::Bool,
            TypeKind::Void => Ty::Void,
            TypeKind::Error => Ty::Error,
            TypeKind::MatchKind => Ty::MatchKind,
            TypeKind::String => Ty::String,
            TypeKind::DontCare => Ty::DontCare,
            TypeKind::Named { name, args, .. } => {
                if tps.contains(&name.name) {
                    return Ok(Ty::Var(name.name.clone()));
                }
                match self.named.get(&name.name) {
                    Some(Named::Ty(ty)) => ty.clone(),
                    Some(Named::Extern) => {
                        let mut rargs = Vec::with_capacity(args.len());
                        for a in args {
                            rargs.push(self.resolve_depth(a, tps, depth + 1)?);
                        }
                        Ty::Extern { name: name.name.clone(), args: rargs }
                    }
                    None => {
                        return Err(Diagnostic::new(
                            name.span,
                            format!("unknown type `{}`", name.name),
                        ))
                    }
                }
            }
            TypeKind::Stack { elem, size } => {
                let e = self.resolve_depth(elem, tps, depth + 1)?;
                if !matches!(e, Ty::Header(_) | Ty::HeaderUnion(_)) {
                    return Err(Diagnostic::unsupported(
                        t.span,
                        format!("a stack of {e} (only headers and header unions)"),
                    ));
                }
                let n = self.const_width(size)?;
                if n > 4096 {
                    return Err(Diagnostic::unsupported(size.span, "stacks above 4096 elements"));
                }
                Ty::Stack(Box::new(e), n)
            }
            TypeKind::Tuple(ts) => {
                let mut out = Vec::with_capacity(ts.len());
                for x in ts {
                    out.push(self.resolve_depth(x, tps, depth + 1)?);
                }
                Ty::Tuple(out)
            }
        })
    }

    fn const_width(&self, e: &Expr) -> Result<u32> {
        let v = self.eval_const(e, None, &|_| None)?;
        let n = v
            .to_u64()
            .ok_or_else(|| Diagnostic::new(e.span, "a width must be a non-negative number"))?;
        if n > MAX_WIDTH as u64 {
            return Err(Diagnostic::unsupported(e.span, format!("widths above {MAX_WIDTH} bits")));
        }
        Ok(n as u32)
    }

    /// Evaluates a compile-time constant expression: literals, constants
    /// (top-level, or `locals`), `error.X`, enum members, operators,
    /// casts, lists and `T.minSizeInBits()`-style sizes. `expected`
    /// types an `int` result where the context gives a type.
    pub fn eval_const(
        &self,
        e: &Expr,
        expected: Option<&Ty>,
        locals: LocalConsts<'_>,
    ) -> Result<Value> {
        let v = self.eval_const_depth(e, locals, 0)?;
        match expected {
            Some(t) => value::coerce(&v, t).map_err(|m| Diagnostic::new(e.span, m)),
            None => Ok(v),
        }
    }

    fn eval_const_depth(&self, e: &Expr, locals: LocalConsts<'_>, depth: u32) -> Result<Value> {
        if depth > 200 {
            return Err(Diagnostic::unsupported(e.span, "expressions nested this deeply"));
        }
        let err = |m: String| Diagnostic::new(e.span, m);
        let sub = |x: &Expr| self.eval_const_depth(x, locals, depth + 1);
        Ok(match &e.kind {
            ExprKind::Int { value, width } => int_literal(value, *width, e.span)?,
            ExprKind::Bool(b) => Value::Bool(*b),
            ExprKind::Str(s) => Value::Str(s.clone()),
            ExprKind::Name { id, dot_prefix } => {
                if !dot_prefix {
                    if let Some(v) = locals(&id.name) {
                        return Ok(v);
                    }
                }
                match self.consts.get(&id.name) {
                    Some((_, v)) => v.clone(),
                    None => {
                        return Err(err(format!("`{}` is not a compile-time constant", id.name)))
                    }
                }
            }
            ExprKind::Member(base, m) => {
                if let Some(v) = self.type_member(base, &m.name) {
                    return v.map_err(err);
                }
                let b = sub(base)?;
                match b {
                    Value::Struct(a) | Value::Header(a) => a
                        .get(&m.name)
                        .cloned()
                        .ok_or_else(|| err(format!("no field `{}`", m.name)))?,
                    _ => return Err(err("not a compile-time constant".into())),
                }
            }
            ExprKind::Unary(op, x) => value::unary(*op, &sub(x)?).map_err(err)?,
            ExprKind::Binary(op, a, b) => {
                let a = sub(a)?;
                let b = sub(b)?;
                value::binary(*op, &a, &b).map_err(err)?
            }
            ExprKind::Mux(c, a, b) => {
                let (pick, other) = if sub(c)?.is_true().map_err(err)? { (a, b) } else { (b, a) };
                // An `int` arm takes the other arm's type, as the
                // interpreter's `?:` does at run time.
                match (sub(pick)?, sub(other)) {
                    (Value::Int(i), Ok(Value::Bits(o))) => {
                        Value::Bits(Bits::from_i128(o.width(), i))
                    }
                    (Value::Int(i), Ok(Value::Signed(o))) => {
                        Value::Signed(Bits::from_i128(o.width(), i))
                    }
                    (v, _) => v,
                }
            }
            ExprKind::Cast(t, x) => {
                let ty = self.resolve(t, &[])?;
                value::cast(&sub(x)?, &ty).map_err(err)?
            }
            ExprKind::Slice(x, hi, lo) => {
                let v = sub(x)?;
                let hi = sub(hi)?.to_u64().ok_or_else(|| err("bad slice bound".into()))?;
                let lo = sub(lo)?.to_u64().ok_or_else(|| err("bad slice bound".into()))?;
                slice_value(&v, hi, lo).map_err(err)?
            }
            ExprKind::List(items) => {
                let mut out = Vec::with_capacity(items.len());
                for i in items {
                    out.push(sub(i)?);
                }
                Value::Tuple(out)
            }
            ExprKind::Call { func, args, .. } if args.is_empty() => {
                if let ExprKind::Member(base, m) = &func.kind {
                    if let Some(ty) = self.type_of_type_expr(base) {
                        return size_of(&ty, &m.name).map_err(err);
                    }
                }
                return Err(err("not a compile-time constant".into()));
            }
            _ => return Err(err("not a compile-time constant".into())),
        })
    }

    /// `error.X`, `Enum.X` (`None` when `base` is not a type name).
    pub fn type_member(
        &self,
        base: &Expr,
        member: &str,
    ) -> Option<std::result::Result<Value, String>> {
        let name = match &base.kind {
            ExprKind::Name { id, .. } => id.name.as_str(),
            ExprKind::TypeRef(t) => match &t.kind {
                TypeKind::Error => "error",
                TypeKind::Named { name, .. } => name.name.as_str(),
                _ => return None,
            },
            _ => return None,
        };
        if name == "error" {
            return Some(if self.is_error(member) {
                Ok(Value::Error(member.to_string()))
            } else {
                Err(format!("no error `{member}` is declared"))
            });
        }
        match self.named.get(name) {
            Some(Named::Ty(Ty::Enum(en))) => Some(enum_member(en, member)),
            _ => None,
        }
    }

    /// The type an expression names when used as `T.minSizeInBits()`
    /// (a header/struct type name or a type reference).
    pub fn type_of_type_expr(&self, e: &Expr) -> Option<Ty> {
        match &e.kind {
            ExprKind::TypeRef(t) => self.resolve(t, &[]).ok(),
            ExprKind::Name { id, .. } => match self.named.get(&id.name)? {
                Named::Ty(t) => Some(t.clone()),
                Named::Extern => None,
            },
            _ => None,
        }
    }
}

/// How deeply aggregates may nest (struct in struct in ...).
pub const MAX_NESTING: u32 = 32;

/// The nesting depth of a type's aggregates (bounded by construction:
/// every declared aggregate was checked against [`MAX_NESTING`]).
pub fn nesting(t: &Ty) -> u32 {
    match t {
        Ty::Header(a) | Ty::HeaderUnion(a) | Ty::Struct(a) => {
            1 + a.fields.iter().map(|(_, t)| nesting(t)).max().unwrap_or(0)
        }
        Ty::Stack(e, _) => 1 + nesting(e),
        Ty::Tuple(ts) => 1 + ts.iter().map(nesting).max().unwrap_or(0),
        _ => 0,
    }
}

/// A member of an enum as a value.
pub fn enum_member(en: &EnumTy, member: &str) -> std::result::Result<Value, String> {
    match en.members.iter().find(|(n, _)| n == member) {
        Some((_, Some(v))) => Ok(v.clone()),
        Some((n, None)) => Ok(Value::Enum { ty: en.name.clone(), member: n.clone() }),
        None => Err(format!("enum {} has no member `{member}`", en.name)),
    }
}

/// `minSizeInBits`/`minSizeInBytes`/`maxSizeInBits`... of a type.
pub fn size_of(ty: &Ty, what: &str) -> std::result::Result<Value, String> {
    let bits = match what {
        "minSizeInBits" | "minSizeInBytes" => ty.min_size_bits(),
        "maxSizeInBits" | "maxSizeInBytes" => max_size_bits(ty),
        _ => return Err(format!("`{what}` is not a size")),
    }
    .ok_or_else(|| format!("{ty} has no size"))?;
    Ok(Value::Int(if what.ends_with("Bytes") { (bits as i128 + 7) / 8 } else { bits as i128 }))
}

fn max_size_bits(ty: &Ty) -> Option<u32> {
    match ty {
        Ty::Varbit(w) => Some(*w),
        Ty::Header(a) | Ty::Struct(a) | Ty::HeaderUnion(a) => {
            let sizes = a.fields.iter().map(|(_, t)| max_size_bits(t));
            if a.kind == AggregateKind::HeaderUnion {
                sizes.map(|s| s.unwrap_or(0)).max()
            } else {
                let mut sum = 0u32;
                for s in sizes {
                    sum = sum.checked_add(s?)?;
                }
                Some(sum)
            }
        }
        Ty::Stack(e, n) => max_size_bits(e)?.checked_mul(*n),
        other => other.bit_width(),
    }
}

/// An integer literal's value: `bit<W>`/`int<W>` when it has a width,
/// else an `int` (refused past 127 bits).
pub fn int_literal(value: &ast::BigValue, width: Option<(bool, u32)>, span: Span) -> Result<Value> {
    match width {
        Some((signed, w)) => {
            if w > MAX_WIDTH || (signed && w == 0) {
                return Err(Diagnostic::unsupported(span, format!("a literal of width {w}")));
            }
            let b = Bits::from_big(w, value);
            Ok(if signed { Value::Signed(b) } else { Value::Bits(b) })
        }
        None => {
            let v = value.to_u128().and_then(|v| i128::try_from(v).ok()).ok_or_else(|| {
                Diagnostic::unsupported(span, "`int` literals of 128 bits or more without a width")
            })?;
            Ok(Value::Int(v))
        }
    }
}

/// `v[hi:lo]` of a `bit<W>`/`int<W>` (the result is unsigned).
pub fn slice_value(v: &Value, hi: u64, lo: u64) -> std::result::Result<Value, String> {
    let b = match v {
        Value::Bits(b) | Value::Signed(b) => b,
        other => return Err(format!("cannot slice a {}", other.kind_name())),
    };
    if hi < lo || hi >= b.width() as u64 {
        return Err(format!("slice [{hi}:{lo}] out of range for a {}-bit value", b.width()));
    }
    Ok(Value::Bits(b.slice(hi as u32, lo as u32)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typedefs_consts_and_members() {
        let src = r#"
#include <core.p4>
const bit<32> W = 4 * 3;
typedef bit<W> word_t;
typedef word_t word2_t;
enum bit<8> E { A = 1, B = W + 1 }
error { Mine }
header h_t { word2_t x; E e; varbit<16> v; }
struct s_t { h_t h; h_t[2] hs; tuple<bit<1>, bool> t; }
const word2_t K = -1;
"#;
        let loaded = crate::parse::load_str("t.p4", src).unwrap();
        let env = TypeEnv::new(&loaded.program).unwrap();
        let Some(Ty::Struct(s)) = env.named("s_t") else { panic!("s_t") };
        let Some(Ty::Header(h)) = s.field("h") else { panic!("h") };
        assert_eq!(h.field("x"), Some(&Ty::Bits { signed: false, width: 12 }));
        assert_eq!(Ty::Header(h.clone()).min_size_bits(), Some(20));
        assert_eq!(size_of(&Ty::Header(h.clone()), "maxSizeInBytes").unwrap(), Value::Int(5));
        assert_eq!(env.consts.get("K").map(|c| c.1.clone()), Some(Value::bits(12, 0xfff)));
        let Some(Ty::Enum(e)) = env.named("E") else { panic!("E") };
        assert_eq!(enum_member(&e, "B").unwrap(), Value::bits(8, 13));
        assert!(env.is_error("Mine") && env.is_error("NoError"));
        assert!(env.match_kinds.iter().any(|m| m == "lpm"));
        let Some(Ty::Stack(_, 2)) = s.field("hs") else { panic!("hs") };
    }
}
