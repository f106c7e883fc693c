//! p4c's STF ("simple test framework") scripts, run against any
//! [`Target`].
//!
//! An STF script configures tables, sends packets and says which packets
//! must come out:
//!
//! ```text
//! # comment
//! add ipv4_lpm 10 hdr.ipv4.dstAddr:0x0a01**** set_port(port:2)
//! setdefault ipv4_lpm drop()
//! packet 0 000102030405 ...
//! expect 2 000102030405 ** ** $
//! ```
//!
//! The semantics are those of p4c's bmv2 runner (`backends/bmv2/bmv2stf.py`
//! with `tools/stf/stf_parser.py` and `tools/testutils.py`):
//!
//! - `add TABLE [PRIO] KEY:VALUE ... ACTION(PARAM:VALUE, ...) [= ID]`. PRIO
//!   is a decimal number right after the table name (a key is always
//!   `NAME:VALUE`, and names never start with a digit); a larger PRIO wins.
//!   p4c's runner has no meaning for a ternary entry without a PRIO (it
//!   fails building the CLI command), so sluice passes `priority: None` and
//!   the target's rule applies: earlier entries win. `NAME$N` in a key
//!   name is p4c's spelling of `NAME[N]`.
//! - Values: decimal, `0x` hex and `0b` binary; `*` digits (four bits in
//!   hex, one in binary) are "don't care": such a value is a ternary
//!   `value &&& mask`. `VALUE/LEN` is an LPM prefix. STF has no range
//!   syntax. The runner does not know the key kinds: a plain number is
//!   [`KeyMatch::Exact`], a starred one [`KeyMatch::Ternary`], and the
//!   target reads them for the kind the key has.
//! - `packet PORT HEX...` sends a packet (hex may be split by blanks);
//!   `expect PORT HEX... [$]` expects one: `*` is any nibble, `$` demands
//!   the exact length, otherwise the expected bytes are a prefix. `expect
//!   PORT` alone allows any packets on that port.
//! - Expectations are per port and in order per port, and are checked
//!   when the script ends, not where they are written (the corpus often
//!   writes `expect` before its `packet`). Every packet sent to a port the
//!   script mentions (in a `packet` or `expect`) must be expected: bmv2
//!   only has those interfaces, so packets sent anywhere else are not seen
//!   and not checked (they are listed in [`Report::notes`]).
//! - `wait` is a no-op for a synchronous target (a `packet` is processed
//!   when it is read); `no_packet` too: any packet nobody expects fails
//!   the test anyway.
//! - `remove all` removes every entry added ([`Target::remove_all`]).
//! - `mc_mgrp_create G`, `mc_node_create RID PORT...` (the node handles are
//!   0, 1, 2... in creation order), `mc_node_update NODE PORT...` and
//!   `mc_node_associate G NODE` become [`Target::set_multicast_group`].
//! - bmv2 commands that only read state (`counter_read`, `register_read`,
//!   `mirroring_get`, `meter_get_rates`) are passed to simple_switch_CLI by
//!   p4c and their answers never looked at: they do nothing here. The
//!   others (`register_write`, `mirroring_add`, `check_counter`, ...) make
//!   the test [`Outcome::Unsupported`], never a failure.
//! - A control-plane error or a packet the target cannot process stops
//!   the script there (p4c's runner throws).

use crate::ast::BigValue;
use crate::mcast::Multicast;
use crate::target::{EntrySpec, KeyMatch, Output, Target};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

// ---------------------------------------------------------------- syntax

/// A syntax error in an STF script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for Error {}

/// One command of a script and the line it is on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    /// 1-based line number.
    pub line: usize,
    pub op: Op,
}

/// An action call: `name(param:value, ...)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionCall {
    pub name: String,
    pub args: Vec<(String, BigValue)>,
}

/// An expected packet: nibbles (`None` = `*`) and whether the length must
/// be exact (`$`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    pub nibbles: Vec<Option<u8>>,
    pub exact: bool,
}

