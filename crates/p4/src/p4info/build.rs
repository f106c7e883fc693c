//! From the syntax tree to the [`P4Info`] model: a walk of `main`'s
//! controls in p4c's order collecting symbols by fully qualified name,
//! then the ids (module docs), then the model.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::{
    field_ids, name_hash, prefix, Action, ActionRef, ControllerPacketMetadata, Counter, Digest,
    DirectCounter, DirectMeter, MatchField, MatchType, Meter, P4Info, Param, Preamble, Register,
    Scope, Suffixes, Table, TableActionCall, TypeInfo, TypeSpec, Unit,
};
use crate::ast::{
    ActionDecl, ActionRef as AstRef, AggregateKind, Annotation, BinOp, Block, ControlDecl, Decl,
    Direction, Expr, ExprKind, Instantiation, KeyElem, Local, Stmt, TableDecl, TableProp, Type,
    TypeKind,
};
use crate::diag::{Diagnostic, Result, Sources, Span};
use crate::parse::Loaded;
use crate::types::{Ty, TypeEnv};
use crate::value::Value;

/// How deeply control instances, types and calls may nest.
const MAX_DEPTH: u32 = 32;

/// How many control instances and inlined calls one program may make
/// the walk visit (nesting alone bounds depth, not breadth: a control
/// instantiating itself twice would otherwise be walked 2^32 times).
const MAX_WORK: usize = 100_000;

fn refuse(span: Span, what: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::new(span, format!("p4info: {what} is not supported"))
}

fn find<'a>(anns: &'a [Annotation], name: &str) -> Option<&'a Annotation> {
    anns.iter().find(|a| a.name.name == name)
}

/// A declaration's external name: its `@name`, else its own.
fn ext_name(anns: &[Annotation], name: &str) -> String {
    match find(anns, "name").and_then(|a| a.args.first()) {
        Some(n) => n.clone(),
        None => name.to_string(),
    }
}

/// `ext` under `prefix` (a leading `.` makes it absolute).
fn qualify(prefix: &str, ext: &str) -> String {
    match ext.strip_prefix('.') {
        Some(abs) => abs.to_string(),
        None if prefix.is_empty() => ext.to_string(),
        None => format!("{prefix}.{ext}"),
    }
}

/// The value of an `@id(n)`.
fn id_ann(anns: &[Annotation]) -> Result<Option<u32>> {
    let Some(a) = find(anns, "id") else { return Ok(None) };
    match a.args.as_slice() {
        [n] => n
            .parse::<u32>()
            .map(Some)
            .map_err(|_| Diagnostic::new(a.span, "@id should be an unsigned 32-bit integer")),
        _ => Err(Diagnostic::new(a.span, "@id takes one integer")),
    }
}

/// Symbols by resource type, with the ids p4c gives them.
#[derive(Default)]
struct Symbols {
    /// Per prefix: name → explicit id (already prefixed), in order.
    by_type: BTreeMap<u8, Vec<(String, Option<u32>)>>,
    suffixes: Suffixes,
    ids: HashMap<(u8, String), u32>,
    taken: HashSet<u32>,
}

impl Symbols {
    fn add(&mut self, p: u8, name: &str, id: Option<u32>, span: Span) -> Result<()> {
        let list = self.by_type.entry(p).or_default();
        if list.iter().any(|(n, _)| n == name) {
            return Ok(());
        }
        let id = match id {
            None => None,
            Some(id) => {
                let top = (p as u32) << 24;
                if id & 0xff00_0000 != 0 && id & 0xff00_0000 != top {
                    return Err(Diagnostic::new(
                        span,
                        format!("{name}: @id has the wrong 8-bit prefix"),
                    ));
                }
                let id = id | top;
                if !self.taken.insert(id) {
                    return Err(Diagnostic::new(
                        span,
                        format!("@id {id} is assigned to multiple declarations"),
                    ));
                }
                Some(id)
            }
        };
        list.push((name.to_string(), id));
        self.suffixes.add(name);
        Ok(())
    }

    /// Every symbol without `@id` gets its hash, names in byte order,
    /// probing past taken ids.
    fn assign(&mut self) -> Result<()> {
        for (&p, list) in &self.by_type {
            let mut names: Vec<&(String, Option<u32>)> = list.iter().collect();
            names.sort_by(|a, b| a.0.cmp(&b.0));
            for (name, explicit) in names {
                let id = match explicit {
                    Some(id) => *id,
                    None => {
                        let start = name_hash(name);
                        let mut v = start;
                        let make = |v: u32| (p as u32) << 24 | (v & 0xff_ffff);
                        while self.taken.contains(&make(v)) {
                            v = v.wrapping_add(1);
                            if v == start {
                                return Err(Diagnostic::bare(format!(
                                    "no id left to represent {name} in P4Runtime"
                                )));
                            }
                        }
                        self.taken.insert(make(v));
                        make(v)
                    }
                };
                self.ids.insert((p, name.clone()), id);
            }
        }
        Ok(())
    }

    fn id(&self, p: u8, name: &str) -> u32 {
        self.ids.get(&(p, name.to_string())).copied().unwrap_or(0)
    }

    fn preamble(&self, p: u8, name: &str, annotations: Vec<String>) -> Preamble {
        Preamble {
            id: self.id(p, name),
            name: name.to_string(),
            alias: self.suffixes.alias(name),
            annotations,
        }
    }
}

// What the walk collects, by name; ids come after.

struct ActionOut {
    name: String,
    hidden: bool,
    annotations: Vec<String>,
    params: Vec<Param>,
}

struct RefOut {
    action: String,
    scope: Scope,
    annotations: Vec<String>,
}

struct TableOut {
    name: String,
    hidden: bool,
    annotations: Vec<String>,
    match_fields: Vec<MatchField>,
    refs: Vec<RefOut>,
    default: String,
    default_const: bool,
    default_args: Vec<(u32, Vec<u8>)>,
    direct: Vec<(u8, String)>,
    size: i64,
    timeout: bool,
    is_const: bool,
    has_entries: bool,
}

enum ExternOut {
    Counter { direct: bool, name: String, annotations: Vec<String>, unit: Unit, size: i64 },
    Meter { direct: bool, name: String, annotations: Vec<String>, unit: Unit, size: i64 },
    Register { name: String, annotations: Vec<String>, spec: TypeSpec, size: i32 },
}

struct Walk<'a> {
    prog: &'a crate::ast::Program,
    sources: &'a Sources,
    env: TypeEnv,
    syms: Symbols,
    tables: Vec<TableOut>,
    actions: Vec<ActionOut>,
    externs: Vec<ExternOut>,
    digests: Vec<(String, TypeSpec)>,
    type_info: Option<TypeInfo>,
    extern_fns: HashSet<String>,
    controls: HashMap<String, &'a ControlDecl>,
    global_actions: HashMap<String, &'a ActionDecl>,
    /// Control instances walked so far (against [`MAX_WORK`]).
    walked: usize,
}

