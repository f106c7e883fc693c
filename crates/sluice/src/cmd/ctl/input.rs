//! Text in, OpenFlow values out: the arguments and files of `sluice ctl`.
//!
//! Everything here runs before a connection is opened, so a typo in a flow
//! (or in line 70 000 of a flow file) is reported with a caret under the
//! bad token and the command exits non-zero without touching the switch.
//! The syntax itself is [`sluice_ofp::ofctl`]'s (ovs-ofctl's); this module
//! adds what ovs-ofctl's command line adds on top of it: command words at
//! the start of file lines, bare numbers and `all` where ovs-ofctl accepts
//! them for groups and meters, port names, and the two `packet-out` forms.

use anyhow::{anyhow, bail, Context, Result};
use sluice_ofp::action::Action;
use sluice_ofp::consts::{group_id, meter_id, port_no};
use sluice_ofp::message::{
    flow_mod_command as fc, group_mod_command as gc, meter_mod_command as mc, Message,
};
use sluice_ofp::ofctl::{parse_actions, parse_flow, parse_group, parse_meter, TextError, Usage};

/// A message to send and how to name it if the switch rejects it.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub label: String,
    pub msg: Message,
}

/// `{context}: {message}` plus the input with a caret under the bad token.
pub fn text_error(context: &str, input: &str, e: &TextError) -> anyhow::Error {
    anyhow!("{context}: {}", e.render(input))
}

/// The flow-mod for `text` with `command` (`OFPFC_*`).
pub fn flow_mod(context: &str, text: &str, command: u8) -> Result<Message> {
    let usage = match command {
        fc::ADD => Usage::Add,
        fc::MODIFY | fc::MODIFY_STRICT => Usage::Modify,
        _ => Usage::Delete,
    };
    let spec = parse_flow(text, usage).map_err(|e| text_error(context, text, &e))?;
    Ok(Message::FlowMod(spec.to_flow_mod(command)))
}

/// Read a file (`-` is standard input).
pub fn read_file(path: &str) -> Result<String> {
    if path == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
            .context("cannot read standard input")?;
        return Ok(s);
    }
    std::fs::read_to_string(path).with_context(|| format!("cannot read {path}"))
}

/// Non-blank, non-comment lines with their 1-based numbers, trimmed.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
}

/// Split an optional leading command word (`add`, `modify`, ...) off a
/// file line.
fn command_word<'a>(line: &'a str, words: &[(&str, u16)], default: u16) -> (u16, &'a str) {
    let (first, rest) = match line.split_once(|c: char| c.is_ascii_whitespace()) {
        Some((f, r)) => (f, r.trim_start()),
        None => (line, ""),
    };
    match words.iter().find(|(w, _)| w.eq_ignore_ascii_case(first)) {
        Some(&(_, c)) => (c, rest),
        None => (default, line),
    }
}

const FLOW_WORDS: &[(&str, u16)] = &[
    ("add", fc::ADD as u16),
    ("modify", fc::MODIFY as u16),
    ("modify_strict", fc::MODIFY_STRICT as u16),
    ("delete", fc::DELETE as u16),
    ("delete_strict", fc::DELETE_STRICT as u16),
];

const GROUP_WORDS: &[(&str, u16)] =
    &[("add", gc::ADD), ("modify", gc::MODIFY), ("delete", gc::DELETE)];

/// `add-flows FILE`: one flow per line, optionally preceded by `add`,
/// `modify`, `modify_strict`, `delete` or `delete_strict` (ovs-ofctl's
/// words; the default is `add`). Blank lines and `#` comments are skipped.
pub fn flow_file(name: &str, text: &str) -> Result<Vec<Item>> {
    let mut out = Vec::new();
    for (no, line) in lines(text) {
        let (cmd, spec) = command_word(line, FLOW_WORDS, fc::ADD as u16);
        let label = format!("{name}:{no}");
        let msg = flow_mod(&label, spec, cmd as u8)?;
        out.push(Item { label: format!("{label}: {line}"), msg });
    }
    Ok(out)
}

