//! Queues and queue properties (OpenFlow 1.3.5 §7.2.2).
//!
//! CONTRACT (filled in by the multipart work item).

use crate::error::Result;
use crate::wire::Reader;

/// `struct ofp_queue_prop_*`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum QueueProp {
    MinRate(u16),
    MaxRate(u16),
    /// `data` after the experimenter id and pad, verbatim.
    Experimenter { experimenter: u32, data: Vec<u8> },
    /// Unknown property type, preserved (body after the 8-byte header).
    Unknown { property: u16, data: Vec<u8> },
}

/// `struct ofp_packet_queue`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PacketQueue {
    pub queue_id: u32,
    pub port: u32,
    pub properties: Vec<QueueProp>,
}

impl PacketQueue {
    pub fn parse(_r: &mut Reader<'_>) -> Result<PacketQueue> {
        todo!()
    }
    pub fn emit(&self, _out: &mut Vec<u8>) {
        todo!()
    }
}
