//! The daemon: a [`Datapath`] plus, when listeners or controllers are
//! configured, the OpenFlow agent on a small tokio runtime.
//!
//! [`Daemon::start`] brings both up (the datapath first, so a bad port fails
//! before any socket is opened), connects them — the agent's notifier is
//! called when the datapath queues asynchronous messages, and a task follows
//! the agent's controller count to switch the fail mode — and returns a
//! handle. [`run`] is `sluice run`: start, wait for SIGINT/SIGTERM
//! ([`stop_on_signals`]), shut down cleanly (agent first, so controllers see
//! the connection close, then the workers). A plain-TCP listener on every
//! address (`ptcp:` without an IP, `0.0.0.0`, `[::]`) is logged as a
//! warning: whoever reaches the port controls the switch.
//!
//! The local control socket (`punix:RUNDIR/NAME.mgmt`, see
//! [`crate::config::ControlSocket`]) is one more passive target: the daemon
//! creates the run directory (mode 0755) and the agent the socket (mode
//! 0660, a stale file taken over, a live one refused, removed on a clean
//! exit). If another switch answers on it, starting fails and says so. If
//! the run directory is the built-in default and this process may not
//! write it (not root), the switch runs without the socket and warns.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use sluice_agent::{Agent, AgentConfig, AgentError, Endpoint, Target, Transport};
use tracing::{error, info, warn};

use crate::config::{ControlSocket, DaemonConfig, Overrides};
use crate::Datapath;

/// A running switch.
pub struct Daemon {
    // Field order is drop order: agent, runtime, then the datapath.
    agent: Option<Agent>,
    rt: Option<tokio::runtime::Runtime>,
    dp: Datapath,
    listeners: Vec<(Target, Endpoint)>,
    /// The configuration that runs (what a reload is compared with).
    running: DaemonConfig,
    /// Reloads tried so far (numbers the reload status file).
    reloads: u64,
}

/// What [`Daemon::reload`] did.
#[derive(Clone, Debug, Default)]
pub struct ReloadReport {
    pub ports_added: Vec<u32>,
    pub ports_removed: Vec<u32>,
    pub targets_added: Vec<String>,
    pub targets_removed: Vec<String>,
    /// Targets that could not be started (e.g. a listener's address in
    /// use), with the reason; they are not part of the running
    /// configuration, so the next reload tries them again.
    pub target_errors: Vec<String>,
    /// Scalar settings changed live (`busy_poll_us`, `fail_mode`).
    pub settings: Vec<&'static str>,
    /// Keys that changed but need a restart (running values kept).
    pub needs_restart: Vec<&'static str>,
}

