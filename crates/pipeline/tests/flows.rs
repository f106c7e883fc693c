//! Flow-table semantics of the reference pipeline, driven by ovs-ofctl
//! text and literal packets.

use sluice_ofp::consts::port_no;
use sluice_ofp::error::ErrorCode;
use sluice_ofp::message::{
    flow_mod_command as fc, flow_removed_reason, group_mod_command as gc, meter_mod_command as mc,
    packet_in_reason, Message,
};
use sluice_ofp::multipart::{
    FlowStatsRequest, MultipartReplyBody, MultipartRequest, MultipartRequestBody,
};
use sluice_ofp::ofctl::{parse_flow, parse_group, parse_meter, Usage};
use sluice_pipeline::{Config, Outgoing, Pipeline};

mod common;
use common::{add, add_ports, flow};

/// An Ethernet/IPv4/UDP frame (88 bytes).
fn udp(
    src_mac: u8,
    dst_mac: u8,
    src_ip: [u8; 4],
    dst_ip: [u8; 4],
    sport: u16,
    dport: u16,
) -> Vec<u8> {
    common::udp_frame(src_mac, dst_mac, src_ip, dst_ip, sport, dport, &[0xab; 46])
}

fn switch(ports: &[u32]) -> Pipeline {
    let mut p = Pipeline::new(Config::default());
    add_ports(&mut p, ports);
    p
}

fn send(p: &mut Pipeline, msg: Message) -> Vec<Outgoing> {
    let raw = msg.encode(7);
    p.handle(7, &msg, &raw, &mut |_: u32, _: Option<u32>, _: &[u8]| {})
}

/// Frames sent, as (port, frame).
fn run(p: &mut Pipeline, in_port: u32, frame: &[u8]) -> Vec<(u32, Vec<u8>)> {
    let mut out = Vec::new();
    p.process(in_port, frame, &mut |port: u32, _q: Option<u32>, f: &[u8]| {
        out.push((port, f.to_vec()))
    });
    out
}

fn ports_of(v: &[(u32, Vec<u8>)]) -> Vec<u32> {
    v.iter().map(|(p, _)| *p).collect()
}

fn pkt() -> Vec<u8> {
    udp(1, 2, [10, 0, 0, 1], [10, 0, 0, 2], 1000, 53)
}

#[test]
fn highest_priority_match_wins_and_counts() {
    let mut p = switch(&[1, 2, 3]);
    add(&mut p, "priority=10,in_port=1,actions=output:2");
    add(&mut p, "priority=20,udp,in_port=1,tp_dst=53,actions=output:3");
    assert_eq!(ports_of(&run(&mut p, 1, &pkt())), [3]);
    let other = udp(1, 2, [10, 0, 0, 1], [10, 0, 0, 2], 1000, 54);
    assert_eq!(ports_of(&run(&mut p, 1, &other)), [2]);
    assert_eq!(run(&mut p, 2, &pkt()), vec![]);
    let t = &p.tables()[0];
    assert_eq!((t.lookup_count(), t.matched_count()), (3, 2));
    assert_eq!(t.entries()[0].packet_count(), 1);
    assert_eq!(t.entries()[0].byte_count(), pkt().len() as u64);
}

#[test]
fn table_miss_entry_sends_no_match_packet_in() {
    let mut p = switch(&[1, 2]);
    add(&mut p, "priority=0,actions=controller:64");
    run(&mut p, 1, &pkt());
    let msgs = p.take_async();
    let Message::PacketIn(pi) = &msgs[0] else { panic!("{msgs:?}") };
    assert_eq!(pi.reason, packet_in_reason::NO_MATCH);
    assert_eq!(pi.data.len(), 64);
    assert_eq!(usize::from(pi.total_len), pkt().len());
    assert_ne!(pi.buffer_id, sluice_ofp::consts::OFP_NO_BUFFER);
    // The buffered packet can be released with a packet-out.
    let po = sluice_ofp::message::PacketOut {
        buffer_id: pi.buffer_id,
        in_port: 1,
        actions: sluice_ofp::ofctl::parse_actions("output:2").unwrap(),
        data: vec![],
    };
    let mut sent = Vec::new();
    let msg = Message::PacketOut(po);
    let raw = msg.encode(1);
    let r = p.handle(1, &msg, &raw, &mut |port: u32, _: Option<u32>, f: &[u8]| {
        sent.push((port, f.to_vec()))
    });
    assert!(r.is_empty(), "{r:?}");
    assert_eq!(sent, vec![(2, pkt())]);
    // A second use of the same buffer is an error.
    let r = p.handle(1, &msg, &raw, &mut |_: u32, _: Option<u32>, _: &[u8]| {});
    assert!(matches!(&r[0].msg, Message::Error(_)));
}

