//! Meter bands (OpenFlow 1.3.5 §7.3.4.4) and the meter flag bits.
//!
//! `OFPT_METER_MOD` itself lives in `message`; the meter multipart bodies
//! live in `multipart`. Both use [`MeterBand`].
//!
//! Every band starts with `struct ofp_meter_band_header`:
//!
//! ```text
//!  0  type u16   2  len u16   4  rate u32   8  burst_size u32
//! 12  drop: pad[4] | dscp_remark: prec_level u8, pad[3] | experimenter: experimenter u32
//! 16  (experimenter only) experimenter-defined data
//! ```
//!
//! Errors (all `OFPMMFC_BAD_BAND`, "bad band", the one code the spec has for
//! a malformed band): an unknown band type; `len` below 16, not a multiple
//! of 8, or past the end of the list; a drop or dscp_remark band whose `len`
//! is not exactly 16. Experimenter bands keep their data verbatim; whether
//! the experimenter is known is the extension registry's business.

use crate::error::{ErrorCode, Result};
use crate::wire::{Put, Reader};

/// `OFPMBT_*` band types.
pub mod band_type {
    pub const DROP: u16 = 1;
    pub const DSCP_REMARK: u16 = 2;
    pub const EXPERIMENTER: u16 = 0xffff;
}

/// `struct ofp_meter_band_*`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MeterBand {
    Drop {
        rate: u32,
        burst_size: u32,
    },
    DscpRemark {
        rate: u32,
        burst_size: u32,
        prec_level: u8,
    },
    /// `data` after the experimenter id, verbatim.
    Experimenter {
        rate: u32,
        burst_size: u32,
        experimenter: u32,
        data: Vec<u8>,
    },
}

impl MeterBand {
    /// Length of a drop or dscp_remark band, and of the fixed part of an
    /// experimenter band.
    pub const LEN: usize = 16;

    /// The `OFPMBT_*` type number.
    pub fn band_type(&self) -> u16 {
        match self {
            MeterBand::Drop { .. } => band_type::DROP,
            MeterBand::DscpRemark { .. } => band_type::DSCP_REMARK,
            MeterBand::Experimenter { .. } => band_type::EXPERIMENTER,
        }
    }

    pub fn rate(&self) -> u32 {
        match self {
            MeterBand::Drop { rate, .. }
            | MeterBand::DscpRemark { rate, .. }
            | MeterBand::Experimenter { rate, .. } => *rate,
        }
    }

    pub fn burst_size(&self) -> u32 {
        match self {
            MeterBand::Drop { burst_size, .. }
            | MeterBand::DscpRemark { burst_size, .. }
            | MeterBand::Experimenter { burst_size, .. } => *burst_size,
        }
    }

    /// Parse one band at the reader's position (see the module docs).
    pub fn parse(r: &mut Reader<'_>) -> Result<MeterBand> {
        const BAD: ErrorCode = ErrorCode::MMFC_BAD_BAND;
        let rem = r.remaining();
        if rem < Self::LEN {
            return Err(BAD);
        }
        let ty = r.peek_u16(0).map_err(|_| BAD)?;
        let len = r.peek_u16(2).map_err(|_| BAD)? as usize;
        if len < Self::LEN || len % 8 != 0 || len > rem {
            return Err(BAD);
        }
        let fixed_only = matches!(ty, band_type::DROP | band_type::DSCP_REMARK);
        if fixed_only && len != Self::LEN {
            return Err(BAD);
        }
        if !fixed_only && ty != band_type::EXPERIMENTER {
            return Err(BAD);
        }
        let mut b = Reader::new(r.bytes(len).map_err(|_| BAD)?, BAD);
        b.skip(4)?;
        let rate = b.u32()?;
        let burst_size = b.u32()?;
        Ok(match ty {
            band_type::DROP => MeterBand::Drop { rate, burst_size },
            band_type::DSCP_REMARK => {
                MeterBand::DscpRemark { rate, burst_size, prec_level: b.u8()? }
            }
            _ => MeterBand::Experimenter {
                rate,
                burst_size,
                experimenter: b.u32()?,
                data: b.rest().to_vec(),
            },
        })
    }

