//! The P4 parser compiled into a parse program: the stage that fills the
//! core's key (the header vector of [`super::layout`]) from a frame.
//!
//! # What
//! [`ParseProg::compile`] turns the v1model parser's states into a small
//! program of [`POp`]s and transitions over key slots; [`ParseProg::run`]
//! executes it on a frame, and [`ParseProg`] implements the core's
//! [`Parse`] hook so a walk can use it instead of the fixed parser.
//!
//! Supported: `extract` of headers (into a header, a constant stack
//! element, `stack.next`, or a member of `unionstack.next`; a header with
//! a varbit field with `extract(h, size)`) and `extract<T>(_)`; `advance`
//! by a constant or a value; `lookahead<T>()` as a statement; `verify` of
//! conditions built from comparisons, `!`, `&&`, `||`, booleans and
//! `isValid()`; assignments to fields; `transition accept/reject/state`
//! and `select` with values, `&&&` masks, `lo .. hi` ranges and
//! `default`/`_`. Values are fields (also of `stack.last`/`stack.next`),
//! constants, `lookahead<T>()` (or a field of it), slices, `+ - *`,
//! bitwise operators, shifts, `++`, negation and casts, all within 128
//! bits, computed as the interpreter computes them. Variables declared
//! in a state (`bit<W>` or `bool`) are compiled by substitution (`Var`):
//! a read is the value last assigned, refused if something it was
//! computed from may have changed since. Variables declared on a parser
//! (`bit<W≤64>` or `bool`, without an initialiser) are fields of their
//! own ([`Layout::add_hidden`]), zero when the parser starts, as the
//! interpreter starts them, and zeroed again when the parse ends.
//!
//! Sub-parsers: `inst.apply(pkt, args..)` as a statement of a state, of
//! a parser instance declared in the parser, is inlined. The sub-parser's
//! states are compiled after the others (a copy per `apply`), each
//! `inout`/`out` parameter bound to its argument's place (a path from the
//! caller's parameters or a parser variable), so what it writes lands
//! where the interpreter's copy-out puts it, after an `accept` and after
//! a reject alike; `out` arguments (fields or variables only) and the
//! sub-parser's variables are zeroed on entry, as a new invocation starts
//! them. The caller's state is split at the `apply`: the part before it
//! ends by entering the sub-parser, whose `accept` goes to a state
//! holding the rest (its statements and transition); a reject or an error
//! inside ends the whole parse with that error, as in the interpreter.
//! The transition bound is counted per invocation, as the interpreter
//! counts it: each state has a `level` (sub-parser depth, at most
//! `MAX_NEST`), entering a sub-parser restarts its level's count, and the
//! rest of a split state does not count (the interpreter counts the
//! caller's state once). Refused: other directions (`in`, none),
//! arguments that overlap (copy-in/copy-out would then differ from
//! binding) or whose type is not the parameter's, `out` arguments that
//! are not scalars, an `apply` after a variable declared in the same
//! state or inside a block, generic sub-parsers or ones with constructor
//! parameters, instances of anything other than a parser, and programs
//! whose worst case (looping sub-parsers applied in loops) exceeds
//! `MAX_WORK` states for one frame, so that a run stays bounded.
//!
//! # Basic design
//! The program mirrors the reference interpreter ([`crate::interp`]) step
//! for step, because it is tested against it frame by frame:
//! - the key is zeroed, the non-zero defaults written (`error.NoError`),
//!   then `ingress_port` and `packet_length` set as the interpreter sets
//!   them;
//! - states run at most [`crate::interp::MAX_PARSER_TRANSITIONS`] times,
//!   counted as the interpreter counts them (`ParserTimeout` after);
//! - an extract that does not fit rejects with `PacketTooShort` and
//!   writes nothing (a varbit longer than its maximum: `HeaderTooShort`,
//!   checked field by field in the interpreter's order); `.next` past the end, `.last` of an empty stack
//!   reject with `StackOutOfBounds`; a `select` that matches no case
//!   rejects with `NoMatch`, `transition reject` with `NoError`;
//! - whatever was extracted or assigned before a reject stays, the cursor
//!   is stored where the parser stopped, and `parser_error` is written
//!   last (the interpreter overwrites it after the parser too).
//!
//! Anything else (`if`, value sets, division, saturating arithmetic, varbits as values, values over 128
//! bits, ...) is refused at its span by [`super::refuse`]: compile-time
//! only, never a wrong parse.
//!
//! # Invariants
//! - [`ParseProg::run`] never panics and does bounded work: at most
//!   `MAX_PARSER_TRANSITIONS` states per parser invocation and
//!   `MAX_WORK` in all, each a fixed list of ops.
//! - Reads of the frame are bounds-checked before they are made; every
//!   slot written comes from the layout (inside the key).

use std::sync::Arc;

use sluice_core::keyop::{ones, MaskedSlot, Slot};
use sluice_core::pkt::Parse;
use sluice_packet::key::FlowKey;
use sluice_packet::parse::{Meta, ParseInfo};

use super::layout::{Elem, FieldTy, Item, Layout, Root};
use super::refuse;
use crate::ast::{
    BinOp, Expr, ExprKind, Keyset, Local, ParserDecl, Program, Stmt, Transition, UnOp,
};
use crate::diag::{Diagnostic, Result, Span};
use crate::interp::MAX_PARSER_TRANSITIONS;
use crate::types::{Ty, TypeEnv};
use crate::value::{Bits, Value};

mod quick;

/// Where a transition goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    Accept,
    Reject,
    State(usize),
}

/// A value a parse program computes (all fit in 128 bits).
#[derive(Clone, Debug)]
pub enum Src {
    Const(u128),
    Field(usize),
    /// A field of a stack's `last` (or `next`) element: the field in
    /// each element.
    Elem {
        stack: usize,
        last: bool,
        fields: Vec<usize>,
    },
    /// A header's validity.
    Valid(usize),
    /// `width` bits at `off` bits past the cursor; `need` bits must be
    /// there (a lookahead of a whole header needs all of it).
    Look {
        off: u32,
        width: u32,
        need: u32,
    },
    Slice {
        src: Box<Src>,
        hi: u32,
        lo: u32,
    },
    /// `a op b` on `width`-bit values (`int<W>` when `signed`), the
    /// result reduced to `width` bits; a shift's `b` is its own width.
    Bin {
        op: ArOp,
        a: Box<Src>,
        b: Box<Src>,
        width: u32,
        signed: bool,
    },
    /// `a ++ b`, `b` being `low` bits wide.
    Concat {
        a: Box<Src>,
        b: Box<Src>,
        low: u32,
    },
    /// `-a` (`neg`) or `~a` within `width` bits.
    Un {
        neg: bool,
        a: Box<Src>,
        width: u32,
    },
    /// `(bit<to>) a` / `(int<to>) a`: `a` (`from` bits wide) sign-extended
    /// when `sext`, then reduced to `to` bits.
    Cast {
        a: Box<Src>,
        from: u32,
        sext: bool,
        to: u32,
    },
}

/// Arithmetic and bitwise operators a parse program computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArOp {
    Add,
    Sub,
    Mul,
    And,
    Or,
    Xor,
    Shl,
    Shr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A condition (`verify`).
#[derive(Clone, Debug)]
pub enum Cond {
    Const(bool),
    Src(Src),
    Not(Box<Cond>),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    /// Signed comparisons compare `width`-bit two's-complement values.
    Cmp {
        op: CmpOp,
        a: Src,
        b: Src,
        width: u32,
        signed: bool,
    },
}

/// One step of a state's body.
#[derive(Clone, Debug)]
pub enum POp {
    /// Extracts a header whose fixed fields are `width` bits; `size` is
    /// the length of its varbit field (`extract(h, size)`).
    Extract {
        header: usize,
        width: u32,
        size: Option<Src>,
    },
    /// Extracts into the stack's next element (`member`: of a union
    /// element), then advances the stack.
    ExtractNext {
        stack: usize,
        member: Option<usize>,
        width: u32,
        size: Option<Src>,
    },
    /// Skips bits (`advance`, `extract<T>(_)`).
    Skip(u64),
    /// Skips as many bits as a value says (`advance(e)`).
    SkipBy(Src),
    /// Needs bits past the cursor without taking them (a `lookahead`
    /// whose value is not used).
    Need(u64),
    Verify {
        cond: Cond,
        error: u32,
    },
    /// Writes a field (`header`: the union member it belongs to, whose
    /// siblings a write into a valid member invalidates).
    Set {
        field: usize,
        src: Src,
        header: Option<usize>,
    },
}

/// One keyset of a case, over one select key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Match {
    Any,
    /// `key & mask == value` (`value` already masked).
    Mask {
        value: u128,
        mask: u128,
    },
    /// `lo <= key <= hi` (signed keys compared with their sign bit
    /// flipped).
    Range {
        lo: u128,
        hi: u128,
        flip: u128,
    },
}

#[derive(Clone, Debug)]
pub struct Case {
    pub keys: Vec<Match>,
    pub next: Next,
}

#[derive(Clone, Debug)]
pub enum Trans {
    Go(Next),
    Select { keys: Vec<Src>, cases: Vec<Case> },
}

#[derive(Clone, Debug)]
pub struct State {
    pub name: String,
    pub ops: Vec<POp>,
    pub trans: Trans,
    /// How deep in sub-parsers the state is (0: the v1model parser).
    pub level: usize,
    /// Whether running it counts against its level's transition bound
    /// (the rest of a state after a sub-parser's `apply` does not: the
    /// interpreter counts that state once).
    pub counts: bool,
    /// After its ops, the bound of this level starts again (the state
    /// ends with a sub-parser's `apply`: a new invocation).
    pub resets: Option<usize>,
    /// It is entered when the sub-parser of this level accepts, which
    /// is a timeout if that sub-parser used up its bound.
    pub ret: Option<usize>,
}

/// Most sub-parsers nested in one another.
const MAX_NEST: usize = 4;

/// Most headers whose extraction a parse records ([`ParseProg::mark`]).
pub const MAX_MARKS: usize = 4;

/// Error codes the program itself raises.
#[derive(Clone, Copy, Debug)]
struct Codes {
    no_error: u32,
    too_short: u32,
    out_of_bounds: u32,
    header_too_short: u32,
    no_match: u32,
    timeout: u32,
}

/// A compiled parser.
#[derive(Clone, Debug)]
pub struct ParseProg {
    pub layout: Arc<Layout>,
    /// The parsers' own variables' fields, zeroed when the parse ends.
    hidden: Vec<usize>,
    pub states: Vec<State>,
    pub start: Next,
    /// The standard metadata the parse writes, when each is one slot
    /// (it is, in the layout's v1model `standard_metadata`).
    ingress_port: Option<MaskedSlot>,
    packet_length: Option<MaskedSlot>,
    parser_error: Option<MaskedSlot>,
    /// The layout's cursor slot.
    cursor: MaskedSlot,
    codes: Codes,
    /// Headers whose extraction is recorded ([`ParseProg::mark`]): by
    /// header index, the index into `run_marked`'s `at` (`u8::MAX`: none).
    mark: Vec<u8>,
    /// By header index: its slots in packet order, for headers without
    /// a varbit field (extracted by one loop over them).
    flat: Vec<Option<Flat>>,
    /// The key a parse starts from: every field its default.
    init: FlowKey,
    /// The states' quick form, when there is one ([`quick`]).
    quick: Option<quick::Quick>,
    /// By header index: a key slot the parse writes, on each extraction
    /// of the header, with one more than the byte offset it was extracted
    /// from (0 when not byte-aligned or past [`POS_MAX`]), for the
    /// in-place deparser ([`ParseProg::record_positions`]).
    pos: Vec<Option<MaskedSlot>>,
}

/// Largest value a position slot ([`ParseProg::record_positions`])
/// holds: they are 16 bits wide.
pub const POS_MAX: u64 = 0xFFFF;

/// A header of fixed-width fields as one list: its slots in packet order,
/// each with its bit offset from the header's start, where slots
/// adjacent in both the packet and one key word are merged into one
/// (the layout places a header's fields in such runs of up to 64 bits),
/// so a run is extracted, emitted or written back in place at once.
#[derive(Clone, Debug)]
pub(crate) struct Flat {
    pub slots: Box<[(MaskedSlot, u32)]>,
    /// The header's width in bits.
    pub bits: u32,
}

impl Flat {
    /// `None` for a header with a varbit field.
    pub(crate) fn of(l: &Layout, hd: &super::layout::Header) -> Option<Flat> {
        let mut slots = Vec::new();
        let mut off = 0u32;
        for &f in &hd.fields {
            let fd = l.fields.get(f)?;
            if let FieldTy::Varbit(_) = fd.ty {
                return None;
            }
            for s in &fd.slots {
                slots.push((*s, off));
                off += u32::from(s.width);
            }
        }
        // Slots next to each other in both the packet and one key word
        // (a run the layout placed, high bits first) become one.
        let mut runs: Vec<(Slot, u32)> = Vec::with_capacity(slots.len());
        for (s, o) in slots {
            if let Some((r, _)) = runs.last_mut() {
                let width = u32::from(r.width) + u32::from(s.width);
                if r.word == s.word
                    && u32::from(s.shift) + u32::from(s.width) == u32::from(r.shift)
                    && width <= 64
                {
                    *r = Slot { word: r.word, shift: s.shift, width: width as u8 };
                    continue;
                }
            }
            runs.push((s, o));
        }
        Some(Flat { slots: runs.into_iter().map(|(s, o)| (s.into(), o)).collect(), bits: off })
    }
}

