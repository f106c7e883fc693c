//! The control thread: opens ports, follows their links, removes and
//! re-adds them, and keeps the pipeline clock moving.
//!
//! It runs in the datapath's network namespace (joined with `setns` before
//! anything is opened), so the [`LinkMonitor`] and every port it (re)opens
//! belong to that namespace. Each round (at most every 100 ms, sooner on a
//! netlink event):
//! - link events: `Up`/`Down` of a configured interface become
//!   `Ports::set_link` and a PORT_STATUS MODIFY; `Removed` removes the port
//!   (PORT_STATUS DELETE) and closes it;
//! - ports a worker marked gone (receive failed) are removed the same way;
//! - a configured port that is absent, has `reopen` set, and whose interface
//!   exists again is reopened (at most once a second per port) and re-added
//!   (PORT_STATUS ADD) on the least loaded worker;
//! - the pipeline clock is advanced, so idle and hard timeouts fire (and
//!   FLOW_REMOVED is sent) without traffic, and what that changed is
//!   published;
//! - a configuration reload's port changes ([`PortsCmd`], at most one
//!   round late) are applied: every added port is opened first — if one
//!   fails, none is added, none removed, and the error is the answer —
//!   then removed ports are taken out (PORT_STATUS DELETE) and the new
//!   ones added (PORT_STATUS ADD) on the least loaded workers. Other
//!   ports' workers never wait for this: opening happens here, and a
//!   worker takes a new port (or lets a removed one go) between rounds.

use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_ports::link::{LinkChange, LinkEvent, LinkMonitor};
use sluice_ports::PortKind;
use tracing::{debug, info, warn};

use crate::config::PortConfig;
use crate::shared::Shared;
use crate::sys::{enter_netns, poll, PollEntry};

const ROUND: Duration = Duration::from_millis(100);
const REOPEN_EVERY: Duration = Duration::from_secs(1);

/// A configuration reload's port changes, sent to the control thread.
pub(crate) struct PortsCmd {
    pub remove: Vec<PortConfig>,
    pub add: Vec<PortConfig>,
    pub reply: mpsc::Sender<Result<(), String>>,
}

struct CtlPort {
    cfg: PortConfig,
    present: bool,
    last_try: Option<Instant>,
}

fn has_interface(k: PortKind) -> bool {
    matches!(k, PortKind::AfPacket | PortKind::AfXdp | PortKind::Tap)
}