impl Daemon {
    /// Starts the datapath and, if any target is configured, the agent.
    pub fn start(cfg: DaemonConfig) -> anyhow::Result<Daemon> {
        let mut running = cfg.clone();
        let DaemonConfig { name, datapath, agent: mut agent_cfg, control } = cfg;
        // A second `sluice run` of the same switch must not open (and, for
        // pcap outputs, truncate) the first one's ports: ask the socket
        // before anything is opened. The agent's bind checks again.
        if let Some(c) = &control {
            if std::os::unix::net::UnixStream::connect(&c.path).is_ok() {
                return Err(name_taken(&name, &c.path));
            }
        }
        let dp = Datapath::start(datapath)?;
        let mut control = control;
        if let Some(c) = &control {
            if !make_rundir(c)? {
                drop_control(&mut agent_cfg, &mut control);
            }
        }
        if agent_cfg.targets.is_empty() {
            info!("no listener or controller configured: running without an OpenFlow channel");
            running.agent = agent_cfg;
            running.control = control;
            return Ok(Daemon {
                agent: None,
                rt: None,
                dp,
                listeners: Vec::new(),
                running,
                reloads: 0,
            });
        }
        let rt = agent_runtime()?;
        let started = match rt.block_on(Agent::start(agent_cfg.clone(), dp.switch())) {
            Err(AgentError::Bind { target, err })
                if control.as_ref().is_some_and(|c| !c.rundir_chosen && is_control(c, &target))
                    && err.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                warn!(
                    socket = %target.addr,
                    "no control socket: {err} (run as root, or give --rundir DIR or \
                     --no-control-socket)"
                );
                drop_control(&mut agent_cfg, &mut control);
                if agent_cfg.targets.is_empty() {
                    info!("no listener or controller left: running without an OpenFlow channel");
                    running.agent = agent_cfg;
                    running.control = control;
                    return Ok(Daemon {
                        agent: None,
                        rt: Some(rt),
                        dp,
                        listeners: Vec::new(),
                        running,
                        reloads: 0,
                    });
                }
                rt.block_on(Agent::start(agent_cfg.clone(), dp.switch()))
            }
            other => other,
        };
        let agent = match started {
            Ok(a) => a,
            Err(AgentError::InUse { target, path })
                if control.as_ref().is_some_and(|c| is_control(c, &target)) =>
            {
                return Err(name_taken(&name, &path));
            }
            Err(e) => return Err(e.into()),
        };
        attach_agent(&agent, &dp, &rt);
        running.agent = agent_cfg;
        running.control = control.clone();
        let listeners = agent.listeners().to_vec();
        for (t, a) in &listeners {
            info!(target = %t, addr = %a, "OpenFlow listener ready");
            if control.as_ref().is_some_and(|c| is_control(c, t)) {
                info!(switch = %name, "control socket ready: sluice ctl {name} COMMAND");
            }
            let Some(a) = a.inet() else { continue };
            if t.transport == Transport::Tcp && a.ip().is_unspecified() {
                warn!(
                    target = %t,
                    "OpenFlow listener on every address without TLS: anyone who reaches port {} \
                     controls this switch (use pssl: with certificates, or bind ptcp: to \
                     127.0.0.1)",
                    a.port()
                );
            }
        }
        Ok(Daemon { agent: Some(agent), rt: Some(rt), dp, listeners, running, reloads: 0 })
    }

    /// The configuration that runs now.
    pub fn running_config(&self) -> &DaemonConfig {
        &self.running
    }

    /// Applies a newly loaded (and so already checked) configuration while
    /// the switch forwards; see [`crate::reload`] for what can change
    /// live. Ports go first and all or nothing: if an added port cannot be
    /// opened, the error is returned and nothing at all changed. Then
    /// targets (removed ones closed, new ones started; one that cannot be
    /// started is reported in [`ReloadReport::target_errors`] and left
    /// out), then `busy_poll_us` and `fail_mode`. Keys that need a restart
    /// are reported and their running values kept.
    pub fn reload(&mut self, new: DaemonConfig) -> anyhow::Result<ReloadReport> {
        let plan = crate::reload::plan(&self.running, &new);
        let mut report =
            ReloadReport { needs_restart: plan.needs_restart.clone(), ..Default::default() };
        if !plan.add_ports.is_empty() || !plan.remove_ports.is_empty() {
            self.dp
                .reconfigure_ports(plan.remove_ports.clone(), plan.add_ports.clone())
                .context("configuration not applied")?;
            report.ports_removed = plan.remove_ports.iter().map(|p| p.port_no).collect();
            report.ports_added = plan.add_ports.iter().map(|p| p.port_no).collect();
        }
        let mut running = plan.running.clone();
        if !plan.remove_targets.is_empty() || !plan.add_targets.is_empty() {
            self.reload_targets(&plan, &mut running, &mut report)?;
        }
        if let Some(d) = plan.busy_poll {
            self.dp.set_busy_poll(d);
            report.settings.push("busy_poll_us");
        }
        if let Some(m) = plan.fail_mode {
            self.dp.set_fail_mode(m);
            report.settings.push("fail_mode");
        }
        self.running = running;
        Ok(report)
    }

    /// The target part of [`Daemon::reload`].
    fn reload_targets(
        &mut self,
        plan: &crate::reload::Plan,
        running: &mut DaemonConfig,
        report: &mut ReloadReport,
    ) -> anyhow::Result<()> {
        if self.rt.is_none() {
            self.rt = Some(agent_runtime()?);
        }
        let rt = self.rt.as_ref().context("no runtime")?;
        let agent = match &mut self.agent {
            Some(a) => a,
            None => {
                // Started without any target: start the agent with none,
                // then add the targets one by one like any other.
                let mut cfg = running.agent.clone();
                cfg.targets.clear();
                let a = rt.block_on(Agent::start(cfg, self.dp.switch()))?;
                attach_agent(&a, &self.dp, rt);
                self.agent.insert(a)
            }
        };
        for t in &plan.remove_targets {
            if agent.remove_target(t) {
                report.targets_removed.push(t.to_string());
            }
        }
        for t in &plan.add_targets {
            match rt.block_on(agent.add_target(t.clone())) {
                Ok(_) => report.targets_added.push(t.to_string()),
                Err(e) => {
                    running.agent.targets.retain(|x| x != t);
                    report.target_errors.push(format!("{t}: {e}"));
                }
            }
        }
        self.listeners = agent.listeners().to_vec();
        Ok(())
    }

    pub fn datapath(&self) -> &Datapath {
        &self.dp
    }

    /// Passive targets and the addresses they are bound to.
    pub fn listeners(&self) -> &[(Target, Endpoint)] {
        &self.listeners
    }

    /// Serves the metrics endpoint on `addr` (see [`crate::metrics`]) on
    /// the daemon's runtime (made if the switch had none); returns the
    /// address bound (useful with port 0).
    pub fn serve_metrics(&mut self, addr: SocketAddr) -> anyhow::Result<SocketAddr> {
        if self.rt.is_none() {
            self.rt = Some(agent_runtime()?);
        }
        let rt = self.rt.as_ref().context("no runtime")?;
        let l = rt
            .block_on(crate::metrics::bind(addr))
            .with_context(|| format!("--metrics {addr}: cannot listen"))?;
        let local = l.local_addr()?;
        let probe = self.dp.probe();
        let agent = self.agent.as_ref().map(|a| a.observer());
        let render: Arc<dyn Fn() -> String + Send + Sync> =
            Arc::new(move || crate::metrics::render(&probe, agent.as_ref()));
        rt.spawn(crate::metrics::serve(l, render));
        info!(addr = %local, "metrics endpoint ready: http://{local}/metrics");
        Ok(local)
    }

    /// Connected controllers (0 without an agent).
    pub fn controllers_connected(&self) -> usize {
        self.agent.as_ref().map_or(0, |a| a.controllers_connected())
    }

    /// Closes every connection, then stops the workers.
    pub fn shutdown(self) {
        self.close(false);
    }

    /// [`Daemon::shutdown`] for a process about to exit: the workers stop
    /// and the ports close as there, but the flow tables are left to the
    /// exit instead of being freed ([`Datapath::stop_for_exit`]).
    pub fn shutdown_for_exit(self) {
        self.close(true);
    }

    fn close(mut self, exiting: bool) {
        let t = std::time::Instant::now();
        if let (Some(agent), Some(rt)) = (self.agent.take(), self.rt.as_ref()) {
            rt.block_on(agent.shutdown());
        }
        let agent_ms = t.elapsed().as_millis() as u64;
        if let Some(rt) = self.rt.take() {
            rt.shutdown_timeout(Duration::from_secs(2));
        }
        let runtime_ms = t.elapsed().as_millis() as u64 - agent_ms;
        let Daemon { dp, .. } = self;
        if exiting {
            dp.stop_for_exit();
        } else {
            drop(dp);
        }
        let datapath_ms = t.elapsed().as_millis() as u64 - agent_ms - runtime_ms;
        info!(agent_ms, runtime_ms, datapath_ms, "shutdown steps (milliseconds)");
    }
}

