//! Every action, instruction, group and meter of OpenFlow 1.3.5 through
//! the reference pipeline, with literal packets.
//!
//! - [`every_vector`]: one flow (ovs-ofctl text), one frame in on port 1,
//!   and the exact frames out, from `data/vectors.rs`. The expected bytes
//!   are built by scapy (`gen_vectors.py`), an implementation independent
//!   of sluice; every frame sent is also checked by this file's own
//!   checksum verifier (IPv4 header, TCP/UDP/ICMP over IPv4 and IPv6).
//! - The other tests cover what needs switch state: packet-ins and
//!   buffers, packet-out, port config bits, queues, groups, meters, the
//!   instruction order, metadata, table features and barrier.

#[path = "data/vectors.rs"]
mod vectors;

use sluice_ofp::action::Action;
use sluice_ofp::consts::{port_no, OFPCML_NO_BUFFER, OFP_NO_BUFFER};
use sluice_ofp::error::ErrorCode;
use sluice_ofp::instruction::Instruction;
use sluice_ofp::message::{
    flow_mod_command as fc, group_mod_command as gc, meter_mod_command as mc, packet_in_reason,
    Message, PacketIn, PacketOut, PortMod, SwitchConfig,
};
use sluice_ofp::multipart::table_features::{FeatureId, TableFeatureProp};
use sluice_ofp::multipart::{MultipartReplyBody, MultipartRequest, MultipartRequestBody};
use sluice_ofp::ofctl::{parse_actions, parse_flow, parse_group, parse_meter, Usage};
use sluice_ofp::oxm::{FieldBytes, FieldId, Match, Oxm};
use sluice_ofp::port::{config, state, Port};
use sluice_pipeline::{CacheMode, Config, Datapath, Outgoing, Pipeline, TtlPacketIn};

// ------------------------------------------------------------------ helpers

fn hx(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap_or_else(|e| panic!("bad hex {s}: {e}"))
}

fn port_desc(n: u32) -> Port {
    Port { port_no: n, hw_addr: [0, 0, 0, 0, 0, n as u8], name: format!("p{n}"), ..Port::default() }
}

fn switch_with(cfg: Config, ports: &[u32]) -> Pipeline {
    let mut p = Pipeline::new(cfg);
    for &n in ports {
        p.ports_mut().add(port_desc(n), 0);
    }
    p
}

fn switch(ports: &[u32]) -> Pipeline {
    switch_with(Config::default(), ports)
}

fn try_add(p: &mut Pipeline, text: &str) -> Result<(), ErrorCode> {
    let spec = parse_flow(text, Usage::Add).unwrap_or_else(|e| panic!("{}", e.render(text)));
    p.flow_mod(&spec.to_flow_mod(fc::ADD))
}

fn add(p: &mut Pipeline, text: &str) {
    try_add(p, text).unwrap_or_else(|e| panic!("{text}: {e}"));
}

fn group(p: &mut Pipeline, text: &str) {
    let g = parse_group(text).unwrap_or_else(|e| panic!("{}", e.render(text)));
    p.group_mod(&g.to_group_mod(gc::ADD)).unwrap_or_else(|e| panic!("{text}: {e}"));
}

fn meter(p: &mut Pipeline, text: &str) {
    let m = parse_meter(text).unwrap_or_else(|e| panic!("{}", e.render(text)));
    p.meter_mod(&m.to_meter_mod(mc::ADD)).unwrap_or_else(|e| panic!("{text}: {e}"));
}

type Sent = Vec<(u32, Option<u32>, Vec<u8>)>;

/// Frames sent for one received frame, as (port, queue, bytes).
fn run_q(p: &mut Pipeline, in_port: u32, frame: &[u8]) -> Sent {
    let mut out = Vec::new();
    p.process(in_port, frame, &mut |port: u32, q: Option<u32>, f: &[u8]| {
        out.push((port, q, f.to_vec()))
    });
    out
}

fn run(p: &mut Pipeline, in_port: u32, frame: &[u8]) -> Vec<(u32, Vec<u8>)> {
    run_q(p, in_port, frame).into_iter().map(|(p, _, f)| (p, f)).collect()
}

fn ports_of(v: &[(u32, Vec<u8>)]) -> Vec<u32> {
    v.iter().map(|(p, _)| *p).collect()
}

/// Send a controller message; returns the replies and the frames sent.
fn send(p: &mut Pipeline, msg: Message) -> (Vec<Outgoing>, Vec<(u32, Vec<u8>)>) {
    let raw = msg.encode(9);
    let mut out = Vec::new();
    let r = p.handle(9, &msg, &raw, &mut |port: u32, _q: Option<u32>, f: &[u8]| {
        out.push((port, f.to_vec()))
    });
    (r, out)
}

fn multipart(p: &mut Pipeline, body: MultipartRequestBody) -> MultipartReplyBody {
    let (r, _) = send(p, Message::MultipartRequest(MultipartRequest { flags: 0, body }));
    match &r[0].msg {
        Message::MultipartReply(rep) => rep.body.clone(),
        other => panic!("{other:?}"),
    }
}

fn packet_ins(p: &mut Pipeline) -> Vec<PacketIn> {
    p.take_async()
        .into_iter()
        .filter_map(|m| if let Message::PacketIn(pi) = m { Some(pi) } else { None })
        .collect()
}

fn error_of(r: &[Outgoing]) -> Option<ErrorCode> {
    r.iter().find_map(|o| match &o.msg {
        Message::Error(sluice_ofp::message::ErrorMsg::Standard { code, .. }) => Some(*code),
        _ => None,
    })
}

