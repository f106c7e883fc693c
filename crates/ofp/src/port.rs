//! `struct ofp_port` and the port-related bit sets (OpenFlow 1.3.5 §7.2.1).
//!
//! A [`Port`] is the 64-byte description of one OpenFlow port. It appears in
//! `OFPT_FEATURES_REPLY`-era code paths, `OFPT_PORT_STATUS` and the
//! `OFPMP_PORT_DESC` multipart reply.
//!
//! Layout (all fields network order):
//!
//! ```text
//!  0  port_no u32      4  pad[4]        8  hw_addr[6]   14  pad2[2]
//! 16  name[16] (NUL-terminated)
//! 32  config u32      36  state u32    40  curr u32     44  advertised u32
//! 48  supported u32   52  peer u32     56  curr_speed   60  max_speed
//! ```
//!
//! Decoding never fails except on a short read, which returns the reader's
//! own short-read error (so the caller decides whether a truncated port is
//! `OFPBRC_BAD_LEN` or something else). Padding is ignored on input and
//! written as zeros. The name is read up to its first NUL; non-UTF-8 bytes
//! are replaced and the result is cut to 15 bytes on a char boundary
//! (`wire::read_str`), and [`Port::emit`] writes at most 15 bytes so that a NUL
//! always terminates them: decoding then re-encoding is a fixpoint.

use crate::consts::OFP_MAX_PORT_NAME_LEN;
use crate::error::Result;
use crate::wire::{put_str, read_str, Put, Reader};

/// `struct ofp_port` (64 bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Port {
    pub port_no: u32,
    pub hw_addr: [u8; 6],
    /// At most 15 bytes on the wire (NUL-terminated in 16).
    pub name: String,
    /// `OFPPC_*` bits.
    pub config: u32,
    /// `OFPPS_*` bits.
    pub state: u32,
    /// `OFPPF_*` bits.
    pub curr: u32,
    pub advertised: u32,
    pub supported: u32,
    pub peer: u32,
    pub curr_speed: u32,
    pub max_speed: u32,
}

impl Port {
    pub const LEN: usize = 64;

    /// Parse one 64-byte port. A short read is the reader's error.
    pub fn parse(r: &mut Reader<'_>) -> Result<Port> {
        // Check the whole length first so a short port consumes nothing.
        if r.remaining() < Self::LEN {
            return Err(r.error());
        }
        let port_no = r.u32()?;
        r.skip(4)?;
        let hw_addr = r.array::<6>()?;
        r.skip(2)?;
        let name = read_str(r.bytes(OFP_MAX_PORT_NAME_LEN)?);
        Ok(Port {
            port_no,
            hw_addr,
            name,
            config: r.u32()?,
            state: r.u32()?,
            curr: r.u32()?,
            advertised: r.u32()?,
            supported: r.u32()?,
            peer: r.u32()?,
            curr_speed: r.u32()?,
            max_speed: r.u32()?,
        })
    }

    /// Append the 64-byte encoding.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.port_no);
        out.put_zeros(4);
        out.put_slice(&self.hw_addr);
        out.put_zeros(2);
        put_str(out, &self.name, OFP_MAX_PORT_NAME_LEN);
        for v in [
            self.config,
            self.state,
            self.curr,
            self.advertised,
            self.supported,
            self.peer,
            self.curr_speed,
            self.max_speed,
        ] {
            out.put_u32(v);
        }
    }
}

/// `OFPPC_*` (port config) bits.
pub mod config {
    pub const PORT_DOWN: u32 = 1 << 0;
    pub const NO_RECV: u32 = 1 << 2;
    pub const NO_FWD: u32 = 1 << 5;
    pub const NO_PACKET_IN: u32 = 1 << 6;
}

/// `OFPPS_*` (port state) bits.
pub mod state {
    pub const LINK_DOWN: u32 = 1 << 0;
    pub const BLOCKED: u32 = 1 << 1;
    pub const LIVE: u32 = 1 << 2;
}

/// `OFPPF_*` (port feature) bits, used in `curr`, `advertised`, `supported`
/// and `peer`.
pub mod features {
    pub const F_10MB_HD: u32 = 1 << 0;
    pub const F_10MB_FD: u32 = 1 << 1;
    pub const F_100MB_HD: u32 = 1 << 2;
    pub const F_100MB_FD: u32 = 1 << 3;
    pub const F_1GB_HD: u32 = 1 << 4;
    pub const F_1GB_FD: u32 = 1 << 5;
    pub const F_10GB_FD: u32 = 1 << 6;
    pub const F_40GB_FD: u32 = 1 << 7;
    pub const F_100GB_FD: u32 = 1 << 8;
    pub const F_1TB_FD: u32 = 1 << 9;
    pub const OTHER: u32 = 1 << 10;
    pub const COPPER: u32 = 1 << 11;
    pub const FIBER: u32 = 1 << 12;
    pub const AUTONEG: u32 = 1 << 13;
    pub const PAUSE: u32 = 1 << 14;
    pub const PAUSE_ASYM: u32 = 1 << 15;
}

