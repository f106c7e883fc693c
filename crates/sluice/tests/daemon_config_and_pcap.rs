//! `sluice run` without namespaces: configuration errors fail fast and name
//! the key; `--check` prints the resolved configuration; a switch between
//! two pcap ports forwards (standalone fail mode floods the replayed
//! broadcast frames to the other port) and exits cleanly on SIGTERM.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A scratch directory removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("sluice-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("scratch dir");
        Dir(d)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sluice(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sluice")).args(args).output().expect("running sluice")
}

fn fails_naming(args: &[&str], key: &str) {
    let out = sluice(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(err.contains(key), "{args:?}: error does not name {key:?}: {err}");
}

#[test]
fn bad_configuration_fails_fast_naming_the_key() {
    let d = Dir::new("cfg");
    let f = d.path("bad.toml");
    let fs = f.to_str().unwrap();
    std::fs::write(&f, "dpid = 1\nworkerz = 2\n").unwrap();
    fails_naming(&["run", "--config", fs], "workerz");
    std::fs::write(&f, "[limits]\nn_tables = 300\n").unwrap();
    fails_naming(&["run", "--config", fs], "limits.n_tables");
    std::fs::write(&f, "[[port]]\nspec = \"afpacket:a=1\"\n[[port]]\nspec = \"afpacket:b=1\"\n")
        .unwrap();
    fails_naming(&["run", "--config", fs], "port[1].number");
    fails_naming(&["run", "--port", "nosuchkind:x"], "--port nosuchkind:x");
    fails_naming(&["run", "--port", "afpacket:a", "--fail-mode", "open"], "--fail-mode");
    fails_naming(&["run", "--port", "afpacket:a", "--controller", "ptcp:1"], "--controller");
    fails_naming(&["run", "--port", "afpacket:a", "--dpid", "0xq"], "--dpid");
    fails_naming(&["run", "--config", "/nonexistent/sluice.toml"], "--config");
    fails_naming(&["run"], "no ports");
    // A port that cannot be opened fails before any socket is opened.
    fails_naming(&["run", "--port", "afpacket:nosuchif0=1"], "nosuchif0");
}

#[test]
fn check_prints_the_resolved_configuration() {
    let d = Dir::new("check");
    let f = d.path("ok.toml");
    std::fs::write(
        &f,
        "dpid = \"0xab\"\nworkers = 2\nlisten = [\"ptcp:6634:127.0.0.1\"]\n[[port]]\nspec = \"afpacket:v1\"\nnumber = 4\n",
    )
    .unwrap();
    let out = sluice(&[
        "run",
        "--config",
        f.to_str().unwrap(),
        "--port",
        "afpacket:v2",
        "--fail-mode",
        "standalone",
        "--check",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for want in [
        "dpid: 0x00000000000000ab",
        "workers: 2",
        "fail_mode: Standalone",
        "port 4: afpacket:v1",
        "port 1: afpacket:v2",
        "listen: ptcp:6634:127.0.0.1",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
}

fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut w = pcap_file::pcap::PcapWriter::new(std::fs::File::create(path).unwrap()).unwrap();
    for f in frames {
        w.write_packet(&pcap_file::pcap::PcapPacket::new(Duration::ZERO, f.len() as u32, f))
            .unwrap();
    }
}

fn read_pcap(path: &Path) -> Vec<Vec<u8>> {
    let Ok(f) = std::fs::File::open(path) else { return Vec::new() };
    let Ok(mut r) = pcap_file::pcap::PcapReader::new(f) else { return Vec::new() };
    let mut out = Vec::new();
    while let Some(Ok(p)) = r.next_packet() {
        out.push(p.data.into_owned());
    }
    out
}

#[test]
fn pcap_ports_forward_in_standalone_mode_and_sigterm_stops() {
    let d = Dir::new("pcap");
    // Broadcast frames from one source, with a sequence number.
    let frames: Vec<Vec<u8>> = (0..20u8)
        .map(|i| {
            let mut f = vec![0xff; 6];
            f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x01, 0x88, 0xb5, i]);
            f.resize(60, i);
            f
        })
        .collect();
    write_pcap(&d.path("in.pcap"), &frames);
    write_pcap(&d.path("empty.pcap"), &[]);
    let p1 =
        format!("pcap:{},out={}=1", d.path("in.pcap").display(), d.path("out1.pcap").display());
    let p2 =
        format!("pcap:{},out={}=2", d.path("empty.pcap").display(), d.path("out2.pcap").display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["run", "--fail-mode", "standalone", "--port", &p1, "--port", &p2])
        // Tests run switches side by side: no shared control socket.
        .arg("--no-control-socket")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawning sluice run");
    let deadline = Instant::now() + Duration::from_secs(20);
    while read_pcap(&d.path("out2.pcap")).len() < frames.len() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Ok(Some(st)) = child.try_wait() {
            break Some(st);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.is_some_and(|s| s.success()), "no clean exit on SIGTERM: {status:?}");
    assert_eq!(
        read_pcap(&d.path("out2.pcap")),
        frames,
        "port 2 must get every flooded frame, in order"
    );
    assert!(read_pcap(&d.path("out1.pcap")).is_empty(), "nothing goes back out the ingress port");
}
