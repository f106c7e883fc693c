//! `sluice p4`: P4-16 programs (v1model) on sluice's reference
//! interpreter (library: `sluice-p4`).
//!
//! - `sluice p4 check PROG.p4`: load (preprocess, parse, check) only;
//!   prints `ok` or the diagnostic with `file:line:column` and a caret.
//! - `sluice p4 test PROG.p4 PROG.stf`: load, run p4c's STF test, print
//!   `PASS` or every failure (port, expected and received bytes, STF line).
//! - `sluice p4 suite DIR [--jobs N]`: every `NAME.p4` in DIR that has a
//!   `NAME.stf` (other `.p4` files are included skeletons), one line each
//!   (`PASS name`, `FAIL name: reason`, `UNSUPPORTED name: reason`), then
//!   `N passed, M failed, K unsupported`. Each program runs on its own
//!   thread: a panic is a failure with its message, and a program that
//!   runs longer than `--timeout` seconds has "timed out".
//!
//! - `sluice p4 run PROG.p4 --port SPEC... [--listen ptcp:PORT:IP]
//!   [--netns NS] [--reference]`: the program on real ports
//!   (`sluice_datapath::p4switch`), compiled into the core when the
//!   lowering takes it, else (or with `--reference`) on the reference
//!   interpreter, the log saying which and why; its tables managed with
//!   `p4 ctl`. `--p4runtime IP[:PORT]` (port 9559 if left out) also serves
//!   P4Runtime (`sluice_p4rt`) as device `--device-id` (0), with
//!   `--cpu-port N` the port packet-outs enter and packet-ins leave by.
//!   `--tls-ca FILE --tls-cert FILE --tls-key FILE` (the `[tls]` files of
//!   `sluice run`'s OpenFlow channel) serve it over mutual TLS: a client
//!   must present a certificate that chains to the CA; `--tls-crl FILE`
//!   (repeatable) revokes, as `sluice run --crl` does.
//! - `sluice p4 ctl TARGET [COMMAND...]`: one simple_switch_CLI command
//!   (`table_add ...`, `table_dump T`, `counter_read C I`, `digests`, ...)
//!   sent to a running `p4 run`; without a command, one per line from
//!   stdin. Answers go to stdout, refusals to stderr (exit status 1).
//! - `sluice p4 trace PROG.p4 [--commands FILE] (--packet HEX | --flow
//!   DESC) --port N`: one packet explained stage by stage (tables filled
//!   by simple_switch_CLI commands first); see [`super::p4_trace`].
//!
//! - `sluice p4 info PROG.p4`: the program's P4Runtime P4Info as text
//!   protobuf, ids as p4c assigns them (`sluice_p4::p4info`), so a
//!   controller written against p4c's P4Info works unchanged.
//!
//! Exit status of `check`, `info` and `test`: 0 ok/pass, 1 error or failure, 2
//! what the program or the script uses is not supported. `suite`: 1 if
//! anything failed, else 0.

