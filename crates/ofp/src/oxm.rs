//! OXM match fields (OpenFlow 1.3.5 §7.2.3) and `struct ofp_match`.
//!
//! CONTRACT (filled in by the OXM work item): the public names below are
//! used by other modules and crates; keep them.

use crate::error::Result;
use crate::wire::Reader;

/// `OFPXMC_OPENFLOW_BASIC`.
pub const OFPXMC_OPENFLOW_BASIC: u16 = 0x8000;
/// `OFPXMC_EXPERIMENTER`.
pub const OFPXMC_EXPERIMENTER: u16 = 0xffff;
/// `OFPMT_OXM`.
pub const OFPMT_OXM: u16 = 1;

macro_rules! basic_fields {
    ($( $var:ident = $n:literal, $len:literal, $maskable:literal, $spec:literal, $ovs:literal; )*) => {
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
            pub const fn len(self) -> usize {
                match self { $( FieldId::$var => $len, )* }
            }
            /// Whether the spec allows `OXM_HASMASK` for this field.
            pub const fn maskable(self) -> bool {
                match self { $( FieldId::$var => $maskable, )* }
            }
            /// The spec's name, e.g. `OFPXMT_OFB_ETH_DST`.
            pub const fn spec_name(self) -> &'static str {
                match self { $( FieldId::$var => $spec, )* }
            }
            /// The `ovs-ofctl` name, e.g. `dl_dst` / `eth_dst` → we use the
            /// OXM-era names ovs-ofctl prints for OpenFlow 1.3 (`eth_dst`).
            pub const fn ovs_name(self) -> &'static str {
                match self { $( FieldId::$var => $ovs, )* }
            }
        }
    };
}

