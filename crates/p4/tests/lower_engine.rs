//! The compiled engine (`sluice_p4::lower::engine`) against the reference
//! interpreter: every program of p4c's STF corpus and of `examples/p4`
//! that the interpreter passes and the engine compiles must pass its STF
//! test on the engine too, in every cache mode, with indexed and with
//! scanned lookups.
//!
//! The corpus lives outside the repository (`../shared/p4c-stf`, or
//! `SLUICE_P4C_STF`); without it the test fails when `CI` is set and
//! otherwise runs the examples alone, saying so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sluice_core::walk::CacheMode;
use sluice_p4::interp::Interp;
use sluice_p4::lower::engine::Compiled;
use sluice_p4::target::Target;
use sluice_p4::{parse, stf};

/// Programs known to compile and pass; fewer is a regression.
const FLOOR: usize = 52;

fn corpus_dir() -> Option<PathBuf> {
    let mut cands = Vec::new();
    if let Ok(d) = std::env::var("SLUICE_P4C_STF") {
        cands.push(PathBuf::from(d));
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    cands.push(manifest.join("../../../shared/p4c-stf"));
    cands.push(PathBuf::from("/work/shared/p4c-stf"));
    cands.into_iter().map(|d| d.join("samples")).find(|d| d.is_dir())
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/p4")
}

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
