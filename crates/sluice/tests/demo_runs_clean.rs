//! `sluice demo` runs to completion with working forwarding (its exit
//! status says so) and leaves no namespace behind — also when interrupted
//! with SIGINT halfway. Needs root, `ip` and `ping` (`scripts/install-deps`);
//! without them the tests fail, they do not skip.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Panics (naming what is missing) unless the demo can run here.
fn need_root_and_tools() {
    assert!(sluice_datapath::ports::testutil::is_root(), "the demo needs root");
    for t in ["ip", "ping"] {
        let ok = Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "`{t}` is not installed (scripts/install-deps installs it)");
    }
}

/// Namespaces whose name carries `pid` the way the demo names them.
fn namespaces_of(pid: u32) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().expect("ip netns list");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("sl") && n.contains(&format!("{pid}x")))
        .map(String::from)
        .collect()
}

fn wait_bounded(child: &mut std::process::Child, secs: u64) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn demo_runs_to_completion_and_cleans_up() {
    need_root_and_tools();
    for extra in [&[][..], &["--standalone"][..]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["demo", "--hosts", "3", "--seconds", "1"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning sluice demo");
        let pid = child.id();
        let status = wait_bounded(&mut child, 120);
        let out = child.wait_with_output().expect("demo output");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            status.is_some_and(|s| s.success()),
            "demo {extra:?} failed ({status:?}):\n{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for want in ["── summary ──", "4/4 replies", "nothing left behind", "udp   h3 -> h1"]
        {
            assert!(text.contains(want), "demo {extra:?} output lacks {want:?}:\n{text}");
        }
        if extra.is_empty() {
            assert!(text.contains("actions=goto_table:1"), "no learned flows shown:\n{text}");
        }
        assert_eq!(namespaces_of(pid), Vec::<String>::new());
    }
}

#[test]
fn demo_interrupted_cleans_up() {
    need_root_and_tools();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["demo", "--hosts", "2", "--seconds", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawning sluice demo");
    let pid = child.id();
    // Wait until its namespaces exist, then interrupt it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while namespaces_of(pid).len() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(namespaces_of(pid).len(), 3, "the demo did not create its namespaces");
    std::thread::sleep(Duration::from_millis(1500));
    let _ = Command::new("kill").args(["-INT", &pid.to_string()]).status();
    let status = wait_bounded(&mut child, 30);
    assert!(status.is_some(), "the demo did not stop within 30 s of SIGINT");
    assert!(!status.unwrap().success(), "an interrupted demo reports failure");
    assert_eq!(namespaces_of(pid), Vec::<String>::new(), "namespaces left behind");
}