/// Connects a started agent to the datapath: asynchronous messages wake
/// the agent, and the agent's controller count switches the fail mode.
fn attach_agent(agent: &Agent, dp: &Datapath, rt: &tokio::runtime::Runtime) {
    let n = agent.notifier();
    dp.set_notifier(move || n.notify());
    let mut watch = agent.watch_controllers();
    let mode = dp.mode_handle();
    rt.spawn(async move {
        loop {
            let n = *watch.borrow_and_update();
            mode.set_controller_connected(n > 0);
            if watch.changed().await.is_err() {
                break;
            }
        }
    });
}

/// Another switch of this name answers on its control socket.
fn name_taken(name: &str, path: &std::path::Path) -> anyhow::Error {
    anyhow::anyhow!(
        "control socket {}: another switch named {name} is running and listening on it (stop \
         it, or give this one another --name)",
        path.display()
    )
}

/// Whether `t` is the control socket's target.
fn is_control(c: &ControlSocket, t: &Target) -> bool {
    t.addr == Endpoint::Unix(c.path.clone())
}

/// Forgets the control socket (its target included).
fn drop_control(agent: &mut AgentConfig, control: &mut Option<ControlSocket>) {
    if let Some(c) = control.take() {
        agent.targets.retain(|t| !is_control(&c, t));
    }
}

