//! TCP header (RFC 9293), 20 bytes plus options.
//!
//! `check_len` requires a data offset of at least 5 and the whole header
//! (options included) in the buffer. After it succeeds no accessor can
//! panic.

use super::{get16, get32, put16, view_common, Result, WireError};

mod field {
    use crate::wire::Field;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const SEQ_NUM: Field = 4..8;
    pub const ACK_NUM: Field = 8..12;
    pub const FLAGS: Field = 12..14;
    pub const WIN_SIZE: Field = 14..16;
    pub const CHECKSUM: Field = 16..18;
    pub const URGENT: Field = 18..20;
}

/// Length of the header without options.
pub const MIN_HEADER_LEN: usize = field::URGENT.end;
/// Offset of the checksum.
pub const CHECKSUM_OFFSET: usize = field::CHECKSUM.start;

/// A view of a TCP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    view_common!();

    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < MIN_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if self.header_len() < MIN_HEADER_LEN {
            return Err(WireError::Malformed);
        }
        if len < self.header_len() {
            return Err(WireError::Truncated);
        }
        Ok(())
    }
    pub fn src_port(&self) -> u16 {
        get16(self.buffer.as_ref(), field::SRC_PORT)
    }
    pub fn dst_port(&self) -> u16 {
        get16(self.buffer.as_ref(), field::DST_PORT)
    }
    pub fn seq_number(&self) -> u32 {
        get32(self.buffer.as_ref(), field::SEQ_NUM)
    }
    pub fn ack_number(&self) -> u32 {
        get32(self.buffer.as_ref(), field::ACK_NUM)
    }
    /// Header length in bytes (data offset × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::FLAGS.start] >> 4) * 4
    }
    /// The 9 flag bits (NS … FIN).
    pub fn flags(&self) -> u16 {
        get16(self.buffer.as_ref(), field::FLAGS) & 0x01ff
    }
    pub fn window_len(&self) -> u16 {
        get16(self.buffer.as_ref(), field::WIN_SIZE)
    }
    pub fn checksum(&self) -> u16 {
        get16(self.buffer.as_ref(), field::CHECKSUM)
    }
    pub fn urgent_at(&self) -> u16 {
        get16(self.buffer.as_ref(), field::URGENT)
    }
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_src_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::SRC_PORT, v);
    }
    pub fn set_dst_port(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::DST_PORT, v);
    }
    pub fn set_checksum(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::CHECKSUM, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // scapy: TCP(sport=11111, dport=2222, options=[(0, b'')]*? ) — a 24-byte
    // header with 4 bytes of NOP/EOL options, flags SYN, window 8192.
    const HDR: [u8; 24] = [
        0x2b, 0x67, 0x08, 0xae, 0, 0, 0, 1, 0, 0, 0, 2, 0x60, 0x02, 0x20, 0x00, 0x12, 0x34, 0, 0,
        0, 0, 0, 0,
    ];

    #[test]
    fn read_write() {
        let p = Packet::new_checked(&HDR[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port()), (11111, 2222));
        assert_eq!((p.seq_number(), p.ack_number()), (1, 2));
        assert_eq!((p.header_len(), p.flags(), p.window_len()), (24, 2, 8192));
        assert_eq!((p.checksum(), p.urgent_at()), (0x1234, 0));
        assert!(p.payload().is_empty());
        let mut b = HDR;
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_src_port(80);
        p.set_dst_port(443);
        p.set_checksum(0xbeef);
        assert_eq!(&b[..4], &[0, 80, 1, 187]);
        assert_eq!(&b[16..18], &[0xbe, 0xef]);
    }

    #[test]
    fn bad() {
        assert_eq!(Packet::new_checked(&HDR[..19]), Err(WireError::Truncated));
        assert_eq!(Packet::new_checked(&HDR[..23]), Err(WireError::Truncated));
        let mut b = HDR;
        b[12] = 0x40;
        assert_eq!(Packet::new_checked(&b[..]), Err(WireError::Malformed));
    }
}
