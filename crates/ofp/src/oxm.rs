//! OXM match fields (OpenFlow 1.3.5 §7.2.3) and `struct ofp_match`.
//!
//! # What
//!
//! A flow's match is a `struct ofp_match` of type `OFPMT_OXM`: a 4-byte
//! header (`type`, `length`), a list of OXM TLVs and zero padding up to a
//! multiple of 8 bytes. Each OXM TLV is a 32-bit header
//! `class(16) | field(7) | hasmask(1) | length(8)` followed by `length`
//! bytes: the value, then (with `hasmask`) a mask of the same size.
//!
//! - [`FieldId`] is the table of the 40 `OFPXMC_OPENFLOW_BASIC` fields of
//!   OpenFlow 1.3.5 (number, byte length, bit width, maskability, spec and
//!   ovs-ofctl names), checked against the spec's Table 12 and `openflow.h`.
//! - [`Oxm`] is one TLV: a basic field (`Oxm::Basic`), an experimenter field
//!   (`Oxm::Experimenter`, experimenter id kept, payload preserved) or any
//!   other class such as `NXM_0`/`NXM_1` (`Oxm::Other`, kept verbatim).
//! - [`OxmHeader`] is the bare 32-bit header, which table-features
//!   properties use on its own as an "OXM id".
//! - [`Match`] is `struct ofp_match`.
//! - [`Prereq`] / [`FieldId::prereqs`] give the spec's prerequisites as data,
//!   and [`Match::check_prereqs`] applies them.
//!
//! # Errors (all `OFPET_BAD_MATCH`)
//!
//! | condition | error |
//! |---|---|
//! | `ofp_match.type != OFPMT_OXM` | `OFPBMC_BAD_TYPE` |
//! | match length < 4, overrunning the buffer, padding missing | `OFPBMC_BAD_LEN` |
//! | OXM header or payload truncated, or overrunning the match | `OFPBMC_BAD_LEN` |
//! | basic OXM whose length byte is not the field's (×2 with mask) | `OFPBMC_BAD_LEN` |
//! | experimenter OXM shorter than its 4-byte experimenter id | `OFPBMC_BAD_LEN` |
//! | unknown basic field number (> 39) | `OFPBMC_BAD_FIELD` |
//! | `hasmask` on a field that is not maskable | `OFPBMC_BAD_MASK` |
//! | a field twice in one match (any class; with or without mask; a `pof` field: the same window) | `OFPBMC_DUP_FIELD` |
//! | value has a 1-bit where the mask has a 0-bit (§7.2.3.5) | `OFPBMC_BAD_WILDCARDS` |
//! | value wider than the field ([`FieldId::bits`], e.g. `vlan_pcp > 7`) | `OFPBMC_BAD_VALUE` |
//! | prerequisite unmet ([`Match::check_prereqs`], not run by `parse`) | `OFPBMC_BAD_PREREQ` |
//!
//! Within one basic OXM the checks run in that order: field number, mask
//! allowed, length, payload present, wildcards, value range. (Open vSwitch
//! 3.1 agrees on `BAD_WILDCARDS`, `BAD_VALUE` and `DUP_FIELD`, but answers
//! `OFPBMC_BAD_FIELD` for a known field with an unexpected mask bit or
//! length, because it looks OXMs up by their whole header; sluice gives the
//! more specific `BAD_MASK` / `BAD_LEN`.)
//!
//! [`Oxm::parse`] always answers `OFPBMC_BAD_LEN` for a short read, whatever
//! short-read error the caller's [`Reader`] carries, so that callers (the
//! SET_FIELD action) can map `OFPBMC_*` errors to their own as one set.
//!
//! # Invariants
//!
//! - `parse` never panics, never reads out of bounds, allocates at most the
//!   bytes of the payloads it keeps, and every loop consumes at least the
//!   4-byte OXM header per iteration or fails.
//! - Values are preserved exactly: a mask of all ones stays a mask, padding
//!   bytes are ignored on input and written as zeros, so
//!   `Match::parse(emit(m)) == m` for every valid `m` (property-tested).
//! - `emit` writes what the value holds. Values built by hand can be checked
//!   with [`Oxm::validate`] / [`Match::validate`], which apply exactly the
//!   rules `parse` applies. Payloads too long for the 8-bit OXM length
//!   (and matches too long for the 16-bit match length) cannot be encoded;
//!   `emit` and `wire_len` truncate them consistently, and `validate`
//!   rejects them with `OFPBMC_BAD_LEN`.

use std::collections::HashSet;

use crate::consts::OFPVID_PRESENT;
use crate::error::{ErrorCode, Result};
use crate::wire::{pad8, Put, Reader};

/// `OFPXMC_NXM_0` (Nicira extensions, legacy NXM fields).
pub const OFPXMC_NXM_0: u16 = 0x0000;
/// `OFPXMC_NXM_1` (Nicira extensions, registers etc.).
pub const OFPXMC_NXM_1: u16 = 0x0001;
/// `OFPXMC_OPENFLOW_BASIC`.
pub const OFPXMC_OPENFLOW_BASIC: u16 = 0x8000;
/// `OFPXMC_EXPERIMENTER`.
pub const OFPXMC_EXPERIMENTER: u16 = 0xffff;
/// `OFPMT_STANDARD` (deprecated OpenFlow 1.1 match; rejected here).
pub const OFPMT_STANDARD: u16 = 0;
/// `OFPMT_OXM`.
pub const OFPMT_OXM: u16 = 1;
/// Length of `struct ofp_match` without OXMs and padding (`type`, `length`).
pub const OFP_MATCH_HEADER_LEN: usize = 4;
/// Length of an OXM header.
pub const OXM_HEADER_LEN: usize = 4;
/// Largest experimenter OXM payload after the 4-byte experimenter id.
pub const MAX_EXPERIMENTER_PAYLOAD: usize = 255 - 4;
/// Largest payload of any OXM (the length byte).
pub const MAX_OXM_PAYLOAD: usize = 255;

macro_rules! basic_fields {
    ($( $var:ident = $n:literal, $len:literal, $bits:literal, $maskable:literal, $spec:literal, $ovs:literal; )*) => {
        /// The 40 `OFPXMT_OFB_*` fields of OpenFlow 1.3.5.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum FieldId { $( $var = $n, )* }

        impl FieldId {
            /// Every field, in wire-number order.
            pub const ALL: &'static [FieldId] = &[ $( FieldId::$var, )* ];

            pub fn from_u8(n: u8) -> Option<FieldId> {
                match n { $( $n => Some(FieldId::$var), )* _ => None }
            }
            /// Payload length in bytes of the value (the mask, if present,
            /// has the same length).
            #[allow(clippy::len_without_is_empty)]
            pub const fn len(self) -> usize {
                match self { $( FieldId::$var => $len, )* }
            }
            /// Meaningful bits of the value (the spec's "Bits" column):
            /// values must be below `2^bits`, e.g. 3 for `VLAN_PCP`, 13 for
            /// `VLAN_VID` (12-bit VID plus `OFPVID_PRESENT`), 9 for
            /// `IPV6_EXTHDR`.
            pub const fn bits(self) -> u32 {
                match self { $( FieldId::$var => $bits, )* }
            }
            /// Whether the spec allows `OXM_HASMASK` for this field.
            pub const fn maskable(self) -> bool {
                match self { $( FieldId::$var => $maskable, )* }
            }
            /// The spec's name, e.g. `OFPXMT_OFB_ETH_DST`.
            pub const fn spec_name(self) -> &'static str {
                match self { $( FieldId::$var => $spec, )* }
            }
            /// The field's name in Open vSwitch's OXM-era vocabulary: the
            /// primary name `ovs-ofctl` accepts for it (`eth_dst`, `ip_src`,
            /// `tcp_dst`, `tunnel_id`…; checked against ovs-ofctl 3.1).
            /// `in_phy_port`, `pbb_isid` and `ipv6_exthdr` are not supported
            /// by Open vSwitch; their names follow the spec.
            ///
            /// Note: when ovs-ofctl *prints* a flow it uses the older
            /// NXM-era aliases instead (`dl_dst`, `nw_src`, `tp_dst`,
            /// `tun_id`, `dl_vlan`, `nw_tos` = DSCP×4, `icmp_type` for ICMPv6
            /// too); a printer that must match its output byte for byte has
            /// to translate.
            pub const fn ovs_name(self) -> &'static str {
                match self { $( FieldId::$var => $ovs, )* }
            }
        }
    };
}

