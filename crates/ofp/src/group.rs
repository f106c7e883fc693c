//! Groups and buckets (OpenFlow 1.3.5 §7.3.4.2): `enum ofp_group_type`,
//! `struct ofp_bucket` and the group capability bits.
//!
//! `OFPT_GROUP_MOD` itself lives in `message`; the group multipart bodies
//! (`OFPMP_GROUP`, `OFPMP_GROUP_DESC`, `OFPMP_GROUP_FEATURES`) live in
//! `multipart`. Both use [`Bucket`].
//!
//! Bucket layout (16 bytes, then actions):
//!
//! ```text
//!  0  len u16   2  weight u16   4  watch_port u32   8  watch_group u32
//! 12  pad[4]   16  actions…   (len includes the header and the actions)
//! ```
//!
//! Errors: a bucket whose `len` is below 16, not a multiple of 8, or runs past
//! the end of its list (including a list ending in fewer than 16 bytes) is
//! `OFPGMFC_BAD_BUCKET` ("error in bucket"). The spec says `len` includes
//! padding to 64 bits, so a length that is not a multiple of 8 is the
//! bucket's fault, not its actions'. Errors inside the action list keep the
//! action decoder's `OFPBAC_*` codes.

use crate::action::Action;
use crate::error::{ErrorCode, Result};
use crate::wire::{patch_u16, Put, Reader};

/// `enum ofp_group_type`; unknown values preserved.
///
/// `Unknown(n)` is only produced for `n > 3`; `Unknown(0..=3)` encodes as the
/// named type and decodes back as it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupType {
    All,
    Select,
    Indirect,
    FastFailover,
    Unknown(u8),
}

impl GroupType {
    pub fn from_u8(n: u8) -> GroupType {
        match n {
            0 => GroupType::All,
            1 => GroupType::Select,
            2 => GroupType::Indirect,
            3 => GroupType::FastFailover,
            n => GroupType::Unknown(n),
        }
    }

    pub fn to_u8(self) -> u8 {
        match self {
            GroupType::All => 0,
            GroupType::Select => 1,
            GroupType::Indirect => 2,
            GroupType::FastFailover => 3,
            GroupType::Unknown(n) => n,
        }
    }
}

/// `OFPGFC_*` group capability bits (in `ofp_group_features.capabilities`).
pub mod capabilities {
    pub const SELECT_WEIGHT: u32 = 1 << 0;
    pub const SELECT_LIVENESS: u32 = 1 << 1;
    pub const CHAINING: u32 = 1 << 2;
    pub const CHAINING_CHECKS: u32 = 1 << 3;
}

/// `struct ofp_bucket`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Bucket {
    pub weight: u16,
    pub watch_port: u32,
    pub watch_group: u32,
    pub actions: Vec<Action>,
}

impl Bucket {
    /// Length of the fixed part of `struct ofp_bucket`.
    pub const HEADER_LEN: usize = 16;

    /// Parse one bucket at the reader's position (see the module docs for
    /// the errors).
    pub fn parse(r: &mut Reader<'_>) -> Result<Bucket> {
        const BAD: ErrorCode = ErrorCode::GMFC_BAD_BUCKET;
        let rem = r.remaining();
        if rem < Self::HEADER_LEN {
            return Err(BAD);
        }
        let len = r.peek_u16(0).map_err(|_| BAD)? as usize;
        if len < Self::HEADER_LEN || len % 8 != 0 || len > rem {
            return Err(BAD);
        }
        let mut b = Reader::new(r.bytes(len).map_err(|_| BAD)?, BAD);
        b.skip(2)?;
        let weight = b.u16()?;
        let watch_port = b.u32()?;
        let watch_group = b.u32()?;
        b.skip(4)?;
        let actions = Action::parse_list(b.rest())?;
        Ok(Bucket { weight, watch_port, watch_group, actions })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(0);
        out.put_u16(self.weight);
        out.put_u32(self.watch_port);
        out.put_u32(self.watch_group);
        out.put_zeros(4);
        Action::emit_list(&self.actions, out);
        let len = out.len() - start;
        patch_u16(out, start, len as u16);
    }

    pub fn wire_len(&self) -> usize {
        Self::HEADER_LEN + Action::list_len(&self.actions)
    }

    /// Parse a bucket list occupying all of `buf`.
    pub fn parse_list(buf: &[u8]) -> Result<Vec<Bucket>> {
        let mut r = Reader::new(buf, ErrorCode::GMFC_BAD_BUCKET);
        let mut v = Vec::new();
        while !r.is_empty() {
            // Every successful parse consumes at least 16 bytes.
            v.push(Bucket::parse(&mut r)?);
        }
        Ok(v)
    }

    pub fn emit_list(list: &[Bucket], out: &mut Vec<u8>) {
        for b in list {
            b.emit(out);
        }
    }

    pub fn list_len(list: &[Bucket]) -> usize {
        list.iter().map(Bucket::wire_len).sum()
    }
}

/// Arbitrary action lists for bucket generators.
#[cfg(test)]
pub(crate) fn arb_actions() -> impl proptest::strategy::Strategy<Value = Vec<Action>> {
    proptest::collection::vec(crate::action::arb_action(), 0..4)
}

