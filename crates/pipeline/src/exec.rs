//! Packet processing: tables, instructions, the action set, actions,
//! groups, meters, outputs and packet-ins (OpenFlow 1.3.5 §5.1–§5.12).
//!
//! One packet at a time, straight from the spec:
//! 1. A packet received on a port that is down or `NO_RECV` is dropped
//!    (counted as `rx_dropped`).
//! 2. From table 0: look up the highest-priority matching entry; none and
//!    no table-miss entry means drop. Counters of the table and the entry
//!    are updated (unless the entry has `NO_PKT_COUNTS`/`NO_BYT_COUNTS`).
//! 3. The entry's instructions run in the spec's order: meter, apply-
//!    actions, clear-actions, write-actions, write-metadata, goto-table.
//!    Without goto-table, the accumulated action set executes, in the
//!    spec's order (§5.10): copy-TTL-in, pops, push-MPLS, push-PBB,
//!    push-VLAN, copy-TTL-out, decrements, sets, set-queue, then group (if
//!    any) else output.
//! 4. After any action that changes headers the packet is re-parsed, so
//!    later matches (goto-table) and actions see the new packet.
//!
//! Two walks, one meaning: the reference walk (`reference.rs`), for the
//! oracle configuration and every trace, scans each table linearly and
//! interprets the entry's `Instruction`s and `Action`s straight from the
//! spec (`ActionSet`, [`Pipeline::action`], `edit.rs`); every other
//! configuration runs the core's fast walk (`sluice_core::walk`): lookups
//! through the index or compiled code and the caches, the ops the
//! flow-mod lowered the instructions to (`FlowEntry::ops`, `lower.rs`),
//! the core's deferred set, and cache entries' composed programs. This
//! module is what the core sees of OpenFlow (it implements the core's
//! `Frontend`, `Table` and `Entry` for `Pipeline`, `FlowTable` and
//! `FlowEntry`) and the forwarding the core hands back: ports, groups,
//! meters and packet-ins, which serve both walks. The differential tests
//! hold the two walks to the same results.
//!
//! Packet-ins carry the reason (`NO_MATCH` when the entry was a table-miss
//! entry, `ACTION` otherwise, `INVALID_TTL` for TTL expiry), the table id,
//! the entry's cookie and the pipeline fields as the match. Data is cut to
//! the output action's `max_len` (for invalid-TTL packet-ins the whole
//! frame, or the switch's `miss_send_len`: `Config::invalid_ttl_packet_in`)
//! and the whole frame is kept in a bounded buffer
//! pool, unless `max_len` is `OFPCML_NO_BUFFER` or the pool is full.

use crate::edit;
use crate::group::select_bucket;
use crate::lower::lower;
use crate::meter::Verdict;
use crate::ports::PortCounter;
use crate::table::{FlowEntry, FlowTable};
use crate::tally::{Shard, Tally};
use crate::{CacheMode, Datapath, Pipeline};
use sluice_core::extract::Extract;
use sluice_core::graph::Graph;
use sluice_core::guard::GuardSet;
use sluice_core::op::{EntryOps, Op, ReportOp};
pub use sluice_core::pkt::{Pkt, MAX_FRAME};
use sluice_core::upcall::{Reason, Removal, Removed, Upcall};
use sluice_core::walk::Counting;
use sluice_ofp::action::Action;
use sluice_ofp::consts::{port_no, OFPCML_NO_BUFFER, OFP_NO_BUFFER};
use sluice_ofp::error::{ErrorCode, Result};
use sluice_ofp::group::GroupType;
use sluice_ofp::instruction::Instruction;
use sluice_ofp::message::{
    flow_removed_reason, packet_in_reason, FlowRemoved, Message, PacketIn, PacketOut,
};
use sluice_ofp::oxm::{FieldBytes, FieldId, Match, Oxm};
use sluice_packet::buf::PacketBuf;
use sluice_packet::key::{FlowKey, FlowMask, FIXED_LAYOUT};
use sluice_packet::parse::Meta;
use std::sync::Arc;

pub use sluice_core::walk::{Flow, Tx};

/// The bounded pool of packets buffered for PACKET_IN.
#[derive(Debug, Default)]
pub struct Buffers {
    slots: Vec<Option<(u32, u32, Vec<u8>)>>,
    next_id: u32,
}

impl Buffers {
    pub fn new(n: usize) -> Self {
        Buffers { slots: vec![None; n], next_id: 0 }
    }

