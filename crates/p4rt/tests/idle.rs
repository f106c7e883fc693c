//! Idle timeouts, the default entry's direct counter and meter,
//! per-colour meter counters and what RECONCILE_AND_COMMIT keeps, with
//! the generated tonic client.
//!
//! The idle-timeout test runs `idle.p4` on the compiled engine and on the
//! reference interpreter: two entries with a 300 ms TTL, one hit by
//! packets every 20 ms and one nobody hits; the primary's stream gets a
//! notification naming only the unhit one. Waits are bounded (the
//! stream's 5 s per message, 100 notifications at most); nothing asserts
//! how long anything took beyond what the TTL itself guarantees.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use p4v1::entity::Entity as E;
use p4v1::stream_message_response::Update as Resp;
use p4v1::update::Type as U;
use sluice_p4::engines::Engine;
use sluice_p4::target::{Clock, Manage as _, Target as _};
use sluice_p4rt::device::lock;
use sluice_p4rt::proto::p4::config::v1 as cfg;
use sluice_p4rt::proto::p4::v1 as p4v1;
use tonic::transport::Channel;
use tonic::Code;

type Client = p4v1::p4_runtime_client::P4RuntimeClient<Channel>;

const TTL_NS: i64 = 300_000_000;

fn id_of<'a>(mut pre: impl Iterator<Item = &'a cfg::Preamble>, name: &str) -> u32 {
    pre.find(|p| p.name == name).unwrap_or_else(|| panic!("{name} in the P4Info")).id
}

fn table<'a>(info: &'a cfg::P4Info, name: &str) -> &'a cfg::Table {
    info.tables
        .iter()
        .find(|t| t.preamble.as_ref().is_some_and(|p| p.name == name))
        .unwrap_or_else(|| panic!("table {name} in the P4Info"))
}

fn action_id(info: &cfg::P4Info, name: &str) -> u32 {
    id_of(info.actions.iter().filter_map(|a| a.preamble.as_ref()), name)
}

fn entry(table_id: u32, action: u32, key: u8, port: u8, ttl: i64) -> p4v1::TableEntry {
    p4v1::TableEntry {
        table_id,
        r#match: vec![p4v1::FieldMatch {
            field_id: 1,
            field_match_type: Some(p4v1::field_match::FieldMatchType::Exact(
                p4v1::field_match::Exact { value: vec![key] },
            )),
        }],
        action: Some(p4v1::TableAction {
            r#type: Some(p4v1::table_action::Type::Action(p4v1::Action {
                action_id: action,
                params: vec![p4v1::action::Param { param_id: 1, value: vec![port] }],
            })),
        }),
        idle_timeout_ns: ttl,
        ..Default::default()
    }
}

/// A frame with source and destination MAC ending in `src` / `dst`.
fn frame(dst: u8, src: u8) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[5] = dst;
    f[11] = src;
    f[12] = 0x88;
    f[13] = 0xb5;
    f
}

fn key_of(e: &p4v1::TableEntry) -> Vec<u8> {
    match e.r#match.first().and_then(|m| m.field_match_type.as_ref()) {
        Some(p4v1::field_match::FieldMatchType::Exact(x)) => x.value.clone(),
        other => panic!("an exact match, got {other:?}"),
    }
}

/// The next idle-timeout notification on `s` (other messages skipped;
/// each message within the stream's 5 s).
async fn next_idle(s: &mut Stream) -> p4v1::IdleTimeoutNotification {
    for _ in 0..100 {
        if let Resp::IdleTimeoutNotification(n) = s.next().await {
            return n;
        }
    }
    panic!("no idle-timeout notification among 100 stream messages");
}

/// The `time_since_last_hit` of every entry of `table_id`, by key.
async fn elapsed(c: &mut Client, table_id: u32) -> Vec<(Vec<u8>, i64, i64)> {
    let q = p4v1::TableEntry {
        table_id,
        time_since_last_hit: Some(p4v1::table_entry::IdleTimeout { elapsed_ns: 0 }),
        ..Default::default()
    };
    let got = read_all(c, E::TableEntry(q)).await.expect("read with time_since_last_hit");
    got.into_iter()
        .map(|e| match e.entity {
            Some(E::TableEntry(t)) => {
                let ns = t.time_since_last_hit.expect("time_since_last_hit answered").elapsed_ns;
                (key_of(&t), ns, t.idle_timeout_ns)
            }
            other => panic!("{other:?}"),
        })
        .collect()
}