/// Generator of arbitrary buckets.
#[cfg(test)]
pub(crate) fn arb_bucket() -> impl proptest::strategy::Strategy<Value = Bucket> {
    use proptest::prelude::*;
    (any::<u16>(), any::<u32>(), any::<u32>(), arb_actions()).prop_map(
        |(weight, watch_port, watch_group, actions)| Bucket {
            weight,
            watch_port,
            watch_group,
            actions,
        },
    )
}

/// Generator of group types, including unknown ones (> 3).
#[cfg(test)]
pub(crate) fn arb_group_type() -> impl proptest::strategy::Strategy<Value = GroupType> {
    use proptest::prelude::*;
    prop_oneof![
        Just(GroupType::All),
        Just(GroupType::Select),
        Just(GroupType::Indirect),
        Just(GroupType::FastFailover),
        (4u8..=255).prop_map(GroupType::Unknown),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn group_type_numbers() {
        for n in 0..=255u8 {
            assert_eq!(GroupType::from_u8(n).to_u8(), n);
        }
        assert_eq!(GroupType::from_u8(3), GroupType::FastFailover);
        assert_eq!(GroupType::from_u8(9), GroupType::Unknown(9));
    }

    #[test]
    fn empty_bucket_literal() {
        let b = [
            0x00, 0x10, // len 16
            0x00, 0x05, // weight 5
            0xff, 0xff, 0xff, 0xff, // watch_port ANY
            0x00, 0x00, 0x00, 0x02, // watch_group 2
            0, 0, 0, 0, // pad
        ];
        let v = Bucket::parse_list(&b).unwrap();
        assert_eq!(
            v,
            vec![Bucket { weight: 5, watch_port: 0xffff_ffff, watch_group: 2, actions: vec![] }]
        );
        let mut out = Vec::new();
        Bucket::emit_list(&v, &mut out);
        assert_eq!(out, b);
        assert_eq!(Bucket::list_len(&v), 16);
    }

    #[test]
    fn bucket_length_errors() {
        let good = [0x00, 0x10, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0];
        // Truncated header.
        assert_eq!(Bucket::parse_list(&good[..15]), Err(ErrorCode::GMFC_BAD_BUCKET));
        // len < 16.
        let mut b = good;
        b[1] = 8;
        assert_eq!(Bucket::parse_list(&b), Err(ErrorCode::GMFC_BAD_BUCKET));
        // len 0 (must not loop).
        b[1] = 0;
        assert_eq!(Bucket::parse_list(&b), Err(ErrorCode::GMFC_BAD_BUCKET));
        // len overruns.
        b[1] = 24;
        assert_eq!(Bucket::parse_list(&b), Err(ErrorCode::GMFC_BAD_BUCKET));
        // len not a multiple of 8.
        let mut long = good.to_vec();
        long.extend_from_slice(&[0; 4]);
        long[1] = 20;
        assert_eq!(Bucket::parse_list(&long), Err(ErrorCode::GMFC_BAD_BUCKET));
        // Trailing garbage after a good bucket.
        let mut two = good.to_vec();
        two.extend_from_slice(&[0; 8]);
        assert_eq!(Bucket::parse_list(&two), Err(ErrorCode::GMFC_BAD_BUCKET));
    }

    #[test]
    fn bucket_with_output_action() {
        // OFPAT_OUTPUT port 3 max_len 0xffe5 (16 bytes).
        let b = [
            0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, 0xff, 0xff, 0xff, 0xff, 0, 0, 0,
            0, //
            0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x03, 0xff, 0xe5, 0, 0, 0, 0, 0, 0,
        ];
        let v = Bucket::parse_list(&b).unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].actions, vec![Action::Output { port: 3, max_len: 0xffe5 }]);
        let mut out = Vec::new();
        v[0].emit(&mut out);
        assert_eq!(out, b);
    }

    #[test]
    fn bad_action_inside_bucket_keeps_action_error() {
        // An action header whose len (4) is below the 8-byte minimum.
        let b = [
            0x00, 0x18, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, 0xff, 0xff, 0xff, 0xff, 0, 0, 0,
            0, //
            0x00, 0x00, 0x00, 0x04, 0, 0, 0, 0,
        ];
        let e = Bucket::parse_list(&b).unwrap_err();
        assert_eq!(e.ty, ErrorCode::BAC_BAD_LEN.ty, "{e}");
    }

    proptest! {
        #[test]
        fn bucket_round_trips(b in arb_bucket()) {
            let mut out = Vec::new();
            b.emit(&mut out);
            prop_assert_eq!(out.len(), b.wire_len());
            let v = Bucket::parse_list(&out).unwrap();
            prop_assert_eq!(v, vec![b]);
        }

        #[test]
        fn bucket_list_round_trips(l in proptest::collection::vec(arb_bucket(), 0..4)) {
            let mut out = Vec::new();
            Bucket::emit_list(&l, &mut out);
            prop_assert_eq!(out.len(), Bucket::list_len(&l));
            prop_assert_eq!(Bucket::parse_list(&out).unwrap(), l);
        }

        #[test]
        fn bucket_parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..96)) {
            let _ = Bucket::parse_list(&b);
        }
    }
}
