//! P4 statements and expressions compiled into key programs
//! ([`sluice_core::keyop::KeyProg`]): the stage that turns action bodies,
//! straight-line control code and computed conditions into ops over the
//! header vector.
//!
//! # What
//! [`Gen`] compiles statements of a control (and the actions and
//! functions it calls) into the instructions of one [`KeyProg`]:
//! assignments (also `op=` and to slices), `if`/`else` (forward jumps),
//! blocks, local variables and constants, `setValid()`/`setInvalid()`,
//! `mark_to_drop(std)`, direct action and function calls with
//! copy-in/copy-out, `return` and (in actions) `exit`. Expressions:
//! literals, constants, fields, locals, action data, `isValid()`,
//! `+ - * & | ^ ~ << >>`, comparisons, `&& || !` (short-circuit),
//! `|+| |-|`, slices, `++`, casts, `?:` and function calls, all within 64
//! bits; a field over 64 bits may only be copied from a field of the same
//! shape or set to a constant. Header and struct values ([`Agg`]: locals,
//! whole assignments, initializers, parameters, results) are flattened
//! into leaves and copied slot by slot; stack elements at run-time
//! indices are selected by comparing the index with each element's.
//!
//! # Basic design
//! Expressions evaluate into registers; every register value is reduced
//! to its type's width, as the interpreter's values are (`int<W>` held
//! as its two's-complement bits, sign-extended where an operation needs
//! it). An `int` literal stays a compile-time number until it meets a
//! typed operand, the target of an assignment or a parameter, whose type
//! it takes — the interpreter's rule. Where such a context gives the
//! type, `?:` of two `int`s, shifts of an `int` by a run-time amount and
//! arithmetic over them are computed in it (`Gen::expr_as`): the
//! interpreter's `int` result, reduced there, has the same bits. Locals, `in`/`inout`/`out`
//! parameters of called actions and values the engine computes
//! (conditions, table keys) live in scratch key slots ([`Scratch`]) after
//! the layout's words; a name always gets the same slot, so an action
//! compiled again for another table entry writes the same bits.
//!
//! # Invariants
//! - Anything outside the list above is refused at its span by
//!   [`super::refuse`], never compiled into something else.
//! - Semantics are the interpreter's (`crate::interp::exec`):
//!   `setValid()` on an invalid header zeroes its fields (and on a union
//!   member invalidates the others), `out` parameters start at zero
//!   (headers invalid), shifts by at least the width give zero
//!   (arithmetic shifts: the sign), `mark_to_drop` writes `egress_spec`
//!   511 and `mcast_grp` 0, `exit` in an action still copies out, a
//!   stack index out of range reads the default and loses writes.
//! - A program is at most [`sluice_core::keyop::MAX_INSNS`] instructions
//!   and runs each at most once (forward jumps only).

use std::collections::HashMap;

use sluice_core::keyop::{ones, BinOp as KOp, Insn, KeyProg, Reg, Slot, MAX_INSNS, REGS};
use sluice_packet::key::KEY_WORDS;

use super::layout::{FieldTy, Layout, Root};
use super::refuse;
use crate::ast::{
    ActionDecl, Arg, BinOp, Block, Decl, Direction, Expr, ExprKind, FunctionDecl, Param, Program,
    Stmt, UnOp,
};
use crate::diag::{Diagnostic, Result, Span};
use crate::types::{Ty, TypeEnv};
use crate::value::{Bits, Value};

/// Scratch key slots after the header vector, allocated by name.
#[derive(Clone, Debug)]
pub struct Scratch {
    next_bit: u32,
    named: HashMap<String, Slot>,
}

impl Scratch {
    /// Scratch space starting at the first word the layout does not use.
    pub fn new(l: &Layout) -> Scratch {
        let mut max = u32::from(l.cursor.word);
        let mut see = |s: &Slot| max = max.max(u32::from(s.word));
        for f in &l.fields {
            f.slots.iter().for_each(&mut see);
            if let Some(s) = &f.len {
                see(s);
            }
        }
        for h in &l.headers {
            see(&h.valid);
        }
        for s in &l.stacks {
            see(&s.next);
        }
        Scratch { next_bit: (max + 1) * 64, named: HashMap::new() }
    }

    /// The slot named `name` (`width` bits, 1 to 64), allocated on first
    /// use; `None` when the key is full.
    pub fn slot(&mut self, name: &str, width: u32) -> Option<Slot> {
        if let Some(s) = self.named.get(name) {
            return (u32::from(s.width) == width).then_some(*s);
        }
        if !(1..=64).contains(&width) {
            return None;
        }
        let mut word = self.next_bit / 64;
        let mut shift = self.next_bit % 64;
        if shift + width > 64 {
            word += 1;
            shift = 0;
        }
        if word as usize >= KEY_WORDS {
            return None;
        }
        let s = Slot { word: word as u8, shift: shift as u8, width: width as u8 };
        self.next_bit = word * 64 + shift + width;
        self.named.insert(name.to_string(), s);
        Some(s)
    }
}

/// A control's parameter names and what each denotes: a root of the
/// header vector and a path below it (empty: the root itself; a nested
/// control's parameter bound to `hdr.h` denotes `(Headers, "h")`).
pub type Roots = Vec<(String, Root, String)>;

/// A scalar type of at most 64 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum T1 {
    Bits { w: u8, signed: bool },
    Bool,
}

impl T1 {
    pub fn width(self) -> u8 {
        match self {
            T1::Bits { w, .. } => w,
            T1::Bool => 1,
        }
    }
    fn signed(self) -> bool {
        matches!(self, T1::Bits { signed: true, .. })
    }
    /// `bit<w>`, if `w` is 1 to 64.
    pub fn bits_of(w: u32) -> Option<T1> {
        T1::bits(w, false)
    }
    fn bits(w: u32, signed: bool) -> Option<T1> {
        (1..=64).contains(&w).then_some(T1::Bits { w: w as u8, signed })
    }
}

/// A compiled expression: an `int` still to be typed, or a register.
#[derive(Clone, Copy, Debug)]
enum E {
    Int(i128),
    R(Reg, T1),
}

/// What a name denotes inside the code being compiled.
#[derive(Clone, Debug)]
pub enum Bind {
    Slot(Slot, T1),
    Const(Value),
    /// A header or struct local.
    Agg(Agg),
}

/// One scalar of an aggregate location: a header's validity bit or a
/// field (several slots, most significant first, past 64 bits).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leaf {
    /// Its path below the aggregate (`""` a header's validity, `.a`).
    pub rel: String,
    pub valid: bool,
    pub width: u32,
    /// Its scalar type (`None` past 64 bits).
    pub t: Option<T1>,
    pub slots: Vec<Slot>,
}

/// A header- or struct-typed location, flattened: its leaves in the
/// type's order, so two locations of one type copy leaf by leaf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Agg {
    pub leaves: Vec<Leaf>,
}

impl Agg {
    /// The part below `rel` (leaves re-rooted), if any.
    fn sub(&self, rel: &str) -> Agg {
        let leaves = self
            .leaves
            .iter()
            .filter_map(|l| {
                let rest = l.rel.strip_prefix(rel)?;
                (rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
                    .then(|| Leaf { rel: rest.to_string(), ..l.clone() })
            })
            .collect();
        Agg { leaves }
    }
}

/// The leaves of type `t` (headers and structs of scalars): `(rel,
/// valid, width)`.
type Shape = Vec<(String, bool, u32, Option<T1>)>;

fn flatten(t: &Ty, rel: &str, out: &mut Shape, span: Span, d: u32) -> Result<()> {
    if d > MAX_DEPTH {
        return Err(refuse(span, "a type nested this deep"));
    }
    match t {
        Ty::Header(a) => {
            out.push((rel.to_string(), true, 1, Some(T1::Bool)));
            for (n, ft) in &a.fields {
                match ft {
                    Ty::Bits { width, signed } => {
                        out.push((format!("{rel}.{n}"), false, *width, T1::bits(*width, *signed)))
                    }
                    other => match ty_t1(other) {
                        Some(t) => {
                            out.push((format!("{rel}.{n}"), false, u32::from(t.width()), Some(t)))
                        }
                        None => {
                            return Err(refuse(span, format!("a header with a {other} field here")))
                        }
                    },
                }
            }
        }
        Ty::Struct(a) => {
            for (n, ft) in &a.fields {
                flatten(ft, &format!("{rel}.{n}"), out, span, d + 1)?;
            }
        }
        Ty::Bits { width, signed } => {
            out.push((rel.to_string(), false, *width, T1::bits(*width, *signed)))
        }
        other => match ty_t1(other) {
            Some(t) => out.push((rel.to_string(), false, u32::from(t.width()), Some(t))),
            None => return Err(refuse(span, format!("a value of type {other} here"))),
        },
    }
    Ok(())
}

/// Scratch slots for a local of aggregate type `t`, named after `base`.
pub fn alloc_agg(scratch: &mut Scratch, base: &str, t: &Ty, span: Span) -> Result<Agg> {
    let mut shape = Vec::new();
    flatten(t, "", &mut shape, span, 0)?;
    let mut leaves = Vec::with_capacity(shape.len());
    for (rel, valid, width, t) in shape {
        let mut slots = Vec::new();
        let mut left = width;
        let mut i = 0;
        while left > 0 {
            // The first slot takes the remainder, as the layout's do.
            let w = if left % 64 != 0 && slots.is_empty() { left % 64 } else { 64 };
            let Some(s) = scratch.slot(&format!("{base}{rel}#{i}"), w) else {
                return Err(refuse(span, "more locals than the key has room for"));
            };
            slots.push(s);
            left -= w;
            i += 1;
        }
        leaves.push(Leaf { rel, valid, width, t, slots });
    }
    Ok(Agg { leaves })
}

/// Where a function's result goes.
#[derive(Clone, Debug)]
enum Ret {
    Scalar(Slot, T1),
    Agg(Agg),
}

/// What an inlined call runs: an action's or a function's parts.
struct Callee<'c> {
    name: &'c str,
    params: &'c [Param],
    body: &'c Block,
    span: Span,
}

/// A location an expression denotes.
enum Place {
    Field(usize),
    Header(usize),
    Local(Slot, T1),
    Const(Value),
    /// A header local (or part of one): its leaves.
    LocalHeader(Agg),
    /// A struct local or part of one.
    LocalAgg(Agg),
}

/// The scalar type a layout field holds (`None`: wider than 64 bits or
/// a varbit).
fn field_t1(t: &FieldTy) -> Option<T1> {
    match t {
        FieldTy::Bits { signed, width } => T1::bits(*width, *signed),
        FieldTy::Bool => Some(T1::Bool),
        FieldTy::Error | FieldTy::Enum(_) => T1::bits(32, false),
        FieldTy::Varbit(_) => None,
    }
}

