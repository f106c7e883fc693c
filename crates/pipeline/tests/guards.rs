//! Rules with guards (`sluice_core::guard`) through every lookup structure
//! and cache mode, against the reference.
//!
//! Random flows in two tables carry up to two guards each, of two kinds: a
//! deterministic one (a function of the frame's bytes) and a stateful one
//! (a counter, as a filter program's map would keep: it accepts every
//! `period`-th call). Every guard call is logged, in order, per run. Random
//! packets, flow adds and deletes then go through the reference (linear
//! scan, no cache) and through the classifier, the compiled datapath, the
//! daemon's setting and each cache mode, one packet at a time and in
//! bursts. Each run must transmit the same frames, send the same
//! packet-ins, count the same, and call the same guards in the same order
//! (the guard semantics in ARCHITECTURE.md: stateful guards make any
//! difference in order or in the number of calls visible).

mod common;

use common::{add_ports, udp_frame};
use proptest::prelude::*;
use sluice_core::guard::{Guard, GuardInput, GuardSet};
use sluice_ofp::action::Action;
use sluice_ofp::consts::{port_no, OFP_NO_BUFFER};
use sluice_ofp::instruction::Instruction;
use sluice_ofp::message::{flow_mod_command as fc, FlowMod, Message};
use sluice_ofp::oxm::{FieldBytes, FieldId, Match, Oxm};
use sluice_pipeline::{CacheMode, Config, Datapath, Pipeline};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

const PORTS: [u32; 3] = [1, 2, 3];

/// Every guard call of one run: (guard id, result).
type Log = Arc<Mutex<Vec<(u64, bool)>>>;

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Accepts when a hash of the frame and the salt is not 0 mod 3.
    Frame(u8),
    /// Accepts every `period`-th call (its counter is its state).
    Every(u64),
}

#[derive(Debug)]
struct TestGuard {
    id: u64,
    kind: Kind,
    calls: AtomicU64,
    log: Log,
}

impl Guard for TestGuard {
    fn id(&self) -> u64 {
        self.id
    }
    fn eval(&self, input: &GuardInput<'_>) -> bool {
        let n = self.calls.fetch_add(1, Relaxed);
        let r = match self.kind {
            Kind::Frame(salt) => {
                let h = input.frame.iter().fold(u32::from(salt) ^ input.in_port, |a, &b| {
                    a.wrapping_mul(31) ^ u32::from(b)
                });
                h % 3 != 0
            }
            Kind::Every(period) => n % period == 0,
        };
        self.log.lock().unwrap().push((self.id, r));
        r
    }
}

#[derive(Clone, Debug)]
struct FlowSpec {
    table: u8,
    priority: u16,
    in_port: Option<u32>,
    /// (ip_proto, udp dst) or an IPv4 destination host.
    udp_dst: Option<u16>,
    ip_dst: Option<u8>,
    /// Instructions: 0 output, 1 goto 1, 2 set ipv4_dst then goto 1 (an
    /// edit before the next table's guards), 3 controller, 4 write output
    /// then goto 1.
    action: u8,
    out: u32,
    guards: Vec<Kind>,
}

#[derive(Clone, Debug)]
enum Op {
    Add(FlowSpec),
    Delete { table: u8, priority: u16 },
    Packets { in_port: u32, frames: Vec<(u8, u16, u8)> },
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![(0u8..4).prop_map(Kind::Frame), (1u64..4).prop_map(Kind::Every)]
}

fn flow_spec() -> impl Strategy<Value = FlowSpec> {
    (
        0u8..2,
        1u16..4,
        prop::option::of(prop::sample::select(PORTS.to_vec())),
        prop::option::of(prop::sample::select(vec![53u16, 80])),
        prop::option::of(1u8..4),
        0u8..5,
        prop::sample::select(PORTS.to_vec()),
        prop::collection::vec(kind(), 0..3),
    )
        .prop_map(|(table, priority, in_port, udp_dst, ip_dst, action, out, guards)| {
            FlowSpec { table, priority, in_port, udp_dst, ip_dst, action, out, guards }
        })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => flow_spec().prop_map(Op::Add),
        1 => (0u8..2, 1u16..4).prop_map(|(table, priority)| Op::Delete { table, priority }),
        6 => (
            prop::sample::select(PORTS.to_vec()),
            prop::collection::vec((1u8..4, prop::sample::select(vec![53u16, 80, 443]), 0u8..4), 1..6),
        )
            .prop_map(|(in_port, frames)| Op::Packets { in_port, frames }),
    ]
}

fn basic(field: FieldId, v: u128) -> Oxm {
    Oxm::Basic { field, value: FieldBytes::from_u128(v, field.len()), mask: None }
}

