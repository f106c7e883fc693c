//! Header edits of actions: the pipeline's side of `sluice_packet::rewrite`.
//!
//! After every edit that succeeds the packet is re-parsed, so the key and
//! the header offsets always describe the bytes. An action whose header is
//! absent (pop_vlan on an untagged frame, set_field of an ARP field on an
//! IP packet after a pop, …) leaves the packet alone, as Open vSwitch does;
//! prerequisites make most of these impossible at flow-mod time. TTL
//! decrements that would reach zero report [`Outcome::InvalidTtl`] (the
//! caller drops the packet and sends an INVALID_TTL packet-in).
//! `set_field` of the pipeline fields `metadata` and `tunnel_id` writes the
//! packet's [`Meta`](sluice_packet::parse::Meta), which later tables match.

use crate::exec::Pkt;
use crate::meter;
use sluice_core::op::{Edited, Op};
use sluice_core::window;
use sluice_ofp::action::Action;
use sluice_ofp::fieldcopy::FieldAction;
use sluice_ofp::oxm::{FieldId, Oxm};
use sluice_ofp::pof::PofAction;
use sluice_packet::rewrite::{self as rw, RewriteError};

pub enum Outcome {
    Done,
    InvalidTtl,
}

pub fn apply(a: &Action, pkt: &mut Pkt) -> Outcome {
    // Pipeline fields live in the packet's metadata, not its bytes.
    if let Action::SetField(Oxm::Basic { field, value, .. }) = a {
        let v = value.to_u128() as u64;
        match field {
            FieldId::Metadata => pkt.meta.metadata = v,
            FieldId::TunnelId => pkt.meta.tunnel_id = v,
            _ => {}
        }
        if matches!(field, FieldId::Metadata | FieldId::TunnelId) {
            pkt.reparse();
            return Outcome::Done;
        }
    }
    if let Some(Ok(f)) = FieldAction::from_action(a) {
        // A move or load: the destination's new value, written as the
        // set-field of that value would be (nothing if a field is absent).
        return match crate::fieldcopy::reference_value(&f, pkt) {
            Some((field, value)) => {
                apply(&Action::SetField(Oxm::Basic { field, value, mask: None }), pkt)
            }
            None => Outcome::Done,
        };
    }
    if let Some(Ok(p)) = PofAction::from_action(a) {
        // POF window edits: the core's bit-by-bit reference executor, not
        // the fast one the lowered ops run.
        if let Ok(Op::Window(op)) = crate::pof::lower(&p) {
            if window::reference_apply(&op, &mut pkt.buf, &pkt.info, &mut pkt.meta)
                == Edited::Changed
            {
                pkt.reparse();
            }
        }
        return Outcome::Done;
    }
    let (buf, info) = (&mut pkt.buf, &pkt.info);
    let r: Result<(), RewriteError> = match a {
        Action::CopyTtlOut => rw::copy_ttl_out(buf, info),
        Action::CopyTtlIn => rw::copy_ttl_in(buf, info),
        Action::SetMplsTtl(t) => rw::set_mpls_ttl(buf, info, *t),
        Action::DecMplsTtl => rw::dec_mpls_ttl(buf, info).map(drop),
        Action::PushVlan(t) => rw::push_vlan(buf, info, *t),
        Action::PopVlan => rw::pop_vlan(buf, info),
        Action::PushMpls(t) => rw::push_mpls(buf, info, *t),
        Action::PopMpls(t) => rw::pop_mpls(buf, info, *t),
        Action::PushPbb(t) => rw::push_pbb(buf, info, *t),
        Action::PopPbb => rw::pop_pbb(buf, info),
        Action::SetNwTtl(t) => rw::set_nw_ttl(buf, info, *t),
        Action::DecNwTtl => rw::dec_nw_ttl(buf, info).map(drop),
        Action::SetField(Oxm::Basic { field, value, .. }) => {
            rw::apply_set_field(buf, info, crate::oxm_field::field(*field), value.as_slice())
        }
        // Output, group and set-queue are the pipeline's; other
        // experimenter actions have no effect (see `lower.rs`).
        _ => Ok(()),
    };
    match r {
        Ok(()) => {
            pkt.reparse();
            Outcome::Done
        }
        Err(RewriteError::InvalidTtl) => Outcome::InvalidTtl,
        Err(_) => Outcome::Done,
    }
}

/// DSCP_REMARK meter band: raise the packet's drop precedence.
pub fn remark_dscp(pkt: &mut Pkt, levels: u8) {
    if !sluice_packet::key::FIXED_LAYOUT.present(&pkt.key, sluice_packet::Field::IpDscp) {
        return;
    }
    let old = crate::exec::field(pkt, FieldId::IpDscp) as u8;
    let new = meter::remark_dscp(old, levels);
    if new != old
        && rw::apply_set_field(&mut pkt.buf, &pkt.info, sluice_packet::Field::IpDscp, &[new])
            .is_ok()
    {
        pkt.reparse();
    }
}