    /// Store a frame; returns its buffer id, or `None` if buffering is off.
    /// The oldest buffer in the slot is overwritten (the pool is a ring).
    pub fn store(&mut self, in_port: u32, frame: &[u8]) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1) % (OFP_NO_BUFFER - 1);
        let slot = id as usize % self.slots.len();
        self.slots[slot] = Some((id, in_port, frame.to_vec()));
        Some(id)
    }

    /// Take a buffered frame (a buffer can be used once).
    pub fn take(&mut self, id: u32) -> Option<(u32, Vec<u8>)> {
        if self.slots.is_empty() {
            return None;
        }
        let slot = id as usize % self.slots.len();
        match &self.slots[slot] {
            Some((i, _, _)) if *i == id => self.slots[slot].take().map(|(_, p, d)| (p, d)),
            _ => None,
        }
    }
}

/// Most frames one stage of [`Pipeline::process_burst_with`] holds.
pub const BURST: usize = sluice_core::walk::BURST;

/// The value of OXM field `f` in `pkt`'s key (which must be fresh).
pub(crate) fn field(pkt: &Pkt, f: FieldId) -> u128 {
    debug_assert!(!pkt.stale, "key read while it lags behind the bytes");
    FIXED_LAYOUT.get(&pkt.key, crate::oxm_field::field(f)).to_u128()
}

/// The OpenFlow message for an upcall: a `ToController` is a PACKET_IN
/// whose match carries the pipeline fields (`in_port`; `in_phy_port` when
/// it differs; `metadata` and `tunnel_id` when non-zero); a `Removed` is a
/// FLOW_REMOVED with the flow's match as the controller gave it.
pub(crate) fn message_of(u: Upcall<Match>) -> Message {
    match u {
        Upcall::Removed(r) => flow_removed(r),
        // A `send_maps` report: the reporter left table and cookie zero
        // (`filterprog.rs`); they are the entry's whose op ran.
        Upcall::Report { table, cookie, mut body } => {
            if let Some(t) = body.get_mut(4) {
                *t = table;
            }
            if let Some(c) = body.get_mut(8..16) {
                c.copy_from_slice(&cookie.to_be_bytes());
            }
            Message::Experimenter(sluice_ofp::message::ExperimenterMsg {
                experimenter: sluice_ofp::consts::SLUICE_EXPERIMENTER_ID,
                exp_type: sluice_ofp::filterprog::exp_type::MAPS_REPORT,
                data: body,
            })
        }
        Upcall::ToController { reason, table, cookie, buffer_id, total_len, data, meta } => {
            let b = |f: FieldId, v: u128| Oxm::Basic {
                field: f,
                value: FieldBytes::from_u128(v, f.len()),
                mask: None,
            };
            let mut m = Match { oxms: vec![b(FieldId::InPort, meta.in_port.into())] };
            if meta.in_phy_port != meta.in_port {
                m.oxms.push(b(FieldId::InPhyPort, meta.in_phy_port.into()));
            }
            if meta.metadata != 0 {
                m.oxms.push(b(FieldId::Metadata, meta.metadata.into()));
            }
            if meta.tunnel_id != 0 {
                m.oxms.push(b(FieldId::TunnelId, meta.tunnel_id.into()));
            }
            Message::PacketIn(PacketIn {
                buffer_id: buffer_id.unwrap_or(OFP_NO_BUFFER),
                total_len,
                reason: reason_code(reason),
                table_id: table,
                cookie,
                r#match: m,
                data,
            })
        }
    }
}

fn flow_removed(r: Removed<Match>) -> Message {
    const S: u64 = 1_000_000_000;
    let secs = |ns: u64| u16::try_from(ns / S).unwrap_or(u16::MAX);
    Message::FlowRemoved(FlowRemoved {
        cookie: r.cookie,
        priority: r.priority,
        reason: match r.reason {
            Removal::IdleTimeout => flow_removed_reason::IDLE_TIMEOUT,
            Removal::HardTimeout => flow_removed_reason::HARD_TIMEOUT,
            Removal::Deleted => flow_removed_reason::DELETE,
            Removal::GroupDeleted => flow_removed_reason::GROUP_DELETE,
            Removal::MeterDeleted => flow_removed_reason::METER_DELETE,
        },
        table_id: r.table,
        duration_sec: u32::try_from(r.duration_ns / S).unwrap_or(u32::MAX),
        duration_nsec: (r.duration_ns % S) as u32,
        idle_timeout: secs(r.timeouts.idle_ns),
        hard_timeout: secs(r.timeouts.hard_ns),
        packet_count: r.packets,
        byte_count: r.bytes,
        r#match: r.rule,
    })
}