#[test]
fn no_entry_drops_and_action_packet_in_has_reason_action() {
    let mut p = switch(&[1, 2]);
    assert!(run(&mut p, 1, &pkt()).is_empty());
    assert!(p.take_async().is_empty());
    add(&mut p, "priority=5,ip,actions=controller");
    run(&mut p, 1, &pkt());
    let Message::PacketIn(pi) = &p.take_async()[0] else { panic!() };
    assert_eq!(pi.reason, packet_in_reason::ACTION);
    assert_eq!(pi.buffer_id, sluice_ofp::consts::OFP_NO_BUFFER);
    assert_eq!(pi.data, pkt());
}

#[test]
fn goto_table_write_metadata_and_action_set() {
    let mut p = switch(&[1, 2, 3]);
    add(
        &mut p,
        "table=0,in_port=1,actions=write_metadata:0x5/0xff,write_actions(output:3),goto_table:1",
    );
    add(&mut p, "table=1,priority=10,metadata=0x5/0xff,actions=write_actions(output:2)");
    // The set's output is overwritten by table 1's write-actions.
    assert_eq!(ports_of(&run(&mut p, 1, &pkt())), [2]);
    add(&mut p, "table=1,priority=20,metadata=0x5/0xff,actions=clear_actions");
    assert!(run(&mut p, 1, &pkt()).is_empty());
}

#[test]
fn flow_mod_validation_errors() {
    let mut p = switch(&[1, 2]);
    assert_eq!(
        flow(&mut p, fc::ADD, "table=1,actions=goto_table:1"),
        Err(ErrorCode::BIC_BAD_TABLE_ID)
    );
    assert_eq!(
        flow(&mut p, fc::ADD, "table=3,actions=goto_table:2"),
        Err(ErrorCode::BIC_BAD_TABLE_ID)
    );
    assert_eq!(flow(&mut p, fc::ADD, "actions=group:9"), Err(ErrorCode::BAC_BAD_OUT_GROUP));
    assert_eq!(
        flow(&mut p, fc::ADD, "actions=meter:9,output:1"),
        Err(ErrorCode::MMFC_UNKNOWN_METER)
    );
    assert_eq!(flow(&mut p, fc::ADD, "actions=output:0"), Err(ErrorCode::BAC_BAD_OUT_PORT));
    assert_eq!(
        flow(&mut p, fc::ADD, "actions=output:4294967041"),
        Err(ErrorCode::BAC_BAD_OUT_PORT)
    ); // OFPP_MAX + 1
    assert_eq!(flow(&mut p, fc::ADD, "actions=push_vlan:0x0800"), Err(ErrorCode::BAC_BAD_ARGUMENT));
    assert_eq!(
        flow(&mut p, fc::ADD, "actions=set_field:10.0.0.1->ip_dst"),
        Err(ErrorCode::BAC_MATCH_INCONSISTENT)
    );
    assert!(flow(&mut p, fc::ADD, "ip,actions=set_field:10.0.0.1->ip_dst").is_ok());
    // Prerequisites are checked on the wire match (ofctl would refuse tp_dst alone).
    let mut fm = parse_flow("actions=drop", Usage::Add).unwrap().to_flow_mod(fc::ADD);
    fm.r#match = parse_flow("udp,tp_dst=53,actions=drop", Usage::Add).unwrap().r#match;
    fm.r#match.oxms.remove(0); // drop eth_type
    assert_eq!(p.flow_mod(&fm), Err(ErrorCode::BMC_BAD_PREREQ));
    fm.table_id = 255;
    assert_eq!(p.flow_mod(&fm), Err(ErrorCode::FMFC_BAD_TABLE_ID));
    let mut fm = parse_flow("actions=drop", Usage::Add).unwrap().to_flow_mod(fc::ADD);
    fm.flags = 0x100;
    assert_eq!(p.flow_mod(&fm), Err(ErrorCode::FMFC_BAD_FLAGS));
    fm.flags = 0;
    fm.command = 9;
    assert_eq!(p.flow_mod(&fm), Err(ErrorCode::FMFC_BAD_COMMAND));
    // Errors come back as OFPT_ERROR with the offending bytes.
    let msg =
        Message::FlowMod(parse_flow("actions=group:9", Usage::Add).unwrap().to_flow_mod(fc::ADD));
    let r = send(&mut p, msg.clone());
    let Message::Error(e) = &r[0].msg else { panic!() };
    let expected = sluice_ofp::message::error_reply(ErrorCode::BAC_BAD_OUT_GROUP, &msg.encode(7));
    assert_eq!(r[0].msg, expected);
    let _ = e;
}

