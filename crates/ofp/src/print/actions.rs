//! Actions, instructions, group buckets and meter bands in ovs-ofctl's
//! vocabulary (`output:2`, `set_field:10.1.1.1->ip_dst`, `meter:1`,
//! `write_actions(output:3)`, `bucket=weight:10,actions=output:1`,
//! `type=drop rate=1000 burst_size=100`). sluice's POF actions print in
//! the syntax [`crate::ofctl::pof`] reads (`pof_set(l3+64,8,0x40)`), its
//! `send_maps` action in the syntax [`crate::ofctl::filterprog`] reads
//! (`send_maps:7:conns`).

use super::fields::{hex_bytes, non_basic, pof_hex, pof_pos, port, set_field_name, value};
use crate::action::Action;
use crate::consts::{group_id, port_no};
use crate::fieldcopy::{FieldAction, Subfield};
use crate::filterprog::SendMaps;
use crate::group::{Bucket, GroupType};
use crate::instruction::Instruction;
use crate::meter::{flags as meter_flags, MeterBand};
use crate::oxm::Oxm;
use crate::pof::PofAction;

/// One action as one token (no commas outside parentheses).
pub fn action(a: &Action) -> String {
    match a {
        Action::Output { port: p, max_len } => match *p {
            port_no::CONTROLLER => format!("CONTROLLER:{max_len}"),
            port_no::IN_PORT
            | port_no::TABLE
            | port_no::NORMAL
            | port_no::FLOOD
            | port_no::ALL
            | port_no::LOCAL => port(*p),
            _ => format!("output:{}", port(*p)),
        },
        Action::CopyTtlOut => "copy_ttl_out".into(),
        Action::CopyTtlIn => "copy_ttl_in".into(),
        Action::SetMplsTtl(t) => format!("set_mpls_ttl({t})"),
        Action::DecMplsTtl => "dec_mpls_ttl".into(),
        Action::PushVlan(e) => format!("push_vlan:0x{e:04x}"),
        Action::PopVlan => "pop_vlan".into(),
        Action::PushMpls(e) => format!("push_mpls:0x{e:04x}"),
        Action::PopMpls(e) => format!("pop_mpls:0x{e:04x}"),
        Action::SetQueue(q) => format!("set_queue:{q}"),
        Action::Group(g) => format!("group:{g}"),
        Action::SetNwTtl(t) => format!("mod_nw_ttl:{t}"),
        Action::DecNwTtl => "dec_ttl".into(),
        Action::SetField(o) => match o {
            Oxm::Basic { field, value: v, mask } => {
                // set_field values are written raw (vlan_vid keeps its
                // OFPVID_PRESENT bit, ip_dscp is not shifted), as ovs-ofctl does.
                let val = match field {
                    crate::oxm::FieldId::VlanVid | crate::oxm::FieldId::IpDscp => {
                        v.to_u128().to_string()
                    }
                    f => value(*f, v, mask.as_ref()),
                };
                format!("set_field:{val}->{}", set_field_name(*field))
            }
            other => format!("set_field:{}", non_basic(other)),
        },
        Action::PushPbb(e) => format!("push_pbb:0x{e:04x}"),
        Action::PopPbb => "pop_pbb".into(),
        Action::Experimenter { experimenter, data } => {
            if let Some(Ok(p)) = PofAction::from_action(a) {
                return pof_action(&p);
            }
            if let Some(Ok(s)) = SendMaps::from_action(a) {
                return send_maps_action(&s);
            }
            if let Some(Ok(f)) = FieldAction::from_action(a) {
                return field_action(&f);
            }
            if let Some(t) = nx_output_trunc(*experimenter, data) {
                return t;
            }
            format!("experimenter(experimenter=0x{experimenter:08x},data={})", hex_bytes(data))
        }
    }
}

