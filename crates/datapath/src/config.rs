//! Daemon configuration: a TOML file and command-line overrides, checked
//! once, up front.
//!
//! What? `sluice run` takes its settings from `--config FILE` (TOML) and from
//! flags (`--name`, `--rundir`, `--no-control-socket`, `--dpid`, `--port`,
//! `--listen`, `--controller`, `--fail-mode`, `--workers`, `--netns`,
//! `--datapath`, `--cache`, `--busy-poll-us`, `--invalid-ttl-packet-in`). Flags override
//! scalar keys of the file and add
//! to its lists. The result is a [`DaemonConfig`]: the datapath's part
//! ([`DatapathConfig`]), the agent's ([`AgentConfig`]) and the local control
//! socket ([`ControlSocket`]).
//!
//! The control socket: a switch has a name (`br0` unless given) and a run
//! directory (`/run/sluice` unless `--rundir`, `$SLUICE_RUNDIR` or the
//! file's `rundir` says otherwise); it listens on `punix:RUNDIR/NAME.mgmt`,
//! where `sluice ctl` looks for it, unless `control_socket = false` or
//! `--no-control-socket`. The daemon creates the directory and the socket
//! (see `sluice_agent::unix`).
//!
//! The daemon loads the same file and flags again on SIGHUP
//! ([`DaemonConfig::load_keeping`], which keeps running ports' numbers);
//! what may change while it runs is `crate::reload`'s business.
//!
//! Invalid configuration fails fast: unknown keys are refused by serde
//! (`deny_unknown_fields`, so a typo never silently falls back to a default)
//! and every value is checked here, with an error that names the key
//! (`port[1].spec: ...`, `limits.n_tables: ...`, `--controller ...`).
//!
//! ```toml
//! name = "br0"                 # the switch's name: its control socket is RUNDIR/br0.mgmt
//! rundir = "/run/sluice"       # where control sockets live (default; or $SLUICE_RUNDIR)
//! control_socket = true        # false: no local control socket
//! dpid = "0x1"                 # or an integer
//! workers = 2                  # default: available cores - 1, at least 1
//! busy_poll_us = 1000          # a worker spins this long after its last frame before sleeping (0: never)
//! fail_mode = "standalone"     # or "secure" (default)
//! netns = "sw"                 # open ports in /run/netns/sw (optional)
//! description = "lab switch"   # OFPMP_DESC dp_desc
//! datapath = "compiled"        # flow-table lookup: "reference", "classifier" or "compiled" (default)
//! cache = "auto"               # "auto" (default: each worker keeps the caches it measures
//!                              # to pay), "on" (exact + megaflow), "megaflow" or "off"
//! invalid_ttl_packet_in = "full"  # INVALID_TTL packet-in data: "full" frame (default, as
//!                              # Open vSwitch; Faucet's traceroute needs it) or
//!                              # "miss_send_len" (cut to the switch's miss_send_len)
//! listen = ["ptcp:6634:127.0.0.1"]
//! controllers = ["tcp:127.0.0.1:6653"]
//!
//! [[port]]
//! spec = "afpacket:veth1"
//! number = 1                   # or write the spec as "afpacket:veth1=1"
//! reopen = true                # re-add when the interface comes back (default)
//!
//! [tls]                        # needed by ssl: / pssl: targets
//! ca = "ca.pem"
//! cert = "switch-cert.pem"
//! key = "switch-key.pem"
//! crl = "ca-crl.pem"           # optional: revoked peers refused; a list of
//!                              # files or one PEM bundle (one CRL per CA)
//!
//! [limits]
//! n_tables = 255
//! max_flows_per_table = 1000000
//! n_buffers = 256
//! max_groups = 65536
//! max_buckets = 64
//! max_meters = 65536
//! max_bands = 8
//! max_group_depth = 16
//! mac_table_size = 8192        # standalone mode
//! mac_aging_secs = 300
//! async_queue_len = 4096       # PACKET_IN/PORT_STATUS/... waiting for the agent
//!
//! [agent]
//! probe_interval_ms = 5000
//! backoff_min_ms = 1000
//! backoff_max_ms = 8000
//! connect_timeout_ms = 5000
//! queue_len = 1024
//! packet_in_rate = 1000        # per second and connection; 0 = unlimited
//! packet_in_burst = 100
//! max_passive_conns = 64
//! passive_counts_as_controller = false
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use sluice_agent::{AgentConfig, Endpoint, FailMode, RateLimit, Target, TlsFiles, Transport};
use sluice_pipeline::{CacheMode, Datapath, TtlPacketIn};
use sluice_ports::{PortKind, PortSpec};

/// OFPP_MAX.
const OFPP_MAX: u32 = 0xffff_ff00;

/// A configuration error: which key, and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The key (`workers`, `port[0].spec`) or flag (`--port`) at fault.
    pub key: String,
    /// What is wrong.
    pub msg: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid configuration: {}: {}", self.key, self.msg)
    }
}

impl std::error::Error for ConfigError {}

fn err(key: impl Into<String>, msg: impl Into<String>) -> ConfigError {
    ConfigError { key: key.into(), msg: msg.into() }
}

/// The TOML file, as written (see the module docs).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub name: Option<String>,
    pub rundir: Option<PathBuf>,
    pub control_socket: Option<bool>,
    pub dpid: Option<toml::Value>,
    pub workers: Option<i64>,
    pub busy_poll_us: Option<i64>,
    pub fail_mode: Option<String>,
    pub netns: Option<String>,
    pub description: Option<String>,
    pub datapath: Option<String>,
    pub cache: Option<String>,
    pub invalid_ttl_packet_in: Option<String>,
    #[serde(default)]
    pub port: Vec<FilePort>,
    #[serde(default)]
    pub listen: Vec<String>,
    #[serde(default)]
    pub controllers: Vec<String>,
    pub tls: Option<FileTls>,
    #[serde(default)]
    pub limits: FileLimits,
    #[serde(default)]
    pub agent: FileAgent,
}

/// One `[[port]]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilePort {
    pub spec: String,
    pub number: Option<i64>,
    pub reopen: Option<bool>,
}

