//! # sluice-pipeline: the reference OpenFlow 1.3.5 pipeline
//!
//! What happens to every packet under every flow table, group and meter the
//! OpenFlow 1.3.5 spec allows, written for clarity first. It is the oracle
//! every fast path (tuple-space classifier, caches, generated code) is
//! tested against, so its rule is: straight from the spec, no cleverness
//! that could hide a bug. The fast paths live beside it in this crate
//! (table index, caches) and change only which lookups run, never what
//! a packet's instructions do.
//!
//! ## The API is small
//! - [`Pipeline::handle`] applies one controller message (flow-mod,
//!   group-mod, meter-mod, port-mod, table-mod, packet-out, set-config,
//!   multipart request, barrier, …) and returns the replies.
//! - [`Pipeline::process`] runs one packet received on a port through the
//!   tables; transmitted frames go to a [`Tx`] sink supplied by the caller.
//! - [`Pipeline::advance`] moves the pipeline clock (nanoseconds); timeouts
//!   fire and meters refill only through it. There is no hidden clock, so
//!   every test is deterministic.
//! - Asynchronous messages (PACKET_IN, FLOW_REMOVED, PORT_STATUS) queue up
//!   and are taken with [`Pipeline::take_async`].
//! - [`fuzz_pipeline`] reads arbitrary bytes as groups, flows and a packet
//!   and runs them (the cargo-fuzz entry point; it must never panic);
//!   [`fuzz_datapath_diff`] runs such a recipe through every datapath and
//!   cache configuration and panics on any difference.
//!
//! ## Datapaths and caches (`Config::datapath`, `Config::cache`)
//! The semantics above are one; how tables are searched is a setting, and
//! every setting must give identical frames, messages and counters
//! (`tests/differential.rs`, [`fuzz_datapath_diff`]):
//! - `Datapath::Reference`: each table's priority-sorted vector is scanned
//!   linearly (the oracle). `Datapath::Classifier` (default): each table
//!   also keeps a `sluice-classifier` tuple-space index of its entries
//!   (see `table.rs` for the cost of flow-mods).
//! - `CacheMode::On` (default): an exact-match cache, then a megaflow
//!   cache, in front of the lookups; `Megaflow`: only the megaflow cache;
//!   `Off`: none. A cache hit skips only the lookups; instructions,
//!   counters, meters, groups and packet-ins run as on the slow path (see
//!   `cache.rs`). [`Pipeline::trace`] always takes the slow path.
//!   [`Pipeline::set_datapath`], [`Pipeline::set_cache`] switch at run
//!   time; [`Pipeline::cache_stats`] reports hits and misses.
//!
//! ## Data layout (shared with the fast paths)
//! Packets are parsed once into a fixed-layout [`FlowKey`] of u64 words
//! (`sluice_packet::key`); matches are compiled to masks at flow-mod time
//! ([`rule::Rule`]). Frames are rewritten in one reusable buffer with
//! headroom; no allocation happens per packet except for what goes to the
//! controller.
//!
//! [`FlowKey`]: sluice_packet::key::FlowKey

pub mod cache;
pub mod control;
mod edit;
pub mod exec;
pub mod flow_mod;
mod fuzz;
pub mod group;
pub mod meter;
pub mod ports;
pub mod rule;
pub mod stats;
pub mod table;

pub use cache::CacheStats;
pub use control::Outgoing;
pub use exec::{TraceEvent, Tx};
pub use fuzz::{fuzz_datapath_diff, fuzz_pipeline};

use group::GroupTable;
use meter::MeterTable;
use ports::Ports;
use sluice_ofp::message::{Message, SwitchConfig};
use table::FlowTable;

/// Switch-wide limits and identity.
#[derive(Clone, Debug)]
pub struct Config {
    pub datapath_id: u64,
    /// Number of flow tables (at most 255: ids 0..=254).
    pub n_tables: u8,
    pub max_flows_per_table: usize,
    /// Packet buffers for PACKET_IN (0 disables buffering).
    pub n_buffers: u32,
    pub max_groups: u32,
    pub max_buckets: usize,
    pub max_meters: u32,
    pub max_bands: u8,
    /// Longest group chain a packet may follow (loop and depth bound).
    pub max_group_depth: usize,
    pub mfr_desc: String,
    pub hw_desc: String,
    pub sw_desc: String,
    pub serial_num: String,
    pub dp_desc: String,
    /// How flow tables are searched (results are identical; only speed differs).
    pub datapath: Datapath,
    /// Which per-pipeline caches sit in front of the table lookups.
    pub cache: CacheMode,
}