/// What a command does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Add {
        table: String,
        priority: Option<u64>,
        keys: Vec<(String, KeyMatch)>,
        action: ActionCall,
    },
    SetDefault {
        table: String,
        action: ActionCall,
    },
    RemoveAll,
    Packet {
        port: u32,
        data: Vec<u8>,
    },
    /// `pattern: None` is `expect PORT` alone: any packets on that port.
    Expect {
        port: u32,
        pattern: Option<Pattern>,
    },
    NoPacket,
    Wait,
    McMgrpCreate {
        group: u32,
    },
    McNodeCreate {
        rid: u32,
        ports: Vec<u32>,
    },
    McNodeUpdate {
        node: u32,
        ports: Vec<u32>,
    },
    McNodeAssociate {
        group: u32,
        node: u32,
    },
    /// A bmv2 command whose answer p4c never checks (`counter_read`...).
    Ignored {
        name: String,
    },
    /// A bmv2 command sluice's runner does not carry out.
    Unsupported {
        name: String,
    },
}

/// The bmv2 runtime commands p4c's STF grammar accepts.
const READ_ONLY: &[&str] = &["counter_read", "register_read", "mirroring_get", "meter_get_rates"];
const UNSUPPORTED: &[&str] = &[
    "check_counter",
    "mirroring_add",
    "mirroring_add_mc",
    "mirroring_delete",
    "counter_write",
    "register_write",
    "register_reset",
    "meter_set_rates",
    "meter_array_set_rates",
];

/// Parses a whole script; the first error stops it.
pub fn parse(text: &str) -> Result<Vec<Command>, Error> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let body = raw.split('#').next().unwrap_or("").trim();
        if body.is_empty() {
            continue;
        }
        let op = parse_line(body).map_err(|message| Error { line, message })?;
        out.push(Command { line, op });
    }
    Ok(out)
}

fn parse_line(body: &str) -> Result<Op, String> {
    let (word, rest) = match body.find(|c: char| c.is_whitespace()) {
        Some(i) => (&body[..i], body[i..].trim_start()),
        None => (body, ""),
    };
    let cmd = word.to_ascii_lowercase();
    match cmd.as_str() {
        "packet" => {
            let (port, data) = port_and_data(rest, "packet")?;
            let nibbles = hex_nibbles(data, false)?;
            if nibbles.1 {
                return Err("`$` belongs to `expect`, not `packet`".into());
            }
            let digits: Vec<u8> = nibbles.0.iter().map(|n| n.unwrap_or(0)).collect();
            if nibbles.0.iter().any(Option::is_none) {
                return Err("`*` belongs to `expect`, not `packet`".into());
            }
            if digits.is_empty() {
                return Err("`packet` needs the packet's bytes in hex".into());
            }
            if digits.len() % 2 != 0 {
                return Err(format!(
                    "packet data has an odd number of hex digits ({})",
                    digits.len()
                ));
            }
            let data = digits.chunks(2).map(|p| (p[0] << 4) | p[1]).collect();
            Ok(Op::Packet { port, data })
        }
        "expect" => {
            let (port, data) = port_and_data(rest, "expect")?;
            if data.trim().is_empty() {
                return Ok(Op::Expect { port, pattern: None });
            }
            let (nibbles, exact) = hex_nibbles(data, true)?;
            Ok(Op::Expect { port, pattern: Some(Pattern { nibbles, exact }) })
        }
        "no_packet" => no_args(rest, Op::NoPacket, "no_packet"),
        "wait" => no_args(rest, Op::Wait, "wait"),
        "remove" => {
            if rest.eq_ignore_ascii_case("all") {
                Ok(Op::RemoveAll)
            } else {
                Err("only `remove all` is supported (STF cannot name one entry)".into())
            }
        }
        "add" => parse_add(rest),
        "setdefault" => {
            let mut t = Tokens::new(rest)?;
            let table = t.name("a table name")?;
            let action = t.action()?;
            t.end()?;
            Ok(Op::SetDefault { table, action })
        }
        "mc_mgrp_create" => {
            let n = numbers(rest, "mc_mgrp_create", 1, Some(1))?;
            Ok(Op::McMgrpCreate { group: n[0] })
        }
        "mc_node_create" => {
            let n = numbers(rest, "mc_node_create", 1, None)?;
            Ok(Op::McNodeCreate { rid: n[0], ports: n[1..].to_vec() })
        }
        "mc_node_update" => {
            let n = numbers(rest, "mc_node_update", 1, None)?;
            Ok(Op::McNodeUpdate { node: n[0], ports: n[1..].to_vec() })
        }
        "mc_node_associate" => {
            let n = numbers(rest, "mc_node_associate", 2, Some(2))?;
            Ok(Op::McNodeAssociate { group: n[0], node: n[1] })
        }
        c if READ_ONLY.contains(&c) => Ok(Op::Ignored { name: cmd }),
        c if UNSUPPORTED.contains(&c) => Ok(Op::Unsupported { name: cmd }),
        _ => Err(format!("unknown STF command `{word}`")),
    }
}

