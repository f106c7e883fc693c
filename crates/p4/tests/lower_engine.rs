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
use common::{corpus_dir, examples, load_text, one_header_program};
use std::collections::BTreeMap;
use std::path::PathBuf;

use sluice_core::walk::CacheMode;
use sluice_p4::interp::Interp;
use sluice_p4::lower::engine::Compiled;
use sluice_p4::target::Target;
use sluice_p4::{gen, parse, stf};

/// Programs known to compile and pass; fewer is a regression.
const FLOOR: usize = 111;

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

use gen::MODES;

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
    let (mut in_place, mut emitted) = (0, 0);
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
            let (i, e) = c.deparse_counts();
            in_place += i;
            emitted += e;
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
    // Each in-place frame was checked against the emitted one (a debug
    // build's `Front::forward`).
    println!("engine: {in_place} frames deparsed in place, {emitted} emitted");
    assert!(in_place > 0 && emitted > 0, "{in_place} in place, {emitted} emitted");
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

/// Random programs from `sluice_p4::gen` (headers, a parser with
/// `select`, tables with entries and defaults, `if`/`else`, assignments,
/// validity, drops, egress ports, typed expressions with `int` literals)
/// behave on the compiled engine, in every cache mode, indexed and
/// scanned, as on the interpreter, packet by packet.
#[test]
fn random_programs_agree_with_the_interpreter() {
    let (mut agreed, mut refused) = (0, BTreeMap::<String, usize>::new());
    let (mut rejected, mut mismatches) = (Vec::new(), Vec::new());
    for seed in 0..PROGRAMS {
        let p = gen::program(&mut gen::Source::seeded(0x9e37_79b9_7f4a_7c15 ^ seed), 16);
        match gen::check(&p, &MODES) {
            gen::Check::Agreed => agreed += 1,
            gen::Check::Refused(r) => {
                println!("refused: {r}");
                *refused.entry(reason(&r)).or_default() += 1;
            }
            gen::Check::Rejected(r) => rejected.push(format!("seed {seed}: {r}\n{}", p.text)),
            gen::Check::Mismatch(m) => mismatches.push(format!("seed {seed}: {m}\n{}", p.text)),
        }
    }
    let n_refused: usize = refused.values().sum();
    println!(
        "random programs: {agreed} agreed, {n_refused} refused {refused:?}, {} rejected",
        rejected.len()
    );
    assert!(
        rejected.is_empty(),
        "generator bugs (programs the interpreter rejects):\n{}",
        rejected.join("\n")
    );
    assert!(mismatches.is_empty(), "engine and interpreter disagree:\n{}", mismatches.join("\n"));
    assert!(
        agreed >= PROGRAMS as usize * 3 / 4,
        "only {agreed} of {PROGRAMS} random programs compiled"
    );
}

