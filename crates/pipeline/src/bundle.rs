//! Bundles (ONF extension 230 over OpenFlow 1.3, OpenFlow 1.4's
//! semantics; wire format in `sluice_ofp::bundle`).
//!
//! A controller connection opens bundles (by id, its own namespace: two
//! connections may use the same id), adds FLOW_MOD, GROUP_MOD and
//! METER_MOD messages to them, closes, commits or discards them. Bundles
//! are held by the master pipeline, keyed by connection, until committed,
//! discarded or the connection closes ([`Pipeline::conn_closed`]).
//!
//! ## Commit
//! Every commit is atomic and ordered, whatever its flags say (both flags
//! only allow the switch less freedom, so always honouring them is
//! correct): the bundle's messages are first applied in order to a
//! scratch replica of the master (same tables, groups, meters, clock and
//! sequence numbers, so the second run gives the same results); the first
//! that fails ends the commit: that message's error is sent (with the
//! inner message's xid and bytes), then `OFPBFC_MSG_FAILED` for the
//! commit, and the master is unchanged. Only when all succeed are they
//! applied to the master, within the one [`Pipeline::handle_from`] call
//! that carries the COMMIT, so they reach workers in one publication:
//! packets see the tables before or after the bundle, never in between.
//!
//! ## Checks and errors (`exp_type` of ONF experimenter errors)
//! - OPEN of an id the connection has: the old bundle is dropped,
//!   `OFPBFC_BAD_ID`; more than [`Limits::bundles`] open: `OFPBFC_OUT_OF_BUNDLES`.
//! - unknown flag bits: `OFPBFC_BAD_FLAGS`; flags differing from the
//!   OPEN's (ADD, CLOSE, COMMIT): the bundle is dropped, `OFPBFC_BAD_FLAGS`.
//! - CLOSE, COMMIT or DISCARD of an unknown id: `OFPBFC_BAD_ID`; ADD or
//!   CLOSE to a closed bundle: the bundle is dropped, `OFPBFC_BUNDLE_CLOSED`.
//! - ADD to an unknown id opens it with the ADD's flags.
//! - a control type that is a reply or unknown: `OFPBFC_BAD_TYPE`.
//! - inner messages: decoded when added (a decode failure is the error the
//!   message would get outside a bundle); types other than FLOW_MOD,
//!   GROUP_MOD and METER_MOD, and flow-mods naming a packet buffer, are
//!   `OFPBFC_MSG_UNSUP`; more than [`Limits::messages`] messages in one
//!   bundle, or more than [`Limits::bytes`] bytes in all of a connection's
//!   bundles: `OFPBFC_MSG_TOO_MANY` (the bundle stays as it was).
//!
//! Flows whose match names a filter program or a pcap-filter expression
//! are checked on the scratch replica against the master's programs
//! (shared).

use std::collections::BTreeMap;

use crate::exec::Tx;
use crate::Pipeline;
use sluice_core::guard::GuardSet;
use sluice_ofp::bundle::{
    ctrl_type as ct, err, flags as bf, BundleAdd, BundleCtrl, BundleMsg, BundleRefusal,
};
use sluice_ofp::consts::OFP_NO_BUFFER;
use sluice_ofp::filterprog::Refusal;
use sluice_ofp::message::{error_reply, Message, Outgoing};

/// How much one connection may hold in bundles ([`Config::bundle_limits`]).
///
/// [`Config::bundle_limits`]: crate::Config::bundle_limits
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most bundles open at once (default 64).
    pub bundles: usize,
    /// Most messages in one bundle (default 2^20).
    pub messages: usize,
    /// Most bytes of inner messages in all the open bundles of the
    /// connection (default 256 MiB), whatever their number.
    pub bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { bundles: 64, messages: 1 << 20, bytes: 256 << 20 }
    }
}

/// The open bundles of every connection.
#[derive(Debug, Default)]
pub struct Bundles {
    open: BTreeMap<(u64, u32), Bundle>,
}

#[derive(Debug, Default)]
struct Bundle {
    flags: u16,
    closed: bool,
    bytes: usize,
    msgs: Vec<Entry>,
}

