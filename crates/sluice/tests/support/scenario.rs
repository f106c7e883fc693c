//! The capture scenario: which `ovs-ofctl` commands run, in which order,
//! against the private Open vSwitch of [`super::Ovs`], and which
//! hand-written requests go over a raw connection for the message types
//! `ovs-ofctl` cannot send in OpenFlow 1.3 (role request, async config,
//! table-mod, deliberately invalid requests).
//!
//! Each step has a fixture name; the same list drives the fixture
//! generator and the live test, so both see the same commands.

use super::{Capture, Ovs};
use std::time::Duration;

/// One step: a fixture name and how to produce it.
pub struct Step {
    pub name: &'static str,
    pub kind: Kind,
}

pub enum Kind {
    /// `ovs-ofctl -O OpenFlow13 ARGS` (the literal `BR` is the switch).
    Ofctl(&'static [&'static str]),
    /// `ovs-ofctl monitor`-style long-running command: started, then
    /// `during` runs other (unrecorded) commands, then it is stopped.
    Monitor { args: &'static [&'static str], during: super::Hook },
    /// Hand-written requests after a HELLO over one raw connection; the
    /// switch's answers are recorded. `replies` is how many to wait for.
    Raw { requests: fn() -> Vec<Vec<u8>>, replies: usize, during: Option<super::Hook> },
}

/// An IPv4/UDP frame: 02:00:00:00:00:02 <- 02:00:00:00:00:01,
/// 10.0.0.1:1024 -> 10.0.0.2:2048, 8 payload bytes.
pub const PACKET: &str = "02000000000202000000000108004500002400010000401166c60a0000010a0000020400080000100000deadbeefcafef00d";

macro_rules! ofctl {
    ($name:literal, $($a:expr),+ $(,)?) => {
        Step { name: $name, kind: Kind::Ofctl(&[$($a),+]) }
    };
}

