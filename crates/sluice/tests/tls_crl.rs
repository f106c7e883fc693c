//! `sluice run` over TLS with a certificate revocation list, both
//! directions, against real peers:
//! - the `pssl:` listener (CRL from the `[tls] crl` key) with `ovs-ofctl`
//!   as the client: a good certificate is served, a revoked one and one
//!   from another CA are refused;
//! - active `ssl:` controllers (CRL from `--crl`) that are
//!   `ovs-testcontroller`s presenting a good, a revoked and an untrusted
//!   certificate: only the good one gets a session.
//!
//! Each refusal is checked in the switch's log, which must name why
//! ("revoked" / "unknown issuer"). The CAs, certificates and CRL are made
//! here with rcgen. Pcap ports, loopback only; the switches and
//! controllers are our children, killed by PID on drop; every wait is
//! bounded. FAILS if `ovs-ofctl` or `ovs-testcontroller` is missing
//! (apt-get install openvswitch-common openvswitch-testcontroller).

mod pcap_switch;

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pcap_switch::{free_port, which, write_empty_pcap};
use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, CertificateRevocationListParams, DnType,
    IsCa, KeyIdMethod, KeyPair, KeyUsagePurpose, RevocationReason, RevokedCertParams, SanType,
    SerialNumber,
};

