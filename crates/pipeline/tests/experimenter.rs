//! Experimenter objects through the pipeline's registry
//! (`sluice_pipeline::extension`, `docs/EXPERIMENTER.md`): every kind a
//! controller can send, for an experimenter id nobody registered (the
//! errors the switch always answered, identical with an empty registry),
//! for sluice's own id (its extension's verdicts and the probe), and for
//! an extension a test registers (its verdicts, its replies, what an
//! accepted object does).

use sluice_ofp::action::Action;
use sluice_ofp::consts::{port_no, OFP_NO_BUFFER, SLUICE_EXPERIMENTER_ID};
use sluice_ofp::error::{ErrorCode, Result};
use sluice_ofp::experimenter::{Extension, Kind, Payload, Registry};
use sluice_ofp::group::{Bucket, GroupType};
use sluice_ofp::instruction::Instruction;
use sluice_ofp::message::{
    flow_mod_command as fc, group_mod_command as gc, meter_mod_command as mc, ErrorMsg,
    ExperimenterMsg, FlowMod, GroupMod, Message, MeterMod, PacketOut,
};
use sluice_ofp::meter::MeterBand;
use sluice_ofp::multipart::{
    FlowStatsRequest, MultipartExperimenter, MultipartReplyBody, MultipartRequest,
    MultipartRequestBody,
};
use sluice_ofp::oxm::{FieldBytes, FieldId, Match, Oxm};
use sluice_pipeline::extension::{msg_type, probe_reply_data};
use sluice_pipeline::{Config, Outgoing, Pipeline};
use std::sync::Arc;

mod common;

const NICIRA: u32 = 0x2320;
const TEST_EXP: u32 = 0x00ab_cdef;

fn pipeline(cfg: Config) -> Pipeline {
    let mut p = Pipeline::new(cfg);
    common::add_ports(&mut p, &[1, 2]);
    p
}

fn handle(p: &mut Pipeline, msg: &Message) -> Vec<Outgoing> {
    let raw = msg.encode(7);
    p.handle(7, msg, &raw, &mut |_: u32, _: Option<u32>, _: &[u8]| {})
}

/// The error code of the only reply, if it is an error.
fn error_of(p: &mut Pipeline, msg: &Message) -> Option<ErrorCode> {
    let out = handle(p, msg);
    match out.as_slice() {
        [Outgoing { xid: 7, msg: Message::Error(ErrorMsg::Standard { code, .. }) }] => Some(*code),
        [] => None,
        other => panic!("unexpected replies {other:?}"),
    }
}

fn out1() -> Action {
    Action::Output { port: 1, max_len: 0 }
}

fn flow_add(m: Vec<Oxm>, instructions: Vec<Instruction>) -> Message {
    Message::FlowMod(FlowMod {
        command: fc::ADD,
        priority: 10,
        buffer_id: OFP_NO_BUFFER,
        out_port: port_no::ANY,
        out_group: sluice_ofp::consts::group_id::ANY,
        r#match: Match { oxms: m },
        instructions,
        ..FlowMod::default()
    })
}

fn apply(actions: Vec<Action>) -> Vec<Instruction> {
    vec![Instruction::ApplyActions(actions)]
}

fn exp_action(experimenter: u32) -> Action {
    // A subtype (u16) and padding to 8 bytes.
    Action::Experimenter { experimenter, data: vec![0, 9, 0, 0, 0, 0] }
}

fn exp_oxm(experimenter: u32) -> Oxm {
    Oxm::Experimenter { experimenter, field: 3, has_mask: false, payload: vec![1, 2, 3, 4] }
}

fn exp_instruction(experimenter: u32) -> Instruction {
    Instruction::Experimenter { experimenter, data: vec![0, 9, 0, 0] }
}

fn set_exp_field(experimenter: u32) -> Action {
    Action::SetField(exp_oxm(experimenter))
}

fn eth_type_ip() -> Oxm {
    Oxm::Basic { field: FieldId::EthType, value: FieldBytes::from_u128(0x0800, 2), mask: None }
}

