//! Field copy and load actions in the OpenFlow front end: Nicira's
//! `move`/`load` and the ONF copy-field (`sluice_ofp::fieldcopy` decodes
//! them), the actions controllers use to answer ARP and ICMP echo in the
//! data plane.
//!
//! - **Not through the registry**: the front end decodes these three
//!   actions itself (Nicira 0x00002320, ONF 0x4f4e4600) before it asks
//!   the experimenter registry, so every other object of those ids gets
//!   the error it always got (`OFPBAC_BAD_EXPERIMENTER`, …).
//! - **Validation** ([`check_prereqs`], from `flow_mod.rs`): both fields'
//!   prerequisites must follow from the flow's match (and the actions
//!   before it), `OFPBAC_MATCH_INCONSISTENT` otherwise, as Open vSwitch
//!   checks them; a `vlan_vid` destination needs a tag, as `set_field`
//!   does.
//! - **Lowering** ([`lower`]): a load of a whole field is an
//!   [`Op::SetField`]; anything else is an [`Op::CopyField`].
//! - **Reference** ([`reference_apply`]): reads the fields from the
//!   packet's fresh key, splices the bits one at a time and writes the
//!   destination through `set_field`'s rewrite, never through the op.
//!
//! At run time a move or load whose source or destination field is not
//! in the packet does nothing (Open vSwitch skips it the same way).

use crate::exec::Pkt;
use crate::flow_mod::PacketFacts;
use crate::oxm_field;
use sluice_core::op::{CopySource, FieldCopy, Op};
use sluice_ofp::error::{ErrorCode, Result};
use sluice_ofp::fieldcopy::FieldAction;
use sluice_ofp::oxm::{FieldBytes, FieldId};
use sluice_packet::key::FIXED_LAYOUT;
use sluice_packet::FieldValue;

/// The fields a decoded action reads and writes (the decoder checked
/// they exist).
fn fields(a: &FieldAction) -> (Option<FieldId>, Option<FieldId>) {
    match a {
        FieldAction::Move { src, dst, .. } => (src.field_id(), dst.field_id()),
        FieldAction::Load { dst, .. } => (None, dst.field_id()),
    }
}

/// `OFPBAC_MATCH_INCONSISTENT` unless the prerequisites of every field
/// `a` reads or writes follow from `facts`.
pub fn check_prereqs(a: &FieldAction, facts: &PacketFacts) -> Result<()> {
    let (src, dst) = fields(a);
    let dst = dst.ok_or(ErrorCode::BAC_BAD_SET_TYPE)?;
    if dst == FieldId::VlanVid && facts.vlan != Some(true) {
        return Err(ErrorCode::BAC_MATCH_INCONSISTENT);
    }
    for f in src.into_iter().chain([dst]) {
        if !facts.allows_field(f) {
            return Err(ErrorCode::BAC_MATCH_INCONSISTENT);
        }
    }
    Ok(())
}

/// The op that does what `a` does.
pub fn lower(a: &FieldAction) -> Op {
    let (src, dst) = fields(a);
    let Some(dst_f) = dst else { return Op::Nop };
    let dst = oxm_field::field(dst_f);
    let c = match a {
        FieldAction::Load { dst: d, value } => {
            if d.ofs == 0 && u32::from(d.n_bits) == dst_f.bits() {
                let be = u128::from(*value).to_be_bytes();
                return match FieldValue::from_be_slice(&be[16 - dst_f.len()..]) {
                    Some(value) => Op::SetField { field: dst, value },
                    None => Op::Nop,
                };
            }
            FieldCopy {
                src: CopySource::Value(u128::from(*value)),
                dst,
                dst_ofs: d.ofs,
                n_bits: d.n_bits,
            }
        }
        FieldAction::Move { src: s, dst: d, .. } => match src {
            Some(f) => FieldCopy {
                src: CopySource::Field { field: oxm_field::field(f), ofs: s.ofs },
                dst,
                dst_ofs: d.ofs,
                n_bits: d.n_bits,
            },
            None => return Op::Nop,
        },
    };
    Op::CopyField(Box::new(c))
}

/// The reference reading of `a` on `pkt` (whose key is fresh): the new
/// destination value, or `None` when a field is absent (nothing happens).
pub(crate) fn reference_value(a: &FieldAction, pkt: &Pkt) -> Option<(FieldId, FieldBytes)> {
    let present = |f: FieldId| FIXED_LAYOUT.present(&pkt.key, oxm_field::field(f));
    let (src, dst) = fields(a);
    let dst_f = dst?;
    if !present(dst_f) || src.is_some_and(|f| !present(f)) {
        return None;
    }
    let get_bit = |v: u128, i: u32| i < 128 && (v >> i) & 1 == 1;
    let mut out = crate::exec::field(pkt, dst_f);
    let (bits, from, to, n) = match a {
        FieldAction::Load { dst, value } => (u128::from(*value), 0, dst.ofs, dst.n_bits),
        FieldAction::Move { src: s, dst: d, .. } => {
            (crate::exec::field(pkt, src?), u32::from(s.ofs), d.ofs, d.n_bits)
        }
    };
    for i in 0..u32::from(n) {
        let t = u32::from(to) + i;
        if t >= 128 {
            return None;
        }
        if get_bit(bits, from + i) {
            out |= 1 << t;
        } else {
            out &= !(1 << t);
        }
    }
    Some((dst_f, FieldBytes::from_u128(out, dst_f.len())))
}
