//! Match-field names and value syntax, shared by the parser and the printer.
//!
//! One table ([`NAMES`]) maps every accepted name to its OXM field; the
//! first name listed for a field is the one the printer uses. Values are
//! read and written by the field's [`ValueKind`].

use super::lex::{parse_uint, Tok};
use super::TextResult;
use crate::consts::port_no;
use crate::oxm::{FieldBytes, FieldId};
use std::net::{Ipv4Addr, Ipv6Addr};

/// Accepted names, the printed (canonical) name of each field first.
pub const NAMES: &[(&str, FieldId)] = &[
    ("in_port", FieldId::InPort),
    ("in_phy_port", FieldId::InPhyPort),
    ("metadata", FieldId::Metadata),
    ("dl_dst", FieldId::EthDst),
    ("eth_dst", FieldId::EthDst),
    ("dl_src", FieldId::EthSrc),
    ("eth_src", FieldId::EthSrc),
    ("dl_type", FieldId::EthType),
    ("eth_type", FieldId::EthType),
    ("vlan_vid", FieldId::VlanVid),
    ("dl_vlan_pcp", FieldId::VlanPcp),
    ("vlan_pcp", FieldId::VlanPcp),
    ("ip_dscp", FieldId::IpDscp),
    ("nw_ecn", FieldId::IpEcn),
    ("ip_ecn", FieldId::IpEcn),
    ("nw_proto", FieldId::IpProto),
    ("ip_proto", FieldId::IpProto),
    ("nw_src", FieldId::Ipv4Src),
    ("ipv4_src", FieldId::Ipv4Src),
    ("ip_src", FieldId::Ipv4Src),
    ("nw_dst", FieldId::Ipv4Dst),
    ("ipv4_dst", FieldId::Ipv4Dst),
    ("ip_dst", FieldId::Ipv4Dst),
    ("tcp_src", FieldId::TcpSrc),
    ("tcp_dst", FieldId::TcpDst),
    ("udp_src", FieldId::UdpSrc),
    ("udp_dst", FieldId::UdpDst),
    ("sctp_src", FieldId::SctpSrc),
    ("sctp_dst", FieldId::SctpDst),
    ("icmp_type", FieldId::Icmpv4Type),
    ("icmpv4_type", FieldId::Icmpv4Type),
    ("icmp_code", FieldId::Icmpv4Code),
    ("icmpv4_code", FieldId::Icmpv4Code),
    ("arp_op", FieldId::ArpOp),
    ("arp_spa", FieldId::ArpSpa),
    ("arp_tpa", FieldId::ArpTpa),
    ("arp_sha", FieldId::ArpSha),
    ("arp_tha", FieldId::ArpTha),
    ("ipv6_src", FieldId::Ipv6Src),
    ("ipv6_dst", FieldId::Ipv6Dst),
    ("ipv6_label", FieldId::Ipv6Flabel),
    ("ipv6_flabel", FieldId::Ipv6Flabel),
    ("icmpv6_type", FieldId::Icmpv6Type),
    ("icmpv6_code", FieldId::Icmpv6Code),
    ("nd_target", FieldId::Ipv6NdTarget),
    ("ipv6_nd_target", FieldId::Ipv6NdTarget),
    ("nd_sll", FieldId::Ipv6NdSll),
    ("ipv6_nd_sll", FieldId::Ipv6NdSll),
    ("nd_tll", FieldId::Ipv6NdTll),
    ("ipv6_nd_tll", FieldId::Ipv6NdTll),
    ("mpls_label", FieldId::MplsLabel),
    ("mpls_tc", FieldId::MplsTc),
    ("mpls_bos", FieldId::MplsBos),
    ("pbb_isid", FieldId::PbbIsid),
    ("tun_id", FieldId::TunnelId),
    ("tunnel_id", FieldId::TunnelId),
    ("ipv6_exthdr", FieldId::Ipv6Exthdr),
];

/// The field a name denotes (exact, case-sensitive like ovs-ofctl).
pub fn field_by_name(name: &str) -> Option<FieldId> {
    NAMES.iter().find(|(n, _)| *n == name).map(|&(_, f)| f)
}

/// The name the printer uses for `f`.
pub fn canonical_name(f: FieldId) -> &'static str {
    NAMES.iter().find(|&&(_, g)| g == f).map(|&(n, _)| n).unwrap_or(f.ovs_name())
}

/// How a field's value is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    Port,
    Mac,
    Ipv4,
    Ipv6,
    Uint,
}

pub fn value_kind(f: FieldId) -> ValueKind {
    use FieldId::*;
    match f {
        InPort | InPhyPort => ValueKind::Port,
        EthDst | EthSrc | ArpSha | ArpTha | Ipv6NdSll | Ipv6NdTll => ValueKind::Mac,
        Ipv4Src | Ipv4Dst | ArpSpa | ArpTpa => ValueKind::Ipv4,
        Ipv6Src | Ipv6Dst | Ipv6NdTarget => ValueKind::Ipv6,
        _ => ValueKind::Uint,
    }
}

