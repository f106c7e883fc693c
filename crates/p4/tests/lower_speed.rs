//! The compiled engine's fast paths against the reference interpreter:
//! the examples' L2 switch and router (the `sluice bench` programs) with
//! entries installed, on frames that hit, miss, flood and carry good and
//! bad IPv4 checksums, in every cache mode, indexed and scanned, through
//! both [`Target::packet`] and the copy-free [`Target::packet_into`]; a
//! cached packet's whole way must be composed into one program (the
//! graph's fused synthetic tables and direct branches keep it within a
//! cache chain). And a condition comparing a field with a constant is a
//! branch on the field, agreeing with the interpreter at the boundaries.

mod common;
use common::{examples, load_text, Rng};

use sluice_core::graph::Node;
use sluice_core::walk::CacheMode;
use sluice_p4::interp::Interp;
use sluice_p4::lower::engine::Compiled;
use sluice_p4::target::{Output, Target};
use sluice_p4::{ctl, gen, parse};

fn mac(i: u8) -> [u8; 6] {
    [2, 0, 0, 0, 0, i]
}

fn mac_text(m: &[u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// An IPv4 frame to `10.0.d.7` with TTL `ttl`, its checksum right or off by one.
fn ipv4(d: u8, ttl: u8, good: bool) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 0xfe]);
    f[6..12].copy_from_slice(&mac(0xaa));
    f[12] = 0x08;
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[3] = 46;
    ip[8] = ttl;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 9, 9, 9]);
    ip[16..20].copy_from_slice(&[10, 0, d, 7]);
    let mut s: u32 =
        (0..10).map(|k| u32::from(u16::from_be_bytes([ip[2 * k], ip[2 * k + 1]]))).sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    let cs = !(s as u16) ^ u16::from(!good);
    ip[10..12].copy_from_slice(&cs.to_be_bytes());
    f
}

/// Runs `frames` through the interpreter and the compiled engine in each
/// mode, both after `commands`; returns how many packets the engine in
/// cache mode `On` (indexed) installed and composed.
fn agree(file: &str, commands: &[String], frames: &[Vec<u8>]) -> (u64, u64) {
    let loaded = parse::load_file(&examples().join(file)).expect("load");
    let mut composed = (0, 0);
    for (mode, indexed) in gen::MODES {
        let mut interp = Interp::new(&loaded).expect("interp");
        let mut eng = Compiled::new(&loaded).expect("compiles");
        eng.set_cache_mode(mode);
        eng.set_indexed(indexed);
        let (mut si, mut se) = (ctl::Session::default(), ctl::Session::default());
        for c in commands {
            si.execute(&mut interp, c).unwrap_or_else(|e| panic!("{c}: interpreter: {e}"));
            se.execute(&mut eng, c).unwrap_or_else(|e| panic!("{c}: engine: {e}"));
        }
        for (n, f) in frames.iter().enumerate() {
            let want = interp.packet(1, f).expect("interp");
            let mut got = Vec::new();
            // Alternate the two ways in, so each sees warm and cold caches.
            if n % 2 == 0 {
                eng.packet_into(1, f, &mut |port, d| got.push(Output { port, data: d.to_vec() }))
                    .expect("packet_into");
            } else {
                got = eng.packet(1, f).expect("packet");
            }
            assert_eq!(got, want, "{file} {mode:?} indexed={indexed}, frame {n}: {f:02x?}");
        }
        if (mode, indexed) == (CacheMode::On, true) {
            let s = eng.cache_stats();
            composed = (s.installs, s.composed);
        }
    }
    composed
}

