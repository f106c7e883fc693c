//! The `sluice filter` and `sluice bpf` commands as a user runs them: the
//! binary, real captures, real peers. `sluice filter` must select exactly
//! the packets tcpdump (libpcap) selects with the same expression and print
//! their number alone on its last line; `sluice bpf` verifies, disassembles
//! and runs a clang-built program. Needs tcpdump and clang
//! (`scripts/install-deps`); fails loudly without them.

use std::path::{Path, PathBuf};
use std::process::Command;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every input capture of the replay scenarios (QinQ, MPLS, PBB, IPv6,
/// ARP, TCP/UDP/ICMP …).
fn captures() -> Vec<PathBuf> {
    let mut v = Vec::new();
    let root = repo().join("tests/trace");
    for d in std::fs::read_dir(&root).expect("tests/trace").flatten() {
        for f in std::fs::read_dir(d.path()).into_iter().flatten().flatten() {
            let p = f.path();
            if p.extension().is_some_and(|e| e == "pcap") {
                v.push(p);
            }
        }
    }
    v.sort();
    assert!(v.len() >= 8, "expected the replay captures, found {v:?}");
    v
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("sluice-cli-{}-{name}", std::process::id()))
}

/// The packets (raw records) of a pcap, as bytes.
fn packets(path: &Path) -> Vec<Vec<u8>> {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = pcap_file::pcap::PcapReader::new(f).expect("pcap header");
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        out.push(p.expect("pcap record").data.into_owned());
    }
    out
}

