//! `ovs-ofctl -O OpenFlow13` against sluice's own passive listener, side by
//! side with `sluice ctl`.
//!
//! Each test starts `sluice run` (fail mode `secure`, one worker) with two
//! pcap ports (1 and 2: empty replay files, recorded output files, so no
//! namespace and no root are needed) and a passive listener
//! `ptcp:PORT:127.0.0.1` on a free port. Then every `sluice ctl` command of
//! issue 4 is also done with the reference client `ovs-ofctl -O OpenFlow13`
//! against the same running switch, and:
//!
//! - writes by either tool give the same switch state, read back by both
//!   tools; the two printouts are compared after normalisation (xids and
//!   durations dropped, lines sorted where order is not meaningful, the
//!   blank separator lines ovs-ofctl puts between meters dropped, the
//!   `tables A...B: ditto` shorthand expanded);
//! - ovs-ofctl reports no error for any command (exit 0, empty stderr);
//! - counters move as they must: packet-outs through a flow bump its
//!   `n_packets`, the table's lookup/matched counts, the output port's tx
//!   counters (and the recorded pcap), group and meter counters, seen the
//!   same by both tools;
//! - `ovs-ofctl monitor` and `sluice ctl monitor`, connected at the same
//!   time, both print the PACKET_IN sent to the controller by a table-miss
//!   flow and by an output:CONTROLLER action, and a FLOW_REMOVED;
//! - a bad flow fails in both tools, and sluice's message names the token.
//!
//! Where the two tools print the same message differently, or ovs-ofctl
//! accepts syntax that `sluice ctl` refuses, the test notes the difference
//! (`Switch::problem`), goes on checking the rest, and fails at the end
//! (`Switch::done`) listing every difference, so one printer quirk does not
//! hide the state checks behind it.
//!
//! The tests FAIL (they do not skip) when `ovs-ofctl` is missing: install
//! `openvswitch-common`. The switch is our child, killed by handle on drop;
//! ovs-ofctl monitors are our children, stopped by pid; every wait is bounded.
#![allow(clippy::zombie_processes)]

mod pcap_switch;

use pcap_switch::{which, PcapSwitch};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(60);

/// The result of one command.
#[derive(Debug)]
struct Out {
    ok: bool,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Reads a pipe to its end into a shared buffer (so a caller can look at
/// what a long-running child printed so far).
fn drain_into(
    mut r: impl Read + Send + 'static,
    buf: Arc<Mutex<Vec<u8>>>,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        loop {
            match r.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if let Ok(mut b) = buf.lock() {
                        b.extend_from_slice(&chunk[..n]);
                    }
                }
            }
        }
    })
}

fn text(buf: &Arc<Mutex<Vec<u8>>>) -> String {
    buf.lock().map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
}

/// Run `cmd` with no stdin, killing it (our own child, by handle) after `limit`.
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
    let out = Arc::new(Mutex::new(Vec::new()));
    let err = Arc::new(Mutex::new(Vec::new()));
    let t1 = drain_into(child.stdout.take().expect("piped stdout"), out.clone());
    let t2 = drain_into(child.stderr.take().expect("piped stderr"), err.clone());
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
        thread::sleep(Duration::from_millis(5));
    };
    let _ = t1.join();
    let _ = t2.join();
    Out { ok: status.success(), code: status.code(), stdout: text(&out), stderr: text(&err) }
}

/// The frames recorded in a pcap file (empty if it cannot be read yet).
fn read_pcap(path: &Path) -> Vec<Vec<u8>> {
    let Ok(f) = std::fs::File::open(path) else { return Vec::new() };
    let Ok(mut r) = pcap_file::pcap::PcapReader::new(f) else { return Vec::new() };
    let mut out = Vec::new();
    while let Some(Ok(p)) = r.next_packet() {
        out.push(p.data.into_owned());
    }
    out
}

/// A running `sluice run` with its scratch directory; see the module docs.
struct Switch {
    sw: PcapSwitch,
    /// Differences between the two tools that do not stop the test from
    /// checking the rest; `done` fails the test if there are any.
    problems: RefCell<Vec<String>>,
}

impl Switch {
    fn start() -> Switch {
        assert!(
            which("ovs-ofctl"),
            "`ovs-ofctl` not found: these tests need it (apt-get install openvswitch-common)"
        );
        Switch { sw: PcapSwitch::start("ofctl"), problems: RefCell::new(Vec::new()) }
    }

    /// Notes a difference and carries on (see `done`).
    fn problem(&self, what: String) {
        eprintln!("PROBLEM: {what}");
        self.problems.borrow_mut().push(what);
    }

    /// Fails the test if any difference was noted.
    fn done(self) {
        let p = self.problems.borrow().clone();
        assert!(
            p.is_empty(),
            "{} difference(s) between sluice and ovs-ofctl:\n{}",
            p.len(),
            p.join("\n---\n")
        );
    }

    fn pcap_out(&self, port: u32) -> PathBuf {
        self.sw.pcap_out(port)
    }

    fn target(&self) -> String {
        self.sw.target()
    }

    /// `ovs-ofctl -O OpenFlow13 --timeout=20 OPTS... CMD TARGET ARGS...`,
    /// with its run directory (for monitor's control socket) in our scratch
    /// directory.
    fn ofctl_cmd(&self, opts: &[&str], cmd: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ovs-ofctl");
        c.env("OVS_RUNDIR", &self.sw.dir)
            .args(["-O", "OpenFlow13", "--timeout=20"])
            .args(opts)
            .args([cmd, &self.target()])
            .args(args);
        c
    }

    fn ofctl_opts(&self, opts: &[&str], cmd: &str, args: &[&str]) -> Out {
        run(&mut self.ofctl_cmd(opts, cmd, args), TIMEOUT)
    }

    fn ofctl(&self, cmd: &str, args: &[&str]) -> Out {
        self.ofctl_opts(&[], cmd, args)
    }

    /// ovs-ofctl must succeed and say nothing on stderr.
    fn ofctl_ok_opts(&self, opts: &[&str], cmd: &str, args: &[&str]) -> String {
        let o = self.ofctl_opts(opts, cmd, args);
        assert!(
            o.ok && o.stderr.is_empty(),
            "ovs-ofctl {opts:?} {cmd} {args:?} against sluice: exit {:?}, stderr:\n{}\nstdout:\n{}",
            o.code,
            o.stderr,
            o.stdout
        );
        o.stdout
    }

    fn ofctl_ok(&self, cmd: &str, args: &[&str]) -> String {
        self.ofctl_ok_opts(&[], cmd, args)
    }

    /// `sluice ctl TARGET CMD ARGS... --timeout 30` (no `--timeout 30` if
    /// ARGS have their own).
    fn sluice_cmd(&self, cmd: &str, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
        c.args(["ctl", &self.target(), cmd]).args(args);
        if !args.contains(&"--timeout") {
            c.args(["--timeout", "30"]);
        }
        c
    }

    fn sluice(&self, cmd: &str, args: &[&str]) -> Out {
        run(&mut self.sluice_cmd(cmd, args), TIMEOUT)
    }

