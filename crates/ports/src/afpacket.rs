//! `afpacket:IFNAME` — an AF_PACKET socket with memory-mapped rings.
//!
//! # Layout
//!
//! One `SOCK_RAW` packet socket, `PACKET_VERSION = TPACKET_V3`, with an RX ring and
//! a TX ring mapped by a single `mmap` (RX first, TX right after it, as the kernel
//! lays them out). Socket options: `PACKET_QDISC_BYPASS` (transmit straight to the
//! driver), `PACKET_LOSS` (a malformed TX frame is dropped instead of blocking the
//! ring), `PACKET_IGNORE_OUTGOING` (do not see frames other sockets send on this
//! interface), `PACKET_MR_PROMISC` membership (promiscuous while the socket lives).
//! The socket is created with protocol 0 and bound to the interface with
//! `ETH_P_ALL` only after the rings exist, so no frame is queued outside them.
//!
//! **Receiving: `rx=recv` (default) or `rx=ring`.** A TPACKET_V3 block is handed
//! to user space only when it is full or `tov` ms (at least 1) after it was
//! opened, so with light traffic every frame waited for that timeout (ping
//! through one switch: a median of ~1 ms). `rx=recv` therefore reads frames
//! with `recvmmsg(2)` (`MSG_DONTWAIT`, up to [`RECV_BATCH`] a call) from the
//! socket's queue instead, where each is readable (and `poll` wakes) the moment
//! it arrives: one syscall per burst and a second copy (socket buffer →
//! scratch → [`RxBuf`]) against no wait. The socket's receive buffer is set to
//! the ring's size (`blocks × block_size`, `SO_RCVBUFFORCE`). `PACKET_AUXDATA`
//! brings each frame's `tpacket_auxdata` (status, VLAN TCI/TPID, at 0/16/18 of
//! the control message), the `sockaddr_ll` its `sll_pkttype`; a frame longer
//! than the scratch buffer (64 KiB + 128: `MSG_TRUNC`) is dropped and counted.
//! Super-frames, VLAN tags and outgoing frames are handled as for the ring. The
//! ring is still there for `rx=ring` (no syscall per burst, for bulk capture).
//!
//! **RX ring (TPACKET_V3, block based; `rx=ring`).** `blocks` blocks of `block_size` bytes.
//! Each block starts with `struct tpacket_block_desc` (`version`, `offset_to_priv`,
//! then `tpacket_hdr_v1`: `block_status` @8, `num_pkts` @12, `offset_to_first_pkt`
//! @16, `blk_len` @20, `seq_num` @24, timestamps @32/@40). The kernel fills one block
//! at a time and hands it over by setting `block_status |= TP_STATUS_USER` when it
//! is full or after `tov` ms. Inside, packets are `struct tpacket3_hdr`
//! (`tp_next_offset` @0, `tp_sec` @4, `tp_nsec` @8, `tp_snaplen` @12, `tp_len` @16,
//! `tp_status` @20, `tp_mac` @24, `tp_net` @26, `tp_rxhash` @28, `tp_vlan_tci` @32,
//! `tp_vlan_tpid` @36; 48 bytes) followed at offset 48 by `struct sockaddr_ll`
//! (`sll_pkttype` @58). The frame is at `tp_mac` from the packet header; the next
//! packet at `tp_next_offset` from it. We walk `num_pkts` packets, copy each into an
//! [`RxBuf`], and give the block back with `block_status = TP_STATUS_KERNEL` (a
//! release store) — a block may be consumed across several bursts.
//! A frame whose VLAN tag the kernel moved into metadata (`TP_STATUS_VLAN_VALID`)
//! gets it re-inserted (`tp_vlan_tpid` if `TP_STATUS_VLAN_TPID_VALID`, else 0x8100),
//! so the switch sees the frame as it was on the wire.
//!
//! **TX ring (TPACKET_V3, frame based).** The socket version applies to both rings,
//! so the TX ring is V3 too; the kernel treats a V3 TX ring as fixed-size frames
//! (`tp_next_offset` must be 0; `tp_retire_blk_tov`, `tp_sizeof_priv` and
//! `tp_feature_req_word` must be 0). A frame slot is a `tpacket3_hdr` whose
//! `tp_status` (@20) is `TP_STATUS_AVAILABLE`; we copy the frame to offset
//! `TPACKET3_HDRLEN - sizeof(sockaddr_ll)` = 48, set `tp_len`, then release-store
//! `TP_STATUS_SEND_REQUEST`; one `sendto(fd, NULL, 0, MSG_DONTWAIT)` per burst
//! makes the kernel transmit everything queued. The kernel walks the ring from its
//! own head, so ours must stay in step: if the kick fails because the link is down
//! (`ENETDOWN`) the unsent run of `SEND_REQUEST` slots just behind our head is
//! returned to `AVAILABLE` and our head moves back to its start (the kernel's head),
//! and the burst is reported as dropped.
//!
//! **Super-frames.** The socket asks for `PACKET_VNET_HDR` (before the rings):
//! every received packet is then preceded by a `virtio_net_hdr` (10 bytes just
//! before `tp_mac`), and every sent one must start with one (we write ten zero
//! bytes: no GSO, checksum complete, so `tp_len` is the frame plus 10). A
//! received TCP or UDP super-frame (`gso_type` TCPV4/TCPV6/UDP_L4: a local
//! stack's send through a veth, or GRO) is cut into `gso_size` segments by [`crate::gso`] straight
//! into the burst's buffers, marked checksum-partial; a burst that fills up
//! leaves the rest of the segments for the next one (the packet stays in the
//! ring until its last segment is out). Without the option (an old kernel)
//! frames come as before and a super-frame larger than a buffer is dropped.
//!
//! # Link down / removal
//!
//! Going down sets the socket error `ENETDOWN` (poll reports `POLLERR`); the kernel
//! re-hooks the socket when the link comes back. Being unregistered additionally
//! unbinds it (`getsockname` then reports ifindex −1). When the ring is empty,
//! `rx_burst` (at most every 16th empty call) clears the socket error and checks the
//! binding; a removed interface turns into a `NotFound` error from `rx_burst` and
//! `tx_burst` from then on.
//!
//! # Invariants
//!
//! Ring memory is only read inside blocks/slots we own (status checked with an
//! acquire load first); every offset read from the ring is bounds-checked against the
//! block before use, so a corrupt ring drops packets rather than panicking.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::gso::{self, VnetHdr, VNET_HDR_LEN};
use crate::sys;
use crate::{Port, PortSpec, PortStats, RxBuf};

