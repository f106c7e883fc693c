//! Stage plans: which key words are checked in which lookup stage.
//!
//! A plan assigns every key word to one of at most [`MAX_STAGES`] stages.
//! A subtable checks its words stage by stage; between stages it asks
//! "does any rule here agree with the key so far?" and stops on "no". The
//! plan is data, like the key layout: the classifier never needs to know
//! what a word holds. Any plan is *correct* (a lookup's result never
//! depends on it); a plan that puts rarely-distinguishing, always-present
//! words first (metadata, then L2, L3, L4) makes misses stop early and
//! keeps the un-wildcarding mask narrow.

use sluice_packet::key::KEY_WORDS;

/// Most stages a plan may have.
pub const MAX_STAGES: usize = 8;

/// Which stage each key word belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StagePlan {
    stage_of: [u8; KEY_WORDS],
    n_stages: u8,
}

/// Why a stage plan is unusable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanError {
    /// More than [`MAX_STAGES`] stages, or none.
    StageCount,
    /// A word index is not below `KEY_WORDS`.
    WordOutOfRange(usize),
    /// A word is in no stage, or in two.
    WordCoverage(usize),
}

impl core::fmt::Display for PlanError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PlanError::StageCount => write!(f, "a stage plan needs 1..={MAX_STAGES} stages"),
            PlanError::WordOutOfRange(w) => write!(f, "key word {w} does not exist"),
            PlanError::WordCoverage(w) => write!(f, "key word {w} must be in exactly one stage"),
        }
    }
}

impl std::error::Error for PlanError {}

impl StagePlan {
    /// The plan for `sluice_packet::key::FIXED_LAYOUT`:
    ///
    /// | stage | words | fields |
    /// |---|---|---|
    /// | 0 metadata | 0, 6, 20 | in_port, in_phy_port, metadata, tunnel_id |
    /// | 1 L2 | 1, 2, 7 | eth_*, vlan_*, mpls_*, pbb_isid, presence bits |
    /// | 2 L3 | 3, 5, 8–15 | ipv4_*, ip_proto/dscp/ecn (+ sctp ports, icmpv4), ipv6_*, arp_* |
    /// | 3 L4 | 4, 16–19, 21–23 | tcp/udp ports, ipv6_nd_*, POF windows |
    ///
    /// Word 5 mixes L3 (`ip_proto`) and L4 (`sctp_*`, `icmpv4_*`) fields;
    /// it sits in L3 because `ip_proto` is what most rules look at. The
    /// presence bits (word 7) sit in L2, so an L4 rule's presence bits are
    /// consulted early; both choices only affect speed and mask width.
    pub const OXM: StagePlan = StagePlan {
        //           0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 20 21 22 23
        stage_of: [0, 1, 1, 2, 3, 2, 0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 0, 3, 3, 3],
        n_stages: 4,
    };

    /// One stage: no staged lookup (every probe hashes the whole mask).
    pub const SINGLE: StagePlan = StagePlan { stage_of: [0; KEY_WORDS], n_stages: 1 };

    /// A plan from a list of stages, each a list of word indices. Every
    /// word must appear exactly once.
    pub fn new(stages: &[&[usize]]) -> Result<StagePlan, PlanError> {
        if stages.is_empty() || stages.len() > MAX_STAGES {
            return Err(PlanError::StageCount);
        }
        let mut stage_of = [u8::MAX; KEY_WORDS];
        for (s, words) in stages.iter().enumerate() {
            for &w in *words {
                let slot = stage_of.get_mut(w).ok_or(PlanError::WordOutOfRange(w))?;
                if *slot != u8::MAX {
                    return Err(PlanError::WordCoverage(w));
                }
                *slot = s as u8;
            }
        }
        if let Some(w) = stage_of.iter().position(|&s| s == u8::MAX) {
            return Err(PlanError::WordCoverage(w));
        }
        Ok(StagePlan { stage_of, n_stages: stages.len() as u8 })
    }

    /// Stage of key word `w` (`w < KEY_WORDS`).
    pub fn stage_of(&self, w: usize) -> usize {
        self.stage_of.get(w).map_or(0, |&s| usize::from(s))
    }

    /// Number of stages.
    pub fn n_stages(&self) -> usize {
        usize::from(self.n_stages)
    }
}

impl Default for StagePlan {
    fn default() -> Self {
        StagePlan::OXM
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oxm_plan_covers_every_word_once() {
        let mut stages: Vec<Vec<usize>> = vec![Vec::new(); StagePlan::OXM.n_stages()];
        for w in 0..KEY_WORDS {
            stages[StagePlan::OXM.stage_of(w)].push(w);
        }
        let refs: Vec<&[usize]> = stages.iter().map(|v| v.as_slice()).collect();
        assert_eq!(StagePlan::new(&refs), Ok(StagePlan::OXM));
        assert_eq!(stages[0], [0, 6, 20]);
        assert_eq!(stages[1], [1, 2, 7]);
    }

    #[test]
    fn bad_plans_are_rejected() {
        let all: Vec<usize> = (0..KEY_WORDS).collect();
        assert_eq!(StagePlan::new(&[&all]), Ok(StagePlan::SINGLE));
        assert_eq!(StagePlan::new(&[]), Err(PlanError::StageCount));
        assert_eq!(StagePlan::new(&[&all[..23]]), Err(PlanError::WordCoverage(23)));
        assert_eq!(StagePlan::new(&[&all, &[3]]), Err(PlanError::WordCoverage(3)));
        assert_eq!(StagePlan::new(&[&all, &[24]]), Err(PlanError::WordOutOfRange(24)));
        let nine: Vec<&[usize]> = vec![&all; 9];
        assert_eq!(StagePlan::new(&nine), Err(PlanError::StageCount));
    }
}
