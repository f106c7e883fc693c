//! POF through the OpenFlow front end: `pof(OFF,LEN)=VALUE` match fields
//! and the `pof_*` actions, from ovs-ofctl text to forwarded bytes, on every
//! datapath and cache mode (`docs/EXPERIMENTER.md`, `sluice_pipeline::pof`).
//! The random cases are in `differential.rs`; these are the worked ones:
//! K_POFVS's rules, windows that run past the frame or lack their base, a
//! 128-bit field, the per-pipeline window limit and its error, selection by
//! modify/delete/stats, and each action on known bytes.

mod common;

use sluice_ofp::action::Action;
use sluice_ofp::consts::SLUICE_EXPERIMENTER_ID;
use sluice_ofp::error::ErrorCode;
use sluice_ofp::instruction::Instruction;
use sluice_ofp::message::{flow_mod_command as fc, FlowMod};
use sluice_ofp::oxm::{Match, Oxm};
use sluice_pipeline::{CacheMode, Config, Datapath, Pipeline};

/// Every datapath with every cache mode.
fn configs() -> Vec<(Datapath, CacheMode)> {
    let mut v = Vec::new();
    for d in [Datapath::Reference, Datapath::Classifier, Datapath::Compiled] {
        for c in [CacheMode::Off, CacheMode::Megaflow, CacheMode::On] {
            v.push((d, c));
        }
    }
    v
}

fn pipeline(datapath: Datapath, cache: CacheMode) -> Pipeline {
    let cfg = Config { datapath, cache, ..Config::default() };
    let mut p = Pipeline::new(cfg);
    common::add_ports(&mut p, &[1, 2, 3]);
    p
}

/// Where `frame` received on port 1 goes: (port, bytes) per output. Sent
/// three times so cached paths are exercised; every run must agree.
fn run(p: &mut Pipeline, frame: &[u8]) -> Vec<(u32, Vec<u8>)> {
    let mut first = None;
    for _ in 0..3 {
        let mut out = Vec::new();
        p.process(1, frame, &mut |port: u32, _: Option<u32>, f: &[u8]| {
            out.push((port, f.to_vec()))
        });
        match &first {
            None => first = Some(out),
            Some(f) => assert_eq!(f, &out, "a repeated packet went elsewhere"),
        }
    }
    first.unwrap_or_default()
}

fn arp(tpa: [u8; 4]) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
    f.extend_from_slice(&[0, 0, 0, 0, 0, 1, 10, 0, 0, 1]);
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&tpa);
    f
}

fn udp(dst: [u8; 4], dport: u16) -> Vec<u8> {
    common::udp_frame(1, 2, [10, 0, 0, 1], dst, 1000, dport, b"payload!")
}

/// The IPv4 header checksum of `h` verifies.
fn checksum_ok(h: &[u8]) -> bool {
    let mut sum: u32 = h.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

#[test]
fn kpofvs_rules_forward_arp_and_ipv4_by_bit_windows() {
    for (d, c) in configs() {
        let mut p = pipeline(d, c);
        // K_POFVS's example: ARP by the ethertype at bits {96,16}, IPv4 by
        // the destination address at {240,32}.
        common::add(&mut p, "priority=10,pof(96,16)=0x0806,actions=output:2");
        common::add(&mut p, "priority=10,pof(240,32)=0x0a000002,actions=output:3");
        let ctx = format!("{d:?}/{c:?}");
        assert_eq!(run(&mut p, &arp([10, 0, 0, 2])).len(), 1, "{ctx}");
        assert_eq!(run(&mut p, &arp([10, 0, 0, 2]))[0].0, 2, "{ctx}");
        let out = run(&mut p, &udp([10, 0, 0, 2], 80));
        assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), vec![3], "{ctx}");
        assert!(run(&mut p, &udp([10, 0, 0, 3], 80)).is_empty(), "{ctx}");
    }
}

