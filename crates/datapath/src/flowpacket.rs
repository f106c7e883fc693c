//! A packet built from an ovs-ofctl-style flow description, for
//! `sluice trace --flow` and the switch's live trace, like the flow argument of `ovs-appctl
//! ofproto/trace` (`in_port=1,tcp,nw_src=10.0.0.1,nw_dst=10.1.2.3,tp_dst=80`).
//!
//! # What?
//! [`build`] reads the description with the project's own flow parser
//! (`sluice_ofp::ofctl::parse_flow`), so every match-field name ovs-ofctl
//! accepts is understood with the same syntax (`tcp`, `dl_vlan`, `nw_tos`,
//! `tp_dst`, masks, reserved port names). Two keys that OpenFlow 1.3 cannot
//! match but a packet needs are taken by the builder itself: `nw_ttl=N`
//! (IPv4 TTL or IPv6 hop limit, default 64) and `tcp_flags=N` (a number,
//! or flag names such as `+syn+ack`; default none).
//!
//! # The frame
//! Ethernet (`dl_src` 02:00:00:00:00:01 and `dl_dst` 02:00:00:00:00:02
//! unless given), an 802.1Q tag when `dl_vlan`/`vlan_vid` says present or
//! `dl_vlan_pcp` is given, then by `eth_type`: IPv4 (valid header
//! checksum), IPv6, ARP (Ethernet/IPv4), any other ethertype with an empty
//! payload; above IP by `nw_proto`: TCP, UDP, SCTP (CRC32c), ICMPv4,
//! ICMPv6 (each with a valid checksum and no payload), any other protocol
//! with an empty payload. The frame is padded with zeros to 60 bytes.
//! Every field not given is zero, as in Open vSwitch's flow.
//!
//! Masked values (`nw_dst=10.0.0.0/8`) contribute their value bits
//! (value AND mask).
//!
//! # POF fields
//! `pof(POS,LEN)=VALUE[/MASK]` (`sluice_ofp::ofctl::pof`'s syntax) writes
//! its value bits, where the mask is 1, into the frame once the headers
//! are built, at the offset the switch's parser finds for its base
//! (`l3+96` is 96 bits into the IPv4 header). A field past the end of the
//! frame grows it with zero bytes (up to [`MAX_POF_FRAME`]). Refused,
//! naming the field: a base the packet does not have (`l2.5` is never
//! built; `l4` of an ARP packet), and a write that changes a field the
//! description also gives (its value would no longer be the one asked
//! for). Checksums are not recomputed after the write: a `pof` field over
//! header bytes leaves the header's checksum as built (the switch's parser
//! does not check checksums).
//!
//! # Refusals
//! A field the builder cannot place is an error naming it, never ignored:
//! fields outside the packet (`metadata`, `tun_id`, `in_phy_port`),
//! MPLS/PBB (and their ethertypes), `ipv6_exthdr`, ND fields, the
//! `filter_prog` and `pcap_filter` matches, flow-mod keys (`table`, `priority`, `cookie`,
//! timeouts, flags), and any field the chosen headers do not carry (e.g.
//! `tcp_dst` in a UDP packet, `nw_src` without `ip`). Every field of the
//! parsed match is checked off as it is written; what is left is refused.
//!
//! The headers are written here rather than with etherparse's
//! `PacketBuilder` (already in the workspace): it has no ARP or SCTP, and
//! one path for every header, with `sluice_packet::checksum` for the
//! Internet checksums and CRC32c, is easier to check field by field.
//!
//! Only values are built here (bytes in, bytes out); no I/O.

use anyhow::{anyhow, bail, Result};
use sluice_ofp::ofctl::fields::canonical_name;
use sluice_ofp::ofctl::{parse_flow, Usage};
use sluice_ofp::oxm::{FieldId, Oxm};
use sluice_ofp::pof::PofMatch;
use sluice_ofp::print::fields::pof_match;
use sluice_packet::{checksum, FlowKey, Meta, ParseInfo, FIXED_LAYOUT};

