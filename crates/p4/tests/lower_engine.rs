//! The compiled engine (`sluice_p4::lower::engine`) against the reference
//! interpreter: every program of p4c's STF corpus and of `examples/p4`
//! that the interpreter passes and the engine compiles must pass its STF
//! test on the engine too, in every cache mode, with indexed and with
//! scanned lookups.
//!
//! The corpus lives outside the repository (`../shared/p4c-stf`, or
//! `SLUICE_P4C_STF`); without it the test fails when `CI` is set and
//! otherwise runs the examples alone, saying so.

mod common;
use common::{corpus_dir, examples};
use std::collections::BTreeMap;
use std::path::PathBuf;

use sluice_core::walk::CacheMode;
use sluice_p4::interp::Interp;
use sluice_p4::lower::engine::Compiled;
use sluice_p4::target::Target;
use sluice_p4::{parse, stf};

/// Programs known to compile and pass; fewer is a regression.
const FLOOR: usize = 109;

/// `(name, program, script)` of every program with an STF test.
fn programs() -> Vec<(String, PathBuf, PathBuf)> {
    let mut dirs = vec![examples()];
    match corpus_dir() {
        Some(d) => dirs.push(d),
        None if std::env::var_os("CI").is_some() => panic!("p4c STF corpus not found under CI"),
        None => eprintln!("p4c STF corpus not found; running examples/p4 only"),
    }
    let mut out = Vec::new();
    for dir in dirs {
        let mut stfs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("read dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "stf"))
            .collect();
        stfs.sort();
        for s in stfs {
            let stem = s.file_stem().and_then(|x| x.to_str()).unwrap_or("").to_string();
            let p4 = dir.join(format!("{stem}.p4"));
            if p4.is_file() {
                out.push((stem, p4, s));
            }
        }
    }
    out
}

const MODES: [(CacheMode, bool); 6] = [
    (CacheMode::Off, true),
    (CacheMode::Off, false),
    (CacheMode::Megaflow, true),
    (CacheMode::Megaflow, false),
    (CacheMode::On, true),
    (CacheMode::On, false),
];

/// The refusal's kind: its message without the location.
fn reason(msg: &str) -> String {
    let m = msg.lines().next().unwrap_or("");
    let m = m.split("lowering: ").nth(1).unwrap_or(m);
    m.to_string()
}

#[test]
fn compiled_programs_pass_as_the_interpreter_does() {
    let (mut ok, mut reasons) = (Vec::new(), BTreeMap::<String, usize>::new());
    let mut failures = Vec::new();
    for (name, p4, stf_path) in programs() {
        let Ok(loaded) = parse::load_file(&p4) else { continue };
        let script = std::fs::read_to_string(&stf_path).expect("read stf");
        let Ok(mut interp) = Interp::new(&loaded) else { continue };
        if !stf::run(&mut interp, &script).passed() {
            continue;
        }
        let mut passed = true;
        for (mode, indexed) in MODES {
            let mut c = match Compiled::new(&loaded) {
                Ok(c) => c,
                Err(d) => {
                    let r = reason(&d.message);
                    println!(
                        "REFUSED {name}: {}",
                        loaded.sources.render(&d).lines().next().unwrap_or("")
                    );
                    *reasons.entry(r).or_default() += 1;
                    passed = false;
                    break;
                }
            };
            c.set_cache_mode(mode);
            c.set_indexed(indexed);
            let report = stf::run(&mut c, &script);
            if !report.passed() {
                println!("FAIL {name} ({mode:?}, indexed {indexed}): {}", report.summary());
                failures.push(format!("{name} {mode:?} {indexed}"));
                passed = false;
                break;
            }
        }
        if passed {
            println!("PASS {name}");
            ok.push(name);
        }
    }
    let refused: usize = reasons.values().sum();
    let mut by_count: Vec<(&String, &usize)> = reasons.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1));
    let top: Vec<String> = by_count.iter().take(12).map(|(r, n)| format!("{n}× {r}")).collect();
    println!(
        "engine: {} programs compiled and passing, {refused} refused ({})",
        ok.len(),
        top.join("; ")
    );
    assert!(failures.is_empty(), "compiled programs that fail: {failures:?}");
    assert!(ok.iter().any(|n| n == "router"), "examples/p4/router.p4 must compile and pass");
    assert!(ok.len() >= FLOOR, "only {} programs compile and pass (floor {FLOOR})", ok.len());
}

