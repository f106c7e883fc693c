//! POF in the OpenFlow front end: `pof` match fields become extract
//! windows, POF actions become window edits.
//!
//! # What
//! A `pof` match field ([`PofMatch`], decoded by `sluice_ofp::pof`) names
//! `{base, bit offset, bit length ≤ 128}`. The pipeline keeps one
//! [`Windows`]: the core's [`KeyLayout`] with every window a rule has
//! used so far, and the [`Extract`] program compiled from it, which every
//! packet's parse runs (`Frontend::extract`). A rule on a field sets mask
//! and value bits on the field's windows like on any fixed field, so the
//! classifier, compiled tables, megaflow un-wildcarding and composed
//! programs see window bits as plain key bits. POF actions lower to
//! [`Op::Window`] ([`lower`]).
//!
//! # Basic design
//! - A field of up to 64 bits is one window; a wider one (up to 128) is
//!   two: its first 64 bits and the rest. A rule with a non-zero mask on
//!   the field requires *every* part present (inside the frame), even a
//!   part its mask leaves out, so "the whole field is inside the frame" is
//!   what a rule on it asks, however it is masked.
//! - Windows are declared when a flow-mod adds a rule that needs them, on
//!   a copy of the layout that replaces the pipeline's only if every part
//!   fits (a refused flow-mod changes nothing). Requests that only select
//!   rules (modify, delete, flow stats) never declare: a field on a window
//!   no rule uses selects no rule ([`Windows::select`]).
//! - Windows are never released (a layout only grows), so the extract
//!   program never changes under a rule that uses it.
//!
//! # Limits
//! The core's layout decides: window values share the key's three words
//! reserved for them (192 bits, each window inside one word, first fit),
//! and each window takes one of 67 presence bits. So a pipeline holds, for
//! example, six distinct 32-bit fields or three 64-bit ones, and at most
//! 67 distinct windows however narrow. Identical fields in different rules
//! and tables share their windows. A flow-mod that needs a window past
//! these limits is refused with `OFPFMFC_TABLE_FULL` (the switch's
//! classification resources are full; the table itself may have room).
//!
//! # Invariants
//! - The extract program is always [`Extract::compile`] of the layout.
//! - A rule's window bits are set only through [`KeyLayout::add_match`]
//!   and presence bits, so a rule never matches a packet whose field ran
//!   past the frame or lacked its base.

use std::sync::Arc;

use sluice_core::extract::Extract;
use sluice_core::layout::{Base, KeyLayout, Window, WindowId, MAX_WINDOW_BITS};
use sluice_core::op::Op;
use sluice_core::window::{Pos, WindowOp};
use sluice_ofp::error::{ErrorCode, Result};
use sluice_ofp::pof::{PofAction, PofBase, PofField, PofMatch, PofPos};

use crate::rule::Rule;

/// The windows `pof` fields use and the extract program that fills them.
#[derive(Clone, Debug, Default)]
pub struct Windows {
    layout: KeyLayout,
    /// `None` until the first window is declared.
    extract: Option<Arc<Extract>>,
}

/// The core's base for a POF base.
pub fn base(b: PofBase) -> Base {
    match b {
        PofBase::Frame => Base::Frame,
        PofBase::L2End => Base::L2End,
        PofBase::L2_5 => Base::L2_5,
        PofBase::L3 => Base::L3,
        PofBase::L4 => Base::L4,
        PofBase::Payload => Base::Payload,
    }
}

/// The core's position for a POF position.
pub fn pos(p: PofPos) -> Pos {
    Pos::new(base(p.base), p.bit_offset)
}

/// The windows of a field, first bits first, each with the number of the
/// field's bits after it (its value's shift in the field's value).
fn parts(f: &PofField) -> impl Iterator<Item = (Window, u32)> + use<> {
    let (len, first) = (u32::from(f.bit_len), f.pos.bit_offset);
    let step = u32::from(MAX_WINDOW_BITS);
    let b = base(f.pos.base);
    (0..len.div_ceil(step)).map(move |i| {
        let from = i * step;
        let n = (len - from).min(step);
        let off = first.saturating_add(from);
        (Window::new(b, off, n as u8), len - from - n)
    })
}

/// Bits `shift..shift + n` of `v`, right-aligned.
fn bits(v: u128, shift: u32, n: u8) -> u64 {
    let ones = u64::MAX >> (64 - u32::from(n));
    (v.checked_shr(shift).unwrap_or(0) as u64) & ones
}

impl Windows {
    /// The extract program (`None`: no window declared).
    pub fn extract(&self) -> Option<&Arc<Extract>> {
        self.extract.as_ref()
    }

    /// The layout.
    pub fn layout(&self) -> &KeyLayout {
        &self.layout
    }

