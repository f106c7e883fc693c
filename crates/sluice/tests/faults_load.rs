//! Faults under load, the slow ones (issue 18 point 2): flow-mod churn
//! with forwarding checked, a million flows installed, and a soak with
//! random flow churn and traffic. Each checks conservation (`faultlab`:
//! every frame the hosts send is forwarded, dropped with a reason counter
//! or sent to the controller, and the hosts receive what was forwarded).
//!
//! They take minutes, so `cargo test` leaves them out (`#[ignore]`, with
//! the reason printed); `scripts/test` runs them in the background while
//! its P4 and os-ken phases run:
//! `cargo test --release -p sluice --test faults_load -- --ignored --test-threads=1`.
//!
//! Durations: `FAULTS_CHURN_SECONDS` (default 60), `SOAK_SECONDS`
//! (default 600). Needs root, `ip`, `sysctl` and `ovs-ofctl`, like
//! `daemon_faults.rs`; namespaces and interfaces are named `fl...` and
//! removed by guards; every loop is bounded in count and time. No
//! assertion is on wall-clock time: rates and times are printed; the one
//! time comparison is a ratio of the switch's CPU times (1M flows against
//! 250k, bound 10x for 4x: linear is 4x, a quadratic step 16x; the first
//! runs measured 6.3x, see docs/BENCHMARKS.md).

use std::time::{Duration, Instant};

use sluice_ofp::message::{flow_mod_command, Message};
use sluice_ofp::ofctl::{parse_flow, Usage};

mod of_controller;
use of_controller::{Controller, OfConn, Watched};

mod faultlab;
mod netlab;
use faultlab::*;

const DPID: u64 = 0xfa18;

fn env_secs(name: &str, default: u64) -> Duration {
    let v = std::env::var(name).ok().map(|s| {
        s.parse::<u64>().unwrap_or_else(|_| panic!("{name}={s:?}: want a number of seconds"))
    });
    Duration::from_secs(v.unwrap_or(default))
}

/// A FLOW_MOD for flow `text` with `command`, encoded (xid 0), and the
/// offset of the `marker` bytes in it (the template value a copy patches).
fn template(text: &str, command: u8, marker: &[u8]) -> (Vec<u8>, usize) {
    let spec = parse_flow(text, Usage::Add).unwrap_or_else(|e| panic!("{text}: {e}"));
    let bytes = Message::FlowMod(spec.to_flow_mod(command)).encode(0);
    let at = bytes
        .windows(marker.len())
        .position(|w| w == marker)
        .unwrap_or_else(|| panic!("{marker:02x?} not in the encoded FLOW_MOD of {text}"));
    assert!(
        bytes[at + 1..].windows(marker.len()).all(|w| w != marker),
        "{marker:02x?} twice in the FLOW_MOD of {text}"
    );
    (bytes, at)
}

/// Churn flows: one per id, matching `dl_dst=02:00:00:0b:HI:LO` of frames
/// from port 1, forwarding them to port 2 like the static flow (so every
/// frame's fate is known whichever flow matches it).
struct Churn {
    add: (Vec<u8>, usize),
    del: (Vec<u8>, usize),
}

const CHURN_MARK: [u8; 6] = [0x02, 0, 0, 0x0b, 0xfa, 0xfa];

fn churn_mac(id: u16) -> [u8; 6] {
    let [hi, lo] = id.to_be_bytes();
    [0x02, 0, 0, 0x0b, hi, lo]
}

impl Churn {
    fn new() -> Churn {
        let text =
            "priority=200,in_port=1,dl_type=0x88b5,dl_dst=02:00:00:0b:fa:fa,actions=output:2";
        Churn {
            add: template(text, flow_mod_command::ADD, &CHURN_MARK),
            del: template(text, flow_mod_command::DELETE_STRICT, &CHURN_MARK),
        }
    }

    /// Appends the FLOW_MOD adding (or deleting) churn flow `id` to `out`.
    fn push(&self, out: &mut Vec<u8>, id: u16, add: bool) {
        let (bytes, at) = if add { &self.add } else { &self.del };
        let start = out.len();
        out.extend_from_slice(bytes);
        out[start + at..start + at + 6].copy_from_slice(&churn_mac(id));
    }
}

