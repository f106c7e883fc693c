//! POF match fields and actions in text ([`crate::pof`] is the wire side).
//!
//! ```text
//! pof(POS,LEN)=VALUE[/MASK]                  match field (in a flow)
//! pof_set(POS,LEN,VALUE[/MASK])              set bits (where MASK is 1)
//! pof_modify(POS,LEN,INCREMENT)              add a signed increment
//! pof_add(POS,LEN,VALUE)                     insert LEN/8 bytes
//! pof_del(POS,LEN)                           remove LEN bits
//! pof_checksum(POS,LEN,START,CALC_LEN)       Internet checksum into a 16-bit field
//! pof_write_metadata(META_OFF,POS,LEN)       copy bits into the metadata
//! ```
//!
//! - `POS` is a bit offset: a bare decimal `N` from the frame's first bit,
//!   or `l2end+N`, `l2.5+N`, `l3+N`, `l4+N`, `payload+N` from a header
//!   ([`PofBase::keyword`]).
//! - `LEN`, `CALC_LEN` and `META_OFF` are decimal.
//! - `VALUE` and `MASK` are decimal or `0x` hex, right-aligned to the
//!   field, and may not be wider than it (leading zeros are fine). A
//!   `pof_add` value fills `LEN/8` bytes; in hex it may be as long as that
//!   (up to [`MAX_ADD_BYTES`] bytes), in decimal up to 128 bits.
//! - `INCREMENT` is a decimal or `0x` hex magnitude with an optional `-`;
//!   the magnitude must fit the field (`|INCREMENT| < 2^LEN`).
//!
//! Anything the wire decoder would refuse is refused here, with a message
//! naming the offending token; what is accepted always passes
//! [`PofMatch::validate`] / [`PofAction::validate`].
//!
//! The printer (`crate::print::fields::pof_match`,
//! `crate::print::actions::pof_action`) writes the canonical form: `N` or
//! `base+N`, decimal lengths, lowercase hex values, masks and inserted
//! bytes with the field's width in digits (`0x0806` for 16 bits), the
//! mask only when present, the increment in decimal. Reading that back
//! gives the same value.

use super::lex::Tok;
use super::{TextError, TextResult};
use crate::pof::{
    PofAction, PofBase, PofField, PofMatch, PofPos, CHECKSUM_FIELD_BITS, MAX_ADD_BYTES,
    MAX_BIT_OFFSET, MAX_FIELD_BITS, METADATA_BITS,
};

/// The action names, each with its argument list as the usage message.
pub const ACTIONS: &[(&str, &str)] = &[
    ("pof_set", "pof_set(POS,LEN,VALUE[/MASK])"),
    ("pof_modify", "pof_modify(POS,LEN,INCREMENT)"),
    ("pof_add", "pof_add(POS,LEN,VALUE)"),
    ("pof_del", "pof_del(POS,LEN)"),
    ("pof_checksum", "pof_checksum(POS,LEN,START,CALC_LEN)"),
    ("pof_write_metadata", "pof_write_metadata(META_OFF,POS,LEN)"),
];

/// Parse one match item `pof(POS,LEN)=VALUE[/MASK]`.
pub fn parse_match(text: &str) -> TextResult<PofMatch> {
    parse_match_item(Tok { text, start: 0 }.trim())
}

/// Parse one POF action, e.g. `pof_set(l3+64,8,64)`.
pub fn parse_action(text: &str) -> TextResult<PofAction> {
    let item = Tok { text, start: 0 }.trim();
    let name = item.text.split('(').next().unwrap_or("");
    parse_action_item(item, name)
}

/// Whether `name` is a POF action's name.
pub fn is_action(name: &str) -> bool {
    ACTIONS.iter().any(|(n, _)| *n == name)
}

/// Parse `pof(POS,LEN)=VALUE[/MASK]` (the whole flow item).
pub(crate) fn parse_match_item(item: Tok<'_>) -> TextResult<PofMatch> {
    const USAGE: &str = "pof(POS,LEN)=VALUE[/MASK]";
    let (key, value) = item.split_kv(&['=']);
    let Some(value) = value.filter(|v| !v.text.is_empty()) else {
        return Err(item.err(format!("`{}` needs a value: {USAGE}", key.text)));
    };
    let [pos_t, len_t] = call_args(key, "pof", USAGE)?;
    let field = parse_field(pos_t, len_t, MAX_FIELD_BITS)?;
    let (value, mask) = parse_value_mask(value, field)?;
    let m = PofMatch { field, value, mask };
    // Every rule above mirrors one of the decoder's; this catches a drift.
    m.validate()
        .map_err(|e| item.err(format!("`{}` would be refused by the switch ({e})", item.text)))?;
    Ok(m)
}

