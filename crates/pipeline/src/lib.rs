//! # sluice-pipeline: the reference OpenFlow 1.3.5 pipeline
//!
//! What happens to every packet under every flow table, group and meter the
//! OpenFlow 1.3.5 spec allows, written for clarity first. It is the oracle
//! every fast path (tuple-space classifier, caches, generated code) is
//! tested against, so its rule is: straight from the spec, no cleverness
//! that could hide a bug.
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
//!   and runs them (the cargo-fuzz entry point; it must never panic).
//!
//! ## Data layout (shared with the fast paths)
//! Packets are parsed once into a fixed-layout [`FlowKey`] of u64 words
//! (`sluice_packet::key`); matches are compiled to masks at flow-mod time
//! ([`rule::Rule`]). Frames are rewritten in one reusable buffer with
//! headroom; no allocation happens per packet except for what goes to the
//! controller.
//!
//! [`FlowKey`]: sluice_packet::key::FlowKey

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

pub use control::Outgoing;
pub use exec::{TraceEvent, Tx};
pub use fuzz::fuzz_pipeline;

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
}

impl Pipeline {
    pub fn new(cfg: Config) -> Self {
        let n = usize::from(cfg.n_tables);
        Pipeline {
            tables: (0..n).map(|_| FlowTable::new(cfg.max_flows_per_table)).collect(),
            groups: GroupTable::default(),
            meters: MeterTable::default(),
            ports: Ports::default(),
            switch_config: SwitchConfig::default(),
            buffers: exec::Buffers::new(cfg.n_buffers as usize),
            now_ns: 0,
            seq: 0,
            async_out: Vec::new(),
            scratch: exec::Scratch::default(),
            cfg,
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
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
