//! `sluice filter`: compile, dump and run pcap-filter expressions and
//! pfmatch programs over pcap files (library: `sluice-filter`).
//!
//! - `sluice filter EXPR --pcap FILE [--write OUT.pcap]`: the number of
//!   matching packets is printed alone on the last line.
//! - `--dump ast|ir|clif|asm` (repeatable) shows each compilation stage
//!   (`ir` is the optimised IR, `raw-ir` the unoptimised one).
//! - `sluice filter --match PROG --pcap FILE`: packets per handler; PROG is a
//!   file, or the program text itself.
//! - `sluice filter --bench [--pcap FILE]`: Mpps of sluice and of libpcap's
//!   `pcap_offline_filter` on the same in-memory capture (libpcap is linked
//!   through `sluice-filter`'s default `libpcap` feature).
//!
//! Compile errors point at the offending token with a caret.

use anyhow::{anyhow, bail, Result};
use sluice_filter::pfmatch::Dispatcher;
use sluice_filter::{bench, gen, pcapio, Filter, Options};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Prints to stdout, ignoring a closed pipe (`sluice filter ... | head`).
macro_rules! say {
    ($($t:tt)*) => {{
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}

/// Arguments of `sluice filter`.
#[derive(clap::Args)]
pub struct Args {
    /// The pcap-filter expression (tcpdump syntax).
    pub expr: Vec<String>,
    /// Capture to run over (Ethernet pcap).
    #[arg(long)]
    pub pcap: Option<PathBuf>,
    /// Save the matching packets to this pcap file.
    #[arg(long)]
    pub write: Option<PathBuf>,
    /// Show a stage: ast, raw-ir, ir, clif or asm (repeatable).
    #[arg(long)]
    pub dump: Vec<String>,
    /// Run a pfmatch program (file or program text) instead of a filter.
    #[arg(long = "match", value_name = "PROG")]
    pub match_prog: Option<String>,
    /// IPv4 netmask for `ip broadcast` (dotted quad).
    #[arg(long)]
    pub netmask: Option<String>,
    /// Benchmark sluice against libpcap.
    #[arg(long)]
    pub bench: bool,
    /// Seconds per filter and engine for --bench.
    #[arg(long, default_value_t = 0.5)]
    pub bench_secs: f64,
}

fn netmask(s: &Option<String>) -> Result<Options> {
    Ok(Options {
        netmask: match s {
            None => None,
            Some(s) => Some(u32::from(
                s.parse::<std::net::Ipv4Addr>().map_err(|e| anyhow!("--netmask {s}: {e}"))?,
            )),
        },
    })
}

pub fn run(a: Args) -> Result<()> {
    let opts = netmask(&a.netmask)?;
    if a.bench {
        return run_bench(&a);
    }
    if let Some(prog) = &a.match_prog {
        return run_match(&a, prog, opts);
    }
    let expr = a.expr.join(" ");
    let f = Filter::compile(&expr, opts).map_err(|e| anyhow!("{e}"))?;
    for d in &a.dump {
        match d.as_str() {
            "ast" => say!("{:#?}", f.ast),
            "raw-ir" => say!("{}", f.raw.dump().trim_end()),
            "ir" => say!("{}", f.ir.dump().trim_end()),
            "clif" => say!("{}", f.jit_text().map_or("(no native code)", |t| t.0)),
            "asm" => say!("{}", f.jit_text().map_or("(no native code)", |t| t.1)),
            other => bail!("--dump {other}: expected ast, raw-ir, ir, clif or asm"),
        }
    }
    let Some(pcap) = &a.pcap else {
        if a.dump.is_empty() {
            bail!("nothing to do: give --pcap FILE, --dump STAGE or --bench");
        }
        return Ok(());
    };
    let rep = pcapio::filter_pcap(&f, pcap, a.write.as_deref()).map_err(|e| anyhow!(e))?;
    say!("{} of {} packets match", rep.matched, rep.packets);
    say!("{}", rep.matched);
    Ok(())
}

fn run_match(a: &Args, prog: &str, opts: Options) -> Result<()> {
    let text = match std::fs::read_to_string(prog) {
        Ok(t) => t,
        Err(_) if prog.contains("match") => prog.to_string(),
        Err(e) => bail!("{prog}: {e}"),
    };
    let d = Dispatcher::compile(&text, opts).map_err(|e| anyhow!("{e}"))?;
    for s in &a.dump {
        match s.as_str() {
            "raw-ir" => say!("{}", d.raw.dump().trim_end()),
            "ir" => say!("{}", d.ir.dump().trim_end()),
            other => bail!("--dump {other} with --match: expected ir or raw-ir"),
        }
    }
    let Some(pcap) = &a.pcap else {
        bail!("--match needs --pcap FILE");
    };
    let rep = pcapio::dispatch_pcap(&d, pcap, |_, _| {}).map_err(|e| anyhow!(e))?;
    for (h, n) in d.handlers.iter().zip(&rep.per_handler) {
        say!("{n:>10}  {}  (line {})", h.display(), h.line);
    }
    say!("{:>10}  (no match)", rep.unmatched);
    Ok(())
}

fn run_bench(a: &Args) -> Result<()> {
    let pkts: Vec<(Vec<u8>, u32)> = match &a.pcap {
        Some(p) => pcapio::read_all(p, 1_000_000)
            .map_err(|e| anyhow!(e))?
            .into_iter()
            .map(|p| (p.data, p.wirelen))
            .collect(),
        None => gen::corpus_with(0xbe4c, 4096, false),
    };
    let filters = if a.expr.is_empty() { bench::default_filters() } else { vec![a.expr.join(" ")] };
    say!("{} packets in memory, {:.1} s per filter and engine", pkts.len(), a.bench_secs);
    let rows = bench::run(&filters, &pkts, Duration::from_secs_f64(a.bench_secs.max(0.01)))
        .map_err(|e| anyhow!(e))?;
    say!("{}", bench::table(&rows).trim_end());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_filter::pcapio::{read_all, write_all, Packet};

    #[test]
    fn filter_writes_matching_packets() {
        let dir = std::env::temp_dir().join(format!("sluice-cmd-filter-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("in.pcap");
        let pkts: Vec<Packet> = gen::corpus(3, 300)
            .into_iter()
            .map(|(data, wirelen)| Packet { ts: Duration::ZERO, wirelen, data })
            .collect();
        write_all(&input, &pkts).unwrap();
        let out = dir.join("out.pcap");
        let args = Args {
            expr: vec!["udp".into(), "or".into(), "arp".into()],
            pcap: Some(input.clone()),
            write: Some(out.clone()),
            dump: vec!["ir".into()],
            match_prog: None,
            netmask: None,
            bench: false,
            bench_secs: 0.1,
        };
        run(args).unwrap();
        let f = Filter::compile("udp or arp", Options::default()).unwrap();
        let want = pkts.iter().filter(|p| f.interp(&p.data, p.wirelen)).count();
        assert!(want > 0);
        assert_eq!(read_all(&out, usize::MAX).unwrap().len(), want);
        let bad = Args {
            expr: vec!["tcp".into(), "port".into(), "99999".into()],
            pcap: Some(input),
            write: None,
            dump: vec![],
            match_prog: None,
            netmask: None,
            bench: false,
            bench_secs: 0.1,
        };
        let e = run(bad).unwrap_err().to_string();
        assert!(e.contains("^"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