/// Field `f`'s one slot, if it has one; a field of several slots is
/// refused at `span` (v1model's standard metadata the parse writes are
/// at most 32 bits wide).
fn one_slot(l: &Layout, f: Option<usize>, span: Span) -> Result<Option<MaskedSlot>> {
    let Some(f) = f else { return Ok(None) };
    match l.fields.get(f).map(|x| &x.slots[..]) {
        Some([s]) => Ok(Some((*s).into())),
        _ => Err(refuse(span, "standard metadata wider than 64 bits")),
    }
}

/// The static type of a [`Src`].
#[derive(Clone, Debug, PartialEq)]
enum K {
    Bits {
        signed: bool,
        width: u32,
    },
    Bool,
    Error,
    Enum(String),
    /// An `int` constant, typed by where it is used.
    Int(i128),
    /// Never a value here: refused where used.
    Varbit(u32),
}

impl K {
    fn of(t: &FieldTy) -> K {
        match t {
            FieldTy::Bits { signed, width } => K::Bits { signed: *signed, width: *width },
            FieldTy::Bool => K::Bool,
            FieldTy::Error => K::Error,
            FieldTy::Enum(e) => K::Enum(e.name.clone()),
            FieldTy::Varbit(max) => K::Varbit(*max),
        }
    }

    fn width(&self) -> u32 {
        match self {
            K::Bits { width, .. } => *width,
            K::Bool => 1,
            K::Error | K::Enum(_) => 32,
            K::Int(_) => 0,
            K::Varbit(max) => *max,
        }
    }
}

/// Where an expression points in the header vector.
enum Place {
    Static(Root, String),
    /// `stack.last` / `stack.next` followed by `rest` (`.f`, `.m.f`).
    Dyn {
        stack: usize,
        last: bool,
        rest: String,
    },
}

struct Cx<'a> {
    env: &'a TypeEnv,
    prog: &'a Program,
    l: &'a Layout,
    pkt: String,
    /// Names bound to places: the parser's parameters (a sub-parser's
    /// to its caller's arguments) and its own variables.
    binds: Vec<(String, Root, String)>,
    consts: Vec<(String, Value)>,
    p: &'a ParserDecl,
    /// The instance path of this (sub-)parser (`""`, `subp.`).
    prefix: String,
    /// Where its states start in the program's states.
    base: usize,
    /// Where `accept` goes (a sub-parser returns to its caller).
    accept: Next,
    level: usize,
    states: &'a std::cell::RefCell<Vec<State>>,
    /// The current state's local variables ([`Var`]), innermost last.
    vars: std::cell::RefCell<Vec<Var>>,
}

/// A variable local to a parser state, compiled by substitution: its
/// value is the [`Src`] last assigned to it, read where the variable is
/// read. That is exact only while nothing the `Src` reads has changed,
/// so every op the state emits after the assignment marks the variable
/// stale if it may write what the value reads (a field, a header's
/// validity, a stack element, the cursor for a `lookahead`); reading a
/// stale variable is refused at the read. State bodies are straight-line
/// code (no `if`), so this tracking is exact at compile time.
#[derive(Clone, Debug)]
struct Var {
    name: String,
    value: Src,
    k: K,
    stale: bool,
}

/// What a [`Src`] reads: fields, headers' validity, and whether it reads
/// stack elements (by a run-time index) or the frame past the cursor.
#[derive(Default)]
struct Reads {
    fields: Vec<usize>,
    valid: Vec<usize>,
    elems: bool,
    look: bool,
}

impl Reads {
    fn of(s: &Src, out: &mut Reads) {
        match s {
            Src::Const(_) => {}
            Src::Field(f) => out.fields.push(*f),
            Src::Elem { .. } => out.elems = true,
            Src::Valid(h) => out.valid.push(*h),
            Src::Look { .. } => out.look = true,
            Src::Slice { src, .. } => Reads::of(src, out),
            Src::Bin { a, b, .. } | Src::Concat { a, b, .. } => {
                Reads::of(a, out);
                Reads::of(b, out);
            }
            Src::Un { a, .. } | Src::Cast { a, .. } => Reads::of(a, out),
        }
    }

    fn any_state(&self) -> bool {
        !self.fields.is_empty() || !self.valid.is_empty() || self.elems
    }

    /// Whether running `op` may change what these reads see.
    fn changed_by(&self, op: &POp, l: &Layout) -> bool {
        match op {
            POp::Verify { .. } | POp::Need(_) => false,
            POp::Skip(_) | POp::SkipBy(_) => self.look,
            POp::Extract { header, .. } => {
                let h = &l.headers[*header];
                self.look
                    || self.elems
                    || self.valid.contains(header)
                    || self.fields.iter().any(|f| h.fields.contains(f))
            }
            POp::ExtractNext { .. } => self.look || self.any_state(),
            POp::Set { field, header: None, .. } => self.elems || self.fields.contains(field),
            POp::Set { header: Some(_), .. } => self.any_state(),
        }
    }
}

const MAX_DEPTH: u32 = 64;

impl ParseProg {
    /// Compiles `prog`'s v1model parser (laying out its header vector).
    pub fn compile(prog: &Program) -> Result<ParseProg> {
        let env = TypeEnv::new(prog)?;
        let (p, [h, m, s]) = super::pipeline_parser(prog, &env)?;
        let layout = Layout::new(prog, &env, &h, &m, &s, p.name.span)?;
        ParseProg::compile_with(prog, &env, p, Arc::new(layout))
    }

    /// Compiles parser `p` of `prog` over `layout`.
    pub fn compile_with(
        prog: &Program,
        env: &TypeEnv,
        p: &ParserDecl,
        layout: Arc<Layout>,
    ) -> Result<ParseProg> {
        if let Some(c) = p.ctor_params.first() {
            return Err(refuse(c.span, "a parser with constructor parameters"));
        }
        let names: Vec<&str> = p.params.iter().map(|x| x.name.name.as_str()).collect();
        let [pkt, h, m, s] = names[..] else {
            return Err(refuse(p.span, "a v1model parser without exactly four parameters"));
        };
        // The parsers' own variables (this one's and its sub-parsers'),
        // each in a key word of its own.
        let mut layout = Arc::unwrap_or_clone(layout);
        let mut hidden = Vec::new();
        hidden_vars(prog, env, p, "", 0, &mut layout, &mut hidden)?;
        if parse_work(prog, p, 0)? > MAX_WORK {
            return Err(refuse(
                p.name.span,
                "sub-parsers that may loop, applied in a loop this deep",
            ));
        }
        let layout = Arc::new(layout);
        let l = &*layout;
        let mut binds = vec![
            (h.to_string(), Root::Headers, String::new()),
            (m.to_string(), Root::Meta, String::new()),
            (s.to_string(), Root::Std, String::new()),
        ];
        binds.extend(var_binds(p, ""));
        let states = std::cell::RefCell::new(Vec::new());
        let cx = Cx {
            env,
            prog,
            l,
            pkt: pkt.to_string(),
            binds,
            consts: parser_consts(env, p)?,
            p,
            prefix: String::new(),
            base: 0,
            accept: Next::Accept,
            level: 0,
            states: &states,
            vars: std::cell::RefCell::new(Vec::new()),
        };
        cx.compile_states()?;
        let start = cx.next("start", p.name.span)?;
        let states = states.into_inner();
        let code = |n: &str| {
            l.error_code(n).ok_or_else(|| {
                Diagnostic::new(p.span, format!("lowering: `error.{n}` is not declared"))
            })
        };
        let codes = Codes {
            no_error: code("NoError")?,
            too_short: code("PacketTooShort")?,
            out_of_bounds: code("StackOutOfBounds")?,
            header_too_short: code("HeaderTooShort")?,
            no_match: code("NoMatch")?,
            timeout: code("ParserTimeout")?,
        };
        let flat = l.headers.iter().map(|hd| Flat::of(l, hd)).collect();
        let mut init = FlowKey::ZERO;
        l.write_defaults(&mut init);
        let mut prog = ParseProg {
            init,
            quick: None,
            hidden,
            ingress_port: one_slot(l, l.field(Root::Std, "ingress_port"), p.span)?,
            packet_length: one_slot(l, l.field(Root::Std, "packet_length"), p.span)?,
            parser_error: one_slot(
                l,
                l.field(Root::Std, "parser_error")
                    .filter(|&f| l.fields.get(f).is_some_and(|x| x.ty == FieldTy::Error)),
                p.span,
            )?,
            cursor: l.cursor.into(),
            layout,
            states,
            start,
            codes,
            mark: Vec::new(),
            flat,
            pos: Vec::new(),
        };
        prog.quick = quick::Quick::of(&prog);
        Ok(prog)
    }

    /// Whether a parser statement assigns a field of header `h` (its
    /// fields in the key are then not the packet's bits).
    fn assigned(&self, h: usize) -> bool {
        let fields = self.layout.headers.get(h).map(|x| &x.fields[..]).unwrap_or(&[]);
        self.states
            .iter()
            .flat_map(|st| &st.ops)
            .any(|op| matches!(op, POp::Set { field, .. } if fields.contains(field)))
    }

    /// Has every extraction of header `h` write into `slot` (16 bits)
    /// one more than the byte offset it was extracted from, or 0 when it
    /// was not extracted on a byte boundary (or too far in). The slot is
    /// zero before the parse, so after it, the slot says where the
    /// header's last extraction was, if any. Headers a parser statement
    /// writes into are not recorded (their fields are not the packet's
    /// bits); says whether `h` is.
    pub fn record_positions(&mut self, h: usize, slot: sluice_core::keyop::Slot) -> bool {
        let l = self.layout.clone();
        if h >= l.headers.len() || self.assigned(h) || slot.width != 16 {
            return false;
        }
        if self.pos.len() < l.headers.len() {
            self.pos.resize(l.headers.len(), None);
        }
        self.pos[h] = Some(slot.into());
        self.quick = quick::Quick::of(self);
        true
    }

    /// By header index: its slots in packet order when it has no varbit
    /// field (the deparser emits headers from the same lists).
    pub(crate) fn flat(&self) -> &[Option<Flat>] {
        &self.flat
    }

    /// Has [`ParseProg::run_marked`] record the bit offset in the packet
    /// where each of `headers` was last extracted (`at[i]` for
    /// `headers[i]`), for the headers none of whose fields a parser
    /// statement writes: right after the parse, such a valid header's
    /// fields in the key are the packet's bits at that offset. Says which
    /// ones are recorded (at most [`MAX_MARKS`]).
    pub fn mark(&mut self, headers: &[usize]) -> Vec<bool> {
        let l = self.layout.clone();
        let mut out = Vec::new();
        for (i, &h) in headers.iter().enumerate() {
            let ok = i < MAX_MARKS && h < l.headers.len() && !self.assigned(h);
            if ok {
                if self.mark.len() < l.headers.len() {
                    self.mark.resize(l.headers.len(), u8::MAX);
                }
                self.mark[h] = i as u8;
            }
            out.push(ok);
        }
        self.quick = quick::Quick::of(self);
        out
    }

    /// Parses `data` received on `port` into `key` (the whole key).
    /// Returns how many leading bytes of `data` it read (see
    /// [`ParseProg::run_marked`]).
    pub fn run(&self, data: &[u8], port: u32, key: &mut FlowKey) -> usize {
        self.run_marked(data, port, key, &mut [])
    }

    /// [`ParseProg::run`], recording where the headers [`ParseProg::mark`]
    /// named were last extracted into `at` (bits from the packet's start;
    /// entries of headers not extracted are left as they were).
    ///
    /// Returns how many leading bytes of `data` the key may depend on:
    /// those extracted or looked ahead at. The rest of what it computes
    /// depends only on `port` and `data.len()` (a bounds check's outcome,
    /// `packet_length`), so two frames alike in those and in those bytes
    /// parse to the same key.
    pub fn run_marked(&self, data: &[u8], port: u32, key: &mut FlowKey, at: &mut [u32]) -> usize {
        let l = &*self.layout;
        *key = self.init;
        if let Some(s) = self.ingress_port {
            s.set(key, u64::from(port));
        }
        if let Some(s) = self.packet_length {
            s.set(key, data.len() as u64);
        }
        let before = if cfg!(debug_assertions) && self.quick.is_some() {
            Some((*key, at.to_vec()))
        } else {
            None
        };
        let mut r = Run { p: self, data, pos: 0, read: 0, key, at };
        let result = match &self.quick {
            Some(q) => r.quick(q),
            None => r.states(),
        };
        if let Some((mut k, mut a)) = before {
            // The generic run is the quick form's reference (see `quick`).
            let mut g = Run { p: self, data, pos: 0, read: 0, key: &mut k, at: &mut a };
            let expect = g.states();
            let (gpos, gread) = (g.pos, g.read);
            assert_eq!(result, expect, "quick parse: result");
            assert_eq!((r.pos, r.read), (gpos, gread), "quick parse: cursor and extent");
            assert_eq!(*r.key, k, "quick parse: key");
            assert_eq!(&r.at[..], &a[..], "quick parse: extraction records");
        }
        for &f in &self.hidden {
            write(l, r.key, f, 0);
        }
        let (pos, read) = (r.pos, r.read);
        self.cursor.set(key, pos as u64);
        if let Some(s) = self.parser_error {
            let code = match result {
                Ok(()) => self.codes.no_error,
                Err(c) => c,
            };
            s.set(key, code.into());
        }
        read.div_ceil(8)
    }
}