#[test]
fn the_megaflow_cache_serves_the_router() {
    let loaded = parse::load_file(&examples().join("router.p4")).expect("load router");
    let mut c = Compiled::new(&loaded).expect("router compiles");
    c.set_cache_mode(CacheMode::Megaflow);
    let script = std::fs::read_to_string(examples().join("router.stf")).expect("read stf");
    let report = stf::run(&mut c, &script);
    assert!(report.passed(), "{}", report.summary());
    // The same packets again: served by the entries the first run installed.
    let before = c.cache_stats();
    for line in script.lines() {
        let mut w = line.split_whitespace();
        if w.next() != Some("packet") {
            continue;
        }
        let Some(port) = w.next().and_then(|p| p.parse::<u32>().ok()) else { continue };
        let hex: String = w.collect::<String>();
        let bytes: Vec<u8> = (0..hex.len() / 2)
            .filter_map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
            .collect();
        c.packet(port, &bytes).expect("packet");
    }
    let after = c.cache_stats();
    assert!(after.installs > 0, "{after:?}");
    assert!(after.megaflow_hits > before.megaflow_hits, "{before:?} -> {after:?}");
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Ty {
    B8,
    B16,
    S8,
    Bool,
}

/// A random well-typed P4 expression of type `t`.
fn gen_expr(r: &mut Rng, t: Ty, depth: u32) -> String {
    let leaf = depth == 0 || r.below(4) == 0;
    if t == Ty::Bool {
        if leaf {
            return ["hdr.h.isValid()", "true", "false", "(hdr.h.a == hdr.h.b)"]
                [r.below(4) as usize]
                .to_string();
        }
        return match r.below(5) {
            0 => format!("!({})", gen_expr(r, Ty::Bool, depth - 1)),
            1 => format!(
                "({} && {})",
                gen_expr(r, Ty::Bool, depth - 1),
                gen_expr(r, Ty::Bool, depth - 1)
            ),
            2 => format!(
                "({} || {})",
                gen_expr(r, Ty::Bool, depth - 1),
                gen_expr(r, Ty::Bool, depth - 1)
            ),
            _ => {
                let ot = [Ty::B8, Ty::B16, Ty::S8][r.below(3) as usize];
                let op = ["==", "!=", "<", "<=", ">", ">="][r.below(6) as usize];
                format!("({} {op} {})", gen_expr(r, ot, depth - 1), gen_expr(r, ot, depth - 1))
            }
        };
    }
    if leaf {
        let n = r.below(300);
        return match (t, r.below(4)) {
            (Ty::B8, 0) => "hdr.h.a".into(),
            (Ty::B8, 1) => "hdr.h.b".into(),
            (Ty::B8, 2) => format!("8w{}", n % 256),
            (Ty::B16, 0) => "hdr.h.c".into(),
            (Ty::B16, 1) => "(hdr.h.a ++ hdr.h.b)".into(),
            (Ty::B16, 2) => format!("16w{n}"),
            (Ty::S8, 0 | 1) => "hdr.h.s".into(),
            (Ty::S8, 2) => format!("(int<8>)8w{}", n % 256),
            _ => format!("{}", n % 256),
        };
    }
    let d = depth - 1;
    let w = match t {
        Ty::B16 => "16",
        _ => "8",
    };
    match r.below(12) {
        0..=5 => {
            let op = ["+", "-", "*", "&", "|", "^", "|+|", "|-|"][r.below(8) as usize];
            format!("({} {op} {})", gen_expr(r, t, d), gen_expr(r, t, d))
        }
        6 => format!("(~{})", gen_expr(r, t, d)),
        7 => {
            let op = ["<<", ">>"][r.below(2) as usize];
            if r.below(2) == 0 {
                format!("({} {op} {})", gen_expr(r, t, d), r.below(20))
            } else {
                format!("({} {op} hdr.h.b)", gen_expr(r, t, d))
            }
        }
        8 => format!(
            "({} ? {} : {})",
            gen_expr(r, Ty::Bool, d),
            gen_expr(r, t, d),
            gen_expr(r, t, d)
        ),
        9 => match t {
            Ty::B8 => {
                let lo = r.below(9);
                format!("({})[{}:{lo}]", gen_expr(r, Ty::B16, d), lo + 7)
            }
            _ => format!("(-{})", gen_expr(r, t, d)),
        },
        10 => {
            let from = [Ty::B8, Ty::B16, Ty::S8][r.below(3) as usize];
            let to = match t {
                Ty::S8 => "int<8>".to_string(),
                _ => format!("bit<{w}>"),
            };
            format!("(({to}){})", gen_expr(r, from, d))
        }
        _ => gen_expr(r, t, d),
    }
}

fn gen_program(r: &mut Rng) -> String {
    let e8 = gen_expr(r, Ty::B8, 4);
    let e16 = gen_expr(r, Ty::B16, 4);
    let es = gen_expr(r, Ty::S8, 4);
    let c = gen_expr(r, Ty::Bool, 3);
    let e32 = gen_expr(r, Ty::B16, 3);
    format!(
        r#"#include <core.p4>
#include <v1model.p4>
header h_t {{ bit<8> a; bit<8> b; bit<16> c; int<8> s; bit<8> o1; bit<16> o2; int<8> o3; bit<32> o4; }}
struct H {{ h_t h; }}
struct M {{ }}
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.h); transition accept; }}
}}
control V(inout H hdr, inout M m) {{ apply {{ }} }}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {{
    action set(bit<8> x) {{
        hdr.h.o1 = (bit<8>)({e8});
        hdr.h.o2 = {e16};
        hdr.h.o3 = {es};
        if ({c}) {{ hdr.h.o4 = (bit<32>)({e32}) + (bit<32>)x; }} else {{ hdr.h.o4 = 32w7; }}
    }}
    table t {{ key = {{ hdr.h.a: ternary; }} actions = {{ set; }} default_action = set(8w3); }}
    apply {{ sm.egress_spec = 2; t.apply(); }}
}}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {{ apply {{ }} }}
control C(inout H hdr, inout M m) {{ apply {{ }} }}
control D(packet_out pkt, in H hdr) {{ apply {{ pkt.emit(hdr.h); }} }}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#
    )
}

