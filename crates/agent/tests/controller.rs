//! The agent against controllers written in the test (tokio + sluice-ofp)
//! over real loopback TCP connections, backed by the reference pipeline.

mod common;

use std::time::Duration;

use common::*;
use sluice_agent::{Agent, AgentEvent, FailMode, RateLimit};
use sluice_ofp::bundle::{ctrl_type, BundleCtrl};
use sluice_ofp::error::ErrorCode;
use sluice_ofp::message::{
    controller_role as role, AsyncConfig, ErrorMsg, FlowMod, Message, PortStatus, RoleMsg,
};
use sluice_ofp::multipart::{
    FlowStatsRequest, MultipartExperimenter, MultipartReplyBody, MultipartRequest,
    MultipartRequestBody, OFPMPF_REQ_MORE,
};
use tokio::net::TcpListener;

async fn controller_listener() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let t = format!("tcp:{}", l.local_addr().unwrap());
    (l, t)
}

async fn accept(l: &TcpListener) -> Ctl {
    let (s, _) =
        tokio::time::timeout(STEP, l.accept()).await.expect("agent did not connect").unwrap();
    let mut c = Ctl::new(s);
    c.handshake().await;
    c
}

fn error_code(m: &Message) -> Option<ErrorCode> {
    match m {
        Message::Error(ErrorMsg::Standard { code, .. }) => Some(*code),
        _ => None,
    }
}

fn role_req(r: u32, generation_id: u64) -> Message {
    Message::RoleRequest(RoleMsg { role: r, generation_id })
}