// number, value bytes, value bits, maskable: OpenFlow 1.3.5 Table 12 and
// `enum oxm_ofb_match_fields` / the `OXM_OF_*` macros of openflow.h.
basic_fields! {
    InPort = 0, 4, 32, false, "OFPXMT_OFB_IN_PORT", "in_port";
    InPhyPort = 1, 4, 32, false, "OFPXMT_OFB_IN_PHY_PORT", "in_phy_port";
    Metadata = 2, 8, 64, true, "OFPXMT_OFB_METADATA", "metadata";
    EthDst = 3, 6, 48, true, "OFPXMT_OFB_ETH_DST", "eth_dst";
    EthSrc = 4, 6, 48, true, "OFPXMT_OFB_ETH_SRC", "eth_src";
    EthType = 5, 2, 16, false, "OFPXMT_OFB_ETH_TYPE", "eth_type";
    VlanVid = 6, 2, 13, true, "OFPXMT_OFB_VLAN_VID", "vlan_vid";
    VlanPcp = 7, 1, 3, false, "OFPXMT_OFB_VLAN_PCP", "vlan_pcp";
    IpDscp = 8, 1, 6, false, "OFPXMT_OFB_IP_DSCP", "ip_dscp";
    IpEcn = 9, 1, 2, false, "OFPXMT_OFB_IP_ECN", "ip_ecn";
    IpProto = 10, 1, 8, false, "OFPXMT_OFB_IP_PROTO", "ip_proto";
    Ipv4Src = 11, 4, 32, true, "OFPXMT_OFB_IPV4_SRC", "ip_src";
    Ipv4Dst = 12, 4, 32, true, "OFPXMT_OFB_IPV4_DST", "ip_dst";
    TcpSrc = 13, 2, 16, false, "OFPXMT_OFB_TCP_SRC", "tcp_src";
    TcpDst = 14, 2, 16, false, "OFPXMT_OFB_TCP_DST", "tcp_dst";
    UdpSrc = 15, 2, 16, false, "OFPXMT_OFB_UDP_SRC", "udp_src";
    UdpDst = 16, 2, 16, false, "OFPXMT_OFB_UDP_DST", "udp_dst";
    SctpSrc = 17, 2, 16, false, "OFPXMT_OFB_SCTP_SRC", "sctp_src";
    SctpDst = 18, 2, 16, false, "OFPXMT_OFB_SCTP_DST", "sctp_dst";
    Icmpv4Type = 19, 1, 8, false, "OFPXMT_OFB_ICMPV4_TYPE", "icmp_type";
    Icmpv4Code = 20, 1, 8, false, "OFPXMT_OFB_ICMPV4_CODE", "icmp_code";
    ArpOp = 21, 2, 16, false, "OFPXMT_OFB_ARP_OP", "arp_op";
    ArpSpa = 22, 4, 32, true, "OFPXMT_OFB_ARP_SPA", "arp_spa";
    ArpTpa = 23, 4, 32, true, "OFPXMT_OFB_ARP_TPA", "arp_tpa";
    ArpSha = 24, 6, 48, true, "OFPXMT_OFB_ARP_SHA", "arp_sha";
    ArpTha = 25, 6, 48, true, "OFPXMT_OFB_ARP_THA", "arp_tha";
    Ipv6Src = 26, 16, 128, true, "OFPXMT_OFB_IPV6_SRC", "ipv6_src";
    Ipv6Dst = 27, 16, 128, true, "OFPXMT_OFB_IPV6_DST", "ipv6_dst";
    Ipv6Flabel = 28, 4, 20, true, "OFPXMT_OFB_IPV6_FLABEL", "ipv6_label";
    Icmpv6Type = 29, 1, 8, false, "OFPXMT_OFB_ICMPV6_TYPE", "icmpv6_type";
    Icmpv6Code = 30, 1, 8, false, "OFPXMT_OFB_ICMPV6_CODE", "icmpv6_code";
    Ipv6NdTarget = 31, 16, 128, false, "OFPXMT_OFB_IPV6_ND_TARGET", "nd_target";
    Ipv6NdSll = 32, 6, 48, false, "OFPXMT_OFB_IPV6_ND_SLL", "nd_sll";
    Ipv6NdTll = 33, 6, 48, false, "OFPXMT_OFB_IPV6_ND_TLL", "nd_tll";
    MplsLabel = 34, 4, 20, false, "OFPXMT_OFB_MPLS_LABEL", "mpls_label";
    MplsTc = 35, 1, 3, false, "OFPXMT_OFB_MPLS_TC", "mpls_tc";
    MplsBos = 36, 1, 1, false, "OFPXMT_OFB_MPLS_BOS", "mpls_bos";
    PbbIsid = 37, 3, 24, true, "OFPXMT_OFB_PBB_ISID", "pbb_isid";
    TunnelId = 38, 8, 64, true, "OFPXMT_OFB_TUNNEL_ID", "tunnel_id";
    Ipv6Exthdr = 39, 2, 9, true, "OFPXMT_OFB_IPV6_EXTHDR", "ipv6_exthdr";
}

/// One condition of a basic field's prerequisites (OpenFlow 1.3.5 §7.2.3.6,
/// Table 12 "Prerequisites").
///
/// A field's prerequisites are the conjunction of its conditions. The spec's
/// hierarchy is written out in full: `TCP_SRC` lists both `IP_PROTO = 6` and
/// `ETH_TYPE ∈ {0x0800, 0x86dd}`, so one field's list is complete on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prereq {
    /// The field is matched exactly (present, no mask) with one of these
    /// values. A masked match never meets a prerequisite, even with an
    /// all-ones mask.
    Exact(FieldId, &'static [u32]),
    /// The field is present (`IN_PHY_PORT` needs `IN_PORT`, any value).
    Present(FieldId),
    /// `VLAN_VID != NONE`: `VLAN_VID` is present and its value has
    /// `OFPVID_PRESENT` set, with no mask or a mask that keeps that bit (so
    /// both `vlan_vid=0x1005` and `vlan_vid=0x1000/0x1000` qualify, and
    /// `vlan_vid=0x0000`, or any mask without `0x1000`, does not).
    VlanTagged,
}

const ETH_IPV4: u32 = 0x0800;
const ETH_ARP: u32 = 0x0806;
const ETH_IPV6: u32 = 0x86dd;
const ETH_MPLS: u32 = 0x8847;
const ETH_MPLS_MC: u32 = 0x8848;
const ETH_PBB: u32 = 0x88e7;

const P_IP: Prereq = Prereq::Exact(FieldId::EthType, &[ETH_IPV4, ETH_IPV6]);
const P_IPV4: Prereq = Prereq::Exact(FieldId::EthType, &[ETH_IPV4]);
const P_IPV6: Prereq = Prereq::Exact(FieldId::EthType, &[ETH_IPV6]);
const P_ARP: Prereq = Prereq::Exact(FieldId::EthType, &[ETH_ARP]);
const P_MPLS: Prereq = Prereq::Exact(FieldId::EthType, &[ETH_MPLS, ETH_MPLS_MC]);
const P_PBB: Prereq = Prereq::Exact(FieldId::EthType, &[ETH_PBB]);
const P_TCP: Prereq = Prereq::Exact(FieldId::IpProto, &[6]);
const P_UDP: Prereq = Prereq::Exact(FieldId::IpProto, &[17]);
const P_SCTP: Prereq = Prereq::Exact(FieldId::IpProto, &[132]);
const P_ICMPV4: Prereq = Prereq::Exact(FieldId::IpProto, &[1]);
const P_ICMPV6: Prereq = Prereq::Exact(FieldId::IpProto, &[58]);

impl FieldId {
    /// The spec's prerequisites of this field, all of which must hold.
    pub const fn prereqs(self) -> &'static [Prereq] {
        use FieldId::*;
        match self {
            InPort | Metadata | EthDst | EthSrc | EthType | VlanVid | TunnelId => &[],
            InPhyPort => &[Prereq::Present(InPort)],
            VlanPcp => &[Prereq::VlanTagged],
            IpDscp | IpEcn | IpProto => &[P_IP],
            Ipv4Src | Ipv4Dst => &[P_IPV4],
            TcpSrc | TcpDst => &[P_TCP, P_IP],
            UdpSrc | UdpDst => &[P_UDP, P_IP],
            SctpSrc | SctpDst => &[P_SCTP, P_IP],
            // The spec says only IP_PROTO=1; ICMPv4 over IPv6 means nothing,
            // so (as Open vSwitch does) require IPv4 too.
            Icmpv4Type | Icmpv4Code => &[P_ICMPV4, P_IPV4],
            ArpOp | ArpSpa | ArpTpa | ArpSha | ArpTha => &[P_ARP],
            Ipv6Src | Ipv6Dst | Ipv6Flabel | Ipv6Exthdr => &[P_IPV6],
            Icmpv6Type | Icmpv6Code => &[P_ICMPV6, P_IPV6],
            Ipv6NdTarget => &[Prereq::Exact(Icmpv6Type, &[135, 136]), P_ICMPV6, P_IPV6],
            Ipv6NdSll => &[Prereq::Exact(Icmpv6Type, &[135]), P_ICMPV6, P_IPV6],
            Ipv6NdTll => &[Prereq::Exact(Icmpv6Type, &[136]), P_ICMPV6, P_IPV6],
            MplsLabel | MplsTc | MplsBos => &[P_MPLS],
            PbbIsid => &[P_PBB],
        }
    }

    /// `2^bits - 1`: the largest valid value.
    pub const fn max_value(self) -> u128 {
        let b = self.bits();
        if b >= 128 {
            u128::MAX
        } else {
            (1u128 << b) - 1
        }
    }
}

/// A field value or mask in network byte order: exactly `len` meaningful
/// bytes (at most 16, the longest basic field).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldBytes {
    len: u8,
    bytes: [u8; 16],
}

impl FieldBytes {
    /// `None` if `b` is longer than 16 bytes.
    pub fn new(b: &[u8]) -> Option<Self> {
        if b.len() > 16 {
            return None;
        }
        let mut bytes = [0u8; 16];
        bytes[..b.len()].copy_from_slice(b);
        Some(FieldBytes { len: b.len() as u8, bytes })
    }
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
    /// Number of bytes.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.len as usize
    }
    /// The value as an unsigned big-endian integer (fields up to 16 bytes).
    pub fn to_u128(&self) -> u128 {
        self.as_slice().iter().fold(0u128, |a, &b| (a << 8) | b as u128)
    }
    /// `v` truncated to `len` big-endian bytes (`len` is clamped to 16).
    pub fn from_u128(v: u128, len: usize) -> Self {
        let all = v.to_be_bytes();
        let len = len.min(16);
        let mut bytes = [0u8; 16];
        bytes[..len].copy_from_slice(&all[16 - len..]);
        FieldBytes { len: len as u8, bytes }
    }
}

impl core::fmt::Debug for FieldBytes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("0x")?;
        for b in self.as_slice() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// One OXM TLV.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Oxm {
    /// An `OFPXMC_OPENFLOW_BASIC` field; `value` (and `mask`) are exactly
    /// `field.len()` bytes.
    Basic { field: FieldId, value: FieldBytes, mask: Option<FieldBytes> },
    /// `OFPXMC_EXPERIMENTER`: `payload` is what follows the 4-byte
    /// experimenter id (value and, if `has_mask`, mask). `field` is 7 bits;
    /// `payload` at most [`MAX_EXPERIMENTER_PAYLOAD`] bytes.
    Experimenter { experimenter: u32, field: u8, has_mask: bool, payload: Vec<u8> },
    /// Any other class (NXM_0, NXM_1, unknown), preserved verbatim. `class`
    /// is never `OFPXMC_OPENFLOW_BASIC` or `OFPXMC_EXPERIMENTER`; `field` is
    /// 7 bits; `payload` at most [`MAX_OXM_PAYLOAD`] bytes.
    Other { class: u16, field: u8, has_mask: bool, payload: Vec<u8> },
}

