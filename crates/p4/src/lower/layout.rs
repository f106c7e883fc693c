//! The header vector (PHV) layout: where every header, metadata and
//! standard-metadata field of a v1model program lives in the core's key.
//!
//! # What
//! A P4 program compiled into `sluice-core` keeps its packet state in the
//! key ([`FlowKey`], [`KEY_WORDS`] words of 64 bits): the parse program
//! fills it, tables match it, actions write it, the deparser reads it.
//! [`Layout::new`] assigns key slots ([`Slot`]) to everything the
//! pipeline's three state parameters hold — the headers type `H`, the
//! metadata type `M` and `standard_metadata_t` — and the few slots the
//! engine itself needs (the parser's cursor, each stack's next index).
//!
//! # Basic design
//! The three roots are walked in that order, each type in declaration
//! order, structs flattened. Each header (every element of a stack, every
//! member of a union) gets a validity bit, then its fields; a stack gets a
//! 32-bit next index before its elements. A field of up to 64 bits is one
//! slot; a wider one is several, most significant first, the first taking
//! the remainder (`bit<100>`: 36 then 64 bits). Slots are placed first fit:
//! in the first word that still has room, at its lowest free bit, so the
//! layout is a function of the types alone. A header's fields go in runs:
//! the longest sequence of adjacent fields (none a varbit or over 64
//! bits) of at most 64 bits in all takes one slot of their total width,
//! the first field its top bits and each next one the bits just below,
//! as the packet holds them (IPv4: runs of 64, 64 and 32 bits). The
//! parse extracts a run with one read and the deparser emits it with one
//! write (the flat headers of [`super::parser`]).
//!
//! Value encodings: numbers as their bits (`int<W>` two's complement),
//! `varbit<N>` as its bits right-aligned in `N` bits plus a length slot,
//! `bool` as one bit, serializable enums as their underlying type, `error`
//! as the member's index in [`TypeEnv::errors`] (32 bits) and other
//! enums as the member's index (32 bits). Zero is every type's default
//! except `error`, whose default `NoError` may have another index
//! ([`Layout::defaults`]).
//!
//! Fields are named by their path below the root, as written in P4:
//! `ipv4.dstAddr`, `vlan[1].tci`, `u.a.x` (member `a` of union `u`).
//! The parse program adds the parsers' own variables after the layout
//! is built ([`Layout::add_hidden`]): fields under `Root::Meta` at paths
//! starting with `$` (`$v`, `$subp.cnt`), one key word each after every
//! other slot, which no P4 name reaches and [`Layout::decode`] never
//! shows.
//!
//! # Invariants
//! - Every slot lies inside the key and inside one word; no two slots
//!   overlap (checked by a test over the examples).
//! - A program whose state does not fit is placed again without the
//!   members of its headers and metadata structs that its code never
//!   names ([`Layout::left_out`]; they keep their defaults); if it still
//!   does not fit it is refused with the bits it needs and the bits the
//!   key has. A program that fits is laid out with every member.
//! - Types that have no bits in a header vector (`int`, `string`,
//!   tuples...) are refused by name.
//! - Reading and writing never panic, whatever the key holds.

use std::collections::HashMap;
use std::sync::Arc;

use sluice_core::keyop::Slot;
use sluice_packet::key::{FlowKey, KEY_WORDS};

use crate::ast::{AggregateKind, Decl, Program};
use crate::diag::{Diagnostic, Result, Span};
use crate::types::{AggTy, EnumTy, Ty, TypeEnv};
use crate::value::{self, Aggregate, Bits, Value};

/// Bits in the key.
pub const KEY_BITS: u32 = KEY_WORDS as u32 * 64;
/// Width of the slots of `error` values, non-serializable enums, the
/// cursor and stacks' next indices.
pub const WORD32: u32 = 32;

/// Width of the length slot of a `varbit<max>`: enough bits for
/// `0..=max` (at least one).
pub fn varbit_len_width(max: u32) -> u32 {
    32 - max.leading_zeros().min(31)
}

/// Which of the pipeline's state parameters a path starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Root {
    /// The parser's `out H hdr`.
    Headers,
    /// `inout M meta`.
    Meta,
    /// `inout standard_metadata_t standard_metadata`.
    Std,
}

impl Root {
    pub const ALL: [Root; 3] = [Root::Headers, Root::Meta, Root::Std];
}

