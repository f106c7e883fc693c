//! Helpers for real network tests: namespaces, veth pairs, raw sockets.
//!
//! Used by this crate's tests and by the daemon's. Everything created here has a
//! name that includes the process id and a per-process counter, so concurrent test
//! binaries never collide, and is removed by a `Drop` guard, so a failing (panicking)
//! test cleans up too. Needs root and the `ip` tool (iproute2).
//!
//! ```no_run
//! use sluice_ports::testutil::{NetNs, Veth};
//! let a = NetNs::new("a").unwrap();
//! let b = NetNs::new("b").unwrap();
//! let veth = Veth::new(&a, &b).unwrap();        // veth.a in ns a, veth.b in ns b, both up
//! let port = a.enter(|| sluice_ports::afpacket::AfPacket::open(
//!     &veth.a, &Default::default())).unwrap();  // a port inside namespace a
//! b.exec(&["ip", "link", "set", &veth.b, "down"]).unwrap();
//! ```
//!
//! [`NetNs::enter`] runs a closure on a short-lived thread that has joined the
//! namespace (`setns`); sockets and ports created there stay in that namespace when
//! used from any thread later. Dropping order matters only in that a [`Veth`]
//! should be dropped before its namespaces (deleting a namespace deletes the veth
//! ends inside it anyway, so the reverse order is harmless too).

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::sys;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// True when running as root (network tests need it).
pub fn is_root() -> bool {
    sys::is_root()
}

/// A name unique to this process and call: `{prefix}{pid}x{n}`, cut to fit an
/// interface name (15 bytes) when `prefix` is short (≤ 4 bytes).
pub fn unique_name(prefix: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}{}x{n}", std::process::id())
}

/// Runs a command, failing with its stderr if it exits non-zero.
pub fn run(args: &[&str]) -> io::Result<Output> {
    let (prog, rest) = args.split_first().ok_or_else(|| io::Error::other("run: empty command"))?;
    let out = Command::new(prog).args(rest).output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out)
}

/// A named network namespace (`ip netns add`), deleted on drop. IPv6 is disabled
/// inside so that router solicitations and MLD reports do not add frames to tests.
pub struct NetNs {
    name: String,
    handle: File,
}

impl NetNs {
    /// Creates namespace `sl{tag}{pid}x{n}` with its loopback up.
    pub fn new(tag: &str) -> io::Result<NetNs> {
        let name = unique_name(&format!("sl{tag}"));
        run(&["ip", "netns", "add", &name])?;
        let handle = match File::open(format!("/run/netns/{name}")) {
            Ok(f) => f,
            Err(e) => {
                let _ = run(&["ip", "netns", "del", &name]);
                return Err(e);
            }
        };
        let ns = NetNs { name, handle };
        ns.exec(&["ip", "link", "set", "lo", "up"])?;
        ns.exec(&["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"])?;
        ns.exec(&["sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1"])?;
        Ok(ns)
    }

    /// The namespace's name (for `ip netns exec`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs a command inside the namespace (`ip netns exec NAME ...`).
    pub fn exec(&self, args: &[&str]) -> io::Result<Output> {
        let mut full = vec!["ip", "netns", "exec", &self.name];
        full.extend_from_slice(args);
        run(&full)
    }

