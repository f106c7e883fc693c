//! Field copy and load actions: Nicira's `NXAST_REG_MOVE` and
//! `NXAST_REG_LOAD` (what `ovs-ofctl -O OpenFlow13` sends for `move:` and
//! `load:`) and OpenFlow 1.5's copy-field as ONF extension 320 for
//! OpenFlow 1.3.
//!
//! ## What
//! The codec keeps every experimenter action verbatim
//! ([`Action::Experimenter`]); [`FieldAction::from_action`] gives the
//! three encodings below a meaning and [`FieldAction::to_action`] writes
//! them. A field is named by its OXM/NXM header ([`FieldRef`]), kept as
//! sent, so `OXM_OF_IPV4_SRC` (0x80001604) and `NXM_OF_IP_SRC`
//! (0x00000e04) both decode to `ipv4_src` and re-encode unchanged.
//!
//! ## Wire layouts (big-endian; bytes after the 8-byte action header)
//! ```text
//! NXAST_REG_MOVE  experimenter 0x00002320   (action len 24)
//!   subtype:u16=6 n_bits:u16 src_ofs:u16 dst_ofs:u16 src:u32 dst:u32
//! NXAST_REG_LOAD  experimenter 0x00002320   (action len 24)
//!   subtype:u16=7 ofs_nbits:u16 dst:u32 value:u64
//!   ofs_nbits = ofs << 6 | (n_bits - 1)
//! ONF copy-field  experimenter 0x4f4e4600   (action len 32)
//!   exp_type:u16=3200 pad[2] n_bits:u16 src_offset:u16 dst_offset:u16
//!   pad[2] src:u32 dst:u32 pad[4]
//! ```
//! Bit offsets count from the field's least significant bit: `[0..7]` of
//! `ipv4_dst` is its last byte. `src`/`dst` are 4-byte OXM or NXM headers
//! without a mask.
//!
//! ## Errors (checked in this order; all `OFPET_BAD_ACTION` but one)
//! 1. the action's length is not the encoding's: `OFPBAC_BAD_LEN`;
//! 2. non-zero padding: `OFPBAC_BAD_ARGUMENT` (Open vSwitch answers its
//!    own `NXBRC_MUST_BE_ZERO`);
//! 3. a header that names no field sluice has (registers, `NXM_OF_VLAN_TCI`,
//!    a masked or wrongly sized header, …): `OFPBMC_BAD_FIELD` for a move
//!    or copy-field, `OFPBAC_BAD_SET_TYPE` for a load (what Open vSwitch
//!    answers for an unknown header in each);
//! 4. zero bits, or a bit range past the end of a field: `OFPBAC_BAD_SET_LEN`;
//! 5. a destination that cannot be written (`in_port`, `in_phy_port`,
//!    `eth_type`, `ip_proto`, `ipv6_exthdr`): `OFPBAC_BAD_SET_ARGUMENT`;
//! 6. a load value with bits at or above `n_bits`: `OFPBAC_BAD_ARGUMENT`.
//!
//! Prerequisites (`OFPBAC_MATCH_INCONSISTENT`) depend on the flow's match
//! and are the pipeline's check. In a move the two ranges have one width
//! by construction (one `n_bits`), so there is no width mismatch to report.

use crate::action::Action;
use crate::error::{ErrorCode, Result};
use crate::oxm::{FieldId, OFPXMC_NXM_0, OFPXMC_NXM_1, OFPXMC_OPENFLOW_BASIC};
use crate::wire::{Put, Reader};

/// Nicira's experimenter id.
pub const NX_EXPERIMENTER_ID: u32 = 0x0000_2320;
/// The ONF's experimenter id (OpenFlow 1.3 extensions).
pub const ONF_EXPERIMENTER_ID: u32 = 0x4f4e_4600;
/// `NXAST_REG_MOVE`.
pub const NXAST_REG_MOVE: u16 = 6;
/// `NXAST_REG_LOAD`.
pub const NXAST_REG_LOAD: u16 = 7;
/// ONF extension 320, copy-field, as its OpenFlow 1.3 `exp_type`.
pub const ONFACT_COPY_FIELD: u16 = 3200;

