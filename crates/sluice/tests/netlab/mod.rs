//! Test support for tests that drive the real `sluice` binary: scratch
//! directories, `sluice ctl` runs, filter programs compiled with clang, and
//! a lab of hosts in network namespaces joined by veths to a switch
//! namespace where `sluice run` has its AF_PACKET ports.
//!
//! Cleanup: every scratch directory, child process (killed by its PID) and
//! namespace (deleting it deletes the veths in it) is removed by a `Drop`
//! guard, also when a test panics half-way. Every wait is bounded.
//! Nothing is created in the root namespace.
//!
//! Missing tools fail the test with what to install (`scripts/install-deps`
//! installs them all); nothing is skipped.
#![allow(dead_code, unused_imports)]

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub use sluice_datapath::ports::testutil::{is_root, unique_name, NetNs, RawSocket};

/// Longest any one `sluice ctl` may run before it is killed.
pub const CTL_LIMIT: Duration = Duration::from_secs(60);

/// Whether `tool` is on `PATH`.
pub fn have(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
}

/// Panics unless running as root with every one of `tools` on `PATH`.
pub fn need_root_and(tools: &[&str]) {
    assert!(is_root(), "needs root (network namespaces)");
    for t in tools {
        assert!(have(t), "`{t}` is not installed (scripts/install-deps installs it)");
    }
}

/// A local TCP port nobody listened on a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// A scratch directory of this test process, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("sluice-t-{}-{n}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `examples/bpf`, where the example programs and `sluice_bpf.h` live.
pub fn examples_bpf() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bpf")
}

/// Compiles the C file `src` to `DIR/NAME.o` for the BPF target (with
/// `examples/bpf` on the include path); panics if clang is missing or fails.
pub fn clang_file(dir: &Scratch, name: &str, src: &Path) -> PathBuf {
    let o = dir.path(&format!("{name}.o"));
    let out = Command::new("clang")
        .args(["-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu"])
        .arg(format!("-I{}", examples_bpf().display()))
        .arg("-c")
        .arg(src)
        .arg("-o")
        .arg(&o)
        .output();
    match out {
        Ok(o2) if o2.status.success() => o,
        Ok(o2) => panic!("clang failed on {name}: {}", String::from_utf8_lossy(&o2.stderr)),
        Err(e) => panic!("clang is required for this test (scripts/install-deps installs it): {e}"),
    }
}

/// Compiles C source text `src` to `DIR/NAME.o` (see [`clang_file`]).
pub fn clang(dir: &Scratch, name: &str, src: &str) -> PathBuf {
    let c = dir.path(&format!("{name}.c"));
    std::fs::write(&c, src).expect("write the program");
    clang_file(dir, name, &c)
}

/// Compiles the example `examples/bpf/NAME.c` to `DIR/NAME.o`.
pub fn clang_example(dir: &Scratch, name: &str) -> PathBuf {
    clang_file(dir, name, &examples_bpf().join(format!("{name}.c")))
}

/// What one `sluice ctl` printed.
pub struct Out {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn ok(&self) -> bool {
        self.status.success()
    }
}

impl std::fmt::Display for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}\nstdout:\n{}\nstderr:\n{}", self.status, self.stdout, self.stderr)
    }
}

/// A child killed by PID if still running when dropped.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// `sluice ctl TARGET ARGS... --timeout 30`, bounded by [`CTL_LIMIT`].
/// Output goes to files (a dump may be larger than a pipe holds).
pub fn ctl(target: &str, args: &[&str]) -> Out {
    let dir = Scratch::new("out");
    let (o, e) = (dir.path("stdout"), dir.path("stderr"));
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("ctl")
        .arg(target)
        .args(args)
        .args(["--timeout", "30"])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&o).expect("stdout file"))
        .stderr(std::fs::File::create(&e).expect("stderr file"))
        .spawn()
        .expect("run sluice ctl");
    let mut g = Guard(child);
    let deadline = Instant::now() + CTL_LIMIT;
    let status = loop {
        if let Some(s) = g.0.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "sluice ctl {args:?} ran over {CTL_LIMIT:?}");
        std::thread::sleep(Duration::from_millis(10));
    };
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into();
    Out { status, stdout: read(&o), stderr: read(&e) }
}