/// OpenFlow's `ofp_packet_in_reason` for an upcall's reason.
fn reason_code(r: Reason) -> u8 {
    match r {
        Reason::NoMatch => packet_in_reason::NO_MATCH,
        Reason::Action => packet_in_reason::ACTION,
        Reason::InvalidTtl => packet_in_reason::INVALID_TTL,
    }
}

/// Why a packet is on its way to the controller.
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    pub(crate) table_id: u8,
    pub(crate) cookie: u64,
    pub(crate) reason: Reason,
    /// Group chain depth left.
    pub(crate) depth: usize,
    /// Interpret the OpenFlow actions straight from the spec (the
    /// reference walk, `reference.rs`) rather than run their lowered ops.
    pub(crate) spec: bool,
}

/// One step of a packet's way through the pipeline, recorded by
/// [`Pipeline::trace`] (like `ovs-appctl ofproto/trace`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// Looked up `table`; `entry` is the hit entry's (priority, cookie,
    /// match) or `None` for a miss without a table-miss entry.
    Lookup {
        table: u8,
        entry: Option<(u16, u64, sluice_ofp::oxm::Match)>,
    },
    Instruction(Instruction),
    Meter {
        meter: u32,
        verdict: Verdict,
    },
    Group {
        group: u32,
        buckets: Vec<usize>,
    },
    /// The action set executed at the end of the pipeline.
    ActionSet(Vec<Action>),
    Output {
        port: u32,
    },
    PacketIn {
        reason: u8,
        table: u8,
    },
    Drop(&'static str),
    /// A guard of the candidate entry with `priority` in `table` ran: its
    /// description, result, and what it changed (filter-program map
    /// writes, one line each).
    Guard {
        table: u8,
        priority: u16,
        guard: String,
        result: bool,
        changes: Vec<String>,
    },
}

/// One forwarding thread's private state (`sluice_core::walk::Worker`):
/// the clock reading of its current burst, packet buffers, caches, the
/// upcalls its packets produced (turned into OpenFlow messages when
/// taken, [`WorkerExt::take_async`]), the counter shard it writes, and a
/// trace being recorded. Made by [`Pipeline::worker`]; used with
/// [`Pipeline::process_with`] on the pipeline or any published copy of it.
pub type Worker = sluice_core::walk::Worker<Pipeline>;

/// What the OpenFlow front end keeps per worker beside the core's state.
#[derive(Debug, Default)]
pub struct OfWorker {
    /// Trace being recorded, if any.
    pub(crate) trace: Option<Vec<TraceEvent>>,
}

impl OfWorker {
    /// Whether a trace is being recorded.
    pub(crate) fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    /// Record a trace event; `e` is only built when tracing.
    #[inline]
    pub(crate) fn note(&mut self, e: impl FnOnce() -> TraceEvent) {
        if let Some(t) = &mut self.trace {
            t.push(e());
        }
    }
}

/// A worker's upcalls as OpenFlow messages.
pub trait WorkerExt {
    /// Take the asynchronous messages (PACKET_IN) queued by this worker's
    /// packets, oldest first.
    fn take_async(&mut self) -> Vec<Message>;
}

impl WorkerExt for Worker {
    fn take_async(&mut self) -> Vec<Message> {
        self.upcalls.drain(..).map(message_of).collect()
    }
}

impl Pipeline {
    /// Run one frame received on `in_port` through the pipeline, with the
    /// owner's worker context (asynchronous messages go to
    /// [`Pipeline::take_async`]).
    pub fn process(&mut self, in_port: u32, frame: &[u8], tx: &mut dyn Tx) {
        self.with_local(|p, w| p.process_with(w, in_port, frame, tx));
    }

    /// Run a burst of frames received on `in_port`, in order (staged, see
    /// [`Pipeline::process_burst_with`]).
    pub fn process_burst(&mut self, in_port: u32, frames: &[&[u8]], tx: &mut dyn Tx) {
        self.with_local(|p, w| p.process_burst_with(w, in_port, frames, tx));
    }

    /// [`Pipeline::process_burst`] on frames in the caller's buffers, lent
    /// for the burst (see [`Pipeline::process_lent_with`]).
    pub fn process_lent<B: AsRef<PacketBuf> + AsMut<PacketBuf>>(
        &mut self,
        in_port: u32,
        bufs: &mut [B],
        tx: &mut dyn Tx,
    ) {
        self.with_local(|p, w| p.process_lent_with(w, in_port, bufs, tx));
    }

