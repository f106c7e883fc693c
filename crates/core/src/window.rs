//! Protocol-oblivious window edits: set, modify, insert, remove and
//! checksum bit windows of a frame, and copy one into the metadata.
//!
//! # What
//! A POF (protocol-oblivious forwarding) action names the bits it edits as
//! `{offset, length}` from a header base, knowing nothing of the protocol
//! there. A [`WindowOp`] is such an edit in the core's vocabulary; front
//! ends lower to it once, when a rule is installed (checking it with
//! [`WindowOp::validate`]), and the core runs it per packet with
//! [`apply`], reached through [`crate::op::Op::Window`] and
//! [`crate::op::edit`].
//!
//! Conventions are [`crate::extract`]'s, so a window read there and
//! edited here are the same bits:
//! - **Bit order.** Bit 0 of a window is the most significant bit of the
//!   byte at its position; bit `i` is bit `7 - i % 8` of byte
//!   `first + i / 8`. A window's bits, read in that order, form a
//!   big-endian unsigned integer, and values and masks are right-aligned
//!   to the window's length (the window's last bit is the value's bit 0).
//! - **Positions** ([`Pos`]) are a [`Base`] and a bit offset from it. The
//!   base's byte offset comes from the parse given ([`Base::offset`]); an
//!   absent base, or a window that runs past the frame's end, makes the
//!   edit do nothing ([`Edited::Unchanged`]).
//!
//! The edits, with bytes (positions from [`Base::Frame`], so bit 4 is the
//! low nibble of byte 0):
//! - [`WindowOp::Set`]: the window's bits where `mask` is 1 take `value`'s.
//!   On `ab cd`, `{at: 4, len: 8, value: 0xff, mask: 0xf0}` sets the
//!   window's first four bits (the low nibble of byte 0): `af cd`.
//! - [`WindowOp::Modify`]: adds `delta` to the window's value modulo
//!   `2^len`. On `ab cd`, `{at: 4, len: 8, delta: 0x45}`: `0xbc + 0x45 =
//!   0x101`, which wraps to `0x01`: `a0 1d`.
//! - [`WindowOp::Insert`]: inserts whole bytes at any bit position. On
//!   `ab cd`, inserting `ff` at bit 4 gives `af fb cd`.
//! - [`WindowOp::Remove`]: removes a whole number of bytes' worth of bits
//!   at any bit position. On `af fb cd`, removing 8 bits at bit 4 gives
//!   `ab cd`.
//! - [`WindowOp::Checksum`]: writes the RFC 1071 Internet checksum of a
//!   range into a 16-bit field, the field counting as zero while summing.
//!   The IPv4 header `45 00 00 73 00 00 40 00 40 11 XX XX c0 a8 00 01 c0
//!   a8 00 c7` with `{field: L3 + 80, start: L3, calc_len_bits: 160}` gets
//!   `b8 61` in place of `XX XX`, whatever they were.
//! - [`WindowOp::ToMetadata`]: copies a window into the 64-bit metadata,
//!   whose bit 0 is its most significant bit. On `ab cd`, `{meta_bit: 56,
//!   from: 4, len: 8}` makes the metadata's low byte `0xbc`.
//!
//! # Basic design
//! - [`apply`] resolves each position to an absolute bit index of the
//!   frame (checked arithmetic throughout), checks that every bit it will
//!   touch is inside the frame, and only then writes, so a refused edit
//!   has written nothing.
//! - **Set, Modify, ToMetadata** read and write the bytes a window touches
//!   (at most 17: up to 7 leading bits plus 128) one byte at a time, each
//!   byte a masked read-modify-write of its share of the window's bits.
//! - **Insert and Remove never shift the tail bit by bit.** Their lengths
//!   are whole bytes, so every bit after the position keeps its place
//!   within its byte; only its byte index moves, by the length in bytes.
//!   An insert at bit `8k + r` is a byte insert at `k` (the tail, old
//!   byte `k` included, moves by `n` bytes with [`PacketBuf::insert`],
//!   whichever side of the packet is shorter, into the head- or tailroom)
//!   followed by composing the `n + 1` bytes `k..=k + n` from the old
//!   byte's first `r` bits, the inserted bits and the old byte's last
//!   `8 - r` bits. A remove at bit `8k + r` first merges old byte `k`'s
//!   first `r` bits into old byte `k + m` and then removes the `m` bytes
//!   `k..k + m` with [`PacketBuf::remove`]. At `r = 0` both are the plain
//!   byte operations.
//! - **Checksum** zeroes the field, sums the range (the aligned case with
//!   [`sluice_packet::checksum::sum`], an unaligned range one shifted byte
//!   at a time), and writes the complement of the folded sum into the
//!   field. The field is exactly 16 bits at any bit position, inside or
//!   outside the range. An odd number of bytes in the range is padded
//!   with a zero byte (RFC 1071). Zeroing first is what makes "the field
//!   counts as zero" hold even when the field overlaps the range unaligned;
//!   the result verifies (the range then sums to `0xffff`) when the field
//!   lies in the range at an even number of bytes from its start, as every
//!   real header's checksum does.
//! - [`apply`] runs [`WindowOp::validate`] itself and leaves the packet
//!   alone if it fails: a front end that forgot to validate gets no edit,
//!   never a panic.
//!
//! # Costs
//! Per packet: a validation (a few compares), a base lookup per position
//! and a bounds check. Set, Modify and ToMetadata touch at most 17 bytes;
//! Checksum reads the range once; Insert and Remove cost
//! [`PacketBuf`]'s move of the shorter side of the packet, plus `n + 1`
//! composed bytes (insert) or one merged byte (remove) when unaligned.
//! Nothing allocates. Insert and Remove change the packet's structure:
//! the caller re-parses after them, as after every [`Edited::Changed`].
//!
//! # Invariants
//! - [`apply`] never panics and never reads or writes outside the packet,
//!   whatever the op and the parse say (a stale or foreign [`ParseInfo`]
//!   gives a refused edit or an edit at the wrong place, never a fault).
//! - A refused edit (invalid op, absent base, a window past the frame's
//!   end, no head- or tailroom for an insert) leaves bytes and metadata as
//!   they were and returns [`Edited::Unchanged`].
//! - [`Edited::Changed`] means the edit was carried out, not that a bit
//!   differs (a `Set` with a zero mask is carried out), as for
//!   [`crate::op::Op::SetField`].
//! - An edit changes nothing but its bits: Set and Modify only the window,
//!   Checksum only the field, ToMetadata only metadata bits `meta_bit..
//!   meta_bit + len`; Insert and Remove change the length by exactly their
//!   byte count and keep every other bit in order.
//! - Every edit agrees with a bit-by-bit model (a frame as a list of bits)
//!   on every frame, position and value (proptests below; [`fuzz_window`]).

use sluice_packet::buf::PacketBuf;
use sluice_packet::checksum;
use sluice_packet::parse::{Meta, ParseInfo};

use crate::layout::Base;
use crate::op::Edited;

/// Most bytes one [`WindowOp::Insert`] inserts.
pub const MAX_INSERT: usize = 128;
/// Widest [`WindowOp::Set`] or [`WindowOp::Modify`] window, in bits.
pub const MAX_EDIT_BITS: u16 = 128;
/// Widest [`WindowOp::ToMetadata`] copy: the whole metadata.
pub const METADATA_BITS: u8 = 64;
/// Largest bit offset a position may have: a whole 65535-byte frame
/// (parse offsets are 16-bit), counted from its base.
pub const MAX_BIT_OFFSET: u32 = 8 * 65535;
/// Width of a [`WindowOp::Checksum`] field.
pub const CHECKSUM_FIELD_BITS: u32 = 16;