/// One message of every kind that carries an experimenter object of
/// `exp`, with the object's kind.
fn every_kind(exp: u32) -> Vec<(&'static str, Message)> {
    vec![
        (
            "message",
            Message::Experimenter(ExperimenterMsg { experimenter: exp, exp_type: 9, data: vec![] }),
        ),
        (
            "multipart",
            Message::MultipartRequest(MultipartRequest {
                flags: 0,
                body: MultipartRequestBody::Experimenter(MultipartExperimenter {
                    experimenter: exp,
                    exp_type: 9,
                    data: vec![],
                }),
            }),
        ),
        ("flow-mod action", flow_add(vec![], apply(vec![exp_action(exp), out1()]))),
        (
            "flow-mod write action",
            flow_add(vec![], vec![Instruction::WriteActions(vec![exp_action(exp)])]),
        ),
        ("flow-mod set-field", flow_add(vec![eth_type_ip()], apply(vec![set_exp_field(exp)]))),
        ("flow-mod instruction", flow_add(vec![], vec![exp_instruction(exp)])),
        ("flow-mod match", flow_add(vec![eth_type_ip(), exp_oxm(exp)], apply(vec![out1()]))),
        (
            "flow stats match",
            Message::MultipartRequest(MultipartRequest {
                flags: 0,
                body: MultipartRequestBody::Flow(FlowStatsRequest {
                    table_id: 0xff,
                    out_port: port_no::ANY,
                    out_group: sluice_ofp::consts::group_id::ANY,
                    cookie: 0,
                    cookie_mask: 0,
                    match_: Match { oxms: vec![exp_oxm(exp)] },
                }),
            }),
        ),
        (
            "packet-out action",
            Message::PacketOut(PacketOut {
                buffer_id: OFP_NO_BUFFER,
                in_port: port_no::CONTROLLER,
                actions: vec![exp_action(exp)],
                data: vec![0; 64],
            }),
        ),
        (
            "group bucket action",
            Message::GroupMod(GroupMod {
                command: gc::ADD,
                group_type: GroupType::All,
                group_id: 1,
                buckets: vec![Bucket {
                    weight: 0,
                    watch_port: port_no::ANY,
                    watch_group: sluice_ofp::consts::group_id::ANY,
                    actions: vec![exp_action(exp)],
                }],
            }),
        ),
        (
            "meter band",
            Message::MeterMod(MeterMod {
                command: mc::ADD,
                flags: sluice_ofp::meter::flags::KBPS,
                meter_id: 1,
                bands: vec![MeterBand::Experimenter {
                    rate: 100,
                    burst_size: 0,
                    experimenter: exp,
                    data: vec![0, 9, 0, 0],
                }],
            }),
        ),
    ]
}

#[test]
fn unknown_experimenter_gets_the_errors_it_always_got() {
    let want = [
        ErrorCode::BRC_BAD_EXPERIMENTER,
        ErrorCode::BRC_BAD_EXPERIMENTER,
        ErrorCode::BAC_BAD_EXPERIMENTER,
        ErrorCode::BAC_BAD_EXPERIMENTER,
        ErrorCode::BAC_BAD_SET_TYPE,
        ErrorCode::BIC_BAD_EXPERIMENTER,
        ErrorCode::BMC_BAD_FIELD,
        ErrorCode::BMC_BAD_FIELD,
        ErrorCode::BAC_BAD_EXPERIMENTER,
        ErrorCode::BAC_BAD_EXPERIMENTER,
        ErrorCode::MMFC_BAD_BAND,
    ];
    let empty = Config { extensions: Arc::new(Registry::new()), ..Config::default() };
    for exp in [NICIRA, 0x4f4e_4600, TEST_EXP] {
        let mut default = pipeline(Config::default());
        let mut bare = pipeline(empty.clone());
        for ((what, msg), code) in every_kind(exp).into_iter().zip(want) {
            assert_eq!(error_of(&mut default, &msg), Some(code), "{what} of {exp:#x}");
            // The whole reply (error data included) is what a switch with
            // no extension at all answers.
            assert_eq!(handle(&mut default, &msg), handle(&mut bare, &msg), "{what}");
        }
    }
}

