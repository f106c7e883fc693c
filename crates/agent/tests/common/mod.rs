//! Shared pieces of the agent's integration tests: a real reference
//! pipeline behind the agent, and a small OpenFlow controller peer built on
//! tokio and sluice-ofp. Every wait is bounded.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sluice_agent::{Agent, AgentConfig, AgentEvent, ConnId, Switch, Target};
use sluice_ofp::action::Action;
use sluice_ofp::consts::{port_no, OFPCML_NO_BUFFER, OFP_NO_BUFFER};
use sluice_ofp::instruction::Instruction;
use sluice_ofp::message::{frame, FlowMod, Hello, Message};
use sluice_ofp::port::Port;
use sluice_pipeline::{Config, Outgoing, Pipeline, Tx};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

pub const STEP: Duration = Duration::from_secs(5);

/// Logs to the test output when `RUST_LOG` is set.
pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// A pipeline with ports 1..=n.
pub fn pipeline(n: u32) -> Arc<Mutex<Pipeline>> {
    let mut p = Pipeline::new(Config { datapath_id: 0x5111_ce00_0000_0001, ..Config::default() });
    for i in 1..=n {
        let _ = p.ports_mut().add(port(i), 0);
    }
    Arc::new(Mutex::new(p))
}

pub fn port(i: u32) -> Port {
    Port {
        port_no: i,
        hw_addr: [0x02, 0, 0, 0, 0, i as u8],
        name: format!("p{i}"),
        curr_speed: 10_000_000,
        max_speed: 10_000_000,
        ..Port::default()
    }
}

/// The reference pipeline behind a mutex shared with whoever forwards
/// packets; PACKET_OUT frames go to `tx`. (The agent itself knows no
/// engine: this adapter is the tests'.)
pub struct PipelineSwitch {
    pipeline: Arc<Mutex<Pipeline>>,
    tx: SendTx,
}

/// A [`Tx`] that can move to the agent's task.
pub type SendTx = Box<dyn Tx + Send>;

/// A transmit sink that discards frames.
pub fn null_tx() -> SendTx {
    Box::new(|_port: u32, _queue: Option<u32>, _frame: &[u8]| {})
}

impl PipelineSwitch {
    pub fn new(pipeline: Arc<Mutex<Pipeline>>, tx: SendTx) -> Self {
        PipelineSwitch { pipeline, tx }
    }
}

impl Switch for PipelineSwitch {
    fn handle(&mut self, _conn: ConnId, xid: u32, msg: &Message, raw: &[u8]) -> Vec<Outgoing> {
        let mut p = self.pipeline.lock().unwrap_or_else(|e| e.into_inner());
        p.handle(xid, msg, raw, &mut *self.tx)
    }

    fn take_async(&mut self) -> Vec<Message> {
        let mut p = self.pipeline.lock().unwrap_or_else(|e| e.into_inner());
        p.take_async()
    }
}

/// The reference pipeline plus a queue the test can push asynchronous
/// messages into (as the daemon does for port events).
pub struct TestSwitch {
    pub inner: PipelineSwitch,
    pub extra: Arc<Mutex<Vec<Message>>>,
}

impl TestSwitch {
    pub fn new(p: Arc<Mutex<Pipeline>>) -> (TestSwitch, Arc<Mutex<Vec<Message>>>) {
        let extra = Arc::new(Mutex::new(Vec::new()));
        (TestSwitch { inner: PipelineSwitch::new(p, null_tx()), extra: extra.clone() }, extra)
    }
}

impl Switch for TestSwitch {
    fn handle(&mut self, conn: ConnId, xid: u32, msg: &Message, raw: &[u8]) -> Vec<Outgoing> {
        self.inner.handle(conn, xid, msg, raw)
    }
    fn take_async(&mut self) -> Vec<Message> {
        let mut v = self.inner.take_async();
        v.append(&mut self.extra.lock().unwrap());
        v
    }
}

/// An Ethernet frame from `src` (last byte) to broadcast, padded to `len`.
pub fn frame_bytes(src: u8, len: usize) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&[0x02, 0, 0, 0, 0x99, src]);
    f.extend_from_slice(&[0x88, 0xb5]);
    f.resize(len.max(60), 0xab);
    f
}

/// Table-miss entry sending everything to the controller, unbuffered.
pub fn miss_to_controller() -> Message {
    Message::FlowMod(FlowMod {
        table_id: 0,
        command: 0,
        priority: 0,
        buffer_id: OFP_NO_BUFFER,
        out_port: port_no::ANY,
        out_group: sluice_ofp::consts::group_id::ANY,
        instructions: vec![Instruction::ApplyActions(vec![Action::Output {
            port: port_no::CONTROLLER,
            max_len: OFPCML_NO_BUFFER,
        }])],
        ..FlowMod::default()
    })
}

