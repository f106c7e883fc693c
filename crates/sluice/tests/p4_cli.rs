//! `sluice p4` as a user runs it: a small v1model program (a port swap
//! with one exact table) and STF scripts written here, in a temp dir.

use std::path::{Path, PathBuf};
use std::process::Command;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

const SWAP_P4: &str = r#"#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etherType;
}

struct headers_t {
    ethernet_t eth;
}

struct meta_t {
}

parser SwapParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control SwapVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control SwapIngress(inout headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t sm) {
    action to(bit<9> port) {
        sm.egress_spec = port;
        hdr.eth.etherType = hdr.eth.etherType + 1;
    }
    action drop() {
        mark_to_drop(sm);
    }
    table fwd {
        key = { sm.ingress_port : exact; }
        actions = { to; drop; }
        default_action = drop();
    }
    apply {
        fwd.apply();
    }
}

control SwapEgress(inout headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t sm) {
    apply { }
}

control SwapCompute(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control SwapDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
    }
}

V1Switch(SwapParser(), SwapVerify(), SwapIngress(), SwapEgress(), SwapCompute(),
         SwapDeparser()) main;
"#;

const SWAP_STF: &str = "\
# ports 1 and 2 swap; anything else is dropped
add fwd ingress_port:1 to(port:2)
add fwd sm.ingress_port:2 SwapIngress.to(port:1)

expect 2 ffffffffffff 000000000001 0801 aabbcc $
packet 1 ffffffffffff 000000000001 0800 aabbcc

packet 2 000000000001 ffffffffffff 1234 dd
expect 1 000000000001 ffffffffffff 1235 **

packet 3 000000000001 ffffffffffff 1234 dd
";

/// The swap program's test, with the second expectation wrong.
const WRONG_STF: &str = "\
add fwd ingress_port:1 to(port:2)
add fwd ingress_port:2 to(port:1)
packet 2 000000000001 ffffffffffff 1234 dd
expect 1 000000000001 ffffffffffff 1234 dd
";

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Self {
        let d = std::env::temp_dir().join(format!("sluice-p4-cli-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Exit code, stdout, stderr.
fn sluice(args: &[&Path]) -> (i32, String, String) {
    let o = Command::new(SLUICE).arg("p4").args(args).output().expect("run sluice");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn check_and_pass() {
    let d = Dir::new("pass");
    let p4 = d.file("swap.p4", SWAP_P4);
    let stf = d.file("swap.stf", SWAP_STF);
    let (code, out, err) = sluice(&[Path::new("check"), &p4]);
    assert_eq!((code, out.trim()), (0, "ok"), "{out}{err}");
    let (code, out, err) = sluice(&[Path::new("test"), &p4, &stf]);
    assert_eq!((code, out.trim()), (0, "PASS"), "{out}{err}");
}

#[test]
fn wrong_expectation_fails_with_expected_and_got() {
    let d = Dir::new("fail");
    let p4 = d.file("swap.p4", SWAP_P4);
    let stf = d.file("wrong.stf", WRONG_STF);
    let (code, out, err) = sluice(&[Path::new("test"), &p4, &stf]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with("FAIL"), "{out}");
    assert!(out.contains("line 4: port 1: packet 1 differs at byte 13"), "{out}");
    assert!(out.contains("expected: 00 00 00 00 00 01 ff ff ff ff ff ff 12 34 dd"), "{out}");
    assert!(
        out.contains(
            "got:      00 00 00 00 00 01 ff ff ff ff ff ff 12 35 dd  (from `packet` at line 3)"
        ),
        "{out}"
    );
}

#[test]
fn syntax_error_points_at_the_place() {
    let d = Dir::new("syntax");
    let bad = SWAP_P4.replace("bit<16> etherType;", "bit<16> etherType");
    let p4 = d.file("bad.p4", &bad);
    let stf = d.file("bad.stf", SWAP_STF);
    for args in [vec![Path::new("check"), &p4], vec![Path::new("test"), &p4, &stf]] {
        let (code, out, err) = sluice(&args);
        assert_eq!(code, 1, "{out}{err}");
        let text = format!("{out}{err}");
        // The missing `;` is noticed at the `}` on line 8 (or right after
        // `etherType` on line 7).
        let at = text
            .lines()
            .position(|l| l.contains("bad.p4:7:") || l.contains("bad.p4:8:"))
            .unwrap_or_else(|| panic!("no bad.p4:LINE:COL in\n{text}"));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[at].contains("error"), "{text}");
        assert!(
            lines.get(at + 2).is_some_and(|l| l.trim_start().starts_with('^')),
            "no caret line in\n{text}"
        );
    }
}

#[test]
fn suite_reports_each_program_and_totals() {
    let d = Dir::new("suite");
    d.file("a-swap.p4", SWAP_P4);
    d.file("a-swap.stf", SWAP_STF);
    d.file("b-wrong.p4", SWAP_P4);
    d.file("b-wrong.stf", WRONG_STF);
    d.file("c-unsupported.p4", SWAP_P4);
    d.file("c-unsupported.stf", "register_write r 0 1\n");
    // No .stf: an included skeleton, skipped.
    d.file("skeleton.p4", "this is not P4 at all");
    let (code, out, err) = sluice(&[Path::new("suite"), &d.0, Path::new("--jobs"), Path::new("2")]);
    assert_eq!(code, 1, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert_eq!(lines[0], "PASS a-swap");
    assert!(lines[1].starts_with("FAIL b-wrong: line 4: port 1: packet 1 differs"), "{out}");
    assert_eq!(
        lines[2],
        "UNSUPPORTED c-unsupported: line 1: unsupported STF command `register_write`"
    );
    assert_eq!(lines[3], "1 passed, 1 failed, 1 unsupported");

    let (code, out, err) = sluice(&[Path::new("suite"), &d.0.join("nope")]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(err.contains("no such directory"), "{err}");
}

#[test]
fn info_prints_p4info_and_refuses_by_span() {
    let d = Dir::new("info");
    let p4 = d.file("swap.p4", SWAP_P4);
    let (code, out, err) = sluice(&[Path::new("info"), &p4]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("# proto-file: p4/config/v1/p4info.proto\n"), "{out}");
    for want in
        ["arch: \"v1model\"", "name: \"SwapIngress.fwd\"", "alias: \"fwd\"", "name: \"port\""]
    {
        assert!(out.contains(want), "{want} missing:\n{out}");
    }
    // An action profile is not modelled: refused at its place, status 2.
    let bad = d.file(
        "bad.p4",
        &SWAP_P4.replacen(
            "default_action = drop();",
            "default_action = drop(); implementation = x;",
            1,
        ),
    );
    let (code, out, err) = sluice(&[Path::new("info"), &bad]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("bad.p4:") && err.contains("implementation"), "{err}");
}
