//! `afxdp:IFNAME[,queue=Q][,mode=auto|copy|zerocopy|skb][,frames=N]` — an AF_XDP
//! socket (feature `afxdp`, on by default). When the kernel or the driver
//! refuses the socket, the error names the interface, queue and mode and
//! says what usually helps.
//!
//! Built on `xsk-rs` 0.11, which wraps libxdp (vendored and compiled by its build
//! script; needs clang, m4, libelf, zlib). Socket creation loads libxdp's default
//! XDP program on the interface, which redirects every frame of queue `Q` into the
//! socket; the program goes away with the socket.
//!
//! Memory: one UMEM of `frames` frames (default 4096, 4 KiB each). The first half
//! is given to the kernel through the fill queue for receiving; the second half is a
//! free list for transmitting. `rx_burst` takes up to `bufs.len()` descriptors from
//! the RX ring, copies each frame into the caller's [`RxBuf`] and immediately hands
//! the frames back through the fill queue. `tx_burst` first reclaims finished frames
//! from the completion queue into the free list, copies each outgoing frame into a
//! free UMEM frame, produces the descriptors on the TX ring and kicks the kernel
//! (`sendto`; needed in copy mode and when the driver sleeps). Descriptor arrays are
//! preallocated; nothing is allocated per packet. (One copy each way: the port API
//! hands out caller-owned buffers, not UMEM frames. A zero-copy variant would lend
//! UMEM frames to the pipeline — left for issue 5's measurements to justify.)
//!
//! `mode`: `auto` lets the kernel choose; `copy` forces copy mode (works on any
//! driver, e.g. veth); `zerocopy` fails if the driver cannot; `skb` forces the
//! generic XDP hook and copy mode.
//!
//! Link state and removal are handled as for `afpacket`: a control socket in the
//! port's namespace answers `link_up`; when the RX ring is empty, `rx_burst`
//! occasionally clears the socket error and checks that the interface index still
//! exists, and reports `NotFound` once it does not.
#![allow(unsafe_code)]

use std::io::{self, Write};
use std::num::NonZeroU32;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use xsk_rs::config::{BindFlags, Interface, SocketConfig, UmemConfig, XdpFlags};
use xsk_rs::{CompQueue, FillQueue, FrameDesc, RxQueue, Socket, TxQueue, Umem};

use crate::sys;
use crate::{Port, PortSpec, PortStats, RxBuf};

/// AF_XDP port options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// NIC queue to bind.
    pub queue: u32,
    /// `auto`, `copy`, `zerocopy` or `skb`.
    pub mode: String,
    /// UMEM frames (half RX, half TX); at least 64.
    pub frames: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config { queue: 0, mode: "auto".into(), frames: 4096 }
    }
}

impl Config {
    /// Defaults overridden by the spec's `queue`, `mode`, `frames`.
    pub fn from_spec(spec: &PortSpec) -> io::Result<Config> {
        let d = Config::default();
        let c = Config {
            queue: spec.option_parse("queue")?.unwrap_or(d.queue),
            mode: spec.option("mode").unwrap_or(&d.mode).to_string(),
            frames: spec.option_parse("frames")?.unwrap_or(d.frames),
        };
        if !matches!(c.mode.as_str(), "auto" | "copy" | "zerocopy" | "skb") {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("afxdp mode {:?}: expected auto, copy, zerocopy or skb", c.mode),
            ));
        }
        if !(64..=1 << 20).contains(&c.frames) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "afxdp frames: 64..=1048576"));
        }
        Ok(c)
    }
}

