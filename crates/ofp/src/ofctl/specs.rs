//! Whole flow, group and meter specifications in ovs-ofctl syntax.

use super::actions::{parse_action_list, parse_instructions_at, ActionContext};
use super::fields::{canonical_name, field_by_name, parse_port, parse_value};
use super::lex::{parse_uint, quoted_len, split_items, Tok};
use super::{TextError, TextResult};
use crate::consts::{group_id, port_no, OFPVID_NONE, OFPVID_PRESENT};
use crate::group::{Bucket, GroupType};
use crate::instruction::Instruction;
use crate::meter::{flags as meter_flags, MeterBand};
use crate::oxm::{FieldBytes, FieldId, Match, Oxm, Prereq};
use crate::pof::PofMatch;

/// What a flow specification is for; it decides which keys are allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Usage {
    /// `add-flow`: actions required, no cookie mask, no out_port.
    Add,
    /// `mod-flows`: actions required.
    Modify,
    /// `del-flows`, `dump-flows`: no actions.
    Delete,
}

/// `OFPFF_*` flow-mod flags as the text names them.
const FLOW_FLAGS: &[(&str, u16)] = &[
    ("send_flow_rem", 1 << 0),
    ("check_overlap", 1 << 1),
    ("reset_counts", 1 << 2),
    ("no_packet_counts", 1 << 3),
    ("no_byte_counts", 1 << 4),
];

/// A parsed flow: everything a FLOW_MOD (or flow-stats request) needs
/// except the command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    /// `None` if not given (0 for add, all tables for delete/dump).
    pub table_id: Option<u8>,
    /// `None` if not given (ovs-ofctl's default is 32768).
    pub priority: Option<u16>,
    pub cookie: u64,
    pub cookie_mask: u64,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub flags: u16,
    pub out_port: u32,
    pub out_group: u32,
    pub r#match: Match,
    pub instructions: Vec<Instruction>,
}

impl FlowSpec {
    /// ovs-ofctl's default priority.
    pub const DEFAULT_PRIORITY: u16 = 0x8000;
}

/// Moves each field after the fields its prerequisites name, keeping the
/// written order otherwise: Open vSwitch checks prerequisites field by
/// field as it reads a match (OFPBMC_BAD_PREREQ for `nd_target` before
/// `icmpv6_type`), and `icmp_type`/`tp_src` are resolved last here.
fn prereqs_first(oxms: &mut Vec<Oxm>) {
    let needs = |o: &Oxm| -> Vec<FieldId> {
        let Oxm::Basic { field, .. } = o else { return Vec::new() };
        field
            .prereqs()
            .iter()
            .map(|p| match p {
                Prereq::Exact(g, _) | Prereq::Present(g) => *g,
                Prereq::VlanTagged => FieldId::VlanVid,
            })
            .collect()
    };
    // A stable topological sort: take the first field whose prerequisite
    // fields are all taken (or absent); the graph is acyclic.
    let mut rest = std::mem::take(oxms);
    while !rest.is_empty() {
        let ready =
            |o: &Oxm| needs(o).iter().all(|g| !rest.iter().any(|r| r.field_id() == Some(*g)));
        let i = rest.iter().position(ready).unwrap_or(0);
        oxms.push(rest.remove(i));
    }
}

/// Shorthand keywords: (name, eth_type, ip_proto).
const SHORTHANDS: &[(&str, u16, Option<u8>)] = &[
    ("ip", 0x0800, None),
    ("ipv6", 0x86dd, None),
    ("icmp", 0x0800, Some(1)),
    ("icmp6", 0x86dd, Some(58)),
    ("tcp", 0x0800, Some(6)),
    ("tcp6", 0x86dd, Some(6)),
    ("udp", 0x0800, Some(17)),
    ("udp6", 0x86dd, Some(17)),
    ("sctp", 0x0800, Some(132)),
    ("sctp6", 0x86dd, Some(132)),
    ("arp", 0x0806, None),
    ("rarp", 0x8035, None),
    ("mpls", 0x8847, None),
    ("mplsm", 0x8848, None),
    ("pbb", 0x88e7, None),
];

