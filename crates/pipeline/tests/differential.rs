//! Differential tests of the fast paths: the same random sequence of
//! flow-mods, group-mods, meter-mods, packets, packet-outs and clock steps
//! goes through pipelines configured
//! Reference/Off (the oracle), Classifier/Off, Classifier/Megaflow,
//! Classifier/On and Reference/On, which must agree on every transmitted
//! frame (port, queue, bytes), every reply and asynchronous message
//! (packet-ins, flow-removed), and on the flow, aggregate, table, group,
//! meter and port statistics at the end.
//!
//! Rules are drawn from small value pools so that they overlap, share
//! priorities (ties broken by age) and chain through `goto_table` with
//! `write_metadata`, `set_field` (metadata, addresses, ports, VLAN),
//! pushes and pops, TTL decrements, meters (drop and DSCP remark) and
//! groups (all, select, indirect). Packets are built by hand from the same
//! pools (VLAN-tagged or not; IPv4 TCP/UDP/ICMP with TTL 1 or 64; ARP; an
//! unknown ethertype; truncated IPv4 and truncated TCP; IPv4 options,
//! payload padding and Ethernet trailers, so that frames differing only in
//! bytes the parse skips, only past byte 96, or only in length repeat:
//! the burst runs with both caches on go through the raw-header cache,
//! `sluice_core::cache::RawKey`).
//!
//! Checked to fail: with the megaflow cache key taken as `key & 0` (every
//! packet hits the first megaflow) or with `note_actions` ignoring pushes,
//! these properties fail within a few cases.

mod common;

use proptest::prelude::*;
use sluice_core::graph::{Graph, KeyTest, Next, Node};
use sluice_ofp::action::Action;
use sluice_ofp::consts::{group_id, port_no, table_id, OFPVID_PRESENT, OFP_NO_BUFFER};
use sluice_ofp::group::{Bucket, GroupType};
use sluice_ofp::instruction::Instruction;
use sluice_ofp::message::{
    flow_mod_command as fc, flow_mod_flags as ff, group_mod_command as gc, meter_mod_command as mc,
    FlowMod, GroupMod, Message, MeterMod, PacketOut,
};
use sluice_ofp::meter::{flags as mf, MeterBand};
use sluice_ofp::multipart::{FlowStatsRequest, MultipartRequest, MultipartRequestBody};
use sluice_ofp::oxm::{FieldBytes, FieldId, Match, Oxm};
use sluice_ofp::pof::{PofAction, PofBase, PofField, PofMatch, PofPos};
use sluice_ofp::port::Port;
use sluice_packet::buf::PacketBuf;
use sluice_packet::key::FIXED_LAYOUT;
use sluice_packet::Field;
use sluice_pipeline::publish::Publisher;
use sluice_pipeline::{CacheMode, Config, Datapath, JitOptions, Pipeline, Worker, WorkerExt};

const N_TABLES: u8 = 4;
const PORTS: [u32; 4] = [1, 2, 3, 4];
const MACS: [u8; 3] = [1, 2, 3];
const IPS: [[u8; 4]; 4] = [[10, 0, 0, 1], [10, 0, 0, 2], [10, 0, 1, 1], [192, 168, 1, 1]];
const L4: [u16; 3] = [53, 80, 443];

/// How `Datapath::Compiled` builds code in a configuration.
#[derive(Clone, Copy, Debug)]
enum Jit {
    /// At settle time; straight-line code (and per-port variants) for
    /// tables up to the default size, hash probes above.
    Straight,
    /// At settle time; every non-empty table gets hash probes.
    Probe,
    /// On the compiler thread, installed whenever it is done (tables above
    /// 2 entries get probes once quiet): results must not depend on when.
    Background,
    /// Exactly what the daemon runs (`Config::daemon()`: compiled tables
    /// on the compiler thread with the default thresholds, both caches).
    Daemon,
}

impl Jit {
    fn opts(self) -> JitOptions {
        match self {
            Jit::Straight => JitOptions::default(),
            Jit::Probe => JitOptions { straight_max: 0, ..JitOptions::default() },
            Jit::Background => JitOptions { background: true, straight_max: 2 },
            Jit::Daemon => Config::daemon().jit,
        }
    }
}

const CONFIGS: [(Datapath, CacheMode, Jit); 12] = [
    (Datapath::Reference, CacheMode::Off, Jit::Straight),
    (Datapath::Classifier, CacheMode::Off, Jit::Straight),
    (Datapath::Classifier, CacheMode::Megaflow, Jit::Straight),
    (Datapath::Classifier, CacheMode::On, Jit::Straight),
    (Datapath::Reference, CacheMode::On, Jit::Straight),
    (Datapath::Compiled, CacheMode::Off, Jit::Straight),
    (Datapath::Compiled, CacheMode::On, Jit::Straight),
    (Datapath::Compiled, CacheMode::Off, Jit::Probe),
    (Datapath::Compiled, CacheMode::On, Jit::Probe),
    (Datapath::Compiled, CacheMode::Off, Jit::Background),
    (Datapath::Compiled, CacheMode::Auto, Jit::Daemon),
    // In test builds the governor's rounds are a few packets long, so this
    // switches between on, megaflow and off every few packets.
    (Datapath::Compiled, CacheMode::Auto, Jit::Straight),
];

// ---------------------------------------------------------------- packets

#[derive(Clone, Debug)]
enum L3 {
    Tcp,
    Udp,
    Icmp,
    Arp,
    Other,
    TruncatedIpv4,
    /// An IPv4 header whose TCP header is cut off after 10 bytes.
    TruncatedTcp,
}

/// What the raw-header cache (`sluice_core::cache::RawKey`, keyed on a
/// frame's first 96 bytes, its length and ingress port) must tell apart
/// or may merge: IPv4 options (the transport header moves, up to past the
/// 96 bytes with two VLAN tags), payload bytes past the headers (frames
/// that differ only there, also past byte 96), and an Ethernet trailer
/// (same IP datagram, longer frame).
#[derive(Clone, Copy, Debug, Default)]
struct Shape {
    /// 4-byte IPv4 option words (0 to 10), NOPs or `opt_byte`.
    opts: u8,
    opt_byte: u8,
    /// Payload bytes after the transport header's own, the last one `tail`.
    pad: u8,
    tail: u8,
    /// Bytes after the IP datagram.
    trailer: u8,
}

#[derive(Clone, Debug)]
struct PacketSpec {
    dst: u8,
    src: u8,
    vlan: Option<(u16, u8)>,
    /// A second (inner) tag: its VID is not in the flow key, so a pop
    /// makes later lookups depend on bytes the key does not hold.
    inner_vlan: Option<u16>,
    l3: L3,
    ip_src: usize,
    ip_dst: usize,
    sport: usize,
    dport: usize,
    ttl: u8,
    dscp: u8,
    shape: Shape,
}

fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h.chunks(2).map(|c| u32::from(c[0]) << 8 | u32::from(c[1])).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

