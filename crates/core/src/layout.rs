//! The key layout at run time: the fixed parser's fields plus the windows
//! a pipeline declares when it is built.
//!
//! # What
//! [`FIXED_LAYOUT`] (sluice-packet) places the 40 fields the fixed parser
//! fills. Front ends need more: a protocol-oblivious (POF) match field is
//! `{offset, length}` in bits from a header base, and a P4 header field is
//! the same thing once the P4 parser graph is lowered. A [`KeyLayout`] is
//! the fixed layout plus such **windows** ([`Window`]: a [`Base`], a bit
//! offset from it and a bit length of 1..=64), declared one by one with
//! [`KeyLayout::declare`] while a pipeline is built. Each declared window
//! gets a value slot and a presence bit ([`WindowSlot`]); the extract
//! stage ([`crate::extract`]) fills them per packet, and rules look at
//! them through [`KeyLayout::add_match`], exactly as they look at fixed
//! fields through [`sluice_packet::Layout::add_match`].
//!
//! A field wider than 64 bits (a POF field of up to the frame's length, a
//! 128-bit address) is declared as several windows: `{base, off, 64}`,
//! `{base, off + 64, 64}`, …; a rule on it sets a match on each part.
//! Each part carries its own presence bit, and a rule requires all of the
//! parts it looks at, so "the whole field is inside the frame" is what a
//! rule on every part requires.
//!
//! # Basic design
//! - **Values** go into the words the fixed layout reserves for windows
//!   ([`sluice_packet::key::POF_FIRST_WORD`]..[`KEY_WORDS`], 192 bits).
//!   A window never straddles a word: [`KeyLayout::declare`] takes the
//!   first run of `bit_len` free bits, lowest word first, lowest bit first.
//!   Its value is stored right-aligned in that run (like a fixed field's:
//!   the window's last bit is the slot's least significant bit).
//! - **Presence bits** come from a *second presence area*: every bit below
//!   the reserved words that the fixed layout leaves free (no slot, not one
//!   of the 16 presence bits of word 7). For [`FIXED_LAYOUT`] that is
//!   word 12 bits 41..44 (between `ipv6_flabel` and `ipv6_exthdr`) and
//!   bits 0..16 of words 14, 15, 18 and 19 (below `arp_sha`, `arp_tha`,
//!   `ipv6_nd_sll`, `ipv6_nd_tll`): 67 bits. The area is computed from the
//!   fixed layout's slots, not written down, so it can never overlap them;
//!   windows take its bits in order (word, then bit).
//! - A window declared twice is the same field: [`KeyLayout::declare`]
//!   returns the existing [`WindowId`] and allocates nothing.
//! - Windows are never removed: a layout belongs to one pipeline build,
//!   and a new build makes a new layout.
//!
//! # Costs
//! Declaring is a scan of three words (at most 192 probes); rule building
//! is a few shifts. Nothing here runs per packet. First-fit without
//! removal can strand space: three 40-bit windows take one word each, and
//! a fourth 64-bit window then fails with [`LayoutError::NoValueSpace`]
//! although 72 bits are free. Declaring wide windows first avoids that.
//! The presence area bounds the number of windows (67 with
//! [`FIXED_LAYOUT`]), not the value space (192 one-bit windows would fit).
//!
//! # Invariants
//! - No window value bit or window presence bit shares a bit with a fixed
//!   slot, the fixed presence bits, or another window's bits; window values
//!   lie in the reserved words, window presence bits below them
//!   ([`KeyLayout::validate`] checks all of it; tests run it after every
//!   declaration).
//! - A key whose window bits are all zero is what the fixed parser leaves
//!   (it writes no bit outside its slots and presence bits), so running
//!   the extract program after the parser is the only writer of window
//!   bits.
//! - Rule building mirrors the fixed layout: a non-zero mask on a window
//!   sets its presence bit in both mask and value, so a rule that looks at
//!   any bit of a window never matches a packet where the window ran past
//!   the frame or its base header was absent.
//! - [`KeyLayout::declare`] either succeeds or leaves the layout unchanged.

use sluice_packet::key::{presence, LayoutError as FixedLayoutError, Slot, FIXED_LAYOUT};
use sluice_packet::parse::ParseInfo;
use sluice_packet::{Field, FlowKey, FlowMask, Layout, KEY_WORDS};