struct MatchBuilder<'a> {
    oxms: Vec<(Oxm, Tok<'a>)>,
    /// `tp_src`/`tp_dst` wait until the IP protocol is known.
    deferred_tp: Vec<(bool, Tok<'a>, Tok<'a>)>,
    /// `icmp_type`/`icmp_code` (true = type) wait too: in an IPv6 flow
    /// ovs-ofctl reads them as the ICMPv6 fields.
    deferred_icmp: Vec<(bool, Tok<'a>, Tok<'a>)>,
}

impl<'a> MatchBuilder<'a> {
    fn push(
        &mut self,
        at: Tok<'a>,
        field: FieldId,
        value: FieldBytes,
        mask: Option<FieldBytes>,
    ) -> TextResult<()> {
        if let Some((_, prev)) =
            self.oxms.iter().find(|(o, _)| matches!(o, Oxm::Basic { field: f, .. } if *f == field))
        {
            return Err(at.err(format!(
                "field {} given twice (first at byte {})",
                canonical_name(field),
                prev.start
            )));
        }
        self.oxms.push((Oxm::Basic { field, value, mask }, at));
        Ok(())
    }

    /// A POF match field; the same field (base, offset and length) twice
    /// is an error naming the second.
    fn push_pof(&mut self, at: Tok<'a>, m: PofMatch) -> TextResult<()> {
        let same = |o: &Oxm| matches!(PofMatch::from_oxm(o), Some(Ok(p)) if p.field == m.field);
        if let Some((_, prev)) = self.oxms.iter().find(|(o, _)| same(o)) {
            return Err(at.err(format!(
                "POF field `{}` given twice (first at byte {})",
                at.text.split('=').next().unwrap_or(at.text),
                prev.start
            )));
        }
        self.oxms.push((m.to_oxm(), at));
        Ok(())
    }

    /// A `filter_prog` or `pcap_filter` field (an experimenter OXM of
    /// sluice's); a flow has at most one of each, a second is an error
    /// naming it.
    fn push_exp(&mut self, at: Tok<'a>, o: Oxm) -> TextResult<()> {
        let key = |o: &Oxm| match o {
            Oxm::Experimenter { experimenter, field, .. } => Some((*experimenter, *field)),
            _ => None,
        };
        if let Some((_, prev)) =
            self.oxms.iter().find(|(p, _)| key(p).is_some() && key(p) == key(&o))
        {
            return Err(at.err(format!(
                "field {} given twice (first at byte {})",
                at.text.split('=').next().unwrap_or(at.text),
                prev.start
            )));
        }
        self.oxms.push((o, at));
        Ok(())
    }

    fn exact(&self, field: FieldId) -> Option<u128> {
        self.oxms.iter().find_map(|(o, _)| match o {
            Oxm::Basic { field: f, value, mask: None } if *f == field => Some(value.to_u128()),
            _ => None,
        })
    }

    fn finish(mut self) -> TextResult<Match> {
        let v6 = self.exact(FieldId::EthType) == Some(0x86dd)
            || self.exact(FieldId::IpProto) == Some(58);
        for (ty, at, v) in std::mem::take(&mut self.deferred_icmp) {
            let field = match (v6, ty) {
                (false, true) => FieldId::Icmpv4Type,
                (false, false) => FieldId::Icmpv4Code,
                (true, true) => FieldId::Icmpv6Type,
                (true, false) => FieldId::Icmpv6Code,
            };
            let (value, mask) = parse_value(field, v)?;
            self.push(at, field, value, mask)?;
        }
        for (src, at, v) in std::mem::take(&mut self.deferred_tp) {
            let proto = self.exact(FieldId::IpProto);
            let field = match (proto, src) {
                (Some(6), true) => FieldId::TcpSrc,
                (Some(6), false) => FieldId::TcpDst,
                (Some(17), true) => FieldId::UdpSrc,
                (Some(17), false) => FieldId::UdpDst,
                (Some(132), true) => FieldId::SctpSrc,
                (Some(132), false) => FieldId::SctpDst,
                _ => {
                    return Err(at.err(format!("`{}` needs tcp, udp or sctp in the match", at.text)))
                }
            };
            let (value, mask) = parse_value(field, v)?;
            self.push(at, field, value, mask)?;
        }
        let mut oxms: Vec<Oxm> = self.oxms.into_iter().map(|(o, _)| o).collect();
        prereqs_first(&mut oxms);
        Ok(Match { oxms })
    }
}