/// Nicira's `NXAST_OUTPUT_TRUNC` (subtype 39: a 16-bit port, a 32-bit
/// max_len), which Open vSwitch sends for ovs-ofctl's
/// `output(port=P,max_len=N)`; printed as ovs-ofctl prints it.
fn nx_output_trunc(experimenter: u32, data: &[u8]) -> Option<String> {
    if experimenter != 0x0000_2320 || data.len() != 8 || data[..2] != [0, 39] {
        return None;
    }
    let p16 = u16::from_be_bytes([data[2], data[3]]);
    // OpenFlow 1.0's 16-bit reserved ports (0xff00 and up) map onto 1.3's.
    let p = if p16 >= 0xff00 { 0xffff_0000 | u32::from(p16) } else { u32::from(p16) };
    let max_len = u32::from_be_bytes([data[4], data[5], data[6], data[7]]);
    Some(format!("output(port={},max_len={max_len})", port(p)))
}

/// A move or load as ovs-ofctl prints it: `move:SRC[..]->DST[..]` (an ONF
/// copy-field too), `load:VALUE->DST[..]` with the value in C's `%#x`
/// (`0` for zero); fields by NXM name where they have one.
pub fn field_action(a: &FieldAction) -> String {
    match a {
        FieldAction::Move { src, dst, .. } => format!("move:{}->{}", subfield(src), subfield(dst)),
        FieldAction::Load { dst, value } => {
            let v = if *value == 0 { "0".to_string() } else { format!("{value:#x}") };
            format!("load:{v}->{}", subfield(dst))
        }
    }
}

/// `NAME[]` for a whole field, `NAME[BIT]` for one bit, else
/// `NAME[FIRST..LAST]`.
pub fn subfield(s: &Subfield) -> String {
    let whole = s.ofs == 0 && s.field_id().is_some_and(|f| u32::from(s.n_bits) == f.bits());
    let name = s.field.name();
    match (whole, s.n_bits) {
        (true, _) => format!("{name}[]"),
        (false, 1) => format!("{name}[{}]", s.ofs),
        _ => format!("{name}[{}..{}]", s.ofs, u32::from(s.ofs) + u32::from(s.n_bits) - 1),
    }
}

/// A POF action in its canonical text: positions `N` or `base+N`, decimal
/// lengths, values, masks and inserted bytes in hex with the field's width
/// in digits, increments in decimal.
pub fn pof_action(a: &PofAction) -> String {
    let field = |f: &crate::pof::PofField| format!("{},{}", pof_pos(f.pos), f.bit_len);
    match a {
        PofAction::Set { field: f, value, mask } => match mask {
            None => format!("pof_set({},{})", field(f), pof_hex(*value, f.bit_len)),
            Some(m) => format!(
                "pof_set({},{}/{})",
                field(f),
                pof_hex(*value, f.bit_len),
                pof_hex(*m, f.bit_len)
            ),
        },
        PofAction::Modify { field: f, delta } => format!("pof_modify({},{delta})", field(f)),
        PofAction::Add { pos, bytes } => {
            format!("pof_add({},{},{})", pof_pos(*pos), 8 * bytes.len(), full_hex(bytes))
        }
        PofAction::Delete { pos, len_bits } => format!("pof_del({},{len_bits})", pof_pos(*pos)),
        PofAction::Checksum { field: f, start, calc_len_bits } => {
            format!("pof_checksum({},{},{calc_len_bits})", field(f), pof_pos(*start))
        }
        PofAction::WriteMetadata { meta_bit, from } => {
            format!("pof_write_metadata({meta_bit},{})", field(from))
        }
    }
}

/// `send_maps:ID:MAP[:MAP...]`, the id in decimal.
pub fn send_maps_action(s: &SendMaps) -> String {
    let mut out = format!("send_maps:{}", s.prog_id);
    for m in &s.maps {
        out.push(':');
        out.push_str(m);
    }
    out
}

/// Bytes as one hex number, two digits each (`0x0` for none).
fn full_hex(bytes: &[u8]) -> String {
    let mut s = String::from("0x");
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    if bytes.is_empty() {
        s.push('0');
    }
    s
}

