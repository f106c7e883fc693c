//! `sluice ctl [TARGET] COMMAND [ARGS]`: talk to a running OpenFlow 1.3
//! switch, in ovs-ofctl's words.
//!
//! # What
//! The everyday client: add, modify and delete flows, groups and meters;
//! dump flows, groups, meters, ports, tables and their statistics; send a
//! packet out; watch asynchronous messages; load and unload sluice's
//! eBPF filter programs and read and write their maps ([`filterprog`],
//! sluice's experimenter extension); trace a packet through the running
//! switch's tables and caches (`trace`, sluice's experimenter
//! `TRACE_REQUEST`). Flows, groups, meters and
//! actions are written in ovs-ofctl's syntax ([`sluice_ofp::ofctl`]) and
//! replies are printed in ovs-ofctl's format ([`sluice_ofp::print`]), so
//! `sluice ctl tcp:127.0.0.1:6653 dump-flows` reads like
//! `ovs-ofctl -O OpenFlow13 dump-flows tcp:127.0.0.1:6653`.
//! TARGET is `tcp:IP[:PORT]` (port 6653 by default; IPv6 in brackets),
//! `unix:PATH`, or a switch name: `br0` is the control socket
//! `RUNDIR/br0.mgmt` that `sluice run --name br0` opens (RUNDIR is
//! `--rundir`, else `$SLUICE_RUNDIR`, else `/run/sluice`). Without a
//! TARGET, the one control socket in RUNDIR is used (none or several is an
//! error that lists them). `ovs-ofctl`'s order (`COMMAND TARGET`) is
//! accepted too; see [`Words`] for how the words are told apart.
//!
//! # Behaviour (as ovs-ofctl)
//! 1. All text is parsed first; a syntax error is printed with a caret
//!    under the bad token and the command fails without connecting.
//! 2. HELLO negotiation; only OpenFlow 1.3 is accepted (`-O OpenFlow13`
//!    is allowed for muscle memory, anything else is refused).
//! 3. Modifications (flow/group/meter mods, packet-out, set-config) are
//!    sent back to back, then one BARRIER_REQUEST; the command waits for
//!    its reply. `add-flows FILE` pipelines every line this way, so a large
//!    file costs one round trip, not one per flow.
//! 4. Multipart replies are collected until one arrives without
//!    `OFPMPF_REPLY_MORE` and printed as one message.
//! 5. An `OFPT_ERROR` answer is printed (type and code names, then the
//!    switch's copy of the offending request) and the command exits
//!    non-zero. With a file, each rejected line is named by `FILE:LINE`.
//!    sluice's own experimenter errors (filter programs) are printed as
//!    their name and the switch's text, e.g. `SLICFPC_PROG_REJECTED: xdp:
//!    rejected: insn 1: ...`.
//! 6. Connection problems name the target.
//! 7. Echo requests from the switch are answered at once (also during a
//!    long `monitor` or barrier wait) and are not printed.
//!
//! # Commands
//! See [`COMMANDS`] (also printed by `sluice ctl --help`).
//!
//! # Deliberate differences
//! A bridge name is only a socket name (there is no database to ask); no
//! OpenFlow versions other than 1.3; `dump-groups GROUP` filters the group
//! descriptions on the client (OpenFlow 1.3's request has no group id);
//! `--timeout` ends `monitor` successfully (it is its bound), while for
//! every other command it is a deadline whose expiry is an error.

mod capture;
pub(crate) mod conn;
mod filterprog;
mod input;

use anyhow::{anyhow, bail, Context, Result};
use conn::{error_names, Conn, Received, SwitchError, Target};
use input::{Item, PortArg};
use sluice_ofp::consts::{port_no, queue_id};
use sluice_ofp::message::{
    flow_mod_command as fc, group_mod_command as gc, meter_mod_command as mc, Message, PacketOut,
    SwitchConfig,
};
use sluice_ofp::multipart::MultipartRequestBody as Req;
use sluice_ofp::multipart::{FlowStatsRequest, MultipartReply, MultipartReplyBody};
use sluice_ofp::ofctl::{parse_flow, Usage};
use sluice_ofp::print::print_message;
use sluice_ofp::tracemsg::TraceRequest;
use std::time::{Duration, Instant};

/// The commands, as `--help` lists them.
pub const COMMANDS: &str = "\
Commands (FLOW, GROUP, METER and ACTIONS in ovs-ofctl syntax):
  show                         features, port descriptions and switch config
  dump-desc                    switch description
  dump-flows [FLOW]            flows (all, or those matching FLOW)
  dump-aggregate [FLOW]        aggregate statistics of matching flows
  add-flow FLOW                add a flow
  add-flows FILE               add (or modify/delete) the flows in FILE, one per line
                               ('-' for stdin; '#' comments; optional leading
                               add|modify|modify_strict|delete|delete_strict)
  mod-flows FLOW               modify matching flows' actions (--strict: exact match)
  del-flows [FLOW]             delete matching flows, all without FLOW (--strict)
  add-group GROUP              add a group
  add-groups FILE              add the groups in FILE, one per line
  mod-group GROUP              modify a group
  del-groups [GROUP]           delete a group (group_id=N or N), all without GROUP
  dump-groups [GROUP]          group descriptions
  dump-group-stats [GROUP]     group statistics
  dump-group-features          group features
  add-meter METER              add a meter
  mod-meter METER              modify a meter
  del-meter[s] [METER]         delete a meter (meter=N or N), all without METER
  dump-meters [METER]          meter configurations
  meter-stats [METER]          meter statistics
  meter-features               meter features
  dump-ports [PORT]            port statistics (number, reserved name or interface name)
  dump-ports-desc [PORT]       port descriptions
  queue-stats [PORT [QUEUE]]   queue statistics
  dump-tables                  table statistics
  dump-table-features          table features
  get-config                   switch configuration
  set-config SETTING...        frags=normal|drop|reassemble, miss_send_len=N
  packet-out IN_PORT ACTIONS PACKET
                               send PACKET (hex) as if received on IN_PORT;
                               also: in_port=P,packet=HEX,actions=ACTIONS
  monitor [MISS_LEN]           print asynchronous messages until interrupted,
                               --count N messages or --timeout SECS; MISS_LEN
                               sets miss_send_len first (Open vSwitch sends
                               nothing to a ptcp: connection until it is set)
  barrier                      send a barrier and wait for its reply
  trace FLOW                   trace a packet built from FLOW (a match with
                               in_port=N, e.g. in_port=1,tcp,nw_dst=10.0.0.1)
                               through the switch's tables and caches, like
                               sluice trace; nothing is sent
  trace --packet HEX IN_PORT   trace this frame, received on IN_PORT
  capture PORT FILE            record the frames PORT receives into the pcap
                               FILE until --count N frames or --seconds S
                               (default 10; the switch caps both)
  reload                       make the switch read its configuration again; prints the outcome
                               (as SIGHUP does; control socket targets only;
                               the switch logs the outcome)