/// Writes `msgs` (encoded FLOW_MODs) and a BARRIER_REQUEST, then waits
/// (bounded: 120 s) for the reply; fails on any OFPT_ERROR.
fn apply(c: &mut OfConn, msgs: &[u8]) {
    std::io::Write::write_all(&mut c.s, msgs).expect("writing FLOW_MODs");
    let xid = c.send(&Message::BarrierRequest);
    c.wait_for(Duration::from_secs(120), |x, m| match m {
        Message::BarrierReply if x == xid => Some(()),
        Message::Error(e) => panic!("the switch refused a FLOW_MOD: {e:?}"),
        _ => None,
    })
    .expect("BARRIER_REPLY after a batch of FLOW_MODs");
}

/// A switch with two hosts, connected to its controller, the static flow
/// `in_port=1,ETH_OK -> 2` installed.
fn setup(lab: &Lab, cfg: &TempFile) -> (Switch, Controller, OfConn) {
    let ctl = Controller::bind(0);
    let mut sw = Switch::start(&switch_args(lab, cfg, "secure", ctl.port, None, DPID));
    let mut c = ctl.accept(Duration::from_secs(20), &mut sw);
    assert_eq!(c.handshake().datapath_id, DPID);
    c.add_flow("priority=100,in_port=1,dl_type=0x88b5,actions=output:2");
    c.barrier();
    lab.assert_forwards(0, 1, 0, 50, 45);
    (sw, ctl, c)
}

/// The traffic of the churn and soak tests: from host 0 to host 1 (the
/// static flow) and to three churn addresses (a churn flow while it
/// exists, else the static flow), and table misses from host 1.
fn streams() -> Vec<(usize, [u8; 6], u16)> {
    vec![
        (0, mac(1), ETH_OK),
        (0, churn_mac(7), ETH_OK),
        (0, churn_mac(1000), ETH_OK),
        (0, churn_mac(3001), ETH_OK),
        (1, mac(0), ETH_MISS),
    ]
}

/// Checks the traffic's fate: every frame from host 0 forwarded, every
/// miss from host 1 dropped, and the whole ledger.
fn check_traffic(sw: &Switch, lab: &Lab, before: &Ledger, sent: &[u64], what: &str) -> Ledger {
    let l = sw.ledger(lab, false, what);
    let forwarded: u64 = sent[..4].iter().sum();
    assert_eq!(l.tx - before.tx, forwarded, "{what}: frames forwarded");
    assert_eq!(
        (l.lookups - l.matches) - (before.lookups - before.matches),
        sent[4],
        "{what}: misses dropped"
    );
    l
}

/// Flow-mod churn for `FAULTS_CHURN_SECONDS` (default 60) under traffic:
/// batches of 1000 adds and 1000 strict deletes of churn flows (at most
/// 2048 live), each batch confirmed by a barrier, as fast as the switch
/// takes them (the issue asks for 100k/s; the rate reached is printed).
/// Forwarding is checked frame by frame through the ledger.
#[test]
#[ignore = "slow (FAULTS_CHURN_SECONDS, default 60): scripts/test runs it in the background"]
fn flow_mod_churn_under_traffic() {
    need_root_and_tools();
    let dur = env_secs("FAULTS_CHURN_SECONDS", 60);
    let lab = Lab::new(2);
    let cfg = TempFile::config("[agent]\nprobe_interval_ms = 60000\n");
    let (sw, _ctl, mut c) = setup(&lab, &cfg);
    let before = sw.ledger(&lab, false, "before the churn");
    let churn = Churn::new();
    let rss0 = sw.rss_kib();

    let ((mods, elapsed), sent) = lab.under_traffic(&streams(), 1_000, 10, || {
        let t0 = Instant::now();
        let mut mods = 0u64;
        let mut next: u32 = 0;
        let mut buf = Vec::with_capacity(2000 * 120);
        for _ in 0..10_000_000u64 {
            if t0.elapsed() >= dur {
                break;
            }
            buf.clear();
            for k in 0..1000u32 {
                churn.push(&mut buf, ((next + k) % 4096) as u16, true);
                churn.push(&mut buf, ((next + k + 2048) % 4096) as u16, false);
            }
            next = (next + 1000) % 4096;
            apply(&mut c, &buf);
            mods += 2000;
        }
        (mods, t0.elapsed())
    });
    let rate = mods as f64 / elapsed.as_secs_f64();
    let rss1 = sw.rss_kib();
    eprintln!(
        "churn: {mods} FLOW_MODs in {elapsed:.1?} = {rate:.0}/s (asked: 100000/s); traffic \
         {sent:?}; RSS {rss0} -> {rss1} KiB"
    );
    assert!(mods >= 2000, "not one batch of FLOW_MODs went through");
    check_traffic(&sw, &lab, &before, &sent, "after the churn");
    let (clean, log) = sw.stop();
    assert!(clean, "sluice run did not exit cleanly on SIGTERM:\n{log}");
}

