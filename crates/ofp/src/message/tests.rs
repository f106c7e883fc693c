//! Unit tests for `message`: literal byte vectors written from the
//! OpenFlow 1.3.5 spec (`openflow.h` layouts), every header/body error case,
//! and property tests (round trip over every message type; no panics on
//! arbitrary bytes).

use super::*;
use crate::consts::{port_no, OFP_NO_BUFFER};
use crate::oxm::{FieldBytes, FieldId, Oxm};
use proptest::prelude::*;

fn hexb(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    hex::decode(s).expect("test hex")
}

/// Parse `bytes`, compare with `want` (xid 0x12345678) and check that
/// encoding gives the same bytes back.
fn check_literal(bytes: &[u8], want: Message) {
    let (xid, m) = Message::parse(bytes).expect("parse");
    assert_eq!(xid, 0x1234_5678);
    assert_eq!(m, want);
    assert_eq!(m.encode(xid), bytes, "encode of {m:?}");
}

/// A message with a header (version 4, xid 0x12345678) around `body`.
fn msg(ty: u8, body: &[u8]) -> Vec<u8> {
    msg_v(4, ty, body)
}

fn msg_v(version: u8, ty: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![version, ty, 0, 0, 0x12, 0x34, 0x56, 0x78];
    v.extend_from_slice(body);
    let n = v.len() as u16;
    patch_u16(&mut v, 2, n);
    v
}

fn in_port(p: u32) -> Match {
    Match {
        oxms: vec![Oxm::Basic {
            field: FieldId::InPort,
            value: FieldBytes::new(&p.to_be_bytes()).unwrap(),
            mask: None,
        }],
    }
}

// ---------------------------------------------------------------------------
// Literal messages

#[test]
fn hello_with_version_bitmap() {
    // OFPHET_VERSIONBITMAP, length 8, bitmap with bit 4 (OpenFlow 1.3).
    let b = hexb("04 00 0010 12345678  0001 0008 00000010");
    check_literal(
        &b,
        Message::Hello(Hello { elements: vec![HelloElem::VersionBitmap(vec![0x10])] }),
    );
    assert_eq!(Message::Hello(Hello::with_versions(&[4])).encode(0x1234_5678), b);
}

#[test]
fn hello_elements_are_padded_and_unknown_kept() {
    // Unknown element type 7 with 3 data bytes (length 7, 1 pad byte), then
    // a two-word bitmap (versions 1, 4 and 33).
    let b = hexb("04 00 0020 12345678  0007 0007 aabbcc 00  0001 000c 00000012 00000002 00000000");
    check_literal(
        &b,
        Message::Hello(Hello {
            elements: vec![
                HelloElem::Unknown { ty: 7, data: vec![0xaa, 0xbb, 0xcc] },
                HelloElem::VersionBitmap(vec![0x12, 0x2]),
            ],
        }),
    );
}

#[test]
fn hello_of_other_versions() {
    // An OpenFlow 1.0 hello: no body.
    let (_, m) = Message::parse(&hexb("01 00 0008 12345678")).unwrap();
    assert_eq!(m, Message::Hello(Hello::default()));
    // An OpenFlow 1.0 hello with a body that is not an element list: the
    // body is ignored (OF 1.0 §5.5.1), not an error.
    let (_, m) = Message::parse(&hexb("01 00 000b 12345678 010203")).unwrap();
    assert_eq!(m, Message::Hello(Hello::default()));
    // A 1.5 hello with a bitmap (versions 4, 5, 6) parses too, and
    // negotiates 1.3 with us.
    let (h, m) =
        Message::parse_with_header(&hexb("06 00 0010 12345678 0001 0008 00000070")).unwrap();
    assert_eq!(h, Header { version: 6, msg_type: 0, length: 16, xid: 0x1234_5678 });
    assert_eq!(m, Message::Hello(Hello { elements: vec![HelloElem::VersionBitmap(vec![0x70])] }));
    let Message::Hello(hello) = m else { unreachable!() };
    assert_eq!(hello.negotiate(h.version, &[1, 4]), Some(4));
}

#[test]
fn negotiation_follows_6_3_1() {
    let ours: &[u8] = &[1, 4];
    // Both sides have bitmaps: highest common version.
    let peer = Hello::with_versions(&[1, 4, 5, 6]);
    assert_eq!(peer.negotiate(6, ours), Some(4));
    let peer = Hello::with_versions(&[1, 2, 3]);
    assert_eq!(peer.negotiate(3, ours), Some(1));
    let peer = Hello::with_versions(&[2, 3, 5]);
    assert_eq!(peer.negotiate(5, ours), None);
    // The bitmap wins over the header version.
    let peer = Hello::with_versions(&[1]);
    assert_eq!(peer.negotiate(4, &[4]), None);
    // No bitmap: min(header version, our highest), if we support it.
    let plain = Hello::default();
    assert_eq!(plain.negotiate(6, ours), Some(4));
    assert_eq!(plain.negotiate(4, ours), Some(4));
    assert_eq!(plain.negotiate(1, ours), Some(1));
    assert_eq!(plain.negotiate(3, ours), None);
    assert_eq!(plain.negotiate(1, &[4]), None);
    assert_eq!(plain.negotiate(4, &[]), None);
    // Unknown elements do not count as a bitmap.
    let odd = Hello { elements: vec![HelloElem::Unknown { ty: 9, data: vec![] }] };
    assert_eq!(odd.negotiate(4, &[4]), Some(4));
    // Versions above 31 use later words; an over-long peer bitmap is fine.
    let big = Hello::with_versions(&[4, 200]);
    assert_eq!(big.bitmap().map(<[u32]>::len), Some(7));
    assert!(bitmap_has(big.bitmap().unwrap(), 200));
    assert_eq!(big.negotiate(200, &[4, 200]), Some(200));
    assert_eq!(big.negotiate(200, &[4, 201]), Some(4));
}