Filter programs (sluice's experimenter extension; ID is 1..4294967294):
  load-filter-prog ID FILE     load the eBPF ELF object FILE as program ID
  unload-filter-prog ID        unload program ID (refused while a flow names it)
  update-map ID MAP KEY_HEX VALUE_HEX [KEY_HEX VALUE_HEX...]
                               insert or replace entries of map MAP
  update-map --delete ID MAP KEY_HEX [KEY_HEX...]
                               delete entries of map MAP
  dump-map ID MAP              print map MAP, one `key=HEX value=HEX` per entry
Flows run a program with the match field filter_prog=ID, or a pcap-filter
expression with pcap_filter=\"EXPR\".";

/// Arguments of `sluice ctl`.
#[derive(clap::Args)]
#[command(after_help = COMMANDS)]
pub struct Args {
    /// `[TARGET] COMMAND [ARGS...]`. TARGET: tcp:IP[:PORT] (default port
    /// 6653), unix:PATH, or a switch name (its control socket
    /// RUNDIR/NAME.mgmt); without one, the only switch in RUNDIR. COMMAND:
    /// see the list below.
    #[arg(required = true, value_name = "[TARGET] COMMAND [ARGS]")]
    pub words: Vec<String>,
    /// Where switches' control sockets are (default: $SLUICE_RUNDIR, else /run/sluice).
    #[arg(long, value_name = "DIR")]
    pub rundir: Option<std::path::PathBuf>,
    /// mod-flows / del-flows: match exactly (including priority).
    #[arg(long)]
    pub strict: bool,
    /// update-map: delete the given keys instead of writing entries.
    #[arg(long)]
    pub delete: bool,
    /// OpenFlow version(s), as ovs-ofctl's -O; only OpenFlow13 is spoken.
    #[arg(short = 'O', long = "protocols", value_name = "VERSION")]
    pub protocols: Option<String>,
    /// Give up after SECS seconds (monitor: stop after SECS, successfully).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// monitor: stop after N messages; capture: after N frames.
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// capture: stop after SECS seconds (default 10).
    #[arg(long, value_name = "SECS")]
    pub seconds: Option<u32>,
    /// trace: the frame to trace, as hex.
    #[arg(long, value_name = "HEX")]
    pub packet: Option<String>,
}

/// What a command does once connected; built before connecting.
enum Plan {
    Show,
    /// Send all, then one barrier; `what` names one item ("flow-mod").
    Mods {
        what: &'static str,
        items: Vec<Item>,
    },
    /// One multipart request, printed as one reply.
    Dump {
        body: Req,
        what: &'static str,
        only_group: Option<u32>,
    },
    DumpPorts {
        port: Option<PortArg>,
    },
    PortsDesc {
        port: Option<PortArg>,
    },
    PacketOut(input::PacketOutArgs),
    GetConfig,
    SetConfig {
        frags: Option<u16>,
        miss_send_len: Option<u16>,
    },
    Monitor {
        miss_len: Option<u16>,
    },
    Barrier,
    /// A filter program's fragments, then one barrier; the first refused
    /// fragment is the answer.
    LoadFilterProg {
        items: Vec<Item>,
    },
    DumpMap(sluice_ofp::filterprog::DumpMapRequest),
    /// A live trace: the request, and the in-port of a frame to resolve.
    Trace {
        req: TraceRequest,
        port: Option<PortArg>,
    },
    /// Record a port's received frames into a pcap file.
    Capture {
        port: PortArg,
        file: std::path::PathBuf,
    },
}

/// Command-line switches that change what a command sends.
#[derive(Clone, Copy, Debug, Default)]
struct Flags {
    strict: bool,
    delete: bool,
}

pub fn run(args: Args) -> Result<()> {
    let env = std::env::var_os(sluice_datapath::config::RUNDIR_ENV);
    let (rundir, _) = sluice_datapath::config::rundir(args.rundir.clone(), env);
    let words = Words::split(&args.words, &rundir)?;
    let command = words.command.as_str();
    let target = match words.target {
        Some(t) => t,
        None => Target::Unix(only_socket(&rundir)?),
    };
    if let Some(p) = &args.protocols {
        if !p.split(',').any(|v| v.trim().eq_ignore_ascii_case("OpenFlow13")) {
            bail!("-O {p}: sluice ctl speaks only OpenFlow13");
        }
    }
    let deadline = match args.timeout {
        None => None,
        Some(s) if (0.0..1e9).contains(&s) => Some(Instant::now() + Duration::from_secs_f64(s)),
        Some(s) => bail!("--timeout {s}: expected a number of seconds"),
    };
    if command == "reload" {
        at_most(command, &words.args, 0)?;
        return reload(&target);
    }
    let flags = Flags { strict: args.strict, delete: args.delete };
    let plan = match (&args.packet, command) {
        (Some(hex), "trace") => trace_packet(&words.args, hex)?,
        (Some(_), _) => bail!("{command}: --packet applies only to trace"),
        (None, _) => plan(command, &words.args, flags)?,
    };
    if args.seconds.is_some() && command != "capture" {
        bail!("{command}: --seconds applies only to capture");
    }
    let mut conn = Conn::connect(&target, deadline)?;
    execute(&mut conn, plan, deadline, (args.count, args.seconds))
}

/// Every command [`plan`] knows (a test keeps the two in step).
const COMMAND_NAMES: &[&str] = &[
    "show",
    "dump-desc",
    "dump-flows",
    "dump-aggregate",
    "add-flow",
    "mod-flows",
    "del-flows",
    "add-flows",
    "add-group",
    "mod-group",
    "del-groups",
    "del-group",
    "add-groups",
    "dump-groups",
    "dump-group-stats",
    "dump-group-features",
    "add-meter",
    "mod-meter",
    "del-meter",
    "del-meters",
    "dump-meters",
    "meter-stats",
    "meter-features",
    "dump-ports",
    "dump-ports-desc",
    "queue-stats",
    "dump-tables",
    "dump-table-features",
    "get-config",
    "set-config",
    "packet-out",
    "monitor",
    "barrier",
    "load-filter-prog",
    "unload-filter-prog",
    "update-map",
    "dump-map",
    "trace",
    "capture",
    "reload",
];

fn is_command(word: &str) -> bool {
    COMMAND_NAMES.contains(&word)
}

/// The positional words of `sluice ctl`, told apart.
///
/// The first word decides:
/// 1. `tcp:...` or `unix:...`: the target; the command follows.
/// 2. A command name: the command. The word after it is the target if it
///    is `tcp:...`/`unix:...` (ovs-ofctl's `COMMAND TARGET` order), or a
///    switch name whose socket `RUNDIR/NAME.mgmt` exists (`dump-flows
///    br0`); otherwise it is the command's first argument and the target
///    is the only socket in RUNDIR.
/// 3. Anything else that can be a switch name: that switch's socket
///    (`br0 dump-flows`); the command follows.
#[derive(Debug, PartialEq, Eq)]
struct Words {
    /// `None`: the only control socket in the run directory.
    target: Option<Target>,
    command: String,
    args: Vec<String>,
}

impl Words {
    fn split(words: &[String], rundir: &std::path::Path) -> Result<Words> {
        use sluice_datapath::config::{check_switch_name, control_path};
        let Some((first, rest)) = words.split_first() else {
            bail!("missing COMMAND; see `sluice ctl --help`");
        };
        let after_target = |target: Target, rest: &[String]| -> Result<Words> {
            let Some((command, args)) = rest.split_first() else {
                bail!("`{first}`: missing COMMAND after the target; see `sluice ctl --help`");
            };
            Ok(Words { target: Some(target), command: command.clone(), args: args.to_vec() })
        };
        if first.starts_with("tcp:") || first.starts_with("unix:") {
            let t = Target::parse(first).map_err(|e| anyhow!("{e}"))?;
            return after_target(t, rest);
        }
        if is_command(first) {
            let named = |w: &String| {
                if w.starts_with("tcp:") || w.starts_with("unix:") {
                    return Target::parse(w).ok();
                }
                let path = control_path(rundir, w);
                (check_switch_name(w).is_ok() && is_socket(&path)).then_some(Target::Unix(path))
            };
            return Ok(match rest.split_first() {
                Some((w, args)) if named(w).is_some() => {
                    Words { target: named(w), command: first.clone(), args: args.to_vec() }
                }
                _ => Words { target: None, command: first.clone(), args: rest.to_vec() },
            });
        }
        if let Err(why) = check_switch_name(first) {
            bail!(
                "`{first}` is neither a command nor a target (tcp:IP[:PORT], unix:PATH or a \
                 switch name: {why}); see `sluice ctl --help`"
            );
        }
        let path = control_path(rundir, first);
        if !is_socket(&path) {
            let hint = match rest.first() {
                Some(c) if !is_command(c) => format!(" and `{c}` is not a command either"),
                _ => String::new(),
            };
            bail!(
                "`{first}`: no switch of that name: {} is not a socket{hint} (is `sluice run \
                 --name {first}` running with this run directory? see --rundir)",
                path.display()
            );
        }
        after_target(Target::Unix(path), rest)
    }
}

fn is_socket(path: &std::path::Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

/// The control sockets (`*.mgmt` sockets) in `rundir`, sorted.
fn control_sockets(rundir: &std::path::Path) -> Result<Vec<std::path::PathBuf>> {
    let suffix = sluice_datapath::config::CONTROL_SUFFIX;
    let entries = match std::fs::read_dir(rundir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => bail!("reading run directory {}: {e}", rundir.display()),
    };
    let mut found: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.to_str().is_some_and(|s| s.ends_with(suffix)) && is_socket(p))
        .collect();
    found.sort();
    Ok(found)
}

fn suffix_of() -> &'static str {
    sluice_datapath::config::CONTROL_SUFFIX
}