fn no_args(rest: &str, op: Op, name: &str) -> Result<Op, String> {
    if rest.is_empty() {
        Ok(op)
    } else {
        Err(format!("`{name}` takes no arguments, found `{rest}`"))
    }
}

fn port_and_data<'a>(rest: &'a str, cmd: &str) -> Result<(u32, &'a str), String> {
    let (p, data) = match rest.find(|c: char| c.is_whitespace()) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if p.is_empty() {
        return Err(format!("`{cmd}` needs a port number"));
    }
    let port =
        p.parse::<u32>().map_err(|_| format!("`{cmd}`: port `{p}` is not a decimal number"))?;
    Ok((port, data))
}

/// Hex digits and `*` (if `stars`), blanks ignored, an optional final `$`.
fn hex_nibbles(data: &str, stars: bool) -> Result<(Vec<Option<u8>>, bool), String> {
    let mut out = Vec::new();
    let mut exact = false;
    for c in data.chars() {
        if exact && !c.is_whitespace() {
            return Err("`$` must be the last thing in the packet data".into());
        }
        match c {
            c if c.is_whitespace() => {}
            '$' => exact = true,
            '*' if stars => out.push(None),
            c => match c.to_digit(16) {
                Some(d) => out.push(Some(d as u8)),
                None => return Err(format!("`{c}` in packet data (hex digits expected)")),
            },
        }
    }
    Ok((out, exact))
}

fn numbers(rest: &str, cmd: &str, min: usize, max: Option<usize>) -> Result<Vec<u32>, String> {
    let mut v = Vec::new();
    for w in rest.split_whitespace() {
        let n = parse_number(w)
            .ok()
            .filter(|n| n.stars.is_zero())
            .and_then(|n| n.value.to_u128())
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("`{cmd}`: `{w}` is not a number"))?;
        v.push(n);
    }
    if v.len() < min || max.is_some_and(|m| v.len() > m) {
        let want = match max {
            Some(m) if m == min => format!("{min}"),
            Some(m) => format!("{min} to {m}"),
            None => format!("at least {min}"),
        };
        return Err(format!("`{cmd}` takes {want} numbers, found {}", v.len()));
    }
    Ok(v)
}

