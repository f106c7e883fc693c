//! Property tests: the parser never panics and is read-only, agrees with
//! an independent parser (etherparse) on the fields both know, `set_field`
//! followed by a re-parse reads back what was set with every checksum
//! still valid (checked by the straightforward implementation below, not
//! the crate's), and the word-wise masked compare equals OXM's byte-wise
//! masked compare.

#[path = "data/vectors.rs"]
mod vectors;

use etherparse::{EtherType, PacketBuilder, SingleVlanHeader, VlanHeader, VlanId, VlanPcp};
use proptest::prelude::*;
use sluice_packet::field::Field;
use sluice_packet::rewrite::{self, settable};
use sluice_packet::{
    fuzz_parse, parse, FlowKey, FlowMask, Frag, Meta, PacketBuf, FIXED_LAYOUT, L3, L4,
};

// ---------------------------------------------------------------- helpers

fn seeds() -> Vec<Vec<u8>> {
    vectors::PARSE.iter().map(|(_, h)| hex::decode(h).unwrap()).collect()
}

#[allow(clippy::too_many_arguments)]
fn build(
    src: [u8; 6],
    dst: [u8; 6],
    vlan: Option<(u16, u8)>,
    v6: bool,
    a: [u8; 16],
    b: [u8; 16],
    l4: u8,
    sp: u16,
    dp: u16,
    ttl: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut out = Vec::new();
    macro_rules! l4 {
        ($ip:expr) => {
            match (l4, v6) {
                (0, _) => $ip.tcp(sp, dp, 1, 1000).write(&mut out, payload).unwrap(),
                (1, _) => $ip.udp(sp, dp).write(&mut out, payload).unwrap(),
                (_, true) => $ip.icmpv6_echo_request(sp, dp).write(&mut out, payload).unwrap(),
                (_, false) => $ip.icmpv4_echo_request(sp, dp).write(&mut out, payload).unwrap(),
            }
        };
    }
    macro_rules! l3 {
        ($l2:expr) => {
            if v6 {
                l4!($l2.ipv6(a, b, ttl))
            } else {
                let a4 = [a[0], a[1], a[2], a[3]];
                let b4 = [b[0], b[1], b[2], b[3]];
                l4!($l2.ipv4(a4, b4, ttl))
            }
        };
    }
    let eth = PacketBuilder::ethernet2(src, dst);
    match vlan {
        None => l3!(eth),
        Some((vid, pcp)) => {
            let h = VlanHeader::Single(SingleVlanHeader {
                pcp: VlanPcp::try_new(pcp).unwrap(),
                drop_eligible_indicator: false,
                vlan_id: VlanId::try_new(vid).unwrap(),
                ether_type: EtherType(0),
            });
            l3!(eth.vlan(h))
        }
    }
    if out.len() < 60 {
        out.resize(60, 0);
    }
    out
}

fn built() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<[u8; 6]>(),
        any::<[u8; 6]>(),
        prop::option::of((0u16..4096, 0u8..8)),
        any::<bool>(),
        any::<[u8; 16]>(),
        any::<[u8; 16]>(),
        0u8..3,
        any::<u16>(),
        any::<u16>(),
        any::<u8>(),
        prop::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(|(s, d, vl, v6, a, b, l4, sp, dp, ttl, pl)| {
            build(s, d, vl, v6, a, b, l4, sp, dp, ttl, &pl)
        })
}

/// Seeds from the literal vectors and packets built by etherparse.
fn packets() -> impl Strategy<Value = Vec<u8>> {
    let s = seeds();
    prop_oneof![prop::sample::select(s), built()]
}

/// Seeds with random byte changes and a random truncation.
fn mutated() -> impl Strategy<Value = Vec<u8>> {
    (
        packets(),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(mut p, muts, cut)| {
            for (i, v) in muts {
                let i = i.index(p.len());
                p[i] = v;
            }
            let n = cut.index(p.len() + 1);
            if n > 14 {
                p.truncate(n.max(p.len() * 3 / 4));
            }
            p
        })
}

// A deliberately plain one's-complement sum, independent of the crate.
fn ones(parts: &[&[u8]]) -> u16 {
    let mut s: u64 = 0;
    for p in parts {
        for (i, b) in p.iter().enumerate() {
            s += if i % 2 == 0 { u64::from(*b) << 8 } else { u64::from(*b) };
        }
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

fn crc32c_bitwise(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0x82f6_3b78 } else { c >> 1 };
        }
    }
    !c
}