/// Widest window, in bits.
pub const MAX_WINDOW_BITS: u8 = 64;

/// Where a window's bit offset counts from: an offset the fixed parser
/// records in [`ParseInfo`]. A base the packet does not have makes every
/// window on it absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Base {
    /// The first byte of the frame (always present).
    Frame,
    /// The first byte after the Ethernet header and its VLAN tags (the
    /// L2.5 or L3 header, whatever its ethertype, known to the parser or
    /// not): `ethertype_offset + 2`. Present when the ethertype was
    /// readable.
    L2End,
    /// The MPLS top label stack entry or the PBB I-TCI (`ParseInfo::l2_5`).
    L2_5,
    /// The ARP, IPv4 or IPv6 header (`ParseInfo::l3`).
    L3,
    /// The transport header (`ParseInfo::l4`; absent in later fragments
    /// and when the transport header is incomplete).
    L4,
    /// The transport payload (`ParseInfo::payload`).
    Payload,
}

impl Base {
    /// Every base, in declaration order.
    pub const ALL: [Base; 6] =
        [Base::Frame, Base::L2End, Base::L2_5, Base::L3, Base::L4, Base::Payload];

    /// The base's byte offset in the frame `info` describes, if present.
    #[inline]
    pub fn offset(self, info: &ParseInfo) -> Option<usize> {
        let o = match self {
            Base::Frame => return Some(0),
            Base::L2End => return info.ethertype_offset.map(|o| usize::from(o) + 2),
            Base::L2_5 => info.l2_5,
            Base::L3 => info.l3,
            Base::L4 => info.l4,
            Base::Payload => info.payload,
        };
        o.map(usize::from)
    }
}

/// A window of a frame: `bit_len` bits starting `bit_offset` bits after
/// the first bit of `base`. Bit 0 is the most significant bit of the byte
/// at the base (network order, POF's convention).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Window {
    pub base: Base,
    pub bit_offset: u32,
    /// 1..=[`MAX_WINDOW_BITS`].
    pub bit_len: u8,
}

impl Window {
    /// `bit_len` bits at `bit_offset` from `base`.
    pub const fn new(base: Base, bit_offset: u32, bit_len: u8) -> Window {
        Window { base, bit_offset, bit_len }
    }
}

/// A declared window's handle in its [`KeyLayout`] (declaration order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WindowId(pub u16);

impl WindowId {
    /// Index into [`KeyLayout::windows`].
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// One key bit: word index and bit number (0 = least significant).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyBit {
    pub word: u8,
    pub bit: u8,
}

impl KeyBit {
    /// The bit as a mask of its word.
    pub const fn mask(self) -> u64 {
        1u64 << self.bit
    }
}

/// Where a declared window lives in the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WindowSlot {
    /// What was declared.
    pub window: Window,
    /// Word holding the value (a reserved word).
    pub word: u8,
    /// Offset of the value's least significant bit inside the word.
    pub shift: u8,
    /// Width in bits (`window.bit_len`).
    pub width: u8,
    /// The window's presence bit (in the second presence area).
    pub presence: KeyBit,
}

impl WindowSlot {
    /// All-ones of the window's width, right-aligned.
    pub const fn width_mask(&self) -> u64 {
        if self.width >= 64 {
            u64::MAX
        } else {
            (1u64 << self.width) - 1
        }
    }
    /// The value's bits within [`WindowSlot::word`].
    pub const fn value_mask(&self) -> u64 {
        self.width_mask() << self.shift
    }
    /// The value slot as a sluice-packet [`Slot`] (its `presence` is
    /// [`presence::NONE`]: a window's presence bit is not in word 7; see
    /// [`WindowSlot::presence`]).
    pub const fn slot(&self) -> Slot {
        Slot { word: self.word, shift: self.shift, width: self.width, presence: presence::NONE }
    }
}

/// Why a window could not be declared, or a layout is unusable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// `bit_len` is 0 or above [`MAX_WINDOW_BITS`].
    BadWidth(u8),
    /// Every bit of the second presence area is taken.
    NoPresenceBit,
    /// No `width` consecutive free bits inside one reserved word.
    NoValueSpace { width: u8 },
    /// The fixed layout itself is invalid.
    Fixed(FixedLayoutError),
    /// A window's bits are outside its area (checked by
    /// [`KeyLayout::validate`]).
    OutOfRange(WindowId),
    /// A window's bits meet a fixed slot, the fixed presence bits or another
    /// window (checked by [`KeyLayout::validate`]).
    Overlap(WindowId),
}

