//! Configuration reload: what changes between the running configuration
//! and a newly read one, and which of it can change while the switch runs.
//!
//! What? On SIGHUP (or `sluice ctl reload`) the daemon reads its
//! configuration again — the same file and the same command-line flags as
//! at start, flags still winning — and checks it exactly as at start
//! ([`crate::config`]). An invalid file changes nothing (the error names
//! the key). A valid one is compared with the running configuration by
//! [`plan`], a pure function, and the daemon applies the plan
//! (`daemon.rs`):
//!
//! - **Live**: ports added and removed (a port whose kind, name, options,
//!   number or `reopen` changed is removed and added again), listeners and
//!   controllers added and removed (connections of unchanged ones are
//!   kept), `busy_poll_us` and `fail_mode`.
//! - **Needs restart** (logged by key, the running value kept): the
//!   switch's name and control socket, `dpid`, `workers`, `netns`,
//!   `description`, `datapath`, `cache`, `invalid_ttl_packet_in`, every
//!   `[limits]` key, every `[agent]` key and `[tls]`. They size or shape
//!   structures built once (tables, caches, worker contexts, the agent's
//!   queues and TLS context).
//!
//! Invariant: the configuration the daemon keeps as "running" after a
//! reload is [`Plan::running`]: the old one with only the live settings
//! replaced, so the next reload is compared against what really runs.

use std::time::Duration;

use sluice_agent::{Endpoint, FailMode, Target};

use crate::config::{DaemonConfig, PortConfig};

/// What a reload changes.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Running ports no longer configured (or configured differently).
    pub remove_ports: Vec<PortConfig>,
    /// Configured ports not running (or running differently).
    pub add_ports: Vec<PortConfig>,
    /// Targets (listeners, controllers) no longer configured.
    pub remove_targets: Vec<Target>,
    /// Targets configured and not running.
    pub add_targets: Vec<Target>,
    /// A new `busy_poll_us`.
    pub busy_poll: Option<Duration>,
    /// A new `fail_mode`.
    pub fail_mode: Option<FailMode>,
    /// Keys that changed but cannot change while the switch runs.
    pub needs_restart: Vec<&'static str>,
    /// The configuration that runs once the plan is applied.
    pub running: DaemonConfig,
}

impl Plan {
    /// Whether the plan changes nothing (needs-restart keys aside).
    pub fn is_empty(&self) -> bool {
        self.remove_ports.is_empty()
            && self.add_ports.is_empty()
            && self.remove_targets.is_empty()
            && self.add_targets.is_empty()
            && self.busy_poll.is_none()
            && self.fail_mode.is_none()
    }
}

/// The same port, opened the same way.
fn same_port(a: &PortConfig, b: &PortConfig) -> bool {
    a.port_no == b.port_no
        && a.reopen == b.reopen
        && a.spec.kind == b.spec.kind
        && a.spec.name == b.spec.name
        && a.spec.options == b.spec.options
}

/// The control socket's target of `cfg`, if it has one.
fn control_target(cfg: &DaemonConfig) -> Option<Target> {
    let c = cfg.control.as_ref()?;
    cfg.agent.targets.iter().find(|t| t.addr == Endpoint::Unix(c.path.clone())).cloned()
}

