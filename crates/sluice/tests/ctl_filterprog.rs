//! `sluice ctl`'s filter-program commands against the real switch:
//! `sluice run` on two pcap ports (no root, no namespace; `pcap_switch`)
//! and the `sluice` binary as a user runs it. Programs are compiled here
//! with clang (required: `scripts/install-deps` installs it).
//!
//! - a program loads, a flow names it (`filter_prog=7`) next to one with
//!   `pcap_filter`, its map is written and read back, and it cannot be
//!   unloaded while the flow exists (`SLICFPC_PROG_IN_USE`) but can after
//!   `del-flows`;
//! - a map larger than one multipart reply is dumped whole
//!   (`OFPMPF_REPLY_MORE`);
//! - a program the verifier refuses is reported with
//!   `SLICFPC_PROG_REJECTED` and the verifier's reason;
//! - bad arguments are refused by name before any connection;
//! - a rule's `send_maps` reaches a controller connected over TCP as a
//!   `MAPS_REPORT` with the rule's cookie and the map's contents.
//!
//! Bounds: every `sluice ctl` runs with `--timeout` and is killed by PID
//! if it outlives `netlab::CTL_LIMIT`; the switch is our child, stopped by PID
//! when its guard drops (also on panic).

mod netlab;
mod ofconn;
mod pcap_switch;

use netlab::{clang, fails, ok, Scratch};
use pcap_switch::PcapSwitch;

/// Passes the first `budget[1]` packets, counting them in `budget[0]`.
const FIRST_N: &str = r#"
#include "sluice_bpf.h"
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} budget SEC(".maps");

SEC("xdp")
int first_n(struct xdp_md *ctx)
{
	__u32 k0 = 0, k1 = 1;
	__u64 *seen = bpf_map_lookup_elem(&budget, &k0);
	__u64 *limit = bpf_map_lookup_elem(&budget, &k1);
	if (!seen || !limit || *seen >= *limit)
		return 0;
	*seen += 1;
	return 1;
}
"#;

/// Passes packets from the ingress ports listed in its hash map `big`.
const PORTS: &str = r#"
#include "sluice_bpf.h"
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u64);
} big SEC(".maps");

SEC("xdp")
int ports(struct xdp_md *ctx)
{
	__u32 port = ctx->ingress_ifindex;
	return bpf_map_lookup_elem(&big, &port) != 0;
}
"#;

/// Reads the frame without a bounds check: the verifier refuses it.
const UNCHECKED: &str = r#"
#include "sluice_bpf.h"
SEC("xdp")
int unchecked(struct xdp_md *ctx)
{
	unsigned char *data = (void *)(long)ctx->data;
	return data[40];
}
"#;