/// Check every checksum the packet carries.
fn checksums_ok(p: &[u8]) -> Result<(), String> {
    let mut k = FlowKey::ZERO;
    let i = parse(p, &Meta::default(), &mut k);
    let Some(l3) = i.l3.map(usize::from) else { return Ok(()) };
    let end = usize::from(i.l3_end);
    let pseudo: Vec<u8> = match i.l3_kind {
        L3::Ipv4 => {
            let hl = usize::from(p[l3] & 0xf) * 4;
            if ones(&[&p[l3..l3 + hl]]) != 0xffff {
                return Err("ipv4 header checksum".into());
            }
            let l4len = end.saturating_sub(i.l4.map(usize::from).unwrap_or(end)) as u16;
            let mut v = p[l3 + 12..l3 + 20].to_vec();
            v.extend([0, i.ip_proto]);
            v.extend(l4len.to_be_bytes());
            v
        }
        L3::Ipv6 => {
            let l4len = end.saturating_sub(i.l4.map(usize::from).unwrap_or(end)) as u32;
            let mut v = p[l3 + 8..l3 + 40].to_vec();
            v.extend(l4len.to_be_bytes());
            v.extend([0, 0, 0, i.ip_proto]);
            v
        }
        _ => return Ok(()),
    };
    let Some(l4) = i.l4.map(usize::from) else { return Ok(()) };
    if i.frag != Frag::No {
        return Ok(());
    }
    let seg = &p[l4..end];
    let ok = match i.l4_kind {
        L4::Tcp | L4::Icmpv6 => ones(&[&pseudo, seg]) == 0xffff,
        L4::Udp => {
            (i.l3_kind == L3::Ipv4 && seg[6..8] == [0, 0]) || ones(&[&pseudo, seg]) == 0xffff
        }
        L4::Icmpv4 => ones(&[seg]) == 0xffff,
        L4::Sctp => {
            let mut s = seg.to_vec();
            s[8..12].fill(0);
            crc32c_bitwise(&s).to_le_bytes() == seg[8..12]
        }
        L4::None => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{:?} checksum", i.l4_kind))
    }
}

fn random_value(f: Field, bits: u128) -> Vec<u8> {
    let w = u32::from(FIXED_LAYOUT.slot(f).width);
    let mut v = if w >= 128 { bits } else { bits & ((1u128 << w) - 1) };
    match f {
        Field::VlanVid => v |= 0x1000,
        Field::EthType => {
            v |= 0x0600;
            if v == 0x8100 || v == 0x88a8 {
                v = 0x0800;
            }
        }
        _ => {}
    }
    v.to_be_bytes()[16 - f.len()..].to_vec()
}