/// A child process killed (SIGTERM, then SIGKILL) by PID on drop.
struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.0.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A scratch directory removed on drop.
struct Scratch(PathBuf);
impl Scratch {
    fn new(tag: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("sluice-tlscrl-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("scratch dir");
        Scratch(p)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

fn ca(name: &str) -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    p.distinguished_name.push(DnType::CommonName, name);
    Ca { cert: p.self_signed(&key).unwrap(), key }
}

/// Key and certificate files of one party.
struct Id {
    cert: PathBuf,
    key: PathBuf,
}

/// A leaf for 127.0.0.1 with serial `serial`, signed by `by`.
fn leaf(dir: &Scratch, by: &Ca, name: &str, serial: u64) -> Id {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    p.subject_alt_names.push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    p.distinguished_name.push(DnType::CommonName, name);
    p.serial_number = Some(SerialNumber::from(serial));
    let cert = p.signed_by(&key, &by.cert, &by.key).unwrap();
    let id = Id {
        cert: dir.path(&format!("{name}-cert.pem")),
        key: dir.path(&format!("{name}-key.pem")),
    };
    std::fs::write(&id.cert, cert.pem()).unwrap();
    std::fs::write(&id.key, key.serialize_pem()).unwrap();
    id
}

/// `ca`'s CRL revoking `serials`, written to `path`.
fn crl(ca: &Ca, serials: &[u64], path: &Path) {
    let revoked_certs = serials
        .iter()
        .map(|&s| RevokedCertParams {
            serial_number: SerialNumber::from(s),
            revocation_time: date_time_ymd(2025, 1, 1),
            reason_code: Some(RevocationReason::KeyCompromise),
            invalidity_date: None,
        })
        .collect();
    let crl = CertificateRevocationListParams {
        this_update: date_time_ymd(2025, 1, 1),
        next_update: date_time_ymd(2100, 1, 1),
        crl_number: SerialNumber::from(1u64),
        issuing_distribution_point: None,
        revoked_certs,
        key_identifier_method: KeyIdMethod::Sha256,
    }
    .signed_by(&ca.cert, &ca.key)
    .unwrap();
    std::fs::write(path, crl.pem().unwrap()).unwrap();
}

/// The PKI of one test: a good CA (trusted by everyone) and an evil one;
/// serials 66 and 67 of the good CA are revoked.
struct Pki {
    dir: Scratch,
    ca: PathBuf,
    crl: PathBuf,
    switch: Id,
    good: Id,
    revoked: Id,
    untrusted: Id,
}

fn pki(tag: &str) -> Pki {
    let dir = Scratch::new(tag);
    let good = ca("sluice test CA");
    let evil = ca("evil CA");
    let ca_path = dir.path("ca.pem");
    std::fs::write(&ca_path, good.cert.pem()).unwrap();
    let crl_path = dir.path("crl.pem");
    crl(&good, &[66, 67], &crl_path);
    Pki {
        switch: leaf(&dir, &good, "switch", 10),
        good: leaf(&dir, &good, "good", 11),
        revoked: leaf(&dir, &good, "revoked", 66),
        untrusted: leaf(&dir, &evil, "untrusted", 11),
        ca: ca_path,
        crl: crl_path,
        dir,
    }
}

fn need(tool: &str, package: &str) {
    assert!(which(tool), "{tool} is missing: apt-get install {package}");
}

/// `sluice run` on two pcap ports in `pki.dir` with `[tls]` from `pki`
/// (plus `extra_tls` lines) and `args`; stderr to `log`.
fn sluice(pki: &Pki, extra_tls: &str, args: &[String], log: &Path) -> Proc {
    let d = &pki.dir;
    for i in 1..=2 {
        write_empty_pcap(&d.path(&format!("in{i}.pcap")));
    }
    let cfg = d.path(&format!("{}.toml", log.file_stem().unwrap().to_string_lossy()));
    std::fs::write(
        &cfg,
        format!(
            "[tls]\nca = {:?}\ncert = {:?}\nkey = {:?}\n{extra_tls}",
            pki.ca, pki.switch.cert, pki.switch.key
        ),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["run", "--dpid", "0x5a", "--fail-mode", "secure", "--workers", "1"])
        .arg("--no-control-socket")
        .arg("--config")
        .arg(&cfg)
        .args([
            "--port",
            "pcap:in1.pcap,out=out1.pcap=1",
            "--port",
            "pcap:in2.pcap,out=out2.pcap=2",
        ])
        .args(args)
        .current_dir(&d.0)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("spawning sluice run");
    Proc(child)
}

/// The log once `ok(log)` holds (bounded wait; panics with the log).
fn wait_log(log: &Path, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if ok(&text) {
            return text;
        }
        assert!(Instant::now() < deadline, "waited 40 s for {what}; log:\n{text}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The handshake failure lines of `log` (for `target` if given).
fn refusals<'a>(log: &'a str, target: Option<&str>) -> Vec<&'a str> {
    log.lines()
        .filter(|l| l.contains("TLS handshake failed"))
        .filter(|l| target.is_none_or(|t| l.contains(t)))
        .collect()
}

#[test]
fn pssl_listener_refuses_revoked_and_untrusted_ovs_ofctl() {
    need("ovs-ofctl", "openvswitch-common");
    let pki = pki("pssl");
    let port = free_port();
    let log = pki.dir.path("pssl.log");
    let _sw = sluice(
        &pki,
        &format!("crl = [{:?}]\n", pki.crl),
        &[format!("--listen=pssl:{port}:127.0.0.1")],
        &log,
    );
    wait_log(&log, "the pssl listener", |l| l.contains("OpenFlow listener ready"));
    let ofctl = |id: &Id| {
        let out = Command::new("timeout")
            .args(["20", "ovs-ofctl", "-O", "OpenFlow13"])
            .arg("-p")
            .arg(&id.key)
            .arg("-c")
            .arg(&id.cert)
            .arg("-C")
            .arg(&pki.ca)
            .args(["show", &format!("ssl:127.0.0.1:{port}")])
            .output()
            .expect("running ovs-ofctl");
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };

    let (ok, text) = ofctl(&pki.good);
    assert!(ok && text.contains("dpid:000000000000005a"), "good certificate refused:\n{text}");
    let before = std::fs::read_to_string(&log).unwrap();
    assert!(refusals(&before, None).is_empty(), "{before}");

    for (id, n, why) in [(&pki.revoked, 1, "revoked"), (&pki.untrusted, 2, "unknown issuer")] {
        let (ok, text) = ofctl(id);
        assert!(!ok, "a {why} certificate was served:\n{text}");
        let log = wait_log(&log, "the refusal", |l| refusals(l, None).len() >= n);
        let line = refusals(&log, None)[n - 1];
        assert!(line.contains(why) && line.contains("WARN"), "the log does not say {why}: {line}");
    }
}

#[test]
fn ssl_controllers_revoked_and_untrusted_refused_good_accepted() {
    need("ovs-testcontroller", "openvswitch-testcontroller");
    let pki = pki("ssl");
    let controller = |id: &Id, port: u16| {
        let child = Command::new("ovs-testcontroller")
            .args(["-O", "OpenFlow13"])
            .arg("-p")
            .arg(&id.key)
            .arg("-c")
            .arg(&id.cert)
            .arg("-C")
            .arg(&pki.ca)
            .arg(format!("pssl:{port}:127.0.0.1"))
            .env("OVS_RUNDIR", &pki.dir.0)
            .env("OVS_LOGDIR", &pki.dir.0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawning ovs-testcontroller");
        Proc(child)
    };
    let wait_listening = |port: u16| {
        let addr = format!("127.0.0.1:{port}").parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(Instant::now() < deadline, "ovs-testcontroller never listened on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };

    // The revoked and the untrusted controller, with one switch.
    let (p_rev, p_evil) = (free_port(), free_port());
    let _c1 = controller(&pki.revoked, p_rev);
    let _c2 = controller(&pki.untrusted, p_evil);
    wait_listening(p_rev);
    wait_listening(p_evil);
    let log = pki.dir.path("ssl-bad.log");
    let (t_rev, t_evil) = (format!("ssl:127.0.0.1:{p_rev}"), format!("ssl:127.0.0.1:{p_evil}"));
    let crl = format!("--crl={}", pki.crl.display());
    let sw = sluice(
        &pki,
        "",
        &[format!("--controller={t_rev}"), format!("--controller={t_evil}"), crl.clone()],
        &log,
    );
    let text = wait_log(&log, "both refusals", |l| {
        !refusals(l, Some(&t_rev)).is_empty() && !refusals(l, Some(&t_evil)).is_empty()
    });
    for (t, why) in [(&t_rev, "revoked"), (&t_evil, "unknown issuer")] {
        for line in refusals(&text, Some(t)) {
            assert!(line.contains(why), "the refusal of {t} does not say {why}: {line}");
        }
    }
    assert!(!text.contains("controller connected"), "a bad controller got a session:\n{text}");
    drop(sw);

    // The good controller: a session, no refusal.
    let p_good = free_port();
    let _c3 = controller(&pki.good, p_good);
    wait_listening(p_good);
    let log = pki.dir.path("ssl-good.log");
    let _sw = sluice(&pki, "", &[format!("--controller=ssl:127.0.0.1:{p_good}"), crl], &log);
    let text = wait_log(&log, "the good controller's session", |l| {
        l.contains("first controller connected") || !refusals(l, None).is_empty()
    });
    assert!(refusals(&text, None).is_empty(), "the good controller was refused:\n{text}");
}
