//! The reference interpreter on small programs written for these tests,
//! driven through the control-plane trait.

use sluice_p4::ast::BigValue;
use sluice_p4::interp::Interp;
use sluice_p4::parse;
use sluice_p4::target::{EntrySpec, KeyMatch, Output, Target};

fn load(src: &str) -> Interp {
    let loaded = match parse::load_str("test.p4", src) {
        Ok(l) => l,
        Err(e) => panic!("{}", e.render()),
    };
    match Interp::new(&loaded) {
        Ok(i) => i,
        Err(d) => panic!("{}", loaded.sources.render(&d)),
    }
}

fn load_err(src: &str) -> String {
    let loaded = match parse::load_str("test.p4", src) {
        Ok(l) => l,
        Err(e) => panic!("{}", e.render()),
    };
    match Interp::new(&loaded) {
        Ok(_) => panic!("expected a load error"),
        Err(d) => d.message,
    }
}

fn big(v: u128) -> BigValue {
    BigValue::from_u128(v)
}

fn out(port: u32, data: &[u8]) -> Output {
    Output { port, data: data.to_vec() }
}

/// Ethernet-like header `h` (dst 8 bits, src 8 bits, ty 8 bits) and the
/// usual empty blocks around an ingress given as text.
fn program(decls: &str, ingress: &str) -> String {
    format!(
        r#"
#include <core.p4>
#include <v1model.p4>
header h_t {{ bit<8> dst; bit<8> src; bit<8> ty; }}
struct headers {{ h_t h; }}
struct meta_t {{ bit<8> x; }}
parser P(packet_in pk, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {{
    state start {{ pk.extract(hdr.h); transition accept; }}
}}
control V(inout headers hdr, inout meta_t m) {{ apply {{ }} }}
{decls}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {{
{ingress}
}}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {{ apply {{ }} }}
control C(inout headers hdr, inout meta_t m) {{ apply {{ }} }}
control D(packet_out pk, in headers hdr) {{ apply {{ pk.emit(hdr.h); }} }}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#
    )
}

const LPM: &str = r#"
    action fwd(bit<9> port, bit<8> tag) { sm.egress_spec = port; hdr.h.ty = tag; }
    action drop() { mark_to_drop(sm); }
    table route {
        key = { hdr.h.dst : lpm; }
        actions = { fwd; drop; }
        default_action = drop();
    }
    apply { route.apply(); }
"#;

#[test]
fn lpm_longest_prefix_wins_and_default_drops() {
    let mut i = load(&program("", LPM));
    // 0xa* (a /4 written as STF nibbles) and 0xab exactly.
    i.add_entry(&EntrySpec {
        table: "route".into(),
        keys: vec![("hdr.h.dst".into(), KeyMatch::Ternary { value: big(0xa0), mask: big(0xf0) })],
        action: "fwd".into(),
        args: vec![("port".into(), big(1)), ("tag".into(), big(0x11))],
        priority: None,
    })
    .unwrap();
    i.add_entry(&EntrySpec {
        table: "I.route".into(),
        keys: vec![("dst".into(), KeyMatch::Lpm { value: big(0xab), prefix_len: 8 })],
        action: "I.fwd".into(),
        args: vec![("port".into(), big(2)), ("tag".into(), big(0x22))],
        priority: None,
    })
    .unwrap();
    assert_eq!(i.packet(0, &[0xab, 1, 0, 9]).unwrap(), vec![out(2, &[0xab, 1, 0x22, 9])]);
    assert_eq!(i.packet(0, &[0xac, 1, 0]).unwrap(), vec![out(1, &[0xac, 1, 0x11])]);
    assert_eq!(i.packet(0, &[0x0c, 1, 0]).unwrap(), vec![]);
    // A mask that is not a prefix is refused for an LPM key.
    let e = i.add_entry(&EntrySpec {
        table: "route".into(),
        keys: vec![("hdr.h.dst".into(), KeyMatch::Ternary { value: big(0x0a), mask: big(0x0f) })],
        action: "drop".into(),
        args: vec![],
        priority: None,
    });
    assert!(e.unwrap_err().contains("not a prefix"));
    // Values wider than the key name it.
    let e = i.add_entry(&EntrySpec {
        table: "route".into(),
        keys: vec![("hdr.h.dst".into(), KeyMatch::Exact(big(0x100)))],
        action: "drop".into(),
        args: vec![],
        priority: None,
    });
    assert!(e.unwrap_err().contains("hdr.h.dst"));
    // remove_all restores the default.
    i.remove_all().unwrap();
    assert_eq!(i.packet(0, &[0xab, 1, 0]).unwrap(), vec![]);
    i.set_default("route", "fwd", &[("port".into(), big(7)), ("tag".into(), big(1))]).unwrap();
    assert_eq!(i.packet(0, &[0xab, 1, 0]).unwrap(), vec![out(7, &[0xab, 1, 1])]);
}

#[test]
fn ternary_priorities_and_exact_masks() {
    let ingress = r#"
    action set(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { hdr.h.dst : ternary; hdr.h.src : exact @name("source"); }
        actions = { set; NoAction; }
    }
    apply { t.apply(); }
"#;
    let mut i = load(&program("", ingress));
    let add = |i: &mut Interp, v: u128, m: u128, port: u128, prio: Option<u64>| {
        i.add_entry(&EntrySpec {
            table: "t".into(),
            keys: vec![
                ("dst".into(), KeyMatch::Ternary { value: big(v), mask: big(m) }),
                ("source".into(), KeyMatch::Exact(big(5))),
            ],
            action: "set".into(),
            args: vec![("port".into(), big(port))],
            priority: prio,
        })
    };
    add(&mut i, 0x10, 0xf0, 1, Some(10)).unwrap();
    add(&mut i, 0x12, 0xff, 2, Some(20)).unwrap();
    add(&mut i, 0x00, 0x00, 3, Some(20)).unwrap();
    // Priority 20 beats 10; of the two 20s the first added wins.
    assert_eq!(i.packet(0, &[0x12, 5, 0]).unwrap()[0].port, 2);
    assert_eq!(i.packet(0, &[0x13, 5, 0]).unwrap()[0].port, 3);
    // The exact key misses: NoAction, egress_spec stays 0.
    assert_eq!(i.packet(0, &[0x12, 6, 0]).unwrap()[0].port, 0);
    // An exact key needs a full mask.
    let e = i.add_entry(&EntrySpec {
        table: "t".into(),
        keys: vec![("source".into(), KeyMatch::Ternary { value: big(5), mask: big(0x0f) })],
        action: "set".into(),
        args: vec![("port".into(), big(1))],
        priority: Some(1),
    });
    assert!(e.unwrap_err().contains("source"));
}

#[test]
fn const_entries_first_wins() {
    let ingress = r#"
    action set(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { hdr.h.dst : ternary; }
        actions = { set; }
        const entries = {
            0x10 &&& 0xf0 : set(1);
            0x12 : set(2);
            _ : set(3);
        }
    }
    apply { t.apply(); }
"#;
    let mut i = load(&program("", ingress));
    assert_eq!(i.packet(0, &[0x12, 0, 0]).unwrap()[0].port, 1);
    assert_eq!(i.packet(0, &[0x22, 0, 0]).unwrap()[0].port, 3);
    let e = i.add_entry(&EntrySpec {
        table: "t".into(),
        keys: vec![],
        action: "set".into(),
        args: vec![("port".into(), big(1))],
        priority: None,
    });
    assert!(e.is_err());
}

#[test]
fn parser_error_continues_into_ingress() {
    let ingress = r#"
    apply {
        if (sm.parser_error == error.PacketTooShort) { sm.egress_spec = 4; }
        else { sm.egress_spec = 2; }
    }
"#;
    let mut i = load(&program("", ingress));
    // Too short for h: ingress still runs, h is invalid and not emitted;
    // the unparsed bytes follow.
    assert_eq!(i.packet(0, &[1, 2]).unwrap(), vec![out(4, &[1, 2])]);
    assert_eq!(i.packet(0, &[1, 2, 3, 4]).unwrap(), vec![out(2, &[1, 2, 3, 4])]);
}

#[test]
fn multicast_replicates_with_rid() {
    let ingress = r#"
    apply { sm.mcast_grp = 7; }
"#;
    let src = program("", ingress).replace(
        "control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }",
        "control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
            apply {
                hdr.h.ty = (bit<8>)sm.egress_rid;
                if (sm.instance_type != 5) { hdr.h.ty = 0xff; }
                if (sm.egress_port == 3) { mark_to_drop(sm); }
            }
        }",
    );
    let mut i = load(&src);
    assert_eq!(i.packet(0, &[1, 2, 3]).unwrap(), vec![]);
    i.set_multicast_group(7, &[(10, 1), (11, 2), (12, 3)]).unwrap();
    assert_eq!(i.packet(0, &[1, 2, 3]).unwrap(), vec![out(1, &[1, 2, 10]), out(2, &[1, 2, 11])]);
}