    fn sluice_ok(&self, cmd: &str, args: &[&str]) -> String {
        let o = self.sluice(cmd, args);
        assert!(
            o.ok && o.stderr.is_empty(),
            "sluice ctl {cmd} {args:?}: exit {:?}, stderr:\n{}\nstdout:\n{}",
            o.code,
            o.stderr,
            o.stdout
        );
        o.stdout
    }

    fn write_file(&self, name: &str, body: &str) -> String {
        let p = self.sw.dir.join(name);
        std::fs::write(&p, body).expect("write file");
        p.display().to_string()
    }

    /// Both tools' flow dumps (with the same filter), normalised; they must
    /// agree.
    fn flows(&self, filter: &[&str]) -> Vec<String> {
        let ours = flows(&self.sluice_ok("dump-flows", filter));
        let theirs = flows(&self.ofctl_ok("dump-flows", filter));
        if ours != theirs {
            panic!(
                "dump-flows {filter:?}: sluice ctl and ovs-ofctl disagree\nsluice ctl: {ours:#?}\novs-ofctl: {theirs:#?}"
            );
        }
        ours
    }

    fn groups(&self) -> Vec<String> {
        let ours = sorted_body(&self.sluice_ok("dump-groups", &[]), "OFPST_GROUP_DESC reply");
        let theirs = sorted_body(&self.ofctl_ok("dump-groups", &[]), "OFPST_GROUP_DESC reply");
        assert_eq!(ours, theirs, "dump-groups: sluice ctl vs ovs-ofctl");
        ours
    }

    fn group_stats(&self) -> Vec<String> {
        let ours = sorted_body(&self.sluice_ok("dump-group-stats", &[]), "OFPST_GROUP reply");
        let theirs = sorted_body(&self.ofctl_ok("dump-group-stats", &[]), "OFPST_GROUP reply");
        assert_eq!(ours, theirs, "dump-group-stats: sluice ctl vs ovs-ofctl");
        ours
    }

    fn meters(&self) -> Vec<String> {
        let ours = lines(&self.sluice_ok("dump-meters", &[]), "OFPST_METER_CONFIG reply");
        let theirs = lines(&self.ofctl_ok("dump-meters", &[]), "OFPST_METER_CONFIG reply");
        assert_eq!(ours, theirs, "dump-meters: sluice ctl vs ovs-ofctl");
        ours
    }

    fn meter_stats(&self) -> Vec<String> {
        let ours = lines(&self.sluice_ok("meter-stats", &[]), "OFPST_METER reply");
        let theirs = lines(&self.ofctl_ok("meter-stats", &[]), "OFPST_METER reply");
        assert_eq!(ours, theirs, "meter-stats: sluice ctl vs ovs-ofctl");
        ours
    }

    fn ports(&self, args: &[&str]) -> Vec<String> {
        let ours = lines(&self.sluice_ok("dump-ports", args), "OFPST_PORT reply");
        let theirs = lines(&self.ofctl_ok("dump-ports", args), "OFPST_PORT reply");
        assert_eq!(ours, theirs, "dump-ports {args:?}: sluice ctl vs ovs-ofctl");
        ours
    }

    fn tables(&self) -> BTreeMap<u32, String> {
        let ours = tables(&self.sluice_ok("dump-tables", &[]));
        let theirs = tables(&self.ofctl_ok("dump-tables", &[]));
        assert_eq!(ours, theirs, "dump-tables: sluice ctl vs ovs-ofctl");
        assert_eq!(ours.len(), 255, "{ours:#?}");
        ours
    }
}

// ---------------------------------------------------------------------------
// Normalisation

