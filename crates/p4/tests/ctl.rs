//! simple_switch_CLI commands (`sluice_p4::ctl`) against the reference
//! interpreter running a program with exact, ternary and range keys, a
//! counter and a register: each command changes what packets do, and
//! each mistake is refused with the token named.

use sluice_p4::ctl::execute;
use sluice_p4::interp::Interp;
use sluice_p4::parse;
use sluice_p4::target::Manage;

const PROG: &str = r#"
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers { eth_t eth; }
struct meta_t { }
parser P(packet_in pkt, out headers h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.eth); transition accept; }
}
control VC(inout headers h, inout meta_t m) { apply { } }
control I(inout headers h, inout meta_t m, inout standard_metadata_t sm) {
    counter(4, CounterType.packets_and_bytes) hits;
    register<bit<32>>(4) last;
    action fwd(bit<9> port) {
        sm.egress_spec = port;
        hits.count(0);
        last.write(0, (bit<32>)h.eth.type);
    }
    action drop() { mark_to_drop(sm); }
    table by_dst {
        key = { h.eth.dst: exact; }
        actions = { fwd; drop; }
        default_action = drop();
    }
    table by_type {
        key = { h.eth.type: ternary; h.eth.src: range; }
        actions = { fwd; drop; }
        default_action = drop();
    }
    apply {
        if (!by_dst.apply().hit) {
            by_type.apply();
        }
    }
}
control E(inout headers h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers h) { apply { pkt.emit(h.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"#;

fn frame(dst: u8, src: u8, ty: u16) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, dst, 0, 0, 0, 0, 0, src];
    f.extend_from_slice(&ty.to_be_bytes());
    f.extend_from_slice(&[0xab; 50]);
    f
}

fn ports(sw: &mut dyn Manage, f: &[u8]) -> Vec<u32> {
    sw.packet(1, f).expect("packet").iter().map(|o| o.port).collect()
}

fn ok(sw: &mut dyn Manage, line: &str) -> String {
    execute(sw, line).unwrap_or_else(|e| panic!("{line}: {e}"))
}

fn refused(sw: &mut dyn Manage, line: &str, wanted: &[&str]) {
    let e = execute(sw, line).expect_err(line);
    for w in wanted {
        assert!(e.contains(w), "{line}: {e:?} should say {w:?}");
    }
}

#[test]
fn commands_change_forwarding_and_mistakes_are_named() {
    let loaded = parse::load_str("ctl.p4", PROG).unwrap_or_else(|e| panic!("{}", e.render()));
    let mut sw = Interp::new(&loaded).unwrap_or_else(|d| panic!("{}", loaded.sources.render(&d)));
    commands_on(&mut sw);
}

/// The same commands on the program compiled into the core: its counter
/// and register cells are the engine's own.
#[test]
fn commands_change_the_compiled_program_alike() {
    let loaded = parse::load_str("ctl.p4", PROG).unwrap_or_else(|e| panic!("{}", e.render()));
    let mut sw = sluice_p4::lower::engine::Compiled::new(&loaded)
        .unwrap_or_else(|d| panic!("{}", loaded.sources.render(&d)));
    commands_on(&mut sw);
}

fn commands_on(sw: &mut dyn Manage) {
    assert_eq!(ports(sw, &frame(2, 9, 0x88b5)), Vec::<u32>::new(), "default drop");
    assert_eq!(
        ok(sw, "table_add by_dst fwd 00:00:00:00:00:02 => 2"),
        "Entry has been added with handle 0\n"
    );
    assert_eq!(ports(sw, &frame(2, 9, 0x88b5)), [2]);

    // Ternary + range, bmv2 priorities: the smaller number wins.
    ok(sw, "table_add by_type fwd 0x88b5&&&0xffff 0->0xffffffffffff => 3 10");
    assert_eq!(ports(sw, &frame(5, 9, 0x88b5)), [3]);
    let h = ok(sw, "table_add I.by_type drop 0x8800&&&0xff00 * => 1");
    assert_eq!(h, "Entry has been added with handle 1\n");
    assert_eq!(ports(sw, &frame(5, 9, 0x88b5)), Vec::<u32>::new(), "priority 1 beats 10");
    let dump = ok(sw, "table_dump by_type");
    assert!(dump.contains("handle 0: h.eth.type=0x88b5&&&0xffff h.eth.src=0x0->0xffffffffffff priority 10 => I.fwd(port=0x3)")
        || dump.contains("priority 10"), "{dump}");
    assert!(
        dump.contains("handle 1:") && dump.contains("priority 1 ") && dump.contains("h.eth.src=*"),
        "{dump}"
    );
    assert!(dump.contains("default: "), "{dump}");
    ok(sw, "table_delete by_type 1");
    assert_eq!(ports(sw, &frame(5, 9, 0x88b5)), [3]);
    assert_eq!(ok(sw, "table_num_entries by_type"), "1\n");

    // The counter and register the action touched.
    assert_eq!(ports(sw, &frame(2, 9, 0x0800)), [2]);
    let c = ok(sw, "counter_read hits 0");
    assert_eq!(c, "I.hits[0]= packets=4 bytes=256\n", "four fwd runs of 64 bytes");
    assert!(ok(sw, "register_read last 0").ends_with("[0]= 0x800\n"));
    ok(sw, "register_write last 3 0x1234");
    let all = ok(sw, "register_read last");
    assert!(all.ends_with("= 0x800, 0x0, 0x0, 0x1234\n"), "{all}");

    // Default action, clear.
    ok(sw, "table_set_default by_type fwd 7");
    ok(sw, "table_clear by_type");
    assert_eq!(ports(sw, &frame(5, 9, 0x88b5)), [7]);
    assert_eq!(sw.dump("by_type").unwrap().0.len(), 0);

    // Mistakes, each named.
    refused(sw, "table_add by_dst fwd zz => 2", &["table_add", "h.eth.dst", "`zz`"]);
    refused(sw, "table_add by_dst fwd 2 => 512", &["`512` does not fit in 9 bits"]);
    refused(sw, "table_add by_dst fwd 2 3 => 5", &["1 key element", "got 2"]);
    refused(sw, "table_add by_type fwd 0x88b5&&&0xffff * => 3", &["priority"]);
    refused(sw, "table_add by_type fwd 0x88b5 * => 3 1", &["VALUE&&&MASK"]);
    refused(sw, "table_add nosuch fwd 1 => 2", &["nosuch", "I.by_dst, I.by_type"]);
    refused(sw, "table_add by_dst teleport 1 => 2", &["teleport"]);
    refused(sw, "table_delete by_dst 99", &["handle 99"]);
    refused(sw, "counter_read hits 4", &["index 4", "4 cells"]);
    refused(sw, "register_write last 0 0x1_0000_0000", &["does not fit in 32 bits"]);
    refused(sw, "frobnicate", &["unknown command `frobnicate`", "table_add"]);
}

/// An exact table holds one entry per key, however it was added.
#[test]
fn a_key_is_added_once() {
    let loaded = parse::load_str("ctl.p4", PROG).unwrap_or_else(|e| panic!("{}", e.render()));
    let mut sw = Interp::new(&loaded).unwrap_or_else(|d| panic!("{}", loaded.sources.render(&d)));
    ok(&mut sw, "table_add by_dst fwd 00:00:00:00:00:02 => 2");
    refused(&mut sw, "table_add by_dst fwd 00:00:00:00:00:02 => 3", &["already has an entry"]);
    ok(&mut sw, "table_add by_type fwd 0x88b5&&&0xffff * => 3 10");
    ok(&mut sw, "table_add by_type fwd 0x88b5&&&0xffff * => 3 11");
    refused(&mut sw, "table_add by_type drop 0x88b5&&&0xffff * => 10", &["already has an entry"]);
    assert_eq!(sw.dump("by_dst").unwrap().0.len(), 1);
    // A deleted key is free again; the others stay taken.
    let h = sw.dump("by_type").unwrap().0[0].handle;
    ok(&mut sw, &format!("table_delete by_type {h}"));
    ok(&mut sw, "table_add by_type drop 0x88b5&&&0xffff * => 10");
    refused(&mut sw, "table_add by_type drop 0x88b5&&&0xffff * => 11", &["already has an entry"]);
    let h = sw.dump("by_dst").unwrap().0[0].handle;
    ok(&mut sw, &format!("table_delete by_dst {h}"));
    ok(&mut sw, "table_add by_dst fwd 00:00:00:00:00:02 => 3");
    // After a reset every key is free.
    ok(&mut sw, "table_clear by_dst");
    ok(&mut sw, "table_add by_dst fwd 00:00:00:00:00:02 => 4");
}
