//! Write atomicity with the generated tonic client, on `atomic.p4`:
//! ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC batches mixing good updates of
//! every kind with a failing one leave everything Read returns (entries,
//! default entries, direct and indexed counters, registers, multicast
//! groups, digest configuration) and what packets do exactly as before,
//! with one `p4.Error` per update (ABORTED around the failing one); and a
//! packet thread running while batches go in, come out and roll back
//! never sees half of a batch.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use p4v1::entity::Entity as E;
use p4v1::update::Type as U;
use p4v1::write_request::Atomicity;
use prost::Message as _;
use sluice_p4::target::Target as _;
use sluice_p4rt::device::lock;
use sluice_p4rt::proto::p4::config::v1 as cfg;
use sluice_p4rt::proto::p4::v1 as p4v1;
use tonic::transport::Channel;
use tonic::Code;

type Client = p4v1::p4_runtime_client::P4RuntimeClient<Channel>;

const A: [u8; 6] = [2, 0, 0, 0, 0, 0xa];
const B: [u8; 6] = [2, 0, 0, 0, 0, 0xb];
const C: [u8; 6] = [2, 0, 0, 0, 0, 0xc];

struct Ids {
    t1: u32,
    t2: u32,
    dst1: u32,
    dst2: u32,
    mark_a: u32,
    mark_b: u32,
    seen: u32,
    cells: u32,
}

fn id_of<'a>(mut pre: impl Iterator<Item = &'a cfg::Preamble>, name: &str) -> u32 {
    pre.find(|p| p.name == name).unwrap_or_else(|| panic!("{name} in the P4Info")).id
}

async fn ids(c: &mut Client) -> Ids {
    let info = p4info(c).await;
    let tables = || info.tables.iter().filter_map(|t| t.preamble.as_ref());
    let actions = || info.actions.iter().filter_map(|t| t.preamble.as_ref());
    let field = |t: &str| {
        let t = info.tables.iter().find(|x| x.preamble.as_ref().unwrap().name == t).unwrap();
        t.match_fields[0].id
    };
    Ids {
        t1: id_of(tables(), "I.t1"),
        t2: id_of(tables(), "I.t2"),
        dst1: field("I.t1"),
        dst2: field("I.t2"),
        mark_a: id_of(actions(), "I.mark_a"),
        mark_b: id_of(actions(), "I.mark_b"),
        seen: id_of(info.counters.iter().filter_map(|t| t.preamble.as_ref()), "I.seen"),
        cells: id_of(info.registers.iter().filter_map(|t| t.preamble.as_ref()), "I.cells"),
    }
}

fn act(id: u32, v: u8) -> Option<p4v1::TableAction> {
    Some(p4v1::TableAction {
        r#type: Some(p4v1::table_action::Type::Action(p4v1::Action {
            action_id: id,
            params: vec![p4v1::action::Param { param_id: 1, value: vec![v] }],
        })),
    })
}

fn entry(
    table: u32,
    field: u32,
    mac: [u8; 6],
    action: Option<p4v1::TableAction>,
) -> p4v1::TableEntry {
    p4v1::TableEntry {
        table_id: table,
        r#match: vec![p4v1::FieldMatch {
            field_id: field,
            field_match_type: Some(p4v1::field_match::FieldMatchType::Exact(
                p4v1::field_match::Exact { value: mac.to_vec() },
            )),
        }],
        action,
        ..Default::default()
    }
}

fn t1(ids: &Ids, mac: [u8; 6], v: u8) -> p4v1::TableEntry {
    entry(ids.t1, ids.dst1, mac, act(ids.mark_a, v))
}

fn t2(ids: &Ids, mac: [u8; 6], v: u8) -> p4v1::TableEntry {
    entry(ids.t2, ids.dst2, mac, act(ids.mark_b, v))
}

fn counted(mut e: p4v1::TableEntry, packets: i64) -> p4v1::TableEntry {
    e.counter_data = Some(p4v1::CounterData { byte_count: packets * 100, packet_count: packets });
    e
}

fn default_of(table: u32, action: Option<p4v1::TableAction>) -> p4v1::TableEntry {
    p4v1::TableEntry { table_id: table, is_default_action: true, action, ..Default::default() }
}