    /// Runs `f` with the owner's worker context at the pipeline's clock,
    /// then moves what it queued to the pipeline's queue.
    fn with_local<R>(&mut self, f: impl FnOnce(&Pipeline, &mut Worker) -> R) -> R {
        self.settle();
        let mut w = self
            .local
            .take()
            .unwrap_or_else(|| Box::new(Worker::new(Shard::OWNER, OfWorker::default())));
        w.set_now(self.now_ns);
        let r = f(self, &mut w);
        self.async_out.extend(w.upcalls.drain(..).map(message_of));
        self.local = Some(w);
        r
    }

    /// Run a burst of frames received on `in_port` with a worker's
    /// context: staged by the core (`sluice_core::walk::burst`), up to
    /// [`BURST`] frames at a time, so the cache misses of different
    /// packets overlap instead of queueing; the same results as calling
    /// [`Pipeline::process_with`] per frame (only cache statistics can
    /// differ). The oracle configuration and traces take the reference
    /// walk, one frame at a time.
    pub fn process_burst_with(
        &self,
        w: &mut Worker,
        in_port: u32,
        frames: &[&[u8]],
        tx: &mut dyn Tx,
    ) {
        if self.is_oracle(w) {
            for f in frames {
                self.process_with(w, in_port, f, tx);
            }
            return;
        }
        let bytes = frames.iter().map(|f| f.len() as u64).sum();
        if !self.receive(w, in_port, frames.len(), bytes) {
            return;
        }
        let meta = Meta { in_port, in_phy_port: in_port, metadata: 0, tunnel_id: 0 };
        sluice_core::walk::burst(self, w, meta, frames, tx);
    }

    /// [`Pipeline::process_burst_with`] on frames in the caller's buffers,
    /// without copying them: each packet runs in its own buffer, lent for
    /// the burst (`sluice_core::walk::burst_lent`; the buffer holds
    /// whatever the packet's edits left when it comes back). The daemon's
    /// receive path.
    pub fn process_lent_with<B: AsRef<PacketBuf> + AsMut<PacketBuf>>(
        &self,
        w: &mut Worker,
        in_port: u32,
        bufs: &mut [B],
        tx: &mut dyn Tx,
    ) {
        if self.is_oracle(w) {
            for b in bufs.iter() {
                self.process_with(w, in_port, b.as_ref().data(), tx);
            }
            return;
        }
        let bytes = bufs.iter().map(|b| b.as_ref().len() as u64).sum();
        if !self.receive(w, in_port, bufs.len(), bytes) {
            return;
        }
        let meta = Meta { in_port, in_phy_port: in_port, metadata: 0, tunnel_id: 0 };
        sluice_core::walk::burst_lent(self, w, meta, bufs, tx);
    }

    /// Counts `n` frames of `bytes` received on `in_port`; false when they
    /// are dropped: the port is down or `NO_RECV` (counted as
    /// `rx_dropped`), or there is no such port. Reserved ports (LOCAL,
    /// CONTROLLER) may inject packets too.
    fn receive(&self, w: &Worker, in_port: u32, n: usize, bytes: u64) -> bool {
        use sluice_ofp::port::config::{NO_RECV, PORT_DOWN};
        match self.ports.get(in_port) {
            Some(p) => {
                if p.desc.config & (PORT_DOWN | NO_RECV) != 0 {
                    p.count(w.shard, PortCounter::RxDropped, n as u64);
                    return false;
                }
                p.count(w.shard, PortCounter::RxPackets, n as u64);
                p.count(w.shard, PortCounter::RxBytes, bytes);
                true
            }
            None => in_port > port_no::MAX,
        }
    }

    /// Run one frame received on `in_port` through the pipeline with a
    /// worker's context: `&self`, so any number of workers may share one
    /// (published) pipeline. Counters go to the worker's shard, packet-ins
    /// to its queue ([`WorkerExt::take_async`]).
    pub fn process_with(&self, w: &mut Worker, in_port: u32, frame: &[u8], tx: &mut dyn Tx) {
        if !self.receive(w, in_port, 1, frame.len() as u64) {
            return;
        }
        let meta = Meta { in_port, in_phy_port: in_port, metadata: 0, tunnel_id: 0 };
        let mut pkt = w.take_pkt();
        pkt.set_extract(self.windows.extract());
        if pkt.load(frame, meta) {
            self.run_tables(w, &mut pkt, tx);
        } else {
            w.ext.note(|| TraceEvent::Drop("frame larger than the packet buffer"));
        }
        w.put_pkt(pkt);
    }

