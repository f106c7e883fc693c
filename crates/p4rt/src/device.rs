//! The switch a P4Runtime server drives: the engine the forwarding
//! thread runs (shared, behind one lock), the pipeline loaded on it,
//! the entry index, the arbitration state and the packet queues.
//!
//! # Thread-safety
//! Four locks, always taken in this order and never across an
//! `.await`: `state` (pipeline and entry index), `engine` (what the
//! forwarding thread locks per packet), `digests` (digest configuration,
//! buffers and cache: [`crate::digest`]), `arb` (streams). A Write or a
//! pipeline change holds `state` for the whole request, so requests see
//! each other whole; the forwarding thread sees the tables between two
//! updates, never during one.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use sluice_p4::engines::Engine;
use sluice_p4::target::EntrySpec;

use crate::convert;
use crate::digest::Digests;
use crate::pipeline::Pipeline;
use crate::proto::p4::v1 as p4v1;
use crate::stream::Arbitration;
use sluice_p4::interp::Digest;
use std::time::Instant;

/// Most packet-outs waiting for the forwarding thread; more are refused
/// (RESOURCE_EXHAUSTED on the stream).
pub const MAX_PACKET_OUTS: usize = 1024;

/// Locks a mutex, taking it over if a holder panicked (the data is
/// plain tables; a panic mid-update is a bug reported elsewhere).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An installed entry, by its P4Runtime key.
#[derive(Clone, Debug)]
pub struct Installed {
    pub handle: u64,
    pub spec: EntrySpec,
    /// Its hit watch, in tables that support idle timeouts.
    pub idle: Option<crate::idle::Watch>,
    /// The controller's cookie, opaque to sluice: `metadata` and the
    /// deprecated `controller_metadata` as last written, returned by reads.
    pub cookie: Cookie,
}

/// A table entry's controller cookie (`TableEntry.metadata`, and the
/// deprecated `controller_metadata` older clients still send).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cookie {
    pub metadata: Vec<u8>,
    pub controller_metadata: u64,
}

impl Cookie {
    pub fn of(e: &p4v1::TableEntry) -> Cookie {
        #[allow(deprecated)] // still sent by older clients
        let controller_metadata = e.controller_metadata;
        Cookie { metadata: e.metadata.clone(), controller_metadata }
    }

    /// Puts the cookie into an entry being read.
    pub fn fill(&self, e: &mut p4v1::TableEntry) {
        e.metadata = self.metadata.clone();
        #[allow(deprecated)]
        {
            e.controller_metadata = self.controller_metadata;
        }
    }
}

/// What Write and SetForwardingPipelineConfig change.
#[derive(Debug, Default)]
pub struct State {
    pub pipeline: Option<Arc<Pipeline>>,
    /// A config VERIFY_AND_SAVE kept for COMMIT, with its engine.
    pub saved: Option<(Arc<Pipeline>, Engine)>,
    /// Entries written over P4Runtime, by table id and canonical key
    /// ([`crate::write::entry_key`]).
    pub index: HashMap<u32, HashMap<Vec<u8>, Installed>>,
    /// Multicast groups written over P4Runtime: replicas `(instance, port)`.
    pub mcast: std::collections::BTreeMap<u32, Vec<(u32, u32)>>,
}

/// How the server was configured.
#[derive(Clone, Debug)]
pub struct DeviceConfig {
    pub device_id: u64,
    /// The port packet-outs enter and packet-ins leave by; `None`: no
    /// packet I/O with the controller (as bmv2 without `--cpu-port`).
    pub cpu_port: Option<u32>,
    /// New pipelines run on the reference interpreter.
    pub reference: bool,
}

/// Counters of the controller packet path.
#[derive(Debug, Default)]
pub struct PacketStats {
    pub packet_outs: AtomicU64,
    pub packet_ins: AtomicU64,
    /// Packet-ins dropped: no primary, every primary's stream full, or a
    /// frame shorter than the packet_in header.
    pub packet_ins_dropped: AtomicU64,
}

/// The switch behind a P4Runtime server.
#[derive(Debug)]
pub struct Device {
    pub config: DeviceConfig,
    /// The engine the forwarding thread runs.
    pub engine: Arc<Mutex<Engine>>,
    pub state: Mutex<State>,
    pub arb: Mutex<Arbitration>,
    packet_outs: Mutex<VecDeque<Vec<u8>>>,
    pub stats: PacketStats,
    pub digests: Mutex<Digests>,
    /// Wakes the digest task ([`crate::digest::run`]).
    pub digest_wake: tokio::sync::Notify,
}

