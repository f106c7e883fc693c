//! # Flow caches: exact-match and megaflow caches in front of the tables
//!
//! ## What?
//! A cache entry remembers, for a class of packets, the *resolved chain*
//! of a packet's way through the tables: which entry (by table id and
//! position in the table's vector) each table lookup hit, or that the
//! lookup missed, and which way each key-bit branch of the control graph
//! went. When the chain covers the packet's whole way, the entry can also
//! hold a *composed program* `P`, built by the front end that walks
//! (`sluice_pipeline::exec::compose` for OpenFlow): the table and entry
//! counter cells to bump and the ops to run, in the walk's order — Open
//! vSwitch's megaflow actions, plus the counters OpenFlow needs. On a hit
//! the walker runs the program, or skips only the lookups and runs the
//! same walk as its slow path; either way counters, idle times, meters,
//! select-group hashing, upcalls and TTL checks happen per packet, so a
//! cache can only change speed, never a result. Programs live in a
//! per-cache slab, referenced by id and counted by the entries holding
//! them (no atomic reference count on a hit). The cache knows nothing of
//! what a program is; it stores, counts and frees them. Two caches, as in
//! Open vSwitch's userspace datapath:
//!
//! - the **exact-match cache** (OVS's EMC) is keyed by the whole
//!   [`FlowKey`]: a direct-mapped array of [`EXACT_SLOTS`] slots indexed by
//!   a hash of the key; a new entry overwrites whatever sat in its slot;
//! - the **megaflow cache** is keyed by `key & wc`, where `wc` (the
//!   un-wildcarding mask) holds every key bit the slow path consulted. It
//!   is itself a small tuple space: one hash map per distinct `wc`,
//!   probed in turn (no priorities: every megaflow matching a key is
//!   correct for it, see *Invariants*).
//!
//! A walker configured for both probes exact, then megaflow, then the
//! tables (a megaflow hit is copied into the exact cache, [`Caches::promote`]);
//! megaflow-only skips the exact cache; off bypasses both (the OpenFlow
//! front end's `CacheMode`). Traces always take the slow path.
//!
//! ## Basic design
//! While the slow path walks the tables it *records*: each lookup's table,
//! entry and un-wildcarding mask (the classifier reports the bits it
//! consulted; the reference linear scan reports the union of the masks of
//! every entry it looked at up to the hit, a valid conservative mask). The
//! recording covers the longest prefix of lookups whose results are a
//! function of the *original* key:
//!
//! - Between lookups, `write_metadata`, `set_field` of `metadata` or
//!   `tunnel_id`, outputs, groups (they work on copies), set-queue and TTL
//!   set/decrement (TTLs are not fixed key fields; expiry stops the packet)
//!   keep the key a function of the original key. With extract windows in
//!   the key ([`Recorder::windows`]) a window may cover a TTL: a TTL *set*
//!   still writes a constant (every edited bit is a constant or the
//!   original bit, which is all a recorded mask needs), but a decrement
//!   borrows across bits, so it ends the recording.
//! - `set_field` of a header field that does not change how the frame
//!   parses (addresses, ports, VLAN VID/PCP, DSCP/ECN, MPLS label/TC, …)
//!   writes a constant *if* the header is present. Whether it is present is
//!   a function of the presence bits, the VLAN VID (which carries its own
//!   presence) and the ethertype, so before the next lookup those bits are
//!   added to `wc` (false 1-bits, allowed).
//! - Anything else ends the recording: push/pop of VLAN/MPLS/PBB,
//!   copy-TTL-in/out, `set_field` of `eth_type`, `ip_proto`, `icmpv6_type`,
//!   `mpls_bos` or any field not on the list above, and meter instructions
//!   (a DSCP-remark band changes the key depending on time). Lookups after
//!   that point are done live even on a cache hit: the entry holds a chain
//!   *prefix*, and the hit path falls back to a table lookup once the
//!   prefix is used up. "When in doubt, do not cache" applies per lookup.
//!
//! [`Recorder::note_ops`] is this list in code: the walker reports every
//! op it runs between lookups, whatever front end lowered it.
//!
//! ## Cost
//! - Exact cache: one hash of the 24 key words (independent multiplies),
//!   one 192-byte compare; a slot is ~280 bytes, so the array is ~2.3 MB,
//!   allocated on first use. A megaflow hit replaces a live slot only one
//!   time in [`EXACT_REPLACE_EVERY`], so more live flows than slots do not
//!   evict each other on every packet.
//! - Megaflow cache: per distinct `wc`, one masked hash of the key and a
//!   hash-map probe; entries are bounded by [`MEGAFLOW_MAX`] and distinct
//!   masks by [`MEGAFLOW_MAX_MASKS`]; when either bound is reached the
//!   whole cache is emptied (simple, and keeps the probe count bounded).
//!   An entry stores only the key's words under its mask, packed, in the
//!   smallest of four size classes (2, 4, 8 or all 24 words) that holds
//!   them: 104 bytes with two words, 120 with four (an L2 or L3 mask
//!   names two to four), two lines with the result.
//! - Slow path while recording: the masks OR-ed per lookup (the reference
//!   scan ORs every scanned entry's mask), composing the program (one
//!   allocation, a reference count per counter cell) and one install per
//!   cache.
//!
//! ## Invalidation (versioning)
//! The pipeline keeps a flow generation, bumped by every flow-table change
//! (flow-mod of any command, timeouts that expire an entry, group/meter
//! deletes that remove entries, table-mod, switching the datapath). Each
//! entry stores the generation it was made in; an entry of another
//! generation is a miss. Entry positions in a table's vector only change
//! with a flow-table change, so within one generation a chain's positions
//! name the same entries. Group-mods, meter-mods and port changes need no
//! invalidation: groups, meters and port state are consulted per packet on
//! the hit path too.
//!
//! ## Thread-safety
//! A cache belongs to one `Pipeline` (one worker) and is used through
//! `&mut`: no locks, no atomics.
//!
//! ## Invariants
//! - **Un-wildcarding may add false 1-bits, never false 0-bits.** For a
//!   megaflow `(wc, key & wc) → chain`, every key `k'` with
//!   `k' & wc == key & wc` gets the same chain prefix from the slow path in
//!   the same generation. By induction over the prefix: the first lookup's
//!   answer depends only on bits in its mask ⊆ `wc`; the recorded actions
//!   between lookups map keys agreeing on `wc` to keys agreeing on `wc`
//!   (constants, or functions of bits already in `wc`).
//! - Exact entries are megaflows with `wc` = all ones.
//! - A chain prefix never extends past an action that ended recording.
//! - The hit path checks each hop's table id against the table it is
//!   about to run; a disagreement (a bug) is counted in
//!   [`CacheStats::chain_mismatches`] and the hop is looked up live.

use crate::guard::{Answers, Chain as GuardChain, Guard};
use crate::op::Op;
use hashbrown::hash_table::{Entry, HashTable};
use sluice_packet::key::{FlowKey, FlowMask, FIXED_LAYOUT, KEY_WORDS, PRESENCE_WORD};
use sluice_packet::parse::{Meta, ParseInfo};
use std::sync::Arc;
use std::sync::LazyLock;

/// Slots of the exact-match cache (a power of two; OVS's EMC has 8192).
pub const EXACT_SLOTS: usize = 8192;
/// Most megaflow entries before the cache is emptied (Open vSwitch's
/// default flow limit is 200 000).
pub const MEGAFLOW_MAX: usize = 200_000;
/// A megaflow hit whose exact slot holds another live flow replaces it
/// once in this many hits (see [`Caches::promote`]).
pub const EXACT_REPLACE_EVERY: u32 = 16;
/// Most distinct megaflow masks before the cache is emptied.
pub const MEGAFLOW_MAX_MASKS: usize = 256;
/// Longest recorded chain prefix (further lookups are done live).
pub const MAX_HOPS: usize = 8;