/// Random expressions compiled into key programs compute what the
/// interpreter computes (int literal typing, signed arithmetic, shifts,
/// saturation, slices, casts, `?:`), on random frames.
#[test]
fn random_expressions_agree_with_the_interpreter() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut compared, mut skipped, mut refused) = (0, 0, 0);
    let dir = std::env::temp_dir().join(format!("sluice-lower-engine-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for i in 0..200 {
        let text = gen_program(&mut r);
        let path = dir.join(format!("p{i}.p4"));
        std::fs::write(&path, &text).expect("write program");
        let Ok(loaded) = parse::load_file(&path) else {
            skipped += 1;
            continue;
        };
        let Ok(mut interp) = Interp::new(&loaded) else {
            skipped += 1;
            continue;
        };
        let mut eng = match Compiled::new(&loaded) {
            Ok(c) => c,
            Err(d) => {
                println!("refused: {}", loaded.sources.render(&d).lines().next().unwrap_or(""));
                refused += 1;
                continue;
            }
        };
        eng.set_cache_mode([CacheMode::Off, CacheMode::Megaflow, CacheMode::On][i % 3]);
        let entry = sluice_p4::target::EntrySpec {
            table: "t".into(),
            keys: vec![(
                "hdr.h.a".into(),
                sluice_p4::target::KeyMatch::Ternary {
                    value: sluice_p4::ast::BigValue::from_u128(0x80),
                    mask: sluice_p4::ast::BigValue::from_u128(0x80),
                },
            )],
            action: "set".into(),
            args: vec![("x".into(), sluice_p4::ast::BigValue::from_u128(200))],
            priority: Some(1),
        };
        interp.add_entry(&entry).expect("interp entry");
        eng.add_entry(&entry).expect("engine entry");
        for _ in 0..24 {
            let len = 5 + r.below(16) as usize;
            let frame: Vec<u8> = (0..len).map(|_| r.next() as u8).collect();
            let want = interp.packet(1, &frame).expect("interp packet");
            let got = eng.packet(1, &frame).expect("engine packet");
            assert_eq!(got, want, "program {i} on {frame:02x?}:\n{text}");
        }
        compared += 1;
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "random expressions: {compared} programs compared, {refused} refused, {skipped} not loaded"
    );
    assert!(compared >= 100, "only {compared} random programs loaded");
}

