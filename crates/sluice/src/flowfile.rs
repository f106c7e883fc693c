//! Loading flow, group and meter files (ovs-ofctl `add-flows`,
//! `add-groups`, `add-meters` formats) into a reference pipeline.
//!
//! One item per line; blank lines and lines starting with `#` are ignored.
//! A flow line may start with a command word, as ovs-ofctl accepts:
//! `add`, `modify`, `modify_strict`, `delete`, `delete_strict` (default
//! `add`). Errors name the file and line and point at the bad token.

use anyhow::{bail, Context, Result};
use sluice_ofp::action::Action;
use sluice_ofp::consts::port_no;
use sluice_ofp::instruction::Instruction;
use sluice_ofp::message::{
    flow_mod_command as fc, group_mod_command as gc, meter_mod_command as mc,
};
use sluice_ofp::ofctl::{parse_flow, parse_group, parse_meter, TextError, Usage};
use sluice_ofp::port::Port;
use sluice_pipeline::{Config, Pipeline};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn lines(path: &Path) -> Result<Vec<(usize, String)>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim().to_string()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .collect())
}

fn text_err(path: &Path, line: usize, text: &str, e: TextError) -> anyhow::Error {
    anyhow::anyhow!("{}:{}: {}", path.display(), line, e.render(text))
}

/// Ports referenced by output actions and watch ports.
fn referenced_ports(ins: &[Instruction], out: &mut BTreeSet<u32>) {
    for i in ins {
        if let Instruction::ApplyActions(a) | Instruction::WriteActions(a) = i {
            action_ports(a, out);
        }
    }
}

fn action_ports(a: &[Action], out: &mut BTreeSet<u32>) {
    for a in a {
        if let Action::Output { port, .. } = a {
            if *port <= port_no::MAX {
                out.insert(*port);
            }
        }
    }
}

/// What to load.
#[derive(Default)]
pub struct Files<'a> {
    pub flows: Option<&'a Path>,
    pub groups: Option<&'a Path>,
    pub meters: Option<&'a Path>,
    /// Ports to create besides those the files reference.
    pub extra_ports: Vec<u32>,
    /// eBPF objects to load as filter programs before the flows.
    pub filter_progs: &'a [(u32, PathBuf)],
}

/// Parse `ID=FILE.o` (`--filter-prog`): a program id (decimal or `0x`
/// hex, 1 to 0xfffffffe) and an object file.
pub fn parse_filter_prog(s: &str) -> Result<(u32, PathBuf)> {
    let (id, file) = s.split_once('=').context("want ID=FILE.o")?;
    let id = id.trim();
    let n = match id.strip_prefix("0x") {
        Some(h) => u32::from_str_radix(h, 16),
        None => id.parse(),
    }
    .with_context(|| format!("program id `{id}` is not a number"))?;
    if !sluice_ofp::filterprog::prog_id_valid(n) {
        bail!("program id `{id}` is reserved (ids are 1 to 0xfffffffe)");
    }
    if file.is_empty() {
        bail!("no object file after `{id}=`");
    }
    Ok((n, PathBuf::from(file)))
}

/// Parse a port list: comma-separated OpenFlow port numbers, `LOCAL`
/// allowed (`1,2,3,LOCAL`).
pub fn parse_port_list(s: &str) -> Result<Vec<u32>> {
    s.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| {
            if t.eq_ignore_ascii_case("local") {
                return Ok(port_no::LOCAL);
            }
            match t.parse::<u32>() {
                Ok(n) if (1..=port_no::MAX).contains(&n) => Ok(n),
                _ => bail!("bad port `{t}` (want 1..{} or LOCAL)", port_no::MAX),
            }
        })
        .collect()
}

/// Mark ports link-down (for fast-failover and liveness scenarios).
pub fn set_down(p: &mut Pipeline, down: &[u32]) -> Result<()> {
    for &n in down {
        if p.ports().get(n).is_none() {
            bail!("port {n} to take down does not exist (add it with --ports)");
        }
        p.ports_mut().set_link(n, false);
    }
    p.take_async();
    Ok(())
}

