//! Several threads forwarding through published pipeline versions while
//! the owner keeps changing and publishing the master: no packet is lost
//! from the counters (per-worker shards merged on read), and after
//! `publish_and_wait` every packet sees the new version (barrier).

use sluice_ofp::action::Action;
use sluice_ofp::consts::{group_id, port_no, table_id, OFP_NO_BUFFER};
use sluice_ofp::instruction::Instruction;
use sluice_ofp::message::{flow_mod_command as fc, FlowMod};
use sluice_ofp::multipart::FlowStatsRequest;
use sluice_ofp::oxm::{FieldBytes, FieldId, Match, Oxm};
use sluice_pipeline::publish::Publisher;
use sluice_pipeline::{Config, Pipeline};

mod common;

const WORKERS: usize = 3;
const PACKETS: u64 = 20_000;

fn frame(dst_port: u16) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&[0, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[0, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&46u16.to_be_bytes());
    f[22] = 64;
    f[23] = 17;
    f[26..30].copy_from_slice(&[10, 0, 0, 1]);
    f[30..34].copy_from_slice(&[10, 0, 0, 2]);
    f[34..36].copy_from_slice(&1000u16.to_be_bytes());
    f[36..38].copy_from_slice(&dst_port.to_be_bytes());
    f[38..40].copy_from_slice(&26u16.to_be_bytes());
    f
}

fn flow(priority: u16, udp_dst: Option<u16>, out: u32) -> FlowMod {
    let mut oxms = Vec::new();
    if let Some(p) = udp_dst {
        let b = |field: FieldId, v: u128| Oxm::Basic {
            field,
            value: FieldBytes::from_u128(v, field.len()),
            mask: None,
        };
        oxms = vec![
            b(FieldId::EthType, 0x0800),
            b(FieldId::IpProto, 17),
            b(FieldId::UdpDst, p.into()),
        ];
    }
    FlowMod {
        table_id: 0,
        command: fc::ADD,
        priority,
        buffer_id: OFP_NO_BUFFER,
        out_port: port_no::ANY,
        out_group: group_id::ANY,
        r#match: Match { oxms },
        instructions: vec![Instruction::ApplyActions(vec![Action::Output {
            port: out,
            max_len: 0,
        }])],
        ..FlowMod::default()
    }
}

fn master() -> Pipeline {
    let mut p = Pipeline::new(Config { n_tables: 4, workers: WORKERS, ..Config::default() });
    common::add_ports(&mut p, &[1, 2, 3]);
    p.flow_mod(&flow(1, None, 2)).unwrap();
    p
}

#[test]
fn counters_survive_concurrent_publications() {
    let mut m = master();
    let contexts: Vec<_> = (0..WORKERS).map(|_| m.worker()).collect();
    let mut pb = Publisher::new(m);
    let published = pb.published();
    let threads: Vec<_> = contexts
        .into_iter()
        .enumerate()
        .map(|(i, mut w)| {
            let published = published.clone();
            std::thread::spawn(move || {
                let f = frame(9); // never matched by the flows the owner adds
                let mut sent = 0u64;
                let mut versions = std::collections::BTreeSet::new();
                for burst in 0..PACKETS / 32 {
                    let v = published.load();
                    versions.insert(v.flow_generation());
                    w.set_now(burst);
                    for _ in 0..32 {
                        v.process_with(
                            &mut w,
                            1 + (i as u32 % 3),
                            &f,
                            &mut |_: u32, _: Option<u32>, _: &[u8]| {
                                sent += 1;
                            },
                        );
                    }
                }
                (sent, versions.len())
            })
        })
        .collect();
    // Meanwhile: add and remove flows, publishing after each change.
    let mut publications = 0;
    let mut k = 0u16;
    while !threads.iter().all(|t| t.is_finished()) && k < 2000 {
        pb.master_mut().flow_mod(&flow(10, Some(100 + k), 3)).unwrap();
        if k % 2 == 1 {
            let del = FlowMod { command: fc::DELETE_STRICT, ..flow(10, Some(100 + k - 1), 3) };
            pb.master_mut().flow_mod(&del).unwrap();
        }
        pb.publish();
        publications += 1;
        k += 1;
    }
    let mut sent = 0;
    for t in threads {
        let (s, _versions) = t.join().unwrap();
        sent += s;
    }
    assert!(publications > 0);
    let expect = WORKERS as u64 * (PACKETS / 32) * 32;
    // Every packet hit the catch-all (port 1 → 2, ports 2 and 3 → 2 too,
    // except the packets received on port 2 itself: never sent back).
    let req = FlowStatsRequest {
        table_id: table_id::ALL,
        out_port: port_no::ANY,
        out_group: group_id::ANY,
        cookie: 0,
        cookie_mask: 0,
        match_: Match::default(),
    };
    let p = pb.master();
    let catch_all = p.tables()[0].entries().iter().find(|e| e.priority == 1).unwrap();
    assert_eq!(catch_all.packet_count(), expect, "per-worker shards merged on read");
    assert_eq!(catch_all.byte_count(), expect * 60);
    assert_eq!(p.tables()[0].lookup_count(), expect);
    let rx: u64 = p.ports().iter().map(|e| e.counters().rx_packets).sum();
    assert_eq!(rx, expect);
    let tx: u64 = p.ports().iter().map(|e| e.counters().tx_packets).sum();
    assert_eq!(tx, sent);
    assert!(p.multipart(&sluice_ofp::multipart::MultipartRequestBody::Flow(req)).is_ok());
    assert_eq!(pb.fallbacks(), 0, "workers hold a version for one burst only");
}

#[test]
fn after_publish_and_wait_every_burst_sees_the_change() {
    let mut m = master();
    let mut w = m.worker();
    let mut pb = Publisher::new(m);
    let published = pb.published();
    let f = frame(7);
    let out_port = |v: &Pipeline, w: &mut sluice_pipeline::Worker| {
        let mut out = Vec::new();
        v.process_with(w, 1, &f, &mut |p: u32, _: Option<u32>, _: &[u8]| out.push(p));
        out
    };
    assert_eq!(out_port(&published.load(), &mut w), vec![2]);
    // Changed on the master but not published: workers do not see it.
    pb.master_mut().flow_mod(&flow(10, Some(7), 3)).unwrap();
    assert_eq!(out_port(&published.load(), &mut w), vec![2]);
    assert!(pb.publish_and_wait());
    assert_eq!(out_port(&published.load(), &mut w), vec![3]);
    // Twice more, so both copies have been brought up to date by replay.
    pb.master_mut()
        .flow_mod(&FlowMod { command: fc::DELETE_STRICT, ..flow(10, Some(7), 3) })
        .unwrap();
    assert!(pb.publish_and_wait());
    assert_eq!(out_port(&published.load(), &mut w), vec![2]);
    pb.master_mut().flow_mod(&flow(10, Some(7), 3)).unwrap();
    assert!(pb.publish_and_wait());
    assert_eq!(out_port(&published.load(), &mut w), vec![3]);
    assert_eq!(published.version(), 3);
}
