//! Protocol-oblivious forwarding (POF) inside OpenFlow 1.3: sluice's
//! experimenter match field and actions that name packet bits as
//! `{base, bit offset, bit length}`.
//!
//! # What
//! A POF match field or action knows nothing of the protocol it looks at:
//! it names bits by position. sluice carries them as experimenter objects
//! of its own id ([`SLUICE_EXPERIMENTER_ID`], "SLIC"), so a standard
//! OpenFlow 1.3 controller channel carries them (POF itself forked the
//! protocol). This module is the wire format and its checks; the OpenFlow
//! front end (`sluice-pipeline`) lowers the decoded values to the core's
//! extract windows and window edits. The text syntax is in
//! [`crate::ofctl::pof`] (`pof(POS,LEN)=VALUE[/MASK]`, `pof_set(...)`, …),
//! printed by [`crate::print::fields::pof_match`] and
//! [`crate::print::actions::pof_action`]; the byte layouts, with worked
//! examples, are in `docs/EXPERIMENTER.md`.
//!
//! Conventions (POF's, and the core's `sluice_core::extract` /
//! `sluice_core::window`):
//! - **Bit order.** Bit 0 of a field is the most significant bit of the
//!   byte at its position; the field's bits read in order form a
//!   big-endian unsigned integer. Values and masks are right-aligned to
//!   the field's length: the field's last bit is the value's bit 0.
//! - **Positions** ([`PofPos`]) are a [`PofBase`] (the frame start, POF's
//!   native form, or a header start the switch's parser found) and a bit
//!   offset from it, at most [`MAX_BIT_OFFSET`].
//!
//! # Wire format
//! The match field is an OXM of class `OFPXMC_EXPERIMENTER`, field
//! [`POF_FIELD`]; after the experimenter id:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 1 | base ([`PofBase`] code) |
//! | 1 | 1 | zero |
//! | 2 | 2 | bit length, 1..=[`MAX_FIELD_BITS`] |
//! | 4 | 4 | bit offset from the base |
//! | 8 | n | value, `n = ceil(len / 8)` bytes, big-endian, right-aligned |
//! | 8 + n | n | mask (only with `oxm_hasmask`) |
//!
//! Actions are `OFPAT_EXPERIMENTER` with sluice's id; after the id a
//! `u16` subtype ([`action_subtype`]), then the body, zero-padded so the
//! whole action is a multiple of 8 bytes (layouts in `docs/EXPERIMENTER.md`).
//! Every body starts with the same 8-byte shape as the match field
//! (`u8`, `u8`, `u16`, `u32`):
//!
//! | subtype | body after the subtype |
//! |---|---|
//! | `SET_FIELD` (0) | base, flags (bit 0: mask follows), bit length, bit offset, value (n), mask (n, if flagged) |
//! | `MODIFY_FIELD` (1) | base, zero, bit length, bit offset, increment (16, `i128` two's complement) |
//! | `ADD_FIELD` (2) | base, zero, bit length (8 × bytes), bit offset, bytes |
//! | `DELETE_FIELD` (3) | base, zero, zero `u16`, bit offset, bit length (`u32`) |
//! | `CALC_CHECKSUM` (4) | field base, start base, field bit length (16), field bit offset, start bit offset (`u32`), length in bits (`u32`) |
//! | `WRITE_METADATA` (5) | base, metadata bit, bit length, bit offset |
//!
//! # Checks and errors
//! A match field is checked in this order (the first failure is the
//! answer), all `OFPET_BAD_MATCH`:
//!
//! | condition | error |
//! |---|---|
//! | payload shorter than 8, or not exactly `8 + n` (`8 + 2n` with mask) | `OFPBMC_BAD_LEN` |
//! | bit length 0 or above [`MAX_FIELD_BITS`] | `OFPBMC_BAD_LEN` |
//! | unknown base, non-zero reserved byte, offset above [`MAX_BIT_OFFSET`], offset + length above it | `OFPBMC_BAD_FIELD` |
//! | value bits above the length | `OFPBMC_BAD_VALUE` |
//! | mask bits above the length | `OFPBMC_BAD_MASK` |
//! | value bits where the mask is 0 | `OFPBMC_BAD_WILDCARDS` |
//!
//! An action of sluice's id is checked as follows, all `OFPET_BAD_ACTION`:
//! 1. fewer than 2 bytes (no subtype): `OFPBAC_BAD_LEN`; a subtype in
//!    6..=[`action_subtype::LAST_POF`]: `OFPBAC_BAD_EXP_TYPE` (subtypes
//!    above that are not POF's: [`PofAction::from_action`] says `None`);
//! 2. *framing*: the body too short for its fixed part, or the data not
//!    exactly as long as the body its own lengths call for, padded
//!    (`pad8(8 + 2 + body) - 8` bytes; a length that is not a multiple of
//!    8 where one is required counts as `ceil(len / 8)` bytes here):
//!    `OFPBAC_BAD_LEN`;
//! 3. *arguments* ([`PofAction::validate`]), in any order, all
//!    `OFPBAC_BAD_ARGUMENT`: non-zero padding, reserved bytes or flag bits;
//!    an unknown base; a length that is zero, too large or (add, delete,
//!    checksum range) not a multiple of 8; an offset above
//!    [`MAX_BIT_OFFSET`]; a field or range that cannot lie inside a frame
//!    (offset + length above [`MAX_BIT_OFFSET`]); value or mask bits
//!    above the length; set value bits outside its mask; an increment
//!    whose magnitude does not fit the field (`|delta| >= 2^len`); a
//!    checksum field other than 16 bits; a metadata copy past bit 63.
//!
//! # Invariants
//! - Decoding never panics, never reads out of bounds (all reads go
//!   through [`Reader`]) and allocates at most the bytes it keeps.
//! - Decoding is exact: whatever [`PofMatch::from_oxm`] /
//!   [`PofAction::from_action`] accept re-encodes to the same payload /
//!   action data byte for byte (the format has one encoding per value),
//!   and `from_*(to_*(x)) == Some(Ok(x))` for every `x` whose `validate`
//!   is `Ok` (property-tested below, fuzzed by `fuzz/fuzz_targets/pof.rs`).

use crate::action::Action;
use crate::consts::SLUICE_EXPERIMENTER_ID;
use crate::error::{ErrorCode, Result};
use crate::oxm::Oxm;
use crate::wire::{pad8, Put, Reader};

/// The OXM field number of a POF match field (class `OFPXMC_EXPERIMENTER`,
/// experimenter [`SLUICE_EXPERIMENTER_ID`]).
pub const POF_FIELD: u8 = 0;

/// Widest match field or set/modify window, in bits.
pub const MAX_FIELD_BITS: u16 = 128;

/// Largest bit offset from a base: a whole 65535-byte frame.
pub const MAX_BIT_OFFSET: u32 = 8 * 65535;

/// Most bytes one `pof_add` inserts.
pub const MAX_ADD_BYTES: usize = 128;

/// Widest `pof_write_metadata` copy (the metadata's 64 bits).
pub const METADATA_BITS: u8 = 64;

/// Width of a `pof_checksum` field.
pub const CHECKSUM_FIELD_BITS: u16 = 16;

/// Subtypes of sluice's POF actions (the `u16` after the experimenter id).
pub mod action_subtype {
    pub const SET_FIELD: u16 = 0;
    pub const MODIFY_FIELD: u16 = 1;
    pub const ADD_FIELD: u16 = 2;
    pub const DELETE_FIELD: u16 = 3;
    pub const CALC_CHECKSUM: u16 = 4;
    pub const WRITE_METADATA: u16 = 5;
    /// Subtypes 0..=15 are POF's (`docs/EXPERIMENTER.md`).
    pub const LAST_POF: u16 = 15;
}

