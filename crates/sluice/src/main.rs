//! `sluice`: the switch and its tools, one binary with subcommands.
//!
//! Each subcommand lives in its own module under `cmd/` and owns its
//! argument struct; this file only dispatches.

use clap::{CommandFactory, Parser, Subcommand};

mod cmd;
mod flowfile;
use sluice_datapath::flowpacket;

#[derive(Parser)]
#[command(name = "sluice", version, about = "A programmable OpenFlow 1.3 software switch")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

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
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sluice: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