/// The 32-bit OXM header: class(16) field(7) hasmask(1) length(8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OxmHeader(pub u32);

impl OxmHeader {
    /// A header from its parts; `field` is truncated to 7 bits.
    pub const fn new(class: u16, field: u8, has_mask: bool, length: u8) -> Self {
        OxmHeader(
            (class as u32) << 16
                | ((field as u32) & 0x7f) << 9
                | (has_mask as u32) << 8
                | length as u32,
        )
    }
    /// The header of a basic field, with the length the field requires.
    pub const fn basic(field: FieldId, has_mask: bool) -> Self {
        let len = field.len() * if has_mask { 2 } else { 1 };
        OxmHeader::new(OFPXMC_OPENFLOW_BASIC, field as u8, has_mask, len as u8)
    }
    pub const fn class(self) -> u16 {
        (self.0 >> 16) as u16
    }
    /// The 7-bit field number.
    pub const fn field(self) -> u8 {
        ((self.0 >> 9) & 0x7f) as u8
    }
    pub const fn has_mask(self) -> bool {
        self.0 & 0x100 != 0
    }
    /// Payload length in bytes (after the 4-byte header).
    pub const fn length(self) -> u8 {
        self.0 as u8
    }
    /// The basic field this header names, if its class is
    /// `OFPXMC_OPENFLOW_BASIC` and the number is known.
    pub fn basic_field(self) -> Option<FieldId> {
        if self.class() == OFPXMC_OPENFLOW_BASIC {
            FieldId::from_u8(self.field())
        } else {
            None
        }
    }
    /// Read a bare 4-byte header (an "OXM id" in table-features
    /// properties). A short read is the reader's own error; nothing about the
    /// header is validated.
    pub fn parse(r: &mut Reader<'_>) -> Result<OxmHeader> {
        r.u32().map(OxmHeader)
    }
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.0);
    }
}

/// Check a basic field's value and mask the way `parse` does: lengths,
/// maskability, wildcards, range.
fn check_basic(field: FieldId, value: &FieldBytes, mask: Option<&FieldBytes>) -> Result<()> {
    if mask.is_some() && !field.maskable() {
        return Err(ErrorCode::BMC_BAD_MASK);
    }
    if value.len() != field.len() || mask.is_some_and(|m| m.len() != field.len()) {
        return Err(ErrorCode::BMC_BAD_LEN);
    }
    let v = value.to_u128();
    if let Some(m) = mask {
        if v & !m.to_u128() != 0 {
            return Err(ErrorCode::BMC_BAD_WILDCARDS);
        }
    }
    if v > field.max_value() {
        return Err(ErrorCode::BMC_BAD_VALUE);
    }
    Ok(())
}

impl Oxm {
    /// A basic OXM from its value and optional mask, without further checks.
    ///
    /// # Panics
    /// If `value` (or `mask`) is not exactly `field.len()` bytes: that is a
    /// programming error. Use [`Oxm::try_basic`] for untrusted input.
    pub fn basic(field: FieldId, value: &[u8], mask: Option<&[u8]>) -> Oxm {
        assert_eq!(value.len(), field.len(), "value length of {field:?}");
        if let Some(m) = mask {
            assert_eq!(m.len(), field.len(), "mask length of {field:?}");
        }
        let fb = |b: &[u8]| FieldBytes::new(b).expect("field lengths are at most 16");
        Oxm::Basic { field, value: fb(value), mask: mask.map(fb) }
    }

    /// A basic OXM, checked exactly as [`Oxm::parse`] would check it:
    /// `OFPBMC_BAD_LEN` for wrong lengths, `OFPBMC_BAD_MASK` for a mask on a
    /// non-maskable field, `OFPBMC_BAD_WILDCARDS`, `OFPBMC_BAD_VALUE`.
    pub fn try_basic(field: FieldId, value: &[u8], mask: Option<&[u8]>) -> Result<Oxm> {
        let fb = |b: &[u8]| FieldBytes::new(b).ok_or(ErrorCode::BMC_BAD_LEN);
        let value = fb(value)?;
        let mask = mask.map(fb).transpose()?;
        check_basic(field, &value, mask.as_ref())?;
        Ok(Oxm::Basic { field, value, mask })
    }

    /// An exact basic match on `value` (truncated to the field's length).
    pub fn exact(field: FieldId, value: u128) -> Oxm {
        Oxm::Basic { field, value: FieldBytes::from_u128(value, field.len()), mask: None }
    }

    /// A masked basic match (both truncated to the field's length). The
    /// value is kept as given: `value & !mask != 0` is the caller's choice
    /// (and [`Oxm::validate`]'s to reject).
    pub fn masked(field: FieldId, value: u128, mask: u128) -> Oxm {
        let len = field.len();
        Oxm::Basic {
            field,
            value: FieldBytes::from_u128(value, len),
            mask: Some(FieldBytes::from_u128(mask, len)),
        }
    }

    /// The basic field, for `Oxm::Basic`.
    pub fn field_id(&self) -> Option<FieldId> {
        match self {
            Oxm::Basic { field, .. } => Some(*field),
            _ => None,
        }
    }

    pub fn has_mask(&self) -> bool {
        match self {
            Oxm::Basic { mask, .. } => mask.is_some(),
            Oxm::Experimenter { has_mask, .. } | Oxm::Other { has_mask, .. } => *has_mask,
        }
    }

    /// The payload as it is encoded (truncated to what the length byte can
    /// describe), excluding the experimenter id.
    fn encoded_payload(&self) -> &[u8] {
        match self {
            Oxm::Basic { .. } => &[],
            Oxm::Experimenter { payload, .. } => {
                &payload[..payload.len().min(MAX_EXPERIMENTER_PAYLOAD)]
            }
            Oxm::Other { payload, .. } => &payload[..payload.len().min(MAX_OXM_PAYLOAD)],
        }
    }

    /// Payload length as written in the header's length byte.
    fn payload_len(&self) -> usize {
        match self {
            Oxm::Basic { value, mask, .. } => value.len() + mask.map_or(0, |m| m.len()),
            Oxm::Experimenter { .. } => 4 + self.encoded_payload().len(),
            Oxm::Other { .. } => self.encoded_payload().len(),
        }
    }

    /// The 4-byte header this OXM is written with.
    pub fn header(&self) -> OxmHeader {
        let len = self.payload_len() as u8;
        match self {
            Oxm::Basic { field, mask, .. } => {
                OxmHeader::new(OFPXMC_OPENFLOW_BASIC, *field as u8, mask.is_some(), len)
            }
            Oxm::Experimenter { field, has_mask, .. } => {
                OxmHeader::new(OFPXMC_EXPERIMENTER, *field, *has_mask, len)
            }
            Oxm::Other { class, field, has_mask, .. } => {
                OxmHeader::new(*class, *field, *has_mask, len)
            }
        }
    }

    /// Check a value built by hand against the rules `parse` enforces, so
    /// that `parse(emit(x)) == x` holds for it.
    pub fn validate(&self) -> Result<()> {
        match self {
            Oxm::Basic { field, value, mask } => check_basic(*field, value, mask.as_ref()),
            Oxm::Experimenter { field, payload, .. } => {
                if *field > 0x7f {
                    Err(ErrorCode::BMC_BAD_FIELD)
                } else if payload.len() > MAX_EXPERIMENTER_PAYLOAD {
                    Err(ErrorCode::BMC_BAD_LEN)
                } else {
                    Ok(())
                }
            }
            Oxm::Other { class, field, payload, .. } => {
                if *field > 0x7f || *class == OFPXMC_OPENFLOW_BASIC || *class == OFPXMC_EXPERIMENTER
                {
                    Err(ErrorCode::BMC_BAD_FIELD)
                } else if payload.len() > MAX_OXM_PAYLOAD {
                    Err(ErrorCode::BMC_BAD_LEN)
                } else {
                    Ok(())
                }
            }
        }
    }

    /// Parse one OXM TLV (header + payload). A short read is always
    /// `OFPBMC_BAD_LEN`, whatever the reader's own short-read error; on
    /// success the reader has advanced past exactly this TLV.
    pub fn parse(r: &mut Reader<'_>) -> Result<Oxm> {
        let mut rr = r.with_error(ErrorCode::BMC_BAD_LEN);
        let oxm = Self::parse_inner(&mut rr)?;
        r.skip(rr.position() - r.position()).map_err(|_| ErrorCode::BMC_BAD_LEN)?;
        Ok(oxm)
    }

    fn parse_inner(r: &mut Reader<'_>) -> Result<Oxm> {
        let h = OxmHeader(r.u32()?);
        let len = h.length() as usize;
        match h.class() {
            OFPXMC_OPENFLOW_BASIC => {
                let field = FieldId::from_u8(h.field()).ok_or(ErrorCode::BMC_BAD_FIELD)?;
                if h.has_mask() && !field.maskable() {
                    return Err(ErrorCode::BMC_BAD_MASK);
                }
                let n = field.len();
                if len != if h.has_mask() { 2 * n } else { n } {
                    return Err(ErrorCode::BMC_BAD_LEN);
                }
                let fb = |b: &[u8]| FieldBytes::new(b).ok_or(ErrorCode::BMC_BAD_LEN);
                let value = fb(r.bytes(n)?)?;
                let mask = if h.has_mask() { Some(fb(r.bytes(n)?)?) } else { None };
                check_basic(field, &value, mask.as_ref())?;
                Ok(Oxm::Basic { field, value, mask })
            }
            OFPXMC_EXPERIMENTER => {
                if len < 4 {
                    return Err(ErrorCode::BMC_BAD_LEN);
                }
                let experimenter = r.u32()?;
                let payload = r.bytes(len - 4)?.to_vec();
                Ok(Oxm::Experimenter {
                    experimenter,
                    field: h.field(),
                    has_mask: h.has_mask(),
                    payload,
                })
            }
            class => {
                let payload = r.bytes(len)?.to_vec();
                Ok(Oxm::Other { class, field: h.field(), has_mask: h.has_mask(), payload })
            }
        }
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        self.header().emit(out);
        match self {
            Oxm::Basic { value, mask, .. } => {
                out.put_slice(value.as_slice());
                if let Some(m) = mask {
                    out.put_slice(m.as_slice());
                }
            }
            Oxm::Experimenter { experimenter, .. } => {
                out.put_u32(*experimenter);
                out.put_slice(self.encoded_payload());
            }
            Oxm::Other { .. } => out.put_slice(self.encoded_payload()),
        }
    }

