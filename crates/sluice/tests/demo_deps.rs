//! `scripts/demo` (the README's run command) installs only what the demo
//! uses and runs without the nightly toolchain or any test-only tool.
//!
//! # How
//! Each test runs the real script with an empty environment whose `PATH` is
//! one temporary directory holding
//! - symlinks to the real tools the demo legitimately uses: `bash` and `env`
//!   (the shebang), `id`, `dirname`, `grep` (the scripts), `ip`, `sysctl`,
//!   `ping` (what `sluice demo` runs) and `cc` (what building sluice needs);
//! - shims that record their arguments: `dpkg-query` (answers "not
//!   installed" for everything, so the install step names every package it
//!   wants), `apt-get` (succeeds, or fails when the test says so, without
//!   installing anything), `rustup` (its `toolchain list` shows only stable),
//!   `rustc`, and `cargo`, which accepts only `build --release --locked -p
//!   sluice` and does nothing: `CARGO_TARGET_DIR/release/sluice` is a link
//!   to the binary under test, so no release build runs inside the test;
//! - nothing else: no `cargo-fuzz`, `clang`, `ovs-*`, `osken-manager`,
//!   `python3`, `pip`, `sudo`.
//!
//! The main test then checks that the demo reaches its summary with working
//! forwarding, that apt was asked for exactly [`DEMO_PACKAGES`] and that
//! cargo was asked only to build sluice. If `scripts/demo` called the full
//! `scripts/install-deps`, apt would be asked for Open vSwitch, bpftool,
//! os-ken, ..., cargo to install cargo-fuzz, and the missing nightly would
//! stop it: the test fails. Two more tests check that a failed install and
//! a missing cargo stop the script loudly before the demo starts.
//!
//! Needs root (the demo creates network namespaces), like
//! `demo_runs_clean.rs`; without it the tests fail, they do not skip. Every
//! wait is bounded; a guard kills the script (by PID) if it is still running
//! and removes any namespace or veth named after its PID.

use std::io::Read;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// What `sluice demo` runs and what building it needs, as Debian packages:
/// `ip` (iproute2), `sysctl` in each namespace (procps), `ping`
/// (iputils-ping), a C compiler and libc to link with (gcc, libc6-dev),
/// and what the vendored libxdp of the default build's AF_XDP ports needs
/// (clang, m4, libelf-dev, zlib1g-dev, pkg-config, gcc-multilib).
const DEMO_PACKAGES: &[&str] = &[
    "iproute2",
    "procps",
    "iputils-ping",
    "gcc",
    "libc6-dev",
    "clang",
    "m4",
    "libelf-dev",
    "zlib1g-dev",
    "pkg-config",
    "gcc-multilib",
];

/// Real tools put on the script's PATH (see the module docs).
const REAL_TOOLS: &[&str] = &["bash", "env", "id", "dirname", "grep", "ip", "sysctl", "ping", "cc"];

/// Words no apt request from the demo may contain: the test suite's tools.
const TEST_ONLY: &[&str] = &[
    "openvswitch",
    "os-ken",
    "scapy",
    "pip",
    "llvm",
    "bpftool",
    "tcpdump",
    "pcap",
    "netsniff",
    "arping",
];

