//! The compiled engine: a v1model program running through the core's
//! walk ([`sluice_core::walk`]) with its caches.
//!
//! # What
//! [`Compiled::new`] lowers a loaded program — the parse program
//! ([`super::parser`]), `verify_checksum` calls, the ingress and egress
//! controls as one control graph ([`super::control`]), the traffic
//! manager, `update_checksum` calls and the deparser's `emit`s — and
//! implements both the core's [`Frontend`] and [`Target`], so the STF
//! runner ([`crate::stf`]) drives it exactly as it drives the reference
//! interpreter.
//!
//! # Basic design
//! The control plane is the interpreter's: `Compiled` keeps an
//! [`Interp`] whose table state ([`crate::interp::table`]) converts
//! every request (match kinds, values, priorities, `const entries`,
//! default actions) and is the source every core table is built from:
//! each entry becomes `coretable` rules (ranked as the interpreter ranks
//! them: prefix length in LPM tables, then priority, then order) and a
//! key program compiled from its action with its action data bound as
//! constants. A control-plane change rebuilds what it touched and bumps
//! the flow generation, so no cache entry outlives it.
//!
//! The pipeline graph, in order: ingress; a branch on
//! `egress_spec == 511` (drop: the walk ends); the traffic manager (a
//! key program: `egress_port = egress_spec`, `egress_spec = 512` held
//! as 0 in its 9 bits, `instance_type = 0`); egress; a table whose one
//! entry is an [`Op::Output`]. The front end's `forward` for that op
//! transmits nothing when `egress_spec` is the drop port (the drop test
//! after egress, kept out of the graph so a cached way stays within a
//! cache chain: see `fuse_fixed`), runs `update_checksum`s on a copy of
//! the key, emits the valid headers in `emit` order, appends the frame's
//! bytes after the parser's cursor and transmits on `egress_port`.
//! `verify_checksum`s run right after the parse program, inside the
//! front end's [`Parse`] hook, and set `checksum_error`.
//!
//! Multicast: right after ingress a branch on `mcast_grp != 0` (a group
//! wins over `egress_spec`, as in bmv2) leads to an `Op::Group`
//! ([`REPLICATE`]) whose `forward` keeps the key ingress left. After the
//! walk, [`Compiled::packet`] runs each `(rid, port)` copy of the group
//! (groups are the interpreter's, set through [`Target`]) through the
//! egress part of the same graph ([`Front::egress_graph`], its own
//! worker and caches) with `egress_port`, `egress_spec` 512 (0 in 9
//! bits), `instance_type` 5 and `egress_rid` set, as the interpreter's
//! traffic manager does. Extern calls (`hash`, `digest`, register
//! `read`/`write`, `counter.count`) are the other `Op::Group`s, run on
//! the engine's [`ExtState`] ([`super::externs`]); registers of up to 64
//! bits and counters answer `sluice p4 ctl` from there, digests queue
//! as the interpreter's do ([`Compiled::take_digests`]). A program that
//! reads a register runs with its caches off.
//!
//! Refused by name: nested control instances, direct counters, meters,
//! `clone`, `resubmit`, `truncate`, extern calls under a condition,
//! checksum algorithms other than `csum16` and `*_with_payload`, and
//! whatever the action compiler ([`super::action`]) refuses.
//!
//! # Invariants
//! - Same outputs as the interpreter for every program it compiles, in
//!   every cache mode, indexed or scanned (`tests/lower_engine.rs`).
//! - No panics on any packet; each packet walks an acyclic graph of
//!   bounded programs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sluice_core::cache::CacheStats;
use sluice_core::graph::{Graph, KeyTest, Node};
use sluice_core::guard::GuardSet;
use sluice_core::keyop::{Insn, KeyProg, MaskedSlot, Slot};
use sluice_core::op::{EntryOps, Op};
use sluice_core::pkt::{Parse, Pkt, MAX_FRAME};
use sluice_core::tally::{Shard, Tally};
use sluice_core::walk::{self, CacheMode, Counting, Flow, Frontend, Table, Tx, Worker};
use sluice_packet::key::{FlowKey, FlowMask};
use sluice_packet::parse::{Meta, ParseInfo};

use super::action::Gen;
use super::control::{Builder, Ctl, TabDef, TableKeys};
use super::externs::{ExtCall, ExtState};
use super::layout::{FieldTy, Layout, Root};
use super::parser::ParseProg;
use super::refuse;
use crate::ast::{BigValue, Decl, Expr, ExprKind, Local, Stmt};
use crate::coretable::{self, Index, KeyPlace, Pat, Rule};
use crate::diag::{Diagnostic, Result};
use crate::interp::table::{Lookup, Pat as IPat};
use crate::interp::{Interp, Static};
use crate::parse::Loaded;
use crate::target::{CtlResult, EntryDump, EntrySpec, Manage, Output, TableInfo, Target};
use crate::value::{Bits, Value};

/// One entry of a core table.
#[derive(Debug)]
pub struct CoreEntry {
    ops: Arc<EntryOps>,
    stats: Tally,
    counting: Counting,
}

impl walk::Entry for CoreEntry {
    fn ops(&self) -> &Arc<EntryOps> {
        &self.ops
    }
    fn guards(&self) -> &GuardSet {
        static NONE: std::sync::LazyLock<GuardSet> = std::sync::LazyLock::new(GuardSet::default);
        &NONE
    }
    fn counters(&self) -> &Tally {
        &self.stats
    }
    fn counting(&self) -> Counting {
        self.counting
    }
}

/// An entry nothing reads the counters of (a catch-all's: a default
/// action, synthetic code), so a hit on it costs nothing.
fn entry(ops: EntryOps) -> CoreEntry {
    CoreEntry { ops: Arc::new(ops), stats: Tally::new(3, 2), counting: Counting::NONE }
}

/// What a control-plane entry counts: its packets, which idle timeouts
/// read ([`Manage::entry_hits`]); P4 has no byte or time-of-use counts
/// of table entries (direct counters are externs of their own).
const ENTRY_COUNTING: Counting = Counting { packets: true, bytes: false, used: false };

/// Sentinel for [`CoreTable::handles`] of a catch-all table's entry.
const NO_HANDLE: u64 = u64::MAX;

/// A core table: a P4 table's entries (with their rules), or one
/// catch-all entry (a default action, synthetic code).
#[derive(Debug)]
pub struct CoreTable {
    entries: Vec<CoreEntry>,
    /// `handles[i]`: the control plane's handle of `entries[i]`.
    handles: Vec<u64>,
    places: Vec<KeyPlace>,
    rules: Vec<Rule>,
    /// Answers an entry's position in `entries` (its handle), so a hit
    /// needs no map from the rule's `seq`.
    index: Index,
    /// Every bit the keys occupy (what a scan consults).
    keymask: FlowMask,
    stats: Arc<Tally>,
}

impl CoreTable {
    fn new(places: Vec<KeyPlace>) -> CoreTable {
        let mut keymask = FlowMask::ZERO;
        for p in &places {
            for s in &p.slots {
                keymask.words[usize::from(s.word)] |= s.mask();
            }
        }
        CoreTable {
            entries: Vec::new(),
            handles: Vec::new(),
            index: Index::new(places.clone()),
            places,
            rules: Vec::new(),
            keymask,
            stats: Arc::new(Tally::new(2, 2)),
        }
    }

    fn catch_all(ops: EntryOps) -> CoreTable {
        let mut t = CoreTable::new(Vec::new());
        t.entries.push(entry(ops));
        t.handles.push(NO_HANDLE);
        t
    }

    /// Adds the entry with control-plane handle `handle`; `stats`: the
    /// counts it had in the table this one replaces (a rebuild keeps
    /// every entry's hits: idle timeouts read them).
    fn push(
        &mut self,
        rule: Rule,
        ops: EntryOps,
        handle: u64,
        stats: Option<Tally>,
    ) -> std::result::Result<(), String> {
        self.index.insert_as(&rule, self.entries.len() as u64)?;
        self.rules.push(rule);
        let mut e = entry(ops);
        e.counting = ENTRY_COUNTING;
        if let Some(stats) = stats {
            e.stats = stats;
        }
        self.entries.push(e);
        self.handles.push(handle);
        Ok(())
    }