/// One million flows (exact nw_dst matches), installed in batches of
/// 10,000 confirmed by barriers: the RSS per flow is printed, and the
/// switch's CPU time to reach 1M is compared with its CPU time to reach
/// 250k (near-linear: less than 8x for 4x the flows; quadratic growth
/// would be ~16x; wall times are printed too). Forwarding
/// of the static flow is checked afterwards.
#[test]
#[ignore = "slow (about a minute, ~1 GiB of RAM): scripts/test runs it in the background"]
fn million_flows_installed() {
    need_root_and_tools();
    const TOTAL: u32 = 1_000_000;
    const BATCH: u32 = 10_000;
    let lab = Lab::new(2);
    let cfg = TempFile::config(
        "[agent]\nprobe_interval_ms = 600000\n\n[limits]\nmax_flows_per_table = 2000000\n",
    );
    let (mut sw, _ctl, mut c) = setup(&lab, &cfg);
    let marker = [10, 250, 250, 250];
    let (bytes, at) = template(
        "priority=10,dl_type=0x0800,nw_dst=10.250.250.250,actions=output:2",
        flow_mod_command::ADD,
        &marker,
    );
    let rss0 = sw.rss_kib();
    let cpu0 = sw.cpu_ticks();
    let t0 = Instant::now();
    let mut at_250k = Duration::ZERO;
    let mut cpu_250k = 0;
    let mut buf = Vec::with_capacity(BATCH as usize * bytes.len());
    let mut batch_times = Vec::new();
    for b in 0..TOTAL / BATCH {
        buf.clear();
        for i in b * BATCH..(b + 1) * BATCH {
            let start = buf.len();
            buf.extend_from_slice(&bytes);
            let [_, x, y, z] = i.to_be_bytes();
            buf[start + at..start + at + 4].copy_from_slice(&[10, x, y, z]);
        }
        let tb = Instant::now();
        apply(&mut c, &buf);
        batch_times.push(tb.elapsed());
        if (b + 1) * BATCH == TOTAL / 4 {
            at_250k = t0.elapsed();
            cpu_250k = sw.cpu_ticks() - cpu0;
        }
        assert!(sw.exited().is_none(), "sluice run exited after {} flows", b * BATCH);
    }
    let at_1m = t0.elapsed();
    let cpu_1m = sw.cpu_ticks() - cpu0;
    let rss1 = sw.rss_kib();
    let per_flow = (rss1.saturating_sub(rss0)) as f64 * 1024.0 / f64::from(TOTAL);
    // The switch's CPU time, not the wall time: other processes on a
    // loaded machine stretch the wall time unevenly.
    let wall_ratio = at_1m.as_secs_f64() / at_250k.as_secs_f64();
    let ratio = cpu_1m as f64 / cpu_250k.max(1) as f64;
    let first = batch_times.first().copied().unwrap_or_default();
    let last = batch_times.last().copied().unwrap_or_default();
    eprintln!(
        "1M flows: 250k in {at_250k:.1?}, 1M in {at_1m:.1?} (wall ratio {wall_ratio:.2}); switch \
         CPU {cpu_250k} then {cpu_1m} ticks (ratio {ratio:.2} for 4x flows); batch of {BATCH}: \
         first {first:.1?}, last {last:.1?}; RSS {rss0} -> {rss1} KiB = {per_flow:.0} bytes \
         per flow"
    );
    let m = scrape(sw.metrics.expect("metrics"));
    let flows: f64 = m
        .iter()
        .filter(|(n, l, _)| n == "sluice_table_flows" && l.contains("table=\"0\""))
        .map(|s| s.2)
        .sum();
    assert_eq!(flows as u64, u64::from(TOTAL) + 1, "flows in table 0");
    assert!(
        ratio < 10.0,
        "installing 1M flows took {ratio:.1}x the switch's CPU time of 250k (4x the flows)"
    );

    let before = sw.ledger(&lab, false, "with 1M flows");
    lab.assert_forwards(0, 1, 100, 200, 190);
    let l = sw.ledger(&lab, false, "with 1M flows, after traffic");
    assert_eq!(l.tx - before.tx, 200, "frames forwarded with 1M flows installed");
    // The exit leaves the million flows to the process's end instead of
    // freeing them one by one (`Datapath::stop_for_exit`): 0.35 s after
    // SIGTERM on a quiet machine, where freeing them took 2.3 s, and
    // once over 10 s on a CI run sharing its two cores with fuzzers and
    // builds. The time is printed with the test's output; the bound
    // only catches a hang.
    let (clean, log) = sw.stop_within(Duration::from_secs(60));
    assert!(clean, "sluice run did not exit cleanly on SIGTERM:\n{log}");
}