fn flow_mod(s: &FlowSpec) -> FlowMod {
    let mut oxms = Vec::new();
    if let Some(p) = s.in_port {
        oxms.push(basic(FieldId::InPort, p.into()));
    }
    if s.udp_dst.is_some() || s.ip_dst.is_some() {
        oxms.push(basic(FieldId::EthType, 0x0800));
    }
    if let Some(d) = s.udp_dst {
        oxms.push(basic(FieldId::IpProto, 17));
        oxms.push(basic(FieldId::UdpDst, d.into()));
    }
    if let Some(h) = s.ip_dst {
        oxms.push(basic(FieldId::Ipv4Dst, u128::from(u32::from_be_bytes([10, 0, 0, h]))));
    }
    let out = |port| Action::Output { port, max_len: 128 };
    // Table 1 is the last: "go on" there means output.
    let goto = |_| {
        if s.table == 0 {
            vec![Instruction::GotoTable(1)]
        } else {
            vec![Instruction::ApplyActions(vec![out(s.out)])]
        }
    };
    let instructions = match s.action {
        0 => vec![Instruction::ApplyActions(vec![out(s.out)])],
        1 => goto(()),
        2 => {
            let mut v = vec![Instruction::ApplyActions(vec![Action::SetField(basic(
                FieldId::Ipv4Dst,
                u128::from(u32::from_be_bytes([10, 0, 0, 3])),
            ))])];
            v.extend(goto(()));
            v
        }
        3 => vec![Instruction::ApplyActions(vec![out(port_no::CONTROLLER)])],
        _ => {
            let mut v = vec![Instruction::WriteActions(vec![out(s.out)])];
            v.extend(goto(()));
            v
        }
    };
    // A set-field of ipv4_dst needs eth_type=0x0800 in the match.
    let mut m = Match { oxms };
    if s.action == 2 && s.udp_dst.is_none() && s.ip_dst.is_none() {
        m.oxms.push(basic(FieldId::EthType, 0x0800));
    }
    FlowMod {
        table_id: s.table,
        command: fc::ADD,
        priority: s.priority,
        buffer_id: OFP_NO_BUFFER,
        out_port: port_no::ANY,
        out_group: sluice_ofp::consts::group_id::ANY,
        r#match: m,
        instructions,
        ..FlowMod::default()
    }
}

/// One run's pipeline, its guard ids' state and its log.
struct Run {
    p: Pipeline,
    log: Log,
    next_id: u64,
}

impl Run {
    fn new(cfg: Config) -> Run {
        let mut p = Pipeline::new(Config { n_tables: 2, n_buffers: 0, ..cfg });
        add_ports(&mut p, &PORTS);
        // Table-miss: table 0 goes on to table 1, table 1 drops.
        let fm = FlowMod {
            table_id: 0,
            command: fc::ADD,
            buffer_id: OFP_NO_BUFFER,
            out_port: port_no::ANY,
            out_group: sluice_ofp::consts::group_id::ANY,
            instructions: vec![Instruction::GotoTable(1)],
            ..FlowMod::default()
        };
        p.flow_mod(&fm).unwrap();
        Run { p, log: Log::default(), next_id: 1 }
    }

    fn guards(&mut self, kinds: &[Kind]) -> GuardSet {
        GuardSet::new(
            kinds
                .iter()
                .map(|&kind| {
                    let id = self.next_id;
                    self.next_id += 1;
                    Arc::new(TestGuard {
                        id,
                        kind,
                        calls: AtomicU64::new(0),
                        log: self.log.clone(),
                    }) as Arc<dyn Guard>
                })
                .collect(),
        )
    }
}

#[derive(Debug, PartialEq)]
enum Seen {
    Result(bool),
    Tx(Vec<(u32, Vec<u8>)>),
    Async(Vec<Message>),
}

fn frame(host: u8, dport: u16, payload: u8) -> Vec<u8> {
    udp_frame(9, 1, [10, 0, 0, 9], [10, 0, 0, host], 1000, dport, &[payload; 6])
}

/// What one run showed: per op, the guard calls, the entries' packet
/// counts at the end, and the run itself.
type Outcome = (Vec<Seen>, Vec<(u64, bool)>, Vec<u64>, Run);

/// Runs `ops` on one configuration; `burst` sends each op's frames as one
/// burst instead of one by one.
fn run(ops: &[Op], cfg: Config, burst: bool) -> Outcome {
    let mut r = Run::new(cfg);
    let mut seen = Vec::new();
    for op in ops {
        match op {
            Op::Add(s) => {
                let g = r.guards(&s.guards);
                seen.push(Seen::Result(r.p.flow_mod_guarded(&flow_mod(s), g).is_ok()));
            }
            Op::Delete { table, priority } => {
                let fm = FlowMod {
                    table_id: *table,
                    command: fc::DELETE,
                    priority: *priority,
                    out_port: port_no::ANY,
                    out_group: sluice_ofp::consts::group_id::ANY,
                    ..FlowMod::default()
                };
                seen.push(Seen::Result(r.p.flow_mod(&fm).is_ok()));
            }
            Op::Packets { in_port, frames } => {
                let frames: Vec<Vec<u8>> = frames.iter().map(|&(h, d, x)| frame(h, d, x)).collect();
                let mut tx = Vec::new();
                let mut sink = |port: u32, _q: Option<u32>, f: &[u8]| tx.push((port, f.to_vec()));
                if burst {
                    let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
                    r.p.process_burst(*in_port, &refs, &mut sink);
                } else {
                    for f in &frames {
                        r.p.process(*in_port, f, &mut sink);
                    }
                }
                seen.push(Seen::Tx(tx));
                seen.push(Seen::Async(r.p.take_async()));
            }
        }
    }
    let counts =
        r.p.tables().iter().flat_map(|t| t.entries().iter().map(|e| e.packet_count())).collect();
    let log = r.log.lock().unwrap().clone();
    (seen, log, counts, r)
}