/// The NXM names of fields that have one: (class, field number, field).
/// Fields absent here are named by their OXM basic header
/// (`OXM_OF_METADATA`), as Open vSwitch does.
const NXM: &[(u16, u8, &str, FieldId)] = &[
    (OFPXMC_NXM_0, 1, "NXM_OF_ETH_DST", FieldId::EthDst),
    (OFPXMC_NXM_0, 2, "NXM_OF_ETH_SRC", FieldId::EthSrc),
    (OFPXMC_NXM_0, 3, "NXM_OF_ETH_TYPE", FieldId::EthType),
    (OFPXMC_NXM_0, 6, "NXM_OF_IP_PROTO", FieldId::IpProto),
    (OFPXMC_NXM_0, 7, "NXM_OF_IP_SRC", FieldId::Ipv4Src),
    (OFPXMC_NXM_0, 8, "NXM_OF_IP_DST", FieldId::Ipv4Dst),
    (OFPXMC_NXM_0, 9, "NXM_OF_TCP_SRC", FieldId::TcpSrc),
    (OFPXMC_NXM_0, 10, "NXM_OF_TCP_DST", FieldId::TcpDst),
    (OFPXMC_NXM_0, 11, "NXM_OF_UDP_SRC", FieldId::UdpSrc),
    (OFPXMC_NXM_0, 12, "NXM_OF_UDP_DST", FieldId::UdpDst),
    (OFPXMC_NXM_0, 13, "NXM_OF_ICMP_TYPE", FieldId::Icmpv4Type),
    (OFPXMC_NXM_0, 14, "NXM_OF_ICMP_CODE", FieldId::Icmpv4Code),
    (OFPXMC_NXM_0, 15, "NXM_OF_ARP_OP", FieldId::ArpOp),
    (OFPXMC_NXM_0, 16, "NXM_OF_ARP_SPA", FieldId::ArpSpa),
    (OFPXMC_NXM_0, 17, "NXM_OF_ARP_TPA", FieldId::ArpTpa),
    (OFPXMC_NXM_1, 16, "NXM_NX_TUN_ID", FieldId::TunnelId),
    (OFPXMC_NXM_1, 17, "NXM_NX_ARP_SHA", FieldId::ArpSha),
    (OFPXMC_NXM_1, 18, "NXM_NX_ARP_THA", FieldId::ArpTha),
    (OFPXMC_NXM_1, 19, "NXM_NX_IPV6_SRC", FieldId::Ipv6Src),
    (OFPXMC_NXM_1, 20, "NXM_NX_IPV6_DST", FieldId::Ipv6Dst),
    (OFPXMC_NXM_1, 21, "NXM_NX_ICMPV6_TYPE", FieldId::Icmpv6Type),
    (OFPXMC_NXM_1, 22, "NXM_NX_ICMPV6_CODE", FieldId::Icmpv6Code),
    (OFPXMC_NXM_1, 23, "NXM_NX_ND_TARGET", FieldId::Ipv6NdTarget),
    (OFPXMC_NXM_1, 24, "NXM_NX_ND_SLL", FieldId::Ipv6NdSll),
    (OFPXMC_NXM_1, 25, "NXM_NX_ND_TLL", FieldId::Ipv6NdTll),
    (OFPXMC_NXM_1, 27, "NXM_NX_IPV6_LABEL", FieldId::Ipv6Flabel),
    (OFPXMC_NXM_1, 28, "NXM_NX_IP_ECN", FieldId::IpEcn),
];

/// A 4-byte OXM/NXM header naming the field of a move or load, as sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldRef(pub u32);

impl FieldRef {
    fn class(self) -> u16 {
        (self.0 >> 16) as u16
    }
    fn number(self) -> u8 {
        (self.0 >> 9) as u8 & 0x7f
    }
    fn has_mask(self) -> bool {
        self.0 & 0x100 != 0
    }
    fn length(self) -> usize {
        (self.0 & 0xff) as usize
    }