// <linux/if_packet.h>
const PACKET_RX_RING: i32 = 5;
const PACKET_STATISTICS: i32 = 6;
const PACKET_VERSION: i32 = 10;
const PACKET_TX_RING: i32 = 13;
const PACKET_LOSS: i32 = 14;
const PACKET_QDISC_BYPASS: i32 = 20;
const PACKET_IGNORE_OUTGOING: i32 = 23;
const PACKET_VNET_HDR: i32 = 15;
const PACKET_AUXDATA: i32 = 8;
const TPACKET_V3: i32 = 2;
const PACKET_OUTGOING: u8 = 4;

const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1 << 0;
const TP_STATUS_CSUMNOTREADY: u32 = 1 << 3;
const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;
const TP_STATUS_AVAILABLE: u32 = 0;
const TP_STATUS_SEND_REQUEST: u32 = 1 << 0;
const TP_STATUS_WRONG_FORMAT: u32 = 1 << 2;

/// Offsets in `struct tpacket_block_desc` (+ `tpacket_hdr_v1`).
mod blk {
    pub const BLOCK_STATUS: usize = 8;
    pub const NUM_PKTS: usize = 12;
    pub const OFFSET_TO_FIRST_PKT: usize = 16;
}

/// Offsets in `struct tpacket3_hdr` (+ the `sockaddr_ll` after it).
mod hdr {
    pub const NEXT_OFFSET: usize = 0;
    pub const SNAPLEN: usize = 12;
    pub const LEN: usize = 16;
    pub const STATUS: usize = 20;
    pub const MAC: usize = 24;
    pub const VLAN_TCI: usize = 32;
    pub const VLAN_TPID: usize = 36;
    /// `TPACKET_ALIGN(sizeof(struct tpacket3_hdr))`
    pub const SIZE: usize = 48;
    /// `sll_pkttype` of the `sockaddr_ll` at `SIZE`.
    pub const SLL_PKTTYPE: usize = SIZE + 10;
    /// Where a TX frame's data starts: `TPACKET3_HDRLEN - sizeof(sockaddr_ll)`.
    pub const TX_DATA: usize = SIZE;
}

const PAGE: u32 = 4096;
/// Nominal frame size handed to the kernel (V3 RX packs packets tightly; this only
/// has to divide the block size).
const RX_FRAME_SIZE: u32 = 2048;
/// TX ring block size (frames never straddle blocks).
const TX_BLOCK_SIZE: u32 = 1 << 16;

/// How an AF_PACKET port receives (module docs, "Receiving").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxMode {
    /// `recvmmsg(2)` from the socket's queue: every frame at once.
    Recv,
    /// The TPACKET_V3 ring: no syscall per burst, but a partly filled block
    /// waits up to `tov` ms.
    Ring,
}

/// Frames taken from the socket per `recvmmsg(2)` call (`rx=recv`).
pub const RECV_BATCH: usize = 32;

/// Scratch bytes per received frame (`rx=recv`): a 64 KiB super-frame and
/// its `virtio_net_hdr`.
const RECV_BUF: usize = (64 << 10) + 128;

/// Ring geometry and timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// How frames are received; the ring settings below size the socket's
    /// receive buffer in `Recv` mode.
    pub rx: RxMode,
    /// RX blocks.
    pub blocks: u32,
    /// Bytes per RX block (multiple of 4096).
    pub block_size: u32,
    /// Milliseconds after which a partly filled RX block is handed over anyway
    /// (bounds the latency of a quiet port).
    pub tov_ms: u32,
    /// TX ring slots (rounded up to fill whole TX blocks).
    pub tx_frames: u32,
}

impl Default for Config {
    fn default() -> Self {
        // 32 × 128 KiB = 4 MiB of RX ring (≈ 30 000 small frames); 512 TX slots.
        Config { rx: RxMode::Recv, blocks: 32, block_size: 1 << 17, tov_ms: 1, tx_frames: 512 }
    }
}

impl Config {
    /// Defaults overridden by the spec's `rx`, `blocks`, `block_size`, `tov`, `tx_frames`.
    pub fn from_spec(spec: &PortSpec) -> io::Result<Config> {
        let d = Config::default();
        let rx = match spec.option("rx") {
            None | Some("recv") => RxMode::Recv,
            Some("ring") => RxMode::Ring,
            Some(other) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("afpacket rx {other:?}: expected recv or ring"),
                ))
            }
        };
        let c = Config {
            rx,
            blocks: spec.option_parse("blocks")?.unwrap_or(d.blocks),
            block_size: spec.option_parse("block_size")?.unwrap_or(d.block_size),
            tov_ms: spec.option_parse("tov")?.unwrap_or(d.tov_ms),
            tx_frames: spec.option_parse("tx_frames")?.unwrap_or(d.tx_frames),
        };
        c.check()?;
        Ok(c)
    }

    fn check(&self) -> io::Result<()> {
        let bad = |what: &str| Err(io::Error::new(io::ErrorKind::InvalidInput, what.to_string()));
        if self.block_size < PAGE || self.block_size % PAGE != 0 || self.block_size > 1 << 26 {
            return bad("afpacket block_size must be a multiple of 4096, at most 64 MiB");
        }
        if self.blocks == 0 || self.blocks > 4096 {
            return bad("afpacket blocks must be 1..=4096");
        }
        if self.tx_frames == 0 || self.tx_frames > 1 << 16 {
            return bad("afpacket tx_frames must be 1..=65536");
        }
        if u64::from(self.blocks) * u64::from(self.block_size) > 1 << 30 {
            return bad("afpacket RX ring larger than 1 GiB");
        }
        Ok(())
    }
}

/// `struct tpacket_req3`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct TpacketReq3 {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
    retire_blk_tov: u32,
    sizeof_priv: u32,
    feature_req_word: u32,
}

/// `struct tpacket_stats_v3`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct TpacketStatsV3 {
    packets: u32,
    drops: u32,
    freeze_q_cnt: u32,
}

/// An AF_PACKET port. See the module docs.
pub struct AfPacket {
    fd: OwnedFd,
    map: sys::Mmap,
    name: String,
    ifindex: u32,
    hw: [u8; 6],
    rx_block_size: usize,
    rx_blocks: usize,
    /// Block being read (or next to be read).
    rx_cur: usize,
    /// Packets left in `rx_cur` (0: not inside a block).
    rx_left: u32,
    /// Offset of the next packet inside `rx_cur`.
    rx_off: usize,
    empty_polls: u32,
    tx_base: usize,
    tx_frame_size: usize,
    tx_frames_per_block: usize,
    tx_frames: usize,
    tx_head: usize,
    tx_max_len: usize,
    tx_pending: bool,
    /// Frames (and bytes) put on the TX ring since the last kick.
    tx_unkicked: (u64, u64),
    removed: bool,
    stats: PortStats,
    kernel_drops: Cell<u64>,
    /// Whether the socket speaks `virtio_net_hdr` (`PACKET_VNET_HDR`): one
    /// precedes every received frame and must precede every sent one.
    vnet: bool,
    /// The TCP super-frame being cut (see [`crate::gso`]): its bytes, its
    /// plan, and the next segment to hand out (0: none in progress).
    gso_frame: Vec<u8>,
    gso_plan: Option<gso::Plan>,
    gso_next: usize,
    rx_mode: RxMode,
    /// `rx=recv` scratch (empty in ring mode).
    recv: Recv,
}