/// Replace `duration=1.234s`, `duration:1.234s` and (FLOW_REMOVED's)
/// `duration1.234s` by `duration=*`.
fn no_durations(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("duration") {
        let after = &rest[i + 8..];
        out.push_str(&rest[..i + 8]);
        let v = after.strip_prefix(['=', ':']).unwrap_or(after);
        if v.starts_with(|c: char| c.is_ascii_digit()) {
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

/// Replace every `(xid=0x...)` by `(xid=*)`.
fn no_xids(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("(xid=") {
        out.push_str(&rest[..i]);
        out.push_str("(xid=*)");
        let after = &rest[i + 5..];
        rest = after.find(')').map(|j| &after[j + 1..]).unwrap_or("");
    }
    out.push_str(rest);
    out
}

/// The lines after the reply header(s) `head`, normalised, blank lines
/// dropped, in order.
fn lines(dump: &str, head: &str) -> Vec<String> {
    assert!(dump.starts_with(head), "expected `{head}`, got:\n{dump}");
    no_durations(&no_xids(dump))
        .lines()
        .filter(|l| !l.starts_with(head) && !l.trim().is_empty())
        .map(|l| l.trim_end().to_string())
        .collect()
}

fn sorted_body(dump: &str, head: &str) -> Vec<String> {
    let mut v: Vec<String> = lines(dump, head).into_iter().map(|l| l.trim().to_string()).collect();
    v.sort();
    v
}

/// A flow dump's lines, normalised and sorted.
fn flows(dump: &str) -> Vec<String> {
    let mut v: Vec<String> =
        lines(dump, "OFPST_FLOW reply (OF1.3)").into_iter().map(|l| l.trim().to_string()).collect();
    v.sort();
    v
}

/// `dump-tables` as table number → its statistics line, with ovs-ofctl's
/// `tables A...B: ditto` expanded.
fn tables(dump: &str) -> BTreeMap<u32, String> {
    let mut map = BTreeMap::new();
    let mut current: Option<u32> = None;
    let mut last = String::new();
    for l in lines(dump, "OFPST_TABLE reply (OF1.3)") {
        let t = l.trim();
        let run = t.strip_prefix("tables ").and_then(|r| r.strip_suffix(": ditto"));
        let one = t.strip_prefix("table ").and_then(|r| r.strip_suffix(": ditto"));
        if let Some(range) = run.map(str::to_string).or(one.map(|n| format!("{n}...{n}"))) {
            let (a, b) = range.split_once("...").expect("tables A...B");
            let (a, b): (u32, u32) = (a.parse().expect("A"), b.parse().expect("B"));
            for n in a..=b {
                map.insert(n, last.clone());
            }
            current = None;
        } else if let Some(n) = t.strip_prefix("table ").and_then(|r| r.strip_suffix(':')) {
            current = Some(n.parse().expect("table number"));
        } else if let Some(n) = current {
            last = t.to_string();
            map.insert(n, last.clone());
        } else {
            panic!("unexpected line in dump-tables: {t:?}\n{dump}");
        }
    }
    map
}

/// An Ethernet frame of 60 bytes, ethertype 0x88b5 (local experimental):
/// not IP, so it only matches flows that ask for it.
fn experimental_frame(seq: u8) -> String {
    let mut f = String::from("020000000002"); // dst
    f.push_str("020000000001"); // src
    f.push_str("88b5");
    f.push_str(&format!("{seq:02x}"));
    while f.len() < 120 {
        f.push_str("00");
    }
    f
}

/// An ICMP echo from 10.0.0.1 to 10.0.0.2, 42 bytes.
fn icmp_frame() -> String {
    format!(
        "ffffffffffff0000000000010800450000140000000040016a0a0a0000010a000002{}",
        "00".repeat(8)
    )
}

// ---------------------------------------------------------------------------
// Tests

/// add-flow, add-flows (file), mod-flows, del-flows (also `--strict`) by
/// either tool; both tools read back the same flows.
#[test]
fn flows_written_by_either_tool_read_the_same() {
    let sw = Switch::start();
    assert!(sw.flows(&[]).is_empty(), "a fresh switch has no flows");

    // add-flow, each tool.
    let ours = [
        "table=0,priority=10,in_port=1,actions=output:2",
        "table=0,priority=20,tcp,nw_src=10.0.0.0/8,tp_dst=80,idle_timeout=50,actions=set_field:10.1.1.1->ip_dst,goto_table:1",
        "table=1,priority=5,dl_vlan=10,actions=pop_vlan,output:1",
        "table=1,cookie=0x55,udp6,ipv6_src=2001:db8::/32,udp_dst=53,actions=push_vlan:0x8100,set_field:4196->vlan_vid,output:2",
    ];
    for f in ours {
        sw.sluice_ok("add-flow", &[f]);
    }
    let theirs = [
        "table=2,priority=7,arp,arp_tpa=192.168.1.1,dl_src=00:11:22:33:44:55,actions=CONTROLLER:128",
        "table=3,priority=100,ip,nw_dst=192.168.0.0/16,nw_tos=32,actions=dec_ttl,write_actions(output:1),goto_table:4",
        "table=4,priority=2,in_port=2,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,actions=clear_actions,write_metadata:0x5/0xff",
        "table=4,priority=3,mpls,mpls_label=77,actions=pop_mpls:0x0800,output:1",
        "table=0,hard_timeout=300,send_flow_rem,in_port=2,actions=output:1",
    ];
    for f in theirs {
        sw.ofctl_ok("add-flow", &[f]);
    }
    let all = sw.flows(&[]);
    assert_eq!(all.len(), ours.len() + theirs.len(), "{all:#?}");
    for want in [
        "table=0, n_packets=0, n_bytes=0, priority=10,in_port=1 actions=output:2",
        "cookie=0x55, duration=*, table=1,",
        "table=4, n_packets=0, n_bytes=0, priority=3,mpls,mpls_label=77 actions=pop_mpls:0x0800,output:1",
        "hard_timeout=300",
    ] {
        assert!(all.iter().any(|l| l.contains(want)), "no {want:?} in {all:#?}");
    }

    // Filters.
    assert_eq!(sw.flows(&["table=1"]).len(), 2);
    assert_eq!(sw.flows(&["in_port=2"]).len(), 2);
    assert_eq!(sw.flows(&["cookie=0x55/0xffffffffffffffff"]).len(), 1);
    // ovs-ofctl's shorthand for an all-ones mask.
    assert_eq!(flows(&sw.ofctl_ok("dump-flows", &["cookie=0x55/-1"])).len(), 1);
    let o = sw.sluice("dump-flows", &["cookie=0x55/-1"]);
    if !o.ok || flows(&o.stdout).len() != 1 {
        sw.problem(format!(
            "sluice ctl dump-flows cookie=0x55/-1: expected the one flow with cookie 0x55 (ovs-ofctl accepts mask -1 = all ones), got exit {:?}: {}{}",
            o.code, o.stdout, o.stderr
        ));
    }
    assert_eq!(sw.flows(&["out_port=1"]).len(), 4);
    let agg = |f: &[&str]| {
        let a = sw.sluice_ok("dump-aggregate", f);
        assert_eq!(no_xids(&a), no_xids(&sw.ofctl_ok("dump-aggregate", f)), "dump-aggregate {f:?}");
        a
    };
    assert!(agg(&["table=4"]).contains("flow_count=2"));
    assert!(agg(&[]).contains("flow_count=9"));

    // add-flows from a file, each tool, with comments and command words.
    let mut a = String::from("# flows written by sluice ctl\n\n");
    let mut b = String::from("# flows written by ovs-ofctl\n");
    for i in 0..50u32 {
        a.push_str(&format!("table=5,priority=10,ip,nw_dst=10.5.0.{i},actions=output:2\n"));
        b.push_str(&format!("table=6,priority=10,ip,nw_dst=10.6.0.{i},actions=output:1\n"));
    }
    for (t, buf) in [(5, &mut a), (6, &mut b)] {
        buf.push_str(&format!("delete_strict table={t},priority=10,ip,nw_dst=10.{t}.0.7\n"));
        buf.push_str(&format!("modify table={t},ip,nw_dst=10.{t}.0.8,actions=drop\n"));
        buf.push_str(&format!("add table={t},priority=1,actions=drop\n"));
    }
    let fa = sw.write_file("a.flows", &a);
    let fb = sw.write_file("b.flows", &b);
    sw.sluice_ok("add-flows", &[&fa]);
    sw.ofctl_ok("add-flows", &[&fb]);
    for t in ["table=5", "table=6"] {
        let v = sw.flows(&[t]);
        assert_eq!(v.len(), 50, "{t}: {v:#?}");
        assert!(!v.iter().any(|l| l.contains(".0.7 ")), "{v:#?}");
        assert!(v.iter().any(|l| l.ends_with(".0.8 actions=drop")), "{v:#?}");
    }

    // mod-flows: non-strict hits every match (of any priority) ...
    sw.ofctl_ok("mod-flows", &["table=0,in_port=1,actions=output:LOCAL"]);
    let t0 = sw.flows(&["table=0"]);
    assert!(t0.iter().any(|l| l.ends_with("priority=10,in_port=1 actions=LOCAL")), "{t0:#?}");
    sw.sluice_ok("mod-flows", &["table=0,in_port=2,actions=output:2"]);
    let t0 = sw.flows(&["table=0"]);
    assert!(t0.iter().any(|l| l.ends_with("in_port=2 actions=output:2")), "{t0:#?}");
    // In OpenFlow 1.3 a modify that matches nothing adds nothing.
    sw.ofctl_ok("mod-flows", &["table=9,in_port=1,actions=drop"]);
    sw.sluice_ok("mod-flows", &["table=9,in_port=2,actions=drop"]);
    sw.ofctl_ok_opts(&["--strict"], "mod-flows", &["table=9,priority=3,actions=drop"]);
    assert!(sw.flows(&["table=9"]).is_empty());
    // ... strict needs the priority too, by either tool.
    sw.ofctl_ok_opts(&["--strict"], "mod-flows", &["table=0,priority=11,in_port=1,actions=drop"]);
    sw.sluice_ok("mod-flows", &["--strict", "table=0,priority=12,in_port=1,actions=drop"]);
    assert!(sw.flows(&["table=0"]).iter().any(|l| l.ends_with("in_port=1 actions=LOCAL")));
    sw.ofctl_ok_opts(
        &["--strict"],
        "mod-flows",
        &["table=0,priority=10,in_port=1,actions=output:2"],
    );
    assert!(sw
        .flows(&["table=0"])
        .iter()
        .any(|l| l.ends_with("priority=10,in_port=1 actions=output:2")));
    sw.sluice_ok("mod-flows", &["--strict", "table=0,in_port=2,actions=output:1"]);
    assert!(sw.flows(&["table=0"]).iter().any(|l| l.ends_with("in_port=2 actions=output:1")));

    // del-flows --strict: wrong priority deletes nothing, right one deletes.
    sw.ofctl_ok_opts(&["--strict"], "del-flows", &["table=1,priority=6,dl_vlan=10"]);
    sw.sluice_ok("del-flows", &["--strict", "table=1,priority=4,dl_vlan=10"]);
    assert_eq!(sw.flows(&["table=1"]).len(), 2);
    sw.ofctl_ok_opts(&["--strict"], "del-flows", &["table=1,priority=5,dl_vlan=10"]);
    assert_eq!(sw.flows(&["table=1"]).len(), 1);
    sw.sluice_ok("del-flows", &["--strict", "table=5,priority=1"]);
    assert_eq!(sw.flows(&["table=5"]).len(), 49);
    // Non-strict, across tables, by either tool.
    sw.ofctl_ok("del-flows", &["table=6"]);
    assert!(sw.flows(&["table=6"]).is_empty());
    sw.sluice_ok("del-flows", &["ip"]);
    let left = sw.flows(&[]);
    assert!(!left.iter().any(|l| l.contains(",ip,") || l.contains("tcp,")), "{left:#?}");
    assert!(left.iter().any(|l| l.contains("mpls_label=77")), "{left:#?}");
    sw.ofctl_ok("del-flows", &["out_port=1"]);
    let left = sw.flows(&[]);
    assert!(!left.iter().any(|l| l.contains("output:1")), "{left:#?}");
    sw.ofctl_ok("del-flows", &[]);
    assert!(sw.flows(&[]).is_empty());
    sw.sluice_ok("add-flow", &["priority=1,actions=drop"]);
    sw.sluice_ok("del-flows", &[]);
    assert!(sw.flows(&[]).is_empty());
    sw.done();
}

/// add-group, add-groups (file), mod-group, del-groups, dump-groups,
/// dump-group-stats by either tool.
#[test]
fn groups_written_by_either_tool_read_the_same() {
    let sw = Switch::start();
    assert!(sw.groups().is_empty());
    sw.sluice_ok(
        "add-group",
        &["group_id=1,type=select,bucket=weight=10,actions=output:1,bucket=weight=20,actions=output:2"],
    );
    sw.ofctl_ok("add-group", &["group_id=2,type=all,bucket=output:1,bucket=output:2"]);
    let fa = sw.write_file(
        "a.groups",
        "group_id=3,type=ff,bucket=watch_port:1,actions=output:1,bucket=watch_port:2,actions=output:2\n",
    );
    let fb = sw.write_file(
        "b.groups",
        "group_id=4,type=indirect,bucket=actions=output:2\ngroup_id=5,type=indirect,bucket=actions=push_vlan:0x8100,set_field:4101->vlan_vid,output:1\n",
    );
    sw.sluice_ok("add-groups", &[&fa]);
    sw.ofctl_ok("add-groups", &[&fb]);
    let g = sw.groups();
    assert_eq!(
        g,
        [
            "group_id=1,type=select,bucket=weight:10,actions=output:1,bucket=weight:20,actions=output:2",
            "group_id=2,type=all,bucket=actions=output:1,bucket=actions=output:2",
            "group_id=3,type=ff,bucket=watch_port:1,actions=output:1,bucket=watch_port:2,actions=output:2",
            "group_id=4,type=indirect,bucket=actions=output:2",
            "group_id=5,type=indirect,bucket=actions=push_vlan:0x8100,set_field:4101->vlan_vid,output:1",
        ],
        "{g:#?}"
    );
    let one = sw.sluice_ok("dump-groups", &["3"]);
    assert_eq!(sorted_body(&one, "OFPST_GROUP_DESC reply").len(), 1, "{one}");

    sw.ofctl_ok(
        "mod-group",
        &["group_id=4,type=all,bucket=actions=output:1,bucket=actions=output:2"],
    );
    sw.sluice_ok("mod-group", &["group_id=2,type=indirect,bucket=output:LOCAL"]);
    let g = sw.groups();
    assert!(g.contains(&"group_id=2,type=indirect,bucket=actions=LOCAL".to_string()), "{g:#?}");
    assert!(
        g.contains(
            &"group_id=4,type=all,bucket=actions=output:1,bucket=actions=output:2".to_string()
        ),
        "{g:#?}"
    );

    // Stats, with a reference count from a flow.
    sw.ofctl_ok("add-flow", &["priority=1,in_port=1,actions=group:4"]);
    let st = sw.group_stats();
    assert_eq!(st.len(), 5, "{st:#?}");
    assert!(
        st.iter().any(|l| l.starts_with("group_id=4,duration=*,ref_count=1,packet_count=0,")),
        "{st:#?}"
    );

    // Delete one by either tool, then all; a group's flow goes with it.
    sw.ofctl_ok("del-groups", &["group_id=1"]);
    sw.sluice_ok("del-groups", &["group_id=3"]);
    assert_eq!(sw.groups().len(), 3);
    sw.sluice_ok("del-groups", &["5"]);
    assert_eq!(sw.groups().len(), 2);
    sw.ofctl_ok("del-groups", &[]);
    assert!(sw.groups().is_empty());
    assert!(sw.flows(&[]).is_empty(), "deleting group 4 deletes the flow using it");
    sw.ofctl_ok("add-group", &["group_id=9,type=all,bucket=output:1"]);
    sw.sluice_ok("del-groups", &[]);
    assert!(sw.groups().is_empty());
    sw.done();
}

/// add-meter, mod-meter, del-meter(s), dump-meters, meter-stats by either tool.
#[test]
fn meters_written_by_either_tool_read_the_same() {
    let sw = Switch::start();
    assert!(sw.meters().is_empty());
    sw.sluice_ok(
        "add-meter",
        &["meter=1,kbps,burst,stats,band=type=drop,rate=1000,burst_size=100"],
    );
    sw.ofctl_ok("add-meter", &["meter=2,pktps,band=type=drop,rate=50"]);
    sw.ofctl_ok("add-meter", &["meter=3,pktps,stats,band=type=dscp_remark,rate=50,prec_level=1"]);
    // Two bands in one meter (ovs-ofctl's syntax: each `type=` starts a band).
    let two = "meter=4,kbps,band=type=drop,rate=300,type=dscp_remark,rate=100,prec_level=2";
    let o = sw.sluice("add-meter", &[two]);
    if !o.ok {
        sw.problem(format!(
            "sluice ctl add-meter {two}: expected success (ovs-ofctl accepts a second band after `type=`), got exit {:?}: {}",
            o.code, o.stderr
        ));
        sw.ofctl_ok("add-meter", &[two]);
    }
    let m = sw.meters();
    assert_eq!(
        m,
        [
            "meter=1 kbps burst stats bands=",
            "type=drop rate=1000 burst_size=100",
            "meter=2 pktps bands=",
            "type=drop rate=50",
            "meter=3 pktps stats bands=",
            "type=dscp_remark rate=50 prec_level=1",
            "meter=4 kbps bands=",
            "type=drop rate=300",
            "type=dscp_remark rate=100 prec_level=2",
        ],
        "{m:#?}"
    );
    let one = sw.sluice_ok("dump-meters", &["meter=2"]);
    assert!(one.contains("meter=2 pktps") && !one.contains("meter=1"), "{one}");
    let one = sw.ofctl_ok("dump-meters", &["meter=3"]);
    assert!(one.contains("meter=3 pktps") && !one.contains("meter=2"), "{one}");

    sw.ofctl_ok("mod-meter", &["meter=2,pktps,band=type=drop,rate=70"]);
    sw.sluice_ok("mod-meter", &["meter=3,kbps,band=type=drop,rate=7000"]);
    let m = sw.meters();
    assert!(m.windows(2).any(|w| w == ["meter=2 pktps bands=", "type=drop rate=70"]), "{m:#?}");
    assert!(m.windows(2).any(|w| w == ["meter=3 kbps bands=", "type=drop rate=7000"]), "{m:#?}");

    // A flow using meter 1: flow_count in the stats, seen by both.
    sw.sluice_ok("add-flow", &["priority=1,in_port=1,actions=meter:1,output:2"]);
    let s = sw.meter_stats();
    assert!(
        s.contains(
            &"meter:1 flow_count:1 packet_in_count:0 byte_in_count:0 duration=* bands:".to_string()
        ),
        "{s:#?}"
    );
    assert_eq!(s.iter().filter(|l| l.starts_with("meter:")).count(), 4, "{s:#?}");
    let one = sw.ofctl_ok("meter-stats", &["meter=4"]);
    assert!(one.contains("meter:4 ") && !one.contains("meter:1 "), "{one}");
    let one = sw.sluice_ok("meter-stats", &["4"]);
    assert!(one.contains("meter:4 ") && !one.contains("meter:1 "), "{one}");

    sw.ofctl_ok("del-meter", &["meter=3"]);
    sw.sluice_ok("del-meter", &["meter=2"]);
    let m = sw.meters();
    assert!(m.iter().filter(|l| l.starts_with("meter=")).count() == 2, "{m:#?}");
    sw.sluice_ok("del-meter", &["1"]);
    assert!(sw.flows(&[]).is_empty(), "deleting meter 1 deletes the flow using it");
    sw.ofctl_ok("del-meters", &[]);
    assert!(sw.meters().is_empty());
    sw.ofctl_ok("add-meter", &["meter=7,pktps,band=type=drop,rate=5"]);
    sw.sluice_ok("del-meters", &[]);
    assert!(sw.meters().is_empty());
    assert!(sw.meter_stats().is_empty());
    sw.done();
}

/// packet-out by either tool through flows: flow, table, port, group and
/// meter counters move the same for both tools' reads.
#[test]
fn packet_out_counters_seen_by_both_tools() {
    let sw = Switch::start();
    let zero = sw.ports(&[]);
    assert_eq!(zero.len(), 6, "{zero:#?}");
    assert!(zero.iter().any(|l| l.contains("tx pkts=0, bytes=0,")), "{zero:#?}");

    sw.ofctl_ok("add-meter", &["meter=1,pktps,stats,band=type=drop,rate=100000"]);
    sw.sluice_ok("add-group", &["group_id=7,type=all,bucket=output:1"]);
    sw.sluice_ok("add-flow", &["table=0,priority=10,in_port=1,dl_type=0x88b5,actions=output:2"]);
    sw.ofctl_ok(
        "add-flow",
        &["table=0,priority=10,in_port=2,dl_type=0x88b5,actions=meter:1,goto_table:1"],
    );
    sw.ofctl_ok("add-flow", &["table=1,priority=10,actions=group:7"]);

    // 3 packet-outs by sluice (both syntaxes), 2 by ovs-ofctl, in on port 1.
    for i in 0..3u8 {
        let f = experimental_frame(i);
        if i % 2 == 0 {
            sw.sluice_ok("packet-out", &["1", "output:TABLE", &f]);
        } else {
            sw.sluice_ok("packet-out", &[&format!("in_port=1,packet={f},actions=output:TABLE")]);
        }
    }
    for i in 3..5u8 {
        let f = experimental_frame(i);
        sw.ofctl_ok("packet-out", &[&format!("in_port=1 packet={f} actions=output:TABLE")]);
    }
    // 2 more, in on port 2: the metered flow, then the group.
    for i in 5..7u8 {
        let f = experimental_frame(i);
        if i == 5 {
            sw.sluice_ok("packet-out", &["2", "output:TABLE", &f]);
        } else {
            sw.ofctl_ok("packet-out", &[&format!("in_port=2 packet={f} actions=output:TABLE")]);
        }
    }
    // And one straight out of port 1 (no table).
    sw.ofctl_ok(
        "packet-out",
        &[&format!("in_port=CONTROLLER packet={} actions=output:1", experimental_frame(9))],
    );

    // Counters are read after the forwarding: wait (bounded) for the pcap.
    let deadline = Instant::now() + Duration::from_secs(10);
    while (read_pcap(&sw.pcap_out(2)).len() < 5 || read_pcap(&sw.pcap_out(1)).len() < 3)
        && Instant::now() < deadline
    {
        thread::sleep(Duration::from_millis(50));
    }
    // Port 2: the five from port 1; port 1: the two through the group and
    // the direct one, in order.
    for (port, seqs) in [(2, vec![0u8, 1, 2, 3, 4]), (1, vec![5, 6, 9])] {
        let out = read_pcap(&sw.pcap_out(port));
        let got: Vec<u8> = out.iter().map(|f| f.get(14).copied().unwrap_or(0xff)).collect();
        assert_eq!(got, seqs, "frames recorded on port {port}");
        for f in &out {
            assert_eq!(f.len(), 60);
            assert_eq!(&f[12..14], &[0x88, 0xb5]);
        }
    }

    let fl = sw.flows(&[]);
    for want in [
        "table=0, n_packets=5, n_bytes=300, priority=10,in_port=1,dl_type=0x88b5 actions=output:2",
        "table=0, n_packets=2, n_bytes=120, priority=10,in_port=2,dl_type=0x88b5 actions=meter:1,goto_table:1",
        "table=1, n_packets=2, n_bytes=120, priority=10 actions=group:7",
    ] {
        assert!(fl.iter().any(|l| l.ends_with(want)), "no {want:?} in {fl:#?}");
    }
    let p2 = sw.ports(&["2"]);
    assert_eq!(
        p2,
        [
            "  port  2: rx pkts=0, bytes=0, drop=0, errs=0, frame=0, over=0, crc=0",
            "           tx pkts=5, bytes=300, drop=0, errs=0, coll=0",
            "           duration=*",
        ],
        "{p2:#?}"
    );
    let p1 = sw.ports(&["1"]);
    assert!(p1.iter().any(|l| l.contains("tx pkts=3, bytes=180,")), "{p1:#?}");
    let t = sw.tables();
    assert_eq!(t[&0], "active=2, lookup=7, matched=7", "{t:#?}");
    assert_eq!(t[&1], "active=1, lookup=2, matched=2", "{t:#?}");
    assert_eq!(t[&2], "active=0, lookup=0, matched=0", "{t:#?}");
    let gs = sw.group_stats();
    assert_eq!(
        gs,
        ["group_id=7,duration=*,ref_count=1,packet_count=2,byte_count=120,bucket0:packet_count=2,byte_count=120"],
        "{gs:#?}"
    );
    let ms = sw.meter_stats();
    assert_eq!(
        ms,
        [
            "meter:1 flow_count:1 packet_in_count:2 byte_in_count:120 duration=* bands:",
            "0: packet_count:0 byte_count:0"
        ],
        "{ms:#?}"
    );
    let agg = sw.ofctl_ok("dump-aggregate", &[]);
    assert_eq!(no_xids(&agg), no_xids(&sw.sluice_ok("dump-aggregate", &[])));
    assert!(agg.contains("packet_count=9 byte_count=540 flow_count=3"), "{agg}");
    sw.done();
}

/// A long-running client (a monitor) whose output is read while it runs.
/// Our child: stopped by its pid (SIGTERM, then SIGKILL by handle), and
/// always reaped, also on drop.
struct Monitor {
    child: Option<Child>,
    out: Arc<Mutex<Vec<u8>>>,
    err: Arc<Mutex<Vec<u8>>>,
    readers: Vec<thread::JoinHandle<()>>,
}

impl Monitor {
    fn spawn(mut cmd: Command) -> Monitor {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
        let out = Arc::new(Mutex::new(Vec::new()));
        let err = Arc::new(Mutex::new(Vec::new()));
        let readers = vec![
            drain_into(child.stdout.take().expect("stdout"), out.clone()),
            drain_into(child.stderr.take().expect("stderr"), err.clone()),
        ];
        Monitor { child: Some(child), out, err, readers }
    }

    /// Everything printed so far, stdout then stderr (ovs-ofctl monitor
    /// prints the messages on stderr when that is not a terminal).
    fn all(&self) -> String {
        text(&self.out) + &text(&self.err)
    }

    fn running(&mut self) -> bool {
        self.child.as_mut().is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }

    /// Waits up to `limit` for the child to end by itself, then SIGTERM,
    /// then SIGKILL. Returns whether it exited successfully by itself, its
    /// stdout and its stderr.
    fn stop(mut self, limit: Duration) -> (bool, String, String) {
        let mut ok = false;
        if let Some(mut c) = self.child.take() {
            let deadline = Instant::now() + limit;
            let mut status = None;
            while Instant::now() < deadline {
                if let Ok(Some(s)) = c.try_wait() {
                    status = Some(s);
                    break;
                }
                thread::sleep(Duration::from_millis(20));
            }
            if status.is_none() {
                let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
                let deadline = Instant::now() + Duration::from_secs(5);
                while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                    thread::sleep(Duration::from_millis(20));
                }
                let _ = c.kill();
            }
            let _ = c.wait();
            ok = status.is_some_and(|s| s.success());
        }
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        (ok, text(&self.out), text(&self.err))
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// ovs-ofctl monitor's output must hold only messages (and its own notice
/// of the SIGTERM that stopped it): no error.
fn ofctl_monitor_clean(sw: &Switch, out: &str) {
    for l in out.lines() {
        if l.contains("OFPT_ERROR")
            || l.starts_with("ovs-ofctl:")
            || l.contains("|ERR|")
            || (l.contains("|WARN|") && !l.contains("terminating with signal 15"))
        {
            sw.problem(format!("ovs-ofctl monitor reported an error: {l}\n{out}"));
        }
    }
}

/// Sends packet-outs (alternately by both tools) until `enough` says the
/// monitors have seen what they need, or 20 s pass; returns how many.
fn send_until(sw: &Switch, packet_out: &str, mut enough: impl FnMut() -> bool) -> u64 {
    let started = Instant::now();
    let mut sent = 0;
    while !enough() && started.elapsed() < Duration::from_secs(20) {
        if sent % 2 == 0 {
            sw.sluice_ok("packet-out", &[&packet_out.replace(' ', ",")]);
        } else {
            sw.ofctl_ok("packet-out", &[packet_out]);
        }
        sent += 1;
        thread::sleep(Duration::from_millis(300));
    }
    sent
}

/// A meter of 1 packet/s drops most of a quick burst: the band's count,
/// the flow's and the port's counters add up, read the same by both tools.
#[test]
fn meter_drops_counted_the_same_by_both_tools() {
    let sw = Switch::start();
    sw.sluice_ok("add-meter", &["meter=2,pktps,stats,band=type=drop,rate=1"]);
    sw.ofctl_ok("add-flow", &["table=0,priority=10,in_port=1,actions=meter:2,output:2"]);
    let n = 8u64;
    for i in 0..n {
        let f = experimental_frame(i as u8);
        if i % 2 == 0 {
            sw.sluice_ok("packet-out", &["1", "output:TABLE", &f]);
        } else {
            sw.ofctl_ok("packet-out", &[&format!("in_port=1 packet={f} actions=output:TABLE")]);
        }
    }
    thread::sleep(Duration::from_millis(300));
    let ms = sw.meter_stats();
    assert_eq!(ms.len(), 2, "{ms:#?}");
    let want = format!(
        "meter:2 flow_count:1 packet_in_count:{n} byte_in_count:{} duration=* bands:",
        60 * n
    );
    assert_eq!(ms[0], want, "{ms:#?}");
    let dropped: u64 = ms[1]
        .strip_prefix("0: packet_count:")
        .and_then(|r| r.split_once(' '))
        .and_then(|(a, _)| a.parse().ok())
        .unwrap_or_else(|| panic!("band line {:?}", ms[1]));
    assert!(
        dropped >= n / 2 && dropped < n,
        "{dropped} of {n} dropped by a 1 pkt/s meter: {ms:#?}"
    );
    assert_eq!(ms[1], format!("0: packet_count:{dropped} byte_count:{}", 60 * dropped));
    let passed = n - dropped;
    let fl = sw.flows(&[]);
    assert!(
        fl.iter()
            .any(|l| l
                .contains(&format!("n_packets={n}, n_bytes={}, priority=10,in_port=1 ", 60 * n))),
        "the flow counts every packet it matched: {fl:#?}"
    );
    let p2 = sw.ports(&["2"]);
    assert!(
        p2.iter().any(|l| l.contains(&format!("tx pkts={passed}, bytes={},", 60 * passed))),
        "{passed} passed the meter: {p2:#?}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while (read_pcap(&sw.pcap_out(2)).len() as u64) < passed && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(read_pcap(&sw.pcap_out(2)).len() as u64, passed);
    sw.done();
}

/// `ovs-ofctl monitor` and `sluice ctl monitor`, both connected, both see
/// the PACKET_IN of a table-miss flow sending to the controller.
#[test]
fn monitors_of_both_tools_see_packet_ins() {
    let sw = Switch::start();
    sw.ofctl_ok("add-flow", &["table=0,priority=0,actions=CONTROLLER:65535"]);
    sw.sluice_ok("add-flow", &["table=0,priority=5,in_port=2,actions=output:1"]);

    let om = Monitor::spawn(sw.ofctl_cmd(&[], "monitor", &["128"]));
    let mut sm =
        Monitor::spawn(sw.sluice_cmd("monitor", &["128", "--count", "2", "--timeout", "25"]));
    // Both monitors need a moment to connect: send until ovs-ofctl's has
    // shown two PACKET_INs and sluice's has stopped after two messages.
    let pkt = icmp_frame();
    let sent = send_until(&sw, &format!("in_port=1 packet={pkt} actions=output:TABLE"), || {
        om.all().matches("PACKET_IN").count() >= 2 && !sm.running()
    });
    let (_, o1, o2) = om.stop(Duration::ZERO);
    let theirs = o1 + &o2;
    let (s_ok, ours, ours_err) = sm.stop(Duration::from_secs(20));
    assert!(
        s_ok && ours_err.is_empty(),
        "sluice ctl monitor failed after {sent} packet-outs\nstdout:\n{ours}\nstderr:\n{ours_err}"
    );
    let ours_pi: Vec<&str> = ours.lines().filter(|l| l.contains("PACKET_IN")).collect();
    assert_eq!(ours_pi.len(), 2, "{ours}");
    for l in &ours_pi {
        for want in [
            "OFPT_PACKET_IN (OF1.3) (xid=0x0):",
            " total_len=42 ",
            " in_port=1 ",
            " (via no_match) data_len=42 (unbuffered)",
            " cookie=0x0 ",
        ] {
            assert!(l.contains(want), "no {want:?} in sluice ctl monitor's {l:?}");
        }
    }
    assert!(ours.contains("ff ff ff ff ff ff 00 00-00 00 00 01 08 00 45 00"), "{ours}");

    let pi: Vec<&str> = theirs.lines().filter(|l| l.contains("PACKET_IN")).collect();
    assert!(pi.len() >= 2, "ovs-ofctl monitor after {sent} packet-outs:\n{theirs}");
    for l in &pi {
        // ovs-ofctl leaves out table_id when it is 0.
        assert_eq!(
            *l,
            "OFPT_PACKET_IN (OF1.3) (xid=0x0): cookie=0x0 total_len=42 in_port=1 (via no_match) data_len=42 (unbuffered)",
            "{theirs}"
        );
    }
    assert!(
        theirs.contains("icmp,vlan_tci=0x0000,dl_src=00:00:00:00:00:01,dl_dst=ff:ff:ff:ff:ff:ff,nw_src=10.0.0.1,nw_dst=10.0.0.2"),
        "{theirs}"
    );
    ofctl_monitor_clean(&sw, &theirs);
    // The same message prints the same in both tools.
    if ours_pi[0] != pi[0] {
        sw.problem(format!(
            "monitor: sluice ctl prints the PACKET_IN header differently from ovs-ofctl\n  ovs-ofctl:  {}\n  sluice ctl: {}",
            pi[0], ours_pi[0]
        ));
    }
    // The table-miss flow counted every packet.
    let fl = sw.flows(&[]);
    let n = format!("n_packets={sent}, n_bytes={}, priority=0 actions=CONTROLLER:65535", 42 * sent);
    assert!(fl.iter().any(|l| l.contains(&n)), "want {n:?} in {fl:#?}");
    sw.done();
}

/// Both monitors see a PACKET_IN sent by an output:CONTROLLER action (with
/// the flow's cookie and table) and a FLOW_REMOVED.
#[test]
fn monitors_of_both_tools_see_action_packet_ins_and_flow_removed() {
    let sw = Switch::start();
    sw.ofctl_ok("add-flow", &["table=0,priority=9,ip,actions=goto_table:3"]);
    sw.sluice_ok("add-flow", &["table=3,priority=7,cookie=0xabc,icmp,actions=CONTROLLER:100"]);
    sw.ofctl_ok(
        "add-flow",
        &["table=4,priority=3,cookie=0x77,send_flow_rem,in_port=2,actions=drop"],
    );

    let om = Monitor::spawn(sw.ofctl_cmd(&[], "monitor", &["128"]));
    let sm = Monitor::spawn(sw.sluice_cmd("monitor", &["128", "--timeout", "40"]));
    let pkt = icmp_frame();
    let sent = send_until(&sw, &format!("in_port=2 packet={pkt} actions=output:TABLE"), || {
        om.all().contains("PACKET_IN") && sm.all().contains("PACKET_IN")
    });
    // Then a flow removal, by ovs-ofctl: one message each.
    sw.ofctl_ok_opts(&["--strict"], "del-flows", &["table=4,priority=3,in_port=2"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(om.all().contains("FLOW_REMOVED") && sm.all().contains("FLOW_REMOVED"))
        && Instant::now() < deadline
    {
        thread::sleep(Duration::from_millis(50));
    }
    let (_, o1, o2) = om.stop(Duration::ZERO);
    let theirs = o1 + &o2;
    let (_, ours, ours_err) = sm.stop(Duration::ZERO);
    assert!(ours_err.is_empty(), "{ours_err}");

    let want_pi = "OFPT_PACKET_IN (OF1.3) (xid=0x0): table_id=3 cookie=0xabc total_len=42 in_port=2 (via action) data_len=42 (unbuffered)";
    let pi: Vec<&str> = theirs.lines().filter(|l| l.contains("PACKET_IN")).collect();
    assert!(!pi.is_empty(), "ovs-ofctl monitor after {sent} packet-outs:\n{theirs}");
    for l in &pi {
        assert_eq!(*l, want_pi, "{theirs}");
    }
    let fr: Vec<&str> = theirs.lines().filter(|l| l.contains("FLOW_REMOVED")).collect();
    assert_eq!(fr.len(), 1, "{theirs}");
    assert!(
        fr[0].starts_with("OFPT_FLOW_REMOVED (OF1.3) (xid=0x0): priority=3,in_port=2 reason=delete table_id=4 cookie:0x77 duration"),
        "{theirs}"
    );
    ofctl_monitor_clean(&sw, &theirs);

    let ours_pi: Vec<&str> = ours.lines().filter(|l| l.contains("PACKET_IN")).collect();
    assert!(!ours_pi.is_empty(), "sluice ctl monitor:\n{ours}");
    for want in [
        " table_id=3 ",
        " cookie=0xabc ",
        " total_len=42 ",
        " in_port=2 ",
        " (via action) data_len=42 ",
    ] {
        assert!(ours_pi[0].contains(want), "no {want:?} in sluice ctl monitor's {:?}", ours_pi[0]);
    }
    let ours_fr: Vec<&str> = ours.lines().filter(|l| l.contains("FLOW_REMOVED")).collect();
    assert_eq!(ours_fr.len(), 1, "sluice ctl monitor:\n{ours}");
    if no_durations(ours_fr[0]) != no_durations(fr[0]) {
        sw.problem(format!(
            "monitor: FLOW_REMOVED prints differently\n  ovs-ofctl:  {}\n  sluice ctl: {}",
            fr[0], ours_fr[0]
        ));
    }
    if ours_pi[0] != pi[0] {
        sw.problem(format!(
            "monitor: PACKET_IN (via action) prints differently\n  ovs-ofctl:  {}\n  sluice ctl: {}",
            pi[0], ours_pi[0]
        ));
    }
    sw.done();
}

/// A bad flow fails in both tools; sluice names the bad token with a caret.
/// A flow the switch rejects fails in both tools with the OpenFlow error.
#[test]
fn bad_flows_fail_in_both_tools() {
    let sw = Switch::start();
    for (flow, token, sluice_says) in [
        (
            "priority=1,actions=output:2,bogus_action",
            "bogus_action",
            "unknown action `bogus_action`",
        ),
        ("priority=5,bogus_field=3,actions=drop", "bogus_field", "unknown field `bogus_field`"),
    ] {
        let o = sw.ofctl("add-flow", &[flow]);
        assert!(!o.ok && o.stderr.contains(token), "ovs-ofctl add-flow {flow}: {o:?}");
        let s = sw.sluice("add-flow", &[flow]);
        assert_eq!(s.code, Some(1), "{s:?}");
        assert!(s.stderr.contains(sluice_says), "{}", s.stderr);
        assert!(s.stderr.contains(&format!("\n  {flow}\n")), "{}", s.stderr);
        let caret = s.stderr.lines().last().unwrap_or_default();
        let col = flow.find(token).expect("token");
        assert_eq!(
            caret,
            format!("  {}{}", " ".repeat(col), "^".repeat(token.len())),
            "{}",
            s.stderr
        );
    }
    // ovs-ofctl wraps 1.2.3.400 to 1.2.3.144; sluice refuses it.
    let s = sw.sluice("add-flow", &["in_port=1,ip,nw_dst=1.2.3.400,actions=drop"]);
    assert!(!s.ok && s.stderr.contains("`1.2.3.400` is not an IPv4 address"), "{s:?}");
    // A backwards goto_table: the switch says no to both tools.
    let o = sw.ofctl("add-flow", &["table=1,actions=goto_table:0"]);
    assert!(!o.ok && o.stderr.contains("OFPBIC_BAD_TABLE_ID"), "{o:?}");
    let s = sw.sluice("add-flow", &["table=1,actions=goto_table:0"]);
    assert!(!s.ok && s.stderr.contains("OFPET_BAD_INSTRUCTION OFPBIC_BAD_TABLE_ID"), "{s:?}");
    // A group that already exists / does not exist.
    sw.sluice_ok("add-group", &["group_id=1,type=all,bucket=output:1"]);
    let o = sw.ofctl("add-group", &["group_id=1,type=all,bucket=output:1"]);
    assert!(!o.ok && o.stderr.contains("OFPGMFC_GROUP_EXISTS"), "{o:?}");
    let o = sw.ofctl("mod-group", &["group_id=42,type=all,bucket=output:1"]);
    assert!(!o.ok && o.stderr.contains("OFPGMFC_UNKNOWN_GROUP"), "{o:?}");
    let s = sw.sluice("mod-group", &["group_id=42,type=all,bucket=output:1"]);
    assert!(!s.ok && s.stderr.contains("OFPGMFC_UNKNOWN_GROUP"), "{s:?}");
    // Nothing of that got in.
    assert!(sw.flows(&[]).is_empty());
    assert_eq!(sw.groups().len(), 1);
    sw.done();
}

/// show, dump-ports-desc, dump-desc, dump-tables, dump-ports, get-config:
/// the same text from both tools (xids and durations aside).
#[test]
fn show_and_descriptions_print_the_same() {
    let sw = Switch::start();
    let ours = sw.sluice_ok("show", &[]);
    let theirs = sw.ofctl_ok("show", &[]);
    assert!(ours.starts_with("OFPT_FEATURES_REPLY (OF1.3) (xid=0x"), "{ours}");
    assert!(theirs.contains("dpid:000000000000005a"), "{theirs}");
    // The port descriptions, block by block.
    let ports = |s: &str| -> Vec<String> {
        let from = s.find("OFPST_PORT_DESC").expect("port desc");
        let to = s.find("OFPT_GET_CONFIG_REPLY").expect("config");
        s[from..to].lines().skip(1).map(str::to_string).collect()
    };
    assert_eq!(ports(&ours), ports(&theirs));
    assert!(ports(&theirs).iter().any(|l| l.starts_with(" 1(in1.pcap): addr:")), "{theirs}");
    assert!(ports(&theirs).iter().any(|l| l.starts_with(" 2(in2.pcap): addr:")), "{theirs}");
    let cfg = |s: &str| s.lines().find(|l| l.starts_with("OFPT_GET_CONFIG_REPLY")).map(no_xids);
    assert_eq!(cfg(&ours), cfg(&theirs));

    for cmd in ["dump-ports-desc", "dump-desc"] {
        assert_eq!(no_xids(&sw.sluice_ok(cmd, &[])), no_xids(&sw.ofctl_ok(cmd, &[])), "{cmd}");
    }
    let d = sw.sluice_ok("dump-ports-desc", &["2"]);
    assert!(d.contains(" 2(in2.pcap)") && !d.contains("(in1.pcap)"), "{d}");
    assert_eq!(sw.ports(&[]).len(), 6);
    let t = sw.tables();
    assert!(t.values().all(|v| v == "active=0, lookup=0, matched=0"), "{t:#?}");
    let c = sw.sluice_ok("get-config", &[]);
    assert_eq!(cfg(&c), cfg(&theirs), "{c}");
    assert_eq!(sw.ofctl_ok("get-frags", &[]).trim(), "normal");
    let q = sw.ofctl_ok("queue-stats", &[]);
    assert_eq!(no_xids(&q), no_xids(&sw.sluice_ok("queue-stats", &[])));
    let mf = sw.ofctl_ok("meter-features", &[]);
    assert_eq!(no_xids(&mf), no_xids(&sw.sluice_ok("meter-features", &[])));

    // The whole `show`, header included, must print the same.
    if no_xids(&ours) != no_xids(&theirs) {
        let a = no_xids(&ours);
        let b = no_xids(&theirs);
        let diff: Vec<String> = a
            .lines()
            .zip(b.lines())
            .filter(|(x, y)| x != y)
            .map(|(x, y)| format!("  ovs-ofctl:  {y}\n  sluice ctl: {x}"))
            .collect();
        sw.problem(format!("show prints differently:\n{}", diff.join("\n")));
    }
    sw.done();
}