/// The scapy-built UDP/IPv4 frame most tests use (vector `output_physical`).
fn udp4() -> Vec<u8> {
    hx(vector("output_physical").2)
}

fn vector(name: &str) -> &'static vectors::Vector {
    vectors::VECTORS.iter().find(|v| v.0 == name).unwrap_or_else(|| panic!("no vector {name}"))
}

/// A UDP/IPv4 frame with the given TTL and DSCP (valid checksums).
fn udp4_with(ttl: u8, tos: u8) -> Vec<u8> {
    let mut f = udp4();
    f[15] = tos;
    f[22] = ttl;
    f[24] = 0;
    f[25] = 0;
    let c = !fold(sum(&f[14..34]));
    f[24..26].copy_from_slice(&c.to_be_bytes());
    // The UDP checksum covers no TTL/TOS bits: it stays valid.
    f
}

// ------------------------------------------- an independent checksum check

fn sum(b: &[u8]) -> u32 {
    b.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))).sum()
}

fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// Check the IPv4 header checksum and the TCP/UDP/ICMP/ICMPv6 checksum of
/// a frame (after any VLAN tags; MPLS and PBB payloads are not looked
/// into). Returns a description of the first bad one.
fn checksums_ok(f: &[u8]) -> Result<(), String> {
    let mut off = 12;
    let mut et = u16::from_be_bytes([f[off], f[off + 1]]);
    while et == 0x8100 || et == 0x88a8 {
        off += 4;
        et = u16::from_be_bytes([f[off], f[off + 1]]);
    }
    let l3 = off + 2;
    let (proto, l4, end, pseudo) = match et {
        0x0800 => {
            let ihl = usize::from(f[l3] & 0xf) * 4;
            if fold(sum(&f[l3..l3 + ihl])) != 0xffff {
                return Err("IPv4 header checksum".into());
            }
            let total = usize::from(u16::from_be_bytes([f[l3 + 2], f[l3 + 3]]));
            let l4len = total - ihl;
            let mut ps = sum(&f[l3 + 12..l3 + 20]) + u32::from(f[l3 + 9]) + l4len as u32;
            if f[l3 + 9] == 1 {
                ps = 0; // ICMPv4 has no pseudo-header
            }
            (f[l3 + 9], l3 + ihl, l3 + total, ps)
        }
        0x86dd => {
            let plen = usize::from(u16::from_be_bytes([f[l3 + 4], f[l3 + 5]]));
            let ps = sum(&f[l3 + 8..l3 + 40]) + u32::from(f[l3 + 6]) + plen as u32;
            (f[l3 + 6], l3 + 40, l3 + 40 + plen, ps)
        }
        _ => return Ok(()),
    };
    let seg = &f[l4..end];
    let ok = match proto {
        6 | 58 | 1 => fold(pseudo + sum(seg)) == 0xffff,
        17 => (et == 0x0800 && seg[6..8] == [0, 0]) || fold(pseudo + sum(seg)) == 0xffff,
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("L4 (protocol {proto}) checksum"))
    }
}

// ------------------------------------------------------------ the vectors