    /// Encoded length (4-byte header + payload).
    pub fn wire_len(&self) -> usize {
        OXM_HEADER_LEN + self.payload_len()
    }

    /// What makes two OXMs "the same field" for `OFPBMC_DUP_FIELD`: class,
    /// experimenter id (0 for other classes) and field number; the mask
    /// does not count. sluice's `pof` field names its bits in its payload
    /// (`crate::pof`): its first 8 bytes (base, length, offset) are part
    /// of its identity, so one match may carry several windows.
    fn dup_key(&self) -> (u16, u32, u8, u64) {
        match self {
            Oxm::Basic { field, .. } => (OFPXMC_OPENFLOW_BASIC, 0, *field as u8, 0),
            Oxm::Experimenter { experimenter, field, payload, .. } => {
                let window = if *experimenter == crate::consts::SLUICE_EXPERIMENTER_ID
                    && *field == crate::pof::POF_FIELD
                {
                    payload.iter().take(8).fold(0u64, |a, &b| a << 8 | u64::from(b))
                } else {
                    0
                };
                (OFPXMC_EXPERIMENTER, *experimenter, *field, window)
            }
            Oxm::Other { class, field, .. } => (*class, 0, *field, 0),
        }
    }
}

/// Duplicate detection over a match: a bitmap for the basic fields, a set
/// for everything else (so a hostile match of thousands of small OXMs costs
/// linear, not quadratic, time).
#[derive(Default)]
struct DupCheck {
    basic: u64,
    other: HashSet<(u16, u32, u8, u64)>,
}

impl DupCheck {
    fn add(&mut self, o: &Oxm) -> Result<()> {
        let fresh = match o {
            Oxm::Basic { field, .. } => {
                let bit = 1u64 << (*field as u8);
                let fresh = self.basic & bit == 0;
                self.basic |= bit;
                fresh
            }
            _ => self.other.insert(o.dup_key()),
        };
        if fresh {
            Ok(())
        } else {
            Err(ErrorCode::BMC_DUP_FIELD)
        }
    }
}

/// `struct ofp_match` of type `OFPMT_OXM`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Match {
    pub oxms: Vec<Oxm>,
}

/// The first occurrence of each basic field: `(value, mask)`.
type BasicIndex = [Option<(FieldBytes, Option<FieldBytes>)>; 40];

impl Match {
    /// A match of these OXMs (not validated; see [`Match::validate`]).
    pub fn new(oxms: Vec<Oxm>) -> Self {
        Match { oxms }
    }

    /// The match that matches everything.
    pub fn any() -> Self {
        Match::default()
    }

    pub fn is_empty(&self) -> bool {
        self.oxms.is_empty()
    }

    /// Value and mask of a basic field, if the match has it.
    pub fn get(&self, field: FieldId) -> Option<(FieldBytes, Option<FieldBytes>)> {
        self.oxms.iter().find_map(|o| match o {
            Oxm::Basic { field: f, value, mask } if *f == field => Some((*value, *mask)),
            _ => None,
        })
    }

    /// The number of OXMs that fit the 16-bit match length; `emit` writes
    /// those and `wire_len` counts those.
    fn encoded(&self) -> (usize, usize) {
        let mut len = OFP_MATCH_HEADER_LEN;
        for (i, o) in self.oxms.iter().enumerate() {
            let l = o.wire_len();
            if len + l > u16::MAX as usize {
                return (i, len);
            }
            len += l;
        }
        (self.oxms.len(), len)
    }

    /// The value of `ofp_match.length`: header plus OXMs, without padding.
    pub fn unpadded_len(&self) -> usize {
        self.encoded().1
    }

    /// Check a match built by hand against the rules `parse` enforces:
    /// every OXM valid, no field twice, length representable.
    pub fn validate(&self) -> Result<()> {
        let mut dups = DupCheck::default();
        let mut len = OFP_MATCH_HEADER_LEN;
        for o in &self.oxms {
            o.validate()?;
            dups.add(o)?;
            len += o.wire_len();
        }
        if len > u16::MAX as usize {
            return Err(ErrorCode::BMC_BAD_LEN);
        }
        Ok(())
    }

    /// Parse a `struct ofp_match` including its trailing padding to 8 bytes.
    /// Every short read is `OFPBMC_BAD_LEN`.
    pub fn parse(r: &mut Reader<'_>) -> Result<Match> {
        let mut r0 = r.with_error(ErrorCode::BMC_BAD_LEN);
        let m = Self::parse_inner(&mut r0)?;
        r.skip(r0.position() - r.position()).map_err(|_| ErrorCode::BMC_BAD_LEN)?;
        Ok(m)
    }

    fn parse_inner(r: &mut Reader<'_>) -> Result<Match> {
        let ty = r.u16()?;
        let len = r.u16()? as usize;
        if ty != OFPMT_OXM {
            return Err(ErrorCode::BMC_BAD_TYPE);
        }
        if len < OFP_MATCH_HEADER_LEN {
            return Err(ErrorCode::BMC_BAD_LEN);
        }
        let mut body = r.sub(len - OFP_MATCH_HEADER_LEN)?;
        let mut oxms = Vec::new();
        let mut dups = DupCheck::default();
        while !body.is_empty() {
            // Each iteration consumes at least the 4-byte header or fails.
            let o = Oxm::parse(&mut body)?;
            dups.add(&o)?;
            oxms.push(o);
        }
        r.skip(pad8(len) - len)?;
        Ok(Match { oxms })
    }

    /// Emit `struct ofp_match` including padding.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let (n, len) = self.encoded();
        out.put_u16(OFPMT_OXM);
        out.put_u16(len as u16);
        for o in self.oxms.iter().take(n) {
            o.emit(out);
        }
        debug_assert_eq!(out.len() - start, len);
        out.pad8_from(start);
    }

    /// Encoded length including padding.
    pub fn wire_len(&self) -> usize {
        pad8(self.unpadded_len())
    }

    fn basic_index(&self) -> BasicIndex {
        let mut idx: BasicIndex = [None; 40];
        for o in &self.oxms {
            if let Oxm::Basic { field, value, mask } = o {
                let slot = &mut idx[*field as usize];
                if slot.is_none() {
                    *slot = Some((*value, *mask));
                }
            }
        }
        idx
    }

    /// The first basic field (in match order) whose prerequisites
    /// ([`FieldId::prereqs`]) this match does not meet.
    pub fn unmet_prereq(&self) -> Option<FieldId> {
        let idx = self.basic_index();
        let met = |p: &Prereq| match *p {
            Prereq::Present(f) => idx[f as usize].is_some(),
            Prereq::Exact(f, values) => match idx[f as usize] {
                Some((v, None)) => {
                    let v = v.to_u128();
                    values.iter().any(|&want| want as u128 == v)
                }
                _ => false,
            },
            Prereq::VlanTagged => match idx[FieldId::VlanVid as usize] {
                Some((v, m)) => {
                    let bit = OFPVID_PRESENT as u128;
                    v.to_u128() & bit != 0 && m.is_none_or(|m| m.to_u128() & bit != 0)
                }
                None => false,
            },
        };
        self.oxms.iter().find_map(|o| match o {
            Oxm::Basic { field, .. } if !field.prereqs().iter().all(met) => Some(*field),
            _ => None,
        })
    }

    /// `OFPBMC_BAD_PREREQ` unless every basic field's prerequisites are met
    /// (§7.2.3.6). Not run by `parse`: flow-mods call it, SET_FIELD and
    /// table-features do not.
    pub fn check_prereqs(&self) -> Result<()> {
        match self.unmet_prereq() {
            Some(_) => Err(ErrorCode::BMC_BAD_PREREQ),
            None => Ok(()),
        }
    }
}

/// A valid basic field number, uniformly.
#[cfg(test)]
pub(crate) fn arb_field() -> impl proptest::strategy::Strategy<Value = FieldId> {
    proptest::sample::select(FieldId::ALL)
}

/// A valid value of `field` (0, its maximum, or random within its width).
#[cfg(test)]
fn arb_value(field: FieldId) -> impl proptest::strategy::Strategy<Value = u128> {
    use proptest::prelude::*;
    let max = field.max_value();
    prop_oneof![Just(0u128), Just(max), any::<u128>().prop_map(move |v| v & max)]
}

/// A mask of `field`'s length: random, all ones, or a prefix mask.
#[cfg(test)]
fn arb_mask(field: FieldId) -> impl proptest::strategy::Strategy<Value = u128> {
    use proptest::prelude::*;
    let bits = field.len() as u32 * 8;
    prop_oneof![
        any::<u128>(),
        Just(u128::MAX),
        (0..=bits).prop_map(move |p| if p == 0 { 0 } else { u128::MAX << (bits - p) }),
    ]
}

/// Basic OXMs without a mask, suitable for a SET_FIELD action.
#[cfg(test)]
pub(crate) fn arb_set_field_oxm() -> impl proptest::strategy::Strategy<Value = Oxm> {
    use proptest::prelude::*;
    arb_field().prop_flat_map(|f| arb_value(f).prop_map(move |v| Oxm::exact(f, v)))
}