use anyhow::{bail, Context, Result};
use sluice_p4::diag::Diagnostic;
use sluice_p4::stf::{self, Outcome};
use std::cell::RefCell;
use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Prints to stdout, ignoring a closed pipe.
macro_rules! say {
    ($($t:tt)*) => {{
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}

/// Arguments of `sluice p4`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// `sluice p4` subcommands.
#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Load a program (preprocess, parse, check): prints `ok` or the error.
    Check {
        /// The P4-16 source file (v1model).
        program: PathBuf,
    },
    /// Print the program's P4Runtime P4Info (text protobuf, p4c's ids).
    Info {
        /// The P4-16 source file (v1model).
        program: PathBuf,
    },
    /// Run a p4c STF test on the reference interpreter: `PASS` or the failures.
    Test {
        /// The P4-16 source file (v1model).
        program: PathBuf,
        /// The STF test script (p4c's `.stf` format).
        stf: PathBuf,
    },
    /// Run every NAME.p4 with a NAME.stf in a directory, one line each, then totals.
    Suite {
        /// Directory of NAME.p4 / NAME.stf pairs, e.g. p4c's testdata/p4_16_samples.
        dir: PathBuf,
        /// Programs run at once (default: the number of CPUs).
        #[arg(long, short)]
        jobs: Option<usize>,
        /// Seconds one program may take before it counts as failed.
        #[arg(long, default_value_t = 20)]
        timeout: u64,
        /// Print the whole report of each program that does not pass.
        #[arg(long, short)]
        verbose: bool,
    },
    /// Run a program on ports (reference interpreter); manage it with `p4 ctl`.
    Run(RunArgs),
    /// Explain one packet through a program: parser, tables, actions, outputs.
    Trace(super::p4_trace::TraceArgs),
    /// Send simple_switch_CLI commands to a running `sluice p4 run`.
    Ctl {
        /// The switch's listener: `tcp:IP:PORT` or `unix:PATH`.
        target: String,
        /// One command (`table_add T ACTION KEY... => PARAM... [PRIO]`,
        /// `table_dump T`, `digests`, ...); none: one per line from stdin.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
        /// Seconds to wait for the switch.
        #[arg(long, default_value_t = 30)]
        timeout: u64,
    },
}

/// Arguments of `sluice p4 run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The P4-16 source file (v1model).
    program: PathBuf,
    /// A port, e.g. `afpacket:veth1=1` (repeatable; `=N` is the port
    /// number the program sees, otherwise the lowest free one from 1).
    #[arg(long = "port", value_name = "SPEC", required = true)]
    ports: Vec<String>,
    /// Passive listener for `sluice p4 ctl`, e.g. `ptcp:9559:127.0.0.1` or
    /// `punix:/tmp/p4.sock` (repeatable).
    #[arg(long, value_name = "TARGET")]
    listen: Vec<String>,
    /// Open the ports in this network namespace (`ip netns` name).
    #[arg(long, value_name = "NAME")]
    netns: Option<String>,
    /// Datapath id reported to FEATURES_REQUEST, decimal or 0x hex.
    #[arg(long, value_name = "ID", default_value = "1")]
    dpid: String,
    /// Run the program on the reference interpreter even if it compiles
    /// into the core.
    #[arg(long)]
    reference: bool,
    /// Caches in front of a compiled program's tables: `auto` (each
    /// worker keeps the caches it measures to pay on its traffic), `on`
    /// (exact-match, then megaflow), `megaflow` or `off`.
    #[arg(long, value_name = "MODE", default_value = "auto", value_parser = ["auto", "on", "megaflow", "off"])]
    cache: String,
    /// Serve P4Runtime (gRPC) on `IP:PORT`, or on `IP` at port 9559.
    #[arg(long, value_name = "ADDR")]
    p4runtime: Option<String>,
    /// P4Runtime device id.
    #[arg(long, value_name = "ID", default_value_t = 0, requires = "p4runtime")]
    device_id: u64,
    /// The port number packet-outs enter by and packet-ins leave by
    /// (none by default, as bmv2: then packet I/O with the controller is refused).
    #[arg(long, value_name = "N", requires = "p4runtime")]
    cpu_port: Option<u32>,
    /// Serve P4Runtime over TLS: the CA a client's certificate must chain
    /// to (mutual TLS, as `sluice run`'s `[tls] ca`); with --tls-cert and
    /// --tls-key.
    #[arg(long, value_name = "FILE", requires_all = ["p4runtime", "tls_cert", "tls_key"])]
    tls_ca: Option<PathBuf>,
    /// The switch's certificate chain (PEM) for P4Runtime over TLS (`[tls] cert`).
    #[arg(long, value_name = "FILE", requires_all = ["p4runtime", "tls_ca", "tls_key"])]
    tls_cert: Option<PathBuf>,
    /// The switch's private key (PEM) for P4Runtime over TLS (`[tls] key`).
    #[arg(long, value_name = "FILE", requires_all = ["p4runtime", "tls_ca", "tls_cert"])]
    tls_key: Option<PathBuf>,
    /// Certificate revocation list (PEM; repeatable) for P4Runtime over
    /// TLS, as `sluice run --crl`: a client certificate it lists, or one
    /// whose issuer has no list given, is refused.
    #[arg(long = "tls-crl", value_name = "FILE", requires = "tls_ca")]
    tls_crls: Vec<PathBuf>,
}

/// `IP:PORT`, or `IP` meaning port 9559 (P4Runtime's IANA port).
fn p4runtime_addr(s: &str) -> Result<std::net::SocketAddr> {
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    match s.trim_matches(|c| c == '[' || c == ']').parse::<std::net::IpAddr>() {
        Ok(ip) => Ok(std::net::SocketAddr::new(ip, 9559)),
        Err(_) => bail!("--p4runtime `{s}`: expected IP:PORT or IP (port 9559)"),
    }
}

