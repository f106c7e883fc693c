//! `sluice trace --flow DESCRIPTION` through the binary: the packet built
//! from an ovs-ofctl match description goes where the flow file says,
//! in-port rules hold, `pof(...)` fields set their bits in the frame, a
//! field the builder cannot place is refused by name, and the trace ends
//! with the megaflow and the cache that serves the packet.

use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

const FLOWS: &str = "\
priority=100,in_port=1,tcp,nw_dst=10.1.2.3,tp_dst=80,actions=output:2
priority=90,in_port=1,udp,nw_dst=10.1.0.0/16,actions=output:3
priority=80,in_port=1,dl_vlan=7,arp,arp_tpa=10.0.0.9,actions=output:4
priority=70,icmp6,icmpv6_type=128,actions=output:2,output:3
priority=60,in_port=2,tcp,actions=output:1
priority=50,in_port=3,pof(l3+32,16)=0x1234,actions=output:4
priority=50,in_port=3,dl_type=0x88b5,pof(l2end+8,8)=0x5a/0xff,actions=output:2
priority=0,actions=drop
";

/// Each run gets its own directory: the tests run in parallel.
fn trace(extra: &[&str]) -> Output {
    trace_flows(FLOWS, extra)
}

fn trace_flows(flow_text: &str, extra: &[&str]) -> Output {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("sluice-trace-flow-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let flows = dir.join("flows.txt");
    std::fs::write(&flows, flow_text).expect("write flows");
    let mut args = vec!["trace", "--flows", flows.to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    let out = Command::new(SLUICE).args(&args).output().expect("run sluice");
    let _ = std::fs::remove_dir_all(&dir);
    out
}

fn outputs(extra: &[&str]) -> String {
    let out = trace(extra);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{extra:?}: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("outputs: "))
        .unwrap_or_else(|| panic!("{extra:?}: no outputs line in\n{stdout}"))
        .to_string()
}

fn refused(extra: &[&str]) -> String {
    let out = trace(extra);
    assert!(!out.status.success(), "{extra:?} should be refused");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn flow_descriptions_follow_the_flows() {
    assert_eq!(outputs(&["--flow", "in_port=1,tcp,nw_dst=10.1.2.3,tp_dst=80"]), "2");
    assert_eq!(outputs(&["--flow", "in_port=1,udp,nw_dst=10.1.200.1,tp_dst=53"]), "3");
    assert_eq!(outputs(&["--flow", "in_port=1,dl_vlan=7,arp,arp_op=1,arp_tpa=10.0.0.9"]), "4");
    assert_eq!(
        outputs(&[
            "--flow",
            "in_port=5,icmp6,ipv6_dst=2001:db8::1,icmpv6_type=128",
            "--ports",
            "5"
        ]),
        "2,3"
    );
    // --in-port stands in for in_port in the description.
    assert_eq!(outputs(&["--in-port", "2", "--flow", "tcp,tp_dst=22"]), "1");
    // The same port twice is fine.
    assert_eq!(
        outputs(&["--in-port", "1", "--flow", "in_port=1,tcp,nw_dst=10.1.2.3,tp_dst=80"]),
        "2"
    );
}

#[test]
fn unmatched_packets_are_dropped() {
    assert_eq!(outputs(&["--flow", "in_port=1,tcp,nw_dst=10.1.2.3,tp_dst=81"]), "drop");
    assert_eq!(outputs(&["--flow", "in_port=1,arp,arp_tpa=10.0.0.9"]), "drop");
}

#[test]
fn refusals_are_clear() {
    let e = refused(&["--flow", "in_port=1,tcp,metadata=0x5"]);
    assert!(e.contains("metadata"), "{e}");
    let e = refused(&["--flow", "in_port=1,udp,tcp_dst=80"]);
    assert!(e.contains("tcp_dst"), "{e}");
    let e = refused(&["--in-port", "2", "--flow", "in_port=1,tcp"]);
    assert!(e.contains("in_port=1") && e.contains("--in-port is 2"), "{e}");
    let e = refused(&["--flow", "tcp"]);
    assert!(e.contains("--in-port"), "{e}");
    let e = refused(&["--flow", "in_port=1,tcp", "--packet", "00"]);
    assert!(e.contains("--packet") && e.contains("--flow"), "{e}");
}

#[test]
fn pof_fields_set_bits_of_the_built_packet() {
    // The IPv4 identification (32 bits into the IPv4 header).
    let ports = ["--ports", "3,4"];
    fn with<'a>(d: &'a str, ports: &[&'a str]) -> Vec<&'a str> {
        [&["--flow", d][..], ports].concat()
    }
    assert_eq!(outputs(&with("in_port=3,ip,pof(l3+32,16)=0x1234", &ports)), "4");
    assert_eq!(outputs(&with("in_port=3,ip,pof(l3+32,16)=0x1235", &ports)), "drop");
    assert_eq!(outputs(&with("in_port=3,dl_type=0x88b5,pof(l2end+8,8)=0x5a", &ports)), "2");
    // A base the packet does not have, and a change of a given field.
    let e = refused(&with("in_port=3,arp,pof(l4+0,16)=1", &ports));
    assert!(e.contains("`pof(l4+0,16)`"), "{e}");
    let e = refused(&with("in_port=3,ip,nw_dst=10.0.0.1,pof(l3+128,32)=0x0a000002", &ports));
    assert!(e.contains("`nw_dst`"), "{e}");
    // The megaflow holds the window's bits (as raw key words).
    let out = trace(&with("in_port=3,ip,pof(l3+32,16)=0x1234", &ports));
    let text = String::from_utf8_lossy(&out.stdout);
    let mf = text.lines().find(|l| l.starts_with("Megaflow: ")).unwrap_or_else(|| panic!("{text}"));
    assert!(mf.contains("in_port=3") && mf.contains("key_word"), "{mf}");
}

#[test]
fn the_trace_ends_with_the_megaflow_and_the_serving_cache() {
    let out = trace(&["--flow", "in_port=1,tcp,nw_dst=10.1.2.3,tp_dst=80"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let mf = text.lines().find(|l| l.starts_with("Megaflow: ")).unwrap_or_else(|| panic!("{text}"));
    for f in ["tcp", "in_port=1", "nw_dst=10.1.2.3", "tp_dst=80"] {
        assert!(mf.trim_start_matches("Megaflow: ").split(',').any(|t| t == f), "{f}: {mf}");
    }
    assert!(
        text.contains(
            "this packet: a cache miss: the tables; the same packet again: the exact-match cache"
        ),
        "{text}"
    );
    let out = trace(&["--flow", "in_port=1,tcp,nw_dst=10.1.2.3,tp_dst=80", "--cache", "megaflow"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("the same packet again: the megaflow cache"), "{text}");
    let out = trace(&["--flow", "in_port=1,tcp,nw_dst=10.1.2.3,tp_dst=80", "--cache", "off"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("this pipeline's caches are off") && text.contains("Cache: off"),
        "{text}"
    );
    // A structural edit ends the recording: said, with the reason.
    let pop = "ip,actions=pop_vlan,goto_table:1\ntable=1,ip,nw_dst=10.0.0.1,actions=output:2\n";
    let out = trace_flows(pop, &["--flow", "in_port=1,ip,nw_dst=10.0.0.1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Megaflow: ip (not cacheable after 1 recorded lookup: recording stopped at a structural edit"),
        "{text}"
    );
    let e = refused(&["--flow", "in_port=1,tcp", "--cache", "sometimes"]);
    assert!(e.contains("--cache sometimes"), "{e}");
}
