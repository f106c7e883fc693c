//! The P4 reference interpreter: a direct, dynamic interpretation of
//! the syntax tree with v1model's pipeline and externs, as bmv2's
//! `simple_switch` runs them.
//!
//! It is the reference every faster engine is tested against, so it
//! favours plain, spec-following code over speed.
//!
//! # Model
//!
//! * [`Interp::new`] resolves the program's types ([`crate::types`]),
//!   instantiates `main` (a `V1Switch`) and every parser, control,
//!   table and extern inside it, evaluates `const entries`/`entries`
//!   and default actions, and refuses what it does not support
//!   (`clone`, `resubmit`, `recirculate`, value sets, action profiles
//!   and selectors, ...) with a diagnostic.
//! * Each packet runs parser → verifyChecksum → ingress → traffic
//!   manager → egress → computeChecksum → deparser like bmv2: a parser
//!   error does not drop the packet (it is recorded in
//!   `standard_metadata.parser_error` and ingress runs with what was
//!   extracted); `egress_spec == 511` after ingress drops; a non-zero
//!   `mcast_grp` replicates to the group's `(rid, port)` copies
//!   (`instance_type` 5, `egress_rid` set); `egress_spec == 511` after
//!   egress drops that copy. The deparser's output is followed by the
//!   part of the packet the parser did not consume.
//! * Values are [`crate::value::Value`]s; an `int` literal takes the type
//!   of the other operand, the assignment target or the parameter.
//!   Reading a field of an invalid header gives what it holds (zero
//!   unless written); `setValid()` on an invalid header zeroes it, as
//!   bmv2 does.
//! * Calls use copy-in/copy-out; `out` parameters start invalid/zero;
//!   copy-out happens also after `exit` (spec 12.5) and after a
//!   sub-parser's reject.
//! * `random()` is deterministic: it returns its lower bound. Meters are
//!   two-rate three-colour markers ([`crate::meter`]) on the clock the
//!   interpreter is given; a table's direct counter and meter cells live
//!   in its entries. `digest()` data is queued (see
//!   [`Interp::take_digests`]).
//! * Everything is bounded: parser transitions (1000 per parser
//!   invocation), statements per packet, call depth and expression
//!   depth, so no input makes it loop or overflow its stack.

mod exec;
pub(crate) mod externs;
mod render;
pub(crate) mod table;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::ast::{self, BigValue, Decl, Expr, ExprKind, Local, Program, Type, TypeKind};
use crate::diag::{Diagnostic, Result, Span};
use crate::parse::Loaded;
use crate::target::{
    ActionInfo, Clock, CtlResult, DirectCells, DirectState, EntryDump, EntrySpec, KeyInfo, Manage,
    Meter, MeterConfig, Output, TableInfo, Target, DEFAULT_ENTRY,
};
use crate::types::{Ty, TypeEnv};
use crate::value::{Bits, Value};

pub use flow::parse_hex;
pub use render::render_expr;
use table::{TableDyn, TableStatic};

// The trace hook and the frame builder of `sluice p4 trace`.
mod flow;
mod trace;
pub use trace::{show_big, show_bits, show_match, show_value, TraceEvent, MAX_TRACE_EVENTS};

/// A `digest()` call's data: the receiver and the value.
#[derive(Clone, Debug, PartialEq)]
pub struct Digest {
    pub receiver: u64,
    pub data: Value,
}

/// What the parser leaves ([`Interp::parse_only`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ParseResult {
    pub headers: Value,
    pub meta: Value,
    pub standard: Value,
}

/// Most digests queued until [`Interp::take_digests`]; later ones are
/// dropped and counted ([`Interp::digests_dropped`]).
pub const MAX_DIGESTS: usize = 65_536;

/// Most states one parser invocation runs; then it rejects with
/// `error.ParserTimeout`.
pub const MAX_PARSER_TRANSITIONS: u32 = 1000;

/// What a `standard_metadata.egress_spec` of this value does: drop.
pub const DROP_PORT: u32 = 511;
const INSTANCE_TYPE_REPLICATION: u128 = 5;

/// An instantiated parser/control or extern, known at load.
#[derive(Clone, Debug)]
pub(crate) enum Inst {
    Block(BlockInst),
    Extern(ExternInst),
}

#[derive(Clone, Debug)]
pub(crate) struct BlockInst {
    /// Index of the `Decl::Parser`/`Decl::Control`.
    pub(crate) decl: usize,
    pub(crate) is_parser: bool,
    /// Dotted name for the control plane (`ingress`, `ingress.c1`).
    pub(crate) path: String,
    /// Constructor parameters' values.
    pub(crate) ctor: Vec<(String, Value)>,
    /// Local instances and tables by name.
    pub(crate) objects: HashMap<String, Obj>,
}

#[derive(Clone, Debug)]
pub(crate) struct ExternInst {
    /// The extern type's name (`register`, `counter`, ...).
    pub(crate) kind: String,
    pub(crate) path: String,
    pub(crate) type_args: Vec<Ty>,
    pub(crate) args: Vec<Value>,
}

/// Something a name in a parser or control can denote besides a
/// variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Obj {
    Inst(usize),
    Table(usize),
}

/// Run-time state of an extern instance.
#[derive(Clone, Debug)]
pub(crate) enum ExternState {
    Register(Vec<Value>),
    Counter(Vec<(u64, u64)>),
    /// An indexed `meter`'s cells.
    Meter(Vec<crate::meter::Meter>),
    None,
}