impl PacketSpec {
    fn build(&self) -> Vec<u8> {
        let mut f = vec![0, 0, 0, 0, 0, self.dst, 0, 0, 0, 0, 0, self.src];
        if let Some((vid, pcp)) = self.vlan {
            f.extend_from_slice(&[0x81, 0x00]);
            let tci = u16::from(pcp) << 13 | vid;
            f.extend_from_slice(&tci.to_be_bytes());
            if let Some(inner) = self.inner_vlan {
                f.extend_from_slice(&[0x81, 0x00]);
                f.extend_from_slice(&inner.to_be_bytes());
            }
        }
        let (src, dst) = (IPS[self.ip_src], IPS[self.ip_dst]);
        let (sp, dp) = (L4[self.sport], L4[self.dport]);
        let sh = self.shape;
        let payload = |base: &[u8]| {
            let mut v = base.to_vec();
            v.extend((0..sh.pad).map(|i| if i + 1 == sh.pad { sh.tail } else { i }));
            v
        };
        let ipv4 = |proto: u8, l4: &[u8]| {
            let opts = usize::from(sh.opts.min(10)) * 4;
            let total = 20 + opts + l4.len();
            let vihl = 0x45 + (opts / 4) as u8;
            let mut ip = vec![vihl, self.dscp << 2, (total >> 8) as u8, total as u8, 0, 1, 0, 0];
            ip.extend_from_slice(&[self.ttl, proto, 0, 0]);
            ip.extend_from_slice(&src);
            ip.extend_from_slice(&dst);
            ip.extend((0..opts).map(|_| sh.opt_byte));
            let ck = ipv4_checksum(&ip);
            ip[10..12].copy_from_slice(&ck.to_be_bytes());
            ip.extend_from_slice(l4);
            ip
        };
        match self.l3 {
            L3::Tcp => {
                f.extend_from_slice(&[0x08, 0x00]);
                let mut tcp = vec![0u8; 20];
                tcp[0..2].copy_from_slice(&sp.to_be_bytes());
                tcp[2..4].copy_from_slice(&dp.to_be_bytes());
                tcp[12] = 0x50;
                tcp.extend_from_slice(&payload(b"payload!"));
                f.extend(ipv4(6, &tcp));
            }
            L3::Udp => {
                f.extend_from_slice(&[0x08, 0x00]);
                let mut udp = vec![0u8; 8];
                udp[0..2].copy_from_slice(&sp.to_be_bytes());
                udp[2..4].copy_from_slice(&dp.to_be_bytes());
                let body = payload(b"payload!");
                udp[4..6].copy_from_slice(&(8 + body.len() as u16).to_be_bytes());
                udp.extend_from_slice(&body);
                f.extend(ipv4(17, &udp));
            }
            L3::Icmp => {
                f.extend_from_slice(&[0x08, 0x00]);
                f.extend(ipv4(1, &payload(&[8, 0, 0, 0, 0, 1, 0, 1])));
            }
            L3::Arp => {
                f.extend_from_slice(&[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
                f.extend_from_slice(&[0, 0, 0, 0, 0, self.src]);
                f.extend_from_slice(&src);
                f.extend_from_slice(&[0; 6]);
                f.extend_from_slice(&dst);
            }
            L3::Other => f.extend_from_slice(&[0x88, 0xb5, 1, 2, 3, 4, 5, 6, 7, 8]),
            L3::TruncatedIpv4 => {
                f.extend_from_slice(&[0x08, 0x00]);
                let ip = ipv4(6, &[]);
                f.extend_from_slice(&ip[..12]);
            }
            L3::TruncatedTcp => {
                f.extend_from_slice(&[0x08, 0x00]);
                let mut tcp = vec![0u8; 20];
                tcp[0..2].copy_from_slice(&sp.to_be_bytes());
                tcp[2..4].copy_from_slice(&dp.to_be_bytes());
                tcp[12] = 0x50;
                let ip = ipv4(6, &tcp);
                f.extend_from_slice(&ip[..ip.len() - 10]);
            }
        }
        f.extend((0..sh.trailer).map(|i| i ^ 0x5a));
        f
    }
}

fn packet_spec() -> impl Strategy<Value = PacketSpec> {
    let l3 = prop_oneof![
        4 => Just(L3::Tcp),
        4 => Just(L3::Udp),
        1 => Just(L3::Icmp),
        2 => Just(L3::Arp),
        1 => Just(L3::Other),
        1 => Just(L3::TruncatedIpv4),
        1 => Just(L3::TruncatedTcp),
    ];
    // Mostly plain frames (so flows repeat and hit the caches), sometimes
    // with options, padding and a trailer from small pools (so frames
    // that differ only in bytes the parse skips, or only past byte 96,
    // repeat too).
    let shape = prop::option::weighted(
        0.4,
        (
            prop::sample::select(vec![0u8, 1, 6, 10]),
            prop::sample::select(vec![1u8, 7]),
            prop::sample::select(vec![0u8, 20, 90]),
            prop::sample::select(vec![0u8, 1, 2]),
            prop::sample::select(vec![0u8, 6]),
        )
            .prop_map(|(opts, opt_byte, pad, tail, trailer)| Shape {
                opts,
                opt_byte,
                pad,
                tail,
                trailer,
            }),
    )
    .prop_map(Option::unwrap_or_default);
    (
        (0..MACS.len(), 0..MACS.len()),
        prop::option::weighted(0.3, (prop::sample::select(vec![5u16, 6]), 0u8..8)),
        prop::option::weighted(0.5, prop::sample::select(vec![5u16, 6])),
        l3,
        (0..IPS.len(), 0..IPS.len(), 0..L4.len(), 0..L4.len()),
        prop::sample::select(vec![1u8, 2, 64]),
        prop::sample::select(vec![0u8, 10, 46]),
        shape,
    )
        .prop_map(
            |((d, s), vlan, inner_vlan, l3, (ip_src, ip_dst, sport, dport), ttl, dscp, shape)| {
                PacketSpec {
                    dst: MACS[d],
                    src: MACS[s],
                    vlan,
                    inner_vlan,
                    l3,
                    ip_src,
                    ip_dst,
                    sport,
                    dport,
                    ttl,
                    dscp,
                    shape,
                }
            },
        )
}

// ---------------------------------------------------------------- rules

fn oxm(field: FieldId, value: u128, mask: Option<u128>) -> Oxm {
    Oxm::Basic {
        field,
        value: FieldBytes::from_u128(value, field.len()),
        mask: mask.map(|m| FieldBytes::from_u128(m, field.len())),
    }
}

fn ip_u32(i: usize) -> u32 {
    u32::from_be_bytes(IPS[i])
}

fn mac(m: u8) -> u128 {
    u128::from(m)
}

/// Which L3 the match pins (decides which set-fields are valid).
#[derive(Clone, Copy, Debug, PartialEq)]
enum MatchL3 {
    Any,
    Ipv4,
    Tcp,
    Udp,
    Arp,
}

#[derive(Clone, Debug)]
struct MatchSpec {
    in_port: Option<u32>,
    eth_dst: Option<(u8, bool)>,
    eth_src: Option<u8>,
    vlan: Option<Option<u16>>,
    l3: MatchL3,
    ip_src: Option<(usize, u32)>,
    ip_dst: Option<(usize, u32)>,
    tp_dst: Option<usize>,
    metadata: Option<(u64, u64)>,
    /// `pof` fields: (index in [`POF_FIELDS`], value index, masked).
    pof: Vec<(usize, usize, bool)>,
}

/// `pof` match fields over the generated frames: (base, bit offset, bit
/// length, values). Windows on real headers, a 128-bit one (two key
/// windows), one on the payload and one past every frame's end.
const POF_FIELDS: &[(PofBase, u32, u16, &[u128])] = &[
    (PofBase::Frame, 96, 16, &[0x0800, 0x0806, 0x8100, 0x88b5]),
    (PofBase::Frame, 40, 8, &[1, 2, 3]),
    (PofBase::L3, 128, 32, &[0x0a00_0001, 0x0a00_0002, 0x0a00_0101, 0xc0a8_0101]),
    (PofBase::L3, 64, 8, &[1, 2, 63, 64]),
    (PofBase::L4, 16, 16, &[53, 80, 443]),
    (PofBase::L2End, 0, 4, &[4, 0]),
    (
        PofBase::Frame,
        0,
        128,
        &[0x0000_0000_0001_0000_0000_0002_0800_4500, 0x0000_0000_0002_0000_0000_0001_0806_0001],
    ),
    (PofBase::Payload, 0, 64, &[0x7061_796c_6f61_6421, 0x0800_0000_0001_0001]),
    (PofBase::L2End, 3, 13, &[0x0005, 0x0006, 0x0500]),
    (PofBase::Frame, 8 * 600, 32, &[0]),
];

fn pof_match(field: usize, value: usize, masked: bool) -> Oxm {
    let (base, bit_offset, bit_len, values) = POF_FIELDS[field];
    let v = values[value % values.len()];
    // Masked: the field's first half only.
    let half = u32::from(bit_len) / 2;
    let ones = if bit_len >= 128 { u128::MAX } else { (1u128 << bit_len) - 1 };
    let mask = masked.then(|| ones & !(ones >> half.max(1)));
    PofMatch {
        field: PofField { pos: PofPos { base, bit_offset }, bit_len },
        value: mask.map_or(v, |m| v & m),
        mask,
    }
    .to_oxm()
}

/// A POF action: window edits that mean something on the generated frames
/// (rewrite an IPv4 destination, decrement a TTL, fix the IPv4 checksum,
/// push and pop a VLAN tag as raw bytes, copy the destination MAC's last
/// byte into the metadata) and some that do not (random windows).
fn pof_action() -> impl Strategy<Value = Action> {
    let at = |base, bit_offset| PofPos { base, bit_offset };
    let field = move |base, bit_offset, bit_len| PofField { pos: at(base, bit_offset), bit_len };
    let any_base = prop::sample::select(PofBase::ALL.to_vec());
    prop_oneof![
        prop::sample::select(IPS.to_vec()).prop_map(move |ip| PofAction::Set {
            field: field(PofBase::L3, 128, 32),
            value: u32::from_be_bytes(ip).into(),
            mask: None,
        }),
        Just(PofAction::Modify { field: field(PofBase::L3, 64, 8), delta: -1 }),
        Just(PofAction::Checksum {
            field: field(PofBase::L3, 80, 16),
            start: at(PofBase::L3, 0),
            calc_len_bits: 160,
        }),
        Just(PofAction::Add { pos: at(PofBase::Frame, 96), bytes: vec![0x81, 0x00, 0x00, 0x05] }),
        Just(PofAction::Delete { pos: at(PofBase::Frame, 96), len_bits: 32 }),
        Just(PofAction::WriteMetadata { meta_bit: 56, from: field(PofBase::Frame, 40, 8) }),
        (any_base.clone(), 0u32..400, 1u16..=128, any::<u128>(), any::<Option<u128>>()).prop_map(
            move |(b, off, len, v, m)| {
                let ones = if len >= 128 { u128::MAX } else { (1u128 << len) - 1 };
                let mask = m.map(|m| m & ones);
                let value = v & mask.unwrap_or(ones);
                PofAction::Set { field: field(b, off, len), value, mask }
            }
        ),
        (any_base, 0u32..400, 1u16..=128, any::<i128>()).prop_map(move |(b, off, len, delta)| {
            PofAction::Modify { field: field(b, off, len), delta }
        }),
    ]
    .prop_map(|a| a.to_action())
}

impl MatchSpec {
    fn build(&self) -> Match {
        let mut v = Vec::new();
        if let Some(p) = self.in_port {
            v.push(oxm(FieldId::InPort, p.into(), None));
        }
        if let Some(m) = self.metadata {
            v.push(oxm(FieldId::Metadata, (m.0 & m.1).into(), Some(m.1.into())));
        }
        if let Some((d, masked)) = self.eth_dst {
            if masked {
                v.push(oxm(FieldId::EthDst, mac(d) & 0x01, Some(0x01)));
            } else {
                v.push(oxm(FieldId::EthDst, mac(d), None));
            }
        }
        if let Some(s) = self.eth_src {
            v.push(oxm(FieldId::EthSrc, mac(s), None));
        }
        match self.vlan {
            Some(Some(vid)) => {
                v.push(oxm(FieldId::VlanVid, u128::from(OFPVID_PRESENT | vid), None))
            }
            Some(None) => v.push(oxm(FieldId::VlanVid, 0, None)),
            None => {}
        }
        let prefix = |i: usize, plen: u32| {
            let m = if plen == 0 { 0 } else { u32::MAX << (32 - plen) };
            (u128::from(ip_u32(i) & m), Some(u128::from(m)))
        };
        match self.l3 {
            MatchL3::Any => {}
            MatchL3::Arp => {
                v.push(oxm(FieldId::EthType, 0x0806, None));
                if let Some((i, plen)) = self.ip_dst {
                    let (val, m) = prefix(i, plen);
                    v.push(oxm(FieldId::ArpTpa, val, m));
                }
            }
            MatchL3::Ipv4 | MatchL3::Tcp | MatchL3::Udp => {
                v.push(oxm(FieldId::EthType, 0x0800, None));
                if let Some((i, plen)) = self.ip_src {
                    let (val, m) = prefix(i, plen);
                    v.push(oxm(FieldId::Ipv4Src, val, m));
                }
                if let Some((i, plen)) = self.ip_dst {
                    let (val, m) = prefix(i, plen);
                    v.push(oxm(FieldId::Ipv4Dst, val, m));
                }
                let (proto, port_field) = match self.l3 {
                    MatchL3::Tcp => (Some(6), FieldId::TcpDst),
                    MatchL3::Udp => (Some(17), FieldId::UdpDst),
                    _ => (None, FieldId::TcpDst),
                };
                if let Some(p) = proto {
                    v.push(oxm(FieldId::IpProto, p, None));
                    if let Some(i) = self.tp_dst {
                        v.push(oxm(port_field, L4[i].into(), None));
                    }
                }
            }
        }
        for &(f, value, masked) in &self.pof {
            v.push(pof_match(f, value, masked));
        }
        Match { oxms: v }
    }
}

fn match_spec() -> impl Strategy<Value = MatchSpec> {
    let l3 = prop_oneof![
        3 => Just(MatchL3::Any),
        2 => Just(MatchL3::Ipv4),
        2 => Just(MatchL3::Tcp),
        2 => Just(MatchL3::Udp),
        1 => Just(MatchL3::Arp),
    ];
    let prefix = (0..IPS.len(), prop::sample::select(vec![8u32, 16, 24, 32]));
    (
        prop::option::weighted(0.3, prop::sample::select(PORTS.to_vec())),
        prop::option::weighted(0.3, (prop::sample::select(MACS.to_vec()), any::<bool>())),
        prop::option::weighted(0.15, prop::sample::select(MACS.to_vec())),
        prop::option::weighted(0.2, prop::option::of(prop::sample::select(vec![5u16, 6]))),
        l3,
        prop::option::weighted(0.3, prefix.clone()),
        prop::option::weighted(0.5, prefix),
        prop::option::weighted(0.4, 0..L4.len()),
        prop::option::weighted(
            0.2,
            (prop::sample::select(vec![0u64, 1, 2, 3]), prop::sample::select(vec![1u64, 3, 0xff])),
        ),
        prop_oneof![
            3 => Just(Vec::new()),
            1 => prop::collection::vec((0..POF_FIELDS.len(), 0..4usize, any::<bool>()), 1..=2),
        ],
    )
        .prop_map(
            |(in_port, eth_dst, eth_src, vlan, l3, ip_src, ip_dst, tp_dst, metadata, pof)| {
                MatchSpec {
                    in_port,
                    eth_dst,
                    eth_src,
                    vlan,
                    l3,
                    ip_src,
                    ip_dst,
                    tp_dst,
                    metadata,
                    pof,
                }
            },
        )
}

/// An action; set-fields are drawn for any L3 and left to the pipeline's
/// validation (a rejected flow-mod must be rejected by every datapath).
fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        6 => prop::sample::select(PORTS.to_vec()).prop_map(|port| Action::Output { port, max_len: 0 }),
        1 => Just(Action::Output { port: port_no::CONTROLLER, max_len: 32 }),
        1 => Just(Action::Output { port: port_no::IN_PORT, max_len: 0 }),
        1 => Just(Action::Output { port: port_no::FLOOD, max_len: 0 }),
        2 => (1u32..=3).prop_map(Action::Group),
        2 => prop::sample::select(IPS.to_vec())
            .prop_map(|ip| Action::SetField(oxm(FieldId::Ipv4Dst, u32::from_be_bytes(ip).into(), None))),
        1 => prop::sample::select(MACS.to_vec())
            .prop_map(|m| Action::SetField(oxm(FieldId::EthDst, mac(m), None))),
        1 => prop::sample::select(L4.to_vec())
            .prop_map(|p| Action::SetField(oxm(FieldId::TcpDst, p.into(), None))),
        1 => prop::sample::select(L4.to_vec())
            .prop_map(|p| Action::SetField(oxm(FieldId::UdpDst, p.into(), None))),
        1 => (0u64..4).prop_map(|m| Action::SetField(oxm(FieldId::Metadata, m.into(), None))),
        1 => Just(Action::SetField(oxm(FieldId::VlanVid, u128::from(OFPVID_PRESENT | 6), None))),
        1 => Just(Action::SetField(oxm(FieldId::IpDscp, 10, None))),
        1 => Just(Action::PushVlan(0x8100)),
        1 => Just(Action::PopVlan),
        1 => Just(Action::DecNwTtl),
        1 => Just(Action::SetQueue(1)),
        3 => pof_action(),
        3 => field_action(),
    ]
}

