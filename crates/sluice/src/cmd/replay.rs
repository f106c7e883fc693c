//! `sluice replay`: push a pcap through a pipeline built from flow files and
//! write what comes out, one pcap per output port.
//!
//! Output: `DIR/port-N.pcap` (and `port-LOCAL.pcap`) per port that sent
//! anything, `DIR/controller.pcap` with the data of every packet-in, each
//! frame stamped with the time of the input packet that caused it; then
//! one `port N: K packets` / `controller: K packets` line per file. The
//! pipeline clock follows the capture's timestamps (meters, timeouts).
//! `--ports` adds ports (for `output:all`/`flood`), `--down` starts ports
//! link-down and `--down-at INDEX:PORT` takes a link down mid-capture (a
//! fast-failover scenario). Scenario tests: `crates/sluice/tests/replay_scenarios.rs`.
//!
//! With `--pfmatch PROG` (a file or the program text) instead of `--flows`,
//! a pfmatch program is the whole forwarding table: each packet goes where
//! its handler says (`output(N)`, `flood` — every port given with `--ports`
//! or named by an `output` handler, except `--in-port` — `controller`, or
//! `drop`); a packet no clause matches is dropped.

use crate::flowfile::{self, Files};
use anyhow::{Context, Result};
use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};
use sluice_ofp::message::Message;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `sluice replay`.
#[derive(clap::Args)]
pub struct Args {
    /// Flow file (ovs-ofctl add-flows syntax).
    #[arg(long, required_unless_present = "pfmatch", conflicts_with = "pfmatch")]
    pub flows: Option<PathBuf>,
    /// A pfmatch program (file or text) used as the forwarding table.
    #[arg(long, conflicts_with_all = ["groups", "meters", "down", "down_at", "filter_prog"])]
    pub pfmatch: Option<String>,
    /// Group file (ovs-ofctl add-groups syntax).
    #[arg(long)]
    pub groups: Option<PathBuf>,
    /// Meter file (one ovs-ofctl meter per line).
    #[arg(long)]
    pub meters: Option<PathBuf>,
    /// Input capture (pcap, Ethernet).
    #[arg(long)]
    pub pcap: PathBuf,
    /// OpenFlow port the packets arrive on.
    #[arg(long)]
    pub in_port: u32,
    /// Directory for port-N.pcap and controller.pcap (created if missing).
    #[arg(long)]
    pub out_dir: PathBuf,
    /// More ports to create, e.g. `1,2,3,4` (ports the files output to
    /// and LOCAL always exist); matters for output:all and flood.
    #[arg(long, value_parser = flowfile::parse_port_list)]
    pub ports: Vec<Vec<u32>>,
    /// Ports whose link is down from the start, e.g. `2,3`.
    #[arg(long, value_parser = flowfile::parse_port_list)]
    pub down: Vec<Vec<u32>>,
    /// Take a port's link down before the packet at INDEX (0-based):
    /// `INDEX:PORT`, repeatable (a fast-failover scenario).
    #[arg(long = "down-at", value_parser = parse_down_at)]
    pub down_at: Vec<(usize, u32)>,
    /// Load an eBPF object as filter program ID before the flows
    /// (`ID=FILE.o`, repeatable): flows name it with `filter_prog=ID`.
    #[arg(long = "filter-prog", value_name = "ID=FILE.o", value_parser = flowfile::parse_filter_prog)]
    pub filter_prog: Vec<(u32, std::path::PathBuf)>,
}

fn parse_down_at(s: &str) -> Result<(usize, u32)> {
    let (i, p) = s.split_once(':').context("want INDEX:PORT")?;
    let i = i.trim().parse().context("INDEX is not a number")?;
    let p = flowfile::parse_port_list(p)?;
    match p.as_slice() {
        [p] => Ok((i, *p)),
        _ => anyhow::bail!("want one port after `:`"),
    }
}

/// Frames collected per destination ("port-N" or "controller").
type Outputs = BTreeMap<String, Vec<(Duration, Vec<u8>)>>;

