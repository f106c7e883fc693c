//! Control-flow forms of a control's `apply` block that lower through
//! the others: `switch` on a value, and table applies inside
//! expressions.
//!
//! # `switch` on a value
//! One key program stores the switch expression in a scratch slot (so it
//! is evaluated once, before any case body can change its inputs) and,
//! for every labelled case in order, whether the value equals the label
//! into a scratch bit (the comparison is the generator's own `==`, so
//! enums, `error`s, `int` labels and casts mean what they mean in any
//! other expression). A chain of [`Node::Branch`]es on those bits, in
//! case order, picks the first case that matches, else `default` (or
//! the statement after the switch). A label without a body falls
//! through to the next body, as in the `action_run` switch.
//!
//! # Applies inside expressions
//! `x = f(t.apply().hit ? 1 : 2)`, `if (t.apply().hit && c)`, ... are
//! rewritten, before the control is lowered, into statements the graph
//! builder already handles: each `t.apply().hit` (or `.miss`) becomes
//! `if (t.apply().hit) tmp = true; else tmp = false;` ahead of the
//! statement, and the expression reads the boolean `tmp`. P4 evaluates
//! left to right and short-circuits, and the rewrite keeps both:
//! - `c ? a : b` with an apply in an arm evaluates `c` into a boolean
//!   temporary first and hoists each arm's applies under an `if` on it,
//!   so only the chosen arm's table is applied;
//! - `a && b` / `a || b` with an apply in `b` evaluates `a` into a
//!   temporary and hoists `b` under an `if` on it;
//! - any other operator or call argument list is rewritten only when
//!   everything evaluated before the apply is a literal, since a
//!   table's action may change what an earlier operand read; otherwise
//!   it is refused, as are applies in a left-hand side, in an `op=`
//!   assignment, an assignment whose target has a computed index, and
//!   `.action_run` or anything other than `.hit`/`.miss` inside an
//!   expression.
//!
//! An `exit` in an action of a hoisted apply leaves the control before
//! the statement the apply came from runs, as the interpreter's does
//! (the apply's exit check follows it).

use super::*;
use crate::ast::{BinOp, SwitchCase, Type, TypeKind, VarDecl};

/// Fresh temporaries of one control's rewrite.
struct Hoist {
    next: u32,
}

/// An expression naming `name`.
fn name_expr(name: &str, span: Span) -> Expr {
    Expr { kind: ExprKind::Name { id: ident(name, span), dot_prefix: false }, span }
}

fn ident(name: &str, span: Span) -> crate::ast::Ident {
    crate::ast::Ident { name: name.to_string(), span }
}

fn assign(lhs: Expr, rhs: Expr, span: Span) -> Stmt {
    Stmt::Assign { lhs, op: None, rhs, span }
}

fn bool_expr(b: bool, span: Span) -> Expr {
    Expr { kind: ExprKind::Bool(b), span }
}

fn block(stmts: Vec<Stmt>, span: Span) -> Box<Stmt> {
    Box::new(Stmt::Block(Block { stmts, span }))
}

/// Whether `e` is made of literals alone (reads nothing).
fn literal(e: &Expr, d: u32) -> bool {
    if d > 64 {
        return false;
    }
    match &e.kind {
        ExprKind::Int { .. } | ExprKind::Bool(_) => true,
        ExprKind::Unary(_, a) | ExprKind::Cast(_, a) => literal(a, d + 1),
        ExprKind::Binary(_, a, b) => literal(a, d + 1) && literal(b, d + 1),
        ExprKind::Mux(a, b, c) => literal(a, d + 1) && literal(b, d + 1) && literal(c, d + 1),
        _ => false,
    }
}

/// Whether every index in the location `e` is a literal.
fn fixed_location(e: &Expr, d: u32) -> bool {
    if d > 64 {
        return false;
    }
    match &e.kind {
        ExprKind::Name { .. } => true,
        ExprKind::Member(b, _) => fixed_location(b, d + 1),
        ExprKind::Index(b, i) => literal(i, 0) && fixed_location(b, d + 1),
        ExprKind::Slice(b, hi, lo) => literal(hi, 0) && literal(lo, 0) && fixed_location(b, d + 1),
        _ => false,
    }
}

