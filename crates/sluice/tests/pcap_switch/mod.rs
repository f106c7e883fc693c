//! `sluice run` on two pcap ports with a passive OpenFlow listener on a free
//! local port: a real switch for channel tests that needs no root and no
//! namespace. Shared by the tests that talk to the daemon over TCP.
//!
//! The switch is the test's child, stopped by PID on drop (SIGTERM, then
//! SIGKILL) with its scratch directory removed; every wait is bounded.
#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Whether `tool` is on `PATH`.
pub fn which(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
}

/// A local TCP port nobody listened on a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// An empty pcap file (libpcap format, Ethernet link type).
pub fn write_empty_pcap(path: &Path) {
    let f = std::fs::File::create(path).expect("create pcap");
    pcap_file::pcap::PcapWriter::new(f).expect("write pcap header");
}

/// A running `sluice run` (dpid 0x5a, fail mode secure, one worker) with
/// ports 1 and 2 on `inN.pcap` / `outN.pcap` in its scratch directory.
pub struct PcapSwitch {
    child: Option<Child>,
    pub dir: PathBuf,
    pub port: u16,
    /// The address the listener binds (`127.0.0.1` unless started with
    /// [`PcapSwitch::start_on`]).
    listen_ip: &'static str,
}

impl Drop for PcapSwitch {
    /// SIGTERM (the switch shuts down cleanly), SIGKILL after 5 s.
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl PcapSwitch {
    /// Starts the switch in a fresh scratch directory named after `name`.
    pub fn start(name: &str) -> PcapSwitch {
        PcapSwitch::start_on(name, "127.0.0.1")
    }

    /// [`PcapSwitch::start`] with the listener bound to `listen_ip` (the
    /// test still connects over loopback).
    pub fn start_on(name: &str, listen_ip: &'static str) -> PcapSwitch {
        static INSTANCE: AtomicUsize = AtomicUsize::new(0);
        let n = INSTANCE.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("sluice-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        for i in 1..=2 {
            write_empty_pcap(&dir.join(format!("in{i}.pcap")));
        }
        let mut sw = PcapSwitch { child: None, dir, port: 0, listen_ip };
        // A free port can be taken by someone else before the switch binds
        // it: try a few.
        for _ in 0..5 {
            if sw.boot() {
                return sw;
            }
        }
        panic!("sluice run never listened; see {}", sw.log_path().display());
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join("sluice.log")
    }

    /// The capture of what the switch sent out of `port`.
    pub fn pcap_out(&self, port: u32) -> PathBuf {
        self.dir.join(format!("out{port}.pcap"))
    }

    pub fn addr(&self) -> SocketAddr {
        format!("127.0.0.1:{}", self.port).parse().expect("addr")
    }

    /// `tcp:127.0.0.1:PORT`, for `ovs-ofctl`.
    pub fn target(&self) -> String {
        format!("tcp:127.0.0.1:{}", self.port)
    }

    fn boot(&mut self) -> bool {
        self.port = free_port();
        let log = std::fs::File::create(self.log_path()).expect("log file");
        let ports: Vec<String> =
            (1..=2u32).map(|i| format!("pcap:in{i}.pcap,out=out{i}.pcap={i}")).collect();
        let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["run", "--dpid", "0x5a", "--fail-mode", "secure", "--workers", "1"])
            // Its own run directory: tests run switches side by side.
            .args(["--rundir", "."])
            .args(["--listen", &format!("ptcp:{}:{}", self.port, self.listen_ip)])
            .args(["--port", &ports[0], "--port", &ports[1]])
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawning sluice run");
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if child.try_wait().ok().flatten().is_some() {
                return false;
            }
            if TcpStream::connect_timeout(&self.addr(), Duration::from_millis(200)).is_ok() {
                self.child = Some(child);
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        false
    }
}
