//! A real controller application drives `sluice run`: os-ken's
//! `osken-manager` runs an L2-learning app in the style of Ryu's
//! `simple_switch_13` (`tests/osken/l2_learning_13.py`; Debian's
//! python3-os-ken does not ship the example app) and sluice connects to it
//! actively, over TCP and over TLS. Two hosts in network namespaces ping
//! each other through the switch.
//!
//! The switch runs in fail mode `secure`, so nothing is forwarded unless the
//! controller installs flows: a standalone MAC-learning fallback cannot make
//! these tests pass. Besides the ping, each test reads the flow table through
//! sluice's passive listener (`ptcp:`, or `pssl:` in the TLS tests) with
//! `ovs-ofctl -O OpenFlow13 dump-flows` and checks that the app's
//! table-miss flow and its priority-1 `in_port,eth_src,eth_dst` flows are
//! there and counted the pings.
//!
//! TLS: a throw-away PKI is made with `openssl` (two CAs; a controller
//! certificate with an IP SAN 127.0.0.1, as sluice checks the address it
//! dialled; switch certificates for client authentication, which
//! osken-manager requires when given `--ca-certs`; every leaf is usable
//! as client and server). A negative test shows
//! that with a wrong CA on either side the connection never comes up.
//!
//! Needs root (namespaces), `ip`, `ping`, `openssl`, `ovs-ofctl` and
//! `/usr/bin/osken-manager` with `/usr/bin/python3` (Debian python3-os-ken).
//! A missing tool, or a run without root, fails the test (nothing is skipped).
//! Namespaces, processes (killed by pid) and temporary files are removed by
//! Drop guards, also when a test fails; every wait is bounded.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

mod netlab;

use netlab::{free_port, have, is_root, Lab, Proc, Scratch as TempDir};

const PYTHON: &str = "/usr/bin/python3";
const OSKEN_MANAGER: &str = "/usr/bin/osken-manager";
/// The line the app logs when a switch has completed the handshake.
const CONNECTED: &str = "L2LEARN switch connected";

fn app_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/osken/l2_learning_13.py")
}

/// Panics when not root or when a needed tool is missing (never skips).
fn preflight(extra: &[&str]) -> bool {
    assert!(is_root(), "needs root (network namespaces)");
    for t in ["ip", "ping", "ovs-ofctl"].iter().chain(extra) {
        assert!(have(t), "`{t}` is not installed (scripts/install-deps installs it)");
    }
    assert!(
        Path::new(OSKEN_MANAGER).exists() && Path::new(PYTHON).exists(),
        "{OSKEN_MANAGER} or {PYTHON} missing: install the Debian package python3-os-ken"
    );
    let import = Command::new(PYTHON)
        .args(["-c", "import os_ken.base.app_manager"])
        .output()
        .expect("running /usr/bin/python3");
    assert!(
        import.status.success(),
        "{PYTHON} cannot import os_ken: {}",
        String::from_utf8_lossy(&import.stderr)
    );
    assert!(app_path().exists(), "missing {}", app_path().display());
    true
}

/// Starts osken-manager with the L2-learning app. `listen` are the port
/// options (`--ofp-tcp-listen-port N` or the TLS set).
fn start_controller(dir: &TempDir, listen: &[String]) -> Proc {
    let mut cmd = Command::new(PYTHON);
    cmd.arg(OSKEN_MANAGER).args(["--ofp-listen-host", "127.0.0.1"]).args(listen).arg(app_path());
    Proc::spawn("osken-manager", &mut cmd, dir.path("osken.log"))
}

