//! A match compiled to key words: `(key & mask) == value`.
//!
//! Matches are compiled once, at flow-mod time, into a [`FlowMask`] and a
//! pre-masked [`FlowKey`] using the OXM key layout. Everything the tables
//! need — lookup, overlap checks, strict and non-strict comparison — is a
//! word-wise operation on these, so it does not depend on which fields
//! exist. The original [`Match`] is kept beside it for replies (flow stats,
//! FLOW_REMOVED), which must echo what the controller sent.
//!
//! Word-level meaning (for each word `i`; a field-level statement holds
//! because distinct fields occupy disjoint bits, see `sluice_packet::key`):
//! - *matches*: `key & m == v`.
//! - *overlap* (some packet could match both): `(v1 ^ v2) & m1 & m2 == 0`.
//! - *identical* (strict): `m1 == m2 && v1 == v2`.
//! - *covers* (non-strict: rule `r` is selected by request `q`, i.e. every
//!   packet matching `r` also matches `q`): `q.m & !r.m == 0` and
//!   `(r.v ^ q.v) & q.m == 0`.

use sluice_ofp::error::{ErrorCode, Result};
use sluice_ofp::oxm::{Match, Oxm};
use sluice_packet::key::{FlowKey, FlowMask, KeyError, FIXED_LAYOUT, KEY_WORDS};

/// A compiled match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    pub mask: FlowMask,
    pub value: FlowKey,
}

impl Rule {
    /// The rule that matches every packet.
    pub const ANY: Rule = Rule { mask: FlowMask::ZERO, value: FlowKey::ZERO };

    /// Compile an OpenFlow match. Checks what the layout can check
    /// (values wider than the field: `OFPBMC_BAD_VALUE`; value bits outside
    /// the mask: `OFPBMC_BAD_WILDCARDS`) and rejects experimenter and
    /// non-basic classes, which the reference pipeline does not match on
    /// (`OFPBMC_BAD_FIELD`). Prerequisites are the caller's
    /// ([`Match::check_prereqs`]).
    pub fn compile(m: &Match) -> Result<Rule> {
        let mut r = Rule::ANY;
        for oxm in &m.oxms {
            r.add_basic(oxm)?;
        }
        Ok(r)
    }

    /// Add one basic field to the rule ([`Rule::compile`]'s step; the
    /// pipeline's `compile_match` adds `pof` fields between them).
    pub fn add_basic(&mut self, oxm: &Oxm) -> Result<()> {
        match oxm {
            Oxm::Basic { field, value, mask } => FIXED_LAYOUT
                .add_match(
                    &mut self.value,
                    &mut self.mask,
                    crate::oxm_field::field(*field),
                    value.as_slice(),
                    mask.as_ref().map(|m| m.as_slice()),
                )
                .map_err(|e| match e {
                    KeyError::BadLength => ErrorCode::BMC_BAD_LEN,
                    KeyError::BadValue => ErrorCode::BMC_BAD_VALUE,
                    KeyError::ValueOutsideMask => ErrorCode::BMC_BAD_WILDCARDS,
                }),
            Oxm::Experimenter { .. } | Oxm::Other { .. } => Err(ErrorCode::BMC_BAD_FIELD),
        }
    }

    #[inline]
    pub fn matches(&self, key: &FlowKey) -> bool {
        key.matches(&self.mask, &self.value)
    }

    /// Whether some packet could match both rules.
    pub fn overlaps(&self, other: &Rule) -> bool {
        (0..KEY_WORDS).all(|i| {
            (self.value.words[i] ^ other.value.words[i]) & self.mask.words[i] & other.mask.words[i]
                == 0
        })
    }

    /// Whether every packet matching `rule` also matches `self` (the
    /// non-strict selection of modify/delete/stats requests).
    pub fn covers(&self, rule: &Rule) -> bool {
        (0..KEY_WORDS).all(|i| {
            self.mask.words[i] & !rule.mask.words[i] == 0
                && (rule.value.words[i] ^ self.value.words[i]) & self.mask.words[i] == 0
        })
    }

    /// Whether this is the match-everything rule (a table-miss entry when at
    /// priority 0).
    pub fn is_catch_all(&self) -> bool {
        self.mask.is_zero()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_ofp::oxm::{FieldBytes, FieldId};

    fn m(fields: &[(FieldId, u128, Option<u128>)]) -> Match {
        Match {
            oxms: fields
                .iter()
                .map(|&(f, v, mk)| Oxm::Basic {
                    field: f,
                    value: FieldBytes::from_u128(v, f.len()),
                    mask: mk.map(|mk| FieldBytes::from_u128(mk, f.len())),
                })
                .collect(),
        }
    }

    #[test]
    fn relations() {
        let ip = m(&[(FieldId::EthType, 0x800, None)]);
        let net8 = m(&[
            (FieldId::EthType, 0x800, None),
            (FieldId::Ipv4Dst, 0x0a00_0000, Some(0xff00_0000)),
        ]);
        let host = m(&[(FieldId::EthType, 0x800, None), (FieldId::Ipv4Dst, 0x0a01_0203, None)]);
        let other = m(&[
            (FieldId::EthType, 0x800, None),
            (FieldId::Ipv4Dst, 0x0b00_0000, Some(0xff00_0000)),
        ]);
        let [ip, net8, host, other] = [ip, net8, host, other].map(|x| Rule::compile(&x).unwrap());
        assert!(ip.covers(&net8) && net8.covers(&host) && ip.covers(&host));
        assert!(!host.covers(&net8) && !net8.covers(&ip));
        assert!(Rule::ANY.covers(&host) && Rule::ANY.is_catch_all());
        assert!(net8.overlaps(&host) && ip.overlaps(&other) && !net8.overlaps(&other));
        assert_eq!(Rule::compile(&Match::default()).unwrap(), Rule::ANY);
    }

    #[test]
    fn compile_errors_map_to_match_errors() {
        let bad_wild = m(&[
            (FieldId::EthType, 0x800, None),
            (FieldId::Ipv4Dst, 0x0a00_0001, Some(0xff00_0000)),
        ]);
        assert_eq!(Rule::compile(&bad_wild), Err(ErrorCode::BMC_BAD_WILDCARDS));
        let bad_val = m(&[(FieldId::VlanVid, 0x2000, None)]);
        assert_eq!(Rule::compile(&bad_val), Err(ErrorCode::BMC_BAD_VALUE));
        let exp = Match {
            oxms: vec![Oxm::Other { class: 1, field: 2, has_mask: false, payload: vec![0; 4] }],
        };
        assert_eq!(Rule::compile(&exp), Err(ErrorCode::BMC_BAD_FIELD));
    }
}
