//! sluice's P4Info against p4c's, over p4c's STF corpus: for every
//! `NAME.p4` with p4c's `NAME.p4.p4info.txtpb` beside it, the front end
//! loads the program, `P4Info::build` describes it, and the text sluice
//! prints, read back, must equal p4c's file read the same way: every
//! table, action, counter, meter, register, digest and controller
//! header by name with its id, alias, annotations, match fields (ids,
//! names, bit widths, match types), action references and scopes,
//! default action, size and flags, every action's parameters (ids,
//! names, bit widths), units and sizes, the order of each list and
//! whether `type_info` is there. Prints `N agree, M differ` with each
//! difference; any difference, and any program the front end loads that
//! the P4Info builder refuses, fails the test.

mod common;

use std::collections::BTreeMap;

use sluice_p4::p4info::text::{self, Node, Val};
use sluice_p4::p4info::P4Info;

/// The repeated top-level messages keyed by their preamble's name.
const LISTS: &[&str] = &[
    "tables",
    "actions",
    "action_profiles",
    "counters",
    "direct_counters",
    "meters",
    "direct_meters",
    "controller_packet_metadata",
    "value_sets",
    "registers",
    "digests",
    "externs",
];

fn name_of(v: &Val) -> String {
    match v {
        Val::Msg(m) => m.msg("preamble").and_then(|p| p.get("name")).unwrap_or_default(),
        _ => String::new(),
    }
}

/// Where two nodes first differ, as a path (`None` if equal).
fn first_diff(a: &Node, b: &Node, path: &str) -> Option<String> {
    let n = a.fields.len().max(b.fields.len());
    for i in 0..n {
        match (a.fields.get(i), b.fields.get(i)) {
            (Some((na, va)), Some((nb, vb))) if na == nb => {
                let p = format!("{path}.{na}");
                match (va, vb) {
                    (Val::Msg(x), Val::Msg(y)) => {
                        if let Some(d) = first_diff(x, y, &p) {
                            return Some(d);
                        }
                    }
                    _ if va != vb => return Some(format!("{p}: sluice {va:?}, p4c {vb:?}")),
                    _ => {}
                }
            }
            (x, y) => {
                return Some(format!(
                    "{path}: field {i} is {:?} in sluice, {:?} in p4c",
                    x.map(|f| &f.0),
                    y.map(|f| &f.0)
                ))
            }
        }
    }
    None
}

/// Every difference between sluice's P4Info and p4c's.
fn compare(ours: &Node, p4c: &Node) -> Vec<String> {
    let mut out = Vec::new();
    for list in LISTS {
        let a: Vec<&Val> = ours.all(list).collect();
        let b: Vec<&Val> = p4c.all(list).collect();
        let an: Vec<String> = a.iter().map(|v| name_of(v)).collect();
        let bn: Vec<String> = b.iter().map(|v| name_of(v)).collect();
        let am: BTreeMap<&String, &Val> = an.iter().zip(a.iter().copied()).collect();
        let bm: BTreeMap<&String, &Val> = bn.iter().zip(b.iter().copied()).collect();
        for n in bm.keys().filter(|n| !am.contains_key(*n)) {
            out.push(format!("{list} {n}: missing in sluice"));
        }
        for n in am.keys().filter(|n| !bm.contains_key(*n)) {
            out.push(format!("{list} {n}: not in p4c's"));
        }
        for (n, va) in &am {
            if let (Some(Val::Msg(x)), Val::Msg(y)) = (bm.get(n), va) {
                if let Some(d) = first_diff(y, x, &format!("{list} {n}")) {
                    out.push(d);
                }
            }
        }
        if out.is_empty() && an != bn {
            out.push(format!("{list}: order {an:?} in sluice, {bn:?} in p4c"));
        }
    }
    if ours.msg("type_info") != p4c.msg("type_info") {
        out.push(format!(
            "type_info: sluice {:?}, p4c {:?}",
            ours.msg("type_info"),
            p4c.msg("type_info")
        ));
    }
    if ours.msg("pkg_info") != p4c.msg("pkg_info") {
        out.push("pkg_info differs".into());
    }
    if out.is_empty() && ours != p4c {
        out.push(first_diff(ours, p4c, "").unwrap_or_else(|| "top-level fields differ".into()));
    }
    out
}

#[test]
fn p4info_agrees_with_p4c_on_the_corpus() {
    let Some(dir) = common::corpus_dir() else {
        assert!(std::env::var_os("CI").is_none(), "p4c's STF corpus is missing under CI");
        eprintln!("SKIP: p4c's STF corpus not found (set SLUICE_P4C_STF)");
        return;
    };
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".p4.p4info.txtpb"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .p4info.txtpb in {}", dir.display());
    let (mut agree, mut differ, mut unloaded) = (0, 0, 0);
    let mut report = String::new();
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().replace(".p4info.txtpb", "");
        let prog = dir.join(&name);
        let p4c = text::parse(&std::fs::read_to_string(f).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let loaded = match sluice_p4::parse::load_file(&prog) {
            Ok(l) => l,
            Err(e) => {
                unloaded += 1;
                report.push_str(&format!("{name}: front end refuses: {}\n", e.render()));
                continue;
            }
        };
        let diffs = match P4Info::build(&loaded) {
            Ok(info) => {
                let printed = text::print(&info);
                let ours = text::parse(&printed).expect("sluice's own text reads back");
                compare(&ours, &p4c)
            }
            Err(e) => vec![format!("refused: {}", loaded.sources.render(&e))],
        };
        if diffs.is_empty() {
            agree += 1;
        } else {
            differ += 1;
            for d in diffs {
                report.push_str(&format!("{name}: {d}\n"));
            }
        }
    }
    eprint!("{report}");
    eprintln!(
        "p4info: {agree} agree, {differ} differ ({} programs, {unloaded} not loaded by the front end)",
        files.len()
    );
    assert_eq!(differ, 0, "sluice's P4Info differs from p4c's:\n{report}");
}
