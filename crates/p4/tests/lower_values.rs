//! Values the lowering holds beyond single fields, against the
//! reference interpreter: header stack elements at run-time indices
//! (in and out of range), whole headers, structs, stacks and tuples
//! (assignment, nested initializers, `?:`, `==`/`!=`), header unions'
//! `isValid()`, and `bit<W>` values over 64 bits in locals, computed
//! table keys and comparisons. Each program runs on random frames
//! (short ones included, so parser errors and invalid headers occur) on
//! the compiled engine in every cache mode and on the interpreter; their
//! outputs must be the same.

mod common;
use common::{load_text, Rng};

use sluice_core::walk::CacheMode;
use sluice_p4::ast::BigValue;
use sluice_p4::interp::Interp;
use sluice_p4::lower::engine::Compiled;
use sluice_p4::target::{EntrySpec, KeyMatch, Target};

/// A v1model program: headers `i` (indices and results), a stack `s`
/// of three `h_t`, two more `h_t` (`c`, `d`, not parsed) and a union
/// `u` parsed when `i.x` is odd, and a function `bump` with a side
/// effect; `locals` and `apply` are the ingress's.
fn program(locals: &str, apply: &str) -> String {
    format!(
        r#"#include <core.p4>
#include <v1model.p4>
header i_t {{ bit<8> x; bit<8> y; bit<8> r; bit<8> e; }}
header h_t {{ bit<8> a; bit<8> b; }}
header g_t {{ bit<16> g; }}
header_union u_t {{ h_t a; g_t b; }}
struct pair_t {{ h_t x; bit<8> y; }}
struct H {{ i_t i; h_t[3] s; h_t c; h_t d; u_t u; }}
struct M {{ }} bit<8> bump(inout bit<8> v) {{ v = v + 1; return v & 3; }}
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {{
    state start {{
        pkt.extract(hdr.i);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition select(hdr.i.x[0:0]) {{ 1: un; default: accept; }}
    }}
    state un {{ pkt.extract(hdr.u.b); transition accept; }}
}}
control V(inout H hdr, inout M m) {{ apply {{ }} }}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {{
    {locals}
    apply {{ sm.egress_spec = 2; {apply} }}
}}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {{ apply {{ }} }}
control C(inout H hdr, inout M m) {{ apply {{ }} }}
control D(packet_out pkt, in H hdr) {{ apply {{ pkt.emit(hdr); }} }}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#
    )
}

const MODES: [CacheMode; 3] = [CacheMode::Off, CacheMode::Megaflow, CacheMode::On];

/// Compiles `text` (it must compile), adds `entries` to both engines
/// and compares their outputs on random frames, in every cache mode.
fn agree(name: &str, text: &str, entries: &[EntrySpec]) {
    let loaded = load_text(name, text);
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    for (m, mode) in MODES.into_iter().enumerate() {
        let mut interp = Interp::new(&loaded).expect("interpreter");
        let mut eng = match Compiled::new(&loaded) {
            Ok(c) => c,
            Err(d) => panic!("{name} refused: {}", loaded.sources.render(&d)),
        };
        eng.set_cache_mode(mode);
        for e in entries {
            interp.add_entry(e).expect("interp entry");
            eng.add_entry(e).expect("engine entry");
        }
        for k in 0..300 {
            let len = 2 + (r.next() % 16) as usize;
            let mut frame: Vec<u8> = (0..len).map(|_| r.next() as u8).collect();
            // Small indices often, so that most land in range.
            if k % 2 == 0 {
                for b in frame.iter_mut().take(2) {
                    *b %= 5;
                }
            }
            let want = interp.packet(1, &frame).expect("interp packet");
            let got = eng.packet(1, &frame).expect("engine packet");
            assert_eq!(got, want, "{name}, mode {m}, frame {frame:02x?}:\n{text}");
        }
    }
}