/// Source MAC used when the description gives none (locally administered).
pub const DEFAULT_DL_SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
/// Destination MAC used when the description gives none.
pub const DEFAULT_DL_DST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
/// IPv4 TTL / IPv6 hop limit when `nw_ttl` is not given.
pub const DEFAULT_TTL: u8 = 64;
/// Shortest Ethernet frame without FCS.
const MIN_FRAME: usize = 60;

/// A built packet and the in-port the description named, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Built {
    pub frame: Vec<u8>,
    pub in_port: Option<u32>,
}

/// TCP flag names as ovs-ofctl writes them, with their bits.
const TCP_FLAGS: &[(&str, u16)] = &[
    ("fin", 0x001),
    ("syn", 0x002),
    ("rst", 0x004),
    ("psh", 0x008),
    ("ack", 0x010),
    ("urg", 0x020),
    ("ece", 0x040),
    ("cwr", 0x080),
    ("ns", 0x100),
];

fn parse_num(text: &str, max: u64, what: &str) -> Result<u64> {
    let v = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => text.parse::<u64>(),
    }
    .map_err(|_| anyhow!("{what}: `{text}` is not a number"))?;
    if v > max {
        bail!("{what}: {v} is larger than {max}");
    }
    Ok(v)
}

fn parse_tcp_flags(text: &str) -> Result<u16> {
    if text.starts_with(['+', '-']) {
        let mut bits = 0u16;
        let mut rest = text;
        while !rest.is_empty() {
            let sign = &rest[..1];
            let body = &rest[1..];
            let end = body.find(['+', '-']).unwrap_or(body.len());
            let name = &body[..end];
            let Some(&(_, bit)) = TCP_FLAGS.iter().find(|(n, _)| *n == name) else {
                bail!("tcp_flags: unknown flag `{name}`");
            };
            if sign == "+" {
                bits |= bit;
            } else {
                bits &= !bit;
            }
            rest = &body[end..];
        }
        return Ok(bits);
    }
    // A mask, if given, selects the value bits like any other field.
    let (v, m) = text.split_once('/').unwrap_or((text, "0xfff"));
    let v = parse_num(v, 0xfff, "tcp_flags")? as u16;
    let m = parse_num(m, 0xfff, "tcp_flags mask")? as u16;
    Ok(v & m)
}

/// The fields of the description: (field, value bits), in order given.
struct Fields {
    list: Vec<(FieldId, u128)>,
    used: Vec<bool>,
}

impl Fields {
    fn take(&mut self, f: FieldId) -> Option<u128> {
        let i = self.list.iter().position(|&(g, _)| g == f)?;
        self.used[i] = true;
        Some(self.list[i].1)
    }
    fn bytes<const N: usize>(&mut self, f: FieldId) -> Option<[u8; N]> {
        let v = self.take(f)?;
        let b = v.to_be_bytes();
        let mut out = [0u8; N];
        out.copy_from_slice(&b[16 - N..]);
        Some(out)
    }
}