fn ns_of(v: &[(Vec<u8>, i64, i64)], key: u8) -> i64 {
    v.iter().find(|x| x.0 == [key]).unwrap_or_else(|| panic!("entry {key:#x} in {v:?}")).1
}

/// Sends frames from `src` into the engine every 20 ms until `stop`
/// (at most 500 frames).
fn hitter(srv: &Server, src: u8, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    let engine = srv.device.engine.clone();
    std::thread::spawn(move || {
        for _ in 0..500 {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            lock(&engine).packet(3, &frame(0, src)).expect("packet runs");
            std::thread::sleep(Duration::from_millis(20));
        }
    })
}

async fn idle_timeouts(reference: bool) {
    let srv = start(Some("idle.p4")).await;
    if reference {
        let loaded = sluice_p4::parse::load_file(&program("idle.p4")).unwrap();
        *lock(&srv.device.engine) = Engine::load(&loaded, true).unwrap().0;
    }
    let want = if reference { "reference" } else { "compiled" };
    assert_eq!(lock(&srv.device.engine).name(), want);
    let (mut c, mut s) = primary(&srv).await;
    let info = p4info(&mut c).await;
    use cfg::table::IdleTimeoutBehavior as B;
    let flows = table(&info, "I.flows");
    let plain = table(&info, "I.plain");
    assert_eq!(flows.idle_timeout_behavior, B::NotifyControl as i32);
    assert_eq!(plain.idle_timeout_behavior, B::NoTimeout as i32);
    let (flows, plain) = (flows.preamble.as_ref().unwrap().id, plain.preamble.as_ref().unwrap().id);
    let fwd = action_id(&info, "I.fwd");

    // Errors: a TTL on a table without support, a negative TTL,
    // time_since_last_hit in a write, a TTL on a default entry; reading
    // time_since_last_hit of a table without support.
    let mut written = entry(flows, fwd, 0x0c, 2, 0);
    written.time_since_last_hit = Some(p4v1::table_entry::IdleTimeout { elapsed_ns: 1 });
    let default = p4v1::TableEntry {
        table_id: flows,
        is_default_action: true,
        idle_timeout_ns: TTL_NS,
        ..Default::default()
    };
    let bad = vec![
        update(U::Insert, entry(plain, fwd, 0x01, 2, TTL_NS)),
        update(U::Insert, entry(flows, fwd, 0x0c, 2, -1)),
        update(U::Insert, written),
        update(U::Modify, default),
    ];
    let err = c.write(write_req(1, bad)).await.unwrap_err();
    let codes = update_codes(&err);
    for (i, (code, msg)) in codes.iter().enumerate() {
        assert_eq!(*code, Code::InvalidArgument as i32, "update {i}: {msg}");
    }
    assert!(codes[0].1.contains("I.plain") && codes[0].1.contains("support_timeout"), "{codes:?}");
    assert!(codes[2].1.contains("time_since_last_hit"), "{codes:?}");
    let q = p4v1::TableEntry {
        table_id: plain,
        time_since_last_hit: Some(p4v1::table_entry::IdleTimeout { elapsed_ns: 0 }),
        ..Default::default()
    };
    let e = read_all(&mut c, E::TableEntry(q)).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("I.plain"), "{e:?}");

    // 0x0a is hit every 20 ms, 0x0b never, 0x0c (no TTL) never.
    let ups = vec![
        update(U::Insert, entry(flows, fwd, 0x0a, 2, TTL_NS)),
        update(U::Insert, entry(flows, fwd, 0x0b, 2, TTL_NS)),
        update(U::Insert, entry(flows, fwd, 0x0c, 2, 0)),
        update(U::Insert, entry(plain, fwd, 0x01, 2, 0)),
    ];
    c.write(write_req(1, ups)).await.unwrap();
    let out = lock(&srv.device.engine).packet(3, &frame(0, 0x0a)).unwrap();
    assert_eq!(out.iter().map(|o| o.port).collect::<Vec<_>>(), vec![2], "0x0a's entry forwards");
    let stop = Arc::new(AtomicBool::new(false));
    let h = hitter(&srv, 0x0a, stop.clone());

    let n = next_idle(&mut s).await;
    let keys: Vec<Vec<u8>> = n.table_entry.iter().map(key_of).collect();
    assert_eq!(keys, vec![vec![0x0b]], "only the unhit entry with a TTL expires: {n:?}");
    let t = &n.table_entry[0];
    assert_eq!((t.table_id, t.idle_timeout_ns), (flows, TTL_NS));
    assert!(n.timestamp > 0);
    // The entry stays until the controller deletes it.
    let v = elapsed(&mut c, flows).await;
    assert_eq!(v.len(), 3, "{v:?}");
    assert!(ns_of(&v, 0x0b) >= TTL_NS, "0x0b expired, so it was idle a TTL: {v:?}");
    assert!(ns_of(&v, 0x0a) < ns_of(&v, 0x0b), "{v:?}");
    assert!(v.iter().all(|x| x.2 == if x.0 == [0x0c] { 0 } else { TTL_NS }), "{v:?}");

    // Nobody hits 0x0a any more: it expires too; 0x0b is deleted and is
    // never reported again.
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    let del = update(U::Delete, entry(flows, fwd, 0x0b, 0, 0));
    c.write(write_req(1, vec![del])).await.unwrap();
    let mut seen_a = false;
    for _ in 0..10 {
        let n = next_idle(&mut s).await;
        let keys: Vec<Vec<u8>> = n.table_entry.iter().map(key_of).collect();
        assert!(!keys.contains(&vec![0x0c]), "0x0c has no TTL: {n:?}");
        // A notification already made before the delete may name 0x0b.
        if keys.contains(&vec![0x0a]) {
            assert!(!keys.contains(&vec![0x0b]), "0x0b is deleted: {n:?}");
            seen_a = true;
            break;
        }
    }
    assert!(seen_a, "0x0a expires once nobody hits it");
    // A hit re-arms it: its time since the last hit is below 0x0c's,
    // which was never hit.
    lock(&srv.device.engine).packet(3, &frame(0, 0x0a)).unwrap();
    let v = elapsed(&mut c, flows).await;
    assert!(ns_of(&v, 0x0a) < ns_of(&v, 0x0c), "{v:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_timeout_notifications_compiled() {
    idle_timeouts(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_timeout_notifications_reference() {
    idle_timeouts(true).await;
}

struct MeterIds {
    table: u32,
    police: u32,
}

async fn meter_ids(c: &mut Client) -> MeterIds {
    let info = p4info(c).await;
    MeterIds {
        table: id_of(info.tables.iter().filter_map(|t| t.preamble.as_ref()), "I.policer"),
        police: action_id(&info, "I.police"),
    }
}

/// The policer table's entry for key 0x0a: police, out on port 2.
fn police_entry(ids: &MeterIds) -> p4v1::TableEntry {
    p4v1::TableEntry {
        table_id: ids.table,
        r#match: vec![p4v1::FieldMatch {
            field_id: 1,
            field_match_type: Some(p4v1::field_match::FieldMatchType::Exact(
                p4v1::field_match::Exact { value: vec![0x0a] },
            )),
        }],
        action: Some(p4v1::TableAction {
            r#type: Some(p4v1::table_action::Type::Action(p4v1::Action {
                action_id: ids.police,
                params: vec![p4v1::action::Param { param_id: 1, value: vec![2] }],
            })),
        }),
        ..Default::default()
    }
}