#[test]
fn sluice_id_with_unknown_subtypes_gets_the_extensions_errors() {
    let want = [
        ErrorCode::BRC_BAD_EXP_TYPE,
        ErrorCode::BRC_BAD_EXP_TYPE,
        ErrorCode::BAC_BAD_EXP_TYPE,
        ErrorCode::BAC_BAD_EXP_TYPE,
        ErrorCode::BMC_BAD_FIELD,
        ErrorCode::BIC_BAD_EXP_TYPE,
        ErrorCode::BMC_BAD_FIELD,
        ErrorCode::BMC_BAD_FIELD,
        ErrorCode::BAC_BAD_EXP_TYPE,
        ErrorCode::BAC_BAD_EXP_TYPE,
        ErrorCode::MMFC_BAD_BAND,
    ];
    let mut p = pipeline(Config::default());
    for ((what, msg), code) in every_kind(SLUICE_EXPERIMENTER_ID).into_iter().zip(want) {
        assert_eq!(error_of(&mut p, &msg), Some(code), "{what}");
    }
    // A probe reply, a maps report (the switch sends those) and DUMP_MAP
    // (a multipart, not a message) are not messages the switch takes; the
    // filter-program messages are, and an empty body is too short for
    // each (their own tests: `filterprog.rs`).
    for (t, want) in [
        (msg_type::PROBE_REPLY, ErrorCode::BRC_BAD_EXP_TYPE),
        (msg_type::MAPS_REPORT, ErrorCode::BRC_BAD_EXP_TYPE),
        (msg_type::DUMP_MAP, ErrorCode::BRC_BAD_EXP_TYPE),
        (msg_type::LOAD_FILTER_PROG, ErrorCode::BRC_BAD_LEN),
        (msg_type::UNLOAD_FILTER_PROG, ErrorCode::BRC_BAD_LEN),
        (msg_type::UPDATE_MAP, ErrorCode::BRC_BAD_LEN),
    ] {
        let data = if t == msg_type::PROBE_REPLY { probe_reply_data(&[]) } else { vec![] };
        let m = Message::Experimenter(ExperimenterMsg {
            experimenter: SLUICE_EXPERIMENTER_ID,
            exp_type: t,
            data,
        });
        assert_eq!(error_of(&mut p, &m), Some(want), "subtype {t}");
    }
    assert!(p.tables().iter().all(|t| t.entries().is_empty()));
}

#[test]
fn probe_is_answered_with_version_and_subtypes() {
    let mut p = pipeline(Config::default());
    let req = Message::Experimenter(ExperimenterMsg {
        experimenter: SLUICE_EXPERIMENTER_ID,
        exp_type: msg_type::PROBE_REQUEST,
        data: b"hi".to_vec(),
    });
    let out = handle(&mut p, &req);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].xid, 7);
    #[rustfmt::skip]
    let want: Vec<u8> = vec![
        0x04, 0x04, 0x00, 0x52, 0x00, 0x00, 0x00, 0x07, // ofp_header: v1.3, EXPERIMENTER, len 82, xid 7
        0x53, 0x4c, 0x49, 0x43,                         // experimenter "SLIC"
        0x00, 0x00, 0x00, 0x01,                         // exp_type PROBE_REPLY
        0x00, 0x01,                                     // extension version 1
        0x00, 0x0f,                                     // fifteen supported subtypes:
        0x00, 0x00, 0x00, 0x00,                         //   message, PROBE_REQUEST
        0x00, 0x00, 0x00, 0x02,                         //   message, LOAD_FILTER_PROG
        0x00, 0x00, 0x00, 0x03,                         //   message, UNLOAD_FILTER_PROG
        0x00, 0x00, 0x00, 0x04,                         //   message, UPDATE_MAP
        0x00, 0x01, 0x00, 0x05,                         //   multipart, DUMP_MAP
        0x00, 0x02, 0x00, 0x00,                         //   action, pof_set
        0x00, 0x02, 0x00, 0x01,                         //   action, pof_modify
        0x00, 0x02, 0x00, 0x02,                         //   action, pof_add
        0x00, 0x02, 0x00, 0x03,                         //   action, pof_del
        0x00, 0x02, 0x00, 0x04,                         //   action, pof_checksum
        0x00, 0x02, 0x00, 0x05,                         //   action, pof_write_metadata
        0x00, 0x02, 0x00, 0x10,                         //   action, send_maps
        0x00, 0x04, 0x00, 0x00,                         //   OXM field, pof
        0x00, 0x04, 0x00, 0x10,                         //   OXM field, filter_prog
        0x00, 0x04, 0x00, 0x11,                         //   OXM field, pcap_filter
        b'h', b'i',                                     // the request's data
    ];
    assert_eq!(out[0].msg.encode(out[0].xid), want);
    // Empty data: the same without the echo.
    let req = Message::Experimenter(ExperimenterMsg {
        experimenter: SLUICE_EXPERIMENTER_ID,
        exp_type: msg_type::PROBE_REQUEST,
        data: vec![],
    });
    let out = handle(&mut p, &req);
    let mut short = want[..80].to_vec();
    short[3] = 80;
    assert_eq!(out[0].msg.encode(7), short);
}

