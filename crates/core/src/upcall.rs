//! Upcalls: what the datapath hands up to the control plane, as neutral
//! values.
//!
//! A worker queues upcalls while it forwards, and the control side queues
//! `Removed` when a rule leaves its table; the front end turns them into
//! its protocol's messages when the agent takes them (OpenFlow: a
//! `ToController` becomes a PACKET_IN, a `Removed` a FLOW_REMOVED,
//! `sluice_pipeline::exec::message_of`). P4 digests and filter-program map
//! dumps are the next kinds (ARCHITECTURE.md, target map).
//!
//! When a rule has timed out is decided here too ([`Timeouts::expired`]),
//! so every front end ages rules the same way (OpenFlow's idle and hard
//! timeouts; P4Runtime's idle timeout is the idle half).

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

/// Why a rule left its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Removal {
    /// Unused for its idle timeout.
    IdleTimeout,
    /// Installed for its hard timeout.
    HardTimeout,
    /// The control plane deleted it.
    Deleted,
    /// A group it used was deleted.
    GroupDeleted,
    /// A meter it used was deleted.
    MeterDeleted,
}

/// A rule's timeouts in nanoseconds; 0 is none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timeouts {
    pub idle_ns: u64,
    pub hard_ns: u64,
}

impl Timeouts {
    /// Whether a rule installed at `installed_ns` and last used at
    /// `last_used_ns` has expired at `now_ns`, and why. A rule is expired
    /// *at* its deadline, not after it. When both deadlines have passed the
    /// hard timeout is the reason (it is the one that cannot be put off).
    pub fn expired(&self, installed_ns: u64, last_used_ns: u64, now_ns: u64) -> Option<Removal> {
        let passed = |t: u64, from: u64| t != 0 && now_ns >= from.saturating_add(t);
        if passed(self.hard_ns, installed_ns) {
            Some(Removal::HardTimeout)
        } else if passed(self.idle_ns, last_used_ns) {
            Some(Removal::IdleTimeout)
        } else {
            None
        }
    }
}

/// A rule that left its table, with what it did while it was there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removed<R> {
    pub table: u8,
    pub reason: Removal,
    pub priority: u16,
    pub cookie: u64,
    pub timeouts: Timeouts,
    /// How long it was installed.
    pub duration_ns: u64,
    pub packets: u64,
    pub bytes: u64,
    /// The front end's own description of the rule (OpenFlow: its match as
    /// the controller gave it); the core never looks into it.
    pub rule: R,
}

/// One upcall. `R` is the front end's description of a rule
/// ([`crate::walk::Frontend::Rule`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Upcall<R = ()> {
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
    /// A rule left its table (and asked to be reported).
    Removed(Removed<R>),
    /// A report a rule's [`crate::op::Op::Report`] produced: one message
    /// body in the front end's encoding, with the table and cookie of the
    /// entry whose op ran.
    Report { table: u8, cookie: u64, body: Vec<u8> },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_expire_at_their_deadline_and_hard_wins() {
        const S: u64 = 1_000_000_000;
        let none = Timeouts::default();
        assert_eq!(none.expired(0, 0, u64::MAX), None, "0 means no timeout");
        let idle = Timeouts { idle_ns: 10 * S, hard_ns: 0 };
        assert_eq!(idle.expired(0, 5 * S, 15 * S - 1), None);
        assert_eq!(idle.expired(0, 5 * S, 15 * S), Some(Removal::IdleTimeout));
        let hard = Timeouts { idle_ns: 0, hard_ns: 10 * S };
        assert_eq!(hard.expired(3 * S, 12 * S, 13 * S - 1), None, "use does not matter");
        assert_eq!(hard.expired(3 * S, 12 * S, 13 * S), Some(Removal::HardTimeout));
        let both = Timeouts { idle_ns: 2 * S, hard_ns: 10 * S };
        assert_eq!(both.expired(0, 0, 10 * S), Some(Removal::HardTimeout));
        assert_eq!(both.expired(0, 0, 9 * S), Some(Removal::IdleTimeout));
        assert_eq!(idle.expired(0, u64::MAX - 1, u64::MAX - 1), None, "no overflow");
    }
}