/// What a field holds, for encoding values.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldTy {
    Bits {
        signed: bool,
        width: u32,
    },
    Bool,
    Error,
    /// A non-serializable enum (members by index).
    Enum(Arc<EnumTy>),
    /// `varbit<max>`: its bits right-aligned in `max` bits, its length
    /// in [`Field::len`].
    Varbit(u32),
}

impl FieldTy {
    /// Bits the field takes in the key.
    pub fn width(&self) -> u32 {
        match self {
            FieldTy::Bits { width, .. } | FieldTy::Varbit(width) => *width,
            FieldTy::Bool => 1,
            FieldTy::Error | FieldTy::Enum(_) => WORD32,
        }
    }
}

/// One scalar field.
#[derive(Clone, Debug)]
pub struct Field {
    pub root: Root,
    pub path: String,
    pub ty: FieldTy,
    /// Most significant first; empty for a zero-width field.
    pub slots: Vec<Slot>,
    /// A varbit's current length in bits.
    pub len: Option<Slot>,
}

/// One header (a stack element or a union member is one too).
#[derive(Clone, Debug)]
pub struct Header {
    pub root: Root,
    pub path: String,
    pub ty: Arc<AggTy>,
    pub valid: Slot,
    /// Its fields, in declaration order.
    pub fields: Vec<usize>,
    /// The union it is a member of.
    pub union: Option<usize>,
}

/// A header union: its members are headers.
#[derive(Clone, Debug)]
pub struct Union {
    pub root: Root,
    pub path: String,
    pub members: Vec<usize>,
}

/// A stack element: a header or a union.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    Header(usize),
    Union(usize),
}

/// A header stack.
#[derive(Clone, Debug)]
pub struct Stack {
    pub root: Root,
    pub path: String,
    /// `nextIndex`, 32 bits.
    pub next: Slot,
    pub elems: Vec<Elem>,
}

/// What a path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    Field(usize),
    Header(usize),
    Union(usize),
    Stack(usize),
    Struct,
}

/// The header vector of one program.
#[derive(Clone, Debug)]
pub struct Layout {
    pub fields: Vec<Field>,
    pub headers: Vec<Header>,
    pub unions: Vec<Union>,
    pub stacks: Vec<Stack>,
    /// The parser's position in bits (32 bits).
    pub cursor: Slot,
    /// Every `error` member, in declaration order (their codes).
    pub errors: Vec<String>,
    /// The three roots' types.
    pub types: [Ty; 3],
    /// Bits taken (slots and reserved slots).
    pub bits_used: u32,
    left_out: Vec<(Root, String)>,
    by_path: HashMap<(Root, String), Item>,
}

/// First-fit slot allocation over the key's words.
struct Alloc {
    fill: [u32; KEY_WORDS],
    /// Bits asked for, placed or not.
    asked: u32,
    failed: bool,
}

impl Alloc {
    fn slot(&mut self, width: u32) -> Slot {
        self.asked = self.asked.saturating_add(width);
        for (w, f) in self.fill.iter_mut().enumerate() {
            if *f + width <= 64 {
                let s = Slot { word: w as u8, shift: *f as u8, width: width as u8 };
                *f += width;
                return s;
            }
        }
        self.failed = true;
        Slot { word: 0, shift: 0, width: width as u8 }
    }

    /// Slots for a field of `width` bits, most significant first.
    fn field(&mut self, width: u32) -> Vec<Slot> {
        if width == 0 {
            return Vec::new();
        }
        let mut out = Vec::new();
        let first = match width % 64 {
            0 => 64,
            r => r,
        };
        out.push(self.slot(first));
        for _ in 0..(width - first) / 64 {
            out.push(self.slot(64));
        }
        out
    }
}

struct Builder<'a> {
    prog: &'a Program,
    span: Span,
    a: Alloc,
    l: Layout,
    /// When set, the text of the program's code (see [`code_text`]):
    /// members of the headers and metadata structs it never names are
    /// left out.
    named: Option<&'a str>,
}

/// Every declaration but the aggregate types', as text (`Debug`): a
/// member name that does not occur in it quoted is named by no
/// statement, expression, key, argument or annotation of the program.
fn code_text(prog: &Program) -> String {
    let mut out = String::new();
    for d in &prog.decls {
        if !matches!(d, Decl::Aggregate(_)) {
            out.push_str(&format!("{d:?}"));
        }
    }
    out
}