#[test]
fn header_bases_and_frame_ends_decide_presence() {
    for (d, c) in configs() {
        let mut p = pipeline(d, c);
        let ctx = format!("{d:?}/{c:?}");
        // The UDP destination port from the L4 base: ARP has no L4 header,
        // so the rule never matches it even where the bytes line up.
        common::add(&mut p, "priority=10,pof(l4+16,16)=80,actions=output:2");
        // A window past the end of a short frame: no match, even for the
        // all-zero value the missing bytes would read as.
        common::add(&mut p, "priority=5,pof(4000,8)=0,actions=output:3");
        assert_eq!(run(&mut p, &udp([10, 0, 0, 2], 80))[0].0, 2, "{ctx}");
        assert!(run(&mut p, &udp([10, 0, 0, 2], 81)).is_empty(), "{ctx}");
        assert!(run(&mut p, &arp([0, 80, 0, 80])).is_empty(), "{ctx}");
        // A frame long enough for bit 4000 (byte 500) does match.
        let mut long = udp([10, 0, 0, 2], 81);
        long.resize(600, 0);
        assert_eq!(run(&mut p, &long)[0].0, 3, "{ctx}");
    }
}

#[test]
fn a_128_bit_field_matches_all_its_bits_and_needs_all_of_them() {
    for (d, c) in configs() {
        let mut p = pipeline(d, c);
        let ctx = format!("{d:?}/{c:?}");
        // Bits 0..128: destination MAC, source MAC, ethertype, and the
        // first two bytes of the IPv4 header.
        common::add(
            &mut p,
            "priority=10,pof(0,128)=0x00000000000200000000000108004500,actions=output:2",
        );
        // Masked: only the first 64 bits, so the rest may differ, but the
        // whole field must be inside the frame.
        common::add(
            &mut p,
            "priority=5,pof(0,128)=0x00000000000300000000000000000000/0xffffffffffffffff0000000000000000,\
             actions=output:3",
        );
        assert_eq!(run(&mut p, &udp([10, 0, 0, 2], 80))[0].0, 2, "{ctx}");
        let mut other = udp([10, 0, 0, 2], 80);
        other[15] = 0x01; // DSCP/ECN byte: bit 127 of the window's 128
        assert!(run(&mut p, &other).is_empty(), "{ctx}");
        let mut to3 = udp([10, 0, 0, 2], 80);
        to3[5] = 3;
        assert_eq!(run(&mut p, &to3)[0].0, 3, "{ctx}");
        // Fifteen bytes: the masked rule's first 64 bits are there, its
        // last bits are not.
        assert!(run(&mut p, &to3[..15]).is_empty(), "{ctx}");
    }
}

#[test]
fn windows_past_the_pipeline_limit_are_refused_and_change_nothing() {
    let mut p = pipeline(Datapath::Compiled, CacheMode::On);
    // Distinct 64-bit fields: three fill the 192 bits of window space.
    let mut added = 0;
    let err = loop {
        let text = format!("priority=1,pof({},64)=1,actions=output:2", 1000 + 64 * added);
        match common::flow(&mut p, fc::ADD, &text) {
            Ok(()) => added += 1,
            Err(e) => break e,
        }
        assert!(added < 100, "no limit reached");
    };
    assert_eq!(err, ErrorCode::FMFC_TABLE_FULL);
    assert_eq!(added, 3);
    // The refused flow-mod installed nothing; fields already in use still
    // take new rules, and narrower windows still fit nowhere.
    assert_eq!(p.tables()[0].entries().len(), 3);
    common::add(&mut p, "priority=2,pof(1000,64)=2,actions=output:3");
    assert_eq!(
        common::flow(&mut p, fc::ADD, "priority=1,pof(8,1)=1,actions=output:2"),
        Err(ErrorCode::FMFC_TABLE_FULL)
    );
    // Fixed fields are unaffected.
    common::add(&mut p, "priority=1,udp,tp_dst=80,actions=output:2");
    assert_eq!(run(&mut p, &udp([10, 0, 0, 2], 80))[0].0, 2);
}

