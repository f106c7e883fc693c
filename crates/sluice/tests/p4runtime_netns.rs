//! `sluice p4 run --p4runtime` end to end: the real binary on veths (two
//! hosts in namespaces, `Lab::new(2, 85)`), driven by the generated
//! tonic client over loopback with the P4Runtime server's test program
//! (`crates/p4rt/tests/p4/rt.p4`, CPU port 255):
//! - a PacketOut with `egress_port = 2` leaves on port 2 (host 1 sees
//!   the payload);
//! - a frame from host 0 that the `l2` table sends to the CPU arrives
//!   as a PacketIn with `ingress_port = 1` and the frame as payload;
//! - garbage on the gRPC port and a primary that vanishes mid-stream
//!   leave the switch running, forwarding, and its tables intact (a new
//!   client reads them back).
//!
//! - `p4runtime_faults_leave_the_switch_forwarding` (hosts ping each
//!   other through `l2` entries): a Write whose body is not a protobuf
//!   (INTERNAL or INVALID_ARGUMENT), a Write over the 16 MiB limit
//!   (RESOURCE_EXHAUSTED), and a primary whose connection drops in the
//!   middle of a StreamChannel message; after each the switch runs, ping
//!   works and Read gives the same entries, and at the end a new client
//!   becomes primary and writes.
//!
//! Needs root and `ip`; a missing tool fails the test. Namespaces, the
//! switch (killed by PID) and scratch files are removed by guards, also
//! on failure; every wait is bounded.

mod netlab;

use std::io::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use netlab::{free_port, need_root_and, Lab, Proc, RawSocket, Scratch};
use p4v1::stream_message_request::Update as Req;
use p4v1::stream_message_response::Update as Resp;
use sluice_p4rt::proto::p4::config::v1 as cfg;
use sluice_p4rt::proto::p4::v1 as p4v1;
use sluice_p4rt::proto::p4::v1::p4_runtime_client::P4RuntimeClient;
use tonic::transport::Channel;

const OCTET: u8 = 85;
const DEVICE: u64 = 1;

struct Stream {
    tx: tokio::sync::mpsc::Sender<p4v1::StreamMessageRequest>,
    rx: tonic::Streaming<p4v1::StreamMessageResponse>,
}

fn eid(v: u64) -> Option<p4v1::Uint128> {
    Some(p4v1::Uint128 { high: 0, low: v })
}

async fn open(c: &mut P4RuntimeClient<Channel>, election: u64) -> Stream {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    let s =
        c.stream_channel(tokio_stream::wrappers::ReceiverStream::new(rx)).await.expect("stream");
    let mut s = Stream { tx, rx: s.into_inner() };
    let upd = p4v1::MasterArbitrationUpdate {
        device_id: DEVICE,
        election_id: eid(election),
        ..Default::default()
    };
    s.tx.send(p4v1::StreamMessageRequest { update: Some(Req::Arbitration(upd)) }).await.unwrap();
    match next(&mut s).await {
        Resp::Arbitration(a) => assert_eq!(a.status.unwrap().code, 0, "primary"),
        other => panic!("expected arbitration, got {other:?}"),
    }
    s
}

async fn next(s: &mut Stream) -> Resp {
    let m = tokio::time::timeout(Duration::from_secs(10), s.rx.message())
        .await
        .expect("a stream message within 10 s")
        .expect("stream ok")
        .expect("stream open");
    m.update.unwrap()
}

fn id_of<'a>(mut it: impl Iterator<Item = &'a cfg::Preamble>, name: &str) -> u32 {
    it.find(|p| p.name == name).unwrap_or_else(|| panic!("no `{name}` in the P4Info")).id
}