/// Hit and miss counts per cache level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub exact_hits: u64,
    pub exact_misses: u64,
    pub megaflow_hits: u64,
    pub megaflow_misses: u64,
    /// Current number of megaflow entries (stale ones included).
    pub megaflow_entries: u64,
    /// Current number of distinct megaflow masks.
    pub megaflow_masks: u64,
    /// Slow-path walks that installed an entry.
    pub installs: u64,
    /// Slow-path walks that recorded nothing (e.g. a push before the first
    /// lookup could not happen; the first hop is always recordable, so this
    /// counts walks that were not recorded at all).
    pub uncacheable: u64,
    /// Hops whose table disagreed with the chain (a bug; must stay 0).
    pub chain_mismatches: u64,
    /// Installs whose entry got a composed program (the chain covered the
    /// packet's whole way and no meter was on it).
    pub composed: u64,
    /// Hits with recorded guard results that carried them; and of those,
    /// the ones where a guard now answered differently (the packet took
    /// the slow path with the results computed so far).
    pub guard_rechecks: u64,
    pub guard_changed: u64,
    /// Guard results that differed from an entry's but matched its
    /// alternate's (no slow path).
    pub guard_alt_hits: u64,
    /// Alternates recorded for megaflows.
    pub guard_alts: u64,
    /// Raw-header cache hits (counted in `exact_hits` too: a raw hit is an
    /// exact hit found without parsing) and misses (the packet was parsed
    /// and probed the exact cache as usual).
    pub raw_hits: u64,
    pub raw_misses: u64,
}

/// One resolved lookup: the table and the entry's position in it
/// (`NO_ENTRY` for a miss without a table-miss entry).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hop {
    pub table: u8,
    pub entry: u32,
}

impl Hop {
    pub const NO_ENTRY: u32 = u32::MAX;
    /// The `table` of a hop that records a control-graph branch's decision
    /// (`entry` 1: taken, 0: not); no table has this id (ids end at 254).
    pub const BRANCH: u8 = 255;
}

/// A chain prefix: the hops of the first `len` lookups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Chain {
    len: u8,
    hops: [Hop; MAX_HOPS],
}

impl Chain {
    pub fn hops(&self) -> &[Hop] {
        &self.hops[..usize::from(self.len).min(MAX_HOPS)]
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append; returns false when full.
    pub fn push(&mut self, h: Hop) -> bool {
        match self.hops.get_mut(usize::from(self.len)) {
            Some(slot) => {
                *slot = h;
                self.len += 1;
                true
            }
            None => false,
        }
    }
}

/// Folded-multiply hash of key words (same family as the classifier's).
#[inline(always)]
fn mix(h: u64, w: u64) -> u64 {
    let r = u128::from(h ^ w) * 0x9e37_79b9_7f4a_7c15;
    (r as u64) ^ ((r >> 64) as u64)
}

/// One odd multiplier per key word (splitmix64 outputs, low bit set).
const WORD_MUL: [u64; KEY_WORDS] = {
    let mut m = [0u64; KEY_WORDS];
    let mut x: u64 = 0x243f_6a88_85a3_08d3;
    let mut i = 0;
    while i < KEY_WORDS {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        m[i] = (z ^ (z >> 31)) | 1;
        i += 1;
    }
    m
};

/// Hash of a whole key for the exact cache: the sum of each word times its
/// own odd constant (independent 64-bit multiplies, no dependency chain
/// between words), then one folded multiply that carries the high bits of
/// the sum (where e.g. `eth_dst` lives) down into the slot-index bits. Two
/// keys differing in one word always differ in the sum (odd multipliers
/// are invertible mod 2^64).
#[inline]
fn hash_key(k: &FlowKey) -> u64 {
    let mut sum = 0u64;
    for (w, m) in k.words.iter().zip(WORD_MUL.iter()) {
        sum = sum.wrapping_add(w.wrapping_mul(*m));
    }
    mix(mix(sum, sum >> 32), 0x2545_f491_4f6c_dd1d)
}

/// The exact-cache slot `key` goes to (keys with the same slot evict
/// each other).
pub fn exact_slot(key: &FlowKey) -> usize {
    hash_key(key) as usize & (EXACT_SLOTS - 1)
}

/// A megaflow probe: a key's words under a subtable's mask, packed (the
/// mask's words in order, zero after them), with their hash.
#[derive(Clone, Copy, Debug)]
struct MaskedKey {
    hash: u64,
    words: [u64; KEY_WORDS],
}

/// What a cache entry stands for: the chain of hops, and when the chain
/// covers the packet's whole way through the tables, the composed program
/// that replays it without touching the entries (see `exec.rs`).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Resolved {
    /// The composed program's id in the cache's program slab, or
    /// [`NO_PROG`]. First, so a megaflow entry's first line holds it.
    pub prog: u32,
    pub chain: Chain,
}

/// No composed program.
pub const NO_PROG: u32 = u32::MAX;

impl Default for Resolved {
    fn default() -> Self {
        Resolved { chain: Chain::default(), prog: NO_PROG }
    }
}

/// The composed programs of one worker's cache entries, by id, with the
/// number of entries (exact and megaflow) holding each: a program is
/// freed when the last entry holding it is overwritten or cleared. Ids
/// instead of `Arc`s keep a cache hit free of atomic reference counting.
#[derive(Debug)]
struct Programs<P: ?Sized> {
    slots: Vec<Slot<P>>,
    free: Vec<u32>,
}

/// How many runs of cache lines a program's slot keeps for the staged
/// burst to prefetch together with the program (see
/// [`Caches::prefetch_program`] and [`hot_lines`]).
pub const HOT_ADDRS: usize = 4;

/// A slot's `hot` entry for the lines that `len` bytes from `addr` span,
/// up to 64 of them: the first line's address (lines are 64-byte
/// aligned, so its low 6 bits are free) with the number of further
/// lines in those bits. 0 for an empty run (0 ends a slot's list).
pub fn hot_lines(addr: usize, len: usize) -> usize {
    if len == 0 || addr == 0 {
        return 0;
    }
    let first = addr & !63;
    let last = (addr + len - 1) & !63;
    first | ((last - first) / 64).min(63)
}

/// Starts loading every line of a [`hot_lines`] entry.
#[inline]
fn prefetch_lines(hot: usize) {
    let first = hot & !63;
    for i in 0..=(hot & 63) {
        crate::prefetch(first.wrapping_add(i * 64) as *const u8);
    }
}

/// One id's item, the number of entries holding it, and the addresses its
/// hit will touch first (the counter cells of the entries its program
/// bumps, in this worker's shard). A cache line each: the burst that
/// prefetched the slot reads it whole, without a second miss, and then
/// starts loading the program and its counters at once — without the
/// addresses the counters could only be asked for once the program had
/// arrived, one dependent load later.
#[derive(Debug)]
#[repr(align(64))]
struct Slot<P: ?Sized> {
    item: Option<Item<P>>,
    holders: u32,
    /// Addresses to prefetch (0: none); plain numbers, never dereferenced,
    /// so a stale one costs a useless prefetch and nothing else.
    hot: [usize; HOT_ADDRS],
}

impl<P: ?Sized> Default for Programs<P> {
    fn default() -> Self {
        Programs { slots: Vec::new(), free: Vec::new() }
    }
}

