//! Sub-parsers inlined into the compiled parse program against the
//! reference interpreter: `inout`/`out` arguments (a headers struct, a
//! header stack, metadata fields, another sub-parser's `out`), the
//! parsers' own variables (zero at every invocation), a sub-parser
//! nested in a sub-parser, `reject`, `verify` and errors inside one
//! (arguments copied out all the same), statements after the `apply` in
//! the caller's state, and the transition bound counted per invocation
//! (a sub-parser that spins, a caller that loops over one), on random
//! frames in every cache mode; and what is not supported refused at its
//! span.

mod common;
use common::{compiled_agrees, Rng};

use sluice_core::walk::CacheMode;
use sluice_p4::interp::Interp;
use sluice_p4::lower::engine::Compiled;
use sluice_p4::parse;

const HEAD: &str = r#"#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> n; bit<8> m; }
header b_t { bit<8> x; bit<8> nx; }
header o_t { bit<8> e; bit<8> r; bit<8> s; }
struct H { a_t a; b_t[3] bs; a_t t; o_t o; }
struct M { bit<8> r; bit<8> s; }
error { BadX }
"#;

const TAIL: &str = r#"
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        hdr.o.setValid();
        hdr.o.e = sm.parser_error == error.NoError ? 8w0 :
                  (sm.parser_error == error.PacketTooShort ? 8w1 :
                  (sm.parser_error == error.StackOutOfBounds ? 8w2 :
                  (sm.parser_error == error.BadX ? 8w3 :
                  (sm.parser_error == error.ParserTimeout ? 8w4 :
                  (sm.parser_error == error.NoMatch ? 8w5 : 8w6)))));
        hdr.o.r = m.r;
        hdr.o.s = m.s;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) {
    apply { pkt.emit(hdr.o); pkt.emit(hdr.a); pkt.emit(hdr.bs); pkt.emit(hdr.t); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

const PARSERS: &str = r#"
parser Inner(packet_in p, inout b_t[3] st, out bit<8> got) {
    bit<8> seen;
    state start {
        seen = seen + st.last.x;
        got = seen + 1;
        transition select(st.last.x) { 9: reject; default: accept; }
    }
}

parser Tick(packet_in pkt, inout bit<8> c) {
    state start { c = c + 1; transition accept; }
}

parser Sub(packet_in pkt, inout H hdr, out bit<8> ret) {
    Inner() inner;
    bit<8> cnt;
    state start {
        pkt.extract(hdr.bs.next);
        cnt = cnt + 1;
        verify(hdr.bs.last.x != 7, error.BadX);
        transition select(hdr.bs.last.nx) {
            1: start;
            2: reject;
            3: spin;
            4: deeper;
            5: done;
            default: accept;
        }
    }
    state spin {
        transition select(hdr.a.n) { 0xee: spin; default: done; }
    }
    state deeper {
        inner.apply(pkt, hdr.bs, ret);
        ret = ret + cnt;
        transition accept;
    }
    state done {
        ret = cnt;
        transition accept;
    }
}

parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    Sub() sub;
    Tick() tick;
    bit<8> v;
    state start {
        pkt.extract(hdr.a);
        transition select(hdr.a.n) {
            0xab: loop;
            0xee: call;
            0x10 &&& 0xf0: call;
            0x03: call;
            default: accept;
        }
    }
    state call {
        v = hdr.a.n;
        sub.apply(pkt, hdr, m.r);
        m.s = v + m.r;
        transition select(m.r) { 0: accept; 1: more; 2: call; default: last; }
    }
    state more { pkt.extract(hdr.t); transition accept; }
    state last {
        tick.apply(pkt, m.s);
        tick.apply(pkt, m.s);
        transition accept;
    }
    state loop {
        tick.apply(pkt, m.s);
        transition select(hdr.a.m) { 0xab: loop; default: accept; }
    }
}
"#;

fn load(dir: &std::path::Path, name: &str, text: &str) -> parse::Loaded {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write program");
    parse::load_file(&path).expect("load")
}

/// Bytes drawn mostly from the values the program selects on.
fn frame(r: &mut Rng) -> Vec<u8> {
    const PICK: [u8; 12] = [0, 1, 2, 3, 4, 5, 7, 9, 0x10, 0x1f, 0xab, 0xee];
    let len = (r.next() % 13) as usize;
    (0..len)
        .map(|_| match r.next() % 16 {
            n @ 0..=11 => PICK[n as usize],
            _ => r.next() as u8,
        })
        .collect()
}

#[test]
fn sub_parsers_agree_with_the_interpreter() {
    let dir = std::env::temp_dir().join(format!("sluice-lower-subp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let loaded = load(&dir, "subp.p4", &format!("{HEAD}{PARSERS}{TAIL}"));
    let mut interp = Interp::new(&loaded).expect("interpreter");
    let mut r = Rng(0x5eed_5b9a_7e55_0001);
    let mut frames: Vec<Vec<u8>> = (0..600).map(|_| frame(&mut r)).collect();
    // The caller looping over `tick` until its bound (`m.s` counts its
    // states), and `sub` spinning until its own.
    frames.push(vec![0xab, 0xab, 1]);
    frames.push(vec![0xee, 0, 1, 3, 0]);
    frames.push(vec![0x10, 0, 7, 4, 9, 1]);
    // How many frames end with each error code (`hdr.o.e`, emitted
    // first), to see that they reach every outcome.
    let mut errors = [0usize; 7];
    compiled_agrees(&loaded, &mut interp, &frames, |mode, _, want| {
        if mode == CacheMode::Off {
            let e = want.first().and_then(|o| o.data.first()).copied().unwrap_or(6);
            errors[usize::from(e.min(6))] += 1;
        }
    });
    // NoError, PacketTooShort, StackOutOfBounds, BadX, ParserTimeout.
    assert!(errors[..5].iter().all(|&n| n > 0), "outcomes {errors:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn what_is_not_supported_is_refused_at_its_span() {
    let dir = std::env::temp_dir().join(format!("sluice-lower-subp-r-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // (sub-parser, caller's state body, message, text at the span)
    let cases = [
        (
            "parser S(packet_in p, inout H h, out bit<8> o) { state start { transition accept; } }",
            "S() s; state start { s.apply(pkt, hdr, hdr.a.m); transition accept; }",
            "sub-parser arguments that overlap",
            "s.apply(pkt, hdr, hdr.a.m)",
        ),
        (
            "parser S(packet_in p, in bit<8> k, inout H h) { state start { transition accept; } }",
            "S() s; state start { s.apply(pkt, m.r, hdr); transition accept; }",
            "a sub-parser parameter other than `inout`/`out`",
            "in bit<8> k",
        ),
        (
            "parser S(packet_in p, inout H h) { state start { transition accept; } }",
            "S() s; state start { bit<8> z = 1; s.apply(pkt, hdr); m.r = z; transition accept; }",
            "a sub-parser applied after a variable declared in the same state",
            "s.apply(pkt, hdr)",
        ),
        (
            "parser S(packet_in p, out bit<16> o) { state start { transition accept; } }",
            "S() s; state start { s.apply(pkt, m.r); transition accept; }",
            "a sub-parser argument of another type",
            "m.r",
        ),
        (
            // Up to a billion states for one frame: a looping sub-parser
            // applied by a looping one, applied in a loop.
            "parser S1(packet_in p, inout H h) { state start { \
             transition select(h.a.n) { 1: start; default: accept; } } }\n\
             parser S(packet_in p, inout H h) { S1() s1; state start { s1.apply(p, h); \
             transition select(h.a.m) { 1: start; default: accept; } } }",
            "S() s; state start { s.apply(pkt, hdr); \
             transition select(hdr.a.m) { 2: start; default: accept; } }",
            "sub-parsers that may loop, applied in a loop this deep",
            "P",
        ),
    ];
    for (i, (sub, body, msg, at)) in cases.iter().enumerate() {
        let text = format!(
            "{HEAD}{sub}\nparser P(packet_in pkt, out H hdr, inout M m, \
             inout standard_metadata_t sm) {{ {body} }}\n{TAIL}"
        );
        let loaded = load(&dir, &format!("r{i}.p4"), &text);
        Interp::new(&loaded).expect("the interpreter runs it");
        let d = match Compiled::new(&loaded) {
            Ok(_) => panic!("{body}: compiled"),
            Err(d) => d,
        };
        assert!(d.message.contains(msg), "{body}: {}", d.message);
        let span = d.span.expect("a span");
        let shown = text.get(span.start as usize..span.end as usize).unwrap_or("");
        assert_eq!(shown, *at, "{body}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