#[test]
fn features_request_and_reply() {
    check_literal(&hexb("04 05 0008 12345678"), Message::FeaturesRequest);
    let b = hexb(
        "04 06 0020 12345678
         0000 0000 0000 0001  00000100  fe 00 0000  0000004f  00000000",
    );
    check_literal(
        &b,
        Message::FeaturesReply(FeaturesReply {
            datapath_id: 1,
            n_buffers: 256,
            n_tables: 254,
            auxiliary_id: 0,
            capabilities: capabilities::FLOW_STATS
                | capabilities::TABLE_STATS
                | capabilities::PORT_STATS
                | capabilities::GROUP_STATS
                | capabilities::QUEUE_STATS,
            reserved: 0,
        }),
    );
}

#[test]
fn flow_mod_with_match_and_apply_output() {
    let b = hexb(
        "04 0e 0058 12345678
         0000000000000000 0000000000000000  00 00  0000 0000 8000
         ffffffff ffffffff ffffffff  0001 0000
         0001 000c 80000004 00000001 00000000
         0004 0018 00000000  0000 0010 00000002 ffe5 000000000000",
    );
    check_literal(
        &b,
        Message::FlowMod(FlowMod {
            priority: 0x8000,
            buffer_id: OFP_NO_BUFFER,
            out_port: port_no::ANY,
            out_group: crate::consts::group_id::ANY,
            flags: flow_mod_flags::SEND_FLOW_REM,
            command: flow_mod_command::ADD,
            r#match: in_port(1),
            instructions: vec![Instruction::ApplyActions(vec![Action::Output {
                port: 2,
                max_len: OFPCML_MAX,
            }])],
            ..FlowMod::default()
        }),
    );
}

#[test]
fn packet_in_with_match_and_frame() {
    let frame = hexb("ffffffffffff 020000000001 0806");
    let mut b = hexb(
        "04 0a 0038 12345678
         ffffffff 003c 01 02 00000000000000aa
         0001 000c 80000004 00000003 00000000
         0000",
    );
    b.extend_from_slice(&frame);
    check_literal(
        &b,
        Message::PacketIn(PacketIn {
            buffer_id: OFP_NO_BUFFER,
            total_len: 60,
            reason: packet_in_reason::ACTION,
            table_id: 2,
            cookie: 0xaa,
            r#match: in_port(3),
            data: frame,
        }),
    );
}

#[test]
fn flow_removed_literal() {
    let b = hexb(
        "04 0b 0038 12345678
         0000000000000007 0064 00 01  0000000a 00000005 001e 003c
         0000000000000002 0000000000000080
         0001 0004 00000000",
    );
    check_literal(
        &b,
        Message::FlowRemoved(FlowRemoved {
            cookie: 7,
            priority: 100,
            reason: flow_removed_reason::IDLE_TIMEOUT,
            table_id: 1,
            duration_sec: 10,
            duration_nsec: 5,
            idle_timeout: 30,
            hard_timeout: 60,
            packet_count: 2,
            byte_count: 128,
            r#match: Match::default(),
        }),
    );
}

#[test]
fn error_messages() {
    // OFPET_BAD_REQUEST / OFPBRC_BAD_TYPE with the offending header.
    let b = hexb("04 01 0014 12345678 0001 0001 04 1f 0008 00000001");
    check_literal(
        &b,
        Message::Error(ErrorMsg::Standard {
            code: ErrorCode::BRC_BAD_TYPE,
            data: hexb("041f000800000001"),
        }),
    );
    // OFPET_EXPERIMENTER.
    let b = hexb("04 01 0012 12345678 ffff 0042 534c4943 abcd");
    check_literal(
        &b,
        Message::Error(ErrorMsg::Experimenter {
            exp_type: 0x42,
            experimenter: crate::consts::SLUICE_EXPERIMENTER_ID,
            data: vec![0xab, 0xcd],
        }),
    );
    // Unknown type/code pairs are kept.
    let b = hexb("04 01 000c 12345678 0063 0007");
    check_literal(
        &b,
        Message::Error(ErrorMsg::Standard { code: ErrorCode::new(99, 7), data: vec![] }),
    );
}