/// What an entry's id names: its composed program, and the guard results
/// its recorded walk saw (see `sluice_core::guard`), either or both.
#[derive(Debug)]
pub struct Item<P: ?Sized> {
    pub prog: Option<Box<P>>,
    pub guards: Option<Box<Guarded>>,
    /// What the same megaflow resolved to when its guards answered
    /// otherwise (see [`Caches::install_megaflow`]): tried on a hit whose
    /// guard results differ from this item's before the slow path. Its
    /// item is held by this one.
    pub alt: Option<Box<Resolved>>,
}

/// The guard results an entry's walk recorded, with the guards that gave
/// them: resolved when the entry is installed, for the flow generation it
/// is valid in (a hit is only taken in that generation), so a hit reruns
/// them without looking each one up in the tables.
pub struct Guarded {
    pub chain: GuardChain,
    /// `refs[i]` gave `chain.items()[i]`; empty when they could not all
    /// be resolved (the hit then finds them by tag).
    pub refs: Box<[Arc<dyn Guard>]>,
}

impl std::fmt::Debug for Guarded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guarded")
            .field("chain", &self.chain.items())
            .field("refs", &self.refs.len())
            .finish()
    }
}

impl<P: ?Sized> Programs<P> {
    fn add(&mut self, p: Item<P>, hot: [usize; HOT_ADDRS]) -> u32 {
        let slot = Slot { item: Some(p), holders: 0, hot };
        match self.free.pop() {
            Some(id) => {
                if let Some(s) = self.slots.get_mut(id as usize) {
                    *s = slot;
                }
                id
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        }
    }

    fn retain(&mut self, id: u32) {
        if let Some(s) = self.slots.get_mut(id as usize) {
            s.holders += 1;
        }
    }

    /// Drop one holder; free the program when none is left (and drop
    /// the hold it had on its alternate's).
    fn release(&mut self, id: u32) {
        let mut next = Some(id);
        while let Some(id) = next.take() {
            if let Some(s) = self.slots.get_mut(id as usize) {
                s.holders = s.holders.saturating_sub(1);
                if s.holders == 0 {
                    if let Some(item) = s.item.take() {
                        s.hot = [0; HOT_ADDRS];
                        self.free.push(id);
                        next = item.alt.map(|a| a.prog).filter(|&p| p != NO_PROG);
                    }
                }
            }
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct ExactSlot {
    gen: u64,
    /// Which write of the slot this is (0: never written): a raw-header
    /// slot names the exact slot it stands for by index and stamp.
    stamp: u64,
    key: FlowKey,
    res: Resolved,
}

/// Bytes of a frame's start the raw-header cache keys on (a packet whose
/// parse read further is not cached there).
pub const RAW_BYTES: usize = 96;
const RAW_WORDS: usize = RAW_BYTES / 8;
/// Slots of the raw-header cache (a power of two).
pub const RAW_SLOTS: usize = 8192;

/// A frame as the raw-header cache sees it: its first [`RAW_BYTES`] bytes
/// (zeros past its end), its length, and their hash with the ingress
/// port's.
#[derive(Clone, Copy, Debug)]
pub struct RawKey {
    hash: u64,
    len: u32,
    words: [u64; RAW_WORDS],
}

impl RawKey {
    /// The raw key of `data` received with `meta`.
    #[inline]
    pub fn of(data: &[u8], meta: &Meta) -> RawKey {
        let mut words = [0u64; RAW_WORDS];
        // A frame of at least RAW_BYTES is read in place, word by word (no
        // call to copy); a shorter one through a zeroed copy.
        let mut short = [0u8; RAW_BYTES];
        let head = match data.get(..RAW_BYTES) {
            Some(h) => h,
            None => {
                if let Some(d) = short.get_mut(..data.len()) {
                    d.copy_from_slice(data);
                }
                &short[..]
            }
        };
        for (w, c) in words.iter_mut().zip(head.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            *w = u64::from_le_bytes(b);
        }
        let len = data.len() as u32;
        let mut sum =
            (u64::from(len) | u64::from(meta.in_port) << 32).wrapping_mul(WORD_MUL[KEY_WORDS - 1]);
        for (w, m) in words.iter().zip(WORD_MUL.iter()) {
            sum = sum.wrapping_add(w.wrapping_mul(*m));
        }
        RawKey { hash: mix(mix(sum, sum >> 32), 0x2545_f491_4f6c_dd1d), len, words }
    }
}

/// One raw-header entry: a frame's raw key and the metadata and extract
/// program it was parsed with, the parse's [`ParseInfo`], and the exact
/// slot (index and stamp) holding the key the parse gave and what it
/// resolves to.
#[derive(Clone, Copy, Debug)]
struct RawSlot {
    words: [u64; RAW_WORDS],
    len: u32,
    exact: u32,
    stamp: u64,
    extract: usize,
    meta: Meta,
    info: ParseInfo,
}

/// One megaflow: its masked key's hash, what it resolves to, and the key's
/// masked words only (in the order of [`MegaSubtable::words`], zero past
/// their count): room for `N` of them, the smallest size class that holds
/// the mask's words. With up to four words a megaflow is at most 120 bytes
/// in two lines, where a whole 192-byte key made it 280 bytes in five.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Mega<const N: usize> {
    hash: u64,
    gen: u64,
    res: Resolved,
    key: [u64; N],
}

impl<const N: usize> Mega<N> {
    fn new(mk: &MaskedKey, gen: u64, res: Resolved) -> Mega<N> {
        let mut key = [0u64; N];
        for (d, s) in key.iter_mut().zip(&mk.words) {
            *d = *s;
        }
        Mega { hash: mk.hash, gen, res, key }
    }

    /// Whether this megaflow holds `mk`: both are zero past the mask's
    /// words, so all `N` words compare (a fixed-size compare).
    #[inline]
    fn holds(&self, mk: &MaskedKey) -> bool {
        self.hash == mk.hash && mk.words.get(..N).is_some_and(|w| self.key[..] == *w)
    }
}

/// A subtable's entries, in the size class of its mask's word count.
#[derive(Clone, Debug)]
enum MegaMap {
    W2(HashTable<Mega<2>>),
    W4(HashTable<Mega<4>>),
    W8(HashTable<Mega<8>>),
    All(HashTable<Mega<KEY_WORDS>>),
}

/// `$body` with `$m` bound to the subtable's map, whatever its class.
macro_rules! each_map {
    ($map:expr, $m:ident => $body:expr) => {
        match $map {
            MegaMap::W2($m) => $body,
            MegaMap::W4($m) => $body,
            MegaMap::W8($m) => $body,
            MegaMap::All($m) => $body,
        }
    };
}

/// Put `new` in `m`: the entry it replaced, if any.
fn put_mega<const N: usize>(
    m: &mut HashTable<Mega<N>>,
    new: Mega<N>,
    mk: &MaskedKey,
) -> Option<Resolved> {
    match m.entry(mk.hash, |e| e.holds(mk), |e| e.hash) {
        Entry::Vacant(v) => {
            v.insert(new);
            None
        }
        Entry::Occupied(mut o) => Some(std::mem::replace(o.get_mut(), new).res),
    }
}

impl MegaMap {
    fn for_words(n: usize) -> MegaMap {
        match n {
            0..=2 => MegaMap::W2(HashTable::new()),
            3..=4 => MegaMap::W4(HashTable::new()),
            5..=8 => MegaMap::W8(HashTable::new()),
            _ => MegaMap::All(HashTable::new()),
        }
    }

    /// The entry holding `mk`: its generation and what it resolves to.
    #[inline]
    fn get(&self, mk: &MaskedKey) -> Option<(u64, &Resolved)> {
        each_map!(self, m => m.find(mk.hash, |e| e.holds(mk)).map(|e| (e.gen, &e.res)))
    }

    /// Install (or replace) the entry for `mk`: the one it replaced.
    fn put(&mut self, mk: &MaskedKey, gen: u64, res: Resolved) -> Option<Resolved> {
        each_map!(self, m => put_mega(m, Mega::new(mk, gen, res), mk))
    }

    fn for_each_prog(&self, mut f: impl FnMut(u32)) {
        each_map!(self, m => m.iter().for_each(|e| f(e.res.prog)))
    }

    fn clear(&mut self) {
        each_map!(self, m => m.clear())
    }
}

#[derive(Clone, Debug)]
struct MegaSubtable {
    mask: FlowMask,
    /// Indices of the words where `mask` is non-zero.
    words: Vec<u8>,
    map: MegaMap,
}

impl MegaSubtable {
    fn new(mask: &FlowMask) -> MegaSubtable {
        let words: Vec<u8> =
            (0..KEY_WORDS).filter(|&w| mask.words[w] != 0).map(|w| w as u8).collect();
        let map = MegaMap::for_words(words.len());
        MegaSubtable { mask: *mask, words, map }
    }

    /// `key`'s masked words, packed in the order of `words`, and their hash.
    #[inline]
    fn masked(&self, key: &FlowKey) -> MaskedKey {
        let mut k = [0u64; KEY_WORDS];
        let mut h = 0x243f_6a88_85a3_08d3;
        for (d, &w) in k.iter_mut().zip(&self.words) {
            let w = usize::from(w);
            if let (Some(s), Some(m)) = (key.words.get(w), self.mask.words.get(w)) {
                *d = s & m;
                h = mix(h, *d);
            }
        }
        MaskedKey { hash: mix(h, h >> 29), words: k }
    }
}

/// Why a walk's recording ended before the walk did ([`Recorder::closed`]):
/// the lookups after it run live on a cache hit, and the entry gets no
/// composed program. Reported by traces ([`crate::walk::run_served`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Closed {
    /// An op that changes the frame's structure or reads fields the key
    /// does not follow: push/pop, a set-field that moves headers, a TTL
    /// copy, a field copy.
    Structural,
    /// A POF window edit.
    Window,
    /// A TTL decrement while extract windows exist (a window may cover
    /// the TTL).
    TtlWithWindows,
    /// A meter (it may drop or remark by time, not by key).
    Meter,
    /// A lookup in a table with guards after the frame was edited.
    GuardAfterEdit,
    /// The chain holds no more hops.
    ChainFull,
}

impl std::fmt::Display for Closed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Closed::Structural => "a structural edit (push/pop, a header-moving set-field, a copy)",
            Closed::Window => "a POF window edit",
            Closed::TtlWithWindows => "a TTL decrement while POF windows exist",
            Closed::Meter => "a meter",
            Closed::GuardAfterEdit => "a guarded lookup after an edit of the frame",
            Closed::ChainFull => "the chain is full",
        })
    }
}

