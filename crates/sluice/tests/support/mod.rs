//! Test support shared by sluice's integration tests: a private Open vSwitch
//! and a recording OpenFlow proxy, plus the fixture file format.
//!
//! # What
//! [`Ovs::start`] runs a private Open vSwitch 3.1 (`ovsdb-server` +
//! `ovs-vswitchd`, userspace `netdev` datapath) whose `ovs-vswitchd` lives
//! in its own network namespace, with bridge [`BRIDGE`] speaking only
//! OpenFlow 1.3 and a passive unix-socket listener (`punix:`).
//! [`Ovs::record`] runs `ovs-ofctl -O OpenFlow13 CMD tcp:127.0.0.1:PORT`
//! against a recording proxy in this process: the proxy accepts the TCP
//! connection, connects to the switch's unix socket, relays both directions
//! and splits each into OpenFlow messages by the 8-byte header's length
//! field. Both the requests `ovs-ofctl` sends and the replies OVS returns
//! are "messages produced by a real peer".
//!
//! # Why a unix socket
//! `ovs-vswitchd` runs in a private network namespace (its `netdev`
//! datapath creates `ovs-netdev` tap devices that would clash with any
//! other userspace OVS), so a `ptcp:` listener would be reachable only from
//! inside that namespace. Unix sockets are named in the file system, not in
//! the network namespace, so the proxy (in the test process) reaches it
//! directly and `ovs-ofctl` needs no `ip netns exec`.
//!
//! # Cleanup
//! [`Ovs`]'s `Drop` kills exactly the two daemons it started (by PID, after
//! checking `/proc/PID/comm`), deletes its namespace and its temporary
//! directory, also when the test panics half-way. Every wait is bounded.
//!
//! # Framing
//! Framing uses only the 8-byte `ofp_header` (std only, no codec): a
//! length below 8 cannot be framed, so the rest of that direction is
//! recorded as one raw chunk and the proxy stops splitting it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The bridge every scenario talks to.
pub const BRIDGE: &str = "br0";
/// Ports added to the bridge as `internal` interfaces (tap devices in the
/// namespace), with these OpenFlow port numbers.
pub const PORTS: &[(&str, u32)] = &[("p1", 1), ("p2", 2), ("p3", 3)];

const SCHEMA: &str = "/usr/share/openvswitch/vswitch.ovsschema";
const TOOLS: &[&str] =
    &["ip", "ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl"];
const INSTALL_HINT: &str = "apt-get install -y openvswitch-switch openvswitch-common iproute2";

/// Direction of one recorded message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// From the client (`ovs-ofctl`) to the switch: written `>` in fixtures.
    ToSwitch,
    /// From the switch to the client: written `<` in fixtures.
    FromSwitch,
}

impl Dir {
    pub fn marker(self) -> char {
        match self {
            Dir::ToSwitch => '>',
            Dir::FromSwitch => '<',
        }
    }
}

/// A step run while a connection is open (triggers asynchronous messages).
pub type Hook = fn(&Ovs) -> Result<(), String>;

/// One framed message (or an unframeable tail, see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Index of the client connection within one [`Ovs::record`] call.
    pub conn: u32,
    pub dir: Dir,
    pub bytes: Vec<u8>,
}

/// What one recorded command produced.
#[derive(Clone, Debug)]
pub struct Capture {
    /// The command line as run, with the switch target written `BR`.
    pub command: String,
    pub status_ok: bool,
    pub stdout: String,
    pub stderr: String,
    pub records: Vec<Record>,
    /// Notes on records left out of the fixture (written as comments).
    pub omitted: Vec<String>,
}

fn which(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
        || Path::new("/usr/sbin").join(tool).is_file()
}

/// Fails (with an install hint) if any tool the harness needs is missing.
pub fn check_tools() -> Result<(), String> {
    let missing: Vec<&str> = TOOLS.iter().copied().filter(|t| !which(t)).collect();
    if !missing.is_empty() {
        return Err(format!("missing {} (install with: {INSTALL_HINT})", missing.join(", ")));
    }
    if !Path::new(SCHEMA).is_file() {
        return Err(format!("missing {SCHEMA} (install with: {INSTALL_HINT})"));
    }
    Ok(())
}

