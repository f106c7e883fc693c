//! `sluice run --metrics ADDR:PORT` and `--log-format json`, with the real
//! daemon.
//!
//! The metrics test puts the switch's two AF_PACKET ports in a namespace of
//! its own, joined by veths to two host namespaces (every name starts with
//! `met`; namespaces and veths go away in `Drop` guards, the switch is
//! killed by its PID), sends frames from one host, and scrapes the endpoint
//! over loopback with a plain TCP client before and after. A parser of the
//! text exposition format (0.0.4) written here checks every line of the
//! answer: a comment, `# HELP`/`# TYPE`, or `name{labels} value`; every
//! sample's family has a TYPE before it; no series twice. Then the port,
//! worker and datapath counters must have risen by at least the frames
//! sent.
//!
//! The log test runs the switch on pcap ports (no root) with
//! `--log-format json` and parses every stderr line as a JSON object.
//!
//! The capture test runs `sluice ctl --rundir DIR NAME capture 1 FILE`
//! through the switch's local control socket while a host sends frames,
//! once bounded by `--count` and once by `--seconds`, and reads the pcap
//! back with `pcap-file` and `tcpdump -r`: it holds exactly the frames sent.

mod netlab;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use netlab::{free_port, need_root_and, Proc, Scratch};
use sluice_datapath::ports::testutil::{test_frame, test_frame_seq, unique_name, NetNs, RawSocket};

/// One sample: metric name, labels, value.
#[derive(Debug, Clone)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

fn is_metric_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == ':')
}

fn is_label_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

fn parse_value(s: &str) -> Result<f64, String> {
    match s {
        "NaN" => Ok(f64::NAN),
        "+Inf" | "Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        _ => s.parse::<f64>().map_err(|e| format!("value {s:?}: {e}")),
    }
}

/// Parses `{k="v",...}` at the start of `s`; returns the labels and the rest.
fn parse_labels(s: &str) -> Result<(BTreeMap<String, String>, &str), String> {
    let mut labels = BTreeMap::new();
    let mut rest = s.strip_prefix('{').ok_or("no {")?;
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix('}') {
            return Ok((labels, r));
        }
        let eq = rest.find('=').ok_or_else(|| format!("label without '=' in {s:?}"))?;
        let name = rest[..eq].trim();
        if !is_label_name(name) {
            return Err(format!("bad label name {name:?}"));
        }
        rest = rest[eq + 1..].strip_prefix('"').ok_or_else(|| format!("label {name} unquoted"))?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next() {
                None => return Err(format!("label {name}: unterminated value")),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    other => return Err(format!("label {name}: bad escape {other:?}")),
                },
                Some((_, '\n')) => return Err(format!("label {name}: raw newline")),
                Some((_, c)) => value.push(c),
            }
        };
        if labels.insert(name.to_string(), value).is_some() {
            return Err(format!("label {name} twice"));
        }
        rest = &rest[end + 1..];
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
        } else if !rest.starts_with('}') {
            return Err(format!("expected ',' or '}}' after label {name} in {s:?}"));
        }
    }
}