fn l2(
    info: &cfg::P4Info,
    mac: [u8; 6],
    action: &str,
    params: Vec<p4v1::action::Param>,
) -> p4v1::Update {
    let e = p4v1::TableEntry {
        table_id: id_of(info.tables.iter().filter_map(|t| t.preamble.as_ref()), "I.l2"),
        r#match: vec![p4v1::FieldMatch {
            field_id: 1,
            field_match_type: Some(p4v1::field_match::FieldMatchType::Exact(
                p4v1::field_match::Exact { value: mac.to_vec() },
            )),
        }],
        action: Some(p4v1::TableAction {
            r#type: Some(p4v1::table_action::Type::Action(p4v1::Action {
                action_id: id_of(info.actions.iter().filter_map(|a| a.preamble.as_ref()), action),
                params,
            })),
        }),
        ..Default::default()
    };
    p4v1::Update {
        r#type: p4v1::update::Type::Insert as i32,
        entity: Some(p4v1::Entity { entity: Some(p4v1::entity::Entity::TableEntry(e)) }),
    }
}

fn frame(dst: [u8; 6], src: [u8; 6], tag: &[u8]) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x88, 0xb5]);
    f.extend_from_slice(tag);
    f.resize(60, 0);
    f
}

/// Waits (10 s at most) for a frame carrying `tag` on `sock`.
fn receive(sock: &RawSocket, tag: &[u8]) -> Option<Vec<u8>> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 2048];
    while Instant::now() < deadline {
        if let Ok(Some(n)) = sock.recv(&mut buf, Duration::from_millis(200)) {
            let f = &buf[..n.min(buf.len())];
            if f.windows(tag.len()).any(|w| w == tag) {
                return Some(f.to_vec());
            }
        }
    }
    None
}

/// `sluice p4 run rt.p4 --p4runtime 127.0.0.1:PORT` (device 1, CPU port
/// 255) on the lab's ports, once it listens; its gRPC port.
fn start_switch(lab: &Lab, dir: &Scratch) -> (Proc, u16) {
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("../p4rt/tests/p4/rt.p4");
    let port = free_port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    cmd.args(["p4", "run"])
        .arg(&program)
        .args(["--netns", lab.sw.name()])
        .args([
            "--p4runtime",
            &format!("127.0.0.1:{port}"),
            "--cpu-port",
            "255",
            "--device-id",
            "1",
        ])
        .args(lab.port_args())
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1");
    let mut sw = Proc::spawn("sluice p4 run --p4runtime", &mut cmd, dir.path("p4run.log"));
    sw.wait_listening(port);
    (sw, port)
}