#[test]
fn l2_switch_agrees_and_its_cached_way_is_composed() {
    let mut cmds = vec![format!("table_add learned known {} =>", mac_text(&mac(0xaa)))];
    for i in 1..=8u8 {
        cmds.push(format!("table_add forwarding forward {} => {}", mac_text(&mac(i)), i % 3 + 2));
    }
    cmds.push(format!("table_add forwarding drop {} =>", mac_text(&mac(9))));
    cmds.push("mc_mgrp_create 1".into());
    cmds.push("mc_node_create 0 1 2 3".into());
    cmds.push("mc_node_associate 1 0".into());
    let mut rng = Rng(7);
    let mut frames = Vec::new();
    for _ in 0..300 {
        let mut f = rng.bytes(60);
        // Known destinations, a dropped one, unknown (flooded) ones;
        // a known source or a new one (a digest).
        f[0..6].copy_from_slice(&mac(rng.below(12) as u8));
        let src = if rng.below(4) == 0 { mac(0x40 + rng.below(4) as u8) } else { mac(0xaa) };
        f[6..12].copy_from_slice(&src);
        if rng.below(20) == 0 {
            f.truncate(10); // too short: a parser error
        }
        frames.push(f);
    }
    let (installs, composed) = agree("l2switch.p4", &cmds, &frames);
    assert!(installs > 0, "nothing was cached");
    assert_eq!(composed, installs, "every cached way of the L2 switch is one program");
}

#[test]
fn router_agrees_and_its_cached_way_is_composed() {
    let mut cmds = Vec::new();
    for d in 0..6u8 {
        cmds.push(format!(
            "table_add routes forward 10.0.{d}.0/24 => 02:00:00:00:01:0{d} 02:00:00:00:00:fe {}",
            d % 3 + 2
        ));
    }
    let mut rng = Rng(11);
    let frames: Vec<Vec<u8>> = (0..300)
        .map(|_| ipv4(rng.below(8) as u8, [0, 1, 2, 64][rng.below(4) as usize], rng.below(6) != 0))
        .collect();
    let (installs, composed) = agree("router.p4", &cmds, &frames);
    assert!(installs > 0, "nothing was cached");
    assert_eq!(composed, installs, "every cached way of the router is one program");
}

#[test]
fn a_field_compared_with_a_constant_is_a_branch_on_the_field() {
    let text = r#"
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<1> f; bit<7> pad; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t std) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t std) {
    action port(bit<9> p) { std.egress_spec = p; }
    action bump() { hdr.h.pad = hdr.h.pad + 1; }
    action mark() { hdr.h.b = 0xee; }
    table ta { key = { hdr.h.b: exact; } actions = { port; } default_action = port(3); }
    table tb { key = { hdr.h.a: exact; } actions = { bump; } default_action = bump(); }
    table tc { key = { hdr.h.a: exact; } actions = { mark; } default_action = mark(); }
    apply {
        std.egress_spec = 2;
        if (hdr.h.a == 5) { ta.apply(); }
        if (hdr.h.b != 3) { tb.apply(); }
        if (hdr.h.f == 1) { tc.apply(); }
    }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t std) { apply { } }
control C(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;
    let loaded = load_text("speed_direct_branch.p4", text);
    let c = Compiled::new(&loaded).expect("compiles");
    let widths: Vec<u32> = c
        .graph()
        .nodes()
        .iter()
        .filter_map(|n| match n {
            Node::Branch { test, .. } => Some(test.mask.count_ones()),
            _ => None,
        })
        .collect();
    // `a == 5` and `b != 3` test 8 bits of the header, `f == 1` one (a
    // condition computed into a scratch bit would test one bit each).
    assert_eq!(widths.iter().filter(|&&w| w == 8).count(), 2, "branch widths {widths:?}");
    let mut interp = Interp::new(&loaded).expect("interp");
    let mut frames = Vec::new();
    for a in [4u8, 5, 6, 0xff] {
        for b in [2u8, 3, 4] {
            for f in [0u8, 0x80, 0x7f, 0xff] {
                frames.push(vec![a, b, f, 0xaa]);
            }
        }
    }
    common::compiled_agrees(&loaded, &mut interp, &frames, |_, _, _| {});
}
