//! `sluice trace`: explain what happens to one packet, table by table, like
//! `ovs-appctl ofproto/trace`.
//!
//! Prints every table looked up with the entry hit (priority, cookie,
//! match), each instruction, meter verdicts, group buckets chosen, the
//! action set executed, each output, packet-ins and drops, and finally
//! `outputs: P,Q,...` (ports, `LOCAL`, `CONTROLLER`) or `outputs: drop`,
//! then the megaflow the fast walk installs for the packet (`Megaflow:
//! in_port=1,ip,nw_dst=10.0.0.0/8`, from the cache's own recording) and
//! which cache serves it (`Cache:`, for `--cache`, the daemon's `on` by
//! default); the text is `sluice_datapath::trace`'s, which a running
//! switch also answers `sluice ctl TARGET trace` with.
//! `crates/sluice/tests/trace_vs_ovs.rs` checks that line against Open
//! vSwitch's `ofproto/trace` on a corpus of cases.
//!
//! The packet comes from one of: `--packet HEX`, `--pcap FILE [--index N]`,
//! or `--flow DESCRIPTION`, an ovs-ofctl-style match such as
//! `in_port=1,tcp,nw_dst=10.1.2.3,tp_dst=80` from which
//! [`crate::flowpacket`] builds a well-formed frame (as `ofproto/trace`
//! does with a flow). `in_port` in the description stands in for
//! `--in-port`; giving both with different ports is refused. A field the
//! builder cannot put in a packet is refused, naming it.

use crate::flowfile::{self, Files};
use crate::flowpacket;
use anyhow::{bail, Context, Result};
use pcap_file::pcap::PcapReader;
use sluice_datapath::config::parse_cache;
use sluice_datapath::trace::trace_text;
use sluice_ofp::print::fields::port;
use std::path::PathBuf;

/// Arguments of `sluice trace`.
#[derive(clap::Args)]
pub struct Args {
    /// Flow file (ovs-ofctl add-flows syntax).
    #[arg(long)]
    pub flows: PathBuf,
    /// Group file (ovs-ofctl add-groups syntax), for flows that name groups.
    #[arg(long)]
    pub groups: Option<PathBuf>,
    /// Meter file (ovs-ofctl add-meter syntax, one a line), for flows that
    /// name meters.
    #[arg(long)]
    pub meters: Option<PathBuf>,
    /// OpenFlow port the packet arrives on (optional with a --flow that
    /// has `in_port=N`).
    #[arg(long)]
    pub in_port: Option<u32>,
    /// The packet as hex.
    #[arg(long, conflicts_with_all = ["pcap", "flow"])]
    pub packet: Option<String>,
    /// Build the packet from a flow description in ovs-ofctl match syntax,
    /// e.g. `in_port=1,tcp,nw_dst=10.1.2.3,tp_dst=80` (also `nw_ttl=N`,
    /// `tcp_flags=+syn`); like the flow argument of `ofproto/trace`.
    #[arg(long, value_name = "DESCRIPTION", conflicts_with = "pcap")]
    pub flow: Option<String>,
    /// Take the packet from a pcap file...
    #[arg(long)]
    pub pcap: Option<PathBuf>,
    /// ...at this index (0-based).
    #[arg(long, default_value_t = 0)]
    pub index: usize,
    /// More ports to create, e.g. `1,2,3,4` (ports the files output to
    /// and LOCAL always exist); matters for output:all and flood.
    #[arg(long, value_parser = flowfile::parse_port_list)]
    pub ports: Vec<Vec<u32>>,
    /// Ports whose link is down, e.g. `2,3`.
    #[arg(long, value_parser = flowfile::parse_port_list)]
    pub down: Vec<Vec<u32>>,
    /// Load an eBPF object as filter program ID before the flows
    /// (`ID=FILE.o`, repeatable): flows name it with `filter_prog=ID`.
    #[arg(long = "filter-prog", value_name = "ID=FILE.o", value_parser = flowfile::parse_filter_prog)]
    pub filter_prog: Vec<(u32, std::path::PathBuf)>,
    /// The caches the `Megaflow:` and `Cache:` lines are for: `on`
    /// (exact-match then megaflow), `megaflow` or `off` (the megaflow line
    /// then shows what a cache would install); `auto`, the daemon's
    /// default, is traced as `on`, its fullest choice.
    #[arg(long, default_value = "on", value_name = "on|megaflow|off|auto")]
    pub cache: String,
}

/// The frame and the in-port it arrives on.
fn packet(a: &Args) -> Result<(u32, Vec<u8>)> {
    if let Some(desc) = &a.flow {
        let built = flowpacket::build(desc)?;
        let in_port = match (built.in_port, a.in_port) {
            (Some(f), Some(c)) if f != c => bail!(
                "--flow says in_port={} but --in-port is {}: give one, or the same port",
                port(f),
                port(c)
            ),
            (Some(p), _) | (None, Some(p)) => p,
            (None, None) => bail!("give --in-port, or in_port=N in --flow"),
        };
        return Ok((in_port, built.frame));
    }
    let Some(in_port) = a.in_port else { bail!("--in-port is required with --packet or --pcap") };
    Ok((in_port, raw_packet(a)?))
}

fn raw_packet(a: &Args) -> Result<Vec<u8>> {
    if let Some(h) = &a.packet {
        let clean: String =
            h.split_whitespace().collect::<String>().trim_start_matches("0x").to_string();
        return hex::decode(&clean).context("--packet is not valid hex");
    }
    let Some(path) = &a.pcap else { bail!("give --packet HEX or --pcap FILE") };
    let f = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut r =
        PcapReader::new(f).with_context(|| format!("{} is not a pcap file", path.display()))?;
    let mut i = 0;
    while let Some(p) = r.next_packet() {
        let p = p?;
        if i == a.index {
            return Ok(p.data.into_owned());
        }
        i += 1;
    }
    bail!("{} has only {} packets (index {} requested)", path.display(), i, a.index)
}

pub fn run(a: Args) -> Result<()> {
    let (in_port, frame) = packet(&a)?;
    let mut p = flowfile::load(&Files {
        flows: Some(&a.flows),
        groups: a.groups.as_deref(),
        meters: a.meters.as_deref(),
        extra_ports: a.ports.iter().flatten().copied().chain([in_port]).collect(),
        filter_progs: &a.filter_prog,
    })?;
    flowfile::set_down(&mut p, &a.down.concat())?;
    let Some(mode) = parse_cache(&a.cache) else {
        bail!("--cache {}: must be on, megaflow, off or auto", a.cache)
    };
    p.set_cache(mode);
    print!("{}", trace_text(&mut p, in_port, &frame, false));
    Ok(())
}
