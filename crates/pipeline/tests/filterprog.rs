//! Filter programs and pcap-filter expressions in flow rules, through the
//! OpenFlow front end (`sluice_pipeline::filterprog`, `docs/EXPERIMENTER.md`):
//! programs loaded in fragments over OpenFlow, rules naming them, state in
//! maps that the controller writes and reads, the documented errors, and
//! guard fields as part of a rule's identity — on every datapath and cache
//! mode. The programs are C, compiled with clang (the test fails without
//! it: `scripts/install-deps` installs it).

mod common;

use sluice_ofp::consts::SLUICE_EXPERIMENTER_ID;
use sluice_ofp::filterprog::{
    err, error_text, fragments, DumpMapReply, DumpMapRequest, FilterMsg, LoadFilterProg,
    MapsReport, UnloadFilterProg, UpdateMap,
};
use sluice_ofp::message::{flow_mod_command as fc, ErrorMsg, Message, Outgoing};
use sluice_ofp::multipart::{MultipartRequest, MultipartRequestBody};
use sluice_ofp::ofctl::specs::{parse_flow, Usage};
use sluice_pipeline::{CacheMode, Config, Datapath, Pipeline};
use std::path::PathBuf;
use std::process::Command;

/// Every datapath with every cache mode.
fn configs() -> Vec<(Datapath, CacheMode)> {
    let mut v = Vec::new();
    for d in [Datapath::Reference, Datapath::Classifier, Datapath::Compiled] {
        for c in [CacheMode::Off, CacheMode::Megaflow, CacheMode::On] {
            v.push((d, c));
        }
    }
    v
}

fn pipeline(datapath: Datapath, cache: CacheMode) -> Pipeline {
    let mut p = Pipeline::new(Config { datapath, cache, ..Config::default() });
    common::add_ports(&mut p, &[1, 2, 3]);
    p
}

/// Compiles C source `src` for BPF with clang (panics if clang is missing
/// or refuses it).
fn clang(tag: &str, src: &str) -> Vec<u8> {
    let inc = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/bpf");
    // Tests run in parallel: each compilation gets its own files.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir();
    let c = dir.join(format!("sluice-pipeline-{}-{n}-{tag}.c", std::process::id()));
    let o = dir.join(format!("sluice-pipeline-{}-{n}-{tag}.o", std::process::id()));
    std::fs::write(&c, src).unwrap();
    let st = Command::new("clang")
        .args(["-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu"])
        .arg(format!("-I{}", inc.display()))
        .arg("-c")
        .arg(&c)
        .arg("-o")
        .arg(&o)
        .status();
    let _ = std::fs::remove_file(&c);
    match st {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("clang failed on {tag}: {s}"),
        Err(e) => panic!("clang not available (scripts/install-deps installs it): {e}"),
    }
    let b = std::fs::read(&o).unwrap();
    let _ = std::fs::remove_file(&o);
    b
}

/// Passes the first `budget[1]` packets it sees, counting them in
/// `budget[0]`.
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

/// Reads past the end of the frame without a bounds check: the verifier
/// must refuse it.
const UNCHECKED: &str = r#"
#include "sluice_bpf.h"
SEC("xdp")
int unchecked(struct xdp_md *ctx)
{
	unsigned char *data = (void *)(long)ctx->data;
	return data[40];
}
"#;

fn handle(p: &mut Pipeline, msg: &Message) -> Vec<Outgoing> {
    let raw = msg.encode(7);
    p.handle(7, msg, &raw, &mut |_: u32, _: Option<u32>, _: &[u8]| {})
}

/// Sends `msg`; returns the experimenter error code and text it got, if
/// any (any other reply fails the test).
fn exp_error(p: &mut Pipeline, msg: &Message) -> Option<(u16, String)> {
    let out = handle(p, msg);
    assert!(out.len() <= 1, "one answer at most: {out:?}");
    out.first().map(|o| match &o.msg {
        Message::Error(ErrorMsg::Experimenter { exp_type, experimenter, data }) => {
            assert_eq!(*experimenter, SLUICE_EXPERIMENTER_ID);
            (*exp_type, error_text(data).0.into_owned())
        }
        m => panic!("expected an experimenter error, got {m:?}"),
    })
}

