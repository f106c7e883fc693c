//! Runs p4c's STF samples (when present) through the reference
//! interpreter and prints each program's outcome.
//!
//! The corpus lives outside the repository (`../shared/p4c-stf` in CI,
//! `/work/shared/p4c-stf` on a development machine, or the directory in
//! `SLUICE_P4C_STF`); without it the test only says so.

mod common;
use common::corpus_dir;
use std::path::PathBuf;

use sluice_p4::interp::Interp;
use sluice_p4::{parse, stf};

/// The number of programs known to pass; fewer is a regression.
const EXPECTED_PASS: usize = 108;

#[test]
fn corpus() {
    let Some(dir) = corpus_dir() else {
        eprintln!("p4c STF corpus not found; skipping");
        return;
    };
    let mut stfs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "stf"))
        .collect();
    stfs.sort();
    let (mut pass, mut failed, mut unsupported) = (0, 0, 0);
    for stf_path in &stfs {
        let stem = stf_path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let p4 = dir.join(format!("{stem}.p4"));
        let name = stem.to_string();
        let loaded = match parse::load_file(&p4) {
            Ok(l) => l,
            Err(e) => {
                let msg = e.render();
                let first = msg.lines().next().unwrap_or("");
                if first.contains("not supported") {
                    unsupported += 1;
                    println!("UNSUPPORTED {name}: parse: {first}");
                } else {
                    failed += 1;
                    println!("FAIL {name}: parse: {first}");
                }
                continue;
            }
        };
        let mut interp = match Interp::new(&loaded) {
            Ok(i) => i,
            Err(d) => {
                let msg = loaded.sources.render(&d);
                let first = msg.lines().next().unwrap_or("").to_string();
                if d.message.contains("not supported") {
                    unsupported += 1;
                    println!("UNSUPPORTED {name}: {first}");
                } else {
                    failed += 1;
                    println!("FAIL {name}: load: {first}");
                }
                continue;
            }
        };
        let script = std::fs::read_to_string(stf_path).expect("read stf");
        let report = stf::run(&mut interp, &script);
        match report.outcome() {
            stf::Outcome::Pass => {
                pass += 1;
                println!("PASS {name}");
            }
            stf::Outcome::Fail => {
                failed += 1;
                println!("FAIL {name}: {}", report.summary());
            }
            stf::Outcome::Unsupported => {
                unsupported += 1;
                println!("UNSUPPORTED {name}: {}", report.summary());
            }
        }
    }
    println!("corpus: {pass} passed, {failed} failed, {unsupported} unsupported of {}", stfs.len());
    assert!(pass >= EXPECTED_PASS, "only {pass} programs pass (expected at least {EXPECTED_PASS})");
}