/// What the slow path records while it walks the tables.
#[derive(Clone, Debug)]
pub struct Recorder {
    /// The key the walk started with (the cache key).
    pub key: FlowKey,
    pub wc: FlowMask,
    pub chain: Chain,
    /// Still recording: no action has made later lookups unpredictable.
    pub open: bool,
    /// Why the recording ended, once it has ([`Recorder::close`]).
    pub closed: Option<Closed>,
    /// A header `set_field` ran since the last lookup: add the bits that
    /// decide whether it applied before recording the next lookup.
    pub dirty: bool,
    /// The packet's guard evaluations (recorded and live), possibly primed
    /// by a cache hit's recheck; made on the first guarded lookup (most
    /// walks have none, and it is half a kilobyte).
    pub answers: Option<Box<Answers>>,
    /// How many of `answers`' results belong to recorded lookups (the
    /// entry's guard chain).
    pub guard_len: usize,
    /// A recorded lookup saw more guard results than a chain holds: the
    /// walk is not cached.
    pub guard_overflow: bool,
    /// The key holds extract windows (the packet's parse runs an extract
    /// program): TTL decrements end the recording (see *Basic design*).
    pub windows: bool,
}

impl Recorder {
    pub fn new(key: FlowKey, answers: Option<Box<Answers>>) -> Recorder {
        Recorder {
            key,
            wc: FlowMask::ZERO,
            chain: Chain::default(),
            open: true,
            closed: None,
            dirty: false,
            answers,
            guard_len: 0,
            guard_overflow: false,
            windows: false,
        }
    }

    /// The guard results the cache entry keeps (those of recorded
    /// lookups), if any.
    pub fn guard_chain(&self) -> Option<GuardChain> {
        let mut c = *self.answers.as_deref()?.chain();
        c.truncate(self.guard_len);
        (self.guard_len > 0).then_some(c)
    }

    /// End the recording (the first reason is kept).
    #[inline]
    pub fn close(&mut self, why: Closed) {
        if self.open {
            self.open = false;
            self.closed = Some(why);
        }
    }
    /// What ops a walk ran do to the recording (see *Basic design*):
    /// structural edits end it, header set-fields make the next lookup pin
    /// the bits that decide whether they applied. TTLs are not fixed key
    /// fields, but a window may cover one: with windows, a decrement ends
    /// the recording. Window edits ([`Op::Window`]) end it. A key program
    /// ([`Op::Key`]) adds the bits it reads to the mask (a later lookup may
    /// depend on what it computed from them). `Nop` stands
    /// for an action that changes nothing the core models.
    pub fn note_ops(&mut self, ops: &[Op]) {
        for op in ops {
            match op {
                Op::Output { .. }
                | Op::Group(_)
                | Op::SetQueue(_)
                | Op::Report(_)
                | Op::SetNwTtl(_)
                | Op::SetMplsTtl(_)
                | Op::Nop => {}
                Op::DecNwTtl | Op::DecMplsTtl => {
                    if self.windows {
                        self.close(Closed::TtlWithWindows);
                    }
                }
                Op::Key(p) => {
                    for (w, r) in self.wc.words.iter_mut().zip(p.reads().words) {
                        *w |= r;
                    }
                }
                Op::SetField { field, .. } => match set_field_effect(*field) {
                    SetFieldEffect::Neutral => {}
                    SetFieldEffect::InPlace => self.dirty = true,
                    SetFieldEffect::Structural => self.close(Closed::Structural),
                },
                Op::Window(_) => self.close(Closed::Window),
                _ => self.close(Closed::Structural),
            }
        }
    }
}

/// The bits that decide whether a header `set_field` applies: every
/// presence bit, the VLAN VID (its own presence) and the ethertype.
static APPLIES: LazyLock<FlowMask> = LazyLock::new(applies_mask);

fn applies_mask() -> FlowMask {
    let mut m = FlowMask::ZERO;
    if let Some(w) = m.words.get_mut(PRESENCE_WORD) {
        *w = u64::MAX;
    }
    let _ = FIXED_LAYOUT.set_field_mask(&mut m, sluice_packet::Field::VlanVid, &[0xff, 0xff]);
    let _ = FIXED_LAYOUT.set_field_mask(&mut m, sluice_packet::Field::EthType, &[0xff, 0xff]);
    m
}

/// How a `set_field` affects recording.
pub enum SetFieldEffect {
    /// Pipeline field (metadata, tunnel id): always applies, stays exact.
    Neutral,
    /// Header field written in place when present: mark dirty.
    InPlace,
    /// Changes how the frame parses (or unknown): stop recording.
    Structural,
}

