//! sluice's P4Runtime server driven by the official Python client
//! (PyPI's `p4runtime`, `grpcio`, `protobuf` in the virtualenv that
//! `scripts/install-deps` makes at /opt/sluice-venv/p4rt, or the Python
//! named by `SLUICE_P4RT_PYTHON`).
//!
//! Each test starts `sluice p4 run tests/p4runtime/rt.p4 --p4runtime
//! 127.0.0.1:PORT` with two hosts (`Lab::new(2, OCTET)`) on AF_PACKET
//! ports 1 and 2, then runs one script of `tests/p4runtime/` under
//! `timeout` and fails with its output unless it prints `PASSED` and exits
//! 0: arbitration, the pipeline config RPCs, every Write/Read path, errors
//! for bad entries, packet-in/out, digests and idle timeouts. `client_reads_sluices_p4info`
//! checks the client itself against `sluice p4 info`, without a server.
//!
//! Needs root, `ip` and `timeout`; a missing tool or virtualenv fails the
//! test with what to install. Namespaces, the switch (killed by PID) and
//! scratch files are removed by guards, also on failure.

mod netlab;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use netlab::{free_port, need_root_and, Lab, Proc, Scratch};

/// Longest one script may run.
const SCRIPT_LIMIT_S: &str = "60";

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/p4runtime")
}

fn python() -> PathBuf {
    let py = std::env::var_os("SLUICE_P4RT_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/sluice-venv/p4rt/bin/python"));
    assert!(
        py.is_file(),
        "the P4Runtime Python client is not installed at {} \
         (scripts/install-deps makes that virtualenv; or set SLUICE_P4RT_PYTHON)",
        py.display()
    );
    py
}

/// Runs `script` (in tests/p4runtime) with `args` under `timeout`; panics
/// with its output (and `extra`, the switch's log) unless it passed.
fn run_script(script: &str, args: &[String], extra: &dyn Fn() -> String) {
    let out = python_cmd(&here().join(script)).args(args).output().expect("running timeout/python");
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let passed = out.status.success() && text.lines().any(|l| l == "PASSED");
    assert!(
        passed,
        "{script} failed ({}; 124 is the {SCRIPT_LIMIT_S} s timeout):\n{text}\n--- switch log:\n{}",
        out.status,
        extra()
    );
}

/// `sluice p4 run rt.p4 --p4runtime 127.0.0.1:PORT` on the lab's ports,
/// once it listens, and the script arguments that name it.
fn start(lab: &Lab, dir: &Scratch) -> (Proc, Vec<String>) {
    let program = here().join("rt.p4");
    // The scripts' device id is 1 (`sluice p4 run`'s default is 0).
    let (sw, addr) = start_program(lab, dir, &program, &["--cpu-port", "255", "--device-id", "1"]);
    let mut args = vec![
        "--addr".to_string(),
        addr,
        "--sluice".to_string(),
        env!("CARGO_BIN_EXE_sluice").to_string(),
        "--program".to_string(),
        program.display().to_string(),
    ];
    for i in 0..lab.h.len() {
        args.push("--host".to_string());
        args.push(format!("{}:{}:{}", lab.h[i].name(), lab.host_if[i], lab.mac(i)));
    }
    (sw, args)
}

/// One script against a fresh switch with two hosts (`NetNs` turns IPv6
/// off, so the hosts' kernels send no neighbour discovery into the
/// program).
fn scenario(script: &str, octet: u8) {
    need_root_and(&["ip", "timeout"]);
    python();
    let dir = Scratch::new(&format!("p4rt-py-{octet}"));
    let lab = Lab::new(2, octet);
    let (mut sw, args) = start(&lab, &dir);
    run_script(script, &args, &|| sw.log());
    sw.assert_running();
}

/// The client's own check, no server: the virtualenv imports the official
/// modules, parses `sluice p4 info`'s text of rt.p4 and encodes entries
/// by its names.
#[test]
fn client_reads_sluices_p4info() {
    let args = [
        "--sluice".to_string(),
        env!("CARGO_BIN_EXE_sluice").to_string(),
        "--program".to_string(),
        here().join("rt.p4").display().to_string(),
        "--addr".to_string(),
        "unused".to_string(),
    ];
    run_script("selfcheck.py", &args, &String::new);
}