/// Reserved port names, as ovs-ofctl writes them.
const PORT_NAMES: &[(&str, u32)] = &[
    ("IN_PORT", port_no::IN_PORT),
    ("TABLE", port_no::TABLE),
    ("NORMAL", port_no::NORMAL),
    ("FLOOD", port_no::FLOOD),
    ("ALL", port_no::ALL),
    ("CONTROLLER", port_no::CONTROLLER),
    ("LOCAL", port_no::LOCAL),
    ("ANY", port_no::ANY),
];

/// A port number or reserved port name (any case).
pub(crate) fn parse_port(t: Tok<'_>) -> TextResult<u32> {
    if let Some(&(_, n)) = PORT_NAMES.iter().find(|(name, _)| name.eq_ignore_ascii_case(t.text)) {
        return Ok(n);
    }
    if t.text.eq_ignore_ascii_case("NONE") {
        return Ok(port_no::ANY);
    }
    parse_uint(t, u32::MAX as u128, "port").map(|v| v as u32)
}

/// A port number as ovs-ofctl prints it: reserved ports by name.
pub fn format_port(p: u32) -> String {
    match PORT_NAMES.iter().find(|&&(_, n)| n == p) {
        Some((name, _)) => (*name).to_string(),
        None => p.to_string(),
    }
}

fn bytes_of(v: u128, len: usize) -> FieldBytes {
    FieldBytes::from_u128(v, len)
}

fn parse_mac(t: Tok<'_>) -> TextResult<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut n = 0;
    for part in t.text.split(':') {
        if n == 6 || part.is_empty() || part.len() > 2 {
            return Err(t.err(format!("`{}` is not a MAC address", t.text)));
        }
        out[n] = u8::from_str_radix(part, 16)
            .map_err(|_| t.err(format!("`{}` is not a MAC address", t.text)))?;
        n += 1;
    }
    if n != 6 {
        return Err(t.err(format!("`{}` is not a MAC address", t.text)));
    }
    Ok(out)
}

fn prefix_mask(bits: u32, prefix: u128) -> u128 {
    if prefix == 0 {
        0
    } else {
        let all = if bits == 128 { u128::MAX } else { (1u128 << bits) - 1 };
        all & !((1u128 << (bits as u128 - prefix)) - 1)
    }
}

/// Parse `VALUE[/MASK]` for `f`. The mask may be a prefix length for IP
/// addresses. A mask on a field that cannot have one is an error.
pub(crate) fn parse_value(f: FieldId, t: Tok<'_>) -> TextResult<(FieldBytes, Option<FieldBytes>)> {
    let len = f.len();
    let (vt, mt) = t.split_kv(&['/']);
    if mt.is_some() && !f.maskable() {
        return Err(t.err(format!("field {} cannot be masked", canonical_name(f))));
    }
    let kind = value_kind(f);
    let bits = (len * 8) as u32;
    let value = match kind {
        ValueKind::Port => bytes_of(parse_port(vt)? as u128, len),
        ValueKind::Mac => FieldBytes::new(&parse_mac(vt)?).expect("6 bytes"),
        ValueKind::Ipv4 => {
            let a: Ipv4Addr = vt
                .text
                .parse()
                .map_err(|_| vt.err(format!("`{}` is not an IPv4 address", vt.text)))?;
            bytes_of(u32::from(a) as u128, 4)
        }
        ValueKind::Ipv6 => {
            let a: Ipv6Addr = vt
                .text
                .parse()
                .map_err(|_| vt.err(format!("`{}` is not an IPv6 address", vt.text)))?;
            bytes_of(u128::from(a), 16)
        }
        ValueKind::Uint => {
            let max = if bits >= 128 { u128::MAX } else { (1u128 << bits) - 1 };
            bytes_of(parse_uint(vt, max, canonical_name(f))?, len)
        }
    };
    let mask = match mt {
        None => None,
        Some(mt) => Some(match kind {
            ValueKind::Mac => FieldBytes::new(&parse_mac(mt)?).expect("6 bytes"),
            ValueKind::Ipv4 | ValueKind::Ipv6 if !mt.text.contains(['.', ':']) => {
                let p = parse_uint(mt, bits as u128, "prefix length")?;
                bytes_of(prefix_mask(bits, p), len)
            }
            ValueKind::Ipv4 => {
                let a: Ipv4Addr = mt
                    .text
                    .parse()
                    .map_err(|_| mt.err(format!("`{}` is not an IPv4 mask", mt.text)))?;
                bytes_of(u32::from(a) as u128, 4)
            }
            ValueKind::Ipv6 => {
                let a: Ipv6Addr = mt
                    .text
                    .parse()
                    .map_err(|_| mt.err(format!("`{}` is not an IPv6 mask", mt.text)))?;
                bytes_of(u128::from(a), 16)
            }
            ValueKind::Uint | ValueKind::Port => {
                let max = if bits >= 128 { u128::MAX } else { (1u128 << bits) - 1 };
                bytes_of(parse_uint(mt, max, "mask")?, len)
            }
        }),
    };
    if let Some(m) = &mask {
        if value.to_u128() & !m.to_u128() != 0 {
            return Err(
                t.err(format!("{}: value has bits set outside the mask", canonical_name(f)))
            );
        }
    }
    Ok((value, mask))
}

