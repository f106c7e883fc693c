//! TLS: the agent's `ssl:` connections to a TLS controller written in the
//! test, and its `pssl:` listener used by `ovs-ofctl` over SSL. The CA and
//! certificates are generated here with rcgen; peer certificates are
//! verified both ways, and certificates from a wrong CA are refused.

mod common;

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use sluice_agent::{Agent, TlsFiles};
use sluice_ofp::message::Message;
use tokio::net::TcpListener;

/// A temporary directory removed on drop.
struct TempDir(PathBuf);
impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("sluice-agent-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}
impl Drop for TempDir {
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
    p.distinguished_name.push(DnType::CommonName, name);
    Ca { cert: p.self_signed(&key).unwrap(), key }
}

/// Write `ca.pem`, `NAME-cert.pem`, `NAME-key.pem` for a leaf signed by
/// `ca` with SAN 127.0.0.1; return the TLS files.
fn leaf(dir: &Path, ca_for_chain: &Ca, trust: &Ca, name: &str) -> TlsFiles {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    p.subject_alt_names.push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    p.distinguished_name.push(DnType::CommonName, name);
    let cert = p.signed_by(&key, &ca_for_chain.cert, &ca_for_chain.key).unwrap();
    let files = TlsFiles {
        ca: dir.join(format!("{name}-trust.pem")),
        cert: dir.join(format!("{name}-cert.pem")),
        key: dir.join(format!("{name}-key.pem")),
        crls: vec![],
    };
    std::fs::write(&files.ca, trust.cert.pem()).unwrap();
    std::fs::write(&files.cert, cert.pem()).unwrap();
    std::fs::write(&files.key, key.serialize_pem()).unwrap();
    files
}

/// The controller's TLS server: requires a client certificate from the CA
/// in `f.ca`. Built directly with rustls, independent of the agent's code.
fn controller_acceptor(f: &TlsFiles) -> tokio_rustls::TlsAcceptor {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(&f.ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .unwrap();
    let chain: Vec<_> =
        CertificateDer::pem_file_iter(&f.cert).unwrap().map(|c| c.unwrap()).collect();
    let key = PrivateKeyDer::from_pem_file(&f.key).unwrap();
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(cfg))
}

async fn tls_controller(
    l: &TcpListener,
    acc: &tokio_rustls::TlsAcceptor,
) -> Result<Ctl, std::io::Error> {
    let (s, _) =
        tokio::time::timeout(STEP, l.accept()).await.expect("agent did not connect").unwrap();
    let tls = tokio::time::timeout(STEP, acc.accept(s)).await.expect("handshake hung")?;
    let (_, conn) = tls.get_ref();
    assert!(
        conn.peer_certificates().is_some_and(|c| !c.is_empty()),
        "switch presented no certificate"
    );
    let mut c = Ctl::new(tls);
    c.handshake().await;
    Ok(c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssl_controller_verified_both_ways() {
    init_tracing();
    let dir = TempDir::new("tls-ok");
    let ca = ca("sluice test CA");
    let ctl_files = leaf(&dir.0, &ca, &ca, "controller");
    let sw_files = leaf(&dir.0, &ca, &ca, "switch");
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut cfg = test_config(&[format!("ssl:{}", l.local_addr().unwrap())]);
    cfg.tls = Some(sw_files);
    let (sw, _) = TestSwitch::new(pipeline(2));
    let agent = Agent::start(cfg, sw).await.unwrap();
    let mut c = tls_controller(&l, &controller_acceptor(&ctl_files)).await.expect("TLS handshake");
    let Message::FeaturesReply(f) = c.call(2, &Message::FeaturesRequest).await else { panic!() };
    assert_eq!(f.datapath_id, 0x5111_ce00_0000_0001);
    assert_eq!(
        c.call(3, &Message::EchoRequest(vec![9; 100])).await,
        Message::EchoReply(vec![9; 100])
    );
    assert!(eventually(STEP, || agent.controllers_connected() == 1).await);
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switch_refuses_controller_from_wrong_ca() {
    init_tracing();
    let dir = TempDir::new("tls-badctl");
    let good = ca("good CA");
    let evil = ca("evil CA");
    // The controller's certificate is from a CA the switch does not trust.
    let ctl_files = leaf(&dir.0, &evil, &good, "controller");
    let sw_files = leaf(&dir.0, &good, &good, "switch");
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut cfg = test_config(&[format!("ssl:{}", l.local_addr().unwrap())]);
    cfg.tls = Some(sw_files);
    let (sw, _) = TestSwitch::new(pipeline(1));
    let agent = Agent::start(cfg, sw).await.unwrap();
    let acc = controller_acceptor(&ctl_files);
    for _ in 0..2 {
        assert!(tls_controller(&l, &acc).await.is_err(), "handshake should fail");
    }
    assert_eq!(agent.controllers_connected(), 0);
    assert!(agent.stats().connect_attempts >= 2);
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_refuses_switch_from_wrong_ca() {
    init_tracing();
    let dir = TempDir::new("tls-badsw");
    let good = ca("good CA");
    let evil = ca("evil CA");
    let ctl_files = leaf(&dir.0, &good, &good, "controller");
    // The switch trusts the controller but its own certificate is from a
    // CA the controller does not trust.
    let sw_files = leaf(&dir.0, &evil, &good, "switch");
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut cfg = test_config(&[format!("ssl:{}", l.local_addr().unwrap())]);
    cfg.tls = Some(sw_files);
    let (sw, _) = TestSwitch::new(pipeline(1));
    let agent = Agent::start(cfg, sw).await.unwrap();
    let acc = controller_acceptor(&ctl_files);
    let r = tls_controller(&l, &acc).await;
    let err = r.err().expect("controller must refuse the switch certificate");
    assert!(err.to_string().to_lowercase().contains("cert"), "{err}");
    // The switch never saw a working session.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(agent.controllers_connected(), 0);
    agent.shutdown().await;
}

/// `ovs-ofctl` over SSL to the agent's `pssl:` listener (fails if
/// ovs-ofctl is missing), and refused with a certificate from a wrong CA.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pssl_listener_with_ovs_ofctl() {
    init_tracing();
    let dir = TempDir::new("tls-pssl");
    let good = ca("good CA");
    let evil = ca("evil CA");
    let sw_files = leaf(&dir.0, &good, &good, "switch");
    let ofctl_ok = leaf(&dir.0, &good, &good, "ofctl");
    let ofctl_bad = leaf(&dir.0, &evil, &good, "ofctl-bad");
    let mut cfg = test_config(&["pssl:0:127.0.0.1".to_string()]);
    cfg.tls = Some(sw_files);
    let (sw, _) = TestSwitch::new(pipeline(2));
    let agent = Agent::start(cfg, sw).await.unwrap();
    let addr = agent.listeners()[0].1.inet().expect("a TCP listener");
    let run = |f: TlsFiles| {
        let target = format!("ssl:{addr}");
        tokio::task::spawn_blocking(move || {
            std::process::Command::new("timeout")
                .args(["20", "ovs-ofctl", "-O", "OpenFlow13"])
                .arg("-p")
                .arg(&f.key)
                .arg("-c")
                .arg(&f.cert)
                .arg("-C")
                .arg(&f.ca)
                .args(["show", &target])
                .output()
                .expect("cannot run ovs-ofctl (apt-get install openvswitch-common)")
        })
    };
    let out = run(ofctl_ok).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("dpid:5111ce0000000001"), "{stdout}");
    let out = run(ofctl_bad).await.unwrap();
    assert!(!out.status.success(), "a certificate from a wrong CA was accepted");
    agent.shutdown().await;
}

/// With an `ssl:` controller configured, a `ptcp:` listener still speaks
/// plain OpenFlow (the TLS context belongs to ssl:/pssl: targets only).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_listener_stays_plain_next_to_an_ssl_controller() {
    init_tracing();
    let dir = TempDir::new("tls-mixed");
    let ca = ca("sluice test CA");
    let ctl_files = leaf(&dir.0, &ca, &ca, "controller");
    let sw_files = leaf(&dir.0, &ca, &ca, "switch");
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut cfg =
        test_config(&[format!("ssl:{}", l.local_addr().unwrap()), "ptcp:0:127.0.0.1".to_string()]);
    cfg.tls = Some(sw_files);
    let (sw, _) = TestSwitch::new(pipeline(2));
    let agent = Agent::start(cfg, sw).await.unwrap();
    let mut c = tls_controller(&l, &controller_acceptor(&ctl_files)).await.expect("TLS handshake");
    assert_eq!(c.call(2, &Message::BarrierRequest).await, Message::BarrierReply);
    let plain = agent.listeners()[0].1.inet().expect("a TCP listener");
    let s = tokio::net::TcpStream::connect(plain).await.unwrap();
    let mut p = Ctl::new(s);
    p.handshake().await;
    assert_eq!(p.call(3, &Message::BarrierRequest).await, Message::BarrierReply);
    agent.shutdown().await;
}

/// A CRL file that holds no CRL, or a broken one, is an error naming the
/// file when the configuration is loaded (not at the first handshake).
#[test]
fn bad_crl_file_is_named() {
    let dir = TempDir::new("tls-badcrl");
    let ca = ca("sluice test CA");
    let mut files = leaf(&dir.0, &ca, &ca, "switch");
    let no_crl = dir.0.join("no-crl.pem");
    std::fs::write(&no_crl, ca.cert.pem()).unwrap();
    files.crls = vec![no_crl.clone()];
    let e = sluice_agent::TlsContext::load(&files).unwrap_err().to_string();
    assert!(e.contains("no certificate revocation list") && e.contains("no-crl.pem"), "{e}");
    let broken = dir.0.join("broken-crl.pem");
    std::fs::write(&broken, "-----BEGIN X509 CRL-----\nMIIBAA==\n-----END X509 CRL-----\n")
        .unwrap();
    files.crls = vec![broken];
    let e = sluice_agent::TlsContext::load(&files).unwrap_err().to_string();
    assert!(e.contains("certificate revocation list") && e.contains("broken-crl.pem"), "{e}");
}
