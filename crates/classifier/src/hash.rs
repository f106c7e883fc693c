//! Hashing of masked key words.
//!
//! A subtable hashes the key words its mask looks at, in a fixed order,
//! with a folded multiply per word (the 128-bit product of `h ^ word` and an
//! odd constant, high half xor low half). Unlike a plain multiply, the fold
//! carries changes in a word's high bits down into the low bits that pick a
//! hash-table bucket, which matters here: `eth_dst` lives in bits 16–63 of
//! its word. The result is already well mixed, so the hash tables keyed by
//! it use [`IdBuild`] (the identity) instead of hashing a second time.
//!
//! The seed is fixed, so hashes are deterministic across runs. Only rule
//! values (written by the controller, which is trusted) sit in the tables;
//! packets only probe them, so an attacker sending packets cannot lengthen
//! a collision chain.

use std::hash::{BuildHasherDefault, Hasher};

const K_WORD: u64 = 0x9e37_79b9_7f4a_7c15;
const K_FINISH: u64 = 0xd6e8_feb8_6659_fd93;

/// Start value of every hash.
pub(crate) const SEED: u64 = 0x243f_6a88_85a3_08d3;

#[inline(always)]
fn fold_mul(a: u64, b: u64) -> u64 {
    let r = u128::from(a) * u128::from(b);
    (r as u64) ^ ((r >> 64) as u64)
}

/// Add one (masked) word to a running hash.
#[inline(always)]
pub(crate) fn add(h: u64, word: u64) -> u64 {
    fold_mul(h ^ word, K_WORD)
}

/// Final mix of a running hash (applied at every stage boundary; the
/// running value itself continues unchanged into the next stage).
#[inline(always)]
pub(crate) fn finish(h: u64) -> u64 {
    let f = fold_mul(h ^ (h >> 29), K_FINISH);
    #[cfg(test)]
    if WEAK.with(|w| w.get()) {
        return f & 3;
    }
    f
}

#[cfg(test)]
thread_local! {
    /// Test switch: reduce every hash to 2 bits to force collisions.
    pub(crate) static WEAK: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// `Hasher` that passes an already-mixed `u64` through.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Not used by the u64-keyed tables; a plain fold keeps it total.
        for &b in bytes {
            self.0 = add(self.0, u64::from(b));
        }
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = x;
    }
}

/// Build-hasher for `HashMap<u64, _>` keyed by [`finish`]ed hashes.
pub(crate) type IdBuild = BuildHasherDefault<IdHasher>;

/// `Hasher` for keys that are not hashes yet but are trusted and distinct
/// (rule ids and seqs, chosen by the switch): one folded multiply, where
/// the default SipHash was a visible part of a bulk flow-mod load.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SeqHasher(u64);

impl Hasher for SeqHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = add(self.0, u64::from(b));
        }
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = fold_mul(self.0 ^ x, K_WORD);
    }
}

/// Build-hasher for maps keyed by rule ids and seqs.
pub(crate) type SeqBuild = BuildHasherDefault<SeqHasher>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_hasher_spreads_consecutive_ids_over_buckets() {
        use std::hash::BuildHasher;
        // hashbrown picks buckets with the low bits and a 7-bit tag with
        // the high bits: consecutive seqs must differ in both.
        let b = SeqBuild::default();
        let low: std::collections::HashSet<u64> =
            (0..4096u64).map(|s| b.hash_one(s) & 4095).collect();
        let high: std::collections::HashSet<u64> =
            (0..4096u64).map(|s| b.hash_one(s) >> 57).collect();
        assert!(low.len() > 2000, "low bits: {} distinct of 4096", low.len());
        assert_eq!(high.len(), 128, "high bits: {} distinct tags", high.len());
    }

    #[test]
    fn high_bits_reach_low_bits() {
        // Two words that differ only in bit 40 (inside eth_dst) must land
        // in different low bits after one round.
        let a = finish(add(SEED, 0x0000_0100_0000_0000));
        let b = finish(add(SEED, 0));
        assert_ne!(a & 0xffff, b & 0xffff);
        // order matters
        assert_ne!(add(add(SEED, 1), 2), add(add(SEED, 2), 1));
    }

    #[test]
    fn id_hasher_is_identity_on_u64() {
        let mut h = IdHasher::default();
        h.write_u64(0x1234_5678_9abc_def0);
        assert_eq!(h.finish(), 0x1234_5678_9abc_def0);
    }
}
