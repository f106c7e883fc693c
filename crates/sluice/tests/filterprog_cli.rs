//! `sluice trace` and `sluice replay` with filter programs
//! (`--filter-prog ID=FILE.o`): the trace shows each program run, its
//! return value and its map writes; a replay keeps the programs' state
//! from packet to packet (the stateful firewall lets a reply through only
//! after the connection was opened from inside). The program is
//! `examples/bpf/tcp_firewall.c`, compiled with clang (the test fails
//! without it: `scripts/install-deps` installs it).

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-fpcli-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn firewall(dir: &Path) -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bpf");
    let out = dir.join("fw.o");
    let st = Command::new("clang")
        .args(["-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu"])
        .arg(format!("-I{}", repo.display()))
        .arg("-c")
        .arg(repo.join("tcp_firewall.c"))
        .arg("-o")
        .arg(&out)
        .status();
    match st {
        Ok(s) if s.success() => out,
        Ok(s) => panic!("clang failed: {s}"),
        Err(e) => panic!("clang not available (scripts/install-deps installs it): {e}"),
    }
}

fn tcp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, flags: u8) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0, 0, 40, 0, 1, 0, 0, 64, 6, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0x20, 0, 0, 0, 0, 0]);
    f
}

const INSIDE: [u8; 4] = [10, 0, 0, 1];
const OUTSIDE: [u8; 4] = [192, 0, 2, 9];

/// Inside → outside through the firewall to port 2; everything else of
/// TCP that the firewall passes back to port 1; the rest dropped.
const FLOWS: &str = "\
priority=30,in_port=1,tcp,filter_prog=1,actions=output:2
priority=30,in_port=2,tcp,filter_prog=1,actions=output:1
priority=1,actions=drop
";

fn sluice(args: &[&str]) -> Output {
    Command::new(SLUICE).args(args).output().expect("run sluice")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn trace_shows_the_program_run_and_its_map_writes() {
    let dir = temp_dir("trace");
    let fw = firewall(&dir);
    let flows = dir.join("flows.txt");
    std::fs::write(&flows, FLOWS).unwrap();
    let prog = format!("1={}", fw.display());
    let syn = hex(&tcp(INSIDE, OUTSIDE, 1234, 80, 0x02));
    let f = flows.to_str().unwrap();
    let o = sluice(&[
        "trace",
        "--flows",
        f,
        "--in-port",
        "1",
        "--packet",
        &syn,
        "--filter-prog",
        &prog,
    ]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("filter_prog=1 (xdp): match"), "{out}");
    assert!(out.contains("returned 1"), "{out}");
    // The connection the SYN opened: key = saddr daddr sport dport proto.
    assert!(out.contains("map conns: add key=0a000001c000020904d2005006000000"), "{out}");
    // The outputs, then the megaflow and cache lines every trace ends with.
    assert!(out.contains("\noutputs: 2\nMegaflow: "), "{out}");
    // From outside, unsolicited: the program says no and the packet drops.
    let ack = hex(&tcp(OUTSIDE, INSIDE, 80, 1234, 0x10));
    let o = sluice(&[
        "trace",
        "--flows",
        f,
        "--in-port",
        "2",
        "--packet",
        &ack,
        "--filter-prog",
        &prog,
    ]);
    let out = text(&o);
    assert!(out.contains("filter_prog=1 (xdp): no match") && out.contains("returned 0"), "{out}");
    assert!(out.contains("\noutputs: drop\nMegaflow: "), "{out}");
    // Flows naming a program that is not loaded, a bad id, a missing file.
    let o = sluice(&["trace", "--flows", f, "--in-port", "1", "--packet", &syn]);
    assert!(!o.status.success());
    assert!(text(&o).contains("flows.txt:1: flow rejected: SLICFPC_UNKNOWN_PROG"), "{}", text(&o));
    let o = sluice(&[
        "trace",
        "--flows",
        f,
        "--in-port",
        "1",
        "--packet",
        &syn,
        "--filter-prog",
        "0=x.o",
    ]);
    assert!(!o.status.success() && text(&o).contains("reserved"), "{}", text(&o));
    let o = sluice(&[
        "trace",
        "--flows",
        f,
        "--in-port",
        "1",
        "--packet",
        &syn,
        "--filter-prog",
        "1=/nonexistent.o",
    ]);
    assert!(!o.status.success() && text(&o).contains("/nonexistent.o"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes `frames` as a capture, a millisecond apart.
fn write_pcap(path: &Path, frames: &[&[u8]]) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = PcapWriter::with_header(file, PcapHeader::default()).unwrap();
    for (i, f) in frames.iter().enumerate() {
        let ts = Duration::from_millis(i as u64);
        w.write_packet(&PcapPacket::new(ts, f.len() as u32, f)).unwrap();
    }
}

/// `sluice replay` of `pcap` on `in_port` through `flows` with the
/// firewall as program 1; what went out of `port`.
fn replay(dir: &Path, flows: &str, pcap: &Path, in_port: &str, port: u32) -> Vec<Vec<u8>> {
    let (f, out) = (dir.join("flows.txt"), dir.join("out"));
    std::fs::write(&f, flows).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    let prog = format!("1={}", dir.join("fw.o").display());
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let o = sluice(&[
        "replay",
        "--flows",
        &path(&f),
        "--pcap",
        &path(pcap),
        "--in-port",
        in_port,
        "--out-dir",
        &path(&out),
        "--filter-prog",
        &prog,
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let file = out.join(format!("port-{port}.pcap"));
    if file.exists() {
        frames_in(&file)
    } else {
        Vec::new()
    }
}

#[test]
fn replay_keeps_program_state_from_packet_to_packet() {
    let dir = temp_dir("replay");
    firewall(&dir);
    let reply = tcp(OUTSIDE, INSIDE, 80, 1234, 0x12);
    let (syn, ack) = (tcp(INSIDE, OUTSIDE, 1234, 80, 0x02), tcp(INSIDE, OUTSIDE, 1234, 80, 0x10));
    // Outside's replies alone: the firewall has seen no SYN, both drop.
    let outside = dir.join("outside.pcap");
    write_pcap(&outside, &[&reply, &reply]);
    assert!(replay(&dir, FLOWS, &outside, "2", 1).is_empty());
    // A reply before the connection exists (dropped), inside's SYN, the
    // same reply (passes: the SYN's state is kept) and inside's ACK, all
    // in one capture through a flow set without in_port.
    let both = dir.join("both.pcap");
    write_pcap(&both, &[&reply, &syn, &reply, &ack]);
    let flows = "priority=30,tcp,filter_prog=1,actions=output:2\npriority=1,actions=drop\n";
    assert_eq!(replay(&dir, flows, &both, "1", 2), [syn, reply, ack]);
    let _ = std::fs::remove_dir_all(&dir);
}

fn frames_in(path: &Path) -> Vec<Vec<u8>> {
    let mut r = PcapReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut v = Vec::new();
    while let Some(p) = r.next_packet() {
        v.push(p.unwrap().data.into_owned());
    }
    v
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