/// `add-groups FILE`: one group per line, optionally preceded by `add`,
/// `modify` or `delete`.
pub fn group_file(name: &str, text: &str) -> Result<Vec<Item>> {
    let mut out = Vec::new();
    for (no, line) in lines(text) {
        let (cmd, spec) = command_word(line, GROUP_WORDS, gc::ADD);
        let label = format!("{name}:{no}");
        let msg = group_mod(&label, spec, cmd)?;
        out.push(Item { label: format!("{label}: {line}"), msg });
    }
    Ok(out)
}

/// The group-mod for `text`; for `delete`, a bare number or `all` is
/// accepted too, and no text means all groups.
pub fn group_mod(context: &str, text: &str, command: u16) -> Result<Message> {
    if command == gc::DELETE {
        let id = group_selector(context, text)?;
        let spec = sluice_ofp::ofctl::GroupSpec { group_id: id, group_type: None, buckets: vec![] };
        return Ok(Message::GroupMod(spec.to_group_mod(command)));
    }
    let spec = parse_group(text).map_err(|e| text_error(context, text, &e))?;
    if spec.group_type.is_none() {
        bail!("{context}: the group needs `type=all|select|indirect|ff`\n  {text}");
    }
    Ok(Message::GroupMod(spec.to_group_mod(command)))
}

fn number(s: &str) -> Option<u32> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// A group id from `N`, `all`, `group_id=N` or nothing (all).
pub fn group_selector(context: &str, text: &str) -> Result<u32> {
    let t = text.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("all") {
        return Ok(group_id::ALL);
    }
    if let Some(n) = number(t) {
        return Ok(n);
    }
    let spec = parse_group(t).map_err(|e| text_error(context, t, &e))?;
    Ok(spec.group_id)
}

/// A meter id from `N`, `all`, `meter=N` or nothing (all).
pub fn meter_selector(context: &str, text: &str) -> Result<u32> {
    let t = text.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("all") {
        return Ok(meter_id::ALL);
    }
    if let Some(n) = number(t) {
        return Ok(n);
    }
    let spec = parse_meter(t).map_err(|e| text_error(context, t, &e))?;
    Ok(spec.meter_id)
}

/// The meter-mod for `text` (`delete` takes a selector).
pub fn meter_mod(context: &str, text: &str, command: u16) -> Result<Message> {
    if command == mc::DELETE {
        let id = meter_selector(context, text)?;
        let spec = sluice_ofp::ofctl::MeterSpec { meter_id: id, flags: 0, bands: vec![] };
        return Ok(Message::MeterMod(spec.to_meter_mod(command)));
    }
    let spec = parse_meter(text).map_err(|e| text_error(context, text, &e))?;
    Ok(Message::MeterMod(spec.to_meter_mod(command)))
}

/// A port as the user wrote it: a number, a reserved name, or an
/// interface name that the switch's port descriptions resolve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PortArg {
    No(u32),
    Name(String),
}

const RESERVED_PORTS: &[(&str, u32)] = &[
    ("IN_PORT", port_no::IN_PORT),
    ("TABLE", port_no::TABLE),
    ("NORMAL", port_no::NORMAL),
    ("FLOOD", port_no::FLOOD),
    ("ALL", port_no::ALL),
    ("CONTROLLER", port_no::CONTROLLER),
    ("LOCAL", port_no::LOCAL),
    ("ANY", port_no::ANY),
    ("NONE", port_no::ANY),
];

pub fn port_arg(s: &str) -> PortArg {
    let s = s.trim();
    if let Some(&(_, n)) = RESERVED_PORTS.iter().find(|(name, _)| name.eq_ignore_ascii_case(s)) {
        return PortArg::No(n);
    }
    match number(s) {
        Some(n) => PortArg::No(n),
        None => PortArg::Name(s.to_string()),
    }
}

/// What `packet-out` sends.
#[derive(Clone, Debug, PartialEq)]
pub struct PacketOutArgs {
    pub in_port: PortArg,
    pub actions: Vec<Action>,
    pub data: Vec<u8>,
}