fn configs() -> Vec<(&'static str, Config, bool)> {
    let c = |datapath, cache| Config { datapath, cache, ..Config::default() };
    let daemon = || Config { compiler: Some(common::compiler()), ..Config::daemon() };
    vec![
        ("classifier/off", c(Datapath::Classifier, CacheMode::Off), false),
        ("classifier/megaflow", c(Datapath::Classifier, CacheMode::Megaflow), false),
        ("classifier/on", c(Datapath::Classifier, CacheMode::On), false),
        ("reference/on", c(Datapath::Reference, CacheMode::On), false),
        ("compiled/off", c(Datapath::Compiled, CacheMode::Off), false),
        ("compiled/on", c(Datapath::Compiled, CacheMode::On), false),
        ("daemon", daemon(), false),
        ("reference/off burst", c(Datapath::Reference, CacheMode::Off), true),
        ("classifier/on burst", c(Datapath::Classifier, CacheMode::On), true),
        ("daemon burst", daemon(), true),
    ]
}

fn check(ops: &[Op]) -> Result<(u64, u64, u64), TestCaseError> {
    let (oracle, oracle_log, oracle_counts, _) = run(
        ops,
        Config { datapath: Datapath::Reference, cache: CacheMode::Off, ..Config::default() },
        false,
    );
    let (mut rechecks, mut changed, mut alt_hits) = (0, 0, 0);
    for (name, cfg, burst) in configs() {
        let (seen, log, counts, r) = run(ops, cfg, burst);
        prop_assert_eq!(&seen, &oracle, "{} differs from the reference", name);
        prop_assert_eq!(&log, &oracle_log, "{}: guard calls differ from the reference", name);
        prop_assert_eq!(&counts, &oracle_counts, "{}: entry counters differ", name);
        let cs = r.p.cache_stats();
        prop_assert_eq!(cs.chain_mismatches, 0);
        rechecks += cs.guard_rechecks;
        changed += cs.guard_changed;
        alt_hits += cs.guard_alt_hits;
    }
    Ok((rechecks, changed, alt_hits))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn guarded_rules_agree_with_the_reference(ops in prop::collection::vec(op(), 1..60)) {
        check(&ops)?;
    }
}

/// The random cases reach what they are meant to: cache hits that
/// recheck recorded guard results, some where a stateful guard then
/// answers differently, and some of those answered by the megaflow's
/// alternate (recorded the first time the answer changed) without the
/// slow path.
#[test]
fn caches_recheck_guards_and_fall_back_when_they_change() {
    let spec = |table, priority, guards| FlowSpec {
        table,
        priority,
        in_port: None,
        udp_dst: Some(53),
        ip_dst: None,
        action: if table == 0 { 1 } else { 0 },
        out: 2,
        guards,
    };
    let packets = Op::Packets { in_port: 1, frames: vec![(1, 53, 0); 5] };
    let ops = vec![
        Op::Add(spec(0, 2, vec![Kind::Every(2)])),
        Op::Add(spec(1, 3, vec![Kind::Frame(1), Kind::Every(3)])),
        Op::Add(spec(1, 1, vec![])),
        packets.clone(),
        packets,
    ];
    let (rechecks, changed, alt_hits) = check(&ops).unwrap();
    assert!(
        rechecks > 0 && changed > 0 && alt_hits > 0,
        "rechecks {rechecks}, changed {changed}, alternate hits {alt_hits}"
    );
}

/// The semantics on their own: a rule whose guard fails hands the packet
/// to the next candidate in priority order; the guard runs once per
/// packet, in packet order, on every configuration.
#[test]
fn a_failing_guard_hands_the_packet_to_the_next_rule() {
    let rule = |priority, out, guards| FlowSpec {
        table: 0,
        priority,
        in_port: Some(1),
        udp_dst: None,
        ip_dst: None,
        action: 0,
        out,
        guards,
    };
    let ops = vec![
        Op::Add(rule(3, 2, vec![Kind::Every(2)])),
        Op::Add(rule(1, 3, vec![])),
        Op::Packets { in_port: 1, frames: vec![(1, 53, 0); 4] },
    ];
    let mut all = vec![(
        "reference",
        Config { datapath: Datapath::Reference, cache: CacheMode::Off, ..Config::default() },
        false,
    )];
    all.extend(configs());
    for (name, cfg, burst) in all {
        let (seen, log, _, _) = run(&ops, cfg, burst);
        let Some(Seen::Tx(tx)) = seen.get(2) else { panic!("{name}: {seen:?}") };
        let ports: Vec<u32> = tx.iter().map(|(p, _)| *p).collect();
        assert_eq!(ports, [2, 3, 2, 3], "{name}");
        assert_eq!(log, [(1, true), (1, false), (1, true), (1, false)], "{name}");
    }
}