/// Build a pipeline from the files. Ports are created for every port the
/// files mention (outputs, watch ports, `in_port` matches are not needed)
/// plus `extra_ports`, and the switch's `LOCAL` port, which `output:all`
/// and `output:flood` include (OpenFlow 1.3.5 §4.1: LOCAL is a standard
/// port; Open vSwitch's bridge port behaves the same).
pub fn load(files: &Files<'_>) -> Result<Pipeline> {
    let mut flows = Vec::new();
    if let Some(path) = files.flows {
        for (n, line) in lines(path)? {
            let (cmd, rest) = match line.split_once(char::is_whitespace) {
                Some(("add", r)) => (fc::ADD, r),
                Some(("modify", r)) => (fc::MODIFY, r),
                Some(("modify_strict", r)) => (fc::MODIFY_STRICT, r),
                Some(("delete", r)) => (fc::DELETE, r),
                Some(("delete_strict", r)) => (fc::DELETE_STRICT, r),
                _ => (fc::ADD, line.as_str()),
            };
            let usage = match cmd {
                fc::ADD => Usage::Add,
                fc::MODIFY | fc::MODIFY_STRICT => Usage::Modify,
                _ => Usage::Delete,
            };
            let spec = parse_flow(rest, usage).map_err(|e| text_err(path, n, rest, e))?;
            flows.push((path, n, spec.to_flow_mod(cmd)));
        }
    }
    let mut groups = Vec::new();
    if let Some(path) = files.groups {
        for (n, line) in lines(path)? {
            let spec = parse_group(&line).map_err(|e| text_err(path, n, &line, e))?;
            groups.push((path, n, spec.to_group_mod(gc::ADD)));
        }
    }
    let mut meters = Vec::new();
    if let Some(path) = files.meters {
        for (n, line) in lines(path)? {
            let spec = parse_meter(&line).map_err(|e| text_err(path, n, &line, e))?;
            meters.push((path, n, spec.to_meter_mod(mc::ADD)));
        }
    }
    let mut ports: BTreeSet<u32> = files.extra_ports.iter().copied().collect();
    for (_, _, f) in &flows {
        referenced_ports(&f.instructions, &mut ports);
    }
    for (_, _, g) in &groups {
        for b in &g.buckets {
            action_ports(&b.actions, &mut ports);
            if b.watch_port <= port_no::MAX {
                ports.insert(b.watch_port);
            }
        }
    }
    ports.insert(port_no::LOCAL);
    let cfg = Config::default();
    let shards = cfg.shards();
    let mut p = Pipeline::new(cfg);
    for (id, path) in files.filter_progs {
        let object =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        p.filters
            .load(*id, &object, shards)
            .map_err(|e| anyhow::anyhow!("--filter-prog {id}={}: {e}", path.display()))?;
    }
    for &n in &ports {
        let mac = [0x02, 0, 0, 0, (n >> 8) as u8, n as u8];
        let name = if n == port_no::LOCAL { "LOCAL".to_string() } else { format!("port{n}") };
        p.ports_mut().add(Port { port_no: n, hw_addr: mac, name, ..Port::default() }, 0);
    }
    for (path, n, m) in &meters {
        if let Err(e) = p.meter_mod(m) {
            bail!("{}:{}: meter rejected: {}", path.display(), n, e);
        }
    }
    // Groups may chain: add in file order, retrying ones that reference a
    // group defined later.
    let mut pending = groups;
    while !pending.is_empty() {
        let before = pending.len();
        let mut rest = Vec::new();
        let mut last_err = None;
        for (path, n, g) in pending {
            if let Err(e) = p.group_mod(&g) {
                last_err = Some(format!("{}:{}: group rejected: {}", path.display(), n, e));
                rest.push((path, n, g));
            }
        }
        if rest.len() == before {
            bail!("{}", last_err.unwrap_or_default());
        }
        pending = rest;
    }
    for (path, n, f) in &flows {
        if let Err(e) = p.flow_mod_explained(f) {
            bail!("{}:{}: flow rejected: {}", path.display(), n, e);
        }
    }
    p.take_async();
    Ok(p)
}