/// Build the frame a flow description describes.
pub fn build(desc: &str) -> Result<Built> {
    // Keys OpenFlow 1.3 cannot match are the builder's own.
    let mut ttl = None;
    let mut tcp_flags = None;
    let mut rest = Vec::new();
    // ovs-ofctl separates items by commas or white space.
    for item in desc.split([',', ' ', '\t']).filter(|i| !i.is_empty()) {
        let t = item.trim();
        if let Some(v) = t.strip_prefix("nw_ttl=") {
            ttl = Some(parse_num(v.trim(), 255, "nw_ttl")? as u8);
        } else if let Some(v) = t.strip_prefix("tcp_flags=") {
            tcp_flags = Some(parse_tcp_flags(v.trim())?);
        } else {
            rest.push(item);
        }
    }
    let rest = rest.join(",");
    let spec = parse_flow(&rest, Usage::Delete)
        .map_err(|e| anyhow!("--flow: {}", e.render(&rest).trim_end()))?;
    let flow_key = if spec.table_id.is_some() {
        Some("table")
    } else if spec.priority.is_some() {
        Some("priority")
    } else if spec.cookie != 0 || spec.cookie_mask != 0 {
        Some("cookie")
    } else if spec.idle_timeout != 0 {
        Some("idle_timeout")
    } else if spec.hard_timeout != 0 {
        Some("hard_timeout")
    } else if spec.flags != 0 {
        Some("a flow-mod flag")
    } else if spec.out_port != sluice_ofp::consts::port_no::ANY {
        Some("out_port")
    } else if spec.out_group != sluice_ofp::consts::group_id::ANY {
        Some("out_group")
    } else {
        None
    };
    if let Some(k) = flow_key {
        bail!("--flow: `{k}` belongs to a flow entry, not to a packet");
    }
    let mut list = Vec::new();
    let mut pofs = Vec::new();
    for o in &spec.r#match.oxms {
        match o {
            Oxm::Basic { field, value, mask } => {
                let v = value.to_u128() & mask.as_ref().map_or(u128::MAX, |m| m.to_u128());
                list.push((*field, v));
            }
            o => match PofMatch::from_oxm(o) {
                Some(Ok(m)) => pofs.push(m),
                Some(Err(e)) => bail!("--flow: a pof field that does not decode: {e}"),
                None => bail!(
                    "--flow: a sluice experimenter match (filter_prog, pcap_filter) cannot be put in a packet"
                ),
            },
        }
    }
    let used = vec![false; list.len()];
    let mut f = Fields { list, used };
    let frame = emit(&mut f, ttl, &mut tcp_flags)?;
    if tcp_flags.is_some() {
        bail!("--flow: tcp_flags needs a TCP packet (`tcp` or `tcp6`)");
    }
    if let Some(i) = f.used.iter().position(|u| !u) {
        let field = f.list[i].0;
        bail!(
            "--flow: cannot place field `{}` in the packet (not supported by the packet builder, \
             or not carried by the packet's headers)",
            canonical_name(field)
        );
    }
    let mut frame = frame;
    place_pof(&mut frame, &pofs, &f.list)?;
    Ok(Built {
        frame,
        in_port: f.list.iter().find(|(g, _)| *g == FieldId::InPort).map(|&(_, v)| v as u32),
    })
}

/// The longest frame a `pof` field may grow the built frame to.
pub const MAX_POF_FRAME: usize = 1514;

/// The key of `frame` as the switch's parser reads it, and its offsets.
fn parsed(frame: &[u8]) -> (FlowKey, ParseInfo) {
    let mut key = FlowKey::ZERO;
    let info = sluice_packet::parse(frame, &Meta::default(), &mut key);
    (key, info)
}

