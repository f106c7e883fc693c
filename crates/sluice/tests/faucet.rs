//! Faucet (PyPI `faucet` 1.10.12, the virtualenv `scripts/install-deps`
//! makes) drives a real `sluice run` over loopback: three hosts in
//! namespaces, ports 1 and 2 on VLAN 100, port 3 on VLAN 200, Faucet's
//! router between them with virtual IPs, and an ACL on port 1 that drops
//! TCP to port 5001 and allows everything else.
//!
//! One switch and one Faucet for all the cases (starting Faucet costs
//! seconds), checked in order:
//! - L2 learning on a VLAN: host 0 pings host 1 (both VLAN 100);
//! - VLAN isolation: host 0 cannot reach host 2 in the same subnet while
//!   host 2 is on VLAN 200;
//! - the ACL: TCP from host 0 to host 1 port 5001 is dropped, port 5002
//!   connects;
//! - inter-VLAN routing: host 2 moved to its VLAN's subnet, host 0 pings it
//!   through the virtual IPs;
//! - traceroute's first hop: `ping -t 1` through the router gets "Time to
//!   live exceeded" (Faucet sets miss_send_len 0 and builds the ICMP reply
//!   from the INVALID_TTL packet-in's frame: sluice's default
//!   `invalid_ttl_packet_in = "full"`).
//!
//! Faucet is taken from `$SLUICE_FAUCET_VENV` (default
//! `/opt/sluice/faucet-venv`); its `bin` comes first on `PATH` because
//! Faucet starts `osken-manager` from `PATH`. Needs root, `ip` and `ping`.
//! Namespaces, the switch and Faucet are removed by guards; every wait is
//! bounded.

mod netlab;

use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use netlab::{free_port, Lab, Proc, Scratch};

const OCTET: u8 = 91;

fn faucet_venv() -> PathBuf {
    let venv = std::env::var_os("SLUICE_FAUCET_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/sluice/faucet-venv"));
    assert!(
        venv.join("bin/faucet").is_file() && venv.join("bin/osken-manager").is_file(),
        "no Faucet virtualenv at {} (bin/faucet, bin/osken-manager): run scripts/install-deps",
        venv.display()
    );
    venv
}

fn faucet_yaml(hardware: &str) -> String {
    format!(
        r#"vlans:
  v100:
    vid: 100
    faucet_vips: ["10.{o}.0.254/24"]
  v200:
    vid: 200
    faucet_vips: ["10.{o}.1.254/24"]
routers:
  r1:
    vlans: [v100, v200]
acls:
  no5001:
    - rule:
        dl_type: 0x800
        nw_proto: 6
        tcp_dst: 5001
        actions:
          allow: 0
    - rule:
        actions:
          allow: 1
dps:
  sw1:
    dp_id: 0x1
    hardware: "{hardware}"
    interfaces:
      1:
        native_vlan: v100
        acls_in: [no5001]
      2:
        native_vlan: v100
      3:
        native_vlan: v200
"#,
        o = OCTET,
        hardware = hardware
    )
}

/// `what`, then Faucet's, its app's and sluice's logs (a failure's context).
fn logs(dir: &Scratch, what: &str, faucet: &Proc, sw: &Proc) -> String {
    format!(
        "{what}\n--- faucet.log\n{}\n--- faucet-app.log\n{}\n--- sluice.log\n{}",
        faucet.log(),
        std::fs::read_to_string(dir.path("faucet-app.log")).unwrap_or_default(),
        sw.log()
    )
}