/// The one control socket in `rundir`, or an error that says what is there
/// and how to choose.
fn only_socket(rundir: &std::path::Path) -> Result<std::path::PathBuf> {
    let found = control_sockets(rundir)?;
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => bail!(
            "no switch to talk to: no control socket (NAME.mgmt) in {}; start one with \
             `sluice run`, give --rundir DIR (or $SLUICE_RUNDIR) where it runs, or a target \
             (tcp:IP[:PORT] or unix:PATH)",
            rundir.display()
        ),
        many => {
            let names: Vec<String> = many
                .iter()
                .filter_map(|p| {
                    p.file_name()?.to_str()?.strip_suffix(suffix_of()).map(String::from)
                })
                .collect();
            bail!(
                "{} switches run in {} ({}): name one, e.g. `sluice ctl {} COMMAND`",
                many.len(),
                rundir.display(),
                names.join(", "),
                names.first().map_or("NAME", String::as_str)
            )
        }
    }
}

/// `reload`: SIGHUP to the switch behind the control socket, then waits
/// (at most [`RELOAD_WAIT`]) for the outcome the switch writes beside its
/// socket, prints it, and fails when the reload was refused.
fn reload(target: &Target) -> Result<()> {
    use sluice_datapath::daemon::{reload_status_path, ReloadOutcome};
    let Target::Unix(path) = target else {
        bail!(
            "reload: {target} is not a control socket; reload works through the local control \
             socket (a switch name or unix:PATH), or send SIGHUP to `sluice run` yourself"
        );
    };
    let status = reload_status_path(path);
    let before = std::fs::read_to_string(&status).ok();
    let pid = sluice_datapath::daemon::request_reload(path).context("reload")?;
    let start = std::time::Instant::now();
    while start.elapsed() < RELOAD_WAIT {
        std::thread::sleep(std::time::Duration::from_millis(50));
        let Ok(now) = std::fs::read_to_string(&status) else { continue };
        if before.as_deref() == Some(now.as_str()) {
            continue;
        }
        let Some((by, _, out)) = ReloadOutcome::parse(&now) else { continue };
        if by != pid {
            continue;
        }
        for l in &out.lines {
            println!("{l}");
        }
        if !out.applied {
            bail!("reload refused by sluice run (pid {pid}); the running configuration is kept");
        }
        println!("reload applied (sluice run, pid {pid})");
        return Ok(());
    }
    bail!(
        "reload requested (SIGHUP sent to sluice run, pid {pid}) but no outcome appeared in {} \
         within {} s; see the switch's log",
        status.display(),
        RELOAD_WAIT.as_secs()
    )
}

