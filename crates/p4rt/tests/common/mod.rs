//! An in-process P4Runtime server on an ephemeral loopback port, and
//! client helpers built on the generated tonic client.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prost::Message as _;
use sluice_p4::engines::Engine;
use sluice_p4rt::pipeline::Pipeline;
use sluice_p4rt::proto::google::rpc;
use sluice_p4rt::proto::p4::v1 as p4v1;
use sluice_p4rt::proto::p4::v1::p4_runtime_client::P4RuntimeClient;
use sluice_p4rt::{Device, DeviceConfig};
use tokio::sync::mpsc;
use tonic::transport::Channel;

pub const DEVICE: u64 = 1;
pub const CPU: u32 = 255;

pub fn program(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/p4").join(name)
}

pub struct Server {
    pub device: Arc<Device>,
    pub addr: std::net::SocketAddr,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// A server running `prog` (or nothing if `None`).
pub async fn start(prog: Option<&str>) -> Server {
    let (engine, pipeline) = match prog {
        Some(p) => {
            let path = program(p);
            let loaded = sluice_p4::parse::load_file(&path).expect("test program loads");
            let (engine, _) = Engine::load(&loaded, false).expect("test program runs");
            let src = std::fs::read(&path).unwrap();
            let pl = Pipeline::new(&loaded, src, &engine).expect("pipeline");
            (engine, Some(pl))
        }
        None => {
            let src = std::fs::read(program("rt.p4")).unwrap();
            let (_, e) = Pipeline::compile(&src, false).unwrap();
            (e, None)
        }
    };
    let cfg = DeviceConfig { device_id: DEVICE, cpu_port: Some(CPU), reference: false };
    let device = Arc::new(Device::new(cfg, Arc::new(Mutex::new(engine)), pipeline));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let d = device.clone();
    tokio::spawn(async move {
        sluice_p4rt::server::serve(d, listener, async {
            let _ = rx.await;
        })
        .await
        .unwrap();
    });
    Server { device, addr, _stop: stop }
}

pub async fn client(addr: std::net::SocketAddr) -> P4RuntimeClient<Channel> {
    P4RuntimeClient::connect(format!("http://{addr}")).await.expect("connect")
}

/// The P4Info of the device's pipeline.
pub async fn p4info(
    c: &mut P4RuntimeClient<Channel>,
) -> sluice_p4rt::proto::p4::config::v1::P4Info {
    let r = c
        .get_forwarding_pipeline_config(p4v1::GetForwardingPipelineConfigRequest {
            device_id: DEVICE,
            response_type: 0,
        })
        .await
        .unwrap()
        .into_inner();
    r.config.unwrap().p4info.unwrap()
}

/// A client that is `srv`'s primary (election id 1, default role): the
/// client and its stream, the arbitration answer already read.
pub async fn primary(srv: &Server) -> (P4RuntimeClient<Channel>, Stream) {
    let mut c = client(srv.addr).await;
    let mut s = Stream::open(&mut c, 1).await;
    assert_eq!(s.next_arbitration().await.0, tonic::Code::Ok as i32, "primary");
    (c, s)
}

pub fn eid(v: u128) -> Option<p4v1::Uint128> {
    Some(p4v1::Uint128 { high: (v >> 64) as u64, low: v as u64 })
}

/// A stream with arbitration sent: the sender and the responses.
pub struct Stream {
    pub tx: mpsc::Sender<p4v1::StreamMessageRequest>,
    pub rx: tonic::Streaming<p4v1::StreamMessageResponse>,
}

impl Stream {
    pub async fn open(c: &mut P4RuntimeClient<Channel>, election: u128) -> Stream {
        Stream::open_role(c, election, None).await
    }

    /// A stream that arbitrates in `role` (`None`: the default role).
    pub async fn open_role(
        c: &mut P4RuntimeClient<Channel>,
        election: u128,
        role: Option<p4v1::Role>,
    ) -> Stream {
        let (tx, rx) = mpsc::channel(16);
        let s = c
            .stream_channel(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await
            .expect("stream");
        let s = Stream { tx, rx: s.into_inner() };
        s.arbitrate_role(election, role).await;
        s
    }

    pub async fn arbitrate(&self, election: u128) {
        self.arbitrate_role(election, None).await;
    }

    pub async fn arbitrate_role(&self, election: u128, role: Option<p4v1::Role>) {
        let upd = p4v1::MasterArbitrationUpdate {
            device_id: DEVICE,
            election_id: eid(election),
            role,
            ..Default::default()
        };
        self.send(p4v1::stream_message_request::Update::Arbitration(upd)).await;
    }

    /// The status the server ended the stream with (5 s at most).
    pub async fn ended_with(&mut self) -> tonic::Code {
        tokio::time::timeout(Duration::from_secs(5), self.rx.message())
            .await
            .expect("the stream ends within 5 s")
            .expect_err("the stream ends with an error")
            .code()
    }

    pub async fn send(&self, u: p4v1::stream_message_request::Update) {
        self.tx.send(p4v1::StreamMessageRequest { update: Some(u) }).await.unwrap();
    }

    /// The next response (5 s at most).
    pub async fn next(&mut self) -> p4v1::stream_message_response::Update {
        let m = tokio::time::timeout(Duration::from_secs(5), self.rx.message())
            .await
            .expect("a stream response within 5 s")
            .expect("stream ok")
            .expect("stream open");
        m.update.expect("update set")
    }

    /// The next arbitration update's (status code, election id).
    pub async fn next_arbitration(&mut self) -> (i32, u128) {
        match self.next().await {
            p4v1::stream_message_response::Update::Arbitration(a) => {
                let e = a.election_id.map(|e| u128::from(e.high) << 64 | u128::from(e.low));
                (a.status.unwrap().code, e.unwrap_or(0))
            }
            other => panic!("expected an arbitration update, got {other:?}"),
        }
    }
}

/// The per-update canonical codes of a failed Write.
pub fn update_codes(s: &tonic::Status) -> Vec<(i32, String)> {
    assert_eq!(s.code(), tonic::Code::Unknown, "{s:?}");
    let st = rpc::Status::decode(s.details()).expect("google.rpc.Status in the details");
    st.details
        .iter()
        .map(|a| {
            assert_eq!(a.type_url, "type.googleapis.com/p4.v1.Error");
            let e = p4v1::Error::decode(a.value.as_slice()).unwrap();
            (e.canonical_code, e.message)
        })
        .collect()
}

pub fn write_req(election: u128, updates: Vec<p4v1::Update>) -> p4v1::WriteRequest {
    p4v1::WriteRequest {
        device_id: DEVICE,
        election_id: eid(election),
        updates,
        ..Default::default()
    }
}

pub fn update(ty: p4v1::update::Type, e: p4v1::TableEntry) -> p4v1::Update {
    p4v1::Update {
        r#type: ty as i32,
        entity: Some(p4v1::Entity { entity: Some(p4v1::entity::Entity::TableEntry(e)) }),
    }
}

pub fn read_req(e: p4v1::entity::Entity) -> p4v1::ReadRequest {
    p4v1::ReadRequest {
        device_id: DEVICE,
        entities: vec![p4v1::Entity { entity: Some(e) }],
        ..Default::default()
    }
}

pub async fn read_all(
    c: &mut P4RuntimeClient<Channel>,
    e: p4v1::entity::Entity,
) -> Result<Vec<p4v1::Entity>, tonic::Status> {
    let mut s = c.read(read_req(e)).await?.into_inner();
    let mut out = Vec::new();
    while let Some(r) = s.message().await? {
        out.extend(r.entities);
    }
    Ok(out)
}
