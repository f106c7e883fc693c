//! `varbit` values in key programs.
//!
//! # What
//! A `varbit<max>` lives in the header vector as its bits right-aligned
//! in `max` bits (one or more slots, most significant first) plus a
//! length slot ([`crate::lower::layout`]). Here such a value — a header
//! field, a local, a parameter — is an [`Agg`] of two leaves: the value
//! (relative path `""`, no scalar type, so no arithmetic can take it)
//! and the length (relative path [`LEN`]). That makes everything the
//! lowering does with aggregates work for varbits unchanged: locals and
//! parameters get scratch slots for both, assignments copy both slot by
//! slot, `setValid()` on an invalid header zeroes both, a header copied
//! whole copies its varbit with it. The only operation of their own is
//! `==`/`!=` ([`Gen::varbit_eq`]).
//!
//! # Invariants
//! - The value's bits above the length are zero. The parse program
//!   writes them so, a local starts as length 0 and value 0, a header
//!   made valid by `setValid()` too, and copies move both leaves. So
//!   equality — the interpreter's: same length and same bits — is
//!   equality of every slot of both leaves, and the deparser emits the
//!   low `length` bits ([`super::super::engine`]).
//! - Nothing else reads a varbit: arithmetic, slices, casts, table keys
//!   and initializers with a varbit are refused at their span.

use sluice_core::keyop::{BinOp as KOp, Insn};

use super::{Agg, Gen, Shape, E, T1};
use crate::ast::{BinOp, Expr};
use crate::diag::{Result, Span};
use crate::lower::layout::varbit_len_width;
use crate::lower::refuse;

/// The relative path of a varbit's length leaf, below the varbit's own
/// (`.options` → `.options.$len`); no P4 name can spell it.
pub const LEN: &str = ".$len";

/// The refusal of a varbit anywhere else in an expression.
pub(super) const IN_EXPRESSION: &str =
    "a varbit in an expression other than `==` and `!=` (or a copy)";

/// The two leaves of a `varbit<max>` at `rel`: value, then length.
pub(super) fn shape(rel: &str, max: u32, out: &mut Shape) {
    out.push((rel.to_string(), false, max, None));
    let lw = varbit_len_width(max);
    out.push((format!("{rel}{LEN}"), false, lw, T1::bits_of(lw)));
}

/// Whether `a` is one varbit value (its value and length leaves).
pub(super) fn is_varbit(a: &Agg) -> bool {
    matches!(a.leaves.as_slice(),
        [v, n] if !v.valid && v.rel.is_empty() && v.t.is_none() && n.rel == LEN)
}

impl Gen<'_> {
    /// The varbit `e` denotes (a field, a local, part of a local), if it
    /// denotes one.
    fn varbit_place(&self, e: &Expr) -> Result<Option<Agg>> {
        Ok(self.agg_place(e)?.filter(is_varbit))
    }

    /// `a == b` or `a != b` where an operand is a varbit: equal lengths
    /// and equal bits, compared slot by slot (`None`: no operand is a
    /// varbit, the caller compiles the comparison).
    pub(super) fn varbit_eq(
        &mut self,
        op: BinOp,
        a: &Expr,
        b: &Expr,
        span: Span,
    ) -> Result<Option<E>> {
        if !matches!(op, BinOp::Eq | BinOp::Ne) {
            return Ok(None);
        }
        let (x, y) = (self.varbit_place(a)?, self.varbit_place(b)?);
        let (x, y) = match (x, y) {
            (None, None) => return Ok(None),
            (Some(x), Some(y)) => (x, y),
            _ => return Err(refuse(span, "a comparison of a varbit with another type")),
        };
        let pairs: Vec<_> = x
            .leaves
            .iter()
            .zip(&y.leaves)
            .flat_map(|(p, q)| p.slots.iter().copied().zip(q.slots.iter().copied()))
            .collect();
        let same = x.leaves.iter().zip(&y.leaves).all(|(p, q)| {
            p.width == q.width
                && p.slots.len() == q.slots.len()
                && p.slots.iter().zip(&q.slots).all(|(s, t)| s.width == t.width)
        });
        if !same || pairs.is_empty() {
            return Err(refuse(span, "a comparison of varbits of different sizes"));
        }
        // acc = AND over slot pairs of (x == y); then `!=` flips it.
        let acc = self.reg(span)?;
        let (rx, ry) = (self.reg(span)?, self.reg(span)?);
        for (k, (s, t)) in pairs.into_iter().enumerate() {
            self.emit(Insn::Load { dst: rx, from: s });
            self.emit(Insn::Load { dst: ry, from: t });
            let dst = if k == 0 { acc } else { rx };
            self.emit(Insn::Bin { op: KOp::Eq, dst, a: rx, b: ry, width: s.width });
            if k > 0 {
                self.emit(Insn::Bin { op: KOp::And, dst: acc, a: acc, b: rx, width: 1 });
            }
        }
        if op == BinOp::Ne {
            self.emit(Insn::Not { dst: acc, a: acc, width: 1 });
        }
        self.next_reg = acc + 1;
        Ok(Some(E::R(acc, T1::Bool)))
    }
}