/// How many random programs the test generates.
const PROGRAMS: u64 = 300;

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
        let loaded = load_text(&format!("refuse{i}.p4"), &one_header_program(locals, apply));
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
    let text = one_header_program(
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

/// A constant `?:` whose chosen arm is an `int` gives it the other arm's
/// type, as the interpreter does (found by the random programs:
/// `(bit<9>)(false ? 2w2 : 42)` is port 2, not 42).
#[test]
fn a_constant_mux_types_its_int_arm() {
    let loaded = load_text(
        "mux.p4",
        &one_header_program(
            "",
            "sm.egress_spec = (bit<9>)((false ? 2w2 : 42)); hdr.h.a = (true ? 9 : 4w1) ++ 4w0;",
        ),
    );
    let mut interp = Interp::new(&loaded).expect("interpreter");
    let mut c = Compiled::new(&loaded).expect("compiles");
    let frame = [1u8, 2, 3];
    let want = interp.packet(1, &frame).expect("interpreter packet");
    assert_eq!(want, vec![sluice_p4::target::Output { port: 2, data: vec![0x90, 2, 3] }]);
    assert_eq!(c.packet(1, &frame).expect("engine packet"), want);
}

/// `int` values whose width only their context gives (a `?:` of two
/// `int`s, a shift of an `int` by a run-time amount, arithmetic over
/// them, a shift of two `int` constants) compile to what the interpreter
/// computes, on random frames.
#[test]
fn ints_typed_by_their_context_agree_with_the_interpreter() {
    let apply = "const int K = 3;
        hdr.h.a = (hdr.h.b > 8w100) ? 5 : 300;
        hdr.h.b = 1 << hdr.h.b[2:0];
        hdr.h.a = hdr.h.a + (hdr.h.b == 0 ? -3 : 7 * 3);
        hdr.h.b = (200 >> hdr.h.a[2:0]) ^ hdr.h.b;
        hdr.h.a = (bit<8>)(hdr.h.a[0:0] == 1 ? 1 : 2) << (K << 1);
        hdr.h.b = hdr.h.b - ((hdr.h.a < 8w9) ? 1 << hdr.h.a[1:0] : -(2 | 8));";
    let loaded = load_text("ints.p4", &one_header_program("", apply));
    let mut interp = Interp::new(&loaded).expect("interpreter");
    let mut c =
        Compiled::new(&loaded).unwrap_or_else(|d| panic!("refused: {}", loaded.sources.render(&d)));
    let mut x: u32 = 0x1234_5678;
    for _ in 0..200 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let frame = x.to_be_bytes();
        let want = interp.packet(1, &frame).expect("interpreter packet");
        assert_eq!(c.packet(1, &frame).expect("engine packet"), want, "{frame:02x?}");
    }
}

/// A received burst runs through the raw-header cache (the frame's first
/// bytes and length as the key of its parse) only as far as the parse
/// stayed within those bytes: frames alike there but told apart by a
/// header the parser extracts past them must each go their own way, in
/// every burst (where a wrongly learned frame would hit), while frames
/// parsed within the window are served from it.
#[test]
fn bursts_use_the_raw_cache_only_within_the_parse() {
    let text = r#"#include <core.p4>
#include <v1model.p4>
header sel_t { bit<8> port; }
struct H { sel_t near; sel_t far; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.near);
        transition select(hdr.near.port) { 0: skip; default: accept; }
    }
    state skip { pkt.advance(792); pkt.extract(hdr.far); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        if (hdr.far.isValid()) { sm.egress_spec = (bit<9>)hdr.far.port; }
        else { sm.egress_spec = (bit<9>)hdr.near.port; }
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.near); pkt.emit(hdr.far); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;
    let loaded = parse::load_str("far.p4", text).expect("load");
    let mut c = Compiled::new(&loaded).expect("compiles");
    c.set_cache_mode(CacheMode::On);
    // Byte 0 zero: the parser skips to byte 100 and reads the port there
    // (past the raw window). Byte 0 non-zero: the port is byte 0.
    let far = |port: u8| {
        let mut f = vec![0u8; 120];
        f[100] = port;
        f
    };
    let near = |port: u8| {
        let mut f = vec![0u8; 120];
        f[0] = port;
        f
    };
    let frames = [far(3), far(4), near(5), far(6), near(5), far(3)];
    let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
    let ports = |c: &mut Compiled| {
        let mut got = Vec::new();
        c.burst_into(1, &refs, &mut |p, d| got.push((p, d.len())), &mut |i, e| {
            panic!("frame {i} refused: {e}")
        });
        got
    };
    // What `advance` skipped is not emitted: a `far` frame leaves with
    // its two headers and the 19 bytes after them.
    let want = vec![(3, 21), (4, 21), (5, 120), (6, 21), (5, 120), (3, 21)];
    // The first burst installs exact entries, the second learns raw ones
    // (a frame whose key the exact cache holds), the third hits them.
    assert_eq!(ports(&mut c), want, "first burst");
    assert_eq!(ports(&mut c), want, "second burst");
    let before = c.cache_stats();
    assert_eq!(ports(&mut c), want, "third burst");
    let after = c.cache_stats();
    // The `near` frames (parsed within the window) hit the raw cache;
    // the `far` ones never do.
    assert_eq!(after.raw_hits - before.raw_hits, 2, "{before:?} -> {after:?}");
    // One at a time the same.
    for (f, w) in frames.iter().zip(&want) {
        let out = c.packet(1, f).expect("packet");
        assert_eq!(out.iter().map(|o| (o.port, o.data.len())).collect::<Vec<_>>(), vec![*w]);
    }
}