impl Parse for ParseProg {
    fn parse(&self, data: &[u8], meta: &Meta, key: &mut FlowKey, info: &mut ParseInfo) -> usize {
        let read = self.run(data, meta.in_port, key);
        *info =
            ParseInfo { len: data.len().min(usize::from(u16::MAX)) as u16, ..ParseInfo::default() };
        read
    }
}

/// A field of up to 128 bits.
#[inline]
fn read(l: &Layout, key: &FlowKey, f: usize) -> u128 {
    let slots = l.fields.get(f).map(|x| &x.slots[..]).unwrap_or(&[]);
    if let [s] = slots {
        return u128::from(s.get(key));
    }
    let mut acc = 0u128;
    for s in slots {
        acc = (acc << s.width) | u128::from(s.get(key));
    }
    acc
}

/// Writes the low bits of `v` into a field (wider fields: its low 128
/// bits, the rest zero).
#[inline]
fn write(l: &Layout, key: &mut FlowKey, f: usize, v: u128) {
    let Some(x) = l.fields.get(f) else { return };
    if let [s] = x.slots[..] {
        s.set(key, v as u64);
        return;
    }
    let mut v = v;
    for s in x.slots.iter().rev() {
        s.set(key, v as u64);
        v = if s.width >= 64 { v >> 64 } else { v >> s.width };
    }
}

/// A `w`-bit two's-complement value sign-extended.
fn sext(x: u128, w: u32) -> i128 {
    if w == 0 || w >= 128 {
        return x as i128;
    }
    let sh = 128 - w;
    ((x << sh) as i128) >> sh
}

fn mask128(w: u32) -> u128 {
    if w >= 128 {
        u128::MAX
    } else {
        (1u128 << w) - 1
    }
}

/// `w` ≤ 64 bits of `data` at bit `pos`; the caller checked they exist.
#[inline]
fn bits_at(data: &[u8], pos: usize, w: u32) -> u64 {
    let first = pos / 8;
    let off = pos % 8;
    // Within one 8-byte load (every run on a byte boundary).
    if (1..=64).contains(&w) && off + w as usize <= 64 {
        if let Some(b) = first.checked_add(8).and_then(|end| data.get(first..end)) {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            return (u64::from_be_bytes(a) << off) >> (64 - w);
        }
    }
    // At most 71 bits from `first`: with 16 bytes there, one load.
    if let Some(b) = first.checked_add(16).and_then(|end| data.get(first..end)) {
        let mut a = [0u8; 16];
        a.copy_from_slice(b);
        let w = w.min(64) as usize;
        if w == 0 {
            return 0;
        }
        return ((u128::from_be_bytes(a) >> (128 - off - w)) as u64) & ones(w as u8);
    }
    let n = (off + w as usize).div_ceil(8);
    let mut acc = 0u128;
    for i in 0..n {
        acc = (acc << 8) | u128::from(data.get(first + i).copied().unwrap_or(0));
    }
    let shift = n * 8 - off - w as usize;
    ((acc >> shift) as u64) & ones(w as u8)
}

struct Run<'a> {
    p: &'a ParseProg,
    data: &'a [u8],
    pos: usize,
    /// The bit after the last one read from `data` (extracted or looked
    /// ahead at).
    read: usize,
    key: &'a mut FlowKey,
    /// Where marked headers were extracted ([`ParseProg::mark`]).
    at: &'a mut [u32],
}

type Res<T> = std::result::Result<T, u32>;

impl Run<'_> {
    /// The generic parse: the states from the start, counted per level
    /// as the interpreter counts them.
    fn states(&mut self) -> Res<()> {
        let p = self.p;
        let mut cur = p.start;
        // States run per level (one invocation of a parser each, as the
        // interpreter counts them); `from` is the level of the last one.
        let mut count = [0u32; MAX_NEST + 1];
        let mut from = 0;
        let spent = |count: &[u32; MAX_NEST + 1], l: usize| {
            count.get(l).is_none_or(|&c| c >= MAX_PARSER_TRANSITIONS)
        };
        loop {
            let i = match cur {
                Next::Accept | Next::Reject if spent(&count, from) => break,
                Next::Accept => return Ok(()),
                Next::Reject => return Err(p.codes.no_error),
                Next::State(i) => i,
            };
            let Some(st) = p.states.get(i) else { break };
            if st.counts {
                match count.get_mut(st.level) {
                    Some(c) if *c < MAX_PARSER_TRANSITIONS => *c += 1,
                    _ => break,
                }
            }
            if st.ret.is_some_and(|l| spent(&count, l)) {
                break;
            }
            cur = self.state(st)?;
            if let Some(c) = st.resets.and_then(|l| count.get_mut(l)) {
                *c = 0;
            }
            from = st.level;
        }
        Err(p.codes.timeout)
    }

    fn fits(&self, bits: u64) -> bool {
        (self.pos as u64).saturating_add(bits) <= self.data.len() as u64 * 8
    }

    fn state(&mut self, st: &State) -> Res<Next> {
        for op in &st.ops {
            self.op(op)?;
        }
        self.trans(&st.trans)
    }

    fn trans(&mut self, t: &Trans) -> Res<Next> {
        match t {
            Trans::Go(n) => Ok(*n),
            Trans::Select { keys, cases } => {
                let mut vals = [0u128; MAX_KEYS];
                for (k, v) in keys.iter().zip(vals.iter_mut()) {
                    *v = self.eval(k)?;
                }
                for c in cases {
                    if c.keys.iter().zip(vals.iter()).all(|(m, &v)| matches(*m, v)) {
                        return Ok(c.next);
                    }
                }
                Err(self.p.codes.no_match)
            }
        }
    }

    fn op(&mut self, op: &POp) -> Res<()> {
        let l = &*self.p.layout;
        match op {
            POp::Extract { header, width, size } => self.extract(*header, *width, size.as_ref()),
            POp::ExtractNext { stack, member, width, size } => {
                let Some(s) = l.stacks.get(*stack) else { return Ok(()) };
                let i = s.next.get(self.key) as usize;
                let Some(el) = s.elems.get(i) else {
                    return Err(self.p.codes.out_of_bounds);
                };
                let h = match (el, member) {
                    (Elem::Header(h), None) => *h,
                    (Elem::Union(u), Some(m)) => {
                        match l.unions.get(*u).and_then(|u| u.members.get(*m)) {
                            Some(h) => *h,
                            None => return Ok(()),
                        }
                    }
                    _ => return Ok(()),
                };
                self.extract(h, *width, size.as_ref())?;
                s.next.set(self.key, i as u64 + 1);
                Ok(())
            }
            POp::Skip(n) => {
                if !self.fits(*n) {
                    return Err(self.p.codes.too_short);
                }
                self.pos += *n as usize;
                Ok(())
            }
            POp::SkipBy(src) => {
                let n = u64::try_from(self.eval(src)?).unwrap_or(u64::MAX);
                if !self.fits(n) {
                    return Err(self.p.codes.too_short);
                }
                self.pos += n as usize;
                Ok(())
            }
            POp::Need(n) => {
                if self.fits(*n) {
                    Ok(())
                } else {
                    Err(self.p.codes.too_short)
                }
            }
            POp::Verify { cond, error } => {
                if self.cond(cond)? {
                    Ok(())
                } else {
                    Err(*error)
                }
            }
            POp::Set { field, src, header } => {
                let v = self.eval(src)?;
                write(l, self.key, *field, v);
                if let Some(h) = header {
                    self.union_exclusive(*h);
                }
                Ok(())
            }
        }
    }

    /// A valid union member makes its siblings invalid.
    fn union_exclusive(&mut self, h: usize) {
        let l = &*self.p.layout;
        let Some(hd) = l.headers.get(h) else { return };
        if hd.valid.get(self.key) == 0 {
            return;
        }
        if let Some(u) = hd.union.and_then(|u| l.unions.get(u)) {
            for &m in &u.members {
                if m != h {
                    if let Some(x) = l.headers.get(m) {
                        x.valid.set(self.key, 0);
                    }
                }
            }
        }
    }

    fn extract(&mut self, h: usize, width: u32, size: Option<&Src>) -> Res<()> {
        let l = &*self.p.layout;
        let Some(hd) = l.headers.get(h) else { return Ok(()) };
        let n = match size {
            None => {
                if !self.fits(u64::from(width)) {
                    return Err(self.p.codes.too_short);
                }
                0
            }
            Some(s) => {
                // The interpreter's order: each field in turn, a varbit
                // longer than its maximum before the bytes run out.
                let n = u64::try_from(self.eval(s)?).unwrap_or(u64::MAX);
                let mut need = 0u64;
                for &f in &hd.fields {
                    let w = match l.fields.get(f).map(|x| &x.ty) {
                        Some(FieldTy::Varbit(max)) if n > u64::from(*max) => {
                            return Err(self.p.codes.header_too_short)
                        }
                        Some(FieldTy::Varbit(_)) => n,
                        Some(t) => u64::from(t.width()),
                        None => 0,
                    };
                    need = need.saturating_add(w);
                    if !self.fits(need) {
                        return Err(self.p.codes.too_short);
                    }
                }
                n as usize
            }
        };
        let mut pos = self.pos;
        let mark = self.p.mark.get(h).copied().unwrap_or(u8::MAX);
        self.record(mark, self.p.pos.get(h).copied().flatten());
        if let (None, Some(Some(fl))) = (size, self.p.flat.get(h)) {
            self.take_flat(&fl.slots, fl.bits, hd.valid.into());
            if hd.union.is_some() {
                self.union_exclusive(h);
            }
            return Ok(());
        }
        for &f in &hd.fields {
            let Some(fd) = l.fields.get(f) else { continue };
            if let FieldTy::Varbit(_) = fd.ty {
                // Right-aligned: the last packet bit is the value's bit 0.
                let mut lo = 0usize;
                for s in fd.slots.iter().rev() {
                    let top = (lo + usize::from(s.width)).min(n);
                    let v = if top > lo {
                        bits_at(self.data, pos + n - top, (top - lo) as u32)
                    } else {
                        0
                    };
                    s.set(self.key, v);
                    lo += usize::from(s.width);
                }
                if let Some(len) = fd.len {
                    len.set(self.key, n as u64);
                }
                pos += n;
                continue;
            }
            for s in &fd.slots {
                s.set(self.key, bits_at(self.data, pos, u32::from(s.width)));
                pos += usize::from(s.width);
            }
        }
        self.pos = pos;
        self.read = self.read.max(pos);
        hd.valid.set(self.key, 1);
        self.union_exclusive(h);
        Ok(())
    }

    /// Records where a header is extracted (the cursor): in `at[mark]`
    /// ([`ParseProg::mark`]; none past its end) and in its position slot
    /// ([`ParseProg::record_positions`]).
    #[inline]
    fn record(&mut self, mark: u8, slot: Option<MaskedSlot>) {
        let pos = self.pos;
        if let Some(a) = self.at.get_mut(usize::from(mark)) {
            *a = u32::try_from(pos).unwrap_or(u32::MAX);
        }
        if let Some(s) = slot {
            let byte = (pos / 8) as u64 + 1;
            s.set(self.key, if pos % 8 == 0 && byte <= POS_MAX { byte } else { 0 });
        }
    }

    /// Extracts a flat header (its `runs` and `bits`, checked to fit) at
    /// the cursor, moves past it and sets its `valid` bit.
    #[inline]
    fn take_flat(&mut self, runs: &[(MaskedSlot, u32)], bits: u32, valid: MaskedSlot) {
        let pos = self.pos;
        for &(s, off) in runs {
            s.set(self.key, bits_at(self.data, pos + off as usize, u32::from(s.width())));
        }
        self.pos = pos + bits as usize;
        self.read = self.read.max(self.pos);
        valid.set(self.key, 1);
    }

    fn elem_index(&self, stack: usize, last: bool) -> Res<usize> {
        let n = self.p.layout.stacks.get(stack).map_or(0, |s| s.next.get(self.key) as usize);
        if last {
            n.checked_sub(1).ok_or(self.p.codes.out_of_bounds)
        } else {
            Ok(n)
        }
    }

    fn eval(&mut self, s: &Src) -> Res<u128> {
        let l = &*self.p.layout;
        Ok(match s {
            Src::Const(v) => *v,
            Src::Field(f) => read(l, self.key, *f),
            Src::Elem { stack, last, fields } => {
                let i = self.elem_index(*stack, *last)?;
                match fields.get(i) {
                    Some(f) => read(l, self.key, *f),
                    None => return Err(self.p.codes.out_of_bounds),
                }
            }
            Src::Valid(h) => u128::from(l.is_valid(self.key, *h)),
            Src::Look { off, width, need } => {
                if !self.fits(u64::from(*need)) {
                    return Err(self.p.codes.too_short);
                }
                let p = self.pos + *off as usize;
                self.read = self.read.max(p + *width as usize);
                if *width > 64 {
                    let lo = *width - 64;
                    (u128::from(bits_at(self.data, p, 64)) << lo)
                        | u128::from(bits_at(self.data, p + 64, lo))
                } else {
                    u128::from(bits_at(self.data, p, *width))
                }
            }
            Src::Slice { src, hi, lo } => (self.eval(src)? >> lo) & mask128(hi - lo + 1),
            Src::Bin { op, a, b, width, signed } => {
                let (x, y, w) = (self.eval(a)?, self.eval(b)?, *width);
                let m = mask128(w);
                match op {
                    ArOp::Add => x.wrapping_add(y) & m,
                    ArOp::Sub => x.wrapping_sub(y) & m,
                    ArOp::Mul => x.wrapping_mul(y) & m,
                    ArOp::And => x & y,
                    ArOp::Or => x | y,
                    ArOp::Xor => x ^ y,
                    ArOp::Shl if y >= u128::from(w) => 0,
                    ArOp::Shl => (x << y) & m,
                    ArOp::Shr if *signed => ((sext(x, w) >> y.min(127)) as u128) & m,
                    ArOp::Shr if y >= u128::from(w) => 0,
                    ArOp::Shr => x >> y,
                }
            }
            Src::Concat { a, b, low } => {
                self.eval(a)?.checked_shl(*low).unwrap_or(0) | self.eval(b)?
            }
            Src::Un { neg, a, width } => {
                let x = self.eval(a)?;
                (if *neg { 0u128.wrapping_sub(x) } else { !x }) & mask128(*width)
            }
            Src::Cast { a, from, sext: ext, to } => {
                let x = self.eval(a)?;
                let x = if *ext { sext(x, *from) as u128 } else { x };
                x & mask128(*to)
            }
        })
    }

    fn cond(&mut self, c: &Cond) -> Res<bool> {
        Ok(match c {
            Cond::Const(b) => *b,
            Cond::Src(s) => self.eval(s)? != 0,
            Cond::Not(x) => !self.cond(x)?,
            Cond::And(a, b) => self.cond(a)? && self.cond(b)?,
            Cond::Or(a, b) => self.cond(a)? || self.cond(b)?,
            Cond::Cmp { op, a, b, width, signed } => {
                let flip = if *signed { 1u128 << (width - 1) } else { 0 };
                let x = self.eval(a)? ^ flip;
                let y = self.eval(b)? ^ flip;
                match op {
                    CmpOp::Eq => x == y,
                    CmpOp::Ne => x != y,
                    CmpOp::Lt => x < y,
                    CmpOp::Le => x <= y,
                    CmpOp::Gt => x > y,
                    CmpOp::Ge => x >= y,
                }
            }
        })
    }
}

