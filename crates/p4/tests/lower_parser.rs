//! The compiled parse program against the reference interpreter's parser.
//!
//! For every program of p4c's STF corpus (`../shared/p4c-stf/samples` in
//! CI, `/work/shared/p4c-stf/samples` on a development machine, or
//! `$SLUICE_P4C_STF/samples`) and every `examples/p4/*.p4`, the parser is
//! lowered ([`ParseProg::compile`]); programs the lowering refuses are
//! counted with their reasons. Each packet of the program's STF script,
//! every prefix of it (a sample of them for long packets) and a few
//! variants with bytes changed are parsed by both; every header field,
//! validity bit, stack index, metadata field and `parser_error` must
//! agree, the lowered ones decoded from the key through the layout.
//!
//! Without the corpus the test says so and runs the examples alone,
//! unless `CI` is set: then a missing corpus fails.

mod common;
use common::{corpus_dir, programs_in};
use std::collections::BTreeMap;
use std::path::Path;

use sluice_p4::interp::Interp;
use sluice_p4::lower::layout::Root;
use sluice_p4::lower::parser::ParseProg;
use sluice_p4::value::Value;
use sluice_p4::{parse, stf};
use sluice_packet::key::FlowKey;

/// Programs compiled when this was written (corpus and examples); fewer
/// is a regression.
const MIN_COMPILED_WITH_CORPUS: usize = 111;
/// The examples alone.
const MIN_COMPILED_EXAMPLES: usize = 3;

/// The frames to try for one STF packet: itself, its prefixes, and a few
/// with one byte changed.
fn variants(data: &[u8], seed: &mut u64) -> Vec<Vec<u8>> {
    let mut out = vec![data.to_vec()];
    let n = data.len();
    for len in (0..n).rev() {
        if n <= 80 || len <= 64 || len % 7 == 0 {
            out.push(data[..len].to_vec());
        }
    }
    let mut rnd = || {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*seed >> 33) as usize
    };
    if n > 0 {
        for _ in 0..6 {
            let mut f = data.to_vec();
            let i = rnd() % n;
            let x = (rnd() % 255 + 1) as u8;
            f[i] ^= x;
            out.push(f);
        }
        // Every byte of the first 64 inverted, one at a time.
        for i in 0..n.min(64) {
            let mut f = data.to_vec();
            f[i] ^= 0xff;
            out.push(f);
        }
    }
    out
}

/// Where two values differ, by path.
fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Header(x), Value::Header(y))
        | (Value::Struct(x), Value::Struct(y))
        | (Value::Union(x), Value::Union(y)) => {
            if matches!(a, Value::Header(_)) && x.valid != y.valid {
                out.push(format!("{path}: valid {} vs {}", x.valid, y.valid));
            }
            for (((n, _), fa), fb) in x.ty.fields.iter().zip(&x.fields).zip(&y.fields) {
                diff(&format!("{path}.{n}"), fa, fb, out);
            }
            if x.fields.len() != y.fields.len() {
                out.push(format!("{path}: field count"));
            }
        }
        (Value::Stack(x), Value::Stack(y)) => {
            if x.next_index != y.next_index {
                out.push(format!("{path}.nextIndex: {} vs {}", x.next_index, y.next_index));
            }
            for (i, (ea, eb)) in x.elems.iter().zip(&y.elems).enumerate() {
                diff(&format!("{path}[{i}]"), ea, eb, out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!("{path}: {a:?} vs {b:?}")),
    }
}

/// A refusal's reason without the names in it (for counting).
fn reason(msg: &str) -> String {
    let mut out = String::new();
    let mut in_tick = false;
    for c in msg.chars() {
        match c {
            '`' if !in_tick => {
                in_tick = true;
                out.push_str("`…");
            }
            '`' => {
                in_tick = false;
                out.push('`');
            }
            _ if in_tick => {}
            _ => out.push(c),
        }
    }
    out
}

#[test]
fn parse_programs_agree_with_the_interpreter() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/p4");
    let mut progs = Vec::new();
    let have_corpus = match corpus_dir() {
        Some(d) => {
            progs.extend(programs_in(&d));
            true
        }
        None => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set but the p4c STF corpus is missing"
            );
            println!("p4c STF corpus not found: the examples alone");
            false
        }
    };
    progs.extend(programs_in(&examples));

    let (mut compiled, mut frames, mut interp_failed) = (Vec::new(), 0usize, 0usize);
    let mut refused: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut mismatches = Vec::new();
    let mut seed = 0x5eed_u64;
    for (name, p4, stf_path) in &progs {
        let Ok(loaded) = parse::load_file(p4) else { continue };
        // Programs the reference does not run are not the lowering's to judge.
        let Ok(mut interp) = Interp::new(&loaded) else { continue };
        let prog = match ParseProg::compile(&loaded.program) {
            Ok(p) => p,
            Err(d) => {
                println!(
                    "REFUSED {name}: {}",
                    loaded.sources.render(&d).lines().next().unwrap_or("")
                );
                refused.entry(reason(&d.message)).or_default().push(name.clone());
                continue;
            }
        };
        compiled.push(name.clone());
        let script = std::fs::read_to_string(stf_path).expect("read stf");
        let Ok(cmds) = stf::parse(&script) else { continue };
        let mut key = FlowKey::ZERO;
        for c in cmds {
            let stf::Op::Packet { port, data } = c.op else { continue };
            for f in variants(&data, &mut seed) {
                let Ok(want) = interp.parse_only(port, &f) else {
                    interp_failed += 1;
                    continue;
                };
                frames += 1;
                prog.run(&f, port, &mut key);
                let l = &prog.layout;
                let mut d = Vec::new();
                diff("hdr", &want.headers, &l.decode(&key, Root::Headers), &mut d);
                diff("meta", &want.meta, &l.decode(&key, Root::Meta), &mut d);
                diff("std", &want.standard, &l.decode(&key, Root::Std), &mut d);
                if !d.is_empty() {
                    mismatches.push(format!(
                        "{name} port {port} frame {}: {}",
                        hex(&f),
                        d.join("; ")
                    ));
                }
            }
        }
    }
    let nrefused: usize = refused.values().map(Vec::len).sum();
    let reasons: Vec<String> = refused
        .iter()
        .map(|(r, names)| format!("{} × {r} ({})", names.len(), names.join(", ")))
        .collect();
    println!(
        "parser lowering: {} programs compiled, {nrefused} refused ({})",
        compiled.len(),
        reasons.join("; ")
    );
    println!("{frames} frames compared, {interp_failed} the interpreter failed on");
    for m in mismatches.iter().take(20) {
        println!("MISMATCH {m}");
    }
    assert!(mismatches.is_empty(), "{} frames parse differently", mismatches.len());
    for must in ["router", "l2switch", "calc"] {
        assert!(compiled.iter().any(|c| c == must), "{must}.p4 is not compiled");
    }
    let floor = if have_corpus { MIN_COMPILED_WITH_CORPUS } else { MIN_COMPILED_EXAMPLES };
    assert!(compiled.len() >= floor, "only {} programs compiled (floor {floor})", compiled.len());
    assert!(frames > 0);
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