    /// Declare `f`'s windows (for a rule being added); on error nothing
    /// changed.
    pub fn declare(&mut self, f: &PofField) -> Result<Vec<WindowId>> {
        let mut layout = self.layout.clone();
        let before = layout.windows().len();
        let ids = parts(f)
            .map(|(w, _)| layout.declare(w).map_err(|_| ErrorCode::FMFC_TABLE_FULL))
            .collect::<Result<Vec<_>>>()?;
        if layout.windows().len() != before {
            self.extract = Some(Arc::new(Extract::compile(&layout)));
            self.layout = layout;
        }
        Ok(ids)
    }

    /// `f`'s windows if every part is declared.
    pub fn find(&self, f: &PofField) -> Option<Vec<WindowId>> {
        parts(f)
            .map(|(w, _)| {
                self.layout.windows().iter().position(|s| s.window == w).map(|i| WindowId(i as u16))
            })
            .collect()
    }

    /// Add the match `m` on windows `ids` (from [`Windows::declare`] or
    /// [`Windows::find`] of `m.field`) to `rule`. Two fields of one match
    /// that share a window must agree on the bits both look at
    /// (`OFPBMC_BAD_VALUE` otherwise: the rule could match nothing).
    pub fn add_match(&self, rule: &mut Rule, m: &PofMatch, ids: &[WindowId]) -> Result<()> {
        let mask = m.mask.unwrap_or(u128::MAX);
        let len = u32::from(m.field.bit_len);
        let field_ones = if len >= 128 { u128::MAX } else { (1u128 << len) - 1 };
        if mask & field_ones == 0 {
            return Ok(());
        }
        for ((w, shift), &id) in parts(&m.field).zip(ids) {
            let Some(s) = self.layout.slot(id) else { return Err(ErrorCode::BMC_BAD_FIELD) };
            let (word, sh) = (usize::from(s.word), u32::from(s.shift));
            let v = bits(m.value, shift, w.bit_len);
            let mk = bits(mask, shift, w.bit_len);
            let (Some(old_v), Some(old_m)) =
                (rule.value.words.get(word), rule.mask.words.get(word))
            else {
                return Err(ErrorCode::BMC_BAD_FIELD);
            };
            let (old_v, old_m) = ((old_v >> sh) & s.width_mask(), (old_m >> sh) & s.width_mask());
            if (old_v ^ v) & old_m & mk != 0 {
                return Err(ErrorCode::BMC_BAD_VALUE);
            }
            let (nv, nm) = (old_v | (v & mk), old_m | mk);
            self.layout
                .add_match(&mut rule.value, &mut rule.mask, id, nv, Some(nm))
                .map_err(|_| ErrorCode::BMC_BAD_VALUE)?;
            // Every part present, even one the mask leaves out.
            let p = s.presence;
            if let (Some(pv), Some(pm)) = (
                rule.value.words.get_mut(usize::from(p.word)),
                rule.mask.words.get_mut(usize::from(p.word)),
            ) {
                *pv |= p.mask();
                *pm |= p.mask();
            }
        }
        Ok(())
    }
}

/// Lower a POF action to the core's op (checked already by the decoder;
/// [`WindowOp::validate`] is the core's own check, `OFPBAC_BAD_ARGUMENT`
/// if the two ever disagree).
pub fn lower(a: &PofAction) -> Result<Op> {
    let op = match a {
        PofAction::Set { field, value, mask } => WindowOp::Set {
            at: pos(field.pos),
            len: field.bit_len,
            value: *value,
            mask: mask.unwrap_or(u128::MAX),
        },
        PofAction::Modify { field, delta } => {
            WindowOp::Modify { at: pos(field.pos), len: field.bit_len, delta: *delta }
        }
        PofAction::Add { pos: p, bytes } => {
            WindowOp::Insert { at: pos(*p), bytes: bytes.clone().into_boxed_slice() }
        }
        PofAction::Delete { pos: p, len_bits } => {
            WindowOp::Remove { at: pos(*p), len_bits: *len_bits }
        }
        PofAction::Checksum { field, start, calc_len_bits } => WindowOp::Checksum {
            field: pos(field.pos),
            start: pos(*start),
            calc_len_bits: *calc_len_bits,
        },
        PofAction::WriteMetadata { meta_bit, from } => WindowOp::ToMetadata {
            meta_bit: *meta_bit,
            from: pos(from.pos),
            len: u8::try_from(from.bit_len).map_err(|_| ErrorCode::BAC_BAD_ARGUMENT)?,
        },
    };
    op.validate().map_err(|_| ErrorCode::BAC_BAD_ARGUMENT)?;
    Ok(Op::Window(Box::new(op)))
}