impl Layout {
    /// The layout of a program whose pipeline state has types `hdr`,
    /// `meta` and `std`; `span` is where refusals point (the parser).
    /// Refusals of a field point at its declaration in `prog`.
    ///
    /// When everything does not fit, the members of `hdr` and `meta`
    /// that the program's code never names are left out
    /// ([`Layout::left_out`]) and the rest placed again. Such a member
    /// keeps its default for ever: code can only change it by naming it
    /// (a header becomes valid by `extract` or `setValid` of its name;
    /// a copy or initializer of the whole struct needs every member's
    /// slots and is refused), so it is never emitted and reads as its
    /// default in [`Layout::decode`].
    pub fn new(
        prog: &Program,
        env: &TypeEnv,
        hdr: &Ty,
        meta: &Ty,
        std: &Ty,
        span: Span,
    ) -> Result<Layout> {
        let full = Self::build(prog, env, [hdr, meta, std], span, None)?;
        if !full.a.failed && full.a.asked <= KEY_BITS {
            return Ok(full.finish());
        }
        let text = code_text(prog);
        let b = Self::build(prog, env, [hdr, meta, std], span, Some(&text))?;
        if b.a.failed || b.a.asked > KEY_BITS {
            return Err(Diagnostic::new(
                span,
                format!(
                    "lowering: the header vector needs {} bits ({} without the members \
                     the code never names); the key holds {KEY_BITS}",
                    full.a.asked, b.a.asked
                ),
            ));
        }
        Ok(b.finish())
    }

