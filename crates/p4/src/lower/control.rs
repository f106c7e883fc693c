//! P4 controls compiled into the core's control graph
//! ([`sluice_core::graph`]).
//!
//! # What
//! [`Builder::control`] turns a control's `apply` block into graph
//! nodes: `t.apply()` is a [`Node::Apply`] of the table;
//! `if (t.apply().hit)` / `.miss` use [`Next::Hit`];
//! `switch (t.apply().action_run)` uses [`Next::Action`]; an `if` on any
//! other condition is a synthetic table computing the condition into a
//! scratch bit ([`super::action::Gen`]) followed by a [`Node::Branch`] on
//! it; straight-line code between applies (assignments, action calls,
//! `if`s without applies) is a synthetic table with one catch-all entry
//! whose op is the code's key program; `exit` (and `return`) goes to the
//! control's end; `c.apply(...)` of a nested control (a local instance
//! or one passed to the constructor) is lowered in place; `switch` on a
//! value and table applies inside expressions are lowered by [`flow`].
//!
//! # Basic design
//! Nodes are built backwards: a statement list is lowered from its last
//! statement, each piece given the node that follows it, so every edge
//! points to a node built before and the graph is acyclic by
//! construction. A table miss runs the table's default action: every
//! applied P4 table gets two core tables, the table itself and a
//! *default table* holding one catch-all entry that runs the current
//! default action; the table's miss edge goes to a node applying the
//! default table, which then goes where a miss goes. `.hit` therefore
//! sees the real lookup's miss, and `action_run` after a miss sees the
//! default action (the default table's entry carries its action id).
//! Arms of an `action_run` switch list every action of the table, so
//! the walk takes `default` only after a miss.
//!
//! Locals declared anywhere in a control's `apply` block get fixed
//! scratch slots before lowering, so pieces of straight-line code split
//! by applies see the same variables.
//!
//! # Invariants
//! - At most 256 core tables (table ids are `u8`); a program needing more
//!   is refused.
//! - A nested control's `apply(args)` is inlined only when every argument
//!   is a location, no two overlap and no parameter is `out` (copy-in/
//!   copy-out is then the identity); otherwise it is refused at its
//!   span. `switch` on values and applies inside expressions are
//!   [`flow`]'s.
//! - An `exit` inside an action sets the stage's exit flag; every node
//!   after code or a table that may set it branches on the flag to the
//!   control's end.

mod flow;

use std::collections::HashMap;

use sluice_core::graph::{KeyTest, Next, Node, NodeId};
use sluice_core::keyop::{KeyProg, Slot};
use sluice_core::op::Op;

use super::action::{stmt_span, ty_t1, Bind, Gen, Roots, Scratch, T1};
use super::layout::{Layout, Root};
use super::refuse;
use crate::ast::{
    ActionDecl, Block, ControlDecl, Decl, Direction, Expr, ExprKind, Local, Stmt, SwitchLabel, UnOp,
};
use crate::coretable::KeyPlace;
use crate::diag::{Diagnostic, Result, Span};
use crate::interp::{Inst, Obj, Static};

/// What a core table of the compiled pipeline is.
#[derive(Clone, Debug)]
pub enum TabDef {
    /// The P4 table with this interpreter table index.
    Real(usize),
    /// The default action of that table.
    Default(usize),
    /// One catch-all entry running these ops.
    Fixed(Vec<Op>),
}

/// A control instance being compiled.
#[derive(Clone, Debug)]
pub struct Ctl {
    pub decl: usize,
    pub inst: usize,
    pub roots: Roots,
    pub base: Vec<(String, Bind)>,
    /// Set by an `exit` inside an action (one per pipeline stage).
    pub exit_flag: Option<sluice_core::keyop::Slot>,
}

/// A P4 table's keys in the key.
#[derive(Clone, Debug)]
pub struct TableKeys {
    pub places: Vec<KeyPlace>,
    /// Computes keys that are not plain locations into scratch slots.
    pub pre: Option<KeyProg>,
    /// The control it belongs to (index into [`Builder::ctls`]).
    pub ctl: usize,
    pub real: u8,
    pub default: u8,
    /// Whether one of its actions may `exit`.
    pub may_exit: bool,
}

