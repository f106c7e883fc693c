//! `sluice ctl` against a scripted switch in this process, for what a real
//! Open vSwitch cannot show on demand: that `add-flows` pipelines every
//! flow-mod and waits for exactly one barrier, that multipart replies split
//! with `OFPMPF_REPLY_MORE` are joined, that echo requests are answered
//! while waiting, that errors map back to file lines, and that a switch
//! without OpenFlow 1.3 is refused by name.
//!
//! The scripted switch speaks through `sluice_ofp`'s codec on a TCP
//! listener bound to 127.0.0.1 port 0 (no namespace or root needed); every
//! read has a timeout, so a wrong client fails the test instead of hanging.

use sluice_ofp::message::{flow_mod_command, ErrorMsg, Header, Hello, Message};
use sluice_ofp::multipart::{
    FlowStats, MultipartReply, MultipartReplyBody, MultipartRequestBody, OFPMPF_REPLY_MORE,
};
use sluice_ofp::ErrorCode;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};
use std::thread;
use std::time::{Duration, Instant};

/// What the scripted switch saw.
#[derive(Debug, Default)]
struct Seen {
    flow_mods: Vec<(u32, u64)>,
    barriers: usize,
    /// Flow-mods that arrived after the first barrier request.
    mods_after_barrier: usize,
    echo_replies: usize,
    multipart_requests: usize,
}

fn read_msg(s: &mut TcpStream) -> Option<(Header, Vec<u8>)> {
    let mut h = [0u8; 8];
    s.read_exact(&mut h).ok()?;
    let header = Header::parse(&h).ok()?;
    let mut buf = h.to_vec();
    buf.resize(usize::from(header.length).max(8), 0);
    s.read_exact(&mut buf[8..]).ok()?;
    Some((header, buf))
}

/// Run a scripted switch for one connection; `hello_versions` is what it
/// offers; `reject_cookie` flow-mods get an error; flow-stats requests get
/// `parts` replies of `per_part` flows each.
fn switch(
    hello_versions: &'static [u8],
    reject_cookie: Option<u64>,
    parts: usize,
    per_part: usize,
) -> (String, thread::JoinHandle<Seen>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let target = format!("tcp:{}", l.local_addr().expect("addr"));
    let h = thread::spawn(move || {
        let mut seen = Seen::default();
        let (mut s, _) = l.accept().expect("accept");
        s.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
        let hello = Message::Hello(Hello::with_versions(hello_versions)).encode(1);
        let mut hello = hello;
        hello[0] = *hello_versions.iter().max().unwrap_or(&4);
        s.write_all(&hello).expect("hello");
        // Probe the client's keep-alive handling straight away.
        s.write_all(&Message::EchoRequest(b"ping".to_vec()).encode(0x77)).expect("echo");
        while let Some((h, raw)) = read_msg(&mut s) {
            let Ok((_, m)) = Message::parse(&raw) else { continue };
            match m {
                Message::EchoReply(d) if h.xid == 0x77 && d == b"ping" => seen.echo_replies += 1,
                Message::FlowMod(f) => {
                    if seen.barriers > 0 {
                        seen.mods_after_barrier += 1;
                    }
                    seen.flow_mods.push((h.xid, f.cookie));
                    if Some(f.cookie) == reject_cookie {
                        let e = Message::Error(ErrorMsg::Standard {
                            code: ErrorCode::BRC_EPERM,
                            data: raw[..raw.len().min(64)].to_vec(),
                        });
                        s.write_all(&e.encode(h.xid)).expect("error");
                    }
                }
                Message::BarrierRequest => {
                    seen.barriers += 1;
                    s.write_all(&Message::BarrierReply.encode(h.xid)).expect("barrier");
                }
                Message::MultipartRequest(r) => {
                    seen.multipart_requests += 1;
                    assert!(matches!(r.body, MultipartRequestBody::Flow(_)), "{r:?}");
                    for p in 0..parts {
                        let flows = (0..per_part)
                            .map(|i| FlowStats {
                                priority: (p * per_part + i) as u16,
                                cookie: 0x1000 + (p * per_part + i) as u64,
                                ..FlowStats::default()
                            })
                            .collect();
                        let more = if p + 1 < parts { OFPMPF_REPLY_MORE } else { 0 };
                        let reply = Message::MultipartReply(MultipartReply {
                            flags: more,
                            body: MultipartReplyBody::Flow(flows),
                        });
                        s.write_all(&reply.encode(h.xid)).expect("reply");
                    }
                }
                _ => {}
            }
        }
        seen
    });
    (target, h)
}