/// Creates the run directory (mode 0755, parents too). `Ok(false)`: the
/// directory is the built-in default and this process may not create it
/// (warned); a chosen one that cannot be created is an error.
fn make_rundir(c: &ControlSocket) -> anyhow::Result<bool> {
    use std::os::unix::fs::DirBuilderExt;
    let made = std::fs::DirBuilder::new().recursive(true).mode(0o755).create(&c.rundir);
    match made {
        Ok(()) => Ok(true),
        Err(e)
            if !c.rundir_chosen
                && (e.kind() == std::io::ErrorKind::PermissionDenied
                    || e.raw_os_error() == Some(libc::EROFS)) =>
        {
            warn!(
                rundir = %c.rundir.display(),
                "no control socket: cannot create the run directory: {e} (run as root, or give \
                 --rundir DIR or --no-control-socket)"
            );
            Ok(false)
        }
        Err(e) => Err(e).with_context(|| format!("creating run directory {}", c.rundir.display())),
    }
}

/// Registers SIGINT and SIGTERM: the first sets the returned flag; a second
/// one while the flag is set exits at once (status 1), for a stuck shutdown.
pub fn stop_on_signals() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 1, flag.clone())?;
        signal_hook::flag::register(sig, flag.clone())?;
    }
    Ok(flag)
}

/// The small tokio runtime an agent runs on (one thread, named
/// `sluice-agent`).
pub(crate) fn agent_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("sluice-agent")
        .enable_all()
        .build()
}

/// Logs to stderr, filtered by `RUST_LOG` (default `info`); a second call
/// is harmless.
pub fn init_logging() {
    init_logging_with("info");
}

/// Like [`init_logging`] with another default filter (e.g. `warn` for the
/// demo, whose screen is its output).
pub fn init_logging_with(default: &str) {
    init_logging_as(LogFormat::Text, default);
}

/// How log lines look on stderr.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines (tracing's default format).
    #[default]
    Text,
    /// One JSON object per line: `timestamp` (RFC 3339, UTC), `level`,
    /// `target`, `fields` (holding `message` and the event's fields) and
    /// the enclosing `spans`.
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<LogFormat, String> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(format!("unknown log format {s:?} (expected text or json)")),
        }
    }
}

/// [`init_logging_with`] in format `format`.
pub fn init_logging_as(format: LogFormat, default: &str) {
    let env = std::env::var("RUST_LOG").ok();
    let filter = tracing_subscriber::EnvFilter::try_new(log_directives(env.as_deref(), default))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(log_directives(None, default)));
    let b = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => b.try_init(),
        LogFormat::Json => b.json().with_current_span(false).with_span_list(true).try_init(),
    };
}

/// Crates whose `info` lines are for their own developers (Cranelift
/// prints every function it compiles, so a switch recompiling its tables
/// would flood the log): held at `warn` unless the filter names them.
const QUIET_CRATES: [&str; 4] =
    ["cranelift_jit", "cranelift_codegen", "cranelift_module", "cranelift_frontend"];

/// The filter directives: `RUST_LOG` when set and not blank, else
/// `default`, then `CRATE=warn` for each of [`QUIET_CRATES`] the filter
/// does not mention.
fn log_directives(env: Option<&str>, default: &str) -> String {
    let mut d = env.map(str::trim).filter(|s| !s.is_empty()).unwrap_or(default).to_string();
    for c in QUIET_CRATES {
        if !d.contains(c) {
            d.push_str(&format!(",{c}=warn"));
        }
    }
    d
}

/// What `sluice run` adds to the configuration.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// `--metrics ADDR:PORT`: serve the Prometheus endpoint there.
    pub metrics: Option<SocketAddr>,
    /// Where the configuration came from, to read it again when `reload`
    /// is set (SIGHUP, see [`reload_on_sighup`]).
    pub source: Option<ConfigSource>,
    /// Set by SIGHUP: reload the configuration from [`RunOptions::source`].
    pub reload: Option<Arc<AtomicBool>>,
}

/// The file and flags a configuration is loaded from.
#[derive(Clone, Debug, Default)]
pub struct ConfigSource {
    /// `--config FILE`.
    pub path: Option<std::path::PathBuf>,
    /// The command-line flags (they override the file on every reload, as
    /// at start).
    pub over: Overrides,
}

/// Registers SIGHUP: sets the returned flag (the run loop reloads).
pub fn reload_on_sighup() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, flag.clone())?;
    Ok(flag)
}