fn mc(cir: i64, cburst: i64, pir: i64, pburst: i64) -> p4v1::MeterConfig {
    p4v1::MeterConfig { cir, cburst, pir, pburst, eburst: 0 }
}

fn data(packets: i64, bytes: i64) -> p4v1::CounterData {
    p4v1::CounterData { packet_count: packets, byte_count: bytes }
}

fn colours(g: (i64, i64), y: (i64, i64), r: (i64, i64)) -> p4v1::MeterCounterData {
    p4v1::MeterCounterData {
        green: Some(data(g.0, g.1)),
        yellow: Some(data(y.0, y.1)),
        red: Some(data(r.0, r.1)),
    }
}

fn up(ty: U, e: E) -> p4v1::Update {
    p4v1::Update { r#type: ty as i32, entity: Some(p4v1::Entity { entity: Some(e) }) }
}

async fn one(c: &mut Client, e: E) -> E {
    let mut got = read_all(c, e).await.expect("read");
    assert_eq!(got.len(), 1, "{got:?}");
    got.remove(0).entity.unwrap()
}

fn default_of(table: u32) -> p4v1::TableEntry {
    p4v1::TableEntry { table_id: table, is_default_action: true, ..Default::default() }
}

/// `n` frames from `src` through meter.p4 (the clock stands still).
fn send(srv: &Server, src: u8, n: usize) {
    let mut e = lock(&srv.device.engine);
    for _ in 0..n {
        e.packet(0, &frame(0, src)).expect("packet runs");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_entry_cells_and_colour_counts() {
    let srv = start(Some("meter.p4")).await;
    lock(&srv.device.engine).set_clock(Clock::manual(Arc::new(AtomicU64::new(0))));
    let (mut c, _s) = primary(&srv).await;
    let ids = meter_ids(&mut c).await;
    let dc = |data| {
        E::DirectCounterEntry(p4v1::DirectCounterEntry {
            table_entry: Some(default_of(ids.table)),
            data,
        })
    };
    let dm = |config| {
        E::DirectMeterEntry(p4v1::DirectMeterEntry {
            table_entry: Some(default_of(ids.table)),
            config,
            counter_data: None,
        })
    };

    // Misses count in the default entry's counter.
    send(&srv, 0x0b, 3);
    let E::DirectCounterEntry(got) = one(&mut c, dc(None)).await else { panic!() };
    assert_eq!(got.data, Some(data(3, 180)));
    assert!(got.table_entry.unwrap().is_default_action);
    // Written through DirectCounterEntry, read through the table entry.
    c.write(write_req(1, vec![up(U::Modify, dc(Some(data(7, 8))))])).await.unwrap();
    let q = p4v1::TableEntry {
        counter_data: Some(data(0, 0)),
        meter_config: Some(mc(0, 0, 0, 0)),
        meter_counter_data: Some(p4v1::MeterCounterData::default()),
        ..default_of(ids.table)
    };
    let E::TableEntry(got) = one(&mut c, E::TableEntry(q.clone())).await else { panic!() };
    assert_eq!((got.counter_data, got.meter_config), (Some(data(7, 8)), None));
    // Unconfigured, the default meter colours every miss GREEN.
    assert_eq!(got.meter_counter_data, Some(colours((3, 180), (0, 0), (0, 0))));

    // A tiny default meter: one GREEN, then RED.
    c.write(write_req(1, vec![up(U::Modify, dm(Some(mc(1, 1, 1, 1))))])).await.unwrap();
    send(&srv, 0x0b, 3);
    let E::DirectMeterEntry(got) = one(&mut c, dm(None)).await else { panic!() };
    assert_eq!(got.config, Some(mc(1, 1, 1, 1)));
    assert_eq!(got.counter_data, Some(colours((4, 240), (0, 0), (2, 120))));

    // The default entry's MODIFY sets its counter and meter as an entry's
    // does.
    let mut d = default_of(ids.table);
    d.action = None;
    d.counter_data = Some(data(1, 2));
    d.meter_config = Some(mc(5, 5, 6, 6));
    c.write(write_req(1, vec![update(U::Modify, d)])).await.unwrap();
    let E::TableEntry(got) = one(&mut c, E::TableEntry(q.clone())).await else { panic!() };
    assert_eq!((got.counter_data, got.meter_config), (Some(data(1, 2)), Some(mc(5, 5, 6, 6))));

    // An entry's colours: GREEN, YELLOW, RED at t=0.
    let mut e = police_entry(&ids);
    e.meter_config = Some(mc(1, 1, 2, 2));
    c.write(write_req(1, vec![update(U::Insert, e.clone())])).await.unwrap();
    send(&srv, 0x0a, 3);
    let key = p4v1::TableEntry { action: None, meter_config: None, ..e.clone() };
    let E::DirectMeterEntry(got) = one(
        &mut c,
        E::DirectMeterEntry(p4v1::DirectMeterEntry {
            table_entry: Some(key.clone()),
            config: None,
            counter_data: None,
        }),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(got.counter_data, Some(colours((1, 60), (1, 60), (1, 60))));
    let q = p4v1::TableEntry {
        meter_counter_data: Some(p4v1::MeterCounterData::default()),
        ..key.clone()
    };
    let E::TableEntry(got) = one(&mut c, E::TableEntry(q)).await else { panic!() };
    assert_eq!(got.meter_counter_data, Some(colours((1, 60), (1, 60), (1, 60))));
    // Writing per-colour counts is refused, by name.
    let w = E::DirectMeterEntry(p4v1::DirectMeterEntry {
        table_entry: Some(key),
        config: None,
        counter_data: Some(colours((0, 0), (0, 0), (0, 0))),
    });
    let err = c.write(write_req(1, vec![up(U::Modify, w)])).await.unwrap_err();
    let codes = update_codes(&err);
    assert_eq!(codes[0].0, Code::Unimplemented as i32, "{codes:?}");
    assert!(codes[0].1.contains("MeterCounterData"), "{codes:?}");
}

fn set_config(action: i32, source: Vec<u8>) -> p4v1::SetForwardingPipelineConfigRequest {
    p4v1::SetForwardingPipelineConfigRequest {
        device_id: DEVICE,
        election_id: eid(1),
        action,
        config: Some(p4v1::ForwardingPipelineConfig {
            p4info: None,
            p4_device_config: source,
            cookie: None,
        }),
        ..Default::default()
    }
}

/// What a rollback and RECONCILE_AND_COMMIT put back is the whole of an
/// entry's direct cells (counts, meter configuration, the meter's bucket
/// fill, per-colour counts) and its idle watch (TTL, time since the last
/// hit). The meter runs on a clock standing at 0, so a refilled bucket
/// would show as a GREEN packet where the drained one answers RED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_and_reconcile_keep_direct_cells_and_timeouts() {
    use p4v1::set_forwarding_pipeline_config_request::Action as A;
    let srv = start(Some("meter.p4")).await;
    let now = Arc::new(AtomicU64::new(0));
    lock(&srv.device.engine).set_clock(Clock::manual(now.clone()));
    let (mut c, _s) = primary(&srv).await;
    let ids = meter_ids(&mut c).await;
    let mut e = police_entry(&ids);
    e.meter_config = Some(mc(1, 1, 2, 2));
    e.counter_data = Some(data(40, 50));
    let mut d = default_of(ids.table);
    d.counter_data = Some(data(3, 4));
    d.meter_config = Some(mc(1, 2, 3, 4));
    c.write(write_req(1, vec![update(U::Insert, e.clone()), update(U::Modify, d)])).await.unwrap();
    // GREEN, YELLOW, RED: both buckets are empty.
    send(&srv, 0x0a, 3);
    // A batch rolled back: its MODIFY (which refilled the buckets) is
    // undone, and so is its MODIFY of the default entry's cells.
    let mut d2 = default_of(ids.table);
    d2.counter_data = Some(data(9, 9));
    d2.meter_config = Some(mc(5, 6, 7, 8));
    let ups =
        vec![update(U::Modify, e.clone()), update(U::Modify, d2), update(U::Insert, e.clone())];
    let batch = p4v1::WriteRequest {
        atomicity: p4v1::write_request::Atomicity::RollbackOnError as i32,
        ..write_req(1, ups)
    };
    c.write(batch).await.unwrap_err();
    let src = std::fs::read(program("meter.p4")).unwrap();
    c.set_forwarding_pipeline_config(set_config(A::ReconcileAndCommit as i32, src)).await.unwrap();
    // The new engine reads the same standing clock.
    lock(&srv.device.engine).set_clock(Clock::manual(now.clone()));
    send(&srv, 0x0a, 1);
    let ask = |t: p4v1::TableEntry| p4v1::TableEntry {
        counter_data: Some(data(0, 0)),
        meter_config: Some(mc(0, 0, 0, 0)),
        meter_counter_data: Some(p4v1::MeterCounterData::default()),
        action: None,
        ..t
    };
    let key = p4v1::TableEntry { meter_config: None, counter_data: None, ..e };
    let E::TableEntry(got) = one(&mut c, E::TableEntry(ask(key))).await else { panic!() };
    assert_eq!(got.counter_data, Some(data(44, 50 + 4 * 60)));
    assert_eq!(got.meter_config, Some(mc(1, 1, 2, 2)));
    // The fourth packet was RED: the buckets stayed drained.
    assert_eq!(got.meter_counter_data, Some(colours((1, 60), (1, 60), (2, 120))));
    let E::TableEntry(got) = one(&mut c, E::TableEntry(ask(default_of(ids.table)))).await else {
        panic!()
    };
    assert_eq!((got.counter_data, got.meter_config), (Some(data(3, 4)), Some(mc(1, 2, 3, 4))));

    // Idle timeouts are kept too, with the time since the last hit.
    let src = std::fs::read(program("idle.p4")).unwrap();
    c.set_forwarding_pipeline_config(set_config(A::VerifyAndCommit as i32, src.clone()))
        .await
        .unwrap();
    let info = p4info(&mut c).await;
    let flows = table(&info, "I.flows").preamble.as_ref().unwrap().id;
    let fwd = action_id(&info, "I.fwd");
    c.write(write_req(1, vec![update(U::Insert, entry(flows, fwd, 0x0a, 2, 7_000_000_000))]))
        .await
        .unwrap();
    let quiet = Duration::from_millis(200);
    tokio::time::sleep(quiet).await;
    c.set_forwarding_pipeline_config(set_config(A::ReconcileAndCommit as i32, src)).await.unwrap();
    let v = elapsed(&mut c, flows).await;
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].2, 7_000_000_000);
    assert!(v[0].1 >= quiet.as_nanos() as i64, "not hit for {quiet:?}, yet {v:?}");
}

/// The engines' hit counts (what idle timeouts watch): per entry, with
/// the compiled core's caches off and on (a cached way counts too), and
/// kept when another entry's deletion rebuilds the compiled core table.
#[test]
fn engine_hit_counts_survive_other_entries_changes() {
    use sluice_p4::engines::CacheMode;
    use sluice_p4::target::{EntrySpec, KeyMatch};
    let loaded = sluice_p4::parse::load_file(&program("idle.p4")).unwrap();
    let runs = [
        (false, CacheMode::Off),
        (false, CacheMode::Megaflow),
        (false, CacheMode::On),
        (true, CacheMode::Off),
    ];
    for (reference, mode) in runs {
        let (mut e, _) = Engine::load(&loaded, reference).unwrap();
        e.set_cache_mode(mode);
        let spec = |src: u8| EntrySpec {
            table: "flows".into(),
            keys: vec![(
                "hdr.eth.src".into(),
                KeyMatch::Exact(sluice_p4::ast::BigValue::from_u128(u128::from(src))),
            )],
            action: "fwd".into(),
            args: vec![("port".into(), sluice_p4::ast::BigValue::from_u128(2))],
            priority: None,
        };
        let a = e.add_entry(&spec(0x0a)).unwrap();
        let b = e.add_entry(&spec(0x0b)).unwrap();
        let c = e.add_entry(&spec(0x0c)).unwrap();
        for _ in 0..3 {
            e.packet(3, &frame(0, 0x0a)).unwrap();
        }
        e.packet(3, &frame(0, 0x0b)).unwrap();
        let what = format!("{} engine, caches {mode:?}", e.name());
        assert_eq!(e.entry_hits("flows").unwrap(), vec![(a, 3), (b, 1), (c, 0)], "{what}");
        e.delete_entry("flows", b).unwrap();
        e.packet(3, &frame(0, 0x0c)).unwrap();
        assert_eq!(e.entry_hits("flows").unwrap(), vec![(a, 3), (c, 1)], "{what}");
    }
}
