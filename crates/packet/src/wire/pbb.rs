//! 802.1ah backbone service instance tag (I-TAG) as it follows the 0x88e7
//! TPID: the I-TCI (PCP 3 bits, DEI 1, UCA 1, reserved 3, I-SID 24) and the
//! encapsulated customer addresses C-DA and C-SA, 16 bytes. The customer
//! frame's ethertype (or its first VLAN TPID) follows as the payload.
//! After `check_len` succeeds no accessor can panic.

use super::{arr, get32, put32, view_common, Result, WireError};

mod field {
    use crate::wire::{Field, Rest};
    pub const ITCI: Field = 0..4;
    pub const C_DST: Field = 4..10;
    pub const C_SRC: Field = 10..16;
    pub const PAYLOAD: Rest = 16..;
}

/// Length of the I-TCI plus customer addresses.
pub const HEADER_LEN: usize = field::PAYLOAD.start;
/// Length of the I-TCI alone.
pub const ITCI_LEN: usize = 4;

/// A view of an I-TAG body.
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
    pub fn itci(&self) -> u32 {
        get32(self.buffer.as_ref(), field::ITCI)
    }
    pub fn pcp(&self) -> u8 {
        (self.itci() >> 29) as u8
    }
    pub fn dei(&self) -> bool {
        self.itci() & (1 << 28) != 0
    }
    pub fn uca(&self) -> bool {
        self.itci() & (1 << 27) != 0
    }
    pub fn isid(&self) -> u32 {
        self.itci() & 0xff_ffff
    }
    pub fn c_dst_addr(&self) -> [u8; 6] {
        arr(self.buffer.as_ref(), field::C_DST)
    }
    pub fn c_src_addr(&self) -> [u8; 6] {
        arr(self.buffer.as_ref(), field::C_SRC)
    }
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_itci(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::ITCI, v);
    }
    /// Low 24 bits of `isid` are used.
    pub fn set_isid(&mut self, isid: u32) {
        let v = (self.itci() & 0xff00_0000) | (isid & 0xff_ffff);
        self.set_itci(v);
    }
    pub fn set_pcp(&mut self, pcp: u8) {
        let v = (self.itci() & 0x1fff_ffff) | (u32::from(pcp & 7) << 29);
        self.set_itci(v);
    }
    pub fn set_c_dst_addr(&mut self, a: [u8; 6]) {
        self.buffer.as_mut()[field::C_DST].copy_from_slice(&a);
    }
    pub fn set_c_src_addr(&mut self, a: [u8; 6]) {
        self.buffer.as_mut()[field::C_SRC].copy_from_slice(&a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_write() {
        let mut b = [
            0xa8, 0x00, 0x00, 0xcb, // pcp 5, uca 1, isid 203
            1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x08, 0x00,
        ];
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.pcp(), p.dei(), p.uca(), p.isid()), (5, false, true, 203));
        assert_eq!(p.c_dst_addr(), [1, 2, 3, 4, 5, 6]);
        assert_eq!(p.c_src_addr(), [7, 8, 9, 10, 11, 12]);
        assert_eq!(p.payload(), &[0x08, 0x00]);
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_isid(0x123456);
        p.set_pcp(0);
        assert_eq!(&b[..4], &[0x08, 0x12, 0x34, 0x56]);
    }

    #[test]
    fn truncated() {
        assert_eq!(Packet::new_checked(&[0u8; 15][..]), Err(WireError::Truncated));
    }
}