/// A private Open vSwitch instance; dropped = stopped and removed.
pub struct Ovs {
    dir: PathBuf,
    netns: Option<String>,
    ovsdb_pid: Option<u32>,
    vswitchd_pid: Option<u32>,
}

static INSTANCE: AtomicU32 = AtomicU32::new(0);

/// Run `cmd`, bounded by `timeout`; returns (success, stdout, stderr).
fn run_bounded(cmd: &mut Command, timeout: Duration) -> Result<(bool, String, String), String> {
    let desc = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {desc}: {e}"))?;
    // Drain the pipes in threads so a chatty child cannot block on them.
    let mut so = child.stdout.take();
    let mut se = child.stderr.take();
    let to = thread::spawn(move || {
        let mut s = String::new();
        if let Some(p) = so.as_mut() {
            let _ = p.read_to_string(&mut s);
        }
        s
    });
    let te = thread::spawn(move || {
        let mut s = String::new();
        if let Some(p) = se.as_mut() {
            let _ = p.read_to_string(&mut s);
        }
        s
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Err(e) => return Err(format!("waiting for {desc}: {e}")),
        }
    };
    let out = to.join().unwrap_or_default();
    let err = te.join().unwrap_or_default();
    match status {
        Some(st) => Ok((st.success(), out, err)),
        None => Err(format!("{desc} did not finish within {timeout:?}; stderr: {err}")),
    }
}