pub struct Builder<'a> {
    pub s: &'a Static,
    pub l: &'a Layout,
    pub scratch: Scratch,
    pub nodes: Vec<Node>,
    pub tabs: Vec<TabDef>,
    pub ctls: Vec<Ctl>,
    pub tables: HashMap<usize, TableKeys>,
}

/// How a table's apply continues.
enum After {
    To(NodeId),
    Hit { hit: NodeId, miss: NodeId },
    Action { arms: Vec<(u32, NodeId)>, default: NodeId },
}

impl<'a> Builder<'a> {
    pub fn new(s: &'a Static, l: &'a Layout) -> Builder<'a> {
        Builder {
            s,
            l,
            scratch: Scratch::new(l),
            nodes: Vec::new(),
            tabs: Vec::new(),
            ctls: Vec::new(),
            tables: HashMap::new(),
        }
    }

    pub fn node(&mut self, n: Node) -> Result<NodeId> {
        let id = NodeId::try_from(self.nodes.len())
            .map_err(|_| Diagnostic::bare("lowering: a control graph over 65535 nodes"))?;
        self.nodes.push(n);
        Ok(id)
    }

    pub fn table(&mut self, t: TabDef, span: Span) -> Result<u8> {
        let id = u8::try_from(self.tabs.len())
            .map_err(|_| refuse(span, "a program needing more than 256 core tables"))?;
        self.tabs.push(t);
        Ok(id)
    }

    /// A node running `ops` then going to `next`.
    pub fn fixed(&mut self, ops: Vec<Op>, next: NodeId, span: Span) -> Result<NodeId> {
        let t = self.table(TabDef::Fixed(ops), span)?;
        self.node(Node::Apply { table: t, next: Next::To(next) })
    }

    pub fn control_decl(&self, decl: usize) -> Result<&'a ControlDecl> {
        match self.s.prog.decls.get(decl) {
            Some(Decl::Control(c)) => Ok(c),
            _ => Err(Diagnostic::bare("lowering: internal error: not a control")),
        }
    }

    pub fn local_actions(c: &'a ControlDecl) -> Vec<&'a ActionDecl> {
        c.locals
            .iter()
            .filter_map(|l| match l {
                Local::Action(a) => Some(a),
                _ => None,
            })
            .collect()
    }

    /// A code generator for control `ctl`.
    pub fn gen<'b>(
        s: &'b Static,
        l: &'b Layout,
        scratch: &'b mut Scratch,
        ctl: &Ctl,
    ) -> Result<Gen<'b>> {
        let c = match s.prog.decls.get(ctl.decl) {
            Some(Decl::Control(c)) => c,
            _ => return Err(Diagnostic::bare("lowering: internal error: not a control")),
        };
        let mut g = Gen::new(
            &s.env,
            l,
            &s.prog,
            scratch,
            ctl.roots.clone(),
            Builder::local_actions(c),
            ctl.base.clone(),
        );
        g.exit_flag = ctl.exit_flag;
        g.instances = super::externs::instances(s, ctl.inst);
        Ok(g)
    }

    /// Lowers control instance `inst`, continuing at `next`, `exit`
    /// going to `exit`; its start node. `roots`: what its parameters
    /// denote (`None`: a pipeline stage, `(hdr, meta, std)`).
    pub fn control(
        &mut self,
        inst: usize,
        roots: Option<Roots>,
        next: NodeId,
        exit: NodeId,
    ) -> Result<NodeId> {
        self.control_in(inst, roots, next, exit, None)
    }

    fn control_in(
        &mut self,
        inst: usize,
        roots: Option<Roots>,
        next: NodeId,
        exit: NodeId,
        exit_flag: Option<sluice_core::keyop::Slot>,
    ) -> Result<NodeId> {
        let exit_flag = match exit_flag {
            Some(f) => Some(f),
            None => self.scratch.slot(&format!("exit flag {inst}"), 1),
        };
        let Some(Inst::Block(b)) = self.s.insts.get(inst) else {
            return Err(Diagnostic::bare("lowering: internal error: not a control instance"));
        };
        let c = self.control_decl(b.decl)?;
        if !c.type_params.is_empty() {
            return Err(refuse(c.name.span, "a generic control"));
        }
        let roots: Roots = match roots {
            Some(r) => r,
            None => c
                .params
                .iter()
                .zip([Root::Headers, Root::Meta, Root::Std])
                .map(|(p, r)| (p.name.name.clone(), r, String::new()))
                .collect(),
        };
        // Constructor parameters: constants are bound as constants; an
        // instance (a control passed to the constructor) is found by
        // `nested` through the instance's constructor values.
        let mut base: Vec<(String, Bind)> = Vec::new();
        for (name, v) in &b.ctor {
            if !matches!(v, crate::value::Value::Opaque { .. }) {
                base.push((name.clone(), Bind::Const(v.clone())));
            }
        }
        let mut init: Vec<Stmt> = Vec::new();
        for loc in &c.locals {
            match loc {
                Local::Const(k) => self.bind_const(k, &mut base)?,
                Local::Var(v) => {
                    init.push(Stmt::Var(v.clone()));
                    self.bind_var(v, &mut base)?;
                }
                Local::Action(_) | Local::Instance(_) | Local::Table(_) => {}
                Local::ValueSet { span, .. } => return Err(refuse(*span, "a value set")),
            }
        }
        let stmts = self.hoist_applies(inst, &c.apply.stmts)?;
        let mut pre = Vec::new();
        prescan(&stmts, &mut pre, 0);
        for s in pre {
            match s {
                Stmt::Var(v) => {
                    if base.iter().any(|(n, _)| *n == v.name.name) {
                        return Err(refuse(v.span, "a local declared twice in one control"));
                    }
                    self.bind_var(v, &mut base)?;
                }
                Stmt::Const(k) => self.bind_const(k, &mut base)?,
                _ => {}
            }
        }
        // A control instance applied again with the same arguments is the
        // same control (its tables are applied from both places).
        let ci = match self.ctls.iter().position(|x| x.inst == inst && x.roots == roots) {
            Some(ci) => ci,
            None => {
                self.ctls.push(Ctl { decl: b.decl, inst, roots, base, exit_flag });
                self.ctls.len() - 1
            }
        };
        let body = self.block(ci, &stmts, next, exit)?;
        if init.is_empty() {
            return Ok(body);
        }
        self.straight(ci, &init, body, exit, c.apply.span)
    }

    /// Binds a control's constant (a local or one declared in `apply`),
    /// evaluated with the constants bound before it.
    fn bind_const(&self, k: &crate::ast::ConstDecl, base: &mut Vec<(String, Bind)>) -> Result<()> {
        let ty = self.s.env.resolve(&k.ty, &[])?;
        let look = |n: &str| {
            base.iter().rev().find_map(|(k, b)| match b {
                Bind::Const(v) if k == n => Some(v.clone()),
                _ => None,
            })
        };
        let v = self.s.env.eval_const(&k.value, Some(&ty), &look)?;
        base.push((k.name.name.clone(), Bind::Const(v)));
        Ok(())
    }

    fn bind_var(&mut self, v: &crate::ast::VarDecl, base: &mut Vec<(String, Bind)>) -> Result<()> {
        let ty = self.s.env.resolve(&v.ty, &[])?;
        let name = format!("var {} @{}:{}", v.name.name, v.span.file, v.span.start);
        let Some(t) = ty_t1(&ty) else {
            let loc = super::action::alloc_agg(&mut self.scratch, &name, &ty, v.span)?;
            base.push((v.name.name.clone(), Bind::Agg(loc)));
            return Ok(());
        };
        let Some(slot) = self.scratch.slot(&name, u32::from(t.width())) else {
            return Err(refuse(v.span, "more locals than the key has room for"));
        };
        base.push((v.name.name.clone(), Bind::Slot(slot, t)));
        Ok(())
    }

    /// A table of this control named `name`, as the interpreter's index.
    fn table_of(&self, ci: usize, name: &str) -> Option<usize> {
        let Some(Inst::Block(b)) = self.s.insts.get(self.ctls[ci].inst) else { return None };
        match b.objects.get(name) {
            Some(Obj::Table(t)) => Some(*t),
            _ => None,
        }
    }

    /// `t.apply()` where `t` is a table of this control: its index.
    fn apply_of(&self, ci: usize, e: &Expr) -> Option<usize> {
        let ExprKind::Call { func, args, .. } = &e.kind else { return None };
        let ExprKind::Member(b, m) = &func.kind else { return None };
        let ExprKind::Name { id, .. } = &b.kind else { return None };
        if m.name != "apply" || !args.is_empty() {
            return None;
        }
        self.table_of(ci, &id.name)
    }

    /// Whether `e` contains a call of `.apply()` on anything.
    fn has_apply(e: &Expr, d: u32) -> bool {
        if d > 64 {
            return true;
        }
        match &e.kind {
            ExprKind::Call { func, args, .. } => {
                matches!(&func.kind, ExprKind::Member(_, m) if m.name == "apply")
                    || Self::has_apply(func, d + 1)
                    || args.iter().any(|a| Self::has_apply(&a.value, d + 1))
            }
            ExprKind::Member(a, _) | ExprKind::Unary(_, a) | ExprKind::Cast(_, a) => {
                Self::has_apply(a, d + 1)
            }
            ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
                Self::has_apply(a, d + 1) || Self::has_apply(b, d + 1)
            }
            ExprKind::Slice(a, b, c) | ExprKind::Mux(a, b, c) => {
                Self::has_apply(a, d + 1) || Self::has_apply(b, d + 1) || Self::has_apply(c, d + 1)
            }
            _ => false,
        }
    }

    /// Whether a statement is straight-line code (no applies, no exit).
    fn simple(s: &Stmt, d: u32) -> bool {
        if d > 64 {
            return false;
        }
        match s {
            Stmt::Assign { lhs, rhs, .. } => !Self::has_apply(lhs, 0) && !Self::has_apply(rhs, 0),
            Stmt::Call(e) => !Self::has_apply(e, 0),
            Stmt::If { cond, then, otherwise, .. } => {
                !Self::has_apply(cond, 0)
                    && Self::simple(then, d + 1)
                    && otherwise.as_ref().is_none_or(|o| Self::simple(o, d + 1))
            }
            Stmt::Block(b) => b.stmts.iter().all(|s| Self::simple(s, d + 1)),
            Stmt::Var(v) => v.init.as_ref().is_none_or(|e| !Self::has_apply(e, 0)),
            Stmt::Const(_) | Stmt::Empty(_) => true,
            Stmt::Exit(_) | Stmt::Return(..) | Stmt::Switch { .. } => false,
        }
    }

    /// A branch to `exit` when the control's exit flag is set, else to
    /// `next`.
    fn exit_check(&mut self, ci: usize, next: NodeId, exit: NodeId) -> Result<NodeId> {
        match self.ctls[ci].exit_flag {
            Some(f) => self.node(Node::Branch {
                test: KeyTest { word: f.word, mask: f.mask(), value: f.mask() },
                then: exit,
                otherwise: next,
            }),
            None => Ok(next),
        }
    }

    fn straight(
        &mut self,
        ci: usize,
        ss: &[Stmt],
        next: NodeId,
        exit: NodeId,
        span: Span,
    ) -> Result<NodeId> {
        let mut scratch = std::mem::replace(&mut self.scratch, Scratch::new(self.l));
        let res = (|| {
            let mut g = Builder::gen(self.s, self.l, &mut scratch, &self.ctls[ci])?;
            for s in ss {
                g.stmt(s)?;
            }
            if g.is_empty() {
                return Ok(None);
            }
            let may_exit = g.may_exit;
            Ok(Some((g.finish_ops(span)?, may_exit)))
        })();
        self.scratch = scratch;
        match res? {
            None => Ok(next),
            Some((p, may_exit)) => {
                let after = if may_exit { self.exit_check(ci, next, exit)? } else { next };
                self.fixed(p, after, span)
            }
        }
    }

    /// Lowers `ss` continuing at `next`; `exit` goes to `exit`.
    fn block(&mut self, ci: usize, ss: &[Stmt], next: NodeId, exit: NodeId) -> Result<NodeId> {
        let mut cur = next;
        let mut pending: Vec<Stmt> = Vec::new();
        for s in ss.iter().rev() {
            if Self::simple(s, 0) {
                pending.push(s.clone());
                continue;
            }
            if !pending.is_empty() {
                pending.reverse();
                let sp = stmt_span(&pending[0]);
                cur = self.straight(ci, &pending, cur, exit, sp)?;
                pending.clear();
            }
            cur = self.complex(ci, s, cur, exit)?;
        }
        if !pending.is_empty() {
            pending.reverse();
            let sp = stmt_span(&pending[0]);
            cur = self.straight(ci, &pending, cur, exit, sp)?;
        }
        Ok(cur)
    }

    fn complex(&mut self, ci: usize, s: &Stmt, next: NodeId, exit: NodeId) -> Result<NodeId> {
        match s {
            Stmt::Exit(_) | Stmt::Return(None, _) => Ok(exit),
            Stmt::Block(b) => self.block(ci, &b.stmts, next, exit),
            Stmt::Call(e) => match self.apply_of(ci, e) {
                Some(t) => self.apply(ci, t, After::To(next), exit, e.span),
                None => self.nested(ci, e, next, exit),
            },
            Stmt::If { cond, then, otherwise, span } => {
                let t = self.block(ci, std::slice::from_ref(then), next, exit)?;
                let o = match otherwise {
                    Some(o) => self.block(ci, std::slice::from_ref(o), next, exit)?,
                    None => next,
                };
                // `t.apply().hit`, `.miss`, and their negations.
                let (mut c, mut neg) = (cond, false);
                while let ExprKind::Unary(UnOp::Not, inner) = &c.kind {
                    c = inner;
                    neg = !neg;
                }
                if let ExprKind::Member(call, m) = &c.kind {
                    if let Some(tid) = self.apply_of(ci, call) {
                        let hit = match m.name.as_str() {
                            "hit" => true,
                            "miss" => false,
                            _ => return Err(refuse(c.span, format!("`.{}` of an apply", m.name))),
                        };
                        let (h, mi) = if hit != neg { (t, o) } else { (o, t) };
                        return self.apply(ci, tid, After::Hit { hit: h, miss: mi }, exit, c.span);
                    }
                }
                if Self::has_apply(cond, 0) {
                    return Err(refuse(cond.span, "this condition on an apply"));
                }
                let name = format!("cond @{}:{}", span.file, span.start);
                let Some(slot) = self.scratch.slot(&name, 1) else {
                    return Err(refuse(*span, "more conditions than the key has room for"));
                };
                let br = self.node(Node::Branch {
                    test: KeyTest { word: slot.word, mask: slot.mask(), value: slot.mask() },
                    then: t,
                    otherwise: o,
                })?;
                let mut scratch = std::mem::replace(&mut self.scratch, Scratch::new(self.l));
                let res = (|| {
                    let mut g = Builder::gen(self.s, self.l, &mut scratch, &self.ctls[ci])?;
                    g.cond_into(cond, slot)?;
                    g.finish(cond.span)
                })();
                self.scratch = scratch;
                let p = res?;
                // A condition that only compares one key slot with a
                // constant needs no program: the branch tests the slot
                // (one node, one cache hop, fewer than before).
                if let Some((test, equal)) = direct_test(&p, slot) {
                    let (then, otherwise) = if equal { (t, o) } else { (o, t) };
                    if let Some(Node::Branch { .. }) = self.nodes.get(usize::from(br)) {
                        self.nodes[usize::from(br)] = Node::Branch { test, then, otherwise };
                        return Ok(br);
                    }
                }
                self.fixed(vec![Op::Key(std::sync::Arc::new(p))], br, cond.span)
            }
            Stmt::Switch { expr, cases, span } => {
                let run = match &expr.kind {
                    ExprKind::Member(call, m) if m.name == "action_run" => self.apply_of(ci, call),
                    _ => None,
                };
                let Some(tid) = run else {
                    return self.switch_value(ci, expr, cases, next, exit, *span);
                };
                let by_label = self.switch_arms(ci, cases, next, exit, |e| match &e.kind {
                    ExprKind::Name { id, .. } => Ok(id.name.clone()),
                    _ => Err(refuse(e.span, "this switch label")),
                })?;
                let dflt = by_label.iter().find(|(l, _)| l.is_none()).map_or(next, |(_, n)| *n);
                let ts = &self.s.tables[tid];
                let mut arms = Vec::new();
                for (i, a) in ts.actions.iter().enumerate() {
                    let to = by_label
                        .iter()
                        .find(|(l, _)| l.as_deref() == Some(a.short.as_str()))
                        .map_or(dflt, |(_, n)| *n);
                    arms.push((i as u32, to));
                }
                self.apply(ci, tid, After::Action { arms, default: dflt }, exit, *span)
            }
            other => Err(refuse(stmt_span(other), "this statement in a control")),
        }
    }

    /// `c.apply(args)` of a nested control instance: inlined, each
    /// parameter denoting the location its argument names. Copy-in/
    /// copy-out is then the identity, as long as no two arguments
    /// overlap (refused otherwise) and every argument is a location.
    fn nested(&mut self, ci: usize, e: &Expr, next: NodeId, exit: NodeId) -> Result<NodeId> {
        let ExprKind::Call { func, args, .. } = &e.kind else {
            return Err(refuse(e.span, "this call"));
        };
        let inst = match &func.kind {
            ExprKind::Member(b, m) if m.name == "apply" => match &b.kind {
                ExprKind::Name { id, .. } => {
                    let Some(Inst::Block(outer)) = self.s.insts.get(self.ctls[ci].inst) else {
                        return Err(refuse(e.span, "this apply"));
                    };
                    // A local instance, else a constructor parameter
                    // holding one.
                    let ctor =
                        outer.ctor.iter().find(|(n, _)| *n == id.name).and_then(|(_, v)| match v {
                            crate::value::Value::Opaque { kind, id } if kind == "inst" => Some(*id),
                            _ => None,
                        });
                    match (outer.objects.get(&id.name), ctor) {
                        (Some(Obj::Inst(i)), _) => *i,
                        (None, Some(i)) => i,
                        _ => return Err(refuse(e.span, "this apply")),
                    }
                }
                _ => return Err(refuse(e.span, "this apply")),
            },
            _ => return Err(refuse(e.span, "this apply")),
        };
        let Some(Inst::Block(inner)) = self.s.insts.get(inst) else {
            return Err(refuse(e.span, "this apply"));
        };
        if inner.is_parser {
            return Err(refuse(e.span, "a sub-parser"));
        }
        let c = self.control_decl(inner.decl)?;
        if args.len() != c.params.len() || args.iter().any(|a| a.name.is_some()) {
            return Err(refuse(e.span, "this nested control call's arguments"));
        }
        let mut scratch = std::mem::replace(&mut self.scratch, Scratch::new(self.l));
        let res = (|| {
            let g = Builder::gen(self.s, self.l, &mut scratch, &self.ctls[ci])?;
            let mut roots: Roots = Vec::new();
            for (p, a) in c.params.iter().zip(args) {
                if !matches!(p.dir, Direction::In | Direction::InOut) {
                    // `out` starts from zero, not from the argument.
                    return Err(refuse(
                        p.span,
                        "a nested control parameter that is not `in`/`inout`",
                    ));
                }
                let Some((r, path)) = g.path(&a.value, 0)? else {
                    return Err(refuse(a.span, "a nested control argument that is not a location"));
                };
                let overlaps = roots.iter().any(|(_, r2, p2)| {
                    *r2 == r
                        && (p2.is_empty()
                            || path.is_empty()
                            || *p2 == path
                            || path.starts_with(&format!("{p2}."))
                            || p2.starts_with(&format!("{path}.")))
                });
                if overlaps {
                    return Err(refuse(a.span, "nested control arguments that overlap"));
                }
                roots.push((p.name.name.clone(), r, path));
            }
            Ok(roots)
        })();
        self.scratch = scratch;
        let roots = res?;
        let flag = self.ctls[ci].exit_flag;
        self.control_in(inst, Some(roots), next, exit, flag)
    }

    /// The keys of table `tid` (placed once).
    fn keys(&mut self, ci: usize, tid: usize, span: Span) -> Result<TableKeys> {
        if let Some(k) = self.tables.get(&tid) {
            if k.ctl != ci {
                return Err(refuse(span, "a table applied from two control instances"));
            }
            return Ok(k.clone());
        }
        let ts = &self.s.tables[tid];
        if ts.direct_counter.is_some() {
            return Err(refuse(span, format!("table `{}` with a direct counter", ts.name)));
        }
        let mut scratch = std::mem::replace(&mut self.scratch, Scratch::new(self.l));
        let res = (|| {
            let mut g = Builder::gen(self.s, self.l, &mut scratch, &self.ctls[ci])?;
            let mut places = Vec::new();
            for k in &ts.keys {
                match g.key_place(&k.expr)? {
                    Some(p) if p.width == k.width => places.push(p),
                    _ if k.width > 64 => {
                        // Several scratch slots, most significant first
                        // (the first takes the remainder).
                        let mut slots = Vec::new();
                        let mut left = k.width;
                        while left > 0 {
                            let w = if slots.is_empty() && left % 64 != 0 { left % 64 } else { 64 };
                            let name = format!("key {}.{}#{}", ts.name, k.name, slots.len());
                            let Some(slot) = g.scratch.slot(&name, w) else {
                                return Err(refuse(
                                    k.expr.span,
                                    "more keys than the key has room for",
                                ));
                            };
                            slots.push(slot);
                            left -= w;
                        }
                        g.wide_into(&k.expr, k.width, &slots)?;
                        places.push(KeyPlace { slots, width: k.width });
                    }
                    _ => {
                        let Some(t) = T1::bits_of(k.width) else {
                            return Err(refuse(k.expr.span, "a computed key of this width"));
                        };
                        let name = format!("key {}.{}", ts.name, k.name);
                        let Some(slot) = g.scratch.slot(&name, k.width) else {
                            return Err(refuse(k.expr.span, "more keys than the key has room for"));
                        };
                        g.value_into(&k.expr, t, slot)?;
                        places.push(KeyPlace { slots: vec![slot], width: k.width });
                    }
                }
            }
            let pre = if g.is_empty() { None } else { Some(g.finish(span)?) };
            // Every action compiles (with zero action data), so entries
            // cannot be refused later; and whether one may `exit`.
            let mut may_exit = false;
            for a in &ts.actions {
                let Some(decl) = action_decl(self.s, a) else {
                    return Err(refuse(span, format!("action `{}`", a.name)));
                };
                let data: Vec<crate::value::Value> =
                    a.data.iter().map(|(_, t)| t.default_value()).collect();
                let mut g = Builder::gen(self.s, self.l, &mut scratch, &self.ctls[ci])?;
                g.call_action(decl, &data, &a.bound, decl.span)?;
                may_exit |= g.may_exit;
                g.finish_ops(decl.span)?;
            }
            Ok((places, pre, may_exit))
        })();
        self.scratch = scratch;
        let (places, pre, may_exit) = res?;
        let real = self.table(TabDef::Real(tid), span)?;
        let default = self.table(TabDef::Default(tid), span)?;
        let k = TableKeys { places, pre, ctl: ci, real, default, may_exit };
        self.tables.insert(tid, k.clone());
        Ok(k)
    }

    fn apply(
        &mut self,
        ci: usize,
        tid: usize,
        after: After,
        exit: NodeId,
        span: Span,
    ) -> Result<NodeId> {
        let k = self.keys(ci, tid, span)?;
        // After an action that may `exit`, every way on checks the flag.
        let after = if k.may_exit {
            match after {
                After::To(n) => After::To(self.exit_check(ci, n, exit)?),
                After::Hit { hit, miss } => After::Hit {
                    hit: self.exit_check(ci, hit, exit)?,
                    miss: self.exit_check(ci, miss, exit)?,
                },
                After::Action { arms, default } => {
                    let mut a2 = Vec::with_capacity(arms.len());
                    for (id, n) in arms {
                        a2.push((id, self.exit_check(ci, n, exit)?));
                    }
                    After::Action { arms: a2, default: self.exit_check(ci, default, exit)? }
                }
            }
        } else {
            after
        };
        let node = match after {
            After::To(n) => {
                let d = self.node(Node::Apply { table: k.default, next: Next::To(n) })?;
                self.node(Node::Apply { table: k.real, next: Next::Hit { hit: n, miss: d } })?
            }
            After::Hit { hit, miss } => {
                let d = self.node(Node::Apply { table: k.default, next: Next::To(miss) })?;
                self.node(Node::Apply { table: k.real, next: Next::Hit { hit, miss: d } })?
            }
            After::Action { arms, default } => {
                let arms: Box<[(u32, NodeId)]> = arms.into();
                let d = self.node(Node::Apply {
                    table: k.default,
                    next: Next::Action { arms: arms.clone(), default },
                })?;
                self.node(Node::Apply { table: k.real, next: Next::Action { arms, default: d } })?
            }
        };
        match k.pre {
            Some(p) => self.fixed(vec![Op::Key(std::sync::Arc::new(p))], node, span),
            None => Ok(node),
        }
    }
}