    /// Run a loaded packet from the graph's start: the reference walk for
    /// the oracle configuration and traces, else the core's fast walk
    /// (through the caches when they are on).
    fn run_tables(&self, w: &mut Worker, pkt: &mut Pkt, tx: &mut dyn Tx) {
        if self.is_oracle(w) {
            self.ref_walk(w, pkt, tx);
        } else {
            sluice_core::walk::run(self, w, pkt, tx);
        }
    }

    /// The context actions of entry `e` of `table` run in (packet-in
    /// reason and cookie, group depth).
    pub(crate) fn entry_ctx(&self, table: u8, e: &FlowEntry) -> Ctx {
        Ctx {
            table_id: table,
            cookie: e.cookie,
            reason: if e.is_table_miss() { Reason::NoMatch } else { Reason::Action },
            depth: self.cfg.max_group_depth,
            spec: false,
        }
    }

    pub(crate) fn meter(&self, w: &mut Worker, id: u32, pkt: &mut Pkt) -> Flow {
        let Some(m) = self.meters.get(id) else { return Flow::Continue };
        // A trace (dry shard) asks the meter without taking tokens.
        let verdict = if w.shard.is_dry() {
            m.peek(pkt.data().len(), w.now_ns)
        } else {
            m.apply(pkt.data().len(), w.now_ns)
        };
        w.ext.note(|| TraceEvent::Meter { meter: id, verdict });
        match verdict {
            Verdict::Pass => Flow::Continue,
            Verdict::Drop => Flow::Stop,
            Verdict::Remark(levels) => {
                pkt.fresh();
                edit::remark_dscp(pkt, levels);
                Flow::Continue
            }
        }
    }

    #[inline]
    pub(crate) fn output(
        &self,
        w: &mut Worker,
        port: u32,
        max_len: u16,
        pkt: &mut Pkt,
        ctx: Ctx,
        tx: &mut dyn Tx,
    ) {
        let in_port = pkt.meta.in_port;
        match port {
            port_no::CONTROLLER => self.packet_in(w, pkt, ctx, max_len),
            port_no::IN_PORT => self.send(w, in_port, pkt, tx),
            port_no::ALL | port_no::FLOOD => {
                // All standard ports (physical, logical and LOCAL: §4.1)
                // but the ingress port, skipping those that cannot forward
                // (down, NO_FWD: §4.5) and, for FLOOD, blocked ones.
                for p in self
                    .ports
                    .numbers()
                    .filter(|&p| p != in_port && (p <= port_no::MAX || p == port_no::LOCAL))
                {
                    let blocked = self
                        .ports
                        .get(p)
                        .is_some_and(|e| e.desc.state & sluice_ofp::port::state::BLOCKED != 0);
                    if !self.ports.can_forward(p) || (port == port_no::FLOOD && blocked) {
                        continue;
                    }
                    self.send(w, p, pkt, tx);
                }
            }
            port_no::TABLE => {
                // Only from PACKET_OUT (validated); resubmit to table 0.
                pkt.fresh();
                let mut copy = pkt.clone();
                copy.queue = None;
                self.run_tables(w, &mut copy, tx);
            }
            p if p == in_port => {} // OpenFlow never sends back out the ingress port implicitly.
            p => self.send(w, p, pkt, tx),
        }
    }

    #[inline]
    fn send(&self, w: &mut Worker, port: u32, pkt: &Pkt, tx: &mut dyn Tx) {
        if !self.ports.can_forward(port) {
            w.ext.note(|| TraceEvent::Drop("output port is down, missing or NO_FWD"));
            match self.ports.get(port) {
                Some(p) => p.count(w.shard, PortCounter::TxDropped, 1),
                None => tx.no_port(port),
            }
            return;
        }
        let Some(p) = self.ports.get(port) else { return };
        let len = pkt.data().len() as u64;
        p.count(w.shard, PortCounter::TxPackets, 1);
        p.count(w.shard, PortCounter::TxBytes, len);
        if let Some(q) = pkt.queue {
            p.count_queue(w.shard, q, len);
        }
        tx.transmit(port, pkt.queue, pkt.data());
        w.ext.note(|| TraceEvent::Output { port });
    }

    /// A rule's `send_maps` ran: queue its report, if its rate limit lets
    /// it through, as the worker's upcalls (sent like PACKET_INs).
    pub(crate) fn report(&self, w: &mut Worker, r: &ReportOp, ctx: Ctx) {
        // A trace sends nothing, so it must not spend the rule's rate limit.
        if w.shard.is_dry() {
            return;
        }
        for body in r.0.report(w.now_ns) {
            w.upcalls.push(Upcall::Report { table: ctx.table_id, cookie: ctx.cookie, body });
        }
    }

