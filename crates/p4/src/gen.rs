//! A generator of small random P4-16 programs, with table entries and
//! packets for them, and the differential check that runs them through
//! the reference interpreter and the compiled engine. A test and fuzz
//! aid: `tests/lower_engine.rs` drives it from a seeded [`Source`], the
//! `p4_compiled` fuzz target from the fuzzer's bytes. Nothing in the
//! switch uses it.
//!
//! # What a program holds
//! One to three headers of one to four fields (`bit<W>` up to 48 bits,
//! sometimes `int<8>`, padded to whole bytes), extracted by a parser
//! whose states `select` on an extracted field (values, `&&&` masks,
//! `default`, `accept` or `reject`); a metadata struct; an ingress with
//! up to two tables (exact, `lpm` and `ternary` keys on generated
//! fields, actions with parameters, a default action with arguments)
//! and straight-line code (`if`/`else` on generated conditions, `.hit`,
//! assignments, `setValid()`/`setInvalid()`, `mark_to_drop`, the egress
//! port); an egress with a few statements; a deparser emitting every
//! header. Expressions are typed as P4 types them: an `int` literal
//! appears only where a typed operand, the assignment target or a cast
//! gives it its width, or folds into one (`(3 << 2) + hdr.h0.f0`); casts
//! change width or signedness, never both at once.
//!
//! # Invariants
//! - Every program is valid P4-16 that the front end and the
//!   interpreter accept, every entry one the interpreter's control
//!   plane takes: [`check`] reports anything else as
//!   [`Check::Rejected`], a generator bug.
//! - Any byte string gives a program (an exhausted [`Source`] reads
//!   zeros), so every fuzzer input is a test.

use std::fmt::Write as _;

use crate::ast::BigValue;
use crate::interp::Interp;
use crate::lower::engine::Compiled;
use crate::parse;
use crate::target::{EntrySpec, KeyMatch, Output, Target};
use sluice_core::walk::CacheMode;

/// Where the generator's choices come from: a byte string (the fuzzer's
/// input, zeros once it is used up) or a seeded xorshift generator.
pub struct Source<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Non-zero: the xorshift state, used instead of `bytes`.
    rng: u64,
}

impl<'a> Source<'a> {
    /// Choices read from `bytes`, one byte at a time.
    pub fn bytes(bytes: &'a [u8]) -> Source<'a> {
        Source { bytes, pos: 0, rng: 0 }
    }

    /// Choices from a xorshift generator started at `seed`.
    pub fn seeded(seed: u64) -> Source<'static> {
        Source { bytes: &[], pos: 0, rng: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1 }
    }

    fn byte(&mut self) -> u8 {
        if self.rng != 0 {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            return (self.rng >> 24) as u8;
        }
        let b = self.bytes.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// A number below `n` (0 when `n` is 0 or 1).
    pub fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        let mut v: u64 = 0;
        let mut range: u64 = 1;
        while range < n {
            v = (v << 8) | u64::from(self.byte());
            range = range.saturating_mul(256);
        }
        v % n
    }

    /// True about once in `n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    /// A `w`-bit value, often an edge (0, 1, all ones, the top bit).
    pub fn value(&mut self, w: u32) -> u64 {
        let m = mask(w);
        match self.below(8) {
            0 => 0,
            1 => 1 & m,
            2 => m,
            3 => (1u64 << (w.clamp(1, 64) - 1)) & m,
            _ => {
                let mut v = 0u64;
                for _ in 0..w.div_ceil(8) {
                    v = (v << 8) | u64::from(self.byte());
                }
                v & m
            }
        }
    }

    fn pick<'b, T>(&mut self, xs: &'b [T]) -> &'b T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

fn mask(w: u32) -> u64 {
    if w >= 64 {
        u64::MAX
    } else {
        (1u64 << w) - 1
    }
}

/// A scalar type of the generated programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    Bits(u32),
    /// `int<8>`.
    S8,
    Bool,
    /// An `int` (a compile-time number still to be typed).
    Int,
}

impl Ty {
    fn width(self) -> u32 {
        match self {
            Ty::Bits(w) => w,
            Ty::S8 => 8,
            Ty::Bool => 1,
            Ty::Int => 0,
        }
    }
    fn name(self) -> String {
        match self {
            Ty::Bits(w) => format!("bit<{w}>"),
            Ty::S8 => "int<8>".into(),
            Ty::Bool => "bool".into(),
            Ty::Int => "int".into(),
        }
    }
}