/// A resolved type as a scalar.
pub fn ty_t1(t: &Ty) -> Option<T1> {
    match t {
        Ty::Bits { signed, width } => T1::bits(*width, *signed),
        Ty::Bool => Some(T1::Bool),
        Ty::Error => T1::bits(32, false),
        Ty::Enum(e) => match e.underlying {
            Some((signed, w)) => T1::bits(w, signed),
            None => T1::bits(32, false),
        },
        _ => None,
    }
}

const MAX_DEPTH: u32 = 64;
/// Deepest chain of inlined calls.
const MAX_CALL_DEPTH: u32 = 16;
/// Most calls inlined into one program.
const MAX_INLINED: u32 = 1024;

/// Compiles statements of one control (and the actions it calls) into
/// one key program.
pub struct Gen<'a> {
    pub env: &'a TypeEnv,
    pub l: &'a Layout,
    pub prog: &'a Program,
    pub scratch: &'a mut Scratch,
    /// The control's parameter names and what they denote.
    pub roots: Roots,
    /// The control's local actions.
    pub local_actions: Vec<&'a ActionDecl>,
    scopes: Vec<Vec<(String, Bind)>>,
    /// Jumps to patch to the end of each action being inlined (`return`,
    /// `exit`), innermost last.
    ret: Vec<Vec<usize>>,
    /// The return slot of each function being inlined, innermost last.
    ret_slot: Vec<Option<Ret>>,
    /// Jumps to patch to the end of the program (after an `exit`).
    end: Vec<usize>,
    /// The control's exit flag: `exit` sets it (`None`: `exit` refused).
    pub exit_flag: Option<Slot>,
    /// Whether the code may set the exit flag.
    pub may_exit: bool,
    /// Calls inlined so far, and how deep the current one is (a
    /// recursive program is refused, not expanded forever).
    inlined: u32,
    call_depth: u32,
    insns: Vec<Insn>,
    next_reg: u8,
    depth: u32,
}