#[test]
fn every_vector() {
    let mut failures = Vec::new();
    for (name, flows, input, expected) in vectors::VECTORS {
        let mut p = switch(&[1, 2, 3, 4]);
        for f in flows.split('|') {
            if let Err(e) = try_add(&mut p, f) {
                failures.push(format!("{name}: flow {f} rejected: {e}"));
            }
        }
        let got = run(&mut p, 1, &hx(input));
        let want: Vec<(u32, Vec<u8>)> = expected.iter().map(|(p, f)| (*p, hx(f))).collect();
        if got != want {
            let show = |v: &[(u32, Vec<u8>)]| {
                v.iter().map(|(p, f)| format!("\n    {p}: {}", hex::encode(f))).collect::<String>()
            };
            failures.push(format!("{name}:\n  got{}\n  want{}", show(&got), show(&want)));
        }
        for (port, f) in &got {
            if let Err(e) = checksums_ok(f) {
                failures.push(format!("{name}: frame to port {port}: bad {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// The vectors exercise every settable field and every action type the
/// table features advertise.
#[test]
fn vectors_cover_every_settable_field_and_action() {
    let mut fields = std::collections::BTreeSet::new();
    let mut actions = std::collections::BTreeSet::new();
    for (_, flows, _, _) in vectors::VECTORS {
        for f in flows.split('|') {
            let fm = parse_flow(f, Usage::Add).unwrap().to_flow_mod(fc::ADD);
            for i in &fm.instructions {
                if let Instruction::ApplyActions(l) | Instruction::WriteActions(l) = i {
                    for a in l {
                        actions.insert(a.type_code());
                        if let Action::SetField(Oxm::Basic { field, .. }) = a {
                            fields.insert(*field as u8);
                        }
                    }
                }
            }
        }
    }
    let mut p = switch(&[1]);
    let MultipartReplyBody::TableFeatures(tf) =
        multipart(&mut p, MultipartRequestBody::TableFeatures(vec![]))
    else {
        panic!()
    };
    for prop in &tf[0].properties {
        match prop {
            TableFeatureProp::ApplySetfield { miss: false, ids } => {
                for id in ids {
                    let f = id.header.basic_field().unwrap();
                    // Pipeline fields: see tunnel_id_and_metadata_are_pipeline_fields.
                    if !matches!(f, FieldId::TunnelId | FieldId::Metadata) {
                        assert!(fields.contains(&(f as u8)), "no set_field vector for {f:?}");
                    }
                }
            }
            TableFeatureProp::ApplyActions { miss: false, ids } => {
                for id in ids {
                    let FeatureId::Type(t) = id else { panic!() };
                    // SET_QUEUE and GROUP need switch state: own tests below.
                    if ![21, 22].contains(t) {
                        assert!(actions.contains(t), "no vector for action type {t}");
                    }
                }
            }
            _ => {}
        }
    }
}

// --------------------------------------------------------------- outputs

#[test]
fn output_local_all_and_flood_include_local_skip_ingress_blocked_and_no_fwd() {
    let mut p = switch(&[1, 2, 3, 4, port_no::LOCAL]);
    let f = udp4();
    add(&mut p, "priority=1,in_port=1,actions=output:local");
    assert_eq!(ports_of(&run(&mut p, 1, &f)), [port_no::LOCAL]);
    add(&mut p, "priority=2,in_port=1,actions=output:all");
    assert_eq!(ports_of(&run(&mut p, 1, &f)), [2, 3, 4, port_no::LOCAL]);
    // From LOCAL, ALL goes to every physical port.
    add(&mut p, "priority=2,in_port=local,actions=output:all");
    assert_eq!(ports_of(&run(&mut p, port_no::LOCAL, &f)), [1, 2, 3, 4]);
    // A blocked port (e.g. by spanning tree) is skipped by FLOOD, not ALL.
    p.ports_mut().get_mut(3).unwrap().desc.state |= state::BLOCKED;
    add(&mut p, "priority=3,in_port=1,actions=output:flood");
    assert_eq!(ports_of(&run(&mut p, 1, &f)), [2, 4, port_no::LOCAL]);
    add(&mut p, "priority=3,in_port=1,actions=output:all");
    assert_eq!(ports_of(&run(&mut p, 1, &f)), [2, 3, 4, port_no::LOCAL]);
    // NO_FWD and link-down ports are skipped by ALL without counting drops.
    set_port_config(&mut p, 2, config::NO_FWD, config::NO_FWD);
    p.ports_mut().set_link(4, false);
    assert_eq!(ports_of(&run(&mut p, 1, &f)), [3, port_no::LOCAL]);
    assert_eq!(p.ports().get(2).unwrap().counters().tx_dropped, 0);
}

fn set_port_config(p: &mut Pipeline, port: u32, cfg: u32, mask: u32) -> Vec<Message> {
    let pm = PortMod {
        port_no: port,
        hw_addr: [0, 0, 0, 0, 0, port as u8],
        config: cfg,
        mask,
        advertise: 0,
    };
    let (r, _) = send(p, Message::PortMod(pm));
    assert!(r.is_empty(), "{r:?}");
    p.take_async()
}

#[test]
fn controller_output_cuts_to_max_len_buffers_and_packet_out_releases() {
    let mut p = switch(&[1, 2]);
    add(&mut p, "priority=7,cookie=0x77,in_port=1,actions=controller:32");
    let f = udp4();
    assert!(run(&mut p, 1, &f).is_empty());
    let pi = packet_ins(&mut p).pop().expect("packet-in");
    assert_eq!(pi.reason, packet_in_reason::ACTION);
    assert_eq!((pi.table_id, pi.cookie), (0, 0x77));
    assert_eq!(pi.data, f[..32]);
    assert_eq!(usize::from(pi.total_len), f.len());
    assert_ne!(pi.buffer_id, OFP_NO_BUFFER);
    let Oxm::Basic { field: FieldId::InPort, value, .. } = &pi.r#match.oxms[0] else { panic!() };
    assert_eq!(value.to_u128(), 1);
    // PACKET_OUT from the buffer sends the whole frame.
    let po = PacketOut {
        buffer_id: pi.buffer_id,
        in_port: 1,
        actions: parse_actions("output:2").unwrap(),
        data: vec![],
    };
    let (r, sent) = send(&mut p, Message::PacketOut(po.clone()));
    assert!(r.is_empty(), "{r:?}");
    assert_eq!(sent, [(2, f.clone())]);
    let (r, _) = send(&mut p, Message::PacketOut(po));
    assert_eq!(error_of(&r), Some(ErrorCode::BRC_BUFFER_UNKNOWN));
    // max_len = NO_BUFFER: the whole frame, not buffered.
    add(&mut p, "priority=8,in_port=1,actions=controller:65535");
    run(&mut p, 1, &f);
    let pi = packet_ins(&mut p).pop().unwrap();
    assert_eq!((pi.buffer_id, pi.data), (OFP_NO_BUFFER, f.clone()));
    assert_eq!(OFPCML_NO_BUFFER, 65535);
    // A table-miss entry's packet-in says NO_MATCH.
    let mut p = switch(&[1, 2]);
    add(&mut p, "priority=0,actions=controller");
    run(&mut p, 1, &f);
    assert_eq!(packet_ins(&mut p)[0].reason, packet_in_reason::NO_MATCH);
}

#[test]
fn packet_out_with_data_and_to_table() {
    let mut p = switch(&[1, 2, 3]);
    add(&mut p, "in_port=1,actions=output:3");
    let f = udp4();
    let po = |in_port: u32, actions: &str| {
        Message::PacketOut(PacketOut {
            buffer_id: OFP_NO_BUFFER,
            in_port,
            actions: parse_actions(actions).unwrap(),
            data: f.clone(),
        })
    };
    let (r, sent) = send(&mut p, po(port_no::CONTROLLER, "output:2"));
    assert!(r.is_empty());
    assert_eq!(sent, [(2, f.clone())]);
    // OFPP_TABLE: through the flow table as if received on in_port.
    let (r, sent) = send(&mut p, po(1, "output:table"));
    assert!(r.is_empty());
    assert_eq!(sent, [(3, f.clone())]);
    assert_eq!(p.tables()[0].entries()[0].packet_count(), 1);
    // Actions before TABLE apply first.
    let (_, sent) = send(&mut p, po(1, "dec_ttl,output:table"));
    assert_eq!(sent[0].1[22], 63);
    // TABLE is for packet-out only; a bad in_port is refused.
    assert_eq!(try_add(&mut p, "actions=output:table"), Err(ErrorCode::BAC_BAD_OUT_PORT));
    let (r, _) = send(&mut p, po(0, "output:2"));
    assert_eq!(error_of(&r), Some(ErrorCode::BRC_BAD_PORT));
}

// ------------------------------------------------------------------ TTLs

#[test]
fn invalid_ttl_sends_packet_in_cut_to_miss_send_len_and_drops() {
    let spec = Config { invalid_ttl_packet_in: TtlPacketIn::MissSendLen, ..Config::default() };
    let mut p = switch_with(spec.clone(), &[1, 2]);
    let (r, _) = send(&mut p, Message::SetConfig(SwitchConfig { flags: 0, miss_send_len: 24 }));
    assert!(r.is_empty());
    add(&mut p, "ip,actions=output:3,dec_ttl,output:2");
    for ttl in [1, 0] {
        let f = udp4_with(ttl, 0);
        assert!(run(&mut p, 1, &f).is_empty(), "ttl {ttl} must not be forwarded");
        let pi = packet_ins(&mut p).pop().expect("invalid-ttl packet-in");
        assert_eq!(pi.reason, packet_in_reason::INVALID_TTL);
        assert_eq!(pi.data, f[..24]);
        assert_eq!(usize::from(pi.total_len), f.len());
        assert_ne!(pi.buffer_id, OFP_NO_BUFFER);
    }
    let out = run(&mut p, 1, &udp4_with(2, 0));
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].0, out[0].1[22]), (2, 1));
    // dec_mpls_ttl the same way.
    let mut p = switch_with(spec, &[1, 2]);
    add(&mut p, "mpls,actions=dec_mpls_ttl,output:2");
    let mut m = hx(vector("set_mpls_ttl").2);
    m[17] = 1;
    assert!(run(&mut p, 1, &m).is_empty());
    let pi = packet_ins(&mut p).pop().unwrap();
    assert_eq!(pi.reason, packet_in_reason::INVALID_TTL);
    // The default miss_send_len (128) is longer than this frame: all of it.
    assert_eq!((pi.data, pi.buffer_id), (m, OFP_NO_BUFFER));
}

/// The default (`TtlPacketIn::Full`, as Open vSwitch): an invalid-TTL
/// packet-in carries the whole frame even with `miss_send_len = 0`, as
/// Faucet sets it and needs it to build ICMP time-exceeded. Both walks
/// (the oracle and the compiled fast path) and both places TTL expires (an
/// apply-actions `dec_ttl` and one in the action set).
#[test]
fn invalid_ttl_packet_in_carries_the_whole_frame_by_default() {
    let oracle =
        Config { datapath: Datapath::Reference, cache: CacheMode::Off, ..Config::default() };
    for cfg in [Config::default(), oracle] {
        for flow in ["ip,actions=dec_ttl,output:2", "ip,actions=write_actions(dec_ttl,output:2)"] {
            let mut p = switch_with(cfg.clone(), &[1, 2]);
            let (r, _) =
                send(&mut p, Message::SetConfig(SwitchConfig { flags: 0, miss_send_len: 0 }));
            assert!(r.is_empty());
            add(&mut p, flow);
            let f = udp4_with(1, 0);
            assert!(run(&mut p, 1, &f).is_empty(), "{flow}: ttl 1 must not be forwarded");
            let pi = packet_ins(&mut p).pop().expect("invalid-ttl packet-in");
            assert_eq!(pi.reason, packet_in_reason::INVALID_TTL, "{flow}");
            assert_eq!((pi.data, pi.buffer_id), (f.clone(), OFP_NO_BUFFER), "{flow}");
            assert_eq!(usize::from(pi.total_len), f.len());
        }
    }
}

#[test]
fn invalid_ttl_in_the_action_set_and_no_packet_in_port() {
    let mut p = switch(&[1, 2]);
    add(&mut p, "ip,actions=write_actions(dec_ttl,output:2)");
    assert!(run(&mut p, 1, &udp4_with(1, 0)).is_empty());
    assert_eq!(packet_ins(&mut p)[0].reason, packet_in_reason::INVALID_TTL);
    set_port_config(&mut p, 1, config::NO_PACKET_IN, config::NO_PACKET_IN);
    assert!(run(&mut p, 1, &udp4_with(1, 0)).is_empty());
    assert!(packet_ins(&mut p).is_empty());
}

// ------------------------------------------------------------ set_queue

#[test]
fn set_queue_selects_queue_and_counts() {
    let mut p = switch(&[1, 2]);
    assert!(p.ports_mut().add_queue(2, 1, 0));
    assert!(p.ports_mut().add_queue(2, 2, 0));
    add(&mut p, "in_port=1,udp,actions=set_queue:1,output:2");
    add(&mut p, "in_port=1,tcp,actions=write_actions(set_queue:2,output:2)");
    let f = udp4();
    for _ in 0..3 {
        assert_eq!(run_q(&mut p, 1, &f), [(2, Some(1), f.clone())]);
    }
    let t = hx(vector("set_field_tcp_src").2);
    assert_eq!(run_q(&mut p, 1, &t), [(2, Some(2), t.clone())]);
    let MultipartReplyBody::Queue(q) = multipart(
        &mut p,
        MultipartRequestBody::Queue { port_no: 2, queue_id: sluice_ofp::consts::queue_id::ALL },
    ) else {
        panic!()
    };
    let by_id: Vec<(u32, u64, u64)> =
        q.iter().map(|s| (s.queue_id, s.tx_packets, s.tx_bytes)).collect();
    assert_eq!(by_id, [(1, 3, 3 * f.len() as u64), (2, 1, t.len() as u64)]);
    // A queue that does not exist is an error.
    let (r, _) = send(
        &mut p,
        Message::MultipartRequest(MultipartRequest {
            flags: 0,
            body: MultipartRequestBody::Queue { port_no: 2, queue_id: 9 },
        }),
    );
    assert_eq!(error_of(&r), Some(ErrorCode::QOFC_BAD_QUEUE));
}

// --------------------------------------------------------- port config

#[test]
fn port_config_bits() {
    let mut p = switch(&[1, 2, 3]);
    add(&mut p, "in_port=1,actions=output:2");
    add(&mut p, "in_port=2,actions=controller");
    let f = udp4();
    // PORT_DOWN on the ingress port: received frames are dropped.
    let st = set_port_config(&mut p, 1, config::PORT_DOWN, config::PORT_DOWN);
    assert!(
        matches!(&st[..], [Message::PortStatus(ps)] if ps.desc.config & config::PORT_DOWN != 0)
    );
    assert!(run(&mut p, 1, &f).is_empty());
    assert_eq!(p.ports().get(1).unwrap().counters().rx_dropped, 1);
    set_port_config(&mut p, 1, 0, config::PORT_DOWN);
    // NO_RECV likewise.
    set_port_config(&mut p, 1, config::NO_RECV, config::NO_RECV);
    assert!(run(&mut p, 1, &f).is_empty());
    set_port_config(&mut p, 1, 0, config::NO_RECV);
    assert_eq!(ports_of(&run(&mut p, 1, &f)), [2]);
    // NO_FWD or PORT_DOWN on the output port: dropped, counted.
    set_port_config(&mut p, 2, config::NO_FWD, config::NO_FWD);
    assert!(run(&mut p, 1, &f).is_empty());
    assert_eq!(p.ports().get(2).unwrap().counters().tx_dropped, 1);
    set_port_config(&mut p, 2, config::PORT_DOWN, config::NO_FWD | config::PORT_DOWN);
    assert!(run(&mut p, 1, &f).is_empty());
    set_port_config(&mut p, 2, 0, config::PORT_DOWN);
    assert_eq!(ports_of(&run(&mut p, 1, &f)), [2]);
    // NO_PACKET_IN on the ingress port: no packet-in.
    run(&mut p, 2, &f);
    assert_eq!(packet_ins(&mut p).len(), 1);
    set_port_config(&mut p, 2, config::NO_PACKET_IN, config::NO_PACKET_IN);
    run(&mut p, 2, &f);
    assert!(packet_ins(&mut p).is_empty());
    // Unsettable bits and an unknown port are refused.
    let (r, _) = send(
        &mut p,
        Message::PortMod(PortMod {
            port_no: 9,
            hw_addr: [0, 0, 0, 0, 0, 9],
            config: 0,
            mask: config::PORT_DOWN,
            advertise: 0,
        }),
    );
    assert_eq!(error_of(&r), Some(ErrorCode::PMFC_BAD_PORT));
}

// -------------------------------------------------- instructions, metadata

fn oxm(f: FieldId, v: u128) -> Oxm {
    Oxm::Basic { field: f, value: FieldBytes::from_u128(v, f.len()), mask: None }
}

/// §5.9: instructions execute meter, apply, clear, write, write-metadata,
/// goto — in that order whatever order the FLOW_MOD lists them in.
#[test]
fn instructions_run_in_spec_order_whatever_the_wire_order() {
    let mut p = switch(&[1, 2, 3]);
    meter(&mut p, "meter=1,pktps,burst,band=type=drop,rate=1,burst_size=1");
    let mut fm = parse_flow("in_port=1,actions=drop", Usage::Add).unwrap().to_flow_mod(fc::ADD);
    fm.instructions = vec![
        Instruction::GotoTable(1),
        Instruction::WriteMetadata { metadata: 0x5, mask: 0xff },
        Instruction::WriteActions(parse_actions("output:3").unwrap()),
        Instruction::ClearActions,
        Instruction::ApplyActions(parse_actions("output:2").unwrap()),
        Instruction::Meter(1),
    ];
    p.flow_mod(&fm).unwrap();
    add(&mut p, "table=1,metadata=0x5,actions=goto_table:2");
    add(&mut p, "table=2,actions=");
    let f = udp4();
    // Apply (output:2), then clear, then write (output:3) executed at the
    // end of table 2; write-metadata before goto so table 1 matches.
    assert_eq!(ports_of(&run(&mut p, 1, &f)), [2, 3]);
    // The meter runs first: the second packet in the same instant drops
    // before anything is applied.
    assert!(run(&mut p, 1, &f).is_empty());
}

#[test]
fn write_metadata_masks_and_packet_in_match() {
    let mut p = switch(&[1, 2]);
    add(&mut p, "table=0,in_port=1,actions=write_metadata:0x1234/0xff00,goto_table:1");
    add(&mut p, "table=1,metadata=0x1200/0xffff,actions=write_metadata:0xffab/0x00ff,goto_table:2");
    add(&mut p, "table=2,priority=9,metadata=0x12ab,actions=controller,output:2");
    assert_eq!(ports_of(&run(&mut p, 1, &udp4())), [2]);
    let pi = packet_ins(&mut p).pop().unwrap();
    assert_eq!(pi.table_id, 2);
    assert!(pi.r#match.oxms.contains(&oxm(FieldId::Metadata, 0x12ab)), "{:?}", pi.r#match);
}

#[test]
fn tunnel_id_and_metadata_are_pipeline_fields() {
    let mut p = switch(&[1, 2]);
    add(
        &mut p,
        "in_port=1,actions=set_field:0x55->tunnel_id,set_field:0x66->metadata,goto_table:1",
    );
    add(&mut p, "table=1,tunnel_id=0x55,metadata=0x66,actions=output:2,controller");
    let f = udp4();
    assert_eq!(run(&mut p, 1, &f), [(2, f.clone())], "the frame's bytes are untouched");
    let pi = packet_ins(&mut p).pop().unwrap();
    assert!(pi.r#match.oxms.contains(&oxm(FieldId::TunnelId, 0x55)));
    assert!(pi.r#match.oxms.contains(&oxm(FieldId::Metadata, 0x66)));
}

#[test]
fn clear_actions_and_goto_carry_the_action_set() {
    let mut p = switch(&[1, 2, 3]);
    add(&mut p, "in_port=1,actions=write_actions(output:3),goto_table:1");
    add(&mut p, "table=1,priority=1,actions=goto_table:2");
    add(&mut p, "table=2,priority=1,actions=");
    // The action set survives tables without write-actions.
    assert_eq!(ports_of(&run(&mut p, 1, &udp4())), [3]);
    add(&mut p, "table=2,priority=2,actions=clear_actions");
    assert!(run(&mut p, 1, &udp4()).is_empty());
    // A table miss without a table-miss entry drops, even with a set.
    let mut p = switch(&[1, 2, 3]);
    add(&mut p, "in_port=1,actions=write_actions(output:3),goto_table:1");
    assert!(run(&mut p, 1, &udp4()).is_empty());
}

// ----------------------------------------------------------------- groups

#[test]
fn group_in_action_set_wins_over_output_and_buckets_work_on_copies() {
    let mut p = switch(&[1, 2, 3, 4]);
    group(
        &mut p,
        "group_id=1,type=all,bucket=set_field:aa:aa:aa:aa:aa:aa->eth_dst,output:2,bucket=output:3",
    );
    add(&mut p, "in_port=1,actions=write_actions(output:4,group:1)");
    let f = udp4();
    let out = run(&mut p, 1, &f);
    assert_eq!(ports_of(&out), [2, 3]);
    assert_eq!(out[0].1[..6], [0xaa; 6]);
    assert_eq!(out[1].1, f, "bucket 2 must not see bucket 1's edit");
    // In an action list, group and output both happen, in order.
    add(&mut p, "priority=40000,in_port=1,actions=group:1,output:4");
    assert_eq!(ports_of(&run(&mut p, 1, &f)), [2, 3, 4]);
    let MultipartReplyBody::Group(gs) =
        multipart(&mut p, MultipartRequestBody::Group { group_id: 1 })
    else {
        panic!()
    };
    assert_eq!((gs[0].packet_count, gs[0].ref_count), (2, 2));
    assert_eq!(gs[0].bucket_stats[1].packet_count, 2);
    assert_eq!(gs[0].byte_count, 2 * f.len() as u64);
}

#[test]
fn indirect_select_fast_failover_and_chaining() {
    let mut p = switch(&[1, 2, 3, 4]);
    group(
        &mut p,
        "group_id=10,type=indirect,bucket=push_vlan:0x8100,set_field:4106->vlan_vid,output:4",
    );
    group(&mut p, "group_id=20,type=ff,bucket=watch_port:2,output:2,bucket=watch_port:3,output:3,bucket=watch_group:10,group:10");
    add(&mut p, "in_port=1,actions=group:20");
    let f = udp4();
    assert_eq!(ports_of(&run(&mut p, 1, &f)), [2]);
    set_port_config(&mut p, 2, config::PORT_DOWN, config::PORT_DOWN);
    assert_eq!(ports_of(&run(&mut p, 1, &f)), [3]);
    p.ports_mut().set_link(3, false);
    let out = run(&mut p, 1, &f);
    assert_eq!(ports_of(&out), [4]);
    assert_eq!(out[0].1[12..16], [0x81, 0, 0x00, 10], "indirect bucket pushed vid 10");
    p.ports_mut().set_link(4, false);
    assert!(run(&mut p, 1, &f).is_empty(), "no live bucket: drop");
}

// ----------------------------------------------------------------- meters

#[test]
fn meter_dscp_remark_raises_drop_precedence_with_valid_checksum() {
    let mut p = switch(&[1, 2]);
    meter(&mut p, "meter=3,pktps,burst,band=type=dscp_remark,rate=1,burst_size=1,prec_level=1");
    add(&mut p, "ip,actions=meter:3,output:2");
    let af11 = udp4_with(64, 10 << 2);
    let first = run(&mut p, 1, &af11);
    assert_eq!(first, [(2, af11.clone())]);
    let second = run(&mut p, 1, &af11);
    assert_eq!(second[0].1[15] >> 2, 12, "AF11 -> AF12");
    assert_eq!(second[0].1, udp4_with(64, 12 << 2));
    checksums_ok(&second[0].1).unwrap();
    let MultipartReplyBody::Meter(ms) =
        multipart(&mut p, MultipartRequestBody::Meter { meter_id: 3 })
    else {
        panic!()
    };
    assert_eq!((ms[0].packet_in_count, ms[0].flow_count), (2, 1));
    assert_eq!(ms[0].band_stats[0].packet_band_count, 1);
}

#[test]
fn meter_drop_band_in_kbps() {
    let mut p = switch(&[1, 2]);
    // 8 kbit/s with an 8 kbit burst: 1000 bytes pass at once, then 1 byte/ms.
    meter(&mut p, "meter=1,kbps,burst,band=type=drop,rate=8,burst_size=8");
    add(&mut p, "in_port=1,actions=meter:1,output:2");
    let f = udp4(); // 74 bytes
    let n = (0..20).filter(|_| !run(&mut p, 1, &f).is_empty()).count();
    assert_eq!(n, 1000 / f.len());
    p.advance(f.len() as u64 * 1_000_000); // refill exactly one frame
    assert_eq!(run(&mut p, 1, &f).len(), 1);
    assert!(run(&mut p, 1, &f).is_empty());
}

// ------------------------------------------------- table features, stats

/// Add `f` to `m` together with the prerequisites it needs (searched over
/// the few ethertypes/protocols OpenFlow 1.3 prerequisites name).
fn with_prereqs(f: FieldId, v: Oxm) -> Match {
    let ets = [None, Some(0x0800u128), Some(0x86dd), Some(0x0806), Some(0x8847), Some(0x88e7)];
    let protos = [None, Some(6u128), Some(17), Some(132), Some(1), Some(58)];
    let nd = [None, Some(135u128), Some(136)];
    for et in ets {
        for pr in protos {
            for t in nd {
                let mut m = Match::default();
                if let Some(et) = et {
                    m.oxms.push(oxm(FieldId::EthType, et));
                }
                if let Some(pr) = pr {
                    m.oxms.push(oxm(FieldId::IpProto, pr));
                }
                if let Some(t) = t {
                    m.oxms.push(oxm(FieldId::Icmpv6Type, t));
                }
                if f == FieldId::InPhyPort {
                    m.oxms.push(oxm(FieldId::InPort, 1));
                }
                if f == FieldId::VlanPcp {
                    m.oxms.push(oxm(FieldId::VlanVid, 0x1001));
                }
                if !m.oxms.iter().any(|o| o.field_id() == Some(f)) {
                    m.oxms.push(v.clone());
                }
                if m.check_prereqs().is_ok() {
                    return m;
                }
            }
        }
    }
    panic!("no prerequisites found for {f:?}")
}

#[test]
fn table_features_are_truthful() {
    let cfg = Config { n_tables: 4, max_flows_per_table: 300, ..Config::default() };
    let mut p = switch_with(cfg, &[1, 2]);
    let MultipartReplyBody::TableFeatures(tf) =
        multipart(&mut p, MultipartRequestBody::TableFeatures(vec![]))
    else {
        panic!()
    };
    assert_eq!(tf.len(), 4);
    for t in &tf {
        let mut p = switch_with(
            Config { n_tables: 4, max_flows_per_table: 300, ..Config::default() },
            &[1, 2],
        );
        meter(&mut p, "meter=1,kbps,band=type=drop,rate=1000");
        let mut prio = 1u16;
        let mut install = |p: &mut Pipeline, m: Match, ins: Vec<Instruction>| {
            let mut fm = parse_flow("actions=drop", Usage::Add).unwrap().to_flow_mod(fc::ADD);
            fm.table_id = t.table_id;
            fm.priority = prio;
            prio += 1;
            fm.r#match = m;
            fm.instructions = ins;
            p.flow_mod(&fm)
        };
        for prop in &t.properties {
            match prop {
                TableFeatureProp::Match(ids) => {
                    for id in ids {
                        let f = id.header.basic_field().unwrap();
                        let zero = FieldBytes::from_u128(0, f.len());
                        let ones = FieldBytes::from_u128(u128::MAX, f.len());
                        let mask = id.header.has_mask().then_some(ones);
                        let v = Oxm::Basic { field: f, value: zero, mask };
                        let r = install(&mut p, with_prereqs(f, v), vec![]);
                        assert_eq!(r, Ok(()), "table {} match on {f:?}", t.table_id);
                    }
                }
                TableFeatureProp::Instructions { miss: false, ids } => {
                    for id in ids {
                        let FeatureId::Type(ty) = id else { panic!() };
                        let ins = match ty {
                            1 => Instruction::GotoTable(t.table_id + 1),
                            2 => Instruction::WriteMetadata { metadata: 1, mask: 1 },
                            3 => Instruction::WriteActions(vec![]),
                            4 => Instruction::ApplyActions(vec![]),
                            5 => Instruction::ClearActions,
                            6 => Instruction::Meter(1),
                            other => panic!("unexpected instruction type {other}"),
                        };
                        let r = install(&mut p, Match::default(), vec![ins]);
                        assert_eq!(r, Ok(()), "table {} instruction {ty}", t.table_id);
                    }
                    let has_goto = ids.contains(&FeatureId::Type(1));
                    let r = install(
                        &mut p,
                        Match::default(),
                        vec![Instruction::GotoTable(t.table_id.saturating_add(1))],
                    );
                    assert_eq!(r.is_ok(), has_goto, "goto advertised iff accepted");
                }
                TableFeatureProp::NextTables { miss: false, tables } => {
                    for next in 0..4u8 {
                        let r =
                            install(&mut p, Match::default(), vec![Instruction::GotoTable(next)]);
                        assert_eq!(r.is_ok(), tables.contains(&next), "goto {next}");
                    }
                }
                TableFeatureProp::ApplyActions { miss: false, ids } => {
                    for id in ids {
                        let FeatureId::Type(ty) = id else { panic!() };
                        let (m, a): (&str, &str) = match ty {
                            0 => ("", "output:2"),
                            11 => ("mpls", "copy_ttl_out"),
                            12 => ("mpls", "copy_ttl_in"),
                            15 => ("mpls", "set_mpls_ttl:3"),
                            16 => ("mpls", "dec_mpls_ttl"),
                            17 => ("", "push_vlan:0x8100"),
                            18 => ("vlan_vid=0x1000/0x1000", "pop_vlan"),
                            19 => ("", "push_mpls:0x8847"),
                            20 => ("mpls", "pop_mpls:0x0800"),
                            21 => ("", "set_queue:1"),
                            23 => ("ip", "set_nw_ttl:3"),
                            24 => ("ip", "dec_ttl"),
                            25 => ("", "set_field:aa:bb:cc:dd:ee:ff->eth_dst"),
                            26 => ("", "push_pbb:0x88e7"),
                            27 => ("pbb", "pop_pbb"),
                            22 => continue, // group: needs a group, covered above
                            other => panic!("unexpected action type {other}"),
                        };
                        let text = format!("{m}{}actions={a}", if m.is_empty() { "" } else { "," });
                        let fm = parse_flow(&text, Usage::Add).unwrap().to_flow_mod(fc::ADD);
                        let r = install(&mut p, fm.r#match, fm.instructions);
                        assert_eq!(r, Ok(()), "table {} action {ty} ({text})", t.table_id);
                    }
                }
                TableFeatureProp::ApplySetfield { miss: false, ids } => {
                    for id in ids {
                        let f = id.header.basic_field().unwrap();
                        let v = match f {
                            FieldId::VlanVid => 0x1005,
                            _ => 1,
                        };
                        let mut m = with_prereqs(f, oxm(f, v));
                        // Match on the field's prerequisites only (and a tag
                        // for the VLAN fields).
                        m.oxms.retain(|o| o.field_id() != Some(f) || f == FieldId::VlanPcp);
                        if f == FieldId::VlanVid {
                            m.oxms.push(oxm(FieldId::VlanVid, 0x1001));
                        }
                        let a = vec![Action::SetField(oxm(f, v))];
                        let r = install(&mut p, m, vec![Instruction::ApplyActions(a)]);
                        assert_eq!(r, Ok(()), "table {} set_field {f:?}", t.table_id);
                    }
                }
                _ => {}
            }
        }
        // max_entries is the real limit.
        let room =
            usize::try_from(t.max_entries).unwrap() - p.tables()[usize::from(t.table_id)].len();
        for i in 0..room {
            let m = Match { oxms: vec![oxm(FieldId::Metadata, 1000 + i as u128)] };
            install(&mut p, m, vec![]).unwrap();
        }
        let m = Match { oxms: vec![oxm(FieldId::Metadata, 99_999)] };
        assert_eq!(install(&mut p, m, vec![]), Err(ErrorCode::FMFC_TABLE_FULL));
    }
}

#[test]
fn table_stats_count_lookups_and_matches_and_barrier_follows_earlier_messages() {
    let mut p = switch_with(Config { n_tables: 3, ..Config::default() }, &[1, 2]);
    add(&mut p, "in_port=1,actions=goto_table:1");
    add(&mut p, "table=1,udp,actions=output:2");
    let f = udp4();
    run(&mut p, 1, &f);
    run(&mut p, 1, &hx(vector("set_field_tcp_src").2)); // misses table 1
    run(&mut p, 2, &f); // misses table 0
    let MultipartReplyBody::Table(ts) = multipart(&mut p, MultipartRequestBody::Table) else {
        panic!()
    };
    let got: Vec<(u8, u32, u64, u64)> =
        ts.iter().map(|t| (t.table_id, t.active_count, t.lookup_count, t.matched_count)).collect();
    assert_eq!(got, [(0, 1, 3, 2), (1, 1, 2, 1), (2, 0, 0, 0)]);
    // A flow-mod then a barrier: the reply comes after the flow is in.
    let fm = parse_flow("in_port=2,actions=output:1", Usage::Add).unwrap().to_flow_mod(fc::ADD);
    let (r1, _) = send(&mut p, Message::FlowMod(fm));
    let (r2, _) = send(&mut p, Message::BarrierRequest);
    assert!(r1.is_empty());
    assert_eq!(r2.iter().map(|o| &o.msg).collect::<Vec<_>>(), [&Message::BarrierReply]);
    assert_eq!(ports_of(&run(&mut p, 2, &f)), [1]);
}

#[test]
fn set_field_consistency_checks() {
    let mut p = switch(&[1, 2]);
    // A VID needs a tag: from the match or a push_vlan first.
    assert_eq!(
        try_add(&mut p, "ip,actions=set_field:4101->vlan_vid,output:2"),
        Err(ErrorCode::BAC_MATCH_INCONSISTENT)
    );
    add(&mut p, "ip,actions=push_vlan:0x8100,set_field:4101->vlan_vid,output:2");
    // After push_mpls the outermost tag is the label, not the VLAN tag.
    assert_eq!(
        try_add(
            &mut p,
            "vlan_vid=0x1000/0x1000,actions=push_mpls:0x8847,set_field:4101->vlan_vid,output:2"
        ),
        Err(ErrorCode::BAC_MATCH_INCONSISTENT)
    );
    assert_eq!(
        try_add(&mut p, "vlan_vid=0x1000/0x1000,actions=push_mpls:0x8847,pop_vlan,output:2"),
        Err(ErrorCode::BAC_MATCH_INCONSISTENT)
    );
    // pop_mpls to a VLAN ethertype exposes the tag again.
    add(&mut p, "mpls,actions=pop_mpls:0x8100,set_field:4101->vlan_vid,output:2");
    // Masked set-field and non-settable fields are refused.
    assert_eq!(try_add(&mut p, "actions=set_field:1->in_port"), Err(ErrorCode::BAC_BAD_SET_TYPE));
}