/// Parse the POF action `name(...)` (the whole item).
pub(crate) fn parse_action_item(item: Tok<'_>, name: &str) -> TextResult<PofAction> {
    let unknown = || item.err(format!("unknown action `{name}`"));
    let usage = ACTIONS.iter().find(|(n, _)| *n == name).map(|&(_, u)| u).ok_or_else(unknown)?;
    let a = match name {
        "pof_set" => {
            let [p, l, v] = call_args(item, name, usage)?;
            let field = parse_field(p, l, MAX_FIELD_BITS)?;
            let (value, mask) = parse_value_mask(v, field)?;
            PofAction::Set { field, value, mask }
        }
        "pof_modify" => {
            let [p, l, d] = call_args(item, name, usage)?;
            let field = parse_field(p, l, MAX_FIELD_BITS)?;
            PofAction::Modify { field, delta: parse_increment(d, field)? }
        }
        "pof_add" => {
            let [p, l, v] = call_args(item, name, usage)?;
            let pos = parse_pos(p)?;
            let len = parse_dec(l, "length")?;
            let max = 8 * MAX_ADD_BYTES as u128;
            if len == 0 || len % 8 != 0 || len > max {
                return Err(l.err(format!(
                    "pof_add: length `{}` must be a multiple of 8 from 8 to {max}",
                    l.text
                )));
            }
            PofAction::Add { pos, bytes: parse_bytes(v, len as usize / 8)? }
        }
        "pof_del" => {
            let [p, l] = call_args(item, name, usage)?;
            let pos = parse_pos(p)?;
            let len_bits = parse_range_len(l, "pof_del")?;
            check_fits(pos, len_bits, p, l)?;
            PofAction::Delete { pos, len_bits }
        }
        "pof_checksum" => {
            let [p, l, s, c] = call_args(item, name, usage)?;
            let field = parse_field(p, l, CHECKSUM_FIELD_BITS)?;
            if field.bit_len != CHECKSUM_FIELD_BITS {
                return Err(l.err(format!(
                    "pof_checksum: the checksum field is {CHECKSUM_FIELD_BITS} bits, not `{}`",
                    l.text
                )));
            }
            let start = parse_pos(s)?;
            let calc_len_bits = parse_range_len(c, "pof_checksum")?;
            check_fits(start, calc_len_bits, s, c)?;
            PofAction::Checksum { field, start, calc_len_bits }
        }
        "pof_write_metadata" => {
            let [m, p, l] = call_args(item, name, usage)?;
            let meta = parse_dec(m, "metadata offset")?;
            if meta >= u128::from(METADATA_BITS) {
                return Err(
                    m.err(format!("metadata offset `{}` must be below {METADATA_BITS}", m.text))
                );
            }
            let from = parse_field(p, l, u16::from(METADATA_BITS))?;
            if meta + u128::from(from.bit_len) > u128::from(METADATA_BITS) {
                return Err(span_err(
                    m,
                    l,
                    format!(
                        "metadata offset {meta} + length {} runs past the metadata's \
                         {METADATA_BITS} bits",
                        from.bit_len
                    ),
                ));
            }
            PofAction::WriteMetadata { meta_bit: meta as u8, from }
        }
        _ => return Err(unknown()),
    };
    a.validate()
        .map_err(|e| item.err(format!("`{}` would be refused by the switch ({e})", item.text)))?;
    Ok(a)
}

/// The `N` arguments of `name(a,b,...)`, trimmed.
fn call_args<'a, const N: usize>(
    item: Tok<'a>,
    name: &str,
    usage: &str,
) -> TextResult<[Tok<'a>; N]> {
    let usage_err = || item.err(format!("expected {usage}"));
    let inner = item
        .text
        .strip_prefix(name)
        .and_then(|r| r.strip_prefix('('))
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(usage_err)?;
    let inner = item.slice(name.len() + 1, name.len() + 1 + inner.len());
    let mut args = Vec::with_capacity(N);
    let mut from = 0;
    for (i, c) in inner.text.char_indices().chain([(inner.text.len(), ',')]) {
        if c == ',' {
            args.push(inner.slice(from, i).trim());
            from = i + 1;
        }
    }
    if let Some(empty) = args.iter().find(|a| a.text.is_empty()) {
        return Err(TextError::new(empty.start, empty.start, format!("empty argument: {usage}")));
    }
    <[Tok<'a>; N]>::try_from(args).map_err(|args| {
        item.err(format!("`{name}` takes {N} arguments, not {}: {usage}", args.len()))
    })
}