/// Loads `object` as `id` in fragments of `frag` bytes; the error of the
/// fragment that was refused, if one was.
fn load(p: &mut Pipeline, id: u32, object: &[u8], frag: usize) -> Option<(u16, String)> {
    for f in fragments(id, object, frag).unwrap() {
        if let Some(e) = exp_error(p, &f.to_message()) {
            return Some(e);
        }
    }
    None
}

fn update(p: &mut Pipeline, id: u32, map: &str, entries: &[(u32, u64)]) -> Option<(u16, String)> {
    let u = UpdateMap {
        prog_id: id,
        delete: false,
        map: map.into(),
        key_size: 4,
        value_size: 8,
        entries: entries
            .iter()
            .map(|(k, v)| (k.to_le_bytes().to_vec(), v.to_le_bytes().to_vec()))
            .collect(),
    };
    exp_error(p, &u.to_message())
}

/// Map `map` of program `id` as (key, value) little-endian u32 → u64.
fn dump(p: &mut Pipeline, id: u32, map: &str) -> Vec<(u32, u64)> {
    dump_raw(p, id, map)
        .into_iter()
        .map(|(k, v)| {
            (u32::from_le_bytes(k.try_into().unwrap()), u64::from_le_bytes(v.try_into().unwrap()))
        })
        .collect()
}

/// A flow-mod in ovs-ofctl text through `handle`: the experimenter error,
/// if any (a standard error fails the test).
fn flow(p: &mut Pipeline, cmd: u8, text: &str) -> Option<(u16, String)> {
    let usage = match cmd {
        fc::ADD => Usage::Add,
        fc::MODIFY | fc::MODIFY_STRICT => Usage::Modify,
        _ => Usage::Delete,
    };
    let spec = parse_flow(text, usage).unwrap_or_else(|e| panic!("{}", e.render(text)));
    exp_error(p, &Message::FlowMod(spec.to_flow_mod(cmd)))
}

/// The ports `frame` received on port 1 went out of.
fn ports(p: &mut Pipeline, frame: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    p.process(1, frame, &mut |port: u32, _: Option<u32>, _: &[u8]| out.push(port));
    out
}

fn udp(dport: u16) -> Vec<u8> {
    common::udp_frame(1, 2, [10, 0, 0, 1], [10, 0, 0, 2], 1000, dport, b"payload!")
}

#[test]
fn a_stateful_program_passes_the_first_n_packets_then_lower_rules_take_over() {
    let object = clang("first_n", FIRST_N);
    for (d, c) in configs() {
        let mut p = pipeline(d, c);
        // Fragments of 100 bytes: the object is several kilobytes.
        assert!(object.len() > 300);
        assert_eq!(load(&mut p, 7, &object, 100), None, "{d:?}/{c:?}");
        assert_eq!(flow(&mut p, fc::ADD, "priority=10,filter_prog=7,actions=output:2"), None);
        assert_eq!(flow(&mut p, fc::ADD, "priority=1,actions=output:3"), None);
        assert_eq!(update(&mut p, 7, "budget", &[(1, 3)]), None);
        let got: Vec<Vec<u32>> = (0..5).map(|_| ports(&mut p, &udp(53))).collect();
        assert_eq!(got, [vec![2], vec![2], vec![2], vec![3], vec![3]], "{d:?}/{c:?}");
        assert_eq!(dump(&mut p, 7, "budget"), [(0, 3), (1, 3)], "{d:?}/{c:?}");
        // The controller resets the count: three more pass.
        assert_eq!(update(&mut p, 7, "budget", &[(0, 0)]), None);
        let got: Vec<Vec<u32>> = (0..4).map(|_| ports(&mut p, &udp(80))).collect();
        assert_eq!(got, [vec![2], vec![2], vec![2], vec![3]], "{d:?}/{c:?}");
        // The rule's counters count the packets its guard let through.
        let stats =
            p.tables()[0].entries().iter().find(|e| e.priority == 10).map(|e| e.packet_count());
        assert_eq!(stats, Some(6), "{d:?}/{c:?}");
    }
}

