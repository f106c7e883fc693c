//! Maps: persistent key/value state shared by filter-program runs.
//!
//! What? The four map types a filter program may use, with Linux's type
//! numbers (`enum bpf_map_type`; Oko's differed, which made its objects
//! incompatible with clang/libbpf tooling):
//!
//! | Linux type | number | sluice storage |
//! |---|---|---|
//! | `BPF_MAP_TYPE_HASH` | 1 | slab + key index, `-E2BIG` when full |
//! | `BPF_MAP_TYPE_ARRAY` | 2 | slab, key = `u32` index |
//! | `BPF_MAP_TYPE_PERCPU_ARRAY` | 6 | one slab per worker |
//! | `BPF_MAP_TYPE_LRU_HASH` | 9 | slab + key index + recency order; evicts the least recently used entry when full |
//!
//! Basic design: every map's value memory is one slab allocated at load
//! time (`max_entries * value_size` bytes, per worker for per-worker
//! arrays) and never reallocated, so a value address handed to a program
//! (`bpf_map_lookup_elem`) stays valid for the whole run, also for the JIT
//! which uses real addresses. Memory is bounded at load: [`MapDef::validate`]
//! refuses maps whose slabs would exceed [`MAX_MAP_BYTES`].
//!
//! Semantics follow Linux: update flags `BPF_ANY`/`BPF_NOEXIST`/`BPF_EXIST`;
//! errors are returned to the program as negative errno values
//! (`-EEXIST`, `-ENOENT`, `-E2BIG`, `-EINVAL`). Deleting from an array is
//! `-EINVAL`. A value pointer obtained before a delete still points into the
//! slab (stale but memory-safe, like the kernel's preallocated maps).
//!
//! Deliberate differences: LRU eviction picks the exact least recently used
//! entry (the kernel's LRU is approximate and per-CPU), so contents after
//! evictions can differ from the kernel's.

use hashbrown::HashMap;
use std::collections::BTreeMap;

pub const BPF_MAP_TYPE_HASH: u32 = 1;
pub const BPF_MAP_TYPE_ARRAY: u32 = 2;
pub const BPF_MAP_TYPE_PERCPU_ARRAY: u32 = 6;
pub const BPF_MAP_TYPE_LRU_HASH: u32 = 9;

pub const BPF_ANY: u64 = 0;
pub const BPF_NOEXIST: u64 = 1;
pub const BPF_EXIST: u64 = 2;

pub const ENOENT: i64 = 2;
pub const E2BIG: i64 = 7;
pub const EEXIST: i64 = 17;
pub const EINVAL: i64 = 22;

/// Upper bound on the value memory of one map (all workers together).
pub const MAX_MAP_BYTES: u64 = 64 << 20;
/// Upper bound on key and value sizes (Linux allows larger; filter programs never need them).
pub const MAX_KEY_VALUE_SIZE: u32 = 512;

/// A map declaration as found in an object file (`struct bpf_map_def` or a BTF-defined map).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapDef {
    pub name: String,
    pub map_type: u32,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub flags: u32,
}

impl MapDef {
    /// Whether maps of `self` and `other` are laid out alike (type,
    /// sizes, entries, flags; names aside): what the JIT's memory proof
    /// about one holds for the other.
    pub fn same_memory(&self, other: &MapDef) -> bool {
        (self.map_type, self.key_size, self.value_size, self.max_entries, self.flags)
            == (other.map_type, other.key_size, other.value_size, other.max_entries, other.flags)
    }