/// A value a generated expression may read, with its type.
#[derive(Clone, Debug)]
struct Operand {
    text: String,
    ty: Ty,
}

#[derive(Clone, Debug)]
struct Field {
    name: String,
    ty: Ty,
}

#[derive(Clone, Debug)]
struct Header {
    fields: Vec<Field>,
}

impl Header {
    fn bytes(&self) -> usize {
        self.fields.iter().map(|f| f.ty.width() as usize).sum::<usize>() / 8
    }
    /// Bit offset of field `i` from the header's start.
    fn offset(&self, i: usize) -> u32 {
        self.fields[..i].iter().map(|f| f.ty.width()).sum()
    }
}

#[derive(Clone, Copy, Debug)]
enum Next {
    State(usize),
    Accept,
    Reject,
}

/// A `select` case: value, mask, next state.
type Case = (u64, u64, Next);

/// A parser state: it extracts header `i` (state `i`) and goes on.
#[derive(Clone, Debug)]
struct State {
    /// `select` on field `.0` of the header: `(value, mask, next)` cases,
    /// then the default.
    select: Option<(usize, Vec<Case>)>,
    next: Next,
}

/// A default action set through the control plane: `(table, action,
/// args)`.
pub type DefaultAction = (String, String, Vec<(String, BigValue)>);

/// A generated program, the entries to install and the packets to send.
#[derive(Clone, Debug)]
pub struct Program {
    /// The P4-16 source.
    pub text: String,
    /// Entries for its tables, installed in order.
    pub entries: Vec<EntrySpec>,
    /// Default actions set through the control plane after the entries:
    /// `(table, action, args)`.
    pub defaults: Vec<DefaultAction>,
    /// `(ingress port, frame)`.
    pub packets: Vec<(u32, Vec<u8>)>,
}

/// One action of the ingress: name and `(parameter, type)`.
#[derive(Clone, Debug)]
struct Action {
    name: String,
    params: Vec<(String, Ty)>,
}

struct Gen<'s, 'a> {
    s: &'s mut Source<'a>,
    headers: Vec<Header>,
    /// Metadata fields (`m.NAME`).
    meta: Vec<Field>,
    tables_left: Vec<usize>,
    /// The table code written so far (declarations in the ingress).
    out: String,
}

const WIDTHS: [u32; 7] = [8, 16, 32, 48, 4, 12, 1];

/// Generates a program, its entries and `npackets` packets from `s`.
pub fn program(s: &mut Source<'_>, npackets: usize) -> Program {
    let mut g = Gen {
        s,
        headers: Vec::new(),
        meta: Vec::new(),
        tables_left: Vec::new(),
        out: String::new(),
    };
    g.program(npackets)
}

