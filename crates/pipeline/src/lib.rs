//! # sluice-pipeline: the reference OpenFlow 1.3.5 pipeline
//!
//! What happens to every packet under every flow table, group and meter the
//! OpenFlow 1.3.5 spec allows. Its reference walk (`reference.rs`) is
//! written for clarity first: linear scans, instructions and actions
//! interpreted straight from the spec, no cleverness that could hide a
//! bug. It is the oracle every fast path (tuple-space classifier, compiled
//! tables, caches, the lowering of actions to the core's ops) is tested
//! against. Every other configuration runs the core's fast walk
//! (`sluice_core::walk`, fed by `exec.rs`) over the ops `lower.rs` made
//! of the instructions at flow-mod time, the index, compiled code and the
//! core's caches (`sluice_core::cache`).
//!
//! ## The API is small
//! - [`Pipeline::handle`] applies one controller message (flow-mod,
//!   group-mod, meter-mod, port-mod, table-mod, packet-out, set-config,
//!   multipart request, barrier, …) and returns the replies.
//! - [`Pipeline::process`] runs one packet received on a port through the
//!   tables; transmitted frames go to a [`Tx`] sink supplied by the caller.
//!   [`Pipeline::process_burst`] runs a burst of frames from one port.
//! - Several threads can forward through one pipeline at once:
//!   [`Pipeline::worker`] hands out a [`Worker`] context (its own scratch
//!   buffers, caches, queued packet-ins and counter shard) and
//!   [`Pipeline::process_with`] takes `&self`: a published copy of the
//!   pipeline (see [`publish`]) is read by every worker without locks.
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
//!   linearly; with caches off this is the oracle, the reference walk
//!   ([`Config::is_oracle`]); with caches on, the fast walk runs lowered
//!   ops over linear scans (the scan's masks un-wildcard the cache
//!   entries). `Datapath::Classifier`: each table
//!   also keeps a `sluice-classifier` tuple-space index of its entries
//!   (see `table.rs` for the cost of flow-mods). `Datapath::Compiled`
//!   (default): every table also gets native code from Cranelift
//!   (`codegen.rs`, `sluice-tablejit`: straight-line tests, per-port
//!   variants, hash probes), the index serving it while code is built
//!   (`Config::jit`: at settle time, or on a compiler thread).
//! - `CacheMode::On`: an exact-match cache, then a megaflow cache, in
//!   front of the lookups; `Megaflow`: only the megaflow cache; `Off`
//!   (the library's default): none; `Auto` (the daemon's default): each
//!   worker runs whichever of the three it measures to be cheapest on its
//!   traffic (`sluice_core::adapt`). A hit runs the
//!   entry's composed program (the counters and actions of the packet's
//!   whole way) or replays its chain of entries; either way counters,
//!   idle times, groups, meters and packet-ins happen per packet as on the
//!   slow path (see `sluice_core::cache`). [`Pipeline::process_burst_with`]
//!   stages a burst so its cache misses overlap. [`Pipeline::trace`]
//!   always takes the reference walk.
//!   [`Pipeline::set_datapath`], [`Pipeline::set_cache`] switch at run
//!   time; [`Pipeline::cache_stats`] and [`Worker::cache_stats`] report
//!   hits and misses. Caches belong to a [`Worker`], never to the shared
//!   pipeline.
//!
//! ## Data layout (shared with the fast paths)
//! Packets are parsed once into a fixed-layout [`FlowKey`] of u64 words
//! (`sluice_packet::key`); matches are compiled to masks at flow-mod time
//! ([`rule::Rule`]). Frames are rewritten in one reusable buffer with
//! headroom; on the fast walk no allocation happens per packet except for
//! what goes to the controller and cache installs (the deferred set holds
//! references to the entries' ops, in place). The reference walk allocates
//! freely: it is written for clarity.
//!
//! [`FlowKey`]: sluice_packet::key::FlowKey