/// An AF_XDP port. See the module docs.
pub struct AfXdp {
    // Queues before the UMEM: they hold socket handles that must go first.
    tx_q: TxQueue,
    rx_q: RxQueue,
    fq: FillQueue,
    cq: CompQueue,
    umem: Umem,
    ctl: OwnedFd,
    name: String,
    ifindex: u32,
    hw: [u8; 6],
    /// Scratch descriptors for one RX burst / one completion sweep.
    scratch: Vec<FrameDesc>,
    /// Free TX frames.
    tx_free: Vec<FrameDesc>,
    /// Descriptors being produced in one TX burst.
    tx_batch: Vec<FrameDesc>,
    /// Frames the fill queue did not take yet.
    fill_pending: Vec<FrameDesc>,
    tx_ring_size: u32,
    empty_polls: u32,
    removed: bool,
    stats: PortStats,
}

fn ctx(what: &str, name: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("afxdp:{name}: {what}: {e}"))
}

/// The kernel or the driver refused the socket (or the XDP program that
/// feeds it): say what was asked for and what usually helps.
fn refused(name: &str, cfg: &Config, e: impl std::fmt::Display) -> io::Error {
    let hint = match cfg.mode.as_str() {
        "zerocopy" => "the driver may not support zero-copy: try mode=copy or mode=auto",
        "skb" => "needs a kernel with CONFIG_XDP_SOCKETS, root (CAP_NET_ADMIN, CAP_BPF), a free XDP hook",
        _ => "needs a kernel with CONFIG_XDP_SOCKETS, root (CAP_NET_ADMIN, CAP_BPF), no other XDP program on the interface; mode=skb works with any driver",
    };
    io::Error::other(format!(
        "afxdp:{name}: the kernel or driver refused an AF_XDP socket on queue {} (mode {}): {e} ({hint})",
        cfg.queue, cfg.mode
    ))
}

fn removed_error(name: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("afxdp:{name}: interface removed"))
}

/// Largest burst handled per call (descriptor scratch size).
const MAX_BURST: usize = 256;

impl AfXdp {
    /// Opens the port a spec describes.
    pub fn from_spec(spec: &PortSpec) -> io::Result<AfXdp> {
        AfXdp::open(&spec.name, &Config::from_spec(spec)?)
    }

    /// Opens `ifname` (in the calling thread's network namespace).
    pub fn open(ifname: &str, cfg: &Config) -> io::Result<AfXdp> {
        sys::ifname_bytes(ifname)?;
        let ctl = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
        let c = ctl.as_raw_fd();
        let ifindex = sys::if_index(c, ifname).map_err(|e| ctx("SIOCGIFINDEX", ifname, e))?;
        let hw = sys::if_hwaddr(c, ifname).map_err(|e| ctx("SIOCGIFHWADDR", ifname, e))?;

        let frames = NonZeroU32::new(cfg.frames).ok_or_else(|| ctx("frames", ifname, "zero"))?;
        let (umem, mut descs) =
            Umem::new(UmemConfig::default(), frames, false).map_err(|e| ctx("UMEM", ifname, e))?;
        let (mut bind, mut xdp) = (BindFlags::empty(), XdpFlags::empty());
        match cfg.mode.as_str() {
            "copy" => bind |= BindFlags::XDP_COPY,
            "zerocopy" => bind |= BindFlags::XDP_ZEROCOPY,
            "skb" => {
                bind |= BindFlags::XDP_COPY;
                xdp |= XdpFlags::XDP_FLAGS_SKB_MODE;
            }
            _ => {}
        }
        let sc = SocketConfig::builder().bind_flags(bind).xdp_flags(xdp).build();
        let tx_ring_size = sc.tx_queue_size().get();
        let iface: Interface =
            ifname.parse().map_err(|e: std::ffi::NulError| ctx("name", ifname, e))?;
        // SAFETY: the UMEM is fresh and used by this one socket only, so the
        // shared-UMEM precondition of `Socket::new` does not apply.
        let (tx_q, rx_q, rings) = unsafe { Socket::new(sc, &umem, &iface, cfg.queue) }
            .map_err(|e| refused(ifname, cfg, e))?;
        let (mut fq, cq) = rings.ok_or_else(|| ctx("socket", ifname, "no fill/comp queue"))?;

        let tx_free = descs.split_off(descs.len() / 2);
        // SAFETY: these descriptors come from this UMEM and are not in use.
        let filled = unsafe { fq.produce(&descs) };
        let fill_pending = descs.split_off(filled.min(descs.len()));
        let cap = tx_free.len();
        Ok(AfXdp {
            tx_q,
            rx_q,
            fq,
            cq,
            umem,
            ctl,
            name: ifname.to_string(),
            ifindex,
            hw,
            scratch: vec![FrameDesc::default(); MAX_BURST],
            tx_free,
            tx_batch: Vec::with_capacity(cap),
            fill_pending,
            tx_ring_size,
            empty_polls: 0,
            removed: false,
            stats: PortStats::default(),
        })
    }

