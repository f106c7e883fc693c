//! Digests through the in-process P4Runtime server: `DigestEntry`
//! writes, reads and their errors; a packet's digest arriving as a
//! `DigestList`; the digest cache with and without acks; `max_list_size`
//! batching; `max_timeout_ns`; lists dropped with no primary.
//!
//! The forwarding thread's part is done by hand: run a frame through the
//! engine, then `Device::collect_digests`. Absence of a list is shown
//! without clocks: a later, different digest must be the next list.

mod common;

use std::time::Duration;

use common::*;
use p4v1::stream_message_response::Update as Resp;
use p4v1::update::Type as U;
use sluice_p4::target::Target as _;
use sluice_p4rt::proto::p4::config::v1 as cfg;
use sluice_p4rt::proto::p4::v1 as p4v1;
use tonic::Code;

const SECOND: i64 = 1_000_000_000;

async fn digest_id(
    c: &mut p4v1::p4_runtime_client::P4RuntimeClient<tonic::transport::Channel>,
) -> u32 {
    let info: cfg::P4Info = p4info(c).await;
    let d = info.digests.iter().find(|d| d.preamble.as_ref().unwrap().name == "learn_t");
    d.expect("learn_t in the P4Info").preamble.as_ref().unwrap().id
}

fn entry(id: u32, list: i32, timeout_ns: i64, ack_ns: i64) -> p4v1::DigestEntry {
    p4v1::DigestEntry {
        digest_id: id,
        config: Some(p4v1::digest_entry::Config {
            max_timeout_ns: timeout_ns,
            max_list_size: list,
            ack_timeout_ns: ack_ns,
        }),
    }
}

fn upd(ty: U, e: p4v1::DigestEntry) -> p4v1::Update {
    p4v1::Update {
        r#type: ty as i32,
        entity: Some(p4v1::Entity { entity: Some(p4v1::entity::Entity::DigestEntry(e)) }),
    }
}

async fn write1(
    c: &mut p4v1::p4_runtime_client::P4RuntimeClient<tonic::transport::Channel>,
    ty: U,
    e: p4v1::DigestEntry,
) -> Result<(), i32> {
    match c.write(write_req(1, vec![upd(ty, e)])).await {
        Ok(_) => Ok(()),
        Err(s) => Err(update_codes(&s)[0].0),
    }
}

/// A frame from source MAC `02:00:00:00:00:<mac>` into `port`, and the
/// forwarding thread's hand-over of its digest.
fn frame_in(srv: &Server, mac: u8, port: u32) {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&[2, 0, 0, 0, 0, mac, 0x88, 0xb5]);
    f.extend_from_slice(b"digest me");
    let outs = sluice_p4rt::device::lock(&srv.device.engine).packet(port, &f).unwrap();
    assert_eq!(outs.len(), 1, "the test program forwards every frame");
    srv.device.collect_digests();
}

/// The (MAC, port) members of a list.
fn members(l: &p4v1::DigestList) -> Vec<(u64, u64)> {
    l.data
        .iter()
        .map(|d| match &d.data {
            Some(p4v1::p4_data::Data::Struct(s)) => {
                let n = |i: usize| match &s.members[i].data {
                    Some(p4v1::p4_data::Data::Bitstring(b)) => {
                        b.iter().fold(0u64, |a, x| a << 8 | u64::from(*x))
                    }
                    other => panic!("member {i} is not a bitstring: {other:?}"),
                };
                assert_eq!(s.members.len(), 2);
                (n(0), n(1))
            }
            other => panic!("digest data is not a struct: {other:?}"),
        })
        .collect()
}

fn mac(m: u8) -> u64 {
    0x0200_0000_0000 | u64::from(m)
}

async fn next_list(s: &mut Stream) -> p4v1::DigestList {
    match s.next().await {
        Resp::Digest(l) => l,
        other => panic!("expected a DigestList, got {other:?}"),
    }
}

async fn ack(s: &Stream, l: &p4v1::DigestList) {
    let a = p4v1::DigestListAck { digest_id: l.digest_id, list_id: l.list_id };
    s.send(p4v1::stream_message_request::Update::DigestAck(a)).await;
}

