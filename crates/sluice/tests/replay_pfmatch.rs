//! `sluice replay --pfmatch`: a pfmatch program as the whole forwarding
//! table, replayed offline over a pcap.

use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Ethernet + IPv4 + `proto` header (8 bytes of ports/type + zeros).
fn ipv4(proto: u8, dport: u16) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x08, 0x00];
    let l4_len = if proto == 6 { 20 } else { 8 };
    let total = 20 + l4_len;
    f.extend_from_slice(&[
        0x45,
        0,
        0,
        total as u8,
        0,
        1,
        0,
        0,
        64,
        proto,
        0,
        0,
        10,
        0,
        0,
        1,
        10,
        0,
        0,
        2,
    ]);
    let mut l4 = vec![0u8; l4_len];
    l4[0..2].copy_from_slice(&1234u16.to_be_bytes());
    l4[2..4].copy_from_slice(&dport.to_be_bytes());
    if proto == 6 {
        l4[12] = 0x50;
    }
    f.extend_from_slice(&l4);
    f
}

fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut w = PcapWriter::new(std::fs::File::create(path).unwrap()).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write_packet(&PcapPacket::new(Duration::from_millis(i as u64), f.len() as u32, f))
            .unwrap();
    }
}

fn count(path: &Path) -> usize {
    let mut r = PcapReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut n = 0;
    while let Some(p) = r.next_packet() {
        p.unwrap();
        n += 1;
    }
    n
}

#[test]
fn pfmatch_program_forwards_floods_punts_and_drops() {
    let dir = std::env::temp_dir().join(format!("sluice-pfmatch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("in.pcap");
    // 2 web, 3 DNS, 1 ICMP, 1 other TCP.
    let frames = vec![
        ipv4(6, 80),
        ipv4(17, 53),
        ipv4(6, 80),
        ipv4(1, 0),
        ipv4(17, 53),
        ipv4(6, 22),
        ipv4(17, 53),
    ];
    write_pcap(&input, &frames);
    let prog = "match {\n  -- web to port 2\n  tcp dst port 80 => output(2)\n  udp => flood\n  icmp => controller\n  otherwise => drop\n}";
    let out = dir.join("out");
    let res = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["replay", "--pfmatch", prog, "--pcap"])
        .arg(&input)
        .args(["--in-port", "1", "--ports", "1,2,3", "--out-dir"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(res.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&res.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    // Flood goes to every port but the ingress one.
    assert_eq!(lines, ["controller: 1 packets", "port 2: 5 packets", "port 3: 3 packets"]);
    assert_eq!(count(&out.join("port-2.pcap")), 5);
    assert_eq!(count(&out.join("port-3.pcap")), 3);
    assert!(!out.join("port-1.pcap").exists());
    // A handler that is not a forwarding action is refused.
    let res = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["replay", "--pfmatch", "match { tcp => frobnicate(1) }", "--pcap"])
        .arg(&input)
        .args(["--in-port", "1", "--out-dir"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(!res.status.success());
    assert!(String::from_utf8_lossy(&res.stderr).contains("frobnicate"));
    std::fs::remove_dir_all(&dir).unwrap();
}
