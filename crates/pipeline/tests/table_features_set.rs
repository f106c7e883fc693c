//! TABLE_FEATURES set requests (`features.rs`): every refusal code of a
//! bad request, the state a good one leaves (tables removed, flows gone,
//! names and sizes taken, the reply equal to a later query), and every
//! FLOW_MOD refusal the new description causes, with a packet through the
//! reconfigured tables.

use sluice_ofp::error::ErrorCode;
use sluice_ofp::instruction::ty as it;
use sluice_ofp::message::{flow_mod_command as fc, ErrorMsg, Message, TableMod};
use sluice_ofp::multipart::table_features::{FeatureId, OxmId, TableFeatureProp, TableFeatures};
use sluice_ofp::multipart::{
    FlowStatsRequest, MultipartReplyBody, MultipartRequest, MultipartRequestBody,
};
use sluice_ofp::ofctl::{parse_flow, Usage};
use sluice_ofp::oxm::{FieldId, OxmHeader};
use sluice_ofp::port::Port;
use sluice_pipeline::features::oxm_id;
use sluice_pipeline::{Config, Outgoing, Pipeline};

const OUTPUT: u16 = 0;
const PUSH_VLAN: u16 = 17;
const POP_VLAN: u16 = 18;
const SET_FIELD: u16 = 25;

fn switch() -> Pipeline {
    let mut p =
        Pipeline::new(Config { n_tables: 8, max_flows_per_table: 1000, ..Config::default() });
    for n in 1..=3u32 {
        let port = Port {
            port_no: n,
            hw_addr: [0, 0, 0, 0, 0, n as u8],
            name: format!("p{n}"),
            ..Port::default()
        };
        p.ports_mut().add(port, 0);
    }
    p
}

fn send(p: &mut Pipeline, msg: Message) -> Vec<Outgoing> {
    let raw = msg.encode(7);
    p.handle(7, &msg, &raw, &mut |_: u32, _: Option<u32>, _: &[u8]| {})
}

fn tfm(body: Vec<TableFeatures>) -> Message {
    Message::MultipartRequest(MultipartRequest {
        flags: 0,
        body: MultipartRequestBody::TableFeatures(body),
    })
}

/// The features a reply carries, or the error code.
fn set(p: &mut Pipeline, body: Vec<TableFeatures>) -> Result<Vec<TableFeatures>, ErrorCode> {
    let mut out = Vec::new();
    for o in send(p, tfm(body)) {
        match o.msg {
            Message::MultipartReply(r) => match r.body {
                MultipartReplyBody::TableFeatures(v) => out.extend(v),
                other => panic!("unexpected reply {other:?}"),
            },
            Message::Error(ErrorMsg::Standard { code, .. }) => return Err(code),
            other => panic!("unexpected message {other:?}"),
        }
    }
    Ok(out)
}

fn query(p: &mut Pipeline) -> Vec<TableFeatures> {
    set(p, vec![]).expect("query")
}

fn ids(v: &[u16]) -> Vec<FeatureId> {
    v.iter().map(|&t| FeatureId::Type(t)).collect()
}

/// A two-table pipeline in the shape Faucet's GenericTFM sends: table 0
/// "vlan" matches in_port and vlan_vid (exact), pushes VLANs and goes to
/// table 3 "eth_dst" (masked eth_dst, wildcardable), which outputs.
fn two_tables() -> Vec<TableFeatures> {
    let t0 = TableFeatures {
        table_id: 0,
        name: "vlan".into(),
        max_entries: 4,
        config: 3,
        properties: vec![
            TableFeatureProp::Match(vec![
                oxm_id(FieldId::InPort, false),
                oxm_id(FieldId::VlanVid, false),
            ]),
            TableFeatureProp::Wildcards(vec![oxm_id(FieldId::VlanVid, false)]),
            TableFeatureProp::Instructions {
                miss: false,
                ids: ids(&[it::APPLY_ACTIONS, it::GOTO_TABLE]),
            },
            TableFeatureProp::NextTables { miss: false, tables: vec![3] },
            TableFeatureProp::ApplyActions { miss: false, ids: ids(&[PUSH_VLAN, SET_FIELD]) },
            TableFeatureProp::ApplySetfield {
                miss: false,
                ids: vec![oxm_id(FieldId::VlanVid, false)],
            },
            // The table-miss entry may only drop (no instructions).
            TableFeatureProp::Instructions { miss: true, ids: vec![] },
        ],
        ..TableFeatures::default()
    };
    let t3 = TableFeatures {
        table_id: 3,
        name: "eth_dst".into(),
        max_entries: 100,
        properties: vec![
            TableFeatureProp::Match(vec![
                oxm_id(FieldId::EthDst, true),
                oxm_id(FieldId::VlanVid, false),
            ]),
            TableFeatureProp::Wildcards(vec![
                oxm_id(FieldId::EthDst, true),
                oxm_id(FieldId::VlanVid, false),
            ]),
            TableFeatureProp::Instructions { miss: false, ids: ids(&[it::APPLY_ACTIONS]) },
            TableFeatureProp::ApplyActions { miss: false, ids: ids(&[OUTPUT, POP_VLAN]) },
        ],
        ..TableFeatures::default()
    };
    vec![t0, t3]
}

