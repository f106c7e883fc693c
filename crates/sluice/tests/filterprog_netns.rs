//! The example filter programs (`examples/bpf/*.c`) in the running switch,
//! with real traffic between hosts in network namespaces: each program is
//! compiled with clang, loaded over OpenFlow (`sluice ctl
//! load-filter-prog`), named by flow rules, and judged by what the hosts
//! see, the rules' counters and the program's maps read back over
//! OpenFlow (`sluice ctl dump-map`).
//!
//! - `tcp_firewall.c`: the inside host opens a TCP connection to the
//!   outside and talks; the outside cannot open one to the inside (its SYNs
//!   meet a `pcap_filter` drop rule), and TCP it sends for connections the
//!   program never saw opened is dropped by the rule below the program's.
//! - `rate_limiter.c`: a UDP burst above 1000 packets/s from one source is
//!   cut to its token bucket, and the bucket refills with time.
//! - `p0f_syn.c`: a real Linux `connect()` passes; a SYN flood of frames
//!   without Linux's TCP options, or with another TTL, is dropped, and the
//!   program's per-class counters say which was which.
//! - `dapper.c`: an os-ken application (`tests/osken/filterprog_dapper.py`)
//!   loads the program, installs rules with `send_maps`, receives the TCP
//!   statistics as `MAPS_REPORT`s and reads them with `DUMP_MAP`.
//!
//! Needs root, `ip`, `ping` and clang; the os-ken test also needs
//! `/usr/bin/osken-manager` (Debian python3-os-ken). A missing tool fails
//! the test (`scripts/install-deps` installs them). Namespaces, processes
//! (killed by PID) and scratch files are removed by guards, also when a
//! test fails; every wait is bounded.

mod netlab;

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use netlab::{clang_example, hex, n_packets, ok, Lab, NetNs, Proc, RawSocket, Scratch};