fn matches(m: Match, v: u128) -> bool {
    match m {
        Match::Any => true,
        Match::Mask { value, mask } => v & mask == value,
        Match::Range { lo, hi, flip } => (lo..=hi).contains(&(v ^ flip)),
    }
}

// ----- compilation -------------------------------------------------------

/// Most select keys a state may have.
const MAX_KEYS: usize = 16;

impl Cx<'_> {
    fn next(&self, name: &str, span: Span) -> Result<Next> {
        match name {
            "accept" => Ok(self.accept),
            "reject" => Ok(Next::Reject),
            _ => self
                .p
                .states
                .iter()
                .position(|s| s.name.name == name)
                .map(|i| Next::State(self.base + i))
                .ok_or_else(|| Diagnostic::new(span, format!("no parser state `{name}`"))),
        }
    }

    fn konst(&self, e: &Expr) -> Option<Value> {
        let look = |n: &str| self.consts.iter().rev().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        self.env.eval_const(e, None, &look).ok()
    }

    fn konst_u64(&self, e: &Expr) -> Option<u64> {
        self.konst(e)?.to_u64()
    }

    /// The state-local variable `e` names, if it names one.
    fn var_of(&self, e: &Expr) -> Option<usize> {
        let ExprKind::Name { id, dot_prefix: false } = &e.kind else { return None };
        self.vars.borrow().iter().rposition(|v| v.name == id.name)
    }

    /// Marks stale every variable the ops from `from` on may change.
    fn track_vars(&self, ops: &[POp], from: usize) {
        let mut vars = self.vars.borrow_mut();
        for v in vars.iter_mut() {
            let mut r = Reads::default();
            Reads::of(&v.value, &mut r);
            if ops.get(from..).unwrap_or_default().iter().any(|op| r.changed_by(op, self.l)) {
                v.stale = true;
            }
        }
    }

    /// Declares a state-local variable of type `k`, initialised to `init`.
    fn declare_var(&self, name: &str, k: K, init: Option<&Expr>) -> Result<()> {
        let value = match init {
            Some(e) => {
                let (src, sk) = self.src(e, 0)?;
                self.coerce(src, sk, &k, e.span)?
            }
            // Not initialised: zero (false), as the interpreter starts
            // a bit<W> or bool local.
            None => Src::Const(0),
        };
        self.vars.borrow_mut().push(Var { name: name.to_string(), value, k, stale: false });
        Ok(())
    }

    fn stmt(&self, s: &Stmt, ops: &mut Vec<POp>, depth: u32) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(refuse(stmt_span(s), "blocks nested this deeply"));
        }
        let from = ops.len();
        self.stmt_inner(s, ops, depth)?;
        self.track_vars(ops, from);
        Ok(())
    }

    fn stmt_inner(&self, s: &Stmt, ops: &mut Vec<POp>, depth: u32) -> Result<()> {
        match s {
            Stmt::Empty(_) => Ok(()),
            Stmt::Block(b) => {
                let scope = self.vars.borrow().len();
                for x in &b.stmts {
                    self.stmt(x, ops, depth + 1)?;
                }
                self.vars.borrow_mut().truncate(scope);
                Ok(())
            }
            Stmt::Var(v) => {
                let k = match self.env.resolve(&v.ty, &[])? {
                    Ty::Bits { signed, width } if width <= 128 => K::Bits { signed, width },
                    Ty::Bool => K::Bool,
                    _ => return Err(refuse(v.span, "a parser variable of this type")),
                };
                self.declare_var(&v.name.name, k, v.init.as_ref())
            }
            Stmt::Assign { lhs, op: None, rhs, .. } if self.var_of(lhs).is_some() => {
                let Some(i) = self.var_of(lhs) else { return Ok(()) };
                let k = self.vars.borrow()[i].k.clone();
                let (src, sk) = self.src(rhs, 0)?;
                let value = self.coerce(src, sk, &k, rhs.span)?;
                let mut vars = self.vars.borrow_mut();
                vars[i].value = value;
                vars[i].stale = false;
                Ok(())
            }
            Stmt::Call(e) => self.call_stmt(e, ops),
            Stmt::Assign { lhs, op: None, rhs, span } => {
                let Some(Place::Static(root, path)) = self.place(lhs, 0)? else {
                    return Err(refuse(lhs.span, "this assignment target"));
                };
                let Some(Item::Field(f)) = self.l.item(root, &path) else {
                    return Err(refuse(*span, "assigning a whole header, struct or stack"));
                };
                let fk = K::of(&self.l.fields[f].ty);
                if fk.width() > 128 {
                    return Err(refuse(*span, "an assignment of more than 128 bits"));
                }
                let (src, k) = self.src(rhs, 0)?;
                let src = self.coerce(src, k, &fk, rhs.span)?;
                let header = self
                    .l
                    .headers
                    .iter()
                    .position(|h| h.fields.contains(&f))
                    .filter(|&h| self.l.headers[h].union.is_some());
                ops.push(POp::Set { field: f, src, header });
                Ok(())
            }
            Stmt::Assign { span, .. } => Err(refuse(*span, "a compound assignment in a parser")),
            Stmt::If { span, .. } => Err(refuse(*span, "`if` in a parser state")),
            Stmt::Const(c) => Err(refuse(c.span, "a constant in a parser state")),
            other => Err(refuse(stmt_span(other), "this statement in a parser")),
        }
    }

    fn call_stmt(&self, e: &Expr, ops: &mut Vec<POp>) -> Result<()> {
        let ExprKind::Call { func, type_args, args } = &e.kind else {
            return Err(refuse(e.span, "this statement in a parser"));
        };
        match &func.kind {
            ExprKind::Member(base, m) if matches!(&base.kind, ExprKind::Name { id, .. } if id.name == *self.pkt) => {
                match m.name.as_str() {
                    "extract" => self.extract(e.span, type_args, args, ops),
                    "advance" => {
                        let Some(a) = args.first() else {
                            return Err(Diagnostic::new(e.span, "`advance` needs an amount"));
                        };
                        if let Some(n) = self.konst_u64(&a.value) {
                            ops.push(POp::Skip(n));
                            return Ok(());
                        }
                        match self.src(&a.value, 0)? {
                            (s, K::Bits { signed: false, .. }) => ops.push(POp::SkipBy(s)),
                            _ => return Err(refuse(a.span, "`advance` by this value")),
                        }
                        Ok(())
                    }
                    "lookahead" if args.is_empty() => {
                        let w = type_args
                            .first()
                            .and_then(|t| self.env.resolve(t, &[]).ok())
                            .and_then(|t| t.bit_width())
                            .ok_or_else(|| refuse(e.span, "this lookahead"))?;
                        ops.push(POp::Need(u64::from(w)));
                        Ok(())
                    }
                    other => Err(refuse(e.span, format!("`{}.{other}` as a statement", self.pkt))),
                }
            }
            ExprKind::Name { id, .. } if id.name == "verify" && args.len() == 2 => {
                let cond = self.cond(&args[0].value, 0)?;
                let error = match self.konst(&args[1].value) {
                    Some(Value::Error(n)) => self
                        .l
                        .error_code(&n)
                        .ok_or_else(|| Diagnostic::new(args[1].span, "unknown error"))?,
                    _ => return Err(refuse(args[1].span, "`verify` with a non-constant error")),
                };
                ops.push(POp::Verify { cond, error });
                Ok(())
            }
            ExprKind::Member(_, m) => {
                Err(refuse(e.span, format!("calling `{}` in a parser", m.name)))
            }
            ExprKind::Name { id, .. } => {
                Err(refuse(e.span, format!("calling `{}` in a parser", id.name)))
            }
            _ => Err(refuse(e.span, "this call in a parser")),
        }
    }

    fn extract(
        &self,
        span: Span,
        targs: &[crate::ast::Type],
        args: &[crate::ast::Arg],
        ops: &mut Vec<POp>,
    ) -> Result<()> {
        let a = match args {
            [a] | [a, _] => &a.value,
            _ => return Err(Diagnostic::new(span, "`extract` takes one or two arguments")),
        };
        let size = match args.get(1) {
            None => None,
            Some(x) => Some(match self.konst(&x.value) {
                Some(Value::Int(i)) if i >= 0 => Src::Const(i as u128),
                _ => match self.src(&x.value, 0)? {
                    (s, K::Bits { signed: false, width }) if width <= 64 => s,
                    _ => return Err(refuse(x.span, "a varbit size of this type")),
                },
            }),
        };
        if matches!(a.kind, ExprKind::DontCare) {
            let w = targs
                .first()
                .and_then(|t| self.env.resolve(t, &[]).ok())
                .and_then(|t| t.bit_width())
                .ok_or_else(|| refuse(span, "this `extract(_)`"))?;
            ops.push(POp::Skip(u64::from(w)));
            return Ok(());
        }
        // Fixed headers are `width` bits; one with a varbit needs a size.
        let has_varbit = |h: usize| {
            self.l.headers[h]
                .fields
                .iter()
                .any(|&f| matches!(self.l.fields[f].ty, FieldTy::Varbit(_)))
        };
        let width_of = |h: usize| -> Result<u32> {
            if size.is_none() && has_varbit(h) {
                return Err(refuse(span, "extracting a varbit header without a size"));
            }
            Ok(self.l.headers[h]
                .fields
                .iter()
                .filter(|&&f| !matches!(self.l.fields[f].ty, FieldTy::Varbit(_)))
                .map(|&f| self.l.fields[f].ty.width())
                .sum())
        };
        match self.place(a, 0)? {
            Some(Place::Static(root, path)) => match self.l.item(root, &path) {
                Some(Item::Header(h)) => {
                    ops.push(POp::Extract { header: h, width: width_of(h)?, size });
                    Ok(())
                }
                _ => Err(refuse(a.span, "extracting into something other than a header")),
            },
            Some(Place::Dyn { stack, last: false, rest }) => {
                let s = &self.l.stacks[stack];
                match (s.elems.first(), rest.strip_prefix('.')) {
                    (Some(Elem::Header(h)), None) => {
                        let width = width_of(*h)?;
                        ops.push(POp::ExtractNext { stack, member: None, width, size });
                        Ok(())
                    }
                    (Some(Elem::Union(u)), Some(m)) if !m.contains('.') => {
                        let un = &self.l.unions[*u];
                        let idx = un
                            .members
                            .iter()
                            .position(|&h| self.l.headers[h].path.ends_with(&format!(".{m}")))
                            .ok_or_else(|| Diagnostic::new(a.span, format!("no member `{m}`")))?;
                        let width = width_of(un.members[idx])?;
                        ops.push(POp::ExtractNext { stack, member: Some(idx), width, size });
                        Ok(())
                    }
                    _ => Err(refuse(a.span, "this extract into a stack")),
                }
            }
            Some(Place::Dyn { .. }) => Err(refuse(a.span, "extract into `.last`")),
            None => Err(refuse(a.span, "this extract target")),
        }
    }

    fn root(&self, name: &str) -> Option<(Root, String)> {
        self.binds.iter().rev().find(|(n, _, _)| n == name).map(|(_, r, p)| (*r, p.clone()))
    }

    /// Where `e` points, if it is a path from one of the parser's state
    /// parameters.
    fn place(&self, e: &Expr, depth: u32) -> Result<Option<Place>> {
        if depth > MAX_DEPTH {
            return Err(refuse(e.span, "paths this long"));
        }
        Ok(match &e.kind {
            ExprKind::Name { id, dot_prefix: false } => {
                self.root(&id.name).map(|(r, p)| Place::Static(r, p))
            }
            ExprKind::Member(b, m) => match self.place(b, depth + 1)? {
                None => None,
                Some(Place::Static(r, path)) => match self.l.item(r, &path) {
                    Some(Item::Stack(s)) => match m.name.as_str() {
                        "last" | "next" => Some(Place::Dyn {
                            stack: s,
                            last: m.name == "last",
                            rest: String::new(),
                        }),
                        other => return Err(refuse(e.span, format!("a stack's `{other}`"))),
                    },
                    _ if path.is_empty() => Some(Place::Static(r, m.name.clone())),
                    _ => Some(Place::Static(r, format!("{path}.{}", m.name))),
                },
                Some(Place::Dyn { stack, last, rest }) => {
                    Some(Place::Dyn { stack, last, rest: format!("{rest}.{}", m.name) })
                }
            },
            ExprKind::Index(b, i) => match self.place(b, depth + 1)? {
                None => None,
                Some(Place::Static(r, path)) => {
                    let Some(Item::Stack(s)) = self.l.item(r, &path) else {
                        return Err(refuse(e.span, "indexing this"));
                    };
                    let n = self
                        .konst_u64(i)
                        .ok_or_else(|| refuse(i.span, "a stack index that is not constant"))?;
                    if n >= self.l.stacks[s].elems.len() as u64 {
                        return Err(refuse(i.span, "a constant stack index out of bounds"));
                    }
                    Some(Place::Static(r, format!("{path}[{n}]")))
                }
                Some(Place::Dyn { .. }) => return Err(refuse(e.span, "indexing this")),
            },
            _ => None,
        })
    }

    /// The field ids (or headers) `rest` names in each element of a stack.
    fn per_elem(&self, stack: usize, rest: &str, span: Span) -> Result<Vec<Item>> {
        let s = &self.l.stacks[stack];
        (0..s.elems.len())
            .map(|i| {
                self.l
                    .item(s.root, &format!("{}[{i}]{rest}", s.path))
                    .ok_or_else(|| Diagnostic::new(span, "no such field"))
            })
            .collect()
    }

    fn src(&self, e: &Expr, depth: u32) -> Result<(Src, K)> {
        if depth > MAX_DEPTH {
            return Err(refuse(e.span, "expressions nested this deeply"));
        }
        if let Some(i) = self.var_of(e) {
            let v = self.vars.borrow()[i].clone();
            if v.stale {
                return Err(refuse(
                    e.span,
                    "a parser variable read after what its value was computed from changed",
                ));
            }
            return Ok((v.value, v.k));
        }
        if let Some(p) = self.place(e, depth + 1)? {
            let (s, k) = self.place_src(p, e)?;
            if let K::Varbit(_) = k {
                return Err(refuse(e.span, "a varbit as a value"));
            }
            return Ok((s, k));
        }
        self.src_expr(e, depth)
    }

    fn place_src(&self, p: Place, e: &Expr) -> Result<(Src, K)> {
        match p {
            Place::Static(r, path) => match self.l.item(r, &path) {
                Some(Item::Field(f)) => Ok((Src::Field(f), K::of(&self.l.fields[f].ty))),
                _ => Err(refuse(e.span, "a whole header, struct or stack as a value")),
            },
            Place::Dyn { stack, last, rest } => {
                let items = self.per_elem(stack, &rest, e.span)?;
                let mut fields = Vec::with_capacity(items.len());
                for it in items {
                    match it {
                        Item::Field(f) => fields.push(f),
                        _ => return Err(refuse(e.span, "a whole header as a value")),
                    }
                }
                let k = fields
                    .first()
                    .map(|&f| K::of(&self.l.fields[f].ty))
                    .ok_or_else(|| refuse(e.span, "an empty stack"))?;
                Ok((Src::Elem { stack, last, fields }, k))
            }
        }
    }

    fn src_expr(&self, e: &Expr, depth: u32) -> Result<(Src, K)> {
        match &e.kind {
            ExprKind::Call { func, type_args, args } => {
                if let ExprKind::Member(b, m) = &func.kind {
                    if m.name == "isValid" && args.is_empty() {
                        return match self.place(b, depth + 1)? {
                            Some(Place::Static(r, path)) => match self.l.item(r, &path) {
                                Some(Item::Header(h)) => Ok((Src::Valid(h), K::Bool)),
                                _ => Err(refuse(e.span, "`isValid()` of this")),
                            },
                            _ => Err(refuse(e.span, "`isValid()` of this")),
                        };
                    }
                    if m.name == "lookahead"
                        && args.is_empty()
                        && matches!(&b.kind, ExprKind::Name { id, .. } if id.name == *self.pkt)
                    {
                        let ty = type_args
                            .first()
                            .and_then(|t| self.env.resolve(t, &[]).ok())
                            .ok_or_else(|| refuse(e.span, "this lookahead"))?;
                        let k = scalar_k(&ty).ok_or_else(|| refuse(e.span, "this lookahead"))?;
                        let w = k.width();
                        if w > 128 {
                            return Err(refuse(e.span, "a lookahead of more than 128 bits"));
                        }
                        return Ok((Src::Look { off: 0, width: w, need: w }, k));
                    }
                }
                Err(refuse(e.span, "this call in an expression"))
            }
            ExprKind::Member(b, m) if is_lookahead(b, &self.pkt) => {
                let ExprKind::Call { type_args, .. } = &b.kind else {
                    return Err(refuse(e.span, "this lookahead"));
                };
                let ty = type_args
                    .first()
                    .and_then(|t| self.env.resolve(t, &[]).ok())
                    .ok_or_else(|| refuse(e.span, "this lookahead"))?;
                let (Ty::Header(a) | Ty::Struct(a)) = &ty else {
                    return Err(refuse(e.span, "this lookahead"));
                };
                let need = ty.bit_width().ok_or_else(|| refuse(e.span, "this lookahead"))?;
                let mut off = 0u32;
                for (n, t) in &a.fields {
                    let k = scalar_k(t).ok_or_else(|| refuse(e.span, "this lookahead"))?;
                    if *n == m.name {
                        if k.width() > 128 {
                            return Err(refuse(e.span, "a lookahead of more than 128 bits"));
                        }
                        return Ok((Src::Look { off, width: k.width(), need }, k));
                    }
                    off += k.width();
                }
                Err(Diagnostic::new(m.span, format!("no field `{}`", m.name)))
            }
            ExprKind::Slice(x, hi, lo) => {
                let (s, k) = self.src(x, depth + 1)?;
                let (Some(hi), Some(lo)) = (self.konst_u64(hi), self.konst_u64(lo)) else {
                    return Err(refuse(e.span, "a slice with non-constant bounds"));
                };
                let K::Bits { width, .. } = k else {
                    return Err(refuse(e.span, "a slice of this"));
                };
                if lo > hi || hi >= u64::from(width) || width > 128 {
                    return Err(refuse(e.span, "this slice"));
                }
                let (hi, lo) = (hi as u32, lo as u32);
                Ok((
                    Src::Slice { src: Box::new(s), hi, lo },
                    K::Bits { signed: false, width: hi - lo + 1 },
                ))
            }
            ExprKind::Binary(..) | ExprKind::Unary(..) | ExprKind::Cast(..)
                if self.konst(e).is_some() =>
            {
                let v = self.konst(e).unwrap_or(Value::Void);
                self.const_src(&v, e.span)
            }
            ExprKind::Binary(op, a, b) => self.binary(e, *op, a, b, depth + 1),
            ExprKind::Unary(op @ (UnOp::Neg | UnOp::BitNot), a) => {
                let (s, k) = self.src(a, depth + 1)?;
                let K::Bits { width, .. } = k else {
                    return Err(refuse(e.span, "this operator on this value"));
                };
                let un = Src::Un { neg: *op == UnOp::Neg, a: Box::new(s), width };
                Ok((un, k))
            }
            ExprKind::Unary(UnOp::Plus, a) => self.src(a, depth + 1),
            ExprKind::Cast(t, x) => {
                let to = self.env.resolve(t, &[]).ok().and_then(|t| scalar_k(&t));
                let Some(to) = to else {
                    return Err(refuse(e.span, "this cast"));
                };
                let (s, k) = self.src(x, depth + 1)?;
                match (&k, &to) {
                    (K::Int(_), K::Bits { .. }) => Ok((self.coerce(s, k, &to, e.span)?, to)),
                    (K::Bits { signed, width }, K::Bits { width: w, .. }) if *w <= 128 => {
                        let c = Src::Cast { a: Box::new(s), from: *width, sext: *signed, to: *w };
                        Ok((c, to))
                    }
                    (K::Bool, K::Bits { width: 1, .. }) => Ok((s, to)),
                    (K::Bits { width: 1, signed: false }, K::Bool) => Ok((s, to)),
                    _ if k == to => Ok((s, to)),
                    _ => Err(refuse(e.span, "this cast")),
                }
            }
            _ => match self.konst(e) {
                Some(v) => self.const_src(&v, e.span),
                None => Err(refuse(e.span, "this expression in a parser")),
            },
        }
    }

    /// `a op b` over fields (an expression that is constant as a whole
    /// was folded by the caller).
    fn binary(&self, e: &Expr, op: BinOp, a: &Expr, b: &Expr, depth: u32) -> Result<(Src, K)> {
        let ar = match op {
            BinOp::Add => ArOp::Add,
            BinOp::Sub => ArOp::Sub,
            BinOp::Mul => ArOp::Mul,
            BinOp::BitAnd => ArOp::And,
            BinOp::BitOr => ArOp::Or,
            BinOp::BitXor => ArOp::Xor,
            BinOp::Shl => ArOp::Shl,
            BinOp::Shr => ArOp::Shr,
            BinOp::Concat => {
                let (sa, ka) = self.src(a, depth)?;
                let (sb, kb) = self.src(b, depth)?;
                let (K::Bits { signed, width: wa }, K::Bits { width: wb, .. }) = (&ka, &kb) else {
                    return Err(refuse(e.span, "`++` of these values"));
                };
                if wa + wb > 128 {
                    return Err(refuse(e.span, "values of more than 128 bits"));
                }
                let c = Src::Concat { a: Box::new(sa), b: Box::new(sb), low: *wb };
                return Ok((c, K::Bits { signed: *signed, width: wa + wb }));
            }
            _ => return Err(refuse(e.span, "this operator in a parser expression")),
        };
        let (sa, ka) = self.src(a, depth)?;
        let (sb, kb) = self.src(b, depth)?;
        if matches!(ar, ArOp::Shl | ArOp::Shr) {
            let K::Bits { signed, width } = ka else {
                return Err(refuse(a.span, "shifting this value"));
            };
            let sb = match kb {
                K::Int(i) if i >= 0 => Src::Const(i as u128),
                K::Bits { signed: false, .. } => sb,
                _ => return Err(refuse(b.span, "this shift amount")),
            };
            let bin = Src::Bin { op: ar, a: Box::new(sa), b: Box::new(sb), width, signed };
            return Ok((bin, ka));
        }
        let (sa, sb, k) = match (&ka, &kb) {
            (K::Int(_), K::Int(_)) => return Err(refuse(e.span, "this `int` expression")),
            (K::Int(_), _) => (self.coerce(sa, ka, &kb, a.span)?, sb, kb),
            _ => {
                let sb = self.coerce(sb, kb, &ka, b.span)?;
                (sa, sb, ka)
            }
        };
        let K::Bits { signed, width } = k else {
            return Err(refuse(e.span, "arithmetic on these values"));
        };
        let bin = Src::Bin { op: ar, a: Box::new(sa), b: Box::new(sb), width, signed };
        Ok((bin, k))
    }

    fn const_src(&self, v: &Value, span: Span) -> Result<(Src, K)> {
        Ok(match v {
            Value::Int(i) => (Src::Const(0), K::Int(*i)),
            Value::Bits(b) | Value::Signed(b) => {
                let width = b.width();
                let x = b
                    .to_u128()
                    .filter(|_| width <= 128)
                    .ok_or_else(|| refuse(span, "a constant of more than 128 bits"))?;
                (Src::Const(x), K::Bits { signed: matches!(v, Value::Signed(_)), width })
            }
            Value::Bool(b) => (Src::Const(u128::from(*b)), K::Bool),
            Value::Error(n) => {
                let c =
                    self.l.error_code(n).ok_or_else(|| Diagnostic::new(span, "unknown error"))?;
                (Src::Const(c.into()), K::Error)
            }
            Value::Enum { ty, member } => {
                let Some(Ty::Enum(e)) = self.env.named(ty) else {
                    return Err(refuse(span, "this enum"));
                };
                let i = e
                    .members
                    .iter()
                    .position(|(m, _)| m == member)
                    .ok_or_else(|| Diagnostic::new(span, "unknown enum member"))?;
                (Src::Const(i as u128), K::Enum(ty.clone()))
            }
            _ => return Err(refuse(span, "this constant")),
        })
    }

    /// `src` (of type `k`) used as a `want`.
    fn coerce(&self, src: Src, k: K, want: &K, span: Span) -> Result<Src> {
        match (&k, want) {
            (K::Int(i), K::Bits { width, .. }) => {
                Ok(Src::Const(Bits::from_i128(*width, *i).to_u128().unwrap_or(0)))
            }
            _ if k == *want => Ok(src),
            _ => Err(refuse(span, "mixing these types")),
        }
    }

    fn cond(&self, e: &Expr, depth: u32) -> Result<Cond> {
        if depth > MAX_DEPTH {
            return Err(refuse(e.span, "conditions nested this deeply"));
        }
        let d = depth + 1;
        match &e.kind {
            ExprKind::Bool(b) => Ok(Cond::Const(*b)),
            ExprKind::Unary(UnOp::Not, x) => Ok(Cond::Not(Box::new(self.cond(x, d)?))),
            ExprKind::Binary(BinOp::And, a, b) => {
                Ok(Cond::And(Box::new(self.cond(a, d)?), Box::new(self.cond(b, d)?)))
            }
            ExprKind::Binary(BinOp::Or, a, b) => {
                Ok(Cond::Or(Box::new(self.cond(a, d)?), Box::new(self.cond(b, d)?)))
            }
            ExprKind::Binary(
                op @ (BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge),
                a,
                b,
            ) => {
                let (sa, ka) = self.src(a, d)?;
                let (sb, kb) = self.src(b, d)?;
                let (sa, sb, k) = match (&ka, &kb) {
                    (K::Int(_), K::Int(_)) => {
                        return Err(refuse(e.span, "comparing two `int` constants"))
                    }
                    (K::Int(_), _) => (self.coerce(sa, ka, &kb, a.span)?, sb, kb),
                    _ => {
                        let sb = self.coerce(sb, kb, &ka, b.span)?;
                        (sa, sb, ka)
                    }
                };
                let ordered = !matches!(op, BinOp::Eq | BinOp::Ne);
                let (width, signed) = match k {
                    K::Bits { signed, width } => (width, signed),
                    _ if ordered => return Err(refuse(e.span, "ordering these values")),
                    other => (other.width(), false),
                };
                if width > 128 || width == 0 {
                    return Err(refuse(e.span, "comparing values of this width"));
                }
                let op = match op {
                    BinOp::Eq => CmpOp::Eq,
                    BinOp::Ne => CmpOp::Ne,
                    BinOp::Lt => CmpOp::Lt,
                    BinOp::Le => CmpOp::Le,
                    BinOp::Gt => CmpOp::Gt,
                    _ => CmpOp::Ge,
                };
                Ok(Cond::Cmp { op, a: sa, b: sb, width, signed })
            }
            _ => {
                let (s, k) = self.src(e, d)?;
                if k != K::Bool {
                    return Err(refuse(e.span, "a condition that is not a bool"));
                }
                Ok(Cond::Src(s))
            }
        }
    }

    fn select(
        &self,
        exprs: &[Expr],
        cases: &[crate::ast::SelectCase],
        span: Span,
    ) -> Result<Trans> {
        if exprs.len() > MAX_KEYS {
            return Err(refuse(span, format!("a select on more than {MAX_KEYS} values")));
        }
        let mut keys = Vec::with_capacity(exprs.len());
        let mut kinds = Vec::with_capacity(exprs.len());
        for x in exprs {
            let (s, k) = self.src(x, 0)?;
            if matches!(k, K::Int(_)) || k.width() > 128 {
                return Err(refuse(x.span, "selecting on this value"));
            }
            keys.push(s);
            kinds.push(k);
        }
        let mut out = Vec::with_capacity(cases.len());
        for c in cases {
            let next = self.next(&c.next.name, c.next.span)?;
            if c.keys.len() == 1 && matches!(c.keys[0], Keyset::Default(_) | Keyset::DontCare(_)) {
                out.push(Case { keys: vec![Match::Any; keys.len()], next });
                continue;
            }
            if c.keys.len() != keys.len() {
                return Err(refuse(c.span, "a select case with another number of keysets"));
            }
            let mut ms = Vec::with_capacity(keys.len());
            for (ks, k) in c.keys.iter().zip(&kinds) {
                ms.push(self.keyset(ks, k)?);
            }
            out.push(Case { keys: ms, next });
        }
        Ok(Trans::Select { keys, cases: out })
    }

    fn keyset(&self, ks: &Keyset, k: &K) -> Result<Match> {
        let all = mask128(k.width());
        Ok(match ks {
            Keyset::Default(_) | Keyset::DontCare(_) => Match::Any,
            Keyset::Expr(x) => Match::Mask { value: self.key_value(x, k)?, mask: all },
            Keyset::Mask(x, m) => {
                if !matches!(k, K::Bits { .. }) {
                    return Err(refuse(x.span, "a mask on this value"));
                }
                let mask = self.key_value(m, k)?;
                Match::Mask { value: self.key_value(x, k)? & mask, mask }
            }
            Keyset::Range(lo, hi) => {
                let K::Bits { signed, width } = k else {
                    return Err(refuse(lo.span, "a range on this value"));
                };
                let flip = if *signed { 1u128 << (width - 1) } else { 0 };
                Match::Range {
                    lo: self.key_value(lo, k)? ^ flip,
                    hi: self.key_value(hi, k)? ^ flip,
                    flip,
                }
            }
        })
    }

    /// A keyset's constant as a key of type `k`.
    fn key_value(&self, e: &Expr, k: &K) -> Result<u128> {
        let v = self.konst(e).ok_or_else(|| refuse(e.span, "a keyset that is not constant"))?;
        let (s, vk) = self.const_src(&v, e.span)?;
        let bad = || refuse(e.span, "a keyset of another type than its key");
        let s = match (&vk, k) {
            (K::Int(_), K::Bits { .. }) => self.coerce(s, vk, k, e.span)?,
            _ if vk == *k => s,
            _ => return Err(bad()),
        };
        match s {
            Src::Const(v) => Ok(v),
            _ => Err(bad()),
        }
    }
}

