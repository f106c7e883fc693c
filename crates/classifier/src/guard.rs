//! Guarded lookup: matching rules offered to a guard callback one at a
//! time, in the reference scan's order, until one is accepted. See the
//! crate docs (*Guards*) for the design and the argument.

use crate::subtable::{Member, Subtable};
use crate::{Hit, Rank};
use sluice_packet::key::{FlowKey, FlowMask};

/// Cursors kept inline before spilling to the heap: one per probed
/// subtable that matched, so more than this many is rare.
const INLINE: usize = 16;

/// The rest of one subtable's matching group, not yet offered.
#[derive(Clone, Copy)]
struct Cursor<'a> {
    /// The best member not yet offered.
    head: Member,
    st: &'a Subtable,
    /// Group slot in `st`.
    g: u32,
    /// Index into `st.group_rest(g)` of the member after `head`.
    next: u32,
}

/// The matched, not yet offered candidates: one cursor per matching group
/// (at most one per subtable), in a fixed buffer, spilling into a `Vec`
/// (allocated only then) past [`INLINE`].
struct Pending<'a> {
    inline: [Option<Cursor<'a>>; INLINE],
    n: usize,
    spill: Vec<Cursor<'a>>,
}

impl<'a> Pending<'a> {
    fn new() -> Pending<'a> {
        Pending { inline: [None; INLINE], n: 0, spill: Vec::new() }
    }

    fn push(&mut self, c: Cursor<'a>) {
        if self.spill.is_empty() && self.n < INLINE {
            if let Some(slot) = self.inline.get_mut(self.n) {
                *slot = Some(c);
                self.n += 1;
                return;
            }
        }
        if self.spill.is_empty() {
            self.spill.extend(self.inline.iter_mut().take(self.n).filter_map(Option::take));
            self.n = 0;
        }
        self.spill.push(c);
    }

    /// Removes and returns the best pending candidate if it outranks
    /// `floor` (any, for `None`). Ranks are unique, so "best" is one
    /// rule; the cursor it came from moves on to the next member of its
    /// group, or goes when the group is done.
    fn pop_above(&mut self, floor: Option<Rank>) -> Option<Member> {
        if self.spill.is_empty() {
            let live = self.inline.get_mut(..self.n)?;
            let (at, head) = best_of(live.iter().flatten())?;
            if floor.is_some_and(|f| head <= f) {
                return None;
            }
            let slot = live.get_mut(at)?;
            let m = slot.as_ref()?.head;
            if !advance(slot) {
                // Keep the live cursors in `inline[..n]`.
                self.n -= 1;
                live.swap(at, self.n);
            }
            Some(m)
        } else {
            let (at, head) = best_of(self.spill.iter())?;
            if floor.is_some_and(|f| head <= f) {
                return None;
            }
            let c = self.spill.get_mut(at)?;
            let m = c.head;
            let mut slot = Some(*c);
            if advance(&mut slot) {
                if let Some(next) = slot {
                    *c = next;
                }
            } else {
                self.spill.swap_remove(at);
            }
            Some(m)
        }
    }
}

/// Position and head rank of the best cursor.
#[inline]
fn best_of<'b, 'a: 'b>(cs: impl Iterator<Item = &'b Cursor<'a>>) -> Option<(usize, Rank)> {
    cs.enumerate().map(|(i, c)| (i, c.head.rank)).max_by_key(|&(_, r)| r)
}

/// Moves a cursor to its group's next member; `false` (and the slot
/// emptied) when there is none.
#[inline]
fn advance(slot: &mut Option<Cursor<'_>>) -> bool {
    let Some(c) = slot else { return false };
    match c.st.group_rest(c.g).get(c.next as usize) {
        Some(&m) => {
            c.head = m;
            c.next += 1;
            true
        }
        None => {
            *slot = None;
            false
        }
    }
}

fn hit(m: Member) -> Hit {
    Hit { id: m.id, priority: m.rank.priority(), seq: m.rank.seq() }
}

/// The guarded lookup over subtables in probe order (best `max_rank`
/// first). Offers every rule matching `key` to `accept` in rank order
/// (the reference scan's), each at most once, and returns the first it
/// accepts. Before probing a subtable whose best rank is `r` it offers
/// every pending candidate that outranks `r`: nothing in that subtable or
/// a later one can come before them. ORs into `wc` what the probed
/// subtables consulted; subtables not reached add nothing.
pub(crate) fn lookup_guarded<'a>(
    subtables: impl Iterator<Item = (Rank, &'a Subtable)>,
    key: &FlowKey,
    wc: &mut FlowMask,
    mut accept: impl FnMut(Hit) -> bool,
) -> Option<Hit> {
    let mut pending = Pending::new();
    for (max_rank, st) in subtables {
        while let Some(m) = pending.pop_above(Some(max_rank)) {
            if accept(hit(m)) {
                return Some(hit(m));
            }
        }
        if let Some((g, head)) = st.lookup_group(key, wc) {
            pending.push(Cursor { head, st, g, next: 0 });
        }
    }
    while let Some(m) = pending.pop_above(None) {
        if accept(hit(m)) {
            return Some(hit(m));
        }
    }
    None
}
