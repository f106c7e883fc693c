//! The P4Runtime server in-process, driven by the generated tonic client
//! over loopback: capabilities, pipelines, writes and reads of each match
//! kind, every error code, arbitration, packet-out and packet-in.

mod common;

use common::*;
use p4v1::field_match::FieldMatchType as F;
use p4v1::update::Type as U;
use sluice_p4rt::proto::p4::config::v1 as cfg;
use sluice_p4rt::proto::p4::v1 as p4v1;
use sluice_p4rt::proto::p4::v1::p4_runtime_client::P4RuntimeClient;
use tonic::transport::Channel;
use tonic::Code;

fn table_id(info: &cfg::P4Info, name: &str) -> u32 {
    info.tables
        .iter()
        .find(|t| t.preamble.as_ref().unwrap().name == name)
        .unwrap()
        .preamble
        .as_ref()
        .unwrap()
        .id
}

fn action_id(info: &cfg::P4Info, name: &str) -> u32 {
    info.actions
        .iter()
        .find(|t| t.preamble.as_ref().unwrap().name == name)
        .unwrap()
        .preamble
        .as_ref()
        .unwrap()
        .id
}

fn fwd(info: &cfg::P4Info, port: u8) -> Option<p4v1::TableAction> {
    Some(p4v1::TableAction {
        r#type: Some(p4v1::table_action::Type::Action(p4v1::Action {
            action_id: action_id(info, "I.fwd"),
            params: vec![p4v1::action::Param { param_id: 1, value: vec![port] }],
        })),
    })
}

fn exact(id: u32, v: &[u8]) -> p4v1::FieldMatch {
    p4v1::FieldMatch {
        field_id: id,
        field_match_type: Some(F::Exact(p4v1::field_match::Exact { value: v.to_vec() })),
    }
}

fn l2_entry(info: &cfg::P4Info, mac: u8, port: u8) -> p4v1::TableEntry {
    p4v1::TableEntry {
        table_id: table_id(info, "I.l2"),
        r#match: vec![exact(1, &[mac])],
        action: fwd(info, port),
        ..Default::default()
    }
}

fn acl_entry(info: &cfg::P4Info, prio: i32) -> p4v1::TableEntry {
    p4v1::TableEntry {
        table_id: table_id(info, "I.acl"),
        r#match: vec![
            p4v1::FieldMatch {
                field_id: 1,
                field_match_type: Some(F::Ternary(p4v1::field_match::Ternary {
                    value: vec![0x08, 0],
                    mask: vec![0xff, 0],
                })),
            },
            p4v1::FieldMatch {
                field_id: 2,
                field_match_type: Some(F::Range(p4v1::field_match::Range {
                    low: vec![1],
                    high: vec![0x10],
                })),
            },
            p4v1::FieldMatch {
                field_id: 3,
                field_match_type: Some(F::Optional(p4v1::field_match::Optional {
                    value: vec![0x0a],
                })),
            },
        ],
        action: fwd(info, 3),
        priority: prio,
        ..Default::default()
    }
}