#[test]
fn p4runtime_drives_the_switch_on_veths() {
    need_root_and(&["ip"]);
    let lab = Lab::new(2, OCTET);
    let dir = Scratch::new("p4rt-netns");
    let (mut sw, port) = start_switch(&lab, &dir);
    let s0 = lab.h[0].enter(|| RawSocket::open(&lab.host_if[0])).expect("raw socket on host 0");
    let s1 = lab.h[1].enter(|| RawSocket::open(&lab.host_if[1])).expect("raw socket on host 1");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let (info, mut c) = rt.block_on(async {
        let mut c = P4RuntimeClient::connect(url.clone()).await.expect("connect");
        let r = c
            .get_forwarding_pipeline_config(p4v1::GetForwardingPipelineConfigRequest {
                device_id: DEVICE,
                response_type: 0,
            })
            .await
            .unwrap()
            .into_inner();
        (r.config.unwrap().p4info.unwrap(), c)
    });
    let mut stream = rt.block_on(open(&mut c, 1));
    // Packet-out to port 2.
    let po = info
        .controller_packet_metadata
        .iter()
        .find(|m| m.preamble.as_ref().unwrap().name == "packet_out")
        .unwrap();
    let egress = po.metadata.iter().find(|m| m.name == "egress_port").unwrap().id;
    let out = frame(lab.mac_bytes(1), [2, 0, 0, 0, 0x55, 0xee], b"packet-out-test");
    rt.block_on(stream.tx.send(p4v1::StreamMessageRequest {
        update: Some(Req::Packet(p4v1::PacketOut {
            payload: out.clone(),
            metadata: vec![p4v1::PacketMetadata { metadata_id: egress, value: vec![2] }],
        })),
    }))
    .unwrap();
    let got = receive(&s1, b"packet-out-test").expect("the packet-out reached host 1");
    assert_eq!(got, out);
    // Packet-in from port 1.
    let cpu_mac = [2, 0, 0, 0, 0x55, 0x99];
    rt.block_on(c.write(p4v1::WriteRequest {
        device_id: DEVICE,
        election_id: eid(1),
        updates: vec![l2(&info, cpu_mac, "I.to_cpu", vec![])],
        ..Default::default()
    }))
    .expect("write to_cpu entry");
    let up = frame(cpu_mac, lab.mac_bytes(0), b"packet-in-test");
    s0.send(&up).expect("send from host 0");
    let pin = rt.block_on(async {
        loop {
            if let Resp::Packet(p) = next(&mut stream).await {
                break p;
            }
        }
    });
    assert_eq!(pin.payload, up);
    let pi = info
        .controller_packet_metadata
        .iter()
        .find(|m| m.preamble.as_ref().unwrap().name == "packet_in")
        .unwrap();
    let ingress = pi.metadata.iter().find(|m| m.name == "ingress_port").unwrap().id;
    assert_eq!(pin.metadata.iter().find(|m| m.metadata_id == ingress).unwrap().value, vec![1]);
    // A forwarding entry, then garbage and a vanishing primary.
    let fwd = p4v1::action::Param { param_id: 1, value: vec![2] };
    rt.block_on(c.write(p4v1::WriteRequest {
        device_id: DEVICE,
        election_id: eid(1),
        updates: vec![l2(&info, lab.mac_bytes(1), "I.fwd", vec![fwd])],
        ..Default::default()
    }))
    .expect("write fwd entry");
    {
        let mut g = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect for garbage");
        let _ = g.write_all(
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x04\x07\xff\xff\xff\xffgarbage garbage",
        );
        let _ = g.write_all(&[0xffu8; 4096]);
    }
    drop(stream);
    drop(c);
    rt.shutdown_timeout(Duration::from_secs(1));
    std::thread::sleep(Duration::from_millis(300));
    sw.assert_running();
    let fwd_frame = frame(lab.mac_bytes(1), lab.mac_bytes(0), b"still-forwarding");
    s0.send(&fwd_frame).expect("send from host 0");
    assert!(receive(&s1, b"still-forwarding").is_some(), "the switch stopped forwarding");
    // A new client reads the tables back intact and can become primary.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let n = rt.block_on(async {
        let mut c = P4RuntimeClient::connect(url).await.expect("reconnect");
        let _s = open(&mut c, 2).await;
        let q = p4v1::Entity {
            entity: Some(p4v1::entity::Entity::TableEntry(p4v1::TableEntry::default())),
        };
        let mut r = c
            .read(p4v1::ReadRequest { device_id: DEVICE, entities: vec![q], ..Default::default() })
            .await
            .unwrap()
            .into_inner();
        let mut n = 0;
        while let Some(m) = r.message().await.unwrap() {
            n += m.entities.len();
        }
        n
    });
    assert_eq!(n, 2, "both l2 entries survive");
    sw.assert_running();
}

/// Reads every table entry, each encoded, sorted.
async fn entries(c: &mut P4RuntimeClient<Channel>) -> Vec<Vec<u8>> {
    use prost::Message as _;
    let q = p4v1::Entity {
        entity: Some(p4v1::entity::Entity::TableEntry(p4v1::TableEntry::default())),
    };
    let mut r = c
        .read(p4v1::ReadRequest { device_id: DEVICE, entities: vec![q], ..Default::default() })
        .await
        .expect("read")
        .into_inner();
    let mut v = Vec::new();
    while let Some(m) = r.message().await.expect("read stream") {
        v.extend(m.entities.iter().map(|e| e.encode_to_vec()));
    }
    v.sort();
    v
}

/// `msg` as one gRPC length-prefixed message (uncompressed).
fn grpc_frame(msg: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8];
    f.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    f.extend_from_slice(msg);
    f
}

/// An HTTP/2 connection to the gRPC port without tonic's framing: the
/// `h2` client, its connection driven by a task aborted on drop (which
/// drops the socket).
struct RawH2 {
    h2: h2::client::SendRequest<bytes::Bytes>,
    conn: tokio::task::JoinHandle<()>,
}

impl Drop for RawH2 {
    fn drop(&mut self) {
        self.conn.abort();
    }
}