/// How long `ctl reload` waits for the switch to report the outcome.
const RELOAD_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// `trace --packet HEX IN_PORT` (or `in_port=IN_PORT`).
fn trace_packet(args: &[String], hex: &str) -> Result<Plan> {
    let port = exactly_one("trace", args, "in-port")?;
    let port = port.strip_prefix("in_port=").unwrap_or(port);
    let frame = crate::cmd::ofp_print::parse_hex(&[hex.to_string()]).context("trace: --packet")?;
    if frame.is_empty() {
        bail!("trace: --packet is empty");
    }
    let req = TraceRequest::Frame { in_port: 0, frame };
    Ok(Plan::Trace { req, port: Some(input::port_arg(port)) })
}

fn joined(args: &[String]) -> String {
    args.join(" ")
}

fn at_most(cmd: &str, args: &[String], n: usize) -> Result<()> {
    if args.len() > n {
        bail!("{cmd}: too many arguments (expected at most {n}): {}", joined(args));
    }
    Ok(())
}

fn exactly_one<'a>(cmd: &str, args: &'a [String], what: &str) -> Result<&'a str> {
    match args {
        [a] => Ok(a),
        [] => bail!("{cmd}: missing {what}"),
        _ => bail!("{cmd}: expected one {what} (quote it), got {} arguments", args.len()),
    }
}

fn one(label: String, msg: Message) -> Vec<Item> {
    vec![Item { label, msg }]
}

fn flow_request(cmd: &str, args: &[String]) -> Result<FlowStatsRequest> {
    let text = joined(args);
    let spec = parse_flow(&text, Usage::Delete).map_err(|e| input::text_error(cmd, &text, &e))?;
    let fm = spec.to_flow_mod(fc::DELETE);
    Ok(FlowStatsRequest {
        table_id: fm.table_id,
        out_port: fm.out_port,
        out_group: fm.out_group,
        cookie: fm.cookie,
        cookie_mask: fm.cookie_mask,
        match_: fm.r#match,
    })
}