#[test]
fn small_fixed_messages() {
    check_literal(&hexb("04 02 000b 12345678 616263"), Message::EchoRequest(b"abc".to_vec()));
    check_literal(&hexb("04 03 0008 12345678"), Message::EchoReply(vec![]));
    check_literal(
        &hexb("04 04 0013 12345678 00002320 0000000a 010203"),
        Message::Experimenter(ExperimenterMsg {
            experimenter: 0x2320,
            exp_type: 10,
            data: vec![1, 2, 3],
        }),
    );
    check_literal(&hexb("04 07 0008 12345678"), Message::GetConfigRequest);
    check_literal(
        &hexb("04 08 000c 12345678 0001 0080"),
        Message::GetConfigReply(SwitchConfig {
            flags: config_flags::FRAG_DROP,
            miss_send_len: 128,
        }),
    );
    check_literal(
        &hexb("04 09 000c 12345678 0000 ffff"),
        Message::SetConfig(SwitchConfig { flags: 0, miss_send_len: OFPCML_NO_BUFFER }),
    );
    check_literal(
        &hexb("04 10 0028 12345678 00000003 00000000 0a0b0c0d0e0f 0000 00000001 00000041 00000000 00000000"),
        Message::PortMod(PortMod {
            port_no: 3,
            hw_addr: [10, 11, 12, 13, 14, 15],
            config: 1,
            mask: 0x41,
            advertise: 0,
        }),
    );
    check_literal(
        &hexb("04 11 0010 12345678 ff 000000 00000003"),
        Message::TableMod(TableMod { table_id: 0xff, config: 3 }),
    );
    check_literal(&hexb("04 14 0008 12345678"), Message::BarrierRequest);
    check_literal(&hexb("04 15 0008 12345678"), Message::BarrierReply);
    check_literal(
        &hexb("04 16 0010 12345678 ffffffff 00000000"),
        Message::QueueGetConfigRequest(QueueGetConfigRequest { port: port_no::ANY }),
    );
    check_literal(
        &hexb("04 18 0018 12345678 00000002 00000000 0000000000000011"),
        Message::RoleRequest(RoleMsg { role: controller_role::MASTER, generation_id: 0x11 }),
    );
    check_literal(
        &hexb("04 19 0018 12345678 00000003 00000000 ffffffffffffffff"),
        Message::RoleReply(RoleMsg { role: controller_role::SLAVE, generation_id: u64::MAX }),
    );
    check_literal(&hexb("04 1a 0008 12345678"), Message::GetAsyncRequest);
    let a = AsyncConfig {
        packet_in_mask: [3, 1],
        port_status_mask: [7, 7],
        flow_removed_mask: [15, 0],
    };
    let body = "00000003 00000001 00000007 00000007 0000000f 00000000";
    check_literal(&hexb(&format!("04 1b 0020 12345678 {body}")), Message::GetAsyncReply(a));
    check_literal(&hexb(&format!("04 1c 0020 12345678 {body}")), Message::SetAsync(a));
}

#[test]
fn packet_out_group_mod_meter_mod() {
    check_literal(
        &hexb(
            "04 0d 002e 12345678 ffffffff fffffffd 0010 000000000000
             0000 0010 00000001 ffff 000000000000
             aabbcc dd ee ff",
        ),
        Message::PacketOut(PacketOut {
            buffer_id: OFP_NO_BUFFER,
            in_port: port_no::CONTROLLER,
            actions: vec![Action::Output { port: 1, max_len: 0xffff }],
            data: hexb("aabbccddeeff"),
        }),
    );
    check_literal(
        &hexb(
            "04 0f 0030 12345678 0000 01 00 00000005
             0020 0001 ffffffff ffffffff 00000000
             0000 0010 00000002 0000 000000000000",
        ),
        Message::GroupMod(GroupMod {
            command: group_mod_command::ADD,
            group_type: GroupType::Select,
            group_id: 5,
            buckets: vec![Bucket {
                weight: 1,
                watch_port: port_no::ANY,
                watch_group: crate::consts::group_id::ANY,
                actions: vec![Action::Output { port: 2, max_len: 0 }],
            }],
        }),
    );
    check_literal(
        &hexb("04 1d 0020 12345678 0000 0005 00000001 0001 0010 000003e8 00000064 00000000"),
        Message::MeterMod(MeterMod {
            command: meter_mod_command::ADD,
            flags: crate::meter::flags::KBPS | crate::meter::flags::BURST,
            meter_id: 1,
            bands: vec![MeterBand::Drop { rate: 1000, burst_size: 100 }],
        }),
    );
}

#[test]
fn port_status_literal() {
    let b = hexb(
        "04 0c 0050 12345678 02 00000000000000
         00000001 00000000 020000000001 0000
         65746830000000000000000000000000
         00000000 00000004 00000840 00000840 00000840 00000000 000f4240 000f4240",
    );
    let (_, m) = Message::parse(&b).unwrap();
    let Message::PortStatus(ps) = &m else { panic!("{m:?}") };
    assert_eq!(ps.reason, port_reason::MODIFY);
    assert_eq!(ps.desc.port_no, 1);
    assert_eq!(ps.desc.name, "eth0");
    assert_eq!(ps.desc.state, crate::port::state::LIVE);
    assert_eq!(ps.desc.curr_speed, 1_000_000);
    assert_eq!(m.encode(0x1234_5678), b);
}

// ---------------------------------------------------------------------------
// Header errors

#[test]
fn header_length_errors() {
    let bad = ErrorCode::BRC_BAD_LEN;
    // Shorter than a header.
    assert_eq!(Message::parse(&[]), Err(bad));
    assert_eq!(Message::parse(&hexb("04 00 0008 123456")), Err(bad));
    assert_eq!(Header::parse(&[4, 0, 0]), Err(bad));
    // Length field below 8.
    assert_eq!(Message::parse(&hexb("04 02 0004 12345678")), Err(bad));
    assert_eq!(Message::parse(&hexb("04 00 0000 12345678")), Err(bad));
    // Length field larger than the buffer (lies long)...
    assert_eq!(Message::parse(&hexb("04 02 0010 12345678 0102")), Err(bad));
    // ...and smaller than the buffer (lies short).
    assert_eq!(Message::parse(&hexb("04 02 0009 12345678 0102")), Err(bad));
    // The length check comes before version and type checks.
    assert_eq!(Message::parse(&hexb("01 63 0009 12345678")), Err(bad));
}