/// What one `recvmmsg(2)` call brought (`rx=recv`): frames `next..count`
/// of it are still to be handed out.
struct Recv {
    bufs: Vec<Vec<u8>>,
    /// Control messages (`PACKET_AUXDATA`), 8-byte aligned.
    ctl: Vec<[u64; 8]>,
    addr: Vec<libc::sockaddr_ll>,
    /// Per frame: bytes, `msg_flags`, control bytes.
    meta: Vec<(usize, i32, usize)>,
    next: usize,
    count: usize,
}

impl Recv {
    fn new(mode: RxMode) -> Recv {
        let n = if mode == RxMode::Recv { RECV_BATCH } else { 0 };
        Recv {
            bufs: (0..n).map(|_| vec![0u8; RECV_BUF]).collect(),
            ctl: vec![[0u64; 8]; n],
            // SAFETY: `sockaddr_ll` is plain integers; all zeros is a valid value.
            addr: vec![unsafe { std::mem::zeroed() }; n],
            meta: vec![(0, 0, 0); n],
            next: 0,
            count: 0,
        }
    }
}

/// `tpacket_auxdata` of a received frame: `tp_status`, and the VLAN tag the
/// kernel took out of the frame (TPID, TCI) if `TP_STATUS_VLAN_VALID`.
fn aux_of(ctl: &[u64; 8], len: usize) -> (u32, Option<[u8; 4]>) {
    let mut b = [0u8; 64];
    for (d, w) in b.chunks_exact_mut(8).zip(ctl) {
        d.copy_from_slice(&w.to_ne_bytes());
    }
    let b = &b[..len.min(64)];
    // struct cmsghdr { size_t cmsg_len; int cmsg_level; int cmsg_type; } + data
    let mut off = 0;
    while let Some(h) = b.get(off..off + 16) {
        let clen = u64::from_ne_bytes(h[..8].try_into().unwrap_or_default()) as usize;
        let level = rd32(h, 8).unwrap_or(0) as i32;
        let ty = rd32(h, 12).unwrap_or(0) as i32;
        if clen < 16 {
            break;
        }
        if level == libc::SOL_PACKET && ty == PACKET_AUXDATA && clen >= 16 + 20 {
            let Some(d) = b.get(off + 16..off + 36) else { break };
            let status = rd32(d, 0).unwrap_or(0);
            let tag = (status & TP_STATUS_VLAN_VALID != 0).then(|| {
                let tci = rd16(d, 16).unwrap_or(0);
                let tpid = if status & TP_STATUS_VLAN_TPID_VALID != 0 {
                    rd16(d, 18).unwrap_or(0x8100)
                } else {
                    0x8100
                };
                let [a, b] = tpid.to_be_bytes();
                let [c, e] = tci.to_be_bytes();
                [a, b, c, e]
            });
            return (status, tag);
        }
        off += clen.div_ceil(8) * 8;
    }
    (0, None)
}

fn ctx(what: &str, name: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("afpacket:{name}: {what}: {e}"))
}

fn removed_error(name: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("afpacket:{name}: interface removed"))
}

fn rd32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn rd16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

/// How [`AfPacket::rx_cut`] left the packet at `rx_off`.
enum Cut {
    /// Not a super-frame: read it as any other.
    NotGso,
    /// Cut into segments, but the burst is full: more next time.
    Partly,
    /// Every segment handed out (or the frame dropped): move on; its
    /// `tp_next_offset`.
    Done(u32),
    /// The ring's header is out of bounds.
    Corrupt,
}

/// What to do with one packet of an RX block.
enum Rx {
    /// Copied into the buffer.
    Delivered(usize),
    /// Skipped (outgoing frame).
    Skipped,
    /// Dropped (truncated / too big for the buffer).
    Dropped,
}

/// One packet of an RX block as its `tpacket3_hdr` describes it.
struct RingPkt<'a> {
    next: u32,
    outgoing: bool,
    /// `tp_snaplen < tp_len`: the ring holds only part of the frame.
    truncated: bool,
    csum_partial: bool,
    /// Offset of the frame (`tp_mac`) in the block.
    start: usize,
    /// The frame's bytes; `None` if they lie outside the block.
    data: Option<&'a [u8]>,
    /// A VLAN tag the kernel moved into metadata (TPID then TCI), to put
    /// back.
    tag: Option<[u8; 4]>,
}

/// The packet at `off` of `block`, or `None` if its header is out of bounds.
fn ring_pkt(block: &[u8], off: usize) -> Option<RingPkt<'_>> {
    let h = block.get(off..off.checked_add(hdr::SIZE + 20)?)?;
    let snaplen = rd32(h, hdr::SNAPLEN)? as usize;
    let status = rd32(h, hdr::STATUS)?;
    let start = off.checked_add(usize::from(rd16(h, hdr::MAC)?))?;
    let data = start.checked_add(snaplen).and_then(|end| block.get(start..end));
    let tag = if status & TP_STATUS_VLAN_VALID != 0 && data.is_some_and(|d| d.len() >= 12) {
        let tci = rd32(h, hdr::VLAN_TCI)? as u16;
        let tpid =
            if status & TP_STATUS_VLAN_TPID_VALID != 0 { rd16(h, hdr::VLAN_TPID)? } else { 0x8100 };
        let [a, b] = tpid.to_be_bytes();
        let [c, d] = tci.to_be_bytes();
        Some([a, b, c, d])
    } else {
        None
    };
    Some(RingPkt {
        next: rd32(h, hdr::NEXT_OFFSET)?,
        outgoing: *h.get(hdr::SLL_PKTTYPE)? == PACKET_OUTGOING,
        truncated: snaplen < rd32(h, hdr::LEN)? as usize,
        csum_partial: status & TP_STATUS_CSUMNOTREADY != 0,
        start,
        data,
        tag,
    })
}

/// Writes `data` with `tag` put back after the MAC addresses into the
/// start of `dst`; the frame's length, or `None` if `dst` is too small.
fn copy_frame(data: &[u8], tag: Option<[u8; 4]>, dst: &mut [u8]) -> Option<usize> {
    match tag {
        Some(tag) => {
            let dst = dst.get_mut(..data.len() + 4)?;
            dst[..12].copy_from_slice(&data[..12]);
            dst[12..16].copy_from_slice(&tag);
            dst[16..].copy_from_slice(&data[12..]);
            Some(dst.len())
        }
        None => {
            dst.get_mut(..data.len())?.copy_from_slice(data);
            Some(data.len())
        }
    }
}

