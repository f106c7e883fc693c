//! Control flow in the compiled engine against the reference interpreter:
//! random ingress blocks mixing table applies inside expressions
//! (`?:`, `&&`, `||`, function arguments), `switch` on values with
//! fall-through labels, `exit` from actions and from the block, and `/`
//! and `%` by constants, run on random frames and table entries in every
//! cache mode. Also the forms refused at their span.

mod common;
use common::Rng;

use sluice_core::walk::CacheMode;
use sluice_p4::ast::BigValue;
use sluice_p4::interp::Interp;
use sluice_p4::lower::engine::Compiled;
use sluice_p4::parse;
use sluice_p4::target::{EntrySpec, KeyMatch, Target};

/// A random condition over the header.
fn cond(r: &mut Rng) -> String {
    let f = r.pick(&["hdr.h.a", "hdr.h.b", "hdr.h.c"]);
    let op = r.pick(&["==", "!=", "<", ">="]);
    format!("({f} {op} 8w{})", r.below(256))
}

/// A random 8-bit value.
fn val(r: &mut Rng) -> String {
    match r.below(3) {
        0 => format!("8w{}", r.below(256)),
        1 => r.pick(&["hdr.h.a", "hdr.h.b", "hdr.h.c"]).to_string(),
        _ => format!("(hdr.h.c + 8w{})", r.below(256)),
    }
}

/// `hit` or `miss` of applying `t`, maybe negated.
fn hit(r: &mut Rng, t: &str) -> String {
    let m = r.pick(&["hit", "miss"]);
    if r.below(3) == 0 {
        format!("!{t}.apply().{m}")
    } else {
        format!("{t}.apply().{m}")
    }
}

/// A random statement; `tables` are the tables not applied yet (each
/// is applied at most once, as P4 allows).
fn stmt(r: &mut Rng, tables: &mut Vec<&'static str>, depth: u32) -> String {
    let k = r.below(if tables.is_empty() { 4 } else { 9 });
    let out = r.pick(&["hdr.h.o", "hdr.h.c", "hdr.h.b"]);
    match k {
        0 => format!("{out} = {};", val(r)),
        1 => {
            let d = r.pick(&["1", "2", "3", "7", "16", "255", "8w5", "8w128"]);
            let op = r.pick(&["/", "%"]);
            format!("{out} = {} {op} {d};", val(r))
        }
        2 if depth > 0 => {
            // switch on a value, labels maybe falling through
            let on = r.pick(&["hdr.h.a", "hdr.h.b", "hdr.h.c", "(hdr.h.a & 8w3)"]);
            let mut s = format!("switch ({on}) {{");
            let (n, first) = (1 + r.below(3), r.below(3));
            for l in first..first + n {
                s += &format!(" {l}: ");
                if r.below(3) != 0 {
                    s += &format!("{{ {} }}", stmt(r, tables, depth - 1));
                }
            }
            match r.below(3) {
                0 => {}
                _ => s += &format!(" default: {{ {} }}", stmt(r, tables, depth - 1)),
            }
            // A trailing label without a body has nothing to fall to.
            if !s.ends_with('}') {
                s += "{ }";
            }
            s + " }"
        }
        3 if depth > 0 => format!("if ({}) {{ exit; }}", cond(r)),
        _ if tables.is_empty() => format!("{out} = 8w{};", r.below(256)),
        _ => {
            let t = tables.remove(r.below(tables.len() as u64) as usize);
            match k {
                4 => format!("{out} = ({} ? {} : {});", hit(r, t), val(r), val(r)),
                5 => format!(
                    "if ({} && {}) {{ {out} = {}; }} else {{ {out} = {}; }}",
                    hit(r, t),
                    cond(r),
                    val(r),
                    val(r)
                ),
                6 => format!("if ({} || {}) {{ {out} = {}; }}", cond(r), hit(r, t), val(r)),
                7 => format!("{out} = twice({} ? 8w1 : 8w2);", hit(r, t)),
                _ => format!(
                    "{out} = {} ? ({} ? {} : 8w9) : {};",
                    cond(r),
                    hit(r, t),
                    val(r),
                    val(r)
                ),
            }
        }
    }
}

