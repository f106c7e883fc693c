//! Benchmark of sluice's compiled filters against libpcap's
//! `pcap_offline_filter`, the same as `sluice filter --bench`:
//! `cargo run --release -p sluice-filter --example filter_bench [SECS]`.

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let pkts = sluice_filter::gen::corpus_with(0xbe4c, 4096, false);
    println!("{} packets in memory, {secs:.1} s per filter and engine", pkts.len());
    match sluice_filter::bench::run(
        &sluice_filter::bench::default_filters(),
        &pkts,
        std::time::Duration::from_secs_f64(secs),
    ) {
        Ok(rows) => print!("{}", sluice_filter::bench::table(&rows)),
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(1);
        }
    }
}
