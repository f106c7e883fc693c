//! OpenFlow 1.3.5 behaviours of the reference pipeline that the other test
//! files do not reach: meter deletion and FLOW_REMOVED (METER_DELETE),
//! NO_PKT_COUNTS / NO_BYT_COUNTS, DELETE filtered by out_group, SELECT
//! hashing over MAC addresses, the PACKET_IN buffer ring, and the
//! GROUP_FEATURES reply.

use sluice_ofp::action::ty as at;
use sluice_ofp::consts::{group_id, port_no, OFP_NO_BUFFER};
use sluice_ofp::error::ErrorCode;
use sluice_ofp::group::GroupType;
use sluice_ofp::message::{
    error_reply, flow_mod_command as fc, flow_removed_reason, group_mod_command as gc,
    meter_mod_command as mc, Message, PacketOut,
};
use sluice_ofp::multipart::{
    FlowStats, FlowStatsRequest, MultipartReplyBody, MultipartRequest, MultipartRequestBody,
};
use sluice_ofp::ofctl::{parse_actions, parse_group, parse_meter};
use sluice_pipeline::{Config, Outgoing, Pipeline};

// ------------------------------------------------------------------ helpers

mod common;
use common::{add, add_ports, flow};

/// An Ethernet/IPv4/UDP frame (92 bytes).
fn udp(
    src_mac: u8,
    dst_mac: u8,
    src_ip: [u8; 4],
    dst_ip: [u8; 4],
    sport: u16,
    dport: u16,
) -> Vec<u8> {
    common::udp_frame(src_mac, dst_mac, src_ip, dst_ip, sport, dport, &[0x5a; 50])
}

fn pkt() -> Vec<u8> {
    udp(1, 2, [10, 0, 0, 1], [10, 0, 0, 2], 1000, 53)
}

fn switch_with(cfg: Config, ports: &[u32]) -> Pipeline {
    let mut p = Pipeline::new(cfg);
    add_ports(&mut p, ports);
    p
}

fn switch(ports: &[u32]) -> Pipeline {
    switch_with(Config::default(), ports)
}

fn meter(p: &mut Pipeline, cmd: u16, text: &str) {
    let mm = parse_meter(text).unwrap_or_else(|e| panic!("{text}: {e:?}")).to_meter_mod(cmd);
    p.meter_mod(&mm).unwrap_or_else(|e| panic!("{text}: {e}"));
}

/// Output ports of the frames sent.
fn run(p: &mut Pipeline, in_port: u32, frame: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    p.process(in_port, frame, &mut |port: u32, _q: Option<u32>, _f: &[u8]| out.push(port));
    out
}

/// Handle a message; returns the replies and the frames sent.
fn handle(p: &mut Pipeline, msg: &Message) -> (Vec<Outgoing>, Vec<(u32, Vec<u8>)>) {
    let raw = msg.encode(9);
    let mut sent = Vec::new();
    let r = p.handle(9, msg, &raw, &mut |port: u32, _: Option<u32>, f: &[u8]| {
        sent.push((port, f.to_vec()))
    });
    (r, sent)
}

fn all_flows(p: &Pipeline) -> Vec<FlowStats> {
    let req = FlowStatsRequest {
        table_id: 0xff,
        out_port: port_no::ANY,
        out_group: group_id::ANY,
        cookie: 0,
        cookie_mask: 0,
        match_: Default::default(),
    };
    match p.multipart(&MultipartRequestBody::Flow(req)) {
        Ok(MultipartReplyBody::Flow(fs)) => fs,
        other => panic!("{other:?}"),
    }
}

fn cookies(p: &Pipeline) -> Vec<u64> {
    let mut c: Vec<u64> = p.tables().iter().flat_map(|t| t.entries()).map(|e| e.cookie).collect();
    c.sort_unstable();
    c
}

// -------------------------------------------------------------------- tests

