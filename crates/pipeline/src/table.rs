//! Flow tables of the reference pipeline: a priority-sorted vector scanned
//! linearly.
//!
//! This is deliberately the simplest correct structure (BOFUSS's linear
//! list, but with matches compiled to key words): it *defines* lookup
//! semantics for the fast paths, which are tested against it. Ties between
//! overlapping entries of equal priority — which the spec leaves undefined —
//! are broken by insertion order (the older entry wins), so the reference
//! is deterministic.

use crate::rule::Rule;
use sluice_ofp::instruction::Instruction;
use sluice_ofp::oxm::Match;
use sluice_packet::key::FlowKey;

/// One flow entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowEntry {
    pub rule: Rule,
    /// The match as the controller sent it (echoed in replies).
    pub r#match: Match,
    pub priority: u16,
    pub cookie: u64,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    /// `OFPFF_*` flags.
    pub flags: u16,
    pub instructions: Vec<Instruction>,
    /// Pipeline time (ns) when installed (or last replaced by ADD).
    pub installed_ns: u64,
    /// Pipeline time (ns) of the last packet, or of installation.
    pub last_used_ns: u64,
    pub packet_count: u64,
    pub byte_count: u64,
    /// Insertion sequence number: breaks priority ties, oldest first.
    pub seq: u64,
}

impl FlowEntry {
    /// A table-miss entry: priority 0 and no match fields.
    pub fn is_table_miss(&self) -> bool {
        self.priority == 0 && self.rule.is_catch_all()
    }
}

/// One flow table.
#[derive(Clone, Debug)]
pub struct FlowTable {
    /// Sorted by priority (highest first), then by `seq` (oldest first).
    entries: Vec<FlowEntry>,
    pub max_entries: usize,
    pub lookup_count: u64,
    pub matched_count: u64,
    /// `OFPTC_*` config bits set by TABLE_MOD (all deprecated in 1.3; kept
    /// for reporting).
    pub config: u32,
}

impl FlowTable {
    pub fn new(max_entries: usize) -> Self {
        FlowTable { entries: Vec::new(), max_entries, lookup_count: 0, matched_count: 0, config: 0 }
    }

    pub fn entries(&self) -> &[FlowEntry] {
        &self.entries
    }

    pub fn entries_mut(&mut self) -> &mut [FlowEntry] {
        &mut self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.max_entries
    }

    /// Index of the entry a packet with `key` hits: the first (highest
    /// priority, oldest) matching entry.
    pub fn lookup(&self, key: &FlowKey) -> Option<usize> {
        self.entries.iter().position(|e| e.rule.matches(key))
    }

    /// Index of the entry with exactly this rule and priority.
    pub fn find_strict(&self, rule: &Rule, priority: u16) -> Option<usize> {
        self.entries.iter().position(|e| e.priority == priority && e.rule == *rule)
    }

    /// Insert keeping the order invariant.
    pub fn insert(&mut self, e: FlowEntry) {
        let at = self
            .entries
            .partition_point(|x| (x.priority, u64::MAX - x.seq) > (e.priority, u64::MAX - e.seq));
        self.entries.insert(at, e);
    }

    /// Remove the entries for which `f` is true; returns them in table order.
    pub fn remove_where(&mut self, mut f: impl FnMut(&FlowEntry) -> bool) -> Vec<FlowEntry> {
        let mut removed = Vec::new();
        let mut kept = Vec::with_capacity(self.entries.len());
        for e in self.entries.drain(..) {
            if f(&e) {
                removed.push(e);
            } else {
                kept.push(e);
            }
        }
        self.entries = kept;
        removed
    }

    /// Replace the entry at `i` (same rule and priority, so order holds).
    pub fn replace(&mut self, i: usize, e: FlowEntry) {
        debug_assert!(self.entries[i].priority == e.priority);
        self.entries[i] = e;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(priority: u16, seq: u64) -> FlowEntry {
        FlowEntry {
            rule: Rule::ANY,
            r#match: Match::default(),
            priority,
            cookie: seq,
            idle_timeout: 0,
            hard_timeout: 0,
            flags: 0,
            instructions: vec![],
            installed_ns: 0,
            last_used_ns: 0,
            packet_count: 0,
            byte_count: 0,
            seq,
        }
    }

    #[test]
    fn ordered_by_priority_then_age() {
        let mut t = FlowTable::new(10);
        for (p, s) in [(5, 1), (10, 2), (5, 3), (0, 4), (10, 5)] {
            t.insert(entry(p, s));
        }
        let order: Vec<_> = t.entries().iter().map(|e| (e.priority, e.seq)).collect();
        assert_eq!(order, [(10, 2), (10, 5), (5, 1), (5, 3), (0, 4)]);
        assert_eq!(t.lookup(&FlowKey::ZERO), Some(0));
        assert!(t.entries()[4].is_table_miss());
        let gone = t.remove_where(|e| e.priority == 5);
        assert_eq!(gone.len(), 2);
        assert_eq!(t.len(), 3);
    }
}