/// Generator of arbitrary ports whose encoding round-trips (names are
/// printable ASCII of at most 15 bytes).
#[cfg(test)]
pub(crate) fn arb_port() -> impl proptest::strategy::Strategy<Value = Port> {
    use proptest::prelude::*;
    (any::<u32>(), any::<[u8; 6]>(), "[ -~]{0,15}", any::<[u32; 8]>()).prop_map(
        |(port_no, hw_addr, name, v)| Port {
            port_no,
            hw_addr,
            name,
            config: v[0],
            state: v[1],
            curr: v[2],
            advertised: v[3],
            supported: v[4],
            peer: v[5],
            curr_speed: v[6],
            max_speed: v[7],
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use proptest::prelude::*;

    fn sample_bytes() -> Vec<u8> {
        let mut v = vec![
            0x00, 0x00, 0x00, 0x07, // port_no 7
            0, 0, 0, 0, // pad
            0x02, 0x11, 0x22, 0x33, 0x44, 0x55, // hw_addr
            0, 0, // pad2
        ];
        v.extend_from_slice(b"veth0\0\0\0\0\0\0\0\0\0\0\0");
        v.extend_from_slice(&[
            0x00, 0x00, 0x00, 0x01, // config PORT_DOWN
            0x00, 0x00, 0x00, 0x04, // state LIVE
            0x00, 0x00, 0x28, 0x40, // curr 10GB_FD|COPPER|AUTONEG
            0x00, 0x00, 0x00, 0x00, // advertised
            0x00, 0x00, 0x28, 0x60, // supported
            0x00, 0x00, 0x00, 0x00, // peer
            0x00, 0x98, 0x96, 0x80, // curr_speed 10_000_000 kbps
            0x00, 0x98, 0x96, 0x80, // max_speed
        ]);
        v
    }

    #[test]
    fn parses_literal_port() {
        let b = sample_bytes();
        assert_eq!(b.len(), Port::LEN);
        let p = Port::parse(&mut Reader::new(&b, ErrorCode::BRC_BAD_LEN)).unwrap();
        assert_eq!(p.port_no, 7);
        assert_eq!(p.hw_addr, [0x02, 0x11, 0x22, 0x33, 0x44, 0x55]);
        assert_eq!(p.name, "veth0");
        assert_eq!(p.config, config::PORT_DOWN);
        assert_eq!(p.state, state::LIVE);
        assert_eq!(p.curr, features::F_10GB_FD | features::COPPER | features::AUTONEG);
        assert_eq!(p.curr_speed, 10_000_000);
        let mut out = Vec::new();
        p.emit(&mut out);
        assert_eq!(out, b);
    }

    #[test]
    fn short_port_is_readers_error_and_consumes_nothing() {
        let b = sample_bytes();
        let mut r = Reader::new(&b[..63], ErrorCode::BRC_BAD_LEN);
        assert_eq!(Port::parse(&mut r), Err(ErrorCode::BRC_BAD_LEN));
        assert_eq!(r.position(), 0);
        let mut r = Reader::new(&b[..10], ErrorCode::PMFC_BAD_PORT);
        assert_eq!(Port::parse(&mut r), Err(ErrorCode::PMFC_BAD_PORT));
    }

    #[test]
    fn long_name_is_truncated_to_15() {
        let p = Port { name: "abcdefghijklmnopqrst".into(), ..Port::default() };
        let mut out = Vec::new();
        p.emit(&mut out);
        assert_eq!(out.len(), Port::LEN);
        let q = Port::parse(&mut Reader::new(&out, ErrorCode::BRC_BAD_LEN)).unwrap();
        assert_eq!(q.name, "abcdefghijklmno");
    }

    #[test]
    fn names_are_canonical() {
        // 16 non-NUL bytes: cut to 15.
        assert_eq!(read_str(b"abcdefghijklmnop"), "abcdefghijklmno");
        // Invalid UTF-8 expands to U+FFFD (3 bytes) and is cut on a char boundary.
        let b = [0xff; 16];
        let s = read_str(&b);
        assert_eq!(s, "\u{fffd}".repeat(5));
        let mut out = Vec::new();
        put_str(&mut out, &s, 16);
        assert_eq!(out.len(), 16);
        assert_eq!(read_str(&out), s);
        // Writing cuts on a char boundary and at an embedded NUL.
        let mut out = Vec::new();
        put_str(&mut out, "abcdefghijklmn\u{e9}", 16);
        assert_eq!(read_str(&out), "abcdefghijklmn");
        let mut out = Vec::new();
        put_str(&mut out, "ab\0cd", 8);
        assert_eq!(out, b"ab\0\0\0\0\0\0");
    }

    proptest! {
        #[test]
        fn name_decoding_is_a_fixpoint(b in proptest::collection::vec(any::<u8>(), 0..40)) {
            let s = read_str(&b);
            prop_assert!(s.len() < b.len().max(1));
            let mut out = Vec::new();
            put_str(&mut out, &s, b.len());
            prop_assert_eq!(out.len(), b.len());
            prop_assert_eq!(read_str(&out), s);
        }

        #[test]
        fn port_round_trips(p in arb_port()) {
            let mut out = Vec::new();
            p.emit(&mut out);
            prop_assert_eq!(out.len(), Port::LEN);
            let mut r = Reader::new(&out, ErrorCode::BRC_BAD_LEN);
            prop_assert_eq!(Port::parse(&mut r).unwrap(), p);
            prop_assert!(r.is_empty());
        }

        #[test]
        fn port_parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = Port::parse(&mut Reader::new(&b, ErrorCode::BRC_BAD_LEN));
        }
    }
}