pub mod bundle;
pub mod codegen;
pub mod control;
mod edit;
pub mod exec;
pub mod extension;
pub mod features;
pub mod fieldcopy;
pub mod filterprog;
pub mod flow_mod;
mod fuzz;
pub mod group;
pub mod lower;
pub mod megaflow;
pub mod meter;
pub mod oxm_field;
pub mod pof;
pub mod ports;
pub mod publish;
pub mod reference;
pub mod rule;
pub mod stats;
pub mod table;
/// Counters per worker shard (moved to the core; re-exported for the
/// OpenFlow front end's users).
pub use sluice_core::tally;

pub use codegen::JitOptions;

pub use control::Outgoing;
pub use exec::{TraceEvent, Tx, Worker, WorkerExt};
pub use fuzz::{fuzz_datapath_diff, fuzz_ops, fuzz_pipeline};
pub use sluice_core::cache::CacheStats;

use group::GroupTable;
use meter::MeterTable;
use ports::Ports;
use sluice_core::graph::{Graph, GraphError, Node, NodeId};
use sluice_ofp::message::{Message, SwitchConfig};
use std::sync::{Arc, Mutex};
use table::FlowTable;
use tally::Shard;

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
    /// Bundle limits (`bundle.rs`): open bundles per connection, messages
    /// per bundle, bytes of inner messages per connection.
    pub bundle_limits: bundle::Limits,
    pub mfr_desc: String,
    pub hw_desc: String,
    pub sw_desc: String,
    pub serial_num: String,
    pub dp_desc: String,
    /// How flow tables are searched (results are identical; only speed differs).
    pub datapath: Datapath,
    /// Which per-worker caches sit in front of the table lookups.
    pub cache: CacheMode,
    /// Threads that will forward through this pipeline concurrently (each
    /// gets its own counter shard; see `tally.rs`). More workers than this
    /// still count exactly, through a shared shard.
    pub workers: usize,
    /// How `Datapath::Compiled` builds table code (see `codegen.rs`).
    pub jit: JitOptions,
    /// The experimenter extensions every experimenter object a controller
    /// sends is dispatched through (see `extension.rs`); by default sluice's
    /// own. Add more with [`Config::register`].
    pub extensions: Arc<sluice_ofp::experimenter::Registry>,
    /// Where code is built when `jit.background` is set (the pipeline
    /// starts no thread of its own; the daemon supplies one). `None`:
    /// built when a table settles.
    pub compiler: Option<Arc<dyn codegen::Compiler>>,
    /// How much of the frame an invalid-TTL packet-in carries (see
    /// [`TtlPacketIn`]).
    pub invalid_ttl_packet_in: TtlPacketIn,
}

/// How much of the frame an `INVALID_TTL` packet-in carries.
///
/// OpenFlow 1.3.5 (§7.3.1, `ofp_switch_config`) says `miss_send_len`
/// applies to packets "sent to the controller" by the switch, so a
/// controller that sets `miss_send_len = 0` (Faucet does) gets TTL
/// expiries with no data. Open vSwitch sends the whole frame instead, and
/// controllers are written against it: Faucet builds its ICMP
/// time-exceeded reply from that frame and ignores an empty packet-in, so
/// traceroute through a Faucet router only works with [`TtlPacketIn::Full`].
/// That is the default; [`TtlPacketIn::MissSendLen`] is the spec's
/// reading (`invalid_ttl_packet_in = "miss_send_len"` in `sluice run`'s
/// configuration).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TtlPacketIn {
    /// The whole frame, unbuffered, as Open vSwitch does.
    #[default]
    Full,
    /// Cut to the switch's `miss_send_len` (the rest buffered).
    MissSendLen,
}