/// Parse a flow in ovs-ofctl syntax.
pub fn parse_flow(text: &str, usage: Usage) -> TextResult<FlowSpec> {
    let whole = Tok { text, start: 0 };
    // `actions=` takes the rest of the line.
    let (head, actions) = match find_key(text, "actions=") {
        Some(i) => (whole.slice(0, i), Some(whole.slice(i + "actions=".len(), text.len()))),
        None => (whole, None),
    };
    let mut spec = FlowSpec {
        table_id: None,
        priority: None,
        cookie: 0,
        cookie_mask: 0,
        idle_timeout: 0,
        hard_timeout: 0,
        flags: 0,
        out_port: port_no::ANY,
        out_group: group_id::ANY,
        r#match: Match::default(),
        instructions: Vec::new(),
    };
    let mut mb =
        MatchBuilder { oxms: Vec::new(), deferred_tp: Vec::new(), deferred_icmp: Vec::new() };
    for item in split_items(head)? {
        let (k, v) = item.split_kv(&['=']);
        if let Some(&(_, ty, proto)) = SHORTHANDS.iter().find(|(n, _, _)| *n == item.text) {
            mb.push(item, FieldId::EthType, FieldBytes::from_u128(ty as u128, 2), None)?;
            if let Some(p) = proto {
                mb.push(item, FieldId::IpProto, FieldBytes::from_u128(p as u128, 1), None)?;
            }
            continue;
        }
        if let Some(&(_, bit)) = FLOW_FLAGS.iter().find(|(n, _)| *n == item.text) {
            spec.flags |= bit;
            continue;
        }
        if item.text.starts_with("pof(") {
            mb.push_pof(item, super::pof::parse_match_item(item)?)?;
            continue;
        }
        let Some(v) = v else {
            return Err(item.err(format!("unknown keyword `{}`", item.text)));
        };
        match k.text {
            "table" => spec.table_id = Some(parse_uint(v, 254, "table")? as u8),
            "priority" => spec.priority = Some(parse_uint(v, u16::MAX as u128, "priority")? as u16),
            "idle_timeout" => {
                spec.idle_timeout = parse_uint(v, u16::MAX as u128, "idle_timeout")? as u16
            }
            "hard_timeout" => {
                spec.hard_timeout = parse_uint(v, u16::MAX as u128, "hard_timeout")? as u16
            }
            "cookie" => {
                let (ct, mt) = v.split_kv(&['/']);
                spec.cookie = parse_uint(ct, u64::MAX as u128, "cookie")? as u64;
                if let Some(mt) = mt {
                    if usage == Usage::Add {
                        return Err(mt.err(
                            "a cookie mask is only allowed when modifying or deleting flows",
                        ));
                    }
                    // ovs-ofctl takes -1 for the all-ones mask.
                    spec.cookie_mask = if mt.text == "-1" {
                        u64::MAX
                    } else {
                        parse_uint(mt, u64::MAX as u128, "cookie mask")? as u64
                    };
                }
            }
            "out_port" => spec.out_port = parse_port(v)?,
            "out_group" => {
                spec.out_group = if v.text.eq_ignore_ascii_case("any") {
                    group_id::ANY
                } else {
                    parse_uint(v, u32::MAX as u128, "out_group")? as u32
                }
            }
            "dl_vlan" => {
                let vid = parse_uint(v, 0xffff, "dl_vlan")? as u16;
                let oxm = match vid {
                    0xffff => OFPVID_NONE,
                    0..=0xfff => vid | OFPVID_PRESENT,
                    _ => return Err(v.err("dl_vlan must be 0..4095, or 0xffff for untagged")),
                };
                mb.push(item, FieldId::VlanVid, FieldBytes::from_u128(oxm as u128, 2), None)?;
            }
            // ovs-ofctl's 802.1Q TCI, as it prints VLAN matches it cannot
            // write as dl_vlan/dl_vlan_pcp: the VID and CFI (=
            // OFPVID_PRESENT) bits become vlan_vid, an exact PCP vlan_pcp.
            "vlan_tci" => {
                let (vt, mt) = v.split_kv(&['/']);
                let tci = parse_uint(vt, 0xffff, "vlan_tci")? as u16;
                let mask = match mt {
                    Some(mt) => parse_uint(mt, 0xffff, "vlan_tci mask")? as u16,
                    None => 0xffff,
                };
                let (vid_mask, pcp_mask) = (mask & 0x1fff, mask & 0xe000);
                if pcp_mask != 0 && pcp_mask != 0xe000 {
                    return Err(v.err("vlan_tci: OpenFlow 1.3 matches the PCP bits all or none"));
                }
                if vid_mask != 0 {
                    let m = (vid_mask != 0x1fff).then(|| FieldBytes::from_u128(vid_mask.into(), 2));
                    let val = FieldBytes::from_u128((tci & vid_mask).into(), 2);
                    mb.push(item, FieldId::VlanVid, val, m)?;
                }
                // A PCP without a tag cannot match (Open vSwitch drops it too).
                if pcp_mask != 0 && !(tci & OFPVID_PRESENT == 0 && vid_mask & OFPVID_PRESENT != 0) {
                    let pcp = FieldBytes::from_u128((tci >> 13).into(), 1);
                    mb.push(item, FieldId::VlanPcp, pcp, None)?;
                }
            }
            "nw_tos" => {
                let tos = parse_uint(v, 255, "nw_tos")? as u8;
                if tos & 3 != 0 {
                    return Err(v.err("nw_tos: the two low (ECN) bits must be zero"));
                }
                mb.push(item, FieldId::IpDscp, FieldBytes::from_u128((tos >> 2) as u128, 1), None)?;
            }
            "icmp_type" => mb.deferred_icmp.push((true, item, v)),
            "icmp_code" => mb.deferred_icmp.push((false, item, v)),
            "tp_src" => mb.deferred_tp.push((true, item, v)),
            "tp_dst" => mb.deferred_tp.push((false, item, v)),
            key if super::filterprog::is_match_key(key) => {
                mb.push_exp(item, super::filterprog::parse_match_item(item)?)?
            }
            name => {
                let Some(field) = field_by_name(name) else {
                    return Err(k.err(format!("unknown field `{name}`")));
                };
                let (value, mask) = parse_value(field, v)?;
                mb.push(item, field, value, mask)?;
            }
        }
    }
    spec.r#match = mb.finish()?;
    if usage == Usage::Add && (spec.out_port != port_no::ANY || spec.out_group != group_id::ANY) {
        return Err(
            whole.err("out_port and out_group are only allowed when modifying or deleting flows")
        );
    }
    let ctx = ActionContext {
        ip_proto: spec.r#match.oxms.iter().find_map(|o| match o {
            Oxm::Basic { field: FieldId::IpProto, value, mask: None } => {
                Some(value.to_u128() as u8)
            }
            _ => None,
        }),
        vlan_tagged: Some(spec.r#match.oxms.iter().any(|o| match o {
            Oxm::Basic { field: FieldId::VlanVid, value, mask } => {
                let m = mask.map_or(0xffff, |m| m.to_u128() as u16);
                value.to_u128() as u16 & m & OFPVID_PRESENT != 0
            }
            Oxm::Basic { field: FieldId::VlanPcp, .. } => true,
            _ => false,
        })),
    };
    match (usage, actions) {
        (Usage::Delete, Some(a)) => {
            return Err(a.err("actions are not allowed when deleting flows"))
        }
        (Usage::Delete, None) => {}
        (_, None) => {
            return Err(whole.err("the flow needs `actions=...` (use `actions=drop` to drop)"))
        }
        (_, Some(a)) => spec.instructions = parse_instructions_at(a, ctx)?,
    }
    Ok(spec)
}

