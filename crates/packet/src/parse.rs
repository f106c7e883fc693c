//! The packet parser: bytes in, [`FlowKey`] (in [`FIXED_LAYOUT`]) and
//! [`ParseInfo`] (header offsets) out.
//!
//! # What it extracts
//! Every OpenFlow 1.3.5 basic field:
//! - `in_port`, `in_phy_port`, `metadata`, `tunnel_id` from [`Meta`].
//! - `eth_dst`, `eth_src`; `eth_type` is the ethertype *after* all VLAN
//!   tags (0x8100 and 0x88a8 are both tags); an 802.3 length reads as
//!   0x05ff ([`ethertype::NONE`]).
//! - `vlan_vid` (`OFPVID_PRESENT | vid`, or `OFPVID_NONE` untagged) and
//!   `vlan_pcp` from the **outer** tag.
//! - MPLS: label, TC and BoS of the top label; the parser stops there
//!   (`eth_type` is then 0x8847/0x8848 and no IP field can be required).
//! - PBB: `pbb_isid` of the I-TAG; the parser stops there too.
//! - ARP (Ethernet/IPv4 only): op, spa, tpa, sha, tha.
//! - IPv4: dscp, ecn, proto, src, dst. L4 fields only when the fragment
//!   offset is 0.
//! - IPv6: src, dst, flow label, dscp, ecn; the extension-header walk gives
//!   `ipv6_exthdr` and the final protocol (`ip_proto`). L4 fields only when
//!   the walk reaches an upper-layer header (not after ESP, no-next, or a
//!   fragment header with a non-zero offset).
//! - TCP/UDP/SCTP ports, ICMPv4/ICMPv6 type and code, and for Neighbor
//!   Solicitation / Advertisement (code 0) the target and the SLL (in an
//!   NS) / TLL (in an NA) option.
//!
//! # Malformed input
//! The parser never panics and never allocates. Every header is read
//! through its view's `new_checked`; a header that fails stops the walk,
//! and everything found before it stays in the key. Each header that was
//! read completely sets its presence bit (see the `key` module docs), so a
//! truncated or later-fragment packet cannot match a rule on the fields it
//! lacks. Lengths inside headers bound what follows: IPv4 `total_len` and
//! IPv6 `payload_len` cut the datagram (Ethernet padding is never taken for
//! L4 bytes). Packets longer than 65535 bytes are parsed over their first
//! 65535 bytes (offsets in [`ParseInfo`] are `u16`).
//!
//! # ipv6_exthdr
//! Flags follow `enum ofp_ipv6exthdr_flags`. The order RFC 8200 §4.1
//! recommends is: hop-by-hop, destination options (before routing),
//! routing, fragment, AH, ESP, destination options (final). `UNSEQ` is set
//! when a header appears after one that should follow it (hop-by-hop
//! anywhere but first included); `UNREP` when a header appears twice, or
//! destination options more than twice / twice in the same position.
//! At most [`MAX_EXT_HEADERS`] extension headers are walked; a chain longer
//! than that ends the walk (no L4 fields).
//!
//! # Performance
//! One pass, no loops except over VLAN tags and IPv6 extension headers
//! (both bounded and making progress every step), no allocation; fields
//! are OR-ed into a zeroed key at constant slot positions.

use crate::field::Field;
use crate::key::{exthdr, presence, FlowKey, FIXED_LAYOUT, OFPVID_PRESENT, PRESENCE_WORD};
use crate::wire::{
    arp, ethernet, ethertype, icmpv4, icmpv6, ipproto, ipv4, ipv6, mpls, pbb, sctp, tcp, udp, vlan,
};

/// Most IPv6 extension headers the parser walks.
pub const MAX_EXT_HEADERS: usize = 16;

/// Pipeline metadata that is not in the packet bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Meta {
    pub in_port: u32,
    pub in_phy_port: u32,
    pub metadata: u64,
    pub tunnel_id: u64,
}

/// What sits right after the Ethernet header and VLAN tags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum L2_5 {
    #[default]
    None,
    /// `l2_5` is the top label stack entry.
    Mpls,
    /// `l2_5` is the I-TCI of an I-TAG.
    Pbb,
}