#[test]
fn other_experimenter_message_is_bad_experimenter() {
    let mut p = pipeline(Config::default());
    for exp in [0, NICIRA, SLUICE_EXPERIMENTER_ID + 1] {
        let m = Message::Experimenter(ExperimenterMsg {
            experimenter: exp,
            exp_type: msg_type::PROBE_REQUEST,
            data: vec![],
        });
        assert_eq!(error_of(&mut p, &m), Some(ErrorCode::BRC_BAD_EXPERIMENTER), "{exp:#x}");
    }
}

/// A test extension: subtype 1 (first data byte of actions and
/// instructions, the field number of OXMs, `exp_type` of messages) is
/// accepted, 2 is refused with `OFPBAC_BAD_ARGUMENT`, anything else is the
/// kind's unknown-subtype error.
struct Test;

impl Test {
    fn subtype(p: &Payload<'_>) -> u32 {
        match p.kind {
            Kind::Action | Kind::Instruction | Kind::MeterBand => {
                p.data.first().copied().unwrap_or(0).into()
            }
            Kind::Oxm => p.oxm_field().into(),
            _ => p.exp_type,
        }
    }
}

impl Extension for Test {
    fn experimenter(&self) -> u32 {
        TEST_EXP
    }
    fn name(&self) -> &str {
        "test"
    }
    fn check(&self, p: &Payload<'_>) -> Result<String> {
        match Self::subtype(p) {
            1 => Ok(format!("test({:?})", p.kind)),
            2 => Err(ErrorCode::BAC_BAD_ARGUMENT),
            _ => Err(p.kind.unknown_exp_type()),
        }
    }
    fn handle_message(&self, p: &Payload<'_>) -> Result<Vec<Message>> {
        // Two replies, to show they keep their order.
        Ok((0..2)
            .map(|i| {
                Message::Experimenter(ExperimenterMsg {
                    experimenter: TEST_EXP,
                    exp_type: 100 + i,
                    data: p.data.to_vec(),
                })
            })
            .collect())
    }
    fn handle_multipart(&self, p: &Payload<'_>) -> Result<MultipartExperimenter> {
        Ok(MultipartExperimenter { experimenter: TEST_EXP, exp_type: 5, data: p.data.to_vec() })
    }
}

fn with_test() -> Pipeline {
    let mut cfg = Config::default();
    assert!(cfg.register(Box::new(Test)).is_ok());
    assert!(cfg.register(Box::new(Test)).is_err(), "an id is registered once");
    pipeline(cfg)
}