fn parse_add(rest: &str) -> Result<Op, String> {
    let mut t = Tokens::new(rest)?;
    let table = t.name("a table name")?;
    let mut priority = None;
    if let Some(Tok::Word(w)) = t.peek() {
        if w.bytes().all(|b| b.is_ascii_digit()) {
            let w = w.clone();
            t.next();
            priority = Some(w.parse::<u64>().map_err(|_| format!("priority `{w}` is too large"))?);
        }
    }
    let mut keys = Vec::new();
    // KEY:VALUE until the action's `NAME(`.
    loop {
        match (t.peek(), t.peek2()) {
            (Some(Tok::Word(_)), Some(Tok::Punct(':'))) => {
                let name = key_name(&t.name("a key name")?);
                t.punct(':')?;
                let v = t.word("a key value")?;
                let n = parse_number(&v).map_err(|e| format!("key `{name}`: {e}"))?;
                let m = if t.peek() == Some(&Tok::Punct('/')) {
                    t.next();
                    let l = t.word("a prefix length")?;
                    let len = l.parse::<u32>().map_err(|_| {
                        format!("key `{name}`: prefix length `{l}` is not a number")
                    })?;
                    if !n.stars.is_zero() {
                        return Err(format!("key `{name}`: `*` digits with a /{len} prefix"));
                    }
                    KeyMatch::Lpm { value: n.value, prefix_len: len }
                } else {
                    n.key_match()
                };
                keys.push((name, m));
            }
            (Some(Tok::Word(_)), Some(Tok::Punct('('))) => break,
            (Some(tok), _) => {
                return Err(format!(
                    "expected `KEY:VALUE` or the action call, found {}",
                    tok.describe()
                ))
            }
            (None, _) => return Err("missing the action call `ACTION(...)`".into()),
        }
    }
    let action = t.action()?;
    if t.peek() == Some(&Tok::Punct('=')) {
        t.next();
        t.name("an entry id after `=`")?;
    }
    t.end()?;
    Ok(Op::Add { table, priority, keys, action })
}

/// `hdr.extra$0.h` is p4c's spelling of `hdr.extra[0].h`.
fn key_name(name: &str) -> String {
    let mut out = String::new();
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            out.push('[');
            while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                out.push(d);
                chars.next();
            }
            out.push(']');
        } else {
            out.push(c);
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Word(String),
    Punct(char),
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Word(w) => format!("`{w}`"),
            Tok::Punct(c) => format!("`{c}`"),
        }
    }
}

struct Tokens {
    toks: Vec<Tok>,
    at: usize,
}

impl Tokens {
    fn new(s: &str) -> Result<Self, String> {
        let mut toks = Vec::new();
        let mut chars = s.chars().peekable();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() {
                chars.next();
            } else if "():,/=".contains(c) {
                toks.push(Tok::Punct(c));
                chars.next();
            } else if c == '"' {
                chars.next();
                let mut w = String::new();
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some(c) => w.push(c),
                        None => return Err("unterminated `\"`".into()),
                    }
                }
                toks.push(Tok::Word(w));
            } else if c.is_ascii_alphanumeric() || "_$*.[]".contains(c) {
                let mut w = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_ascii_alphanumeric() || "_$*.[]".contains(c) {
                        w.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                toks.push(Tok::Word(w));
            } else {
                return Err(format!("unexpected `{c}`"));
            }
        }
        Ok(Tokens { toks, at: 0 })
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }

    fn peek2(&self) -> Option<&Tok> {
        self.toks.get(self.at + 1)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.at).cloned();
        self.at += 1;
        t
    }

    fn word(&mut self, what: &str) -> Result<String, String> {
        match self.next() {
            Some(Tok::Word(w)) => Ok(w),
            Some(t) => Err(format!("expected {what}, found {}", t.describe())),
            None => Err(format!("expected {what} at the end of the line")),
        }
    }

    fn name(&mut self, what: &str) -> Result<String, String> {
        let w = self.word(what)?;
        if w.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(format!("expected {what}, found `{w}`"));
        }
        Ok(w)
    }

    fn punct(&mut self, p: char) -> Result<(), String> {
        match self.next() {
            Some(Tok::Punct(c)) if c == p => Ok(()),
            Some(t) => Err(format!("expected `{p}`, found {}", t.describe())),
            None => Err(format!("expected `{p}` at the end of the line")),
        }
    }

    fn end(&mut self) -> Result<(), String> {
        match self.peek() {
            None => Ok(()),
            Some(t) => Err(format!("unexpected {} after the command", t.describe())),
        }
    }

    fn action(&mut self) -> Result<ActionCall, String> {
        let name = self.name("an action call `ACTION(...)`")?;
        self.punct('(')?;
        let mut args = Vec::new();
        if self.peek() == Some(&Tok::Punct(')')) {
            self.next();
            return Ok(ActionCall { name, args });
        }
        loop {
            let p = self.name("an action parameter name")?;
            self.punct(':')?;
            let v = self.word("a parameter value")?;
            let n = parse_number(&v).map_err(|e| format!("parameter `{p}`: {e}"))?;
            if !n.stars.is_zero() {
                return Err(format!("parameter `{p}`: `*` in an action parameter"));
            }
            args.push((p, n.value));
            match self.next() {
                Some(Tok::Punct(',')) => {}
                Some(Tok::Punct(')')) => break,
                Some(t) => return Err(format!("expected `,` or `)`, found {}", t.describe())),
                None => return Err(format!("missing `)` after the arguments of `{name}`")),
            }
        }
        Ok(ActionCall { name, args })
    }
}

