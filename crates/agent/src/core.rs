//! The agent core: one tokio task that owns the [`Switch`], the roles and
//! the per-connection protocol state, and is the only writer into every
//! connection's outbound queue.
//!
//! ## Why one task
//! Everything that must be ordered goes through it: the replies to a
//! connection's messages leave in the order the messages arrived, a
//! BARRIER_REPLY is queued only after the replies (and the asynchronous
//! messages) caused by everything before it, and a role change is seen by
//! the very next message of every connection.
//!
//! ## Never blocking on a controller
//! Connection tasks do the socket I/O. The core hands them encoded frames
//! with `try_send` on a bounded queue and never awaits a connection:
//! - a PACKET_IN that finds the queue three-quarters full, or the
//!   connection's token bucket empty, is dropped and counted: the last
//!   quarter is kept for replies and other messages, so a packet-in flood
//!   towards a controller that reads slowly costs packet-ins, not the
//!   connection;
//! - any other message that finds the queue full disconnects that
//!   controller (logged and counted): dropping it silently would break
//!   the protocol (a lost reply, a lost FLOW_REMOVED).
//!
//! So a controller that stops reading costs its own connection at worst;
//! the switch, the datapath and the other controllers go on.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use sluice_ofp::error::ErrorCode;
use sluice_ofp::message::Outgoing;
use sluice_ofp::message::{error_reply, AsyncConfig, Message};
use sluice_ofp::multipart::{MultipartReply, MultipartRequest, Reassembler, DEFAULT_MAX_LEN};
use tokio::sync::{mpsc, watch, Notify};
use tracing::{debug, info, warn};

use crate::config::{AgentConfig, Endpoint, Target};
use crate::roles::{default_async_config, slave_forbidden, wants, ConnId, Roles, TokenBucket};
use crate::switch::{Switch, IDLE_BATCH};
use crate::{AgentEvent, ConnCounters, ConnStatus, Shared};

/// What connection tasks tell the core.
pub(crate) enum CoreIn {
    /// HELLO done: the connection is ready for messages.
    Open {
        id: ConnId,
        peer: Endpoint,
        target: Target,
        controller: bool,
        out: mpsc::Sender<Vec<u8>>,
        kill: Arc<Notify>,
    },
    /// One parsed message (echo replies are consumed by the connection).
    Msg { id: ConnId, xid: u32, msg: Message, raw: Vec<u8> },
    /// A message that failed to parse: answer with `code`.
    Bad { id: ConnId, xid: u32, code: ErrorCode, raw: Vec<u8> },
    /// The connection ended.
    Closed { id: ConnId, reason: String },
}

/// What happened to a frame handed to a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sent {
    Queued,
    /// Droppable and the queue was full (counted).
    Dropped,
    /// The connection is gone (or was just closed for overflow).
    Closed,
}

struct Conn {
    peer: Endpoint,
    controller: bool,
    out: mpsc::Sender<Vec<u8>>,
    kill: Arc<Notify>,
    async_cfg: AsyncConfig,
    reasm: Reassembler<MultipartRequest>,
    bucket: TokenBucket,
    counters: Arc<ConnCounters>,
}

pub(crate) struct Core<S: Switch> {
    switch: S,
    cfg: Arc<AgentConfig>,
    shared: Arc<Shared>,
    conns: BTreeMap<ConnId, Conn>,
    roles: Roles,
    controllers: usize,
    epoch: Instant,
}

impl<S: Switch> Core<S> {
    pub(crate) fn new(switch: S, cfg: Arc<AgentConfig>, shared: Arc<Shared>) -> Self {
        Core {
            switch,
            cfg,
            shared,
            conns: BTreeMap::new(),
            roles: Roles::default(),
            controllers: 0,
            epoch: Instant::now(),
        }
    }