#[test]
fn stack_elements_at_run_time_indices() {
    let locals = "action two(inout bit<8> p, inout bit<8> q) { p = q; q = q + 1; }";
    let apply = "
        hdr.s[hdr.i.x].a = hdr.i.y;
        hdr.i.r = hdr.s[hdr.i.y].b;
        hdr.s[hdr.s[hdr.i.y & 3].a & 3].b = hdr.i.x + 1;
        hdr.i.e = hdr.s[hdr.i.x].isValid() ? 8w1 : 8w2;
        // The index is computed before the value, and an argument's
        // location before the call.
        hdr.s[hdr.i.y].b = bump(hdr.i.y);
        hdr.s[bump(hdr.i.x)].a = hdr.i.x;
        hdr.s[hdr.i.x & 1].b[3:0] = (bit<4>)bump(hdr.i.x);
        hdr.s[hdr.i.y].a[5:2] = hdr.i.x[3:0];
        hdr.s[hdr.i.y].a = hdr.s[hdr.i.y].a + bump(hdr.i.y);
        two(hdr.s[hdr.i.x & 3].b, hdr.i.x);
        // Whole elements: read (out of range: an invalid header), written.
        hdr.c = hdr.s[hdr.i.y];
        h_t l = hdr.s[hdr.i.x & 3];
        hdr.s[hdr.i.x] = hdr.d;
        hdr.s[hdr.i.y & 1] = { hdr.i.x, 5 };
        hdr.d = l;
        hdr.s[hdr.i.r & 3] = hdr.s[hdr.i.e & 3];
        hdr.s[1] = hdr.s[hdr.i.y & 3];";
    agree("dyn.p4", &program(locals, apply), &[]);
}

#[test]
fn whole_headers_stacks_and_structs() {
    let locals = "h_t[3] tmp; pair_t p = { { hdr.i.x, hdr.i.y }, 3 };";
    let apply = "
        hdr.c = hdr.s[1];
        hdr.d = (hdr.i.x > 2) ? hdr.s[0] : hdr.c;
        tmp[0] = hdr.s[0];
        tmp[2] = hdr.d;
        if (hdr.s[0] == hdr.s[1]) { hdr.i.e = hdr.i.e | 1; }
        if (hdr.c != hdr.d) { hdr.i.e = hdr.i.e | 2; }
        if (tmp == hdr.s) { hdr.i.e = hdr.i.e | 4; }
        if (p.x == hdr.s[2]) { hdr.i.e = hdr.i.e | 8; }
        hdr.i.r = p.x.a + p.x.b + p.y;
        // Two invalid headers are equal whatever their fields.
        h_t u1 = hdr.s[1];
        u1.a = hdr.i.y;
        u1.setInvalid();
        h_t u2 = hdr.s[2];
        u2.setInvalid();
        if (u1 == u2) { hdr.i.e = hdr.i.e | 16; }
        if (u1 == hdr.s[2]) { hdr.i.e = hdr.i.e | 32; }
        tuple<bit<8>, bit<8>> t = { hdr.i.y, hdr.i.x };
        p = { { 7, hdr.i.r }, hdr.i.x };
        hdr.s[2] = p.x;";
    agree("whole.p4", &program(locals, apply), &[]);
}