/// `packet-out` in either of ovs-ofctl's forms:
/// `IN_PORT ACTIONS PACKET...` (the packet as hex, possibly split over
/// several arguments) or `in_port=P,packet=HEX,actions=...` (one or more
/// arguments; `actions=` takes the rest).
pub fn packet_out(args: &[String]) -> Result<PacketOutArgs> {
    let joined = args.join(" ");
    let keyed = args.first().is_some_and(|a| a.contains('='));
    if !keyed {
        let [in_port, actions, packet @ ..] = args else {
            bail!("packet-out: expected IN_PORT ACTIONS PACKET (hex), or in_port=P,packet=HEX,actions=A");
        };
        if packet.is_empty() {
            bail!("packet-out: missing the packet (hex)");
        }
        let acts = parse_actions(actions).map_err(|e| text_error("packet-out", actions, &e))?;
        let data = crate::cmd::ofp_print::parse_hex(packet).context("packet-out: the packet")?;
        return Ok(PacketOutArgs { in_port: port_arg(in_port), actions: acts, data });
    }
    let (head, actions) = match joined.find("actions=") {
        Some(i) => (&joined[..i], Some((i + 8, &joined[i + 8..]))),
        None => (joined.as_str(), None),
    };
    let Some((at, actions)) = actions else {
        bail!("packet-out: missing `actions=...`\n  {joined}");
    };
    let acts = parse_actions(actions).map_err(|e| {
        let shifted = TextError { start: e.start + at, end: e.end + at, msg: e.msg.clone() };
        text_error("packet-out", &joined, &shifted)
    })?;
    let mut in_port = PortArg::No(port_no::CONTROLLER);
    let mut data = None;
    for item in head.split([',', ' ']).filter(|s| !s.is_empty()) {
        match item.split_once('=') {
            Some(("in_port", v)) => in_port = port_arg(v),
            Some(("packet", v)) => {
                data = Some(
                    crate::cmd::ofp_print::parse_hex(&[v.to_string()])
                        .context("packet-out: packet=")?,
                )
            }
            _ => {
                bail!("packet-out: unknown keyword `{item}` (expected in_port=, packet=, actions=)")
            }
        }
    }
    let data = data.ok_or_else(|| anyhow!("packet-out: missing `packet=HEX`"))?;
    Ok(PacketOutArgs { in_port, actions: acts, data })
}