#[test]
fn version_and_type_errors() {
    for v in [0u8, 1, 3, 5, 0x81, 0xff] {
        assert_eq!(
            Message::parse(&msg_v(v, msg_type::ECHO_REQUEST, &[])),
            Err(ErrorCode::BRC_BAD_VERSION)
        );
        assert_eq!(Message::parse(&msg_v(v, 99, &[])), Err(ErrorCode::BRC_BAD_VERSION));
        assert!(Message::parse(&msg_v(v, msg_type::HELLO, &[])).is_ok());
    }
    for t in [30u8, 31, 100, 255] {
        assert_eq!(Message::parse(&msg(t, &[])), Err(ErrorCode::BRC_BAD_TYPE));
    }
}

#[test]
fn fixed_bodies_of_wrong_length() {
    use msg_type as t;
    let fixed: &[(u8, usize)] = &[
        (t::FEATURES_REQUEST, 0),
        (t::FEATURES_REPLY, 24),
        (t::GET_CONFIG_REQUEST, 0),
        (t::GET_CONFIG_REPLY, 4),
        (t::SET_CONFIG, 4),
        (t::PORT_MOD, 32),
        (t::TABLE_MOD, 8),
        (t::BARRIER_REQUEST, 0),
        (t::BARRIER_REPLY, 0),
        (t::QUEUE_GET_CONFIG_REQUEST, 8),
        (t::ROLE_REQUEST, 16),
        (t::ROLE_REPLY, 16),
        (t::GET_ASYNC_REQUEST, 0),
        (t::GET_ASYNC_REPLY, 24),
        (t::SET_ASYNC, 24),
    ];
    for &(ty, n) in fixed {
        assert!(Message::parse(&msg(ty, &vec![0; n])).is_ok(), "type {ty}");
        for wrong in [n + 1, n + 8, n.wrapping_sub(1), n.wrapping_sub(4)] {
            if wrong > 1000 {
                continue;
            }
            assert_eq!(
                Message::parse(&msg(ty, &vec![0; wrong])),
                Err(ErrorCode::BRC_BAD_LEN),
                "type {ty} len {wrong}"
            );
        }
    }
    // Port status is fixed too (8 + 64); its port decoder is not consulted
    // when the size is wrong.
    assert_eq!(Message::parse(&msg(t::PORT_STATUS, &[0; 71])), Err(ErrorCode::BRC_BAD_LEN));
    assert_eq!(Message::parse(&msg(t::PORT_STATUS, &[0; 73])), Err(ErrorCode::BRC_BAD_LEN));
}

#[test]
fn variable_bodies_shorter_than_their_fixed_part() {
    use msg_type as t;
    let mins: &[(u8, usize)] = &[
        (t::ERROR, 4),
        (t::EXPERIMENTER, 8),
        (t::PACKET_IN, 24),
        (t::FLOW_REMOVED, 48),
        (t::PACKET_OUT, 16),
        (t::FLOW_MOD, 48),
        (t::GROUP_MOD, 8),
        (t::QUEUE_GET_CONFIG_REPLY, 8),
        (t::METER_MOD, 8),
    ];
    for &(ty, n) in mins {
        for short in 0..n {
            assert_eq!(
                Message::parse(&msg(ty, &vec![0; short])),
                Err(ErrorCode::BRC_BAD_LEN),
                "type {ty} len {short}"
            );
        }
    }
    // An experimenter error needs 8 bytes.
    assert_eq!(
        Message::parse(&msg(t::ERROR, &hexb("ffff 0001 0000"))),
        Err(ErrorCode::BRC_BAD_LEN)
    );
}

// ---------------------------------------------------------------------------
// Body errors

#[test]
fn hello_element_errors() {
    let bad = Err(ErrorCode::BRC_BAD_LEN);
    // Element length below its own header.
    assert_eq!(Message::parse(&msg(0, &hexb("0001 0002 00000000"))), bad);
    // Element length overruns the message.
    assert_eq!(Message::parse(&msg(0, &hexb("0001 0010 00000010"))), bad);
    // Missing padding after a 6-byte element.
    assert_eq!(Message::parse(&msg(0, &hexb("0009 0006 0000"))), bad);
    // A bitmap that is not a whole number of words.
    assert_eq!(Message::parse(&msg(0, &hexb("0001 0006 0010 0000"))), bad);
    // A truncated element header.
    assert_eq!(Message::parse(&msg(0, &hexb("0001 00"))), bad);
    // The same bodies at version 1 are ignored.
    assert_eq!(
        Message::parse(&msg_v(1, 0, &hexb("0001 0010 00000010"))),
        Ok((0x1234_5678, Message::Hello(Hello::default())))
    );
}

