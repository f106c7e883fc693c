//! Counters written by several threads without locks: one shard per
//! writer, merged on read.
//!
//! ## What
//! A [`Tally`] is a fixed number of `u64` counters (its *width*: packets
//! and bytes of a flow entry, the six counters of a port, …) kept once per
//! *shard*. Every thread that processes packets writes through its own
//! [`Shard`]; readers (statistics replies, FLOW_REMOVED, the daemon's port
//! report) add the shards up ([`Tally::sum`]) or take their maximum
//! ([`Tally::max`], for last-use times).
//!
//! ## Design
//! Shard 0 belongs to the pipeline's owner (the control thread: packet-out,
//! the `&mut` `Pipeline::process` API of the front end). Shards `1..=workers` are
//! handed out once each (`Pipeline::worker`); an *exclusive*
//! shard has exactly one writer, so an increment is a relaxed load and a
//! relaxed store — no `lock`-prefixed instruction, no cache line bouncing
//! between writers of different shards other than false sharing. One more
//! shard, the last, is *shared*: writers beyond the configured worker
//! count use it with `fetch_add`, so a misconfiguration costs speed, never
//! counts.
//!
//! A tally's cells live behind an `Arc` shared by every copy of the thing
//! it counts (flow entry, port, group, table), so every published pipeline
//! version (see `crate::publish`) that holds a copy of that thing counts
//! into the same cells: counters survive version changes.
//!
//! A *dry* shard ([`Shard::dry`]) is written through by a trace: its
//! writes are dropped, so tracing a packet through the live tables leaves
//! every count and last-use time (and so every idle timeout) unchanged.
//!
//! ## Invariants
//! - A shard marked exclusive is written by one thread at a time (the
//!   pipeline hands each exclusive index out once).
//! - Reads never block writers; a read racing with writes sees each cell
//!   either before or after a write (no torn values), so a sum is never
//!   smaller than what was counted before the read began.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Which shard a writer uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    index: usize,
    exclusive: bool,
    /// A dry run's shard: its writes are dropped (see [`Shard::dry`]).
    dry: bool,
}

impl Shard {
    /// The pipeline owner's shard.
    pub const OWNER: Shard = Shard { index: 0, exclusive: true, dry: false };

    /// Exclusive shard `index`: hand each index to one writer at a time.
    pub fn exclusive(index: usize) -> Shard {
        Shard { index, exclusive: true, dry: false }
    }

    /// The shared shard of a tally with `shards` shards (the last one).
    pub fn shared(shards: usize) -> Shard {
        Shard { index: shards.saturating_sub(1), exclusive: false, dry: false }
    }

    /// This shard for a dry run (a trace): [`Tally::add`] and
    /// [`Tally::raise`] through it change nothing, so a packet walked with
    /// it leaves every counter and last-use time as it found them. Its
    /// index stays this shard's (per-worker state is still read from it).
    pub const fn dry(self) -> Shard {
        Shard { dry: true, ..self }
    }

    /// Whether writes through this shard are dropped.
    pub const fn is_dry(&self) -> bool {
        self.dry
    }

    pub fn index(&self) -> usize {
        self.index
    }
}

/// `width` counters per shard, `shards` shards.
///
/// A handle: `clone` shares the cells (one `Arc`), so a flow entry holds
/// its tally inline and a packet reaches the counters with one pointer
/// hop. [`Tally::new`] and [`Tally::snapshot`] make fresh cells.
///
/// Each shard's counters start on a 32-byte boundary ([`Quad`]s): a flow
/// entry's three counters (packets, bytes, last use) then sit in one
/// cache line, which a hit touches once and a staged burst prefetches
/// with one hint, instead of straddling two lines one time in three.
///
/// With two or more workers (more than three shards) every shard starts
/// on a cache line of its own and fills whole lines: two workers hitting
/// the same entry then never write the same line (false sharing would
/// make every hit of a hot rule bounce the line between their cores). The
/// cells get one spare quad so the first shard can start on a 64-byte
/// boundary whichever 32-byte boundary the allocation landed on. One or
/// no worker keeps the compact layout (the owner's and the shared
/// shard's writes are rare).
#[derive(Clone, Debug)]
pub struct Tally {
    /// Counters per shard.
    width: u32,
    /// Quads from one shard to the next.
    stride: u16,
    /// Quads before shard 0 (0 or 1, see above).
    base: u16,
    /// Index of the shared shard (the last one); shards below it are
    /// exclusive. Kept so the per-packet path needs no division.
    shared: usize,
    cells: Arc<[Quad]>,
}

