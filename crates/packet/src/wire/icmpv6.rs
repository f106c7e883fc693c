//! ICMPv6 (RFC 4443) and Neighbor Discovery (RFC 4861) messages.
//!
//! [`Packet`] is the 4-byte ICMPv6 header (type, code, checksum) over the
//! whole message. [`NdPacket`] is a Neighbor Solicitation (135) or
//! Advertisement (136): 4 header bytes, 4 reserved/flag bytes, the 16-byte
//! target address, then options, which [`NdOptions`] walks without
//! allocating (an option of length 0 or running past the buffer ends the
//! walk, as RFC 4861 §4.6 asks receivers to discard such packets).
//!
//! The checksum covers the IPv6 pseudo-header, so the checksum helpers take
//! the source and destination addresses. After `check_len` succeeds no
//! accessor can panic.

use super::{arr, get16, put16, view_common, Result, WireError};
use crate::checksum;

mod field {
    use crate::wire::{Field, Rest};
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Field = 2..4;
    pub const REST: Rest = 4..;
    pub const ND_FLAGS: Field = 4..8;
    pub const ND_TARGET: Field = 8..24;
    pub const ND_OPTIONS: Rest = 24..;
}

/// Length of type + code + checksum.
pub const HEADER_LEN: usize = field::REST.start;
/// Offset of the checksum.
pub const CHECKSUM_OFFSET: usize = field::CHECKSUM.start;
/// Length of an NS/NA message without options.
pub const ND_HEADER_LEN: usize = field::ND_OPTIONS.start;
/// Offset of the target address in an NS/NA message.
pub const ND_TARGET_OFFSET: usize = field::ND_TARGET.start;

/// Neighbor Solicitation.
pub const ND_NEIGHBOR_SOLICIT: u8 = 135;
/// Neighbor Advertisement.
pub const ND_NEIGHBOR_ADVERT: u8 = 136;
/// Source link-layer address option.
pub const ND_OPT_SLL: u8 = 1;
/// Target link-layer address option.
pub const ND_OPT_TLL: u8 = 2;

/// A view of an ICMPv6 message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    view_common!();

    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }
    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }
    pub fn checksum(&self) -> u16 {
        get16(self.buffer.as_ref(), field::CHECKSUM)
    }
    /// Whether the checksum (with the IPv6 pseudo-header) is correct.
    pub fn verify_checksum(&self, src: &[u8; 16], dst: &[u8; 16]) -> bool {
        let b = self.buffer.as_ref();
        let ph = checksum::ipv6_pseudo(src, dst, 58, b.len() as u32);
        checksum::fold(ph + checksum::sum(b)) == 0xffff
    }
    pub fn rest(&self) -> &[u8] {
        &self.buffer.as_ref()[field::REST]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_msg_type(&mut self, v: u8) {
        self.buffer.as_mut()[field::TYPE] = v;
    }
    pub fn set_msg_code(&mut self, v: u8) {
        self.buffer.as_mut()[field::CODE] = v;
    }
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM, v);
    }
    /// Recompute the checksum over the whole buffer and pseudo-header.
    pub fn fill_checksum(&mut self, src: &[u8; 16], dst: &[u8; 16]) {
        self.set_checksum(0);
        let b = self.buffer.as_ref();
        let ph = checksum::ipv6_pseudo(src, dst, 58, b.len() as u32);
        let c = !checksum::fold(ph + checksum::sum(b));
        self.set_checksum(c);
    }
}

