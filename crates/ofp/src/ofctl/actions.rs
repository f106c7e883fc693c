//! Action lists and instructions in ovs-ofctl syntax.

use super::fields::{canonical_name, field_by_name, parse_port, parse_value};
use super::lex::{parse_uint, split_items, Tok};
use super::{TextError, TextResult};
use crate::action::Action;
use crate::consts::{port_no, OFPVID_PRESENT};
use crate::fieldcopy::{self, FieldAction, FieldRef, MoveEncoding, Subfield};
use crate::instruction::Instruction;
use crate::oxm::{FieldBytes, FieldId, Oxm};

/// Context an action list is read in: the flow's IP protocol decides what
/// `mod_tp_src`/`mod_tp_dst` rewrite.
#[derive(Clone, Copy, Debug, Default)]
pub struct ActionContext {
    pub ip_proto: Option<u8>,
    /// For a flow's actions: whether its match requires a VLAN tag. Then
    /// `mod_vlan_vid`/`mod_vlan_pcp` on an untagged packet push a tag
    /// first, as ovs-ofctl does (Open vSwitch refuses a bare VLAN
    /// set-field there with OFPBAC_MATCH_INCONSISTENT). `None` elsewhere.
    pub vlan_tagged: Option<bool>,
}

/// Parse an action list (no instructions), e.g. for packet-out or buckets.
pub fn parse_actions(text: &str) -> TextResult<Vec<Action>> {
    parse_action_list(Tok { text, start: 0 }, ActionContext::default())
}

/// Parse an `actions=` value into instructions, in the order OpenFlow 1.3
/// executes them (meter, apply, clear, write-actions, write-metadata, goto).
pub fn parse_instructions(text: &str) -> TextResult<Vec<Instruction>> {
    parse_instructions_at(Tok { text, start: 0 }, ActionContext::default())
}

pub(crate) fn parse_instructions_at(
    t: Tok<'_>,
    ctx: ActionContext,
) -> TextResult<Vec<Instruction>> {
    let mut meter = None;
    let mut apply = Vec::new();
    let mut tagged = ctx.vlan_tagged;
    let mut clear = false;
    let mut write = None;
    let mut metadata = None;
    let mut goto = None;
    let mut seen_drop = false;
    for item in split_items(t)? {
        let (k, v) = item.split_kv(&[':', '=', '(']);
        let once = |slot_set: bool| -> TextResult<()> {
            if slot_set {
                Err(item.err(format!("instruction `{}` given twice", k.text)))
            } else {
                Ok(())
            }
        };
        match k.text {
            "meter" => {
                once(meter.is_some())?;
                meter = Some(parse_uint(need(item, v)?, u32::MAX as u128, "meter")? as u32);
            }
            "goto_table" => {
                once(goto.is_some())?;
                goto = Some(parse_uint(need(item, v)?, 254, "goto_table")? as u8);
            }
            "clear_actions" => {
                once(clear)?;
                no_arg(item, v)?;
                clear = true;
            }
            "write_metadata" => {
                once(metadata.is_some())?;
                let v = need(item, v)?;
                let (vt, mt) = v.split_kv(&['/']);
                let val = parse_uint(vt, u64::MAX as u128, "metadata")? as u64;
                let mask = match mt {
                    Some(m) => parse_uint(m, u64::MAX as u128, "metadata mask")? as u64,
                    None => u64::MAX,
                };
                metadata = Some((val, mask));
            }
            "write_actions" => {
                once(write.is_some())?;
                let inner = parenthesised(item, k)?;
                write = Some(parse_action_list(inner, ctx)?);
            }
            "drop" => {
                no_arg(item, v)?;
                seen_drop = true;
            }
            _ => push_action(&mut apply, &mut tagged, item, parse_action(item, ctx)?),
        }
    }
    if seen_drop && !apply.is_empty() {
        return Err(t.err("`drop` cannot be combined with other actions"));
    }
    let mut out = Vec::new();
    if let Some(m) = meter {
        out.push(Instruction::Meter(m));
    }
    if !apply.is_empty() {
        out.push(Instruction::ApplyActions(apply));
    }
    if clear {
        out.push(Instruction::ClearActions);
    }
    if let Some(w) = write {
        out.push(Instruction::WriteActions(w));
    }
    if let Some((metadata, mask)) = metadata {
        out.push(Instruction::WriteMetadata { metadata, mask });
    }
    if let Some(g) = goto {
        out.push(Instruction::GotoTable(g));
    }
    Ok(out)
}

