//! Reassembly of multipart messages split across several OpenFlow messages
//! with `OFPMPF_REQ_MORE` / `OFPMPF_REPLY_MORE` (OpenFlow 1.3.5 §7.3.5).
//!
//! A peer may send one logical request (or reply) as several messages with
//! the same xid, all but the last carrying the MORE flag. [`Reassembler`]
//! collects the parts per xid and hands back the whole message when the
//! last part arrives.
//!
//! Rules:
//! - A part without MORE and with no parts pending for its xid is complete
//!   by itself and is returned at once (any body type).
//! - Only list bodies can be split; their lists concatenate in arrival
//!   order (flow stats, table features, port stats, …). Experimenter bodies
//!   concatenate their data when experimenter and exp_type agree. A
//!   single-struct body (desc, aggregate, a flow stats request, …) carrying
//!   MORE is `OFPBRC_BAD_MULTIPART`.
//! - A part whose type (or experimenter id/type) differs from the parts
//!   pending under the same xid is `OFPBRC_BAD_MULTIPART`; the pending
//!   parts of that xid are dropped.
//! - State is bounded ([`Limits`]): the number of xids in progress, the
//!   number of parts per xid, and the encoded body bytes held over all
//!   xids. Going over any of them is `OFPBRC_MULTIPART_BUFFER_OVERFLOW` and
//!   drops the offending xid's parts.
//! - The completed message has the MORE flag cleared and keeps the other
//!   flag bits of its first part.

use crate::error::{ErrorCode, Result};

use super::{MultipartReply, MultipartRequest, OFPMPF_REPLY_MORE, OFPMPF_REQ_MORE};

/// What the reassembler needs from a multipart message.
pub trait Part: Sized {
    /// The `OFPMP_*` type.
    fn type_code(&self) -> u16;
    /// Whether the MORE flag is set.
    fn more(&self) -> bool;
    /// Clear the MORE flag.
    fn clear_more(&mut self);
    /// Whether the body is a list (and so may be split).
    fn is_list(&self) -> bool;
    /// Encoded body length, for accounting.
    fn body_len(&self) -> usize;
    /// Append the next part's body (same type) to this one.
    fn append(&mut self, next: Self) -> Result<()>;
}

impl Part for MultipartRequest {
    fn type_code(&self) -> u16 {
        self.body.type_code()
    }
    fn more(&self) -> bool {
        self.flags & OFPMPF_REQ_MORE != 0
    }
    fn clear_more(&mut self) {
        self.flags &= !OFPMPF_REQ_MORE;
    }
    fn is_list(&self) -> bool {
        self.body.is_list()
    }
    fn body_len(&self) -> usize {
        self.body.wire_len()
    }
    fn append(&mut self, next: Self) -> Result<()> {
        self.body.append(next.body)
    }
}

impl Part for MultipartReply {
    fn type_code(&self) -> u16 {
        self.body.type_code()
    }
    fn more(&self) -> bool {
        self.flags & OFPMPF_REPLY_MORE != 0
    }
    fn clear_more(&mut self) {
        self.flags &= !OFPMPF_REPLY_MORE;
    }
    fn is_list(&self) -> bool {
        self.body.is_list()
    }
    fn body_len(&self) -> usize {
        self.body.wire_len()
    }
    fn append(&mut self, next: Self) -> Result<()> {
        self.body.append(next.body)
    }
}

/// Bounds on what a [`Reassembler`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// xids with parts pending at once.
    pub max_xids: usize,
    /// Parts per xid, the last one included.
    pub max_parts: usize,
    /// Encoded body bytes held over all xids, the completing part included.
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_xids: 16, max_parts: 1024, max_bytes: 4 << 20 }
    }
}

struct Pending<T> {
    xid: u32,
    acc: T,
    parts: usize,
    bytes: usize,
}

/// Collects multipart parts per xid; see the module docs.
pub struct Reassembler<T: Part = MultipartRequest> {
    limits: Limits,
    pending: Vec<Pending<T>>,
    bytes: usize,
}

impl<T: Part> Default for Reassembler<T> {
    fn default() -> Self {
        Self::new(Limits::default())
    }
}