/// The network header kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum L3 {
    #[default]
    None,
    Arp,
    Ipv4,
    Ipv6,
}

/// The transport header kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum L4 {
    #[default]
    None,
    Tcp,
    Udp,
    Sctp,
    Icmpv4,
    Icmpv6,
}

/// IP fragmentation state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Frag {
    /// Not a fragment.
    #[default]
    No,
    /// First fragment (offset 0, more fragments): L4 header present but
    /// the L4 checksum covers bytes this packet does not hold.
    First,
    /// Offset ≠ 0: no L4 header.
    Later,
}

/// Header offsets found by [`parse`], from the start of the packet, so
/// actions can rewrite in place. Offsets are valid for the bytes that were
/// parsed; after any rewrite that changes lengths the caller re-parses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ParseInfo {
    /// Bytes parsed (the packet length, capped at 65535).
    pub len: u16,
    /// A complete Ethernet header is at offset 0.
    pub eth: bool,
    /// Offset of the outer VLAN tag's TPID (12), if tagged.
    pub vlan: Option<u16>,
    /// Number of VLAN tags read.
    pub vlan_count: u8,
    /// Offset of the ethertype after the VLAN tags (the one `eth_type`
    /// reports), if it was readable.
    pub ethertype_offset: Option<u16>,
    /// The ethertype at `ethertype_offset` (raw, even if < 0x0600).
    pub ethertype: u16,
    /// Offset of the MPLS top label or the PBB I-TCI.
    pub l2_5: Option<u16>,
    pub l2_5_kind: L2_5,
    /// Offset of the ARP / IPv4 / IPv6 header.
    pub l3: Option<u16>,
    pub l3_kind: L3,
    /// End of the IP datagram (bounded by the packet), or `len`.
    pub l3_end: u16,
    /// The final IP protocol / next header.
    pub ip_proto: u8,
    /// Offset of the byte holding `ip_proto` (IPv4 protocol field or the
    /// last IPv6 next-header field).
    pub ip_proto_offset: Option<u16>,
    pub frag: Frag,
    /// Offset of the transport header.
    pub l4: Option<u16>,
    pub l4_kind: L4,
    /// Offset of the transport payload.
    pub payload: Option<u16>,
    /// Offset of the 6-byte address in the ND SLL option (NS only).
    pub nd_sll: Option<u16>,
    /// Offset of the 6-byte address in the ND TLL option (NA only).
    pub nd_tll: Option<u16>,
}

// Slot constants, folded at compile time.
macro_rules! slot {
    ($f:ident) => {{
        const S: crate::key::Slot = FIXED_LAYOUT.slot(Field::$f);
        S
    }};
}

#[inline(always)]
fn or(key: &mut FlowKey, s: crate::key::Slot, v: u64) {
    key.words[s.word as usize] |= v << s.shift;
}

#[inline(always)]
fn or128(key: &mut FlowKey, s: crate::key::Slot, v: &[u8; 16]) {
    let v = u128::from_be_bytes(*v);
    key.words[s.word as usize] = (v >> 64) as u64;
    key.words[s.word as usize + 1] = v as u64;
}

#[inline(always)]
fn mac(a: [u8; 6]) -> u64 {
    u64::from_be_bytes([0, 0, a[0], a[1], a[2], a[3], a[4], a[5]])
}

#[inline(always)]
fn mark(key: &mut FlowKey, bit: u8) {
    key.words[PRESENCE_WORD] |= 1 << bit;
}

/// Write `meta.metadata` into `key`'s metadata slot (what [`parse`] would
/// put there): a write-metadata instruction changes nothing else in the
/// key, so it needs no re-parse.
#[inline]
pub fn refresh_metadata(key: &mut FlowKey, meta: &Meta) {
    const S: crate::key::Slot = FIXED_LAYOUT.slot(Field::Metadata);
    // `metadata` is 64 bits wide: it fills its word.
    const _: () = assert!(S.shift == 0);
    if let Some(w) = key.words.get_mut(S.word as usize) {
        *w = meta.metadata;
    }
}