/// The immutable part: the program and everything resolved at load.
#[derive(Debug)]
pub(crate) struct Static {
    pub(crate) prog: Program,
    pub(crate) env: TypeEnv,
    pub(crate) funcs: HashMap<String, usize>,
    pub(crate) actions: HashMap<String, usize>,
    pub(crate) ext_funcs: HashMap<String, usize>,
    pub(crate) insts: Vec<Inst>,
    pub(crate) tables: Vec<TableStatic>,
    /// Top-level extern instances by name.
    pub(crate) globals: HashMap<String, Obj>,
    /// parser, verifyChecksum, ingress, egress, computeChecksum, deparser.
    pub(crate) pipeline: [usize; 6],
    /// Types of the pipeline's `headers`, `metadata` and
    /// `standard_metadata_t` parameters.
    pub(crate) hdr_ty: Ty,
    pub(crate) meta_ty: Ty,
    pub(crate) sm_ty: Ty,
}

/// The mutable part: table contents and extern state.
#[derive(Clone, Debug, Default)]
pub(crate) struct Dyn {
    pub(crate) tables: Vec<TableDyn>,
    pub(crate) externs: HashMap<usize, ExternState>,
    pub(crate) mcast: BTreeMap<u32, Vec<(u32, u32)>>,
    pub(crate) digests: Vec<Digest>,
    /// Digests not queued because [`MAX_DIGESTS`] were waiting.
    pub(crate) digests_dropped: u64,
    /// Next implicit priority for control-plane entries without one.
    pub(crate) seq: u64,
    /// What meters read the time from.
    pub(crate) clock: crate::meter::Clock,
    /// The colour the last applied table's direct meter (this instance)
    /// gave, for `direct_meter.read` in its action.
    pub(crate) direct_color: Option<(usize, u8)>,
}

/// The reference interpreter of one v1model program.
#[derive(Debug)]
pub struct Interp {
    pub(crate) s: Arc<Static>,
    pub(crate) d: Dyn,
    initial_tables: Vec<TableDyn>,
}

const REFUSED_OBJECTS: &[&str] = &["action_selector", "action_profile", "Checksum16", "value_set"];

impl Interp {
    /// Loads a parsed program: resolves types, instantiates `main` and
    /// everything in it, and refuses what is not supported.
    pub fn new(loaded: &Loaded) -> Result<Interp> {
        let prog = loaded.program.clone();
        let env = TypeEnv::new(&prog)?;
        let mut b = Builder {
            prog: &prog,
            env: &env,
            funcs: HashMap::new(),
            actions: HashMap::new(),
            ext_funcs: HashMap::new(),
            blocks: HashMap::new(),
            extern_objs: HashMap::new(),
            insts: Vec::new(),
            tables: Vec::new(),
            table_dyn: Vec::new(),
            globals: HashMap::new(),
        };
        let mut main = None;
        for (i, d) in prog.decls.iter().enumerate() {
            match d {
                Decl::Function(f) => {
                    b.funcs.insert(f.name.name.clone(), i);
                }
                Decl::Action(a) => {
                    b.actions.insert(a.name.name.clone(), i);
                }
                Decl::ExternFunction(f) => {
                    b.ext_funcs.insert(f.name.name.clone(), i);
                }
                Decl::Parser(p) => {
                    b.blocks.insert(p.name.name.clone(), i);
                }
                Decl::Control(c) => {
                    b.blocks.insert(c.name.name.clone(), i);
                }
                Decl::ExternObject(x) => {
                    b.extern_objs.insert(x.name.name.clone(), i);
                }
                Decl::Instance(inst) => {
                    if inst.name.name == "main" {
                        main = Some(inst);
                    } else {
                        let id =
                            b.instantiate(&inst.ty, &inst.args, inst.name.name.clone(), None, 0)?;
                        b.globals.insert(inst.name.name.clone(), id);
                    }
                }
                _ => {}
            }
        }
        b.check_refused()?;
        let Some(main) = main else {
            return Err(Diagnostic::bare("the program has no `main` instance"));
        };
        let pipeline = b.instantiate_main(main)?;
        // Pipeline parameter types from the parser's parameters.
        let (hdr_ty, meta_ty, sm_ty) = b.pipeline_types(pipeline[0], main.span)?;
        let Builder { funcs, actions, ext_funcs, insts, tables, table_dyn, globals, .. } = b;
        let mut externs = HashMap::new();
        for (i, inst) in insts.iter().enumerate() {
            if let Inst::Extern(x) = inst {
                externs.insert(i, externs::initial_state(x));
            }
        }
        let s = Static {
            prog,
            env,
            funcs,
            actions,
            ext_funcs,
            insts,
            tables,
            globals,
            pipeline,
            hdr_ty,
            meta_ty,
            sm_ty,
        };
        let d = Dyn { tables: table_dyn.clone(), externs, ..Dyn::default() };
        Ok(Interp { s: Arc::new(s), d, initial_tables: table_dyn })
    }

    /// Runs only the parser on a packet received on `port`: the headers,
    /// metadata and standard metadata it leaves for ingress (with
    /// `parser_error` set). For testing compiled parsers against the
    /// reference.
    pub fn parse_only(&mut self, port: u32, data: &[u8]) -> CtlResult<ParseResult> {
        let s = self.s.clone();
        let [headers, meta, standard] = exec::parse_only(&s, &mut self.d, port, data)?;
        Ok(ParseResult { headers, meta, standard })
    }