/// A cache entry's composed program drops the key programs whose results
/// only fed decisions it has already taken, but keeps a local that a
/// later action reads: the second packet (served by the composed program)
/// leaves as the first did.
#[test]
fn a_composed_program_keeps_locals_read_later() {
    let text = one_header_program(
        "bit<8> tmp;
         table t { key = { hdr.h.a: exact; } actions = { NoAction; } default_action = NoAction(); }",
        "tmp = hdr.h.a + 1; t.apply(); if (tmp != 0) { hdr.h.b = tmp; } sm.egress_spec = 2;",
    );
    let loaded = parse::load_str("local.p4", &text).expect("load");
    let mut interp = Interp::new(&loaded).expect("interp");
    for mode in [CacheMode::On, CacheMode::Megaflow] {
        let mut c = Compiled::new(&loaded).expect("compiles");
        c.set_cache_mode(mode);
        for frame in [[7u8, 0, 9], [7, 0, 9], [8, 0, 9], [8, 0, 9]] {
            let want = interp.packet(1, &frame).expect("interp");
            assert_eq!(want[0].data[..2], [frame[0], frame[0] + 1]);
            assert_eq!(c.packet(1, &frame).expect("packet"), want, "{mode:?} {frame:?}");
        }
        assert!(c.cache_stats().composed > 0, "{mode:?}: {:?}", c.cache_stats());
    }
}

/// The deparser writes into the received frame itself when the headers
/// leave where they came from, and then only the fields some op may
/// write: here a field of the stack element that the entry's action
/// data picks (learned when the entry comes, not when the program was
/// compiled with zero action data). A header made valid by an action
/// moves what follows: that frame is emitted anew. Every frame is as
/// the interpreter's (and, in this debug build, the engine checks each
/// in-place frame against the emitted one).
#[test]
fn the_deparser_rewrites_in_place_only_what_ops_may_write() {
    let text = r#"#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
header x_t { bit<16> v; }
struct H { h_t[2] st; x_t extra; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.st.next); pkt.extract(hdr.st.next); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action put(bit<1> i, bit<8> v) { hdr.st[i].b = v; sm.egress_spec = 2; }
    action grow() { hdr.extra.setValid(); hdr.extra.v = 0xabcd; sm.egress_spec = 3; }
    table t {
        key = { hdr.st[0].a: exact; }
        actions = { put; grow; NoAction; }
        default_action = NoAction();
    }
    apply { sm.egress_spec = 1; t.apply(); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.st); pkt.emit(hdr.extra); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;
    let script = "\
add t hdr.st[0].a:0x01 put(i:1, v:0x77)
add t hdr.st[0].a:0x02 grow()
packet 1 01 00 05 06 99
expect 2 01 00 05 77 99
packet 1 02 00 05 06 99
expect 3 02 00 05 06 abcd 99
packet 1 03 00 05 06 99
expect 1 03 00 05 06 99
packet 1 01 00 05 06 99
expect 2 01 00 05 77 99
";
    let loaded = parse::load_str("inplace.p4", text).expect("load");
    let mut interp = Interp::new(&loaded).expect("interp");
    let report = stf::run(&mut interp, script);
    assert!(report.passed(), "interpreter: {}", report.summary());
    for (mode, indexed) in MODES {
        let mut c = Compiled::new(&loaded).expect("compiles");
        c.set_cache_mode(mode);
        c.set_indexed(indexed);
        let report = stf::run(&mut c, script);
        assert!(report.passed(), "{mode:?} indexed {indexed}: {}", report.summary());
        // `put` twice and `NoAction` in place; `grow` emitted.
        assert_eq!(c.deparse_counts(), (3, 1), "{mode:?} indexed {indexed}");
    }
}