impl Ovs {
    /// Start ovsdb-server, ovs-vswitchd (in a fresh namespace), the bridge
    /// with OpenFlow 1.3 only, its ports and the passive unix listener.
    pub fn start() -> Result<Ovs, String> {
        check_tools()?;
        let n = INSTANCE.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        let dir = std::env::temp_dir().join(format!("sluice-ovs-{pid}-{n}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let mut ovs = Ovs { dir, netns: None, ovsdb_pid: None, vswitchd_pid: None };
        ovs.boot(&format!("sluice-ovs-{pid}-{n}"))?;
        Ok(ovs)
    }

    fn boot(&mut self, ns: &str) -> Result<(), String> {
        let d = self.dir.clone();
        let ds = d.display().to_string();
        let t = Duration::from_secs(30);
        let check = |what: &str, r: (bool, String, String)| -> Result<(), String> {
            if r.0 {
                Ok(())
            } else {
                Err(format!("{what} failed: {}{}", r.1, r.2))
            }
        };
        if Path::new("/run/netns").join(ns).exists() {
            return Err(format!("network namespace {ns} already exists; not touching it"));
        }
        check("ip netns add", run_bounded(Command::new("ip").args(["netns", "add", ns]), t)?)?;
        self.netns = Some(ns.to_string());
        check(
            "ip link set lo up",
            run_bounded(Command::new("ip").args(["-n", ns, "link", "set", "lo", "up"]), t)?,
        )?;
        check(
            "ovsdb-tool create",
            run_bounded(
                self.cmd("ovsdb-tool").args(["create", &format!("{ds}/conf.db"), SCHEMA]),
                t,
            )?,
        )?;
        check(
            "ovsdb-server",
            run_bounded(
                self.cmd("ovsdb-server").args([
                    format!("{ds}/conf.db"),
                    format!("--remote=punix:{ds}/db.sock"),
                    format!("--pidfile={ds}/ovsdb-server.pid"),
                    format!("--log-file={ds}/ovsdb-server.log"),
                    "--detach".into(),
                    "--no-chdir".into(),
                ]),
                t,
            )?,
        )?;
        self.ovsdb_pid = Some(read_pid(&d.join("ovsdb-server.pid"))?);
        self.vsctl(&["--no-wait", "init"])?;
        check(
            "ovs-vswitchd",
            run_bounded(
                self.cmd("ip").args(["netns", "exec", ns, "ovs-vswitchd"]).args([
                    format!("unix:{ds}/db.sock"),
                    format!("--pidfile={ds}/ovs-vswitchd.pid"),
                    format!("--log-file={ds}/ovs-vswitchd.log"),
                    "--detach".into(),
                    "--no-chdir".into(),
                ]),
                t,
            )?,
        )?;
        self.vswitchd_pid = Some(read_pid(&d.join("ovs-vswitchd.pid"))?);
        let mut args: Vec<String> = vec![
            "add-br".into(),
            BRIDGE.into(),
            "--".into(),
            "set".into(),
            "bridge".into(),
            BRIDGE.into(),
            "datapath_type=netdev".into(),
            "protocols=OpenFlow13".into(),
            "fail_mode=secure".into(),
            "other_config:datapath-id=0000000000000001".into(),
        ];
        for (name, no) in PORTS {
            args.extend(
                ["--", "add-port", BRIDGE, name, "--", "set", "interface", name].map(String::from),
            );
            args.push("type=internal".into());
            args.push(format!("ofport_request={no}"));
        }
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        self.vsctl(&a)?;
        // OVS only accepts punix: controllers named after the bridge inside
        // its run directory (it refuses to overwrite arbitrary files).
        let target = format!("punix:{}", self.socket().display());
        self.vsctl(&["set-controller", BRIDGE, &target])?;
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.socket().exists() {
            if Instant::now() > deadline {
                return Err(format!(
                    "{} never appeared; see {ds}/ovs-vswitchd.log",
                    self.socket().display()
                ));
            }
            thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// A command with this instance's OVS_* directories in its environment.
    fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        for v in ["OVS_RUNDIR", "OVS_LOGDIR", "OVS_DBDIR", "OVS_SYSCONFDIR"] {
            c.env(v, &self.dir);
        }
        c
    }

    /// Run `ovs-vsctl ARGS` against this instance.
    pub fn vsctl(&self, args: &[&str]) -> Result<String, String> {
        let (ok, out, err) = run_bounded(
            self.cmd("ovs-vsctl").arg("--timeout=20").args(args),
            Duration::from_secs(30),
        )?;
        if ok {
            Ok(out)
        } else {
            Err(format!("ovs-vsctl {args:?} failed: {err}"))
        }
    }

    /// The passive OpenFlow listener of [`BRIDGE`].
    pub fn socket(&self) -> PathBuf {
        self.dir.join(format!("{BRIDGE}.sluice"))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Run `ovs-ofctl -O OpenFlow13 ARGS` where the literal argument `BR`
    /// is replaced by the proxy's `tcp:` target, and record every message
    /// of every connection it made.
    pub fn record(&self, args: &[&str]) -> Result<Capture, String> {
        let proxy = Proxy::start(self.socket())?;
        let target = format!("tcp:127.0.0.1:{}", proxy.port);
        let real: Vec<&str> =
            args.iter().map(|a| if *a == "BR" { target.as_str() } else { a }).collect();
        let r = run_bounded(
            self.cmd("ovs-ofctl").args(["-O", "OpenFlow13", "--timeout=10"]).args(&real),
            Duration::from_secs(20),
        );
        let records = proxy.finish();
        let (status_ok, stdout, stderr) = r?;
        let command = format!(
            "ovs-ofctl -O OpenFlow13 {}",
            args.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" ")
        );
        Ok(Capture { command, status_ok, stdout, stderr, records, omitted: Vec::new() })
    }

    /// Run `ovs-ofctl -O OpenFlow13 ARGS` straight at the switch's unix
    /// socket (not recorded); fails if ovs-ofctl fails.
    pub fn ofctl_direct(&self, args: &[&str]) -> Result<String, String> {
        let target = format!("unix:{}", self.socket().display());
        let real: Vec<&str> =
            args.iter().map(|a| if *a == "BR" { target.as_str() } else { a }).collect();
        let (ok, out, err) = run_bounded(
            self.cmd("ovs-ofctl").args(["-O", "OpenFlow13", "--timeout=10"]).args(&real),
            Duration::from_secs(20),
        )?;
        if ok {
            Ok(out)
        } else {
            Err(format!("ovs-ofctl {args:?} failed: {err}"))
        }
    }

    /// Like [`Ovs::record`] for a command that never ends by itself
    /// (`monitor`): start it, wait until its connection is set up, run
    /// `during`, then stop it (by its PID) and return what was recorded.
    pub fn record_during(&self, args: &[&str], during: Hook) -> Result<Capture, String> {
        let proxy = Proxy::start(self.socket())?;
        let target = format!("tcp:127.0.0.1:{}", proxy.port);
        let real: Vec<&str> =
            args.iter().map(|a| if *a == "BR" { target.as_str() } else { a }).collect();
        let mut child = self
            .cmd("ovs-ofctl")
            .args(["-O", "OpenFlow13"])
            .args(&real)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run ovs-ofctl: {e}"))?;
        // Wait (bounded) until the monitor has said hello and set its config.
        let deadline = Instant::now() + Duration::from_secs(10);
        while proxy.count() < 4 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(50));
        }
        thread::sleep(Duration::from_millis(300));
        let r = during(self);
        thread::sleep(Duration::from_millis(500));
        let _ = child.kill();
        let _ = child.wait();
        let records = proxy.finish();
        r?;
        let command = format!("ovs-ofctl -O OpenFlow13 {} (while: packet-out to CONTROLLER, add+delete a send_flow_rem flow, add port p4)", args.join(" "));
        Ok(Capture {
            command,
            status_ok: true,
            stdout: String::new(),
            stderr: String::new(),
            records,
            omitted: Vec::new(),
        })
    }

    /// Send hand-written messages (`requests`, each a complete OpenFlow
    /// message) over one connection through the proxy, after a HELLO, and
    /// record everything until `expect_replies` messages came back after
    /// the HELLO or 3 s passed. Used for requests ovs-ofctl cannot send
    /// (role request, get-async, table-mod in OpenFlow 1.3, ...): the
    /// requests are ours, the replies are OVS's.
    pub fn record_raw(
        &self,
        requests: &[Vec<u8>],
        expect_replies: usize,
        during: Option<Hook>,
    ) -> Result<Capture, String> {
        let proxy = Proxy::start(self.socket())?;
        let mut s = TcpStream::connect(("127.0.0.1", proxy.port))
            .map_err(|e| format!("connect proxy: {e}"))?;
        let hello = [4u8, 0, 0, 8, 0, 0, 0, 1];
        s.write_all(&hello).map_err(|e| e.to_string())?;
        for r in requests {
            s.write_all(r).map_err(|e| e.to_string())?;
        }
        s.set_read_timeout(Some(Duration::from_millis(100))).map_err(|e| e.to_string())?;
        let mut got = Vec::new();
        // Until the HELLO and `expect_replies` answers arrived (or 3 s).
        read_until(
            &mut s,
            &mut got,
            Instant::now() + Duration::from_secs(3),
            Some(expect_replies + 1),
        );
        let r = match during {
            Some(f) => {
                let r = f(self);
                // Asynchronous messages: no count known, read for 1.5 s.
                read_until(&mut s, &mut got, Instant::now() + Duration::from_millis(1500), None);
                r
            }
            None => Ok(()),
        };
        let _ = s.shutdown(Shutdown::Both);
        drop(s);
        let records = proxy.finish();
        r?;
        Ok(Capture {
            command: "raw".into(),
            status_ok: true,
            stdout: String::new(),
            stderr: String::new(),
            records,
            omitted: Vec::new(),
        })
    }
}

/// Read from `s` into `got` until `deadline`, or until `want` whole
/// messages are in `got`, or the peer closes.
fn read_until(s: &mut TcpStream, got: &mut Vec<u8>, deadline: Instant, want: Option<usize>) {
    let mut buf = [0u8; 65536];
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break,
        }
        if let Some(w) = want {
            if split_messages(got).0.len() >= w {
                break;
            }
        }
    }
}

