//! Filter-program match fields and the `send_maps` action in text
//! ([`crate::filterprog`] is the wire side).
//!
//! ```text
//! filter_prog=ID                 match: program ID returns non-zero for the packet
//! pcap_filter="EXPR"             match: the pcap-filter expression EXPR accepts it
//! send_maps:ID:MAP[:MAP...]      action: send these maps of program ID to the controller
//! ```
//!
//! - `ID` is decimal or `0x` hex, 1 to 0xfffffffe (0 and 0xffffffff are
//!   reserved).
//! - `EXPR` is double-quoted and may hold spaces, commas, `=` and
//!   parentheses; inside it `\"` is a quote and `\\` a backslash (no
//!   other escapes). Unescaped it is 1 to [`MAX_PCAP_FILTER`] bytes
//!   without NUL. Whether it compiles is the switch's answer, not the
//!   parser's.
//! - `MAP` is 1 to [`MAX_MAP_NAME`] characters of `[A-Za-z0-9_.]`; 1 to
//!   [`MAX_SEND_MAPS`] maps, each once.
//! - A flow holds at most one `filter_prog` and one `pcap_filter`.
//!
//! Anything the wire decoders would refuse is refused here, with a message
//! naming the offending token. The printer
//! ([`crate::print::fields::filter_prog_match`],
//! [`crate::print::fields::pcap_filter_match`],
//! [`crate::print::actions::send_maps_action`]) writes the canonical form:
//! the id in decimal, the expression quoted with `"` and `\` escaped;
//! reading that back gives the same value.

use super::lex::{parse_uint, Tok};
use super::TextResult;
use crate::filterprog::{
    check_pcap_filter, filter_prog_oxm, map_name_valid, pcap_filter_oxm, prog_id_valid, SendMaps,
    MAX_MAP_NAME, MAX_PCAP_FILTER, MAX_SEND_MAPS,
};
use crate::oxm::Oxm;

/// The match keys this module reads.
pub const MATCH_KEYS: [&str; 2] = ["filter_prog", "pcap_filter"];

const SEND_MAPS: &str = "send_maps";
const SEND_MAPS_USAGE: &str = "send_maps:ID:MAP[:MAP...]";

/// Parse one match item, `filter_prog=ID` or `pcap_filter="EXPR"`, into
/// its OXM.
pub fn parse_match(text: &str) -> TextResult<Oxm> {
    parse_match_item(Tok { text, start: 0 }.trim())
}

/// Parse `send_maps:ID:MAP[:MAP...]`.
pub fn parse_action(text: &str) -> TextResult<SendMaps> {
    parse_action_item(Tok { text, start: 0 }.trim())
}

/// Whether `key` is one of [`MATCH_KEYS`].
pub fn is_match_key(key: &str) -> bool {
    MATCH_KEYS.contains(&key)
}

/// Whether `name` is the `send_maps` action.
pub fn is_action(name: &str) -> bool {
    name == SEND_MAPS
}

/// Parse a whole flow item `filter_prog=ID` or `pcap_filter="EXPR"`.
pub(crate) fn parse_match_item(item: Tok<'_>) -> TextResult<Oxm> {
    let (k, v) = item.split_kv(&['=']);
    let usage = match k.text {
        "filter_prog" => "filter_prog=ID",
        "pcap_filter" => r#"pcap_filter="EXPR""#,
        other => return Err(k.err(format!("unknown field `{other}`"))),
    };
    let Some(v) = v.filter(|v| !v.text.is_empty()) else {
        return Err(item.err(format!("`{}` needs a value: {usage}", k.text)));
    };
    if k.text == "filter_prog" {
        return Ok(filter_prog_oxm(parse_prog_id(v)?));
    }
    let expr = unquote(v)?;
    // Every rule `unquote` applies mirrors the decoder's; this catches a
    // drift.
    check_pcap_filter(&expr)
        .map_err(|e| v.err(format!("`{}` would be refused by the switch ({e})", v.text)))?;
    Ok(pcap_filter_oxm(&expr))
}

