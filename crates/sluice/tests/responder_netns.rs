//! The in-switch responder example (`examples/responder/gateway.flows`):
//! the switch itself answers ARP who-has for the gateway 10.79.0.254 and
//! ICMP echo requests to it, with Nicira `move`/`load` actions, a
//! `set_field` and `output:in_port`.
//!
//! - Real tools: `arping -c 3` and `ping -c 3` from a host namespace get
//!   three answers through sluice, and through a private Open vSwitch
//!   (userspace `ovs-vswitchd` in its own namespace, the veth as an
//!   AF_PACKET port) running the same flow file.
//! - Same bytes: one crafted ARP request and one ICMP echo request are
//!   sent into each switch from a raw socket, and the two switches' replies
//!   are compared byte for byte. No field is expected to differ: both keep
//!   the request's IPv4 identification, TTL and Ethernet padding, and both
//!   update the IPv4 and ICMP checksums incrementally to the same values
//!   (which are checked to verify).
//!
//! Needs root, `arping` (iputils-arping), `ping`, Open vSwitch
//! (`ovsdb-server`, `ovs-vswitchd`, `ovs-vsctl`, `ovs-ofctl`); a missing
//! tool fails the test (`scripts/install-deps` installs them). Namespaces,
//! daemons (killed by PID) and scratch files are removed by guards, also
//! when the test fails; every wait is bounded.

mod netlab;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use netlab::{n_packets, need_root_and, ok, Lab, Proc, RawSocket, Scratch};

const OCTET: u8 = 79;
const GW_IP: [u8; 4] = [10, OCTET, 0, 254];
const GW_MAC: [u8; 6] = [2, 0, 0, 0, 0x4f, 0xfe];
/// Host 0 of `Lab::new(_, OCTET)`.
const H_IP: [u8; 4] = [10, OCTET, 0, 1];
const H_MAC: [u8; 6] = [2, 0, 0, 0, OCTET, 1];

fn flows() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/responder/gateway.flows")
}