/// Every step, in the order it must run (flows refer to groups and meters
/// added before them; deletions come after the dumps).
pub fn steps() -> Vec<Step> {
    vec![
        ofctl!("show", "show", "BR"),
        ofctl!("dump-desc", "dump-desc", "BR"),
        ofctl!("get-config", "get-frags", "BR"),
        ofctl!("set-config", "set-frags", "BR", "drop"),
        ofctl!("dump-ports-desc", "dump-ports-desc", "BR"),
        ofctl!("dump-tables", "dump-tables", "BR"),
        ofctl!("dump-table-features", "dump-table-features", "BR"),
        ofctl!("probe", "probe", "BR"),
        ofctl!("mod-port", "mod-port", "BR", "p3", "down"),
        // Meters (OVS's userspace datapath supports drop bands only: the
        // dscp_remark meter is answered with OFPMMFC_BAD_BAND).
        ofctl!("add-meter-kbps", "add-meter", "BR", "meter=1,kbps,burst,stats,band=type=drop,rate=1000,burst_size=100"),
        ofctl!("add-meter-pktps", "add-meter", "BR", "meter=2,pktps,stats,band=type=drop,rate=500"),
        ofctl!(
            "add-meter-dscp-remark",
            "add-meter",
            "BR",
            "meter=3,kbps,burst,band=type=dscp_remark,rate=2000,burst_size=200,prec_level=1"
        ),
        ofctl!("mod-meter", "mod-meter", "BR", "meter=2,pktps,stats,band=type=drop,rate=800"),
        // Groups of every type.
        ofctl!("add-group-all", "add-group", "BR", "group_id=1,type=all,bucket=output:1,bucket=output:2"),
        ofctl!(
            "add-group-select",
            "add-group",
            "BR",
            "group_id=2,type=select,bucket=weight:10,output:1,bucket=weight:20,set_field:00:00:00:00:00:22->eth_dst,output:2"
        ),
        ofctl!("add-group-indirect", "add-group", "BR", "group_id=3,type=indirect,bucket=set_field:00:11:22:33:44:55->eth_dst,output:3"),
        ofctl!(
            "add-group-ff",
            "add-group",
            "BR",
            "group_id=4,type=fast_failover,bucket=watch_port:1,output:1,bucket=watch_port:2,watch_group:1,output:2"
        ),
        ofctl!("mod-group", "mod-group", "BR", "group_id=1,type=all,bucket=output:1,bucket=output:3,bucket=group:3"),
        // Flows: many match fields, actions and instructions.
        ofctl!(
            "add-flow-l2",
            "add-flow",
            "BR",
            "table=0,priority=10,in_port=1,dl_src=00:00:00:00:00:01,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,dl_type=0x88cc,actions=output:2"
        ),
        ofctl!("add-flow-vlan-pop", "add-flow", "BR", "table=0,priority=30,in_port=1,dl_vlan=10,dl_vlan_pcp=3,actions=pop_vlan,output:2"),
        ofctl!(
            "add-flow-vlan-push",
            "add-flow",
            "BR",
            "table=0,priority=30,in_port=2,vlan_tci=0x0000/0x1000,actions=push_vlan:0x8100,set_field:4106->vlan_vid,set_field:5->vlan_pcp,output:1"
        ),
        ofctl!(
            "add-flow-ipv4-tcp",
            "add-flow",
            "BR",
            "table=1,priority=100,tcp,in_port=1,nw_src=10.0.0.0/8,nw_dst=192.168.1.0/24,ip_dscp=10,nw_ecn=1,tp_src=1024,tp_dst=80,actions=set_field:10.1.1.1->ip_dst,set_field:8080->tcp_dst,output:2"
        ),
        ofctl!("add-flow-udp", "add-flow", "BR", "table=1,priority=90,udp,udp_src=53,udp_dst=5353,actions=set_field:1234->udp_src,output:2"),
        ofctl!("add-flow-sctp", "add-flow", "BR", "table=1,priority=80,sctp,sctp_src=1,sctp_dst=2,actions=output:2"),
        ofctl!("add-flow-icmp", "add-flow", "BR", "table=1,priority=70,icmp,icmp_type=8,icmp_code=0,actions=dec_ttl,mod_nw_ttl:9,output:2"),
        ofctl!(
            "add-flow-ipv6",
            "add-flow",
            "BR",
            "table=0,priority=20,icmp6,in_port=3,ipv6_src=2001:db8::/32,ipv6_dst=2001:db8::1,ipv6_label=0x12345,icmp_type=135,icmp_code=0,nd_target=2001:db8::2,nd_sll=00:00:00:00:00:aa,actions=set_field:2001:db8::99->ipv6_dst,output:1"
        ),
        ofctl!(
            "add-flow-arp",
            "add-flow",
            "BR",
            "table=0,priority=40,arp,arp_op=1,arp_spa=10.0.0.1,arp_tpa=10.0.0.0/24,arp_sha=00:00:00:00:00:01,arp_tha=00:00:00:00:00:00,actions=set_field:00:00:00:00:00:99->arp_sha,output:in_port,CONTROLLER:128"
        ),
        ofctl!(
            "add-flow-mpls-pop",
            "add-flow",
            "BR",
            "table=0,priority=50,mpls,mpls_label=100,mpls_tc=3,mpls_bos=1,actions=pop_mpls:0x0800,output:2"
        ),
        ofctl!(
            "add-flow-mpls-push",
            "add-flow",
            "BR",
            "table=2,priority=50,ip,actions=push_mpls:0x8847,set_field:10->mpls_label,set_field:2->mpls_tc,set_mpls_ttl:64,dec_mpls_ttl,output:2"
        ),
        ofctl!(
            "add-flow-set-field",
            "add-flow",
            "BR",
            "table=2,priority=60,tcp,actions=set_field:00:11:22:33:44:55->eth_src,set_field:66:77:88:99:aa:bb->eth_dst,set_field:10.0.0.2->ip_src,set_field:46->ip_dscp,set_field:80->tcp_src,set_queue:1,output:3"
        ),
        ofctl!(
            "add-flow-instructions",
            "add-flow",
            "BR",
            "table=0,priority=5,cookie=0x1234,idle_timeout=60,hard_timeout=120,send_flow_rem,metadata=0x1/0xff,tun_id=0x5/0xff,actions=meter:1,output:1,write_actions(output:3),write_metadata:0x5/0xff,goto_table:2"
        ),
        ofctl!("add-flow-clear-actions", "add-flow", "BR", "table=2,priority=1,in_port=3,actions=clear_actions,write_actions(group:3),goto_table:3"),
        ofctl!("add-flow-group", "add-flow", "BR", "table=3,priority=1,actions=group:1"),
        ofctl!("mod-flows", "mod-flows", "BR", "table=3,actions=group:2"),
        ofctl!("packet-out", "packet-out", "BR", "1", "output:2", PACKET),
        // Dumps and stats.
        ofctl!("dump-flows", "dump-flows", "BR"),
        ofctl!("dump-flows-filtered", "dump-flows", "BR", "table=1,tcp"),
        ofctl!("dump-aggregate", "dump-aggregate", "BR"),
        ofctl!("dump-ports", "dump-ports", "BR"),
        ofctl!("dump-ports-one", "dump-ports", "BR", "1"),
        ofctl!("queue-stats", "queue-stats", "BR"),
        ofctl!("queue-get-config", "queue-get-config", "BR", "1"),
        ofctl!("dump-groups", "dump-groups", "BR"),
        ofctl!("dump-group-stats", "dump-group-stats", "BR"),
        ofctl!("dump-group-features", "dump-group-features", "BR"),
        ofctl!("dump-meters", "dump-meters", "BR"),
        ofctl!("meter-stats", "meter-stats", "BR"),
        ofctl!("meter-features", "meter-features", "BR"),
        // Asynchronous messages to a monitoring connection.
        Step {
            name: "monitor",
            kind: Kind::Monitor { args: &["monitor", "BR", "65535"], during: monitor_triggers },
        },
        // Deletions.
        ofctl!("del-flows-strict", "--strict", "del-flows", "BR", "table=1,priority=80,sctp,sctp_src=1,sctp_dst=2"),
        ofctl!("del-flows-cookie", "del-flows", "BR", "cookie=0x1234/-1"),
        ofctl!("del-groups", "del-groups", "BR", "group_id=4"),
        ofctl!("del-meters", "del-meters", "BR", "meter=2"),
        ofctl!("del-flows-all", "del-flows", "BR"),
        // Raw connections: hand-written requests, OVS's real answers.
        Step { name: "raw-role-request", kind: Kind::Raw { requests: raw_role, replies: 3, during: None } },
        Step { name: "raw-async-config", kind: Kind::Raw { requests: raw_async, replies: 2, during: None } },
        Step { name: "raw-echo-barrier-features", kind: Kind::Raw { requests: raw_misc, replies: 3, during: None } },
        Step { name: "raw-table-mod", kind: Kind::Raw { requests: raw_table_mod, replies: 1, during: None } },
        Step {
            name: "raw-async-messages",
            kind: Kind::Raw { requests: raw_set_config, replies: 1, during: Some(async_triggers) },
        },
        Step { name: "raw-errors", kind: Kind::Raw { requests: raw_errors, replies: 3, during: None } },
    ]
}

