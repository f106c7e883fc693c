//! v1model externs in the compiled pipeline: `hash`, `register`
//! `read`/`write`, `counter.count` and `digest`.
//!
//! # What
//! An extern call in an action or in straight-line control code is an
//! [`ExtCall`]: the key program before it evaluates the call's inputs
//! into scratch key slots, the call itself is an `Op::Group(id)` that the
//! engine's front end runs ([`super::engine`]'s `forward`, on
//! [`ExtState`]), and the key program after it moves a result from its
//! scratch slot to wherever the call writes. [`super::action::Gen`]
//! records where the calls fall ([`super::action::Gen::finish_ops`]
//! cuts its program there).
//!
//! # Basic design
//! Semantics are the interpreter's (`crate::interp::externs`): a hash is
//! `base + h % max` (`max` 0 counts as 1) over the data's fields packed
//! most significant bit first, truncated to the result's width; a
//! register read outside the register gives 0, a write there is lost; a
//! counter counts the frame's length in bytes; a digest's list becomes a
//! `T` and joins the same bounded queue ([`crate::interp::MAX_DIGESTS`]).
//!
//! What the caches see: the inputs are computed by key programs, so
//! their reads join the megaflow mask, and every call runs again on a
//! cache hit (it is an op of the cached entry, not a recorded result). A
//! hash is a function of those inputs, so a cached walk that branched on
//! it stays right. A register read is not: its value depends on state
//! the key does not carry, so a program that reads a register runs with
//! its caches off ([`ExtCalls::stateful_reads`]).
//!
//! # Invariants
//! - Calls are only cut where no jump of the program crosses the cut and
//!   no register is live (else the call is refused at its span).
//! - Register cells are at most 64 bits; anything else is refused.

use sluice_core::keyop::{ones, Slot};
use sluice_packet::key::FlowKey;

use crate::interp::{Digest, Inst, Obj, Static};
use crate::types::Ty;
use crate::value::{Bits, Value};

/// An extern object instance a control may call.
#[derive(Clone, Debug)]
pub struct Instance {
    /// The interpreter's instance id.
    pub id: usize,
    /// `register`, `counter`, ...
    pub kind: String,
    /// A register's cell type.
    pub elem: Option<Ty>,
    /// Cells.
    pub size: u64,
}

/// The extern instances control instance `inst` may name: its own
/// locals, then the program's top-level ones.
pub(crate) fn instances(s: &Static, inst: usize) -> Vec<(String, Instance)> {
    let mut out = Vec::new();
    let objs = match s.insts.get(inst) {
        Some(Inst::Block(b)) => b.objects.iter().collect::<Vec<_>>(),
        _ => Vec::new(),
    };
    for (name, o) in s.globals.iter().chain(objs) {
        let Obj::Inst(id) = o else { continue };
        if let Some(Inst::Extern(x)) = s.insts.get(*id) {
            let size = x.args.first().and_then(|v| v.to_u64()).unwrap_or(0);
            let elem = x.type_args.first().cloned();
            out.push((name.clone(), Instance { id: *id, kind: x.kind.clone(), elem, size }));
        }
    }
    out
}

/// One extern call site, its inputs and outputs in key slots.
#[derive(Clone, Debug)]
pub enum ExtCall {
    Hash { algo: String, items: Vec<Slot>, base: Slot, max: Slot, dst: Slot },
    RegRead { inst: usize, index: Slot, dst: Slot },
    RegWrite { inst: usize, index: Slot, value: Slot },
    Count { inst: usize, index: Slot },
    Digest { receiver: u64, ty: Ty, items: Vec<Slot> },
}

/// Every extern call site of a program, by name (a call compiled again
/// for another table entry is the same site).
#[derive(Clone, Debug, Default)]
pub struct ExtCalls {
    pub calls: Vec<ExtCall>,
    names: std::collections::HashMap<String, u32>,
}

impl ExtCalls {
    /// The id of the site `name`, registering `call` on first use.
    pub fn site(&mut self, name: &str, call: ExtCall) -> u32 {
        if let Some(&id) = self.names.get(name) {
            return id;
        }
        let id = self.calls.len() as u32;
        self.calls.push(call);
        self.names.insert(name.to_string(), id);
        id
    }

    /// Whether a call reads state the key does not carry (a register).
    pub fn stateful_reads(&self) -> bool {
        self.calls.iter().any(|c| matches!(c, ExtCall::RegRead { .. }))
    }
}