#[test]
fn arbitration() {
    scenario("arbitration.py", 94);
}

#[test]
fn pipeline_config() {
    scenario("pipeline.py", 95);
}

#[test]
fn write_and_read_every_match_kind() {
    scenario("write_read.py", 96);
}

#[test]
fn errors_for_bad_entries() {
    scenario("errors.py", 97);
}

#[test]
fn packet_in_and_out() {
    scenario("packet_io.py", 98);
}

#[test]
fn digests_with_and_without_acks() {
    scenario("digests.py", 99);
}

/// idle.py: an idle-timeout notification for the entry nobody hits,
/// none for the one packet-outs hit (the switch switches to
/// crates/p4rt/tests/p4/idle.p4).
#[test]
fn idle_timeout_notifications() {
    scenario("idle.py", 117);
}

/// A CA (its certificate and key).
struct Ca {
    cert: rcgen::Certificate,
    key: rcgen::KeyPair,
}

fn ca(name: &str) -> Ca {
    let key = rcgen::KeyPair::generate().expect("CA key");
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    p.distinguished_name.push(rcgen::DnType::CommonName, name);
    Ca { cert: p.self_signed(&key).expect("CA certificate"), key }
}

/// `NAME-cert.pem` and `NAME-key.pem` in `dir`, a certificate for
/// 127.0.0.1 signed by `ca`; their paths.
fn leaf(dir: &Scratch, ca: &Ca, name: &str) -> (String, String) {
    leaf_serial(dir, ca, name, None)
}