impl Config {
    /// What the daemon (`sluice run`) forwards with unless told otherwise:
    /// compiled tables built in the background (flow-mods and forwarding
    /// never wait for Cranelift) with the default size thresholds, and
    /// the caches in `Auto` mode: each worker keeps both caches, only the
    /// megaflow cache or none, by what it measures to be cheapest. `sluice-datapath` takes its default from here and
    /// adds its compiler thread (`compiler`); the differential tests run
    /// this setting with a compiler thread of their own.
    pub fn daemon() -> Config {
        Config {
            datapath: Datapath::Compiled,
            cache: CacheMode::Auto,
            jit: JitOptions { background: true, ..JitOptions::default() },
            ..Config::default()
        }
    }

    /// Whether this is the oracle configuration: `Datapath::Reference`
    /// with caches off, where packets take the OpenFlow reference walk
    /// (`reference.rs`: linear scans, instructions and actions
    /// interpreted from the spec). Every other configuration runs the
    /// fast walk over lowered ops.
    pub fn is_oracle(&self) -> bool {
        self.datapath == Datapath::Reference && self.cache == CacheMode::Off
    }

    /// Counter shards: the owner's, one per worker, one shared.
    pub fn shards(&self) -> usize {
        self.workers.saturating_add(2)
    }
}

/// The flow-table lookup structure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Datapath {
    /// Linear scan of the priority-sorted entries: with caches off, the
    /// oracle (see [`Config::is_oracle`]).
    Reference,
    /// Tuple-space search (`sluice-classifier`).
    Classifier,
    /// Tables of at most `table::COMPILE_MAX` entries compiled to native
    /// code (`sluice-tablejit`); larger ones, and any table while its code
    /// is being made, use the tuple-space index. The default: measured with
    /// `sluice bench`, as fast as `Classifier` on large tables and faster
    /// on small ones (1 rule: 7.2 vs 5.9 Mpps; 10 L3 routes: 6.9 vs 3.9).
    #[default]
    Compiled,
}

/// What a worker in `CacheMode::Auto` chose (see `sluice_core::adapt`).
pub use sluice_core::adapt::Choices as CacheChoices;
/// Caches in front of the table lookups (see `sluice_core::cache`).
pub use sluice_core::walk::CacheMode;

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
            bundle_limits: bundle::Limits::default(),
            mfr_desc: "sluice project".into(),
            hw_desc: "sluice reference pipeline".into(),
            sw_desc: env!("CARGO_PKG_VERSION").into(),
            serial_num: "0".into(),
            dp_desc: "sluice".into(),
            datapath: Datapath::default(),
            cache: CacheMode::default(),
            workers: 1,
            jit: JitOptions::default(),
            extensions: Arc::new(extension::default_registry()),
            compiler: None,
            invalid_ttl_packet_in: TtlPacketIn::default(),
        }
    }
}

/// The whole OpenFlow switch state and its packet semantics.
#[derive(Debug)]
pub struct Pipeline {
    cfg: Config,
    tables: Vec<FlowTable>,
    /// The control graph walks follow: OpenFlow's table sequence unless a
    /// front end set another ([`Pipeline::set_graph`]).
    graph: Arc<Graph>,
    groups: GroupTable,
    meters: MeterTable,
    ports: Ports,
    switch_config: SwitchConfig,
    /// Packets buffered for PACKET_IN: stored by any worker, taken by the
    /// owner (PACKET_OUT, FLOW_MOD with a buffer id); shared by every
    /// published copy.
    buffers: Arc<Mutex<exec::Buffers>>,
    /// Pipeline clock in nanoseconds (moved only by `advance`).
    now_ns: u64,
    /// Next flow-entry sequence number.
    seq: u64,
    /// Queued asynchronous messages.
    async_out: Vec<Message>,
    /// The owner's worker context (shard 0): `process`, `packet_out`,
    /// `trace` run with it.
    local: Option<Box<Worker>>,
    /// Next worker shard to hand out.
    next_shard: usize,
    /// Some table's `seq → position` map is stale (see `table.rs`).
    unsettled: TableSet,
    /// Tables whose compiled code is being built or is due (see
    /// `codegen.rs`): settled even without a change.
    jit_waiting: TableSet,
    /// Tables whose code changed since the last publication (`cur`) and
    /// in the one before (`prev`, which the other copy has not seen): the
    /// copies take their code even when no entry changed.
    code_cur: TableSet,
    code_prev: TableSet,
    /// Flow generation: bumped by every flow-table change; cache entries
    /// of another generation are misses (see `cache.rs`).
    flow_gen: u64,
    /// The windows `pof` match fields use, and the extract program every
    /// packet's parse runs (`pof.rs`).
    windows: Arc<pof::Windows>,
    /// Loaded filter programs and compiled pcap-filter expressions
    /// (`filterprog.rs`; the controller's copy only: published copies
    /// reach them through their entries' guards).
    pub filters: filterprog::FilterProgs,
    /// Programs whose objects are arriving in fragments.
    assembly: sluice_ofp::filterprog::Assembly,
    /// Open bundles, per controller connection (`bundle.rs`; the
    /// controller's copy only).
    bundles: bundle::Bundles,
    /// The tables a TABLE_FEATURES set request configured (`features.rs`);
    /// `None`: the default description, every table with every feature.
    profiles: Option<Arc<features::Profiles>>,
}