fn sluice(args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.arg("ctl").args(args).args(["--timeout", "120"]);
    c.output().expect("run sluice")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn add_flows_pipelines_everything_before_one_barrier() {
    const N: u64 = 100_000;
    let dir = std::env::temp_dir().join(format!("sluice-ctl-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("flows.txt");
    let mut t = String::from("# 100k flows\n");
    for i in 0..N {
        t.push_str(&format!(
            "cookie={i},priority=10,ip,nw_dst=10.{}.{}.{},actions=output:2\n",
            i >> 16,
            (i >> 8) & 255,
            i & 255
        ));
    }
    std::fs::write(&file, t).expect("write");
    let (target, h) = switch(&[4], Some(77_777), 0, 0);
    let t0 = Instant::now();
    let o = sluice(&[&target, "add-flows", &file.display().to_string()]);
    let took = t0.elapsed();
    let seen = h.join().expect("switch thread");
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("add-flows of {N} flows (debug build, parse + send + barrier): {took:?}");
    // One rejected line, named by file and line (line 1 is the comment).
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!(":{}: cookie=77777,priority=10", 77_777 + 2)), "{}", text(&o));
    assert!(err.contains("OFPET_BAD_REQUEST OFPBRC_EPERM"), "{}", text(&o));
    assert_eq!(seen.flow_mods.len() as u64, N);
    assert_eq!(seen.barriers, 1, "exactly one barrier");
    assert_eq!(seen.mods_after_barrier, 0, "the barrier comes last");
    assert!(seen.flow_mods.iter().enumerate().all(|(i, &(_, c))| c == i as u64), "in file order");
    let xids: Vec<u32> = seen.flow_mods.iter().map(|&(x, _)| x).collect();
    assert!(xids.windows(2).all(|w| w[1] == w[0] + 1), "consecutive xids");
    assert_eq!(seen.echo_replies, 1, "the echo request was answered");
}

#[test]
fn multipart_replies_are_joined() {
    let (target, h) = switch(&[4], None, 3, 700);
    let o = sluice(&[&target, "dump-flows", "table=0"]);
    let seen = h.join().expect("switch thread");
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let mut lines = out.lines();
    let head = lines.next().unwrap_or_default();
    assert!(head.starts_with("OFPST_FLOW reply (OF1.3) (xid=0x"), "{out}");
    assert!(!head.contains("more"), "joined reply has no MORE flag: {head}");
    let flows: Vec<&str> = lines.collect();
    assert_eq!(flows.len(), 2100);
    assert!(flows[0].starts_with(" cookie=0x1000, "), "{}", flows[0]);
    assert!(flows[2099].contains("cookie=0x1833,") && flows[2099].contains("priority=2099"));
    assert_eq!(seen.multipart_requests, 1);
    assert_eq!(seen.echo_replies, 1);
}

#[test]
fn a_switch_without_openflow_13_is_refused() {
    let (target, h) = switch(&[1], None, 0, 0);
    let o = sluice(&[&target, "show"]);
    let _ = h.join();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "{target}: the switch does not speak OpenFlow 1.3 (it offers versions 0x01)"
        )),
        "{}",
        text(&o)
    );
}

#[test]
fn strict_and_plain_deletes_differ_on_the_wire() {
    for (strict, want) in
        [(false, flow_mod_command::DELETE), (true, flow_mod_command::DELETE_STRICT)]
    {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let target = format!("tcp:{}", l.local_addr().expect("addr"));
        let h = thread::spawn(move || {
            let (mut s, _) = l.accept().expect("accept");
            s.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
            s.write_all(&Message::Hello(Hello::with_versions(&[4])).encode(1)).expect("hello");
            let mut cmds = Vec::new();
            while let Some((h, raw)) = read_msg(&mut s) {
                match Message::parse(&raw) {
                    Ok((_, Message::FlowMod(f))) => cmds.push((f.command, f.priority, f.table_id)),
                    Ok((_, Message::BarrierRequest)) => {
                        s.write_all(&Message::BarrierReply.encode(h.xid)).expect("barrier");
                    }
                    _ => {}
                }
            }
            cmds
        });
        let mut args = vec![target.as_str(), "del-flows", "priority=7,in_port=3"];
        if strict {
            args.push("--strict");
        }
        let o = sluice(&args);
        assert!(o.status.success(), "{}", text(&o));
        assert_eq!(h.join().expect("thread"), vec![(want, 7, 0xff)]);
    }
}