/// Valid basic OXMs, masked (value within the mask) where the field allows.
#[cfg(test)]
pub(crate) fn arb_basic_oxm() -> impl proptest::strategy::Strategy<Value = Oxm> {
    use proptest::prelude::*;
    arb_field().prop_flat_map(|f| {
        let exact = arb_value(f).prop_map(move |v| Oxm::exact(f, v));
        if f.maskable() {
            let masked =
                (arb_value(f), arb_mask(f)).prop_map(move |(v, m)| Oxm::masked(f, v & m, m));
            prop_oneof![exact, masked].boxed()
        } else {
            exact.boxed()
        }
    })
}

/// Valid OXMs of every kind: all 40 basic fields, experimenter OXMs and
/// other classes (NXM_0, NXM_1, unknown).
#[cfg(test)]
pub(crate) fn arb_oxm() -> impl proptest::strategy::Strategy<Value = Oxm> {
    use proptest::collection::vec;
    use proptest::prelude::*;
    let exp = (any::<u32>(), 0u8..128, any::<bool>(), vec(any::<u8>(), 0..24)).prop_map(
        |(experimenter, field, has_mask, payload)| Oxm::Experimenter {
            experimenter,
            field,
            has_mask,
            payload,
        },
    );
    let class = prop_oneof![
        Just(OFPXMC_NXM_0),
        Just(OFPXMC_NXM_1),
        any::<u16>().prop_filter("not basic/experimenter", |c| {
            *c != OFPXMC_OPENFLOW_BASIC && *c != OFPXMC_EXPERIMENTER
        }),
    ];
    let other = (class, 0u8..128, any::<bool>(), vec(any::<u8>(), 0..24)).prop_map(
        |(class, field, has_mask, payload)| Oxm::Other { class, field, has_mask, payload },
    );
    prop_oneof![6 => arb_basic_oxm(), 1 => exp, 1 => other]
}

