//! Counters and meters over P4Runtime with the generated tonic client:
//! direct counters and meters of a table entry (on insert, modify, read
//! and through DirectCounterEntry/DirectMeterEntry), indexed meters and
//! counter writes with and without an index, and every error code. The
//! switch runs `meter.p4` on a clock the test drives, so the colours are
//! the hand-worked ones.

mod common;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use common::*;
use p4v1::entity::Entity as E;
use p4v1::update::Type as U;
use sluice_p4::target::{Clock, Manage as _, Target as _};
use sluice_p4rt::device::lock;
use sluice_p4rt::proto::p4::config::v1 as cfg;
use sluice_p4rt::proto::p4::v1 as p4v1;
use tonic::Code;

struct Ids {
    table: u32,
    police: u32,
    meter: u32,
    counter: u32,
}

fn id_of<'a>(mut pre: impl Iterator<Item = &'a cfg::Preamble>, name: &str) -> u32 {
    pre.find(|p| p.name == name).unwrap_or_else(|| panic!("{name} in the P4Info")).id
}

async fn ids(c: &mut p4v1::p4_runtime_client::P4RuntimeClient<tonic::transport::Channel>) -> Ids {
    let info = p4info(c).await;
    Ids {
        table: id_of(info.tables.iter().filter_map(|t| t.preamble.as_ref()), "I.policer"),
        police: id_of(info.actions.iter().filter_map(|t| t.preamble.as_ref()), "I.police"),
        meter: id_of(info.meters.iter().filter_map(|t| t.preamble.as_ref()), "I.port_rate"),
        counter: id_of(info.counters.iter().filter_map(|t| t.preamble.as_ref()), "I.colours"),
    }
}

fn entry(ids: &Ids, src: u8, port: u8) -> p4v1::TableEntry {
    p4v1::TableEntry {
        table_id: ids.table,
        r#match: vec![p4v1::FieldMatch {
            field_id: 1,
            field_match_type: Some(p4v1::field_match::FieldMatchType::Exact(
                p4v1::field_match::Exact { value: vec![src] },
            )),
        }],
        action: Some(p4v1::TableAction {
            r#type: Some(p4v1::table_action::Type::Action(p4v1::Action {
                action_id: ids.police,
                params: vec![p4v1::action::Param { param_id: 1, value: vec![port] }],
            })),
        }),
        ..Default::default()
    }
}

fn key(ids: &Ids, src: u8) -> p4v1::TableEntry {
    p4v1::TableEntry { action: None, ..entry(ids, src, 0) }
}

fn mc(cir: i64, cburst: i64, pir: i64, pburst: i64) -> p4v1::MeterConfig {
    p4v1::MeterConfig { cir, cburst, pir, pburst, eburst: 0 }
}

fn data(packets: i64, bytes: i64) -> p4v1::CounterData {
    p4v1::CounterData { packet_count: packets, byte_count: bytes }
}

fn up(ty: U, e: E) -> p4v1::Update {
    p4v1::Update { r#type: ty as i32, entity: Some(p4v1::Entity { entity: Some(e) }) }
}

fn frame(src: u8) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[5] = 0xdd;
    f[11] = src;
    f
}

/// How many of `n` packets from `src` leave the switch.
fn send(srv: &Server, src: u8, n: usize) -> usize {
    let mut e = lock(&srv.device.engine);
    (0..n).map(|_| e.packet(0, &frame(src)).expect("packet runs").len()).sum()
}