/// Starts `sluice run` (ports in the lab's switch namespace, the controller
/// channel and listener in this process's namespace).
fn start_switch(dir: &TempDir, tag: &str, lab: &Lab, config: &Path, args: &[String]) -> Proc {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    cmd.arg("run")
        // Tests run switches side by side: no shared control socket.
        .arg("--no-control-socket")
        .args(["--config", &config.display().to_string()])
        .args(["--netns", lab.sw.name(), "--fail-mode", "secure", "--dpid", DPID])
        .args(args)
        .args(lab.port_args())
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1");
    Proc::spawn("sluice run", &mut cmd, dir.path(&format!("sluice-{tag}.log")))
}

const DPID: &str = "0x5c";
/// How the app logs [`DPID`].
const DPID_LOGGED: &str = "dpid=000000000000005c";

/// Sluice's passive listener, as `ovs-ofctl` reaches it.
enum Listener {
    /// `ptcp:PORT:127.0.0.1`.
    Tcp(u16),
    /// `pssl:PORT:127.0.0.1`; ovs-ofctl presents `client` and checks the
    /// switch's certificate against `ca`.
    Ssl { port: u16, client: Cert, ca: PathBuf },
}

impl Listener {
    /// The `--listen` argument for sluice.
    fn target(&self) -> String {
        match self {
            Listener::Tcp(p) => format!("ptcp:{p}:127.0.0.1"),
            Listener::Ssl { port, .. } => format!("pssl:{port}:127.0.0.1"),
        }
    }

    /// `ovs-ofctl -O OpenFlow13 dump-flows`: the flow lines (header
    /// removed), or ovs-ofctl's error.
    fn try_dump_flows(&self) -> Result<Vec<String>, String> {
        let mut cmd = Command::new("ovs-ofctl");
        cmd.args(["-O", "OpenFlow13", "--timeout=10", "--no-names"]);
        let target = match self {
            Listener::Tcp(p) => format!("tcp:127.0.0.1:{p}"),
            Listener::Ssl { port, client, ca } => {
                cmd.arg("--private-key")
                    .arg(&client.key)
                    .arg("--certificate")
                    .arg(&client.cert)
                    .arg("--ca-cert")
                    .arg(ca);
                format!("ssl:127.0.0.1:{port}")
            }
        };
        let out = cmd.arg("dump-flows").arg(target).output().expect("running ovs-ofctl");
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains("priority="))
            .map(|l| l.trim().to_string())
            .collect())
    }

    fn dump_flows(&self) -> Vec<String> {
        self.try_dump_flows().unwrap_or_else(|e| panic!("ovs-ofctl dump-flows failed: {e}"))
    }
}

/// The value of `key=` in an ovs-ofctl flow line (`,` or space separated).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split([',', ' ']).find_map(|tok| tok.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

fn is_table_miss(line: &str) -> bool {
    field(line, "priority") == Some("0") && line.contains("actions=CONTROLLER")
}

/// Waits (bounded) until the app has installed its table-miss flow, i.e.
/// the switch is connected to the controller and past the handshake.
fn wait_connected(listener: &Listener, sw: &mut Proc, ctl: &mut Proc) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        sw.assert_running();
        ctl.assert_running();
        // An error means the listener is not up yet.
        let flows = listener.try_dump_flows();
        if flows.as_ref().is_ok_and(|f| f.iter().any(|l| is_table_miss(l))) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the controller did not install its table-miss flow within 60 s ({flows:?})\n\
             --- sluice log:\n{}\n--- osken log:\n{}",
            sw.log(),
            ctl.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The shared body of the TCP and TLS tests once both processes run.