fn is_lookahead(e: &Expr, pkt: &str) -> bool {
    matches!(&e.kind, ExprKind::Call { func, args, .. }
        if args.is_empty() && matches!(&func.kind, ExprKind::Member(b, m)
            if m.name == "lookahead" && matches!(&b.kind, ExprKind::Name { id, .. } if id.name == pkt)))
}

/// The type of a scalar P4 type as a parse program computes with it.
fn scalar_k(t: &Ty) -> Option<K> {
    Some(match t {
        Ty::Bits { signed, width } => K::Bits { signed: *signed, width: *width },
        Ty::Bool => K::Bool,
        Ty::Enum(e) => match e.underlying {
            Some((signed, width)) => K::Bits { signed, width },
            None => return None,
        },
        _ => return None,
    })
}

/// The path of the hidden field holding variable `name` of the parser
/// instance at `prefix`.
fn var_path(prefix: &str, name: &str) -> String {
    format!("${prefix}{name}")
}

/// `p`'s own variables bound to their hidden fields.
fn var_binds(p: &ParserDecl, prefix: &str) -> Vec<(String, Root, String)> {
    p.locals
        .iter()
        .filter_map(|l| match l {
            Local::Var(v) => {
                Some((v.name.name.clone(), Root::Meta, var_path(prefix, &v.name.name)))
            }
            _ => None,
        })
        .collect()
}

