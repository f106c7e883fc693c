//! Publishing a pipeline to forwarding threads: one writer, many readers,
//! no lock on the read side.
//!
//! ## What
//! A [`Publisher`] owns the *master* pipeline (any [`Replicated`] value;
//! the OpenFlow front end publishes `sluice_pipeline::Pipeline`), the one
//! controller messages change (`&mut`), and two *copies* of it. One copy
//! is current: workers get it from a [`Published`] handle once per burst
//! ([`Published::load`]: an `arc-swap` load, no lock, no refcount traffic in
//! the common case) and forward through it. [`Publisher::publish`] brings the other copy
//! up to date and swaps it in; [`Publisher::wait_readers`] waits until no
//! worker still reads an older version, which is what a BARRIER_REPLY
//! needs: every packet after it sees every earlier change
//! ([`Publisher::publish_and_wait`] does both, with a bounded wait).
//!
//! ## Design (left-right)
//! Copying a 100k-entry table for every publication would make flow-mods
//! O(table size). Instead the master logs its changes (the pipeline's flow
//! tables keep a log of `TableOp`s) and a publication replays
//! ([`Replicated::sync_copy`]), on the copy being brought up to
//! date, the changes it missed: those of this publication and of the one
//! before (which only the other copy saw). Before replaying, the publisher
//! waits until no worker holds that copy (`Arc::get_mut` succeeds; after
//! `ArcSwap::swap` every outstanding reader of the old value holds a real
//! reference, so the count is exact). Workers hold a copy for one burst
//! only, so the wait is short; if it is not (a descheduled worker), after
//! [`WAIT_LIMIT`] the publisher gives up on that copy and publishes a fresh
//! full replica instead — slower, never wrong. Everything that is not a
//! flow table (groups, meters, ports, configuration) is small and copied
//! whole. Counters, meter state and PACKET_IN buffers are not copied: they
//! are shared cells ([`crate::tally`], `Arc<Mutex<…>>`) that every copy and
//! the master point to, so nothing is counted twice or lost across versions.
//!
//! ## Readers of old versions
//! A reader's marker is its reference to the copy it loaded (an
//! `arc-swap` guard, made a real `Arc` count by the swap that retires the
//! copy). The publisher can name every copy that may still have readers
//! of an older version: the back copy (the version before the current
//! one; the publisher holds one reference itself) and the copies it gave
//! up on in a fallback (*retired*: kept as `Weak` only, freed when their
//! last reader lets go). [`Publisher::old_readers`] adds up those counts;
//! zero means no thread reads anything but the current version. Because
//! the marker is a reference owned by the reader's own stack frame, a
//! reader that leaves its burst in any way — returns, or panics and
//! unwinds — gives it back; a thread that is blocked elsewhere (e.g. in
//! `poll(2)` between bursts) holds none. Only a reader that stays inside
//! its burst keeps an old version alive, and waiting for it is exactly
//! the point.
//!
//! ## Invariants
//! - Each copy, once synced, equals the master as it was at that
//!   publication (same entries in the same order, same indexes): the
//!   replay is deterministic because ops name entries by (priority, seq).
//! - Workers switch versions only between bursts (they load once per
//!   burst).
//! - `version()` grows by one per publication; when
//!   [`Publisher::wait_readers`] returns true no reader of an older
//!   version remains (including readers of a retired copy), until the
//!   next publication.

use arc_swap::ArcSwap;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::sync::atomic::{fence, AtomicU64};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// What a published value offers the publisher: copies, and bringing a
/// copy up to date by replaying the master's logged changes.
pub trait Replicated: Sized {
    /// Brings derived state up to date before copies are made or synced
    /// (indexes, installed code).
    fn settle(&mut self);
    /// Starts logging changes for the two copies.
    fn start_logs(&mut self);
    /// A full copy of the current state (shared cells stay shared).
    fn replica(&self) -> Self;
    /// Brings `copy`, a replica this value has been syncing since it was
    /// made, up to date with the current state.
    fn sync_copy(&mut self, copy: &mut Self);
    /// A fresh replica replaced the copy due for syncing: the changes
    /// logged since the last publication are owed to the other copy only.
    fn logs_skip_copy(&mut self);
    /// Whether a publication has something to publish although nothing
    /// was changed through [`Publisher::master_mut`] (code built in the
    /// background waiting to be installed).
    fn publish_pending(&self) -> bool {
        false
    }
}

/// Longest wait for the readers of a copy before publishing a fresh
/// replica instead.
pub const WAIT_LIMIT: Duration = Duration::from_millis(250);

/// The workers' side: the current published copy.
#[derive(Debug)]
pub struct Published<T> {
    current: ArcSwap<T>,
    version: AtomicU64,
}