/// How many leading bytes of a frame [`parse_into`] may have read to give
/// `info` (and the key it filled): an upper bound, so any frame of the same
/// length, received with the same [`Meta`], whose first `extent(info)`
/// bytes are the same parses the same way to the same key and `ParseInfo`
/// (the parse reads only those bytes and the frame's length; the raw-header
/// cache, `sluice_core::cache`, relies on this). Conservative: the
/// transport payload's offset when a TCP, UDP, SCTP or ICMPv4 header was
/// parsed after an IPv4 header or an IPv6 header without extension headers
/// (every header read, Ethernet to transport, ends there: `check_len` of
/// each transport header keeps its reads inside its header length);
/// otherwise the whole frame (ICMPv6 neighbour-discovery options run to the
/// datagram's end; a parse that stopped early may have probed any byte).
pub fn extent(info: &ParseInfo) -> usize {
    let len = usize::from(info.len);
    let plain_v6 = match (info.l3_kind, info.l3, info.ip_proto_offset) {
        (L3::Ipv6, Some(l3), Some(nh)) => {
            usize::from(nh) == usize::from(l3) + ipv6::NEXT_HEADER_OFFSET
        }
        (L3::Ipv6, ..) => false,
        _ => true,
    };
    match (info.l4_kind, info.payload) {
        (L4::Tcp | L4::Udp | L4::Sctp | L4::Icmpv4, Some(p)) if info.eth && plain_v6 => {
            usize::from(p).min(len)
        }
        _ => len,
    }
}

/// Parse `pkt` into `key` (overwritten entirely) and return the header
/// offsets. Never panics, never allocates.
pub fn parse(pkt: &[u8], meta: &Meta, key: &mut FlowKey) -> ParseInfo {
    let mut info = ParseInfo::default();
    parse_into(pkt, meta, key, &mut info);
    info
}