/// Four counters, 32-byte aligned (see [`Tally`]).
#[derive(Debug, Default)]
#[repr(align(32))]
struct Quad([AtomicU64; 4]);

impl Tally {
    /// A tally of `width` counters for `shards` shards (at least 2: the
    /// owner's and the shared one), all zero.
    ///
    /// Panics if `width` is 2^18 or more (no tally is that wide: a group
    /// has two counters per bucket).
    pub fn new(width: usize, shards: usize) -> Tally {
        let shards = shards.max(2);
        let quads = width.div_ceil(4);
        let padded = shards > 3;
        let stride = if padded { quads.next_multiple_of(2) } else { quads };
        let cells: Arc<[Quad]> =
            (0..stride * shards + usize::from(padded)).map(|_| Quad::default()).collect();
        let base = usize::from(padded && (cells.as_ptr() as usize) % 64 != 0);
        Tally {
            width: u32::try_from(width).expect("tally width"),
            stride: u16::try_from(stride).expect("tally width"),
            base: base as u16,
            shared: shards - 1,
            cells,
        }
    }

    pub fn width(&self) -> usize {
        self.width as usize
    }

    fn shards(&self) -> usize {
        self.shared + 1
    }

    /// Index of shard `shard`'s first quad (the handle stays 32 bytes,
    /// and a flow entry keeps it in its first cache line).
    #[inline]
    fn first_quad(&self, shard: usize) -> usize {
        usize::from(self.base) + shard * usize::from(self.stride)
    }

    /// Counter `i` of shard index `shard` (no range check on `i`).
    #[inline]
    fn word(&self, shard: usize, i: usize) -> Option<&AtomicU64> {
        self.cells.get(self.first_quad(shard) + i / 4).map(|q| &q.0[i % 4])
    }

    /// The cell of counter `i` in shard `s`, or the shared shard's if `s`
    /// is beyond this tally (then `exclusive` must not be trusted).
    #[inline]
    fn cell(&self, s: Shard, i: usize) -> Option<(&AtomicU64, bool)> {
        if i >= self.width() || s.dry {
            return None;
        }
        let (shard, exclusive) =
            if s.index < self.shared { (s.index, s.exclusive) } else { (self.shared, false) };
        self.word(shard, i).map(|c| (c, exclusive))
    }

    /// Counter `i` of every shard.
    fn column(&self, i: usize) -> impl Iterator<Item = u64> + '_ {
        let n = if i < self.width() { self.shards() } else { 0 };
        (0..n).filter_map(move |shard| self.word(shard, i)).map(|c| c.load(Relaxed))
    }

    /// Start loading shard `s`'s cells (before a burst stage counts).
    #[inline]
    pub fn prefetch(&self, s: Shard) {
        crate::prefetch::prefetch(self.shard_addr(s) as *const u8);
    }

    /// The address of shard `s`'s first cell, to prefetch later (see
    /// `Caches::prefetch_program`); valid while this tally's cells live.
    #[inline]
    pub fn shard_addr(&self, s: Shard) -> usize {
        let shard = if s.index < self.shared { s.index } else { self.shared };
        self.cells.get(self.first_quad(shard)).map_or(0, |q| q as *const Quad as usize)
    }

    /// Adds `v` to counter `i` of shard `s`.
    #[inline]
    pub fn add(&self, s: Shard, i: usize, v: u64) {
        if let Some((c, exclusive)) = self.cell(s, i) {
            if exclusive {
                c.store(c.load(Relaxed).wrapping_add(v), Relaxed);
            } else {
                c.fetch_add(v, Relaxed);
            }
        }
    }

    /// Raises counter `i` of shard `s` to at least `v` (for times).
    #[inline]
    pub fn raise(&self, s: Shard, i: usize, v: u64) {
        if let Some((c, exclusive)) = self.cell(s, i) {
            if exclusive {
                if c.load(Relaxed) < v {
                    c.store(v, Relaxed);
                }
            } else {
                c.fetch_max(v, Relaxed);
            }
        }
    }

    /// Counter `i` summed over the shards.
    pub fn sum(&self, i: usize) -> u64 {
        self.column(i).fold(0u64, |a, v| a.wrapping_add(v))
    }

    /// Counter `i`'s largest value over the shards.
    pub fn max(&self, i: usize) -> u64 {
        self.column(i).max().unwrap_or(0)
    }

    /// A tally with the same shape whose owner shard holds this one's
    /// sums (and maxima for the counters listed in `maxima`): used to
    /// carry counters into an entry that must not share cells with the
    /// old one.
    pub fn snapshot(&self, maxima: &[usize]) -> Tally {
        let t = Tally::new(self.width(), self.shards());
        for i in 0..self.width() {
            let v = if maxima.contains(&i) { self.max(i) } else { self.sum(i) };
            t.add(Shard::OWNER, i, v);
        }
        t
    }
}