/// A bit position: `bit_offset` bits after the first bit of `base`
/// (bit 0 is the most significant bit of the byte at the base).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pos {
    pub base: Base,
    /// At most [`MAX_BIT_OFFSET`].
    pub bit_offset: u32,
}

impl Pos {
    /// `bit_offset` bits after `base`.
    pub const fn new(base: Base, bit_offset: u32) -> Pos {
        Pos { base, bit_offset }
    }

    /// The position's bit index in the frame `info` describes, if its base
    /// is present.
    #[inline]
    fn bit(self, info: &ParseInfo) -> Option<usize> {
        let base = self.base.offset(info)?;
        base.checked_mul(8)?.checked_add(usize::try_from(self.bit_offset).ok()?)
    }
}

/// One protocol-oblivious edit (see the module docs for the bit order and
/// examples).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WindowOp {
    /// The `len`-bit window at `at` (1..=[`MAX_EDIT_BITS`] bits): where
    /// `mask` is 1, its bits take `value`'s. `value` and `mask` are
    /// right-aligned to `len` bits; their bits above `len` are ignored.
    Set { at: Pos, len: u16, value: u128, mask: u128 },
    /// Add `delta` to the `len`-bit window at `at` (1..=[`MAX_EDIT_BITS`]
    /// bits), wrapping modulo `2^len` (a negative delta subtracts).
    Modify { at: Pos, len: u16, delta: i128 },
    /// Insert `bytes` (1..=[`MAX_INSERT`] of them, `8 * bytes.len()`
    /// bits) at bit position `at`, which may be the frame's end. Refused
    /// when the buffer has neither the headroom nor the tailroom.
    Insert { at: Pos, bytes: Box<[u8]> },
    /// Remove the `len_bits` bits at `at` (a non-zero multiple of 8).
    Remove { at: Pos, len_bits: u32 },
    /// Write the RFC 1071 Internet checksum of the `calc_len_bits` bits at
    /// `start` (a non-zero multiple of 8; an odd byte count is padded with
    /// a zero byte) into the [`CHECKSUM_FIELD_BITS`]-bit field at `field`,
    /// big-endian; the field counts as zero while summing.
    Checksum { field: Pos, start: Pos, calc_len_bits: u32 },
    /// Copy the `len`-bit window at `from` (1..=64 bits) into the
    /// metadata's bits `meta_bit..meta_bit + len` (bit 0 the metadata's
    /// most significant bit; `meta_bit + len <= 64`), leaving its other
    /// bits alone.
    ToMetadata { meta_bit: u8, from: Pos, len: u8 },
}

/// Why a [`WindowOp`] is refused ([`WindowOp::validate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowError {
    /// A length of zero (window, inserted bytes, removed bits, checksum
    /// range or metadata copy).
    ZeroLength,
    /// A [`WindowOp::Set`] or [`WindowOp::Modify`] window wider than
    /// [`MAX_EDIT_BITS`].
    WindowTooLong { len: u16 },
    /// More than [`MAX_INSERT`] bytes to insert.
    InsertTooLong { len: usize },
    /// A [`WindowOp::Remove`] length that is not a multiple of 8.
    RemoveNotBytes { len_bits: u32 },
    /// A [`WindowOp::Checksum`] range that is not a multiple of 8 bits.
    ChecksumNotBytes { calc_len_bits: u32 },
    /// A [`WindowOp::ToMetadata`] range that ends past the metadata's 64
    /// bits.
    MetadataRange { meta_bit: u8, len: u8 },
    /// A position's bit offset above [`MAX_BIT_OFFSET`].
    OffsetTooLarge { bit_offset: u32 },
}

impl core::fmt::Display for WindowError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WindowError::ZeroLength => f.write_str("window edit of length zero"),
            WindowError::WindowTooLong { len } => {
                write!(f, "window of {len} bits is wider than {MAX_EDIT_BITS}")
            }
            WindowError::InsertTooLong { len } => {
                write!(f, "insert of {len} bytes is longer than {MAX_INSERT}")
            }
            WindowError::RemoveNotBytes { len_bits } => {
                write!(f, "remove of {len_bits} bits is not a whole number of bytes")
            }
            WindowError::ChecksumNotBytes { calc_len_bits } => {
                write!(f, "checksum over {calc_len_bits} bits is not a whole number of bytes")
            }
            WindowError::MetadataRange { meta_bit, len } => {
                write!(f, "{len} metadata bits from bit {meta_bit} end past bit 64")
            }
            WindowError::OffsetTooLarge { bit_offset } => {
                write!(f, "bit offset {bit_offset} is above {MAX_BIT_OFFSET}")
            }
        }
    }
}

impl std::error::Error for WindowError {}

impl WindowOp {
    /// Checks the op's lengths and offsets (front ends call it when a rule
    /// is installed). Reports the first problem: positions' offsets first,
    /// then lengths.
    pub fn validate(&self) -> Result<(), WindowError> {
        let (p, q) = match self {
            WindowOp::Set { at, .. }
            | WindowOp::Modify { at, .. }
            | WindowOp::Insert { at, .. }
            | WindowOp::Remove { at, .. } => (at, None),
            WindowOp::Checksum { field, start, .. } => (field, Some(start)),
            WindowOp::ToMetadata { from, .. } => (from, None),
        };
        for pos in core::iter::once(p).chain(q) {
            if pos.bit_offset > MAX_BIT_OFFSET {
                return Err(WindowError::OffsetTooLarge { bit_offset: pos.bit_offset });
            }
        }
        match *self {
            WindowOp::Set { len, .. } | WindowOp::Modify { len, .. } => match len {
                0 => Err(WindowError::ZeroLength),
                l if l > MAX_EDIT_BITS => Err(WindowError::WindowTooLong { len }),
                _ => Ok(()),
            },
            WindowOp::Insert { ref bytes, .. } => match bytes.len() {
                0 => Err(WindowError::ZeroLength),
                len if len > MAX_INSERT => Err(WindowError::InsertTooLong { len }),
                _ => Ok(()),
            },
            WindowOp::Remove { len_bits, .. } => match len_bits {
                0 => Err(WindowError::ZeroLength),
                l if l % 8 != 0 => Err(WindowError::RemoveNotBytes { len_bits }),
                _ => Ok(()),
            },
            WindowOp::Checksum { calc_len_bits, .. } => match calc_len_bits {
                0 => Err(WindowError::ZeroLength),
                l if l % 8 != 0 => Err(WindowError::ChecksumNotBytes { calc_len_bits }),
                _ => Ok(()),
            },
            WindowOp::ToMetadata { meta_bit, len, .. } => {
                if len == 0 {
                    Err(WindowError::ZeroLength)
                } else if u16::from(meta_bit) + u16::from(len) > u16::from(METADATA_BITS) {
                    Err(WindowError::MetadataRange { meta_bit, len })
                } else {
                    Ok(())
                }
            }
        }
    }
}