fn ping_through_learning_app(lab: &Lab, listener: &Listener, sw: &mut Proc, ctl: &mut Proc) {
    wait_connected(listener, sw, ctl);
    let log = ctl.log();
    assert!(log.contains(CONNECTED) && log.contains(DPID_LOGGED), "{log}");
    // Only the table-miss flow so far: the app adds flows on packet-ins.
    let flows = listener.dump_flows();
    assert_eq!(flows.len(), 1, "{flows:#?}");

    assert!(
        lab.ping_ok_within(0, 1, Duration::from_secs(15)),
        "no ping through the controller-driven switch\n--- sluice log:\n{}\n--- osken log:\n{}",
        sw.log(),
        ctl.log()
    );
    let out = lab.ping(0, 1, 3);
    assert!(out.status.success(), "ping 0 -> 1: {}", String::from_utf8_lossy(&out.stdout));
    let out = lab.ping(1, 0, 3);
    assert!(out.status.success(), "ping 1 -> 0: {}", String::from_utf8_lossy(&out.stdout));

    // The app learnt both hosts and installed one priority-1 flow per
    // direction, and the pings went through those flows.
    let flows = listener.dump_flows();
    for (src, dst, in_port) in [(0, 1, "1"), (1, 0, "2")] {
        let line = flows
            .iter()
            .find(|l| {
                field(l, "priority") == Some("1")
                    && field(l, "in_port") == Some(in_port)
                    && [field(l, "dl_src"), field(l, "eth_src")].contains(&Some(&lab.mac(src)))
                    && [field(l, "dl_dst"), field(l, "eth_dst")].contains(&Some(&lab.mac(dst)))
            })
            .unwrap_or_else(|| {
                panic!(
                    "no priority=1 flow {} -> {} from the app: {flows:#?}",
                    lab.mac(src),
                    lab.mac(dst)
                )
            });
        let out_port = if in_port == "1" { "output:2" } else { "output:1" };
        assert!(line.contains(out_port), "{line}");
        let n: u64 = field(line, "n_packets").and_then(|n| n.parse().ok()).unwrap_or(0);
        // At least the later echo requests (or replies) of 3 + 3 pings.
        assert!(n >= 3, "flow did not carry the pings: {line}");
    }
    assert!(flows.iter().any(|l| is_table_miss(l)), "{flows:#?}");
    sw.assert_running();
    ctl.assert_running();
    assert!(ctl.log().contains("L2LEARN packet-in"), "{}", ctl.log());
}

fn write_config(dir: &TempDir, name: &str, tls: Option<(&Path, &Path, &Path)>) -> PathBuf {
    // Reconnect quickly: osken-manager needs a second or two to listen.
    let mut text = String::from("[agent]\nbackoff_min_ms = 100\nbackoff_max_ms = 500\n");
    if let Some((ca, cert, key)) = tls {
        text.push_str(&format!(
            "\n[tls]\nca = {:?}\ncert = {:?}\nkey = {:?}\n",
            ca.display().to_string(),
            cert.display().to_string(),
            key.display().to_string()
        ));
    }
    let p = dir.path(name);
    std::fs::write(&p, text).expect("config file");
    p
}

/// Runs openssl, failing with its stderr.
fn openssl(dir: &TempDir, args: &[&str]) {
    let out =
        Command::new("openssl").args(args).current_dir(&dir.0).output().expect("running openssl");
    assert!(
        out.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A certificate and its key (PEM files in the temp dir).
struct Cert {
    cert: PathBuf,
    key: PathBuf,
}

/// A self-signed CA (P-256) named `name`.
fn make_ca(dir: &TempDir, name: &str) -> Cert {
    let cnf = dir.path(&format!("{name}.cnf"));
    std::fs::write(
        &cnf,
        "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\n[ca]\n\
         basicConstraints = critical,CA:TRUE\n\
         keyUsage = critical,keyCertSign,cRLSign\n\
         subjectKeyIdentifier = hash\n",
    )
    .expect("openssl config");
    let c = Cert { cert: dir.path(&format!("{name}.pem")), key: dir.path(&format!("{name}.key")) };
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-config",
            &cnf.display().to_string(),
            "-extensions",
            "ca",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN=sluice test {name}"),
            "-keyout",
            &c.key.display().to_string(),
            "-out",
            &c.cert.display().to_string(),
        ],
    );
    c
}

/// Makes the leaf certificates' serial numbers unique.
static SERIAL: AtomicU32 = AtomicU32::new(1);