const CARGO_BUILD: &str = "build --release --locked -p sluice";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where `name` is on this process's PATH (or a standard directory).
fn find_tool(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<String> =
        std::env::var("PATH").unwrap_or_default().split(':').map(String::from).collect();
    dirs.extend(
        ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
            .map(String::from),
    );
    dirs.iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// A temporary directory with the script's PATH (`bin`), target dir and
/// the shims' logs; removed on drop.
struct Sandbox {
    root: PathBuf,
}

struct Options {
    /// Exit status of the `apt-get` shim.
    apt_status: i32,
    /// Put `cargo` and `rustc` shims on PATH.
    rust: bool,
}

impl Sandbox {
    fn new(tag: &str, opt: Options) -> Sandbox {
        let root =
            std::env::temp_dir().join(format!("sluice-demo-deps-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let sb = Sandbox { root };
        for d in ["bin", "logs", "target/release"] {
            std::fs::create_dir_all(sb.root.join(d)).expect("creating the sandbox");
        }
        for t in REAL_TOOLS {
            let real = find_tool(t).unwrap_or_else(|| {
                panic!("`{t}` is not installed (scripts/install-deps --demo installs it)")
            });
            symlink(real, sb.root.join("bin").join(t)).expect("linking a tool");
        }
        sb.shim("dpkg-query", "exit 1");
        sb.shim("apt-get", &format!("exit {}", opt.apt_status));
        sb.shim(
            "rustup",
            "[ \"$*\" = 'toolchain list' ] || exit 1\n\
             echo 'stable-x86_64-unknown-linux-gnu (default)'",
        );
        if opt.rust {
            sb.shim("rustc", "echo 'rustc 1.85.0 (stable)'");
            sb.shim(
                "cargo",
                &format!(
                    "[ \"$*\" = '{CARGO_BUILD}' ] || {{ echo \"cargo shim: unexpected: $*\" >&2; exit 1; }}"
                ),
            );
            symlink(env!("CARGO_BIN_EXE_sluice"), sb.root.join("target/release/sluice"))
                .expect("linking the sluice binary");
        }
        sb
    }

    /// A bash script `bin/NAME` that appends its arguments to `logs/NAME`
    /// as one line, then runs `body`.
    fn shim(&self, name: &str, body: &str) {
        let log = self.root.join("logs").join(name);
        let path = self.root.join("bin").join(name);
        let text = format!("#!/bin/bash\nprintf '%s\\n' \"$*\" >> '{}'\n{body}\n", log.display());
        std::fs::write(&path, text).expect("writing a shim");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("making a shim executable");
    }

    /// The argument lines `name` was called with.
    fn calls(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.root.join("logs").join(name))
            .map(|s| s.lines().map(String::from).collect())
            .unwrap_or_default()
    }

    /// The packages apt-get was asked to install.
    fn apt_installs(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .calls("apt-get")
            .iter()
            .filter(|l| l.split_whitespace().any(|w| w == "install"))
            .flat_map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
            .filter(|w| w != "install" && !w.starts_with('-'))
            .collect();
        v.sort();
        v
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The script while it runs: on drop, kills it (by PID) if still running and
/// removes whatever namespace or veth carries its PID the way the demo
/// names them (`sl{tag}{pid}x{n}`, `va{pid}x{n}`, `vb{pid}x{n}`).
struct Running {
    child: Child,
    pid: u32,
}

fn namespaces_of(pid: u32) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().expect("ip netns list");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("sl") && n.contains(&format!("{pid}x")))
        .map(String::from)
        .collect()
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        for ns in namespaces_of(self.pid) {
            let _ = Command::new("ip").args(["netns", "del", &ns]).status();
        }
        let out = Command::new("ip").args(["-o", "link", "show"]).output();
        let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
        for name in text.lines().filter_map(|l| l.split(": ").nth(1)) {
            let name = name.split('@').next().unwrap_or(name);
            if ["va", "vb"].iter().any(|p| name.starts_with(&format!("{p}{}x", self.pid))) {
                let _ = Command::new("ip").args(["link", "del", name]).status();
            }
        }
    }
}

struct Outcome {
    status: Option<ExitStatus>,
    stdout: String,
    stderr: String,
    /// Namespaces named after the script's PID still there when it ended.
    left: Vec<String>,
}

/// Runs `scripts/demo ARGS` in the sandbox, for at most `secs` seconds.
fn run_demo(sb: &Sandbox, args: &[&str], secs: u64) -> Outcome {
    assert!(sluice_datapath::ports::testutil::is_root(), "scripts/demo needs root here");
    let child = Command::new(repo_root().join("scripts/demo"))
        .args(args)
        .env_clear()
        .env("PATH", sb.root.join("bin"))
        .env("HOME", &sb.root)
        .env("CARGO_TARGET_DIR", sb.root.join("target"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning scripts/demo");
    let pid = child.id();
    let mut run = Running { child, pid };
    // Read both pipes while it runs so that it never blocks on a full one.
    let readers: Vec<_> = [
        Box::new(run.child.stdout.take().unwrap()) as Box<dyn Read + Send>,
        Box::new(run.child.stderr.take().unwrap()),
    ]
    .into_iter()
    .map(|mut r| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    })
    .collect();
    let deadline = Instant::now() + Duration::from_secs(secs);
    let status = loop {
        if let Ok(Some(st)) = run.child.try_wait() {
            break Some(st);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let left = namespaces_of(pid);
    drop(run);
    let mut out = readers.into_iter().map(|t| t.join().unwrap_or_default());
    let (stdout, stderr) = (out.next().unwrap_or_default(), out.next().unwrap_or_default());
    Outcome { status, stdout, stderr, left }
}

#[test]
fn demo_script_installs_only_the_demos_packages_and_runs_on_stable() {
    let sb = Sandbox::new("ok", Options { apt_status: 0, rust: true });
    let o = run_demo(&sb, &["--hosts", "2", "--seconds", "1"], 180);
    let report = format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}\n--- apt-get calls\n{:#?}\n--- cargo calls\n{:#?}",
        o.status,
        o.stdout,
        o.stderr,
        sb.calls("apt-get"),
        sb.calls("cargo")
    );
    assert!(o.status.is_some_and(|s| s.success()), "scripts/demo failed:\n{report}");
    for want in ["── summary ──", "h1 -> h2 (10.0.0.2): 4/4 replies", "nothing left behind"]
    {
        assert!(o.stdout.contains(want), "the demo's output lacks {want:?}:\n{report}");
    }
    assert_eq!(o.left, Vec::<String>::new(), "namespaces left behind:\n{report}");

    let mut want: Vec<String> = DEMO_PACKAGES.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(
        sb.apt_installs(),
        want,
        "apt was not asked for exactly the demo's packages:\n{report}"
    );
    for call in sb.calls("apt-get") {
        for w in TEST_ONLY {
            assert!(!call.contains(w), "apt was asked for a test-only package ({w}):\n{report}");
        }
    }
    assert_eq!(sb.calls("cargo"), [CARGO_BUILD], "cargo asked for more than the build:\n{report}");
    assert_eq!(
        sb.calls("rustup"),
        Vec::<String>::new(),
        "scripts/demo asked rustup about toolchains; stable is enough:\n{report}"
    );
}

#[test]
fn demo_script_stops_loudly_when_apt_fails() {
    let sb = Sandbox::new("apt", Options { apt_status: 100, rust: true });
    let o = run_demo(&sb, &["--hosts", "2", "--seconds", "1"], 60);
    let report =
        format!("status {:?}\n--- stdout\n{}\n--- stderr\n{}", o.status, o.stdout, o.stderr);
    assert!(o.status.is_some_and(|s| !s.success()), "a failed install must fail:\n{report}");
    assert!(o.stderr.contains("install-deps: apt-get"), "no clear message:\n{report}");
    assert!(!o.stdout.contains("sluice demo:"), "the demo ran anyway:\n{report}");
    assert_eq!(sb.calls("cargo"), Vec::<String>::new(), "cargo ran anyway:\n{report}");
}

#[test]
fn demo_script_stops_loudly_without_rust() {
    let sb = Sandbox::new("norust", Options { apt_status: 0, rust: false });
    let o = run_demo(&sb, &["--hosts", "2", "--seconds", "1"], 60);
    let report =
        format!("status {:?}\n--- stdout\n{}\n--- stderr\n{}", o.status, o.stdout, o.stderr);
    assert!(o.status.is_some_and(|s| !s.success()), "a missing cargo must fail:\n{report}");
    assert!(
        o.stderr.contains("'cargo' not found") && o.stderr.contains("stable is enough"),
        "no clear message:\n{report}"
    );
    assert!(!o.stdout.contains("sluice demo:"), "the demo ran anyway:\n{report}");
}