fn read_pid(p: &Path) -> Result<u32, String> {
    let s = std::fs::read_to_string(p).map_err(|e| format!("read {}: {e}", p.display()))?;
    s.trim().parse().map_err(|e| format!("bad pid in {}: {e}", p.display()))
}

/// TERM the process if it is still `comm`, wait up to 5 s, then KILL.
fn kill_pid(pid: u32, comm: &str) {
    let proc_comm =
        || std::fs::read_to_string(format!("/proc/{pid}/comm")).map(|s| s.trim().to_string()).ok();
    if proc_comm().as_deref() != Some(comm) {
        return;
    }
    let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if proc_comm().as_deref() != Some(comm) {
            return;
        }
        thread::sleep(Duration::from_millis(50));
    }
    let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
}

impl Drop for Ovs {
    fn drop(&mut self) {
        if let Some(p) = self.vswitchd_pid.take() {
            kill_pid(p, "ovs-vswitchd");
        }
        if let Some(p) = self.ovsdb_pid.take() {
            kill_pid(p, "ovsdb-server");
        }
        if let Some(ns) = self.netns.take() {
            let _ = Command::new("ip").args(["netns", "del", &ns]).status();
        }
        if std::env::var_os("SLUICE_KEEP_OVS_DIR").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn shell_quote(a: &str) -> String {
    if a.chars().all(|c| c.is_ascii_alphanumeric() || "-_.:/=,".contains(c)) {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

/// Split `buf` into whole OpenFlow messages by their header length.
/// Returns the messages and the number of bytes consumed; stops at a
/// header whose length is below 8 (returned as `consumed < len`).
pub fn split_messages(buf: &[u8]) -> (Vec<&[u8]>, usize) {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(h) = buf.get(pos..pos + 8) {
        let len = u16::from_be_bytes([h[2], h[3]]) as usize;
        if len < 8 {
            break;
        }
        match buf.get(pos..pos + len) {
            Some(m) => out.push(m),
            None => break,
        }
        pos += len;
    }
    (out, pos)
}

/// The recording proxy: one TCP listener on 127.0.0.1, each accepted
/// connection relayed to the switch's unix socket.
struct Proxy {
    port: u16,
    records: Arc<Mutex<Vec<Record>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    acceptor: Option<thread::JoinHandle<Vec<thread::JoinHandle<()>>>>,
}

impl Proxy {
    fn start(switch: PathBuf) -> Result<Proxy, String> {
        let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind proxy: {e}"))?;
        let port = l.local_addr().map_err(|e| e.to_string())?.port();
        l.set_nonblocking(true).map_err(|e| e.to_string())?;
        let records = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (r2, s2) = (records.clone(), stop.clone());
        let acceptor = thread::spawn(move || {
            let mut pumps = Vec::new();
            let mut conn = 0u32;
            // Bounded: stops when told to, or after 60 s in any case.
            let deadline = Instant::now() + Duration::from_secs(60);
            while !s2.load(Ordering::SeqCst) && Instant::now() < deadline {
                match l.accept() {
                    Ok((c, _)) => {
                        let _ = c.set_nonblocking(false);
                        match UnixStream::connect(&switch) {
                            Ok(u) => pumps.extend(relay(conn, c, u, r2.clone())),
                            Err(e) => eprintln!("proxy: connect {}: {e}", switch.display()),
                        }
                        conn += 1;
                    }
                    Err(_) => thread::sleep(Duration::from_millis(10)),
                }
            }
            pumps
        });
        Ok(Proxy { port, records, stop, acceptor: Some(acceptor) })
    }

    fn count(&self) -> usize {
        self.records.lock().map(|v| v.len()).unwrap_or(0)
    }

    /// Stop accepting, wait for the relays to see both ends close, and
    /// return what was recorded.
    fn finish(mut self) -> Vec<Record> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(a) = self.acceptor.take() {
            for p in a.join().unwrap_or_default() {
                let _ = p.join();
            }
        }
        let v = self.records.lock().map(|v| v.clone()).unwrap_or_default();
        v
    }
}

/// Relay both directions of one connection; each pump frames what it
/// forwards. When the client closes, the switch side is shut down too (and
/// vice versa), so both pumps end.
fn relay(
    conn: u32,
    client: TcpStream,
    switch: UnixStream,
    rec: Arc<Mutex<Vec<Record>>>,
) -> Vec<thread::JoinHandle<()>> {
    let timeout = Some(Duration::from_secs(30));
    let _ = client.set_read_timeout(timeout);
    let _ = switch.set_read_timeout(timeout);
    let (c2, s2) = match (client.try_clone(), switch.try_clone()) {
        (Ok(c), Ok(s)) => (c, s),
        _ => return Vec::new(),
    };
    let r2 = rec.clone();
    let up = thread::spawn(move || {
        pump(conn, Dir::ToSwitch, client, switch, rec);
    });
    let down = thread::spawn(move || {
        pump(conn, Dir::FromSwitch, s2, c2, r2);
    });
    vec![up, down]
}

trait Duplex: Read + Write {
    fn close(&self);
}
impl Duplex for TcpStream {
    fn close(&self) {
        let _ = self.shutdown(Shutdown::Both);
    }
}
impl Duplex for UnixStream {
    fn close(&self) {
        let _ = self.shutdown(Shutdown::Both);
    }
}

fn pump<A: Duplex, B: Duplex>(
    conn: u32,
    dir: Dir,
    mut from: A,
    mut to: B,
    rec: Arc<Mutex<Vec<Record>>>,
) {
    let mut pending: Vec<u8> = Vec::new();
    let mut framing = true;
    let mut buf = [0u8; 65536];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
        if !framing {
            pending.extend_from_slice(&buf[..n]);
            continue;
        }
        pending.extend_from_slice(&buf[..n]);
        let (msgs, used) = split_messages(&pending);
        if let Ok(mut r) = rec.lock() {
            for m in msgs {
                r.push(Record { conn, dir, bytes: m.to_vec() });
            }
        }
        pending.drain(..used);
        if pending.len() >= 8 && u16::from_be_bytes([pending[2], pending[3]]) < 8 {
            framing = false;
        }
    }
    if !pending.is_empty() {
        if let Ok(mut r) = rec.lock() {
            r.push(Record { conn, dir, bytes: pending });
        }
    }
    from.close();
    to.close();
}

// ---------------------------------------------------------------- fixtures

/// One fixture file: the command and its messages in capture order.
#[derive(Clone, Debug)]
pub struct Fixture {
    pub name: String,
    pub command: String,
    pub messages: Vec<(Dir, Vec<u8>)>,
}

/// The directory with the committed `ovs-ofctl` fixtures.
pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ofp/tests/fixtures/ovs-ofctl")
}

pub fn hex_decode(s: &str) -> Result<Vec<u8>, String> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    if s.len() % 2 != 0 {
        return Err(format!("odd number of hex digits in {s:?}"));
    }
    (0..s.len() / 2)
        .map(|i| {
            u8::from_str_radix(s.get(2 * i..2 * i + 2).unwrap_or("zz"), 16)
                .map_err(|e| format!("{e} in {s:?}"))
        })
        .collect()
}

