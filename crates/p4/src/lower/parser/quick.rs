//! The quick form of a parse program: its states as lists of steps
//! worked out once, for the parse every packet goes through.
//!
//! # What
//! [`Quick::of`] rewrites the states of a [`ParseProg`] without
//! sub-parsers (every state at level 0, counted): an `extract` of a
//! header of fixed-width fields that is not a union member becomes a
//! bounds check, the records of where it was extracted ([`ParseProg::mark`],
//! [`ParseProg::record_positions`]), one read per run of its slots
//! ([`Flat`]) and its validity bit; a `select` on one value held in one
//! key slot, with values, masks and `default` only, becomes a list of
//! 64-bit (value, mask) pairs tried in order; a `verify` of such a slot
//! `==` or `!=` a constant, one comparison. Every other op and
//! transition stays what it was, run by the generic code of [`Run`] (a
//! step names it by index), so the quick form takes every program the
//! generic one does.
//!
//! # Basic design
//! [`Run::quick`] follows [`Run::states`] step for step: the same
//! transition bound (`MAX_PARSER_TRANSITIONS` states, a timeout when the
//! bound is used up, also on reaching `accept` or `reject`), the same
//! checks before anything is written, the same writes in the same order.
//! What it saves is the generic walk's lookups and dispatch: the header,
//! its flat list, its records and the select's key are found once here,
//! not per packet.
//!
//! # Invariants
//! - The generic run is the reference: in builds with debug assertions
//!   (this crate's tests, which the test command runs in the dev profile
//!   too, and every fuzz target) [`ParseProg::run_marked`] runs both on
//!   each frame and asserts the same result, cursor, extent, key and
//!   records.
//! - The quick form is rebuilt whenever the records it copies change
//!   ([`ParseProg::mark`], [`ParseProg::record_positions`]).

use sluice_core::keyop::MaskedSlot;

use super::{CmpOp, Cond, Flat, Match, Next, POp, ParseProg, Res, Run, Src, Trans};
use crate::interp::MAX_PARSER_TRANSITIONS;

/// Where a state goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum QNext {
    Accept,
    Reject,
    State(u32),
}

impl QNext {
    fn of(n: Next) -> Option<QNext> {
        Some(match n {
            Next::Accept => QNext::Accept,
            Next::Reject => QNext::Reject,
            Next::State(i) => QNext::State(u32::try_from(i).ok()?),
        })
    }
}

#[derive(Clone, Copy, Debug)]
enum Step {
    /// The extract of [`Quick::headers`]' entry of this index.
    Extract(u32),
    /// `verify(field == value)` (or `!=` when not `eq`) of a field in
    /// one slot: else the error.
    Check { slot: MaskedSlot, value: u64, eq: bool, error: u32 },
    /// The state's op of this index, run by the generic code.
    Op(u32),
}

#[derive(Clone, Debug)]
enum QTrans {
    Go(QNext),
    /// `select` on one key slot: the first case whose `(value, mask)`
    /// matches, `NoMatch` when none does.
    One {
        key: MaskedSlot,
        cases: Box<[(u64, u64, QNext)]>,
    },
    /// The state's transition, run by the generic code.
    Generic,
}

#[derive(Clone, Debug)]
struct QState {
    steps: Box<[Step]>,
    trans: QTrans,
}

/// The extract of one flat header.
#[derive(Clone, Debug)]
struct QHeader {
    /// Its bits must be in the frame past the cursor, else
    /// `PacketTooShort` before anything is written; the cursor then
    /// moves past them.
    bits: u32,
    /// Records the cursor in the parse's `at[mark]` (`u8::MAX`: none).
    mark: u8,
    /// The header's position slot: one more than the cursor's byte, or
    /// 0 when the cursor is not on a byte or past [`super::POS_MAX`].
    pos: Option<MaskedSlot>,
    /// Each slot's bits from the frame at the cursor plus the offset.
    runs: Box<[(MaskedSlot, u32)]>,
    /// Set last: the header is valid.
    valid: MaskedSlot,
}

/// A parse program's quick form.
#[derive(Clone, Debug)]
pub(super) struct Quick {
    states: Box<[QState]>,
    headers: Box<[QHeader]>,
    start: QNext,
}

impl Quick {
    /// The quick form of `p`, or `None` when `p` has sub-parsers (their
    /// transition bounds per invocation stay with the generic code).
    pub(super) fn of(p: &ParseProg) -> Option<Quick> {
        if p.states
            .iter()
            .any(|s| s.level != 0 || !s.counts || s.resets.is_some() || s.ret.is_some())
        {
            return None;
        }
        let mut states = Vec::with_capacity(p.states.len());
        let mut headers = Vec::new();
        for st in &p.states {
            let mut steps = Vec::new();
            for (i, op) in st.ops.iter().enumerate() {
                if let POp::Extract { header, width, size: None } = op {
                    if let Some(h) = extract(p, *header, *width) {
                        steps.push(Step::Extract(u32::try_from(headers.len()).ok()?));
                        headers.push(h);
                        continue;
                    }
                }
                if let POp::Verify { cond, error } = op {
                    if let Some(s) = check(p, cond, *error) {
                        steps.push(s);
                        continue;
                    }
                }
                steps.push(Step::Op(u32::try_from(i).ok()?));
            }
            let trans = match &st.trans {
                Trans::Go(n) => QTrans::Go(QNext::of(*n)?),
                Trans::Select { keys, cases } => match (&keys[..], cases.len()) {
                    ([Src::Field(f)], _) => one(p, *f, cases).unwrap_or(QTrans::Generic),
                    _ => QTrans::Generic,
                },
            };
            states.push(QState { steps: steps.into(), trans });
        }
        Some(Quick { states: states.into(), headers: headers.into(), start: QNext::of(p.start)? })
    }
}

