//! Lexer and parser for the pcap-filter language, following libpcap's
//! `scan.l` / `grammar.y` (libpcap 1.10).
//!
//! What is reproduced, because users' expressions depend on it:
//! - `and`/`or` (and `&&`/`||`) have the *same* precedence and associate to
//!   the left: `a or b and c` is `(a or b) and c`. `not`/`!` binds tightest.
//! - Keyword repetition: a bare value after `and`/`or`/`not`/`(` reuses the
//!   qualifiers of the primitive before it (`host a or b`, `tcp port 80 or
//!   443`, `port 80 and not 81`, `host a and (b or c)`).
//! - Arithmetic precedence `| < & < << >> < + - < * / < unary -`; `^` and
//!   `%` have no declared precedence in libpcap's grammar, so yacc always
//!   shifts them: `a * b ^ c + d` is `a * (b ^ (c + d))`, `-len % 2` is
//!   `-(len % 2)`. We reproduce that (checked against `tcpdump -d -O`).
//! - Words are lexed like flex does: the longest match of
//!   `[A-Za-z0-9]([-_.A-Za-z0-9]*[.A-Za-z0-9])?` wins, so `len-1` is one
//!   (unknown) word and a syntax error, exactly as in tcpdump; `80-90` is one
//!   word (used by `portrange`); `tcp-syn` is a named constant.
//! - Numbers are decimal, `0x` hex or leading-`0` octal; more than 32 bits is
//!   an error.
//!
//! Errors carry a byte span into the source; [`crate::Error`] renders them
//! with a caret line under the offending token.

use crate::Error;
use std::net::Ipv6Addr;
use std::ops::Range;

/// Byte range in the source text.
pub type Span = Range<usize>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    Num(u32),
    /// Dotted IPv4 (1 to 4 parts): value and number of bits given.
    Hid(u32, u32),
    Hid6(Ipv6Addr),
    Eid([u8; 6]),
    /// Any other word (possibly a keyword); `\word` escapes keep the text.
    Word(String),
    Escaped(String),
    Op(&'static str),
    Eof,
}

#[derive(Debug, Clone)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

const OPS: &[&str] = &[
    ">=", "<=", "!=", "==", "<<", ">>", "&&", "||", "+", "-", "*", "/", "%", ":", "&", "|", "^",
    "<", ">", "=", "!", "(", ")", "[", "]",
];

fn is_word_start(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}
fn is_word_mid(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.'
}

/// Named numeric constants of libpcap's scanner.
fn named_constant(w: &str) -> Option<u32> {
    Some(match w {
        "icmptype" => 0,
        "icmpcode" => 1,
        "icmp-echoreply" => 0,
        "icmp-unreach" => 3,
        "icmp-sourcequench" => 4,
        "icmp-redirect" => 5,
        "icmp-echo" => 8,
        "icmp-routeradvert" => 9,
        "icmp-routersolicit" => 10,
        "icmp-timxceed" => 11,
        "icmp-paramprob" => 12,
        "icmp-tstamp" => 13,
        "icmp-tstampreply" => 14,
        "icmp-ireq" => 15,
        "icmp-ireqreply" => 16,
        "icmp-maskreq" => 17,
        "icmp-maskreply" => 18,
        "icmp6type" => 0,
        "icmp6code" => 1,
        "icmp6-destinationunreach" => 1,
        "icmp6-packettoobig" => 2,
        "icmp6-timeexceeded" => 3,
        "icmp6-parameterproblem" => 4,
        "icmp6-echo" => 128,
        "icmp6-echoreply" => 129,
        "icmp6-multicastlistenerquery" => 130,
        "icmp6-multicastlistenerreportv1" => 131,
        "icmp6-multicastlistenerdone" => 132,
        "icmp6-routersolicit" => 133,
        "icmp6-routeradvert" => 134,
        "icmp6-neighborsolicit" => 135,
        "icmp6-neighboradvert" => 136,
        "icmp6-redirect" => 137,
        "tcpflags" => 13,
        "tcp-fin" => 0x01,
        "tcp-syn" => 0x02,
        "tcp-rst" => 0x04,
        "tcp-push" => 0x08,
        "tcp-ack" => 0x10,
        "tcp-urg" => 0x20,
        "tcp-ece" => 0x40,
        "tcp-cwr" => 0x80,
        _ => return None,
    })
}

