//! Bounded big-endian reading and writing.
//!
//! [`Reader`] is a cursor over a borrowed byte slice that never reads past
//! its end: every accessor checks the remaining length first and returns the
//! reader's *short-read error* instead of panicking. Which error a short read
//! means depends on where we are (a truncated OXM is `OFPBMC_BAD_LEN`, a
//! truncated action is `OFPBAC_BAD_LEN`, …), so the error is carried by the
//! reader and set by whoever creates it.
//!
//! Writing goes to a `Vec<u8>` through [`Put`]; lengths that are only known
//! after a body is written are patched with [`patch_u16`].
//!
//! Byte order: everything on the OpenFlow wire is network (big-endian) order,
//! and this module is the only place that converts.

use crate::error::{ErrorCode, Result};

/// A bounds-checked cursor over network-order bytes.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    short: ErrorCode,
}

impl<'a> Reader<'a> {
    /// A reader that answers `short` whenever a read would overrun `buf`.
    pub fn new(buf: &'a [u8], short: ErrorCode) -> Self {
        Reader { buf, pos: 0, short }
    }

    /// The same position, but a different short-read error.
    pub fn with_error(&self, short: ErrorCode) -> Self {
        Reader { buf: self.buf, pos: self.pos, short }
    }

    pub fn error(&self) -> ErrorCode {
        self.short
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The unread bytes, without consuming them.
    pub fn peek_rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// Consume and return all unread bytes.
    pub fn rest(&mut self) -> &'a [u8] {
        let r = &self.buf[self.pos..];
        self.pos = self.buf.len();
        r
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.short);
        }
        let r = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(r)
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let b = self.bytes(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(b);
        Ok(a)
    }

    pub fn skip(&mut self, n: usize) -> Result<()> {
        self.bytes(n).map(|_| ())
    }

    /// Consume `n` bytes and return a reader over exactly those bytes, with
    /// the same short-read error.
    pub fn sub(&mut self, n: usize) -> Result<Reader<'a>> {
        let b = self.bytes(n)?;
        Ok(Reader::new(b, self.short))
    }

    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    /// Peek a big-endian u16 at `offset` bytes past the cursor.
    pub fn peek_u16(&self, offset: usize) -> Result<u16> {
        let s = self.pos.checked_add(offset).ok_or(self.short)?;
        match self.buf.get(s..s + 2) {
            Some(b) => Ok(u16::from_be_bytes([b[0], b[1]])),
            None => Err(self.short),
        }
    }

    /// Peek a big-endian u32 at `offset` bytes past the cursor.
    pub fn peek_u32(&self, offset: usize) -> Result<u32> {
        let s = self.pos.checked_add(offset).ok_or(self.short)?;
        match self.buf.get(s..s + 4) {
            Some(b) => Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
            None => Err(self.short),
        }
    }
}

/// Network-order writes into a growable buffer.
pub trait Put {
    fn put_u8(&mut self, v: u8);
    fn put_u16(&mut self, v: u16);
    fn put_u32(&mut self, v: u32);
    fn put_u64(&mut self, v: u64);
    fn put_slice(&mut self, v: &[u8]);
    fn put_zeros(&mut self, n: usize);
    /// Zero-pad so that the length measured from `start` is a multiple of 8.
    fn pad8_from(&mut self, start: usize);
}

impl Put for Vec<u8> {
    fn put_u8(&mut self, v: u8) {
        self.push(v);
    }
    fn put_u16(&mut self, v: u16) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_be_bytes());
    }
    fn put_slice(&mut self, v: &[u8]) {
        self.extend_from_slice(v);
    }
    fn put_zeros(&mut self, n: usize) {
        self.resize(self.len() + n, 0);
    }
    fn pad8_from(&mut self, start: usize) {
        let n = self.len() - start;
        self.put_zeros(pad8(n) - n);
    }
}

/// Overwrite a big-endian u16 at `at` (used for length fields written after
/// their body).
pub fn patch_u16(buf: &mut [u8], at: usize, v: u16) {
    buf[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// `n` rounded up to a multiple of 8.
pub const fn pad8(n: usize) -> usize {
    (n + 7) & !7
}

/// Decode a fixed, NUL-terminated `char name[N]` field canonically: bytes up
/// to the first NUL, invalid UTF-8 replaced by U+FFFD, then cut (on a char
/// boundary) to at most `N - 1` bytes, the most [`put_str`] can write.
///
/// This makes decoding a fixpoint: `read_str(put_str(read_str(b)))`
/// equals `read_str(b)` for all bytes `b`, which the plain lossy decoder
/// does not give (a replacement character is 3 bytes, so re-encoding a
/// lossy name can overflow the field and be cut differently).
pub fn read_str(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    let mut s = String::from_utf8_lossy(&b[..end]).into_owned();
    truncate_on_char(&mut s, b.len().saturating_sub(1));
    s
}

/// Write `s` into a fixed `n`-byte NUL-padded field: at most `n - 1` bytes,
/// cut on a char boundary and at any embedded NUL, so the field always
/// decodes back (with [`read_str`]) to exactly what was written.
pub fn put_str(out: &mut Vec<u8>, s: &str, n: usize) {
    let mut t = s.split('\0').next().unwrap_or("");
    let mut cut = t.len().min(n.saturating_sub(1));
    while !t.is_char_boundary(cut) {
        cut -= 1;
    }
    t = &t[..cut];
    out.put_slice(t.as_bytes());
    out.put_zeros(n - t.len());
}

fn truncate_on_char(s: &mut String, max: usize) {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_reads_give_the_readers_error() {
        let mut r = Reader::new(&[1, 2, 3], ErrorCode::BAC_BAD_LEN);
        assert_eq!(r.u16(), Ok(0x0102));
        assert_eq!(r.u16(), Err(ErrorCode::BAC_BAD_LEN));
        assert_eq!(r.u8(), Ok(3));
        assert_eq!(r.u8(), Err(ErrorCode::BAC_BAD_LEN));
        assert_eq!(r.peek_u16(usize::MAX), Err(ErrorCode::BAC_BAD_LEN));
    }

    #[test]
    fn strings_round_trip_and_truncate() {
        let mut v = Vec::new();
        put_str(&mut v, "abcdef", 4);
        assert_eq!(v, b"abc\0");
        assert_eq!(read_str(&v), "abc");
        // A full field with no NUL decodes to N - 1 bytes, so that
        // re-encoding is a fixpoint.
        assert_eq!(read_str(b"ab"), "a");
        // Invalid UTF-8 is replaced, then cut to fit.
        let lossy = read_str(&[0xff, 0xfe, 0]);
        let mut again = Vec::new();
        put_str(&mut again, &lossy, 3);
        assert_eq!(read_str(&again), lossy);
    }

    #[test]
    fn pad_rounds_up() {
        assert_eq!(pad8(0), 0);
        assert_eq!(pad8(1), 8);
        assert_eq!(pad8(8), 8);
        let mut v = vec![0u8; 3];
        v.pad8_from(1);
        assert_eq!(v.len(), 9);
    }
}
