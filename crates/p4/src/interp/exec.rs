//! Running one packet: the v1model pipeline, statements, expressions,
//! calls with copy-in/copy-out, tables and parsers.

use super::table::{self, ActionLoc};
use super::trace::{self, TraceEvent};
use super::{
    externs, get_field, meta_u64, set_field_u128, Dyn, ExternState, Inst, Obj, Static, DROP_PORT,
    INSTANCE_TYPE_REPLICATION,
};
use crate::ast::{
    self, AggregateKind, Arg, BinOp, Decl, Direction, Expr, ExprKind, Keyset, Local, Param, Stmt,
    SwitchLabel, Transition, Type,
};
use crate::target::{CtlResult, Output};
use crate::types::{self, AggTy, Ty};
use crate::value::{self, Aggregate, BitWriter, Bits, Value};
use std::sync::Arc;

/// Why evaluation stopped early.
#[derive(Debug)]
pub(super) enum Abort {
    /// `exit`: ends the top-level control.
    Exit,
    /// A parser rejects with this error.
    Reject(String),
    /// A run-time failure (refused operation, step limit, ...).
    Fail(String),
}

pub(super) type R<T> = Result<T, Abort>;

/// Parameters' initial values, and the `out`/`inout` arguments'
/// lvalues with their parameter's index.
type Bound = (Vec<(String, Value)>, Vec<(LVal, usize)>);

fn fail<T>(m: impl Into<String>) -> R<T> {
    Err(Abort::Fail(m.into()))
}

trait OrFail<T> {
    fn or_fail(self) -> R<T>;
}

impl<T> OrFail<T> for Result<T, String> {
    fn or_fail(self) -> R<T> {
        self.map_err(Abort::Fail)
    }
}

enum Flow {
    Next,
    Return(Option<Value>),
}

const MAX_DEPTH: u32 = 200;
const MAX_FRAMES: usize = 64;
const MAX_STEPS: u64 = 1_000_000;

struct Frame {
    ctx: Option<usize>,
    scopes: Vec<Vec<(String, Value)>>,
}

struct Ctx {
    inst: usize,
    vars: Vec<(String, Value)>,
}

#[derive(Clone, Copy, Debug)]
enum Slot {
    Frame(usize, usize, usize),
    Ctx(usize, usize),
}

#[derive(Clone, Debug)]
enum Step {
    Field(String),
    Index(u64),
    Slice(u32, u32),
}

#[derive(Clone, Debug)]
pub(super) struct LVal {
    slot: Slot,
    path: Vec<Step>,
}

pub(super) struct Run<'a> {
    pub s: &'a Static,
    pub d: &'a mut Dyn,
    frames: Vec<Frame>,
    ctxs: Vec<Ctx>,
    /// The packet as received and the parser's position in bits.
    pub pkt: Vec<u8>,
    pub pos: usize,
    /// What the deparser emitted.
    pub out: BitWriter,
    pub checksum_error: bool,
    pub truncate: Option<usize>,
    steps: u64,
    depth: u32,
    in_parser: bool,
    /// The stack whose `.next` the last lvalue went through, and the
    /// index it denoted (`extract` advances it).
    pub next_used: Option<(LVal, u32)>,
    /// The event sink of [`super::Interp::trace_packet`]; `None` otherwise.
    pub trace: Option<Vec<TraceEvent>>,
}

fn apply_result_ty() -> Arc<AggTy> {
    Arc::new(AggTy {
        kind: AggregateKind::Struct,
        name: "$apply_result".into(),
        fields: vec![
            ("hit".into(), Ty::Bool),
            ("miss".into(), Ty::Bool),
            ("action_run".into(), Ty::String),
        ],
    })
}

fn opaque_obj(v: &Value) -> Option<Obj> {
    match v {
        Value::Opaque { kind, id } if kind == "inst" => Some(Obj::Inst(*id)),
        Value::Opaque { kind, id } if kind == "table" => Some(Obj::Table(*id)),
        _ => None,
    }
}

/// Runs one packet through the whole v1model pipeline.
pub(super) fn run_packet(
    s: &Static,
    d: &mut Dyn,
    port: u32,
    data: &[u8],
) -> CtlResult<Vec<Output>> {
    pipeline(&mut Run::new(s, d, data), s, port, data)
}

/// [`run_packet`] with the trace sink set: the events, and the outputs.
pub(super) fn trace_packet(
    s: &Static,
    d: &mut Dyn,
    port: u32,
    data: &[u8],
) -> (Vec<TraceEvent>, CtlResult<Vec<Output>>) {
    let mut run = Run::new(s, d, data);
    run.trace = Some(Vec::new());
    let r = pipeline(&mut run, s, port, data);
    (run.trace.take().unwrap_or_default(), r)
}

/// The pipeline on a fresh [`Run`]: parser, verifyChecksum, ingress,
/// the traffic manager, then egress, computeChecksum and the deparser
/// for each copy.
fn pipeline(run: &mut Run<'_>, s: &Static, port: u32, data: &[u8]) -> CtlResult<Vec<Output>> {
    let [mut hdr, mut meta, mut sm] = run.parser_stage(port, data.len())?;
    // verifyChecksum.
    run.note_stage("verifyChecksum", 1);
    let (f, res) = run.invoke_block(s.pipeline[1], vec![hdr, meta]);
    check_stage(res)?;
    [hdr, meta] = take2(f)?;
    if run.checksum_error {
        run.note(|| TraceEvent::ChecksumError);
        set_field_u128(&mut sm, "checksum_error", 1);
    }
    // Ingress.
    run.note_stage("ingress", 2);
    let (f, res) = run.invoke_block(s.pipeline[2], vec![hdr, meta, sm]);
    check_stage(res)?;
    [hdr, meta, sm] = take3(f)?;
    // Traffic manager.
    let mgid = get_field(&sm, "mcast_grp").map_or(0, |v| meta_u64(&v));
    let egress_spec = get_field(&sm, "egress_spec").map_or(0, |v| meta_u64(&v));
    run.note(|| TraceEvent::IngressEnd { egress_spec, mcast_grp: mgid });
    let mut copies = Vec::new();
    if mgid != 0 {
        let group =
            u32::try_from(mgid).ok().and_then(|g| run.d.mcast.get(&g).cloned()).unwrap_or_default();
        run.note(|| TraceEvent::Replicate { group: mgid, copies: group.clone() });
        for (rid, p) in group {
            let mut sm2 = sm.clone();
            set_field_u128(&mut sm2, "instance_type", INSTANCE_TYPE_REPLICATION);
            set_field_u128(&mut sm2, "egress_rid", rid as u128);
            copies.push((p, hdr.clone(), meta.clone(), sm2));
        }
    } else if egress_spec != DROP_PORT as u64 {
        let mut sm2 = sm.clone();
        set_field_u128(&mut sm2, "instance_type", 0);
        copies.push((egress_spec as u32, hdr, meta, sm2));
    }
    if copies.is_empty() {
        run.note(|| TraceEvent::Drop);
    }
    let payload_from = (run.pos / 8).min(run.pkt.len());
    let mut outputs = Vec::new();
    for (p, hdr, meta, mut sm) in copies {
        run.note(|| {
            let rid = get_field(&sm, "egress_rid").map_or(0, |v| meta_u64(&v)) as u32;
            TraceEvent::Egress { port: p, rid: (mgid != 0).then_some(rid) }
        });
        run.note_stage("egress", 3);
        set_field_u128(&mut sm, "egress_port", p as u128);
        // bmv2 sets egress_spec to 512, which a 9-bit field holds as 0.
        set_field_u128(&mut sm, "egress_spec", 512);
        set_field_u128(&mut sm, "packet_length", data.len() as u128);
        run.truncate = None;
        let (f, res) = run.invoke_block(s.pipeline[3], vec![hdr, meta, sm]);
        check_stage(res)?;
        let [hdr, meta, sm] = take3(f)?;
        if get_field(&sm, "egress_spec").map_or(0, |v| meta_u64(&v)) == DROP_PORT as u64 {
            run.note(|| TraceEvent::EgressDrop { port: p });
            continue;
        }
        run.note_stage("computeChecksum", 4);
        let (f, res) = run.invoke_block(s.pipeline[4], vec![hdr, meta]);
        check_stage(res)?;
        let [hdr, _meta] = take2(f)?;
        run.out = BitWriter::default();
        let pout = Value::Opaque { kind: "packet_out".into(), id: 0 };
        run.note_stage("deparser", 5);
        let (_, res) = run.invoke_block(s.pipeline[5], vec![pout, hdr]);
        check_stage(res)?;
        let mut bytes = std::mem::take(&mut run.out.bytes);
        bytes.extend_from_slice(run.pkt.get(payload_from..).unwrap_or(&[]));
        if let Some(t) = run.truncate {
            bytes.truncate(t);
        }
        let port = get_field(&sm, "egress_port").map_or(p as u64, |v| meta_u64(&v));
        run.note(|| TraceEvent::Output { port: port as u32, data: bytes.clone() });
        outputs.push(Output { port: port as u32, data: bytes });
    }
    Ok(outputs)
}