fn plan(cmd: &str, args: &[String], flags: Flags) -> Result<Plan> {
    if flags.delete && cmd != "update-map" {
        bail!("{cmd}: --delete applies only to update-map");
    }
    let strict = flags.strict;
    let dump = |body: Req, what: &'static str| Plan::Dump { body, what, only_group: None };
    Ok(match cmd {
        "show" => {
            at_most(cmd, args, 0)?;
            Plan::Show
        }
        "dump-desc" => {
            at_most(cmd, args, 0)?;
            dump(Req::Desc, "the description request")
        }
        "dump-flows" => dump(Req::Flow(flow_request(cmd, args)?), "the flow stats request"),
        "dump-aggregate" => {
            dump(Req::Aggregate(flow_request(cmd, args)?), "the aggregate stats request")
        }
        "add-flow" | "mod-flows" | "del-flows" => {
            let text = joined(args);
            let command = match (cmd, strict) {
                ("add-flow", _) => fc::ADD,
                ("mod-flows", false) => fc::MODIFY,
                ("mod-flows", true) => fc::MODIFY_STRICT,
                (_, false) => fc::DELETE,
                (_, true) => fc::DELETE_STRICT,
            };
            if cmd != "del-flows" && text.trim().is_empty() {
                bail!("{cmd}: missing FLOW");
            }
            let msg = input::flow_mod(cmd, &text, command)?;
            Plan::Mods { what: "flow-mod", items: one(format!("{cmd} `{text}`"), msg) }
        }
        "add-flows" => {
            let file = exactly_one(cmd, args, "FILE")?;
            let name = if file == "-" { "<stdin>" } else { file };
            Plan::Mods {
                what: "flow-mod",
                items: input::flow_file(name, &input::read_file(file)?)?,
            }
        }
        "add-group" | "mod-group" | "del-groups" | "del-group" => {
            let text = joined(args);
            let command = match cmd {
                "add-group" => gc::ADD,
                "mod-group" => gc::MODIFY,
                _ => gc::DELETE,
            };
            if command != gc::DELETE && text.trim().is_empty() {
                bail!("{cmd}: missing GROUP");
            }
            let msg = input::group_mod(cmd, &text, command)?;
            Plan::Mods { what: "group-mod", items: one(format!("{cmd} `{text}`"), msg) }
        }
        "add-groups" => {
            let file = exactly_one(cmd, args, "FILE")?;
            let name = if file == "-" { "<stdin>" } else { file };
            Plan::Mods {
                what: "group-mod",
                items: input::group_file(name, &input::read_file(file)?)?,
            }
        }
        "dump-groups" => {
            let id = input::group_selector(cmd, &joined(args))?;
            let only_group = (id != sluice_ofp::consts::group_id::ALL).then_some(id);
            Plan::Dump { body: Req::GroupDesc, what: "the group description request", only_group }
        }
        "dump-group-stats" => {
            let group_id = input::group_selector(cmd, &joined(args))?;
            dump(Req::Group { group_id }, "the group stats request")
        }
        "dump-group-features" => {
            at_most(cmd, args, 0)?;
            dump(Req::GroupFeatures, "the group features request")
        }
        "add-meter" | "mod-meter" | "del-meter" | "del-meters" => {
            let text = joined(args);
            let command = match cmd {
                "add-meter" => mc::ADD,
                "mod-meter" => mc::MODIFY,
                _ => mc::DELETE,
            };
            if command != mc::DELETE && text.trim().is_empty() {
                bail!("{cmd}: missing METER");
            }
            let msg = input::meter_mod(cmd, &text, command)?;
            Plan::Mods { what: "meter-mod", items: one(format!("{cmd} `{text}`"), msg) }
        }
        "dump-meters" => {
            let meter_id = input::meter_selector(cmd, &joined(args))?;
            dump(Req::MeterConfig { meter_id }, "the meter config request")
        }
        "meter-stats" => {
            let meter_id = input::meter_selector(cmd, &joined(args))?;
            dump(Req::Meter { meter_id }, "the meter stats request")
        }
        "meter-features" => {
            at_most(cmd, args, 0)?;
            dump(Req::MeterFeatures, "the meter features request")
        }
        "dump-ports" => {
            at_most(cmd, args, 1)?;
            Plan::DumpPorts { port: args.first().map(|p| input::port_arg(p)) }
        }
        "dump-ports-desc" => {
            at_most(cmd, args, 1)?;
            Plan::PortsDesc { port: args.first().map(|p| input::port_arg(p)) }
        }
        "queue-stats" => {
            at_most(cmd, args, 2)?;
            let port_no = match args.first().map(|p| input::port_arg(p)) {
                None => port_no::ANY,
                Some(PortArg::No(n)) => n,
                Some(PortArg::Name(n)) => bail!("{cmd}: give the port as a number, not `{n}`"),
            };
            let queue_id = match args.get(1).map(String::as_str) {
                None => queue_id::ALL,
                Some(q) if q.eq_ignore_ascii_case("all") => queue_id::ALL,
                Some(q) => q.parse().map_err(|_| anyhow!("{cmd}: `{q}` is not a queue id"))?,
            };
            dump(Req::Queue { port_no, queue_id }, "the queue stats request")
        }
        "dump-tables" => {
            at_most(cmd, args, 0)?;
            dump(Req::Table, "the table stats request")
        }
        "dump-table-features" => {
            at_most(cmd, args, 0)?;
            dump(Req::TableFeatures(vec![]), "the table features request")
        }
        "get-config" => {
            at_most(cmd, args, 0)?;
            Plan::GetConfig
        }
        "set-config" => {
            let (frags, miss_send_len) = input::set_config(args)?;
            Plan::SetConfig { frags, miss_send_len }
        }
        "packet-out" => Plan::PacketOut(input::packet_out(args)?),
        "monitor" => {
            at_most(cmd, args, 1)?;
            let miss_len = match args.first() {
                None => None,
                Some(a) => Some(
                    a.parse::<u16>()
                        .map_err(|_| anyhow!("monitor: MISS_LEN `{a}` is not 0..65535"))?,
                ),
            };
            Plan::Monitor { miss_len }
        }
        "barrier" => {
            at_most(cmd, args, 0)?;
            Plan::Barrier
        }
        "load-filter-prog" => Plan::LoadFilterProg { items: filterprog::load(cmd, args)? },
        "unload-filter-prog" => {
            Plan::Mods { what: "unload-filter-prog", items: filterprog::unload(cmd, args)? }
        }
        "update-map" => Plan::Mods {
            what: "update-map",
            items: filterprog::update_map(cmd, args, flags.delete)?,
        },
        "dump-map" => Plan::DumpMap(filterprog::dump_map_request(cmd, args)?),
        "trace" => {
            // The switch builds the packet and names a bad token itself.
            if args.is_empty() {
                bail!("trace: missing the flow description (or --packet HEX IN_PORT)");
            }
            Plan::Trace { req: TraceRequest::Flow(args.join(",")), port: None }
        }
        "capture" => match args {
            [port, file] => Plan::Capture { port: input::port_arg(port), file: file.into() },
            _ => bail!("capture: expected PORT FILE.pcap, got {} argument(s)", args.len()),
        },
        // Handled before connecting (`run`): it sends a signal, not a message.
        "reload" => bail!("reload: sent by signal, not as an OpenFlow message"),
        other => bail!("unknown command `{other}`; see `sluice ctl --help`"),
    })
}