/// Nicira's move and load and the ONF copy-field, on the fields the test
/// packets carry (whole fields, parts, one bit, into the metadata that
/// later tables match); prerequisites are left to the pipeline's
/// validation.
fn field_action() -> impl Strategy<Value = Action> {
    use sluice_ofp::fieldcopy::{FieldAction, FieldRef, MoveEncoding, Subfield};
    let sub = |f: FieldId, ofs: u16, n_bits: u16| Subfield { field: FieldRef::of(f), ofs, n_bits };
    let mv = |src: Subfield, dst: Subfield| FieldAction::Move {
        src,
        dst,
        encoding: MoveEncoding::Nicira,
    };
    let whole = Subfield::whole;
    let fixed = vec![
        mv(whole(FieldId::EthSrc), whole(FieldId::EthDst)),
        mv(sub(FieldId::EthSrc, 0, 16), sub(FieldId::EthDst, 32, 16)),
        mv(whole(FieldId::Ipv4Src), whole(FieldId::Ipv4Dst)),
        FieldAction::Move {
            src: whole(FieldId::Ipv4Dst),
            dst: whole(FieldId::Ipv4Src),
            encoding: MoveEncoding::Onf,
        },
        mv(whole(FieldId::TcpSrc), whole(FieldId::TcpDst)),
        mv(sub(FieldId::UdpSrc, 0, 8), sub(FieldId::UdpDst, 8, 8)),
        mv(sub(FieldId::Ipv4Src, 0, 2), sub(FieldId::Metadata, 0, 2)),
        mv(whole(FieldId::ArpSpa), whole(FieldId::ArpTpa)),
        mv(whole(FieldId::EthSrc), whole(FieldId::ArpTha)),
        mv(sub(FieldId::Ipv4Dst, 0, 6), whole(FieldId::IpDscp)),
        FieldAction::Load { dst: whole(FieldId::ArpOp), value: 2 },
        FieldAction::Load { dst: whole(FieldId::Icmpv4Type), value: 0 },
        FieldAction::Load { dst: sub(FieldId::EthDst, 40, 1), value: 1 },
        FieldAction::Load { dst: sub(FieldId::Metadata, 1, 1), value: 1 },
    ];
    prop_oneof![
        4 => prop::sample::select(fixed),
        1 => (0u16..32, prop::sample::select(vec![0u64, 1, 0x2a, 0xff]))
            .prop_map(move |(ofs, value)| FieldAction::Load { dst: sub(FieldId::Ipv4Dst, ofs.min(24), 8), value }),
    ]
    .prop_map(|f| f.to_action())
}