    fn scan(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize> {
        if self.places.is_empty() {
            return (!self.entries.is_empty()).then_some(0);
        }
        for (w, m) in wc.words.iter_mut().zip(self.keymask.words) {
            *w |= m;
        }
        // `rules[i]` is `entries[i]`'s rule (`push`).
        coretable::scan_pos(&self.places, &self.rules, key)
    }
}

impl Table for CoreTable {
    type Entry = CoreEntry;
    fn counters(&self) -> &Arc<Tally> {
        &self.stats
    }
    /// Nothing reads a P4 table's lookup counts.
    fn counted(&self) -> bool {
        false
    }
    fn entries(&self) -> &[CoreEntry] {
        &self.entries
    }
    fn has_guards(&self) -> bool {
        false
    }
    fn lookup_fast(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize> {
        if self.places.is_empty() {
            return (!self.entries.is_empty()).then_some(0);
        }
        self.index.lookup(key, wc).map(|h| h as usize)
    }
    fn lookup_scan(&self, key: &FlowKey) -> Option<usize> {
        let mut wc = FlowMask::ZERO;
        self.scan(key, &mut wc)
    }
    fn lookup_scan_wc(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize> {
        self.scan(key, wc)
    }
    fn lookup_guarded(
        &self,
        key: &FlowKey,
        wc: &mut FlowMask,
        indexed: bool,
        _accept: &mut dyn FnMut(usize) -> bool,
    ) -> Option<usize> {
        // No entry carries guards.
        if indexed {
            self.lookup_fast(key, wc)
        } else {
            self.scan(key, wc)
        }
    }
}

/// A piece of a checksum's field list, flattened when the program is
/// compiled: a field's key slot or up to 64 bits of a constant.
#[derive(Clone, Copy, Debug)]
enum CsItem {
    Slot(Slot),
    Const {
        value: u64,
        width: u8,
    },
    /// A key slot of a varbit field whose lowest bit is bit `lo` of the
    /// field: only the field's current `len` low bits are covered (the
    /// value is right-aligned in its maximum width), as the interpreter
    /// concatenates a varbit's current bits.
    Varbit {
        slot: Slot,
        lo: u32,
        len: Slot,
    },
}

/// A `verify_checksum`/`update_checksum` call (csum16).
#[derive(Clone, Debug)]
struct Csum {
    /// The header whose validity is the condition (`None`: always).
    cond: Option<Slot>,
    items: Vec<CsItem>,
    dst: Slot,
    /// The items are one whole header but `dst` ([`Whole::of`]): the
    /// sum can be taken over that header's bytes.
    whole: Option<Whole>,
}

/// A checksum whose items are every field of one header in order, less
/// its own 16-bit field `dst`, which lies on a 16-bit boundary of a
/// header of whole 16-bit words (IPv4's `hdrChecksum`, UDP's and TCP's
/// over their headers alone). The items' 16-bit words are then the
/// header's words less `dst`'s, so their sum is the integer sum of the
/// header's bytes as big-endian words less `dst`: the same number
/// [`SumOut`] reaches field by field, from bytes already in memory (the
/// packet when verifying, the deparser's output when updating).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Whole {
    header: usize,
    /// The header's length in bytes (even).
    bytes: usize,
    /// `dst`'s byte offset in the header (even).
    dst_at: usize,
}

impl Whole {
    /// The whole-header form of a checksum, if it has one (the
    /// condition must be the header's validity or none).
    fn of(l: &Layout, cond: Option<Slot>, items: &[CsItem], dst: Slot) -> Option<Whole> {
        if dst.width != 16 {
            return None;
        }
        let (header, hd) = l.headers.iter().enumerate().find(|(_, hd)| {
            hd.root == Root::Headers
                && hd.fields.iter().any(|&f| l.fields.get(f).is_some_and(|x| x.slots == [dst]))
        })?;
        if cond.is_some_and(|c| c != hd.valid) {
            return None;
        }
        let mut slots = Vec::new();
        for &f in &hd.fields {
            let fd = l.fields.get(f)?;
            if !matches!(fd.ty, FieldTy::Bits { .. }) {
                return None;
            }
            slots.extend(fd.slots.iter().copied());
        }
        let at = slots.iter().position(|&s| s == dst)?;
        let before: u32 = slots[..at].iter().map(|s| u32::from(s.width)).sum();
        let total: u32 = slots.iter().map(|s| u32::from(s.width)).sum();
        if before % 16 != 0 || total % 16 != 0 {
            return None;
        }
        let rest = slots.iter().enumerate().filter(|&(i, _)| i != at).map(|(_, s)| s);
        let same = items.len() + 1 == slots.len()
            && items.iter().zip(rest).all(|(it, s)| matches!(it, CsItem::Slot(x) if x == s));
        same.then_some(Whole { header, bytes: total as usize / 8, dst_at: before as usize / 8 })
    }

    /// The checksum of the header whose bytes are `b` (`None`: `b` is
    /// too short), and the value its `dst` has there.
    #[inline]
    fn sum(&self, b: &[u8]) -> Option<(u64, u64)> {
        let b = b.get(..self.bytes)?;
        let old = b.get(self.dst_at..self.dst_at + 2)?;
        let old = u64::from(u16::from_be_bytes([old[0], old[1]]));
        // Eight bytes at a time, then four and two (the length is even).
        let mut sum = 0u64;
        let mut i = 0;
        while let Some(c) = b.get(i..i + 8) {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            sum += words16(u64::from_be_bytes(a));
            i += 8;
        }
        if let Some(c) = b.get(i..i + 4) {
            sum += words16(u64::from(u32::from_be_bytes([c[0], c[1], c[2], c[3]])));
            i += 4;
        }
        if let Some(c) = b.get(i..i + 2) {
            sum += u64::from(u16::from_be_bytes([c[0], c[1]]));
        }
        Some((fold_not(sum - old), old))
    }
}

/// The one's complement of a sum of 16-bit words folded to 16 bits.
#[inline]
fn fold_not(mut s: u64) -> u64 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !s & 0xffff
}

/// Writes a big-endian bit string into bytes, 64 bits at a time (a
/// header's fields are rarely byte-aligned one by one, their sum is).
struct BitOut<'a> {
    out: &'a mut Vec<u8>,
    /// Bits not yet written, right-aligned; fewer than 64.
    acc: u128,
    n: u32,
}

impl<'a> BitOut<'a> {
    fn new(out: &'a mut Vec<u8>) -> BitOut<'a> {
        out.clear();
        BitOut { out, acc: 0, n: 0 }
    }

    /// Appends the low `width` bits of `v`, most significant first.
    #[inline]
    fn put(&mut self, v: u64, width: u8) {
        let w = u32::from(width).min(64);
        if w == 0 {
            return;
        }
        let v = v & sluice_core::keyop::ones(w as u8);
        // n < 64 and w ≤ 64: the shifted bits fit in 128.
        self.acc = (self.acc << w) | u128::from(v);
        self.n += w;
        if self.n >= 64 {
            self.n -= 64;
            self.out.extend_from_slice(&((self.acc >> self.n) as u64).to_be_bytes());
            self.acc &= (1u128 << self.n) - 1;
        }
    }

    /// Bits written so far.
    #[inline]
    fn bit_pos(&self) -> u32 {
        u32::try_from(self.out.len() * 8).unwrap_or(u32::MAX - 64) + self.n
    }

    /// Writes what is left, the last byte padded with zero bits.
    fn finish(self) {
        let bytes = self.n.div_ceil(8) as usize;
        if bytes > 0 {
            let v = (self.acc << (bytes as u32 * 8 - self.n)) as u64;
            self.out.extend_from_slice(&v.to_be_bytes()[8 - bytes..]);
        }
    }
}

/// Writes the low `width` (at most 64) bits of `v` at bit `bit` of
/// `frame`, most significant first; bits past its end are left out.
#[inline]
fn put_bits(frame: &mut [u8], bit: usize, width: u8, v: u64) {
    let w = usize::from(width.min(64));
    if w == 0 {
        return;
    }
    let first = bit / 8;
    let off = bit % 8;
    // Whole bytes: stored, never loaded (a load of bytes just stored
    // by a narrower or offset store waits for it to retire: the fields
    // of one header are written back to back).
    if off == 0 && w % 8 == 0 {
        let n = w / 8;
        // A whole run of eight bytes (the layout's runs are up to 64
        // bits): one store.
        if let (8, Some(d)) = (n, frame.get_mut(first..first + 8)) {
            d.copy_from_slice(&v.to_be_bytes());
            return;
        }
        if let Some(d) = frame.get_mut(first..first + n) {
            // Four, two and one bytes at a time, most significant first
            // (a byte loop becomes a call to `memcpy`).
            let mut at = 0;
            let mut left = n;
            for k in [4usize, 2, 1] {
                while left >= k {
                    left -= k;
                    let part = v >> (left * 8);
                    match (k, d.get_mut(at..at + k)) {
                        (4, Some(x)) => x.copy_from_slice(&(part as u32).to_be_bytes()),
                        (2, Some(x)) => x.copy_from_slice(&(part as u16).to_be_bytes()),
                        (_, Some(x)) => x.copy_from_slice(&[part as u8]),
                        (_, None) => return,
                    }
                    at += k;
                }
            }
            return;
        }
    }
    // (The whole-byte stores above never store a bit of `v` above the
    // low `w`; the merges below need them cleared.)
    let v = v & sluice_core::keyop::ones(w as u8);
    // Within eight bytes there: one load, merge and store (a
    // variable-length copy would be a call).
    if off + w <= 64 {
        if let Some(d) = frame.get_mut(first..first + 8) {
            let d: &mut [u8; 8] = d.try_into().expect("eight bytes");
            let shift = 64 - off - w;
            let mask = sluice_core::keyop::ones(w as u8) << shift;
            let cur = u64::from_be_bytes(*d);
            *d = ((cur & !mask) | (v << shift)).to_be_bytes();
            return;
        }
    }
    // At most 71 bits from `first`: nine bytes, read, merged, written.
    let n = (off + w).div_ceil(8);
    let Some(d) = frame.get_mut(first..first + n) else { return };
    let mut acc = 0u128;
    for b in d.iter() {
        acc = (acc << 8) | u128::from(*b);
    }
    let shift = n * 8 - off - w;
    let mask = u128::from(sluice_core::keyop::ones(w as u8)) << shift;
    acc = (acc & !mask) | (u128::from(v) << shift);
    for (i, b) in d.iter_mut().enumerate() {
        *b = (acc >> ((n - 1 - i) * 8)) as u8;
    }
}

/// Appends a varbit field's current value: the low `length` bits of its
/// slots (right-aligned, most significant slot first; a length over the
/// maximum, which no program writes, is taken as the maximum).
fn put_varbit(bits: &mut BitOut, key: &FlowKey, fd: &super::layout::Field, max: u32) {
    let n = fd.len.map_or(0, |s| s.get(key)).min(u64::from(max)) as u32;
    // Bit position (from the right) of the top of the current slot.
    let mut top = fd.slots.iter().map(|s| u32::from(s.width)).sum::<u32>();
    for s in &fd.slots {
        let lo = top - u32::from(s.width);
        if n > lo {
            let take = (n - lo).min(u32::from(s.width));
            bits.put(s.get(key) & sluice_core::keyop::ones(take as u8), take as u8);
        }
        top = lo;
    }
}

/// The Internet checksum (`csum16`) of a big-endian bit string given many
/// bits at a time, summed as it comes: no bytes are written. A string
/// that does not end on a 16-bit boundary is padded with zero bits, as
/// the byte-wise sum pads its bytes and its odd last byte.
struct SumOut {
    /// Bits not yet summed, right-aligned; fewer than 64.
    acc: u128,
    n: u32,
    /// The 16-bit words' sum, folded at the end (a `u64` cannot overflow
    /// on any field list a key holds).
    sum: u64,
}

/// The sum of a 64-bit chunk's four 16-bit words.
#[inline]
fn words16(c: u64) -> u64 {
    (c >> 48) + ((c >> 32) & 0xffff) + ((c >> 16) & 0xffff) + (c & 0xffff)
}

impl SumOut {
    fn new() -> SumOut {
        SumOut { acc: 0, n: 0, sum: 0 }
    }