/// At most this many rejected requests are printed one by one.
const MAX_ERRORS_SHOWN: usize = 20;

/// Send `items` pipelined, one barrier, and report every `OFPT_ERROR`.
fn modify(conn: &mut Conn, what: &str, items: &[Item]) -> Result<()> {
    let first = conn.send_batch(items.iter().map(|i| &i.msg))?;
    let errors = conn.barrier()?;
    report(conn, what, first, items, errors)
}

fn report(
    conn: &Conn,
    what: &str,
    first: u32,
    items: &[Item],
    errors: Vec<Received>,
) -> Result<()> {
    let label = |r: &Received| -> String {
        let i = r.header.xid.wrapping_sub(first) as usize;
        match items.get(i) {
            Some(item) => item.label.clone(),
            None => format!("a request with xid 0x{:x}", r.header.xid),
        }
    };
    let t = conn.target();
    match errors.len() {
        0 => Ok(()),
        1 => {
            let reply = errors.into_iter().next().ok_or_else(|| anyhow!("no error"))?;
            let context = format!("{t}: the switch rejected {}", label(&reply));
            Err(SwitchError { context, reply }.into())
        }
        n => {
            for r in errors.iter().take(MAX_ERRORS_SHOWN) {
                let names = r.error().map(error_names).unwrap_or_default();
                eprintln!("{}: {names}\n{}", label(r), r.print());
            }
            if n > MAX_ERRORS_SHOWN {
                eprintln!("... and {} more errors", n - MAX_ERRORS_SHOWN);
            }
            bail!("{t}: the switch rejected {n} of {} {what}s", items.len())
        }
    }
}

/// A port number for `p`, asking the switch for its port descriptions if
/// `p` is an interface name.
pub(crate) fn resolve_port(conn: &mut Conn, p: &PortArg) -> Result<u32> {
    match p {
        PortArg::No(n) => Ok(*n),
        PortArg::Name(name) => {
            let (_, reply) = conn.multipart(Req::PortDesc, "the port description request")?;
            if let MultipartReplyBody::PortDesc(ports) = reply.body {
                if let Some(port) = ports.iter().find(|d| d.name == *name) {
                    return Ok(port.port_no);
                }
            }
            bail!("{}: no port named `{name}`", conn.target())
        }
    }
}

/// Print one block of output. A closed stdout (`sluice ctl ... | head`)
/// ends the command quietly, as SIGPIPE ends ovs-ofctl.
fn emit(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => bail!("cannot write to standard output: {e}"),
    }
}

/// Port descriptions in port-number order (LOCAL last), as ovs-ofctl
/// shows them whatever order the switch sent.
fn sort_ports(reply: &mut MultipartReply) {
    if let MultipartReplyBody::PortDesc(list) = &mut reply.body {
        list.sort_by_key(|p| p.port_no);
    }
}

fn print_reply(xid: u32, reply: MultipartReply) -> Result<()> {
    emit(&print_message(xid, &Message::MultipartReply(reply)))
}

