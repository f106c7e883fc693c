//! The fields the fixed parser fills: header fields of the protocols
//! [`parse`](crate::parse()) understands, plus the per-packet pipeline
//! fields every switch carries (ingress port, metadata, tunnel id).
//!
//! # What
//! [`Field`] names a field of the fixed parser's key region, independent of
//! any control protocol. A front end maps its own field vocabulary onto it:
//! the OpenFlow front end maps the 40 OXM basic fields one to one (the
//! mapping and its test live in `sluice-pipeline`), a P4 front end maps
//! standard header fields it recognises, POF windows do not use it at all
//! (they are captured by the extract stage into reserved words).
//!
//! # Values
//! A field's value is `len()` bytes in network order, of which the low
//! `bits()` are meaningful: 13 for `VlanVid` (12-bit VID plus the
//! "tag present" bit), 20 for `MplsLabel`, 6 for `IpDscp`, and so on.
//! These are the same widths and lengths OpenFlow 1.3.5 uses for the
//! corresponding OXM fields, so the OpenFlow mapping is the identity on
//! values. The numbering (`Field as u8`) is dense, `0..Field::COUNT`.

macro_rules! fields {
    ($( $var:ident = $n:literal, $len:literal, $bits:literal, $name:literal; )*) => {
        /// A field of the fixed parser's key region.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum Field { $( $var = $n, )* }

        impl Field {
            /// Every field, in numbering order (`ALL[i] as usize == i`).
            pub const ALL: &'static [Field] = &[ $( Field::$var, )* ];

            /// The field numbered `n`, if any.
            pub const fn from_u8(n: u8) -> Option<Field> {
                match n { $( $n => Some(Field::$var), )* _ => None }
            }
            /// Value length in bytes (network order).
            #[allow(clippy::len_without_is_empty)]
            pub const fn len(self) -> usize {
                match self { $( Field::$var => $len, )* }
            }
            /// Meaningful bits of the value: values are below `2^bits`.
            pub const fn bits(self) -> u32 {
                match self { $( Field::$var => $bits, )* }
            }
            /// A short lowercase name for traces and errors (`eth_dst`).
            pub const fn name(self) -> &'static str {
                match self { $( Field::$var => $name, )* }
            }
        }
    };
}

fields! {
    InPort = 0, 4, 32, "in_port";
    InPhyPort = 1, 4, 32, "in_phy_port";
    Metadata = 2, 8, 64, "metadata";
    EthDst = 3, 6, 48, "eth_dst";
    EthSrc = 4, 6, 48, "eth_src";
    EthType = 5, 2, 16, "eth_type";
    VlanVid = 6, 2, 13, "vlan_vid";
    VlanPcp = 7, 1, 3, "vlan_pcp";
    IpDscp = 8, 1, 6, "ip_dscp";
    IpEcn = 9, 1, 2, "ip_ecn";
    IpProto = 10, 1, 8, "ip_proto";
    Ipv4Src = 11, 4, 32, "ipv4_src";
    Ipv4Dst = 12, 4, 32, "ipv4_dst";
    TcpSrc = 13, 2, 16, "tcp_src";
    TcpDst = 14, 2, 16, "tcp_dst";
    UdpSrc = 15, 2, 16, "udp_src";
    UdpDst = 16, 2, 16, "udp_dst";
    SctpSrc = 17, 2, 16, "sctp_src";
    SctpDst = 18, 2, 16, "sctp_dst";
    Icmpv4Type = 19, 1, 8, "icmpv4_type";
    Icmpv4Code = 20, 1, 8, "icmpv4_code";
    ArpOp = 21, 2, 16, "arp_op";
    ArpSpa = 22, 4, 32, "arp_spa";
    ArpTpa = 23, 4, 32, "arp_tpa";
    ArpSha = 24, 6, 48, "arp_sha";
    ArpTha = 25, 6, 48, "arp_tha";
    Ipv6Src = 26, 16, 128, "ipv6_src";
    Ipv6Dst = 27, 16, 128, "ipv6_dst";
    Ipv6Flabel = 28, 4, 20, "ipv6_flabel";
    Icmpv6Type = 29, 1, 8, "icmpv6_type";
    Icmpv6Code = 30, 1, 8, "icmpv6_code";
    Ipv6NdTarget = 31, 16, 128, "nd_target";
    Ipv6NdSll = 32, 6, 48, "nd_sll";
    Ipv6NdTll = 33, 6, 48, "nd_tll";
    MplsLabel = 34, 4, 20, "mpls_label";
    MplsTc = 35, 1, 3, "mpls_tc";
    MplsBos = 36, 1, 1, "mpls_bos";
    PbbIsid = 37, 3, 24, "pbb_isid";
    TunnelId = 38, 8, 64, "tunnel_id";
    Ipv6Exthdr = 39, 2, 9, "ipv6_exthdr";
}

impl Field {
    /// Number of fields.
    pub const COUNT: usize = Field::ALL.len();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_is_dense_and_round_trips() {
        for (i, &f) in Field::ALL.iter().enumerate() {
            assert_eq!(f as usize, i);
            assert_eq!(Field::from_u8(i as u8), Some(f));
            assert!(f.bits() as usize <= f.len() * 8, "{f:?}");
        }
        assert_eq!(Field::from_u8(Field::COUNT as u8), None);
    }
}