#[test]
fn registered_extension_decides() {
    let mut p = with_test();
    let act =
        |sub: u8| Action::Experimenter { experimenter: TEST_EXP, data: vec![sub, 0, 0, 0, 0, 0] };
    let ins =
        |sub: u8| Instruction::Experimenter { experimenter: TEST_EXP, data: vec![sub, 0, 0, 0] };
    let oxm = |field: u8| Oxm::Experimenter {
        experimenter: TEST_EXP,
        field,
        has_mask: false,
        payload: vec![7],
    };
    // Its errors are the errors sent.
    for (m, code) in [
        (flow_add(vec![], apply(vec![act(2)])), ErrorCode::BAC_BAD_ARGUMENT),
        (flow_add(vec![], apply(vec![act(3)])), ErrorCode::BAC_BAD_EXP_TYPE),
        (flow_add(vec![], vec![ins(3)]), ErrorCode::BIC_BAD_EXP_TYPE),
        (flow_add(vec![oxm(2)], vec![]), ErrorCode::BAC_BAD_ARGUMENT),
        (flow_add(vec![oxm(3)], vec![]), ErrorCode::BMC_BAD_FIELD),
        (
            flow_add(vec![eth_type_ip()], apply(vec![Action::SetField(oxm(2))])),
            ErrorCode::BAC_BAD_ARGUMENT,
        ),
    ] {
        assert_eq!(error_of(&mut p, &m), Some(code));
    }
    assert!(p.tables()[0].entries().is_empty());

    // An accepted match field is still refused: the engine cannot match
    // on it yet, and dropping it would widen the rule.
    let m = flow_add(vec![eth_type_ip(), oxm(1)], vec![]);
    assert_eq!(error_of(&mut p, &m), Some(ErrorCode::BMC_BAD_FIELD));
    assert!(p.tables()[0].entries().is_empty());

    // Accepted actions and instructions: installed, kept verbatim.
    let m = flow_add(
        vec![eth_type_ip()],
        vec![ins(1), Instruction::ApplyActions(vec![act(1), Action::SetField(oxm(1)), out1()])],
    );
    assert_eq!(error_of(&mut p, &m), None);
    let e = &p.tables()[0].entries()[0];
    assert_eq!(e.r#match.oxms, vec![eth_type_ip()]);
    assert_eq!(e.instructions.len(), 2);
    // Accepted actions do nothing yet: the frame is forwarded by the output.
    let mut out = Vec::new();
    let frame = common::udp_frame(1, 2, [10, 0, 0, 1], [10, 0, 0, 2], 1, 2, &[0; 20]);
    p.process(2, &frame, &mut |port: u32, _: Option<u32>, f: &[u8]| out.push((port, f.to_vec())));
    assert_eq!(out, vec![(1, frame)]);

    // An accepted band is still refused by the meter table (no band runs
    // experimenter bands); a refused one gets the extension's error.
    let mm = |sub: u8| {
        Message::MeterMod(MeterMod {
            command: mc::ADD,
            flags: sluice_ofp::meter::flags::KBPS,
            meter_id: 1,
            bands: vec![MeterBand::Experimenter {
                rate: 1,
                burst_size: 0,
                experimenter: TEST_EXP,
                data: vec![sub, 0, 0, 0],
            }],
        })
    };
    assert_eq!(error_of(&mut p, &mm(2)), Some(ErrorCode::BAC_BAD_ARGUMENT));
    assert_eq!(error_of(&mut p, &mm(1)), Some(ErrorCode::MMFC_BAD_BAND));
}

#[test]
fn registered_extension_answers_messages_and_multiparts() {
    let mut p = with_test();
    let m = Message::Experimenter(ExperimenterMsg {
        experimenter: TEST_EXP,
        exp_type: 1,
        data: vec![5],
    });
    let out = handle(&mut p, &m);
    let types: Vec<(u32, u32)> = out
        .iter()
        .map(|o| match &o.msg {
            Message::Experimenter(e) => (o.xid, e.exp_type),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(types, [(7, 100), (7, 101)]);
    let m = Message::Experimenter(ExperimenterMsg {
        experimenter: TEST_EXP,
        exp_type: 2,
        data: vec![],
    });
    assert_eq!(error_of(&mut p, &m), Some(ErrorCode::BAC_BAD_ARGUMENT));

    let req = |exp_type| {
        Message::MultipartRequest(MultipartRequest {
            flags: 0,
            body: MultipartRequestBody::Experimenter(MultipartExperimenter {
                experimenter: TEST_EXP,
                exp_type,
                data: vec![1, 2, 3],
            }),
        })
    };
    let out = handle(&mut p, &req(1));
    match out.as_slice() {
        [Outgoing { msg: Message::MultipartReply(r), .. }] => assert_eq!(
            r.body,
            MultipartReplyBody::Experimenter(MultipartExperimenter {
                experimenter: TEST_EXP,
                exp_type: 5,
                data: vec![1, 2, 3]
            })
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(error_of(&mut p, &req(3)), Some(ErrorCode::BRC_BAD_EXP_TYPE));
    // sluice's own extension is still there.
    let probe = Message::Experimenter(ExperimenterMsg {
        experimenter: SLUICE_EXPERIMENTER_ID,
        exp_type: msg_type::PROBE_REQUEST,
        data: vec![],
    });
    assert_eq!(handle(&mut p, &probe).len(), 1);
}