/// A view of a Neighbor Solicitation / Advertisement message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NdPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> NdPacket<T> {
    /// Wrap without checking.
    pub const fn new_unchecked(buffer: T) -> Self {
        NdPacket { buffer }
    }
    /// Wrap and check that the fixed part (24 bytes) is present.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = NdPacket { buffer };
        p.check_len()?;
        Ok(p)
    }
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < ND_HEADER_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// The R/S/O flags and reserved bits.
    pub fn flags(&self) -> u32 {
        u32::from(get16(self.buffer.as_ref(), field::ND_FLAGS.start..field::ND_FLAGS.start + 2))
            << 16
            | u32::from(get16(self.buffer.as_ref(), field::ND_FLAGS.start + 2..field::ND_FLAGS.end))
    }
    pub fn target(&self) -> [u8; 16] {
        arr(self.buffer.as_ref(), field::ND_TARGET)
    }
    /// The options, walked lazily.
    pub fn options(&self) -> NdOptions<'_> {
        NdOptions { rest: &self.buffer.as_ref()[field::ND_OPTIONS], offset: ND_HEADER_LEN }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> NdPacket<T> {
    pub fn set_target(&mut self, a: [u8; 16]) {
        self.buffer.as_mut()[field::ND_TARGET].copy_from_slice(&a);
    }
}

/// One ND option: its type, its offset from the start of the ICMPv6
/// message, and its body (everything after type and length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NdOption<'a> {
    pub kind: u8,
    pub offset: usize,
    pub body: &'a [u8],
}

/// Iterator over ND options; stops at the first malformed option.
#[derive(Debug, Clone)]
pub struct NdOptions<'a> {
    rest: &'a [u8],
    offset: usize,
}

impl<'a> Iterator for NdOptions<'a> {
    type Item = NdOption<'a>;
    fn next(&mut self) -> Option<NdOption<'a>> {
        let kind = *self.rest.first()?;
        let len = usize::from(*self.rest.get(1)?) * 8;
        if len == 0 || len > self.rest.len() {
            self.rest = &[];
            return None;
        }
        let opt = NdOption { kind, offset: self.offset, body: &self.rest[2..len] };
        self.rest = &self.rest[len..];
        self.offset += len;
        Some(opt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &[(usize, u8)]) -> [u8; 16] {
        let mut a = [0u8; 16];
        for &(i, v) in s {
            a[i] = v;
        }
        a
    }

    // scapy: IPv6(src='fe80::1', dst='ff02::1:ff00:2')/ICMPv6ND_NS(tgt='fe80::2')
    //        /ICMPv6NDOptSrcLLAddr(lladdr='12:11:11:11:11:11')
    const NS: [u8; 32] = [
        0x87, 0x00, 0x48, 0x65, 0, 0, 0, 0, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
        1, 1, 0x12, 0x11, 0x11, 0x11, 0x11, 0x11,
    ];

    #[test]
    fn ns() {
        let src = addr(&[(0, 0xfe), (1, 0x80), (15, 1)]);
        let dst = addr(&[(0, 0xff), (1, 2), (11, 1), (12, 0xff), (15, 2)]);
        let p = Packet::new_checked(&NS[..]).unwrap();
        assert_eq!((p.msg_type(), p.msg_code()), (135, 0));
        assert!(p.verify_checksum(&src, &dst));
        let nd = NdPacket::new_checked(&NS[..]).unwrap();
        assert_eq!(nd.target(), addr(&[(0, 0xfe), (1, 0x80), (15, 2)]));
        let opts: Vec<_> = nd.options().collect();
        assert_eq!(opts.len(), 1);
        assert_eq!(opts[0].kind, ND_OPT_SLL);
        assert_eq!(opts[0].offset, 24);
        assert_eq!(opts[0].body, &[0x12, 0x11, 0x11, 0x11, 0x11, 0x11]);
        let mut b = NS;
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_checksum(0);
        p.fill_checksum(&src, &dst);
        assert_eq!(p.checksum(), 0x4865);
    }

    #[test]
    fn bad_options() {
        let mut b = NS;
        b[25] = 0; // length 0
        assert_eq!(NdPacket::new_checked(&b[..]).unwrap().options().count(), 0);
        b[25] = 2; // runs past the end
        assert_eq!(NdPacket::new_checked(&b[..]).unwrap().options().count(), 0);
        assert_eq!(NdPacket::new_checked(&NS[..23]), Err(WireError::Truncated));
        assert_eq!(Packet::new_checked(&NS[..3]), Err(WireError::Truncated));
    }
}