/// [`parse`] writing the header offsets into `info` (overwritten
/// entirely) in place. A packet that keeps its `ParseInfo` should use this:
/// the parser's narrow stores land where later reads look, instead of in a
/// temporary the caller then copies in wide loads that cannot be forwarded
/// from them (a store-forwarding stall per packet).
pub fn parse_into(pkt: &[u8], meta: &Meta, key: &mut FlowKey, info: &mut ParseInfo) {
    *key = FlowKey::ZERO;
    let pkt = &pkt[..pkt.len().min(usize::from(u16::MAX))];
    let len = pkt.len();
    *info = ParseInfo { len: len as u16, l3_end: len as u16, ..ParseInfo::default() };

    or(key, slot!(InPort), u64::from(meta.in_port));
    or(key, slot!(InPhyPort), u64::from(meta.in_phy_port));
    or(key, slot!(Metadata), meta.metadata);
    or(key, slot!(TunnelId), meta.tunnel_id);

    let Ok(eth) = ethernet::Packet::new_checked(pkt) else {
        return;
    };
    info.eth = true;
    mark(key, presence::ETH);
    or(key, slot!(EthDst), mac(eth.dst_addr()));
    or(key, slot!(EthSrc), mac(eth.src_addr()));

    // VLAN tags: `off` is the offset of the ethertype field being looked at.
    let mut off = ethernet::ETHERTYPE_OFFSET;
    let mut et = eth.ethertype();
    while et == ethertype::VLAN || et == ethertype::QINQ {
        // `off + 2 <= len` holds: `et` was read from pkt[off..off + 2].
        let Ok(tag) = vlan::Packet::new_checked(&pkt[off + 2..]) else {
            break;
        };
        if info.vlan_count == 0 {
            info.vlan = Some(off as u16);
            mark(key, presence::VLAN);
            or(key, slot!(VlanVid), u64::from(OFPVID_PRESENT | tag.vid()));
            or(key, slot!(VlanPcp), u64::from(tag.pcp()));
        }
        info.vlan_count = info.vlan_count.saturating_add(1);
        off += vlan::HEADER_LEN;
        et = tag.ethertype();
    }
    info.ethertype_offset = Some(off as u16);
    info.ethertype = et;
    let eth_type = if et < ethertype::MIN_ETHERTYPE { ethertype::NONE } else { et };
    or(key, slot!(EthType), u64::from(eth_type));
    if et == ethertype::VLAN || et == ethertype::QINQ {
        // a tag TPID whose body is cut off: nothing more to read
        return;
    }

    let l3 = off + 2;
    let rest = &pkt[l3..];
    match et {
        ethertype::MPLS_UNICAST | ethertype::MPLS_MULTICAST => {
            if let Ok(m) = mpls::Packet::new_checked(rest) {
                mark(key, presence::MPLS);
                or(key, slot!(MplsLabel), u64::from(m.label()));
                or(key, slot!(MplsTc), u64::from(m.tc()));
                or(key, slot!(MplsBos), u64::from(m.bos()));
                info.l2_5 = Some(l3 as u16);
                info.l2_5_kind = L2_5::Mpls;
            }
        }
        ethertype::PBB => {
            // The I-TCI alone carries pbb_isid; require the customer
            // addresses too, so pop_pbb always has a frame to expose.
            if let Ok(t) = pbb::Packet::new_checked(rest) {
                mark(key, presence::PBB);
                or(key, slot!(PbbIsid), u64::from(t.isid()));
                info.l2_5 = Some(l3 as u16);
                info.l2_5_kind = L2_5::Pbb;
            }
        }
        ethertype::ARP => {
            if let Ok(a) = arp::Packet::new_checked(rest) {
                if a.is_eth_ipv4() {
                    mark(key, presence::ARP);
                    or(key, slot!(ArpOp), u64::from(a.oper()));
                    or(key, slot!(ArpSpa), u64::from(u32::from_be_bytes(a.spa())));
                    or(key, slot!(ArpTpa), u64::from(u32::from_be_bytes(a.tpa())));
                    or(key, slot!(ArpSha), mac(a.sha()));
                    or(key, slot!(ArpTha), mac(a.tha()));
                    info.l3 = Some(l3 as u16);
                    info.l3_kind = L3::Arp;
                }
            }
        }
        ethertype::IPV4 => parse_ipv4(pkt, l3, key, info),
        ethertype::IPV6 => parse_ipv6(pkt, l3, key, info),
        _ => {}
    }
}

fn parse_ipv4(pkt: &[u8], l3: usize, key: &mut FlowKey, info: &mut ParseInfo) {
    let Ok(ip) = ipv4::Packet::new_checked(&pkt[l3..]) else {
        return;
    };
    mark(key, presence::IP);
    mark(key, presence::IPV4);
    or(key, slot!(IpDscp), u64::from(ip.dscp()));
    or(key, slot!(IpEcn), u64::from(ip.ecn()));
    or(key, slot!(IpProto), u64::from(ip.protocol()));
    or(key, slot!(Ipv4Src), u64::from(u32::from_be_bytes(ip.src_addr())));
    or(key, slot!(Ipv4Dst), u64::from(u32::from_be_bytes(ip.dst_addr())));
    info.l3 = Some(l3 as u16);
    info.l3_kind = L3::Ipv4;
    info.ip_proto = ip.protocol();
    info.ip_proto_offset = Some((l3 + 9) as u16);
    let hl = ip.header_len();
    let tot = usize::from(ip.total_len());
    let end = (l3 + tot).min(pkt.len());
    info.l3_end = end as u16;
    if ip.frag_offset() != 0 {
        info.frag = Frag::Later;
        return;
    }
    if ip.more_frags() {
        info.frag = Frag::First;
    }
    if tot < hl {
        return; // total length inside the header: no transport bytes
    }
    parse_l4(pkt, l3 + hl, end, ip.protocol(), false, key, info);
}

/// Rank of each extension header in RFC 8200's recommended order.
const RANK_HOP: u8 = 1;
const RANK_DEST1: u8 = 2;
const RANK_ROUTER: u8 = 3;
const RANK_FRAG: u8 = 4;
const RANK_AUTH: u8 = 5;
const RANK_ESP: u8 = 6;
const RANK_DEST2: u8 = 7;

