//! The parser against literal packets (built by scapy, see
//! `tests/gen_vectors.py`): every OXM field, header offsets, presence, and
//! every truncation of every packet.

#[path = "data/vectors.rs"]
mod vectors;

use sluice_packet::field::Field as F;
use sluice_packet::key::{exthdr, presence};
use sluice_packet::{parse, FlowKey, Frag, Meta, ParseInfo, FIXED_LAYOUT, L2_5, L3, L4};

fn pkt(name: &str) -> Vec<u8> {
    let (_, h) = vectors::PARSE.iter().find(|(n, _)| *n == name).unwrap();
    hex::decode(h).unwrap()
}

fn run(name: &str) -> (FlowKey, ParseInfo) {
    let p = pkt(name);
    let mut k = FlowKey::ZERO;
    let meta = Meta { in_port: 7, in_phy_port: 8, metadata: 0xfeed, tunnel_id: 0x1234 };
    let info = parse(&p, &meta, &mut k);
    (k, info)
}

fn get(k: &FlowKey, f: F) -> u128 {
    FIXED_LAYOUT.get(k, f).to_u128()
}

/// Every listed field has its value and is present; every field not listed
/// (except the always-present pipeline fields and vlan_vid) is absent and 0.
fn expect(k: &FlowKey, fields: &[(F, u128)]) {
    for &(f, v) in fields {
        assert!(FIXED_LAYOUT.present(k, f), "{f:?} should be present");
        assert_eq!(get(k, f), v, "{f:?}");
    }
    for &f in F::ALL {
        if fields.iter().any(|&(g, _)| g == f) {
            continue;
        }
        match f {
            F::InPort | F::InPhyPort | F::Metadata | F::TunnelId => {}
            F::VlanVid => assert_eq!(get(k, f), 0, "vlan_vid"),
            _ => {
                assert!(!FIXED_LAYOUT.present(k, f), "{f:?} should be absent");
                assert_eq!(get(k, f), 0, "{f:?} absent but non-zero");
            }
        }
    }
    assert_eq!(get(k, F::InPort), 7);
    assert_eq!(get(k, F::InPhyPort), 8);
    assert_eq!(get(k, F::Metadata), 0xfeed);
    assert_eq!(get(k, F::TunnelId), 0x1234);
}

const D: u128 = 0x2222_2222_2222;
const S: u128 = 0x1211_1111_1111;
const IP_A: u128 = 0xc0a8_0a0a; // 192.168.10.10
const IP_B: u128 = 0xc0a8_1414; // 192.168.20.20
const V6_A: u128 = 0x0010 << 112 | 0x10; // 10::10
const V6_B: u128 = 0x0020 << 112 | 0x20; // 20::20

fn l2() -> Vec<(F, u128)> {
    vec![(F::EthDst, D), (F::EthSrc, S)]
}

#[test]
fn ipv4_tcp() {
    let (k, i) = run("ipv4_tcp");
    let mut f = l2();
    f.extend([
        (F::EthType, 0x0800),
        (F::IpDscp, 8),
        (F::IpEcn, 0),
        (F::IpProto, 6),
        (F::Ipv4Src, IP_A),
        (F::Ipv4Dst, IP_B),
        (F::TcpSrc, 11111),
        (F::TcpDst, 2222),
    ]);
    expect(&k, &f);
    assert!(i.eth);
    assert_eq!(
        (i.vlan, i.ethertype_offset, i.l3, i.l4, i.payload),
        (None, Some(12), Some(14), Some(34), Some(54))
    );
    assert_eq!((i.l3_kind, i.l4_kind, i.frag, i.ip_proto), (L3::Ipv4, L4::Tcp, Frag::No, 6));
    assert_eq!(usize::from(i.l3_end), pkt("ipv4_tcp").len());
}

#[test]
fn qinq() {
    let (k, i) = run("qinq_ipv4_udp");
    let mut f = l2();
    f.extend([
        (F::EthType, 0x0800),
        (F::VlanVid, 0x1000 | 10),
        (F::VlanPcp, 5),
        (F::IpDscp, 8),
        (F::IpEcn, 0),
        (F::IpProto, 17),
        (F::Ipv4Src, IP_A),
        (F::Ipv4Dst, IP_B),
        (F::UdpSrc, 11111),
        (F::UdpDst, 2222),
    ]);
    expect(&k, &f);
    assert_eq!((i.vlan, i.vlan_count, i.ethertype_offset, i.l3), (Some(12), 2, Some(20), Some(22)));
}

#[test]
fn mpls() {
    let (k, i) = run("mpls_ipv4");
    let mut f = l2();
    f.extend([(F::EthType, 0x8847), (F::MplsLabel, 100), (F::MplsTc, 3), (F::MplsBos, 0)]);
    expect(&k, &f);
    assert_eq!((i.l2_5, i.l2_5_kind, i.l3), (Some(14), L2_5::Mpls, None));
}