impl RawH2 {
    async fn connect(port: u16) -> RawH2 {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.expect("tcp connect");
        let (h2, conn) = h2::client::handshake(tcp).await.expect("HTTP/2 handshake");
        let conn = tokio::spawn(async move {
            let _ = conn.await;
        });
        RawH2 { h2, conn }
    }

    /// Starts a call to `method` of `p4.v1.P4Runtime`, sending `body`
    /// (ending the request when `end`).
    async fn call(
        &mut self,
        method: &str,
        body: Vec<u8>,
        end: bool,
    ) -> (h2::client::ResponseFuture, h2::SendStream<bytes::Bytes>) {
        let req = http::Request::builder()
            .method("POST")
            .uri(format!("http://127.0.0.1/p4.v1.P4Runtime/{method}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .unwrap();
        let mut h2 = self.h2.clone().ready().await.expect("h2 ready");
        let (resp, mut send) = h2.send_request(req, false).expect("send request");
        send.send_data(body.into(), end).expect("send body");
        (resp, send)
    }
}

/// The grpc-status of a unary call's answer (in the headers of a
/// trailers-only answer, else in the trailers), as a code.
async fn grpc_status(resp: h2::client::ResponseFuture) -> (tonic::Code, String) {
    let r = tokio::time::timeout(Duration::from_secs(10), resp)
        .await
        .expect("an answer within 10 s")
        .expect("an HTTP/2 answer");
    let get = |h: &http::HeaderMap| {
        h.get("grpc-status").map(|v| {
            let code: i32 = v.to_str().unwrap().parse().unwrap();
            let msg = h.get("grpc-message").map(|m| m.to_str().unwrap().to_string());
            (tonic::Code::from(code), msg.unwrap_or_default())
        })
    };
    if let Some(s) = get(r.headers()) {
        return s;
    }
    let mut body = r.into_body();
    while let Some(d) = body.data().await {
        d.expect("body");
    }
    let t = body.trailers().await.expect("trailers").expect("trailers present");
    get(&t).expect("grpc-status in the trailers")
}

#[test]
fn p4runtime_faults_leave_the_switch_forwarding() {
    use prost::Message as _;
    need_root_and(&["ip", "ping"]);
    let lab = Lab::new(2, 104);
    let dir = Scratch::new("p4rt-faults");
    let (mut sw, port) = start_switch(&lab, &dir);
    // Static neighbours: rt.p4's `l2` forwards unicast only.
    for (a, b) in [(0, 1), (1, 0)] {
        lab.neighbour(a, &lab.ip(b), &lab.mac(b));
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let (info, mut c, stream) = rt.block_on(async {
        let mut c = P4RuntimeClient::connect(url.clone()).await.expect("connect");
        let r = c
            .get_forwarding_pipeline_config(p4v1::GetForwardingPipelineConfigRequest {
                device_id: DEVICE,
                response_type: 0,
            })
            .await
            .unwrap()
            .into_inner();
        let s = open(&mut c, 1).await;
        (r.config.unwrap().p4info.unwrap(), c, s)
    });
    let to = |p: u8| vec![p4v1::action::Param { param_id: 1, value: vec![p] }];
    rt.block_on(c.write(p4v1::WriteRequest {
        device_id: DEVICE,
        election_id: eid(1),
        updates: vec![
            l2(&info, lab.mac_bytes(1), "I.fwd", to(2)),
            l2(&info, lab.mac_bytes(0), "I.fwd", to(1)),
        ],
        ..Default::default()
    }))
    .expect("write the forwarding entries");
    let before = rt.block_on(entries(&mut c));
    assert_eq!(before.len(), 2, "two l2 entries");
    let mut check = |what: &str, c: &mut P4RuntimeClient<Channel>| {
        sw.assert_running();
        assert!(
            lab.ping_ok_within(0, 1, Duration::from_secs(10)),
            "after {what}: no ping across the switch:\n{}",
            sw.log()
        );
        assert_eq!(rt.block_on(entries(c)), before, "after {what}: the entries changed");
    };
    check("writing the entries", &mut c);

    // (a) Bodies that are not protobufs: a length-delimited field cut
    // short, and wire type 7 (there is none).
    for (n, junk) in [&[0x1a_u8, 0x64, 0x01][..], &[0x0f, 0x01]].into_iter().enumerate() {
        let (code, msg) = rt.block_on(async {
            let mut raw = RawH2::connect(port).await;
            let (resp, _send) = raw.call("Write", grpc_frame(junk), true).await;
            grpc_status(resp).await
        });
        assert!(
            matches!(code, tonic::Code::Internal | tonic::Code::InvalidArgument),
            "malformed Write {n}: {code:?} {msg}"
        );
        check(&format!("malformed Write {n} ({code:?})"), &mut c);
    }

    // (b) A Write over the limit, from the generated client.
    let big = p4v1::WriteRequest {
        device_id: DEVICE,
        election_id: eid(1),
        updates: vec![l2(&info, lab.mac_bytes(1), "I.fwd", to(2)); 1],
        ..Default::default()
    };
    let mut big = big;
    if let Some(p4v1::entity::Entity::TableEntry(e)) =
        big.updates[0].entity.as_mut().and_then(|e| e.entity.as_mut())
    {
        e.r#match[0].field_match_type =
            Some(p4v1::field_match::FieldMatchType::Exact(p4v1::field_match::Exact {
                value: vec![0x5a; sluice_p4rt::server::MAX_MESSAGE + 1],
            }));
    }
    assert!(big.encoded_len() > sluice_p4rt::server::MAX_MESSAGE);
    let err = rt.block_on(c.write(big)).expect_err("an oversized Write is refused");
    assert_eq!(err.code(), tonic::Code::ResourceExhausted, "oversized Write: {err}");
    check("an oversized Write", &mut c);

    // (c) The primary goes: a new stream takes over as primary (election
    // id 5), then its connection drops in the middle of a message.
    drop(stream);
    rt.block_on(async {
        let mut raw = RawH2::connect(port).await;
        let arb = p4v1::StreamMessageRequest {
            update: Some(Req::Arbitration(p4v1::MasterArbitrationUpdate {
                device_id: DEVICE,
                election_id: eid(5),
                ..Default::default()
            })),
        };
        let (resp, mut send) =
            raw.call("StreamChannel", grpc_frame(&arb.encode_to_vec()), false).await;
        let r = tokio::time::timeout(Duration::from_secs(10), resp)
            .await
            .expect("stream answer within 10 s")
            .expect("stream answer");
        let mut body = r.into_body();
        let first = tokio::time::timeout(Duration::from_secs(10), body.data())
            .await
            .expect("arbitration answer within 10 s")
            .expect("a message")
            .expect("stream body");
        let m = p4v1::StreamMessageResponse::decode(&first[5..]).expect("a StreamMessageResponse");
        match m.update {
            Some(Resp::Arbitration(a)) => assert_eq!(a.status.unwrap().code, 0, "raw primary"),
            other => panic!("expected arbitration, got {other:?}"),
        }
        // A PacketOut announced as 1000 bytes, 10 of them sent.
        let mut part = vec![0u8];
        part.extend_from_slice(&1000u32.to_be_bytes());
        part.extend_from_slice(&[0x12, 0xe5, 0x07, 0x0a, 0xe2, 0x07, 1, 2, 3, 4]);
        send.send_data(part.into(), false).expect("part of a message");
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop(send);
        drop(body);
        drop(raw);
    });
    std::thread::sleep(Duration::from_millis(300));
    check("a primary that vanished mid-message", &mut c);
    // The switch still takes a primary (above the highest id seen) and writes.
    rt.block_on(async {
        let _s = open(&mut c, 6).await;
        let fwd = to(2);
        c.write(p4v1::WriteRequest {
            device_id: DEVICE,
            election_id: eid(6),
            updates: vec![l2(&info, [2, 0, 0, 0, 0x68, 0x77], "I.fwd", fwd)],
            ..Default::default()
        })
        .await
        .expect("the new primary writes");
        assert_eq!(entries(&mut c).await.len(), 3);
    });
    sw.assert_running();
}