fn flow(p: &mut Pipeline, command: u8, text: &str) -> Result<(), ErrorCode> {
    let usage = match command {
        fc::ADD => Usage::Add,
        fc::MODIFY | fc::MODIFY_STRICT => Usage::Modify,
        _ => Usage::Delete,
    };
    let spec = parse_flow(text, usage).unwrap_or_else(|e| panic!("{}", e.render(text)));
    p.flow_mod(&spec.to_flow_mod(command))
}

fn add(p: &mut Pipeline, text: &str) -> Result<(), ErrorCode> {
    flow(p, fc::ADD, text)
}

#[test]
fn bad_requests_get_their_error_codes_and_change_nothing() {
    let mut p = switch();
    add(&mut p, "table=1,priority=5,ip,actions=output:2").unwrap();
    let before = query(&mut p);
    let with = |f: &dyn Fn(&mut Vec<TableFeatures>)| {
        let mut r = two_tables();
        f(&mut r);
        r
    };
    let cases: Vec<(&str, Vec<TableFeatures>, ErrorCode)> = vec![
        ("table 255", with(&|r| r[1].table_id = 255), ErrorCode::TFFC_BAD_TABLE),
        ("table past n_tables", with(&|r| r[1].table_id = 8), ErrorCode::TFFC_BAD_TABLE),
        ("table listed twice", with(&|r| r[1].table_id = 0), ErrorCode::TFFC_BAD_TABLE),
        ("no table 0", with(&|r| r[0].table_id = 1), ErrorCode::TFFC_BAD_TABLE),
        (
            "unknown property type",
            with(&|r| r[1].properties.push(TableFeatureProp::Unknown { ty: 0x42, data: vec![] })),
            ErrorCode::TFFC_BAD_TYPE,
        ),
        (
            "experimenter property",
            with(&|r| {
                r[1].properties.push(TableFeatureProp::Experimenter {
                    miss: false,
                    experimenter: 0x2320,
                    exp_type: 1,
                    data: vec![],
                })
            }),
            ErrorCode::TFFC_BAD_TYPE,
        ),
        (
            "metadata matched with metadata_match 0",
            with(&|r| {
                r[1].properties[0] = TableFeatureProp::Match(vec![oxm_id(FieldId::Metadata, true)])
            }),
            ErrorCode::TFFC_BAD_METADATA,
        ),
        (
            "write-metadata with metadata_write 0",
            with(&|r| {
                r[1].properties[2] =
                    TableFeatureProp::Instructions { miss: false, ids: ids(&[it::WRITE_METADATA]) }
            }),
            ErrorCode::TFFC_BAD_METADATA,
        ),
        (
            "next table backwards",
            with(&|r| {
                r[1].properties.push(TableFeatureProp::NextTables { miss: false, tables: vec![0] })
            }),
            ErrorCode::TFFC_BAD_ARGUMENT,
        ),
        (
            "next table to itself",
            with(&|r| {
                r[0].properties[3] = TableFeatureProp::NextTables { miss: false, tables: vec![0] }
            }),
            ErrorCode::TFFC_BAD_ARGUMENT,
        ),
        (
            "next table not listed",
            with(&|r| {
                r[0].properties[3] = TableFeatureProp::NextTables { miss: false, tables: vec![5] }
            }),
            ErrorCode::TFFC_BAD_ARGUMENT,
        ),
        (
            "property twice",
            with(&|r| r[1].properties.push(TableFeatureProp::Wildcards(vec![]))),
            ErrorCode::TFFC_BAD_ARGUMENT,
        ),
        (
            "unknown match field",
            with(&|r| {
                r[1].properties[0] =
                    TableFeatureProp::Match(vec![OxmId::new(OxmHeader::new(0x8000, 120, false, 4))])
            }),
            ErrorCode::TFFC_BAD_ARGUMENT,
        ),
        (
            "mask on a field that takes none",
            with(&|r| {
                r[1].properties[0] = TableFeatureProp::Match(vec![oxm_id(FieldId::InPort, true)])
            }),
            ErrorCode::TFFC_BAD_ARGUMENT,
        ),
        (
            "NXM field",
            with(&|r| {
                r[1].properties[0] =
                    TableFeatureProp::Match(vec![OxmId::new(OxmHeader::new(0x0001, 16, false, 8))])
            }),
            ErrorCode::TFFC_BAD_ARGUMENT,
        ),
        (
            "wildcard not a match field",
            with(&|r| {
                r[0].properties[1] =
                    TableFeatureProp::Wildcards(vec![oxm_id(FieldId::EthSrc, false)])
            }),
            ErrorCode::TFFC_BAD_ARGUMENT,
        ),
        (
            "set-field of in_port",
            with(&|r| {
                r[0].properties[5] = TableFeatureProp::ApplySetfield {
                    miss: false,
                    ids: vec![oxm_id(FieldId::InPort, false)],
                }
            }),
            ErrorCode::TFFC_BAD_ARGUMENT,
        ),
        (
            "unknown instruction",
            with(&|r| {
                r[1].properties[2] = TableFeatureProp::Instructions { miss: false, ids: ids(&[7]) }
            }),
            ErrorCode::TFFC_BAD_ARGUMENT,
        ),
        (
            "unknown action",
            with(&|r| {
                r[1].properties[3] = TableFeatureProp::ApplyActions { miss: true, ids: ids(&[99]) }
            }),
            ErrorCode::TFFC_BAD_ARGUMENT,
        ),
        (
            "max_entries above the limit",
            with(&|r| r[1].max_entries = 1001),
            ErrorCode::TFFC_BAD_ARGUMENT,
        ),
        ("config bits", with(&|r| r[1].config = 4), ErrorCode::TFFC_BAD_ARGUMENT),
    ];
    for (what, req, code) in cases {
        assert_eq!(set(&mut p, req), Err(code), "{what}");
        assert_eq!(query(&mut p), before, "{what}: a refused request changed the description");
        assert_eq!(p.tables()[1].len(), 1, "{what}: a refused request removed flows");
    }
    // The refusal names what was wrong.
    let mut r = two_tables();
    r[0].properties[3] = TableFeatureProp::NextTables { miss: false, tables: vec![5] };
    let e = p.set_table_features(&r).unwrap_err();
    assert!(e.why.contains("table 0") && e.why.contains("next table 5"), "{e}");
    // Under another front end's control graph (a P4 program's), the
    // tables are not OpenFlow's to reconfigure.
    p.set_graph(sluice_core::graph::Graph::tables(2)).expect("graph");
    assert_eq!(set(&mut p, two_tables()), Err(ErrorCode::TFFC_EPERM));
}

