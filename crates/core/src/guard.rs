//! Guards: predicates a rule carries, evaluated after its mask/value match.
//!
//! # What
//! A rule may carry guards (eBPF filter programs and pcap-filter
//! expressions are the front ends' guards). When a rule's mask/value match
//! succeeds, its guards run in the order the rule lists them and stop at
//! the first that fails; a rule whose guards all pass is a hit, otherwise
//! the lookup goes on to the next candidate in priority order. Guards may
//! have side effects (a filter program updating a map), so the order in
//! which they run is semantics, defined in ARCHITECTURE.md ("Guard
//! semantics") and kept by every lookup structure.
//!
//! # What a guard sees
//! The frame as it is at the lookup (earlier tables' edits included) and
//! the ingress port ([`GuardInput`]). Not the key: a guard is a predicate
//! on packet bytes, which is what filter programs and pcap-filter
//! expressions are.
//!
//! # Recording and replay
//! Every guard evaluation of one packet goes through an [`Answers`]: it
//! records the ordered `(tag, result)` chain a cache entry keeps (the tag
//! says where the guard sits), and it can be *primed* with results already
//! computed for this packet, which it hands back instead of running the
//! guard again. A cache hit re-runs its entry's chain up front
//! ([`Answers::recheck`]); that is exact because an entry records guard
//! results only while the frame is still the one received (the front end
//! stops recording before a guarded lookup that follows an edit). If a
//! result differs, the packet takes the slow path with the answers
//! computed so far primed, so the slow path, which offers the same
//! candidates in the same order, reuses them and no guard runs twice for
//! one packet.
//!
//! # Invariants
//! - A guard id names one guard for the lifetime of the rules that carry
//!   it (the front end assigns ids); a tag names one guard position for
//!   the lifetime of a cache entry.
//! - [`Answers::ask`] runs a guard at most once per packet for each
//!   primed position.

use std::fmt::Debug;
use std::sync::Arc;

/// What a guard sees of a packet.
#[derive(Clone, Copy, Debug)]
pub struct GuardInput<'a> {
    /// The frame's bytes as they are at this lookup.
    pub frame: &'a [u8],
    /// The ingress port.
    pub in_port: u32,
    /// When and on which worker the guard runs.
    pub at: GuardAt,
}

/// When and where a guard runs: the pipeline clock's reading for the
/// packet's burst (a filter program's `bpf_ktime_get_ns`, so runs are
/// reproducible) and the worker's shard index (per-worker map slabs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GuardAt {
    pub now_ns: u64,
    pub worker: usize,
    /// A dry run (a trace): the guard must leave its state (maps) as it
    /// found it, answering as a real run would.
    pub dry: bool,
}

/// A predicate on a packet, run after a rule's mask/value match.
pub trait Guard: Send + Sync + Debug {
    /// The guard's identity (see the module invariants).
    fn id(&self) -> u64;
    /// Whether the rule may match this packet. May change the guard's own
    /// state (maps), except in a dry run (`input.at.dry`); must not panic.
    fn eval(&self, input: &GuardInput<'_>) -> bool;
    /// How a trace names the guard (the front end's syntax for it).
    fn describe(&self) -> String {
        format!("guard {:#x}", self.id())
    }
    /// [`Guard::eval`] for a trace: the result and, one line each, what
    /// the run changed in the guard's state (none by default). Slower
    /// than `eval`; only traces call it.
    fn eval_traced(&self, input: &GuardInput<'_>) -> (bool, Vec<String>) {
        (self.eval(input), Vec::new())
    }
}

/// The guards of one rule, in evaluation order (shared by the rule's
/// copies in published versions).
pub type Guards = Arc<[Arc<dyn Guard>]>;

/// No guards.
pub fn no_guards() -> Guards {
    Arc::new([])
}

/// A rule's guards, compared and printed by id (no guards: no
/// allocation).
#[derive(Clone, Default)]
pub struct GuardSet(Option<Guards>);

impl GuardSet {
    /// These guards, in evaluation order (none: [`GuardSet::default`]).
    pub fn new(guards: Vec<Arc<dyn Guard>>) -> GuardSet {
        if guards.is_empty() {
            GuardSet(None)
        } else {
            GuardSet(Some(guards.into()))
        }
    }
    /// The guards in evaluation order.
    pub fn as_slice(&self) -> &[Arc<dyn Guard>] {
        self.0.as_deref().unwrap_or(&[])
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }
}

impl PartialEq for GuardSet {
    fn eq(&self, other: &GuardSet) -> bool {
        let (a, b) = (self.as_slice(), other.as_slice());
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.id() == y.id())
    }
}

