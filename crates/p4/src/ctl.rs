//! Table, counter and register management in simple_switch_CLI's
//! vocabulary (bmv2's runtime CLI), over any engine that implements
//! [`Manage`]: what `sluice p4 ctl` sends and the switch executes.
//!
//! ```text
//! table_add T ACTION KEY... => PARAM... [PRIORITY]
//! table_set_default T ACTION [PARAM...]
//! table_delete T HANDLE
//! table_clear T
//! table_dump T
//! table_num_entries T
//! counter_read C INDEX
//! register_read R [INDEX]
//! register_write R INDEX VALUE
//! mc_mgrp_create G
//! mc_node_create RID PORT...
//! mc_node_update NODE PORT...
//! mc_node_associate G NODE
//! ```
//!
//! - Keys are positional, one per key element in declaration order:
//!   exact `V`; lpm `V/LEN`; ternary `V&&&MASK`; range `LO->HI`;
//!   optional `V`; `*` leaves a non-exact element out (matches anything).
//! - Values: decimal, `0x` hex, `0b` binary; `a.b.c.d` for 32-bit fields,
//!   `aa:bb:cc:dd:ee:ff` for 48-bit ones, IPv6 text for 128-bit ones. A
//!   value wider than its field is an error naming the token.
//! - Priorities are bmv2's: required when a key is ternary, range or
//!   optional, and a **smaller** number wins (the engine's priorities are
//!   larger-wins, as in STF: `PRIORITY` is stored as `u32::MAX -
//!   PRIORITY` and shown back as given).
//! - Names resolve by suffix (`ipv4_lpm` finds `ingress.ipv4_lpm`).
//!
//! - Multicast nodes get handles 0, 1, 2... in creation order; a
//!   [`Session`] holds them (one per switch).
//!
//! Every answer is text; every refusal names the command and the token
//! or name that was wrong.

use std::fmt::Write;

use crate::ast::BigValue;
use crate::interp::resolve_suffix;
use crate::mcast::Multicast;
use crate::target::{CtlResult, EntrySpec, KeyMatch, Manage, MatchKind, TableInfo};

/// The commands, for help texts.
pub const COMMANDS: &[&str] = &[
    "table_add T ACTION KEY... => PARAM... [PRIORITY]",
    "table_set_default T ACTION [PARAM...]",
    "table_delete T HANDLE",
    "table_clear T",
    "table_dump T",
    "table_num_entries T",
    "counter_read C INDEX",
    "register_read R [INDEX]",
    "register_write R INDEX VALUE",
    "mc_mgrp_create G",
    "mc_node_create RID PORT...",
    "mc_node_update NODE PORT...",
    "mc_node_associate G NODE",
];

/// What outlives one command: the multicast nodes and groups.
#[derive(Debug, Default)]
pub struct Session {
    mc: Multicast,
}

fn numbers(args: &[&str], min: usize, usage: &str) -> CtlResult<Vec<u32>> {
    if args.len() < min {
        return Err(format!("expected {usage}"));
    }
    args.iter().map(|a| a.parse::<u32>().map_err(|_| format!("`{a}` is not a number"))).collect()
}

impl Session {
    /// Runs one command line; the text to print.
    pub fn execute(&mut self, t: &mut dyn Manage, line: &str) -> CtlResult<String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let r = match words.split_first() {
            Some((&"mc_mgrp_create", a)) => numbers(a, 1, "mc_mgrp_create G").and_then(|n| {
                if n.len() != 1 {
                    return Err("expected mc_mgrp_create G".into());
                }
                self.mc.create_group(n[0])?;
                Ok(format!("Creating multicast group {}\n", n[0]))
            }),
            Some((&"mc_node_create", a)) => numbers(a, 1, "mc_node_create RID PORT...").map(|n| {
                let h = self.mc.create_node(n[0], &n[1..]);
                format!("node was created with handle {h}\n")
            }),
            Some((&"mc_node_update", a)) => numbers(a, 1, "mc_node_update NODE PORT...")
                .and_then(|n| self.mc.update_node(t, n[0], &n[1..]).map(|_| String::new())),
            Some((&"mc_node_associate", a)) => {
                numbers(a, 2, "mc_node_associate G NODE").and_then(|n| {
                    if n.len() != 2 {
                        return Err("expected mc_node_associate G NODE".into());
                    }
                    self.mc.associate(t, n[0], n[1])?;
                    Ok(format!("Associating node {} to multicast group {}\n", n[1], n[0]))
                })
            }
            _ => return execute(t, line),
        };
        r.map_err(|e| match words.first() {
            Some(cmd) if !e.starts_with(cmd) => format!("{cmd}: {e}"),
            _ => e,
        })
    }
}