    /// The `max_len` of an invalid-TTL packet-in (see [`crate::TtlPacketIn`]).
    pub(crate) fn invalid_ttl_max_len(&self) -> u16 {
        match self.cfg.invalid_ttl_packet_in {
            crate::TtlPacketIn::Full => OFPCML_NO_BUFFER,
            crate::TtlPacketIn::MissSendLen => self.switch_config.miss_send_len,
        }
    }

    pub(crate) fn packet_in(&self, w: &mut Worker, pkt: &Pkt, ctx: Ctx, max_len: u16) {
        if !self.ports.packet_in_allowed(pkt.meta.in_port) {
            w.ext.note(|| TraceEvent::Drop("ingress port has NO_PACKET_IN"));
            return;
        }
        w.ext
            .note(|| TraceEvent::PacketIn { reason: reason_code(ctx.reason), table: ctx.table_id });
        // A trace sends no packet-in, so it must not take a buffer either.
        if w.shard.is_dry() {
            return;
        }
        let frame = pkt.data();
        let (buffer_id, data) =
            if max_len == OFPCML_NO_BUFFER || usize::from(max_len) >= frame.len() {
                (None, frame.to_vec())
            } else {
                let stored = self
                    .buffers
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .store(pkt.meta.in_port, frame);
                match stored {
                    Some(id) => (Some(id), frame[..usize::from(max_len)].to_vec()),
                    None => (None, frame.to_vec()),
                }
            };
        w.upcalls.push(Upcall::ToController {
            reason: ctx.reason,
            table: ctx.table_id,
            cookie: ctx.cookie,
            buffer_id,
            total_len: frame.len().min(usize::from(u16::MAX)) as u16,
            data,
            meta: pkt.meta,
        });
    }

    pub(crate) fn group(&self, w: &mut Worker, id: u32, pkt: &mut Pkt, ctx: Ctx, tx: &mut dyn Tx) {
        if ctx.depth == 0 {
            return;
        }
        let ctx = Ctx { depth: ctx.depth - 1, ..ctx };
        let Some(g) = self.groups.get(id) else { return };
        let ports = &self.ports;
        let port_live = |p: u32| ports.is_live(p);
        let chosen: Vec<usize> = match g.group_type {
            GroupType::All => (0..g.buckets.len()).collect(),
            GroupType::Indirect => (0..g.buckets.len().min(1)).collect(),
            GroupType::Select => {
                pkt.fresh();
                let h = flow_hash(pkt);
                select_bucket(&g.buckets, |b| self.groups.bucket_live(b, &port_live, ctx.depth), h)
                    .into_iter()
                    .collect()
            }
            GroupType::FastFailover => g
                .buckets
                .iter()
                .position(|b| self.groups.bucket_live(b, &port_live, ctx.depth))
                .into_iter()
                .collect(),
            GroupType::Unknown(_) => vec![],
        };
        w.ext.note(|| TraceEvent::Group { group: id, buckets: chosen.clone() });
        g.count(w.shard, &chosen, pkt.data().len() as u64);
        for &i in &chosen {
            let (Some(bucket), Some(ops)) = (g.buckets.get(i), g.ops.get(i)) else { continue };
            // Each bucket works on its own copy of the packet.
            let mut p = w.take_pkt();
            if p.copy_of(pkt) {
                if ctx.spec {
                    self.actions(w, &bucket.actions, &mut p, ctx, tx);
                } else {
                    sluice_core::walk::run_ops(self, w, ops, &mut p, ctx, tx);
                }
            }
            w.put_pkt(p);
        }
    }

    /// Run one frame like [`Pipeline::process`] and return what it met,
    /// as a dry run that changes nothing: it walks with the owner's shard
    /// made dry ([`Shard::dry`]), so no flow, table, port or group counter
    /// and no last-use time (idle timeout) moves; meters are asked without
    /// taking tokens ([`crate::meter::Meter::peek`]); filter programs run
    /// on copies of their maps; packet-ins and `send_maps` reports are
    /// noted in the trace but neither queued nor buffered. Outputs go to
    /// `tx` (the callers only list them).
    pub fn trace(&mut self, in_port: u32, frame: &[u8], tx: &mut dyn Tx) -> Vec<TraceEvent> {
        self.with_local(|p, w| {
            let shard = w.shard;
            w.shard = shard.dry();
            w.ext.trace = Some(Vec::new());
            p.process_with(w, in_port, frame, tx);
            w.shard = shard;
            w.ext.trace.take().unwrap_or_default()
        })
    }