    /// Digests dropped so far because [`MAX_DIGESTS`] were waiting.
    pub fn digests_dropped(&self) -> u64 {
        self.d.digests_dropped
    }

    /// Takes the digests queued so far.
    pub fn take_digests(&mut self) -> Vec<Digest> {
        std::mem::take(&mut self.d.digests)
    }

    /// Full control-plane names of the tables.
    pub fn table_names(&self) -> Vec<String> {
        self.s.tables.iter().map(|t| t.name.clone()).collect()
    }

    /// A register's cells (by suffix-resolved name), for tests and
    /// `register_read`.
    pub fn register(&self, name: &str) -> CtlResult<Vec<Value>> {
        let id = self.extern_by_name(name)?;
        match self.d.externs.get(&id) {
            Some(ExternState::Register(v)) => Ok(v.clone()),
            _ => Err(format!("`{name}` is not a register")),
        }
    }

    /// A counter's `(packets, bytes)` cells.
    pub fn counter(&self, name: &str) -> CtlResult<Vec<(u64, u64)>> {
        let id = self.extern_by_name(name)?;
        match self.d.externs.get(&id) {
            Some(ExternState::Counter(v)) => Ok(v.clone()),
            _ => Err(format!("`{name}` is not a counter")),
        }
    }

    fn extern_path(&self, id: usize) -> String {
        match self.s.insts.get(id) {
            Some(Inst::Extern(x)) => x.path.clone(),
            _ => String::new(),
        }
    }

    /// The direct cells (counter, meter, colour counts) of table `tid`'s
    /// entry `handle`, or of its default entry ([`DEFAULT_ENTRY`]).
    #[allow(clippy::type_complexity)]
    fn cells_mut(
        &mut self,
        tid: usize,
        handle: u64,
    ) -> CtlResult<(&mut (u64, u64), &mut crate::meter::Meter, &mut [(u64, u64); 3])> {
        let name = &self.s.tables[tid].name;
        let td = self.d.tables.get_mut(tid).ok_or("internal error: table state")?;
        if handle == DEFAULT_ENTRY {
            let d = &mut td.default_cells;
            return Ok((&mut d.counter, &mut d.meter, &mut d.colours));
        }
        let e = td
            .entries
            .iter_mut()
            .find(|e| e.handle == handle)
            .ok_or_else(|| format!("table `{name}` has no entry with handle {handle}"))?;
        Ok((&mut e.counter, &mut e.meter, &mut e.colours))
    }

    /// Cell `index` of the meter `name` names.
    fn meter_cell(&mut self, name: &str, index: usize) -> CtlResult<&mut crate::meter::Meter> {
        let id = self.extern_by_name(name)?;
        let path = self.extern_path(id);
        match self.d.externs.get_mut(&id) {
            Some(ExternState::Meter(v)) => {
                let n = v.len();
                v.get_mut(index)
                    .ok_or_else(|| format!("index {index} is outside meter `{path}` of {n} cells"))
            }
            _ => Err(format!("`{name}` is not a meter")),
        }
    }

    fn extern_by_name(&self, name: &str) -> CtlResult<usize> {
        let names: Vec<(String, usize)> = self
            .s
            .insts
            .iter()
            .enumerate()
            .filter_map(|(i, inst)| match inst {
                Inst::Extern(x) => Some((x.path.clone(), i)),
                _ => None,
            })
            .collect();
        resolve_suffix(name, names.iter().map(|(n, i)| (n.as_str(), *i)), "extern instance")
    }
}