/// The declaration of a table's action.
pub fn action_decl<'a>(
    s: &'a Static,
    a: &crate::interp::table::ActionSpec,
) -> Option<&'a ActionDecl> {
    use crate::interp::table::ActionLoc;
    match a.loc {
        ActionLoc::Global(i) => match s.prog.decls.get(i) {
            Some(Decl::Action(a)) => Some(a),
            _ => None,
        },
        ActionLoc::Local { decl, idx } => match s.prog.decls.get(decl) {
            Some(Decl::Control(c)) => match c.locals.get(idx) {
                Some(Local::Action(a)) => Some(a),
                _ => None,
            },
            _ => None,
        },
    }
}

/// Every `Var`/`Const` statement in `ss`, nested ones too.
fn prescan<'s>(ss: &'s [Stmt], out: &mut Vec<&'s Stmt>, d: u32) {
    if d > 64 {
        return;
    }
    for s in ss {
        match s {
            Stmt::Var(_) | Stmt::Const(_) => out.push(s),
            Stmt::Block(Block { stmts, .. }) => prescan(stmts, out, d + 1),
            Stmt::If { then, otherwise, .. } => {
                prescan(std::slice::from_ref(then), out, d + 1);
                if let Some(o) = otherwise {
                    prescan(std::slice::from_ref(o), out, d + 1);
                }
            }
            Stmt::Switch { cases, .. } => {
                for c in cases {
                    if let Some(b) = &c.body {
                        prescan(&b.stmts, out, d + 1);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The branch a condition's program `p` (storing its result into the
/// scratch bit `cond`) amounts to, when it is nothing but a comparison of
/// one key slot with a constant (`Load`, `Const`, `Eq`/`Ne`, `Store`) or
/// a copy of a one-bit slot: the test of that slot against the constant,
/// and whether the condition holds when the test passes (`false`: `!=`).
/// `None` for anything else, and for a constant wider than the slot (a
/// test cannot express "never").
fn direct_test(p: &sluice_core::keyop::KeyProg, cond: Slot) -> Option<(KeyTest, bool)> {
    use sluice_core::keyop::{BinOp, Insn};
    let test = |s: Slot, v: u64| {
        (v <= s.mask() >> s.shift).then_some(KeyTest {
            word: s.word,
            mask: s.mask(),
            value: v << s.shift,
        })
    };
    match p.insns() {
        [Insn::Load { dst, from }, Insn::Store { src, to }]
            if src == dst && *to == cond && from.width == 1 =>
        {
            Some((test(*from, 1)?, true))
        }
        [Insn::Load { dst: a, from }, Insn::Const { dst: b, value }, Insn::Bin { op, dst: c, a: x, b: y, .. }, Insn::Store { src, to }]
            if *to == cond
                && src == c
                && a != b
                && ((x == a && y == b) || (x == b && y == a))
                && matches!(op, BinOp::Eq | BinOp::Ne) =>
        {
            Some((test(*from, *value)?, *op == BinOp::Eq))
        }
        _ => None,
    }
}