fn run_switch(a: RunArgs) -> Result<()> {
    use sluice_datapath::p4switch;
    let loaded =
        sluice_p4::parse::load_file(&a.program).map_err(|e| anyhow::anyhow!("{}", e.render()))?;
    let (mut engine, fallback) = sluice_p4::engines::Engine::load(&loaded, a.reference)
        .map_err(|d| anyhow::anyhow!("{}", loaded.sources.render(&d)))?;
    engine.set_cache_mode(match a.cache.as_str() {
        "megaflow" => sluice_p4::engines::CacheMode::Megaflow,
        "off" => sluice_p4::engines::CacheMode::Off,
        "on" => sluice_p4::engines::CacheMode::On,
        _ => sluice_p4::engines::CacheMode::Auto,
    });
    let mut ports: Vec<(u32, sluice_datapath::ports::PortSpec)> = Vec::new();
    for s in &a.ports {
        let spec = sluice_datapath::ports::PortSpec::parse(s)
            .map_err(|e| anyhow::anyhow!("--port {s}: {e}"))?;
        let n = match spec.port_no {
            Some(n) => n,
            None => (1..).find(|n| !ports.iter().any(|(m, _)| m == n)).unwrap_or(1),
        };
        if ports.iter().any(|(m, _)| *m == n) {
            bail!("--port {s}: port number {n} is taken twice");
        }
        ports.push((n, spec));
    }
    let mut agent = sluice_datapath::agent::AgentConfig::default();
    for t in &a.listen {
        let target: sluice_datapath::agent::Target =
            t.parse().map_err(|e| anyhow::anyhow!("--listen: {e}"))?;
        if !target.passive {
            bail!("--listen {t}: a listener is ptcp:PORT[:IP] or punix:PATH");
        }
        agent.targets.push(target);
    }
    let dpid = sluice_datapath::config::parse_dpid(&a.dpid)
        .ok_or_else(|| anyhow::anyhow!("--dpid `{}` is not a number", a.dpid))?;
    let fallback = match &fallback {
        None => None,
        Some(sluice_p4::engines::Fallback::Asked) => Some("--reference".to_string()),
        Some(sluice_p4::engines::Fallback::Refused(d)) => Some(format!(
            "the lowering into the core refused the program: {}",
            loaded.sources.render(d)
        )),
    };
    sluice_datapath::daemon::init_logging();
    let p4runtime = match &a.p4runtime {
        None => None,
        Some(s) => {
            let addr = p4runtime_addr(s)?;
            if let Some(cpu) = a.cpu_port {
                if ports.iter().any(|(n, _)| *n == cpu) {
                    bail!("--cpu-port {cpu}: port {cpu} is also a --port; the CPU port is the controller's");
                }
            }
            let source = std::fs::read(&a.program)
                .with_context(|| format!("reading {}", a.program.display()))?;
            let pipeline = match sluice_p4rt::pipeline::Pipeline::new(&loaded, source, &engine) {
                Ok(p) => Some(p),
                Err(e) => {
                    tracing::warn!(
                        "P4Runtime starts with no pipeline (load one with SetForwardingPipelineConfig): {}",
                        e.message
                    );
                    None
                }
            };
            let device = sluice_p4rt::DeviceConfig {
                device_id: a.device_id,
                cpu_port: a.cpu_port,
                reference: a.reference,
            };
            let tls = match (&a.tls_ca, &a.tls_cert, &a.tls_key) {
                (Some(ca), Some(cert), Some(key)) => {
                    let files = sluice_datapath::agent::TlsFiles {
                        ca: ca.clone(),
                        cert: cert.clone(),
                        key: key.clone(),
                        crls: a.tls_crls.clone(),
                    };
                    let ctx = sluice_datapath::agent::TlsContext::load(&files).map_err(|e| {
                        anyhow::anyhow!("--tls-ca/--tls-cert/--tls-key/--tls-crl: {e}")
                    })?;
                    Some(ctx.server)
                }
                _ => None,
            };
            Some(p4switch::P4RuntimeRun { addr, device, pipeline, tls })
        }
    };
    let stop = sluice_datapath::daemon::stop_on_signals().context("installing signal handlers")?;
    let cfg = p4switch::P4RunConfig {
        ports,
        netns: a.netns,
        agent,
        datapath_id: dpid,
        fallback,
        p4runtime,
    };
    p4switch::run(engine, cfg, &stop)
}

