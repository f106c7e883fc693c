//! Every program of p4c's v1model STF samples parses.
//!
//! The corpus lives outside the tree (`../shared/p4c-stf` in CI,
//! `/work/shared/p4c-stf` on a development machine; `SLUICE_P4C_STF`
//! overrides). Files without `main` are only meant to be included by
//! others (`arith-skeleton.p4`); they are parsed through the programs
//! that include them. Every program with an STF test must declare
//! `main`.

mod common;
use common::corpus_dir;
use std::path::PathBuf;

#[test]
fn every_corpus_program_parses() {
    let Some(dir) = corpus_dir() else {
        eprintln!("skipped: no p4c-stf corpus (looked for /work/shared/p4c-stf/samples and ../shared/p4c-stf/samples; set SLUICE_P4C_STF)");
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read corpus directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "p4"))
        .collect();
    files.sort();
    let mut parsed = 0;
    let mut failures = Vec::new();
    for f in &files {
        let is_test = f.with_extension("stf").exists();
        let text = std::fs::read_to_string(f).expect("read corpus file");
        if !is_test && !text.contains("main") {
            continue; // a fragment only meaningful when included
        }
        match sluice_p4::parse::load_file(f) {
            Ok(loaded) => {
                // A test program (one with an STF file) declares `main`;
                // a fragment may be empty when parsed alone.
                let has_main = loaded.program.decls.iter().any(
                    |d| matches!(d, sluice_p4::ast::Decl::Instance(i) if i.name.name == "main"),
                );
                if is_test {
                    if !has_main {
                        failures.push(format!("{}: no `main` instance", f.display()));
                    }
                    parsed += 1;
                }
            }
            Err(e) => failures.push(e.render()),
        }
    }
    assert!(failures.is_empty(), "{} failed:\n{}", failures.len(), failures.join("\n\n"));
    eprintln!("{parsed} corpus test programs parsed");
    assert!(parsed >= 109, "only {parsed} test programs found in {}", dir.display());
}
