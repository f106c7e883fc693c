//! pcap-filter language ("tcpdump expressions") and pfmatch programs:
//! parser, optimiser, interpreter and Cranelift backend.
//!
//! # What
//!
//! [`Filter::compile`] turns a pcap-filter expression into a predicate over
//! Ethernet frames (DLT_EN10MB) with exactly libpcap's semantics: unsigned
//! 32-bit wrap-around arithmetic, and an out-of-range packet read or a
//! division by zero rejects the packet whatever the rest of the expression
//! says. [`pfmatch::Dispatcher`] compiles a whole `match { ... }` program
//! into one decision DAG that returns the index of the handler to run.
//!
//! # Primitives
//!
//! libpcap's Ethernet primitives, except name resolution (`host NAME`,
//! `port SERVICE`, `gateway`), DECnet addresses (`decnet host / src /
//! dst`), `pppoed`/`pppoes`/`geneve`, `byte`, and the qualifiers of other
//! link types or of capture metadata (`wlan`, `pf`, ATM, `inbound`,
//! `ifindex`, ...): IPv4/IPv6/ARP/RARP and their transports, `host`, `net`,
//! `port`, `portrange`, `proto`, `protochain`, `broadcast`, `multicast`,
//! `less`, `greater`, `vlan`, `mpls`, packet arithmetic (`ip[9]`, `len`),
//! and the legacy LAN protocols with libpcap's 802.3 / 802.2 LLC / SNAP
//! encodings: `atalk`, `aarp`, `decnet`, `lat`, `sca`, `moprc`, `mopdl`,
//! `ipx`, `stp`, `netbeui`, `llc` (with `i`, `s`, `u` and the S/U
//! subtypes), `iso`, `clnp`, `esis`, `isis`, the IS-IS PDU classes `l1`,
//! `l2`, `iih`, `lsp`, `snp`, `csnp`, `psnp`, `iso proto N`, `isis proto N`
//! and `ether proto \NAME` for every name libpcap knows.
//!
//! # Pipeline (after pflua)
//!
//! 1. [`parse`]: lexer and parser with libpcap's grammar and precedence.
//! 2. [`expand`]: every primitive becomes tests with explicit length guards,
//!    in libpcap's evaluation order ([`ir::B`]), then lowered into a DAG of
//!    tests ([`ir::Program`]).
//! 3. [`opt`]: constant folding, range inference, redundant-test removal
//!    (which also merges length checks: a dominated `caplen >= n` vanishes),
//!    then hoisting of length checks ([`opt::hoist_length_checks`]: a guard
//!    is raised to the length every accepting path needs) and a second
//!    round of redundant-test removal.
//! 4. Backends: [`ir::Program::run`] (the reference interpreter, also the
//!    fallback) and [`jit`] (native code through Cranelift).
//!
//! Semantics versus libpcap are checked in the test-suite against
//! `pcap_offline_filter` (see `tests.rs`, and the `libpcap` module available
//! with the `libpcap` cargo feature).
//!
//! # Entry point signature
//!
//! Native code has the signature `fn(packet: *const u8, caplen: u32,
//! wirelen: u32) -> u32`: `len` in a filter is the length on the wire,
//! which differs from the captured length for snapped packets, so both are
//! passed (the two-argument form is [`Filter::matches`] with equal
//! lengths).

pub mod bench;
pub mod expand;
pub mod gen;
pub mod ir;
pub mod jit;
#[cfg(any(test, feature = "libpcap"))]
pub mod libpcap;
pub mod opt;
pub mod parse;
pub mod pcapio;
pub mod pfmatch;
#[cfg(test)]
mod tests;

pub use expand::Options;

use std::fmt;
use std::ops::Range;

/// A compile error with the offending source span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub msg: String,
    pub span: Range<usize>,
    pub src: String,
}

impl Error {
    pub fn new(src: &str, span: Range<usize>, msg: impl Into<String>) -> Error {
        Error { msg: msg.into(), span, src: src.to_string() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.msg)?;
        // Render the line containing the span with a caret underneath.
        let start = self.span.start.min(self.src.len());
        let line_start = self.src[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = self.src[start..].find('\n').map_or(self.src.len(), |i| start + i);
        let line = &self.src[line_start..line_end];
        let col = self.src[line_start..start].chars().count();
        let end = self.span.end.clamp(start, line_end);
        let width = self.src[start..end].chars().count().max(1);
        writeln!(f, "  {line}")?;
        write!(f, "  {}{}", " ".repeat(col), "^".repeat(width))
    }
}

impl std::error::Error for Error {}

/// Link types other than Ethernet are rejected with this message.
pub fn check_linktype(dlt: u32) -> Result<(), String> {
    if dlt == 1 {
        Ok(())
    } else {
        Err(format!(
            "link type {dlt} is not supported: sluice filters only Ethernet (DLT_EN10MB = 1)"
        ))
    }
}

/// Longest accepted source text (bounds memory and recursion).
pub const MAX_SOURCE: usize = 64 * 1024;

/// A compiled pcap-filter expression.
pub struct Filter {
    /// Unoptimised IR, straight from expansion.
    pub raw: ir::Program,
    /// Optimised IR.
    pub ir: ir::Program,
    /// The AST (None: empty expression).
    pub ast: Option<parse::Expr>,
    jit: Option<jit::Compiled>,
}

impl Filter {
    /// Parses, expands and optimises `src`, and compiles it to native code
    /// (falling back to the interpreter if the JIT is unavailable).
    pub fn compile(src: &str, opts: Options) -> Result<Filter, Error> {
        let mut f = Filter::compile_ir(src, opts)?;
        f.jit = jit::Compiled::new(&f.ir).ok();
        Ok(f)
    }