/// A number as STF writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Number {
    /// The value, `*` digits read as zero.
    pub value: BigValue,
    /// The bits written as `*`.
    pub stars: BigValue,
    /// Bits the digits cover (digits × bits per digit; for decimal, the
    /// value's own width).
    pub width: u32,
}

impl Number {
    /// Exact without `*`, else `value &&& mask` where the mask has every
    /// written non-`*` bit and every bit above the written digits (as the
    /// target contract says; the target cuts it to the key's width).
    pub fn key_match(&self) -> KeyMatch {
        if self.stars.is_zero() {
            KeyMatch::Exact(self.value.clone())
        } else {
            let width = self.width.max(TERNARY_MASK_BITS);
            KeyMatch::Ternary {
                value: self.value.clone(),
                mask: big::and_not(&big::ones(width), &self.stars),
            }
        }
    }
}

/// How far up a starred value's mask is filled with ones (the bits above
/// its digits): wider than any key sluice accepts.
pub const TERNARY_MASK_BITS: u32 = 2048;

/// `123`, `0x0a01****`, `0b1*0*`.
pub fn parse_number(s: &str) -> Result<Number, String> {
    let (digits, bits) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 4)
    } else if let Some(b) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        (b, 1)
    } else {
        (s, 0)
    };
    if digits.is_empty() {
        return Err(format!("`{s}` is not a number"));
    }
    let mut value = Vec::new();
    let mut stars = Vec::new();
    if bits == 0 {
        for c in digits.chars() {
            let d = c.to_digit(10).ok_or_else(|| format!("`{s}` is not a number"))?;
            big::mul_add(&mut value, 10, d as u64);
        }
        let value = BigValue(value);
        let width = big::bit_len(&value.0);
        return Ok(Number { value, stars: BigValue::default(), width });
    }
    let radix = 1u64 << bits;
    for c in digits.chars() {
        let (d, star) = match c {
            '*' => (0, radix - 1),
            c => (
                c.to_digit(radix as u32).ok_or_else(|| format!("`{s}`: `{c}` is not a digit"))?
                    as u64,
                0,
            ),
        };
        big::mul_add(&mut value, radix, d);
        big::mul_add(&mut stars, radix, star);
    }
    Ok(Number {
        value: BigValue(value),
        stars: BigValue(stars),
        width: digits.chars().count() as u32 * bits,
    })
}

/// Just enough arithmetic on [`BigValue`] limbs.
pub(crate) mod big {
    use crate::ast::BigValue;

    pub fn trim(v: &mut Vec<u64>) {
        while v.last() == Some(&0) {
            v.pop();
        }
    }

    /// `v = v * m + a`.
    pub fn mul_add(v: &mut Vec<u64>, m: u64, a: u64) {
        let mut carry = a as u128;
        for limb in v.iter_mut() {
            let x = *limb as u128 * m as u128 + carry;
            *limb = x as u64;
            carry = x >> 64;
        }
        if carry != 0 {
            v.push(carry as u64);
        }
        trim(v);
    }