/// Running state of the `ipv6_exthdr` computation.
#[derive(Default)]
struct ExtState {
    flags: u16,
    last_rank: u8,
    dest_count: u8,
    count: u8,
}

impl ExtState {
    fn see(&mut self, nh: u8) {
        let (flag, rank) = match nh {
            ipproto::HOPOPTS => (exthdr::HOP, RANK_HOP),
            ipproto::ROUTING => (exthdr::ROUTER, RANK_ROUTER),
            ipproto::FRAGMENT => (exthdr::FRAG, RANK_FRAG),
            ipproto::AH => (exthdr::AUTH, RANK_AUTH),
            ipproto::ESP => (exthdr::ESP, RANK_ESP),
            ipproto::DSTOPTS => {
                self.dest_count = self.dest_count.saturating_add(1);
                // before routing/fragment/AH/ESP it is the first position,
                // afterwards the final one
                let rank = if self.last_rank < RANK_ROUTER { RANK_DEST1 } else { RANK_DEST2 };
                if self.dest_count > 2 || rank == self.last_rank {
                    self.flags |= exthdr::UNREP;
                } else if rank < self.last_rank {
                    self.flags |= exthdr::UNSEQ;
                }
                self.flags |= exthdr::DEST;
                self.last_rank = self.last_rank.max(rank);
                self.count += 1;
                return;
            }
            _ => return,
        };
        if self.flags & flag != 0 {
            self.flags |= exthdr::UNREP;
        } else if rank < self.last_rank || (rank == RANK_HOP && self.count > 0) {
            self.flags |= exthdr::UNSEQ;
        }
        self.flags |= flag;
        self.last_rank = self.last_rank.max(rank);
        self.count += 1;
    }
}

fn parse_ipv6(pkt: &[u8], l3: usize, key: &mut FlowKey, info: &mut ParseInfo) {
    let Ok(ip) = ipv6::Packet::new_checked(&pkt[l3..]) else {
        return;
    };
    mark(key, presence::IP);
    mark(key, presence::IPV6);
    or(key, slot!(IpDscp), u64::from(ip.dscp()));
    or(key, slot!(IpEcn), u64::from(ip.ecn()));
    or128(key, slot!(Ipv6Src), &ip.src_addr());
    or128(key, slot!(Ipv6Dst), &ip.dst_addr());
    or(key, slot!(Ipv6Flabel), u64::from(ip.flow_label()));
    info.l3 = Some(l3 as u16);
    info.l3_kind = L3::Ipv6;
    let pl = usize::from(ip.payload_len());
    let end = if pl == 0 { pkt.len() } else { (l3 + ipv6::HEADER_LEN + pl).min(pkt.len()) };
    info.l3_end = end as u16;

    let mut nh = ip.next_header();
    let mut nh_off = l3 + ipv6::NEXT_HEADER_OFFSET;
    let mut off = l3 + ipv6::HEADER_LEN;
    let mut st = ExtState::default();
    let mut l4_ok = false;
    for _ in 0..MAX_EXT_HEADERS {
        match nh {
            ipproto::HOPOPTS
            | ipproto::ROUTING
            | ipproto::DSTOPTS
            | ipproto::FRAGMENT
            | ipproto::AH => {
                st.see(nh);
                let Some(seg) = pkt.get(off..end) else { break };
                let Ok(h) = ipv6::ExtHeader::new_checked(seg, nh) else { break };
                let hl = h.header_len().unwrap_or(ipv6::EXT_MIN_LEN);
                nh_off = off;
                nh = h.next_header();
                off += hl;
                if h.kind() == ipproto::FRAGMENT {
                    if h.frag_offset() != 0 {
                        info.frag = Frag::Later;
                        break;
                    }
                    if h.more_frags() {
                        info.frag = Frag::First;
                    }
                }
            }
            ipproto::ESP => {
                st.see(nh);
                break;
            }
            ipproto::NONXT => {
                st.flags |= exthdr::NONEXT;
                break;
            }
            _ => {
                l4_ok = true;
                break;
            }
        }
    }
    or(key, slot!(Ipv6Exthdr), u64::from(st.flags));
    or(key, slot!(IpProto), u64::from(nh));
    info.ip_proto = nh;
    info.ip_proto_offset = Some(nh_off as u16);
    if l4_ok {
        parse_l4(pkt, off, end, nh, true, key, info);
    }
}