#[test]
fn modify_delete_and_stats_select_by_pof_fields() {
    let mut p = pipeline(Datapath::Classifier, CacheMode::On);
    common::add_ports(&mut p, &[4]);
    common::add(&mut p, "priority=10,pof(96,16)=0x0806,actions=output:2");
    common::add(&mut p, "priority=10,pof(96,16)=0x0800,actions=output:3");
    // A field on a window no rule uses selects nothing (and declares none),
    // but the rest of the match is still checked.
    common::flow(&mut p, fc::DELETE, "pof(200,16)=0x0800").unwrap();
    assert_eq!(p.tables()[0].entries().len(), 2);
    let bad = FlowMod {
        command: fc::DELETE,
        table_id: 0xff,
        r#match: Match {
            oxms: vec![
                pof_oxm(0, 16, 200, &[8, 0], None),
                Oxm::Basic {
                    field: sluice_ofp::oxm::FieldId::VlanVid,
                    value: sluice_ofp::oxm::FieldBytes::from_u128(0xffff, 2),
                    mask: None,
                },
            ],
        },
        ..FlowMod::default()
    };
    assert_eq!(p.flow_mod(&bad), Err(ErrorCode::BMC_BAD_VALUE));
    common::flow(&mut p, fc::MODIFY, "pof(96,16)=0x0800,actions=output:4").unwrap();
    assert_eq!(run(&mut p, &udp([10, 0, 0, 2], 80))[0].0, 4);
    assert_eq!(run(&mut p, &arp([10, 0, 0, 2]))[0].0, 2);
    common::flow(&mut p, fc::DELETE_STRICT, "priority=10,pof(96,16)=0x0806").unwrap();
    assert_eq!(p.tables()[0].entries().len(), 1);
    assert!(run(&mut p, &arp([10, 0, 0, 2])).is_empty());
}

#[test]
fn set_modify_and_checksum_rewrite_a_header_by_position() {
    for (d, c) in configs() {
        let mut p = pipeline(d, c);
        let ctx = format!("{d:?}/{c:?}");
        // Route 10.0.0.2 to 192.168.1.1 by bits alone: destination, TTL,
        // then the header checksum over the 20 header bytes.
        common::add(
            &mut p,
            "priority=10,pof(240,32)=0x0a000002,actions=pof_set(l3+128,32,0xc0a80101),\
             pof_modify(l3+64,8,-1),pof_checksum(l3+80,16,l3+0,160),output:2",
        );
        let input = udp([10, 0, 0, 2], 80);
        let out = run(&mut p, &input);
        assert_eq!(out.len(), 1, "{ctx}");
        let f = &out[0].1;
        assert_eq!(&f[30..34], &[192, 168, 1, 1], "{ctx}");
        assert_eq!(f[22], 63, "{ctx}");
        assert!(checksum_ok(&f[14..34]), "{ctx}");
        assert_eq!(f.len(), input.len(), "{ctx}");
        assert_eq!(&f[34..], &input[34..], "{ctx}");
    }
}

#[test]
fn add_and_delete_move_every_later_byte() {
    for (d, c) in configs() {
        let mut p = pipeline(d, c);
        let ctx = format!("{d:?}/{c:?}");
        // An 8-byte shim after the Ethernet addresses, then matched by the
        // next table on its new position; the other direction strips it.
        common::add(
            &mut p,
            "table=0,priority=10,in_port=1,udp,actions=pof_add(96,64,0x88b5000100000007),goto_table:1",
        );
        common::add(
            &mut p,
            "table=1,priority=10,pof(96,16)=0x88b5,pof(160,16)=0x0800,actions=output:2",
        );
        common::add(
            &mut p,
            "table=0,priority=10,in_port=2,pof(96,16)=0x88b5,actions=pof_del(96,64),output:3",
        );
        let input = udp([10, 0, 0, 2], 80);
        let out = run(&mut p, &input);
        assert_eq!(out.len(), 1, "{ctx}");
        let (port, f) = &out[0];
        assert_eq!(*port, 2, "{ctx}");
        assert_eq!(f.len(), input.len() + 8, "{ctx}");
        assert_eq!(&f[..12], &input[..12], "{ctx}");
        assert_eq!(&f[12..20], &[0x88, 0xb5, 0, 1, 0, 0, 0, 7], "{ctx}");
        assert_eq!(&f[20..], &input[12..], "{ctx}");
        let mut back = Vec::new();
        p.process(2, f, &mut |port: u32, _: Option<u32>, b: &[u8]| back.push((port, b.to_vec())));
        assert_eq!(back, vec![(3, input.clone())], "{ctx}");
    }
}

