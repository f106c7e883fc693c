//! The agent's active connection to Open vSwitch's `ovs-testcontroller`
//! (a MAC-learning controller; Debian package
//! `openvswitch-testcontroller`). FAILS if the program is missing.
//!
//! The controller must: negotiate 1.3, configure the switch, receive
//! PACKET_INs and answer with PACKET_OUTs (flooding, then unicast once it
//! has learned a MAC), which the reference pipeline transmits.

mod common;

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use sluice_agent::{Agent, AgentEvent};

/// Kills (by PID, through `Child`) and reaps the controller on drop.
struct Proc(Child, std::path::PathBuf);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn eth(dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x88, 0xb5]);
    f.resize(64, 0x5a);
    f
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn learning_controller_drives_the_pipeline() {
    init_tracing();
    let port = free_port();
    let rundir = std::env::temp_dir().join(format!("sluice-agent-testctl-{}", std::process::id()));
    std::fs::create_dir_all(&rundir).unwrap();
    let child = Command::new("ovs-testcontroller")
        .args(["-O", "OpenFlow13", &format!("ptcp:{port}:127.0.0.1")])
        .env("OVS_RUNDIR", &rundir)
        .env("OVS_LOGDIR", &rundir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("cannot run ovs-testcontroller (apt-get install openvswitch-testcontroller)");
    let _guard = Proc(child, rundir);

    let p = pipeline(3);
    let sent: Arc<Mutex<BTreeMap<u32, usize>>> = Arc::default();
    let s2 = sent.clone();
    let tx = Box::new(move |port: u32, _q: Option<u32>, _f: &[u8]| {
        *s2.lock().unwrap().entry(port).or_default() += 1;
    });
    let sw = PipelineSwitch::new(p.clone(), tx);
    let agent = Agent::start(test_config(&[format!("tcp:127.0.0.1:{port}")]), sw).await.unwrap();
    let mut ev = agent.subscribe();
    if agent.controllers_connected() == 0 {
        wait_event(&mut ev, |e| *e == AgentEvent::FirstControllerConnected).await;
    }

    let a = [0x02, 0, 0, 0, 0, 0xa];
    let b = [0x02, 0, 0, 0, 0, 0xb];
    // A broadcast from A on port 1: the controller floods it (ports 2, 3).
    // Repeat until the controller has set up its table-miss entry.
    let mut flooded = false;
    for _ in 0..50 {
        {
            let mut pl = p.lock().unwrap();
            let mut tx = |port: u32, _: Option<u32>, _: &[u8]| {
                *sent.lock().unwrap().entry(port).or_default() += 1;
            };
            pl.process(1, &eth([0xff; 6], a), &mut tx);
        }
        agent.notifier().notify();
        if eventually(Duration::from_millis(100), || {
            let s = sent.lock().unwrap();
            s.get(&2).is_some() && s.get(&3).is_some()
        })
        .await
        {
            flooded = true;
            break;
        }
    }
    assert!(flooded, "controller never flooded the broadcast: {:?}", sent.lock().unwrap());
    assert_eq!(sent.lock().unwrap().get(&1), None, "flooded back to the ingress port");

    // B answers A from port 2: the controller has learned A on port 1 and
    // sends it there only.
    sent.lock().unwrap().clear();
    {
        let mut pl = p.lock().unwrap();
        let mut tx = |port: u32, _: Option<u32>, _: &[u8]| {
            *sent.lock().unwrap().entry(port).or_default() += 1;
        };
        pl.process(2, &eth(a, b), &mut tx);
    }
    agent.notifier().notify();
    assert!(
        eventually(STEP, || sent.lock().unwrap().get(&1).is_some()).await,
        "unicast to the learned port never happened: {:?}",
        sent.lock().unwrap()
    );
    assert_eq!(sent.lock().unwrap().get(&3), None, "learned unicast was flooded");
    assert!(agent.stats().packet_in_sent >= 2);
    agent.shutdown().await;
}