#[test]
fn exit_copies_out_and_stops() {
    let ingress = r#"
    action a(inout bit<8> v) { v = 0x42; exit; }
    apply {
        sm.egress_spec = 1;
        a(hdr.h.ty);
        sm.egress_spec = 2;
    }
"#;
    let mut i = load(&program("", ingress));
    assert_eq!(i.packet(0, &[1, 2, 3]).unwrap(), vec![out(1, &[1, 2, 0x42])]);
}

#[test]
fn side_effects_left_to_right_and_int_inference() {
    let decls = r#"
bit<8> bump(inout bit<8> x) { x = x + 1; return x; }
"#;
    let ingress = r#"
    apply {
        bit<8> a = 250;
        hdr.h.dst = bump(a) ++ 4w0 == 0 ? 1 : 2;
        hdr.h.src = (bit<8>)(bump(a) |+| 10);
        hdr.h.ty = (bit<8>)-(hdr.h.dst == 9 ? 2 : 3w1);
        sm.egress_spec = 1;
    }
"#;
    let mut i = load(&program(decls, ingress));
    // bump(a) = 251 ++ 0 != 0 → 2; then 252 |+| 10 saturates to 255;
    // -(3w1) as bit<3> is 7.
    assert_eq!(i.packet(0, &[0, 0, 0]).unwrap(), vec![out(1, &[2, 255, 7])]);
}