pub(crate) fn parse_action_list(t: Tok<'_>, ctx: ActionContext) -> TextResult<Vec<Action>> {
    let mut out = Vec::new();
    let items = split_items(t)?;
    let n = items.len();
    let mut tagged = ctx.vlan_tagged;
    for item in items {
        if item.text == "drop" {
            if n != 1 {
                return Err(item.err("`drop` cannot be combined with other actions"));
            }
            continue;
        }
        push_action(&mut out, &mut tagged, item, parse_action(item, ctx)?);
    }
    Ok(out)
}

/// Appends `a` (parsed from `item`) to `out`, preceded by a `push_vlan`
/// where ovs-ofctl adds one ([`ActionContext::vlan_tagged`]); `tagged`
/// follows the actions so far.
fn push_action(out: &mut Vec<Action>, tagged: &mut Option<bool>, item: Tok<'_>, a: Action) {
    let mod_vlan = item.text.starts_with("mod_vlan_vid") || item.text.starts_with("mod_vlan_pcp");
    if mod_vlan && *tagged == Some(false) {
        out.push(Action::PushVlan(0x8100));
    }
    *tagged = match a {
        Action::PushVlan(_) => tagged.map(|_| true),
        Action::PopVlan => tagged.map(|_| false),
        _ if mod_vlan => tagged.map(|_| true),
        _ => *tagged,
    };
    out.push(a);
}

fn need<'a>(item: Tok<'a>, v: Option<Tok<'a>>) -> TextResult<Tok<'a>> {
    match v {
        Some(v) if !v.text.is_empty() => Ok(v),
        _ => Err(item.err(format!("`{}` needs an argument", item.text))),
    }
}

fn no_arg(item: Tok<'_>, v: Option<Tok<'_>>) -> TextResult<()> {
    match v {
        None => Ok(()),
        Some(_) => Err(item.err(format!("`{}` takes no argument", item.text))),
    }
}

/// The inside of `name(...)`.
fn parenthesised<'a>(item: Tok<'a>, name: Tok<'a>) -> TextResult<Tok<'a>> {
    let rest = &item.text[name.text.len()..];
    if rest.starts_with('(') && rest.ends_with(')') && rest.len() >= 2 {
        Ok(item.slice(name.text.len() + 1, item.text.len() - 1))
    } else {
        Err(item.err(format!("expected `{}(...)`", name.text)))
    }
}

fn u16_arg(item: Tok<'_>, v: Option<Tok<'_>>, what: &str) -> TextResult<u16> {
    Ok(parse_uint(need(item, v)?, u16::MAX as u128, what)? as u16)
}

fn u8_arg(item: Tok<'_>, v: Option<Tok<'_>>, what: &str) -> TextResult<u8> {
    Ok(parse_uint(need(item, v)?, u8::MAX as u128, what)? as u8)
}

fn set(field: FieldId, value: u128) -> Action {
    Action::SetField(Oxm::Basic {
        field,
        value: FieldBytes::from_u128(value, field.len()),
        mask: None,
    })
}

fn set_bytes(item: Tok<'_>, field: FieldId, v: Tok<'_>) -> TextResult<Action> {
    let (value, mask) = parse_value(field, v)?;
    if mask.is_some() {
        return Err(item.err("set_field cannot take a mask in OpenFlow 1.3"));
    }
    Ok(Action::SetField(Oxm::Basic { field, value, mask: None }))
}

