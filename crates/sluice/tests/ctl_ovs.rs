//! `sluice ctl` against a real Open vSwitch 3.1.
//!
//! Each test starts a private userspace Open vSwitch (`ovsdb-server` +
//! `ovs-vswitchd` with the `netdev` datapath) whose `ovs-vswitchd` runs in a
//! fresh network namespace, with bridge `br0` speaking only OpenFlow 1.3,
//! two internal ports (1 `p1`, 2 `p2`) and a passive TCP listener
//! `ptcp:6653:127.0.0.1` inside that namespace. Both `sluice ctl` and the
//! reference `ovs-ofctl -O OpenFlow13` run inside the namespace
//! (`ip netns exec`) against `tcp:127.0.0.1:6653`; one tool writes, the
//! other reads, and the two printouts of the same switch state must be
//! equal line for line, with only durations and xids normalised (some
//! tests also sort the flow lines).
//!
//! The tests FAIL (they do not skip) when Open vSwitch is missing: install
//! `openvswitch-switch`. They need root for the namespaces. Cleanup (the
//! two daemons, by PID after checking their name; the namespace; the temp
//! directory) happens in `Drop`, so also when an assertion fails. Every
//! external command runs with a time limit.
#![allow(clippy::zombie_processes)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

const SCHEMA: &str = "/usr/share/openvswitch/vswitch.ovsschema";
const PORT: u16 = 6653;
const TIMEOUT: Duration = Duration::from_secs(60);
static INSTANCE: AtomicU32 = AtomicU32::new(0);

/// The result of one command.
#[derive(Debug)]
struct Out {
    ok: bool,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn drain(mut r: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut v = Vec::new();
        let _ = r.read_to_end(&mut v);
        String::from_utf8_lossy(&v).into_owned()
    })
}

/// Run `cmd`, killing it (our own child, by handle) after `limit`.
fn run(cmd: &mut Command, limit: Duration) -> Out {
    let desc = format!("{cmd:?}");
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {desc}: {e}"));
    finish(child, limit, &desc)
}

