//! Variables local to parser states in the compiled engine against the
//! reference interpreter (declared with and without a value, assigned
//! again, read by `extract`'s size, `verify`, `select` and assignments,
//! across extracts of other headers), on random frames in every cache
//! mode; and the reads the substitution cannot make exact, refused at
//! the read.

mod common;
use common::{compiled_agrees, Rng};

use sluice_p4::interp::Interp;
use sluice_p4::lower::engine::Compiled;
use sluice_p4::parse;

fn program(states: &str) -> String {
    format!(
        r#"#include <core.p4>
#include <v1model.p4>
header a_t {{ bit<8> n; bit<8> m; }}
header b_t {{ bit<8> x; }}
header v_t {{ varbit<64> d; }}
struct H {{ a_t a; v_t v; b_t b; b_t c; }}
struct M {{ }}
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {{
{states}
}}
control V(inout H hdr, inout M m) {{ apply {{ }} }}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {{
    apply {{ sm.egress_spec = 2; hdr.a.n = sm.parser_error == error.NoError ? 8w0 : (sm.parser_error == error.NoMatch ? 8w1 : 8w2); }}
}}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {{ apply {{ }} }}
control C(inout H hdr, inout M m) {{ apply {{ }} }}
control D(packet_out pkt, in H hdr) {{ apply {{ pkt.emit(hdr.a); pkt.emit(hdr.b); pkt.emit(hdr.c); }} }}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#
    )
}

const STATES: &str = r#"
    state start {
        pkt.extract(hdr.a);
        bit<8> k = hdr.a.n & 8w3;
        bit<32> size = (bit<32>)k * 8;
        bit<1> big = hdr.a.m[7:7];
        k = k + 1;
        pkt.extract(hdr.v, size);
        verify(big == 0 || hdr.a.n != 0, error.NoMatch);
        transition select(k, big) {
            (1, 0): one;
            (2, 1): two;
            default: three;
        }
    }
    state one {
        bit<8> t;
        hdr.a.m = t;
        pkt.extract(hdr.b);
        transition accept;
    }
    state two {
        pkt.extract(hdr.b);
        bit<8> y = hdr.b.x ^ 8w0xff;
        { bit<8> y2 = y + 1; hdr.a.m = y2; }
        transition accept;
    }
    state three {
        bit<8> z = hdr.a.n;
        pkt.extract(hdr.c);
        hdr.a.m = z + hdr.c.x;
        transition select(z) { 0 &&& 1: accept; default: one; }
    }
"#;

fn load(dir: &std::path::Path, name: &str, text: &str) -> parse::Loaded {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write program");
    parse::load_file(&path).expect("load")
}

#[test]
fn state_locals_agree_with_the_interpreter() {
    let dir = std::env::temp_dir().join(format!("sluice-lower-plocals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let loaded = load(&dir, "locals.p4", &program(STATES));
    let mut interp = Interp::new(&loaded).expect("interpreter");
    let mut r = Rng(0x5eed_1234_abcd_0001);
    let mut frames = Vec::new();
    for _ in 0..300 {
        let len = (r.next() % 14) as usize;
        frames.push((0..len).map(|_| r.next() as u8).collect::<Vec<u8>>());
    }
    compiled_agrees(&loaded, &mut interp, &frames, |_, _, _| {});
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_local_read_after_its_inputs_change_is_refused() {
    let dir = std::env::temp_dir().join(format!("sluice-lower-plocals-r-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cases = [
        // The header it was read from is extracted again.
        "state start { pkt.extract(hdr.b); bit<8> z = hdr.b.x; pkt.extract(hdr.b); \
         hdr.a.m = z; transition accept; }",
        // A lookahead, then the cursor moves.
        "state start { bit<8> z = pkt.lookahead<bit<8>>(); pkt.advance(8); \
         hdr.a.m = z; transition accept; }",
        // The field it was read from is assigned.
        "state start { pkt.extract(hdr.a); bit<8> z = hdr.a.n; hdr.a.n = 1; \
         transition select(z) { 0: accept; default: reject; } }",
    ];
    for (i, states) in cases.iter().enumerate() {
        let loaded = load(&dir, &format!("r{i}.p4"), &program(states));
        let d = match Compiled::new(&loaded) {
            Ok(_) => panic!("{states}: compiled"),
            Err(d) => d,
        };
        let shown = loaded.sources.render(&d);
        assert!(d.message.contains("a parser variable read after"), "{states}: {shown}");
        // At the read: the last use of `z`.
        let line = shown.lines().find(|l| l.contains("z")).unwrap_or("");
        assert!(shown.contains("^"), "{shown}");
        assert!(!line.is_empty(), "{shown}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