fn format_mac(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(":")
}

/// Format a value (and mask) of `f` the way ovs-ofctl does: addresses in
/// their usual notation with `/prefix` where the mask is a prefix, ports by
/// name, other integers in decimal (hex with a hex mask).
pub fn format_value(f: FieldId, v: &FieldBytes, m: Option<&FieldBytes>) -> String {
    let bits = (v.as_slice().len() * 8) as u32;
    let full = |x: u128| bits > 0 && x == prefix_mask(bits, bits as u128);
    let m = m.filter(|m| !full(m.to_u128()));
    let prefix_len =
        |x: u128| -> Option<u32> { (0..=bits).find(|&p| prefix_mask(bits, p as u128) == x) };
    match value_kind(f) {
        ValueKind::Port => format_port(v.to_u128() as u32),
        ValueKind::Mac => match m {
            None => format_mac(v.as_slice()),
            Some(m) => format!("{}/{}", format_mac(v.as_slice()), format_mac(m.as_slice())),
        },
        ValueKind::Ipv4 => {
            let a = Ipv4Addr::from(v.to_u128() as u32);
            match m {
                None => a.to_string(),
                Some(m) => match prefix_len(m.to_u128()) {
                    Some(p) => format!("{a}/{p}"),
                    None => format!("{a}/{}", Ipv4Addr::from(m.to_u128() as u32)),
                },
            }
        }
        ValueKind::Ipv6 => {
            let a = Ipv6Addr::from(v.to_u128());
            match m {
                None => a.to_string(),
                Some(m) => match prefix_len(m.to_u128()) {
                    Some(p) => format!("{a}/{p}"),
                    None => format!("{a}/{}", Ipv6Addr::from(m.to_u128())),
                },
            }
        }
        ValueKind::Uint => match m {
            None if matches!(f, FieldId::Metadata | FieldId::TunnelId | FieldId::EthType) => {
                format!("0x{:x}", v.to_u128())
            }
            None => v.to_u128().to_string(),
            Some(m) => format!("0x{:x}/0x{:x}", v.to_u128(), m.to_u128()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(s: &str) -> Tok<'_> {
        Tok { text: s, start: 0 }
    }

    #[test]
    fn every_field_has_a_name() {
        for &f in FieldId::ALL {
            assert_eq!(field_by_name(canonical_name(f)), Some(f), "{f:?}");
        }
    }

    #[test]
    fn values_and_masks() {
        let (v, m) = parse_value(FieldId::Ipv4Src, tok("10.0.0.0/8")).unwrap();
        assert_eq!(v.as_slice(), &[10, 0, 0, 0]);
        assert_eq!(m.unwrap().as_slice(), &[255, 0, 0, 0]);
        assert_eq!(format_value(FieldId::Ipv4Src, &v, m.as_ref()), "10.0.0.0/8");
        // Bits outside the mask.
        assert!(parse_value(FieldId::Ipv4Src, tok("10.0.0.1/255.0.255.0")).is_err());
        let (v, m) =
            parse_value(FieldId::EthDst, tok("01:00:00:00:00:00/01:00:00:00:00:00")).unwrap();
        assert_eq!(
            format_value(FieldId::EthDst, &v, m.as_ref()),
            "01:00:00:00:00:00/01:00:00:00:00:00"
        );
        let (v, _) = parse_value(FieldId::InPort, tok("LOCAL")).unwrap();
        assert_eq!(v.to_u128() as u32, port_no::LOCAL);
        let (v, m) = parse_value(FieldId::Ipv6Src, tok("2001:db8::/32")).unwrap();
        assert_eq!(format_value(FieldId::Ipv6Src, &v, m.as_ref()), "2001:db8::/32");
        let (v, m) = parse_value(FieldId::Metadata, tok("0x10/0xf0")).unwrap();
        assert_eq!(format_value(FieldId::Metadata, &v, m.as_ref()), "0x10/0xf0");
        // A full mask prints as an exact match.
        let (v, m) = parse_value(FieldId::Ipv4Dst, tok("1.2.3.4/32")).unwrap();
        assert_eq!(format_value(FieldId::Ipv4Dst, &v, m.as_ref()), "1.2.3.4");
    }

    #[test]
    fn bad_values_name_the_token() {
        assert!(parse_value(FieldId::TcpDst, tok("65536")).unwrap_err().msg.contains("65536"));
        assert!(parse_value(FieldId::TcpDst, tok("80/0xff"))
            .unwrap_err()
            .msg
            .contains("cannot be masked"));
        assert!(parse_value(FieldId::EthSrc, tok("00:11:22")).is_err());
        assert!(parse_value(FieldId::Ipv4Dst, tok("300.1.1.1")).is_err());
        assert!(parse_value(FieldId::Ipv4Dst, tok("1.1.1.1/33")).is_err());
    }
}
