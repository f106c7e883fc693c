//! ICMPv4 header (RFC 792): type, code, checksum, 4 bytes of
//! type-specific data. `check_len` requires the first 4 bytes (type, code,
//! checksum), which is all the parser and the actions touch. After it
//! succeeds no accessor can panic.

use super::{get16, put16, view_common, Result, WireError};
use crate::checksum;

mod field {
    use crate::wire::{Field, Rest};
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Field = 2..4;
    pub const REST: Rest = 4..;
}

/// Length of type + code + checksum.
pub const HEADER_LEN: usize = field::REST.start;
/// Offset of the checksum.
pub const CHECKSUM_OFFSET: usize = field::CHECKSUM.start;

/// A view of an ICMPv4 message.
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
    /// Whether the checksum over the whole buffer is correct.
    pub fn verify_checksum(&self) -> bool {
        checksum::fold(checksum::sum(self.buffer.as_ref())) == 0xffff
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
    /// Recompute the checksum over the whole buffer.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = !checksum::fold(checksum::sum(self.buffer.as_ref()));
        self.set_checksum(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // scapy: ICMP(type=8, code=0, id=1, seq=2)/b'hi'
    const ECHO: [u8; 10] = [0x08, 0x00, 0x8f, 0x93, 0x00, 0x01, 0x00, 0x02, b'h', b'i'];

    #[test]
    fn read_write() {
        let p = Packet::new_checked(&ECHO[..]).unwrap();
        assert_eq!((p.msg_type(), p.msg_code()), (8, 0));
        assert!(p.verify_checksum());
        assert_eq!(p.rest(), &[0, 1, 0, 2, b'h', b'i']);
        let mut b = ECHO;
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_msg_type(0);
        p.set_checksum(0x1234);
        p.fill_checksum();
        assert!(p.verify_checksum());
        assert_eq!(Packet::new_checked(&ECHO[..3]), Err(WireError::Truncated));
    }
}
