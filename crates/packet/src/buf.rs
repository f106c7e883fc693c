//! A packet buffer with headroom and tailroom.
//!
//! # What
//! [`PacketBuf`] owns one fixed allocation made when it is created (buffers
//! come from a pool and are reused with [`PacketBuf::load`]); the packet
//! occupies `mem[start..end]`. Pushing a header opens a gap inside the
//! packet by moving the *shorter* side of the packet into the head- or
//! tailroom; popping closes one the same way. Nothing ever reallocates: an
//! operation that does not fit returns [`BufError::NoRoom`].
//!
//! # Invariants
//! `start <= end <= mem.len()`, and `load` puts the packet `headroom`
//! bytes in, so a freshly loaded packet can grow by `headroom` bytes at the
//! front and by `mem.len() - headroom - len` at the back.

/// Why a buffer operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufError {
    /// Not enough head- or tailroom.
    NoRoom,
    /// An offset or length outside the packet.
    OutOfRange,
}

impl core::fmt::Display for BufError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            BufError::NoRoom => "no room in packet buffer",
            BufError::OutOfRange => "offset outside the packet",
        })
    }
}

impl std::error::Error for BufError {}

/// A packet in a fixed buffer with headroom for pushed headers.
#[derive(Clone, PartialEq, Eq)]
pub struct PacketBuf {
    mem: Box<[u8]>,
    /// Headroom restored by `load`.
    reserve: usize,
    start: usize,
    end: usize,
}

impl core::fmt::Debug for PacketBuf {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PacketBuf")
            .field("headroom", &self.headroom())
            .field("tailroom", &self.tailroom())
            .field("len", &self.len())
            .finish()
    }
}

/// A buffer is its own buffer (so code that takes any `AsMut<PacketBuf>`,
/// such as a port's receive buffer, takes a plain one too).
impl AsRef<PacketBuf> for PacketBuf {
    fn as_ref(&self) -> &PacketBuf {
        self
    }
}

impl AsMut<PacketBuf> for PacketBuf {
    fn as_mut(&mut self) -> &mut PacketBuf {
        self
    }
}

impl PacketBuf {
    /// Default headroom: room for several pushed headers (PBB is 18 bytes,
    /// MPLS and VLAN 4 each).
    pub const DEFAULT_HEADROOM: usize = 128;
    /// Default largest packet (a 9000-byte jumbo frame plus tags).
    pub const DEFAULT_MAX_LEN: usize = 9216;

    /// An empty buffer able to hold `headroom + max_len` bytes.
    pub fn new(headroom: usize, max_len: usize) -> PacketBuf {
        PacketBuf {
            mem: vec![0u8; headroom.saturating_add(max_len)].into_boxed_slice(),
            reserve: headroom,
            start: headroom,
            end: headroom,
        }
    }

    /// A buffer with default sizes holding `data`.
    pub fn from_slice(data: &[u8]) -> Result<PacketBuf, BufError> {
        let mut b = PacketBuf::new(Self::DEFAULT_HEADROOM, Self::DEFAULT_MAX_LEN.max(data.len()));
        b.load(data)?;
        Ok(b)
    }

    /// Replace the contents with `data`, restoring the full headroom.
    #[inline]
    pub fn load(&mut self, data: &[u8]) -> Result<(), BufError> {
        let start = self.reserve;
        let end = start.checked_add(data.len()).ok_or(BufError::NoRoom)?;
        let dst = self.mem.get_mut(start..end).ok_or(BufError::NoRoom)?;
        dst.copy_from_slice(data);
        self.start = start;
        self.end = end;
        Ok(())
    }

    #[inline]
    pub fn data(&self) -> &[u8] {
        &self.mem[self.start..self.end]
    }
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.mem[self.start..self.end]
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.end - self.start
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
    /// Bytes free in front of the packet.
    pub fn headroom(&self) -> usize {
        self.start
    }
    /// Bytes free after the packet.
    pub fn tailroom(&self) -> usize {
        self.mem.len() - self.end
    }

    /// Open `n` bytes at offset `at` (0 ≤ at ≤ len) and return them,
    /// zeroed. Moves whichever side of `at` is shorter, if the room on that
    /// side allows; otherwise the other side.
    pub fn insert(&mut self, at: usize, n: usize) -> Result<&mut [u8], BufError> {
        let len = self.len();
        if at > len {
            return Err(BufError::OutOfRange);
        }
        let front_ok = self.headroom() >= n;
        let back_ok = self.tailroom() >= n;
        let use_front = match (front_ok, back_ok) {
            (true, true) => at <= len - at,
            (true, false) => true,
            (false, true) => false,
            (false, false) => return Err(BufError::NoRoom),
        };
        if use_front {
            self.mem.copy_within(self.start..self.start + at, self.start - n);
            self.start -= n;
        } else {
            self.mem.copy_within(self.start + at..self.end, self.start + at + n);
            self.end += n;
        }
        let gap = &mut self.mem[self.start + at..self.start + at + n];
        gap.fill(0);
        Ok(gap)
    }

    /// Remove `n` bytes at offset `at`, moving the shorter side.
    pub fn remove(&mut self, at: usize, n: usize) -> Result<(), BufError> {
        let len = self.len();
        match at.checked_add(n) {
            Some(e) if e <= len => {}
            _ => return Err(BufError::OutOfRange),
        }
        if at <= len - at - n {
            self.mem.copy_within(self.start..self.start + at, self.start + n);
            self.start += n;
        } else {
            self.mem.copy_within(self.start + at + n..self.end, self.start + at);
            self.end -= n;
        }
        Ok(())
    }