/// Runs `cmd` with a deadline; panics if it does not finish.
fn bounded(cmd: &mut Command, limit: Duration) -> Output {
    let dir = Scratch::new("cmd");
    let (o, e) = (dir.path("out"), dir.path("err"));
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&o).expect("out"))
        .stderr(std::fs::File::create(&e).expect("err"))
        .spawn()
        .unwrap_or_else(|err| panic!("running {cmd:?}: {err}"));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} ran over {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: std::fs::read(&o).unwrap_or_default(),
        stderr: std::fs::read(&e).unwrap_or_default(),
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A private Open vSwitch: ovsdb-server and ovs-vswitchd (in the lab's
/// switch namespace) with bridge `br0` holding the lab's switch-side veth
/// ends as ports 1, 2, …; both daemons killed by PID on drop.
struct Ovs {
    dir: Scratch,
    pids: Vec<u32>,
}

impl Ovs {
    fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        for v in ["OVS_RUNDIR", "OVS_LOGDIR", "OVS_DBDIR", "OVS_SYSCONFDIR"] {
            c.env(v, &self.dir.0);
        }
        c
    }

    fn run(&self, cmd: &mut Command) -> String {
        let o = bounded(cmd, Duration::from_secs(30));
        assert!(o.status.success(), "{cmd:?} failed: {}", text(&o));
        String::from_utf8_lossy(&o.stdout).into()
    }

    fn pid(&mut self, file: &str) {
        let p = self.dir.path(file);
        let pid = std::fs::read_to_string(&p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .trim()
            .parse()
            .expect("a pid");
        self.pids.push(pid);
    }

    fn start(lab: &Lab) -> Ovs {
        let mut ovs = Ovs { dir: Scratch::new("ovs"), pids: Vec::new() };
        let d = ovs.dir.0.display().to_string();
        ovs.run(ovs.cmd("ovsdb-tool").args([
            "create",
            &format!("{d}/conf.db"),
            "/usr/share/openvswitch/vswitch.ovsschema",
        ]));
        ovs.run(ovs.cmd("ovsdb-server").args([
            format!("{d}/conf.db"),
            format!("--remote=punix:{d}/db.sock"),
            format!("--pidfile={d}/ovsdb-server.pid"),
            format!("--log-file={d}/ovsdb-server.log"),
            "--detach".into(),
            "--no-chdir".into(),
        ]));
        ovs.pid("ovsdb-server.pid");
        ovs.run(ovs.cmd("ovs-vsctl").args(["--timeout=20", "--no-wait", "init"]));
        ovs.run(ovs.cmd("ip").args(["netns", "exec", lab.sw.name(), "ovs-vswitchd"]).args([
            format!("unix:{d}/db.sock"),
            format!("--pidfile={d}/ovs-vswitchd.pid"),
            format!("--log-file={d}/ovs-vswitchd.log"),
            "--detach".into(),
            "--no-chdir".into(),
        ]));
        ovs.pid("ovs-vswitchd.pid");
        let mut args: Vec<String> = [
            "--timeout=20",
            "add-br",
            "br0",
            "--",
            "set",
            "bridge",
            "br0",
            "datapath_type=netdev",
            "protocols=OpenFlow13",
            "fail_mode=secure",
        ]
        .map(String::from)
        .to_vec();
        for (i, name) in lab.sw_if.iter().enumerate() {
            args.extend(
                ["--", "add-port", "br0", name, "--", "set", "interface", name]
                    .map(|s| s.to_string()),
            );
            args.push(format!("ofport_request={}", i + 1));
        }
        ovs.run(ovs.cmd("ovs-vsctl").args(&args));
        ovs
    }

    fn ofctl(&self, args: &[&str]) -> String {
        let br = format!("unix:{}/br0.mgmt", self.dir.0.display());
        let real: Vec<&str> =
            args.iter().map(|a| if *a == "BR" { br.as_str() } else { a }).collect();
        self.run(self.cmd("ovs-ofctl").args(["-O", "OpenFlow13", "--timeout=10"]).args(real))
    }

    /// Waits (bounded) until the bridge's management socket exists.
    fn wait_ready(&self) {
        let sock = self.dir.path("br0.mgmt");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !sock.exists() {
            assert!(Instant::now() < deadline, "{} never appeared", sock.display());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Ovs {
    fn drop(&mut self) {
        for &pid in self.pids.iter().rev() {
            // Only the daemons this test started, by PID.
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
        std::thread::sleep(Duration::from_millis(200));
        for &pid in &self.pids {
            if Path::new(&format!("/proc/{pid}")).exists() {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
        }
    }
}

/// `arping -c 3` and `ping -c 3` to the gateway from host 0: every request
/// answered, the ARP answer naming the gateway's MAC.
fn real_tools_get_answers(lab: &Lab, who: &str) {
    let ns = lab.h[0].name();
    let arping = bounded(
        Command::new("ip")
            .args(["netns", "exec", ns, "arping", "-c", "3", "-w", "10", "-I"])
            .args([lab.host_if[0].as_str(), "10.79.0.254"]),
        Duration::from_secs(30),
    );
    let out = text(&arping);
    assert!(arping.status.success(), "{who}: arping failed: {out}");
    assert!(out.contains("Received 3 response"), "{who}: arping: {out}");
    assert!(out.to_lowercase().contains("02:00:00:00:4f:fe"), "{who}: arping: {out}");
    let ping = bounded(
        Command::new("ip").args([
            "netns",
            "exec",
            ns,
            "ping",
            "-n",
            "-c",
            "3",
            "-i",
            "0.2",
            "-W",
            "2",
            "10.79.0.254",
        ]),
        Duration::from_secs(30),
    );
    let out = text(&ping);
    assert!(ping.status.success(), "{who}: ping failed: {out}");
    assert!(out.contains("3 received"), "{who}: ping: {out}");
}

/// The folded one's-complement sum of `b` (0xffff over a header whose
/// checksum is right).
fn csum(b: &[u8]) -> u16 {
    sluice_packet::checksum::fold(sluice_packet::checksum::sum(b))
}

/// A 60-byte ARP who-has 10.79.0.254 from host 0.
fn arp_request() -> Vec<u8> {
    let mac = H_MAC;
    let mut f = vec![0xff; 6];
    f.extend(mac);
    f.extend([0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
    f.extend(mac);
    f.extend(H_IP);
    f.extend([0; 6]);
    f.extend(GW_IP);
    f.resize(60, 0);
    f
}

/// An ICMP echo request from host 0 to the gateway (TTL 64, id 0x1234,
/// 24 bytes of data).
fn echo_request() -> Vec<u8> {
    let mut icmp = vec![8, 0, 0, 0, 0x0b, 0xad, 0, 1];
    icmp.extend((0u8..24).map(|i| i.wrapping_mul(7)));
    let c = !csum(&icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    let total = 20 + icmp.len();
    let mut ip = vec![0x45, 0, (total >> 8) as u8, total as u8, 0x12, 0x34, 0x40, 0, 64, 1, 0, 0];
    ip.extend(H_IP);
    ip.extend(GW_IP);
    let c = !csum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut f = GW_MAC.to_vec();
    f.extend(H_MAC);
    f.extend([0x08, 0x00]);
    f.extend(ip);
    f.extend(icmp);
    f
}

/// Sends `req` from host 0's interface and returns the first frame that
/// comes back from the gateway's MAC to host 0 within 5 s.
fn exchange(lab: &Lab, req: &[u8]) -> Vec<u8> {
    let ifname = lab.host_if[0].clone();
    let mac = H_MAC;
    assert_eq!((lab.mac_bytes(0), lab.ipv4(0).octets()), (H_MAC, H_IP));
    let req = req.to_vec();
    lab.h[0].enter(move || {
        let s = RawSocket::open(&ifname).expect("raw socket");
        s.send(&req).expect("send");
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut buf = vec![0u8; 2048];
        while Instant::now() < deadline {
            if let Some(n) = s.recv(&mut buf, Duration::from_millis(200)).expect("recv") {
                let f = &buf[..n.min(buf.len())];
                if f.len() >= 14 && f[..6] == mac && f[6..12] == GW_MAC {
                    return f.to_vec();
                }
            }
        }
        panic!("no reply from the gateway within 5 s");
    })
}

/// The replies to one ARP request and one echo request.
fn replies(lab: &Lab) -> (Vec<u8>, Vec<u8>) {
    (exchange(lab, &arp_request()), exchange(lab, &echo_request()))
}

/// The replies are what the flows say: checked field by field, so a
/// reply both switches got wrong the same way still fails.
fn check_replies(arp: &[u8], echo: &[u8]) {
    let (mac, ip) = (H_MAC, H_IP);
    let mut want = mac.to_vec();
    want.extend(GW_MAC);
    want.extend([0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 2]);
    want.extend(GW_MAC);
    want.extend(GW_IP);
    want.extend(mac);
    want.extend(ip);
    want.resize(60, 0);
    assert_eq!(arp, &want[..], "ARP reply");
    let req = echo_request();
    assert_eq!(echo.len(), req.len(), "echo reply length");
    assert_eq!(&echo[..6], &mac, "eth_dst");
    assert_eq!(&echo[6..12], &GW_MAC, "eth_src");
    let ip_hdr = &echo[14..34];
    assert_eq!(&ip_hdr[12..16], &GW_IP, "ip_src");
    assert_eq!(&ip_hdr[16..20], &ip, "ip_dst");
    assert_eq!(&ip_hdr[..10], &req[14..24], "rest of the IPv4 header as sent");
    assert_eq!(csum(ip_hdr), 0xffff, "IPv4 checksum verifies");
    let icmp = &echo[34..];
    assert_eq!(icmp[0], 0, "echo reply type");
    assert_eq!(&icmp[4..], &req[38..], "id, sequence and data echoed");
    assert_eq!(csum(icmp), 0xffff, "ICMP checksum verifies");
}

#[test]
fn gateway_flows_answer_arp_and_ping_like_open_vswitch() {
    need_root_and(&[
        "ip",
        "arping",
        "ping",
        "ovsdb-server",
        "ovs-vswitchd",
        "ovs-vsctl",
        "ovs-ofctl",
    ]);
    let flows = flows();
    let flows_s = flows.to_str().expect("utf-8 path");

    // sluice.
    let (arp_s, echo_s) = {
        let lab = Lab::new(1, OCTET);
        let dir = Scratch::new("responder");
        let (mut sw, target): (Proc, String) = lab.start_secure_switch(&dir);
        ok(&target, &["add-flows", flows_s]);
        real_tools_get_answers(&lab, "sluice");
        let r = replies(&lab);
        sw.assert_running();
        let dump = ok(&target, &["dump-flows"]).stdout;
        assert!(n_packets(&dump, &["arp", "NXM_OF_ARP_OP"]) >= 4, "{dump}");
        assert!(n_packets(&dump, &["icmp", "NXM_OF_ICMP_TYPE"]) >= 4, "{dump}");
        // The flows read back as ovs-ofctl prints them.
        assert!(
            dump.contains(
                "move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:02:00:00:00:4f:fe->eth_src,\
                 move:NXM_OF_IP_SRC[]->NXM_OF_IP_DST[],set_field:10.79.0.254->ip_src,\
                 load:0->NXM_OF_ICMP_TYPE[],IN_PORT"
            ),
            "{dump}"
        );
        r
    };
    check_replies(&arp_s, &echo_s);

    // Open vSwitch with the same flow file.
    let (arp_o, echo_o) = {
        let lab = Lab::new(1, OCTET);
        let ovs = Ovs::start(&lab);
        ovs.wait_ready();
        ovs.ofctl(&["add-flows", "BR", flows_s]);
        real_tools_get_answers(&lab, "Open vSwitch");
        let r = replies(&lab);
        drop(ovs);
        r
    };
    assert_eq!(arp_s, arp_o, "ARP replies differ (sluice, Open vSwitch)");
    assert_eq!(echo_s, echo_o, "echo replies differ (sluice, Open vSwitch)");
}