fn entries(es: Vec<p4v1::Entity>) -> Vec<p4v1::TableEntry> {
    es.into_iter()
        .map(|e| match e.entity {
            Some(p4v1::entity::Entity::TableEntry(t)) => t,
            other => panic!("not a table entry: {other:?}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capabilities_and_pipeline_config() {
    let srv = start(None).await;
    let mut c = client(srv.addr).await;
    let caps = c.capabilities(p4v1::CapabilitiesRequest::default()).await.unwrap().into_inner();
    assert_eq!(caps.p4runtime_api_version, "1.5.0");
    // No pipeline yet.
    let e = c
        .get_forwarding_pipeline_config(p4v1::GetForwardingPipelineConfigRequest {
            device_id: DEVICE,
            response_type: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    let mut s = Stream::open(&mut c, 5).await;
    assert_eq!(s.next_arbitration().await, (Code::Ok as i32, 5));
    let src = std::fs::read(program("rt.p4")).unwrap();
    let set =
        |action: i32, source: Vec<u8>, election: u128| p4v1::SetForwardingPipelineConfigRequest {
            device_id: DEVICE,
            election_id: eid(election),
            action,
            config: Some(p4v1::ForwardingPipelineConfig {
                p4info: None,
                p4_device_config: source,
                cookie: Some(p4v1::forwarding_pipeline_config::Cookie { cookie: 77 }),
            }),
            ..Default::default()
        };
    use p4v1::set_forwarding_pipeline_config_request::Action as A;
    // A compile error names file:line:col.
    let bad = b"#include <v1model.p4>\ncontrol X() { apply { y = ; } }\n".to_vec();
    let e =
        c.set_forwarding_pipeline_config(set(A::VerifyAndCommit as i32, bad, 5)).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("p4_device_config.p4:2:"), "{}", e.message());
    // Not the primary.
    let e = c
        .set_forwarding_pipeline_config(set(A::VerifyAndCommit as i32, src.clone(), 4))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    // VERIFY loads nothing; VERIFY_AND_SAVE then COMMIT does.
    c.set_forwarding_pipeline_config(set(A::Verify as i32, src.clone(), 5)).await.unwrap();
    assert!(srv.device.pipeline().is_none());
    c.set_forwarding_pipeline_config(set(A::VerifyAndSave as i32, src.clone(), 5)).await.unwrap();
    assert!(srv.device.pipeline().is_none());
    c.set_forwarding_pipeline_config(set(A::Commit as i32, vec![], 5)).await.unwrap();
    let info = p4info(&mut c).await;
    assert_eq!(table_id(&info, "I.l2"), 42104749);
    // Each response type.
    use p4v1::get_forwarding_pipeline_config_request::ResponseType as T;
    for (ty, has_info, has_src) in [
        (T::All, true, true),
        (T::CookieOnly, false, false),
        (T::P4infoAndCookie, true, false),
        (T::DeviceConfigAndCookie, false, true),
    ] {
        let r = c
            .get_forwarding_pipeline_config(p4v1::GetForwardingPipelineConfigRequest {
                device_id: DEVICE,
                response_type: ty as i32,
            })
            .await
            .unwrap()
            .into_inner()
            .config
            .unwrap();
        assert_eq!(r.p4info.is_some(), has_info, "{ty:?}");
        assert_eq!(r.p4_device_config == src, has_src, "{ty:?}");
        assert_eq!(r.cookie.unwrap().cookie, 77);
    }
    // RECONCILE keeps entries; VERIFY_AND_COMMIT clears them.
    c.write(write_req(5, vec![update(U::Insert, l2_entry(&info, 1, 2))])).await.unwrap();
    c.set_forwarding_pipeline_config(set(A::ReconcileAndCommit as i32, src.clone(), 5))
        .await
        .unwrap();
    let got = entries(
        read_all(&mut c, p4v1::entity::Entity::TableEntry(p4v1::TableEntry::default()))
            .await
            .unwrap(),
    );
    assert_eq!(got.len(), 1, "{got:?}");
    // The kept entry is still known to the index (a duplicate insert is refused).
    let e =
        c.write(write_req(5, vec![update(U::Insert, l2_entry(&info, 1, 2))])).await.unwrap_err();
    assert_eq!(update_codes(&e)[0].0, Code::AlreadyExists as i32);
    c.set_forwarding_pipeline_config(set(A::VerifyAndCommit as i32, src.clone(), 5)).await.unwrap();
    let got = read_all(&mut c, p4v1::entity::Entity::TableEntry(p4v1::TableEntry::default()))
        .await
        .unwrap();
    assert!(got.is_empty(), "{got:?}");
    // A P4Info that disagrees with the source is refused.
    let mut wrong = info.clone();
    wrong.tables[0].preamble.as_mut().unwrap().id += 1;
    let mut r = set(A::Verify as i32, src.clone(), 5);
    r.config.as_mut().unwrap().p4info = Some(wrong);
    assert_eq!(
        c.set_forwarding_pipeline_config(r).await.unwrap_err().code(),
        Code::InvalidArgument
    );
    // Another device id.
    let mut r = set(A::Verify as i32, src, 5);
    r.device_id = 9;
    assert_eq!(c.set_forwarding_pipeline_config(r).await.unwrap_err().code(), Code::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_and_read_each_match_kind() {
    let srv = start(Some("rt.p4")).await;
    let (mut c, _s) = primary(&srv).await;
    let info = p4info(&mut c).await;
    let lpm = p4v1::TableEntry {
        table_id: table_id(&info, "I.routes"),
        r#match: vec![p4v1::FieldMatch {
            field_id: 1,
            field_match_type: Some(F::Lpm(p4v1::field_match::Lpm {
                value: vec![0x0a, 0, 0, 0, 0, 0],
                prefix_len: 8,
            })),
        }],
        action: fwd(&info, 4),
        ..Default::default()
    };
    // A padded value is accepted and read back in canonical form.
    let mut padded = l2_entry(&info, 1, 2);
    padded.r#match[0] = exact(1, &[0, 0, 0, 0, 0, 1]);
    let ups = vec![
        update(U::Insert, padded),
        update(U::Insert, l2_entry(&info, 2, 3)),
        update(U::Insert, lpm.clone()),
        update(U::Insert, acl_entry(&info, 10)),
    ];
    c.write(write_req(1, ups)).await.unwrap();
    // All tables.
    let all = entries(
        read_all(&mut c, p4v1::entity::Entity::TableEntry(p4v1::TableEntry::default()))
            .await
            .unwrap(),
    );
    assert_eq!(all.len(), 4);
    // One table, all entries; canonical bytes come back as written.
    let q = p4v1::TableEntry { table_id: table_id(&info, "I.l2"), ..Default::default() };
    let l2 = entries(read_all(&mut c, p4v1::entity::Entity::TableEntry(q)).await.unwrap());
    assert_eq!(l2, vec![l2_entry(&info, 1, 2), l2_entry(&info, 2, 3)]);
    let q = p4v1::TableEntry { table_id: table_id(&info, "I.routes"), ..Default::default() };
    assert_eq!(
        entries(read_all(&mut c, p4v1::entity::Entity::TableEntry(q)).await.unwrap()),
        vec![lpm]
    );
    let q = p4v1::TableEntry { table_id: table_id(&info, "I.acl"), ..Default::default() };
    assert_eq!(
        entries(read_all(&mut c, p4v1::entity::Entity::TableEntry(q)).await.unwrap()),
        vec![acl_entry(&info, 10)]
    );
    // One entry by its key.
    let q = p4v1::TableEntry { action: None, ..l2_entry(&info, 2, 0) };
    assert_eq!(
        entries(read_all(&mut c, p4v1::entity::Entity::TableEntry(q)).await.unwrap()),
        vec![l2_entry(&info, 2, 3)]
    );
    // Modify, then delete.
    c.write(write_req(1, vec![update(U::Modify, l2_entry(&info, 2, 7))])).await.unwrap();
    c.write(write_req(1, vec![update(U::Delete, l2_entry(&info, 1, 0))])).await.unwrap();
    let q = p4v1::TableEntry { table_id: table_id(&info, "I.l2"), ..Default::default() };
    assert_eq!(
        entries(read_all(&mut c, p4v1::entity::Entity::TableEntry(q)).await.unwrap()),
        vec![l2_entry(&info, 2, 7)]
    );
    // Default entry: read, modify, read back, reset.
    let dq = p4v1::TableEntry {
        table_id: table_id(&info, "I.l2"),
        is_default_action: true,
        ..Default::default()
    };
    let d = entries(read_all(&mut c, p4v1::entity::Entity::TableEntry(dq.clone())).await.unwrap());
    assert_eq!(d.len(), 1);
    assert!(d[0].is_default_action);
    let p4v1::table_action::Type::Action(a) = d[0].action.clone().unwrap().r#type.unwrap() else {
        panic!()
    };
    assert_eq!(a.action_id, action_id(&info, "I.drop"));
    let nd = p4v1::TableEntry { action: fwd(&info, 9), ..dq.clone() };
    c.write(write_req(1, vec![update(U::Modify, nd.clone())])).await.unwrap();
    let d = entries(read_all(&mut c, p4v1::entity::Entity::TableEntry(dq.clone())).await.unwrap());
    assert_eq!(d[0].action, nd.action);
    c.write(write_req(1, vec![update(U::Modify, dq.clone())])).await.unwrap();
    let d = entries(read_all(&mut c, p4v1::entity::Entity::TableEntry(dq)).await.unwrap());
    let p4v1::table_action::Type::Action(a) = d[0].action.clone().unwrap().r#type.unwrap() else {
        panic!()
    };
    assert_eq!(a.action_id, action_id(&info, "I.drop"));
    // Registers and counters.
    let reg = info.registers[0].preamble.as_ref().unwrap().id;
    let w = p4v1::Update {
        r#type: U::Modify as i32,
        entity: Some(p4v1::Entity {
            entity: Some(p4v1::entity::Entity::RegisterEntry(p4v1::RegisterEntry {
                register_id: reg,
                index: Some(p4v1::Index { index: 3 }),
                data: Some(p4v1::P4Data {
                    data: Some(p4v1::p4_data::Data::Bitstring(vec![0x12, 0x34])),
                }),
            })),
        }),
    };
    c.write(write_req(1, vec![w])).await.unwrap();
    let got = read_all(
        &mut c,
        p4v1::entity::Entity::RegisterEntry(p4v1::RegisterEntry {
            register_id: reg,
            index: Some(p4v1::Index { index: 3 }),
            data: None,
        }),
    )
    .await
    .unwrap();
    let Some(p4v1::entity::Entity::RegisterEntry(r)) = &got[0].entity else { panic!() };
    assert_eq!(
        r.data.as_ref().unwrap().data,
        Some(p4v1::p4_data::Data::Bitstring(vec![0x12, 0x34]))
    );
    let got = read_all(&mut c, p4v1::entity::Entity::CounterEntry(p4v1::CounterEntry::default()))
        .await
        .unwrap();
    assert_eq!(got.len(), 4, "one entry per counter cell");
    // rt.p4 has no meters: a wildcard meter read is empty.
    let got = read_all(&mut c, p4v1::entity::Entity::MeterEntry(p4v1::MeterEntry::default()))
        .await
        .unwrap();
    assert!(got.is_empty(), "{got:?}");
    // What is not implemented says so.
    let e = read_all(&mut c, p4v1::entity::Entity::ValueSetEntry(p4v1::ValueSetEntry::default()))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unimplemented);
    assert!(e.message().contains("value sets"), "{e:?}");
}

/// `TableEntry.metadata` (and the deprecated `controller_metadata`) is the
/// controller's cookie: kept with the entry, returned by reads, replaced
/// by MODIFY, gone with the entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(deprecated)]
async fn entry_metadata_is_kept_and_read_back() {
    let srv = start(Some("rt.p4")).await;
    let (mut c, _s) = primary(&srv).await;
    let info = p4info(&mut c).await;
    let with = |port: u8, metadata: &[u8], old: u64| p4v1::TableEntry {
        metadata: metadata.to_vec(),
        controller_metadata: old,
        ..l2_entry(&info, 1, port)
    };
    let l2 = table_id(&info, "I.l2");
    async fn read_table(
        c: &mut sluice_p4rt::proto::p4::v1::p4_runtime_client::P4RuntimeClient<
            tonic::transport::Channel,
        >,
        table_id: u32,
    ) -> Vec<p4v1::TableEntry> {
        let q = p4v1::TableEntry { table_id, ..Default::default() };
        let mut got = entries(read_all(c, p4v1::entity::Entity::TableEntry(q)).await.unwrap());
        // In key order (a MODIFY may move an entry in the read order).
        got.sort_by_key(|e| format!("{:?}", e.r#match));
        got
    }
    let first = with(2, b"flow 17 of app X", 0x1234_5678_9abc);
    c.write(write_req(1, vec![update(U::Insert, first.clone())])).await.unwrap();
    c.write(write_req(1, vec![update(U::Insert, l2_entry(&info, 2, 3))])).await.unwrap();
    assert_eq!(read_table(&mut c, l2).await, vec![first, l2_entry(&info, 2, 3)]);
    // MODIFY replaces the cookie (here: new bytes, no old-style value).
    let second = with(4, b"\x00\x01 moved", 0);
    c.write(write_req(1, vec![update(U::Modify, second.clone())])).await.unwrap();
    assert_eq!(read_table(&mut c, l2).await, vec![second, l2_entry(&info, 2, 3)]);
    // Deleted and inserted again without one: no cookie left over.
    c.write(write_req(1, vec![update(U::Delete, l2_entry(&info, 1, 0))])).await.unwrap();
    c.write(write_req(1, vec![update(U::Insert, l2_entry(&info, 1, 5))])).await.unwrap();
    assert_eq!(read_table(&mut c, l2).await, vec![l2_entry(&info, 1, 5), l2_entry(&info, 2, 3)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_errors_carry_per_update_codes() {
    let srv = start(Some("rt.p4")).await;
    let (mut c, _s) = primary(&srv).await;
    let info = p4info(&mut c).await;
    c.write(write_req(1, vec![update(U::Insert, l2_entry(&info, 1, 2))])).await.unwrap();
    let mut unknown_table = l2_entry(&info, 3, 1);
    unknown_table.table_id = 0x0200_0001;
    let mut unknown_action = l2_entry(&info, 3, 1);
    if let Some(p4v1::table_action::Type::Action(a)) =
        unknown_action.action.as_mut().unwrap().r#type.as_mut()
    {
        a.action_id = 0x0100_0001;
    }
    let mut unknown_field = l2_entry(&info, 3, 1);
    unknown_field.r#match[0].field_id = 9;
    let mut too_wide = l2_entry(&info, 3, 1);
    too_wide.r#match[0] = exact(1, &[1, 0, 0, 0, 0, 0, 1]);
    let mut wide_param = l2_entry(&info, 3, 1);
    if let Some(p4v1::table_action::Type::Action(a)) =
        wide_param.action.as_mut().unwrap().r#type.as_mut()
    {
        a.params[0].value = vec![2, 0]; // 512 in a bit<9>
    }
    let bad_prefix = p4v1::TableEntry {
        table_id: table_id(&info, "I.routes"),
        r#match: vec![p4v1::FieldMatch {
            field_id: 1,
            field_match_type: Some(F::Lpm(p4v1::field_match::Lpm {
                value: vec![0x0a, 0, 0, 0, 0, 1],
                prefix_len: 8,
            })),
        }],
        action: fwd(&info, 4),
        ..Default::default()
    };
    let long_prefix = p4v1::TableEntry {
        r#match: vec![p4v1::FieldMatch {
            field_id: 1,
            field_match_type: Some(F::Lpm(p4v1::field_match::Lpm {
                value: vec![0x0a],
                prefix_len: 49,
            })),
        }],
        ..bad_prefix.clone()
    };
    let no_priority = acl_entry(&info, 0);
    let ups = vec![
        update(U::Insert, l2_entry(&info, 2, 2)), // ok
        update(U::Insert, l2_entry(&info, 1, 5)), // duplicate
        update(U::Modify, l2_entry(&info, 9, 5)), // missing
        update(U::Delete, l2_entry(&info, 9, 5)), // missing
        update(U::Insert, unknown_table),         // unknown table
        update(U::Insert, unknown_action),        // unknown action
        update(U::Insert, unknown_field),         // unknown field
        update(U::Insert, too_wide),              // 49 bits in a 48-bit field
        update(U::Insert, wide_param),            // 10 bits in a 9-bit param
        update(U::Insert, bad_prefix),            // bits past the prefix
        update(U::Insert, long_prefix),           // prefix > width
        update(U::Insert, no_priority),           // ternary table, priority 0
    ];
    let e = c.write(write_req(1, ups)).await.unwrap_err();
    let codes: Vec<i32> = update_codes(&e).iter().map(|x| x.0).collect();
    let want = [
        Code::Ok,
        Code::AlreadyExists,
        Code::NotFound,
        Code::NotFound,
        Code::NotFound,
        Code::NotFound,
        Code::InvalidArgument, // unknown field: the spec's "Match Format"
        Code::OutOfRange,
        Code::OutOfRange,
        Code::InvalidArgument,
        Code::InvalidArgument,
        Code::InvalidArgument,
    ];
    assert_eq!(codes, want.iter().map(|c| *c as i32).collect::<Vec<_>>(), "{:?}", update_codes(&e));
    // The good update was applied despite the others.
    let q = p4v1::TableEntry { table_id: table_id(&info, "I.l2"), ..Default::default() };
    assert_eq!(
        entries(read_all(&mut c, p4v1::entity::Entity::TableEntry(q)).await.unwrap()).len(),
        2
    );
    // ROLLBACK_ON_ERROR (tests/atomicity.rs has the rest): a good batch goes in.
    let mut r = write_req(1, vec![update(U::Insert, l2_entry(&info, 4, 2))]);
    r.atomicity = p4v1::write_request::Atomicity::RollbackOnError as i32;
    c.write(r).await.expect("a good ROLLBACK_ON_ERROR batch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbitration_higher_election_id_wins() {
    let srv = start(Some("rt.p4")).await;
    let mut c1 = client(srv.addr).await;
    let mut c2 = client(srv.addr).await;
    let info = p4info(&mut c1).await;
    let mut a = Stream::open(&mut c1, 10).await;
    assert_eq!(a.next_arbitration().await, (Code::Ok as i32, 10));
    let mut b = Stream::open(&mut c2, 20).await;
    // The new primary and the old one both hear of it.
    assert_eq!(b.next_arbitration().await, (Code::Ok as i32, 20));
    assert_eq!(a.next_arbitration().await, (Code::AlreadyExists as i32, 20));
    // The loser's Write is refused, the winner's accepted.
    let e =
        c1.write(write_req(10, vec![update(U::Insert, l2_entry(&info, 1, 2))])).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    c2.write(write_req(20, vec![update(U::Insert, l2_entry(&info, 1, 2))])).await.unwrap();
    // The same id twice is refused.
    let mut c3 = client(srv.addr).await;
    let mut d = Stream::open(&mut c3, 20).await;
    let err = tokio::time::timeout(std::time::Duration::from_secs(5), d.rx.message())
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    // The primary leaves: the backup is told there is no primary, and it
    // cannot write until it claims a high enough id.
    drop(b);
    assert_eq!(a.next_arbitration().await, (Code::NotFound as i32, 20));
    let e =
        c1.write(write_req(10, vec![update(U::Insert, l2_entry(&info, 2, 2))])).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    a.arbitrate(30).await;
    assert_eq!(a.next_arbitration().await, (Code::Ok as i32, 30));
    c1.write(write_req(30, vec![update(U::Insert, l2_entry(&info, 2, 2))])).await.unwrap();
}

/// As the primary `election`, installs an l2 entry sending dst 00..0b to
/// the CPU, runs a frame from port 7 to it through the engine and hands
/// the CPU port's frame to the device as a packet-in: the frame sent.
async fn punt_to_cpu(
    srv: &Server,
    c: &mut P4RuntimeClient<Channel>,
    info: &cfg::P4Info,
    election: u128,
) -> Vec<u8> {
    let to_cpu = p4v1::TableEntry {
        action: Some(p4v1::TableAction {
            r#type: Some(p4v1::table_action::Type::Action(p4v1::Action {
                action_id: action_id(info, "I.to_cpu"),
                params: vec![],
            })),
        }),
        ..l2_entry(info, 0x0b, 0)
    };
    c.write(write_req(election, vec![update(U::Insert, to_cpu)])).await.unwrap();
    let mut frame = vec![0, 0, 0, 0, 0, 0x0b, 0, 0, 0, 0, 0, 1, 0x88, 0xb5];
    frame.extend_from_slice(b"payload");
    let outs = {
        use sluice_p4::target::Target as _;
        sluice_p4rt::device::lock(&srv.device.engine).packet(7, &frame).unwrap()
    };
    assert_eq!(outs.len(), 1);
    assert_eq!(outs[0].port, CPU);
    srv.device.packet_in(&outs[0].data);
    frame
}