/// Runs one command line that needs no [`Session`] (every command but
/// the multicast ones); the text to print.
pub fn execute(t: &mut dyn Manage, line: &str) -> CtlResult<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some((&cmd, args)) = words.split_first() else {
        return Err("empty command".into());
    };
    let r = match cmd {
        "table_add" => table_add(t, args),
        "table_set_default" => table_set_default(t, args),
        "table_delete" => table_delete(t, args),
        "table_clear" => table_clear(t, args),
        "table_dump" => table_dump(t, args),
        "table_num_entries" => {
            let [table] = exact_args(args, "T")?;
            let info = table_info(t, table)?;
            Ok(format!("{}\n", t.dump(&info.name)?.0.len()))
        }
        "counter_read" => counter_read(t, args),
        "register_read" => register_read(t, args),
        "register_write" => register_write(t, args),
        c if c.starts_with("mc_") && COMMANDS.iter().any(|u| u.split(' ').next() == Some(c)) => {
            Err("multicast commands need a `ctl::Session`".into())
        }
        other => {
            return Err(format!(
                "unknown command `{other}`; the commands are:\n  {}",
                COMMANDS.join("\n  ")
            ))
        }
    };
    r.map_err(|e| format!("{cmd}: {e}"))
}

fn exact_args<'a, const N: usize>(args: &[&'a str], usage: &str) -> CtlResult<[&'a str; N]> {
    args.try_into().map_err(|_| format!("expected {usage}, got {} words", args.len()))
}

fn table_info(t: &dyn Manage, name: &str) -> CtlResult<TableInfo> {
    let tables = t.tables();
    let i =
        resolve_suffix(name, tables.iter().enumerate().map(|(i, x)| (x.name.as_str(), i)), "table")
            .map_err(|e| {
                let names: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
                format!("{e} (the tables: {})", names.join(", "))
            })?;
    Ok(tables[i].clone())
}

/// The action's full name and its parameters.
fn action_of<'a>(info: &'a TableInfo, name: &str) -> CtlResult<&'a crate::target::ActionInfo> {
    let i = resolve_suffix(
        name,
        info.actions.iter().enumerate().map(|(i, a)| (a.name.as_str(), i)),
        &format!("action of table `{}`", info.name),
    )?;
    Ok(&info.actions[i])
}

fn params(a: &crate::target::ActionInfo, toks: &[&str]) -> CtlResult<Vec<(String, BigValue)>> {
    if toks.len() != a.params.len() {
        return Err(format!(
            "action `{}` takes {} parameter(s) ({}), got {}",
            a.name,
            a.params.len(),
            a.params.iter().map(|(n, w)| format!("{n}: bit<{w}>")).collect::<Vec<_>>().join(", "),
            toks.len()
        ));
    }
    a.params
        .iter()
        .zip(toks)
        .map(|((n, w), tok)| {
            parse_value(tok, *w)
                .map(|v| (n.clone(), v))
                .map_err(|e| format!("parameter `{n}`: {e}"))
        })
        .collect()
}