/// `[tls]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileTls {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    /// `crl = "FILE"` or `crl = ["FILE", ...]`.
    pub crl: Option<OneOrMany>,
}

/// A TOML value that is one string or a list of them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(PathBuf),
    Many(Vec<PathBuf>),
}

impl OneOrMany {
    fn to_vec(&self) -> Vec<PathBuf> {
        match self {
            OneOrMany::One(p) => vec![p.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// `[limits]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileLimits {
    pub n_tables: Option<i64>,
    pub max_flows_per_table: Option<i64>,
    pub n_buffers: Option<i64>,
    pub max_groups: Option<i64>,
    pub max_buckets: Option<i64>,
    pub max_meters: Option<i64>,
    pub max_bands: Option<i64>,
    pub max_group_depth: Option<i64>,
    pub mac_table_size: Option<i64>,
    pub mac_aging_secs: Option<i64>,
    pub async_queue_len: Option<i64>,
}

/// `[agent]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileAgent {
    pub probe_interval_ms: Option<i64>,
    pub backoff_min_ms: Option<i64>,
    pub backoff_max_ms: Option<i64>,
    pub connect_timeout_ms: Option<i64>,
    pub queue_len: Option<i64>,
    pub packet_in_rate: Option<i64>,
    pub packet_in_burst: Option<i64>,
    pub max_passive_conns: Option<i64>,
    pub passive_counts_as_controller: Option<bool>,
}

/// Command-line settings; `None`/empty means "not given".
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// `--name`.
    pub name: Option<String>,
    /// `--rundir`, or else `$SLUICE_RUNDIR` (the caller reads the
    /// environment; this module does not).
    pub rundir: Option<PathBuf>,
    /// `--no-control-socket`.
    pub no_control_socket: bool,
    pub dpid: Option<String>,
    pub ports: Vec<String>,
    pub listen: Vec<String>,
    pub controllers: Vec<String>,
    pub fail_mode: Option<String>,
    pub workers: Option<usize>,
    /// `--busy-poll-us`.
    pub busy_poll_us: Option<u64>,
    pub netns: Option<String>,
    /// `--datapath reference|classifier|compiled`.
    pub datapath: Option<String>,
    /// `--cache on|megaflow|off`.
    pub cache: Option<String>,
    /// `--invalid-ttl-packet-in full|miss_send_len`.
    pub invalid_ttl_packet_in: Option<String>,
    /// `--crl FILE` (repeatable): added to the `[tls]` section's `crl`.
    pub crls: Vec<PathBuf>,
}

/// One port to open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortConfig {
    pub spec: PortSpec,
    /// OpenFlow port number.
    pub port_no: u32,
    /// Re-add the port when its interface comes back after being removed.
    pub reopen: bool,
}

/// Everything the datapath needs.
#[derive(Clone, Debug)]
pub struct DatapathConfig {
    pub pipeline: sluice_pipeline::Config,
    pub ports: Vec<PortConfig>,
    /// Worker threads (≥ 1).
    pub workers: usize,
    pub fail_mode: FailMode,
    /// Named network namespace the ports (and the link monitor) live in.
    pub netns: Option<String>,
    pub mac_table_size: usize,
    pub mac_aging: Duration,
    /// Asynchronous messages kept for the agent at most (oldest dropped).
    pub async_queue_len: usize,
    /// Longest a worker sleeps in `poll` before it re-checks its inbox.
    pub poll_timeout: Duration,
    /// How long a worker keeps looking at its ports without sleeping after
    /// the last frame it received (zero: sleep in `poll` as soon as a round
    /// is empty). Waking from `poll` costs tens of microseconds per hop; a
    /// reply or the next packet of a flow usually comes within this window.
    pub busy_poll: Duration,
}

/// Default [`DatapathConfig::busy_poll`].
pub const DEFAULT_BUSY_POLL: Duration = Duration::from_millis(1);

/// Largest `busy_poll_us` accepted (one second).
pub const MAX_BUSY_POLL_US: u64 = 1_000_000;

impl Default for DatapathConfig {
    fn default() -> Self {
        DatapathConfig {
            // Compiled tables built on the compiler thread, both caches
            // on (what that trades: README, docs/BENCHMARKS.md). The
            // differential tests run this same setting.
            pipeline: sluice_pipeline::Config::daemon(),
            ports: Vec::new(),
            workers: default_workers(),
            fail_mode: FailMode::Secure,
            netns: None,
            mac_table_size: 8192,
            mac_aging: Duration::from_secs(300),
            async_queue_len: 4096,
            poll_timeout: Duration::from_millis(10),
            busy_poll: DEFAULT_BUSY_POLL,
        }
    }
}

/// The daemon's whole configuration.
#[derive(Clone, Debug)]
pub struct DaemonConfig {
    /// The switch's name (names its control socket).
    pub name: String,
    pub datapath: DatapathConfig,
    /// Every target, the control socket's `punix:` one included.
    pub agent: AgentConfig,
    /// The local control socket, unless turned off.
    pub control: Option<ControlSocket>,
}

/// The switch name when none is given.
pub const DEFAULT_NAME: &str = "br0";

/// The run directory when none is given.
pub const DEFAULT_RUNDIR: &str = "/run/sluice";

/// The environment variable that names the run directory.
pub const RUNDIR_ENV: &str = "SLUICE_RUNDIR";

/// The file name suffix of a control socket.
pub const CONTROL_SUFFIX: &str = ".mgmt";

/// Longest socket path a unix socket address holds (`sun_path` is 108
/// bytes on Linux, one of them the terminating NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// The local control socket: `punix:RUNDIR/NAME.mgmt`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlSocket {
    pub rundir: PathBuf,
    pub path: PathBuf,
    /// The run directory was chosen (flag, environment or file), not the
    /// built-in default. A default run directory the daemon may not write
    /// (not root) costs the socket with a warning; a chosen one that fails
    /// is an error.
    pub rundir_chosen: bool,
}

