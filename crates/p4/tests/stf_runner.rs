//! The STF runner itself, against a test double: a "switch" that sends
//! each packet back out of the port it came in on, unless a `fwd` entry
//! keyed on the ingress port says otherwise, and that floods a packet
//! whose first byte is 0xff to multicast group 1. Whatever the double
//! does is checked by the runner exactly as it would check a P4 program.

use sluice_p4::ast::BigValue;
use sluice_p4::stf::{self, Op, Outcome, Pattern};
use sluice_p4::target::{CtlResult, EntrySpec, KeyMatch, Output, Target};
use std::collections::BTreeMap;

#[derive(Default)]
struct Echo {
    fwd: BTreeMap<u32, u32>,
    default_to: Option<u32>,
    groups: BTreeMap<u32, Vec<(u32, u32)>>,
    entries: Vec<EntrySpec>,
    log: Vec<String>,
}

fn small(v: &BigValue) -> u32 {
    v.to_u128().unwrap() as u32
}

impl Target for Echo {
    fn add_entry(&mut self, e: &EntrySpec) -> CtlResult<u64> {
        self.log.push(format!("add {} {:?}", e.table, e.priority));
        self.entries.push(e.clone());
        let handle = self.entries.len() as u64 - 1;
        if e.table != "fwd" {
            return Ok(handle);
        }
        let [(k, KeyMatch::Exact(v))] = e.keys.as_slice() else {
            return Err("fwd has one exact key".into());
        };
        if k != "port" {
            return Err(format!("no key `{k}` in fwd"));
        }
        if e.action != "to" {
            return Err(format!("no action `{}` in fwd", e.action));
        }
        self.fwd.insert(small(v), small(&e.args[0].1));
        Ok(handle)
    }

    fn set_default(
        &mut self,
        table: &str,
        action: &str,
        args: &[(String, BigValue)],
    ) -> CtlResult<()> {
        self.log.push(format!("setdefault {table} {action}"));
        self.default_to = args.first().map(|a| small(&a.1));
        Ok(())
    }

    fn remove_all(&mut self) -> CtlResult<()> {
        self.log.push("remove_all".into());
        self.fwd.clear();
        self.default_to = None;
        Ok(())
    }

    fn set_multicast_group(&mut self, group: u32, copies: &[(u32, u32)]) -> CtlResult<()> {
        self.groups.insert(group, copies.to_vec());
        Ok(())
    }

    fn packet(&mut self, port: u32, data: &[u8]) -> CtlResult<Vec<Output>> {
        if data.first() == Some(&0xee) {
            return Err("cannot parse this".into());
        }
        if data.first() == Some(&0xff) {
            let copies = self.groups.get(&1).cloned().unwrap_or_default();
            return Ok(copies
                .iter()
                .map(|&(rid, p)| {
                    let mut d = data.to_vec();
                    d.push(rid as u8);
                    Output { port: p, data: d }
                })
                .collect());
        }
        let to = self.fwd.get(&port).copied().or(self.default_to).unwrap_or(port);
        Ok(vec![Output { port: to, data: data.to_vec() }])
    }
}

fn run(script: &str) -> (stf::Report, Echo) {
    let mut t = Echo::default();
    let r = stf::run(&mut t, script);
    (r, t)
}

fn assert_pass(script: &str) {
    let (r, _) = run(script);
    assert!(r.passed(), "{r}");
}

#[test]
fn echo_passes() {
    assert_pass("# a comment\npacket 0 0001 0203\nexpect 0 00010203\n");
}

#[test]
fn expect_before_packet_is_fine() {
    assert_pass("expect 3 0a0b\n\npacket 3 0a0b\n");
}

#[test]
fn expectation_is_a_prefix_unless_dollar() {
    assert_pass("packet 0 0a0b0c0d\nexpect 0 0a0b\n");
    let (r, _) = run("packet 0 0a0b0c0d\nexpect 0 0a0b $\n");
    assert_eq!(r.outcome(), Outcome::Fail);
    assert_eq!(r.failures[0].line, 2);
    assert!(r.failures[0].message.contains("too long: 4 bytes, expected exactly 2"), "{r}");
    assert_pass("packet 0 0a0b\nexpect 0 0a0b$\n");
}

#[test]
fn too_short() {
    let (r, _) = run("packet 0 0a0b\nexpect 0 0a0b0c\n");
    assert!(r.failures[0].message.contains("too short: 2 bytes, expected at least 3"), "{r}");
}

#[test]
fn star_nibbles() {
    assert_pass("packet 0 0a0b0c0d\nexpect 0 0* *b ** 0d $\n");
    let (r, _) = run("packet 0 0a0b0c0d\nexpect 0 0* *c ** 0d $\n");
    let f = &r.failures[0];
    assert_eq!(f.line, 2);
    assert!(f.message.contains("port 0: packet 1 differs at byte 1"), "{r}");
    assert!(f.message.contains("expected: 0* *c ** 0d $"), "{r}");
    assert!(f.message.contains("got:      0a 0b 0c 0d  (from `packet` at line 1)"), "{r}");
}

