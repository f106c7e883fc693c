//! A StreamChannel message over the server's 16 MiB limit ends that
//! stream with RESOURCE_EXHAUSTED (not a bare end of stream), and the
//! server goes on: a new stream becomes primary and Capabilities answers.

mod common;

use std::time::Duration;

use common::*;
use sluice_p4rt::proto::p4::v1 as p4v1;
use tonic::Code;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_stream_message_is_resource_exhausted() {
    let srv = start(Some("rt.p4")).await;
    let mut c = client(srv.addr).await;
    let mut s = Stream::open(&mut c, 1).await;
    assert_eq!(s.next_arbitration().await.0, Code::Ok as i32, "primary");
    let big = p4v1::PacketOut {
        payload: vec![0; sluice_p4rt::server::MAX_MESSAGE + 1],
        metadata: vec![],
    };
    s.send(p4v1::stream_message_request::Update::Packet(big)).await;
    let end = tokio::time::timeout(Duration::from_secs(10), s.rx.message())
        .await
        .expect("the stream answers within 10 s");
    let status = end.expect_err("the stream ends with a status");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains("limit"), "{status:?}");

    let mut c2 = client(srv.addr).await;
    let mut s2 = Stream::open(&mut c2, 2).await;
    assert_eq!(s2.next_arbitration().await.0, Code::Ok as i32, "a new stream is primary");
    c2.capabilities(p4v1::CapabilitiesRequest::default())
        .await
        .expect("Capabilities still answers");
}