impl Pipeline {
    pub fn new(cfg: Config) -> Self {
        let n = usize::from(cfg.n_tables);
        let indexed = cfg.datapath != Datapath::Reference;
        let compiled = cfg.datapath == Datapath::Compiled;
        let shards = cfg.shards();
        let table = |_| {
            let mut t = FlowTable::new(cfg.max_flows_per_table, shards);
            t.set_jit_options(cfg.jit);
            t.set_compiler(cfg.compiler.clone());
            t.set_indexed(indexed);
            t.set_compiled(compiled);
            t
        };
        Pipeline {
            tables: (0..n).map(table).collect(),
            graph: Arc::new(Graph::tables(cfg.n_tables)),
            groups: GroupTable::new(shards),
            meters: MeterTable::default(),
            ports: Ports::new(shards),
            switch_config: SwitchConfig::default(),
            buffers: Arc::new(Mutex::new(exec::Buffers::new(cfg.n_buffers as usize))),
            now_ns: 0,
            seq: 0,
            async_out: Vec::new(),
            local: None,
            next_shard: 1,
            unsettled: TableSet::default(),
            jit_waiting: TableSet::default(),
            code_cur: TableSet::default(),
            code_prev: TableSet::default(),
            flow_gen: 1,
            windows: Arc::default(),
            filters: filterprog::FilterProgs::default(),
            assembly: sluice_ofp::filterprog::Assembly::default(),
            bundles: bundle::Bundles::default(),
            profiles: None,
            cfg,
        }
    }

    /// A worker context for a thread that forwards through this pipeline
    /// (or a published copy of it) with [`Pipeline::process_with`]. The
    /// first `cfg.workers` get a counter shard of their own; later ones
    /// share one (exact, slower).
    pub fn worker(&mut self) -> Worker {
        let shards = self.cfg.shards();
        let shard = if self.next_shard < shards - 1 {
            self.next_shard += 1;
            Shard::exclusive(self.next_shard - 1)
        } else {
            Shard::shared(shards)
        };
        Worker::new(shard, exec::OfWorker::default())
    }

    /// A copy of this pipeline to publish to workers: same tables (with
    /// their indexes), groups, meters, ports and configuration; counters,
    /// meter state and packet buffers are shared with this one. The copy
    /// has no clock, queue or caches of its own that matter: workers bring
    /// theirs.
    pub(crate) fn replica(&self) -> Pipeline {
        Pipeline {
            cfg: self.cfg.clone(),
            tables: self.tables.iter().map(FlowTable::replica).collect(),
            graph: self.graph.clone(),
            groups: self.groups.clone(),
            meters: self.meters.clone(),
            ports: self.ports.clone(),
            switch_config: self.switch_config,
            buffers: self.buffers.clone(),
            now_ns: self.now_ns,
            seq: self.seq,
            async_out: Vec::new(),
            local: None,
            next_shard: self.cfg.shards(),
            unsettled: TableSet::default(),
            jit_waiting: TableSet::default(),
            code_cur: TableSet::default(),
            code_prev: TableSet::default(),
            flow_gen: self.flow_gen,
            windows: self.windows.clone(),
            filters: filterprog::FilterProgs::default(),
            assembly: sluice_ofp::filterprog::Assembly::default(),
            bundles: bundle::Bundles::default(),
            profiles: self.profiles.clone(),
        }
    }