/// Classify a `set_field` target.
pub fn set_field_effect(f: sluice_packet::Field) -> SetFieldEffect {
    use sluice_packet::Field as F;
    match f {
        F::Metadata | F::TunnelId => SetFieldEffect::Neutral,
        F::EthDst
        | F::EthSrc
        | F::VlanVid
        | F::VlanPcp
        | F::IpDscp
        | F::IpEcn
        | F::Ipv4Src
        | F::Ipv4Dst
        | F::TcpSrc
        | F::TcpDst
        | F::UdpSrc
        | F::UdpDst
        | F::SctpSrc
        | F::SctpDst
        | F::Icmpv4Type
        | F::Icmpv4Code
        | F::ArpOp
        | F::ArpSpa
        | F::ArpTpa
        | F::ArpSha
        | F::ArpTha
        | F::Ipv6Src
        | F::Ipv6Dst
        | F::Ipv6Flabel
        | F::Icmpv6Code
        | F::Ipv6NdTarget
        | F::Ipv6NdSll
        | F::Ipv6NdTll
        | F::MplsLabel
        | F::MplsTc
        | F::PbbIsid => SetFieldEffect::InPlace,
        _ => SetFieldEffect::Structural,
    }
}

/// The caches of one worker; `P` is the front end's composed program.
#[derive(Debug)]
pub struct Caches<P: ?Sized> {
    exact: Vec<ExactSlot>,
    /// The raw-header cache (empty until its first install).
    raw: Vec<RawSlot>,
    /// The last stamp given to an exact slot (never reset, so a raw slot
    /// cannot name a slot written after a clear).
    exact_stamp: u64,
    mega: Vec<MegaSubtable>,
    mega_len: usize,
    /// Megaflows kept before all are dropped ([`MEGAFLOW_MAX`] unless
    /// set by [`Caches::set_megaflow_limit`]).
    mega_max: usize,
    progs: Programs<P>,
    /// Counts megaflow hits for [`Caches::promote`].
    promote_tick: u32,
    /// Items whose release a staged burst put off until its packets ran
    /// (see [`Caches::promote_staged`]).
    held: Vec<u32>,
    /// Some item holds guard results (since the last clear): hits must
    /// look for them. False keeps guard checks off the hit path of a
    /// pipeline without guards.
    guarded_items: bool,
    pub stats: CacheStats,
}

impl<P: ?Sized> Default for Caches<P> {
    fn default() -> Self {
        Caches {
            exact: Vec::new(),
            raw: Vec::new(),
            exact_stamp: 0,
            mega: Vec::new(),
            mega_len: 0,
            mega_max: MEGAFLOW_MAX,
            progs: Programs::default(),
            promote_tick: 0,
            held: Vec::new(),
            guarded_items: false,
            stats: CacheStats::default(),
        }
    }
}

impl<P: ?Sized> Caches<P> {
    /// Drop every entry (statistics are kept).
    pub fn clear(&mut self) {
        self.exact = Vec::new();
        self.raw = Vec::new();
        self.mega.clear();
        self.mega_len = 0;
        self.progs = Programs::default();
        self.held.clear();
        self.guarded_items = false;
    }

    /// Keep at most `n` megaflows (at least 1): when an install would pass
    /// it, every megaflow is dropped first, as at [`MEGAFLOW_MAX`]. Tests
    /// use a small bound to drop them often.
    pub fn set_megaflow_limit(&mut self, n: usize) {
        self.mega_max = n.clamp(1, MEGAFLOW_MAX);
    }

    /// Keep a composed program; its id goes into [`Resolved::prog`]. Freed
    /// once no installed entry holds it (install the entry right away).
    /// `hot`: addresses a hit on it touches first, for
    /// [`Caches::prefetch_program`] (0: none).
    pub fn add_program(&mut self, p: Box<P>, hot: [usize; HOT_ADDRS]) -> u32 {
        self.progs.add(Item { prog: Some(p), guards: None, alt: None }, hot)
    }

    /// Keep a composed program (if any) and the guard results an entry's
    /// walk recorded; one id for both, as [`Caches::add_program`].
    pub fn add_item(&mut self, item: Item<P>, hot: [usize; HOT_ADDRS]) -> u32 {
        self.guarded_items |= item.guards.is_some();
        self.progs.add(item, hot)
    }

    /// Whether an entry may carry guard results (see `guarded_items`).
    #[inline]
    pub fn has_guarded_items(&self) -> bool {
        self.guarded_items
    }

    /// Hold item `id` (a burst resolved a packet to it before running
    /// anything): installs by earlier packets of the burst may replace the
    /// entry that named it, which must neither free the item nor let its id
    /// name another one before the packet ran. [`Caches::unpin`] after.
    #[inline]
    pub fn pin(&mut self, id: u32) {
        self.progs.retain(id);
    }

    /// Let go of an item [`Caches::pin`] held.
    #[inline]
    pub fn unpin(&mut self, id: u32) {
        self.progs.release(id);
    }

    /// Free a program no entry took.
    pub fn drop_if_unused(&mut self, id: u32) {
        if self.progs.slots.get(id as usize).is_some_and(|s| s.holders == 0) {
            self.progs.retain(id);
            self.progs.release(id);
        }
    }

    /// Start loading item `id`'s slot (a staged burst reads it one stage
    /// later).
    #[inline]
    pub fn prefetch_item(&self, id: u32) {
        if let Some(s) = self.progs.slots.get(id as usize) {
            crate::prefetch(s);
        }
    }

    /// The composed program `id`, having started to load it and the
    /// addresses its slot keeps (the stage after [`Caches::prefetch_item`]).
    #[inline]
    pub fn prefetch_program(&self, id: u32) -> Option<&P> {
        let s = self.progs.slots.get(id as usize)?;
        let prog = s.item.as_ref()?.prog.as_deref()?;
        // Every line of it (its size is in the slot's fat pointer).
        let start = prog as *const P as *const u8;
        for off in (0..std::mem::size_of_val(prog)).step_by(64) {
            crate::prefetch(start.wrapping_add(off));
        }
        for &a in s.hot.iter().take_while(|a| **a != 0) {
            prefetch_lines(a);
        }
        Some(prog)
    }

    /// The composed program `id`.
    #[inline]
    pub fn program(&self, id: u32) -> Option<&P> {
        self.progs.slots.get(id as usize)?.item.as_ref()?.prog.as_deref()
    }

    /// The alternate of item `id` (see [`Item::alt`]).
    #[inline]
    pub fn alt(&self, id: u32) -> Option<Resolved> {
        self.progs.slots.get(id as usize)?.item.as_ref()?.alt.as_deref().copied()
    }

    fn has_guards(&self, id: u32) -> bool {
        self.progs
            .slots
            .get(id as usize)
            .and_then(|s| s.item.as_ref())
            .is_some_and(|i| i.guards.is_some())
    }

    /// Makes `res` the alternate of item `a` (holding its item, letting go
    /// of the one it replaces).
    fn set_alt(&mut self, a: u32, res: Resolved) {
        self.progs.retain(res.prog);
        let old = match self.progs.slots.get_mut(a as usize).and_then(|s| s.item.as_mut()) {
            Some(item) => item.alt.replace(Box::new(res)),
            None => {
                self.progs.release(res.prog);
                return;
            }
        };
        if let Some(o) = old.filter(|o| o.prog != NO_PROG) {
            self.progs.release(o.prog);
        }
    }

    /// The guard results entry item `id` must see again on a hit.
    #[inline]
    pub fn guarded(&self, id: u32) -> Option<&Guarded> {
        self.progs.slots.get(id as usize)?.item.as_ref()?.guards.as_deref()
    }

    /// Exact-match probe.
    #[inline]
    pub fn lookup_exact(&mut self, key: &FlowKey, gen: u64) -> Option<Resolved> {
        self.lookup_exact_hashed(key, hash_key(key), gen)
    }

