//! `sluice bench` from the outside: the output format of a small run, and
//! clear errors for bad options. No timing assertions: the numbers depend on
//! the machine; only their shape and sanity are checked. The run itself
//! fails (non-zero exit) if the pipeline misforwards any packet, so this
//! test also checks the L3 cases forward every packet to the right port.

use std::process::{Command, Output};

fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice")).args(args).output().expect("run sluice")
}

#[test]
fn l3_cases_print_one_line_each() {
    let out = sluice(&["bench", "--packets", "20000", "--cases", "l3", "--max-seconds", "2"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed:\n{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.iter().any(|l| l.starts_with("# CASE RULES MPPS NS_PER_PKT")), "{stdout}");
    let rows: Vec<Vec<&str>> = lines
        .iter()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let mut seen = Vec::new();
    for r in &rows {
        assert_eq!(r.len(), 4, "want CASE RULES MPPS NS_PER_PKT: {r:?}");
        let (case, rules) = (r[0], r[1].parse::<u64>().expect("RULES is an integer"));
        let mpps: f64 = r[2].parse().expect("MPPS is a number");
        let ns: f64 = r[3].parse().expect("NS_PER_PKT is a number");
        assert!(case.starts_with("l3/"), "only l3 cases were asked for: {case}");
        assert!(mpps > 0.0 && mpps.is_finite(), "{r:?}");
        assert!(ns > 0.0 && ns.is_finite(), "{r:?}");
        // The two columns describe the same rate (rounding aside).
        assert!((mpps * ns / 1000.0 - 1.0).abs() < 0.05 || ns > 100_000.0, "{r:?}");
        seen.push((case.to_string(), rules));
    }
    let mut want = Vec::new();
    for rules in [10u64, 100, 1_000, 10_000, 100_000] {
        for mode in ["on", "megaflow", "off", "auto"] {
            want.push((format!("l3/{mode}"), rules));
        }
    }
    assert_eq!(seen, want, "{stdout}");
}

#[test]
fn pof_twins_forward_every_packet_where_the_model_says() {
    // The bench checks every output against its own model of the rules and
    // fails on any misforwarded packet: the POF rules must do exactly what
    // their OXM twins do.
    let out = sluice(&[
        "bench",
        "--packets",
        "20000",
        "--cases",
        "pofmac,pofnet",
        "--rules",
        "10,1000",
        "--max-seconds",
        "2",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed:\n{stdout}\n{stderr}");
    let seen: Vec<(String, String)> = stdout
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].to_string(), f[1].to_string())
        })
        .collect();
    let mut want = Vec::new();
    for fam in ["pofmac", "pofnet"] {
        for rules in ["10", "1000"] {
            for mode in ["on", "megaflow", "off", "auto"] {
                want.push((format!("{fam}/{mode}"), rules.to_string()));
            }
        }
    }
    assert_eq!(seen, want, "{stdout}");
}