    /// Bring `copy` (a replica this pipeline has been syncing since it
    /// was made, see [`publish`]) up to date: table changes are replayed
    /// from the tables' logs, everything else is copied.
    pub(crate) fn sync_copy(&mut self, copy: &mut Pipeline) {
        let code = self.code_cur.union(&self.code_prev);
        for (i, (t, c)) in self.tables.iter_mut().zip(copy.tables.iter_mut()).enumerate() {
            t.sync_copy(c, code.contains(i));
        }
        self.code_prev = std::mem::take(&mut self.code_cur);
        copy.cfg = self.cfg.clone();
        copy.graph = self.graph.clone();
        copy.groups = self.groups.clone();
        copy.meters = self.meters.clone();
        copy.ports = self.ports.clone();
        copy.switch_config = self.switch_config;
        copy.now_ns = self.now_ns;
        copy.seq = self.seq;
        copy.flow_gen = self.flow_gen;
        copy.windows = self.windows.clone();
        copy.profiles = self.profiles.clone();
    }

    /// Start logging table changes for published copies.
    pub(crate) fn start_logs(&mut self) {
        for t in &mut self.tables {
            t.start_log();
        }
    }

    /// A fresh replica replaced the copy that was due for syncing: the
    /// changes since the last publication are now owed to the other copy
    /// only.
    pub(crate) fn logs_skip_copy(&mut self) {
        self.code_prev = std::mem::take(&mut self.code_cur);
        for t in &mut self.tables {
            t.skip_copy();
        }
    }

    /// Rebuild stale position maps (cheap when nothing changed).
    pub(crate) fn settle(&mut self) {
        let todo = std::mem::take(&mut self.unsettled).union(&self.jit_waiting);
        for id in todo.iter() {
            let Some(t) = self.tables.get_mut(id) else { continue };
            if t.settle() {
                self.code_cur.insert(id);
            }
            if t.jit_waiting() {
                self.jit_waiting.insert(id);
            } else {
                self.jit_waiting.remove(id);
            }
        }
    }

    /// Whether some table's compiled code is being built or waits to be
    /// installed (the daemon's clock tick settles and publishes it).
    pub fn jit_waiting(&self) -> bool {
        !self.jit_waiting.is_empty()
    }

