//! Upcalls: what the datapath hands up to the control plane, as neutral
//! values.
//!
//! A worker queues upcalls while it forwards; the front end turns them into
//! its protocol's messages when the agent takes them (OpenFlow: a
//! `ToController` becomes a PACKET_IN, `sluice_pipeline::Worker::take_async`).
//! Today only `ToController` exists; P4 digests and filter-program map
//! dumps are the next kinds (ARCHITECTURE.md, target map), and flow
//! expiry, which the control side produces, still speaks OpenFlow.

use sluice_packet::parse::Meta;

/// Why a packet goes to the controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// No entry matched (a table-miss entry sent it).
    NoMatch,
    /// An entry's action sent it.
    Action,
    /// A TTL decrement reached zero.
    InvalidTtl,
}

/// One upcall.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Upcall {
    /// A packet (or its first bytes) for the controller.
    ToController {
        reason: Reason,
        /// The table whose entry sent it, and that entry's cookie.
        table: u8,
        cookie: u64,
        /// Where the whole frame was kept, when `data` is only its start.
        buffer_id: Option<u32>,
        /// The frame's length (saturated at 65535).
        total_len: u16,
        data: Vec<u8>,
        /// Ingress port, physical port, metadata and tunnel id.
        meta: Meta,
    },
}