fn load_text(name: &str, text: &str) -> parse::Loaded {
    let dir = std::env::temp_dir().join(format!("sluice-lower-engine-t-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    parse::load_file(&path).expect("load")
}

/// A v1model program whose ingress applies is `apply`, with `locals`.
fn with_ingress(locals: &str, apply: &str) -> String {
    format!(
        r#"#include <core.p4>
#include <v1model.p4>
header h_t {{ bit<8> a; bit<8> b; }}
struct H {{ h_t h; }}
struct M {{ }}
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.h); transition accept; }}
}}
control V(inout H hdr, inout M m) {{ apply {{ }} }}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {{
    {locals}
    apply {{ {apply} }}
}}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {{ apply {{ }} }}
control C(inout H hdr, inout M m) {{ apply {{ }} }}
control D(packet_out pkt, in H hdr) {{ apply {{ pkt.emit(hdr.h); }} }}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#
    )
}

#[test]
fn refusals_name_the_construct_at_its_span() {
    let cases = [
        ("", "hdr.h.a = hdr.h.a / hdr.h.b;", "operator Div"),
        (
            "register<bit<8>>(4) r;",
            "if (hdr.h.a == 1) { r.write(0, hdr.h.a); }",
            "an extern call under a condition",
        ),
        ("", "hash(hdr.h.a, HashAlgorithm.random, 8w0, { hdr.h.b }, 16w4);", "this hash algorithm"),
        ("register<bool>(4) r;", "r.write(0, true);", "a register of cells other than"),
    ];
    for (i, (locals, apply, what)) in cases.iter().enumerate() {
        let loaded = load_text(&format!("refuse{i}.p4"), &with_ingress(locals, apply));
        let d = Compiled::new(&loaded).expect_err("refused");
        let shown = loaded.sources.render(&d);
        assert!(d.message.contains(what), "{what}: {shown}");
        assert!(shown.contains("not supported yet"), "{shown}");
        assert!(shown.contains(&format!("refuse{i}.p4:12:")), "at the apply line: {shown}");
    }
}

#[test]
fn the_router_compiles_to_an_inspectable_pipeline() {
    let loaded = parse::load_file(&examples().join("router.p4")).expect("load router");
    let c = Compiled::new(&loaded).expect("router compiles");
    let d = c.dump();
    assert!(d.contains("RouterIngress.routes, 0 entries"), "{d}");
    assert!(d.contains("RouterIngress.routes (default action), 1 entries"), "{d}");
    assert!(d.contains("Branch"), "{d}");
}

#[test]
fn recursion_is_refused_not_expanded() {
    let text = with_ingress(
        "",
        "hdr.h.a = 1;",
    )
    .replace(
        "control V(",
        "bit<8> f(in bit<8> x) { if (x == 0) { return 0; } return f(x - 1) + f(x - 1); }\ncontrol V(",
    )
    .replace("hdr.h.a = 1;", "hdr.h.a = f(hdr.h.b);");
    let loaded = load_text("recursive.p4", &text);
    if let Err(d) = Compiled::new(&loaded) {
        assert!(d.message.contains("not supported yet"), "{}", loaded.sources.render(&d));
    }
}