    /// [`Pipeline::trace`], for a switch's live trace. (Every trace is
    /// dry now, so the two are the same; the name says what the daemon
    /// relies on: nothing reaches the controllers.)
    pub fn trace_detached(
        &mut self,
        in_port: u32,
        frame: &[u8],
        tx: &mut dyn Tx,
    ) -> Vec<TraceEvent> {
        self.trace(in_port, frame, tx)
    }

    /// Execute a PACKET_OUT.
    pub fn packet_out(&mut self, po: &PacketOut, tx: &mut dyn Tx) -> Result<()> {
        let in_port = po.in_port;
        if !(in_port <= port_no::MAX || in_port == port_no::CONTROLLER || in_port == port_no::LOCAL)
            || in_port == 0
        {
            return Err(ErrorCode::BRC_BAD_PORT);
        }
        self.validate_actions(&po.actions, &mut Default::default(), true)?;
        let data = if po.buffer_id == OFP_NO_BUFFER {
            po.data.clone()
        } else {
            self.take_buffer(po.buffer_id).ok_or(ErrorCode::BRC_BUFFER_UNKNOWN)?.1
        };
        let meta = Meta { in_port, in_phy_port: in_port, metadata: 0, tunnel_id: 0 };
        let ctx = Ctx {
            table_id: 0xff,
            cookie: u64::MAX,
            reason: Reason::Action,
            depth: self.cfg.max_group_depth,
            spec: self.cfg.is_oracle(),
        };
        // Lowered once per message, like a flow entry's at flow-mod time.
        let ops: Vec<Op> =
            if ctx.spec { Vec::new() } else { po.actions.iter().map(lower).collect() };
        self.with_local(|p, w| {
            let mut pkt = w.take_pkt();
            pkt.set_extract(p.windows.extract());
            let r = if pkt.load(&data, meta) {
                if ctx.spec {
                    p.actions(w, &po.actions, &mut pkt, ctx, tx);
                } else {
                    sluice_core::walk::run_ops(p, w, &ops, &mut pkt, ctx, tx);
                }
                Ok(())
            } else {
                Err(ErrorCode::BRC_BAD_PACKET)
            };
            w.put_pkt(pkt);
            r
        })
    }

    /// Take a packet buffered for PACKET_IN (each buffer can be used once).
    pub(crate) fn take_buffer(&self, id: u32) -> Option<(u32, Vec<u8>)> {
        self.buffers.lock().unwrap_or_else(|e| e.into_inner()).take(id)
    }
}

/// The OpenFlow front end as the core's fast walk sees it.
impl sluice_core::walk::Frontend for Pipeline {
    type Table = FlowTable;
    type Ctx = Ctx;
    type Ext = OfWorker;
    type Rule = Match;

    #[inline]
    fn graph(&self) -> &Graph {
        &self.graph
    }

    #[inline]
    fn table(&self, id: u8) -> Option<&FlowTable> {
        self.tables.get(usize::from(id))
    }

    #[inline]
    fn generation(&self) -> u64 {
        self.flow_gen
    }

    #[inline]
    fn extract(&self) -> Option<&Arc<Extract>> {
        self.windows.extract()
    }

    #[inline]
    fn cache_mode(&self) -> CacheMode {
        self.cfg.cache
    }

    #[inline]
    fn indexed(&self) -> bool {
        // `Datapath::Reference` with caches on: linear-scan lookups (their
        // masks are valid un-wildcarding), lowered ops like every other
        // fast configuration.
        self.cfg.datapath != Datapath::Reference
    }

    #[inline]
    fn ctx(&self, table: u8, e: &Arc<FlowEntry>) -> Ctx {
        self.entry_ctx(table, e)
    }

    fn meter(&self, w: &mut Worker, id: u32, pkt: &mut Pkt) -> Flow {
        Pipeline::meter(self, w, id, pkt)
    }

    #[inline]
    fn forward(&self, w: &mut Worker, op: &Op, pkt: &mut Pkt, ctx: Ctx, tx: &mut dyn Tx) -> Flow {
        match op {
            Op::Output { port, max_len } => self.output(w, *port, *max_len, pkt, ctx, tx),
            Op::Group(g) => self.group(w, *g, pkt, ctx, tx),
            Op::Report(r) => self.report(w, r, ctx),
            _ => {}
        }
        Flow::Continue
    }

    fn ttl_expired(&self, w: &mut Worker, pkt: &Pkt, ctx: Ctx) {
        let ctx = Ctx { reason: Reason::InvalidTtl, ..ctx };
        self.packet_in(w, pkt, ctx, self.invalid_ttl_max_len());
    }
}