/// Writes each `pof` field's value bits (where its mask is 1) into the
/// built frame, from the offsets the switch's parser finds in it (see
/// the module docs). Refuses, naming the field, a base the frame does not
/// have, a field past [`MAX_POF_FRAME`], and a write that changes a field
/// the description also gives (`given`).
fn place_pof(frame: &mut Vec<u8>, pofs: &[PofMatch], given: &[(FieldId, u128)]) -> Result<()> {
    if pofs.is_empty() {
        return Ok(());
    }
    let (before, info) = parsed(frame);
    for m in pofs {
        let text = pof_match(m);
        let name = text.split('=').next().unwrap_or(&text);
        let Some(at) = sluice_pipeline::pof::base(m.field.pos.base).offset(&info) else {
            bail!("--flow: cannot place field `{name}` in the packet: the packet has no header at its base")
        };
        let len = u64::from(m.field.bit_len);
        let start = at as u64 * 8 + u64::from(m.field.pos.bit_offset);
        let bytes = (start + len).div_ceil(8);
        if bytes > MAX_POF_FRAME as u64 {
            bail!("--flow: cannot place field `{name}` in the packet: it ends past byte {MAX_POF_FRAME}");
        }
        if frame.len() < bytes as usize {
            frame.resize(bytes as usize, 0);
        }
        let mask = m.mask.unwrap_or(u128::MAX);
        for i in 0..len {
            let shift = len - 1 - i;
            if (mask >> shift) & 1 == 0 {
                continue;
            }
            let bit = start + i;
            let (byte, b) = ((bit / 8) as usize, 7 - (bit % 8) as u32);
            if let Some(x) = frame.get_mut(byte) {
                *x = (*x & !(1 << b)) | ((((m.value >> shift) & 1) as u8) << b);
            }
        }
    }
    let (after, _) = parsed(frame);
    for &(f, _) in given {
        let field = sluice_pipeline::oxm_field::field(f);
        if FIXED_LAYOUT.get(&before, field) != FIXED_LAYOUT.get(&after, field) {
            bail!(
                "--flow: the pof fields change field `{}`, which the description also gives",
                canonical_name(f)
            );
        }
    }
    Ok(())
}

fn emit(f: &mut Fields, ttl: Option<u8>, tcp_flags: &mut Option<u16>) -> Result<Vec<u8>> {
    f.take(FieldId::InPort);
    let mut out = Vec::with_capacity(MIN_FRAME);
    out.extend_from_slice(&f.bytes::<6>(FieldId::EthDst).unwrap_or(DEFAULT_DL_DST));
    out.extend_from_slice(&f.bytes::<6>(FieldId::EthSrc).unwrap_or(DEFAULT_DL_SRC));
    // OXM vlan_vid: OFPVID_PRESENT (0x1000) | vid, or 0 for untagged.
    let vid = f.take(FieldId::VlanVid);
    let pcp = f.take(FieldId::VlanPcp);
    let tagged = vid.is_some_and(|v| v & 0x1000 != 0) || pcp.is_some();
    if vid == Some(0) && pcp.is_some() {
        bail!("--flow: dl_vlan_pcp needs a VLAN tag, but the description says untagged");
    }
    if tagged {
        let tci = ((pcp.unwrap_or(0) as u16 & 7) << 13) | (vid.unwrap_or(0) as u16 & 0xfff);
        out.extend_from_slice(&0x8100u16.to_be_bytes());
        out.extend_from_slice(&tci.to_be_bytes());
    }
    let eth_type = f.take(FieldId::EthType).unwrap_or(0) as u16;
    out.extend_from_slice(&eth_type.to_be_bytes());
    match eth_type {
        0x0800 => ipv4(f, ttl, tcp_flags, &mut out)?,
        0x86dd => ipv6(f, ttl, tcp_flags, &mut out)?,
        0x0806 => arp(f, &mut out),
        0x8847 | 0x8848 | 0x88e7 => {
            bail!("--flow: MPLS and PBB packets (eth_type={eth_type:#06x}) cannot be built")
        }
        _ => {}
    }
    if ttl.is_some() && !matches!(eth_type, 0x0800 | 0x86dd) {
        bail!("--flow: nw_ttl needs an IP packet (`ip` or `ipv6`)");
    }
    if out.len() < MIN_FRAME {
        out.resize(MIN_FRAME, 0);
    }
    Ok(out)
}

fn arp(f: &mut Fields, out: &mut Vec<u8>) {
    out.extend_from_slice(&[0, 1, 0x08, 0x00, 6, 4]);
    out.extend_from_slice(&(f.take(FieldId::ArpOp).unwrap_or(0) as u16).to_be_bytes());
    out.extend_from_slice(&f.bytes::<6>(FieldId::ArpSha).unwrap_or([0; 6]));
    out.extend_from_slice(&f.bytes::<4>(FieldId::ArpSpa).unwrap_or([0; 4]));
    out.extend_from_slice(&f.bytes::<6>(FieldId::ArpTha).unwrap_or([0; 6]));
    out.extend_from_slice(&f.bytes::<4>(FieldId::ArpTpa).unwrap_or([0; 4]));
}