/// `sluice ctl SWITCH reload`: asks the switch listening on the control
/// socket `path` to reload its configuration, by sending SIGHUP to the
/// process at the other end of the socket (the same path as a SIGHUP sent
/// by hand). Refuses if that process is not a `sluice` program. Returns
/// its process id. The daemon logs the outcome.
pub fn request_reload(path: &std::path::Path) -> anyhow::Result<u32> {
    let s = std::os::unix::net::UnixStream::connect(path)
        .with_context(|| format!("{}: cannot connect", path.display()))?;
    let pid = crate::sys::peer_pid(&s)
        .with_context(|| format!("{}: cannot tell which process listens", path.display()))?;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    if !comm.trim_end().starts_with("sluice") {
        anyhow::bail!(
            "{}: the process listening (pid {pid}, {:?}) is not sluice; no signal sent",
            path.display(),
            comm.trim_end()
        );
    }
    crate::sys::sighup(pid).with_context(|| format!("sending SIGHUP to pid {pid}"))?;
    Ok(pid)
}

/// Where the outcome of the last reload is written, beside the control
/// socket `sock` (`RUNDIR/NAME.mgmt.reload`), for `sluice ctl NAME reload`
/// to report. See [`ReloadOutcome::text`] for its format.
pub fn reload_status_path(sock: &std::path::Path) -> std::path::PathBuf {
    let mut p = sock.as_os_str().to_owned();
    p.push(".reload");
    p.into()
}

/// What one reload did, as an operator reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReloadOutcome {
    /// The new configuration runs (perhaps with some targets not started
    /// or some keys needing a restart, listed in `lines`).
    pub applied: bool,
    /// One line per fact: the refusal's reason, or what changed.
    pub lines: Vec<String>,
}

impl ReloadOutcome {
    /// The status file's text: `pid P reload N applied|refused`, then
    /// the lines. The pid and the count make every reload's text new.
    pub fn text(&self, pid: u32, n: u64) -> String {
        let mut t =
            format!("pid {pid} reload {n} {}\n", if self.applied { "applied" } else { "refused" });
        for l in &self.lines {
            t.push_str(l);
            t.push('\n');
        }
        t
    }

    /// Parses [`ReloadOutcome::text`]; `None` for anything else.
    pub fn parse(text: &str) -> Option<(u32, u64, ReloadOutcome)> {
        let mut lines = text.lines();
        let head: Vec<&str> = lines.next()?.split(' ').collect();
        let ["pid", pid, "reload", n, verdict] = head[..] else { return None };
        let applied = match verdict {
            "applied" => true,
            "refused" => false,
            _ => return None,
        };
        let lines = lines.map(String::from).collect();
        Some((pid.parse().ok()?, n.parse().ok()?, ReloadOutcome { applied, lines }))
    }
}

/// Reads the configuration again and applies it; logs what happened and,
/// when the switch has a control socket, writes it to
/// [`reload_status_path`]. An invalid configuration (or one whose ports
/// cannot be opened) changes nothing. Returns whether the new
/// configuration was applied.
pub fn reload_from(d: &mut Daemon, src: &ConfigSource) -> bool {
    let out = reload_outcome(d, src);
    d.reloads += 1;
    if let Some(c) = &d.running.control {
        let path = reload_status_path(&c.path);
        let tmp = {
            let mut t = path.as_os_str().to_owned();
            t.push(".tmp");
            std::path::PathBuf::from(t)
        };
        let text = out.text(std::process::id(), d.reloads);
        if let Err(e) = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &path)) {
            warn!(path = %path.display(), "cannot write the reload's outcome: {e}");
        }
    }
    out.applied
}

