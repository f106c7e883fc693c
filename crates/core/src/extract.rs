//! The extract stage: after the fixed parser, copy declared windows of the
//! frame into the key.
//!
//! # What
//! An [`Extract`] is compiled from a [`KeyLayout`]'s declared windows
//! (once, when a pipeline is built) and run on every packet right after
//! [`sluice_packet::parse()`], with the frame, the parser's [`ParseInfo`]
//! and the key the parser filled. For each window `{base, bit_offset,
//! bit_len}` it writes the window's bits into the window's slot and sets
//! its presence bit, or, when the base header is absent or the window runs
//! past the frame, writes zeros and clears the presence bit.
//!
//! Conventions (POF's and the network's):
//! - **Bit order.** Bit 0 of a window's frame is the most significant bit
//!   of the byte at the base; bit `i` is bit `7 - i % 8` of byte
//!   `base + i / 8`. The window's bits, read in that order, form a
//!   big-endian unsigned integer: the window's first bit is the value's
//!   most significant bit, its last bit the value's least significant bit.
//!   The value is stored right-aligned in the slot ([`WindowSlot::shift`]
//!   is the value's bit 0).
//! - **Bases** are byte offsets the fixed parser records ([`Base::offset`]):
//!   frame start, end of the Ethernet header and tags, L2.5, L3, L4 and
//!   transport payload. A base the parse did not find makes the window
//!   absent.
//! - **Inside the frame** means `base * 8 + bit_offset + bit_len <=
//!   frame.len() * 8`: the frame slice given, not the IP datagram's
//!   declared length (trailing padding is part of the frame).
//!
//! # Basic design
//! Compilation turns each window into a record: the base,
//! the whole bytes to skip (`bit_offset / 8`), the number of bytes the
//! window touches (at most 9: up to 7 leading bits plus 64), the right
//! shift that drops the unused trailing bits, and the precomputed key
//! masks. Running a step is one bounds-checked 16-byte load from the
//! window's first byte (the bytes after the window are shifted out), one
//! `u128` shift and two masked word writes; within 16 bytes of the
//! frame's end, the window's own bytes (`frame.get(start..start + n)`,
//! which is exactly the "inside the frame" test, since a byte range is
//! inside iff its bits are) are copied into a zeroed buffer instead.
//!
//! # Costs
//! Per window per packet: one branch on the base, one slice check, a
//! 16-byte load, a shift, two read-modify-writes of key words (measured:
//! about 40 instructions a window, `docs/BENCHMARKS.md`). No
//! allocation, no per-packet decisions beyond presence. Windows on the
//! same bytes are not merged (a later optimisation if profiles ask).
//!
//! # Invariants
//! - [`Extract::run`] never panics and never reads outside `frame`,
//!   whatever `info` says (a stale or foreign `ParseInfo` gives absent
//!   windows or wrong bits, never a fault).
//! - It writes only the windows' value and presence bits
//!   ([`KeyLayout::window_bits`]); the fixed parser's region is untouched.
//! - After a run, every window bit is determined by the frame and `info`
//!   alone (the key's previous window bits do not matter), and an absent
//!   window's value is zero with its presence bit clear.

use sluice_packet::parse::{Meta, ParseInfo};
use sluice_packet::FlowKey;

use crate::layout::{Base, KeyLayout, Window, WindowSlot};

/// One compiled window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Step {
    base: Base,
    /// Whole bytes from the base to the window's first byte.
    skip: usize,
    /// Bytes the window touches (1..=9).
    len: usize,
    /// Right shift of the 16 bytes read (first byte most significant) that
    /// leaves the window's last bit at bit 0.
    rshift: u32,
    /// All-ones of the window's width.
    ones: u64,
    word: usize,
    shift: u32,
    /// The value's bits in `word`.
    vmask: u64,
    pword: usize,
    pmask: u64,
}

impl Step {
    fn compile(s: &WindowSlot) -> Step {
        let w = s.window;
        let lead = w.bit_offset % 8;
        let bits = lead + u32::from(s.width);
        Step {
            base: w.base,
            skip: (w.bit_offset / 8) as usize,
            len: bits.div_ceil(8) as usize,
            rshift: 128 - bits,
            ones: s.width_mask(),
            word: usize::from(s.word),
            shift: u32::from(s.shift),
            vmask: s.value_mask(),
            pword: usize::from(s.presence.word),
            pmask: s.presence.mask(),
        }
    }
}