/// The constants declared in `p`.
fn parser_consts(env: &TypeEnv, p: &ParserDecl) -> Result<Vec<(String, Value)>> {
    let mut consts: Vec<(String, Value)> = Vec::new();
    for l in &p.locals {
        if let Local::Const(c) = l {
            let ty = env.resolve(&c.ty, &[])?;
            let v = {
                let look =
                    |n: &str| consts.iter().rev().find(|(k, _)| k == n).map(|(_, v)| v.clone());
                env.eval_const(&c.value, Some(&ty), &look)?
            };
            consts.push((c.name.name.clone(), v));
        }
    }
    Ok(consts)
}

/// The type of what `path` (as [`Layout::item`] spells it) names below
/// `root`.
fn ty_at(l: &Layout, root: Root, path: &str) -> Option<Ty> {
    if path.starts_with('$') {
        // A parser's own variable (bit<W> or bool, see `hidden_vars`).
        let Some(Item::Field(f)) = l.item(root, path) else { return None };
        return match l.fields.get(f)?.ty {
            FieldTy::Bits { signed, width } => Some(Ty::Bits { signed, width }),
            FieldTy::Bool => Some(Ty::Bool),
            _ => None,
        };
    }
    let mut t = l.types.get(root as usize)?.clone();
    if path.is_empty() {
        return Some(t);
    }
    for seg in path.split('.') {
        let (name, index) = match seg.split_once('[') {
            Some((n, i)) => (n, Some(i.strip_suffix(']')?)),
            None => (seg, None),
        };
        t = match &t {
            Ty::Struct(a) | Ty::Header(a) | Ty::HeaderUnion(a) => a.field(name)?.clone(),
            _ => return None,
        };
        if index.is_some() {
            t = match t {
                Ty::Stack(e, _) => *e,
                _ => return None,
            };
        }
    }
    Some(t)
}

/// Most states one parse may run, counting every sub-parser invocation
/// at its worst ([`parse_work`]): sub-parsers keep [`ParseProg::run`]
/// bounded, not merely finite.
const MAX_WORK: u64 = 1 << 22;

/// Whether `p`'s states can run in a cycle (from `start`).
fn has_cycle(p: &ParserDecl) -> bool {
    fn succ(t: &Option<Transition>) -> Vec<&str> {
        match t {
            None => Vec::new(),
            Some(Transition::Direct(id)) => vec![id.name.as_str()],
            Some(Transition::Select { cases, .. }) => {
                cases.iter().map(|c| c.next.name.as_str()).collect()
            }
        }
    }
    // Iterative depth-first search; 1: on the path, 2: done.
    let idx = |n: &str| p.states.iter().position(|s| s.name.name == n);
    let mut mark = vec![0u8; p.states.len()];
    let Some(start) = idx("start") else { return false };
    let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
    mark[start] = 1;
    while let Some(&mut (i, ref mut k)) = stack.last_mut() {
        let next = succ(&p.states[i].transition);
        match next.get(*k) {
            Some(n) => {
                *k += 1;
                if let Some(j) = idx(n) {
                    match mark[j] {
                        1 => return true,
                        0 => {
                            mark[j] = 1;
                            stack.push((j, 0));
                        }
                        _ => {}
                    }
                }
            }
            None => {
                mark[i] = 2;
                stack.pop();
            }
        }
    }
    false
}

/// The most states one invocation of `p` may run, its sub-parsers'
/// included: its own (all its states when they cannot loop, else the
/// transition bound) times one plus what the `apply`s of one state run.
fn parse_work(prog: &Program, p: &ParserDecl, depth: usize) -> Result<u64> {
    if depth > MAX_NEST {
        return Err(refuse(p.span, format!("sub-parsers nested more than {MAX_NEST} deep")));
    }
    let runs = if has_cycle(p) { u64::from(MAX_PARSER_TRANSITIONS) } else { p.states.len() as u64 };
    let mut per_state = 0u64;
    for st in &p.states {
        let mut w = 1u64;
        for stmt in &st.body {
            let Stmt::Call(e) = stmt else { continue };
            let ExprKind::Call { func, .. } = &e.kind else { continue };
            let ExprKind::Member(b, m) = &func.kind else { continue };
            let ExprKind::Name { id, .. } = &b.kind else { continue };
            let inst = p.locals.iter().find_map(|l| match l {
                Local::Instance(i) if i.name.name == id.name && m.name == "apply" => Some(i),
                _ => None,
            });
            if let Some(i) = inst {
                w = w.saturating_add(parse_work(prog, sub_decl(prog, i)?, depth + 1)?);
            }
        }
        per_state = per_state.max(w);
    }
    Ok(runs.saturating_mul(per_state))
}

/// The parser a sub-parser instance declared in a parser instantiates.
fn sub_decl<'a>(prog: &'a Program, i: &crate::ast::Instantiation) -> Result<&'a ParserDecl> {
    let crate::ast::TypeKind::Named { name, args, .. } = &i.ty.kind else {
        return Err(refuse(i.span, "an instance in a parser of this type"));
    };
    let p = prog.decls.iter().find_map(|d| match d {
        crate::ast::Decl::Parser(p) if p.name.name == name.name => Some(p),
        _ => None,
    });
    match p {
        Some(p) if args.is_empty() && i.args.is_empty() && p.type_params.is_empty() => {
            if let Some(c) = p.ctor_params.first() {
                return Err(refuse(c.span, "a sub-parser with constructor parameters"));
            }
            Ok(p)
        }
        Some(_) => Err(refuse(i.span, "a generic sub-parser or one with constructor arguments")),
        None => Err(refuse(i.span, "an instance in a parser other than of a parser")),
    }
}