/// Runs the computeChecksum control on a headers value (fresh metadata):
/// the headers as it leaves them. For building frames from descriptions.
pub(super) fn compute_checksums(s: &Static, d: &mut Dyn, hdr: Value) -> CtlResult<Value> {
    let mut run = Run::new(s, d, &[]);
    let meta = s.meta_ty.default_value();
    let (f, res) = run.invoke_block(s.pipeline[4], vec![hdr, meta]);
    check_stage(res)?;
    let [hdr, _] = take2(f)?;
    Ok(hdr)
}

/// Runs only the parser on a packet: the headers, metadata and standard
/// metadata it leaves (`parser_error` set), as ingress would see them.
pub(super) fn parse_only(s: &Static, d: &mut Dyn, port: u32, data: &[u8]) -> CtlResult<[Value; 3]> {
    let mut run = Run::new(s, d, data);
    run.parser_stage(port, data.len())
}

impl<'a> Run<'a> {
    fn new(s: &'a Static, d: &'a mut Dyn, data: &[u8]) -> Run<'a> {
        Run {
            s,
            d,
            frames: Vec::new(),
            ctxs: Vec::new(),
            pkt: data.to_vec(),
            pos: 0,
            out: BitWriter::default(),
            checksum_error: false,
            truncate: None,
            steps: 0,
            depth: 0,
            in_parser: false,
            next_used: None,
            trace: None,
        }
    }

    /// The parser stage of the pipeline: fresh headers and metadata,
    /// `ingress_port` and `packet_length` set, the parser run and its
    /// outcome recorded in `parser_error` (a reject does not drop).
    fn parser_stage(&mut self, port: u32, len: usize) -> CtlResult<[Value; 3]> {
        let s = self.s;
        let hdr = s.hdr_ty.default_value();
        let meta = s.meta_ty.default_value();
        let mut sm = s.sm_ty.default_value();
        set_field_u128(&mut sm, "ingress_port", port as u128);
        set_field_u128(&mut sm, "packet_length", len as u128);
        let pin = Value::Opaque { kind: "packet_in".into(), id: 0 };
        self.note_stage("parser", 0);
        self.in_parser = true;
        let (finals, res) = self.invoke_block(s.pipeline[0], vec![pin, hdr, meta, sm]);
        self.in_parser = false;
        let [_, hdr, meta, mut sm] = take4(finals)?;
        let err = match res {
            Ok(()) => "NoError".to_string(),
            Err(Abort::Reject(e)) => e,
            Err(Abort::Exit) => "NoError".to_string(),
            Err(Abort::Fail(m)) => return Err(m),
        };
        if err != "NoError" {
            self.note(|| TraceEvent::ParserError { error: err.clone() });
        }
        if let Value::Struct(st) = &mut sm {
            if let Some(f) = st.get_mut("parser_error") {
                *f = Value::Error(err);
            }
        }
        Ok([hdr, meta, sm])
    }

    /// Records a trace event if a trace is being taken (one `Option`
    /// check otherwise; `f` runs only when recording).
    pub(super) fn note(&mut self, f: impl FnOnce() -> TraceEvent) {
        if let Some(t) = &mut self.trace {
            if t.len() < trace::MAX_TRACE_EVENTS {
                t.push(f());
            }
        }
    }

    /// Records the start of pipeline stage `i` of [`Static::pipeline`].
    fn note_stage(&mut self, stage: &'static str, i: usize) {
        if self.trace.is_some() {
            let block = trace::block_name(self.s, self.s.pipeline[i]);
            self.note(|| TraceEvent::Stage { stage, block });
        }
    }
}

fn check_stage(res: R<()>) -> CtlResult<()> {
    match res {
        Ok(()) | Err(Abort::Exit) => Ok(()),
        Err(Abort::Reject(e)) => Err(format!("reject outside a parser (error.{e})")),
        Err(Abort::Fail(m)) => Err(m),
    }
}

fn take_n<const N: usize>(v: Vec<Value>) -> CtlResult<[Value; N]> {
    let len = v.len();
    <[Value; N]>::try_from(v)
        .map_err(|_| format!("a pipeline block has {len} parameters, expected {N}"))
}

fn take2(v: Vec<Value>) -> CtlResult<[Value; 2]> {
    take_n(v)
}

fn take3(v: Vec<Value>) -> CtlResult<[Value; 3]> {
    take_n(v)
}

fn take4(v: Vec<Value>) -> CtlResult<[Value; 4]> {
    take_n(v)
}

/// Converts `v` to the shape of `like` (the target of an assignment or
/// a parameter's default value): an `int` takes the width, a list or an
/// initialiser becomes the struct/header (valid) or tuple.
fn fit(v: Value, like: &Value) -> Result<Value, String> {
    Ok(match (like, v) {
        (Value::Bits(b), Value::Int(i)) => Value::Bits(Bits::from_i128(b.width(), i)),
        (Value::Signed(b), Value::Int(i)) => Value::Signed(Bits::from_i128(b.width(), i)),
        (Value::Bits(b), Value::Bits(x)) if x.width() != b.width() => {
            Value::Bits(x.resize(b.width()))
        }
        (Value::Signed(b), Value::Signed(x)) if x.width() != b.width() => {
            Value::Signed(x.resize_signed(b.width()))
        }
        (Value::Bits(b), Value::Signed(x)) => Value::Bits(x.resize_signed(b.width())),
        (Value::Signed(b), Value::Bits(x)) => Value::Signed(x.resize(b.width())),
        (Value::Header(h) | Value::Struct(h), Value::Tuple(items)) => {
            if items.len() != h.fields.len() {
                return Err(format!(
                    "{} has {} fields, the list {}",
                    h.ty.name,
                    h.fields.len(),
                    items.len()
                ));
            }
            let mut fields = Vec::with_capacity(items.len());
            for (item, f) in items.into_iter().zip(h.fields.iter()) {
                fields.push(fit(item, f)?);
            }
            let agg = Box::new(Aggregate { ty: h.ty.clone(), valid: true, fields });
            if matches!(like, Value::Header(_)) {
                Value::Header(agg)
            } else {
                Value::Struct(agg)
            }
        }
        (Value::Header(h) | Value::Struct(h), Value::Struct(s)) if s.ty.name.is_empty() => {
            let mut fields = Vec::with_capacity(h.fields.len());
            for ((fname, _), f) in h.ty.fields.iter().zip(h.fields.iter()) {
                let Some(v) = s.get(fname) else {
                    return Err(format!("the initialiser lacks field `{fname}`"));
                };
                fields.push(fit(v.clone(), f)?);
            }
            let agg = Box::new(Aggregate { ty: h.ty.clone(), valid: true, fields });
            if matches!(like, Value::Header(_)) {
                Value::Header(agg)
            } else {
                Value::Struct(agg)
            }
        }
        (Value::Struct(h), Value::Struct(s)) if s.fields.len() == h.fields.len() => {
            let mut s = s;
            for (x, f) in s.fields.iter_mut().zip(h.fields.iter()) {
                let v = std::mem::replace(x, Value::Void);
                *x = fit(v, f)?;
            }
            Value::Struct(s)
        }
        (Value::Header(h), Value::Header(s)) if s.fields.len() == h.fields.len() => {
            let mut s = s;
            for (x, f) in s.fields.iter_mut().zip(h.fields.iter()) {
                let v = std::mem::replace(x, Value::Void);
                *x = fit(v, f)?;
            }
            Value::Header(s)
        }
        (Value::Tuple(t), Value::Tuple(items)) if t.len() == items.len() => {
            let mut out = Vec::with_capacity(items.len());
            for (item, f) in items.into_iter().zip(t.iter()) {
                out.push(fit(item, f)?);
            }
            Value::Tuple(out)
        }
        (Value::Stack(s), Value::Tuple(items)) if items.len() == s.elems.len() => {
            let mut out = Vec::with_capacity(items.len());
            for (item, f) in items.into_iter().zip(s.elems.iter()) {
                out.push(fit(item, f)?);
            }
            Value::Stack(Box::new(value::Stack { elem: s.elem.clone(), elems: out, next_index: 0 }))
        }
        (Value::Bool(_), Value::Int(i)) if i == 0 || i == 1 => Value::Bool(i == 1),
        (_, v) => v,
    })
}