#[test]
fn a_good_request_replaces_the_tables_and_clears_flows() {
    let mut p = switch();
    add(&mut p, "table=0,priority=5,in_port=1,actions=output:2").unwrap();
    add(&mut p, "table=2,priority=5,in_port=1,send_flow_rem,actions=output:2").unwrap();
    p.take_async();
    let reply = set(&mut p, two_tables()).expect("accepted");
    // The reply is the new description, and a query says the same.
    assert_eq!(reply.iter().map(|t| t.table_id).collect::<Vec<_>>(), vec![0, 3]);
    assert_eq!(reply.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), vec!["vlan", "eth_dst"]);
    assert_eq!((reply[0].max_entries, reply[1].max_entries), (4, 100));
    assert_eq!(reply[0].config, 3);
    assert_eq!(query(&mut p), reply);
    // The regular properties as requested; the table-miss ones: the given
    // empty INSTRUCTIONS_MISS, and the regular list where none was given.
    let prop = |t: &TableFeatures, ty: u16| {
        t.properties.iter().find(|p| p.prop_type() == ty).cloned().expect("every property")
    };
    assert_eq!(
        prop(&reply[0], 0),
        TableFeatureProp::Instructions {
            miss: false,
            ids: ids(&[it::APPLY_ACTIONS, it::GOTO_TABLE])
        }
    );
    assert_eq!(prop(&reply[0], 1), TableFeatureProp::Instructions { miss: true, ids: vec![] });
    assert_eq!(prop(&reply[0], 3), TableFeatureProp::NextTables { miss: true, tables: vec![3] });
    assert_eq!(prop(&reply[1], 4), TableFeatureProp::WriteActions { miss: false, ids: vec![] });
    // Every flow is gone; the one that asked was reported.
    assert!(p.tables().iter().all(|t| t.is_empty()));
    let removed = p.take_async();
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert!(matches!(&removed[0], Message::FlowRemoved(f) if f.table_id == 2 && f.reason == 2));
    // Table stats list only the configured tables.
    let r = send(
        &mut p,
        Message::MultipartRequest(MultipartRequest { flags: 0, body: MultipartRequestBody::Table }),
    );
    let Message::MultipartReply(rep) = &r[0].msg else { panic!("{r:?}") };
    let MultipartReplyBody::Table(ts) = &rep.body else { panic!() };
    assert_eq!(ts.iter().map(|t| t.table_id).collect::<Vec<_>>(), vec![0, 3]);
    // A removed table is gone for table-mod and flow stats too.
    let r = send(&mut p, Message::TableMod(TableMod { table_id: 2, config: 0 }));
    assert!(
        matches!(&r[0].msg, Message::Error(ErrorMsg::Standard { code, .. }) if *code == ErrorCode::TMFC_BAD_TABLE),
        "{r:?}"
    );
    let fs = MultipartRequestBody::Flow(FlowStatsRequest {
        table_id: 2,
        out_port: sluice_ofp::consts::port_no::ANY,
        out_group: sluice_ofp::consts::group_id::ANY,
        ..FlowStatsRequest::default()
    });
    let r = send(&mut p, Message::MultipartRequest(MultipartRequest { flags: 0, body: fs }));
    assert!(
        matches!(&r[0].msg, Message::Error(ErrorMsg::Standard { code, .. }) if *code == ErrorCode::BRC_BAD_TABLE_ID),
        "{r:?}"
    );
    // A second request replaces the first (table 3 gone, table 1 new).
    let mut again = two_tables();
    again[1].table_id = 1;
    again[0].properties[3] = TableFeatureProp::NextTables { miss: false, tables: vec![1] };
    let reply = set(&mut p, again).expect("second request");
    assert_eq!(reply.iter().map(|t| t.table_id).collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(
        add(&mut p, "table=3,priority=1,actions=output:1"),
        Err(ErrorCode::FMFC_BAD_TABLE_ID)
    );
}

