//! `sluice ctl TARGET trace`: a running `sluice run` traces a packet
//! through its current tables and caches and answers with the text
//! `sluice trace` prints (sluice's `TRACE_REQUEST`/`TRACE_REPLY`
//! experimenter messages, `docs/EXPERIMENTER.md`). Flows are added with
//! `sluice ctl`; the trace is asked for with a flow description and with
//! a frame in hex; a bad description is answered with an OpenFlow error
//! naming the token; a SLAVE connection may trace (it changes nothing).
//!
//! A trace changes nothing on the switch, as `ovs-appctl ofproto/trace`:
//! traced again and again through a filter program that writes its map, a
//! meter, a group and a packet-in, the switch's flow, table, port, group
//! and meter counters and the program's map read the same afterwards (and
//! the meter lets every trace through), while one real packet (a
//! packet-out to the tables) moves them all.
//!
//! The switch is `pcap_switch`'s (two pcap ports, loopback listener, no
//! root), our child, stopped by PID on drop. Filter programs are compiled
//! with clang (`netlab`).

mod netlab;
mod pcap_switch;

use pcap_switch::PcapSwitch;
use sluice_ofp::message::{controller_role, Hello, Message, RoleMsg};
use sluice_ofp::tracemsg::{parse_reply, TraceRequest};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Output};
use std::time::Duration;

fn ctl(target: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("ctl")
        .arg(target)
        .args(args)
        .args(["--timeout", "60"])
        .output()
        .expect("run sluice ctl")
}

fn ok(target: &str, args: &[&str]) -> String {
    let o = ctl(target, args);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "ctl {args:?}: {}{out}", String::from_utf8_lossy(&o.stderr));
    out
}

fn fails(target: &str, args: &[&str]) -> String {
    let o = ctl(target, args);
    assert!(!o.status.success(), "ctl {args:?} should fail");
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn csum(b: &[u8]) -> u16 {
    let mut s: u32 =
        b.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))).sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// Ethernet + IPv4 (10.0.0.1 -> `dst`) + TCP to port `dport`, 60 bytes.
fn tcp_frame(dst: [u8; 4], dport: u16) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x08, 0x00];
    let mut ip = vec![0x45, 0, 0, 40, 0, 1, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1];
    ip.extend_from_slice(&dst);
    let c = csum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend(ip);
    f.extend_from_slice(&1000u16.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0x20, 0, 0, 0, 0, 0]);
    f.resize(60, 0);
    f
}

fn read_msg(s: &mut TcpStream) -> (u32, Message) {
    loop {
        let mut h = [0u8; 8];
        s.read_exact(&mut h).expect("a header");
        let len = usize::from(u16::from_be_bytes([h[2], h[3]])).max(8);
        let mut buf = h.to_vec();
        buf.resize(len, 0);
        s.read_exact(&mut buf[8..]).expect("a body");
        match Message::parse(&buf) {
            Ok((_, Message::EchoRequest(_))) | Ok((_, Message::Hello(_))) => continue,
            Ok((xid, m)) => return (xid, m),
            Err(e) => panic!("undecodable message from the switch: {e:?}"),
        }
    }
}

