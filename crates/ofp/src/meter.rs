//! Meter bands (OpenFlow 1.3.5 §7.3.4.4).
//!
//! CONTRACT (filled in by the multipart work item; MeterMod itself is in
//! `message`).

use crate::error::Result;
use crate::wire::Reader;

/// `struct ofp_meter_band_*`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MeterBand {
    Drop { rate: u32, burst_size: u32 },
    DscpRemark { rate: u32, burst_size: u32, prec_level: u8 },
    /// `data` after the experimenter id, verbatim.
    Experimenter { rate: u32, burst_size: u32, experimenter: u32, data: Vec<u8> },
}

impl MeterBand {
    pub fn parse(_r: &mut Reader<'_>) -> Result<MeterBand> {
        todo!()
    }
    pub fn emit(&self, _out: &mut Vec<u8>) {
        todo!()
    }
    pub fn wire_len(&self) -> usize {
        todo!()
    }
    /// Parse a band list occupying all of `buf`.
    pub fn parse_list(_buf: &[u8]) -> Result<Vec<MeterBand>> {
        todo!()
    }
}

/// `OFPMF_*` meter flags.
pub mod flags {
    pub const KBPS: u16 = 1 << 0;
    pub const PKTPS: u16 = 1 << 1;
    pub const BURST: u16 = 1 << 2;
    pub const STATS: u16 = 1 << 3;
}
