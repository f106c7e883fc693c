//! Write rate over P4Runtime: exact-match entries of the test program's
//! `l2` table written through `Write` on loopback (in-process server,
//! compiled engine), in batches of 1 and of 1000; prints entries/s.
//! Then the digest rate: N frames with distinct source MACs through the
//! test program `digest.p4` (each sends a digest), handed over in bursts
//! of 32 as the forwarding thread does, received by the primary as
//! `DigestList`s (each acked), with `max_list_size` 1 and 100; prints
//! digests/s from the first frame to the last digest received.
//!
//! Each batch size runs under CONTINUE_ON_ERROR and ROLLBACK_ON_ERROR
//! (the undo records' cost).
//!
//! `cargo run --release -p sluice-p4rt --example write_rate [N]` (N
//! entries and digests per run, default 10000).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sluice_p4rt::pipeline::Pipeline;
use sluice_p4rt::proto::p4::v1 as p4v1;
use sluice_p4rt::proto::p4::v1::p4_runtime_client::P4RuntimeClient;
use sluice_p4rt::{Device, DeviceConfig};

fn entry(table: u32, action: u32, i: u64) -> p4v1::Update {
    let e = p4v1::TableEntry {
        table_id: table,
        r#match: vec![p4v1::FieldMatch {
            field_id: 1,
            field_match_type: Some(p4v1::field_match::FieldMatchType::Exact(
                p4v1::field_match::Exact { value: (i + 1).to_be_bytes().to_vec() },
            )),
        }],
        action: Some(p4v1::TableAction {
            r#type: Some(p4v1::table_action::Type::Action(p4v1::Action {
                action_id: action,
                params: vec![p4v1::action::Param { param_id: 1, value: vec![1] }],
            })),
        }),
        ..Default::default()
    };
    p4v1::Update {
        r#type: p4v1::update::Type::Insert as i32,
        entity: Some(p4v1::Entity { entity: Some(p4v1::entity::Entity::TableEntry(e)) }),
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = std::env::args().nth(1).map(|s| s.parse()).transpose()?.unwrap_or(10_000);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/p4/rt.p4");
    let src = std::fs::read(&path)?;
    use p4v1::write_request::Atomicity;
    let modes = [Atomicity::ContinueOnError, Atomicity::RollbackOnError];
    for (batch, mode) in [1u64, 1000].into_iter().flat_map(|b| modes.map(|m| (b, m))) {
        let (pl, engine) = Pipeline::compile(&src, false).map_err(|e| e.message)?;
        let table = pl.info.tables.iter().find(|t| t.preamble.name == "I.l2").ok_or("no l2")?;
        let table_id = table.preamble.id;
        let action = pl.info.actions.iter().find(|a| a.preamble.name == "I.fwd").ok_or("no fwd")?;
        let action_id = action.preamble.id;
        let cfg = DeviceConfig { device_id: 0, cpu_port: None, reference: false };
        let device = Arc::new(Device::new(cfg, Arc::new(Mutex::new(engine)), Some(pl)));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (stop, rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(sluice_p4rt::server::serve(device, listener, async {
            let _ = rx.await;
        }));
        let mut c = P4RuntimeClient::connect(format!("http://{addr}")).await?;
        let (tx, reqs) = tokio::sync::mpsc::channel(4);
        let mut stream =
            c.stream_channel(tokio_stream::wrappers::ReceiverStream::new(reqs)).await?.into_inner();
        let upd = p4v1::MasterArbitrationUpdate {
            device_id: 0,
            election_id: Some(p4v1::Uint128 { high: 0, low: 1 }),
            ..Default::default()
        };
        let arb = p4v1::stream_message_request::Update::Arbitration(upd);
        tx.send(p4v1::StreamMessageRequest { update: Some(arb) }).await?;
        stream.message().await?;
        let t0 = Instant::now();
        let mut i = 0;
        while i < n {
            let updates = (i..(i + batch).min(n)).map(|k| entry(table_id, action_id, k)).collect();
            let req = p4v1::WriteRequest {
                device_id: 0,
                election_id: Some(p4v1::Uint128 { high: 0, low: 1 }),
                updates,
                atomicity: mode as i32,
                ..Default::default()
            };
            c.write(req).await?;
            i += batch;
        }
        let dt = t0.elapsed().as_secs_f64();
        let m = mode.as_str_name();
        println!(
            "batch {batch:>4} {m:<17}: {n} entries in {dt:.3} s = {:.0} entries/s",
            n as f64 / dt
        );
        // A graceful shutdown waits for open connections: close ours first.
        drop((c, tx, stream));
        let _ = stop.send(());
        server.await??;
    }
    for list in [1, 100] {
        digest_rate(n, list).await?;
    }
    Ok(())
}

fn arbitration() -> p4v1::StreamMessageRequest {
    let upd = p4v1::MasterArbitrationUpdate {
        device_id: 0,
        election_id: Some(p4v1::Uint128 { high: 0, low: 1 }),
        ..Default::default()
    };
    p4v1::StreamMessageRequest {
        update: Some(p4v1::stream_message_request::Update::Arbitration(upd)),
    }
}

/// N distinct digests through to the client with `max_list_size` `list`.
async fn digest_rate(n: u64, list: i32) -> Result<(), Box<dyn std::error::Error>> {
    use sluice_p4::target::Target as _;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/p4/digest.p4");
    let src = std::fs::read(&path)?;
    let (pl, engine) = Pipeline::compile(&src, false).map_err(|e| e.message)?;
    let id = pl.info.digests.first().ok_or("no digest in digest.p4")?.preamble.id;
    let cfg = DeviceConfig { device_id: 0, cpu_port: None, reference: false };
    let device = Arc::new(Device::new(cfg, Arc::new(Mutex::new(engine)), Some(pl)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(sluice_p4rt::server::serve(device.clone(), listener, async {
        let _ = rx.await;
    }));
    let mut c = P4RuntimeClient::connect(format!("http://{addr}")).await?;
    let (tx, reqs) = tokio::sync::mpsc::channel(1024);
    let mut stream =
        c.stream_channel(tokio_stream::wrappers::ReceiverStream::new(reqs)).await?.into_inner();
    tx.send(arbitration()).await?;
    stream.message().await?;
    let config = p4v1::digest_entry::Config {
        max_timeout_ns: 1_000_000,
        max_list_size: list,
        ack_timeout_ns: 1_000_000_000,
    };
    let e = p4v1::DigestEntry { digest_id: id, config: Some(config) };
    let req = p4v1::WriteRequest {
        device_id: 0,
        election_id: Some(p4v1::Uint128 { high: 0, low: 1 }),
        updates: vec![p4v1::Update {
            r#type: p4v1::update::Type::Insert as i32,
            entity: Some(p4v1::Entity { entity: Some(p4v1::entity::Entity::DigestEntry(e)) }),
        }],
        ..Default::default()
    };
    c.write(req).await?;
    // The forwarding thread's part, on a thread of its own.
    let t0 = Instant::now();
    let dev = device.clone();
    let producer = std::thread::spawn(move || -> Result<Duration, String> {
        let mut f = vec![0xffu8; 6];
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&[0x88, 0xb5, 0, 0]);
        for burst in (0..n).collect::<Vec<_>>().chunks(32) {
            let mut engine = sluice_p4rt::device::lock(&dev.engine);
            for i in burst {
                f[6..12].copy_from_slice(&(0x0200_0000_0000 | i).to_be_bytes()[2..]);
                engine.packet(1, &f).map_err(|e| e.to_string())?;
            }
            let ds = engine.take_digests();
            drop(engine);
            dev.hand_over_digests(ds);
        }
        Ok(t0.elapsed())
    });
    let mut got = 0u64;
    let mut last = t0;
    while got < n {
        match tokio::time::timeout(Duration::from_secs(2), stream.message()).await {
            Ok(Ok(Some(m))) => {
                if let Some(p4v1::stream_message_response::Update::Digest(l)) = m.update {
                    got += l.data.len() as u64;
                    last = Instant::now();
                    let a = p4v1::DigestListAck { digest_id: l.digest_id, list_id: l.list_id };
                    let ack = p4v1::stream_message_request::Update::DigestAck(a);
                    tx.send(p4v1::StreamMessageRequest { update: Some(ack) }).await?;
                }
            }
            Ok(Ok(None)) | Ok(Err(_)) => break,
            Err(_) => break, // 2 s without a list: the rest were dropped
        }
    }
    let fed = producer.join().map_err(|_| "the producer panicked")??;
    let dt = (last - t0).as_secs_f64();
    let counts = device.digest_counts();
    println!(
        "digests, max_list_size {list:>3}: {got} of {n} received in {dt:.3} s = {:.0} digests/s \
         (frames fed in {:.3} s; lists dropped {}, digests dropped {})",
        got as f64 / dt,
        fed.as_secs_f64(),
        counts.lists_dropped,
        counts.digests_dropped
    );
    drop((c, tx, stream));
    let _ = stop.send(());
    server.await??;
    Ok(())
}