impl core::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            LayoutError::BadWidth(w) => write!(f, "window width {w} is not in 1..=64"),
            LayoutError::NoPresenceBit => f.write_str("no presence bit left for another window"),
            LayoutError::NoValueSpace { width } => {
                write!(f, "no {width} free bits left in one reserved key word")
            }
            LayoutError::Fixed(e) => write!(f, "invalid fixed layout: {e:?}"),
            LayoutError::OutOfRange(id) => write!(f, "window {} is outside its area", id.0),
            LayoutError::Overlap(id) => write!(f, "window {} overlaps other key bits", id.0),
        }
    }
}

impl std::error::Error for LayoutError {}

/// Why a rule value or mask could not be stored for a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchError {
    /// The layout has no such window.
    UnknownWindow(WindowId),
    /// The value has bits set above the window's width.
    BadValue,
    /// The value has bits set where the mask is 0.
    ValueOutsideMask,
}

impl core::fmt::Display for MatchError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            MatchError::UnknownWindow(id) => write!(f, "no window {} in this layout", id.0),
            MatchError::BadValue => f.write_str("window value has bits above its width"),
            MatchError::ValueOutsideMask => f.write_str("window value has bits outside its mask"),
        }
    }
}

impl std::error::Error for MatchError {}

/// The fixed parser's layout plus declared windows (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyLayout {
    fixed: Layout,
    /// Declared windows, indexed by [`WindowId`].
    windows: Vec<WindowSlot>,
    /// Bits the fixed layout leaves free below the reserved words, in
    /// allocation order; window `i` has presence bit `presence_area[i]`.
    presence_area: Vec<KeyBit>,
    /// Value bits taken in each word (only reserved words get any).
    value_used: [u64; KEY_WORDS],
}

impl Default for KeyLayout {
    fn default() -> Self {
        KeyLayout::new()
    }
}

/// Bits of `fixed`: every slot and the fixed presence bits.
fn fixed_bits(fixed: &Layout) -> [u64; KEY_WORDS] {
    let mut used = [0u64; KEY_WORDS];
    if let Some(w) = used.get_mut(fixed.presence_word()) {
        *w |= (1u64 << presence::COUNT) - 1;
    }
    for &f in Field::ALL {
        let s = fixed.slot(f);
        let w = usize::from(s.word);
        if s.width == 128 {
            for i in w..w + 2 {
                if let Some(u) = used.get_mut(i) {
                    *u = u64::MAX;
                }
            }
        } else if let Some(u) = used.get_mut(w) {
            *u |= s.word_mask();
        }
    }
    used
}

impl KeyLayout {
    /// [`FIXED_LAYOUT`] with no windows.
    pub fn new() -> KeyLayout {
        match KeyLayout::over(FIXED_LAYOUT) {
            Ok(l) => l,
            // FIXED_LAYOUT is valid (unit tests here and in sluice-packet).
            Err(_) => unreachable!("FIXED_LAYOUT is valid"),
        }
    }

    /// `fixed` with no windows; fails if `fixed` is invalid.
    pub fn over(fixed: Layout) -> Result<KeyLayout, LayoutError> {
        fixed.validate().map_err(LayoutError::Fixed)?;
        let used = fixed_bits(&fixed);
        let mut presence_area = Vec::new();
        let below = fixed.reserved_words().start;
        for (w, &u) in used.iter().enumerate().take(below) {
            for bit in 0..64u8 {
                if u >> bit & 1 == 0 {
                    presence_area.push(KeyBit { word: w as u8, bit });
                }
            }
        }
        Ok(KeyLayout { fixed, windows: Vec::new(), presence_area, value_used: [0; KEY_WORDS] })
    }

    /// The fixed parser's layout.
    pub fn fixed(&self) -> &Layout {
        &self.fixed
    }

    /// Declared windows, indexed by [`WindowId::index`].
    pub fn windows(&self) -> &[WindowSlot] {
        &self.windows
    }

    /// The slot of window `id`.
    pub fn slot(&self, id: WindowId) -> Option<&WindowSlot> {
        self.windows.get(id.index())
    }