fn tp_field(item: Tok<'_>, ctx: ActionContext, src: bool) -> TextResult<FieldId> {
    Ok(match (ctx.ip_proto, src) {
        (Some(6), true) => FieldId::TcpSrc,
        (Some(6), false) => FieldId::TcpDst,
        (Some(17), true) => FieldId::UdpSrc,
        (Some(17), false) => FieldId::UdpDst,
        (Some(132), true) => FieldId::SctpSrc,
        (Some(132), false) => FieldId::SctpDst,
        _ => {
            return Err(
                item.err(format!("`{}` needs a flow that matches tcp, udp or sctp", item.text))
            )
        }
    })
}

fn parse_action(item: Tok<'_>, ctx: ActionContext) -> TextResult<Action> {
    // A bare port number or reserved port name is an output action.
    if item.text.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(Action::Output { port: parse_port(item)?, max_len: 0 });
    }
    let (k, v) = item.split_kv(&[':', '=', '(']);
    let a = match k.text {
        "output" => {
            let port = parse_port(need(item, v)?)?;
            // As ovs-ofctl: `output:CONTROLLER` sends whole packets.
            let max_len =
                if port == port_no::CONTROLLER { crate::consts::OFPCML_NO_BUFFER } else { 0 };
            Action::Output { port, max_len }
        }
        "in_port" | "IN_PORT" | "all" | "ALL" | "flood" | "FLOOD" | "local" | "LOCAL"
        | "normal" | "NORMAL" | "table" | "TABLE" => {
            no_arg(item, v)?;
            Action::Output { port: parse_port(k)?, max_len: 0 }
        }
        "controller" | "CONTROLLER" => {
            let max_len = match v {
                None => crate::consts::OFPCML_NO_BUFFER,
                Some(v) => {
                    let v = if item.text[k.text.len()..].starts_with('(') {
                        let inner = parenthesised(item, k)?;
                        match inner.split_kv(&['=']) {
                            (key, Some(val)) if key.text == "max_len" => val,
                            _ => return Err(inner.err("expected `controller(max_len=N)`")),
                        }
                    } else {
                        v
                    };
                    parse_uint(v, u16::MAX as u128, "controller max_len")? as u16
                }
            };
            Action::Output { port: port_no::CONTROLLER, max_len }
        }
        "group" => Action::Group(parse_uint(need(item, v)?, u32::MAX as u128, "group")? as u32),
        "set_queue" => {
            Action::SetQueue(parse_uint(need(item, v)?, u32::MAX as u128, "queue")? as u32)
        }
        "push_vlan" => Action::PushVlan(u16_arg(item, v, "ethertype")?),
        "pop_vlan" | "strip_vlan" => {
            no_arg(item, v)?;
            Action::PopVlan
        }
        "push_mpls" => Action::PushMpls(u16_arg(item, v, "ethertype")?),
        "pop_mpls" => Action::PopMpls(u16_arg(item, v, "ethertype")?),
        "push_pbb" => Action::PushPbb(u16_arg(item, v, "ethertype")?),
        "pop_pbb" => {
            no_arg(item, v)?;
            Action::PopPbb
        }
        // `set_mpls_ttl(N)` is how ovs-ofctl (and sluice) print it.
        "set_mpls_ttl" => {
            let v = if item.text[k.text.len()..].starts_with('(') {
                Some(parenthesised(item, k)?)
            } else {
                v
            };
            Action::SetMplsTtl(u8_arg(item, v, "ttl")?)
        }
        "dec_mpls_ttl" => {
            no_arg(item, v)?;
            Action::DecMplsTtl
        }
        "mod_nw_ttl" | "set_nw_ttl" => Action::SetNwTtl(u8_arg(item, v, "ttl")?),
        "dec_ttl" => {
            no_arg(item, v)?;
            Action::DecNwTtl
        }
        "copy_ttl_in" => {
            no_arg(item, v)?;
            Action::CopyTtlIn
        }
        "copy_ttl_out" => {
            no_arg(item, v)?;
            Action::CopyTtlOut
        }
        "set_field" => {
            let v = need(item, v)?;
            let Some(arrow) = v.text.find("->") else {
                return Err(v.err("expected `set_field:VALUE->FIELD`"));
            };
            let ft = v.slice(arrow + 2, v.text.len());
            let field = field_by_name(ft.text).or(match ft.text {
                "tp_src" => Some(tp_field(item, ctx, true)?),
                "tp_dst" => Some(tp_field(item, ctx, false)?),
                _ => None,
            });
            let Some(field) = field else {
                return Err(ft.err(format!("unknown field `{}`", ft.text)));
            };
            set_bytes(item, field, v.slice(0, arrow))?
        }
        "mod_dl_src" => set_bytes(item, FieldId::EthSrc, need(item, v)?)?,
        "mod_dl_dst" => set_bytes(item, FieldId::EthDst, need(item, v)?)?,
        "mod_nw_src" => set_bytes(item, FieldId::Ipv4Src, need(item, v)?)?,
        "mod_nw_dst" => set_bytes(item, FieldId::Ipv4Dst, need(item, v)?)?,
        "mod_nw_tos" => {
            let tos = u8_arg(item, v, "nw_tos")?;
            if tos & 3 != 0 {
                return Err(item.err("mod_nw_tos: the two low (ECN) bits must be zero"));
            }
            set(FieldId::IpDscp, (tos >> 2) as u128)
        }
        "mod_nw_ecn" => {
            let ecn = u8_arg(item, v, "nw_ecn")?;
            if ecn > 3 {
                return Err(item.err("mod_nw_ecn: value must be 0..3"));
            }
            set(FieldId::IpEcn, ecn as u128)
        }
        "mod_tp_src" => set_bytes(item, tp_field(item, ctx, true)?, need(item, v)?)?,
        "mod_tp_dst" => set_bytes(item, tp_field(item, ctx, false)?, need(item, v)?)?,
        "mod_vlan_vid" => {
            let vid = parse_uint(need(item, v)?, 0xfff, "vlan vid")? as u16;
            set(FieldId::VlanVid, (vid | OFPVID_PRESENT) as u128)
        }
        "mod_vlan_pcp" => set(FieldId::VlanPcp, parse_uint(need(item, v)?, 7, "vlan pcp")?),
        "set_mpls_label" => {
            set(FieldId::MplsLabel, parse_uint(need(item, v)?, 0xf_ffff, "mpls label")?)
        }
        "set_mpls_tc" => set(FieldId::MplsTc, parse_uint(need(item, v)?, 7, "mpls tc")?),
        "move" => parse_move(item, need(item, v)?)?.to_action(),
        "load" => parse_load(item, need(item, v)?)?.to_action(),
        name if super::pof::is_action(name) => {
            super::pof::parse_action_item(item, name)?.to_action()
        }
        name if super::filterprog::is_action(name) => {
            super::filterprog::parse_action_item(item)?.to_action()
        }
        "meter" | "goto_table" | "write_actions" | "clear_actions" | "write_metadata" => {
            return Err(item.err(format!("instruction `{}` is not allowed here", k.text)));
        }
        other => {
            return Err(TextError::new(k.start, k.end(), format!("unknown action `{other}`")));
        }
    };
    Ok(a)
}