impl Gen<'_, '_> {
    fn program(&mut self, npackets: usize) -> Program {
        let nh = 1 + self.s.below(3) as usize;
        for _ in 0..nh {
            let nf = 1 + self.s.below(4) as usize;
            let mut fields = Vec::new();
            let mut bits = 0;
            for j in 0..nf {
                let ty = if self.s.one_in(6) { Ty::S8 } else { Ty::Bits(*self.s.pick(&WIDTHS)) };
                bits += ty.width();
                fields.push(Field { name: format!("f{j}"), ty });
            }
            if bits % 8 != 0 {
                fields.push(Field { name: "pad".into(), ty: Ty::Bits(8 - bits % 8) });
            }
            self.headers.push(Header { fields });
        }
        self.meta = vec![
            Field { name: "m0".into(), ty: Ty::Bits(8) },
            Field { name: "m1".into(), ty: Ty::Bits(16) },
            Field { name: "m2".into(), ty: Ty::Bits(32) },
        ];
        let states = self.states();
        let mut t = String::from("#include <core.p4>\n#include <v1model.p4>\n");
        for (i, h) in self.headers.iter().enumerate() {
            let _ = write!(t, "header h{i}_t {{");
            for f in &h.fields {
                let _ = write!(t, " {} {};", f.ty.name(), f.name);
            }
            t.push_str(" }\n");
        }
        t.push_str("struct H {");
        for i in 0..self.headers.len() {
            let _ = write!(t, " h{i}_t h{i};");
        }
        t.push_str(" }\nstruct M {");
        for f in &self.meta {
            let _ = write!(t, " {} {};", f.ty.name(), f.name);
        }
        t.push_str(" }\n");
        t.push_str(
            "parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {\n",
        );
        for (i, st) in states.iter().enumerate() {
            let name = if i == 0 { "start".to_string() } else { format!("s{i}") };
            let _ = write!(t, "    state {name} {{ pkt.extract(hdr.h{i}); transition ");
            match &st.select {
                None => {
                    let _ = writeln!(t, "{}; }}", next_name(st.next));
                }
                Some((f, cases)) => {
                    let fl = &self.headers[i].fields[*f];
                    let w = fl.ty.width();
                    let _ = write!(t, "select(hdr.h{i}.{}) {{", fl.name);
                    for (v, m, n) in cases {
                        if *m == mask(w) {
                            let _ = write!(t, " {w}w{v}: {};", next_name(*n));
                        } else {
                            let _ = write!(t, " {w}w{v} &&& {w}w{m}: {};", next_name(*n));
                        }
                    }
                    let _ = writeln!(t, " default: {}; }} }}", next_name(st.next));
                }
            }
        }
        t.push_str("}\ncontrol V(inout H hdr, inout M m) { apply { } }\n");
        t.push_str("control I(inout H hdr, inout M m, inout standard_metadata_t sm) {\n");
        // Actions.
        let nact = 1 + self.s.below(3) as usize;
        let mut actions = Vec::new();
        for a in 0..nact {
            let np = self.s.below(3) as usize;
            let mut params = Vec::new();
            for p in 0..np {
                let ty = match self.s.below(4) {
                    0 => Ty::Bits(9),
                    _ => Ty::Bits(*self.s.pick(&[8, 16, 32, 4])),
                };
                params.push((format!("p{p}"), ty));
            }
            let ps: Vec<String> = params.iter().map(|(n, t)| format!("{} {n}", t.name())).collect();
            let mut scope = self.scope();
            for (n, ty) in &params {
                scope.push(Operand { text: n.clone(), ty: *ty });
            }
            let body = self.stmts(&scope, 1, 3, false, 2);
            let body = indent(&body, 1);
            let _ = writeln!(t, "    action a{a}({}) {{\n{body}    }}", ps.join(", "));
            actions.push(Action { name: format!("a{a}"), params });
        }
        // Tables.
        let ntab = self.s.below(3) as usize;
        let mut entries = Vec::new();
        let mut defaults = Vec::new();
        for k in 0..ntab {
            self.table(k, &actions, &mut entries, &mut defaults);
        }
        t.push_str(&self.out);
        self.tables_left = (0..ntab).collect();
        let scope = self.scope();
        let mut apply = String::new();
        if self.s.below(4) != 0 {
            let _ = writeln!(apply, "    sm.egress_spec = 9w{};", self.s.below(4));
        }
        apply.push_str(&self.stmts(&scope, 2, 6, true, 3));
        // Tables the statements did not apply are applied at the end.
        for k in std::mem::take(&mut self.tables_left) {
            let _ = writeln!(apply, "    t{k}.apply();");
        }
        let apply = indent(&apply, 1);
        let _ = writeln!(t, "    apply {{\n{apply}    }}\n}}");
        let eg = indent(&self.stmts(&scope, 0, 2, false, 1), 1);
        let _ = writeln!(
            t,
            "control E(inout H hdr, inout M m, inout standard_metadata_t sm) {{ apply {{\n{eg}    }} }}"
        );
        t.push_str("control C(inout H hdr, inout M m) { apply { } }\n");
        t.push_str("control D(packet_out pkt, in H hdr) { apply {");
        for i in 0..self.headers.len() {
            let _ = write!(t, " pkt.emit(hdr.h{i});");
        }
        t.push_str(" } }\nV1Switch(P(), V(), I(), E(), C(), D()) main;\n");
        let packets = (0..npackets).map(|_| self.packet(&states)).collect();
        Program { text: t, entries, defaults, packets }
    }