#[test]
fn refusals_name_the_problem() {
    let object = clang("first_n", FIRST_N);
    let mut p = pipeline(Datapath::Compiled, CacheMode::On);
    // A rule naming a program that is not loaded.
    let (code, text) = flow(&mut p, fc::ADD, "filter_prog=9,actions=drop").unwrap();
    assert_eq!(code, err::UNKNOWN_PROG, "{text}");
    assert!(text.contains('9'), "{text}");
    // The verifier's reason reaches the controller.
    let (code, text) = load(&mut p, 5, &clang("unchecked", UNCHECKED), 4000).unwrap();
    assert_eq!(code, err::PROG_REJECTED);
    assert!(text.contains("rejected") && text.contains("insn 1"), "{text}");
    // Not an ELF object at all.
    let (code, _) = load(&mut p, 6, b"not an elf object", 4000).unwrap();
    assert_eq!(code, err::PROG_REJECTED);
    assert_eq!(load(&mut p, 7, &object, 4000), None);
    // Loading a loaded id.
    assert_eq!(load(&mut p, 7, &object, 4000).unwrap().0, err::PROG_EXISTS);
    // Maps: unknown name, wrong sizes.
    assert_eq!(update(&mut p, 7, "nosuch", &[(0, 1)]).unwrap().0, err::UNKNOWN_MAP);
    let wrong = UpdateMap {
        prog_id: 7,
        delete: false,
        map: "budget".into(),
        key_size: 2,
        value_size: 8,
        entries: vec![(vec![0, 0], vec![0; 8])],
    };
    let (code, text) = exp_error(&mut p, &wrong.to_message()).unwrap();
    assert_eq!(code, err::BAD_MAP_SIZES);
    assert!(text.contains("4-byte keys"), "{text}");
    // Deleting from an array map is refused as Linux refuses it.
    let del = UpdateMap { delete: true, value_size: 0, key_size: 4, ..wrong.clone() };
    let del = UpdateMap { entries: vec![(vec![0; 4], vec![])], ..del };
    assert_eq!(exp_error(&mut p, &del.to_message()).unwrap().0, err::MAP_OP_FAILED);
    // Unloading a program a rule names, then after the rule is gone.
    assert_eq!(flow(&mut p, fc::ADD, "filter_prog=7,actions=drop"), None);
    let unload = UnloadFilterProg { prog_id: 7 }.to_message();
    assert_eq!(exp_error(&mut p, &unload).unwrap().0, err::PROG_IN_USE);
    assert_eq!(flow(&mut p, fc::DELETE, "filter_prog=7"), None);
    assert_eq!(exp_error(&mut p, &unload), None);
    assert_eq!(exp_error(&mut p, &unload).unwrap().0, err::UNKNOWN_PROG);
    // A bad pcap-filter expression: the message shows where.
    let (code, text) =
        flow(&mut p, fc::ADD, r#"pcap_filter="udp dst port 53 andd tcp",actions=drop"#).unwrap();
    assert_eq!(code, err::BAD_PCAP_FILTER);
    assert!(text.contains('^'), "{text}");
    // Fragments out of order drop the object.
    let fs = fragments(8, &object, 100).unwrap();
    assert_eq!(exp_error(&mut p, &fs[0].to_message()), None);
    let (code, _) = exp_error(&mut p, &fs[2].to_message()).unwrap();
    assert_eq!(code, err::BAD_FRAGMENT);
    let last = LoadFilterProg { ..fs[fs.len() - 1].clone() };
    assert_eq!(exp_error(&mut p, &last.to_message()).unwrap().0, err::BAD_FRAGMENT);
    // An object larger than the switch takes, announced in its first
    // fragment.
    let big = LoadFilterProg {
        prog_id: 9,
        more: true,
        offset: 0,
        total_len: sluice_ofp::filterprog::MAX_OBJECT + 1,
        bytes: vec![0; 64],
    };
    assert_eq!(exp_error(&mut p, &big.to_message()).unwrap().0, err::PROG_TOO_BIG);
    // Through all of it the switch forwards.
    assert_eq!(flow(&mut p, fc::ADD, "priority=0,actions=output:3"), None);
    assert_eq!(ports(&mut p, &udp(53)), [3]);
}

#[test]
fn pcap_filter_rules_match_what_libpcap_would() {
    for (d, c) in configs() {
        let mut p = pipeline(d, c);
        let r =
            flow(&mut p, fc::ADD, r#"priority=5,pcap_filter="udp dst port 53",actions=output:2"#);
        assert_eq!(r, None);
        assert_eq!(flow(&mut p, fc::ADD, "priority=1,actions=output:3"), None);
        for _ in 0..3 {
            assert_eq!(ports(&mut p, &udp(53)), [2], "{d:?}/{c:?}");
            assert_eq!(ports(&mut p, &udp(54)), [3], "{d:?}/{c:?}");
        }
    }
}

#[test]
fn guard_fields_are_part_of_a_rules_identity() {
    let object = clang("first_n", FIRST_N);
    let mut p = pipeline(Datapath::Compiled, CacheMode::On);
    assert_eq!(load(&mut p, 7, &object, 4000), None);
    assert_eq!(load(&mut p, 8, &object, 4000), None);
    let count = |p: &Pipeline| p.tables()[0].entries().len();
    // Same fields and priority, different programs: two rules.
    assert_eq!(flow(&mut p, fc::ADD, "priority=5,udp,filter_prog=7,actions=output:2"), None);
    assert_eq!(flow(&mut p, fc::ADD, "priority=5,udp,filter_prog=8,actions=output:3"), None);
    assert_eq!(flow(&mut p, fc::ADD, "priority=5,udp,actions=output:1"), None);
    assert_eq!(count(&p), 3);
    // The same again replaces, it does not add.
    assert_eq!(flow(&mut p, fc::ADD, "priority=5,udp,filter_prog=8,actions=drop"), None);
    assert_eq!(count(&p), 3);
    // Strict delete takes exactly the named guard fields.
    assert_eq!(flow(&mut p, fc::DELETE_STRICT, "priority=5,udp,filter_prog=7"), None);
    assert_eq!(count(&p), 2);
    assert_eq!(flow(&mut p, fc::DELETE_STRICT, "priority=5,udp"), None);
    assert_eq!(count(&p), 1);
    // Non-strict delete naming a program takes only rules that name it.
    assert_eq!(flow(&mut p, fc::ADD, "priority=6,tcp,actions=drop"), None);
    assert_eq!(flow(&mut p, fc::DELETE, "filter_prog=8"), None);
    assert_eq!(count(&p), 1);
    assert_eq!(p.tables()[0].entries()[0].priority, 6);
}

/// An example program of `examples/bpf`, compiled.
fn example(name: &str) -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/bpf");
    let src = std::fs::read_to_string(dir.join(format!("{name}.c"))).unwrap();
    clang(name, &src)
}

fn tcp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, flags: u8) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0, 0, 40, 0, 1, 0, 0, 64, 6, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0x20, 0, 0, 0, 0, 0]);
    f
}

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const RST: u8 = 0x04;
const FIN: u8 = 0x01;

