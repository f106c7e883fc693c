//! `ovs-ofctl -O OpenFlow13` (Open vSwitch's own client) against the
//! agent's passive listener, backed by the reference pipeline. These tests
//! FAIL if `ovs-ofctl` is missing (Debian package `openvswitch-common`).

mod common;

use std::net::SocketAddr;
use std::process::Command;

use common::*;
use sluice_agent::Agent;

/// Run `ovs-ofctl -O OpenFlow13 CMD tcp:ADDR ARGS...` (bounded by
/// `timeout 30`) and return stdout; panics on failure.
async fn ofctl(addr: SocketAddr, pre: &[&str], cmd: &str, args: &[&str]) -> String {
    let target = format!("tcp:{addr}");
    let mut argv: Vec<String> =
        vec!["30".into(), "ovs-ofctl".into(), "-O".into(), "OpenFlow13".into()];
    argv.extend(pre.iter().map(|s| s.to_string()));
    argv.push(cmd.into());
    argv.push(target);
    argv.extend(args.iter().map(|s| s.to_string()));
    let shown = argv.join(" ");
    let out = tokio::task::spawn_blocking(move || Command::new("timeout").args(&argv).output())
        .await
        .unwrap()
        .expect("cannot run `timeout ovs-ofctl`");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "`{shown}` failed ({}):\n{stdout}\n{stderr}", out.status);
    stdout
}

fn require_ovs_ofctl() {
    let ok = Command::new("ovs-ofctl").arg("--version").output().map(|o| o.status.success());
    assert!(
        matches!(ok, Ok(true)),
        "ovs-ofctl is required for this test (apt-get install openvswitch-common)"
    );
}