/// Valid matches: up to 16 OXMs of any kind, no field twice.
#[cfg(test)]
pub(crate) fn arb_match() -> impl proptest::strategy::Strategy<Value = Match> {
    use proptest::prelude::*;
    proptest::collection::vec(arb_oxm(), 0..16).prop_map(|mut oxms| {
        let mut dups = DupCheck::default();
        oxms.retain(|o| dups.add(o).is_ok());
        Match { oxms }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use FieldId::*;

    const BAD_LEN: ErrorCode = ErrorCode::BMC_BAD_LEN;

    fn parse(b: &[u8]) -> Result<Match> {
        // The caller's reader error must not leak into match errors.
        let mut r = Reader::new(b, ErrorCode::BRC_BAD_LEN);
        Match::parse(&mut r)
    }

    fn emit(m: &Match) -> Vec<u8> {
        let mut v = Vec::new();
        m.emit(&mut v);
        v
    }

    /// A match of exactly the given OXM bytes, length and padding filled in.
    fn wrap(oxms: &[u8]) -> Vec<u8> {
        let len = 4 + oxms.len();
        let mut v = vec![0, 1, (len >> 8) as u8, len as u8];
        v.extend_from_slice(oxms);
        v.resize(pad8(len), 0);
        v
    }

    fn m(oxms: Vec<Oxm>) -> Match {
        Match::new(oxms)
    }

    // in_port=1, eth_type=0x0800, ipv4_dst=10.0.0.0/8, written out from the
    // spec layout (and checked with `ovs-ofctl ofp-print` inside a flow-mod,
    // which prints `ip,in_port=1,nw_dst=10.0.0.0/8`).
    const IN_PORT_IP_DST: &[u8] = &[
        0x00, 0x01, 0x00, 0x1e, // OFPMT_OXM, length 30
        0x80, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01, // OXM_OF_IN_PORT = 1
        0x80, 0x00, 0x0a, 0x02, 0x08, 0x00, // OXM_OF_ETH_TYPE = 0x0800
        0x80, 0x00, 0x19, 0x08, 0x0a, 0x00, 0x00, 0x00, 0xff, 0x00, 0x00,
        0x00, // OXM_OF_IPV4_DST_W
        0x00, 0x00, // padding to 32
    ];

    #[test]
    fn literal_match_parses_and_emits() {
        let want = m(vec![
            Oxm::basic(InPort, &[0, 0, 0, 1], None),
            Oxm::basic(EthType, &[0x08, 0x00], None),
            Oxm::basic(Ipv4Dst, &[10, 0, 0, 0], Some(&[255, 0, 0, 0])),
        ]);
        let mut r = Reader::new(IN_PORT_IP_DST, ErrorCode::BRC_BAD_LEN);
        assert_eq!(Match::parse(&mut r), Ok(want.clone()));
        assert!(r.is_empty(), "padding consumed");
        assert_eq!(emit(&want), IN_PORT_IP_DST);
        assert_eq!(want.wire_len(), 32);
        assert_eq!(want.unpadded_len(), 30);
        assert_eq!(
            want.get(Ipv4Dst),
            Some((
                FieldBytes::from_u128(0x0a00_0000, 4),
                Some(FieldBytes::from_u128(0xff00_0000, 4))
            ))
        );
        assert_eq!(want.get(EthType).map(|(v, m)| (v.to_u128(), m)), Some((0x0800, None)));
        assert_eq!(want.get(TcpDst), None);
        assert_eq!(want.check_prereqs(), Ok(()));
    }

    #[test]
    fn parse_leaves_following_bytes() {
        let mut b = IN_PORT_IP_DST.to_vec();
        b.extend_from_slice(&[0xaa, 0xbb]);
        let mut r = Reader::new(&b, ErrorCode::BRC_BAD_LEN);
        assert!(Match::parse(&mut r).is_ok());
        assert_eq!(r.rest(), &[0xaa, 0xbb]);
    }

    #[test]
    fn empty_match_is_eight_bytes() {
        let b = [0, 1, 0, 4, 0, 0, 0, 0];
        assert_eq!(parse(&b), Ok(Match::any()));
        assert_eq!(emit(&Match::any()), b);
        assert_eq!(Match::any().wire_len(), 8);
    }

    #[test]
    fn nonzero_padding_is_ignored() {
        assert_eq!(parse(&[0, 1, 0, 4, 1, 2, 3, 4]), Ok(Match::any()));
    }

    #[test]
    fn match_header_errors() {
        assert_eq!(parse(&[0, 0, 0, 4, 0, 0, 0, 0]), Err(ErrorCode::BMC_BAD_TYPE));
        assert_eq!(parse(&[0, 2, 0, 4, 0, 0, 0, 0]), Err(ErrorCode::BMC_BAD_TYPE));
        assert_eq!(parse(&[0, 1, 0, 3, 0, 0, 0, 0]), Err(BAD_LEN));
        assert_eq!(parse(&[0, 1, 0, 0, 0, 0, 0, 0]), Err(BAD_LEN));
        assert_eq!(parse(&[0, 1]), Err(BAD_LEN));
        assert_eq!(parse(&[]), Err(BAD_LEN));
        // Length overruns the buffer.
        assert_eq!(parse(&[0, 1, 0, 0x10, 0, 0, 0, 0]), Err(BAD_LEN));
        // Padding missing (wholly or partly).
        assert_eq!(parse(&[0, 1, 0, 4]), Err(BAD_LEN));
        assert_eq!(parse(&IN_PORT_IP_DST[..31]), Err(BAD_LEN));
        assert_eq!(parse(&IN_PORT_IP_DST[..30]), Err(BAD_LEN));
    }

    #[test]
    fn oxm_length_errors() {
        // in_port with length 5 (and 5 bytes there).
        assert_eq!(parse(&wrap(&[0x80, 0, 0x00, 5, 0, 0, 0, 1, 0])), Err(BAD_LEN));
        // in_port with length 2.
        assert_eq!(parse(&wrap(&[0x80, 0, 0x00, 2, 0, 1])), Err(BAD_LEN));
        // eth_dst with HASMASK but only 6 bytes.
        assert_eq!(parse(&wrap(&[0x80, 0, 0x07, 6, 1, 2, 3, 4, 5, 6])), Err(BAD_LEN));
        // eth_dst without mask but 12 bytes.
        assert_eq!(
            parse(&wrap(&[0x80, 0, 0x06, 12, 1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6])),
            Err(BAD_LEN)
        );
        // OXM header truncated inside the match.
        assert_eq!(parse(&wrap(&[0x80, 0])), Err(BAD_LEN));
        assert_eq!(parse(&wrap(&[0x80, 0, 0])), Err(BAD_LEN));
        // Payload truncated: in_port header, 2 of its 4 bytes.
        assert_eq!(parse(&wrap(&[0x80, 0, 0x00, 4, 0, 1])), Err(BAD_LEN));
        // OXM overrunning the match length although the buffer goes on:
        // match length 10 but in_port needs 12.
        let b = [0, 1, 0, 10, 0x80, 0, 0x00, 4, 0, 0, 0, 1, 0, 0, 0, 0];
        assert_eq!(parse(&b), Err(BAD_LEN));
        // Experimenter OXM shorter than its experimenter id.
        assert_eq!(parse(&wrap(&[0xff, 0xff, 0x02, 3, 0, 0, 1])), Err(BAD_LEN));
        assert_eq!(parse(&wrap(&[0xff, 0xff, 0x02, 0])), Err(BAD_LEN));
        // Other class: payload truncated.
        assert_eq!(parse(&wrap(&[0x00, 0x01, 0x00, 4, 1, 2])), Err(BAD_LEN));
    }

    #[test]
    fn oxm_parse_uses_bad_len_whatever_the_reader_says() {
        let mut r = Reader::new(&[0x80, 0x00, 0x00], ErrorCode::BAC_BAD_SET_LEN);
        assert_eq!(Oxm::parse(&mut r), Err(BAD_LEN));
        let mut r = Reader::new(&[0x80, 0x00, 0x00, 0x04, 0], ErrorCode::BAC_BAD_SET_LEN);
        assert_eq!(Oxm::parse(&mut r), Err(BAD_LEN));
        // A good OXM advances the reader by exactly its length.
        let mut r = Reader::new(&[0x80, 0x00, 0x0e, 0x01, 0x05, 0xee], ErrorCode::BAC_BAD_SET_LEN);
        assert_eq!(Oxm::parse(&mut r), Ok(Oxm::exact(VlanPcp, 5)));
        assert_eq!(r.rest(), &[0xee]);
    }

    #[test]
    fn unknown_basic_field_is_bad_field() {
        assert_eq!(parse(&wrap(&[0x80, 0, 40 << 1, 4, 0, 0, 0, 0])), Err(ErrorCode::BMC_BAD_FIELD));
        assert_eq!(parse(&wrap(&[0x80, 0, 0xfe, 0])), Err(ErrorCode::BMC_BAD_FIELD));
        assert_eq!(parse(&wrap(&[0x80, 0, 0xff, 0])), Err(ErrorCode::BMC_BAD_FIELD));
    }

    #[test]
    fn mask_on_unmaskable_field_is_bad_mask() {
        // OXM_OF_IN_PORT with HASMASK, correct doubled length.
        let b = wrap(&[0x80, 0, 0x01, 8, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(parse(&b), Err(ErrorCode::BMC_BAD_MASK));
        // eth_type / vlan_pcp / tcp_dst / mpls_label / nd_target likewise.
        for f in [EthType, VlanPcp, TcpDst, MplsLabel, Ipv6NdTarget, Ipv6NdSll] {
            let mut o = vec![0x80, 0, (f as u8) << 1 | 1, 2 * f.len() as u8];
            o.resize(4 + 2 * f.len(), 0);
            assert_eq!(parse(&wrap(&o)), Err(ErrorCode::BMC_BAD_MASK), "{f:?}");
        }
        assert_eq!(
            Oxm::try_basic(EthType, &[8, 0], Some(&[0xff, 0xff])),
            Err(ErrorCode::BMC_BAD_MASK)
        );
    }

    #[test]
    fn duplicate_fields_are_rejected() {
        let eth = [0x80, 0, 0x0a, 2, 0x08, 0x00];
        assert_eq!(parse(&wrap(&[&eth[..], &eth[..]].concat())), Err(ErrorCode::BMC_DUP_FIELD));
        // Same field once exact, once masked.
        let exact = [0x80, 0, 0x08, 6, 1, 2, 3, 4, 5, 6];
        let masked = [0x80, 0, 0x09, 12, 1, 2, 3, 4, 5, 6, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(
            parse(&wrap(&[&exact[..], &masked[..]].concat())),
            Err(ErrorCode::BMC_DUP_FIELD)
        );
        // NXM_1 field 0 twice, with and without mask.
        let nxm = [0x00, 0x01, 0x00, 4, 0, 0, 0, 1];
        let nxm_w = [0x00, 0x01, 0x01, 8, 0, 0, 0, 1, 0, 0, 0, 1];
        assert_eq!(parse(&wrap(&[&nxm[..], &nxm_w[..]].concat())), Err(ErrorCode::BMC_DUP_FIELD));
        // Experimenter: same id and field twice is a duplicate ...
        let e1 = [0xff, 0xff, 0x0a, 5, 0x00, 0x00, 0x23, 0x20, 7];
        assert_eq!(parse(&wrap(&[&e1[..], &e1[..]].concat())), Err(ErrorCode::BMC_DUP_FIELD));
        // ... another experimenter's field 5 is not.
        let e2 = [0xff, 0xff, 0x0a, 5, 0x53, 0x4c, 0x49, 0x43, 7];
        let both = parse(&wrap(&[&e1[..], &e2[..], &nxm[..], &eth[..]].concat())).unwrap();
        assert_eq!(both.oxms.len(), 4);
        assert_eq!(both.validate(), Ok(()));
        // sluice's `pof` field (field 0): two windows are two fields, the
        // same window twice (any value) is a duplicate.
        #[rustfmt::skip]
        let pof = |off: u8, v: u8| [
            0xff, 0xff, 0x00, 13, 0x53, 0x4c, 0x49, 0x43, // class, field 0, len, "SLIC"
            0, 0, 0, 8, 0, 0, 0, off, v,                  // frame base, 8 bits at `off`
        ];
        let two = parse(&wrap(&[pof(8, 1), pof(16, 1)].concat())).unwrap();
        assert_eq!(two.oxms.len(), 2);
        assert_eq!(two.validate(), Ok(()));
        assert_eq!(parse(&wrap(&[pof(8, 1), pof(8, 2)].concat())), Err(ErrorCode::BMC_DUP_FIELD));
        assert_eq!(
            m(vec![Oxm::exact(EthType, 0x800), Oxm::exact(EthType, 0x800)]).validate(),
            Err(ErrorCode::BMC_DUP_FIELD)
        );
    }

    #[test]
    fn value_outside_mask_is_bad_wildcards() {
        // ipv4_dst = 10.0.0.1/255.0.0.0
        let b = wrap(&[0x80, 0, 0x19, 8, 10, 0, 0, 1, 255, 0, 0, 0]);
        assert_eq!(parse(&b), Err(ErrorCode::BMC_BAD_WILDCARDS));
        // metadata 1/0
        let mut o = vec![0x80, 0, 0x05, 16];
        o.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1]);
        o.extend_from_slice(&[0; 8]);
        assert_eq!(parse(&wrap(&o)), Err(ErrorCode::BMC_BAD_WILDCARDS));
        // A zero mask with a zero value is fine (and kept as given).
        let b = wrap(&[0x80, 0, 0x19, 8, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(parse(&b), Ok(m(vec![Oxm::masked(Ipv4Dst, 0, 0)])));
        assert_eq!(
            Oxm::try_basic(Ipv4Dst, &[10, 0, 0, 1], Some(&[255, 0, 0, 0])),
            Err(ErrorCode::BMC_BAD_WILDCARDS)
        );
    }

    #[test]
    fn all_ones_mask_is_kept() {
        let b = wrap(&[0x80, 0, 0x19, 8, 10, 0, 0, 1, 255, 255, 255, 255]);
        let got = parse(&b).unwrap();
        assert_eq!(got, m(vec![Oxm::masked(Ipv4Dst, 0x0a00_0001, 0xffff_ffff)]));
        assert_eq!(emit(&got), b);
    }

    #[test]
    fn values_wider_than_the_field_are_bad_value() {
        let cases: &[(FieldId, u128, u128)] = &[
            (VlanVid, 0x1fff, 0x2000),
            (VlanPcp, 7, 8),
            (IpDscp, 63, 64),
            (IpEcn, 3, 4),
            (MplsLabel, 0xfffff, 0x100000),
            (MplsTc, 7, 8),
            (MplsBos, 1, 2),
            (Ipv6Flabel, 0xfffff, 0x100000),
            (Ipv6Exthdr, 0x1ff, 0x200),
        ];
        for &(f, ok, bad) in cases {
            let one = |v: u128| {
                let mut o = Vec::new();
                Oxm::exact(f, v).emit(&mut o);
                parse(&wrap(&o))
            };
            assert_eq!(one(ok), Ok(m(vec![Oxm::exact(f, ok)])), "{f:?}");
            assert_eq!(one(bad), Err(ErrorCode::BMC_BAD_VALUE), "{f:?}");
            assert_eq!(Oxm::exact(f, bad).validate(), Err(ErrorCode::BMC_BAD_VALUE), "{f:?}");
        }
        // Masked fields: the value is range-checked too (mask all ones so
        // that the wildcard check passes).
        let b = wrap(&[0x80, 0, 0x0d, 4, 0x20, 0x00, 0xff, 0xff]);
        assert_eq!(parse(&b), Err(ErrorCode::BMC_BAD_VALUE));
        let b = wrap(&[0x80, 0, 0x39, 8, 0, 0x10, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(parse(&b), Err(ErrorCode::BMC_BAD_VALUE));
        // Full-width fields have no range limit.
        assert_eq!(Oxm::exact(PbbIsid, 0xff_ffff).validate(), Ok(()));
        assert_eq!(Oxm::exact(InPort, 0xffff_ffff).validate(), Ok(()));
    }

    #[test]
    fn experimenter_and_other_classes_are_preserved() {
        let oxms = [
            // Experimenter 0x534c4943, field 3, hasmask, 4 payload bytes.
            &[0xff, 0xff, 0x07, 8, 0x53, 0x4c, 0x49, 0x43, 1, 2, 3, 4][..],
            // Experimenter with an empty payload.
            &[0xff, 0xff, 0x02, 4, 0, 0, 0x23, 0x20][..],
            // NXM_1 reg0 (field 0) = 5.
            &[0x00, 0x01, 0x00, 4, 0, 0, 0, 5][..],
            // NXM_0 field 127 hasmask, odd payload length preserved.
            &[0x00, 0x00, 0xff, 3, 9, 8, 7][..],
            // An unknown class with an empty payload.
            &[0x12, 0x34, 0x00, 0][..],
        ]
        .concat();
        let b = wrap(&oxms);
        let got = parse(&b).unwrap();
        assert_eq!(
            got.oxms,
            vec![
                Oxm::Experimenter {
                    experimenter: 0x534c_4943,
                    field: 3,
                    has_mask: true,
                    payload: vec![1, 2, 3, 4]
                },
                Oxm::Experimenter {
                    experimenter: 0x2320,
                    field: 1,
                    has_mask: false,
                    payload: vec![]
                },
                Oxm::Other {
                    class: OFPXMC_NXM_1,
                    field: 0,
                    has_mask: false,
                    payload: vec![0, 0, 0, 5]
                },
                Oxm::Other {
                    class: OFPXMC_NXM_0,
                    field: 127,
                    has_mask: true,
                    payload: vec![9, 8, 7]
                },
                Oxm::Other { class: 0x1234, field: 0, has_mask: false, payload: vec![] },
            ]
        );
        assert_eq!(emit(&got), b);
        assert_eq!(got.wire_len(), b.len());
        assert_eq!(got.oxms[0].header(), OxmHeader(0xffff_0708));
        assert_eq!(got.check_prereqs(), Ok(()), "non-basic OXMs have no prerequisites here");
    }

    #[test]
    fn header_constants_match_openflow_h() {
        let h = |f: FieldId, w: bool| OxmHeader::basic(f, w).0;
        assert_eq!(h(InPort, false), 0x8000_0004);
        assert_eq!(h(InPhyPort, false), 0x8000_0204);
        assert_eq!(h(Metadata, true), 0x8000_0510);
        assert_eq!(h(EthDst, true), 0x8000_070c);
        assert_eq!(h(EthType, false), 0x8000_0a02);
        assert_eq!(h(VlanVid, true), 0x8000_0d04);
        assert_eq!(h(VlanPcp, false), 0x8000_0e01);
        assert_eq!(h(Ipv4Src, true), 0x8000_1708);
        assert_eq!(h(SctpDst, false), 0x8000_2402);
        assert_eq!(h(ArpTha, true), 0x8000_330c);
        assert_eq!(h(Ipv6Src, true), 0x8000_3520);
        assert_eq!(h(Ipv6Flabel, true), 0x8000_3908);
        assert_eq!(h(Ipv6NdTarget, false), 0x8000_3e10);
        assert_eq!(h(Ipv6NdTll, false), 0x8000_4206);
        assert_eq!(h(MplsLabel, false), 0x8000_4404);
        assert_eq!(h(MplsBos, false), 0x8000_4801);
        assert_eq!(h(PbbIsid, true), 0x8000_4b06);
        assert_eq!(h(TunnelId, true), 0x8000_4d10);
        assert_eq!(h(Ipv6Exthdr, true), 0x8000_4f04);
        let x = OxmHeader(0x8000_4f04);
        assert_eq!((x.class(), x.field(), x.has_mask(), x.length()), (0x8000, 39, true, 4));
        assert_eq!(x.basic_field(), Some(Ipv6Exthdr));
        assert_eq!(OxmHeader(0x8000_5000).basic_field(), None);
        assert_eq!(OxmHeader(0x0001_0004).basic_field(), None);
    }

    #[test]
    fn field_table_is_dense_and_consistent() {
        assert_eq!(FieldId::ALL.len(), 40);
        for (i, &f) in FieldId::ALL.iter().enumerate() {
            assert_eq!(f as usize, i);
            assert_eq!(FieldId::from_u8(i as u8), Some(f));
            assert!(f.bits() > 0 && f.bits() as usize <= 8 * f.len(), "{f:?}");
            assert!(f.spec_name().starts_with("OFPXMT_OFB_"));
        }
        assert_eq!(FieldId::from_u8(40), None);
        let maskable: Vec<_> =
            FieldId::ALL.iter().filter(|f| f.maskable()).map(|&f| f as u8).collect();
        assert_eq!(maskable, [2, 3, 4, 6, 11, 12, 22, 23, 24, 25, 26, 27, 28, 37, 38, 39]);
    }

    #[test]
    fn every_field_round_trips_exact_and_masked() {
        for &f in FieldId::ALL {
            let mut oxms = vec![Oxm::exact(f, f.max_value())];
            if f.maskable() {
                oxms.push(Oxm::masked(f, 0, 0));
            }
            for o in oxms {
                let mut b = Vec::new();
                o.emit(&mut b);
                assert_eq!(b.len(), o.wire_len());
                let h = o.header();
                assert_eq!(h, OxmHeader::basic(f, o.has_mask()));
                assert_eq!(b[..4], h.0.to_be_bytes());
                let mut r = Reader::new(&b, ErrorCode::BRC_BAD_LEN);
                assert_eq!(OxmHeader::parse(&mut r), Ok(h));
                let mut r = Reader::new(&b, ErrorCode::BRC_BAD_LEN);
                assert_eq!(Oxm::parse(&mut r).as_ref(), Ok(&o));
                assert!(r.is_empty());
                let one = m(vec![o.clone()]);
                assert_eq!(parse(&emit(&one)), Ok(one));
            }
        }
    }

    #[test]
    fn constructors() {
        assert_eq!(Oxm::try_basic(EthType, &[8], None), Err(BAD_LEN));
        assert_eq!(Oxm::try_basic(EthSrc, &[0; 6], Some(&[0; 5])), Err(BAD_LEN));
        assert_eq!(Oxm::try_basic(EthSrc, &[0; 17], None), Err(BAD_LEN));
        assert_eq!(Oxm::try_basic(VlanPcp, &[8], None), Err(ErrorCode::BMC_BAD_VALUE));
        assert_eq!(Oxm::try_basic(EthType, &[0x86, 0xdd], None), Ok(Oxm::exact(EthType, 0x86dd)));
        assert_eq!(
            Oxm::try_basic(VlanVid, &[0x10, 0], Some(&[0x10, 0])),
            Ok(Oxm::masked(VlanVid, 0x1000, 0x1000))
        );
        assert_eq!(Oxm::exact(TcpDst, 80).field_id(), Some(TcpDst));
        assert!(!Oxm::exact(TcpDst, 80).has_mask());
    }

    #[test]
    #[should_panic]
    fn basic_panics_on_wrong_length() {
        let _ = Oxm::basic(EthType, &[8, 0, 0], None);
    }

    #[test]
    fn validate_rejects_what_parse_would() {
        let long =
            Oxm::Experimenter { experimenter: 1, field: 0, has_mask: false, payload: vec![0; 300] };
        assert_eq!(long.validate(), Err(BAD_LEN));
        // emit and wire_len stay consistent (truncated payload).
        let mut b = Vec::new();
        long.emit(&mut b);
        assert_eq!(b.len(), long.wire_len());
        assert_eq!(b.len(), 4 + 255);
        assert_eq!(
            Oxm::Other { class: OFPXMC_OPENFLOW_BASIC, field: 0, has_mask: false, payload: vec![] }
                .validate(),
            Err(ErrorCode::BMC_BAD_FIELD)
        );
        assert_eq!(
            Oxm::Other { class: 3, field: 128, has_mask: false, payload: vec![] }.validate(),
            Err(ErrorCode::BMC_BAD_FIELD)
        );
        assert_eq!(
            Oxm::Experimenter { experimenter: 1, field: 200, has_mask: false, payload: vec![] }
                .validate(),
            Err(ErrorCode::BMC_BAD_FIELD)
        );
        assert_eq!(Oxm::masked(EthSrc, 1, 0).validate(), Err(ErrorCode::BMC_BAD_WILDCARDS));
        assert_eq!(Oxm::masked(TcpSrc, 1, 0xffff).validate(), Err(ErrorCode::BMC_BAD_MASK));
    }

    #[test]
    fn oversized_match_is_truncated_consistently() {
        // 300 distinct OXMs of 259 bytes each: far past the 16-bit length.
        let oxms: Vec<Oxm> = (0..300u16)
            .map(|i| Oxm::Other {
                class: 0x100 + i,
                field: 1,
                has_mask: false,
                payload: vec![7; 255],
            })
            .collect();
        let big = m(oxms);
        assert_eq!(big.validate(), Err(BAD_LEN));
        let b = emit(&big);
        assert_eq!(b.len(), big.wire_len());
        assert_eq!(b.len() % 8, 0);
        let back = parse(&b).unwrap();
        assert_eq!(back.oxms[..], big.oxms[..back.oxms.len()]);
        assert_eq!(back.oxms.len(), (0xffff - 4) / 259);
    }

    // ---- prerequisites ----

    fn pre(oxms: Vec<Oxm>) -> Result<()> {
        m(oxms).check_prereqs()
    }
    const PRE: Result<()> = Err(ErrorCode::BMC_BAD_PREREQ);

    #[test]
    fn prerequisite_examples() {
        let eth = |t| Oxm::exact(EthType, t);
        let proto = |p| Oxm::exact(IpProto, p);
        assert_eq!(pre(vec![Oxm::exact(Ipv4Src, 1)]), PRE);
        assert_eq!(pre(vec![eth(0x0800), Oxm::exact(Ipv4Src, 1)]), Ok(()));
        assert_eq!(pre(vec![Oxm::exact(Ipv4Src, 1), eth(0x0800)]), Ok(()), "order does not matter");
        assert_eq!(pre(vec![eth(0x86dd), Oxm::exact(Ipv4Src, 1)]), PRE);
        // A masked eth_type never meets a prerequisite, even all ones.
        assert_eq!(pre(vec![Oxm::masked(EthType, 0x0800, 0xffff), Oxm::exact(Ipv4Src, 1)]), PRE);
        // TCP over IPv4 and IPv6, not over nothing, not with UDP.
        assert_eq!(pre(vec![eth(0x0800), proto(6), Oxm::exact(TcpSrc, 80)]), Ok(()));
        assert_eq!(pre(vec![eth(0x86dd), proto(6), Oxm::exact(TcpDst, 80)]), Ok(()));
        assert_eq!(pre(vec![proto(6), Oxm::exact(TcpSrc, 80)]), PRE);
        assert_eq!(pre(vec![eth(0x0800), proto(17), Oxm::exact(TcpSrc, 80)]), PRE);
        assert_eq!(pre(vec![eth(0x0800), proto(17), Oxm::exact(UdpSrc, 80)]), Ok(()));
        assert_eq!(pre(vec![eth(0x86dd), proto(132), Oxm::exact(SctpDst, 80)]), Ok(()));
        assert_eq!(pre(vec![eth(0x0806), proto(6)]), PRE);
        // ICMPv4 needs IPv4; ICMPv6 needs IPv6.
        assert_eq!(pre(vec![eth(0x0800), proto(1), Oxm::exact(Icmpv4Type, 8)]), Ok(()));
        assert_eq!(pre(vec![eth(0x86dd), proto(1), Oxm::exact(Icmpv4Code, 0)]), PRE);
        assert_eq!(pre(vec![eth(0x86dd), proto(58), Oxm::exact(Icmpv6Type, 1)]), Ok(()));
        assert_eq!(pre(vec![eth(0x0800), proto(58), Oxm::exact(Icmpv6Code, 1)]), PRE);
        // Neighbour discovery.
        let nd =
            |ty, f| pre(vec![eth(0x86dd), proto(58), Oxm::exact(Icmpv6Type, ty), Oxm::exact(f, 1)]);
        assert_eq!(nd(135, Ipv6NdTarget), Ok(()));
        assert_eq!(nd(136, Ipv6NdTarget), Ok(()));
        assert_eq!(nd(134, Ipv6NdTarget), PRE);
        assert_eq!(nd(135, Ipv6NdSll), Ok(()));
        assert_eq!(nd(136, Ipv6NdSll), PRE);
        assert_eq!(nd(136, Ipv6NdTll), Ok(()));
        assert_eq!(nd(135, Ipv6NdTll), PRE);
        assert_eq!(pre(vec![eth(0x86dd), proto(58), Oxm::exact(Ipv6NdTarget, 1)]), PRE);
        // ARP, MPLS, PBB, IPv6 extension headers.
        assert_eq!(pre(vec![eth(0x0806), Oxm::exact(ArpOp, 1), Oxm::masked(ArpTpa, 0, 0)]), Ok(()));
        assert_eq!(pre(vec![eth(0x0800), Oxm::exact(ArpOp, 1)]), PRE);
        assert_eq!(pre(vec![eth(0x8847), Oxm::exact(MplsLabel, 1)]), Ok(()));
        assert_eq!(pre(vec![eth(0x8848), Oxm::exact(MplsBos, 1)]), Ok(()));
        assert_eq!(pre(vec![eth(0x0800), Oxm::exact(MplsTc, 1)]), PRE);
        assert_eq!(pre(vec![eth(0x88e7), Oxm::exact(PbbIsid, 1)]), Ok(()));
        assert_eq!(pre(vec![eth(0x8847), Oxm::exact(PbbIsid, 1)]), PRE);
        assert_eq!(pre(vec![eth(0x86dd), Oxm::exact(Ipv6Exthdr, 1)]), Ok(()));
        assert_eq!(pre(vec![Oxm::exact(Ipv6Exthdr, 1)]), PRE);
        // IN_PHY_PORT needs IN_PORT.
        assert_eq!(pre(vec![Oxm::exact(InPhyPort, 1)]), PRE);
        assert_eq!(pre(vec![Oxm::exact(InPort, 2), Oxm::exact(InPhyPort, 1)]), Ok(()));
        // No prerequisites.
        assert_eq!(
            pre(vec![Oxm::exact(TunnelId, 1), Oxm::masked(Metadata, 0, 0), Oxm::exact(VlanVid, 0)]),
            Ok(())
        );
    }

    #[test]
    fn vlan_pcp_needs_a_tag() {
        let pcp = Oxm::exact(VlanPcp, 3);
        assert_eq!(pre(vec![pcp.clone()]), PRE);
        // OFPVID_NONE: untagged.
        assert_eq!(pre(vec![Oxm::exact(VlanVid, 0), pcp.clone()]), PRE);
        // A specific VID with OFPVID_PRESENT.
        assert_eq!(pre(vec![Oxm::exact(VlanVid, 0x1005), pcp.clone()]), Ok(()));
        // Any tagged packet: OFPVID_PRESENT/OFPVID_PRESENT.
        assert_eq!(pre(vec![Oxm::masked(VlanVid, 0x1000, 0x1000), pcp.clone()]), Ok(()));
        assert_eq!(pre(vec![Oxm::masked(VlanVid, 0x1005, 0x1fff), pcp.clone()]), Ok(()));
        // Masks that do not pin OFPVID_PRESENT do not guarantee a tag.
        assert_eq!(pre(vec![Oxm::masked(VlanVid, 0x0005, 0x0fff), pcp.clone()]), PRE);
        assert_eq!(pre(vec![Oxm::masked(VlanVid, 0, 0), pcp.clone()]), PRE);
        // VID without OFPVID_PRESENT, exact.
        assert_eq!(pre(vec![Oxm::exact(VlanVid, 0x0005), pcp]), PRE);
    }

    #[test]
    fn parse_does_not_check_prerequisites() {
        let b = wrap(&[0x80, 0, 0x16, 4, 10, 0, 0, 1]); // ipv4_src alone
        let got = parse(&b).unwrap();
        assert_eq!(got.check_prereqs(), PRE);
        assert_eq!(got.unmet_prereq(), Some(Ipv4Src));
    }

    /// A match on `f` plus exactly what its prerequisite list asks for.
    fn satisfy(f: FieldId) -> Vec<Oxm> {
        let mut oxms = vec![Oxm::exact(f, 0)];
        for p in f.prereqs() {
            oxms.push(match *p {
                Prereq::Exact(g, values) => Oxm::exact(g, values[0] as u128),
                Prereq::Present(g) => Oxm::exact(g, 1),
                Prereq::VlanTagged => Oxm::exact(VlanVid, 0x1001),
            });
        }
        oxms
    }

    #[test]
    fn prerequisite_table_is_closed_and_each_condition_matters() {
        for &f in FieldId::ALL {
            // The list is complete: a required field's own prerequisites are
            // in the list too, or implied by a stricter condition (ICMPv4's
            // eth_type=0x0800 implies IP_PROTO's eth_type in {0x0800, 0x86dd}).
            let implied = |q: &Prereq| {
                f.prereqs().iter().any(|p| match (*p, *q) {
                    (Prereq::Exact(a, va), Prereq::Exact(b, vb)) => {
                        a == b && va.iter().all(|v| vb.contains(v))
                    }
                    _ => p == q,
                })
            };
            for p in f.prereqs() {
                if let Prereq::Exact(g, _) | Prereq::Present(g) = *p {
                    for q in g.prereqs() {
                        assert!(implied(q), "{f:?} lacks {q:?} of {g:?}");
                    }
                }
            }
            let oxms = satisfy(f);
            assert_eq!(pre(oxms.clone()), Ok(()), "{f:?}");
            // Dropping any one prerequisite OXM breaks it.
            for i in 1..oxms.len() {
                let mut fewer = oxms.clone();
                fewer.remove(i);
                assert_eq!(pre(fewer), PRE, "{f:?} without {:?}", oxms[i]);
            }
            // Every listed value satisfies; a value not listed does not.
            for (i, p) in f.prereqs().iter().enumerate() {
                if let Prereq::Exact(g, values) = *p {
                    for &v in values {
                        let mut o = oxms.clone();
                        o[i + 1] = Oxm::exact(g, v as u128);
                        assert_eq!(pre(o), Ok(()), "{f:?} {g:?}={v:#x}");
                    }
                    let mut o = oxms.clone();
                    o[i + 1] = Oxm::exact(g, 0xff);
                    assert_eq!(pre(o), PRE, "{f:?} {g:?}=0xff");
                }
            }
        }
    }

    proptest! {
        #[test]
        fn match_round_trips(mt in arb_match()) {
            prop_assert_eq!(mt.validate(), Ok(()));
            let b = emit(&mt);
            prop_assert_eq!(b.len(), mt.wire_len());
            prop_assert_eq!(b.len() % 8, 0);
            prop_assert_eq!(u16::from_be_bytes([b[2], b[3]]) as usize, mt.unpadded_len());
            let mut r = Reader::new(&b, ErrorCode::BRC_BAD_LEN);
            prop_assert_eq!(Match::parse(&mut r), Ok(mt));
            prop_assert!(r.is_empty());
        }

        #[test]
        fn oxm_round_trips(o in arb_oxm()) {
            let mut b = Vec::new();
            o.emit(&mut b);
            prop_assert_eq!(b.len(), o.wire_len());
            let mut r = Reader::new(&b, ErrorCode::BRC_BAD_LEN);
            prop_assert_eq!(OxmHeader::parse(&mut r), Ok(o.header()));
            let mut r = Reader::new(&b, ErrorCode::BRC_BAD_LEN);
            prop_assert_eq!(Oxm::parse(&mut r), Ok(o));
            prop_assert!(r.is_empty());
        }

        #[test]
        fn set_field_oxms_are_unmasked_and_valid(o in arb_set_field_oxm()) {
            prop_assert!(!o.has_mask());
            prop_assert!(o.field_id().is_some());
            prop_assert_eq!(o.validate(), Ok(()));
        }

        #[test]
        fn header_parts_round_trip(class: u16, field in 0u8..128, has_mask: bool, length: u8) {
            let h = OxmHeader::new(class, field, has_mask, length);
            prop_assert_eq!((h.class(), h.field(), h.has_mask(), h.length()), (class, field, has_mask, length));
            let mut b = Vec::new();
            h.emit(&mut b);
            prop_assert_eq!(OxmHeader::parse(&mut Reader::new(&b, BAD_LEN)), Ok(h));
        }

        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut r = Reader::new(&b, ErrorCode::BRC_BAD_LEN);
            if let Ok(mt) = Match::parse(&mut r) {
                prop_assert!(r.position() <= b.len());
                let _ = mt.check_prereqs();
                prop_assert_eq!(parse(&emit(&mt)), Ok(mt));
            }
        }

        /// Bytes that start as a valid match header with a plausible length,
        /// so the OXM decoder (not just the header check) sees random input.
        #[test]
        fn random_oxm_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..200), class_basic: bool) {
            let mut body = body;
            if class_basic && body.len() >= 2 {
                body[0] = 0x80;
                body[1] = 0x00;
            }
            let b = wrap(&body);
            if let Ok(mt) = parse(&b) {
                prop_assert_eq!(mt.validate(), Ok(()));
                prop_assert_eq!(emit(&mt), b);
            }
        }

        #[test]
        fn mutated_matches_never_panic(mt in arb_match(), at: usize, byte: u8) {
            let mut b = emit(&mt);
            let i = at % b.len();
            b[i] = byte;
            if let Ok(back) = parse(&b) {
                prop_assert_eq!(back.validate(), Ok(()));
                prop_assert_eq!(parse(&emit(&back)), Ok(back));
            }
        }
    }
}