#[test]
fn order_per_port_matters() {
    let script = "packet 1 01\npacket 1 02\nexpect 1 02\nexpect 1 01\n";
    let (r, _) = run(script);
    assert_eq!(r.outcome(), Outcome::Fail);
    assert_eq!(r.failures.len(), 2, "{r}");
    // But the order between ports does not.
    assert_pass("packet 1 01\npacket 2 02\nexpect 2 02\nexpect 1 01\n");
}

#[test]
fn unexpected_packet_fails() {
    let (r, _) = run("packet 1 01\npacket 1 02\nexpect 1 01\n");
    assert_eq!(r.failures.len(), 1, "{r}");
    assert_eq!(r.failures[0].line, 2);
    assert!(r.failures[0].message.contains("port 1: unexpected packet 2 (1 expected on port 1)"));
    assert!(r.failures[0].message.contains("got:      02"));
}

#[test]
fn missing_packet_fails() {
    let (r, _) = run("add fwd port:1 to(port:9)\npacket 1 01\nexpect 1 01\n");
    // The packet went to port 9, which no `expect` names: that fails too
    // (p4c's runner would not see it at all).
    assert_eq!(r.failures.len(), 2, "{r}");
    assert_eq!(r.failures[0].line, 2);
    assert!(r.failures[0].message.contains("1 unexpected packet(s) to port 9"), "{r}");
    assert_eq!(r.failures[1].line, 3);
    assert!(r.failures[1].message.contains("port 1: expected packet 1 never came"), "{r}");
}

#[test]
fn expect_without_data_allows_anything() {
    assert_pass("packet 4 01\npacket 4 02\nexpect 4\n");
}

#[test]
fn tables_and_defaults_reach_the_target() {
    let script = "\
add fwd port:1 to(port:2)
packet 1 aa
expect 2 aa
setdefault fwd to(port:5)
packet 3 bb
expect 5 bb
remove all
packet 1 cc
expect 1 cc
wait
no_packet
";
    let (r, t) = run(script);
    assert!(r.passed(), "{r}");
    assert_eq!(t.log, ["add fwd None", "setdefault fwd to", "remove_all"]);
    assert_eq!((r.packets_in, r.packets_out), (3, 3));
}

#[test]
fn control_plane_error_stops_the_script() {
    let (r, t) = run("add fwd port:1 nope()\nadd fwd port:2 to(port:3)\npacket 0 00\n");
    assert_eq!(r.outcome(), Outcome::Fail);
    assert_eq!(r.failures[0].line, 1);
    assert!(r.failures[0].message.contains("add to `fwd`: no action `nope` in fwd"), "{r}");
    assert_eq!(t.entries.len(), 1);
}

#[test]
fn packet_error_is_a_failure() {
    let (r, _) = run("packet 0 ee\n");
    assert_eq!(r.failures[0].line, 1);
    assert!(r.failures[0].message.contains("packet on port 0: cannot parse this"));
}

#[test]
fn multicast_nodes_and_groups() {
    let script = "\
mc_mgrp_create 1
mc_node_create 400 6
mc_node_create 401 7 8
mc_node_associate 1 0
mc_node_associate 1 1
packet 0 ff
expect 6 ff 90
expect 7 ff 91 $
expect 8 ff91
";
    let (r, t) = run(script);
    assert!(r.passed(), "{r}");
    assert_eq!(t.groups[&1], [(400, 6), (401, 7), (401, 8)]);
    let (r, _) = run("mc_node_create 1 2\nmc_node_associate 5 0\n");
    assert!(r.failures[0].message.contains("no group 5"), "{r}");
}

#[test]
fn unsupported_commands_are_not_failures() {
    let (r, _) = run("register_write r 0 1\npacket 0 01\nexpect 0 01\n");
    assert_eq!(r.outcome(), Outcome::Unsupported);
    assert_eq!(r.summary(), "line 1: unsupported STF command `register_write`");
    // Reads whose answers p4c never checks do nothing.
    assert_pass("counter_read c 0\nregister_read r 1\npacket 0 01\nexpect 0 01\n");
}