impl<'a> Gen<'a> {
    pub fn new(
        env: &'a TypeEnv,
        l: &'a Layout,
        prog: &'a Program,
        scratch: &'a mut Scratch,
        roots: Roots,
        local_actions: Vec<&'a ActionDecl>,
        base: Vec<(String, Bind)>,
    ) -> Gen<'a> {
        Gen {
            env,
            l,
            prog,
            scratch,
            roots,
            local_actions,
            scopes: vec![base],
            insns: Vec::new(),
            next_reg: 0,
            depth: 0,
            ret: Vec::new(),
            ret_slot: Vec::new(),
            end: Vec::new(),
            exit_flag: None,
            may_exit: false,
            inlined: 0,
            call_depth: 0,
        }
    }

    /// The program compiled so far.
    pub fn finish(mut self, span: Span) -> Result<KeyProg> {
        let at = self.insns.len();
        for j in std::mem::take(&mut self.end) {
            self.patch(j, at)?;
        }
        KeyProg::new(self.insns)
            .map_err(|e| Diagnostic::new(span, format!("lowering: key program refused: {e}")))
    }

    pub fn is_empty(&self) -> bool {
        self.insns.is_empty()
    }

    fn emit(&mut self, i: Insn) {
        self.insns.push(i);
    }

    fn reg(&mut self, span: Span) -> Result<Reg> {
        if usize::from(self.next_reg) >= REGS {
            return Err(refuse(span, "an expression needing more than 32 registers"));
        }
        self.next_reg += 1;
        Ok(self.next_reg - 1)
    }

    fn konst(&self, r: Reg, v: u64) -> Insn {
        Insn::Const { dst: r, value: v }
    }

    fn lookup(&self, name: &str) -> Option<&Bind> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.iter().rev().find(|(n, _)| n == name).map(|(_, b)| b))
    }

    fn root(&self, name: &str) -> Option<(Root, String)> {
        self.roots.iter().find(|(n, _, _)| n == name).map(|(_, r, p)| (*r, p.clone()))
    }

    /// Whether `e` names something in scope (a local, parameter or the
    /// control's roots): then it is not a compile-time constant.
    fn mentions_scope(&self, e: &Expr, d: u32) -> bool {
        if d > MAX_DEPTH {
            return true;
        }
        match &e.kind {
            ExprKind::Name { id, dot_prefix } => {
                !dot_prefix && (self.lookup(&id.name).is_some() || self.root(&id.name).is_some())
            }
            ExprKind::Member(b, _) => self.mentions_scope(b, d + 1),
            ExprKind::Index(a, b) => self.mentions_scope(a, d + 1) || self.mentions_scope(b, d + 1),
            ExprKind::Slice(a, b, c) | ExprKind::Mux(a, b, c) => {
                self.mentions_scope(a, d + 1)
                    || self.mentions_scope(b, d + 1)
                    || self.mentions_scope(c, d + 1)
            }
            ExprKind::Call { func, args, .. } => {
                self.mentions_scope(func, d + 1)
                    || args.iter().any(|a| self.mentions_scope(&a.value, d + 1))
            }
            ExprKind::Unary(_, a) | ExprKind::Cast(_, a) => self.mentions_scope(a, d + 1),
            ExprKind::Binary(_, a, b) => {
                self.mentions_scope(a, d + 1) || self.mentions_scope(b, d + 1)
            }
            ExprKind::List(v) => v.iter().any(|x| self.mentions_scope(x, d + 1)),
            ExprKind::StructInit(v) => v.iter().any(|(_, x)| self.mentions_scope(x, d + 1)),
            _ => false,
        }
    }

    /// `e` as a compile-time constant, if it is one.
    pub fn const_value(&self, e: &Expr) -> Option<Value> {
        if self.mentions_scope(e, 0) {
            return None;
        }
        let look = |n: &str| match self.lookup(n) {
            Some(Bind::Const(v)) => Some(v.clone()),
            _ => None,
        };
        self.env.eval_const(e, None, &look).ok()
    }

    /// The root-relative path `e` denotes (`hdr.ipv4.ttl` → Headers,
    /// `ipv4.ttl`).
    pub fn path(&self, e: &Expr, d: u32) -> Result<Option<(Root, String)>> {
        if d > MAX_DEPTH {
            return Err(refuse(e.span, "an expression this deep"));
        }
        Ok(match &e.kind {
            ExprKind::Name { id, dot_prefix: false } => {
                if self.lookup(&id.name).is_some() {
                    return Ok(None);
                }
                self.root(&id.name)
            }
            ExprKind::Member(b, m) => match self.path(b, d + 1)? {
                Some((r, p)) if p.is_empty() => Some((r, m.name.clone())),
                Some((r, p)) => {
                    if m.name == "last" || m.name == "next" || m.name == "lastIndex" {
                        return Err(refuse(e.span, format!("`.{}` outside a parser", m.name)));
                    }
                    Some((r, format!("{p}.{}", m.name)))
                }
                None => None,
            },
            ExprKind::Index(b, i) => match self.path(b, d + 1)? {
                Some((r, p)) => {
                    let Some(ix) = self.const_value(i).and_then(|v| v.to_u64()) else {
                        return Err(refuse(i.span, "a header stack index that is not a constant"));
                    };
                    Some((r, format!("{p}[{ix}]")))
                }
                None => None,
            },
            _ => None,
        })
    }

    /// `e` inside a local aggregate: the local and the path below it.
    fn local_agg(&self, e: &Expr) -> Option<(&Agg, String)> {
        let mut rest = Vec::new();
        let mut cur = e;
        while let ExprKind::Member(b, m) = &cur.kind {
            rest.push(m.name.clone());
            cur = b;
        }
        let ExprKind::Name { id, dot_prefix: false } = &cur.kind else { return None };
        let Some(Bind::Agg(a)) = self.lookup(&id.name) else { return None };
        rest.reverse();
        Some((a, rest.iter().map(|m| format!(".{m}")).collect()))
    }

    fn place(&self, e: &Expr) -> Result<Option<Place>> {
        if let Some((a, rel)) = self.local_agg(e) {
            let sub = a.sub(&rel);
            return Ok(Some(match sub.leaves.as_slice() {
                [] => return Err(refuse(e.span, "no such member")),
                [l] if !l.valid && l.rel.is_empty() => match (l.slots.as_slice(), l.t) {
                    ([s], Some(t)) => Place::Local(*s, t),
                    _ => return Err(refuse(e.span, "a local field over 64 bits here")),
                },
                [first, ..] if first.valid && first.rel.is_empty() => Place::LocalHeader(sub),
                _ => Place::LocalAgg(sub),
            }));
        }
        if let ExprKind::Name { id, dot_prefix: false } = &e.kind {
            match self.lookup(&id.name) {
                Some(Bind::Slot(s, t)) => return Ok(Some(Place::Local(*s, *t))),
                Some(Bind::Const(v)) => return Ok(Some(Place::Const(v.clone()))),
                Some(Bind::Agg(_)) | None => {}
            }
        }
        let Some((root, path)) = self.path(e, 0)? else { return Ok(None) };
        if root == Root::Std && path == "mcast_grp" {
            return Err(refuse(e.span, "multicast (`mcast_grp`) in a compiled pipeline"));
        }
        if let Some(f) = self.l.field(root, &path) {
            return Ok(Some(Place::Field(f)));
        }
        if let Some(h) = self.l.header(root, &path) {
            return Ok(Some(Place::Header(h)));
        }
        Err(refuse(e.span, "this kind of value (a struct, stack or union as a whole)"))
    }

    fn value_e(&mut self, v: &Value, span: Span) -> Result<E> {
        let (x, t) = match v {
            Value::Int(i) => return Ok(E::Int(*i)),
            Value::Bool(b) => (u64::from(*b), T1::Bool),
            Value::Bits(b) | Value::Signed(b) => {
                let Some(t) = T1::bits(b.width(), matches!(v, Value::Signed(_))) else {
                    return Err(refuse(span, "a constant over 64 bits in an expression"));
                };
                (b.low_u64(), t)
            }
            Value::Error(n) => {
                let Some(c) = self.l.error_code(n) else {
                    return Err(refuse(span, format!("`error.{n}` (not declared)")));
                };
                (u64::from(c), T1::Bits { w: 32, signed: false })
            }
            Value::Enum { ty, member } => {
                let idx = match self.env.named(ty) {
                    Some(Ty::Enum(e)) => e.members.iter().position(|(m, _)| m == member),
                    _ => None,
                };
                let Some(i) = idx else {
                    return Err(refuse(span, "this enum constant"));
                };
                (i as u64, T1::Bits { w: 32, signed: false })
            }
            other => return Err(refuse(span, format!("a {} value here", other.kind_name()))),
        };
        let r = self.reg(span)?;
        let i = self.konst(r, x);
        self.emit(i);
        Ok(E::R(r, t))
    }

    /// An `int` as a `t` value in a register.
    fn typed(&mut self, e: E, t: T1, span: Span) -> Result<Reg> {
        match e {
            E::R(r, _) => Ok(r),
            E::Int(i) => {
                let r = self.reg(span)?;
                let v = (i as u64) & ones(t.width());
                let i = self.konst(r, v);
                self.emit(i);
                Ok(r)
            }
        }
    }

    /// `e` evaluated to a typed register (an `int` takes `want`).
    fn scalar(&mut self, e: &Expr, want: Option<T1>) -> Result<(Reg, T1)> {
        match self.expr(e)? {
            E::R(r, t) => Ok((r, t)),
            E::Int(i) => {
                let Some(t) = want else {
                    return Err(refuse(e.span, "an `int` value whose width is not known here"));
                };
                Ok((self.typed(E::Int(i), t, e.span)?, t))
            }
        }
    }

    fn expr(&mut self, e: &Expr) -> Result<E> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(refuse(e.span, "an expression this deep"));
        }
        let r = self.expr_inner(e);
        self.depth -= 1;
        r
    }

    fn expr_inner(&mut self, e: &Expr) -> Result<E> {
        if let Some(v) = self.const_value(e) {
            return self.value_e(&v, e.span);
        }
        match &e.kind {
            ExprKind::Name { .. } | ExprKind::Member(..) | ExprKind::Index(..) => {
                if let Some((idx, cands)) = self.dyn_place(e)? {
                    if cands.iter().all(|p| matches!(p, Place::Field(_))) {
                        return self.dyn_read(&idx, &cands, e.span);
                    }
                    return Err(refuse(e.span, "a header as a value"));
                }
                match self.place(e)? {
                    Some(Place::Local(s, t)) => {
                        let r = self.reg(e.span)?;
                        self.emit(Insn::Load { dst: r, from: s });
                        Ok(E::R(r, t))
                    }
                    Some(Place::Const(v)) => self.value_e(&v, e.span),
                    Some(Place::Field(f)) => {
                        let fl = &self.l.fields[f];
                        let (Some(t), [s]) = (field_t1(&fl.ty), fl.slots.as_slice()) else {
                            return Err(refuse(e.span, "a field over 64 bits in an expression"));
                        };
                        let s = *s;
                        let r = self.reg(e.span)?;
                        self.emit(Insn::Load { dst: r, from: s });
                        Ok(E::R(r, t))
                    }
                    Some(Place::Header(_) | Place::LocalHeader(_) | Place::LocalAgg(_)) => {
                        Err(refuse(e.span, "a header or struct as a value"))
                    }
                    None => Err(refuse(e.span, "this name")),
                }
            }
            ExprKind::Call { func, args, .. } => {
                if let ExprKind::Member(b, m) = &func.kind {
                    if m.name == "isValid" && args.is_empty() {
                        if let Some((idx, cands)) = self.dyn_place(b)? {
                            return self.dyn_read(&idx, &cands, e.span);
                        }
                        if let Some(Place::LocalHeader(a)) = self.place(b)? {
                            let Some(v) = a.leaves.first().and_then(|l| l.slots.first().copied())
                            else {
                                return Err(refuse(e.span, "`isValid()` of this"));
                            };
                            let r = self.reg(e.span)?;
                            self.emit(Insn::Load { dst: r, from: v });
                            return Ok(E::R(r, T1::Bool));
                        }
                        if let Some(Place::Header(h)) = self.place(b)? {
                            let s = self.l.headers[h].valid;
                            let r = self.reg(e.span)?;
                            self.emit(Insn::Load { dst: r, from: s });
                            return Ok(E::R(r, T1::Bool));
                        }
                        return Err(refuse(e.span, "`isValid()` of this"));
                    }
                }
                if let ExprKind::Name { id, .. } = &func.kind {
                    if self.lookup(&id.name).is_none() {
                        if let Some(f) = self.find_function(&id.name) {
                            return match self.call_function(f, args, e.span)? {
                                Some((r, t)) => Ok(E::R(r, t)),
                                None => Err(refuse(e.span, "a void function as a value")),
                            };
                        }
                    }
                }
                Err(refuse(e.span, "this call in an expression"))
            }
            ExprKind::Unary(op, a) => {
                let v = self.expr(a)?;
                match (op, v) {
                    (UnOp::Plus, v) => Ok(v),
                    (UnOp::Neg, E::Int(i)) => Ok(E::Int(i.wrapping_neg())),
                    // A sub-expression's register is its own temporary:
                    // computed in place.
                    (UnOp::Neg, E::R(r, t)) => {
                        self.emit(Insn::Neg { dst: r, a: r, width: t.width() });
                        Ok(E::R(r, t))
                    }
                    (UnOp::BitNot, E::R(r, t)) => {
                        self.emit(Insn::Not { dst: r, a: r, width: t.width() });
                        Ok(E::R(r, t))
                    }
                    (UnOp::Not, E::R(r, T1::Bool)) => {
                        let one = self.reg(e.span)?;
                        self.emit(self.konst(one, 1));
                        self.emit(Insn::Bin { op: KOp::Xor, dst: one, a: r, b: one, width: 1 });
                        Ok(E::R(one, T1::Bool))
                    }
                    _ => Err(refuse(e.span, "this unary operation")),
                }
            }
            ExprKind::Binary(op, a, b) => self.binary(e, *op, a, b),
            ExprKind::Slice(a, hi, lo) => {
                let (Some(hi), Some(lo)) = (
                    self.const_value(hi).and_then(|v| v.to_u64()),
                    self.const_value(lo).and_then(|v| v.to_u64()),
                ) else {
                    return Err(refuse(e.span, "a slice with bounds that are not constants"));
                };
                let (r, t) = self.scalar(a, None)?;
                if hi < lo || hi >= u64::from(t.width()) {
                    return Err(refuse(e.span, "this slice"));
                }
                let w = (hi - lo + 1) as u8;
                let d = self.reg(e.span)?;
                self.emit(self.konst(d, lo));
                self.emit(Insn::Bin { op: KOp::Shr, dst: d, a: r, b: d, width: t.width() });
                self.emit(Insn::Trunc { dst: d, a: d, width: w });
                Ok(E::R(d, T1::Bits { w, signed: false }))
            }
            ExprKind::Mux(c, a, b) => {
                let (cr, _) = self.scalar(c, Some(T1::Bool))?;
                let dst = self.reg(e.span)?;
                let jz = self.insns.len();
                self.emit(Insn::JumpIfZero { cond: cr, to: 0 });
                let ea = self.expr(a)?;
                let ta = match ea {
                    E::R(_, t) => Some(t),
                    E::Int(_) => None,
                };
                // The type comes from whichever arm has one (`b`'s found
                // without compiling it: it is compiled once, below).
                let Some(t) = ta.or_else(|| self.static_t1(b, 0)) else {
                    return Err(refuse(e.span, "`?:` of two `int`s"));
                };
                let ra = self.typed(ea, t, a.span)?;
                self.emit(Insn::Mov { dst, a: ra });
                let jend = self.insns.len();
                self.emit(Insn::Jump { to: 0 });
                let else_at = self.insns.len();
                let eb = self.expr(b)?;
                let rb = self.typed(eb, t, b.span)?;
                self.emit(Insn::Mov { dst, a: rb });
                let end = self.insns.len();
                self.patch(jz, else_at)?;
                self.patch(jend, end)?;
                Ok(E::R(dst, t))
            }
            ExprKind::Cast(ty, a) => {
                let to = self.env.resolve(ty, &[])?;
                let Some(tt) = ty_t1(&to) else {
                    return Err(refuse(e.span, format!("a cast to {to}")));
                };
                match self.expr_as(a, Some(tt))? {
                    E::Int(i) => Ok(E::R(self.typed(E::Int(i), tt, e.span)?, tt)),
                    E::R(r, ft) => {
                        let d = self.reg(e.span)?;
                        if ft.signed() && tt.width() > ft.width() {
                            self.emit(Insn::SExt { dst: d, a: r, from: ft.width() });
                            self.emit(Insn::Trunc { dst: d, a: d, width: tt.width() });
                        } else {
                            self.emit(Insn::Trunc { dst: d, a: r, width: tt.width() });
                        }
                        Ok(E::R(d, tt))
                    }
                }
            }
            _ => Err(refuse(e.span, "this expression")),
        }
    }

    /// The type `e` would compile to, found without compiling it (`None`:
    /// an `int`, or not known).
    fn static_t1(&self, e: &Expr, d: u32) -> Option<T1> {
        if d > MAX_DEPTH {
            return None;
        }
        if let Some(v) = self.const_value(e) {
            return match v {
                Value::Bool(_) => Some(T1::Bool),
                Value::Bits(b) => T1::bits(b.width(), false),
                Value::Signed(b) => T1::bits(b.width(), true),
                Value::Error(_) | Value::Enum { .. } => T1::bits(32, false),
                _ => None,
            };
        }
        match &e.kind {
            ExprKind::Name { .. } | ExprKind::Member(..) | ExprKind::Index(..) => {
                if let Ok(Some((_, cands))) = self.dyn_place(e) {
                    return self.dyn_t1(&cands);
                }
                match self.place(e).ok()?? {
                    Place::Local(_, t) => Some(t),
                    Place::Field(f) => field_t1(&self.l.fields[f].ty),
                    _ => None,
                }
            }
            ExprKind::Call { func, .. } => match &func.kind {
                ExprKind::Member(_, m) if m.name == "isValid" => Some(T1::Bool),
                ExprKind::Name { id, .. } => {
                    let f = self.find_function(&id.name)?;
                    ty_t1(&self.env.resolve(&f.ret, &[]).ok()?)
                }
                _ => None,
            },
            ExprKind::Unary(UnOp::Not, _) => Some(T1::Bool),
            ExprKind::Unary(_, a) => self.static_t1(a, d + 1),
            ExprKind::Binary(op, a, b) => match op {
                BinOp::Eq
                | BinOp::Ne
                | BinOp::Lt
                | BinOp::Le
                | BinOp::Gt
                | BinOp::Ge
                | BinOp::And
                | BinOp::Or => Some(T1::Bool),
                BinOp::Shl | BinOp::Shr => self.static_t1(a, d + 1),
                BinOp::Concat => {
                    let (x, y) = (self.static_t1(a, d + 1)?, self.static_t1(b, d + 1)?);
                    T1::bits(u32::from(x.width()) + u32::from(y.width()), x.signed())
                }
                _ => self.static_t1(a, d + 1).or_else(|| self.static_t1(b, d + 1)),
            },
            ExprKind::Slice(_, hi, lo) => {
                let hi = self.const_value(hi)?.to_u64()?;
                let lo = self.const_value(lo)?.to_u64()?;
                T1::bits(u32::try_from(hi.checked_sub(lo)? + 1).ok()?, false)
            }
            ExprKind::Mux(_, a, b) => self.static_t1(a, d + 1).or_else(|| self.static_t1(b, d + 1)),
            ExprKind::Cast(ty, _) => ty_t1(&self.env.resolve(ty, &[]).ok()?),
            _ => None,
        }
    }

    fn patch(&mut self, at: usize, to: usize) -> Result<()> {
        let to16 = u16::try_from(to)
            .map_err(|_| Diagnostic::bare("lowering: a key program over 65535 instructions"))?;
        match self.insns.get_mut(at) {
            Some(Insn::JumpIfZero { to: t, .. }) | Some(Insn::Jump { to: t }) => *t = to16,
            _ => return Err(Diagnostic::bare("lowering: internal error: jump patch")),
        }
        Ok(())
    }

    fn binary(&mut self, e: &Expr, op: BinOp, a: &Expr, b: &Expr) -> Result<E> {
        // Every register the operands use is allocated from here on; the
        // result of a final single instruction may take the first.
        let base = self.next_reg;
        if matches!(op, BinOp::And | BinOp::Or) {
            return self.logical(op == BinOp::And, a, b, e.span);
        }
        // An `int`-valued operand takes the other's type (`x + (c ? 1 : 2)`),
        // as an `int` does in the interpreter's `value::binary`.
        let typing = !matches!(op, BinOp::Shl | BinOp::Shr | BinOp::Concat);
        let ta = if typing { self.static_t1(b, 0) } else { None };
        let tb = if typing { self.static_t1(a, 0) } else { None };
        let ea = self.expr_as(a, ta)?;
        let eb = self.expr_as(b, tb)?;
        let span = e.span;
        if let (E::Int(x), E::Int(y)) = (ea, eb) {
            return self.fold(op, x, y, span);
        }
        // Shifts: the left operand's type, the amount unsigned.
        if matches!(op, BinOp::Shl | BinOp::Shr) {
            let E::R(ra, t) = ea else {
                return Err(refuse(span, "a shift of an `int` by a non-constant"));
            };
            return self.shift(op, ra, t, eb, base, span);
        }
        if op == BinOp::Concat {
            let (E::R(ra, ta), E::R(rb, tb)) = (ea, eb) else {
                return Err(refuse(span, "`++` of an `int`"));
            };
            let w = u32::from(ta.width()) + u32::from(tb.width());
            let Some(t) = T1::bits(w, ta.signed()) else {
                return Err(refuse(span, "`++` over 64 bits"));
            };
            let d = self.reg(span)?;
            self.emit(self.konst(d, u64::from(tb.width())));
            self.emit(Insn::Bin { op: KOp::Shl, dst: d, a: ra, b: d, width: t.width() });
            self.emit(Insn::Bin { op: KOp::Or, dst: d, a: d, b: rb, width: t.width() });
            return Ok(E::R(d, t));
        }
        let t = match (ea, eb) {
            (E::R(_, t), _) | (_, E::R(_, t)) => t,
            _ => return Err(Diagnostic::bare("lowering: internal error: binary types")),
        };
        let ra = self.typed(ea, t, a.span)?;
        let rb = self.typed(eb, t, b.span)?;
        let w = t.width();
        let s = t.signed();
        let (kop, swap, res) = match op {
            BinOp::Add => (KOp::Add, false, t),
            BinOp::Sub => (KOp::Sub, false, t),
            BinOp::Mul => (KOp::Mul, false, t),
            BinOp::AddSat => (if s { KOp::AddSatS } else { KOp::AddSat }, false, t),
            BinOp::SubSat => (if s { KOp::SubSatS } else { KOp::SubSat }, false, t),
            BinOp::BitAnd => (KOp::And, false, t),
            BinOp::BitOr => (KOp::Or, false, t),
            BinOp::BitXor => (KOp::Xor, false, t),
            BinOp::Eq => (KOp::Eq, false, T1::Bool),
            BinOp::Ne => (KOp::Ne, false, T1::Bool),
            BinOp::Lt => (if s { KOp::LtS } else { KOp::Lt }, false, T1::Bool),
            BinOp::Le => (if s { KOp::LeS } else { KOp::Le }, false, T1::Bool),
            BinOp::Gt => (if s { KOp::LtS } else { KOp::Lt }, true, T1::Bool),
            BinOp::Ge => (if s { KOp::LeS } else { KOp::Le }, true, T1::Bool),
            _ => return Err(refuse(span, format!("operator {op:?} in a compiled pipeline"))),
        };
        let (x, y) = if swap { (rb, ra) } else { (ra, rb) };
        // The instruction reads both operands before it writes `base`.
        let d = base;
        self.next_reg = base + 1;
        self.emit(Insn::Bin { op: kop, dst: d, a: x, b: y, width: w });
        Ok(E::R(d, res))
    }

    /// `ra << eb` / `ra >> eb`, `ra` of type `t`: the amount unsigned,
    /// at least the width giving zero (or the sign); the result in
    /// register `base`.
    fn shift(&mut self, op: BinOp, ra: Reg, t: T1, eb: E, base: Reg, span: Span) -> Result<E> {
        let w = t.width();
        let amt = match eb {
            E::Int(n) => {
                if n < 0 {
                    return Err(refuse(span, "a negative shift"));
                }
                let r = self.reg(span)?;
                self.emit(self.konst(r, n.min(i128::from(w)) as u64));
                r
            }
            E::R(rb, tb) => {
                if tb.signed() {
                    return Err(refuse(span, "a shift by a signed amount"));
                }
                if tb.width() <= w {
                    rb
                } else {
                    // amt = rb < w ? rb : w (so that bits above the
                    // operand's width cannot wrap the amount).
                    let r = self.reg(span)?;
                    let c = self.reg(span)?;
                    self.emit(self.konst(r, u64::from(w)));
                    self.emit(Insn::Bin { op: KOp::Lt, dst: c, a: rb, b: r, width: tb.width() });
                    let jz = self.insns.len();
                    self.emit(Insn::JumpIfZero { cond: c, to: 0 });
                    self.emit(Insn::Mov { dst: r, a: rb });
                    let end = self.insns.len();
                    self.patch(jz, end)?;
                    r
                }
            }
        };
        let kop = match (op, t.signed()) {
            (BinOp::Shl, _) => KOp::Shl,
            (_, true) => KOp::Sar,
            _ => KOp::Shr,
        };
        let d = base;
        self.next_reg = base + 1;
        self.emit(Insn::Bin { op: kop, dst: d, a: ra, b: amt, width: w });
        Ok(E::R(d, t))
    }

    /// `e` compiled where the context gives an `int` the type `want` (the
    /// target of an assignment, a local's or parameter's type, a cast,
    /// a key): besides what [`Self::expr`] compiles, `?:` of two `int`s
    /// and a shift of an `int` by a run-time amount, and `+ - * & | ^ ~`
    /// and unary `-` over those. The interpreter computes these as
    /// `int`s and reduces the result to `want` where it is used; the
    /// operations commute with that reduction (for `>>`, when the `int`
    /// fits `want`), so computing them in `want`'s width gives its bits.
    fn expr_as(&mut self, e: &Expr, want: Option<T1>) -> Result<E> {
        let Some(t) = want.filter(|t| !matches!(t, T1::Bool)) else {
            return self.expr(e);
        };
        if self.const_value(e).is_some() || self.static_t1(e, 0).is_some() {
            return self.expr(e);
        }
        let base = self.next_reg;
        match &e.kind {
            ExprKind::Mux(c, a, b) => {
                let (cr, _) = self.scalar(c, Some(T1::Bool))?;
                let dst = self.reg(e.span)?;
                let jz = self.insns.len();
                self.emit(Insn::JumpIfZero { cond: cr, to: 0 });
                let ea = self.expr_as(a, Some(t))?;
                let ra = self.typed(ea, t, a.span)?;
                self.emit(Insn::Mov { dst, a: ra });
                let jend = self.insns.len();
                self.emit(Insn::Jump { to: 0 });
                let else_at = self.insns.len();
                let eb = self.expr_as(b, Some(t))?;
                let rb = self.typed(eb, t, b.span)?;
                self.emit(Insn::Mov { dst, a: rb });
                let end = self.insns.len();
                self.patch(jz, else_at)?;
                self.patch(jend, end)?;
                Ok(E::R(dst, t))
            }
            ExprKind::Unary(op @ (UnOp::Neg | UnOp::BitNot), a) => {
                let x = self.expr_as(a, Some(t))?;
                let r = self.typed(x, t, a.span)?;
                let width = t.width();
                self.emit(match op {
                    UnOp::Neg => Insn::Neg { dst: r, a: r, width },
                    _ => Insn::Not { dst: r, a: r, width },
                });
                Ok(E::R(r, t))
            }
            ExprKind::Binary(
                op @ (BinOp::Add
                | BinOp::Sub
                | BinOp::Mul
                | BinOp::BitAnd
                | BinOp::BitOr
                | BinOp::BitXor),
                a,
                b,
            ) => {
                let ea = self.expr_as(a, Some(t))?;
                let eb = self.expr_as(b, Some(t))?;
                if let (E::Int(x), E::Int(y)) = (ea, eb) {
                    return self.fold(*op, x, y, e.span);
                }
                let ra = self.typed(ea, t, a.span)?;
                let rb = self.typed(eb, t, b.span)?;
                let kop = match op {
                    BinOp::Add => KOp::Add,
                    BinOp::Sub => KOp::Sub,
                    BinOp::Mul => KOp::Mul,
                    BinOp::BitAnd => KOp::And,
                    BinOp::BitOr => KOp::Or,
                    _ => KOp::Xor,
                };
                self.next_reg = base + 1;
                self.emit(Insn::Bin { op: kop, dst: base, a: ra, b: rb, width: t.width() });
                Ok(E::R(base, t))
            }
            ExprKind::Binary(op @ (BinOp::Shl | BinOp::Shr), a, b) => {
                let Some(Value::Int(i)) = self.const_value(a) else {
                    return self.expr(e);
                };
                // `>>` of an `int` that does not fit `want` would shift
                // bits in from above its width: left to the refusal.
                let w = u32::from(t.width());
                let fits = if t.signed() {
                    i >= -(1i128 << (w - 1)) && i < (1i128 << (w - 1))
                } else {
                    i >= 0 && i < (1i128 << w)
                };
                if *op == BinOp::Shr && !fits {
                    return self.expr(e);
                }
                let ra = self.typed(E::Int(i), t, a.span)?;
                let eb = self.expr(b)?;
                self.shift(*op, ra, t, eb, base, e.span)
            }
            _ => self.expr(e),
        }
    }

    /// `a && b` / `a || b`, `b` evaluated only when it decides (it may
    /// call a function with side effects).
    fn logical(&mut self, and: bool, a: &Expr, b: &Expr, span: Span) -> Result<E> {
        let (ra, _) = self.scalar(a, Some(T1::Bool))?;
        let dst = self.reg(span)?;
        self.emit(Insn::Mov { dst, a: ra });
        let test = self.reg(span)?;
        if and {
            self.emit(Insn::Mov { dst: test, a: ra });
        } else {
            self.emit(Insn::Not { dst: test, a: ra, width: 1 });
        }
        let j = self.insns.len();
        self.emit(Insn::JumpIfZero { cond: test, to: 0 });
        let (rb, _) = self.scalar(b, Some(T1::Bool))?;
        self.emit(Insn::Mov { dst, a: rb });
        let end = self.insns.len();
        self.patch(j, end)?;
        Ok(E::R(dst, T1::Bool))
    }

    fn fold(&mut self, op: BinOp, x: i128, y: i128, span: Span) -> Result<E> {
        let b = |v: bool| E::Int(i128::from(v));
        let int = match op {
            BinOp::Add => x.checked_add(y),
            BinOp::Sub => x.checked_sub(y),
            BinOp::Mul => x.checked_mul(y),
            BinOp::BitAnd => Some(x & y),
            BinOp::BitOr => Some(x | y),
            BinOp::BitXor => Some(x ^ y),
            // As the interpreter shifts `int`s (`value::binary`).
            BinOp::Shl if y >= 0 => u32::try_from(y)
                .ok()
                .filter(|&n| n < 127)
                .and_then(|n| x.checked_mul(1i128.checked_shl(n)?)),
            BinOp::Shr if y >= 0 => Some(if y >= 127 {
                if x < 0 {
                    -1
                } else {
                    0
                }
            } else {
                x >> y
            }),
            _ => None,
        };
        if let Some(v) = int {
            return Ok(E::Int(v));
        }
        let cmp = match op {
            BinOp::Eq => Some(x == y),
            BinOp::Ne => Some(x != y),
            BinOp::Lt => Some(x < y),
            BinOp::Le => Some(x <= y),
            BinOp::Gt => Some(x > y),
            BinOp::Ge => Some(x >= y),
            _ => None,
        };
        match cmp {
            Some(c) => {
                let _ = b;
                let r = self.reg(span)?;
                self.emit(self.konst(r, u64::from(c)));
                Ok(E::R(r, T1::Bool))
            }
            None => Err(refuse(span, "this operation on `int` values")),
        }
    }

    /// Stores register `r` (type `t`) into the location `lhs` denotes.
    fn store(&mut self, lhs: &Expr, r: Reg, span: Span) -> Result<()> {
        if let ExprKind::Slice(base, hi, lo) = &lhs.kind {
            let (Some(hi), Some(lo)) = (
                self.const_value(hi).and_then(|v| v.to_u64()),
                self.const_value(lo).and_then(|v| v.to_u64()),
            ) else {
                return Err(refuse(lhs.span, "a slice with bounds that are not constants"));
            };
            let (old, t) = self.scalar(base, None)?;
            let w = t.width();
            if hi < lo || hi >= u64::from(w) {
                return Err(refuse(lhs.span, "this slice"));
            }
            let sw = (hi - lo + 1) as u8;
            // new = (old & ~(mask << lo)) | ((r & mask) << lo)
            let m = self.reg(span)?;
            let sh = self.reg(span)?;
            let v = self.reg(span)?;
            self.emit(self.konst(m, ones(sw)));
            self.emit(self.konst(sh, lo));
            self.emit(Insn::Bin { op: KOp::And, dst: v, a: r, b: m, width: 64 });
            self.emit(Insn::Bin { op: KOp::Shl, dst: v, a: v, b: sh, width: w });
            self.emit(Insn::Bin { op: KOp::Shl, dst: m, a: m, b: sh, width: w });
            self.emit(Insn::Not { dst: m, a: m, width: w });
            self.emit(Insn::Bin { op: KOp::And, dst: m, a: old, b: m, width: w });
            self.emit(Insn::Bin { op: KOp::Or, dst: v, a: v, b: m, width: w });
            return self.store(base, v, span);
        }
        if let Some((idx, cands)) = self.dyn_place(lhs)? {
            if self.dyn_t1(&cands).is_none() || cands.iter().any(|p| !matches!(p, Place::Field(_)))
            {
                return Err(refuse(lhs.span, "an assignment to this"));
            }
            return self.each_elem(&idx, &cands, span, |g, p| match p {
                Place::Field(f) => match g.l.fields[*f].slots.as_slice() {
                    [s] => {
                        let s = *s;
                        g.emit(Insn::Store { src: r, to: s });
                        Ok(())
                    }
                    _ => Err(refuse(span, "this write to a field over 64 bits")),
                },
                _ => Err(refuse(span, "an assignment to this")),
            });
        }
        match self.place(lhs)? {
            Some(Place::Local(s, _)) => {
                self.emit(Insn::Store { src: r, to: s });
                Ok(())
            }
            Some(Place::Field(f)) => match self.l.fields[f].slots.as_slice() {
                [s] if field_t1(&self.l.fields[f].ty).is_some() => {
                    let s = *s;
                    self.emit(Insn::Store { src: r, to: s });
                    Ok(())
                }
                _ => Err(refuse(lhs.span, "this write to a field over 64 bits")),
            },
            _ => Err(refuse(lhs.span, "an assignment to this")),
        }
    }

    /// The scalar type of the location `lhs` (for typing an `int`).
    fn lhs_t1(&self, lhs: &Expr) -> Result<Option<T1>> {
        if let ExprKind::Slice(_, hi, lo) = &lhs.kind {
            let (Some(hi), Some(lo)) = (
                self.const_value(hi).and_then(|v| v.to_u64()),
                self.const_value(lo).and_then(|v| v.to_u64()),
            ) else {
                return Ok(None);
            };
            return Ok(hi.checked_sub(lo).and_then(|d| T1::bits(d as u32 + 1, false)));
        }
        if let Some((_, cands)) = self.dyn_place(lhs)? {
            return Ok(self.dyn_t1(&cands));
        }
        Ok(match self.place(lhs)? {
            Some(Place::Local(_, t)) => Some(t),
            Some(Place::Field(f)) => field_t1(&self.l.fields[f].ty),
            _ => None,
        })
    }

    /// `lhs = rhs` where `lhs` is a field over 64 bits: from a constant
    /// or a field of the same shape.
    fn assign_wide(&mut self, f: usize, rhs: &Expr, span: Span) -> Result<()> {
        let fl = self.l.fields[f].clone();
        let FieldTy::Bits { width, .. } = fl.ty else {
            return Err(refuse(span, "this assignment"));
        };
        let konst = match self.const_value(rhs) {
            Some(v) => Some(v),
            None => match self.place(rhs)? {
                Some(Place::Const(v)) => Some(v),
                Some(Place::Field(g)) => {
                    let gl = &self.l.fields[g];
                    if gl.ty.width() != width || gl.slots.len() != fl.slots.len() {
                        return Err(refuse(span, "a copy between fields of different shapes"));
                    }
                    let pairs: Vec<(Slot, Slot)> =
                        gl.slots.iter().copied().zip(fl.slots.iter().copied()).collect();
                    let r = self.reg(span)?;
                    for (from, to) in pairs {
                        if from.width != to.width {
                            return Err(refuse(span, "a copy between fields of different shapes"));
                        }
                        self.emit(Insn::Load { dst: r, from });
                        self.emit(Insn::Store { src: r, to });
                    }
                    return Ok(());
                }
                _ => return Err(refuse(span, "this value assigned to a field over 64 bits")),
            },
        };
        let bits = match konst {
            Some(Value::Bits(b)) | Some(Value::Signed(b)) => b.resize(width),
            Some(Value::Int(i)) => Bits::from_i128(width, i),
            _ => return Err(refuse(span, "this value assigned to a field over 64 bits")),
        };
        let r = self.reg(span)?;
        let mut hi = width;
        for s in &fl.slots {
            let lo = hi - u32::from(s.width);
            let v = bits.slice(hi - 1, lo).low_u64();
            self.emit(self.konst(r, v));
            self.emit(Insn::Store { src: r, to: *s });
            hi = lo;
        }
        Ok(())
    }

    /// Compiles statements.
    pub fn stmts(&mut self, ss: &[Stmt]) -> Result<()> {
        self.scopes.push(Vec::new());
        for s in ss {
            self.stmt(s)?;
        }
        self.scopes.pop();
        Ok(())
    }

    pub fn stmt(&mut self, s: &Stmt) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(refuse(stmt_span(s), "statements nested this deep"));
        }
        let save = self.next_reg;
        let r = self.stmt_inner(s);
        self.next_reg = save;
        self.depth -= 1;
        r
    }

    fn stmt_inner(&mut self, s: &Stmt) -> Result<()> {
        match s {
            Stmt::Assign { lhs, op, rhs, span } => {
                if op.is_none() {
                    if let Some(dst) = self.agg_place(lhs)? {
                        let Some(src) = self.agg_value(rhs)? else {
                            return Err(refuse(
                                rhs.span,
                                "this value assigned to a header or struct",
                            ));
                        };
                        return self.copy_agg(&dst, &src, *span);
                    }
                }
                if let Some(Place::Field(f)) = self.place_opt(lhs) {
                    if field_t1(&self.l.fields[f].ty).is_none() {
                        if op.is_some() {
                            return Err(refuse(*span, "compound assignment over 64 bits"));
                        }
                        return self.assign_wide(f, rhs, *span);
                    }
                }
                let want = self.lhs_t1(lhs)?;
                let v = match op {
                    Some(op) => {
                        let e = Expr {
                            kind: ExprKind::Binary(
                                *op,
                                Box::new(lhs.clone()),
                                Box::new(rhs.clone()),
                            ),
                            span: *span,
                        };
                        self.expr(&e)?
                    }
                    None => self.expr_as(rhs, want)?,
                };
                let Some(t) = want.or(match v {
                    E::R(_, t) => Some(t),
                    E::Int(_) => None,
                }) else {
                    return Err(refuse(*span, "an assignment to this"));
                };
                let r = self.typed(v, t, rhs.span)?;
                self.store(lhs, r, *span)
            }
            Stmt::Call(e) => self.call(e),
            Stmt::If { cond, then, otherwise, .. } => {
                let (c, _) = self.scalar(cond, Some(T1::Bool))?;
                let jz = self.insns.len();
                self.emit(Insn::JumpIfZero { cond: c, to: 0 });
                self.stmt(then)?;
                match otherwise {
                    None => {
                        let end = self.insns.len();
                        self.patch(jz, end)
                    }
                    Some(o) => {
                        let j = self.insns.len();
                        self.emit(Insn::Jump { to: 0 });
                        let at = self.insns.len();
                        self.patch(jz, at)?;
                        self.stmt(o)?;
                        let end = self.insns.len();
                        self.patch(j, end)
                    }
                }
            }
            Stmt::Block(b) => self.stmts(&b.stmts),
            Stmt::Var(v) => {
                let ty = self.env.resolve(&v.ty, &[])?;
                let name = format!("var {} @{}:{}", v.name.name, v.span.file, v.span.start);
                let Some(t) = ty_t1(&ty) else {
                    // A header (invalid) or struct (zero) local.
                    let loc = alloc_agg(self.scratch, &name, &ty, v.span)?;
                    self.zero_agg(&loc, v.span)?;
                    if let Some(init) = &v.init {
                        self.assign_agg(&loc, init)?;
                    }
                    self.bind(&v.name.name, Bind::Agg(loc));
                    return Ok(());
                };
                let Some(slot) = self.scratch.slot(&name, u32::from(t.width())) else {
                    return Err(refuse(v.span, "more locals than the key has room for"));
                };
                let r = match &v.init {
                    Some(init) => {
                        let x = self.expr_as(init, Some(t))?;
                        self.typed(x, t, init.span)?
                    }
                    None => {
                        let r = self.reg(v.span)?;
                        self.emit(self.konst(r, 0));
                        r
                    }
                };
                self.emit(Insn::Store { src: r, to: slot });
                self.bind(&v.name.name, Bind::Slot(slot, t));
                Ok(())
            }
            Stmt::Const(c) => {
                let ty = self.env.resolve(&c.ty, &[])?;
                let look = |n: &str| match self.lookup(n) {
                    Some(Bind::Const(v)) => Some(v.clone()),
                    _ => None,
                };
                let v = self.env.eval_const(&c.value, Some(&ty), &look)?;
                self.bind(&c.name.name, Bind::Const(v));
                Ok(())
            }
            Stmt::Empty(_) => Ok(()),
            Stmt::Exit(sp) => {
                // Inside an action: set the control's exit flag and leave
                // the action (its copy-out still runs, spec 12.5); the
                // caller then leaves too (see `call_action`).
                let (Some(flag), false) = (self.exit_flag, self.ret.is_empty()) else {
                    return Err(refuse(*sp, "`exit` here"));
                };
                let r = self.reg(*sp)?;
                self.emit(self.konst(r, 1));
                self.emit(Insn::Store { src: r, to: flag });
                self.may_exit = true;
                self.jump_out();
                Ok(())
            }
            Stmt::Return(None, sp) => {
                if self.ret.is_empty() {
                    return Err(refuse(*sp, "`return` here"));
                }
                self.jump_out();
                Ok(())
            }
            Stmt::Return(Some(e), sp) => {
                match self.ret_slot.last().cloned() {
                    Some(Some(Ret::Scalar(slot, t))) => {
                        let x = self.expr_as(e, Some(t))?;
                        let r = self.typed(x, t, e.span)?;
                        self.emit(Insn::Store { src: r, to: slot });
                    }
                    Some(Some(Ret::Agg(dst))) => self.assign_agg(&dst, e)?,
                    _ => return Err(refuse(*sp, "`return` with a value here")),
                }
                self.jump_out();
                Ok(())
            }
            Stmt::Switch { span, .. } => Err(refuse(*span, "`switch` here")),
        }
    }

    fn place_opt(&self, e: &Expr) -> Option<Place> {
        self.place(e).ok().flatten()
    }

    pub fn bind(&mut self, name: &str, b: Bind) {
        if let Some(s) = self.scopes.last_mut() {
            s.push((name.to_string(), b));
        }
    }

    fn std_field(&self, name: &str) -> Option<Slot> {
        let f = self.l.field(Root::Std, name)?;
        match self.l.fields[f].slots.as_slice() {
            [s] => Some(*s),
            _ => None,
        }
    }

    fn call(&mut self, e: &Expr) -> Result<()> {
        let ExprKind::Call { func, args, .. } = &e.kind else {
            return Err(refuse(e.span, "this statement"));
        };
        match &func.kind {
            ExprKind::Member(b, m) if (m.name == "setValid" || m.name == "setInvalid") => {
                let valid = m.name == "setValid";
                if let Some((idx, cands)) = self.dyn_place(b)? {
                    return self.each_elem(&idx, &cands, e.span, |g, p| match p {
                        Place::Header(h) => g.set_valid(*h, valid, e.span),
                        _ => Err(refuse(e.span, "this call")),
                    });
                }
                match self.place(b)? {
                    Some(Place::Header(h)) => self.set_valid(h, valid, e.span),
                    Some(Place::LocalHeader(a)) => {
                        let Some(v) = a.leaves.first().and_then(|l| l.slots.first().copied())
                        else {
                            return Err(refuse(e.span, format!("`{}()` of this", m.name)));
                        };
                        let fields: Vec<Slot> =
                            a.leaves.iter().skip(1).flat_map(|l| l.slots.iter().copied()).collect();
                        self.set_valid_slots(v, &fields, &[], valid, e.span)
                    }
                    _ => Err(refuse(e.span, format!("`{}()` of this", m.name))),
                }
            }
            ExprKind::Name { id, .. } if id.name == "mark_to_drop" => {
                let ok = args.len() == 1
                    && matches!(self.path(&args[0].value, 0)?, Some((Root::Std, p)) if p.is_empty());
                if !ok {
                    return Err(refuse(e.span, "`mark_to_drop` of this"));
                }
                let r = self.reg(e.span)?;
                if let Some(s) = self.std_field("egress_spec") {
                    self.emit(self.konst(r, u64::from(crate::interp::DROP_PORT)));
                    self.emit(Insn::Store { src: r, to: s });
                }
                if let Some(s) = self.std_field("mcast_grp") {
                    self.emit(self.konst(r, 0));
                    self.emit(Insn::Store { src: r, to: s });
                }
                Ok(())
            }
            ExprKind::Name { id, dot_prefix } => {
                if let Some(a) = self.find_action(&id.name, *dot_prefix) {
                    return self.call_action(a, &[], args, e.span);
                }
                if let Some(f) = self.find_function(&id.name) {
                    return self.call_function(f, args, e.span).map(|_| ());
                }
                Err(refuse(e.span, format!("a call of `{}`", id.name)))
            }
            ExprKind::Member(_, m) => Err(refuse(e.span, format!("a call of `.{}()`", m.name))),
            _ => Err(refuse(e.span, "this call")),
        }
    }

    /// `setValid()` (`valid`) or `setInvalid()` of header `h`.
    fn set_valid(&mut self, h: usize, valid: bool, span: Span) -> Result<()> {
        let hd = self.l.headers[h].clone();
        let mut fields = Vec::new();
        for &f in &hd.fields {
            let fl = &self.l.fields[f];
            fields.extend(fl.slots.iter().chain(fl.len.iter()).copied());
        }
        // A valid union member invalidates the others (the interpreter's
        // write through a union).
        let others: Vec<Slot> = match hd.union.and_then(|u| self.l.unions.get(u)) {
            Some(u) => u
                .members
                .iter()
                .filter(|&&o| o != h)
                .filter_map(|&o| self.l.headers.get(o).map(|x| x.valid))
                .collect(),
            None => Vec::new(),
        };
        self.set_valid_slots(hd.valid, &fields, &others, valid, span)
    }

    /// `setValid()`/`setInvalid()` of the header with validity bit
    /// `v` and field slots `fields`; `others` are invalidated by
    /// `setValid()` (a union's other members).
    fn set_valid_slots(
        &mut self,
        v: Slot,
        fields: &[Slot],
        others: &[Slot],
        valid: bool,
        span: Span,
    ) -> Result<()> {
        let save = self.next_reg;
        let r = self.reg(span)?;
        if !valid {
            self.emit(self.konst(r, 0));
            self.emit(Insn::Store { src: r, to: v });
            self.next_reg = save;
            return Ok(());
        }
        // An invalid header is zeroed first (the interpreter's, and
        // bmv2's, setValid).
        self.emit(Insn::Load { dst: r, from: v });
        let z = self.reg(span)?;
        self.emit(Insn::Not { dst: z, a: r, width: 1 });
        let jz = self.insns.len();
        self.emit(Insn::JumpIfZero { cond: z, to: 0 });
        self.emit(self.konst(r, 0));
        for &s in fields {
            self.emit(Insn::Store { src: r, to: s });
        }
        let end = self.insns.len();
        self.patch(jz, end)?;
        self.emit(self.konst(r, 1));
        self.emit(Insn::Store { src: r, to: v });
        self.emit(self.konst(r, 0));
        for &o in others {
            self.emit(Insn::Store { src: r, to: o });
        }
        self.next_reg = save;
        Ok(())
    }

    /// The type of the header-vector location `root`/`path`.
    fn hv_ty(&self, root: Root, path: &str) -> Option<Ty> {
        let i = Root::ALL.iter().position(|r| *r == root)?;
        let mut t = self.l.types.get(i)?.clone();
        if path.is_empty() {
            return Some(t);
        }
        for comp in path.split('.') {
            let (name, idx) = match comp.split_once('[') {
                Some((n, rest)) => (n, rest.strip_suffix(']')?.parse::<usize>().ok()),
                None => (comp, None),
            };
            t = match &t {
                Ty::Header(a) | Ty::Struct(a) | Ty::HeaderUnion(a) => a.field(name)?.clone(),
                _ => return None,
            };
            if let Some(k) = idx {
                t = match &t {
                    Ty::Stack(e, n) if (k as u32) < *n => (**e).clone(),
                    _ => return None,
                };
            }
        }
        Some(t)
    }

    /// The header or struct `e` names in the header vector, flattened.
    fn hv_agg(&self, e: &Expr) -> Result<Option<Agg>> {
        let Some((root, path)) = self.path(e, 0)? else { return Ok(None) };
        if self.l.field(root, &path).is_some() {
            return Ok(None);
        }
        let Some(t) = self.hv_ty(root, &path) else { return Ok(None) };
        if !matches!(t, Ty::Header(_) | Ty::Struct(_)) {
            return Ok(None);
        }
        let mut shape = Vec::new();
        flatten(&t, "", &mut shape, e.span, 0)?;
        let join = |rel: &str| {
            let rel = rel.strip_prefix('.').unwrap_or(rel);
            match (path.is_empty(), rel.is_empty()) {
                (true, _) => rel.to_string(),
                (false, true) => path.clone(),
                (false, false) => format!("{path}.{rel}"),
            }
        };
        let mut leaves = Vec::with_capacity(shape.len());
        for (rel, valid, width, t1) in shape {
            let full = join(&rel);
            let slots = if valid {
                let Some(h) = self.l.header(root, &full) else {
                    return Err(refuse(e.span, "this header"));
                };
                if self.l.headers[h].union.is_some() {
                    return Err(refuse(e.span, "a whole header union member"));
                }
                vec![self.l.headers[h].valid]
            } else {
                let Some(f) = self.l.field(root, &full) else {
                    return Err(refuse(e.span, "this part of a header or struct"));
                };
                if matches!(self.l.fields[f].ty, FieldTy::Varbit(_)) {
                    return Err(refuse(e.span, "a header with a varbit as a value"));
                }
                self.l.fields[f].slots.clone()
            };
            leaves.push(Leaf { rel, valid, width, t: t1, slots });
        }
        Ok(Some(Agg { leaves }))
    }

    /// The aggregate location `e` names (a local's, the header vector's).
    fn agg_place(&self, e: &Expr) -> Result<Option<Agg>> {
        if self.local_agg(e).is_some() {
            return Ok(match self.place(e)? {
                Some(Place::LocalHeader(a) | Place::LocalAgg(a)) => Some(a),
                _ => None,
            });
        }
        self.hv_agg(e)
    }

    /// The aggregate value `e` computes: a location, or a call of a
    /// function returning one.
    fn agg_value(&mut self, e: &Expr) -> Result<Option<Agg>> {
        if let ExprKind::Call { func, args, .. } = &e.kind {
            if let ExprKind::Name { id, .. } = &func.kind {
                if let Some(f) = self.find_function(&id.name) {
                    return match self.call_function_any(f, args, e.span)? {
                        Some(Ret::Agg(a)) => Ok(Some(a)),
                        _ => Ok(None),
                    };
                }
            }
        }
        self.agg_place(e)
    }

    /// Copies `src` into `dst` (same shape), leaf by leaf.
    fn copy_agg(&mut self, dst: &Agg, src: &Agg, span: Span) -> Result<()> {
        let same = dst.leaves.len() == src.leaves.len()
            && dst.leaves.iter().zip(&src.leaves).all(|(a, b)| {
                a.valid == b.valid
                    && a.width == b.width
                    && a.slots.len() == b.slots.len()
                    && a.slots.iter().zip(&b.slots).all(|(x, y)| x.width == y.width)
            });
        if !same {
            return Err(refuse(span, "an assignment between values of different shapes"));
        }
        let save = self.next_reg;
        let r = self.reg(span)?;
        for (d, s) in dst.leaves.iter().zip(&src.leaves) {
            for (to, from) in d.slots.iter().zip(&s.slots) {
                self.emit(Insn::Load { dst: r, from: *from });
                self.emit(Insn::Store { src: r, to: *to });
            }
        }
        self.next_reg = save;
        Ok(())
    }

    /// `dst = rhs` for an aggregate `dst`: from another aggregate, or
    /// from a list or `{ f = v }` initializer of scalars (a header so
    /// initialized becomes valid).
    fn assign_agg(&mut self, dst: &Agg, rhs: &Expr) -> Result<()> {
        let items: Vec<(Option<String>, &Expr)> = match &rhs.kind {
            ExprKind::List(v) => v.iter().map(|e| (None, e)).collect(),
            ExprKind::StructInit(v) => {
                v.iter().map(|(n, e)| (Some(format!(".{}", n.name)), e)).collect()
            }
            _ => {
                let Some(src) = self.agg_value(rhs)? else {
                    return Err(refuse(rhs.span, "this value assigned to a header or struct"));
                };
                return self.copy_agg(dst, &src, rhs.span);
            }
        };
        let header = dst.leaves.first().is_some_and(|l| l.valid && l.rel.is_empty());
        let fields: Vec<&Leaf> =
            dst.leaves.iter().filter(|l| !(l.valid && l.rel.is_empty())).collect();
        if fields.iter().any(|l| l.valid) || fields.len() != items.len() {
            return Err(refuse(rhs.span, "this initializer"));
        }
        // Evaluate every item before writing (an item may read the target).
        let save = self.next_reg;
        let mut vals = Vec::with_capacity(items.len());
        for (k, (name, e)) in items.iter().enumerate() {
            let leaf = match name {
                None => fields[k],
                Some(n) => match fields.iter().find(|l| &l.rel == n) {
                    Some(l) => l,
                    None => return Err(refuse(e.span, "this initializer")),
                },
            };
            let (Some(t), [slot]) = (leaf.t, leaf.slots.as_slice()) else {
                return Err(refuse(e.span, "an initializer of a field over 64 bits"));
            };
            let x = self.expr(e)?;
            let r = self.typed(x, t, e.span)?;
            vals.push((r, *slot));
        }
        for (r, slot) in vals {
            self.emit(Insn::Store { src: r, to: slot });
        }
        if header {
            if let Some(v) = dst.leaves.first().and_then(|l| l.slots.first().copied()) {
                let r = self.reg(rhs.span)?;
                self.emit(self.konst(r, 1));
                self.emit(Insn::Store { src: r, to: v });
            }
        }
        self.next_reg = save;
        Ok(())
    }

    /// Writes zero to every leaf (an invalid header, a zero struct).
    fn zero_agg(&mut self, a: &Agg, span: Span) -> Result<()> {
        let save = self.next_reg;
        let r = self.reg(span)?;
        self.emit(self.konst(r, 0));
        for l in &a.leaves {
            for s in &l.slots {
                self.emit(Insn::Store { src: r, to: *s });
            }
        }
        self.next_reg = save;
        Ok(())
    }

    /// `stack[i]...` with an index that is not a constant: the index
    /// expression and the location for each element (all of one kind).
    fn dyn_place(&self, e: &Expr) -> Result<Option<(Expr, Vec<Place>)>> {
        let mut rest = Vec::new();
        let mut cur = e;
        while let ExprKind::Member(b, m) = &cur.kind {
            rest.push(m.name.clone());
            cur = b;
        }
        let ExprKind::Index(base, i) = &cur.kind else { return Ok(None) };
        if self.const_value(i).is_some() {
            return Ok(None);
        }
        let Some((root, p)) = self.path(base, 0)? else { return Ok(None) };
        let Some(st) = self.l.stack(root, &p) else { return Ok(None) };
        rest.reverse();
        let tail: String = rest.iter().map(|m| format!(".{m}")).collect();
        let mut cands = Vec::new();
        for k in 0..self.l.stacks[st].elems.len() {
            let path = format!("{p}[{k}]{tail}");
            if let Some(f) = self.l.field(root, &path) {
                cands.push(Place::Field(f));
            } else if let Some(h) = self.l.header(root, &path) {
                cands.push(Place::Header(h));
            } else {
                return Err(refuse(e.span, "this element of a stack with a run-time index"));
            }
        }
        if cands.is_empty() {
            return Err(refuse(e.span, "an empty stack"));
        }
        Ok(Some(((**i).clone(), cands)))
    }

    /// Runs `f` on the element a run-time index selects (none when it is
    /// out of range: reads then give the default, writes are lost, as in
    /// the interpreter).
    fn each_elem(
        &mut self,
        idx: &Expr,
        cands: &[Place],
        span: Span,
        mut f: impl FnMut(&mut Self, &Place) -> Result<()>,
    ) -> Result<()> {
        let save = self.next_reg;
        let (ri, ti) = self.scalar(idx, Some(T1::Bits { w: 32, signed: false }))?;
        if ti.signed() {
            return Err(refuse(idx.span, "a signed stack index"));
        }
        let k = self.reg(span)?;
        let c = self.reg(span)?;
        for (n, p) in cands.iter().enumerate() {
            if ti.width() < 64 && (n as u64) > ones(ti.width()) {
                break;
            }
            self.emit(self.konst(k, n as u64));
            self.emit(Insn::Bin { op: KOp::Eq, dst: c, a: ri, b: k, width: ti.width() });
            let j = self.insns.len();
            self.emit(Insn::JumpIfZero { cond: c, to: 0 });
            f(self, p)?;
            let end = self.insns.len();
            self.patch(j, end)?;
        }
        self.next_reg = save;
        Ok(())
    }

    /// The scalar type of an element field (`None`: not all the same).
    fn dyn_t1(&self, cands: &[Place]) -> Option<T1> {
        let mut t = None;
        for p in cands {
            let x = match p {
                Place::Field(f) => field_t1(&self.l.fields[*f].ty)?,
                Place::Header(_) => T1::Bool,
                _ => return None,
            };
            if t.is_some_and(|y| y != x) {
                return None;
            }
            t = Some(x);
        }
        t
    }

    /// Reads `stack[i].f` (or `stack[i].isValid()`) into a new register.
    fn dyn_read(&mut self, idx: &Expr, cands: &[Place], span: Span) -> Result<E> {
        let Some(t) = self.dyn_t1(cands) else {
            return Err(refuse(span, "this element of a stack with a run-time index"));
        };
        let dst = self.reg(span)?;
        self.emit(self.konst(dst, 0));
        self.each_elem(idx, cands, span, |g, p| {
            let from = match p {
                Place::Field(f) => match g.l.fields[*f].slots.as_slice() {
                    [s] => *s,
                    _ => return Err(refuse(span, "a field over 64 bits in an expression")),
                },
                Place::Header(h) => g.l.headers[*h].valid,
                _ => return Err(refuse(span, "this element")),
            };
            g.emit(Insn::Load { dst, from });
            Ok(())
        })?;
        Ok(E::R(dst, t))
    }

    fn find_function(&self, name: &str) -> Option<&'a FunctionDecl> {
        self.prog.decls.iter().find_map(|d| match d {
            Decl::Function(f) if f.name.name == name => Some(f),
            _ => None,
        })
    }

    pub fn find_action(&self, name: &str, global: bool) -> Option<&'a ActionDecl> {
        if !global {
            if let Some(a) = self.local_actions.iter().find(|a| a.name.name == name) {
                return Some(a);
            }
        }
        self.prog.decls.iter().find_map(|d| match d {
            Decl::Action(a) if a.name.name == name => Some(a),
            _ => None,
        })
    }

    /// Inlines action `a`: `data` binds its directionless parameters
    /// after `args` (a table entry's action data); `args` the others,
    /// in order, with copy-in/copy-out through scratch slots.
    pub fn call_action(
        &mut self,
        a: &ActionDecl,
        data: &[Value],
        args: &[Arg],
        span: Span,
    ) -> Result<()> {
        let c = Callee { name: &a.name.name, params: &a.params, body: &a.body, span: a.span };
        self.inline(c, data, args, span, None)
    }

    /// Inlines function `f` (not generic; returning a scalar or nothing);
    /// its result's register.
    fn call_function(
        &mut self,
        f: &FunctionDecl,
        args: &[Arg],
        span: Span,
    ) -> Result<Option<(Reg, T1)>> {
        match self.call_function_any(f, args, span)? {
            None => Ok(None),
            Some(Ret::Scalar(slot, t)) => {
                let r = self.reg(span)?;
                self.emit(Insn::Load { dst: r, from: slot });
                Ok(Some((r, t)))
            }
            Some(Ret::Agg(_)) => Err(refuse(span, "a header or struct as a value here")),
        }
    }

    /// Inlines function `f` (not generic); where its result is.
    fn call_function_any(
        &mut self,
        f: &FunctionDecl,
        args: &[Arg],
        span: Span,
    ) -> Result<Option<Ret>> {
        if !f.type_params.is_empty() {
            return Err(refuse(f.name.span, "a generic function"));
        }
        let name = format!("return {} @{}", f.name.name, f.span.start);
        let ret = match self.env.resolve(&f.ret, &[])? {
            Ty::Void => None,
            t => match ty_t1(&t) {
                Some(t1) => {
                    let Some(slot) = self.scratch.slot(&name, u32::from(t1.width())) else {
                        return Err(refuse(span, "more locals than the key has room for"));
                    };
                    Some(Ret::Scalar(slot, t1))
                }
                None => Some(Ret::Agg(alloc_agg(self.scratch, &name, &t, f.ret.span)?)),
            },
        };
        let c = Callee { name: &f.name.name, params: &f.params, body: &f.body, span: f.span };
        self.inline(c, &[], args, span, ret.clone())?;
        Ok(ret)
    }

    fn inline(
        &mut self,
        a: Callee<'_>,
        data: &[Value],
        args: &[Arg],
        span: Span,
        ret: Option<Ret>,
    ) -> Result<()> {
        if args.iter().any(|x| x.name.is_some()) {
            return Err(refuse(span, "named arguments"));
        }
        self.inlined += 1;
        if self.call_depth >= MAX_CALL_DEPTH
            || self.inlined > MAX_INLINED
            || self.insns.len() > MAX_INSNS
        {
            return Err(refuse(span, "calls nested or repeated this much (recursion?)"));
        }
        if args.len() + data.len() != a.params.len() {
            return Err(refuse(span, "a call with a different number of arguments"));
        }
        let mut binds = Vec::new();
        let mut outs = Vec::new();
        let mut agg_outs: Vec<(Expr, Agg)> = Vec::new();
        for (i, p) in a.params.iter().enumerate() {
            let ty = self.env.resolve(&p.ty, &[])?;
            if i >= args.len() {
                let v = &data[i - args.len()];
                binds.push((
                    p.name.name.clone(),
                    Bind::Const(crate::value::coerce(v, &ty).unwrap_or_else(|_| v.clone())),
                ));
                continue;
            }
            let arg = &args[i].value;
            if p.dir == Direction::None {
                if let Some(v) = self.const_value(arg) {
                    let v =
                        crate::value::coerce(&v, &ty).map_err(|m| Diagnostic::new(arg.span, m))?;
                    binds.push((p.name.name.clone(), Bind::Const(v)));
                    continue;
                }
            }
            let name = format!("param {}.{} @{}", a.name, p.name.name, a.span.start);
            let Some(t) = ty_t1(&ty) else {
                // A header or struct: copied in (or invalid for `out`),
                // copied out.
                let loc = alloc_agg(self.scratch, &name, &ty, p.span)?;
                if p.dir == Direction::Out || matches!(arg.kind, ExprKind::DontCare) {
                    self.zero_agg(&loc, span)?;
                } else {
                    let Some(src) = self.agg_value(arg)? else {
                        return Err(refuse(arg.span, "this argument"));
                    };
                    self.copy_agg(&loc, &src, arg.span)?;
                }
                if matches!(p.dir, Direction::Out | Direction::InOut)
                    && !matches!(arg.kind, ExprKind::DontCare)
                {
                    agg_outs.push((arg.clone(), loc.clone()));
                }
                binds.push((p.name.name.clone(), Bind::Agg(loc)));
                continue;
            };
            let Some(slot) = self.scratch.slot(&name, u32::from(t.width())) else {
                return Err(refuse(p.span, "more locals than the key has room for"));
            };
            let save = self.next_reg;
            let r = match p.dir {
                Direction::Out => {
                    if matches!(arg.kind, ExprKind::DontCare) {
                        let r = self.reg(span)?;
                        self.emit(self.konst(r, 0));
                        r
                    } else {
                        let r = self.reg(span)?;
                        self.emit(self.konst(r, 0));
                        outs.push((arg.clone(), slot));
                        r
                    }
                }
                _ => {
                    let x = self.expr_as(arg, Some(t))?;
                    let r = self.typed(x, t, arg.span)?;
                    if p.dir == Direction::InOut {
                        outs.push((arg.clone(), slot));
                    }
                    r
                }
            };
            self.emit(Insn::Store { src: r, to: slot });
            self.next_reg = save;
            binds.push((p.name.name.clone(), Bind::Slot(slot, t)));
        }
        // The action sees its parameters and the globals, not the
        // caller's locals; the control's own bindings stay (its locals).
        let base = self.scopes.first().cloned().unwrap_or_default();
        let saved = std::mem::replace(&mut self.scopes, vec![base, binds]);
        let exited_before = self.may_exit;
        self.may_exit = false;
        self.ret.push(Vec::new());
        self.ret_slot.push(ret);
        self.call_depth += 1;
        let res = self.stmts(&a.body.stmts);
        self.call_depth -= 1;
        self.ret_slot.pop();
        self.scopes = saved;
        let rets = self.ret.pop().unwrap_or_default();
        res?;
        let at = self.insns.len();
        for j in rets {
            self.patch(j, at)?;
        }
        for (arg, slot) in outs {
            let save = self.next_reg;
            let r = self.reg(span)?;
            self.emit(Insn::Load { dst: r, from: slot });
            self.store(&arg, r, span)?;
            self.next_reg = save;
        }
        for (arg, loc) in agg_outs {
            let Some(dst) = self.agg_place(&arg)? else {
                return Err(refuse(arg.span, "this argument"));
            };
            self.copy_agg(&dst, &loc, span)?;
        }
        if self.may_exit {
            // The action may have exited: so does its caller.
            if let Some(flag) = self.exit_flag {
                let save = self.next_reg;
                let r = self.reg(span)?;
                self.emit(Insn::Load { dst: r, from: flag });
                self.emit(Insn::Not { dst: r, a: r, width: 1 });
                let j = self.insns.len();
                self.emit(Insn::JumpIfZero { cond: r, to: 0 });
                self.push_out(j);
                self.next_reg = save;
            }
        }
        self.may_exit |= exited_before;
        Ok(())
    }

    /// A jump out of the innermost action being inlined (or, at the top,
    /// to the end of the program).
    fn jump_out(&mut self) {
        let j = self.insns.len();
        self.emit(Insn::Jump { to: 0 });
        self.push_out(j);
    }

    fn push_out(&mut self, j: usize) {
        match self.ret.last_mut() {
            Some(v) => v.push(j),
            None => self.end.push(j),
        }
    }

    /// Compiles `cond` and stores it (0 or 1) into `slot`.
    pub fn cond_into(&mut self, cond: &Expr, slot: Slot) -> Result<()> {
        let (r, _) = self.scalar(cond, Some(T1::Bool))?;
        self.emit(Insn::Store { src: r, to: slot });
        self.next_reg = 0;
        Ok(())
    }

    /// Compiles `e` (a table key) into `slot`.
    pub fn value_into(&mut self, e: &Expr, t: T1, slot: Slot) -> Result<()> {
        let x = self.expr_as(e, Some(t))?;
        let r = self.typed(x, t, e.span)?;
        self.emit(Insn::Store { src: r, to: slot });
        self.next_reg = 0;
        Ok(())
    }

    /// The layout field `e` denotes, if it is one.
    pub fn field_index(&self, e: &Expr) -> Result<Option<usize>> {
        Ok(match self.place(e)? {
            Some(Place::Field(f)) => Some(f),
            _ => None,
        })
    }

    /// The layout header `e` denotes, if it is one.
    pub fn header_index(&self, e: &Expr) -> Result<Option<usize>> {
        Ok(match self.place(e)? {
            Some(Place::Header(h)) => Some(h),
            _ => None,
        })
    }

    /// Where a table key lives when it is a plain location (a field, a
    /// local, a header's validity); `None`: it must be computed.
    pub fn key_place(&self, e: &Expr) -> Result<Option<crate::coretable::KeyPlace>> {
        use crate::coretable::KeyPlace;
        if let ExprKind::Call { func, args, .. } = &e.kind {
            if let ExprKind::Member(b, m) = &func.kind {
                if m.name == "isValid" && args.is_empty() {
                    if let Some(Place::Header(h)) = self.place(b)? {
                        let s = self.l.headers[h].valid;
                        return Ok(Some(KeyPlace { slots: vec![s], width: 1 }));
                    }
                }
            }
            return Ok(None);
        }
        if !matches!(e.kind, ExprKind::Name { .. } | ExprKind::Member(..) | ExprKind::Index(..)) {
            return Ok(None);
        }
        Ok(match self.place(e)? {
            Some(Place::Local(s, t)) => {
                Some(KeyPlace { slots: vec![s], width: u32::from(t.width()) })
            }
            Some(Place::Field(f)) => {
                let fl = &self.l.fields[f];
                if matches!(fl.ty, FieldTy::Varbit(_)) {
                    return Err(refuse(e.span, "a varbit table key"));
                }
                Some(KeyPlace { slots: fl.slots.clone(), width: fl.ty.width() })
            }
            _ => None,
        })
    }
}