/// `set-config` arguments: `frags=normal|drop|reassemble` and
/// `miss_send_len=N`, applied to the switch's current configuration.
pub fn set_config(args: &[String]) -> Result<(Option<u16>, Option<u16>)> {
    let mut frags = None;
    let mut miss = None;
    if args.is_empty() {
        bail!("set-config: expected frags=normal|drop|reassemble and/or miss_send_len=N");
    }
    for a in args.iter().flat_map(|a| a.split(',')).filter(|s| !s.is_empty()) {
        match a.split_once('=') {
            Some(("frags", v)) => {
                frags = Some(match v {
                    "normal" => 0,
                    "drop" => 1,
                    "reassemble" => 2,
                    _ => bail!("set-config: frags must be normal, drop or reassemble, not `{v}`"),
                })
            }
            Some(("miss_send_len", v)) => {
                let n = number(v)
                    .and_then(|n| u16::try_from(n).ok())
                    .ok_or_else(|| anyhow!("set-config: miss_send_len `{v}` is not 0..65535"))?;
                miss = Some(n);
            }
            _ => bail!("set-config: unknown setting `{a}`"),
        }
    }
    Ok((frags, miss))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_ofp::message::FlowMod;

    fn fm(m: &Message) -> &FlowMod {
        match m {
            Message::FlowMod(f) => f,
            other => panic!("not a flow-mod: {other:?}"),
        }
    }

    #[test]
    fn flow_files_skip_comments_and_take_command_words() {
        let text = "# header\n\n  priority=5,in_port=1,actions=output:2\ndelete_strict priority=5,in_port=1\r\nmodify in_port=2 actions=drop\n";
        let items = flow_file("f.txt", text).unwrap();
        assert_eq!(items.len(), 3);
        assert_eq!(fm(&items[0].msg).command, fc::ADD);
        assert_eq!(fm(&items[0].msg).priority, 5);
        assert_eq!(fm(&items[1].msg).command, fc::DELETE_STRICT);
        assert_eq!(fm(&items[1].msg).table_id, 0xff);
        assert_eq!(fm(&items[2].msg).command, fc::MODIFY);
        assert_eq!(items[0].label, "f.txt:3: priority=5,in_port=1,actions=output:2");
        assert_eq!(items[1].label, "f.txt:4: delete_strict priority=5,in_port=1");
    }

    #[test]
    fn a_bad_line_names_file_and_line_with_a_caret() {
        let e = flow_file("f.txt", "in_port=1,actions=drop\nin_port=1,bogus=3,actions=drop\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("f.txt:2: unknown field `bogus`"), "{e}");
        assert!(e.ends_with("\n  in_port=1,bogus=3,actions=drop\n            ^^^^^"), "{e}");
    }

    #[test]
    fn selectors_accept_numbers_all_and_specs() {
        assert_eq!(group_selector("x", "").unwrap(), group_id::ALL);
        assert_eq!(group_selector("x", "7").unwrap(), 7);
        assert_eq!(group_selector("x", "group_id=9").unwrap(), 9);
        assert_eq!(group_selector("x", "all").unwrap(), group_id::ALL);
        assert_eq!(meter_selector("x", "meter=3").unwrap(), 3);
        assert_eq!(meter_selector("x", "0x10").unwrap(), 16);
        assert_eq!(meter_selector("x", "").unwrap(), meter_id::ALL);
        assert!(meter_selector("x", "meter=x").is_err());
    }

    #[test]
    fn groups_need_a_type_except_for_delete() {
        assert!(group_mod("g", "group_id=1,bucket=output:1", gc::ADD).is_err());
        let m = group_mod("g", "group_id=1,type=all,bucket=output:1", gc::ADD).unwrap();
        assert!(matches!(m, Message::GroupMod(g) if g.group_id == 1 && g.buckets.len() == 1));
        let m = group_mod("g", "", gc::DELETE).unwrap();
        assert!(matches!(m, Message::GroupMod(g) if g.group_id == group_id::ALL));
    }

    #[test]
    fn ports() {
        assert_eq!(port_arg("3"), PortArg::No(3));
        assert_eq!(port_arg("local"), PortArg::No(port_no::LOCAL));
        assert_eq!(port_arg("CONTROLLER"), PortArg::No(port_no::CONTROLLER));
        assert_eq!(port_arg("p1"), PortArg::Name("p1".into()));
    }

    #[test]
    fn packet_out_both_forms() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let p = packet_out(&s(&["1", "output:2", "ffffffffffff", "000000000001 0800"])).unwrap();
        assert_eq!(p.in_port, PortArg::No(1));
        assert_eq!(p.actions, vec![Action::Output { port: 2, max_len: 0 }]);
        assert_eq!(p.data, vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 1, 8, 0]);
        let q = packet_out(&s(&["in_port=LOCAL,packet=0a0b,actions=output:1,output:2"])).unwrap();
        assert_eq!(q.in_port, PortArg::No(port_no::LOCAL));
        assert_eq!(q.data, vec![10, 11]);
        assert_eq!(q.actions.len(), 2);
        let e = packet_out(&s(&["in_port=1,packet=00,actions=output:x"])).unwrap_err().to_string();
        assert!(e.contains("\n  in_port=1,packet=00,actions=output:x\n"), "{e}");
        // The caret sits under `x`, byte 35 of the joined text.
        assert_eq!(e.lines().last().unwrap(), format!("  {}^", " ".repeat(35)), "{e}");
        assert!(packet_out(&s(&["1", "output:2"])).is_err());
        assert!(packet_out(&s(&["in_port=1,actions=drop"])).is_err());
    }

    #[test]
    fn set_config_settings() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            set_config(&s(&["frags=drop", "miss_send_len=128"])).unwrap(),
            (Some(1), Some(128))
        );
        assert_eq!(set_config(&s(&["miss_send_len=0xffff"])).unwrap(), (None, Some(0xffff)));
        assert!(set_config(&s(&["frags=maybe"])).is_err());
        assert!(set_config(&s(&["miss_send_len=70000"])).is_err());
        assert!(set_config(&[]).is_err());
    }
}