/// One control instance being walked: its prefix and what its names mean.
struct Inst<'a> {
    prefix: String,
    decl: &'a ControlDecl,
    vars: HashMap<String, Ty>,
    /// Local action name → qualified name.
    local_actions: HashMap<String, String>,
}

pub(super) fn build(loaded: &Loaded) -> Result<P4Info> {
    let prog = &loaded.program;
    let env = TypeEnv::new(prog)?;
    let mut w = Walk {
        prog,
        sources: &loaded.sources,
        env,
        syms: Symbols::default(),
        tables: Vec::new(),
        actions: Vec::new(),
        externs: Vec::new(),
        digests: Vec::new(),
        type_info: None,
        extern_fns: HashSet::new(),
        controls: HashMap::new(),
        global_actions: HashMap::new(),
        walked: 0,
    };
    let mut main = None;
    for d in &prog.decls {
        match d {
            Decl::ExternFunction(f) => {
                w.extern_fns.insert(f.name.name.clone());
            }
            Decl::Control(c) => {
                w.controls.insert(c.name.name.clone(), c);
            }
            Decl::Action(a) => {
                w.global_actions.insert(a.name.name.clone(), a);
            }
            Decl::Instance(i) if i.name.name == "main" => main = Some(i),
            Decl::Instance(i) => {
                if let TypeKind::Named { name, .. } = &i.ty.kind {
                    if is_resource(&name.name) {
                        return Err(refuse(i.span, "an extern instance at top level"));
                    }
                }
            }
            Decl::Parser(p) => {
                for l in &p.locals {
                    if let Local::ValueSet { span, .. } = l {
                        return Err(refuse(*span, "a value_set"));
                    }
                }
            }
            _ => {}
        }
    }
    let Some(main) = main else {
        return Err(Diagnostic::bare("the program has no `main` instance"));
    };
    match &main.ty.kind {
        TypeKind::Named { name, .. } if name.name == "V1Switch" => {}
        _ => return Err(refuse(main.ty.span, "a package other than v1model's V1Switch")),
    }
    for a in &main.args {
        let name = match &a.value.kind {
            ExprKind::Call { func, args, .. } if args.is_empty() => match &func.kind {
                ExprKind::Name { id, .. } => id.name.clone(),
                _ => return Err(refuse(a.span, "this package argument")),
            },
            _ => return Err(refuse(a.span, "this package argument (only `Block()`)")),
        };
        if let Some(c) = w.controls.get(&name).copied() {
            w.top_control(c)?;
        }
    }
    w.controller_headers_symbols()?;
    w.syms.assign()?;
    w.finish()
}

fn is_resource(ty: &str) -> bool {
    matches!(
        ty,
        "counter"
            | "direct_counter"
            | "meter"
            | "direct_meter"
            | "register"
            | "action_profile"
            | "action_selector"
    )
}

/// Every `Name` an expression or statement mentions.
fn names_in_block(b: &Block, out: &mut HashSet<String>) {
    for s in &b.stmts {
        names_in_stmt(s, out);
    }
}

fn names_in_stmt(s: &Stmt, out: &mut HashSet<String>) {
    match s {
        Stmt::Assign { lhs, rhs, .. } => {
            names_in_expr(lhs, out);
            names_in_expr(rhs, out);
        }
        Stmt::Call(e) => names_in_expr(e, out),
        Stmt::If { cond, then, otherwise, .. } => {
            names_in_expr(cond, out);
            names_in_stmt(then, out);
            if let Some(o) = otherwise {
                names_in_stmt(o, out);
            }
        }
        Stmt::Block(b) => names_in_block(b, out),
        Stmt::Return(Some(e), _) => names_in_expr(e, out),
        Stmt::Switch { expr, cases, .. } => {
            names_in_expr(expr, out);
            for c in cases {
                if let crate::ast::SwitchLabel::Expr(e) = &c.label {
                    names_in_expr(e, out);
                }
                if let Some(b) = &c.body {
                    names_in_block(b, out);
                }
            }
        }
        Stmt::Var(v) => {
            if let Some(e) = &v.init {
                names_in_expr(e, out);
            }
        }
        Stmt::Const(c) => names_in_expr(&c.value, out),
        _ => {}
    }
}

fn names_in_expr(e: &Expr, out: &mut HashSet<String>) {
    visit_expr(e, &mut |e| {
        if let ExprKind::Name { id, .. } = &e.kind {
            out.insert(id.name.clone());
        }
    });
}

/// Calls `f` on `e` and every expression under it (bounded by the
/// parser's nesting).
fn visit_expr(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    match &e.kind {
        ExprKind::Member(a, _) | ExprKind::Unary(_, a) | ExprKind::Cast(_, a) => visit_expr(a, f),
        ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
            visit_expr(a, f);
            visit_expr(b, f);
        }
        ExprKind::Slice(a, b, c) | ExprKind::Mux(a, b, c) => {
            visit_expr(a, f);
            visit_expr(b, f);
            visit_expr(c, f);
        }
        ExprKind::Call { func, args, .. } => {
            visit_expr(func, f);
            for a in args {
                visit_expr(&a.value, f);
            }
        }
        ExprKind::List(l) => l.iter().for_each(|x| visit_expr(x, f)),
        ExprKind::StructInit(l) => l.iter().for_each(|(_, x)| visit_expr(x, f)),
        _ => {}
    }
}

/// Every call expression in a block, in order.
fn calls_in_block<'b>(env: &TypeEnv, b: &'b Block, out: &mut Vec<&'b Expr>) {
    for s in &b.stmts {
        calls_in_stmt(env, s, out);
    }
}

fn calls_in_stmt<'b>(env: &TypeEnv, s: &'b Stmt, out: &mut Vec<&'b Expr>) {
    let ex = |e: &'b Expr, out: &mut Vec<&'b Expr>| calls_in_expr(env, e, out);
    match s {
        // p4c folds constant conditions away before it names anything.
        Stmt::If { cond, then, otherwise, .. } if const_bool(env, cond).is_some() => {
            if const_bool(env, cond) == Some(true) {
                calls_in_stmt(env, then, out);
            } else if let Some(o) = otherwise {
                calls_in_stmt(env, o, out);
            }
        }
        Stmt::Assign { lhs, rhs, .. } => {
            ex(lhs, out);
            ex(rhs, out);
        }
        Stmt::Call(e) => ex(e, out),
        Stmt::If { cond, then, otherwise, .. } => {
            ex(cond, out);
            calls_in_stmt(env, then, out);
            if let Some(o) = otherwise {
                calls_in_stmt(env, o, out);
            }
        }
        Stmt::Block(b) => calls_in_block(env, b, out),
        Stmt::Return(Some(e), _) => ex(e, out),
        Stmt::Switch { expr, cases, .. } => {
            ex(expr, out);
            for c in cases {
                if let Some(b) = &c.body {
                    calls_in_block(env, b, out);
                }
            }
        }
        Stmt::Var(v) => {
            if let Some(e) = &v.init {
                ex(e, out);
            }
        }
        _ => {}
    }
}