    /// Runs `f` on a thread that has joined this namespace and returns its result.
    /// Sockets, ports and monitors created by `f` belong to this namespace.
    pub fn enter<R: Send, F: FnOnce() -> R + Send>(&self, f: F) -> R {
        let fd = self.handle.as_raw_fd();
        std::thread::scope(|s| {
            s.spawn(move || {
                if let Err(e) = sys::setns_net(fd) {
                    panic!("setns into test namespace failed: {e}");
                }
                f()
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        let _ = run(&["ip", "netns", "del", &self.name]);
    }
}

/// A veth pair with end `a` in one namespace and `b` in another, both up.
/// Deleted on drop.
pub struct Veth {
    /// Interface name of the end in the first namespace.
    pub a: String,
    /// Interface name of the end in the second namespace.
    pub b: String,
    ns_a: String,
}

impl Veth {
    /// Creates the pair, moves the ends into `ns_a` / `ns_b` and sets them up.
    pub fn new(ns_a: &NetNs, ns_b: &NetNs) -> io::Result<Veth> {
        let a = unique_name("va");
        let b = unique_name("vb");
        run(&["ip", "link", "add", &a, "type", "veth", "peer", "name", &b])?;
        // From here on, Drop cleans up (deleting one end deletes both).
        let mut v = Veth { a, b, ns_a: String::new() };
        run(&["ip", "link", "set", &v.a, "netns", ns_a.name()])?;
        v.ns_a = ns_a.name().to_string();
        run(&["ip", "link", "set", &v.b, "netns", ns_b.name()])?;
        ns_a.exec(&["ip", "link", "set", &v.a, "up"])?;
        ns_b.exec(&["ip", "link", "set", &v.b, "up"])?;
        Ok(v)
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        if self.ns_a.is_empty() {
            let _ = run(&["ip", "link", "del", &self.a]);
        } else {
            let _ = run(&["ip", "netns", "exec", &self.ns_a, "ip", "link", "del", &self.a]);
        }
    }
}

/// A plain AF_PACKET socket bound to one interface: a test's traffic generator
/// and capture point, independent of the ports under test.
pub struct RawSocket {
    fd: OwnedFd,
}

impl RawSocket {
    /// Opens it on `ifname` in the calling thread's namespace (use inside
    /// [`NetNs::enter`]).
    pub fn open(ifname: &str) -> io::Result<RawSocket> {
        let proto = i32::from(sys::ETH_P_ALL.to_be());
        let fd = sys::socket(libc::AF_PACKET, libc::SOCK_RAW, proto)?;
        let ifindex = sys::if_index(fd.as_raw_fd(), ifname)?;
        // A capture point must hold a whole test burst: 16 MiB (root may force it).
        sys::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &(16i32 << 20))?;
        sys::bind_packet(fd.as_raw_fd(), ifindex, sys::ETH_P_ALL)?;
        // Drop whatever arrived between socket() and bind() on other interfaces.
        let mut junk = [0u8; 64];
        for _ in 0..10_000 {
            if sys::recv(fd.as_raw_fd(), &mut junk, false).is_err() {
                break;
            }
        }
        Ok(RawSocket { fd })
    }

    /// Sends one frame.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        sys::send(self.fd.as_raw_fd(), frame).map(drop)
    }

    /// Receives one frame, waiting up to `timeout`; `Ok(None)` on timeout. Returns
    /// the frame's full length even if `buf` was shorter. A pending `ENETDOWN` (the
    /// link went down at some point) is skipped.
    pub fn recv(&self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<usize>> {
        let deadline = Instant::now() + timeout;
        loop {
            match sys::recv(self.fd.as_raw_fd(), buf, true) {
                Ok(n) => return Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // A past link-down of this interface, reported once: not an error for
                // a capture point.
                Err(e) if e.raw_os_error() == Some(libc::ENETDOWN) => {}
                Err(e) => return Err(e),
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            sys::poll_readable(self.fd.as_raw_fd(), left.as_millis().clamp(1, 1000) as i32)?;
        }
    }
}

/// Waits until `fd` is readable or `timeout` passes; true if readable.
pub fn wait_readable(fd: std::os::fd::RawFd, timeout: Duration) -> io::Result<bool> {
    sys::poll_readable(fd, timeout.as_millis().min(i32::MAX as u128) as i32)
}

/// A test frame: broadcast-free unicast Ethernet (`dst`, `src`), experimental
/// EtherType 0x88b5, then a 4-byte big-endian sequence number and `len - 18` bytes
/// of a pattern derived from it (`len` at least 60).
pub fn test_frame(dst: [u8; 6], src: [u8; 6], seq: u32, len: usize) -> Vec<u8> {
    let len = len.max(60);
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x88, 0xb5]);
    f.extend_from_slice(&seq.to_be_bytes());
    let mut i = 0u32;
    while f.len() < len {
        f.push((seq.wrapping_mul(31).wrapping_add(i) & 0xff) as u8);
        i += 1;
    }
    f
}

/// The sequence number of a [`test_frame`], if `frame` is one.
pub fn test_frame_seq(frame: &[u8]) -> Option<u32> {
    if frame.get(12..14)? != [0x88, 0xb5] {
        return None;
    }
    Some(u32::from_be_bytes(frame.get(14..18)?.try_into().ok()?))
}