fn up(ty: U, e: E) -> p4v1::Update {
    p4v1::Update { r#type: ty as i32, entity: Some(p4v1::Entity { entity: Some(e) }) }
}

fn counter_write(ids: &Ids, index: Option<i64>, packets: i64) -> p4v1::Update {
    up(
        U::Modify,
        E::CounterEntry(p4v1::CounterEntry {
            counter_id: ids.seen,
            index: index.map(|index| p4v1::Index { index }),
            data: Some(p4v1::CounterData { byte_count: packets * 64, packet_count: packets }),
        }),
    )
}

fn register_write(ids: &Ids, index: Option<i64>, v: u8) -> p4v1::Update {
    up(
        U::Modify,
        E::RegisterEntry(p4v1::RegisterEntry {
            register_id: ids.cells,
            index: index.map(|index| p4v1::Index { index }),
            data: Some(p4v1::P4Data { data: Some(p4v1::p4_data::Data::Bitstring(vec![v])) }),
        }),
    )
}

fn group(ty: U, id: u32, ports: &[u32]) -> p4v1::Update {
    use p4v1::packet_replication_engine_entry::Type as Pre;
    let replicas = ports
        .iter()
        .map(|p| p4v1::Replica {
            instance: 1,
            port_kind: Some(p4v1::replica::PortKind::Port(vec![*p as u8])),
            ..Default::default()
        })
        .collect();
    up(
        ty,
        E::PacketReplicationEngineEntry(p4v1::PacketReplicationEngineEntry {
            r#type: Some(Pre::MulticastGroupEntry(p4v1::MulticastGroupEntry {
                multicast_group_id: id,
                replicas,
                ..Default::default()
            })),
        }),
    )
}

fn direct_counter(ids: &Ids, mac: [u8; 6], packets: i64) -> p4v1::Update {
    up(
        U::Modify,
        E::DirectCounterEntry(p4v1::DirectCounterEntry {
            table_entry: Some(entry(ids.t1, ids.dst1, mac, None)),
            data: Some(p4v1::CounterData { byte_count: packets, packet_count: packets }),
        }),
    )
}

async fn write(
    c: &mut Client,
    atomicity: Atomicity,
    updates: Vec<p4v1::Update>,
) -> Result<(), tonic::Status> {
    let mut r = write_req(1, updates);
    r.atomicity = atomicity as i32;
    c.write(r).await.map(|_| ())
}

/// Everything Read returns that a batch may change, each entity
/// encoded, sorted (entries restored by a rollback may come back in
/// another order).
async fn everything(c: &mut Client, ids: &Ids) -> Vec<Vec<u8>> {
    use p4v1::packet_replication_engine_entry::Type as Pre;
    let mut out = Vec::new();
    let queries = [
        E::TableEntry(p4v1::TableEntry {
            table_id: ids.t1,
            counter_data: Some(Default::default()),
            ..Default::default()
        }),
        E::TableEntry(p4v1::TableEntry { table_id: ids.t2, ..Default::default() }),
        E::TableEntry(default_of(ids.t1, None)),
        E::TableEntry(default_of(ids.t2, None)),
        E::CounterEntry(p4v1::CounterEntry { counter_id: ids.seen, ..Default::default() }),
        E::RegisterEntry(p4v1::RegisterEntry { register_id: ids.cells, ..Default::default() }),
        E::PacketReplicationEngineEntry(p4v1::PacketReplicationEngineEntry {
            r#type: Some(Pre::MulticastGroupEntry(Default::default())),
        }),
    ];
    for q in queries {
        for e in read_all(c, q).await.expect("read") {
            out.push(e.encode_to_vec());
        }
    }
    out.sort();
    out
}

fn frame(dst: [u8; 6]) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x88, 0xb5]);
    f.extend_from_slice(&[0; 46]);
    f
}

/// The port a frame to `dst` leaves by.
fn port_for(srv: &Server, dst: [u8; 6]) -> u32 {
    let outs = lock(&srv.device.engine).packet(3, &frame(dst)).expect("packet");
    assert_eq!(outs.len(), 1, "one copy out: {outs:?}");
    outs[0].port
}

/// The state the rollback tests start from: t1 has A (with a count) and
/// B, t2 has A, t2's default is mark_b(2), a counter cell, a register
/// cell and multicast group 1 are set.
async fn setup(c: &mut Client, ids: &Ids) {
    let ups = vec![
        update(U::Insert, counted(t1(ids, A, 1), 5)),
        update(U::Insert, t1(ids, B, 1)),
        update(U::Insert, t2(ids, A, 2)),
        update(U::Modify, default_of(ids.t2, act(ids.mark_b, 2))),
        counter_write(ids, Some(1), 7),
        register_write(ids, Some(2), 9),
        group(U::Insert, 1, &[1, 2]),
    ];
    write(c, Atomicity::ContinueOnError, ups).await.expect("setup");
}

