//! The server in-process (no ports, no `sluice p4 run`) driven by the
//! official P4Runtime Python client: the scripts of
//! `crates/sluice/tests/p4runtime/` that need no traffic (arbitration,
//! the pipeline config RPCs, every Write/Read path), the router example
//! and the packet-in L2 learning example (frames handed to
//! `Device::packet_in`, its packet-outs taken from the device's queue).
//! `crates/sluice/tests/p4runtime_python.rs` runs the same scripts and the
//! rest against the real binary on veths.
//!
//! Needs the virtualenv `scripts/install-deps` makes (/opt/sluice-venv/p4rt,
//! or `SLUICE_P4RT_PYTHON`); fails naming it when missing. Each script
//! runs under `timeout 60`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel)
}

/// `program`'s P4Info as text in a scratch file (what `sluice p4 info`
/// prints).
fn p4info_file(program: &Path) -> PathBuf {
    let loaded = sluice_p4::parse::load_file(program).expect("program loads");
    let info = sluice_p4::p4info::P4Info::build(&loaded).expect("P4Info");
    let file = std::env::temp_dir().join(format!(
        "sluice-p4rt-py-{}-{}.txtpb",
        std::process::id(),
        program.file_stem().unwrap().to_string_lossy()
    ));
    std::fs::write(&file, sluice_p4::p4info::text::print(&info)).expect("P4Info file");
    file
}

async fn run(script: PathBuf, args: Vec<String>) -> (Output, String) {
    let out = tokio::task::spawn_blocking(move || {
        Command::new("timeout")
            .args(["-k", "5", "60"])
            .arg(python())
            .arg(&script)
            .args(&args)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .expect("running timeout/python")
    })
    .await
    .expect("script thread");
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out, text)
}

/// One script of crates/sluice/tests/p4runtime against a fresh server
/// running its rt.p4; passes only if the script prints PASSED.
async fn script(name: &str) {
    let program = repo("crates/sluice/tests/p4runtime/rt.p4");
    let srv = common::start(Some("../../../sluice/tests/p4runtime/rt.p4")).await;
    let info = p4info_file(&program);
    let args = vec![
        "--addr".to_string(),
        srv.addr.to_string(),
        "--p4info".to_string(),
        info.display().to_string(),
        "--program".to_string(),
        program.display().to_string(),
    ];
    let (out, text) = run(repo("crates/sluice/tests/p4runtime").join(name), args).await;
    let _ = std::fs::remove_file(&info);
    assert!(
        out.status.success() && text.lines().any(|l| l == "PASSED"),
        "{name} failed ({}; 124 is the timeout):\n{text}",
        out.status
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_arbitration() {
    script("arbitration.py").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_pipeline_config() {
    script("pipeline.py").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_write_and_read_every_match_kind() {
    script("write_read.py").await;
}

/// examples/p4runtime/router.py installs router.p4 and two routes and
/// reads them back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_router_example() {
    let srv = common::start(Some("../../../../examples/p4/router.p4")).await;
    let info = p4info_file(&repo("examples/p4/router.p4"));
    let args: Vec<String> = [
        "--addr",
        &srv.addr.to_string(),
        "--p4info",
        &info.display().to_string(),
        "--device-id",
        "1",
        "--route",
        "10.0.1.0/24,02:00:00:00:00:01,02:00:00:00:aa:01,1",
        "--route",
        "10.0.2.0/24,02:00:00:00:00:02,02:00:00:00:aa:02,2",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (out, text) = run(repo("examples/p4runtime/router.py"), args).await;
    let _ = std::fs::remove_file(&info);
    assert!(out.status.success(), "router.py: {text}");
    let routes: Vec<&str> = text.lines().filter(|l| l.starts_with("route ")).collect();
    assert_eq!(
        routes,
        [
            "route 10.0.1.0/24 -> next hop 020000000001 via port 1 (source 02000000aa01)",
            "route 10.0.2.0/24 -> next hop 020000000002 via port 2 (source 02000000aa02)",
        ],
        "{text}"
    );
}

/// examples/p4runtime/l2_learning.py --mode packet-in: a frame from an
/// unknown source (packet_in.ingress_port 1) is learned and comes back as
/// a packet-out naming port 1, unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_l2_learning_from_packet_in() {
    let srv = common::start(Some("../../../../examples/p4runtime/l2switch_cpu.p4")).await;
    let args: Vec<String> = [
        "--addr",
        &srv.addr.to_string(),
        "--device-id",
        "1",
        "--mode",
        "packet-in",
        "--duration",
        "6",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let ctl = tokio::spawn(run(repo("examples/p4runtime/l2_learning.py"), args));
    // packet_in { ingress_port = 1 (9 bits), pad (7) }, then the frame.
    let mut frame = vec![0x00, 0x80];
    frame.extend_from_slice(&[0xff; 6]);
    frame.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x88, 0xb5]);
    frame.extend_from_slice(&[0x5a; 46]);
    // Until the controller is primary the switch drops packet-ins: offer
    // the frame again every 200 ms until a packet-out comes (bounded).
    let mut outs = Vec::new();
    for _ in 0..75 {
        srv.device.packet_in(&frame);
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        outs = srv.device.take_packet_outs();
        if !outs.is_empty() {
            break;
        }
    }
    srv.device.packet_in(&[]); // nothing for a frame shorter than the header
    drop(srv);
    let (out, text) = ctl.await.expect("controller task");
    assert_eq!(outs.first(), Some(&frame), "packet-outs {outs:02x?}; controller:\n{text}");
    assert!(text.contains("learned 020000000001 on port 1"), "{} {text}", out.status);
}

/// crates/sluice/tests/p4runtime/meters.py: a direct meter of 1 packet/s
/// (bursts of 1) written by the official client; 5 frames at one instant
/// of the switch's (manual) clock: 1 GREEN leaves, 4 RED are dropped, and
/// the client reads the direct counter, the meter and the colour counter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_direct_meter_drops_red_and_counters_show_it() {
    use sluice_p4::target::{Clock, Manage as _, Target as _};
    let srv = common::start(Some("meter.p4")).await;
    let now = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    sluice_p4rt::device::lock(&srv.device.engine).set_clock(Clock::manual(now));
    let program = common::program("meter.p4");
    let info = p4info_file(&program);
    let script = repo("crates/sluice/tests/p4runtime/meters.py");
    let args = |phase: &str| -> Vec<String> {
        [
            "--addr",
            &srv.addr.to_string(),
            "--p4info",
            &info.display().to_string(),
            "--program",
            &program.display().to_string(),
            "--phase",
            phase,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let (out, text) = run(script.clone(), args("setup")).await;
    assert!(out.status.success() && text.contains("PASSED"), "setup: {text}");
    let mut frame = vec![0u8; 60];
    frame[5] = 0xdd;
    frame[11] = 0x0a;
    let left: usize = {
        let mut e = sluice_p4rt::device::lock(&srv.device.engine);
        (0..5).map(|_| e.packet(0, &frame).expect("packet runs").len()).sum()
    };
    assert_eq!(left, 1, "one GREEN frame leaves, four RED are dropped");
    let (out, text) = run(script, args("check")).await;
    let _ = std::fs::remove_file(&info);
    assert!(out.status.success() && text.lines().any(|l| l == "PASSED"), "check: {text}");
}
