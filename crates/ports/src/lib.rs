//! # sluice-ports: where frames enter and leave the switch
//!
//! What? Every source and sink of Ethernet frames the switch can use, behind one
//! small trait, [`Port`]: receive a burst into caller-owned buffers, transmit a burst
//! of byte slices, report link state, name, MAC address and a pollable fd.
//!
//! | spec | module | what |
//! |---|---|---|
//! | `afpacket:IFNAME` | [`afpacket`] | AF_PACKET socket, TPACKET_V3 mmap RX ring (block based) and TPACKET_V3 TX ring (frame based), `PACKET_QDISC_BYPASS`, promiscuous |
//! | `pcap:IN.pcap[,out=OUT.pcap][,loop=N]` | [`pcap`] | replays a capture as received frames, records transmitted frames |
//! | `tap:NAME` | [`tap`] | a TAP device (`IFF_TAP | IFF_NO_PI`), meant for the LOCAL port |
//! | `afxdp:IFNAME` | `afxdp` (feature `afxdp`) | AF_XDP socket (see the module for its state) |
//!
//! A spec may end in `=N` to give the OpenFlow port number; [`PortSpec::parse`]
//! reads the grammar and [`open`] turns a spec into a boxed [`Port`].
//!
//! Basic design:
//! - **Bursts into caller buffers.** [`Port::rx_burst`] fills up to `bufs.len()`
//!   [`RxBuf`]s (the datapath uses [`BURST`] = 32, stack/array owned by the worker).
//!   An `RxBuf` is allocated once and reused forever, with headroom in front of the
//!   frame so push-VLAN/MPLS actions need no copy. Ports copy each frame once from
//!   their ring or file into the buffer; nothing is allocated per packet.
//! - **Transmit from borrowed slices.** [`Port::tx_burst`] takes `&[&[u8]]` and
//!   returns how many frames from the front were *consumed*: queued for sending, or
//!   dropped because they can never be sent (too long or too short for the port;
//!   counted in [`PortStats::tx_errors`]). Anything not consumed may be retried.
//!   [`Port::tx_queue`] and [`Port::tx_flush`] split that in two, so a worker can
//!   write each frame straight from its packet buffer into the port's ring while it
//!   forwards and tell the kernel once per burst (AF_PACKET and AF_XDP do; other
//!   ports send at once).
//! - **Errors mean the port is gone or broken**, not "no packets": an empty ring is
//!   `Ok(0)`. A port whose interface was deleted returns an error from `rx_burst` and
//!   `tx_burst` (kind `NotFound`) instead of panicking or spinning. A link that is
//!   merely down gives `Ok(0)` on receive and an error (`ENETDOWN`) on transmit,
//!   which the caller treats as "dropped".
//! - **Link state** is read on demand by [`Port::link_up`] and pushed by
//!   [`link::LinkMonitor`] (rtnetlink), which also reports removal.
//!
//! Thread-safety: a port is `Send` and used by one worker at a time (`&mut self`);
//! there is no internal locking.
//!
//! Network namespaces: a port (and a `LinkMonitor`) belongs to the namespace of the
//! thread that opened it and keeps talking to that namespace from any thread
//! afterwards. [`testutil`] uses this to run real tests in private namespaces.
#![warn(missing_docs)]

use sluice_packet::buf::PacketBuf;
use std::io;
use std::os::fd::RawFd;

pub mod afpacket;
#[cfg(feature = "afxdp")]
pub mod afxdp;
pub mod gso;
pub mod link;
pub mod pcap;
pub mod spec;
mod sys;
pub mod tap;
pub mod testutil;

pub use spec::{PortKind, PortSpec, SpecError};

/// The datapath's burst size.
pub const BURST: usize = 32;

/// Bytes kept free in front of every received frame for pushed headers
/// (VLAN, MPLS, PBB: 128 is enough for several).
pub const DEFAULT_HEADROOM: usize = 128;

/// Default frame capacity of an [`RxBuf`]: a 1500-byte MTU frame with two VLAN tags
/// fits, with room to spare.
pub const DEFAULT_RX_CAPACITY: usize = 2048;

/// A caller-owned receive buffer: headroom, then up to `capacity` frame bytes.
///
/// Allocated once ([`RxBuf::new`], [`RxBuf::burst`]) and reused for every burst.
/// After a port fills it, [`RxBuf::frame`] is exactly the received Ethernet frame
/// (with any VLAN tag the NIC or kernel had stripped put back in place).
#[derive(Clone)]
pub struct RxBuf {
    buf: PacketBuf,
    csum_partial: bool,
}