/// Runs `op` on `buf`, whose current parse is `info`; [`WindowOp::ToMetadata`]
/// writes `meta`. [`Edited::Changed`] asks the caller to re-parse;
/// [`Edited::Unchanged`] means nothing was touched (see the module docs).
pub fn apply(op: &WindowOp, buf: &mut PacketBuf, info: &ParseInfo, meta: &mut Meta) -> Edited {
    if op.validate().is_err() {
        return Edited::Unchanged;
    }
    let done = match op {
        WindowOp::Set { at, len, value, mask } => {
            at.bit(info).and_then(|at| write(buf.data_mut(), at, u32::from(*len), *value, *mask))
        }
        WindowOp::Modify { at, len, delta } => {
            at.bit(info).and_then(|at| modify(buf.data_mut(), at, u32::from(*len), *delta))
        }
        WindowOp::Insert { at, bytes } => at.bit(info).and_then(|at| insert(buf, at, bytes)),
        WindowOp::Remove { at, len_bits } => {
            let len = usize::try_from(*len_bits).ok();
            at.bit(info).zip(len).and_then(|(at, len)| remove(buf, at, len))
        }
        WindowOp::Checksum { field, start, calc_len_bits } => {
            let len = usize::try_from(*calc_len_bits).ok();
            match (field.bit(info), start.bit(info), len) {
                (Some(f), Some(s), Some(len)) => internet_checksum(buf.data_mut(), f, s, len),
                _ => None,
            }
        }
        WindowOp::ToMetadata { meta_bit, from, len } => from
            .bit(info)
            .and_then(|from| to_metadata(buf.data(), &mut meta.metadata, *meta_bit, from, *len)),
    };
    match done {
        Some(()) => Edited::Changed,
        None => Edited::Unchanged,
    }
}

/// One byte's share of the window `first..end` (bit indices of the
/// frame): the byte's bits `lo..hi` (0 = most significant), for the byte
/// whose first bit is `b8`.
#[inline]
fn share(first: usize, end: usize, b8: usize) -> (u32, u32) {
    ((first.max(b8) - b8) as u32, (end.min(b8 + 8) - b8) as u32)
}

/// The `len` bits (1..=128) at bit `first`, right-aligned, or `None` if
/// they run past the frame.
fn read(frame: &[u8], first: usize, len: u32) -> Option<u128> {
    let end = first.checked_add(usize::try_from(len).ok()?)?;
    let k = first / 8;
    let bytes = frame.get(k..end.div_ceil(8))?;
    let mut v = 0u128;
    for (i, &b) in bytes.iter().enumerate() {
        let (lo, hi) = share(first, end, (k + i) * 8);
        let c = hi - lo;
        v = (v << c) | u128::from((u32::from(b) >> (8 - hi)) & ((1 << c) - 1));
    }
    Some(v)
}

/// Writes `value`'s low `len` bits (1..=128) into the window at bit
/// `first` where `mask` is 1, or returns `None`, writing nothing, if the
/// window runs past the frame.
fn write(frame: &mut [u8], first: usize, len: u32, value: u128, mask: u128) -> Option<()> {
    let end = first.checked_add(usize::try_from(len).ok()?)?;
    let k = first / 8;
    let bytes = frame.get_mut(k..end.div_ceil(8))?;
    let (mut v, mut m) = (value, mask);
    // Last byte first: the value is consumed from its least significant bit.
    for (i, b) in bytes.iter_mut().enumerate().rev() {
        let (lo, hi) = share(first, end, (k + i) * 8);
        let c = hi - lo;
        let ones = (1u32 << c) - 1;
        let bm = ((m as u32 & ones) << (8 - hi)) as u8;
        let bv = ((v as u32 & ones) << (8 - hi)) as u8;
        *b = (*b & !bm) | (bv & bm);
        v >>= c;
        m >>= c;
    }
    Some(())
}

fn modify(frame: &mut [u8], at: usize, len: u32, delta: i128) -> Option<()> {
    let ones = u128::MAX.checked_shr(128u32.checked_sub(len)?)?;
    // Two's complement: adding the delta's bits is adding the delta
    // modulo 2^128, hence modulo 2^len once masked.
    let v = read(frame, at, len)?.wrapping_add(delta as u128) & ones;
    write(frame, at, len, v, ones)
}

fn insert(buf: &mut PacketBuf, at: usize, bytes: &[u8]) -> Option<()> {
    if at > buf.len().checked_mul(8)? {
        return None;
    }
    let (k, r) = (at / 8, (at % 8) as u32);
    let gap = buf.insert(k, bytes.len()).ok()?;
    if r == 0 {
        gap.copy_from_slice(bytes);
        return Some(());
    }
    // The gap is k..k + n and the old byte k is now at k + n (it exists:
    // an unaligned position is inside a byte of the frame).
    let run = buf.data_mut().get_mut(k..=k + bytes.len())?;
    let (old, gap) = run.split_last_mut()?;
    let keep = 0xffu8 << (8 - r);
    let mut carry = *old & keep;
    for (d, &b) in gap.iter_mut().zip(bytes) {
        *d = carry | (b >> r);
        carry = b << (8 - r);
    }
    *old = carry | (*old & !keep);
    Some(())
}

fn remove(buf: &mut PacketBuf, at: usize, len_bits: usize) -> Option<()> {
    if at.checked_add(len_bits)? > buf.len().checked_mul(8)? {
        return None;
    }
    let (k, r, m) = (at / 8, (at % 8) as u32, len_bits / 8);
    if r != 0 {
        // Old byte k's first r bits go in front of the bits that stay in
        // old byte k + m, which becomes byte k. Both bytes are inside the
        // frame (the range ends inside byte k + m), and the remove below
        // cannot fail after this write.
        let data = buf.data_mut();
        let keep = 0xffu8 << (8 - r);
        let head = *data.get(k)? & keep;
        let b = data.get_mut(k + m)?;
        *b = head | (*b & !keep);
    }
    buf.remove(k, m).ok()
}

fn internet_checksum(frame: &mut [u8], field: usize, start: usize, len_bits: usize) -> Option<()> {
    let bits = frame.len().checked_mul(8)?;
    let field_end = field.checked_add(CHECKSUM_FIELD_BITS as usize)?;
    if field_end > bits || start.checked_add(len_bits)? > bits {
        return None;
    }
    write(frame, field, CHECKSUM_FIELD_BITS, 0, 0xffff)?;
    let sum = sum_bits(frame, start, len_bits / 8)?;
    write(frame, field, CHECKSUM_FIELD_BITS, u128::from(!fold(sum)), 0xffff)
}

/// The unfolded one's complement sum of the `n` bytes starting at bit
/// `start` (checked to be inside the frame), a trailing odd byte padded
/// with zero.
fn sum_bits(frame: &[u8], start: usize, n: usize) -> Option<u64> {
    let (k, r) = (start / 8, (start % 8) as u32);
    if r == 0 {
        return Some(u64::from(checksum::sum(frame.get(k..k.checked_add(n)?)?)));
    }
    // n + 1 bytes hold the n unaligned ones.
    let src = frame.get(k..=k.checked_add(n)?)?;
    let mut shifted = src.iter().zip(src.iter().skip(1)).map(|(&a, &b)| (a << r) | (b >> (8 - r)));
    let mut acc = 0u64;
    while let Some(hi) = shifted.next() {
        let lo = shifted.next().unwrap_or(0);
        acc += u64::from(u16::from_be_bytes([hi, lo]));
    }
    Some(acc)
}