/// An action list, comma-joined; `drop` for the empty list.
pub fn actions(list: &[Action]) -> String {
    if list.is_empty() {
        return "drop".into();
    }
    list.iter().map(action).collect::<Vec<_>>().join(",")
}

/// An instruction list in ovs-ofctl's form and order ([`Instruction::exec_rank`]):
/// apply-actions inline, the others as `meter:N`, `clear_actions`,
/// `write_actions(...)`, `write_metadata:V/M`, `goto_table:N`; `drop` if
/// nothing is done.
pub fn instructions(list: &[Instruction]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut sorted: Vec<&Instruction> = list.iter().collect();
    sorted.sort_by_key(|i| i.exec_rank());
    for i in sorted {
        match i {
            Instruction::Meter(m) => out.push(format!("meter:{m}")),
            Instruction::ApplyActions(a) => out.extend(a.iter().map(action)),
            Instruction::ClearActions => out.push("clear_actions".into()),
            Instruction::WriteActions(a) => out.push(format!(
                "write_actions({})",
                a.iter().map(action).collect::<Vec<_>>().join(",")
            )),
            Instruction::WriteMetadata { metadata, mask } => {
                if *mask == u64::MAX {
                    out.push(format!("write_metadata:0x{metadata:x}"))
                } else {
                    out.push(format!("write_metadata:0x{metadata:x}/0x{mask:x}"))
                }
            }
            Instruction::GotoTable(t) => out.push(format!("goto_table:{t}")),
            Instruction::Experimenter { experimenter, data } => out.push(format!(
                "experimenter_instruction(experimenter=0x{experimenter:08x},data={})",
                hex_bytes(data)
            )),
        }
    }
    if out.is_empty() {
        return "drop".into();
    }
    out.join(",")
}

pub fn group_type(t: GroupType) -> String {
    match t {
        GroupType::All => "all".into(),
        GroupType::Select => "select".into(),
        GroupType::Indirect => "indirect".into(),
        GroupType::FastFailover => "ff".into(),
        GroupType::Unknown(n) => format!("type{n}"),
    }
}

pub fn group_id(g: u32) -> String {
    match g {
        group_id::ALL => "ALL".into(),
        group_id::ANY => "ANY".into(),
        n => n.to_string(),
    }
}

/// `bucket=weight:W,watch_port:P,watch_group:G,actions=...` with the
/// parameters only where they mean something (weight for select groups,
/// watches when not ANY).
pub fn bucket(t: GroupType, b: &Bucket) -> String {
    let mut s = String::from("bucket=");
    if matches!(t, GroupType::Select) || b.weight != 0 {
        s.push_str(&format!("weight:{},", b.weight));
    }
    if b.watch_port != port_no::ANY {
        s.push_str(&format!("watch_port:{},", port(b.watch_port)));
    }
    if b.watch_group != group_id::ANY {
        s.push_str(&format!("watch_group:{},", b.watch_group));
    }
    s.push_str("actions=");
    s.push_str(&actions(&b.actions));
    s
}

/// `group_id=N,type=T,bucket=...,bucket=...`.
pub fn group(gid: u32, t: GroupType, buckets: &[Bucket]) -> String {
    let mut s = format!("group_id={},type={}", group_id(gid), group_type(t));
    for b in buckets {
        s.push(',');
        s.push_str(&bucket(t, b));
    }
    s
}

pub fn meter_id(m: u32) -> String {
    use crate::consts::meter_id;
    match m {
        meter_id::ALL => "all".into(),
        meter_id::CONTROLLER => "controller".into(),
        meter_id::SLOWPATH => "slowpath".into(),
        n => n.to_string(),
    }
}

