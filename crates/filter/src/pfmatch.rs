//! pfmatch: dispatch programs over pcap-filter expressions (after pflua's
//! `pfmatch`).
//!
//! ```text
//! match {
//!   -- comments run to the end of the line
//!   tcp dst port 80          => output(2)
//!   ip and udp               => match {
//!       udp dst port 53      => controller
//!       otherwise            => drop     -- a nested block is final
//!   }
//!   vlan 10 and ip           => handle(&ip[0], ip[9])
//!   otherwise                => flood
//! }
//! ```
//!
//! Semantics (pflua's): clauses are tried in order and the first whose
//! filter matches selects its handler. A clause whose filter *fails* (an
//! out-of-range read, a division by zero) or whose handler arguments cannot
//! be evaluated (the protocol is absent, the read is out of range) does not
//! match, and the next clause is tried. When a clause with a nested `match`
//! matches, the nested block decides alone: if none of its clauses match, the
//! program returns "no match" without going back to the outer clauses.
//! Clauses may be separated by `;` or newlines.
//!
//! All clauses compile into one decision DAG returning the handler's index,
//! so the optimiser shares tests between clauses (an ethertype tested by the
//! first clause is not tested again by the second) and the JIT emits one
//! function for the whole table.

use crate::expand::{Expander, Options};
use crate::ir::{Node, NodeId, Program, ValId, B};
use crate::parse::{self, Span};
use crate::Error;

/// Value returned when no clause matches.
pub const NO_MATCH: u32 = u32::MAX;

/// A forwarding action, when the handler is one the switch knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Output(u32),
    Drop,
    Controller,
    Flood,
}

/// One handler call site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handler {
    pub name: String,
    /// Source text of each argument.
    pub arg_src: Vec<String>,
    /// Argument values in the raw program.
    args: Vec<ValId>,
    /// Source line of the clause (1-based).
    pub line: usize,
}

impl Handler {
    /// The switch action this handler names, if any.
    pub fn action(&self) -> Option<Action> {
        match (self.name.as_str(), self.arg_src.len()) {
            ("drop", 0) => Some(Action::Drop),
            ("controller", 0) => Some(Action::Controller),
            ("flood", 0) => Some(Action::Flood),
            ("output", 1) => self.arg_src[0].trim().parse().ok().map(Action::Output),
            _ => None,
        }
    }

    /// `name(args)` as written.
    pub fn display(&self) -> String {
        if self.arg_src.is_empty() {
            self.name.clone()
        } else {
            format!("{}({})", self.name, self.arg_src.join(", "))
        }
    }
}

/// A compiled pfmatch program.
pub struct Dispatcher {
    pub handlers: Vec<Handler>,
    pub raw: Program,
    pub ir: Program,
    jit: Option<crate::jit::Compiled>,
}

enum Target {
    Handler(usize),
    Nested(Vec<Clause>),
}

struct Clause {
    cond: B,
    target: Target,
}

struct P<'a> {
    src: &'a str,
    /// Source with comments blanked out (same offsets).
    text: String,
    pos: usize,
    prog: Program,
    handlers: Vec<Handler>,
    opts: Options,
    depth: usize,
}

fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    for line in src.split_inclusive('\n') {
        match line.find("--") {
            Some(i) => {
                out.push_str(&line[..i]);
                for c in line[i..].chars() {
                    out.push(if c == '\n' { '\n' } else { ' ' });
                }
            }
            None => out.push_str(line),
        }
    }
    out
}

fn shift(e: Error, off: usize, src: &str) -> Error {
    Error { msg: e.msg, span: e.span.start + off..e.span.end + off, src: src.to_string() }
}