#[test]
fn flow_mod_nested_errors() {
    let fixed = hexb(
        "0000000000000000 0000000000000000 00 00 0000 0000 8000
         ffffffff ffffffff ffffffff 0000 0000",
    );
    let with = |rest: &str| {
        let mut b = fixed.clone();
        b.extend_from_slice(&hexb(rest));
        Message::parse(&msg(msg_type::FLOW_MOD, &b))
    };
    assert!(with("0001 0004 00000000").is_ok());
    // Match length runs past the message.
    assert_eq!(with("0001 0040 00000000"), Err(ErrorCode::BMC_BAD_LEN));
    // Match present but padding cut off.
    assert_eq!(with("0001 000c 80000004 00000001"), Err(ErrorCode::BMC_BAD_LEN));
    // No match at all after the fixed part.
    assert_eq!(with(""), Err(ErrorCode::BRC_BAD_LEN));
    // Match of the wrong type.
    assert_eq!(with("0000 0004 00000000"), Err(ErrorCode::BMC_BAD_TYPE));
    // Instruction length overrunning the message.
    assert_eq!(with("0001 0004 00000000  0004 0018 00000000"), Err(ErrorCode::BIC_BAD_LEN));
    // Action inside an instruction overrunning the instruction.
    assert_eq!(
        with("0001 0004 00000000  0004 0010 00000000 0000 0018 00000001 ffff 000000000000"),
        Err(ErrorCode::BAC_BAD_LEN)
    );
}

#[test]
fn packet_in_and_flow_removed_errors() {
    let fixed = hexb("ffffffff 003c 00 00 0000000000000000");
    let with = |rest: &str| {
        let mut b = fixed.clone();
        b.extend_from_slice(&hexb(rest));
        Message::parse(&msg(msg_type::PACKET_IN, &b))
    };
    assert!(with("0001 0004 00000000 0000").is_ok());
    // Missing the two bytes of padding before the frame.
    assert_eq!(with("0001 0004 00000000 00"), Err(ErrorCode::BRC_BAD_LEN));
    // Match longer than the message.
    assert_eq!(with("0001 0014 00000000 0000"), Err(ErrorCode::BMC_BAD_LEN));

    let mut fr = vec![0u8; 40];
    fr.extend_from_slice(&hexb("0001 0004 00000000"));
    assert!(Message::parse(&msg(msg_type::FLOW_REMOVED, &fr)).is_ok());
    fr.push(0);
    assert_eq!(Message::parse(&msg(msg_type::FLOW_REMOVED, &fr)), Err(ErrorCode::BRC_BAD_LEN));
}

#[test]
fn packet_out_errors() {
    let with = |actions_len: u16, rest: &str| {
        let mut b = hexb("ffffffff fffffffd");
        b.extend_from_slice(&actions_len.to_be_bytes());
        b.extend_from_slice(&[0; 6]);
        b.extend_from_slice(&hexb(rest));
        Message::parse(&msg(msg_type::PACKET_OUT, &b))
    };
    let output = "0000 0010 00000001 ffff 000000000000";
    assert!(with(16, output).is_ok());
    // actions_len longer than what follows.
    assert_eq!(with(24, output), Err(ErrorCode::BRC_BAD_LEN));
    assert_eq!(with(0xfff8, output), Err(ErrorCode::BRC_BAD_LEN));
    // actions_len not a multiple of 8.
    assert_eq!(with(12, output), Err(ErrorCode::BRC_BAD_LEN));
    // The action's own length overruns actions_len (the rest is data).
    assert_eq!(with(8, output), Err(ErrorCode::BAC_BAD_LEN));
    // Actions of an unknown type keep the action decoder's error.
    assert_eq!(with(8, "0063 0008 00000000"), Err(ErrorCode::BAC_BAD_TYPE));
}

#[test]
fn group_and_meter_mod_errors() {
    // Bucket length overruns the message.
    let b = hexb("0000 00 00 00000001  0030 0000 ffffffff ffffffff 00000000");
    assert_eq!(Message::parse(&msg(msg_type::GROUP_MOD, &b)), Err(ErrorCode::GMFC_BAD_BUCKET));
    // Unknown group types are kept, not rejected by the codec.
    let b = hexb("0000 80 00 00000001");
    let (_, m) = Message::parse(&msg(msg_type::GROUP_MOD, &b)).unwrap();
    assert!(matches!(m, Message::GroupMod(GroupMod { group_type: GroupType::Unknown(0x80), .. })));
    // Band length overruns the message.
    let b = hexb("0000 0001 00000001  0001 0020 000003e8 00000000 00000000");
    assert_eq!(Message::parse(&msg(msg_type::METER_MOD, &b)), Err(ErrorCode::MMFC_BAD_BAND));
}

// ---------------------------------------------------------------------------
// Framing, error replies, encoding limits

#[test]
fn framing() {
    assert_eq!(frame(&[]), None);
    assert_eq!(frame(&hexb("04 00 0010 0000")), None);
    assert_eq!(frame(&hexb("04 00 0010 00000000")), None);
    assert_eq!(frame(&hexb("04 00 0008 00000000")), Some(Ok(8)));
    let two = [msg(msg_type::ECHO_REQUEST, b"xy"), msg(msg_type::BARRIER_REQUEST, &[])].concat();
    assert_eq!(frame(&two), Some(Ok(10)));
    assert_eq!(frame(&two[10..]), Some(Ok(8)));
    assert_eq!(frame(&hexb("04 00 0007 00000000")), Some(Err(ErrorCode::BRC_BAD_LEN)));
    assert_eq!(frame(&hexb("04 00 0000 00000000 ffff")), Some(Err(ErrorCode::BRC_BAD_LEN)));
}

