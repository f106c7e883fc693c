//! MPLS label stack entry (RFC 3032): label 20 bits, traffic class 3,
//! bottom-of-stack 1, TTL 8; 4 bytes. After `check_len` succeeds no accessor
//! can panic.

use super::{get32, put32, view_common, Result, WireError};

mod field {
    use crate::wire::{Field, Rest};
    pub const LSE: Field = 0..4;
    pub const PAYLOAD: Rest = 4..;
}

/// Length of one label stack entry.
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// A view of one label stack entry.
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
    /// The entry as one big-endian word.
    pub fn lse(&self) -> u32 {
        get32(self.buffer.as_ref(), field::LSE)
    }
    pub fn label(&self) -> u32 {
        self.lse() >> 12
    }
    pub fn tc(&self) -> u8 {
        ((self.lse() >> 9) & 7) as u8
    }
    pub fn bos(&self) -> bool {
        self.lse() & 0x100 != 0
    }
    pub fn ttl(&self) -> u8 {
        self.lse() as u8
    }
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_lse(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::LSE, v);
    }
    /// Low 20 bits of `label` are used.
    pub fn set_label(&mut self, label: u32) {
        let v = (self.lse() & 0xfff) | ((label & 0xf_ffff) << 12);
        self.set_lse(v);
    }
    /// Low 3 bits of `tc` are used.
    pub fn set_tc(&mut self, tc: u8) {
        let v = (self.lse() & !0xe00) | (u32::from(tc & 7) << 9);
        self.set_lse(v);
    }
    pub fn set_bos(&mut self, bos: bool) {
        let v = (self.lse() & !0x100) | if bos { 0x100 } else { 0 };
        self.set_lse(v);
    }
    pub fn set_ttl(&mut self, ttl: u8) {
        let v = (self.lse() & !0xff) | u32::from(ttl);
        self.set_lse(v);
    }
}

/// Build a label stack entry word.
pub const fn lse(label: u32, tc: u8, bos: bool, ttl: u8) -> u32 {
    ((label & 0xf_ffff) << 12) | (((tc & 7) as u32) << 9) | ((bos as u32) << 8) | ttl as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_write() {
        // label 100, tc 3, bos 1, ttl 64
        let mut b = [0x00, 0x06, 0x47, 0x40];
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.label(), p.tc(), p.bos(), p.ttl()), (100, 3, true, 64));
        assert_eq!(p.lse(), lse(100, 3, true, 64));
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_label(0xfffff);
        p.set_tc(5);
        p.set_bos(false);
        p.set_ttl(1);
        assert_eq!(b, [0xff, 0xff, 0xfa, 0x01]);
    }

    #[test]
    fn truncated() {
        assert_eq!(Packet::new_checked(&[0u8; 3][..]), Err(WireError::Truncated));
    }
}