fn finish(mut child: Child, limit: Duration, desc: &str) -> Out {
    let out = drain(child.stdout.take().expect("piped stdout"));
    let err = drain(child.stderr.take().expect("piped stderr"));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{desc} did not finish within {limit:?}");
        }
        thread::sleep(Duration::from_millis(10));
    };
    Out {
        ok: status.success(),
        code: status.code(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

fn which(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
}

/// A private Open vSwitch; see the module docs.
struct Ovs {
    dir: PathBuf,
    ns: Option<String>,
    pids: Vec<(u32, &'static str)>,
}

impl Ovs {
    fn start() -> Ovs {
        for t in ["ip", "ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl"] {
            assert!(
                which(t),
                "`{t}` not found: these tests need Open vSwitch (apt-get install openvswitch-switch) and iproute2"
            );
        }
        assert!(Path::new(SCHEMA).exists(), "{SCHEMA} missing: install openvswitch-switch");
        let n = INSTANCE.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        let dir = std::env::temp_dir().join(format!("sluice-ctl-{pid}-{n}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut ovs = Ovs { dir, ns: None, pids: Vec::new() };
        ovs.boot(&format!("sctl-{pid}-{n}"));
        ovs
    }

    fn env(&self, c: &mut Command) {
        for v in ["OVS_RUNDIR", "OVS_LOGDIR", "OVS_DBDIR", "OVS_SYSCONFDIR"] {
            c.env(v, &self.dir);
        }
    }

    fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        self.env(&mut c);
        c
    }

    /// `prog` inside the switch's namespace.
    fn in_ns(&self, prog: &str) -> Command {
        let mut c = self.cmd("ip");
        c.args(["netns", "exec", self.ns.as_deref().expect("namespace"), prog]);
        c
    }

    fn must(&self, what: &str, o: Out) -> String {
        assert!(o.ok, "{what} failed: {}{}", o.stdout, o.stderr);
        o.stdout
    }

    fn read_pid(&self, file: &str) -> u32 {
        let p = self.dir.join(file);
        std::fs::read_to_string(&p)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or_else(|| panic!("no pid in {}", p.display()))
    }

    fn boot(&mut self, ns: &str) {
        let ds = self.dir.display().to_string();
        let t = Duration::from_secs(30);
        assert!(!Path::new("/run/netns").join(ns).exists(), "namespace {ns} already exists");
        let o = run(Command::new("ip").args(["netns", "add", ns]), t);
        self.must("ip netns add (needs root)", o);
        self.ns = Some(ns.to_string());
        let o = run(Command::new("ip").args(["-n", ns, "link", "set", "lo", "up"]), t);
        self.must("ip link set lo up", o);
        let o = run(self.cmd("ovsdb-tool").args(["create", &format!("{ds}/conf.db"), SCHEMA]), t);
        self.must("ovsdb-tool create", o);
        let o = run(
            self.cmd("ovsdb-server").args([
                format!("{ds}/conf.db"),
                format!("--remote=punix:{ds}/db.sock"),
                format!("--pidfile={ds}/ovsdb-server.pid"),
                format!("--log-file={ds}/ovsdb-server.log"),
                "--detach".into(),
                "--no-chdir".into(),
            ]),
            t,
        );
        self.must("ovsdb-server", o);
        self.pids.push((self.read_pid("ovsdb-server.pid"), "ovsdb-server"));
        self.vsctl(&["--no-wait", "init"]);
        let o = run(
            self.in_ns("ovs-vswitchd").args([
                format!("unix:{ds}/db.sock"),
                format!("--pidfile={ds}/ovs-vswitchd.pid"),
                format!("--log-file={ds}/ovs-vswitchd.log"),
                "--detach".into(),
                "--no-chdir".into(),
            ]),
            t,
        );
        self.must("ovs-vswitchd", o);
        self.pids.push((self.read_pid("ovs-vswitchd.pid"), "ovs-vswitchd"));
        self.vsctl(&[
            "add-br",
            "br0",
            "--",
            "set",
            "bridge",
            "br0",
            "datapath_type=netdev",
            "protocols=OpenFlow13",
            "fail_mode=secure",
            "other_config:datapath-id=00000000000000a1",
            "--",
            "add-port",
            "br0",
            "p1",
            "--",
            "set",
            "interface",
            "p1",
            "type=internal",
            "ofport_request=1",
            "--",
            "add-port",
            "br0",
            "p2",
            "--",
            "set",
            "interface",
            "p2",
            "type=internal",
            "ofport_request=2",
        ]);
        self.vsctl(&["set-controller", "br0", &format!("ptcp:{PORT}:127.0.0.1")]);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let o = self.ofctl(&["show"]);
            if o.ok {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the OpenFlow listener never came up: {}; see {ds}/ovs-vswitchd.log",
                o.stderr
            );
            thread::sleep(Duration::from_millis(100));
        }
    }

    fn vsctl(&self, args: &[&str]) -> String {
        let o = run(self.cmd("ovs-vsctl").arg("--timeout=20").args(args), TIMEOUT);
        self.must(&format!("ovs-vsctl {args:?}"), o)
    }

    fn target(&self) -> String {
        format!("tcp:127.0.0.1:{PORT}")
    }

    /// `ovs-ofctl -O OpenFlow13 CMD TARGET ARGS...` in the namespace.
    fn ofctl(&self, args: &[&str]) -> Out {
        let (cmd, rest) = args.split_first().expect("a command");
        run(
            self.in_ns("ovs-ofctl")
                .args(["-O", "OpenFlow13", "--timeout=20", cmd, &self.target()])
                .args(rest),
            TIMEOUT,
        )
    }

    fn ofctl_ok(&self, args: &[&str]) -> String {
        let o = self.ofctl(args);
        self.must(&format!("ovs-ofctl {args:?}"), o)
    }

    fn sluice_cmd(&self, args: &[&str]) -> Command {
        let (cmd, rest) = args.split_first().expect("a command");
        let mut c = self.in_ns(env!("CARGO_BIN_EXE_sluice"));
        c.args(["ctl", &self.target(), cmd]).args(rest);
        if !rest.contains(&"--timeout") {
            c.args(["--timeout", "30"]);
        }
        c
    }

    /// `sluice ctl TARGET CMD ARGS... --timeout 30` in the namespace (no
    /// `--timeout 30` if ARGS have their own).
    fn sluice(&self, args: &[&str]) -> Out {
        run(&mut self.sluice_cmd(args), TIMEOUT)
    }

    fn sluice_ok(&self, args: &[&str]) -> String {
        let o = self.sluice(args);
        self.must(&format!("sluice ctl {args:?}"), o)
    }
}

impl Drop for Ovs {
    fn drop(&mut self) {
        for (pid, comm) in self.pids.drain(..).rev() {
            let proc_comm = format!("/proc/{pid}/comm");
            if !std::fs::read_to_string(&proc_comm).is_ok_and(|c| c.trim() == comm) {
                continue;
            }
            let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while Path::new(&proc_comm).exists() && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(20));
            }
            if Path::new(&proc_comm).exists() {
                let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            }
        }
        if let Some(ns) = self.ns.take() {
            let _ = Command::new("ip").args(["netns", "del", &ns]).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

// ---------------------------------------------------------------------------
// Normalisation

/// Replace `duration=1.234s` / `duration:1.234s` by `duration=*`.
fn no_durations(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("duration") {
        let after = &rest[i + 8..];
        let sep = after.chars().next();
        out.push_str(&rest[..i + 8]);
        if matches!(sep, Some('=') | Some(':')) {
            let v = &after[1..];
            let end =
                v.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 's')).unwrap_or(v.len());
            out.push_str("=*");
            rest = &v[end..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// One dump's flow lines, without the reply header and durations, sorted.
fn flows(dump: &str) -> Vec<String> {
    let mut lines = dump.lines();
    let head = lines.next().unwrap_or_default();
    assert!(head.starts_with("OFPST_FLOW reply (OF1.3)"), "not a flow dump: {dump}");
    // ovs-ofctl prints each part of a multipart reply with its own header.
    let mut v: Vec<String> = lines
        .filter(|l| !l.starts_with("OFPST_FLOW reply (OF1.3)"))
        .map(|l| no_durations(l).trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    v.sort();
    v
}

/// Everything but the first line's xid, durations normalised.
fn body(dump: &str) -> String {
    let text = no_durations(dump.trim_end());
    match text.split_once("(xid=") {
        Some((a, b)) => format!("{a}{}", b.split_once(')').map(|x| x.1).unwrap_or(b)),
        None => text,
    }
}

/// A whole printout with durations and every header's xid normalised:
/// what must be equal line for line.
fn printout(dump: &str) -> String {
    let text = no_durations(dump.trim_end());
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("(xid=0x") {
        out.push_str(&rest[..i]);
        out.push_str("(xid=*)");
        rest = rest[i..].split_once(')').map_or("", |x| x.1);
    }
    out.push_str(rest);
    out
}

/// `sluice ctl ARGS` and `ovs-ofctl ARGS` print the same text, line for
/// line (durations and xids normalised); returns sluice's printout.
fn assert_same_printout(ovs: &Ovs, args: &[&str]) -> String {
    let ours = printout(&ovs.sluice_ok(args));
    let theirs = printout(&ovs.ofctl_ok(args));
    if ours != theirs {
        let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
        let diff: Vec<String> = (0..a.len().max(b.len()))
            .filter(|&i| a.get(i) != b.get(i))
            .take(12)
            .map(|i| {
                format!(
                    "line {}:\n  sluice:    {}\n  ovs-ofctl: {}",
                    i + 1,
                    a.get(i).unwrap_or(&"<none>"),
                    b.get(i).unwrap_or(&"<none>")
                )
            })
            .collect();
        panic!(
            "sluice ctl and ovs-ofctl print {args:?} differently ({} vs {} lines):\n{}",
            a.len(),
            b.len(),
            diff.join("\n")
        );
    }
    ours
}

fn assert_same_flows(ovs: &Ovs, filter: &[&str]) -> Vec<String> {
    let mut a = vec!["dump-flows"];
    a.extend_from_slice(filter);
    let ours = flows(&ovs.sluice_ok(&a));
    let theirs = flows(&ovs.ofctl_ok(&a));
    if ours != theirs {
        let only_ours: Vec<&String> =
            ours.iter().filter(|l| !theirs.contains(l)).take(10).collect();
        let only_theirs: Vec<&String> =
            theirs.iter().filter(|l| !ours.contains(l)).take(10).collect();
        panic!(
            "sluice ctl and ovs-ofctl disagree on dump-flows {filter:?} ({} vs {} flows)\nonly sluice: {only_ours:#?}\nonly ovs-ofctl: {only_theirs:#?}",
            ours.len(),
            theirs.len()
        );
    }
    ours
}

// ---------------------------------------------------------------------------
// Tests

/// Flows of [`EVERY_FIELD_ACTION_INSTRUCTION`] that `sluice ctl` cannot
/// write, by (table, priority), with its parser's answer.
const SLUICE_CANNOT_WRITE: &[(u8, u16, &str)] = &[
    (0, 130, "ipv6_src: value has bits set outside the mask (ovs-ofctl ANDs them away)"),
    (1, 2, "output(port=1,max_len=100) is Nicira's output-trunc, which sluice only prints"),
    (1, 40, "set_field cannot take a mask in OpenFlow 1.3 (ovs-ofctl sends a Nicira load)"),
];

fn cannot_write(line: &str) -> bool {
    SLUICE_CANNOT_WRITE.iter().any(|(t, p, _)| {
        line.starts_with(&format!("table={t},priority={p},"))
            || (line.contains(&format!(" table={t}, "))
                && (line.contains(&format!(" priority={p},"))
                    || line.contains(&format!(" priority={p} "))))
    })
}

/// A flow set covering every OpenFlow 1.3 match field ovs-ofctl 3.1 can
/// write (exact and masked where the field takes a mask), every action and
/// every instruction, for ovs-ofctl to install and both tools to dump.
///
/// Left out, with ovs-ofctl 3.1's answer:
/// - `in_phy_port`, `pbb_isid`, `ipv6_exthdr` (match): "unknown keyword";
/// - `copy_ttl_out`, `copy_ttl_in`, `push_pbb`, `pop_pbb`: "unknown action";
/// - `set_field:1->mpls_bos`: "mpls_bos is read-only";
/// - `set_field:4->vlan_pcp` without a VLAN match: "actions are invalid
///   with specified match (OFPBAC_MATCH_INCONSISTENT)" (kept with `dl_vlan=1`);
/// - `output:0xfffffff0`: "output to unknown port";
/// - masks OpenFlow 1.3 does not allow (`tcp_src=0x100/0xff00`,
///   `udp_src`, `sctp_dst`, `nd_target=fe80::/64`) and `set_field:1->in_port`,
///   `set_field:0x10->nw_tos` (an NXM field in a set-field): ovs-ofctl and
///   Open vSwitch take them, but sluice's codec refuses such a flow-stats
///   reply (OFPBMC_BAD_MASK, OFPBAC_BAD_SET_TYPE, as the switch answers a
///   flow-mod), so `sluice ctl dump-flows` cannot show them;
/// - instructions out of execution order (`goto_table:2,write_metadata:...`):
///   "invalid instruction ordering: write_metadata must appear before
///   goto_table" — the order on the wire is tested in the printer's unit
///   tests instead.
const EVERY_FIELD_ACTION_INSTRUCTION: &str = "\
# Match fields, exact and masked.
table=0,priority=100,in_port=1,actions=output:2
table=0,in_port=2,actions=drop
table=0,priority=101,in_port=LOCAL,actions=IN_PORT
table=0,priority=102,metadata=0x1234,actions=output:1
table=0,priority=103,metadata=0x1200/0xff00,actions=output:1
table=0,priority=104,dl_dst=00:11:22:33:44:55,dl_src=66:77:88:99:aa:bb,actions=NORMAL
table=0,priority=105,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,dl_src=00:11:22:00:00:00/ff:ff:ff:00:00:00,actions=FLOOD
table=0,priority=106,dl_type=0x88cc,actions=ALL
table=0,priority=107,dl_vlan=10,actions=LOCAL
table=0,priority=108,vlan_tci=0x0000/0x1fff,actions=CONTROLLER:65535
table=0,priority=109,vlan_tci=0x1000/0x1000,actions=CONTROLLER:0
table=0,priority=110,dl_vlan=5,dl_vlan_pcp=3,actions=output:1,output:2
table=0,priority=111,vlan_vid=0x1005/0x1fff,actions=output:TABLE
table=0,priority=112,vlan_vid=0x1000/0x1000,vlan_pcp=7,actions=drop
table=0,priority=113,vlan_vid=0x1004/0x1ffc,actions=drop
table=0,priority=114,ip,nw_src=10.0.0.1,nw_dst=10.0.0.0/8,actions=drop
table=0,priority=115,ip,nw_src=10.0.0.0/255.0.255.0,actions=drop
table=0,priority=116,ip,nw_tos=32,nw_ecn=2,actions=drop
table=0,priority=117,ip,ip_dscp=12,actions=drop
table=0,priority=118,ip,nw_proto=47,actions=drop
table=0,priority=119,tcp,tp_src=1234,tp_dst=80,actions=drop
table=0,priority=121,udp,udp_src=53,udp_dst=5353,actions=drop
table=0,priority=123,sctp,sctp_src=1,sctp_dst=2,actions=drop
table=0,priority=125,icmp,icmp_type=8,icmp_code=0,actions=drop
table=0,priority=126,arp,arp_op=1,arp_spa=10.0.0.1,arp_tpa=10.0.0.0/24,arp_sha=00:11:22:33:44:55,arp_tha=00:00:00:00:00:00,actions=drop
table=0,priority=127,arp,arp_sha=00:11:00:00:00:00/ff:ff:00:00:00:00,arp_tha=00:00:00:00:00:01/00:00:00:00:00:ff,actions=drop
table=0,priority=128,rarp,arp_op=3,actions=drop
table=0,priority=129,ipv6,ipv6_src=2001:db8::1,ipv6_dst=2001:db8::/32,actions=drop
table=0,priority=130,ipv6,ipv6_src=2001:db8::/ffff:0:ffff::,ipv6_label=0x12345,actions=drop
table=0,priority=131,ipv6,ipv6_label=0x100/0xf00,actions=drop
table=0,priority=132,tcp6,tp_src=22,actions=drop
table=0,priority=133,udp6,udp_dst=547,actions=drop
table=0,priority=134,sctp6,sctp_dst=9,actions=drop
table=0,priority=135,icmp6,icmp_type=128,icmp_code=0,actions=drop
table=0,priority=136,icmp6,icmp_type=135,nd_target=fe80::1,nd_sll=00:11:22:33:44:55,actions=drop
table=0,priority=137,icmp6,icmp_type=136,nd_target=fe80::1,nd_tll=00:11:22:33:44:66,actions=drop
table=0,priority=138,mpls,mpls_label=77,mpls_tc=3,mpls_bos=1,actions=drop
table=0,priority=139,mplsm,mpls_label=78,actions=drop
table=0,priority=140,tun_id=0x42,actions=drop
table=0,priority=141,tun_id=0x40/0xf0,actions=drop
table=0,priority=142,ip,nw_proto=2,actions=drop
# Actions.
table=1,priority=1,actions=output:1,output:IN_PORT,output:CONTROLLER,output:LOCAL,output:NORMAL,output:FLOOD,output:ALL,output:TABLE
table=1,priority=2,actions=output(port=1,max_len=100),CONTROLLER:200
table=1,priority=3,actions=set_queue:5,output:1
table=1,priority=4,actions=push_vlan:0x8100,set_field:4196->vlan_vid,set_field:3->vlan_pcp,output:1
table=1,priority=5,dl_vlan=3,actions=pop_vlan,output:1
table=1,priority=6,actions=push_vlan:0x88a8,output:1
table=1,priority=7,ip,actions=push_mpls:0x8847,set_field:10->mpls_label,set_field:2->mpls_tc,set_mpls_ttl(9),dec_mpls_ttl,output:1
table=1,priority=8,mpls,actions=pop_mpls:0x0800,output:1
table=1,priority=9,mpls,actions=push_mpls:0x8848,output:1
table=1,priority=11,ip,actions=dec_ttl,mod_nw_ttl:7,output:1
table=1,priority=12,ip,actions=set_field:10.1.1.1->ip_src,set_field:10.2.2.2->ip_dst,set_field:12->ip_dscp,set_field:1->ip_ecn,output:1
table=1,priority=13,actions=set_field:00:11:22:33:44:55->eth_src,set_field:66:77:88:99:aa:bb->eth_dst,output:1
table=1,priority=14,tcp,actions=set_field:80->tcp_src,set_field:8080->tcp_dst,output:1
table=1,priority=15,udp,actions=set_field:53->udp_src,set_field:5353->udp_dst,output:1
table=1,priority=16,sctp,actions=set_field:1->sctp_src,set_field:2->sctp_dst,output:1
table=1,priority=17,icmp,actions=set_field:0->icmp_type,set_field:0->icmp_code,output:1
table=1,priority=18,arp,actions=set_field:2->arp_op,set_field:10.0.0.1->arp_spa,set_field:10.0.0.2->arp_tpa,set_field:00:11:22:33:44:55->arp_sha,set_field:00:11:22:33:44:66->arp_tha,output:1
table=1,priority=19,ipv6,actions=set_field:2001:db8::1->ipv6_src,set_field:2001:db8::2->ipv6_dst,set_field:0x12345->ipv6_label,output:1
table=1,priority=20,icmp6,icmp_type=135,actions=set_field:fe80::1->nd_target,set_field:00:11:22:33:44:55->nd_sll,set_field:1->icmpv6_code,output:1
table=1,priority=21,icmp6,icmp_type=136,actions=set_field:00:11:22:33:44:66->nd_tll,set_field:129->icmpv6_type,output:1
table=1,priority=23,actions=set_field:0x42->tun_id,output:1
table=1,priority=24,actions=set_field:0x1234->metadata,output:1
table=1,priority=27,actions=group:1
table=1,priority=37,dl_vlan=1,actions=set_field:4->vlan_pcp,output:1
table=1,priority=38,actions=mod_vlan_vid:5,output:1
table=1,priority=40,ip,actions=set_field:10.0.0.0/255.0.0.0->ip_src,output:1
table=1,priority=0,actions=drop
# Instructions, alone and all together; flow parameters.
table=2,priority=28,actions=meter:1,output:1
table=2,priority=29,actions=clear_actions
table=2,priority=30,actions=write_actions(output:1,set_queue:3)
table=2,priority=31,actions=write_metadata:0x5/0xff
table=2,priority=32,actions=write_metadata:0x5
table=2,priority=33,actions=goto_table:3
table=2,priority=34,actions=meter:1,output:2,clear_actions,write_actions(output:1),write_metadata:0x1/0x1,goto_table:3
table=2,priority=35,ip,actions=dec_ttl,write_actions(group:1),goto_table:3
table=2,priority=39,idle_timeout=100,hard_timeout=200,cookie=0xabc,send_flow_rem,check_overlap,actions=output:1
table=3,actions=drop
";

/// Every match field, action and instruction (see
/// [`EVERY_FIELD_ACTION_INSTRUCTION`]), written by ovs-ofctl, prints the
/// same from both tools, line for line and in the switch's order; written
/// again by `sluice ctl add-flows`, it gives the same switch state; so do
/// the groups, meters, ports, tables, features and description of the
/// switch, its table features included (condensed as ovs-ofctl condenses
/// them: `tun_{id,src,dst}` field groups, `tables 1...252: ditto`).
#[test]
fn every_field_action_and_instruction_prints_as_ovs_ofctl() {
    let ovs = Ovs::start();
    ovs.ofctl_ok(&["add-meter", "meter=1,kbps,burst,stats,band=type=drop,rate=1000,burst_size=50"]);
    // (A dscp_remark band: Open vSwitch's userspace datapath answers
    // OFPMMFC_BAD_BAND.)
    ovs.ofctl_ok(&["add-meter", "meter=2,pktps,band=type=drop,rate=50"]);
    ovs.ofctl_ok(&["add-group", "group_id=1,type=all,bucket=output:1,bucket=output:2"]);
    ovs.ofctl_ok(&["add-group", "group_id=2,type=select,bucket=weight:10,actions=set_field:00:11:22:33:44:55->eth_dst,output:1,bucket=weight:20,actions=output:2"]);
    ovs.ofctl_ok(&["add-group", "group_id=3,type=ff,bucket=watch_port:1,actions=output:1,bucket=watch_port:2,actions=output:2"]);
    ovs.ofctl_ok(&[
        "add-group",
        "group_id=4,type=indirect,bucket=actions=push_vlan:0x8100,set_field:4097->vlan_vid,group:1",
    ]);
    let file = ovs.dir.join("every.txt");
    std::fs::write(&file, EVERY_FIELD_ACTION_INSTRUCTION).expect("write flows");
    ovs.ofctl_ok(&["add-flows", &file.display().to_string()]);
    let n = EVERY_FIELD_ACTION_INSTRUCTION
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count();

    let all = assert_same_printout(&ovs, &["dump-flows"]);
    assert_eq!(all.matches(" cookie=0x").count(), n, "every flow was installed: {all}");
    for t in ["table=0", "table=1", "table=2", "table=3", "in_port=1", "ip", "dl_vlan=5"] {
        assert_same_printout(&ovs, &["dump-flows", t]);
    }
    // The issue's two examples.
    assert!(all.contains(" priority=108,vlan_tci=0x0000/0x1fff actions="), "{all}");
    assert!(
        all.contains(" priority=34 actions=meter:1,output:2,clear_actions,write_actions(output:1),write_metadata:0x1/0x1,goto_table:3"),
        "{all}"
    );
    // The default priority is left out, as ovs-ofctl does.
    assert!(all.contains(", in_port=2 actions=drop") && all.contains(", actions=drop"), "{all}");

    for args in [
        &["dump-groups"][..],
        &["dump-meters"],
        &["dump-meters", "meter=2"],
        &["dump-ports-desc"],
        &["dump-desc"],
        &["dump-aggregate"],
        &["dump-aggregate", "table=1"],
        &["dump-tables"],
        &["meter-stats"],
        &["dump-group-stats"],
        &["dump-ports", "1"],
        &["dump-group-features"],
        &["meter-features"],
        &["queue-stats"],
        &["dump-table-features"],
        &["show"],
    ] {
        assert_same_printout(&ovs, args);
    }
    // The same flows written by sluice ctl give the same switch state,
    // printed the same by both tools (but for SLUICE_CANNOT_WRITE).
    let sorted = |t: &str| -> Vec<String> {
        let mut v: Vec<String> =
            t.lines().skip(1).filter(|l| !cannot_write(l)).map(str::to_string).collect();
        v.sort();
        v
    };
    let by_ovs = sorted(&all);
    ovs.ofctl_ok(&["del-flows"]);
    let text: String = EVERY_FIELD_ACTION_INSTRUCTION
        .lines()
        .filter(|l| !cannot_write(l))
        .map(|l| format!("{l}\n"))
        .collect();
    let file = ovs.dir.join("every-by-sluice.txt");
    std::fs::write(&file, text).expect("write flows");
    ovs.sluice_ok(&["add-flows", &file.display().to_string()]);
    let by_sluice = sorted(&assert_same_printout(&ovs, &["dump-flows"]));
    let only = |a: &[String], b: &[String]| -> Vec<String> {
        a.iter().filter(|l| !b.contains(l)).cloned().collect()
    };
    assert!(
        by_sluice == by_ovs,
        "written by sluice ctl: {:#?}\nwritten by ovs-ofctl: {:#?}",
        only(&by_sluice, &by_ovs),
        only(&by_ovs, &by_sluice)
    );
    assert_eq!(by_sluice.len(), n - SLUICE_CANNOT_WRITE.len());

    // ovs-ofctl -O OpenFlow13 ignores a group id (OpenFlow 1.3's group
    // description request has none) and prints every group; sluice prints
    // just the one asked for, as ovs-ofctl's line for it.
    let theirs = printout(&ovs.ofctl_ok(&["dump-groups"]));
    let one = printout(&ovs.sluice_ok(&["dump-groups", "2"]));
    let mut lines = one.lines();
    assert_eq!(lines.next(), theirs.lines().next());
    let g2: Vec<&str> = lines.collect();
    assert!(g2.len() == 1 && theirs.lines().any(|l| l == g2[0]), "{one}\n{theirs}");
}

/// Flows written by one tool are read back identically by both.
#[test]
fn flows_written_by_either_tool_read_the_same() {
    let ovs = Ovs::start();
    let ours = [
        "table=0,priority=10,in_port=1,actions=output:2",
        "table=0,priority=20,tcp,nw_src=10.0.0.0/8,tp_dst=80,idle_timeout=50,actions=set_field:10.1.1.1->ip_dst,goto_table:1",
        "table=1,priority=5,dl_vlan=10,actions=pop_vlan,output:1",
        "table=1,cookie=0x55,udp6,ipv6_src=2001:db8::/32,udp_dst=53,actions=push_vlan:0x8100,set_field:4196->vlan_vid,output:2",
        "table=2,priority=7,arp,arp_tpa=192.168.1.1,dl_src=00:11:22:33:44:55,actions=CONTROLLER:128",
        "table=0,priority=1,actions=drop",
    ];
    for f in ours {
        ovs.sluice_ok(&["add-flow", f]);
    }
    let theirs = [
        "table=3,priority=100,ip,nw_dst=192.168.0.0/16,nw_tos=32,actions=dec_ttl,write_actions(output:1),goto_table:4",
        "table=4,priority=2,in_port=2,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,actions=clear_actions,write_metadata:0x5/0xff",
        "table=4,priority=3,mpls,mpls_label=77,actions=pop_mpls:0x0800,output:1",
    ];
    for f in theirs {
        ovs.ofctl_ok(&["add-flow", f]);
    }
    let all = assert_same_flows(&ovs, &[]);
    assert_eq!(all.len(), ours.len() + theirs.len(), "{all:#?}");
    assert!(all.iter().any(|l| l.contains("priority=10,in_port=1 actions=output:2")), "{all:#?}");
    assert!(all.iter().any(|l| l.contains("cookie=0x55")), "{all:#?}");

    // Filters.
    let t1 = assert_same_flows(&ovs, &["table=1"]);
    assert_eq!(t1.len(), 2, "{t1:#?}");
    assert_eq!(assert_same_flows(&ovs, &["in_port=2"]).len(), 1);
    assert_eq!(assert_same_flows(&ovs, &["cookie=0x55/0xffffffffffffffff"]).len(), 1);
    let agg = ovs.sluice_ok(&["dump-aggregate", "table=4"]);
    assert_eq!(body(&agg), body(&ovs.ofctl_ok(&["dump-aggregate", "table=4"])));
    assert!(agg.contains("flow_count=2"), "{agg}");

    // Modify: non-strict hits every table-0 flow matching in_port=1 ...
    ovs.sluice_ok(&["mod-flows", "table=0,in_port=1,actions=output:LOCAL"]);
    let after = assert_same_flows(&ovs, &["table=0"]);
    assert!(after.iter().any(|l| l.ends_with("priority=10,in_port=1 actions=LOCAL")), "{after:#?}");
    // ... strict needs the priority too.
    ovs.sluice_ok(&["mod-flows", "--strict", "table=0,priority=11,in_port=1,actions=drop"]);
    assert!(assert_same_flows(&ovs, &["table=0"]).iter().any(|l| l.ends_with("actions=LOCAL")));
    ovs.sluice_ok(&["mod-flows", "--strict", "table=0,priority=10,in_port=1,actions=output:2"]);
    assert!(assert_same_flows(&ovs, &["table=0"])
        .iter()
        .any(|l| l.ends_with("priority=10,in_port=1 actions=output:2")));

    // Delete: strict with the wrong priority deletes nothing; then right.
    ovs.sluice_ok(&["del-flows", "--strict", "table=1,priority=6,dl_vlan=10"]);
    assert_eq!(assert_same_flows(&ovs, &["table=1"]).len(), 2);
    ovs.sluice_ok(&["del-flows", "--strict", "table=1,priority=5,dl_vlan=10"]);
    assert_eq!(assert_same_flows(&ovs, &["table=1"]).len(), 1);
    // Non-strict across all tables.
    ovs.sluice_ok(&["del-flows", "ip"]);
    let left = assert_same_flows(&ovs, &[]);
    assert!(!left.iter().any(|l| l.contains("nw_dst=192.168.0.0/16")), "{left:#?}");
    assert!(!left.iter().any(|l| l.contains("tcp,")), "{left:#?}");
    ovs.sluice_ok(&["del-flows"]);
    assert!(assert_same_flows(&ovs, &[]).is_empty());
}

/// `add-flows FILE`: comments, blank lines, command words, many flows in
/// one pipelined batch; a bad line stops everything before connecting.
#[test]
fn add_flows_from_a_file() {
    let ovs = Ovs::start();
    let file = ovs.dir.join("flows.txt");
    let mut text = String::from("# 2000 L3 flows\n\n");
    for i in 0..2000u32 {
        text.push_str(&format!(
            "table=0,priority=10,ip,nw_dst=10.1.{}.{},actions=output:2\n",
            i >> 8,
            i & 255
        ));
        if i % 500 == 0 {
            text.push_str("   # an indented comment\n\n");
        }
    }
    text.push_str("delete_strict table=0,priority=10,ip,nw_dst=10.1.0.7\n");
    text.push_str("modify table=0,ip,nw_dst=10.1.0.8,actions=output:1\n");
    std::fs::write(&file, &text).expect("write flows");
    let f = file.display().to_string();
    let o = ovs.sluice(&["add-flows", &f]);
    assert!(o.ok, "{o:?}");
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{o:?}");
    let agg = ovs.ofctl_ok(&["dump-aggregate"]);
    assert!(agg.contains("flow_count=1999"), "{agg}");
    let all = assert_same_flows(&ovs, &[]);
    assert_eq!(all.len(), 1999);
    assert!(!all.iter().any(|l| l.contains("nw_dst=10.1.0.7 ")));
    assert!(all.iter().any(|l| l.ends_with("nw_dst=10.1.0.8 actions=output:1")), "modify line");

    // A syntax error on line 3: caret, file:line, exit != 0, nothing sent.
    let bad = ovs.dir.join("bad.txt");
    std::fs::write(
        &bad,
        "table=0,priority=1,in_port=1,actions=drop\n\nip,nw_dst=10.0.0.300,actions=drop\n",
    )
    .expect("write");
    let b = bad.display().to_string();
    let o = ovs.sluice(&["add-flows", &b]);
    assert!(!o.ok && o.code == Some(1), "{o:?}");
    assert!(o.stderr.contains(&format!("{b}:3: ")), "{}", o.stderr);
    assert!(
        o.stderr.contains("\n  ip,nw_dst=10.0.0.300,actions=drop\n            ^"),
        "{}",
        o.stderr
    );
    assert!(!assert_same_flows(&ovs, &[]).iter().any(|l| l.contains("priority=1,in_port=1")));

    // The switch rejects two lines: both are named, the rest is installed.
    let rej = ovs.dir.join("rejected.txt");
    std::fs::write(
        &rej,
        "table=5,priority=1,actions=drop\ntable=5,priority=2,actions=group:77\ntable=5,priority=3,actions=drop\ntable=6,actions=goto_table:5\n",
    )
    .expect("write");
    let r = rej.display().to_string();
    let o = ovs.sluice(&["add-flows", &r]);
    assert!(!o.ok, "{o:?}");
    assert!(
        o.stderr.contains(&format!(
            "{r}:2: table=5,priority=2,actions=group:77: OFPET_BAD_ACTION OFPBAC_BAD_OUT_GROUP"
        )),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains(&format!(
            "{r}:4: table=6,actions=goto_table:5: OFPET_BAD_INSTRUCTION OFPBIC_BAD_TABLE_ID"
        )),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("the switch rejected 2 of 4 flow-mods"), "{}", o.stderr);
    assert_eq!(assert_same_flows(&ovs, &["table=5"]).len(), 2);

    // Standard input.
    let mut c = ovs.sluice_cmd(&["add-flows", "-"]);
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(b"table=7,priority=1,actions=drop\ntable=7,priority=2,actions=drop\n")
            .expect("write stdin");
    }
    let o = finish(child, TIMEOUT, "sluice ctl add-flows -");
    assert!(o.ok, "{o:?}");
    assert_eq!(assert_same_flows(&ovs, &["table=7"]).len(), 2);
}

/// Groups and meters: both directions, modify, stats, delete.
#[test]
fn groups_and_meters() {
    let ovs = Ovs::start();
    ovs.sluice_ok(&["add-group", "group_id=1,type=select,bucket=weight=10,actions=output:1,bucket=weight=20,actions=output:2"]);
    ovs.sluice_ok(&["add-group", "group_id=2,type=all,bucket=output:1,bucket=output:2"]);
    ovs.ofctl_ok(&["add-group", "group_id=3,type=ff,bucket=watch_port:1,actions=output:1,bucket=watch_port:2,actions=output:2"]);
    let groups = |o: &str| -> Vec<String> {
        let mut v: Vec<String> = o.lines().skip(1).map(|l| l.trim().to_string()).collect();
        v.sort();
        v
    };
    let ours = groups(&ovs.sluice_ok(&["dump-groups"]));
    assert_eq!(ours, groups(&ovs.ofctl_ok(&["dump-groups"])));
    assert_eq!(ours.len(), 3, "{ours:#?}");
    assert!(
        ours.iter()
            .any(|l| l == "group_id=2,type=all,bucket=actions=output:1,bucket=actions=output:2"),
        "{ours:#?}"
    );
    let one = ovs.sluice_ok(&["dump-groups", "3"]);
    assert_eq!(groups(&one).len(), 1, "{one}");
    assert!(one.contains("group_id=3,type=ff"), "{one}");

    ovs.sluice_ok(&["mod-group", "group_id=2,type=indirect,bucket=output:LOCAL"]);
    let after = groups(&ovs.ofctl_ok(&["dump-groups"]));
    assert!(
        after.iter().any(|l| l == "group_id=2,type=indirect,bucket=actions=LOCAL"),
        "{after:#?}"
    );

    // A flow using group 2, then group stats with a reference count.
    ovs.sluice_ok(&["add-flow", "priority=1,in_port=1,actions=group:2"]);
    let st = ovs.sluice_ok(&["dump-group-stats", "group_id=2"]);
    assert_eq!(body(&st), body(&ovs.ofctl_ok(&["dump-group-stats", "group_id=2"])), "{st}");
    assert!(st.contains("group_id=2,duration=") && st.contains("ref_count=1"), "{st}");
    let all = ovs.sluice_ok(&["dump-group-stats"]);
    assert_eq!(all.matches("group_id=").count(), 3, "{all}");
    let feat = ovs.sluice_ok(&["dump-group-features"]);
    assert!(
        feat.starts_with("OFPST_GROUP_FEATURES reply (OF1.3)") && feat.contains("select group"),
        "{feat}"
    );

    ovs.sluice_ok(&["del-groups", "group_id=1"]);
    assert_eq!(groups(&ovs.ofctl_ok(&["dump-groups"])).len(), 2);
    ovs.sluice_ok(&["del-groups"]);
    assert!(groups(&ovs.ofctl_ok(&["dump-groups"])).is_empty());
    // Deleting group 2 took its flow with it.
    assert!(assert_same_flows(&ovs, &[]).is_empty());

    // Meters.
    ovs.sluice_ok(&[
        "add-meter",
        "meter=1,kbps,burst,stats,band=type=drop,rate=1000,burst_size=100",
    ]);
    ovs.ofctl_ok(&["add-meter", "meter=2,pktps,band=type=drop,rate=50"]);
    let m = assert_same_printout(&ovs, &["dump-meters"]);
    assert!(
        m.contains("meter=1 kbps burst stats bands=\ntype=drop rate=1000 burst_size=100"),
        "{m}"
    );
    let m2 = ovs.sluice_ok(&["dump-meters", "meter=2"]);
    assert!(m2.contains("meter=2 pktps") && !m2.contains("meter=1"), "{m2}");
    ovs.sluice_ok(&["mod-meter", "meter=2,pktps,band=type=drop,rate=70"]);
    assert!(ovs.ofctl_ok(&["dump-meters"]).contains("rate=70"));
    let s = assert_same_printout(&ovs, &["meter-stats"]);
    assert!(s.contains("meter:1 flow_count:0") && s.contains("meter:2 flow_count:0"), "{s}");
    let f = ovs.sluice_ok(&["meter-features"]);
    assert!(
        f.starts_with("OFPST_METER_FEATURES reply (OF1.3)") && f.contains("band_types: drop"),
        "{f}"
    );
    ovs.sluice_ok(&["del-meter", "meter=1"]);
    let left = ovs.ofctl_ok(&["dump-meters"]);
    assert!(!left.contains("meter=1 ") && left.contains("meter=2 "), "{left}");
    ovs.sluice_ok(&["del-meters"]);
    assert!(!ovs.ofctl_ok(&["dump-meters"]).contains("meter="));
}

/// show, ports, tables, description, config and barrier.
#[test]
fn show_ports_tables_and_config() {
    let ovs = Ovs::start();
    let show = ovs.sluice_ok(&["show"]);
    assert!(show.starts_with("OFPT_FEATURES_REPLY (OF1.3) (xid=0x"), "{show}");
    assert!(show.contains("dpid:00000000000000a1"), "{show}");
    assert!(
        show.contains(" 1(p1): addr:")
            && show.contains(" 2(p2): addr:")
            && show.contains(" LOCAL(br0): addr:"),
        "{show}"
    );
    assert!(show.contains("OFPT_GET_CONFIG_REPLY (OF1.3)"), "{show}");
    // The port descriptions agree with ovs-ofctl's, block by block.
    let theirs = ovs.ofctl_ok(&["show"]);
    let ports = |s: &str| -> Vec<String> {
        let from = s.find("OFPST_PORT_DESC").expect("port desc");
        let to = s.find("OFPT_GET_CONFIG_REPLY").expect("config");
        s[from..to].lines().skip(1).map(str::to_string).collect()
    };
    assert_eq!(ports(&show), ports(&theirs));

    let desc = ovs.sluice_ok(&["dump-ports-desc"]);
    assert_eq!(body(&desc), body(&ovs.ofctl_ok(&["dump-ports-desc"])));
    let d1 = ovs.sluice_ok(&["dump-ports-desc", "p2"]);
    assert!(d1.contains(" 2(p2)") && !d1.contains("(p1)"), "{d1}");

    let ps = ovs.sluice_ok(&["dump-ports"]);
    assert!(ps.starts_with("OFPST_PORT reply (OF1.3)") && ps.contains(" 3 ports"), "{ps}");
    for (arg, want) in [("1", "port  1:"), ("p2", "port  2:"), ("LOCAL", "port LOCAL:")] {
        let p = ovs.sluice_ok(&["dump-ports", arg]);
        assert!(p.contains(" 1 ports") && p.contains(want), "{arg}: {p}");
    }
    let p = ovs.sluice(&["dump-ports", "nosuchport"]);
    assert!(!p.ok && p.stderr.contains("no port named `nosuchport`"), "{p:?}");

    let tables = ovs.sluice_ok(&["dump-tables"]);
    assert!(tables.starts_with("OFPST_TABLE reply (OF1.3)"), "{tables}");
    ovs.sluice_ok(&["add-flow", "table=3,priority=1,actions=drop"]);
    let tables = ovs.sluice_ok(&["dump-tables"]);
    assert!(tables.contains("  table 3:\n    active=1,"), "{tables}");
    // As ovs-ofctl prints them (no message header): table 0 in full, the
    // equal tables after it as one "ditto" line, the last one (no
    // goto_table) again.
    let tf = assert_same_printout(&ovs, &["dump-table-features"]);
    assert!(tf.starts_with("  table 0:\n    metadata: match=0xffffffffffffffff"), "{tf}");
    assert!(tf.contains("\n  tables 1...252: ditto\n\n  table 253:\n"), "{tf}");
    assert!(tf.contains("      arbitrary mask: dp_hash tun_{id,src,dst,"), "{tf}");

    let d = ovs.sluice_ok(&["dump-desc"]);
    assert_eq!(body(&d), body(&ovs.ofctl_ok(&["dump-desc"])));
    assert!(d.contains("Hardware: Open vSwitch"), "{d}");

    let c = ovs.sluice_ok(&["get-config"]);
    assert!(c.starts_with("OFPT_GET_CONFIG_REPLY (OF1.3)") && c.contains("frags=normal"), "{c}");
    ovs.sluice_ok(&["set-config", "miss_send_len=200"]);
    // The setting belongs to the connection that made it (OVS keeps
    // miss_send_len per controller connection), so a fresh get-config
    // shows the default again; set-config must still be accepted.
    let q = ovs.sluice_ok(&["queue-stats"]);
    assert!(q.starts_with("OFPST_QUEUE reply (OF1.3)"), "{q}");
    let b = ovs.sluice_ok(&["barrier"]);
    assert!(b.starts_with("OFPT_BARRIER_REPLY (OF1.3)"), "{b}");
    // ovs-ofctl's argument order works too.
    let mut c = ovs.in_ns(env!("CARGO_BIN_EXE_sluice"));
    c.args(["ctl", "dump-tables", &ovs.target(), "--timeout", "30", "-O", "OpenFlow13"]);
    let o = run(&mut c, TIMEOUT);
    assert!(o.ok && o.stdout.starts_with("OFPST_TABLE reply"), "{o:?}");
}

/// Errors: text errors before connecting, switch errors by name,
/// connection errors naming the target.
#[test]
fn errors_are_clear_and_fail() {
    let ovs = Ovs::start();
    // A bad flow: caret under the token, no connection attempted (the
    // target has no listener, so connecting would give another error).
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.args(["ctl", "tcp:127.0.0.1:9", "add-flow", "in_port=1,ip,nw_dst=1.2.3.400,actions=drop"]);
    let o = run(&mut c, TIMEOUT);
    assert_eq!(o.code, Some(1), "{o:?}");
    assert!(!o.stderr.contains("connect"), "{}", o.stderr);
    assert!(o.stderr.contains("\n  in_port=1,ip,nw_dst=1.2.3.400,actions=drop\n"), "{}", o.stderr);
    let caret = o.stderr.lines().last().unwrap_or_default();
    assert!(caret.trim_start().starts_with('^') && caret.len() > 12, "{}", o.stderr);

    let o = ovs.sluice(&["add-flow", "priority=1,actions=output:2,bogus_action"]);
    assert_eq!(o.code, Some(1), "{o:?}");
    assert!(o.stderr.contains("bogus_action") && o.stderr.contains('^'), "{}", o.stderr);

    // The switch says no: goto_table backwards.
    let o = ovs.sluice(&["add-flow", "table=1,actions=goto_table:0"]);
    assert_eq!(o.code, Some(1), "{o:?}");
    assert!(o.stderr.contains("tcp:127.0.0.1:6653: the switch rejected add-flow `table=1,actions=goto_table:0`: OFPET_BAD_INSTRUCTION OFPBIC_BAD_TABLE_ID"), "{}", o.stderr);
    assert!(o.stderr.contains("OFPT_ERROR (OF1.3) (xid=0x"), "{}", o.stderr);
    assert!(
        o.stderr.contains("OFPT_FLOW_MOD (OF1.3) (xid=0x"),
        "the offending request is shown: {}",
        o.stderr
    );
    assert!(assert_same_flows(&ovs, &[]).is_empty());
    // Unknown meter, unknown group in a group-mod, deleting a missing meter is fine.
    let o = ovs.sluice(&["add-flow", "actions=meter:9,output:1"]);
    assert!(!o.ok && o.stderr.contains("OFPET_METER_MOD_FAILED OFPMMFC_INVALID_METER"), "{o:?}");
    let o = ovs.sluice(&["mod-group", "group_id=42,type=all,bucket=output:1"]);
    assert!(!o.ok && o.stderr.contains("OFPET_GROUP_MOD_FAILED OFPGMFC_UNKNOWN_GROUP"), "{o:?}");
    let o = ovs.sluice(&["add-group", "group_id=1,type=all,bucket=output:1"]);
    assert!(o.ok, "{o:?}");
    let o = ovs.sluice(&["add-group", "group_id=1,type=all,bucket=output:1"]);
    assert!(!o.ok && o.stderr.contains("OFPGMFC_GROUP_EXISTS"), "{o:?}");

    // Connection errors name the target.
    let o = ovs.sluice(&["show"]);
    assert!(o.ok, "{o:?}");
    let mut c = ovs.in_ns(env!("CARGO_BIN_EXE_sluice"));
    c.args(["ctl", "tcp:127.0.0.1:9", "show", "--timeout", "5"]);
    let o = run(&mut c, TIMEOUT);
    assert_eq!(o.code, Some(1), "{o:?}");
    assert!(o.stderr.contains("cannot connect to tcp:127.0.0.1:9"), "{}", o.stderr);
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.args(["ctl", "unix:/nonexistent/sluice.sock", "show"]);
    let o = run(&mut c, TIMEOUT);
    assert!(!o.ok && o.stderr.contains("cannot connect to unix:/nonexistent/sluice.sock"), "{o:?}");
    // A bare word is a switch name: its socket in the run directory (an
    // empty one here, so the test does not depend on /run/sluice).
    let empty = std::env::temp_dir().join(format!("sluice-ctl-ovs-rundir-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.args(["ctl", "--rundir"]).arg(&empty).args(["br0", "show"]);
    let o = run(&mut c, TIMEOUT);
    let _ = std::fs::remove_dir_all(&empty);
    assert!(
        !o.ok
            && o.stderr.contains("`br0`: no switch of that name")
            && o.stderr.contains(&format!("{}", empty.join("br0.mgmt").display())),
        "{o:?}"
    );
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.args(["ctl", "tcp:127.0.0.1:9", "show", "-O", "OpenFlow10"]);
    let o = run(&mut c, TIMEOUT);
    assert!(!o.ok && o.stderr.contains("only OpenFlow13"), "{o:?}");
}

/// packet-out and monitor, each checked against ovs-ofctl's counterpart;
/// also over the bridge's unix management socket.
#[test]
fn packet_out_and_monitor() {
    let ovs = Ovs::start();
    // An ICMP echo from 10.0.0.1 to 10.0.0.2, 42 bytes.
    let pkt = "ffffffffffff0000000000010800450000140000000040016a0a0a0000010a000002";
    let pkt = format!("{pkt}{}", "00".repeat(8));

    // sluice monitor sees what ovs-ofctl's packet-out sends to the controller.
    let mut mon = ovs.sluice_cmd(&["monitor", "128", "--count", "1"]);
    let child = mon
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .expect("monitor");
    let started = Instant::now();
    let trigger = |ovs: &Ovs| {
        ovs.ofctl_ok(&[
            "packet-out",
            &format!("in_port=CONTROLLER packet={pkt} actions=output:CONTROLLER"),
        ]);
    };
    // The monitor needs a moment to connect and set miss_send_len; send
    // until it has seen one message (bounded by --count 1 and the loop).
    let mut child = child;
    let mut sent = 0;
    while child.try_wait().expect("try_wait").is_none()
        && started.elapsed() < Duration::from_secs(30)
    {
        trigger(&ovs);
        sent += 1;
        thread::sleep(Duration::from_millis(300));
    }
    let o = finish(child, TIMEOUT, "sluice ctl monitor");
    assert!(o.ok, "{o:?} after {sent} packet-outs");
    assert!(o.stdout.starts_with("OFPT_PACKET_IN (OF1.3) (xid=0x"), "{}", o.stdout);
    assert!(o.stdout.contains("(via action) data_len=42"), "{}", o.stdout);
    assert!(o.stdout.contains("ff ff ff ff ff ff 00 00-00 00 00 01 08 00 45 00"), "{}", o.stdout);

    // ovs-ofctl monitor sees sluice's packet-out (both argument forms).
    // It writes its output when it exits (SIGTERM from `timeout`).
    let mut c = ovs.in_ns("timeout");
    c.args(["-s", "TERM", "8", "ovs-ofctl", "-O", "OpenFlow13", "monitor", &ovs.target(), "128"]);
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .expect("ovs-ofctl monitor");
    let out = drain(child.stdout.take().expect("stdout"));
    let err = drain(child.stderr.take().expect("stderr"));
    let started = Instant::now();
    while child.try_wait().expect("try_wait").is_none()
        && started.elapsed() < Duration::from_secs(30)
    {
        ovs.sluice_ok(&["packet-out", "CONTROLLER", "output:CONTROLLER", &pkt]);
        ovs.sluice_ok(&[
            "packet-out",
            &format!("in_port=LOCAL,packet={pkt},actions=output:CONTROLLER"),
        ]);
        thread::sleep(Duration::from_millis(300));
    }
    let _ = child.kill();
    let _ = child.wait();
    // ovs-ofctl monitor prints the messages on stderr when it is not a tty.
    let lines = out.join().unwrap_or_default() + &err.join().unwrap_or_default();
    assert!(lines.contains("NXT_PACKET_IN2") && lines.contains("total_len=42"), "{lines}");
    assert!(lines.contains("nw_src=10.0.0.1,nw_dst=10.0.0.2"), "{lines}");
    assert!(lines.contains("in_port=LOCAL") || lines.contains("in_port=CONTROLLER"), "{lines}");

    // A packet-out the switch rejects: an unknown group.
    let o = ovs.sluice(&["packet-out", "1", "group:99", &pkt]);
    assert!(
        !o.ok
            && o.stderr
                .contains("the switch rejected packet-out: OFPET_BAD_ACTION OFPBAC_BAD_OUT_GROUP"),
        "{o:?}"
    );
    assert!(o.stderr.contains("OFPT_PACKET_OUT (OF1.3) (xid=0x"), "{o:?}");

    // Port status and flow-removed messages, bounded by --timeout.
    let mut mon = ovs.sluice_cmd(&["monitor", "128", "--count", "3", "--timeout", "25"]);
    let mut child = mon
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .expect("monitor");
    thread::sleep(Duration::from_secs(1));
    ovs.vsctl(&[
        "add-port",
        "br0",
        "p3",
        "--",
        "set",
        "interface",
        "p3",
        "type=internal",
        "ofport_request=3",
    ]);
    ovs.sluice_ok(&["add-flow", "priority=9,in_port=3,send_flow_rem,actions=drop"]);
    ovs.sluice_ok(&["del-flows", "in_port=3"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().expect("try_wait").is_none() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(100));
    }
    let o = finish(child, TIMEOUT, "sluice ctl monitor");
    assert!(o.ok, "{o:?}");
    assert!(
        o.stdout.contains("OFPT_PORT_STATUS (OF1.3) (xid=0x0): ADD: 3(p3): addr:"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("OFPT_FLOW_REMOVED (OF1.3) (xid=0x0): priority=9,in_port=3 reason=delete"),
        "{}",
        o.stdout
    );

    // --timeout ends an idle monitor successfully.
    let t0 = Instant::now();
    let mut c = ovs.in_ns(env!("CARGO_BIN_EXE_sluice"));
    c.args(["ctl", &ovs.target(), "monitor", "--timeout", "1"]);
    let o = run(&mut c, TIMEOUT);
    assert!(o.ok && o.stdout.is_empty(), "{o:?}");
    assert!(t0.elapsed() >= Duration::from_secs(1));

    // The bridge's unix management socket works as a target too.
    let mgmt = format!("unix:{}/br0.mgmt", ovs.dir.display());
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.args(["ctl", &mgmt, "add-flow", "table=9,priority=1,actions=drop", "--timeout", "30"]);
    let o = run(&mut c, TIMEOUT);
    assert!(o.ok, "{o:?}");
    assert_eq!(assert_same_flows(&ovs, &["table=9"]).len(), 1);
}
