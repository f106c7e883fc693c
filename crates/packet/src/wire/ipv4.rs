//! IPv4 header (RFC 791), 20 bytes plus options.
//!
//! `check_len` requires version 4, an IHL of at least 5 and the whole
//! header (options included) in the buffer. It deliberately does *not*
//! require `total_len` bytes: the parser bounds the payload by
//! `min(total_len, buffer)` itself so that Ethernet padding after the
//! datagram is never taken for payload. After `check_len` succeeds no
//! accessor can panic.

use super::{arr, get16, put16, view_common, Result, WireError};
use crate::checksum;

mod field {
    use crate::wire::Field;
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const LENGTH: Field = 2..4;
    pub const IDENT: Field = 4..6;
    pub const FLG_OFF: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC: Field = 12..16;
    pub const DST: Field = 16..20;
}

/// Length of the header without options.
pub const MIN_HEADER_LEN: usize = field::DST.end;
/// Offset of the TTL byte.
pub const TTL_OFFSET: usize = field::TTL;
/// Offset of the checksum.
pub const CHECKSUM_OFFSET: usize = field::CHECKSUM.start;
/// Offset of the source address.
pub const SRC_OFFSET: usize = field::SRC.start;
/// Offset of the destination address.
pub const DST_OFFSET: usize = field::DST.start;

/// A view of an IPv4 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    view_common!();

    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < MIN_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if b[field::VER_IHL] >> 4 != 4 || self.header_len() < MIN_HEADER_LEN {
            return Err(WireError::Malformed);
        }
        if b.len() < self.header_len() {
            return Err(WireError::Truncated);
        }
        Ok(())
    }
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }
    /// Header length in bytes (IHL × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }
    /// The TOS byte (DSCP << 2 | ECN).
    pub fn tos(&self) -> u8 {
        self.buffer.as_ref()[field::TOS]
    }
    pub fn dscp(&self) -> u8 {
        self.tos() >> 2
    }
    pub fn ecn(&self) -> u8 {
        self.tos() & 3
    }
    pub fn total_len(&self) -> u16 {
        get16(self.buffer.as_ref(), field::LENGTH)
    }
    pub fn ident(&self) -> u16 {
        get16(self.buffer.as_ref(), field::IDENT)
    }
    pub fn dont_frag(&self) -> bool {
        get16(self.buffer.as_ref(), field::FLG_OFF) & 0x4000 != 0
    }
    pub fn more_frags(&self) -> bool {
        get16(self.buffer.as_ref(), field::FLG_OFF) & 0x2000 != 0
    }
    /// Fragment offset in bytes.
    pub fn frag_offset(&self) -> u16 {
        (get16(self.buffer.as_ref(), field::FLG_OFF) & 0x1fff) << 3
    }
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }
    pub fn checksum(&self) -> u16 {
        get16(self.buffer.as_ref(), field::CHECKSUM)
    }
    pub fn src_addr(&self) -> [u8; 4] {
        arr(self.buffer.as_ref(), field::SRC)
    }
    pub fn dst_addr(&self) -> [u8; 4] {
        arr(self.buffer.as_ref(), field::DST)
    }
    /// Whether the header checksum is correct.
    pub fn verify_checksum(&self) -> bool {
        checksum::fold(checksum::sum(&self.buffer.as_ref()[..self.header_len()])) == 0xffff
    }
    /// The payload as far as the buffer and `total_len` both allow
    /// (empty if `total_len` is shorter than the header).
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let end = usize::from(self.total_len()).min(b.len());
        b.get(self.header_len()..end).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_tos(&mut self, v: u8) {
        self.buffer.as_mut()[field::TOS] = v;
    }
    pub fn set_total_len(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::LENGTH, v);
    }
    pub fn set_ttl(&mut self, v: u8) {
        self.buffer.as_mut()[field::TTL] = v;
    }
    pub fn set_protocol(&mut self, v: u8) {
        self.buffer.as_mut()[field::PROTOCOL] = v;
    }
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM, v);
    }
    pub fn set_src_addr(&mut self, a: [u8; 4]) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&a);
    }
    pub fn set_dst_addr(&mut self, a: [u8; 4]) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&a);
    }
    /// Recompute the header checksum from scratch.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let hl = self.header_len();
        let c = !checksum::fold(checksum::sum(&self.buffer.as_ref()[..hl]));
        self.set_checksum(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // scapy: IP(tos=32, proto=6, src='192.168.10.10', dst='192.168.20.20', ttl=64, id=1)
    const HDR: [u8; 20] = [
        0x45, 0x20, 0x00, 0x14, 0x00, 0x01, 0x00, 0x00, 0x40, 0x06, 0xdb, 0x54, 0xc0, 0xa8, 0x0a,
        0x0a, 0xc0, 0xa8, 0x14, 0x14,
    ];

    #[test]
    fn read() {
        let p = Packet::new_checked(&HDR[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!((p.dscp(), p.ecn()), (8, 0));
        assert_eq!(p.total_len(), 20);
        assert_eq!(p.ident(), 1);
        assert!(!p.dont_frag() && !p.more_frags());
        assert_eq!(p.frag_offset(), 0);
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), 6);
        assert_eq!(p.src_addr(), [192, 168, 10, 10]);
        assert_eq!(p.dst_addr(), [192, 168, 20, 20]);
        assert!(p.verify_checksum());
        assert_eq!(p.payload(), &[] as &[u8]);
    }

    #[test]
    fn write_and_checksum() {
        let mut b = HDR;
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_ttl(63);
        assert!(!p.verify_checksum());
        p.fill_checksum();
        assert!(p.verify_checksum());
        // scapy: same header with ttl=63 -> chksum 0xdc54
        assert_eq!(p.checksum(), 0xdc54);
    }

    #[test]
    fn bad() {
        assert_eq!(Packet::new_checked(&HDR[..19]), Err(WireError::Truncated));
        let mut b = HDR;
        b[0] = 0x44;
        assert_eq!(Packet::new_checked(&b[..]), Err(WireError::Malformed));
        b[0] = 0x65;
        assert_eq!(Packet::new_checked(&b[..]), Err(WireError::Malformed));
        b[0] = 0x46;
        assert_eq!(Packet::new_checked(&b[..]), Err(WireError::Truncated));
    }
}
