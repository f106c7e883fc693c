//! The switch's ports as the pipeline sees them: description (config and
//! state bits), counters and queues.
//!
//! Port numbers are OpenFlow numbers (1..=OFPP_MAX). Liveness — used by
//! fast-failover groups and by forwarding — is: the port exists, is not
//! administratively down (`OFPPC_PORT_DOWN`) and its link is up (no
//! `OFPPS_LINK_DOWN`).

use crate::tally::{Shard, Tally};
use sluice_ofp::error::{ErrorCode, Result};
use sluice_ofp::message::{port_reason, PortMod, PortStatus};
use sluice_ofp::multipart::{PortStats, QueueStats};
use sluice_ofp::port::{config, state, Port};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Packet and byte counters of one port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCounters {
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
}

/// Counters of one queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueCounters {
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_errors: u64,
    pub created_ns: u64,
}

/// One port: its description and counters (shared by every published
/// copy of the port, one shard per worker: see `tally.rs`).
#[derive(Clone, Debug)]
pub struct PortEntry {
    pub desc: Port,
    tally: Arc<Tally>,
    queues: BTreeMap<u32, QueueEntry>,
    pub added_ns: u64,
}

#[derive(Clone, Debug)]
struct QueueEntry {
    created_ns: u64,
    /// tx packets, tx bytes, tx errors.
    tally: Arc<Tally>,
}

/// Which port counter to count (indexes of the port's tally).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortCounter {
    RxPackets = 0,
    TxPackets = 1,
    RxBytes = 2,
    TxBytes = 3,
    RxDropped = 4,
    TxDropped = 5,
}

impl PortEntry {
    /// The port's counters, merged over the workers.
    pub fn counters(&self) -> PortCounters {
        let c = |i: PortCounter| self.tally.sum(i as usize);
        PortCounters {
            rx_packets: c(PortCounter::RxPackets),
            tx_packets: c(PortCounter::TxPackets),
            rx_bytes: c(PortCounter::RxBytes),
            tx_bytes: c(PortCounter::TxBytes),
            rx_dropped: c(PortCounter::RxDropped),
            tx_dropped: c(PortCounter::TxDropped),
        }
    }

    /// Add `v` to one counter, in shard `s`.
    #[inline]
    pub fn count(&self, s: Shard, which: PortCounter, v: u64) {
        self.tally.add(s, which as usize, v);
    }

    /// The port's queue ids, ascending.
    pub fn queue_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.queues.keys().copied()
    }

    /// Whether the port has queue `q`.
    pub fn has_queue(&self, q: u32) -> bool {
        self.queues.contains_key(&q)
    }

    /// Count one frame of `bytes` sent on queue `q` (if it exists).
    #[inline]
    pub fn count_queue(&self, s: Shard, q: u32, bytes: u64) {
        if let Some(e) = self.queues.get(&q) {
            e.tally.add(s, 0, 1);
            e.tally.add(s, 1, bytes);
        }
    }

    /// Queue `q`'s counters, merged over the workers.
    pub fn queue(&self, q: u32) -> Option<QueueCounters> {
        self.queues.get(&q).map(|e| QueueCounters {
            tx_packets: e.tally.sum(0),
            tx_bytes: e.tally.sum(1),
            tx_errors: e.tally.sum(2),
            created_ns: e.created_ns,
        })
    }
}

/// All ports, by number.
#[derive(Clone, Debug)]
pub struct Ports {
    map: BTreeMap<u32, PortEntry>,
    /// Counter shards of the pipeline (see `tally.rs`).
    shards: usize,
}

impl Default for Ports {
    fn default() -> Self {
        Ports::new(2)
    }
}

/// Config bits a PORT_MOD may change.
const SETTABLE_CONFIG: u32 =
    config::PORT_DOWN | config::NO_RECV | config::NO_FWD | config::NO_PACKET_IN;

impl Ports {
    /// No ports; their counters will have `shards` shards.
    pub fn new(shards: usize) -> Ports {
        Ports { map: BTreeMap::new(), shards }
    }

    /// Add (or replace) a port; returns the PORT_STATUS to announce.
    pub fn add(&mut self, mut desc: Port, now_ns: u64) -> PortStatus {
        if desc.state & state::LINK_DOWN == 0 {
            desc.state |= state::LIVE;
        }
        let reason = if self.map.contains_key(&desc.port_no) {
            port_reason::MODIFY
        } else {
            port_reason::ADD
        };
        self.map.insert(
            desc.port_no,
            PortEntry {
                desc: desc.clone(),
                tally: Arc::new(Tally::new(6, self.shards)),
                queues: BTreeMap::new(),
                added_ns: now_ns,
            },
        );
        PortStatus { reason, desc }
    }

    /// Remove a port; returns the PORT_STATUS to announce.
    pub fn remove(&mut self, port_no: u32) -> Option<PortStatus> {
        self.map.remove(&port_no).map(|e| PortStatus { reason: port_reason::DELETE, desc: e.desc })
    }

    /// Declare a queue on a port (for queue stats and SET_QUEUE).
    pub fn add_queue(&mut self, port_no: u32, queue_id: u32, now_ns: u64) -> bool {
        let shards = self.shards;
        match self.map.get_mut(&port_no) {
            Some(p) => {
                p.queues.entry(queue_id).or_insert_with(|| QueueEntry {
                    created_ns: now_ns,
                    tally: Arc::new(Tally::new(3, shards)),
                });
                true
            }
            None => false,
        }
    }