pub fn stmt_span(s: &Stmt) -> Span {
    match s {
        Stmt::Assign { span, .. } | Stmt::If { span, .. } | Stmt::Switch { span, .. } => *span,
        Stmt::Call(e) => e.span,
        Stmt::Block(b) => b.span,
        Stmt::Exit(s) | Stmt::Return(_, s) | Stmt::Empty(s) => *s,
        Stmt::Var(v) => v.span,
        Stmt::Const(c) => c.span,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        let src = r#"
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<100> b; }
struct headers { h_t h; }
struct meta_t { bit<4> x; }
"#;
        let loaded = crate::parse::load_str("t.p4", src).unwrap();
        let env = TypeEnv::new(&loaded.program).unwrap();
        let h = env.named("headers").unwrap();
        let m = env.named("meta_t").unwrap();
        let s = env.named("standard_metadata_t").unwrap();
        Layout::new(&loaded.program, &env, &h, &m, &s, Span::default()).unwrap()
    }

    #[test]
    fn scratch_slots_follow_the_layout_and_are_stable_by_name() {
        let l = layout();
        let mut sc = Scratch::new(&l);
        let a = sc.slot("x", 8).unwrap();
        let used = l.fields.iter().flat_map(|f| f.slots.iter()).map(|s| s.word).max().unwrap();
        assert!(a.word > used.max(l.cursor.word), "{a:?}");
        assert_eq!(sc.slot("x", 8), Some(a));
        // The same name with another width is refused, not aliased.
        assert_eq!(sc.slot("x", 9), None);
        let b = sc.slot("y", 60).unwrap();
        assert!(b.word > a.word, "60 bits do not fit after 8 in the same word: {b:?}");
        assert_eq!(sc.slot("z", 0), None);
        assert_eq!(sc.slot("z", 65), None);
        // Filling the key ends in `None`, never a slot outside it.
        let mut n = 0;
        while sc.slot(&format!("f{n}"), 64).is_some() {
            n += 1;
        }
        assert!(n < KEY_WORDS);
    }
}