#[derive(Debug)]
struct Entry {
    xid: u32,
    msg: Message,
    raw: Vec<u8>,
}

impl Bundles {
    /// How many bundles `conn` has open.
    pub fn count(&self, conn: u64) -> usize {
        self.open.range((conn, 0)..=(conn, u32::MAX)).count()
    }

    /// Bytes of inner messages in `conn`'s open bundles.
    pub fn bytes(&self, conn: u64) -> usize {
        self.open.range((conn, 0)..=(conn, u32::MAX)).map(|(_, b)| b.bytes).sum()
    }

    fn drop_conn(&mut self, conn: u64) {
        self.open.retain(|&(c, _), _| c != conn);
    }
}

fn fail(code: u16) -> BundleRefusal {
    BundleRefusal::Bundle(code)
}

impl Pipeline {
    /// `conn` closed: its bundles are discarded.
    pub fn conn_closed(&mut self, conn: u64) {
        self.bundles.drop_conn(conn);
    }

    /// The open bundles.
    pub fn bundles(&self) -> &Bundles {
        &self.bundles
    }

    /// Handle `e` if it is a bundle message; `None` otherwise.
    pub(crate) fn bundle_message(
        &mut self,
        conn: u64,
        xid: u32,
        msg: &Message,
        raw: &[u8],
    ) -> Option<Vec<Outgoing>> {
        let Message::Experimenter(e) = msg else { return None };
        let decoded = BundleMsg::decode(e)?;
        let mut out = Vec::new();
        let r = match decoded {
            Ok(BundleMsg::Ctrl(c)) => self.bundle_ctrl(conn, xid, &c, &mut out),
            Ok(BundleMsg::Add(a)) => self.bundle_add(conn, xid, &a),
            Err(r) => Err(r),
        };
        if let Err(r) = r {
            out.push(Outgoing { xid, msg: r.to_error(raw) });
        }
        Some(out)
    }

    fn bundle_ctrl(
        &mut self,
        conn: u64,
        xid: u32,
        c: &BundleCtrl,
        out: &mut Vec<Outgoing>,
    ) -> Result<(), BundleRefusal> {
        let key = (conn, c.bundle_id);
        let reply_type = match c.ctrl_type {
            ct::OPEN_REQUEST => {
                if c.flags & !bf::ALL != 0 {
                    return Err(fail(err::BAD_FLAGS));
                }
                if self.bundles.open.remove(&key).is_some() {
                    return Err(fail(err::BAD_ID));
                }
                if self.bundles.count(conn) >= self.cfg.bundle_limits.bundles {
                    return Err(fail(err::OUT_OF_BUNDLES));
                }
                self.bundles.open.insert(key, Bundle { flags: c.flags, ..Bundle::default() });
                ct::OPEN_REPLY
            }
            ct::CLOSE_REQUEST => {
                let b = self.bundles.open.get_mut(&key).ok_or(fail(err::BAD_ID))?;
                if b.closed {
                    self.bundles.open.remove(&key);
                    return Err(fail(err::BUNDLE_CLOSED));
                }
                if b.flags != c.flags {
                    self.bundles.open.remove(&key);
                    return Err(fail(err::BAD_FLAGS));
                }
                b.closed = true;
                ct::CLOSE_REPLY
            }
            ct::DISCARD_REQUEST => {
                self.bundles.open.remove(&key).ok_or(fail(err::BAD_ID))?;
                ct::DISCARD_REPLY
            }
            ct::COMMIT_REQUEST => {
                let b = self.bundles.open.remove(&key).ok_or(fail(err::BAD_ID))?;
                if b.flags != c.flags {
                    return Err(fail(err::BAD_FLAGS));
                }
                if let Err((i, r)) = self.commit(&b.msgs) {
                    let e = &b.msgs[i];
                    let msg = match r {
                        Refusal::Std(code) => error_reply(code, &e.raw),
                        exp => exp.to_error(&e.raw),
                    };
                    out.push(Outgoing { xid: e.xid, msg });
                    return Err(fail(err::MSG_FAILED));
                }
                ct::COMMIT_REPLY
            }
            _ => return Err(fail(err::BAD_TYPE)),
        };
        let reply = BundleCtrl {
            bundle_id: c.bundle_id,
            ctrl_type: reply_type,
            flags: c.flags,
            properties: Vec::new(),
        };
        out.push(Outgoing { xid, msg: reply.to_message() });
        Ok(())
    }