basic_fields! {
    InPort = 0, 4, false, "OFPXMT_OFB_IN_PORT", "in_port";
    InPhyPort = 1, 4, false, "OFPXMT_OFB_IN_PHY_PORT", "in_phy_port";
    Metadata = 2, 8, true, "OFPXMT_OFB_METADATA", "metadata";
    EthDst = 3, 6, true, "OFPXMT_OFB_ETH_DST", "eth_dst";
    EthSrc = 4, 6, true, "OFPXMT_OFB_ETH_SRC", "eth_src";
    EthType = 5, 2, false, "OFPXMT_OFB_ETH_TYPE", "eth_type";
    VlanVid = 6, 2, true, "OFPXMT_OFB_VLAN_VID", "vlan_vid";
    VlanPcp = 7, 1, false, "OFPXMT_OFB_VLAN_PCP", "vlan_pcp";
    IpDscp = 8, 1, false, "OFPXMT_OFB_IP_DSCP", "ip_dscp";
    IpEcn = 9, 1, false, "OFPXMT_OFB_IP_ECN", "ip_ecn";
    IpProto = 10, 1, false, "OFPXMT_OFB_IP_PROTO", "ip_proto";
    Ipv4Src = 11, 4, true, "OFPXMT_OFB_IPV4_SRC", "ipv4_src";
    Ipv4Dst = 12, 4, true, "OFPXMT_OFB_IPV4_DST", "ipv4_dst";
    TcpSrc = 13, 2, false, "OFPXMT_OFB_TCP_SRC", "tcp_src";
    TcpDst = 14, 2, false, "OFPXMT_OFB_TCP_DST", "tcp_dst";
    UdpSrc = 15, 2, false, "OFPXMT_OFB_UDP_SRC", "udp_src";
    UdpDst = 16, 2, false, "OFPXMT_OFB_UDP_DST", "udp_dst";
    SctpSrc = 17, 2, false, "OFPXMT_OFB_SCTP_SRC", "sctp_src";
    SctpDst = 18, 2, false, "OFPXMT_OFB_SCTP_DST", "sctp_dst";
    Icmpv4Type = 19, 1, false, "OFPXMT_OFB_ICMPV4_TYPE", "icmp_type";
    Icmpv4Code = 20, 1, false, "OFPXMT_OFB_ICMPV4_CODE", "icmp_code";
    ArpOp = 21, 2, false, "OFPXMT_OFB_ARP_OP", "arp_op";
    ArpSpa = 22, 4, true, "OFPXMT_OFB_ARP_SPA", "arp_spa";
    ArpTpa = 23, 4, true, "OFPXMT_OFB_ARP_TPA", "arp_tpa";
    ArpSha = 24, 6, true, "OFPXMT_OFB_ARP_SHA", "arp_sha";
    ArpTha = 25, 6, true, "OFPXMT_OFB_ARP_THA", "arp_tha";
    Ipv6Src = 26, 16, true, "OFPXMT_OFB_IPV6_SRC", "ipv6_src";
    Ipv6Dst = 27, 16, true, "OFPXMT_OFB_IPV6_DST", "ipv6_dst";
    Ipv6Flabel = 28, 4, true, "OFPXMT_OFB_IPV6_FLABEL", "ipv6_label";
    Icmpv6Type = 29, 1, false, "OFPXMT_OFB_ICMPV6_TYPE", "icmpv6_type";
    Icmpv6Code = 30, 1, false, "OFPXMT_OFB_ICMPV6_CODE", "icmpv6_code";
    Ipv6NdTarget = 31, 16, false, "OFPXMT_OFB_IPV6_ND_TARGET", "nd_target";
    Ipv6NdSll = 32, 6, false, "OFPXMT_OFB_IPV6_ND_SLL", "nd_sll";
    Ipv6NdTll = 33, 6, false, "OFPXMT_OFB_IPV6_ND_TLL", "nd_tll";
    MplsLabel = 34, 4, false, "OFPXMT_OFB_MPLS_LABEL", "mpls_label";
    MplsTc = 35, 1, false, "OFPXMT_OFB_MPLS_TC", "mpls_tc";
    MplsBos = 36, 1, false, "OFPXMT_OFB_MPLS_BOS", "mpls_bos";
    PbbIsid = 37, 3, true, "OFPXMT_OFB_PBB_ISID", "pbb_isid";
    TunnelId = 38, 8, true, "OFPXMT_OFB_TUNNEL_ID", "tunnel_id";
    Ipv6Exthdr = 39, 2, true, "OFPXMT_OFB_IPV6_EXTHDR", "ipv6_exthdr";
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
    /// The value as an unsigned big-endian integer (fields up to 16 bytes).
    pub fn to_u128(&self) -> u128 {
        self.as_slice().iter().fold(0u128, |a, &b| (a << 8) | b as u128)
    }
    /// `v` truncated to `len` big-endian bytes.
    pub fn from_u128(v: u128, len: usize) -> Self {
        let all = v.to_be_bytes();
        Self::new(&all[16 - len.min(16)..]).expect("len <= 16")
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
    /// experimenter id (value and, if `has_mask`, mask).
    Experimenter { experimenter: u32, field: u8, has_mask: bool, payload: Vec<u8> },
    /// Any other class (NXM_0, NXM_1, unknown), preserved verbatim.
    Other { class: u16, field: u8, has_mask: bool, payload: Vec<u8> },
}

/// The 32-bit OXM header: class(16) field(7) hasmask(1) length(8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OxmHeader(pub u32);

/// `struct ofp_match` of type `OFPMT_OXM`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Match {
    pub oxms: Vec<Oxm>,
}

impl Oxm {
    /// Parse one OXM TLV (header + payload).
    pub fn parse(_r: &mut Reader<'_>) -> Result<Oxm> {
        todo!("oxm work item")
    }
    pub fn emit(&self, _out: &mut Vec<u8>) {
        todo!("oxm work item")
    }
    /// Encoded length (4-byte header + payload).
    pub fn wire_len(&self) -> usize {
        todo!("oxm work item")
    }
}

impl Match {
    /// Parse a `struct ofp_match` including its trailing padding to 8 bytes.
    pub fn parse(_r: &mut Reader<'_>) -> Result<Match> {
        todo!("oxm work item")
    }
    /// Emit `struct ofp_match` including padding.
    pub fn emit(&self, _out: &mut Vec<u8>) {
        todo!("oxm work item")
    }
    /// Encoded length including padding.
    pub fn wire_len(&self) -> usize {
        todo!("oxm work item")
    }
}
