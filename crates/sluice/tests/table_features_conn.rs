//! TABLE_FEATURES set requests over a real controller connection to
//! `sluice run` (pcap ports, loopback listener): the multipart reply with
//! the new tables, the refusals of malformed and unacceptable requests
//! with their OFPET_TABLE_FEATURES_FAILED codes (the length error comes
//! from the daemon's decoder, before the pipeline), a later query, and
//! FLOW_MODs held to the new description.

mod ofconn;
mod pcap_switch;

use ofconn::Conn;
use pcap_switch::PcapSwitch;

use sluice_ofp::action::Action;
use sluice_ofp::consts::OFP_NO_BUFFER;
use sluice_ofp::error::ErrorCode;
use sluice_ofp::instruction::{ty as it, Instruction};
use sluice_ofp::message::{flow_mod_command, FlowMod, Message};
use sluice_ofp::multipart::table_features::OxmId;
use sluice_ofp::multipart::table_features::{FeatureId, TableFeatureProp, TableFeatures};
use sluice_ofp::multipart::{MultipartReplyBody, MultipartRequest, MultipartRequestBody};
use sluice_ofp::oxm::{FieldId, Match, Oxm, OxmHeader};

fn code_of(m: &[u8]) -> ErrorCode {
    assert_eq!(m[1], 1, "an OFPT_ERROR: {m:02x?}");
    ErrorCode { ty: u16::from_be_bytes([m[8], m[9]]), code: u16::from_be_bytes([m[10], m[11]]) }
}

fn tfm(xid: u32, body: Vec<TableFeatures>) -> Vec<u8> {
    Message::MultipartRequest(MultipartRequest {
        flags: 0,
        body: MultipartRequestBody::TableFeatures(body),
    })
    .encode(xid)
}

fn oxm(f: FieldId, mask: bool) -> OxmId {
    OxmId::new(OxmHeader::basic(f, mask))
}

/// Table 0 "classify" (in_port, eth_type; apply-actions and goto 2),
/// table 2 "out" (eth_dst; output only).
fn request() -> Vec<TableFeatures> {
    let ids = |v: &[u16]| v.iter().map(|&t| FeatureId::Type(t)).collect::<Vec<_>>();
    vec![
        TableFeatures {
            table_id: 0,
            name: "classify".into(),
            max_entries: 10,
            properties: vec![
                TableFeatureProp::Match(vec![
                    oxm(FieldId::InPort, false),
                    oxm(FieldId::EthType, false),
                ]),
                TableFeatureProp::Wildcards(vec![
                    oxm(FieldId::InPort, false),
                    oxm(FieldId::EthType, false),
                ]),
                TableFeatureProp::Instructions {
                    miss: false,
                    ids: ids(&[it::APPLY_ACTIONS, it::GOTO_TABLE]),
                },
                TableFeatureProp::NextTables { miss: false, tables: vec![2] },
                TableFeatureProp::ApplyActions { miss: false, ids: ids(&[0]) },
            ],
            ..TableFeatures::default()
        },
        TableFeatures {
            table_id: 2,
            name: "out".into(),
            max_entries: 10,
            properties: vec![
                TableFeatureProp::Match(vec![oxm(FieldId::EthDst, false)]),
                TableFeatureProp::Wildcards(vec![oxm(FieldId::EthDst, false)]),
                TableFeatureProp::Instructions { miss: false, ids: ids(&[it::APPLY_ACTIONS]) },
                TableFeatureProp::ApplyActions { miss: false, ids: ids(&[0]) },
            ],
            ..TableFeatures::default()
        },
    ]
}

/// The table features in the reply(ies) to `xid` (a reply may be split).
fn features_reply(c: &mut Conn, xid: u32) -> Vec<TableFeatures> {
    let mut out = Vec::new();
    loop {
        let m = c.reply_to(xid);
        let (_, msg) = Message::parse(&m).expect("a reply sluice_ofp parses");
        let Message::MultipartReply(r) = msg else { panic!("not a multipart reply: {msg:?}") };
        let MultipartReplyBody::TableFeatures(v) = r.body else { panic!("{:?}", r.body) };
        out.extend(v);
        if r.flags & 1 == 0 {
            return out;
        }
    }
}