/// `NAME[]`, `NAME[BIT]` or `NAME[FIRST..LAST]` (NXM or OXM names, as
/// ovs-ofctl spells them; bit 0 is the least significant).
fn parse_subfield(t: Tok<'_>) -> TextResult<Subfield> {
    let Some(open) = t.text.find('[') else {
        return Err(t.err(format!("expected `FIELD[...]`, found `{}`", t.text)));
    };
    if !t.text.ends_with(']') {
        return Err(t.err("a subfield ends with `]`"));
    }
    let name = t.slice(0, open);
    let Some(f) = fieldcopy::field_by_name(name.text) else {
        return Err(name.err(format!("unknown field `{}` (NXM_* or OXM_OF_* names)", name.text)));
    };
    let inner = t.slice(open + 1, t.text.len() - 1);
    let bits = f.bits() as u128;
    let (ofs, n_bits) = if inner.text.is_empty() {
        (0, bits)
    } else if let Some(dots) = inner.text.find("..") {
        let a = parse_uint(inner.slice(0, dots), bits - 1, "bit")?;
        let b = parse_uint(inner.slice(dots + 2, inner.text.len()), bits - 1, "bit")?;
        if b < a {
            return Err(inner.err("bit range goes backwards"));
        }
        (a, b - a + 1)
    } else {
        (parse_uint(inner, bits - 1, "bit")?, 1)
    };
    Ok(Subfield { field: FieldRef::of(f), ofs: ofs as u16, n_bits: n_bits as u16 })
}