/// While `ovs-ofctl monitor` listens: a packet-out to CONTROLLER (gives a
/// PACKET_IN), a flow with send_flow_rem that is then deleted (gives a
/// FLOW_REMOVED), a new port (gives a PORT_STATUS).
fn monitor_triggers(ovs: &Ovs) -> Result<(), String> {
    ovs.ofctl_direct(&["packet-out", "BR", "1", "CONTROLLER:65535", PACKET])?;
    ovs.ofctl_direct(&[
        "add-flow",
        "BR",
        "table=5,priority=7,cookie=0x77,send_flow_rem,udp,actions=drop",
    ])?;
    ovs.ofctl_direct(&["del-flows", "BR", "table=5"])?;
    ovs.vsctl(&[
        "add-port",
        super::BRIDGE,
        "p4",
        "--",
        "set",
        "interface",
        "p4",
        "type=internal",
        "ofport_request=4",
    ])?;
    std::thread::sleep(Duration::from_millis(500));
    Ok(())
}

/// While a raw connection (miss_send_len 0xffff) listens: the same
/// triggers as [`monitor_triggers`], so that the standard OFPT_PACKET_IN
/// (not Nicira's PACKET_IN2, which `ovs-ofctl monitor` asks for) is seen.
fn async_triggers(ovs: &Ovs) -> Result<(), String> {
    ovs.ofctl_direct(&["packet-out", "BR", "2", "CONTROLLER:65535", PACKET])?;
    ovs.ofctl_direct(&[
        "add-flow",
        "BR",
        "table=6,priority=8,cookie=0x88,send_flow_rem,tcp,actions=drop",
    ])?;
    ovs.ofctl_direct(&["del-flows", "BR", "table=6"])?;
    ovs.vsctl(&[
        "add-port",
        super::BRIDGE,
        "p5",
        "--",
        "set",
        "interface",
        "p5",
        "type=internal",
        "ofport_request=5",
    ])?;
    std::thread::sleep(Duration::from_millis(500));
    Ok(())
}

