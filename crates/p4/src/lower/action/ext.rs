//! [`Gen`]'s extern calls: each evaluates its inputs into scratch slots
//! named after its call site, cuts the program there for the engine's
//! op ([`crate::lower::externs::ExtCall`]) and stores what the call
//! wrote from its scratch slot into the call's `out` argument.

use sluice_core::keyop::{Insn, Slot};

use super::{refuse, Gen, T1};
use crate::ast::{Arg, Expr, ExprKind, Type};
use crate::diag::{Result, Span};
use crate::lower::externs::{ExtCall, Instance};
use crate::types::Ty;
use crate::value::Value;

/// The hash algorithms the interpreter computes.
const ALGOS: &[&str] = &["crc16", "crc32", "csum16", "xor16", "identity"];

impl<'a> Gen<'a> {
    /// The extern instance `e` names, if it names one.
    pub(super) fn instance_of(&self, e: &Expr) -> Option<&Instance> {
        let ExprKind::Name { id, .. } = &e.kind else { return None };
        if self.lookup(&id.name).is_some() {
            return None;
        }
        self.instances.iter().rev().find(|(n, _)| *n == id.name).map(|(_, i)| i)
    }

    fn site_name(what: &str, span: Span) -> String {
        format!("extern {what} @{}:{}", span.file, span.start)
    }

    /// `e` evaluated into the scratch slot `site`'s `what`.
    fn ext_input(&mut self, site: &str, what: &str, e: &Expr, want: Option<T1>) -> Result<Slot> {
        let save = self.next_reg;
        let (r, t) = self.scalar(e, want)?;
        let slot = self
            .scratch
            .slot(&format!("{site} {what}"), u32::from(t.width()))
            .ok_or_else(|| refuse(e.span, "extern inputs the key has no room for"))?;
        self.emit(Insn::Store { src: r, to: slot });
        self.next_reg = save;
        Ok(slot)
    }

    /// A scratch slot of `width` bits for what the call at `site` writes.
    fn ext_output(&mut self, site: &str, width: u8, span: Span) -> Result<Slot> {
        self.scratch
            .slot(&format!("{site} out"), u32::from(width))
            .ok_or_else(|| refuse(span, "extern results the key has no room for"))
    }

    /// Ends the program's piece before the call `call` at `site`.
    fn cut(&mut self, site: &str, call: ExtCall, span: Span) -> Result<()> {
        let pending = self
            .insns
            .iter()
            .any(|i| matches!(i, Insn::Jump { to: 0 } | Insn::JumpIfZero { to: 0, .. }));
        if pending || self.next_reg != 0 {
            return Err(refuse(
                span,
                "an extern call under a condition, after a `return` or `exit`, or inside an expression",
            ));
        }
        let id = self.scratch.ext.site(site, call);
        self.cuts.push((self.insns.len(), id, span));
        Ok(())
    }

    /// Stores the scratch slot `from` into `lhs`.
    fn ext_store(&mut self, lhs: &Expr, from: Slot, span: Span) -> Result<()> {
        let r = self.reg(span)?;
        self.emit(Insn::Load { dst: r, from });
        self.store(lhs, r, span)?;
        self.next_reg = 0;
        Ok(())
    }

    fn out_t1(&self, lhs: &Expr) -> Result<T1> {
        match self.lhs_t1(lhs)? {
            Some(t) => Ok(t),
            None => Err(refuse(lhs.span, "an extern result written here")),
        }
    }

    /// `hash(out, algo, base, data, max)`.
    pub(super) fn hash(&mut self, e: &Expr, args: &[Arg]) -> Result<()> {
        let [out, algo, base, data, max] = args else {
            return Err(refuse(e.span, "this call of `hash`"));
        };
        let algo = match self.const_value(&algo.value) {
            Some(Value::Enum { member, .. }) if ALGOS.contains(&member.as_str()) => member,
            _ => return Err(refuse(algo.span, "this hash algorithm")),
        };
        let t = self.out_t1(&out.value)?;
        if !matches!(t, T1::Bits { signed: false, .. }) {
            return Err(refuse(out.span, "a hash into a value that is not `bit<W>`"));
        }
        let site = Self::site_name(&format!("hash {algo} {}", t.width()), e.span);
        let wide = T1::Bits { w: 64, signed: false };
        let base = self.ext_input(&site, "base", &base.value, Some(wide))?;
        let max = self.ext_input(&site, "max", &max.value, Some(wide))?;
        let ExprKind::List(list) = &data.value.kind else {
            return Err(refuse(data.span, "hash data other than a list"));
        };
        let mut items = Vec::new();
        for (i, it) in list.iter().enumerate() {
            items.push(self.ext_input(&site, &format!("item {i}"), it, None)?);
        }
        let dst = self.ext_output(&site, t.width(), e.span)?;
        self.cut(&site, ExtCall::Hash { algo, items, base, max, dst }, e.span)?;
        self.ext_store(&out.value, dst, e.span)
    }