/// A TCP echo server on a host, run by a thread of this process until the
/// guard drops (at most a minute).
struct Echo {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Echo {
    fn start(ns: &NetNs, addr: SocketAddrV4) -> Echo {
        let l = ns.enter(|| TcpListener::bind(addr)).expect("bind the echo server");
        l.set_nonblocking(true).expect("nonblocking listener");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            while !flag.load(Ordering::Relaxed) && Instant::now() < deadline {
                match l.accept() {
                    Ok((mut s, _)) => {
                        let _ = s.set_nonblocking(false);
                        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                        let mut buf = [0u8; 4096];
                        while let Ok(n) = s.read(&mut buf) {
                            if n == 0 || s.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    Err(_) => break,
                }
            }
        });
        Echo { stop, thread: Some(thread) }
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// From host `ns`: connects to `to` (waiting at most `limit`), sends `msg`,
/// closes its side and reads the echo to the end. Returns the echo and the
/// client's address.
fn exchange(
    ns: &NetNs,
    to: SocketAddrV4,
    msg: &[u8],
    limit: Duration,
) -> std::io::Result<(Vec<u8>, SocketAddrV4)> {
    let msg = msg.to_vec();
    ns.enter(move || {
        let mut s = TcpStream::connect_timeout(&SocketAddr::V4(to), limit)?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        let local = match s.local_addr()? {
            SocketAddr::V4(a) => a,
            other => panic!("not IPv4: {other}"),
        };
        s.write_all(&msg)?;
        s.shutdown(Shutdown::Write)?;
        let mut echo = Vec::new();
        s.read_to_end(&mut echo)?;
        Ok((echo, local))
    })
}

/// The Internet checksum of `b`.
fn csum(b: &[u8]) -> u16 {
    !sluice_packet::checksum::fold(sluice_packet::checksum::sum(b))
}

/// An Ethernet/IPv4/TCP frame without TCP options or payload.
#[allow(clippy::too_many_arguments)]
fn tcp_frame(
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    src: Ipv4Addr,
    dst: Ipv4Addr,
    sport: u16,
    dport: u16,
    flags: u8,
    ttl: u8,
    df: bool,
) -> Vec<u8> {
    let mut f = Vec::with_capacity(54);
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&[0x08, 0x00]);
    let mut ip = vec![0x45, 0, 0, 40, 0x12, 0x34, if df { 0x40 } else { 0 }, 0, ttl, 6, 0, 0];
    ip.extend_from_slice(&src.octets());
    ip.extend_from_slice(&dst.octets());
    let c = csum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    let mut tcp = Vec::with_capacity(20);
    tcp.extend_from_slice(&sport.to_be_bytes());
    tcp.extend_from_slice(&dport.to_be_bytes());
    tcp.extend_from_slice(&0x1000_0000u32.to_be_bytes());
    tcp.extend_from_slice(&0u32.to_be_bytes());
    tcp.extend_from_slice(&[0x50, flags, 0x04, 0x00, 0, 0, 0, 0]);
    let mut pseudo = Vec::with_capacity(32);
    pseudo.extend_from_slice(&src.octets());
    pseudo.extend_from_slice(&dst.octets());
    pseudo.extend_from_slice(&[0, 6, 0, 20]);
    pseudo.extend_from_slice(&tcp);
    let c = csum(&pseudo);
    tcp[16..18].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&tcp);
    f
}

/// Sends `frames` from host `from` of `lab` out of its interface.
fn send_raw(lab: &Lab, from: usize, frames: &[Vec<u8>]) {
    let ifname = lab.host_if[from].clone();
    lab.h[from].enter(|| {
        let s = RawSocket::open(&ifname).expect("raw socket");
        for f in frames {
            s.send(f).expect("send a frame");
        }
    });
}

/// The `n_packets` of the flow matching `parts`, polled (bounded) until it
/// reaches `at_least`; returns the last value read.
fn counter_reaches(t: &str, parts: &[&str], at_least: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n = n_packets(&ok(t, &["dump-flows"]).stdout, parts);
        if n >= at_least || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The value of `key` in a `dump-map` output, if present.
fn map_value(dump: &str, key: &str) -> Option<String> {
    let want = format!("key={key} ");
    dump.lines()
        .find_map(|l| l.strip_prefix(&want))
        .and_then(|v| v.strip_prefix("value="))
        .map(str::to_string)
}

/// A little-endian u32/u64 read from hex `v` at byte `at`.
fn le(v: &str, at: usize, size: usize) -> u64 {
    let bytes: Vec<u8> = (0..size)
        .map(|i| u8::from_str_radix(&v[2 * (at + i)..2 * (at + i) + 2], 16).unwrap())
        .collect();
    bytes.iter().rev().fold(0, |acc, b| acc << 8 | u64::from(*b))
}

/// The examples' `struct flow5` key of a TCP packet from `src` to `dst`.
fn flow5(src: SocketAddrV4, dst: SocketAddrV4) -> String {
    let mut k = Vec::new();
    k.extend_from_slice(&src.ip().octets());
    k.extend_from_slice(&dst.ip().octets());
    k.extend_from_slice(&src.port().to_be_bytes());
    k.extend_from_slice(&dst.port().to_be_bytes());
    k.extend_from_slice(&[6, 0, 0, 0]);
    hex(&k)
}

/// The TCP SYN test in the flows: SYN set, ACK clear.
const SYN_ONLY: &str = r#"pcap_filter="tcp[13] & 0x12 = 2""#;

/// Inside host 0 (port 1) may open connections to outside host 1 (port
/// 2); the program lets the outside's packets of those connections back
/// in. The outside cannot open a connection (SYNs dropped above the
/// program's rule), and TCP it sends that belongs to no connection the
/// program saw opened falls through the program's rule to the drop rule
/// below it.
#[test]
fn stateful_firewall_admits_only_replies() {
    netlab::need_root_and(&["ip", "ping", "clang"]);
    let dir = Scratch::new("fw");
    let obj = clang_example(&dir, "tcp_firewall");
    let lab = Lab::new(2, 71);
    let (mut sw, t) = lab.start_secure_switch(&dir);
    ok(&t, &["load-filter-prog", "1", &obj.display().to_string()]);
    for flow in [
        format!("priority=20,in_port=2,tcp,{SYN_ONLY},actions=drop"),
        "priority=10,in_port=2,tcp,filter_prog=1,actions=output:1".into(),
        "priority=5,in_port=2,tcp,actions=drop".into(),
        "priority=10,in_port=1,tcp,filter_prog=1,actions=output:2".into(),
        "priority=1,in_port=1,actions=output:2".into(),
        "priority=1,in_port=2,actions=output:1".into(),
    ] {
        ok(&t, &["add-flow", &flow]);
    }
    assert!(lab.ping_ok_within(0, 1, Duration::from_secs(10)), "no ping through the switch");

    // Inside opens, outside answers.
    let server = SocketAddrV4::new(lab.ipv4(1), 8080);
    let _outside = Echo::start(&lab.h[1], server);
    let msg = b"inside says hello".repeat(100);
    let (echo, client) =
        exchange(&lab.h[0], server, &msg, Duration::from_secs(5)).expect("inside -> outside");
    assert_eq!(echo, msg, "the echo came back whole");

    // The program tracked that connection: its key is the opener's 5-tuple.
    let conns = ok(&t, &["dump-map", "1", "conns"]).stdout;
    let v = map_value(&conns, &flow5(client, server))
        .unwrap_or_else(|| panic!("no entry for {client} -> {server}:\n{conns}"));
    // FIN_WAIT after the close; every packet after the SYN counted.
    assert_eq!(le(&v, 0, 4), 3, "state of {v}");
    assert!(le(&v, 4, 4) >= 5, "packets of {v}");

    // Outside cannot open a connection to inside: its SYNs are dropped,
    // so connect() times out (a refusal would mean a SYN got through).
    let inside = SocketAddrV4::new(lab.ipv4(0), 8081);
    let _inside = Echo::start(&lab.h[0], inside);
    let err = exchange(&lab.h[1], inside, b"x", Duration::from_secs(2))
        .expect_err("outside opened a connection to inside");
    assert!(matches!(err.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock), "{err}");
    assert!(counter_reaches(&t, &["priority=20,"], 1) >= 1);

    // TCP from outside for no tracked connection: the program returns 0,
    // lookup goes on to the priority-5 drop rule.
    let before = n_packets(&ok(&t, &["dump-flows"]).stdout, &["priority=5,"]);
    let acks: Vec<Vec<u8>> = (0..5)
        .map(|i| {
            tcp_frame(
                lab.mac_bytes(0),
                lab.mac_bytes(1),
                lab.ipv4(1),
                lab.ipv4(0),
                40000 + i,
                8081,
                0x10,
                64,
                true,
            )
        })
        .collect();
    send_raw(&lab, 1, &acks);
    let after = counter_reaches(&t, &["priority=5,"], before + 5);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(n_packets(&ok(&t, &["dump-flows"]).stdout, &["priority=5,"]), before + 5);
    assert_eq!(after, before + 5);
    // The packets of the allowed connection from outside went through the
    // program's rule.
    assert!(n_packets(&ok(&t, &["dump-flows"]).stdout, &["priority=10,", "in_port=2"]) >= 3);
    sw.assert_running();
    // Table code was compiled while flows came in; Cranelift's own lines
    // stay out of an `info` log.
    let log = sw.log();
    assert!(!log.contains("cranelift"), "{log}");
}

/// From host `ns`: one UDP datagram to each of `ports` on `to`, in order.
fn knock(ns: &NetNs, to: Ipv4Addr, ports: &[u16]) {
    let ports = ports.to_vec();
    ns.enter(move || -> std::io::Result<()> {
        let s = UdpSocket::bind("0.0.0.0:0")?;
        for p in ports {
            s.send_to(b"knock", SocketAddrV4::new(to, p))?;
            // One worker serves a port's queue in order; the pause only
            // keeps the knocks apart in a capture.
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    })
    .expect("send the knocks");
}

/// OpenState's port knocking as a filter program (`port_knock.c`): host
/// 0's TCP to port 2222 on host 1 passes only after UDP knocks on 5001,
/// 6002 and 7003 in that order, each within 2 s of the last; a wrong
/// packet resets the sequence. The rules below the program's drop
/// whatever it does not pass; ARP and ICMP go through untouched.
#[test]
fn port_knocking_opens_the_port_after_the_sequence() {
    netlab::need_root_and(&["ip", "ping", "clang"]);
    let dir = Scratch::new("pk");
    let obj = clang_example(&dir, "port_knock");
    let lab = Lab::new(2, 78);
    let (mut sw, t) = lab.start_secure_switch(&dir);
    ok(&t, &["load-filter-prog", "1", &obj.display().to_string()]);
    for flow in [
        "priority=10,in_port=1,tcp,filter_prog=1,actions=output:2",
        "priority=10,in_port=1,udp,filter_prog=1,actions=output:2",
        "priority=5,in_port=1,tcp,actions=drop",
        "priority=5,in_port=1,udp,actions=drop",
        "priority=1,in_port=1,actions=output:2",
        "priority=1,in_port=2,actions=output:1",
    ] {
        ok(&t, &["add-flow", flow]);
    }
    assert!(lab.ping_ok_within(0, 1, Duration::from_secs(10)), "no ping through the switch");
    let server = SocketAddrV4::new(lab.ipv4(1), 2222);
    let _echo = Echo::start(&lab.h[1], server);
    let shut = |why: &str| {
        let err = exchange(&lab.h[0], server, b"x", Duration::from_secs(1))
            .expect_err(&format!("port 2222 open {why}"));
        assert!(matches!(err.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock), "{err}");
    };
    let state = || {
        let dump = ok(&t, &["dump-map", "1", "knock"]).stdout;
        map_value(&dump, &hex(&lab.ipv4(0).octets()))
            .map(|v| le(&v, 0, 4))
            .unwrap_or_else(|| panic!("no state for host 0:\n{dump}"))
    };

    shut("before any knock");
    knock(&lab.h[0], lab.ipv4(1), &[5001, 6002, 7003]);
    assert_eq!(state(), 3, "OPEN after the three knocks");
    let msg = b"knock knock".repeat(50);
    let (echo, _) = exchange(&lab.h[0], server, &msg, Duration::from_secs(5))
        .expect("port 2222 after the knocks");
    assert_eq!(echo, msg);

    // A stray packet closes it; knocks out of order do not open it.
    knock(&lab.h[0], lab.ipv4(1), &[9999]);
    assert_eq!(state(), 0, "a wrong port resets");
    knock(&lab.h[0], lab.ipv4(1), &[5001, 7003, 6002]);
    assert_eq!(state(), 0, "out of order");
    shut("after knocks out of order");

    // A knock more than 2 s after the previous one is too late.
    knock(&lab.h[0], lab.ipv4(1), &[5001, 6002]);
    assert_eq!(state(), 2);
    std::thread::sleep(Duration::from_millis(2300));
    knock(&lab.h[0], lab.ipv4(1), &[7003]);
    assert_eq!(state(), 0, "the window ran out before knock 3");
    shut("after a late knock");

    // The knocks themselves never reached host 1: the drop rules took
    // them (with the failed connection attempts' SYNs).
    let flows = ok(&t, &["dump-flows"]).stdout;
    assert!(n_packets(&flows, &["priority=5,", "udp"]) >= 10, "{flows}");
    assert!(n_packets(&flows, &["priority=10,", "tcp"]) >= 3, "{flows}");
    sw.assert_running();
}

/// A burst of UDP from one source, well above 1000 packets/s, is cut to
/// the program's token bucket (1000/s, depth 20); after a pause the bucket
/// has refilled and a short burst passes whole.
#[test]
fn rate_limiter_cuts_a_burst_to_its_bucket() {
    netlab::need_root_and(&["ip", "ping", "clang"]);
    let dir = Scratch::new("rl");
    let obj = clang_example(&dir, "rate_limiter");
    let lab = Lab::new(2, 72);
    let (mut sw, t) = lab.start_secure_switch(&dir);
    ok(&t, &["load-filter-prog", "2", &obj.display().to_string()]);
    for flow in [
        "priority=10,in_port=2,udp,filter_prog=2,actions=output:1",
        "priority=9,in_port=2,udp,actions=drop",
        "priority=1,in_port=1,actions=output:2",
        "priority=1,in_port=2,actions=output:1",
    ] {
        ok(&t, &["add-flow", flow]);
    }
    // ARP resolved both ways before the burst (ICMP is not limited).
    assert!(lab.ping_ok_within(1, 0, Duration::from_secs(10)), "no ping through the switch");

    let pass = ["priority=10,"];
    let drop = ["priority=9,"];
    let to = SocketAddrV4::new(lab.ipv4(0), 9);
    // 400 datagrams in 40 groups of 10, one group per 2.5 ms: ~4000/s.
    let sock = lab.h[1].enter(|| UdpSocket::bind("0.0.0.0:0")).expect("udp socket");
    let t0 = Instant::now();
    for g in 0..40 {
        for _ in 0..10 {
            sock.send_to(b"burst", to).expect("send");
        }
        let next = t0 + Duration::from_micros(2500 * (g + 1));
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let (p, d) = loop {
        let dump = ok(&t, &["dump-flows"]).stdout;
        let (p, d) = (n_packets(&dump, &pass), n_packets(&dump, &drop));
        if p + d >= 400 || Instant::now() > deadline {
            break (p, d);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // An upper bound of the time the switch can have seen the burst over.
    let span_ms = t0.elapsed().as_millis() as u64;
    assert_eq!(p + d, 400, "every datagram met one of the two rules");
    assert!(p >= 20, "the first 20 (the bucket's depth) pass: {p}");
    assert!(p <= 20 + span_ms + 1, "passed {p} in at most {span_ms} ms");
    assert!(d >= 100, "the burst was cut: passed {p}, dropped {d}");

    // The bucket is keyed by the source address.
    let buckets = ok(&t, &["dump-map", "2", "buckets"]).stdout;
    assert!(map_value(&buckets, &hex(&lab.ipv4(1).octets())).is_some(), "{buckets}");

    // 100 ms refill 100 tokens, capped at 20: ten more all pass.
    std::thread::sleep(Duration::from_millis(150));
    for _ in 0..10 {
        sock.send_to(b"later", to).expect("send");
    }
    let p2 = counter_reaches(&t, &pass, p + 10);
    std::thread::sleep(Duration::from_millis(100));
    let dump = ok(&t, &["dump-flows"]).stdout;
    assert_eq!((p2, n_packets(&dump, &pass), n_packets(&dump, &drop)), (p + 10, p + 10, d));
    sw.assert_running();
}

/// A real Linux SYN fits the program's signature and opens a connection;
/// SYNs without Linux's options, or with a Windows-like TTL, are dropped,
/// and the program's counters tell the classes apart.
#[test]
fn syn_signature_filter_drops_a_forged_flood() {
    netlab::need_root_and(&["ip", "ping", "clang"]);
    let dir = Scratch::new("p0f");
    let obj = clang_example(&dir, "p0f_syn");
    let lab = Lab::new(2, 73);
    let (mut sw, t) = lab.start_secure_switch(&dir);
    ok(&t, &["load-filter-prog", "3", &obj.display().to_string()]);
    for flow in [
        format!("priority=20,in_port=2,tcp,{SYN_ONLY},filter_prog=3,actions=output:1"),
        format!("priority=19,in_port=2,tcp,{SYN_ONLY},actions=drop"),
        "priority=1,in_port=1,actions=output:2".into(),
        "priority=1,in_port=2,actions=output:1".into(),
    ] {
        ok(&t, &["add-flow", &flow]);
    }
    assert!(lab.ping_ok_within(1, 0, Duration::from_secs(10)), "no ping through the switch");

    let server = SocketAddrV4::new(lab.ipv4(0), 8080);
    let _echo = Echo::start(&lab.h[0], server);
    let (echo, _) =
        exchange(&lab.h[1], server, b"a real SYN", Duration::from_secs(5)).expect("connect");
    assert_eq!(echo, b"a real SYN");

    // 100 SYNs without options (class 2), 10 with TTL 128 (class 1).
    let forged = |i: u16, ttl: u8| {
        tcp_frame(
            lab.mac_bytes(0),
            lab.mac_bytes(1),
            lab.ipv4(1),
            lab.ipv4(0),
            20000 + i,
            8080,
            0x02,
            ttl,
            true,
        )
    };
    let mut flood: Vec<Vec<u8>> = (0..100).map(|i| forged(i, 64)).collect();
    flood.extend((100..110).map(|i| forged(i, 128)));
    let before = n_packets(&ok(&t, &["dump-flows"]).stdout, &["priority=19,"]);
    send_raw(&lab, 1, &flood);
    let dropped = counter_reaches(&t, &["priority=19,"], before + 110);
    assert_eq!(dropped, before + 110, "every forged SYN dropped");
    let passed = n_packets(&ok(&t, &["dump-flows"]).stdout, &["priority=20,"]);
    assert!(passed >= 1, "the real SYN passed");

    let hits = ok(&t, &["dump-map", "3", "sig_hits"]).stdout;
    let count = |k: u32| {
        map_value(&hits, &hex(&k.to_le_bytes()))
            .map(|v| le(&v, 0, 8))
            .unwrap_or_else(|| panic!("{hits}"))
    };
    assert_eq!((count(0), count(1), count(2), count(3)), (passed, 10, 100, 0), "{hits}");
    sw.assert_running();
}

const PYTHON: &str = "/usr/bin/python3";
const OSKEN_MANAGER: &str = "/usr/bin/osken-manager";

/// An os-ken application drives the Dapper program end to end: it loads
/// the object (LOAD_FILTER_PROG fragments), installs rules whose match
/// names the program and whose actions hold `send_maps`, and logs the
/// per-connection statistics it receives (MAPS_REPORT) and reads
/// (DUMP_MAP). A TCP exchange between the hosts must show up there with
/// its exact payload byte count.
#[test]
fn osken_app_receives_dapper_statistics() {
    netlab::need_root_and(&["ip", "ping", "clang"]);
    assert!(
        std::path::Path::new(OSKEN_MANAGER).exists(),
        "{OSKEN_MANAGER} missing: install the Debian package python3-os-ken"
    );
    let dir = Scratch::new("dapper");
    let obj = clang_example(&dir, "dapper");
    let lab = Lab::new(2, 74);
    let app =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/osken/filterprog_dapper.py");
    let ctl_port = netlab::free_port();
    let mut cmd = std::process::Command::new(PYTHON);
    cmd.arg(OSKEN_MANAGER)
        .args(["--ofp-listen-host", "127.0.0.1", "--ofp-tcp-listen-port", &ctl_port.to_string()])
        .arg(&app)
        .env("SLUICE_DAPPER_OBJ", &obj)
        .env("SLUICE_DAPPER_PROG", "9");
    let mut app = Proc::spawn("osken-manager", &mut cmd, dir.path("osken.log"));
    app.wait_listening(ctl_port);

    let cfg = dir.path("sluice.toml");
    std::fs::write(&cfg, "[agent]\nbackoff_min_ms = 100\nbackoff_max_ms = 500\n").expect("config");
    let listen_port = netlab::free_port();
    let mut sw = lab.start_switch(
        &dir,
        &[
            "--config",
            &cfg.display().to_string(),
            "--fail-mode",
            "secure",
            "--controller",
            &format!("tcp:127.0.0.1:{ctl_port}"),
            "--listen",
            &format!("ptcp:{listen_port}:127.0.0.1"),
        ],
    );
    app.wait_log("DAPPER installed", Duration::from_secs(60));
    assert!(lab.ping_ok_within(0, 1, Duration::from_secs(10)), "no ping through the switch");

    let server = SocketAddrV4::new(lab.ipv4(1), 8080);
    let _echo = Echo::start(&lab.h[1], server);
    let msg = vec![b'd'; 3000];
    let (echo, client) =
        exchange(&lab.h[0], server, &msg, Duration::from_secs(5)).expect("exchange");
    assert_eq!(echo.len(), 3000);
    // A report goes out at most every 100 ms per rule: a second exchange
    // after a pause makes one that holds the first connection's final
    // numbers.
    std::thread::sleep(Duration::from_millis(300));
    exchange(&lab.h[0], server, b"again", Duration::from_secs(5)).expect("second exchange");

    let conn = format!("conn {client}>{server} ");
    let want = format!("{conn}packets=");
    let log = app.wait_log("DAPPER report prog=9", Duration::from_secs(15));
    assert!(log.contains(&want), "{log}");
    let deadline = Instant::now() + Duration::from_secs(15);
    let full = |l: &str, kind: &str| {
        l.contains(&format!("DAPPER {kind} {conn}"))
            && l.contains(" bytes=3000 ")
            && l.contains(" retrans=0 ")
    };
    loop {
        let log = app.log();
        if log.lines().any(|l| full(l, "reported")) && log.lines().any(|l| full(l, "dumped")) {
            assert!(!log.contains("DAPPER error"), "{log}");
            break;
        }
        app.assert_running();
        sw.assert_running();
        assert!(
            Instant::now() < deadline,
            "no report and dump with bytes=3000 retrans=0 for {conn}:\n{log}\n--- switch:\n{}",
            sw.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let flows = ok(&format!("tcp:127.0.0.1:{listen_port}"), &["dump-flows"]).stdout;
    assert!(n_packets(&flows, &["filter_prog=9", "in_port=1"]) >= 5, "{flows}");
}