fn tos(f: &mut Fields) -> u8 {
    let dscp = f.take(FieldId::IpDscp).unwrap_or(0) as u8 & 0x3f;
    let ecn = f.take(FieldId::IpEcn).unwrap_or(0) as u8 & 3;
    dscp << 2 | ecn
}

fn ipv4(
    f: &mut Fields,
    ttl: Option<u8>,
    tcp_flags: &mut Option<u16>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let tos = tos(f);
    let proto = f.take(FieldId::IpProto).unwrap_or(0) as u8;
    let src = f.bytes::<4>(FieldId::Ipv4Src).unwrap_or([0; 4]);
    let dst = f.bytes::<4>(FieldId::Ipv4Dst).unwrap_or([0; 4]);
    let l4 = transport(f, proto, false, tcp_flags)?;
    let total = 20 + l4.len();
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[1] = tos;
    h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    h[8] = ttl.unwrap_or(DEFAULT_TTL);
    h[9] = proto;
    h[12..16].copy_from_slice(&src);
    h[16..20].copy_from_slice(&dst);
    let c = !checksum::fold(checksum::sum(&h));
    h[10..12].copy_from_slice(&c.to_be_bytes());
    let mut l4 = l4;
    let pseudo = checksum::ipv4_pseudo(&src, &dst, proto, l4.len() as u16);
    fill_checksum(&mut l4, proto, pseudo);
    out.extend_from_slice(&h);
    out.extend_from_slice(&l4);
    Ok(())
}

fn ipv6(
    f: &mut Fields,
    ttl: Option<u8>,
    tcp_flags: &mut Option<u16>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let tc = tos(f) as u32;
    let label = f.take(FieldId::Ipv6Flabel).unwrap_or(0) as u32 & 0xfffff;
    let proto = f.take(FieldId::IpProto).unwrap_or(0) as u8;
    let src = f.bytes::<16>(FieldId::Ipv6Src).unwrap_or([0; 16]);
    let dst = f.bytes::<16>(FieldId::Ipv6Dst).unwrap_or([0; 16]);
    let mut l4 = transport(f, proto, true, tcp_flags)?;
    let mut h = [0u8; 40];
    h[0..4].copy_from_slice(&(6 << 28 | tc << 20 | label).to_be_bytes());
    h[4..6].copy_from_slice(&(l4.len() as u16).to_be_bytes());
    h[6] = proto;
    h[7] = ttl.unwrap_or(DEFAULT_TTL);
    h[8..24].copy_from_slice(&src);
    h[24..40].copy_from_slice(&dst);
    let pseudo = checksum::ipv6_pseudo(&src, &dst, proto, l4.len() as u32);
    fill_checksum(&mut l4, proto, pseudo);
    out.extend_from_slice(&h);
    out.extend_from_slice(&l4);
    Ok(())
}