pub fn run(a: Args) -> Result<()> {
    let Some(flows) = &a.flows else { return run_pfmatch(&a) };
    let mut p = flowfile::load(&Files {
        flows: Some(flows),
        groups: a.groups.as_deref(),
        meters: a.meters.as_deref(),
        extra_ports: a.ports.iter().flatten().copied().chain([a.in_port]).collect(),
        filter_progs: &a.filter_prog,
    })?;
    flowfile::set_down(&mut p, &a.down.concat())?;
    let file = std::fs::File::open(&a.pcap)
        .with_context(|| format!("cannot open {}", a.pcap.display()))?;
    let mut reader = PcapReader::new(file)
        .with_context(|| format!("{} is not a pcap file", a.pcap.display()))?;
    let mut out: Outputs = BTreeMap::new();
    let mut first_ts = None;
    let mut index = 0usize;
    while let Some(pkt) = reader.next_packet() {
        let pkt = pkt.with_context(|| format!("reading {}", a.pcap.display()))?;
        let down: Vec<u32> =
            a.down_at.iter().filter(|(i, _)| *i == index).map(|(_, p)| *p).collect();
        flowfile::set_down(&mut p, &down)?;
        index += 1;
        let ts = pkt.timestamp;
        let t0 = *first_ts.get_or_insert(ts);
        // The pipeline clock follows the capture's timestamps.
        p.advance(ts.saturating_sub(t0).as_nanos() as u64);
        p.process(a.in_port, &pkt.data, &mut |port: u32, _q: Option<u32>, f: &[u8]| {
            out.entry(port_name(port)).or_default().push((ts, f.to_vec()));
        });
        for m in p.take_async() {
            if let Message::PacketIn(pi) = m {
                out.entry("controller".into()).or_default().push((ts, pi.data));
            }
        }
    }
    write_outputs(&a, &out)
}

/// Write one pcap per destination and print the counts.
fn write_outputs(a: &Args, out: &Outputs) -> Result<()> {
    std::fs::create_dir_all(&a.out_dir)
        .with_context(|| format!("cannot create {}", a.out_dir.display()))?;
    for (name, frames) in out {
        let path = a.out_dir.join(format!("{name}.pcap"));
        let f = std::fs::File::create(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let mut w = PcapWriter::new(f)?;
        for (ts, data) in frames {
            w.write_packet(&PcapPacket::new(*ts, data.len() as u32, data))?;
        }
        let label = name.replace('-', " ");
        println!("{label}: {} packets", frames.len());
    }
    Ok(())
}

fn port_name(port: u32) -> String {
    match port {
        sluice_ofp::consts::port_no::LOCAL => "port-LOCAL".into(),
        p => format!("port-{p}"),
    }
}

fn run_pfmatch(a: &Args) -> Result<()> {
    use sluice_filter::pfmatch::{Action, Dispatcher};
    let prog = a.pfmatch.as_deref().unwrap_or_default();
    let text = match std::fs::read_to_string(prog) {
        Ok(t) => t,
        Err(_) => prog.to_string(),
    };
    let d = Dispatcher::compile(&text, sluice_filter::Options::default())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut actions = Vec::new();
    for h in &d.handlers {
        match h.action() {
            Some(act) => actions.push(act),
            None => anyhow::bail!(
                "handler `{}` is not a forwarding action (use output(N), drop, controller or flood)",
                h.name
            ),
        }
    }
    let mut ports: Vec<u32> = a.ports.iter().flatten().copied().collect();
    ports.extend(actions.iter().filter_map(|x| match x {
        Action::Output(n) => Some(*n),
        _ => None,
    }));
    ports.sort_unstable();
    ports.dedup();
    let mut out: Outputs = BTreeMap::new();
    sluice_filter::pcapio::dispatch_pcap(&d, &a.pcap, |pkt, h| {
        let ts = pkt.timestamp;
        match h.map(|i| actions[i]) {
            Some(Action::Output(n)) => {
                out.entry(port_name(n)).or_default().push((ts, pkt.data.to_vec()))
            }
            Some(Action::Flood) => {
                for &p in ports.iter().filter(|&&p| p != a.in_port) {
                    out.entry(port_name(p)).or_default().push((ts, pkt.data.to_vec()));
                }
            }
            Some(Action::Controller) => {
                out.entry("controller".into()).or_default().push((ts, pkt.data.to_vec()))
            }
            Some(Action::Drop) | None => {}
        }
    })
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    write_outputs(a, &out)
}