impl Device {
    /// A device running `engine`, with `pipeline` the program loaded on
    /// it (`None`: nothing until SetForwardingPipelineConfig).
    pub fn new(
        config: DeviceConfig,
        engine: Arc<Mutex<Engine>>,
        pipeline: Option<Pipeline>,
    ) -> Self {
        let mut digests = Digests::default();
        digests.reset(pipeline.as_ref());
        Device {
            config,
            engine,
            state: Mutex::new(State { pipeline: pipeline.map(Arc::new), ..State::default() }),
            arb: Mutex::new(Arbitration::default()),
            packet_outs: Mutex::new(VecDeque::new()),
            stats: PacketStats::default(),
            digests: Mutex::new(digests),
            digest_wake: tokio::sync::Notify::new(),
        }
    }

    /// Digests the engine queued, handed over by the forwarding thread:
    /// queued for the digest task, which is woken; never blocks on the
    /// network.
    pub fn hand_over_digests(&self, ds: Vec<Digest>) {
        if ds.is_empty() {
            return;
        }
        lock(&self.digests).arrive(Instant::now(), ds);
        self.digest_wake.notify_one();
    }

    /// Takes the engine's queued digests and hands them over (for callers
    /// that do not hold the engine lock already).
    pub fn collect_digests(&self) {
        let ds = lock(&self.engine).take_digests();
        self.hand_over_digests(ds);
    }

    /// The digest path's counts so far.
    pub fn digest_counts(&self) -> crate::digest::DigestCounts {
        lock(&self.digests).counts
    }

    /// The pipeline loaded now.
    pub fn pipeline(&self) -> Option<Arc<Pipeline>> {
        lock(&self.state).pipeline.clone()
    }

