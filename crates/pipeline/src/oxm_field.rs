//! The OpenFlow front end's field mapping: each of the 40 OXM basic fields
//! of OpenFlow 1.3.5 names one field of the fixed parser
//! ([`sluice_packet::Field`]).
//!
//! `sluice-packet` knows no control protocol, so the mapping lives here, in
//! the OpenFlow front end. Values and widths agree field by field (a test
//! checks lengths and meaningful bits), so a field's OXM bytes are its key
//! bytes and no value conversion is needed.

use sluice_ofp::oxm::FieldId;
use sluice_packet::Field;

macro_rules! same_names {
    ($f:expr; $($v:ident),* $(,)?) => {
        match $f { $( FieldId::$v => Field::$v, )* }
    };
}

/// The fixed-parser field that OXM basic field `f` names.
#[inline]
pub const fn field(f: FieldId) -> Field {
    same_names!(f;
        InPort, InPhyPort, Metadata, EthDst, EthSrc, EthType, VlanVid, VlanPcp,
        IpDscp, IpEcn, IpProto, Ipv4Src, Ipv4Dst, TcpSrc, TcpDst, UdpSrc, UdpDst,
        SctpSrc, SctpDst, Icmpv4Type, Icmpv4Code, ArpOp, ArpSpa, ArpTpa, ArpSha,
        ArpTha, Ipv6Src, Ipv6Dst, Ipv6Flabel, Icmpv6Type, Icmpv6Code, Ipv6NdTarget,
        Ipv6NdSll, Ipv6NdTll, MplsLabel, MplsTc, MplsBos, PbbIsid, TunnelId, Ipv6Exthdr,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_oxm_field_maps_to_a_field_of_the_same_size() {
        let mut seen = std::collections::BTreeSet::new();
        for &f in FieldId::ALL {
            let h = field(f);
            assert_eq!(h.len(), f.len(), "{f:?}");
            assert_eq!(h.bits(), f.bits(), "{f:?}");
            assert!(seen.insert(h), "{f:?} maps onto {h:?} twice");
        }
        assert_eq!(seen.len(), Field::COUNT);
    }
}