/// Copies the packet at `off` of `block` into `buf`; returns what happened and the
/// packet's `tp_next_offset`, or `None` if the header is out of bounds.
fn rx_packet(block: &[u8], off: usize, buf: &mut RxBuf) -> Option<(Rx, u32)> {
    let p = ring_pkt(block, off)?;
    if p.outgoing {
        return Some((Rx::Skipped, p.next));
    }
    let data = p.data?;
    if p.truncated {
        return Some((Rx::Dropped, p.next));
    }
    match copy_frame(data, p.tag, buf.spare_mut()) {
        Some(len) => {
            buf.commit(len, p.csum_partial);
            Some((Rx::Delivered(len), p.next))
        }
        None => Some((Rx::Dropped, p.next)),
    }
}

/// What the `virtio_net_hdr` in front of the packet at `off` says: `None`
/// if out of bounds; `Some(None)` for a frame that is not a whole TCP or
/// UDP super-frame (outgoing and truncated ones included: the plain path
/// skips or drops them); `Some(Some((gso_type, gso_size)))` for one, then
/// copied into `out` as [`rx_packet`] copies a frame.
fn rx_gso(block: &[u8], off: usize, out: &mut Vec<u8>) -> Option<Option<(u8, u16)>> {
    let p = ring_pkt(block, off)?;
    let v = VnetHdr::parse(block.get(p.start.checked_sub(VNET_HDR_LEN)?..p.start)?)?;
    let kind = matches!(v.gso_type, gso::GSO_TCPV4 | gso::GSO_TCPV6 | gso::GSO_UDP_L4);
    if !kind || v.gso_size == 0 || p.outgoing || p.truncated {
        return Some(None);
    }
    let data = p.data?;
    out.resize(data.len() + 4, 0);
    let len = copy_frame(data, p.tag, out)?;
    out.truncate(len);
    Some(Some((v.gso_type, v.gso_size)))
}

impl AfPacket {
    /// Opens `ifname` (in the calling thread's network namespace).
    pub fn open(ifname: &str, cfg: &Config) -> io::Result<AfPacket> {
        cfg.check()?;
        let fd = sys::socket(libc::AF_PACKET, libc::SOCK_RAW, 0)
            .map_err(|e| ctx("socket(AF_PACKET)", ifname, e))?;
        let raw = fd.as_raw_fd();
        let ifindex = sys::if_index(raw, ifname).map_err(|e| ctx("SIOCGIFINDEX", ifname, e))?;
        let hw = sys::if_hwaddr(raw, ifname).map_err(|e| ctx("SIOCGIFHWADDR", ifname, e))?;
        let mtu = sys::if_mtu(raw, ifname).map_err(|e| ctx("SIOCGIFMTU", ifname, e))? as usize;
        let sol = libc::SOL_PACKET;
        sys::setsockopt(raw, sol, PACKET_VERSION, &TPACKET_V3)
            .map_err(|e| ctx("PACKET_VERSION", ifname, e))?;
        // Must precede the rings (EBUSY afterwards).
        sys::setsockopt(raw, sol, PACKET_LOSS, &1i32).map_err(|e| ctx("PACKET_LOSS", ifname, e))?;
        // TCP super-frames arrive with their segment size, so they can be
        // cut (`crate::gso`); a kernel without it gives plain frames.
        let vnet = sys::setsockopt(raw, sol, PACKET_VNET_HDR, &1i32).is_ok();
        let vnet_len = if vnet { VNET_HDR_LEN } else { 0 };

        let ring_bytes = cfg.block_size as usize * cfg.blocks as usize;
        let rx_len = if cfg.rx == RxMode::Ring {
            let rx = TpacketReq3 {
                block_size: cfg.block_size,
                block_nr: cfg.blocks,
                frame_size: RX_FRAME_SIZE,
                frame_nr: cfg.block_size / RX_FRAME_SIZE * cfg.blocks,
                retire_blk_tov: cfg.tov_ms,
                sizeof_priv: 0,
                feature_req_word: 0,
            };
            sys::setsockopt(raw, sol, PACKET_RX_RING, &rx)
                .map_err(|e| ctx("PACKET_RX_RING", ifname, e))?;
            ring_bytes
        } else {
            sys::setsockopt(raw, sol, PACKET_AUXDATA, &1i32)
                .map_err(|e| ctx("PACKET_AUXDATA", ifname, e))?;
            // As much queued as the ring would hold; beyond the sysctl
            // limit only with CAP_NET_ADMIN (SO_RCVBUFFORCE).
            let bytes = i32::try_from(ring_bytes).unwrap_or(i32::MAX);
            if sys::setsockopt(raw, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &bytes).is_err() {
                sys::setsockopt(raw, libc::SOL_SOCKET, libc::SO_RCVBUF, &bytes)
                    .map_err(|e| ctx("SO_RCVBUF", ifname, e))?;
            }
            0
        };

        // TX slot: header + frame of up to MTU + Ethernet header + one VLAN tag.
        let need = (hdr::TX_DATA + vnet_len + mtu + 18) as u32;
        let tx_frame_size = need.max(2048).next_power_of_two();
        let tx_block_size = TX_BLOCK_SIZE.max(tx_frame_size);
        let per_block = tx_block_size / tx_frame_size;
        let tx_blocks = cfg.tx_frames.div_ceil(per_block);
        let tx = TpacketReq3 {
            block_size: tx_block_size,
            block_nr: tx_blocks,
            frame_size: tx_frame_size,
            frame_nr: per_block * tx_blocks,
            ..TpacketReq3::default()
        };
        sys::setsockopt(raw, sol, PACKET_TX_RING, &tx)
            .map_err(|e| ctx("PACKET_TX_RING", ifname, e))?;
        sys::setsockopt(raw, sol, PACKET_QDISC_BYPASS, &1i32)
            .map_err(|e| ctx("PACKET_QDISC_BYPASS", ifname, e))?;
        sys::setsockopt(raw, sol, PACKET_IGNORE_OUTGOING, &1i32)
            .map_err(|e| ctx("PACKET_IGNORE_OUTGOING", ifname, e))?;

        let tx_len = tx_block_size as usize * tx_blocks as usize;
        let map = sys::Mmap::shared(raw, rx_len + tx_len).map_err(|e| ctx("mmap", ifname, e))?;
        sys::bind_packet(raw, ifindex, sys::ETH_P_ALL).map_err(|e| ctx("bind", ifname, e))?;
        sys::packet_promisc(raw, ifindex).map_err(|e| ctx("PACKET_MR_PROMISC", ifname, e))?;

        Ok(AfPacket {
            fd,
            map,
            name: ifname.to_string(),
            ifindex,
            hw,
            rx_block_size: cfg.block_size as usize,
            rx_blocks: if cfg.rx == RxMode::Ring { cfg.blocks as usize } else { 0 },
            rx_cur: 0,
            rx_left: 0,
            rx_off: 0,
            empty_polls: 0,
            tx_base: rx_len,
            tx_frame_size: tx_frame_size as usize,
            tx_frames_per_block: per_block as usize,
            tx_frames: (per_block * tx_blocks) as usize,
            tx_head: 0,
            tx_max_len: (tx_frame_size as usize - hdr::TX_DATA - vnet_len).min(mtu + 18),
            tx_pending: false,
            tx_unkicked: (0, 0),
            removed: false,
            stats: PortStats::default(),
            kernel_drops: Cell::new(0),
            vnet,
            gso_frame: Vec::new(),
            gso_plan: None,
            gso_next: 0,
            rx_mode: cfg.rx,
            recv: Recv::new(cfg.rx),
        })
    }

