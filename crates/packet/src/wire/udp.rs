//! UDP header (RFC 768), 8 bytes. After `check_len` succeeds no accessor
//! can panic. The length field is not checked against the buffer (the
//! parser does not need it; rewriting only touches ports and checksum).

use super::{get16, put16, view_common, Result, WireError};

mod field {
    use crate::wire::{Field, Rest};
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
    pub const PAYLOAD: Rest = 8..;
}

/// Length of the header.
pub const HEADER_LEN: usize = field::PAYLOAD.start;
/// Offset of the checksum.
pub const CHECKSUM_OFFSET: usize = field::CHECKSUM.start;

/// A view of a UDP header.
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
    pub fn src_port(&self) -> u16 {
        get16(self.buffer.as_ref(), field::SRC_PORT)
    }
    pub fn dst_port(&self) -> u16 {
        get16(self.buffer.as_ref(), field::DST_PORT)
    }
    pub fn length(&self) -> u16 {
        get16(self.buffer.as_ref(), field::LENGTH)
    }
    pub fn checksum(&self) -> u16 {
        get16(self.buffer.as_ref(), field::CHECKSUM)
    }
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_src_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::SRC_PORT, v);
    }
    pub fn set_dst_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::DST_PORT, v);
    }
    pub fn set_length(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::LENGTH, v);
    }
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_write() {
        let mut b = [0x2b, 0x67, 0x08, 0xae, 0x00, 0x0a, 0xab, 0xcd, 0x01, 0x02];
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.src_port(), p.dst_port(), p.length(), p.checksum()),
            (11111, 2222, 10, 0xabcd)
        );
        assert_eq!(p.payload(), &[1, 2]);
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_src_port(53);
        p.set_dst_port(5353);
        p.set_length(8);
        p.set_checksum(0);
        assert_eq!(&b[..8], &[0, 53, 0x14, 0xe9, 0, 8, 0, 0]);
        assert_eq!(Packet::new_checked(&b[..7]), Err(WireError::Truncated));
    }
}
