//! Lowering OpenFlow actions to the core's ops ([`sluice_core::op::Op`]).
//!
//! The OpenFlow front end lowers once per rule or cache entry, never per
//! packet: a cache entry's composed program (`exec.rs`, `compose`) holds
//! the lowered ops of the packet's whole way through the tables. The
//! slow path and the reference keep interpreting `sluice_ofp::Action`
//! directly from the spec (`Pipeline::action`, `edit.rs`), so the
//! differential tests, which compare cached runs with the reference, check
//! this lowering and the core's executor against the spec's reading.

use crate::oxm_field;
use sluice_core::op::Op;
use sluice_ofp::action::Action;
use sluice_ofp::oxm::Oxm;
use sluice_packet::FieldValue;

/// The op that does what `a` does.
///
/// Experimenter actions and experimenter set-fields lower to [`Op::Nop`],
/// which is also what the direct interpretation does with them: flow-mod
/// validation refuses them unless a registered extension accepts them
/// (`extension.rs`), and extensions have no execution hook yet.
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
        Action::Experimenter { .. } => Op::Nop,
    }
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
