//! Lowering OpenFlow instructions and actions to the core's ops
//! ([`sluice_core::op`]).
//!
//! The OpenFlow front end lowers once, never per packet: a flow entry's
//! instructions when the flow-mod installs or modifies it
//! ([`FlowEntry::ops`](crate::table::FlowEntry)), a group's buckets when the
//! group-mod does, a PACKET_OUT's actions once per message. Every datapath
//! but `Datapath::Reference` runs only these ops, and cache entries compose
//! them. The reference (and `Pipeline::trace`) interprets
//! `sluice_ofp::Instruction` and `Action` straight from the spec instead
//! (`exec.rs`: `ActionSet`, `Pipeline::action`, `edit.rs`), never through
//! this lowering, so the differential tests, which compare every other
//! datapath with the reference, check the lowering and the core's executor
//! against the spec's reading.

use crate::oxm_field;
use crate::reference::{set_rank, set_slot};
use sluice_core::op::{Deferred, EntryOps, Op};
use sluice_ofp::action::Action;
use sluice_ofp::fieldcopy::FieldAction;
use sluice_ofp::instruction::Instruction;
use sluice_ofp::oxm::Oxm;
use sluice_ofp::pof::PofAction;
use sluice_packet::FieldValue;

/// The op that does what `a` does.
///
/// sluice's POF actions lower to window edits ([`crate::pof::lower`]),
/// Nicira's move and load and the ONF copy-field to field copies
/// ([`crate::fieldcopy::lower`]).
/// Other experimenter actions and experimenter set-fields lower to
/// [`Op::Nop`], which is also what the direct interpretation does with
/// them: flow-mod validation refuses them unless a registered extension
/// accepts them (`extension.rs`), and only sluice's POF actions have an
/// execution hook. (A POF action that fails to decode cannot reach here:
/// validation refused it; it would lower to [`Op::Nop`].)
pub fn lower(a: &Action) -> Op {
    match a {
        Action::Output { port, max_len } => Op::Output { port: *port, max_len: *max_len },
        Action::CopyTtlOut => Op::CopyTtlOut,
        Action::CopyTtlIn => Op::CopyTtlIn,
        Action::SetMplsTtl(t) => Op::SetMplsTtl(*t),
        Action::DecMplsTtl => Op::DecMplsTtl,
        Action::PushVlan(t) => Op::PushVlan(*t),
        Action::PopVlan => Op::PopVlan,
        Action::PushMpls(t) => Op::PushMpls(*t),
        Action::PopMpls(t) => Op::PopMpls(*t),
        Action::SetQueue(q) => Op::SetQueue(*q),
        Action::Group(g) => Op::Group(*g),
        Action::SetNwTtl(t) => Op::SetNwTtl(*t),
        Action::DecNwTtl => Op::DecNwTtl,
        Action::SetField(Oxm::Basic { field, value, .. }) => {
            match FieldValue::from_be_slice(value.as_slice()) {
                Some(value) => Op::SetField { field: oxm_field::field(*field), value },
                None => Op::Nop,
            }
        }
        Action::SetField(_) => Op::Nop,
        Action::PushPbb(t) => Op::PushPbb(*t),
        Action::PopPbb => Op::PopPbb,
        Action::Experimenter { .. } => {
            if let Some(f) = FieldAction::from_action(a) {
                return f.map_or(Op::Nop, |f| crate::fieldcopy::lower(&f));
            }
            match PofAction::from_action(a) {
                Some(Ok(p)) => crate::pof::lower(&p).unwrap_or(Op::Nop),
                _ => Op::Nop,
            }
        }
    }
}

/// `a` as written to the action set (§5.10): one op per action type, one
/// set-field per field (`slot`), run in the spec's order (`rank`), a group
/// voiding the output.
pub fn deferred(a: &Action) -> Deferred {
    let (code, field) = set_slot(a);
    let slot = |code: u16, field: Option<sluice_ofp::oxm::FieldId>| {
        (u32::from(code) << 8) | field.map_or(0xff, |f| u32::from(f as u8))
    };
    let supersedes = matches!(a, Action::Group(_))
        .then(|| slot(Action::Output { port: 0, max_len: 0 }.type_code(), None));
    Deferred { slot: slot(code, field), rank: set_rank(a), supersedes, op: lower(a) }
}

/// An entry's instructions as the core runs them, in the spec's execution
/// order (§5.9). Flow-mod validation lets at most one instruction of each
/// type through; a list with more (which only a test could build) lowers
/// to what the direct interpretation does with it, except that only its
/// last meter runs.
pub fn lower_instructions(ins: &[Instruction]) -> EntryOps {
    lower_instructions_with(ins, &mut |_| None)
}

/// [`lower_instructions`] where `special` may lower an apply-action
/// itself (the pipeline's `send_maps` reporters, which need its state).
pub fn lower_instructions_with(
    ins: &[Instruction],
    special: &mut dyn FnMut(&Action) -> Option<Op>,
) -> EntryOps {
    let mut out = EntryOps::default();
    let mut apply = Vec::new();
    let mut write = Vec::new();
    let mut ordered: Vec<&Instruction> = ins.iter().collect();
    ordered.sort_by_key(|i| i.exec_rank());
    for i in ordered {
        match i {
            Instruction::Meter(m) => out.meter = Some(*m),
            Instruction::ApplyActions(list) => {
                apply.extend(list.iter().map(|a| special(a).unwrap_or_else(|| lower(a))))
            }
            Instruction::ClearActions => {
                out.clear = true;
                write.clear();
            }
            Instruction::WriteActions(list) => write.extend(list.iter().map(deferred)),
            Instruction::WriteMetadata { metadata, mask } => {
                let (v, m) = out.metadata.unwrap_or((0, 0));
                out.metadata = Some(((v & !mask) | (metadata & mask), m | mask));
            }
            Instruction::GotoTable(t) => out.next = Some(*t),
            Instruction::Experimenter { .. } => {}
        }
    }
    out.apply = apply.into();
    out.write = write.into();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_ofp::oxm::{FieldBytes, FieldId};
    use sluice_packet::Field;

    #[test]
    fn set_field_keeps_the_value_bytes_and_maps_the_field() {
        let a = Action::SetField(Oxm::Basic {
            field: FieldId::TcpDst,
            value: FieldBytes::from_u128(80, 2),
            mask: None,
        });
        assert_eq!(
            lower(&a),
            Op::SetField {
                field: Field::TcpDst,
                value: FieldValue::from_be_slice(&[0, 80]).unwrap()
            }
        );
        assert_eq!(lower(&Action::Experimenter { experimenter: 1, data: vec![] }), Op::Nop);
    }
}