impl<T> Published<T> {
    /// The current copy (hold it for one burst, then drop it).
    #[inline]
    pub fn load(&self) -> arc_swap::Guard<Arc<T>> {
        self.current.load()
    }

    /// The current copy as a counted reference (tests, tools; a worker
    /// uses [`Published::load`]).
    pub fn load_full(&self) -> Arc<T> {
        self.current.load_full()
    }

    /// Number of publications so far.
    pub fn version(&self) -> u64 {
        self.version.load(Acquire)
    }
}

/// The control side: the master pipeline and the copy being prepared.
#[derive(Debug)]
pub struct Publisher<T> {
    master: T,
    published: Arc<Published<T>>,
    /// The copy that is not current (`None` only transiently).
    back: Option<Arc<T>>,
    dirty: bool,
    /// Publications that had to fall back to a full replica.
    fallbacks: u64,
    /// Copies given up on by a fallback while a reader still held them
    /// (no longer ours; alive until their last reader lets go). Pruned at
    /// every publication, so it holds at most one entry per stuck reader.
    retired: Vec<Weak<T>>,
}

impl<T: Replicated> Publisher<T> {
    /// Starts publishing `master`: both copies are made from it as it is.
    pub fn new(mut master: T) -> Publisher<T> {
        master.settle();
        master.start_logs();
        let front = Arc::new(master.replica());
        let back = Some(Arc::new(master.replica()));
        Publisher {
            master,
            published: Arc::new(Published {
                current: ArcSwap::new(front),
                version: AtomicU64::new(0),
            }),
            back,
            dirty: false,
            fallbacks: 0,
            retired: Vec::new(),
        }
    }

    /// The handle workers read from.
    pub fn published(&self) -> Arc<Published<T>> {
        self.published.clone()
    }

    /// The master, for reading.
    pub fn master(&self) -> &T {
        &self.master
    }

    /// The master, for changing; the change reaches workers with the next
    /// publication.
    pub fn master_mut(&mut self) -> &mut T {
        self.dirty = true;
        &mut self.master
    }

    /// The master, for a change workers need not see (taking queued
    /// asynchronous messages): the next publication is not forced.
    pub fn master_unpublished(&mut self) -> &mut T {
        &mut self.master
    }

    /// Publications that fell back to a full replica (a worker held a
    /// copy longer than [`WAIT_LIMIT`]).
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks
    }

    /// Makes the master's current state the published one (if it changed)
    /// and returns the version number. Does not wait for workers still
    /// reading the previous version.
    pub fn publish(&mut self) -> u64 {
        if !self.dirty && !self.master.publish_pending() {
            return self.published.version();
        }
        self.dirty = false;
        self.retired.retain(|w| w.strong_count() > 0);
        self.master.settle();
        let mut copy = self.back.take().unwrap_or_else(|| Arc::new(self.master.replica()));
        let synced = match wait_exclusive(&mut copy, WAIT_LIMIT) {
            Some(c) => {
                self.master.sync_copy(c);
                true
            }
            None => false,
        };
        if !synced {
            self.fallbacks += 1;
            // A reader still forwards with this copy: remember it, so a
            // barrier waits for that reader too (it is not the back copy
            // any more).
            self.retired.push(Arc::downgrade(&copy));
            copy = Arc::new(self.master.replica());
            self.master.logs_skip_copy();
        }
        let old = self.published.current.swap(copy);
        self.back = Some(old);
        self.published.version.fetch_add(1, Release) + 1
    }

    /// [`Publisher::publish`], then waits until no worker reads an older
    /// version (bounded by [`WAIT_LIMIT`]; returns whether that held).
    pub fn publish_and_wait(&mut self) -> bool {
        self.publish();
        self.wait_readers(WAIT_LIMIT)
    }

    /// References readers still hold to versions older than the current
    /// one: to the back copy and to retired copies (see the module docs).
    pub fn old_readers(&self) -> usize {
        let back = self.back.as_ref().map_or(0, |b| Arc::strong_count(b).saturating_sub(1));
        back + self.retired.iter().map(Weak::strong_count).sum::<usize>()
    }

    /// Waits until no reader holds a version older than the current one
    /// ([`Publisher::old_readers`] is zero), for at most `limit`; returns
    /// whether that holds. A caller that must not give up (a barrier)
    /// calls it again; nothing is lost between calls. While the caller
    /// holds `&mut self` no publication can happen, so the copies waited
    /// for cannot become current again meanwhile.
    pub fn wait_readers(&mut self, limit: Duration) -> bool {
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            if self.old_readers() == 0 {
                // Pairs with the `Release` decrement of each reader's
                // drop: everything a reader did inside its burst (e.g.
                // transmitting) happens before what the caller does next.
                fence(Acquire);
                self.retired.clear();
                return true;
            }
            if start.elapsed() >= limit {
                return false;
            }
            spins += 1;
            if spins < 64 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }
}