impl Hoist {
    /// A new boolean temporary declared in `pre` (initialised to `init`
    /// if given): its name. The name is not a P4 identifier, so it
    /// cannot hide or be hidden by the program's own.
    fn temp(&mut self, init: Option<Expr>, span: Span, pre: &mut Vec<Stmt>) -> String {
        let name = format!("$apply{}", self.next);
        self.next += 1;
        pre.push(Stmt::Var(VarDecl {
            annotations: Vec::new(),
            ty: Type { kind: TypeKind::Bool, span },
            name: ident(&name, span),
            init,
            span,
        }));
        name
    }
}

impl Builder<'_> {
    /// `t.apply()` where `t` is a table of control instance `inst`.
    fn apply_in(&self, inst: usize, e: &Expr) -> bool {
        let ExprKind::Call { func, args, .. } = &e.kind else { return false };
        let ExprKind::Member(b, m) = &func.kind else { return false };
        let ExprKind::Name { id, .. } = &b.kind else { return false };
        let Some(Inst::Block(blk)) = self.s.insts.get(inst) else { return false };
        m.name == "apply"
            && args.is_empty()
            && matches!(blk.objects.get(&id.name), Some(Obj::Table(_)))
    }

    /// The forms the graph builder takes as they are: `t.apply().hit`,
    /// `.miss` and their negations.
    fn hit_test(&self, inst: usize, mut c: &Expr) -> bool {
        while let ExprKind::Unary(UnOp::Not, inner) = &c.kind {
            c = inner;
        }
        matches!(&c.kind, ExprKind::Member(call, m)
            if (m.name == "hit" || m.name == "miss") && self.apply_in(inst, call))
    }

    /// `ss` of control instance `inst` with every table apply inside an
    /// expression hoisted into statements ahead of it.
    pub(super) fn hoist_applies(&self, inst: usize, ss: &[Stmt]) -> Result<Vec<Stmt>> {
        let mut h = Hoist { next: 0 };
        let mut out = Vec::with_capacity(ss.len());
        for s in ss {
            self.hoist_stmt(inst, &mut h, s, &mut out, 0)?;
        }
        Ok(out)
    }

    fn hoist_stmt(
        &self,
        inst: usize,
        h: &mut Hoist,
        s: &Stmt,
        out: &mut Vec<Stmt>,
        d: u32,
    ) -> Result<()> {
        if d > 64 {
            return Err(refuse(stmt_span(s), "statements nested this deep"));
        }
        let apply = |e: &Expr| Builder::has_apply(e, 0);
        match s {
            Stmt::Assign { lhs, op, rhs, span } if apply(lhs) || apply(rhs) => {
                if apply(lhs) {
                    return Err(refuse(lhs.span, "a table apply in an assignment's target"));
                }
                if op.is_some() {
                    return Err(refuse(*span, "a table apply in an `op=` assignment"));
                }
                if !fixed_location(lhs, 0) {
                    return Err(refuse(
                        lhs.span,
                        "a computed target of an assignment with an apply",
                    ));
                }
                let rhs = self.hoist_expr(inst, h, rhs, out, 0)?;
                out.push(Stmt::Assign { lhs: lhs.clone(), op: None, rhs, span: *span });
            }
            Stmt::Call(e) if apply(e) => {
                let ExprKind::Call { func, type_args, args } = &e.kind else {
                    return Err(refuse(e.span, "this call"));
                };
                if matches!(&func.kind, ExprKind::Member(_, m) if m.name == "apply") {
                    // A table's or a nested control's apply statement.
                    out.push(s.clone());
                    return Ok(());
                }
                let e = self.hoist_call(inst, h, e.span, func, type_args, args, out)?;
                out.push(Stmt::Call(e));
            }
            Stmt::If { cond, then, otherwise, span } => {
                let cond = if apply(cond) && !self.hit_test(inst, cond) {
                    self.hoist_expr(inst, h, cond, out, 0)?
                } else {
                    cond.clone()
                };
                let then = self.hoist_nested(inst, h, then, d)?;
                let otherwise = match otherwise {
                    Some(o) => Some(self.hoist_nested(inst, h, o, d)?),
                    None => None,
                };
                out.push(Stmt::If { cond, then, otherwise, span: *span });
            }
            Stmt::Block(b) => {
                let mut ss = Vec::with_capacity(b.stmts.len());
                for s in &b.stmts {
                    self.hoist_stmt(inst, h, s, &mut ss, d + 1)?;
                }
                out.push(Stmt::Block(Block { stmts: ss, span: b.span }));
            }
            Stmt::Switch { expr, cases, span } => {
                let run = matches!(&expr.kind, ExprKind::Member(call, m)
                    if m.name == "action_run" && self.apply_in(inst, call));
                let expr = if apply(expr) && !run {
                    self.hoist_expr(inst, h, expr, out, 0)?
                } else {
                    expr.clone()
                };
                let mut cs = Vec::with_capacity(cases.len());
                for c in cases {
                    let body = match &c.body {
                        Some(b) => {
                            let mut ss = Vec::with_capacity(b.stmts.len());
                            for s in &b.stmts {
                                self.hoist_stmt(inst, h, s, &mut ss, d + 1)?;
                            }
                            Some(Block { stmts: ss, span: b.span })
                        }
                        None => None,
                    };
                    cs.push(SwitchCase { label: c.label.clone(), body, span: c.span });
                }
                out.push(Stmt::Switch { expr, cases: cs, span: *span });
            }
            Stmt::Var(v) if v.init.as_ref().is_some_and(apply) => {
                let mut v = v.clone();
                if let Some(init) = v.init.take() {
                    v.init = Some(self.hoist_expr(inst, h, &init, out, 0)?);
                }
                out.push(Stmt::Var(v));
            }
            other => out.push(other.clone()),
        }
        Ok(())
    }

    /// A nested statement (an `if`'s branch) rewritten on its own, so its
    /// hoisted statements stay under the `if`.
    fn hoist_nested(&self, inst: usize, h: &mut Hoist, s: &Stmt, d: u32) -> Result<Box<Stmt>> {
        let mut ss = Vec::new();
        self.hoist_stmt(inst, h, s, &mut ss, d + 1)?;
        Ok(match ss.len() {
            1 => Box::new(ss.remove(0)),
            _ => block(ss, stmt_span(s)),
        })
    }

    /// `e` with its applies hoisted into `pre`.
    fn hoist_expr(
        &self,
        inst: usize,
        h: &mut Hoist,
        e: &Expr,
        pre: &mut Vec<Stmt>,
        d: u32,
    ) -> Result<Expr> {
        if !Builder::has_apply(e, 0) {
            return Ok(e.clone());
        }
        if d > 64 {
            return Err(refuse(e.span, "an expression this deep"));
        }
        let sp = e.span;
        let kind = match &e.kind {
            ExprKind::Member(call, m) if self.apply_in(inst, call) => {
                if m.name != "hit" && m.name != "miss" {
                    return Err(refuse(
                        e.span,
                        format!("`.{}` of an apply inside an expression", m.name),
                    ));
                }
                let t = h.temp(None, sp, pre);
                pre.push(Stmt::If {
                    cond: e.clone(),
                    then: Box::new(assign(name_expr(&t, sp), bool_expr(true, sp), sp)),
                    otherwise: Some(Box::new(assign(name_expr(&t, sp), bool_expr(false, sp), sp))),
                    span: sp,
                });
                return Ok(name_expr(&t, sp));
            }
            ExprKind::Unary(op, a) => {
                ExprKind::Unary(*op, Box::new(self.hoist_expr(inst, h, a, pre, d + 1)?))
            }
            ExprKind::Cast(t, a) => {
                ExprKind::Cast(t.clone(), Box::new(self.hoist_expr(inst, h, a, pre, d + 1)?))
            }
            ExprKind::Slice(a, hi, lo)
                if !Builder::has_apply(hi, 0) && !Builder::has_apply(lo, 0) =>
            {
                ExprKind::Slice(
                    Box::new(self.hoist_expr(inst, h, a, pre, d + 1)?),
                    hi.clone(),
                    lo.clone(),
                )
            }
            ExprKind::Binary(op @ (BinOp::And | BinOp::Or), a, b) => {
                let a = self.hoist_expr(inst, h, a, pre, d + 1)?;
                if !Builder::has_apply(b, 0) {
                    ExprKind::Binary(*op, Box::new(a), b.clone())
                } else {
                    // t = a; if (t) t = b; (`&&`)   if (!t) t = b; (`||`)
                    let t = h.temp(Some(a), sp, pre);
                    let mut inner = Vec::new();
                    let b = self.hoist_expr(inst, h, b, &mut inner, d + 1)?;
                    inner.push(assign(name_expr(&t, sp), b, sp));
                    let test = match op {
                        BinOp::And => name_expr(&t, sp),
                        _ => Expr {
                            kind: ExprKind::Unary(UnOp::Not, Box::new(name_expr(&t, sp))),
                            span: sp,
                        },
                    };
                    pre.push(Stmt::If {
                        cond: test,
                        then: block(inner, sp),
                        otherwise: None,
                        span: sp,
                    });
                    return Ok(name_expr(&t, sp));
                }
            }
            ExprKind::Binary(op, a, b) => {
                if Builder::has_apply(b, 0) && !literal(a, 0) {
                    return Err(refuse(
                        a.span,
                        "an operand read before a table apply in the same expression",
                    ));
                }
                let a = self.hoist_expr(inst, h, a, pre, d + 1)?;
                let b = self.hoist_expr(inst, h, b, pre, d + 1)?;
                ExprKind::Binary(*op, Box::new(a), Box::new(b))
            }
            ExprKind::Mux(c, a, b) => {
                let c = self.hoist_expr(inst, h, c, pre, d + 1)?;
                if !Builder::has_apply(a, 0) && !Builder::has_apply(b, 0) {
                    ExprKind::Mux(Box::new(c), a.clone(), b.clone())
                } else {
                    // t = c; if (t) { a's applies } else { b's applies }
                    let t = h.temp(Some(c), sp, pre);
                    let (mut pa, mut pb) = (Vec::new(), Vec::new());
                    let a = self.hoist_expr(inst, h, a, &mut pa, d + 1)?;
                    let b = self.hoist_expr(inst, h, b, &mut pb, d + 1)?;
                    pre.push(Stmt::If {
                        cond: name_expr(&t, sp),
                        then: block(pa, sp),
                        otherwise: Some(block(pb, sp)),
                        span: sp,
                    });
                    ExprKind::Mux(Box::new(name_expr(&t, sp)), Box::new(a), Box::new(b))
                }
            }
            ExprKind::Call { func, type_args, args } => {
                return self.hoist_call(inst, h, sp, func, type_args, args, pre);
            }
            _ => return Err(refuse(e.span, "a table apply inside this expression")),
        };
        Ok(Expr { kind, span: sp })
    }

    /// A call (not an apply) whose arguments hold applies: they are
    /// hoisted when every argument before the last one holding an apply
    /// is a literal.
    #[allow(clippy::too_many_arguments)]
    fn hoist_call(
        &self,
        inst: usize,
        h: &mut Hoist,
        span: Span,
        func: &Expr,
        type_args: &[Type],
        args: &[crate::ast::Arg],
        pre: &mut Vec<Stmt>,
    ) -> Result<Expr> {
        if Builder::has_apply(func, 0) {
            return Err(refuse(span, "a table apply inside this call"));
        }
        let last = args.iter().rposition(|a| Builder::has_apply(&a.value, 0)).unwrap_or(0);
        let mut out = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            if i < last && !literal(&a.value, 0) {
                return Err(refuse(a.span, "an argument read before a table apply in a later one"));
            }
            let v = self.hoist_expr(inst, h, &a.value, pre, 1)?;
            out.push(crate::ast::Arg { name: a.name.clone(), value: v, span: a.span });
        }
        let kind = ExprKind::Call {
            func: Box::new(func.clone()),
            type_args: type_args.to_vec(),
            args: out,
        };
        Ok(Expr { kind, span })
    }

    /// The cases of a `switch`, last first: each label (`None`: the
    /// default) as `label` maps it, with the node its body starts at. The
    /// bodies are built from the last case up, so a fall-through label
    /// takes the next body and one with no body after it goes to `next`.
    pub(super) fn switch_arms<'c, L>(
        &mut self,
        ci: usize,
        cases: &'c [SwitchCase],
        next: NodeId,
        exit: NodeId,
        label: impl Fn(&'c Expr) -> Result<L>,
    ) -> Result<Vec<(Option<L>, NodeId)>> {
        let mut arms = Vec::with_capacity(cases.len());
        let mut body_next: Option<NodeId> = None;
        for c in cases.iter().rev() {
            let target = match &c.body {
                Some(b) => self.block(ci, &b.stmts, next, exit)?,
                None => body_next.unwrap_or(next),
            };
            body_next = Some(target);
            let l = match &c.label {
                SwitchLabel::Default(_) => None,
                SwitchLabel::Expr(e) => Some(label(e)?),
            };
            arms.push((l, target));
        }
        Ok(arms)
    }

    /// `switch (expr) { ... }` on a value (not a table's `action_run`),
    /// continuing at `next`.
    pub(super) fn switch_value(
        &mut self,
        ci: usize,
        expr: &Expr,
        cases: &[SwitchCase],
        next: NodeId,
        exit: NodeId,
        span: Span,
    ) -> Result<NodeId> {
        let mut arms = self.switch_arms(ci, cases, next, exit, Ok)?;
        arms.reverse();
        let dflt = arms.iter().find(|(l, _)| l.is_none()).map_or(next, |(_, n)| *n);
        let name = format!("switch @{}:{}", span.file, span.start);
        let mut tests: Vec<(&Expr, NodeId, sluice_core::keyop::Slot)> = Vec::new();
        for (i, (label, to)) in arms.iter().enumerate() {
            let Some(label) = label else { continue };
            let Some(bit) = self.scratch.slot(&format!("{name} case {i}"), 1) else {
                return Err(refuse(label.span, "more conditions than the key has room for"));
            };
            tests.push((label, *to, bit));
        }
        // The first matching case wins: branch on the cases in order.
        let mut cur = dflt;
        for (_, to, bit) in tests.iter().rev() {
            cur = self.node(Node::Branch {
                test: KeyTest { word: bit.word, mask: bit.mask(), value: bit.mask() },
                then: *to,
                otherwise: cur,
            })?;
        }
        let mut scratch = std::mem::replace(&mut self.scratch, Scratch::new(self.l));
        let res = (|| {
            let mut g = Builder::gen(self.s, self.l, &mut scratch, &self.ctls[ci])?;
            let (slot, t) = g.scalar_into(expr, &name)?;
            // Not a P4 identifier: the cases compare with it alone.
            let v = format!("$switch{}", span.start);
            g.bind(&v, Bind::Slot(slot, t));
            for (label, _, bit) in &tests {
                let sp = label.span;
                let eq = ExprKind::Binary(
                    BinOp::Eq,
                    Box::new(name_expr(&v, sp)),
                    Box::new((*label).clone()),
                );
                g.cond_into(&Expr { kind: eq, span: sp }, *bit)?;
            }
            g.finish(span)
        })();
        self.scratch = scratch;
        let p = res?;
        self.fixed(vec![Op::Key(std::sync::Arc::new(p))], cur, span)
    }
}