/// `meter=N kbps burst stats bands=` followed by one line per band.
pub fn meter(id: u32, flags: u16, bands: &[MeterBand]) -> String {
    let mut s = format!("meter={}", meter_id(id));
    for (bit, name) in [
        (meter_flags::KBPS, "kbps"),
        (meter_flags::PKTPS, "pktps"),
        (meter_flags::BURST, "burst"),
        (meter_flags::STATS, "stats"),
    ] {
        if flags & bit != 0 {
            s.push(' ');
            s.push_str(name);
        }
    }
    let unknown = flags & !0xf;
    if unknown != 0 {
        s.push_str(&format!(" flags=0x{unknown:x}"));
    }
    s.push_str(" bands=");
    for b in bands {
        s.push('\n');
        s.push_str(&band(flags, b));
    }
    s
}

/// One band as ovs-ofctl prints it: `burst_size` exactly when the meter
/// has the `burst` flag (Open vSwitch reports the rate as the burst size
/// of a meter without it), `prec_level` for DSCP remarking.
pub fn band(flags: u16, b: &MeterBand) -> String {
    let burst = |n: u32| {
        if flags & meter_flags::BURST != 0 {
            format!(" burst_size={n}")
        } else {
            String::new()
        }
    };
    match b {
        MeterBand::Drop { rate, burst_size } => {
            format!("type=drop rate={rate}{}", burst(*burst_size))
        }
        MeterBand::DscpRemark { rate, burst_size, prec_level } => {
            format!("type=dscp_remark rate={rate}{} prec_level={prec_level}", burst(*burst_size))
        }
        MeterBand::Experimenter { rate, burst_size, experimenter, data } => format!(
            "type=experimenter rate={rate}{} experimenter=0x{experimenter:08x} data={}",
            burst(*burst_size),
            hex_bytes(data)
        ),
    }
}

/// ovs-ofctl's names for `OFPAT_*` numbers in feature bitmaps.
pub fn action_type_name(t: u16) -> Option<&'static str> {
    Some(match t {
        0 => "output",
        11 => "copy_ttl_out",
        12 => "copy_ttl_in",
        15 => "set_mpls_ttl",
        16 => "dec_mpls_ttl",
        17 => "push_vlan",
        18 => "strip_vlan",
        19 => "push_mpls",
        20 => "pop_mpls",
        21 => "set_queue",
        22 => "group",
        23 => "mod_nw_ttl",
        24 => "dec_ttl",
        25 => "set_field",
        26 => "push_pbb",
        27 => "pop_pbb",
        _ => return None,
    })
}

/// ovs-ofctl's names for `OFPIT_*` numbers.
pub fn instruction_type_name(t: u16) -> Option<&'static str> {
    Some(match t {
        1 => "goto_table",
        2 => "write_metadata",
        3 => "write_actions",
        4 => "apply_actions",
        5 => "clear_actions",
        6 => "meter",
        _ => return None,
    })
}

/// The `OFPAT_*` numbers in the order ovs-ofctl lists them (Open vSwitch's
/// own action order: output, group, set_field, strip_vlan, push_vlan,
/// mod_nw_ttl, dec_ttl, set_mpls_ttl, dec_mpls_ttl, push_mpls, pop_mpls,
/// set_queue), then those Open vSwitch does not implement, then the rest.
const ACTION_BITMAP_ORDER: [u16; 16] =
    [0, 22, 25, 18, 17, 23, 24, 15, 16, 19, 20, 21, 11, 12, 26, 27];