fn run(cmd: &mut Command) -> (bool, String, String) {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn filter_selects_what_tcpdump_selects() {
    let exprs = [
        "tcp",
        "udp",
        "ip6",
        "arp",
        "vlan",
        "vlan and ip",
        "mpls",
        "ip and not tcp",
        "ether broadcast",
        "ether multicast",
        "greater 100",
        "ip[8] < 64",
        "tcp[tcpflags] & tcp-syn != 0",
        "ether proto 0x88e7",
    ];
    let mut compared = 0;
    let mut selected = 0;
    for cap in captures() {
        for expr in exprs {
            let ours = temp("ours.pcap");
            let theirs = temp("theirs.pcap");
            let (ok, out, err) = run(Command::new(SLUICE)
                .args(["filter", expr, "--pcap"])
                .arg(&cap)
                .arg("--write")
                .arg(&ours));
            assert!(ok, "sluice filter {expr:?} {}: {err}", cap.display());
            let (ok, _, err) = run(Command::new("tcpdump")
                .args(["-nn", "-r"])
                .arg(&cap)
                .arg("-w")
                .arg(&theirs)
                .arg(expr));
            assert!(ok, "tcpdump {expr:?} {} (is tcpdump installed?): {err}", cap.display());
            let (a, b) = (packets(&ours), packets(&theirs));
            let last = out.lines().last().unwrap_or_default();
            assert_eq!(last, b.len().to_string(), "{expr:?} on {}: last line", cap.display());
            assert_eq!(a, b, "{expr:?} on {}: selected packets", cap.display());
            compared += 1;
            selected += b.len();
            let _ = std::fs::remove_file(&ours);
            let _ = std::fs::remove_file(&theirs);
        }
    }
    assert!(compared >= 100 && selected > 0, "{compared} runs, {selected} packets selected");
}

#[test]
fn filter_dumps_every_stage_and_names_the_bad_token() {
    for stage in ["ast", "raw-ir", "ir", "clif", "asm"] {
        let (ok, out, err) =
            run(Command::new(SLUICE).args(["filter", "--dump", stage, "tcp port 80"]));
        assert!(ok, "--dump {stage}: {err}");
        assert!(out.trim().len() > 10, "--dump {stage} printed too little: {out:?}");
    }
    let (ok, out, err) =
        run(Command::new(SLUICE).args(["filter", "tcp port 80 and", "--dump", "ast"]));
    assert!(!ok, "an incomplete expression must fail: {out}");
    assert!(err.contains('^'), "the error points at the place: {err}");
    let (ok, _, err) = run(Command::new(SLUICE).args(["filter", "tcp portt 80", "--dump", "ast"]));
    assert!(!ok && err.contains("portt"), "the error names the bad token: {err}");
}

#[test]
fn filter_match_counts_per_handler() {
    let cap = repo().join("tests/trace/l2_l3_pipeline/in.pcap");
    let total = packets(&cap).len();
    assert!(total > 0);
    let prog = "match { tcp => tcp_h() ; udp => udp_h() ; otherwise => rest() }";
    let (ok, out, err) =
        run(Command::new(SLUICE).args(["filter", "--match", prog, "--pcap"]).arg(&cap));
    assert!(ok, "{err}");
    // Every packet reaches exactly one handler: the counts add up.
    let counts: Vec<usize> = out
        .lines()
        .filter(|l| ["tcp_h", "udp_h", "rest"].iter().any(|h| l.contains(h)))
        .filter_map(|l| l.split_whitespace().find_map(|w| w.parse().ok()))
        .collect();
    assert_eq!(counts.len(), 3, "one line per handler: {out}");
    assert_eq!(counts.iter().sum::<usize>(), total, "{out}");
}

fn clang(name: &str) -> PathBuf {
    let out = temp(&format!("{name}.o"));
    let (ok, _, err) = run(Command::new("clang")
        .args(["-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c"])
        .arg(repo().join(format!("examples/bpf/{name}.c")))
        .arg("-o")
        .arg(&out));
    assert!(ok, "clang (scripts/install-deps installs it) on {name}: {err}");
    out
}

#[test]
fn bpf_verify_dump_and_run() {
    let obj = clang("tcp_firewall");
    let (ok, out, err) = run(Command::new(SLUICE).args(["bpf", "verify"]).arg(&obj));
    assert!(ok && out.contains("OK"), "verify: {out} {err}");
    let (ok, out, err) = run(Command::new(SLUICE).args(["bpf", "dump"]).arg(&obj));
    assert!(ok && out.contains("exit"), "dump: {out} {err}");
    // The interpreter and the JIT print the same verdicts and maps.
    let cap = repo().join("tests/trace/l2_l3_pipeline/in.pcap");
    let n = packets(&cap).len();
    let (ok, interp, err) =
        run(Command::new(SLUICE).args(["bpf", "run", "--pcap"]).arg(&cap).arg(&obj));
    assert!(ok, "run: {err}");
    let (ok, jit, err) =
        run(Command::new(SLUICE).args(["bpf", "run", "--jit", "--pcap"]).arg(&cap).arg(&obj));
    assert!(ok, "run --jit: {err}");
    assert_eq!(interp, jit);
    let verdicts = interp
        .lines()
        .filter(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() == 2 && w.iter().all(|x| x.parse::<u64>().is_ok())
        })
        .count();
    assert_eq!(verdicts, n, "one `INDEX RETURN` line per packet: {interp}");
    // The benchmark checks the interpreter against the JIT before timing,
    // for every example (the rate limiter reads the clock, Dapper and the
    // firewall write hash maps, p0f an array).
    for name in ["tcp_firewall", "rate_limiter", "p0f_syn", "dapper"] {
        let o = clang(name);
        let (ok, out, err) = run(Command::new(SLUICE)
            .args(["bpf", "bench", "--rounds", "2", "--pcap"])
            .arg(&cap)
            .arg(&o));
        assert!(ok && out.contains("agree on every return value"), "bench {name}: {out} {err}");
        // Faults are counted and reported (none for these verified programs).
        assert!(
            out.contains("interpreter faults: 0") && out.contains("jit faults: 0"),
            "bench {name} reports its faults: {out}"
        );
        let _ = std::fs::remove_file(o);
    }
    // A program that reads the packet without a bounds check is refused
    // with the instruction and the reason.
    let bad = temp("bad.c");
    std::fs::write(
        &bad,
        "__attribute__((section(\"xdp\"), used)) int f(unsigned char *ctx) {\n\
         unsigned char *d = (unsigned char *)(long)*(unsigned int *)ctx;\n\
         return d[20];\n}\n",
    )
    .unwrap();
    let bad_o = temp("bad.o");
    let (ok, _, err) = run(Command::new("clang")
        .args(["-O2", "-target", "bpf", "-c"])
        .arg(&bad)
        .arg("-o")
        .arg(&bad_o));
    assert!(ok, "clang: {err}");
    let (ok, out, err) = run(Command::new(SLUICE).args(["bpf", "verify"]).arg(&bad_o));
    assert!(!ok, "an unchecked packet read must be refused: {out}");
    let msg = format!("{out}{err}");
    assert!(msg.contains("insn") || msg.contains("instruction"), "names the instruction: {msg}");
    for p in [obj, bad, bad_o] {
        let _ = std::fs::remove_file(p);
    }
}