/// `v` converted to type `ty` (unbound type variables leave it as is).
fn conform(v: Value, ty: &Ty) -> Result<Value, String> {
    match ty {
        Ty::Var(_)
        | Ty::DontCare
        | Ty::Extern { .. }
        | Ty::Parser(_)
        | Ty::Control(_)
        | Ty::Package(_) => Ok(v),
        Ty::Void => Ok(v),
        _ => fit(v, &ty.default_value()),
    }
}

impl Run<'_> {
    fn tick(&mut self) -> R<()> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return fail("step limit exceeded (more than a million steps for one packet)");
        }
        Ok(())
    }

    fn enter(&mut self) -> R<()> {
        if self.depth >= MAX_DEPTH {
            return fail("evaluation nested too deeply");
        }
        self.depth += 1;
        Ok(())
    }

    // ----- variables -------------------------------------------------

    fn lookup_var(&self, name: &str) -> Option<Slot> {
        let fi = self.frames.len().checked_sub(1)?;
        let f = &self.frames[fi];
        for (si, scope) in f.scopes.iter().enumerate().rev() {
            if let Some(vi) = scope.iter().rposition(|(n, _)| n == name) {
                return Some(Slot::Frame(fi, si, vi));
            }
        }
        let c = f.ctx?;
        let vi = self.ctxs.get(c)?.vars.iter().rposition(|(n, _)| n == name)?;
        Some(Slot::Ctx(c, vi))
    }

    /// The value `e` denotes, by reference, when `e` is a variable or a
    /// chain of fields of one (`hdr.ip.dst`); `None` for anything else
    /// (stacks' `next`/`last`, constants, calls...), which [`Run::eval`]
    /// computes.
    fn field_ref(&self, e: &Expr) -> Option<&Value> {
        match &e.kind {
            ExprKind::Name { id, dot_prefix: false } => {
                self.lookup_var(&id.name).and_then(|s| self.slot(s).ok())
            }
            ExprKind::Member(base, m) => match self.field_ref(base)? {
                Value::Header(a) | Value::Struct(a) | Value::Union(a) => a.get(&m.name),
                _ => None,
            },
            _ => None,
        }
    }

    fn slot(&self, s: Slot) -> R<&Value> {
        let v = match s {
            Slot::Frame(f, sc, i) => {
                self.frames.get(f).and_then(|f| f.scopes.get(sc)).and_then(|s| s.get(i))
            }
            Slot::Ctx(c, i) => self.ctxs.get(c).and_then(|c| c.vars.get(i)),
        };
        v.map(|(_, v)| v).ok_or_else(|| Abort::Fail("internal error: stale variable".into()))
    }

    fn slot_mut(&mut self, s: Slot) -> R<&mut Value> {
        let v = match s {
            Slot::Frame(f, sc, i) => {
                self.frames.get_mut(f).and_then(|f| f.scopes.get_mut(sc)).and_then(|s| s.get_mut(i))
            }
            Slot::Ctx(c, i) => self.ctxs.get_mut(c).and_then(|c| c.vars.get_mut(i)),
        };
        v.map(|(_, v)| v).ok_or_else(|| Abort::Fail("internal error: stale variable".into()))
    }

    fn declare(&mut self, name: &str, v: Value) -> R<()> {
        let Some(scope) = self.frames.last_mut().and_then(|f| f.scopes.last_mut()) else {
            return fail("internal error: no scope");
        };
        scope.push((name.to_string(), v));
        Ok(())
    }

    fn cur_ctx(&self) -> Option<usize> {
        self.frames.last().and_then(|f| f.ctx)
    }

    fn cur_block(&self) -> Option<&super::BlockInst> {
        let c = self.cur_ctx()?;
        match self.s.insts.get(self.ctxs.get(c)?.inst)? {
            Inst::Block(b) => Some(b),
            _ => None,
        }
    }

    fn lookup_object(&self, name: &str) -> Option<Obj> {
        if let Some(b) = self.cur_block() {
            if let Some(o) = b.objects.get(name) {
                return Some(*o);
            }
        }
        self.s.globals.get(name).copied()
    }

    fn resolve_ty(&self, t: &Type) -> R<Ty> {
        self.s.env.resolve(t, &[]).map_err(|d| Abort::Fail(d.message))
    }

    // ----- lvalues ---------------------------------------------------

    fn eval_lvalue(&mut self, e: &Expr) -> R<LVal> {
        self.enter()?;
        let r = self.eval_lvalue_inner(e);
        self.depth -= 1;
        r
    }

    fn eval_lvalue_inner(&mut self, e: &Expr) -> R<LVal> {
        match &e.kind {
            ExprKind::Name { id, .. } => match self.lookup_var(&id.name) {
                Some(slot) => Ok(LVal { slot, path: Vec::new() }),
                None => fail(format!("cannot assign to `{}`", id.name)),
            },
            ExprKind::Member(base, m) => {
                let mut lv = self.eval_lvalue(base)?;
                let cur = self.read_lv(&lv)?;
                if let Value::Stack(st) = &cur {
                    match m.name.as_str() {
                        "next" => {
                            if st.next_index as usize >= st.elems.len() {
                                return Err(self.out_of_bounds());
                            }
                            let i = st.next_index;
                            self.next_used = Some((lv.clone(), i));
                            lv.path.push(Step::Index(i as u64));
                            return Ok(lv);
                        }
                        "last" => {
                            if st.next_index == 0 {
                                return Err(self.out_of_bounds());
                            }
                            lv.path.push(Step::Index(st.next_index as u64 - 1));
                            return Ok(lv);
                        }
                        _ => return fail(format!("cannot assign to a stack's `{}`", m.name)),
                    }
                }
                lv.path.push(Step::Field(m.name.clone()));
                Ok(lv)
            }
            ExprKind::Index(base, i) => {
                let mut lv = self.eval_lvalue(base)?;
                let iv = self.eval(i)?;
                let n = iv.to_u64().unwrap_or(u64::MAX);
                lv.path.push(Step::Index(n));
                Ok(lv)
            }
            ExprKind::Slice(base, hi, lo) => {
                let mut lv = self.eval_lvalue(base)?;
                let hi = self.eval(hi)?.to_u64().unwrap_or(u64::MAX);
                let lo = self.eval(lo)?.to_u64().unwrap_or(u64::MAX);
                let w = match self.read_lv(&lv)? {
                    Value::Bits(b) | Value::Signed(b) => b.width() as u64,
                    _ => return fail("slice of a non-number"),
                };
                if hi < lo || hi >= w {
                    return fail(format!("slice [{hi}:{lo}] out of range"));
                }
                lv.path.push(Step::Slice(hi as u32, lo as u32));
                Ok(lv)
            }
            _ => fail("this expression cannot be assigned to"),
        }
    }

    fn out_of_bounds(&self) -> Abort {
        if self.in_parser {
            Abort::Reject("StackOutOfBounds".into())
        } else {
            Abort::Fail("header stack index out of bounds".into())
        }
    }

    pub(super) fn read_lv(&self, lv: &LVal) -> R<Value> {
        read_path(self.slot(lv.slot)?, &lv.path)
    }

    pub(super) fn write_lv(&mut self, lv: &LVal, v: Value) -> R<()> {
        let root = self.slot_mut(lv.slot)?;
        write_path(root, &lv.path, v).or_fail()
    }

    // ----- expressions -----------------------------------------------

    pub(super) fn eval(&mut self, e: &Expr) -> R<Value> {
        self.enter()?;
        let r = self.eval_inner(e);
        self.depth -= 1;
        r
    }

    fn eval_inner(&mut self, e: &Expr) -> R<Value> {
        match &e.kind {
            ExprKind::Int { value, width } => {
                types::int_literal(value, *width, e.span).map_err(|d| Abort::Fail(d.message))
            }
            ExprKind::Bool(b) => Ok(Value::Bool(*b)),
            ExprKind::Str(s) => Ok(Value::Str(s.clone())),
            ExprKind::Name { id, dot_prefix } => {
                if !dot_prefix {
                    if let Some(s) = self.lookup_var(&id.name) {
                        return Ok(self.slot(s)?.clone());
                    }
                    if let Some(o) = self.lookup_object(&id.name) {
                        return Ok(match o {
                            Obj::Inst(id) => Value::Opaque { kind: "inst".into(), id },
                            Obj::Table(id) => Value::Opaque { kind: "table".into(), id },
                        });
                    }
                }
                match self.s.env.consts.get(&id.name) {
                    Some((_, v)) => Ok(v.clone()),
                    None => fail(format!("unknown name `{}`", id.name)),
                }
            }
            ExprKind::Member(base, m) => {
                // A field of a variable (`hdr.ip.dst`): copy the field, not
                // the header or struct it is part of.
                if let Some(v) = self.field_ref(e) {
                    return Ok(v.clone());
                }
                let is_var = matches!(&base.kind, ExprKind::Name { id, .. } if self.lookup_var(&id.name).is_some());
                if !is_var {
                    if let Some(v) = self.s.env.type_member(base, &m.name) {
                        return v.or_fail();
                    }
                }
                let b = self.eval(base)?;
                self.member(b, &m.name)
            }
            ExprKind::Index(base, i) => {
                let b = self.eval(base)?;
                let i = self.eval(i)?;
                let n = i.to_u64().unwrap_or(u64::MAX);
                match b {
                    Value::Stack(s) => match s.elems.get(n as usize) {
                        Some(v) => Ok(v.clone()),
                        None => {
                            if self.in_parser {
                                Err(self.out_of_bounds())
                            } else {
                                Ok(s.elem.default_value())
                            }
                        }
                    },
                    other => fail(format!("cannot index a {}", other.kind_name())),
                }
            }
            ExprKind::Slice(base, hi, lo) => {
                let b = self.eval(base)?;
                let hi = self.eval(hi)?.to_u64().unwrap_or(u64::MAX);
                let lo = self.eval(lo)?.to_u64().unwrap_or(u64::MAX);
                types::slice_value(&b, hi, lo).or_fail()
            }
            ExprKind::Call { func, type_args, args } => self.call(func, type_args, args),
            ExprKind::Unary(op, x) => {
                let v = self.eval(x)?;
                value::unary(*op, &v).or_fail()
            }
            ExprKind::Binary(op, a, b) => {
                let av = self.eval(a)?;
                match op {
                    BinOp::And => {
                        if !av.is_true().or_fail()? {
                            return Ok(Value::Bool(false));
                        }
                        let bv = self.eval(b)?;
                        Ok(Value::Bool(bv.is_true().or_fail()?))
                    }
                    BinOp::Or => {
                        if av.is_true().or_fail()? {
                            return Ok(Value::Bool(true));
                        }
                        let bv = self.eval(b)?;
                        Ok(Value::Bool(bv.is_true().or_fail()?))
                    }
                    _ => {
                        let bv = self.eval(b)?;
                        value::binary(*op, &av, &bv).or_fail()
                    }
                }
            }
            ExprKind::Mux(c, a, b) => {
                let (pick, other) =
                    if self.eval(c)?.is_true().or_fail()? { (a, b) } else { (b, a) };
                let v = self.eval(pick)?;
                // An `int` branch takes the other branch's type.
                if let Value::Int(i) = v {
                    if let Some((signed, width)) = self.static_num(other, 0) {
                        let b = Bits::from_i128(width, i);
                        return Ok(if signed { Value::Signed(b) } else { Value::Bits(b) });
                    }
                }
                Ok(v)
            }
            ExprKind::Cast(t, x) => {
                let ty = self.resolve_ty(t)?;
                let v = self.eval(x)?;
                match &ty {
                    Ty::Header(_) | Ty::Struct(_) | Ty::Tuple(_) | Ty::Stack(..) => {
                        conform(v, &ty).or_fail()
                    }
                    _ => value::cast(&v, &ty).or_fail(),
                }
            }
            ExprKind::List(items) => {
                let mut out = Vec::with_capacity(items.len());
                for i in items {
                    out.push(self.eval(i)?);
                }
                Ok(Value::Tuple(out))
            }
            ExprKind::StructInit(items) => {
                let mut fields = Vec::with_capacity(items.len());
                let mut vals = Vec::with_capacity(items.len());
                for (n, x) in items {
                    fields.push((n.name.clone(), Ty::DontCare));
                    vals.push(self.eval(x)?);
                }
                Ok(Value::Struct(Box::new(Aggregate {
                    ty: Arc::new(AggTy {
                        kind: AggregateKind::Struct,
                        name: String::new(),
                        fields,
                    }),
                    valid: true,
                    fields: vals,
                })))
            }
            ExprKind::DontCare => fail("`_` is not a value"),
            ExprKind::TypeRef(_) => fail("a type is not a value"),
        }
    }

    fn member(&mut self, b: Value, m: &str) -> R<Value> {
        match b {
            Value::Header(a) | Value::Struct(a) | Value::Union(a) => match a.get(m) {
                Some(v) => Ok(v.clone()),
                None => fail(format!("no field `{m}` in {}", a.ty.name)),
            },
            Value::Stack(s) => match m {
                "next" => match s.elems.get(s.next_index as usize) {
                    Some(v) => Ok(v.clone()),
                    None => Err(self.out_of_bounds()),
                },
                "last" => match (s.next_index as usize).checked_sub(1).and_then(|i| s.elems.get(i))
                {
                    Some(v) => Ok(v.clone()),
                    None => Err(self.out_of_bounds()),
                },
                "lastIndex" => Ok(Value::Bits(Bits::from_i128(32, s.next_index as i128 - 1))),
                "nextIndex" => Ok(Value::bits(32, s.next_index as u128)),
                "size" => Ok(Value::Int(s.elems.len() as i128)),
                _ => fail(format!("a header stack has no `{m}`")),
            },
            other => fail(format!("a {} has no member `{m}`", other.kind_name())),
        }
    }

    // ----- calls -----------------------------------------------------

    fn call(&mut self, func: &Expr, targs: &[Type], args: &[Arg]) -> R<Value> {
        self.tick()?;
        match &func.kind {
            ExprKind::Name { id, dot_prefix } => {
                self.call_named(&id.name, *dot_prefix, targs, args)
            }
            ExprKind::Member(base, m) => self.call_method(base, &m.name, targs, args),
            _ => fail("this cannot be called"),
        }
    }

    fn call_named(&mut self, name: &str, dot: bool, targs: &[Type], args: &[Arg]) -> R<Value> {
        let s = self.s;
        if !dot {
            if let Some(b) = self.cur_block() {
                if let Some(Decl::Control(c)) = s.prog.decls.get(b.decl) {
                    let decl = b.decl;
                    if let Some(idx) = c
                        .locals
                        .iter()
                        .position(|l| matches!(l, Local::Action(a) if a.name.name == name))
                    {
                        return self
                            .call_action(ActionLoc::Local { decl, idx }, args, &[])
                            .map(|_| Value::Void);
                    }
                }
            }
        }
        if let Some(&f) = s.funcs.get(name) {
            return self.call_function(f, args);
        }
        if let Some(&a) = s.actions.get(name) {
            return self.call_action(ActionLoc::Global(a), args, &[]).map(|_| Value::Void);
        }
        if s.ext_funcs.contains_key(name) {
            return externs::call_function(self, name, targs, args);
        }
        fail(format!("unknown function `{name}`"))
    }

    fn call_method(&mut self, base: &Expr, m: &str, targs: &[Type], args: &[Arg]) -> R<Value> {
        // Objects: tables, instances, packet_in/out.
        let mut obj = None;
        let mut packet = None;
        if let ExprKind::Name { id, .. } = &base.kind {
            match self.lookup_var(&id.name) {
                Some(slot) => match self.slot(slot)? {
                    Value::Opaque { kind, .. } if kind == "packet_in" || kind == "packet_out" => {
                        packet = Some(kind.clone());
                    }
                    v => obj = opaque_obj(v),
                },
                None => {
                    obj = self.lookup_object(&id.name);
                    if obj.is_none() {
                        if let Some(ty) = self.s.env.type_of_type_expr(base) {
                            return types::size_of(&ty, m).or_fail();
                        }
                    }
                }
            }
        }
        if let ExprKind::TypeRef(t) = &base.kind {
            let ty = self.resolve_ty(t)?;
            return types::size_of(&ty, m).or_fail();
        }
        if let Some(kind) = packet {
            return externs::packet_method(self, &kind, m, targs, args);
        }
        match obj {
            Some(Obj::Table(t)) if m == "apply" => return self.apply_table(t),
            Some(Obj::Inst(i)) => {
                return match self.s.insts.get(i) {
                    Some(Inst::Block(_)) if m == "apply" => {
                        self.apply_sub_block(i, args).map(|_| Value::Void)
                    }
                    Some(Inst::Extern(_)) => externs::method(self, i, m, args),
                    _ => fail(format!("no method `{m}`")),
                };
            }
            Some(_) => return fail(format!("no method `{m}`")),
            None => {}
        }
        match m {
            "isValid" => {
                let v = self.eval(base)?;
                Ok(Value::Bool(v.is_valid()))
            }
            "setValid" | "setInvalid" => {
                let lv = self.eval_lvalue(base)?;
                let mut v = self.read_lv(&lv)?;
                if let Value::Header(h) = &mut v {
                    if m == "setValid" {
                        if !h.valid {
                            *h = match Ty::Header(h.ty.clone()).default_value() {
                                Value::Header(d) => d,
                                _ => return fail("internal error: header default"),
                            };
                            h.valid = true;
                        }
                    } else {
                        h.valid = false;
                    }
                } else {
                    return fail(format!("`{m}` of a {}", v.kind_name()));
                }
                self.write_lv(&lv, v)?;
                Ok(Value::Void)
            }
            "push_front" | "pop_front" => {
                let n = match args.first() {
                    Some(a) => self.eval(&a.value)?.to_u64().unwrap_or(u64::MAX),
                    None => return fail(format!("`{m}` needs a count")),
                };
                let lv = self.eval_lvalue(base)?;
                let mut v = self.read_lv(&lv)?;
                let Value::Stack(st) = &mut v else {
                    return fail(format!("`{m}` of a {}", v.kind_name()));
                };
                let size = st.elems.len();
                let n = n.min(size as u64) as usize;
                if m == "push_front" {
                    st.elems.rotate_right(n);
                    for e in st.elems.iter_mut().take(n) {
                        *e = e.unspecified();
                    }
                    st.next_index = (st.next_index as usize + n).min(size) as u32;
                } else {
                    st.elems.rotate_left(n);
                    for e in st.elems.iter_mut().skip(size - n) {
                        *e = e.unspecified();
                    }
                    st.next_index = st.next_index.saturating_sub(n as u32);
                }
                self.write_lv(&lv, v)?;
                Ok(Value::Void)
            }
            "minSizeInBits" | "minSizeInBytes" | "maxSizeInBits" | "maxSizeInBytes" => {
                let v = self.eval(base)?;
                let ty = match &v {
                    Value::Header(a) => Ty::Header(a.ty.clone()),
                    Value::Struct(a) => Ty::Struct(a.ty.clone()),
                    Value::Union(a) => Ty::HeaderUnion(a.ty.clone()),
                    _ => return fail(format!("`{m}` of a {}", v.kind_name())),
                };
                types::size_of(&ty, m).or_fail()
            }
            _ => fail(format!("unknown method `{m}`")),
        }
    }

    /// Evaluates arguments for `params` (copy-in). Returns the
    /// parameters' initial values in order and the `out`/`inout`
    /// arguments' lvalues with their parameter index.
    fn bind_args(&mut self, params: &[Param], tparams: &[String], args: &[Arg]) -> R<Bound> {
        if args.len() > params.len() {
            return fail(format!("{} arguments for {} parameters", args.len(), params.len()));
        }
        let mut vals: Vec<Option<Value>> = vec![None; params.len()];
        let mut outs = Vec::new();
        for (i, a) in args.iter().enumerate() {
            let idx = match &a.name {
                Some(n) => match params.iter().position(|p| p.name.name == n.name) {
                    Some(i) => i,
                    None => return fail(format!("no parameter `{}`", n.name)),
                },
                None => i,
            };
            let p = &params[idx];
            let ty = self.s.env.resolve(&p.ty, tparams).unwrap_or(Ty::DontCare);
            let v = match p.dir {
                Direction::In | Direction::None => {
                    let v = self.eval(&a.value)?;
                    conform(v, &ty).or_fail()?
                }
                Direction::Out => {
                    if matches!(a.value.kind, ExprKind::DontCare) {
                        ty.default_value()
                    } else {
                        let lv = self.eval_lvalue(&a.value)?;
                        let cur = self.read_lv(&lv)?;
                        outs.push((lv, idx));
                        match ty {
                            Ty::Var(_) | Ty::DontCare => cur.unspecified(),
                            _ => ty.default_value(),
                        }
                    }
                }
                Direction::InOut => {
                    let lv = self.eval_lvalue(&a.value)?;
                    let cur = self.read_lv(&lv)?;
                    outs.push((lv, idx));
                    conform(cur, &ty).or_fail()?
                }
            };
            vals[idx] = Some(v);
        }
        let mut out = Vec::with_capacity(params.len());
        for (p, v) in params.iter().zip(vals) {
            let v = match v {
                Some(v) => v,
                None => match &p.default {
                    Some(d) => {
                        let ty = self.s.env.resolve(&p.ty, tparams).unwrap_or(Ty::DontCare);
                        let v = self.eval(d)?;
                        conform(v, &ty).or_fail()?
                    }
                    None => return fail(format!("missing argument for `{}`", p.name.name)),
                },
            };
            out.push((p.name.name.clone(), v));
        }
        Ok((out, outs))
    }

    fn copy_out(&mut self, outs: &[(LVal, usize)], finals: &[(String, Value)]) -> R<()> {
        for (lv, i) in outs {
            if let Some((_, v)) = finals.get(*i) {
                self.write_lv(lv, v.clone())?;
            }
        }
        Ok(())
    }

    /// Runs `body` in a new frame whose first scope holds `binds`;
    /// returns the parameters' final values and the outcome.
    fn in_frame(
        &mut self,
        ctx: Option<usize>,
        binds: Vec<(String, Value)>,
        body: &ast::Block,
    ) -> (Vec<(String, Value)>, R<Option<Value>>) {
        if self.frames.len() >= MAX_FRAMES {
            return (binds, fail("calls nested too deeply"));
        }
        let n = binds.len();
        self.frames.push(Frame { ctx, scopes: vec![binds] });
        let r = self.exec_block(body).map(|f| match f {
            Flow::Return(v) => v,
            Flow::Next => None,
        });
        let mut f = self.frames.pop().map(|f| f.scopes).unwrap_or_default();
        let mut finals = if f.is_empty() { Vec::new() } else { f.swap_remove(0) };
        finals.truncate(n);
        (finals, r)
    }

    fn call_function(&mut self, decl: usize, args: &[Arg]) -> R<Value> {
        let s = self.s;
        let Some(Decl::Function(f)) = s.prog.decls.get(decl) else {
            return fail("internal error: not a function");
        };
        let tps: Vec<String> = f.type_params.iter().map(|t| t.name.clone()).collect();
        let (binds, outs) = self.bind_args(&f.params, &tps, args)?;
        let (finals, r) = self.in_frame(None, binds, &f.body);
        match r {
            Ok(v) => {
                self.copy_out(&outs, &finals)?;
                let ret = s.env.resolve(&f.ret, &tps).unwrap_or(Ty::DontCare);
                match v {
                    Some(v) => conform(v, &ret).or_fail(),
                    None => Ok(Value::Void),
                }
            }
            Err(Abort::Exit) => {
                self.copy_out(&outs, &finals)?;
                Err(Abort::Exit)
            }
            Err(e) => Err(e),
        }
    }

    /// Calls an action with `args` for its leading parameters and
    /// `data` for the rest (action data from a table).
    fn call_action(&mut self, loc: ActionLoc, args: &[Arg], data: &[Value]) -> R<()> {
        let s = self.s;
        let (a, ctx) = match loc {
            ActionLoc::Local { decl, idx } => match s.prog.decls.get(decl) {
                Some(Decl::Control(c)) => match c.locals.get(idx) {
                    Some(Local::Action(a)) => (a, self.cur_ctx()),
                    _ => return fail("internal error: not an action"),
                },
                _ => return fail("internal error: not a control"),
            },
            ActionLoc::Global(d) => match s.prog.decls.get(d) {
                Some(Decl::Action(a)) => (a, None),
                _ => return fail("internal error: not an action"),
            },
        };
        let nargs = a.params.len().saturating_sub(data.len());
        let (mut binds, outs) = self.bind_args(&a.params[..nargs], &[], args)?;
        for (p, v) in a.params[nargs..].iter().zip(data) {
            binds.push((p.name.name.clone(), v.clone()));
        }
        if self.trace.is_some() {
            let data_args = a
                .params
                .iter()
                .filter(|p| p.dir == Direction::None)
                .filter_map(|p| binds.iter().find(|(n, _)| *n == p.name.name).cloned())
                .collect();
            let action = a.name.name.clone();
            self.note(|| TraceEvent::Action { action, args: data_args });
        }
        let (finals, r) = self.in_frame(ctx, binds, &a.body);
        match r {
            Ok(_) => self.copy_out(&outs, &finals),
            Err(Abort::Exit) => {
                self.copy_out(&outs, &finals)?;
                Err(Abort::Exit)
            }
            Err(e) => Err(e),
        }
    }

    fn apply_table(&mut self, t: usize) -> R<Value> {
        let s = self.s;
        let Some(ts) = s.tables.get(t) else {
            return fail("internal error: no table");
        };
        let mut keys = Vec::with_capacity(ts.keys.len());
        for k in &ts.keys {
            let v = self.eval(&k.expr)?;
            keys.push(table::key_bits(&v, k.width, &s.env.errors).or_fail()?);
        }
        let Some(td) = self.d.tables.get(t) else {
            return fail("internal error: no table state");
        };
        let found_at = table::lookup_index(ts, td, &keys);
        let found = found_at.and_then(|i| td.entries.get(i));
        let (hit, action, data) = match found {
            Some(e) => (true, e.action, e.args.clone()),
            None => (false, td.default.0, td.default.1.clone()),
        };
        if self.trace.is_some() {
            let ev = found.map_or(TraceEvent::Miss, |e| trace::hit(ts, e));
            let names = ts.keys.iter().map(|k| k.name.clone());
            let keys = names.zip(keys).collect();
            self.note(|| TraceEvent::Table { table: ts.name.clone(), keys });
            self.note(|| ev);
        }
        // The direct meter's colour for this apply: a hit runs the
        // entry's meter, a miss the default entry's (GREEN while it is
        // unconfigured, as bmv2's misses are).
        self.d.direct_color = ts.direct_meter.map(|m| (m, crate::meter::GREEN));
        let len = self.pkt.len() as u64;
        let metered = ts.direct_meter.map(|m| {
            let units = if externs::meters_bytes(s, m) { len } else { 1 };
            (m, units, self.d.clock.now_ns())
        });
        if found_at.is_some() {
            if let Some(c) = ts.direct_counter {
                if let Some(st) = self.d.externs.get_mut(&c) {
                    table::count_direct(st, len);
                }
            }
        }
        let mut colour = None;
        if let Some(td) = self.d.tables.get_mut(t) {
            let (counter, meter, colours) = match found_at.and_then(|i| td.entries.get_mut(i)) {
                Some(e) => {
                    e.hits += 1;
                    (&mut e.counter, &mut e.meter, &mut e.colours)
                }
                None => {
                    let d = &mut td.default_cells;
                    (&mut d.counter, &mut d.meter, &mut d.colours)
                }
            };
            if ts.direct_counter.is_some() {
                counter.0 += 1;
                counter.1 += len;
            }
            if let Some((m, units, now)) = metered {
                let c = meter.execute(now, units);
                if let Some(x) = colours.get_mut(usize::from(c)) {
                    x.0 += 1;
                    x.1 += len;
                }
                colour = Some((m, c));
            }
        }
        if colour.is_some() {
            self.d.direct_color = colour;
        }
        let Some(spec) = ts.actions.get(action) else {
            return fail("internal error: no action");
        };
        self.call_action(spec.loc, &spec.bound, &data)?;
        Ok(Value::Struct(Box::new(Aggregate {
            ty: apply_result_ty(),
            valid: true,
            fields: vec![Value::Bool(hit), Value::Bool(!hit), Value::Str(spec.short.clone())],
        })))
    }

    fn apply_sub_block(&mut self, inst: usize, args: &[Arg]) -> R<()> {
        let s = self.s;
        let Some(Inst::Block(b)) = s.insts.get(inst) else {
            return fail("internal error: not a block");
        };
        let (params, tps) = match s.prog.decls.get(b.decl) {
            Some(Decl::Parser(p)) => (&p.params, &p.type_params),
            Some(Decl::Control(c)) => (&c.params, &c.type_params),
            _ => return fail("internal error: not a block"),
        };
        let tps: Vec<String> = tps.iter().map(|t| t.name.clone()).collect();
        let (binds, outs) = self.bind_args(params, &tps, args)?;
        let names: Vec<String> = binds.iter().map(|(n, _)| n.clone()).collect();
        let (finals, r) = self.invoke_block(inst, binds.into_iter().map(|(_, v)| v).collect());
        let finals: Vec<(String, Value)> = names.into_iter().zip(finals).collect();
        match r {
            Ok(()) => self.copy_out(&outs, &finals),
            Err(Abort::Exit) | Err(Abort::Reject(_)) => {
                self.copy_out(&outs, &finals)?;
                r
            }
            Err(e) => Err(e),
        }
    }

    /// Runs a parser or control instance with its parameters' values;
    /// returns their final values and the outcome.
    pub(super) fn invoke_block(&mut self, inst: usize, params: Vec<Value>) -> (Vec<Value>, R<()>) {
        let s = self.s;
        let Some(Inst::Block(b)) = s.insts.get(inst) else {
            return (params, fail("internal error: not a block"));
        };
        let decl = s.prog.decls.get(b.decl);
        let (pdecls, locals) = match decl {
            Some(Decl::Parser(p)) => (&p.params, &p.locals),
            Some(Decl::Control(c)) => (&c.params, &c.locals),
            _ => return (params, fail("internal error: not a block")),
        };
        if pdecls.len() != params.len() || self.frames.len() >= MAX_FRAMES {
            return (params, fail("calls nested too deeply or wrong arity"));
        }
        let nctor = b.ctor.len();
        let mut vars = b.ctor.clone();
        for (p, v) in pdecls.iter().zip(params) {
            vars.push((p.name.name.clone(), v));
        }
        let ci = self.ctxs.len();
        self.ctxs.push(Ctx { inst, vars });
        self.frames.push(Frame { ctx: Some(ci), scopes: vec![Vec::new()] });
        let r = self.run_block_body(decl, locals, ci);
        self.frames.pop();
        let ctx = self.ctxs.pop();
        let finals = ctx
            .map(|c| c.vars.into_iter().skip(nctor).take(pdecls.len()).map(|(_, v)| v).collect())
            .unwrap_or_default();
        (finals, r)
    }

    /// A variable declaration's first value: its initialiser converted to
    /// the declared type, or the type's default.
    fn var_init(&mut self, v: &crate::ast::VarDecl) -> R<Value> {
        let ty = self.resolve_ty(&v.ty)?;
        let val = match &v.init {
            Some(e) => {
                let x = self.eval(e)?;
                conform(x, &ty).or_fail()?
            }
            None => ty.default_value(),
        };
        Ok(val)
    }

    fn run_block_body(&mut self, decl: Option<&Decl>, locals: &[Local], ci: usize) -> R<()> {
        for l in locals {
            match l {
                Local::Var(v) => {
                    let val = self.var_init(v)?;
                    if let Some(c) = self.ctxs.get_mut(ci) {
                        c.vars.push((v.name.name.clone(), val));
                    }
                }
                Local::Const(k) => {
                    let ty = self.resolve_ty(&k.ty)?;
                    let x = self.eval(&k.value)?;
                    let val = conform(x, &ty).or_fail()?;
                    if let Some(c) = self.ctxs.get_mut(ci) {
                        c.vars.push((k.name.name.clone(), val));
                    }
                }
                _ => {}
            }
        }
        match decl {
            Some(Decl::Parser(p)) => self.run_parser(p),
            Some(Decl::Control(c)) => self.exec_block(&c.apply).map(|_| ()),
            _ => fail("internal error: not a block"),
        }
    }

    fn run_parser(&mut self, p: &ast::ParserDecl) -> R<()> {
        let was = self.in_parser;
        self.in_parser = true;
        let r = self.run_states(p);
        self.in_parser = was;
        r
    }

    fn run_states(&mut self, p: &ast::ParserDecl) -> R<()> {
        let mut cur = "start".to_string();
        for _ in 0..super::MAX_PARSER_TRANSITIONS {
            match cur.as_str() {
                "accept" => return Ok(()),
                "reject" => return Err(Abort::Reject("NoError".into())),
                _ => {}
            }
            let Some(st) = p.states.iter().find(|s| s.name.name == cur) else {
                return fail(format!("no parser state `{cur}`"));
            };
            self.note(|| TraceEvent::ParserState { state: cur.clone() });
            self.push_scope()?;
            for stmt in &st.body {
                if let Flow::Return(_) = self.exec(stmt)? {
                    return fail("`return` in a parser state");
                }
            }
            cur = match &st.transition {
                None => "reject".to_string(),
                Some(Transition::Direct(id)) => id.name.clone(),
                Some(Transition::Select { exprs, cases, .. }) => {
                    let mut vals = Vec::with_capacity(exprs.len());
                    for e in exprs {
                        vals.push(self.eval(e)?);
                    }
                    let mut next = None;
                    for c in cases {
                        if self.case_matches(&c.keys, &vals)? {
                            next = Some(c.next.name.clone());
                            break;
                        }
                    }
                    if self.trace.is_some() {
                        let next = next.clone();
                        self.note(|| TraceEvent::Select { values: vals, next });
                    }
                    match next {
                        Some(n) => n,
                        None => {
                            self.pop_scope();
                            return Err(Abort::Reject("NoMatch".into()));
                        }
                    }
                }
            };
            self.pop_scope();
        }
        Err(Abort::Reject("ParserTimeout".into()))
    }

    fn case_matches(&mut self, keys: &[Keyset], vals: &[Value]) -> R<bool> {
        if keys.len() == 1 && matches!(keys[0], Keyset::Default(_) | Keyset::DontCare(_)) {
            return Ok(true);
        }
        // A single tuple value against several keysets.
        let flat: Vec<Value>;
        let vals = if vals.len() == 1 && keys.len() > 1 {
            match &vals[0] {
                Value::Tuple(t) => {
                    flat = t.clone();
                    &flat[..]
                }
                _ => vals,
            }
        } else {
            vals
        };
        if keys.len() != vals.len() {
            return fail("a select case has the wrong number of keysets");
        }
        for (k, v) in keys.iter().zip(vals) {
            let ok = match k {
                Keyset::Default(_) | Keyset::DontCare(_) => true,
                Keyset::Expr(x) => {
                    let kv = self.eval(x)?;
                    value::values_equal(v, &kv).or_fail()?
                }
                Keyset::Mask(x, m) => {
                    let kv = self.eval(x)?;
                    let mv = self.eval(m)?;
                    let a = value::binary(BinOp::BitAnd, v, &mv).or_fail()?;
                    let b = value::binary(BinOp::BitAnd, &kv, &mv).or_fail()?;
                    let b = fit(b, &a).or_fail()?;
                    value::values_equal(&a, &b).or_fail()?
                }
                Keyset::Range(lo, hi) => {
                    let l = self.eval(lo)?;
                    let h = self.eval(hi)?;
                    value::binary(BinOp::Le, &l, v).or_fail()?.is_true().or_fail()?
                        && value::binary(BinOp::Le, v, &h).or_fail()?.is_true().or_fail()?
                }
            };
            if !ok {
                return Ok(false);
            }
        }
        Ok(true)
    }

    // ----- statements ------------------------------------------------

    fn push_scope(&mut self) -> R<()> {
        match self.frames.last_mut() {
            Some(f) => {
                f.scopes.push(Vec::new());
                Ok(())
            }
            None => fail("internal error: no frame"),
        }
    }

    fn pop_scope(&mut self) {
        if let Some(f) = self.frames.last_mut() {
            if f.scopes.len() > 1 {
                f.scopes.pop();
            }
        }
    }

    fn exec_block(&mut self, b: &ast::Block) -> R<Flow> {
        self.push_scope()?;
        for s in &b.stmts {
            match self.exec(s) {
                Ok(Flow::Next) => {}
                other => {
                    self.pop_scope();
                    return other;
                }
            }
        }
        self.pop_scope();
        Ok(Flow::Next)
    }

    fn exec(&mut self, s: &Stmt) -> R<Flow> {
        self.tick()?;
        self.enter()?;
        let r = self.exec_inner(s);
        self.depth -= 1;
        r
    }

    fn exec_inner(&mut self, s: &Stmt) -> R<Flow> {
        match s {
            Stmt::Assign { lhs, op, rhs, .. } => {
                let lv = self.eval_lvalue(lhs)?;
                let v = match op {
                    Some(op) => {
                        let cur = self.read_lv(&lv)?;
                        let r = self.eval(rhs)?;
                        value::binary(*op, &cur, &r).or_fail()?
                    }
                    None => self.eval(rhs)?,
                };
                self.write_lv(&lv, v)?;
                Ok(Flow::Next)
            }
            Stmt::Call(e) => {
                self.eval(e)?;
                Ok(Flow::Next)
            }
            Stmt::If { cond, then, otherwise, .. } => {
                if self.eval(cond)?.is_true().or_fail()? {
                    self.exec_scoped(then)
                } else if let Some(o) = otherwise {
                    self.exec_scoped(o)
                } else {
                    Ok(Flow::Next)
                }
            }
            Stmt::Block(b) => self.exec_block(b),
            Stmt::Exit(_) => Err(Abort::Exit),
            Stmt::Return(e, _) => {
                let v = match e {
                    Some(e) => Some(self.eval(e)?),
                    None => None,
                };
                Ok(Flow::Return(v))
            }
            Stmt::Switch { expr, cases, .. } => {
                let v = self.eval(expr)?;
                let mut matched = false;
                for c in cases {
                    if !matched {
                        matched = match &c.label {
                            SwitchLabel::Default(_) => true,
                            SwitchLabel::Expr(x) => match &v {
                                Value::Str(action) => match &x.kind {
                                    ExprKind::Name { id, .. } => id.name == *action,
                                    _ => false,
                                },
                                _ => {
                                    let lv = self.eval(x)?;
                                    value::values_equal(&v, &lv).or_fail()?
                                }
                            },
                        };
                    }
                    if matched {
                        if let Some(b) = &c.body {
                            return self.exec_block(b);
                        }
                    }
                }
                Ok(Flow::Next)
            }
            Stmt::Var(v) => {
                let val = self.var_init(v)?;
                self.declare(&v.name.name, val)?;
                Ok(Flow::Next)
            }
            Stmt::Const(c) => {
                let ty = self.resolve_ty(&c.ty)?;
                let x = self.eval(&c.value)?;
                let val = conform(x, &ty).or_fail()?;
                self.declare(&c.name.name, val)?;
                Ok(Flow::Next)
            }
            Stmt::Empty(_) => Ok(Flow::Next),
        }
    }

    /// A branch of an `if`: a declaration in it is local to it.
    fn exec_scoped(&mut self, s: &Stmt) -> R<Flow> {
        if let Stmt::Block(b) = s {
            return self.exec_block(b);
        }
        self.push_scope()?;
        let r = self.exec(s);
        self.pop_scope();
        r
    }

    /// Reads the current state of an extern instance.
    pub(super) fn extern_state(&mut self, i: usize) -> &mut ExternState {
        self.d.externs.entry(i).or_insert(ExternState::None)
    }
}