    pub fn bit_len(v: &[u64]) -> u32 {
        match v.last() {
            None => 0,
            Some(top) => (v.len() as u32 - 1) * 64 + (64 - top.leading_zeros()),
        }
    }

    pub fn ones(bits: u32) -> BigValue {
        let mut v = vec![u64::MAX; (bits / 64) as usize];
        if bits % 64 != 0 {
            v.push((1u64 << (bits % 64)) - 1);
        }
        BigValue(v)
    }

    pub fn and_not(a: &BigValue, b: &BigValue) -> BigValue {
        let mut v: Vec<u64> =
            a.0.iter().enumerate().map(|(i, x)| x & !b.0.get(i).copied().unwrap_or(0)).collect();
        trim(&mut v);
        BigValue(v)
    }
}

// ---------------------------------------------------------------- running

/// How a script ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail,
    /// The script uses something the runner cannot carry out; whatever
    /// failed besides may be due to that.
    Unsupported,
}

/// One problem, at a line of the script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub line: usize,
    /// One line, or a first line with indented details below.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// What running a script found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub failures: Vec<Finding>,
    pub unsupported: Vec<Finding>,
    /// Things worth knowing that are not failures (a port where any
    /// packets are allowed, where a script stopped).
    pub notes: Vec<String>,
    /// Packets sent and received (all ports).
    pub packets_in: usize,
    pub packets_out: usize,
}

impl Report {
    pub fn outcome(&self) -> Outcome {
        if !self.unsupported.is_empty() {
            Outcome::Unsupported
        } else if !self.failures.is_empty() {
            Outcome::Fail
        } else {
            Outcome::Pass
        }
    }

    pub fn passed(&self) -> bool {
        self.outcome() == Outcome::Pass
    }

    /// One line: the first unsupported command or failure, and how many
    /// more there are.
    pub fn summary(&self) -> String {
        let (list, what) = match self.outcome() {
            Outcome::Pass => return "PASS".into(),
            Outcome::Unsupported => (&self.unsupported, "unsupported"),
            Outcome::Fail => (&self.failures, "failures"),
        };
        let first = list[0].to_string();
        let mut s = first.lines().next().unwrap_or("").to_string();
        if list.len() > 1 {
            s.push_str(&format!(" (+{} more {what})", list.len() - 1));
        }
        if self.outcome() == Outcome::Unsupported && !self.failures.is_empty() {
            s.push_str(&format!(" ({} failures besides)", self.failures.len()));
        }
        s
    }
}

impl fmt::Display for Report {
    /// `PASS`, or `FAIL`/`UNSUPPORTED` and every finding.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.outcome() {
            Outcome::Pass => f.write_str("PASS")?,
            Outcome::Fail => f.write_str("FAIL")?,
            Outcome::Unsupported => f.write_str("UNSUPPORTED")?,
        }
        for u in &self.unsupported {
            write!(f, "\n{u}")?;
        }
        for x in &self.failures {
            write!(f, "\n{x}")?;
        }
        for n in &self.notes {
            write!(f, "\nnote: {n}")?;
        }
        Ok(())
    }
}

/// A packet that came out, and the line of the `packet` that caused it.
struct Seen {
    data: Vec<u8>,
    line: usize,
}

struct Expected {
    pattern: Pattern,
    line: usize,
}

/// Parses and runs a script against a target, then checks every port's
/// packets against its expectations.
pub fn run(target: &mut dyn Target, script: &str) -> Report {
    let mut report = Report::default();
    let cmds = match parse(script) {
        Ok(c) => c,
        Err(e) => {
            report
                .failures
                .push(Finding { line: e.line, message: format!("STF syntax: {}", e.message) });
            return report;
        }
    };
    run_commands(target, &cmds, &mut report);
    report
}