fn calls_in_expr<'b>(env: &TypeEnv, e: &'b Expr, out: &mut Vec<&'b Expr>) {
    let go = |x: &'b Expr, out: &mut Vec<&'b Expr>| calls_in_expr(env, x, out);
    // Arguments before the call: p4c's visitors are post-order.
    match &e.kind {
        ExprKind::Call { func, args, .. } => {
            go(func, out);
            for a in args {
                go(&a.value, out);
            }
            out.push(e);
        }
        ExprKind::Mux(c, a, b) => match const_bool(env, c) {
            Some(true) => go(a, out),
            Some(false) => go(b, out),
            None => {
                go(c, out);
                go(a, out);
                go(b, out);
            }
        },
        ExprKind::Binary(op @ (BinOp::And | BinOp::Or), a, b) => {
            go(a, out);
            if const_bool(env, a) != Some(*op == BinOp::Or) {
                go(b, out);
            }
        }
        ExprKind::Member(a, _) | ExprKind::Unary(_, a) | ExprKind::Cast(_, a) => go(a, out),
        ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
            go(a, out);
            go(b, out);
        }
        ExprKind::Slice(a, b, c) => {
            go(a, out);
            go(b, out);
            go(c, out);
        }
        ExprKind::List(l) => l.iter().for_each(|x| go(x, out)),
        ExprKind::StructInit(l) => l.iter().for_each(|(_, x)| go(x, out)),
        _ => {}
    }
}

/// The value of a condition p4c's constant folding decides.
fn const_bool(env: &TypeEnv, e: &Expr) -> Option<bool> {
    match env.eval_const(e, None, &|_| None) {
        Ok(Value::Bool(b)) => Some(b),
        _ => None,
    }
}

/// `name(...)` → `name`.
fn called_name(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::Call { func, .. } => match &func.kind {
            ExprKind::Name { id, .. } => Some(&id.name),
            _ => None,
        },
        _ => None,
    }
}