    fn make(class: u16, number: u8, f: FieldId) -> FieldRef {
        FieldRef((u32::from(class) << 16) | (u32::from(number) << 9) | f.len() as u32)
    }

    /// The header `ovs-ofctl` writes for `f`: its NXM header if it has
    /// one, else its OXM basic header.
    pub fn of(f: FieldId) -> FieldRef {
        match NXM.iter().find(|e| e.3 == f) {
            Some(&(class, n, _, _)) => FieldRef::make(class, n, f),
            None => FieldRef::make(OFPXMC_OPENFLOW_BASIC, f as u8, f),
        }
    }

    /// The field this header names, if sluice has it: an OXM basic header
    /// or one of the NXM headers of the table above, unmasked, with the
    /// field's own value length.
    pub fn field(self) -> Option<FieldId> {
        if self.has_mask() {
            return None;
        }
        let f = match self.class() {
            OFPXMC_OPENFLOW_BASIC => FieldId::from_u8(self.number())?,
            c => NXM.iter().find(|e| e.0 == c && e.1 == self.number())?.3,
        };
        (self.length() == f.len()).then_some(f)
    }

    /// The name `ovs-ofctl` prints for this header's field (`NXM_OF_ETH_SRC`,
    /// `OXM_OF_METADATA`); a header naming no field prints as its hex.
    pub fn name(self) -> String {
        match self.field() {
            Some(f) => field_name(f),
            None => format!("0x{:08x}", self.0),
        }
    }
}

/// A field's NXM name, or `OXM_OF_*` if it has none.
pub fn field_name(f: FieldId) -> String {
    match NXM.iter().find(|e| e.3 == f) {
        Some(e) => e.2.to_string(),
        None => f.spec_name().replacen("OFPXMT_OFB_", "OXM_OF_", 1),
    }
}

/// The field a name denotes: an NXM name of the table above, or the OXM
/// name of any basic field (`OXM_OF_IPV4_SRC`).
pub fn field_by_name(name: &str) -> Option<FieldId> {
    if let Some(e) = NXM.iter().find(|e| e.2 == name) {
        return Some(e.3);
    }
    let suffix = name.strip_prefix("OXM_OF_")?;
    FieldId::ALL.iter().copied().find(|f| f.spec_name().strip_prefix("OFPXMT_OFB_") == Some(suffix))
}

/// Whether a move or load may write `f` (Open vSwitch's writable fields
/// that sluice has; `in_port` is not one: the ingress port is not
/// rewritten).
pub fn writable(f: FieldId) -> bool {
    !matches!(
        f,
        FieldId::InPort
            | FieldId::InPhyPort
            | FieldId::EthType
            | FieldId::IpProto
            | FieldId::Ipv6Exthdr
    )
}

/// Bits `ofs..ofs + n_bits` of a field (bit 0 is the least significant).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Subfield {
    pub field: FieldRef,
    pub ofs: u16,
    pub n_bits: u16,
}

impl Subfield {
    /// The whole of `f`.
    pub fn whole(f: FieldId) -> Subfield {
        Subfield { field: FieldRef::of(f), ofs: 0, n_bits: f.bits() as u16 }
    }

    /// The field, if the header names one sluice has.
    pub fn field_id(&self) -> Option<FieldId> {
        self.field.field()
    }

    /// The range is non-empty and inside the field: `OFPBAC_BAD_SET_LEN`
    /// otherwise (the field must be known).
    fn check_range(&self, f: FieldId) -> Result<()> {
        let end = u32::from(self.ofs) + u32::from(self.n_bits);
        if self.n_bits == 0 || end > f.bits() {
            return Err(ErrorCode::BAC_BAD_SET_LEN);
        }
        Ok(())
    }
}

/// Which wire encoding a move came in (and goes out) as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MoveEncoding {
    /// `NXAST_REG_MOVE` (what `ovs-ofctl` sends for `move:`).
    Nicira,
    /// ONF extension 320 (OpenFlow 1.5's copy-field for 1.3).
    Onf,
}

