//! The interpreter's trace hook ([`Interp::trace_packet`]) and frames
//! built from header-field descriptions ([`Interp::flow_frame`]), on
//! sluice's own example programs.

use std::path::{Path, PathBuf};

use sluice_p4::ast::BigValue;
use sluice_p4::interp::{Interp, TraceEvent};
use sluice_p4::target::{KeyMatch, Output, Target};
use sluice_p4::value::Value;
use sluice_p4::{ctl, parse};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/p4")
}

fn load_text(name: &str, text: &str) -> Interp {
    let loaded = parse::load_str(name, text).unwrap_or_else(|e| panic!("{}", e.render()));
    Interp::new(&loaded).unwrap_or_else(|d| panic!("{}", loaded.sources.render(&d)))
}

fn load(name: &str) -> Interp {
    let text = std::fs::read_to_string(examples().join(format!("{name}.p4"))).expect("example");
    load_text(name, &text)
}

fn hex(s: &str) -> Vec<u8> {
    sluice_p4::interp::parse_hex(s).expect("hex")
}

const ROUTER_IN: &str = "02000000000102000000AA0108004500002412344000401111930A0001010A000202\
                         000102030405060708090A0B0C0D0E0F";
const ROUTER_OUT: &str = "02000000BB02020000000002080045000024123440003F1112930A0001010A000202\
                          000102030405060708090A0B0C0D0E0F";
const ROUTER_FLOW: &str = "eth.dst=02:00:00:00:00:01,eth.src=02:00:00:00:aa:01,\
    eth.ethertype=0x0800,ip.version=4,ip.ihl=5,ip.total_len=36,ip.id=0x1234,ip.flags=2,\
    ip.ttl=64,ip.protocol=17,ip.src=10.0.1.1,ip.dst=10.0.2.2,\
    payload=000102030405060708090A0B0C0D0E0F";

fn router_with_route() -> Interp {
    let mut r = load("router");
    let mut session = ctl::Session::default();
    session
        .execute(
            &mut r,
            "table_add routes forward 10.0.2.0/24 => 02:00:00:00:bb:02 02:00:00:00:00:02 2",
        )
        .expect("table_add");
    r
}

#[test]
fn router_flow_builds_the_stf_frame_with_its_checksum() {
    let r = load("router");
    assert_eq!(r.emitted_headers(), vec!["eth", "ip"]);
    // The header checksum (0x1193) comes from the program's
    // computeChecksum control: the frame is router.stf's first packet.
    assert_eq!(r.flow_frame(ROUTER_FLOW), Ok(hex(ROUTER_IN)));
    // `hdr.` may be written; an explicit checksum is kept.
    let bad = r.flow_frame(&format!("{ROUTER_FLOW},hdr.ip.checksum=0xbad")).expect("frame");
    assert_eq!(&bad[24..26], &[0x0b, 0xad]);
}

#[test]
fn a_built_frame_parses_back_into_the_described_fields() {
    let mut r = load("router");
    let frame = r
        .flow_frame(
            "eth.dst=00:00:00:00:00:02,eth.ethertype=0x0800,ip.ihl=5,ip.ttl=64,ip.dst=10.0.2.2",
        )
        .expect("frame");
    assert_eq!(frame.len(), 14 + 20);
    let p = r.parse_only(1, &frame).expect("parse");
    let Value::Struct(h) = &p.headers else { panic!("{:?}", p.headers) };
    let field = |hdr: &str, f: &str| match h.get(hdr) {
        Some(Value::Header(x)) => {
            assert!(x.valid, "{hdr} invalid");
            match x.get(f) {
                Some(Value::Bits(b)) => b.to_u128().expect("small"),
                other => panic!("{hdr}.{f}: {other:?}"),
            }
        }
        other => panic!("{hdr}: {other:?}"),
    };
    assert_eq!(field("eth", "dst"), 2);
    assert_eq!(field("eth", "src"), 0);
    assert_eq!(field("eth", "ethertype"), 0x0800);
    assert_eq!(field("ip", "ihl"), 5);
    assert_eq!(field("ip", "ttl"), 64);
    assert_eq!(field("ip", "dst"), 0x0a00_0202);
    assert_eq!(field("ip", "src"), 0);
    assert_ne!(field("ip", "checksum"), 0, "computed by computeChecksum");
}