fn actions() -> impl Strategy<Value = Vec<Action>> {
    prop::collection::vec(action(), 0..4)
}

#[derive(Clone, Debug)]
struct InstrSpec {
    meter: Option<u32>,
    apply: Option<Vec<Action>>,
    clear: bool,
    write: Option<Vec<Action>>,
    metadata: Option<(u64, u64)>,
    goto: Option<u8>,
}

fn instr_spec() -> impl Strategy<Value = InstrSpec> {
    (
        prop::option::weighted(0.15, 1u32..=2),
        prop::option::weighted(0.6, actions()),
        prop::bool::weighted(0.1),
        prop::option::weighted(0.4, actions()),
        prop::option::weighted(0.3, (0u64..4, prop::sample::select(vec![1u64, 3, 0xff]))),
        prop::option::weighted(0.5, 1u8..N_TABLES),
    )
        .prop_map(|(meter, apply, clear, write, metadata, goto)| InstrSpec {
            meter,
            apply,
            clear,
            write,
            metadata,
            goto,
        })
}

impl InstrSpec {
    fn build(&self, table: u8) -> Vec<Instruction> {
        let mut v = Vec::new();
        if let Some(m) = self.meter {
            v.push(Instruction::Meter(m));
        }
        if let Some(a) = &self.apply {
            v.push(Instruction::ApplyActions(a.clone()));
        }
        if self.clear {
            v.push(Instruction::ClearActions);
        }
        if let Some(a) = &self.write {
            v.push(Instruction::WriteActions(a.clone()));
        }
        if let Some((metadata, mask)) = self.metadata {
            v.push(Instruction::WriteMetadata { metadata, mask });
        }
        if let Some(g) = self.goto {
            // Forward only (the generator aims at a later table).
            let t = table.saturating_add(g).min(N_TABLES - 1);
            if t > table {
                v.push(Instruction::GotoTable(t));
            }
        }
        v
    }
}

// ---------------------------------------------------------------- ops

#[derive(Clone, Debug)]
enum Op {
    Flow(FlowMod),
    Packet { in_port: u32, frame: Vec<u8> },
    PacketOutTable { in_port: u32, frame: Vec<u8> },
    Group(GroupMod),
    Meter(MeterMod),
    Advance(u64),
}

fn flow_mod() -> impl Strategy<Value = FlowMod> {
    let command = prop_oneof![
        12 => Just(fc::ADD),
        1 => Just(fc::MODIFY),
        1 => Just(fc::MODIFY_STRICT),
        1 => Just(fc::DELETE),
        1 => Just(fc::DELETE_STRICT),
    ];
    (
        command,
        0..N_TABLES,
        prop::sample::select(vec![0u16, 1, 5, 5, 10, 100]),
        match_spec(),
        instr_spec(),
        (prop::sample::select(vec![0u16, 0, 0, 1]), prop::sample::select(vec![0u16, 0, 0, 2])),
        (any::<bool>(), any::<bool>(), 0u64..3),
    )
        .prop_map(
            |(command, table, priority, m, ins, (idle, hard), (rem, nocount, cookie))| {
                let mut flags = 0;
                if rem {
                    flags |= ff::SEND_FLOW_REM;
                }
                if nocount && cookie == 2 {
                    flags |= ff::NO_PKT_COUNTS;
                }
                FlowMod {
                    cookie,
                    cookie_mask: 0,
                    table_id: table,
                    command,
                    idle_timeout: idle,
                    hard_timeout: hard,
                    priority,
                    buffer_id: OFP_NO_BUFFER,
                    out_port: port_no::ANY,
                    out_group: group_id::ANY,
                    flags,
                    r#match: m.build(),
                    instructions: ins.build(table),
                }
            },
        )
}

fn bucket(weight: u16) -> impl Strategy<Value = Bucket> {
    (prop::sample::select(PORTS.to_vec()), prop::bool::weighted(0.3)).prop_map(
        move |(port, set_mac)| {
            let mut actions = Vec::new();
            if set_mac {
                actions.push(Action::SetField(oxm(FieldId::EthSrc, 0x99, None)));
            }
            actions.push(Action::Output { port, max_len: 0 });
            Bucket { weight, watch_port: port_no::ANY, watch_group: group_id::ANY, actions }
        },
    )
}

fn group_mod() -> impl Strategy<Value = GroupMod> {
    (1u32..=3).prop_flat_map(|id| {
        let (ty, weight, n) = match id {
            1 => (GroupType::All, 0, 1..3usize),
            2 => (GroupType::Select, 1, 1..4),
            _ => (GroupType::Indirect, 0, 1..2),
        };
        prop::collection::vec(bucket(weight), n).prop_map(move |buckets| GroupMod {
            command: gc::MODIFY,
            group_type: ty,
            group_id: id,
            buckets,
        })
    })
}