#[test]
fn meter_delete_removes_its_flows_with_reason_meter_delete() {
    assert_eq!(flow_removed_reason::METER_DELETE, 4, "OF 1.3.5 openflow.h value");
    let mut p = switch(&[1, 2, 3]);
    meter(&mut p, mc::ADD, "meter=1,pktps,band=type=drop,rate=1000");
    meter(&mut p, mc::ADD, "meter=2,pktps,band=type=drop,rate=1000");
    add(&mut p, "priority=5,cookie=0xa,in_port=1,send_flow_rem,actions=meter:1,output:2");
    add(&mut p, "priority=6,cookie=0xb,in_port=2,actions=meter:1,output:3"); // silent
    add(&mut p, "table=1,priority=7,cookie=0xc,send_flow_rem,actions=meter:1,output:1");
    add(&mut p, "priority=8,cookie=0xd,in_port=3,send_flow_rem,actions=meter:2,output:1");
    add(&mut p, "priority=9,cookie=0xe,in_port=3,tcp,send_flow_rem,actions=output:1");
    assert_eq!(run(&mut p, 1, &pkt()), [2]);
    run(&mut p, 1, &pkt());
    assert!(p.take_async().is_empty());

    meter(&mut p, mc::DELETE, "meter=1");
    // Only the flows using meter 1 are gone, in every table.
    assert_eq!(cookies(&p), [0xd, 0xe]);
    let msgs = p.take_async();
    let mut removed: Vec<_> = msgs
        .iter()
        .map(|m| match m {
            Message::FlowRemoved(fr) => fr.clone(),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    removed.sort_by_key(|fr| fr.cookie);
    assert_eq!(removed.len(), 2, "{removed:?}");
    let (a, c) = (&removed[0], &removed[1]);
    assert_eq!((a.cookie, a.priority, a.table_id), (0xa, 5, 0));
    assert_eq!((c.cookie, c.priority, c.table_id), (0xc, 7, 1));
    for fr in &removed {
        assert_eq!(fr.reason, flow_removed_reason::METER_DELETE);
    }
    assert_eq!((a.packet_count, a.byte_count), (2, 2 * pkt().len() as u64));
    // Packets of the removed flow are no longer forwarded.
    assert!(run(&mut p, 1, &pkt()).is_empty());

    // Deleting meter 2 removes the other metered flow, not the unmetered one.
    meter(&mut p, mc::DELETE, "meter=2");
    assert_eq!(cookies(&p), [0xe]);
    let r = p.take_async();
    assert!(
        matches!(&r[..], [Message::FlowRemoved(fr)]
            if fr.cookie == 0xd && fr.reason == flow_removed_reason::METER_DELETE),
        "{r:?}"
    );
}

#[test]
fn no_pkt_counts_and_no_byt_counts_flags() {
    let mut p = switch(&[1, 2, 3, 4]);
    add(&mut p, "priority=5,cookie=1,in_port=1,no_packet_counts,actions=output:2");
    add(&mut p, "priority=5,cookie=2,in_port=2,no_byte_counts,actions=output:1");
    add(&mut p, "priority=5,cookie=3,in_port=3,no_packet_counts,no_byte_counts,actions=output:1");
    add(&mut p, "priority=5,cookie=4,in_port=4,actions=output:1");
    let len = pkt().len() as u64;
    for port in [1, 1, 1, 2, 2, 3, 4, 4] {
        assert_eq!(run(&mut p, port, &pkt()).len(), 1);
    }
    let mut fs = all_flows(&p);
    fs.sort_by_key(|f| f.cookie);
    let counts: Vec<_> = fs.iter().map(|f| (f.cookie, f.packet_count, f.byte_count)).collect();
    assert_eq!(counts, [(1, 0, 3 * len), (2, 2, 0), (3, 0, 0), (4, 2, 2 * len)]);
    // The flags are reported back.
    use sluice_ofp::message::flow_mod_flags as ff;
    assert_eq!(fs[0].flags, ff::NO_PKT_COUNTS);
    assert_eq!(fs[1].flags, ff::NO_BYT_COUNTS);
    // Aggregate stats follow the same counters.
    let agg = p
        .multipart(&MultipartRequestBody::Aggregate(FlowStatsRequest {
            table_id: 0xff,
            out_port: port_no::ANY,
            out_group: group_id::ANY,
            cookie: 0,
            cookie_mask: 0,
            match_: Default::default(),
        }))
        .unwrap();
    let MultipartReplyBody::Aggregate(a) = agg else { panic!("{agg:?}") };
    assert_eq!((a.packet_count, a.byte_count, a.flow_count), (4, 5 * len, 4));
}

#[test]
fn delete_filtered_by_out_group() {
    let mut p = switch(&[1, 2, 3]);
    let g = |p: &mut Pipeline, t: &str| {
        p.group_mod(&parse_group(t).unwrap().to_group_mod(gc::ADD)).unwrap()
    };
    g(&mut p, "group_id=1,type=all,bucket=output:2");
    g(&mut p, "group_id=2,type=all,bucket=output:3");
    add(&mut p, "priority=1,cookie=1,in_port=1,actions=group:1");
    add(&mut p, "priority=2,cookie=2,in_port=2,actions=group:2");
    add(&mut p, "priority=3,cookie=3,in_port=3,actions=write_actions(group:1)");
    add(&mut p, "priority=4,cookie=4,in_port=3,udp,actions=output:2");
    add(&mut p, "table=1,priority=5,cookie=5,actions=output:2,group:1");
    // A group that no flow uses: nothing deleted.
    g(&mut p, "group_id=3,type=all,bucket=output:1");
    flow(&mut p, fc::DELETE, "out_group=3").unwrap();
    assert_eq!(cookies(&p), [1, 2, 3, 4, 5]);
    // out_group=1 deletes apply- and write-actions users, in all tables.
    flow(&mut p, fc::DELETE, "out_group=1").unwrap();
    assert_eq!(cookies(&p), [2, 4]);
    // Combined with out_port: both must match.
    flow(&mut p, fc::DELETE, "out_port=2,out_group=2").unwrap();
    assert_eq!(cookies(&p), [2, 4]);
    flow(&mut p, fc::DELETE, "out_group=2").unwrap();
    assert_eq!(cookies(&p), [4]);
    // The groups themselves are untouched.
    assert_eq!(run(&mut p, 3, &pkt()), [2]);
}

#[test]
fn select_group_hash_includes_mac_addresses() {
    let mut p = switch(&[1, 2, 3]);
    p.group_mod(
        &parse_group("group_id=7,type=select,bucket=output:2,bucket=output:3")
            .unwrap()
            .to_group_mod(gc::ADD),
    )
    .unwrap();
    add(&mut p, "priority=1,in_port=1,actions=group:7");
    let mut seen = std::collections::BTreeMap::<u32, usize>::new();
    for mac in 0..64u8 {
        let f = udp(mac, 2, [10, 0, 0, 1], [10, 0, 0, 2], 1000, 53);
        let first = run(&mut p, 1, &f);
        assert_eq!(first.len(), 1, "one bucket per packet");
        for _ in 0..3 {
            assert_eq!(run(&mut p, 1, &f), first, "same packet, same bucket (mac {mac})");
        }
        *seen.entry(first[0]).or_default() += 1;
    }
    assert_eq!(seen.keys().copied().collect::<Vec<_>>(), [2, 3], "{seen:?}");
    // Destination MACs spread too.
    let mut dst = std::collections::BTreeSet::new();
    for mac in 0..64u8 {
        dst.extend(run(&mut p, 1, &udp(1, mac, [10, 0, 0, 1], [10, 0, 0, 2], 1000, 53)));
    }
    assert_eq!(dst.into_iter().collect::<Vec<_>>(), [2, 3]);
}

#[test]
fn packet_in_buffer_ring_of_two() {
    let mut p = switch_with(Config { n_buffers: 2, ..Config::default() }, &[1, 2]);
    add(&mut p, "priority=1,in_port=1,actions=controller:32");
    let frames: Vec<Vec<u8>> = (0..3u8)
        .map(|i| udp(1, 2, [10, 0, 0, 1], [10, 0, 0, 2], 1000, 60 + u16::from(i)))
        .collect();
    let mut ids = Vec::new();
    for f in &frames {
        run(&mut p, 1, f);
        let msgs = p.take_async();
        let [Message::PacketIn(pi)] = &msgs[..] else { panic!("{msgs:?}") };
        assert_ne!(pi.buffer_id, OFP_NO_BUFFER);
        assert_eq!(pi.data.len(), 32);
        assert_eq!(usize::from(pi.total_len), f.len());
        ids.push(pi.buffer_id);
    }
    let mut uniq = ids.clone();
    uniq.sort_unstable();
    uniq.dedup();
    assert_eq!(uniq.len(), 3, "distinct buffer ids {ids:?}");

    let po = |id: u32| {
        Message::PacketOut(PacketOut {
            buffer_id: id,
            in_port: 1,
            actions: parse_actions("output:2").unwrap(),
            data: vec![],
        })
    };
    let unknown = |msg: &Message| error_reply(ErrorCode::BRC_BUFFER_UNKNOWN, &msg.encode(9));

    // The oldest was overwritten.
    let m = po(ids[0]);
    let (r, sent) = handle(&mut p, &m);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].msg, unknown(&m));
    assert!(sent.is_empty());
    // The two newest release their full frames, once each.
    for i in [2, 1] {
        let m = po(ids[i]);
        let (r, sent) = handle(&mut p, &m);
        assert!(r.is_empty(), "{r:?}");
        assert_eq!(sent, vec![(2, frames[i].clone())]);
        let (r, sent) = handle(&mut p, &m);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].msg, unknown(&m));
        assert!(sent.is_empty());
    }
}