/// A leaf certificate signed by `ca`, for both TLS client and server use
/// (a switch is a client of the controller and the server of its `pssl:`
/// listener), with the IP SAN 127.0.0.1 that a client dialling 127.0.0.1
/// checks.
fn make_leaf(dir: &TempDir, ca: &Cert, name: &str) -> Cert {
    let ext = dir.path(&format!("{name}.ext"));
    std::fs::write(
        &ext,
        "basicConstraints = critical,CA:FALSE\nkeyUsage = critical,digitalSignature\n\
         subjectKeyIdentifier = hash\nauthorityKeyIdentifier = keyid\n\
         extendedKeyUsage = serverAuth,clientAuth\nsubjectAltName = IP:127.0.0.1\n",
    )
    .expect("extension file");
    let c = Cert { cert: dir.path(&format!("{name}.pem")), key: dir.path(&format!("{name}.key")) };
    let csr = dir.path(&format!("{name}.csr"));
    let cnf = dir.path(&format!("{name}.cnf"));
    std::fs::write(&cnf, "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\n").expect("cnf");
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-config",
            &cnf.display().to_string(),
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            &format!("/CN=sluice test {name}"),
            "-keyout",
            &c.key.display().to_string(),
            "-out",
            &csr.display().to_string(),
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr.display().to_string(),
            "-CA",
            &ca.cert.display().to_string(),
            "-CAkey",
            &ca.key.display().to_string(),
            "-set_serial",
            &format!("0x{:x}{:04x}", std::process::id(), SERIAL.fetch_add(1, Ordering::Relaxed)),
            "-days",
            "2",
            "-extfile",
            &ext.display().to_string(),
            "-out",
            &c.cert.display().to_string(),
        ],
    );
    c
}

/// osken-manager's TLS options: its certificate and key, and the CA it
/// requires switch certificates to chain to.
fn tls_listen_args(port: u16, ctl: &Cert, ca: &Cert) -> Vec<String> {
    vec![
        "--ofp-ssl-listen-port".into(),
        port.to_string(),
        "--ctl-privkey".into(),
        ctl.key.display().to_string(),
        "--ctl-cert".into(),
        ctl.cert.display().to_string(),
        "--ca-certs".into(),
        ca.cert.display().to_string(),
    ]
}

#[test]
fn l2_learning_app_over_tcp() {
    if !preflight(&[]) {
        return;
    }
    let dir = TempDir::new("sluice-osken-");
    let lab = Lab::new(2, 77);
    let ctl_port = free_port();
    let listener = Listener::Tcp(free_port());
    let mut ctl = start_controller(&dir, &["--ofp-tcp-listen-port".into(), ctl_port.to_string()]);
    let cfg = write_config(&dir, "tcp.toml", None);
    let mut sw = start_switch(
        &dir,
        "tcp",
        &lab,
        &cfg,
        &[
            "--controller".into(),
            format!("tcp:127.0.0.1:{ctl_port}"),
            "--listen".into(),
            listener.target(),
        ],
    );
    ping_through_learning_app(&lab, &listener, &mut sw, &mut ctl);
}

/// The same over TLS. The flow table is read through a `pssl:` listener
/// (ovs-ofctl with its own certificate): sluice currently wraps every
/// passive listener in TLS once a `[tls]` section and an `ssl:` target
/// exist, so a `ptcp:` listener would not speak plain OpenFlow here.
#[test]
fn l2_learning_app_over_tls() {
    if !preflight(&["openssl"]) {
        return;
    }
    let dir = TempDir::new("sluice-osken-");
    let ca = make_ca(&dir, "ca");
    let ctl_cert = make_leaf(&dir, &ca, "controller");
    let sw_cert = make_leaf(&dir, &ca, "switch");
    let ofctl_cert = make_leaf(&dir, &ca, "ofctl");
    let lab = Lab::new(2, 77);
    let ctl_port = free_port();
    let listener = Listener::Ssl { port: free_port(), client: ofctl_cert, ca: ca.cert.clone() };
    let mut ctl = start_controller(&dir, &tls_listen_args(ctl_port, &ctl_cert, &ca));
    let cfg = write_config(&dir, "tls.toml", Some((&ca.cert, &sw_cert.cert, &sw_cert.key)));
    let mut sw = start_switch(
        &dir,
        "tls",
        &lab,
        &cfg,
        &[
            "--controller".into(),
            format!("ssl:127.0.0.1:{ctl_port}"),
            "--listen".into(),
            listener.target(),
        ],
    );
    ping_through_learning_app(&lab, &listener, &mut sw, &mut ctl);
}

