//! How the agent reaches the switch: the [`Switch`] trait.
//!
//! The agent knows OpenFlow messages, not the engine behind them: a
//! `Switch` takes a decoded message and returns the replies
//! ([`Outgoing`]). The daemon (`sluice-datapath`) implements it over the
//! published pipeline; tests implement it over a reference pipeline.
//!
//! ## Threading
//! The agent calls a `Switch` from one tokio task (the agent core), one
//! message at a time, and never while it waits for a socket. A `Switch`
//! must therefore return promptly: lock a shared structure briefly, or
//! hand the request to a datapath control thread and wait for its answer;
//! never wait for a controller. In the other direction the datapath never
//! waits for the agent: it queues asynchronous messages where
//! [`Switch::take_async`] will find them and calls
//! [`crate::AsyncNotifier::notify`], which only sets a flag.
//!
//! For a datapath running in worker threads, [`async_queue`] is that
//! place: a bounded queue whose [`AsyncSender`] never blocks (a PACKET_IN
//! that does not fit is dropped and counted; anything else that does not
//! fit is counted and logged as lost) and whose [`AsyncQueue`] the
//! daemon's `Switch` drains in `take_async`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use sluice_ofp::message::Message;
use sluice_ofp::message::Outgoing;

use crate::roles::ConnId;

/// Most controller messages the agent applies before calling
/// [`Switch::idle`].
pub const IDLE_BATCH: usize = 256;

/// The switch as the agent sees it.
pub trait Switch: Send + 'static {
    /// Apply one controller message from `conn` and return the replies in
    /// order (they are sent before anything later on the same connection).
    /// Role, async-config, hello and echo messages never get here.
    fn handle(&mut self, conn: ConnId, xid: u32, msg: &Message, raw: &[u8]) -> Vec<Outgoing>;

    /// Asynchronous messages (PACKET_IN, FLOW_REMOVED, PORT_STATUS) queued
    /// since the last call, oldest first.
    fn take_async(&mut self) -> Vec<Message>;

    /// `conn` is gone (for per-connection state such as bundles).
    fn conn_closed(&mut self, _conn: ConnId) {}

    /// Every controller message available right now has been handled
    /// (called after each batch, at most [`IDLE_BATCH`] messages apart): a switch may make a batch of changes visible at
    /// once here instead of after every message.
    fn idle(&mut self) {}
}

impl<S: Switch + ?Sized> Switch for Box<S> {
    fn handle(&mut self, conn: ConnId, xid: u32, msg: &Message, raw: &[u8]) -> Vec<Outgoing> {
        (**self).handle(conn, xid, msg, raw)
    }
    fn take_async(&mut self) -> Vec<Message> {
        (**self).take_async()
    }
    fn conn_closed(&mut self, conn: ConnId) {
        (**self).conn_closed(conn)
    }
    fn idle(&mut self) {
        (**self).idle()
    }
}

/// The sending half of [`async_queue`]: for datapath threads.
#[derive(Clone)]
pub struct AsyncSender {
    tx: std::sync::mpsc::SyncSender<Message>,
    wake: crate::AsyncNotifier,
    dropped_packet_in: Arc<AtomicU64>,
    lost_other: Arc<AtomicU64>,
}

impl AsyncSender {
    /// Queue `msg` and wake the agent. Never blocks: if the queue is full
    /// a PACKET_IN is dropped (counted); any other message is counted as
    /// lost and logged, since it cannot be dropped silently. Returns
    /// whether the message was queued.
    pub fn send(&self, msg: Message) -> bool {
        let is_pin = matches!(msg, Message::PacketIn(_));
        match self.tx.try_send(msg) {
            Ok(()) => {
                self.wake.notify();
                true
            }
            Err(std::sync::mpsc::TrySendError::Full(m)) => {
                if is_pin {
                    self.dropped_packet_in.fetch_add(1, Relaxed);
                } else {
                    self.lost_other.fetch_add(1, Relaxed);
                    tracing::error!(
                        ty = m.msg_type(),
                        "asynchronous message queue full: message lost"
                    );
                }
                self.wake.notify();
                false
            }
            Err(std::sync::mpsc::TrySendError::Disconnected(_)) => false,
        }
    }

    /// PACKET_INs dropped because the queue was full.
    pub fn dropped_packet_ins(&self) -> u64 {
        self.dropped_packet_in.load(Relaxed)
    }

    /// Other messages lost because the queue was full.
    pub fn lost_other(&self) -> u64 {
        self.lost_other.load(Relaxed)
    }
}

/// The receiving half of [`async_queue`]: a [`Switch`] drains it in
/// [`Switch::take_async`].
pub struct AsyncQueue {
    rx: std::sync::mpsc::Receiver<Message>,
    max_batch: usize,
}

impl AsyncQueue {
    /// Everything queued (at most one queue's worth), oldest first.
    pub fn drain(&mut self) -> Vec<Message> {
        self.rx.try_iter().take(self.max_batch).collect()
    }
}

/// A bounded, lock-free-for-the-sender queue of asynchronous messages
/// from datapath threads to the agent, holding at most `capacity`
/// messages; `wake` is the agent's notifier (see
/// [`crate::Agent::start_with_notifier`]).
pub fn async_queue(capacity: usize, wake: crate::AsyncNotifier) -> (AsyncSender, AsyncQueue) {
    let capacity = capacity.max(1);
    let (tx, rx) = std::sync::mpsc::sync_channel(capacity);
    let s = AsyncSender { tx, wake, dropped_packet_in: Arc::default(), lost_other: Arc::default() };
    (s, AsyncQueue { rx, max_batch: capacity })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_ofp::message::{PacketIn, PortStatus};

    #[test]
    fn async_queue_bounds_and_counts() {
        let (s, mut q) = async_queue(2, crate::AsyncNotifier::new());
        let pin = || Message::PacketIn(PacketIn::default());
        assert!(s.send(pin()));
        assert!(s.send(Message::PortStatus(PortStatus::default())));
        assert!(!s.send(pin()));
        assert!(!s.send(Message::PortStatus(PortStatus::default())));
        assert_eq!((s.dropped_packet_ins(), s.lost_other()), (1, 1));
        let got = q.drain();
        assert!(matches!(got.as_slice(), [Message::PacketIn(_), Message::PortStatus(_)]));
        assert!(q.drain().is_empty());
        let s2 = s.clone();
        std::thread::spawn(move || s2.send(pin())).join().unwrap();
        assert_eq!(q.drain().len(), 1);
    }
}