    /// Adds the low `width` bits of `v`, most significant first.
    #[inline]
    fn put(&mut self, v: u64, width: u8) {
        let w = u32::from(width).min(64);
        if w == 0 {
            return;
        }
        let v = v & sluice_core::keyop::ones(w as u8);
        self.acc = (self.acc << w) | u128::from(v);
        self.n += w;
        if self.n >= 64 {
            self.n -= 64;
            self.sum += words16((self.acc >> self.n) as u64);
            self.acc &= (1u128 << self.n) - 1;
        }
    }

    /// The one's complement of the folded sum (zero-padding the rest to
    /// a whole 16-bit word).
    fn finish(mut self) -> u64 {
        let words = self.n.div_ceil(16);
        if words > 0 {
            self.sum += words16((self.acc << (words * 16 - self.n)) as u64);
        }
        fold_not(self.sum)
    }
}

impl Csum {
    fn compute(&self, key: &FlowKey) -> Option<u64> {
        if let Some(c) = self.cond {
            if c.get(key) == 0 {
                return None;
            }
        }
        let mut w = SumOut::new();
        for it in &self.items {
            match it {
                CsItem::Slot(s) => w.put(s.get(key), s.width),
                CsItem::Const { value, width } => w.put(*value, *width),
                CsItem::Varbit { slot, lo, len } => {
                    let n = u32::try_from(len.get(key)).unwrap_or(u32::MAX);
                    let take = (lo + u32::from(slot.width)).min(n).saturating_sub(*lo);
                    if take > 0 {
                        // take ≤ the slot's width ≤ 64
                        let take = take as u8;
                        w.put(slot.get(key) & sluice_core::keyop::ones(take), take);
                    }
                }
            }
        }
        Some(w.finish())
    }
}

/// The parse program followed by `verify_checksum`s.
#[derive(Debug)]
struct V1Parse {
    prog: ParseProg,
    verify: Vec<Csum>,
    /// By `verify` index: the index into the parse's record of where the
    /// checksum's header was extracted ([`ParseProg::mark`]), for those
    /// summed over the packet's bytes.
    at: Vec<Option<usize>>,
    checksum_error: Option<Slot>,
}

impl V1Parse {
    fn new(mut prog: ParseProg, verify: Vec<Csum>, checksum_error: Option<Slot>) -> V1Parse {
        let wholes: Vec<(usize, usize)> =
            verify.iter().enumerate().filter_map(|(i, c)| Some((i, c.whole?.header))).collect();
        let headers: Vec<usize> = wholes.iter().map(|&(_, h)| h).collect();
        let marked = prog.mark(&headers);
        let mut at = vec![None; verify.len()];
        for (k, (&(i, _), ok)) in wholes.iter().zip(marked).enumerate() {
            if ok {
                at[i] = Some(k);
            }
        }
        V1Parse { prog, verify, at, checksum_error }
    }

    /// The checksum `c` (the `i`th) of a parsed packet: over the bytes
    /// its header was extracted from when it has a whole-header form,
    /// the header is valid and byte-aligned there; else field by field.
    #[inline]
    fn verify_one(
        &self,
        i: usize,
        c: &Csum,
        data: &[u8],
        key: &FlowKey,
        at: &[u32],
    ) -> Option<u64> {
        if let (Some(w), Some(Some(m))) = (c.whole, self.at.get(i)) {
            let valid =
                self.prog.layout.headers.get(w.header).is_some_and(|h| h.valid.get(key) != 0);
            if let Some(&pos) = at.get(*m).filter(|&&p| valid && p % 8 == 0) {
                if let Some((sum, _)) = data.get(pos as usize / 8..).and_then(|b| w.sum(b)) {
                    return Some(sum);
                }
            }
        }
        c.compute(key)
    }
}

impl Parse for V1Parse {
    /// The parse program's extent: a `verify_checksum` reads the key, or
    /// the bytes of a header the program extracted.
    fn parse(&self, data: &[u8], meta: &Meta, key: &mut FlowKey, info: &mut ParseInfo) -> usize {
        let mut at = [u32::MAX; super::parser::MAX_MARKS];
        let read = self.prog.run_marked(data, meta.in_port, key, &mut at);
        *info =
            ParseInfo { len: data.len().min(usize::from(u16::MAX)) as u16, ..ParseInfo::default() };
        for (i, c) in self.verify.iter().enumerate() {
            if let Some(h) = self.verify_one(i, c, data, key, &at) {
                if c.dst.get(key) != h & sluice_core::keyop::ones(c.dst.width) {
                    if let Some(s) = self.checksum_error {
                        s.set(key, 1);
                    }
                }
            }
        }
        read
    }
}

/// What the deparser does.
#[derive(Debug)]
struct Deparse {
    layout: Arc<Layout>,
    /// Headers in emit order.
    emit: Vec<usize>,
    update: Vec<Csum>,
    /// By `update` index: computed from the deparser's output bytes
    /// ([`Whole`]) rather than from the key. Only a checksum that no
    /// other update reads or writes into: their order cannot matter.
    patch: Vec<bool>,
    /// Every update is in `patch`: the key needs no copy.
    all_patched: bool,
    /// By header index: its slots in order when it has no varbit field.
    flat: Vec<Option<super::parser::Flat>>,
    egress_port: MaskedSlot,
    /// `egress_spec`: the drop port there means no output.
    spec: MaskedSlot,
    /// The layout's cursor.
    cursor: MaskedSlot,
    /// By header index: where the parse wrote one more than the byte
    /// offset the header was extracted from
    /// ([`super::parser::ParseProg::record_positions`]).
    pos: Vec<Option<Slot>>,
    /// Every key bit an op of the program, a checksum update or an
    /// extern call may write (grown as table entries bring actions
    /// compiled with other action data, [`Deparse::learn`]). A header
    /// bit outside it still holds what the parse extracted.
    writes: FlowMask,
    /// The in-place deparser's steps, one per emitted header, made from
    /// the above ([`Deparse::plan_of`]).
    plan: Vec<InPlace>,
}

/// What the in-place deparser does for one emitted header.
#[derive(Debug)]
struct InPlace {
    valid: MaskedSlot,
    /// Where the parse recorded its extraction (none: the header cannot
    /// be deparsed in place when valid).
    pos: Option<MaskedSlot>,
    /// Its width in bytes (0: not a whole number of bytes, or a varbit).
    bytes: u32,
    /// Its slots that [`Deparse::writes`] touches, with their bit
    /// offsets in the header: all that is written.
    dirty: Box<[(MaskedSlot, u32)]>,
    /// The patched checksums ([`Deparse::patch`]) summed over it.
    patches: Box<[u8]>,
}

/// Where the deparser emitted the headers of checksums it patches:
/// (update index, bit offset in the output).
#[derive(Default)]
struct Emitted {
    at: [(u8, u32); 8],
    n: usize,
    /// More than `at` holds.
    over: bool,
}

impl Emitted {
    /// Records that update `i`'s header begins at bit `pos`.
    #[inline]
    fn push(&mut self, i: u8, pos: u32) {
        match self.at.get_mut(self.n) {
            Some(slot) => {
                *slot = (i, pos);
                self.n += 1;
            }
            None => self.over = true,
        }
    }
}

impl Deparse {
    /// Adds what `ops`' key programs may write to [`Deparse::writes`]
    /// (every extern call site's result is there from the start: sites
    /// are all compiled with the program).
    fn learn(&mut self, ops: &[Op]) {
        let mut m = self.writes;
        for op in ops {
            let Op::Key(p) = op else { continue };
            for (a, b) in m.words.iter_mut().zip(p.writes().words) {
                *a |= b;
            }
        }
        if m != self.writes {
            self.writes = m;
            self.plan = self.plan_of();
        }
    }

    /// [`Deparse::plan`] for the current writes.
    fn plan_of(&self) -> Vec<InPlace> {
        let l = &*self.layout;
        let m = &self.writes;
        let mut plan = Vec::new();
        for &h in &self.emit {
            let Some(hd) = l.headers.get(h) else { continue };
            let flat = self.flat.get(h).and_then(|f| f.as_ref());
            let slots = flat.map_or(&[][..], |f| &f.slots[..]);
            plan.push(InPlace {
                valid: hd.valid.into(),
                pos: self.pos.get(h).copied().flatten().map(MaskedSlot::from),
                bytes: flat.filter(|f| f.bits % 8 == 0).map_or(0, |f| f.bits / 8),
                dirty: slots
                    .iter()
                    .filter(|(s, _)| m.words[usize::from(s.slot().word)] & s.slot().mask() != 0)
                    .copied()
                    .collect(),
                patches: (0..self.update.len())
                    .filter(|&i| {
                        self.patch.get(i) == Some(&true)
                            && self.update[i].whole.is_some_and(|w| w.header == h)
                    })
                    .map(|i| i as u8)
                    .collect(),
            });
        }
        plan
    }

