//! Software segmentation of TCP and UDP super-frames (GSO/GRO) into
//! wire-sized frames.
//!
//! A local stack sending through a veth, or a NIC with GRO, hands an
//! AF_PACKET socket TCP frames of up to 64 KiB with the segment size in
//! the `virtio_net_hdr` the socket asked for (`PACKET_VNET_HDR`). The
//! switch forwards frames, not super-frames: every output (another
//! AF_PACKET port, AF_XDP, pcap, a PACKET_IN) takes at most an MTU, so
//! the port cuts them here, as the kernel would before a device without
//! TSO: the headers are copied in front of each `gso_size` run of
//! payload; IPv4 total length, identification (+1 per segment) and
//! header checksum, or the IPv6 payload length, and the TCP sequence
//! number follow; FIN and PSH stay on the last segment only, CWR on the
//! first only. A UDP super-frame (`UDP_L4`, a sender using
//! `UDP_SEGMENT`) becomes datagrams of `gso_size` payload bytes, each with
//! its UDP length. L4 checksums are left to the caller (the segments are
//! marked checksum-partial, and the worker completes them).
//!
//! Handled: Ethernet with up to two VLAN tags, IPv4 without fragments,
//! IPv6 with TCP as its first next header. Anything else is `None` (the
//! port counts it as a receive error).

/// Bytes of `struct virtio_net_hdr` (without `num_buffers`).
pub const VNET_HDR_LEN: usize = 10;

/// `gso_type` (`VIRTIO_NET_HDR_GSO_*`, the ECN bit masked off): not a
/// super-frame.
pub const GSO_NONE: u8 = 0;
/// `gso_type`: TCP over IPv4.
pub const GSO_TCPV4: u8 = 1;
/// `gso_type`: TCP over IPv6.
pub const GSO_TCPV6: u8 = 4;
/// `gso_type`: UDP over IPv4 or IPv6, cut into datagrams of `gso_size`
/// payload bytes (`UDP_SEGMENT` senders).
pub const GSO_UDP_L4: u8 = 5;
const GSO_ECN: u8 = 0x80;

/// The fields of a `virtio_net_hdr` the port uses (little-endian, as
/// the kernel writes it for packet sockets on little-endian machines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VnetHdr {
    /// `VIRTIO_NET_HDR_GSO_*` without the ECN bit.
    pub gso_type: u8,
    /// Payload bytes per segment.
    pub gso_size: u16,
}

impl VnetHdr {
    /// The header at the start of `b`, if `b` holds one.
    pub fn parse(b: &[u8]) -> Option<VnetHdr> {
        let b = b.get(..VNET_HDR_LEN)?;
        Some(VnetHdr { gso_type: b[1] & !GSO_ECN, gso_size: u16::from_le_bytes([b[4], b[5]]) })
    }
}

/// How one super-frame is cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Start of the IP header.
    l3: usize,
    v4: bool,
    /// Start of the TCP or UDP header.
    l4: usize,
    udp: bool,
    /// Bytes of headers (Ethernet to the end of TCP's options).
    hdrs: usize,
    mss: usize,
    /// Segments.
    pub count: usize,
}