/// A deterministic mixed trace: (gap before it in ns, in_port, frame).
/// TCP connections opened from inside (port 1) and answered from outside
/// (port 2), unsolicited packets from outside, resets and fins, and DNS
/// queries from a few sources at rates above and below the limiter's.
fn trace() -> Vec<(u64, u32, Vec<u8>)> {
    let inside = |h: u8| [10, 0, 0, h];
    let outside = |h: u8| [192, 0, 2, h];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let mut out = Vec::new();
    for _ in 0..600 {
        let (h, o) = (1 + next(3) as u8, 1 + next(3) as u8);
        let (sp, dp) = (1000 + next(4) as u16, 80 + next(2) as u16);
        let gap = [0, 1_000, 50_000, 2_000_000][next(4) as usize];
        let (port, frame) = match next(9) {
            0 => (1, tcp(inside(h), outside(o), sp, dp, SYN)),
            1 => (2, tcp(outside(o), inside(h), dp, sp, SYN | ACK)),
            2 => (1, tcp(inside(h), outside(o), sp, dp, ACK)),
            3 => (2, tcp(outside(o), inside(h), dp, sp, ACK)),
            4 => (2, tcp(outside(o), inside(h), dp, sp, SYN)),
            5 => (
                1 + next(2) as u32,
                tcp(inside(h), outside(o), sp, dp, [RST, FIN][next(2) as usize]),
            ),
            6 | 7 => (1, common::udp_frame(1, 2, inside(h), outside(9), 5000, 53, b"query")),
            _ => (1, common::udp_frame(1, 2, inside(h), outside(9), 5000, 123, b"ntp")),
        };
        out.push((gap, port, frame));
    }
    out
}

/// What one configuration did with the trace: every transmitted frame
/// in order, each rule's packet count, and the programs' final maps.
#[derive(Debug, PartialEq)]
struct Outcome {
    sent: Vec<(u32, Vec<u8>)>,
    counts: Vec<(u8, u16, u64)>,
    conns: Vec<(Vec<u8>, Vec<u8>)>,
    buckets: Vec<(Vec<u8>, Vec<u8>)>,
    /// The `send_maps` reports, in order.
    reports: Vec<MapsReport>,
}