    /// The exact-cache hash of `key`, having started to load its slot (a
    /// burst hashes every packet first, then probes).
    #[inline]
    pub fn exact_hash_prefetch(&self, key: &FlowKey) -> u64 {
        let h = hash_key(key);
        if let Some(s) = self.exact.get(h as usize & (EXACT_SLOTS - 1)) {
            crate::prefetch(s);
        }
        h
    }

    /// [`Caches::lookup_exact`] with the hash already computed.
    #[inline]
    pub fn lookup_exact_hashed(&mut self, key: &FlowKey, hash: u64, gen: u64) -> Option<Resolved> {
        let i = hash as usize & (EXACT_SLOTS - 1);
        match self.exact.get(i) {
            Some(s) if s.gen == gen && s.key == *key => {
                self.stats.exact_hits += 1;
                Some(s.res)
            }
            _ => {
                self.stats.exact_misses += 1;
                None
            }
        }
    }

    /// Start loading the raw-header slot of `rk` (a burst computes every
    /// frame's raw key first, then probes).
    #[inline]
    pub fn raw_prefetch(&self, rk: &RawKey) {
        if let Some(s) = self.raw.get(rk.hash as usize & (RAW_SLOTS - 1)) {
            crate::prefetch(s);
        }
    }

    /// Raw-header probe: a frame with raw key `rk`, received with `meta`,
    /// parsed with extract program `extract` (its address, 0: none). On a
    /// hit, the key and [`ParseInfo`] its parse would give are written to
    /// `key` and `info` and what the exact cache holds for that key is
    /// returned, in flow generation `gen`.
    #[inline]
    pub fn lookup_raw(
        &mut self,
        rk: &RawKey,
        meta: &Meta,
        extract: usize,
        gen: u64,
        key: &mut FlowKey,
        info: &mut ParseInfo,
    ) -> Option<Resolved> {
        let hit = self.raw.get(rk.hash as usize & (RAW_SLOTS - 1)).and_then(|s| {
            let same = s.stamp != 0
                && s.len == rk.len
                && s.words.iter().zip(&rk.words).fold(0, |d, (a, b)| d | (a ^ b)) == 0
                && s.meta == *meta
                && s.extract == extract;
            let e = self.exact.get(s.exact as usize).filter(|e| same && e.stamp == s.stamp)?;
            (e.gen == gen).then_some((s, e))
        });
        match hit {
            Some((s, e)) => {
                *key = e.key;
                *info = s.info;
                let res = e.res;
                self.stats.raw_hits += 1;
                self.stats.exact_hits += 1;
                Some(res)
            }
            None => {
                self.stats.raw_misses += 1;
                None
            }
        }
    }

    /// After a packet with raw key `rk` was parsed (to `key` and `info`,
    /// reading no byte past [`RAW_BYTES`]: the caller checks) and its
    /// exact-cache probe with `exact_hash`: if the exact slot now holds
    /// `key` in generation `gen`, remember it for the raw key (replacing
    /// whatever the raw slot held).
    pub fn install_raw(
        &mut self,
        rk: &RawKey,
        meta: &Meta,
        extract: usize,
        parsed: (&FlowKey, &ParseInfo),
        exact_hash: u64,
        gen: u64,
    ) {
        let i = exact_hash as usize & (EXACT_SLOTS - 1);
        let Some(e) = self.exact.get(i) else { return };
        if e.stamp == 0 || e.gen != gen || e.key != *parsed.0 {
            return;
        }
        if self.raw.is_empty() {
            let empty = RawSlot {
                words: [0; RAW_WORDS],
                len: 0,
                exact: 0,
                stamp: 0,
                extract: 0,
                meta: Meta::default(),
                info: ParseInfo::default(),
            };
            self.raw = vec![empty; RAW_SLOTS];
        }
        let stamp = e.stamp;
        if let Some(s) = self.raw.get_mut(rk.hash as usize & (RAW_SLOTS - 1)) {
            *s = RawSlot {
                words: rk.words,
                len: rk.len,
                exact: i as u32,
                stamp,
                extract,
                meta: *meta,
                info: *parsed.1,
            };
        }
    }

    /// Megaflow probe: every mask in turn, first current entry wins.
    #[inline]
    pub fn lookup_megaflow(&mut self, key: &FlowKey, gen: u64) -> Option<Resolved> {
        for st in &self.mega {
            let mk = st.masked(key);
            if let Some((g, res)) = st.map.get(&mk) {
                if g == gen {
                    self.stats.megaflow_hits += 1;
                    return Some(*res);
                }
            }
        }
        self.stats.megaflow_misses += 1;
        None
    }

    pub fn install_exact(&mut self, key: &FlowKey, res: Resolved, gen: u64) {
        self.put_exact(key, res, gen, false);
    }

    /// [`Caches::install_exact`]; with `hold`, the replaced entry's item
    /// is kept until [`Caches::release_held`].
    fn put_exact(&mut self, key: &FlowKey, res: Resolved, gen: u64, hold: bool) {
        if self.exact.is_empty() {
            let empty =
                ExactSlot { gen: 0, stamp: 0, key: FlowKey::ZERO, res: Resolved::default() };
            self.exact = vec![empty; EXACT_SLOTS];
        }
        let i = exact_slot(key);
        self.exact_stamp += 1;
        let stamp = self.exact_stamp;
        if let Some(s) = self.exact.get_mut(i) {
            let old = std::mem::replace(s, ExactSlot { gen, stamp, key: *key, res });
            if res.prog != NO_PROG {
                self.progs.retain(res.prog);
            }
            if old.res.prog != NO_PROG {
                if hold {
                    self.held.push(old.res.prog);
                } else {
                    self.progs.release(old.res.prog);
                }
            }
        }
    }

    /// After a megaflow hit: copy the entry into the exact cache if its
    /// slot is free (empty or stale), else one time in
    /// [`EXACT_REPLACE_EVERY`]. With more live flows than slots, replacing
    /// on every hit would make the flows evict each other on every packet
    /// (Open vSwitch inserts into its EMC with a probability for the same
    /// reason).
    pub fn promote(&mut self, key: &FlowKey, res: &Resolved, gen: u64) {
        self.promote_with(key, res, gen, false);
    }

    /// [`Caches::promote`] while a burst is staged: the exact entry it
    /// replaces may be what an earlier packet of the burst resolved to,
    /// and with no megaflow holding that entry's item any more, releasing
    /// it now would free the item before that packet ran (and the burst's
    /// first miss would reuse its id for another flow's program). The
    /// replaced item is held until [`Caches::release_held`], after the
    /// burst ran.
    pub fn promote_staged(&mut self, key: &FlowKey, res: &Resolved, gen: u64) {
        self.promote_with(key, res, gen, true);
    }

    /// [`Caches::promote`], holding the replaced item when `hold` (see
    /// [`Caches::put_exact`]).
    fn promote_with(&mut self, key: &FlowKey, res: &Resolved, gen: u64, hold: bool) {
        let free = self.exact.get(exact_slot(key)).is_none_or(|s| s.gen != gen);
        self.promote_tick = self.promote_tick.wrapping_add(1);
        if free || self.promote_tick % EXACT_REPLACE_EVERY == 0 {
            self.put_exact(key, *res, gen, hold);
        }
    }

    /// Let go of the items [`Caches::promote_staged`] held.
    pub fn release_held(&mut self) {
        while let Some(id) = self.held.pop() {
            self.progs.release(id);
        }
    }

