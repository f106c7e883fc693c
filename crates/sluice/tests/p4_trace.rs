//! `sluice p4 trace` as a user runs it, on the example programs in
//! `examples/p4`: a routed and an unrouted IPv4 packet described by
//! header fields, multicast flooding from hex, and the refusals.

use std::path::{Path, PathBuf};
use std::process::Command;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn example(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/p4").join(name);
    p.to_string_lossy().into_owned()
}

/// A file in a temp dir of this test process, removed with it.
struct Temp(PathBuf);

impl Temp {
    fn new(name: &str, text: &str) -> Temp {
        let p = std::env::temp_dir().join(format!("sluice-p4-trace-{}-{name}", std::process::id()));
        std::fs::write(&p, text).expect("write temp file");
        Temp(p)
    }

    fn path(&self) -> String {
        self.0.to_string_lossy().into_owned()
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn sluice(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(SLUICE).args(args).output().expect("run sluice");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const ROUTES: &str = "# a route to 10.0.2.0/24 via port 2\n\
    table_add routes forward 10.0.2.0/24 => 02:00:00:00:bb:02 02:00:00:00:00:02 2\n";

const FLOW: &str = "eth.dst=02:00:00:00:00:01,eth.src=02:00:00:00:aa:01,eth.ethertype=0x0800,\
    ip.version=4,ip.ihl=5,ip.total_len=20,ip.ttl=64,ip.protocol=17,ip.src=10.0.1.1,\
    ip.dst=10.0.2.2";

fn lines(out: &str) -> Vec<&str> {
    out.lines().collect()
}

/// `want` lines appear in `out` in this order (each exactly, spaces
/// included).
fn in_order(out: &str, want: &[&str]) {
    let have = lines(out);
    let mut at = 0;
    for w in want {
        match have[at..].iter().position(|l| l == w) {
            Some(i) => at += i + 1,
            None => panic!("`{w}` not found (in order) in:\n{out}"),
        }
    }
}

#[test]
fn routed_flow_shows_the_hit_the_action_and_the_ttl_decremented() {
    let cmds = Temp::new("routes", ROUTES);
    let router = example("router.p4");
    let (code, out, err) = sluice(&[
        "p4",
        "trace",
        &router,
        "--commands",
        &cmds.path(),
        "--port",
        "1",
        "--flow",
        FLOW,
    ]);
    assert_eq!(code, 0, "{err}\n{out}");
    in_order(
        &out,
        &[
            "packet: port 1, 34 bytes: \
             02000000000102000000aa0108004500001400000000401163d70a0001010a000202",
            "parser RouterParser",
            "    state start",
            "        extract hdr.eth (14 bytes)",
            "        select (0x0800) -> ip",
            "    state ip",
            "        extract hdr.ip (20 bytes)",
            "ingress RouterIngress",
            "    table RouterIngress.routes: hdr.ip.dst=0x0a000202",
            "        hit entry 0: hdr.ip.dst=0x0a000200/24",
            "        action forward(next_hop=0x02000000bb02, port_mac=0x020000000002, port=2)",
            "    end of ingress: egress_spec=2 mcast_grp=0",
            "traffic manager: unicast to port 2",
            "egress RouterEgress: port 2",
            "    output to port 2: 34 bytes",
            "outputs: 2",
        ],
    );
    // TTL 64 -> 63 (byte 22), MACs rewritten, checksum recomputed.
    let frame = out
        .lines()
        .find_map(|l| l.strip_prefix("    port 2: "))
        .unwrap_or_else(|| panic!("no frame in:\n{out}"));
    assert_eq!(frame, "02000000bb02020000000002080045000014000000003f1164d70a0001010a000202");
    assert_eq!(&frame[44..46], "3f");
}

#[test]
fn unrouted_flow_misses_and_drops() {
    let cmds = Temp::new("routes-miss", ROUTES);
    let router = example("router.p4");
    let flow = FLOW.replace("10.0.2.2", "192.168.0.1");
    let (code, out, err) = sluice(&[
        "p4",
        "trace",
        &router,
        "--commands",
        &cmds.path(),
        "--port",
        "1",
        "--flow",
        &flow,
    ]);
    assert_eq!(code, 0, "{err}\n{out}");
    in_order(
        &out,
        &[
            "    table RouterIngress.routes: hdr.ip.dst=0xc0a80001",
            "        miss: default action",
            "        action drop()",
            "            mark_to_drop: egress_spec = 511",
            "    end of ingress: egress_spec=511 (drop) mcast_grp=0",
            "traffic manager: drop",
            "outputs: drop",
        ],
    );
    assert!(!out.contains("output to port"), "{out}");
}

#[test]
fn hex_packet_floods_through_the_l2_switch_multicast_group() {
    let cmds = Temp::new("mc", "mc_mgrp_create 1\nmc_node_create 0 1 2 3\nmc_node_associate 1 0\n");
    let l2 = example("l2switch.p4");
    let frame = "02000000010202000000010188B56F6E6520746F2074776F";
    let (code, out, err) =
        sluice(&["p4", "trace", &l2, "--commands", &cmds.path(), "--port", "1", "--packet", frame]);
    assert_eq!(code, 0, "{err}\n{out}");
    in_order(
        &out,
        &[
            "    table L2Ingress.learned: hdr.eth.src=0x020000000101",
            "        action learn()",
            "            digest to receiver 1: {mac=0x020000000101, port=1}",
            "    table L2Ingress.forwarding: hdr.eth.dst=0x020000000102",
            "        miss: default action",
            "        action flood()",
            "    end of ingress: egress_spec=0 mcast_grp=1",
            "traffic manager: multicast group 1 -> port 1 (rid 0), port 2 (rid 0), port 3 (rid 0)",
            "egress L2Egress: port 1, rid 0",
            "    dropped in egress (egress_spec = 511): no copy to port 1",
            "egress L2Egress: port 2, rid 0",
            "    output to port 2: 24 bytes",
            "egress L2Egress: port 3, rid 0",
            "outputs: 2,3",
        ],
    );
    let lower = frame.to_ascii_lowercase();
    assert!(out.contains(&format!("    port 2: {lower}")), "{out}");
    assert!(out.contains(&format!("    port 3: {lower}")), "{out}");
}

#[test]
fn refusals_name_the_token_and_exit_non_zero() {
    let router = example("router.p4");
    let cases: &[(&[&str], &[&str])] = &[
        (&["--flow", "ipv4.ttl=64"], &["unknown header `ipv4`", "eth, ip"]),
        (&["--flow", "ip.tll=64"], &["no field `tll`", "ttl"]),
        (&["--flow", "ip.ttl=300"], &["ip.ttl", "`300` does not fit in 8 bits"]),
        (&["--packet", "0x12g4"], &["--packet", "`0x12g4` is not hex"]),
    ];
    for (args, want) in cases {
        let mut a = vec!["p4", "trace", &router, "--port", "1"];
        a.extend_from_slice(args);
        let (code, out, err) = sluice(&a);
        assert_eq!(code, 1, "{args:?}: {out}{err}");
        assert!(!err.contains("panicked"), "{err}");
        for w in *want {
            assert!(err.contains(w), "{args:?}: `{w}` not in: {err}");
        }
    }
    // A bad command names its line.
    let cmds = Temp::new("bad", "\n# two lines down\ntable_add routes nope 10.0.0.0/8 =>\n");
    let (code, _, err) = sluice(&[
        "p4",
        "trace",
        &router,
        "--commands",
        &cmds.path(),
        "--port",
        "1",
        "--packet",
        "00",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(":3: table_add") && err.contains("`nope`"), "{err}");
}