/// Opens everything, reports the outcome on `ready`, then runs until stop.
pub(crate) fn run(
    shared: Arc<Shared>,
    ports: Vec<PortConfig>,
    netns: Option<String>,
    ready: mpsc::Sender<Result<(), String>>,
    cmds: mpsc::Receiver<PortsCmd>,
) {
    if let Some(ns) = &netns {
        if let Err(e) = enter_netns(ns) {
            let _ = ready.send(Err(format!("joining network namespace {ns}: {e}")));
            return;
        }
    }
    // A monitor is needed only for interface-backed ports; without one the
    // datapath still runs (pcap-only), it just cannot follow links.
    let mut monitor = match LinkMonitor::new() {
        Ok(m) => Some(m),
        Err(e) if ports.iter().all(|p| !has_interface(p.spec.kind)) => {
            debug!("no link monitor: {e}");
            None
        }
        Err(e) => {
            let _ = ready.send(Err(format!("link monitor (rtnetlink): {e}")));
            return;
        }
    };
    let mut opened = Vec::new();
    for pc in &ports {
        match sluice_ports::open(&pc.spec) {
            Ok(p) => opened.push((pc.port_no, p)),
            Err(e) => {
                let _ = ready.send(Err(format!("opening port {} ({}): {e}", pc.port_no, pc.spec)));
                return;
            }
        }
    }
    for (no, p) in opened {
        shared.add_port(no, p);
    }
    let mut ctl: Vec<CtlPort> =
        ports.into_iter().map(|cfg| CtlPort { cfg, present: true, last_try: None }).collect();
    let _ = ready.send(Ok(()));
    drop(ready);

    let mut events: Vec<LinkEvent> = Vec::new();
    let mut last_tick = Instant::now();
    while !shared.stop.load(Acquire) {
        match &monitor {
            Some(m) => {
                let mut set = [PollEntry::readable(m.raw_fd())];
                let _ = poll(&mut set, 20);
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
        while let Ok(cmd) = cmds.try_recv() {
            let r = reconfigure(&shared, &mut ctl, cmd.remove, cmd.add);
            let _ = cmd.reply.send(r);
        }
        events.clear();
        if let Some(m) = monitor.as_mut() {
            if let Err(e) = m.poll(&mut events) {
                warn!("link monitor: {e}");
                std::thread::sleep(ROUND);
            }
        }
        for ev in &events {
            for cp in ctl.iter_mut().filter(|c| has_interface(c.cfg.spec.kind)) {
                if cp.cfg.spec.name != ev.name || !cp.present {
                    continue;
                }
                match ev.change {
                    LinkChange::Up => shared.set_link(cp.cfg.port_no, true),
                    LinkChange::Down => shared.set_link(cp.cfg.port_no, false),
                    LinkChange::Removed => {
                        shared.remove_port(cp.cfg.port_no, "interface removed");
                        cp.present = false;
                    }
                }
            }
        }
        if shared.control_wake.swap(false, Relaxed)
            || !events.is_empty()
            || last_tick.elapsed() >= ROUND
        {
            for cp in ctl.iter_mut().filter(|c| c.present) {
                if shared.slot(cp.cfg.port_no).is_none_or(|s| s.is_gone()) {
                    shared.remove_port(cp.cfg.port_no, "port failed");
                    cp.present = false;
                }
            }
        }
        if last_tick.elapsed() >= ROUND {
            last_tick = Instant::now();
            shared.tick();
            for cp in ctl.iter_mut().filter(|c| !c.present && c.cfg.reopen) {
                let exists =
                    monitor.as_ref().is_some_and(|m| m.state_of(&cp.cfg.spec.name).is_some());
                if !exists || cp.last_try.is_some_and(|t| t.elapsed() < REOPEN_EVERY) {
                    continue;
                }
                cp.last_try = Some(Instant::now());
                match sluice_ports::open(&cp.cfg.spec) {
                    Ok(p) => {
                        info!(port = cp.cfg.port_no, spec = %cp.cfg.spec, "interface is back: port reopened");
                        shared.add_port(cp.cfg.port_no, p);
                        cp.present = true;
                    }
                    Err(e) => debug!(spec = %cp.cfg.spec, "reopen failed (will retry): {e}"),
                }
            }
        }
    }
}

/// Applies a reload's port changes (see the module docs): all or nothing
/// as far as opening goes.
fn reconfigure(
    shared: &Shared,
    ctl: &mut Vec<CtlPort>,
    remove: Vec<PortConfig>,
    add: Vec<PortConfig>,
) -> Result<(), String> {
    let mut opened = Vec::new();
    for pc in add {
        match sluice_ports::open(&pc.spec) {
            Ok(p) => opened.push((pc, p)),
            Err(e) => {
                return Err(format!("opening port {} ({}): {e}", pc.port_no, pc.spec));
            }
        }
    }
    for r in &remove {
        if let Some(i) = ctl.iter().position(|c| c.cfg == *r) {
            let cp = ctl.remove(i);
            if cp.present {
                shared.remove_port(cp.cfg.port_no, "removed from the configuration");
            } else {
                info!(port = r.port_no, spec = %r.spec, "absent port removed from the configuration");
            }
        }
    }
    for (cfg, p) in opened {
        info!(port = cfg.port_no, spec = %cfg.spec, "port added by the configuration");
        shared.add_port(cfg.port_no, p);
        ctl.push(CtlPort { cfg, present: true, last_try: None });
    }
    Ok(())
}