fn dump_raw(p: &mut Pipeline, id: u32, map: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let req = DumpMapRequest { prog_id: id, map: map.into() };
    let msg = Message::MultipartRequest(MultipartRequest {
        flags: 0,
        body: MultipartRequestBody::Experimenter(req.to_multipart()),
    });
    let mut out = Vec::new();
    for o in handle(p, &msg) {
        let Message::MultipartReply(r) = &o.msg else { panic!("not a reply: {:?}", o.msg) };
        let sluice_ofp::multipart::MultipartReplyBody::Experimenter(e) = &r.body else {
            panic!("not an experimenter reply: {r:?}")
        };
        for rep in DumpMapReply::from_multipart(e).unwrap().unwrap() {
            out.extend(rep.map.entries);
        }
    }
    out.sort();
    out
}

fn run_trace(d: Datapath, c: CacheMode, firewall: &[u8], limiter: &[u8], burst: bool) -> Outcome {
    let mut p = pipeline(d, c);
    assert_eq!(load(&mut p, 1, firewall, 4000), None);
    assert_eq!(load(&mut p, 2, limiter, 4000), None);
    for f in [
        "table=0,priority=30,in_port=1,tcp,filter_prog=1,actions=goto_table:1",
        "table=0,priority=30,in_port=2,tcp,filter_prog=1,actions=send_maps:1:conns,output:1",
        r#"table=0,priority=20,udp,pcap_filter="udp dst port 53",filter_prog=2,actions=output:3"#,
        "table=0,priority=10,udp,actions=output:2",
        "table=0,priority=1,actions=drop",
        "table=1,priority=1,actions=output:2",
    ] {
        assert_eq!(flow(&mut p, fc::ADD, f), None, "{f}");
    }
    let mut sent = Vec::new();
    let mut async_msgs = Vec::new();
    let mut now = 1_000_000_000;
    let trace = trace();
    let mut i = 0;
    while i < trace.len() {
        now += trace[i].0;
        p.advance(now);
        // Bursts of up to five frames of one port with no gap between
        // them (the staged path), else one frame at a time.
        let mut j = i + 1;
        while burst && j < trace.len() && j - i < 5 && trace[j].0 == 0 && trace[j].1 == trace[i].1 {
            j += 1;
        }
        let frames: Vec<&[u8]> = trace[i..j].iter().map(|t| t.2.as_slice()).collect();
        let mut tx = |port: u32, _: Option<u32>, f: &[u8]| sent.push((port, f.to_vec()));
        if burst {
            p.process_burst(trace[i].1, &frames, &mut tx);
        } else {
            p.process(trace[i].1, frames[0], &mut tx);
        }
        async_msgs.extend(p.take_async());
        i = j;
    }
    let counts = p
        .tables()
        .iter()
        .enumerate()
        .flat_map(|(t, tb)| {
            tb.entries().iter().map(move |e| (t as u8, e.priority, e.packet_count()))
        })
        .collect();
    Outcome {
        sent,
        counts,
        conns: dump_raw(&mut p, 1, "conns"),
        buckets: dump_raw(&mut p, 2, "buckets"),
        reports: reports(&async_msgs),
    }
}

/// Every datapath and cache mode, one frame at a time and in bursts,
/// against the reference walk: the same frames out in the same order,
/// the same rule counters, the same final maps. The programs are
/// stateful (a connection table, token buckets on the pipeline clock),
/// so a guard run twice, skipped, or run in another order than the
/// reference's shows.
#[test]
fn stateful_guards_agree_with_the_reference_on_every_datapath() {
    let (fw, rl) = (example("tcp_firewall"), example("rate_limiter"));
    let oracle = run_trace(Datapath::Reference, CacheMode::Off, &fw, &rl, false);
    // The trace exercises both programs both ways.
    let through = |port: u32| oracle.sent.iter().filter(|(p, _)| *p == port).count();
    assert!(through(1) > 10 && through(2) > 10 && through(3) > 10, "{:?}", oracle.counts);
    assert!(!oracle.conns.is_empty() && !oracle.buckets.is_empty());
    // Several reports, rate-limited (the trace spans over a second).
    assert!(oracle.reports.len() >= 3, "{}", oracle.reports.len());
    let dropped = oracle.counts.iter().find(|c| c.1 == 1 && c.0 == 0).map(|c| c.2);
    assert!(dropped.unwrap_or(0) > 10, "{:?}", oracle.counts);
    for (d, c) in configs() {
        for burst in [false, true] {
            let got = run_trace(d, c, &fw, &rl, burst);
            assert!(got == oracle, "{d:?}/{c:?} burst={burst} differs from the reference");
        }
    }
}