fn table_add(t: &mut dyn Manage, args: &[&str]) -> CtlResult<String> {
    let usage = "table_add T ACTION KEY... => PARAM... [PRIORITY]";
    let (Some(&table), Some(&action)) = (args.first(), args.get(1)) else {
        return Err(format!("expected {usage}"));
    };
    let info = table_info(t, table)?;
    if info.const_entries {
        return Err(format!("table `{}` has `const entries`", info.name));
    }
    let a = action_of(&info, action)?;
    let rest = &args[2..];
    let arrow = rest.iter().position(|w| *w == "=>");
    let (key_toks, after) = match arrow {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    if key_toks.len() != info.keys.len() {
        return Err(format!(
            "table `{}` has {} key element(s) ({}), got {}{}",
            info.name,
            info.keys.len(),
            info.keys
                .iter()
                .map(|k| format!("{}: {} bit<{}>", k.name, k.kind.name(), k.width))
                .collect::<Vec<_>>()
                .join(", "),
            key_toks.len(),
            if arrow.is_none() { " (no `=>` before the parameters)" } else { "" }
        ));
    }
    let mut keys = Vec::new();
    for (k, tok) in info.keys.iter().zip(key_toks) {
        let m = parse_key(k.kind, k.width, tok)
            .map_err(|e| format!("key `{}` ({} bit<{}>): {e}", k.name, k.kind.name(), k.width))?;
        keys.push((k.name.clone(), m));
    }
    let (param_toks, priority) = if info.needs_priority() {
        let split = after.split_last().filter(|_| after.len() != a.params.len());
        let Some((last, ps)) = split else {
            return Err(format!(
                "table `{}` has a ternary, range or optional key: give a priority after the \
                 parameters (smaller wins)",
                info.name
            ));
        };
        let p: u32 = last
            .parse()
            .map_err(|_| format!("priority `{last}` is not a number from 0 to {}", u32::MAX))?;
        (ps, Some(u64::from(u32::MAX - p)))
    } else {
        (after, None)
    };
    let args = params(a, param_toks)?;
    let spec = EntrySpec { table: info.name.clone(), keys, action: a.name.clone(), args, priority };
    let h = t.add_entry(&spec)?;
    Ok(format!("Entry has been added with handle {h}\n"))
}

fn table_set_default(t: &mut dyn Manage, args: &[&str]) -> CtlResult<String> {
    let (Some(&table), Some(&action)) = (args.first(), args.get(1)) else {
        return Err("expected table_set_default T ACTION [PARAM...]".into());
    };
    let info = table_info(t, table)?;
    let a = action_of(&info, action)?;
    let ps = params(a, &args[2..])?;
    t.set_default(&info.name, &a.name, &ps)?;
    Ok(String::new())
}

fn table_delete(t: &mut dyn Manage, args: &[&str]) -> CtlResult<String> {
    let [table, handle] = exact_args(args, "T HANDLE")?;
    let info = table_info(t, table)?;
    let h: u64 = handle.parse().map_err(|_| format!("handle `{handle}` is not a number"))?;
    t.delete_entry(&info.name, h)?;
    Ok(String::new())
}

fn table_clear(t: &mut dyn Manage, args: &[&str]) -> CtlResult<String> {
    let [table] = exact_args(args, "T")?;
    let info = table_info(t, table)?;
    if info.const_entries {
        return Err(format!("table `{}` has `const entries`", info.name));
    }
    for e in t.dump(&info.name)?.0 {
        t.delete_entry(&info.name, e.handle)?;
    }
    Ok(String::new())
}

fn hex(v: &BigValue) -> String {
    let mut s = String::new();
    for (i, limb) in v.0.iter().rev().enumerate() {
        if i == 0 {
            let _ = write!(s, "{limb:x}");
        } else {
            let _ = write!(s, "{limb:016x}");
        }
    }
    if s.is_empty() {
        s.push('0');
    }
    format!("0x{s}")
}

fn key_text(m: &KeyMatch) -> String {
    match m {
        KeyMatch::Exact(v) => hex(v),
        KeyMatch::Ternary { value, mask } => format!("{}&&&{}", hex(value), hex(mask)),
        KeyMatch::Lpm { value, prefix_len } => format!("{}/{prefix_len}", hex(value)),
        KeyMatch::Range { lo, hi } => format!("{}->{}", hex(lo), hex(hi)),
        KeyMatch::Any => "*".into(),
    }
}

fn call_text(action: &str, args: &[(String, BigValue)]) -> String {
    let a: Vec<String> = args.iter().map(|(n, v)| format!("{n}={}", hex(v))).collect();
    format!("{action}({})", a.join(", "))
}

fn table_dump(t: &mut dyn Manage, args: &[&str]) -> CtlResult<String> {
    let [table] = exact_args(args, "T")?;
    let info = table_info(t, table)?;
    let (entries, (def, def_args)) = t.dump(&info.name)?;
    let mut s = format!("table {}: {} entries\n", info.name, entries.len());
    for e in &entries {
        let keys: Vec<String> =
            e.keys.iter().map(|(n, m)| format!("{n}={}", key_text(m))).collect();
        let _ = write!(s, "handle {}: {}", e.handle, keys.join(" "));
        if let Some(p) = e.priority {
            // Back to the CLI's smaller-wins number when it came from one.
            match u32::try_from(p) {
                Ok(p) => {
                    let _ = write!(s, " priority {}", u32::MAX - p);
                }
                Err(_) => {
                    let _ = write!(s, " priority (engine) {p}");
                }
            }
        }
        let _ = writeln!(s, " => {}", call_text(&e.action, &e.args));
    }
    let _ = writeln!(s, "default: {}", call_text(&def, &def_args));
    Ok(s)
}

fn index(tok: &str, n: usize, what: &str) -> CtlResult<usize> {
    let i: usize = tok.parse().map_err(|_| format!("index `{tok}` is not a number"))?;
    if i >= n {
        return Err(format!("index {i} is outside {what} of {n} cells"));
    }
    Ok(i)
}

fn counter_read(t: &mut dyn Manage, args: &[&str]) -> CtlResult<String> {
    let [name, idx] = exact_args(args, "C INDEX")?;
    let (full, cells) = t.counter_cells(name)?;
    let i = index(idx, cells.len(), &format!("counter `{full}`"))?;
    let (p, b) = cells[i];
    Ok(format!("{full}[{i}]= packets={p} bytes={b}\n"))
}

fn register_read(t: &mut dyn Manage, args: &[&str]) -> CtlResult<String> {
    let (name, idx) = match args {
        [n] => (*n, None),
        [n, i] => (*n, Some(*i)),
        _ => return Err("expected register_read R [INDEX]".into()),
    };
    let (full, _, cells) = t.register_cells(name)?;
    Ok(match idx {
        Some(tok) => {
            let i = index(tok, cells.len(), &format!("register `{full}`"))?;
            format!("{full}[{i}]= {}\n", hex(&cells[i]))
        }
        None => format!("{full}= {}\n", cells.iter().map(hex).collect::<Vec<_>>().join(", ")),
    })
}

fn register_write(t: &mut dyn Manage, args: &[&str]) -> CtlResult<String> {
    let [name, idx, value] = exact_args(args, "R INDEX VALUE")?;
    let (full, width, cells) = t.register_cells(name)?;
    let i = index(idx, cells.len(), &format!("register `{full}`"))?;
    let v = parse_value(value, width)?;
    t.register_write(&full, i, &v)?;
    Ok(String::new())
}

/// One key token for an element of `kind` and `width`.
pub fn parse_key(kind: MatchKind, width: u32, tok: &str) -> CtlResult<KeyMatch> {
    if tok == "*" {
        return match kind {
            MatchKind::Exact => Err("an exact key cannot be `*`".into()),
            _ => Ok(KeyMatch::Any),
        };
    }
    match kind {
        MatchKind::Exact | MatchKind::Optional => Ok(KeyMatch::Exact(parse_value(tok, width)?)),
        MatchKind::Lpm => {
            let (v, l) =
                tok.split_once('/').ok_or_else(|| format!("`{tok}` is not VALUE/PREFIX_LENGTH"))?;
            let prefix_len: u32 =
                l.parse().map_err(|_| format!("prefix length `{l}` is not a number"))?;
            if prefix_len > width {
                return Err(format!(
                    "prefix length {prefix_len} is longer than the field's {width} bits"
                ));
            }
            Ok(KeyMatch::Lpm { value: parse_value(v, width)?, prefix_len })
        }
        MatchKind::Ternary => {
            let (v, m) =
                tok.split_once("&&&").ok_or_else(|| format!("`{tok}` is not VALUE&&&MASK"))?;
            Ok(KeyMatch::Ternary { value: parse_value(v, width)?, mask: parse_value(m, width)? })
        }
        MatchKind::Range => {
            let (lo, hi) =
                tok.split_once("->").ok_or_else(|| format!("`{tok}` is not LOW->HIGH"))?;
            let (lo, hi) = (parse_value(lo, width)?, parse_value(hi, width)?);
            if cmp_big(&lo, &hi) == std::cmp::Ordering::Greater {
                return Err(format!("range `{tok}` is empty (its low end is above its high end)"));
            }
            Ok(KeyMatch::Range { lo, hi })
        }
    }
}

fn cmp_big(a: &BigValue, b: &BigValue) -> std::cmp::Ordering {
    a.0.len().cmp(&b.0.len()).then_with(|| a.0.iter().rev().cmp(b.0.iter().rev()))
}

/// A value token for a field of `width` bits.
pub fn parse_value(tok: &str, width: u32) -> CtlResult<BigValue> {
    let v = if width == 32 && tok.contains('.') {
        let a: std::net::Ipv4Addr =
            tok.parse().map_err(|_| format!("`{tok}` is not an IPv4 address"))?;
        BigValue::from_u128(u128::from(u32::from(a)))
    } else if width == 128 && tok.contains(':') {
        let a: std::net::Ipv6Addr =
            tok.parse().map_err(|_| format!("`{tok}` is not an IPv6 address"))?;
        BigValue::from_u128(u128::from(a))
    } else if width == 48 && tok.contains(':') {
        let parts: Vec<&str> = tok.split(':').collect();
        if parts.len() != 6 {
            return Err(format!("`{tok}` is not a MAC address (six bytes)"));
        }
        let mut x = 0u128;
        for p in parts {
            let b = u8::from_str_radix(p, 16)
                .map_err(|_| format!("`{tok}` is not a MAC address (byte `{p}`)"))?;
            x = (x << 8) | u128::from(b);
        }
        BigValue::from_u128(x)
    } else {
        // The STF runner's number syntax (decimal, 0x, 0b) with `_`
        // separators allowed; no `*` nibbles: a key that matches anything
        // is a whole `*`.
        let n = crate::stf::parse_number(&tok.replace('_', ""))
            .map_err(|_| format!("`{tok}` is not a number"))?;
        if !n.stars.is_zero() {
            return Err(format!("`{tok}` is not a number"));
        }
        n.value
    };
    if crate::stf::big::bit_len(&v.0) > width {
        return Err(format!("`{tok}` does not fit in {width} bits"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_of_every_syntax() {
        let v = |t: &str, w: u32| parse_value(t, w).map(|b| b.to_u128().unwrap_or(u128::MAX));
        assert_eq!(v("10.0.1.2", 32), Ok(0x0a00_0102));
        assert_eq!(v("00:11:22:aa:bb:cc", 48), Ok(0x0011_22aa_bbcc));
        assert_eq!(v("2001:db8::1", 128), Ok(0x2001_0db8 << 96 | 1));
        assert_eq!(v("0x1F", 8), Ok(31));
        assert_eq!(v("0b101", 3), Ok(5));
        assert_eq!(v("65535", 16), Ok(65535));
        assert!(v("65536", 16).unwrap_err().contains("does not fit in 16 bits"));
        assert!(v("10.0.1", 32).unwrap_err().contains("not an IPv4 address"));
        assert!(v("12z", 16).unwrap_err().contains("`12z` is not a number"));
        let big = parse_value("0x1_0000_0000_0000_0000_0000", 96).unwrap();
        assert_eq!(big.0, vec![0, 0x1_0000]);
        let dec = parse_value("18446744073709551616", 65).unwrap();
        assert_eq!(dec.0, vec![0, 1]);
    }

    #[test]
    fn keys_of_every_kind() {
        assert_eq!(
            parse_key(MatchKind::Lpm, 32, "10.0.0.0/8"),
            Ok(KeyMatch::Lpm { value: BigValue::from_u128(0x0a00_0000), prefix_len: 8 })
        );
        assert!(parse_key(MatchKind::Lpm, 32, "10.0.0.0/33").unwrap_err().contains("33"));
        assert_eq!(
            parse_key(MatchKind::Ternary, 16, "0x800&&&0xff00"),
            Ok(KeyMatch::Ternary {
                value: BigValue::from_u128(0x800),
                mask: BigValue::from_u128(0xff00)
            })
        );
        assert_eq!(
            parse_key(MatchKind::Range, 16, "80->90"),
            Ok(KeyMatch::Range { lo: BigValue::from_u128(80), hi: BigValue::from_u128(90) })
        );
        assert!(parse_key(MatchKind::Range, 16, "90->80").unwrap_err().contains("empty"));
        assert_eq!(parse_key(MatchKind::Ternary, 16, "*"), Ok(KeyMatch::Any));
        assert!(parse_key(MatchKind::Exact, 16, "*").is_err());
    }
}