fn start_faucet(dir: &Scratch, of_port: u16, hardware: &str) -> Proc {
    let venv = faucet_venv();
    let cfg = dir.path("faucet.yaml");
    std::fs::write(&cfg, faucet_yaml(hardware)).expect("faucet.yaml");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![venv.join("bin")];
    paths.extend(std::env::split_paths(&path));
    let mut cmd = Command::new(venv.join("bin/faucet"));
    cmd.arg(format!("--ryu-ofp-tcp-listen-port={of_port}"))
        .arg("--ryu-ofp-listen-host=127.0.0.1")
        .env("PATH", std::env::join_paths(paths).expect("PATH"))
        .env("FAUCET_CONFIG", &cfg)
        .env("FAUCET_LOG", dir.path("faucet-app.log"))
        .env("FAUCET_EXCEPTION_LOG", dir.path("faucet-exception.log"))
        .env("FAUCET_PROMETHEUS_ADDR", "127.0.0.1")
        .env("FAUCET_PROMETHEUS_PORT", free_port().to_string());
    Proc::spawn("faucet", &mut cmd, dir.path("faucet.log"))
}

/// Whether a TCP connection from namespace `from` to `to` (listened on in
/// `into`) completes within 2 s.
fn tcp_connects(lab: &Lab, from: usize, into: usize, to: SocketAddrV4) -> bool {
    let l = lab.h[into].enter(|| TcpListener::bind(to)).expect("listen");
    let ok = lab.h[from]
        .enter(|| TcpStream::connect_timeout(&to.into(), Duration::from_secs(2)))
        .is_ok();
    drop(l);
    ok
}