fn meter_mod() -> impl Strategy<Value = MeterMod> {
    (1u32..=2, 1u32..4, 1u32..4).prop_map(|(id, rate, burst)| {
        let band = if id == 1 {
            MeterBand::Drop { rate, burst_size: burst }
        } else {
            MeterBand::DscpRemark { rate, burst_size: burst, prec_level: 1 }
        };
        MeterMod {
            command: mc::MODIFY,
            flags: mf::PKTPS | mf::BURST,
            meter_id: id,
            bands: vec![band],
        }
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => flow_mod().prop_map(Op::Flow),
        10 => (prop::sample::select(PORTS.to_vec()), packet_spec())
            .prop_map(|(in_port, p)| Op::Packet { in_port, frame: p.build() }),
        1 => (prop::sample::select(PORTS.to_vec()), packet_spec())
            .prop_map(|(in_port, p)| Op::PacketOutTable { in_port, frame: p.build() }),
        1 => group_mod().prop_map(Op::Group),
        1 => meter_mod().prop_map(Op::Meter),
        1 => prop::sample::select(vec![100_000_000u64, 700_000_000, 1_500_000_000]).prop_map(Op::Advance),
    ]
}

// ---------------------------------------------------------------- harness

fn switch(datapath: Datapath, cache: CacheMode, jit: Jit) -> Pipeline {
    if let Jit::Daemon = jit {
        let d = Config::daemon();
        assert_eq!((d.datapath, d.cache), (datapath, cache), "the daemon's default changed");
    }
    let mut p = Pipeline::new(Config {
        n_tables: N_TABLES,
        n_buffers: 8,
        datapath,
        cache,
        jit: jit.opts(),
        // The background settings get a compiler thread (the daemon's
        // own is `sluice_datapath::compiler()`).
        compiler: jit.opts().background.then(common::compiler),
        ..Config::default()
    });
    for n in PORTS {
        p.ports_mut().add(
            Port {
                port_no: n,
                hw_addr: [0, 0, 0, 0, 0, n as u8],
                name: format!("p{n}"),
                ..Port::default()
            },
            0,
        );
        p.ports_mut().add_queue(n, 1, 0);
    }
    let meter = |id: u32, band: MeterBand| MeterMod {
        command: mc::ADD,
        flags: mf::PKTPS | mf::BURST | mf::STATS,
        meter_id: id,
        bands: vec![band],
    };
    p.meter_mod(&meter(1, MeterBand::Drop { rate: 2, burst_size: 3 })).unwrap();
    p.meter_mod(&meter(2, MeterBand::DscpRemark { rate: 1, burst_size: 1, prec_level: 1 }))
        .unwrap();
    let out = |port| Action::Output { port, max_len: 0 };
    let b = |weight, actions| Bucket {
        weight,
        watch_port: port_no::ANY,
        watch_group: group_id::ANY,
        actions,
    };
    let groups = [
        (1, GroupType::All, vec![b(0, vec![out(1)]), b(0, vec![out(2)])]),
        (2, GroupType::Select, vec![b(1, vec![out(3)]), b(2, vec![out(4)]), b(1, vec![out(1)])]),
        (3, GroupType::Indirect, vec![b(0, vec![Action::PushVlan(0x8100), out(2)])]),
    ];
    for (id, ty, buckets) in groups {
        p.group_mod(&GroupMod { command: gc::ADD, group_type: ty, group_id: id, buckets }).unwrap();
    }
    // Table-miss entries so most packets get somewhere: tables 0–2 go on,
    // table 3 outputs to port 4 (random flow-mods may replace or delete
    // them).
    for t in 0..N_TABLES {
        let ins = if t + 1 < N_TABLES {
            vec![Instruction::GotoTable(t + 1)]
        } else {
            vec![Instruction::WriteActions(vec![out(4)])]
        };
        let fm = FlowMod {
            table_id: t,
            command: fc::ADD,
            buffer_id: OFP_NO_BUFFER,
            out_port: port_no::ANY,
            out_group: group_id::ANY,
            instructions: ins,
            ..FlowMod::default()
        };
        p.flow_mod(&fm).unwrap();
    }
    p
}

/// Everything observable about one op, as comparable text-free values.
#[derive(Clone, Debug, PartialEq)]
enum Seen {
    Tx(Vec<(u32, Option<u32>, Vec<u8>)>),
    Result(Result<(), sluice_ofp::error::ErrorCode>),
    Async(Vec<Message>),
    Replies(Vec<Message>),
}

fn apply(p: &mut Pipeline, op: &Op, seen: &mut Vec<Seen>) {
    let mut tx = Vec::new();
    let mut sink = |port: u32, q: Option<u32>, f: &[u8]| tx.push((port, q, f.to_vec()));
    match op {
        Op::Flow(fm) => seen.push(Seen::Result(p.flow_mod(fm))),
        Op::Packet { in_port, frame } => p.process(*in_port, frame, &mut sink),
        Op::PacketOutTable { in_port, frame } => {
            let po = PacketOut {
                buffer_id: OFP_NO_BUFFER,
                in_port: *in_port,
                actions: vec![Action::Output { port: port_no::TABLE, max_len: 0 }],
                data: frame.clone(),
            };
            seen.push(Seen::Result(p.packet_out(&po, &mut sink)));
        }
        Op::Group(gm) => seen.push(Seen::Result(p.group_mod(gm))),
        Op::Meter(mm) => seen.push(Seen::Result(p.meter_mod(mm))),
        Op::Advance(ns) => p.advance(p.now_ns() + ns),
    }
    seen.push(Seen::Tx(tx));
    seen.push(Seen::Async(p.take_async()));
}

/// [`apply`] as the daemon does it: packets are forwarded by two worker
/// contexts (taking turns, each with its own caches and counter shard)
/// through the *published* copy; everything else changes the master,
/// which is then published (and, every other time, waited for).
fn apply_published(
    pb: &mut Publisher,
    ws: &mut [Worker; 2],
    i: usize,
    op: &Op,
    seen: &mut Vec<Seen>,
) {
    let mut tx = Vec::new();
    let mut sink = |port: u32, q: Option<u32>, f: &[u8]| tx.push((port, q, f.to_vec()));
    let mut asy = Vec::new();
    match op {
        Op::Packet { in_port, frame } => {
            let w = &mut ws[i % 2];
            w.set_now(pb.master().now_ns());
            let version = pb.published().load();
            version.process_with(w, *in_port, frame, &mut sink);
            asy = w.take_async();
        }
        _ => {
            let mut step = Vec::new();
            apply(pb.master_mut(), op, &mut step);
            for s in step {
                match s {
                    Seen::Tx(t) => tx = t,
                    Seen::Async(a) => asy = a,
                    other => seen.push(other),
                }
            }
            if i % 2 == 0 {
                pb.publish();
            } else {
                assert!(pb.publish_and_wait(), "no reader may hold an old version here");
            }
        }
    }
    seen.push(Seen::Tx(tx));
    seen.push(Seen::Async(asy));
}

fn stats(p: &mut Pipeline) -> Vec<Message> {
    let all = FlowStatsRequest {
        table_id: table_id::ALL,
        out_port: port_no::ANY,
        out_group: group_id::ANY,
        cookie: 0,
        cookie_mask: 0,
        match_: Match::default(),
    };
    let bodies = [
        MultipartRequestBody::Flow(all.clone()),
        MultipartRequestBody::Aggregate(all),
        MultipartRequestBody::Table,
        MultipartRequestBody::Group { group_id: group_id::ALL },
        MultipartRequestBody::Meter { meter_id: sluice_ofp::consts::meter_id::ALL },
        MultipartRequestBody::PortStats { port_no: port_no::ANY },
        MultipartRequestBody::Queue { port_no: port_no::ANY, queue_id: 0xffff_ffff },
    ];
    let mut out = Vec::new();
    for body in bodies {
        let msg = Message::MultipartRequest(MultipartRequest { flags: 0, body });
        let raw = msg.encode(9);
        for r in p.handle(9, &msg, &raw, &mut |_: u32, _: Option<u32>, _: &[u8]| {}) {
            out.push(r.msg);
        }
    }
    out
}

/// The ops as `[start, end)` groups: a run of consecutive packets from
/// one port (at most 40, one receive burst) or a single other op.
fn burst_groups(ops: &[Op]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let port = match op {
            Op::Packet { in_port, .. } => Some(*in_port),
            _ => None,
        };
        let extends = match (out.last(), port) {
            (Some(&(s, e)), Some(p)) if e == i && e - s < 40 => {
                matches!(ops.get(s), Some(Op::Packet { in_port, .. }) if *in_port == p)
            }
            _ => false,
        };
        match out.last_mut() {
            Some(last) if extends => last.1 = i + 1,
            _ => out.push((i, i + 1)),
        }
    }
    out
}

/// The reference's observations with each multi-packet group's outputs
/// and asynchronous messages concatenated, as the burst runs record them.
fn merge_bursts(seen: &[(usize, Seen)], groups: &[(usize, usize)]) -> Vec<(usize, Seen)> {
    let mut out = Vec::new();
    let mut k = 0;
    for &(start, end) in groups {
        let mine = seen[k..].iter().take_while(|(i, _)| *i < end).count();
        let part = &seen[k..k + mine];
        k += mine;
        if end - start > 1 {
            let mut tx = Vec::new();
            let mut asy = Vec::new();
            for (_, s) in part {
                match s {
                    Seen::Tx(t) => tx.extend(t.iter().cloned()),
                    Seen::Async(a) => asy.extend(a.iter().cloned()),
                    other => panic!("a packet op recorded {other:?}"),
                }
            }
            out.push((start, Seen::Tx(tx)));
            out.push((start, Seen::Async(asy)));
        } else {
            out.extend(part.iter().map(|(i, s)| (*i, s.clone())));
        }
    }
    out.extend(seen[k..].iter().map(|(i, s)| (*i, s.clone())));
    out
}

/// Run `ops` through every configuration; every one must see what the
/// reference sees.
fn check(ops: &[Op]) -> Result<(), TestCaseError> {
    check_with(ops, None)
}

/// [`switch`] following `graph` instead of OpenFlow's table sequence.
fn switch_with(datapath: Datapath, cache: CacheMode, jit: Jit, graph: Option<&Graph>) -> Pipeline {
    let mut p = switch(datapath, cache, jit);
    if let Some(g) = graph {
        p.set_graph(g.clone()).expect("the graph names only the switch's tables");
    }
    p
}

/// [`check`] with every pipeline following `graph`.
fn check_with(ops: &[Op], graph: Option<&Graph>) -> Result<(), TestCaseError> {
    check_counting(ops, graph).map(|_| ())
}