/// [`ctl`] that must succeed.
pub fn ok(target: &str, args: &[&str]) -> Out {
    let o = ctl(target, args);
    assert!(o.ok(), "sluice ctl {args:?} failed: {o}");
    o
}

/// [`ctl`] that must fail with every one of `wanted` in its stderr.
pub fn fails(target: &str, args: &[&str], wanted: &[&str]) -> Out {
    let o = ctl(target, args);
    assert!(!o.ok(), "sluice ctl {args:?} should fail: {o}");
    for w in wanted {
        assert!(o.stderr.contains(w), "sluice ctl {args:?}: no `{w}` in stderr: {o}");
    }
    o
}

/// Bytes as lower-case hex, as `sluice ctl` reads and prints map keys and
/// values.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `n_packets` of the one flow in `dump` (a `dump-flows` output) that
/// contains every one of `parts`; panics unless exactly one does.
pub fn n_packets(dump: &str, parts: &[&str]) -> u64 {
    let lines: Vec<&str> = dump.lines().filter(|l| parts.iter().all(|p| l.contains(p))).collect();
    assert_eq!(lines.len(), 1, "want one flow with {parts:?} in:\n{dump}");
    lines[0]
        .split([',', ' '])
        .find_map(|t| t.strip_prefix("n_packets="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no n_packets in {}", lines[0]))
}

/// A child process whose stdout and stderr go to a log file (a pipe nobody
/// reads could fill up and stall it); killed by its PID and reaped on
/// drop, when a failing test also sees the log's tail. The one process
/// handle of these tests: `sluice run` ([`Proc::sluice_run`]) and the
/// peers beside it.
pub struct Proc {
    what: String,
    child: Child,
    log: PathBuf,
    /// Whether the log is this handle's own temporary file, removed on drop.
    own_log: bool,
}

impl Proc {
    pub fn spawn(what: &str, cmd: &mut Command, log: PathBuf) -> Proc {
        let out = std::fs::File::create(&log).expect("log file");
        let err = out.try_clone().expect("log file");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {what}: {e}"));
        Proc { what: what.to_string(), child, log, own_log: false }
    }

    /// [`Proc::spawn`] with the log in a temporary file of its own,
    /// removed on drop.
    pub fn spawn_logged(what: &str, cmd: &mut Command) -> Proc {
        let tag = what.split_whitespace().collect::<Vec<_>>().join("-");
        let log = std::env::temp_dir().join(format!("{}.log", unique_name(&format!("{tag}-"))));
        let mut p = Proc::spawn(what, cmd, log);
        p.own_log = true;
        p
    }

    /// `sluice run ARGS` with `RUST_LOG=info` (tests that run switches
    /// side by side pass `--no-control-socket`).
    pub fn sluice_run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Proc {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
        cmd.arg("run").args(args).env("RUST_LOG", "info");
        Proc::spawn_logged("sluice run", &mut cmd)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The exit status, if the process has exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Panics (with the log) if the process has exited.
    pub fn assert_running(&mut self) {
        if let Ok(Some(st)) = self.child.try_wait() {
            panic!("{} exited early ({st}):\n{}", self.what, self.log());
        }
    }

    /// Waits (bounded: 30 s) until something listens on 127.0.0.1:`port`,
    /// panicking with the log if the process exits first.
    pub fn wait_listening(&mut self, port: u16) {
        self.wait_listening_within(port, Duration::from_secs(30));
    }

    /// [`Proc::wait_listening`] bounded by `limit`.
    pub fn wait_listening_within(&mut self, port: u16, limit: Duration) {
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return;
            }
            self.assert_running();
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{} did not listen on {addr} within {limit:?}:\n{}", self.what, self.log());
    }

    /// Waits (bounded by `limit`) until the log contains `text`.
    pub fn wait_log(&mut self, text: &str, limit: Duration) -> String {
        self.wait_log_n(text, 1, limit)
    }

    /// Waits (bounded by `limit`) until `text` occurs at least `count`
    /// times in the log; returns the log.
    pub fn wait_log_n(&mut self, text: &str, count: usize, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let log = self.log();
            if log.matches(text).count() >= count {
                return log;
            }
            self.assert_running();
            assert!(
                Instant::now() < deadline,
                "{} did not log `{text}` {count} time(s) within {limit:?}:\n{log}",
                self.what
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends the process signal `sig` (a name `kill` takes: `HUP`, `TERM`).
    pub fn signal(&self, sig: &str) {
        let st = Command::new("kill").arg(format!("-{sig}")).arg(self.pid().to_string()).status();
        assert!(st.is_ok_and(|s| s.success()), "kill -{sig} {} failed", self.what);
    }

    /// [`Proc::stop_within`] 10 s.
    pub fn stop(self) -> (bool, String) {
        self.stop_within(Duration::from_secs(10))
    }

    /// SIGTERM, then up to `limit` for the exit (killed after that):
    /// whether it exited successfully, and its log. Prints how long the
    /// exit took.
    pub fn stop_within(mut self, limit: Duration) -> (bool, String) {
        let _ = Command::new("kill").args(["-TERM", &self.pid().to_string()]).status();
        let start = Instant::now();
        let ok = loop {
            if let Some(st) = self.try_wait() {
                let secs = start.elapsed().as_secs_f64();
                println!("{} exited {secs:.2} s after SIGTERM", self.what);
                break st.success();
            }
            if start.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break false;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        (ok, self.log())
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // A no-op once the child is reaped (no signal to a reused PID).
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = self.log();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            eprintln!("--- {} log (last 40 lines) ---", self.what);
            for l in tail.iter().rev() {
                eprintln!("{l}");
            }
        }
        if self.own_log {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

/// Hosts in their own namespaces, host `i` at `10.OCTET.0.(i+1)/24` with
/// MAC `02:00:00:00:OCTET:(i+1)`, each joined by a veth to the switch
/// namespace, whose end becomes switch port `i + 1`.
pub struct Lab {
    pub h: Vec<NetNs>,
    pub sw: NetNs,
    pub sw_if: Vec<String>,
    pub host_if: Vec<String>,
    octet: u8,
}

impl Lab {
    pub fn new(hosts: usize, octet: u8) -> Lab {
        let sw = NetNs::new("sw").expect("switch namespace");
        let mut lab = Lab { h: Vec::new(), sw, sw_if: Vec::new(), host_if: Vec::new(), octet };
        for i in 0..hosts {
            let h = NetNs::new("h").expect("host namespace");
            let s_if = unique_name("ls");
            let h_if = unique_name("lh");
            lab.sw
                .exec(&["ip", "link", "add", &s_if, "type", "veth", "peer", "name", &h_if])
                .expect("veth");
            lab.sw.exec(&["ip", "link", "set", &h_if, "netns", h.name()]).expect("veth to host");
            lab.sw.exec(&["ip", "link", "set", &s_if, "up"]).expect("switch end up");
            h.exec(&["ip", "link", "set", "dev", &h_if, "address", &lab.mac(i)]).expect("mac");
            h.exec(&["ip", "addr", "add", &format!("{}/24", lab.ip(i)), "dev", &h_if])
                .expect("host address");
            h.exec(&["ip", "link", "set", &h_if, "up"]).expect("host end up");
            lab.h.push(h);
            lab.sw_if.push(s_if);
            lab.host_if.push(h_if);
        }
        lab
    }

    pub fn ipv4(&self, i: usize) -> Ipv4Addr {
        Ipv4Addr::new(10, self.octet, 0, i as u8 + 1)
    }

    pub fn ip(&self, i: usize) -> String {
        self.ipv4(i).to_string()
    }

    pub fn mac_bytes(&self, i: usize) -> [u8; 6] {
        [2, 0, 0, 0, self.octet, i as u8 + 1]
    }

    pub fn mac(&self, i: usize) -> String {
        self.mac_bytes(i).iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
    }

    /// Host `i`'s address behind a router ([`Lab::behind_router`]):
    /// 10.OCTET.(i+1).2.
    pub fn routed_ip(&self, i: usize) -> Ipv4Addr {
        Ipv4Addr::new(10, self.octet, i as u8 + 1, 2)
    }

    /// A permanent neighbour on host `at`: `ip` is at `mac` (for programs
    /// that answer no ARP).
    pub fn neighbour(&self, at: usize, ip: &str, mac: &str) {
        let dev = self.host_if[at].as_str();
        let neigh = ["ip", "neigh", "replace", ip, "lladdr", mac, "dev", dev, "nud", "permanent"];
        self.h[at].exec(&neigh).expect("static neighbour");
    }

    /// Every host in a subnet of its own behind a router: host `i` at
    /// [`Lab::routed_ip`]`/24`, its default route via 10.OCTET.(i+1).1,
    /// the router's port, whose MAC `gw_mac(i)` is a permanent neighbour.
    pub fn behind_router(&self, gw_mac: impl Fn(usize) -> String) {
        for (i, h) in self.h.iter().enumerate() {
            let dev = self.host_if[i].as_str();
            let gw = format!("10.{}.{}.1", self.octet, i + 1);
            let addr = format!("{}/24", self.routed_ip(i));
            h.exec(&["ip", "addr", "flush", "dev", dev]).expect("flush");
            h.exec(&["ip", "addr", "add", &addr, "dev", dev]).expect("addr");
            h.exec(&["ip", "route", "add", "default", "via", &gw]).expect("route");
            self.neighbour(i, &gw, &gw_mac(i));
        }
    }

    /// `--port afpacket:IF=N` for every host.
    pub fn port_args(&self) -> Vec<String> {
        self.sw_if
            .iter()
            .enumerate()
            .flat_map(|(i, n)| ["--port".to_string(), format!("afpacket:{n}={}", i + 1)])
            .collect()
    }

    /// `ping -c COUNT` from host `from` to host `to`.
    pub fn ping(&self, from: usize, to: usize, count: u32) -> Output {
        Command::new("ip")
            .args(["netns", "exec", self.h[from].name(), "ping", "-n", "-c"])
            .arg(count.to_string())
            .args(["-i", "0.2", "-W", "1"])
            .arg(self.ip(to))
            .output()
            .expect("running ping")
    }

    /// Pings from `from` to `to` until one round trip works or `limit`
    /// passes.
    pub fn ping_ok_within(&self, from: usize, to: usize, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.ping(from, to, 1).status.success() {
                return true;
            }
        }
        false
    }

    /// Starts `sluice run --netns SW ARGS... --port ...` with its log in
    /// `dir`.
    pub fn start_switch(&self, dir: &Scratch, args: &[&str]) -> Proc {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
        cmd.arg("run")
            // Tests run switches side by side: no shared control socket.
            .arg("--no-control-socket")
            .args(["--netns", self.sw.name()])
            .args(args)
            .args(self.port_args())
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1");
        Proc::spawn("sluice run", &mut cmd, dir.path("sluice.log"))
    }

    /// [`Lab::start_switch`] in fail mode secure with a passive listener
    /// on a free local port, once it listens; the switch and the
    /// `sluice ctl` target of the listener.
    pub fn start_secure_switch(&self, dir: &Scratch) -> (Proc, String) {
        let port = free_port();
        let listen = format!("ptcp:{port}:127.0.0.1");
        let mut sw = self.start_switch(dir, &["--listen", &listen, "--fail-mode", "secure"]);
        sw.wait_listening(port);
        (sw, format!("tcp:127.0.0.1:{port}"))
    }
}

/// Sends `data` over TCP from namespace `from` to `to` (a listener bound
/// in namespace `into`) and returns what the receiver read until the
/// sender closed; every step bounded (10 s to connect, 30 s per read or
/// write).
pub fn tcp_transfer(
    from: &NetNs,
    into: &NetNs,
    to: std::net::SocketAddrV4,
    data: &[u8],
) -> Vec<u8> {
    use std::io::{Read, Write};
    let l = into.enter(|| std::net::TcpListener::bind(to)).expect("listen");
    let receiver = std::thread::spawn(move || -> std::io::Result<Vec<u8>> {
        let (mut s, _) = l.accept()?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut got = Vec::new();
        s.read_to_end(&mut got)?;
        Ok(got)
    });
    from.enter(|| -> std::io::Result<()> {
        let mut s = TcpStream::connect_timeout(&SocketAddr::V4(to), Duration::from_secs(10))?;
        s.set_write_timeout(Some(Duration::from_secs(30)))?;
        s.write_all(data)?;
        s.shutdown(std::net::Shutdown::Write)
    })
    .expect("send over TCP");
    receiver.join().expect("receiver thread").expect("receive")
}
