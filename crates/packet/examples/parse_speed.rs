//! Rough parser throughput on a few literal packets (not a benchmark
//! harness: one machine, one run; use it to spot regressions).
//! `cargo run --release -p sluice-packet --example parse_speed`

use sluice_packet::{parse, FlowKey, Meta};
use std::time::Instant;

fn main() {
    // eth / IPv4 / UDP (42 bytes + pad) and eth / VLAN / IPv6 / TCP
    let mut v4 = vec![
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00, 0x45, 0x00, 0x00, 0x1c, 0, 0, 0, 0, 64,
        17, 0x66, 0xcf, 10, 0, 0, 1, 10, 0, 0, 2, 0, 53, 0x14, 0xe9, 0, 8, 0, 0,
    ];
    v4.resize(60, 0);
    let mut v6 = vec![0u8; 14 + 4 + 40 + 20];
    v6[12..14].copy_from_slice(&[0x81, 0x00]);
    v6[14..18].copy_from_slice(&[0x00, 0x64, 0x86, 0xdd]);
    v6[18] = 0x60;
    v6[18 + 4..18 + 6].copy_from_slice(&20u16.to_be_bytes());
    v6[18 + 6] = 6;
    v6[18 + 40 + 12] = 0x50;
    let meta = Meta::default();
    for (name, p) in [("ipv4/udp", &v4), ("vlan/ipv6/tcp", &v6)] {
        let mut k = FlowKey::ZERO;
        let n: u64 = std::env::var("N").ok().and_then(|s| s.parse().ok()).unwrap_or(20_000_000);
        let t = Instant::now();
        let mut acc = 0u64;
        for i in 0..n {
            let info = parse(std::hint::black_box(p), &meta, &mut k);
            acc = acc.wrapping_add(k.words[(i % 8) as usize]).wrapping_add(u64::from(info.len));
        }
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        println!("{name}: {ns:.1} ns/packet ({:.1} Mpps on one core) [{acc}]", 1e3 / ns);
    }
}