/// SET_CONFIG (frags normal, miss_send_len 0xffff), then a BARRIER.
fn raw_set_config() -> Vec<Vec<u8>> {
    vec![msg(9, 0x60, &[0, 0, 0xff, 0xff]), msg(20, 0x61, &[])]
}

fn msg(ty: u8, xid: u32, body: &[u8]) -> Vec<u8> {
    let len = (8 + body.len()) as u16;
    let mut m = vec![4, ty];
    m.extend_from_slice(&len.to_be_bytes());
    m.extend_from_slice(&xid.to_be_bytes());
    m.extend_from_slice(body);
    m
}

fn role(role: u32, generation: u64) -> Vec<u8> {
    let mut b = role.to_be_bytes().to_vec();
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&generation.to_be_bytes());
    b
}

/// ROLE_REQUEST: become MASTER (generation 5), ask without change, then a
/// stale SLAVE request (generation 4 < 5: OFPRRFC_STALE).
fn raw_role() -> Vec<Vec<u8>> {
    vec![msg(24, 0x10, &role(2, 5)), msg(24, 0x11, &role(0, 0)), msg(24, 0x12, &role(3, 4))]
}

/// GET_ASYNC_REQUEST, SET_ASYNC (all reasons on for master, some for
/// slave), GET_ASYNC_REQUEST again.
fn raw_async() -> Vec<Vec<u8>> {
    let mut set = Vec::new();
    for (m, s) in [(0x7u32, 0x1u32), (0x7, 0x7), (0xf, 0x0)] {
        set.extend_from_slice(&m.to_be_bytes());
        set.extend_from_slice(&s.to_be_bytes());
    }
    // Wire order: packet_in_mask[2], port_status_mask[2], flow_removed_mask[2].
    vec![msg(26, 0x20, &[]), msg(28, 0x21, &set), msg(26, 0x22, &[])]
}

/// ECHO_REQUEST with data, FEATURES_REQUEST, BARRIER_REQUEST.
fn raw_misc() -> Vec<Vec<u8>> {
    vec![msg(2, 0x30, b"sluice echo"), msg(5, 0x31, &[]), msg(20, 0x32, &[])]
}

/// TABLE_MOD table 0, config 0 (the only OpenFlow 1.3 value besides the
/// deprecated bits).
fn raw_table_mod() -> Vec<Vec<u8>> {
    vec![msg(17, 0x40, &[0, 0, 0, 0, 0, 0, 0, 0]), msg(20, 0x41, &[])]
}