/// Where a bit offset counts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum PofBase {
    /// The frame's first byte (POF's only base). Text: a bare offset.
    Frame = 0,
    /// The first byte after the Ethernet header and its VLAN tags. Text:
    /// `l2end+N`.
    L2End = 1,
    /// The MPLS label stack or PBB I-TCI. Text: `l2.5+N`.
    L2_5 = 2,
    /// The ARP, IPv4 or IPv6 header. Text: `l3+N`.
    L3 = 3,
    /// The transport header. Text: `l4+N`.
    L4 = 4,
    /// The transport payload. Text: `payload+N`.
    Payload = 5,
}

impl PofBase {
    /// Every base, by code.
    pub const ALL: [PofBase; 6] =
        [PofBase::Frame, PofBase::L2End, PofBase::L2_5, PofBase::L3, PofBase::L4, PofBase::Payload];

    /// The base with wire code `code`.
    pub fn from_code(code: u8) -> Option<PofBase> {
        PofBase::ALL.get(usize::from(code)).copied()
    }

    /// The wire code.
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// A bit position: `bit_offset` bits after the first bit of `base`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PofPos {
    pub base: PofBase,
    pub bit_offset: u32,
}

/// A bit field: `bit_len` bits from `pos`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PofField {
    pub pos: PofPos,
    pub bit_len: u16,
}

/// A decoded POF match field: the packet's `field` bits, masked by `mask`
/// (all ones when absent), equal `value`. `value` and `mask` are
/// right-aligned to `field.bit_len` bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PofMatch {
    pub field: PofField,
    pub value: u128,
    pub mask: Option<u128>,
}

/// A decoded POF action.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PofAction {
    /// `pof_set(POS,LEN,VALUE[/MASK])`: the field's bits where `mask` is 1
    /// take `value`'s (`mask` absent: all of them).
    Set { field: PofField, value: u128, mask: Option<u128> },
    /// `pof_modify(POS,LEN,INCREMENT)`: add a signed increment, wrapping
    /// modulo `2^LEN`.
    Modify { field: PofField, delta: i128 },
    /// `pof_add(POS,LEN,VALUE)`: insert `bytes` (LEN = 8 × their number)
    /// at bit position `pos`.
    Add { pos: PofPos, bytes: Vec<u8> },
    /// `pof_del(POS,LEN)`: remove `len_bits` bits (a multiple of 8) at
    /// `pos`.
    Delete { pos: PofPos, len_bits: u32 },
    /// `pof_checksum(POS,LEN,START,CALC_LEN)`: the Internet checksum of
    /// `calc_len_bits` bits from `start` into the `field` (16 bits).
    Checksum { field: PofField, start: PofPos, calc_len_bits: u32 },
    /// `pof_write_metadata(META_OFF,POS,LEN)`: copy the `from` bits into
    /// the metadata from its bit `meta_bit` (bit 0 its most significant).
    WriteMetadata { meta_bit: u8, from: PofField },
}

/// Bytes of the header every POF match payload and action body starts
/// with: `u8`, `u8`, `u16`, `u32`.
const HDR_LEN: usize = 8;
/// `type`, `len` and `experimenter` of an `OFPAT_EXPERIMENTER` action.
const ACTION_HDR_LEN: usize = 8;
/// The `u16` subtype at the start of an action's data.
const SUBTYPE_LEN: usize = 2;
/// A `pof_modify` increment: `i128`, two's complement.
const DELTA_LEN: usize = 16;
/// Bit 0 of a `SET_FIELD`'s flags: a mask follows the value.
const SET_FLAG_MASK: u8 = 1;

/// Bytes of a value or mask of `bit_len` bits: `ceil(bit_len / 8)`.
pub const fn value_bytes(bit_len: u16) -> usize {
    (bit_len as usize).div_ceil(8)
}

/// The action `data` length (after the experimenter id, padding included)
/// of a POF action whose body after the subtype is `body_len` bytes.
pub const fn action_data_len(body_len: usize) -> usize {
    pad8(ACTION_HDR_LEN + SUBTYPE_LEN + body_len) - ACTION_HDR_LEN
}

impl PofBase {
    /// The text keyword of a header base (`l2end`, `l2.5`, `l3`, `l4`,
    /// `payload`); `None` for [`PofBase::Frame`], written as a bare offset.
    pub const fn keyword(self) -> Option<&'static str> {
        match self {
            PofBase::Frame => None,
            PofBase::L2End => Some("l2end"),
            PofBase::L2_5 => Some("l2.5"),
            PofBase::L3 => Some("l3"),
            PofBase::L4 => Some("l4"),
            PofBase::Payload => Some("payload"),
        }
    }

    /// The header base a text keyword names.
    pub fn from_keyword(s: &str) -> Option<PofBase> {
        PofBase::ALL.iter().copied().find(|b| b.keyword() == Some(s))
    }
}

impl PofPos {
    /// Whether the offset is one a base can have (at most
    /// [`MAX_BIT_OFFSET`]).
    pub fn in_range(self) -> bool {
        self.bit_offset <= MAX_BIT_OFFSET
    }

    /// Whether `len_bits` bits from here can lie inside a frame: the
    /// offset plus the length is at most [`MAX_BIT_OFFSET`].
    pub fn fits(self, len_bits: u32) -> bool {
        u64::from(self.bit_offset) + u64::from(len_bits) <= u64::from(MAX_BIT_OFFSET)
    }
}

impl PofField {
    /// `2^bit_len - 1` (all ones from 128 bits on): values and masks of
    /// the field have no bits outside it.
    pub const fn max_value(self) -> u128 {
        if self.bit_len >= 128 {
            u128::MAX
        } else {
            (1u128 << self.bit_len) - 1
        }
    }

    /// Whether the field is 1..=`max_bits` bits long and lies inside a
    /// frame.
    pub fn is_valid(self, max_bits: u16) -> bool {
        (1..=max_bits).contains(&self.bit_len) && self.pos.fits(u32::from(self.bit_len))
    }
}

/// The common 8-byte header: `base`, a byte whose meaning depends on the
/// object, `len` (`u16`), `offset` (`u32`).
struct Hdr {
    base: u8,
    byte1: u8,
    len: u16,
    offset: u32,
}

impl Hdr {
    fn read(r: &mut Reader<'_>) -> Result<Hdr> {
        let base = r.u8()?;
        let byte1 = r.u8()?;
        let len = r.u16()?;
        let offset = r.u32()?;
        Ok(Hdr { base, byte1, len, offset })
    }

    fn put(out: &mut Vec<u8>, base: PofBase, byte1: u8, len: u16, offset: u32) {
        out.put_u8(base.code());
        out.put_u8(byte1);
        out.put_u16(len);
        out.put_u32(offset);
    }
}

/// `n` big-endian bytes as an integer (`n <= 16` wherever it is called;
/// more would only lose high bits, never panic).
fn read_uint(r: &mut Reader<'_>, n: usize) -> Result<u128> {
    Ok(r.bytes(n)?.iter().fold(0u128, |a, &b| (a << 8) | u128::from(b)))
}

/// `v` as `n` big-endian bytes, right-aligned (zeros in front beyond 16).
fn put_uint(out: &mut Vec<u8>, v: u128, n: usize) {
    for i in (0..n).rev() {
        out.put_u8(if i < 16 { (v >> (8 * i)) as u8 } else { 0 });
    }
}