    /// A state per header: each goes on to a later one, `accept` or
    /// (rarely) `reject`, maybe through a `select`.
    fn states(&mut self) -> Vec<State> {
        let n = self.headers.len();
        let mut out = Vec::new();
        for i in 0..n {
            let next_of = |s: &mut Source<'_>| -> Next {
                if s.one_in(12) {
                    return Next::Reject;
                }
                let later = (n - i - 1) as u64;
                match s.below(later + 1) {
                    0 => Next::Accept,
                    j => Next::State(i + j as usize),
                }
            };
            let bitf: Vec<usize> = (0..self.headers[i].fields.len())
                .filter(|&f| matches!(self.headers[i].fields[f].ty, Ty::Bits(_)))
                .collect();
            let select = if !bitf.is_empty() && self.s.below(3) != 0 {
                let f = *self.s.pick(&bitf);
                let w = self.headers[i].fields[f].ty.width();
                let ncase = 1 + self.s.below(3) as usize;
                let cases = (0..ncase)
                    .map(|_| {
                        let m = if self.s.one_in(3) { self.s.value(w) } else { mask(w) };
                        let v = self.s.value(w) & m;
                        (v, m, next_of(self.s))
                    })
                    .collect();
                Some((f, cases))
            } else {
                None
            };
            let next = next_of(self.s);
            out.push(State { select, next });
        }
        out
    }

    /// Every header and metadata field, as operands.
    fn scope(&self) -> Vec<Operand> {
        let mut v = Vec::new();
        for (i, h) in self.headers.iter().enumerate() {
            for f in &h.fields {
                v.push(Operand { text: format!("hdr.h{i}.{}", f.name), ty: f.ty });
            }
        }
        for f in &self.meta {
            v.push(Operand { text: format!("m.{}", f.name), ty: f.ty });
        }
        v
    }

    /// Fields a table may match: unsigned header and metadata fields.
    fn key_fields(&self) -> Vec<(String, u32)> {
        self.scope()
            .into_iter()
            .filter_map(|o| match o.ty {
                Ty::Bits(w) => Some((o.text, w)),
                _ => None,
            })
            .collect()
    }

    fn table(
        &mut self,
        k: usize,
        actions: &[Action],
        entries: &mut Vec<EntrySpec>,
        defaults: &mut Vec<DefaultAction>,
    ) {
        let fields = self.key_fields();
        let nkeys = 1 + self.s.below(2) as usize;
        let mut keys: Vec<(String, u32, &str)> = Vec::new();
        for _ in 0..nkeys {
            let (f, w) = self.s.pick(&fields).clone();
            if keys.iter().any(|k| k.0 == f) {
                continue;
            }
            let has_lpm = keys.iter().any(|k| k.2 == "lpm");
            let kind = match self.s.below(3) {
                1 if !has_lpm => "lpm",
                2 => "ternary",
                _ => "exact",
            };
            keys.push((f, w, kind));
        }
        // A subset of the actions (at least one), maybe `NoAction`.
        let mut acts: Vec<&Action> = actions.iter().filter(|_| self.s.below(3) != 0).collect();
        if acts.is_empty() {
            acts.push(&actions[0]);
        }
        let noaction = self.s.one_in(3);
        let ks: Vec<String> = keys.iter().map(|(f, _, kind)| format!("{f}: {kind};")).collect();
        let mut names: Vec<String> = acts.iter().map(|a| a.name.clone()).collect();
        if noaction {
            names.push("NoAction".into());
        }
        let def = self.s.below(acts.len() as u64 + 1) as usize;
        let default = match acts.get(def) {
            Some(a) => {
                let args = self.args(a);
                let text: Vec<String> =
                    a.params.iter().zip(&args).map(|((_, t), (_, v))| const_text(*t, v)).collect();
                format!("{}({})", a.name, text.join(", "))
            }
            None if noaction => "NoAction()".into(),
            None => format!("{}({})", acts[0].name, {
                let args = self.args(acts[0]);
                let text: Vec<String> = acts[0]
                    .params
                    .iter()
                    .zip(&args)
                    .map(|((_, t), (_, v))| const_text(*t, v))
                    .collect();
                text.join(", ")
            }),
        };
        let _ = writeln!(
            self.out,
            "    table t{k} {{ key = {{ {} }} actions = {{ {}; }} default_action = {default}; }}",
            ks.join(" "),
            names.join("; ")
        );
        let ternary = keys.iter().any(|k| k.2 == "ternary");
        let n = self.s.below(5);
        for e in 0..n {
            let mut km = Vec::new();
            for (f, w, kind) in &keys {
                let v = self.s.value(*w);
                let m = match *kind {
                    "exact" => KeyMatch::Exact(BigValue::from_u128(u128::from(v))),
                    "lpm" => {
                        let len = self.s.below(u64::from(*w) + 1) as u32;
                        let keep = if len == 0 { 0 } else { mask(*w) & !mask(*w - len) };
                        KeyMatch::Lpm {
                            value: BigValue::from_u128(u128::from(v & keep)),
                            prefix_len: len,
                        }
                    }
                    _ => {
                        let m = self.s.value(*w);
                        KeyMatch::Ternary {
                            value: BigValue::from_u128(u128::from(v & m)),
                            mask: BigValue::from_u128(u128::from(m)),
                        }
                    }
                };
                km.push((f.clone(), m));
            }
            let a = *self.s.pick(&acts);
            let args = self.args(a);
            entries.push(EntrySpec {
                table: format!("t{k}"),
                keys: km,
                action: a.name.clone(),
                args,
                priority: ternary.then_some(10 + e),
            });
        }
        if self.s.one_in(3) {
            let a = *self.s.pick(&acts);
            let args = self.args(a);
            defaults.push((format!("t{k}"), a.name.clone(), args));
        }
    }

    fn args(&mut self, a: &Action) -> Vec<(String, BigValue)> {
        a.params
            .iter()
            .map(|(n, t)| (n.clone(), BigValue::from_u128(u128::from(self.s.value(t.width())))))
            .collect()
    }

    /// `lo..=hi` statements, nested at most `depth` deep; `control`:
    /// in an `apply` block (tables may be applied).
    fn stmts(&mut self, scope: &[Operand], lo: u64, hi: u64, control: bool, depth: u32) -> String {
        let n = lo + self.s.below(hi - lo + 1);
        let mut out = String::new();
        for _ in 0..n {
            let st = self.stmt(scope, control, depth);
            out.push_str(&indent(&st, 1));
        }
        out
    }

    fn stmt(&mut self, scope: &[Operand], control: bool, depth: u32) -> String {
        let nh = self.headers.len() as u64;
        match self.s.below(12) {
            0..=4 => {
                let targets: Vec<&Operand> = scope
                    .iter()
                    .filter(|o| o.text.starts_with("hdr.") || o.text.starts_with("m."))
                    .collect();
                let lhs = (*self.s.pick(&targets)).clone();
                let rhs = self.expr(scope, lhs.ty, 3);
                format!("{} = {rhs};", lhs.text)
            }
            5 | 6 if depth > 0 => {
                let c = if control && !self.tables_left.is_empty() && self.s.one_in(2) {
                    let i = self.s.below(self.tables_left.len() as u64) as usize;
                    let k = self.tables_left.remove(i);
                    let m = if self.s.one_in(2) { "hit" } else { "miss" };
                    format!("t{k}.apply().{m}")
                } else {
                    self.expr(scope, Ty::Bool, 3)
                };
                let a = self.stmts(scope, 0, 2, control, depth - 1);
                let b = self.stmts(scope, 0, 2, control, depth - 1);
                format!("if ({c}) {{\n{a}}} else {{\n{b}}}\n")
            }
            7 => format!("hdr.h{}.setValid();", self.s.below(nh)),
            8 => format!("hdr.h{}.setInvalid();", self.s.below(nh)),
            9 if self.s.one_in(3) => "mark_to_drop(sm);".into(),
            9 | 10 => {
                let ports: Vec<&Operand> = scope.iter().filter(|o| o.ty == Ty::Bits(9)).collect();
                if !ports.is_empty() && self.s.one_in(2) {
                    format!("sm.egress_spec = {};", self.s.pick(&ports).text)
                } else {
                    let e = self.expr(scope, Ty::Bits(2), 1);
                    format!("sm.egress_spec = (bit<9>)({e});")
                }
            }
            _ if control && !self.tables_left.is_empty() => {
                let i = self.s.below(self.tables_left.len() as u64) as usize;
                let k = self.tables_left.remove(i);
                format!("t{k}.apply();")
            }
            _ => {
                let w = *self.s.pick(&[8u32, 16]);
                let f = self.meta[(w / 8 - 1) as usize].name.clone();
                let e = self.expr(scope, Ty::Bits(w), 2);
                format!("m.{f} = m.{f} + {e};")
            }
        }
    }

    /// A leaf of type `t`: an operand of that type, a cast of another,
    /// or a constant.
    fn leaf(&mut self, scope: &[Operand], t: Ty) -> String {
        if t == Ty::Int {
            return format!("{}", self.s.below(300));
        }
        if t == Ty::Bool {
            let nh = self.headers.len() as u64;
            return match self.s.below(4) {
                0 => format!("hdr.h{}.isValid()", self.s.below(nh)),
                1 => "true".into(),
                2 => "false".into(),
                _ => {
                    let o = self.s.pick(scope).clone();
                    let other = self.leaf(scope, o.ty);
                    format!("({} == {other})", o.text)
                }
            };
        }
        let same: Vec<&Operand> = scope.iter().filter(|o| o.ty == t).collect();
        match self.s.below(5) {
            0 | 1 if !same.is_empty() => self.s.pick(&same).text.clone(),
            2 => {
                // A cast from another operand: width or signedness, not both.
                let o = self.s.pick(scope).clone();
                match (o.ty, t) {
                    (Ty::Bits(_), Ty::Bits(_)) | (Ty::S8, Ty::S8) => {
                        format!("(({}){})", t.name(), o.text)
                    }
                    (Ty::Bits(8), Ty::S8) | (Ty::S8, Ty::Bits(8)) => {
                        format!("(({}){})", t.name(), o.text)
                    }
                    (Ty::Bits(_), Ty::S8) => format!("((int<8>)(bit<8>){})", o.text),
                    (Ty::S8, Ty::Bits(_)) => format!("(({})(bit<8>){})", t.name(), o.text),
                    _ => self.constant(t),
                }
            }
            _ => self.constant(t),
        }
    }

    fn constant(&mut self, t: Ty) -> String {
        let v = self.s.value(t.width());
        match t {
            Ty::Bits(w) => format!("{w}w{v}"),
            Ty::S8 => format!("(int<8>)8w{v}"),
            _ => format!("{v}"),
        }
    }

    /// An expression of type `t`, at most `depth` operators deep.
    fn expr(&mut self, scope: &[Operand], t: Ty, depth: u32) -> String {
        if depth == 0 || self.s.one_in(4) {
            return self.leaf(scope, t);
        }
        let d = depth - 1;
        match t {
            Ty::Bool => match self.s.below(5) {
                0 => format!("!({})", self.expr(scope, Ty::Bool, d)),
                1 => format!(
                    "({} && {})",
                    self.expr(scope, Ty::Bool, d),
                    self.expr(scope, Ty::Bool, d)
                ),
                2 => format!(
                    "({} || {})",
                    self.expr(scope, Ty::Bool, d),
                    self.expr(scope, Ty::Bool, d)
                ),
                _ => {
                    let ot = *self.s.pick(&[Ty::Bits(8), Ty::Bits(16), Ty::S8, Ty::Bits(4)]);
                    let op = *self.s.pick(&["==", "!=", "<", "<=", ">", ">="]);
                    let a = self.expr(scope, ot, d);
                    // One side may be an `int` the other side types.
                    let b = if self.s.one_in(4) {
                        self.expr(scope, Ty::Int, d)
                    } else {
                        self.expr(scope, ot, d)
                    };
                    format!("({a} {op} {b})")
                }
            },
            Ty::Int => match self.s.below(4) {
                0 => {
                    let op = *self.s.pick(&["+", "-", "*", "&", "|", "^"]);
                    format!(
                        "({} {op} {})",
                        self.expr(scope, Ty::Int, d),
                        self.expr(scope, Ty::Int, d)
                    )
                }
                1 => {
                    let op = *self.s.pick(&["<<", ">>"]);
                    format!("({} {op} {})", self.expr(scope, Ty::Int, d), self.s.below(12))
                }
                2 => format!("(-{})", self.expr(scope, Ty::Int, d)),
                _ => self.leaf(scope, Ty::Int),
            },
            Ty::Bits(_) | Ty::S8 => {
                let w = t.width();
                match self.s.below(13) {
                    0..=4 => {
                        let op = *self.s.pick(&["+", "-", "*", "&", "|", "^", "|+|", "|-|"]);
                        let a = self.expr(scope, t, d);
                        // An `int` operand takes the other's type (not
                        // with saturating operators, which need widths
                        // on both sides in P4).
                        let b = if !op.starts_with('|') && self.s.one_in(4) {
                            self.expr(scope, Ty::Int, d)
                        } else {
                            self.expr(scope, t, d)
                        };
                        if self.s.one_in(2) {
                            format!("({a} {op} {b})")
                        } else {
                            format!("({b} {op} {a})")
                        }
                    }
                    5 => format!("(~{})", self.expr(scope, t, d)),
                    6 => format!("(-{})", self.expr(scope, t, d)),
                    7 => {
                        let op = *self.s.pick(&["<<", ">>"]);
                        let a = self.expr(scope, t, d);
                        if self.s.one_in(2) {
                            format!("({a} {op} {})", self.s.below(u64::from(w) + 4))
                        } else {
                            let amt: Vec<&Operand> = scope
                                .iter()
                                .filter(|o| matches!(o.ty, Ty::Bits(aw) if aw <= 16))
                                .collect();
                            let amt = self.s.pick(&amt).text.clone();
                            format!("({a} {op} {amt})")
                        }
                    }
                    8 => {
                        let c = self.expr(scope, Ty::Bool, d);
                        let a = self.expr(scope, t, d);
                        let b = if self.s.one_in(4) {
                            self.expr(scope, Ty::Int, d)
                        } else {
                            self.expr(scope, t, d)
                        };
                        format!("({c} ? {a} : {b})")
                    }
                    9 if matches!(t, Ty::Bits(_)) && w < 48 => {
                        // A slice of a wider value.
                        let from = *self.s.pick(&[16u32, 32, 48]);
                        if from <= w {
                            return self.leaf(scope, t);
                        }
                        let lo = self.s.below(u64::from(from - w) + 1) as u32;
                        let a = self.expr(scope, Ty::Bits(from), d);
                        format!("({a})[{}:{lo}]", lo + w - 1)
                    }
                    10 if matches!(t, Ty::Bits(_)) && w >= 2 => {
                        let hi = 1 + self.s.below(u64::from(w) - 1) as u32;
                        let a = self.expr(scope, Ty::Bits(hi), d);
                        let b = self.expr(scope, Ty::Bits(w - hi), d);
                        format!("({a} ++ {b})")
                    }
                    11 => {
                        // Typed by its context: an `int` expression.
                        let i = self.expr(scope, Ty::Int, d);
                        format!("(({}){i})", t.name())
                    }
                    _ => self.leaf(scope, t),
                }
            }
        }
    }

    /// A frame for the parser's paths: each state's header in turn, its
    /// `select` field often set to one of its cases; sometimes cut short
    /// or followed by a payload.
    fn packet(&mut self, states: &[State]) -> (u32, Vec<u8>) {
        let mut frame = Vec::new();
        let mut at = Next::State(0);
        while let Next::State(i) = at {
            let h = &self.headers[i];
            let mut bytes: Vec<u8> = (0..h.bytes()).map(|_| self.s.below(256) as u8).collect();
            let st = &states[i];
            at = st.next;
            if let Some((f, cases)) = &st.select {
                let w = h.fields[*f].ty.width();
                let off = h.offset(*f);
                let mut v = get_bits(&bytes, off, w);
                let mut taken = None;
                if !cases.is_empty() && self.s.below(4) != 0 {
                    let (cv, cm, _) = cases[self.s.below(cases.len() as u64) as usize];
                    v = (v & !cm) | cv;
                    set_bits(&mut bytes, off, w, v);
                }
                for (cv, cm, n) in cases {
                    if v & cm == *cv {
                        taken = Some(*n);
                        break;
                    }
                }
                if let Some(n) = taken {
                    at = n;
                }
            }
            frame.extend_from_slice(&bytes);
        }
        let extra = self.s.below(6) as usize;
        frame.extend((0..extra).map(|_| self.s.below(256) as u8));
        if self.s.one_in(6) {
            let keep = self.s.below(frame.len() as u64 + 1) as usize;
            frame.truncate(keep);
        }
        (self.s.below(4) as u32, frame)
    }
}