    /// Like [`Filter::compile`] without native code.
    pub fn compile_ir(src: &str, opts: Options) -> Result<Filter, Error> {
        if src.len() > MAX_SOURCE {
            return Err(Error::new(
                src,
                MAX_SOURCE..src.len(),
                format!("expression longer than {MAX_SOURCE} bytes"),
            ));
        }
        let ast = parse::parse(src)?;
        let mut raw = ir::Program::new();
        let b = expand::expand(&mut raw, src, ast.as_ref(), opts)?;
        let acc = raw.node(ir::Node::Ret(ir::ACCEPT));
        let rej = raw.node(ir::Node::Ret(ir::REJECT));
        let fail = raw.node(ir::Node::Fail);
        raw.root = raw.lower(&b, acc, rej, fail);
        let ir = opt::optimize_filter(&raw);
        Ok(Filter { raw, ir, ast, jit: None })
    }

    /// Is native code in use?
    pub fn is_jitted(&self) -> bool {
        self.jit.is_some()
    }

    /// Verdict for a captured packet (`wirelen` = original length).
    pub fn matches_wire(&self, pkt: &[u8], wirelen: u32) -> bool {
        match &self.jit {
            Some(j) => j.run(pkt, wirelen) != ir::REJECT,
            None => self.ir.matches(pkt, wirelen),
        }
    }

    /// Verdict for a complete packet.
    pub fn matches(&self, pkt: &[u8]) -> bool {
        self.matches_wire(pkt, u32::try_from(pkt.len()).unwrap_or(u32::MAX))
    }

    /// Verdicts of a batch of complete packets: `out[i]` for `pkts[i]`, for
    /// `i < min(pkts.len(), out.len())`. With native code this runs one
    /// native loop per chunk instead of one call per packet.
    pub fn matches_batch(&self, pkts: &[&[u8]], out: &mut [bool]) {
        let mut buf = [(&[][..], 0u32); 64];
        for (ps, os) in pkts.chunks(buf.len()).zip(out.chunks_mut(buf.len())) {
            for (b, p) in buf.iter_mut().zip(ps) {
                *b = (p, u32::try_from(p.len()).unwrap_or(u32::MAX));
            }
            let n = ps.len().min(buf.len());
            self.matches_batch_wire(&buf[..n], os);
        }
    }

    /// Like [`Filter::matches_batch`] with `(packet, wirelen)` pairs.
    pub fn matches_batch_wire<P: AsRef<[u8]>>(&self, pkts: &[(P, u32)], out: &mut [bool]) {
        match &self.jit {
            Some(j) => j.matches_batch(pkts, out),
            None => {
                for (o, (p, wl)) in out.iter_mut().zip(pkts) {
                    *o = self.ir.matches(p.as_ref(), *wl);
                }
            }
        }
    }

    /// Verdict of the interpreter over the optimised IR.
    pub fn interp(&self, pkt: &[u8], wirelen: u32) -> bool {
        self.ir.matches(pkt, wirelen)
    }

    /// Cranelift IR text and VCode listing of the native code.
    pub fn jit_text(&self) -> Option<(&str, &str)> {
        self.jit.as_ref().map(|j| (j.clif.as_str(), j.asm.as_str()))
    }
}

/// Fuzz entry: the parser and expander must never panic.
pub fn fuzz_parse(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        if s.len() <= 4096 {
            let _ = Filter::compile_ir(s, Options { netmask: Some(0xffff_ff00) });
        }
    }
}

/// Fuzz entry: compiled code, optimised and unoptimised interpreters agree.
/// Input: expression, a NUL byte, then the packet.
pub fn fuzz_compile_agree(data: &[u8]) {
    let (expr, pkt) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(s) = std::str::from_utf8(expr) else { return };
    if s.len() > 1024 {
        return;
    }
    let Ok(f) = Filter::compile(s, Options { netmask: Some(0xffff_ff00) }) else { return };
    let wl = pkt.len() as u32;
    let a = f.raw.matches(pkt, wl);
    let b = f.ir.matches(pkt, wl);
    let c = f.matches_wire(pkt, wl);
    assert_eq!(a, b, "optimiser changed the verdict of {s:?}");
    assert_eq!(b, c, "native code disagrees with the interpreter on {s:?}");
}