    /// Append zeros until the packet is at least `min` bytes long.
    pub fn pad_to(&mut self, min: usize) -> Result<(), BufError> {
        let len = self.len();
        if len >= min {
            return Ok(());
        }
        let add = min - len;
        if self.tailroom() < add {
            return Err(BufError::NoRoom);
        }
        self.mem[self.end..self.end + add].fill(0);
        self.end += add;
        Ok(())
    }

    /// Shorten the packet to `len` bytes (no-op if already shorter).
    pub fn truncate(&mut self, len: usize) {
        if len < self.len() {
            self.end = self.start + len;
        }
    }

    /// Largest packet the buffer holds with its full headroom.
    pub fn capacity(&self) -> usize {
        self.mem.len() - self.reserve
    }

    /// Empties the buffer (the packet will start after the full headroom)
    /// and returns the writable area a receiver may fill in place; finish
    /// with [`PacketBuf::commit`]. This is how a port hands a frame over
    /// without a copy.
    pub fn spare_mut(&mut self) -> &mut [u8] {
        self.start = self.reserve;
        self.end = self.reserve;
        &mut self.mem[self.reserve..]
    }

    /// Declares the first `len` bytes of [`PacketBuf::spare_mut`] to be the
    /// packet (clamped to the capacity).
    pub fn commit(&mut self, len: usize) {
        self.start = self.reserve;
        self.end = self.reserve + len.min(self.capacity());
    }

    /// Grows the packet by `n` bytes at the front, into the headroom only,
    /// and returns the whole packet; `None` (and no change) when the
    /// headroom is too small.
    pub fn push_front(&mut self, n: usize) -> Option<&mut [u8]> {
        self.start = self.start.checked_sub(n)?;
        Some(self.data_mut())
    }

    /// Removes `n` bytes from the front; false (and no change) if the packet
    /// is shorter than `n`.
    pub fn pull_front(&mut self, n: usize) -> bool {
        if n > self.len() {
            return false;
        }
        self.start += n;
        true
    }

    /// Sets the packet's length (shrinking, or growing into the bytes after
    /// it); false (and no change) if the buffer cannot hold it.
    pub fn set_len(&mut self, len: usize) -> bool {
        match self.start.checked_add(len) {
            Some(end) if end <= self.mem.len() => {
                self.end = end;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filled_in_place_then_grown_and_shrunk_at_the_front() {
        let mut b = PacketBuf::new(4, 8);
        assert_eq!(b.capacity(), 8);
        b.spare_mut()[..3].copy_from_slice(&[1, 2, 3]);
        b.commit(3);
        assert_eq!((b.data(), b.headroom()), (&[1u8, 2, 3][..], 4));
        b.push_front(2).unwrap().copy_from_slice(&[8, 9, 1, 2, 3]);
        assert_eq!(b.data(), &[8, 9, 1, 2, 3]);
        assert!(b.push_front(3).is_none(), "only the headroom is used");
        assert!(b.pull_front(2));
        assert!(!b.pull_front(4));
        assert!(b.set_len(2) && b.data() == [1, 2]);
        assert!(!b.set_len(9));
        b.commit(100);
        assert_eq!(b.len(), 8, "commit clamps to the capacity");
    }

    #[test]
    fn insert_front_and_back() {
        let mut b = PacketBuf::new(8, 16);
        b.load(&[1, 2, 3, 4, 5, 6]).unwrap();
        b.insert(1, 2).unwrap().copy_from_slice(&[9, 9]);
        assert_eq!(b.data(), &[1, 9, 9, 2, 3, 4, 5, 6]);
        assert_eq!(b.headroom(), 6); // moved the 1-byte prefix
        b.insert(7, 1).unwrap()[0] = 7;
        assert_eq!(b.data(), &[1, 9, 9, 2, 3, 4, 5, 7, 6]);
        assert_eq!(b.headroom(), 6); // moved the 1-byte suffix
        b.remove(1, 2).unwrap();
        assert_eq!(b.data(), &[1, 2, 3, 4, 5, 7, 6]);
        b.remove(5, 1).unwrap();
        assert_eq!(b.data(), &[1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn no_room_and_range() {
        let mut b = PacketBuf::new(2, 6);
        b.load(&[1, 2, 3, 4]).unwrap();
        assert_eq!(b.insert(0, 4).err(), Some(BufError::NoRoom));
        assert_eq!(b.insert(5, 1).err(), Some(BufError::OutOfRange));
        assert_eq!(b.remove(3, 2), Err(BufError::OutOfRange));
        assert_eq!(b.remove(usize::MAX, 2), Err(BufError::OutOfRange));
        // headroom full, tailroom used instead
        b.insert(0, 2).unwrap();
        b.insert(0, 2).unwrap();
        assert_eq!(b.data(), &[0, 0, 0, 0, 1, 2, 3, 4]);
        assert_eq!(b.load(&[0; 7]), Err(BufError::NoRoom));
    }

    #[test]
    fn pad_and_truncate() {
        let mut b = PacketBuf::new(0, 64);
        b.load(&[1, 2]).unwrap();
        b.pad_to(60).unwrap();
        assert_eq!(b.len(), 60);
        assert!(b.data()[2..].iter().all(|&x| x == 0));
        assert_eq!(b.pad_to(65), Err(BufError::NoRoom));
        b.truncate(3);
        assert_eq!(b.data(), &[1, 2, 0]);
    }
}