    /// How many windows can be declared in all (the presence area's size).
    pub fn presence_capacity(&self) -> usize {
        self.presence_area.len()
    }

    /// The second presence area, in allocation order.
    pub fn presence_area(&self) -> &[KeyBit] {
        &self.presence_area
    }

    /// Declare a window (or find it, if already declared) and allocate its
    /// value bits and presence bit. On error nothing changes.
    pub fn declare(&mut self, window: Window) -> Result<WindowId, LayoutError> {
        if let Some(i) = self.windows.iter().position(|s| s.window == window) {
            return Ok(WindowId(i as u16));
        }
        let width = window.bit_len;
        if width == 0 || width > MAX_WINDOW_BITS {
            return Err(LayoutError::BadWidth(width));
        }
        let Some(&presence) = self.presence_area.get(self.windows.len()) else {
            return Err(LayoutError::NoPresenceBit);
        };
        let tmpl = WindowSlot { window, word: 0, shift: 0, width, presence };
        let ones = tmpl.width_mask();
        let mut found = None;
        'words: for w in self.fixed.reserved_words() {
            for shift in 0..=(64 - width) {
                let m = ones << shift;
                if self.value_used[w] & m == 0 {
                    found = Some((w, shift));
                    break 'words;
                }
            }
        }
        let Some((w, shift)) = found else {
            return Err(LayoutError::NoValueSpace { width });
        };
        let slot = WindowSlot { word: w as u8, shift, ..tmpl };
        self.value_used[w] |= slot.value_mask();
        let id = WindowId(self.windows.len() as u16);
        self.windows.push(slot);
        Ok(id)
    }

    /// Check every window against the fixed layout and each other: values
    /// in the reserved words, presence bits below them, no bit shared.
    pub fn validate(&self) -> Result<(), LayoutError> {
        self.fixed.validate().map_err(LayoutError::Fixed)?;
        let mut used = fixed_bits(&self.fixed);
        let reserved = self.fixed.reserved_words();
        for (i, s) in self.windows.iter().enumerate() {
            let id = WindowId(i as u16);
            let (w, pw) = (usize::from(s.word), usize::from(s.presence.word));
            if s.width == 0
                || s.width > MAX_WINDOW_BITS
                || s.width != s.window.bit_len
                || u32::from(s.shift) + u32::from(s.width) > 64
                || !reserved.contains(&w)
                || pw >= reserved.start
                || s.presence.bit >= 64
            {
                return Err(LayoutError::OutOfRange(id));
            }
            for (w, m) in [(w, s.value_mask()), (pw, s.presence.mask())] {
                if used[w] & m != 0 {
                    return Err(LayoutError::Overlap(id));
                }
                used[w] |= m;
            }
        }
        Ok(())
    }

    /// Every key bit the windows own (values and presence bits): what the
    /// extract program may write, and nothing else.
    pub fn window_bits(&self) -> FlowMask {
        let mut m = FlowMask::ZERO;
        for s in &self.windows {
            m.words[usize::from(s.word)] |= s.value_mask();
            m.words[usize::from(s.presence.word)] |= s.presence.mask();
        }
        m
    }

    fn known(&self, id: WindowId) -> Result<&WindowSlot, MatchError> {
        self.slot(id).ok_or(MatchError::UnknownWindow(id))
    }

    fn write(words: &mut [u64; KEY_WORDS], s: &WindowSlot, v: u64) {
        let m = s.value_mask();
        let w = &mut words[usize::from(s.word)];
        *w = (*w & !m) | ((v << s.shift) & m);
    }

    /// Store `value` (right-aligned, at most the window's width) into
    /// `key` and set the window's presence bit: what extract writes for a
    /// packet whose window holds `value`.
    pub fn put(&self, key: &mut FlowKey, id: WindowId, value: u64) -> Result<(), MatchError> {
        let s = self.known(id)?;
        if value & !s.width_mask() != 0 {
            return Err(MatchError::BadValue);
        }
        Self::write(&mut key.words, s, value);
        key.words[usize::from(s.presence.word)] |= s.presence.mask();
        Ok(())
    }

    /// The window's value in `key` (zero if absent), or `None` for an
    /// unknown window.
    pub fn get(&self, key: &FlowKey, id: WindowId) -> Option<u64> {
        let s = self.slot(id)?;
        Some((key.words[usize::from(s.word)] & s.value_mask()) >> s.shift)
    }

    /// Whether the window was inside the frame `key` came from (false for
    /// an unknown window).
    pub fn present(&self, key: &FlowKey, id: WindowId) -> bool {
        self.slot(id)
            .is_some_and(|s| key.words[usize::from(s.presence.word)] & s.presence.mask() != 0)
    }

    /// Set the window's mask bits (bits above its width are dropped). A
    /// non-zero mask also sets its presence bit in the mask.
    pub fn set_mask(&self, mask: &mut FlowMask, id: WindowId, m: u64) -> Result<(), MatchError> {
        let s = self.known(id)?;
        let m = m & s.width_mask();
        Self::write(&mut mask.words, s, m);
        if m != 0 {
            mask.words[usize::from(s.presence.word)] |= s.presence.mask();
        }
        Ok(())
    }

    /// Add a match on one window to a rule (`mask = None` means exact):
    /// sets the mask and the value, and with a non-zero mask the window's
    /// presence bit in both.
    pub fn add_match(
        &self,
        value: &mut FlowKey,
        mask: &mut FlowMask,
        id: WindowId,
        v: u64,
        m: Option<u64>,
    ) -> Result<(), MatchError> {
        let s = self.known(id)?;
        if v & !s.width_mask() != 0 {
            return Err(MatchError::BadValue);
        }
        let m = m.map_or(s.width_mask(), |m| m & s.width_mask());
        if v & !m != 0 {
            return Err(MatchError::ValueOutsideMask);
        }
        Self::write(&mut mask.words, s, m);
        Self::write(&mut value.words, s, v);
        if m != 0 {
            mask.words[usize::from(s.presence.word)] |= s.presence.mask();
            value.words[usize::from(s.presence.word)] |= s.presence.mask();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presence_area_of_fixed_layout() {
        let l = KeyLayout::new();
        l.validate().unwrap();
        let mut expect: Vec<KeyBit> = (41..44).map(|bit| KeyBit { word: 12, bit }).collect();
        for word in [14u8, 15, 18, 19] {
            expect.extend((0..16).map(|bit| KeyBit { word, bit }));
        }
        assert_eq!(l.presence_area(), &expect[..]);
        assert_eq!(l.presence_capacity(), 67);
    }

    #[test]
    fn first_fit_packs_and_dedups() {
        let mut l = KeyLayout::new();
        let a = l.declare(Window::new(Base::Frame, 0, 40)).unwrap();
        let b = l.declare(Window::new(Base::L3, 96, 24)).unwrap();
        let c = l.declare(Window::new(Base::L4, 0, 16)).unwrap();
        assert_eq!(l.declare(Window::new(Base::Frame, 0, 40)), Ok(a));
        let (sa, sb, sc) = (l.slot(a).unwrap(), l.slot(b).unwrap(), l.slot(c).unwrap());
        assert_eq!((sa.word, sa.shift), (21, 0));
        assert_eq!((sb.word, sb.shift), (21, 40));
        assert_eq!((sc.word, sc.shift), (22, 0));
        assert_eq!(sa.presence, KeyBit { word: 12, bit: 41 });
        assert_eq!(l.windows().len(), 3);
        l.validate().unwrap();
    }

    #[test]
    fn validate_catches_tampering() {
        let mut l = KeyLayout::new();
        l.declare(Window::new(Base::Frame, 0, 8)).unwrap();
        l.declare(Window::new(Base::Frame, 8, 8)).unwrap();
        let mut bad = l.clone();
        bad.windows[1].shift = 4;
        assert_eq!(bad.validate(), Err(LayoutError::Overlap(WindowId(1))));
        let mut bad = l.clone();
        bad.windows[1].presence = KeyBit { word: 7, bit: 3 };
        assert_eq!(bad.validate(), Err(LayoutError::Overlap(WindowId(1))));
        let mut bad = l.clone();
        bad.windows[0].word = 20;
        assert_eq!(bad.validate(), Err(LayoutError::OutOfRange(WindowId(0))));
        let mut bad = l;
        bad.windows[0].presence = KeyBit { word: 22, bit: 63 };
        assert_eq!(bad.validate(), Err(LayoutError::OutOfRange(WindowId(0))));
    }
}