    fn build<'a>(
        prog: &'a Program,
        env: &TypeEnv,
        [hdr, meta, std]: [&Ty; 3],
        span: Span,
        named: Option<&'a str>,
    ) -> Result<Builder<'a>> {
        let mut b = Builder {
            prog,
            span,
            named,
            a: Alloc { fill: [0; KEY_WORDS], asked: 0, failed: false },
            l: Layout {
                fields: Vec::new(),
                headers: Vec::new(),
                unions: Vec::new(),
                stacks: Vec::new(),
                cursor: Slot { word: 0, shift: 0, width: 32 },
                errors: env.errors.clone(),
                types: [hdr.clone(), meta.clone(), std.clone()],
                bits_used: 0,
                left_out: Vec::new(),
                by_path: HashMap::new(),
            },
        };
        b.l.cursor = b.a.slot(WORD32);
        for (root, ty) in Root::ALL.into_iter().zip([hdr, meta, std]) {
            match ty {
                Ty::Struct(a) => b.strukt(root, "", a, 0)?,
                other => {
                    return Err(super::refuse(
                        span,
                        format!("a pipeline parameter of type {other} (only structs)"),
                    ))
                }
            }
        }
        Ok(b)
    }

    /// Adds a field outside the three roots' types: a parser's own
    /// variable (see [`super::parser`]), under [`Root::Meta`] at a path
    /// starting with `$`, which no P4 name does, so [`Layout::decode`]
    /// never shows it. It takes a key word no other field uses (so the
    /// engine's scratch space, which starts after every field, is
    /// after it too). `None` when `ty` is wider than 64 bits or the key
    /// has no word left.
    pub fn add_hidden(&mut self, path: &str, ty: FieldTy) -> Option<usize> {
        let w = ty.width();
        if !(1..=64).contains(&w) || !path.starts_with('$') {
            return None;
        }
        let mut max = self.cursor.word;
        for f in &self.fields {
            for s in f.slots.iter().chain(f.len.iter()) {
                max = max.max(s.word);
            }
        }
        for h in &self.headers {
            max = max.max(h.valid.word);
        }
        for s in &self.stacks {
            max = max.max(s.next.word);
        }
        let word = max.checked_add(1).filter(|&w| usize::from(w) < KEY_WORDS)?;
        let i = self.fields.len();
        let slot = Slot { word, shift: 0, width: w as u8 };
        self.fields.push(Field {
            root: Root::Meta,
            path: path.to_string(),
            ty,
            slots: vec![slot],
            len: None,
        });
        self.by_path.insert((Root::Meta, path.to_string()), Item::Field(i));
        self.bits_used = self.bits_used.saturating_add(64);
        Some(i)
    }

    /// Members of the headers and metadata structs left out (see
    /// [`Layout::new`]), as `(root, member)`.
    pub fn left_out(&self) -> &[(Root, String)] {
        &self.left_out
    }

    /// What `path` (below `root`) names.
    pub fn item(&self, root: Root, path: &str) -> Option<Item> {
        self.by_path.get(&(root, path.to_string())).copied()
    }

    pub fn field(&self, root: Root, path: &str) -> Option<usize> {
        match self.item(root, path)? {
            Item::Field(i) => Some(i),
            _ => None,
        }
    }

    /// A field's slots, most significant first (`vlan[1].vid`).
    pub fn slots(&self, root: Root, path: &str) -> Option<&[Slot]> {
        self.fields.get(self.field(root, path)?).map(|f| &f.slots[..])
    }

    /// One line per slot holder, in key order: where everything lives
    /// (`word.shift+width  path`).
    pub fn dump(&self) -> String {
        let mut rows: Vec<(Slot, String)> = vec![(self.cursor, "(cursor)".into())];
        let name = |root: Root, p: &str| {
            let r = match root {
                Root::Headers => "hdr",
                Root::Meta => "meta",
                Root::Std => "std",
            };
            format!("{r}.{p}")
        };
        for f in &self.fields {
            let n = f.slots.len();
            for (i, s) in f.slots.iter().enumerate() {
                let part = if n > 1 { format!(" ({}/{n})", i + 1) } else { String::new() };
                rows.push((*s, format!("{}{part}", name(f.root, &f.path))));
            }
            if let Some(l) = f.len {
                rows.push((l, format!("{} (length)", name(f.root, &f.path))));
            }
        }
        for h in &self.headers {
            rows.push((h.valid, format!("{} (valid)", name(h.root, &h.path))));
        }
        for st in &self.stacks {
            rows.push((st.next, format!("{} (nextIndex)", name(st.root, &st.path))));
        }
        rows.sort_by_key(|(s, _)| (s.word, s.shift));
        let mut out = String::new();
        for (s, n) in rows {
            out.push_str(&format!("{:2}.{:<2}+{:<2}  {n}\n", s.word, s.shift, s.width));
        }
        out.push_str(&format!("{} of {KEY_BITS} bits\n", self.bits_used));
        for (root, m) in &self.left_out {
            out.push_str(&format!("left out (never named): {}\n", name(*root, m)));
        }
        out
    }

    pub fn header(&self, root: Root, path: &str) -> Option<usize> {
        match self.item(root, path)? {
            Item::Header(i) => Some(i),
            _ => None,
        }
    }

    pub fn stack(&self, root: Root, path: &str) -> Option<usize> {
        match self.item(root, path)? {
            Item::Stack(i) => Some(i),
            _ => None,
        }
    }

    /// The code of an `error` member.
    pub fn error_code(&self, name: &str) -> Option<u32> {
        self.errors.iter().position(|e| e == name).map(|i| i as u32)
    }

    /// A field's value as bits of its key width.
    pub fn get(&self, key: &FlowKey, field: usize) -> Bits {
        let Some(f) = self.fields.get(field) else {
            return Bits::zero(0);
        };
        let mut out = Bits::zero(f.ty.width());
        for s in &f.slots {
            out = out.shl(u64::from(s.width)).or(&Bits::from_u64(out.width(), s.get(key)));
        }
        out
    }

    /// Writes a field from bits (resized to its width).
    pub fn set(&self, key: &mut FlowKey, field: usize, v: &Bits) {
        let Some(f) = self.fields.get(field) else {
            return;
        };
        let v = v.resize(f.ty.width());
        let mut lo = f.ty.width();
        for s in &f.slots {
            lo -= u32::from(s.width);
            s.set(key, v.slice(lo + u32::from(s.width) - 1, lo).low_u64());
        }
    }

    /// A field of up to 128 bits (wider ones: their low 128 bits).
    pub fn get_u128(&self, key: &FlowKey, field: usize) -> u128 {
        let b = self.get(key, field);
        b.resize(b.width().min(128)).to_u128().unwrap_or(0)
    }

    pub fn set_u128(&self, key: &mut FlowKey, field: usize, v: u128) {
        if let Some(f) = self.fields.get(field) {
            self.set(key, field, &Bits::from_u128(f.ty.width(), v));
        }
    }

    /// A header's validity bit.
    pub fn is_valid(&self, key: &FlowKey, header: usize) -> bool {
        self.headers.get(header).is_some_and(|h| h.valid.get(key) != 0)
    }

    /// A field's value as the interpreter holds it.
    pub fn value(&self, key: &FlowKey, field: usize) -> Value {
        let Some(f) = self.fields.get(field) else {
            return Value::Void;
        };
        let b = self.get(key, field);
        match &f.ty {
            FieldTy::Bits { signed: false, .. } => Value::Bits(b),
            FieldTy::Bits { signed: true, .. } => Value::Signed(b),
            FieldTy::Bool => Value::Bool(!b.is_zero()),
            FieldTy::Varbit(max) => {
                let n = f.len.map_or(0, |s| s.get(key) as u32).min(*max);
                Value::Varbit { max: *max, bits: b.resize(n) }
            }
            FieldTy::Error => {
                let i = b.to_u64().unwrap_or(u64::MAX);
                match usize::try_from(i).ok().and_then(|i| self.errors.get(i)) {
                    Some(e) => Value::Error(e.clone()),
                    None => Value::Error(format!("#{i}")),
                }
            }
            FieldTy::Enum(e) => {
                let i = b.to_u64().unwrap_or(u64::MAX);
                match usize::try_from(i).ok().and_then(|i| e.members.get(i)) {
                    Some((m, _)) => Value::Enum { ty: e.name.clone(), member: m.clone() },
                    None => Value::Enum { ty: e.name.clone(), member: format!("#{i}") },
                }
            }
        }
    }

    /// A value's encoding for a field of type `ty` (`None`: not a value
    /// of that type).
    pub fn encode(&self, ty: &FieldTy, v: &Value) -> Option<Bits> {
        let w = ty.width();
        match (ty, v) {
            (FieldTy::Bits { .. }, Value::Bits(b) | Value::Signed(b)) if b.width() == w => {
                Some(b.clone())
            }
            (FieldTy::Bits { .. }, Value::Int(i)) => Some(Bits::from_i128(w, *i)),
            (FieldTy::Bool, Value::Bool(b)) => Some(Bits::from_u64(1, u64::from(*b))),
            (FieldTy::Error, Value::Error(e)) => {
                Some(Bits::from_u64(w, self.error_code(e)?.into()))
            }
            (FieldTy::Enum(en), Value::Enum { ty, member }) if *ty == en.name => {
                let i = en.members.iter().position(|(m, _)| m == member)?;
                Some(Bits::from_u64(w, i as u64))
            }
            _ => None,
        }
    }

    /// Writes every field's default that is not zero (`error.NoError`).
    pub fn write_defaults(&self, key: &mut FlowKey) {
        let Some(code) = self.error_code("NoError") else {
            return;
        };
        if code == 0 {
            return;
        }
        for (i, f) in self.fields.iter().enumerate() {
            if f.ty == FieldTy::Error {
                self.set_u128(key, i, code.into());
            }
        }
    }

    /// The whole root as the interpreter's value (for tests and dumps).
    pub fn decode(&self, key: &FlowKey, root: Root) -> Value {
        let ty = &self.types[root as usize];
        self.decode_ty(key, root, "", ty, 0)
    }

    fn decode_ty(&self, key: &FlowKey, root: Root, path: &str, ty: &Ty, depth: u32) -> Value {
        if depth > 64 {
            return Value::Void;
        }
        if depth == 1 && self.left_out.iter().any(|(r, p)| *r == root && p == path) {
            return ty.default_value();
        }
        let join = |n: &str| if path.is_empty() { n.to_string() } else { format!("{path}.{n}") };
        match ty {
            Ty::Struct(a) | Ty::Header(a) | Ty::HeaderUnion(a) => {
                let fields = a
                    .fields
                    .iter()
                    .map(|(n, t)| self.decode_ty(key, root, &join(n), t, depth + 1))
                    .collect();
                let valid = match self.item(root, path) {
                    Some(Item::Header(h)) => self.is_valid(key, h),
                    _ => false,
                };
                let agg = Box::new(Aggregate { ty: a.clone(), valid, fields });
                match ty {
                    Ty::Header(_) => Value::Header(agg),
                    Ty::HeaderUnion(_) => Value::Union(agg),
                    _ => Value::Struct(agg),
                }
            }
            Ty::Stack(e, n) => {
                let elems = (0..*n)
                    .map(|i| self.decode_ty(key, root, &format!("{path}[{i}]"), e, depth + 1))
                    .collect();
                let next_index = match self.item(root, path) {
                    Some(Item::Stack(s)) => self.stacks[s].next.get(key) as u32,
                    _ => 0,
                };
                Value::Stack(Box::new(value::Stack { elem: (**e).clone(), elems, next_index }))
            }
            _ => match self.field(root, path) {
                Some(f) => self.value(key, f),
                None => Value::Void,
            },
        }
    }
}