fn program(r: &mut Rng) -> String {
    let mut tables = vec!["t1", "t2"];
    let n = 2 + r.below(4);
    let body: Vec<String> = (0..n).map(|_| stmt(r, &mut tables, 2)).collect();
    format!(
        r#"#include <core.p4>
#include <v1model.p4>
header h_t {{ bit<8> a; bit<8> b; bit<8> c; bit<8> o; }}
struct H {{ h_t h; }}
struct M {{ }}
bit<8> twice(in bit<8> x) {{ return x + x; }}
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.h); transition accept; }}
}}
control V(inout H hdr, inout M m) {{ apply {{ }} }}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {{
    action set_b(bit<8> x) {{ hdr.h.b = x; }}
    action set_c(bit<8> x) {{ hdr.h.c = hdr.h.c ^ x; }}
    action leave() {{ hdr.h.o = 8w77; exit; }}
    action nop() {{ }}
    table t1 {{ key = {{ hdr.h.a: exact; }} actions = {{ set_b; set_c; leave; nop; }} default_action = nop(); }}
    table t2 {{ key = {{ hdr.h.b: ternary; }} actions = {{ set_b; set_c; leave; nop; }} default_action = set_c(8w1); }}
    apply {{
        sm.egress_spec = 2;
        {}
    }}
}}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {{ apply {{ }} }}
control C(inout H hdr, inout M m) {{ apply {{ }} }}
control D(packet_out pkt, in H hdr) {{ apply {{ pkt.emit(hdr.h); }} }}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#,
        body.join("\n        ")
    )
}

fn entries(r: &mut Rng) -> Vec<EntrySpec> {
    let mut out = Vec::new();
    let action = |r: &mut Rng| ["set_b", "set_c", "leave", "nop"][r.below(4) as usize];
    let args = |a: &str, r: &mut Rng| match a {
        "set_b" | "set_c" => {
            vec![("x".to_string(), BigValue::from_u128(u128::from(r.below(256) as u8)))]
        }
        _ => Vec::new(),
    };
    for key in [0u128, 1, 2, 3] {
        let a = action(r);
        out.push(EntrySpec {
            table: "t1".into(),
            keys: vec![("hdr.h.a".into(), KeyMatch::Exact(BigValue::from_u128(key)))],
            action: a.into(),
            args: args(a, r),
            priority: None,
        });
    }
    for p in 0..3u64 {
        let a = action(r);
        out.push(EntrySpec {
            table: "t2".into(),
            keys: vec![(
                "hdr.h.b".into(),
                KeyMatch::Ternary {
                    value: BigValue::from_u128(u128::from(r.below(4) as u8)),
                    mask: BigValue::from_u128(u128::from([3u8, 1, 0xff][p as usize])),
                },
            )],
            action: a.into(),
            args: args(a, r),
            priority: Some(p + 1),
        });
    }
    out
}

fn load_text(dir: &std::path::Path, name: &str, text: &str) -> Option<parse::Loaded> {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write program");
    parse::load_file(&path).ok()
}

