//! Completing transport checksums the sender left to "hardware".
//!
//! A frame that a local network stack sent through a veth (or any device
//! with checksum offload) reaches an AF_PACKET socket with its TCP/UDP
//! checksum not yet computed (`TP_STATUS_CSUMNOTREADY`, surfaced as
//! [`sluice_ports::RxBuf::csum_partial`]). Forwarded as is, the receiving
//! host would drop it as corrupt. The worker therefore recomputes the L4
//! checksum of such frames before they enter the pipeline, from scratch
//! (pseudo-header + segment with the field zeroed), which is correct
//! whatever the field held.
//!
//! Handled: Ethernet with up to two VLAN tags, IPv4 (unfragmented) and IPv6
//! (TCP/UDP directly after the fixed header), TCP and UDP. Anything else is
//! left untouched. Pure function on a byte slice; never panics.

use sluice_packet::checksum::{fold, ipv4_pseudo, ipv6_pseudo, sum};

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// Recomputes the TCP or UDP checksum of `frame` in place; returns whether
/// it did.
pub fn complete_l4_checksum(frame: &mut [u8]) -> bool {
    let mut off = 12;
    let mut ethertype = match be16(frame, off) {
        Some(t) => t,
        None => return false,
    };
    for _ in 0..2 {
        if matches!(ethertype, 0x8100 | 0x88a8) {
            off += 4;
            ethertype = match be16(frame, off) {
                Some(t) => t,
                None => return false,
            };
        }
    }
    let l3 = off + 2;
    let (proto, l4, l4_len, pseudo) = match ethertype {
        0x0800 => {
            let Some(&vihl) = frame.get(l3) else { return false };
            let ihl = usize::from(vihl & 0x0f) * 4;
            let (Some(total), Some(frag)) = (be16(frame, l3 + 2), be16(frame, l3 + 6)) else {
                return false;
            };
            // More fragments, or not the first fragment: no full segment here.
            if vihl >> 4 != 4 || ihl < 20 || frag & 0x3fff != 0 {
                return false;
            }
            let total = usize::from(total);
            let Some(&proto) = frame.get(l3 + 9) else { return false };
            if total < ihl || frame.len() < l3 + total {
                return false;
            }
            let (Some(src), Some(dst)) = (frame.get(l3 + 12..l3 + 16), frame.get(l3 + 16..l3 + 20))
            else {
                return false;
            };
            let (Ok(src), Ok(dst)) = (<[u8; 4]>::try_from(src), <[u8; 4]>::try_from(dst)) else {
                return false;
            };
            let len = total - ihl;
            (proto, l3 + ihl, len, ipv4_pseudo(&src, &dst, proto, len as u16))
        }
        0x86dd => {
            let (Some(plen), Some(&next)) = (be16(frame, l3 + 4), frame.get(l3 + 6)) else {
                return false;
            };
            let len = usize::from(plen);
            if frame.len() < l3 + 40 + len {
                return false;
            }
            let (Some(src), Some(dst)) = (frame.get(l3 + 8..l3 + 24), frame.get(l3 + 24..l3 + 40))
            else {
                return false;
            };
            let (Ok(src), Ok(dst)) = (<[u8; 16]>::try_from(src), <[u8; 16]>::try_from(dst)) else {
                return false;
            };
            (next, l3 + 40, len, ipv6_pseudo(&src, &dst, next, len as u32))
        }
        _ => return false,
    };
    let field = match proto {
        6 if l4_len >= 20 => l4 + 16,
        17 if l4_len >= 8 => l4 + 6,
        _ => return false,
    };
    let Some(seg) = frame.get_mut(l4..l4 + l4_len) else { return false };
    let rel = field - l4;
    seg[rel] = 0;
    seg[rel + 1] = 0;
    let mut c = !fold(pseudo + sum(seg));
    if proto == 17 && c == 0 {
        c = 0xffff;
    }
    seg[rel..rel + 2].copy_from_slice(&c.to_be_bytes());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A UDP datagram 10.0.0.1:1234 -> 10.0.0.2:5001, payload "hi", with a
    /// correct checksum (0x6b13, computed by hand from the RFC 768
    /// pseudo-header).
    fn udp_frame() -> Vec<u8> {
        let mut f = vec![
            0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00, // ethernet
            0x45, 0, 0, 30, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, // ipv4
            0x04, 0xd2, 0x13, 0x89, 0, 10, 0x6b, 0x13, b'h', b'i', // udp
        ];
        f.resize(60, 0); // Ethernet padding after the IP datagram
        f
    }

    #[test]
    fn udp_checksum_restored() {
        let good = udp_frame();
        let mut partial = good.clone();
        // What the sender leaves in the field: the pseudo-header sum.
        partial[40] = 0x12;
        partial[41] = 0x34;
        assert!(complete_l4_checksum(&mut partial));
        assert_eq!(partial, good);
    }

    #[test]
    fn tcp_over_vlan_verifies() {
        let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x81, 0x00, 0, 5, 0x08, 0x00];
        f.extend_from_slice(&[
            0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, // ipv4
        ]);
        f.extend_from_slice(&[
            0, 80, 0x13, 0x89, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0x20, 0, 0xde, 0xad, 0, 0,
        ]);
        assert!(complete_l4_checksum(&mut f));
        // Verifying: pseudo-header + segment sums to 0xffff.
        let seg = &f[38..58];
        let p = ipv4_pseudo(&[10, 0, 0, 1], &[10, 0, 0, 2], 6, 20);
        assert_eq!(fold(p + sum(seg)), 0xffff);
    }

    #[test]
    fn others_untouched() {
        let mut arp = udp_frame();
        arp[12] = 0x08;
        arp[13] = 0x06;
        let before = arp.clone();
        assert!(!complete_l4_checksum(&mut arp));
        assert_eq!(arp, before);
        let mut frag = udp_frame();
        frag[20] = 0x20; // MF
        assert!(!complete_l4_checksum(&mut frag));
        let mut short = udp_frame();
        short[17] = 200; // total length past the frame
        assert!(!complete_l4_checksum(&mut short));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(mut f in proptest::collection::vec(proptest::num::u8::ANY, 0..120)) {
            complete_l4_checksum(&mut f);
        }
    }
}