/// Checks a whole answer against the text format and returns its samples.
fn parse_exposition(text: &str) -> Result<Vec<Sample>, String> {
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut helps: BTreeSet<String> = BTreeSet::new();
    let mut seen_samples: BTreeSet<String> = BTreeSet::new();
    let mut series: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    if !text.ends_with('\n') {
        return Err("does not end with a newline".into());
    }
    for (n, line) in text.lines().enumerate() {
        let at = |e: String| format!("line {}: {e}: {line:?}", n + 1);
        if line.trim().is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix('#') {
            let words: Vec<&str> = c.trim_start().splitn(3, ' ').collect();
            match words.first() {
                Some(&"HELP") => {
                    let name = words.get(1).ok_or_else(|| at("HELP without a name".into()))?;
                    if !is_metric_name(name) || !helps.insert(name.to_string()) {
                        return Err(at(format!("bad or repeated HELP for {name}")));
                    }
                }
                Some(&"TYPE") => {
                    let name = words.get(1).ok_or_else(|| at("TYPE without a name".into()))?;
                    let t = words.get(2).map(|t| t.trim()).unwrap_or("");
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&t) {
                        return Err(at(format!("unknown type {t:?}")));
                    }
                    if seen_samples.contains(*name) {
                        return Err(at(format!("TYPE for {name} after its samples")));
                    }
                    if types.insert(name.to_string(), t.to_string()).is_some() {
                        return Err(at(format!("second TYPE for {name}")));
                    }
                }
                _ => {} // a plain comment
            }
            continue;
        }
        let name_end = line.find(['{', ' ']).ok_or_else(|| at("no value".into()))?;
        let name = &line[..name_end];
        if !is_metric_name(name) {
            return Err(at(format!("bad metric name {name:?}")));
        }
        let (labels, rest) = if line[name_end..].starts_with('{') {
            parse_labels(&line[name_end..]).map_err(at)?
        } else {
            (BTreeMap::new(), &line[name_end..])
        };
        let mut fields = rest.split_whitespace();
        let value = parse_value(fields.next().ok_or_else(|| at("no value".into()))?).map_err(at)?;
        if let Some(ts) = fields.next() {
            ts.parse::<i64>().map_err(|e| at(format!("timestamp: {e}")))?;
        }
        if fields.next().is_some() {
            return Err(at("trailing text".into()));
        }
        let family = ["_sum", "_count", "_bucket"]
            .iter()
            .filter_map(|s| name.strip_suffix(s))
            .find(|f| matches!(types.get(*f).map(String::as_str), Some("histogram" | "summary")))
            .unwrap_or(name);
        let t = types.get(family).ok_or_else(|| at(format!("sample of {family} has no TYPE")))?;
        if t == "counter" && (value.is_nan() || value < 0.0) {
            return Err(at(format!("counter {name} is {value}")));
        }
        seen_samples.insert(family.to_string());
        if !series.insert(format!("{name}{labels:?}")) {
            return Err(at("the same series twice".into()));
        }
        out.push(Sample { name: name.to_string(), labels, value });
    }
    Ok(out)
}

/// `GET /metrics` over a plain TCP connection; checks the status line and
/// headers and returns the body.
fn scrape(port: u16) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the metrics endpoint");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read the answer");
    let raw = String::from_utf8(raw).expect("the answer is UTF-8");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head and a body");
    let mut lines = head.lines();
    assert_eq!(lines.next(), Some("HTTP/1.1 200 OK"), "{head}");
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let ct = headers.get("content-type").map(String::as_str).unwrap_or("");
    assert!(ct.starts_with("text/plain") && ct.contains("version=0.0.4"), "content type {ct:?}");
    assert_eq!(headers.get("content-length"), Some(&body.len().to_string()), "{head}");
    body.to_string()
}

fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.name == name)
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v)))
        .collect();
    assert!(!found.is_empty(), "no sample {name}{labels:?}");
    found.iter().map(|s| s.value).sum()
}

/// Two host namespaces joined to a switch namespace by veths (names start
/// with `met`); dropping it deletes the namespaces and with them the veths.
struct MetLab {
    sw: NetNs,
    hosts: Vec<NetNs>,
    sw_if: Vec<String>,
    host_if: Vec<String>,
}

impl MetLab {
    fn new() -> MetLab {
        let sw = NetNs::new("met").expect("switch namespace");
        let mut lab = MetLab { sw, hosts: Vec::new(), sw_if: Vec::new(), host_if: Vec::new() };
        for _ in 0..2 {
            let h = NetNs::new("met").expect("host namespace");
            let (s_if, h_if) = (unique_name("mets"), unique_name("meth"));
            lab.sw
                .exec(&["ip", "link", "add", &s_if, "type", "veth", "peer", "name", &h_if])
                .expect("veth");
            lab.sw.exec(&["ip", "link", "set", &h_if, "netns", h.name()]).expect("veth to host");
            lab.sw.exec(&["ip", "link", "set", &s_if, "up"]).expect("switch end up");
            h.exec(&["ip", "link", "set", &h_if, "up"]).expect("host end up");
            lab.hosts.push(h);
            lab.sw_if.push(s_if);
            lab.host_if.push(h_if);
        }
        lab
    }
}

