//! Internet checksum (RFC 1071), its incremental update (RFC 1624), the
//! IPv4/IPv6 pseudo-headers, and CRC32c (Castagnoli, for SCTP).
//!
//! Sums are kept unfolded in a `u32` so callers can add a few pieces
//! (pseudo-header + segment) and fold once; [`sum`] accumulates in a `u64`
//! and folds down to 32 bits, so it cannot overflow for any input length.

/// One's-complement sum of `data` as big-endian 16-bit words (a trailing
/// odd byte is padded with zero). Unfolded; see [`fold`].
pub fn sum(data: &[u8]) -> u32 {
    let mut acc: u64 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u64::from(*last) << 8;
    }
    // Fold the u64 into a u32 without changing the one's-complement value.
    while acc > u64::from(u32::MAX) {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u32
}

/// Fold a 32-bit sum into 16 bits with end-around carry.
pub fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// Sum of the IPv4 pseudo-header (src, dst, zero, protocol, length).
pub fn ipv4_pseudo(src: &[u8; 4], dst: &[u8; 4], proto: u8, len: u16) -> u32 {
    sum(src) + sum(dst) + u32::from(proto) + u32::from(len)
}

/// Sum of the IPv6 pseudo-header (src, dst, upper-layer length, next header).
pub fn ipv6_pseudo(src: &[u8; 16], dst: &[u8; 16], next_header: u8, len: u32) -> u32 {
    sum(src) + sum(dst) + (len >> 16) + (len & 0xffff) + u32::from(next_header)
}

/// RFC 1624 eqn. 3: the checksum `hc` after the 16-bit-aligned bytes
/// `old` (even length) of the covered data are replaced by `new` (same
/// length). Returns `hc` unchanged when `old == new`, so rewriting a field
/// with its own value never touches the packet.
pub fn update(hc: u16, old: &[u8], new: &[u8]) -> u16 {
    if old == new {
        return hc;
    }
    // ~HC + ~m + m' ; ~m summed word by word is 0xffff*n - sum(m).
    let mut s = u32::from(!hc);
    for (o, n) in old.chunks(2).zip(new.chunks(2)) {
        let ow = u16::from_be_bytes([o[0], *o.get(1).unwrap_or(&0)]);
        let nw = u16::from_be_bytes([n[0], *n.get(1).unwrap_or(&0)]);
        s += u32::from(!ow) + u32::from(nw);
    }
    !fold(s)
}

/// [`update`] for one 16-bit word.
pub fn update16(hc: u16, old: u16, new: u16) -> u16 {
    update(hc, &old.to_be_bytes(), &new.to_be_bytes())
}

const fn crc32c_table() -> [u32; 256] {
    // Reflected polynomial of CRC-32C (Castagnoli).
    const POLY: u32 = 0x82f6_3b78;
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static CRC32C: [u32; 256] = crc32c_table();

/// Feed `data` into a running CRC32c register (start with `!0`, finish by
/// inverting).
pub fn crc32c_update(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc = CRC32C[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// CRC32c of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    !crc32c_update(!0, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3 example: 00 01 f2 03 f4 f5 f6 f7 -> sum 0xddf2
        assert_eq!(fold(sum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7])), 0xddf2);
        assert_eq!(fold(sum(&[0xff])), 0xff00);
        assert_eq!(sum(&[]), 0);
    }

    #[test]
    fn crc32c_check_value() {
        // The CRC catalogue's check value for CRC-32/ISCSI.
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn incremental_equals_full() {
        // IPv4 header from scapy; change the TTL byte pair 0x4006 -> 0x3f06.
        let mut h = [
            0x45u8, 0x20, 0x00, 0x14, 0x00, 0x01, 0x00, 0x00, 0x40, 0x06, 0xdb, 0x54, 0xc0, 0xa8,
            0x0a, 0x0a, 0xc0, 0xa8, 0x14, 0x14,
        ];
        let c = update16(0xdb54, 0x4006, 0x3f06);
        assert_eq!(c, 0xdc54);
        h[8] = 0x3f;
        h[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(fold(sum(&h)), 0xffff);
        assert_eq!(update(0x1234, &[1, 2], &[1, 2]), 0x1234);
    }

    #[test]
    fn big_input_does_not_overflow() {
        let v = vec![0xffu8; 200_000];
        assert_eq!(fold(sum(&v)), 0xffff);
    }
}