    /// Past the packet at `rx_off`, whose `tp_next_offset` is `next`.
    fn advance(&mut self, next: u32) {
        self.rx_left -= 1;
        if self.rx_left == 0 {
            self.release_block();
        } else if next == 0 {
            self.stats.rx_errors += u64::from(self.rx_left);
            self.release_block();
        } else {
            self.rx_off += next as usize;
        }
    }

    /// The packet at `rx_off`, if a TCP or UDP super-frame: its segments into
    /// `bufs[*n..]`, resuming where an earlier burst stopped. One that
    /// cannot be cut counts as one receive error.
    fn rx_cut(&mut self, block: &[u8], bufs: &mut [RxBuf], n: &mut usize) -> Cut {
        let Some(next) = block.get(self.rx_off..).and_then(|b| rd32(b, hdr::NEXT_OFFSET)) else {
            return Cut::Corrupt;
        };
        if self.gso_next == 0 {
            match rx_gso(block, self.rx_off, &mut self.gso_frame) {
                None => return Cut::Corrupt,
                Some(None) => return Cut::NotGso,
                Some(Some((kind, mss))) => match gso::plan(&self.gso_frame, kind, mss) {
                    Some(p) => self.gso_plan = Some(p),
                    None => {
                        self.stats.rx_errors += 1;
                        return Cut::Done(next);
                    }
                },
            }
        }
        if self.gso_plan.is_none() {
            return Cut::NotGso;
        }
        if self.emit_segments(bufs, n) {
            Cut::Done(next)
        } else {
            Cut::Partly
        }
    }

    /// Hands out the segments of the super-frame being cut into
    /// `bufs[*n..]`; true once all are out, false when `bufs` is full.
    fn emit_segments(&mut self, bufs: &mut [RxBuf], n: &mut usize) -> bool {
        let Some(p) = self.gso_plan else { return true };
        while self.gso_next < p.count {
            let Some(buf) = bufs.get_mut(*n) else { return false };
            match gso::segment(&self.gso_frame, &p, self.gso_next, buf.spare_mut()) {
                Some(len) => {
                    // Payload moved: the worker computes every segment's
                    // TCP checksum.
                    buf.commit(len, true);
                    self.stats.rx_packets += 1;
                    self.stats.rx_bytes += len as u64;
                    *n += 1;
                }
                None => self.stats.rx_errors += 1,
            }
            self.gso_next += 1;
        }
        self.gso_next = 0;
        self.gso_plan = None;
        true
    }