/// Writes `v` at `path` below `cur`, converting it to the target's
/// shape. Writing a valid header into a union member invalidates the
/// other members.
/// The value at `path` under `cur`. An element past a stack's end reads
/// as the element type's default value (what a read there gives), and the
/// rest of the path applies to that default: `s[9].f[3:0]` is a slice of
/// the default `f`.
fn read_path(cur: &Value, path: &[Step]) -> R<Value> {
    let Some((first, rest)) = path.split_first() else {
        return Ok(cur.clone());
    };
    match first {
        Step::Field(f) => match cur {
            Value::Header(a) | Value::Struct(a) | Value::Union(a) => match a.get(f) {
                Some(v) => read_path(v, rest),
                None => fail(format!("no field `{f}`")),
            },
            _ => fail(format!("no field `{f}` in a {}", cur.kind_name())),
        },
        Step::Index(i) => match cur {
            Value::Stack(s) => match s.elems.get(*i as usize) {
                Some(v) => read_path(v, rest),
                None => read_path(&s.elem.default_value(), rest),
            },
            _ => fail("indexing a non-stack"),
        },
        Step::Slice(hi, lo) => {
            let v = types::slice_value(cur, *hi as u64, *lo as u64).or_fail()?;
            read_path(&v, rest)
        }
    }
}