fn execute(
    conn: &mut Conn,
    plan: Plan,
    deadline: Option<Instant>,
    (count, seconds): (Option<u64>, Option<u32>),
) -> Result<()> {
    match plan {
        Plan::Show => {
            let f = conn.transact(&Message::FeaturesRequest, "the features request")?;
            emit(&f.print())?;
            let (xid, mut ports) = conn.multipart(Req::PortDesc, "the port description request")?;
            sort_ports(&mut ports);
            print_reply(xid, ports)?;
            let c = conn.transact(&Message::GetConfigRequest, "the config request")?;
            emit(&c.print())?;
        }
        Plan::Mods { what, items } => modify(conn, what, &items)?,
        Plan::Dump { body, what, only_group } => {
            let (xid, mut reply) = conn.multipart(body, what)?;
            if let (Some(g), MultipartReplyBody::GroupDesc(list)) = (only_group, &mut reply.body) {
                list.retain(|d| d.group_id == g);
            }
            // ovs-ofctl prints table features without a message header,
            // condensed across all parts of the reply.
            if let MultipartReplyBody::TableFeatures(tables) = &reply.body {
                let text = sluice_ofp::print::table_features::ofctl_dump(tables).map_err(|e| {
                    anyhow!(
                        "the switch's table features do not decode as ovs-ofctl reads them: {e}"
                    )
                })?;
                emit(&text)?;
            } else {
                print_reply(xid, reply)?;
            }
        }
        Plan::DumpPorts { port } => {
            let port_no = match &port {
                None => port_no::ANY,
                Some(p) => resolve_port(conn, p)?,
            };
            let (xid, reply) =
                conn.multipart(Req::PortStats { port_no }, "the port stats request")?;
            print_reply(xid, reply)?;
        }
        Plan::PortsDesc { port } => {
            let wanted = match &port {
                None => None,
                Some(p) => Some(resolve_port(conn, p)?),
            };
            let (xid, mut reply) = conn.multipart(Req::PortDesc, "the port description request")?;
            if let (Some(w), MultipartReplyBody::PortDesc(list)) = (wanted, &mut reply.body) {
                list.retain(|d| d.port_no == w);
            }
            sort_ports(&mut reply);
            print_reply(xid, reply)?;
        }
        Plan::PacketOut(p) => {
            let in_port = resolve_port(conn, &p.in_port)?;
            let msg = Message::PacketOut(PacketOut {
                buffer_id: sluice_ofp::consts::OFP_NO_BUFFER,
                in_port,
                actions: p.actions,
                data: p.data,
            });
            modify(conn, "packet-out", &one("packet-out".into(), msg))?;
        }
        Plan::GetConfig => {
            let c = conn.transact(&Message::GetConfigRequest, "the config request")?;
            emit(&c.print())?;
        }
        Plan::SetConfig { frags, miss_send_len } => {
            let mut cfg = current_config(conn)?;
            if let Some(f) = frags {
                cfg.flags = (cfg.flags & !3) | f;
            }
            if let Some(m) = miss_send_len {
                cfg.miss_send_len = m;
            }
            modify(conn, "set-config", &one("set-config".into(), Message::SetConfig(cfg)))?;
        }
        Plan::Monitor { miss_len } => {
            if let Some(len) = miss_len {
                let mut cfg = current_config(conn)?;
                cfg.miss_send_len = len;
                modify(conn, "set-config", &one("set-config".into(), Message::SetConfig(cfg)))?;
            }
            let mut seen = 0u64;
            while count.is_none_or(|c| seen < c) {
                match conn.recv_until(deadline)? {
                    Some(r) => {
                        emit(&r.print())?;
                        seen += 1;
                    }
                    None => break,
                }
            }
        }
        Plan::Barrier => {
            let r = conn.transact(&Message::BarrierRequest, "the barrier")?;
            emit(&r.print())?;
        }
        Plan::LoadFilterProg { items } => filterprog::load_exec(conn, &items)?,
        Plan::DumpMap(req) => filterprog::dump_exec(conn, &req)?,
        Plan::Capture { port, file } => capture::run(conn, &port, &file, count, seconds)?,
        Plan::Trace { mut req, port } => {
            if let (Some(p), TraceRequest::Frame { in_port, .. }) = (&port, &mut req) {
                *in_port = resolve_port(conn, p)?;
            }
            let r = conn.transact(&req.to_message(), "the trace")?;
            let text = match &r.msg {
                Ok(Message::Experimenter(e)) => sluice_ofp::tracemsg::parse_reply(e),
                _ => None,
            };
            match text {
                Some(Ok(t)) => emit(&t)?,
                Some(Err(e)) => bail!("{}: {e}", conn.target()),
                None => bail!("{} answered the trace with `{}`", conn.target(), r.print()),
            }
        }
    }
    Ok(())
}

