//! Ethernet II header (destination, source, ethertype), 14 bytes.
//!
//! For an 802.3 frame the last field is a length (< 0x0600) rather than an
//! ethertype; the view returns it unchanged and leaves interpretation to the
//! parser. After `check_len` succeeds no accessor can panic.

use super::{arr, get16, put16, view_common, Result, WireError};

mod field {
    use crate::wire::{Field, Rest};
    pub const DST: Field = 0..6;
    pub const SRC: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const PAYLOAD: Rest = 14..;
}

/// Length of the Ethernet header.
pub const HEADER_LEN: usize = field::PAYLOAD.start;
/// Offset of the ethertype field in an untagged frame.
pub const ETHERTYPE_OFFSET: usize = field::ETHERTYPE.start;
/// Minimum frame length without FCS; shorter frames are padded.
pub const MIN_FRAME_LEN: usize = 60;

/// A view of an Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    view_common!();

    /// `Truncated` if the buffer is shorter than 14 bytes.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }
    pub fn dst_addr(&self) -> [u8; 6] {
        arr(self.buffer.as_ref(), field::DST)
    }
    pub fn src_addr(&self) -> [u8; 6] {
        arr(self.buffer.as_ref(), field::SRC)
    }
    /// Ethertype (or 802.3 length).
    pub fn ethertype(&self) -> u16 {
        get16(self.buffer.as_ref(), field::ETHERTYPE)
    }
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_dst_addr(&mut self, a: [u8; 6]) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&a);
    }
    pub fn set_src_addr(&mut self, a: [u8; 6]) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&a);
    }
    pub fn set_ethertype(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::ETHERTYPE, v);
    }
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRAME: [u8; 16] = [
        0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x12, 0x11, 0x11, 0x11, 0x11, 0x11, 0x08, 0x00, 0xaa,
        0xbb,
    ];

    #[test]
    fn read() {
        let p = Packet::new_checked(&FRAME[..]).unwrap();
        assert_eq!(p.dst_addr(), [0x22; 6]);
        assert_eq!(p.src_addr(), [0x12, 0x11, 0x11, 0x11, 0x11, 0x11]);
        assert_eq!(p.ethertype(), 0x0800);
        assert_eq!(p.payload(), &[0xaa, 0xbb]);
    }

    #[test]
    fn write() {
        let mut b = FRAME;
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_dst_addr([1, 2, 3, 4, 5, 6]);
        p.set_src_addr([7, 8, 9, 10, 11, 12]);
        p.set_ethertype(0x86dd);
        assert_eq!(&b[..14], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x86, 0xdd]);
    }

    #[test]
    fn truncated() {
        assert_eq!(Packet::new_checked(&FRAME[..13]), Err(WireError::Truncated));
    }
}