/// Waits until `a` has no other holder; `None` after `limit`.
fn wait_exclusive<T>(a: &mut Arc<T>, limit: Duration) -> Option<&mut T> {
    let start = Instant::now();
    let mut spins = 0u32;
    while Arc::get_mut(a).is_none() {
        if start.elapsed() >= limit {
            return None;
        }
        spins += 1;
        if spins < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    Arc::get_mut(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest publishable value: a number, copied whole.
    #[derive(Debug)]
    struct Toy(u64);

    impl Replicated for Toy {
        fn settle(&mut self) {}
        fn start_logs(&mut self) {}
        fn replica(&self) -> Toy {
            Toy(self.0)
        }
        fn sync_copy(&mut self, copy: &mut Toy) {
            copy.0 = self.0;
        }
        fn logs_skip_copy(&mut self) {}
    }

    #[test]
    fn workers_see_a_change_after_its_publication() {
        let mut p = Publisher::new(Toy(1));
        let pubd = p.published();
        p.master_mut().0 = 2;
        assert_eq!(pubd.load().0, 1);
        assert_eq!(p.publish(), 1);
        assert_eq!(pubd.load().0, 2);
        // Nothing changed: no new version.
        assert_eq!(p.publish(), 1);
        p.master_unpublished().0 = 3;
        assert_eq!(p.publish(), 1);
        assert_eq!(pubd.version(), 1);
    }

    #[test]
    fn a_reader_holding_the_old_version_delays_nothing_but_its_own_copy() {
        let mut p = Publisher::new(Toy(0));
        let pubd = p.published();
        let v0 = pubd.load_full();
        p.master_mut();
        assert_eq!(p.publish(), 1);
        // The reader still holds version 0; the next publication cannot
        // reuse that copy and falls back to a fresh one.
        p.master_mut();
        let start = Instant::now();
        assert_eq!(p.publish(), 2);
        assert!(start.elapsed() >= WAIT_LIMIT);
        assert_eq!(p.fallbacks(), 1);
        drop(v0);
        p.master_mut();
        assert!(p.publish_and_wait());
        assert_eq!(p.fallbacks(), 1);
    }

    #[test]
    fn waiting_covers_a_reader_of_the_back_copy() {
        let mut p = Publisher::new(Toy(0));
        let pubd = p.published();
        assert_eq!(p.old_readers(), 0);
        let v0 = pubd.load_full();
        // Still current: not an old reader.
        assert_eq!(p.old_readers(), 0);
        p.master_mut();
        p.publish();
        assert_eq!(p.old_readers(), 1);
        assert!(!p.wait_readers(Duration::from_millis(20)));
        drop(v0);
        assert!(p.wait_readers(Duration::from_secs(30)));
    }

    #[test]
    fn waiting_covers_a_reader_of_a_copy_given_up_on() {
        // The reader's copy is neither current nor back after a fallback;
        // a barrier must still wait for it.
        let mut p = Publisher::new(Toy(0));
        let pubd = p.published();
        let v0 = pubd.load_full();
        p.master_mut();
        p.publish();
        p.master_mut();
        p.publish();
        assert_eq!(p.fallbacks(), 1);
        assert_eq!(p.old_readers(), 1);
        assert!(!p.publish_and_wait());
        // Later publications keep remembering it.
        p.master_mut();
        p.publish();
        assert_eq!(p.old_readers(), 1);
        drop(v0);
        assert_eq!(p.old_readers(), 0);
        assert!(p.wait_readers(Duration::from_secs(30)));
    }

    #[test]
    fn a_reader_that_panicked_holds_nothing() {
        let mut p = Publisher::new(Toy(0));
        let pubd = p.published();
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let reader = std::thread::spawn(move || {
            let _v = pubd.load();
            held_tx.send(()).unwrap();
            let _ = go_rx.recv();
            panic!("reader panics inside its burst (expected by this test)");
        });
        held_rx.recv_timeout(Duration::from_secs(30)).unwrap();
        p.master_mut();
        p.publish();
        assert_eq!(p.old_readers(), 1, "the swap made the reader's guard a counted reference");
        go_tx.send(()).unwrap();
        assert!(reader.join().is_err());
        // Unwinding dropped the guard: nothing left to wait for.
        assert_eq!(p.old_readers(), 0);
        assert!(p.wait_readers(Duration::from_secs(30)));
    }
}