    /// Record a link change; returns the PORT_STATUS if the state changed.
    pub fn set_link(&mut self, port_no: u32, up: bool) -> Option<PortStatus> {
        let p = self.map.get_mut(&port_no)?;
        let old = p.desc.state;
        if up {
            p.desc.state = (p.desc.state & !state::LINK_DOWN) | state::LIVE;
        } else {
            p.desc.state = (p.desc.state | state::LINK_DOWN) & !state::LIVE;
        }
        (old != p.desc.state)
            .then(|| PortStatus { reason: port_reason::MODIFY, desc: p.desc.clone() })
    }

    pub fn get(&self, port_no: u32) -> Option<&PortEntry> {
        self.map.get(&port_no)
    }

    /// A port's entry, to change its description (its counters are
    /// shared cells and change only by counting).
    pub fn get_mut(&mut self, port_no: u32) -> Option<&mut PortEntry> {
        self.map.get_mut(&port_no)
    }

    pub fn numbers(&self) -> impl Iterator<Item = u32> + '_ {
        self.map.keys().copied()
    }

    pub fn iter(&self) -> impl Iterator<Item = &PortEntry> {
        self.map.values()
    }

    /// Up for forwarding decisions: exists, not admin-down, link up.
    pub fn is_live(&self, port_no: u32) -> bool {
        self.map.get(&port_no).is_some_and(|p| {
            p.desc.config & config::PORT_DOWN == 0 && p.desc.state & state::LINK_DOWN == 0
        })
    }

    /// Whether packets received on the port enter the pipeline.
    pub fn can_receive(&self, port_no: u32) -> bool {
        self.map
            .get(&port_no)
            .is_some_and(|p| p.desc.config & (config::PORT_DOWN | config::NO_RECV) == 0)
    }

    /// Whether the pipeline may transmit on the port.
    pub fn can_forward(&self, port_no: u32) -> bool {
        self.is_live(port_no)
            && self.map.get(&port_no).is_some_and(|p| p.desc.config & config::NO_FWD == 0)
    }

    /// Whether packet-ins are allowed for packets received on the port.
    pub fn packet_in_allowed(&self, port_no: u32) -> bool {
        self.map.get(&port_no).is_none_or(|p| p.desc.config & config::NO_PACKET_IN == 0)
    }

    /// Apply a PORT_MOD (§7.3.4.3); returns the PORT_STATUS if the
    /// description changed.
    pub fn port_mod(&mut self, pm: &PortMod) -> Result<Option<PortStatus>> {
        let p = self.map.get_mut(&pm.port_no).ok_or(ErrorCode::PMFC_BAD_PORT)?;
        if p.desc.hw_addr != pm.hw_addr {
            return Err(ErrorCode::PMFC_BAD_HW_ADDR);
        }
        if pm.mask & !SETTABLE_CONFIG != 0 || pm.config & !SETTABLE_CONFIG != 0 {
            return Err(ErrorCode::PMFC_BAD_CONFIG);
        }
        if pm.advertise & !p.desc.supported != 0 && pm.advertise != 0 {
            return Err(ErrorCode::PMFC_BAD_ADVERTISE);
        }
        let old = p.desc.clone();
        p.desc.config = (p.desc.config & !pm.mask) | (pm.config & pm.mask);
        if pm.advertise != 0 {
            p.desc.advertised = pm.advertise;
        }
        Ok((old != p.desc)
            .then(|| PortStatus { reason: port_reason::MODIFY, desc: p.desc.clone() }))
    }

    pub fn stats(&self, port_no: u32, now_ns: u64) -> Vec<PortStats> {
        self.map
            .values()
            .filter(|p| port_no == sluice_ofp::consts::port_no::ANY || p.desc.port_no == port_no)
            .map(|p| {
                let d = now_ns.saturating_sub(p.added_ns);
                let c = p.counters();
                PortStats {
                    port_no: p.desc.port_no,
                    rx_packets: c.rx_packets,
                    tx_packets: c.tx_packets,
                    rx_bytes: c.rx_bytes,
                    tx_bytes: c.tx_bytes,
                    rx_dropped: c.rx_dropped,
                    tx_dropped: c.tx_dropped,
                    rx_errors: 0,
                    tx_errors: 0,
                    rx_frame_err: 0,
                    rx_over_err: 0,
                    rx_crc_err: 0,
                    collisions: 0,
                    duration_sec: (d / 1_000_000_000) as u32,
                    duration_nsec: (d % 1_000_000_000) as u32,
                }
            })
            .collect()
    }

    pub fn queue_stats(&self, port_no: u32, queue_id: u32, now_ns: u64) -> Vec<QueueStats> {
        let any_port = port_no == sluice_ofp::consts::port_no::ANY;
        let all_q = queue_id == sluice_ofp::consts::queue_id::ALL;
        let mut out = Vec::new();
        for p in self.map.values().filter(|p| any_port || p.desc.port_no == port_no) {
            for &q in p.queues.keys().filter(|&&q| all_q || q == queue_id) {
                let Some(c) = p.queue(q) else { continue };
                let d = now_ns.saturating_sub(c.created_ns);
                out.push(QueueStats {
                    port_no: p.desc.port_no,
                    queue_id: q,
                    tx_bytes: c.tx_bytes,
                    tx_packets: c.tx_packets,
                    tx_errors: c.tx_errors,
                    duration_sec: (d / 1_000_000_000) as u32,
                    duration_nsec: (d % 1_000_000_000) as u32,
                });
            }
        }
        out
    }
}