/// Gives every variable of parser `p` (instance path `prefix`) and of
/// the sub-parsers it instantiates a hidden field of `layout`; refuses
/// what parser locals cannot be.
fn hidden_vars(
    prog: &Program,
    env: &TypeEnv,
    p: &ParserDecl,
    prefix: &str,
    depth: usize,
    layout: &mut Layout,
    out: &mut Vec<usize>,
) -> Result<()> {
    if depth > MAX_NEST {
        return Err(refuse(p.span, format!("sub-parsers nested more than {MAX_NEST} deep")));
    }
    for l in &p.locals {
        match l {
            Local::Const(_) => {}
            Local::Var(v) => {
                if let Some(e) = &v.init {
                    return Err(refuse(e.span, "a parser variable with an initialiser"));
                }
                let ty = match env.resolve(&v.ty, &[])? {
                    Ty::Bits { signed, width } if (1..=64).contains(&width) => {
                        FieldTy::Bits { signed, width }
                    }
                    Ty::Bool => FieldTy::Bool,
                    _ => return Err(refuse(v.span, "a parser variable of this type")),
                };
                let f = layout
                    .add_hidden(&var_path(prefix, &v.name.name), ty)
                    .ok_or_else(|| refuse(v.span, "a parser variable (the key is full)"))?;
                out.push(f);
            }
            Local::Instance(i) => {
                let sub = sub_decl(prog, i)?;
                let pre = format!("{prefix}{}.", i.name.name);
                hidden_vars(prog, env, sub, &pre, depth + 1, layout, out)?;
            }
            Local::ValueSet { span, .. } => return Err(refuse(*span, "a parser value set")),
            Local::Action(a) => return Err(refuse(a.span, "an action in a parser")),
            Local::Table(t) => return Err(refuse(t.span, "a table in a parser")),
        }
    }
    Ok(())
}

impl Cx<'_> {
    /// Compiles this parser's states into `self.states` from
    /// `self.base` on (their places reserved first, so transitions can
    /// name them), with the sub-parsers they apply inlined after them.
    fn compile_states(&self) -> Result<()> {
        let blank = |name: &str, counts: bool| State {
            name: name.to_string(),
            ops: Vec::new(),
            trans: Trans::Go(Next::Reject),
            level: self.level,
            counts,
            resets: None,
            ret: None,
        };
        {
            let mut st = self.states.borrow_mut();
            if st.len() != self.base {
                return Err(Diagnostic::new(self.p.span, "internal error: parser state order"));
            }
            for x in &self.p.states {
                st.push(blank(&format!("{}{}", self.prefix, x.name.name), true));
            }
        }
        for (i, st) in self.p.states.iter().enumerate() {
            let mut at = self.base + i;
            let mut ops = Vec::new();
            self.vars.borrow_mut().clear();
            for stmt in &st.body {
                if let Some((inst, args, span)) = self.sub_apply(stmt) {
                    if !self.vars.borrow().is_empty() {
                        return Err(refuse(
                            span,
                            "a sub-parser applied after a variable declared in the same state",
                        ));
                    }
                    // The state so far ends by entering the sub-parser;
                    // the rest of it runs when the sub-parser accepts.
                    let cont = {
                        let mut all = self.states.borrow_mut();
                        all.push(State {
                            ret: Some(self.level + 1),
                            ..blank(&format!("{}{}+", self.prefix, st.name.name), false)
                        });
                        all.len() - 1
                    };
                    let entry = self.inline(inst, args, span, Next::State(cont), &mut ops)?;
                    let mut all = self.states.borrow_mut();
                    if let Some(x) = all.get_mut(at) {
                        x.ops = std::mem::take(&mut ops);
                        x.trans = Trans::Go(entry);
                        x.resets = Some(self.level + 1);
                    }
                    at = cont;
                    continue;
                }
                self.stmt(stmt, &mut ops, 0)?;
            }
            let trans = match &st.transition {
                None => Trans::Go(Next::Reject),
                Some(Transition::Direct(id)) => Trans::Go(self.next(&id.name, id.span)?),
                Some(Transition::Select { exprs, cases, span }) => {
                    self.select(exprs, cases, *span)?
                }
            };
            if let Some(x) = self.states.borrow_mut().get_mut(at) {
                x.ops = ops;
                x.trans = trans;
            }
        }
        Ok(())
    }
}

impl<'a> Cx<'a> {
    /// `inst.apply(args)` as a statement, `inst` a parser instance
    /// declared in this parser.
    fn sub_apply<'s>(
        &self,
        s: &'s Stmt,
    ) -> Option<(&'a crate::ast::Instantiation, &'s [crate::ast::Arg], Span)> {
        let Stmt::Call(e) = s else { return None };
        let ExprKind::Call { func, type_args, args } = &e.kind else { return None };
        let ExprKind::Member(b, m) = &func.kind else { return None };
        let ExprKind::Name { id, dot_prefix: false } = &b.kind else { return None };
        if m.name != "apply" || !type_args.is_empty() {
            return None;
        }
        let p: &'a ParserDecl = self.p;
        p.locals.iter().find_map(|l| match l {
            Local::Instance(i) if i.name.name == id.name => Some((i, &args[..], e.span)),
            _ => None,
        })
    }

    /// Inlines an application of sub-parser instance `inst` with `args`:
    /// its states are compiled after the program's others, its
    /// parameters bound to the arguments' places (so what it writes is
    /// where copy-out would put it, also when it rejects, as the
    /// interpreter copies out after a reject) and its `accept` going to
    /// `accept`. The ops entering it (zeroing its `out` arguments and
    /// its variables, as a new invocation starts them) go to `ops`;
    /// returns its start state.
    fn inline(
        &self,
        inst: &'a crate::ast::Instantiation,
        args: &[crate::ast::Arg],
        span: Span,
        accept: Next,
        ops: &mut Vec<POp>,
    ) -> Result<Next> {
        let sub = sub_decl(self.prog, inst)?;
        if self.level >= MAX_NEST {
            return Err(refuse(span, format!("sub-parsers nested more than {MAX_NEST} deep")));
        }
        if sub.params.len() != args.len() || args.iter().any(|a| a.name.is_some()) {
            return Err(refuse(span, "this sub-parser call's arguments"));
        }
        let mut pkt = String::new();
        let mut binds: Vec<(String, Root, String)> = Vec::new();
        for (prm, a) in sub.params.iter().zip(args) {
            let is_pkt = matches!(&prm.ty.kind,
                crate::ast::TypeKind::Named { name, .. } if name.name == "packet_in");
            if is_pkt {
                match &a.value.kind {
                    ExprKind::Name { id, dot_prefix: false } if id.name == self.pkt => {
                        pkt = prm.name.name.clone();
                        continue;
                    }
                    _ => return Err(refuse(a.span, "a sub-parser given another packet")),
                }
            }
            if !matches!(prm.dir, crate::ast::Direction::InOut | crate::ast::Direction::Out) {
                return Err(refuse(prm.span, "a sub-parser parameter other than `inout`/`out`"));
            }
            let Some(Place::Static(root, path)) = self.place(&a.value, 0)? else {
                return Err(refuse(a.span, "this sub-parser argument"));
            };
            let item = self.l.item(root, &path);
            // The interpreter converts an argument to its parameter's
            // type; binding by place is exact only for the same type.
            if ty_at(self.l, root, &path) != Some(self.env.resolve(&prm.ty, &[])?) {
                return Err(refuse(a.span, "a sub-parser argument of another type"));
            }
            if prm.dir == crate::ast::Direction::Out {
                let in_union = |f: usize| {
                    self.l.headers.iter().any(|h| h.union.is_some() && h.fields.contains(&f))
                };
                match item {
                    Some(Item::Field(f)) if !in_union(f) => {
                        ops.push(POp::Set { field: f, src: Src::Const(0), header: None })
                    }
                    _ => {
                        return Err(refuse(
                            a.span,
                            "an `out` sub-parser argument other than a field or variable",
                        ))
                    }
                }
            }
            binds.push((prm.name.name.clone(), root, path));
        }
        // Copy-in/copy-out equals binding by place unless two arguments
        // overlap.
        let within = |a: &str, b: &str| {
            a.is_empty()
                || a == b
                || b.strip_prefix(a).is_some_and(|r| r.starts_with('.') || r.starts_with('['))
        };
        for (i, (_, r1, p1)) in binds.iter().enumerate() {
            for (_, r2, p2) in binds.iter().skip(i + 1) {
                if r1 == r2 && (within(p1, p2) || within(p2, p1)) {
                    return Err(refuse(span, "sub-parser arguments that overlap"));
                }
            }
        }
        let prefix = format!("{}{}.", self.prefix, inst.name.name);
        for (_, root, path) in var_binds(sub, &prefix) {
            let f = self
                .l
                .field(root, &path)
                .ok_or_else(|| Diagnostic::new(span, "internal error: a parser variable"))?;
            ops.push(POp::Set { field: f, src: Src::Const(0), header: None });
        }
        binds.extend(var_binds(sub, &prefix));
        let cx = Cx {
            env: self.env,
            prog: self.prog,
            l: self.l,
            pkt,
            binds,
            consts: parser_consts(self.env, sub)?,
            p: sub,
            prefix,
            base: self.states.borrow().len(),
            accept,
            level: self.level + 1,
            states: self.states,
            vars: std::cell::RefCell::new(Vec::new()),
        };
        cx.compile_states()?;
        cx.next("start", sub.name.span)
    }
}

