//! `sluice bench`: packets from memory through the full pipeline, no
//! I/O, on one thread or `--threads N`; one line per case on stdout.
//!
//! What? The forwarding rate of one worker's pipeline (`Pipeline::process`,
//! parse → caches → tables → actions → transmit) on synthetic workloads,
//! so that changes to the classifier and caches can be measured without
//! ports, rings or the kernel in the way. Output:
//!
//! ```text
//! # CASE RULES MPPS NS_PER_PKT
//! l3/on 100000 12.345 81.0
//! ```
//!
//! `#` lines are comments (settings, trace statistics, cut-short cases).
//!
//! Cases (each with caches `on`, `megaflow`, `off` and `auto` — whichever
//! of the three the worker measures to be cheapest, `sluice_core::adapt` —
//! as `NAME/MODE`):
//! - `1rule`: `in_port=1,actions=output:2`, one frame.
//! - `l2`: 10, 100, 1k, 10k, 100k rules `dl_dst=MAC,actions=output:P`;
//!   traffic cycles over all rules (a fixed shuffled order).
//! - `l3`: the same sizes of `ip,nw_dst=A.B.C.0/24,actions=output:P`
//!   (distinct /24s), one frame per rule, cycling likewise.
//! - `pofmac`, `pofnet`: the `l2` and `l3` rules written as POF fields
//!   (`pof(0,48)=MAC`; `pof(96,16)=0x0800,pof(240,24)=NET`, K_POFVS's
//!   frame-relative form), same sizes, frames and packet order, so each
//!   line compares with its OXM twin.
//! - `route`: `l3` at 10 and 1k rules with a router's rewrite before the
//!   output (`set_field` of both MACs, `dec_ttl`): edits that keep the
//!   frame's layout.
//! - `oko`, `okoprog` (Oko's synthetic scenario, issue 13): one UDP
//!   flow through a chain of 1, 2, 5 or 10 tables (the RULES column),
//!   each with one match-all rule going to the next table; in `okoprog`
//!   every rule also names filter program 1, which returns 1 in one
//!   instruction, so each line compares with its `oko` twin: the cost of
//!   running a filter program per table.
//! - `fwprog`, `fwof` (issue 13's stateful-firewall case): TCP
//!   connections (1000, or the `--rules` counts up to 100k) opened from
//!   inside (10.0.0.0/8) to outside hosts, then their packets both ways
//!   (45% outbound, 45% replies) and 10% unsolicited inbound packets for
//!   no connection. `fwprog` tracks connections in filter program 1 (a
//!   hash map of 5-tuples written by inside SYNs; written in
//!   `sluice_bpf::asm` below, like `examples/bpf/tcp_firewall.c` without
//!   its state machine) named by the outbound and inbound rules; `fwof`
//!   has what a reactive controller installs instead, one exact inbound
//!   rule per connection (pre-installed: its reaction time is not
//!   modelled). Both forward outbound to port 2, replies to port 3 and
//!   drop the rest; the warm-up sends every connection's SYN first.
//! - `twotable`: table 0 routes (101 /8 and 69 /16 prefixes, priority =
//!   prefix length, `write_actions(output:P),goto_table:1`); table 1 an ACL
//!   of 500 allowed TCP/UDP destination ports (no instructions: the action
//!   set is executed) and a priority-0 `clear_actions` default deny. The
//!   trace is a generated mix of short heavy-tailed conversations: lengths
//!   `ceil(exp(N(1.25, 1.52²)))` (mean ≈ 11.7 packets, median 4), a fixed
//!   number active at once, packets picked uniformly among the active ones;
//!   10% of destinations are random (mostly unrouted) and 15% of ports random
//!   (mostly denied). The achieved statistics are printed in a `#` line.
//!   `twotableprog` is the same with filter program 1 (one instruction,
//!   return 1) on every ACL rule: Oko's realistic scenario, compared line
//!   by line with `twotable` (same trace).
//!
//! - `p4-ipv4`, `p4-mac` (issue 15): `examples/p4/router.p4` with the
//!   `route` family's routes as `routes` entries (LPM, MAC rewrite, TTL,
//!   checksum verified and recomputed) and `examples/p4/l2switch.p4`
//!   with the `l2` family's MACs as `forwarding` entries (the source
//!   learned), same sizes, frames and packet order as their OpenFlow
//!   twins, compiled into the core (`NAME/on`, `NAME/megaflow`,
//!   `NAME/off`: the caches; `--datapath reference` scans the tables,
//!   the others use the classifier) and on the reference interpreter
//!   (`NAME/interp`, whose tables are linear scans, so large sizes stop at
//!   `--max-seconds`). A program the lowering does not take yet prints
//!   why in a `#` line instead of its compiled cases.
//!
//! Method: every frame (60 bytes, 64 on the wire) and the packet order are
//! built before timing. Each case installs its flows into a fresh pipeline,
//! runs a warm-up pass (one cycle over the distinct frames, or a quarter of
//! the trace; untimed), then the timed packets; `Instant` is read around
//! each chunk of 1024 `process` calls only, so progress-bar updates and
//! checks are not timed. The pipeline clock is not advanced (no timeouts
//! are used).
//!
//! Validation: the benchmark knows where every packet must go (its own model
//! of each table: the rule's port, the longest matching route if the ACL
//! allows the port, or nowhere) and the transmit hook checks every output
//! against it. A case with any wrong, missing or extra output, or any
//! asynchronous message (packet-in), fails: an error on stderr, no numbers,
//! and a non-zero exit after the remaining cases ran. Flow installation
//! taking a second or more is reported in a `#` line (it is not timed
//! otherwise).
//!
//! Threads (`--threads N`, issue 17's scale-up): N threads forward
//! through one pipeline at once, each with a worker of its own (caches,
//! counter shard), as the daemon's workers do; each warms its caches, then
//! all start together, each at its own offset in the packet order, and
//! every thread's outputs are checked. The rate is the sum over threads
//! (their packets over the slowest thread's wall time); a `#` line gives
//! each thread's own rate.
//!
//! Bounds: `--packets` at most 50M (the packet order is kept in memory,
//! 8 bytes per packet); the warm-up and the timed run each stop early at
//! `--max-seconds` of work (reported in a `#` line) so a linear-scan
//! datapath at 100k rules still finishes.

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use sluice_bpf::Program;
use sluice_ofp::message::flow_mod_command as fc;
use sluice_ofp::ofctl::{parse_flow, Usage};
use sluice_ofp::port::Port;
use sluice_packet::checksum::{fold, sum};
use sluice_pipeline::{CacheMode, Config, Datapath, JitOptions, Pipeline, Tx, Worker};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// Arguments of `sluice bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run only cases whose name (e.g. `l3/on`) contains one of these
    /// comma-separated substrings.
    #[arg(long, value_name = "PATTERN")]
    pub cases: Option<String>,
    /// Rule counts of the sized families (`l2`, `l3`, `pofmac`, `pofnet`,
    /// `route`) instead of the default ones, comma-separated
    /// (`1,10,10000`; at most 1M each), the chain lengths of `oko` and
    /// `okoprog` (those up to 64) and the connections of `fwprog` and
    /// `fwof` (those up to 100k); other families are unaffected.
    #[arg(long, value_name = "N,...", value_delimiter = ',', value_parser = parse_size)]
    pub rules: Vec<usize>,
    /// Timed packets per case (`20000`, `500k`, `2M`).
    #[arg(long, value_name = "N", default_value = "2M", value_parser = parse_count)]
    pub packets: u64,
    /// Flow-table lookup structure.
    #[arg(long, value_enum, default_value = "compiled")]
    pub datapath: DatapathArg,
    /// Cache configuration to run each case with.
    #[arg(long, value_enum, default_value = "all")]
    pub cache: CacheArg,
    /// Seed of the generated orders and trace (same seed, same packets).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Stop a case after this many seconds of timed work.
    #[arg(long, value_name = "SECS", default_value_t = 30.0, value_parser = parse_secs)]
    pub max_seconds: f64,
    /// Frames handed to the pipeline at once, as a port's receive burst
    /// (`1`: one `process` call per frame, no staging).
    #[arg(long, value_name = "N", default_value_t = 32,
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub burst: u16,
    /// Threads forwarding at once through one pipeline, each with its own
    /// worker (caches, counter shard) as the daemon's workers; the rate is
    /// their sum. The P4 cases always run on one thread.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: u16,
}

/// `--datapath`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatapathArg {
    Reference,
    Classifier,
    Compiled,
}

/// `--cache`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheArg {
    On,
    Megaflow,
    Off,
    Auto,
    All,
}

