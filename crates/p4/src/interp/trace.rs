//! Tracing one packet through the interpreter: what `sluice p4 trace`
//! prints, like `ovs-appctl ofproto/trace` for a P4 program.
//!
//! The interpreter keeps an optional event sink (the `trace` field of
//! the per-packet state in `exec.rs`); every hook is one `Option` check when no sink is set, so
//! [`crate::target::Target::packet`] costs the same as before. The sink is
//! set only for the duration of [`Interp::trace_packet`].
//!
//! Events come in the order things happen: each pipeline stage
//! ([`TraceEvent::Stage`]) is followed by what ran inside it — parser
//! states and their `select` decisions, header extracts, a parser error;
//! tables applied with their key values, the entry hit (handle, match,
//! priority) or the miss, the action run with its data; `mark_to_drop`
//! and `digest`;
//! then the traffic manager's decision (unicast, multicast replication or
//! drop), each copy's egress, and finally each output frame or the drop
//! of a copy in egress.

use super::table::{Entry, Pat, TableStatic};
use super::{Inst, Interp, Static};
use crate::ast::{BigValue, Decl};
use crate::target::{CtlResult, KeyMatch, Output};
use crate::value::{Bits, Value};

/// One thing that happened to the traced packet.
#[derive(Clone, Debug, PartialEq)]
pub enum TraceEvent {
    /// A pipeline stage starts: `parser`, `verifyChecksum`, `ingress`,
    /// `egress`, `computeChecksum`, `deparser` (the block's name after
    /// a colon, e.g. `ingress: RouterIngress`).
    Stage { stage: &'static str, block: String },
    /// A parser state is entered (sub-parsers included).
    ParserState { state: String },
    /// A `select` picked `next` for these values (`None`: no case
    /// matched, the parser rejects with `error.NoMatch`).
    Select { values: Vec<Value>, next: Option<String> },
    /// `extract` filled a header (as the program names it) with `bits`.
    Extract { header: String, bits: usize },
    /// The parser ended with this error (not `NoError`).
    ParserError { error: String },
    /// verifyChecksum found a bad checksum.
    ChecksumError,
    /// A table is applied with these key values (name, value).
    Table { table: String, keys: Vec<(String, Bits)> },
    /// The entry the lookup found: handle, its match and priority as the
    /// control plane sees them.
    Hit { handle: u64, keys: Vec<(String, KeyMatch)>, priority: Option<i128> },
    /// No entry matched: the default action runs.
    Miss,
    /// An action runs with its action-data (directionless) arguments.
    Action { action: String, args: Vec<(String, Value)> },
    /// `mark_to_drop(standard_metadata)`.
    MarkToDrop,
    /// `digest(receiver, data)` queued this for the controller.
    Digest { receiver: u64, data: Value },
    /// Ingress ended with these `egress_spec` and `mcast_grp`.
    IngressEnd { egress_spec: u64, mcast_grp: u64 },
    /// Multicast group `group` replicates to these `(rid, port)` copies.
    Replicate { group: u64, copies: Vec<(u32, u32)> },
    /// The packet is dropped at the traffic manager (egress_spec 511 and
    /// no multicast group, or an empty group).
    Drop,
    /// One copy starts egress on `port` (`rid` for a multicast copy).
    Egress { port: u32, rid: Option<u32> },
    /// Egress dropped the copy for `port`.
    EgressDrop { port: u32 },
    /// A frame leaves.
    Output { port: u32, data: Vec<u8> },
}

impl Interp {
    /// Runs one packet as [`crate::target::Target::packet`] does and
    /// records what happens on the way: the events, and the outputs or
    /// the run-time failure (the events then say how far it got).
    pub fn trace_packet(
        &mut self,
        port: u32,
        data: &[u8],
    ) -> (Vec<TraceEvent>, CtlResult<Vec<Output>>) {
        let s = self.s.clone();
        super::exec::trace_packet(&s, &mut self.d, port, data)
    }
}

/// Most events one trace records; later ones are left out (a packet
/// runs at most a million statements, so this only bounds memory).
pub const MAX_TRACE_EVENTS: usize = 100_000;

/// The declared name of a parser or control instance.
pub(super) fn block_name(s: &Static, inst: usize) -> String {
    let Some(Inst::Block(b)) = s.insts.get(inst) else {
        return String::new();
    };
    match s.prog.decls.get(b.decl) {
        Some(Decl::Parser(p)) => p.name.name.clone(),
        Some(Decl::Control(c)) => c.name.name.clone(),
        _ => String::new(),
    }
}

/// The hit event of an entry, its match as the control plane sees it.
pub(super) fn hit(ts: &TableStatic, e: &Entry) -> TraceEvent {
    let keys = ts
        .keys
        .iter()
        .zip(&e.keys)
        .map(|(k, p)| {
            let m = match p {
                Pat::Exact(v) => KeyMatch::Exact(v.to_big()),
                Pat::Ternary(v, m) => KeyMatch::Ternary { value: v.to_big(), mask: m.to_big() },
                Pat::Lpm(v, l) => KeyMatch::Lpm { value: v.to_big(), prefix_len: *l },
                Pat::Range(lo, hi) => KeyMatch::Range { lo: lo.to_big(), hi: hi.to_big() },
                Pat::Any => KeyMatch::Any,
            };
            (k.name.clone(), m)
        })
        .collect();
    TraceEvent::Hit { handle: e.handle, keys, priority: e.explicit_prio.then_some(e.prio) }
}

/// A number for a trace line: narrower than 16 bits in decimal (`64`,
/// a port), wider ones in hex with every digit of the width (`0x0800`,
/// `0x0a000202`).
pub fn show_bits(b: &Bits) -> String {
    if b.width() < 16 {
        return b.low_u64().to_string();
    }
    let digits = (b.width() as usize).div_ceil(4);
    let h = b.to_hex();
    format!("0x{}{h}", "0".repeat(digits.saturating_sub(h.len())))
}

/// A value for a trace line: numbers as [`show_bits`], booleans, errors
/// as `error.X`, anything else by its kind.
pub fn show_value(v: &Value) -> String {
    match v {
        Value::Bits(b) | Value::Signed(b) => show_bits(b),
        Value::Varbit { bits, .. } => show_bits(bits),
        Value::Int(i) => i.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Error(e) => format!("error.{e}"),
        Value::Enum { ty, member } => format!("{ty}.{member}"),
        Value::Str(s) => s.clone(),
        Value::Tuple(t) => {
            format!("({})", t.iter().map(show_value).collect::<Vec<_>>().join(", "))
        }
        Value::Struct(a) | Value::Header(a) => {
            let f: Vec<String> =
                a.ty.fields
                    .iter()
                    .zip(&a.fields)
                    .map(|((n, _), v)| format!("{n}={}", show_value(v)))
                    .collect();
            format!("{{{}}}", f.join(", "))
        }
        other => other.kind_name().to_string(),
    }
}

/// A control-plane value of a `width`-bit key as [`show_bits`].
pub fn show_big(v: &BigValue, width: u32) -> String {
    show_bits(&Bits::from_big(width, v))
}

/// A key match of a `width`-bit key as `simple_switch_CLI` writes it
/// (`0x0a000200/24`, `V&&&M`, `LO->HI`, `*`).
pub fn show_match(m: &KeyMatch, width: u32) -> String {
    let v = |x: &BigValue| show_big(x, width);
    match m {
        KeyMatch::Exact(x) => v(x),
        KeyMatch::Ternary { value, mask } => format!("{}&&&{}", v(value), v(mask)),
        KeyMatch::Lpm { value, prefix_len } => format!("{}/{prefix_len}", v(value)),
        KeyMatch::Range { lo, hi } => format!("{}->{}", v(lo), v(hi)),
        KeyMatch::Any => "*".into(),
    }
}