#[tokio::test]
async fn digest_entries_write_read_and_errors() {
    let srv = start(Some("digest.p4")).await;
    let (mut c, _s) = primary(&srv).await;
    let id = digest_id(&mut c).await;
    let all = p4v1::entity::Entity::DigestEntry(p4v1::DigestEntry::default());
    assert!(read_all(&mut c, all.clone()).await.unwrap().is_empty(), "nothing configured");
    write1(&mut c, U::Insert, entry(id, 4, SECOND, 2 * SECOND)).await.unwrap();
    let got = read_all(&mut c, all.clone()).await.unwrap();
    let want = p4v1::Entity {
        entity: Some(p4v1::entity::Entity::DigestEntry(entry(id, 4, SECOND, 2 * SECOND))),
    };
    assert_eq!(got, vec![want]);
    assert_eq!(
        write1(&mut c, U::Insert, entry(id, 1, 0, 0)).await,
        Err(Code::AlreadyExists as i32)
    );
    write1(&mut c, U::Modify, entry(id, 1, 0, 0)).await.unwrap();
    let one = p4v1::entity::Entity::DigestEntry(p4v1::DigestEntry { digest_id: id, config: None });
    let got = read_all(&mut c, one.clone()).await.unwrap();
    let Some(p4v1::entity::Entity::DigestEntry(e)) = &got[0].entity else { panic!("{got:?}") };
    assert_eq!(e.config.unwrap().max_list_size, 1);
    // Unknown ids, missing configs, negative values.
    assert_eq!(write1(&mut c, U::Insert, entry(id + 1, 1, 0, 0)).await, Err(Code::NotFound as i32));
    let bare = p4v1::DigestEntry { digest_id: id, config: None };
    assert_eq!(write1(&mut c, U::Modify, bare).await, Err(Code::InvalidArgument as i32));
    assert_eq!(
        write1(&mut c, U::Modify, entry(id, -1, 0, 0)).await,
        Err(Code::InvalidArgument as i32)
    );
    let bad = p4v1::entity::Entity::DigestEntry(p4v1::DigestEntry { digest_id: 7, config: None });
    assert_eq!(read_all(&mut c, bad).await.unwrap_err().code(), Code::NotFound);
    // Delete, then modify and delete of a missing entry.
    write1(&mut c, U::Delete, bare).await.unwrap();
    assert!(read_all(&mut c, one).await.unwrap().is_empty());
    assert_eq!(write1(&mut c, U::Modify, entry(id, 1, 0, 0)).await, Err(Code::NotFound as i32));
    assert_eq!(write1(&mut c, U::Delete, bare).await, Err(Code::NotFound as i32));
    // A backup may not write them.
    let e = c.write(write_req(0, vec![upd(U::Insert, entry(id, 1, 0, 0))])).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
}