    /// Settles every table and says whether some table still waits for
    /// compiled code (a background build, or a large table's quiet time).
    /// For benchmarks and tests, which poll it; the daemon never waits.
    pub fn code_pending(&mut self) -> bool {
        self.unsettled = TableSet::all();
        self.settle();
        !self.jit_waiting.is_empty()
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Switch the flow-table lookup structure (builds or drops every
    /// table's tuple-space index; empties the caches).
    pub fn set_datapath(&mut self, d: Datapath) {
        self.cfg.datapath = d;
        for t in &mut self.tables {
            t.set_indexed(d != Datapath::Reference);
            t.set_compiled(d == Datapath::Compiled);
        }
        self.tables_changed();
        if let Some(w) = &mut self.local {
            w.cache.clear();
        }
    }

    /// Choose the caches in front of the tables (every worker's cache
    /// entries become stale).
    pub fn set_cache(&mut self, m: CacheMode) {
        self.cfg.cache = m;
        self.tables_changed();
        if let Some(w) = &mut self.local {
            w.cache.clear();
        }
    }

    /// Hit/miss counts per cache level of the owner's own worker context
    /// (what [`Pipeline::process`] used).
    pub fn cache_stats(&self) -> CacheStats {
        self.local.as_ref().map(|w| w.cache.stats).unwrap_or_default()
    }

    /// What the owner's worker context chose in `CacheMode::Auto`.
    pub fn cache_choices(&self) -> CacheChoices {
        self.local.as_ref().map(|w| w.cache_choices()).unwrap_or_default()
    }

    /// Note a flow-table change: every cache entry becomes stale, and
    /// position maps may need rebuilding.
    pub(crate) fn tables_changed(&mut self) {
        self.flow_gen = self.flow_gen.wrapping_add(1).max(1);
        self.unsettled = TableSet::all();
    }

    /// [`Pipeline::tables_changed`] when only table `id` changed (`ALL`,
    /// 0xff: every table): only it needs settling.
    pub(crate) fn table_changed(&mut self, id: u8) {
        self.flow_gen = self.flow_gen.wrapping_add(1).max(1);
        if id == sluice_ofp::consts::table_id::ALL {
            self.unsettled = TableSet::all();
        } else {
            self.unsettled.insert(usize::from(id));
        }
    }

    /// Replace the control graph every packet's walk follows (see
    /// `sluice_core::graph`). OpenFlow never calls this: its graph is the
    /// table sequence with goto-table edges, which the pipeline starts
    /// with. A front end that builds other graphs (P4's control blocks)
    /// does. Refused when a node applies a table this pipeline does not
    /// have. Every cache entry becomes stale.
    pub fn set_graph(&mut self, graph: Graph) -> std::result::Result<(), GraphError> {
        for (i, n) in graph.nodes().iter().enumerate() {
            if let Node::Apply { table, .. } = n {
                if *table >= self.cfg.n_tables {
                    return Err(GraphError::NoSuchTable { node: i as NodeId, table: *table });
                }
            }
        }
        self.graph = Arc::new(graph);
        self.tables_changed();
        Ok(())
    }

    /// The control graph walks follow.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The flow generation (changes with every flow-table change).
    pub fn flow_generation(&self) -> u64 {
        self.flow_gen
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

/// A set of table ids (0..=255) as a bitmap: which tables need settling,
/// without visiting all 255 per flow-mod.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct TableSet([u64; 4]);

impl TableSet {
    fn all() -> TableSet {
        TableSet([u64::MAX; 4])
    }

    fn insert(&mut self, id: usize) {
        if let Some(w) = self.0.get_mut(id / 64) {
            *w |= 1 << (id % 64);
        }
    }

    fn remove(&mut self, id: usize) {
        if let Some(w) = self.0.get_mut(id / 64) {
            *w &= !(1 << (id % 64));
        }
    }

    fn contains(&self, id: usize) -> bool {
        self.0.get(id / 64).is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    fn union(&self, o: &TableSet) -> TableSet {
        let mut u = *self;
        for (a, b) in u.0.iter_mut().zip(o.0.iter()) {
            *a |= b;
        }
        u
    }

    /// The ids in the set, ascending.
    fn iter(self) -> impl Iterator<Item = usize> {
        (0..4usize).flat_map(move |k| {
            let mut w = self.0[k];
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros() as usize;
                w &= w - 1;
                Some(k * 64 + b)
            })
        })
    }
}

#[cfg(test)]
mod table_set_tests {
    use super::TableSet;

    #[test]
    fn insert_remove_iterate() {
        let mut s = TableSet::default();
        assert!(s.is_empty());
        for id in [0, 63, 64, 200, 255] {
            s.insert(id);
        }
        s.insert(300); // out of range: ignored
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 63, 64, 200, 255]);
        s.remove(64);
        assert!(!s.contains(64) && s.contains(63));
        assert_eq!(TableSet::all().iter().count(), 256);
        let mut t = TableSet::default();
        t.insert(7);
        assert_eq!(s.union(&t).iter().collect::<Vec<_>>(), vec![0, 7, 63, 200, 255]);
    }
}