/// The run directory: `explicit` (a flag), else `$SLUICE_RUNDIR` when set
/// and not empty, else [`DEFAULT_RUNDIR`]. The second value says whether it
/// was chosen rather than defaulted.
pub fn rundir(explicit: Option<PathBuf>, env: Option<std::ffi::OsString>) -> (PathBuf, bool) {
    match (explicit, env.filter(|e| !e.is_empty())) {
        (Some(d), _) => (d, true),
        (None, Some(e)) => (PathBuf::from(e), true),
        (None, None) => (PathBuf::from(DEFAULT_RUNDIR), false),
    }
}

/// The control socket of switch `name` in `rundir`.
pub fn control_path(rundir: &Path, name: &str) -> PathBuf {
    rundir.join(format!("{name}{CONTROL_SUFFIX}"))
}

/// Whether `name` can name a switch: 1 to 64 of `A-Z a-z 0-9 . _ -`, not
/// starting with `.` or `-` (so it is one file name, never hidden, never
/// an option). Says what is wrong otherwise.
pub fn check_switch_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 {
        return Err(format!("{name:?}: a switch name has 1 to 64 characters"));
    }
    if let Some(c) =
        name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!("{name:?}: {c:?} is not allowed (use A-Z a-z 0-9 . _ -)"));
    }
    if name.starts_with(['.', '-']) {
        return Err(format!("{name:?}: a switch name does not start with '.' or '-'"));
    }
    Ok(())
}

/// Available cores minus one (one is left to the agent and the kernel), at
/// least one.
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).saturating_sub(1).max(1)
}

/// `reference`, `classifier`, `compiled`: the flow-table lookup structure.
pub fn parse_datapath(s: &str) -> Option<Datapath> {
    match s.trim() {
        "reference" => Some(Datapath::Reference),
        "classifier" => Some(Datapath::Classifier),
        "compiled" => Some(Datapath::Compiled),
        _ => None,
    }
}

/// `full`, `miss_send_len`: what an INVALID_TTL packet-in carries.
pub fn parse_ttl_packet_in(s: &str) -> Option<TtlPacketIn> {
    match s.trim() {
        "full" => Some(TtlPacketIn::Full),
        "miss_send_len" | "miss-send-len" => Some(TtlPacketIn::MissSendLen),
        _ => None,
    }
}

/// `on`, `megaflow`, `off`, `auto`: the caches in front of the tables.
pub fn parse_cache(s: &str) -> Option<CacheMode> {
    match s.trim() {
        "on" => Some(CacheMode::On),
        "auto" => Some(CacheMode::Auto),
        "megaflow" => Some(CacheMode::Megaflow),
        "off" => Some(CacheMode::Off),
        _ => None,
    }
}

/// `0x1f`, `31`: a datapath id.
pub fn parse_dpid(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) if !h.is_empty() && h.len() <= 16 => u64::from_str_radix(h, 16).ok(),
        Some(_) => None,
        None => s.parse().ok(),
    }
}

fn in_range(key: &str, v: Option<i64>, lo: i64, hi: i64) -> Result<Option<i64>, ConfigError> {
    match v {
        Some(x) if x < lo || x > hi => Err(err(key, format!("must be between {lo} and {hi}"))),
        other => Ok(other),
    }
}

fn ms(key: &str, v: Option<i64>, default: Duration) -> Result<Duration, ConfigError> {
    Ok(in_range(key, v, 1, 86_400_000)?.map(|x| Duration::from_millis(x as u64)).unwrap_or(default))
}

impl DaemonConfig {
    /// Reads `path` (if any), applies `over`, checks everything.
    pub fn load(path: Option<&Path>, over: &Overrides) -> Result<DaemonConfig, ConfigError> {
        Self::load_keeping(path, over, &[])
    }