    fn check_gone(&mut self) -> io::Result<()> {
        self.empty_polls = self.empty_polls.wrapping_add(1);
        if self.empty_polls % 16 != 1 {
            return Ok(());
        }
        let _ = sys::take_socket_error(self.rx_q.fd().as_raw_fd());
        match sys::if_name(self.ctl.as_raw_fd(), self.ifindex) {
            Ok(_) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ENODEV) => {
                self.removed = true;
                Err(removed_error(&self.name))
            }
            Err(e) => Err(e),
        }
    }

    /// Frames produced on the TX ring that the kernel has not taken yet.
    fn tx_outstanding(&mut self) -> u32 {
        self.tx_ring_size.saturating_sub(self.tx_q.nb_free_exact())
    }

    /// Makes the kernel take what is on the TX ring. In copy mode each `sendto`
    /// transmits at most 32 frames (the kernel's TX batch), so kick until the ring is
    /// empty or a kick makes no progress (device busy: the next burst kicks again).
    fn kick(&mut self) -> io::Result<()> {
        let mut left = self.tx_outstanding();
        // Bounded: each round either shrinks `left` or stops.
        while left > 0 {
            self.tx_q.wakeup().map_err(|e| ctx("wakeup", &self.name, e))?;
            let now = self.tx_outstanding();
            if now >= left {
                break;
            }
            left = now;
        }
        Ok(())
    }

    fn reclaim_completions(&mut self) {
        // Bounded: each round moves at least one descriptor, and there are only
        // as many as the UMEM has TX frames.
        loop {
            // SAFETY: the completion queue only returns descriptors of this UMEM.
            let n = unsafe { self.cq.consume(&mut self.scratch) };
            if n == 0 {
                break;
            }
            self.tx_free.extend_from_slice(&self.scratch[..n]);
            if n < self.scratch.len() {
                break;
            }
        }
    }
}

impl Port for AfXdp {
    fn rx_burst(&mut self, bufs: &mut [RxBuf]) -> io::Result<usize> {
        if self.removed {
            return Err(removed_error(&self.name));
        }
        if !self.fill_pending.is_empty() {
            // SAFETY: descriptors of this UMEM that nobody else holds.
            let k = unsafe { self.fq.produce(&self.fill_pending) };
            self.fill_pending.drain(..k.min(self.fill_pending.len()));
        }
        let want = bufs.len().min(MAX_BURST);
        // SAFETY: the scratch descriptors are overwritten with frames of this UMEM.
        let n = unsafe { self.rx_q.consume(&mut self.scratch[..want]) };
        let mut delivered = 0;
        for d in &self.scratch[..n] {
            let Some(buf) = bufs.get_mut(delivered) else { break };
            // SAFETY: `d` was just received into this UMEM and is ours until it goes
            // back to the fill queue below.
            let data = unsafe { self.umem.data(d) };
            let frame = data.contents();
            if buf.load(frame) {
                self.stats.rx_packets += 1;
                self.stats.rx_bytes += frame.len() as u64;
                delivered += 1;
            } else {
                self.stats.rx_errors += 1;
            }
        }
        if n > 0 {
            // SAFETY: these frames came from the RX ring of this UMEM and are no
            // longer referenced (their data was copied above).
            let k = unsafe { self.fq.produce(&self.scratch[..n]) };
            if k < n {
                self.fill_pending.extend_from_slice(&self.scratch[k..n]);
            }
            self.empty_polls = 0;
        } else {
            self.check_gone()?;
        }
        Ok(delivered)
    }

