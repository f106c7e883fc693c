//! ARP for Ethernet/IPv4 (RFC 826), 28 bytes.
//!
//! The view covers only the Ethernet/IPv4 form: `check_len` requires 28
//! bytes, and [`Packet::is_eth_ipv4`] tells whether hardware/protocol type
//! and address lengths really say Ethernet/IPv4 (the parser only reports
//! `arp_*` fields when they do). After `check_len` succeeds no accessor can
//! panic.

use super::{arr, get16, put16, view_common, Result, WireError};

mod field {
    use crate::wire::Field;
    pub const HTYPE: Field = 0..2;
    pub const PTYPE: Field = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Field = 6..8;
    pub const SHA: Field = 8..14;
    pub const SPA: Field = 14..18;
    pub const THA: Field = 18..24;
    pub const TPA: Field = 24..28;
}

/// Length of an Ethernet/IPv4 ARP packet.
pub const HEADER_LEN: usize = field::TPA.end;

/// A view of an Ethernet/IPv4 ARP packet.
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
    pub fn htype(&self) -> u16 {
        get16(self.buffer.as_ref(), field::HTYPE)
    }
    pub fn ptype(&self) -> u16 {
        get16(self.buffer.as_ref(), field::PTYPE)
    }
    pub fn hlen(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }
    pub fn plen(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }
    /// Hardware type 1, protocol 0x0800, lengths 6 and 4.
    pub fn is_eth_ipv4(&self) -> bool {
        self.htype() == 1 && self.ptype() == 0x0800 && self.hlen() == 6 && self.plen() == 4
    }
    pub fn oper(&self) -> u16 {
        get16(self.buffer.as_ref(), field::OPER)
    }
    pub fn sha(&self) -> [u8; 6] {
        arr(self.buffer.as_ref(), field::SHA)
    }
    pub fn spa(&self) -> [u8; 4] {
        arr(self.buffer.as_ref(), field::SPA)
    }
    pub fn tha(&self) -> [u8; 6] {
        arr(self.buffer.as_ref(), field::THA)
    }
    pub fn tpa(&self) -> [u8; 4] {
        arr(self.buffer.as_ref(), field::TPA)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_oper(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::OPER, v);
    }
    pub fn set_sha(&mut self, a: [u8; 6]) {
        self.buffer.as_mut()[field::SHA].copy_from_slice(&a);
    }
    pub fn set_spa(&mut self, a: [u8; 4]) {
        self.buffer.as_mut()[field::SPA].copy_from_slice(&a);
    }
    pub fn set_tha(&mut self, a: [u8; 6]) {
        self.buffer.as_mut()[field::THA].copy_from_slice(&a);
    }
    pub fn set_tpa(&mut self, a: [u8; 4]) {
        self.buffer.as_mut()[field::TPA].copy_from_slice(&a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // who-has 192.168.20.20 tell 192.168.10.10
    const REQ: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x12, 0x11, 0x11, 0x11, 0x11, 0x11, 192,
        168, 10, 10, 0, 0, 0, 0, 0, 0, 192, 168, 20, 20,
    ];

    #[test]
    fn read_write() {
        let p = Packet::new_checked(&REQ[..]).unwrap();
        assert!(p.is_eth_ipv4());
        assert_eq!(p.oper(), 1);
        assert_eq!(p.sha(), [0x12, 0x11, 0x11, 0x11, 0x11, 0x11]);
        assert_eq!(p.spa(), [192, 168, 10, 10]);
        assert_eq!(p.tha(), [0; 6]);
        assert_eq!(p.tpa(), [192, 168, 20, 20]);
        let mut b = REQ;
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_oper(2);
        p.set_tha([0x22; 6]);
        p.set_tpa([10, 0, 0, 1]);
        p.set_spa([10, 0, 0, 2]);
        p.set_sha([0x33; 6]);
        assert_eq!(&b[6..8], &[0, 2]);
        assert_eq!(
            &b[8..28],
            &[
                0x33, 0x33, 0x33, 0x33, 0x33, 0x33, 10, 0, 0, 2, 0x22, 0x22, 0x22, 0x22, 0x22,
                0x22, 10, 0, 0, 1
            ]
        );
    }

    #[test]
    fn not_eth_ipv4() {
        let mut b = REQ;
        b[5] = 16;
        assert!(!Packet::new_checked(&b[..]).unwrap().is_eth_ipv4());
        assert_eq!(Packet::new_checked(&REQ[..27]), Err(WireError::Truncated));
    }
}
