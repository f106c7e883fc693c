//! Publishing the pipeline to forwarding threads: one writer, many readers,
//! no lock on the read side.
//!
//! ## What
//! A [`Publisher`] owns the *master* [`Pipeline`], the one controller
//! messages change (`&mut`), and two *copies* of it. One copy is current:
//! workers get it from a [`Published`] handle once per burst
//! ([`Published::load`]: an `arc-swap` load, no lock, no refcount traffic in
//! the common case) and forward through it with
//! [`Pipeline::process_with`]. [`Publisher::publish`] brings the other copy
//! up to date and swaps it in; [`Publisher::publish_and_wait`] also waits
//! until no worker still reads the copy it replaced, which is what a
//! BARRIER_REPLY needs: every packet after it sees every earlier change.
//!
//! ## Design (left-right)
//! Copying a 100k-entry table for every publication would make flow-mods
//! O(table size). Instead each master table logs its changes (`table.rs`,
//! `TableOp`) and a publication replays, on the copy being brought up to
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
//! are shared cells (`tally.rs`, `Arc<Mutex<…>>`) that every copy and the
//! master point to, so nothing is counted twice or lost across versions.
//!
//! ## Invariants
//! - Each copy, once synced, equals the master as it was at that
//!   publication (same entries in the same order, same indexes): the
//!   replay is deterministic because ops name entries by (priority, seq).
//! - Workers switch versions only between bursts (they load once per
//!   burst).
//! - `version()` grows by one per publication; a publication whose wait
//!   completed guarantees no reader of an older version remains.

use crate::Pipeline;
use arc_swap::ArcSwap;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest wait for the readers of a copy before publishing a fresh
/// replica instead.
pub const WAIT_LIMIT: Duration = Duration::from_millis(250);

/// The workers' side: the current published copy.
#[derive(Debug)]
pub struct Published {
    current: ArcSwap<Pipeline>,
    version: AtomicU64,
}

impl Published {
    /// The current copy (hold it for one burst, then drop it).
    #[inline]
    pub fn load(&self) -> arc_swap::Guard<Arc<Pipeline>> {
        self.current.load()
    }

    /// Number of publications so far.
    pub fn version(&self) -> u64 {
        self.version.load(Acquire)
    }
}

/// The control side: the master pipeline and the copy being prepared.
#[derive(Debug)]
pub struct Publisher {
    master: Pipeline,
    published: Arc<Published>,
    /// The copy that is not current (`None` only transiently).
    back: Option<Arc<Pipeline>>,
    dirty: bool,
    /// Publications that had to fall back to a full replica.
    fallbacks: u64,
}

impl Publisher {
    /// Starts publishing `master`: both copies are made from it as it is.
    pub fn new(mut master: Pipeline) -> Publisher {
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
        }
    }

    /// The handle workers read from.
    pub fn published(&self) -> Arc<Published> {
        self.published.clone()
    }

    /// The master pipeline, for reading.
    pub fn master(&self) -> &Pipeline {
        &self.master
    }

    /// The master pipeline, for changing; the change reaches workers with
    /// the next publication.
    pub fn master_mut(&mut self) -> &mut Pipeline {
        self.dirty = true;
        &mut self.master
    }

    /// Takes the master's queued asynchronous messages (FLOW_REMOVED,
    /// PORT_STATUS, the owner's PACKET_INs) without marking it changed.
    pub fn take_async(&mut self) -> Vec<sluice_ofp::message::Message> {
        self.master.take_async()
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
        if !self.dirty && !self.master.jit_waiting() {
            return self.published.version();
        }
        self.dirty = false;
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
        match self.back.as_mut() {
            Some(b) => wait_exclusive(b, WAIT_LIMIT).is_some(),
            None => true,
        }
    }
}

/// Waits until `a` has no other holder; `None` after `limit`.
fn wait_exclusive(a: &mut Arc<Pipeline>, limit: Duration) -> Option<&mut Pipeline> {
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
    use crate::Config;

    #[test]
    fn a_reader_holding_the_old_version_delays_nothing_but_its_own_copy() {
        let mut p = Publisher::new(Pipeline::new(Config::default()));
        let pubd = p.published();
        let v0 = pubd.load_full_for_test();
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

    impl Published {
        fn load_full_for_test(&self) -> Arc<Pipeline> {
            self.current.load_full()
        }
    }
}