impl<'a> P<'a> {
    fn err(&self, span: Span, msg: &str) -> Error {
        Error::new(self.src, span, msg)
    }
    fn ws(&mut self) {
        let b = self.text.as_bytes();
        while self.pos < b.len() && (b[self.pos].is_ascii_whitespace() || b[self.pos] == b';') {
            self.pos += 1;
        }
    }
    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }
    fn keyword(&mut self, k: &str) -> bool {
        let r = self.rest();
        if r.starts_with(k)
            && !r[k.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        {
            self.pos += k.len();
            true
        } else {
            false
        }
    }
    fn expect(&mut self, s: &str) -> Result<(), Error> {
        self.ws();
        if self.rest().starts_with(s) {
            self.pos += s.len();
            Ok(())
        } else {
            let end = (self.pos + 1).min(self.text.len());
            Err(self.err(self.pos..end, &format!("expected '{s}'")))
        }
    }

    fn line_of(&self, pos: usize) -> usize {
        self.src[..pos.min(self.src.len())].matches('\n').count() + 1
    }

    /// `match { clause* }`
    fn block(&mut self) -> Result<Vec<Clause>, Error> {
        self.depth += 1;
        if self.depth > 64 {
            return Err(self.err(self.pos..self.pos + 1, "match blocks nested too deeply"));
        }
        self.ws();
        if !self.keyword("match") {
            let end = (self.pos + 1).min(self.text.len());
            return Err(self.err(self.pos..end, "expected 'match'"));
        }
        self.expect("{")?;
        let mut clauses = Vec::new();
        loop {
            self.ws();
            if self.rest().starts_with('}') {
                self.pos += 1;
                break;
            }
            if self.pos >= self.text.len() {
                return Err(self.err(self.pos..self.pos, "unterminated match block: expected '}'"));
            }
            clauses.push(self.clause()?);
        }
        self.depth -= 1;
        Ok(clauses)
    }

    fn clause(&mut self) -> Result<Clause, Error> {
        let src = self.src;
        let opts = self.opts;
        let start = self.pos;
        let Some(arrow) = self.rest().find("=>") else {
            let end = self.text.len();
            return Err(self.err(start..end, "expected 'FILTER => handler'"));
        };
        let ftext = self.text[start..start + arrow].to_string();
        let line = self.line_of(start);
        self.pos = start + arrow + 2;
        let trimmed = ftext.trim();
        let ast = if trimmed == "otherwise" {
            None
        } else {
            if trimmed.is_empty() {
                return Err(self.err(start..start + arrow + 2, "missing filter before '=>'"));
            }
            parse::parse(&ftext).map_err(|e| shift(e, start, src))?
        };
        self.ws();
        if self.rest().starts_with("match") {
            let cond = Expander::new(&mut self.prog, &ftext, opts)
                .filter(ast.as_ref())
                .map_err(|e| shift(e, start, src))?;
            let inner = self.block()?;
            return Ok(Clause { cond, target: Target::Nested(inner) });
        }
        // handler name
        let nstart = self.pos;
        let b = self.text.as_bytes();
        let mut i = self.pos;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
            i += 1;
        }
        if i == nstart {
            let end = (nstart + 1).min(self.text.len());
            return Err(self.err(nstart..end, "expected a handler name or 'match'"));
        }
        let name = self.text[nstart..i].to_string();
        self.pos = i;
        // (is address-of, text, offset of text in the program)
        let mut raw_args: Vec<(bool, String, usize)> = Vec::new();
        if self.rest().starts_with('(') {
            self.pos += 1;
            let bytes = self.text.as_bytes();
            let mut depth = 0i32;
            let mut seg = self.pos;
            let mut j = self.pos;
            loop {
                let Some(&c) = bytes.get(j) else {
                    return Err(self.err(nstart..j, "unterminated argument list"));
                };
                match c {
                    b'(' | b'[' => depth += 1,
                    b']' => depth -= 1,
                    b')' if depth > 0 => depth -= 1,
                    b',' | b')' if depth == 0 => {
                        let a = &self.text[seg..j];
                        if !(c == b')' && a.trim().is_empty() && raw_args.is_empty()) {
                            let lead = a.len() - a.trim_start().len();
                            match a.trim_start().strip_prefix('&') {
                                Some(rest) => {
                                    raw_args.push((true, rest.to_string(), seg + lead + 1))
                                }
                                None => raw_args.push((false, a.to_string(), seg)),
                            }
                        }
                        seg = j + 1;
                        if c == b')' {
                            j += 1;
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            self.pos = j;
        }
        let mut ex = Expander::new(&mut self.prog, &ftext, opts);
        let mut cond = ex.filter(ast.as_ref()).map_err(|e| shift(e, start, src))?;
        let mut args = Vec::new();
        let mut arg_src = Vec::new();
        for (addr, body, off) in &raw_args {
            let ar = parse::parse_arith(body).map_err(|e| shift(e, *off, src))?;
            let (ok, v) =
                ex.argument(&ar, *addr, &(0..body.len())).map_err(|e| shift(e, *off, src))?;
            cond = B::and(cond, ok);
            args.push(v);
            arg_src.push(format!("{}{}", if *addr { "&" } else { "" }, body.trim()));
        }
        let idx = self.handlers.len();
        self.handlers.push(Handler { name, arg_src, args, line });
        Ok(Clause { cond, target: Target::Handler(idx) })
    }
}

fn lower_block(
    p: &mut Program,
    clauses: &[Clause],
    nomatch: NodeId,
    fail_of_last: NodeId,
) -> NodeId {
    let mut next = fail_of_last;
    for c in clauses.iter().rev() {
        let target = match &c.target {
            Target::Handler(i) => p.node(Node::Ret(*i as u32)),
            Target::Nested(inner) => lower_block(p, inner, nomatch, nomatch),
        };
        // A failing filter makes the clause not match: fail -> next clause.
        next = p.lower(&c.cond, target, next, next);
    }
    next
}

impl Dispatcher {
    /// Compiles a pfmatch program (JIT with interpreter fallback).
    pub fn compile(src: &str, opts: Options) -> Result<Dispatcher, Error> {
        let mut d = Dispatcher::compile_ir(src, opts)?;
        d.jit = crate::jit::Compiled::with_fail(&d.ir, NO_MATCH).ok();
        Ok(d)
    }

    /// Compiles without native code.
    pub fn compile_ir(src: &str, opts: Options) -> Result<Dispatcher, Error> {
        if src.len() > 4 * crate::MAX_SOURCE {
            return Err(Error::new(src, 0..1, "program too long"));
        }
        let mut p = P {
            src,
            text: strip_comments(src),
            pos: 0,
            prog: Program::new(),
            handlers: vec![],
            opts,
            depth: 0,
        };
        let clauses = p.block()?;
        p.ws();
        if p.pos < p.text.len() {
            return Err(p.err(p.pos..p.text.len(), "unexpected text after the match block"));
        }
        let mut prog = p.prog;
        let nomatch = prog.node(Node::Ret(NO_MATCH));
        prog.root = lower_block(&mut prog, &clauses, nomatch, nomatch);
        let ir = crate::opt::optimize(&prog);
        Ok(Dispatcher { handlers: p.handlers, raw: prog, ir, jit: None })
    }

    pub fn is_jitted(&self) -> bool {
        self.jit.is_some()
    }

    /// Index of the selected handler, or `None`.
    pub fn dispatch(&self, pkt: &[u8], wirelen: u32) -> Option<usize> {
        let r = match &self.jit {
            Some(j) => j.run(pkt, wirelen),
            None => self.ir.run(pkt, wirelen).unwrap_or(NO_MATCH),
        };
        self.index(r)
    }

    /// The same through the optimised-IR interpreter.
    pub fn dispatch_interp(&self, pkt: &[u8], wirelen: u32) -> Option<usize> {
        self.index(self.ir.run(pkt, wirelen).unwrap_or(NO_MATCH))
    }

    /// The same through the unoptimised IR.
    pub fn dispatch_raw(&self, pkt: &[u8], wirelen: u32) -> Option<usize> {
        self.index(self.raw.run(pkt, wirelen).unwrap_or(NO_MATCH))
    }

    fn index(&self, r: u32) -> Option<usize> {
        if r == NO_MATCH || r as usize >= self.handlers.len() {
            None
        } else {
            Some(r as usize)
        }
    }

    /// Selected handler and its evaluated arguments.
    pub fn dispatch_args(&self, pkt: &[u8], wirelen: u32) -> Option<(usize, Vec<u32>)> {
        let h = self.dispatch(pkt, wirelen)?;
        let handler = self.handlers.get(h)?;
        let mut out = Vec::with_capacity(handler.args.len());
        for a in &handler.args {
            // The clause's condition made every argument evaluable.
            out.push(self.raw.eval_val(*a, pkt, wirelen, 0)?);
        }
        Some((h, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![0xff; 6];
        v.extend_from_slice(&[0, 1, 2, 3, 4, 5]);
        v.extend_from_slice(&ethertype.to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    fn ipv4(proto: u8, sport: u16, dport: u16) -> Vec<u8> {
        let mut ip = vec![0x45, 0, 0, 40, 0, 1, 0, 0, 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        ip.extend_from_slice(&sport.to_be_bytes());
        ip.extend_from_slice(&dport.to_be_bytes());
        ip.extend_from_slice(&[0; 16]);
        eth(0x0800, &ip)
    }

    const PROG: &str = "match {
        -- web traffic to port 2
        tcp dst port 80 => output(2)
        ip and udp => match {
            udp dst port 53 => controller   -- DNS
            udp[100] = 1 => output(9)       -- never evaluable on short packets
        }
        ip[9] = 1 => icmp(&ip[0], ip[9])
        arp => flood
        otherwise => drop
    }";

    #[test]
    fn expected_handler_per_packet() {
        let d = Dispatcher::compile(PROG, Options::default()).unwrap();
        let names: Vec<String> = d.handlers.iter().map(Handler::display).collect();
        assert_eq!(
            names,
            ["output(2)", "controller", "output(9)", "icmp(&ip[0], ip[9])", "flood", "drop"]
        );
        let cases: Vec<(Vec<u8>, Option<usize>)> = vec![
            (ipv4(6, 1234, 80), Some(0)),
            (ipv4(17, 1234, 53), Some(1)),
            // udp, not DNS: nested block is final, even though `otherwise` would match.
            (ipv4(17, 1234, 54), None),
            (ipv4(1, 0, 0), Some(3)),
            (eth(0x0806, &[0; 28]), Some(4)),
            (ipv4(6, 1234, 81), Some(5)),
            (eth(0x86dd, &[0; 40]), Some(5)),
            // a 10-byte frame: every filter fails -> next clause -> otherwise
            (vec![0; 10], Some(5)),
        ];
        for (pkt, want) in &cases {
            let wl = pkt.len() as u32;
            assert_eq!(d.dispatch(pkt, wl), *want, "{pkt:02x?}");
            assert_eq!(d.dispatch_interp(pkt, wl), *want);
            assert_eq!(d.dispatch_raw(pkt, wl), *want);
        }
        assert_eq!(d.dispatch_args(&ipv4(1, 0, 0), 54), Some((3, vec![14, 1])));
        assert_eq!(d.handlers[0].action(), Some(Action::Output(2)));
        assert_eq!(d.handlers[5].action(), Some(Action::Drop));
    }

    #[test]
    fn unevaluable_argument_skips_clause() {
        let d =
            Dispatcher::compile("match { ip => f(tcp[0:2]) ; otherwise => g }", Options::default())
                .unwrap();
        assert_eq!(d.dispatch(&ipv4(6, 7, 8), 54), Some(0));
        assert_eq!(d.dispatch_args(&ipv4(6, 7, 8), 54), Some((0, vec![7])));
        // ICMP: tcp[0:2] cannot be evaluated -> the clause does not match.
        assert_eq!(d.dispatch(&ipv4(1, 7, 8), 54), Some(1));
        // Division by zero in an argument.
        let d = Dispatcher::compile(
            "match { ip => f(1 / ip[10]) ; otherwise => g }",
            Options::default(),
        )
        .unwrap();
        assert_eq!(d.dispatch(&ipv4(1, 7, 8), 54), Some(1));
    }

    #[test]
    fn errors_point_into_the_program() {
        let e = Dispatcher::compile_ir("match {\n  tcp port 99999 => drop\n}", Options::default())
            .err()
            .unwrap();
        assert!(e.to_string().contains("tcp port 99999"), "{e}");
        let e = Dispatcher::compile_ir("match { tcp => }", Options::default()).err().unwrap();
        assert!(e.msg.contains("handler"), "{e}");
        assert!(Dispatcher::compile_ir("match { tcp => drop", Options::default()).is_err());
    }

    #[test]
    fn shares_tests_between_clauses() {
        let src = "match { tcp port 80 => a; tcp port 81 => b; tcp port 82 => c; otherwise => d }";
        let d = Dispatcher::compile_ir(src, Options::default()).unwrap();
        let n_raw = d.raw.reachable().len();
        let n_opt = d.ir.reachable().len();
        assert!(n_opt < n_raw, "{n_opt} >= {n_raw}");
    }
}