    /// `rx=recv`: one `recvmmsg(2)` of up to `want` frames into the scratch
    /// buffers; 0 when none is waiting (or the link is down: the caller's
    /// `check_gone` looks at that).
    fn recv_batch(&mut self, want: usize) -> io::Result<usize> {
        let r = &mut self.recv;
        let want = want.min(r.bufs.len());
        // SAFETY: zeroed `iovec`/`mmsghdr` are valid (null pointers, zero lengths).
        let mut iov: [libc::iovec; RECV_BATCH] = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut hdrs: [libc::mmsghdr; RECV_BATCH] = unsafe { std::mem::zeroed() };
        for i in 0..want {
            iov[i] = libc::iovec { iov_base: r.bufs[i].as_mut_ptr().cast(), iov_len: RECV_BUF };
            let h = &mut hdrs[i].msg_hdr;
            h.msg_name = (&mut r.addr[i] as *mut libc::sockaddr_ll).cast();
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            h.msg_iov = &mut iov[i];
            h.msg_iovlen = 1;
            h.msg_control = r.ctl[i].as_mut_ptr().cast();
            h.msg_controllen = std::mem::size_of::<[u64; 8]>() as _;
        }
        // SAFETY: every header points into buffers of this port that live
        // through the call, with their true lengths; `want` headers exist.
        let got = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                hdrs.as_mut_ptr(),
                want as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if got < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN | libc::EINTR | libc::ENETDOWN | libc::ENOBUFS) => Ok(0),
                _ => Err(ctx("recvmmsg", &self.name, e)),
            };
        }
        let got = (got as usize).min(want);
        #[allow(clippy::unnecessary_cast)] // `msg_controllen` is u32 on musl
        for (m, h) in r.meta.iter_mut().zip(&hdrs).take(got) {
            *m = (h.msg_len as usize, h.msg_hdr.msg_flags, h.msg_hdr.msg_controllen as usize);
        }
        r.next = 0;
        r.count = got;
        Ok(got)
    }

    /// `rx=recv`: scratch frame `i` into `bufs[*n]` (or, a super-frame,
    /// into the cutter: [`AfPacket::emit_segments`] hands it out).
    fn rx_message(&mut self, i: usize, bufs: &mut [RxBuf], n: &mut usize) {
        let r = &self.recv;
        let (len, flags, ctl_len) = r.meta[i];
        if r.addr[i].sll_pkttype == PACKET_OUTGOING {
            return;
        }
        if flags & libc::MSG_TRUNC != 0 {
            self.stats.rx_errors += 1;
            return;
        }
        let (status, tag) = aux_of(&r.ctl[i], ctl_len);
        let data = &r.bufs[i][..len.min(RECV_BUF)];
        let (vnet, frame) = if self.vnet {
            match (data.get(..VNET_HDR_LEN).and_then(VnetHdr::parse), data.get(VNET_HDR_LEN..)) {
                (Some(v), Some(f)) => (Some(v), f),
                _ => {
                    self.stats.rx_errors += 1;
                    return;
                }
            }
        } else {
            (None, data)
        };
        if frame.len() < 14 {
            self.stats.rx_errors += 1;
            return;
        }
        if let Some(v) = vnet.filter(|v| {
            v.gso_size != 0
                && matches!(v.gso_type, gso::GSO_TCPV4 | gso::GSO_TCPV6 | gso::GSO_UDP_L4)
        }) {
            self.gso_frame.resize(frame.len() + 4, 0);
            let plan = copy_frame(frame, tag, &mut self.gso_frame).and_then(|l| {
                self.gso_frame.truncate(l);
                gso::plan(&self.gso_frame, v.gso_type, v.gso_size)
            });
            match plan {
                Some(p) => {
                    self.gso_plan = Some(p);
                    self.gso_next = 0;
                }
                None => self.stats.rx_errors += 1,
            }
            return;
        }
        let Some(buf) = bufs.get_mut(*n) else { return };
        match copy_frame(frame, tag, buf.spare_mut()) {
            Some(l) => {
                buf.commit(l, status & TP_STATUS_CSUMNOTREADY != 0);
                self.stats.rx_packets += 1;
                self.stats.rx_bytes += l as u64;
                *n += 1;
            }
            None => self.stats.rx_errors += 1,
        }
    }

    /// `rx_burst` for `rx=recv`: the super-frame being cut, the frames the
    /// last `recvmmsg` left, then at most one more `recvmmsg`.
    fn rx_recv(&mut self, bufs: &mut [RxBuf]) -> io::Result<usize> {
        let mut n = 0;
        let mut called = false;
        // Bounded: each round hands out a frame, or ends.
        while n < bufs.len() {
            if self.gso_plan.is_some() && !self.emit_segments(bufs, &mut n) {
                break;
            }
            if n >= bufs.len() {
                break;
            }
            if self.recv.next == self.recv.count {
                if called || self.recv_batch(bufs.len() - n)? == 0 {
                    break;
                }
                called = true;
            }
            let i = self.recv.next;
            self.recv.next += 1;
            self.rx_message(i, bufs, &mut n);
        }
        if n == 0 {
            self.check_gone()?;
        } else {
            self.empty_polls = 0;
        }
        Ok(n)
    }

    /// The interface index the port is bound to.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    fn rx_block_ptr(&self, i: usize) -> *mut u8 {
        debug_assert!(i < self.rx_blocks);
        // SAFETY: i < rx_blocks, so the offset stays inside the RX part of the map.
        unsafe { self.map.as_ptr().add(i * self.rx_block_size) }
    }

    fn block_status(&self, i: usize) -> &AtomicU32 {
        // SAFETY: block_status is a naturally aligned u32 inside block `i` (blocks
        // are page aligned); the kernel accesses it atomically too, and the map lives
        // as long as `self`.
        unsafe { &*(self.rx_block_ptr(i).add(blk::BLOCK_STATUS) as *const AtomicU32) }
    }

    fn release_block(&mut self) {
        self.block_status(self.rx_cur).store(TP_STATUS_KERNEL, Ordering::Release);
        self.rx_cur = (self.rx_cur + 1) % self.rx_blocks;
        self.rx_left = 0;
        self.rx_off = 0;
    }

    fn tx_slot_ptr(&self, i: usize) -> *mut u8 {
        debug_assert!(i < self.tx_frames);
        let block = i / self.tx_frames_per_block;
        let within = i % self.tx_frames_per_block;
        let off = self.tx_base
            + block * self.tx_frames_per_block.max(1) * self.tx_frame_size
            + within * self.tx_frame_size;
        // The TX block size is per_block × frame_size exactly (both powers of two).
        debug_assert!(off + self.tx_frame_size <= self.map.len());
        // SAFETY: i < tx_frames keeps the slot inside the TX part of the map.
        unsafe { self.map.as_ptr().add(off) }
    }

    fn tx_status(&self, i: usize) -> &AtomicU32 {
        // SAFETY: tp_status is a naturally aligned u32 inside slot `i` (slots are
        // 2048-byte aligned), shared atomically with the kernel; the map outlives
        // the borrow.
        unsafe { &*(self.tx_slot_ptr(i).add(hdr::STATUS) as *const AtomicU32) }
    }

    /// Checks, when the ring is empty, whether the interface went away.
    fn check_gone(&mut self) -> io::Result<()> {
        self.empty_polls = self.empty_polls.wrapping_add(1);
        if self.empty_polls % 16 != 1 {
            return Ok(());
        }
        let raw = self.fd.as_raw_fd();
        // Clears a pending ENETDOWN so poll() stops reporting POLLERR.
        let _ = sys::take_socket_error(raw)?;
        let bound = sys::packet_bound_ifindex(raw)?;
        if bound != self.ifindex as i32 {
            self.removed = true;
            return Err(removed_error(&self.name));
        }
        Ok(())
    }

    /// Writes one frame into the TX ring without telling the kernel; false
    /// when the ring is full (the kernel still owns the next slot). A frame
    /// the port can never send is consumed and counted in `tx_errors`.
    fn tx_put(&mut self, f: &[u8]) -> bool {
        if f.len() < 14 || f.len() > self.tx_max_len {
            self.stats.tx_errors += 1;
            return true;
        }
        let head = self.tx_head;
        let status = self.tx_status(head).load(Ordering::Acquire);
        if status == TP_STATUS_WRONG_FORMAT {
            self.stats.tx_errors += 1;
        } else if status != TP_STATUS_AVAILABLE {
            return false;
        }
        let slot = self.tx_slot_ptr(head);
        // SAFETY: the slot is AVAILABLE (or WRONG_FORMAT), i.e. owned by user
        // space; `tx_max_len + TX_DATA + v <= tx_frame_size` keeps every write
        // inside it. The header words are written before the release store below.
        // With `PACKET_VNET_HDR`, an all-zero `virtio_net_hdr` (no GSO, the
        // checksum complete) goes in front of the frame.
        let v = if self.vnet { VNET_HDR_LEN } else { 0 };
        let len = ((v + f.len()) as u32).to_ne_bytes();
        unsafe {
            let s = std::slice::from_raw_parts_mut(slot, self.tx_frame_size);
            s[hdr::NEXT_OFFSET..hdr::NEXT_OFFSET + 4].copy_from_slice(&0u32.to_ne_bytes());
            s[hdr::SNAPLEN..hdr::SNAPLEN + 4].copy_from_slice(&len);
            s[hdr::LEN..hdr::LEN + 4].copy_from_slice(&len);
            s[hdr::TX_DATA..hdr::TX_DATA + v].fill(0);
            s[hdr::TX_DATA + v..hdr::TX_DATA + v + f.len()].copy_from_slice(f);
        }
        self.tx_status(head).store(TP_STATUS_SEND_REQUEST, Ordering::Release);
        self.tx_head = (head + 1) % self.tx_frames;
        self.tx_unkicked.0 += 1;
        self.tx_unkicked.1 += f.len() as u64;
        true
    }

    /// Tells the kernel to send what [`AfPacket::tx_put`] queued (and what an
    /// earlier kick left behind because the device was busy). Frames count
    /// as transmitted once a kick took them or the device was only busy; a
    /// failed kick takes them back off the ring and counts them dropped.
    fn tx_kick(&mut self) -> io::Result<()> {
        if self.tx_unkicked.0 == 0 && !self.tx_pending {
            return Ok(());
        }
        let (packets, bytes) = std::mem::take(&mut self.tx_unkicked);
        match sys::kick_tx(self.fd.as_raw_fd()) {
            Ok(_) => self.tx_pending = false,
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.raw_os_error() == Some(libc::ENOBUFS) =>
            {
                // Queued; the next kick tries again.
                self.tx_pending = true;
            }
            Err(e) => {
                let dropped = self.tx_revert();
                self.stats.tx_dropped += dropped;
                let gone = matches!(e.raw_os_error(), Some(libc::ENXIO | libc::ENODEV));
                if gone {
                    self.removed = true;
                    return Err(removed_error(&self.name));
                }
                return Err(ctx("transmit", &self.name, e));
            }
        }
        self.stats.tx_packets += packets;
        self.stats.tx_bytes += bytes;
        Ok(())
    }

    /// Puts the unsent run of SEND_REQUEST slots just behind the head back to
    /// AVAILABLE and moves the head to its start; returns how many.
    fn tx_revert(&mut self) -> u64 {
        let mut n = 0;
        for _ in 0..self.tx_frames {
            let prev = (self.tx_head + self.tx_frames - 1) % self.tx_frames;
            let st = self.tx_status(prev);
            if st.load(Ordering::Acquire) != TP_STATUS_SEND_REQUEST {
                break;
            }
            st.store(TP_STATUS_AVAILABLE, Ordering::Release);
            self.tx_head = prev;
            n += 1;
        }
        self.tx_pending = false;
        n
    }
}