#[test]
fn check_overlap_and_identical_add_keeps_counters() {
    let mut p = switch(&[1, 2]);
    add(&mut p, "priority=5,ip,nw_dst=10.0.0.0/8,actions=output:2");
    assert_eq!(
        flow(&mut p, fc::ADD, "priority=5,ip,nw_dst=10.1.0.0/16,check_overlap,actions=output:1"),
        Err(ErrorCode::FMFC_OVERLAP)
    );
    // Different priority: no overlap error.
    add(&mut p, "priority=6,ip,nw_dst=10.1.0.0/16,check_overlap,actions=output:2");
    // Disjoint: fine.
    add(&mut p, "priority=5,ip,nw_dst=11.0.0.0/8,check_overlap,actions=output:2");
    run(&mut p, 1, &pkt());
    let before: u64 = p.tables()[0].entries().iter().map(|e| e.packet_count()).sum();
    assert_eq!(before, 1);
    add(&mut p, "priority=5,ip,nw_dst=10.0.0.0/8,actions=output:1");
    assert_eq!(p.tables()[0].len(), 3);
    let e = p.tables()[0].entries().iter().find(|e| e.priority == 5 && e.cookie == 0).unwrap();
    assert_eq!(e.packet_count(), 1, "counters are kept on an identical add");
    add(&mut p, "priority=5,ip,nw_dst=10.0.0.0/8,reset_counts,actions=output:1");
    let e = &p.tables()[0].entries()[1];
    assert_eq!((e.priority, e.packet_count()), (5, 0));
}

#[test]
fn modify_and_delete_strict_nonstrict_cookies_out_port() {
    let mut p = switch(&[1, 2, 3]);
    add(&mut p, "priority=1,cookie=0x10,ip,nw_dst=10.0.0.1,actions=output:2");
    add(&mut p, "priority=2,cookie=0x20,ip,nw_dst=10.0.0.2,actions=output:3");
    add(&mut p, "priority=3,cookie=0x11,ip,actions=output:2");
    // Non-strict modify of everything under `ip` with cookie 0x1?/0xf0.
    flow(&mut p, fc::MODIFY, "cookie=0x10/0xf0,ip,actions=output:1").unwrap();
    let outs: Vec<_> = p.tables()[0]
        .entries()
        .iter()
        .map(|e| (e.priority, format!("{:?}", e.instructions)))
        .collect();
    assert!(
        outs[0].1.contains("port: 1")
            && outs[2].1.contains("port: 1")
            && outs[1].1.contains("port: 3"),
        "{outs:?}"
    );
    // Strict delete needs the exact priority.
    flow(&mut p, fc::DELETE_STRICT, "priority=9,ip,nw_dst=10.0.0.2").unwrap();
    assert_eq!(p.tables()[0].len(), 3);
    flow(&mut p, fc::DELETE_STRICT, "priority=2,ip,nw_dst=10.0.0.2").unwrap();
    assert_eq!(p.tables()[0].len(), 2);
    // Delete filtered by out_port.
    flow(&mut p, fc::DELETE, "out_port=3").unwrap();
    assert_eq!(p.tables()[0].len(), 2);
    flow(&mut p, fc::DELETE, "out_port=1").unwrap();
    assert_eq!(p.tables()[0].len(), 0);
}