/// [`check_with`], also saying how many packets of the burst runs the
/// raw-header cache served.
fn check_counting(ops: &[Op], graph: Option<&Graph>) -> Result<u64, TestCaseError> {
    let mut raw_hits = 0;
    let mut runs = Vec::new();
    for (d, c, j) in CONFIGS {
        let mut p = switch_with(d, c, j, graph);
        let mut seen = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let mut step = Vec::new();
            apply(&mut p, op, &mut step);
            seen.extend(step.into_iter().map(|s| (i, s)));
        }
        seen.push((ops.len(), Seen::Replies(stats(&mut p))));
        prop_assert_eq!(p.cache_stats().chain_mismatches, 0);
        runs.push((d, c, j, seen, p.cache_stats()));
    }
    // The published datapath (workers on copies, master for the rest).
    for (d, c, j) in [
        (Datapath::Classifier, CacheMode::On, Jit::Straight),
        (Datapath::Reference, CacheMode::Off, Jit::Straight),
        (Datapath::Compiled, CacheMode::Off, Jit::Straight),
        (Datapath::Compiled, CacheMode::On, Jit::Background),
        (Datapath::Compiled, CacheMode::Auto, Jit::Daemon),
    ] {
        let mut master = switch_with(d, c, j, graph);
        let mut ws = [master.worker(), master.worker()];
        let mut pb = Publisher::new(master);
        let mut seen = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let mut step = Vec::new();
            apply_published(&mut pb, &mut ws, i, op, &mut step);
            seen.extend(step.into_iter().map(|s| (i, s)));
        }
        seen.push((ops.len(), Seen::Replies(stats(pb.master_mut()))));
        prop_assert_eq!(pb.fallbacks(), 0);
        for w in &ws {
            prop_assert_eq!(w.cache_stats().chain_mismatches, 0);
        }
        runs.push((d, c, j, seen, ws[0].cache_stats()));
    }
    // Bursts: consecutive packets from one port go through the staged
    // burst path together (as a port's receive burst in the daemon);
    // compared with the reference's outputs of the same packets, merged.
    let groups = burst_groups(ops);
    let mut burst_runs = Vec::new();
    // `lent`: the frames run in the caller's buffers (the daemon's
    // receive path, `process_lent`) instead of being copied in.
    for (d, c, j, lent) in [
        (Datapath::Compiled, CacheMode::On, Jit::Straight, false),
        (Datapath::Compiled, CacheMode::Off, Jit::Probe, false),
        (Datapath::Classifier, CacheMode::Megaflow, Jit::Straight, true),
        (Datapath::Reference, CacheMode::Off, Jit::Straight, false),
        (Datapath::Compiled, CacheMode::Auto, Jit::Daemon, true),
    ] {
        let mut p = switch_with(d, c, j, graph);
        let mut seen = Vec::new();
        for &(start, end) in &groups {
            let mut step = Vec::new();
            match ops.get(start..end) {
                Some(run) if end - start > 1 => {
                    let Some(Op::Packet { in_port, .. }) = run.first() else { unreachable!() };
                    let frames: Vec<&[u8]> = run
                        .iter()
                        .filter_map(|o| match o {
                            Op::Packet { frame, .. } => Some(&frame[..]),
                            _ => None,
                        })
                        .collect();
                    let mut tx = Vec::new();
                    let mut sink =
                        |port: u32, q: Option<u32>, f: &[u8]| tx.push((port, q, f.to_vec()));
                    if lent {
                        // A port's receive buffer: default headroom, room
                        // for a 1500-byte frame with tags.
                        let mut bufs: Vec<PacketBuf> = frames
                            .iter()
                            .map(|f| {
                                let mut b = PacketBuf::new(PacketBuf::DEFAULT_HEADROOM, 2048);
                                b.load(f).expect("test frames fit");
                                b
                            })
                            .collect();
                        p.process_lent(*in_port, &mut bufs, &mut sink);
                    } else {
                        p.process_burst(*in_port, &frames, &mut sink);
                    }
                    step.push(Seen::Tx(tx));
                    step.push(Seen::Async(p.take_async()));
                }
                _ => {
                    if let Some(op) = ops.get(start) {
                        apply(&mut p, op, &mut step);
                    }
                }
            }
            seen.extend(step.into_iter().map(|s| (start, s)));
        }
        seen.push((ops.len(), Seen::Replies(stats(&mut p))));
        prop_assert_eq!(p.cache_stats().chain_mismatches, 0);
        raw_hits += p.cache_stats().raw_hits;
        burst_runs.push((d, c, j, lent, seen));
    }
    let merged = merge_bursts(&runs[0].3, &groups);
    for (d, c, j, lent, seen) in &burst_runs {
        prop_assert_eq!(seen.len(), merged.len());
        for ((i, a), (_, b)) in merged.iter().zip(seen.iter()) {
            prop_assert!(a == b, "burst {:?}/{:?}/{:?} (lent: {}) differs from the reference at op {} ({:?})\nreference: {:?}\n     this: {:?}", d, c, j, lent, i, ops.get(*i), a, b);
        }
    }
    let (_, _, _, oracle, _) = &runs[0];
    if std::env::var("DIFF_DEBUG").is_ok() {
        let ok = oracle.iter().filter(|(_, s)| matches!(s, Seen::Result(Ok(())))).count();
        let err = oracle.iter().filter(|(_, s)| matches!(s, Seen::Result(Err(_)))).count();
        let tx: usize =
            oracle.iter().map(|(_, s)| if let Seen::Tx(v) = s { v.len() } else { 0 }).sum();
        let pin: usize =
            oracle.iter().map(|(_, s)| if let Seen::Async(v) = s { v.len() } else { 0 }).sum();
        eprintln!("ok {ok} err {err} tx {tx} async {pin} cache {:?}", runs[3].4);
    }
    for (d, c, j, seen, cs) in &runs[1..] {
        prop_assert_eq!(seen.len(), oracle.len());
        for ((i, a), (_, b)) in oracle.iter().zip(seen.iter()) {
            prop_assert!(a == b, "{:?}/{:?}/{:?} differs from the reference at op {} ({:?})\nreference: {:?}\n     this: {:?}\ncache: {:?}", d, c, j, i, ops.get(*i), a, b, cs);
        }
    }
    Ok(raw_hits)
}

/// Tables first (every flow-mod an ADD), then the packets `rounds` times,
/// then `tail`, then the packets once more.
fn traffic(
    flows: Vec<FlowMod>,
    pkts: &[(u32, PacketSpec)],
    rounds: usize,
    tail: Vec<Op>,
) -> Vec<Op> {
    let packets =
        || pkts.iter().map(|(in_port, p)| Op::Packet { in_port: *in_port, frame: p.build() });
    let mut ops: Vec<Op> = flows
        .into_iter()
        .map(|mut f| {
            f.command = fc::ADD;
            Op::Flow(f)
        })
        .collect();
    for _ in 0..rounds {
        ops.extend(packets());
    }
    ops.extend(tail);
    ops.extend(packets());
    ops
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    /// Random interleavings of table changes and packets.
    #[test]
    fn datapaths_agree(ops in prop::collection::vec(op(), 1..80)) {
        check(&ops)?;
    }

    /// Tables built first, then many packets: the caches are exercised
    /// hard (repeated flows) between few invalidations.
    #[test]
    fn datapaths_agree_on_traffic(
        flows in prop::collection::vec(flow_mod(), 1..30),
        pkts in prop::collection::vec((prop::sample::select(PORTS.to_vec()), packet_spec()), 1..40),
        tail in prop::collection::vec(op(), 0..20),
    ) {
        check(&traffic(flows, &pkts, 3, tail))?;
    }
}

// ---------------------------------------------------------------- graphs

/// Key tests a graph may branch on: fields the packets and rules vary
/// (ethertype IPv4, ingress port 1, IP protocol TCP, a VLAN tag present,
/// metadata bit 0, which `write_metadata` and `set_field` rules set).
fn key_test() -> impl Strategy<Value = KeyTest> {
    let on = |field: Field, value: u64| {
        let s = FIXED_LAYOUT.slot(field);
        let mask = if s.width >= 64 { u64::MAX } else { ((1u64 << s.width) - 1) << s.shift };
        KeyTest { word: s.word, mask, value: value << s.shift }
    };
    prop::sample::select(vec![
        on(Field::EthType, 0x0800),
        on(Field::InPort, 1),
        on(Field::IpProto, 6),
        KeyTest {
            word: FIXED_LAYOUT.slot(Field::VlanVid).word,
            mask: u64::from(OFPVID_PRESENT) << FIXED_LAYOUT.slot(Field::VlanVid).shift,
            value: u64::from(OFPVID_PRESENT) << FIXED_LAYOUT.slot(Field::VlanVid).shift,
        },
        KeyTest { word: FIXED_LAYOUT.slot(Field::Metadata).word, mask: 1, value: 1 },
    ])
}

/// A random control graph over the switch's tables: nodes in topological
/// order (fixed edges only go to later nodes), the last one `End`; applies
/// with every kind of edge, branches on [`key_test`]s. Graphs whose goto
/// edges close a cycle are refused by `Graph::new` and not drawn.
fn graph() -> impl Strategy<Value = Graph> {
    (3usize..9).prop_flat_map(|n| {
        let node = move |i: usize| {
            let later = (i as u16 + 1)..(n as u16);
            let to = prop::sample::select(later.clone().collect::<Vec<_>>());
            let next = prop_oneof![
                2 => Just(Next::Entry),
                2 => (to.clone(), to.clone()).prop_map(|(hit, miss)| Next::Hit { hit, miss }),
                1 => (prop::sample::select(vec![0u32, 1]), to.clone(), to.clone())
                    .prop_map(|(a, arm, default)| Next::Action { arms: vec![(a, arm)].into(), default }),
                1 => to.clone().prop_map(Next::To),
            ];
            prop_oneof![
                3 => (0..N_TABLES, next).prop_map(|(table, next)| Node::Apply { table, next }),
                2 => (key_test(), to.clone(), to)
                    .prop_map(|(test, then, otherwise)| Node::Branch { test, then, otherwise }),
            ]
            .boxed()
        };
        let nodes: Vec<BoxedStrategy<Node>> =
            (0..n - 1).map(node).chain([Just(Node::End).boxed()]).collect();
        // Fixed edges only go forward; goto edges may still close a cycle
        // (a later node applying a lower table), which the graph refuses.
        nodes.prop_filter_map("goto edges close a cycle", |v| Graph::new(v, 0).ok())
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        max_global_rejects: 100_000,
        ..ProptestConfig::default()
    })]

    /// Random control graphs (branches on key bits, hit/miss and action
    /// edges, goto edges) over random tables and traffic: every datapath,
    /// cache mode, the published and burst paths agree with the reference
    /// (caches must hold the bits branches read).
    #[test]
    fn datapaths_agree_on_graphs(
        g in graph(),
        flows in prop::collection::vec(flow_mod(), 1..30),
        pkts in prop::collection::vec((prop::sample::select(PORTS.to_vec()), packet_spec()), 1..30),
        tail in prop::collection::vec(op(), 0..10),
    ) {
        check_with(&traffic(flows, &pkts, 2, tail), Some(&g))?;
    }
}