/// xorshift64*: the soak's reproducible randomness (seed printed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// A soak for `SOAK_SECONDS` (default 600): random batches (1..=500) of
/// churn-flow adds and strict deletes over 8192 ids, each confirmed by a
/// barrier, with traffic flowing all along. At the end every frame is
/// accounted for and the RSS is bounded: at most 32 MiB above what it was
/// after the first tenth of the run (the live flows are bounded by the id
/// space, so growth beyond that would be a leak). Before the flow tables
/// held shared pointers to entries, RSS grew ~85 bytes per FLOW_MOD here
/// (heap fragmentation from the vectors `remove_where` split off; see
/// docs/BENCHMARKS.md); now it stays within 3 MB over 7M FLOW_MODs.
#[test]
#[ignore = "slow (SOAK_SECONDS, default 600): scripts/test runs it in the background"]
fn soak_random_churn_and_traffic() {
    need_root_and_tools();
    let dur = env_secs("SOAK_SECONDS", 600);
    let seed =
        std::env::var("SOAK_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x005e_edf1_u64);
    eprintln!("soak: {dur:?}, seed {seed} (SOAK_SEED)");
    let lab = Lab::new(2);
    let cfg = TempFile::config("[agent]\nprobe_interval_ms = 60000\n");
    let (sw, _ctl, mut c) = setup(&lab, &cfg);
    let before = sw.ledger(&lab, false, "before the soak");
    let churn = Churn::new();
    let mut rng = Rng(seed | 1);

    let ((mods, rss_warm, rss_max), sent) = lab.under_traffic(&streams(), 2_000_000, 5, || {
        let t0 = Instant::now();
        let mut mods = 0u64;
        let mut rss_warm = None;
        let mut rss_max = 0;
        // RSS at every tenth of the run (printed: the trend, not just the end).
        let mut tenths = Vec::new();
        let mut buf = Vec::new();
        for _ in 0..100_000_000u64 {
            let el = t0.elapsed();
            if el >= dur {
                break;
            }
            if el >= dur / 10 * (tenths.len() as u32 + 1) {
                tenths.push((mods, sw.rss_kib()));
                eprintln!("soak: {el:.0?}: {mods} FLOW_MODs, RSS {} KiB", sw.rss_kib());
            }
            if rss_warm.is_none() && el >= dur / 10 {
                rss_warm = Some(sw.rss_kib());
            }
            buf.clear();
            let n = 1 + rng.next() % 500;
            for _ in 0..n {
                let r = rng.next();
                churn.push(&mut buf, (r % 8192) as u16, r & (1 << 40) != 0);
            }
            apply(&mut c, &buf);
            mods += n;
            rss_max = rss_max.max(sw.rss_kib());
            if rng.next() % 4 == 0 {
                std::thread::sleep(Duration::from_millis(rng.next() % 50));
            }
        }
        (mods, rss_warm.unwrap_or_else(|| sw.rss_kib()), rss_max)
    });
    let rss_end = sw.rss_kib();
    eprintln!(
        "soak: {mods} FLOW_MODs; traffic {sent:?}; RSS {rss_warm} KiB after a tenth, max \
         {rss_max}, end {rss_end}"
    );
    // Live flows stay <= 8192 (a few MB): growth beyond 32 MiB is a leak
    // or fragmentation (before the flow table held boxed entries: +276 MB
    // over 3.4M FLOW_MODs, from the vectors `remove_where` split off).
    assert!(rss_end <= rss_warm + 32 * 1024, "RSS grew from {rss_warm} to {rss_end} KiB");
    check_traffic(&sw, &lab, &before, &sent, "after the soak");
    let (clean, log) = sw.stop();
    assert!(clean, "sluice run did not exit cleanly on SIGTERM:\n{log}");
}

fn need_root_and_tools() {
    assert!(can_run());
}
