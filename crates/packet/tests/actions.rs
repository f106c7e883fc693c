//! Every action against literal packets: input bytes, action, and the
//! exact bytes scapy builds for the expected result (see
//! `tests/gen_vectors.py`; checksums and CRC32c there are scapy's own).

#[path = "data/vectors.rs"]
mod vectors;

use sluice_packet::field::Field;
use sluice_packet::rewrite::{self, RewriteError};
use sluice_packet::{parse, FlowKey, Meta, PacketBuf, ParseInfo};

fn field(name: &str) -> Field {
    *Field::ALL
        .iter()
        .find(|f| format!("{f:?}") == name)
        .unwrap_or_else(|| panic!("unknown field {name}"))
}

fn hex16(s: &str) -> u16 {
    u16::from_str_radix(s, 16).unwrap()
}

fn run(op: &str, buf: &mut PacketBuf, info: &ParseInfo) -> Result<(), RewriteError> {
    let (op, _) = op.split_once('=').unwrap_or((op, ""));
    let parts: Vec<&str> = op.split(':').collect();
    match parts[0] {
        "push_vlan" => rewrite::push_vlan(buf, info, hex16(parts[1])),
        "pop_vlan" => rewrite::pop_vlan(buf, info),
        "push_mpls" => rewrite::push_mpls(buf, info, hex16(parts[1])),
        "pop_mpls" => rewrite::pop_mpls(buf, info, hex16(parts[1])),
        "push_pbb" => rewrite::push_pbb(buf, info, hex16(parts[1])),
        "pop_pbb" => rewrite::pop_pbb(buf, info),
        "set_nw_ttl" => rewrite::set_nw_ttl(buf, info, parts[1].parse().unwrap()),
        "dec_nw_ttl" => rewrite::dec_nw_ttl(buf, info).map(|_| ()),
        "set_mpls_ttl" => rewrite::set_mpls_ttl(buf, info, parts[1].parse().unwrap()),
        "dec_mpls_ttl" => rewrite::dec_mpls_ttl(buf, info).map(|_| ()),
        "copy_ttl_out" => rewrite::copy_ttl_out(buf, info),
        "copy_ttl_in" => rewrite::copy_ttl_in(buf, info),
        "set_field" => {
            let v = hex::decode(parts[2]).unwrap();
            rewrite::apply_set_field(buf, info, field(parts[1]), &v)
        }
        other => panic!("unknown op {other}"),
    }
}

