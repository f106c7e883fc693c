//! Zero-copy header views, one module per protocol, in the smoltcp style.
//!
//! Every header is a `Packet<T: AsRef<[u8]>>` wrapping a byte buffer that
//! starts at the header. Byte ranges live in a private `mod field` of each
//! module; getters are in one `impl` block, setters (for `T: AsMut<[u8]>`)
//! in another.
//!
//! ## The no-panic contract
//! `Packet::new_checked` calls `check_len`, which verifies that the buffer
//! holds every fixed field the accessors touch (and, where the header
//! carries its own length, that the declared length fits the buffer).
//! After `check_len` has succeeded **no accessor can panic**. The
//! `new_unchecked` constructor exists for code that has already checked the
//! length some other way (the parser and the rewriter both go through
//! `new_checked`).
//!
//! Byte order is decided here: every multi-byte accessor is network-endian.
//! Protocol numbers are returned as raw integers (`u8`/`u16`), so unknown
//! values are never lost; the well-known ones are constants in
//! [`ethertype`] and [`ipproto`].

pub mod arp;
pub mod ethernet;
pub mod icmpv4;
pub mod icmpv6;
pub mod ipv4;
pub mod ipv6;
pub mod mpls;
pub mod pbb;
pub mod sctp;
pub mod tcp;
pub mod udp;
pub mod vlan;

/// A byte range of a fixed header field.
pub(crate) type Field = core::ops::Range<usize>;
/// The open range where a header's payload starts.
pub(crate) type Rest = core::ops::RangeFrom<usize>;

/// Why a view could not be built over a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// The buffer is shorter than the header (or its declared length).
    Truncated,
    /// A length or version field inside the header is impossible.
    Malformed,
}

impl core::fmt::Display for WireError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WireError::Truncated => f.write_str("truncated header"),
            WireError::Malformed => f.write_str("malformed header"),
        }
    }
}

impl std::error::Error for WireError {}

/// Result of building a view.
pub type Result<T> = core::result::Result<T, WireError>;

/// Ethertypes the parser and the actions know about.
pub mod ethertype {
    pub const IPV4: u16 = 0x0800;
    pub const ARP: u16 = 0x0806;
    /// 802.1Q customer VLAN tag.
    pub const VLAN: u16 = 0x8100;
    /// 802.1ad service VLAN tag (also the PBB B-TAG).
    pub const QINQ: u16 = 0x88a8;
    pub const IPV6: u16 = 0x86dd;
    pub const MPLS_UNICAST: u16 = 0x8847;
    pub const MPLS_MULTICAST: u16 = 0x8848;
    /// 802.1ah I-TAG.
    pub const PBB: u16 = 0x88e7;
    /// Smallest value that is an ethertype rather than an 802.3 length.
    pub const MIN_ETHERTYPE: u16 = 0x0600;
    /// What `eth_type` reads for an 802.3 (length) frame, as Open vSwitch
    /// does: a value below 0x0600 that no real ethertype uses.
    pub const NONE: u16 = 0x05ff;
}

/// IP protocol / IPv6 next-header numbers the parser knows about.
pub mod ipproto {
    pub const HOPOPTS: u8 = 0;
    pub const ICMP: u8 = 1;
    pub const TCP: u8 = 6;
    pub const UDP: u8 = 17;
    pub const ROUTING: u8 = 43;
    pub const FRAGMENT: u8 = 44;
    pub const ESP: u8 = 50;
    pub const AH: u8 = 51;
    pub const ICMPV6: u8 = 58;
    pub const NONXT: u8 = 59;
    pub const DSTOPTS: u8 = 60;
    pub const SCTP: u8 = 132;
}

#[inline]
pub(crate) fn get16(b: &[u8], f: Field) -> u16 {
    u16::from_be_bytes([b[f.start], b[f.start + 1]])
}

#[inline]
pub(crate) fn get32(b: &[u8], f: Field) -> u32 {
    u32::from_be_bytes([b[f.start], b[f.start + 1], b[f.start + 2], b[f.start + 3]])
}

#[inline]
pub(crate) fn put16(b: &mut [u8], f: Field, v: u16) {
    b[f].copy_from_slice(&v.to_be_bytes());
}

#[inline]
pub(crate) fn put32(b: &mut [u8], f: Field, v: u32) {
    b[f].copy_from_slice(&v.to_be_bytes());
}

#[inline]
pub(crate) fn arr<const N: usize>(b: &[u8], f: Field) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[f]);
    a
}

/// Defines the constructor boilerplate every view shares.
macro_rules! view_common {
    () => {
        /// Wrap a buffer without checking its length.
        pub const fn new_unchecked(buffer: T) -> Packet<T> {
            Packet { buffer }
        }
        /// Wrap a buffer and check that every accessor is in bounds.
        pub fn new_checked(buffer: T) -> $crate::wire::Result<Packet<T>> {
            let p = Packet::new_unchecked(buffer);
            p.check_len()?;
            Ok(p)
        }
        /// Give back the wrapped buffer.
        pub fn into_inner(self) -> T {
            self.buffer
        }
    };
}
pub(crate) use view_common;