/// The extract program of a [`KeyLayout`] (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Extract {
    steps: Vec<Step>,
}

impl Extract {
    /// Compile `layout`'s windows, in declaration order. The layout must be
    /// valid ([`KeyLayout::validate`]), which every layout built with
    /// [`KeyLayout::declare`] is.
    pub fn compile(layout: &KeyLayout) -> Extract {
        Extract { steps: layout.windows().iter().map(Step::compile).collect() }
    }

    /// Number of windows.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether there is no window (running does nothing).
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// How many leading bytes of the frame [`Extract::run`] reads with
    /// `info`, at most (the end of the 16 bytes read from the first byte of
    /// the furthest window whose base is present; 0 without windows): every
    /// window's bits depend only on bytes in there
    /// and on whether they are inside the frame (the frame's length), so
    /// frames of one length that agree on these bytes and parse to the same
    /// `info` get the same window bits (the raw-header cache relies on it).
    pub fn extent(&self, info: &ParseInfo) -> usize {
        self.steps
            .iter()
            .filter_map(|s| s.base.offset(info).and_then(|b| b.checked_add(s.skip)))
            .map(|start| start.saturating_add(16))
            .max()
            .unwrap_or(0)
    }

    /// Capture every window of `frame` into `key` (see the module docs).
    #[inline]
    pub fn run(&self, frame: &[u8], info: &ParseInfo, key: &mut FlowKey) {
        for s in &self.steps {
            let v = s.base.offset(info).and_then(|b| b.checked_add(s.skip)).and_then(|start| {
                Some(((read16(frame, start, s.len)? >> s.rshift) as u64) & s.ones)
            });
            let (v, p) = match v {
                Some(v) => (v, s.pmask),
                None => (0, 0),
            };
            if let Some(w) = key.words.get_mut(s.word) {
                *w = (*w & !s.vmask) | (v << s.shift);
            }
            if let Some(w) = key.words.get_mut(s.pword) {
                *w = (*w & !s.pmask) | p;
            }
        }
    }
}

/// The 16 bytes of `frame` from `start` as a big-endian integer, if the
/// `len` bytes a window touches (at most 9) are inside the frame; bytes
/// past the frame's end read as zeros (the window's shift drops them).
/// Away from the frame's end this is one 16-byte load, no copy.
#[inline]
fn read16(frame: &[u8], start: usize, len: usize) -> Option<u128> {
    if let Some(b) = frame.get(start..start.saturating_add(16)) {
        return <[u8; 16]>::try_from(b).ok().map(u128::from_be_bytes);
    }
    let b = frame.get(start..start.checked_add(len)?)?;
    let mut buf = [0u8; 16];
    for (d, x) in buf.iter_mut().zip(b) {
        *d = *x;
    }
    Some(u128::from_be_bytes(buf))
}

/// A base's byte offset read straight from the parse's fields (not
/// through [`Base::offset`]): the models of the extract stage and of the
/// window edits (`window.rs`) both use it.
pub(crate) fn model_base(info: &ParseInfo, b: Base) -> Option<usize> {
    Some(match b {
        Base::Frame => 0,
        Base::L2End => usize::from(info.ethertype_offset?) + 2,
        Base::L2_5 => usize::from(info.l2_5?),
        Base::L3 => usize::from(info.l3?),
        Base::L4 => usize::from(info.l4?),
        Base::Payload => usize::from(info.payload?),
    })
}

/// The window's value read bit by bit (the model the fuzz entry checks
/// [`Extract::run`] against), or `None` when absent.
fn model(frame: &[u8], info: &ParseInfo, w: &Window) -> Option<u64> {
    let base = model_base(info, w.base)?;
    let first = base as u64 * 8 + u64::from(w.bit_offset);
    if first + u64::from(w.bit_len) > frame.len() as u64 * 8 {
        return None;
    }
    let mut v = 0u64;
    for i in first..first + u64::from(w.bit_len) {
        let byte = frame[(i / 8) as usize];
        v = (v << 1) | u64::from(byte >> (7 - i % 8) & 1);
    }
    Some(v)
}

