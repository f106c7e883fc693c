//! `sluice filter --bench`: packets per second of sluice's native filters
//! and of libpcap's `pcap_offline_filter` (BPF interpreter, `optimize=1` as
//! tcpdump does) over the same in-memory capture, measured in the same run.
//! sluice runs its batch entry point ([`Filter::matches_batch_wire`]: one
//! native loop over many packets); libpcap is called once per packet, the
//! only way `pcap_offline_filter` can be used.
//!
//! libpcap is linked through the `libpcap` cargo feature of this crate (on by
//! default, so the `sluice` binary has it); without it only sluice's numbers
//! are printed. Wall-clock numbers on a shared machine are noisy: the ratio,
//! measured side by side, is the figure to quote.

use crate::{Filter, Options};
use std::time::{Duration, Instant};

/// The filters of the benchmark.
pub fn default_filters() -> Vec<String> {
    let mut twenty = Vec::new();
    for i in 0..20 {
        twenty.push(match i % 4 {
            0 => format!("tcp dst port {}", 1000 + i),
            1 => format!("udp src port {}", 2000 + i),
            2 => format!("src host 10.9.{i}.1"),
            _ => format!("ip6 and tcp port {}", 3000 + i),
        });
    }
    vec![
        "tcp port 80".into(),
        "tcp src port 80".into(),
        "portrange 0-6000".into(),
        "net 10.0.0.0/8".into(),
        "ip".into(),
        "icmp".into(),
        twenty.join(" or "),
    ]
}

/// One benchmark row.
#[derive(Debug, Clone)]
pub struct Row {
    pub filter: String,
    pub matched: u64,
    pub sluice_mpps: f64,
    pub libpcap_mpps: Option<f64>,
}

// Only libpcap is measured per packet.
#[cfg_attr(not(feature = "libpcap"), allow(dead_code))]
fn measure(
    pkts: &[(Vec<u8>, u32)],
    min: Duration,
    mut f: impl FnMut(&[u8], u32) -> bool,
) -> (f64, u64) {
    let mut total = 0u64;
    let mut matched;
    let start = Instant::now();
    loop {
        let mut m = 0;
        for (p, wl) in pkts {
            m += u64::from(f(p, *wl));
        }
        matched = m;
        total += pkts.len() as u64;
        if start.elapsed() >= min || pkts.is_empty() {
            break;
        }
    }
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    (total as f64 / secs / 1e6, matched)
}

/// Like [`measure`] through [`Filter::matches_batch_wire`]: one native
/// loop over the whole capture instead of one call per packet.
fn measure_batch(pkts: &[(Vec<u8>, u32)], min: Duration, f: &Filter) -> (f64, u64) {
    let mut out = vec![false; pkts.len()];
    let mut total = 0u64;
    let mut matched;
    let start = Instant::now();
    loop {
        f.matches_batch_wire(pkts, &mut out);
        matched = out.iter().filter(|x| **x).count() as u64;
        total += pkts.len() as u64;
        if start.elapsed() >= min || pkts.is_empty() {
            break;
        }
    }
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    (total as f64 / secs / 1e6, matched)
}

/// Runs every filter for at least `min` per engine over `pkts`.
pub fn run(filters: &[String], pkts: &[(Vec<u8>, u32)], min: Duration) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for e in filters {
        let f = Filter::compile(e, Options::default()).map_err(|x| x.to_string())?;
        if !f.is_jitted() {
            return Err(format!("{e}: native code unavailable"));
        }
        let (s, matched) = measure_batch(pkts, min, &f);
        let l = libpcap_mpps(e, pkts, min, matched)?;
        rows.push(Row { filter: e.clone(), matched, sluice_mpps: s, libpcap_mpps: l });
    }
    Ok(rows)
}

#[cfg(feature = "libpcap")]
fn libpcap_mpps(
    e: &str,
    pkts: &[(Vec<u8>, u32)],
    min: Duration,
    ours: u64,
) -> Result<Option<f64>, String> {
    let b = crate::libpcap::Bpf::compile(e, true, crate::libpcap::NETMASK_UNKNOWN)?;
    let (mpps, matched) = measure(pkts, min, |p, wl| b.matches(p, wl));
    if matched != ours {
        return Err(format!("{e}: libpcap matched {matched} packets, sluice {ours}"));
    }
    Ok(Some(mpps))
}

#[cfg(not(feature = "libpcap"))]
fn libpcap_mpps(_: &str, _: &[(Vec<u8>, u32)], _: Duration, _: u64) -> Result<Option<f64>, String> {
    Ok(None)
}

/// Formats rows as a table (ratio = sluice / libpcap).
pub fn table(rows: &[Row]) -> String {
    let mut s = format!(
        "{:<40} {:>9} {:>12} {:>12} {:>7}\n",
        "filter", "matched", "sluice Mpps", "libpcap Mpps", "ratio"
    );
    for r in rows {
        let name =
            if r.filter.len() > 40 { format!("{}...", &r.filter[..37]) } else { r.filter.clone() };
        match r.libpcap_mpps {
            Some(l) => s.push_str(&format!(
                "{name:<40} {:>9} {:>12.1} {:>12.1} {:>6.2}x\n",
                r.matched,
                r.sluice_mpps,
                l,
                r.sluice_mpps / l.max(1e-9)
            )),
            None => s.push_str(&format!(
                "{name:<40} {:>9} {:>12.1} {:>12} {:>7}\n",
                r.matched, r.sluice_mpps, "n/a", "n/a"
            )),
        }
    }
    s
}