impl Quick {
    /// How many runs each flat extract reads, in order of appearance.
    #[cfg(test)]
    pub(super) fn runs(&self) -> Vec<usize> {
        self.headers.iter().map(|h| h.runs.len()).collect()
    }

    /// Steps and transitions left to the generic code.
    #[cfg(test)]
    pub(super) fn generic(&self) -> usize {
        let ops = self.states.iter().flat_map(|s| s.steps.iter());
        ops.filter(|s| matches!(s, Step::Op(_))).count()
            + self.states.iter().filter(|s| matches!(s.trans, QTrans::Generic)).count()
    }
}

/// The steps of extracting header `h` (`width` bits of fixed fields),
/// when it is flat and not a union member.
fn extract(p: &ParseProg, h: usize, width: u32) -> Option<QHeader> {
    let hd = p.layout.headers.get(h)?;
    let fl: &Flat = p.flat.get(h)?.as_ref()?;
    if hd.union.is_some() || fl.bits != width {
        return None;
    }
    Some(QHeader {
        bits: width,
        mark: p.mark.get(h).copied().unwrap_or(u8::MAX),
        pos: p.pos.get(h).copied().flatten(),
        runs: fl.slots.clone(),
        valid: hd.valid.into(),
    })
}

/// `verify` of a field in one slot compared with a constant by `==` or
/// `!=` (signed or not, the same comparison).
fn check(p: &ParseProg, c: &Cond, error: u32) -> Option<Step> {
    let (op, f, v) = match c {
        Cond::Cmp { op, a: Src::Field(f), b: Src::Const(v), .. }
        | Cond::Cmp { op, a: Src::Const(v), b: Src::Field(f), .. } => (op, f, v),
        _ => return None,
    };
    let [slot] = p.layout.fields.get(*f)?.slots[..] else { return None };
    let eq = match op {
        CmpOp::Eq => true,
        CmpOp::Ne => false,
        _ => return None,
    };
    Some(Step::Check { slot: slot.into(), value: u64::try_from(*v).ok()?, eq, error })
}

/// A `select` on field `f` alone, when `f` is one slot and every case
/// is a value, a mask or `default`.
fn one(p: &ParseProg, f: usize, cases: &[super::Case]) -> Option<QTrans> {
    let [key] = p.layout.fields.get(f)?.slots[..] else { return None };
    let mut out = Vec::with_capacity(cases.len());
    for c in cases {
        let (value, mask) = match c.keys[..] {
            [Match::Any] => (0, 0),
            [Match::Mask { value, mask }] => {
                // The key is under 2^64: a value above never matches.
                let Ok(value) = u64::try_from(value) else { continue };
                (value, mask as u64)
            }
            _ => return None,
        };
        out.push((value, mask, QNext::of(c.next)?));
    }
    Some(QTrans::One { key: key.into(), cases: out.into() })
}

impl Run<'_> {
    /// The parse by `q`: what [`Run::states`] does, from the same start.
    pub(super) fn quick(&mut self, q: &Quick) -> Res<()> {
        let codes = self.p.codes;
        let mut cur = q.start;
        let mut count = 0u32;
        loop {
            let i = match cur {
                QNext::Accept | QNext::Reject if count >= MAX_PARSER_TRANSITIONS => break,
                QNext::Accept => return Ok(()),
                QNext::Reject => return Err(codes.no_error),
                QNext::State(i) => i as usize,
            };
            let (Some(st), Some(gs)) = (q.states.get(i), self.p.states.get(i)) else { break };
            if count >= MAX_PARSER_TRANSITIONS {
                break;
            }
            count += 1;
            for step in st.steps.iter() {
                match *step {
                    Step::Extract(x) => {
                        // (Always there: the index is the quick form's own.)
                        let Some(h) = q.headers.get(x as usize) else {
                            return Err(codes.timeout);
                        };
                        if !self.fits(u64::from(h.bits)) {
                            return Err(codes.too_short);
                        }
                        self.record(h.mark, h.pos);
                        self.take_flat(&h.runs, h.bits, h.valid);
                    }
                    Step::Check { slot, value, eq, error } => {
                        if (slot.get(self.key) == value) != eq {
                            return Err(error);
                        }
                    }
                    Step::Op(k) => {
                        if let Some(op) = gs.ops.get(k as usize) {
                            self.op(op)?;
                        }
                    }
                }
            }
            cur = match &st.trans {
                QTrans::Go(n) => *n,
                QTrans::One { key, cases } => {
                    let v = key.get(self.key);
                    match cases.iter().find(|&&(value, mask, _)| v & mask == value) {
                        Some(&(_, _, n)) => n,
                        None => return Err(codes.no_match),
                    }
                }
                QTrans::Generic => match QNext::of(self.trans(&gs.trans)?) {
                    Some(n) => n,
                    None => break,
                },
            };
        }
        Err(codes.timeout)
    }
}