/// `text` with every line indented `levels` times four spaces.
fn indent(text: &str, levels: usize) -> String {
    let ind = "    ".repeat(levels);
    let mut out = String::new();
    for l in text.lines() {
        let _ = writeln!(out, "{ind}{l}");
    }
    out
}

fn next_name(n: Next) -> String {
    match n {
        Next::State(i) => format!("s{i}"),
        Next::Accept => "accept".into(),
        Next::Reject => "reject".into(),
    }
}

fn const_text(t: Ty, v: &BigValue) -> String {
    format!("{}w{}", t.width(), v.to_u128().unwrap_or(0))
}

/// Bits `off..off + w` of `b` (most significant first), as a number.
fn get_bits(b: &[u8], off: u32, w: u32) -> u64 {
    let mut v = 0u64;
    for i in off..off + w {
        let bit = (b[(i / 8) as usize] >> (7 - i % 8)) & 1;
        v = (v << 1) | u64::from(bit);
    }
    v
}

fn set_bits(b: &mut [u8], off: u32, w: u32, v: u64) {
    for k in 0..w {
        let i = off + k;
        let bit = (v >> (w - 1 - k)) & 1;
        let m = 0x80u8 >> (i % 8);
        if bit == 1 {
            b[(i / 8) as usize] |= m;
        } else {
            b[(i / 8) as usize] &= !m;
        }
    }
}