/// Parse the whole action item `send_maps:ID:MAP[:MAP...]`.
pub(crate) fn parse_action_item(item: Tok<'_>) -> TextResult<SendMaps> {
    let Some(rest) = item.text.strip_prefix(SEND_MAPS).and_then(|r| r.strip_prefix(':')) else {
        return Err(item.err(format!("expected {SEND_MAPS_USAGE}")));
    };
    let rest = item.slice(SEND_MAPS.len() + 1, SEND_MAPS.len() + 1 + rest.len());
    let mut parts = Vec::new();
    let mut from = 0;
    for (i, c) in rest.text.char_indices().chain([(rest.text.len(), ':')]) {
        if c == ':' {
            parts.push(rest.slice(from, i));
            from = i + 1;
        }
    }
    let (id_t, names) = parts.split_first().expect("split yields at least one part");
    if id_t.text.is_empty() {
        return Err(id_t.err(format!("send_maps needs a program id: {SEND_MAPS_USAGE}")));
    }
    let prog_id = parse_prog_id(*id_t)?;
    if names.is_empty() {
        return Err(item.err(format!("send_maps needs at least one map: {SEND_MAPS_USAGE}")));
    }
    let mut maps: Vec<String> = Vec::with_capacity(names.len());
    for (i, t) in names.iter().enumerate() {
        if i == MAX_SEND_MAPS {
            return Err(t.err(format!("send_maps takes at most {MAX_SEND_MAPS} maps")));
        }
        if !map_name_valid(t.text.as_bytes()) {
            return Err(t.err(format!(
                "map name `{}` must be 1 to {MAX_MAP_NAME} characters of [A-Za-z0-9_.]",
                t.text
            )));
        }
        if maps.iter().any(|m| m == t.text) {
            return Err(t.err(format!("map `{}` named twice", t.text)));
        }
        maps.push(t.text.to_string());
    }
    let s = SendMaps { prog_id, maps };
    s.check()
        .map_err(|e| item.err(format!("`{}` would be refused by the switch ({e})", item.text)))?;
    Ok(s)
}

/// A program id: decimal or `0x` hex, not reserved.
fn parse_prog_id(t: Tok<'_>) -> TextResult<u32> {
    let id = parse_uint(t, u128::from(u32::MAX), "program id")? as u32;
    if !prog_id_valid(id) {
        return Err(t.err(format!("program id `{}` is reserved (use 1 to 0xfffffffe)", t.text)));
    }
    Ok(id)
}