fn flow_stats_request() -> Message {
    Message::MultipartRequest(MultipartRequest {
        flags: 0,
        body: MultipartRequestBody::Flow(FlowStatsRequest {
            table_id: 0xff,
            out_port: sluice_ofp::consts::port_no::ANY,
            out_group: sluice_ofp::consts::group_id::ANY,
            cookie: 0,
            cookie_mask: 0,
            match_: Default::default(),
        }),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn features_and_barrier_ordering() {
    init_tracing();
    let (l, t) = controller_listener().await;
    let p = pipeline(2);
    let (sw, _) = TestSwitch::new(p.clone());
    let agent = Agent::start(test_config(&[t]), sw).await.unwrap();
    let mut c = accept(&l).await;
    let Message::FeaturesReply(f) = c.call(7, &Message::FeaturesRequest).await else { panic!() };
    assert_eq!(f.datapath_id, 0x5111_ce00_0000_0001);
    assert!(eventually(STEP, || agent.controllers_connected() == 1).await);

    // Four messages in one write: a good flow-mod, a bad one (table 0xff is
    // not a table for ADD), flow stats, barrier. The replies must come in
    // request order with the barrier reply last.
    let mut bytes = miss_to_controller().encode(1);
    let bad = Message::FlowMod(FlowMod { table_id: 0xff, ..FlowMod::default() });
    bytes.extend(bad.encode(2));
    bytes.extend(flow_stats_request().encode(3));
    bytes.extend(Message::BarrierRequest.encode(4));
    c.send_raw(&bytes).await;
    let (x, m) = c.expect_reply().await;
    assert_eq!(x, 2);
    assert!(error_code(&m).is_some(), "{m:?}");
    let (x, m) = c.expect_reply().await;
    assert_eq!(x, 3);
    let Message::MultipartReply(r) = m else { panic!("{m:?}") };
    let MultipartReplyBody::Flow(flows) = r.body else { panic!() };
    assert_eq!(flows.len(), 1, "the good flow-mod was applied before the stats request");
    let (x, m) = c.expect_reply().await;
    assert_eq!((x, m), (4, Message::BarrierReply));

    // Echo is answered with the same data and xid.
    assert_eq!(
        c.call(9, &Message::EchoRequest(vec![1, 2, 3])).await,
        Message::EchoReply(vec![1, 2, 3])
    );
    // An undecodable message (a FEATURES_REQUEST with a body) gets
    // BAD_LEN, in order, and the connection survives.
    let mut bad = Message::FeaturesRequest.encode(11);
    bad.extend_from_slice(&[0; 4]);
    bad[3] = 12;
    c.send_raw(&bad).await;
    let (x, m) = c.expect_reply().await;
    assert_eq!((x, error_code(&m)), (11, Some(ErrorCode::BRC_BAD_LEN)));
    assert_eq!(c.call(12, &Message::BarrierRequest).await, Message::BarrierReply);
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multipart_request_reassembly() {
    init_tracing();
    let (l, t) = controller_listener().await;
    let (sw, _) = TestSwitch::new(pipeline(1));
    let agent = Agent::start(test_config(&[t]), sw).await.unwrap();
    let mut c = accept(&l).await;
    let part = |flags, data: &[u8]| {
        Message::MultipartRequest(MultipartRequest {
            flags,
            body: MultipartRequestBody::Experimenter(MultipartExperimenter {
                experimenter: 0x00ab_cdef,
                exp_type: 1,
                data: data.to_vec(),
            }),
        })
    };
    // Two parts: nothing may be answered until the last one.
    c.send(20, &part(OFPMPF_REQ_MORE, &[1, 2, 3, 4])).await;
    assert_eq!(c.call(21, &Message::BarrierRequest).await, Message::BarrierReply);
    c.send(20, &part(0, &[5, 6, 7, 8])).await;
    let (x, m) = c.expect_reply().await;
    assert_eq!(x, 20);
    // The reference pipeline knows no such experimenter: one answer for the
    // whole reassembled request.
    assert!(matches!(m, Message::Error(_) | Message::MultipartReply(_)), "{m:?}");
    assert_eq!(c.call(22, &Message::BarrierRequest).await, Message::BarrierReply);

    // A different type under a pending xid is BAD_MULTIPART.
    c.send(30, &part(OFPMPF_REQ_MORE, &[1])).await;
    c.send(30, &flow_stats_request()).await;
    let (x, m) = c.expect_reply().await;
    assert_eq!((x, error_code(&m)), (30, Some(ErrorCode::BRC_BAD_MULTIPART)));
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_generation_ids_and_slave_rejection() {
    init_tracing();
    let (la, ta) = controller_listener().await;
    let (lb, tb) = controller_listener().await;
    let (sw, _) = TestSwitch::new(pipeline(2));
    let agent = Agent::start(test_config(&[ta.clone(), tb.clone()]), sw).await.unwrap();
    let mut a = accept(&la).await;
    let mut b = accept(&lb).await;

    assert_eq!(
        a.call(1, &role_req(role::NOCHANGE, 0)).await,
        Message::RoleReply(RoleMsg { role: role::EQUAL, generation_id: 0 })
    );
    assert_eq!(
        a.call(2, &role_req(role::MASTER, 10)).await,
        Message::RoleReply(RoleMsg { role: role::MASTER, generation_id: 10 })
    );
    // Stale generation id.
    let m = b.call(3, &role_req(role::MASTER, 9)).await;
    assert_eq!(error_code(&m), Some(ErrorCode::RRFC_STALE));
    // Bad role value.
    let m = b.call(4, &role_req(7, 11)).await;
    assert_eq!(error_code(&m), Some(ErrorCode::RRFC_BAD_ROLE));
    // b becomes master: a is demoted to slave.
    assert_eq!(
        b.call(5, &role_req(role::MASTER, 11)).await,
        Message::RoleReply(RoleMsg { role: role::MASTER, generation_id: 11 })
    );
    assert_eq!(
        a.call(6, &role_req(role::NOCHANGE, 0)).await,
        Message::RoleReply(RoleMsg { role: role::SLAVE, generation_id: 11 })
    );
    // Connection ids follow connect order, which races between the two
    // targets: look each connection up by the listener it reached.
    let role_of = |t: &str| {
        let addr = t.strip_prefix("tcp:").unwrap().parse().unwrap();
        let conns = agent.connections();
        let c = conns
            .iter()
            .find(|c| c.target.addr.inet() == Some(addr))
            .expect("connection for target");
        c.role
    };
    assert_eq!((role_of(&ta), role_of(&tb)), (role::SLAVE, role::MASTER));

    // The slave may not write, but may read.
    for (xid, m) in [
        (7, miss_to_controller()),
        (8, Message::PacketOut(Default::default())),
        (9, Message::TableMod(Default::default())),
        (10, Message::PortMod(Default::default())),
        (11, Message::MeterMod(Default::default())),
        (19, bundle_open()),
    ] {
        let r = a.call(xid, &m).await;
        assert_eq!(error_code(&r), Some(ErrorCode::BRC_IS_SLAVE), "{m:?}");
    }
    assert!(matches!(a.call(12, &flow_stats_request()).await, Message::MultipartReply(_)));
    assert!(matches!(a.call(13, &Message::FeaturesRequest).await, Message::FeaturesReply(_)));
    // The master may write.
    b.send(14, &miss_to_controller()).await;
    assert_eq!(b.call(15, &Message::BarrierRequest).await, Message::BarrierReply);
    // EQUAL ignores generation ids and can write again.
    assert_eq!(
        a.call(16, &role_req(role::EQUAL, 0)).await,
        Message::RoleReply(RoleMsg { role: role::EQUAL, generation_id: 11 })
    );
    a.send(17, &miss_to_controller()).await;
    assert_eq!(a.call(18, &Message::BarrierRequest).await, Message::BarrierReply);
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_messages_filtered_per_role() {
    init_tracing();
    let (la, ta) = controller_listener().await;
    let (lb, tb) = controller_listener().await;
    let p = pipeline(2);
    let (sw, extra) = TestSwitch::new(p.clone());
    let agent = Agent::start(test_config(&[ta.clone(), tb.clone()]), sw).await.unwrap();
    let mut a = accept(&la).await;
    let mut b = accept(&lb).await;
    assert!(matches!(a.call(1, &role_req(role::MASTER, 1)).await, Message::RoleReply(_)));
    assert!(matches!(b.call(1, &role_req(role::SLAVE, 1)).await, Message::RoleReply(_)));
    a.send(2, &miss_to_controller()).await;
    assert_eq!(a.call(20, &Message::BarrierRequest).await, Message::BarrierReply);

    // Default filters: master gets PACKET_IN and PORT_STATUS, slave only
    // PORT_STATUS.
    inject(&p, &agent, 1, 100);
    extra.lock().unwrap().push(Message::PortStatus(PortStatus { reason: 2, desc: port(2) }));
    agent.notifier().notify();
    let got_a = a.drain(Duration::from_millis(500)).await;
    let got_b = b.drain(Duration::from_millis(500)).await;
    assert!(
        matches!(got_a.as_slice(), [Message::PacketIn(_), Message::PortStatus(_)]),
        "{got_a:?}"
    );
    assert!(matches!(got_b.as_slice(), [Message::PortStatus(_)]), "{got_b:?}");

    // The slave asks for NO_MATCH packet-ins and no port status.
    let cfg =
        AsyncConfig { packet_in_mask: [0, 1], port_status_mask: [0, 0], flow_removed_mask: [0, 0] };
    b.send(3, &Message::SetAsync(cfg)).await;
    assert_eq!(b.call(4, &Message::GetAsyncRequest).await, Message::GetAsyncReply(cfg));
    inject(&p, &agent, 1, 100);
    extra.lock().unwrap().push(Message::PortStatus(PortStatus { reason: 2, desc: port(2) }));
    agent.notifier().notify();
    let got_b = b.drain(Duration::from_millis(500)).await;
    assert!(matches!(got_b.as_slice(), [Message::PacketIn(_)]), "{got_b:?}");
    // The master's defaults are unchanged.
    let got_a = a.drain(Duration::from_millis(500)).await;
    assert_eq!(got_a.len(), 2, "{got_a:?}");
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inactivity_probe_drops_silent_controller() {
    init_tracing();
    let (l, t) = controller_listener().await;
    let (sw, _) = TestSwitch::new(pipeline(1));
    let mut cfg = test_config(&[t]);
    cfg.probe_interval = Duration::from_millis(300);
    cfg.backoff_min = Duration::from_secs(30);
    let agent = Agent::start(cfg, sw).await.unwrap();
    let mut c = accept(&l).await;
    c.auto_echo = false;
    // Silence: the switch probes, then hangs up.
    let mut saw_probe = false;
    let mut eof = false;
    for _ in 0..10 {
        match c.recv(Duration::from_secs(3)).await {
            Rx::Msg(_, Message::EchoRequest(_)) => saw_probe = true,
            Rx::Msg(_, m) => panic!("unexpected {m:?}"),
            Rx::Eof => {
                eof = true;
                break;
            }
            Rx::Timeout => break,
        }
    }
    assert!(saw_probe, "no ECHO_REQUEST");
    assert!(eof, "connection not closed");
    assert_eq!(agent.stats().probe_timeouts, 1);

    // A controller that answers echoes stays connected through several
    // probe intervals.
    let (l2, t2) = controller_listener().await;
    let (sw, _) = TestSwitch::new(pipeline(1));
    let mut cfg = test_config(&[t2]);
    cfg.probe_interval = Duration::from_millis(200);
    let agent2 = Agent::start(cfg, sw).await.unwrap();
    let mut c2 = accept(&l2).await;
    assert_eq!(c2.recv(Duration::from_millis(1500)).await, Rx::Timeout);
    assert_eq!(agent2.stats().probe_timeouts, 0);
    assert_eq!(agent2.controllers_connected(), 1);
    agent.shutdown().await;
    agent2.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_with_backoff_and_fail_mode_events() {
    init_tracing();
    let (l, t) = controller_listener().await;
    let addr = l.local_addr().unwrap();
    let (sw, _) = TestSwitch::new(pipeline(1));
    let mut cfg = test_config(&[t]);
    cfg.fail_mode = FailMode::Standalone;
    let agent = Agent::start(cfg, sw).await.unwrap();
    let mut ev = agent.subscribe();
    assert_eq!(agent.controllers_connected(), 0);
    assert!(agent.in_fail_mode());
    let c = accept(&l).await;
    wait_event(&mut ev, |e| *e == AgentEvent::FirstControllerConnected).await;
    assert_eq!(agent.controllers_connected(), 1);

    // The controller goes away (listener too).
    drop(c);
    drop(l);
    wait_event(&mut ev, |e| {
        *e == AgentEvent::AllControllersLost { fail_mode: FailMode::Standalone }
    })
    .await;
    assert!(agent.in_fail_mode());
    let before = agent.stats().connect_attempts;
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let attempts = agent.stats().connect_attempts - before;
    // Backoff 50, 100, 200, 400, 400, ... ms: about 6 attempts in 1.6 s;
    // without backoff (50 ms) it would be about 30.
    assert!((3..=10).contains(&attempts), "{attempts} attempts");

    // The controller comes back on the same port: the agent reconnects.
    let l = TcpListener::bind(addr).await.unwrap();
    let mut c = accept(&l).await;
    wait_event(&mut ev, |e| *e == AgentEvent::FirstControllerConnected).await;
    assert!(matches!(c.call(1, &Message::FeaturesRequest).await, Message::FeaturesReply(_)));
    assert!(!agent.in_fail_mode());
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packet_in_rate_limit() {
    init_tracing();
    let (l, t) = controller_listener().await;
    let p = pipeline(1);
    let (sw, _) = TestSwitch::new(p.clone());
    let mut cfg = test_config(&[t]);
    cfg.packet_in_limit = RateLimit { rate: 5, burst: 10 };
    let agent = Agent::start(cfg, sw).await.unwrap();
    let mut c = accept(&l).await;
    c.send(1, &miss_to_controller()).await;
    assert_eq!(c.call(2, &Message::BarrierRequest).await, Message::BarrierReply);
    inject(&p, &agent, 200, 64);
    let got = c.drain(Duration::from_millis(500)).await;
    let pins = got.iter().filter(|m| matches!(m, Message::PacketIn(_))).count();
    // A burst of 10, plus a few tokens refilled at 5/s while we ran.
    assert!((10..=20).contains(&pins), "{pins} packet-ins");
    let s = agent.stats();
    assert_eq!(s.packet_in_sent, pins as u64);
    assert_eq!(s.packet_in_dropped_rate, 200 - pins as u64);
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stuck_controller_does_not_block_the_switch() {
    init_tracing();
    let (la, ta) = controller_listener().await;
    let (lb, tb) = controller_listener().await;
    let p = pipeline(1);
    let (sw, extra) = TestSwitch::new(p.clone());
    let mut cfg = test_config(&[ta.clone(), tb.clone()]);
    cfg.packet_in_limit = RateLimit { rate: 0, burst: 0 };
    cfg.queue_len = 16;
    let agent = Agent::start(cfg, sw).await.unwrap();
    let mut stuck = accept(&la).await;
    let mut good = accept(&lb).await;
    assert!(matches!(good.call(1, &role_req(role::MASTER, 1)).await, Message::RoleReply(_)));
    // The healthy controller only wants port status from now on.
    let cfg =
        AsyncConfig { packet_in_mask: [0, 0], port_status_mask: [7, 7], flow_removed_mask: [0, 0] };
    good.send(2, &Message::SetAsync(cfg)).await;
    good.send(3, &miss_to_controller()).await;
    assert_eq!(good.call(4, &Message::BarrierRequest).await, Message::BarrierReply);
    // `stuck` stays EQUAL (gets packet-ins) and stops reading now.
    assert_eq!(
        stuck.call(5, &role_req(role::NOCHANGE, 0)).await,
        Message::RoleReply(RoleMsg { role: role::EQUAL, generation_id: 1 })
    );

    // Flood 1500-byte packet-ins until the stuck connection's queue has
    // overflowed; the datapath (inject) never waits.
    let mut rounds = 0;
    while agent.stats().packet_in_dropped_queue == 0 && rounds < 400 {
        inject(&p, &agent, 200, 1500);
        tokio::time::sleep(Duration::from_millis(5)).await;
        rounds += 1;
    }
    let s = agent.stats();
    assert!(s.packet_in_dropped_queue > 0, "{s:?}");
    // Droppable messages do not cost the connection.
    assert_eq!(agent.connections().len(), 2);
    assert_eq!(s.overflow_disconnects, 0);
    // The other controller is served promptly.
    assert_eq!(good.call(6, &Message::BarrierRequest).await, Message::BarrierReply);
    assert!(matches!(good.call(7, &Message::FeaturesRequest).await, Message::FeaturesReply(_)));

    // Packet-ins leave the last quarter of the queue to other messages;
    // once non-droppable ones (port status) fill that too, the stuck
    // controller is disconnected.
    let mut ev = agent.subscribe();
    let mut sent = 0;
    let mut reason = None;
    while reason.is_none() && sent < 2000 {
        inject(&p, &agent, 50, 1500);
        extra.lock().unwrap().push(Message::PortStatus(PortStatus { reason: 2, desc: port(1) }));
        agent.notifier().notify();
        sent += 1;
        if let Ok(Ok(AgentEvent::Disconnected { reason: r, .. })) =
            tokio::time::timeout(Duration::from_millis(20), ev.recv()).await
        {
            reason = Some(r);
        }
    }
    let reason = reason.expect("stuck controller not disconnected");
    assert!(reason.contains("overflow"), "{reason}");
    assert_eq!(agent.stats().overflow_disconnects, 1);
    assert_eq!(agent.connections().len(), 1);
    // The healthy controller got every port status and still works.
    let got = good.drain(Duration::from_millis(500)).await;
    assert_eq!(got.iter().filter(|m| matches!(m, Message::PortStatus(_))).count(), sent, "{got:?}");
    assert_eq!(good.call(8, &Message::BarrierRequest).await, Message::BarrierReply);
    drop(stuck);
    agent.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_version_negotiation() {
    init_tracing();
    let (sw, _) = TestSwitch::new(pipeline(1));
    let agent = Agent::start(test_config(&["ptcp:0:127.0.0.1".to_string()]), sw).await.unwrap();
    let addr = agent.listeners()[0].1.inet().expect("a TCP listener");

    // OpenFlow 1.0 only (header version 1, no bitmap): incompatible.
    let mut c = Ctl::new(tokio::net::TcpStream::connect(addr).await.unwrap());
    c.send_raw(&[1, 0, 0, 8, 0, 0, 0, 9]).await;
    let (_, m) = c.expect().await;
    assert!(matches!(m, Message::Hello(_)));
    let (x, m) = c.expect().await;
    assert_eq!((x, error_code(&m)), (9, Some(ErrorCode::HFC_INCOMPATIBLE)));
    assert_eq!(c.recv(STEP).await, Rx::Eof);

    // A version-6 header with a bitmap of {1, 4}: negotiates 1.3.
    let mut c = Ctl::new(tokio::net::TcpStream::connect(addr).await.unwrap());
    let mut hello = Message::Hello(sluice_ofp::message::Hello::with_versions(&[1, 4])).encode(3);
    hello[0] = 6;
    c.send_raw(&hello).await;
    assert!(matches!(c.expect().await.1, Message::Hello(_)));
    assert!(matches!(c.call(4, &Message::FeaturesRequest).await, Message::FeaturesReply(_)));

    // A bitmap without 1.3 fails even with a 1.3 header.
    let mut c = Ctl::new(tokio::net::TcpStream::connect(addr).await.unwrap());
    c.send(5, &Message::Hello(sluice_ofp::message::Hello::with_versions(&[1, 5]))).await;
    assert!(matches!(c.expect().await.1, Message::Hello(_)));
    let (_, m) = c.expect().await;
    assert_eq!(error_code(&m), Some(ErrorCode::HFC_INCOMPATIBLE));

    // Not a HELLO first.
    let mut c = Ctl::new(tokio::net::TcpStream::connect(addr).await.unwrap());
    c.send(6, &Message::FeaturesRequest).await;
    assert!(matches!(c.expect().await.1, Message::Hello(_)));
    let (_, m) = c.expect().await;
    assert_eq!(error_code(&m).map(|e| e.ty), Some(0));
    assert_eq!(c.recv(STEP).await, Rx::Eof);
    // Passive connections do not count as controllers by default.
    assert_eq!(agent.controllers_connected(), 0);
    agent.shutdown().await;
}

/// A switch whose datapath is another thread feeding an [`AsyncQueue`].
struct QueueSwitch(sluice_agent::AsyncQueue);

impl sluice_agent::Switch for QueueSwitch {
    fn handle(
        &mut self,
        _c: u64,
        xid: u32,
        msg: &Message,
        _raw: &[u8],
    ) -> Vec<sluice_pipeline::Outgoing> {
        match msg {
            Message::BarrierRequest => {
                vec![sluice_pipeline::Outgoing { xid, msg: Message::BarrierReply }]
            }
            _ => vec![],
        }
    }
    fn take_async(&mut self) -> Vec<Message> {
        self.0.drain()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datapath_thread_never_waits_for_a_stuck_controller() {
    init_tracing();
    let (l, t) = controller_listener().await;
    let wake = sluice_agent::AsyncNotifier::new();
    let (sender, queue) = sluice_agent::async_queue(4096, wake.clone());
    let mut cfg = test_config(&[t]);
    cfg.packet_in_limit = RateLimit { rate: 0, burst: 0 };
    cfg.queue_len = 64;
    let agent = Agent::start_with_notifier(cfg, QueueSwitch(queue), wake).await.unwrap();
    let mut c = accept(&l).await;
    assert_eq!(c.call(1, &Message::BarrierRequest).await, Message::BarrierReply);
    // The controller now stops reading. The datapath thread sends 50 000
    // packet-ins of 1000 bytes (far more than the socket buffers hold).
    const N: u64 = 50_000;
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let s = sender.clone();
    std::thread::spawn(move || {
        let pin = sluice_ofp::message::PacketIn {
            buffer_id: sluice_ofp::consts::OFP_NO_BUFFER,
            total_len: 1000,
            data: vec![0x55; 1000],
            ..Default::default()
        };
        for _ in 0..N {
            s.send(Message::PacketIn(pin.clone()));
        }
        let _ = done_tx.send(());
    });
    let finished =
        tokio::task::spawn_blocking(move || done_rx.recv_timeout(Duration::from_secs(60)).is_ok());
    assert!(finished.await.unwrap(), "datapath thread blocked");
    // Every packet-in is accounted for: queued to the connection, or
    // dropped (datapath queue full, connection queue full).
    let accounted = || {
        let st = agent.stats();
        st.packet_in_sent
            + st.packet_in_dropped_queue
            + st.packet_in_dropped_rate
            + sender.dropped_packet_ins()
    };
    assert!(
        eventually(STEP, || accounted() == N).await,
        "{:?} + {}",
        agent.stats(),
        sender.dropped_packet_ins()
    );
    let st = agent.stats();
    assert!(st.packet_in_dropped_queue + sender.dropped_packet_ins() > 0, "{st:?}");
    assert_eq!(st.packet_in_dropped_rate, 0);
    assert_eq!(sender.lost_other(), 0);
    assert_eq!(agent.connections().len(), 1, "packet-ins alone must not disconnect");
    drop(c);
    agent.shutdown().await;
}

/// An ONF-extension bundle OPEN_REQUEST (a slave may not open bundles).
fn bundle_open() -> Message {
    BundleCtrl {
        bundle_id: 1,
        ctrl_type: ctrl_type::OPEN_REQUEST,
        flags: 0,
        properties: Vec::new(),
    }
    .to_message()
}

/// A `punix:` listener serves connections exactly as a TCP one: HELLO,
/// requests, roles shared with TCP peers; its socket file is created with
/// mode 0660, a second agent on the same path is refused, and the file is
/// gone after shutdown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unix_listener_serves_like_tcp() {
    use sluice_agent::{AgentError, Endpoint};
    use std::os::unix::fs::PermissionsExt;
    init_tracing();
    let dir = std::env::temp_dir().join(format!("sluice-agent-punix-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sw.mgmt");
    let targets = [format!("punix:{}", path.display()), "ptcp:0:127.0.0.1".to_string()];
    let (sw, _) = TestSwitch::new(pipeline(2));
    let agent = Agent::start(test_config(&targets), sw).await.unwrap();
    assert_eq!(agent.listeners()[0].1, Endpoint::Unix(path.clone()));
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o660);

    let mut u = Ctl::new(tokio::net::UnixStream::connect(&path).await.unwrap());
    u.handshake().await;
    assert!(matches!(u.call(1, &Message::FeaturesRequest).await, Message::FeaturesReply(_)));
    let tcp = agent.listeners()[1].1.inet().expect("a TCP listener");
    let mut t = Ctl::new(tokio::net::TcpStream::connect(tcp).await.unwrap());
    t.handshake().await;
    assert_eq!(
        u.call(2, &role_req(role::MASTER, 1)).await,
        Message::RoleReply(RoleMsg { role: role::MASTER, generation_id: 1 })
    );
    assert_eq!(
        t.call(3, &role_req(role::MASTER, 2)).await,
        Message::RoleReply(RoleMsg { role: role::MASTER, generation_id: 2 })
    );
    assert_eq!(
        u.call(4, &role_req(role::NOCHANGE, 0)).await,
        Message::RoleReply(RoleMsg { role: role::SLAVE, generation_id: 2 })
    );
    let m = u.call(5, &Message::FlowMod(FlowMod::default())).await;
    assert_eq!(error_code(&m), Some(ErrorCode::BRC_IS_SLAVE));
    let conns = agent.connections();
    let c = conns.iter().find(|c| matches!(c.peer, Endpoint::Unix(_))).expect("unix conn");
    assert_eq!(c.peer, Endpoint::Unix(path.clone()));
    assert!(!c.controller, "passive connections are not controllers by default");

    let (sw2, _) = TestSwitch::new(pipeline(1));
    let second = Agent::start(test_config(&targets[..1]), sw2).await;
    assert!(matches!(second, Err(AgentError::InUse { .. })), "{:?}", second.err());
    assert!(path.exists(), "the refused agent removed the live socket");

    drop((u, t));
    agent.shutdown().await;
    assert!(!path.exists(), "the socket file outlived the agent");
    let _ = std::fs::remove_dir_all(&dir);
}
