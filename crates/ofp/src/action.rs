//! Actions (OpenFlow 1.3.5 §7.2.5, `struct ofp_action_*`).
//!
//! CONTRACT (filled in by the action/instruction work item).

use crate::error::Result;
use crate::oxm::Oxm;
use crate::wire::Reader;

/// One action. `SetField` carries exactly one OXM (no mask allowed).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    Output { port: u32, max_len: u16 },
    CopyTtlOut,
    CopyTtlIn,
    SetMplsTtl(u8),
    DecMplsTtl,
    PushVlan(u16),
    PopVlan,
    PushMpls(u16),
    PopMpls(u16),
    SetQueue(u32),
    Group(u32),
    SetNwTtl(u8),
    DecNwTtl,
    SetField(Oxm),
    PushPbb(u16),
    PopPbb,
    /// `OFPAT_EXPERIMENTER`: `data` is everything after the experimenter id
    /// (including the experimenter's own padding), preserved verbatim.
    Experimenter { experimenter: u32, data: Vec<u8> },
}

impl Action {
    pub fn parse(_r: &mut Reader<'_>) -> Result<Action> {
        todo!()
    }
    pub fn emit(&self, _out: &mut Vec<u8>) {
        todo!()
    }
    pub fn wire_len(&self) -> usize {
        todo!()
    }
    /// Parse a whole action list occupying all of `buf`.
    pub fn parse_list(_buf: &[u8]) -> Result<Vec<Action>> {
        todo!()
    }
    pub fn emit_list(list: &[Action], out: &mut Vec<u8>) {
        for a in list {
            a.emit(out);
        }
    }
    pub fn list_len(list: &[Action]) -> usize {
        list.iter().map(Action::wire_len).sum()
    }
}