/// A double-quoted expression with `\"` and `\\` escapes, nothing after
/// the closing quote, 1..=[`MAX_PCAP_FILTER`] bytes unescaped, no NUL.
fn unquote(t: Tok<'_>) -> TextResult<String> {
    let s = t.text;
    if !s.starts_with('"') {
        return Err(t.err(format!(
            r#"pcap_filter: the expression must be double-quoted: pcap_filter="{s}""#
        )));
    }
    let mut out = String::new();
    let mut chars = s.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, e @ ('"' | '\\'))) => out.push(e),
                Some((j, e)) => {
                    return Err(t
                        .slice(i, j + e.len_utf8())
                        .err(format!(r#"pcap_filter: unknown escape `\{e}` (only \" and \\)"#)))
                }
                None => break,
            },
            '"' => {
                if i + 1 != s.len() {
                    return Err(t
                        .slice(i + 1, s.len())
                        .err(format!("pcap_filter: `{}` after the closing quote", &s[i + 1..])));
                }
                if out.is_empty() {
                    return Err(t.err("pcap_filter: the expression is empty"));
                }
                if out.len() > MAX_PCAP_FILTER {
                    return Err(t.err(format!(
                        "pcap_filter: the expression is {} bytes, at most {MAX_PCAP_FILTER}",
                        out.len()
                    )));
                }
                if out.contains('\0') {
                    return Err(t.err("pcap_filter: the expression contains a NUL character"));
                }
                return Ok(out);
            }
            c => out.push(c),
        }
    }
    Err(t.err("pcap_filter: unterminated `\"`"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Action;
    use crate::filterprog::{filter_prog_from_oxm, pcap_filter_from_oxm};
    use crate::instruction::Instruction;
    use crate::ofctl::{parse_actions, parse_flow, parse_instructions, Usage};
    use crate::oxm::{FieldId, Match};
    use crate::print::actions::{actions, instructions, send_maps_action};
    use crate::print::fields::{match_str, pcap_filter_match};
    use proptest::prelude::*;

    #[test]
    fn match_syntax() {
        assert_eq!(parse_match("filter_prog=7"), Ok(filter_prog_oxm(7)));
        assert_eq!(parse_match("filter_prog=0x10"), Ok(filter_prog_oxm(16)));
        assert_eq!(parse_match("filter_prog=4294967294"), Ok(filter_prog_oxm(0xffff_fffe)));
        assert_eq!(parse_match(r#"pcap_filter="tcp port 80""#), Ok(pcap_filter_oxm("tcp port 80")));
        assert_eq!(
            parse_match(r#"pcap_filter="host \"a\" or ip[2:2] = 5, \\x""#),
            Ok(pcap_filter_oxm(r#"host "a" or ip[2:2] = 5, \x"#))
        );
        assert_eq!(parse_match(r#"pcap_filter="é""#), Ok(pcap_filter_oxm("é")));
    }

    #[test]
    fn filters_in_flows() {
        let text = r#"priority=9,tcp,pcap_filter="tcp[13] & 2 != 0 and (port 80, or port 443)",filter_prog=7,in_port=1,actions=send_maps:7:conns:stats.v4,output:2"#;
        let f = parse_flow(text, Usage::Add).unwrap();
        let want = vec![
            Oxm::exact(FieldId::EthType, 0x0800),
            Oxm::exact(FieldId::IpProto, 6),
            pcap_filter_oxm("tcp[13] & 2 != 0 and (port 80, or port 443)"),
            filter_prog_oxm(7),
            Oxm::exact(FieldId::InPort, 1),
        ];
        assert_eq!(f.r#match.oxms, want);
        let sm = SendMaps { prog_id: 7, maps: vec!["conns".into(), "stats.v4".into()] };
        assert_eq!(
            f.instructions,
            vec![Instruction::ApplyActions(vec![
                sm.to_action(),
                Action::Output { port: 2, max_len: 0 }
            ])]
        );
        // Printed back in the same syntax (standard fields first, in
        // ovs-ofctl's order), and read back again.
        let printed = match_str(&f.r#match);
        assert_eq!(
            printed,
            r#"tcp,in_port=1,pcap_filter="tcp[13] & 2 != 0 and (port 80, or port 443)",filter_prog=7"#
        );
        assert_eq!(instructions(&f.instructions), "send_maps:7:conns:stats.v4,output:2");
        let again = format!("priority=9,{printed},actions={}", instructions(&f.instructions));
        // The same fields come back, in the printed order.
        let back = parse_flow(&again, Usage::Add).unwrap();
        assert_eq!(match_str(&back.r#match), printed);
        assert_eq!(back.r#match.oxms.len(), f.r#match.oxms.len());
        assert!(f.r#match.oxms.iter().all(|o| back.r#match.oxms.contains(o)));
        assert_eq!(back.instructions, f.instructions);
        // `actions=` inside the quotes is part of the expression.
        let f = parse_flow(r#"pcap_filter="x actions=drop",actions=drop"#, Usage::Add).unwrap();
        assert_eq!(f.r#match.oxms, vec![pcap_filter_oxm("x actions=drop")]);
        assert_eq!(f.instructions, vec![]);
        // The example in docs/EXPERIMENTER.md.
        let doc = r#"priority=10,tcp,pcap_filter="tcp[13] & 2 != 0",filter_prog=7,actions=send_maps:7:conns,output:2"#;
        assert!(parse_flow(doc, Usage::Add).is_ok());
        // Deleting by a filter; send_maps inside write_actions.
        assert!(parse_flow("filter_prog=3", Usage::Delete).is_ok());
        let ins = parse_instructions("write_actions(send_maps:1:a,output:1)").unwrap();
        assert_eq!(
            ins,
            vec![Instruction::WriteActions(vec![
                SendMaps { prog_id: 1, maps: vec!["a".into()] }.to_action(),
                Action::Output { port: 1, max_len: 0 }
            ])]
        );
    }

    /// `(input, the token the error must point at, a word of the message)`.
    fn assert_err(input: &str, token: &str, word: &str) {
        let e = parse_flow(input, Usage::Add).expect_err(input);
        assert_eq!(&input[e.start..e.end], token, "{input}: {}", e.render(input));
        assert!(e.msg.contains(word), "{input}: {:?} lacks {word:?}", e.msg);
    }

    #[test]
    fn match_errors_name_the_token() {
        let m = |s: &str| format!("{s},actions=drop");
        assert_err(&m("filter_prog=0"), "0", "reserved");
        assert_err(&m("filter_prog=0xffffffff"), "0xffffffff", "reserved");
        assert_err(&m("filter_prog=4294967296"), "4294967296", "out of range");
        assert_err(&m("filter_prog=x"), "x", "not a number");
        assert_err(&m("filter_prog="), "filter_prog=", "needs a value");
        assert_err(&m("filter_prog"), "filter_prog", "unknown keyword");
        assert_err(&m("pcap_filter=tcp"), "tcp", "double-quoted");
        assert_err(&m(r#"pcap_filter="""#), r#""""#, "empty");
        assert_err(&m(r#"pcap_filter="a\nb""#), r"\n", "unknown escape");
        assert_err(&m(r#"pcap_filter="tcp"x"#), "x", "after the closing quote");
        let long = format!(r#"pcap_filter="{}""#, "a".repeat(MAX_PCAP_FILTER + 1));
        assert_err(&m(&long), &long["pcap_filter=".len()..], "at most 251");
        let max = format!(r#"pcap_filter="{}""#, "a".repeat(MAX_PCAP_FILTER));
        assert!(parse_flow(&m(&max), Usage::Add).is_ok());
        assert_err(&m("pcap_filter=\"a\0b\""), "\"a\0b\"", "NUL");
        assert_err(r#"pcap_filter="tcp,actions=drop"#, r#""tcp,actions=drop"#, "unterminated");
        // Each field once.
        let input = "filter_prog=1,in_port=1,filter_prog=2,actions=drop";
        assert_err(input, "filter_prog=2", "twice");
        assert_err(
            r#"pcap_filter="a",pcap_filter="a",actions=drop"#,
            r#"pcap_filter="a""#,
            "twice",
        );
    }

    fn assert_action_err(input: &str, token: &str, word: &str) {
        let e = parse_actions(input).expect_err(input);
        assert_eq!(&input[e.start..e.end], token, "{input}: {}", e.render(input));
        assert!(e.msg.contains(word), "{input}: {:?} lacks {word:?}", e.msg);
    }

    #[test]
    fn action_errors_name_the_token() {
        let e = assert_action_err;
        e("send_maps", "send_maps", "expected send_maps:ID");
        e("send_maps:", "", "needs a program id");
        e("send_maps:7", "send_maps:7", "at least one map");
        e("send_maps:0:a", "0", "reserved");
        e("send_maps:7:", "", "must be 1 to 64");
        e("send_maps:7:a::b", "", "must be 1 to 64");
        e("send_maps:7:a-b", "a-b", "[A-Za-z0-9_.]");
        e(&format!("send_maps:7:{}", "m".repeat(65)), &"m".repeat(65), "1 to 64");
        e("send_maps:7:a:b:a", "a", "twice");
        let names: Vec<String> = (0..17).map(|i| format!("m{i}")).collect();
        e(&format!("send_maps:7:{}", names.join(":")), "m16", "at most 16");
        assert!(parse_action(&format!("send_maps:7:{}", names[..16].join(":"))).is_ok());
        assert_eq!(
            parse_action("send_maps:0x10:a_b.c:Z9"),
            Ok(SendMaps { prog_id: 16, maps: vec!["a_b.c".into(), "Z9".into()] })
        );
    }

    /// A map name: 1..=64 of `[A-Za-z0-9_.]`.
    fn arb_name() -> impl Strategy<Value = String> {
        "[A-Za-z0-9_.]{1,64}"
    }

    proptest! {
        /// Print, parse back: the same OXM, alone and in a flow.
        #[test]
        fn printed_matches_parse_back(
            id in 1u32..=0xffff_fffe,
            expr in "[ -~é\\\\\"\t]{1,80}",
        ) {
            let p = filter_prog_oxm(id);
            let text = crate::print::fields::filter_prog_match(id);
            prop_assert_eq!(parse_match(&text), Ok(p.clone()));
            prop_assert_eq!(filter_prog_from_oxm(&p), Some(Ok(id)));
            let q = pcap_filter_oxm(&expr);
            prop_assert_eq!(parse_match(&pcap_filter_match(&expr)), Ok(q.clone()));
            prop_assert_eq!(pcap_filter_from_oxm(&q), Some(Ok(expr)));
            let m = Match::new(vec![Oxm::exact(FieldId::InPort, 3), q, p]);
            let flow = format!("{},actions=drop", match_str(&m));
            prop_assert_eq!(parse_flow(&flow, Usage::Add).map(|f| f.r#match), Ok(m));
        }

        /// Print, parse back: the same action, also in a list.
        #[test]
        fn printed_actions_parse_back(
            id in 1u32..=0xffff_fffe,
            maps in proptest::collection::btree_set(arb_name(), 1..=16),
        ) {
            let s = SendMaps { prog_id: id, maps: maps.into_iter().collect() };
            prop_assert_eq!(parse_action(&send_maps_action(&s)), Ok(s.clone()));
            let list = vec![s.to_action(), Action::Output { port: 1, max_len: 0 }];
            prop_assert_eq!(parse_actions(&actions(&list)), Ok(list));
        }

        /// Text that parses is valid on the wire and prints back to itself.
        #[test]
        fn random_text_never_panics(text in "(filter_prog=|pcap_filter=|send_maps:)[ -~é]{0,40}") {
            if text.starts_with("send_maps") {
                if let Ok(s) = parse_action(&text) {
                    prop_assert_eq!(s.check(), Ok(()));
                    prop_assert_eq!(parse_action(&send_maps_action(&s)), Ok(s));
                }
            } else if let Ok(o) = parse_match(&text) {
                let printed = match_str(&Match::new(vec![o.clone()]));
                prop_assert_eq!(parse_match(&printed), Ok(o));
            }
        }
    }
}