/// Largest `--rules` count.
const MAX_RULES: usize = 1_000_000;

fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    t.parse::<usize>()
        .ok()
        .filter(|&n| (1..=MAX_RULES).contains(&n))
        .ok_or_else(|| format!("`{t}` is not a rule count (1 to {MAX_RULES})"))
}

/// Largest `--packets`.
const MAX_PACKETS: u64 = 50_000_000;

fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1_000),
        Some((i, 'm' | 'M')) => (&t[..i], 1_000_000),
        _ => (t, 1),
    };
    match num.parse::<u64>().ok().and_then(|n| n.checked_mul(mult)) {
        Some(n) if (1..=MAX_PACKETS).contains(&n) => Ok(n),
        _ => Err(format!("bad count `{s}`: want 1..={MAX_PACKETS}, e.g. 20000, 500k or 2M")),
    }
}

fn parse_secs(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 86_400.0 => Ok(x),
        _ => Err(format!("bad duration `{s}`: want seconds, 0 < SECS <= 86400")),
    }
}

/// Frame bytes (64 on the wire with the FCS).
const FRAME_LEN: usize = 60;
/// The port every packet arrives on.
const IN_PORT: u32 = 1;
/// Output ports the rules spread traffic over.
const OUT_PORTS: [u32; 4] = [2, 3, 4, 5];
/// `process` calls between clock reads and progress updates (small enough
/// that `--max-seconds` is honoured on a slow linear-scan datapath).
const CHUNK: usize = 1024;
/// Rule counts of the `l2` and `l3` families.
const SIZES: [usize; 5] = [10, 100, 1_000, 10_000, 100_000];

/// Table counts of the `oko` and `okoprog` chains.
const OKO_CHAINS: [usize; 4] = [1, 2, 5, 10];
/// Connections of the firewall cases by default.
const FW_CONNECTIONS: usize = 1000;
/// Conversations in flight at once in the `twotable` trace.
const ACTIVE_CONVERSATIONS: usize = 4096;
/// Log-normal parameters of conversation lengths (see module docs).
const LEN_MU: f64 = 1.25;
const LEN_SIGMA: f64 = 1.52;
/// Longest conversation, in packets.
const MAX_CONV_LEN: u64 = 100_000;

/// SplitMix64: small, fast, and the same numbers on every machine.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}

/// Header fields of a generated frame.
#[derive(Clone, Copy)]
struct Headers {
    dl_src: [u8; 6],
    dl_dst: [u8; 6],
    nw_src: u32,
    nw_dst: u32,
    /// 6 (TCP) or 17 (UDP).
    proto: u8,
    tp_src: u16,
    tp_dst: u16,
}

const SWITCH_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0xfe];
const HOST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];

impl Headers {
    fn udp(nw_dst: u32) -> Headers {
        Headers {
            dl_src: HOST_MAC,
            dl_dst: SWITCH_MAC,
            nw_src: 0xc0a8_0001,
            nw_dst,
            proto: 17,
            tp_src: 1024,
            tp_dst: 9,
        }
    }

    /// Ethernet + IPv4 (checksummed) + TCP or UDP, padded to 60 bytes.
    /// [`Headers::frame`] of a TCP connection's opening SYN (flags SYN
    /// only, where `frame` sets ACK).
    fn syn_frame(&self) -> [u8; FRAME_LEN] {
        let mut f = self.frame();
        f[34 + 13] = 0x02;
        f
    }

    fn frame(&self) -> [u8; FRAME_LEN] {
        let mut f = [0u8; FRAME_LEN];
        f[0..6].copy_from_slice(&self.dl_dst);
        f[6..12].copy_from_slice(&self.dl_src);
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        let l4_len: u16 = if self.proto == 6 { 20 } else { (FRAME_LEN - 34) as u16 };
        let ip = &mut f[14..34];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&(20 + l4_len).to_be_bytes());
        ip[6] = 0x40; // DF
        ip[8] = 64;
        ip[9] = self.proto;
        ip[12..16].copy_from_slice(&self.nw_src.to_be_bytes());
        ip[16..20].copy_from_slice(&self.nw_dst.to_be_bytes());
        let c = !fold(sum(ip));
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        let l4 = &mut f[34..];
        l4[0..2].copy_from_slice(&self.tp_src.to_be_bytes());
        l4[2..4].copy_from_slice(&self.tp_dst.to_be_bytes());
        if self.proto == 6 {
            l4[4..8].copy_from_slice(&1u32.to_be_bytes()); // seq
            l4[12] = 5 << 4; // data offset
            l4[13] = 0x10; // ACK
            l4[14..16].copy_from_slice(&0xffffu16.to_be_bytes()); // window
        } else {
            l4[4..6].copy_from_slice(&l4_len.to_be_bytes());
        }
        f
    }
}

fn ip_text(a: u32) -> String {
    std::net::Ipv4Addr::from(a).to_string()
}