#[test]
fn flow_mods_must_keep_to_the_new_features() {
    let mut p = switch();
    set(&mut p, two_tables()).expect("accepted");
    let cases: &[(&str, ErrorCode)] = &[
        // Tables not listed do not exist.
        ("table=1,priority=1,actions=output:1", ErrorCode::FMFC_BAD_TABLE_ID),
        // A field table 0 does not match.
        ("table=0,priority=1,in_port=1,dl_src=00:00:00:00:00:01,actions=goto_table:3", ErrorCode::BMC_BAD_FIELD),
        // in_port may not be wildcarded in table 0.
        ("table=0,priority=1,dl_vlan=5,actions=goto_table:3", ErrorCode::BMC_BAD_WILDCARDS),
        // vlan_vid has no mask in table 3.
        ("table=3,priority=1,vlan_tci=0x1000/0x1000,actions=output:1", ErrorCode::BMC_BAD_MASK),
        // Instructions table 0 does not allow.
        ("table=0,priority=1,in_port=1,actions=goto_table:3,write_actions(output:1)", ErrorCode::BIC_UNSUP_INST),
        ("table=0,priority=1,in_port=1,actions=meter:1,goto_table:3", ErrorCode::BIC_UNSUP_INST),
        ("table=3,priority=1,actions=goto_table:4", ErrorCode::BIC_UNSUP_INST),
        // A goto to a table not in NEXT_TABLES (listed, and forward).
        ("table=0,priority=1,in_port=1,actions=goto_table:5", ErrorCode::BIC_BAD_TABLE_ID),
        // Actions table 0 does not apply, and set-fields it does not write.
        ("table=0,priority=1,in_port=1,actions=output:2", ErrorCode::BAC_BAD_TYPE),
        ("table=0,priority=1,in_port=1,actions=push_vlan:0x8100,set_field:00:00:00:00:00:01->eth_dst,goto_table:3", ErrorCode::BAC_BAD_SET_TYPE),
        ("table=3,priority=1,actions=push_vlan:0x8100,output:1", ErrorCode::BAC_BAD_TYPE),
        // The table-miss entry of table 0 may not have instructions.
        ("table=0,priority=0,actions=goto_table:3", ErrorCode::BIC_UNSUP_INST),
    ];
    for (text, code) in cases {
        assert_eq!(add(&mut p, text), Err(*code), "{text}");
    }
    // A modify is checked the same way; a delete only needs the table.
    assert_eq!(
        flow(&mut p, fc::MODIFY, "table=3,actions=push_vlan:0x8100,output:1"),
        Err(ErrorCode::BAC_BAD_TYPE)
    );
    assert_eq!(flow(&mut p, fc::DELETE, "table=1"), Err(ErrorCode::FMFC_BAD_TABLE_ID));
    assert_eq!(flow(&mut p, fc::DELETE, "table=3,dl_src=00:00:00:00:00:01"), Ok(()));

    // What the features allow is installed, and forwards.
    add(&mut p, "table=0,priority=0,actions=drop").unwrap();
    add(&mut p, "table=0,priority=10,in_port=1,vlan_tci=0x0000/0x1fff,actions=push_vlan:0x8100,set_field:4196->vlan_vid,goto_table:3").unwrap_or_else(|e| panic!("{e}"));
    add(
        &mut p,
        "table=3,priority=10,dl_vlan=100,dl_dst=00:00:00:00:00:02,actions=pop_vlan,output:2",
    )
    .unwrap();
    add(&mut p, "table=3,priority=5,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,actions=output:3")
        .unwrap();
    let frame = {
        let mut f = vec![0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend_from_slice(&[0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        f.resize(60, 0); // the minimum frame, as a pop_vlan leaves it
        f
    };
    let mut out = Vec::new();
    p.process(1, &frame, &mut |port: u32, _: Option<u32>, f: &[u8]| out.push((port, f.to_vec())));
    assert_eq!(out, vec![(2, frame.clone())]);
    // max_entries: table 0 holds 4.
    add(&mut p, "table=0,priority=10,in_port=2,vlan_tci=0x0000/0x1fff,actions=goto_table:3")
        .unwrap();
    add(&mut p, "table=0,priority=10,in_port=3,vlan_tci=0x0000/0x1fff,actions=goto_table:3")
        .unwrap();
    assert_eq!(
        add(&mut p, "table=0,priority=9,in_port=3,vlan_tci=0x0000/0x1fff,actions=goto_table:3"),
        Err(ErrorCode::FMFC_TABLE_FULL)
    );
}

#[test]
fn without_a_set_request_nothing_is_restricted() {
    let mut p = switch();
    let before = query(&mut p);
    assert_eq!(before.len(), 8);
    add(&mut p, "table=1,priority=1,dl_src=00:00:00:00:00:01,actions=meter:1,output:1")
        .map(|_| ())
        .or_else(|e| if e == ErrorCode::MMFC_UNKNOWN_METER { Ok(()) } else { Err(e) })
        .unwrap();
    add(&mut p, "table=7,priority=1,actions=output:1").unwrap();
}