/// `x.apply(...)` → `x`.
fn applied_name(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::Call { func, .. } => match &func.kind {
            ExprKind::Member(base, m) if m.name == "apply" => match &base.kind {
                ExprKind::Name { id, .. } => Some(&id.name),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

impl<'a> Walk<'a> {
    fn annotations(&self, anns: &[Annotation]) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for a in anns {
            if matches!(a.name.name.as_str(), "name" | "id" | "brief" | "description") {
                continue;
            }
            let text = self
                .sources
                .get(a.span.file)
                .and_then(|s| s.text.get(a.span.start as usize..a.span.end as usize))
                .ok_or_else(|| Diagnostic::new(a.span, "annotation text not found"))?;
            if text.contains('[') && !text.contains('(') {
                return Err(refuse(a.span, "a structured annotation"));
            }
            out.push(text.to_string());
        }
        Ok(out)
    }

    fn touch_type_info(&mut self) {
        self.type_info.get_or_insert_with(TypeInfo::default);
    }

    fn top_control(&mut self, c: &'a ControlDecl) -> Result<()> {
        // p4c localises the top-level actions a control uses into it, in
        // front of its own declarations, in order of first use.
        let mut globals: Vec<(String, &'a ActionDecl, bool)> = Vec::new();
        let start = self.actions.len();
        self.instance(c, &c.name.name, &[], &mut globals, 0)?;
        let mut front = Vec::new();
        for (name, a, direct) in globals {
            front.push(self.action_out(&name, a, direct)?);
        }
        self.actions.splice(start..start, front);
        Ok(())
    }

    fn action_out(&mut self, name: &str, a: &'a ActionDecl, direct: bool) -> Result<ActionOut> {
        let mut params = Vec::new();
        if !direct {
            let kept: Vec<&crate::ast::Param> =
                a.params.iter().filter(|p| matches!(p.dir, Direction::None)).collect();
            let explicit =
                kept.iter().map(|p| id_ann(&p.annotations)).collect::<Result<Vec<_>>>()?;
            let ids = field_ids(&explicit)
                .map_err(|i| Diagnostic::new(kept[i].span, "@id: zero or used twice"))?;
            for (p, id) in kept.iter().zip(ids) {
                let ty = self.env.resolve(&p.ty, &[])?;
                user_type_check(self.prog, &p.ty)?;
                let w = width(&ty).ok_or_else(|| {
                    refuse(p.ty.span, format!("an action parameter of type {ty}"))
                })?;
                params.push(Param {
                    id,
                    name: ext_name(&p.annotations, &p.name.name),
                    annotations: self.annotations(&p.annotations)?,
                    bitwidth: w as i32,
                });
            }
        }
        Ok(ActionOut {
            name: name.to_string(),
            hidden: find(&a.annotations, "hidden").is_some(),
            annotations: self.annotations(&a.annotations)?,
            params,
        })
    }

    /// A control instance: its tables, actions and externs, nested
    /// instances in place.
    fn instance(
        &mut self,
        c: &'a ControlDecl,
        prefix: &str,
        _ctor_args: &[crate::ast::Arg],
        globals: &mut Vec<(String, &'a ActionDecl, bool)>,
        depth: u32,
    ) -> Result<()> {
        self.walked += 1;
        if depth > MAX_DEPTH || self.walked > MAX_WORK {
            return Err(refuse(c.span, "control instances nested this deeply or this many"));
        }
        if !c.type_params.is_empty() {
            return Err(refuse(c.span, "a generic control"));
        }
        let mut vars = HashMap::new();
        for p in &c.params {
            vars.insert(p.name.name.clone(), self.env.resolve(&p.ty, &[])?);
        }
        let mut inst =
            Inst { prefix: prefix.to_string(), decl: c, vars, local_actions: HashMap::new() };
        for l in &c.locals {
            match l {
                Local::Var(v) => {
                    if let Ok(t) = self.env.resolve(&v.ty, &[]) {
                        inst.vars.insert(v.name.name.clone(), t);
                    }
                }
                Local::Const(k) => {
                    if let Ok(t) = self.env.resolve(&k.ty, &[]) {
                        inst.vars.insert(k.name.name.clone(), t);
                    }
                }
                Local::Action(a) => {
                    let q = qualify(prefix, &ext_name(&a.annotations, &a.name.name));
                    inst.local_actions.insert(a.name.name.clone(), q);
                }
                _ => {}
            }
        }
        // What the body uses.
        let mut body_calls = Vec::new();
        calls_in_block(&self.env, &c.apply, &mut body_calls);
        let applied: HashSet<&str> = body_calls.iter().filter_map(|e| applied_name(e)).collect();
        let direct_actions: HashSet<&str> =
            body_calls.iter().filter_map(|e| called_name(e)).collect();
        let mut used = HashSet::new();
        names_in_block(&c.apply, &mut used);
        for l in &c.locals {
            match l {
                Local::Action(a) => names_in_block(&a.body, &mut used),
                Local::Instance(i) => {
                    for a in &i.args {
                        names_in_expr(&a.value, &mut used);
                    }
                }
                Local::Table(t) => {
                    for p in &t.props {
                        if let TableProp::Other { value, .. } = p {
                            names_in_expr(value, &mut used);
                        }
                    }
                }
                _ => {}
            }
        }
        let local_names: HashSet<&str> = c
            .locals
            .iter()
            .map(|l| match l {
                Local::Instance(i) => i.name.name.as_str(),
                Local::Table(t) => t.name.name.as_str(),
                Local::Action(a) => a.name.name.as_str(),
                Local::Var(v) => v.name.name.as_str(),
                Local::Const(k) => k.name.name.as_str(),
                Local::ValueSet { name, .. } => name.name.as_str(),
            })
            .chain(c.params.iter().chain(&c.ctor_params).map(|p| p.name.name.as_str()))
            .collect();
        // `C.apply()` on a control type instantiates it as `C`.
        let mut seen = HashSet::new();
        for e in &body_calls {
            if let Some(n) = applied_name(e) {
                if local_names.contains(n) || !seen.insert(n) {
                    continue;
                }
                if let Some(cc) = self.controls.get(n).copied() {
                    self.instance(cc, &qualify(prefix, n), &[], globals, depth + 1)?;
                }
            }
        }
        // Tables (and the actions they use) first fix which actions live.
        let mut live_local: Vec<(&str, bool)> = Vec::new();
        let use_action = |name: &str,
                          direct: bool,
                          this: &Self,
                          live: &mut Vec<(&'a str, bool)>,
                          globals: &mut Vec<(String, &'a ActionDecl, bool)>|
         -> bool {
            if let Some(Local::Action(a)) =
                c.locals.iter().find(|l| matches!(l, Local::Action(a) if a.name.name == name))
            {
                match live.iter_mut().find(|(n, _)| *n == a.name.name) {
                    Some(e) => e.1 |= direct,
                    None => live.push((a.name.name.as_str(), direct)),
                }
                return true;
            }
            if let Some(a) = this.global_actions.get(name).copied() {
                let q = ext_name(&a.annotations, &a.name.name);
                let q = q.strip_prefix('.').unwrap_or(&q).to_string();
                match globals.iter_mut().find(|(n, _, _)| *n == q) {
                    Some(e) => e.2 |= direct,
                    None => globals.push((q, a, direct)),
                }
                return true;
            }
            false
        };
        for l in &c.locals {
            if let Local::Table(t) = l {
                if !applied.contains(t.name.name.as_str()) {
                    continue;
                }
                for r in table_action_refs(t) {
                    if !use_action(&r.name.name, false, self, &mut live_local, globals) {
                        return Err(Diagnostic::new(
                            r.name.span,
                            format!("no action `{}`", r.name.name),
                        ));
                    }
                }
                if !t.props.iter().any(|p| matches!(p, TableProp::DefaultAction { .. })) {
                    use_action("NoAction", false, self, &mut live_local, globals);
                }
            }
        }
        for e in &body_calls {
            if let Some(n) = called_name(e) {
                if direct_actions.contains(n) && !self.extern_fns.contains(n) {
                    use_action(n, true, self, &mut live_local, globals);
                }
            }
        }
        // Declarations in order.
        for l in &c.locals {
            match l {
                Local::Action(a) => {
                    if let Some((_, direct)) = live_local.iter().find(|(n, _)| *n == a.name.name) {
                        let q = qualify(prefix, &ext_name(&a.annotations, &a.name.name));
                        self.syms.add(prefix::ACTION, &q, id_ann(&a.annotations)?, a.span)?;
                        let out = self.action_out(&q, a, *direct)?;
                        self.actions.push(out);
                    }
                }
                Local::Table(t) if applied.contains(t.name.name.as_str()) => {
                    self.table(t, &inst)?;
                }
                Local::Instance(i)
                    if used.contains(&i.name.name) || applied.contains(i.name.name.as_str()) =>
                {
                    self.local_instance(i, &inst, globals, depth)?;
                }
                Local::ValueSet { span, .. } => return Err(refuse(*span, "a value_set")),
                _ => {}
            }
        }
        // Global actions are symbols too (p4c adds them as localised).
        for (q, a, _) in globals.iter() {
            self.syms.add(prefix::ACTION, q, id_ann(&a.annotations)?, a.span)?;
        }
        // Extern function calls: digests, and type_info's presence.
        let mut calls = body_calls.clone();
        for l in &c.locals {
            if let Local::Action(a) = l {
                if live_local.iter().any(|(n, _)| *n == a.name.name) {
                    self.calls_through(&a.body, &mut calls, 0);
                }
            }
        }
        for (_, a, _) in globals.iter() {
            self.calls_through(&a.body, &mut calls, 0);
        }
        for e in calls {
            let Some(n) = called_name(e) else { continue };
            if !self.extern_fns.contains(n) {
                continue;
            }
            self.touch_type_info();
            if n == "digest" {
                self.digest(e, &inst)?;
            }
        }
        Ok(())
    }

    /// Calls in `b` and in the bodies of the actions and functions it
    /// calls (p4c inlines those).
    fn calls_through(&self, b: &'a Block, out: &mut Vec<&'a Expr>, depth: u32) {
        let mut here = Vec::new();
        calls_in_block(&self.env, b, &mut here);
        for e in here {
            out.push(e);
            if depth >= MAX_DEPTH || out.len() > MAX_WORK {
                continue;
            }
            if let Some(n) = called_name(e) {
                let body = self.prog.decls.iter().find_map(|d| match d {
                    Decl::Function(f) if f.name.name == n => Some(&f.body),
                    Decl::Action(a) if a.name.name == n => Some(&a.body),
                    _ => None,
                });
                if let Some(body) = body {
                    self.calls_through(body, out, depth + 1);
                }
            }
        }
    }

    fn local_instance(
        &mut self,
        i: &'a Instantiation,
        inst: &Inst<'a>,
        globals: &mut Vec<(String, &'a ActionDecl, bool)>,
        depth: u32,
    ) -> Result<()> {
        let TypeKind::Named { name: ty, args: targs, .. } = &i.ty.kind else {
            return Ok(());
        };
        let q = qualify(&inst.prefix, &ext_name(&i.annotations, &i.name.name));
        if let Some(cc) = self.controls.get(&ty.name).copied() {
            return self.instance(cc, &q, &i.args, globals, depth + 1);
        }
        if self
            .prog
            .decls
            .iter()
            .any(|d| matches!(d, Decl::ExternObject(e) if e.name.name == ty.name))
        {
            self.touch_type_info();
        }
        let anns = self.annotations(&i.annotations)?;
        let id = id_ann(&i.annotations)?;
        let arg = |k: usize| i.args.get(k).map(|a| &a.value);
        match ty.name.as_str() {
            "counter" | "meter" => {
                let is_counter = ty.name == "counter";
                let (Some(size), Some(kind)) = (arg(0), arg(1)) else {
                    return Err(Diagnostic::new(
                        i.span,
                        format!("{} takes a size and a type", ty.name),
                    ));
                };
                let size = self.const_u64(size)? as i64;
                let unit = unit_of(kind)?;
                let p = if is_counter { prefix::COUNTER } else { prefix::METER };
                self.syms.add(p, &q, id, i.span)?;
                self.externs.push(if is_counter {
                    ExternOut::Counter { direct: false, name: q, annotations: anns, unit, size }
                } else {
                    ExternOut::Meter { direct: false, name: q, annotations: anns, unit, size }
                });
            }
            "direct_counter" | "direct_meter" => {
                let is_counter = ty.name == "direct_counter";
                let Some(kind) = arg(0) else {
                    return Err(Diagnostic::new(i.span, format!("{} takes a type", ty.name)));
                };
                let unit = unit_of(kind)?;
                let p = if is_counter { prefix::DIRECT_COUNTER } else { prefix::DIRECT_METER };
                self.syms.add(p, &q, id, i.span)?;
                self.externs.push(if is_counter {
                    ExternOut::Counter { direct: true, name: q, annotations: anns, unit, size: 0 }
                } else {
                    ExternOut::Meter { direct: true, name: q, annotations: anns, unit, size: 0 }
                });
            }
            "register" => {
                let (Some(t), Some(size)) = (targs.first(), arg(0)) else {
                    return Err(Diagnostic::new(i.span, "register takes a type and a size"));
                };
                if targs.len() > 1 {
                    return Err(refuse(i.ty.span, "a register with an index type"));
                }
                user_type_check(self.prog, t)?;
                let ty = self.env.resolve(t, &[])?;
                let spec = self.type_spec(&ty, t.span)?;
                let size = self.const_u64(size)?;
                let size = i32::try_from(size)
                    .map_err(|_| Diagnostic::new(i.span, "register size over 2^31"))?;
                self.syms.add(prefix::REGISTER, &q, id, i.span)?;
                self.externs.push(ExternOut::Register { name: q, annotations: anns, spec, size });
            }
            "action_profile" | "action_selector" => {
                return Err(refuse(i.span, format!("{} (action profiles)", ty.name)))
            }
            _ => {}
        }
        Ok(())
    }

    fn const_u64(&self, e: &Expr) -> Result<u64> {
        let v = self.env.eval_const(e, None, &|_| None)?;
        v.to_u64().ok_or_else(|| Diagnostic::new(e.span, "expected a non-negative constant"))
    }

    fn digest(&mut self, call: &Expr, inst: &Inst<'a>) -> Result<()> {
        let ExprKind::Call { type_args, args, .. } = &call.kind else { return Ok(()) };
        let ty = match (type_args.first(), args.get(1)) {
            (Some(t), _) => {
                user_type_check(self.prog, t)?;
                self.env.resolve(t, &[])?
            }
            (None, Some(a)) => self
                .type_of(&a.value, inst)
                .ok_or_else(|| refuse(a.span, "a digest whose data's type is not named"))?,
            _ => return Err(Diagnostic::new(call.span, "digest takes a receiver and data")),
        };
        let name = match &ty {
            Ty::Struct(a) | Ty::Header(a) => self.agg_ext_name(&a.name),
            _ => return Err(refuse(call.span, "a digest of a type other than a struct or header")),
        };
        let spec = self.type_spec(&ty, call.span)?;
        self.syms.add(prefix::DIGEST, &name, None, call.span)?;
        if !self.digests.iter().any(|(n, _)| *n == name) {
            self.digests.push((name, spec));
        }
        Ok(())
    }

    fn agg_ext_name(&self, name: &str) -> String {
        self.prog
            .decls
            .iter()
            .find_map(|d| match d {
                Decl::Aggregate(a) if a.name.name == name => Some(ext_name(&a.annotations, name)),
                _ => None,
            })
            .unwrap_or_else(|| name.to_string())
    }

    /// A type's `P4DataTypeSpec`, recording structs and headers in
    /// type_info.
    fn type_spec(&mut self, ty: &Ty, span: Span) -> Result<TypeSpec> {
        self.type_spec_depth(ty, span, 0)
    }

    fn type_spec_depth(&mut self, ty: &Ty, span: Span, depth: u32) -> Result<TypeSpec> {
        if depth > MAX_DEPTH {
            return Err(refuse(span, "types nested this deeply"));
        }
        Ok(match ty {
            Ty::Bits { signed: false, width } => TypeSpec::Bit(*width),
            Ty::Bits { signed: true, width } => TypeSpec::Int(*width),
            Ty::Varbit(w) => TypeSpec::Varbit(*w),
            Ty::Bool => TypeSpec::Bool,
            Ty::Error => TypeSpec::Error,
            Ty::Struct(a) | Ty::Header(a) => {
                let header = matches!(ty, Ty::Header(_));
                let name = self.agg_ext_name(&a.name);
                let mut members = Vec::new();
                for (f, t) in &a.fields {
                    let s = self.type_spec_depth(t, span, depth + 1)?;
                    if header
                        && !matches!(s, TypeSpec::Bit(_) | TypeSpec::Int(_) | TypeSpec::Varbit(_))
                    {
                        return Err(refuse(
                            span,
                            format!("header field {f} of type {t} in P4Info"),
                        ));
                    }
                    members.push((f.clone(), s));
                }
                let ti = self.type_info.get_or_insert_with(TypeInfo::default);
                if header {
                    ti.headers.insert(name.clone(), members);
                    TypeSpec::Header(name)
                } else {
                    ti.structs.insert(name.clone(), members);
                    TypeSpec::Struct(name)
                }
            }
            _ => return Err(refuse(span, format!("the type {ty} in P4Info"))),
        })
    }

    fn table(&mut self, t: &'a TableDecl, inst: &Inst<'a>) -> Result<()> {
        self.touch_type_info();
        let name = qualify(&inst.prefix, &ext_name(&t.annotations, &t.name.name));
        self.syms.add(prefix::TABLE, &name, id_ann(&t.annotations)?, t.span)?;
        let mut out = TableOut {
            name,
            hidden: find(&t.annotations, "hidden").is_some(),
            annotations: self.annotations(&t.annotations)?,
            match_fields: Vec::new(),
            refs: Vec::new(),
            default: "NoAction".to_string(),
            default_const: false,
            default_args: Vec::new(),
            direct: Vec::new(),
            size: 1024,
            timeout: false,
            is_const: false,
            has_entries: false,
        };
        let resolve = |n: &str| -> String {
            match inst.local_actions.get(n) {
                Some(q) => q.clone(),
                None => match self.global_actions.get(n) {
                    Some(a) => {
                        let q = ext_name(&a.annotations, &a.name.name);
                        q.strip_prefix('.').unwrap_or(&q).to_string()
                    }
                    None => n.to_string(),
                },
            }
        };
        let mut has_default = false;
        for p in &t.props {
            match p {
                TableProp::Key { elems, .. } => {
                    let explicit =
                        elems.iter().map(|k| id_ann(&k.annotations)).collect::<Result<Vec<_>>>()?;
                    let ids = field_ids(&explicit)
                        .map_err(|i| Diagnostic::new(elems[i].span, "@id: zero or used twice"))?;
                    for (k, id) in elems.iter().zip(ids) {
                        if let Some(f) = self.match_field(k, id, inst)? {
                            out.match_fields.push(f);
                        }
                    }
                }
                TableProp::Actions { actions, .. } => {
                    for r in actions {
                        let tonly = find(&r.annotations, "tableonly").is_some();
                        let donly = find(&r.annotations, "defaultonly").is_some();
                        if tonly && donly {
                            return Err(Diagnostic::new(
                                r.span,
                                "an action both @tableonly and @defaultonly",
                            ));
                        }
                        out.refs.push(RefOut {
                            action: resolve(&r.name.name),
                            scope: if tonly {
                                Scope::TableOnly
                            } else if donly {
                                Scope::DefaultOnly
                            } else {
                                Scope::TableAndDefault
                            },
                            annotations: self.annotations(&r.annotations)?,
                        });
                    }
                }
                TableProp::DefaultAction { action, is_const, .. } => {
                    has_default = true;
                    out.default = resolve(&action.name.name);
                    out.default_const = *is_const;
                    out.default_args = self.default_args(action, inst)?;
                }
                TableProp::Entries { entries, is_const, .. } => {
                    out.is_const = *is_const;
                    out.has_entries = !entries.is_empty();
                }
                TableProp::Other { name, value, span, .. } => match name.name.as_str() {
                    "size" => out.size = self.const_u64(value)? as i64,
                    "support_timeout" => {
                        out.timeout = matches!(value.kind, ExprKind::Bool(true));
                    }
                    "counters" | "meters" => {
                        let ExprKind::Name { id, .. } = &value.kind else {
                            return Err(refuse(
                                *span,
                                format!("`{}` constructed in place", name.name),
                            ));
                        };
                        let p = if name.name == "counters" {
                            prefix::DIRECT_COUNTER
                        } else {
                            prefix::DIRECT_METER
                        };
                        out.direct
                            .push((p, qualify(&inst.prefix, &self.local_ext(inst, &id.name))));
                    }
                    "implementation" => {
                        return Err(refuse(*span, "`implementation` (action profiles)"))
                    }
                    _ => {}
                },
            }
        }
        if !has_default && !out.refs.iter().any(|r| r.action == "NoAction") {
            out.refs.push(RefOut {
                action: "NoAction".into(),
                scope: Scope::DefaultOnly,
                annotations: vec!["@defaultonly".into()],
            });
        }
        self.tables.push(out);
        Ok(())
    }

    fn local_ext(&self, inst: &Inst<'a>, name: &str) -> String {
        inst.decl
            .locals
            .iter()
            .find_map(|l| match l {
                Local::Instance(i) if i.name.name == name => Some(ext_name(&i.annotations, name)),
                _ => None,
            })
            .unwrap_or_else(|| name.to_string())
    }

    fn default_args(&self, r: &AstRef, inst: &Inst<'a>) -> Result<Vec<(u32, Vec<u8>)>> {
        let decl = self
            .global_actions
            .get(&r.name.name)
            .copied()
            .filter(|_| !inst.local_actions.contains_key(&r.name.name))
            .or_else(|| {
                inst.decl.locals.iter().find_map(|l| match l {
                    Local::Action(a) if a.name.name == r.name.name => Some(a),
                    _ => None,
                })
            });
        let Some(a) = decl else { return Ok(Vec::new()) };
        let params: Vec<&crate::ast::Param> =
            a.params.iter().filter(|p| matches!(p.dir, Direction::None)).collect();
        // The directional parameters are bound first; the rest follow.
        let skip = a.params.len() - params.len();
        let mut out = Vec::new();
        let mut index = 0usize;
        let mut pid = 1u32;
        for arg in r.args.iter().skip(skip) {
            let Some(p) = params.get(index) else { break };
            let ty = self.env.resolve(&p.ty, &[])?;
            let Ok(v) = self.env.eval_const(&arg.value, Some(&ty), &|_| None) else {
                continue;
            };
            let Some(w) = width(&ty) else { continue };
            if w > 128 {
                return Err(refuse(arg.span, "a default action argument over 128 bits"));
            }
            let raw = match &v {
                Value::Bool(b) => *b as u128,
                Value::Bits(b) | Value::Signed(b) => match b.to_u128() {
                    Some(x) => x,
                    None => {
                        return Err(refuse(arg.span, "a default action argument over 128 bits"))
                    }
                },
                _ => continue,
            };
            if matches!(v, Value::Signed(_)) && w > 0 && (raw >> (w - 1)) & 1 == 1 {
                return Err(refuse(arg.span, "a negative default action argument"));
            }
            let n = w.div_ceil(8) as usize;
            let bytes: Vec<u8> =
                (0..n).rev().map(|i| if i < 16 { (raw >> (8 * i)) as u8 } else { 0 }).collect();
            let id = id_ann(&p.annotations)?.unwrap_or(pid);
            out.push((id, bytes));
            index += 1;
            pid += 1;
        }
        Ok(out)
    }

    fn match_field(&self, k: &KeyElem, id: u32, inst: &Inst<'a>) -> Result<Option<MatchField>> {
        let mt = match k.match_kind.name.as_str() {
            "exact" => MatchType::Exact,
            "lpm" => MatchType::Lpm,
            "ternary" => MatchType::Ternary,
            "range" => MatchType::Range,
            "optional" => MatchType::Optional,
            "selector" => return Ok(None),
            other => MatchType::Other(other.to_string()),
        };
        let name = match find(&k.annotations, "name").and_then(|a| a.args.first()) {
            Some(n) => n.clone(),
            None => self.key_name(&k.expr, inst, 0).ok_or_else(|| {
                Diagnostic::new(k.expr.span, "complex key expression requires a @name annotation")
            })?,
        };
        let ty = self
            .type_of(&k.expr, inst)
            .ok_or_else(|| refuse(k.expr.span, "a key expression whose type P4Info cannot tell"))?;
        let w = width(&ty).ok_or_else(|| refuse(k.expr.span, format!("a key of type {ty}")))?;
        Ok(Some(MatchField {
            id,
            name,
            annotations: self.annotations(&k.annotations)?,
            bitwidth: w as i32,
            match_type: mt,
        }))
    }

    /// p4c's key name (frontends' `TableKeyNames`).
    fn key_name(&self, e: &Expr, inst: &Inst<'a>, depth: u32) -> Option<String> {
        if depth > MAX_DEPTH {
            return None;
        }
        let d = depth + 1;
        Some(match &e.kind {
            ExprKind::Name { id, dot_prefix } => {
                if *dot_prefix {
                    format!(".{}", id.name)
                } else {
                    id.name.clone()
                }
            }
            ExprKind::Member(b, m) => {
                let comp = if m.name == "isValid"
                    && matches!(self.type_of(b, inst), Some(Ty::Header(_) | Ty::HeaderUnion(_)))
                {
                    "$valid$".to_string()
                } else {
                    m.name.clone()
                };
                format!("{}.{comp}", self.key_name(b, inst, d)?)
            }
            ExprKind::Call { func, args, .. } if args.is_empty() => {
                let m = self.key_name(func, inst, d)?;
                if !m.ends_with("$valid$") {
                    return None;
                }
                m
            }
            ExprKind::Index(a, i) => {
                format!("{}[{}]", self.key_name(a, inst, d)?, self.key_name(i, inst, d)?)
            }
            ExprKind::Int { .. } => {
                self.env.eval_const(e, None, &|_| None).ok()?.to_u64()?.to_string()
            }
            ExprKind::Slice(a, h, l) => {
                let h = self.env.eval_const(h, None, &|_| None).ok()?.to_u64()?;
                let l = self.env.eval_const(l, None, &|_| None).ok()?.to_u64()?;
                format!("{}[{h}:{l}]", self.key_name(a, inst, d)?)
            }
            ExprKind::Binary(BinOp::BitAnd, a, b) => {
                format!("{} & {}", self.key_name(a, inst, d)?, self.key_name(b, inst, d)?)
            }
            _ => return None,
        })
    }

    /// The type of a key or digest expression (the forms keys use).
    fn type_of(&self, e: &Expr, inst: &Inst<'a>) -> Option<Ty> {
        self.type_of_depth(e, inst, 0)
    }

    fn type_of_depth(&self, e: &Expr, inst: &Inst<'a>, depth: u32) -> Option<Ty> {
        if depth > MAX_DEPTH {
            return None;
        }
        let d = depth + 1;
        match &e.kind {
            ExprKind::Name { id, .. } => inst
                .vars
                .get(&id.name)
                .cloned()
                .or_else(|| self.env.consts.get(&id.name).map(|(t, _)| t.clone())),
            ExprKind::Member(b, m) => {
                if let Some(Ok(v)) = self.env.type_member(b, &m.name) {
                    return value_type(&v);
                }
                match self.type_of_depth(b, inst, d)? {
                    Ty::Header(a) | Ty::Struct(a) | Ty::HeaderUnion(a) => a.field(&m.name).cloned(),
                    Ty::Stack(el, _) => match m.name.as_str() {
                        "next" | "last" => Some(*el),
                        "lastIndex" | "size" => Some(Ty::Bits { signed: false, width: 32 }),
                        _ => None,
                    },
                    _ => None,
                }
            }
            ExprKind::Call { func, .. } => match &func.kind {
                ExprKind::Member(_, m) if m.name == "isValid" => Some(Ty::Bool),
                _ => None,
            },
            ExprKind::Index(a, _) => match self.type_of_depth(a, inst, d)? {
                Ty::Stack(el, _) => Some(*el),
                _ => None,
            },
            ExprKind::Slice(_, h, l) => {
                let h = self.env.eval_const(h, None, &|_| None).ok()?.to_u64()?;
                let l = self.env.eval_const(l, None, &|_| None).ok()?.to_u64()?;
                let width = u32::try_from(h.checked_sub(l)? + 1).ok()?;
                Some(Ty::Bits { signed: false, width })
            }
            ExprKind::Cast(t, _) => self.env.resolve(t, &[]).ok(),
            ExprKind::Int { width: Some((signed, w)), .. } => {
                Some(Ty::Bits { signed: *signed, width: *w })
            }
            ExprKind::Bool(_) => Some(Ty::Bool),
            ExprKind::Binary(op, a, b) => match op {
                BinOp::Eq
                | BinOp::Ne
                | BinOp::Lt
                | BinOp::Le
                | BinOp::Gt
                | BinOp::Ge
                | BinOp::And
                | BinOp::Or => Some(Ty::Bool),
                BinOp::Concat => {
                    let (x, y) = (self.type_of_depth(a, inst, d)?, self.type_of_depth(b, inst, d)?);
                    let (Ty::Bits { signed, width: wa }, Ty::Bits { width: wb, .. }) = (x, y)
                    else {
                        return None;
                    };
                    Some(Ty::Bits { signed, width: wa.checked_add(wb)? })
                }
                BinOp::Shl | BinOp::Shr => self.type_of_depth(a, inst, d),
                _ => match self.type_of_depth(a, inst, d) {
                    Some(t @ Ty::Bits { .. }) => Some(t),
                    _ => self.type_of_depth(b, inst, d),
                },
            },
            ExprKind::Unary(_, a) => self.type_of_depth(a, inst, d),
            _ => None,
        }
    }

    fn controller_headers_symbols(&mut self) -> Result<()> {
        for d in &self.prog.decls {
            if let Decl::Aggregate(a) = d {
                if a.kind == AggregateKind::Header
                    && find(&a.annotations, "controller_header").is_some()
                {
                    let name = ext_name(&a.annotations, &a.name.name);
                    self.syms.add(
                        prefix::CONTROLLER_HEADER,
                        &name,
                        id_ann(&a.annotations)?,
                        a.span,
                    )?;
                }
            }
        }
        Ok(())
    }

    fn controller_headers(&self) -> Result<Vec<ControllerPacketMetadata>> {
        let mut out = Vec::new();
        for d in &self.prog.decls {
            let Decl::Aggregate(a) = d else { continue };
            let Some(ch) = find(&a.annotations, "controller_header") else { continue };
            if a.kind != AggregateKind::Header || find(&a.annotations, "hidden").is_some() {
                continue;
            }
            let Some(cname) = ch.args.first() else {
                return Err(Diagnostic::new(ch.span, "@controller_header takes a name"));
            };
            let name = ext_name(&a.annotations, &a.name.name);
            let explicit =
                a.fields.iter().map(|f| id_ann(&f.annotations)).collect::<Result<Vec<_>>>()?;
            let ids = field_ids(&explicit)
                .map_err(|i| Diagnostic::new(a.fields[i].span, "@id: zero or used twice"))?;
            let mut metadata = Vec::new();
            for (f, id) in a.fields.iter().zip(ids) {
                if find(&f.annotations, "hidden").is_some() {
                    continue;
                }
                user_type_check(self.prog, &f.ty)?;
                let ty = self.env.resolve(&f.ty, &[])?;
                let Ty::Bits { width: w, .. } = ty else {
                    return Err(refuse(
                        f.ty.span,
                        format!("a controller header field of type {ty}"),
                    ));
                };
                metadata.push(Param {
                    id,
                    name: ext_name(&f.annotations, &f.name.name),
                    annotations: self.annotations(&f.annotations)?,
                    bitwidth: w as i32,
                });
            }
            let mut preamble = self.syms.preamble(
                prefix::CONTROLLER_HEADER,
                &name,
                self.annotations(&a.annotations)?,
            );
            preamble.name = cname.clone();
            preamble.alias = cname.clone();
            out.push(ControllerPacketMetadata { preamble, metadata });
        }
        Ok(out)
    }

    fn finish(self) -> Result<P4Info> {
        let s = &self.syms;
        let mut info = P4Info { arch: "v1model".into(), ..Default::default() };
        let mut seen = HashSet::new();
        for a in &self.actions {
            let id = s.id(prefix::ACTION, &a.name);
            if a.hidden || !seen.insert(id) {
                continue;
            }
            info.actions.push(Action {
                preamble: s.preamble(prefix::ACTION, &a.name, a.annotations.clone()),
                params: a.params.clone(),
            });
        }
        for t in &self.tables {
            let default_id = s.id(prefix::ACTION, &t.default);
            let mut direct_ids = Vec::new();
            for (p, n) in &t.direct {
                direct_ids.push(s.id(*p, n));
            }
            let table_id = s.id(prefix::TABLE, &t.name);
            // Direct resources come with their table.
            for (p, n) in &t.direct {
                for e in &self.externs {
                    match e {
                        ExternOut::Counter { direct: true, name, annotations, unit, .. }
                            if *p == prefix::DIRECT_COUNTER && name == n =>
                        {
                            info.direct_counters.push(DirectCounter {
                                preamble: s.preamble(*p, name, annotations.clone()),
                                unit: *unit,
                                direct_table_id: table_id,
                            })
                        }
                        ExternOut::Meter { direct: true, name, annotations, unit, .. }
                            if *p == prefix::DIRECT_METER && name == n =>
                        {
                            info.direct_meters.push(DirectMeter {
                                preamble: s.preamble(*p, name, annotations.clone()),
                                unit: *unit,
                                direct_table_id: table_id,
                            })
                        }
                        _ => {}
                    }
                }
            }
            if t.hidden {
                continue;
            }
            info.tables.push(Table {
                preamble: s.preamble(prefix::TABLE, &t.name, t.annotations.clone()),
                match_fields: t.match_fields.clone(),
                action_refs: t
                    .refs
                    .iter()
                    .map(|r| ActionRef {
                        id: s.id(prefix::ACTION, &r.action),
                        scope: r.scope,
                        annotations: r.annotations.clone(),
                    })
                    .collect(),
                const_default_action_id: if t.default_const { default_id } else { 0 },
                initial_default_action: Some(TableActionCall {
                    action_id: default_id,
                    arguments: t.default_args.clone(),
                }),
                direct_resource_ids: direct_ids,
                size: t.size,
                idle_timeout_notify: t.timeout,
                is_const_table: t.is_const,
                has_initial_entries: t.has_entries,
            });
        }
        for e in &self.externs {
            match e {
                ExternOut::Counter { direct: false, name, annotations, unit, size } => {
                    info.counters.push(Counter {
                        preamble: s.preamble(prefix::COUNTER, name, annotations.clone()),
                        unit: *unit,
                        size: *size,
                    })
                }
                ExternOut::Meter { direct: false, name, annotations, unit, size } => {
                    info.meters.push(Meter {
                        preamble: s.preamble(prefix::METER, name, annotations.clone()),
                        unit: *unit,
                        size: *size,
                    })
                }
                ExternOut::Register { name, annotations, spec, size } => {
                    info.registers.push(Register {
                        preamble: s.preamble(prefix::REGISTER, name, annotations.clone()),
                        type_spec: spec.clone(),
                        size: *size,
                    })
                }
                _ => {}
            }
        }
        info.controller_packet_metadata = self.controller_headers()?;
        for (name, spec) in &self.digests {
            info.digests.push(Digest {
                preamble: s.preamble(prefix::DIGEST, name, Vec::new()),
                type_spec: spec.clone(),
            });
        }
        info.type_info = self.type_info;
        Ok(info)
    }
}

fn table_action_refs(t: &TableDecl) -> Vec<&AstRef> {
    let mut out = Vec::new();
    for p in &t.props {
        match p {
            TableProp::Actions { actions, .. } => out.extend(actions.iter()),
            TableProp::DefaultAction { action, .. } => out.push(action),
            TableProp::Entries { entries, .. } => out.extend(entries.iter().map(|e| &e.action)),
            _ => {}
        }
    }
    out
}

/// `CounterType.packets` and friends.
fn unit_of(e: &Expr) -> Result<Unit> {
    let ExprKind::Member(_, m) = &e.kind else {
        return Err(Diagnostic::new(e.span, "expected CounterType.X or MeterType.X"));
    };
    Ok(match m.name.as_str() {
        "packets" => Unit::Packets,
        "bytes" => Unit::Bytes,
        "packets_and_bytes" => Unit::Both,
        other => {
            return Err(Diagnostic::new(m.span, format!("unknown counter or meter type `{other}`")))
        }
    })
}

/// The width P4Info gives a value of this type.
fn width(ty: &Ty) -> Option<u32> {
    match ty {
        Ty::Bits { width, .. } => Some(*width),
        Ty::Bool => Some(1),
        _ => None,
    }
}

fn value_type(v: &Value) -> Option<Ty> {
    match v {
        Value::Bool(_) => Some(Ty::Bool),
        _ => None,
    }
}

/// P4Info names user-defined types (`type`, enums) by `type_name`; sluice
/// does not produce that yet, so such types are refused.
fn user_type_check(prog: &crate::ast::Program, t: &Type) -> Result<()> {
    let TypeKind::Named { name, .. } = &t.kind else { return Ok(()) };
    for d in &prog.decls {
        match d {
            Decl::Typedef { name: n, new_type: true, .. } if n.name == name.name => {
                return Err(refuse(
                    t.span,
                    format!("the user-defined type `{}` in P4Info", name.name),
                ))
            }
            Decl::Enum(e) if e.name.name == name.name => {
                return Err(refuse(t.span, format!("the enum `{}` in P4Info", name.name)))
            }
            _ => {}
        }
    }
    Ok(())
}