fn mac_text(m: &[u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// Flows, frames and packet order of one family/size, shared by its cache
/// modes.
struct Workload {
    family: &'static str,
    /// Rules installed (the RULES column).
    rules: usize,
    /// Flows in ovs-ofctl `add-flow` syntax.
    flows: Vec<String>,
    frames: Vec<[u8; FRAME_LEN]>,
    /// (frame index, port it must leave on or 0 for dropped), warm-up first.
    seq: Vec<(u32, u32)>,
    /// Untimed warm-up packets at the start of `seq`.
    warm: usize,
    /// Lines for stdout describing the workload (without `# `).
    notes: Vec<String>,
    /// Filter programs to install before the flows, by id.
    progs: Vec<(u32, Program)>,
}

/// `len` packets cycling over `n` frames in a shuffled order.
fn cycle(rng: &mut Rng, n: usize, len: usize, port_of: impl Fn(usize) -> u32) -> Vec<(u32, u32)> {
    let mut order: Vec<usize> = (0..n).collect();
    rng.shuffle(&mut order);
    order.iter().cycle().take(len).map(|&i| (i as u32, port_of(i))).collect()
}

fn one_rule(packets: usize) -> Workload {
    let warm = packets.min(1024);
    Workload {
        family: "1rule",
        rules: 1,
        flows: vec![format!("in_port={IN_PORT},actions=output:{}", OUT_PORTS[0])],
        frames: vec![Headers::udp(0x0a00_0001).frame()],
        seq: vec![(0, OUT_PORTS[0]); warm + packets],
        warm,
        notes: Vec::new(),
        progs: Vec::new(),
    }
}

/// Oko's synthetic scenario: one UDP flow through `tables` tables, each
/// with one match-all rule that goes to the next table (the last one
/// outputs); with `prog`, each rule also names filter program 1, which
/// returns 1 in one instruction (`mov r0, 1; exit`).
fn oko(tables: usize, prog: bool, packets: usize) -> Workload {
    let guard = if prog { "filter_prog=1," } else { "" };
    let flows = (0..tables)
        .map(|t| {
            let action = if t + 1 == tables {
                format!("output:{}", OUT_PORTS[0])
            } else {
                format!("goto_table:{}", t + 1)
            };
            format!("table={t},priority=1,{guard}actions={action}")
        })
        .collect();
    let progs = if prog { vec![(1, return_one())] } else { Vec::new() };
    let warm = packets.min(1024);
    Workload {
        family: if prog { "okoprog" } else { "oko" },
        rules: tables,
        flows,
        frames: vec![Headers::udp(0x0a00_0001).frame()],
        seq: vec![(0, OUT_PORTS[0]); warm + packets],
        warm,
        notes: Vec::new(),
        progs,
    }
}

/// Oko's one-instruction program: `mov r0, 1; exit`.
fn return_one() -> Program {
    let insns = vec![sluice_bpf::asm::mov64_imm(0, 1), sluice_bpf::asm::exit()];
    Program { name: "one".into(), prog_type: sluice_bpf::ProgType::Xdp, insns, maps: Vec::new() }
}

/// A stateful TCP firewall: passes TCP whose 5-tuple, either way round,
/// is in its hash map `conns` (12-byte keys: addresses and ports as on
/// the wire); records a SYN (without ACK) from 10.0.0.0/8 and passes it;
/// returns 0 for any other TCP. Non-TCP and IPv4 with options pass.
fn firewall_prog(max_entries: u32) -> Program {
    use sluice_bpf::asm::{
        alu64_imm, call, exit, j, jmp_imm, jmp_reg, ld_map, ldx, mov64_imm, mov64_reg, op, st, stx,
        sz,
    };
    const RET1: usize = 50;
    const RET0: usize = 52;
    // Jump offset from the instruction at `at` to `to`.
    let off = |at: usize, to: usize| (to - at - 1) as i16;
    let mut p = vec![
        mov64_reg(6, 1),
        ldx(sz::W, 2, 6, 0), // data
        ldx(sz::W, 3, 6, 4), // data_end
        mov64_reg(4, 2),
        alu64_imm(op::ADD, 4, 54),
        jmp_reg(j::JGT, 4, 3, off(5, RET0)), // shorter than Ethernet + IPv4 + TCP
        ldx(sz::H, 4, 2, 12),
        jmp_imm(j::JNE, 4, 0x0008, off(7, RET1)), // EtherType 0x0800
        ldx(sz::B, 4, 2, 14),
        jmp_imm(j::JNE, 4, 0x45, off(9, RET1)),
        ldx(sz::B, 4, 2, 23),
        jmp_imm(j::JNE, 4, 6, off(11, RET1)),
        ldx(sz::W, 4, 2, 26), // source address
        ldx(sz::W, 5, 2, 30), // destination address
        stx(sz::W, 10, 4, -16),
        stx(sz::W, 10, 5, -12),
        stx(sz::W, 10, 5, -28),
        stx(sz::W, 10, 4, -24),
        ldx(sz::H, 4, 2, 34), // source port
        ldx(sz::H, 5, 2, 36), // destination port
        stx(sz::H, 10, 4, -8),
        stx(sz::H, 10, 5, -6),
        stx(sz::H, 10, 5, -20),
        stx(sz::H, 10, 4, -18),
        ldx(sz::B, 7, 2, 47), // TCP flags
        ldx(sz::B, 8, 2, 26), // first octet of the source
    ];
    p.extend(ld_map(1, 0));
    p.extend([
        mov64_reg(2, 10),
        alu64_imm(op::ADD, 2, -16),
        call(1), // map_lookup_elem(conns, this way)
        jmp_imm(j::JNE, 0, 0, off(31, RET1)),
    ]);
    p.extend(ld_map(1, 0));
    p.extend([
        mov64_reg(2, 10),
        alu64_imm(op::ADD, 2, -28),
        call(1), // map_lookup_elem(conns, the other way)
        jmp_imm(j::JNE, 0, 0, off(37, RET1)),
        alu64_imm(op::AND, 7, 0x12),
        jmp_imm(j::JNE, 7, 2, off(39, RET0)), // not a SYN without ACK
        jmp_imm(j::JNE, 8, 10, off(40, RET0)), // not from inside
        st(sz::DW, 10, -40, 1),
    ]);
    p.extend(ld_map(1, 0));
    p.extend([
        mov64_reg(2, 10),
        alu64_imm(op::ADD, 2, -16),
        mov64_reg(3, 10),
        alu64_imm(op::ADD, 3, -40),
        mov64_imm(4, 0),
        call(2), // map_update_elem(conns, key, 1, BPF_ANY)
        mov64_imm(0, 1),
        exit(),
        mov64_imm(0, 0),
        exit(),
    ]);
    debug_assert_eq!(p.len(), RET0 + 2);
    let conns = sluice_bpf::maps::MapDef {
        name: "conns".into(),
        map_type: sluice_bpf::maps::BPF_MAP_TYPE_HASH,
        key_size: 12,
        value_size: 8,
        max_entries,
        flags: 0,
    };
    Program {
        name: "firewall".into(),
        prog_type: sluice_bpf::ProgType::Xdp,
        insns: p,
        maps: vec![conns],
    }
}

/// The stateful-firewall case with `conns` connections: tracked by a
/// filter program (`prog`) or by one exact OpenFlow rule per connection.
fn firewall(conns: usize, prog: bool, packets: usize, rng: &mut Rng) -> Workload {
    let (out_port, in_port) = (OUT_PORTS[0], OUT_PORTS[1]);
    let tcp = |nw_src: u32, nw_dst: u32, tp_src: u16, tp_dst: u16| Headers {
        dl_src: HOST_MAC,
        dl_dst: SWITCH_MAC,
        nw_src,
        nw_dst,
        proto: 6,
        tp_src,
        tp_dst,
    };
    let inside = |rng: &mut Rng| 0x0a00_0000 | (rng.next_u64() as u32 & 0x00ff_ffff);
    let outside = |rng: &mut Rng| 0x5000_0000 | (rng.next_u64() as u32 & 0x0fff_ffff);
    let port = |rng: &mut Rng| 1024 + rng.below(64_512) as u16;
    // (inside address, outside address, inside port, outside port)
    let mut seen = HashSet::new();
    let mut tuples = Vec::with_capacity(conns);
    while tuples.len() < conns {
        let t = (inside(rng), outside(rng), port(rng), [80, 443, 22, 8080][rng.below(4)]);
        if seen.insert(t) {
            tuples.push(t);
        }
    }
    // Frames: per connection SYN, outbound, reply; then unsolicited.
    let mut frames = Vec::with_capacity(3 * conns + conns / 10 + 1);
    for &(l, r, lp, rp) in &tuples {
        frames.push(tcp(l, r, lp, rp).syn_frame());
        frames.push(tcp(l, r, lp, rp).frame());
        frames.push(tcp(r, l, rp, lp).frame());
    }
    let unsolicited = (conns / 10).max(1);
    let first_unsolicited = frames.len();
    while frames.len() < first_unsolicited + unsolicited {
        let (l, r, lp, rp) = (inside(rng), outside(rng), port(rng), port(rng));
        if !seen.contains(&(l, r, lp, rp)) {
            frames.push(tcp(r, l, rp, lp).frame());
        }
    }
    // Warm-up: every SYN, then one pass over the other frames.
    let mut seq: Vec<(u32, u32)> = (0..conns).map(|c| ((3 * c) as u32, out_port)).collect();
    for c in 0..conns {
        seq.push(((3 * c + 1) as u32, out_port));
        seq.push(((3 * c + 2) as u32, in_port));
    }
    seq.extend((first_unsolicited..frames.len()).map(|f| (f as u32, 0)));
    let warm = seq.len();
    for _ in 0..packets {
        let k = rng.below(100);
        seq.push(if k < 10 {
            ((first_unsolicited + rng.below(unsolicited)) as u32, 0)
        } else if k < 55 {
            ((3 * rng.below(conns) + 1) as u32, out_port)
        } else {
            ((3 * rng.below(conns) + 2) as u32, in_port)
        });
    }
    let mut flows = vec![
        format!("priority=10,tcp,nw_src=10.0.0.0/8,actions=output:{out_port}"),
        "priority=10,tcp,nw_dst=10.0.0.0/8,actions=drop".to_string(),
    ];
    let progs = if prog {
        flows.push(format!(
            "priority=20,tcp,nw_src=10.0.0.0/8,filter_prog=1,actions=output:{out_port}"
        ));
        flows.push(format!(
            "priority=20,tcp,nw_dst=10.0.0.0/8,filter_prog=1,actions=output:{in_port}"
        ));
        vec![(1, firewall_prog((2 * conns).max(1024) as u32))]
    } else {
        flows.extend(tuples.iter().map(|&(l, r, lp, rp)| {
            format!(
                "priority=20,tcp,nw_src={},nw_dst={},tp_src={rp},tp_dst={lp},actions=output:{in_port}",
                ip_text(r),
                ip_text(l)
            )
        }));
        Vec::new()
    };
    Workload {
        family: if prog { "fwprog" } else { "fwof" },
        rules: flows.len(),
        flows,
        frames,
        seq,
        warm,
        notes: Vec::new(),
        progs,
    }
}

fn port_of(i: usize) -> u32 {
    OUT_PORTS[i % OUT_PORTS.len()]
}

/// The destination MAC of `l2`'s rule `i` (and of its twins').
fn mac(i: usize) -> [u8; 6] {
    let b = (i as u32 + 1).to_be_bytes();
    [0x02, 0x00, b[0], b[1], b[2], b[3]]
}

/// The /24 of `l3`'s rule `i` (and of its twins'): distinct prefixes from
/// 16.0.0.0 upwards.
fn net(i: usize) -> u32 {
    0x1000_0000u32 + ((i as u32) << 8)
}

fn l2(n: usize, packets: usize, rng: &mut Rng) -> Workload {
    let flows = (0..n)
        .map(|i| format!("dl_dst={},actions=output:{}", mac_text(&mac(i)), port_of(i)))
        .collect();
    let frames =
        (0..n).map(|i| Headers { dl_dst: mac(i), ..Headers::udp(0x0a00_0001) }.frame()).collect();
    let warm = packets.min(n);
    Workload {
        family: "l2",
        rules: n,
        flows,
        frames,
        seq: cycle(rng, n, warm + packets, port_of),
        warm,
        notes: Vec::new(),
        progs: Vec::new(),
    }
}

/// `l2`'s rules written as POF fields: the destination MAC as the frame's
/// bits {0, 48} (K_POFVS's form; same frames and order as `l2`).
fn pofmac(n: usize, packets: usize, rng: &mut Rng) -> Workload {
    let mut w = l2(n, packets, rng);
    w.family = "pofmac";
    w.flows = (0..n)
        .map(|i| format!("pof(0,48)=0x0200{:08x},actions=output:{}", i + 1, port_of(i)))
        .collect();
    w
}

/// `l3`'s rules written as POF fields: the ethertype as bits {96, 16}
/// and the destination's /24 as bits {240, 24} (same frames and order as
/// `l3`).
fn pofnet(n: usize, packets: usize, rng: &mut Rng) -> Workload {
    let mut w = l3(n, packets, rng);
    w.family = "pofnet";
    w.flows = (0..n)
        .map(|i| {
            let net = 0x1000_0000u32 + ((i as u32) << 8);
            format!(
                "pof(96,16)=0x0800,pof(240,24)=0x{:06x},actions=output:{}",
                net >> 8,
                port_of(i)
            )
        })
        .collect();
    w
}

fn l3(n: usize, packets: usize, rng: &mut Rng) -> Workload {
    l3_with(n, packets, rng, "l3", "")
}

/// `l3` with a router's rewrite before the output: new source and
/// destination MACs and a TTL decrement, header edits that keep the
/// frame's layout (the pipeline need not re-parse after them).
fn route(n: usize, packets: usize, rng: &mut Rng) -> Workload {
    let edits = "set_field:02:00:00:00:00:fe->eth_src,set_field:02:00:00:00:01:01->eth_dst,\
                 dec_ttl,";
    l3_with(n, packets, rng, "route", edits)
}

fn l3_with(n: usize, packets: usize, rng: &mut Rng, family: &'static str, edits: &str) -> Workload {
    // One host per prefix.
    let flows = (0..n)
        .map(|i| format!("ip,nw_dst={}/24,actions={edits}output:{}", ip_text(net(i)), port_of(i)))
        .collect();
    let frames =
        (0..n).map(|i| Headers::udp(net(i) | (1 + (i as u32 * 7) % 254)).frame()).collect();
    let warm = packets.min(n);
    Workload {
        family,
        rules: n,
        flows,
        frames,
        seq: cycle(rng, n, warm + packets, port_of),
        warm,
        notes: Vec::new(),
        progs: Vec::new(),
    }
}

/// A route of the `twotable` case.
struct Route {
    net: u32,
    len: u8,
    port: u32,
}

impl Route {
    fn mask(&self) -> u32 {
        u32::MAX.checked_shl(32 - u32::from(self.len)).unwrap_or(0)
    }

    fn contains(&self, a: u32) -> bool {
        a & self.mask() == self.net
    }
}

fn twotable(packets: usize, rng: &mut Rng, prog: bool) -> Workload {
    // Routes: 101 /8s, and 69 /16s of which about half refine a /8.
    let mut octets: Vec<u32> = (1..=223).filter(|&o| o != 127).collect();
    rng.shuffle(&mut octets);
    let (covered, free) = octets.split_at(101);
    let mut routes: Vec<Route> = covered
        .iter()
        .enumerate()
        .map(|(k, &o)| Route { net: o << 24, len: 8, port: port_of(k) })
        .collect();
    let mut seen16 = HashSet::new();
    while seen16.len() < 69 {
        let first = if seen16.len() % 2 == 0 {
            covered[rng.below(covered.len())]
        } else {
            free[rng.below(free.len())]
        };
        let net = (first << 24) | ((rng.below(256) as u32) << 16);
        if seen16.insert(net) {
            routes.push(Route { net, len: 16, port: port_of(routes.len() + 1) });
        }
    }
    // ACL: 500 distinct (protocol, port) pairs, popular services first.
    let mut acl: Vec<(u8, u16)> = vec![(6, 80), (6, 443), (17, 53), (6, 22), (17, 123), (17, 443)];
    let mut allowed: HashSet<(u8, u16)> = acl.iter().copied().collect();
    while acl.len() < 500 {
        let proto = if rng.below(5) < 3 { 6 } else { 17 };
        let port = 1 + rng.below(65_535) as u16;
        if allowed.insert((proto, port)) {
            acl.push((proto, port));
        }
    }
    let mut flows: Vec<String> = routes
        .iter()
        .map(|r| {
            format!(
                "table=0,priority={},ip,nw_dst={}/{},actions=write_actions(output:{}),goto_table:1",
                r.len,
                ip_text(r.net),
                r.len,
                r.port
            )
        })
        .collect();
    flows.extend(acl.iter().map(|&(proto, port)| {
        let p = if proto == 6 { "tcp" } else { "udp" };
        // No instructions: the action set (the route's output) is executed.
        let guard = if prog { "filter_prog=1," } else { "" };
        format!("table=1,priority=10,{p},tp_dst={port},{guard}actions=drop")
    }));
    flows.push("table=1,priority=0,actions=clear_actions".into());

    // The model: longest matching route, then the ACL.
    let expect = |h: &Headers| -> u32 {
        let best = routes.iter().filter(|r| r.contains(h.nw_dst)).max_by_key(|r| r.len);
        match best {
            Some(r) if allowed.contains(&(h.proto, h.tp_dst)) => r.port,
            _ => 0,
        }
    };
    let new_conv = |rng: &mut Rng| -> Headers {
        let nw_dst = if rng.below(10) == 0 {
            rng.next_u64() as u32
        } else {
            let r = &routes[rng.below(routes.len())];
            r.net | (rng.next_u64() as u32 & !r.mask())
        };
        let (proto, tp_dst) = if rng.below(100) < 15 {
            (if rng.below(2) == 0 { 6 } else { 17 }, rng.below(65_536) as u16)
        } else {
            // Skewed towards the first (popular) entries.
            let u = rng.unit();
            acl[((u * u * u * acl.len() as f64) as usize).min(acl.len() - 1)]
        };
        Headers {
            dl_src: HOST_MAC,
            dl_dst: SWITCH_MAC,
            nw_src: 0x6400_0000 | (rng.next_u64() as u32 & 0x00ff_ffff),
            nw_dst,
            proto,
            tp_src: 1024 + rng.below(64_512) as u16,
            tp_dst,
        }
    };
    let conv_len = |rng: &mut Rng| -> u64 {
        let x = (LEN_MU + LEN_SIGMA * rng.normal()).exp().ceil();
        (x as u64).clamp(1, MAX_CONV_LEN)
    };

    let warm = packets / 4;
    let total = warm + packets;
    let mut frames = Vec::new();
    let mut lens = Vec::new();
    // Active conversations: (frame index, expected port, packets left).
    let mut active: Vec<(u32, u32, u64)> = Vec::with_capacity(ACTIVE_CONVERSATIONS);
    let mut seq = Vec::with_capacity(total);
    let mut start = |rng: &mut Rng, frames: &mut Vec<[u8; FRAME_LEN]>| {
        let h = new_conv(rng);
        let len = conv_len(rng);
        lens.push(len);
        frames.push(h.frame());
        ((frames.len() - 1) as u32, expect(&h), len)
    };
    for _ in 0..ACTIVE_CONVERSATIONS {
        active.push(start(rng, &mut frames));
    }
    while seq.len() < total {
        let k = rng.below(active.len());
        if let Some(c) = active.get_mut(k) {
            seq.push((c.0, c.1));
            c.2 -= 1;
            if c.2 == 0 {
                *c = start(rng, &mut frames);
            }
        }
    }
    let mut sorted = lens.clone();
    sorted.sort_unstable();
    let mean = sorted.iter().sum::<u64>() as f64 / sorted.len().max(1) as f64;
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0);
    let max = sorted.last().copied().unwrap_or(0);
    let fwd = seq[warm..].iter().filter(|s| s.1 != 0).count();
    let notes = vec![format!(
        "twotable: {} routes ({} /8 + {} /16) + {} ACL ports and default deny; trace: {} \
         conversations (length mean {mean:.2}, median {median}, max {max}), {} in flight, \
         {:.1}% of packets forwarded",
        routes.len(),
        routes.iter().filter(|r| r.len == 8).count(),
        routes.iter().filter(|r| r.len == 16).count(),
        acl.len(),
        lens.len(),
        ACTIVE_CONVERSATIONS,
        100.0 * fwd as f64 / packets.max(1) as f64,
    )];
    Workload {
        family: if prog { "twotableprog" } else { "twotable" },
        rules: flows.len(),
        flows,
        frames,
        seq,
        warm,
        notes,
        progs: if prog { vec![(1, return_one())] } else { Vec::new() },
    }
}

/// Counts what the pipeline transmits and checks each output against the
/// port the next forwarded packet of the current burst must leave on.
#[derive(Default)]
struct CheckTx {
    /// Ports the burst's forwarded packets must go to, in order.
    expect: Vec<u32>,
    /// Outputs seen in this burst.
    next: usize,
    frames: u64,
    bytes: u64,
    /// Outputs to another port than expected (or more than expected).
    wrong: u64,
}

impl CheckTx {
    fn start(&mut self, ports: impl Iterator<Item = u32>) {
        self.expect.clear();
        self.expect.extend(ports.filter(|&p| p != 0));
        self.next = 0;
    }
}

impl Tx for CheckTx {
    fn transmit(&mut self, port: u32, _queue: Option<u32>, frame: &[u8]) {
        self.frames += 1;
        self.bytes += frame.len() as u64;
        if self.expect.get(self.next) != Some(&port) {
            self.wrong += 1;
        }
        self.next += 1;
    }
}

/// What one pass over part of a workload did.
#[derive(Default)]
struct Pass {
    packets: u64,
    /// Packets that should have been transmitted (once each).
    expected: u64,
    elapsed: Duration,
    async_msgs: u64,
    cut_short: bool,
}

/// What a pass forwards through: the pipeline's own worker (one
/// thread), or a shared pipeline with one of its workers (`--threads`).
enum Through<'a> {
    Owner(&'a mut Pipeline),
    Shared(&'a Pipeline, &'a mut Worker),
}

impl Through<'_> {
    fn process(&mut self, frame: &[u8], tx: &mut CheckTx) {
        match self {
            Through::Owner(p) => p.process(IN_PORT, frame, tx),
            Through::Shared(p, w) => p.process_with(w, IN_PORT, frame, tx),
        }
    }

    fn process_burst(&mut self, frames: &[&[u8]], tx: &mut CheckTx) {
        match self {
            Through::Owner(p) => p.process_burst(IN_PORT, frames, tx),
            Through::Shared(p, w) => p.process_burst_with(w, IN_PORT, frames, tx),
        }
    }

    /// Asynchronous messages (packet-ins) queued since the last call.
    fn take_async(&mut self) -> u64 {
        match self {
            Through::Owner(p) => p.take_async().len() as u64,
            Through::Shared(_, w) => w.upcalls.drain(..).count() as u64,
        }
    }
}