#[test]
fn descriptions_are_refused_by_name() {
    let r = load("router");
    let err = |d: &str| r.flow_frame(d).expect_err(d);
    let e = err("ipv4.ttl=64");
    assert!(e.contains("unknown header `ipv4`") && e.contains("eth, ip"), "{e}");
    let e = err("ip.tll=64");
    assert!(e.contains("no field `tll`") && e.contains("ttl"), "{e}");
    let e = err("ip.ttl=300");
    assert!(e.contains("ip.ttl") && e.contains("`300` does not fit in 8 bits"), "{e}");
    let e = err("eth.dst=00:11");
    assert!(e.contains("eth.dst") && e.contains("`00:11`"), "{e}");
    let e = err("ip.ttl=1,ip.ttl=2");
    assert!(e.contains("given twice"), "{e}");
    let e = err("ttl=1");
    assert!(e.contains("`ttl` is not HEADER.FIELD"), "{e}");
    let e = err("ip.ttl");
    assert!(e.contains("`ip.ttl` is not HEADER.FIELD=VALUE"), "{e}");
    let e = err("payload=abc");
    assert!(e.contains("payload"), "{e}");
    // A header the deparser never emits.
    let text = std::fs::read_to_string(examples().join("router.p4")).expect("router");
    let no_ip = load_text("no_ip.p4", &text.replace("pkt.emit(hdr.ip);", ""));
    assert_eq!(no_ip.emitted_headers(), vec!["eth"]);
    let e = no_ip.flow_frame("ip.ttl=1").expect_err("not emitted");
    assert!(e.contains("header `ip` is never emitted by the deparser"), "{e}");
}

fn position(events: &[TraceEvent], f: impl Fn(&TraceEvent) -> bool) -> usize {
    events.iter().position(f).unwrap_or_else(|| panic!("not in {events:#?}"))
}

#[test]
fn trace_of_a_routed_packet() {
    let mut r = router_with_route();
    let (ev, out) = r.trace_packet(1, &hex(ROUTER_IN));
    let out = out.expect("trace");
    assert_eq!(out, vec![Output { port: 2, data: hex(ROUTER_OUT) }]);
    let stage = |name: &'static str| move |e: &TraceEvent| matches!(e, TraceEvent::Stage { stage, .. } if *stage == name);
    let parser = position(&ev, stage("parser"));
    let start =
        position(&ev, |e| matches!(e, TraceEvent::ParserState { state } if state == "start"));
    let select = position(&ev, |e| {
        matches!(e, TraceEvent::Select { next: Some(n), values } if n == "ip"
            && values == &vec![Value::bits(16, 0x0800)])
    });
    let extract = position(
        &ev,
        |e| matches!(e, TraceEvent::Extract { header, bits } if header == "hdr.ip" && *bits == 160),
    );
    let ingress = position(&ev, stage("ingress"));
    let table = position(&ev, |e| {
        matches!(e, TraceEvent::Table { table, keys } if table == "RouterIngress.routes"
            && keys.len() == 1 && keys[0].0 == "hdr.ip.dst"
            && keys[0].1.to_u128() == Some(0x0a00_0202))
    });
    let hit = position(&ev, |e| {
        matches!(e, TraceEvent::Hit { handle: 0, keys, priority: None }
            if keys == &vec![("hdr.ip.dst".to_string(),
                KeyMatch::Lpm { value: BigValue::from_u128(0x0a00_0200), prefix_len: 24 })])
    });
    let action = position(&ev, |e| {
        matches!(e, TraceEvent::Action { action, args } if action == "forward"
            && args.len() == 3 && args[2] == ("port".to_string(), Value::bits(9, 2)))
    });
    let end =
        position(&ev, |e| matches!(e, TraceEvent::IngressEnd { egress_spec: 2, mcast_grp: 0 }));
    let egress = position(&ev, |e| matches!(e, TraceEvent::Egress { port: 2, rid: None }));
    let output = position(&ev, |e| matches!(e, TraceEvent::Output { port: 2, .. }));
    let order = [parser, start, select, extract, ingress, table, hit, action, end, egress, output];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?} {ev:#?}");
    // Tracing changes nothing: the same packet through `packet`.
    assert_eq!(r.packet(1, &hex(ROUTER_IN)), Ok(out));
}