/// Fuzz entry (cargo-fuzz target `extract`): the first byte gives a window
/// count, then 4 bytes per window (base, 16-bit bit offset, length), then
/// the frame. Parses the frame, runs the extract program of the declared
/// windows, and panics if any window's value or presence differs from a
/// bit-by-bit reading of the frame, if any bit outside the windows'
/// changed, or if the result depends on the key's previous window bits.
pub fn fuzz_extract(data: &[u8]) {
    let (n, rest) = match data.split_first() {
        Some((&n, rest)) => (usize::from(n % 16), rest),
        None => (0, data),
    };
    let (decl, frame) = rest.split_at((n * 4).min(rest.len()));
    let mut layout = KeyLayout::new();
    let mut ids = Vec::new();
    for c in decl.chunks_exact(4) {
        let base = Base::ALL[usize::from(c[0] % 6)];
        let mut bit_offset = u32::from(u16::from_be_bytes([c[1], c[2]]));
        if c[0] & 0x80 == 0 {
            // mostly near the headers, so windows straddle the frame's end
            bit_offset %= 1024;
        }
        let w = Window::new(base, bit_offset, c[3] % 64 + 1);
        match layout.declare(w) {
            Ok(id) => ids.push((id, w)),
            // 15 windows of up to 64 bits may not fit 192 bits
            Err(crate::layout::LayoutError::NoValueSpace { .. }) => {}
            Err(e) => panic!("declaring {w:?}: {e}"),
        }
    }
    layout.validate().expect("declared layout is valid");
    let ex = Extract::compile(&layout);
    let mut parsed = FlowKey::ZERO;
    let info = sluice_packet::parse(frame, &Meta::default(), &mut parsed);
    let mut key = parsed;
    ex.run(frame, &info, &mut key);
    let owned = layout.window_bits();
    for i in 0..key.words.len() {
        assert_eq!(
            (key.words[i] ^ parsed.words[i]) & !owned.words[i],
            0,
            "extract wrote word {i} outside its windows"
        );
    }
    for &(id, w) in &ids {
        let want = model(frame, &info, &w);
        assert_eq!(layout.present(&key, id), want.is_some(), "presence of {w:?}");
        assert_eq!(layout.get(&key, id), Some(want.unwrap_or(0)), "value of {w:?}");
    }
    // window bits depend on the frame only
    let mut dirty = parsed;
    for i in 0..dirty.words.len() {
        dirty.words[i] |= owned.words[i];
    }
    ex.run(frame, &info, &mut dirty);
    assert_eq!(dirty, key, "extract depends on previous window bits");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_order_and_alignment() {
        let frame = [0b1010_0000, 0xff, 0x01, 0x80];
        let mut l = KeyLayout::new();
        let a = l.declare(Window::new(Base::Frame, 0, 3)).unwrap(); // 101
        let b = l.declare(Window::new(Base::Frame, 7, 10)).unwrap(); // 0 1111_1111 0
        let c = l.declare(Window::new(Base::Frame, 23, 2)).unwrap(); // 1 1
        let d = l.declare(Window::new(Base::Frame, 25, 8)).unwrap(); // past the end
        let e = l.declare(Window::new(Base::L3, 0, 1)).unwrap(); // no L3
        let ex = Extract::compile(&l);
        let mut k = FlowKey::ZERO;
        ex.run(&frame, &ParseInfo::default(), &mut k);
        assert_eq!(l.get(&k, a), Some(0b101));
        assert_eq!(l.get(&k, b), Some(0b01_1111_1110));
        assert_eq!(l.get(&k, c), Some(0b11));
        assert_eq!(l.get(&k, d), Some(0));
        assert!(l.present(&k, a) && l.present(&k, b) && l.present(&k, c));
        assert!(!l.present(&k, d) && !l.present(&k, e));
    }

    #[test]
    fn full_width_at_odd_offset() {
        let frame: Vec<u8> = (1..=12).collect();
        let mut l = KeyLayout::new();
        let a = l.declare(Window::new(Base::Frame, 4, 64)).unwrap();
        let ex = Extract::compile(&l);
        let mut k = FlowKey::ZERO;
        ex.run(&frame, &ParseInfo::default(), &mut k);
        let mut buf = [0u8; 16];
        buf[..12].copy_from_slice(&frame);
        let all = u128::from_be_bytes(buf);
        assert_eq!(l.get(&k, a), Some((all >> (128 - 68)) as u64));
        assert_eq!(l.get(&k, a), Some(0x1020_3040_5060_7080));
        fuzz_extract(&[1, 0, 0, 4, 63, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Random windows on random frames of every length up to 120
        /// bytes, so windows fall both well inside the frame (the 16-byte
        /// load) and near or past its end (the copy), against the
        /// bit-by-bit model.
        #[test]
        fn agrees_with_the_bit_model(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            fuzz_extract(&data);
        }
    }
}