/// An error on the text from token `a` to the end of token `b`.
fn span_err(a: Tok<'_>, b: Tok<'_>, msg: impl Into<String>) -> TextError {
    TextError::new(a.start, b.end().max(a.end()), msg)
}

/// `N` or `BASE+N`.
fn parse_pos(t: Tok<'_>) -> TextResult<PofPos> {
    let (base, off) = match t.text.find('+') {
        None => (PofBase::Frame, t),
        Some(i) => {
            let name = t.slice(0, i);
            let Some(base) = PofBase::from_keyword(name.text) else {
                return Err(name.err(format!(
                    "unknown POF base `{}` (use l2end, l2.5, l3, l4, payload, or a bare offset)",
                    name.text
                )));
            };
            (base, t.slice(i + 1, t.text.len()))
        }
    };
    let bit_offset = parse_dec(off, "bit offset")?;
    if bit_offset > u128::from(MAX_BIT_OFFSET) {
        return Err(off.err(format!(
            "bit offset `{}` is past the largest frame (max {MAX_BIT_OFFSET})",
            off.text
        )));
    }
    Ok(PofPos { base, bit_offset: bit_offset as u32 })
}

/// A field `POS,LEN` of 1..=`max_bits` bits that lies inside a frame.
fn parse_field(p: Tok<'_>, l: Tok<'_>, max_bits: u16) -> TextResult<PofField> {
    let pos = parse_pos(p)?;
    let len = parse_dec(l, "length")?;
    if len == 0 || len > u128::from(max_bits) {
        return Err(l.err(format!("length `{}` must be 1 to {max_bits} bits", l.text)));
    }
    check_fits(pos, len as u32, p, l)?;
    Ok(PofField { pos, bit_len: len as u16 })
}

/// A non-zero multiple of 8 bits, at most [`MAX_BIT_OFFSET`].
fn parse_range_len(l: Tok<'_>, what: &str) -> TextResult<u32> {
    let len = parse_dec(l, "length")?;
    if len == 0 || len % 8 != 0 || len > u128::from(MAX_BIT_OFFSET) {
        return Err(l.err(format!(
            "{what}: length `{}` must be a non-zero multiple of 8, at most {MAX_BIT_OFFSET}",
            l.text
        )));
    }
    Ok(len as u32)
}

fn check_fits(pos: PofPos, len_bits: u32, p: Tok<'_>, l: Tok<'_>) -> TextResult<()> {
    if pos.fits(len_bits) {
        Ok(())
    } else {
        let end = u64::from(pos.bit_offset) + u64::from(len_bits);
        Err(span_err(
            p,
            l,
            format!(
                "bits {}..{end} cannot lie inside a frame (max bit offset {MAX_BIT_OFFSET})",
                pos.bit_offset
            ),
        ))
    }
}

/// Decimal digits only.
fn parse_dec(t: Tok<'_>, what: &str) -> TextResult<u128> {
    if t.text.is_empty() || !t.text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(t.err(format!("{what}: `{}` is not a decimal number", t.text)));
    }
    t.text.parse().map_err(|_| t.err(format!("{what}: `{}` is too large", t.text)))
}

/// The digits after `0x`, if the token is hex.
fn hex_digits<'a>(t: &Tok<'a>) -> Option<&'a str> {
    t.text.strip_prefix("0x").or_else(|| t.text.strip_prefix("0X"))
}

/// A decimal or `0x` hex number (digits only, no sign); `None` if it
/// needs more than 128 bits.
fn parse_wide(t: Tok<'_>, what: &str) -> TextResult<Option<u128>> {
    match hex_digits(&t) {
        Some(h) if !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
            let sig = h.trim_start_matches('0');
            if sig.is_empty() {
                Ok(Some(0))
            } else {
                Ok(u128::from_str_radix(sig, 16).ok())
            }
        }
        Some(_) => Err(t.err(format!("{what}: `{}` is not a hex number", t.text))),
        None => {
            if t.text.is_empty() || !t.text.bytes().all(|b| b.is_ascii_digit()) {
                return Err(t.err(format!("{what}: `{}` is not a decimal number", t.text)));
            }
            Ok(t.text.parse().ok())
        }
    }
}