fn current_config(conn: &mut Conn) -> Result<SwitchConfig> {
    let r = conn.transact(&Message::GetConfigRequest, "the config request")?;
    match r.msg {
        Ok(Message::GetConfigReply(c)) => Ok(c),
        _ => bail!("{}: unexpected reply to the config request:\n{}", conn.target(), r.print()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn plan(cmd: &str, args: &[String], strict: bool) -> Result<Plan> {
        super::plan(cmd, args, Flags { strict, delete: false })
    }

    #[test]
    fn plans_pick_the_right_messages() {
        let Plan::Mods { items, .. } = plan("del-flows", &[], false).unwrap() else { panic!() };
        let Message::FlowMod(f) = &items[0].msg else { panic!() };
        assert_eq!((f.command, f.table_id), (fc::DELETE, 0xff));
        assert!(f.r#match.oxms.is_empty());
        let Plan::Mods { items, .. } =
            plan("mod-flows", &s(&["in_port=1,actions=drop"]), true).unwrap()
        else {
            panic!()
        };
        let Message::FlowMod(f) = &items[0].msg else { panic!() };
        assert_eq!(f.command, fc::MODIFY_STRICT);
        let Plan::Dump { body: Req::Flow(r), .. } =
            plan("dump-flows", &s(&["table=3,in_port=2"]), false).unwrap()
        else {
            panic!()
        };
        assert_eq!(r.table_id, 3);
        assert_eq!(r.match_.oxms.len(), 1);
        let Plan::Dump { body: Req::Flow(r), .. } = plan("dump-flows", &[], false).unwrap() else {
            panic!()
        };
        assert_eq!((r.table_id, r.out_port), (0xff, port_no::ANY));
        let Plan::Dump { only_group, .. } = plan("dump-groups", &s(&["5"]), false).unwrap() else {
            panic!()
        };
        assert_eq!(only_group, Some(5));
        assert!(matches!(plan("del-meters", &[], false).unwrap(), Plan::Mods { .. }));
        assert!(matches!(
            plan("monitor", &s(&["128"]), false).unwrap(),
            Plan::Monitor { miss_len: Some(128) }
        ));
    }

    #[test]
    fn trace_plans_a_flow_or_a_frame() {
        let Plan::Trace { req, port: None } =
            plan("trace", &s(&["in_port=1", "tcp", "tp_dst=80"]), false).unwrap()
        else {
            panic!()
        };
        assert_eq!(req, TraceRequest::Flow("in_port=1,tcp,tp_dst=80".into()));
        let Plan::Trace { req, port: Some(PortArg::No(3)) } =
            trace_packet(&s(&["in_port=3"]), "0a0b").unwrap()
        else {
            panic!()
        };
        assert_eq!(req, TraceRequest::Frame { in_port: 0, frame: vec![10, 11] });
        assert!(trace_packet(&s(&["1"]), "zz").is_err());
        assert!(trace_packet(&s(&[]), "00").is_err());
        assert!(plan("trace", &[], false).is_err());
    }

    #[test]
    fn text_errors_come_before_any_connection() {
        let e = plan("add-flow", &s(&["in_port=1,frob=2,actions=drop"]), false)
            .err()
            .unwrap()
            .to_string();
        assert_eq!(
            e,
            "add-flow: unknown field `frob`\n  in_port=1,frob=2,actions=drop\n            ^^^^"
        );
        assert!(plan("add-flow", &[], false).is_err());
        assert!(plan("add-flow", &s(&["in_port=1"]), false).is_err());
        assert!(plan("dump-flows", &s(&["actions=drop"]), false).is_err());
        assert!(plan("frobnicate", &[], false).is_err());
        assert!(plan("show", &s(&["x"]), false).is_err());
    }

    #[test]
    fn filter_program_commands_plan_before_connecting() {
        let delete = Flags { strict: false, delete: true };
        let Plan::Mods { items, .. } =
            super::plan("update-map", &s(&["7", "m", "00000001"]), delete).unwrap()
        else {
            panic!()
        };
        assert_eq!(items.len(), 1);
        assert!(matches!(
            plan("update-map", &s(&["7", "m", "00000001", "05"]), false).unwrap(),
            Plan::Mods { what: "update-map", .. }
        ));
        assert!(matches!(
            plan("unload-filter-prog", &s(&["7"]), false).unwrap(),
            Plan::Mods { what: "unload-filter-prog", .. }
        ));
        let Plan::DumpMap(r) = plan("dump-map", &s(&["7", "budget"]), false).unwrap() else {
            panic!()
        };
        assert_eq!((r.prog_id, r.map.as_str()), (7, "budget"));
        let e = super::plan("dump-flows", &[], delete).err().unwrap().to_string();
        assert_eq!(e, "dump-flows: --delete applies only to update-map");
        let e = plan("unload-filter-prog", &s(&["0"]), false).err().unwrap().to_string();
        assert!(e.contains("`0` is reserved"), "{e}");
    }

    #[test]
    fn every_command_name_is_planned() {
        for name in COMMAND_NAMES {
            if let Err(e) = plan(name, &[], false) {
                assert!(!e.to_string().contains("unknown command"), "{name}: {e}");
            }
        }
    }

    #[test]
    fn words_find_the_target() {
        use std::os::unix::net::UnixListener;
        let dir = std::env::temp_dir().join(format!("sluice-ctl-words-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let br0 = dir.join("br0.mgmt");
        let _l = UnixListener::bind(&br0).unwrap();
        let split = |w: &[&str]| Words::split(&s(w), &dir);
        let w = |target: Option<Target>, command: &str, args: &[&str]| Words {
            target,
            command: command.into(),
            args: s(args),
        };
        let unix = Some(Target::Unix(br0.clone()));
        let tcp = Target::parse("tcp:127.0.0.1:6653").ok();
        assert_eq!(split(&["dump-flows"]).unwrap(), w(None, "dump-flows", &[]));
        assert_eq!(
            split(&["add-flow", "priority=1,actions=drop"]).unwrap(),
            w(None, "add-flow", &["priority=1,actions=drop"])
        );
        assert_eq!(split(&["br0", "dump-flows"]).unwrap(), w(unix.clone(), "dump-flows", &[]));
        assert_eq!(
            split(&["dump-flows", "br0", "table=1"]).unwrap(),
            w(unix, "dump-flows", &["table=1"])
        );
        assert_eq!(
            split(&["tcp:127.0.0.1", "dump-ports", "1"]).unwrap(),
            w(tcp.clone(), "dump-ports", &["1"])
        );
        assert_eq!(split(&["dump-tables", "tcp:127.0.0.1"]).unwrap(), w(tcp, "dump-tables", &[]));
        // A word after the command that names no socket is an argument.
        assert_eq!(split(&["dump-ports", "eth0"]).unwrap(), w(None, "dump-ports", &["eth0"]));
        let e = split(&["br1", "dump-flows"]).unwrap_err().to_string();
        assert!(e.contains("br1.mgmt") && e.contains("no switch of that name"), "{e}");
        let e = split(&["br0"]).unwrap_err().to_string();
        assert!(e.contains("missing COMMAND"), "{e}");
        let e = split(&["a/b", "show"]).unwrap_err().to_string();
        assert!(e.contains("neither a command nor a target"), "{e}");
        assert!(split(&["unix:", "show"]).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_only_socket_or_a_list() {
        use std::os::unix::net::UnixListener;
        let dir = std::env::temp_dir().join(format!("sluice-ctl-only-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let e = only_socket(&dir).unwrap_err().to_string();
        assert!(e.contains("no control socket") && e.contains("--rundir"), "{e}");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("notes.mgmt"), b"not a socket").unwrap();
        let _a = UnixListener::bind(dir.join("a.mgmt")).unwrap();
        let _o = UnixListener::bind(dir.join("other.sock")).unwrap();
        assert_eq!(only_socket(&dir).unwrap(), dir.join("a.mgmt"));
        let _b = UnixListener::bind(dir.join("b.mgmt")).unwrap();
        let e = only_socket(&dir).unwrap_err().to_string();
        assert!(
            e.contains("2 switches") && e.contains("a, b") && e.contains("sluice ctl a"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
