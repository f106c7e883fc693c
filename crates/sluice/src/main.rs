//! `sluice`: the switch and its tools, one binary with subcommands.
//!
//! Each subcommand lives in its own module under `cmd/` and owns its
//! argument struct; this file only dispatches.

use clap::{Parser, Subcommand};

mod cmd;

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
    /// Run the built-in demo (arrives with the switch daemon).
    Demo,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::OfpPrint(a) => cmd::ofp_print::run(a),
        Command::Demo => {
            println!("demo comes with the daemon issue: `sluice run` and `sluice demo` are not built yet");
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