#[test]
fn error_reply_carries_64_bytes() {
    let long = msg(msg_type::ECHO_REQUEST, &[0xab; 100]);
    let Message::Error(ErrorMsg::Standard { code, data }) =
        error_reply(ErrorCode::BRC_BAD_TYPE, &long)
    else {
        panic!()
    };
    assert_eq!(code, ErrorCode::BRC_BAD_TYPE);
    assert_eq!(data, long[..64]);
    let short = hexb("04 63 0008 00000001");
    let reply = error_reply(ErrorCode::BRC_BAD_TYPE, &short);
    assert_eq!(reply.encode(1), hexb("04 01 0014 00000001 0001 0001 04 63 0008 00000001"));
}

#[test]
fn oversized_messages() {
    let m = Message::EchoRequest(vec![7; 70_000]);
    assert_eq!(m.try_encode(1), Err(ErrorCode::BRC_BAD_LEN));
    let b = m.encode(1);
    assert_eq!(b.len(), 65535);
    assert_eq!(frame(&b), Some(Ok(65535)));
    assert_eq!(Message::parse(&b), Ok((1, Message::EchoRequest(vec![7; 65527]))));
    let fits = Message::EchoRequest(vec![7; 65527]);
    assert_eq!(fits.try_encode(1).map(|v| v.len()), Ok(65535));
}

#[test]
fn switch_config_validation() {
    assert_eq!(SwitchConfig::default().validate(), Ok(()));
    assert_eq!(
        SwitchConfig { flags: 4, miss_send_len: 128 }.validate(),
        Err(ErrorCode::SCFC_BAD_FLAGS)
    );
    assert_eq!(
        SwitchConfig { flags: 0, miss_send_len: 0xfff0 }.validate(),
        Err(ErrorCode::SCFC_BAD_LEN)
    );
    assert_eq!(SwitchConfig { flags: 3, miss_send_len: OFPCML_MAX }.validate(), Ok(()));
    assert_eq!(SwitchConfig { flags: 0, miss_send_len: OFPCML_NO_BUFFER }.validate(), Ok(()));
}

#[test]
fn msg_type_matches_encoding() {
    for ty in 0..=msg_type::MAX {
        // Every type number has a variant whose encoding carries it.
        let m = sample(ty);
        assert_eq!(m.msg_type(), ty);
        assert_eq!(m.encode(9)[1], ty);
    }
}

/// One simple message of each type (bodies empty where allowed).
fn sample(ty: u8) -> Message {
    use msg_type as t;
    match ty {
        t::HELLO => Message::Hello(Hello::default()),
        t::ERROR => error_reply(ErrorCode::BRC_EPERM, &[]),
        t::ECHO_REQUEST => Message::EchoRequest(vec![]),
        t::ECHO_REPLY => Message::EchoReply(vec![]),
        t::EXPERIMENTER => Message::Experimenter(ExperimenterMsg::default()),
        t::FEATURES_REQUEST => Message::FeaturesRequest,
        t::FEATURES_REPLY => Message::FeaturesReply(FeaturesReply::default()),
        t::GET_CONFIG_REQUEST => Message::GetConfigRequest,
        t::GET_CONFIG_REPLY => Message::GetConfigReply(SwitchConfig::default()),
        t::SET_CONFIG => Message::SetConfig(SwitchConfig::default()),
        t::PACKET_IN => Message::PacketIn(PacketIn::default()),
        t::FLOW_REMOVED => Message::FlowRemoved(FlowRemoved::default()),
        t::PORT_STATUS => Message::PortStatus(PortStatus::default()),
        t::PACKET_OUT => Message::PacketOut(PacketOut::default()),
        t::FLOW_MOD => Message::FlowMod(FlowMod::default()),
        t::GROUP_MOD => Message::GroupMod(GroupMod {
            command: 0,
            group_type: GroupType::All,
            group_id: 0,
            buckets: vec![],
        }),
        t::PORT_MOD => Message::PortMod(PortMod::default()),
        t::TABLE_MOD => Message::TableMod(TableMod::default()),
        t::MULTIPART_REQUEST | t::MULTIPART_REPLY => sample_multipart(ty),
        t::BARRIER_REQUEST => Message::BarrierRequest,
        t::BARRIER_REPLY => Message::BarrierReply,
        t::QUEUE_GET_CONFIG_REQUEST => {
            Message::QueueGetConfigRequest(QueueGetConfigRequest::default())
        }
        t::QUEUE_GET_CONFIG_REPLY => Message::QueueGetConfigReply(QueueGetConfigReply::default()),
        t::ROLE_REQUEST => Message::RoleRequest(RoleMsg::default()),
        t::ROLE_REPLY => Message::RoleReply(RoleMsg::default()),
        t::GET_ASYNC_REQUEST => Message::GetAsyncRequest,
        t::GET_ASYNC_REPLY => Message::GetAsyncReply(AsyncConfig::default()),
        t::SET_ASYNC => Message::SetAsync(AsyncConfig::default()),
        _ => Message::MeterMod(MeterMod::default()),
    }
}