fn ctl(target: &str, command: &[String], timeout: u64) -> Result<()> {
    use super::ctl::conn::{Conn, Target};
    use sluice_ofp::message::Message;
    use sluice_ofp::p4ctl::{self, CtlReply};
    let t = Target::parse(target).map_err(|e| anyhow::anyhow!("{e}"))?;
    let deadline = std::time::Instant::now() + Duration::from_secs(timeout);
    let mut conn = Conn::connect(&t, Some(deadline))?;
    let lines: Vec<String> = if command.is_empty() {
        std::io::stdin()
            .lines()
            .collect::<std::io::Result<Vec<String>>>()
            .context("reading commands from stdin")?
    } else {
        vec![command.join(" ")]
    };
    let mut failed = false;
    for line in lines {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let r = conn.transact(&p4ctl::request(line), "the command")?;
        let reply = match &r.msg {
            Ok(Message::Experimenter(e)) => CtlReply::parse(e),
            _ => None,
        };
        match reply {
            Some(Ok(CtlReply { ok: true, text })) => {
                let _ = write!(std::io::stdout().lock(), "{text}");
            }
            Some(Ok(CtlReply { ok: false, text })) => {
                eprintln!("sluice p4 ctl: {text}");
                failed = true;
            }
            Some(Err(e)) => bail!("{target}: {e}"),
            None => bail!("{target} answered `{}`: is it a `sluice p4 run`?", r.print()),
        }
    }
    if failed {
        exit(1);
    }
    Ok(())
}

pub fn run(a: Args) -> Result<()> {
    match a.cmd {
        Cmd::Run(r) => run_switch(r),
        Cmd::Trace(t) => {
            let interp = match load(&t.program) {
                Ok(i) => i,
                Err(Verdict::Fail(_, all) | Verdict::Unsupported(_, all)) => bail!("{all}"),
                Err(Verdict::Pass) => bail!("internal error: a load error that passed"),
            };
            super::p4_trace::run(t, interp)
        }
        Cmd::Ctl { target, command, timeout } => ctl(&target, &command, timeout),
        Cmd::Check { program } => check(&program),
        Cmd::Info { program } => info(&program),
        Cmd::Test { program, stf } => test(&program, &stf),
        Cmd::Suite { dir, jobs, timeout, verbose } => {
            suite(&dir, jobs, Duration::from_secs(timeout), verbose)
        }
    }
}

/// The result of one program and its script.
enum Verdict {
    Pass,
    /// One line, and everything there is to say.
    Fail(String, String),
    Unsupported(String, String),
}

impl Verdict {
    fn exit_code(&self) -> i32 {
        match self {
            Verdict::Pass => 0,
            Verdict::Fail(..) => 1,
            Verdict::Unsupported(..) => 2,
        }
    }

    /// A load error, by the kind of its message.
    fn from_diagnostic(d: &Diagnostic, rendered: String) -> Self {
        let first = rendered.lines().next().unwrap_or("").to_string();
        if d.message.starts_with("not supported") {
            Verdict::Unsupported(first, rendered)
        } else {
            Verdict::Fail(first, rendered)
        }
    }
}

fn exit(code: i32) -> ! {
    let _ = std::io::stdout().flush();
    std::process::exit(code)
}

fn load(program: &Path) -> Result<sluice_p4::interp::Interp, Verdict> {
    let loaded = sluice_p4::parse::load_file(program)
        .map_err(|e| Verdict::from_diagnostic(&e.diag, e.render()))?;
    sluice_p4::interp::Interp::new(&loaded)
        .map_err(|d| Verdict::from_diagnostic(&d, loaded.sources.render(&d)))
}

fn check(program: &Path) -> Result<()> {
    match load(program) {
        Ok(_) => {
            say!("ok");
            Ok(())
        }
        Err(v) => {
            if let Verdict::Fail(_, all) | Verdict::Unsupported(_, all) = &v {
                say!("{all}");
            }
            exit(v.exit_code())
        }
    }
}

/// `p4 info`: the P4Info on stdout; a refusal on stderr, exit status 2
/// for what is not supported, 1 for an error in the program.
fn info(program: &Path) -> Result<()> {
    let loaded = match sluice_p4::parse::load_file(program) {
        Ok(l) => l,
        Err(e) => {
            let v = Verdict::from_diagnostic(&e.diag, e.render());
            eprintln!("{}", e.render());
            exit(v.exit_code())
        }
    };
    match sluice_p4::p4info::P4Info::build(&loaded) {
        Ok(i) => {
            let _ = write!(std::io::stdout().lock(), "{}", sluice_p4::p4info::text::print(&i));
            Ok(())
        }
        Err(d) => {
            eprintln!("{}", loaded.sources.render(&d));
            let unsupported =
                d.message.starts_with("not supported") || d.message.ends_with("is not supported");
            exit(if unsupported { 2 } else { 1 })
        }
    }
}