#[test]
fn parse_add_with_priority_masks_and_prefixes() {
    let cmds = stf::parse(
        "ADD test2 100 data.f2:0x04040404 c4_6(val4:0x4040, val5:0x5050, port:2)\n\
         add tab1 dstAddr:0xa1a2a3a4a5a6 act(port:2) = A\n\
         add t 0 extra$0.h:0x25** ip:10/8 b:0b1*0* act()\n",
    )
    .unwrap();
    let Op::Add { table, priority, keys, action } = &cmds[0].op else { panic!("{cmds:?}") };
    assert_eq!((table.as_str(), *priority), ("test2", Some(100)));
    assert_eq!(keys[0].0, "data.f2");
    assert_eq!(keys[0].1, KeyMatch::Exact(BigValue::from_u128(0x04040404)));
    assert_eq!(action.name, "c4_6");
    assert_eq!(action.args.len(), 3);
    assert_eq!(action.args[2], ("port".into(), BigValue::from_u128(2)));
    let Op::Add { priority, .. } = &cmds[1].op else { panic!() };
    assert_eq!(*priority, None);
    let Op::Add { priority, keys, .. } = &cmds[2].op else { panic!() };
    assert_eq!(*priority, Some(0));
    assert_eq!(keys[0].0, "extra[0].h");
    let KeyMatch::Ternary { value, mask } = &keys[0].1 else { panic!("{keys:?}") };
    assert_eq!(*value, BigValue::from_u128(0x2500));
    assert_eq!(mask.0[0], !0xff);
    assert_eq!(keys[1].1, KeyMatch::Lpm { value: BigValue::from_u128(10), prefix_len: 8 });
    let KeyMatch::Ternary { value, mask } = &keys[2].1 else { panic!() };
    assert_eq!(*value, BigValue::from_u128(0b1000));
    assert_eq!(mask.0[0], !0b0101);
}

#[test]
fn parse_packets_and_expectations() {
    let cmds = stf::parse("packet 2 0A0b 0c\nexpect 3 0a ** 0*$\nexpect 7\n").unwrap();
    assert_eq!(cmds[0].op, Op::Packet { port: 2, data: vec![0x0a, 0x0b, 0x0c] });
    assert_eq!(
        cmds[1].op,
        Op::Expect {
            port: 3,
            pattern: Some(Pattern {
                nibbles: vec![Some(0), Some(0xa), None, None, Some(0), None],
                exact: true
            })
        }
    );
    assert_eq!(cmds[2].op, Op::Expect { port: 7, pattern: None });
    assert_eq!(cmds[2].line, 3);
}

#[test]
fn syntax_errors_have_line_numbers() {
    let cases = [
        ("\n\npacket 0 0a0\n", 3, "odd number of hex digits"),
        ("packet x 00\n", 1, "port `x` is not a decimal number"),
        ("# c\nexpect 0 00 $ 00\n", 2, "`$` must be the last"),
        ("frobnicate 1\n", 1, "unknown STF command `frobnicate`"),
        ("add t k:1 a(p:1\n", 1, "missing `)`"),
        ("add t k:0xzz a()\n", 1, "key `k`"),
        ("add t k:1\n", 1, "missing the action call"),
        ("setdefault t a() extra\n", 1, "unexpected `extra`"),
        ("remove 3\n", 1, "only `remove all`"),
        ("packet 0 0g\n", 1, "`g` in packet data"),
    ];
    for (text, line, msg) in cases {
        let e = stf::parse(text).unwrap_err();
        assert_eq!(e.line, line, "{text:?}: {e}");
        assert!(e.message.contains(msg), "{text:?}: {e}");
        // `run` reports the same error as a failure.
        let (r, _) = run(text);
        assert_eq!(r.outcome(), Outcome::Fail);
        assert_eq!(r.failures[0].line, line);
    }
}

#[test]
fn corpus_like_commands_parse() {
    let cmds = stf::parse(
        "add ipv6_tbl mcast_key:0x1 ingress.set_mcast_grp(mcast_grp:1113, port:0x2)\n\
         add t1 ethernet.srcAddr.slice:0x1f dstAddr_lsbs:0x010101010101 ingressImpl.foo(out_port:3)\n\
         add c.t e:0 c.a()\n\
         check_counter cntDum(10) packets == 2\n\
         mirroring_add 5 3\n",
    )
    .unwrap();
    assert_eq!(cmds.len(), 5);
    assert!(matches!(&cmds[3].op, Op::Unsupported { name } if name == "check_counter"));
}

/// Every script of p4c's corpus parses (when the corpus is there: CI has
/// it at `../shared/p4c-stf`, or set `SLUICE_P4C_STF` to its directory).
#[test]
fn corpus_scripts_parse() {
    let dir =
        std::env::var_os("SLUICE_P4C_STF").map(std::path::PathBuf::from).unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/p4c-stf")
        });
    let dir = if dir.join("samples").is_dir() { dir.join("samples") } else { dir };
    let Ok(rd) = std::fs::read_dir(&dir) else {
        eprintln!("no STF corpus at {}: skipped", dir.display());
        return;
    };
    let mut n = 0;
    for e in rd.flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "stf") {
            let text = std::fs::read_to_string(&p).unwrap();
            if let Err(e) = stf::parse(&text) {
                panic!("{}: {e}", p.display());
            }
            n += 1;
        }
    }
    eprintln!("{n} scripts parsed");
}