fn sample_multipart(ty: u8) -> Message {
    use crate::multipart::{MultipartReplyBody, MultipartRequestBody};
    if ty == msg_type::MULTIPART_REQUEST {
        Message::MultipartRequest(MultipartRequest { flags: 0, body: MultipartRequestBody::Desc })
    } else {
        Message::MultipartReply(MultipartReply {
            flags: 0,
            body: MultipartReplyBody::Desc(Default::default()),
        })
    }
}

#[test]
fn samples_round_trip() {
    for ty in 0..=msg_type::MAX {
        let m = sample(ty);
        assert_eq!(Message::parse(&m.encode(ty.into())), Ok((u32::from(ty), m)));
    }
}

// ---------------------------------------------------------------------------
// Property tests

use crate::oxm::arb_match;

fn arb_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

fn arb_hello() -> impl Strategy<Value = Hello> {
    let elem = prop_oneof![
        proptest::collection::vec(any::<u32>(), 0..10).prop_map(HelloElem::VersionBitmap),
        (
            any::<u16>().prop_filter("not a bitmap", |t| *t != hello_elem_type::VERSIONBITMAP),
            arb_bytes(20)
        )
            .prop_map(|(ty, data)| HelloElem::Unknown { ty, data }),
    ];
    proptest::collection::vec(elem, 0..4).prop_map(|elements| Hello { elements })
}

fn arb_error() -> impl Strategy<Value = ErrorMsg> {
    prop_oneof![
        (0u16..0xffff, any::<u16>(), arb_bytes(80)).prop_map(|(ty, code, data)| {
            ErrorMsg::Standard { code: ErrorCode::new(ty, code), data }
        }),
        (any::<u16>(), any::<u32>(), arb_bytes(80)).prop_map(|(exp_type, experimenter, data)| {
            ErrorMsg::Experimenter { exp_type, experimenter, data }
        }),
    ]
}

fn arb_config() -> impl Strategy<Value = SwitchConfig> {
    (any::<u16>(), any::<u16>())
        .prop_map(|(flags, miss_send_len)| SwitchConfig { flags, miss_send_len })
}

fn arb_role() -> impl Strategy<Value = RoleMsg> {
    (any::<u32>(), any::<u64>()).prop_map(|(role, generation_id)| RoleMsg { role, generation_id })
}

fn arb_async() -> impl Strategy<Value = AsyncConfig> {
    any::<[u32; 6]>().prop_map(|w| AsyncConfig {
        packet_in_mask: [w[0], w[1]],
        port_status_mask: [w[2], w[3]],
        flow_removed_mask: [w[4], w[5]],
    })
}

fn arb_packet_in() -> impl Strategy<Value = PacketIn> {
    (any::<(u32, u16, u8, u8, u64)>(), arb_match(), arb_bytes(100)).prop_map(
        |((buffer_id, total_len, reason, table_id, cookie), m, data)| PacketIn {
            buffer_id,
            total_len,
            reason,
            table_id,
            cookie,
            r#match: m,
            data,
        },
    )
}

fn arb_flow_removed() -> impl Strategy<Value = FlowRemoved> {
    (any::<(u64, u16, u8, u8, u32, u32)>(), any::<(u16, u16, u64, u64)>(), arb_match()).prop_map(
        |(
            (cookie, priority, reason, table_id, duration_sec, duration_nsec),
            (idle, hard, pc, bc),
            m,
        )| FlowRemoved {
            cookie,
            priority,
            reason,
            table_id,
            duration_sec,
            duration_nsec,
            idle_timeout: idle,
            hard_timeout: hard,
            packet_count: pc,
            byte_count: bc,
            r#match: m,
        },
    )
}

fn arb_packet_out() -> impl Strategy<Value = PacketOut> {
    (
        any::<(u32, u32)>(),
        proptest::collection::vec(crate::action::arb_action(), 0..4),
        arb_bytes(64),
    )
        .prop_map(|((buffer_id, in_port), actions, data)| PacketOut {
            buffer_id,
            in_port,
            actions,
            data,
        })
}

fn arb_flow_mod() -> impl Strategy<Value = FlowMod> {
    (
        any::<(u64, u64, u8, u8, u16, u16)>(),
        any::<(u16, u32, u32, u32, u16)>(),
        arb_match(),
        proptest::collection::vec(crate::instruction::arb_instruction(), 0..4),
    )
        .prop_map(
            |(
                (cookie, cookie_mask, table_id, command, idle_timeout, hard_timeout),
                (priority, buffer_id, out_port, out_group, flags),
                m,
                instructions,
            )| FlowMod {
                cookie,
                cookie_mask,
                table_id,
                command,
                idle_timeout,
                hard_timeout,
                priority,
                buffer_id,
                out_port,
                out_group,
                flags,
                r#match: m,
                instructions,
            },
        )
}

fn arb_group_mod() -> impl Strategy<Value = GroupMod> {
    (
        any::<u16>(),
        crate::group::arb_group_type(),
        any::<u32>(),
        proptest::collection::vec(crate::group::arb_bucket(), 0..4),
    )
        .prop_map(|(command, group_type, group_id, buckets)| GroupMod {
            command,
            group_type,
            group_id,
            buckets,
        })
}

fn arb_meter_mod() -> impl Strategy<Value = MeterMod> {
    (any::<(u16, u16, u32)>(), proptest::collection::vec(crate::meter::arb_meter_band(), 0..4))
        .prop_map(|((command, flags, meter_id), bands)| MeterMod {
            command,
            flags,
            meter_id,
            bands,
        })
}

