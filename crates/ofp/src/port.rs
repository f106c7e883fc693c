//! `struct ofp_port` and port-related bit sets (OpenFlow 1.3.5 §7.2.1).
//!
//! CONTRACT (filled in by the multipart work item).

use crate::error::Result;
use crate::wire::Reader;

/// `struct ofp_port` (64 bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Port {
    pub port_no: u32,
    pub hw_addr: [u8; 6],
    /// At most 15 bytes on the wire (NUL-terminated in 16).
    pub name: String,
    /// `OFPPC_*` bits.
    pub config: u32,
    /// `OFPPS_*` bits.
    pub state: u32,
    /// `OFPPF_*` bits.
    pub curr: u32,
    pub advertised: u32,
    pub supported: u32,
    pub peer: u32,
    pub curr_speed: u32,
    pub max_speed: u32,
}

impl Port {
    pub const LEN: usize = 64;
    pub fn parse(_r: &mut Reader<'_>) -> Result<Port> {
        todo!()
    }
    pub fn emit(&self, _out: &mut Vec<u8>) {
        todo!()
    }
}

/// `OFPPC_*` (port config) bits.
pub mod config {
    pub const PORT_DOWN: u32 = 1 << 0;
    pub const NO_RECV: u32 = 1 << 2;
    pub const NO_FWD: u32 = 1 << 5;
    pub const NO_PACKET_IN: u32 = 1 << 6;
}

/// `OFPPS_*` (port state) bits.
pub mod state {
    pub const LINK_DOWN: u32 = 1 << 0;
    pub const BLOCKED: u32 = 1 << 1;
    pub const LIVE: u32 = 1 << 2;
}