fn ping_ttl1(lab: &Lab, from: usize, to: &str) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", lab.h[from].name(), "ping", "-n", "-c", "1", "-t", "1", "-W", "2"])
        .arg(to)
        .output()
        .expect("running ping");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn in_ns(lab: &Lab, i: usize, args: &[&str]) {
    let out = lab.h[i].exec(args).expect("ip in host namespace");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn faucet_switches_routes_and_filters_through_sluice() {
    netlab::need_root_and(&["ip", "ping"]);
    let started = Instant::now();
    let dir = Scratch::new("faucet");
    let lab = Lab::new(3, OCTET);
    let of_port = free_port();
    let mut faucet = start_faucet(&dir, of_port, "Open vSwitch");
    faucet.wait_listening(of_port);
    let ctrl = format!("tcp:127.0.0.1:{of_port}");
    let mut sw = lab.start_switch(&dir, &["--controller", &ctrl, "--fail-mode", "secure"]);

    // L2 on VLAN 100 (Faucet programs the switch once it connects).
    assert!(
        lab.ping_ok_within(0, 1, Duration::from_secs(30)),
        "{}",
        logs(&dir, "host 0 cannot ping host 1 on VLAN 100", &faucet, &sw)
    );
    // Host 2 in the same subnet but on VLAN 200: unreachable.
    let p = lab.ping(0, 2, 2);
    assert!(
        !p.status.success(),
        "{}",
        logs(&dir, "host 0 reached host 2 across VLANs", &faucet, &sw)
    );

    // The ACL on port 1.
    let blocked = SocketAddrV4::new(lab.ipv4(1), 5001);
    let open = SocketAddrV4::new(lab.ipv4(1), 5002);
    assert!(
        tcp_connects(&lab, 0, 1, open),
        "{}",
        logs(&dir, "TCP to port 5002 refused", &faucet, &sw)
    );
    assert!(
        !tcp_connects(&lab, 0, 1, blocked),
        "{}",
        logs(&dir, "TCP to port 5001 got through the ACL", &faucet, &sw)
    );
    assert!(lab.ping(0, 1, 1).status.success(), "ping must pass the ACL");

    // Inter-VLAN routing: host 2 into VLAN 200's subnet, gateways the VIPs.
    let h2 = format!("10.{OCTET}.1.3");
    let if2 = lab.host_if[2].clone();
    in_ns(&lab, 2, &["ip", "addr", "flush", "dev", &if2]);
    in_ns(&lab, 2, &["ip", "addr", "add", &format!("{h2}/24"), "dev", &if2]);
    in_ns(&lab, 2, &["ip", "route", "add", "default", "via", &format!("10.{OCTET}.1.254")]);
    in_ns(&lab, 0, &["ip", "route", "add", "default", "via", &format!("10.{OCTET}.0.254")]);
    let deadline = Instant::now() + Duration::from_secs(20);
    let routed = loop {
        let out = Command::new("ip")
            .args(["netns", "exec", lab.h[0].name(), "ping", "-n", "-c", "1", "-W", "1", &h2])
            .output()
            .expect("ping");
        if out.status.success() {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
    };
    assert!(routed, "{}", logs(&dir, "host 0 cannot ping host 2 through the router", &faucet, &sw));

    // TTL 1 through the router: Faucet answers time-exceeded from its VIP.
    let out = ping_ttl1(&lab, 0, &h2);
    assert!(
        out.contains("Time to live exceeded") && out.contains(&format!("10.{OCTET}.0.254")),
        "{}",
        logs(&dir, &format!("ping -t 1 through the router:\n{out}"), &faucet, &sw)
    );

    faucet.assert_running();
    sw.assert_running();
    eprintln!("faucet test took {:?}", started.elapsed());
}

/// Faucet's table-features profile (`hardware: "GenericTFM"`): Faucet
/// first sends a TABLE_FEATURES set request describing its tables (names,
/// sizes, match fields, instructions, next tables, actions), which sluice
/// applies, then programs its flows against it. Checked: L2 on a VLAN, VLAN
/// isolation and the ACL forward as with the Open vSwitch profile, the
/// switch refused none of Faucet's messages, and its tables carry Faucet's
/// names.
#[test]
fn faucet_generic_tfm_reconfigures_sluice_tables() {
    netlab::need_root_and(&["ip", "ping"]);
    let started = Instant::now();
    let dir = Scratch::new("faucet-tfm");
    let lab = Lab::new(3, OCTET + 1);
    let of_port = free_port();
    let mut faucet = start_faucet(&dir, of_port, "GenericTFM");
    faucet.wait_listening(of_port);
    let ctrl = format!("tcp:127.0.0.1:{of_port}");
    let ctl_port = free_port();
    let listen = format!("ptcp:{ctl_port}:127.0.0.1");
    let mut sw = lab
        .start_switch(&dir, &["--controller", &ctrl, "--listen", &listen, "--fail-mode", "secure"]);
    assert!(
        lab.ping_ok_within(0, 1, Duration::from_secs(30)),
        "{}",
        logs(&dir, "GenericTFM: host 0 cannot ping host 1 on VLAN 100", &faucet, &sw)
    );
    let p = lab.ping(0, 2, 2);
    assert!(
        !p.status.success(),
        "{}",
        logs(&dir, "GenericTFM: VLAN isolation broken", &faucet, &sw)
    );
    let blocked = SocketAddrV4::new(lab.ipv4(1), 5001);
    let open = SocketAddrV4::new(lab.ipv4(1), 5002);
    assert!(
        tcp_connects(&lab, 0, 1, open),
        "{}",
        logs(&dir, "GenericTFM: TCP 5002 refused", &faucet, &sw)
    );
    assert!(
        !tcp_connects(&lab, 0, 1, blocked),
        "{}",
        logs(&dir, "GenericTFM: TCP 5001 got through the ACL", &faucet, &sw)
    );
    // Faucet logs every OFPT_ERROR the switch sends ("OFError type: …");
    // there must be none (a refused set request would be one).
    let app = std::fs::read_to_string(dir.path("faucet-app.log")).unwrap_or_default();
    assert!(
        !app.contains("OFError"),
        "{}",
        logs(&dir, "sluice refused some of Faucet's messages", &faucet, &sw)
    );
    // The set request was applied: table 0 carries Faucet's name for it.
    let target = format!("tcp:127.0.0.1:{ctl_port}");
    let tf = netlab::ctl(&target, &["dump-table-features"]);
    assert!(
        tf.ok(),
        "{}",
        logs(&dir, &format!("dump-table-features: {}", tf.stderr), &faucet, &sw)
    );
    for name in ["(\"vlan\")", "(\"eth_src\")", "(\"eth_dst\")", "(\"flood\")"] {
        assert!(tf.stdout.contains(name), "no table {name} in:\n{}", tf.stdout);
    }
    faucet.assert_running();
    sw.assert_running();
    eprintln!("faucet GenericTFM test took {:?}", started.elapsed());
}