impl std::fmt::Debug for RxBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RxBuf")
            .field("len", &self.len())
            .field("start", &self.headroom())
            .field("capacity", &self.capacity())
            .finish()
    }
}

impl Default for RxBuf {
    fn default() -> Self {
        RxBuf::new(DEFAULT_RX_CAPACITY)
    }
}

impl RxBuf {
    /// A buffer for frames up to `capacity` bytes with [`DEFAULT_HEADROOM`].
    pub fn new(capacity: usize) -> RxBuf {
        RxBuf::with_headroom(DEFAULT_HEADROOM, capacity)
    }

    /// A buffer with explicit headroom and frame capacity.
    pub fn with_headroom(headroom: usize, capacity: usize) -> RxBuf {
        RxBuf { buf: PacketBuf::new(headroom, capacity), csum_partial: false }
    }

    /// `n` default buffers, e.g. `RxBuf::burst(BURST)` for one worker.
    pub fn burst(n: usize) -> Vec<RxBuf> {
        (0..n).map(|_| RxBuf::default()).collect()
    }

    /// The frame.
    pub fn frame(&self) -> &[u8] {
        self.buf.data()
    }

    /// The frame, writable in place.
    pub fn frame_mut(&mut self) -> &mut [u8] {
        self.buf.data_mut()
    }

    /// Frame length in bytes.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True when no frame is held.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Largest frame a port can put into this buffer.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Free bytes in front of the frame.
    pub fn headroom(&self) -> usize {
        self.buf.headroom()
    }

    /// True when the kernel reported that the frame's L4 checksum was not yet
    /// computed (`TP_STATUS_CSUMNOTREADY`: it came from a local stack through a veth
    /// with checksum offload). Whoever forwards it to a wire must fill it in.
    pub fn csum_partial(&self) -> bool {
        self.csum_partial
    }

    /// Grows the frame by `n` bytes at the front (into the headroom) and returns the
    /// whole new frame; `None` (and no change) when the headroom is too small.
    pub fn push_front(&mut self, n: usize) -> Option<&mut [u8]> {
        self.buf.push_front(n)
    }

    /// Removes `n` bytes from the front; false (and no change) if the frame is
    /// shorter than `n`.
    pub fn pull_front(&mut self, n: usize) -> bool {
        self.buf.pull_front(n)
    }

    /// Sets the frame length (shrinking, or growing into bytes after it); false (and
    /// no change) if the buffer cannot hold it.
    pub fn set_len(&mut self, len: usize) -> bool {
        self.buf.set_len(len)
    }

    /// Empties the buffer (frame starts after the full headroom again) and returns
    /// the writable area a port may fill; finish with [`RxBuf::commit`].
    pub fn spare_mut(&mut self) -> &mut [u8] {
        self.csum_partial = false;
        self.buf.spare_mut()
    }

    /// Declares the first `len` bytes of [`RxBuf::spare_mut`] to be the frame
    /// (clamped to the capacity).
    pub fn commit(&mut self, len: usize, csum_partial: bool) {
        self.buf.commit(len);
        self.csum_partial = csum_partial;
    }

    /// Copies `frame` in; false (and an empty buffer) if it does not fit.
    pub fn load(&mut self, frame: &[u8]) -> bool {
        let spare = self.spare_mut();
        match spare.get_mut(..frame.len()) {
            Some(dst) => {
                dst.copy_from_slice(frame);
                self.commit(frame.len(), false);
                true
            }
            None => false,
        }
    }
}

/// The packet buffer itself: the datapath lends it to the pipeline for a
/// burst instead of copying the frame out (`sluice_core::walk::burst_lent`).
impl AsMut<PacketBuf> for RxBuf {
    fn as_mut(&mut self) -> &mut PacketBuf {
        &mut self.buf
    }
}

impl AsRef<PacketBuf> for RxBuf {
    fn as_ref(&self) -> &PacketBuf {
        &self.buf
    }
}

/// Counters kept by a port (monotonic since open), in the shape of
/// `ofp_port_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Frames handed to the caller.
    pub rx_packets: u64,
    /// Bytes handed to the caller.
    pub rx_bytes: u64,
    /// Frames lost before the caller saw them (ring full; kernel drop counter).
    pub rx_dropped: u64,
    /// Frames discarded because they were malformed or larger than the buffer.
    pub rx_errors: u64,
    /// Frames queued for transmission.
    pub tx_packets: u64,
    /// Bytes queued for transmission.
    pub tx_bytes: u64,
    /// Frames dropped on transmit (link down, device busy).
    pub tx_dropped: u64,
    /// Frames that could never be sent (too long / too short for the port).
    pub tx_errors: u64,
}