fn write_path(cur: &mut Value, path: &[Step], v: Value) -> Result<(), String> {
    let Some((first, rest)) = path.split_first() else {
        let nv = fit(v, cur)?;
        *cur = nv;
        return Ok(());
    };
    match first {
        Step::Field(f) => {
            let is_union = matches!(cur, Value::Union(_));
            match cur {
                Value::Header(a) | Value::Struct(a) | Value::Union(a) => {
                    let Some(i) = a.index(f) else {
                        return Err(format!("no field `{f}` in {}", a.ty.name));
                    };
                    let Some(slot) = a.fields.get_mut(i) else {
                        return Err("internal error: field".into());
                    };
                    write_path(slot, rest, v)?;
                    if is_union && a.fields.get(i).is_some_and(|x| x.is_valid()) {
                        for (j, other) in a.fields.iter_mut().enumerate() {
                            if j != i {
                                other.set_valid(false);
                            }
                        }
                    }
                    Ok(())
                }
                other => Err(format!("no field `{f}` in a {}", other.kind_name())),
            }
        }
        Step::Index(i) => match cur {
            Value::Stack(s) => match s.elems.get_mut(*i as usize) {
                Some(e) => write_path(e, rest, v),
                // Writes out of bounds are lost (bmv2 would abort).
                None => Ok(()),
            },
            other => Err(format!("cannot index a {}", other.kind_name())),
        },
        Step::Slice(hi, lo) => {
            let bits = match (&*cur, &v) {
                (Value::Bits(b) | Value::Signed(b), Value::Bits(x) | Value::Signed(x)) => {
                    b.with_slice(*hi, *lo, x)
                }
                (Value::Bits(b) | Value::Signed(b), Value::Int(i)) => {
                    b.with_slice(*hi, *lo, &Bits::from_i128(hi - lo + 1, *i))
                }
                _ => return Err("slice assignment to a non-number".into()),
            };
            *cur = match cur {
                Value::Signed(_) => Value::Signed(bits),
                _ => Value::Bits(bits),
            };
            Ok(())
        }
    }
}