/// Folds a one's complement sum into 16 bits (end-around carry).
fn fold(mut s: u64) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

fn to_metadata(frame: &[u8], metadata: &mut u64, meta_bit: u8, from: usize, len: u8) -> Option<()> {
    let v = read(frame, from, u32::from(len))? as u64;
    let shift = u32::from(METADATA_BITS).checked_sub(u32::from(meta_bit) + u32::from(len))?;
    let ones = u64::MAX.checked_shr(64u32.checked_sub(u32::from(len))?)?;
    *metadata = (*metadata & !(ones << shift)) | (v << shift);
    Some(())
}

/// [`apply`]'s reference: the same edit done by the bit-by-bit model
/// every edit is checked against (a list of bits, one bit at a time, base
/// offsets read from the parse's fields). Front ends' reference
/// interpreters run window edits through it, so differential tests compare
/// the fast executor with an independent one. Refuses exactly what
/// [`apply`] refuses; a changed frame is loaded back into `buf`.
pub fn reference_apply(
    op: &WindowOp,
    buf: &mut PacketBuf,
    info: &ParseInfo,
    meta: &mut Meta,
) -> Edited {
    let (e, frame, md) =
        model::apply(op, buf.data(), info, buf.headroom(), buf.tailroom(), meta.metadata);
    if e == Edited::Changed {
        if buf.load(&frame).is_err() {
            return Edited::Unchanged;
        }
        meta.metadata = md;
    }
    e
}

/// The reference every edit is checked against: the frame as a list of
/// bits, each edit done one bit at a time, base offsets read from the
/// parse directly. Slow and plain on purpose.
mod model {
    use super::{Pos, WindowOp, CHECKSUM_FIELD_BITS};
    use crate::op::Edited;
    use sluice_packet::parse::ParseInfo;

    fn bit(info: &ParseInfo, p: Pos) -> Option<u64> {
        Some(crate::extract::model_base(info, p.base)? as u64 * 8 + u64::from(p.bit_offset))
    }

    fn bits(frame: &[u8]) -> Vec<bool> {
        (0..frame.len() * 8).map(|i| frame[i / 8] >> (7 - i % 8) & 1 == 1).collect()
    }

    fn bytes(bits: &[bool]) -> Vec<u8> {
        bits.chunks(8).map(|c| c.iter().fold(0u8, |b, &x| (b << 1) | u8::from(x))).collect()
    }

    /// Whether bits `at..at + len` are inside `bits`.
    fn inside(bits: &[bool], at: u64, len: u64) -> bool {
        at + len <= bits.len() as u64
    }

    /// `op` on `frame` (parse `info`) in a buffer with `headroom` and
    /// `tailroom` free bytes, with `metadata`: what [`super::apply`] must
    /// answer, and the frame and metadata it must leave.
    pub(super) fn apply(
        op: &WindowOp,
        frame: &[u8],
        info: &ParseInfo,
        headroom: usize,
        tailroom: usize,
        metadata: u64,
    ) -> super::Outcome {
        let unchanged = (Edited::Unchanged, frame.to_vec(), metadata);
        if op.validate().is_err() {
            return unchanged;
        }
        let mut f = bits(frame);
        let mut md = metadata;
        match op {
            WindowOp::Set { at, len, value, mask } => {
                let Some(at) = bit(info, *at).filter(|&a| inside(&f, a, u64::from(*len))) else {
                    return unchanged;
                };
                for i in 0..u64::from(*len) {
                    let vb = u64::from(*len) - 1 - i; // value bit for window bit i
                    if mask >> vb & 1 == 1 {
                        f[(at + i) as usize] = value >> vb & 1 == 1;
                    }
                }
            }
            WindowOp::Modify { at, len, delta } => {
                let Some(at) = bit(info, *at).filter(|&a| inside(&f, a, u64::from(*len))) else {
                    return unchanged;
                };
                let w = (at as usize)..(at as usize + usize::from(*len));
                let mut v = f[w.clone()].iter().fold(0u128, |v, &b| (v << 1) | u128::from(b));
                // Add bit by bit, dropping the carry out of the top.
                let mut carry = false;
                for i in 0..u32::from(*len) {
                    let (a, d) = (v >> i & 1 == 1, *delta >> i & 1 == 1);
                    let s = a ^ d ^ carry;
                    carry = (a & d) | (carry & (a ^ d));
                    v = (v & !(1 << i)) | (u128::from(s) << i);
                }
                for (j, i) in w.enumerate() {
                    f[i] = v >> (usize::from(*len) - 1 - j) & 1 == 1;
                }
            }
            WindowOp::Insert { at, bytes } => {
                let Some(at) = bit(info, *at).filter(|&a| inside(&f, a, 0)) else {
                    return unchanged;
                };
                if bytes.len() > headroom && bytes.len() > tailroom {
                    return unchanged;
                }
                let at = at as usize;
                f.splice(at..at, bits(bytes));
            }
            WindowOp::Remove { at, len_bits } => {
                let Some(at) = bit(info, *at).filter(|&a| inside(&f, a, u64::from(*len_bits)))
                else {
                    return unchanged;
                };
                f.drain(at as usize..at as usize + *len_bits as usize);
            }
            WindowOp::Checksum { field, start, calc_len_bits } => {
                let fw = u64::from(CHECKSUM_FIELD_BITS);
                let (Some(fa), Some(sa)) = (bit(info, *field), bit(info, *start)) else {
                    return unchanged;
                };
                if !inside(&f, fa, fw) || !inside(&f, sa, u64::from(*calc_len_bits)) {
                    return unchanged;
                }
                for i in fa..fa + fw {
                    f[i as usize] = false;
                }
                let mut range = bytes(&f[sa as usize..(sa + u64::from(*calc_len_bits)) as usize]);
                if range.len() % 2 == 1 {
                    range.push(0);
                }
                let mut sum: u64 =
                    range.chunks(2).map(|w| u64::from(w[0]) * 256 + u64::from(w[1])).sum();
                while sum > 0xffff {
                    sum = (sum & 0xffff) + (sum >> 16);
                }
                let c = !(sum as u16);
                for i in 0..fw {
                    f[(fa + i) as usize] = c >> (15 - i) & 1 == 1;
                }
            }
            WindowOp::ToMetadata { meta_bit, from, len } => {
                let Some(from) = bit(info, *from).filter(|&a| inside(&f, a, u64::from(*len)))
                else {
                    return unchanged;
                };
                for i in 0..u64::from(*len) {
                    let m = 63 - (u64::from(*meta_bit) + i); // bit 0 is the top bit
                    md = (md & !(1 << m)) | (u64::from(f[(from + i) as usize]) << m);
                }
            }
        }
        (Edited::Changed, bytes(&f), md)
    }
}

/// What an edit answered, and the frame and metadata it left.
type Outcome = (Edited, Vec<u8>, u64);

/// `op` run by [`apply`] on `frame` loaded into a buffer with `headroom`
/// and `tailroom` free bytes, the frame parsed first, with `metadata`;
/// beside it, what the model says.
fn run_both(
    op: &WindowOp,
    frame: &[u8],
    headroom: usize,
    tailroom: usize,
    metadata: u64,
) -> (Outcome, Outcome) {
    let mut key = sluice_packet::FlowKey::ZERO;
    let info = sluice_packet::parse(frame, &Meta::default(), &mut key);
    let mut buf = PacketBuf::new(headroom, frame.len() + tailroom);
    buf.load(frame).expect("sized for the frame");
    let mut meta = Meta { metadata, ..Meta::default() };
    let edited = apply(op, &mut buf, &info, &mut meta);
    let got = (edited, buf.data().to_vec(), meta.metadata);
    (got, model::apply(op, frame, &info, headroom, tailroom, metadata))
}