fn parse_num(w: &str) -> Option<Result<u32, String>> {
    let (digits, radix) = if let Some(h) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        if h.is_empty() || !h.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        (h, 16)
    } else if w.bytes().all(|c| c.is_ascii_digit()) && !w.is_empty() {
        if w.len() > 1 && w.starts_with('0') {
            if !w.bytes().all(|c| (b'0'..=b'7').contains(&c)) {
                return Some(Err(format!("number {w} contains non-octal digit")));
            }
            (&w[1..], 8)
        } else {
            (w, 10)
        }
    } else {
        return None;
    };
    Some(u32::from_str_radix(digits, radix).map_err(|_| format!("number {w} overflows 32 bits")))
}

/// `a.b.c.d` with 1..4 decimal parts (libpcap's `__pcap_atoin`).
fn parse_hid(w: &str) -> Option<(u32, u32)> {
    let parts: Vec<&str> = w.split('.').collect();
    if parts.len() < 2 || parts.len() > 4 {
        return None;
    }
    let mut v: u32 = 0;
    for p in &parts {
        if p.is_empty() || !p.bytes().all(|c| c.is_ascii_digit()) || p.len() > 3 {
            return None;
        }
        let n: u32 = p.parse().ok()?;
        if n > 255 {
            return None;
        }
        v = (v << 8) | n;
    }
    Some((v, 8 * parts.len() as u32))
}

fn parse_mac(w: &str) -> Option<[u8; 6]> {
    let sep = if w.contains(':') {
        ':'
    } else if w.contains('-') {
        '-'
    } else {
        return None;
    };
    let parts: Vec<&str> = w.split(sep).collect();
    if parts.len() != 6 {
        return None;
    }
    let mut m = [0u8; 6];
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() || p.len() > 2 || !p.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        m[i] = u8::from_str_radix(p, 16).ok()?;
    }
    Some(m)
}

/// Splits `src` into tokens.
pub fn lex(src: &str) -> Result<Vec<Token>, Error> {
    let b = src.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c == b'\\' {
            let mut j = i + 1;
            while j < b.len() && !b" !()\n\t".contains(&b[j]) {
                j += 1;
            }
            if j == i + 1 {
                return Err(Error::new(src, start..j, "stray backslash"));
            }
            out.push(Token { tok: Tok::Escaped(src[i + 1..j].to_string()), span: start..j });
            i = j;
            continue;
        }
        if is_word_start(c) || c == b':' {
            // Longest of: IPv6 / MAC (with ':'), else word.
            let mut j = i;
            while j < b.len() && (is_word_mid(b[j]) || b[j] == b':') {
                j += 1;
            }
            let long = &src[i..j];
            if long.contains(':') {
                if let Some(m) = parse_mac(long) {
                    out.push(Token { tok: Tok::Eid(m), span: start..j });
                    i = j;
                    continue;
                }
                if let Ok(a) = long.parse::<Ipv6Addr>() {
                    out.push(Token { tok: Tok::Hid6(a), span: start..j });
                    i = j;
                    continue;
                }
            }
            if c == b':' {
                // plain ':' operator handled below
            } else {
                let mut j = i;
                while j < b.len() && is_word_mid(b[j]) {
                    j += 1;
                }
                // The word must end with [.A-Za-z0-9].
                while j > i + 1 && (b[j - 1] == b'-' || b[j - 1] == b'_') {
                    j -= 1;
                }
                let w = &src[i..j];
                let tok = if let Some(mac) = parse_mac(w) {
                    Tok::Eid(mac)
                } else if let Some(n) = parse_num(w) {
                    match n {
                        Ok(n) => Tok::Num(n),
                        Err(m) => return Err(Error::new(src, start..j, m)),
                    }
                } else if let Some((v, bits)) = parse_hid(w) {
                    Tok::Hid(v, bits)
                } else if let Some(n) = named_constant(w) {
                    Tok::Num(n)
                } else {
                    Tok::Word(w.to_string())
                };
                out.push(Token { tok, span: start..j });
                i = j;
                continue;
            }
        }
        let rest = &src[i..];
        match OPS.iter().find(|op| rest.starts_with(**op)) {
            Some(op) => {
                out.push(Token { tok: Tok::Op(op), span: start..start + op.len() });
                i += op.len();
            }
            None => {
                let len = rest.chars().next().map_or(1, char::len_utf8);
                return Err(Error::new(src, start..start + len, "unexpected character"));
            }
        }
    }
    out.push(Token { tok: Tok::Eof, span: b.len()..b.len() });
    Ok(out)
}

// ---------------------------------------------------------------- AST

