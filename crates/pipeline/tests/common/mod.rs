//! Helpers shared by the pipeline's integration tests: literal frames,
//! ports, and flow-mods from ovs-ofctl text. (Each test file is its own
//! crate and uses a subset, hence the `dead_code` allowance.)
#![allow(dead_code)]

use sluice_ofp::error::ErrorCode;
use sluice_ofp::message::flow_mod_command as fc;
use sluice_ofp::ofctl::{parse_flow, Usage};
use sluice_ofp::port::Port;
use sluice_pipeline::Pipeline;

/// An Ethernet/IPv4/UDP frame with a correct IPv4 header checksum (UDP
/// checksum 0) carrying `payload`.
pub fn udp_frame(
    src_mac: u8,
    dst_mac: u8,
    src_ip: [u8; 4],
    dst_ip: [u8; 4],
    sport: u16,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 0, 0, dst_mac, 0, 0, 0, 0, 0, src_mac, 0x08, 0x00];
    let ip_len = 20 + 8 + payload.len();
    let mut ip = vec![0x45, 0, (ip_len >> 8) as u8, ip_len as u8, 0, 1, 0, 0, 64, 17, 0, 0];
    ip.extend_from_slice(&src_ip);
    ip.extend_from_slice(&dst_ip);
    let mut sum: u32 = ip.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let ck = !(sum as u16);
    ip[10] = (ck >> 8) as u8;
    ip[11] = ck as u8;
    f.extend_from_slice(&ip);
    let ul = 8 + payload.len();
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&(ul as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

/// Adds ports `ports` (MAC 00:..:00:N, name `pN`, link up) at time 0.
pub fn add_ports(p: &mut Pipeline, ports: &[u32]) {
    for &n in ports {
        p.ports_mut().add(
            Port {
                port_no: n,
                hw_addr: [0, 0, 0, 0, 0, n as u8],
                name: format!("p{n}"),
                ..Port::default()
            },
            0,
        );
    }
}

/// Applies a flow-mod written in ovs-ofctl syntax (panics on bad text).
pub fn flow(p: &mut Pipeline, cmd: u8, text: &str) -> Result<(), ErrorCode> {
    let usage = match cmd {
        fc::ADD => Usage::Add,
        fc::MODIFY | fc::MODIFY_STRICT => Usage::Modify,
        _ => Usage::Delete,
    };
    let spec = parse_flow(text, usage).unwrap_or_else(|e| panic!("{}", e.render(text)));
    p.flow_mod(&spec.to_flow_mod(cmd))
}

/// Adds a flow written in ovs-ofctl syntax (panics if refused).
pub fn add(p: &mut Pipeline, text: &str) {
    flow(p, fc::ADD, text).unwrap_or_else(|e| panic!("{text}: {e}"));
}

/// A compiler thread for tests of background code building (the pipeline
/// starts none; the daemon's is `sluice_datapath::compiler()`).
#[derive(Debug)]
pub struct ThreadCompiler {
    tx: std::sync::Mutex<std::sync::mpsc::Sender<std::sync::Arc<sluice_pipeline::codegen::Job>>>,
    start: std::time::Instant,
}

impl sluice_pipeline::codegen::Compiler for ThreadCompiler {
    fn submit(&self, job: std::sync::Arc<sluice_pipeline::codegen::Job>) {
        let sent = self.tx.lock().unwrap().send(job.clone());
        if sent.is_err() {
            job.run();
        }
    }
    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
}

/// The tests' compiler thread (one per test binary).
pub fn compiler() -> std::sync::Arc<dyn sluice_pipeline::codegen::Compiler> {
    static ONE: std::sync::OnceLock<std::sync::Arc<ThreadCompiler>> = std::sync::OnceLock::new();
    ONE.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<std::sync::Arc<sluice_pipeline::codegen::Job>>();
        std::thread::spawn(move || {
            while let Ok(job) = rx.recv() {
                job.run();
            }
        });
        std::sync::Arc::new(ThreadCompiler {
            tx: std::sync::Mutex::new(tx),
            start: std::time::Instant::now(),
        })
    })
    .clone()
}

/// Polls until no table waits for compiled code, at most `limit`.
pub fn wait_for_code(p: &mut Pipeline, limit: std::time::Duration) -> bool {
    let start = std::time::Instant::now();
    while p.code_pending() {
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    true
}