#[test]
fn every_action_vector() {
    let mut failures = Vec::new();
    for (op, input, expected) in vectors::ACTIONS {
        let input = hex::decode(input).unwrap();
        let expected = hex::decode(expected).unwrap();
        let mut buf = PacketBuf::from_slice(&input).unwrap();
        let mut key = FlowKey::ZERO;
        let info = parse(&input, &Meta::default(), &mut key);
        let r = run(op, &mut buf, &info);
        let want_err = op.ends_with("=invalid");
        let ok = if want_err { r == Err(RewriteError::InvalidTtl) } else { r.is_ok() };
        if !ok || buf.data() != expected.as_slice() {
            failures.push(format!(
                "{op}: result {r:?}\n   got {}\n  want {}",
                hex::encode(buf.data()),
                hex::encode(&expected)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} vectors failed:\n{}",
        failures.len(),
        vectors::ACTIONS.len(),
        failures.join("\n")
    );
}

#[test]
fn vectors_cover_every_settable_field() {
    for &f in Field::ALL {
        let tag = format!("set_field:{f:?}:");
        let covered = vectors::ACTIONS.iter().any(|(op, _, _)| op.starts_with(&tag));
        assert_eq!(covered, rewrite::settable(f), "{f:?}");
    }
}

#[test]
fn non_settable_fields() {
    let input = hex::decode(vectors::PARSE[0].1).unwrap();
    let mut buf = PacketBuf::from_slice(&input).unwrap();
    let mut key = FlowKey::ZERO;
    let info = parse(&input, &Meta::default(), &mut key);
    let e = |f: Field, v: &[u8], buf: &mut PacketBuf| rewrite::apply_set_field(buf, &info, f, v);
    assert_eq!(e(Field::InPort, &[0, 0, 0, 1], &mut buf), Err(RewriteError::NotSettable));
    assert_eq!(e(Field::Metadata, &[0; 8], &mut buf), Err(RewriteError::NotSettable));
    assert_eq!(e(Field::Ipv6Exthdr, &[0; 2], &mut buf), Err(RewriteError::NotSettable));
    assert_eq!(e(Field::TunnelId, &[0; 8], &mut buf), Err(RewriteError::Metadata));
    assert_eq!(e(Field::TcpSrc, &[0; 3], &mut buf), Err(RewriteError::BadLength));
    assert_eq!(e(Field::IpDscp, &[64], &mut buf), Err(RewriteError::BadValue));
    assert_eq!(e(Field::VlanVid, &[0x10, 1], &mut buf), Err(RewriteError::Absent));
    assert_eq!(e(Field::UdpSrc, &[0, 1], &mut buf), Err(RewriteError::Absent));
    assert_eq!(e(Field::Ipv6Src, &[0; 16], &mut buf), Err(RewriteError::Absent));
    assert_eq!(buf.data(), input.as_slice());
    assert_eq!(rewrite::push_vlan(&mut buf, &info, 0x0800), Err(RewriteError::BadEthertype));
    assert_eq!(rewrite::push_mpls(&mut buf, &info, 0x8100), Err(RewriteError::BadEthertype));
    assert_eq!(rewrite::pop_vlan(&mut buf, &info), Err(RewriteError::Absent));
    assert_eq!(rewrite::pop_mpls(&mut buf, &info, 0x0800), Err(RewriteError::Absent));
    assert_eq!(rewrite::pop_pbb(&mut buf, &info), Err(RewriteError::Absent));
    assert_eq!(rewrite::dec_mpls_ttl(&mut buf, &info), Err(RewriteError::Absent));
    assert_eq!(buf.data(), input.as_slice());
}

#[test]
fn no_room_is_an_error_not_a_panic() {
    let input = hex::decode(vectors::PARSE[0].1).unwrap();
    let mut buf = PacketBuf::new(0, input.len());
    buf.load(&input).unwrap();
    let mut key = FlowKey::ZERO;
    let info = parse(&input, &Meta::default(), &mut key);
    assert_eq!(rewrite::push_vlan(&mut buf, &info, 0x8100), Err(RewriteError::NoRoom));
    assert_eq!(rewrite::push_pbb(&mut buf, &info, 0x88e7), Err(RewriteError::NoRoom));
    assert_eq!(rewrite::push_mpls(&mut buf, &info, 0x8847), Err(RewriteError::NoRoom));
    assert_eq!(buf.data(), input.as_slice());
}

#[test]
fn stale_parse_info_never_panics() {
    // ParseInfo of a long packet applied to a short one.
    let long = hex::decode(vectors::PARSE[6].1).unwrap();
    let mut key = FlowKey::ZERO;
    let info = parse(&long, &Meta::default(), &mut key);
    for n in 0..long.len() {
        let mut buf = PacketBuf::from_slice(&long[..n]).unwrap();
        for &f in Field::ALL {
            let v = vec![0u8; f.len()];
            let _ = rewrite::apply_set_field(&mut buf, &info, f, &v);
        }
        let _ = rewrite::pop_vlan(&mut buf, &info);
        let _ = rewrite::pop_pbb(&mut buf, &info);
        let _ = rewrite::copy_ttl_in(&mut buf, &info);
        let _ = rewrite::dec_nw_ttl(&mut buf, &info);
    }
}

/// OpenFlow 1.3.5 §5.12: a pushed MPLS tag is the outermost tag, before any
/// VLAN tag; the pushed VLAN tag after it is outermost again. Both undo in
/// reverse order byte-for-byte.
#[test]
fn push_mpls_is_outermost_before_vlan_tags() {
    // eth / 802.1Q vid 7 pcp 0 / IPv4 (ttl 64) / 8 bytes, padded to 60.
    let mut tagged =
        hex::decode("2222222222221211111111118100000708004500001c000100004011f9c3c0a80a0ac0a81414")
            .unwrap();
    tagged.resize(60, 0);
    let mut buf = PacketBuf::from_slice(&tagged).unwrap();
    let step = |buf: &mut PacketBuf, op: &str| {
        let mut key = FlowKey::ZERO;
        let info = parse(buf.data(), &Meta::default(), &mut key);
        run(op, buf, &info).unwrap();
    };
    step(&mut buf, "push_mpls:8847");
    assert_eq!(hex::encode(&buf.data()[12..24]), "884700000140000708004500");
    step(&mut buf, "push_vlan:8100");
    // The new VLAN tag is outermost; the frame is no longer tagged behind
    // the label, so its TCI starts from 0.
    assert_eq!(hex::encode(&buf.data()[12..22]), "81000000884700000140");
    step(&mut buf, "pop_vlan");
    step(&mut buf, "pop_mpls:8100");
    assert_eq!(buf.data(), tagged.as_slice());
}
