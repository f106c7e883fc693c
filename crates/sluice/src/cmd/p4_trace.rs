//! `sluice p4 trace PROG.p4 [--commands FILE] (--packet HEX | --flow DESC)
//! --port N`: explain one packet through a P4 program on the reference
//! interpreter, stage by stage, like `sluice trace` does for OpenFlow
//! tables (and `ovs-appctl ofproto/trace`).
//!
//! The commands file holds simple_switch_CLI commands, one a line (`#`
//! comments), run first to fill the tables (`table_add`,
//! `table_set_default`, `mc_mgrp_create`, ... — what `sluice p4 ctl`
//! sends; [`sluice_p4::ctl`]). The packet is hex, or a description of
//! the program's header fields (`eth.dst=00:00:00:00:00:02,ip.ttl=64,
//! payload=HEX`; [`sluice_p4::interp::Interp::flow_frame`] has the rules).
//!
//! The trace is the interpreter's own record
//! ([`sluice_p4::interp::TraceEvent`]), one line per event, indented by
//! stage: parser states with their extracts and `select` decisions,
//! tables with their keys, the entry hit (or the miss) and the action
//! with its data, `mark_to_drop`, `digest`, the end of ingress, the traffic
//! manager's decision, each copy's egress, and each output; it ends with
//! `outputs: P,Q` (or `outputs: drop`) and each frame in hex. Numbers
//! narrower than 16 bits are decimal, wider ones hex.

use anyhow::{bail, Context, Result};
use sluice_p4::interp::{show_bits, show_match, show_value, Interp, TraceEvent};
use sluice_p4::target::Output;
use std::fmt::Write;
use std::path::PathBuf;

/// Arguments of `sluice p4 trace`.
#[derive(clap::Args)]
pub struct TraceArgs {
    /// The P4-16 source file (v1model).
    pub program: PathBuf,
    /// simple_switch_CLI commands to run first, one a line (`table_add
    /// routes forward 10.0.2.0/24 => ...`, `mc_mgrp_create 1`, ...).
    #[arg(long, value_name = "FILE")]
    commands: Option<PathBuf>,
    /// The packet as hex.
    #[arg(long, value_name = "HEX", conflicts_with = "flow", required_unless_present = "flow")]
    packet: Option<String>,
    /// Build the packet from the program's header fields, e.g.
    /// `eth.dst=00:00:00:00:00:02,eth.ethertype=0x0800,ip.ttl=64,ip.dst=10.0.2.2`
    /// (plus `payload=HEX`), in the order the deparser emits the headers.
    #[arg(long, value_name = "DESC")]
    flow: Option<String>,
    /// The port the packet arrives on (`standard_metadata.ingress_port`).
    #[arg(long, value_name = "N")]
    port: u32,
}

pub fn run(a: TraceArgs, mut interp: Interp) -> Result<()> {
    if let Some(path) = &a.commands {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let mut session = sluice_p4::ctl::Session::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Err(e) = session.execute(&mut interp, line) {
                bail!("{}:{}: {e}", path.display(), i + 1);
            }
        }
    }
    let frame = match (&a.packet, &a.flow) {
        (Some(h), _) => {
            sluice_p4::interp::parse_hex(h).map_err(|e| anyhow::anyhow!("--packet: {e}"))?
        }
        (None, Some(d)) => interp.flow_frame(d).map_err(|e| anyhow::anyhow!("--flow: {e}"))?,
        (None, None) => bail!("give --packet HEX or --flow DESC"),
    };
    let (events, outputs) = interp.trace_packet(a.port, &frame);
    match outputs {
        Ok(outputs) => {
            print!("{}", render(a.port, &frame, &events, &outputs));
            Ok(())
        }
        Err(e) => {
            // The events say how far the packet got.
            let text = render(a.port, &frame, &events, &[]);
            print!("{}", text.strip_suffix("outputs: drop\n").unwrap_or(&text));
            bail!("the packet could not run: {e}")
        }
    }
}

