//! The local control socket: `sluice run` listens on `RUNDIR/NAME.mgmt`
//! (mode 0660) and `sluice ctl` finds it without a target (the only one in
//! the run directory) or by the switch's name; a stale socket file is taken
//! over, a second switch of the same name is refused before it opens its
//! ports, a file that is not a socket is left alone, and the socket goes
//! away when the switch stops on SIGTERM. `--no-control-socket` and
//! `--listen punix:PATH` too.
//!
//! Pcap ports, no root, no network. Each test has its own scratch directory
//! as the run directory; every switch is this test's child, stopped by PID
//! (SIGTERM, then SIGKILL) in a guard; every wait is bounded.

mod pcap_switch;

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// A scratch directory (also the run directory), removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("sluice-ctlsock-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("scratch dir");
        for i in 1..=2 {
            pcap_switch::write_empty_pcap(&d.join(format!("in{i}.pcap")));
        }
        Scratch(d)
    }

    fn rundir(&self) -> &Path {
        &self.0
    }

    fn socket(&self, name: &str) -> PathBuf {
        self.0.join(format!("{name}.mgmt"))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A `sluice run` this test started; stopped by PID on drop.
struct Switch {
    child: Option<Child>,
    log: PathBuf,
}

impl Switch {
    /// `sluice run --rundir DIR --name NAME` on two pcap ports (outputs
    /// named after the switch), plus `extra`.
    fn spawn(dir: &Scratch, name: &str, extra: &[&str]) -> Switch {
        let log = dir.0.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).expect("log file");
        let ports: Vec<String> =
            (1..=2).map(|i| format!("pcap:in{i}.pcap,out={name}-out{i}.pcap={i}")).collect();
        let child = Command::new(SLUICE)
            .args(["run", "--workers", "1", "--name", name])
            .arg("--rundir")
            .arg(dir.rundir())
            .args(["--port", &ports[0], "--port", &ports[1]])
            .args(extra)
            .current_dir(&dir.0)
            .env_remove("SLUICE_RUNDIR")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("spawning sluice run");
        Switch { child: Some(child), log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits (at most 20 s) until `path` accepts connections.
    fn wait_listening(&mut self, path: &Path) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while UnixStream::connect(path).is_err() {
            if let Some(st) = self.exited() {
                panic!("sluice run exited ({st}) before listening:\n{}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "{} never listened:\n{}",
                path.display(),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    /// Waits (at most 20 s) for the switch to exit on its own.
    fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(st) = self.exited() {
                self.child = None;
                return st;
            }
            assert!(Instant::now() < deadline, "sluice run did not exit:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, then the exit status (bounded wait).
    fn terminate(&mut self) -> ExitStatus {
        let pid = self.child.as_ref().expect("running").id();
        let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status();
        self.wait_exit()
    }
}

impl Drop for Switch {
    /// SIGTERM (a clean stop), SIGKILL after 5 s; only our own child.
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `sluice ctl --timeout 20 ARGS` (no `$SLUICE_RUNDIR` unless `env` sets it).
fn ctl(args: &[&str], env: Option<&Path>) -> Output {
    let mut c = Command::new(SLUICE);
    c.args(["ctl", "--timeout", "20"]).args(args).env_remove("SLUICE_RUNDIR");
    if let Some(d) = env {
        c.env("SLUICE_RUNDIR", d);
    }
    c.stdin(Stdio::null()).output().expect("running sluice ctl")
}

fn ok(args: &[&str], env: Option<&Path>) -> String {
    let out = ctl(args, env);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{args:?}: {}{text}", String::from_utf8_lossy(&out.stderr));
    text
}

fn fails(args: &[&str]) -> String {
    let out = ctl(args, None);
    assert!(!out.status.success(), "{args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn is_socket(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket())
}

#[test]
fn ctl_finds_the_switch_by_itself_and_by_name() {
    let d = Scratch::new("find");
    let rd = d.rundir().to_str().expect("utf-8 temp path");
    let sock = d.socket("t1");
    let mut sw = Switch::spawn(&d, "t1", &[]);
    sw.wait_listening(&sock);

    let mode = std::fs::metadata(&sock).expect("socket").permissions().mode() & 0o777;
    assert_eq!(mode, 0o660, "socket mode {mode:o}");

    // No target: the only socket in the run directory.
    let text = ok(&["--rundir", rd, "dump-flows"], None);
    assert!(text.contains("OFPST_FLOW reply"), "{text}");
    // By name, both orders; the run directory from the environment too.
    ok(&["--rundir", rd, "t1", "add-flow", "priority=7,in_port=1,actions=output:2"], None);
    let want = "priority=7,in_port=1 actions=output:2";
    let text = ok(&["--rundir", rd, "dump-flows"], None);
    assert!(text.contains(want), "{text}");
    let text = ok(&["dump-flows", "t1"], Some(d.rundir()));
    assert!(text.contains(want), "{text}");
    let text = ok(&["t1", "dump-flows", "priority=7,in_port=1"], Some(d.rundir()));
    assert!(text.contains(want), "{text}");
    // An explicit unix: target is the same socket.
    let text = ok(&[&format!("unix:{}", sock.display()), "dump-flows"], None);
    assert!(text.contains(want), "{text}");

    // A second switch of the same name is refused before it opens ports.
    let mut twin = Switch::spawn(&d, "t1", &[]);
    let st = twin.wait_exit();
    let log = twin.log();
    assert!(!st.success(), "the twin ran:\n{log}");
    assert!(
        log.contains("another switch named t1") && log.contains(&sock.display().to_string()),
        "{log}"
    );
    assert!(!log.contains("datapath started"), "the twin opened its ports:\n{log}");
    assert!(ok(&["--rundir", rd, "t1", "dump-flows"], None).contains(want));

    // Two switches: a bare command must say which there are.
    let mut t2 = Switch::spawn(&d, "t2", &[]);
    t2.wait_listening(&d.socket("t2"));
    let e = fails(&["--rundir", rd, "dump-flows"]);
    assert!(e.contains("2 switches") && e.contains("t1, t2") && e.contains("sluice ctl t1"), "{e}");
    let text = ok(&["--rundir", rd, "t2", "dump-flows"], None);
    assert!(!text.contains(want), "t2 has t1's flow:\n{text}");
    assert!(t2.terminate().success(), "{}", t2.log());

    // SIGTERM: a clean exit removes the socket.
    let st = sw.terminate();
    assert!(st.success(), "exit {st}:\n{}", sw.log());
    assert!(!sock.exists(), "the socket outlived the switch");
    let e = fails(&["--rundir", rd, "dump-flows"]);
    assert!(e.contains("no control socket"), "{e}");
    let e = fails(&["--rundir", rd, "t1", "dump-flows"]);
    assert!(e.contains("no switch of that name") && e.contains("t1.mgmt"), "{e}");
}

#[test]
fn a_stale_socket_is_taken_over_and_a_file_is_left_alone() {
    let d = Scratch::new("stale");
    let rd = d.rundir().to_str().expect("utf-8 temp path");
    // A socket file nobody listens on, as a killed switch leaves it.
    let sock = d.socket("t3");
    drop(UnixListener::bind(&sock).expect("stale socket"));
    assert!(is_socket(&sock));
    let mut sw = Switch::spawn(&d, "t3", &[]);
    sw.wait_listening(&sock);
    assert!(ok(&["--rundir", rd, "t3", "show"], None).contains("OFPT_FEATURES_REPLY"));
    // A switch that dies without cleaning up leaves a stale file again,
    // which the next one takes over.
    let pid = sw.child.as_ref().expect("running").id();
    let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    sw.wait_exit();
    assert!(is_socket(&sock), "SIGKILL cannot remove the socket");
    let mut again = Switch::spawn(&d, "t3", &[]);
    again.wait_listening(&sock);
    assert!(ok(&["--rundir", rd, "dump-flows"], None).contains("OFPST_FLOW reply"));
    assert!(again.terminate().success(), "{}", again.log());
    assert!(!sock.exists());

    // Not a socket: refused, named, and kept.
    let file = d.socket("t4");
    std::fs::write(&file, b"keep me").unwrap();
    let mut sw = Switch::spawn(&d, "t4", &[]);
    let st = sw.wait_exit();
    let log = sw.log();
    assert!(!st.success(), "ran over a regular file:\n{log}");
    assert!(log.contains(&file.display().to_string()) && log.contains("not a socket"), "{log}");
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
}

#[test]
fn no_control_socket_and_an_explicit_punix_listener() {
    let d = Scratch::new("punix");
    let rd = d.rundir().to_str().expect("utf-8 temp path");
    let sock = d.0.join("explicit.sock");
    let listen = format!("punix:{}", sock.display());
    let mut sw = Switch::spawn(&d, "t5", &["--no-control-socket", "--listen", &listen]);
    sw.wait_listening(&sock);
    assert!(!d.socket("t5").exists(), "--no-control-socket opened one");
    let mode = std::fs::metadata(&sock).expect("socket").permissions().mode() & 0o777;
    assert_eq!(mode, 0o660, "socket mode {mode:o}");
    let target = format!("unix:{}", sock.display());
    ok(&[&target, "add-flow", "priority=3,actions=drop"], None);
    assert!(ok(&["dump-flows", &target], None).contains("priority=3 actions=drop"));
    let e = fails(&["--rundir", rd, "dump-flows"]);
    assert!(e.contains("no control socket") && e.contains(rd), "{e}");
    assert!(sw.terminate().success(), "{}", sw.log());
    assert!(!sock.exists(), "the punix: socket outlived the switch");
}

#[test]
fn check_prints_the_control_socket() {
    let out = Command::new(SLUICE)
        .args(["run", "--check", "--port", "afpacket:v1", "--name", "lab", "--rundir", "/x/y"])
        .env_remove("SLUICE_RUNDIR")
        .output()
        .expect("running sluice run --check");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("name: lab") && text.contains("control socket: /x/y/lab.mgmt"), "{text}");
    assert!(text.contains("listen: punix:/x/y/lab.mgmt"), "{text}");
    let out = Command::new(SLUICE)
        .args(["run", "--check", "--port", "afpacket:v1", "--no-control-socket"])
        .output()
        .expect("running sluice run --check");
    assert!(String::from_utf8_lossy(&out.stdout).contains("control socket: off"));
    let out = Command::new(SLUICE)
        .args(["run", "--check", "--port", "afpacket:v1", "--name", "a/b"])
        .output()
        .expect("running sluice run --check");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--name"), "{err}");
}