/// Byte offset of `key` at the start of a top-level item (not inside
/// parentheses or a double-quoted string; an unclosed string hides the
/// rest, and `split_items` reports it).
fn find_key(text: &str, key: &str) -> Option<usize> {
    let mut depth = 0usize;
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += quoted_len(&text[i..])?;
                continue;
            }
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        let at_item_start = i == 0 || matches!(b[i - 1], b',' | b' ' | b'\t');
        if depth == 0 && at_item_start && text[i..].starts_with(key) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// A parsed group (`add-group`, `mod-group`, `del-groups`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSpec {
    pub group_id: u32,
    /// `None` when not given (allowed only for delete).
    pub group_type: Option<GroupType>,
    pub buckets: Vec<Bucket>,
}

/// Parse a group in ovs-ofctl syntax.
pub fn parse_group(text: &str) -> TextResult<GroupSpec> {
    let whole = Tok { text, start: 0 };
    let mut id = None;
    let mut ty = None;
    let mut buckets: Vec<Bucket> = Vec::new();
    // Inside a bucket after `actions=`, every item is an action.
    let mut in_actions = false;
    for item in split_items(whole)? {
        let (k, v) = item.split_kv(&['=', ':']);
        if k.text == "bucket" && item.text.as_bytes().get(6) == Some(&b'=') {
            buckets.push(Bucket {
                weight: 0,
                watch_port: port_no::ANY,
                watch_group: group_id::ANY,
                actions: Vec::new(),
            });
            in_actions = false;
            let Some(v) = v else { continue };
            if v.text.is_empty() {
                continue;
            }
            // The first bucket item follows `bucket=` directly.
            in_actions = bucket_item(buckets.last_mut().expect("pushed"), v, in_actions)?;
            continue;
        }
        if let Some(b) = buckets.last_mut() {
            in_actions = bucket_item(b, item, in_actions)?;
            continue;
        }
        let v = v.ok_or_else(|| item.err(format!("unknown keyword `{}`", item.text)))?;
        match k.text {
            "group_id" => {
                id = Some(if v.text.eq_ignore_ascii_case("all") {
                    group_id::ALL
                } else {
                    parse_uint(v, u32::MAX as u128, "group_id")? as u32
                })
            }
            "type" => {
                ty = Some(match v.text {
                    "all" => GroupType::All,
                    "select" => GroupType::Select,
                    "indirect" => GroupType::Indirect,
                    "ff" | "fast_failover" => GroupType::FastFailover,
                    other => return Err(v.err(format!("unknown group type `{other}`"))),
                })
            }
            other => return Err(k.err(format!("unknown group keyword `{other}`"))),
        }
    }
    let group_id = id.ok_or_else(|| whole.err("the group needs `group_id=N`"))?;
    if ty == Some(GroupType::Select) {
        for b in &mut buckets {
            if b.weight == 0 {
                b.weight = 1;
            }
        }
    }
    Ok(GroupSpec { group_id, group_type: ty, buckets })
}

