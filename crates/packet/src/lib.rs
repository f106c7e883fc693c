//! # sluice-packet: the packet layer of sluice's reference pipeline
//!
//! Bytes in, values out; no I/O, no clocks, no allocation per packet.
//!
//! - [`wire`]: zero-copy header views (`Packet<T: AsRef<[u8]>>`, smoltcp
//!   style) for Ethernet, 802.1Q/802.1ad tags, MPLS, PBB I-TAG, ARP, IPv4,
//!   IPv6 and its extension headers, TCP, UDP, SCTP, ICMPv4, ICMPv6 and
//!   Neighbor Discovery. After `check_len` succeeds no accessor panics.
//! - [`checksum`]: Internet checksum (full and RFC 1624 incremental),
//!   pseudo-headers, CRC32c.
//! - [`key`]: the [`FlowKey`] (a fixed array of `u64` words), the
//!   [`FlowMask`], and the [`Layout`] table that places each OXM field in
//!   the words. Matching is `(key & mask) == value` word by word, which is
//!   exactly OXM's masked compare (proof sketch in the module docs).
//!   Presence bits make absent fields unmatchable.
//! - [`parse`](mod@parse): [`parse()`] fills a key in [`FIXED_LAYOUT`] and
//!   returns a [`ParseInfo`] with header offsets.
//! - [`buf`]: [`PacketBuf`], a fixed-capacity buffer with head- and
//!   tailroom so headers can be pushed and popped without reallocating.
//! - [`rewrite`]: the OpenFlow 1.3 packet-modifying actions (push/pop
//!   VLAN, MPLS, PBB; TTL actions; `set_field` for every settable OXM
//!   field) with checksums kept correct.
//!
//! ## Invariants
//! - The parser never panics, never allocates, and never reads past the
//!   packet or past the lengths the headers declare.
//! - A key produced by [`parse()`] has no bit outside a field slot or a
//!   presence bit, no field bit without its presence bit, and no value
//!   above a field's meaningful width.
//! - Rewrites take the [`ParseInfo`] of the *current* bytes; they check
//!   every offset against the buffer (a stale `ParseInfo` gives an error,
//!   never a panic). After a rewrite the caller re-parses.
//! - Rewriting a field with the value it already has leaves the packet
//!   byte-for-byte unchanged (checksums included).
#![deny(unsafe_code)]

pub mod buf;
pub mod checksum;
pub mod field;
pub mod key;
pub mod parse;
pub mod rewrite;
pub mod wire;

pub use buf::{BufError, PacketBuf};
pub use field::Field;
pub use key::{FieldValue, FlowKey, FlowMask, KeyError, Layout, Slot, FIXED_LAYOUT, KEY_WORDS};
pub use parse::{parse, Frag, Meta, ParseInfo, L2_5, L3, L4};
pub use rewrite::{apply_set_field, RewriteError, SetFieldError};

/// Fuzz entry point (wired by the lead into cargo-fuzz): parses `data`,
/// reads every field back, and runs the rewrites on a copy, checking the
/// crate's invariants. Panics only if an invariant is broken.
pub fn fuzz_parse(data: &[u8]) {
    rewrite::fuzz_check(data);
}