impl<T: Part> core::fmt::Debug for Reassembler<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Reassembler")
            .field("limits", &self.limits)
            .field("xids", &self.pending.iter().map(|p| p.xid).collect::<Vec<_>>())
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl<T: Part> Reassembler<T> {
    pub fn new(limits: Limits) -> Self {
        Reassembler { limits, pending: Vec::new(), bytes: 0 }
    }

    /// Feed one part received with `xid`. Returns the complete message when
    /// `part` is the last one (or the only one), `None` while more are
    /// expected.
    pub fn feed(&mut self, xid: u32, part: T) -> Result<Option<T>> {
        let more = part.more();
        let len = part.body_len();
        let Some(i) = self.pending.iter().position(|p| p.xid == xid) else {
            if !more {
                return Ok(Some(part));
            }
            if !part.is_list() {
                return Err(ErrorCode::BRC_BAD_MULTIPART);
            }
            if self.pending.len() >= self.limits.max_xids
                || self.limits.max_parts < 2
                || self.bytes.saturating_add(len) > self.limits.max_bytes
            {
                return Err(ErrorCode::BRC_MULTIPART_BUFFER_OVERFLOW);
            }
            self.bytes += len;
            self.pending.push(Pending { xid, acc: part, parts: 1, bytes: len });
            return Ok(None);
        };
        let p = &self.pending[i];
        let err = if p.acc.type_code() != part.type_code() {
            Some(ErrorCode::BRC_BAD_MULTIPART)
        } else if p.parts >= self.limits.max_parts
            || self.bytes.saturating_add(len) > self.limits.max_bytes
        {
            Some(ErrorCode::BRC_MULTIPART_BUFFER_OVERFLOW)
        } else {
            None
        };
        if let Some(e) = err {
            self.remove(i);
            return Err(e);
        }
        let p = &mut self.pending[i];
        if let Err(e) = p.acc.append(part) {
            self.remove(i);
            return Err(e);
        }
        p.parts += 1;
        p.bytes += len;
        self.bytes += len;
        if more {
            return Ok(None);
        }
        let mut done = self.remove(i);
        done.clear_more();
        Ok(Some(done))
    }

    fn remove(&mut self, i: usize) -> T {
        let p = self.pending.swap_remove(i);
        self.bytes -= p.bytes;
        p.acc
    }

    /// Drop the parts pending for `xid` (e.g. when the connection answered
    /// an error for it). Returns whether there were any.
    pub fn abandon(&mut self, xid: u32) -> bool {
        match self.pending.iter().position(|p| p.xid == xid) {
            Some(i) => {
                self.remove(i);
                true
            }
            None => false,
        }
    }

    /// Drop everything.
    pub fn clear(&mut self) {
        self.pending.clear();
        self.bytes = 0;
    }

    /// xids with parts pending.
    pub fn pending_xids(&self) -> impl Iterator<Item = u32> + '_ {
        self.pending.iter().map(|p| p.xid)
    }

    /// Encoded body bytes held.
    pub fn held_bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::super::stats::{PortStats, TableStats};
    use super::super::{MultipartReplyBody as R, MultipartRequestBody as Q, *};
    use super::*;
    use crate::multipart::table_features::TableFeatures;

    fn ts(id: u8) -> TableStats {
        TableStats { table_id: id, active_count: id as u32, lookup_count: 1, matched_count: 2 }
    }

    fn rep(more: bool, body: R) -> MultipartReply {
        MultipartReply { flags: if more { OFPMPF_REPLY_MORE } else { 0 }, body }
    }

    #[test]
    fn single_part_passes_through() {
        let mut r: Reassembler<MultipartReply> = Reassembler::default();
        let m = rep(false, R::Table(vec![ts(1)]));
        assert_eq!(r.feed(1, m.clone()), Ok(Some(m)));
        // Even a single-struct body.
        let d = rep(false, R::Desc(Default::default()));
        assert_eq!(r.feed(1, d.clone()), Ok(Some(d)));
        assert_eq!(r.pending_xids().count(), 0);
    }

    #[test]
    fn list_parts_concatenate() {
        let mut r: Reassembler<MultipartReply> = Reassembler::default();
        assert_eq!(r.feed(7, rep(true, R::Table(vec![ts(0), ts(1)]))), Ok(None));
        // Another xid interleaved.
        assert_eq!(r.feed(8, rep(true, R::PortDesc(vec![Default::default()]))), Ok(None));
        assert_eq!(r.feed(7, rep(true, R::Table(vec![]))), Ok(None));
        assert_eq!(r.held_bytes(), 48 + 64);
        let done = r.feed(7, rep(false, R::Table(vec![ts(2)]))).unwrap().unwrap();
        assert_eq!(done, rep(false, R::Table(vec![ts(0), ts(1), ts(2)])));
        assert_eq!(r.pending_xids().collect::<Vec<_>>(), vec![8]);
        assert_eq!(r.held_bytes(), 64);
        let done = r.feed(8, rep(false, R::PortDesc(vec![]))).unwrap().unwrap();
        assert_eq!(done.body, R::PortDesc(vec![Default::default()]));
        assert_eq!(r.held_bytes(), 0);
    }

    #[test]
    fn request_table_features_concatenate_and_keep_other_flags() {
        let mut r: Reassembler = Reassembler::default();
        let t = |id| TableFeatures { table_id: id, ..Default::default() };
        let part = |more: bool, id| MultipartRequest {
            flags: 0x8000 | if more { OFPMPF_REQ_MORE } else { 0 },
            body: Q::TableFeatures(vec![t(id)]),
        };
        assert_eq!(r.feed(3, part(true, 0)), Ok(None));
        assert_eq!(r.feed(3, part(true, 1)), Ok(None));
        let done = r.feed(3, part(false, 2)).unwrap().unwrap();
        assert_eq!(done.flags, 0x8000);
        assert_eq!(done.body, Q::TableFeatures(vec![t(0), t(1), t(2)]));
    }

    #[test]
    fn mixed_types_under_one_xid_are_bad_multipart() {
        let mut r: Reassembler<MultipartReply> = Reassembler::default();
        assert_eq!(r.feed(1, rep(true, R::Table(vec![ts(0)]))), Ok(None));
        assert_eq!(
            r.feed(1, rep(false, R::PortStats(vec![PortStats::default()]))),
            Err(ErrorCode::BRC_BAD_MULTIPART)
        );
        // The xid's state is gone: a fresh single part passes through.
        assert_eq!(r.pending_xids().count(), 0);
        assert_eq!(r.held_bytes(), 0);
    }

    #[test]
    fn experimenter_parts_must_agree() {
        let mut r: Reassembler<MultipartReply> = Reassembler::default();
        let e = |exp_type, data: &[u8]| {
            R::Experimenter(MultipartExperimenter {
                experimenter: 0x534c_4943,
                exp_type,
                data: data.to_vec(),
            })
        };
        assert_eq!(r.feed(1, rep(true, e(1, &[1, 2]))), Ok(None));
        assert_eq!(r.feed(1, rep(false, e(1, &[3]))).unwrap().unwrap().body, e(1, &[1, 2, 3]));
        assert_eq!(r.feed(1, rep(true, e(1, &[1, 2]))), Ok(None));
        assert_eq!(r.feed(1, rep(false, e(2, &[3]))), Err(ErrorCode::BRC_BAD_MULTIPART));
    }

    #[test]
    fn single_struct_bodies_cannot_be_split() {
        let mut r: Reassembler<MultipartReply> = Reassembler::default();
        assert_eq!(
            r.feed(1, rep(true, R::Desc(Default::default()))),
            Err(ErrorCode::BRC_BAD_MULTIPART)
        );
        assert_eq!(
            r.feed(1, rep(true, R::Aggregate(Default::default()))),
            Err(ErrorCode::BRC_BAD_MULTIPART)
        );
        let mut q: Reassembler = Reassembler::default();
        let m = MultipartRequest { flags: OFPMPF_REQ_MORE, body: Q::Flow(Default::default()) };
        assert_eq!(q.feed(1, m), Err(ErrorCode::BRC_BAD_MULTIPART));
        let m = MultipartRequest { flags: OFPMPF_REQ_MORE, body: Q::Desc };
        assert_eq!(q.feed(1, m), Err(ErrorCode::BRC_BAD_MULTIPART));
        assert_eq!(q.pending_xids().count(), 0);
    }

    #[test]
    fn limits_give_buffer_overflow() {
        let lim = Limits { max_xids: 2, max_parts: 2, max_bytes: 24 * 5 };
        let mut r: Reassembler<MultipartReply> = Reassembler::new(lim);
        // Too many xids.
        assert_eq!(r.feed(1, rep(true, R::Table(vec![ts(0)]))), Ok(None));
        assert_eq!(r.feed(2, rep(true, R::Table(vec![ts(0)]))), Ok(None));
        assert_eq!(
            r.feed(3, rep(true, R::Table(vec![ts(0)]))),
            Err(ErrorCode::BRC_MULTIPART_BUFFER_OVERFLOW)
        );
        // Too many parts for xid 1 (2 allowed, the 3rd overflows).
        assert_eq!(r.feed(1, rep(true, R::Table(vec![ts(1)]))), Ok(None));
        assert_eq!(
            r.feed(1, rep(true, R::Table(vec![ts(2)]))),
            Err(ErrorCode::BRC_MULTIPART_BUFFER_OVERFLOW)
        );
        assert_eq!(r.pending_xids().collect::<Vec<_>>(), vec![2]);
        // Too many bytes over all xids: xid 2 holds 24, a 4-entry part (96) fits, then a fifth entry does not.
        assert_eq!(r.feed(2, rep(true, R::Table(vec![ts(1), ts(2), ts(3), ts(4)]))), Ok(None));
        assert_eq!(r.held_bytes(), 120);
        assert_eq!(
            r.feed(2, rep(false, R::Table(vec![ts(5)]))),
            Err(ErrorCode::BRC_MULTIPART_BUFFER_OVERFLOW)
        );
        assert_eq!(r.held_bytes(), 0);
        // A first part larger than the byte budget.
        let big = (0..6).map(ts).collect();
        assert_eq!(
            r.feed(9, rep(true, R::Table(big))),
            Err(ErrorCode::BRC_MULTIPART_BUFFER_OVERFLOW)
        );
        assert_eq!(r.pending_xids().count(), 0);
    }

    #[test]
    fn abandon_and_clear() {
        let mut r: Reassembler<MultipartReply> = Reassembler::default();
        assert_eq!(r.feed(1, rep(true, R::Table(vec![ts(0)]))), Ok(None));
        assert_eq!(r.feed(2, rep(true, R::Table(vec![ts(0)]))), Ok(None));
        assert!(r.abandon(1));
        assert!(!r.abandon(1));
        assert_eq!(r.held_bytes(), 24);
        r.clear();
        assert_eq!(r.held_bytes(), 0);
        assert_eq!(r.pending_xids().count(), 0);
    }
}