    /// Records in `at` that header `h` begins at bit `pos` of the
    /// output, if a checksum in `patch` covers it.
    #[inline]
    fn note_patches(&self, h: usize, pos: u32, at: &mut Emitted) {
        for (i, c) in self.update.iter().enumerate() {
            if self.patch.get(i) == Some(&true) && c.whole.is_some_and(|w| w.header == h) {
                at.push(i as u8, pos);
            }
        }
    }

    /// Deparses `key` into `frame` itself, when the valid headers in
    /// emit order are where the parse extracted them, one after the
    /// other from the frame's first byte up to the cursor, each on a
    /// byte boundary and without a varbit field: then every header bit
    /// outside [`Deparse::writes`] already holds its value, and only
    /// the written slots ([`InPlace::dirty`]) are stored (an L2 switch
    /// stores none; a router its MAC addresses and TTL). The payload
    /// stays where it is. Records the patched checksums' headers in `at`
    /// as [`Deparse::emit_into`] does.
    ///
    /// False when the headers are not so; the frame may then have
    /// changed, but only before the cursor (each header written lies
    /// where the parse extracted it), which emitting replaces.
    fn in_place(&self, key: &FlowKey, frame: &mut [u8], at: &mut Emitted) -> bool {
        let mut next = 0u32;
        for e in &self.plan {
            if e.valid.get(key) == 0 {
                continue;
            }
            match e.pos {
                Some(p) if e.bytes > 0 && p.get(key) == u64::from(next) + 1 => {}
                _ => return false,
            }
            let base = next as usize * 8;
            for &i in e.patches.iter() {
                at.push(i, base as u32);
            }
            for &(s, off) in e.dirty.iter() {
                put_bits(frame, base + off as usize, s.width(), s.get(key));
            }
            next += e.bytes;
        }
        self.cursor.get(key) == u64::from(next) * 8
    }

    /// The whole output frame for `key` and the received `data` into
    /// `out`: the valid headers in emit order, the checksums patched,
    /// then `data` from the cursor on.
    fn emit_frame(&self, key: &FlowKey, data: &[u8], out: &mut Vec<u8>) {
        let mut at = Emitted::default();
        self.emit_into(key, out, &mut at);
        if at.n > 0 && !self.patch_out(out, &at) {
            // A header to patch not on a byte boundary (or too many):
            // every checksum from the key, and the headers again.
            let mut all = *key;
            for (c, &p) in self.update.iter().zip(&self.patch) {
                if p {
                    if let Some(h) = c.compute(&all) {
                        c.dst.set(&mut all, h);
                    }
                }
            }
            self.emit_into(&all, out, &mut Emitted::default());
        }
        let from = ((self.layout.cursor.get(key) / 8) as usize).min(data.len());
        out.extend_from_slice(data.get(from..).unwrap_or(&[]));
    }

    /// Writes the valid headers of `key` in emit order into `out`,
    /// recording in `at` where the headers of the checksums in `patch`
    /// begin.
    fn emit_into(&self, key: &FlowKey, out: &mut Vec<u8>, at: &mut Emitted) {
        let l = &*self.layout;
        let mut bits = BitOut::new(out);
        for &h in &self.emit {
            let Some(hd) = l.headers.get(h) else { continue };
            if hd.valid.get(key) == 0 {
                continue;
            }
            self.note_patches(h, bits.bit_pos(), at);
            if let Some(Some(fl)) = self.flat.get(h) {
                for &(s, _) in fl.slots.iter() {
                    bits.put(s.get(key), s.width());
                }
                continue;
            }
            for &f in &hd.fields {
                let Some(fd) = l.fields.get(f) else { continue };
                if let FieldTy::Varbit(max) = fd.ty {
                    put_varbit(&mut bits, key, fd, max);
                    continue;
                }
                for s in &fd.slots {
                    bits.put(s.get(key), s.width);
                }
            }
        }
        bits.finish();
    }