#[test]
fn union_validity_and_wide_values() {
    let locals = "
        bit<128> w = 128w0x1234;
        action hit(bit<8> v) { hdr.i.r = v; }
        action two(bit<8> v) { hdr.i.e = v; }
        action widen(inout bit<128> x, in bit<128> y) { if (x == y) { x = 128w0x5; } }
        table t { key = { hdr.u.isValid(): exact @name(\"valid\"); w: exact @name(\"w\"); }
                  actions = { hit; } }
        table k { key = { 128w7: exact @name(\"k\"); } actions = { two; } }";
    let apply = "
        bit<128> w2 = 128w0x1234;
        if (hdr.i.y > 2) { widen(w, w2); }
        if (w == 128w0x1234) { hdr.i.e = 9; }
        t.apply();
        k.apply();";
    let entry = |table: &str, keys: Vec<(&str, u128)>, action: &str, v: u128| EntrySpec {
        table: table.into(),
        keys: keys
            .into_iter()
            .map(|(n, x)| (n.to_string(), KeyMatch::Exact(BigValue::from_u128(x))))
            .collect(),
        action: action.into(),
        args: vec![("v".into(), BigValue::from_u128(v))],
        priority: None,
    };
    let entries = [
        entry("t", vec![("valid", 1), ("w", 0x1234)], "hit", 11),
        entry("t", vec![("valid", 0), ("w", 0x1234)], "hit", 22),
        entry("t", vec![("valid", 1), ("w", 5)], "hit", 33),
        entry("k", vec![("k", 7)], "two", 44),
    ];
    agree("wide.p4", &program(locals, apply), &entries);
}

/// Slices of a value over 64 bits: within its first (narrower) slot,
/// within its second, and across the boundary between them.
#[test]
fn slices_of_wide_values() {
    let locals = "bit<100> w = 100w0xa_0123_4567_89ab_cdef_fedc_ba98;";
    let apply = "
        if (hdr.i.x > 100) { w = 100w0x5_f0f0_0f0f_1234_5678_9abc_def0; }
        hdr.i.r = w[99:92];
        hdr.i.e = w[67:60];
        hdr.s[0].a = w[7:0];
        hdr.s[0].b = (bit<8>)w[70:64];
        if (w[63:0] == 64w0x1234_5678_9abc_def0) { hdr.s[1].a = 1; }";
    agree("slices.p4", &program(locals, apply), &[]);
}

/// Headers with a varbit, compared and copied whole (not emitted: the
/// deparser here emits only `i`).
#[test]
fn headers_with_varbits_compare_and_copy() {
    let text = r#"#include <core.p4>
#include <v1model.p4>
header i_t { bit<8> x; bit<8> y; bit<8> r; bit<8> e; }
header v_t { bit<8> n; varbit<16> v; }
struct H { i_t i; v_t p; v_t q; v_t[2] s; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.i);
        pkt.extract(hdr.p, ((bit<32>)hdr.i.x & 3) * 8);
        pkt.extract(hdr.q, ((bit<32>)hdr.i.y & 3) * 8);
        transition accept;
    }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        v_t tmp = hdr.q;
        hdr.s[1] = hdr.p;
        if (hdr.p.v == hdr.q.v) { hdr.i.e = hdr.i.e | 1; }
        if (hdr.p == hdr.q) { hdr.i.e = hdr.i.e | 2; }
        if (tmp.v != hdr.s[1].v) { hdr.i.e = hdr.i.e | 4; }
        if (tmp == hdr.s[1]) { hdr.i.e = hdr.i.e | 8; }
        hdr.s[0] = tmp;
        if (hdr.s[0] == hdr.q) { hdr.i.e = hdr.i.e | 16; }
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.i); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;
    agree("varbit.p4", text, &[]);
}

#[test]
fn what_is_not_held_is_refused_at_its_span() {
    let cases = [
        ("h_t[3] tmp;", "tmp[hdr.i.x].a = 1;", "a local stack's element at a run-time index", 23),
        // A union as a whole value: refused at its declaration.
        ("u_t v;", "v = hdr.u;", "a value of type u_t", 22),
        ("bit<128> w = 0;", "hdr.i.r = (bit<8>)(w + 1);", "over 64 bits", 23),
    ];
    for (i, (locals, apply, what, line)) in cases.iter().enumerate() {
        let loaded = load_text(&format!("refuse{i}.p4"), &program(locals, apply));
        let d = match Compiled::new(&loaded) {
            Ok(_) => panic!("case {i} compiled: {apply}"),
            Err(d) => d,
        };
        let shown = loaded.sources.render(&d);
        assert!(d.message.contains(what), "{what}: {shown}");
        assert!(shown.contains(&format!("refuse{i}.p4:{line}:")), "at line {line}: {shown}");
    }
}