/// A move (copy-field) or a load.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FieldAction {
    /// Copy `src`'s bits onto `dst`'s (both `n_bits` wide: `dst.n_bits`
    /// is always `src.n_bits`).
    Move { src: Subfield, dst: Subfield, encoding: MoveEncoding },
    /// Write `value` (below `2^dst.n_bits`) into `dst`'s bits.
    Load { dst: Subfield, value: u64 },
}

impl FieldAction {
    /// The field action `a` encodes: `None` if `a` is not a Nicira
    /// `REG_MOVE`/`REG_LOAD` or an ONF copy-field; otherwise the decoded
    /// action or the error of the module docs.
    pub fn from_action(a: &Action) -> Option<Result<FieldAction>> {
        let Action::Experimenter { experimenter, data } = a else { return None };
        let sub = u16::from_be_bytes([*data.first()?, *data.get(1)?]);
        match (*experimenter, sub) {
            (NX_EXPERIMENTER_ID, NXAST_REG_MOVE) => Some(Self::decode_move(data, false)),
            (NX_EXPERIMENTER_ID, NXAST_REG_LOAD) => Some(Self::decode_load(data)),
            (ONF_EXPERIMENTER_ID, ONFACT_COPY_FIELD) => Some(Self::decode_move(data, true)),
            _ => None,
        }
    }

    fn decode_move(data: &[u8], onf: bool) -> Result<FieldAction> {
        let mut r = Reader::new(data, ErrorCode::BAC_BAD_LEN);
        if data.len() != if onf { 24 } else { 16 } {
            return Err(ErrorCode::BAC_BAD_LEN);
        }
        r.skip(2)?;
        let mut pad = 0u32;
        if onf {
            pad |= u32::from(r.u16()?);
        }
        let n_bits = r.u16()?;
        let (src_ofs, dst_ofs) = (r.u16()?, r.u16()?);
        if onf {
            pad |= u32::from(r.u16()?);
        }
        let (src, dst) = (FieldRef(r.u32()?), FieldRef(r.u32()?));
        if onf {
            pad |= r.u32()?;
        }
        if pad != 0 {
            return Err(ErrorCode::BAC_BAD_ARGUMENT);
        }
        let src = Subfield { field: src, ofs: src_ofs, n_bits };
        let dst = Subfield { field: dst, ofs: dst_ofs, n_bits };
        let encoding = if onf { MoveEncoding::Onf } else { MoveEncoding::Nicira };
        let a = FieldAction::Move { src, dst, encoding };
        a.validate()?;
        Ok(a)
    }

    fn decode_load(data: &[u8]) -> Result<FieldAction> {
        if data.len() != 16 {
            return Err(ErrorCode::BAC_BAD_LEN);
        }
        let mut r = Reader::new(data, ErrorCode::BAC_BAD_LEN);
        r.skip(2)?;
        let ofs_nbits = r.u16()?;
        let field = FieldRef(r.u32()?);
        let value = r.u64()?;
        let dst = Subfield { field, ofs: ofs_nbits >> 6, n_bits: (ofs_nbits & 0x3f) + 1 };
        let a = FieldAction::Load { dst, value };
        a.validate()?;
        Ok(a)
    }

    /// The checks 3–6 of the module docs (a decoded action passed them).
    pub fn validate(&self) -> Result<()> {
        match self {
            FieldAction::Move { src, dst, .. } => {
                let sf = src.field_id().ok_or(ErrorCode::BMC_BAD_FIELD)?;
                let df = dst.field_id().ok_or(ErrorCode::BMC_BAD_FIELD)?;
                if src.n_bits != dst.n_bits {
                    return Err(ErrorCode::BAC_BAD_SET_LEN);
                }
                src.check_range(sf)?;
                dst.check_range(df)?;
                if !writable(df) {
                    return Err(ErrorCode::BAC_BAD_SET_ARGUMENT);
                }
            }
            FieldAction::Load { dst, value } => {
                let df = dst.field_id().ok_or(ErrorCode::BAC_BAD_SET_TYPE)?;
                if dst.n_bits > 64 {
                    return Err(ErrorCode::BAC_BAD_SET_LEN);
                }
                dst.check_range(df)?;
                if !writable(df) {
                    return Err(ErrorCode::BAC_BAD_SET_ARGUMENT);
                }
                if dst.n_bits < 64 && value >> dst.n_bits != 0 {
                    return Err(ErrorCode::BAC_BAD_ARGUMENT);
                }
            }
        }
        Ok(())
    }