#[test]
fn header_stack_parsing_and_push_front() {
    let src = r#"
#include <core.p4>
#include <v1model.p4>
header b_t { bit<7> v; bit<1> last; }
struct headers { b_t[3] s; }
struct meta_t { }
parser P(packet_in pk, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.s.next);
        transition select(hdr.s.last.last) { 1: accept; default: start; }
    }
}
control V(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = (bit<9>)hdr.s.lastIndex;
        if (sm.parser_error == error.StackOutOfBounds) { sm.egress_spec = 9; }
        hdr.s.push_front(1);
        hdr.s[0].setValid();
        hdr.s[0].v = 0x7f;
        hdr.s[0].last = 0;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr.s); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;
    let mut i = load(src);
    // Two elements: lastIndex 1; after push_front three are valid.
    assert_eq!(i.packet(0, &[0x02, 0x05, 0xaa]).unwrap(), vec![out(1, &[0xfe, 0x02, 0x05, 0xaa])]);
    // Four elements do not fit in three: StackOutOfBounds, ingress runs.
    assert_eq!(i.packet(0, &[0, 0, 0, 1]).unwrap()[0].port, 9);
}

#[test]
fn registers_counters_and_hash() {
    let ingress = r#"
    register<bit<8>>(4) r;
    counter(4, CounterType.packets) c;
    apply {
        bit<8> old;
        r.read(old, 1);
        r.write(1, old + hdr.h.dst);
        c.count(2);
        bit<16> h;
        hash(h, HashAlgorithm.identity, 16w0, { hdr.h.dst, hdr.h.src }, 32w65536);
        hdr.h.ty = old;
        hdr.h.src = h[7:0];
        sm.egress_spec = 1;
    }
"#;
    let mut i = load(&program("", ingress));
    assert_eq!(i.packet(0, &[3, 9, 0]).unwrap(), vec![out(1, &[3, 9, 0])]);
    assert_eq!(i.packet(0, &[4, 8, 0]).unwrap(), vec![out(1, &[4, 8, 3])]);
    let regs = i.register("r").unwrap();
    assert_eq!(regs[1], sluice_p4::value::Value::bits(8, 7));
    assert_eq!(i.counter("c").unwrap()[2], (2, 6));
}

#[test]
fn unsupported_is_refused_at_load() {
    let ingress = r#"
    apply { resubmit_preserving_field_list(0); }
"#;
    let msg = load_err(&program("", ingress));
    assert!(msg.contains("not supported"), "{msg}");
}

#[test]
fn sub_control_and_switch_on_action_run() {
    let decls = r#"
control Sub(inout bit<8> x, out bit<8> y) {
    action inc() { x = x + 1; }
    action dec() { x = x - 1; }
    table t { key = { x : exact; } actions = { inc; dec; } default_action = dec(); }
    apply {
        y = 5;
        switch (t.apply().action_run) {
            inc: { y = 1; }
            dec: { y = 2; }
        }
    }
}
"#;
    let ingress = r#"
    Sub() s;
    apply { s.apply(hdr.h.dst, hdr.h.ty); sm.egress_spec = 1; }
"#;
    let mut i = load(&program(decls, ingress));
    i.add_entry(&EntrySpec {
        table: "I.s.t".into(),
        keys: vec![("x".into(), KeyMatch::Exact(big(7)))],
        action: "inc".into(),
        args: vec![],
        priority: None,
    })
    .unwrap();
    assert_eq!(i.packet(0, &[7, 0, 0]).unwrap(), vec![out(1, &[8, 0, 1])]);
    assert_eq!(i.packet(0, &[9, 0, 0]).unwrap(), vec![out(1, &[8, 0, 2])]);
}

#[test]
fn runaway_programs_are_bounded() {
    // Recursion (invalid P4, but must not overflow the stack).
    let decls = "bit<8> f(in bit<8> x) { return f(x + 1); }";
    let mut i = load(&program(decls, "apply { hdr.h.ty = f(0); }"));
    assert!(i.packet(0, &[0, 0, 0]).is_err());
    // A deeply nested expression.
    let deep =
        format!("apply {{ hdr.h.ty = {}hdr.h.dst{}; }}", "(".repeat(120), " + 1)".repeat(120));
    let mut i = load(&program("", &deep));
    let _ = i.packet(0, &[0, 0, 0]);
    // A parser that never ends times out into ParserTimeout.
    let src = program(
        "",
        "apply { if (sm.parser_error == error.ParserTimeout) { sm.egress_spec = 3; } }",
    )
    .replace("pk.extract(hdr.h); transition accept;", "transition start;");
    let mut i = load(&src);
    assert_eq!(i.packet(0, &[0, 0, 0]).unwrap()[0].port, 3);
}