#[test]
fn pbb() {
    let (k, i) = run("pbb");
    let mut f = l2();
    f.extend([
        (F::EthType, 0x88e7),
        (F::VlanVid, 0x1000 | 10),
        (F::VlanPcp, 0),
        (F::PbbIsid, 0x123456),
    ]);
    expect(&k, &f);
    assert_eq!((i.l2_5, i.l2_5_kind), (Some(18), L2_5::Pbb));
}

#[test]
fn arp() {
    let (k, i) = run("arp");
    let mut f = l2();
    f.extend([
        (F::EthType, 0x0806),
        (F::ArpOp, 2),
        (F::ArpSpa, IP_A),
        (F::ArpTpa, IP_B),
        (F::ArpSha, S),
        (F::ArpTha, D),
    ]);
    expect(&k, &f);
    assert_eq!((i.l3, i.l3_kind, i.l4), (Some(14), L3::Arp, None));
}

fn v6_common(proto: u128, exth: u128) -> Vec<(F, u128)> {
    let mut f = l2();
    f.extend([
        (F::EthType, 0x86dd),
        (F::IpDscp, 8),
        (F::IpEcn, 0),
        (F::IpProto, proto),
        (F::Ipv6Src, V6_A),
        (F::Ipv6Dst, V6_B),
        (F::Ipv6Flabel, 100),
        (F::Ipv6Exthdr, exth),
    ]);
    f
}

#[test]
fn ipv6_tcp() {
    let (k, i) = run("ipv6_tcp");
    let mut f = v6_common(6, 0);
    f.extend([(F::TcpSrc, 11111), (F::TcpDst, 2222)]);
    expect(&k, &f);
    assert_eq!((i.l3, i.l4, i.ip_proto_offset), (Some(14), Some(54), Some(20)));
}

#[test]
fn ipv6_extension_walk() {
    let (k, i) = run("ipv6_ext_udp");
    let e = exthdr::HOP | exthdr::DEST | exthdr::ROUTER | exthdr::FRAG | exthdr::AUTH;
    let mut f = v6_common(17, u128::from(e));
    f.extend([(F::UdpSrc, 11111), (F::UdpDst, 2222)]);
    expect(&k, &f);
    // 40 + hop 8 + dest 8 + routing 8 + frag 8 + AH 24
    assert_eq!(i.l4, Some(14 + 40 + 8 + 8 + 8 + 8 + 24));
    assert_eq!(i.frag, Frag::No); // offset 0, M = 0: an atomic fragment
    assert_eq!(i.ip_proto_offset, Some(14 + 40 + 32)); // AH's next header
}

#[test]
fn ipv6_unexpected_sequence_and_repeat() {
    // frag, hop-by-hop (not first), frag again
    let (k, i) = run("ipv6_unseq");
    let e = exthdr::FRAG | exthdr::HOP | exthdr::UNSEQ | exthdr::UNREP;
    let mut f = v6_common(17, u128::from(e));
    f.extend([(F::UdpSrc, 11111), (F::UdpDst, 2222)]);
    expect(&k, &f);
    assert_eq!(i.frag, Frag::First);
    // dest, routing, dest, dest: the third destination-options header is
    // an unexpected repeat
    let (k, _) = run("ipv6_dest_dest_dest");
    let e = exthdr::DEST | exthdr::ROUTER | exthdr::UNREP;
    let mut f = v6_common(17, u128::from(e));
    f.extend([(F::UdpSrc, 11111), (F::UdpDst, 2222)]);
    expect(&k, &f);
}

#[test]
fn ipv6_esp_nonext_later_fragment() {
    let (k, i) = run("ipv6_esp");
    expect(&k, &v6_common(50, u128::from(exthdr::DEST | exthdr::ESP)));
    assert_eq!(i.l4, None);
    let (k, _) = run("ipv6_nonext");
    expect(&k, &v6_common(59, u128::from(exthdr::NONEXT)));
    let (k, i) = run("ipv6_frag_later");
    expect(&k, &v6_common(6, u128::from(exthdr::FRAG)));
    assert_eq!((i.frag, i.l4), (Frag::Later, None));
}

#[test]
fn icmpv4() {
    let (k, _) = run("icmpv4");
    let mut f = l2();
    f.extend([
        (F::EthType, 0x0800),
        (F::IpDscp, 8),
        (F::IpEcn, 0),
        (F::IpProto, 1),
        (F::Ipv4Src, IP_A),
        (F::Ipv4Dst, IP_B),
        (F::Icmpv4Type, 3),
        (F::Icmpv4Code, 1),
    ]);
    expect(&k, &f);
}