fn parse_l4(
    pkt: &[u8],
    l4: usize,
    end: usize,
    proto: u8,
    v6: bool,
    key: &mut FlowKey,
    info: &mut ParseInfo,
) {
    let Some(seg) = pkt.get(l4..end) else { return };
    let (kind, payload) = match proto {
        ipproto::TCP => {
            let Ok(t) = tcp::Packet::new_checked(seg) else { return };
            mark(key, presence::TCP);
            or(key, slot!(TcpSrc), u64::from(t.src_port()));
            or(key, slot!(TcpDst), u64::from(t.dst_port()));
            (L4::Tcp, t.header_len())
        }
        ipproto::UDP => {
            let Ok(u) = udp::Packet::new_checked(seg) else { return };
            mark(key, presence::UDP);
            or(key, slot!(UdpSrc), u64::from(u.src_port()));
            or(key, slot!(UdpDst), u64::from(u.dst_port()));
            (L4::Udp, udp::HEADER_LEN)
        }
        ipproto::SCTP => {
            let Ok(s) = sctp::Packet::new_checked(seg) else { return };
            mark(key, presence::SCTP);
            or(key, slot!(SctpSrc), u64::from(s.src_port()));
            or(key, slot!(SctpDst), u64::from(s.dst_port()));
            (L4::Sctp, sctp::HEADER_LEN)
        }
        ipproto::ICMP if !v6 => {
            let Ok(i) = icmpv4::Packet::new_checked(seg) else { return };
            mark(key, presence::ICMPV4);
            or(key, slot!(Icmpv4Type), u64::from(i.msg_type()));
            or(key, slot!(Icmpv4Code), u64::from(i.msg_code()));
            (L4::Icmpv4, icmpv4::HEADER_LEN)
        }
        ipproto::ICMPV6 if v6 => {
            let Ok(i) = icmpv6::Packet::new_checked(seg) else { return };
            mark(key, presence::ICMPV6);
            let (ty, code) = (i.msg_type(), i.msg_code());
            or(key, slot!(Icmpv6Type), u64::from(ty));
            or(key, slot!(Icmpv6Code), u64::from(code));
            if (ty == icmpv6::ND_NEIGHBOR_SOLICIT || ty == icmpv6::ND_NEIGHBOR_ADVERT) && code == 0
            {
                parse_nd(seg, l4, ty, key, info);
            }
            (L4::Icmpv6, icmpv6::HEADER_LEN)
        }
        _ => return,
    };
    info.l4 = Some(l4 as u16);
    info.l4_kind = kind;
    info.payload = Some((l4 + payload).min(end) as u16);
}