    /// Checks that sluice supports the map and that its memory is bounded.
    pub fn validate(&self, workers: u32) -> Result<(), String> {
        let per_worker = match self.map_type {
            BPF_MAP_TYPE_HASH | BPF_MAP_TYPE_ARRAY | BPF_MAP_TYPE_LRU_HASH => false,
            BPF_MAP_TYPE_PERCPU_ARRAY => true,
            t => return Err(format!("map {}: unsupported map type {t}", self.name)),
        };
        if matches!(self.map_type, BPF_MAP_TYPE_ARRAY | BPF_MAP_TYPE_PERCPU_ARRAY)
            && self.key_size != 4
        {
            return Err(format!("map {}: array key_size must be 4", self.name));
        }
        if self.key_size == 0 || self.key_size > MAX_KEY_VALUE_SIZE {
            return Err(format!("map {}: bad key_size {}", self.name, self.key_size));
        }
        if self.value_size == 0 || self.value_size > MAX_KEY_VALUE_SIZE {
            return Err(format!("map {}: bad value_size {}", self.name, self.value_size));
        }
        if self.max_entries == 0 {
            return Err(format!("map {}: max_entries is 0", self.name));
        }
        let copies = if per_worker { workers.max(1) as u64 } else { 1 };
        let bytes = self.value_size as u64 * self.max_entries as u64 * copies;
        if bytes > MAX_MAP_BYTES {
            return Err(format!(
                "map {}: {bytes} bytes of values exceed the {MAX_MAP_BYTES}-byte limit",
                self.name
            ));
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
struct HashIndex {
    index: HashMap<Vec<u8>, u32>,
    keys: Vec<Option<Vec<u8>>>,
    free: Vec<u32>,
    /// LRU only: slot -> last use tick, and tick -> slot.
    lru: Option<(Vec<u64>, BTreeMap<u64, u32>, u64)>,
}

impl HashIndex {
    fn touch(&mut self, slot: u32) {
        if let Some((ticks, order, clock)) = &mut self.lru {
            *clock += 1;
            if let Some(t) = ticks.get_mut(slot as usize) {
                order.remove(t);
                *t = *clock;
                order.insert(*clock, slot);
            }
        }
    }
    fn release(&mut self, slot: u32) {
        if let Some(Some(k)) = self.keys.get_mut(slot as usize).map(Option::take) {
            self.index.remove(&k);
        }
        if let Some((ticks, order, _)) = &mut self.lru {
            if let Some(t) = ticks.get(slot as usize) {
                order.remove(t);
            }
        }
        self.free.push(slot);
    }
}

/// A live map: definition plus storage. A clone is a separate map with
/// the same contents (a trace runs a program on clones, to leave the live
/// maps as they are).
#[derive(Clone, Debug)]
pub struct Map {
    pub def: MapDef,
    /// Value slabs: one for shared maps, one per worker for per-worker arrays.
    slabs: Vec<Vec<u8>>,
    hash: Option<HashIndex>,
}

/// Where a value lives: slab number and byte offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueRef {
    pub slab: usize,
    pub offset: usize,
}

impl Map {
    /// Creates the map, allocating all value memory now.
    pub fn new(def: MapDef, workers: u32) -> Result<Map, String> {
        def.validate(workers)?;
        let n = def.max_entries as usize;
        let bytes = def.value_size as usize * n;
        let copies =
            if def.map_type == BPF_MAP_TYPE_PERCPU_ARRAY { workers.max(1) as usize } else { 1 };
        let hash = match def.map_type {
            BPF_MAP_TYPE_HASH | BPF_MAP_TYPE_LRU_HASH => Some(HashIndex {
                index: HashMap::new(),
                keys: vec![None; n],
                free: (0..n as u32).rev().collect(),
                lru: (def.map_type == BPF_MAP_TYPE_LRU_HASH)
                    .then(|| (vec![0; n], BTreeMap::new(), 0)),
            }),
            _ => None,
        };
        Ok(Map { slabs: vec![vec![0u8; bytes]; copies], def, hash })
    }

    fn array_index(&self, key: &[u8]) -> Option<usize> {
        let k: [u8; 4] = key.get(..4)?.try_into().ok()?;
        let i = u32::from_le_bytes(k);
        (i < self.def.max_entries).then_some(i as usize)
    }

    /// Looks a key up; `worker` selects the slab of per-worker arrays.
    pub fn lookup(&mut self, key: &[u8], worker: usize) -> Option<ValueRef> {
        let vs = self.def.value_size as usize;
        match &mut self.hash {
            Some(h) => {
                let slot = *h.index.get(key)?;
                h.touch(slot);
                Some(ValueRef { slab: 0, offset: slot as usize * vs })
            }
            None => {
                let i = self.array_index(key)?;
                let slab = if self.slabs.len() > 1 { worker % self.slabs.len() } else { 0 };
                Some(ValueRef { slab, offset: i * vs })
            }
        }
    }

    /// Inserts or replaces; returns 0 or a negative errno, as Linux does.
    pub fn update(&mut self, key: &[u8], value: &[u8], flags: u64, worker: usize) -> i64 {
        let vs = self.def.value_size as usize;
        if flags > BPF_EXIST || key.len() != self.def.key_size as usize || value.len() != vs {
            return -EINVAL;
        }
        let target = match &mut self.hash {
            Some(h) => {
                if let Some(&slot) = h.index.get(key) {
                    if flags == BPF_NOEXIST {
                        return -EEXIST;
                    }
                    h.touch(slot);
                    ValueRef { slab: 0, offset: slot as usize * vs }
                } else {
                    if flags == BPF_EXIST {
                        return -ENOENT;
                    }
                    if h.free.is_empty() {
                        let victim =
                            h.lru.as_ref().and_then(|(_, order, _)| order.values().next().copied());
                        match victim {
                            Some(v) => h.release(v),
                            None => return -E2BIG,
                        }
                    }
                    let Some(slot) = h.free.pop() else {
                        return -E2BIG;
                    };
                    if let Some(k) = h.keys.get_mut(slot as usize) {
                        *k = Some(key.to_vec());
                    }
                    h.index.insert(key.to_vec(), slot);
                    h.touch(slot);
                    ValueRef { slab: 0, offset: slot as usize * vs }
                }
            }
            None => {
                let Some(i) = self.array_index(key) else {
                    return -E2BIG;
                };
                if flags == BPF_NOEXIST {
                    return -EEXIST;
                }
                let slab = if self.slabs.len() > 1 { worker % self.slabs.len() } else { 0 };
                ValueRef { slab, offset: i * vs }
            }
        };
        if let Some(dst) = self
            .slabs
            .get_mut(target.slab)
            .and_then(|s| s.get_mut(target.offset..target.offset + vs))
        {
            dst.copy_from_slice(value);
        }
        0
    }

    /// Deletes a key; arrays cannot delete (`-EINVAL`).
    pub fn delete(&mut self, key: &[u8]) -> i64 {
        match &mut self.hash {
            Some(h) => match h.index.get(key).copied() {
                Some(slot) => {
                    h.release(slot);
                    0
                }
                None => -ENOENT,
            },
            None => -EINVAL,
        }
    }

    /// The value slab `n` (for memory accesses by the interpreter and JIT).
    pub fn slab(&self, n: usize) -> Option<&[u8]> {
        self.slabs.get(n).map(Vec::as_slice)
    }
    pub fn slab_mut(&mut self, n: usize) -> Option<&mut [u8]> {
        self.slabs.get_mut(n).map(Vec::as_mut_slice)
    }
    /// Raw base address of slab `n`; stable for the map's life (never reallocated).
    pub fn slab_ptr(&mut self, n: usize) -> *mut u8 {
        self.slabs.get_mut(n).map(|s| s.as_mut_ptr()).unwrap_or(std::ptr::null_mut())
    }
    pub fn slab_count(&self) -> usize {
        self.slabs.len()
    }

    /// Converts a raw address inside one of this map's slabs to a [`ValueRef`].
    pub fn ref_of_addr(&mut self, addr: u64) -> Option<ValueRef> {
        for (i, s) in self.slabs.iter_mut().enumerate() {
            let base = s.as_mut_ptr() as u64;
            if addr >= base && addr < base + s.len() as u64 {
                return Some(ValueRef { slab: i, offset: (addr - base) as usize });
            }
        }
        None
    }

    /// All entries as (key, value) pairs, sorted by key, for dumps and
    /// comparisons. Arrays list every index; per-worker arrays list worker 0..n
    /// values concatenated.
    pub fn entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let vs = self.def.value_size as usize;
        let mut out = Vec::new();
        match &self.hash {
            Some(h) => {
                for (k, &slot) in &h.index {
                    let off = slot as usize * vs;
                    let v = self.slabs.first().and_then(|s| s.get(off..off + vs)).unwrap_or(&[]);
                    out.push((k.clone(), v.to_vec()));
                }
                out.sort();
            }
            None => {
                for i in 0..self.def.max_entries as usize {
                    let mut v = Vec::new();
                    for s in &self.slabs {
                        v.extend_from_slice(s.get(i * vs..(i + 1) * vs).unwrap_or(&[]));
                    }
                    out.push(((i as u32).to_le_bytes().to_vec(), v));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(t: u32, max: u32) -> MapDef {
        MapDef {
            name: "m".into(),
            map_type: t,
            key_size: 4,
            value_size: 8,
            max_entries: max,
            flags: 0,
        }
    }

    #[test]
    fn hash_semantics() {
        let mut m = Map::new(def(BPF_MAP_TYPE_HASH, 2), 1).unwrap();
        assert_eq!(m.update(&[1, 0, 0, 0], &[7; 8], BPF_EXIST, 0), -ENOENT);
        assert_eq!(m.update(&[1, 0, 0, 0], &[7; 8], BPF_ANY, 0), 0);
        assert_eq!(m.update(&[1, 0, 0, 0], &[8; 8], BPF_NOEXIST, 0), -EEXIST);
        assert_eq!(m.update(&[2, 0, 0, 0], &[8; 8], BPF_ANY, 0), 0);
        assert_eq!(m.update(&[3, 0, 0, 0], &[9; 8], BPF_ANY, 0), -E2BIG);
        assert_eq!(m.delete(&[1, 0, 0, 0]), 0);
        assert_eq!(m.delete(&[1, 0, 0, 0]), -ENOENT);
        assert_eq!(m.update(&[3, 0, 0, 0], &[9; 8], BPF_ANY, 0), 0);
        let e = m.entries();
        assert_eq!(e, vec![(vec![2, 0, 0, 0], vec![8; 8]), (vec![3, 0, 0, 0], vec![9; 8])]);
    }

    #[test]
    fn lru_evicts_oldest() {
        let mut m = Map::new(def(BPF_MAP_TYPE_LRU_HASH, 2), 1).unwrap();
        m.update(&[1, 0, 0, 0], &[1; 8], BPF_ANY, 0);
        m.update(&[2, 0, 0, 0], &[2; 8], BPF_ANY, 0);
        assert!(m.lookup(&[1, 0, 0, 0], 0).is_some()); // 2 is now oldest
        assert_eq!(m.update(&[3, 0, 0, 0], &[3; 8], BPF_ANY, 0), 0);
        assert!(m.lookup(&[2, 0, 0, 0], 0).is_none());
        assert!(m.lookup(&[1, 0, 0, 0], 0).is_some());
    }

    #[test]
    fn array_semantics() {
        let mut m = Map::new(def(BPF_MAP_TYPE_ARRAY, 4), 1).unwrap();
        assert_eq!(m.lookup(&[3, 0, 0, 0], 0), Some(ValueRef { slab: 0, offset: 24 }));
        assert_eq!(m.lookup(&[4, 0, 0, 0], 0), None);
        assert_eq!(m.delete(&[0, 0, 0, 0]), -EINVAL);
        assert_eq!(m.update(&[0, 0, 0, 0], &[1; 8], BPF_NOEXIST, 0), -EEXIST);
    }

    #[test]
    fn bounded_memory() {
        let mut d = def(BPF_MAP_TYPE_HASH, u32::MAX);
        assert!(d.validate(1).is_err());
        d.max_entries = 0;
        assert!(d.validate(1).is_err());
        assert!(def(99, 1).validate(1).is_err());
    }
}