#[test]
fn filter_program_cases_forward_where_the_model_says_on_every_datapath() {
    // The stateful firewall (a program with a map, on two rules), its
    // OpenFlow twin, Oko's chain and the two-table trace with programs on
    // the ACL: every output checked against the bench's model.
    for datapath in ["reference", "classifier", "compiled"] {
        let out = sluice(&[
            "bench",
            "--packets",
            "20000",
            "--cases",
            "fwprog,fwof,okoprog,twotableprog",
            "--rules",
            "2,300",
            "--datapath",
            datapath,
            "--max-seconds",
            "2",
        ]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{datapath}: bench failed:\n{stdout}\n{stderr}");
        let rows: Vec<String> = stdout
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
            .collect();
        for want in [
            "fwprog/on 4",
            "fwof/off 4",
            "fwprog/megaflow 4",
            "fwof/on 302",
            "okoprog/off 2",
            "twotableprog/on 671",
        ] {
            assert!(rows.iter().any(|r| r == want), "{datapath}: no `{want}` in {rows:?}");
        }
    }
}

/// `--threads 2`: two workers forward through one pipeline at once and
/// every thread's outputs are checked against the model (a misforwarded
/// packet fails the run), for the families with shared state: rule and
/// table counters (`l3`, `twotable`) and a filter program's map
/// (`fwprog`).
#[test]
fn two_threads_forward_every_packet_where_the_model_says() {
    let out = sluice(&[
        "bench",
        "--threads",
        "2",
        "--packets",
        "20000",
        "--cases",
        "l3,twotable/on,fwprog/on",
        "--rules",
        "10,1000",
        "--max-seconds",
        "2",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("threads=2"), "{stdout}");
    let rows: Vec<&str> = stdout.lines().filter(|l| !l.starts_with('#')).collect();
    // l3 at two sizes in four modes, twotable/on, fwprog/on at two sizes.
    assert_eq!(rows.len(), 11, "{stdout}");
    for r in rows {
        let case = r.split_whitespace().next().unwrap_or_default();
        for t in 0..2 {
            assert!(
                stdout.contains(&format!("# {case}: thread {t}: ")),
                "no line for thread {t} of {case}:\n{stdout}"
            );
        }
    }
}

#[test]
fn bad_options_name_the_token() {
    let cases = [
        (&["bench", "--cache", "exact"][..], "exact"),
        (&["bench", "--datapath", "fast"][..], "fast"),
        (&["bench", "--packets", "lots"][..], "lots"),
        (&["bench", "--packets", "0"][..], "`0`"),
        (&["bench", "--cases", "nosuchcase"][..], "nosuchcase"),
        (&["bench", "--rules", "10,ten"][..], "`ten`"),
        (&["bench", "--rules", "0"][..], "`0`"),
        (&["bench", "--frobnicate"][..], "--frobnicate"),
        (&["bench", "--threads", "0"][..], "0"),
    ];
    for (args, token) in cases {
        let out = sluice(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(stderr.contains(token), "{args:?}: error does not name `{token}`:\n{stderr}");
        assert!(out.stdout.iter().all(|&b| b != b'\n') || !stderr.is_empty());
    }
}

#[test]
fn run_rejects_bad_datapath_and_cache() {
    let out = sluice(&["run", "--check", "--datapath", "jit"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("--datapath") && stderr.contains("jit"), "{stderr}");
    let out = sluice(&["run", "--check", "--cache", "maybe"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("--cache") && stderr.contains("maybe"), "{stderr}");
    let out = sluice(&["run", "--check", "--datapath", "reference", "--cache", "megaflow"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.contains("datapath: Reference") && stdout.contains("cache: Megaflow"),
        "{stdout}"
    );
    let out = sluice(&["run", "--check", "--datapath", "compiled"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("datapath: Compiled"), "{stdout}");
}

/// The P4 cases run the example programs with their entries compiled into
/// the core (each cache mode) and on the interpreter; every output is
/// checked against the bench's model (a misforwarded packet fails the
/// run). The L2 program (multicast and digests) is compiled too.
#[test]
fn p4_cases_forward_every_packet_where_the_model_says() {
    let out = sluice(&[
        "bench",
        "--packets",
        "2000",
        "--cases",
        "p4-",
        "--rules",
        "10,100",
        "--max-seconds",
        "5",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed:\n{stdout}\n{stderr}");
    let cases: Vec<(&str, &str)> = stdout
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?, w.next()?))
        })
        .collect();
    assert_eq!(
        cases,
        [
            ("p4-ipv4/on", "10"),
            ("p4-ipv4/megaflow", "10"),
            ("p4-ipv4/off", "10"),
            ("p4-ipv4/auto", "10"),
            ("p4-ipv4/interp", "10"),
            ("p4-ipv4/on", "100"),
            ("p4-ipv4/megaflow", "100"),
            ("p4-ipv4/off", "100"),
            ("p4-ipv4/auto", "100"),
            ("p4-ipv4/interp", "100"),
            ("p4-mac/on", "10"),
            ("p4-mac/megaflow", "10"),
            ("p4-mac/off", "10"),
            ("p4-mac/auto", "10"),
            ("p4-mac/interp", "10"),
            ("p4-mac/on", "100"),
            ("p4-mac/megaflow", "100"),
            ("p4-mac/off", "100"),
            ("p4-mac/auto", "100"),
            ("p4-mac/interp", "100")
        ],
        "{stdout}"
    );
    assert!(!stdout.contains("not compiled into the core"), "{stdout}");
}
