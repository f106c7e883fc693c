//! The group table (OpenFlow 1.3.5 §5.6, §7.3.4.2): ALL, SELECT, INDIRECT
//! and FAST_FAILOVER groups, chaining with loop detection, liveness, and
//! counters.
//!
//! Validation of a GROUP_MOD, in order: command (`OFPGMFC_BAD_COMMAND`),
//! group id in range (`OFPGMFC_INVALID_GROUP`; `OFPG_ALL` only for delete),
//! type (`OFPGMFC_BAD_TYPE`), existence (`OFPGMFC_GROUP_EXISTS` on add,
//! `OFPGMFC_UNKNOWN_GROUP` on modify), bucket count (`OFPGMFC_INVALID_GROUP`
//! for an indirect group without exactly one bucket,
//! `OFPGMFC_OUT_OF_BUCKETS` above the limit), weights (non-zero only in
//! select groups: `OFPGMFC_BAD_BUCKET`... a zero-weight select bucket is
//! legal and never chosen), watches (fast-failover buckets need a watch
//! port or group: `OFPGMFC_BAD_WATCH`; a watched group must exist:
//! `OFPGMFC_BAD_WATCH`), bucket actions (the action errors, with groups
//! that must exist: `OFPBAC_BAD_OUT_GROUP`), and chains that would loop
//! (`OFPGMFC_LOOP`). Deleting a group removes the flows that use it
//! (FLOW_REMOVED reason `GROUP_DELETE`) and is refused while another group
//! forwards to it (`OFPGMFC_CHAINED_GROUP`).

use crate::tally::{Shard, Tally};
use sluice_core::op::Op;
use sluice_ofp::action::Action;
use sluice_ofp::consts::{group_id, port_no};
use sluice_ofp::error::{ErrorCode, Result};
use sluice_ofp::group::{Bucket, GroupType};
use sluice_ofp::multipart::{BucketCounter, GroupDesc, GroupStats};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One group. Its counters (packets and bytes of the group, then of each
/// bucket) are shared by every published copy of it, one shard per worker.
#[derive(Clone, Debug)]
pub struct Group {
    pub group_type: GroupType,
    pub buckets: Vec<Bucket>,
    /// Each bucket's actions lowered to the core's ops (`lower.rs`) when
    /// the group-mod set them: what every datapath but the reference runs.
    pub(crate) ops: Arc<[Box<[Op]>]>,
    tally: Arc<Tally>,
    pub created_ns: u64,
}

impl Group {
    pub fn packet_count(&self) -> u64 {
        self.tally.sum(0)
    }

    pub fn byte_count(&self) -> u64 {
        self.tally.sum(1)
    }

    /// Per-bucket counters, merged over the workers.
    pub fn bucket_counters(&self) -> Vec<BucketCounter> {
        (0..self.buckets.len())
            .map(|i| BucketCounter {
                packet_count: self.tally.sum(2 + 2 * i),
                byte_count: self.tally.sum(3 + 2 * i),
            })
            .collect()
    }

    /// Count one packet of `bytes` through the group and its `chosen`
    /// buckets, in shard `s`.
    #[inline]
    pub(crate) fn count(&self, s: Shard, chosen: &[usize], bytes: u64) {
        self.tally.add(s, 0, 1);
        self.tally.add(s, 1, bytes);
        for &i in chosen {
            self.tally.add(s, 2 + 2 * i, 1);
            self.tally.add(s, 3 + 2 * i, bytes);
        }
    }

    /// Groups this group's buckets forward to.
    pub fn forwards_to(&self) -> impl Iterator<Item = u32> + '_ {
        self.buckets.iter().flat_map(|b| b.actions.iter()).filter_map(|a| match a {
            Action::Group(g) => Some(*g),
            _ => None,
        })
    }
}

fn lower_buckets(buckets: &[Bucket]) -> Arc<[Box<[Op]>]> {
    buckets.iter().map(|b| b.actions.iter().map(crate::lower::lower).collect()).collect()
}

#[derive(Clone, Debug)]
pub struct GroupTable {
    map: BTreeMap<u32, Group>,
    /// Counter shards of the pipeline (see `tally.rs`).
    shards: usize,
}

impl Default for GroupTable {
    fn default() -> Self {
        GroupTable::new(2)
    }
}

impl GroupTable {
    /// No groups; their counters will have `shards` shards.
    pub fn new(shards: usize) -> GroupTable {
        GroupTable { map: BTreeMap::new(), shards }
    }

    pub fn contains(&self, id: u32) -> bool {
        self.map.contains_key(&id)
    }