/// Reads fuzz input, zeros once it runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        let n = N.min(self.0.len());
        a[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        a
    }
    fn u8(&mut self) -> u8 {
        let [b] = self.take();
        b
    }
    fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.take())
    }
    /// A base byte and a 16-bit offset. Without the base byte's top bit
    /// the offset is taken modulo 1024 (near the headers, so windows
    /// straddle the frame's end); with it and bit 6, it is multiplied by
    /// 9 (past [`MAX_BIT_OFFSET`] for large values).
    fn pos(&mut self) -> Pos {
        let b = self.u8();
        let mut off = u32::from(self.u16());
        if b & 0x80 == 0 {
            off %= 1024;
        } else if b & 0x40 != 0 {
            off *= 9;
        }
        Pos::new(Base::ALL[usize::from(b % 6)], off)
    }
}

/// One fuzz case: the op, the buffer's head- and tailroom, the metadata
/// and the frame.
#[derive(Debug, PartialEq, Eq)]
struct Case<'a> {
    op: WindowOp,
    headroom: usize,
    tailroom: usize,
    metadata: u64,
    frame: &'a [u8],
}

/// Decodes a fuzz input (layout in [`fuzz_window`]).
fn decode(data: &[u8]) -> Case<'_> {
    let mut i = Input(data);
    let kind = i.u8() % 6;
    let headroom = usize::from(i.u8());
    let tailroom = usize::from(i.u8());
    let metadata = u64::from_be_bytes(i.take());
    let op = match kind {
        0 => WindowOp::Set {
            at: i.pos(),
            len: u16::from(i.u8()),
            value: u128::from_be_bytes(i.take()),
            mask: u128::from_be_bytes(i.take()),
        },
        1 => WindowOp::Modify {
            at: i.pos(),
            len: u16::from(i.u8()),
            delta: i128::from_be_bytes(i.take()),
        },
        2 => {
            let at = i.pos();
            let n = usize::from(i.u8()).min(i.0.len());
            let (bytes, rest) = i.0.split_at(n);
            i.0 = rest;
            WindowOp::Insert { at, bytes: bytes.into() }
        }
        3 => WindowOp::Remove { at: i.pos(), len_bits: u32::from(i.u16()) },
        4 => {
            WindowOp::Checksum { field: i.pos(), start: i.pos(), calc_len_bits: u32::from(i.u16()) }
        }
        _ => WindowOp::ToMetadata { meta_bit: i.u8() % 72, from: i.pos(), len: i.u8() % 72 },
    };
    Case { op, headroom, tailroom, metadata, frame: i.0 }
}