impl Eq for GuardSet {}

impl Debug for GuardSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice().iter().map(|g| g.id())).finish()
    }
}

/// Most guard results one packet records; a packet that runs more guards
/// still gets exact results, but its walk is not cached.
pub const MAX_CHAIN: usize = 16;

/// The guard results of one packet, in evaluation order, as
/// `(tag, result)` pairs (see [`Answers::ask`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Chain {
    len: u8,
    overflow: bool,
    items: [(u64, bool); MAX_CHAIN],
}

impl Chain {
    /// The recorded `(tag, result)` pairs.
    pub fn items(&self) -> &[(u64, bool)] {
        &self.items[..usize::from(self.len)]
    }
    /// Keeps the first `n` results.
    pub fn truncate(&mut self, n: usize) {
        if n < usize::from(self.len) {
            self.len = n as u8;
            self.overflow = false;
        }
    }
    /// Whether more results were seen than a chain holds.
    pub fn overflowed(&self) -> bool {
        self.overflow
    }
    /// Appends a result (past [`MAX_CHAIN`] only marks the overflow).
    pub(crate) fn push(&mut self, item: (u64, bool)) {
        match self.items.get_mut(usize::from(self.len)) {
            Some(slot) => {
                *slot = item;
                self.len += 1;
            }
            None => self.overflow = true,
        }
    }
}

/// Guard evaluation for one packet: records the chain, replays primed
/// results.
#[derive(Clone, Debug, Default)]
pub struct Answers {
    seen: Chain,
    primed: Chain,
    next: usize,
}

impl Answers {
    /// Starts a packet with no known results.
    pub fn new() -> Answers {
        Answers::default()
    }

    /// Starts a packet whose first guard results are already known (a
    /// cache hit's recheck that diverged).
    pub fn primed(known: Chain) -> Answers {
        Answers { seen: Chain::default(), primed: known, next: 0 }
    }

    /// The result of `g` on `input`: the primed result if the next primed
    /// position carries `tag`, otherwise `g` runs. Recorded as
    /// `(tag, result)` either way. The tag names where the guard sits (the
    /// caller's choice: the OpenFlow front end uses table, entry position
    /// and index, stable within a flow generation).
    pub fn ask(&mut self, tag: u64, g: &dyn Guard, input: &GuardInput<'_>) -> bool {
        self.ask_with(tag, g, |g| g.eval(input))
    }

    fn ask_with(&mut self, tag: u64, g: &dyn Guard, eval: impl FnOnce(&dyn Guard) -> bool) -> bool {
        let id = tag;
        let r = match self.primed.items().get(self.next) {
            Some(&(pid, r)) if pid == id => {
                self.next += 1;
                r
            }
            _ => {
                // A different guard where a primed one was expected would
                // mean the slow path offered candidates in another order;
                // stop replaying rather than hand out a wrong result.
                self.next = usize::MAX;
                eval(g)
            }
        };
        self.seen.push((id, r));
        r
    }

    /// Runs a rule's guards in order, stopping at the first that fails;
    /// guard `i` is asked with tag `tag(i)`.
    pub fn all(
        &mut self,
        guards: &[Arc<dyn Guard>],
        tag: impl Fn(usize) -> u64,
        input: &GuardInput<'_>,
    ) -> bool {
        self.all_with(guards, tag, |g| g.eval(input))
    }

    /// [`Answers::all`] with `eval` running a guard whose result is not
    /// primed (a trace's, to see each run).
    pub fn all_with(
        &mut self,
        guards: &[Arc<dyn Guard>],
        tag: impl Fn(usize) -> u64,
        mut eval: impl FnMut(&dyn Guard) -> bool,
    ) -> bool {
        guards.iter().enumerate().all(|(i, g)| self.ask_with(tag(i), &**g, &mut eval))
    }