#[test]
fn group_features_reply_matches_config() {
    let cfg = Config { max_groups: 1234, ..Config::default() };
    let mut p = switch_with(cfg.clone(), &[1]);
    let msg = Message::MultipartRequest(MultipartRequest {
        flags: 0,
        body: MultipartRequestBody::GroupFeatures,
    });
    let (r, _) = handle(&mut p, &msg);
    assert_eq!(r.len(), 1, "{r:?}");
    let Message::MultipartReply(rep) = &r[0].msg else { panic!("{r:?}") };
    assert_eq!(rep.flags, 0);
    let MultipartReplyBody::GroupFeatures(gf) = &rep.body else { panic!("{rep:?}") };
    let types = [GroupType::All, GroupType::Select, GroupType::Indirect, GroupType::FastFailover]
        .iter()
        .fold(0u32, |m, t| m | 1 << t.to_u8());
    assert_eq!(gf.types, types);
    assert_eq!(gf.types, 0b1111);
    // OFPGFC_SELECT_WEIGHT | SELECT_LIVENESS | CHAINING | CHAINING_CHECKS.
    assert_eq!(gf.capabilities, 1 | 2 | 4 | 8);
    assert_eq!(gf.max_groups, [cfg.max_groups; 4]);
    // Every action type the pipeline executes, for every group type.
    let expected = [
        at::OUTPUT,
        at::COPY_TTL_OUT,
        at::COPY_TTL_IN,
        at::SET_MPLS_TTL,
        at::DEC_MPLS_TTL,
        at::PUSH_VLAN,
        at::POP_VLAN,
        at::PUSH_MPLS,
        at::POP_MPLS,
        at::SET_QUEUE,
        at::GROUP,
        at::SET_NW_TTL,
        at::DEC_NW_TTL,
        at::SET_FIELD,
        at::PUSH_PBB,
        at::POP_PBB,
    ]
    .iter()
    .fold(0u32, |m, &a| m | 1 << a);
    for bm in gf.actions {
        assert_ne!(bm, 0);
        assert_eq!(bm, expected, "{bm:#x}");
    }
}