/// `move:SRC[..]->DST[..]` (sent as Nicira's `NXAST_REG_MOVE`, as
/// ovs-ofctl does).
fn parse_move(item: Tok<'_>, v: Tok<'_>) -> TextResult<FieldAction> {
    let Some(arrow) = v.text.find("->") else {
        return Err(v.err("expected `move:SRC[...]->DST[...]`"));
    };
    let src = parse_subfield(v.slice(0, arrow))?;
    let dst = parse_subfield(v.slice(arrow + 2, v.text.len()))?;
    if src.n_bits != dst.n_bits {
        return Err(item.err(format!(
            "source is {} bits wide but destination is {} bits wide",
            src.n_bits, dst.n_bits
        )));
    }
    let a = FieldAction::Move { src, dst, encoding: MoveEncoding::Nicira };
    check_field_action(item, &a)?;
    Ok(a)
}

/// `load:VALUE->DST[..]` (Nicira's `NXAST_REG_LOAD`; at most 64 bits).
fn parse_load(item: Tok<'_>, v: Tok<'_>) -> TextResult<FieldAction> {
    let Some(arrow) = v.text.find("->") else {
        return Err(v.err("expected `load:VALUE->DST[...]`"));
    };
    let dst = parse_subfield(v.slice(arrow + 2, v.text.len()))?;
    if dst.n_bits > 64 {
        return Err(item.err("load writes at most 64 bits at a time (use set_field)"));
    }
    let max = if dst.n_bits >= 64 { u64::MAX as u128 } else { (1u128 << dst.n_bits) - 1 };
    let value = parse_uint(v.slice(0, arrow), max, "value")? as u64;
    let a = FieldAction::Load { dst, value };
    check_field_action(item, &a)?;
    Ok(a)
}

fn check_field_action(item: Tok<'_>, a: &FieldAction) -> TextResult<()> {
    a.validate().map_err(|e| item.err(format!("invalid `{}`: {e:?}", item.text)))
}