    /// `digest<T>(receiver, { ... })`.
    pub(super) fn digest(&mut self, e: &Expr, targs: &[Type], args: &[Arg]) -> Result<()> {
        let ([t], [receiver, data]) = (targs, args) else {
            return Err(refuse(e.span, "this call of `digest`"));
        };
        let ty = self.env.resolve(t, &[]).map_err(|_| refuse(t.span, "this digest type"))?;
        let Ty::Struct(agg) = &ty else {
            return Err(refuse(t.span, "a digest of something other than a struct"));
        };
        let Some(receiver) = self.const_value(&receiver.value).and_then(|v| v.to_u64()) else {
            return Err(refuse(receiver.span, "a digest receiver that is not a constant"));
        };
        let ExprKind::List(list) = &data.value.kind else {
            return Err(refuse(data.span, "digest data other than a list"));
        };
        if list.len() != agg.fields.len() {
            return Err(refuse(data.span, "digest data that does not fit its type"));
        }
        let site = Self::site_name("digest", e.span);
        let mut items = Vec::new();
        for (i, (it, (_, fty))) in list.iter().zip(&agg.fields).enumerate() {
            let Some(ft) = super::ty_t1(fty) else {
                return Err(refuse(it.span, "a digest field over 64 bits or of this type"));
            };
            let save = self.next_reg;
            let x = self.expr(it)?;
            let r = self.typed(x, ft, it.span)?;
            let slot = self
                .scratch
                .slot(&format!("{site} item {i}"), u32::from(ft.width()))
                .ok_or_else(|| refuse(it.span, "digest data the key has no room for"))?;
            self.emit(Insn::Store { src: r, to: slot });
            self.next_reg = save;
            items.push(slot);
        }
        self.cut(&site, ExtCall::Digest { receiver, ty: ty.clone(), items }, e.span)
    }

    /// A method of an extern object instance.
    pub(super) fn method(
        &mut self,
        e: &Expr,
        inst: &Instance,
        m: &str,
        args: &[Arg],
    ) -> Result<()> {
        let site = Self::site_name(&format!("{}.{m} {}", inst.kind, inst.id), e.span);
        let idx_t = T1::Bits { w: 32, signed: false };
        match (inst.kind.as_str(), m, args) {
            ("register", "read", [out, index]) => {
                let t = self.register_t1(inst, e.span)?;
                if self.out_t1(&out.value)? != t {
                    return Err(refuse(out.span, "a register read into a value of another type"));
                }
                let index = self.ext_input(&site, "index", &index.value, Some(idx_t))?;
                let dst = self.ext_output(&site, t.width(), e.span)?;
                self.cut(&site, ExtCall::RegRead { inst: inst.id, index, dst }, e.span)?;
                self.ext_store(&out.value, dst, e.span)
            }
            ("register", "write", [index, value]) => {
                let t = self.register_t1(inst, e.span)?;
                let index = self.ext_input(&site, "index", &index.value, Some(idx_t))?;
                let save = self.next_reg;
                let x = self.expr(&value.value)?;
                let r = self.typed(x, t, value.span)?;
                let slot = self
                    .scratch
                    .slot(&format!("{site} value"), u32::from(t.width()))
                    .ok_or_else(|| refuse(value.span, "extern inputs the key has no room for"))?;
                self.emit(Insn::Store { src: r, to: slot });
                self.next_reg = save;
                self.cut(&site, ExtCall::RegWrite { inst: inst.id, index, value: slot }, e.span)
            }
            ("counter", "count", [index]) => {
                let index = self.ext_input(&site, "index", &index.value, Some(idx_t))?;
                self.cut(&site, ExtCall::Count { inst: inst.id, index }, e.span)
            }
            _ => Err(refuse(e.span, format!("a call of `{}.{m}()`", inst.kind))),
        }
    }

    /// A register's cell type, if the engine holds it (unsigned, at
    /// most 64 bits).
    fn register_t1(&self, inst: &Instance, span: Span) -> Result<T1> {
        match inst.elem.as_ref().and_then(super::ty_t1) {
            Some(t @ T1::Bits { signed: false, .. }) => Ok(t),
            _ => Err(refuse(span, "a register of cells other than `bit<W>` up to 64 bits")),
        }
    }
}