    /// [`DaemonConfig::load`] for a configuration reload: a port without
    /// an explicit number keeps the number it has in `running` (same kind
    /// and name) unless another port now asks for that number, so adding
    /// or reordering `[[port]]` entries does not renumber running ports.
    pub fn load_keeping(
        path: Option<&Path>,
        over: &Overrides,
        running: &[PortConfig],
    ) -> Result<DaemonConfig, ConfigError> {
        let file = match path {
            None => FileConfig::default(),
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .map_err(|e| err("--config", format!("{}: {e}", p.display())))?;
                parse_file(&text).map_err(|e| ConfigError {
                    key: format!("{}: {}", p.display(), e.key),
                    msg: e.msg,
                })?
            }
        };
        DaemonConfig::build_keeping(file, over, running)
    }

    /// Checks a parsed file plus overrides.
    pub fn build(file: FileConfig, over: &Overrides) -> Result<DaemonConfig, ConfigError> {
        Self::build_keeping(file, over, &[])
    }

    /// [`DaemonConfig::build`], keeping the numbers of `running` ports
    /// (see [`DaemonConfig::load_keeping`]).
    pub fn build_keeping(
        file: FileConfig,
        over: &Overrides,
        running: &[PortConfig],
    ) -> Result<DaemonConfig, ConfigError> {
        let mut dp = DatapathConfig::default();
        let mut agent = AgentConfig::default();

        // Name and control socket.
        let (name, name_key) = match (&over.name, &file.name) {
            (Some(n), _) => (n.clone(), "--name"),
            (None, Some(n)) => (n.clone(), "name"),
            (None, None) => (DEFAULT_NAME.to_string(), "name"),
        };
        check_switch_name(&name).map_err(|m| err(name_key, m))?;
        let control = if over.no_control_socket || file.control_socket == Some(false) {
            None
        } else {
            let (rundir, rundir_chosen, key) = match (&over.rundir, &file.rundir) {
                (Some(d), _) => (d.clone(), true, "--rundir"),
                (None, Some(d)) => (d.clone(), true, "rundir"),
                (None, None) => (PathBuf::from(DEFAULT_RUNDIR), false, "rundir"),
            };
            if rundir.as_os_str().is_empty() {
                return Err(err(key, "an empty path is not a directory"));
            }
            let path = control_path(&rundir, &name);
            let len = path.as_os_str().len();
            if len > MAX_SOCKET_PATH {
                return Err(err(
                    key,
                    format!(
                        "the control socket {} is {len} bytes long; a unix socket path holds at \
                         most {MAX_SOCKET_PATH} (use a shorter --rundir or --name)",
                        path.display()
                    ),
                ));
            }
            Some(ControlSocket { rundir, path, rundir_chosen })
        };

        // Identity.
        if let Some(v) = &file.dpid {
            dp.pipeline.datapath_id = match v {
                toml::Value::Integer(i) if *i >= 0 => *i as u64,
                toml::Value::String(s) => parse_dpid(s).ok_or_else(|| {
                    err("dpid", format!("{s:?} is not a 64-bit number (decimal or 0x hex)"))
                })?,
                _ => {
                    return Err(err("dpid", "must be a non-negative integer or a \"0x...\" string"))
                }
            };
        }
        if let Some(s) = &over.dpid {
            dp.pipeline.datapath_id = parse_dpid(s).ok_or_else(|| {
                err("--dpid", format!("{s:?} is not a 64-bit number (decimal or 0x hex)"))
            })?;
        }
        if let Some(d) = &file.description {
            if d.len() > 255 {
                return Err(err("description", "at most 255 bytes"));
            }
            dp.pipeline.dp_desc = d.clone();
        }

        // Fast path: lookup structure and caches.
        let datapath = |key: &str, s: &str| {
            parse_datapath(s).ok_or_else(|| {
                err(key, format!("{s:?}: must be reference, classifier or compiled"))
            })
        };
        if let Some(s) = &file.datapath {
            dp.pipeline.datapath = datapath("datapath", s)?;
        }
        if let Some(s) = &over.datapath {
            dp.pipeline.datapath = datapath("--datapath", s)?;
        }
        let cache = |key: &str, s: &str| {
            parse_cache(s)
                .ok_or_else(|| err(key, format!("{s:?}: must be on, megaflow, off or auto")))
        };
        if let Some(s) = &file.cache {
            dp.pipeline.cache = cache("cache", s)?;
        }
        if let Some(s) = &over.cache {
            dp.pipeline.cache = cache("--cache", s)?;
        }
        let ttl = |key: &str, s: &str| {
            parse_ttl_packet_in(s)
                .ok_or_else(|| err(key, format!("{s:?}: must be full or miss_send_len")))
        };
        if let Some(s) = &file.invalid_ttl_packet_in {
            dp.pipeline.invalid_ttl_packet_in = ttl("invalid_ttl_packet_in", s)?;
        }
        if let Some(s) = &over.invalid_ttl_packet_in {
            dp.pipeline.invalid_ttl_packet_in = ttl("--invalid-ttl-packet-in", s)?;
        }

        // Workers and fail mode.
        if let Some(w) = in_range("workers", file.workers, 1, 1024)? {
            dp.workers = w as usize;
        }
        if let Some(w) = over.workers {
            if !(1..=1024).contains(&w) {
                return Err(err("--workers", "must be between 1 and 1024"));
            }
            dp.workers = w;
        }
        if let Some(us) = in_range("busy_poll_us", file.busy_poll_us, 0, MAX_BUSY_POLL_US as i64)? {
            dp.busy_poll = Duration::from_micros(us as u64);
        }
        if let Some(us) = over.busy_poll_us {
            if us > MAX_BUSY_POLL_US {
                return Err(err(
                    "--busy-poll-us",
                    format!("{us}: must be between 0 and {MAX_BUSY_POLL_US}"),
                ));
            }
            dp.busy_poll = Duration::from_micros(us);
        }
        let fail = |key: &str, s: &str| {
            s.parse::<FailMode>()
                .map_err(|_| err(key, format!("{s:?}: must be secure or standalone")))
        };
        if let Some(s) = &file.fail_mode {
            dp.fail_mode = fail("fail_mode", s)?;
        }
        if let Some(s) = &over.fail_mode {
            dp.fail_mode = fail("--fail-mode", s)?;
        }
        agent.fail_mode = dp.fail_mode;
        dp.netns = over.netns.clone().or(file.netns.clone());
        if let Some(n) = &dp.netns {
            if n.is_empty() || n.contains('/') || n == "." || n == ".." {
                return Err(err("netns", format!("{n:?} is not a namespace name")));
            }
        }

        // Ports.
        let mut raw: Vec<(String, String, Option<i64>, bool)> = file
            .port
            .iter()
            .enumerate()
            .map(|(i, p)| {
                (format!("port[{i}]"), p.spec.clone(), p.number, p.reopen.unwrap_or(true))
            })
            .collect();
        raw.extend(over.ports.iter().map(|s| (format!("--port {s}"), s.clone(), None, true)));
        dp.ports = build_ports(&raw, running)?;

        // Limits.
        let l = &file.limits;
        let c = &mut dp.pipeline;
        if let Some(v) = in_range("limits.n_tables", l.n_tables, 1, 255)? {
            c.n_tables = v as u8;
        }
        if let Some(v) =
            in_range("limits.max_flows_per_table", l.max_flows_per_table, 1, 100_000_000)?
        {
            c.max_flows_per_table = v as usize;
        }
        if let Some(v) = in_range("limits.n_buffers", l.n_buffers, 0, 65_536)? {
            c.n_buffers = v as u32;
        }
        if let Some(v) = in_range("limits.max_groups", l.max_groups, 0, 0xffff_ff00)? {
            c.max_groups = v as u32;
        }
        if let Some(v) = in_range("limits.max_buckets", l.max_buckets, 1, 4096)? {
            c.max_buckets = v as usize;
        }
        if let Some(v) = in_range("limits.max_meters", l.max_meters, 0, 0xffff_0000)? {
            c.max_meters = v as u32;
        }
        if let Some(v) = in_range("limits.max_bands", l.max_bands, 1, 255)? {
            c.max_bands = v as u8;
        }
        if let Some(v) = in_range("limits.max_group_depth", l.max_group_depth, 1, 64)? {
            c.max_group_depth = v as usize;
        }
        if let Some(v) = in_range("limits.mac_table_size", l.mac_table_size, 1, 1 << 20)? {
            dp.mac_table_size = v as usize;
        }
        if let Some(v) = in_range("limits.mac_aging_secs", l.mac_aging_secs, 1, 1_000_000)? {
            dp.mac_aging = Duration::from_secs(v as u64);
        }
        if let Some(v) = in_range("limits.async_queue_len", l.async_queue_len, 1, 1 << 20)? {
            dp.async_queue_len = v as usize;
        }

        // Agent.
        let a = &file.agent;
        agent.probe_interval =
            ms("agent.probe_interval_ms", a.probe_interval_ms, agent.probe_interval)?;
        agent.backoff_min = ms("agent.backoff_min_ms", a.backoff_min_ms, agent.backoff_min)?;
        agent.backoff_max = ms("agent.backoff_max_ms", a.backoff_max_ms, agent.backoff_max)?;
        if agent.backoff_max < agent.backoff_min {
            return Err(err("agent.backoff_max_ms", "must not be below agent.backoff_min_ms"));
        }
        agent.connect_timeout =
            ms("agent.connect_timeout_ms", a.connect_timeout_ms, agent.connect_timeout)?;
        if let Some(v) = in_range("agent.queue_len", a.queue_len, 1, 1 << 20)? {
            agent.queue_len = v as usize;
        }
        let rate = in_range("agent.packet_in_rate", a.packet_in_rate, 0, 10_000_000)?;
        let burst = in_range("agent.packet_in_burst", a.packet_in_burst, 1, 10_000_000)?;
        agent.packet_in_limit = RateLimit {
            rate: rate.map(|v| v as u32).unwrap_or(agent.packet_in_limit.rate),
            burst: burst.map(|v| v as u32).unwrap_or(agent.packet_in_limit.burst),
        };
        if let Some(v) = in_range("agent.max_passive_conns", a.max_passive_conns, 1, 4096)? {
            agent.max_passive_conns = v as usize;
        }
        if let Some(b) = a.passive_counts_as_controller {
            agent.passive_counts_as_controller = b;
        }

        // Targets.
        let target = |key: String, s: &str, passive: bool| -> Result<Target, ConfigError> {
            let t: Target = s.parse().map_err(|e| err(key.clone(), format!("{e}")))?;
            if t.passive != passive {
                let want = if passive { "ptcp:, pssl: or punix:" } else { "tcp: or ssl:" };
                return Err(err(key, format!("{s:?}: must be {want}")));
            }
            Ok(t)
        };
        for (i, s) in file.listen.iter().enumerate() {
            agent.targets.push(target(format!("listen[{i}]"), s, true)?);
        }
        for s in &over.listen {
            agent.targets.push(target("--listen".into(), s, true)?);
        }
        for (i, s) in file.controllers.iter().enumerate() {
            agent.targets.push(target(format!("controllers[{i}]"), s, false)?);
        }
        for s in &over.controllers {
            agent.targets.push(target("--controller".into(), s, false)?);
        }
        if let Some(c) = &control {
            agent.targets.push(Target {
                transport: Transport::Unix,
                passive: true,
                addr: Endpoint::Unix(c.path.clone()),
            });
        }
        let mut seen = BTreeSet::new();
        for t in &agent.targets {
            if !seen.insert(t.to_string()) {
                let why =
                    if control.as_ref().is_some_and(|c| t.addr == Endpoint::Unix(c.path.clone())) {
                        format!("{t} is the control socket already (or give --no-control-socket)")
                    } else {
                        format!("{t} is given twice")
                    };
                return Err(err("listen/controllers", why));
            }
        }

        // TLS.
        if let Some(t) = &file.tls {
            for (k, p) in [("tls.ca", &t.ca), ("tls.cert", &t.cert), ("tls.key", &t.key)] {
                if let Err(e) = std::fs::metadata(p) {
                    return Err(err(k, format!("{}: {e}", p.display())));
                }
            }
            let from_file = t.crl.as_ref().map(OneOrMany::to_vec).unwrap_or_default();
            let keyed = from_file
                .into_iter()
                .map(|p| ("tls.crl", p))
                .chain(over.crls.iter().map(|p| ("--crl", p.clone())));
            let mut crls = Vec::new();
            for (k, p) in keyed {
                if let Err(e) = std::fs::metadata(&p) {
                    return Err(err(k, format!("{}: {e}", p.display())));
                }
                crls.push(p);
            }
            agent.tls =
                Some(TlsFiles { ca: t.ca.clone(), cert: t.cert.clone(), key: t.key.clone(), crls });
        }
        if agent.tls.is_none() && !over.crls.is_empty() {
            return Err(err("--crl", "needs a [tls] section (ca, cert, key) in --config"));
        }
        if agent.tls.is_none() && agent.targets.iter().any(|t| t.transport == Transport::Ssl) {
            return Err(err("tls", "ssl: and pssl: targets need a [tls] section (ca, cert, key)"));
        }
        Ok(DaemonConfig { name, datapath: dp, agent, control })
    }
}