impl PartialEq for Tally {
    /// Equal when every counter sums to the same value.
    fn eq(&self, other: &Tally) -> bool {
        self.width == other.width && (0..self.width()).all(|i| self.sum(i) == other.sum(i))
    }
}

impl Eq for Tally {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_merge_on_read() {
        let t = Tally::new(2, 4);
        t.add(Shard::OWNER, 0, 3);
        t.add(Shard::exclusive(1), 0, 4);
        t.add(Shard::exclusive(2), 1, 10);
        t.add(Shard::shared(4), 0, 5);
        assert_eq!((t.sum(0), t.sum(1)), (12, 10));
        t.raise(Shard::exclusive(1), 1, 7);
        assert_eq!(t.max(1), 10);
        assert_eq!(t.sum(2), 0, "out of range counter reads as zero");
        let s = t.snapshot(&[1]);
        assert_eq!((s.sum(0), s.sum(1)), (12, 10));
        assert_eq!(s, *Box::new(s.snapshot(&[1])));
    }

    /// With two workers or more, no two shards share a cache line, and
    /// every counter still lands in its own shard.
    #[test]
    fn worker_shards_have_lines_of_their_own() {
        for width in [2usize, 3, 6, 9] {
            for shards in [4usize, 5, 8] {
                let t = Tally::new(width, shards);
                let line = |shard: usize, i: usize| {
                    t.word(shard, i).map(|c| c as *const AtomicU64 as usize / 64).unwrap()
                };
                for a in 0..shards {
                    for b in (a + 1)..shards {
                        for i in 0..width {
                            for j in 0..width {
                                assert_ne!(line(a, i), line(b, j), "{width}x{shards}: {a}/{b}");
                            }
                        }
                    }
                    for i in 0..width {
                        t.add(Shard::exclusive(a), i, 1 << a);
                    }
                }
                for i in 0..width {
                    assert_eq!(t.sum(i), (1 << shards) - 1, "{width}x{shards} counter {i}");
                }
            }
        }
        assert_eq!(std::mem::size_of::<Tally>(), 32);
    }

    /// Writes through a dry shard change nothing, whichever shard it is.
    #[test]
    fn a_dry_shard_writes_nothing() {
        let t = Tally::new(2, 4);
        t.add(Shard::exclusive(1), 0, 3);
        t.raise(Shard::exclusive(1), 1, 5);
        for s in [Shard::OWNER, Shard::exclusive(1), Shard::exclusive(9), Shard::shared(4)] {
            let d = s.dry();
            assert!(d.is_dry() && !s.is_dry() && d.index() == s.index());
            t.add(d, 0, 100);
            t.raise(d, 1, 100);
        }
        assert_eq!((t.sum(0), t.max(1)), (3, 5));
        t.add(Shard::exclusive(1), 0, 1);
        assert_eq!(t.sum(0), 4, "the shard itself still counts");
    }

    /// A flow entry's three counters share one cache line in every shard,
    /// and the address a burst prefetches is that line's.
    #[test]
    fn a_shards_counters_share_one_line() {
        let t = Tally::new(3, 5);
        for s in 0..5 {
            let addr = |i| t.word(s, i).map(|c| c as *const AtomicU64 as usize);
            let (first, last) = (addr(0).unwrap(), addr(2).unwrap());
            assert_eq!(first / 64, (last + 7) / 64, "shard {s} straddles a line");
            assert_eq!(t.shard_addr(Shard::exclusive(s)), first);
        }
        let wide = Tally::new(6, 3);
        wide.add(Shard::exclusive(1), 5, 9);
        assert_eq!((wide.sum(5), wide.sum(4), wide.sum(6)), (9, 0, 0));
    }

    /// A shard index beyond the tally falls back to the shared shard with
    /// atomic increments, so concurrent writers lose nothing.
    #[test]
    fn writers_beyond_the_shards_lose_nothing() {
        let t = Arc::new(Tally::new(1, 2));
        let threads: Vec<_> = (0..4)
            .map(|i| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        t.add(Shard::exclusive(5 + i), 0, 1);
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        assert_eq!(t.sum(0), 40_000);
    }

    #[test]
    fn exclusive_writers_in_parallel() {
        let t = Arc::new(Tally::new(1, 4));
        let threads: Vec<_> = (0..3)
            .map(|i| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        t.add(Shard::exclusive(i), 0, 2);
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        assert_eq!(t.sum(0), 60_000);
    }
}