#[test]
fn write_metadata_copies_packet_bits_for_the_next_table() {
    for (d, c) in configs() {
        let mut p = pipeline(d, c);
        let ctx = format!("{d:?}/{c:?}");
        // The UDP destination port's low byte into the metadata's low byte.
        common::add(
            &mut p,
            "table=0,priority=10,actions=pof_write_metadata(56,l4+24,8),goto_table:1",
        );
        common::add(&mut p, "table=1,priority=10,metadata=80,actions=output:2");
        common::add(&mut p, "table=1,priority=10,metadata=53,actions=output:3");
        assert_eq!(run(&mut p, &udp([10, 0, 0, 2], 80))[0].0, 2, "{ctx}");
        assert_eq!(run(&mut p, &udp([10, 0, 0, 2], 53))[0].0, 3, "{ctx}");
        assert!(run(&mut p, &udp([10, 0, 0, 2], 443)).is_empty(), "{ctx}");
    }
}

fn flow_mod(oxms: Vec<Oxm>, actions: Vec<Action>) -> FlowMod {
    FlowMod {
        command: fc::ADD,
        priority: 1,
        r#match: Match { oxms },
        instructions: vec![Instruction::ApplyActions(actions)],
        ..FlowMod::default()
    }
}

/// A POF match field's wire payload: base, zero, bit length, bit offset,
/// value (and mask).
fn pof_oxm(base: u8, len: u16, off: u32, value: &[u8], mask: Option<&[u8]>) -> Oxm {
    let mut payload = vec![base, 0];
    payload.extend_from_slice(&len.to_be_bytes());
    payload.extend_from_slice(&off.to_be_bytes());
    payload.extend_from_slice(value);
    payload.extend_from_slice(mask.unwrap_or(&[]));
    Oxm::Experimenter {
        experimenter: SLUICE_EXPERIMENTER_ID,
        field: 0,
        has_mask: mask.is_some(),
        payload,
    }
}

/// A POF action's wire data: subtype, body, zero padding to 8 bytes.
fn pof_action(subtype: u16, body: &[u8]) -> Action {
    let mut data = subtype.to_be_bytes().to_vec();
    data.extend_from_slice(body);
    while (8 + data.len()) % 8 != 0 {
        data.push(0);
    }
    Action::Experimenter { experimenter: SLUICE_EXPERIMENTER_ID, data }
}