fn stmt_span(s: &Stmt) -> Span {
    match s {
        Stmt::Assign { span, .. }
        | Stmt::If { span, .. }
        | Stmt::Switch { span, .. }
        | Stmt::Exit(span)
        | Stmt::Return(_, span)
        | Stmt::Empty(span) => *span,
        Stmt::Call(e) => e.span,
        Stmt::Block(b) => b.span,
        Stmt::Var(v) => v.span,
        Stmt::Const(c) => c.span,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::Interp;
    use sluice_core::pkt::Pkt;

    const PROG: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header vlan_t { bit<3> pcp; bit<1> cfi; bit<12> vid; bit<16> type; }
header ip_t { bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<64> rest; bit<32> src; bit<32> dst; }
header tail_t { bit<8> x; }
error { BadVersion }
struct meta_t { bit<16> t; bool seen; bit<8> peek; }
struct headers { eth_t eth; vlan_t[2] vlan; ip_t ip; tail_t tail; }
parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        meta.t = hdr.eth.type;
        transition select(hdr.eth.type) {
            0x8100 &&& 0xefff: vlan;
            0x0800: ip;
            0x0900 .. 0x09ff: skip;
            default: accept;
        }
    }
    state vlan {
        pkt.extract(hdr.vlan.next);
        transition select(hdr.vlan.last.type) {
            0x8100: vlan;
            0x0800: ip;
            default: reject;
        }
    }
    state ip {
        meta.peek = pkt.lookahead<bit<8>>();
        pkt.extract(hdr.ip);
        verify(hdr.ip.version == 4 && hdr.ip.ihl >= 5, error.BadVersion);
        meta.seen = true;
        transition select(hdr.ip.dst[31:24], pkt.lookahead<tail_t>().x) {
            (10, _): tail;
            (_, 0xff): loop;
            _: accept;
        }
    }
    state tail { pkt.extract(hdr.tail); transition accept; }
    state skip { pkt.advance(16); transition loop; }
    state loop { pkt.advance(0); transition loop; }
}
control C(inout headers h, inout meta_t m) { apply { } }
control I(inout headers h, inout meta_t m, inout standard_metadata_t s) { apply { } }
control D(packet_out pkt, in headers h) { apply { } }
V1Switch(P(), C(), I(), I(), C(), D()) main;
"#;

    fn both(src: &str) -> (Interp, ParseProg) {
        let loaded = crate::parse::load_str("t.p4", src).unwrap();
        let interp = Interp::new(&loaded).unwrap();
        let prog = ParseProg::compile(&loaded.program)
            .unwrap_or_else(|d| panic!("{}", loaded.sources.render(&d)));
        (interp, prog)
    }

    fn agree(interp: &mut Interp, prog: &ParseProg, port: u32, f: &[u8]) -> FlowKey {
        let want = interp.parse_only(port, f).unwrap();
        let mut key = FlowKey::ZERO;
        prog.run(f, port, &mut key);
        let l = &prog.layout;
        assert_eq!(l.decode(&key, Root::Headers), want.headers, "{f:02x?}");
        assert_eq!(l.decode(&key, Root::Meta), want.meta, "{f:02x?}");
        assert_eq!(l.decode(&key, Root::Std), want.standard, "{f:02x?}");
        key
    }

    fn frame(types: &[u16], ip: Option<(u8, [u8; 4])>, tail: &[u8]) -> Vec<u8> {
        let mut f = vec![0xaa; 6];
        f.extend_from_slice(&[2, 0, 0, 0, 0, 1]);
        for (i, t) in types.iter().enumerate() {
            if i > 0 {
                f.extend_from_slice(&[0x20, 0x05 + i as u8]);
            }
            f.extend_from_slice(&t.to_be_bytes());
        }
        if let Some((vihl, dst)) = ip {
            f.extend_from_slice(&[vihl, 0, 0, 28]);
            f.extend_from_slice(&[0; 8]);
            f.extend_from_slice(&[192, 168, 0, 1]);
            f.extend_from_slice(&dst);
        }
        f.extend_from_slice(tail);
        f
    }

    fn error_of(prog: &ParseProg, key: &FlowKey) -> Value {
        let f = prog.layout.field(Root::Std, "parser_error").unwrap();
        prog.layout.value(key, f)
    }

    #[test]
    fn bits_at_reads_what_a_bit_by_bit_reader_reads() {
        // Bytes with every bit pattern spread about (Fibonacci hashing).
        let data: Vec<u8> =
            (1..=24u64).map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8).collect();
        for n in [1, 7, 8, 9, 16, 17, 24] {
            let d = &data[..n];
            for pos in 0..n * 8 {
                for w in 1..=64u32 {
                    if pos + w as usize > n * 8 {
                        break;
                    }
                    let mut want = 0u64;
                    for b in pos..pos + w as usize {
                        want = want << 1 | u64::from(d[b / 8] >> (7 - b % 8) & 1);
                    }
                    assert_eq!(bits_at(d, pos, w), want, "{n} bytes, bit {pos}, {w} bits");
                }
            }
        }
    }

    #[test]
    fn the_quick_form_serves_programs_without_sub_parsers() {
        // Every frame of the other tests goes through it and, with debug
        // assertions, through the generic states too (compared there).
        let (_, p) = both(PROG);
        let q = p.quick.as_ref().expect("a quick form");
        // Ethernet in two runs (48 bits, then 48 + 16), the IP header in
        // three and the tail in one.
        assert_eq!(q.runs(), [2, 3, 1]);
        // Generic: the VLAN stack's extract, `meta.t = ..`, the lookahead
        // into `meta.peek`, the `&&` in verify, `meta.seen = true`, the
        // two `advance`s, and the selects with a range, on the stack or
        // on two values.
        assert_eq!(q.generic(), 10);
        let (_, r) = both(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../examples/p4/router.p4"
            ))
            .unwrap(),
        );
        let q = r.quick.as_ref().expect("a quick form");
        assert_eq!((q.runs(), q.generic()), (vec![2, 3], 0));
    }

    #[test]
    fn literal_frames() {
        let (mut i, p) = both(PROG);
        let l = p.layout.clone();
        // Two VLAN tags, IPv4 to 10.x: the tail header.
        let f = frame(&[0x8100, 0x8100, 0x0800], Some((0x45, [10, 0, 0, 1])), &[0x77]);
        let k = agree(&mut i, &p, 3, &f);
        assert_eq!(error_of(&p, &k), Value::Error("NoError".into()));
        let vid = l.field(Root::Headers, "vlan[1].vid").unwrap();
        assert_eq!(l.get_u128(&k, vid), 0x007);
        assert_eq!(l.stacks[0].next.get(&k), 2);
        let tail = l.header(Root::Headers, "tail").unwrap();
        assert!(l.is_valid(&k, tail));
        assert_eq!(l.get_u128(&k, l.field(Root::Meta, "peek").unwrap()), 0x45);
        assert_eq!(l.get_u128(&k, l.field(Root::Std, "ingress_port").unwrap()), 3);
        assert_eq!(l.cursor.get(&k), (f.len() * 8) as u64);
        // 0x9100 matches 0x8100 &&& 0xefff.
        agree(&mut i, &p, 0, &frame(&[0x9100, 0x0800], Some((0x45, [1, 2, 3, 4])), &[]));
        // A third tag: stack out of bounds.
        let f = frame(&[0x8100, 0x8100, 0x8100, 0x0800], None, &[]);
        let k = agree(&mut i, &p, 0, &f);
        assert_eq!(error_of(&p, &k), Value::Error("StackOutOfBounds".into()));
        // verify fails; the IP header stays extracted.
        let k = agree(&mut i, &p, 0, &frame(&[0x0800], Some((0x65, [1, 2, 3, 4])), &[]));
        assert_eq!(error_of(&p, &k), Value::Error("BadVersion".into()));
        assert!(l.is_valid(&k, l.header(Root::Headers, "ip").unwrap()));
        // A range, then a loop that never ends: the transition bound.
        let k = agree(&mut i, &p, 0, &frame(&[0x0942], None, &[0, 0]));
        assert_eq!(error_of(&p, &k), Value::Error("ParserTimeout".into()));
        // The lookahead in the select sees 0xff: a loop too.
        let k = agree(&mut i, &p, 0, &frame(&[0x0800], Some((0x45, [1, 2, 3, 4])), &[0xff]));
        assert_eq!(error_of(&p, &k), Value::Error("ParserTimeout".into()));
        // No match after a tag.
        let k = agree(&mut i, &p, 0, &frame(&[0x8100, 0x1234], None, &[]));
        assert_eq!(error_of(&p, &k), Value::Error("NoError".into()));
        // Every prefix: PacketTooShort where the interpreter says so.
        let f = frame(&[0x8100, 0x0800], Some((0x45, [10, 0, 0, 1])), &[0x77]);
        for n in 0..f.len() {
            let k = agree(&mut i, &p, 1, &f[..n]);
            assert_eq!(error_of(&p, &k), Value::Error("PacketTooShort".into()), "{n}");
        }
    }

    #[test]
    fn arbitrary_frames_do_not_panic_and_agree() {
        let (mut i, p) = both(PROG);
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            (seed >> 33) as u32
        };
        let kinds = [0x8100u16, 0x0800, 0x0900, 0x9100, 0x1234];
        for _ in 0..2000 {
            let n = (next() % 80) as usize;
            let mut f: Vec<u8> = (0..n).map(|_| next() as u8).collect();
            // Steer some frames into the interesting states.
            let mut at = 12;
            while at + 2 <= f.len() && next() % 3 != 0 {
                let t = kinds[(next() % 5) as usize];
                f[at..at + 2].copy_from_slice(&t.to_be_bytes());
                at += 4;
            }
            agree(&mut i, &p, next() % 512, &f);
        }
    }

    const ARITH: &str = r#"
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; int<8> c; bit<16> d; bit<3> n; bit<5> pad; }
struct meta_t {
    bit<8> add; bit<8> sub; bit<8> mul; bit<8> bits; int<8> sshr; bit<8> shl;
    bit<16> cat; bit<32> wide; int<16> sx; bit<4> neg; bool big;
}
struct headers { h_t h; }
parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        meta.add = hdr.h.a + hdr.h.b + 200;
        meta.sub = hdr.h.a - hdr.h.b;
        meta.mul = hdr.h.a * 3;
        meta.bits = (hdr.h.a & 0xf0) | (hdr.h.b ^ 0x0f);
        meta.sshr = hdr.h.c >> hdr.h.n;
        meta.shl = hdr.h.a << (hdr.h.n + 6);
        meta.cat = hdr.h.a ++ hdr.h.b;
        meta.wide = (bit<32>)(hdr.h.d * 8) + (bit<32>)hdr.h.c;
        meta.sx = (int<16>)hdr.h.c;
        meta.neg = -hdr.h.a[3:0];
        meta.big = (bool)hdr.h.a[7:7];
        verify(hdr.h.c < 100 || hdr.h.d != 0xffff, error.NoMatch);
        pkt.advance((bit<32>)hdr.h.n * 8);
        transition select(hdr.h.a ++ hdr.h.b[3:0]) {
            0x000 .. 0x7ff: accept;
            _: reject;
        }
    }
}
control C(inout headers h, inout meta_t m) { apply { } }
control I(inout headers h, inout meta_t m, inout standard_metadata_t s) { apply { } }
control D(packet_out pkt, in headers h) { apply { } }
V1Switch(P(), C(), I(), I(), C(), D()) main;
"#;

    #[test]
    fn arithmetic_agrees_with_the_interpreter() {
        let (mut i, p) = both(ARITH);
        let mut seed = 11u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            (seed >> 33) as u8
        };
        for _ in 0..3000 {
            let n = usize::from(next() % 16);
            let f: Vec<u8> = (0..n).map(|_| next()).collect();
            agree(&mut i, &p, 0, &f);
        }
    }

    #[test]
    fn implements_the_core_parse_hook() {
        let (_, p) = both(PROG);
        let l = p.layout.clone();
        let hook: Arc<dyn Parse> = Arc::new(p);
        let mut pkt = Pkt::new();
        pkt.set_parser(Some(&hook));
        let f = frame(&[0x0800], Some((0x45, [10, 1, 2, 3])), &[9]);
        let meta = Meta { in_port: 5, ..Meta::default() };
        assert!(pkt.load(&f, meta));
        let dst = l.field(Root::Headers, "ip.dst").unwrap();
        assert_eq!(l.get_u128(&pkt.key, dst), 0x0a01_0203);
        assert_eq!(l.get_u128(&pkt.key, l.field(Root::Std, "ingress_port").unwrap()), 5);
        assert_eq!(pkt.info.len as usize, f.len());
    }

    fn refusal(body: &str, locals: &str) -> (String, String) {
        let src = PROG
            .replace("parser P(", "parser Q(")
            .replace("V1Switch(P()", "V1Switch(R()")
            .replace(
                "control C(",
                &format!(
                    "parser R(packet_in pkt, out headers hdr, inout meta_t meta, \
                     inout standard_metadata_t sm) {{ {locals} state start {{ {body} transition accept; }} }}\n\
                     control C("
                ),
            );
        let loaded = crate::parse::load_str("t.p4", &src).unwrap();
        let d = ParseProg::compile(&loaded.program).unwrap_err();
        let at =
            d.span.map(|s| src[s.start as usize..s.end as usize].to_string()).unwrap_or_default();
        (d.message, at)
    }

    #[test]
    fn refusals_name_the_construct_at_its_span() {
        let (m, at) = refusal("if (hdr.eth.type == 1) { pkt.extract(hdr.eth); }", "");
        assert_eq!(m, "lowering: `if` in a parser state is not supported yet");
        assert!(at.starts_with("if (hdr.eth.type"), "{at}");
        let (m, at) = refusal("pkt.advance((int<32>)hdr.eth.type);", "");
        assert!(m.contains("`advance` by this value"), "{m}");
        assert_eq!(at, "(int<32>)hdr.eth.type");
        let (m, at) = refusal("", "bit<8> x = 1;");
        assert!(m.contains("a parser variable with an initialiser"), "{m}");
        assert_eq!(at, "1");
        let (m, _) = refusal("", "bit<65> x;");
        assert!(m.contains("a parser variable of this type"), "{m}");
        let (m, at) = refusal("meta.t = hdr.eth.type / 2;", "");
        assert!(m.contains("this operator in a parser expression"), "{m}");
        assert_eq!(at, "hdr.eth.type / 2");
        let (m, at) = refusal("pkt.extract(hdr.vlan.last);", "");
        assert!(m.contains("extract into `.last`"), "{m}");
        assert_eq!(at, "hdr.vlan.last");
        let (m, _) = refusal("meta.t = hdr.eth.dst;", "");
        assert!(m.contains("mixing these types"), "{m}");
    }

    #[test]
    fn varbit_extract_needs_a_size() {
        let src = PROG
            .replace("bit<8> x; }", "bit<8> x; varbit<16> v; }")
            .replace("pkt.lookahead<tail_t>().x", "pkt.lookahead<bit<8>>()");
        let loaded = crate::parse::load_str("t.p4", &src).unwrap();
        let d = ParseProg::compile(&loaded.program).unwrap_err();
        assert_eq!(
            d.message,
            "lowering: extracting a varbit header without a size is not supported yet"
        );
        let s = d.span.unwrap();
        assert_eq!(&src[s.start as usize..s.end as usize], "pkt.extract(hdr.tail)");
    }

    #[test]
    fn varbits_agree_with_the_interpreter() {
        let src = PROG
            .replace("bit<8> x; }", "bit<4> len; bit<4> k; varbit<40> v; bit<8> after; }")
            .replace("pkt.lookahead<tail_t>().x", "pkt.lookahead<bit<8>>()")
            .replace(
                "pkt.extract(hdr.tail);",
                "pkt.extract(hdr.tail, (bit<32>)hdr.tail_peek.len * 8);",
            )
            .replace("state tail {", "state tail { hdr_tail_peek_placeholder");
        // The size comes from the header itself: look ahead at it first.
        let src = src.replace("hdr_tail_peek_placeholder", "meta.peek = pkt.lookahead<bit<8>>();");
        let src = src.replace("(bit<32>)hdr.tail_peek.len * 8", "(bit<32>)meta.peek[7:4] * 8");
        let (mut i, p) = both(&src);
        let mut seed = 3u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            (seed >> 33) as u8
        };
        for len in 0..9u8 {
            for extra in 0..8usize {
                let mut tail = vec![len << 4 | 3];
                tail.extend((0..extra).map(|_| next()));
                let f = frame(&[0x0800], Some((0x45, [10, 0, 0, 1])), &tail);
                let k = agree(&mut i, &p, 0, &f);
                if len > 5 {
                    assert_eq!(error_of(&p, &k), Value::Error("HeaderTooShort".into()));
                }
            }
        }
    }
}