    /// Append the encoding. An experimenter band's `data` should be sized so
    /// that the band is a multiple of 8 bytes; it is written verbatim.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u16(self.band_type());
        out.put_u16(self.wire_len() as u16);
        out.put_u32(self.rate());
        out.put_u32(self.burst_size());
        match self {
            MeterBand::Drop { .. } => out.put_zeros(4),
            MeterBand::DscpRemark { prec_level, .. } => {
                out.put_u8(*prec_level);
                out.put_zeros(3);
            }
            MeterBand::Experimenter { experimenter, data, .. } => {
                out.put_u32(*experimenter);
                out.put_slice(data);
            }
        }
    }

    pub fn wire_len(&self) -> usize {
        match self {
            MeterBand::Experimenter { data, .. } => Self::LEN + data.len(),
            _ => Self::LEN,
        }
    }

    /// Parse a band list occupying all of `buf`.
    pub fn parse_list(buf: &[u8]) -> Result<Vec<MeterBand>> {
        let mut r = Reader::new(buf, ErrorCode::MMFC_BAD_BAND);
        let mut v = Vec::new();
        while !r.is_empty() {
            // Every successful parse consumes at least 16 bytes.
            v.push(MeterBand::parse(&mut r)?);
        }
        Ok(v)
    }

    pub fn emit_list(list: &[MeterBand], out: &mut Vec<u8>) {
        for b in list {
            b.emit(out);
        }
    }

    pub fn list_len(list: &[MeterBand]) -> usize {
        list.iter().map(MeterBand::wire_len).sum()
    }
}

/// `OFPMF_*` meter flags.
pub mod flags {
    pub const KBPS: u16 = 1 << 0;
    pub const PKTPS: u16 = 1 << 1;
    pub const BURST: u16 = 1 << 2;
    pub const STATS: u16 = 1 << 3;
}

/// Generator of arbitrary bands (experimenter data a multiple of 8 bytes, so
/// the band length is too).
#[cfg(test)]
pub(crate) fn arb_meter_band() -> impl proptest::strategy::Strategy<Value = MeterBand> {
    use proptest::prelude::*;
    prop_oneof![
        (any::<u32>(), any::<u32>())
            .prop_map(|(rate, burst_size)| MeterBand::Drop { rate, burst_size }),
        (any::<u32>(), any::<u32>(), any::<u8>()).prop_map(|(rate, burst_size, prec_level)| {
            MeterBand::DscpRemark { rate, burst_size, prec_level }
        }),
        (
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            proptest::collection::vec(any::<[u8; 8]>(), 0..3)
        )
            .prop_map(|(rate, burst_size, experimenter, d)| MeterBand::Experimenter {
                rate,
                burst_size,
                experimenter,
                data: d.concat(),
            }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const DROP: [u8; 16] = [
        0x00, 0x01, 0x00, 0x10, // type DROP, len 16
        0x00, 0x00, 0x03, 0xe8, // rate 1000
        0x00, 0x00, 0x00, 0x64, // burst 100
        0, 0, 0, 0,
    ];
    const DSCP: [u8; 16] =
        [0x00, 0x02, 0x00, 0x10, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x02, 0, 0, 0];
    const EXP: [u8; 24] = [
        0xff, 0xff, 0x00, 0x18, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x53, 0x4c, 0x49,
        0x43, //
        1, 2, 3, 4, 5, 6, 7, 8,
    ];

    #[test]
    fn literal_bands() {
        let mut all = Vec::new();
        all.extend_from_slice(&DROP);
        all.extend_from_slice(&DSCP);
        all.extend_from_slice(&EXP);
        let v = MeterBand::parse_list(&all).unwrap();
        assert_eq!(
            v,
            vec![
                MeterBand::Drop { rate: 1000, burst_size: 100 },
                MeterBand::DscpRemark { rate: 10, burst_size: 0, prec_level: 2 },
                MeterBand::Experimenter {
                    rate: 1,
                    burst_size: 2,
                    experimenter: 0x534c_4943,
                    data: vec![1, 2, 3, 4, 5, 6, 7, 8]
                },
            ]
        );
        let mut out = Vec::new();
        MeterBand::emit_list(&v, &mut out);
        assert_eq!(out, all);
        assert_eq!(MeterBand::list_len(&v), all.len());
    }

    #[test]
    fn band_errors() {
        let bad =
            |b: &[u8]| assert_eq!(MeterBand::parse_list(b), Err(ErrorCode::MMFC_BAD_BAND), "{b:?}");
        // Unknown type.
        let mut b = DROP;
        b[1] = 3;
        bad(&b);
        // Drop with len 24.
        let mut l = DROP.to_vec();
        l.extend_from_slice(&[0; 8]);
        l[3] = 24;
        bad(&l);
        // len < 16, len 0, len overrunning, len not a multiple of 8.
        for n in [8u8, 0, 32, 20] {
            let mut b = EXP;
            b[3] = n;
            bad(&b);
        }
        // Truncated header.
        bad(&DROP[..12]);
    }

    proptest! {
        #[test]
        fn band_round_trips(b in arb_meter_band()) {
            let mut out = Vec::new();
            b.emit(&mut out);
            prop_assert_eq!(out.len(), b.wire_len());
            let mut r = Reader::new(&out, ErrorCode::BRC_BAD_LEN);
            prop_assert_eq!(MeterBand::parse(&mut r).unwrap(), b);
            prop_assert!(r.is_empty());
        }

        #[test]
        fn band_parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = MeterBand::parse_list(&b);
        }
    }
}
