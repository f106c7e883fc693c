//! Packets per second through a veth pair with two sluice ports: one thread
//! transmits bursts of 32 frames on end A as fast as the port accepts them, another
//! receives on end B. Prints tx and rx rates (and the kernel's RX drops). Not a
//! test: numbers depend on the machine. Needs root.
//!
//! ```text
//! cargo run --release -p sluice-ports --example afpacket_rate -- [SECONDS] [FRAME_LEN] [KIND]
//! ```
//!
//! KIND is `afpacket` (default) or, when built with `--features afxdp`, `afxdp`
//! (copy mode on both ends).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_ports::testutil::{self, test_frame, NetNs, Veth};
use sluice_ports::{open, PortSpec, RxBuf, BURST};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let secs: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let len: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(64);
    let kind = args.next().unwrap_or_else(|| "afpacket".to_string());
    let opts = if kind == "afxdp" { ",mode=copy" } else { "" };
    if !testutil::is_root() {
        eprintln!("afpacket_rate needs root (network namespaces)");
        std::process::exit(2);
    }
    let a = NetNs::new("ra")?;
    let b = NetNs::new("rb")?;
    let veth = Veth::new(&a, &b)?;
    let (na, nb) = (veth.a.clone(), veth.b.clone());
    let spec_a = PortSpec::parse(&format!("{kind}:{na}{opts}"))?;
    let spec_b = PortSpec::parse(&format!("{kind}:{nb}{opts}"))?;
    let mut tx = a.enter(move || open(&spec_a))?;
    let mut rx = b.enter(move || open(&spec_b))?;

    let stop = Arc::new(AtomicBool::new(false));
    let stop_rx = stop.clone();
    let rx_thread = std::thread::spawn(move || {
        let mut bufs = RxBuf::burst(BURST);
        let mut n: u64 = 0;
        let start = Instant::now();
        let mut last = start;
        while !stop_rx.load(Ordering::Relaxed) {
            match rx.rx_burst(&mut bufs) {
                Ok(0) => {
                    let fd = rx.raw_fd().unwrap_or(-1);
                    let _ = testutil::wait_readable(fd, Duration::from_millis(1));
                }
                Ok(k) => {
                    n += k as u64;
                    last = Instant::now();
                }
                Err(e) => {
                    eprintln!("rx error: {e}");
                    break;
                }
            }
        }
        (n, last.duration_since(start), rx.stats())
    });

    let frame = test_frame([0x02, 0, 0, 0, 0, 2], [0x02, 0, 0, 0, 0, 1], 0, len);
    let burst: Vec<&[u8]> = (0..BURST).map(|_| frame.as_slice()).collect();
    let start = Instant::now();
    let until = Duration::from_secs_f64(secs);
    let mut sent: u64 = 0;
    let mut full: u64 = 0;
    while start.elapsed() < until {
        match tx.tx_burst(&burst) {
            Ok(k) => {
                sent += k as u64;
                if k < BURST {
                    full += 1;
                    std::thread::yield_now();
                }
            }
            Err(e) => {
                eprintln!("tx error: {e}");
                break;
            }
        }
    }
    let tx_time = start.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let (received, rx_time, rx_stats) = rx_thread.join().expect("rx thread");
    let rx_time = rx_time.as_secs_f64().max(1e-9);
    println!("port kind         {kind}");
    println!("frame length      {len} bytes, burst {BURST}, {secs} s");
    println!(
        "tx                {sent} frames, {:.0} pps (ring full {full} times)",
        sent as f64 / tx_time
    );
    println!("rx                {received} frames, {:.0} pps", received as f64 / rx_time);
    println!("rx kernel drops   {}", rx_stats.rx_dropped);
    println!("delivered         {:.1} %", 100.0 * received as f64 / sent.max(1) as f64);
    drop(veth);
    Ok(())
}