/// `2^bits - 1` (all ones from 128 bits on).
fn ones(bits: u16) -> u128 {
    PofField { pos: PofPos { base: PofBase::Frame, bit_offset: 0 }, bit_len: bits }.max_value()
}

/// A decimal or `0x` hex number of at most `bits` bits.
fn parse_num(t: Tok<'_>, bits: u16, what: &str) -> TextResult<u128> {
    match parse_wide(t, what)? {
        Some(v) if v <= ones(bits) => Ok(v),
        _ => Err(t.err(format!("{what} `{}` is wider than the field's {bits} bits", t.text))),
    }
}

/// `VALUE[/MASK]` of `field`; the value may have no bits outside the mask.
fn parse_value_mask(t: Tok<'_>, field: PofField) -> TextResult<(u128, Option<u128>)> {
    let (vt, mt) = t.split_kv(&['/']);
    let value = parse_num(vt, field.bit_len, "value")?;
    let mask = mt.map(|mt| parse_num(mt, field.bit_len, "mask")).transpose()?;
    if let Some(m) = mask {
        if value & !m != 0 {
            return Err(t.err(format!("`{}`: the value has bits set outside the mask", t.text)));
        }
    }
    Ok((value, mask))
}

/// `[-]MAGNITUDE`, the magnitude below `2^LEN` (and within `i128`).
fn parse_increment(t: Tok<'_>, field: PofField) -> TextResult<i128> {
    let (neg, mag_t) = match t.text.strip_prefix('-') {
        Some(_) => (true, t.slice(1, t.text.len())),
        None => (false, t),
    };
    let len = field.bit_len;
    let mag = parse_wide(mag_t, "increment")?.filter(|&m| m <= ones(len)).ok_or_else(|| {
        t.err(format!(
            "increment `{}` does not fit the field's {len} bits (|increment| < 2^{len})",
            t.text
        ))
    })?;
    let delta = if neg { 0i128.checked_sub_unsigned(mag) } else { i128::try_from(mag).ok() };
    delta.ok_or_else(|| t.err(format!("increment `{}` is outside the 128-bit range", t.text)))
}