    pub fn get(&self, id: u32) -> Option<&Group> {
        self.map.get(&id)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (u32, &Group)> {
        self.map.iter().map(|(&k, v)| (k, v))
    }

    /// Whether following group actions from `start` reaches `target`,
    /// given `start`'s (new) buckets.
    pub fn reaches(&self, start_buckets: &[Bucket], target: u32) -> bool {
        let mut stack: Vec<u32> = start_buckets
            .iter()
            .flat_map(|b| b.actions.iter())
            .filter_map(|a| if let Action::Group(g) = a { Some(*g) } else { None })
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        while let Some(g) = stack.pop() {
            if g == target {
                return true;
            }
            if seen.insert(g) {
                if let Some(grp) = self.map.get(&g) {
                    stack.extend(grp.forwards_to());
                }
            }
        }
        false
    }

    /// How many other groups forward to `id`.
    pub fn referrers(&self, id: u32) -> usize {
        self.map.iter().filter(|(&k, g)| k != id && g.forwards_to().any(|t| t == id)).count()
    }

    /// Structural checks of a group's type and buckets (not actions).
    pub fn check_buckets(
        &self,
        id: u32,
        ty: GroupType,
        buckets: &[Bucket],
        max_buckets: usize,
    ) -> Result<()> {
        if matches!(ty, GroupType::Unknown(_)) {
            return Err(ErrorCode::GMFC_BAD_TYPE);
        }
        if buckets.len() > max_buckets {
            return Err(ErrorCode::GMFC_OUT_OF_BUCKETS);
        }
        if ty == GroupType::Indirect && buckets.len() != 1 {
            return Err(ErrorCode::GMFC_INVALID_GROUP);
        }
        for b in buckets {
            if ty != GroupType::Select && b.weight != 0 {
                return Err(ErrorCode::GMFC_BAD_BUCKET);
            }
            if ty == GroupType::FastFailover
                && b.watch_port == port_no::ANY
                && b.watch_group == group_id::ANY
            {
                return Err(ErrorCode::GMFC_BAD_WATCH);
            }
            if b.watch_group != group_id::ANY
                && (b.watch_group == id || !self.map.contains_key(&b.watch_group))
            {
                return Err(ErrorCode::GMFC_BAD_WATCH);
            }
            if b.watch_port != port_no::ANY
                && b.watch_port > port_no::MAX
                && b.watch_port != port_no::LOCAL
            {
                return Err(ErrorCode::GMFC_BAD_WATCH);
            }
        }
        if self.reaches(buckets, id) {
            return Err(ErrorCode::GMFC_LOOP);
        }
        Ok(())
    }

    pub fn insert(&mut self, id: u32, ty: GroupType, buckets: Vec<Bucket>, now_ns: u64) {
        let n = buckets.len();
        self.map.insert(
            id,
            Group {
                group_type: ty,
                ops: lower_buckets(&buckets),
                buckets,
                tally: Arc::new(Tally::new(2 + 2 * n, self.shards)),
                created_ns: now_ns,
            },
        );
    }

    /// Replace type and buckets, keeping the group's counters but resetting
    /// the per-bucket ones (buckets changed).
    pub fn modify(&mut self, id: u32, ty: GroupType, buckets: Vec<Bucket>) {
        if let Some(g) = self.map.get_mut(&id) {
            let tally = Tally::new(2 + 2 * buckets.len(), self.shards);
            tally.add(Shard::OWNER, 0, g.packet_count());
            tally.add(Shard::OWNER, 1, g.byte_count());
            g.tally = Arc::new(tally);
            g.group_type = ty;
            g.ops = lower_buckets(&buckets);
            g.buckets = buckets;
        }
    }

    pub fn remove(&mut self, id: u32) -> Option<Group> {
        self.map.remove(&id)
    }

    pub fn ids(&self) -> Vec<u32> {
        self.map.keys().copied().collect()
    }

    /// Liveness of a group (for watch_group): it has a live bucket.
    pub fn is_live(&self, id: u32, port_live: &dyn Fn(u32) -> bool, depth: usize) -> bool {
        if depth == 0 {
            return false;
        }
        self.map
            .get(&id)
            .is_some_and(|g| g.buckets.iter().any(|b| self.bucket_live(b, port_live, depth - 1)))
    }

    /// A bucket is live when it watches nothing, or when a watched port or
    /// group is live.
    pub fn bucket_live(&self, b: &Bucket, port_live: &dyn Fn(u32) -> bool, depth: usize) -> bool {
        let watches_port = b.watch_port != port_no::ANY;
        let watches_group = b.watch_group != group_id::ANY;
        if !watches_port && !watches_group {
            return true;
        }
        (watches_port && port_live(b.watch_port))
            || (watches_group && self.is_live(b.watch_group, port_live, depth))
    }

    pub fn stats(&self, id: u32, now_ns: u64, ref_count: impl Fn(u32) -> u32) -> Vec<GroupStats> {
        self.map
            .iter()
            .filter(|(&k, _)| id == group_id::ALL || k == id)
            .map(|(&k, g)| {
                let d = now_ns.saturating_sub(g.created_ns);
                GroupStats {
                    group_id: k,
                    ref_count: ref_count(k),
                    packet_count: g.packet_count(),
                    byte_count: g.byte_count(),
                    duration_sec: (d / 1_000_000_000) as u32,
                    duration_nsec: (d % 1_000_000_000) as u32,
                    bucket_stats: g.bucket_counters(),
                }
            })
            .collect()
    }

    pub fn descs(&self) -> Vec<GroupDesc> {
        self.map
            .iter()
            .map(|(&k, g)| GroupDesc {
                group_type: g.group_type,
                group_id: k,
                buckets: g.buckets.clone(),
            })
            .collect()
    }
}

/// Choose a SELECT bucket: weighted by `weight` among live buckets, by a
/// flow hash so one flow always takes one bucket. `None` if no live bucket
/// has a non-zero weight.
pub fn select_bucket(
    buckets: &[Bucket],
    live: impl Fn(&Bucket) -> bool,
    hash: u64,
) -> Option<usize> {
    let total: u64 = buckets.iter().filter(|b| live(b)).map(|b| u64::from(b.weight)).sum();
    if total == 0 {
        return None;
    }
    let mut point = hash % total;
    for (i, b) in buckets.iter().enumerate() {
        if !live(b) || b.weight == 0 {
            continue;
        }
        let w = u64::from(b.weight);
        if point < w {
            return Some(i);
        }
        point -= w;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(weight: u16, watch_port: u32, actions: Vec<Action>) -> Bucket {
        Bucket { weight, watch_port, watch_group: group_id::ANY, actions }
    }

    #[test]
    fn select_spreads_by_weight_and_skips_dead_buckets() {
        let b = vec![bucket(1, 1, vec![]), bucket(3, 2, vec![]), bucket(0, 3, vec![])];
        let mut counts = [0; 3];
        for h in 0..400u64 {
            counts[select_bucket(&b, |_| true, h).unwrap()] += 1;
        }
        assert_eq!(counts, [100, 300, 0]);
        assert_eq!(select_bucket(&b, |x| x.watch_port != 2, 7), Some(0));
        assert_eq!(select_bucket(&b, |x| x.watch_port == 3, 7), None);
    }

    #[test]
    fn loops_and_watches() {
        let mut t = GroupTable::default();
        t.insert(
            1,
            GroupType::All,
            vec![bucket(0, port_no::ANY, vec![Action::Output { port: 1, max_len: 0 }])],
            0,
        );
        t.insert(2, GroupType::All, vec![bucket(0, port_no::ANY, vec![Action::Group(1)])], 0);
        // Modifying group 1 to forward to 2 would loop.
        let looping = vec![bucket(0, port_no::ANY, vec![Action::Group(2)])];
        assert_eq!(t.check_buckets(1, GroupType::All, &looping, 8), Err(ErrorCode::GMFC_LOOP));
        let self_loop = vec![bucket(0, port_no::ANY, vec![Action::Group(3)])];
        assert_eq!(t.check_buckets(3, GroupType::All, &self_loop, 8), Err(ErrorCode::GMFC_LOOP));
        assert_eq!(t.referrers(1), 1);
        let ff = vec![bucket(0, port_no::ANY, vec![])];
        assert_eq!(
            t.check_buckets(4, GroupType::FastFailover, &ff, 8),
            Err(ErrorCode::GMFC_BAD_WATCH)
        );
        assert_eq!(
            t.check_buckets(4, GroupType::Indirect, &[], 8),
            Err(ErrorCode::GMFC_INVALID_GROUP)
        );
        assert_eq!(
            t.check_buckets(4, GroupType::All, &[bucket(5, port_no::ANY, vec![])], 8),
            Err(ErrorCode::GMFC_BAD_BUCKET)
        );
        assert_eq!(
            t.check_buckets(4, GroupType::Unknown(9), &[], 8),
            Err(ErrorCode::GMFC_BAD_TYPE)
        );
    }

    #[test]
    fn liveness_follows_watches() {
        let mut t = GroupTable::default();
        t.insert(1, GroupType::FastFailover, vec![bucket(0, 5, vec![]), bucket(0, 6, vec![])], 0);
        let live = |p: u32| p == 6;
        assert!(t.is_live(1, &live, 8));
        assert!(!t.is_live(1, &|_| false, 8));
        let b = Bucket { weight: 0, watch_port: port_no::ANY, watch_group: 1, actions: vec![] };
        assert!(t.bucket_live(&b, &live, 8));
    }
}
