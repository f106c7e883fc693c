//! A summary of an Ethernet frame (packet-in / packet-out data) as one
//! line of ovs-ofctl flow fields: `udp,vlan_tci=0x0000,dl_src=..,dl_dst=..,
//! nw_src=..,nw_dst=..,nw_tos=0,nw_ecn=0,nw_ttl=64,nw_frag=no,tp_src=..,
//! tp_dst=..`.
//!
//! Only what the printer needs: Ethernet with up to two VLAN tags, ARP,
//! IPv4 (with fragments), IPv6 (fixed header only), and the TCP, UDP, SCTP
//! and ICMP ports/types right after. Every read is bounds-checked with
//! `get`, so truncated or garbage frames print as far as they go.

use super::fields::mac;
use std::net::{Ipv4Addr, Ipv6Addr};

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    b.get(at..at + 2).map(|x| u16::from_be_bytes([x[0], x[1]]))
}

/// The flow summary, or `None` for a frame shorter than an Ethernet header.
pub fn summary(frame: &[u8]) -> Option<String> {
    let dst = frame.get(0..6)?;
    let src = frame.get(6..12)?;
    let mut ty = u16_at(frame, 12)?;
    let mut off = 14;
    let mut tci = 0u16;
    while ty == 0x8100 || ty == 0x88a8 {
        // Only the outermost tag's TCI is shown, like ovs-ofctl.
        if tci == 0 {
            tci = u16_at(frame, off)? | 0x1000;
        }
        ty = u16_at(frame, off + 2)?;
        off += 4;
    }
    let l2 = format!("vlan_tci=0x{tci:04x},dl_src={},dl_dst={}", mac(src), mac(dst));
    let rest = frame.get(off..).unwrap_or(&[]);
    let s = match ty {
        0x0800 => ipv4(rest, &l2),
        0x86dd => ipv6(rest, &l2),
        0x0806 => arp(rest, &l2),
        _ => None,
    };
    Some(s.unwrap_or_else(|| format!("{l2},dl_type=0x{ty:04x}")))
}

fn l4(proto: u8, b: &[u8]) -> (Option<&'static str>, String) {
    let ports = |b: &[u8]| match (u16_at(b, 0), u16_at(b, 2)) {
        (Some(s), Some(d)) => format!(",tp_src={s},tp_dst={d}"),
        _ => String::new(),
    };
    match proto {
        6 => (Some("tcp"), ports(b)),
        17 => (Some("udp"), ports(b)),
        132 => (Some("sctp"), ports(b)),
        1 | 58 => {
            let t = match (b.first(), b.get(1)) {
                (Some(t), Some(c)) => format!(",icmp_type={t},icmp_code={c}"),
                _ => String::new(),
            };
            (Some(if proto == 1 { "icmp" } else { "icmp6" }), t)
        }
        _ => (None, String::new()),
    }
}

fn ipv4(b: &[u8], l2: &str) -> Option<String> {
    let vihl = *b.first()?;
    let tos = *b.get(1)?;
    let frag = u16_at(b, 6)?;
    let ttl = *b.get(8)?;
    let proto = *b.get(9)?;
    let src = Ipv4Addr::new(*b.get(12)?, *b.get(13)?, *b.get(14)?, *b.get(15)?);
    let dst = Ipv4Addr::new(*b.get(16)?, *b.get(17)?, *b.get(18)?, *b.get(19)?);
    let ihl = usize::from(vihl & 0x0f) * 4;
    let (more, offset) = (frag & 0x2000 != 0, frag & 0x1fff);
    let nw_frag = match (more, offset) {
        (false, 0) => "no",
        (true, 0) => "first",
        _ => "later",
    };
    let (word, ports) =
        if offset == 0 { l4(proto, b.get(ihl..).unwrap_or(&[])) } else { (None, String::new()) };
    let head = match word {
        Some(w) => format!("{w},{l2}"),
        None => format!("ip,{l2}"),
    };
    let proto_tok = if word.is_none() { format!(",nw_proto={proto}") } else { String::new() };
    Some(format!(
        "{head},nw_src={src},nw_dst={dst}{proto_tok},nw_tos={},nw_ecn={},nw_ttl={ttl},nw_frag={nw_frag}{ports}",
        tos & 0xfc,
        tos & 3
    ))
}

fn ipv6(b: &[u8], l2: &str) -> Option<String> {
    let w = b.get(0..4)?;
    let flow = u32::from_be_bytes([w[0], w[1], w[2], w[3]]);
    let next = *b.get(6)?;
    let hop = *b.get(7)?;
    let src: [u8; 16] = b.get(8..24)?.try_into().ok()?;
    let dst: [u8; 16] = b.get(24..40)?.try_into().ok()?;
    let tc = ((flow >> 20) & 0xff) as u8;
    let (word, ports) = l4(next, b.get(40..).unwrap_or(&[]));
    let head = match word {
        Some("icmp6") => format!("icmp6,{l2}"),
        Some(w) => format!("{w}6,{l2}"),
        None => format!("ipv6,{l2}"),
    };
    let proto_tok = if word.is_none() { format!(",nw_proto={next}") } else { String::new() };
    Some(format!(
        "{head},ipv6_src={},ipv6_dst={},ipv6_label=0x{:05x}{proto_tok},nw_tos={},nw_ecn={},nw_ttl={hop}{ports}",
        Ipv6Addr::from(src),
        Ipv6Addr::from(dst),
        flow & 0xfffff,
        tc & 0xfc,
        tc & 3
    ))
}

fn arp(b: &[u8], l2: &str) -> Option<String> {
    let op = u16_at(b, 6)?;
    let sha = b.get(8..14)?;
    let spa = Ipv4Addr::new(*b.get(14)?, *b.get(15)?, *b.get(16)?, *b.get(17)?);
    let tha = b.get(18..24)?;
    let tpa = Ipv4Addr::new(*b.get(24)?, *b.get(25)?, *b.get(26)?, *b.get(27)?);
    Some(format!(
        "arp,{l2},arp_spa={spa},arp_tpa={tpa},arp_op={op},arp_sha={},arp_tha={}",
        mac(sha),
        mac(tha)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_frame_like_ovs_ofctl() {
        // The frame the capture scenario sends (scenario.rs PACKET).
        let f: Vec<u8> = [
            "020000000002020000000001080045000024000100004011",
            "66c60a0000010a0000020400080000100000deadbeefcafef00d",
        ]
        .concat()
        .as_bytes()
        .chunks(2)
        .map(|c| u8::from_str_radix(std::str::from_utf8(c).unwrap(), 16).unwrap())
        .collect();
        assert_eq!(
            summary(&f).unwrap(),
            "udp,vlan_tci=0x0000,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,nw_src=10.0.0.1,\
             nw_dst=10.0.0.2,nw_tos=0,nw_ecn=0,nw_ttl=64,nw_frag=no,tp_src=1024,tp_dst=2048"
        );
        // Truncated frames print what is there, never panic.
        for n in 0..f.len() {
            let _ = summary(&f[..n]);
        }
        assert!(summary(&f[..13]).is_none());
        assert!(summary(&f[..20]).unwrap().ends_with("dl_type=0x0800"));
    }
}