#[test]
fn random_control_flow_agrees_with_the_interpreter() {
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    let dir = std::env::temp_dir().join(format!("sluice-lower-control-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let modes = [CacheMode::Off, CacheMode::Megaflow, CacheMode::On];
    let (mut compared, mut refused) = (0, 0);
    for i in 0..120 {
        let text = program(&mut r);
        let loaded = load_text(&dir, &format!("c{i}.p4"), &text)
            .unwrap_or_else(|| panic!("program {i} does not load:\n{text}"));
        let mut interp = Interp::new(&loaded).expect("interpreter");
        let mut eng = match Compiled::new(&loaded) {
            Ok(c) => c,
            Err(d) => {
                println!("refused: {}", loaded.sources.render(&d).lines().next().unwrap_or(""));
                refused += 1;
                continue;
            }
        };
        eng.set_cache_mode(modes[i % 3]);
        eng.set_indexed(i % 2 == 0);
        for e in entries(&mut r) {
            interp.add_entry(&e).expect("interp entry");
            eng.add_entry(&e).expect("engine entry");
        }
        for _ in 0..32 {
            // Small field values, so entries hit and labels match often.
            let frame: Vec<u8> = (0..4 + r.below(4))
                .map(|_| if r.below(3) == 0 { r.next() as u8 } else { r.below(4) as u8 })
                .collect();
            let want = interp.packet(1, &frame).expect("interp packet");
            let got = eng.packet(1, &frame).expect("engine packet");
            assert_eq!(got, want, "program {i} on {frame:02x?}:\n{text}");
        }
        compared += 1;
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("random control flow: {compared} programs compared, {refused} refused");
    // Every generated form is one the engine compiles.
    assert_eq!(refused, 0, "the generator only writes supported forms");
}

#[test]
fn unsupported_forms_are_refused_at_their_span() {
    let dir = std::env::temp_dir().join(format!("sluice-lower-control-r-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cases = [
        ("hdr.h.o = hdr.h.a + (t1.apply().hit ? 8w1 : 8w0);", "an operand read before"),
        ("hdr.h.o = twice(hdr.h.a) + twice(t1.apply().hit ? 8w1 : 8w0);", "an operand read"),
        ("hdr.h.o = hdr.h.a % 8w0;", "operator Mod by anything but a constant"),
        ("hdr.h.o = hdr.h.a / hdr.h.b;", "operator Div by anything but a constant"),
        ("hdr.h.o = (bit<8>)((int<8>)hdr.h.a / 2);", "operator Div on a signed value"),
        ("hdr.h.o += t1.apply().hit ? 8w1 : 8w0;", "an `op=` assignment"),
    ];
    let mut r = Rng(1);
    let base = program(&mut r);
    for (i, (stmt, what)) in cases.iter().enumerate() {
        let marker = "sm.egress_spec = 2;";
        // The statement on the line of the marker, so its span is known.
        let text = base.replacen(marker, &format!("{marker} {stmt}"), 1);
        let line = text.lines().position(|l| l.contains(marker)).expect("marker") + 1;
        let name = format!("r{i}.p4");
        let loaded = load_text(&dir, &name, &text).expect("loads");
        let d = match Compiled::new(&loaded) {
            Ok(_) => panic!("{stmt}: compiled"),
            Err(d) => d,
        };
        let shown = loaded.sources.render(&d);
        assert!(d.message.contains(what), "{stmt}: {shown}");
        assert!(shown.contains("not supported yet"), "{shown}");
        assert!(shown.contains(&format!("{name}:{line}:")), "{stmt} at line {line}: {shown}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Controls with constructor parameters: constants (used in `apply`, in
/// an action and as a table's default action data) and controls passed
/// to constructors and applied inside, one instance shared by two
/// others, and a control type applied directly.
const CTOR_PROGRAM: &str = r#"#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<16> x; }
struct H { h_t h; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control step_t(inout bit<16> x, in bit<8> k);
control Add(inout bit<16> x, in bit<8> k)(bit<16> by) {
    action bump(bit<16> d) { x = x + d + by; }
    table t { key = { k: exact; } actions = { bump; NoAction; } default_action = bump(by); }
    apply { if (x > by) { t.apply(); } else { x = x ^ by; } }
}
control Shift(inout bit<16> x, in bit<8> k)(step_t next, bit<8> n) {
    apply { x = x << n; next.apply(x, k); }
}
control Twice(inout bit<16> x, in bit<8> k) {
    Add(16w3) add3;
    Shift(add3, 1) s1;
    Shift(add3, 2) s2;
    apply { s1.apply(x, k); if (k != 0) { s2.apply(x, k); } }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        Twice.apply(hdr.h.x, hdr.h.a);
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

#[test]
fn controls_with_constructor_parameters_agree_with_the_interpreter() {
    let dir = std::env::temp_dir().join(format!("sluice-lower-control-k-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let loaded = load_text(&dir, "ctor.p4", CTOR_PROGRAM).expect("loads");
    let mut r = Rng(0x0dd_ba11_cafe_f00d);
    for (i, mode) in [CacheMode::Off, CacheMode::Megaflow, CacheMode::On].into_iter().enumerate() {
        let mut interp = Interp::new(&loaded).expect("interpreter");
        let mut eng = Compiled::new(&loaded).expect("compiles");
        eng.set_cache_mode(mode);
        eng.set_indexed(i != 1);
        for k in 1..3u128 {
            let e = EntrySpec {
                table: "t".into(),
                keys: vec![("k".into(), KeyMatch::Exact(BigValue::from_u128(k)))],
                action: "bump".into(),
                args: vec![("d".into(), BigValue::from_u128(k * 100))],
                priority: None,
            };
            interp.add_entry(&e).expect("interp entry");
            eng.add_entry(&e).expect("engine entry");
        }
        for _ in 0..64 {
            let frame: Vec<u8> = (0..4 + r.below(3))
                .map(|_| if r.below(2) == 0 { r.next() as u8 } else { r.below(3) as u8 })
                .collect();
            let want = interp.packet(1, &frame).expect("interp packet");
            let got = eng.packet(1, &frame).expect("engine packet");
            assert_eq!(got, want, "{mode:?} on {frame:02x?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
