//! `sluice run`: the switch daemon.
//!
//! Flags cover the common settings; `--config FILE` (TOML, see
//! `sluice_datapath::config`) covers the rest. Flags override the file's
//! scalar keys and add to its lists. The configuration is checked before
//! anything is opened; an invalid one fails with a message naming the key.
//! SIGHUP (or `sluice ctl reload`) reads the file and the same flags again
//! and applies what changed without stopping forwarding (ports, listeners,
//! controllers, `busy_poll_us`, `fail_mode`; see
//! `sluice_datapath::reload`). Runs until SIGINT or SIGTERM, then closes
//! the controller connections and stops the workers. Logs go to stderr (`RUST_LOG` filters, default info).
//!
//! Like Open vSwitch's bridges, a switch has a name (`--name`, default
//! `br0`) and listens on a local control socket, `RUNDIR/NAME.mgmt`
//! (`--rundir`, else `$SLUICE_RUNDIR`, else `/run/sluice`), so
//! `sluice ctl dump-flows` or `sluice ctl br0 dump-flows` needs no address.
//! `--no-control-socket` turns it off.

use std::path::PathBuf;

use anyhow::Context;
use sluice_datapath::config::{DaemonConfig, Overrides};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The switch's name; its control socket is RUNDIR/NAME.mgmt (default br0).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Directory of the control socket (default: $SLUICE_RUNDIR, else /run/sluice).
    #[arg(long, value_name = "DIR")]
    pub rundir: Option<PathBuf>,
    /// Do not open the local control socket.
    #[arg(long)]
    pub no_control_socket: bool,
    /// TOML configuration file (ports, dpid, controllers, listener, TLS, limits).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Datapath id, decimal or 0x hex, e.g. `0xab` (default 1).
    #[arg(long, value_name = "ID")]
    pub dpid: Option<String>,
    /// A port, e.g. `afpacket:veth1=1` or `afxdp:eth0=2` (repeatable;
    /// `=N` is the OpenFlow port number, otherwise the lowest free one).
    #[arg(long = "port", value_name = "SPEC")]
    pub ports: Vec<String>,
    /// Passive OpenFlow listener, e.g. `ptcp:6634`, `ptcp:6634:127.0.0.1` or
    /// `punix:/path/to/socket` (repeatable).
    #[arg(long, value_name = "TARGET")]
    pub listen: Vec<String>,
    /// Controller to connect to, e.g. `tcp:127.0.0.1:6653` or `ssl:...` (repeatable).
    #[arg(long = "controller", value_name = "TARGET")]
    pub controllers: Vec<String>,
    /// Certificate revocation list (PEM; repeatable, or one bundle) for
    /// the `[tls]` section of --config: a peer certificate it lists, or
    /// one whose issuer has no list given, is refused on ssl:/pssl:.
    #[arg(long = "crl", value_name = "FILE")]
    pub crls: Vec<PathBuf>,
    /// What to do while no controller is connected: `secure` (default:
    /// flows only, misses dropped) or `standalone` (MAC-learning switch).
    #[arg(long, value_name = "MODE")]
    pub fail_mode: Option<String>,
    /// Worker threads (default: available cores minus one, at least one).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Microseconds a worker keeps polling its ports without sleeping after
    /// the last frame it received (default 1000; 0: sleep at once). Lower
    /// latency for light traffic against CPU time while idle.
    #[arg(long, value_name = "US")]
    pub busy_poll_us: Option<u64>,
    /// Open the ports in this network namespace (`ip netns` name); the
    /// OpenFlow sockets stay in the current one.
    #[arg(long, value_name = "NAME")]
    pub netns: Option<String>,
    /// Flow-table lookup: `reference` (linear scan, the oracle),
    /// `classifier` (tuple-space search) or `compiled` (default: tables
    /// compiled to native code with Cranelift on a compiler thread, the
    /// tuple-space index meanwhile).
    #[arg(long, value_name = "KIND")]
    pub datapath: Option<String>,
    /// Caches in front of the tables: `auto` (default: each worker keeps
    /// the caches it measures to pay on its traffic, `on`, `megaflow` or
    /// `off`), `on` (exact-match + megaflow), `megaflow` or `off`.
    #[arg(long, value_name = "MODE")]
    pub cache: Option<String>,
    /// What an INVALID_TTL packet-in carries: `full` (default: the whole
    /// frame, as Open vSwitch sends it; Faucet builds ICMP time-exceeded
    /// from it although it sets miss_send_len to 0) or `miss_send_len`
    /// (cut to the switch's miss_send_len, the OpenFlow 1.3.5 text).
    #[arg(long, value_name = "MODE")]
    pub invalid_ttl_packet_in: Option<String>,
    /// Serve Prometheus metrics (text format 0.0.4) at http://ADDR:PORT/metrics,
    /// e.g. `127.0.0.1:9750` (an all-addresses bind is warned about).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Log format on stderr: `text` (default) or `json` (one object per line).
    #[arg(long, value_name = "FORMAT", default_value = "text")]
    pub log_format: sluice_datapath::daemon::LogFormat,
    /// Check the configuration, print it and exit.
    #[arg(long)]
    pub check: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let env = std::env::var_os(sluice_datapath::config::RUNDIR_ENV).filter(|e| !e.is_empty());
    let over = Overrides {
        name: a.name,
        rundir: a.rundir.or(env.map(PathBuf::from)),
        no_control_socket: a.no_control_socket,
        dpid: a.dpid,
        ports: a.ports,
        listen: a.listen,
        controllers: a.controllers,
        fail_mode: a.fail_mode,
        workers: a.workers,
        busy_poll_us: a.busy_poll_us,
        netns: a.netns,
        datapath: a.datapath,
        cache: a.cache,
        invalid_ttl_packet_in: a.invalid_ttl_packet_in,
        crls: a.crls,
    };
    let cfg = DaemonConfig::load(a.config.as_deref(), &over)?;
    let source = sluice_datapath::daemon::ConfigSource { path: a.config.clone(), over };
    if a.check {
        print_config(&cfg);
        return Ok(());
    }
    if cfg.datapath.ports.is_empty() {
        anyhow::bail!("no ports: give --port SPEC or [[port]] entries in --config");
    }
    sluice_datapath::daemon::init_logging_as(a.log_format, "info");
    let stop = sluice_datapath::daemon::stop_on_signals().context("installing signal handlers")?;
    let reload =
        sluice_datapath::daemon::reload_on_sighup().context("installing signal handlers")?;
    let opts = sluice_datapath::daemon::RunOptions {
        metrics: a.metrics,
        source: Some(source),
        reload: Some(reload),
    };
    sluice_datapath::daemon::run_with(cfg, &opts, &stop)
}

fn print_config(cfg: &DaemonConfig) {
    let d = &cfg.datapath;
    println!("name: {}", cfg.name);
    match &cfg.control {
        Some(c) => println!("control socket: {}", c.path.display()),
        None => println!("control socket: off"),
    }
    println!("dpid: {:#018x}", d.pipeline.datapath_id);
    println!("workers: {}", d.workers);
    println!("busy_poll_us: {}", d.busy_poll.as_micros());
    println!("fail_mode: {:?}", d.fail_mode);
    println!("datapath: {:?}", d.pipeline.datapath);
    println!("cache: {:?}", d.pipeline.cache);
    println!("invalid_ttl_packet_in: {:?}", d.pipeline.invalid_ttl_packet_in);
    if let Some(ns) = &d.netns {
        println!("netns: {ns}");
    }
    for p in &d.ports {
        println!("port {}: {}{}", p.port_no, p.spec, if p.reopen { "" } else { " (no reopen)" });
    }
    for t in &cfg.agent.targets {
        println!("{}: {t}", if t.passive { "listen" } else { "controller" });
    }
    println!("tables: {}", d.pipeline.n_tables);
}