fn arb_port_mod() -> impl Strategy<Value = PortMod> {
    (any::<(u32, [u8; 6], u32, u32, u32)>()).prop_map(
        |(port_no, hw_addr, config, mask, advertise)| PortMod {
            port_no,
            hw_addr,
            config,
            mask,
            advertise,
        },
    )
}

fn arb_queue_reply() -> impl Strategy<Value = QueueGetConfigReply> {
    (any::<u32>(), proptest::collection::vec(crate::queue::arb_packet_queue(), 0..4))
        .prop_map(|(port, queues)| QueueGetConfigReply { port, queues })
}

/// A generated value of every message type.
fn arb_message() -> impl Strategy<Value = Message> {
    prop_oneof![
        arb_hello().prop_map(Message::Hello),
        arb_error().prop_map(Message::Error),
        arb_bytes(64).prop_map(Message::EchoRequest),
        arb_bytes(64).prop_map(Message::EchoReply),
        (any::<(u32, u32)>(), arb_bytes(64)).prop_map(|((experimenter, exp_type), data)| {
            Message::Experimenter(ExperimenterMsg { experimenter, exp_type, data })
        }),
        Just(Message::FeaturesRequest),
        any::<(u64, u32, u8, u8, u32, u32)>().prop_map(|(d, nb, nt, aux, caps, res)| {
            Message::FeaturesReply(FeaturesReply {
                datapath_id: d,
                n_buffers: nb,
                n_tables: nt,
                auxiliary_id: aux,
                capabilities: caps,
                reserved: res,
            })
        }),
        Just(Message::GetConfigRequest),
        arb_config().prop_map(Message::GetConfigReply),
        arb_config().prop_map(Message::SetConfig),
        arb_packet_in().prop_map(Message::PacketIn),
        arb_flow_removed().prop_map(Message::FlowRemoved),
        (any::<u8>(), crate::port::arb_port())
            .prop_map(|(reason, desc)| Message::PortStatus(PortStatus { reason, desc })),
        arb_packet_out().prop_map(Message::PacketOut),
        arb_flow_mod().prop_map(Message::FlowMod),
        arb_group_mod().prop_map(Message::GroupMod),
        arb_port_mod().prop_map(Message::PortMod),
        any::<(u8, u32)>()
            .prop_map(|(table_id, config)| Message::TableMod(TableMod { table_id, config })),
        crate::multipart::arb_multipart_request().prop_map(Message::MultipartRequest),
        crate::multipart::arb_multipart_reply().prop_map(Message::MultipartReply),
        Just(Message::BarrierRequest),
        Just(Message::BarrierReply),
        any::<u32>()
            .prop_map(|port| Message::QueueGetConfigRequest(QueueGetConfigRequest { port })),
        arb_queue_reply().prop_map(Message::QueueGetConfigReply),
        arb_role().prop_map(Message::RoleRequest),
        arb_role().prop_map(Message::RoleReply),
        Just(Message::GetAsyncRequest),
        arb_async().prop_map(Message::GetAsyncReply),
        arb_async().prop_map(Message::SetAsync),
        arb_meter_mod().prop_map(Message::MeterMod),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn round_trip(m in arb_message(), xid in any::<u32>()) {
        let bytes = m.encode(xid);
        prop_assert_eq!(frame(&bytes), Some(Ok(bytes.len())));
        prop_assert_eq!(usize::from(u16::from_be_bytes([bytes[2], bytes[3]])), bytes.len());
        prop_assert_eq!(Message::parse(&bytes), Ok((xid, m)));
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in arb_bytes(300)) {
        let _ = Message::parse(&b);
        let _ = frame(&b);
    }

    #[test]
    fn arbitrary_bodies_behind_valid_headers_never_panic(
        version in prop_oneof![Just(4u8), any::<u8>()],
        ty in 0u8..=31,
        body in arb_bytes(300),
    ) {
        let b = msg_v(version, ty, &body);
        let _ = Message::parse(&b);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// The fuzz oracle holds on mutated encodings of valid messages: flip,
    /// overwrite, truncate or extend bytes (keeping the header length
    /// consistent half of the time so the body decoders are reached).
    #[test]
    fn fuzz_oracle_on_mutated_messages(
        m in arb_message(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in any::<prop::sample::Index>(),
        mode in 0u8..4,
        fix_len in any::<bool>(),
    ) {
        let mut b = m.encode(7);
        for (i, v) in &edits {
            let i = i.index(b.len());
            if i >= 4 || !fix_len {
                b[i] = *v;
            }
        }
        match mode {
            0 => {}
            1 => b.truncate(cut.index(b.len() + 1)),
            2 => b.extend_from_slice(&[0u8; 8][..cut.index(9)]),
            _ => b.extend(edits.iter().map(|e| e.1)),
        }
        if fix_len && b.len() >= 4 && b.len() <= 0xffff {
            let n = b.len() as u16;
            patch_u16(&mut b, 2, n);
        }
        fuzz_one(&b);
    }

    #[test]
    fn fuzz_oracle_on_arbitrary_bodies(
        version in prop_oneof![Just(4u8), any::<u8>()],
        ty in 0u8..=31,
        body in arb_bytes(200),
    ) {
        fuzz_one(&msg_v(version, ty, &body));
    }
}