/// A batch touching every kind of entity the setup wrote, all valid.
fn good_batch(ids: &Ids) -> Vec<p4v1::Update> {
    vec![
        update(U::Insert, counted(t1(ids, C, 1), 3)),
        update(U::Modify, counted(t1(ids, A, 0), 11)),
        update(U::Delete, t1(ids, B, 1)),
        update(U::Delete, t2(ids, A, 2)),
        update(U::Modify, default_of(ids.t1, act(ids.mark_a, 1))),
        update(U::Modify, default_of(ids.t2, None)),
        counter_write(ids, None, 42),
        register_write(ids, None, 77),
        direct_counter(ids, C, 99),
        group(U::Modify, 1, &[3]),
        group(U::Insert, 2, &[1]),
        update(U::Insert, t2(ids, B, 2)),
    ]
}

async fn rollback_mode(atomicity: Atomicity) {
    let srv = start(Some("atomic.p4")).await;
    let (mut c, _s) = primary(&srv).await;
    let ids = ids(&mut c).await;
    setup(&mut c, &ids).await;
    let ports = [port_for(&srv, A), port_for(&srv, B), port_for(&srv, C)];
    assert_eq!(ports, [4, 4, 3], "the setup's entries and t2's default at work");
    // Packets change counters: each snapshot is taken after the last one.
    let before = everything(&mut c, &ids).await;

    // The good batch with a duplicate insert of C in the middle, a valid
    // update after it.
    let mut ups = good_batch(&ids);
    let bad = 9;
    ups.insert(bad, update(U::Insert, t1(&ids, C, 0)));
    let n = ups.len();
    let err = write(&mut c, atomicity, ups).await.expect_err("the batch fails");
    let codes = update_codes(&err);
    assert_eq!(codes.len(), n, "one p4.Error per update: {codes:?}");
    for (i, (code, msg)) in codes.iter().enumerate() {
        if i == bad {
            assert_eq!(*code, Code::AlreadyExists as i32, "update {i}: {msg}");
        } else {
            assert_eq!(*code, Code::Aborted as i32, "update {i}: {msg}");
            let word = if i < bad { "rolled back" } else { "not attempted" };
            assert!(msg.contains(word) && msg.contains("update 9"), "update {i}: {msg}");
        }
    }
    let after = everything(&mut c, &ids).await;
    assert_eq!(after.len(), before.len());
    assert!(after == before, "{atomicity:?}: a failed batch leaves Read's view as it was");

    // The first update failing, and the last one.
    let mut ups = good_batch(&ids);
    ups.insert(0, update(U::Modify, t2(&ids, C, 2)));
    let codes = update_codes(&write(&mut c, atomicity, ups).await.expect_err("fails"));
    assert_eq!(codes[0].0, Code::NotFound as i32, "{codes:?}");
    assert!(codes[1..].iter().all(|x| x.0 == Code::Aborted as i32), "{codes:?}");
    let mut ups = good_batch(&ids);
    ups.push(register_write(&ids, Some(4), 1));
    let codes = update_codes(&write(&mut c, atomicity, ups).await.expect_err("fails"));
    assert_eq!(codes.last().unwrap().0, Code::OutOfRange as i32, "{codes:?}");
    assert!(codes[..codes.len() - 1].iter().all(|x| x.0 == Code::Aborted as i32));
    assert!(everything(&mut c, &ids).await == before, "{atomicity:?}: unchanged again");
    let ports = [port_for(&srv, A), port_for(&srv, B), port_for(&srv, C)];
    assert_eq!(ports, [4, 4, 3], "{atomicity:?}: and the packets' view");
    let before = everything(&mut c, &ids).await;

    // Without the bad update the same batch goes in whole.
    write(&mut c, atomicity, good_batch(&ids)).await.expect("the good batch");
    let changed = everything(&mut c, &ids).await;
    assert!(changed != before, "the good batch changed the switch");
    let ports = [port_for(&srv, A), port_for(&srv, B), port_for(&srv, C)];
    assert_eq!(ports, [1, 4, 2], "{atomicity:?}: the good batch's entries at work");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_on_error_leaves_the_switch_as_before() {
    rollback_mode(Atomicity::RollbackOnError).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dataplane_atomic_failure_leaves_the_switch_as_before() {
    rollback_mode(Atomicity::DataplaneAtomic).await;
}

/// A digest configuration written in a failed batch is gone afterwards,
/// one deleted is back (digest.p4).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_entries_roll_back() {
    let srv = start(Some("digest.p4")).await;
    let (mut c, _s) = primary(&srv).await;
    let info = p4info(&mut c).await;
    let id = info.digests[0].preamble.as_ref().unwrap().id;
    let digest = |ty: U, ack_ns: i64| {
        up(
            ty,
            E::DigestEntry(p4v1::DigestEntry {
                digest_id: id,
                config: Some(p4v1::digest_entry::Config {
                    max_timeout_ns: 0,
                    max_list_size: 1,
                    ack_timeout_ns: ack_ns,
                }),
            }),
        )
    };
    let read = |c: &mut Client| {
        let mut c = c.clone();
        async move {
            read_all(&mut c, E::DigestEntry(p4v1::DigestEntry::default()))
                .await
                .unwrap()
                .into_iter()
                .map(|e| e.encode_to_vec())
                .collect::<Vec<_>>()
        }
    };
    let bad = || digest(U::Modify, -1);
    let codes = update_codes(
        &write(&mut c, Atomicity::RollbackOnError, vec![digest(U::Insert, 5), bad()])
            .await
            .expect_err("fails"),
    );
    assert_eq!(codes.iter().map(|x| x.0).collect::<Vec<_>>(), [10, 3]);
    assert!(read(&mut c).await.is_empty(), "the inserted config is rolled back");
    write(&mut c, Atomicity::ContinueOnError, vec![digest(U::Insert, 5)]).await.unwrap();
    let configured = read(&mut c).await;
    assert_eq!(configured.len(), 1);
    for batch in [
        vec![digest(U::Delete, 0), bad()],
        vec![digest(U::Modify, 7), bad()],
        vec![digest(U::Delete, 0), digest(U::Insert, 9), bad()],
    ] {
        write(&mut c, Atomicity::DataplaneAtomic, batch).await.expect_err("fails");
        assert_eq!(read(&mut c).await, configured, "the config is as it was");
    }
}

/// A packet thread sends frames to A while batches insert t1's and t2's
/// entries for A together, delete them together, and insert them with a
/// failing third update (rolled back), 150 rounds per mode. Port 2 or 3
/// would be a packet that saw one entry of a batch without the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packets_never_see_half_a_batch() {
    let srv = start(Some("atomic.p4")).await;
    let (mut c, _s) = primary(&srv).await;
    let ids = ids(&mut c).await;
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let seen: Arc<[AtomicU64; 5]> = Arc::new(Default::default());
    let thread = {
        let (engine, stop, done, seen) =
            (srv.device.engine.clone(), stop.clone(), done.clone(), seen.clone());
        std::thread::spawn(move || {
            let f = frame(A);
            let start = Instant::now();
            // Bounded: stopped by the test, else after 2 M packets or 120 s.
            for _ in 0..2_000_000 {
                if stop.load(Ordering::Acquire) || start.elapsed() > Duration::from_secs(120) {
                    break;
                }
                // Counted under the lock: a packet counted after a
                // Write returned ran after that batch.
                let mut e = lock(&engine);
                let outs = e.packet(3, &f).expect("packet");
                let p = outs.first().map_or(0, |o| o.port as usize).min(4);
                seen[p].fetch_add(1, Ordering::Relaxed);
                done.fetch_add(1, Ordering::Release);
                drop(e);
                std::thread::yield_now();
            }
        })
    };
    // Lets the packet thread run at least one packet before going on.
    let one_packet = || async {
        let n = done.load(Ordering::Acquire);
        for _ in 0..5000 {
            if done.load(Ordering::Acquire) > n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("the packet thread stopped");
    };
    let both = |ty: U| vec![update(ty, t1(&ids, A, 1)), update(ty, t2(&ids, A, 2))];
    for mode in [Atomicity::DataplaneAtomic, Atomicity::RollbackOnError] {
        for _ in 0..150 {
            write(&mut c, mode, both(U::Insert)).await.expect("insert both");
            one_packet().await;
            write(&mut c, mode, both(U::Delete)).await.expect("delete both");
            one_packet().await;
            let mut ups = both(U::Insert);
            ups.push(update(U::Delete, t1(&ids, C, 1)));
            write(&mut c, mode, ups).await.expect_err("the third update fails");
            one_packet().await;
        }
    }
    stop.store(true, Ordering::Release);
    thread.join().expect("packet thread");
    let seen: Vec<u64> = seen.iter().map(|x| x.load(Ordering::Relaxed)).collect();
    assert_eq!(seen[0], 0, "every packet leaves: {seen:?}");
    assert_eq!((seen[2], seen[3]), (0, 0), "no packet saw half a batch (by port: {seen:?})");
    assert!(seen[1] >= 600 && seen[4] >= 300, "packets ran between the batches: {seen:?}");
}