impl Port for AfPacket {
    fn rx_burst(&mut self, bufs: &mut [RxBuf]) -> io::Result<usize> {
        if self.removed {
            return Err(removed_error(&self.name));
        }
        if self.rx_mode == RxMode::Recv {
            return self.rx_recv(bufs);
        }
        let mut n = 0;
        while n < bufs.len() {
            if self.rx_left == 0 {
                let status = self.block_status(self.rx_cur).load(Ordering::Acquire);
                if status & TP_STATUS_USER == 0 {
                    break;
                }
                // SAFETY: the block is owned by user space (TP_STATUS_USER seen with
                // acquire ordering), so the kernel does not write it until we store
                // TP_STATUS_KERNEL; it lies inside the map.
                let block = unsafe {
                    std::slice::from_raw_parts(self.rx_block_ptr(self.rx_cur), self.rx_block_size)
                };
                let num = rd32(block, blk::NUM_PKTS).unwrap_or(0);
                let first = rd32(block, blk::OFFSET_TO_FIRST_PKT).unwrap_or(0) as usize;
                if num == 0 || first >= self.rx_block_size {
                    self.release_block();
                    continue;
                }
                self.rx_left = num;
                self.rx_off = first;
            }
            // SAFETY: as above — we are inside a block we own (rx_left > 0 only
            // between seeing TP_STATUS_USER and releasing it).
            let block = unsafe {
                std::slice::from_raw_parts(self.rx_block_ptr(self.rx_cur), self.rx_block_size)
            };
            if n >= bufs.len() {
                break;
            }
            if self.vnet {
                match self.rx_cut(block, bufs, &mut n) {
                    Cut::NotGso => {}
                    Cut::Partly => break,
                    Cut::Done(next) => {
                        self.advance(next);
                        continue;
                    }
                    Cut::Corrupt => {
                        self.stats.rx_errors += u64::from(self.rx_left);
                        self.release_block();
                        continue;
                    }
                }
            }
            let Some(buf) = bufs.get_mut(n) else { break };
            let next = match rx_packet(block, self.rx_off, buf) {
                Some((Rx::Delivered(len), next)) => {
                    self.stats.rx_packets += 1;
                    self.stats.rx_bytes += len as u64;
                    n += 1;
                    next
                }
                Some((Rx::Skipped, next)) => next,
                Some((Rx::Dropped, next)) => {
                    self.stats.rx_errors += 1;
                    next
                }
                None => {
                    // Corrupt header: give up on the rest of the block.
                    self.stats.rx_errors += u64::from(self.rx_left);
                    self.release_block();
                    continue;
                }
            };
            self.advance(next);
        }
        if n == 0 {
            self.check_gone()?;
        } else {
            self.empty_polls = 0;
        }
        Ok(n)
    }

    fn tx_burst(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        if self.removed {
            return Err(removed_error(&self.name));
        }
        let mut consumed = 0;
        for f in frames {
            if !self.tx_put(f) {
                break;
            }
            consumed += 1;
        }
        self.tx_kick()?;
        Ok(consumed)
    }

    fn tx_queue(&mut self, frame: &[u8]) -> io::Result<bool> {
        if self.removed {
            return Err(removed_error(&self.name));
        }
        Ok(self.tx_put(frame))
    }

    fn tx_flush(&mut self) -> io::Result<()> {
        if self.removed {
            return Err(removed_error(&self.name));
        }
        self.tx_kick()
    }

    fn link_up(&self) -> bool {
        if self.removed {
            return false;
        }
        let raw = self.fd.as_raw_fd();
        let Ok(name) = sys::if_name(raw, self.ifindex) else { return false };
        match sys::if_flags(raw, &name) {
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
        Some(self.fd.as_raw_fd())
    }

    fn stats(&self) -> PortStats {
        // PACKET_STATISTICS resets on read: accumulate.
        if let Ok((st, _)) = sys::getsockopt::<TpacketStatsV3>(
            self.fd.as_raw_fd(),
            libc::SOL_PACKET,
            PACKET_STATISTICS,
        ) {
            let _ = (st.packets, st.freeze_q_cnt);
            self.kernel_drops.set(self.kernel_drops.get() + u64::from(st.drops));
        }
        PortStats { rx_dropped: self.kernel_drops.get(), ..self.stats }
    }
}

// SAFETY: the raw pointers inside `map` refer to memory owned by this value alone
// (the mapping), and all access goes through `&mut self` or atomics; nothing is tied
// to the creating thread.
unsafe impl Send for AfPacket {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tpacket3_hdr + sockaddr_ll + frame at offset 0 of a fake block.
    fn fake_packet(status: u32, pkttype: u8, frame: &[u8], vlan: Option<(u16, u16)>) -> Vec<u8> {
        let mac = 80usize;
        let mut b = vec![0u8; mac + frame.len() + 16];
        b[12..16].copy_from_slice(&(frame.len() as u32).to_ne_bytes());
        b[16..20].copy_from_slice(&(frame.len() as u32).to_ne_bytes());
        b[20..24].copy_from_slice(&status.to_ne_bytes());
        b[24..26].copy_from_slice(&(mac as u16).to_ne_bytes());
        if let Some((tci, tpid)) = vlan {
            b[32..36].copy_from_slice(&u32::from(tci).to_ne_bytes());
            b[36..38].copy_from_slice(&tpid.to_ne_bytes());
        }
        b[58] = pkttype;
        b[mac..mac + frame.len()].copy_from_slice(frame);
        b
    }