    /// Queues a frame (packet_out header already prepended) for the
    /// forwarding thread to inject at the CPU port; false if the queue is
    /// full.
    pub fn queue_packet_out(&self, frame: Vec<u8>) -> bool {
        let mut q = lock(&self.packet_outs);
        if q.len() >= MAX_PACKET_OUTS {
            return false;
        }
        q.push_back(frame);
        self.stats.packet_outs.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// The frames waiting to be injected at the CPU port, oldest first.
    pub fn take_packet_outs(&self) -> Vec<Vec<u8>> {
        let mut q = lock(&self.packet_outs);
        q.drain(..).collect()
    }

    /// Runs `f` on the engine for another control plane (`sluice p4
    /// ctl`, simple_switch_CLI's commands), then brings the entry index in
    /// line with what `f` did to the tables ([`resync`]), so P4Runtime
    /// reads, deletes, refuses duplicates of and watches for idle timeouts
    /// the entries the command added, as if it had written them. Takes
    /// `state` before `engine`, as a Write does.
    pub fn with_engine<R>(&self, f: impl FnOnce(&mut Engine) -> R) -> R {
        let mut st = lock(&self.state);
        let mut engine = lock(&self.engine);
        let r = f(&mut engine);
        if let Some(p) = st.pipeline.clone() {
            resync(&p, &mut st, &engine, Instant::now());
        }
        r
    }

    /// A frame the program sent to the CPU port: its leading packet_in
    /// header becomes metadata and the rest goes to every role's primary
    /// as a PacketIn. Dropped (and counted) when no primary took it.
    pub fn packet_in(&self, frame: &[u8]) {
        let header = self.pipeline().and_then(|p| p.packet_in.clone()).unwrap_or_default();
        let Some((metadata, payload)) = split_header(&header, frame) else {
            self.stats.packet_ins_dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let msg = p4v1::StreamMessageResponse {
            update: Some(p4v1::stream_message_response::Update::Packet(p4v1::PacketIn {
                payload: payload.to_vec(),
                metadata,
            })),
        };
        let sent = lock(&self.arb).send_to_primaries(msg);
        let c = if sent { &self.stats.packet_ins } else { &self.stats.packet_ins_dropped };
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// Reads `width` bits at bit offset `off` of `data` (MSB first) as a value.
fn get_bits(data: &[u8], off: u32, width: u32) -> sluice_p4::ast::BigValue {
    let mut limbs = vec![0u64; width.div_ceil(64).max(1) as usize];
    for i in 0..width {
        let bit = off + i;
        let set = data[(bit / 8) as usize] >> (7 - bit % 8) & 1 == 1;
        if set {
            let pos = width - 1 - i;
            limbs[(pos / 64) as usize] |= 1 << (pos % 64);
        }
    }
    while limbs.last() == Some(&0) {
        limbs.pop();
    }
    sluice_p4::ast::BigValue(limbs)
}

/// Splits a frame into the controller header's fields and the payload;
/// `None` if the frame is shorter than the header.
pub fn split_header<'a>(
    header: &[(u32, String, u32)],
    frame: &'a [u8],
) -> Option<(Vec<p4v1::PacketMetadata>, &'a [u8])> {
    let bits: u32 = header.iter().map(|f| f.2).sum();
    let len = bits.div_ceil(8) as usize;
    if frame.len() < len {
        return None;
    }
    let mut off = 0;
    let mut md = Vec::with_capacity(header.len());
    for (id, _, w) in header {
        let v = get_bits(frame, off, *w);
        md.push(p4v1::PacketMetadata { metadata_id: *id, value: convert::encode(&v) });
        off += w;
    }
    Some((md, &frame[len..]))
}

/// Builds a controller header from metadata values (a field not given
/// is 0), MSB first; errors name the bad id or field.
pub fn build_header(
    header: &[(u32, String, u32)],
    md: &[p4v1::PacketMetadata],
) -> convert::P4Result<Vec<u8>> {
    for m in md {
        if !header.iter().any(|f| f.0 == m.metadata_id) {
            return Err(convert::P4Error::not_found(format!(
                "packet_out has no metadata field with id {}",
                m.metadata_id
            )));
        }
    }
    let bits: u32 = header.iter().map(|f| f.2).sum();
    let mut out = vec![0u8; bits.div_ceil(8) as usize];
    let mut off = 0u32;
    for (id, name, w) in header {
        let v = match md.iter().find(|m| m.metadata_id == *id) {
            Some(m) => convert::decode(&m.value, *w, &format!("packet_out field `{name}`"))?,
            None => sluice_p4::ast::BigValue::default(),
        };
        for i in 0..*w {
            let pos = w - 1 - i;
            let set = v.0.get((pos / 64) as usize).is_some_and(|l| l >> (pos % 64) & 1 == 1);
            if set {
                let bit = off + i;
                out[(bit / 8) as usize] |= 1 << (7 - bit % 8);
            }
        }
        off += w;
    }
    Ok(out)
}

/// Makes the index of every table of `p` hold exactly the engine's
/// entries: a record for each entry the engine has (const tables
/// aside), found by handle (kept as it is), else by key (the record of
/// an entry another control plane replaced keeps its cookie and TTL, its
/// hit count restarting), else new (no cookie; the table's idle watch
/// with no TTL); records of entries the engine no longer has go. A table
/// the engine cannot dump keeps its index (and the error is logged).
/// Only entries the index does not know by handle are converted, so a
/// command costs one dump per table.
pub fn resync(p: &Pipeline, st: &mut State, engine: &Engine, now: Instant) {
    use sluice_p4::target::Manage as _;
    for t in p.tables.values().filter(|t| !t.is_const) {
        let dump = match engine.dump(&t.engine_name) {
            Ok((d, _)) => d,
            Err(e) => {
                tracing::warn!(table = %t.name, error = %e, "P4Runtime index: no dump");
                continue;
            }
        };
        let index = st.index.entry(t.id).or_default();
        let mut key_of: HashMap<u64, Vec<u8>> =
            index.iter().map(|(k, i)| (i.handle, k.clone())).collect();
        let mut fresh = HashMap::with_capacity(dump.len());
        for d in &dump {
            // An entry the index knows by its handle is unchanged (the
            // CLI has no modify): its record moves over as it is.
            if let Some(k) = key_of.remove(&d.handle) {
                if let Some(i) = index.remove(&k) {
                    fresh.insert(k, i);
                    continue;
                }
            }
            let e = crate::read::entry_of(p, t, d);
            let Ok(c) = crate::write::check_entry(p, &e, true) else {
                tracing::warn!(table = %t.name, handle = d.handle, "P4Runtime index: entry not representable");
                continue;
            };
            let inst = match index.remove(&c.key) {
                Some(i) => Installed {
                    handle: d.handle,
                    spec: c.spec,
                    idle: i.idle.map(|w| w.modified(w.timeout_ns, now)),
                    cookie: i.cookie,
                },
                None => Installed {
                    handle: d.handle,
                    spec: c.spec,
                    idle: crate::idle::Watch::new(t, &e, now),
                    cookie: Cookie::default(),
                },
            };
            fresh.insert(c.key, inst);
        }
        *index = fresh;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_headers_round_trip() {
        let h = vec![(1, "port".to_string(), 9), (2, "pad".to_string(), 7)];
        let md = vec![p4v1::PacketMetadata { metadata_id: 1, value: vec![1, 0x02] }];
        let bytes = build_header(&h, &md).unwrap();
        assert_eq!(bytes, vec![0x81, 0x00]);
        let mut frame = bytes.clone();
        frame.extend_from_slice(b"xy");
        let (got, payload) = split_header(&h, &frame).unwrap();
        assert_eq!(payload, b"xy");
        assert_eq!(got[0].value, vec![1, 2]);
        assert_eq!(got[1].value, vec![0]);
        assert!(split_header(&h, &[1]).is_none());
        let bad = vec![p4v1::PacketMetadata { metadata_id: 9, value: vec![1] }];
        assert_eq!(build_header(&h, &bad).unwrap_err().code, tonic::Code::NotFound);
    }
}