async fn one(
    c: &mut p4v1::p4_runtime_client::P4RuntimeClient<tonic::transport::Channel>,
    e: E,
) -> E {
    let mut got = read_all(c, e).await.expect("read");
    assert_eq!(got.len(), 1, "{got:?}");
    got.remove(0).entity.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_and_indexed_counters_and_meters() {
    let srv = start(Some("meter.p4")).await;
    let now = Arc::new(AtomicU64::new(0));
    lock(&srv.device.engine).set_clock(Clock::manual(now.clone()));
    let (mut c, _s) = primary(&srv).await;
    let ids = ids(&mut c).await;

    // Insert with a meter configuration and a starting count.
    let mut e = entry(&ids, 0x0a, 2);
    e.meter_config = Some(mc(1, 1, 2, 2));
    e.counter_data = Some(data(10, 100));
    c.write(write_req(1, vec![update(U::Insert, e)])).await.unwrap();
    // Read without asking: no direct data; asking: both.
    let E::TableEntry(plain) = one(&mut c, E::TableEntry(key(&ids, 0x0a))).await else { panic!() };
    assert_eq!((plain.counter_data, plain.meter_config), (None, None));
    let q = p4v1::TableEntry {
        counter_data: Some(data(0, 0)),
        meter_config: Some(mc(0, 0, 0, 0)),
        ..key(&ids, 0x0a)
    };
    let E::TableEntry(full) = one(&mut c, E::TableEntry(q.clone())).await else { panic!() };
    assert_eq!(full.counter_data, Some(data(10, 100)));
    assert_eq!(full.meter_config, Some(mc(1, 1, 2, 2)));

    // t=0: GREEN, YELLOW, RED (dropped).
    assert_eq!(send(&srv, 0x0a, 3), 2);
    let dc = E::DirectCounterEntry(p4v1::DirectCounterEntry {
        table_entry: Some(p4v1::TableEntry::default()),
        data: None,
    });
    let E::DirectCounterEntry(got) = one(&mut c, dc.clone()).await else { panic!() };
    assert_eq!(got.data, Some(data(13, 100 + 3 * 60)));
    assert_eq!(got.table_entry.unwrap().r#match, key(&ids, 0x0a).r#match);
    let colours = E::CounterEntry(p4v1::CounterEntry {
        counter_id: ids.counter,
        index: Some(p4v1::Index { index: 2 }),
        data: None,
    });
    let E::CounterEntry(red) = one(&mut c, colours.clone()).await else { panic!() };
    assert_eq!(red.data, Some(data(1, 60)));

    // DirectMeterEntry: read; write without config resets (all GREEN).
    let dm = |config| {
        E::DirectMeterEntry(p4v1::DirectMeterEntry {
            table_entry: Some(key(&ids, 0x0a)),
            config,
            counter_data: None,
        })
    };
    let E::DirectMeterEntry(got) = one(&mut c, dm(None)).await else { panic!() };
    assert_eq!(got.config, Some(mc(1, 1, 2, 2)));
    c.write(write_req(1, vec![up(U::Modify, dm(None))])).await.unwrap();
    let E::DirectMeterEntry(got) = one(&mut c, dm(None)).await else { panic!() };
    assert_eq!(got.config, None);
    assert_eq!(send(&srv, 0x0a, 3), 3);
    // A tiny rate again, through DirectMeterEntry: one GREEN, then RED.
    c.write(write_req(1, vec![up(U::Modify, dm(Some(mc(1, 1, 1, 1))))])).await.unwrap();
    assert_eq!(send(&srv, 0x0a, 3), 1);

    // DirectCounterEntry write sets the cell (no data: zero).
    let set = E::DirectCounterEntry(p4v1::DirectCounterEntry {
        table_entry: Some(key(&ids, 0x0a)),
        data: Some(data(5, 6)),
    });
    c.write(write_req(1, vec![up(U::Modify, set)])).await.unwrap();
    let E::DirectCounterEntry(got) = one(&mut c, dc.clone()).await else { panic!() };
    assert_eq!(got.data, Some(data(5, 6)));
    // MODIFY of the entry keeps the count and resets the meter.
    c.write(write_req(1, vec![update(U::Modify, entry(&ids, 0x0a, 3))])).await.unwrap();
    let E::TableEntry(full) = one(&mut c, E::TableEntry(q.clone())).await else { panic!() };
    assert_eq!((full.counter_data, full.meter_config), (Some(data(5, 6)), None));
    let zero = E::DirectCounterEntry(p4v1::DirectCounterEntry {
        table_entry: Some(key(&ids, 0x0a)),
        data: None,
    });
    c.write(write_req(1, vec![up(U::Modify, zero)])).await.unwrap();
    let E::DirectCounterEntry(got) = one(&mut c, dc.clone()).await else { panic!() };
    assert_eq!(got.data, Some(data(0, 0)));

    // Indexed meter: one cell, then every cell (no index), then reset.
    let me = |index: Option<i64>, config| {
        E::MeterEntry(p4v1::MeterEntry {
            meter_id: ids.meter,
            index: index.map(|index| p4v1::Index { index }),
            config,
            counter_data: None,
        })
    };
    c.write(write_req(1, vec![up(U::Modify, me(Some(1), Some(mc(1, 100, 2, 100))))]))
        .await
        .unwrap();
    let all = read_all(&mut c, E::MeterEntry(p4v1::MeterEntry::default())).await.unwrap();
    let cfgs: Vec<Option<p4v1::MeterConfig>> = all
        .into_iter()
        .map(|e| match e.entity {
            Some(E::MeterEntry(m)) => m.config,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(cfgs, vec![None, Some(mc(1, 100, 2, 100)), None, None]);
    c.write(write_req(1, vec![up(U::Modify, me(None, Some(mc(3, 4, 5, 6))))])).await.unwrap();
    let E::MeterEntry(got) = one(&mut c, me(Some(3), None)).await else { panic!() };
    assert_eq!(got.config, Some(mc(3, 4, 5, 6)));
    c.write(write_req(1, vec![up(U::Modify, me(None, None))])).await.unwrap();
    let all = read_all(&mut c, me(None, None)).await.unwrap();
    assert!(
        all.iter().all(|e| matches!(&e.entity, Some(E::MeterEntry(m)) if m.config.is_none())),
        "{all:?}"
    );

    // Counter writes: one cell, then every cell back to zero.
    let ce = |index: Option<i64>, d| {
        E::CounterEntry(p4v1::CounterEntry {
            counter_id: ids.counter,
            index: index.map(|index| p4v1::Index { index }),
            data: d,
        })
    };
    c.write(write_req(1, vec![up(U::Modify, ce(Some(2), Some(data(7, 8))))])).await.unwrap();
    let E::CounterEntry(got) = one(&mut c, colours.clone()).await else { panic!() };
    assert_eq!(got.data, Some(data(7, 8)));
    c.write(write_req(1, vec![up(U::Modify, ce(None, None))])).await.unwrap();
    let cells = lock(&srv.device.engine).counter_cells("I.colours").unwrap().1;
    assert_eq!(cells, vec![(0, 0); 3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counter_and_meter_errors() {
    let srv = start(Some("meter.p4")).await;
    let (mut c, _s) = primary(&srv).await;
    let ids = ids(&mut c).await;
    c.write(write_req(1, vec![update(U::Insert, entry(&ids, 0x0a, 2))])).await.unwrap();
    let me = |id, index: Option<i64>, config| {
        E::MeterEntry(p4v1::MeterEntry {
            meter_id: id,
            index: index.map(|index| p4v1::Index { index }),
            config,
            counter_data: None,
        })
    };
    let ce = |id, index: i64| {
        E::CounterEntry(p4v1::CounterEntry {
            counter_id: id,
            index: Some(p4v1::Index { index }),
            data: Some(data(1, 1)),
        })
    };
    let dc = |t: p4v1::TableEntry| {
        E::DirectCounterEntry(p4v1::DirectCounterEntry { table_entry: Some(t), data: None })
    };
    let dm = |t: p4v1::TableEntry, config| {
        E::DirectMeterEntry(p4v1::DirectMeterEntry {
            table_entry: Some(t),
            config,
            counter_data: None,
        })
    };
    let mut bad_table = key(&ids, 0x0a);
    bad_table.table_id = 0x0200_0001;
    let mut with_config = entry(&ids, 0x0b, 2);
    with_config.meter_config = Some(mc(-1, 1, 1, 1));
    let ups = vec![
        up(U::Modify, me(ids.meter, Some(0), Some(mc(1, 1, 1, 1)))), // ok
        up(U::Modify, me(0x1400_0001, Some(0), None)),               // unknown meter
        up(U::Modify, me(ids.meter, Some(4), None)),                 // index out of range
        up(U::Insert, me(ids.meter, Some(0), None)),                 // insert
        up(U::Modify, me(ids.meter, None, Some(mc(2, 1, 1, 1)))),    // cir > pir
        up(U::Modify, me(ids.meter, None, Some(mc(1, -1, 1, 1)))),   // negative burst
        up(U::Modify, ce(0x1200_0001, 0)),                           // unknown counter
        up(U::Modify, ce(ids.counter, -1)),                          // index out of range
        up(U::Delete, ce(ids.counter, 0)),                           // delete
        up(U::Insert, dc(key(&ids, 0x0a))),                          // insert
        up(U::Modify, dc(key(&ids, 0x0c))),                          // no such entry
        up(U::Modify, dm(bad_table, None)),                          // unknown table
        up(U::Delete, dm(key(&ids, 0x0a), None)),                    // delete
        update(U::Insert, with_config),                              // negative cir
    ];
    let e = c.write(write_req(1, ups)).await.unwrap_err();
    let got = update_codes(&e);
    let codes: Vec<i32> = got.iter().map(|x| x.0).collect();
    let want = [
        Code::Ok,
        Code::NotFound,
        Code::InvalidArgument,
        Code::InvalidArgument,
        Code::InvalidArgument,
        Code::InvalidArgument,
        Code::NotFound,
        Code::InvalidArgument,
        Code::InvalidArgument,
        Code::InvalidArgument,
        Code::NotFound,
        Code::NotFound,
        Code::InvalidArgument,
        Code::InvalidArgument,
    ];
    assert_eq!(codes, want.iter().map(|c| *c as i32).collect::<Vec<_>>(), "{got:?}");
    // The messages name what is wrong.
    assert!(got[2].1.contains("index 4") && got[2].1.contains("I.port_rate"), "{got:?}");
    assert!(got[4].1.contains("cir 2 is above pir 1"), "{got:?}");
    assert!(got[5].1.contains("cburst -1"), "{got:?}");
    assert!(got[13].1.contains("cir -1"), "{got:?}");
    // Reads: unknown id NOT_FOUND, index out of range INVALID_ARGUMENT.
    let r = read_all(&mut c, me(0x1400_0001, None, None)).await.unwrap_err();
    assert_eq!(r.code(), Code::NotFound);
    let r = read_all(&mut c, me(ids.meter, Some(9), None)).await.unwrap_err();
    assert_eq!(r.code(), Code::InvalidArgument, "{r:?}");
    // The good update took effect.
    let cfgs = lock(&srv.device.engine).meter_cells("I.port_rate").unwrap().1;
    assert!(cfgs[0].is_some() && cfgs[1].is_none(), "{cfgs:?}");
}

/// A batch rolled back puts an indexed meter back whole: the buckets it
/// had drained, not full ones (the clock stands at 0, so a refilled
/// bucket would let the next packet through).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolled_back_meter_keeps_its_buckets() {
    let srv = start(Some("meter.p4")).await;
    let now = Arc::new(AtomicU64::new(0));
    lock(&srv.device.engine).set_clock(Clock::manual(now.clone()));
    let (mut c, _s) = primary(&srv).await;
    let ids = ids(&mut c).await;
    let cell = |config| {
        E::MeterEntry(p4v1::MeterEntry {
            meter_id: ids.meter,
            index: Some(p4v1::Index { index: 0 }),
            config,
            counter_data: None,
        })
    };
    // 60-byte frames at ethertype 0 run cell 0: GREEN, YELLOW, RED.
    c.write(write_req(1, vec![up(U::Modify, cell(Some(mc(1, 60, 2, 120))))])).await.unwrap();
    assert_eq!(send(&srv, 0x0a, 3), 2);
    // Reconfiguring refills the buckets; the failing INSERT undoes it.
    let batch = p4v1::WriteRequest {
        atomicity: p4v1::write_request::Atomicity::RollbackOnError as i32,
        ..write_req(
            1,
            vec![up(U::Modify, cell(Some(mc(1, 60, 2, 120)))), up(U::Insert, cell(None))],
        )
    };
    c.write(batch).await.unwrap_err();
    assert_eq!(send(&srv, 0x0a, 1), 0, "the buckets stayed drained");
    // Without the rollback, the same reconfiguration lets it through.
    c.write(write_req(1, vec![up(U::Modify, cell(Some(mc(1, 60, 2, 120))))])).await.unwrap();
    assert_eq!(send(&srv, 0x0a, 1), 1);
}