async fn start() -> (Agent, SocketAddr) {
    init_tracing();
    require_ovs_ofctl();
    let (sw, _) = TestSwitch::new(pipeline(3));
    let agent = Agent::start(test_config(&["ptcp:0:127.0.0.1".to_string()]), sw).await.unwrap();
    let addr = agent.listeners()[0].1.inet().expect("a TCP listener");
    (agent, addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_tables_and_ports() {
    let (agent, addr) = start().await;
    let show = ofctl(addr, &[], "show", &[]).await;
    assert!(show.contains("dpid:5111ce0000000001"), "{show}");
    assert!(show.contains("n_tables:255"), "{show}");
    let desc = ofctl(addr, &[], "dump-ports-desc", &[]).await;
    for p in ["1(p1)", "2(p2)", "3(p3)"] {
        assert!(desc.contains(p), "{p} missing:\n{desc}");
    }
    let tables = ofctl(addr, &[], "dump-tables", &[]).await;
    assert!(tables.contains("OFPST_TABLE reply (OF1.3)"), "{tables}");
    assert!(tables.contains("table 0:") || tables.contains("  0:"), "{tables}");
    let ports = ofctl(addr, &[], "dump-ports", &[]).await;
    assert!(ports.contains("OFPST_PORT reply (OF1.3)"), "{ports}");
    assert!(ports.contains("port  1: rx pkts=0"), "{ports}");
    assert!(ports.contains("port  3:"), "{ports}");
    let one = ofctl(addr, &[], "dump-ports", &["2"]).await;
    assert!(one.contains("port  2:") && !one.contains("port  1:"), "{one}");
    let features = ofctl(addr, &[], "dump-desc", &[]).await;
    assert!(features.contains("sluice"), "{features}");
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flows_add_dump_delete() {
    let (agent, addr) = start().await;
    // add-flow waits for a barrier reply after the flow-mod.
    ofctl(addr, &[], "add-flow", &["priority=100,in_port=1,actions=output:2"]).await;
    ofctl(
        addr,
        &[],
        "add-flow",
        &["table=1,priority=7,dl_type=0x0800,nw_dst=10.0.0.0/8,actions=drop"],
    )
    .await;
    ofctl(
        addr,
        &[],
        "add-flow",
        &["priority=50,cookie=0x1234,dl_dst=02:00:00:00:00:01,actions=output:3,output:1"],
    )
    .await;
    let dump = ofctl(addr, &[], "dump-flows", &[]).await;
    let lines: Vec<&str> = dump.lines().filter(|l| l.contains("priority=")).collect();
    assert_eq!(lines.len(), 3, "{dump}");
    assert!(lines.iter().any(|l| l.contains("priority=100,in_port=1 actions=output:2")), "{dump}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("table=1")
                && l.contains("priority=7,ip,nw_dst=10.0.0.0/8 actions=drop")),
        "{dump}"
    );
    assert!(
        lines.iter().any(|l| l.contains("cookie=0x1234")
            && l.contains("priority=50,dl_dst=02:00:00:00:00:01 actions=output:3,output:1")),
        "{dump}"
    );
    // Filtered dump.
    let t1 = ofctl(addr, &[], "dump-flows", &["table=1"]).await;
    assert_eq!(t1.lines().filter(|l| l.contains("priority=")).count(), 1, "{t1}");
    let agg = ofctl(addr, &[], "dump-aggregate", &[]).await;
    assert!(agg.contains("flow_count=3"), "{agg}");

    // Strict delete removes exactly one flow.
    ofctl(addr, &["--strict"], "del-flows", &["priority=100,in_port=1"]).await;
    let dump = ofctl(addr, &[], "dump-flows", &[]).await;
    assert!(!dump.contains("priority=100"), "{dump}");
    assert_eq!(dump.lines().filter(|l| l.contains("priority=")).count(), 2, "{dump}");
    // Non-strict delete of everything.
    ofctl(addr, &[], "del-flows", &[]).await;
    let dump = ofctl(addr, &[], "dump-flows", &[]).await;
    assert_eq!(dump.lines().filter(|l| l.contains("priority=")).count(), 0, "{dump}");
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_and_meters() {
    let (agent, addr) = start().await;
    ofctl(addr, &[], "add-group", &["group_id=1,type=all,bucket=output:1,bucket=output:2"]).await;
    ofctl(addr, &[], "add-group", &["group_id=2,type=indirect,bucket=output:3"]).await;
    let groups = ofctl(addr, &[], "dump-groups", &[]).await;
    assert!(
        groups.contains("group_id=1,type=all,bucket=actions=output:1,bucket=actions=output:2"),
        "{groups}"
    );
    assert!(groups.contains("group_id=2,type=indirect,bucket=actions=output:3"), "{groups}");
    ofctl(addr, &[], "add-flow", &["priority=1,actions=group:1"]).await;
    let gstats = ofctl(addr, &[], "dump-group-stats", &[]).await;
    assert!(gstats.contains("group_id=1,duration="), "{gstats}");
    assert!(gstats.contains("ref_count=1"), "{gstats}");

    ofctl(addr, &[], "add-meter", &["meter=1,kbps,band=type=drop,rate=1000"]).await;
    ofctl(
        addr,
        &[],
        "add-meter",
        &["meter=2,pktps,burst,stats,band=type=dscp_remark,rate=50,burst_size=10,prec_level=1"],
    )
    .await;
    let meters = ofctl(addr, &[], "dump-meters", &[]).await;
    assert!(
        meters.contains("meter=1 kbps bands=") && meters.contains("type=drop rate=1000"),
        "{meters}"
    );
    assert!(meters.contains("meter=2 pktps burst stats bands="), "{meters}");
    assert!(meters.contains("type=dscp_remark rate=50 burst_size=10 prec_level=1"), "{meters}");
    let mstats = ofctl(addr, &[], "meter-stats", &[]).await;
    assert!(mstats.contains("meter:1 flow_count:0"), "{mstats}");
    assert!(mstats.contains("meter:2"), "{mstats}");
    ofctl(addr, &[], "del-meter", &["meter=1"]).await;
    let meters = ofctl(addr, &[], "dump-meters", &[]).await;
    assert!(!meters.contains("meter=1 ") && meters.contains("meter=2 "), "{meters}");
    agent.shutdown().await;
}