    const FRAME: [u8; 16] =
        [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 0x00];

    /// The `virtio_net_hdr` before `tp_mac` decides: a TCP super-frame is
    /// copied out (its VLAN tag put back) with its segment size; anything
    /// else is left to the plain path; a header out of bounds is `None`.
    #[test]
    fn reads_the_vnet_header_of_a_super_frame() {
        let mut frame = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        frame.resize(3000, 0xab);
        let vlan = Some((7u16, 0x88a8u16));
        let mut blk = fake_packet(TP_STATUS_USER | TP_STATUS_VLAN_VALID, 0, &frame, vlan);
        blk[70..80].copy_from_slice(&[1, gso::GSO_TCPV4, 66, 0, 0xa8, 0x05, 34, 0, 16, 0]);
        let mut out = Vec::new();
        assert_eq!(rx_gso(&blk, 0, &mut out), Some(Some((gso::GSO_TCPV4, 1448))));
        assert_eq!(out.len(), 3004);
        assert_eq!(&out[12..16], &[0x81, 0x00, 0, 7], "tag back in (no TPID flag: 0x8100)");
        assert_eq!(&out[16..18], &[0x08, 0x00]);
        blk[71] = gso::GSO_NONE;
        assert_eq!(rx_gso(&blk, 0, &mut out), Some(None));
        blk[71] = gso::GSO_UDP_L4;
        assert_eq!(rx_gso(&blk, 0, &mut out), Some(Some((gso::GSO_UDP_L4, 1448))));
        blk[71] = 3; // UFO (fragmentation), not cut
        assert_eq!(rx_gso(&blk, 0, &mut out), Some(None));
        // A truncated capture is left to the plain path, which drops it.
        blk[71] = gso::GSO_TCPV4;
        blk[16..20].copy_from_slice(&4000u32.to_ne_bytes());
        assert_eq!(rx_gso(&blk, 0, &mut out), Some(None));
        assert_eq!(rx_gso(&blk[..40], 0, &mut out), None);
    }

    #[test]
    fn copies_a_plain_frame() {
        let blk = fake_packet(TP_STATUS_USER, 0, &FRAME, None);
        let mut buf = RxBuf::new(64);
        let (r, next) = rx_packet(&blk, 0, &mut buf).unwrap();
        assert!(matches!(r, Rx::Delivered(16)));
        assert_eq!(next, 0);
        assert_eq!(buf.frame(), &FRAME);
        assert!(!buf.csum_partial());
    }

    #[test]
    fn reinserts_a_stripped_vlan_tag() {
        let st = TP_STATUS_USER | TP_STATUS_VLAN_VALID | TP_STATUS_VLAN_TPID_VALID;
        let blk = fake_packet(st, 0, &FRAME, Some((0x2064, 0x88a8)));
        let mut buf = RxBuf::new(64);
        let (r, _) = rx_packet(&blk, 0, &mut buf).unwrap();
        assert!(matches!(r, Rx::Delivered(20)));
        assert_eq!(
            buf.frame(),
            &[
                0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x88, 0xa8, 0x20, 0x64,
                0x08, 0x00, 0x45, 0x00
            ]
        );
        // Without TPID_VALID the tag is 802.1Q.
        let st = TP_STATUS_USER | TP_STATUS_VLAN_VALID | TP_STATUS_CSUMNOTREADY;
        let blk = fake_packet(st, 0, &FRAME, Some((5, 0)));
        rx_packet(&blk, 0, &mut buf).unwrap();
        assert_eq!(&buf.frame()[12..16], &[0x81, 0x00, 0x00, 0x05]);
        assert!(buf.csum_partial());
    }

    #[test]
    fn skips_outgoing_and_drops_oversize_and_rejects_bad_offsets() {
        let blk = fake_packet(TP_STATUS_USER, PACKET_OUTGOING, &FRAME, None);
        let mut buf = RxBuf::new(64);
        assert!(matches!(rx_packet(&blk, 0, &mut buf), Some((Rx::Skipped, 0))));
        let blk = fake_packet(TP_STATUS_USER, 0, &FRAME, None);
        let mut small = RxBuf::new(8);
        assert!(matches!(rx_packet(&blk, 0, &mut small), Some((Rx::Dropped, 0))));
        // Header beyond the block, frame beyond the block.
        assert!(rx_packet(&blk, blk.len() - 10, &mut buf).is_none());
        let mut bad = blk.clone();
        bad[12..16].copy_from_slice(&10_000u32.to_ne_bytes());
        assert!(rx_packet(&bad, 0, &mut buf).is_none());
        // Truncated capture (snaplen < len) is dropped.
        let mut trunc = blk;
        trunc[16..20].copy_from_slice(&100u32.to_ne_bytes());
        assert!(matches!(rx_packet(&trunc, 0, &mut buf), Some((Rx::Dropped, 0))));
    }

    #[test]
    fn config_checks() {
        assert!(Config::default().check().is_ok());
        assert!(Config { block_size: 1000, ..Config::default() }.check().is_err());
        assert!(Config { blocks: 0, ..Config::default() }.check().is_err());
        let spec = PortSpec::parse("afpacket:x,blocks=4,tov=5").unwrap();
        let c = Config::from_spec(&spec).unwrap();
        assert_eq!((c.blocks, c.tov_ms), (4, 5));
        let spec = PortSpec::parse("afpacket:x,blocks=lots").unwrap();
        assert!(Config::from_spec(&spec).is_err());
        assert_eq!(Config::default().rx, RxMode::Recv);
        let spec = PortSpec::parse("afpacket:x,rx=ring").unwrap();
        assert_eq!(Config::from_spec(&spec).unwrap().rx, RxMode::Ring);
        let spec = PortSpec::parse("afpacket:x,rx=mmap").unwrap();
        let e = Config::from_spec(&spec).unwrap_err().to_string();
        assert!(e.contains("\"mmap\"") && e.contains("recv or ring"), "{e}");
    }
}