/// The transport header (no payload), checksum field zero.
fn transport(f: &mut Fields, proto: u8, v6: bool, tcp_flags: &mut Option<u16>) -> Result<Vec<u8>> {
    let ports = |f: &mut Fields, s: FieldId, d: FieldId| {
        let mut b = Vec::new();
        b.extend_from_slice(&(f.take(s).unwrap_or(0) as u16).to_be_bytes());
        b.extend_from_slice(&(f.take(d).unwrap_or(0) as u16).to_be_bytes());
        b
    };
    Ok(match (proto, v6) {
        (6, _) => {
            let mut b = ports(f, FieldId::TcpSrc, FieldId::TcpDst);
            let fl = tcp_flags.take().unwrap_or(0);
            b.extend_from_slice(&[0; 8]); // seq, ack
            b.push(5 << 4 | (fl >> 8) as u8 & 0x0f);
            b.push(fl as u8);
            b.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]); // window, checksum, urgent
            b
        }
        (17, _) => {
            let mut b = ports(f, FieldId::UdpSrc, FieldId::UdpDst);
            b.extend_from_slice(&[0, 8, 0, 0]);
            b
        }
        (132, _) => {
            let mut b = ports(f, FieldId::SctpSrc, FieldId::SctpDst);
            b.extend_from_slice(&[0; 8]);
            b
        }
        (1, false) => {
            let t = f.take(FieldId::Icmpv4Type).unwrap_or(0) as u8;
            let c = f.take(FieldId::Icmpv4Code).unwrap_or(0) as u8;
            vec![t, c, 0, 0, 0, 0, 0, 0]
        }
        (58, true) => {
            let t = f.take(FieldId::Icmpv6Type).unwrap_or(0) as u8;
            let c = f.take(FieldId::Icmpv6Code).unwrap_or(0) as u8;
            vec![t, c, 0, 0, 0, 0, 0, 0]
        }
        _ => Vec::new(),
    })
}