#[test]
fn timeouts_and_flow_removed() {
    let mut p = switch(&[1, 2]);
    add(&mut p, "priority=1,idle_timeout=2,send_flow_rem,in_port=1,actions=output:2");
    add(&mut p, "priority=2,hard_timeout=5,send_flow_rem,in_port=2,actions=output:1");
    add(&mut p, "priority=3,hard_timeout=1,in_port=3,actions=output:1"); // no SEND_FLOW_REM
    p.advance(1_500_000_000);
    run(&mut p, 1, &pkt()); // refreshes the idle flow at 1.5 s
    p.advance(3_000_000_000);
    assert_eq!(p.tables()[0].len(), 2);
    assert!(p.take_async().is_empty());
    p.advance(3_600_000_000);
    let r = p.take_async();
    let Message::FlowRemoved(fr) = &r[0] else { panic!("{r:?}") };
    assert_eq!(
        (fr.reason, fr.priority, fr.packet_count),
        (flow_removed_reason::IDLE_TIMEOUT, 1, 1)
    );
    assert_eq!((fr.duration_sec, fr.duration_nsec), (3, 600_000_000));
    assert_eq!((fr.idle_timeout, fr.hard_timeout, fr.table_id), (2, 0, 0));
    assert_eq!(fr.r#match, parse_flow("in_port=1,actions=drop", Usage::Add).unwrap().r#match);
    p.advance(5_000_000_000);
    let r = p.take_async();
    let Message::FlowRemoved(fr) = &r[0] else { panic!() };
    assert_eq!(fr.reason, flow_removed_reason::HARD_TIMEOUT);
    assert_eq!((fr.idle_timeout, fr.hard_timeout, fr.priority), (0, 5, 2));
    assert_eq!(p.tables()[0].len(), 0);
    add(&mut p, "send_flow_rem,in_port=1,actions=output:2");
    flow(&mut p, fc::DELETE, "in_port=1").unwrap();
    let Message::FlowRemoved(fr) = &p.take_async()[0] else { panic!() };
    assert_eq!(fr.reason, flow_removed_reason::DELETE);
}

#[test]
fn groups_all_select_ff_indirect_and_deletion() {
    let mut p = switch(&[1, 2, 3, 4]);
    let g = |p: &mut Pipeline, cmd: u16, t: &str| {
        p.group_mod(&parse_group(t).unwrap().to_group_mod(cmd))
    };
    g(&mut p, gc::ADD, "group_id=1,type=all,bucket=output:2,bucket=output:3").unwrap();
    g(
        &mut p,
        gc::ADD,
        "group_id=2,type=ff,bucket=watch_port:2,output:2,bucket=watch_port:3,output:3",
    )
    .unwrap();
    g(&mut p, gc::ADD, "group_id=3,type=indirect,bucket=group:1").unwrap();
    g(&mut p, gc::ADD, "group_id=4,type=select,bucket=output:2,bucket=output:3,bucket=output:4")
        .unwrap();
    assert_eq!(
        g(&mut p, gc::ADD, "group_id=1,type=all,bucket=output:2"),
        Err(ErrorCode::GMFC_GROUP_EXISTS)
    );
    assert_eq!(g(&mut p, gc::MODIFY, "group_id=9,type=all"), Err(ErrorCode::GMFC_UNKNOWN_GROUP));
    assert_eq!(
        g(&mut p, gc::MODIFY, "group_id=1,type=all,bucket=group:3"),
        Err(ErrorCode::GMFC_LOOP)
    );
    assert_eq!(g(&mut p, gc::DELETE, "group_id=1"), Err(ErrorCode::GMFC_CHAINED_GROUP));

    add(&mut p, "priority=1,in_port=1,actions=group:3");
    assert_eq!(ports_of(&run(&mut p, 1, &pkt())), [2, 3]);
    flow(&mut p, fc::MODIFY, "in_port=1,actions=group:2").unwrap();
    assert_eq!(ports_of(&run(&mut p, 1, &pkt())), [2]);
    p.ports_mut().set_link(2, false);
    assert_eq!(ports_of(&run(&mut p, 1, &pkt())), [3]);
    p.ports_mut().set_link(3, false);
    assert!(run(&mut p, 1, &pkt()).is_empty());
    p.ports_mut().set_link(2, true);
    p.ports_mut().set_link(3, true);

    // Select: one flow always takes one bucket; many flows spread.
    flow(&mut p, fc::MODIFY, "in_port=1,actions=group:4").unwrap();
    let first = ports_of(&run(&mut p, 1, &pkt()));
    for _ in 0..5 {
        assert_eq!(ports_of(&run(&mut p, 1, &pkt())), first);
    }
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..60u8 {
        let f = udp(1, 2, [10, 0, 0, i], [10, 0, 1, 1], 1000 + u16::from(i), 53);
        seen.extend(ports_of(&run(&mut p, 1, &f)));
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), [2, 3, 4]);

    // Deleting a group removes the flows that use it.
    add(&mut p, "priority=1,in_port=2,send_flow_rem,actions=group:4");
    p.take_async();
    g(&mut p, gc::DELETE, "group_id=4").unwrap();
    let removed = p.take_async();
    assert!(
        matches!(&removed[0], Message::FlowRemoved(fr) if fr.reason == flow_removed_reason::GROUP_DELETE)
    );
    assert_eq!(p.tables()[0].len(), 0);
}