/// Run `seq` through `p`, timing only the `process` loops.
fn drive(
    mut p: Through<'_>,
    frames: &[[u8; FRAME_LEN]],
    seq: &[(u32, u32)],
    tx: &mut CheckTx,
    limit: Duration,
    burst: usize,
    pb: &ProgressBar,
) -> Pass {
    let mut pass = Pass::default();
    let mut refs: Vec<&[u8]> = Vec::with_capacity(burst);
    for chunk in seq.chunks(CHUNK) {
        let t0 = Instant::now();
        if burst <= 1 {
            for &(f, port) in chunk {
                tx.start(std::iter::once(port));
                // In bounds: `check_indices` ran before.
                p.process(&frames[f as usize], tx);
            }
        } else {
            for b in chunk.chunks(burst) {
                tx.start(b.iter().map(|s| s.1));
                refs.clear();
                // In bounds: `check_indices` ran before.
                refs.extend(b.iter().map(|&(f, _)| &frames[f as usize][..]));
                p.process_burst(&refs, tx);
            }
        }
        pass.elapsed += t0.elapsed();
        pass.packets += chunk.len() as u64;
        pass.expected += chunk.iter().filter(|s| s.1 != 0).count() as u64;
        pass.async_msgs += p.take_async();
        pb.inc(chunk.len() as u64);
        if pass.elapsed >= limit {
            pass.cut_short = pass.packets < seq.len() as u64;
            break;
        }
    }
    pass
}