    /// Run until shutdown or until every sender of `rx` is gone. After
    /// each batch of inputs (what is queued, at most [`IDLE_BATCH`]) the
    /// switch's [`Switch::idle`] runs.
    pub(crate) async fn run(
        mut self,
        mut rx: mpsc::Receiver<CoreIn>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let mut tick =
            tokio::time::interval(self.cfg.async_poll.max(std::time::Duration::from_millis(1)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let shared = self.shared.clone();
        loop {
            tokio::select! {
                biased;
                r = shutdown.changed() => {
                    if r.is_err() || *shutdown.borrow() {
                        break;
                    }
                }
                m = rx.recv() => match m {
                    Some(m) => {
                        self.input(m);
                        // Whatever else is queued, up to a bound, then
                        // tell the switch the batch is done.
                        let mut n = 1;
                        while n < IDLE_BATCH {
                            let Ok(m) = rx.try_recv() else { break };
                            self.input(m);
                            n += 1;
                        }
                        self.switch.idle();
                    }
                    None => break,
                },
                _ = shared.wake.notified() => self.flush_async(),
                _ = tick.tick() => self.flush_async(),
            }
        }
        let ids: Vec<ConnId> = self.conns.keys().copied().collect();
        for id in ids {
            self.close(id, "agent shutting down");
        }
    }

    fn input(&mut self, m: CoreIn) {
        match m {
            CoreIn::Open { id, peer, target, controller, out, kill } => {
                let limit = self.cfg.packet_in_limit;
                let counters = Arc::new(ConnCounters::default());
                let conn = Conn {
                    peer: peer.clone(),
                    controller,
                    out,
                    kill,
                    async_cfg: default_async_config(),
                    reasm: Reassembler::default(),
                    bucket: TokenBucket::new(limit.rate, limit.burst, self.now_ns()),
                    counters: counters.clone(),
                };
                self.conns.insert(id, conn);
                self.roles.add(id);
                self.shared.status_mut().insert(
                    id,
                    ConnStatus {
                        id,
                        peer: peer.clone(),
                        target: target.clone(),
                        controller,
                        role: self.roles.role(id),
                        counters,
                    },
                );
                if controller {
                    info!(conn = id, %peer, %target, "controller connection up");
                } else {
                    debug!(conn = id, %peer, %target, "connection up");
                }
                let _ = self.shared.events.send(AgentEvent::Connected { conn: id, peer, target });
                if controller {
                    self.controllers += 1;
                    self.shared.controllers.send_replace(self.controllers);
                    if self.controllers == 1 {
                        info!("first controller connected: leaving fail mode");
                        let _ = self.shared.events.send(AgentEvent::FirstControllerConnected);
                    }
                }
            }
            CoreIn::Msg { id, xid, msg, raw } => {
                self.message(id, xid, msg, &raw);
                // Asynchronous messages this message caused go out before
                // whatever the next message (a barrier, say) produces.
                self.flush_async();
            }
            CoreIn::Bad { id, xid, code, raw } => {
                debug!(conn = id, xid, ?code, "undecodable message");
                if let Some(c) = self.conns.get_mut(&id) {
                    c.reasm.abandon(xid);
                }
                self.reply(id, xid, &error_reply(code, &raw));
            }
            CoreIn::Closed { id, reason } => self.close(id, &reason),
        }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn message(&mut self, id: ConnId, xid: u32, msg: Message, raw: &[u8]) {
        let Some(conn) = self.conns.get_mut(&id) else { return };
        let role = self.roles.role(id);
        let msg = match msg {
            // A repeated HELLO after negotiation carries nothing new.
            Message::Hello(_) | Message::EchoReply(_) => return,
            Message::EchoRequest(d) => return self.reply(id, xid, &Message::EchoReply(d)),
            Message::Error(e) => {
                debug!(conn = id, xid, ?e, "controller sent an error");
                return;
            }
            Message::RoleRequest(r) => {
                let m = match self.roles.request(id, &r) {
                    Ok(rep) => {
                        debug!(conn = id, role = rep.role, generation = rep.generation_id, "role");
                        self.sync_roles();
                        Message::RoleReply(rep)
                    }
                    Err(code) => error_reply(code, raw),
                };
                return self.reply(id, xid, &m);
            }
            Message::GetAsyncRequest => {
                let m = Message::GetAsyncReply(conn.async_cfg);
                return self.reply(id, xid, &m);
            }
            Message::SetAsync(cfg) => {
                conn.async_cfg = cfg;
                return;
            }
            Message::MultipartRequest(req) => match conn.reasm.feed(xid, req) {
                Ok(Some(full)) => Message::MultipartRequest(full),
                Ok(None) => return,
                Err(code) => return self.reply(id, xid, &error_reply(code, raw)),
            },
            m => m,
        };
        if role == sluice_ofp::message::controller_role::SLAVE && slave_forbidden(&msg) {
            return self.reply(id, xid, &error_reply(ErrorCode::BRC_IS_SLAVE, raw));
        }
        let replies = self.switch.handle(id, xid, &msg, raw);
        for Outgoing { xid, msg } in replies {
            self.reply(id, xid, &msg);
            if !self.conns.contains_key(&id) {
                return;
            }
        }
    }

    /// Copy role changes (other masters demoted) into the status map.
    fn sync_roles(&self) {
        let mut st = self.shared.status_mut();
        for (id, s) in st.iter_mut() {
            s.role = self.roles.role(*id);
        }
    }

    /// Queue a reply; multipart replies too long for one message are split.
    fn reply(&mut self, id: ConnId, xid: u32, msg: &Message) {
        match msg.try_encode(xid) {
            Ok(bytes) => {
                self.send(id, bytes, false);
            }
            Err(_) => match msg {
                Message::MultipartReply(r) => {
                    let parts = MultipartReply { flags: r.flags, body: r.body.clone() }
                        .split(DEFAULT_MAX_LEN);
                    for p in parts {
                        let bytes = Message::MultipartReply(p).encode(xid);
                        if self.send(id, bytes, false) == Sent::Closed {
                            return;
                        }
                    }
                }
                other => {
                    warn!(conn = id, xid, ty = other.msg_type(), "reply too long to encode");
                    let e = error_reply(ErrorCode::BRC_EPERM, &[]);
                    self.send(id, e.encode(xid), false);
                }
            },
        }
    }

    /// Queue `bytes` for `id`.
    fn send(&mut self, id: ConnId, bytes: Vec<u8>, droppable: bool) -> Sent {
        let Some(conn) = self.conns.get(&id) else { return Sent::Closed };
        // Droppable messages (packet-ins) may not take the last quarter of
        // the queue: replies to a controller that reads slowly still fit,
        // so a packet-in flood costs packet-ins, never the connection.
        let reserve = (conn.out.max_capacity() / 4).max(1);
        if droppable && conn.out.capacity() <= reserve {
            conn.counters.packet_in_dropped_queue.fetch_add(1, Relaxed);
            self.shared.counters.packet_in_dropped_queue.fetch_add(1, Relaxed);
            return Sent::Dropped;
        }
        match conn.out.try_send(bytes) {
            Ok(()) => Sent::Queued,
            Err(mpsc::error::TrySendError::Full(_)) if droppable => {
                conn.counters.packet_in_dropped_queue.fetch_add(1, Relaxed);
                self.shared.counters.packet_in_dropped_queue.fetch_add(1, Relaxed);
                Sent::Dropped
            }
            Err(mpsc::error::TrySendError::Full(_)) => {
                warn!(conn = id, peer = %conn.peer, "outbound queue full with a message that cannot be dropped: disconnecting");
                self.shared.counters.overflow_disconnects.fetch_add(1, Relaxed);
                self.close(id, "outbound queue overflow");
                Sent::Closed
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                self.close(id, "connection task ended");
                Sent::Closed
            }
        }
    }

    fn close(&mut self, id: ConnId, reason: &str) {
        let Some(conn) = self.conns.remove(&id) else { return };
        conn.kill.notify_one();
        self.roles.remove(id);
        self.switch.conn_closed(id);
        self.shared.status_mut().remove(&id);
        if conn.controller {
            info!(conn = id, peer = %conn.peer, reason, "controller connection down");
        } else {
            debug!(conn = id, peer = %conn.peer, reason, "connection down");
        }
        let _ = self.shared.events.send(AgentEvent::Disconnected {
            conn: id,
            peer: conn.peer,
            reason: reason.to_string(),
        });
        if conn.controller {
            self.controllers = self.controllers.saturating_sub(1);
            self.shared.controllers.send_replace(self.controllers);
            if self.controllers == 0 {
                let fail_mode = self.cfg.fail_mode;
                warn!(?fail_mode, "last controller disconnected: entering fail mode");
                let _ = self.shared.events.send(AgentEvent::AllControllersLost { fail_mode });
            }
        }
    }

    /// Take the switch's asynchronous messages and fan them out.
    fn flush_async(&mut self) {
        let msgs = self.switch.take_async();
        if msgs.is_empty() {
            return;
        }
        let now = self.now_ns();
        for msg in msgs {
            let is_pin = matches!(msg, Message::PacketIn(_));
            if is_pin {
                self.shared.counters.packet_in_frames.fetch_add(1, Relaxed);
            }
            let Ok(bytes) = msg.try_encode(0) else {
                warn!(ty = msg.msg_type(), "asynchronous message too long to encode: not sent");
                if is_pin {
                    self.shared.counters.packet_in_unsent.fetch_add(1, Relaxed);
                }
                continue;
            };
            let ids: Vec<ConnId> = self.conns.keys().copied().collect();
            let mut wanted = false;
            for id in ids {
                let role = self.roles.role(id);
                let Some(conn) = self.conns.get_mut(&id) else { continue };
                if !wants(&conn.async_cfg, role, &msg) {
                    continue;
                }
                wanted = true;
                if is_pin && !conn.bucket.take(now) {
                    conn.counters.packet_in_dropped_rate.fetch_add(1, Relaxed);
                    self.shared.counters.packet_in_dropped_rate.fetch_add(1, Relaxed);
                    continue;
                }
                match self.send(id, bytes.clone(), is_pin) {
                    Sent::Queued if is_pin => {
                        if let Some(conn) = self.conns.get(&id) {
                            conn.counters.packet_in_sent.fetch_add(1, Relaxed);
                        }
                        self.shared.counters.packet_in_sent.fetch_add(1, Relaxed);
                    }
                    Sent::Closed if is_pin => {
                        self.shared.counters.packet_in_unsent.fetch_add(1, Relaxed);
                    }
                    _ => {}
                }
            }
            if is_pin && !wanted {
                self.shared.counters.packet_in_unsent.fetch_add(1, Relaxed);
            }
        }
    }
}