    /// Writes the checksums `at` recorded into the emitted headers;
    /// false (nothing written) if one is not on a byte boundary.
    fn patch_out(&self, out: &mut [u8], at: &Emitted) -> bool {
        let recs = &at.at[..at.n];
        if at.over || recs.iter().any(|&(_, p)| p % 8 != 0) {
            return false;
        }
        for &(i, p) in recs {
            let Some(w) = self.update.get(usize::from(i)).and_then(|c| c.whole) else {
                return false;
            };
            let start = p as usize / 8;
            let Some(b) = out.get_mut(start..) else { return false };
            let Some((sum, _)) = w.sum(b) else { return false };
            if let Some(d) = b.get_mut(w.dst_at..w.dst_at + 2) {
                d.copy_from_slice(&(sum as u16).to_be_bytes());
            }
        }
        true
    }
}

/// `Op::Group` of this id replicates the packet to its multicast group
/// (smaller ids are extern calls, [`super::externs::ExtCall`]).
const REPLICATE: u32 = u32::MAX;

/// `instance_type` of a multicast copy (bmv2's `PKT_INSTANCE_TYPE_REPLICATION`).
const INSTANCE_TYPE_REPLICATION: u64 = 5;

/// The compiled pipeline as the walk sees it.
#[derive(Debug)]
pub struct Front {
    graph: Graph,
    /// The same nodes from egress on: what a multicast copy runs.
    egress_graph: Graph,
    /// Whether the walk runs [`Front::egress_graph`] (a multicast copy).
    egress: bool,
    tables: Vec<CoreTable>,
    gen: u64,
    mode: CacheMode,
    /// Caches off whatever the mode: the program reads a register.
    stateful: bool,
    indexed: bool,
    parser: Arc<dyn Parse>,
    deparse: Deparse,
    /// Extern call sites, by `Op::Group` id.
    ext: Arc<Vec<ExtCall>>,
    /// Registers, counters and digests (one lock per extern call; a
    /// program without externs never takes it).
    state: Mutex<ExtState>,
    /// The key words past the layout's: locals, computed keys and
    /// condition bits ([`super::action::Scratch`]). The deparser and
    /// egress port read only the layout's; extern calls (`Op::Group`) may
    /// read these, and the core takes them to.
    scratch: FlowMask,
}

/// A worker's own buffers.
#[derive(Debug, Default)]
pub struct WorkerExt {
    /// The deparser's output and a checksum's or hash's input.
    out: Vec<u8>,
    tmp: Vec<u8>,
    /// The key after ingress when it asked for multicast.
    replicate: Option<FlowKey>,
    /// Frames deparsed in place, and emitted anew ([`Deparse::in_place`]).
    in_place: u64,
    emitted: u64,
}

impl Frontend for Front {
    type Table = CoreTable;
    type Ctx = ();
    type Ext = WorkerExt;
    type Rule = ();
    fn graph(&self) -> &Graph {
        if self.egress {
            &self.egress_graph
        } else {
            &self.graph
        }
    }
    fn table(&self, id: u8) -> Option<&CoreTable> {
        self.tables.get(usize::from(id))
    }
    fn generation(&self) -> u64 {
        self.gen
    }
    fn cache_mode(&self) -> CacheMode {
        if self.stateful {
            CacheMode::Off
        } else {
            self.mode
        }
    }
    fn indexed(&self) -> bool {
        self.indexed
    }
    fn parser(&self) -> Option<&Arc<dyn Parse>> {
        Some(&self.parser)
    }
    fn scratch(&self) -> Option<&FlowMask> {
        Some(&self.scratch)
    }
    fn ctx(&self, _table: u8, _e: &CoreEntry) -> Self::Ctx {}
    fn meter(&self, _w: &mut Worker<Self>, _id: u32, _pkt: &mut Pkt) -> Flow {
        Flow::Continue
    }
    fn forward(
        &self,
        w: &mut Worker<Self>,
        op: &Op,
        pkt: &mut Pkt,
        _ctx: (),
        tx: &mut dyn Tx,
    ) -> Flow {
        match op {
            Op::Output { .. } => {}
            Op::Group(REPLICATE) => {
                w.ext.replicate = Some(pkt.key);
                return Flow::Continue;
            }
            Op::Group(id) => {
                if let Some(c) = self.ext.get(*id as usize) {
                    let len = pkt.data().len();
                    let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
                    c.run(&mut pkt.key, &mut st, len, &mut w.ext.tmp);
                }
                return Flow::Continue;
            }
            _ => return Flow::Continue,
        }
        let d = &self.deparse;
        if d.spec.get(&pkt.key) == d.spec.fit(u64::from(crate::interp::DROP_PORT)) {
            // Dropped in egress (see `Compiled::new`).
            return Flow::Continue;
        }
        // The checksums are written into a copy of the key (the walk's
        // key stays as the pipeline left it); without any, no copy.
        // Those in `patch` are summed from the emitted bytes instead.
        let mut updated;
        let key = if d.all_patched {
            &pkt.key
        } else {
            updated = pkt.key;
            for (c, &p) in d.update.iter().zip(&d.patch) {
                if p {
                    continue;
                }
                if let Some(h) = c.compute(&updated) {
                    c.dst.set(&mut updated, h);
                }
            }
            &updated
        };
        let port = d.egress_port.get(key) as u32;
        let out = &mut w.ext.out;
        // A multicast copy leaves the frame as received for the next
        // one (`Compiled::packet`); it is emitted.
        if !self.egress {
            let frame = pkt.buf.data_mut();
            if cfg!(debug_assertions) {
                // Checked against the emitted frame in every test run
                // with debug assertions (the test command runs this
                // crate's in the dev profile too).
                d.emit_frame(key, frame, out);
            }
            let mut at = Emitted::default();
            if d.in_place(key, frame, &mut at) && (at.n == 0 || d.patch_out(frame, &at)) {
                if cfg!(debug_assertions) {
                    assert_eq!(&frame[..], &out[..], "the in-place deparser differs");
                }
                w.ext.in_place += 1;
                tx.transmit(port, None, frame);
                return Flow::Continue;
            }
            // Not in place, or a checksum that cannot be patched: the
            // headers rewritten so far are emitted again from the key
            // (the payload, past the cursor, is as received).
        }
        d.emit_frame(key, pkt.data(), out);
        w.ext.emitted += 1;
        tx.transmit(port, None, out);
        Flow::Continue
    }
    fn ttl_expired(&self, _w: &mut Worker<Self>, _pkt: &Pkt, _ctx: ()) {}
}

/// A v1model program compiled into the core.
#[derive(Debug)]
pub struct Compiled {
    interp: Interp,
    s: Arc<Static>,
    layout: Arc<Layout>,
    scratch: super::action::Scratch,
    ctls: Vec<Ctl>,
    /// Interpreter table index → its core tables and keys.
    keys: HashMap<usize, TableKeys>,
    front: Front,
    worker: Worker<Front>,
    /// The worker running multicast copies through egress.
    egress_worker: Worker<Front>,
    pkt: Box<Pkt>,
    /// `egress_port`, `egress_spec`, `instance_type`, `egress_rid` and
    /// `mcast_grp` (what replication sets and reads).
    copy_slots: Option<[Slot; 5]>,
}

fn std_slot(l: &Layout, name: &str) -> Result<Slot> {
    let f = l
        .field(Root::Std, name)
        .ok_or_else(|| Diagnostic::bare(format!("lowering: no `standard_metadata.{name}`")))?;
    match l.fields[f].slots.as_slice() {
        [s] => Ok(*s),
        _ => Err(Diagnostic::bare(format!("lowering: `standard_metadata.{name}` is too wide"))),
    }
}

impl Compiled {
    /// Compiles `loaded`, or says at its span what it cannot lower.
    pub fn new(loaded: &Loaded) -> Result<Compiled> {
        let interp = Interp::new(loaded)?;
        let s = interp.s.clone();
        let mut prog = ParseProg::compile(&loaded.program)?;
        let layout = prog.layout.clone();
        let l = &*layout;
        let spec = std_slot(l, "egress_spec")?;
        let eport = std_slot(l, "egress_port")?;
        let drop_test = KeyTest {
            word: spec.word,
            mask: spec.mask(),
            value: u64::from(crate::interp::DROP_PORT) << spec.shift,
        };
        let mut b = Builder::new(&s, l);
        let span = crate::diag::Span::new(0, 0, 0);
        let end = b.node(Node::End)?;
        // The drop test after egress is the output's own (`Front::forward`
        // transmits nothing when `egress_spec` is the drop port): one node
        // less on every packet's way, so egress code and the output fuse.
        let out = b.fixed(vec![Op::Output { port: 0, max_len: 0 }], end, span)?;
        let egress = b.control(s.pipeline[3], None, out, out)?;
        let mut tm = vec![
            Insn::Load { dst: 0, from: spec },
            Insn::Store { src: 0, to: eport },
            Insn::Const { dst: 1, value: 512 },
            Insn::Store { src: 1, to: spec },
        ];
        if let Ok(it) = std_slot(l, "instance_type") {
            tm.push(Insn::Const { dst: 2, value: 0 });
            tm.push(Insn::Store { src: 2, to: it });
        }
        let tm = KeyProg::new(tm).map_err(|e| Diagnostic::bare(format!("lowering: {e}")))?;
        let tm = b.fixed(vec![Op::Key(Arc::new(tm))], egress, span)?;
        let ig_drop = b.node(Node::Branch { test: drop_test, then: end, otherwise: tm })?;
        // A multicast group wins over `egress_spec`, as in bmv2: the
        // copies run from egress on (`Compiled::packet`).
        let mgrp = std_slot(l, "mcast_grp").ok();
        let after_ingress = match mgrp {
            Some(g) => {
                let rep = b.fixed(vec![Op::Group(REPLICATE)], end, span)?;
                let test = KeyTest { word: g.word, mask: g.mask(), value: 0 };
                b.node(Node::Branch { test, then: ig_drop, otherwise: rep })?
            }
            None => ig_drop,
        };
        let start = b.control(s.pipeline[2], None, after_ingress, after_ingress)?;
        fuse_fixed(&mut b.nodes, &mut b.tabs);
        let graph = Graph::new(b.nodes.clone(), start)
            .map_err(|e| Diagnostic::bare(format!("lowering: control graph refused: {e}")))?;
        let egress_graph = Graph::new(std::mem::take(&mut b.nodes), egress)
            .map_err(|e| Diagnostic::bare(format!("lowering: control graph refused: {e}")))?;
        let copy_slots =
            match (mgrp, std_slot(l, "instance_type").ok(), std_slot(l, "egress_rid").ok()) {
                (Some(g), Some(it), Some(rid)) => Some([eport, spec, it, rid, g]),
                _ => None,
            };
        let verify = checksums(&s, l, s.pipeline[1], "verify_checksum")?;
        let update = checksums(&s, l, s.pipeline[4], "update_checksum")?;
        let emit = deparser(&s, l, s.pipeline[5])?;
        let checksum_error = std_slot(l, "checksum_error").ok();
        let tabs = std::mem::take(&mut b.tabs);
        let scratch = b.scratch.clone();
        let ctls = std::mem::take(&mut b.ctls);
        let keys = std::mem::take(&mut b.tables);
        drop(b);
        let flat = prog.flat().to_vec();
        // Where each emitted header was extracted, for the in-place
        // deparser: in scratch slots after every other (a program that
        // fills the key goes without).
        let mut scratch = scratch;
        let mut pos = vec![None; l.headers.len()];
        let mut front_scratch = super::action::Scratch::bits(l);
        for &h in &emit {
            if pos.get(h).is_some_and(Option::is_none) && matches!(flat.get(h), Some(Some(_))) {
                if let Some(slot) = scratch.slot(&format!("$pos {h}"), 16) {
                    if prog.record_positions(h, slot) {
                        pos[h] = Some(slot);
                        front_scratch.words[usize::from(slot.word)] &= !slot.mask();
                    }
                }
            }
        }
        let mut writes = FlowMask::ZERO;
        for s in
            update.iter().map(|c| c.dst).chain(scratch.ext.calls.iter().filter_map(ExtCall::dst))
        {
            writes.words[usize::from(s.word)] |= s.mask();
        }
        let parser: Arc<dyn Parse> = Arc::new(V1Parse::new(prog, verify, checksum_error));
        let patch = patches(&update);
        let mut instances = Vec::new();
        for (id, inst) in s.insts.iter().enumerate() {
            if let crate::interp::Inst::Extern(x) = inst {
                let size = x.args.first().and_then(|v| v.to_u64()).unwrap_or(0);
                let elem = x.type_args.first().cloned();
                let held = match x.kind.as_str() {
                    "register" => matches!(
                        elem.as_ref().and_then(super::action::ty_t1),
                        Some(super::action::T1::Bits { signed: false, .. })
                    ),
                    kind => kind == "counter",
                };
                if held {
                    instances.push(super::externs::Instance {
                        id,
                        kind: x.kind.clone(),
                        elem,
                        size,
                    });
                }
            }
        }
        let front = Front {
            graph,
            egress_graph,
            egress: false,
            tables: Vec::new(),
            gen: 1,
            mode: CacheMode::Off,
            stateful: scratch.ext.stateful_reads(),
            indexed: true,
            parser,
            deparse: Deparse {
                layout: layout.clone(),
                emit,
                all_patched: patch.iter().all(|&p| p),
                patch,
                flat,
                update,
                egress_port: eport.into(),
                spec: spec.into(),
                cursor: l.cursor.into(),
                pos,
                writes,
                plan: Vec::new(),
            },
            ext: Arc::new(scratch.ext.calls.clone()),
            state: Mutex::new(ExtState::new(instances.iter())),
            scratch: front_scratch,
        };
        let mut c = Compiled {
            interp,
            s,
            layout,
            scratch,
            ctls,
            keys,
            front,
            worker: Worker::new(Shard::OWNER, WorkerExt::default()),
            egress_worker: Worker::new(Shard::OWNER, WorkerExt::default()),
            pkt: Box::new(Pkt::new()),
            copy_slots,
        };
        // Every header slot the update checksums and extern calls write,
        // with none of the ops yet.
        c.front.deparse.plan = c.front.deparse.plan_of();
        let mut tables = Vec::with_capacity(tabs.len());
        for t in &tabs {
            if let TabDef::Fixed(ops) = t {
                c.front.deparse.learn(ops);
            }
            tables.push(match t {
                TabDef::Fixed(ops) => CoreTable::catch_all(EntryOps {
                    apply: ops.clone().into(),
                    ..EntryOps::default()
                }),
                TabDef::Real(tid) => c.build_real(*tid).map_err(Diagnostic::bare)?,
                TabDef::Default(tid) => c.build_default(*tid).map_err(Diagnostic::bare)?,
            });
        }
        c.front.tables = tables;
        Ok(c)
    }

    /// Which caches the walk uses.
    pub fn set_cache_mode(&mut self, mode: CacheMode) {
        self.front.mode = mode;
    }

    /// Indexed lookups (else linear scans).
    pub fn set_indexed(&mut self, indexed: bool) {
        self.front.indexed = indexed;
    }

    pub fn cache_stats(&self) -> CacheStats {
        self.worker.cache_stats()
    }

    /// What its worker chose in `CacheMode::Auto`.
    pub fn cache_choices(&self) -> sluice_core::adapt::Choices {
        self.worker.cache_choices()
    }

    /// Frames this engine's own worker deparsed in place, and emitted
    /// anew ([`Deparse::in_place`]; multicast copies are emitted).
    pub fn deparse_counts(&self) -> (u64, u64) {
        (self.worker.ext.in_place, self.worker.ext.emitted)
    }

    /// The control graph (for dumps and tests).
    pub fn graph(&self) -> &Graph {
        &self.front.graph
    }