fn run_one(program: &Path, script: &Path) -> Verdict {
    let text = match std::fs::read_to_string(script) {
        Ok(t) => t,
        Err(e) => {
            let m = format!("cannot read {}: {e}", script.display());
            return Verdict::Fail(m.clone(), m);
        }
    };
    let mut target = match load(program) {
        Ok(t) => t,
        Err(v) => return v,
    };
    let report = stf::run(&mut target, &text);
    match report.outcome() {
        Outcome::Pass => Verdict::Pass,
        Outcome::Fail => Verdict::Fail(report.summary(), report.to_string()),
        Outcome::Unsupported => Verdict::Unsupported(report.summary(), report.to_string()),
    }
}

fn test(program: &Path, script: &Path) -> Result<()> {
    let v = run_one(program, script);
    match &v {
        Verdict::Pass => say!("PASS"),
        Verdict::Fail(_, all) | Verdict::Unsupported(_, all) => say!("{all}"),
    }
    exit(v.exit_code())
}

/// `NAME.p4` files of `dir` that have a `NAME.stf`, by name.
fn programs(dir: &Path) -> Result<Vec<(String, PathBuf, PathBuf)>> {
    if !dir.is_dir() {
        bail!("{}: no such directory", dir.display());
    }
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let p = e?.path();
        if p.extension().is_none_or(|x| x != "p4") {
            continue;
        }
        let s = p.with_extension("stf");
        if s.is_file() {
            let name = p.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            v.push((name, p, s));
        }
    }
    v.sort();
    Ok(v)
}

thread_local! {
    /// The last panic on this thread: message and place.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".into()
    }
}

/// Runs one program on its own thread: a panic or running out of time is
/// a failure, and the suite goes on.
fn run_isolated(program: PathBuf, script: PathBuf, limit: Duration) -> Verdict {
    let (tx, rx) = mpsc::channel();
    let spawned =
        std::thread::Builder::new().name("p4-suite".into()).stack_size(64 << 20).spawn(move || {
            let v = match panic::catch_unwind(AssertUnwindSafe(|| run_one(&program, &script))) {
                Ok(v) => v,
                Err(payload) => {
                    let m = LAST_PANIC
                        .with(|p| p.borrow_mut().take())
                        .unwrap_or_else(|| panic_text(&*payload));
                    let m = format!("panicked: {m}");
                    Verdict::Fail(m.clone(), m)
                }
            };
            let _ = tx.send(v);
        });
    if let Err(e) = spawned {
        let m = format!("cannot start a thread: {e}");
        return Verdict::Fail(m.clone(), m);
    }
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            let m = format!("timed out after {} s", limit.as_secs_f64());
            Verdict::Fail(m.clone(), m)
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let m = "the program's thread died".to_string();
            Verdict::Fail(m.clone(), m)
        }
    }
}

fn suite(dir: &Path, jobs: Option<usize>, limit: Duration, verbose: bool) -> Result<()> {
    let progs = Arc::new(programs(dir)?);
    if progs.is_empty() {
        bail!("{}: no NAME.p4 with a NAME.stf", dir.display());
    }
    // Panics are reported in the summary lines, with their place.
    panic::set_hook(Box::new(|info| {
        let place =
            info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        let m = format!("{}{place}", panic_text(info.payload()));
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(m));
    }));
    let jobs = jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, progs.len());
    let next = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    for _ in 0..jobs {
        let (progs, next, tx) = (progs.clone(), next.clone(), tx.clone());
        std::thread::spawn(move || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some((_, p4, stf)) = progs.get(i) else {
                break;
            };
            let v = run_isolated(p4.clone(), stf.clone(), limit);
            if tx.send((i, v)).is_err() {
                break;
            }
        });
    }
    drop(tx);
    // Print in name order as results arrive.
    let mut done: Vec<Option<Verdict>> = (0..progs.len()).map(|_| None).collect();
    let mut printed = 0;
    let (mut pass, mut fail, mut unsup) = (0, 0, 0);
    for (i, v) in rx {
        done[i] = Some(v);
        while let Some(Some(v)) = done.get(printed) {
            let name = &progs[printed].0;
            match v {
                Verdict::Pass => {
                    pass += 1;
                    say!("PASS {name}");
                }
                Verdict::Fail(line, all) => {
                    fail += 1;
                    say!("FAIL {name}: {line}");
                    if verbose {
                        say!("    {}", all.replace('\n', "\n    "));
                    }
                }
                Verdict::Unsupported(line, all) => {
                    unsup += 1;
                    say!("UNSUPPORTED {name}: {line}");
                    if verbose {
                        say!("    {}", all.replace('\n', "\n    "));
                    }
                }
            }
            printed += 1;
        }
    }
    say!("{pass} passed, {fail} failed, {unsup} unsupported");
    // Threads of programs that timed out may still be running.
    exit(if fail > 0 { 1 } else { 0 })
}