/// Resolves `name` by suffix on `.`-separated components among
/// `candidates`.
pub(crate) fn resolve_suffix<'a, T: Copy>(
    name: &str,
    candidates: impl Iterator<Item = (&'a str, T)>,
    what: &str,
) -> CtlResult<T> {
    let name = name.strip_prefix('.').unwrap_or(name);
    let mut found: Vec<(&str, T)> = Vec::new();
    for (full, v) in candidates {
        let f = full.strip_prefix('.').unwrap_or(full);
        if f == name || f.ends_with(&format!(".{name}")) {
            if f == name {
                return Ok(v);
            }
            found.push((full, v));
        }
    }
    match found.len() {
        0 => Err(format!("no {what} named `{name}`")),
        1 => Ok(found[0].1),
        _ => Err(format!(
            "`{name}` is ambiguous: {}",
            found.iter().map(|(n, _)| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// The `@name("...")` annotation's value.
fn name_annotation(anns: &[ast::Annotation]) -> Option<String> {
    anns.iter()
        .find(|a| a.name.name == "name")
        .and_then(|a| a.args.first())
        .map(|s| s.trim_matches('"').to_string())
}

struct Builder<'a> {
    prog: &'a Program,
    env: &'a TypeEnv,
    funcs: HashMap<String, usize>,
    actions: HashMap<String, usize>,
    ext_funcs: HashMap<String, usize>,
    blocks: HashMap<String, usize>,
    extern_objs: HashMap<String, usize>,
    insts: Vec<Inst>,
    tables: Vec<TableStatic>,
    table_dyn: Vec<TableDyn>,
    globals: HashMap<String, Obj>,
}

impl Builder<'_> {
    fn instantiate_main(&mut self, main: &ast::Instantiation) -> Result<[usize; 6]> {
        let pkg = match &main.ty.kind {
            TypeKind::Named { name, .. } => name.name.as_str(),
            _ => "",
        };
        if pkg != "V1Switch" {
            return Err(Diagnostic::unsupported(
                main.ty.span,
                format!("package `{pkg}` (only v1model's V1Switch)"),
            ));
        }
        if main.args.len() != 6 {
            return Err(Diagnostic::unsupported(
                main.span,
                "a V1Switch without exactly six blocks",
            ));
        }
        let mut out = [0usize; 6];
        for (i, a) in main.args.iter().enumerate() {
            let id = self.instantiate_expr(&a.value, None, None, 0)?;
            let Obj::Inst(id) = id else {
                return Err(Diagnostic::new(a.span, "expected a parser or control"));
            };
            let want_parser = i == 0;
            match self.insts.get(id) {
                Some(Inst::Block(b)) if b.is_parser == want_parser => {}
                _ => {
                    return Err(Diagnostic::new(
                        a.span,
                        if want_parser { "expected a parser" } else { "expected a control" },
                    ))
                }
            }
            out[i] = id;
        }
        Ok(out)
    }

    fn pipeline_types(&self, parser: usize, span: Span) -> Result<(Ty, Ty, Ty)> {
        let Some(Inst::Block(b)) = self.insts.get(parser) else {
            return Err(Diagnostic::new(span, "no parser"));
        };
        let Some(Decl::Parser(p)) = self.prog.decls.get(b.decl) else {
            return Err(Diagnostic::new(span, "no parser"));
        };
        if p.params.len() != 4 {
            return Err(Diagnostic::unsupported(
                p.span,
                "a v1model parser without exactly four parameters",
            ));
        }
        let tps: Vec<String> = p.type_params.iter().map(|t| t.name.clone()).collect();
        let h = self.env.resolve(&p.params[1].ty, &tps)?;
        let m = self.env.resolve(&p.params[2].ty, &tps)?;
        let s = self.env.resolve(&p.params[3].ty, &tps)?;
        Ok((h, m, s))
    }

    /// An argument of a package or constructor that instantiates: `P()`
    /// or the name of an instance.
    fn instantiate_expr(
        &mut self,
        e: &Expr,
        parent: Option<usize>,
        name: Option<String>,
        depth: u32,
    ) -> Result<Obj> {
        match &e.kind {
            ExprKind::Call { func, type_args, args } => {
                let ExprKind::Name { id, .. } = &func.kind else {
                    return Err(Diagnostic::unsupported(e.span, "this instantiation"));
                };
                let ty = Type {
                    kind: TypeKind::Named {
                        name: id.clone(),
                        args: type_args.clone(),
                        dot_prefix: false,
                    },
                    span: func.span,
                };
                let path = match (parent, name) {
                    (_, Some(n)) => n,
                    (None, None) => id.name.clone(),
                    (Some(p), None) => format!("{}.{}", self.inst_path(p), id.name),
                };
                self.instantiate(&ty, args, path, parent, depth)
            }
            ExprKind::Name { id, .. } => {
                if let Some(p) = parent {
                    if let Some(Inst::Block(b)) = self.insts.get(p) {
                        if let Some(o) = b.objects.get(&id.name) {
                            return Ok(*o);
                        }
                    }
                }
                self.globals
                    .get(&id.name)
                    .copied()
                    .ok_or_else(|| Diagnostic::new(e.span, format!("no instance `{}`", id.name)))
            }
            _ => Err(Diagnostic::unsupported(e.span, "this constructor argument")),
        }
    }

    fn inst_path(&self, id: usize) -> String {
        match self.insts.get(id) {
            Some(Inst::Block(b)) => b.path.clone(),
            Some(Inst::Extern(x)) => x.path.clone(),
            None => String::new(),
        }
    }

    fn instantiate(
        &mut self,
        ty: &Type,
        args: &[ast::Arg],
        path: String,
        parent: Option<usize>,
        depth: u32,
    ) -> Result<Obj> {
        if depth > 16 {
            return Err(Diagnostic::unsupported(ty.span, "instances nested more than 16 deep"));
        }
        let TypeKind::Named { name, args: targs, .. } = &ty.kind else {
            return Err(Diagnostic::unsupported(ty.span, "instantiating this type"));
        };
        if let Some(&decl) = self.blocks.get(&name.name) {
            let (is_parser, ctor_params, locals) = match &self.prog.decls[decl] {
                Decl::Parser(p) => (true, &p.ctor_params, &p.locals),
                Decl::Control(c) => (false, &c.ctor_params, &c.locals),
                _ => unreachable_decl(ty.span)?,
            };
            if args.len() > ctor_params.len() {
                return Err(Diagnostic::new(ty.span, "too many constructor arguments"));
            }
            let mut ctor = Vec::new();
            for (i, p) in ctor_params.iter().enumerate() {
                let arg = args
                    .iter()
                    .find(|a| a.name.as_ref().is_some_and(|n| n.name == p.name.name))
                    .or_else(|| args.get(i).filter(|a| a.name.is_none()));
                let v = match (arg, &p.default) {
                    (Some(a), _) => self.ctor_value(&a.value, &p.ty, parent, depth)?,
                    (None, Some(d)) => self.ctor_value(d, &p.ty, parent, depth)?,
                    (None, None) => {
                        return Err(Diagnostic::new(
                            ty.span,
                            format!("missing constructor argument `{}`", p.name.name),
                        ))
                    }
                };
                ctor.push((p.name.name.clone(), v));
            }
            let id = self.insts.len();
            self.insts.push(Inst::Block(BlockInst {
                decl,
                is_parser,
                path: path.clone(),
                ctor,
                objects: HashMap::new(),
            }));
            let locals = locals.clone();
            let ctor_consts: Vec<(String, Value)> = match &self.insts[id] {
                Inst::Block(b) => b.ctor.clone(),
                _ => Vec::new(),
            };
            let mut local_consts: Vec<(String, Value)> = ctor_consts;
            for l in &locals {
                match l {
                    Local::Instance(inst) => {
                        if let TypeKind::Named { name: n, .. } = &inst.ty.kind {
                            if REFUSED_OBJECTS.contains(&n.name.as_str()) {
                                return Err(Diagnostic::unsupported(
                                    inst.ty.span,
                                    format!("extern `{}`", n.name),
                                ));
                            }
                        }
                        let lp = format!(
                            "{}.{}",
                            path,
                            name_annotation(&inst.annotations).unwrap_or(inst.name.name.clone())
                        );
                        let o = self.instantiate(&inst.ty, &inst.args, lp, Some(id), depth + 1)?;
                        if let Some(Inst::Block(b)) = self.insts.get_mut(id) {
                            b.objects.insert(inst.name.name.clone(), o);
                        }
                    }
                    Local::Table(t) => {
                        let consts = local_consts.clone();
                        let lookup = move |n: &str| {
                            consts.iter().rev().find(|(k, _)| k == n).map(|(_, v)| v.clone())
                        };
                        let (ts, td) = table::build(self, id, decl, t, &path, &lookup)?;
                        let tid = self.tables.len();
                        self.tables.push(ts);
                        self.table_dyn.push(td);
                        if let Some(Inst::Block(b)) = self.insts.get_mut(id) {
                            b.objects.insert(t.name.name.clone(), Obj::Table(tid));
                        }
                    }
                    Local::ValueSet { span, .. } => {
                        return Err(Diagnostic::unsupported(*span, "parser value sets"));
                    }
                    Local::Const(c) => {
                        let consts = local_consts.clone();
                        let lookup = move |n: &str| {
                            consts.iter().rev().find(|(k, _)| k == n).map(|(_, v)| v.clone())
                        };
                        let cty = self.env.resolve(&c.ty, &[])?;
                        if let Ok(v) = self.env.eval_const(&c.value, Some(&cty), &lookup) {
                            local_consts.push((c.name.name.clone(), v));
                        }
                    }
                    Local::Var(_) | Local::Action(_) => {}
                }
            }
            // Direct applications of parser/control types (`C.apply()`
            // without an instance) get an instance of their own.
            let mut direct = Vec::new();
            if let Some(d) = self.prog.decls.get(decl) {
                visit_decl_exprs(d, &mut |e| {
                    if let ExprKind::Call { func, .. } = &e.kind {
                        if let ExprKind::Member(base, m) = &func.kind {
                            if let ExprKind::Name { id: x, .. } = &base.kind {
                                if m.name == "apply" && !direct.contains(&x.name) {
                                    direct.push(x.name.clone());
                                }
                            }
                        }
                    }
                });
            }
            for x in direct {
                let known = match self.insts.get(id) {
                    Some(Inst::Block(b)) => b.objects.contains_key(&x),
                    _ => true,
                };
                let shadowed =
                    locals.iter().any(|l| matches!(l, Local::Var(v) if v.name.name == x));
                if known || shadowed || !self.blocks.contains_key(&x) {
                    continue;
                }
                let ty = Type {
                    kind: TypeKind::Named {
                        name: ast::Ident { name: x.clone(), span: name.span },
                        args: Vec::new(),
                        dot_prefix: false,
                    },
                    span: name.span,
                };
                let o = self.instantiate(&ty, &[], format!("{path}.{x}"), Some(id), depth + 1)?;
                if let Some(Inst::Block(b)) = self.insts.get_mut(id) {
                    b.objects.insert(x, o);
                }
            }
            return Ok(Obj::Inst(id));
        }
        if self.extern_objs.contains_key(&name.name) {
            if REFUSED_OBJECTS.contains(&name.name.as_str()) {
                return Err(Diagnostic::unsupported(ty.span, format!("extern `{}`", name.name)));
            }
            let mut type_args = Vec::new();
            for t in targs {
                type_args.push(self.env.resolve(t, &[])?);
            }
            let mut vals = Vec::new();
            for a in args {
                vals.push(self.env.eval_const(&a.value, None, &|_| None)?);
            }
            let x = ExternInst { kind: name.name.clone(), path, type_args, args: vals };
            externs::check_extern(&x, ty.span)?;
            let id = self.insts.len();
            self.insts.push(Inst::Extern(x));
            return Ok(Obj::Inst(id));
        }
        Err(Diagnostic::new(
            name.span,
            format!("`{}` is not a parser, control or extern", name.name),
        ))
    }

    /// A constructor argument: an instance or a constant.
    fn ctor_value(
        &mut self,
        e: &Expr,
        ty: &Type,
        parent: Option<usize>,
        depth: u32,
    ) -> Result<Value> {
        let rty = self.env.resolve(ty, &[]).unwrap_or(Ty::DontCare);
        if matches!(rty, Ty::Parser(_) | Ty::Control(_) | Ty::Extern { .. } | Ty::Var(_)) {
            if let Ok(o) = self.instantiate_expr(e, parent, None, depth + 1) {
                return Ok(match o {
                    Obj::Inst(id) => Value::Opaque { kind: "inst".into(), id },
                    Obj::Table(id) => Value::Opaque { kind: "table".into(), id },
                });
            }
        }
        self.env.eval_const(e, Some(&rty), &|_| None)
    }

    /// Refuses calls to unsupported externs anywhere in the program.
    fn check_refused(&self) -> Result<()> {
        for d in &self.prog.decls {
            let mut err = None;
            visit_decl_exprs(d, &mut |e| {
                if err.is_some() {
                    return;
                }
                if let ExprKind::Call { func, .. } = &e.kind {
                    if let ExprKind::Name { id, .. } = &func.kind {
                        if self.ext_funcs.contains_key(&id.name)
                            && !externs::KNOWN_FUNCTIONS.contains(&id.name.as_str())
                        {
                            err = Some(Diagnostic::unsupported(e.span, format!("`{}`", id.name)));
                        }
                    }
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
        }
        Ok(())
    }
}

fn unreachable_decl<T>(span: Span) -> Result<T> {
    Err(Diagnostic::new(span, "internal error: declaration kind changed"))
}

/// Calls `f` on every expression in a declaration's statements.
fn visit_decl_exprs(d: &Decl, f: &mut dyn FnMut(&Expr)) {
    let locals: &[Local] = match d {
        Decl::Parser(p) => {
            for s in &p.states {
                for st in &s.body {
                    visit_stmt(st, f, 0);
                }
            }
            &p.locals
        }
        Decl::Control(c) => {
            for st in &c.apply.stmts {
                visit_stmt(st, f, 0);
            }
            &c.locals
        }
        Decl::Action(a) => {
            for st in &a.body.stmts {
                visit_stmt(st, f, 0);
            }
            &[]
        }
        Decl::Function(a) => {
            for st in &a.body.stmts {
                visit_stmt(st, f, 0);
            }
            &[]
        }
        _ => &[],
    };
    for l in locals {
        if let Local::Action(a) = l {
            for st in &a.body.stmts {
                visit_stmt(st, f, 0);
            }
        }
    }
}

fn visit_stmt(s: &ast::Stmt, f: &mut dyn FnMut(&Expr), depth: u32) {
    if depth > 200 {
        return;
    }
    use ast::Stmt;
    match s {
        Stmt::Assign { lhs, rhs, .. } => {
            visit_expr(lhs, f, 0);
            visit_expr(rhs, f, 0);
        }
        Stmt::Call(e) => visit_expr(e, f, 0),
        Stmt::If { cond, then, otherwise, .. } => {
            visit_expr(cond, f, 0);
            visit_stmt(then, f, depth + 1);
            if let Some(o) = otherwise {
                visit_stmt(o, f, depth + 1);
            }
        }
        Stmt::Block(b) => {
            for st in &b.stmts {
                visit_stmt(st, f, depth + 1);
            }
        }
        Stmt::Return(Some(e), _) => visit_expr(e, f, 0),
        Stmt::Switch { expr, cases, .. } => {
            visit_expr(expr, f, 0);
            for c in cases {
                if let Some(b) = &c.body {
                    for st in &b.stmts {
                        visit_stmt(st, f, depth + 1);
                    }
                }
            }
        }
        Stmt::Var(v) => {
            if let Some(e) = &v.init {
                visit_expr(e, f, 0);
            }
        }
        _ => {}
    }
}

fn visit_expr(e: &Expr, f: &mut dyn FnMut(&Expr), depth: u32) {
    if depth > 200 {
        return;
    }
    f(e);
    let d = depth + 1;
    match &e.kind {
        ExprKind::Member(b, _) => visit_expr(b, f, d),
        ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
            visit_expr(a, f, d);
            visit_expr(b, f, d);
        }
        ExprKind::Slice(a, b, c) | ExprKind::Mux(a, b, c) => {
            visit_expr(a, f, d);
            visit_expr(b, f, d);
            visit_expr(c, f, d);
        }
        ExprKind::Call { func, args, .. } => {
            visit_expr(func, f, d);
            for a in args {
                visit_expr(&a.value, f, d);
            }
        }
        ExprKind::Unary(_, a) | ExprKind::Cast(_, a) => visit_expr(a, f, d),
        ExprKind::List(items) => {
            for i in items {
                visit_expr(i, f, d);
            }
        }
        ExprKind::StructInit(items) => {
            for (_, i) in items {
                visit_expr(i, f, d);
            }
        }
        _ => {}
    }
}

impl Target for Interp {
    fn add_entry(&mut self, entry: &EntrySpec) -> CtlResult<u64> {
        let tid = resolve_suffix(
            &entry.table,
            self.s.tables.iter().enumerate().map(|(i, t)| (t.name.as_str(), i)),
            "table",
        )?;
        let ts = &self.s.tables[tid];
        let seq = self.d.seq;
        self.d.seq += 1;
        let Some(td) = self.d.tables.get_mut(tid) else {
            return Err("internal error: table state".into());
        };
        table::add_entry(ts, td, entry, seq)
    }

    fn set_default(
        &mut self,
        table: &str,
        action: &str,
        args: &[(String, BigValue)],
    ) -> CtlResult<()> {
        let tid = resolve_suffix(
            table,
            self.s.tables.iter().enumerate().map(|(i, t)| (t.name.as_str(), i)),
            "table",
        )?;
        let ts = &self.s.tables[tid];
        let Some(td) = self.d.tables.get_mut(tid) else {
            return Err("internal error: table state".into());
        };
        table::set_default(ts, td, action, args)
    }

    fn remove_all(&mut self) -> CtlResult<()> {
        self.d.tables = self.initial_tables.clone();
        Ok(())
    }

    fn set_multicast_group(&mut self, group: u32, copies: &[(u32, u32)]) -> CtlResult<()> {
        if copies.is_empty() {
            self.d.mcast.remove(&group);
        } else {
            self.d.mcast.insert(group, copies.to_vec());
        }
        Ok(())
    }

    fn packet(&mut self, port: u32, data: &[u8]) -> CtlResult<Vec<Output>> {
        let s = self.s.clone();
        exec::run_packet(&s, &mut self.d, port, data)
    }
}

impl Interp {
    fn table_id(&self, table: &str) -> CtlResult<usize> {
        resolve_suffix(
            table,
            self.s.tables.iter().enumerate().map(|(i, t)| (t.name.as_str(), i)),
            "table",
        )
    }
}

impl Manage for Interp {
    fn tables(&self) -> Vec<TableInfo> {
        self.s
            .tables
            .iter()
            .map(|t| TableInfo {
                name: t.name.clone(),
                keys: t
                    .keys
                    .iter()
                    .map(|k| KeyInfo { name: k.name.clone(), kind: k.kind, width: k.width })
                    .collect(),
                actions: t
                    .actions
                    .iter()
                    .map(|a| ActionInfo {
                        name: a.name.clone(),
                        params: a
                            .data
                            .iter()
                            .map(|(n, ty)| (n.clone(), ty.bit_width().unwrap_or(0)))
                            .collect(),
                    })
                    .collect(),
                const_entries: t.entries_const,
                const_default: t.default_const,
            })
            .collect()
    }

    fn delete_entry(&mut self, table: &str, handle: u64) -> CtlResult<()> {
        let tid = self.table_id(table)?;
        let Some(td) = self.d.tables.get_mut(tid) else {
            return Err("internal error: table state".into());
        };
        table::delete_entry(&self.s.tables[tid], td, handle)
    }

    fn dump(&self, table: &str) -> CtlResult<(Vec<EntryDump>, (String, Vec<(String, BigValue)>))> {
        let tid = self.table_id(table)?;
        let td = self.d.tables.get(tid).ok_or("internal error: table state")?;
        Ok(table::dump(&self.s.tables[tid], td))
    }

    fn counter_cells(&self, name: &str) -> CtlResult<(String, Vec<(u64, u64)>)> {
        let id = self.extern_by_name(name)?;
        match self.d.externs.get(&id) {
            Some(ExternState::Counter(v)) => Ok((self.extern_path(id), v.clone())),
            _ => Err(format!("`{name}` is not a counter")),
        }
    }

    fn register_cells(&self, name: &str) -> CtlResult<(String, u32, Vec<BigValue>)> {
        let id = self.extern_by_name(name)?;
        match self.d.externs.get(&id) {
            Some(ExternState::Register(v)) => {
                let width = v.first().map_or(0, |c| match c {
                    Value::Bits(b) | Value::Signed(b) => b.width(),
                    Value::Bool(_) => 1,
                    _ => 0,
                });
                let cells = v.iter().map(table::value_big).collect();
                Ok((self.extern_path(id), width, cells))
            }
            _ => Err(format!("`{name}` is not a register")),
        }
    }

    fn register_write(&mut self, name: &str, index: usize, value: &BigValue) -> CtlResult<()> {
        let id = self.extern_by_name(name)?;
        let path = self.extern_path(id);
        match self.d.externs.get_mut(&id) {
            Some(ExternState::Register(v)) => {
                let n = v.len();
                let cell = v.get_mut(index).ok_or_else(|| {
                    format!("index {index} is outside register `{path}` of {n} cells")
                })?;
                *cell = match cell {
                    Value::Bits(b) => Value::Bits(table::big_bits(value, b.width(), "the value")?),
                    Value::Signed(b) => {
                        Value::Signed(table::big_bits(value, b.width(), "the value")?)
                    }
                    Value::Bool(_) => {
                        Value::Bool(!table::big_bits(value, 1, "the value")?.is_zero())
                    }
                    _ => return Err(format!("register `{path}` holds values sluice cannot write")),
                };
                Ok(())
            }
            _ => Err(format!("`{name}` is not a register")),
        }
    }

    fn counter_write(&mut self, name: &str, index: usize, value: (u64, u64)) -> CtlResult<()> {
        let id = self.extern_by_name(name)?;
        let path = self.extern_path(id);
        let direct = matches!(self.s.insts.get(id), Some(Inst::Extern(x)) if x.kind != "counter");
        match self.d.externs.get_mut(&id) {
            Some(ExternState::Counter(v)) if !direct => {
                let n = v.len();
                let cell = v.get_mut(index).ok_or_else(|| {
                    format!("index {index} is outside counter `{path}` of {n} cells")
                })?;
                *cell = value;
                Ok(())
            }
            _ => Err(format!("`{name}` is not an indexed counter")),
        }
    }

    fn meter_cells(&self, name: &str) -> CtlResult<(String, Vec<Option<MeterConfig>>)> {
        let id = self.extern_by_name(name)?;
        match self.d.externs.get(&id) {
            Some(ExternState::Meter(v)) => {
                Ok((self.extern_path(id), v.iter().map(|m| m.config()).collect()))
            }
            _ => Err(format!("`{name}` is not a meter")),
        }
    }

    fn meter_states(&self, name: &str) -> CtlResult<Vec<Meter>> {
        let id = self.extern_by_name(name)?;
        match self.d.externs.get(&id) {
            Some(ExternState::Meter(v)) => Ok(v.clone()),
            _ => Err(format!("`{name}` is not a meter")),
        }
    }

    fn meter_restore(&mut self, name: &str, index: usize, state: &Meter) -> CtlResult<()> {
        *self.meter_cell(name, index)? = state.clone();
        Ok(())
    }

    fn meter_write(
        &mut self,
        name: &str,
        index: usize,
        config: Option<MeterConfig>,
    ) -> CtlResult<()> {
        self.meter_cell(name, index)?.configure(config);
        Ok(())
    }

    fn direct_cells(&self, table: &str) -> CtlResult<Vec<DirectCells>> {
        let tid = self.table_id(table)?;
        let td = self.d.tables.get(tid).ok_or("internal error: table state")?;
        let mut cells: Vec<DirectCells> = td
            .entries
            .iter()
            .map(|e| DirectCells {
                handle: e.handle,
                counter: e.counter,
                meter: e.meter.config(),
                colours: e.colours,
            })
            .collect();
        cells.sort_by_key(|c| c.handle);
        Ok(cells)
    }

    fn direct_state(&self, table: &str, handle: u64) -> CtlResult<DirectState> {
        let tid = self.table_id(table)?;
        let td = self.d.tables.get(tid).ok_or("internal error: table state")?;
        if handle == DEFAULT_ENTRY {
            let d = &td.default_cells;
            return Ok(DirectState {
                counter: d.counter,
                meter: d.meter.clone(),
                colours: d.colours,
            });
        }
        let e = td.entries.iter().find(|e| e.handle == handle).ok_or_else(|| {
            format!("table `{}` has no entry with handle {handle}", self.s.tables[tid].name)
        })?;
        Ok(DirectState { counter: e.counter, meter: e.meter.clone(), colours: e.colours })
    }

    fn direct_restore(&mut self, table: &str, handle: u64, state: &DirectState) -> CtlResult<()> {
        let tid = self.table_id(table)?;
        let (counter, meter, colours) = self.cells_mut(tid, handle)?;
        *counter = state.counter;
        *meter = state.meter.clone();
        *colours = state.colours;
        Ok(())
    }

    fn direct_write(
        &mut self,
        table: &str,
        handle: u64,
        counter: Option<(u64, u64)>,
        meter: Option<Option<MeterConfig>>,
    ) -> CtlResult<()> {
        let tid = self.table_id(table)?;
        let ts = &self.s.tables[tid];
        if counter.is_some() && ts.direct_counter.is_none() {
            return Err(format!("table `{}` has no direct counter", ts.name));
        }
        if meter.is_some() && ts.direct_meter.is_none() {
            return Err(format!("table `{}` has no direct meter", ts.name));
        }
        let (cell, cfg, _) = self.cells_mut(tid, handle)?;
        if let Some(c) = counter {
            *cell = c;
        }
        if let Some(m) = meter {
            cfg.configure(m);
        }
        Ok(())
    }

    fn default_cells(&self, table: &str) -> CtlResult<DirectCells> {
        let tid = self.table_id(table)?;
        let d = &self.d.tables.get(tid).ok_or("internal error: table state")?.default_cells;
        Ok(DirectCells {
            handle: DEFAULT_ENTRY,
            counter: d.counter,
            meter: d.meter.config(),
            colours: d.colours,
        })
    }

    fn entry_hits(&self, table: &str) -> CtlResult<Vec<(u64, u64)>> {
        let tid = self.table_id(table)?;
        let td = self.d.tables.get(tid).ok_or("internal error: table state")?;
        let mut hits: Vec<(u64, u64)> = td.entries.iter().map(|e| (e.handle, e.hits)).collect();
        hits.sort_by_key(|h| h.0);
        Ok(hits)
    }

    fn set_clock(&mut self, clock: Clock) {
        self.d.clock = clock;
    }
}

/// A value as `bit<W>` bits, for the standard metadata fields.
fn meta_u64(v: &Value) -> u64 {
    match v {
        Value::Bits(b) => b.low_u64(),
        _ => 0,
    }
}

/// Sets a `bit<W>` field of a struct value by name (ignored if absent).
fn set_field_u128(v: &mut Value, field: &str, x: u128) {
    if let Value::Struct(s) = v {
        if let Some(f) = s.get_mut(field) {
            if let Value::Bits(b) = f {
                *f = Value::Bits(Bits::from_u128(b.width(), x));
            }
        }
    }
}

fn get_field(v: &Value, field: &str) -> Option<Value> {
    match v {
        Value::Struct(s) | Value::Header(s) => s.get(field).cloned(),
        _ => None,
    }
}