/// The state extern calls keep: register cells (at most 64 bits each),
/// counter cells, digests queued.
#[derive(Debug, Default)]
pub struct ExtState {
    pub registers: std::collections::HashMap<usize, Vec<u64>>,
    pub counters: std::collections::HashMap<usize, Vec<(u64, u64)>>,
    pub digests: Vec<Digest>,
    pub digests_dropped: u64,
}

impl ExtState {
    /// Cells for every register and counter of `insts` (id, instance).
    pub fn new<'a>(insts: impl Iterator<Item = &'a Instance>) -> ExtState {
        let mut s = ExtState::default();
        for i in insts {
            let n = i.size.min(1 << 20) as usize;
            match i.kind.as_str() {
                "register" => {
                    s.registers.insert(i.id, vec![0; n]);
                }
                "counter" => {
                    s.counters.insert(i.id, vec![(0, 0); n]);
                }
                _ => {}
            }
        }
        s
    }
}

/// Packs big-endian bit strings into bytes.
fn pack(items: impl Iterator<Item = (u64, u8)>, out: &mut Vec<u8>) {
    out.clear();
    let (mut acc, mut n) = (0u128, 0u32);
    for (v, w) in items {
        let w = u32::from(w).min(64);
        acc = (acc << w) | u128::from(v & ones(w as u8));
        n += w;
        while n >= 8 {
            n -= 8;
            out.push((acc >> n) as u8);
        }
        acc &= (1u128 << n) - 1;
    }
    if n > 0 {
        out.push((acc << (8 - n)) as u8);
    }
}

impl ExtCall {
    /// The key slot the call writes, if any.
    pub fn dst(&self) -> Option<Slot> {
        match self {
            ExtCall::Hash { dst, .. } | ExtCall::RegRead { dst, .. } => Some(*dst),
            ExtCall::RegWrite { .. } | ExtCall::Count { .. } | ExtCall::Digest { .. } => None,
        }
    }

    /// Runs the call on `key` for a frame of `len` bytes.
    pub fn run(&self, key: &mut FlowKey, st: &mut ExtState, len: usize, buf: &mut Vec<u8>) {
        match self {
            ExtCall::Hash { algo, items, base, max, dst } => {
                pack(items.iter().map(|s| (s.get(key), s.width)), buf);
                let h = crate::interp::externs::hash_bytes(algo, buf).unwrap_or(0);
                let m = max.get(key).max(1);
                let v = u128::from(base.get(key)).wrapping_add(u128::from(h % m));
                dst.set(key, v as u64);
            }
            ExtCall::RegRead { inst, index, dst } => {
                let i = index.get(key);
                let v = st
                    .registers
                    .get(inst)
                    .and_then(|c| usize::try_from(i).ok().and_then(|i| c.get(i)))
                    .copied()
                    .unwrap_or(0);
                dst.set(key, v);
            }
            ExtCall::RegWrite { inst, index, value } => {
                let i = index.get(key);
                let v = value.get(key);
                if let Some(c) = st
                    .registers
                    .get_mut(inst)
                    .and_then(|c| usize::try_from(i).ok().and_then(|i| c.get_mut(i)))
                {
                    *c = v;
                }
            }
            ExtCall::Count { inst, index } => {
                let i = index.get(key);
                if let Some(c) = st
                    .counters
                    .get_mut(inst)
                    .and_then(|c| usize::try_from(i).ok().and_then(|i| c.get_mut(i)))
                {
                    c.0 += 1;
                    c.1 += len as u64;
                }
            }
            ExtCall::Digest { receiver, ty, items } => {
                if st.digests.len() >= crate::interp::MAX_DIGESTS {
                    st.digests_dropped += 1;
                    return;
                }
                let mut data = ty.default_value();
                if let Value::Struct(a) = &mut data {
                    // A struct value is always valid (the interpreter's).
                    a.valid = true;
                    for (f, s) in a.fields.iter_mut().zip(items) {
                        let v = s.get(key);
                        let new = match &*f {
                            Value::Bits(b) => Value::Bits(Bits::from_u64(b.width(), v)),
                            Value::Signed(b) => Value::Signed(Bits::from_u64(b.width(), v)),
                            Value::Bool(_) => Value::Bool(v != 0),
                            other => other.clone(),
                        };
                        *f = new;
                    }
                }
                st.digests.push(Digest { receiver: *receiver, data });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_is_msb_first_and_pads_the_last_byte() {
        let mut out = Vec::new();
        pack([(0x1, 4), (0xabc, 12), (0x1, 1)].into_iter(), &mut out);
        assert_eq!(out, vec![0x1a, 0xbc, 0x80]);
        pack([(u64::MAX, 64), (0, 8)].into_iter(), &mut out);
        assert_eq!(out, vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0]);
    }
}