impl PofMatch {
    /// Decode an OXM: `None` if it is not sluice's POF field, else the
    /// field or the `OFPBMC_*` error a switch answers with.
    pub fn from_oxm(o: &Oxm) -> Option<Result<PofMatch>> {
        match o {
            Oxm::Experimenter {
                experimenter: SLUICE_EXPERIMENTER_ID,
                field: POF_FIELD,
                has_mask,
                payload,
            } => Some(PofMatch::decode(payload, *has_mask)),
            _ => None,
        }
    }

    /// Decode the payload after the experimenter id (checks in the order
    /// of the module docs).
    fn decode(payload: &[u8], has_mask: bool) -> Result<PofMatch> {
        const BAD_LEN: ErrorCode = ErrorCode::BMC_BAD_LEN;
        const BAD_FIELD: ErrorCode = ErrorCode::BMC_BAD_FIELD;
        let mut r = Reader::new(payload, BAD_LEN);
        let h = Hdr::read(&mut r)?;
        let n = value_bytes(h.len);
        if r.remaining() != if has_mask { 2 * n } else { n } {
            return Err(BAD_LEN);
        }
        if h.len == 0 || h.len > MAX_FIELD_BITS {
            return Err(BAD_LEN);
        }
        let base = PofBase::from_code(h.base).ok_or(BAD_FIELD)?;
        if h.byte1 != 0 {
            return Err(BAD_FIELD);
        }
        // `n <= 16` from here on.
        let value = read_uint(&mut r, n)?;
        let mask = if has_mask { Some(read_uint(&mut r, n)?) } else { None };
        let pos = PofPos { base, bit_offset: h.offset };
        let m = PofMatch { field: PofField { pos, bit_len: h.len }, value, mask };
        m.validate()?;
        Ok(m)
    }

    /// Check a value built by hand against the rules [`PofMatch::from_oxm`]
    /// applies after framing, with the same errors: bit length
    /// (`OFPBMC_BAD_LEN`), position (`OFPBMC_BAD_FIELD`), value
    /// (`OFPBMC_BAD_VALUE`), mask (`OFPBMC_BAD_MASK`), value outside the
    /// mask (`OFPBMC_BAD_WILDCARDS`).
    pub fn validate(&self) -> Result<()> {
        let f = self.field;
        if f.bit_len == 0 || f.bit_len > MAX_FIELD_BITS {
            return Err(ErrorCode::BMC_BAD_LEN);
        }
        if !f.pos.in_range() || !f.pos.fits(u32::from(f.bit_len)) {
            return Err(ErrorCode::BMC_BAD_FIELD);
        }
        let outside = !f.max_value();
        if self.value & outside != 0 {
            return Err(ErrorCode::BMC_BAD_VALUE);
        }
        if let Some(m) = self.mask {
            if m & outside != 0 {
                return Err(ErrorCode::BMC_BAD_MASK);
            }
            if self.value & !m != 0 {
                return Err(ErrorCode::BMC_BAD_WILDCARDS);
            }
        }
        Ok(())
    }

    /// Encode as an OXM (`from_oxm(&m.to_oxm()) == Some(Ok(m))` for every
    /// valid `m`).
    pub fn to_oxm(&self) -> Oxm {
        let f = self.field;
        let n = value_bytes(f.bit_len);
        let mut payload = Vec::with_capacity(HDR_LEN + 2 * n);
        Hdr::put(&mut payload, f.pos.base, 0, f.bit_len, f.pos.bit_offset);
        put_uint(&mut payload, self.value, n);
        if let Some(m) = self.mask {
            put_uint(&mut payload, m, n);
        }
        Oxm::Experimenter {
            experimenter: SLUICE_EXPERIMENTER_ID,
            field: POF_FIELD,
            has_mask: self.mask.is_some(),
            payload,
        }
    }
}