/// The next message on `s` is `frame` as a packet-in from port 7.
async fn expect_packet_in(s: &mut Stream, info: &cfg::P4Info, frame: &[u8]) {
    match s.next().await {
        p4v1::stream_message_response::Update::Packet(p) => {
            assert_eq!(p.payload, frame);
            let pi = info
                .controller_packet_metadata
                .iter()
                .find(|m| m.preamble.as_ref().unwrap().name == "packet_in")
                .unwrap();
            let id = pi.metadata.iter().find(|m| m.name == "ingress_port").unwrap().id;
            let md = p.metadata.iter().find(|m| m.metadata_id == id).unwrap();
            assert_eq!(md.value, vec![7]);
        }
        other => panic!("expected a packet-in, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packet_out_and_packet_in() {
    let srv = start(Some("rt.p4")).await;
    let mut c = client(srv.addr).await;
    let info = p4info(&mut c).await;
    let mut s = Stream::open(&mut c, 1).await;
    s.next_arbitration().await;
    let po = info
        .controller_packet_metadata
        .iter()
        .find(|m| m.preamble.as_ref().unwrap().name == "packet_out")
        .unwrap();
    let port_id = po.metadata.iter().find(|m| m.name == "egress_port").unwrap().id;
    let frame: Vec<u8> = (0..60u8).collect();
    s.send(p4v1::stream_message_request::Update::Packet(p4v1::PacketOut {
        payload: frame.clone(),
        metadata: vec![p4v1::PacketMetadata { metadata_id: port_id, value: vec![3] }],
    }))
    .await;
    // What the forwarding thread does: inject queued packet-outs at the CPU port.
    let mut outs = Vec::new();
    for _ in 0..100 {
        for f in srv.device.take_packet_outs() {
            use sluice_p4::target::Target as _;
            outs.extend(sluice_p4rt::device::lock(&srv.device.engine).packet(CPU, &f).unwrap());
        }
        if !outs.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(outs.len(), 1);
    assert_eq!(outs[0].port, 3);
    assert_eq!(outs[0].data, frame);
    // Packet-in: an l2 entry sends dst 00..0b to the CPU.
    let frame = punt_to_cpu(&srv, &mut c, &info, 1).await;
    expect_packet_in(&mut s, &info, &frame).await;
    // A backup may not send packets: a stream error with the packet.
    let mut c2 = client(srv.addr).await;
    let mut b = Stream::open(&mut c2, 0).await;
    assert_eq!(b.next_arbitration().await.0, Code::AlreadyExists as i32);
    b.send(p4v1::stream_message_request::Update::Packet(p4v1::PacketOut {
        payload: vec![1],
        metadata: vec![],
    }))
    .await;
    match b.next().await {
        p4v1::stream_message_response::Update::Error(e) => {
            assert_eq!(e.canonical_code, Code::PermissionDenied as i32);
            assert!(e.details.is_some());
        }
        other => panic!("expected a stream error, got {other:?}"),
    }
}

fn role(name: &str) -> Option<p4v1::Role> {
    Some(p4v1::Role { name: name.into(), ..Default::default() })
}

/// Every role has full pipeline access, so each role's primary gets the
/// packet-ins (spec §5: "unless specified otherwise by the role
/// definitions"); a backup of either role gets none. A `role.config`
/// (a scheme this switch does not share) is INVALID_ARGUMENT, and a live
/// stream cannot change role or device (FAILED_PRECONDITION, spec §5.3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_roles_primary_gets_packet_ins() {
    let srv = start(Some("rt.p4")).await;
    let mut c1 = client(srv.addr).await;
    let mut c2 = client(srv.addr).await;
    let mut c3 = client(srv.addr).await;
    let info = p4info(&mut c1).await;
    let mut dflt = Stream::open(&mut c1, 5).await;
    assert_eq!(dflt.next_arbitration().await, (Code::Ok as i32, 5));
    let mut named = Stream::open_role(&mut c2, 1, role("telemetry")).await;
    assert_eq!(named.next_arbitration().await, (Code::Ok as i32, 1));
    let mut backup = Stream::open_role(&mut c3, 0, role("telemetry")).await;
    assert_eq!(backup.next_arbitration().await, (Code::AlreadyExists as i32, 1));
    let frame = punt_to_cpu(&srv, &mut c1, &info, 5).await;
    expect_packet_in(&mut dflt, &info, &frame).await;
    expect_packet_in(&mut named, &info, &frame).await;
    // The backup got nothing: the next thing it hears is its own error.
    backup.arbitrate_role(0, role("other")).await;
    assert_eq!(backup.ended_with().await, Code::FailedPrecondition);
    // The named role's primary writes too (full access).
    c2.write(p4v1::WriteRequest {
        role: "telemetry".into(),
        ..write_req(1, vec![update(U::Insert, l2_entry(&info, 1, 2))])
    })
    .await
    .unwrap();
    let mut c4 = client(srv.addr).await;
    let cfg = p4v1::Role {
        name: "acl".into(),
        config: Some(prost_types::Any {
            type_url: "type.example/RoleConfig".into(),
            value: vec![],
        }),
        ..Default::default()
    };
    let mut configured = Stream::open_role(&mut c4, 1, Some(cfg)).await;
    assert_eq!(configured.ended_with().await, Code::InvalidArgument);
    let mut c5 = client(srv.addr).await;
    let mut moved = Stream::open(&mut c5, 1).await;
    assert_eq!(moved.next_arbitration().await.0, Code::AlreadyExists as i32);
    moved
        .send(p4v1::stream_message_request::Update::Arbitration(p4v1::MasterArbitrationUpdate {
            device_id: DEVICE + 1,
            election_id: eid(1),
            ..Default::default()
        }))
        .await;
    assert_eq!(moved.ended_with().await, Code::FailedPrecondition);
}

/// `sluice p4 ctl`'s commands run through `Device::with_engine` while
/// P4Runtime serves: the entries a command adds join P4Runtime's index
/// (read, refused as duplicates, deleted), and entries a command removes
/// leave it (deleting one again is NOT_FOUND, inserting it again works).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctl_commands_keep_the_p4runtime_index() {
    let srv = start(Some("rt.p4")).await;
    let (mut c, _s) = primary(&srv).await;
    let info = p4info(&mut c).await;
    let mine = p4v1::TableEntry { metadata: b"mine".to_vec(), ..l2_entry(&info, 0x01, 2) };
    c.write(write_req(1, vec![update(U::Insert, mine.clone())])).await.unwrap();
    let mut session = sluice_p4::ctl::Session::default();
    let mut ctl = |line: &str| srv.device.with_engine(|e| session.execute(e, line)).unwrap();
    ctl("table_add l2 fwd 0x0b => 3");
    let q = p4v1::TableEntry { table_id: table_id(&info, "I.l2"), ..Default::default() };
    let got = entries(read_all(&mut c, p4v1::entity::Entity::TableEntry(q.clone())).await.unwrap());
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].metadata, b"mine", "the P4Runtime entry keeps its cookie");
    assert_eq!(got[1].r#match, l2_entry(&info, 0x0b, 3).r#match);
    let e =
        c.write(write_req(1, vec![update(U::Insert, l2_entry(&info, 0x0b, 4))])).await.unwrap_err();
    assert_eq!(update_codes(&e)[0].0, Code::AlreadyExists as i32, "{e:?}");
    c.write(write_req(1, vec![update(U::Delete, l2_entry(&info, 0x0b, 0))])).await.unwrap();
    ctl("table_clear l2");
    let e = c.write(write_req(1, vec![update(U::Delete, mine.clone())])).await.unwrap_err();
    assert_eq!(update_codes(&e)[0].0, Code::NotFound as i32, "{e:?}");
    c.write(write_req(1, vec![update(U::Insert, mine)])).await.unwrap();
    let got = entries(read_all(&mut c, p4v1::entity::Entity::TableEntry(q)).await.unwrap());
    assert_eq!(got.len(), 1, "{got:?}");
}