/// P4Runtime over mutual TLS with the OpenFlow channel's certificate
/// options (`--tls-ca`, `--tls-cert`, `--tls-key`): tls.py's verified
/// client writes and reads; clients with a certificate from another CA,
/// with none, and in plain text are refused, and the switch logs the
/// refused handshakes.
#[test]
fn tls_mutual_authentication() {
    need_root_and(&["ip", "timeout"]);
    python();
    let dir = Scratch::new("p4rt-py-tls");
    let (good, rogue) = (ca("sluice-p4rt-test-ca"), ca("rogue-ca"));
    let ca_pem = dir.path("ca.pem");
    std::fs::write(&ca_pem, good.cert.pem()).expect("writing the CA");
    let ca_pem = ca_pem.display().to_string();
    let (sw_cert, sw_key) = leaf(&dir, &good, "switch");
    let (cl_cert, cl_key) = leaf(&dir, &good, "controller");
    let (rg_cert, rg_key) = leaf(&dir, &rogue, "rogue");
    let lab = Lab::new(2, 103);
    let program = here().join("rt.p4");
    let tls = ["--tls-ca", &ca_pem, "--tls-cert", &sw_cert, "--tls-key", &sw_key];
    let extra = [&["--cpu-port", "255", "--device-id", "1"][..], &tls[..]].concat();
    let (mut sw, addr) = start_program(&lab, &dir, &program, &extra);
    let args: Vec<String> = [
        "--addr",
        &addr,
        "--sluice",
        env!("CARGO_BIN_EXE_sluice"),
        "--program",
        &program.display().to_string(),
        "--ca",
        &ca_pem,
        "--cert",
        &cl_cert,
        "--key",
        &cl_key,
        "--rogue-cert",
        &rg_cert,
        "--rogue-key",
        &rg_key,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    run_script("tls.py", &args, &|| sw.log());
    sw.assert_running();
    let log = sw.log();
    assert!(
        log.matches("TLS handshake refused").count() >= 3,
        "the switch logs the three refused handshakes:\n{log}"
    );
}

/// [`leaf`], with serial number `serial` when given (for a CRL to name).
fn leaf_serial(dir: &Scratch, ca: &Ca, name: &str, serial: Option<u64>) -> (String, String) {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut p = rcgen::CertificateParams::new(vec!["localhost".to_string()]).expect("params");
    p.subject_alt_names.push(rcgen::SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
    p.distinguished_name.push(rcgen::DnType::CommonName, name);
    p.serial_number = serial.map(rcgen::SerialNumber::from);
    let cert = p.signed_by(&key, &ca.cert, &ca.key).expect("certificate");
    let (c, k) = (dir.path(&format!("{name}-cert.pem")), dir.path(&format!("{name}-key.pem")));
    std::fs::write(&c, cert.pem()).expect("writing a certificate");
    std::fs::write(&k, key.serialize_pem()).expect("writing a key");
    (c.display().to_string(), k.display().to_string())
}

/// `--tls-crl`: the CA's CRL revokes one client certificate (serial 66);
/// tls_crl.py's client with it is refused, one with another certificate
/// of the same CA (serial 65) writes and reads; the switch logs the
/// refused handshake.
#[test]
fn tls_crl_refuses_a_revoked_client() {
    need_root_and(&["ip", "timeout"]);
    python();
    let dir = Scratch::new("p4rt-py-crl");
    let good = ca("sluice-p4rt-crl-ca");
    let ca_pem = dir.path("ca.pem");
    std::fs::write(&ca_pem, good.cert.pem()).expect("writing the CA");
    let ca_pem = ca_pem.display().to_string();
    let (sw_cert, sw_key) = leaf_serial(&dir, &good, "switch", Some(64));
    let (cl_cert, cl_key) = leaf_serial(&dir, &good, "controller", Some(65));
    let (rv_cert, rv_key) = leaf_serial(&dir, &good, "revoked", Some(66));
    let crl = rcgen::CertificateRevocationListParams {
        this_update: rcgen::date_time_ymd(2025, 1, 1),
        next_update: rcgen::date_time_ymd(2100, 1, 1),
        crl_number: rcgen::SerialNumber::from(1u64),
        issuing_distribution_point: None,
        revoked_certs: vec![rcgen::RevokedCertParams {
            serial_number: rcgen::SerialNumber::from(66u64),
            revocation_time: rcgen::date_time_ymd(2025, 1, 1),
            reason_code: Some(rcgen::RevocationReason::KeyCompromise),
            invalidity_date: None,
        }],
        key_identifier_method: rcgen::KeyIdMethod::Sha256,
    }
    .signed_by(&good.cert, &good.key)
    .expect("CRL");
    let crl_pem = dir.path("crl.pem");
    std::fs::write(&crl_pem, crl.pem().expect("CRL as PEM")).expect("writing the CRL");
    let crl_pem = crl_pem.display().to_string();
    let lab = Lab::new(2, 105);
    let program = here().join("rt.p4");
    let tls =
        ["--tls-ca", &ca_pem, "--tls-cert", &sw_cert, "--tls-key", &sw_key, "--tls-crl", &crl_pem];
    let extra = [&["--cpu-port", "255", "--device-id", "1"][..], &tls[..]].concat();
    let (mut sw, addr) = start_program(&lab, &dir, &program, &extra);
    let args: Vec<String> = [
        "--addr",
        &addr,
        "--sluice",
        env!("CARGO_BIN_EXE_sluice"),
        "--program",
        &program.display().to_string(),
        "--ca",
        &ca_pem,
        "--cert",
        &cl_cert,
        "--key",
        &cl_key,
        "--revoked-cert",
        &rv_cert,
        "--revoked-key",
        &rv_key,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    run_script("tls_crl.py", &args, &|| sw.log());
    sw.assert_running();
    let log = sw.log();
    assert!(log.contains("TLS handshake refused"), "the switch logs the refused handshake:\n{log}");
}

/// `examples/p4runtime/<name>` (or a test script) under `timeout` with
/// the venv's Python.
fn python_cmd(script: &Path) -> Command {
    let mut cmd = Command::new("timeout");
    cmd.args(["-k", "5", SCRIPT_LIMIT_S])
        .arg(python())
        .arg(script)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    cmd
}

fn examples(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(rel)
}

/// `sluice p4 run PROGRAM --p4runtime 127.0.0.1:PORT EXTRA...` on the
/// lab's ports, once it listens; its address.
fn start_program(lab: &Lab, dir: &Scratch, program: &Path, extra: &[&str]) -> (Proc, String) {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    cmd.args(["p4", "run"])
        .arg(program)
        .args(["--netns", lab.sw.name()])
        .args(["--p4runtime", &addr])
        .args(extra)
        .args(lab.port_args())
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1");
    let mut sw = Proc::spawn("sluice p4 run --p4runtime", &mut cmd, dir.path("p4run.log"));
    sw.wait_listening(port);
    (sw, addr)
}

/// MACSAD's L2 learning: hosts in three namespaces ping each other
/// through `program` while examples/p4runtime/l2_learning.py (primary,
/// election id 10) learns in `mode`; then the `forwarding` table, read by
/// a backup controller, holds every host on its own port.
fn l2_learning(program: &Path, mode: &str, octet: u8, extra: &[&str]) {
    need_root_and(&["ip", "ping", "timeout"]);
    let dir = Scratch::new(&format!("p4rt-py-l2-{octet}"));
    let lab = Lab::new(3, octet);
    let (mut sw, addr) = start_program(&lab, &dir, program, extra);
    let mut cmd = python_cmd(&examples("p4runtime/l2_learning.py"));
    cmd.args(["--addr", &addr, "--ports", "1,2,3", "--mode", mode, "--election", "10"])
        .args(["--duration", "50"]);
    let mut ctl = Proc::spawn("l2_learning.py", &mut cmd, dir.path("learn.log"));
    ctl.wait_log("l2_learning: primary", Duration::from_secs(20));
    for (a, b) in [(0, 1), (1, 2), (2, 0)] {
        assert!(
            lab.ping_ok_within(a, b, Duration::from_secs(10)),
            "ping {a} -> {b}:\n{}\n{}",
            sw.log(),
            ctl.log()
        );
    }
    let out = python_cmd(&here().join("table_converges.py"))
        .args(["--addr", &addr, "--table", "L2Ingress.forwarding", "--want", "3"])
        .output()
        .expect("running table_converges.py");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the forwarding table did not converge:\n{text}\n{}", ctl.log());
    for i in 0..3 {
        let line = format!("{} -> [{}]", lab.mac(i), i + 1);
        assert!(text.lines().any(|l| l == line), "host {i} learned on its port ({line}):\n{text}");
    }
    sw.assert_running();
    ctl.assert_running();
}

#[test]
fn l2_learning_example_converges_with_digests() {
    l2_learning(&examples("p4/l2switch.p4"), "digest", 100, &[]);
}

#[test]
fn l2_learning_example_converges_with_packet_in() {
    l2_learning(&examples("p4runtime/l2switch_cpu.p4"), "packet-in", 102, &["--cpu-port", "255"]);
}

/// The router example driven entirely over P4Runtime: router.py installs
/// router.p4 and its routes; ping works between three hosts.
#[test]
fn router_example_over_p4runtime() {
    need_root_and(&["ip", "ping", "timeout"]);
    let dir = Scratch::new("p4rt-py-router");
    let octet = 101u8;
    let lab = Lab::new(3, octet);
    let port_mac = |i: usize| format!("02:00:00:00:{octet:02x}:{:02x}", 0xa1 + i);
    lab.behind_router(port_mac);
    let (mut sw, addr) = start_program(&lab, &dir, &examples("p4/router.p4"), &[]);
    let mut cmd = python_cmd(&examples("p4runtime/router.py"));
    cmd.args(["--addr", &addr, "--sluice", env!("CARGO_BIN_EXE_sluice")]);
    for i in 0..3 {
        cmd.arg("--route").arg(format!(
            "10.{octet}.{}.0/24,{},{},{}",
            i + 1,
            lab.mac(i),
            port_mac(i),
            i + 1
        ));
    }
    let out = cmd.output().expect("running router.py");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "router.py: {text}\n{}", sw.log());
    assert_eq!(text.lines().filter(|l| l.starts_with("route ")).count(), 3, "{text}");
    let ping = |a: usize, b: usize| {
        Command::new("ip")
            .args([
                "netns",
                "exec",
                lab.h[a].name(),
                "ping",
                "-n",
                "-c",
                "1",
                "-W",
                "1",
                &lab.routed_ip(b).to_string(),
            ])
            .output()
            .expect("ping")
            .status
            .success()
    };
    for (a, b) in [(0, 1), (1, 2), (2, 0)] {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ping(a, b) {
            assert!(Instant::now() < deadline, "ping {a} -> {b} through the router:\n{}", sw.log());
        }
    }
    sw.assert_running();
}