/// Apply one bucket item; returns whether later items are actions.
fn bucket_item<'a>(b: &mut Bucket, item: Tok<'a>, in_actions: bool) -> TextResult<bool> {
    let (k, v) = item.split_kv(&['=', ':']);
    let param =
        |v: Option<Tok<'a>>| v.ok_or_else(|| item.err(format!("`{}` needs a value", k.text)));
    if !in_actions {
        match k.text {
            "weight" => {
                b.weight = parse_uint(param(v)?, u16::MAX as u128, "weight")? as u16;
                return Ok(false);
            }
            "watch_port" => {
                b.watch_port = parse_port(param(v)?)?;
                return Ok(false);
            }
            "watch_group" => {
                b.watch_group = parse_uint(param(v)?, u32::MAX as u128, "watch_group")? as u32;
                return Ok(false);
            }
            "actions" if item.text.as_bytes().get(7) == Some(&b'=') => {
                let v = param(v)?;
                b.actions.extend(parse_action_list(v, ActionContext::default())?);
                return Ok(true);
            }
            _ => {}
        }
    }
    b.actions.extend(parse_action_list(item, ActionContext::default())?);
    Ok(true)
}

/// A parsed meter (`add-meter`, `mod-meter`, `del-meter`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeterSpec {
    pub meter_id: u32,
    pub flags: u16,
    pub bands: Vec<MeterBand>,
}