    /// The compiled pipeline, one line per node then per core table:
    /// what each table is, its entries and their key programs' sizes.
    pub fn dump(&self) -> String {
        let mut out = String::new();
        let g = &self.front.graph;
        out.push_str(&format!("graph: start {}\n", g.start()));
        for (i, n) in g.nodes().iter().enumerate() {
            out.push_str(&format!("  node {i}: {n:?}\n"));
        }
        let mut names: HashMap<u8, String> = HashMap::new();
        for (tid, k) in &self.keys {
            let n = &self.s.tables[*tid].name;
            names.insert(k.real, n.clone());
            names.insert(k.default, format!("{n} (default action)"));
        }
        for (i, t) in self.front.tables.iter().enumerate() {
            let what = names.get(&(i as u8)).cloned().unwrap_or_else(|| "synthetic".into());
            out.push_str(&format!("table {i}: {what}, {} entries\n", t.entries.len()));
            for (j, e) in t.entries.iter().enumerate() {
                let insns: usize = e
                    .ops
                    .apply
                    .iter()
                    .map(|o| match o {
                        Op::Key(p) => p.insns().len(),
                        _ => 0,
                    })
                    .sum();
                let other = e.ops.apply.iter().filter(|o| !matches!(o, Op::Key(_))).count();
                out.push_str(&format!(
                    "  entry {j}: action {} ({insns} key instructions, {other} other ops)\n",
                    e.ops.action
                ));
            }
        }
        out
    }

    /// The key program of action `action` of table `tid` with `args`.
    fn action_ops(
        &mut self,
        tid: usize,
        action: usize,
        args: &[Value],
    ) -> std::result::Result<EntryOps, String> {
        let s = self.s.clone();
        let ts = &s.tables[tid];
        let k = self.keys.get(&tid).ok_or("internal error: table not compiled")?;
        let spec = ts.actions.get(action).ok_or("internal error: no such action")?;
        let decl = super::control::action_decl(&s, spec).ok_or("internal error: action")?;
        let ctl = self.ctls.get(k.ctl).ok_or("internal error: control")?.clone();
        let mut g =
            Builder::gen(&s, &self.layout, &mut self.scratch, &ctl).map_err(|d| d.message)?;
        g.call_action(decl, args, &spec.bound, decl.span).map_err(|d| d.message)?;
        let apply = g.finish_ops(decl.span).map_err(|d| d.message)?;
        // Action data may pick what the action writes (a header stack's
        // element by index): learned from each entry's own ops.
        self.front.deparse.learn(&apply);
        if self.scratch.ext.calls.len() != self.front.ext.len() {
            // Every site was compiled with the program; a new one would
            // be an action compiled differently from then.
            return Err("internal error: an extern call site not compiled with the program".into());
        }
        Ok(EntryOps { apply: apply.into(), action: action as u32, ..EntryOps::default() })
    }

    fn rule(
        &self,
        tid: usize,
        pos: usize,
        e: &crate::interp::table::Entry,
    ) -> std::result::Result<Rule, String> {
        let ts = &self.s.tables[tid];
        let k = self.keys.get(&tid).ok_or("internal error: table not compiled")?;
        let mut pats = Vec::with_capacity(e.keys.len());
        for (p, place) in e.keys.iter().zip(&k.places) {
            let w = place.width;
            pats.push(match p {
                IPat::Exact(v) => Pat::Masked { value: v.resize(w), mask: Bits::all_ones(w) },
                IPat::Ternary(v, m) => Pat::Masked { value: v.resize(w), mask: m.resize(w) },
                IPat::Lpm(v, len) => Pat::Masked {
                    value: v.resize(w),
                    mask: crate::interp::table::prefix_mask(w, *len),
                },
                IPat::Range(lo, hi) => Pat::Range { lo: lo.resize(w), hi: hi.resize(w) },
                IPat::Any => Pat::Masked { value: Bits::zero(w), mask: Bits::zero(w) },
            });
        }
        // In exact and LPM tables two entries of one prefix length never
        // both match a key (exact keys take no `_`, and equal keys are one
        // entry), so the priority decides nothing there: leaving it out
        // keeps one classifier priority per prefix length instead of one
        // per entry (entries added without a priority each get a new
        // lowest one, which would renumber every rule above it).
        let (prefix, prio, seq) = match ts.lookup {
            Lookup::Exact => (0, 0, pos as u64),
            Lookup::Lpm => (crate::interp::table::prefix_len(e), 0, e.seq),
            Lookup::Priority => (0, e.prio, e.seq),
        };
        Ok(Rule { pats, prefix, prio, seq })
    }

    fn build_real(&mut self, tid: usize) -> std::result::Result<CoreTable, String> {
        let k = self.keys.get(&tid).ok_or("internal error: table not compiled")?;
        let mut t = CoreTable::new(k.places.clone());
        // The counts of the entries the rebuilt table keeps (the tally's
        // cells are shared: a clone is the same counters).
        let mut old: HashMap<u64, Tally> = match self.front.tables.get(usize::from(k.real)) {
            Some(o) => {
                o.handles.iter().copied().zip(o.entries.iter().map(|e| e.stats.clone())).collect()
            }
            None => HashMap::new(),
        };
        let entries = self.interp.d.tables.get(tid).map(|d| d.entries.clone()).unwrap_or_default();
        for (i, e) in entries.iter().enumerate() {
            let r = self.rule(tid, i, e)?;
            let ops = self.action_ops(tid, e.action, &e.args)?;
            t.push(r, ops, e.handle, old.remove(&e.handle))?;
        }
        Ok(t)
    }

    fn build_default(&mut self, tid: usize) -> std::result::Result<CoreTable, String> {
        let (a, args) = self
            .interp
            .d
            .tables
            .get(tid)
            .map(|d| d.default.clone())
            .ok_or("internal error: table state")?;
        Ok(CoreTable::catch_all(self.action_ops(tid, a, &args)?))
    }

    /// The extern instance `name` denotes (suffix-resolved).
    fn extern_id(&self, name: &str) -> CtlResult<usize> {
        let names: Vec<(String, usize)> = self
            .s
            .insts
            .iter()
            .enumerate()
            .filter_map(|(i, inst)| match inst {
                crate::interp::Inst::Extern(x) => Some((x.path.clone(), i)),
                _ => None,
            })
            .collect();
        crate::interp::resolve_suffix(
            name,
            names.iter().map(|(n, i)| (n.as_str(), *i)),
            "extern instance",
        )
    }

    /// Digests queued since the last call (`digest()` calls, in the
    /// order the packets made them).
    pub fn take_digests(&mut self) -> Vec<crate::interp::Digest> {
        std::mem::take(&mut self.front.state.lock().unwrap_or_else(|e| e.into_inner()).digests)
    }

    /// Digests dropped because [`crate::interp::MAX_DIGESTS`] were queued.
    pub fn digests_dropped(&self) -> u64 {
        self.front.state.lock().unwrap_or_else(|e| e.into_inner()).digests_dropped
    }

    /// Whether the program reads state the caches cannot see (a
    /// register), so it runs with its caches off.
    pub fn stateful(&self) -> bool {
        self.front.stateful
    }

    fn table_index(&self, name: &str) -> CtlResult<usize> {
        crate::interp::resolve_suffix(
            name,
            self.s.tables.iter().enumerate().map(|(i, t)| (t.name.as_str(), i)),
            "table",
        )
    }

    /// Brings table `tid`'s core tables up to date.
    fn sync(&mut self, tid: usize) -> CtlResult<()> {
        let Some(k) = self.keys.get(&tid).cloned() else { return Ok(()) };
        let real = usize::from(k.real);
        let have = self.front.tables.get(real).map_or(0, |t| t.entries.len());
        let entries = &self.interp.d.tables[tid].entries;
        let t = if entries.len() == have + 1 {
            // The usual case: one entry added.
            let e = entries[have].clone();
            let r = self.rule(tid, have, &e)?;
            let ops = self.action_ops(tid, e.action, &e.args)?;
            let mut t = std::mem::replace(&mut self.front.tables[real], CoreTable::new(Vec::new()));
            let res = t.push(r, ops, e.handle, None);
            self.front.tables[real] = t;
            res?;
            None
        } else {
            Some(self.build_real(tid)?)
        };
        if let Some(t) = t {
            self.front.tables[real] = t;
        }
        let d = self.build_default(tid)?;
        self.front.tables[usize::from(k.default)] = d;
        self.front.gen += 1;
        Ok(())
    }
}

impl Target for Compiled {
    fn add_entry(&mut self, entry: &EntrySpec) -> CtlResult<u64> {
        let h = self.interp.add_entry(entry)?;
        let tid = self.table_index(&entry.table)?;
        self.sync(tid)?;
        Ok(h)
    }

    fn set_default(
        &mut self,
        table: &str,
        action: &str,
        args: &[(String, BigValue)],
    ) -> CtlResult<()> {
        self.interp.set_default(table, action, args)?;
        let tid = self.table_index(table)?;
        self.sync(tid)
    }

    fn remove_all(&mut self) -> CtlResult<()> {
        self.interp.remove_all()?;
        let tids: Vec<usize> = self.keys.keys().copied().collect();
        for tid in tids {
            let k = self.keys[&tid].clone();
            let t = self.build_real(tid)?;
            self.front.tables[usize::from(k.real)] = t;
            self.sync(tid)?;
        }
        self.front.gen += 1;
        Ok(())
    }

    fn set_multicast_group(&mut self, group: u32, copies: &[(u32, u32)]) -> CtlResult<()> {
        // The interpreter keeps the groups (what `Compiled::packet` reads).
        self.interp.set_multicast_group(group, copies)
    }

    fn packet(&mut self, port: u32, data: &[u8]) -> CtlResult<Vec<Output>> {
        let mut outs = Vec::new();
        self.packet_into(port, data, &mut |p, f| outs.push(Output { port: p, data: f.to_vec() }))?;
        Ok(outs)
    }