/// The cache modes and lookups the compiled engine is checked in:
/// `(cache mode, indexed)`.
pub const MODES: [(CacheMode, bool); 7] = [
    (CacheMode::Off, true),
    (CacheMode::Off, false),
    (CacheMode::Megaflow, true),
    (CacheMode::Megaflow, false),
    (CacheMode::On, true),
    (CacheMode::On, false),
    (CacheMode::Auto, true),
];

/// What [`check`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// Every packet gave the same outputs on the interpreter and the
    /// compiled engine in every mode.
    Agreed,
    /// The lowering refused the program (the first line of its message).
    Refused(String),
    /// The front end or interpreter rejected the program, an entry or a
    /// packet: a generator bug.
    Rejected(String),
    /// The engine and the interpreter disagree.
    Mismatch(String),
}

/// Runs `p` on the interpreter and, compiled, in each of `modes`:
/// entries and defaults installed through [`Target`], then every packet;
/// the outputs (ports, bytes; a drop is no output) must be equal.
pub fn check(p: &Program, modes: &[(CacheMode, bool)]) -> Check {
    let loaded = match parse::load_str("gen.p4", &p.text) {
        Ok(l) => l,
        Err(e) => return Check::Rejected(e.render()),
    };
    let mut interp = match Interp::new(&loaded) {
        Ok(i) => i,
        Err(d) => return Check::Rejected(loaded.sources.render(&d)),
    };
    let mut ok = Vec::new();
    for e in &p.entries {
        // An entry whose key another entry already has is refused by both.
        ok.push(interp.add_entry(e).is_ok());
    }
    for (t, a, args) in &p.defaults {
        if let Err(e) = interp.set_default(t, a, args) {
            return Check::Rejected(format!("default {t} {a}: {e}"));
        }
    }
    let mut want: Vec<Vec<Output>> = Vec::new();
    for (port, frame) in &p.packets {
        match interp.packet(*port, frame) {
            Ok(o) => want.push(o),
            Err(e) => return Check::Rejected(format!("packet {frame:02x?}: {e}")),
        }
    }
    for &(mode, indexed) in modes {
        let mut c = match Compiled::new(&loaded) {
            Ok(c) => c,
            Err(d) => {
                let r = loaded.sources.render(&d);
                return Check::Refused(r.lines().next().unwrap_or("").to_string());
            }
        };
        c.set_cache_mode(mode);
        c.set_indexed(indexed);
        for (e, ok) in p.entries.iter().zip(&ok) {
            let got = c.add_entry(e);
            if got.is_ok() != *ok {
                return Check::Mismatch(format!(
                    "entry {e:?}: engine {got:?}, interpreter ok {ok}"
                ));
            }
        }
        for (t, a, args) in &p.defaults {
            if let Err(e) = c.set_default(t, a, args) {
                return Check::Mismatch(format!("default {t} {a}: engine refused: {e}"));
            }
        }
        for ((port, frame), want) in p.packets.iter().zip(&want) {
            match c.packet(*port, frame) {
                Ok(got) if got == *want => {}
                got => {
                    return Check::Mismatch(format!(
                        "{mode:?} indexed {indexed}, port {port}, frame {frame:02x?}: engine {got:?}, interpreter {want:?}"
                    ))
                }
            }
        }
        // Then as a port's receive bursts (runs of one ingress port),
        // twice: the first learns raw-header cache entries, the second
        // hits them. The outputs are the packets' outputs in order.
        for round in 0..2 {
            let mut at = 0;
            while at < p.packets.len() {
                let port = p.packets[at].0;
                let run = p.packets[at..].iter().take_while(|x| x.0 == port).count();
                let frames: Vec<&[u8]> = p.packets[at..at + run].iter().map(|x| &x.1[..]).collect();
                let mut got = Vec::new();
                let mut refused = Vec::new();
                c.burst_into(
                    port,
                    &frames,
                    &mut |port, d| got.push(Output { port, data: d.to_vec() }),
                    &mut |i, e| refused.push((i, e)),
                );
                let want: Vec<Output> = want[at..at + run].iter().flatten().cloned().collect();
                if got != want || !refused.is_empty() {
                    return Check::Mismatch(format!(
                        "{mode:?} indexed {indexed}, burst {round} of frames {at}..{} from port {port}: engine {got:?} (refused {refused:?}), interpreter {want:?}",
                        at + run
                    ));
                }
                at += run;
            }
        }
    }
    Check::Agreed
}