/// Fuzz entry (cargo-fuzz target `window`). The input is: an op kind
/// (byte % 6: set, modify, insert, remove, checksum, to-metadata), the
/// buffer's headroom and tailroom (a byte each), the metadata (8 bytes),
/// the op's fields (a position is a base byte and a 16-bit bit offset,
/// see `Input::pos`; lengths are bytes or 16-bit words, an insert's byte
/// count is followed by its bytes), then the frame. Parses the frame,
/// applies the op, and panics if the answer, the frame or the metadata
/// differs from the bit-by-bit model's.
pub fn fuzz_window(data: &[u8]) {
    let c = decode(data);
    let (got, want) = run_both(&c.op, c.frame, c.headroom, c.tailroom, c.metadata);
    assert_eq!(got, want, "{:?} on {:02x?}", c.op, c.frame);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use sluice_packet::parse::parse;
    use sluice_packet::FlowKey;

    fn at(bit_offset: u32) -> Pos {
        Pos::new(Base::Frame, bit_offset)
    }

    /// `op` on `frame` in a default buffer, parsed first, metadata `md`.
    fn run_md(op: &WindowOp, frame: &[u8], md: u64) -> (Edited, Vec<u8>, u64) {
        let mut buf = PacketBuf::from_slice(frame).unwrap();
        let mut meta = Meta { metadata: md, ..Meta::default() };
        let mut key = FlowKey::ZERO;
        let info = parse(buf.data(), &meta, &mut key);
        let e = apply(op, &mut buf, &info, &mut meta);
        (e, buf.data().to_vec(), meta.metadata)
    }

    fn run(op: &WindowOp, frame: &[u8]) -> (Edited, Vec<u8>) {
        let (e, f, _) = run_md(op, frame, 0);
        (e, f)
    }

    /// The wikipedia/RFC-style example header: checksum b861.
    const IPV4: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];

    /// Ethernet + [`IPV4`] + UDP, the datagram as long as its header says
    /// (0x73 bytes).
    fn ipv4_udp() -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00];
        f.extend_from_slice(&IPV4);
        f.extend_from_slice(&[0x00, 0x35, 0x14, 0xe9, 0x00, 0x5f, 0x00, 0x00]);
        f.resize(14 + 0x73, 0xa5);
        f
    }

    /// Ethernet + 802.1Q + IPv6 + TCP, 20 payload bytes.
    fn vlan_ipv6_tcp() -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x81, 0x00, 0x00, 0x07, 0x86, 0xdd];
        let mut ip = vec![0x60, 0, 0, 0, 0, 40, 6, 64];
        ip.extend((0..32).map(|i| i as u8));
        f.extend_from_slice(&ip);
        let mut tcp = vec![0x1f, 0x90, 0xc3, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff];
        tcp.extend_from_slice(&[0, 0, 0, 0]);
        f.extend_from_slice(&tcp);
        f.extend((0..20).map(|i| 0x30 + i as u8));
        f
    }

    /// Ethernet + one MPLS label + IPv4 + UDP.
    fn mpls_ipv4() -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x88, 0x47, 0x00, 0x01, 0x41, 0x40];
        f.extend_from_slice(&ipv4_udp()[14..]);
        f
    }

    #[test]
    fn templates_parse_with_every_base() {
        let mut k = FlowKey::ZERO;
        let i = parse(&ipv4_udp(), &Meta::default(), &mut k);
        assert_eq!((i.l3, i.l4, i.payload), (Some(14), Some(34), Some(42)));
        let i = parse(&vlan_ipv6_tcp(), &Meta::default(), &mut k);
        assert_eq!((i.ethertype_offset, i.l3, i.l4), (Some(16), Some(18), Some(58)));
        let i = parse(&mpls_ipv4(), &Meta::default(), &mut k);
        assert_eq!(i.l2_5, Some(14));
    }

    #[test]
    fn doc_examples() {
        let ab = [0xab, 0xcd];
        let set = WindowOp::Set { at: at(4), len: 8, value: 0xff, mask: 0xf0 };
        assert_eq!(run(&set, &ab), (Edited::Changed, vec![0xaf, 0xcd]));
        let m = WindowOp::Modify { at: at(4), len: 8, delta: 0x45 };
        assert_eq!(run(&m, &ab), (Edited::Changed, vec![0xa0, 0x1d]));
        let ins = WindowOp::Insert { at: at(4), bytes: Box::new([0xff]) };
        assert_eq!(run(&ins, &ab), (Edited::Changed, vec![0xaf, 0xfb, 0xcd]));
        let rm = WindowOp::Remove { at: at(4), len_bits: 8 };
        assert_eq!(run(&rm, &[0xaf, 0xfb, 0xcd]), (Edited::Changed, vec![0xab, 0xcd]));
        let tm = WindowOp::ToMetadata { meta_bit: 56, from: at(4), len: 8 };
        assert_eq!(run_md(&tm, &ab, u64::MAX), (Edited::Changed, ab.to_vec(), !0x43));
    }

    #[test]
    fn ipv4_header_checksum_comes_out_right() {
        let want = ipv4_udp();
        let mut f = want.clone();
        f[24..26].copy_from_slice(&[0xde, 0xad]);
        let op = WindowOp::Checksum {
            field: Pos::new(Base::L3, 80),
            start: Pos::new(Base::L3, 0),
            calc_len_bits: 160,
        };
        let (e, got) = run(&op, &f);
        assert_eq!(e, Edited::Changed);
        assert_eq!(&got[24..26], &[0xb8, 0x61]);
        assert_eq!(got, want);
        // The header now verifies.
        assert_eq!(checksum::fold(checksum::sum(&got[14..34])), 0xffff);
        // From the frame's start, with the field outside the range.
        let op = WindowOp::Checksum { field: at(0), start: at(8 * 14), calc_len_bits: 160 };
        let (_, got) = run(&op, &want);
        // The field (in the ethernet header) is outside: the range sums to
        // !0xb861 + 0xb861 = 0xffff, so the checksum is 0.
        assert_eq!(&got[..2], &[0, 0]);
    }

    #[test]
    fn checksum_pads_an_odd_byte_and_works_unaligned() {
        // 0102 + 0300 = 0402 -> fb fd
        let op = WindowOp::Checksum { field: at(24), start: at(0), calc_len_bits: 24 };
        let (e, got) = run(&op, &[1, 2, 3, 0xee, 0xee]);
        assert_eq!((e, got), (Edited::Changed, vec![1, 2, 3, 0xfb, 0xfd]));
        // The same bytes, shifted right by 4 bits.
        let op = WindowOp::Checksum { field: at(28), start: at(4), calc_len_bits: 24 };
        let (e, got) = run(&op, &[0xf0, 0x10, 0x20, 0x3e, 0xee, 0xef]);
        assert_eq!((e, got), (Edited::Changed, vec![0xf0, 0x10, 0x20, 0x3f, 0xbf, 0xdf]));
        // Field past the end: nothing.
        let op = WindowOp::Checksum { field: at(25), start: at(0), calc_len_bits: 24 };
        assert_eq!(run(&op, &[1, 2, 3, 4, 5]), (Edited::Unchanged, vec![1, 2, 3, 4, 5]));
    }

    #[test]
    fn shim_after_ethernet_inserted_then_removed() {
        let orig = ipv4_udp();
        let shim = [0x5a, 1, 2, 3, 4, 5, 6, 0xa5];
        let ins = WindowOp::Insert { at: Pos::new(Base::L2End, 0), bytes: Box::new(shim) };
        let (e, got) = run(&ins, &orig);
        assert_eq!(e, Edited::Changed);
        assert_eq!(got.len(), orig.len() + 8);
        assert_eq!(&got[..14], &orig[..14]);
        assert_eq!(&got[14..22], &shim);
        assert_eq!(&got[22..], &orig[14..]);
        // Re-parsed (the shim is where the parser expects IPv4 now).
        let rm = WindowOp::Remove { at: Pos::new(Base::L2End, 0), len_bits: 64 };
        assert_eq!(run(&rm, &got), (Edited::Changed, orig.clone()));
        // Unaligned, in the middle of the IPv4 header, and back.
        let ins = WindowOp::Insert { at: Pos::new(Base::L3, 3), bytes: Box::new(shim) };
        let (_, got) = run(&ins, &orig);
        let rm = WindowOp::Remove { at: at(14 * 8 + 3), len_bits: 64 };
        assert_eq!(run(&rm, &got), (Edited::Changed, orig));
    }

    #[test]
    fn insert_needs_room_and_a_position_inside() {
        let mut buf = PacketBuf::new(2, 6);
        buf.load(&[1, 2, 3, 4]).unwrap();
        let (info, mut meta) = (ParseInfo::default(), Meta::default());
        let op = WindowOp::Insert { at: at(8), bytes: Box::new([9, 9, 9]) };
        assert_eq!(apply(&op, &mut buf, &info, &mut meta), Edited::Unchanged);
        assert_eq!(buf.data(), &[1, 2, 3, 4]);
        let op = WindowOp::Insert { at: at(33), bytes: Box::new([9]) };
        assert_eq!(apply(&op, &mut buf, &info, &mut meta), Edited::Unchanged);
        let op = WindowOp::Insert { at: at(32), bytes: Box::new([9, 9]) };
        assert_eq!(apply(&op, &mut buf, &info, &mut meta), Edited::Changed);
        assert_eq!(buf.data(), &[1, 2, 3, 4, 9, 9]);
        let op = WindowOp::Remove { at: at(1), len_bits: 48 };
        assert_eq!(apply(&op, &mut buf, &info, &mut meta), Edited::Unchanged);
        let op = WindowOp::Remove { at: at(0), len_bits: 48 };
        assert_eq!(apply(&op, &mut buf, &info, &mut meta), Edited::Changed);
        assert!(buf.is_empty());
    }

    #[test]
    fn modify_wraps() {
        let op = WindowOp::Modify { at: at(0), len: 8, delta: 1 };
        assert_eq!(run(&op, &[0xff, 0x77]), (Edited::Changed, vec![0x00, 0x77]));
        let op = WindowOp::Modify { at: at(4), len: 4, delta: 3 };
        assert_eq!(run(&op, &[0xaf]), (Edited::Changed, vec![0xa2]));
        let op = WindowOp::Modify { at: at(4), len: 4, delta: -1 };
        assert_eq!(run(&op, &[0xa0]), (Edited::Changed, vec![0xaf]));
        // A 128-bit window three bits in: all ones plus one is zero, the
        // bits around it untouched.
        let f = [0xffu8; 17];
        let op = WindowOp::Modify { at: at(3), len: 128, delta: 1 };
        let mut want = [0u8; 17];
        want[0] = 0xe0;
        want[16] = 0x1f;
        assert_eq!(run(&op, &f), (Edited::Changed, want.to_vec()));
        // IPv4 TTL decrement through L3.
        let op = WindowOp::Modify { at: Pos::new(Base::L3, 64), len: 8, delta: -1 };
        assert_eq!(run(&op, &ipv4_udp()).1[22], 0x3f);
    }

    #[test]
    fn set_touches_only_masked_bits() {
        let op = WindowOp::Set { at: at(4), len: 8, value: 0b1010_1010, mask: 0b0110_0110 };
        // Window bits 4..12 of ff 00 are 1111 0000; the masked window bits
        // 1, 2, 5, 6 take the value's 0, 1, 0, 1: 1011 0010.
        assert_eq!(run(&op, &[0xff, 0x00]), (Edited::Changed, vec![0xfb, 0x20]));
        // Bits of value and mask above len are ignored.
        let op = WindowOp::Set { at: at(0), len: 4, value: !0, mask: 0xf5 };
        assert_eq!(run(&op, &[0x00]), (Edited::Changed, vec![0x50]));
        // A zero mask is carried out and changes nothing.
        let op = WindowOp::Set { at: at(0), len: 16, value: 0xffff, mask: 0 };
        assert_eq!(run(&op, &[1, 2]), (Edited::Changed, vec![1, 2]));
    }

    #[test]
    fn to_metadata_copies_into_its_bits_only() {
        // The MPLS entry's first 16 bits (after the ethertype) into
        // metadata bits 32..48.
        let op = WindowOp::ToMetadata { meta_bit: 32, from: Pos::new(Base::L2End, 0), len: 16 };
        let (e, f, md) = run_md(&op, &mpls_ipv4(), 0x1111_2222_3333_4444);
        assert_eq!((e, f, md), (Edited::Changed, mpls_ipv4(), 0x1111_2222_0001_4444));
        let op = WindowOp::ToMetadata { meta_bit: 0, from: Pos::new(Base::L3, 96), len: 64 };
        assert_eq!(run_md(&op, &ipv4_udp(), 7).2, 0xc0a8_0001_c0a8_00c7);
        let op = WindowOp::ToMetadata { meta_bit: 0, from: at(8 * 60 - 63), len: 64 };
        let f = &vlan_ipv6_tcp()[..60];
        assert_eq!(run_md(&op, f, 7), (Edited::Unchanged, f.to_vec(), 7));
    }

    #[test]
    fn absent_bases_and_windows_past_the_end_change_nothing() {
        let arp = {
            let mut f = vec![0xff; 6];
            f.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x08, 0x06]);
            f.resize(42, 0);
            f
        };
        for b in [Base::L2_5, Base::L4, Base::Payload] {
            let op = WindowOp::Set { at: Pos::new(b, 0), len: 8, value: 1, mask: 0xff };
            assert_eq!(run(&op, &arp), (Edited::Unchanged, arp.clone()));
        }
        let op = WindowOp::Set { at: at(42 * 8 - 7), len: 8, value: 1, mask: 0xff };
        assert_eq!(run(&op, &arp), (Edited::Unchanged, arp.clone()));
        let op = WindowOp::Set { at: at(42 * 8 - 8), len: 8, value: 1, mask: 0xff };
        assert_eq!(run(&op, &arp).0, Edited::Changed);
        // An unvalidated op is refused, not run.
        let op = WindowOp::Set { at: at(0), len: 200, value: 1, mask: 0xff };
        assert_eq!(run(&op, &arp), (Edited::Unchanged, arp));
    }

    #[test]
    fn refuses_zero_lengths() {
        let z = WindowError::ZeroLength;
        assert_eq!(WindowOp::Set { at: at(0), len: 0, value: 0, mask: 0 }.validate(), Err(z));
        assert_eq!(WindowOp::Modify { at: at(0), len: 0, delta: 1 }.validate(), Err(z));
        assert_eq!(WindowOp::Insert { at: at(0), bytes: Box::new([]) }.validate(), Err(z));
        assert_eq!(WindowOp::Remove { at: at(0), len_bits: 0 }.validate(), Err(z));
        let c = WindowOp::Checksum { field: at(0), start: at(0), calc_len_bits: 0 };
        assert_eq!(c.validate(), Err(z));
        assert_eq!(WindowOp::ToMetadata { meta_bit: 0, from: at(0), len: 0 }.validate(), Err(z));
    }

    #[test]
    fn refuses_windows_over_128_bits() {
        let op = WindowOp::Set { at: at(0), len: 129, value: 0, mask: 0 };
        assert_eq!(op.validate(), Err(WindowError::WindowTooLong { len: 129 }));
        let op = WindowOp::Modify { at: at(0), len: 300, delta: 0 };
        assert_eq!(op.validate(), Err(WindowError::WindowTooLong { len: 300 }));
        assert_eq!(WindowOp::Modify { at: at(0), len: 128, delta: 0 }.validate(), Ok(()));
    }

    #[test]
    fn refuses_long_inserts() {
        let op = WindowOp::Insert { at: at(0), bytes: vec![0; MAX_INSERT + 1].into() };
        assert_eq!(op.validate(), Err(WindowError::InsertTooLong { len: 129 }));
        let op = WindowOp::Insert { at: at(0), bytes: vec![0; MAX_INSERT].into() };
        assert_eq!(op.validate(), Ok(()));
    }

    #[test]
    fn refuses_removing_part_of_a_byte() {
        let op = WindowOp::Remove { at: at(3), len_bits: 12 };
        assert_eq!(op.validate(), Err(WindowError::RemoveNotBytes { len_bits: 12 }));
        assert_eq!(WindowOp::Remove { at: at(3), len_bits: 16 }.validate(), Ok(()));
    }

    #[test]
    fn refuses_checksums_over_part_of_a_byte() {
        let op = WindowOp::Checksum { field: at(0), start: at(16), calc_len_bits: 161 };
        assert_eq!(op.validate(), Err(WindowError::ChecksumNotBytes { calc_len_bits: 161 }));
    }

    #[test]
    fn refuses_metadata_ranges_past_64_bits() {
        let op = WindowOp::ToMetadata { meta_bit: 60, from: at(0), len: 5 };
        assert_eq!(op.validate(), Err(WindowError::MetadataRange { meta_bit: 60, len: 5 }));
        let op = WindowOp::ToMetadata { meta_bit: 0, from: at(0), len: 65 };
        assert_eq!(op.validate(), Err(WindowError::MetadataRange { meta_bit: 0, len: 65 }));
        let op = WindowOp::ToMetadata { meta_bit: 64, from: at(0), len: 1 };
        assert_eq!(op.validate(), Err(WindowError::MetadataRange { meta_bit: 64, len: 1 }));
        assert_eq!(WindowOp::ToMetadata { meta_bit: 60, from: at(0), len: 4 }.validate(), Ok(()));
    }

    #[test]
    fn refuses_offsets_past_a_whole_frame() {
        let big = MAX_BIT_OFFSET + 1;
        let op = WindowOp::Set { at: at(big), len: 1, value: 0, mask: 0 };
        assert_eq!(op.validate(), Err(WindowError::OffsetTooLarge { bit_offset: big }));
        // Either position of a checksum.
        let op = WindowOp::Checksum { field: at(0), start: at(big), calc_len_bits: 8 };
        assert_eq!(op.validate(), Err(WindowError::OffsetTooLarge { bit_offset: big }));
        let op = WindowOp::Checksum { field: at(u32::MAX), start: at(0), calc_len_bits: 8 };
        assert_eq!(op.validate(), Err(WindowError::OffsetTooLarge { bit_offset: u32::MAX }));
        assert_eq!(WindowOp::Remove { at: at(MAX_BIT_OFFSET), len_bits: 8 }.validate(), Ok(()));
        assert!(!WindowError::OffsetTooLarge { bit_offset: big }.to_string().is_empty());
    }

    #[test]
    fn fuzz_inputs_decode() {
        // Set, headroom 16, tailroom 16, metadata 0, L3 + 64 (the TTL),
        // 8 bits, value 0x20, mask 0xff, then the frame.
        let mut d = vec![0, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 64, 8];
        d.extend_from_slice(&0x20u128.to_be_bytes());
        d.extend_from_slice(&0xffu128.to_be_bytes());
        d.extend_from_slice(&ipv4_udp());
        let c = decode(&d);
        let op = WindowOp::Set { at: Pos::new(Base::L3, 64), len: 8, value: 0x20, mask: 0xff };
        assert_eq!((&c.op, c.headroom, c.tailroom, c.frame), (&op, 16, 16, &ipv4_udp()[..]));
        let (got, want) = run_both(&c.op, c.frame, c.headroom, c.tailroom, c.metadata);
        assert_eq!(got.0, Edited::Changed);
        assert_eq!(got, want);
        fuzz_window(&d);
        // Insert of 3 bytes at bit 3 of the L3 header.
        let mut d = vec![2, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 3, 3, 0xaa, 0xbb, 0xcc];
        d.extend_from_slice(&ipv4_udp());
        let c = decode(&d);
        let op =
            WindowOp::Insert { at: Pos::new(Base::L3, 3), bytes: Box::new([0xaa, 0xbb, 0xcc]) };
        assert_eq!((&c.op, c.headroom, c.tailroom), (&op, 0, 8));
        fuzz_window(&d);
        // Anything decodes, even nothing.
        fuzz_window(&[]);
        fuzz_window(&[5]);
        fuzz_window(&[2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 200]);
    }

    fn frame() -> impl Strategy<Value = Vec<u8>> {
        let template = (0..3usize, prop::collection::vec(any::<u8>(), 0..80), 0..200usize)
            .prop_map(|(t, tail, cut)| {
                let mut f = match t {
                    0 => ipv4_udp(),
                    1 => vlan_ipv6_tcp(),
                    _ => mpls_ipv4(),
                };
                f.extend_from_slice(&tail);
                f.truncate(cut);
                f
            });
        prop_oneof![1 => prop::collection::vec(any::<u8>(), 0..200), 2 => template]
    }

    fn pos() -> impl Strategy<Value = Pos> {
        // Mostly near the headers (so windows straddle the frame's end),
        // some anywhere in or past a 200-byte frame, a few past a whole
        // 65535-byte frame.
        let off = prop_oneof![
            12 => 0u32..400,
            4 => (0u32..50).prop_map(|b| b * 8),
            4 => 0u32..1700,
            1 => MAX_BIT_OFFSET - 8..=MAX_BIT_OFFSET + 8,
            1 => any::<u32>(),
        ];
        let base = prop_oneof![3 => Just(Base::Frame), 2 => prop::sample::select(&Base::ALL[..])];
        (base, off).prop_map(|(b, o)| Pos::new(b, o))
    }

    fn edit_len() -> impl Strategy<Value = u16> {
        prop_oneof![16 => 1u16..=128, 1 => Just(0u16), 1 => 129u16..400]
    }

    fn byte_len() -> impl Strategy<Value = u32> {
        prop_oneof![
            16 => (1u32..=24).prop_map(|b| b * 8),
            4 => (1u32..=200).prop_map(|b| b * 8),
            1 => 0u32..500,
            1 => any::<u32>(),
        ]
    }

    /// `(meta_bit, len)`, mostly inside the metadata's 64 bits.
    fn meta_range() -> impl Strategy<Value = (u8, u8)> {
        prop_oneof![
            4 => (0u8..64, any::<u8>()).prop_map(|(b, l)| (b, 1 + l % (64 - b))),
            1 => (0u8..70, 0u8..70),
        ]
    }

    fn window_op() -> impl Strategy<Value = WindowOp> {
        prop_oneof![
            (pos(), edit_len(), any::<u128>(), any::<u128>())
                .prop_map(|(at, len, value, mask)| WindowOp::Set { at, len, value, mask }),
            (pos(), edit_len(), any::<i128>()).prop_map(|(at, len, delta)| WindowOp::Modify {
                at,
                len,
                delta
            }),
            (pos(), prop::collection::vec(any::<u8>(), 0..=MAX_INSERT + 2))
                .prop_map(|(at, b)| WindowOp::Insert { at, bytes: b.into() }),
            (pos(), byte_len()).prop_map(|(at, len_bits)| WindowOp::Remove { at, len_bits }),
            (pos(), pos(), byte_len()).prop_map(|(field, start, calc_len_bits)| {
                WindowOp::Checksum { field, start, calc_len_bits }
            }),
            (meta_range(), pos()).prop_map(|((meta_bit, len), from)| WindowOp::ToMetadata {
                meta_bit,
                from,
                len
            }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 10000, ..ProptestConfig::default() })]

        #[test]
        fn apply_agrees_with_the_bit_model(
            op in window_op(),
            f in frame(),
            headroom in 0usize..160,
            tailroom in 0usize..160,
            md in any::<u64>(),
        ) {
            let (got, want) = run_both(&op, &f, headroom, tailroom, md);
            prop_assert_eq!(&got, &want, "{:?}", op);
            let grow = match (&op, got.0) {
                (WindowOp::Insert { bytes, .. }, Edited::Changed) => bytes.len() as isize,
                (WindowOp::Remove { len_bits, .. }, Edited::Changed) => -(*len_bits as isize / 8),
                _ => 0,
            };
            prop_assert_eq!(got.1.len() as isize, f.len() as isize + grow);
            if got.0 == Edited::Unchanged {
                prop_assert_eq!((&got.1[..], got.2), (&f[..], md));
            }
        }

        /// Every position a few bits either side of the frame's end, where
        /// the bounds checks decide.
        #[test]
        fn edits_at_the_frame_end_agree_with_the_bit_model(
            op in window_op(),
            f in frame(),
            back in (0u32..300, 0u32..300),
            md in any::<u64>(),
        ) {
            let end = 8 * f.len() as u32;
            let near = |b: u32| Pos::new(Base::Frame, (end + 16).saturating_sub(b));
            let op = match op {
                WindowOp::Set { len, value, mask, .. } => {
                    WindowOp::Set { at: near(back.0), len, value, mask }
                }
                WindowOp::Modify { len, delta, .. } => WindowOp::Modify { at: near(back.0), len, delta },
                WindowOp::Insert { bytes, .. } => WindowOp::Insert { at: near(back.0), bytes },
                WindowOp::Remove { len_bits, .. } => WindowOp::Remove { at: near(back.0), len_bits },
                WindowOp::Checksum { calc_len_bits, .. } => {
                    WindowOp::Checksum { field: near(back.0), start: near(back.1), calc_len_bits }
                }
                WindowOp::ToMetadata { meta_bit, len, .. } => {
                    WindowOp::ToMetadata { meta_bit, from: near(back.0), len }
                }
            };
            let (got, want) = run_both(&op, &f, 16, 16, md);
            prop_assert_eq!(&got, &want, "{:?}", op);
        }

        #[test]
        fn remove_undoes_insert(
            f in frame(),
            bit in 0usize..1700,
            bytes in prop::collection::vec(any::<u8>(), 1..=MAX_INSERT),
        ) {
            let p = at(bit as u32);
            let ins = WindowOp::Insert { at: p, bytes: bytes.clone().into() };
            let (e, grown) = run(&ins, &f);
            prop_assert_eq!(e == Edited::Changed, bit <= f.len() * 8);
            if e == Edited::Changed {
                let rm = WindowOp::Remove { at: p, len_bits: 8 * bytes.len() as u32 };
                prop_assert_eq!(run(&rm, &grown), (Edited::Changed, f));
            }
        }
    }
}