    /// The frames come straight from the deparser's buffer.
    fn packet_into(
        &mut self,
        port: u32,
        data: &[u8],
        out: &mut dyn FnMut(u32, &[u8]),
    ) -> CtlResult<()> {
        let pkt = &mut *self.pkt;
        pkt.set_parser(Some(&self.front.parser));
        if data.len() > MAX_FRAME || !pkt.load(data, Meta { in_port: port, ..Meta::default() }) {
            return Err(too_large(data));
        }
        let mut tx = |p: u32, _q: Option<u32>, f: &[u8]| out(p, f);
        walk::run(&self.front, &mut self.worker, pkt, &mut tx);
        // Multicast: each copy runs egress with the key ingress left,
        // as the interpreter's traffic manager does.
        if let (Some(key), Some([eport, spec, it, rid, grp])) =
            (self.worker.ext.replicate.take(), self.copy_slots)
        {
            let group = u32::try_from(grp.get(&key)).ok();
            let copies =
                group.and_then(|g| self.interp.d.mcast.get(&g)).cloned().unwrap_or_default();
            self.front.egress = true;
            for (r, port) in copies {
                let mut k = key;
                eport.set(&mut k, u64::from(port));
                // bmv2 sets 512, which a 9-bit field holds as 0.
                spec.set(&mut k, 512);
                it.set(&mut k, INSTANCE_TYPE_REPLICATION);
                rid.set(&mut k, u64::from(r));
                pkt.key = k;
                walk::run(&self.front, &mut self.egress_worker, pkt, &mut tx);
            }
            self.front.egress = false;
        }
        Ok(())
    }

    /// Without multicast groups, the frames run as one staged burst
    /// ([`walk::burst`]: the raw-header and exact caches probed for all of
    /// them first, the hits' programs prefetched). A packet asking for a
    /// group then has no copies, as one at a time. With groups, each
    /// frame runs on its own: its copies must leave before the next
    /// frame's outputs.
    fn burst_into(
        &mut self,
        port: u32,
        frames: &[&[u8]],
        out: &mut dyn FnMut(u32, &[u8]),
        refused: &mut dyn FnMut(usize, String),
    ) {
        if !self.interp.d.mcast.is_empty() {
            crate::target::frame_by_frame(self, port, frames, out, refused);
            return;
        }
        let meta = Meta { in_port: port, ..Meta::default() };
        let mut tx = |p: u32, _q: Option<u32>, f: &[u8]| out(p, f);
        // Runs of frames that fit, each as one burst, in order.
        let mut from = 0;
        for (i, f) in frames.iter().enumerate() {
            if f.len() > MAX_FRAME {
                walk::burst(&self.front, &mut self.worker, meta, &frames[from..i], &mut tx);
                refused(i, too_large(f));
                from = i + 1;
            }
        }
        walk::burst(&self.front, &mut self.worker, meta, &frames[from..], &mut tx);
        self.worker.ext.replicate = None;
    }
}

/// Why a frame longer than a packet holds is refused.
fn too_large(data: &[u8]) -> String {
    format!("frame too large ({} bytes, at most {MAX_FRAME})", data.len())
}

/// The control plane beyond [`Target`]: the interpreter's table state
/// answers, and a deletion rebuilds the table's core tables. Registers
/// (of `bit<W>` up to 64 bits) and counters the engine holds answer from
/// its own cells, named and checked by the interpreter.
impl Manage for Compiled {
    fn tables(&self) -> Vec<TableInfo> {
        self.interp.tables()
    }

    fn delete_entry(&mut self, table: &str, handle: u64) -> CtlResult<()> {
        self.interp.delete_entry(table, handle)?;
        let tid = self.table_index(table)?;
        if let Some(k) = self.keys.get(&tid).cloned() {
            let t = self.build_real(tid)?;
            self.front.tables[usize::from(k.real)] = t;
        }
        self.sync(tid)
    }

    fn dump(&self, table: &str) -> CtlResult<(Vec<EntryDump>, (String, Vec<(String, BigValue)>))> {
        self.interp.dump(table)
    }

    /// Each entry's packet count in its core table (cache hits count
    /// there too: a cached way holds the entry's tally).
    fn entry_hits(&self, table: &str) -> CtlResult<Vec<(u64, u64)>> {
        let tid = self.table_index(table)?;
        let k = self.keys.get(&tid).ok_or_else(|| {
            format!("table `{}` is not compiled into a core table", self.s.tables[tid].name)
        })?;
        let t = self.front.tables.get(usize::from(k.real)).ok_or("internal error: core table")?;
        let mut hits: Vec<(u64, u64)> = t
            .handles
            .iter()
            .zip(&t.entries)
            .map(|(h, e)| (*h, e.stats.sum(walk::ENTRY_PACKETS)))
            .collect();
        hits.sort_by_key(|h| h.0);
        Ok(hits)
    }

    fn counter_cells(&self, name: &str) -> CtlResult<(String, Vec<(u64, u64)>)> {
        let (path, cells) = self.interp.counter_cells(name)?;
        let id = self.extern_id(name)?;
        let st = self.front.state.lock().unwrap_or_else(|e| e.into_inner());
        Ok((path, st.counters.get(&id).cloned().unwrap_or(cells)))
    }

    fn register_cells(&self, name: &str) -> CtlResult<(String, u32, Vec<BigValue>)> {
        let (path, width, cells) = self.interp.register_cells(name)?;
        let id = self.extern_id(name)?;
        let st = self.front.state.lock().unwrap_or_else(|e| e.into_inner());
        match st.registers.get(&id) {
            Some(v) => {
                Ok((path, width, v.iter().map(|&c| BigValue::from_u128(c.into())).collect()))
            }
            None => Ok((path, width, cells)),
        }
    }

    fn register_write(&mut self, name: &str, index: usize, value: &BigValue) -> CtlResult<()> {
        // The interpreter checks the index and reduces the value.
        self.interp.register_write(name, index, value)?;
        let (_, _, cells) = self.interp.register_cells(name)?;
        let id = self.extern_id(name)?;
        let v = cells.get(index).and_then(|c| c.0.first().copied()).unwrap_or(0);
        let mut st = self.front.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = st.registers.get_mut(&id).and_then(|r| r.get_mut(index)) {
            *c = v;
        }
        Ok(())
    }
}

/// Fuses every node applying a synthetic table (one catch-all entry of
/// fixed ops) that always goes on to another such node into one table
/// running both op lists: the walk does one lookup instead of two and a
/// cache entry records one hop (a chain holds at most
/// [`sluice_core::cache::MAX_HOPS`]; a longer way is not composed into one
/// program). The node it went to stays for its other predecessors (the
/// egress graph starts at one). Synthetic tables' counters are nobody's.
/// Each fixed table belongs to one node ([`Builder::fixed`]), so it is
/// rewritten in place.
fn fuse_fixed(nodes: &mut [Node], tabs: &mut [TabDef]) {
    use sluice_core::graph::Next;
    // Each step makes a node's way one node shorter: bounded.
    for i in 0..nodes.len() {
        for _ in 0..nodes.len() {
            let Node::Apply { table: t, next: Next::To(n) } = &nodes[i] else { break };
            let (t, n) = (usize::from(*t), usize::from(*n));
            if n == i {
                break;
            }
            let Some(Node::Apply { table: u, next: Next::To(m) }) = nodes.get(n) else { break };
            let (u, m) = (usize::from(*u), *m);
            let (Some(TabDef::Fixed(_)), Some(TabDef::Fixed(more))) = (tabs.get(t), tabs.get(u))
            else {
                break;
            };
            let more = more.clone();
            if let Some(TabDef::Fixed(ops)) = tabs.get_mut(t) {
                ops.extend(more);
            }
            if let Node::Apply { next, .. } = &mut nodes[i] {
                *next = Next::To(m);
            }
        }
    }
}

/// A control instance's declaration and its parameter names.
fn block_decl(s: &Static, inst: usize) -> Result<&crate::ast::ControlDecl> {
    let Some(crate::interp::Inst::Block(b)) = s.insts.get(inst) else {
        return Err(Diagnostic::bare("lowering: internal error: not a block"));
    };
    match s.prog.decls.get(b.decl) {
        Some(Decl::Control(c)) => Ok(c),
        _ => Err(Diagnostic::bare("lowering: internal error: not a control")),
    }
}

fn simple_gen<'a>(
    s: &'a Static,
    l: &'a Layout,
    scratch: &'a mut super::action::Scratch,
    roots: super::action::Roots,
) -> Gen<'a> {
    Gen::new(&s.env, l, &s.prog, scratch, roots, Vec::new(), Vec::new())
}