/// The trace as text (see the module docs).
pub fn render(port: u32, frame: &[u8], events: &[TraceEvent], outputs: &[Output]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "packet: port {port}, {} bytes: {}", frame.len(), hex::encode(frame));
    // Widths of the last table's keys, for its entry's match.
    let mut widths: Vec<u32> = Vec::new();
    // Indent of the last action line (events right after it are inside).
    let mut action_indent: Option<usize> = None;
    let mut in_state = false;
    let mut egress: Option<(u32, Option<u32>)> = None;
    for e in events {
        let mut line = |indent: usize, text: String| {
            let _ = writeln!(out, "{:indent$}{text}", "");
        };
        let after_action = action_indent.take();
        match e {
            TraceEvent::Stage { stage, block } => {
                in_state = false;
                match (stage, egress) {
                    (&"egress", Some((p, rid))) => {
                        let rid = rid.map(|r| format!(", rid {r}")).unwrap_or_default();
                        line(0, format!("egress {block}: port {p}{rid}"))
                    }
                    _ => line(0, format!("{stage} {block}")),
                }
            }
            TraceEvent::ParserState { state } => {
                in_state = true;
                line(4, format!("state {state}"));
            }
            TraceEvent::Select { values, next } => {
                let v: Vec<String> = values.iter().map(show_value).collect();
                let next = next.as_deref().unwrap_or("no case matches: reject (error.NoMatch)");
                line(if in_state { 8 } else { 4 }, format!("select ({}) -> {next}", v.join(", ")));
            }
            TraceEvent::Extract { header, bits } => {
                let size = if bits % 8 == 0 {
                    format!("{} bytes", bits / 8)
                } else {
                    format!("{bits} bits")
                };
                line(if in_state { 8 } else { 4 }, format!("extract {header} ({size})"));
            }
            TraceEvent::ParserError { error } => {
                line(4, format!("parser error: error.{error} (ingress still runs)"))
            }
            TraceEvent::ChecksumError => {
                line(4, "checksum error (standard_metadata.checksum_error = 1)".into())
            }
            TraceEvent::Table { table, keys } => {
                widths = keys.iter().map(|(_, b)| b.width()).collect();
                let k: Vec<String> =
                    keys.iter().map(|(n, b)| format!("{n}={}", show_bits(b))).collect();
                line(4, format!("table {table}: {}", k.join(" ")));
            }
            TraceEvent::Hit { handle, keys, priority } => {
                let m: Vec<String> = keys
                    .iter()
                    .enumerate()
                    .map(|(i, (n, k))| {
                        format!("{n}={}", show_match(k, widths.get(i).copied().unwrap_or(0)))
                    })
                    .collect();
                // simple_switch_CLI's smaller-wins number, as `table_dump`.
                let prio = match priority.map(u32::try_from) {
                    None => String::new(),
                    Some(Ok(p)) => format!(" priority {}", u32::MAX - p),
                    Some(Err(_)) => format!(" priority (engine) {}", priority.unwrap_or(0)),
                };
                line(8, format!("hit entry {handle}: {}{prio}", m.join(" ")));
                action_indent = Some(8);
            }
            TraceEvent::Miss => {
                line(8, "miss: default action".into());
                action_indent = Some(8);
            }
            TraceEvent::Action { action, args } => {
                let a: Vec<String> =
                    args.iter().map(|(n, v)| format!("{n}={}", show_value(v))).collect();
                let indent = after_action.unwrap_or(4);
                line(indent, format!("action {action}({})", a.join(", ")));
                action_indent = Some(indent + 4);
            }
            TraceEvent::MarkToDrop => {
                line(after_action.unwrap_or(4), "mark_to_drop: egress_spec = 511".into())
            }
            TraceEvent::Digest { receiver, data } => line(
                after_action.unwrap_or(4),
                format!("digest to receiver {receiver}: {}", show_value(data)),
            ),
            TraceEvent::IngressEnd { egress_spec, mcast_grp } => {
                let spec = if *egress_spec == 511 {
                    "511 (drop)".to_string()
                } else {
                    egress_spec.to_string()
                };
                line(4, format!("end of ingress: egress_spec={spec} mcast_grp={mcast_grp}"));
            }
            TraceEvent::Replicate { group, copies } => {
                let c: Vec<String> =
                    copies.iter().map(|(rid, p)| format!("port {p} (rid {rid})")).collect();
                let c = if c.is_empty() { "no copies (empty group)".into() } else { c.join(", ") };
                line(0, format!("traffic manager: multicast group {group} -> {c}"));
            }
            TraceEvent::Drop => line(0, "traffic manager: drop".into()),
            TraceEvent::Egress { port, rid } => {
                if rid.is_none() {
                    line(0, format!("traffic manager: unicast to port {port}"));
                }
                egress = Some((*port, *rid));
            }
            TraceEvent::EgressDrop { port } => {
                line(4, format!("dropped in egress (egress_spec = 511): no copy to port {port}"))
            }
            TraceEvent::Output { port, data } => {
                line(4, format!("output to port {port}: {} bytes", data.len()))
            }
        }
    }
    if outputs.is_empty() {
        let _ = writeln!(out, "outputs: drop");
    } else {
        let ports: Vec<String> = outputs.iter().map(|o| o.port.to_string()).collect();
        let _ = writeln!(out, "outputs: {}", ports.join(","));
        for o in outputs {
            let _ = writeln!(out, "    port {}: {}", o.port, hex::encode(&o.data));
        }
    }
    out
}