fn reload_outcome(d: &mut Daemon, src: &ConfigSource) -> ReloadOutcome {
    let refused = |why: String| ReloadOutcome {
        applied: false,
        lines: vec![format!("refused, the running configuration is kept: {why}")],
    };
    let file = src.path.as_ref().map_or("(no --config file)".into(), |p| p.display().to_string());
    info!(config = %file, "reloading the configuration");
    let running_ports = d.running_config().datapath.ports.clone();
    let cfg = match DaemonConfig::load_keeping(src.path.as_deref(), &src.over, &running_ports) {
        Ok(c) => c,
        Err(e) => {
            error!(key = %e.key, "reload refused, the running configuration is kept: {e}");
            return refused(format!("{e} (key {})", e.key));
        }
    };
    if cfg.datapath.ports.is_empty() {
        let why = "no ports (a switch needs at least one [[port]] or --port)";
        error!(key = "port", "reload refused, the running configuration is kept: {why}");
        return refused(format!("{why} (key port)"));
    }
    let r = match d.reload(cfg) {
        Ok(r) => r,
        Err(e) => {
            error!("reload refused, the running configuration is kept: {e:#}");
            return refused(format!("{e:#}"));
        }
    };
    info!(
        ports_added = ?r.ports_added,
        ports_removed = ?r.ports_removed,
        targets_added = ?r.targets_added,
        targets_removed = ?r.targets_removed,
        settings = ?r.settings,
        needs_restart = r.needs_restart.len(),
        "configuration reloaded"
    );
    fn list<T: std::fmt::Display>(v: &[T]) -> String {
        let v: Vec<String> = v.iter().map(T::to_string).collect();
        if v.is_empty() {
            "none".into()
        } else {
            v.join(", ")
        }
    }
    let mut lines = vec![
        format!("ports added: {}; removed: {}", list(&r.ports_added), list(&r.ports_removed)),
        format!("targets added: {}; removed: {}", list(&r.targets_added), list(&r.targets_removed)),
        format!("settings changed live: {}", list(&r.settings)),
    ];
    for key in &r.needs_restart {
        warn!(key, "reload: this setting changed but needs a restart; the running value is kept");
        lines.push(format!("{key}: changed but needs a restart; the running value is kept"));
    }
    for e in &r.target_errors {
        error!("reload: target not started: {e}");
        lines.push(format!("target not started: {e}"));
    }
    ReloadOutcome { applied: true, lines }
}

/// `sluice run`: start, run until `stop` is set, shut down.
pub fn run(cfg: DaemonConfig, stop: &AtomicBool) -> anyhow::Result<()> {
    run_with(cfg, &RunOptions::default(), stop)
}

/// [`run`] with the options of [`RunOptions`].
pub fn run_with(cfg: DaemonConfig, opts: &RunOptions, stop: &AtomicBool) -> anyhow::Result<()> {
    let mut d = Daemon::start(cfg)?;
    if let Some(addr) = opts.metrics {
        d.serve_metrics(addr)?;
    }
    match &opts.source {
        Some(_) if opts.reload.is_some() => {
            info!("switch running; SIGHUP reloads the configuration, SIGINT or SIGTERM stops it")
        }
        _ => info!("switch running; SIGINT or SIGTERM stops it"),
    }
    let mut last = d.datapath().stats();
    let mut ticks = 0u64;
    while !stop.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(100));
        if let (Some(flag), Some(src)) = (&opts.reload, &opts.source) {
            if flag.swap(false, Ordering::AcqRel) {
                reload_from(&mut d, src);
            }
        }
        ticks += 1;
        if ticks % 600 == 0 {
            let s = d.datapath().stats();
            if s.async_dropped > last.async_dropped || s.tx_dropped > last.tx_dropped {
                warn!(
                    tx_dropped = s.tx_dropped - last.tx_dropped,
                    async_dropped = s.async_dropped - last.async_dropped,
                    "drops in the last minute"
                );
            }
            last = s;
        }
    }
    info!("shutting down");
    d.shutdown_for_exit();
    info!("stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn reload_outcome_text_round_trips_and_rejects_other_text() {
        let out = super::ReloadOutcome {
            applied: false,
            lines: vec!["refused: workerz is not a key".into(), "second".into()],
        };
        let t = out.text(42, 3);
        assert!(t.starts_with("pid 42 reload 3 refused\n"), "{t}");
        assert_eq!(super::ReloadOutcome::parse(&t), Some((42, 3, out)));
        for bad in ["", "pid 42 reload 3 maybe\n", "pid x reload 3 applied", "hello"] {
            assert_eq!(super::ReloadOutcome::parse(bad), None, "{bad:?}");
        }
    }

    use super::log_directives;

    #[test]
    fn cranelift_is_quiet_unless_asked_for() {
        let quiet = ",cranelift_jit=warn,cranelift_codegen=warn,cranelift_module=warn,\
                     cranelift_frontend=warn";
        assert_eq!(log_directives(None, "info"), format!("info{quiet}"));
        assert_eq!(log_directives(Some("  "), "warn"), format!("warn{quiet}"));
        assert_eq!(log_directives(Some("debug"), "info"), format!("debug{quiet}"));
        assert_eq!(
            log_directives(Some("info,cranelift_jit=debug"), "info"),
            "info,cranelift_jit=debug,cranelift_codegen=warn,cranelift_module=warn,\
             cranelift_frontend=warn"
        );
        let f = tracing_subscriber::EnvFilter::try_new(log_directives(None, "info"));
        assert!(f.is_ok());
    }
}