/// The outcome check: every expected output exactly once, nothing else.
fn verify(case: &str, what: &str, pass: &Pass, tx: &CheckTx) -> Result<()> {
    if tx.wrong != 0 || tx.frames != pass.expected || pass.async_msgs != 0 {
        bail!(
            "{case}: misforwarded during {what} ({} packets): {} frames sent to the wrong \
             port, {} frames sent where {} were expected, {} unexpected asynchronous messages",
            pass.packets,
            tx.wrong,
            tx.frames,
            pass.expected,
            pass.async_msgs
        );
    }
    Ok(())
}

fn build_pipeline(
    w: &Workload,
    datapath: Datapath,
    cache: CacheMode,
    threads: usize,
) -> Result<Pipeline> {
    // The switch's setting: table code is built on the compiler thread
    // (`build_pipeline` waits for it before the timed run).
    let jit = JitOptions { background: true, ..JitOptions::default() };
    let compiler = Some(sluice_datapath::compiler());
    let cfg = Config { datapath, cache, jit, compiler, workers: threads, ..Config::default() };
    let shards = cfg.shards();
    let mut p = Pipeline::new(cfg);
    for (id, prog) in &w.progs {
        p.filters
            .insert(*id, prog.clone(), shards)
            .map_err(|e| anyhow::anyhow!("bench program {id}: {e}"))?;
    }
    for n in std::iter::once(IN_PORT).chain(OUT_PORTS) {
        let mac = [0x02, 0, 0, 0, 0xaa, n as u8];
        p.ports_mut()
            .add(Port { port_no: n, hw_addr: mac, name: format!("p{n}"), ..Port::default() }, 0);
    }
    for text in &w.flows {
        let spec = parse_flow(text, Usage::Add)
            .map_err(|e| anyhow::anyhow!("bench flow: {}", e.render(text)))?;
        p.flow_mod(&spec.to_flow_mod(fc::ADD))
            .map_err(|e| anyhow::anyhow!("bench flow rejected: {e}: {text}"))?;
    }
    p.take_async();
    let start = std::time::Instant::now();
    while p.code_pending() {
        if start.elapsed() > Duration::from_secs(60) {
            bail!("{}: compiled table code not ready after 60 s", w.family);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(p)
}

fn check_indices(w: &Workload) -> Result<()> {
    if w.seq.iter().any(|&(f, _)| f as usize >= w.frames.len()) {
        bail!("internal error: {} packet order names a missing frame", w.family);
    }
    Ok(())
}

/// Timed result of one case.
struct Measured {
    packets: u64,
    elapsed: Duration,
}

/// The P4 router with `route`'s routes: `Workload::flows` are
/// `sluice p4 ctl` command lines.
fn p4_ipv4(n: usize, packets: usize, rng: &mut Rng) -> Workload {
    let mut w = route(n, packets, rng);
    w.family = "p4-ipv4";
    w.flows = (0..n)
        .map(|i| {
            format!(
                "table_add routes forward {}/24 => 02:00:00:00:01:01 02:00:00:00:00:fe {}",
                ip_text(net(i)),
                port_of(i)
            )
        })
        .collect();
    w
}

/// The P4 L2 switch with `l2`'s MACs; the frames' source is learned.
fn p4_mac(n: usize, packets: usize, rng: &mut Rng) -> Workload {
    let mut w = l2(n, packets, rng);
    w.family = "p4-mac";
    w.flows = vec![format!("table_add learned known {} =>", mac_text(&HOST_MAC))];
    w.flows.extend(
        (0..n).map(|i| {
            format!("table_add forwarding forward {} => {}", mac_text(&mac(i)), port_of(i))
        }),
    );
    w
}

/// A P4 case: entries installed with `sluice_p4::ctl`, frames handed
/// over `burst` at a time as a port's receive burst (`Target::burst_into`;
/// one at a time with `packet_into` when `burst` ≤ 1), every output
/// checked against the workload's model.
fn run_p4_case(
    name: &str,
    w: &Workload,
    limit: Duration,
    cache: Option<CacheMode>,
    indexed: bool,
    burst: usize,
) -> Result<Option<(Measured, Vec<String>)>> {
    use sluice_p4::engines::{CacheMode as P4Cache, Engine, Fallback};
    use sluice_p4::target::Target as _;
    let (file, text) = match w.family {
        "p4-ipv4" => ("router.p4", include_str!("../../../../examples/p4/router.p4")),
        "p4-mac" => ("l2switch.p4", include_str!("../../../../examples/p4/l2switch.p4")),
        other => bail!("internal error: no P4 program for `{other}`"),
    };
    let loaded =
        sluice_p4::parse::load_str(file, text).map_err(|e| anyhow::anyhow!("{}", e.render()))?;
    let (mut interp, fallback) = Engine::load(&loaded, cache.is_none())
        .map_err(|d| anyhow::anyhow!("{}", loaded.sources.render(&d)))?;
    if let (Some(_), Some(Fallback::Refused(d))) = (cache, &fallback) {
        // Not a failure: the case says what the lowering does not take yet.
        println!("# {name}: not compiled into the core: {}", d.message);
        return Ok(None);
    }
    if let Engine::Compiled(c) = &mut interp {
        c.set_indexed(indexed);
    }
    interp.set_cache_mode(cache.unwrap_or(P4Cache::Off));
    let t_install = Instant::now();
    for line in &w.flows {
        sluice_p4::ctl::execute(&mut interp, line).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    }
    let install = t_install.elapsed();
    let (warm_seq, timed_seq) = w.seq.split_at(w.warm.min(w.seq.len()));
    let mut notes = Vec::new();
    let mut drive_p4 = |seq: &[(u32, u32)], what: &str| -> Result<Pass> {
        let mut pass = Pass::default();
        // The output ports (reused: the frames are lent, not copied).
        let mut got: Vec<u32> = Vec::with_capacity(burst);
        let mut want: Vec<u32> = Vec::with_capacity(burst);
        let mut refs: Vec<&[u8]> = Vec::with_capacity(burst);
        let start = Instant::now();
        for chunk in seq.chunks(CHUNK) {
            if burst <= 1 {
                for &(i, want) in chunk {
                    got.clear();
                    interp
                        .packet_into(IN_PORT, &w.frames[i as usize], &mut |p, f| {
                            got.push(p);
                            std::hint::black_box(f);
                        })
                        .map_err(|e| anyhow::anyhow!("{name}: {what}: {e}"))?;
                    let ok = if want == 0 { got.is_empty() } else { got == [want] };
                    if !ok {
                        bail!("{name}: {what}: frame {i} went to {got:?}, not port {want}");
                    }
                }
            } else {
                for b in chunk.chunks(burst) {
                    got.clear();
                    refs.clear();
                    refs.extend(b.iter().map(|&(i, _)| &w.frames[i as usize][..]));
                    // The forwarded frames' ports, in order (as `CheckTx`).
                    want.clear();
                    want.extend(b.iter().map(|s| s.1).filter(|&p| p != 0));
                    let mut bad = None;
                    interp.burst_into(
                        IN_PORT,
                        &refs,
                        &mut |p, f| {
                            got.push(p);
                            std::hint::black_box(f);
                        },
                        &mut |i, e| {
                            bad.get_or_insert((i, e));
                        },
                    );
                    if let Some((i, e)) = bad {
                        bail!("{name}: {what}: frame {} refused: {e}", b[i].0);
                    }
                    if got != want {
                        bail!("{name}: {what}: a burst's frames went to {got:?}, not {want:?}");
                    }
                }
            }
            pass.packets += chunk.len() as u64;
            if start.elapsed() >= limit {
                pass.cut_short = true;
                break;
            }
        }
        pass.elapsed = start.elapsed();
        Ok(pass)
    };
    let warm = drive_p4(warm_seq, "warm-up")?;
    let timed =
        if warm.cut_short { Pass::default() } else { drive_p4(timed_seq, "the timed run")? };
    if install >= Duration::from_secs(1) {
        notes.push(format!(
            "{name}: installing {} entries took {:.1}s",
            w.flows.len(),
            install.as_secs_f64()
        ));
    }
    cut_short_notes(&mut notes, name, limit, (&warm, warm_seq.len()), (&timed, timed_seq.len()));
    if warm.cut_short {
        notes.push(format!("{name}: the rate is the warm-up's"));
    }
    if let (Engine::Compiled(c), Some(m)) = (&interp, cache) {
        if m != CacheMode::Off {
            notes.push(cache_note(name, &c.cache_stats(), warm.packets + timed.packets));
        }
        if m == CacheMode::Auto {
            notes.push(choices_note(name, &c.cache_choices()));
        }
    }
    let m = if warm.cut_short { &warm } else { &timed };
    Ok(Some((Measured { packets: m.packets, elapsed: m.elapsed }, notes)))
}

/// What `auto` chose: rounds won by each mode, the last round's cycles
/// per packet, and the mode at the end.
fn choices_note(name: &str, c: &sluice_pipeline::CacheChoices) -> String {
    let per = |k: u64| k as f64 / 1024.0;
    format!(
        "{name}: auto chose on/megaflow/off in {}/{}/{} rounds (last round {:.0}/{:.0}/{:.0} \
         cycles a packet), ending in {}",
        c.won[0],
        c.won[1],
        c.won[2],
        per(c.cost[0]),
        per(c.cost[1]),
        per(c.cost[2]),
        cache_name(c.now)
    )
}

/// Where a case's `packets` (warm-up and timed run together) went
/// through the caches.
fn cache_note(name: &str, c: &sluice_pipeline::CacheStats, packets: u64) -> String {
    let all = packets.max(1) as f64;
    let pct = |n: u64| 100.0 * n as f64 / all;
    format!(
        "{name}: exact hits {:.1}% ({:.1}% found by raw header), megaflow hits {:.1}%, \
         slow path {:.1}% ({} installs, {} with a composed program), {} megaflows under {} masks",
        pct(c.exact_hits),
        pct(c.raw_hits),
        pct(c.megaflow_hits),
        pct(c.installs + c.uncacheable),
        c.installs,
        c.composed,
        c.megaflow_entries,
        c.megaflow_masks
    )
}

fn run_case(
    name: &str,
    w: &Workload,
    datapath: Datapath,
    cache: CacheMode,
    limit: Duration,
    burst: usize,
) -> Result<(Measured, Vec<String>)> {
    let pb = ProgressBar::new(w.seq.len() as u64);
    pb.set_style(
        ProgressStyle::with_template(
            "{msg:18} [{bar:30}] {human_pos:>10}/{human_len} pkts {per_sec:>14} {elapsed}",
        )
        .context("progress bar template")?
        .progress_chars("=> "),
    );
    pb.set_message(format!("{name} (installing {} flows)", w.flows.len()));
    pb.tick();
    let t_install = Instant::now();
    let mut p = build_pipeline(w, datapath, cache, 1)?;
    let install = t_install.elapsed();
    pb.set_message(name.to_string());
    let (warm_seq, timed_seq) = w.seq.split_at(w.warm.min(w.seq.len()));
    let mut tx = CheckTx::default();
    let warm = drive(Through::Owner(&mut p), &w.frames, warm_seq, &mut tx, limit, burst, &pb);
    let warm_res = verify(name, "warm-up", &warm, &tx);
    let mut tx = CheckTx::default();
    let timed = if warm_res.is_ok() {
        pb.set_position(warm_seq.len() as u64);
        drive(Through::Owner(&mut p), &w.frames, timed_seq, &mut tx, limit, burst, &pb)
    } else {
        Pass::default()
    };
    pb.finish_and_clear();
    warm_res?;
    verify(name, "the timed run", &timed, &tx)?;
    std::hint::black_box(tx.bytes);
    let mut notes = Vec::new();
    if cache != CacheMode::Off {
        notes.push(cache_note(name, &p.cache_stats(), warm.packets + timed.packets));
    }
    if cache == CacheMode::Auto {
        notes.push(choices_note(name, &p.cache_choices()));
    }
    if install >= Duration::from_secs(1) {
        notes.push(format!(
            "{name}: installing {} flows took {:.1}s",
            w.flows.len(),
            install.as_secs_f64()
        ));
    }
    cut_short_notes(&mut notes, name, limit, (&warm, warm_seq.len()), (&timed, timed_seq.len()));
    Ok((Measured { packets: timed.packets, elapsed: timed.elapsed }, notes))
}

/// [`run_case`] on `threads` threads forwarding through one pipeline,
/// each with a worker of its own (caches, counter shard), as the daemon's
/// workers do: each thread warms its caches on the warm-up part, then all
/// start together (a barrier) on the timed part, each from its own offset
/// so they do not walk the same packets in step. Every output is checked
/// as with one thread. The rate is all threads' timed packets over the
/// longest thread's wall time from the common start.
fn run_case_threads(
    name: &str,
    w: &Workload,
    datapath: Datapath,
    cache: CacheMode,
    limit: Duration,
    burst: usize,
    threads: usize,
) -> Result<(Measured, Vec<String>)> {
    let pb = ProgressBar::hidden();
    let mut p = build_pipeline(w, datapath, cache, threads)?;
    let mut workers: Vec<Worker> = (0..threads).map(|_| p.worker()).collect();
    let p = &p;
    let (warm_seq, timed_seq) = w.seq.split_at(w.warm.min(w.seq.len()));
    let start = std::sync::Barrier::new(threads);
    let results: Vec<Result<(Pass, Duration, sluice_pipeline::CacheStats)>> =
        std::thread::scope(|s| {
            let handles: Vec<_> = workers
                .iter_mut()
                .enumerate()
                .map(|(i, wk)| {
                    let (pb, start) = (&pb, &start);
                    s.spawn(move || {
                        let mut tx = CheckTx::default();
                        let warm = drive(
                            Through::Shared(p, wk),
                            &w.frames,
                            warm_seq,
                            &mut tx,
                            limit,
                            burst,
                            pb,
                        );
                        let warm_res = verify(name, &format!("thread {i}'s warm-up"), &warm, &tx);
                        let k = timed_seq.len() * i / threads;
                        let seq: Vec<(u32, u32)> =
                            timed_seq[k..].iter().chain(&timed_seq[..k]).copied().collect();
                        // Every thread reaches the barrier, even after a
                        // failed warm-up, so none waits forever.
                        start.wait();
                        warm_res?;
                        let t0 = Instant::now();
                        let mut tx = CheckTx::default();
                        let timed = drive(
                            Through::Shared(p, wk),
                            &w.frames,
                            &seq,
                            &mut tx,
                            limit,
                            burst,
                            pb,
                        );
                        let wall = t0.elapsed();
                        verify(name, &format!("thread {i}'s timed run"), &timed, &tx)?;
                        std::hint::black_box(tx.bytes);
                        Ok((timed, wall, wk.cache_stats()))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| bail!("{name}: a bench thread panicked")))
                .collect()
        });
    let mut packets = 0;
    let mut wall = Duration::ZERO;
    let mut notes = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        let (pass, t, c) = r?;
        packets += pass.packets;
        wall = wall.max(t);
        let secs = t.as_secs_f64().max(1e-9);
        let mut line = format!(
            "{name}: thread {i}: {} packets, {:.3} Mpps on its own",
            pass.packets,
            pass.packets as f64 / secs / 1e6
        );
        if cache != CacheMode::Off {
            let all = pass.packets.max(1) as f64;
            line += &format!(
                ", exact hits {:.1}%, megaflow hits {:.1}% (warm-up included)",
                100.0 * c.exact_hits as f64 / all,
                100.0 * c.megaflow_hits as f64 / all
            );
        }
        if pass.cut_short {
            line += &format!(", stopped at --max-seconds {:.0}", limit.as_secs_f64());
        }
        notes.push(line);
    }
    Ok((Measured { packets, elapsed: wall }, notes))
}

/// The `#` lines for a warm-up or timed run stopped at `--max-seconds`
/// (each run with the length it was meant to have).
fn cut_short_notes(
    notes: &mut Vec<String>,
    name: &str,
    limit: Duration,
    warm: (&Pass, usize),
    timed: (&Pass, usize),
) {
    // A long warm-up is mostly the slow path (lookups, composing and
    // installing cache entries): its cost a packet, all packets counted.
    let (w, _) = warm;
    if w.elapsed >= Duration::from_millis(500) && w.packets > 0 {
        notes.push(format!(
            "{name}: warm-up of {} packets took {:.2}s ({:.2} us a packet)",
            w.packets,
            w.elapsed.as_secs_f64(),
            w.elapsed.as_secs_f64() * 1e6 / w.packets as f64
        ));
    }
    for (what, (p, len)) in [("warm-up stopped", warm), ("stopped", timed)] {
        if p.cut_short {
            notes.push(format!(
                "{name}: {what} at the {}s limit after {} of {len} packets",
                limit.as_secs_f64(),
                p.packets
            ));
        }
    }
}

/// The family/size list, in output order.
/// Every (family, rule count) case: the sized families at `rules` (by
/// default [`SIZES`], and 10 and 1k for `route`).
fn families(rules: &[usize]) -> Vec<(&'static str, usize)> {
    let mut sizes = rules.to_vec();
    sizes.sort_unstable();
    sizes.dedup();
    let (sizes, route) =
        if sizes.is_empty() { (SIZES.to_vec(), vec![10, 1000]) } else { (sizes.clone(), sizes) };
    let mut v = vec![("1rule", 1)];
    for fam in ["l2", "l3", "pofmac", "pofnet"] {
        v.extend(sizes.iter().map(|&n| (fam, n)));
    }
    v.extend(route.iter().map(|&n| ("route", n)));
    v.extend(route.iter().map(|&n| ("p4-ipv4", n)));
    v.extend(sizes.iter().map(|&n| ("p4-mac", n)));
    v.push(("twotable", 0));
    v.push(("twotableprog", 0));
    let fw: Vec<usize> = if rules.is_empty() {
        vec![FW_CONNECTIONS]
    } else {
        sizes.iter().copied().filter(|&n| (1..=100_000).contains(&n)).collect()
    };
    for n in fw {
        v.push(("fwprog", n));
        v.push(("fwof", n));
    }
    // Oko's chains: 1 to 10 tables (or the `--rules` counts up to 64),
    // without and with a program per rule.
    let chains: Vec<usize> = if rules.is_empty() {
        OKO_CHAINS.to_vec()
    } else {
        sizes.iter().copied().filter(|&n| n <= 64).collect()
    };
    for n in chains {
        v.push(("oko", n));
        v.push(("okoprog", n));
    }
    v
}

fn cache_name(c: CacheMode) -> &'static str {
    match c {
        CacheMode::On => "on",
        CacheMode::Megaflow => "megaflow",
        CacheMode::Off => "off",
        CacheMode::Auto => "auto",
    }
}

pub fn run(a: Args) -> Result<()> {
    let datapath = match a.datapath {
        DatapathArg::Reference => Datapath::Reference,
        DatapathArg::Classifier => Datapath::Classifier,
        DatapathArg::Compiled => Datapath::Compiled,
    };
    let caches: Vec<CacheMode> = match a.cache {
        CacheArg::On => vec![CacheMode::On],
        CacheArg::Megaflow => vec![CacheMode::Megaflow],
        CacheArg::Off => vec![CacheMode::Off],
        CacheArg::Auto => vec![CacheMode::Auto],
        CacheArg::All => vec![CacheMode::On, CacheMode::Megaflow, CacheMode::Off, CacheMode::Auto],
    };
    let patterns: Vec<&str> = match &a.cases {
        Some(s) => s.split(',').map(str::trim).filter(|t| !t.is_empty()).collect(),
        None => Vec::new(),
    };
    let selected = |name: &str| patterns.is_empty() || patterns.iter().any(|p| name.contains(p));
    // `None`: the P4 reference interpreter (P4 families only).
    type Runs = Vec<Option<CacheMode>>;
    let plan: Vec<((&str, usize), Runs)> = families(&a.rules)
        .into_iter()
        .map(|f| {
            let mut modes = caches
                .iter()
                .copied()
                .filter(|&c| selected(&format!("{}/{}", f.0, cache_name(c))))
                .map(Some)
                .collect::<Vec<_>>();
            if f.0.starts_with("p4-") && selected(&format!("{}/interp", f.0)) {
                modes.push(None);
            }
            (f, modes)
        })
        .filter(|(_, m)| !m.is_empty())
        .collect();
    if plan.is_empty() {
        bail!(
            "no case matches --cases `{}` (cases: 1rule, l2, l3, pofmac, pofnet, route, twotable, \
             twotableprog, oko, okoprog, fwprog, fwof, p4-ipv4, p4-mac, \
             each as NAME/on, \
             NAME/megaflow, NAME/off; the P4 ones also as NAME/interp)",
            a.cases.as_deref().unwrap_or_default()
        );
    }
    let packets = usize::try_from(a.packets).context("--packets too large")?;
    let limit = Duration::from_secs_f64(a.max_seconds);
    let burst = usize::from(a.burst);
    let threads = usize::from(a.threads);
    println!(
        "# sluice bench: datapath={:?} packets={} seed={} frame={}B in_port={IN_PORT} burst={burst} \
         threads={threads}",
        datapath,
        a.packets,
        a.seed,
        FRAME_LEN + 4
    );
    println!("# CASE RULES MPPS NS_PER_PKT");
    let mut failed = Vec::new();
    for ((family, size), modes) in plan {
        // Each workload gets its own stream so a filter does not change it.
        // The POF twins share their OXM family's stream: same packet order.
        let stream = match family {
            "pofmac" => "l2",
            "pofnet" => "l3",
            "twotableprog" => "twotable",
            "fwof" => "fwprog",
            "p4-ipv4" => "route",
            "p4-mac" => "l2",
            f => f,
        };
        let mut rng = Rng(a.seed ^ (size as u64).rotate_left(32) ^ stream.len() as u64);
        let w = match family {
            "1rule" => one_rule(packets),
            "l2" => l2(size, packets, &mut rng),
            "l3" => l3(size, packets, &mut rng),
            "route" => route(size, packets, &mut rng),
            "pofmac" => pofmac(size, packets, &mut rng),
            "pofnet" => pofnet(size, packets, &mut rng),
            "oko" => oko(size, false, packets),
            "okoprog" => oko(size, true, packets),
            "twotable" => twotable(packets, &mut rng, false),
            "twotableprog" => twotable(packets, &mut rng, true),
            "fwprog" => firewall(size, true, packets, &mut rng),
            "fwof" => firewall(size, false, packets, &mut rng),
            "p4-ipv4" => p4_ipv4(size, packets, &mut rng),
            "p4-mac" => p4_mac(size, packets, &mut rng),
            other => bail!("internal error: no workload `{other}`"),
        };
        check_indices(&w)?;
        for n in &w.notes {
            println!("# {n}");
        }
        for cache in modes {
            let p4 = w.family.starts_with("p4-");
            let name = format!("{}/{}", w.family, cache.map_or("interp", cache_name));
            let r = match cache {
                Some(c) if !p4 && threads > 1 => {
                    run_case_threads(&name, &w, datapath, c, limit, burst, threads)
                }
                Some(c) if !p4 => run_case(&name, &w, datapath, c, limit, burst),
                c => match run_p4_case(&name, &w, limit, c, datapath != Datapath::Reference, burst)
                {
                    Ok(Some(r)) => Ok(r),
                    Ok(None) => continue,
                    Err(e) => Err(e),
                },
            };
            match r {
                Ok((m, notes)) => {
                    let secs = m.elapsed.as_secs_f64().max(1e-9);
                    let mpps = m.packets as f64 / secs / 1e6;
                    let ns = secs * 1e9 / m.packets.max(1) as f64;
                    println!("{name:<18} {:>7} {mpps:>9.3} {ns:>9.1}", w.rules);
                    for n in notes {
                        println!("# {n}");
                    }
                }
                Err(e) => {
                    eprintln!("sluice bench: FAILED {e:#}");
                    failed.push(format!("{name} ({} rules)", w.rules));
                }
            }
        }
    }
    if !failed.is_empty() {
        bail!("{} case(s) failed validation: {}", failed.len(), failed.join(", "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_parse() {
        assert_eq!(parse_count("20000"), Ok(20_000));
        assert_eq!(parse_count("500k"), Ok(500_000));
        assert_eq!(parse_count("2M"), Ok(2_000_000));
        assert!(parse_count("0").is_err());
        assert!(parse_count("51M").is_err());
        assert!(parse_count("x").unwrap_err().contains("`x`"));
        assert!(parse_count("k").is_err());
    }

    #[test]
    fn frames_are_well_formed() {
        let h = Headers { proto: 6, tp_dst: 443, ..Headers::udp(0x0a01_0203) };
        let f = h.frame();
        assert_eq!(&f[12..14], &[0x08, 0x00]);
        assert_eq!(f[23], 6);
        assert_eq!(&f[30..34], &[10, 1, 2, 3]);
        assert_eq!(&f[36..38], &443u16.to_be_bytes());
        // The IPv4 header checksums to zero.
        assert_eq!(!fold(sum(&f[14..34])), 0);
        let u = Headers::udp(1).frame();
        assert_eq!(&u[16..18], &46u16.to_be_bytes());
        assert_eq!(&u[38..40], &26u16.to_be_bytes());
    }

    #[test]
    fn routes_contain() {
        let r = Route { net: 0x0a00_0000, len: 8, port: 2 };
        assert!(r.contains(0x0aff_0001));
        assert!(!r.contains(0x0b00_0000));
        let r = Route { net: 0, len: 0, port: 2 };
        assert!(r.contains(0xffff_ffff));
    }

    #[test]
    fn trace_statistics() {
        let w = twotable(200_000, &mut Rng(7), false);
        assert_eq!(w.seq.len(), 250_000);
        assert_eq!(w.rules, 170 + 500 + 1);
        let fwd = w.seq.iter().filter(|s| s.1 != 0).count();
        // Most, not all, packets are forwarded.
        assert!(fwd > w.seq.len() / 2 && fwd < w.seq.len(), "{fwd}");
        let mut rng = Rng(3);
        let mut v: Vec<u64> = (0..200_000)
            .map(|_| {
                ((LEN_MU + LEN_SIGMA * rng.normal()).exp().ceil() as u64).clamp(1, MAX_CONV_LEN)
            })
            .collect();
        v.sort_unstable();
        let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
        assert_eq!(v[v.len() / 2], 4);
        assert!((10.5..13.0).contains(&mean), "{mean}");
    }

    /// The firewall program (verified, then run by the interpreter):
    /// an inside SYN opens a connection both ways; anything else unknown
    /// is refused, an outside SYN opens nothing.
    #[test]
    fn firewall_program_tracks_inside_syns() {
        use sluice_bpf::helpers::Env;
        use sluice_bpf::interp::{self, Input};
        use sluice_bpf::maps::Map;
        let p = firewall_prog(16);
        sluice_bpf::verifier::verify(&p).expect("verifies");
        let mut env = Env::new(vec![Map::new(p.maps[0].clone(), 1).unwrap()]);
        let mut run = |f: &[u8; FRAME_LEN]| {
            interp::run(&p.insns, p.prog_type, &mut env, Input::packet(f)).unwrap()
        };
        let h = |src, dst, sp, dp| Headers {
            dl_src: HOST_MAC,
            dl_dst: SWITCH_MAC,
            nw_src: src,
            nw_dst: dst,
            proto: 6,
            tp_src: sp,
            tp_dst: dp,
        };
        let (l, r) = (0x0a01_0203, 0x5001_0203);
        assert_eq!(run(&h(r, l, 80, 4000).frame()), 0, "reply before any SYN");
        assert_eq!(run(&h(r, l, 80, 4000).syn_frame()), 0, "outside SYN");
        assert_eq!(run(&h(r, l, 80, 4000).frame()), 0, "an outside SYN opened nothing");
        assert_eq!(run(&h(l, r, 4000, 80).syn_frame()), 1, "inside SYN");
        assert_eq!(run(&h(r, l, 80, 4000).frame()), 1, "reply");
        assert_eq!(run(&h(l, r, 4000, 80).frame()), 1, "outbound");
        assert_eq!(run(&h(r, l, 80, 4001).frame()), 0, "another port");
        assert_eq!(run(&Headers::udp(l).frame()), 1, "UDP passes");
        assert_eq!(env.maps[0].entries().len(), 1);
    }

    #[test]
    fn misforwarding_is_an_error() {
        let pass = Pass { packets: 10, expected: 8, ..Pass::default() };
        let ok = CheckTx { frames: 8, ..CheckTx::default() };
        assert!(verify("x", "t", &pass, &ok).is_ok());
        let wrong = CheckTx { frames: 8, wrong: 1, ..CheckTx::default() };
        assert!(verify("x", "t", &pass, &wrong).is_err());
        let missing = CheckTx { frames: 7, ..CheckTx::default() };
        assert!(verify("x", "t", &pass, &missing).unwrap_err().to_string().contains("7 frames"));
        let pin = Pass { async_msgs: 1, ..Pass { packets: 10, expected: 8, ..Pass::default() } };
        assert!(verify("x", "t", &pin, &ok).is_err());
        // The transmit hook itself flags a port other than the expected
        // one, in burst order (dropped packets, port 0, expect nothing),
        // and outputs beyond the burst's forwarded packets.
        let mut tx = CheckTx::default();
        tx.start([2, 0, 3].into_iter());
        tx.transmit(2, None, &[0; 60]);
        tx.transmit(3, None, &[0; 60]);
        assert_eq!((tx.frames, tx.wrong, tx.bytes), (2, 0, 120));
        tx.transmit(3, None, &[0; 60]);
        assert_eq!(tx.wrong, 1);
        tx.start([2, 3].into_iter());
        tx.transmit(3, None, &[0; 60]);
        assert_eq!(tx.wrong, 2);
    }

    #[test]
    fn cycles_cover_every_rule() {
        let w = l3(100, 1000, &mut Rng(1));
        let seen: HashSet<u32> = w.seq[..100].iter().map(|s| s.0).collect();
        assert_eq!(seen.len(), 100);
        assert!(w.seq.iter().all(|&(f, p)| p == port_of(f as usize)));
    }
}