/// A flow table as the core's fast walk sees it.
impl sluice_core::walk::Table for FlowTable {
    type Entry = Arc<FlowEntry>;

    #[inline]
    fn counters(&self) -> &Arc<Tally> {
        &self.stats
    }

    #[inline]
    fn entries(&self) -> &[Arc<FlowEntry>] {
        FlowTable::entries(self)
    }

    #[inline]
    fn has_guards(&self) -> bool {
        FlowTable::has_guards(self)
    }

    #[inline]
    fn lookup_fast(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize> {
        FlowTable::lookup_fast(self, key, wc)
    }

    #[inline]
    fn lookup_scan(&self, key: &FlowKey) -> Option<usize> {
        self.lookup(key)
    }

    #[inline]
    fn lookup_scan_wc(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize> {
        FlowTable::lookup_scan_wc(self, key, wc)
    }

    fn lookup_guarded(
        &self,
        key: &FlowKey,
        wc: &mut FlowMask,
        indexed: bool,
        accept: &mut dyn FnMut(usize) -> bool,
    ) -> Option<usize> {
        FlowTable::lookup_guarded(self, key, wc, indexed, accept)
    }
}

/// A flow entry as the core's fast walk sees it.
impl sluice_core::walk::Entry for FlowEntry {
    #[inline]
    fn ops(&self) -> &Arc<EntryOps> {
        &self.ops
    }

    #[inline]
    fn guards(&self) -> &GuardSet {
        &self.guards
    }

    #[inline]
    fn counters(&self) -> &Tally {
        &self.stats
    }

    #[inline]
    fn counting(&self) -> Counting {
        FlowEntry::counting(self.flags)
    }
}

/// A hash over L2–L4 (MACs, ethertype, VLAN, IP or ARP addresses, IP
/// protocol, ports) so that one flow always picks one SELECT bucket and
/// different flows spread.
pub fn flow_hash(pkt: &Pkt) -> u64 {
    const FIELDS: &[FieldId] = &[
        FieldId::EthSrc,
        FieldId::EthDst,
        FieldId::EthType,
        FieldId::VlanVid,
        FieldId::Ipv4Src,
        FieldId::Ipv4Dst,
        FieldId::Ipv6Src,
        FieldId::Ipv6Dst,
        FieldId::ArpSpa,
        FieldId::ArpTpa,
        FieldId::IpProto,
        FieldId::TcpSrc,
        FieldId::TcpDst,
        FieldId::UdpSrc,
        FieldId::UdpDst,
        FieldId::SctpSrc,
        FieldId::SctpDst,
    ];
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &f in FIELDS {
        let v = field(pkt, f);
        for w in [(v >> 64) as u64, v as u64] {
            h ^= w;
            h = h.wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29);
        }
    }
    // splitmix64 finaliser.
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

#[cfg(test)]
mod select_hash_tests {
    use super::*;
    use sluice_ofp::consts::group_id;
    use sluice_ofp::group::Bucket;

    /// os-ken's 01_SELECT_Weight_Ether ARP case: random source and
    /// destination MACs, everything else fixed, a 1:2 select group. Each
    /// bucket must get its weight's share of the flows.
    #[test]
    fn select_splits_random_mac_arp_by_weight() {
        let buckets: Vec<Bucket> = [1u16, 2]
            .iter()
            .map(|&weight| Bucket {
                weight,
                watch_port: port_no::ANY,
                watch_group: group_id::ANY,
                actions: vec![],
            })
            .collect();
        let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let mut counts = [0u32; 2];
        let n = 30_000;
        let mut pkt = Pkt::new();
        for _ in 0..n {
            let dst = rnd().to_be_bytes();
            let src = (rnd() & 0xfeff_ffff_ffff).to_be_bytes();
            let mut f = Vec::with_capacity(60);
            f.extend_from_slice(&dst[2..8]);
            f.extend_from_slice(&src[2..8]);
            f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
            f.extend_from_slice(&[0x12, 0x11, 0x11, 0x11, 0x11, 0x11, 10, 0, 0, 1]);
            f.extend_from_slice(&[0x22; 6]);
            f.extend_from_slice(&[10, 0, 0, 2]);
            f.resize(60, 0x11);
            assert!(pkt.load(&f, Meta::default()));
            pkt.fresh();
            let i = select_bucket(&buckets, |_| true, flow_hash(&pkt)).unwrap();
            counts[i] += 1;
        }
        let share = f64::from(counts[0]) / f64::from(n);
        assert!((share - 1.0 / 3.0).abs() < 0.015, "weight 1 of 3 got {share:.4} ({counts:?})");
    }
}