/// `pof_add`'s value as exactly `n` big-endian bytes.
fn parse_bytes(t: Tok<'_>, n: usize) -> TextResult<Vec<u8>> {
    let wide = || t.err(format!("value `{}` is wider than the field's {} bits", t.text, 8 * n));
    let Some(h) = hex_digits(&t) else {
        // Decimal: up to 128 bits.
        let v = parse_wide(t, "value")?.ok_or_else(|| {
            t.err(format!("value `{}` is too large for decimal; write it in hex", t.text))
        })?;
        let all = v.to_be_bytes();
        let sig = all.iter().position(|&b| b != 0).map_or(0, |i| all.len() - i);
        if sig > n {
            return Err(wide());
        }
        let mut out = vec![0u8; n];
        for (o, b) in out.iter_mut().rev().zip(all.iter().rev()) {
            *o = *b;
        }
        return Ok(out);
    };
    if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(t.err(format!("value: `{}` is not a hex number", t.text)));
    }
    let sig = h.trim_start_matches('0').as_bytes();
    if sig.len() > 2 * n {
        return Err(wide());
    }
    let nibble = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
    let mut out = vec![0u8; n];
    // Pairs of digits from the right; an odd one out is the high nibble.
    for (o, pair) in out.iter_mut().rev().zip(sig.rchunks(2)) {
        *o = pair.iter().fold(0u8, |a, &c| (a << 4) | nibble(c));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Action;
    use crate::instruction::Instruction;
    use crate::ofctl::{parse_actions, parse_flow, parse_group, parse_instructions, Usage};
    use crate::oxm::{FieldId, Match, Oxm};
    use crate::pof::{arb_pof_action, arb_pof_match};
    use crate::print::actions::{actions, group, instructions, pof_action};
    use crate::print::fields::{match_str, pof_match};
    use proptest::prelude::*;

    fn pos(base: PofBase, bit_offset: u32) -> PofPos {
        PofPos { base, bit_offset }
    }

    fn field(base: PofBase, bit_offset: u32, bit_len: u16) -> PofField {
        PofField { pos: pos(base, bit_offset), bit_len }
    }

    #[test]
    fn match_syntax() {
        assert_eq!(
            parse_match("pof(l3+72,8)=6"),
            Ok(PofMatch { field: field(PofBase::L3, 72, 8), value: 6, mask: None })
        );
        assert_eq!(
            parse_match("pof(96, 32)=0x0a000000/0xff000000"),
            Ok(PofMatch {
                field: field(PofBase::Frame, 96, 32),
                value: 0x0a00_0000,
                mask: Some(0xff00_0000)
            })
        );
        for (text, base) in [
            ("pof(l2end+0,1)=1", PofBase::L2End),
            ("pof(l2.5+0,1)=1", PofBase::L2_5),
            ("pof(l4+0,1)=1", PofBase::L4),
            ("pof(payload+0,1)=1", PofBase::Payload),
        ] {
            assert_eq!(parse_match(text).map(|m| m.field.pos.base), Ok(base), "{text}");
        }
        // Leading zeros are fine; 128-bit values in hex and decimal.
        assert_eq!(
            parse_match("pof(0,8)=0x000000000000000000000000000000000000ff").unwrap().value,
            255
        );
        assert_eq!(parse_match(&format!("pof(0,128)={}", u128::MAX)).unwrap().value, u128::MAX);
    }

    #[test]
    fn action_syntax() {
        let a = parse_actions(
            "pof_set(l3+64,8,0x40),pof_set(l4+0,16,0x50/0xfff0),pof_modify(l3+64,8,-1),\
             pof_add(l2end+0,32,0x81000005),pof_del(96,32),pof_checksum(l3+80,16,l3+0,160),\
             pof_write_metadata(48,l4+16,16),pof_add(0,24,5)",
        )
        .unwrap();
        let want = [
            PofAction::Set { field: field(PofBase::L3, 64, 8), value: 0x40, mask: None },
            PofAction::Set { field: field(PofBase::L4, 0, 16), value: 0x50, mask: Some(0xfff0) },
            PofAction::Modify { field: field(PofBase::L3, 64, 8), delta: -1 },
            PofAction::Add { pos: pos(PofBase::L2End, 0), bytes: vec![0x81, 0, 0, 5] },
            PofAction::Delete { pos: pos(PofBase::Frame, 96), len_bits: 32 },
            PofAction::Checksum {
                field: field(PofBase::L3, 80, 16),
                start: pos(PofBase::L3, 0),
                calc_len_bits: 160,
            },
            PofAction::WriteMetadata { meta_bit: 48, from: field(PofBase::L4, 16, 16) },
            PofAction::Add { pos: pos(PofBase::Frame, 0), bytes: vec![0, 0, 5] },
        ];
        assert_eq!(a, want.iter().map(PofAction::to_action).collect::<Vec<_>>());
        // Hex increments, odd-length hex byte strings.
        assert_eq!(
            parse_action("pof_modify(0,8,0xff)"),
            Ok(PofAction::Modify { field: field(PofBase::Frame, 0, 8), delta: 255 })
        );
        assert_eq!(
            parse_action("pof_modify(0,8,-0x10)"),
            Ok(PofAction::Modify { field: field(PofBase::Frame, 0, 8), delta: -16 })
        );
        assert_eq!(
            parse_action("pof_add(0,16,0xabc)"),
            Ok(PofAction::Add { pos: pos(PofBase::Frame, 0), bytes: vec![0x0a, 0xbc] })
        );
        let long = format!("pof_add(8,1024,0x{})", "ab".repeat(128));
        assert_eq!(
            parse_action(&long),
            Ok(PofAction::Add { pos: pos(PofBase::Frame, 8), bytes: vec![0xab; 128] })
        );
    }

    #[test]
    fn pof_in_flows_write_actions_and_buckets() {
        let text = "priority=5,ip,pof(l3+72,8)=6,pof(l4+16,16)=0x50/0xffff,in_port=1,\
                    actions=pof_set(l3+64,8,64),write_actions(pof_del(l2end+0,32),output:2),goto_table:1";
        let f = parse_flow(text, Usage::Add).unwrap();
        let m1 = PofMatch { field: field(PofBase::L3, 72, 8), value: 6, mask: None };
        let m2 = PofMatch { field: field(PofBase::L4, 16, 16), value: 0x50, mask: Some(0xffff) };
        assert_eq!(
            f.r#match.oxms,
            vec![
                Oxm::exact(FieldId::EthType, 0x0800),
                m1.to_oxm(),
                m2.to_oxm(),
                Oxm::exact(FieldId::InPort, 1),
            ]
        );
        let set = PofAction::Set { field: field(PofBase::L3, 64, 8), value: 64, mask: None };
        let del = PofAction::Delete { pos: pos(PofBase::L2End, 0), len_bits: 32 };
        assert_eq!(
            f.instructions,
            vec![
                Instruction::ApplyActions(vec![set.to_action()]),
                Instruction::WriteActions(vec![
                    del.to_action(),
                    Action::Output { port: 2, max_len: 0 }
                ]),
                Instruction::GotoTable(1),
            ]
        );
        // The printer writes it back in the same syntax (standard fields
        // first, in ovs-ofctl's order).
        assert_eq!(
            match_str(&f.r#match),
            "ip,in_port=1,pof(l3+72,8)=0x06,pof(l4+16,16)=0x0050/0xffff"
        );
        assert_eq!(
            instructions(&f.instructions),
            "pof_set(l3+64,8,0x40),write_actions(pof_del(l2end+0,32),output:2),goto_table:1"
        );
        // Groups: first bucket item, after actions=, and later items.
        let g = parse_group(
            "group_id=1,type=all,bucket=pof_modify(l3+64,8,-1),output:1,\
             bucket=actions=pof_add(l2end+0,16,0x8100),pof_set(0,1,1)",
        )
        .unwrap();
        let modify = PofAction::Modify { field: field(PofBase::L3, 64, 8), delta: -1 };
        let add = PofAction::Add { pos: pos(PofBase::L2End, 0), bytes: vec![0x81, 0] };
        let set1 = PofAction::Set { field: field(PofBase::Frame, 0, 1), value: 1, mask: None };
        assert_eq!(
            g.buckets[0].actions,
            vec![modify.to_action(), Action::Output { port: 1, max_len: 0 }]
        );
        assert_eq!(g.buckets[1].actions, vec![add.to_action(), set1.to_action()]);
        let printed = group(g.group_id, g.group_type.unwrap(), &g.buckets);
        assert_eq!(
            printed,
            "group_id=1,type=all,bucket=actions=pof_modify(l3+64,8,-1),output:1,\
             bucket=actions=pof_add(l2end+0,16,0x8100),pof_set(0,1,0x1)"
        );
        assert_eq!(parse_group(&printed).unwrap(), g);
        // Deleting flows by a POF field.
        assert!(parse_flow("pof(0,8)=1", Usage::Delete).is_ok());
    }

    /// `(input, the token the error must point at, a word of the message)`.
    fn assert_err(input: &str, token: &str, word: &str) {
        let e = parse_flow(input, Usage::Add).expect_err(input);
        assert_eq!(&input[e.start..e.end], token, "{input}: {}", e.render(input));
        assert!(e.msg.contains(word), "{input}: {:?} lacks {word:?}", e.msg);
    }

    #[test]
    fn match_errors_name_the_token() {
        let a = ",actions=drop";
        let m = |s: &str| format!("{s}{a}");
        assert_err(&m("pof(l3+0,0)=0"), "0", "1 to 128");
        assert_err(&m("pof(l3+0,129)=0"), "129", "1 to 128");
        assert_err(&m("pof(l3+524281,8)=0"), "524281", "past the largest frame");
        assert_err(&m("pof(l3+99999999999999999999999999,8)=0"), "99999999999999999999999999", "");
        assert_err(&m("pof(524273,8)=0"), "524273,8", "cannot lie inside a frame");
        assert!(parse_flow(&m("pof(524272,8)=0"), Usage::Add).is_ok());
        assert_err(&m("pof(l9+8,8)=0"), "l9", "unknown POF base");
        assert_err(&m("pof(+8,8)=0"), "", "unknown POF base");
        assert_err(&m("pof(l3+,8)=0"), "", "not a decimal");
        assert_err(&m("pof(0x10,8)=0"), "0x10", "not a decimal");
        assert_err(&m("pof(l3+8,-1)=0"), "-1", "not a decimal");
        assert_err(&m("pof(0,4)=0x10"), "0x10", "wider than the field's 4 bits");
        assert_err(&m("pof(0,4)=16"), "16", "wider");
        assert_err(
            &m("pof(0,128)=0x1ffffffffffffffffffffffffffffffff"),
            "0x1ffffffffffffffffffffffffffffffff",
            "wider",
        );
        assert_err(&m("pof(0,4)=1/0x1f"), "0x1f", "mask");
        assert_err(&m("pof(0,4)=3/1"), "3/1", "outside the mask");
        assert_err(&m("pof(0,4)=0xg"), "0xg", "not a hex number");
        assert_err(&m("pof(0,4)=0x"), "0x", "not a hex number");
        assert_err(&m("pof(0,4)=+1"), "+1", "not a decimal");
        assert_err(&m("pof(0,4)"), "pof(0,4)", "needs a value");
        assert_err(&m("pof(0,4)="), "pof(0,4)=", "needs a value");
        assert_err(&m("pof(0)=1"), "pof(0)", "takes 2 arguments");
        assert_err(&m("pof(0,4,5)=1"), "pof(0,4,5)", "takes 2 arguments");
        assert_err(&m("pof(0,)=1"), "", "empty argument");
        assert_err(&m("pof[0]=1"), "pof[0]", "unknown field");
        // The same field twice: the second one is named.
        let input = "pof(l3+8,8)=1,pof(l3+16,8)=2,pof(l3+8,8)=3,actions=drop";
        let e = parse_flow(input, Usage::Add).unwrap_err();
        assert_eq!(e.start, 29, "{}", e.render(input));
        assert_eq!(&input[e.start..e.end], "pof(l3+8,8)=3");
        assert!(e.msg.contains("twice"), "{}", e.msg);
        // Same offset and length from another base is another field.
        assert!(parse_flow("pof(l3+8,8)=1,pof(l4+8,8)=1,actions=drop", Usage::Add).is_ok());
    }

    fn assert_action_err(input: &str, token: &str, word: &str) {
        let e = parse_actions(input).expect_err(input);
        assert_eq!(&input[e.start..e.end], token, "{input}: {}", e.render(input));
        assert!(e.msg.contains(word), "{input}: {:?} lacks {word:?}", e.msg);
    }

    #[test]
    fn action_errors_name_the_token() {
        let e = assert_action_err;
        // Set.
        e("pof_set(0,0,1)", "0", "1 to 128");
        e("pof_set(0,129,1)", "129", "1 to 128");
        e("pof_set(524281,1,1)", "524281", "past the largest frame");
        e("pof_set(524280,1,1)", "524280,1", "cannot lie inside a frame");
        e("pof_set(0,8,256)", "256", "wider");
        e("pof_set(0,8,1/0x100)", "0x100", "wider");
        e("pof_set(0,8,3/1)", "3/1", "outside the mask");
        e("pof_set(0,8)", "pof_set(0,8)", "takes 3 arguments");
        e("pof_set:0,8,1", "pof_set:0", "expected pof_set(");
        e("pof_set(0,8,1", "pof_set(0,8,1", "unbalanced");
        e("pof_set(x+0,8,1)", "x", "unknown POF base");
        // Modify.
        e("pof_modify(0,8,256)", "256", "does not fit");
        e("pof_modify(0,8,-256)", "-256", "does not fit");
        e("pof_modify(0,8,--1)", "-1", "not a decimal");
        e("pof_modify(0,8,-)", "", "not a decimal");
        e("pof_modify(0,0,1)", "0", "1 to 128");
        e(
            "pof_modify(0,128,170141183460469231731687303715884105728)",
            "170141183460469231731687303715884105728",
            "128-bit range",
        );
        assert!(parse_actions("pof_modify(0,128,-170141183460469231731687303715884105728)").is_ok());
        // Add.
        e("pof_add(0,12,1)", "12", "multiple of 8");
        e("pof_add(0,0,1)", "0", "multiple of 8");
        e("pof_add(0,1032,1)", "1032", "multiple of 8");
        e("pof_add(0,8,0x100)", "0x100", "wider than the field's 8 bits");
        e("pof_add(0,8,256)", "256", "wider than the field's 8 bits");
        e("pof_add(0,8,0xz)", "0xz", "not a hex number");
        e(
            "pof_add(0,1024,340282366920938463463374607431768211456)",
            "340282366920938463463374607431768211456",
            "write it in hex",
        );
        e("pof_add(524281,8,1)", "524281", "past the largest frame");
        assert!(parse_actions("pof_add(524280,8,1)").is_ok());
        // Delete.
        e("pof_del(0,0)", "0", "non-zero multiple of 8");
        e("pof_del(0,7)", "7", "non-zero multiple of 8");
        e("pof_del(0,524288)", "524288", "non-zero multiple of 8");
        e("pof_del(8,524280)", "8,524280", "cannot lie inside a frame");
        // Checksum.
        e("pof_checksum(l3+80,8,l3+0,160)", "8", "16 bits");
        e("pof_checksum(l3+80,32,l3+0,160)", "32", "1 to 16");
        e("pof_checksum(l3+80,16,l3+0,0)", "0", "non-zero multiple of 8");
        e("pof_checksum(l3+80,16,l3+0,12)", "12", "non-zero multiple of 8");
        e("pof_checksum(l3+80,16,l3+524280,8)", "l3+524280,8", "cannot lie inside a frame");
        e("pof_checksum(l3+80,16,l9+0,8)", "l9", "unknown POF base");
        // Write metadata.
        e("pof_write_metadata(64,0,1)", "64", "below 64");
        e("pof_write_metadata(60,0,8)", "60,0,8", "past the metadata");
        e("pof_write_metadata(0,0,65)", "65", "1 to 64");
        e("pof_write_metadata(0,0,0)", "0", "1 to 64");
        // Unknown names stay unknown.
        e("pof_frob(0,1)", "pof_frob", "unknown action");
    }

    /// Anything the text parser accepts, the wire decoder accepts too.
    #[test]
    fn accepted_text_is_valid_on_the_wire() {
        for text in [
            "pof_set(524279,1,1)",
            "pof_modify(0,1,-1)",
            "pof_add(0,1024,0)",
            "pof_del(0,524280)",
            "pof_checksum(524264,16,0,524280)",
            "pof_write_metadata(63,l4+0,1)",
        ] {
            let a = parse_action(text).unwrap();
            assert_eq!(PofAction::from_action(&a.to_action()), Some(Ok(a)), "{text}");
        }
    }

    proptest! {
        /// Print, parse back: the same match field (alone and in a flow).
        #[test]
        fn printed_matches_parse_back(m in arb_pof_match()) {
            let text = pof_match(&m);
            prop_assert_eq!(parse_match(&text), Ok(m));
            let oxms = Match::new(vec![Oxm::exact(FieldId::InPort, 3), m.to_oxm()]);
            let flow = format!("{},actions=drop", match_str(&oxms));
            prop_assert_eq!(parse_flow(&flow, Usage::Add).map(|f| f.r#match), Ok(oxms));
        }

        /// Print, parse back: the same action, also inside write_actions.
        #[test]
        fn printed_actions_parse_back(a in arb_pof_action()) {
            let text = pof_action(&a);
            prop_assert_eq!(parse_action(&text), Ok(a.clone()));
            let list = vec![a.to_action(), Action::Output { port: 1, max_len: 0 }];
            prop_assert_eq!(parse_actions(&actions(&list)), Ok(list.clone()));
            let ins = vec![Instruction::WriteActions(list)];
            prop_assert_eq!(parse_instructions(&instructions(&ins)), Ok(ins));
        }

        /// Text that parses is valid on the wire and prints back to the
        /// canonical form of itself.
        #[test]
        fn random_text_never_panics(
            name in proptest::sample::select(vec!["pof_set", "pof_modify", "pof_add", "pof_del", "pof_checksum", "pof_write_metadata"]),
            args in proptest::collection::vec(
                prop_oneof![
                    "[0-9]{1,7}",
                    "(l2end|l2\\.5|l3|l4|payload|x)\\+[0-9]{1,7}",
                    "-?0x[0-9a-f]{0,34}",
                    "[0-9]{1,3}/[0-9]{1,3}",
                ],
                0..5,
            ),
        ) {
            let text = format!("{name}({})", args.join(","));
            if let Ok(a) = parse_action(&text) {
                prop_assert_eq!(a.validate(), Ok(()));
                prop_assert_eq!(parse_action(&pof_action(&a)), Ok(a));
            }
        }
    }
}