// ------------------------------------------------------------- properties

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..200)) {
        fuzz_parse(&data);
    }

    #[test]
    fn mutated_packets_never_panic(p in mutated()) {
        fuzz_parse(&p);
    }

    /// Parsing does not change the packet, and setting any present field
    /// to the value just parsed leaves every byte as it was (fuzz_parse
    /// asserts the latter), so parse → re-emit is the identity.
    #[test]
    fn parse_is_read_only(p in packets()) {
        let copy = p.clone();
        let mut k = FlowKey::ZERO;
        let i = parse(&p, &Meta::default(), &mut k);
        prop_assert_eq!(&p, &copy);
        let mut buf = PacketBuf::from_slice(&p).unwrap();
        for &f in Field::ALL {
            if settable(f) && FIXED_LAYOUT.present(&k, f) && !(f == Field::VlanVid && i.vlan.is_none())
                && !(f == Field::EthType && i.ethertype < 0x600)
            {
                rewrite::apply_set_field(&mut buf, &i, f, FIXED_LAYOUT.get(&k, f).as_slice()).unwrap();
            }
        }
        prop_assert_eq!(buf.data(), &p[..]);
        fuzz_parse(&p);
    }

    /// Agreement with etherparse on built packets.
    #[test]
    fn agrees_with_etherparse(p in built()) {
        let mut k = FlowKey::ZERO;
        parse(&p, &Meta::default(), &mut k);
        let g = |f| FIXED_LAYOUT.get(&k, f).to_u128();
        let s = etherparse::SlicedPacket::from_ethernet(&p).unwrap();
        if let Some(etherparse::LinkSlice::Ethernet2(e)) = &s.link {
            prop_assert_eq!(g(Field::EthSrc), u128::from_be_bytes({ let mut a = [0u8; 16]; a[10..].copy_from_slice(&e.source()); a }));
            prop_assert_eq!(g(Field::EthDst), u128::from_be_bytes({ let mut a = [0u8; 16]; a[10..].copy_from_slice(&e.destination()); a }));
        }
        match &s.vlan {
            Some(etherparse::VlanSlice::SingleVlan(v)) => {
                prop_assert_eq!(g(Field::VlanVid), 0x1000 | u128::from(v.vlan_identifier().value()));
                prop_assert_eq!(g(Field::VlanPcp), u128::from(v.priority_code_point().value()));
            }
            _ => prop_assert_eq!(g(Field::VlanVid), 0),
        }
        match &s.net {
            Some(etherparse::NetSlice::Ipv4(ip)) => {
                let h = ip.header();
                prop_assert_eq!(g(Field::Ipv4Src), u128::from(u32::from_be_bytes(h.source())));
                prop_assert_eq!(g(Field::Ipv4Dst), u128::from(u32::from_be_bytes(h.destination())));
                prop_assert_eq!(g(Field::IpProto), u128::from(h.protocol().0));
                prop_assert_eq!(g(Field::EthType), 0x0800);
            }
            Some(etherparse::NetSlice::Ipv6(ip)) => {
                let h = ip.header();
                prop_assert_eq!(g(Field::Ipv6Src), u128::from_be_bytes(h.source()));
                prop_assert_eq!(g(Field::Ipv6Dst), u128::from_be_bytes(h.destination()));
                prop_assert_eq!(g(Field::IpProto), u128::from(h.next_header().0));
                prop_assert_eq!(g(Field::EthType), 0x86dd);
            }
            _ => prop_assert!(false, "etherparse found no IP"),
        }
        match &s.transport {
            Some(etherparse::TransportSlice::Tcp(t)) => {
                prop_assert_eq!(g(Field::TcpSrc), u128::from(t.source_port()));
                prop_assert_eq!(g(Field::TcpDst), u128::from(t.destination_port()));
            }
            Some(etherparse::TransportSlice::Udp(u)) => {
                prop_assert_eq!(g(Field::UdpSrc), u128::from(u.source_port()));
                prop_assert_eq!(g(Field::UdpDst), u128::from(u.destination_port()));
            }
            Some(etherparse::TransportSlice::Icmpv4(i)) => {
                prop_assert_eq!(g(Field::Icmpv4Type), u128::from(i.type_u8()));
                prop_assert_eq!(g(Field::Icmpv4Code), u128::from(i.code_u8()));
            }
            Some(etherparse::TransportSlice::Icmpv6(i)) => {
                prop_assert_eq!(g(Field::Icmpv6Type), u128::from(i.type_u8()));
                prop_assert_eq!(g(Field::Icmpv6Code), u128::from(i.code_u8()));
            }
            None => prop_assert!(false, "etherparse found no transport"),
        }
        // our own literal checksum check agrees that etherparse's are valid
        prop_assert_eq!(checksums_ok(&p), Ok(()));
    }

    /// set_field, re-parse: the field reads back the value set and every
    /// checksum is still valid.
    #[test]
    fn set_field_reads_back(p in packets(), pick in any::<prop::sample::Index>(), bits in any::<u128>()) {
        prop_assert_eq!(checksums_ok(&p), Ok(()));
        let mut k = FlowKey::ZERO;
        let info = parse(&p, &Meta::default(), &mut k);
        let cands: Vec<Field> = Field::ALL
            .iter()
            .copied()
            .filter(|&f| settable(f) && FIXED_LAYOUT.present(&k, f) && !(f == Field::VlanVid && info.vlan.is_none()))
            .collect();
        prop_assume!(!cands.is_empty());
        let f = cands[pick.index(cands.len())];
        let v = random_value(f, bits);
        // On IPv6, ip_proto is the *final* protocol: writing a walkable
        // extension-header number makes the next bytes parse as that header.
        prop_assume!(!(f == Field::IpProto && info.l3_kind == L3::Ipv6 && matches!(v[0], 0 | 43 | 44 | 51 | 60)));
        let mut buf = PacketBuf::from_slice(&p).unwrap();
        rewrite::apply_set_field(&mut buf, &info, f, &v).unwrap();
        let mut k2 = FlowKey::ZERO;
        parse(buf.data(), &Meta::default(), &mut k2);
        let got = FIXED_LAYOUT.get(&k2, f);
        prop_assert_eq!(got.as_slice(), &v[..], "{:?}", f);
        prop_assert_eq!(buf.len(), p.len());
        if f != Field::IpProto && f != Field::EthType && f != Field::Icmpv6Type && f != Field::Icmpv6Code {
            prop_assert_eq!(checksums_ok(buf.data()), Ok(()), "{:?}", f);
        }
    }

    /// (key & mask) == value on words  ⇔  for every field in the rule:
    /// present and (P & M) == (V & M) on the OXM bytes.
    #[test]
    fn masked_compare_equals_oxm(
        a in packets(),
        b in packets(),
        picks in prop::collection::vec((any::<prop::sample::Index>(), any::<u128>(), any::<bool>()), 1..5),
    ) {
        let (mut ka, mut kb) = (FlowKey::ZERO, FlowKey::ZERO);
        parse(&a, &Meta::default(), &mut ka);
        parse(&b, &Meta::default(), &mut kb);
        // rule: fields of b, random masks
        let (mut rv, mut rm) = (FlowKey::ZERO, FlowMask::ZERO);
        let mut rule: Vec<(Field, Vec<u8>, Vec<u8>)> = Vec::new();
        for (i, mbits, exact) in picks {
            let f = Field::ALL[i.index(Field::ALL.len())];
            if rule.iter().any(|r| r.0 == f) || !FIXED_LAYOUT.present(&kb, f) {
                continue;
            }
            let val = FIXED_LAYOUT.get(&kb, f).as_slice().to_vec();
            let m = if exact { vec![0xffu8; f.len()] } else { mbits.to_be_bytes()[16 - f.len()..].to_vec() };
            let mv: Vec<u8> = val.iter().zip(&m).map(|(x, y)| x & y).collect();
            FIXED_LAYOUT.add_match(&mut rv, &mut rm, f, &mv, Some(&m)).unwrap();
            rule.push((f, mv, m));
        }
        prop_assert!(kb.matches(&rm, &rv));
        let reference = rule.iter().all(|(f, mv, m)| {
            let width = u32::from(FIXED_LAYOUT.slot(*f).width);
            let wmask: u128 = if width >= 128 { u128::MAX } else { (1 << width) - 1 };
            let m_eff = m.iter().fold(0u128, |x, &y| (x << 8) | u128::from(y)) & wmask;
            let pv = FIXED_LAYOUT.get(&ka, *f).to_u128();
            let vv = mv.iter().fold(0u128, |x, &y| (x << 8) | u128::from(y));
            (m_eff == 0 || FIXED_LAYOUT.present(&ka, *f)) && (pv & m_eff) == (vv & m_eff)
        });
        prop_assert_eq!(ka.matches(&rm, &rv), reference);
    }

    /// Every push followed by the matching pop restores the packet.
    #[test]
    fn push_then_pop_is_identity(p in packets()) {
        let info0 = { let mut k = FlowKey::ZERO; parse(&p, &Meta::default(), &mut k) };
        prop_assume!(info0.eth && p.len() >= 60);
        let reparse = |b: &PacketBuf| { let mut k = FlowKey::ZERO; parse(b.data(), &Meta::default(), &mut k) };
        for tpid in [0x8100u16, 0x88a8] {
            let mut b = PacketBuf::from_slice(&p).unwrap();
            rewrite::push_vlan(&mut b, &info0, tpid).unwrap();
            let i = reparse(&b);
            rewrite::pop_vlan(&mut b, &i).unwrap();
            prop_assert_eq!(b.data(), &p[..]);
        }
        if info0.ethertype_offset.is_some() && info0.ethertype >= 0x600 {
            let mut b = PacketBuf::from_slice(&p).unwrap();
            rewrite::push_mpls(&mut b, &info0, 0x8847).unwrap();
            let i = reparse(&b);
            // The label is outermost (OpenFlow 1.3): popping restores the
            // ethertype field right after the MACs (a TPID if tagged).
            rewrite::pop_mpls(&mut b, &i, u16::from_be_bytes([p[12], p[13]])).unwrap();
            prop_assert_eq!(b.data(), &p[..]);
        }
        let mut b = PacketBuf::from_slice(&p).unwrap();
        rewrite::push_pbb(&mut b, &info0, 0x88e7).unwrap();
        let i = reparse(&b);
            rewrite::pop_pbb(&mut b, &i).unwrap();
        prop_assert_eq!(b.data(), &p[..]);
    }
}