/// The `verify_checksum`/`update_checksum` calls (`which`) making up a
/// checksum control; anything else there is refused.
fn checksums(s: &Static, l: &Layout, inst: usize, which: &str) -> Result<Vec<Csum>> {
    let c = block_decl(s, inst)?;
    if let Some(loc) = c.locals.first() {
        let sp = match loc {
            Local::Var(v) => v.span,
            Local::Instance(i) => i.span,
            Local::Action(a) => a.span,
            Local::Table(t) => t.span,
            Local::Const(k) => k.span,
            Local::ValueSet { span, .. } => *span,
        };
        return Err(refuse(sp, "declarations in a checksum control"));
    }
    let roots: super::action::Roots = c
        .params
        .iter()
        .zip([Root::Headers, Root::Meta])
        .map(|(p, r)| (p.name.name.clone(), r, String::new()))
        .collect();
    let mut scratch = super::action::Scratch::new(l);
    let g = simple_gen(s, l, &mut scratch, roots);
    let mut out = Vec::new();
    for st in &c.apply.stmts {
        let Stmt::Call(e) = st else {
            return Err(refuse(
                super::action::stmt_span(st),
                "this statement in a checksum control",
            ));
        };
        let ExprKind::Call { func, args, .. } = &e.kind else {
            return Err(refuse(e.span, "this statement in a checksum control"));
        };
        let name = match &func.kind {
            ExprKind::Name { id, .. } => id.name.as_str(),
            _ => "",
        };
        if name != which || args.len() != 4 {
            return Err(refuse(e.span, format!("`{name}` in a checksum control")));
        }
        let cond = match &args[0].value.kind {
            ExprKind::Bool(true) => None,
            ExprKind::Call { func, args: a, .. } if a.is_empty() => match &func.kind {
                ExprKind::Member(h, m) if m.name == "isValid" => match g.header_index(h)? {
                    Some(h) => Some(l.headers[h].valid),
                    None => return Err(refuse(args[0].span, "this checksum condition")),
                },
                _ => return Err(refuse(args[0].span, "this checksum condition")),
            },
            _ => return Err(refuse(args[0].span, "this checksum condition")),
        };
        let ExprKind::List(items) = &args[1].value.kind else {
            return Err(refuse(args[1].span, "a checksum over something other than a list"));
        };
        let mut its = Vec::new();
        for it in items {
            if let Some(v) = g.const_value(it) {
                match v {
                    Value::Bits(b) => {
                        // Most significant chunk first: the remainder, then 64s.
                        let mut hi = b.width();
                        while hi > 0 {
                            let w = if hi % 64 == 0 { 64 } else { hi % 64 };
                            let value = b.slice(hi - 1, hi - w).low_u64();
                            its.push(CsItem::Const { value, width: w as u8 });
                            hi -= w;
                        }
                    }
                    _ => return Err(refuse(it.span, "this checksum item")),
                }
                continue;
            }
            match g.field_index(it)? {
                Some(f) if matches!(l.fields[f].ty, FieldTy::Bits { .. }) => {
                    its.extend(l.fields[f].slots.iter().map(|s| CsItem::Slot(*s)))
                }
                Some(f) if matches!(l.fields[f].ty, FieldTy::Varbit(_)) => {
                    let fl = &l.fields[f];
                    let Some(len) = fl.len else {
                        return Err(refuse(it.span, "this checksum item"));
                    };
                    // Slots are most significant first.
                    let mut lo: u32 = fl.slots.iter().map(|s| u32::from(s.width)).sum();
                    for s in &fl.slots {
                        lo -= u32::from(s.width);
                        its.push(CsItem::Varbit { slot: *s, lo, len });
                    }
                }
                _ => return Err(refuse(it.span, "this checksum item")),
            }
        }
        let dst = match g.field_index(&args[2].value)? {
            Some(f) => match l.fields[f].slots.as_slice() {
                [s] => *s,
                _ => return Err(refuse(args[2].span, "this checksum field")),
            },
            None => return Err(refuse(args[2].span, "this checksum field")),
        };
        let algo_ok = matches!(&args[3].value.kind,
            ExprKind::Member(b, m) if m.name == "csum16"
                && matches!(&b.kind, ExprKind::Name { id, .. } if id.name == "HashAlgorithm"));
        if !algo_ok {
            return Err(refuse(args[3].span, "a checksum algorithm other than csum16"));
        }
        let whole = Whole::of(l, cond, &its, dst);
        out.push(Csum { cond, items: its, dst, whole });
    }
    Ok(out)
}

/// Which `update_checksum`s the deparser computes from its output
/// bytes: those with a whole-header form ([`Whole`]) whose header no
/// other update writes into and whose field no other update reads (the
/// order the calls run in then cannot change what is emitted).
fn patches(update: &[Csum]) -> Vec<bool> {
    let reads = |c: &Csum, s: Slot| {
        c.items.iter().any(|it| match it {
            CsItem::Slot(x) | CsItem::Varbit { slot: x, .. } => *x == s,
            CsItem::Const { .. } => false,
        })
    };
    update
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let Some(w) = c.whole else { return false };
            let mine = |s: Slot| s == c.dst || reads(c, s);
            w.header < 256
                && update.iter().enumerate().filter(|&(j, _)| j != i).all(|(_, o)| {
                    !mine(o.dst) && !reads(o, c.dst) && o.whole.map(|x| x.header) != Some(w.header)
                })
        })
        .collect()
}

/// The headers the deparser emits, in order.
fn deparser(s: &Static, l: &Layout, inst: usize) -> Result<Vec<usize>> {
    let c = block_decl(s, inst)?;
    if let Some(loc) = c.locals.first() {
        let sp = match loc {
            Local::Var(v) => v.span,
            _ => c.name.span,
        };
        return Err(refuse(sp, "declarations in a deparser"));
    }
    let (Some(pkt), Some(hdr)) = (c.params.first(), c.params.get(1)) else {
        return Err(refuse(c.span, "this deparser"));
    };
    let mut scratch = super::action::Scratch::new(l);
    let g =
        simple_gen(s, l, &mut scratch, vec![(hdr.name.name.clone(), Root::Headers, String::new())]);
    let mut out = Vec::new();
    for st in &c.apply.stmts {
        let e: &Expr = match st {
            Stmt::Call(e) => e,
            other => {
                return Err(refuse(super::action::stmt_span(other), "this statement in a deparser"))
            }
        };
        let ExprKind::Call { func, args, .. } = &e.kind else {
            return Err(refuse(e.span, "this statement in a deparser"));
        };
        let ok = matches!(&func.kind, ExprKind::Member(b, m) if m.name == "emit"
            && matches!(&b.kind, ExprKind::Name { id, .. } if id.name == pkt.name.name));
        if !ok || args.len() != 1 {
            return Err(refuse(e.span, "this call in a deparser"));
        }
        let Some((Root::Headers, path)) = g.path(&args[0].value, 0)? else {
            return Err(refuse(args[0].span, "this emit"));
        };
        let mut any = false;
        for (i, h) in l.headers.iter().enumerate() {
            if h.root != Root::Headers {
                continue;
            }
            let inside = path.is_empty()
                || h.path == path
                || h.path.starts_with(&format!("{path}."))
                || h.path.starts_with(&format!("{path}["));
            if inside {
                out.push(i);
                any = true;
            }
        }
        // Emitting the whole headers argument when it holds nothing
        // (`struct Headers {}`) emits nothing.
        let empty = path.is_empty() && !l.fields.iter().any(|f| f.root == Root::Headers);
        if !any && !empty {
            return Err(refuse(args[0].span, "this emit"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A xorshift64 stream from `x` (not zero): the tests' random numbers.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// `put_bits` writes exactly the bits it is given, at any offset and
    /// width, near the frame's end too, against a bit-by-bit model.
    #[test]
    fn put_bits_writes_those_bits_and_no_others() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let len = 1 + (next() % 24) as usize;
            let mut frame: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let width = 1 + (next() % 64) as u8;
            let Some(room) = (len * 8).checked_sub(usize::from(width)) else { continue };
            let bit = (next() as usize) % (room + 1);
            let v = next();
            let mut want = frame.clone();
            for i in 0..usize::from(width) {
                let b = (v >> (usize::from(width) - 1 - i)) & 1;
                let at = bit + i;
                let m = 0x80u8 >> (at % 8);
                want[at / 8] = if b == 1 { want[at / 8] | m } else { want[at / 8] & !m };
            }
            put_bits(&mut frame, bit, width, v);
            assert_eq!(frame, want, "{width} bits at {bit} of {len} bytes, {v:#x}");
        }
    }

    /// [`Whole::sum`] over a header's bytes (`None` when they are not all
    /// there).
    #[test]
    fn whole_header_sums_are_the_wordwise_ones() {
        // Every even length up to 64 bytes, the checksum at every even
        // offset: the header's 16-bit words but the checksum's, summed
        // one by one and folded.
        let mut next = xorshift(0x51_7cc1_b727_220a);
        for bytes in (2..=64).step_by(2) {
            for dst_at in (0..bytes).step_by(2) {
                let b: Vec<u8> = (0..bytes + 3).map(|_| next() as u8).collect();
                let w = Whole { header: 0, bytes, dst_at };
                let mut want = 0u64;
                for i in (0..bytes).step_by(2).filter(|&i| i != dst_at) {
                    want += u64::from(u16::from_be_bytes([b[i], b[i + 1]]));
                }
                let old = u64::from(u16::from_be_bytes([b[dst_at], b[dst_at + 1]]));
                assert_eq!(w.sum(&b), Some((fold_not(want), old)), "{bytes} bytes, at {dst_at}");
                assert_eq!(w.sum(&b[..bytes]), Some((fold_not(want), old)));
                assert_eq!(w.sum(&b[..bytes - 1]), None);
            }
        }
    }

    /// The checksum summed as bits come ([`SumOut`]) is the byte-wise
    /// `csum16` of the same bit string written out ([`BitOut`]), for
    /// random pieces of 1 to 64 bits, any total length.
    #[test]
    fn summed_checksum_is_the_bytewise_one() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let mut buf = Vec::new();
        for round in 0..2000 {
            let pieces = next() % 12;
            let items: Vec<(u64, u8)> = (0..pieces)
                .map(|_| {
                    let w = (next() % 64 + 1) as u8;
                    // Mostly all-ones values: carries and the 0xffff sums.
                    let v = if next() % 3 == 0 { next() } else { u64::MAX };
                    (v & sluice_core::keyop::ones(w), w)
                })
                .collect();
            let mut sum = SumOut::new();
            let mut bits = BitOut::new(&mut buf);
            for &(v, w) in &items {
                sum.put(v, w);
                bits.put(v, w);
            }
            bits.finish();
            let want = crate::interp::externs::hash_bytes("csum16", &buf).expect("csum16");
            assert_eq!(sum.finish(), want, "round {round}: {items:x?}");
        }
    }
}