#[test]
fn a_branch_on_key_bits_picks_the_table() {
    // Node 0: IPv4 packets to table 1, others to table 2; both output.
    let s = FIXED_LAYOUT.slot(Field::EthType);
    let ipv4 = KeyTest { word: s.word, mask: 0xffff << s.shift, value: 0x0800 << s.shift };
    let g = Graph::new(
        vec![
            Node::Branch { test: ipv4, then: 1, otherwise: 2 },
            Node::Apply { table: 1, next: Next::To(3) },
            Node::Apply { table: 2, next: Next::To(3) },
            Node::End,
        ],
        0,
    )
    .unwrap();
    let out = |table: u8, port: u32| FlowMod {
        table_id: table,
        command: fc::ADD,
        buffer_id: OFP_NO_BUFFER,
        out_port: port_no::ANY,
        out_group: group_id::ANY,
        instructions: vec![Instruction::WriteActions(vec![Action::Output { port, max_len: 0 }])],
        ..FlowMod::default()
    };
    let spec = |l3| PacketSpec {
        dst: 1,
        src: 2,
        vlan: None,
        inner_vlan: None,
        l3,
        ip_src: 0,
        ip_dst: 1,
        sport: 0,
        dport: 1,
        ttl: 64,
        dscp: 0,
        shape: Shape::default(),
    };
    let (ip, arp) = (spec(L3::Tcp).build(), spec(L3::Arp).build());
    for (d, c, j) in CONFIGS {
        let mut p = switch_with(d, c, j, Some(&g));
        p.flow_mod(&out(1, 2)).unwrap();
        p.flow_mod(&out(2, 3)).unwrap();
        for _ in 0..3 {
            for (frame, want) in [(&ip, 2u32), (&arp, 3)] {
                let mut got = Vec::new();
                p.process(1, frame, &mut |port: u32, _: Option<u32>, _: &[u8]| got.push(port));
                assert_eq!(got, [want], "{d:?}/{c:?}/{j:?}");
            }
        }
        // Cache entries over the graph get composed programs (the branch's
        // decision is recorded in the chain), and replays agree with it.
        let stats = p.cache_stats();
        assert_eq!(stats.chain_mismatches, 0);
        if c != CacheMode::Off {
            assert!(stats.composed > 0, "{d:?}/{c:?}/{j:?}: {stats:?}");
        }
    }
    // A graph naming a table the switch does not have is refused.
    let far = Graph::new(vec![Node::Apply { table: N_TABLES, next: Next::Entry }], 0).unwrap();
    let mut p = switch(Datapath::Compiled, CacheMode::On, Jit::Straight);
    assert!(p.set_graph(far).is_err());
}