    /// The experimenter action (zero padding).
    pub fn to_action(&self) -> Action {
        let mut d = Vec::with_capacity(24);
        let experimenter = match self {
            FieldAction::Move { src, dst, encoding: MoveEncoding::Nicira } => {
                d.put_u16(NXAST_REG_MOVE);
                d.put_u16(src.n_bits);
                d.put_u16(src.ofs);
                d.put_u16(dst.ofs);
                d.put_u32(src.field.0);
                d.put_u32(dst.field.0);
                NX_EXPERIMENTER_ID
            }
            FieldAction::Move { src, dst, encoding: MoveEncoding::Onf } => {
                d.put_u16(ONFACT_COPY_FIELD);
                d.put_zeros(2);
                d.put_u16(src.n_bits);
                d.put_u16(src.ofs);
                d.put_u16(dst.ofs);
                d.put_zeros(2);
                d.put_u32(src.field.0);
                d.put_u32(dst.field.0);
                d.put_zeros(4);
                ONF_EXPERIMENTER_ID
            }
            FieldAction::Load { dst, value } => {
                d.put_u16(NXAST_REG_LOAD);
                d.put_u16((dst.ofs << 6) | (dst.n_bits.wrapping_sub(1) & 0x3f));
                d.put_u32(dst.field.0);
                d.put_u64(*value);
                NX_EXPERIMENTER_ID
            }
        };
        Action::Experimenter { experimenter, data: d }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hexb(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// The whole action as `ovs-ofctl -O OpenFlow13 add-flow` 3.1 sent it
    /// (captured from the wire).
    fn wire(s: &str) -> Action {
        let b = hexb(s);
        let mut r = Reader::new(&b, ErrorCode::BAC_BAD_LEN);
        let a = Action::parse(&mut r).unwrap();
        assert!(r.is_empty());
        a
    }

    fn decoded(s: &str) -> FieldAction {
        let a = wire(s);
        let f = FieldAction::from_action(&a).unwrap().unwrap();
        assert_eq!(f.to_action(), a, "re-encodes to the captured bytes");
        f
    }

    fn sub(f: FieldId, ofs: u16, n_bits: u16) -> Subfield {
        Subfield { field: FieldRef::of(f), ofs, n_bits }
    }

    #[test]
    fn what_ovs_ofctl_sends() {
        use FieldId as F;
        // move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[]
        assert_eq!(
            decoded("ffff0018 00002320 0006 0030 0000 0000 00000406 00000206"),
            FieldAction::Move {
                src: Subfield::whole(F::EthSrc),
                dst: Subfield::whole(F::EthDst),
                encoding: MoveEncoding::Nicira
            }
        );
        // move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[]
        assert_eq!(
            decoded("ffff0018 00002320 0006 0020 0000 0000 00002004 00002204"),
            FieldAction::Move {
                src: Subfield::whole(F::ArpSpa),
                dst: Subfield::whole(F::ArpTpa),
                encoding: MoveEncoding::Nicira
            }
        );
        // move:NXM_OF_ETH_SRC[0..15]->NXM_OF_ETH_DST[32..47]
        assert_eq!(
            decoded("ffff0018 00002320 0006 0010 0000 0020 00000406 00000206"),
            FieldAction::Move {
                src: sub(F::EthSrc, 0, 16),
                dst: sub(F::EthDst, 32, 16),
                encoding: MoveEncoding::Nicira
            }
        );
        // load:0x2->NXM_OF_ARP_OP[]
        assert_eq!(
            decoded("ffff0018 00002320 0007 000f 00001e02 0000000000000002"),
            FieldAction::Load { dst: Subfield::whole(F::ArpOp), value: 2 }
        );
        // load:0xc0a80001->NXM_OF_ARP_SPA[]
        assert_eq!(
            decoded("ffff0018 00002320 0007 001f 00002004 00000000c0a80001"),
            FieldAction::Load { dst: Subfield::whole(F::ArpSpa), value: 0xc0a8_0001 }
        );
        // load:0x1->NXM_OF_IP_DST[8..15]
        assert_eq!(
            decoded("ffff0018 00002320 0007 0207 00001004 0000000000000001"),
            FieldAction::Load { dst: sub(F::Ipv4Dst, 8, 8), value: 1 }
        );
        // load:0x1->NXM_OF_ETH_DST[40]
        assert_eq!(
            decoded("ffff0018 00002320 0007 0a00 00000206 0000000000000001"),
            FieldAction::Load { dst: sub(F::EthDst, 40, 1), value: 1 }
        );
        // load:0->NXM_OF_ICMP_TYPE[]
        assert_eq!(
            decoded("ffff0018 00002320 0007 0007 00001a01 0000000000000000"),
            FieldAction::Load { dst: Subfield::whole(F::Icmpv4Type), value: 0 }
        );
        // load:0xaabbccddeeff->NXM_NX_ARP_SHA[]
        assert_eq!(
            decoded("ffff0018 00002320 0007 002f 00012206 0000aabbccddeeff"),
            FieldAction::Load { dst: Subfield::whole(F::ArpSha), value: 0xaabb_ccdd_eeff }
        );
        // load:0x1->OXM_OF_METADATA[]: no NXM name, so the OXM header.
        assert_eq!(
            decoded("ffff0018 00002320 0007 003f 80000408 0000000000000001"),
            FieldAction::Load { dst: Subfield::whole(F::Metadata), value: 1 }
        );
    }

    #[test]
    fn onf_copy_field() {
        // The ONF layout with move:NXM_OF_IP_SRC[]->NXM_OF_IP_DST[].
        let f =
            decoded("ffff0020 4f4e4600 0c80 0000 0020 0000 0000 0000 00000e04 00001004 00000000");
        assert_eq!(
            f,
            FieldAction::Move {
                src: Subfield::whole(FieldId::Ipv4Src),
                dst: Subfield::whole(FieldId::Ipv4Dst),
                encoding: MoveEncoding::Onf
            }
        );
    }

    #[test]
    fn oxm_headers_are_kept_as_sent() {
        // OXM_OF_IPV4_SRC -> OXM_OF_IPV4_DST (OXM basic headers).
        let f = decoded("ffff0018 00002320 0006 0020 0000 0000 80001604 80001804");
        let FieldAction::Move { src, dst, .. } = f else { panic!() };
        assert_eq!(
            (src.field_id(), dst.field_id()),
            (Some(FieldId::Ipv4Src), Some(FieldId::Ipv4Dst))
        );
        assert_eq!((src.field.0, src.field.name()), (0x8000_1604, "NXM_OF_IP_SRC".to_string()));
    }

    #[test]
    fn errors_in_order() {
        use ErrorCode as E;
        let err = |s: &str| FieldAction::from_action(&wire(s)).unwrap().unwrap_err();
        // Wrong length: a move padded to 32.
        assert_eq!(
            err("ffff0020 00002320 0006 0030 0000 0000 00000406 00000206 0000000000000000"),
            E::BAC_BAD_LEN
        );
        // ONF padding not zero.
        assert_eq!(
            err("ffff0020 4f4e4600 0c80 0001 0020 0000 0000 0000 00000e04 00001004 00000000"),
            E::BAC_BAD_ARGUMENT
        );
        // NXM_NX_REG0 (sluice has no registers): unknown in a move and a load.
        assert_eq!(
            err("ffff0018 00002320 0006 0010 0000 0000 00010004 00000206"),
            E::BMC_BAD_FIELD
        );
        assert_eq!(
            err("ffff0018 00002320 0007 0003 00010004 0000000000000001"),
            E::BAC_BAD_SET_TYPE
        );
        // A masked header, a header with the wrong length.
        assert_eq!(
            err("ffff0018 00002320 0006 0010 0000 0000 00000506 00000206"),
            E::BMC_BAD_FIELD
        );
        assert_eq!(
            err("ffff0018 00002320 0006 0010 0000 0000 00000404 00000206"),
            E::BMC_BAD_FIELD
        );
        // Zero bits, ranges past the field.
        assert_eq!(
            err("ffff0018 00002320 0006 0000 0000 0000 00000406 00000206"),
            E::BAC_BAD_SET_LEN
        );
        assert_eq!(
            err("ffff0018 00002320 0006 0010 0021 0000 00000406 00000206"),
            E::BAC_BAD_SET_LEN
        );
        assert_eq!(
            err("ffff0018 00002320 0006 0020 0000 0000 00000406 00001a01"),
            E::BAC_BAD_SET_LEN
        );
        assert_eq!(
            err("ffff0018 00002320 0007 0620 00001004 0000000000000001"),
            E::BAC_BAD_SET_LEN
        );
        // Not writable: eth_type as a destination.
        assert_eq!(
            err("ffff0018 00002320 0006 0010 0000 0000 00000406 00000602"),
            E::BAC_BAD_SET_ARGUMENT
        );
        // A load value wider than its bits.
        assert_eq!(
            err("ffff0018 00002320 0007 0207 00001004 0000000000000100"),
            E::BAC_BAD_ARGUMENT
        );
        // Other subtypes and experimenters are not field actions.
        let other =
            Action::Experimenter { experimenter: NX_EXPERIMENTER_ID, data: vec![0, 8, 0, 0, 0, 0] };
        assert_eq!(FieldAction::from_action(&other), None);
        let other =
            Action::Experimenter { experimenter: 0x534c_4943, data: vec![0, 6, 0, 0, 0, 0] };
        assert_eq!(FieldAction::from_action(&other), None);
    }

    #[test]
    fn names() {
        assert_eq!(field_name(FieldId::ArpSpa), "NXM_OF_ARP_SPA");
        assert_eq!(field_name(FieldId::Metadata), "OXM_OF_METADATA");
        assert_eq!(field_name(FieldId::VlanVid), "OXM_OF_VLAN_VID");
        assert_eq!(field_by_name("NXM_NX_ARP_SHA"), Some(FieldId::ArpSha));
        assert_eq!(field_by_name("OXM_OF_IPV4_SRC"), Some(FieldId::Ipv4Src));
        assert_eq!(field_by_name("OXM_OF_ARP_OP"), Some(FieldId::ArpOp));
        assert_eq!(field_by_name("NXM_NX_REG0"), None);
        for &f in FieldId::ALL {
            assert_eq!(field_by_name(&field_name(f)), Some(f));
            assert_eq!(FieldRef::of(f).field(), Some(f));
        }
    }

    proptest::proptest! {
        #[test]
        fn valid_actions_round_trip(
            src in proptest::sample::select(FieldId::ALL),
            dst in proptest::sample::select(FieldId::ALL),
            a in 0u16..128, b in 0u16..128, n in 1u16..129, v in proptest::prelude::any::<u64>(),
            onf in proptest::prelude::any::<bool>(),
        ) {
            let encoding = if onf { MoveEncoding::Onf } else { MoveEncoding::Nicira };
            let mv = FieldAction::Move { src: sub(src, a, n), dst: sub(dst, b, n), encoding };
            let ld = FieldAction::Load { dst: sub(dst, b, n.min(64)), value: v };
            for x in [mv, ld] {
                let back = FieldAction::from_action(&x.to_action()).unwrap();
                match x.validate() {
                    Ok(()) => proptest::prop_assert_eq!(back, Ok(x)),
                    Err(e) => proptest::prop_assert_eq!(back, Err(e)),
                }
            }
        }
    }
}