/// The name a set-field action is printed with (`set_field:V->NAME`).
pub fn set_field_name(f: FieldId) -> &'static str {
    canonical_name(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_become_apply_and_instructions_keep_spec_order() {
        let ins = parse_instructions(
            "goto_table:3,output:2,write_metadata:0x1/0xff,write_actions(group:7,set_queue:1),clear_actions,meter:5,controller:128",
        )
        .unwrap();
        assert_eq!(
            ins,
            vec![
                Instruction::Meter(5),
                Instruction::ApplyActions(vec![
                    Action::Output { port: 2, max_len: 0 },
                    Action::Output { port: port_no::CONTROLLER, max_len: 128 },
                ]),
                Instruction::ClearActions,
                Instruction::WriteActions(vec![Action::Group(7), Action::SetQueue(1)]),
                Instruction::WriteMetadata { metadata: 1, mask: 0xff },
                Instruction::GotoTable(3),
            ]
        );
    }

    #[test]
    fn set_field_and_shorthands() {
        let a = parse_actions(
            "set_field:10.1.1.1->ip_dst,mod_vlan_vid:5,strip_vlan,push_mpls:0x8847,dec_ttl,7,LOCAL",
        )
        .unwrap();
        assert_eq!(a[0], set(FieldId::Ipv4Dst, 0x0a01_0101));
        assert_eq!(a[1], set(FieldId::VlanVid, 0x1005));
        assert_eq!(a[2], Action::PopVlan);
        assert_eq!(a[3], Action::PushMpls(0x8847));
        assert_eq!(a[4], Action::DecNwTtl);
        assert_eq!(a[5], Action::Output { port: 7, max_len: 0 });
        // `output:CONTROLLER` is `CONTROLLER:65535`, as in ovs-ofctl.
        assert_eq!(
            parse_actions("output:CONTROLLER").unwrap(),
            [Action::Output {
                port: port_no::CONTROLLER,
                max_len: crate::consts::OFPCML_NO_BUFFER
            }]
        );
        assert_eq!(a[6], Action::Output { port: port_no::LOCAL, max_len: 0 });
        assert_eq!(parse_actions("drop").unwrap(), vec![]);
        assert_eq!(parse_instructions("drop").unwrap(), vec![]);
    }

    #[test]
    fn errors_point_at_the_token() {
        let e = parse_actions("output:1,frobnicate:3").unwrap_err();
        assert_eq!((e.start, e.end), (9, 19));
        assert!(e.msg.contains("frobnicate"));
        let e = parse_actions("set_field:1->nosuch").unwrap_err();
        assert!(e.msg.contains("nosuch"));
        assert!(parse_actions("mod_tp_src:80").unwrap_err().msg.contains("tcp"));
        assert!(parse_instructions("goto_table:1,goto_table:2").is_err());
        assert!(parse_actions("drop,output:1").is_err());
        assert!(parse_actions("goto_table:1").is_err());
        assert!(parse_actions("set_field:10.0.0.0/8->ip_dst").is_err());
    }

    #[test]
    fn move_and_load() {
        let a = parse_actions(
            "move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],load:0x2->NXM_OF_ARP_OP[],\
             move:NXM_OF_ETH_SRC[0..15]->NXM_OF_ETH_DST[32..47],load:1->OXM_OF_IPV4_DST[8],\
             load:0xc0a80001->NXM_OF_ARP_SPA[]",
        )
        .unwrap();
        let f = |a: &Action| FieldAction::from_action(a).unwrap().unwrap();
        assert_eq!(
            f(&a[0]),
            FieldAction::Move {
                src: Subfield::whole(FieldId::EthSrc),
                dst: Subfield::whole(FieldId::EthDst),
                encoding: MoveEncoding::Nicira
            }
        );
        assert_eq!(f(&a[1]), FieldAction::Load { dst: Subfield::whole(FieldId::ArpOp), value: 2 });
        let FieldAction::Move { src, dst, .. } = f(&a[2]) else { panic!() };
        assert_eq!((src.ofs, src.n_bits, dst.ofs, dst.n_bits), (0, 16, 32, 16));
        let FieldAction::Load { dst, value } = f(&a[3]) else { panic!() };
        assert_eq!((dst.field_id(), dst.ofs, dst.n_bits, value), (Some(FieldId::Ipv4Dst), 8, 1, 1));
        // The bytes ovs-ofctl sends for load:0xc0a80001->NXM_OF_ARP_SPA[].
        let mut b = Vec::new();
        a[4].emit(&mut b);
        assert_eq!(
            b,
            [
                0xff, 0xff, 0, 24, 0, 0, 0x23, 0x20, 0, 7, 0, 0x1f, 0, 0, 0x20, 4, 0, 0, 0, 0,
                0xc0, 0xa8, 0, 1
            ]
        );
        for bad in [
            "move:NXM_OF_ETH_SRC[]->NXM_OF_IP_DST[]",
            "move:NXM_NX_REG0[]->NXM_OF_IP_DST[]",
            "move:NXM_OF_ETH_SRC[0..15]->NXM_OF_ETH_TYPE[]",
            "load:0x100->NXM_OF_IP_DST[0..7]",
            "load:1->NXM_OF_IP_DST[32]",
            "load:1->NXM_NX_IPV6_SRC[]",
            "load:1->NXM_OF_IP_DST",
            "move:NXM_OF_ETH_SRC[]",
        ] {
            assert!(parse_actions(bad).is_err(), "{bad}");
        }
    }
}
