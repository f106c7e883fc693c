//! IPv6 fixed header (RFC 8200), 40 bytes, and its extension headers.
//!
//! [`Packet`] is the fixed header. [`ExtHeader`] covers the extension
//! headers whose length the parser must know to walk past them:
//! hop-by-hop options (0), routing (43), destination options (60) — all
//! `(hdr_ext_len + 1) × 8` bytes —, fragment (44, 8 bytes) and
//! authentication (51, `(payload_len + 2) × 4` bytes). ESP (50) cannot be
//! walked (what follows is encrypted) and "no next header" (59) ends the
//! chain; [`ExtHeader::header_len`] returns `None` for them.
//!
//! `check_len` of the fixed header requires version 6 and 40 bytes; of an
//! extension header, its first 8 bytes and its whole declared length.
//! After `check_len` succeeds no accessor can panic.

use super::ipproto;
use super::{arr, get16, get32, put16, put32, view_common, Result, WireError};

mod field {
    use crate::wire::{Field, Rest};
    pub const VER_TC_FL: Field = 0..4;
    pub const LENGTH: Field = 4..6;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: Field = 8..24;
    pub const DST: Field = 24..40;
    pub const PAYLOAD: Rest = 40..;
}

/// Length of the fixed header.
pub const HEADER_LEN: usize = field::PAYLOAD.start;
/// Offset of the next-header byte.
pub const NEXT_HEADER_OFFSET: usize = field::NXT_HDR;
/// Offset of the hop limit.
pub const HOP_LIMIT_OFFSET: usize = field::HOP_LIMIT;
/// Offset of the source address.
pub const SRC_OFFSET: usize = field::SRC.start;
/// Offset of the destination address.
pub const DST_OFFSET: usize = field::DST.start;

/// A view of the IPv6 fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    view_common!();

    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if b[0] >> 4 != 6 {
            return Err(WireError::Malformed);
        }
        Ok(())
    }
    fn vtf(&self) -> u32 {
        get32(self.buffer.as_ref(), field::VER_TC_FL)
    }
    pub fn version(&self) -> u8 {
        (self.vtf() >> 28) as u8
    }
    pub fn traffic_class(&self) -> u8 {
        (self.vtf() >> 20) as u8
    }
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }
    pub fn ecn(&self) -> u8 {
        self.traffic_class() & 3
    }
    pub fn flow_label(&self) -> u32 {
        self.vtf() & 0xf_ffff
    }
    pub fn payload_len(&self) -> u16 {
        get16(self.buffer.as_ref(), field::LENGTH)
    }
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NXT_HDR]
    }
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }
    pub fn src_addr(&self) -> [u8; 16] {
        arr(self.buffer.as_ref(), field::SRC)
    }
    pub fn dst_addr(&self) -> [u8; 16] {
        arr(self.buffer.as_ref(), field::DST)
    }
    /// The payload as far as the buffer and `payload_len` allow. A
    /// `payload_len` of 0 (jumbogram) means "to the end of the buffer".
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let pl = usize::from(self.payload_len());
        let end = if pl == 0 { b.len() } else { (HEADER_LEN + pl).min(b.len()) };
        &b[HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_vtf(&mut self, v: u32) {
        put32(self.buffer.as_mut(), field::VER_TC_FL, v);
    }
    pub fn set_traffic_class(&mut self, tc: u8) {
        let v = (self.vtf() & 0xf00f_ffff) | (u32::from(tc) << 20);
        self.set_vtf(v);
    }
    /// Low 20 bits of `fl` are used.
    pub fn set_flow_label(&mut self, fl: u32) {
        let v = (self.vtf() & 0xfff0_0000) | (fl & 0xf_ffff);
        self.set_vtf(v);
    }
    pub fn set_payload_len(&mut self, v: u16) {
        put16(self.buffer.as_mut(), field::LENGTH, v);
    }
    pub fn set_next_header(&mut self, v: u8) {
        self.buffer.as_mut()[field::NXT_HDR] = v;
    }
    pub fn set_hop_limit(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = v;
    }
    pub fn set_src_addr(&mut self, a: [u8; 16]) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&a);
    }
    pub fn set_dst_addr(&mut self, a: [u8; 16]) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&a);
    }
}

mod ext_field {
    use crate::wire::Field;
    pub const NXT_HDR: usize = 0;
    pub const LEN: usize = 1;
    /// Fragment header: offset (13 bits) << 3 | M flag.
    pub const FRAG_OFF: Field = 2..4;
    pub const FRAG_IDENT: Field = 4..8;
}

/// Minimum length of any walkable extension header.
pub const EXT_MIN_LEN: usize = 8;

/// Whether `nh` is one of the extension headers OpenFlow's `ipv6_exthdr`
/// knows about (hop-by-hop, routing, fragment, ESP, AH, dest opts, no-next).
pub const fn is_extension(nh: u8) -> bool {
    matches!(
        nh,
        ipproto::HOPOPTS
            | ipproto::ROUTING
            | ipproto::FRAGMENT
            | ipproto::ESP
            | ipproto::AH
            | ipproto::DSTOPTS
            | ipproto::NONXT
    )
}

/// A view of one walkable extension header of kind `kind` (its own
/// protocol number, which the *previous* header names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtHeader<T: AsRef<[u8]>> {
    buffer: T,
    kind: u8,
}