    /// What this packet's guards returned so far, in order.
    pub fn chain(&self) -> &Chain {
        &self.seen
    }

    /// A cache hit's check: re-runs the guards of `recorded` in order, and
    /// stops at the first whose result differs. `None` if every result is
    /// the recorded one; otherwise the results computed (to prime the slow
    /// path): the recorded ones before the difference, then the new one.
    /// Guards are looked up by position and tag in `find` (one it cannot
    /// resolve counts as a difference, with no result for it). The first
    /// `from` results are taken as known to hold (the caller computed them
    /// for this packet) and not run again. The common case writes nothing:
    /// the chain is built only when a result changed.
    pub fn recheck<'g>(
        recorded: &Chain,
        from: usize,
        find: impl Fn(usize, u64) -> Option<&'g dyn Guard>,
        input: &GuardInput<'_>,
    ) -> Option<Chain> {
        for (i, &(id, want)) in recorded.items().iter().enumerate().skip(from) {
            let got = find(i, id).map(|g| g.eval(input));
            if got != Some(want) {
                let mut fresh = *recorded;
                fresh.truncate(i);
                if let Some(got) = got {
                    fresh.push((id, got));
                }
                return Some(fresh);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    /// Accepts every `period`-th call; counts its calls.
    #[derive(Debug)]
    struct Every {
        id: u64,
        period: u64,
        calls: AtomicU64,
    }

    impl Guard for Every {
        fn id(&self) -> u64 {
            self.id
        }
        fn eval(&self, _: &GuardInput<'_>) -> bool {
            self.calls.fetch_add(1, Relaxed) % self.period == 0
        }
    }

    fn input() -> GuardInput<'static> {
        GuardInput { frame: &[], in_port: 1, at: GuardAt::default() }
    }

    #[test]
    fn a_primed_result_is_not_computed_again() {
        let g = Every { id: 7, period: 2, calls: AtomicU64::new(0) };
        let mut a = Answers::new();
        assert!(a.ask(7, &g, &input()));
        assert_eq!(a.chain().items(), &[(7, true)]);
        // The recorded chain says true; the guard now says false.
        let fresh =
            Answers::recheck(a.chain(), 0, |_, id| (id == 7).then_some(&g as &dyn Guard), &input())
                .expect("a changed result");
        assert_eq!(fresh.items(), &[(7, false)]);
        assert_eq!(g.calls.load(Relaxed), 2);
        // The slow path gets the fresh result without a third call.
        let mut b = Answers::primed(fresh);
        assert!(!b.ask(7, &g, &input()));
        assert_eq!(g.calls.load(Relaxed), 2);
        // Past the primed results the guard runs.
        assert!(b.ask(7, &g, &input()));
        assert_eq!(g.calls.load(Relaxed), 3);
        assert_eq!(b.chain().items(), &[(7, false), (7, true)]);
    }

    #[test]
    fn all_stops_at_the_first_failure_and_chains_overflow_cleanly() {
        let yes: Arc<dyn Guard> = Arc::new(Every { id: 1, period: 1, calls: AtomicU64::new(0) });
        let no: Arc<dyn Guard> =
            Arc::new(Every { id: 2, period: u64::MAX, calls: AtomicU64::new(1) });
        let mut a = Answers::new();
        assert!(!a.all(&[yes.clone(), no.clone(), yes.clone()], |i| i as u64 + 1, &input()));
        assert_eq!(a.chain().items(), &[(1, true), (2, false)]);
        assert_eq!(GuardSet::new(vec![yes.clone()]), GuardSet::new(vec![yes.clone()]));
        assert_ne!(GuardSet::new(vec![yes.clone()]), GuardSet::new(vec![no.clone()]));
        assert!(GuardSet::new(vec![]).is_empty());
        for _ in 0..MAX_CHAIN {
            a.ask(9, &*yes, &input());
        }
        assert!(a.chain().overflowed());
        assert_eq!(a.chain().items().len(), MAX_CHAIN);
    }
}