#[test]
fn a_running_switch_traces_with_its_tables_and_caches() {
    let sw = PcapSwitch::start("ctl-trace");
    let t = sw.target();
    ok(&t, &["add-flow", "table=0,priority=10,in_port=1,actions=goto_table:1"]);
    ok(&t, &["add-flow", "table=1,priority=20,tcp,nw_dst=10.0.0.0/8,tp_dst=80,actions=output:2"]);
    ok(&t, &["add-flow", "table=1,priority=0,actions=drop"]);

    // A flow description: the switch builds the packet.
    let out = ok(&t, &["trace", "in_port=1,tcp,nw_dst=10.1.2.3,tp_dst=80"]);
    assert!(out.contains("packet: in_port=1 len=60"), "{out}");
    assert!(out.contains("table 0: priority=10 cookie=0x0 in_port=1"), "{out}");
    assert!(
        out.contains("table 1: priority=20 cookie=0x0 tcp,nw_dst=10.0.0.0/8,tp_dst=80"),
        "{out}"
    );
    assert!(out.contains("outputs: 2\n"), "{out}");
    let mf = out.lines().find(|l| l.starts_with("Megaflow: ")).unwrap_or_else(|| panic!("{out}"));
    for f in ["tcp", "in_port=1", "nw_dst=10.0.0.0/8", "tp_dst=80"] {
        assert!(mf.split([' ', ',']).any(|t| t == f), "{f} not in {mf}");
    }
    // The daemon's default caches.
    assert!(
        out.contains(
            "Cache: auto, traced as on (exact-match, then megaflow); this packet: a cache miss"
        ),
        "{out}"
    );
    assert!(out.contains("the same packet again: the exact-match cache"), "{out}");

    // Items may be separated by spaces, as in ovs-ofctl.
    let out = ok(&t, &["trace", "in_port=1", "tcp", "nw_dst=10.1.2.3", "tp_dst=22"]);
    assert!(out.contains("table 1: priority=0") && out.contains("outputs: drop"), "{out}");

    // A frame in hex, on an in-port.
    let hex: String = tcp_frame([10, 9, 9, 9], 80).iter().map(|b| format!("{b:02x}")).collect();
    let out = ok(&t, &["trace", "--packet", &hex, "1"]);
    assert!(out.contains("outputs: 2\n") && out.contains("Megaflow: "), "{out}");
    let out = ok(&t, &["trace", "--packet", &hex, "in_port=2"]);
    assert!(out.contains("table 0: no match") && out.contains("outputs: drop"), "{out}");

    // Bad descriptions: the switch answers with an error naming the token.
    let e = fails(&t, &["trace", "in_port=1,tcp,nw_dts=10.0.0.1"]);
    assert!(e.contains("SLICTR_BAD_TRACE") && e.contains("nw_dts"), "{e}");
    let e = fails(&t, &["trace", "in_port=1,metadata=5"]);
    assert!(e.contains("SLICTR_BAD_TRACE") && e.contains("`metadata`"), "{e}");
    let e = fails(&t, &["trace", "tcp,tp_dst=80"]);
    assert!(e.contains("in_port"), "{e}");
    // The client's own mistakes, before connecting.
    let e = fails(&t, &["trace"]);
    assert!(e.contains("trace: missing the flow description"), "{e}");
    let e = fails(&t, &["dump-flows", "--packet", "00"]);
    assert!(e.contains("--packet applies only to trace"), "{e}");

    // A SLAVE connection may trace.
    let mut s = TcpStream::connect(sw.addr()).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    s.write_all(&Message::Hello(Hello::with_versions(&[4])).encode(1)).expect("hello");
    let role = RoleMsg { role: controller_role::SLAVE, generation_id: 1 };
    s.write_all(&Message::RoleRequest(role).encode(2)).expect("role");
    let (xid, m) = read_msg(&mut s);
    assert!(xid == 2 && matches!(m, Message::RoleReply(_)), "{m:?}");
    let req = TraceRequest::Flow("in_port=1,tcp,nw_dst=10.1.2.3,tp_dst=80".into());
    s.write_all(&req.to_message().encode(3)).expect("trace");
    let (xid, m) = read_msg(&mut s);
    let Message::Experimenter(e) = &m else { panic!("not a trace reply: {m:?}") };
    let text = parse_reply(e).expect("a trace reply").expect("UTF-8");
    assert_eq!(xid, 3);
    assert!(text.contains("outputs: 2\n"), "{text}");
    // ...but still may not change the tables.
    let fm = sluice_ofp::ofctl::parse_flow("actions=drop", sluice_ofp::ofctl::Usage::Add)
        .expect("a flow")
        .to_flow_mod(sluice_ofp::message::flow_mod_command::ADD);
    s.write_all(&Message::FlowMod(fm).encode(4)).expect("flow-mod");
    let (xid, m) = read_msg(&mut s);
    assert!(xid == 4 && matches!(m, Message::Error(_)), "{m:?}");
}

/// Counts its runs in `runs[0]` and passes every packet.
const COUNT_RUNS: &str = r#"
#include "sluice_bpf.h"
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} runs SEC(".maps");