/// Parse a meter in ovs-ofctl syntax.
pub fn parse_meter(text: &str) -> TextResult<MeterSpec> {
    let whole = Tok { text, start: 0 };
    let mut id = None;
    let mut flags = 0u16;
    // Bands under construction: (type token, rate, burst, prec_level).
    struct B<'a> {
        ty: Tok<'a>,
        rate: Option<u32>,
        burst: u32,
        prec: u8,
    }
    let mut bands: Vec<B<'_>> = Vec::new();
    let mut seen_band = false;
    for item in split_items(whole)? {
        let (k, v) = item.split_kv(&['=', ':']);
        match (k.text, v) {
            ("kbps", None) => flags |= meter_flags::KBPS,
            ("pktps", None) => flags |= meter_flags::PKTPS,
            ("burst", None) => flags |= meter_flags::BURST,
            ("stats", None) => flags |= meter_flags::STATS,
            ("meter", Some(v)) => {
                id = Some(if v.text.eq_ignore_ascii_case("all") {
                    crate::consts::meter_id::ALL
                } else {
                    parse_uint(v, u32::MAX as u128, "meter")? as u32
                })
            }
            // As ovs-ofctl: `band=` once, then each `type=` starts a band.
            ("band", Some(v)) => {
                if seen_band {
                    return Err(item.err("`band=` may appear once; each `type=` starts a new band"));
                }
                seen_band = true;
                let (tk, tv) = v.split_kv(&['=', ':']);
                match (tk.text, tv) {
                    ("type", Some(tv)) => bands.push(B { ty: tv, rate: None, burst: 0, prec: 0 }),
                    _ => return Err(v.err("expected `band=type=drop|dscp_remark`")),
                }
            }
            ("type", Some(tv)) if seen_band => {
                bands.push(B { ty: tv, rate: None, burst: 0, prec: 0 })
            }
            ("rate" | "burst_size" | "prec_level", Some(v)) => {
                let Some(b) = bands.last_mut() else {
                    return Err(item.err(format!("`{}` must follow `band=type=...`", k.text)));
                };
                match k.text {
                    "rate" => b.rate = Some(parse_uint(v, u32::MAX as u128, "rate")? as u32),
                    "burst_size" => b.burst = parse_uint(v, u32::MAX as u128, "burst_size")? as u32,
                    _ => b.prec = parse_uint(v, u8::MAX as u128, "prec_level")? as u8,
                }
            }
            _ => return Err(item.err(format!("unknown meter keyword `{}`", item.text))),
        }
    }
    let meter_id = id.ok_or_else(|| whole.err("the meter needs `meter=N`"))?;
    let mut out = Vec::new();
    for b in bands {
        let rate = b.rate.ok_or_else(|| b.ty.err("this band needs `rate=N`"))?;
        out.push(match b.ty.text {
            "drop" => MeterBand::Drop { rate, burst_size: b.burst },
            "dscp_remark" => {
                MeterBand::DscpRemark { rate, burst_size: b.burst, prec_level: b.prec }
            }
            other => {
                return Err(TextError::new(
                    b.ty.start,
                    b.ty.end(),
                    format!("unknown band type `{other}`"),
                ))
            }
        });
    }
    Ok(MeterSpec { meter_id, flags, bands: out })
}

impl FlowSpec {
    /// The FLOW_MOD this spec describes with `command`
    /// ([`crate::message::flow_mod_command`]). Defaults as ovs-ofctl: table
    /// 0 (all tables for deletes), priority 32768, no buffer.
    pub fn to_flow_mod(&self, command: u8) -> crate::message::FlowMod {
        use crate::message::flow_mod_command as c;
        let deleting = matches!(command, c::DELETE | c::DELETE_STRICT);
        crate::message::FlowMod {
            cookie: self.cookie,
            cookie_mask: self.cookie_mask,
            table_id: self.table_id.unwrap_or(if deleting {
                crate::consts::table_id::ALL
            } else {
                0
            }),
            command,
            idle_timeout: self.idle_timeout,
            hard_timeout: self.hard_timeout,
            priority: self.priority.unwrap_or(Self::DEFAULT_PRIORITY),
            buffer_id: crate::consts::OFP_NO_BUFFER,
            out_port: self.out_port,
            out_group: self.out_group,
            flags: self.flags,
            r#match: self.r#match.clone(),
            instructions: self.instructions.clone(),
        }
    }
}

impl GroupSpec {
    /// The GROUP_MOD this spec describes with `command`
    /// ([`crate::message::group_mod_command`]); a missing type is ALL.
    pub fn to_group_mod(&self, command: u16) -> crate::message::GroupMod {
        crate::message::GroupMod {
            command,
            group_type: self.group_type.unwrap_or(GroupType::All),
            group_id: self.group_id,
            buckets: self.buckets.clone(),
        }
    }
}

