//! Instructions (OpenFlow 1.3.5 §7.2.4, `struct ofp_instruction_*`).
//!
//! CONTRACT (filled in by the action/instruction work item).

use crate::action::Action;
use crate::error::Result;
use crate::wire::Reader;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Instruction {
    GotoTable(u8),
    WriteMetadata { metadata: u64, mask: u64 },
    WriteActions(Vec<Action>),
    ApplyActions(Vec<Action>),
    ClearActions,
    Meter(u32),
    /// `OFPIT_EXPERIMENTER`: `data` after the experimenter id, verbatim.
    Experimenter { experimenter: u32, data: Vec<u8> },
}

impl Instruction {
    pub fn parse(_r: &mut Reader<'_>) -> Result<Instruction> {
        todo!()
    }
    pub fn emit(&self, _out: &mut Vec<u8>) {
        todo!()
    }
    pub fn wire_len(&self) -> usize {
        todo!()
    }
    /// Parse a whole instruction list occupying all of `buf`.
    pub fn parse_list(_buf: &[u8]) -> Result<Vec<Instruction>> {
        todo!()
    }
    pub fn emit_list(list: &[Instruction], out: &mut Vec<u8>) {
        for i in list {
            i.emit(out);
        }
    }
}