/// Write the transport checksum; `pseudo` is the pseudo-header sum
/// (unused by SCTP and ICMPv4).
fn fill_checksum(l4: &mut [u8], proto: u8, pseudo: u32) {
    let at = match proto {
        6 => 16,
        17 => 6,
        1 | 58 => 2,
        132 => {
            if l4.len() >= 12 {
                let c = checksum::crc32c(l4);
                l4[8..12].copy_from_slice(&c.to_le_bytes());
            }
            return;
        }
        _ => return,
    };
    if l4.len() < at + 2 {
        return;
    }
    let pseudo = if proto == 1 { 0 } else { pseudo };
    let mut c = !checksum::fold(pseudo + checksum::sum(l4));
    if proto == 17 && c == 0 {
        c = 0xffff;
    }
    l4[at..at + 2].copy_from_slice(&c.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_packet::{parse, Field};

    fn key(frame: &[u8]) -> FlowKey {
        let mut k = FlowKey::default();
        parse(frame, &Meta::default(), &mut k);
        k
    }

    fn get(k: &FlowKey, f: FieldId) -> u128 {
        let field = Field::from_u8(f as u8).expect("same numbering");
        assert!(FIXED_LAYOUT.present(k, field), "{f:?} not present");
        FIXED_LAYOUT.get(k, field).to_u128()
    }

    #[test]
    fn tcp_ipv4_round_trip() {
        let b = build("in_port=1,tcp,nw_src=10.0.0.1,nw_dst=10.1.2.3,tp_src=1234,tp_dst=80,ip_dscp=46,nw_ecn=1").unwrap();
        assert_eq!(b.in_port, Some(1));
        assert_eq!(b.frame.len(), 60);
        let k = key(&b.frame);
        assert_eq!(get(&k, FieldId::EthType), 0x0800);
        assert_eq!(get(&k, FieldId::EthSrc), 0x0200_0000_0001);
        assert_eq!(get(&k, FieldId::EthDst), 0x0200_0000_0002);
        assert_eq!(get(&k, FieldId::IpProto), 6);
        assert_eq!(get(&k, FieldId::Ipv4Src), 0x0a00_0001);
        assert_eq!(get(&k, FieldId::Ipv4Dst), 0x0a01_0203);
        assert_eq!(get(&k, FieldId::TcpSrc), 1234);
        assert_eq!(get(&k, FieldId::TcpDst), 80);
        assert_eq!(get(&k, FieldId::IpDscp), 46);
        assert_eq!(get(&k, FieldId::IpEcn), 1);
        // Valid IPv4 header checksum and TCP checksum.
        assert_eq!(checksum::fold(checksum::sum(&b.frame[14..34])), 0xffff);
        let p = checksum::ipv4_pseudo(&[10, 0, 0, 1], &[10, 1, 2, 3], 6, 20);
        assert_eq!(checksum::fold(p + checksum::sum(&b.frame[34..54])), 0xffff);
        assert_eq!(b.frame[22], 64, "default ttl");
    }

    #[test]
    fn literal_bytes_udp() {
        let b = build("udp,nw_src=1.2.3.4,nw_dst=5.6.7.8,tp_src=1,tp_dst=2,nw_ttl=9").unwrap();
        let want = "020000000002020000000001 0800\
                    4500001c 00000000 0911 a1be 01020304 05060708\
                    0001 0002 0008 efc7";
        let want: String = want.split_whitespace().collect();
        let mut want = hex::decode(want).unwrap();
        assert_eq!(checksum::fold(checksum::sum(&want[14..34])), 0xffff);
        want.resize(60, 0);
        assert_eq!(hex::encode(&b.frame), hex::encode(&want));
    }

    #[test]
    fn masked_and_vlan() {
        let b = build("dl_vlan=10,dl_vlan_pcp=5,ip,nw_dst=10.0.0.0/8").unwrap();
        assert_eq!(&b.frame[12..16], &[0x81, 0x00, 0xa0, 0x0a]);
        let k = key(&b.frame);
        assert_eq!(get(&k, FieldId::VlanVid), 0x1000 | 10);
        assert_eq!(get(&k, FieldId::VlanPcp), 5);
        assert_eq!(get(&k, FieldId::Ipv4Dst), 0x0a00_0000);
        // "Any tag": present bit only, VID 0.
        let b = build("vlan_vid=0x1000/0x1000,arp").unwrap();
        assert_eq!(&b.frame[12..18], &[0x81, 0x00, 0, 0, 0x08, 0x06]);
    }

    #[test]
    fn ipv6_icmpv6_and_udp6() {
        let b = build("icmp6,ipv6_src=2001:db8::1,ipv6_dst=2001:db8::2,icmpv6_type=128,icmpv6_code=0,ipv6_label=0x12345").unwrap();
        let k = key(&b.frame);
        assert_eq!(get(&k, FieldId::EthType), 0x86dd);
        assert_eq!(get(&k, FieldId::Ipv6Src), 0x2001_0db8_0000_0000_0000_0000_0000_0001);
        assert_eq!(get(&k, FieldId::Ipv6Flabel), 0x12345);
        assert_eq!(get(&k, FieldId::Icmpv6Type), 128);
        let src: [u8; 16] = b.frame[22..38].try_into().unwrap();
        let dst: [u8; 16] = b.frame[38..54].try_into().unwrap();
        let p = checksum::ipv6_pseudo(&src, &dst, 58, 8);
        assert_eq!(checksum::fold(p + checksum::sum(&b.frame[54..62])), 0xffff);
        let b = build("udp6,ipv6_dst=::1,tp_dst=53").unwrap();
        assert_eq!(get(&key(&b.frame), FieldId::UdpDst), 53);
    }

    #[test]
    fn arp_icmp_sctp_tcp_flags() {
        let b = build("arp,arp_op=2,arp_spa=10.0.0.1,arp_tpa=10.0.0.2,arp_sha=00:11:22:33:44:55")
            .unwrap();
        let k = key(&b.frame);
        assert_eq!(get(&k, FieldId::ArpOp), 2);
        assert_eq!(get(&k, FieldId::ArpSpa), 0x0a00_0001);
        assert_eq!(get(&k, FieldId::ArpTpa), 0x0a00_0002);
        assert_eq!(get(&k, FieldId::ArpSha), 0x0011_2233_4455);
        let b = build("icmp,icmp_type=8,icmp_code=0").unwrap();
        assert_eq!(get(&key(&b.frame), FieldId::Icmpv4Type), 8);
        assert_eq!(checksum::fold(checksum::sum(&b.frame[34..42])), 0xffff);
        let b = build("sctp,tp_src=5,tp_dst=6").unwrap();
        let k = key(&b.frame);
        assert_eq!(get(&k, FieldId::SctpDst), 6);
        let s = sluice_packet::wire::sctp::Packet::new_checked(&b.frame[34..46]).unwrap();
        assert!(s.verify_checksum());
        let b = build("tcp,tcp_flags=+syn+ack").unwrap();
        assert_eq!(b.frame[47], 0x12);
        let b = build("tcp,tcp_flags=0x102").unwrap();
        assert_eq!((b.frame[46] & 0x0f, b.frame[47]), (1, 2));
    }

    #[test]
    fn refusals_name_the_field() {
        for (d, word) in [
            ("tcp,metadata=1", "metadata"),
            ("tun_id=5", "tun_id"),
            ("mpls,mpls_label=3", "MPLS"),
            ("udp,tcp_dst=80", "tcp_dst"),
            ("nw_src=1.2.3.4", "nw_src"),
            ("ipv6,nd_target=::1", "nd_target"),
            ("tcp,actions=drop", "actions"),
            ("tcp,priority=5", "priority"),
            ("arp,nw_ttl=3", "nw_ttl"),
            ("udp,tcp_flags=+syn", "tcp_flags"),
            ("tcp,bogus=1", "bogus"),
            ("dl_vlan=0xffff,dl_vlan_pcp=3", "dl_vlan_pcp"),
            ("tcp,tcp_flags=+foo", "foo"),
            ("ip,nw_ttl=300", "nw_ttl"),
        ] {
            let e = build(d).expect_err(d).to_string();
            assert!(e.contains(word), "{d}: {e}");
        }
    }

    #[test]
    fn white_space_separates_items_too() {
        let a = build("in_port=1 tcp nw_ttl=7 tcp_flags=+syn tp_dst=80").unwrap();
        let b = build("in_port=1,tcp,nw_ttl=7,tcp_flags=+syn,tp_dst=80").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.frame[22], 7);
    }

    #[test]
    fn no_panic_on_odd_input() {
        for d in ["", ",", "=", "tcp,tcp_flags=+", "tcp,tcp_flags=-", "in_port=", "ip,nw_ttl=0x"] {
            let _ = build(d);
        }
        let b = build("").unwrap();
        assert_eq!(b.frame.len(), 60);
        assert_eq!(b.in_port, None);
    }

    #[test]
    fn pof_fields_set_their_bits_or_are_refused_by_name() {
        // The IPv4 identification, 32 bits into the IPv4 header.
        let b = build("in_port=1,ip,pof(l3+32,16)=0x1234").unwrap();
        assert_eq!(b.frame[18..20], [0x12, 0x34]);
        assert_eq!(b.frame.len(), 60);
        // Only the mask's bits are written.
        let b = build("dl_type=0x88b5,pof(l2end+0,16)=0xab00/0xff00").unwrap();
        assert_eq!(b.frame[14..16], [0xab, 0]);
        // Past the end of the frame: it grows.
        let b = build("pof(480,32)=0xdeadbeef").unwrap();
        assert_eq!(b.frame.len(), 64);
        assert_eq!(b.frame[60..64], [0xde, 0xad, 0xbe, 0xef]);
        let err = |d: &str| format!("{:#}", build(d).expect_err(d));
        assert!(
            err("arp,pof(l4+0,16)=1").contains("`pof(l4+0,16)`"),
            "{}",
            err("arp,pof(l4+0,16)=1")
        );
        assert!(err("ip,pof(l2.5+0,20)=1").contains("`pof(l2.5+0,20)`"));
        assert!(err("pof(12112,16)=1").contains("past byte 1514"));
        let e = err("ip,nw_dst=10.0.0.1,pof(l3+128,32)=0x0a000002");
        assert!(e.contains("`nw_dst`"), "{e}");
        // Agreeing with a given field is fine.
        let b = build("ip,nw_dst=10.0.0.1,pof(l3+128,32)=0x0a000001").unwrap();
        assert_eq!(b.frame[30..34], [10, 0, 0, 1]);
    }
}