impl MeterSpec {
    /// The METER_MOD this spec describes with `command`
    /// ([`crate::message::meter_mod_command`]).
    pub fn to_meter_mod(&self, command: u16) -> crate::message::MeterMod {
        crate::message::MeterMod {
            command,
            flags: self.flags,
            meter_id: self.meter_id,
            bands: self.bands.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Action;

    fn basic(field: FieldId, v: u128, m: Option<u128>) -> Oxm {
        Oxm::Basic {
            field,
            value: FieldBytes::from_u128(v, field.len()),
            mask: m.map(|m| FieldBytes::from_u128(m, field.len())),
        }
    }

    #[test]
    fn prerequisites_come_first_on_the_wire() {
        // icmp_type is resolved last; nd_target needs it before it.
        let f = parse_flow(
            "icmp6,nd_target=fe80::1,nd_sll=00:11:22:33:44:55,icmp_type=135",
            Usage::Delete,
        )
        .unwrap();
        let order: Vec<_> = f.r#match.oxms.iter().filter_map(Oxm::field_id).collect();
        use FieldId::*;
        assert_eq!(order, [EthType, IpProto, Icmpv6Type, Ipv6NdTarget, Ipv6NdSll]);
        // Otherwise the written order stays.
        let f = parse_flow("in_port=1,ip,nw_dst=10.0.0.1,dl_vlan=3,dl_vlan_pcp=1", Usage::Delete)
            .unwrap();
        let order: Vec<_> = f.r#match.oxms.iter().filter_map(Oxm::field_id).collect();
        assert_eq!(order, [InPort, EthType, Ipv4Dst, VlanVid, VlanPcp]);
    }

    #[test]
    fn mod_vlan_pushes_a_tag_on_untagged_flows_as_ovs_ofctl() {
        let acts = |text: &str| match parse_flow(text, Usage::Add).unwrap().instructions.as_slice()
        {
            [Instruction::ApplyActions(a)] => a.clone(),
            other => panic!("{other:?}"),
        };
        let vid5 = Action::SetField(Oxm::exact(FieldId::VlanVid, 0x1005));
        let out = Action::Output { port: 1, max_len: 0 };
        assert_eq!(
            acts("actions=mod_vlan_vid:5,output:1"),
            [Action::PushVlan(0x8100), vid5.clone(), out.clone()]
        );
        assert_eq!(acts("dl_vlan=3,actions=mod_vlan_vid:5,output:1"), [vid5.clone(), out.clone()]);
        assert_eq!(
            acts("actions=push_vlan:0x88a8,mod_vlan_vid:5,output:1"),
            [Action::PushVlan(0x88a8), vid5.clone(), out.clone()]
        );
        assert_eq!(
            acts("dl_vlan=3,actions=strip_vlan,mod_vlan_pcp:2,output:1"),
            [
                Action::PopVlan,
                Action::PushVlan(0x8100),
                Action::SetField(Oxm::exact(FieldId::VlanPcp, 2)),
                out
            ]
        );
    }

    #[test]
    fn a_typical_flow() {
        let f = parse_flow(
            "table=1,priority=100,tcp,in_port=1,nw_src=10.0.0.0/8,tp_dst=80,idle_timeout=5,send_flow_rem,actions=set_field:10.1.1.1->ip_dst,output:2",
            Usage::Add,
        )
        .unwrap();
        assert_eq!(f.table_id, Some(1));
        assert_eq!(f.priority, Some(100));
        assert_eq!(f.idle_timeout, 5);
        assert_eq!(f.flags, 1);
        assert_eq!(
            f.r#match.oxms,
            vec![
                basic(FieldId::EthType, 0x0800, None),
                basic(FieldId::IpProto, 6, None),
                basic(FieldId::InPort, 1, None),
                basic(FieldId::Ipv4Src, 0x0a00_0000, Some(0xff00_0000)),
                basic(FieldId::TcpDst, 80, None),
            ]
        );
        assert_eq!(
            f.instructions,
            vec![Instruction::ApplyActions(vec![
                Action::SetField(basic(FieldId::Ipv4Dst, 0x0a01_0101, None)),
                Action::Output { port: 2, max_len: 0 },
            ])]
        );
    }

    #[test]
    fn flow_errors() {
        let e = parse_flow("tcp,nosuch=1,actions=drop", Usage::Add).unwrap_err();
        assert_eq!(&"tcp,nosuch=1,actions=drop"[e.start..e.end], "nosuch");
        assert!(parse_flow("tp_dst=80,actions=drop", Usage::Add).is_err());
        assert!(parse_flow("in_port=1,in_port=2,actions=drop", Usage::Add).is_err());
        assert!(parse_flow("in_port=1", Usage::Add).is_err());
        assert!(parse_flow("in_port=1,actions=drop", Usage::Delete).is_err());
        assert!(parse_flow("cookie=1/1,actions=drop", Usage::Add).is_err());
        assert!(parse_flow("cookie=1/1", Usage::Delete).is_ok());
        assert!(parse_flow("table=255,actions=drop", Usage::Add).is_err());
        assert!(parse_flow("bogus,actions=drop", Usage::Add).is_err());
    }

    #[test]
    fn icmp_type_follows_the_ip_version_like_ovs_ofctl() {
        let f = parse_flow("icmp6,icmp_type=135,icmp_code=0,actions=drop", Usage::Add).unwrap();
        assert_eq!(f.r#match.oxms[2], basic(FieldId::Icmpv6Type, 135, None));
        assert_eq!(f.r#match.oxms[3], basic(FieldId::Icmpv6Code, 0, None));
        let f = parse_flow("icmp_type=8,icmp,actions=drop", Usage::Add).unwrap();
        assert_eq!(f.r#match.oxms[2], basic(FieldId::Icmpv4Type, 8, None));
    }

    #[test]
    fn vlan_and_tos_shorthands() {
        let f = parse_flow("dl_vlan=10,ip,nw_tos=16,actions=drop", Usage::Add).unwrap();
        assert_eq!(f.r#match.oxms[0], basic(FieldId::VlanVid, 0x100a, None));
        assert_eq!(f.r#match.oxms[2], basic(FieldId::IpDscp, 4, None));
        let f = parse_flow("dl_vlan=0xffff,actions=drop", Usage::Add).unwrap();
        assert_eq!(f.r#match.oxms[0], basic(FieldId::VlanVid, 0, None));
    }

    #[test]
    fn groups() {
        let g = parse_group(
            "group_id=5,type=select,bucket=weight:30,actions=output:1,bucket=weight=70,watch_port=2,actions=set_queue:1,output:2",
        )
        .unwrap();
        assert_eq!(g.group_id, 5);
        assert_eq!(g.group_type, Some(GroupType::Select));
        assert_eq!(g.buckets.len(), 2);
        assert_eq!(g.buckets[0].weight, 30);
        assert_eq!(g.buckets[1].watch_port, 2);
        assert_eq!(
            g.buckets[1].actions,
            vec![Action::SetQueue(1), Action::Output { port: 2, max_len: 0 }]
        );
        let g = parse_group("group_id=1,type=all,bucket=output:1,bucket=output:2").unwrap();
        assert_eq!(g.buckets[1].actions, vec![Action::Output { port: 2, max_len: 0 }]);
        assert_eq!(g.buckets[0].weight, 0);
        let g = parse_group("group_id=2,type=select,bucket=output:1").unwrap();
        assert_eq!(g.buckets[0].weight, 1);
        assert!(parse_group("group_id=1,type=weird").is_err());
        assert!(parse_group("type=all").is_err());
    }

    #[test]
    fn meters() {
        let m = parse_meter("meter=3,kbps,burst,band=type=drop,rate=1000,burst_size=100,type=dscp_remark,rate=500,prec_level=1")
            .unwrap();
        assert_eq!(m.meter_id, 3);
        assert_eq!(m.flags, meter_flags::KBPS | meter_flags::BURST);
        assert_eq!(
            m.bands,
            vec![
                MeterBand::Drop { rate: 1000, burst_size: 100 },
                MeterBand::DscpRemark { rate: 500, burst_size: 0, prec_level: 1 },
            ]
        );
        assert!(parse_meter("meter=1,band=type=drop").is_err());
        assert!(parse_meter("meter=1,rate=5").is_err());
        assert!(parse_meter("meter=1,band=type=foo,rate=1").is_err());
    }

    #[test]
    fn render_points_at_token() {
        let input = "tcp,nosuch=1,actions=drop";
        let e = parse_flow(input, Usage::Add).unwrap_err();
        assert_eq!(e.render(input).lines().last().unwrap(), "      ^^^^^^");
    }
}