/// With a wrong CA on either side the TLS connection never comes up: the
/// app never sees the switch, no flow is installed and (secure mode) the
/// hosts cannot ping. Case 1: the switch trusts another CA than the one
/// that signed the controller's certificate. Case 2: the switch presents a
/// certificate from a CA the controller does not trust. (ovs-ofctl reads
/// the flow table through the switch's `pssl:` listener, so it presents a
/// certificate the switch trusts and trusts the switch's issuer.)
#[test]
fn tls_with_a_wrong_ca_does_not_connect() {
    if !preflight(&["openssl"]) {
        return;
    }
    let dir = TempDir::new("sluice-osken-");
    let ca = make_ca(&dir, "ca");
    let other_ca = make_ca(&dir, "other-ca");
    let ctl_cert = make_leaf(&dir, &ca, "controller");
    let lab = Lab::new(2, 77);
    let ctl_port = free_port();
    let mut ctl = start_controller(&dir, &tls_listen_args(ctl_port, &ctl_cert, &ca));
    // The active target as sluice logs it (its `pssl:` listener has
    // another port).
    let active = format!("ssl:127.0.0.1:{ctl_port}");

    // (tag, CA the switch trusts, issuer of its certificate, what, the
    // failure sluice must report: its own verification or the
    // controller's alert)
    let cases = [
        ("wrong-ca", &other_ca, &ca, "switch trusting another CA", "unknown issuer"),
        ("rogue-cert", &ca, &other_ca, "switch certificate from another CA", "UnknownCA"),
    ];
    for (tag, trust, issuer, what, reason) in cases {
        let mine = make_leaf(&dir, issuer, &format!("{tag}-switch"));
        let listener = Listener::Ssl {
            port: free_port(),
            client: make_leaf(&dir, trust, &format!("{tag}-ofctl")),
            ca: issuer.cert.clone(),
        };
        let cfg =
            write_config(&dir, &format!("{tag}.toml"), Some((&trust.cert, &mine.cert, &mine.key)));
        let mut sw = start_switch(
            &dir,
            tag,
            &lab,
            &cfg,
            &["--controller".into(), active.clone(), "--listen".into(), listener.target()],
        );
        // Wait for two connection attempts that reached the TLS handshake
        // and failed (osken-manager may take seconds to start listening;
        // refused TCP connects are not counted; backoff is 100..500 ms).
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            sw.assert_running();
            ctl.assert_running();
            let log = sw.log();
            let failed = log
                .lines()
                .filter(|l| l.contains(&active) && l.contains(reason))
                .filter(|l| {
                    l.contains("TLS handshake failed") || l.contains("controller connection ended")
                })
                .count();
            if failed >= 2 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: no connection attempt failing with {reason} within 60 s:\n{log}\n--- osken log:\n{}",
                ctl.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(!lab.ping(0, 1, 2).status.success(), "{what}: ping passed");
        let flows = listener.dump_flows();
        assert!(flows.is_empty(), "{what}: flows installed: {flows:#?}");
        assert!(!ctl.log().contains(CONNECTED), "{what}: the app saw a switch:\n{}", ctl.log());
    }
}