    fn bundle_add(&mut self, conn: u64, xid: u32, a: &BundleAdd) -> Result<(), BundleRefusal> {
        if a.flags & !bf::ALL != 0 {
            return Err(fail(err::BAD_FLAGS));
        }
        let (inner_xid, msg) = a.inner(xid)?;
        match &msg {
            Message::FlowMod(fm) if fm.buffer_id == OFP_NO_BUFFER => {}
            Message::GroupMod(_) | Message::MeterMod(_) => {}
            _ => return Err(fail(err::MSG_UNSUP)),
        }
        let key = (conn, a.bundle_id);
        if !self.bundles.open.contains_key(&key) {
            if self.bundles.count(conn) >= self.cfg.bundle_limits.bundles {
                return Err(fail(err::OUT_OF_BUNDLES));
            }
            self.bundles.open.insert(key, Bundle { flags: a.flags, ..Bundle::default() });
        }
        let Some(b) = self.bundles.open.get_mut(&key) else { return Err(fail(err::BAD_ID)) };
        if b.closed {
            self.bundles.open.remove(&key);
            return Err(fail(err::BUNDLE_CLOSED));
        }
        if b.flags != a.flags {
            self.bundles.open.remove(&key);
            return Err(fail(err::BAD_FLAGS));
        }
        if b.msgs.len() >= self.cfg.bundle_limits.messages {
            return Err(fail(err::MSG_TOO_MANY));
        }
        if self.bundles.bytes(conn) + a.message.len() > self.cfg.bundle_limits.bytes {
            return Err(fail(err::MSG_TOO_MANY));
        }
        let Some(b) = self.bundles.open.get_mut(&key) else { return Err(fail(err::BAD_ID)) };
        b.bytes += a.message.len();
        b.msgs.push(Entry { xid: inner_xid, msg, raw: a.message.clone() });
        Ok(())
    }

    /// Apply `msgs` all or nothing: on a scratch replica first, then, if
    /// every one succeeded, on the master. On failure, the index of the
    /// failing message and its refusal; the master is unchanged.
    fn commit(&mut self, msgs: &[Entry]) -> Result<(), (usize, Refusal)> {
        if msgs.is_empty() {
            return Ok(());
        }
        let mut scratch = self.replica();
        // Flows naming a filter program or a pcap-filter expression are
        // checked against the master's programs (shared, not copied: the
        // scratch run executes no program).
        scratch.filters = self.filters.clone();
        for (i, e) in msgs.iter().enumerate() {
            scratch.apply_bundled(&e.msg).map_err(|r| (i, r))?;
        }
        drop(scratch);
        for (i, e) in msgs.iter().enumerate() {
            // Cannot fail: the replica took the same steps from the same
            // state.
            if let Err(r) = self.apply_bundled(&e.msg) {
                debug_assert!(false, "bundle message {i} failed on the master: {r}");
                return Err((i, r));
            }
        }
        Ok(())
    }

    fn apply_bundled(&mut self, msg: &Message) -> Result<(), Refusal> {
        match msg {
            Message::FlowMod(fm) => self.flow_mod_full(fm, GuardSet::default()),
            Message::GroupMod(gm) => self.group_mod(gm).map_err(Refusal::from),
            Message::MeterMod(mm) => self.meter_mod(mm).map_err(Refusal::from),
            _ => Err(sluice_ofp::error::ErrorCode::BRC_BAD_TYPE.into()),
        }
    }

    /// [`Pipeline::handle`] for a message from controller connection
    /// `conn` (bundles are per connection).
    pub fn handle_from(
        &mut self,
        conn: u64,
        xid: u32,
        msg: &Message,
        raw: &[u8],
        tx: &mut dyn Tx,
    ) -> Vec<Outgoing> {
        if let Some(out) = self.bundle_message(conn, xid, msg, raw) {
            return out;
        }
        self.handle(xid, msg, raw, tx)
    }
}