/// A switch port: bursts of frames in and out.
pub trait Port: Send {
    /// Receives up to `bufs.len()` frames into the caller's buffers, in order, and
    /// returns how many were filled (`bufs[..n]`). `Ok(0)` means nothing is waiting.
    /// Never blocks.
    fn rx_burst(&mut self, bufs: &mut [RxBuf]) -> io::Result<usize>;

    /// Transmits frames; returns how many from the front were consumed (queued, or
    /// dropped as unsendable and counted in `tx_errors`). Never blocks.
    fn tx_burst(&mut self, frames: &[&[u8]]) -> io::Result<usize>;

    /// Queues one frame for transmission, possibly without sending it yet:
    /// `Ok(true)` when it was consumed (as [`Port::tx_burst`] counts it),
    /// `Ok(false)` when the port cannot take it now (ring full; nothing
    /// changed, it may be retried). Queued frames leave, in order, at the
    /// latest at the next [`Port::tx_flush`] or `tx_burst`. Ports with a
    /// transmit ring write the frame straight into it, so a caller holding
    /// the frame in its own buffer copies it once; the default sends it at
    /// once through `tx_burst`. Never blocks.
    fn tx_queue(&mut self, frame: &[u8]) -> io::Result<bool> {
        Ok(self.tx_burst(&[frame])? == 1)
    }

    /// Sends what [`Port::tx_queue`] left queued. Never blocks.
    fn tx_flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Current link state (administratively up and carrier present).
    fn link_up(&self) -> bool;

    /// Port name (interface name or file path).
    fn name(&self) -> &str;

    /// The port's Ethernet address.
    fn hw_addr(&self) -> [u8; 6];

    /// A file descriptor that becomes readable when `rx_burst` has work, if any.
    /// Ports without one (pcap) must be polled by calling `rx_burst`.
    fn raw_fd(&self) -> Option<RawFd>;

    /// Counters since the port was opened.
    fn stats(&self) -> PortStats {
        PortStats::default()
    }
}

/// Opens the port a spec describes.
///
/// Must run in the network namespace that holds the interface (for `afpacket`,
/// `tap`, `afxdp`); the port keeps using that namespace afterwards.
pub fn open(spec: &PortSpec) -> io::Result<Box<dyn Port>> {
    match spec.kind {
        PortKind::AfPacket => {
            let cfg = afpacket::Config::from_spec(spec)?;
            Ok(Box::new(afpacket::AfPacket::open(&spec.name, &cfg)?))
        }
        PortKind::Pcap => Ok(Box::new(pcap::PcapPort::from_spec(spec)?)),
        PortKind::Tap => Ok(Box::new(tap::Tap::open(&spec.name)?)),
        #[cfg(feature = "afxdp")]
        PortKind::AfXdp => Ok(Box::new(afxdp::AfXdp::from_spec(spec)?)),
        #[cfg(not(feature = "afxdp"))]
        PortKind::AfXdp => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "afxdp ports need sluice-ports built with feature `afxdp`",
        )),
    }
}

/// A locally administered, unicast MAC derived from `seed` (FNV-1a), for ports
/// with no hardware address of their own (pcap).
pub fn synthetic_mac(seed: &str) -> [u8; 6] {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in seed.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let b = h.to_be_bytes();
    [0x02, b[3], b[4], b[5], b[6], b[7]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rxbuf_load_push_pull() {
        let mut b = RxBuf::with_headroom(4, 8);
        assert!(b.load(&[1, 2, 3]));
        assert_eq!(b.frame(), &[1, 2, 3]);
        assert_eq!(b.headroom(), 4);
        let f = b.push_front(4).unwrap();
        f[..4].copy_from_slice(&[9, 9, 9, 9]);
        assert_eq!(b.frame(), &[9, 9, 9, 9, 1, 2, 3]);
        assert!(b.push_front(1).is_none());
        assert!(b.pull_front(5));
        assert_eq!(b.frame(), &[2, 3]);
        assert!(!b.pull_front(3));
        assert!(!b.load(&[0; 9]));
        assert!(b.is_empty());
        assert!(b.load(&[0; 8]));
        assert!(!b.set_len(9));
        assert!(b.set_len(2));
        assert_eq!(b.frame(), &[0, 0]);
    }

    #[test]
    fn synthetic_mac_is_local_unicast_and_stable() {
        let a = synthetic_mac("in.pcap");
        assert_eq!(a[0], 0x02);
        assert_eq!(a, synthetic_mac("in.pcap"));
        assert_ne!(a, synthetic_mac("other.pcap"));
    }
}