/// Parses the TOML text; errors name the key where serde/toml can tell it.
pub fn parse_file(text: &str) -> Result<FileConfig, ConfigError> {
    toml::from_str(text).map_err(|e: toml::de::Error| {
        let msg = e.message().to_string();
        let key = match e.span() {
            Some(span) => {
                let line = text.get(..span.start).map(|t| t.lines().count().max(1)).unwrap_or(1);
                let snippet = text.get(span).unwrap_or("").lines().next().unwrap_or("");
                format!("line {line} `{snippet}`")
            }
            None => "file".into(),
        };
        err(key, msg)
    })
}

/// Resolves port specs and numbers: explicit numbers first (from `number`
/// or the spec's `=N`), then the number a port of the same kind and name
/// has in `running` if still free, then the lowest free number.
fn build_ports(
    raw: &[(String, String, Option<i64>, bool)],
    running: &[PortConfig],
) -> Result<Vec<PortConfig>, ConfigError> {
    let mut out: Vec<(PortSpec, Option<u32>, bool)> = Vec::new();
    let mut used = BTreeSet::new();
    let mut names = BTreeSet::new();
    for (key, text, number, reopen) in raw {
        let spec = PortSpec::parse(text).map_err(|e| err(format!("{key}.spec"), e.to_string()))?;
        if spec.kind == PortKind::AfXdp && !cfg!(feature = "afxdp") {
            return Err(err(
                format!("{key}.spec"),
                "afxdp ports need sluice built with feature `afxdp` (cargo build --features afxdp)",
            ));
        }
        let n = match (number, spec.port_no) {
            (Some(n), Some(m)) if u32::try_from(*n).ok() != Some(m) => {
                return Err(err(
                    format!("{key}.number"),
                    format!("{n} disagrees with the spec's ={m}"),
                ))
            }
            (Some(n), _) => Some(
                u32::try_from(*n)
                    .ok()
                    .filter(|n| (1..=OFPP_MAX).contains(n))
                    .ok_or_else(|| err(format!("{key}.number"), "must be 1..=4294967040"))?,
            ),
            (None, m) => m,
        };
        if let Some(n) = n {
            if !used.insert(n) {
                return Err(err(format!("{key}.number"), format!("port number {n} is used twice")));
            }
        }
        if !names.insert((spec.kind.as_str(), spec.name.clone())) {
            return Err(err(format!("{key}.spec"), format!("{} is opened twice", spec.name)));
        }
        out.push((spec, n, *reopen));
    }
    for (spec, n, _) in out.iter_mut().filter(|(_, n, _)| n.is_none()) {
        let kept = running
            .iter()
            .find(|r| r.spec.kind == spec.kind && r.spec.name == spec.name)
            .map(|r| r.port_no);
        if let Some(k) = kept.filter(|k| !used.contains(k)) {
            used.insert(k);
            *n = Some(k);
        }
    }
    let mut next = 1u32;
    let mut ports = Vec::new();
    for (spec, n, reopen) in out {
        let port_no = match n {
            Some(n) => n,
            None => {
                while used.contains(&next) {
                    next += 1;
                }
                used.insert(next);
                next
            }
        };
        let reopen = reopen && spec.kind != PortKind::Pcap;
        ports.push(PortConfig { spec, port_no, reopen });
    }
    Ok(ports)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(text: &str, over: &Overrides) -> Result<DaemonConfig, ConfigError> {
        DaemonConfig::build(parse_file(text)?, over)
    }

    #[test]
    fn full_file_parses() {
        let c = build(
            r#"
dpid = "0x00000000000000ab"
workers = 3
fail_mode = "standalone"
description = "lab"
datapath = "reference"
cache = "megaflow"
listen = ["ptcp:6634:127.0.0.1"]
controllers = ["tcp:127.0.0.1:6653"]
[[port]]
spec = "afpacket:veth1"
number = 5
[[port]]
spec = "afpacket:veth2=7"
reopen = false
[[port]]
spec = "pcap:in.pcap,out=o.pcap"
[limits]
n_tables = 4
mac_table_size = 10
[agent]
backoff_min_ms = 10
backoff_max_ms = 20
packet_in_rate = 0
"#,
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.datapath.pipeline.datapath_id, 0xab);
        assert_eq!(c.datapath.workers, 3);
        assert_eq!(c.datapath.fail_mode, FailMode::Standalone);
        assert_eq!(c.agent.fail_mode, FailMode::Standalone);
        assert_eq!(c.datapath.pipeline.n_tables, 4);
        assert_eq!(c.datapath.pipeline.dp_desc, "lab");
        assert_eq!(c.datapath.pipeline.datapath, Datapath::Reference);
        assert_eq!(c.datapath.pipeline.cache, CacheMode::Megaflow);
        assert_eq!(c.datapath.mac_table_size, 10);
        let nums: Vec<u32> = c.datapath.ports.iter().map(|p| p.port_no).collect();
        assert_eq!(nums, vec![5, 7, 1]);
        assert!(c.datapath.ports[0].reopen);
        assert!(!c.datapath.ports[1].reopen);
        assert!(!c.datapath.ports[2].reopen, "pcap ports are never reopened");
        // listen, controller and the control socket.
        assert_eq!(c.agent.targets.len(), 3);
        assert_eq!(c.agent.backoff_min, Duration::from_millis(10));
        assert_eq!(c.agent.packet_in_limit.rate, 0);
    }

    #[test]
    fn overrides_win_and_add() {
        let over = Overrides {
            dpid: Some("17".into()),
            ports: vec!["afpacket:b".into(), "afpacket:c=1".into()],
            listen: vec!["ptcp:0:127.0.0.1".into()],
            fail_mode: Some("secure".into()),
            workers: Some(2),
            datapath: Some("classifier".into()),
            cache: Some("off".into()),
            ..Default::default()
        };
        let c = build(
            "dpid = 3\nfail_mode = \"standalone\"\ndatapath = \"reference\"\ncache = \"on\"\n\
             [[port]]\nspec = \"afpacket:a\"\n",
            &over,
        )
        .unwrap();
        assert_eq!(c.datapath.pipeline.datapath, Datapath::Classifier);
        assert_eq!(c.datapath.pipeline.cache, CacheMode::Off);
        assert_eq!(c.datapath.pipeline.datapath_id, 17);
        assert_eq!(c.datapath.fail_mode, FailMode::Secure);
        assert_eq!(c.datapath.workers, 2);
        let p: Vec<(String, u32)> =
            c.datapath.ports.iter().map(|p| (p.spec.name.clone(), p.port_no)).collect();
        assert_eq!(p, vec![("a".into(), 2), ("b".into(), 3), ("c".into(), 1)]);
    }

    fn bad(text: &str, over: &Overrides) -> ConfigError {
        build(text, over).unwrap_err()
    }

    #[test]
    fn busy_poll_from_file_and_flag() {
        let none = Overrides::default();
        assert_eq!(build("", &none).unwrap().datapath.busy_poll, DEFAULT_BUSY_POLL);
        let c = build("busy_poll_us = 0\n", &none).unwrap();
        assert_eq!(c.datapath.busy_poll, Duration::ZERO);
        let flag = Overrides { busy_poll_us: Some(250), ..Default::default() };
        let c = build("busy_poll_us = 40\n", &flag).unwrap();
        assert_eq!(c.datapath.busy_poll, Duration::from_micros(250));
        assert_eq!(bad("busy_poll_us = -1\n", &none).key, "busy_poll_us");
        let too_long = Overrides { busy_poll_us: Some(MAX_BUSY_POLL_US + 1), ..Default::default() };
        assert_eq!(bad("", &too_long).key, "--busy-poll-us");
    }

    fn crl_flag(p: &str) -> Overrides {
        Overrides { crls: vec![p.into()], ..Default::default() }
    }

    /// `[tls] crl` takes one file or a list; `--crl` adds to it; a missing
    /// file is named by its key.
    #[test]
    fn tls_crl_keys_and_flag() {
        let dir = std::env::temp_dir().join(format!("sluice-cfg-crl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["ca", "c", "k", "r1", "r2", "r3"] {
            std::fs::write(dir.join(f), "").unwrap();
        }
        let d = dir.display();
        let tls = format!("[tls]\nca = \"{d}/ca\"\ncert = \"{d}/c\"\nkey = \"{d}/k\"\n");
        let crls = |text: &str, o: &Overrides| build(text, o).unwrap().agent.tls.unwrap().crls;
        let none = Overrides::default();
        assert!(crls(&tls, &none).is_empty());
        assert_eq!(crls(&format!("{tls}crl = \"{d}/r1\"\n"), &none), vec![dir.join("r1")]);
        let two = format!("{tls}crl = [\"{d}/r1\", \"{d}/r2\"]\n");
        assert_eq!(crls(&two, &none), vec![dir.join("r1"), dir.join("r2")]);
        let flag = crl_flag(&format!("{d}/r3"));
        assert_eq!(crls(&two, &flag), vec![dir.join("r1"), dir.join("r2"), dir.join("r3")]);
        assert_eq!(bad(&format!("{tls}crl = \"{d}/nope\"\n"), &none).key, "tls.crl");
        assert_eq!(bad(&tls, &crl_flag(&format!("{d}/nope"))).key, "--crl");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn errors_name_the_key() {
        let none = Overrides::default();
        let e = bad("dpidd = 1\n", &none);
        assert!(e.msg.contains("unknown field") && e.msg.contains("dpidd"), "{e}");
        assert!(e.key.contains("line 1"), "{e}");
        let e = bad("[limits]\nn_table = 3\n", &none);
        assert!(e.msg.contains("n_table"), "{e}");
        assert_eq!(bad("workers = 0\n", &none).key, "workers");
        assert_eq!(bad("fail_mode = \"open\"\n", &none).key, "fail_mode");
        let e = bad("datapath = \"jit\"\n", &none);
        assert_eq!(e.key, "datapath");
        assert!(e.msg.contains("\"jit\"") && e.msg.contains("compiled"), "{e}");
        let ok = build("datapath = \"compiled\"\n", &none).expect("compiled is a datapath");
        assert_eq!(ok.datapath.pipeline.datapath, Datapath::Compiled);
        let e = bad("cache = \"exact\"\n", &none);
        assert_eq!(e.key, "cache");
        assert!(e.msg.contains("\"exact\"") && e.msg.contains("megaflow"), "{e}");
        let e = bad("datapath = 1\n", &none);
        assert!(e.key.contains("line 1") && e.msg.contains("string"), "{e}");
        assert_eq!(bad("dpid = \"0xzz\"\n", &none).key, "dpid");
        assert_eq!(bad("dpid = -1\n", &none).key, "dpid");
        assert_eq!(bad("[limits]\nn_tables = 256\n", &none).key, "limits.n_tables");
        assert_eq!(bad("[[port]]\nspec = \"eth:x\"\n", &none).key, "port[0].spec");
        assert_eq!(
            bad("[[port]]\nspec = \"afpacket:x=1\"\n[[port]]\nspec = \"afpacket:y=1\"\n", &none)
                .key,
            "port[1].number"
        );
        assert_eq!(
            bad("[[port]]\nspec = \"afpacket:x=1\"\nnumber = 2\n", &none).key,
            "port[0].number"
        );
        assert_eq!(
            bad("[[port]]\nspec = \"afpacket:x\"\nnumber = 0\n", &none).key,
            "port[0].number"
        );
        assert_eq!(bad("listen = [\"tcp:1.2.3.4:5\"]\n", &none).key, "listen[0]");
        assert_eq!(bad("controllers = [\"ptcp:5\"]\n", &none).key, "controllers[0]");
        assert_eq!(bad("controllers = [\"ssl:1.2.3.4:5\"]\n", &none).key, "tls");
        assert_eq!(
            bad("[tls]\nca = \"/nonexistent/ca\"\ncert = \"c\"\nkey = \"k\"\n", &none).key,
            "tls.ca"
        );
        assert_eq!(
            bad("controllers = [\"ssl:1.2.3.4:5\"]\n", &crl_flag("/nonexistent/crl")).key,
            "--crl"
        );
        assert_eq!(
            bad("[agent]\nbackoff_min_ms = 50\nbackoff_max_ms = 10\n", &none).key,
            "agent.backoff_max_ms"
        );
        let o = Overrides { ports: vec!["afpacket:".into()], ..Default::default() };
        assert_eq!(bad("", &o).key, "--port afpacket:.spec");
        let o = Overrides { dpid: Some("x".into()), ..Default::default() };
        assert_eq!(bad("", &o).key, "--dpid");
        let o = Overrides { workers: Some(0), ..Default::default() };
        assert_eq!(bad("", &o).key, "--workers");
        let o = Overrides { datapath: Some("fast".into()), ..Default::default() };
        assert_eq!(bad("", &o).key, "--datapath");
        let o = Overrides { cache: Some("yes".into()), ..Default::default() };
        assert_eq!(bad("", &o).key, "--cache");
        let o = Overrides { invalid_ttl_packet_in: Some("all".into()), ..Default::default() };
        assert_eq!(bad("", &o).key, "--invalid-ttl-packet-in");
        let e = bad("invalid_ttl_packet_in = \"cut\"\n", &Overrides::default());
        assert_eq!(e.key, "invalid_ttl_packet_in");
        assert!(e.msg.contains("\"cut\""), "{}", e.msg);
        // Default full (what controllers rely on); the file sets, the flag wins.
        let ttl = |f: &str, o: Option<&str>| {
            let o = Overrides { invalid_ttl_packet_in: o.map(Into::into), ..Default::default() };
            build(f, &o).unwrap().datapath.pipeline.invalid_ttl_packet_in
        };
        assert_eq!(ttl("", None), TtlPacketIn::Full);
        let f = "invalid_ttl_packet_in = \"miss_send_len\"\n";
        assert_eq!(ttl(f, None), TtlPacketIn::MissSendLen);
        assert_eq!(ttl(f, Some("full")), TtlPacketIn::Full);
        let o = Overrides { controllers: vec!["ptcp:1".into()], ..Default::default() };
        assert_eq!(bad("", &o).key, "--controller");
        let o = Overrides { netns: Some("a/b".into()), ..Default::default() };
        assert_eq!(bad("", &o).key, "netns");
        let o = Overrides {
            ports: vec!["afpacket:a".into(), "afpacket:a".into()],
            ..Default::default()
        };
        assert!(bad("", &o).msg.contains("opened twice"));
    }

    #[test]
    fn dpid_forms() {
        assert_eq!(parse_dpid("0x1"), Some(1));
        assert_eq!(parse_dpid("0xffffffffffffffff"), Some(u64::MAX));
        assert_eq!(parse_dpid("0x1ffffffffffffffff"), None);
        assert_eq!(parse_dpid("42"), Some(42));
        assert_eq!(parse_dpid("0x"), None);
        assert_eq!(parse_dpid(""), None);
    }

    #[test]
    fn defaults() {
        let c = build("", &Overrides::default()).unwrap();
        assert!(c.datapath.workers >= 1);
        assert_eq!(c.datapath.fail_mode, FailMode::Secure);
        assert_eq!(c.name, "br0");
        let control = c.control.as_ref().expect("a control socket by default");
        assert_eq!(control.path, PathBuf::from("/run/sluice/br0.mgmt"));
        assert!(!control.rundir_chosen);
        let targets: Vec<String> = c.agent.targets.iter().map(|t| t.to_string()).collect();
        assert_eq!(targets, ["punix:/run/sluice/br0.mgmt"]);
        assert!(c.datapath.ports.is_empty());
        assert_eq!(c.datapath.pipeline.datapath, Datapath::Compiled);
        assert_eq!(c.datapath.pipeline.cache, CacheMode::Auto);
        assert!(c.datapath.pipeline.jit.background);
    }

    #[test]
    fn control_socket_settings() {
        let c = build("name = \"lab\"\nrundir = \"/tmp/r\"\n", &Overrides::default()).unwrap();
        assert_eq!(c.control.as_ref().unwrap().path, PathBuf::from("/tmp/r/lab.mgmt"));
        assert!(c.control.as_ref().unwrap().rundir_chosen);
        let over = Overrides {
            name: Some("sw-1".into()),
            rundir: Some("/x".into()),
            ..Default::default()
        };
        let c = build("name = \"lab\"\nrundir = \"/tmp/r\"\n", &over).unwrap();
        assert_eq!(c.name, "sw-1");
        assert_eq!(c.control.unwrap().path, PathBuf::from("/x/sw-1.mgmt"));
        let off = Overrides { no_control_socket: true, ..Default::default() };
        let c = build("", &off).unwrap();
        assert!(c.control.is_none() && c.agent.targets.is_empty());
        let c = build("control_socket = false\n", &Overrides::default()).unwrap();
        assert!(c.control.is_none() && c.agent.targets.is_empty());
        // punix: listeners, and the control socket given twice.
        let o = Overrides {
            listen: vec!["punix:/tmp/other.sock".into()],
            no_control_socket: true,
            ..Default::default()
        };
        let c = build("", &o).unwrap();
        assert_eq!(c.agent.targets[0].to_string(), "punix:/tmp/other.sock");
        let o =
            Overrides { listen: vec!["punix:/run/sluice/br0.mgmt".into()], ..Default::default() };
        let e = bad("", &o);
        assert!(e.msg.contains("control socket already"), "{e}");
        // Bad names and paths name the key.
        for n in ["", ".h", "-x", "a/b", "a b", &"x".repeat(65)] {
            let o = Overrides { name: Some(n.to_string()), ..Default::default() };
            assert_eq!(bad("", &o).key, "--name", "{n:?}");
        }
        assert_eq!(bad("name = \"a/b\"\n", &Overrides::default()).key, "name");
        let o = Overrides { rundir: Some("/".repeat(2).repeat(60).into()), ..Default::default() };
        let e = bad("", &o);
        assert!(e.key == "--rundir" && e.msg.contains("at most 107"), "{e}");
        let o = Overrides { rundir: Some(PathBuf::new()), ..Default::default() };
        assert_eq!(bad("", &o).key, "--rundir");
    }

    #[test]
    fn rundir_precedence() {
        let env = Some(std::ffi::OsString::from("/e"));
        assert_eq!(rundir(Some("/f".into()), env.clone()), (PathBuf::from("/f"), true));
        assert_eq!(rundir(None, env), (PathBuf::from("/e"), true));
        assert_eq!(rundir(None, Some("".into())), (PathBuf::from(DEFAULT_RUNDIR), false));
        assert_eq!(rundir(None, None), (PathBuf::from(DEFAULT_RUNDIR), false));
        assert_eq!(control_path(Path::new("/r"), "br0"), PathBuf::from("/r/br0.mgmt"));
        assert!(check_switch_name("br0").is_ok() && check_switch_name("a.b_c-1").is_ok());
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,200}") {
            let _ = build(&s, &Overrides::default());
        }
    }
}