/// Runs parsed commands, adding what it finds to `report`.
pub fn run_commands(target: &mut dyn Target, cmds: &[Command], report: &mut Report) {
    // bmv2 gets one interface per port the script names.
    let ports: BTreeSet<u32> = cmds
        .iter()
        .filter_map(|c| match c.op {
            Op::Packet { port, .. } | Op::Expect { port, .. } => Some(port),
            _ => None,
        })
        .collect();
    let mut seen: BTreeMap<u32, Vec<Seen>> = BTreeMap::new();
    // Packets to ports no `packet` or `expect` names: (count, first line).
    let mut unseen: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    let mut expected: BTreeMap<u32, Vec<Expected>> = BTreeMap::new();
    let mut any_on: BTreeMap<u32, usize> = BTreeMap::new();
    let mut mc = Multicast::default();

    for c in cmds {
        let fail = |message: String| Finding { line: c.line, message };
        let result: Result<(), String> = match &c.op {
            Op::Add { table, priority, keys, action } => {
                let spec = EntrySpec {
                    table: table.clone(),
                    keys: keys.clone(),
                    action: action.name.clone(),
                    args: action.args.clone(),
                    priority: *priority,
                };
                target.add_entry(&spec).map(|_| ()).map_err(|e| format!("add to `{table}`: {e}"))
            }
            Op::SetDefault { table, action } => target
                .set_default(table, &action.name, &action.args)
                .map_err(|e| format!("setdefault `{table}`: {e}")),
            Op::RemoveAll => target.remove_all().map_err(|e| format!("remove all: {e}")),
            Op::Packet { port, data } => {
                report.packets_in += 1;
                match target.packet(*port, data) {
                    Ok(outs) => {
                        for Output { port, data } in outs {
                            report.packets_out += 1;
                            if ports.contains(&port) {
                                seen.entry(port).or_default().push(Seen { data, line: c.line });
                            } else {
                                unseen.entry(port).or_insert((0, c.line)).0 += 1;
                            }
                        }
                        Ok(())
                    }
                    Err(e) => Err(format!("packet on port {port}: {e}")),
                }
            }
            Op::Expect { port, pattern } => {
                match pattern {
                    Some(p) => expected
                        .entry(*port)
                        .or_default()
                        .push(Expected { pattern: p.clone(), line: c.line }),
                    None => {
                        any_on.entry(*port).or_insert(c.line);
                    }
                }
                Ok(())
            }
            Op::NoPacket | Op::Wait | Op::Ignored { .. } => Ok(()),
            Op::McMgrpCreate { group } => mc.create_group(*group),
            Op::McNodeCreate { rid, ports } => {
                mc.create_node(*rid, ports);
                Ok(())
            }
            Op::McNodeUpdate { node, ports } => mc.update_node(target, *node, ports),
            Op::McNodeAssociate { group, node } => mc.associate(target, *group, *node),
            Op::Unsupported { name } => {
                report.unsupported.push(fail(format!("unsupported STF command `{name}`")));
                Ok(())
            }
        };
        if let Err(e) = result {
            report.failures.push(fail(e));
            report
                .notes
                .push(format!("the script stopped at line {} (what follows was not run)", c.line));
            break;
        }
    }

    // Stricter than p4c's runner (whose switch has no interface for such
    // a port, so the packet vanishes unseen): any packet no expectation
    // accounts for fails the test.
    for (port, (n, line)) in unseen {
        report.failures.push(Finding {
            line,
            message: format!("{n} unexpected packet(s) to port {port}, which no `expect` names"),
        });
    }
    for port in ports {
        if let Some(line) = any_on.get(&port) {
            report
                .notes
                .push(format!("port {port}: any packets allowed (`expect {port}` at line {line})"));
            continue;
        }
        let got = seen.remove(&port).unwrap_or_default();
        let want = expected.remove(&port).unwrap_or_default();
        compare_port(port, &got, &want, &mut report.failures);
    }
    report.failures.sort_by_key(|f| f.line);
}