/// Names of the set bits of an `OFPAT_*` bitmap in ovs-ofctl's order
/// ([`ACTION_BITMAP_ORDER`]; unknown bits as numbers, last).
pub fn action_bitmap(bits: u32) -> String {
    let known = ACTION_BITMAP_ORDER.iter().map(|&t| u32::from(t));
    let unknown = (0..32).filter(|b| !ACTION_BITMAP_ORDER.contains(&(*b as u16)));
    known
        .chain(unknown)
        .filter(|b| bits & (1 << b) != 0)
        .map(|b| {
            action_type_name(b as u16).map(str::to_string).unwrap_or_else(|| format!("action{b}"))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oxm::FieldId;

    #[test]
    fn actions_print_like_ovs_ofctl() {
        let list = vec![
            Action::SetField(Oxm::exact(FieldId::Ipv4Dst, 0x0a01_0101)),
            Action::SetField(Oxm::exact(FieldId::VlanVid, 4106)),
            Action::Output { port: 2, max_len: 0 },
            Action::Output { port: port_no::IN_PORT, max_len: 0 },
            Action::Output { port: port_no::CONTROLLER, max_len: 128 },
            Action::SetMplsTtl(64),
            Action::PopMpls(0x0800),
        ];
        assert_eq!(
            actions(&list),
            "set_field:10.1.1.1->ip_dst,set_field:4106->vlan_vid,output:2,IN_PORT,CONTROLLER:128,set_mpls_ttl(64),pop_mpls:0x0800"
        );
        assert_eq!(actions(&[]), "drop");
        // What is printed reads back.
        assert_eq!(crate::ofctl::actions::parse_actions(&actions(&list)), Ok(list));
    }

    #[test]
    fn moves_and_loads_print_like_ovs_ofctl() {
        use crate::ofctl::actions::parse_actions;
        // ovs-ofctl 3.1's own text for these (dump-flows of Open vSwitch).
        let text = "move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],load:0x2->NXM_OF_ARP_OP[],\
                    move:NXM_OF_ETH_SRC[0..15]->NXM_OF_ETH_DST[32..47],\
                    load:0x1->NXM_OF_ETH_DST[40],load:0->NXM_OF_ICMP_TYPE[],\
                    load:0x1->OXM_OF_METADATA[],IN_PORT";
        assert_eq!(actions(&parse_actions(text).unwrap()), text);
        // OXM names read back as the NXM names ovs-ofctl prints.
        let a = parse_actions("move:OXM_OF_IPV4_SRC[]->OXM_OF_IPV4_DST[]").unwrap();
        assert_eq!(actions(&a), "move:NXM_OF_IP_SRC[]->NXM_OF_IP_DST[]");
    }

    #[test]
    fn pof_actions_print_in_their_own_syntax() {
        use crate::pof::{PofBase, PofField, PofPos};
        let pos = |base, bit_offset| PofPos { base, bit_offset };
        let f = |base, bit_offset, bit_len| PofField { pos: pos(base, bit_offset), bit_len };
        let list: Vec<Action> = [
            PofAction::Set { field: f(PofBase::L3, 64, 8), value: 0x40, mask: None },
            PofAction::Set { field: f(PofBase::L4, 0, 16), value: 0, mask: Some(0xfff0) },
            PofAction::Modify { field: f(PofBase::L3, 64, 8), delta: -1 },
            PofAction::Modify { field: f(PofBase::L2_5, 0, 20), delta: 16 },
            PofAction::Add { pos: pos(PofBase::L2End, 0), bytes: vec![0, 0x0a, 0xbc, 0] },
            PofAction::Add { pos: pos(PofBase::Frame, 8), bytes: vec![0, 0] },
            PofAction::Delete { pos: pos(PofBase::Frame, 96), len_bits: 32 },
            PofAction::Checksum {
                field: f(PofBase::L3, 80, 16),
                start: pos(PofBase::L3, 0),
                calc_len_bits: 160,
            },
            PofAction::WriteMetadata { meta_bit: 48, from: f(PofBase::Payload, 16, 16) },
        ]
        .iter()
        .map(PofAction::to_action)
        .collect();
        assert_eq!(
            actions(&list),
            "pof_set(l3+64,8,0x40),pof_set(l4+0,16,0x0000/0xfff0),pof_modify(l3+64,8,-1),\
             pof_modify(l2.5+0,20,16),pof_add(l2end+0,32,0x000abc00),pof_add(8,16,0x0000),\
             pof_del(96,32),pof_checksum(l3+80,16,l3+0,160),\
             pof_write_metadata(48,payload+16,16)"
        );
        // Undecodable POF data and other experimenters print verbatim.
        let bad = Action::Experimenter {
            experimenter: crate::consts::SLUICE_EXPERIMENTER_ID,
            data: vec![0, 9, 0, 0, 0, 0, 0, 0],
        };
        assert_eq!(action(&bad), "experimenter(experimenter=0x534c4943,data=0x0009000000000000)");
        let other = Action::Experimenter { experimenter: 0x2320, data: vec![0; 8] };
        assert!(action(&other).starts_with("experimenter(experimenter=0x00002320"));
        // NXAST_OUTPUT_TRUNC as Open vSwitch sends ovs-ofctl's
        // output(port=1,max_len=100), and to LOCAL (0xfffe in 16 bits).
        let trunc = |p: [u8; 2]| Action::Experimenter {
            experimenter: 0x2320,
            data: vec![0, 39, p[0], p[1], 0, 0, 0, 100],
        };
        assert_eq!(action(&trunc([0, 1])), "output(port=1,max_len=100)");
        assert_eq!(action(&trunc([0xff, 0xfe])), "output(port=LOCAL,max_len=100)");
    }

    #[test]
    fn action_bitmaps_in_ovs_order() {
        // Open vSwitch 3.1's group features, as ovs-ofctl prints them.
        let ovs = (1 << 0) | (1 << 22) | (1 << 25) | (1 << 18) | (1 << 17) | (1 << 23);
        let ovs = ovs | (1 << 24) | (1 << 15) | (1 << 16) | (1 << 19) | (1 << 20) | (1 << 21);
        assert_eq!(
            action_bitmap(ovs),
            "output group set_field strip_vlan push_vlan mod_nw_ttl dec_ttl set_mpls_ttl \
             dec_mpls_ttl push_mpls pop_mpls set_queue"
        );
        assert_eq!(
            action_bitmap((1 << 27) | (1 << 11) | (1 << 30) | 1),
            "output copy_ttl_out pop_pbb action30"
        );
    }

    #[test]
    fn instructions_in_ovs_order() {
        let list = vec![
            Instruction::Meter(1),
            Instruction::ApplyActions(vec![Action::Output { port: 1, max_len: 0 }]),
            Instruction::WriteActions(vec![Action::Output { port: 3, max_len: 0 }]),
            Instruction::WriteMetadata { metadata: 5, mask: 0xff },
            Instruction::GotoTable(2),
        ];
        assert_eq!(
            instructions(&list),
            "meter:1,output:1,write_actions(output:3),write_metadata:0x5/0xff,goto_table:2"
        );
        // The wire order does not matter: ovs-ofctl prints execution order.
        let mut rev = list.clone();
        rev.reverse();
        rev.insert(2, Instruction::ClearActions);
        assert_eq!(
            instructions(&rev),
            "meter:1,output:1,clear_actions,write_actions(output:3),write_metadata:0x5/0xff,goto_table:2"
        );
    }

    #[test]
    fn groups_and_meters() {
        let b =
            |w, wp, a| Bucket { weight: w, watch_port: wp, watch_group: group_id::ANY, actions: a };
        let out = |p| vec![Action::Output { port: p, max_len: 0 }];
        assert_eq!(
            group(2, GroupType::Select, &[b(10, port_no::ANY, out(1)), b(20, port_no::ANY, out(2))]),
            "group_id=2,type=select,bucket=weight:10,actions=output:1,bucket=weight:20,actions=output:2"
        );
        assert_eq!(
            group(4, GroupType::FastFailover, &[b(0, 1, out(1))]),
            "group_id=4,type=ff,bucket=watch_port:1,actions=output:1"
        );
        assert_eq!(
            meter(
                1,
                meter_flags::KBPS | meter_flags::BURST,
                &[MeterBand::Drop { rate: 1000, burst_size: 100 }]
            ),
            "meter=1 kbps burst bands=\ntype=drop rate=1000 burst_size=100"
        );
    }
}