impl Run<'_> {
    /// For externs: evaluates an argument.
    pub(super) fn arg(&mut self, args: &[Arg], i: usize) -> R<Value> {
        match args.get(i) {
            Some(a) => self.eval(&a.value),
            None => fail(format!("missing argument {}", i + 1)),
        }
    }

    /// For externs: an argument as an lvalue (`None` for `_`).
    pub(super) fn arg_lvalue(&mut self, args: &[Arg], i: usize) -> R<Option<LVal>> {
        match args.get(i) {
            Some(a) if matches!(a.value.kind, ExprKind::DontCare) => Ok(None),
            Some(a) => self.eval_lvalue(&a.value).map(Some),
            None => fail(format!("missing argument {}", i + 1)),
        }
    }

    pub(super) fn resolve_type(&self, t: &Type) -> R<Ty> {
        self.resolve_ty(t)
    }

    /// Sets a stack's `nextIndex` (after `extract(s.next)`).
    pub(super) fn set_next_index(&mut self, lv: &LVal, i: u32) -> R<()> {
        let mut v = self.read_lv(lv)?;
        if let Value::Stack(st) = &mut v {
            st.next_index = i;
        }
        self.write_lv(lv, v)
    }

    /// The fixed width and signedness an expression has statically
    /// (for `int` literals in a `?:` whose other branch is typed),
    /// found without evaluating anything.
    fn static_num(&self, e: &Expr, depth: u32) -> Option<(bool, u32)> {
        if depth > 32 {
            return None;
        }
        let d = depth + 1;
        match &e.kind {
            ExprKind::Int { width, .. } => *width,
            ExprKind::Cast(t, _) => match self.s.env.resolve(t, &[]).ok()? {
                Ty::Bits { signed, width } => Some((signed, width)),
                _ => None,
            },
            ExprKind::Name { .. } | ExprKind::Member(..) | ExprKind::Index(..) => {
                match self.peek(e, d)? {
                    Value::Bits(b) => Some((false, b.width())),
                    Value::Signed(b) => Some((true, b.width())),
                    _ => None,
                }
            }
            ExprKind::Slice(_, hi, lo) => {
                let (ExprKind::Int { value: h, .. }, ExprKind::Int { value: l, .. }) =
                    (&hi.kind, &lo.kind)
                else {
                    return None;
                };
                let w = h.to_u128()?.checked_sub(l.to_u128()?)? + 1;
                Some((false, u32::try_from(w).ok()?))
            }
            ExprKind::Unary(_, x) => self.static_num(x, d),
            ExprKind::Binary(op, a, b) => match op {
                BinOp::Concat => {
                    let (s, x) = self.static_num(a, d)?;
                    let (_, y) = self.static_num(b, d)?;
                    Some((s, x.checked_add(y)?))
                }
                BinOp::Shl | BinOp::Shr => self.static_num(a, d),
                BinOp::Lt
                | BinOp::Le
                | BinOp::Gt
                | BinOp::Ge
                | BinOp::Eq
                | BinOp::Ne
                | BinOp::And
                | BinOp::Or => None,
                _ => self.static_num(a, d).or_else(|| self.static_num(b, d)),
            },
            ExprKind::Mux(_, a, b) => self.static_num(a, d).or_else(|| self.static_num(b, d)),
            ExprKind::Call { func, .. } => {
                let ExprKind::Name { id, .. } = &func.kind else {
                    return None;
                };
                let f = *self.s.funcs.get(&id.name)?;
                let Some(Decl::Function(f)) = self.s.prog.decls.get(f) else {
                    return None;
                };
                match self.s.env.resolve(&f.ret, &[]).ok()? {
                    Ty::Bits { signed, width } => Some((signed, width)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The current value of a name/member/index path, without side
    /// effects (indices other than literals give the element type's
    /// default).
    fn peek(&self, e: &Expr, depth: u32) -> Option<Value> {
        if depth > 32 {
            return None;
        }
        match &e.kind {
            ExprKind::Name { id, .. } => {
                let s = self.lookup_var(&id.name)?;
                self.slot(s).ok().cloned()
            }
            ExprKind::Member(b, m) => {
                if let Some(Ok(v)) = self.s.env.type_member(b, &m.name) {
                    return Some(v);
                }
                match self.peek(b, depth + 1)? {
                    Value::Header(a) | Value::Struct(a) | Value::Union(a) => {
                        a.get(&m.name).cloned()
                    }
                    Value::Stack(s) => match m.name.as_str() {
                        "next" | "last" => Some(s.elem.default_value()),
                        "lastIndex" | "nextIndex" => Some(Value::bits(32, 0)),
                        _ => None,
                    },
                    _ => None,
                }
            }
            ExprKind::Index(b, _) => match self.peek(b, depth + 1)? {
                Value::Stack(s) => Some(s.elem.default_value()),
                _ => None,
            },
            _ => None,
        }
    }

    pub(super) fn fail_reject(&self, err: &str) -> Abort {
        if self.in_parser {
            Abort::Reject(err.to_string())
        } else {
            Abort::Fail(format!("error.{err} outside a parser"))
        }
    }
}