#[test]
fn icmpv6_and_nd() {
    let (k, _) = run("icmpv6_echo");
    let mut f = v6_common(58, 0);
    f.extend([(F::Icmpv6Type, 128), (F::Icmpv6Code, 0)]);
    expect(&k, &f);

    let fe80 = |x: u128| 0xfe80u128 << 112 | x;
    let (k, i) = run("nd_ns");
    let mut f = l2();
    f.extend([
        (F::EthType, 0x86dd),
        (F::IpDscp, 8),
        (F::IpEcn, 0),
        (F::IpProto, 58),
        (F::Ipv6Src, fe80(1)),
        (F::Ipv6Dst, 0xff02u128 << 112 | 0x1_ff00_0002),
        (F::Ipv6Flabel, 100),
        (F::Ipv6Exthdr, 0),
        (F::Icmpv6Type, 135),
        (F::Icmpv6Code, 0),
        (F::Ipv6NdTarget, fe80(2)),
        (F::Ipv6NdSll, S),
    ]);
    expect(&k, &f);
    assert_eq!(i.nd_sll, Some(14 + 40 + 24 + 2));

    let (k, i) = run("nd_na");
    let mut f = l2();
    f.extend([
        (F::EthType, 0x86dd),
        (F::IpDscp, 8),
        (F::IpEcn, 0),
        (F::IpProto, 58),
        (F::Ipv6Src, fe80(2)),
        (F::Ipv6Dst, fe80(1)),
        (F::Ipv6Flabel, 100),
        (F::Ipv6Exthdr, 0),
        (F::Icmpv6Type, 136),
        (F::Icmpv6Code, 0),
        (F::Ipv6NdTarget, fe80(2)),
        (F::Ipv6NdTll, D),
    ]);
    expect(&k, &f);
    assert_eq!((i.nd_tll, i.nd_sll), (Some(14 + 40 + 24 + 2), None));
}

#[test]
fn sctp() {
    let (k, i) = run("sctp4");
    let mut f = l2();
    f.extend([
        (F::EthType, 0x0800),
        (F::IpDscp, 8),
        (F::IpEcn, 0),
        (F::IpProto, 132),
        (F::Ipv4Src, IP_A),
        (F::Ipv4Dst, IP_B),
        (F::SctpSrc, 11111),
        (F::SctpDst, 2222),
    ]);
    expect(&k, &f);
    assert_eq!(i.l4_kind, L4::Sctp);
}

#[test]
fn ipv4_fragments() {
    let (k, i) = run("ipv4_frag_first");
    assert_eq!(i.frag, Frag::First);
    assert_eq!((get(&k, F::TcpSrc), get(&k, F::TcpDst)), (11111, 2222));
    let (k, i) = run("ipv4_frag_later");
    assert_eq!((i.frag, i.l4), (Frag::Later, None));
    assert_eq!(get(&k, F::IpProto), 6);
    assert!(!FIXED_LAYOUT.present(&k, F::TcpSrc));
    assert!(!k.has(presence::TCP));
}

#[test]
fn ipv4_options() {
    let (k, i) = run("ipv4_options_udp");
    assert_eq!(i.l4, Some(14 + 24));
    assert_eq!((get(&k, F::UdpSrc), get(&k, F::UdpDst)), (53, 5353));
    assert_eq!(get(&k, F::Ipv4Src), 0x0102_0304);
}

#[test]
fn llc_frame() {
    let (k, i) = run("llc");
    let mut f = l2();
    f.push((F::EthType, 0x05ff));
    expect(&k, &f);
    assert_eq!(i.ethertype, 0x0026);
}

#[test]
fn ethernet_padding_is_not_payload() {
    // icmpv4 is padded? use an IPv4/UDP packet with total_len shorter
    // than the frame: the L4 end is the datagram end.
    let p = pkt("ipv4_options_udp");
    let mut k = FlowKey::ZERO;
    let i = parse(&p, &Meta::default(), &mut k);
    assert_eq!(usize::from(i.l3_end), 14 + 24 + 8);
    assert!(p.len() > usize::from(i.l3_end));
}

/// Every prefix of every packet: no panic, and a field is present only if
/// the bytes it comes from are inside the prefix (so presence can only be
/// gained as the prefix grows, and the full packet has them all).
#[test]
fn every_truncation() {
    for (name, h) in vectors::PARSE {
        let p = hex::decode(h).unwrap();
        let mut full = FlowKey::ZERO;
        parse(&p, &Meta::default(), &mut full);
        let mut prev_presence = 0u64;
        for n in 0..=p.len() {
            let mut k = FlowKey::ZERO;
            let i = parse(&p[..n], &Meta::default(), &mut k);
            assert_eq!(usize::from(i.len), n);
            let pres = k.words[sluice_packet::key::PRESENCE_WORD] & 0xffff;
            assert_eq!(pres & !prev_presence & !(full.words[7] & 0xffff), 0, "{name}[..{n}]");
            prev_presence = pres;
            for &f in F::ALL {
                if k.has(FIXED_LAYOUT.slot(f).presence)
                    && f != F::Ipv6Exthdr
                    && f != F::IpProto
                    && f != F::EthType
                {
                    // a field read from a prefix equals the full packet's
                    assert_eq!(
                        FIXED_LAYOUT.get(&k, f),
                        FIXED_LAYOUT.get(&full, f),
                        "{name}[..{n}] {f:?}"
                    );
                }
            }
        }
        assert_eq!(prev_presence, full.words[7] & 0xffff);
    }
}