    /// Empty the megaflow maps, releasing the programs their entries held.
    fn clear_megaflows(&mut self) {
        for st in &mut self.mega {
            st.map.for_each_prog(|p| {
                if p != NO_PROG {
                    self.progs.release(p);
                }
            });
            st.map.clear();
        }
        self.mega_len = 0;
    }

    pub fn install_megaflow(&mut self, key: &FlowKey, wc: &FlowMask, res: Resolved, gen: u64) {
        let pos = match self.mega.iter().position(|s| s.mask == *wc) {
            Some(p) => p,
            None => {
                if self.mega.len() >= MEGAFLOW_MAX_MASKS {
                    self.clear_megaflows();
                    self.mega.clear();
                }
                self.mega.push(MegaSubtable::new(wc));
                self.mega.len() - 1
            }
        };
        if self.mega_len >= self.mega_max {
            self.clear_megaflows();
        }
        let Some(st) = self.mega.get_mut(pos) else { return };
        let mk = st.masked(key);
        // The same megaflow, this generation, its walk guarded and the new
        // one too: the guards answered otherwise. Keep both, the new one as
        // the entry's alternate, so packets of either answer hit.
        let current = st.map.get(&mk).filter(|(g, _)| *g == gen).map(|(_, r)| r.prog);
        if let Some(a) = current {
            let both = a != NO_PROG && res.prog != NO_PROG && a != res.prog;
            if both && self.has_guards(a) && self.has_guards(res.prog) {
                self.set_alt(a, res);
                self.stats.guard_alts += 1;
                return;
            }
        }
        if res.prog != NO_PROG {
            self.progs.retain(res.prog);
        }
        let Some(st) = self.mega.get_mut(pos) else { return };
        match st.map.put(&mk, gen, res) {
            None => self.mega_len += 1,
            Some(old) => {
                if old.prog != NO_PROG {
                    self.progs.release(old.prog);
                }
            }
        }
        self.stats.megaflow_entries = self.mega_len as u64;
        self.stats.megaflow_masks = self.mega.len() as u64;
    }