/// The folded one's-complement sum of `b` (0xffff over a header whose
/// checksum is right).
fn ones_sum(b: &[u8]) -> u16 {
    sluice_packet::checksum::fold(sluice_packet::checksum::sum(b))
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// The plan for cutting `frame`, a super-frame of `gso_type`, into
/// segments of `mss` payload bytes, or `None` if it is not one this module
/// handles.
pub fn plan(frame: &[u8], gso_type: u8, mss: u16) -> Option<Plan> {
    let (proto, udp) = match gso_type {
        GSO_TCPV4 | GSO_TCPV6 => (6, false),
        GSO_UDP_L4 => (17, true),
        _ => return None,
    };
    let mss = usize::from(mss);
    if mss == 0 {
        return None;
    }
    let mut at = 12;
    let mut ethertype = be16(frame, at)?;
    for _ in 0..2 {
        if ethertype == 0x8100 || ethertype == 0x88a8 {
            at += 4;
            ethertype = be16(frame, at)?;
        }
    }
    let l3 = at + 2;
    let (v4, l4) = match ethertype {
        0x0800 => {
            let ihl = usize::from(*frame.get(l3)? & 0x0f) * 4;
            let frag = be16(frame, l3 + 6)? & 0x3fff;
            if ihl < 20 || *frame.get(l3 + 9)? != proto || frag != 0 {
                return None;
            }
            (true, l3 + ihl)
        }
        0x86dd => {
            if *frame.get(l3 + 6)? != proto {
                return None;
            }
            (false, l3 + 40)
        }
        _ => return None,
    };
    let l4_len = if udp { 8 } else { usize::from(*frame.get(l4 + 12)? >> 4) * 4 };
    let hdrs = l4 + l4_len;
    if l4_len < 8 || hdrs > frame.len() {
        return None;
    }
    let payload = frame.len() - hdrs;
    Some(Plan { l3, v4, l4, udp, hdrs, mss, count: payload.div_ceil(mss).max(1) })
}

/// Writes segment `i` of `frame` (cut by `p`) into `out`; its length, or
/// `None` if `out` is too small or `i` is past the last segment.
pub fn segment(frame: &[u8], p: &Plan, i: usize, out: &mut [u8]) -> Option<usize> {
    if i >= p.count {
        return None;
    }
    let start = p.hdrs + i * p.mss;
    let end = (start + p.mss).min(frame.len());
    let chunk = frame.get(start..end)?;
    let len = p.hdrs + chunk.len();
    let out = out.get_mut(..len)?;
    out[..p.hdrs].copy_from_slice(frame.get(..p.hdrs)?);
    out[p.hdrs..].copy_from_slice(chunk);
    if p.v4 {
        let total = (len - p.l3) as u16;
        out[p.l3 + 2..p.l3 + 4].copy_from_slice(&total.to_be_bytes());
        let id = be16(out, p.l3 + 4)?.wrapping_add(i as u16);
        out[p.l3 + 4..p.l3 + 6].copy_from_slice(&id.to_be_bytes());
        out[p.l3 + 10..p.l3 + 12].copy_from_slice(&[0, 0]);
        let c = !ones_sum(out.get(p.l3..p.l4)?);
        out[p.l3 + 10..p.l3 + 12].copy_from_slice(&c.to_be_bytes());
    } else {
        let payload = (len - p.l4) as u16;
        out[p.l3 + 4..p.l3 + 6].copy_from_slice(&payload.to_be_bytes());
    }
    if p.udp {
        let udp_len = (len - p.l4) as u16;
        out[p.l4 + 4..p.l4 + 6].copy_from_slice(&udp_len.to_be_bytes());
        return Some(len);
    }
    let seq = u32::from_be_bytes(out.get(p.l4 + 4..p.l4 + 8)?.try_into().ok()?);
    let seq = seq.wrapping_add((i * p.mss) as u32);
    out[p.l4 + 4..p.l4 + 8].copy_from_slice(&seq.to_be_bytes());
    let flags = &mut out[p.l4 + 13];
    if i + 1 != p.count {
        *flags &= !(0x01 | 0x08); // FIN, PSH: last segment only
    }
    if i != 0 {
        *flags &= !0x80; // CWR: first segment only
    }
    Some(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ethernet + IPv4 (id 0x1234) + TCP (seq 1000, PSH|ACK|FIN, 12 bytes
    /// of options) + `payload` bytes 0, 1, 2, ...
    fn v4_frame(payload: usize, vlan: bool) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        if vlan {
            f.extend_from_slice(&[0x81, 0x00, 0x00, 0x07]);
        }
        f.extend_from_slice(&[0x08, 0x00]);
        let total = (20 + 32 + payload) as u16;
        f.extend_from_slice(&[0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, 6, 0, 0]);
        let at = f.len() - 10;
        f[at..at + 2].copy_from_slice(&total.to_be_bytes());
        f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend_from_slice(&[0x30, 0x39, 0x00, 0x50]);
        f.extend_from_slice(&1000u32.to_be_bytes());
        f.extend_from_slice(&7u32.to_be_bytes());
        f.extend_from_slice(&[0x80, 0x80 | 0x19, 0x01, 0x00, 0, 0, 0, 0]);
        f.extend_from_slice(&[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
        f.extend((0..payload).map(|i| i as u8));
        f
    }

    #[test]
    fn cuts_ipv4_tcp_at_the_segment_size() {
        for vlan in [false, true] {
            let f = v4_frame(3000, vlan);
            let p = plan(&f, GSO_TCPV4, 1448).expect("a TCP frame");
            assert_eq!(p.count, 3);
            let l3 = if vlan { 18 } else { 14 };
            let mut payload = Vec::new();
            for i in 0..3 {
                let mut out = [0u8; 2048];
                let n = segment(&f, &p, i, &mut out).expect("fits");
                let s = &out[..n];
                let chunk = if i < 2 { 1448 } else { 104 };
                assert_eq!(n, l3 + 52 + chunk);
                assert_eq!(be16(s, l3 + 2), Some((52 + chunk) as u16), "total length");
                assert_eq!(be16(s, l3 + 4), Some(0x1234 + i as u16), "identification");
                assert_eq!(ones_sum(&s[l3..l3 + 20]), 0xffff, "header checksum");
                let seq = u32::from_be_bytes(s[l3 + 24..l3 + 28].try_into().unwrap());
                assert_eq!(seq, 1000 + 1448 * i as u32);
                let flags = s[l3 + 33];
                assert_eq!(flags & 0x01 != 0, i == 2, "FIN on the last only");
                assert_eq!(flags & 0x08 != 0, i == 2, "PSH on the last only");
                assert_eq!(flags & 0x80 != 0, i == 0, "CWR on the first only");
                assert_eq!(flags & 0x10, 0x10, "ACK on all");
                assert_eq!(&s[l3 + 40..l3 + 52], &f[l3 + 40..l3 + 52], "options copied");
                payload.extend_from_slice(&s[l3 + 52..]);
            }
            assert_eq!(payload, f[l3 + 52..].to_vec(), "the payload, in order, once");
            assert_eq!(segment(&f, &p, 3, &mut [0u8; 2048]), None);
            assert_eq!(segment(&f, &p, 0, &mut [0u8; 100]), None, "too small an output");
        }
    }

    #[test]
    fn cuts_udp_into_datagrams_with_their_length() {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend_from_slice(&[0x45, 0, 0x0b, 0xd4, 0, 9, 0x40, 0, 64, 17, 0, 0]);
        f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2, 0x13, 0x88, 0x00, 0x35, 0x0b, 0xc0, 0, 0]);
        f.extend((0..3000).map(|i| (i % 251) as u8));
        assert_eq!(plan(&f, GSO_TCPV4, 1200), None, "UDP is not TCP");
        let p = plan(&f, GSO_UDP_L4, 1200).expect("UDP");
        assert_eq!(p.count, 3);
        let mut payload = Vec::new();
        for i in 0..3 {
            let mut out = [0u8; 2048];
            let n = segment(&f, &p, i, &mut out).unwrap();
            let chunk = if i < 2 { 1200 } else { 600 };
            assert_eq!(n, 42 + chunk);
            assert_eq!(be16(&out, 16), Some((28 + chunk) as u16), "IP total length");
            assert_eq!(be16(&out, 18), Some(9 + i as u16), "identification");
            assert_eq!(be16(&out, 38), Some((8 + chunk) as u16), "UDP length");
            assert_eq!(&out[34..38], &f[34..38], "ports");
            payload.extend_from_slice(&out[42..n]);
        }
        assert_eq!(payload, f[42..].to_vec());
    }

    #[test]
    fn ipv6_gets_its_payload_length() {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];
        f.extend_from_slice(&[0x60, 0, 0, 0, 0, 0, 6, 64]);
        f.extend_from_slice(&[0; 32]);
        f.extend_from_slice(&[0, 1, 0, 2, 0, 0, 0, 5, 0, 0, 0, 0, 0x50, 0x18, 1, 0, 0, 0, 0, 0]);
        f.extend_from_slice(&[9; 2500]);
        let p = plan(&f, GSO_TCPV6, 1000).expect("TCP over IPv6");
        assert_eq!(p.count, 3);
        let mut out = [0u8; 2048];
        let n = segment(&f, &p, 2, &mut out).unwrap();
        assert_eq!(n, 14 + 40 + 20 + 500);
        assert_eq!(be16(&out, 18), Some(520));
        assert_eq!(u32::from_be_bytes(out[58..62].try_into().unwrap()), 2005);
    }

    #[test]
    fn refuses_what_it_does_not_handle() {
        let f = v4_frame(100, false);
        assert_eq!(plan(&f, GSO_TCPV4, 0), None, "no segment size");
        let mut udp = f.clone();
        udp[23] = 17;
        assert_eq!(plan(&udp, GSO_TCPV4, 1448), None, "UDP");
        let mut frag = f.clone();
        frag[20] = 0x20;
        assert_eq!(plan(&frag, GSO_TCPV4, 1448), None, "a fragment");
        assert_eq!(plan(&f[..40], GSO_TCPV4, 1448), None, "truncated");
        let mut arp = f;
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(plan(&arp, GSO_TCPV4, 1448), None);
        let p = plan(&v4_frame(0, false), GSO_TCPV4, 1448).unwrap();
        assert_eq!(p.count, 1, "a bare header is one segment");
        let hv = VnetHdr::parse(&[0, 0x81, 66, 0, 0xa8, 0x05, 0, 0, 0, 0]).unwrap();
        assert_eq!(hv, VnetHdr { gso_type: GSO_TCPV4, gso_size: 1448 });
    }
}