impl<T: AsRef<[u8]>> ExtHeader<T> {
    /// Wrap and check: `Malformed` for kinds that cannot be walked.
    pub fn new_checked(buffer: T, kind: u8) -> Result<Self> {
        let h = ExtHeader { buffer, kind };
        h.check_len()?;
        Ok(h)
    }
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        if b.len() < EXT_MIN_LEN {
            return Err(WireError::Truncated);
        }
        match self.header_len() {
            None => Err(WireError::Malformed),
            Some(n) if n > b.len() => Err(WireError::Truncated),
            Some(_) => Ok(()),
        }
    }
    /// The protocol number of this header.
    pub fn kind(&self) -> u8 {
        self.kind
    }
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[ext_field::NXT_HDR]
    }
    /// Total length of this header in bytes; `None` for ESP, no-next and
    /// non-extension kinds.
    pub fn header_len(&self) -> Option<usize> {
        let l = usize::from(*self.buffer.as_ref().get(ext_field::LEN)?);
        match self.kind {
            ipproto::HOPOPTS | ipproto::ROUTING | ipproto::DSTOPTS => Some((l + 1) * 8),
            ipproto::FRAGMENT => Some(8),
            ipproto::AH => Some((l + 2) * 4),
            _ => None,
        }
    }
    /// Fragment header: fragment offset in bytes (0 for other kinds).
    pub fn frag_offset(&self) -> u16 {
        if self.kind == ipproto::FRAGMENT {
            get16(self.buffer.as_ref(), ext_field::FRAG_OFF) & 0xfff8
        } else {
            0
        }
    }
    /// Fragment header: the M flag.
    pub fn more_frags(&self) -> bool {
        self.kind == ipproto::FRAGMENT && get16(self.buffer.as_ref(), ext_field::FRAG_OFF) & 1 != 0
    }
    /// Fragment header: identification.
    pub fn frag_ident(&self) -> u32 {
        get32(self.buffer.as_ref(), ext_field::FRAG_IDENT)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ExtHeader<T> {
    pub fn set_next_header(&mut self, v: u8) {
        self.buffer.as_mut()[ext_field::NXT_HDR] = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // scapy: IPv6(dst='20::20', fl=100, src='10::10', nh=6, hlim=64, tc=32, plen=0)
    const HDR: [u8; 40] = [
        0x62, 0x00, 0x00, 0x64, 0x00, 0x00, 0x06, 0x40, 0x00, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0x00, 0x10, 0x00, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x20,
    ];

    #[test]
    fn read_write() {
        let p = Packet::new_checked(&HDR[..]).unwrap();
        assert_eq!(p.version(), 6);
        assert_eq!(p.traffic_class(), 32);
        assert_eq!((p.dscp(), p.ecn()), (8, 0));
        assert_eq!(p.flow_label(), 100);
        assert_eq!(p.next_header(), 6);
        assert_eq!(p.hop_limit(), 64);
        let mut src = [0u8; 16];
        src[1] = 0x10;
        src[15] = 0x10;
        assert_eq!(p.src_addr(), src);
        let mut b = HDR;
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_traffic_class(0xff);
        p.set_flow_label(0xabcde);
        p.set_hop_limit(1);
        assert_eq!(&b[..8], &[0x6f, 0xfa, 0xbc, 0xde, 0x00, 0x00, 0x06, 0x01]);
    }

    #[test]
    fn bad() {
        assert_eq!(Packet::new_checked(&HDR[..39]), Err(WireError::Truncated));
        let mut b = HDR;
        b[0] = 0x42;
        assert_eq!(Packet::new_checked(&b[..]), Err(WireError::Malformed));
    }

    #[test]
    fn ext_lengths() {
        // hop-by-hop, hdr_ext_len 1 -> 16 bytes
        let hbh = [17u8, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let h = ExtHeader::new_checked(&hbh[..], ipproto::HOPOPTS).unwrap();
        assert_eq!((h.next_header(), h.header_len()), (17, Some(16)));
        assert_eq!(ExtHeader::new_checked(&hbh[..15], 0), Err(WireError::Truncated));
        // AH payload len 4 -> 24 bytes
        let ah = [6u8, 4, 0, 0, 0, 0, 0, 0];
        let h = ExtHeader::new_unchecked_for_test(&ah[..], ipproto::AH);
        assert_eq!(h.header_len(), Some(24));
        assert_eq!(ExtHeader::new_checked(&ah[..], ipproto::AH), Err(WireError::Truncated));
        // fragment: offset 185*8, M=1, ident 0x01020304
        let fr = [6u8, 0, 0x05, 0xc9, 1, 2, 3, 4];
        let h = ExtHeader::new_checked(&fr[..], ipproto::FRAGMENT).unwrap();
        assert_eq!((h.frag_offset(), h.more_frags(), h.frag_ident()), (1480, true, 0x01020304));
        assert_eq!(ExtHeader::new_checked(&fr[..], ipproto::ESP), Err(WireError::Malformed));
    }

    impl<T: AsRef<[u8]>> ExtHeader<T> {
        fn new_unchecked_for_test(buffer: T, kind: u8) -> Self {
            ExtHeader { buffer, kind }
        }
    }
}