fn parse_nd(seg: &[u8], l4: usize, ty: u8, key: &mut FlowKey, info: &mut ParseInfo) {
    let Ok(nd) = icmpv6::NdPacket::new_checked(seg) else { return };
    mark(key, presence::ND_TARGET);
    or128(key, slot!(Ipv6NdTarget), &nd.target());
    let want =
        if ty == icmpv6::ND_NEIGHBOR_SOLICIT { icmpv6::ND_OPT_SLL } else { icmpv6::ND_OPT_TLL };
    // First option of the wanted kind with an Ethernet address wins.
    for opt in nd.options() {
        if opt.kind != want {
            continue;
        }
        let Some(a) = opt.body.get(..6) else { break };
        let mut m = [0u8; 6];
        m.copy_from_slice(a);
        let at = Some((l4 + opt.offset + 2) as u16);
        if want == icmpv6::ND_OPT_SLL {
            mark(key, presence::ND_SLL);
            or(key, slot!(Ipv6NdSll), mac(m));
            info.nd_sll = at;
        } else {
            mark(key, presence::ND_TLL);
            or(key, slot!(Ipv6NdTll), mac(m));
            info.nd_tll = at;
        }
        break;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(chain: &[u8]) -> u16 {
        let mut st = ExtState::default();
        for &h in chain {
            st.see(h);
        }
        st.flags
    }

    #[test]
    fn exthdr_order_rules() {
        use ipproto::*;
        // the recommended order raises no flag
        assert_eq!(
            flags(&[HOPOPTS, DSTOPTS, ROUTING, FRAGMENT, AH, ESP]),
            exthdr::HOP | exthdr::DEST | exthdr::ROUTER | exthdr::FRAG | exthdr::AUTH | exthdr::ESP
        );
        // a final destination-options header after routing is allowed
        assert_eq!(flags(&[DSTOPTS, ROUTING, DSTOPTS]), exthdr::DEST | exthdr::ROUTER);
        assert_eq!(flags(&[FRAGMENT, DSTOPTS]), exthdr::FRAG | exthdr::DEST);
        // hop-by-hop not first
        assert_eq!(flags(&[ROUTING, HOPOPTS]), exthdr::ROUTER | exthdr::HOP | exthdr::UNSEQ);
        // repeats
        assert_eq!(flags(&[ROUTING, ROUTING]), exthdr::ROUTER | exthdr::UNREP);
        assert_eq!(flags(&[DSTOPTS, DSTOPTS]), exthdr::DEST | exthdr::UNREP);
        assert_eq!(flags(&[HOPOPTS, HOPOPTS]), exthdr::HOP | exthdr::UNREP);
        // out of order
        assert_eq!(flags(&[AH, FRAGMENT]), exthdr::AUTH | exthdr::FRAG | exthdr::UNSEQ);
        assert_eq!(flags(&[FRAGMENT, ROUTING]), exthdr::FRAG | exthdr::ROUTER | exthdr::UNSEQ);
    }

    #[test]
    fn minimal_ipv4_udp_literal() {
        // eth / IPv4 10.0.0.1 -> 10.0.0.2 proto 17 / UDP 53 -> 5353
        let p: [u8; 42] = [
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00, // eth
            0x45, 0x00, 0x00, 0x1c, 0, 0, 0, 0, 64, 17, 0x66, 0xcf, 10, 0, 0, 1, 10, 0, 0,
            2, // ip
            0, 53, 0x14, 0xe9, 0, 8, 0, 0, // udp
        ];
        let mut k = FlowKey::ZERO;
        let i = parse(&p, &Meta { in_port: 3, ..Meta::default() }, &mut k);
        let g = |f| FIXED_LAYOUT.get(&k, f).to_u128();
        assert_eq!(g(Field::InPort), 3);
        assert_eq!(g(Field::EthDst), 0x0001_0203_0405);
        assert_eq!(g(Field::EthSrc), 0x0607_0809_0a0b);
        assert_eq!(g(Field::Ipv4Dst), 0x0a00_0002);
        assert_eq!((g(Field::UdpSrc), g(Field::UdpDst)), (53, 5353));
        assert_eq!((i.l3, i.l4, i.payload, i.l3_end), (Some(14), Some(34), Some(42), 42));
        // words: eth_dst<<16 | eth_type in word 1, udp ports low in word 4
        assert_eq!(k.words[1], 0x0001_0203_0405_0800);
        assert_eq!(k.words[4], 53 << 16 | 5353);
    }

    #[test]
    fn short_and_empty() {
        let mut k = FlowKey::ZERO;
        let i = parse(&[], &Meta::default(), &mut k);
        assert!(!i.eth);
        assert_eq!(k.words[PRESENCE_WORD], 0);
        let i = parse(&[0xff; 13], &Meta::default(), &mut k);
        assert!(!i.eth);
        // a VLAN TPID with the tag body missing
        let mut p = [0u8; 16];
        p[12] = 0x81;
        let i = parse(&p, &Meta::default(), &mut k);
        assert_eq!(
            (i.vlan, i.ethertype, FIXED_LAYOUT.get(&k, Field::VlanVid).to_u128()),
            (None, 0x8100, 0)
        );
    }
}
