//! Write rate over P4Runtime: exact-match entries of the test program's
//! `l2` table written through `Write` on loopback (in-process server,
//! compiled engine), in batches of 1 and of 1000; prints entries/s.
//!
//! `cargo run --release -p sluice-p4rt --example write_rate [N]` (N
//! entries per run, default 10000).

use std::sync::{Arc, Mutex};
use std::time::Instant;

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
    for batch in [1u64, 1000] {
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
                ..Default::default()
            };
            c.write(req).await?;
            i += batch;
        }
        let dt = t0.elapsed().as_secs_f64();
        println!("batch {batch:>4}: {n} entries in {dt:.3} s = {:.0} entries/s", n as f64 / dt);
        // A graceful shutdown waits for open connections: close ours first.
        drop((c, tx, stream));
        let _ = stop.send(());
        server.await??;
    }
    Ok(())
}