SEC("xdp")
int count_runs(struct xdp_md *ctx)
{
	__u32 k = 0;
	__u64 *n = bpf_map_lookup_elem(&runs, &k);
	if (n)
		*n += 1;
	return 1;
}
"#;

/// A printout without what changes by itself: xids and durations.
fn steady(s: &str) -> String {
    let mut out = String::new();
    for tok in s.split_inclusive([' ', ',', '\n']) {
        let bare = tok.trim_end_matches([' ', ',', '\n']);
        let timed = ["duration=", "duration:", "(xid="].iter().find(|p| bare.starts_with(**p));
        match timed {
            Some(p) => {
                out.push_str(p);
                out.push('*');
                out.push_str(&tok[bare.len()..]);
            }
            None => out.push_str(tok),
        }
    }
    out
}

/// What the switch shows of its counters, meters and the program's map.
fn state(t: &str) -> Vec<(&'static str, String)> {
    let dumps: [(&str, &[&str]); 6] = [
        ("dump-flows", &["dump-flows"]),
        ("dump-tables", &["dump-tables"]),
        ("dump-ports", &["dump-ports"]),
        ("dump-group-stats", &["dump-group-stats"]),
        ("meter-stats", &["meter-stats"]),
        ("dump-map", &["dump-map", "7", "runs"]),
    ];
    dumps.iter().map(|(name, args)| (*name, steady(&ok(t, args)))).collect()
}

#[test]
fn a_live_trace_changes_nothing_on_the_switch() {
    let dir = netlab::Scratch::new("trace-dry");
    let obj = netlab::clang(&dir, "count_runs", COUNT_RUNS).display().to_string();
    let sw = PcapSwitch::start("ctl-trace-dry");
    let t = sw.target();
    ok(&t, &["load-filter-prog", "7", &obj]);
    // One packet a second, a burst of one: a second packet now is dropped.
    ok(&t, &["add-meter", "meter=1,pktps,burst,stats,band=type=drop,rate=1,burst_size=1"]);
    ok(&t, &["add-group", "group_id=1,type=all,bucket=output:2"]);
    ok(
        &t,
        &["add-flow", "table=0,priority=10,in_port=1,filter_prog=7,actions=meter:1,goto_table:1"],
    );
    ok(&t, &["add-flow", "table=1,priority=10,tcp,idle_timeout=600,actions=group:1,CONTROLLER:64"]);
    let zero: String = [0u8; 8].iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(ok(&t, &["dump-map", "7", "runs"]), format!("key=00000000 value={zero}\n"));

    let before = state(&t);
    for n in 0..3 {
        let out = ok(&t, &["trace", "in_port=1,tcp,nw_dst=10.1.2.3,tp_dst=80"]);
        // The program ran (and says what it would write), the meter let the
        // packet through every time, the group and the packet-in were met.
        assert!(out.contains("filter_prog=7 (") && out.contains("): match"), "trace {n}: {out}");
        assert!(out.contains("map runs: key=00000000 value="), "trace {n}: {out}");
        assert!(out.contains("meter 1: pass"), "trace {n}: {out}");
        assert!(out.contains("group 1: buckets [0]"), "trace {n}: {out}");
        assert!(out.contains("-> controller (reason=action, table_id=1)"), "trace {n}: {out}");
        assert!(out.contains("outputs: 2,CONTROLLER\n"), "trace {n}: {out}");
    }
    let hex: String = tcp_frame([10, 1, 2, 3], 80).iter().map(|b| format!("{b:02x}")).collect();
    ok(&t, &["trace", "--packet", &hex, "1"]);
    let after = state(&t);
    for ((name, b), (_, a)) in before.iter().zip(&after) {
        assert_eq!(b, a, "{name} changed by traces");
    }

    // A real packet moves every one of them.
    let po = format!("in_port=1,packet={hex},actions=output:TABLE");
    ok(&t, &["packet-out", &po]);
    let real = state(&t);
    for ((name, b), (_, r)) in before.iter().zip(&real) {
        assert_ne!(b, r, "{name} did not see the real packet");
    }
    let flows = &real[0].1;
    assert_eq!(flows.matches("n_packets=1,").count(), 2, "{flows}");
}