/// Protocol qualifier (`pqual` / `pname`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    Link,
    Ip,
    Ip6,
    Arp,
    Rarp,
    Tcp,
    Udp,
    Sctp,
    Icmp,
    Icmp6,
    Igmp,
    Igrp,
    Pim,
    Vrrp,
    Carp,
    Ah,
    Esp,
    // Legacy LAN protocols (libpcap `pname`s): AppleTalk, DECnet family,
    // OSI and IS-IS, 802.2 LLC SAPs.
    Atalk,
    Aarp,
    Decnet,
    Lat,
    Sca,
    Moprc,
    Mopdl,
    Iso,
    Esis,
    Isis,
    Clnp,
    L1,
    L2,
    Iih,
    Lsp,
    Snp,
    Csnp,
    Psnp,
    Stp,
    Ipx,
    Netbeui,
}

impl Proto {
    fn from_word(w: &str) -> Option<Proto> {
        Some(match w {
            "ether" | "link" => Proto::Link,
            "ip" => Proto::Ip,
            "ip6" => Proto::Ip6,
            "arp" => Proto::Arp,
            "rarp" => Proto::Rarp,
            "tcp" => Proto::Tcp,
            "udp" => Proto::Udp,
            "sctp" => Proto::Sctp,
            "icmp" => Proto::Icmp,
            "icmp6" => Proto::Icmp6,
            "igmp" => Proto::Igmp,
            "igrp" => Proto::Igrp,
            "pim" => Proto::Pim,
            "vrrp" => Proto::Vrrp,
            "carp" => Proto::Carp,
            "ah" => Proto::Ah,
            "esp" => Proto::Esp,
            "atalk" => Proto::Atalk,
            "aarp" => Proto::Aarp,
            "decnet" => Proto::Decnet,
            "lat" => Proto::Lat,
            "sca" => Proto::Sca,
            "moprc" => Proto::Moprc,
            "mopdl" => Proto::Mopdl,
            "iso" => Proto::Iso,
            "esis" | "es-is" => Proto::Esis,
            "isis" | "is-is" => Proto::Isis,
            "clnp" => Proto::Clnp,
            "l1" => Proto::L1,
            "l2" => Proto::L2,
            "iih" => Proto::Iih,
            "lsp" => Proto::Lsp,
            "snp" => Proto::Snp,
            "csnp" => Proto::Csnp,
            "psnp" => Proto::Psnp,
            "stp" => Proto::Stp,
            "ipx" => Proto::Ipx,
            "netbeui" => Proto::Netbeui,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Default,
    Src,
    Dst,
    Or,
    And,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddrQ {
    Default,
    Host,
    Net,
    Port,
    Portrange,
    Proto,
    Protochain,
}

/// The qualifiers in force for a value (`$$.q` in libpcap's grammar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Qual {
    pub proto: Option<Proto>,
    pub dir: Dir,
    pub addr: AddrQ,
}

/// A value after qualifiers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Id {
    Num(u32),
    /// Dotted IPv4 with the number of bits written (8..32).
    Hid(u32, u32),
    HidMask(u32, u32, u32),
    HidLen(u32, u32, u32),
    Hid6(Ipv6Addr, u32),
    Eid([u8; 6]),
    Name(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelOp {
    Gt,
    Ge,
    Eq,
    Le,
    Lt,
    Ne,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    And,
    Or,
    Xor,
    Shl,
    Shr,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arith {
    Num(u32),
    Len,
    Load { proto: Proto, idx: Box<Arith>, size: u8, span: Span },
    Bin(ArOp, Box<Arith>, Box<Arith>, Span),
    Neg(Box<Arith>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prim {
    /// `tcp`, `ip`, ... alone.
    Proto(Proto),
    /// qualifiers + value.
    Id(Qual, Id),
    Broadcast(Option<Proto>),
    Multicast(Option<Proto>),
    Less(u32),
    Greater(u32),
    Vlan(Option<u32>),
    Mpls(Option<u32>),
    /// `llc` alone or with a frame type / subtype (`llc i`, `llc ui`).
    Llc(Option<LlcKind>),
}

/// 802.2 LLC control-field tests of `llc <type>` (libpcap's `gen_llc_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlcKind {
    /// Information frame: low bit of the control byte clear.
    I,
    /// Supervisory frame: low two bits `01`.
    S,
    /// Unnumbered frame: low two bits `11`.
    U,
    /// Supervisory subtype: `control & 0x0f == value`.
    SSub(u8),
    /// Unnumbered subtype: `control & 0xef == value` (P/F bit ignored).
    USub(u8),
}

impl LlcKind {
    /// libpcap's names (case-insensitive): `i`, `s`, `u` and the S / U
    /// subtypes of `llc.h`.
    pub fn from_name(w: &str) -> Option<LlcKind> {
        Some(match w.to_ascii_lowercase().as_str() {
            "i" => LlcKind::I,
            "s" => LlcKind::S,
            "u" => LlcKind::U,
            "rr" => LlcKind::SSub(0x01),
            "rnr" => LlcKind::SSub(0x05),
            "rej" => LlcKind::SSub(0x09),
            "ui" => LlcKind::USub(0x03),
            "ua" => LlcKind::USub(0x63),
            "disc" => LlcKind::USub(0x43),
            "dm" => LlcKind::USub(0x0f),
            "sabme" => LlcKind::USub(0x6f),
            "test" => LlcKind::USub(0xe3),
            "xid" => LlcKind::USub(0xaf),
            "frmr" => LlcKind::USub(0x87),
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Prim(Prim, Span),
    Rel(RelOp, Arith, Arith, Span),
}

// ---------------------------------------------------------------- parser

struct Parser<'a> {
    src: &'a str,
    toks: Vec<Token>,
    pos: usize,
    /// Farthest error seen (for backtracking).
    best: Option<Error>,
}

type PResult<T> = Result<T, Error>;

/// Maximum nesting depth (parentheses, `not`, unary minus): bounds recursion.
const MAX_DEPTH: usize = 200;

/// Parses a whole filter expression. An empty expression matches everything
/// and is returned as `None`.
pub fn parse(src: &str) -> Result<Option<Expr>, Error> {
    let toks = lex(src)?;
    let mut p = Parser { src, toks, pos: 0, best: None };
    if p.peek() == &Tok::Eof {
        return Ok(None);
    }
    let r = p.expr(0).and_then(|(e, _)| {
        if p.peek() != &Tok::Eof {
            Err(p.err_here("syntax error"))
        } else {
            Ok(e)
        }
    });
    match r {
        Ok(e) => Ok(Some(e)),
        Err(e) => Err(p.farthest(e)),
    }
}

/// Parses an arithmetic expression alone (pfmatch handler arguments).
pub fn parse_arith(src: &str) -> Result<Arith, Error> {
    let toks = lex(src)?;
    let mut p = Parser { src, toks, pos: 0, best: None };
    let a = p.arith(0, 0)?;
    if p.peek() != &Tok::Eof {
        return Err(p.err_here("syntax error: unexpected text after the expression"));
    }
    Ok(a)
}

impl<'a> Parser<'a> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos.min(self.toks.len() - 1)].tok
    }
    fn peek_at(&self, n: usize) -> &Tok {
        &self.toks[(self.pos + n).min(self.toks.len() - 1)].tok
    }
    fn span(&self) -> Span {
        self.toks[self.pos.min(self.toks.len() - 1)].span.clone()
    }
    fn prev_end(&self) -> usize {
        if self.pos == 0 {
            0
        } else {
            self.toks[(self.pos - 1).min(self.toks.len() - 1)].span.end
        }
    }
    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos.min(self.toks.len() - 1)].clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }
    fn err_here(&self, msg: &str) -> Error {
        Error::new(self.src, self.span(), msg)
    }
    fn farthest(&mut self, e: Error) -> Error {
        match self.best.take() {
            Some(b) if b.span.start > e.span.start => b,
            _ => e,
        }
    }
    fn note(&mut self, e: &Error) {
        let better = match &self.best {
            Some(b) => e.span.start > b.span.start,
            None => true,
        };
        if better {
            self.best = Some(e.clone());
        }
    }
    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Tok::Word(x) if x == w)
    }
    fn is_op(&self, o: &str) -> bool {
        matches!(self.peek(), Tok::Op(x) if *x == o)
    }
    fn expect_op(&mut self, o: &str) -> PResult<()> {
        if self.is_op(o) {
            self.bump();
            Ok(())
        } else {
            Err(self.err_here(&format!("syntax error: expected '{o}'")))
        }
    }
    fn is_and(&self) -> bool {
        self.is_word("and") || self.is_op("&&")
    }
    fn is_or(&self) -> bool {
        self.is_word("or") || self.is_op("||")
    }
    fn is_not(&self) -> bool {
        self.is_word("not") || self.is_op("!")
    }

    /// expr: term { (and|or) (term|id) }
    fn expr(&mut self, depth: usize) -> PResult<(Expr, Option<Qual>)> {
        let (mut e, mut q) = self.term(depth)?;
        loop {
            let is_and = if self.is_and() {
                true
            } else if self.is_or() {
                false
            } else {
                break;
            };
            self.bump();
            let (rhs, rq) = self.term_or_id(q, depth)?;
            e = if is_and {
                Expr::And(Box::new(e), Box::new(rhs))
            } else {
                Expr::Or(Box::new(e), Box::new(rhs))
            };
            q = rq;
        }
        Ok((e, q))
    }

    fn term_or_id(&mut self, q: Option<Qual>, depth: usize) -> PResult<(Expr, Option<Qual>)> {
        let save = self.pos;
        match self.term(depth) {
            Ok(r) => Ok(r),
            Err(e1) => {
                self.note(&e1);
                self.pos = save;
                match self.id(q, depth) {
                    Ok(r) => Ok(r),
                    Err(e2) => {
                        self.note(&e2);
                        Err(if e2.span.start >= e1.span.start { e2 } else { e1 })
                    }
                }
            }
        }
    }

    /// term: not term | rterm
    fn term(&mut self, depth: usize) -> PResult<(Expr, Option<Qual>)> {
        if depth > MAX_DEPTH {
            return Err(self.err_here("expression nested too deeply"));
        }
        if self.is_not() {
            self.bump();
            let (e, q) = self.term(depth + 1)?;
            return Ok((Expr::Not(Box::new(e)), q));
        }
        self.rterm(depth)
    }

    /// id: nid | pnum | '(' pid ')' ; nid includes `not id`.
    fn id(&mut self, q: Option<Qual>, depth: usize) -> PResult<(Expr, Option<Qual>)> {
        if depth > MAX_DEPTH {
            return Err(self.err_here("expression nested too deeply"));
        }
        let start = self.span().start;
        if self.is_not() {
            self.bump();
            let (e, q2) = self.id(q, depth + 1)?;
            return Ok((Expr::Not(Box::new(e)), q2));
        }
        if self.is_op("(") {
            self.bump();
            // pid: id { (and|or) id }
            let (mut e, mut q2) = self.id(q, depth + 1)?;
            loop {
                let is_and = if self.is_and() {
                    true
                } else if self.is_or() {
                    false
                } else {
                    break;
                };
                self.bump();
                let (rhs, rq) = self.id(q2, depth + 1)?;
                e = if is_and {
                    Expr::And(Box::new(e), Box::new(rhs))
                } else {
                    Expr::Or(Box::new(e), Box::new(rhs))
                };
                q2 = rq;
            }
            self.expect_op(")")?;
            return Ok((e, q2));
        }
        let Some(q) = q else {
            return Err(
                self.err_here("syntax error: a value needs qualifiers (e.g. 'host', 'port')")
            );
        };
        let v = self.value()?;
        let span = start..self.prev_end();
        Ok((Expr::Prim(Prim::Id(q, v), span), Some(q)))
    }

    /// A value token (nid or NUM).
    fn value(&mut self) -> PResult<Id> {
        let t = self.bump();
        Ok(match t.tok {
            Tok::Num(n) => Id::Num(n),
            Tok::Hid(v, bits) => {
                if self.is_op("/") {
                    self.bump();
                    match self.bump().tok {
                        Tok::Num(n) => Id::HidLen(v, bits, n),
                        _ => {
                            return Err(Error::new(
                                self.src,
                                t.span.start..self.prev_end(),
                                "syntax error: expected a mask length",
                            ))
                        }
                    }
                } else if self.is_word("mask") {
                    self.bump();
                    let s = self.span();
                    match self.bump().tok {
                        Tok::Hid(m, mb) => Id::HidMask(v, bits, m << (32 - mb.min(32))),
                        _ => {
                            return Err(Error::new(
                                self.src,
                                s,
                                "syntax error: expected a dotted netmask",
                            ))
                        }
                    }
                } else {
                    Id::Hid(v, bits)
                }
            }
            Tok::Hid6(a) => {
                if self.is_op("/") {
                    self.bump();
                    match self.bump().tok {
                        Tok::Num(n) => Id::Hid6(a, n),
                        _ => {
                            return Err(Error::new(
                                self.src,
                                t.span.start..self.prev_end(),
                                "syntax error: expected a prefix length",
                            ))
                        }
                    }
                } else {
                    Id::Hid6(a, 128)
                }
            }
            Tok::Eid(m) => Id::Eid(m),
            Tok::Word(w) if !is_keyword(&w) => Id::Name(w),
            Tok::Escaped(w) => Id::Name(w),
            _ => return Err(Error::new(self.src, t.span, "syntax error: expected a value")),
        })
    }

    fn pqual(&self) -> Option<Proto> {
        match self.peek() {
            Tok::Word(w) => Proto::from_word(w),
            _ => None,
        }
    }

    fn rterm(&mut self, depth: usize) -> PResult<(Expr, Option<Qual>)> {
        let start = self.span().start;
        // '(' expr ')' or arithmetic relation starting with '('.
        if self.is_op("(") {
            let save = self.pos;
            self.bump();
            match self.expr(depth + 1).and_then(|r| self.expect_op(")").map(|_| r)) {
                Ok(r) => {
                    // `(expr) relop ...` is not possible; but `(1) = 1` is arithmetic.
                    if !self.at_relop() && !self.at_arith_op() {
                        return Ok(r);
                    }
                    self.pos = save;
                }
                Err(e) => {
                    self.note(&e);
                    self.pos = save;
                }
            }
            return self.relation(start, depth);
        }
        if let Tok::Word(w) = self.peek().clone() {
            match w.as_str() {
                "less" | "greater" => {
                    self.bump();
                    let n = match self.bump().tok {
                        Tok::Num(n) => n,
                        _ => {
                            return Err(Error::new(
                                self.src,
                                self.toks[self.pos - 1].span.clone(),
                                "syntax error: expected a number",
                            ))
                        }
                    };
                    let p = if w == "less" { Prim::Less(n) } else { Prim::Greater(n) };
                    return Ok((Expr::Prim(p, start..self.prev_end()), None));
                }
                "vlan" | "mpls" => {
                    self.bump();
                    let n = self.opt_pnum();
                    let p = if w == "vlan" { Prim::Vlan(n) } else { Prim::Mpls(n) };
                    return Ok((Expr::Prim(p, start..self.prev_end()), None));
                }
                "len" => return self.relation(start, depth),
                "llc" => {
                    self.bump();
                    // `llc ID`: an identifier (not a keyword) names the type.
                    let name = match self.peek().clone() {
                        Tok::Word(n) if !is_keyword(&n) => Some(n),
                        Tok::Escaped(n) => Some(n),
                        _ => None,
                    };
                    let kind = match name {
                        None => None,
                        Some(n) => {
                            let k = LlcKind::from_name(&n).ok_or_else(|| {
                                self.err_here(&format!("unknown LLC type name \"{n}\""))
                            })?;
                            self.bump();
                            Some(k)
                        }
                    };
                    return Ok((Expr::Prim(Prim::Llc(kind), start..self.prev_end()), None));
                }
                "gateway" | "inbound" | "outbound" | "ifindex" | "byte" | "pppoed" | "pppoes"
                | "geneve" | "radio" | "fddi" | "tr" | "wlan" | "ppp" | "slip" | "lane"
                | "metac" | "bcc" | "sc" | "ilmic" | "oamf4" | "oamf4ec" | "oamf4sc" | "oam"
                | "connectmsg" | "metaconnect" | "vpi" | "vci" | "type" | "subtype" | "dir"
                | "ra" | "ta" | "addr1" | "addr2" | "addr3" | "addr4" | "on" | "ifname" | "rnr"
                | "rulenum" | "reason" | "rset" | "ruleset" | "srnr" | "subrulenum" | "action"
                | "hdrpad" | "random" => {
                    return Err(self.err_here(&format!(
                        "'{w}' is not supported by sluice (Ethernet pcap-filter subset)"
                    )));
                }
                _ => {}
            }
        }
        let pq = self.pqual();
        let mut look = 0;
        if pq.is_some() {
            look = 1;
        }
        // pname '[' → arithmetic.
        if pq.is_some() && matches!(self.peek_at(1), Tok::Op("[")) {
            return self.relation(start, depth);
        }
        // head: pqual? (dqual aqual? | aqual | proto | protochain)
        let after = self.peek_at(look).clone();
        let is_head_kw = matches!(&after, Tok::Word(w) if matches!(w.as_str(),
            "src" | "dst" | "host" | "net" | "port" | "portrange" | "proto" | "protochain" | "broadcast" | "multicast"));
        if pq.is_some() || is_head_kw {
            if pq.is_some() {
                self.bump();
            }
            if self.is_word("broadcast") || self.is_word("multicast") {
                let b = self.is_word("broadcast");
                self.bump();
                let p = if b { Prim::Broadcast(pq) } else { Prim::Multicast(pq) };
                return Ok((Expr::Prim(p, start..self.prev_end()), None));
            }
            let mut dir = None;
            if self.is_word("src") || self.is_word("dst") {
                let first = if self.is_word("src") { Dir::Src } else { Dir::Dst };
                self.bump();
                dir = Some(first);
                let other = if first == Dir::Src { "dst" } else { "src" };
                if (self.is_word("or") || self.is_word("and"))
                    && matches!(self.peek_at(1), Tok::Word(w) if w == other)
                {
                    dir = Some(if self.is_word("or") { Dir::Or } else { Dir::And });
                    self.bump();
                    self.bump();
                }
            }
            let addr = match self.peek() {
                Tok::Word(w) => match w.as_str() {
                    "host" => Some(AddrQ::Host),
                    "net" => Some(AddrQ::Net),
                    "port" => Some(AddrQ::Port),
                    "portrange" => Some(AddrQ::Portrange),
                    "proto" if dir.is_none() => Some(AddrQ::Proto),
                    "protochain" if dir.is_none() => Some(AddrQ::Protochain),
                    _ => None,
                },
                _ => None,
            };
            if addr.is_some() {
                self.bump();
            }
            if dir.is_none() && addr.is_none() {
                // bare pname
                return match pq {
                    Some(p) => Ok((Expr::Prim(Prim::Proto(p), start..self.prev_end()), None)),
                    None => Err(self.err_here("syntax error")),
                };
            }
            let q = Qual {
                proto: pq,
                dir: dir.unwrap_or(Dir::Default),
                addr: addr.unwrap_or(AddrQ::Default),
            };
            return self.id(Some(q), depth + 1);
        }
        self.relation(start, depth)
    }

    fn opt_pnum(&mut self) -> Option<u32> {
        // pnum: NUM | '(' pnum ')'
        let save = self.pos;
        let mut opens = 0;
        while self.is_op("(") {
            self.bump();
            opens += 1;
        }
        if let Tok::Num(n) = *self.peek() {
            self.bump();
            let mut ok = true;
            for _ in 0..opens {
                if self.is_op(")") {
                    self.bump();
                } else {
                    ok = false;
                }
            }
            if ok {
                return Some(n);
            }
        }
        self.pos = save;
        None
    }

    fn at_relop(&self) -> bool {
        [">", ">=", "=", "==", "<=", "<", "!="].iter().any(|o| self.is_op(o))
    }
    fn at_arith_op(&self) -> bool {
        ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"].iter().any(|o| self.is_op(o))
    }

    fn relation(&mut self, start: usize, depth: usize) -> PResult<(Expr, Option<Qual>)> {
        let a = self.arith(0, depth)?;
        let op = match self.peek() {
            Tok::Op(">") => RelOp::Gt,
            Tok::Op(">=") => RelOp::Ge,
            Tok::Op("=") | Tok::Op("==") => RelOp::Eq,
            Tok::Op("<=") => RelOp::Le,
            Tok::Op("<") => RelOp::Lt,
            Tok::Op("!=") => RelOp::Ne,
            _ => return Err(self.err_here("syntax error: expected a comparison operator")),
        };
        self.bump();
        let b = self.arith(0, depth)?;
        Ok((Expr::Rel(op, a, b, start..self.prev_end()), None))
    }

    fn binop(&self) -> Option<(ArOp, u8)> {
        Some(match self.peek() {
            Tok::Op("|") => (ArOp::Or, 1),
            Tok::Op("&") => (ArOp::And, 2),
            Tok::Op("<<") => (ArOp::Shl, 3),
            Tok::Op(">>") => (ArOp::Shr, 3),
            Tok::Op("+") => (ArOp::Add, 4),
            Tok::Op("-") => (ArOp::Sub, 4),
            Tok::Op("*") => (ArOp::Mul, 5),
            Tok::Op("/") => (ArOp::Div, 5),
            _ => return None,
        })
    }

    /// Precedence climbing over the declared-precedence operators.
    fn arith(&mut self, min: u8, depth: usize) -> PResult<Arith> {
        if depth > MAX_DEPTH {
            return Err(self.err_here("expression nested too deeply"));
        }
        let start = self.span().start;
        let mut lhs = self.unary(depth + 1)?;
        while let Some((op, prec)) = self.binop() {
            if prec < min {
                break;
            }
            self.bump();
            let rhs = self.arith(prec + 1, depth + 1)?;
            lhs = Arith::Bin(op, Box::new(lhs), Box::new(rhs), start..self.prev_end());
        }
        Ok(lhs)
    }

    /// unary: '-' unary | primary ; then `^` or `%` (always shifted by yacc)
    /// takes the whole rest of the arithmetic expression.
    fn unary(&mut self, depth: usize) -> PResult<Arith> {
        if depth > MAX_DEPTH {
            return Err(self.err_here("expression nested too deeply"));
        }
        let start = self.span().start;
        let a = if self.is_op("-") {
            self.bump();
            return Ok(Arith::Neg(Box::new(self.unary(depth + 1)?)));
        } else {
            self.primary(depth)?
        };
        if self.is_op("^") || self.is_op("%") {
            let op = if self.is_op("^") { ArOp::Xor } else { ArOp::Mod };
            self.bump();
            let rhs = self.arith(0, depth + 1)?;
            return Ok(Arith::Bin(op, Box::new(a), Box::new(rhs), start..self.prev_end()));
        }
        Ok(a)
    }

    fn primary(&mut self, depth: usize) -> PResult<Arith> {
        let t = self.bump();
        match t.tok {
            Tok::Num(n) => Ok(Arith::Num(n)),
            Tok::Word(ref w) if w == "len" => Ok(Arith::Len),
            Tok::Op("(") => {
                let a = self.arith(0, depth + 1)?;
                self.expect_op(")")?;
                Ok(a)
            }
            Tok::Word(ref w) if Proto::from_word(w).is_some() && self.is_op("[") => {
                let proto = Proto::from_word(w).unwrap_or(Proto::Link);
                self.bump();
                let idx = self.arith(0, depth + 1)?;
                let mut size = 1;
                if self.is_op(":") {
                    self.bump();
                    let s = self.span();
                    size = match self.bump().tok {
                        Tok::Num(n) if n == 1 || n == 2 || n == 4 => n as u8,
                        Tok::Num(_) => {
                            return Err(Error::new(self.src, s, "data size must be 1, 2, or 4"))
                        }
                        _ => return Err(Error::new(self.src, s, "syntax error: expected a size")),
                    };
                }
                self.expect_op("]")?;
                Ok(Arith::Load {
                    proto,
                    idx: Box::new(idx),
                    size,
                    span: t.span.start..self.prev_end(),
                })
            }
            _ => Err(Error::new(self.src, t.span, "syntax error")),
        }
    }
}

fn is_keyword(w: &str) -> bool {
    Proto::from_word(w).is_some()
        || matches!(
            w,
            "and"
                | "or"
                | "not"
                | "src"
                | "dst"
                | "host"
                | "net"
                | "mask"
                | "port"
                | "portrange"
                | "proto"
                | "protochain"
                | "broadcast"
                | "multicast"
                | "less"
                | "greater"
                | "len"
                | "vlan"
                | "mpls"
                | "gateway"
                | "inbound"
                | "outbound"
                | "byte"
                | "llc"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Expr {
        parse(s).unwrap_or_else(|e| panic!("{e}")).expect("non-empty")
    }

    #[test]
    fn and_or_same_precedence_left_assoc() {
        let e = p("ip or arp and tcp");
        assert!(matches!(e, Expr::And(ref l, _) if matches!(**l, Expr::Or(..))));
    }

    #[test]
    fn keyword_repetition() {
        let e = p("host 1.2.3.4 or 5.6.7.8");
        let Expr::Or(_, r) = e else { panic!() };
        assert!(matches!(
            *r,
            Expr::Prim(Prim::Id(Qual { addr: AddrQ::Host, .. }, Id::Hid(0x05060708, 32)), _)
        ));
        let e = p("tcp port 80 and not 81");
        let Expr::And(_, r) = e else { panic!() };
        let Expr::Not(r) = *r else { panic!() };
        assert!(matches!(
            *r,
            Expr::Prim(
                Prim::Id(Qual { proto: Some(Proto::Tcp), addr: AddrQ::Port, .. }, Id::Num(81)),
                _
            )
        ));
    }

    #[test]
    fn xor_is_always_shifted() {
        let e = p("1 * 2 ^ 3 + 4 = 0");
        let Expr::Rel(_, Arith::Bin(ArOp::Mul, _, r, _), _, _) = e else { panic!() };
        assert!(
            matches!(*r, Arith::Bin(ArOp::Xor, _, ref rr, _) if matches!(**rr, Arith::Bin(ArOp::Add, ..)))
        );
    }

    #[test]
    fn lexing_like_flex() {
        assert!(parse("len-1 = 0").is_err());
        assert!(parse("len = 4294967296").is_err());
        assert!(matches!(lex("037").unwrap()[0].tok, Tok::Num(31)));
        assert!(matches!(lex("tcp-syn").unwrap()[0].tok, Tok::Num(2)));
        assert!(matches!(lex("0:1:2:3:4:5").unwrap()[0].tok, Tok::Eid([0, 1, 2, 3, 4, 5])));
        assert!(matches!(lex("fe80::1").unwrap()[0].tok, Tok::Hid6(_)));
        let t = lex("tcp[13:1]").unwrap();
        assert!(matches!(t[2].tok, Tok::Num(13)) && matches!(t[3].tok, Tok::Op(":")));
    }

    #[test]
    fn caret_error() {
        let e = parse("tcp port 80 and and").unwrap_err();
        let s = e.to_string();
        assert!(s.contains("tcp port 80 and and"), "{s}");
        assert!(s.contains("                ^^^"), "{s}");
    }
}