fn flow_mod(table_id: u8, m: Vec<Oxm>, instructions: Vec<Instruction>) -> FlowMod {
    FlowMod {
        table_id,
        command: flow_mod_command::ADD,
        priority: 10,
        buffer_id: OFP_NO_BUFFER,
        out_port: sluice_ofp::consts::port_no::ANY,
        out_group: sluice_ofp::consts::group_id::ANY,
        r#match: Match::new(m),
        instructions,
        ..FlowMod::default()
    }
}

#[test]
fn table_features_set_over_a_connection() {
    let sw = PcapSwitch::start("tfm-conn");
    let mut c = Conn::open(sw.addr());

    // A flow before: the set request removes it.
    let fm = flow_mod(
        1,
        vec![],
        vec![Instruction::ApplyActions(vec![Action::Output { port: 2, max_len: 0 }])],
    );
    assert_eq!(c.send_then_barrier(&Message::FlowMod(fm).encode(1), 1), None);

    // Malformed: the first property's length 2 (below its header).
    let mut bad = tfm(2, request());
    assert_eq!(&bad[80..82], [0, 8], "the first property is MATCH");
    bad[82..84].copy_from_slice(&[0, 2]);
    c.send(&bad);
    assert_eq!(code_of(&c.reply_to(2)), ErrorCode::TFFC_BAD_LEN);
    // An unknown property type.
    let mut r = request();
    r[1].properties.push(TableFeatureProp::Unknown { ty: 0x77, data: vec![1, 2, 3] });
    c.send(&tfm(3, r));
    assert_eq!(code_of(&c.reply_to(3)), ErrorCode::TFFC_BAD_TYPE);
    // A next table pointing back.
    let mut r = request();
    r[1].properties.push(TableFeatureProp::NextTables { miss: false, tables: vec![0] });
    c.send(&tfm(4, r));
    assert_eq!(code_of(&c.reply_to(4)), ErrorCode::TFFC_BAD_ARGUMENT);
    // Table 255.
    let mut r = request();
    r[1].table_id = 255;
    c.send(&tfm(5, r));
    assert_eq!(code_of(&c.reply_to(5)), ErrorCode::TFFC_BAD_TABLE);

    // The good request: the reply is the new description.
    c.send(&tfm(6, request()));
    let reply = features_reply(&mut c, 6);
    let names: Vec<(u8, &str)> = reply.iter().map(|t| (t.table_id, t.name.as_str())).collect();
    assert_eq!(names, vec![(0, "classify"), (2, "out")]);
    // A query says the same.
    c.send(&tfm(7, vec![]));
    assert_eq!(features_reply(&mut c, 7), reply);

    // The flow in table 1 is gone with its table; table 1 takes no flows.
    let out2 = || vec![Instruction::ApplyActions(vec![Action::Output { port: 2, max_len: 0 }])];
    let e = c.send_then_barrier(&Message::FlowMod(flow_mod(1, vec![], out2())).encode(8), 8);
    assert_eq!(code_of(&e.expect("refused")), ErrorCode::FMFC_BAD_TABLE_ID);
    // A goto to table 1 from table 0: not a next table.
    let goto1 = vec![Instruction::GotoTable(1)];
    let e = c.send_then_barrier(&Message::FlowMod(flow_mod(0, vec![], goto1)).encode(9), 9);
    assert_eq!(code_of(&e.expect("refused")), ErrorCode::BIC_BAD_TABLE_ID);
    // A field table 2 does not match.
    let m = vec![Oxm::exact(FieldId::EthType, 0x0800)];
    let e = c.send_then_barrier(&Message::FlowMod(flow_mod(2, m, out2())).encode(10), 10);
    assert_eq!(code_of(&e.expect("refused")), ErrorCode::BMC_BAD_FIELD);
    // An action table 2 does not apply.
    let pop = vec![Instruction::ApplyActions(vec![Action::PopVlan])];
    let e = c.send_then_barrier(&Message::FlowMod(flow_mod(2, vec![], pop)).encode(11), 11);
    assert_eq!(code_of(&e.expect("refused")), ErrorCode::BAC_BAD_TYPE);
    // What the tables allow goes in.
    let goto2 = vec![Instruction::GotoTable(2)];
    let m = vec![Oxm::exact(FieldId::InPort, 1)];
    assert_eq!(c.send_then_barrier(&Message::FlowMod(flow_mod(0, m, goto2)).encode(12), 12), None);
    let m = vec![Oxm::exact(FieldId::EthDst, 2)];
    assert_eq!(c.send_then_barrier(&Message::FlowMod(flow_mod(2, m, out2())).encode(13), 13), None);
}