/// A rule in table 0 whose apply-actions change the packet's structure
/// (or header fields) before `goto_table:1`, and VLAN/L3 rules in table 1;
/// packets differ in bytes the flow key does not hold (the inner VLAN
/// tag). Targets the "stop recording" rules of the caches.
fn structural_case() -> impl Strategy<Value = Vec<Op>> {
    let edit = prop_oneof![
        Just(Action::PopVlan),
        Just(Action::PushVlan(0x8100)),
        Just(Action::SetField(oxm(FieldId::VlanVid, u128::from(OFPVID_PRESENT | 5), None))),
        Just(Action::SetField(oxm(FieldId::Metadata, 1, None))),
        Just(Action::DecNwTtl),
    ];
    let t1_rule = (prop::option::of(prop::sample::select(vec![5u16, 6])), 1u16..4, 1u32..=4);
    (
        prop::collection::vec(edit, 1..3),
        prop::collection::vec(t1_rule, 1..4),
        prop::collection::vec((packet_spec(), prop::sample::select(vec![5u16, 6])), 1..12),
    )
        .prop_map(|(edits, t1, pkts)| {
            let base = FlowMod {
                command: fc::ADD,
                buffer_id: OFP_NO_BUFFER,
                out_port: port_no::ANY,
                out_group: group_id::ANY,
                ..FlowMod::default()
            };
            let mut ops = vec![Op::Flow(FlowMod {
                priority: 50,
                instructions: vec![Instruction::ApplyActions(edits), Instruction::GotoTable(1)],
                ..base.clone()
            })];
            for (vid, priority, port) in t1 {
                let v = match vid {
                    Some(v) => u128::from(OFPVID_PRESENT | v),
                    None => 0,
                };
                ops.push(Op::Flow(FlowMod {
                    table_id: 1,
                    priority,
                    r#match: Match { oxms: vec![oxm(FieldId::VlanVid, v, None)] },
                    instructions: vec![Instruction::ApplyActions(vec![Action::Output {
                        port,
                        max_len: 0,
                    }])],
                    ..base.clone()
                }));
            }
            for _ in 0..2 {
                for (spec, inner) in &pkts {
                    let mut spec = spec.clone();
                    spec.vlan = Some((5, 0));
                    spec.inner_vlan = Some(*inner);
                    ops.push(Op::Packet { in_port: 1, frame: spec.build() });
                }
            }
            ops
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn structural_actions_before_lookups(ops in structural_case()) {
        check(&ops)?;
    }
}

/// The caches really are used by the sequences above (a test that the
/// differential test tests something).
/// The raw-header cache (`sluice_core::cache::RawKey`) on frames built to
/// tell its key apart: rules on the ingress port, the IPv4 destination
/// and the transport ports, behind IPv4 options of 0 to 40 bytes (with two
/// VLAN tags and 40 bytes of options the TCP header ends past byte 96, so
/// those frames must not be learnt), payload bytes differing only past
/// byte 96, Ethernet trailers (same first bytes, another length) and
/// truncated TCP, from two ports. The burst runs with both caches on must
/// agree with the reference and the raw-header cache must serve some of
/// their packets.
#[test]
fn raw_header_cache_agrees_with_the_reference() {
    let fm = |priority: u16, oxms: Vec<Oxm>, port: u32| FlowMod {
        table_id: 0,
        command: fc::ADD,
        priority,
        buffer_id: OFP_NO_BUFFER,
        out_port: port_no::ANY,
        out_group: group_id::ANY,
        r#match: Match { oxms },
        instructions: vec![Instruction::ApplyActions(vec![Action::Output { port, max_len: 0 }])],
        ..FlowMod::default()
    };
    let ip = || oxm(FieldId::EthType, 0x0800, None);
    let flows = vec![
        fm(30, vec![ip(), oxm(FieldId::IpProto, 6, None), oxm(FieldId::TcpDst, 80, None)], 3),
        fm(30, vec![ip(), oxm(FieldId::IpProto, 17, None), oxm(FieldId::UdpDst, 80, None)], 4),
        fm(20, vec![ip(), oxm(FieldId::Ipv4Dst, u128::from(ip_u32(1)), None)], 1),
        fm(10, vec![oxm(FieldId::InPort, 2, None)], 3),
        fm(0, vec![], 2),
    ];
    let mut pkts = Vec::new();
    for in_port in [1u32, 2] {
        for (l3, vlan, opts, pad, tail, trailer, dport) in [
            (L3::Udp, None, 0, 0, 0, 0, 1),
            (L3::Udp, None, 0, 0, 0, 0, 0),
            (L3::Udp, None, 0, 0, 0, 6, 1),
            (L3::Tcp, None, 6, 0, 0, 0, 1),
            (L3::Tcp, None, 6, 0, 0, 0, 2),
            (L3::Tcp, Some((5, 0)), 10, 0, 0, 0, 1),
            (L3::Tcp, Some((5, 0)), 10, 0, 0, 0, 0),
            (L3::Udp, None, 0, 90, 1, 0, 1),
            (L3::Udp, None, 0, 90, 2, 0, 1),
            (L3::Udp, None, 10, 90, 2, 0, 0),
            (L3::TruncatedTcp, None, 0, 0, 0, 0, 1),
            (L3::Icmp, None, 1, 0, 0, 0, 0),
            (L3::Arp, None, 0, 0, 0, 0, 0),
        ] {
            for ip_dst in [0, 1] {
                let spec = PacketSpec {
                    dst: 1,
                    src: 2,
                    vlan,
                    inner_vlan: vlan.map(|_| 6),
                    l3: l3.clone(),
                    ip_src: 0,
                    ip_dst,
                    sport: 0,
                    dport,
                    ttl: 64,
                    dscp: 0,
                    shape: Shape { opts, opt_byte: 1, pad, tail, trailer },
                };
                pkts.push((in_port, spec));
            }
        }
    }
    let ops = traffic(flows, &pkts, 3, Vec::new());
    let raw_hits = check_counting(&ops, None).unwrap_or_else(|e| panic!("{e}"));
    assert!(raw_hits > 0, "the raw-header cache served no packet");
}

#[test]
fn caches_are_hit() {
    let mut p = switch(Datapath::Classifier, CacheMode::On, Jit::Straight);
    let fm = FlowMod {
        table_id: 0,
        command: fc::ADD,
        priority: 10,
        buffer_id: OFP_NO_BUFFER,
        out_port: port_no::ANY,
        out_group: group_id::ANY,
        r#match: Match { oxms: vec![oxm(FieldId::EthType, 0x0800, None)] },
        instructions: vec![
            Instruction::WriteMetadata { metadata: 1, mask: 1 },
            Instruction::GotoTable(1),
        ],
        ..FlowMod::default()
    };
    p.flow_mod(&fm).unwrap();
    let fm1 = FlowMod {
        table_id: 1,
        r#match: Match {
            oxms: vec![oxm(FieldId::Metadata, 1, Some(1)), oxm(FieldId::EthType, 0x0800, None)],
        },
        instructions: vec![Instruction::ApplyActions(vec![Action::Output { port: 2, max_len: 0 }])],
        ..fm.clone()
    };
    p.flow_mod(&fm1).unwrap();
    let spec = |ip_dst| PacketSpec {
        dst: 1,
        src: 2,
        vlan: None,
        inner_vlan: None,
        l3: L3::Udp,
        ip_src: 0,
        ip_dst,
        sport: 0,
        dport: 1,
        ttl: 64,
        dscp: 0,
        shape: Shape::default(),
    };
    let mut n = 0;
    for i in 0..4 {
        p.process(1, &spec(i % 2).build(), &mut |port: u32, _: Option<u32>, _: &[u8]| {
            assert_eq!(port, 2);
            n += 1;
        });
    }
    p.process(1, &spec(3).build(), &mut |_: u32, _: Option<u32>, _: &[u8]| n += 1);
    assert_eq!(n, 5);
    let s = p.cache_stats();
    // 1st packet: both miss; 2nd (other ip_dst): megaflow hit (ip_dst not
    // consulted); 3rd, 4th: exact hits; 5th: megaflow hit.
    assert_eq!((s.exact_hits, s.megaflow_hits, s.installs), (2, 2, 1), "{s:?}");
    assert_eq!(p.tables()[1].entries()[0].packet_count(), 5);
    // A flow-mod makes every entry stale.
    p.flow_mod(&FlowMod { priority: 5, ..fm1 }).unwrap();
    p.process(1, &spec(0).build(), &mut |_: u32, _: Option<u32>, _: &[u8]| {});
    assert_eq!(p.cache_stats().installs, 2);
}

/// Rough throughput, for the lead (not a benchmark; never asserts a time):
/// `cargo test --release -p sluice-pipeline --test differential -- --ignored --nocapture`.
/// 1 rule (in_port → output) and 10k /32 dst-IP rules with traffic cycling
/// over 1k of them, Reference/Off vs Classifier/Off vs Classifier/On.
#[test]
#[ignore]
fn throughput() {
    use std::time::Instant;
    let base = FlowMod {
        command: fc::ADD,
        buffer_id: OFP_NO_BUFFER,
        out_port: port_no::ANY,
        out_group: group_id::ANY,
        instructions: vec![Instruction::ApplyActions(vec![Action::Output { port: 2, max_len: 0 }])],
        ..FlowMod::default()
    };
    let frame_to = |dst: u32| {
        let mut f = PacketSpec {
            dst: 1,
            src: 2,
            vlan: None,
            inner_vlan: None,
            l3: L3::Udp,
            ip_src: 0,
            ip_dst: 0,
            sport: 0,
            dport: 1,
            ttl: 64,
            dscp: 0,
            shape: Shape::default(),
        }
        .build();
        f[30..34].copy_from_slice(&dst.to_be_bytes());
        f
    };
    for rules in [1usize, 10_000] {
        let frames: Vec<Vec<u8>> =
            (0..1000u32).map(|i| frame_to(0x0a00_0000 + i % rules as u32)).collect();
        for (d, c) in [
            (Datapath::Reference, CacheMode::Off),
            (Datapath::Classifier, CacheMode::Off),
            (Datapath::Classifier, CacheMode::On),
        ] {
            let mut p = Pipeline::new(Config { datapath: d, cache: c, ..Config::default() });
            for n in [1, 2] {
                p.ports_mut().add(Port { port_no: n, name: format!("p{n}"), ..Port::default() }, 0);
            }
            if rules == 1 {
                let m = Match { oxms: vec![oxm(FieldId::InPort, 1, None)] };
                p.flow_mod(&FlowMod { priority: 1, r#match: m, ..base.clone() }).unwrap();
            } else {
                for i in 0..rules as u32 {
                    let m = Match {
                        oxms: vec![
                            oxm(FieldId::EthType, 0x0800, None),
                            oxm(FieldId::Ipv4Dst, (0x0a00_0000 + i).into(), None),
                        ],
                    };
                    p.flow_mod(&FlowMod { priority: 1, r#match: m, ..base.clone() }).unwrap();
                }
            }
            let mut n = 0u64;
            let mut sink = |_: u32, _: Option<u32>, _: &[u8]| n += 1;
            let budget = if d == Datapath::Reference && rules > 1 { 20_000 } else { 1_000_000 };
            let t0 = Instant::now();
            for i in 0..budget {
                p.process(1, &frames[i % frames.len()], &mut sink);
            }
            let dt = t0.elapsed().as_secs_f64();
            assert_eq!(n, budget as u64);
            println!(
                "rules={rules:6} {d:?}/{c:?}: {:.2} Mpps ({:.0} ns/pkt)",
                budget as f64 / dt / 1e6,
                dt * 1e9 / budget as f64
            );
        }
    }
}

/// The compiled datapath really runs compiled code: small tables get
/// straight-line code, per-port variants when entries match on in_port,
/// large ones hash probes, too many masks the index; background builds
/// arrive without anyone waiting.
#[test]
fn compiled_tables_are_used() {
    let mut p = switch(Datapath::Compiled, CacheMode::Off, Jit::Straight);
    let mut sink = |_: u32, _: Option<u32>, _: &[u8]| {};
    // Ethernet + IPv4 + UDP, 60 bytes.
    let mut frame = vec![0u8; 60];
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    frame[14] = 0x45;
    frame[16..18].copy_from_slice(&46u16.to_be_bytes());
    frame[22..24].copy_from_slice(&[64, 17]);
    p.process(1, &frame, &mut sink);
    assert!(p.tables()[..usize::from(N_TABLES)].iter().all(|t| t.is_compiled()));
    let add = |p: &mut Pipeline, table_id: u8, priority: u16, oxms: Vec<Oxm>| {
        let fm = FlowMod {
            table_id,
            command: fc::ADD,
            priority,
            buffer_id: OFP_NO_BUFFER,
            out_port: port_no::ANY,
            out_group: group_id::ANY,
            r#match: Match { oxms },
            ..FlowMod::default()
        };
        p.flow_mod(&fm).unwrap();
    };
    for i in 0..=sluice_pipeline::table::COMPILE_MAX as u16 {
        let oxms = vec![
            oxm(FieldId::TcpDst, u128::from(i), None),
            oxm(FieldId::IpProto, 6, None),
            oxm(FieldId::EthType, 0x0800, None),
        ];
        add(&mut p, 0, 100 + i, oxms);
    }
    // Entries for two ingress ports: per-port variants pay.
    for i in 0..8u16 {
        let oxms = vec![
            oxm(FieldId::InPort, u128::from(1 + i % 2), None),
            oxm(FieldId::UdpDst, u128::from(i), None),
            oxm(FieldId::IpProto, 17, None),
            oxm(FieldId::EthType, 0x0800, None),
        ];
        add(&mut p, 2, 10 + i, oxms);
    }
    // 70 distinct masks over 70 entries: more than probes take.
    for i in 0..70u16 {
        let oxms = vec![
            oxm(FieldId::Ipv4Dst, 0, Some(u128::from(i) + 1)),
            oxm(FieldId::EthType, 0x0800, None),
        ];
        add(&mut p, 3, 10 + i, oxms);
    }
    p.process(1, &frame, &mut sink);
    let kinds: Vec<_> = p.tables()[..4].iter().map(|t| t.code_kind()).collect();
    assert_eq!(
        kinds[0],
        Some("probe"),
        "{} entries: over the straight-line limit",
        p.tables()[0].len()
    );
    assert_eq!(kinds[1], Some("straight"));
    assert_eq!(kinds[2], Some("per-port"));
    assert_eq!(kinds[3], None, "too many masks for probes: the index serves");

    // Background: the code comes later, the answer is the same meanwhile.
    let mut b = Pipeline::new(Config {
        n_tables: 2,
        datapath: Datapath::Compiled,
        jit: JitOptions { background: true, ..JitOptions::default() },
        compiler: Some(common::compiler()),
        ..Config::default()
    });
    for i in 0..100u16 {
        add(
            &mut b,
            0,
            100 + i,
            vec![
                oxm(FieldId::UdpDst, u128::from(i), None),
                oxm(FieldId::IpProto, 17, None),
                oxm(FieldId::EthType, 0x0800, None),
            ],
        );
    }
    assert!(
        common::wait_for_code(&mut b, std::time::Duration::from_secs(30)),
        "background build finished"
    );
    b.process(1, &frame, &mut sink);
    assert_eq!(b.tables()[0].code_kind(), Some("probe"));
}