impl Builder<'_> {
    fn finish(mut self) -> Layout {
        self.l.bits_used = self.a.asked;
        self.l
    }

    fn refuse<T>(&self, what: String) -> Result<T> {
        Err(super::refuse(self.span, what))
    }

    /// Where field `field` of aggregate `agg` is declared (else the
    /// parser).
    fn decl_span(&self, agg: &str, field: &str) -> Span {
        self.prog
            .decls
            .iter()
            .find_map(|d| match d {
                Decl::Aggregate(a) if a.name.name == agg => {
                    a.fields.iter().find(|f| f.name.name == field).map(|f| f.span)
                }
                _ => None,
            })
            .unwrap_or(self.span)
    }

    fn name(&mut self, root: Root, path: &str, item: Item) {
        self.l.by_path.insert((root, path.to_string()), item);
    }

    fn strukt(&mut self, root: Root, path: &str, a: &AggTy, depth: u32) -> Result<()> {
        if depth > 64 {
            return self.refuse("structs nested this deeply".into());
        }
        if !path.is_empty() {
            self.name(root, path, Item::Struct);
        }
        for (n, t) in &a.fields {
            if let (Some(text), true, false) = (self.named, path.is_empty(), root == Root::Std) {
                if !text.contains(&format!("{n:?}")) {
                    self.l.left_out.push((root, n.clone()));
                    continue;
                }
            }
            let p = if path.is_empty() { n.clone() } else { format!("{path}.{n}") };
            let at = self.decl_span(&a.name, n);
            self.member(root, &p, t, at, depth + 1)?;
        }
        Ok(())
    }

    fn member(&mut self, root: Root, path: &str, t: &Ty, at: Span, depth: u32) -> Result<()> {
        match t {
            Ty::Struct(a) => self.strukt(root, path, a, depth),
            Ty::Header(a) => self.header(root, path, a, None).map(|_| ()),
            Ty::HeaderUnion(a) => self.union(root, path, a).map(|_| ()),
            Ty::Stack(e, n) => {
                let next = self.a.slot(WORD32);
                let id = self.l.stacks.len();
                self.l.stacks.push(Stack { root, path: path.to_string(), next, elems: Vec::new() });
                self.name(root, path, Item::Stack(id));
                for i in 0..*n {
                    let p = format!("{path}[{i}]");
                    let el = match &**e {
                        Ty::Header(a) => Elem::Header(self.header(root, &p, a, None)?),
                        Ty::HeaderUnion(a) => Elem::Union(self.union(root, &p, a)?),
                        other => return self.refuse(format!("a stack of {other}")),
                    };
                    self.l.stacks[id].elems.push(el);
                }
                Ok(())
            }
            other => {
                let ty = self.scalar(path, other, at)?;
                self.scalar_field(root, path, ty);
                Ok(())
            }
        }
    }

    fn scalar(&self, path: &str, t: &Ty, at: Span) -> Result<FieldTy> {
        Ok(match t {
            Ty::Bits { signed, width } => FieldTy::Bits { signed: *signed, width: *width },
            Ty::Bool => FieldTy::Bool,
            Ty::Error => FieldTy::Error,
            Ty::Enum(e) => match e.underlying {
                Some((signed, width)) => FieldTy::Bits { signed, width },
                None => FieldTy::Enum(e.clone()),
            },
            Ty::Varbit(max) => FieldTy::Varbit(*max),
            other => return Err(super::refuse(at, format!("field `{path}` of type {other}"))),
        })
    }

    fn scalar_field(&mut self, root: Root, path: &str, ty: FieldTy) -> usize {
        let slots = self.a.field(ty.width());
        let len = match ty {
            FieldTy::Varbit(max) => Some(self.a.slot(varbit_len_width(max))),
            _ => None,
        };
        self.placed_field(root, path, ty, slots, len)
    }

    fn placed_field(
        &mut self,
        root: Root,
        path: &str,
        ty: FieldTy,
        slots: Vec<Slot>,
        len: Option<Slot>,
    ) -> usize {
        let id = self.l.fields.len();
        self.l.fields.push(Field { root, path: path.to_string(), ty, slots, len });
        self.name(root, path, Item::Field(id));
        id
    }

    fn header(
        &mut self,
        root: Root,
        path: &str,
        a: &Arc<AggTy>,
        union: Option<usize>,
    ) -> Result<usize> {
        debug_assert_eq!(a.kind, AggregateKind::Header);
        let valid = self.a.slot(1);
        let id = self.l.headers.len();
        self.l.headers.push(Header {
            root,
            path: path.to_string(),
            ty: a.clone(),
            valid,
            fields: Vec::new(),
            union,
        });
        self.name(root, path, Item::Header(id));
        let mut tys = Vec::with_capacity(a.fields.len());
        for (n, t) in &a.fields {
            let p = format!("{path}.{n}");
            let ty = self.scalar(&p, t, self.decl_span(&a.name, n))?;
            tys.push((p, ty));
        }
        // Runs of adjacent fields of up to 64 bits in all, in wire order
        // (see the module's basic design); a varbit or a field over 64
        // bits is placed alone.
        let alone = |ty: &FieldTy| matches!(ty, FieldTy::Varbit(_)) || ty.width() > 64;
        let mut i = 0;
        while i < tys.len() {
            let mut end = i;
            let mut bits = 0u32;
            while let Some((_, ty)) = tys.get(end) {
                if alone(ty) || bits + ty.width() > 64 {
                    break;
                }
                bits += ty.width();
                end += 1;
            }
            if end == i {
                let (p, ty) = tys[i].clone();
                let f = self.scalar_field(root, &p, ty);
                self.l.headers[id].fields.push(f);
                i += 1;
                continue;
            }
            let run = self.a.slot(bits);
            let mut top = u32::from(run.shift) + bits;
            for (p, ty) in tys[i..end].iter().cloned() {
                let w = ty.width();
                let slots = if w == 0 {
                    Vec::new()
                } else {
                    top -= w;
                    vec![Slot { word: run.word, shift: top as u8, width: w as u8 }]
                };
                let f = self.placed_field(root, &p, ty, slots, None);
                self.l.headers[id].fields.push(f);
            }
            i = end;
        }
        Ok(id)
    }

    fn union(&mut self, root: Root, path: &str, a: &Arc<AggTy>) -> Result<usize> {
        let id = self.l.unions.len();
        self.l.unions.push(Union { root, path: path.to_string(), members: Vec::new() });
        self.name(root, path, Item::Union(id));
        for (n, t) in &a.fields {
            let p = format!("{path}.{n}");
            let Ty::Header(h) = t else {
                return self.refuse(format!("union member `{p}` of type {t}"));
            };
            let m = self.header(root, &p, h, Some(id))?;
            self.l.unions[id].members.push(m);
        }
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(src: &str) -> Layout {
        let loaded = crate::parse::load_str("t.p4", src).unwrap();
        let env = TypeEnv::new(&loaded.program).unwrap();
        let h = env.named("headers").unwrap();
        let m = env.named("meta_t").unwrap();
        let s = env.named("standard_metadata_t").unwrap();
        Layout::new(&loaded.program, &env, &h, &m, &s, Span::default()).unwrap()
    }

    const SRC: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header wide_t { bit<100> x; int<8> y; bool z; }
header a_t { bit<8> a; }
header b_t { bit<16> b; }
header_union u_t { a_t a; b_t b; }
enum color_t { RED, GREEN }
struct inner_t { bit<3> k; color_t c; }
struct meta_t { inner_t i; error e; bit<64> big; }
struct headers { eth_t eth; wide_t w; a_t[2] st; u_t u; }
"#;

    #[test]
    fn paths_slots_and_values() {
        let l = layout(SRC);
        // Cursor first, then eth's validity bit and fields in order.
        assert_eq!(l.cursor, Slot { word: 0, shift: 0, width: 32 });
        let eth = l.header(Root::Headers, "eth").unwrap();
        assert_eq!(l.headers[eth].valid, Slot { word: 0, shift: 32, width: 1 });
        let dst = l.field(Root::Headers, "eth.dst").unwrap();
        assert_eq!(l.fields[dst].slots, vec![Slot { word: 1, shift: 0, width: 48 }]);
        let x = l.field(Root::Headers, "w.x").unwrap();
        let widths: Vec<u8> = l.fields[x].slots.iter().map(|s| s.width).collect();
        assert_eq!(widths, vec![36, 64]);
        assert!(l.field(Root::Headers, "st[1].a").is_some());
        assert!(l.stack(Root::Headers, "st").is_some());
        assert!(l.header(Root::Headers, "u.b").is_some());
        assert!(l.field(Root::Meta, "i.k").is_some());
        assert!(l.field(Root::Std, "parser_error").is_some());

        let mut key = FlowKey::ZERO;
        let v = Bits::from_u128(100, 0xf_0123_4567_89ab_cdef_0123_4567);
        l.set(&mut key, x, &v);
        assert_eq!(l.get(&key, x), v);
        let y = l.field(Root::Headers, "w.y").unwrap();
        l.set_u128(&mut key, y, 0x1ff);
        assert_eq!(l.value(&key, y), Value::Signed(Bits::from_u64(8, 0xff)));
        let e = l.field(Root::Meta, "e").unwrap();
        let enc = l.encode(&FieldTy::Error, &Value::Error("PacketTooShort".into())).unwrap();
        l.set(&mut key, e, &enc);
        assert_eq!(l.value(&key, e), Value::Error("PacketTooShort".into()));
        // The neighbours were left alone.
        assert_eq!(l.get_u128(&key, dst), 0);
        assert_eq!(l.slots(Root::Headers, "eth.dst"), Some(&l.fields[dst].slots[..]));
        let dump = l.dump();
        assert!(dump.starts_with(" 0.0 +32  (cursor)\n 0.32+1   hdr.eth (valid)\n"), "{dump}");
        assert!(dump.contains(" 1.0 +48  hdr.eth.dst\n"), "{dump}");
        assert!(dump.contains("hdr.w.x (1/2)") && dump.contains("hdr.st (nextIndex)"), "{dump}");
    }

    #[test]
    fn slots_are_disjoint_and_inside_words() {
        let l = layout(SRC);
        let mut used = [0u64; KEY_WORDS];
        let mut all: Vec<Slot> = vec![l.cursor];
        all.extend(l.fields.iter().flat_map(|f| f.slots.iter().copied().chain(f.len)));
        all.extend(l.headers.iter().map(|h| h.valid));
        all.extend(l.stacks.iter().map(|s| s.next));
        let mut bits = 0u32;
        for s in all {
            assert!(u32::from(s.shift) + u32::from(s.width) <= 64, "{s:?}");
            assert_eq!(used[usize::from(s.word)] & s.mask(), 0, "{s:?} overlaps");
            used[usize::from(s.word)] |= s.mask();
            bits += u32::from(s.width);
        }
        assert_eq!(bits, l.bits_used);
    }

    #[test]
    fn too_big_is_refused_with_the_sizes() {
        let src = r#"
#include <core.p4>
#include <v1model.p4>
header big_t { bit<1024> a; bit<1024> b; }
struct meta_t { }
struct headers { big_t h; }
control c(inout headers hdr) { apply { hdr.h.setValid(); } }
"#;
        let loaded = crate::parse::load_str("t.p4", src).unwrap();
        let env = TypeEnv::new(&loaded.program).unwrap();
        let [h, m, s] = ["headers", "meta_t", "standard_metadata_t"].map(|n| env.named(n).unwrap());
        let e = Layout::new(&loaded.program, &env, &h, &m, &s, Span::default()).unwrap_err();
        assert!(e.message.contains("needs") && e.message.contains("1536"), "{}", e.message);
    }

    #[test]
    fn members_the_code_never_names_are_left_out_only_when_needed() {
        let src = r#"
#include <core.p4>
#include <v1model.p4>
header big_t { bit<1024> a; bit<8> b; }
header eth_t { bit<48> dst; }
struct inner_t { bit<512> x; }
struct meta_t { inner_t scratchpad; bit<8> k; }
struct headers { big_t spare; eth_t eth; }
control c(inout headers hdr, inout meta_t meta) {
    apply { hdr.eth.dst = 1; meta.k = 2; }
}
"#;
        let loaded = crate::parse::load_str("t.p4", src).unwrap();
        let env = TypeEnv::new(&loaded.program).unwrap();
        let [h, m, s] = ["headers", "meta_t", "standard_metadata_t"].map(|n| env.named(n).unwrap());
        let l = Layout::new(&loaded.program, &env, &h, &m, &s, Span::default()).unwrap();
        assert_eq!(
            l.left_out(),
            &[(Root::Headers, "spare".to_string()), (Root::Meta, "scratchpad".to_string())]
        );
        assert!(l.bits_used <= KEY_BITS && l.header(Root::Headers, "spare").is_none());
        let dst = l.field(Root::Headers, "eth.dst").unwrap();
        let mut key = FlowKey::ZERO;
        l.set_u128(&mut key, dst, 7);
        // The left-out members read as their defaults.
        let Value::Struct(hv) = l.decode(&key, Root::Headers) else { panic!("not a struct") };
        assert_eq!(hv.fields[0], h_field(&h, 0).default_value());
        assert_eq!(l.get_u128(&key, dst), 7);
        assert!(l.dump().contains("left out (never named): hdr.spare\n"), "{}", l.dump());
        // A layout that fits keeps everything.
        assert!(layout(SRC).left_out().is_empty());
    }

    fn h_field(t: &Ty, i: usize) -> Ty {
        match t {
            Ty::Struct(a) => a.fields[i].1.clone(),
            _ => panic!("not a struct"),
        }
    }
}