impl PofAction {
    /// Decode an action: `None` if it is not one of sluice's POF actions,
    /// else the action or the `OFPBAC_*` error a switch answers with.
    pub fn from_action(a: &Action) -> Option<Result<PofAction>> {
        let Action::Experimenter { experimenter: SLUICE_EXPERIMENTER_ID, data } = a else {
            return None;
        };
        let mut r = Reader::new(data, ErrorCode::BAC_BAD_LEN);
        let subtype = match r.u16() {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        (subtype <= action_subtype::LAST_POF).then(|| PofAction::decode(subtype, data))
    }

    /// The subtype this action is written with.
    pub fn subtype(&self) -> u16 {
        use action_subtype as st;
        match self {
            PofAction::Set { .. } => st::SET_FIELD,
            PofAction::Modify { .. } => st::MODIFY_FIELD,
            PofAction::Add { .. } => st::ADD_FIELD,
            PofAction::Delete { .. } => st::DELETE_FIELD,
            PofAction::Checksum { .. } => st::CALC_CHECKSUM,
            PofAction::WriteMetadata { .. } => st::WRITE_METADATA,
        }
    }

    /// Decode `data` (subtype included) of a POF subtype: framing first
    /// (`OFPBAC_BAD_LEN`), then the arguments (`OFPBAC_BAD_ARGUMENT`).
    fn decode(subtype: u16, data: &[u8]) -> Result<PofAction> {
        use action_subtype as st;
        const BAD_ARG: ErrorCode = ErrorCode::BAC_BAD_ARGUMENT;
        let mut r = Reader::new(data, ErrorCode::BAC_BAD_LEN);
        r.skip(SUBTYPE_LEN)?;
        let base = |code: u8| PofBase::from_code(code).ok_or(BAD_ARG);
        let zero = |b: u32| if b == 0 { Ok(()) } else { Err(BAD_ARG) };
        let a = match subtype {
            st::SET_FIELD => {
                let h = Hdr::read(&mut r)?;
                let has_mask = h.byte1 & SET_FLAG_MASK != 0;
                let n = value_bytes(h.len);
                framed(data, HDR_LEN + if has_mask { 2 * n } else { n })?;
                zero(u32::from(h.byte1 & !SET_FLAG_MASK))?;
                if h.len > MAX_FIELD_BITS {
                    return Err(BAD_ARG);
                }
                // `n <= 16` from here on.
                let value = read_uint(&mut r, n)?;
                let mask = if has_mask { Some(read_uint(&mut r, n)?) } else { None };
                let pos = PofPos { base: base(h.base)?, bit_offset: h.offset };
                PofAction::Set { field: PofField { pos, bit_len: h.len }, value, mask }
            }
            st::MODIFY_FIELD => {
                let h = Hdr::read(&mut r)?;
                framed(data, HDR_LEN + DELTA_LEN)?;
                zero(u32::from(h.byte1))?;
                let delta = i128::from_be_bytes(r.array()?);
                let pos = PofPos { base: base(h.base)?, bit_offset: h.offset };
                PofAction::Modify { field: PofField { pos, bit_len: h.len }, delta }
            }
            st::ADD_FIELD => {
                let h = Hdr::read(&mut r)?;
                let n = value_bytes(h.len);
                framed(data, HDR_LEN + n)?;
                zero(u32::from(h.byte1))?;
                // Before copying: at most MAX_ADD_BYTES are kept.
                if h.len % 8 != 0 || n > MAX_ADD_BYTES {
                    return Err(BAD_ARG);
                }
                let bytes = r.bytes(n)?.to_vec();
                PofAction::Add { pos: PofPos { base: base(h.base)?, bit_offset: h.offset }, bytes }
            }
            st::DELETE_FIELD => {
                let h = Hdr::read(&mut r)?;
                framed(data, HDR_LEN + 4)?;
                zero(u32::from(h.byte1) | u32::from(h.len))?;
                let len_bits = r.u32()?;
                PofAction::Delete {
                    pos: PofPos { base: base(h.base)?, bit_offset: h.offset },
                    len_bits,
                }
            }
            st::CALC_CHECKSUM => {
                let h = Hdr::read(&mut r)?;
                framed(data, HDR_LEN + 8)?;
                let start_offset = r.u32()?;
                let calc_len_bits = r.u32()?;
                let pos = PofPos { base: base(h.base)?, bit_offset: h.offset };
                PofAction::Checksum {
                    field: PofField { pos, bit_len: h.len },
                    start: PofPos { base: base(h.byte1)?, bit_offset: start_offset },
                    calc_len_bits,
                }
            }
            st::WRITE_METADATA => {
                let h = Hdr::read(&mut r)?;
                framed(data, HDR_LEN)?;
                let pos = PofPos { base: base(h.base)?, bit_offset: h.offset };
                PofAction::WriteMetadata {
                    meta_bit: h.byte1,
                    from: PofField { pos, bit_len: h.len },
                }
            }
            _ => return Err(ErrorCode::BAC_BAD_EXP_TYPE),
        };
        a.validate()?;
        Ok(a)
    }

    /// Check a value built by hand against the argument rules
    /// [`PofAction::from_action`] applies (module docs); every failure is
    /// `OFPBAC_BAD_ARGUMENT`.
    pub fn validate(&self) -> Result<()> {
        let ok = match self {
            PofAction::Set { field, value, mask } => {
                let outside = !field.max_value();
                field.is_valid(MAX_FIELD_BITS)
                    && value & outside == 0
                    && mask.is_none_or(|m| m & outside == 0 && value & !m == 0)
            }
            PofAction::Modify { field, delta } => {
                field.is_valid(MAX_FIELD_BITS)
                    && (field.bit_len >= 128 || delta.unsigned_abs() <= field.max_value())
            }
            PofAction::Add { pos, bytes } => {
                pos.in_range() && (1..=MAX_ADD_BYTES).contains(&bytes.len())
            }
            PofAction::Delete { pos, len_bits } => {
                range_ok(*len_bits) && pos.in_range() && pos.fits(*len_bits)
            }
            PofAction::Checksum { field, start, calc_len_bits } => {
                field.bit_len == CHECKSUM_FIELD_BITS
                    && field.is_valid(CHECKSUM_FIELD_BITS)
                    && range_ok(*calc_len_bits)
                    && start.in_range()
                    && start.fits(*calc_len_bits)
            }
            PofAction::WriteMetadata { meta_bit, from } => {
                from.is_valid(u16::from(METADATA_BITS))
                    && u16::from(*meta_bit) + from.bit_len <= u16::from(METADATA_BITS)
            }
        };
        if ok {
            Ok(())
        } else {
            Err(ErrorCode::BAC_BAD_ARGUMENT)
        }
    }

    /// Encode as an `OFPAT_EXPERIMENTER` action, its data already padded
    /// (`from_action(&a.to_action()) == Some(Ok(a))` for every valid `a`).
    pub fn to_action(&self) -> Action {
        let mut d = Vec::new();
        d.put_u16(self.subtype());
        match self {
            PofAction::Set { field, value, mask } => {
                let flags = if mask.is_some() { SET_FLAG_MASK } else { 0 };
                Hdr::put(&mut d, field.pos.base, flags, field.bit_len, field.pos.bit_offset);
                let n = value_bytes(field.bit_len);
                put_uint(&mut d, *value, n);
                if let Some(m) = mask {
                    put_uint(&mut d, *m, n);
                }
            }
            PofAction::Modify { field, delta } => {
                Hdr::put(&mut d, field.pos.base, 0, field.bit_len, field.pos.bit_offset);
                d.put_slice(&delta.to_be_bytes());
            }
            PofAction::Add { pos, bytes } => {
                // Lengths past u16 are invalid anyway; saturate rather than wrap.
                let len = u16::try_from(bytes.len().saturating_mul(8)).unwrap_or(u16::MAX);
                Hdr::put(&mut d, pos.base, 0, len, pos.bit_offset);
                d.put_slice(bytes);
            }
            PofAction::Delete { pos, len_bits } => {
                Hdr::put(&mut d, pos.base, 0, 0, pos.bit_offset);
                d.put_u32(*len_bits);
            }
            PofAction::Checksum { field, start, calc_len_bits } => {
                Hdr::put(
                    &mut d,
                    field.pos.base,
                    start.base.code(),
                    field.bit_len,
                    field.pos.bit_offset,
                );
                d.put_u32(start.bit_offset);
                d.put_u32(*calc_len_bits);
            }
            PofAction::WriteMetadata { meta_bit, from } => {
                Hdr::put(&mut d, from.pos.base, *meta_bit, from.bit_len, from.pos.bit_offset);
            }
        }
        // With the 8-byte action header in front, a multiple of 8.
        d.pad8_from(0);
        Action::Experimenter { experimenter: SLUICE_EXPERIMENTER_ID, data: d }
    }
}

/// A non-zero multiple of 8 bits, at most [`MAX_BIT_OFFSET`].
fn range_ok(len_bits: u32) -> bool {
    len_bits != 0 && len_bits % 8 == 0 && len_bits <= MAX_BIT_OFFSET
}

/// Framing of an action's `data` (subtype included) whose body after the
/// subtype is `body_len` bytes: exactly [`action_data_len`] bytes
/// (`OFPBAC_BAD_LEN`), the padding zero (`OFPBAC_BAD_ARGUMENT`).
fn framed(data: &[u8], body_len: usize) -> Result<()> {
    if data.len() != action_data_len(body_len) {
        return Err(ErrorCode::BAC_BAD_LEN);
    }
    let pad = data.get(SUBTYPE_LEN + body_len..).ok_or(ErrorCode::BAC_BAD_LEN)?;
    if pad.iter().any(|&b| b != 0) {
        return Err(ErrorCode::BAC_BAD_ARGUMENT);
    }
    Ok(())
}

/// Any position: every base, offsets small, anywhere, and at the limit.
#[cfg(test)]
pub(crate) fn arb_pos() -> impl proptest::strategy::Strategy<Value = PofPos> {
    use proptest::prelude::*;
    let offset = prop_oneof![0u32..=64, 0..=MAX_BIT_OFFSET, Just(MAX_BIT_OFFSET)];
    (proptest::sample::select(&PofBase::ALL[..]), offset)
        .prop_map(|(base, bit_offset)| PofPos { base, bit_offset })
}

/// A valid field of 1..=`max_bits` bits (so it lies inside a frame).
#[cfg(test)]
pub(crate) fn arb_field(max_bits: u16) -> impl proptest::strategy::Strategy<Value = PofField> {
    use proptest::prelude::*;
    (1..=max_bits, arb_pos()).prop_map(|(bit_len, mut pos)| {
        pos.bit_offset = pos.bit_offset.min(MAX_BIT_OFFSET - u32::from(bit_len));
        PofField { pos, bit_len }
    })
}

/// A value of `bits` bits: 0, all ones, or random.
#[cfg(test)]
fn arb_bits(max: u128) -> impl proptest::strategy::Strategy<Value = u128> {
    use proptest::prelude::*;
    prop_oneof![Just(0u128), Just(max), any::<u128>().prop_map(move |v| v & max)]
}

/// Valid match fields, with and without mask.
#[cfg(test)]
pub(crate) fn arb_pof_match() -> impl proptest::strategy::Strategy<Value = PofMatch> {
    use proptest::prelude::*;
    arb_field(MAX_FIELD_BITS).prop_flat_map(|field| {
        let max = field.max_value();
        (arb_bits(max), proptest::option::of(arb_bits(max))).prop_map(move |(v, mask)| PofMatch {
            field,
            value: mask.map_or(v, |m| v & m),
            mask,
        })
    })
}

/// Valid actions of every subtype.
#[cfg(test)]
pub(crate) fn arb_pof_action() -> impl proptest::strategy::Strategy<Value = PofAction> {
    use proptest::prelude::*;
    let set = arb_pof_match().prop_map(|m| PofAction::Set {
        field: m.field,
        value: m.value,
        mask: m.mask,
    });
    let modify =
        (arb_field(MAX_FIELD_BITS), any::<i128>(), any::<bool>()).prop_map(|(field, d, small)| {
            // Magnitudes below 2^len, small ones often.
            let m = field.max_value();
            let mag = if small { (d.unsigned_abs() % 4).min(m) } else { d.unsigned_abs() & m };
            let delta = if field.bit_len >= 128 {
                d
            } else if d < 0 {
                -(mag as i128)
            } else {
                mag as i128
            };
            PofAction::Modify { field, delta }
        });
    let add = (arb_pos(), proptest::collection::vec(any::<u8>(), 1..=MAX_ADD_BYTES))
        .prop_map(|(pos, bytes)| PofAction::Add { pos, bytes });
    let delete = (arb_pos(), 1u32..=MAX_BIT_OFFSET / 8).prop_map(|(mut pos, n)| {
        pos.bit_offset = pos.bit_offset.min(MAX_BIT_OFFSET - 8 * n);
        PofAction::Delete { pos, len_bits: 8 * n }
    });
    let checksum = (arb_field(CHECKSUM_FIELD_BITS), arb_pos(), 1u32..=2000).prop_map(
        |(mut field, mut start, n)| {
            field.bit_len = CHECKSUM_FIELD_BITS;
            field.pos.bit_offset = field.pos.bit_offset.min(MAX_BIT_OFFSET - 16);
            start.bit_offset = start.bit_offset.min(MAX_BIT_OFFSET - 8 * n);
            PofAction::Checksum { field, start, calc_len_bits: 8 * n }
        },
    );
    let write_metadata =
        (arb_field(u16::from(METADATA_BITS)), any::<u8>()).prop_map(|(from, m)| {
            PofAction::WriteMetadata {
                meta_bit: m % (METADATA_BITS - from.bit_len as u8 + 1),
                from,
            }
        });
    prop_oneof![set, modify, add, delete, checksum, write_metadata]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oxm::OXM_HEADER_LEN;
    use proptest::prelude::*;

    fn pos(base: PofBase, bit_offset: u32) -> PofPos {
        PofPos { base, bit_offset }
    }

    fn field(base: PofBase, bit_offset: u32, bit_len: u16) -> PofField {
        PofField { pos: pos(base, bit_offset), bit_len }
    }

    /// The OXM's wire bytes, and the OXM parsed back from them.
    fn oxm_wire(o: &Oxm) -> (Vec<u8>, Oxm) {
        let mut b = Vec::new();
        o.emit(&mut b);
        let mut r = Reader::new(&b, ErrorCode::BRC_BAD_LEN);
        let back = Oxm::parse(&mut r).expect("an emitted OXM parses");
        assert!(r.is_empty());
        (b, back)
    }

    /// The action's wire bytes, and the action parsed back from them.
    fn action_wire(a: &Action) -> (Vec<u8>, Action) {
        let mut b = Vec::new();
        a.emit(&mut b);
        let mut r = Reader::new(&b, ErrorCode::BRC_BAD_LEN);
        let back = Action::parse(&mut r).expect("an emitted action parses");
        assert!(r.is_empty());
        (b, back)
    }

    fn pof_oxm(has_mask: bool, payload: &[u8]) -> Oxm {
        Oxm::Experimenter {
            experimenter: SLUICE_EXPERIMENTER_ID,
            field: POF_FIELD,
            has_mask,
            payload: payload.to_vec(),
        }
    }

    fn decode_match(has_mask: bool, payload: &[u8]) -> Result<PofMatch> {
        PofMatch::from_oxm(&pof_oxm(has_mask, payload)).expect("sluice's POF field")
    }

    fn pof_action(data: &[u8]) -> Action {
        Action::Experimenter { experimenter: SLUICE_EXPERIMENTER_ID, data: data.to_vec() }
    }

    fn decode_action(data: &[u8]) -> Result<PofAction> {
        PofAction::from_action(&pof_action(data)).expect("a POF subtype")
    }

    #[test]
    fn base_codes_and_keywords() {
        for (i, b) in PofBase::ALL.iter().enumerate() {
            assert_eq!(usize::from(b.code()), i);
            assert_eq!(PofBase::from_code(b.code()), Some(*b));
            if let Some(k) = b.keyword() {
                assert_eq!(PofBase::from_keyword(k), Some(*b));
            }
        }
        assert_eq!(PofBase::from_code(6), None);
        assert_eq!(PofBase::Frame.keyword(), None);
        assert_eq!(PofBase::from_keyword("frame"), None);
    }

    /// `pof(l3+72,8)=0x6`: the IPv4 protocol byte is TCP.
    #[test]
    fn literal_match_field() {
        let want = PofMatch { field: field(PofBase::L3, 72, 8), value: 6, mask: None };
        let bytes = [
            0xff, 0xff, 0x00, 0x0d, // OFPXMC_EXPERIMENTER, field 0, no mask, length 13
            0x53, 0x4c, 0x49, 0x43, // "SLIC"
            0x03, 0x00, 0x00, 0x08, // base l3, zero, 8 bits
            0x00, 0x00, 0x00, 0x48, // at bit 72
            0x06, // value
        ];
        let mut r = Reader::new(&bytes, ErrorCode::BRC_BAD_LEN);
        let o = Oxm::parse(&mut r).unwrap();
        assert_eq!(PofMatch::from_oxm(&o), Some(Ok(want)));
        assert_eq!(oxm_wire(&want.to_oxm()).0, bytes);
    }

    /// `pof(l3+96,32)=0xa000000/0xff000000`: IPv4 source in 10.0.0.0/8.
    #[test]
    fn literal_masked_match_field() {
        let want = PofMatch {
            field: field(PofBase::L3, 96, 32),
            value: 0x0a00_0000,
            mask: Some(0xff00_0000),
        };
        let bytes = [
            0xff, 0xff, 0x01, 0x14, // OFPXMC_EXPERIMENTER, field 0, mask, length 20
            0x53, 0x4c, 0x49, 0x43, // "SLIC"
            0x03, 0x00, 0x00, 0x20, // base l3, zero, 32 bits
            0x00, 0x00, 0x00, 0x60, // at bit 96
            0x0a, 0x00, 0x00, 0x00, // value
            0xff, 0x00, 0x00, 0x00, // mask
        ];
        let mut r = Reader::new(&bytes, ErrorCode::BRC_BAD_LEN);
        assert_eq!(PofMatch::from_oxm(&Oxm::parse(&mut r).unwrap()), Some(Ok(want)));
        assert_eq!(oxm_wire(&want.to_oxm()).0, bytes);
    }

    /// `pof_set(l3+64,8,0x40)`: IPv4 TTL := 64.
    #[test]
    fn literal_set_action() {
        let want = PofAction::Set { field: field(PofBase::L3, 64, 8), value: 0x40, mask: None };
        let bytes = [
            0xff, 0xff, 0x00, 0x18, // OFPAT_EXPERIMENTER, 24 bytes
            0x53, 0x4c, 0x49, 0x43, // "SLIC"
            0x00, 0x00, // SET_FIELD
            0x03, 0x00, 0x00, 0x08, // base l3, no mask, 8 bits
            0x00, 0x00, 0x00, 0x40, // at bit 64
            0x40, // value
            0x00, 0x00, 0x00, 0x00, 0x00, // padding
        ];
        let mut r = Reader::new(&bytes, ErrorCode::BRC_BAD_LEN);
        let a = Action::parse(&mut r).unwrap();
        assert_eq!(PofAction::from_action(&a), Some(Ok(want.clone())));
        assert_eq!(a, want.to_action(), "data kept verbatim equals the padded encoding");
        assert_eq!(action_wire(&want.to_action()).0, bytes);
    }

    #[test]
    fn literal_actions_of_every_subtype() {
        let cases: Vec<(PofAction, Vec<u8>)> = vec![
            (
                // pof_set(l4+0,16,0x50/0xfff0): masked, 2 + 8 + 2 + 2 = 14 -> 16.
                PofAction::Set {
                    field: field(PofBase::L4, 0, 16),
                    value: 0x50,
                    mask: Some(0xfff0),
                },
                vec![0, 0, 4, 1, 0, 16, 0, 0, 0, 0, 0x00, 0x50, 0xff, 0xf0, 0, 0],
            ),
            (
                // pof_modify(l3+64,8,-1): 2 + 8 + 16 = 26 -> 32.
                PofAction::Modify { field: field(PofBase::L3, 64, 8), delta: -1 },
                [&[0u8, 1, 3, 0, 0, 8, 0, 0, 0, 64][..], &[0xff; 16], &[0; 6]].concat(),
            ),
            (
                // pof_add(l2end+0,32,0x81000005): 2 + 8 + 4 = 14 -> 16.
                PofAction::Add { pos: pos(PofBase::L2End, 0), bytes: vec![0x81, 0, 0, 5] },
                vec![0, 2, 1, 0, 0, 32, 0, 0, 0, 0, 0x81, 0, 0, 5, 0, 0],
            ),
            (
                // pof_del(96,32): 2 + 12 = 14 -> 16.
                PofAction::Delete { pos: pos(PofBase::Frame, 96), len_bits: 32 },
                vec![0, 3, 0, 0, 0, 0, 0, 0, 0, 96, 0, 0, 0, 32, 0, 0],
            ),
            (
                // pof_checksum(l3+80,16,l3+0,160): 2 + 16 = 18 -> 24.
                PofAction::Checksum {
                    field: field(PofBase::L3, 80, 16),
                    start: pos(PofBase::L3, 0),
                    calc_len_bits: 160,
                },
                vec![0, 4, 3, 3, 0, 16, 0, 0, 0, 80, 0, 0, 0, 0, 0, 0, 0, 160, 0, 0, 0, 0, 0, 0],
            ),
            (
                // pof_write_metadata(48,l4+16,16): 2 + 8 = 10 -> 16.
                PofAction::WriteMetadata { meta_bit: 48, from: field(PofBase::L4, 16, 16) },
                vec![0, 5, 4, 48, 0, 16, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0],
            ),
        ];
        for (a, data) in cases {
            assert_eq!((8 + data.len()) % 8, 0, "{a:?}");
            assert_eq!(decode_action(&data), Ok(a.clone()), "{a:?}");
            assert_eq!(a.to_action(), pof_action(&data), "{a:?}");
            assert_eq!(a.validate(), Ok(()));
        }
    }

    #[test]
    fn other_objects_are_not_pof() {
        let other_id = Oxm::Experimenter {
            experimenter: 0x2320,
            field: POF_FIELD,
            has_mask: false,
            payload: vec![0; 9],
        };
        assert_eq!(PofMatch::from_oxm(&other_id), None);
        let other_field = Oxm::Experimenter {
            experimenter: SLUICE_EXPERIMENTER_ID,
            field: 1,
            has_mask: false,
            payload: vec![0; 9],
        };
        assert_eq!(PofMatch::from_oxm(&other_field), None);
        assert_eq!(PofMatch::from_oxm(&Oxm::exact(crate::oxm::FieldId::TcpDst, 80)), None);
        let not_ours = Action::Experimenter { experimenter: 0x2320, data: vec![0; 16] };
        assert_eq!(PofAction::from_action(&not_ours), None);
        assert_eq!(PofAction::from_action(&Action::PopVlan), None);
        // Subtypes above POF's range belong to other sluice actions.
        assert_eq!(PofAction::from_action(&pof_action(&[0, 16, 0, 0, 0, 0, 0, 0])), None);
        assert_eq!(PofAction::from_action(&pof_action(&[0xff, 0xff])), None);
    }

    #[test]
    fn match_errors_in_order() {
        use ErrorCode as E;
        // base, zero, len, offset, then the value (and mask).
        let p = |base: u8, zero: u8, len: u16, off: u32, rest: &[u8]| {
            let mut v = vec![base, zero];
            v.extend(len.to_be_bytes());
            v.extend(off.to_be_bytes());
            v.extend(rest);
            v
        };
        let m = |payload: Vec<u8>| decode_match(false, &payload);
        let mm = |payload: Vec<u8>| decode_match(true, &payload);
        // Short, or not exactly 8 + n (8 + 2n).
        assert_eq!(m(vec![]), Err(E::BMC_BAD_LEN));
        assert_eq!(m(vec![3, 0, 0, 8, 0, 0, 0]), Err(E::BMC_BAD_LEN));
        assert_eq!(m(p(3, 0, 8, 0, &[])), Err(E::BMC_BAD_LEN));
        assert_eq!(m(p(3, 0, 8, 0, &[1, 2])), Err(E::BMC_BAD_LEN));
        assert_eq!(m(p(3, 0, 9, 0, &[1])), Err(E::BMC_BAD_LEN));
        assert_eq!(mm(p(3, 0, 8, 0, &[1])), Err(E::BMC_BAD_LEN));
        assert_eq!(m(p(3, 0, 8, 0, &[1, 1])), Err(E::BMC_BAD_LEN));
        // Length 0 or above 128 (even when the payload agrees with it).
        assert_eq!(m(p(3, 0, 0, 0, &[])), Err(E::BMC_BAD_LEN));
        assert_eq!(m(p(3, 0, 129, 0, &[0; 17])), Err(E::BMC_BAD_LEN));
        assert_eq!(m(p(3, 0, 128, 0, &[0; 16])).map(|m| m.field.bit_len), Ok(128));
        // Length is checked before the base.
        assert_eq!(m(p(9, 0, 0, 0, &[])), Err(E::BMC_BAD_LEN));
        // Base, reserved byte, offset, field end.
        assert_eq!(m(p(6, 0, 8, 0, &[0])), Err(E::BMC_BAD_FIELD));
        assert_eq!(m(p(0xff, 0, 8, 0, &[0])), Err(E::BMC_BAD_FIELD));
        assert_eq!(m(p(3, 1, 8, 0, &[0])), Err(E::BMC_BAD_FIELD));
        assert_eq!(m(p(3, 0, 8, MAX_BIT_OFFSET + 1, &[0])), Err(E::BMC_BAD_FIELD));
        assert_eq!(m(p(3, 0, 8, u32::MAX, &[0])), Err(E::BMC_BAD_FIELD));
        assert_eq!(m(p(3, 0, 8, MAX_BIT_OFFSET - 7, &[0])), Err(E::BMC_BAD_FIELD));
        assert!(m(p(3, 0, 8, MAX_BIT_OFFSET - 8, &[0])).is_ok());
        // The field is checked before the value.
        assert_eq!(m(p(6, 0, 4, 0, &[0xff])), Err(E::BMC_BAD_FIELD));
        // Value above the length, mask above it, value outside the mask.
        assert_eq!(m(p(0, 0, 4, 0, &[0x10])), Err(E::BMC_BAD_VALUE));
        assert_eq!(m(p(0, 0, 12, 0, &[0x10, 0])), Err(E::BMC_BAD_VALUE));
        assert!(m(p(0, 0, 12, 0, &[0x0f, 0xff])).is_ok());
        assert_eq!(mm(p(0, 0, 4, 0, &[0x10, 0x0f])), Err(E::BMC_BAD_VALUE));
        assert_eq!(mm(p(0, 0, 4, 0, &[0x01, 0x1f])), Err(E::BMC_BAD_MASK));
        assert_eq!(mm(p(0, 0, 4, 0, &[0x03, 0x01])), Err(E::BMC_BAD_WILDCARDS));
        assert_eq!(
            mm(p(0, 0, 4, 0, &[0x01, 0x0f])),
            Ok(PofMatch { field: field(PofBase::Frame, 0, 4), value: 1, mask: Some(0xf) })
        );
    }

    #[test]
    fn action_framing_errors() {
        use ErrorCode as E;
        // No subtype.
        assert_eq!(PofAction::from_action(&pof_action(&[])), Some(Err(E::BAC_BAD_LEN)));
        assert_eq!(PofAction::from_action(&pof_action(&[0])), Some(Err(E::BAC_BAD_LEN)));
        // Reserved POF subtypes.
        for st in 6..=action_subtype::LAST_POF {
            let mut d = st.to_be_bytes().to_vec();
            d.resize(16, 0);
            assert_eq!(decode_action(&d), Err(E::BAC_BAD_EXP_TYPE), "subtype {st}");
            assert_eq!(decode_action(&st.to_be_bytes()), Err(E::BAC_BAD_EXP_TYPE));
        }
        // Each fixed-size subtype: short, one padding block too many, and
        // an unpadded body.
        for (st, data_len) in [(1u16, 32usize), (3, 16), (4, 24), (5, 16)] {
            let mut d = st.to_be_bytes().to_vec();
            for len in [2, 8, data_len - 8, data_len + 8] {
                d.resize(len, 0);
                assert_eq!(decode_action(&d), Err(E::BAC_BAD_LEN), "subtype {st} data {len}");
            }
        }
        // Set: 8 bits needs 2 + 8 + 1 -> 16; with a mask 2 + 8 + 2 -> 16;
        // 64 bits with a mask 2 + 8 + 16 = 26 -> 32.
        let set = |flags: u8, len: u16, data_len: usize| {
            let mut d = vec![0, 0, 0, flags];
            d.extend(len.to_be_bytes());
            d.resize(data_len, 0);
            decode_action(&d)
        };
        assert!(set(0, 8, 16).is_ok());
        assert!(set(1, 8, 16).is_ok());
        assert!(set(1, 64, 32).is_ok());
        assert_eq!(set(1, 64, 24), Err(E::BAC_BAD_LEN));
        assert_eq!(
            set(0, 64, 24),
            Ok(PofAction::Set { field: field(PofBase::Frame, 0, 64), value: 0, mask: None })
        );
        assert_eq!(set(0, 8, 24), Err(E::BAC_BAD_LEN));
        assert_eq!(set(0, 8, 8), Err(E::BAC_BAD_LEN));
        // Length is decided before arguments: 200 bits need 2 + 8 + 25 -> 40.
        assert_eq!(set(0, 200, 32), Err(E::BAC_BAD_LEN));
        assert_eq!(set(0, 200, 40), Err(E::BAC_BAD_ARGUMENT));
        assert_eq!(set(0, 129, 32), Err(E::BAC_BAD_ARGUMENT));
        assert_eq!(set(0, 0, 16), Err(E::BAC_BAD_ARGUMENT));
        // Add: bit_len / 8 bytes (rounded up for the framing check).
        let add = |len: u16, data_len: usize| {
            let mut d = vec![0, 2, 0, 0];
            d.extend(len.to_be_bytes());
            d.resize(data_len, 0);
            decode_action(&d)
        };
        assert!(add(48, 16).is_ok());
        assert_eq!(add(56, 16), Err(E::BAC_BAD_LEN));
        assert_eq!(add(12, 16), Err(E::BAC_BAD_ARGUMENT));
        assert_eq!(add(0, 16), Err(E::BAC_BAD_ARGUMENT));
        assert!(add(1024, action_data_len(8 + 128)).is_ok());
        assert_eq!(add(1032, action_data_len(8 + 129)), Err(E::BAC_BAD_ARGUMENT));
        assert_eq!(add(0xffff, 16), Err(E::BAC_BAD_LEN));
    }

    #[test]
    fn action_argument_errors() {
        use ErrorCode as E;
        let bad = |data: Vec<u8>| {
            assert_eq!((8 + data.len()) % 8, 0);
            assert_eq!(decode_action(&data), Err(E::BAC_BAD_ARGUMENT), "{}", hex::encode(&data));
        };
        let ok = |data: Vec<u8>| {
            assert!(decode_action(&data).is_ok(), "{}", hex::encode(&data));
        };
        // Header: subtype, b0, b1, u16, u32; then `rest`, padded.
        let d = |st: u16, b0: u8, b1: u8, len: u16, off: u32, rest: &[u8]| {
            let mut v = st.to_be_bytes().to_vec();
            v.extend([b0, b1]);
            v.extend(len.to_be_bytes());
            v.extend(off.to_be_bytes());
            v.extend(rest);
            v.resize(pad8(8 + v.len()) - 8, 0);
            v
        };
        let max = MAX_BIT_OFFSET;
        let be32 = |x: u32| x.to_be_bytes();

        // SET_FIELD: flags, base, lengths, offsets, value, mask, wildcards.
        ok(d(0, 0, 0, 8, 0, &[0xff]));
        bad(d(0, 0, 2, 8, 0, &[0xff]));
        bad(d(0, 0, 0x80, 8, 0, &[0xff, 0xff]));
        bad(d(0, 6, 0, 8, 0, &[0xff]));
        bad(d(0, 0, 0, 8, max + 1, &[0]));
        bad(d(0, 0, 0, 8, max - 7, &[0]));
        ok(d(0, 0, 0, 8, max - 8, &[0]));
        bad(d(0, 0, 0, 4, 0, &[0x10]));
        bad(d(0, 0, 1, 4, 0, &[0x01, 0x10]));
        bad(d(0, 0, 1, 4, 0, &[0x03, 0x01]));
        ok(d(0, 0, 1, 4, 0, &[0x01, 0x0f]));
        // Non-zero padding.
        let mut p = d(0, 0, 0, 8, 0, &[1]);
        *p.last_mut().unwrap() = 1;
        bad(p);

        // MODIFY_FIELD: reserved byte, lengths, increment range.
        let delta = |x: i128| x.to_be_bytes();
        ok(d(1, 0, 0, 8, 0, &delta(255)));
        ok(d(1, 0, 0, 8, 0, &delta(-255)));
        bad(d(1, 0, 0, 8, 0, &delta(256)));
        bad(d(1, 0, 0, 8, 0, &delta(-256)));
        ok(d(1, 0, 0, 128, 0, &delta(i128::MIN)));
        bad(d(1, 0, 1, 8, 0, &delta(1)));
        bad(d(1, 0, 0, 0, 0, &delta(0)));
        bad(d(1, 0, 0, 129, 0, &delta(0)));
        bad(d(1, 9, 0, 8, 0, &delta(0)));
        bad(d(1, 0, 0, 8, max, &delta(0)));

        // ADD_FIELD: reserved byte, base, offset.
        ok(d(2, 0, 0, 8, max, &[7]));
        bad(d(2, 0, 0, 8, max + 1, &[7]));
        bad(d(2, 0, 1, 8, 0, &[7]));
        bad(d(2, 7, 0, 8, 0, &[7]));

        // DELETE_FIELD: reserved bytes, lengths, range end.
        ok(d(3, 0, 0, 0, max - 8, &be32(8)));
        bad(d(3, 0, 0, 0, max - 7, &be32(8)));
        bad(d(3, 0, 1, 0, 0, &be32(8)));
        bad(d(3, 0, 0, 1, 0, &be32(8)));
        bad(d(3, 0, 0, 0, 0, &be32(0)));
        bad(d(3, 0, 0, 0, 0, &be32(12)));
        bad(d(3, 0, 0, 0, 0, &be32(max + 8)));
        ok(d(3, 0, 0, 0, 0, &be32(max)));

        // CALC_CHECKSUM: field width, bases, range.
        let ck = |start: u32, len: u32| [be32(start), be32(len)].concat();
        ok(d(4, 3, 3, 16, 80, &ck(0, 160)));
        bad(d(4, 3, 3, 8, 80, &ck(0, 160)));
        bad(d(4, 3, 3, 32, 80, &ck(0, 160)));
        bad(d(4, 3, 6, 16, 80, &ck(0, 160)));
        bad(d(4, 6, 3, 16, 80, &ck(0, 160)));
        bad(d(4, 3, 3, 16, 80, &ck(0, 0)));
        bad(d(4, 3, 3, 16, 80, &ck(0, 7)));
        bad(d(4, 3, 3, 16, 80, &ck(max, 8)));
        bad(d(4, 3, 3, 16, max - 15, &ck(0, 8)));
        ok(d(4, 3, 3, 16, max - 16, &ck(max - 8, 8)));

        // WRITE_METADATA: lengths, the metadata's 64 bits.
        ok(d(5, 0, 0, 64, 0, &[]));
        ok(d(5, 0, 63, 1, 0, &[]));
        bad(d(5, 0, 0, 65, 0, &[]));
        bad(d(5, 0, 0, 0, 0, &[]));
        bad(d(5, 0, 1, 64, 0, &[]));
        bad(d(5, 0, 64, 1, 0, &[]));
        bad(d(5, 0, 255, 16, 0, &[]));
        bad(d(5, 6, 0, 8, 0, &[]));
        bad(d(5, 0, 0, 8, max - 7, &[]));
    }

    #[test]
    fn validate_rejects_hand_built_values() {
        let f8 = field(PofBase::L3, 0, 8);
        assert_eq!(
            PofMatch { field: f8, value: 0x100, mask: None }.validate(),
            Err(ErrorCode::BMC_BAD_VALUE)
        );
        assert_eq!(
            PofMatch { field: field(PofBase::L3, 0, 0), value: 0, mask: None }.validate(),
            Err(ErrorCode::BMC_BAD_LEN)
        );
        let bad = [
            PofAction::Add { pos: pos(PofBase::L3, 0), bytes: vec![] },
            PofAction::Add { pos: pos(PofBase::L3, 0), bytes: vec![0; MAX_ADD_BYTES + 1] },
            PofAction::Set { field: f8, value: 2, mask: Some(1) },
            PofAction::Modify { field: f8, delta: 256 },
            PofAction::Checksum { field: f8, start: pos(PofBase::L3, 0), calc_len_bits: 8 },
            PofAction::WriteMetadata { meta_bit: 60, from: f8 },
        ];
        for a in bad {
            assert_eq!(a.validate(), Err(ErrorCode::BAC_BAD_ARGUMENT), "{a:?}");
        }
    }

    proptest! {
        /// Value -> OXM -> wire -> OXM -> value, and the payload length is
        /// what the header's length byte says.
        #[test]
        fn match_round_trips_through_the_wire(m in arb_pof_match()) {
            prop_assert_eq!(m.validate(), Ok(()));
            let o = m.to_oxm();
            let (bytes, back) = oxm_wire(&o);
            prop_assert_eq!(&back, &o);
            prop_assert_eq!(bytes.len(), OXM_HEADER_LEN + usize::from(bytes[3]));
            prop_assert_eq!(PofMatch::from_oxm(&back), Some(Ok(m)));
        }

        #[test]
        fn action_round_trips_through_the_wire(a in arb_pof_action()) {
            prop_assert_eq!(a.validate(), Ok(()));
            let act = a.to_action();
            let (bytes, back) = action_wire(&act);
            prop_assert_eq!(bytes.len() % 8, 0);
            prop_assert_eq!(&back, &act, "parse(emit(x)) keeps the padded data");
            prop_assert_eq!(PofAction::from_action(&back), Some(Ok(a)));
        }

        /// Arbitrary payloads never panic; what is accepted re-encodes to
        /// exactly the same bytes.
        #[test]
        fn arbitrary_match_payloads(
            payload in proptest::collection::vec(any::<u8>(), 0..48),
            has_mask: bool,
            base in 0u8..8,
            len in prop_oneof![0u16..=130, any::<u16>()],
        ) {
            let mut payload = payload;
            // Reach past the framing check often.
            if payload.len() >= 8 && base < 7 {
                payload[0] = base;
                payload[1] = 0;
                payload[2..4].copy_from_slice(&len.to_be_bytes());
                let n = value_bytes(len);
                payload.truncate(8 + if has_mask { 2 * n } else { n });
            }
            let o = pof_oxm(has_mask, &payload);
            if let Some(Ok(m)) = PofMatch::from_oxm(&o) {
                prop_assert_eq!(m.to_oxm(), o);
            }
        }

        #[test]
        fn arbitrary_action_data(
            subtype in 0u16..8,
            body in proptest::collection::vec(any::<u8>(), 0..160),
            zero_reserved: bool,
        ) {
            let mut data = subtype.to_be_bytes().to_vec();
            data.extend(body);
            if zero_reserved && data.len() > 4 {
                // Bases in range, reserved byte and flags mostly clear.
                data[2] %= 6;
                data[3] &= 1;
            }
            let a = pof_action(&data);
            if let Some(Ok(p)) = PofAction::from_action(&a) {
                prop_assert_eq!(p.to_action(), a);
            }
        }

        /// Every accepted action also passes `validate`, and `validate`
        /// agrees with decoding for mutated encodings.
        #[test]
        fn mutated_actions(a in arb_pof_action(), at: usize, byte: u8) {
            let Action::Experimenter { data, .. } = a.to_action() else { unreachable!() };
            let mut data = data;
            let i = at % data.len();
            data[i] = byte;
            let act = pof_action(&data);
            if let Some(Ok(p)) = PofAction::from_action(&act) {
                prop_assert_eq!(p.validate(), Ok(()));
                prop_assert_eq!(p.to_action(), act);
            }
        }
    }
}
