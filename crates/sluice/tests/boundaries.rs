//! The crate boundaries ARCHITECTURE.md states as invariants, checked
//! against `cargo metadata`: a forbidden dependency fails this test.
//!
//! Only normal and build dependencies count (a crate's tests may use
//! anything), and they count transitively through workspace crates: if
//! `sluice-classifier` depended on a crate that depends on `sluice-ofp`, it
//! would know OpenFlow too.
//!
//! The rules:
//! 1. `sluice-packet` and `sluice-ofp` depend on no other sluice crate.
//! 2. Only the OpenFlow crates reach `sluice-ofp`. Every other workspace
//!    crate (packet, classifier, tablejit, jit, filter, bpf, and whatever
//!    is added later — the forwarding core, a P4 front end) knows no
//!    OpenFlow: a new crate is checked without being listed.
//! 3. `sluice-agent` reaches no sluice crate but `sluice-ofp`: it speaks
//!    OpenFlow to controllers and knows nothing of the engine.
//! 4. Pure crates (everything but agent, ports, datapath, p4rt and the binary)
//!    reach no I/O runtime: no tokio, no TLS, no ports, no agent.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Crates allowed to know OpenFlow.
const OPENFLOW: &[&str] =
    &["sluice-ofp", "sluice-pipeline", "sluice-agent", "sluice-datapath", "sluice"];
/// Crates allowed to do I/O.
/// (`sluice-p4rt` is the P4Runtime gRPC server: a control channel like the agent.)
const IO_CRATES: &[&str] =
    &["sluice-agent", "sluice-ports", "sluice-datapath", "sluice-p4rt", "sluice"];
/// What a pure crate must not reach.
const IO_DEPS: &[&str] = &[
    "tokio",
    "tokio-rustls",
    "rustls",
    "signal-hook",
    "xsk-rs",
    "sluice-ports",
    "sluice-agent",
    "sluice-datapath",
];

/// Workspace crate -> its normal and build dependencies (by package name).
type Graph = BTreeMap<String, BTreeSet<String>>;

fn workspace_graph() -> Graph {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let mut g = Graph::new();
    for p in meta["packages"].as_array().expect("packages") {
        let name = p["name"].as_str().expect("package name").to_string();
        let deps = p["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"].as_str() != Some("dev"))
            .map(|d| d["name"].as_str().expect("dependency name").to_string())
            .collect();
        g.insert(name, deps);
    }
    g
}

/// Everything `from` reaches through normal/build dependencies, following
/// workspace crates transitively (external crates are leaves).
fn reach(g: &Graph, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(c) = todo.pop() {
        for d in g.get(&c).into_iter().flatten() {
            if seen.insert(d.clone()) && g.contains_key(d) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

/// Every broken rule, as one line each.
fn violations(g: &Graph) -> Vec<String> {
    let mut bad = Vec::new();
    for leaf in ["sluice-packet", "sluice-ofp"] {
        for d in g.get(leaf).into_iter().flatten().filter(|d| d.starts_with("sluice")) {
            bad.push(format!("{leaf} depends on {d}: it must depend on no sluice crate"));
        }
    }
    for (c, _) in g.iter().filter(|(c, _)| !OPENFLOW.contains(&c.as_str())) {
        if reach(g, c).contains("sluice-ofp") {
            bad.push(format!("{c} reaches sluice-ofp: only {OPENFLOW:?} may know OpenFlow"));
        }
    }
    if g.contains_key("sluice-agent") {
        for d in reach(g, "sluice-agent") {
            if g.contains_key(&d) && d != "sluice-ofp" {
                bad.push(format!("sluice-agent reaches {d}: the agent knows no engine"));
            }
        }
    }
    for (c, _) in g.iter().filter(|(c, _)| !IO_CRATES.contains(&c.as_str())) {
        let r = reach(g, c);
        for io in IO_DEPS.iter().filter(|io| r.contains(**io)) {
            bad.push(format!("{c} reaches {io}: pure crates do no I/O"));
        }
    }
    bad
}

#[test]
fn the_workspace_keeps_its_boundaries() {
    let g = workspace_graph();
    // The graph really is the workspace (a vacuous graph would pass).
    for c in ["sluice-packet", "sluice-ofp", "sluice-pipeline", "sluice-agent", "sluice"] {
        assert!(g.contains_key(c), "{c} missing from cargo metadata");
    }
    let bad = violations(&g);
    assert!(bad.is_empty(), "crate boundaries broken:\n{}", bad.join("\n"));
}

/// `(crate, its dependencies)` pairs.
type Edges<'a> = &'a [(&'a str, &'a [&'a str])];

fn graph(edges: Edges<'_>) -> Graph {
    edges
        .iter()
        .map(|(c, ds)| (c.to_string(), ds.iter().map(|d| d.to_string()).collect()))
        .collect()
}

#[test]
fn each_rule_catches_its_violation() {
    let ok = [
        ("sluice-packet", &[][..]),
        ("sluice-ofp", &[][..]),
        ("sluice-classifier", &["sluice-packet"][..]),
        ("sluice-pipeline", &["sluice-ofp", "sluice-classifier"][..]),
        ("sluice-agent", &["sluice-ofp", "tokio"][..]),
    ];
    assert!(violations(&graph(&ok)).is_empty());

    let cases: [(Edges<'_>, &str); 5] = [
        (&[("sluice-packet", &["sluice-ofp"]), ("sluice-ofp", &[])], "sluice-packet depends on"),
        // transitively, and for a crate no rule names
        (
            &[("sluice-core", &["sluice-x"]), ("sluice-x", &["sluice-ofp"]), ("sluice-ofp", &[])],
            "sluice-core reaches sluice-ofp",
        ),
        (
            &[("sluice-agent", &["sluice-pipeline"]), ("sluice-pipeline", &["sluice-ofp"])],
            "sluice-agent reaches sluice-pipeline",
        ),
        (&[("sluice-pipeline", &["tokio"])], "sluice-pipeline reaches tokio"),
        (
            &[("sluice-classifier", &["sluice-ports"]), ("sluice-ports", &[])],
            "sluice-classifier reaches sluice-ports",
        ),
    ];
    for (edges, want) in cases {
        let bad = violations(&graph(edges));
        assert!(bad.iter().any(|b| b.starts_with(want)), "{want}: got {bad:?}");
    }
}
