//! SCTP common header (RFC 9260): ports, verification tag, CRC32c
//! checksum; 12 bytes. The checksum is stored as the CRC32c value's
//! little-endian bytes (RFC 9260 appendix A, as Linux and Wireshark do):
//! [`Packet::checksum`] returns that CRC value. After `check_len` succeeds
//! no accessor can panic.

use super::{get16, get32, put16, view_common, Result, WireError};
use crate::checksum;

mod field {
    use crate::wire::{Field, Rest};
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const VTAG: Field = 4..8;
    pub const CHECKSUM: Field = 8..12;
    pub const PAYLOAD: Rest = 12..;
}

/// Length of the common header.
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// A view of an SCTP packet (common header + chunks).
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
    pub fn verification_tag(&self) -> u32 {
        get32(self.buffer.as_ref(), field::VTAG)
    }
    /// The CRC32c value held in the checksum field.
    pub fn checksum(&self) -> u32 {
        let b = self.buffer.as_ref();
        u32::from_le_bytes([b[8], b[9], b[10], b[11]])
    }
    /// CRC32c over the whole buffer with the checksum field taken as zero.
    pub fn compute_checksum(&self) -> u32 {
        let b = self.buffer.as_ref();
        let c = checksum::crc32c_update(!0, &b[..field::CHECKSUM.start]);
        let c = checksum::crc32c_update(c, &[0; 4]);
        !checksum::crc32c_update(c, &b[field::PAYLOAD])
    }
    pub fn verify_checksum(&self) -> bool {
        self.checksum() == self.compute_checksum()
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
    pub fn set_checksum(&mut self, crc: u32) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&crc.to_le_bytes());
    }
    /// Recompute the CRC32c over the whole buffer.
    pub fn fill_checksum(&mut self) {
        let c = self.compute_checksum();
        self.set_checksum(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // scapy: SCTP(sport=11111, dport=2222, tag=0x01020304)/SCTPChunkData(data=b'abcd')
    // checksum field as scapy computes it.
    const PKT: [u8; 32] = [
        0x2b, 0x67, 0x08, 0xae, 0x01, 0x02, 0x03, 0x04, 0, 0, 0, 0, 0x00, 0x00, 0x00, 0x14, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, b'a', b'b', b'c', b'd',
    ];

    #[test]
    fn read_write() {
        let p = Packet::new_checked(&PKT[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port()), (11111, 2222));
        assert_eq!(p.verification_tag(), 0x01020304);
        let mut b = PKT;
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.fill_checksum();
        assert!(p.verify_checksum());
        // the bytes scapy writes for this packet
        assert_eq!(&b[8..12], &[0x1a, 0xbb, 0xcf, 0xeb]);
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_src_port(1);
        assert!(!p.verify_checksum());
        assert_eq!(Packet::new_checked(&PKT[..11]), Err(WireError::Truncated));
    }
}