/// Requests OVS must reject: an unknown message type, an unknown
/// experimenter, a flow-mod matching tcp_dst without its prerequisites.
fn raw_errors() -> Vec<Vec<u8>> {
    let mut fm = Vec::new();
    fm.extend_from_slice(&[0; 16]); // cookie, cookie_mask
    fm.extend_from_slice(&[0, 0]); // table 0, OFPFC_ADD
    fm.extend_from_slice(&[0, 0, 0, 0, 0, 1]); // idle, hard, priority 1
    fm.extend_from_slice(&[0xff; 4]); // buffer_id: none
    fm.extend_from_slice(&[0xff; 4]); // out_port: any
    fm.extend_from_slice(&[0xff; 4]); // out_group: any
    fm.extend_from_slice(&[0; 4]); // flags, pad
                                   // ofp_match: OXM, length 4 + 6, tcp_dst=80, padded to 16.
    fm.extend_from_slice(&[0, 1, 0, 10, 0x80, 0, 0x1c, 2, 0, 80, 0, 0, 0, 0, 0, 0]);
    let mut exp = 0xdead_beefu32.to_be_bytes().to_vec();
    exp.extend_from_slice(&[0, 0, 0, 1]);
    vec![msg(40, 0x50, &[]), msg(4, 0x51, &exp), msg(14, 0x52, &fm), msg(20, 0x53, &[])]
}

/// Run one step.
pub fn run(ovs: &Ovs, step: &Step) -> Result<Capture, String> {
    let mut cap = match &step.kind {
        Kind::Ofctl(args) => ovs.record(args)?,
        Kind::Monitor { args, during } => ovs.record_during(args, *during)?,
        Kind::Raw { requests, replies, during } => {
            let mut c = ovs.record_raw(&requests(), *replies, *during)?;
            c.command = format!(
                "raw connection ({}): hand-written requests, replies from Open vSwitch",
                step.name
            );
            c
        }
    };
    trim_table_features(&mut cap, step.name == "dump-table-features");
    if cap.records.is_empty() {
        return Err(format!("{}: nothing recorded; stderr: {}", step.name, cap.stderr));
    }
    if let Kind::Ofctl(_) = step.kind {
        // ovs-ofctl reports errors from the switch on stderr and fails;
        // such captures are kept (the error message is a fixture too).
        cap.stdout = cap.stdout.trim_end().to_string();
    }
    Ok(cap)
}

#[allow(dead_code)]
pub fn packet_bytes() -> Vec<u8> {
    super::hex_decode(PACKET).unwrap_or_default()
}

/// Is this a multipart (request or reply) of type OFPMP_TABLE_FEATURES?
fn is_table_features(m: &[u8]) -> bool {
    m.len() >= 10 && (m[1] == 18 || m[1] == 19) && m[8] == 0 && m[9] == 12
}

/// `ovs-ofctl` fetches all 254 tables' features (≈1.2 MB) on a side
/// connection before many commands. Keep that exchange only in the
/// dump-table-features fixture, and there only its request, the first
/// and the last reply message (the last ends the multipart sequence).
fn trim_table_features(cap: &mut super::Capture, keep_one: bool) {
    let conns: Vec<u32> =
        cap.records.iter().filter(|r| is_table_features(&r.bytes)).map(|r| r.conn).collect();
    if conns.is_empty() {
        return;
    }
    if !keep_one {
        let n = cap.records.iter().filter(|r| conns.contains(&r.conn)).count();
        cap.records.retain(|r| !conns.contains(&r.conn));
        cap.omitted.push(format!(
            "{n} messages of a side connection fetching OFPMP_TABLE_FEATURES (see dump-table-features.hex)"
        ));
        return;
    }
    let replies: Vec<usize> = cap
        .records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.dir == super::Dir::FromSwitch && is_table_features(&r.bytes))
        .map(|(i, _)| i)
        .collect();
    if replies.len() <= 2 {
        return;
    }
    let drop: Vec<usize> = replies[1..replies.len() - 1].to_vec();
    let mut i = 0;
    cap.records.retain(|_| {
        let keep = !drop.contains(&i);
        i += 1;
        keep
    });
    cap.omitted.push(format!(
        "{} OFPMP_TABLE_FEATURES reply messages between the first and the last (same shape, ~60 kB each)",
        drop.len()
    ));
}
