//! `sluice`: the switch and its tools, one binary with subcommands.
//!
//! Each subcommand lives in its own module under `cmd/` and owns its
//! argument struct; this file only dispatches.

use clap::{CommandFactory, Parser, Subcommand};

mod cmd;
mod flowfile;
use sluice_datapath::flowpacket;

/// mimalloc, not glibc's malloc: with 100 000 P4 entries installed, glibc's
/// consolidation took a quarter of a cache miss (ARCHITECTURE.md,
/// Dependencies).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "sluice",
    version,
    about = "A programmable OpenFlow 1.3 software switch",
    after_long_help = FILES_AND_ENVIRONMENT
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The end of `sluice --help` and of sluice(1): where things live.
const FILES_AND_ENVIRONMENT: &str = "\
Files:
  /etc/sluice/sluice.toml   configuration of the packaged service
                            (sluice.service runs `sluice run --config` on it)
  /run/sluice/NAME.mgmt     a running switch's control socket (`sluice ctl`)

Environment:
  SLUICE_RUNDIR   directory of control sockets instead of /run/sluice
  RUST_LOG        log filter of `sluice run`, e.g. `debug` (default: info)

Each command has a man page, sluice-run(1), sluice-ctl(1), ..., with the\ntext of its `--help`.";

#[derive(Subcommand)]
enum Command {
    /// Decode OpenFlow messages given as hex and print them (like `ovs-ofctl ofp-print`).
    OfpPrint(cmd::ofp_print::Args),
    /// Push a pcap through a pipeline built from flow files; write one pcap per output.
    Replay(cmd::replay::Args),
    /// Explain what happens to one packet, table by table (like ofproto/trace).
    Trace(cmd::trace::Args),
    /// Verify, disassemble, run and benchmark eBPF filter programs.
    Bpf(cmd::bpf::Args),
    /// Compile, dump and run pcap-filter expressions and pfmatch programs.
    Filter(cmd::filter::Args),
    /// Talk to a running switch in ovs-ofctl's words: flows, groups, meters, stats, monitor.
    Ctl(cmd::ctl::Args),
    /// Run the switch daemon: ports, workers, OpenFlow listener and controllers.
    Run(cmd::run::Args),
    /// Live terminal view of a running switch, read from its metrics endpoint (`run --metrics`).
    Top(cmd::top::Args),
    /// Hosts in network namespaces around a sluice switch, real traffic, live counters (root).
    Demo(cmd::demo::Args),
    /// Forwarding rate of the pipeline on one thread, packets from memory (no I/O).
    Bench(cmd::bench::Args),
    /// P4-16 programs (v1model): check, print P4Info, run p4c STF tests, run an STF suite.
    P4(cmd::p4::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    ///
    /// bash: `sluice completions bash > /etc/bash_completion.d/sluice`;
    /// zsh: into a directory on `$fpath` as `_sluice`; fish:
    /// `~/.config/fish/completions/sluice.fish`.
    Completions {
        /// The shell to write the script for.
        shell: clap_complete::Shell,
    },
    /// Write man pages (roff) for sluice and every subcommand into DIR.
    ///
    /// One page per command: sluice.1, sluice-run.1, sluice-ctl-dump-flows.1
    /// and so on, rendered from the same definitions as `--help`. Used by
    /// scripts/build-deb; hidden from the help.
    #[command(hide = true)]
    Man {
        /// Directory to write the pages into (created if missing).
        dir: std::path::PathBuf,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::OfpPrint(a) => cmd::ofp_print::run(a),
        Command::Replay(a) => cmd::replay::run(a),
        Command::Trace(a) => cmd::trace::run(a),
        Command::Bpf(a) => cmd::bpf::run(a),
        Command::Filter(a) => cmd::filter::run(a),
        Command::Ctl(a) => cmd::ctl::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Top(a) => cmd::top::run(a),
        Command::Demo(a) => cmd::demo::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::P4(a) => cmd::p4::run(a),
        Command::Completions { shell } => {
            // Generated from the argument definitions, so it can never
            // disagree with what the binary accepts.
            clap_complete::generate(shell, &mut Cli::command(), "sluice", &mut std::io::stdout());
            Ok(())
        }
        Command::Man { dir } => cmd::man::write_pages(Cli::command(), &dir),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sluice: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// Every visible (sub)command, with its path (`sluice p4 check`).
    fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
        out.push((path.to_string(), cmd.clone()));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    fn all_commands() -> Vec<(String, clap::Command)> {
        // The `help` subcommands clap adds are not pages of their own.
        let mut cmd = Cli::command().disable_help_subcommand(true);
        cmd.build();
        let mut out = Vec::new();
        walk(&cmd, "sluice", &mut out);
        out
    }

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// `--help` is the man page: every command says what it is for and
    /// every argument what it does.
    #[test]
    fn every_command_has_an_about_and_every_arg_a_help() {
        let mut missing = Vec::new();
        let commands = all_commands();
        assert!(commands.len() > 20, "only {} commands found", commands.len());
        for (path, cmd) in &commands {
            if cmd.get_about().is_none_or(|a| a.to_string().trim().is_empty()) {
                missing.push(format!("{path}: no about text"));
            }
            for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
                if arg.get_help().is_none_or(|h| h.to_string().trim().is_empty()) {
                    missing.push(format!("{path}: argument '{}' has no help text", arg.get_id()));
                }
            }
        }
        assert!(missing.is_empty(), "{}", missing.join("\n"));
    }

    /// `sluice man DIR` writes one page per visible command, named after
    /// its path, each with the command's own options.
    #[test]
    fn man_pages_cover_every_command() {
        let dir = std::env::temp_dir().join(format!("sluice-man-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        crate::cmd::man::write_pages(Cli::command(), &dir).expect("write pages");
        let mut written: Vec<String> = std::fs::read_dir(&dir)
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        written.sort();
        let mut expected: Vec<String> = all_commands()
            .iter()
            .map(|(path, _)| format!("{}.1", path.replace(' ', "-")))
            .collect();
        expected.sort();
        assert_eq!(written, expected);
        let run = std::fs::read_to_string(dir.join("sluice-run.1")).expect("sluice-run.1");
        assert!(run.contains("\n.TH sluice-run 1 "), "{}", &run[..run.len().min(200)]);
        assert!(run.contains("\\-\\-workers"), "no --workers in sluice-run.1");
        // The ctl command list keeps its columns (no-fill NOTES section).
        let ctl = std::fs::read_to_string(dir.join("sluice-ctl.1")).expect("sluice-ctl.1");
        let notes = ctl.find(".SH NOTES\n.nf\n").expect("NOTES section without filling");
        assert!(ctl[notes..].contains("dump-flows [FLOW]"), "ctl commands missing from NOTES");
        assert!(!ctl.contains(".SH EXTRA"), "clap_mangen's reflowed EXTRA section is back");
        let top = std::fs::read_to_string(dir.join("sluice.1")).expect("sluice.1");
        assert!(top.contains("/etc/sluice/sluice.toml"), "sluice.1 lacks its FILES notes");
        assert!(top.contains("\\fBsluice\\-run\\fR(1)"), "sluice.1 lacks SEE ALSO sluice-run(1)");
        std::fs::remove_dir_all(&dir).expect("remove temp dir");
    }
}