/// The flow-table lookup structure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Datapath {
    /// Linear scan of the priority-sorted entries: the oracle.
    Reference,
    /// Tuple-space search (`sluice-classifier`).
    #[default]
    Classifier,
}

/// Caches in front of the table lookups (see `cache.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheMode {
    /// Every packet is classified by the tables. The default: measured with
    /// `sluice bench`, a cache hit (hash and compare of the 192-byte key,
    /// chain replay) still costs more than the tuple-space lookup it saves.
    #[default]
    Off,
    /// Megaflow cache only.
    Megaflow,
    /// Exact-match cache, then megaflow cache, then the tables.
    On,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            datapath_id: 1,
            n_tables: 255,
            max_flows_per_table: 1_000_000,
            n_buffers: 256,
            max_groups: 65_536,
            max_buckets: 64,
            max_meters: 65_536,
            max_bands: 8,
            max_group_depth: 16,
            mfr_desc: "sluice project".into(),
            hw_desc: "sluice reference pipeline".into(),
            sw_desc: env!("CARGO_PKG_VERSION").into(),
            serial_num: "0".into(),
            dp_desc: "sluice".into(),
            datapath: Datapath::default(),
            cache: CacheMode::default(),
        }
    }
}

/// The whole OpenFlow switch state and its packet semantics.
#[derive(Debug)]
pub struct Pipeline {
    cfg: Config,
    tables: Vec<FlowTable>,
    groups: GroupTable,
    meters: MeterTable,
    ports: Ports,
    switch_config: SwitchConfig,
    buffers: exec::Buffers,
    /// Pipeline clock in nanoseconds (moved only by `advance`).
    now_ns: u64,
    /// Next flow-entry sequence number.
    seq: u64,
    /// Queued asynchronous messages.
    async_out: Vec<Message>,
    /// Scratch state reused across packets.
    scratch: exec::Scratch,
    /// Flow generation: bumped by every flow-table change; cache entries
    /// of another generation are misses (see `cache.rs`).
    flow_gen: u64,
    /// Exact-match and megaflow caches (used per `cfg.cache`).
    cache: cache::Caches,
}

impl Pipeline {
    pub fn new(cfg: Config) -> Self {
        let n = usize::from(cfg.n_tables);
        let indexed = cfg.datapath == Datapath::Classifier;
        let table = |_| {
            let mut t = FlowTable::new(cfg.max_flows_per_table);
            t.set_indexed(indexed);
            t
        };
        Pipeline {
            tables: (0..n).map(table).collect(),
            groups: GroupTable::default(),
            meters: MeterTable::default(),
            ports: Ports::default(),
            switch_config: SwitchConfig::default(),
            buffers: exec::Buffers::new(cfg.n_buffers as usize),
            now_ns: 0,
            seq: 0,
            async_out: Vec::new(),
            scratch: exec::Scratch::default(),
            flow_gen: 1,
            cache: cache::Caches::default(),
            cfg,
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Switch the flow-table lookup structure (builds or drops every
    /// table's tuple-space index; empties the caches).
    pub fn set_datapath(&mut self, d: Datapath) {
        self.cfg.datapath = d;
        for t in &mut self.tables {
            t.set_indexed(d == Datapath::Classifier);
        }
        self.tables_changed();
        self.cache.clear();
    }

    /// Choose the caches in front of the tables (empties them).
    pub fn set_cache(&mut self, m: CacheMode) {
        self.cfg.cache = m;
        self.cache.clear();
    }

    /// Hit/miss counts per cache level since the pipeline was made.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats
    }

    /// Note a flow-table change: every cache entry becomes stale.
    pub(crate) fn tables_changed(&mut self) {
        self.flow_gen = self.flow_gen.wrapping_add(1).max(1);
    }

    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    pub fn tables(&self) -> &[FlowTable] {
        &self.tables
    }

    pub fn ports(&self) -> &Ports {
        &self.ports
    }

    pub fn ports_mut(&mut self) -> &mut Ports {
        &mut self.ports
    }

    pub fn groups(&self) -> &GroupTable {
        &self.groups
    }

    pub fn meters(&self) -> &MeterTable {
        &self.meters
    }

    /// Take the queued asynchronous messages (PACKET_IN, FLOW_REMOVED,
    /// PORT_STATUS), oldest first.
    pub fn take_async(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.async_out)
    }
}
