//! 802.1Q / 802.1ad VLAN tag body: TCI (PCP 3 bits, DEI 1, VID 12) and the
//! encapsulated ethertype, 4 bytes. The view starts *after* the TPID (which
//! the enclosing header's ethertype field holds), so a tag stack is walked
//! as `ethernet.payload()` → `vlan.payload()` → … After `check_len` succeeds
//! no accessor can panic.

use super::{get16, put16, view_common, Result, WireError};

mod field {
    use crate::wire::{Field, Rest};
    pub const TCI: Field = 0..2;
    pub const ETHERTYPE: Field = 2..4;
    pub const PAYLOAD: Rest = 4..;
}

/// Length of one tag (TCI + inner ethertype).
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// A view of one VLAN tag.
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
    /// The whole 16-bit tag control information.
    pub fn tci(&self) -> u16 {
        get16(self.buffer.as_ref(), field::TCI)
    }
    pub fn pcp(&self) -> u8 {
        (self.tci() >> 13) as u8
    }
    pub fn dei(&self) -> bool {
        self.tci() & 0x1000 != 0
    }
    pub fn vid(&self) -> u16 {
        self.tci() & 0x0fff
    }
    /// Ethertype of what follows the tag.
    pub fn ethertype(&self) -> u16 {
        get16(self.buffer.as_ref(), field::ETHERTYPE)
    }
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_tci(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::TCI, v);
    }
    /// Low 3 bits of `pcp` are used.
    pub fn set_pcp(&mut self, pcp: u8) {
        let t = (self.tci() & 0x1fff) | (u16::from(pcp & 7) << 13);
        self.set_tci(t);
    }
    pub fn set_dei(&mut self, dei: bool) {
        let t = (self.tci() & !0x1000) | if dei { 0x1000 } else { 0 };
        self.set_tci(t);
    }
    /// Low 12 bits of `vid` are used.
    pub fn set_vid(&mut self, vid: u16) {
        let t = (self.tci() & 0xf000) | (vid & 0x0fff);
        self.set_tci(t);
    }
    pub fn set_ethertype(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::ETHERTYPE, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_write() {
        // PCP 5, DEI 1, VID 0x0cb (203), inner ethertype IPv4.
        let mut b = [0xb0, 0xcb, 0x08, 0x00];
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.pcp(), p.dei(), p.vid(), p.ethertype()), (5, true, 203, 0x0800));
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_pcp(3);
        p.set_dei(false);
        p.set_vid(100);
        p.set_ethertype(0x86dd);
        assert_eq!(b, [0x60, 0x64, 0x86, 0xdd]);
    }

    #[test]
    fn truncated() {
        assert_eq!(Packet::new_checked(&[0u8; 3][..]), Err(WireError::Truncated));
    }
}