    fn tx_burst(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        if self.removed {
            return Err(removed_error(&self.name));
        }
        self.reclaim_completions();
        self.tx_batch.clear();
        let mut consumed = 0;
        let mut bytes = 0u64;
        for f in frames {
            let Some(mut d) = self.tx_free.pop() else { break };
            // SAFETY: `d` is a free TX frame of this UMEM; nothing else references it.
            let mut data = unsafe { self.umem.data_mut(&mut d) };
            let mut cur = data.cursor();
            cur.set_pos(0);
            let ok = f.len() >= 14 && cur.write_all(f).is_ok();
            consumed += 1;
            if ok {
                bytes += f.len() as u64;
                self.tx_batch.push(d);
            } else {
                self.stats.tx_errors += 1;
                self.tx_free.push(d);
            }
        }
        // SAFETY: the batch holds frames of this UMEM filled above.
        let k = unsafe { self.tx_q.produce(&self.tx_batch) };
        if k < self.tx_batch.len() {
            // Ring full: those frames were not consumed.
            let back = self.tx_batch.len() - k;
            consumed -= back;
            for d in self.tx_batch.drain(k..) {
                bytes -= d.lengths().data() as u64;
                self.tx_free.push(d);
            }
        }
        self.kick()?;
        self.stats.tx_packets += k as u64;
        self.stats.tx_bytes += bytes;
        Ok(consumed)
    }

    fn tx_queue(&mut self, frame: &[u8]) -> io::Result<bool> {
        if self.removed {
            return Err(removed_error(&self.name));
        }
        if self.tx_free.is_empty() {
            self.reclaim_completions();
        }
        let Some(mut d) = self.tx_free.pop() else { return Ok(false) };
        // SAFETY: `d` is a free TX frame of this UMEM; nothing else references it.
        let mut data = unsafe { self.umem.data_mut(&mut d) };
        let mut cur = data.cursor();
        cur.set_pos(0);
        if frame.len() < 14 || cur.write_all(frame).is_err() {
            self.stats.tx_errors += 1;
            self.tx_free.push(d);
            return Ok(true);
        }
        // SAFETY: `d` is a frame of this UMEM filled above.
        let k = unsafe { self.tx_q.produce(std::slice::from_ref(&d)) };
        if k == 0 {
            self.tx_free.push(d);
            return Ok(false);
        }
        self.stats.tx_packets += 1;
        self.stats.tx_bytes += frame.len() as u64;
        Ok(true)
    }

    fn tx_flush(&mut self) -> io::Result<()> {
        if self.removed {
            return Err(removed_error(&self.name));
        }
        self.kick()?;
        // Take the sent frames back now, so the next burst reuses the
        // frames just written (still in cache: `tx_free` is a stack) rather
        // than cycling through the whole cold TX half of the UMEM.
        self.reclaim_completions();
        Ok(())
    }

    fn link_up(&self) -> bool {
        if self.removed {
            return false;
        }
        let c = self.ctl.as_raw_fd();
        let Ok(name) = sys::if_name(c, self.ifindex) else { return false };
        match sys::if_flags(c, &name) {
            Ok(f) => f & libc::IFF_UP as u32 != 0 && f & libc::IFF_RUNNING as u32 != 0,
            Err(_) => false,
        }
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn hw_addr(&self) -> [u8; 6] {
        self.hw
    }

    fn raw_fd(&self) -> Option<RawFd> {
        Some(self.rx_q.fd().as_raw_fd())
    }

    fn stats(&self) -> PortStats {
        let mut s = self.stats;
        if let Ok(x) = self.rx_q.fd().xdp_statistics() {
            s.rx_dropped = x.rx_dropped() + x.rx_ring_full();
        }
        s
    }
}