fn compare_port(port: u32, got: &[Seen], want: &[Expected], out: &mut Vec<Finding>) {
    let n = got.len().max(want.len());
    for i in 0..n {
        let ord = i + 1;
        match (got.get(i), want.get(i)) {
            (Some(g), Some(w)) => {
                if let Some(why) = mismatch(&w.pattern, &g.data) {
                    out.push(Finding {
                        line: w.line,
                        message: format!(
                            "port {port}: packet {ord} {why}\n  expected: {}\n  got:      {}  (from `packet` at line {})",
                            show_pattern(&w.pattern),
                            show_bytes(&g.data),
                            g.line
                        ),
                    });
                }
            }
            (None, Some(w)) => out.push(Finding {
                line: w.line,
                message: format!(
                    "port {port}: expected packet {ord} never came ({} came on port {port})\n  expected: {}",
                    got.len(),
                    show_pattern(&w.pattern)
                ),
            }),
            (Some(g), None) => out.push(Finding {
                line: g.line,
                message: format!(
                    "port {port}: unexpected packet {ord} ({} expected on port {port})\n  got:      {}",
                    want.len(),
                    show_bytes(&g.data)
                ),
            }),
            (None, None) => {}
        }
    }
}

/// Why `data` does not match `p`, or `None` if it does (p4c's
/// `compare_pkt`: nibble by nibble, `*` matches anything, the expected
/// bytes are a prefix unless `$`).
pub fn mismatch(p: &Pattern, data: &[u8]) -> Option<String> {
    let have = data.len() * 2;
    let want = p.nibbles.len();
    if have < want {
        return Some(format!(
            "is too short: {} bytes, expected {}{}",
            data.len(),
            if p.exact { "" } else { "at least " },
            want.div_ceil(2)
        ));
    }
    if p.exact && have > want {
        return Some(format!(
            "is too long: {} bytes, expected exactly {}",
            data.len(),
            want.div_ceil(2)
        ));
    }
    for (i, n) in p.nibbles.iter().enumerate() {
        let Some(n) = n else { continue };
        let b = data[i / 2];
        let got = if i % 2 == 0 { b >> 4 } else { b & 0xf };
        if got != *n {
            return Some(format!("differs at byte {}", i / 2));
        }
    }
    None
}

fn show_bytes(data: &[u8]) -> String {
    if data.is_empty() {
        return "(empty)".into();
    }
    data.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ")
}

fn show_pattern(p: &Pattern) -> String {
    let mut s: Vec<String> = p
        .nibbles
        .chunks(2)
        .map(|c| {
            c.iter()
                .map(|n| match n {
                    Some(d) => char::from_digit(*d as u32, 16).unwrap_or('?'),
                    None => '*',
                })
                .collect()
        })
        .collect();
    if p.exact {
        s.push("$".into());
    }
    if s.is_empty() {
        return "(anything)".into();
    }
    s.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        let n = parse_number("0x0a01****").unwrap();
        assert_eq!(n.value, BigValue::from_u128(0x0a01_0000));
        assert_eq!(n.stars, BigValue::from_u128(0xffff));
        assert_eq!(n.width, 32);
        let n = parse_number("0b1*0*").unwrap();
        assert_eq!(n.value, BigValue::from_u128(0b1000));
        assert_eq!(n.stars, BigValue::from_u128(0b0101));
        let n = parse_number("340282366920938463463374607431768211457").unwrap();
        assert_eq!(n.value, BigValue(vec![1, 0, 1]));
        assert!(parse_number("0xg").is_err());
        assert!(parse_number("12*").is_err());
    }

    #[test]
    fn ternary_mask_reaches_above_the_digits() {
        let KeyMatch::Ternary { value, mask } = parse_number("0x**01").unwrap().key_match() else {
            panic!()
        };
        assert_eq!(value, BigValue::from_u128(1));
        assert_eq!(mask.0[0], !0xff00);
        assert_eq!(mask.0.len(), (TERNARY_MASK_BITS / 64) as usize);
    }

    #[test]
    fn key_names_with_dollar_index() {
        assert_eq!(key_name("extra$0.h"), "extra[0].h");
        assert_eq!(key_name("a$valid$"), "a$valid$");
    }
}
