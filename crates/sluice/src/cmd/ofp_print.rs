//! `sluice ofp-print HEX...`: decode and print OpenFlow messages.

/// Arguments of `sluice ofp-print`.
#[derive(clap::Args)]
pub struct Args {
    /// One or more messages as hex (whitespace and `0x` prefixes allowed);
    /// several arguments are concatenated.
    #[arg(required = true)]
    pub hex: Vec<String>,
}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("ofp-print is not implemented yet")
}