/// The `MAPS_REPORT`s among `msgs`.
fn reports(msgs: &[Message]) -> Vec<MapsReport> {
    msgs.iter()
        .filter_map(|m| match m {
            Message::Experimenter(e) => match FilterMsg::from_experimenter(e) {
                Some(Ok(FilterMsg::MapsReport(r))) => Some(r),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// `send_maps` sends the named maps, with the rule's table and cookie,
/// at most once per `REPORT_INTERVAL_NS` per rule, on every datapath and
/// cache mode; it is refused outside a flow's apply-actions and for maps
/// the program lacks.
#[test]
fn send_maps_reports_the_maps_at_a_limited_rate() {
    let object = clang("first_n", FIRST_N);
    let interval = sluice_pipeline::filterprog::REPORT_INTERVAL_NS;
    for (d, c) in configs() {
        let mut p = pipeline(d, c);
        assert_eq!(load(&mut p, 7, &object, 4000), None);
        assert_eq!(update(&mut p, 7, "budget", &[(1, 100)]), None);
        let r = flow(
            &mut p,
            fc::ADD,
            "table=0,cookie=0x42,priority=10,filter_prog=7,actions=send_maps:7:budget,output:2",
        );
        assert_eq!(r, None, "{d:?}/{c:?}");
        p.advance(1_000_000_000);
        for _ in 0..3 {
            assert_eq!(ports(&mut p, &udp(53)), [2]);
        }
        let got = reports(&p.take_async());
        assert_eq!(got.len(), 1, "{d:?}/{c:?}: one report within the interval: {got:?}");
        let r = &got[0];
        assert_eq!((r.prog_id, r.table_id, r.cookie, r.more), (7, 0, 0x42, false));
        assert_eq!(r.maps.len(), 1);
        assert_eq!(r.maps[0].name, "budget");
        // The map as the first packet's run left it: one packet counted.
        let seen = r.maps[0].entries.iter().find(|(k, _)| k == &0u32.to_le_bytes());
        assert_eq!(seen.map(|(_, v)| v.as_slice()), Some(&1u64.to_le_bytes()[..]));
        // The next interval: one more report, with the count by then.
        p.advance(1_000_000_000 + interval);
        assert_eq!(ports(&mut p, &udp(53)), [2]);
        let got = reports(&p.take_async());
        assert_eq!(got.len(), 1, "{d:?}/{c:?}");
        let seen = got[0].maps[0].entries.iter().find(|(k, _)| k == &0u32.to_le_bytes());
        assert_eq!(seen.map(|(_, v)| v.as_slice()), Some(&4u64.to_le_bytes()[..]));
    }
    let mut p = pipeline(Datapath::Compiled, CacheMode::On);
    assert_eq!(load(&mut p, 7, &object, 4000), None);
    let bad = |p: &mut Pipeline, text: &str| {
        let usage = Usage::Add;
        let spec = parse_flow(text, usage).unwrap_or_else(|e| panic!("{}", e.render(text)));
        let raw = Message::FlowMod(spec.to_flow_mod(fc::ADD));
        let out = handle(p, &raw);
        out.first().map(|o| o.msg.clone())
    };
    // Only in apply-actions: a report belongs to the rule that ran it.
    let m = bad(&mut p, "actions=write_actions(send_maps:7:budget)");
    let want = sluice_ofp::error::ErrorCode::BAC_BAD_ARGUMENT;
    assert!(matches!(m, Some(Message::Error(ErrorMsg::Standard { code, .. })) if code == want));
    // A map the program lacks, a program not loaded.
    for (text, code) in [
        ("actions=send_maps:7:nosuch", err::UNKNOWN_MAP),
        ("actions=send_maps:8:budget", err::UNKNOWN_PROG),
    ] {
        let m = bad(&mut p, text);
        let ok = matches!(&m, Some(Message::Error(ErrorMsg::Experimenter { exp_type, .. })) if *exp_type == code);
        assert!(ok, "{text}: {m:?}");
    }
}
