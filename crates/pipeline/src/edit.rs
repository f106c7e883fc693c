//! Header edits of actions, on top of `sluice_packet`'s rewriting.
//! (Being wired to `sluice_packet::rewrite`; until then edits are no-ops
//! and the tests that need them do not exist yet.)

use crate::exec::Pkt;
use sluice_ofp::action::Action;

pub enum Outcome {
    Done,
    InvalidTtl,
}

pub fn apply(_a: &Action, _pkt: &mut Pkt) -> Outcome {
    Outcome::Done
}

pub fn remark_dscp(_pkt: &mut Pkt, _levels: u8) {}