/// A `u64` map value as the switch (little-endian x86) stores it, in hex.
fn le64(v: u64) -> String {
    v.to_le_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn load_flow_map_and_unload_a_program() {
    let dir = Scratch::new("life");
    let obj = clang(&dir, "first_n", FIRST_N);
    let ports = clang(&dir, "ports", PORTS);
    let sw = PcapSwitch::start("ctl-fp");
    let t = sw.target();
    let obj = obj.display().to_string();

    let o = ok(&t, &["load-filter-prog", "7", &obj]);
    assert_eq!((o.stdout.as_str(), o.stderr.as_str()), ("", ""), "{o}");
    fails(&t, &["load-filter-prog", "7", &obj], &["SLICFPC_PROG_EXISTS", "load-filter-prog 7"]);

    ok(&t, &["add-flow", "priority=10,filter_prog=7,actions=output:2"]);
    ok(&t, &["add-flow", "priority=5,udp,pcap_filter=\"udp port 53\",actions=output:1"]);
    let flows = ok(&t, &["dump-flows"]).stdout;
    assert!(flows.contains("filter_prog=7"), "{flows}");
    assert!(flows.contains("pcap_filter="), "{flows}");

    // Array map: both keys always exist; write both, read them back.
    let (k0, k1) = ("00000000", "0x01000000");
    ok(&t, &["update-map", "7", "budget", k0, &le64(0), k1, &le64(3)]);
    let dump = ok(&t, &["dump-map", "7", "budget"]).stdout;
    let want = format!("key=00000000 value={}\nkey=01000000 value={}\n", le64(0), le64(3));
    assert_eq!(dump, want);
    // Hash map: starts empty, takes entries, loses them to --delete (the
    // flag anywhere among the arguments).
    ok(&t, &["load-filter-prog", "8", &ports.display().to_string()]);
    assert_eq!(ok(&t, &["dump-map", "8", "big"]).stdout, "");
    ok(&t, &["update-map", "8", "big", "01000000", &le64(5), "02000000", &le64(6)]);
    ok(&t, &["update-map", "8", "big", "--delete", "01000000"]);
    let dump = ok(&t, &["dump-map", "8", "big"]).stdout;
    assert_eq!(dump, format!("key=02000000 value={}\n", le64(6)));
    ok(&t, &["unload-filter-prog", "8"]);
    // A key that is not there, a map that is not there, a wrong size.
    fails(&t, &["update-map", "--delete", "7", "budget", "00000000"], &["SLICFPC_MAP_OP_FAILED"]);
    fails(&t, &["dump-map", "7", "nosuch"], &["SLICFPC_UNKNOWN_MAP"]);
    fails(&t, &["update-map", "7", "budget", "0000", "00"], &["SLICFPC_BAD_MAP_SIZES"]);

    // In use by the flow: refused, and still there.
    let o = fails(&t, &["unload-filter-prog", "7"], &["SLICFPC_PROG_IN_USE"]);
    assert!(o.stderr.contains("unload-filter-prog 7"), "{o}");
    assert_eq!(ok(&t, &["dump-map", "7", "budget"]).stdout, want);

    ok(&t, &["del-flows"]);
    ok(&t, &["unload-filter-prog", "7"]);
    fails(&t, &["dump-map", "7", "budget"], &["SLICFPC_UNKNOWN_PROG"]);
    fails(&t, &["unload-filter-prog", "7"], &["SLICFPC_UNKNOWN_PROG"]);
    // A flow naming a program that is gone is refused by name.
    fails(&t, &["add-flow", "filter_prog=7,actions=drop"], &["SLICFPC_UNKNOWN_PROG"]);
}

#[test]
fn a_map_over_several_replies_is_dumped_whole() {
    let dir = Scratch::new("big");
    let obj = clang(&dir, "ports", PORTS);
    let sw = PcapSwitch::start("ctl-fp-big");
    let t = sw.target();
    ok(&t, &["load-filter-prog", "9", &obj.display().to_string()]);
    // 6000 entries of 12 bytes: more than one reply (65511 bytes) holds;
    // written in two commands, as one message holds at most 65519 bytes.
    const N: u32 = 6000;
    let mut want: Vec<String> = Vec::new();
    for half in [0..N / 2, N / 2..N] {
        let mut args = vec!["update-map".to_string(), "9".into(), "big".into()];
        for i in half {
            let (k, v) = (format!("{:08x}", i * 7 + 1), le64(u64::from(i) << 8));
            want.push(format!("key={k} value={v}"));
            args.push(k);
            args.push(v);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(&t, &args);
    }
    let dump = ok(&t, &["dump-map", "9", "big"]).stdout;
    let mut got: Vec<String> = dump.lines().map(str::to_string).collect();
    assert_eq!(got.len(), N as usize);
    got.sort();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn a_program_the_verifier_rejects_is_reported_with_its_reason() {
    let dir = Scratch::new("rej");
    let obj = clang(&dir, "unchecked", UNCHECKED);
    let junk = dir.path("junk.o");
    std::fs::write(&junk, b"not an elf object").expect("write");
    let sw = PcapSwitch::start("ctl-fp-rej");
    let t = sw.target();
    let o = fails(
        &t,
        &["load-filter-prog", "5", &obj.display().to_string()],
        &["load-filter-prog 5", "SLICFPC_PROG_REJECTED: ", "rejected", "insn 1"],
    );
    // One line: the request, the error's name, the verifier's text.
    assert_eq!(o.stderr.lines().count(), 1, "{o}");
    fails(&t, &["load-filter-prog", "6", &junk.display().to_string()], &["SLICFPC_PROG_REJECTED"]);
    // Nothing was loaded.
    fails(&t, &["unload-filter-prog", "5"], &["SLICFPC_UNKNOWN_PROG"]);
}

#[test]
fn bad_arguments_are_named_before_connecting() {
    let dir = Scratch::new("args");
    let obj = dir.path("x.o");
    std::fs::write(&obj, b"\x7fELF").expect("write");
    let obj = obj.display().to_string();
    let empty = dir.path("empty.o");
    std::fs::write(&empty, b"").expect("write");
    let empty = empty.display().to_string();
    let missing = dir.path("missing.o").display().to_string();
    // A listener nobody answers on: any connection would queue here.
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.set_nonblocking(true).expect("nonblocking");
    let t = format!("tcp:{}", l.local_addr().expect("addr"));
    let cases: &[(&[&str], &[&str])] = &[
        (&["load-filter-prog", "seven", &obj], &["`seven` is not a program id"]),
        (&["load-filter-prog", "0", &obj], &["program id `0` is reserved"]),
        (&["load-filter-prog", "0xffffffff", &obj], &["`0xffffffff` is reserved"]),
        (&["load-filter-prog", "4294967295", &obj], &["`4294967295` is reserved"]),
        (&["load-filter-prog", "7", &missing], &["cannot read", &missing]),
        (&["load-filter-prog", "7", &empty], &["is empty"]),
        (&["load-filter-prog", "7"], &["expected ID FILE"]),
        (&["unload-filter-prog", "1e3"], &["`1e3` is not a program id"]),
        (&["unload-filter-prog"], &["expected ID"]),
        (&["update-map", "7", "m", "0x123", "00"], &["`0x123` has an odd number of hex digits"]),
        (&["update-map", "7", "m", "0102", "zz"], &["value `zz` is not hex"]),
        (&["update-map", "7", "m", "0102", "aa", "010203", "bb"], &["key `010203` is 3 bytes"]),
        (&["update-map", "7", "m", "0102", "aa", "0103", "bbcc"], &["value `bbcc` is 2 bytes"]),
        (&["update-map", "7", "m", "0102", "aa", "0103"], &["key `0103` has no value"]),
        (&["update-map", "7", "bad-name", "01", "02"], &["`bad-name` is not a map name"]),
        (&["update-map", "x7", "m", "01", "02"], &["`x7` is not a program id"]),
        (&["update-map", "--delete", "7", "m"], &["missing KEY_HEX"]),
        (&["dump-map", "0", "m"], &["`0` is reserved"]),
        (&["dump-map", "7"], &["expected ID MAP"]),
        (&["dump-flows", "--delete"], &["--delete applies only to update-map"]),
    ];
    for (args, wanted) in cases {
        let o = fails(&t, args, wanted);
        assert!(!o.stderr.contains("cannot connect"), "{o}");
    }
    match l.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("a bad command connected to the switch: {other:?}"),
    }
}

/// A rule's `send_maps` reaches a controller connected to the switch: a
/// PACKET_OUT to `TABLE` runs a packet through the rule, and the
/// `MAPS_REPORT` that follows carries the rule's cookie and the map as
/// the program's run left it.
#[test]
fn send_maps_reaches_a_connected_controller() {
    use sluice_ofp::action::Action;
    use sluice_ofp::consts::{port_no, OFP_NO_BUFFER};
    use sluice_ofp::filterprog::FilterMsg;
    use sluice_ofp::message::{Message, PacketOut};

    let dir = Scratch::new("report");
    let obj = clang(&dir, "first_n", FIRST_N);
    let sw = PcapSwitch::start("ctl-fp-report");
    let t = sw.target();
    ok(&t, &["load-filter-prog", "7", &obj.display().to_string()]);
    ok(&t, &["update-map", "7", "budget", "01000000", &le64(100)]);
    ok(
        &t,
        &[
            "add-flow",
            "cookie=0x5eed,priority=10,filter_prog=7,actions=send_maps:7:budget,output:2",
        ],
    );
    let mut c = ofconn::Conn::open(sw.addr());
    c.barrier(0x77);
    let frame = {
        let mut f = vec![0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend_from_slice(&[0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend_from_slice(&[0x13, 0x88, 0, 53, 0, 8, 0, 0]);
        f
    };
    let po = Message::PacketOut(PacketOut {
        buffer_id: OFP_NO_BUFFER,
        in_port: port_no::CONTROLLER,
        actions: vec![Action::Output { port: port_no::TABLE, max_len: 0 }],
        data: frame,
    });
    c.send(&po.encode(0x78));
    // Skip whatever else is unsolicited (at most a few messages).
    let report = (0..20)
        .map(|_| c.recv())
        .find_map(|m| match Message::parse(&m).map(|(_, m)| m) {
            Ok(Message::Experimenter(e)) => match FilterMsg::from_experimenter(&e) {
                Some(Ok(FilterMsg::MapsReport(r))) => Some(r),
                _ => None,
            },
            _ => None,
        })
        .expect("a MAPS_REPORT");
    assert_eq!(
        (report.prog_id, report.table_id, report.cookie, report.more),
        (7, 0, 0x5eed, false)
    );
    assert_eq!(report.maps.len(), 1);
    let b = &report.maps[0];
    assert_eq!(b.name, "budget");
    let entry =
        |k: u32| b.entries.iter().find(|(key, _)| key == &k.to_le_bytes()).map(|e| e.1.clone());
    assert_eq!(entry(0), Some(1u64.to_le_bytes().to_vec()), "the packet's own run counted");
    assert_eq!(entry(1), Some(100u64.to_le_bytes().to_vec()));
}