#[test]
fn trace_of_a_miss_and_of_a_parser_error() {
    let mut r = router_with_route();
    let frame = r.flow_frame(&ROUTER_FLOW.replace("10.0.2.2", "192.168.0.1")).expect("frame");
    let (ev, out) = r.trace_packet(1, &frame);
    let out = out.expect("trace");
    assert!(out.is_empty());
    let miss = position(&ev, |e| matches!(e, TraceEvent::Miss));
    let drop_action =
        position(&ev, |e| matches!(e, TraceEvent::Action { action, .. } if action == "drop"));
    let mark = position(&ev, |e| matches!(e, TraceEvent::MarkToDrop));
    let dropped = position(&ev, |e| matches!(e, TraceEvent::Drop));
    assert!(miss < drop_action && drop_action < mark && mark < dropped, "{ev:#?}");
    // ihl 6: verify() rejects.
    let frame = r.flow_frame(&ROUTER_FLOW.replace("ihl=5", "ihl=6")).expect("frame");
    let (ev, _) = r.trace_packet(1, &frame);
    position(
        &ev,
        |e| matches!(e, TraceEvent::ParserError { error } if error == "ParserInvalidArgument"),
    );
}

#[test]
fn trace_of_multicast_replication() {
    let mut l2 = load("l2switch");
    let mut session = ctl::Session::default();
    for c in ["mc_mgrp_create 1", "mc_node_create 0 1 2 3", "mc_node_associate 1 0"] {
        session.execute(&mut l2, c).expect(c);
    }
    let frame = hex("02000000010202000000010188B56F6E6520746F2074776F");
    let (ev, out) = l2.trace_packet(1, &frame);
    let out = out.expect("trace");
    assert_eq!(out.iter().map(|o| o.port).collect::<Vec<_>>(), vec![2, 3]);
    position(&ev, |e| matches!(e, TraceEvent::Replicate { group: 1, copies } if copies.len() == 3));
    position(&ev, |e| matches!(e, TraceEvent::EgressDrop { port: 1 }));
    position(&ev, |e| matches!(e, TraceEvent::Egress { port: 3, rid: Some(0) }));
}

#[test]
fn odd_descriptions_are_refused_or_built_never_a_panic() {
    let r = load("router");
    for d in [
        "",
        ",",
        "=",
        "==",
        ".=1",
        "a.b.c=1",
        "eth.dst=",
        "eth.dst=0x",
        "eth.dst==1",
        "payload=0",
        "payload=",
        "hdr.=1",
        "hdr.eth.dst=1",
        "eth.dst=\u{ff}",
        "\u{e9}.x=1",
        "eth[0].dst=1",
        "eth.dst[0]=1",
        "ip.dst=1.2.3.4.5",
        "ip.dst=999.1.1.1",
        "eth.dst=0x1000000000000",
        "ip.ttl=-1",
        "ip.ttl=18446744073709551616",
        "payload=\u{e9}e9",
        "eth.dst=1,,,ip.ttl=2",
        " eth.dst = 1 ",
    ] {
        let _ = r.flow_frame(d);
    }
    assert_eq!(r.flow_frame(""), Ok(Vec::new()));
    assert_eq!(r.flow_frame(" eth.ethertype = 0x0800 "), Ok(hex("0000000000000000000000000800")));
}

#[test]
fn digests_are_traced() {
    let mut l2 = load("l2switch");
    let frame = hex("02000000010202000000010188B56F6E6520746F2074776F");
    let (ev, _) = l2.trace_packet(1, &frame);
    position(&ev, |e| matches!(e, TraceEvent::Digest { .. }));
    assert_eq!(l2.take_digests().len(), 1);
}