    /// Before a recorded lookup: if a header `set_field` ran since the
    /// previous one, pin the bits that decided whether it applied.
    #[inline]
    pub fn settle(&self, rec: &mut Recorder) {
        if rec.dirty {
            for (w, m) in rec.wc.words.iter_mut().zip(APPLIES.words.iter()) {
                *w |= *m;
            }
            rec.dirty = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(chain: Chain) -> Resolved {
        Resolved { chain, prog: NO_PROG }
    }

    fn chain(hops: &[(u8, u32)]) -> Chain {
        let mut c = Chain::default();
        for &(table, entry) in hops {
            assert!(c.push(Hop { table, entry }));
        }
        c
    }

    #[test]
    fn exact_hits_only_same_key_and_generation() {
        let mut c = Caches::<[u8]>::default();
        let mut k = FlowKey::ZERO;
        k.words[3] = 0x0a00_0001;
        let ch = chain(&[(0, 3), (1, Hop::NO_ENTRY)]);
        assert!(c.lookup_exact(&k, 1).is_none());
        c.install_exact(&k, res(ch), 1);
        assert_eq!(c.lookup_exact(&k, 1).map(|r| r.chain), Some(ch));
        assert!(c.lookup_exact(&k, 2).is_none(), "stale generation is a miss");
        let mut k2 = k;
        k2.words[23] = 1;
        assert!(c.lookup_exact(&k2, 1).is_none());
        assert_eq!((c.stats.exact_hits, c.stats.exact_misses), (1, 3));
    }

    #[test]
    fn raw_hits_need_same_bytes_length_port_and_a_live_exact_slot() {
        use sluice_packet::parse::parse;
        let mut c = Caches::<[u8]>::default();
        let frame: Vec<u8> = (0..120u8).collect();
        let meta = Meta { in_port: 1, ..Meta::default() };
        let mut key = FlowKey::ZERO;
        let info = parse(&frame, &meta, &mut key);
        let ch = chain(&[(0, 3)]);
        c.install_exact(&key, res(ch), 1);
        let rk = RawKey::of(&frame, &meta);
        c.install_raw(&rk, &meta, 0, (&key, &info), hash_key(&key), 1);
        let probe = |c: &mut Caches<[u8]>, f: &[u8], m: &Meta, x: usize, gen: u64| {
            let (mut k, mut i) = (FlowKey::ZERO, ParseInfo::default());
            c.lookup_raw(&RawKey::of(f, m), m, x, gen, &mut k, &mut i).map(|r| (r.chain, k, i))
        };
        assert_eq!(probe(&mut c, &frame, &meta, 0, 1), Some((ch, key, info)));
        // A byte past the raw key's 96 is not looked at; one inside is.
        let mut far = frame.clone();
        far[100] ^= 1;
        assert!(probe(&mut c, &far, &meta, 0, 1).is_some());
        let mut near = frame.clone();
        near[95] ^= 1;
        assert!(probe(&mut c, &near, &meta, 0, 1).is_none());
        assert!(probe(&mut c, &frame[..119], &meta, 0, 1).is_none(), "length");
        let other = Meta { in_port: 2, ..meta };
        assert!(probe(&mut c, &frame, &other, 0, 1).is_none(), "ingress port");
        assert!(probe(&mut c, &frame, &meta, 7, 1).is_none(), "extract program");
        assert!(probe(&mut c, &frame, &meta, 0, 2).is_none(), "generation");
        // The exact slot rewritten (even with the same key): the raw slot
        // no longer names it.
        c.install_exact(&key, res(chain(&[(0, 4)])), 1);
        assert!(probe(&mut c, &frame, &meta, 0, 1).is_none(), "stamp");
        // Not learnt when the exact slot holds another key.
        let mut k2 = key;
        k2.words[0] ^= 1;
        c.install_raw(&rk, &meta, 0, (&k2, &info), hash_key(&key), 1);
        assert!(probe(&mut c, &frame, &meta, 0, 1).is_none());
        assert_eq!(c.stats.raw_hits, 2);
    }

    #[test]
    fn megaflow_matches_on_masked_bits_only() {
        let mut c = Caches::<[u8]>::default();
        let mut wc = FlowMask::ZERO;
        wc.words[3] = 0xffff_0000;
        let mut k = FlowKey::ZERO;
        k.words[3] = 0x0a01_0203;
        k.words[4] = 80;
        let ch = chain(&[(0, 7)]);
        c.install_megaflow(&k, &wc, res(ch), 5);
        let mut k2 = k;
        k2.words[3] = 0x0a01_ffff; // same /16
        k2.words[4] = 443; // unconsulted word
        assert_eq!(c.lookup_megaflow(&k2, 5).map(|r| r.chain), Some(ch));
        k2.words[3] = 0x0a02_0000;
        assert!(c.lookup_megaflow(&k2, 5).is_none());
        assert!(c.lookup_megaflow(&k, 6).is_none());
        assert_eq!((c.stats.megaflow_entries, c.stats.megaflow_masks), (1, 1));
    }

    /// Every size class of compact megaflow keys (1, 3, 6 and all 24
    /// masked words): a key differing from the installed one only outside
    /// the mask hits, and one differing in any single masked word misses,
    /// the last packed word included.
    #[test]
    fn compact_megaflows_match_on_every_masked_word() {
        for n in [1usize, 2, 3, 4, 6, 8, 9, KEY_WORDS] {
            let mut c = Caches::<[u8]>::default();
            let mut wc = FlowMask::ZERO;
            // Spread the masked words over the key, the last word included.
            let words: Vec<usize> = (0..n).map(|i| KEY_WORDS - 1 - i * KEY_WORDS / n).collect();
            for &w in &words {
                wc.words[w] = 0x00ff_ff00_0000_ff0f;
            }
            let mut k = FlowKey::ZERO;
            for (w, v) in k.words.iter_mut().enumerate() {
                *v = 0x0101_0101_0101_0101u64.wrapping_mul(w as u64 + 1);
            }
            let ch = chain(&[(0, n as u32)]);
            c.install_megaflow(&k, &wc, res(ch), 3);
            let mut outside = k;
            for w in outside.words.iter_mut() {
                *w ^= 0xff00_00ff_ffff_00f0;
            }
            assert_eq!(c.lookup_megaflow(&outside, 3).map(|r| r.chain), Some(ch), "{n} words");
            for &w in &words {
                let mut inside = k;
                inside.words[w] ^= 0x0000_0100_0000_0000;
                assert!(c.lookup_megaflow(&inside, 3).is_none(), "{n} words, word {w}");
            }
            assert_eq!(c.stats.megaflow_entries, 1);
        }
    }

    /// A compact entry compares every packed word, not only the hash: a
    /// probe with the same hash (a collision) and one word different
    /// does not match, in every size class.
    #[test]
    fn compact_megaflows_compare_words_not_only_hashes() {
        fn check<const N: usize>() {
            let mut mk = MaskedKey { hash: 42, words: [0; KEY_WORDS] };
            for (i, w) in mk.words.iter_mut().take(N).enumerate() {
                *w = i as u64 + 1;
            }
            let e = Mega::<N>::new(&mk, 1, res(chain(&[(0, 1)])));
            assert!(e.holds(&mk));
            for i in 0..N {
                let mut other = mk;
                other.words[i] ^= 1 << 40;
                assert!(!e.holds(&other), "{N} words, word {i}");
            }
        }
        check::<2>();
        check::<4>();
        check::<8>();
        check::<KEY_WORDS>();
    }

    #[test]
    fn megaflow_is_bounded() {
        let mut c = Caches::<[u8]>::default();
        let mut wc = FlowMask::ZERO;
        wc.words[0] = u64::MAX;
        for i in 0..(MEGAFLOW_MAX as u64 + 10) {
            let mut k = FlowKey::ZERO;
            k.words[0] = i;
            c.install_megaflow(&k, &wc, res(chain(&[(0, 0)])), 1);
        }
        assert!(c.stats.megaflow_entries <= MEGAFLOW_MAX as u64);
        for i in 0..(MEGAFLOW_MAX_MASKS as u64 + 3) {
            let mut m = FlowMask::ZERO;
            m.words[1] = i + 1;
            c.install_megaflow(&FlowKey::ZERO, &m, res(chain(&[(0, 0)])), 1);
        }
        assert!(c.stats.megaflow_masks <= MEGAFLOW_MAX_MASKS as u64);
    }

    /// A hot entry names the first line and how many follow it.
    #[test]
    fn hot_lines_cover_the_bytes() {
        assert_eq!(hot_lines(0x1000, 1), 0x1000);
        assert_eq!(hot_lines(0x103f, 1), 0x1000);
        assert_eq!(hot_lines(0x1000, 64), 0x1000);
        assert_eq!(hot_lines(0x1000, 65), 0x1001);
        // 0x1030..0x1050 crosses into the second line.
        assert_eq!(hot_lines(0x1030, 0x20), 0x1001);
        assert_eq!(hot_lines(0x1010, 160), 0x1002);
        assert_eq!(hot_lines(0x1000, 1 << 20), 0x1000 | 63);
        assert_eq!(hot_lines(0x1000, 0), 0);
        assert_eq!(hot_lines(0, 8), 0);
    }

    /// A composed program lives while an exact or megaflow entry holds it
    /// and is freed (its id reused) when the last one is replaced.
    #[test]
    fn programs_are_freed_with_their_last_entry() {
        let mut c = Caches::<[u8]>::default();
        let mut wc = FlowMask::ZERO;
        wc.words[0] = u64::MAX;
        let k = FlowKey::ZERO;
        let id = c.add_program(Box::new([]), [0; HOT_ADDRS]);
        assert!(c.program(id).is_some());
        let r = Resolved { chain: chain(&[(0, 1)]), prog: id };
        c.install_exact(&k, r, 1);
        c.install_megaflow(&k, &wc, r, 1);
        assert_eq!(c.progs.slots[id as usize].holders, 2);
        // Replacing the exact slot releases one holder.
        c.install_exact(&k, res(chain(&[(0, 2)])), 1);
        assert_eq!(c.progs.slots[id as usize].holders, 1);
        // Replacing the megaflow releases the last one: the id is free.
        c.install_megaflow(&k, &wc, res(chain(&[(0, 3)])), 1);
        assert_eq!(c.progs.slots[id as usize].holders, 0);
        assert_eq!(c.progs.free, vec![id]);
        assert!(c.program(id).is_none());
        // An unused program is dropped at once.
        let id2 = c.add_program(Box::new([]), [0; HOT_ADDRS]);
        assert_eq!(id2, id, "freed id reused");
        c.drop_if_unused(id2);
        assert_eq!(c.progs.free, vec![id]);
    }

    /// A megaflow whose guards answered otherwise keeps the second walk
    /// as its entry's alternate (holding it) instead of replacing the
    /// entry; the alternate goes when the item holding it goes.
    #[test]
    fn guarded_megaflows_keep_an_alternate() {
        let mut c = Caches::<[u8]>::default();
        let mut wc = FlowMask::ZERO;
        wc.words[0] = u64::MAX;
        let k = FlowKey::ZERO;
        let guarded = |c: &mut Caches<[u8]>, result| {
            let mut chain = GuardChain::default();
            chain.push((7, result));
            let g = Guarded { chain, refs: Box::new([]) };
            let item = Item {
                prog: Some(Box::new([]) as Box<[u8]>),
                guards: Some(Box::new(g)),
                alt: None,
            };
            c.add_item(item, [0; HOT_ADDRS])
        };
        let a = guarded(&mut c, true);
        let b = guarded(&mut c, false);
        let ra = Resolved { chain: chain(&[(0, 1)]), prog: a };
        let rb = Resolved { chain: chain(&[(0, 2)]), prog: b };
        c.install_megaflow(&k, &wc, ra, 1);
        c.install_megaflow(&k, &wc, rb, 1);
        assert_eq!(c.lookup_megaflow(&k, 1).map(|r| r.prog), Some(a), "the entry stays");
        assert_eq!(c.alt(a).map(|r| (r.prog, r.chain)), Some((b, rb.chain)));
        assert_eq!((c.progs.slots[a as usize].holders, c.progs.slots[b as usize].holders), (1, 1));
        assert_eq!(c.stats.guard_alts, 1);
        // Another generation replaces the entry: both items are freed.
        c.install_megaflow(&k, &wc, res(chain(&[(0, 3)])), 2);
        assert!(c.program(a).is_none() && c.program(b).is_none());
        assert_eq!(c.progs.free, vec![a, b]);
    }

    #[test]
    fn chain_prefix_is_bounded() {
        let mut c = Chain::default();
        for t in 0..MAX_HOPS as u8 {
            assert!(c.push(Hop { table: t, entry: 0 }));
        }
        assert!(!c.push(Hop { table: 99, entry: 0 }));
        assert_eq!(c.hops().len(), MAX_HOPS);
    }

    #[test]
    fn settle_adds_presence_vlan_and_ethertype() {
        let c = Caches::<[u8]>::default();
        let mut r = Recorder::new(FlowKey::ZERO, None);
        c.settle(&mut r);
        assert!(r.wc.is_zero());
        r.dirty = true;
        c.settle(&mut r);
        assert_eq!(r.wc.words[PRESENCE_WORD], u64::MAX);
        assert!(!r.dirty);
    }
}