#[test]
fn malformed_fields_and_actions_get_the_right_errors() {
    let mut p = pipeline(Datapath::Compiled, CacheMode::On);
    let out = Action::Output { port: 2, max_len: 0 };
    let cases: Vec<(Vec<Oxm>, Vec<Action>, ErrorCode)> = vec![
        (vec![pof_oxm(0, 0, 96, &[], None)], vec![], ErrorCode::BMC_BAD_LEN),
        (vec![pof_oxm(0, 129, 96, &[0; 17], None)], vec![], ErrorCode::BMC_BAD_LEN),
        (vec![pof_oxm(0, 16, 96, &[8], None)], vec![], ErrorCode::BMC_BAD_LEN),
        (vec![pof_oxm(9, 16, 96, &[8, 0], None)], vec![], ErrorCode::BMC_BAD_FIELD),
        (vec![pof_oxm(0, 16, 8 * 65535, &[8, 0], None)], vec![], ErrorCode::BMC_BAD_FIELD),
        (vec![pof_oxm(0, 12, 96, &[0x10, 0], None)], vec![], ErrorCode::BMC_BAD_VALUE),
        (vec![pof_oxm(0, 16, 96, &[8, 1], Some(&[0xff, 0]))], vec![], ErrorCode::BMC_BAD_WILDCARDS),
        (
            vec![pof_oxm(0, 16, 96, &[8, 0], None), pof_oxm(0, 16, 96, &[8, 0], None)],
            vec![],
            ErrorCode::BMC_DUP_FIELD,
        ),
        // A set-field cannot write a `pof` field (pof_set does).
        (
            vec![],
            vec![Action::SetField(pof_oxm(0, 16, 96, &[8, 0], None))],
            ErrorCode::BAC_BAD_SET_TYPE,
        ),
        // pof_set of length 0 and of 129 bits.
        (vec![], vec![pof_action(0, &[0, 0, 0, 0, 0, 0, 0, 96])], ErrorCode::BAC_BAD_ARGUMENT),
        (
            vec![],
            vec![pof_action(
                0,
                &[0, 0, 0, 129, 0, 0, 0, 96, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            )],
            ErrorCode::BAC_BAD_ARGUMENT,
        ),
        // pof_del of more bits than any frame has.
        (
            vec![],
            vec![pof_action(3, &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0, 0])],
            ErrorCode::BAC_BAD_ARGUMENT,
        ),
        // pof_del of a partial byte.
        (
            vec![],
            vec![pof_action(3, &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4])],
            ErrorCode::BAC_BAD_ARGUMENT,
        ),
        // An unassigned POF subtype.
        (vec![], vec![pof_action(9, &[0; 6])], ErrorCode::BAC_BAD_EXP_TYPE),
    ];
    for (i, (oxms, mut actions, want)) in cases.into_iter().enumerate() {
        actions.push(out.clone());
        assert_eq!(p.flow_mod(&flow_mod(oxms, actions)), Err(want), "case {i}");
    }
    assert!(p.tables()[0].entries().is_empty());
    // Still forwarding.
    common::add(&mut p, "priority=1,actions=output:2");
    assert_eq!(run(&mut p, &udp([10, 0, 0, 2], 80))[0].0, 2);
}

/// `udp` with IPv4 TTL `ttl` (checksum left stale: nothing here checks it).
fn udp_ttl(ttl: u8) -> Vec<u8> {
    let mut f = udp([10, 0, 0, 2], 80);
    f[22] = ttl;
    f
}

#[test]
fn cache_entries_stay_exact_after_edits_a_window_sees() {
    // A decrement borrows across bits: whether bit 1 of the new TTL is set
    // depends on bits 0 and 1 of the old one. A cache entry recorded
    // after it could only pin the old bit 1, and TTL 64 and 65 agree
    // there, so both edits must end the recording (a hit re-runs the
    // later lookups live).
    for edit in ["pof_modify(l3+64,8,-1)", "dec_ttl"] {
        for (d, c) in configs() {
            let mut p = pipeline(d, c);
            let ctx = format!("{edit} {d:?}/{c:?}");
            common::add(&mut p, &format!("table=0,priority=1,ip,actions={edit},goto_table:1"));
            common::add(&mut p, "table=1,priority=1,pof(l3+64,8)=0x02/0x02,actions=output:2");
            // 64 - 1 = 0b0011_1111: bit 1 set; 65 - 1 = 0b0100_0000: clear.
            assert_eq!(run(&mut p, &udp_ttl(64)).len(), 1, "{ctx}");
            assert!(run(&mut p, &udp_ttl(65)).is_empty(), "{ctx}");
            assert_eq!(run(&mut p, &udp_ttl(64)).len(), 1, "{ctx}");
        }
    }
}
