//! One packet's trace as text, like `ovs-appctl ofproto/trace`: what
//! `sluice trace` prints and what a running switch answers a live trace
//! request (`sluice ctl TARGET trace FLOW`, [`sluice_ofp::tracemsg`])
//! with, so both read the same.
//!
//! The lines: `packet: in_port=N len=L`; every table looked up with the
//! entry hit (priority, cookie, match), each instruction, meter verdicts,
//! group buckets chosen, the action set executed, each output,
//! packet-ins, drops and guard runs (the pipeline's reference trace,
//! `Pipeline::trace`); `outputs: P,Q,...` or `outputs: drop`; then what
//! the caches make of the packet (`sluice_pipeline::megaflow`): the
//! `Megaflow:` the fast walk installs and the `Cache:` line saying which
//! cache serves the packet.

use crate::flowpacket;
use sluice_ofp::print::actions::{actions, instructions};
use sluice_ofp::print::fields::{match_str, port};
use sluice_ofp::tracemsg::TraceRequest;
use sluice_pipeline::megaflow::cache_lines;
use sluice_pipeline::{meter::Verdict, Pipeline, TraceEvent};
use std::fmt::Write;

/// Trace `frame`, received on `in_port`, through `p` and return the text
/// (see the module docs). The walks are dry runs that change nothing in
/// `p` (`Pipeline::trace`, `Pipeline::cache_trace`): outputs never leave
/// (they are only listed), packet-ins go nowhere. `detached` picks
/// `Pipeline::trace_detached`, the live switch's name for the same walk.
pub fn trace_text(p: &mut Pipeline, in_port: u32, frame: &[u8], detached: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "packet: in_port={} len={}", port(in_port), frame.len());
    let mut outputs = Vec::new();
    let mut tx = |port: u32, _q: Option<u32>, _f: &[u8]| outputs.push(port);
    let events = if detached {
        p.trace_detached(in_port, frame, &mut tx)
    } else {
        p.trace(in_port, frame, &mut tx)
    };
    for e in &events {
        event(&mut out, e);
    }
    let mut final_out: Vec<String> = outputs.iter().map(|&p| port(p)).collect();
    if events.iter().any(|e| matches!(e, TraceEvent::PacketIn { .. })) {
        final_out.push("CONTROLLER".into());
    }
    let final_out = if final_out.is_empty() { "drop".to_string() } else { final_out.join(",") };
    let _ = writeln!(out, "outputs: {final_out}");
    let cache = p.cache_trace(in_port, frame, &mut |_: u32, _: Option<u32>, _: &[u8]| {});
    for l in cache_lines(&cache) {
        let _ = writeln!(out, "{l}");
    }
    out
}

fn event(out: &mut String, e: &TraceEvent) {
    let _ = match e {
        TraceEvent::Lookup { table, entry: Some((prio, cookie, m)) } => {
            let ms = match_str(m);
            let ms = if ms.is_empty() { "(all packets)".to_string() } else { ms };
            writeln!(out, "table {table}: priority={prio} cookie={cookie:#x} {ms}")
        }
        TraceEvent::Lookup { table, entry: None } => writeln!(out, "table {table}: no match"),
        TraceEvent::Instruction(i) => {
            writeln!(out, "    {}", instructions(std::slice::from_ref(i)))
        }
        TraceEvent::Meter { meter, verdict } => {
            let v = match verdict {
                Verdict::Pass => "pass".to_string(),
                Verdict::Drop => "drop".to_string(),
                Verdict::Remark(n) => format!("dscp_remark prec_level={n}"),
            };
            writeln!(out, "    meter {meter}: {v}")
        }
        TraceEvent::Group { group, buckets } => {
            writeln!(out, "    group {group}: buckets {buckets:?}")
        }
        TraceEvent::ActionSet(set) => {
            let s = actions(set);
            writeln!(out, "action set: {}", if s.is_empty() { "(empty)".to_string() } else { s })
        }
        TraceEvent::Output { port: p } => writeln!(out, "    -> output:{}", port(*p)),
        TraceEvent::PacketIn { reason, table } => {
            let r = match reason {
                0 => "no_match",
                1 => "action",
                2 => "invalid_ttl",
                _ => "unknown",
            };
            writeln!(out, "    -> controller (reason={r}, table_id={table})")
        }
        TraceEvent::Drop(why) => writeln!(out, "    drop: {why}"),
        TraceEvent::Guard { table, priority, guard, result, changes } => {
            let verdict = if *result { "match" } else { "no match" };
            let _ = writeln!(out, "table {table}: priority={priority} {guard}: {verdict}");
            for c in changes {
                let _ = writeln!(out, "    {c}");
            }
            Ok(())
        }
    };
}

/// A live trace request answered: the text, or why the request cannot be
/// traced (a flow description the packet builder refuses; the message
/// names the bad token).
pub fn answer(p: &mut Pipeline, req: &TraceRequest) -> Result<String, String> {
    let (in_port, frame) = match req {
        TraceRequest::Flow(desc) => {
            let built = flowpacket::build(desc)
                .map_err(|e| format!("{e:#}").replacen("--flow: ", "", 1))?;
            let Some(in_port) = built.in_port else {
                return Err(format!("`{desc}`: give in_port=N (the port the packet arrives on)"));
            };
            (in_port, built.frame)
        }
        TraceRequest::Frame { in_port, frame } => (*in_port, frame.clone()),
    };
    Ok(trace_text(p, in_port, &frame, true))
}