#[test]
fn meters_drop_above_rate_and_deletion_removes_flows() {
    let mut p = switch(&[1, 2]);
    let mm = parse_meter("meter=1,pktps,burst,band=type=drop,rate=10,burst_size=3")
        .unwrap()
        .to_meter_mod(mc::ADD);
    p.meter_mod(&mm).unwrap();
    add(&mut p, "in_port=1,actions=meter:1,output:2");
    let sent: usize = (0..5).map(|_| run(&mut p, 1, &pkt()).len()).sum();
    assert_eq!(sent, 3);
    p.advance(100_000_000); // 0.1 s at 10 pkt/s: one more
    let sent: usize = (0..5).map(|_| run(&mut p, 1, &pkt()).len()).sum();
    assert_eq!(sent, 1);
    let mm = parse_meter("meter=1").unwrap().to_meter_mod(mc::DELETE);
    p.meter_mod(&mm).unwrap();
    assert_eq!(p.tables()[0].len(), 0);
}

#[test]
fn stats_reflect_state() {
    let mut p = switch(&[1, 2]);
    add(&mut p, "priority=1,cookie=0x1,in_port=1,actions=output:2");
    add(&mut p, "table=2,priority=1,cookie=0x2,in_port=2,actions=output:1");
    run(&mut p, 1, &pkt());
    let req = |body| Message::MultipartRequest(MultipartRequest { flags: 0, body });
    let all = FlowStatsRequest {
        table_id: 0xff,
        out_port: port_no::ANY,
        out_group: sluice_ofp::consts::group_id::ANY,
        cookie: 0,
        cookie_mask: 0,
        match_: Default::default(),
    };
    let r = send(&mut p, req(MultipartRequestBody::Flow(all.clone())));
    let Message::MultipartReply(rep) = &r[0].msg else { panic!("{r:?}") };
    let MultipartReplyBody::Flow(fs) = &rep.body else { panic!() };
    assert_eq!(fs.len(), 2);
    assert_eq!((fs[0].table_id, fs[0].packet_count), (0, 1));
    assert_eq!(fs[1].table_id, 2);
    let r = send(
        &mut p,
        req(MultipartRequestBody::Aggregate(FlowStatsRequest {
            cookie: 2,
            cookie_mask: 0xff,
            ..all
        })),
    );
    let Message::MultipartReply(rep) = &r[0].msg else { panic!() };
    let MultipartReplyBody::Aggregate(a) = &rep.body else { panic!() };
    assert_eq!(a.flow_count, 1);
    let r = send(&mut p, req(MultipartRequestBody::PortStats { port_no: port_no::ANY }));
    let Message::MultipartReply(rep) = &r[0].msg else { panic!() };
    let MultipartReplyBody::PortStats(ps) = &rep.body else { panic!() };
    assert_eq!((ps[0].rx_packets, ps[1].tx_packets), (1, 1));
    let r = send(&mut p, req(MultipartRequestBody::TableFeatures(vec![])));
    let Message::MultipartReply(rep) = &r[0].msg else { panic!() };
    // 255 tables with all their properties exceed one message: split.
    assert!(r.len() > 1 && rep.flags & 1 == 1);
    let r = send(&mut p, Message::BarrierRequest);
    assert_eq!(r[0].msg, Message::BarrierReply);
    let r = send(&mut p, Message::FeaturesRequest);
    let Message::FeaturesReply(f) = &r[0].msg else { panic!() };
    assert_eq!(f.n_tables, 255);
}

#[test]
fn full_table_refuses_new_entries_but_replaces_existing_ones() {
    let mut p = Pipeline::new(Config { max_flows_per_table: 2, ..Config::default() });
    add(&mut p, "priority=1,in_port=1,actions=drop");
    add(&mut p, "priority=1,in_port=2,actions=drop");
    assert_eq!(
        flow(&mut p, fc::ADD, "priority=1,in_port=3,actions=drop"),
        Err(ErrorCode::FMFC_TABLE_FULL)
    );
    // An identical match and priority replaces: no new entry needed.
    add(&mut p, "priority=1,in_port=2,actions=output:1");
    // Other tables have their own room.
    add(&mut p, "table=1,priority=1,in_port=3,actions=drop");
    assert_eq!(p.tables()[0].len(), 2);
    let r = send(
        &mut p,
        Message::FlowMod(
            parse_flow("in_port=4,actions=drop", Usage::Add).unwrap().to_flow_mod(fc::ADD),
        ),
    );
    assert!(matches!(&r[0].msg, Message::Error(_)));
}