const FRAMES: u32 = 300;
const LEN: usize = 200;

#[test]
fn metrics_endpoint_exports_counters_that_rise_with_traffic() {
    need_root_and(&["ip"]);
    let lab = MetLab::new();
    let dir = Scratch::new("metrics");
    let port = free_port();
    let dead_controller = format!("tcp:127.0.0.1:{}", free_port());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    cmd.args(["run", "--no-control-socket", "--workers", "1", "--fail-mode", "standalone"])
        .args(["--netns", lab.sw.name()])
        .args(["--port", &format!("afpacket:{}=1", lab.sw_if[0])])
        .args(["--port", &format!("afpacket:{}=2", lab.sw_if[1])])
        .args(["--controller", &dead_controller])
        .args(["--metrics", &format!("127.0.0.1:{port}")])
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1");
    let mut sw = Proc::spawn("sluice run", &mut cmd, dir.path("sluice.log"));
    sw.wait_listening(port);

    let before = parse_exposition(&scrape(port)).unwrap_or_else(|e| panic!("first scrape: {e}"));
    for fam in [
        "sluice_port_rx_packets_total",
        "sluice_table_lookups_total",
        "sluice_cache_lookups_total",
        "sluice_worker_busy_seconds_total",
        "sluice_upcall_queue_depth",
    ] {
        assert!(before.iter().any(|s| s.name == fam), "no {fam} in the first scrape");
    }
    assert_eq!(value(&before, "sluice_controller_up", &[("target", &dead_controller)]), 0.0);

    // Host 1 listens, host 0 sends FRAMES unicast frames to an unknown MAC:
    // the learning switch floods them to port 2.
    let (h0, h1) = (&lab.hosts[0], &lab.hosts[1]);
    let (if0, if1) = (lab.host_if[0].clone(), lab.host_if[1].clone());
    let got = std::thread::scope(|s| {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let rx = s.spawn(move || {
            h1.enter(|| {
                let sock = RawSocket::open(&if1).expect("capture socket");
                ready_tx.send(()).unwrap();
                let mut seen = BTreeSet::new();
                let mut buf = vec![0u8; 2048];
                let deadline = Instant::now() + Duration::from_secs(20);
                while seen.len() < FRAMES as usize && Instant::now() < deadline {
                    if let Ok(Some(n)) = sock.recv(&mut buf, Duration::from_millis(200)) {
                        if let Some(seq) = test_frame_seq(&buf[..n.min(buf.len())]) {
                            seen.insert(seq);
                        }
                    }
                }
                seen.len()
            })
        });
        ready_rx.recv_timeout(Duration::from_secs(10)).expect("capture socket ready");
        h0.enter(|| {
            let sock = RawSocket::open(&if0).expect("sending socket");
            let (dst, src) = ([2, 0x6d, 0x65, 0x74, 0, 2], [2, 0x6d, 0x65, 0x74, 0, 1]);
            for seq in 0..FRAMES {
                sock.send(&test_frame(dst, src, seq, LEN)).expect("send");
                if seq % 32 == 31 {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        });
        rx.join().expect("capture thread")
    });
    assert_eq!(got, FRAMES as usize, "frames that crossed the switch");

    // The counters are read when scraped; the burst's are in once the frames
    // left, but allow a few scrapes.
    let deadline = Instant::now() + Duration::from_secs(10);
    let after = loop {
        let a = parse_exposition(&scrape(port)).unwrap_or_else(|e| panic!("scrape: {e}"));
        let done = value(&a, "sluice_port_tx_packets_total", &[("port", "2")])
            - value(&before, "sluice_port_tx_packets_total", &[("port", "2")])
            >= f64::from(FRAMES);
        if done || Instant::now() > deadline {
            break a;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let rose = |name: &str, labels: &[(&str, &str)]| {
        value(&after, name, labels) - value(&before, name, labels)
    };
    let n = f64::from(FRAMES);
    let p1 = [("port", "1")];
    let p2 = [("port", "2")];
    assert!(rose("sluice_port_rx_packets_total", &p1) >= n, "rx packets on port 1");
    assert!(rose("sluice_port_rx_bytes_total", &p1) >= n * LEN as f64, "rx bytes on port 1");
    assert!(rose("sluice_port_tx_packets_total", &p2) >= n, "tx packets on port 2");
    assert!(rose("sluice_port_tx_bytes_total", &p2) >= n * LEN as f64, "tx bytes on port 2");
    assert!(rose("sluice_packets_total", &[]) >= n, "datapath packets");
    assert!(rose("sluice_bursts_total", &[]) >= 1.0, "bursts");
    assert!(rose("sluice_worker_busy_rounds_total", &[("worker", "0")]) >= 1.0, "busy rounds");
    assert!(rose("sluice_worker_busy_seconds_total", &[("worker", "0")]) > 0.0, "busy time");
    // One worker receives every frame of both ports.
    assert!(rose("sluice_worker_packets_total", &[("worker", "0")]) >= n, "worker packets");
    assert_eq!(value(&after, "sluice_standalone", &[]), 1.0, "fail standalone, no controller");
    assert_eq!(value(&after, "sluice_port_up", &p1), 1.0);
    assert!(
        value(&after, "sluice_uptime_seconds", &[]) > value(&before, "sluice_uptime_seconds", &[])
    );

    // `sluice top --once` shows the same numbers: port 1's row has its
    // name and the received frames.
    let rx1 = value(&after, "sluice_port_rx_packets_total", &p1);
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["top", &format!("127.0.0.1:{port}"), "--once", "--interval", "0.2"])
        .output()
        .expect("sluice top --once");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "sluice top: {}", String::from_utf8_lossy(&out.stderr));
    let row = text
        .lines()
        .find(|l| l.split_whitespace().take(2).eq(["1", lab.sw_if[0].as_str()]))
        .unwrap_or_else(|| panic!("no row for port 1 in:\n{text}"));
    let shown: f64 = row.split_whitespace().nth(3).and_then(|v| v.parse().ok()).expect("RX_PKTS");
    assert!(shown >= rx1, "top shows {shown} received on port 1, the scrape said {rx1}:\n{text}");
    assert!(text.contains("WORKER") && text.contains("upcall queue"), "{text}");
    assert!(text.contains(&format!("controller {dead_controller}: down")), "{text}");

    // The live view in a terminal (tmux): the screen shows the port table.
    need_root_and(&["tmux"]);
    let session = unique_name("mettop");
    let top = format!(
        "{} top 127.0.0.1:{port} --interval 0.2 --frames 100",
        env!("CARGO_BIN_EXE_sluice")
    );
    let tmux = |args: &[&str]| Command::new("tmux").args(args).output().expect("tmux");
    struct Session(String);
    impl Drop for Session {
        fn drop(&mut self) {
            let _ = Command::new("tmux").args(["kill-session", "-t", &self.0]).output();
        }
    }
    let st = tmux(&["new-session", "-d", "-s", &session, "-x", "120", "-y", "50", &top]);
    assert!(st.status.success(), "tmux: {}", String::from_utf8_lossy(&st.stderr));
    let _guard = Session(session.clone());
    let deadline = Instant::now() + Duration::from_secs(15);
    let screen = loop {
        let cap = tmux(&["capture-pane", "-p", "-t", &session]);
        let screen = String::from_utf8_lossy(&cap.stdout).to_string();
        if screen.contains(&lab.sw_if[1]) || Instant::now() > deadline {
            break screen;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(screen.contains("sluice top") && screen.contains("PORT"), "{screen}");
    assert!(screen.contains(&lab.sw_if[0]) && screen.contains(&lab.sw_if[1]), "{screen}");
    sw.assert_running();
}

#[test]
fn json_logs_are_one_object_per_line() {
    let dir = Scratch::new("jsonlog");
    for i in 1..=2 {
        let f = std::fs::File::create(dir.path(&format!("in{i}.pcap"))).unwrap();
        pcap_file::pcap::PcapWriter::new(f).expect("pcap header");
    }
    let port = free_port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    cmd.args(["run", "--no-control-socket", "--workers", "1", "--log-format", "json"])
        .args([
            "--port",
            "pcap:in1.pcap,out=out1.pcap=1",
            "--port",
            "pcap:in2.pcap,out=out2.pcap=2",
        ])
        .args(["--listen", &format!("ptcp:{port}:127.0.0.1")])
        .current_dir(&dir.0)
        .env("RUST_LOG", "info");
    let mut sw = Proc::spawn("sluice run", &mut cmd, dir.path("sluice.log"));
    sw.wait_log("switch running", Duration::from_secs(30));
    let log = sw.log();
    let mut messages = Vec::new();
    for line in log.lines() {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("log line is not JSON ({e}): {line:?}"));
        let o = v.as_object().unwrap_or_else(|| panic!("not an object: {line}"));
        for key in ["timestamp", "level", "target", "fields"] {
            assert!(o.contains_key(key), "no {key} in {line}");
        }
        let ts = o["timestamp"].as_str().expect("timestamp is a string");
        assert!(ts.len() >= 20 && ts.as_bytes()[10] == b'T' && ts.ends_with('Z'), "timestamp {ts}");
        assert!(["TRACE", "DEBUG", "INFO", "WARN", "ERROR"].contains(&o["level"].as_str().unwrap()));
        let m = o["fields"]["message"].as_str().unwrap_or_else(|| panic!("no message: {line}"));
        messages.push((m.to_string(), o["fields"].clone()));
    }
    // An event with fields keeps them as JSON values.
    let (_, f) = messages
        .iter()
        .find(|(m, _)| m == "port added")
        .unwrap_or_else(|| panic!("no `port added` line in {log}"));
    assert!(f["port"].is_u64() && f["name"].is_string(), "port added fields: {f}");
    assert!(messages.iter().any(|(m, _)| m == "OpenFlow listener ready"), "{log}");
}

/// Sends frames `seqs` from host 0 (dst host 1's made-up MAC).
fn send_frames(lab: &MetLab, seqs: std::ops::Range<u32>) -> Vec<Vec<u8>> {
    let frames: Vec<Vec<u8>> = seqs
        .map(|seq| {
            test_frame(
                [2, 0x6d, 0x65, 0x74, 0, 2],
                [2, 0x6d, 0x65, 0x74, 0, 1],
                seq,
                60 + seq as usize % 200,
            )
        })
        .collect();
    let if0 = lab.host_if[0].clone();
    lab.hosts[0].enter(|| {
        let sock = RawSocket::open(&if0).expect("sending socket");
        for (i, f) in frames.iter().enumerate() {
            sock.send(f).expect("send");
            if i % 32 == 31 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    });
    frames
}

/// Runs `sluice ctl capture` in the background; returns it once the switch
/// logged that the capture started.
fn start_capture(sw: &mut Proc, dir: &Scratch, name: &str, file: &str, extra: &[&str]) -> Proc {
    let starts = sw.log().matches("capture started").count();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    cmd.arg("ctl").arg("--rundir").arg(&dir.0).args([name, "capture", "1"]).arg(dir.path(file));
    cmd.args(extra).args(["--timeout", "60"]);
    let ctl = Proc::spawn("sluice ctl capture", &mut cmd, dir.path(&format!("{file}.log")));
    let deadline = Instant::now() + Duration::from_secs(30);
    while sw.log().matches("capture started").count() == starts {
        sw.assert_running();
        assert!(Instant::now() < deadline, "the capture did not start:\n{}", sw.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    ctl
}

/// Waits (bounded) for `ctl` to exit successfully.
fn finish(ctl: &mut Proc, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = ctl.try_wait() {
            assert!(st.success(), "sluice ctl capture failed ({st}):\n{}", ctl.log());
            return;
        }
        assert!(Instant::now() < deadline, "sluice ctl capture still running:\n{}", ctl.log());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read_pcap(path: &std::path::Path) -> Vec<Vec<u8>> {
    let f = std::fs::File::open(path).expect("open the capture");
    let mut r = pcap_file::pcap::PcapReader::new(f).expect("a pcap file");
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.expect("a pcap record");
        assert_eq!(p.orig_len as usize, p.data.len(), "whole frames");
        out.push(p.data.to_vec());
    }
    out
}

/// Frames `tcpdump -r` reads from `path`.
fn tcpdump_count(path: &std::path::Path) -> usize {
    let out = Command::new("tcpdump").args(["-nn", "-r"]).arg(path).output().expect("tcpdump");
    assert!(out.status.success(), "tcpdump -r: {}", String::from_utf8_lossy(&out.stderr));
    // One line per frame; tcpdump adds indented hex lines for an unknown
    // EtherType.
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with(char::is_whitespace))
        .count()
}

#[test]
fn capture_records_exactly_the_frames_a_port_received() {
    need_root_and(&["ip", "tcpdump"]);
    let lab = MetLab::new();
    let dir = Scratch::new("capture");
    let name = "metcap";
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    cmd.args(["run", "--name", name, "--workers", "1", "--fail-mode", "standalone"])
        .arg("--rundir")
        .arg(&dir.0)
        .args(["--netns", lab.sw.name()])
        .args(["--port", &format!("afpacket:{}=1", lab.sw_if[0])])
        .args(["--port", &format!("afpacket:{}=2", lab.sw_if[1])])
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1");
    let mut sw = Proc::spawn("sluice run", &mut cmd, dir.path("sluice.log"));
    sw.wait_log("control socket ready", Duration::from_secs(30));

    // Bounded by count: exactly the first 40 of 60 frames sent.
    let mut ctl = start_capture(&mut sw, &dir, name, "count.pcap", &["--count", "40"]);
    let sent = send_frames(&lab, 0..60);
    finish(&mut ctl, Duration::from_secs(30));
    let got = read_pcap(&dir.path("count.pcap"));
    assert_eq!(got.len(), 40, "frames in the capture");
    assert!(got == sent[..40], "the capture holds the first 40 frames sent, in order");
    assert_eq!(tcpdump_count(&dir.path("count.pcap")), 40);

    // Bounded by time: every frame sent while it ran, then it ends by itself.
    let mut ctl = start_capture(&mut sw, &dir, name, "time.pcap", &["--seconds", "2"]);
    let sent = send_frames(&lab, 100..125);
    finish(&mut ctl, Duration::from_secs(30));
    let got = read_pcap(&dir.path("time.pcap"));
    assert!(got == sent, "the capture holds the 25 frames sent: got {}", got.len());
    assert_eq!(tcpdump_count(&dir.path("time.pcap")), 25);
    assert!(ctl.log().contains("captured 25 frames on port 1"), "{}", ctl.log());

    // A port the switch does not have is refused by name.
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("ctl")
        .arg("--rundir")
        .arg(&dir.0)
        .args([name, "capture", "9", "x.pcap", "--count", "1", "--timeout", "30"])
        .current_dir(&dir.0)
        .output()
        .expect("sluice ctl");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("no port 9"), "{err}");
    sw.assert_running();
}
