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
//! bits; a `bit<W>` over 64 bits (a field, local or parameter) may only
//! be copied from one of the same shape or set to a constant, compared with `==`
//! and `!=`, and be a table key (several slots). Header, struct, stack
//! and tuple values ([`Agg`]: locals, whole assignments, initializers
//! nested as the type is, `?:` of them, parameters, results) are
//! flattened into leaves and copied slot by slot, and compared leaf by
//! leaf as the interpreter compares them (two invalid headers are equal
//! whatever their fields); a union's `isValid()` is whether any member
//! is; stack elements of the header vector at run-time indices (their
//! fields, validity, or whole, read and written) are selected by
//! comparing the index with each element's, the index of an assigned
//! location computed before the value.
//! A `varbit` is such a value too, of two leaves (its bits and its
//! length): copied like one, compared with `==`/`!=` (`varbit`).
//! Extern calls (`hash`, `digest`, register `read`/`write`,
//! `counter.count`, in `ext`) are cuts between key programs
//! ([`Gen::finish_ops`], [`super::externs`]).
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

mod varbit;

use std::collections::HashMap;

// Extern calls (`hash`, `digest`, register and counter methods).
mod ext;

use sluice_core::keyop::{ones, BinOp as KOp, Insn, KeyProg, Reg, Slot, MAX_INSNS, REGS};
use sluice_packet::key::{FlowMask, KEY_WORDS};

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
    /// The extern call sites compiled so far ([`super::externs`]).
    pub ext: super::externs::ExtCalls,
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
        Scratch {
            next_bit: (max + 1) * 64,
            named: HashMap::new(),
            ext: super::externs::ExtCalls::default(),
        }
    }

    /// Every key bit scratch slots may take (the words after the
    /// layout's): what `Front::scratch` tells the core.
    pub fn bits(l: &Layout) -> FlowMask {
        let first = (Scratch::new(l).next_bit / 64) as usize;
        let mut m = FlowMask::ZERO;
        for w in m.words.iter_mut().skip(first) {
            *w = u64::MAX;
        }
        m
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
    /// Its scalar type (`None` past 64 bits and for a varbit).
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
/// valid, width, scalar type)`.
type Shape = Vec<(String, bool, u32, Option<T1>)>;

fn flatten(t: &Ty, rel: &str, out: &mut Shape, span: Span, d: u32) -> Result<()> {
    if d > MAX_DEPTH {
        return Err(refuse(span, "a type nested this deep"));
    }
    if out.len() > MAX_LEAVES {
        return Err(refuse(span, "a value with this many fields"));
    }
    match t {
        Ty::Header(a) => {
            out.push((rel.to_string(), true, 1, Some(T1::Bool)));
            for (n, ft) in &a.fields {
                match ft {
                    Ty::Bits { width, signed } => {
                        out.push((format!("{rel}.{n}"), false, *width, T1::bits(*width, *signed)))
                    }
                    Ty::Varbit(max) => varbit::shape(&format!("{rel}.{n}"), *max, out),
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
        // A stack's elements (its next index is not part of the value
        // here: `.next`, `.last` and `.lastIndex` are refused outside the
        // parser, so nothing after it reads the index).
        Ty::Stack(e, n) => {
            for k in 0..*n {
                if out.len() > MAX_LEAVES {
                    return Err(refuse(span, "a value with this many fields"));
                }
                flatten(e, &format!("{rel}[{k}]"), out, span, d + 1)?;
            }
        }
        // A tuple's items, named by position (`.0`, `.1`).
        Ty::Tuple(ts) => {
            for (k, t) in ts.iter().enumerate() {
                flatten(t, &format!("{rel}.{k}"), out, span, d + 1)?;
            }
        }
        Ty::Bits { width, signed } => {
            out.push((rel.to_string(), false, *width, T1::bits(*width, *signed)))
        }
        Ty::Varbit(max) => varbit::shape(rel, *max, out),
        other => match ty_t1(other) {
            Some(t) => out.push((rel.to_string(), false, u32::from(t.width()), Some(t))),
            None => return Err(refuse(span, format!("a value of type {other} here"))),
        },
    }
    Ok(())
}

/// Whether two aggregates have leaves of the same kinds and slot widths.
fn same_shape(a: &Agg, b: &Agg) -> bool {
    a.leaves.len() == b.leaves.len()
        && a.leaves.iter().zip(&b.leaves).all(|(x, y)| {
            x.valid == y.valid
                && x.width == y.width
                && x.slots.len() == y.slots.len()
                && x.slots.iter().zip(&y.slots).all(|(s, t)| s.width == t.width)
        })
}

/// The immediate parts of an aggregate, each named by its path
/// component (`.f`, `[0]`), re-rooted; and a header's validity slot.
fn parts(a: &Agg) -> (Option<Slot>, Vec<(String, Agg)>) {
    let mut leaves = &a.leaves[..];
    let mut valid = None;
    if let Some(first) = leaves.first() {
        if first.valid && first.rel.is_empty() {
            valid = first.slots.first().copied();
            leaves = &leaves[1..];
        }
    }
    let mut out: Vec<(String, Agg)> = Vec::new();
    for l in leaves {
        let comp = first_component(&l.rel);
        let leaf = Leaf { rel: l.rel[comp.len()..].to_string(), ..l.clone() };
        match out.last_mut() {
            Some((c, p)) if *c == comp => p.leaves.push(leaf),
            _ => out.push((comp.to_string(), Agg { leaves: vec![leaf] })),
        }
    }
    (valid, out)
}

/// `.f` of `.f.g` or `.f[1]`; `[1]` of `[1].g`.
fn first_component(rel: &str) -> &str {
    let end = if rel.starts_with('[') {
        rel.find(']').map_or(rel.len(), |i| i + 1)
    } else {
        rel.char_indices()
            .skip(1)
            .find(|(_, c)| *c == '.' || *c == '[')
            .map_or(rel.len(), |(i, _)| i)
    };
    &rel[..end]
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
    /// A `bit<W>` local (or part of one) with `W` over 64: its slots,
    /// most significant first, and `W`.
    LocalWide(Vec<Slot>, u32),
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
/// Most leaves of one flattened value (more would not fit the key).
const MAX_LEAVES: usize = 2048;
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
    /// The extern object instances the control may call, by name.
    pub instances: Vec<(String, super::externs::Instance)>,
    /// Extern calls: where the program is cut for each (instruction
    /// index), its site id and span.
    cuts: Vec<(usize, u32, Span)>,
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
            instances: Vec::new(),
            cuts: Vec::new(),
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

    /// The program compiled so far (one key program: an extern call is
    /// refused here, see [`Gen::finish_ops`]).
    pub fn finish(mut self, span: Span) -> Result<KeyProg> {
        if let Some((_, _, sp)) = self.cuts.first() {
            return Err(refuse(*sp, "an extern call here"));
        }
        let at = self.insns.len();
        for j in std::mem::take(&mut self.end) {
            self.patch(j, at)?;
        }
        KeyProg::new(self.insns)
            .map_err(|e| Diagnostic::new(span, format!("lowering: key program refused: {e}")))
    }

    /// The program compiled so far as ops: key programs with each
    /// extern call between them (`Op::Group(site)`).
    pub fn finish_ops(mut self, span: Span) -> Result<Vec<sluice_core::op::Op>> {
        use sluice_core::op::Op;
        let at = self.insns.len();
        for j in std::mem::take(&mut self.end) {
            self.patch(j, at)?;
        }
        let mut ops = Vec::new();
        let mut from = 0;
        let cuts = std::mem::take(&mut self.cuts);
        let ends = cuts.iter().map(|c| (c.0, Some(c.1))).chain([(self.insns.len(), None)]);
        for (to, site) in ends {
            let mut seg: Vec<Insn> = self.insns.get(from..to).unwrap_or(&[]).to_vec();
            for i in &mut seg {
                if let Insn::Jump { to: t } | Insn::JumpIfZero { to: t, .. } = i {
                    let rel = usize::from(*t).checked_sub(from).filter(|&r| r <= to - from);
                    let Some(rel) = rel else {
                        return Err(refuse(span, "a jump across an extern call"));
                    };
                    *t = rel as u16;
                }
            }
            if !seg.is_empty() {
                let p = KeyProg::new(seg).map_err(|e| {
                    Diagnostic::new(span, format!("lowering: key program refused: {e}"))
                })?;
                ops.push(Op::Key(std::sync::Arc::new(p)));
            }
            if let Some(id) = site {
                ops.push(Op::Group(id));
            }
            from = to;
        }
        Ok(ops)
    }

    pub fn is_empty(&self) -> bool {
        self.insns.is_empty() && self.cuts.is_empty()
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
    /// Members and constant stack indices (`tmp[1].a`) both walk down;
    /// an index that is not a constant gives `None`.
    fn local_agg(&self, e: &Expr) -> Option<(&Agg, String)> {
        let mut rest = Vec::new();
        let mut cur = e;
        loop {
            match &cur.kind {
                ExprKind::Member(b, m) => {
                    rest.push(format!(".{}", m.name));
                    cur = b;
                }
                ExprKind::Index(b, i) => {
                    let k = self.const_value(i)?.to_u64()?;
                    rest.push(format!("[{k}]"));
                    cur = b;
                }
                _ => break,
            }
        }
        let ExprKind::Name { id, dot_prefix: false } = &cur.kind else { return None };
        let Some(Bind::Agg(a)) = self.lookup(&id.name) else { return None };
        rest.reverse();
        Some((a, rest.concat()))
    }

    /// Whether `e` is inside a local aggregate below a stack index that
    /// is not a constant (refused: only the header vector's stacks are
    /// indexed at run time).
    fn local_dyn_index(&self, e: &Expr) -> bool {
        let mut cur = e;
        let mut dynamic = false;
        loop {
            match &cur.kind {
                ExprKind::Member(b, _) => cur = b,
                ExprKind::Index(b, i) => {
                    dynamic |= self.const_value(i).is_none();
                    cur = b;
                }
                _ => break,
            }
        }
        dynamic
            && matches!(&cur.kind, ExprKind::Name { id, dot_prefix: false }
                if matches!(self.lookup(&id.name), Some(Bind::Agg(_))))
    }

    fn place(&self, e: &Expr) -> Result<Option<Place>> {
        if self.local_dyn_index(e) {
            return Err(refuse(e.span, "a local stack's element at a run-time index"));
        }
        if let Some((a, rel)) = self.local_agg(e) {
            let sub = a.sub(&rel);
            return Ok(Some(match sub.leaves.as_slice() {
                [] => return Err(refuse(e.span, "no such member")),
                [l] if !l.valid && l.rel.is_empty() => match (l.slots.as_slice(), l.t) {
                    ([s], Some(t)) => Place::Local(*s, t),
                    (slots, None) if l.width > 64 => Place::LocalWide(slots.to_vec(), l.width),
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
                        if let FieldTy::Varbit(_) = fl.ty {
                            return Err(refuse(e.span, varbit::IN_EXPRESSION));
                        }
                        let (Some(t), [s]) = (field_t1(&fl.ty), fl.slots.as_slice()) else {
                            return Err(refuse(e.span, "a field over 64 bits in an expression"));
                        };
                        let s = *s;
                        let r = self.reg(e.span)?;
                        self.emit(Insn::Load { dst: r, from: s });
                        Ok(E::R(r, t))
                    }
                    Some(Place::LocalAgg(a)) if varbit::is_varbit(&a) => {
                        Err(refuse(e.span, varbit::IN_EXPRESSION))
                    }
                    Some(Place::Header(_) | Place::LocalHeader(_) | Place::LocalAgg(_)) => {
                        Err(refuse(e.span, "a header or struct as a value"))
                    }
                    Some(Place::LocalWide(..)) => {
                        Err(refuse(e.span, "a local over 64 bits in an expression"))
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
                        if let Some(u) = self.union_of(b)? {
                            return self.union_valid(u, e.span);
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
                if let Some((slots, width)) = self.wide_place(a)? {
                    return self.wide_slice(&slots, width, hi, lo, e.span);
                }
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
        if let Some(r) = self.varbit_eq(op, a, b, e.span)? {
            return Ok(r);
        }
        if matches!(op, BinOp::Eq | BinOp::Ne) {
            if self.is_agg(a) || self.is_agg(b) {
                return self.agg_eq(op == BinOp::Eq, a, b, e.span);
            }
            if self.wide_place(a)?.is_some() || self.wide_place(b)?.is_some() {
                return self.wide_eq(op == BinOp::Eq, a, b, e.span);
            }
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
            BinOp::Div | BinOp::Mod => (self.divisor(op, b, t)?, false, t),
            _ => return Err(refuse(span, format!("operator {op:?} in a compiled pipeline"))),
        };
        let (x, y) = if swap { (rb, ra) } else { (ra, rb) };
        // The instruction reads both operands before it writes `base`.
        let d = base;
        self.next_reg = base + 1;
        self.emit(Insn::Bin { op: kop, dst: d, a: x, b: y, width: w });
        Ok(E::R(d, res))
    }

    /// The key op for `/` or `%` on `t` with divisor `b`. The interpreter
    /// fails a packet on a zero divisor and refuses signed operands, so
    /// only an unsigned division by a constant other than zero compiles
    /// (then no packet can divide by zero); anything else is refused.
    fn divisor(&self, op: BinOp, b: &Expr, t: T1) -> Result<KOp> {
        if t.signed() {
            return Err(refuse(b.span, format!("operator {op:?} on a signed value")));
        }
        let nonzero = self.const_value(b).and_then(|v| v.to_u64()).is_some_and(|v| {
            // The divisor as the operation's width sees it.
            v & sluice_core::keyop::ones(t.width()) != 0
        });
        if !nonzero {
            return Err(refuse(
                b.span,
                format!("operator {op:?} by anything but a constant other than zero"),
            ));
        }
        Ok(if op == BinOp::Div { KOp::Div } else { KOp::Rem })
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
            // As the interpreter: both operands non-negative, divisor not 0.
            BinOp::Div | BinOp::Mod if x >= 0 && y > 0 => {
                Some(if op == BinOp::Div { x / y } else { x % y })
            }
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

    /// The location `lhs` denotes when it holds a `bit<W>` over 64 bits
    /// (a header-vector field or a local): its slots, most significant
    /// first, and `W`.
    fn wide_place(&self, lhs: &Expr) -> Result<Option<(Vec<Slot>, u32)>> {
        if self.dyn_place(lhs)?.is_some() {
            return Ok(None);
        }
        Ok(match self.place_opt(lhs) {
            Some(Place::Field(f)) => match self.l.fields[f].ty {
                FieldTy::Bits { width, .. } if width > 64 => {
                    Some((self.l.fields[f].slots.clone(), width))
                }
                _ => None,
            },
            Some(Place::LocalWide(slots, w)) => Some((slots, w)),
            _ => None,
        })
    }

    /// `x[hi:lo]` of a `bit<W>` over 64 bits held in `slots` (most
    /// significant first, the first taking the remainder), for a slice of
    /// at most 64 bits: each slot it overlaps contributes its part,
    /// shifted down and into place.
    fn wide_slice(
        &mut self,
        slots: &[Slot],
        width: u32,
        hi: u64,
        lo: u64,
        span: Span,
    ) -> Result<E> {
        if hi < lo || hi >= u64::from(width) || hi - lo >= 64 {
            return Err(refuse(span, "this slice of a value over 64 bits"));
        }
        let w = (hi - lo + 1) as u8;
        let (acc, part, k) = (self.reg(span)?, self.reg(span)?, self.reg(span)?);
        self.emit(self.konst(acc, 0));
        // The slot's lowest bit within the whole value.
        let mut bot = 0u64;
        for s in slots.iter().rev() {
            let top = bot + u64::from(s.width) - 1;
            let (plo, phi) = (lo.max(bot), hi.min(top));
            if plo <= phi {
                self.emit(Insn::Load { dst: part, from: *s });
                self.emit(self.konst(k, plo - bot));
                self.emit(Insn::Bin { op: KOp::Shr, dst: part, a: part, b: k, width: s.width });
                self.emit(Insn::Trunc { dst: part, a: part, width: (phi - plo + 1) as u8 });
                self.emit(self.konst(k, plo - lo));
                self.emit(Insn::Bin { op: KOp::Shl, dst: part, a: part, b: k, width: w });
                self.emit(Insn::Bin { op: KOp::Or, dst: acc, a: acc, b: part, width: w });
            }
            bot = top + 1;
        }
        self.next_reg = acc + 1;
        Ok(E::R(acc, T1::Bits { w, signed: false }))
    }

    /// A `bit<W>` value over 64 bits in registers, one per slot of
    /// `shape` (the destination's slots, most significant first): a
    /// constant, or a field or local of the same shape.
    fn wide_value(&mut self, e: &Expr, shape: &[Slot], width: u32) -> Result<Vec<Reg>> {
        let konst = match self.const_value(e) {
            Some(v) => Some(v),
            None => match self.place(e)? {
                Some(Place::Const(v)) => Some(v),
                Some(Place::Field(g)) => {
                    let gl = &self.l.fields[g];
                    if !matches!(gl.ty, FieldTy::Bits { .. }) || gl.ty.width() != width {
                        return Err(refuse(e.span, "a copy between fields of different shapes"));
                    }
                    let from = gl.slots.clone();
                    return self.load_shaped(&from, shape, e.span);
                }
                Some(Place::LocalWide(from, w)) if w == width => {
                    return self.load_shaped(&from, shape, e.span);
                }
                _ => return Err(refuse(e.span, "this value over 64 bits")),
            },
        };
        let bits = match konst {
            Some(Value::Bits(b)) | Some(Value::Signed(b)) => b.resize(width),
            Some(Value::Int(i)) => Bits::from_i128(width, i),
            _ => return Err(refuse(e.span, "this value over 64 bits")),
        };
        let mut regs = Vec::with_capacity(shape.len());
        let mut hi = width;
        for s in shape {
            let lo = hi.saturating_sub(u32::from(s.width));
            if hi == lo {
                return Err(Diagnostic::bare("lowering: internal error: wide value shape"));
            }
            let r = self.reg(e.span)?;
            self.emit(self.konst(r, bits.slice(hi - 1, lo).low_u64()));
            regs.push(r);
            hi = lo;
        }
        Ok(regs)
    }

    /// Loads slots `from` into registers, refused unless they have the
    /// widths of `shape`'s.
    fn load_shaped(&mut self, from: &[Slot], shape: &[Slot], span: Span) -> Result<Vec<Reg>> {
        if from.len() != shape.len() || from.iter().zip(shape).any(|(a, b)| a.width != b.width) {
            return Err(refuse(span, "a copy between fields of different shapes"));
        }
        let mut regs = Vec::with_capacity(from.len());
        for s in from {
            let r = self.reg(span)?;
            self.emit(Insn::Load { dst: r, from: *s });
            regs.push(r);
        }
        Ok(regs)
    }

    /// `lhs = rhs` where `lhs` holds a `bit<W>` over 64 bits.
    fn assign_wide(&mut self, to: &[Slot], width: u32, rhs: &Expr) -> Result<()> {
        let save = self.next_reg;
        let regs = self.wide_value(rhs, to, width)?;
        for (r, s) in regs.into_iter().zip(to) {
            self.emit(Insn::Store { src: r, to: *s });
        }
        self.next_reg = save;
        Ok(())
    }

    /// Compiles a value over 64 bits (a table key) into `slots`.
    pub fn wide_into(&mut self, e: &Expr, width: u32, slots: &[Slot]) -> Result<()> {
        self.assign_wide(slots, width, e)?;
        self.next_reg = 0;
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
                // The location first, then the value (the interpreter's
                // order: an index is computed once, before the value).
                let lhs = &self.pin_index(lhs, 0)?;
                if op.is_none() {
                    if let Some(dst) = self.agg_place(lhs)? {
                        return self.assign_agg(&dst, rhs);
                    }
                    if let Some((idx, cands)) = self.dyn_place(lhs)? {
                        if cands.iter().all(|p| matches!(p, Place::Header(_))) {
                            // A whole element at a run-time index: the
                            // value assigned to the one selected (none
                            // out of range).
                            return self.each_elem(&idx, &cands, *span, |g, p| {
                                let dst = g.elem_agg(p, *span)?;
                                g.assign_agg(&dst, rhs)
                            });
                        }
                    }
                }
                if let Some((to, width)) = self.wide_place(lhs)? {
                    if op.is_some() {
                        return Err(refuse(*span, "compound assignment over 64 bits"));
                    }
                    return self.assign_wide(&to, width, rhs);
                }
                if let Some(Place::Field(f)) = self.place_opt(lhs) {
                    if field_t1(&self.l.fields[f].ty).is_none() {
                        return Err(refuse(*span, "this assignment"));
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
                    // A header (invalid) or struct (zero) local, or a
                    // `bit<W>` over 64 bits (zero).
                    let loc = alloc_agg(self.scratch, &name, &ty, v.span)?;
                    self.zero_agg(&loc, v.span)?;
                    match (&v.init, &ty, loc.leaves.as_slice()) {
                        (Some(init), Ty::Bits { width, .. }, [leaf]) => {
                            let to = leaf.slots.clone();
                            self.assign_wide(&to, *width, init)?;
                        }
                        (Some(init), _, _) => self.assign_agg(&loc, init)?,
                        (None, _, _) => {}
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
            ExprKind::Name { id, .. }
                if id.name == "hash" && self.find_function("hash").is_none() =>
            {
                self.hash(e, args)
            }
            ExprKind::Name { id, .. }
                if id.name == "digest" && self.find_function("digest").is_none() =>
            {
                let ExprKind::Call { type_args, .. } = &e.kind else {
                    return Err(refuse(e.span, "this call"));
                };
                self.digest(e, type_args, args)
            }
            ExprKind::Member(b, m) if self.instance_of(b).is_some() => {
                let inst = self.instance_of(b).cloned().ok_or_else(|| refuse(e.span, "this"))?;
                self.method(e, &inst, &m.name, args)
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
        // A stack element at a run-time index is no fixed location (its
        // fields are selected by `dyn_place`).
        if self.dyn_place(e)?.is_some() {
            return Ok(None);
        }
        let Some((root, path)) = self.path(e, 0)? else { return Ok(None) };
        self.hv_agg_path(root, &path, e.span)
    }

    /// The header, struct or stack at `root`/`path`, flattened.
    fn hv_agg_path(&self, root: Root, path: &str, span: Span) -> Result<Option<Agg>> {
        // A varbit field is a value of two leaves (`varbit`); any other
        // field is no aggregate.
        if self.l.field(root, path).is_some_and(|f| self.l.fields[f].len.is_none()) {
            return Ok(None);
        }
        let Some(t) = self.hv_ty(root, path) else { return Ok(None) };
        if !matches!(t, Ty::Header(_) | Ty::Struct(_) | Ty::Stack(..) | Ty::Varbit(_)) {
            return Ok(None);
        }
        let mut shape = Vec::new();
        flatten(&t, "", &mut shape, span, 0)?;
        let join = |rel: &str| {
            if path.is_empty() {
                rel.strip_prefix('.').unwrap_or(rel).to_string()
            } else {
                format!("{path}{rel}")
            }
        };
        let mut leaves = Vec::with_capacity(shape.len());
        for (rel, valid, width, t1) in shape {
            let full = join(&rel);
            let slots = if valid {
                let Some(h) = self.l.header(root, &full) else {
                    return Err(refuse(span, "this header"));
                };
                if self.l.headers[h].union.is_some() {
                    return Err(refuse(span, "a whole header union member"));
                }
                vec![self.l.headers[h].valid]
            } else if let Some(vb) = full.strip_suffix(varbit::LEN) {
                match self.l.field(root, vb).and_then(|f| self.l.fields[f].len) {
                    Some(len) => vec![len],
                    None => return Err(refuse(span, "this part of a header or struct")),
                }
            } else {
                let Some(f) = self.l.field(root, &full) else {
                    return Err(refuse(span, "this part of a header or struct"));
                };
                self.l.fields[f].slots.clone()
            };
            leaves.push(Leaf { rel, valid, width, t: t1, slots });
        }
        Ok(Some(Agg { leaves }))
    }

    /// The header union `e` names in the header vector, if it names one.
    fn union_of(&self, e: &Expr) -> Result<Option<usize>> {
        if self.local_agg(e).is_some() || self.dyn_place(e)?.is_some() {
            return Ok(None);
        }
        let Some((root, path)) = self.path(e, 0)? else { return Ok(None) };
        Ok(match self.l.item(root, &path) {
            Some(super::layout::Item::Union(u)) => Some(u),
            _ => None,
        })
    }

    /// `u.isValid()` of union `u`: whether any member is valid (at most
    /// one is, as the interpreter keeps it).
    fn union_valid(&mut self, u: usize, span: Span) -> Result<E> {
        let members = self.l.unions.get(u).map(|x| x.members.clone()).unwrap_or_default();
        let r = self.reg(span)?;
        self.emit(self.konst(r, 0));
        let t = self.reg(span)?;
        for m in members {
            let Some(h) = self.l.headers.get(m) else {
                return Err(Diagnostic::bare("lowering: internal error: union member"));
            };
            self.emit(Insn::Load { dst: t, from: h.valid });
            self.emit(Insn::Bin { op: KOp::Or, dst: r, a: r, b: t, width: 1 });
        }
        self.next_reg = t;
        Ok(E::R(r, T1::Bool))
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
        if !same_shape(dst, src) {
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

    /// `dst = rhs` for an aggregate `dst`: from another aggregate, from a
    /// `?:` of them, or from a list or `{ f = v }` initializer, nested
    /// as the type is (a header so initialized becomes valid). Every
    /// item is evaluated, in order, before anything is written (an item
    /// may read the target).
    fn assign_agg(&mut self, dst: &Agg, rhs: &Expr) -> Result<()> {
        if let ExprKind::Mux(c, a, b) = &rhs.kind {
            let save = self.next_reg;
            let (cr, _) = self.scalar(c, Some(T1::Bool))?;
            let jz = self.insns.len();
            self.emit(Insn::JumpIfZero { cond: cr, to: 0 });
            self.assign_agg(dst, a)?;
            let jend = self.insns.len();
            self.emit(Insn::Jump { to: 0 });
            let else_at = self.insns.len();
            self.patch(jz, else_at)?;
            self.assign_agg(dst, b)?;
            let end = self.insns.len();
            self.patch(jend, end)?;
            self.next_reg = save;
            return Ok(());
        }
        if !matches!(rhs.kind, ExprKind::List(_) | ExprKind::StructInit(_)) {
            let rhs = &self.pin_index(rhs, 0)?;
            if let Some((idx, cands)) = self.dyn_place(rhs)? {
                if cands.iter().all(|p| matches!(p, Place::Header(_))) {
                    return self.copy_from_dyn(dst, &idx, &cands, rhs.span);
                }
            }
            let Some(src) = self.agg_value(rhs)? else {
                return Err(refuse(rhs.span, "this value assigned to a header or struct"));
            };
            return self.copy_agg(dst, &src, rhs.span);
        }
        let save = self.next_reg;
        let mut stores = Vec::new();
        self.init_regs(dst, rhs, &mut stores, 0)?;
        for (r, slot) in stores {
            self.emit(Insn::Store { src: r, to: slot });
        }
        self.next_reg = save;
        Ok(())
    }

    /// Evaluates initializer `e` of `dst` into registers: the stores to
    /// make, in `out`.
    fn init_regs(&mut self, dst: &Agg, e: &Expr, out: &mut Vec<(Reg, Slot)>, d: u32) -> Result<()> {
        if d > MAX_DEPTH {
            return Err(refuse(e.span, "an initializer this deep"));
        }
        let items: Vec<(Option<String>, &Expr)> = match &e.kind {
            ExprKind::List(v) => v.iter().map(|x| (None, x)).collect(),
            ExprKind::StructInit(v) => {
                v.iter().map(|(n, x)| (Some(format!(".{}", n.name)), x)).collect()
            }
            _ => {
                // A scalar part, or a whole aggregate one.
                if let [leaf] = dst.leaves.as_slice() {
                    if !leaf.valid && leaf.rel.is_empty() {
                        if let (Some(t), [slot]) = (leaf.t, leaf.slots.as_slice()) {
                            let x = self.expr(e)?;
                            let r = self.typed(x, t, e.span)?;
                            out.push((r, *slot));
                            return Ok(());
                        }
                        let regs = self.wide_value(e, &leaf.slots, leaf.width)?;
                        out.extend(regs.into_iter().zip(leaf.slots.iter().copied()));
                        return Ok(());
                    }
                }
                let Some(src) = self.agg_value(e)? else {
                    return Err(refuse(e.span, "this item of an initializer"));
                };
                if !same_shape(dst, &src) {
                    return Err(refuse(e.span, "an item of a different shape"));
                }
                for (dl, sl) in dst.leaves.iter().zip(&src.leaves) {
                    for (to, from) in dl.slots.iter().zip(&sl.slots) {
                        let r = self.reg(e.span)?;
                        self.emit(Insn::Load { dst: r, from: *from });
                        out.push((r, *to));
                    }
                }
                return Ok(());
            }
        };
        let (valid, parts) = parts(dst);
        if parts.len() != items.len() {
            return Err(refuse(e.span, "this initializer"));
        }
        for (k, (name, x)) in items.iter().enumerate() {
            let part = match name {
                None => &parts[k].1,
                Some(n) => match parts.iter().find(|(c, _)| c == n) {
                    Some((_, p)) => p,
                    None => return Err(refuse(x.span, "this initializer")),
                },
            };
            self.init_regs(part, x, out, d + 1)?;
        }
        if let Some(v) = valid {
            let r = self.reg(e.span)?;
            self.emit(self.konst(r, 1));
            out.push((r, v));
        }
        Ok(())
    }

    /// `a == b` (`eq`) or `a != b` of two headers, structs, stacks or
    /// tuples, as the interpreter compares them: two invalid headers are
    /// equal whatever their fields, a valid and an invalid one are not.
    fn agg_eq(&mut self, eq: bool, a: &Expr, b: &Expr, span: Span) -> Result<E> {
        let (Some(x), Some(y)) = (self.agg_value(a)?, self.agg_value(b)?) else {
            return Err(refuse(span, "a comparison of these values"));
        };
        if !same_shape(&x, &y) {
            return Err(refuse(span, "a comparison between values of different shapes"));
        }
        let acc = self.reg(span)?;
        let (p, q, f) = (self.reg(span)?, self.reg(span)?, self.reg(span)?);
        self.emit(self.konst(acc, 1));
        // `f` := every slot of leaves `range` equal.
        let fields_eq = |g: &mut Self, range: std::ops::Range<usize>| {
            g.emit(g.konst(f, 1));
            for i in range {
                for (s, t) in x.leaves[i].slots.iter().zip(&y.leaves[i].slots) {
                    g.emit(Insn::Load { dst: p, from: *s });
                    g.emit(Insn::Load { dst: q, from: *t });
                    g.emit(Insn::Bin { op: KOp::Eq, dst: p, a: p, b: q, width: s.width });
                    g.emit(Insn::Bin { op: KOp::And, dst: f, a: f, b: p, width: 1 });
                }
            }
        };
        let mut i = 0;
        while i < x.leaves.len() {
            let l = &x.leaves[i];
            if !l.valid {
                fields_eq(self, i..i + 1);
                self.emit(Insn::Bin { op: KOp::And, dst: acc, a: acc, b: f, width: 1 });
                i += 1;
                continue;
            }
            // A header: its validity, then its fields.
            let prefix = format!("{}.", l.rel);
            let mut j = i + 1;
            while j < x.leaves.len() && !x.leaves[j].valid && x.leaves[j].rel.starts_with(&prefix) {
                j += 1;
            }
            fields_eq(self, i + 1..j);
            // equal = (va == vb) & (fields equal | !va)
            let (Some(va), Some(vb)) = (l.slots.first(), y.leaves[i].slots.first()) else {
                return Err(Diagnostic::bare("lowering: internal error: validity leaf"));
            };
            self.emit(Insn::Load { dst: p, from: *va });
            self.emit(Insn::Load { dst: q, from: *vb });
            self.emit(Insn::Bin { op: KOp::Eq, dst: q, a: p, b: q, width: 1 });
            self.emit(Insn::Not { dst: p, a: p, width: 1 });
            self.emit(Insn::Bin { op: KOp::Or, dst: f, a: f, b: p, width: 1 });
            self.emit(Insn::Bin { op: KOp::And, dst: f, a: f, b: q, width: 1 });
            self.emit(Insn::Bin { op: KOp::And, dst: acc, a: acc, b: f, width: 1 });
            i = j;
        }
        if !eq {
            self.emit(Insn::Not { dst: acc, a: acc, width: 1 });
        }
        self.next_reg = acc + 1;
        Ok(E::R(acc, T1::Bool))
    }

    /// `a == b` (`eq`) or `a != b` of two `bit<W>` values over 64 bits.
    fn wide_eq(&mut self, eq: bool, a: &Expr, b: &Expr, span: Span) -> Result<E> {
        let shape = match (self.wide_place(a)?, self.wide_place(b)?) {
            (Some(s), _) | (None, Some(s)) => s,
            _ => return Err(refuse(span, "a comparison of these values")),
        };
        let acc = self.reg(span)?;
        self.emit(self.konst(acc, 1));
        let ra = self.wide_value(a, &shape.0, shape.1)?;
        let rb = self.wide_value(b, &shape.0, shape.1)?;
        for ((x, y), s) in ra.into_iter().zip(rb).zip(&shape.0) {
            self.emit(Insn::Bin { op: KOp::Eq, dst: x, a: x, b: y, width: s.width });
            self.emit(Insn::Bin { op: KOp::And, dst: acc, a: acc, b: x, width: 1 });
        }
        if !eq {
            self.emit(Insn::Not { dst: acc, a: acc, width: 1 });
        }
        self.next_reg = acc + 1;
        Ok(E::R(acc, T1::Bool))
    }

    /// Whether `e` is a whole header, struct, stack or tuple (a location
    /// or a call of a function returning one).
    fn is_agg(&self, e: &Expr) -> bool {
        if let ExprKind::Call { func, .. } = &e.kind {
            if let ExprKind::Name { id, .. } = &func.kind {
                if self.lookup(&id.name).is_none() {
                    if let Some(f) = self.find_function(&id.name) {
                        return self
                            .env
                            .resolve(&f.ret, &[])
                            .is_ok_and(|t| ty_t1(&t).is_none() && t != Ty::Void);
                    }
                }
            }
            return false;
        }
        matches!(self.agg_place(e), Ok(Some(_)))
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

    /// `lhs` with its run-time stack index (`hdr.s[e].f`, `hdr.s[e].f[3:0]`)
    /// computed now into a scratch slot and replaced by a name bound to
    /// it, so that later reads and the write select the same element
    /// even if the code in between changes what `e` reads.
    fn pin_index(&mut self, lhs: &Expr, d: u32) -> Result<Expr> {
        if d > MAX_DEPTH {
            return Err(refuse(lhs.span, "an expression this deep"));
        }
        let kind = match &lhs.kind {
            ExprKind::Slice(b, hi, lo) => {
                ExprKind::Slice(Box::new(self.pin_index(b, d + 1)?), hi.clone(), lo.clone())
            }
            ExprKind::Member(b, m) => {
                ExprKind::Member(Box::new(self.pin_index(b, d + 1)?), m.clone())
            }
            ExprKind::Index(b, i) if self.dyn_place(lhs)?.is_some() => {
                let save = self.next_reg;
                let (r, t) = self.scalar(i, Some(T1::Bits { w: 32, signed: false }))?;
                let name = format!("$index @{}:{}", i.span.file, i.span.start);
                let Some(slot) = self.scratch.slot(&name, u32::from(t.width())) else {
                    return Err(refuse(i.span, "more locals than the key has room for"));
                };
                self.emit(Insn::Store { src: r, to: slot });
                self.next_reg = save;
                self.bind(&name, Bind::Slot(slot, t));
                let id = crate::ast::Ident { name, span: i.span };
                let pinned = Expr { kind: ExprKind::Name { id, dot_prefix: false }, span: i.span };
                ExprKind::Index(b.clone(), Box::new(pinned))
            }
            _ => return Ok(lhs.clone()),
        };
        Ok(Expr { kind, span: lhs.span })
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

    /// The header-vector element `p` (a header), flattened.
    fn elem_agg(&self, p: &Place, span: Span) -> Result<Agg> {
        let Place::Header(h) = p else {
            return Err(refuse(span, "this element of a stack with a run-time index"));
        };
        let hd = &self.l.headers[*h];
        self.hv_agg_path(hd.root, &hd.path, span)?
            .ok_or_else(|| refuse(span, "this element of a stack with a run-time index"))
    }

    /// `dst = stack[i]` with `i` a run-time index (pinned, so evaluating
    /// it again reads the same value): the selected element, or, out of
    /// range, the interpreter's default (an invalid header, zero fields).
    fn copy_from_dyn(&mut self, dst: &Agg, idx: &Expr, cands: &[Place], span: Span) -> Result<()> {
        self.each_elem(idx, cands, span, |g, p| {
            let src = g.elem_agg(p, span)?;
            g.copy_agg(dst, &src, span)
        })?;
        let save = self.next_reg;
        let (ri, ti) = self.scalar(idx, Some(T1::Bits { w: 32, signed: false }))?;
        let n = cands.len() as u64;
        if ti.width() >= 64 || n <= ones(ti.width()) {
            let k = self.reg(span)?;
            self.emit(self.konst(k, n));
            // k := idx >= n
            self.emit(Insn::Bin { op: KOp::Le, dst: k, a: k, b: ri, width: ti.width() });
            let j = self.insns.len();
            self.emit(Insn::JumpIfZero { cond: k, to: 0 });
            self.zero_agg(dst, span)?;
            let end = self.insns.len();
            self.patch(j, end)?;
        }
        self.next_reg = save;
        Ok(())
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
            // An `out`/`inout` argument's location is fixed at the call:
            // its run-time index (if any) is computed once, before.
            let arg = &match p.dir {
                Direction::Out | Direction::InOut => self.pin_index(&args[i].value, 0)?,
                _ => args[i].value.clone(),
            };
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
                // A `bit<W>` over 64 bits is one leaf of several slots.
                let loc = alloc_agg(self.scratch, &name, &ty, p.span)?;
                let wide = match (&ty, loc.leaves.as_slice()) {
                    (Ty::Bits { width, .. }, [leaf]) => Some((leaf.slots.clone(), *width)),
                    _ => None,
                };
                if p.dir == Direction::Out || matches!(arg.kind, ExprKind::DontCare) {
                    self.zero_agg(&loc, span)?;
                } else if let Some((to, width)) = &wide {
                    self.assign_wide(to, *width, arg)?;
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
            if let Some((to, _)) = self.wide_place(&arg)? {
                // A `bit<W>` over 64 bits: its slots copied back.
                let Some(from) = loc.leaves.first().map(|l| l.slots.clone()) else {
                    return Err(refuse(arg.span, "this argument"));
                };
                let save = self.next_reg;
                let regs = self.load_shaped(&from, &to, arg.span)?;
                for (r, s) in regs.into_iter().zip(&to) {
                    self.emit(Insn::Store { src: r, to: *s });
                }
                self.next_reg = save;
                continue;
            }
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

    /// Compiles `e` (a value of at most 64 bits whose type it decides)
    /// into the scratch slot named `name`: the slot and the value's type.
    pub fn scalar_into(&mut self, e: &Expr, name: &str) -> Result<(Slot, T1)> {
        let (r, t) = self.scalar(e, None)?;
        let Some(slot) = self.scratch.slot(name, u32::from(t.width())) else {
            return Err(refuse(e.span, "more values than the key has room for"));
        };
        self.emit(Insn::Store { src: r, to: slot });
        self.next_reg = 0;
        Ok((slot, t))
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
                    if self.union_of(b)?.is_some() {
                        // Computed: whether any member is valid.
                        return Ok(None);
                    }
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
            Some(Place::LocalWide(slots, width)) => Some(KeyPlace { slots, width }),
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