/// Put `n` frames through the pipeline on port 1 (each missing the table
/// if `miss_to_controller` is installed), then wake the agent.
pub fn inject(p: &Arc<Mutex<Pipeline>>, agent: &Agent, n: usize, len: usize) {
    {
        let mut p = p.lock().unwrap();
        let mut tx = |_: u32, _: Option<u32>, _: &[u8]| {};
        for i in 0..n {
            p.process(1, &frame_bytes(i as u8, len), &mut tx);
        }
    }
    agent.notifier().notify();
}

pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

#[derive(Debug, PartialEq, Eq)]
pub enum Rx {
    Msg(u32, Message),
    Eof,
    Timeout,
}

/// A controller's side of one OpenFlow connection.
pub struct Ctl {
    pub io: Box<dyn Io>,
    buf: Vec<u8>,
    /// Answer ECHO_REQUESTs automatically inside `recv`.
    pub auto_echo: bool,
}

impl Ctl {
    pub fn new(io: impl Io + 'static) -> Ctl {
        Ctl { io: Box::new(io), buf: Vec::new(), auto_echo: true }
    }

    pub async fn send(&mut self, xid: u32, m: &Message) {
        self.io.write_all(&m.encode(xid)).await.expect("write");
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.io.write_all(bytes).await.expect("write");
    }

    /// Next message within `wait`.
    pub async fn recv(&mut self, wait: Duration) -> Rx {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(Ok(n)) = frame(&self.buf) {
                let bytes: Vec<u8> = self.buf.drain(..n).collect();
                let (xid, m) = Message::parse(&bytes).expect("switch sent a bad message");
                if self.auto_echo {
                    if let Message::EchoRequest(d) = &m {
                        self.send(xid, &Message::EchoReply(d.clone())).await;
                        continue;
                    }
                }
                return Rx::Msg(xid, m);
            }
            let mut chunk = [0u8; 65536];
            match tokio::time::timeout_at(deadline, self.io.read(&mut chunk)).await {
                Err(_) => return Rx::Timeout,
                Ok(Ok(0)) | Ok(Err(_)) => return Rx::Eof,
                Ok(Ok(n)) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// Next message, which must come within [`STEP`].
    pub async fn expect(&mut self) -> (u32, Message) {
        match self.recv(STEP).await {
            Rx::Msg(x, m) => (x, m),
            other => panic!("expected a message, got {other:?}"),
        }
    }

    /// Skip asynchronous messages until a reply arrives.
    pub async fn expect_reply(&mut self) -> (u32, Message) {
        for _ in 0..10_000 {
            let (x, m) = self.expect().await;
            if !matches!(m, Message::PacketIn(_) | Message::PortStatus(_) | Message::FlowRemoved(_))
            {
                return (x, m);
            }
        }
        panic!("no reply among 10000 asynchronous messages");
    }

    /// Exchange HELLOs (the switch speaks first or concurrently).
    pub async fn handshake(&mut self) {
        self.send(1, &Message::Hello(Hello::with_versions(&[4]))).await;
        let (_, m) = self.expect().await;
        let Message::Hello(h) = m else { panic!("expected HELLO, got {m:?}") };
        assert_eq!(h.negotiate(4, &[4]), Some(4));
    }

    /// Request/response round trip.
    pub async fn call(&mut self, xid: u32, m: &Message) -> Message {
        self.send(xid, m).await;
        let (rx, reply) = self.expect_reply().await;
        assert_eq!(rx, xid, "reply xid for {reply:?}");
        reply
    }

    /// Drain everything that arrives within `wait`; return it.
    pub async fn drain(&mut self, wait: Duration) -> Vec<Message> {
        let mut v = Vec::new();
        for _ in 0..1_000_000 {
            match self.recv(wait).await {
                Rx::Msg(_, m) => v.push(m),
                _ => break,
            }
        }
        v
    }
}

/// Wait (bounded) for an event matching `pred`.
pub async fn wait_event(
    rx: &mut tokio::sync::broadcast::Receiver<AgentEvent>,
    pred: impl Fn(&AgentEvent) -> bool,
) -> AgentEvent {
    let deadline = tokio::time::Instant::now() + STEP * 2;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Ok(e)) if pred(&e) => return e,
            Ok(Ok(_)) | Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
            Ok(Err(e)) => panic!("event channel: {e}"),
            Err(_) => panic!("event not seen in time"),
        }
    }
}

/// Agent config for tests: fast timers, the given targets.
pub fn test_config(targets: &[String]) -> AgentConfig {
    AgentConfig {
        targets: targets.iter().map(|t| t.parse::<Target>().unwrap()).collect(),
        probe_interval: Duration::from_secs(10),
        backoff_min: Duration::from_millis(50),
        backoff_max: Duration::from_millis(400),
        connect_timeout: Duration::from_secs(2),
        async_poll: Duration::from_millis(20),
        ..AgentConfig::default()
    }
}

/// Poll `f` every 10 ms until it returns true or `wait` passes.
pub async fn eventually(wait: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + wait;
    while tokio::time::Instant::now() < deadline {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    f()
}