#[tokio::test]
async fn digest_lists_carry_the_data_and_the_cache_waits_for_the_ack() {
    let srv = start(Some("digest.p4")).await;
    let (mut c, mut s) = primary(&srv).await;
    let id = digest_id(&mut c).await;
    // Not configured: nothing is sent; the next list is the one after.
    frame_in(&srv, 0x10, 4);
    write1(&mut c, U::Insert, entry(id, 1, 0, 600 * SECOND)).await.unwrap();
    frame_in(&srv, 0x01, 5);
    let l1 = next_list(&mut s).await;
    assert_eq!(l1.digest_id, id);
    assert!(l1.timestamp > 0);
    assert_eq!(members(&l1), vec![(mac(1), 5)]);
    // The same data before the ack is in the cache: the next list is 02's.
    frame_in(&srv, 0x01, 5);
    frame_in(&srv, 0x02, 5);
    let l2 = next_list(&mut s).await;
    assert_eq!(members(&l2), vec![(mac(2), 5)]);
    assert!(l2.list_id > l1.list_id);
    // After the ack it is sent again, in a new list.
    ack(&s, &l1).await;
    // The ack and the frame race on different paths: a marker digest
    // after the ack proves it was handled.
    for _ in 0..100 {
        if srv.device.digests.lock().unwrap().cached_lists() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    frame_in(&srv, 0x01, 5);
    let l3 = next_list(&mut s).await;
    assert_eq!(members(&l3), vec![(mac(1), 5)]);
    assert!(l3.list_id > l2.list_id);
    // An ack for a digest the P4Info lacks is a stream error.
    let bad = p4v1::DigestListAck { digest_id: id + 1, list_id: 1 };
    s.send(p4v1::stream_message_request::Update::DigestAck(bad)).await;
    match s.next().await {
        Resp::Error(e) => assert_eq!(e.canonical_code, Code::InvalidArgument as i32),
        other => panic!("expected a stream error, got {other:?}"),
    }
    // ack_timeout_ns 0 keeps no cache: every repeat is sent.
    write1(&mut c, U::Modify, entry(id, 1, 0, 0)).await.unwrap();
    frame_in(&srv, 0x02, 6);
    frame_in(&srv, 0x02, 6);
    assert_eq!(members(&next_list(&mut s).await), vec![(mac(2), 6)]);
    assert_eq!(members(&next_list(&mut s).await), vec![(mac(2), 6)]);
    assert_eq!(srv.device.digest_counts().lists, 5);
}

#[tokio::test]
async fn max_list_size_batches_distinct_data() {
    let srv = start(Some("digest.p4")).await;
    let (mut c, mut s) = primary(&srv).await;
    let id = digest_id(&mut c).await;
    // Three per list, a timeout far beyond the test, no cache.
    write1(&mut c, U::Insert, entry(id, 3, 600 * SECOND, 0)).await.unwrap();
    for m in [1, 2, 2, 1, 3, 4, 5, 6] {
        frame_in(&srv, m, 2);
    }
    let a = next_list(&mut s).await;
    assert_eq!(members(&a), vec![(mac(1), 2), (mac(2), 2), (mac(3), 2)], "duplicates are left out");
    let b = next_list(&mut s).await;
    assert_eq!(members(&b), vec![(mac(4), 2), (mac(5), 2), (mac(6), 2)]);
    // max_list_size 0 (no limit) and a short timeout: the timer sends
    // what waits.
    write1(&mut c, U::Modify, entry(id, 0, 20_000_000, 0)).await.unwrap();
    frame_in(&srv, 7, 2);
    frame_in(&srv, 8, 2);
    let t = next_list(&mut s).await;
    let mut got = members(&t);
    if got.len() == 1 {
        // The timer may fire between the two hand-overs.
        got.extend(members(&next_list(&mut s).await));
    }
    assert_eq!(got, vec![(mac(7), 2), (mac(8), 2)]);
}

#[tokio::test]
async fn lists_without_a_primary_are_dropped_and_counted() {
    let srv = start(Some("digest.p4")).await;
    let mut c = client(srv.addr).await;
    let id = digest_id(&mut c).await;
    let s = Stream::open(&mut c, 1).await;
    write1(&mut c, U::Insert, entry(id, 1, 0, 600 * SECOND)).await.unwrap();
    // A backup learns when the primary has left.
    let mut c2 = client(srv.addr).await;
    let mut b = Stream::open(&mut c2, 0).await;
    assert_eq!(b.next_arbitration().await.0, Code::AlreadyExists as i32);
    drop(s);
    assert_eq!(b.next_arbitration().await.0, Code::NotFound as i32);
    frame_in(&srv, 9, 3);
    for _ in 0..200 {
        if srv.device.digest_counts().lists_dropped > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let n = srv.device.digest_counts();
    assert_eq!((n.lists, n.lists_dropped), (0, 1), "{n:?}");
    // A dropped list is not cached: the backup, now primary, gets the
    // same data.
    b.arbitrate(2).await;
    assert_eq!(b.next_arbitration().await.0, Code::Ok as i32);
    frame_in(&srv, 9, 3);
    assert_eq!(members(&next_list(&mut b).await), vec![(mac(9), 3)]);
}