pub fn hex_encode(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Fixture text: `# command` line, a legend, then `> HEX` / `< HEX` lines,
/// one message per line.
pub fn render_fixture(cap: &Capture) -> String {
    let mut s = format!("# {}\n", cap.command);
    s.push_str("# > client to switch, < switch to client; one OpenFlow message per line (hex)\n");
    for o in &cap.omitted {
        s.push_str(&format!("# omitted: {o}\n"));
    }
    let mut conn = None;
    for r in &cap.records {
        if conn != Some(r.conn) {
            s.push_str(&format!("# connection {}\n", r.conn));
            conn = Some(r.conn);
        }
        s.push_str(&format!("{} {}\n", r.dir.marker(), hex_encode(&r.bytes)));
    }
    s
}

pub fn parse_fixture(name: &str, text: &str) -> Result<Fixture, String> {
    let mut command = String::new();
    let mut messages = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix('#') {
            if command.is_empty() {
                command = c.trim().to_string();
            }
            continue;
        }
        let (dir, hex) = match line.split_at(1) {
            (">", h) => (Dir::ToSwitch, h),
            ("<", h) => (Dir::FromSwitch, h),
            _ => return Err(format!("{name}:{}: line must start with > or <", i + 1)),
        };
        messages.push((dir, hex_decode(hex).map_err(|e| format!("{name}:{}: {e}", i + 1))?));
    }
    Ok(Fixture { name: name.to_string(), command, messages })
}

/// Every committed fixture, sorted by name.
pub fn load_fixtures() -> Result<Vec<Fixture>, String> {
    let dir = fixture_dir();
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("read {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "hex"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|p| {
            let name = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let text =
                std::fs::read_to_string(p).map_err(|e| format!("read {}: {e}", p.display()))?;
            parse_fixture(&name, &text)
        })
        .collect()
}

pub mod expect;
pub mod scenario;