/// Compares the running configuration `old` with a newly loaded `new`.
pub fn plan(old: &DaemonConfig, new: &DaemonConfig) -> Plan {
    let mut restart = Vec::new();
    let mut check = |changed: bool, key: &'static str| {
        if changed {
            restart.push(key);
        }
    };
    let (o, n) = (&old.datapath, &new.datapath);
    let (op, np) = (&o.pipeline, &n.pipeline);
    check(old.name != new.name, "name");
    check(old.control != new.control, "rundir/control_socket");
    check(op.datapath_id != np.datapath_id, "dpid");
    check(o.workers != n.workers, "workers");
    check(o.netns != n.netns, "netns");
    check(op.dp_desc != np.dp_desc, "description");
    check(op.datapath != np.datapath, "datapath");
    check(op.cache != np.cache, "cache");
    check(op.invalid_ttl_packet_in != np.invalid_ttl_packet_in, "invalid_ttl_packet_in");
    check(op.n_tables != np.n_tables, "limits.n_tables");
    check(op.max_flows_per_table != np.max_flows_per_table, "limits.max_flows_per_table");
    check(op.n_buffers != np.n_buffers, "limits.n_buffers");
    check(op.max_groups != np.max_groups, "limits.max_groups");
    check(op.max_buckets != np.max_buckets, "limits.max_buckets");
    check(op.max_meters != np.max_meters, "limits.max_meters");
    check(op.max_bands != np.max_bands, "limits.max_bands");
    check(op.max_group_depth != np.max_group_depth, "limits.max_group_depth");
    check(o.mac_table_size != n.mac_table_size, "limits.mac_table_size");
    check(o.mac_aging != n.mac_aging, "limits.mac_aging_secs");
    check(o.async_queue_len != n.async_queue_len, "limits.async_queue_len");
    let (oa, na) = (&old.agent, &new.agent);
    check(oa.probe_interval != na.probe_interval, "agent.probe_interval_ms");
    check(oa.backoff_min != na.backoff_min, "agent.backoff_min_ms");
    check(oa.backoff_max != na.backoff_max, "agent.backoff_max_ms");
    check(oa.connect_timeout != na.connect_timeout, "agent.connect_timeout_ms");
    check(oa.queue_len != na.queue_len, "agent.queue_len");
    check(oa.packet_in_limit != na.packet_in_limit, "agent.packet_in_rate/packet_in_burst");
    check(oa.max_passive_conns != na.max_passive_conns, "agent.max_passive_conns");
    check(
        oa.passive_counts_as_controller != na.passive_counts_as_controller,
        "agent.passive_counts_as_controller",
    );
    check(oa.tls != na.tls, "tls");

    let remove_ports: Vec<PortConfig> =
        o.ports.iter().filter(|p| !n.ports.iter().any(|q| same_port(p, q))).cloned().collect();
    let add_ports: Vec<PortConfig> =
        n.ports.iter().filter(|p| !o.ports.iter().any(|q| same_port(p, q))).cloned().collect();

    // The control socket stays what it was (a change needs a restart).
    let old_control = control_target(old);
    let new_control = control_target(new);
    let mut targets: Vec<Target> =
        na.targets.iter().filter(|t| Some(*t) != new_control.as_ref()).cloned().collect();
    targets.extend(old_control);
    let remove_targets: Vec<Target> =
        oa.targets.iter().filter(|t| !targets.contains(t)).cloned().collect();
    let add_targets: Vec<Target> =
        targets.iter().filter(|t| !oa.targets.contains(t)).cloned().collect();

    let busy_poll = (o.busy_poll != n.busy_poll).then_some(n.busy_poll);
    let fail_mode = (o.fail_mode != n.fail_mode).then_some(n.fail_mode);

    let mut running = old.clone();
    running.datapath.ports = n.ports.clone();
    running.datapath.busy_poll = n.busy_poll;
    running.datapath.fail_mode = n.fail_mode;
    running.agent.fail_mode = n.fail_mode;
    running.agent.targets = targets;
    Plan {
        remove_ports,
        add_ports,
        remove_targets,
        add_targets,
        busy_poll,
        fail_mode,
        needs_restart: restart,
        running,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{parse_file, Overrides};

    fn cfg(text: &str) -> DaemonConfig {
        let over = Overrides { rundir: Some("/tmp/r".into()), ..Default::default() };
        DaemonConfig::build(parse_file(text).unwrap(), &over).unwrap()
    }

    fn names(ps: &[PortConfig]) -> Vec<(String, u32)> {
        ps.iter().map(|p| (p.spec.name.clone(), p.port_no)).collect()
    }

    #[test]
    fn same_file_changes_nothing() {
        let text = "dpid = 5\ncontrollers = [\"tcp:127.0.0.1:6653\"]\n\
                    [[port]]\nspec = \"afpacket:a\"\n[[port]]\nspec = \"afpacket:b=7\"\n";
        let p = plan(&cfg(text), &cfg(text));
        assert!(p.is_empty() && p.needs_restart.is_empty(), "{p:?}");
    }

    #[test]
    fn ports_added_removed_and_changed() {
        let old = cfg("[[port]]\nspec = \"afpacket:a=1\"\n[[port]]\nspec = \"afpacket:b=2\"\n\
                       [[port]]\nspec = \"afpacket:c=3\"\n");
        let new = cfg("[[port]]\nspec = \"afpacket:a=1\"\n[[port]]\nspec = \"afpacket:c=4\"\n\
                       [[port]]\nspec = \"afpacket:d=5\"\nreopen = false\n");
        let p = plan(&old, &new);
        assert_eq!(names(&p.remove_ports), [("b".into(), 2), ("c".into(), 3)]);
        assert_eq!(names(&p.add_ports), [("c".into(), 4), ("d".into(), 5)]);
        assert_eq!(names(&p.running.datapath.ports), names(&new.datapath.ports));
        assert!(p.needs_restart.is_empty());
    }

    #[test]
    fn unnumbered_ports_keep_their_numbers() {
        let old = cfg("[[port]]\nspec = \"afpacket:a\"\n[[port]]\nspec = \"afpacket:b\"\n");
        assert_eq!(names(&old.datapath.ports), [("a".into(), 1), ("b".into(), 2)]);
        // A new first entry would take number 1 in a fresh start.
        let text = "[[port]]\nspec = \"afpacket:n\"\n[[port]]\nspec = \"afpacket:a\"\n\
                    [[port]]\nspec = \"afpacket:b\"\n";
        let over = Overrides { rundir: Some("/tmp/r".into()), ..Default::default() };
        let new =
            DaemonConfig::build_keeping(parse_file(text).unwrap(), &over, &old.datapath.ports)
                .unwrap();
        let p = plan(&old, &new);
        assert!(p.remove_ports.is_empty(), "{p:?}");
        assert_eq!(names(&p.add_ports), [("n".into(), 3)]);
        // An explicit number wins over a kept one.
        let text = "[[port]]\nspec = \"afpacket:n=1\"\n[[port]]\nspec = \"afpacket:a\"\n";
        let new =
            DaemonConfig::build_keeping(parse_file(text).unwrap(), &over, &old.datapath.ports)
                .unwrap();
        assert_eq!(names(&new.datapath.ports), [("n".into(), 1), ("a".into(), 2)]);
    }

    #[test]
    fn targets_swapped_control_socket_kept() {
        let old = cfg("listen = [\"ptcp:6634:127.0.0.1\"]\ncontrollers = [\"tcp:127.0.0.1:1\"]\n");
        let new = cfg("listen = [\"ptcp:6634:127.0.0.1\"]\ncontrollers = [\"tcp:127.0.0.1:2\"]\n\
                       name = \"other\"\n");
        let p = plan(&old, &new);
        let s = |ts: &[Target]| ts.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        assert_eq!(s(&p.remove_targets), ["tcp:127.0.0.1:1"]);
        assert_eq!(s(&p.add_targets), ["tcp:127.0.0.1:2"]);
        assert_eq!(p.needs_restart, ["name", "rundir/control_socket"]);
        assert!(s(&p.running.agent.targets).contains(&"punix:/tmp/r/br0.mgmt".to_string()));
        assert_eq!(p.running.name, "br0");
    }

    #[test]
    fn scalars_live_or_restart() {
        let old = cfg("busy_poll_us = 10\nfail_mode = \"secure\"\ndpid = 1\n");
        let new = cfg("busy_poll_us = 20\nfail_mode = \"standalone\"\ndpid = 2\nworkers = 9\n\
                       [limits]\nn_tables = 3\n[agent]\nqueue_len = 7\n");
        let p = plan(&old, &new);
        assert_eq!(p.busy_poll, Some(Duration::from_micros(20)));
        assert_eq!(p.fail_mode, Some(FailMode::Standalone));
        assert_eq!(p.needs_restart, ["dpid", "workers", "limits.n_tables", "agent.queue_len"]);
        assert_eq!(p.running.datapath.pipeline.datapath_id, 1);
        assert_eq!(p.running.datapath.busy_poll, Duration::from_micros(20));
        assert_eq!(p.running.agent.queue_len, old.agent.queue_len);
    }
}
