//! Multipart requests and replies (OpenFlow 1.3.5 §7.3.5), table features,
//! and reassembly of messages split with `OFPMPF_REQ_MORE`/`REPLY_MORE`.
//!
//! `message` calls [`MultipartRequest::parse`] / [`MultipartReply::parse`]
//! with the bytes after the 8-byte OpenFlow header, and `emit` appends the
//! same bytes. Those bytes are:
//!
//! ```text
//!  0 type u16 (OFPMP_*)   2 flags u16 (OFPMPF_*)   4 pad[4]   8 body…
//! ```
//!
//! Every multipart type of OpenFlow 1.3.5 has a typed body, in
//! [`MultipartRequestBody`] and [`MultipartReplyBody`]:
//!
//! | type | request body | reply body |
//! |---|---|---|
//! | DESC (0) | empty | [`Desc`] |
//! | FLOW (1) | [`FlowStatsRequest`] | list of [`FlowStats`] |
//! | AGGREGATE (2) | [`FlowStatsRequest`] | [`AggregateStats`] |
//! | TABLE (3) | empty | list of [`TableStats`] |
//! | PORT_STATS (4) | port_no | list of [`PortStats`] |
//! | QUEUE (5) | port_no, queue_id | list of [`QueueStats`] |
//! | GROUP (6) | group_id | list of [`GroupStats`] |
//! | GROUP_DESC (7) | empty | list of [`GroupDesc`] |
//! | GROUP_FEATURES (8) | empty | [`GroupFeatures`] |
//! | METER (9) | meter_id | list of [`MeterStats`] |
//! | METER_CONFIG (10) | meter_id | list of [`MeterConfig`] |
//! | METER_FEATURES (11) | empty | [`MeterFeatures`] |
//! | TABLE_FEATURES (12) | list of [`TableFeatures`] | list of [`TableFeatures`] |
//! | PORT_DESC (13) | empty | list of [`Port`] |
//! | EXPERIMENTER (0xffff) | [`MultipartExperimenter`] | [`MultipartExperimenter`] |
//!
//! Errors: an unknown multipart type is `OFPBRC_BAD_MULTIPART`. Every length
//! inconsistency of the multipart framing or of a body's entries is
//! `OFPBRC_BAD_LEN` (header shorter than 8 bytes, empty bodies that are not
//! empty, fixed bodies of the wrong size, lists that are not whole entries,
//! entry length fields below the fixed part, not a multiple of 8 or past the
//! end). Nested objects keep their own codes; see [`stats`] (module docs),
//! [`table_features`], [`crate::group`], [`crate::meter`]. Experimenter
//! bodies are preserved raw; giving them meaning is the
//! [`crate::experimenter`] registry's job.
//!
//! Splitting and reassembly: [`MultipartReply::split`] (and
//! [`MultipartRequest::split`]) cut a list body into messages that fit a
//! maximum OpenFlow message length, flagging all but the last with MORE;
//! [`Reassembler`] does the reverse on the receiving side.
//!
//! Encoding limits: entry length fields are 16 bits; an entry (or a whole
//! body passed to `emit`) larger than 64 KiB cannot be represented and is
//! the caller's responsibility to avoid (`split` keeps messages small, but
//! cannot shrink a single oversized entry).

use crate::error::{ErrorCode, Result};
use crate::port::Port;
use crate::wire::{Put, Reader};

mod reassembly;
pub mod stats;
pub mod table_features;

pub use reassembly::{Limits, Part, Reassembler};
pub use stats::{
    AggregateStats, BucketCounter, Desc, FlowStats, FlowStatsRequest, GroupDesc, GroupFeatures,
    GroupStats, MeterBandStats, MeterConfig, MeterFeatures, MeterStats, PortStats, QueueStats,
    TableStats,
};
pub use table_features::{
    ActionId, FeatureId, InstructionId, OxmId, TableFeatureProp, TableFeatures,
};

use stats::{emit_entries, entries_len, parse_entries};

/// `enum ofp_multipart_type` numbers (`OFPMP_*`).
pub mod ty {
    pub const DESC: u16 = 0;
    pub const FLOW: u16 = 1;
    pub const AGGREGATE: u16 = 2;
    pub const TABLE: u16 = 3;
    pub const PORT_STATS: u16 = 4;
    pub const QUEUE: u16 = 5;
    pub const GROUP: u16 = 6;
    pub const GROUP_DESC: u16 = 7;
    pub const GROUP_FEATURES: u16 = 8;
    pub const METER: u16 = 9;
    pub const METER_CONFIG: u16 = 10;
    pub const METER_FEATURES: u16 = 11;
    pub const TABLE_FEATURES: u16 = 12;
    pub const PORT_DESC: u16 = 13;
    pub const EXPERIMENTER: u16 = 0xffff;
}

/// `OFPMPF_REQ_MORE`: more request parts follow.
pub const OFPMPF_REQ_MORE: u16 = 1 << 0;
/// `OFPMPF_REPLY_MORE`: more reply parts follow.
pub const OFPMPF_REPLY_MORE: u16 = 1 << 0;

/// Length of the multipart header after `ofp_header` (type, flags, pad).
pub const MULTIPART_HEADER_LEN: usize = 8;
/// Largest OpenFlow message (the `length` field is 16 bits).
pub const DEFAULT_MAX_LEN: usize = 65535;
/// `ofp_header` plus the multipart header.
const FRAMING_LEN: usize = crate::consts::OFP_HEADER_LEN + MULTIPART_HEADER_LEN;

const BAD_LEN: ErrorCode = ErrorCode::BRC_BAD_LEN;

/// `struct ofp_experimenter_multipart_header` and the data after it,
/// verbatim.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MultipartExperimenter {
    pub experimenter: u32,
    pub exp_type: u32,
    pub data: Vec<u8>,
}

impl MultipartExperimenter {
    pub const HEADER_LEN: usize = 8;

    pub fn parse(buf: &[u8]) -> Result<MultipartExperimenter> {
        let mut r = Reader::new(buf, BAD_LEN);
        Ok(MultipartExperimenter {
            experimenter: r.u32()?,
            exp_type: r.u32()?,
            data: r.rest().to_vec(),
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.experimenter);
        out.put_u32(self.exp_type);
        out.put_slice(&self.data);
    }

    pub fn wire_len(&self) -> usize {
        Self::HEADER_LEN + self.data.len()
    }

    fn append(&mut self, next: MultipartExperimenter) -> Result<()> {
        if self.experimenter != next.experimenter || self.exp_type != next.exp_type {
            return Err(ErrorCode::BRC_BAD_MULTIPART);
        }
        self.data.extend_from_slice(&next.data);
        Ok(())
    }

    fn split(self, budget: usize) -> Vec<MultipartExperimenter> {
        let room = budget.saturating_sub(Self::HEADER_LEN).max(1);
        if self.data.len() <= room {
            return vec![self];
        }
        self.data
            .chunks(room)
            .map(|c| MultipartExperimenter {
                experimenter: self.experimenter,
                exp_type: self.exp_type,
                data: c.to_vec(),
            })
            .collect()
    }
}

/// Cut `items` into runs whose encoded length fits `budget` (an item larger
/// than `budget` gets a run of its own). Always returns at least one run.
fn chunk<E>(items: Vec<E>, budget: usize, len: impl Fn(&E) -> usize) -> Vec<Vec<E>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut used = 0usize;
    for it in items {
        let l = len(&it);
        if !cur.is_empty() && used.saturating_add(l) > budget {
            out.push(core::mem::take(&mut cur));
            used = 0;
        }
        used = used.saturating_add(l);
        cur.push(it);
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out
}

fn empty(buf: &[u8]) -> Result<()> {
    if buf.is_empty() {
        Ok(())
    } else {
        Err(BAD_LEN)
    }
}

/// A request body of exactly 8 bytes: a u32 and either another u32
/// (`Some`) or 4 pad bytes.
fn eight(buf: &[u8]) -> Result<(u32, u32)> {
    if buf.len() != 8 {
        return Err(BAD_LEN);
    }
    let mut r = Reader::new(buf, BAD_LEN);
    Ok((r.u32()?, r.u32()?))
}

/// The body of a multipart request, one variant per `OFPMP_*` type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultipartRequestBody {
    Desc,
    Flow(FlowStatsRequest),
    Aggregate(FlowStatsRequest),
    Table,
    /// `OFPP_ANY` for all ports.
    PortStats {
        port_no: u32,
    },
    /// `OFPP_ANY` / `OFPQ_ALL` for all.
    Queue {
        port_no: u32,
        queue_id: u32,
    },
    /// `OFPG_ALL` for all groups.
    Group {
        group_id: u32,
    },
    GroupDesc,
    GroupFeatures,
    /// `OFPM_ALL` for all meters.
    Meter {
        meter_id: u32,
    },
    MeterConfig {
        meter_id: u32,
    },
    MeterFeatures,
    /// Empty: query the tables' features; non-empty: set them.
    TableFeatures(Vec<TableFeatures>),
    PortDesc,
    Experimenter(MultipartExperimenter),
}

impl MultipartRequestBody {
    /// The `OFPMP_*` number.
    pub fn type_code(&self) -> u16 {
        use MultipartRequestBody as B;
        match self {
            B::Desc => ty::DESC,
            B::Flow(_) => ty::FLOW,
            B::Aggregate(_) => ty::AGGREGATE,
            B::Table => ty::TABLE,
            B::PortStats { .. } => ty::PORT_STATS,
            B::Queue { .. } => ty::QUEUE,
            B::Group { .. } => ty::GROUP,
            B::GroupDesc => ty::GROUP_DESC,
            B::GroupFeatures => ty::GROUP_FEATURES,
            B::Meter { .. } => ty::METER,
            B::MeterConfig { .. } => ty::METER_CONFIG,
            B::MeterFeatures => ty::METER_FEATURES,
            B::TableFeatures(_) => ty::TABLE_FEATURES,
            B::PortDesc => ty::PORT_DESC,
            B::Experimenter(_) => ty::EXPERIMENTER,
        }
    }

    /// Whether the body is a list that may be split across messages.
    pub fn is_list(&self) -> bool {
        matches!(
            self,
            MultipartRequestBody::TableFeatures(_) | MultipartRequestBody::Experimenter(_)
        )
    }

    /// Parse the body of a request of type `ty` (`buf` is everything after
    /// the multipart header).
    pub fn parse(ty: u16, buf: &[u8]) -> Result<Self> {
        use MultipartRequestBody as B;
        Ok(match ty {
            ty::DESC => empty(buf).map(|_| B::Desc)?,
            ty::FLOW => B::Flow(FlowStatsRequest::parse(buf)?),
            ty::AGGREGATE => B::Aggregate(FlowStatsRequest::parse(buf)?),
            ty::TABLE => empty(buf).map(|_| B::Table)?,
            ty::PORT_STATS => B::PortStats { port_no: eight(buf)?.0 },
            ty::QUEUE => {
                let (port_no, queue_id) = eight(buf)?;
                B::Queue { port_no, queue_id }
            }
            ty::GROUP => B::Group { group_id: eight(buf)?.0 },
            ty::GROUP_DESC => empty(buf).map(|_| B::GroupDesc)?,
            ty::GROUP_FEATURES => empty(buf).map(|_| B::GroupFeatures)?,
            ty::METER => B::Meter { meter_id: eight(buf)?.0 },
            ty::METER_CONFIG => B::MeterConfig { meter_id: eight(buf)?.0 },
            ty::METER_FEATURES => empty(buf).map(|_| B::MeterFeatures)?,
            ty::TABLE_FEATURES => B::TableFeatures(parse_entries(buf)?),
            ty::PORT_DESC => empty(buf).map(|_| B::PortDesc)?,
            ty::EXPERIMENTER => B::Experimenter(MultipartExperimenter::parse(buf)?),
            _ => return Err(ErrorCode::BRC_BAD_MULTIPART),
        })
    }

    /// Append the body (without the multipart header).
    pub fn emit(&self, out: &mut Vec<u8>) {
        use MultipartRequestBody as B;
        match self {
            B::Desc
            | B::Table
            | B::GroupDesc
            | B::GroupFeatures
            | B::MeterFeatures
            | B::PortDesc => {}
            B::Flow(f) | B::Aggregate(f) => f.emit(out),
            B::PortStats { port_no: a }
            | B::Group { group_id: a }
            | B::Meter { meter_id: a }
            | B::MeterConfig { meter_id: a } => {
                out.put_u32(*a);
                out.put_zeros(4);
            }
            B::Queue { port_no, queue_id } => {
                out.put_u32(*port_no);
                out.put_u32(*queue_id);
            }
            B::TableFeatures(v) => emit_entries(v, out),
            B::Experimenter(e) => e.emit(out),
        }
    }

    /// Encoded body length (without the multipart header).
    pub fn wire_len(&self) -> usize {
        use MultipartRequestBody as B;
        match self {
            B::Desc
            | B::Table
            | B::GroupDesc
            | B::GroupFeatures
            | B::MeterFeatures
            | B::PortDesc => 0,
            B::Flow(f) | B::Aggregate(f) => f.wire_len(),
            B::PortStats { .. }
            | B::Queue { .. }
            | B::Group { .. }
            | B::Meter { .. }
            | B::MeterConfig { .. } => 8,
            B::TableFeatures(v) => entries_len(v),
            B::Experimenter(e) => e.wire_len(),
        }
    }

    fn append(&mut self, next: Self) -> Result<()> {
        use MultipartRequestBody as B;
        match (self, next) {
            (B::TableFeatures(a), B::TableFeatures(b)) => a.extend(b),
            (B::Experimenter(a), B::Experimenter(b)) => a.append(b)?,
            _ => return Err(ErrorCode::BRC_BAD_MULTIPART),
        }
        Ok(())
    }

    fn split_body(self, budget: usize) -> Vec<Self> {
        use MultipartRequestBody as B;
        match self {
            B::TableFeatures(v) => chunk(v, budget, TableFeatures::wire_len)
                .into_iter()
                .map(B::TableFeatures)
                .collect(),
            B::Experimenter(e) => e.split(budget).into_iter().map(B::Experimenter).collect(),
            other => vec![other],
        }
    }
}

/// The body of a multipart reply, one variant per `OFPMP_*` type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultipartReplyBody {
    Desc(Desc),
    Flow(Vec<FlowStats>),
    Aggregate(AggregateStats),
    Table(Vec<TableStats>),
    PortStats(Vec<PortStats>),
    Queue(Vec<QueueStats>),
    Group(Vec<GroupStats>),
    GroupDesc(Vec<GroupDesc>),
    GroupFeatures(GroupFeatures),
    Meter(Vec<MeterStats>),
    MeterConfig(Vec<MeterConfig>),
    MeterFeatures(MeterFeatures),
    TableFeatures(Vec<TableFeatures>),
    PortDesc(Vec<Port>),
    Experimenter(MultipartExperimenter),
}

/// Apply `$e` to the list inside any list variant of `MultipartReplyBody`.
macro_rules! reply_list_map {
    ($self:expr, $v:ident => $e:expr, $other:ident => $o:expr) => {
        match $self {
            MultipartReplyBody::Flow($v) => $e,
            MultipartReplyBody::Table($v) => $e,
            MultipartReplyBody::PortStats($v) => $e,
            MultipartReplyBody::Queue($v) => $e,
            MultipartReplyBody::Group($v) => $e,
            MultipartReplyBody::GroupDesc($v) => $e,
            MultipartReplyBody::Meter($v) => $e,
            MultipartReplyBody::MeterConfig($v) => $e,
            MultipartReplyBody::TableFeatures($v) => $e,
            MultipartReplyBody::PortDesc($v) => $e,
            $other => $o,
        }
    };
}

impl MultipartReplyBody {
    /// The `OFPMP_*` number.
    pub fn type_code(&self) -> u16 {
        use MultipartReplyBody as B;
        match self {
            B::Desc(_) => ty::DESC,
            B::Flow(_) => ty::FLOW,
            B::Aggregate(_) => ty::AGGREGATE,
            B::Table(_) => ty::TABLE,
            B::PortStats(_) => ty::PORT_STATS,
            B::Queue(_) => ty::QUEUE,
            B::Group(_) => ty::GROUP,
            B::GroupDesc(_) => ty::GROUP_DESC,
            B::GroupFeatures(_) => ty::GROUP_FEATURES,
            B::Meter(_) => ty::METER,
            B::MeterConfig(_) => ty::METER_CONFIG,
            B::MeterFeatures(_) => ty::METER_FEATURES,
            B::TableFeatures(_) => ty::TABLE_FEATURES,
            B::PortDesc(_) => ty::PORT_DESC,
            B::Experimenter(_) => ty::EXPERIMENTER,
        }
    }

    /// Whether the body is a list that may be split across messages.
    pub fn is_list(&self) -> bool {
        reply_list_map!(self, _v => true, other => matches!(other, MultipartReplyBody::Experimenter(_)))
    }

    /// Parse the body of a reply of type `ty` (`buf` is everything after
    /// the multipart header).
    pub fn parse(ty: u16, buf: &[u8]) -> Result<Self> {
        use MultipartReplyBody as B;
        Ok(match ty {
            ty::DESC => B::Desc(Desc::parse(buf)?),
            ty::FLOW => B::Flow(parse_entries(buf)?),
            ty::AGGREGATE => B::Aggregate(AggregateStats::parse(buf)?),
            ty::TABLE => B::Table(parse_entries(buf)?),
            ty::PORT_STATS => B::PortStats(parse_entries(buf)?),
            ty::QUEUE => B::Queue(parse_entries(buf)?),
            ty::GROUP => B::Group(parse_entries(buf)?),
            ty::GROUP_DESC => B::GroupDesc(parse_entries(buf)?),
            ty::GROUP_FEATURES => B::GroupFeatures(GroupFeatures::parse(buf)?),
            ty::METER => B::Meter(parse_entries(buf)?),
            ty::METER_CONFIG => B::MeterConfig(parse_entries(buf)?),
            ty::METER_FEATURES => B::MeterFeatures(MeterFeatures::parse(buf)?),
            ty::TABLE_FEATURES => B::TableFeatures(parse_entries(buf)?),
            ty::PORT_DESC => B::PortDesc(parse_entries(buf)?),
            ty::EXPERIMENTER => B::Experimenter(MultipartExperimenter::parse(buf)?),
            _ => return Err(ErrorCode::BRC_BAD_MULTIPART),
        })
    }

    /// Append the body (without the multipart header).
    pub fn emit(&self, out: &mut Vec<u8>) {
        use MultipartReplyBody as B;
        reply_list_map!(self, v => emit_entries(v, out), other => match other {
            B::Desc(d) => d.emit(out),
            B::Aggregate(a) => a.emit(out),
            B::GroupFeatures(g) => g.emit(out),
            B::MeterFeatures(m) => m.emit(out),
            B::Experimenter(e) => e.emit(out),
            _ => {}
        })
    }

    /// Encoded body length (without the multipart header).
    pub fn wire_len(&self) -> usize {
        use MultipartReplyBody as B;
        reply_list_map!(self, v => entries_len(v), other => match other {
            B::Desc(_) => Desc::LEN,
            B::Aggregate(_) => AggregateStats::LEN,
            B::GroupFeatures(_) => GroupFeatures::LEN,
            B::MeterFeatures(_) => MeterFeatures::LEN,
            B::Experimenter(e) => e.wire_len(),
            _ => 0,
        })
    }

    fn append(&mut self, next: Self) -> Result<()> {
        use MultipartReplyBody as B;
        match (self, next) {
            (B::Flow(a), B::Flow(b)) => a.extend(b),
            (B::Table(a), B::Table(b)) => a.extend(b),
            (B::PortStats(a), B::PortStats(b)) => a.extend(b),
            (B::Queue(a), B::Queue(b)) => a.extend(b),
            (B::Group(a), B::Group(b)) => a.extend(b),
            (B::GroupDesc(a), B::GroupDesc(b)) => a.extend(b),
            (B::Meter(a), B::Meter(b)) => a.extend(b),
            (B::MeterConfig(a), B::MeterConfig(b)) => a.extend(b),
            (B::TableFeatures(a), B::TableFeatures(b)) => a.extend(b),
            (B::PortDesc(a), B::PortDesc(b)) => a.extend(b),
            (B::Experimenter(a), B::Experimenter(b)) => a.append(b)?,
            _ => return Err(ErrorCode::BRC_BAD_MULTIPART),
        }
        Ok(())
    }

    fn split_body(self, budget: usize) -> Vec<Self> {
        use stats::Entry;
        use MultipartReplyBody as B;
        fn go<E: Entry>(
            v: Vec<E>,
            budget: usize,
            wrap: fn(Vec<E>) -> MultipartReplyBody,
        ) -> Vec<MultipartReplyBody> {
            chunk(v, budget, E::entry_len).into_iter().map(wrap).collect()
        }
        match self {
            B::Flow(v) => go(v, budget, B::Flow),
            B::Table(v) => go(v, budget, B::Table),
            B::PortStats(v) => go(v, budget, B::PortStats),
            B::Queue(v) => go(v, budget, B::Queue),
            B::Group(v) => go(v, budget, B::Group),
            B::GroupDesc(v) => go(v, budget, B::GroupDesc),
            B::Meter(v) => go(v, budget, B::Meter),
            B::MeterConfig(v) => go(v, budget, B::MeterConfig),
            B::TableFeatures(v) => go(v, budget, B::TableFeatures),
            B::PortDesc(v) => go(v, budget, B::PortDesc),
            B::Experimenter(e) => e.split(budget).into_iter().map(B::Experimenter).collect(),
            other => vec![other],
        }
    }
}

/// Read the multipart header: (type, flags, body).
fn parse_header(body: &[u8]) -> Result<(u16, u16, &[u8])> {
    let mut r = Reader::new(body, BAD_LEN);
    let ty = r.u16()?;
    let flags = r.u16()?;
    r.skip(4)?;
    Ok((ty, flags, r.rest()))
}

fn emit_header(out: &mut Vec<u8>, ty: u16, flags: u16) {
    out.put_u16(ty);
    out.put_u16(flags);
    out.put_zeros(4);
}

/// Wrap split bodies into messages: `more` is set on every part but the
/// last, the other flags are kept on all of them.
fn flag_all_but_last<B, M>(
    bodies: Vec<B>,
    flags: u16,
    more: u16,
    make: impl Fn(u16, B) -> M,
) -> Vec<M> {
    let n = bodies.len();
    bodies
        .into_iter()
        .enumerate()
        .map(|(i, body)| make(if i + 1 < n { flags | more } else { flags }, body))
        .collect()
}

/// `OFPT_MULTIPART_REQUEST` (after the OpenFlow header).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultipartRequest {
    /// `OFPMPF_REQ_MORE` etc.
    pub flags: u16,
    pub body: MultipartRequestBody,
}

/// `OFPT_MULTIPART_REPLY` (after the OpenFlow header).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultipartReply {
    /// `OFPMPF_REPLY_MORE` etc.
    pub flags: u16,
    pub body: MultipartReplyBody,
}

impl MultipartRequest {
    /// Parse everything after the OpenFlow header.
    pub fn parse(body: &[u8]) -> Result<Self> {
        let (ty, flags, b) = parse_header(body)?;
        Ok(MultipartRequest { flags, body: MultipartRequestBody::parse(ty, b)? })
    }

    /// Append everything after the OpenFlow header.
    pub fn emit(&self, out: &mut Vec<u8>) {
        emit_header(out, self.body.type_code(), self.flags);
        self.body.emit(out);
    }

    /// Encoded length after the OpenFlow header.
    pub fn wire_len(&self) -> usize {
        MULTIPART_HEADER_LEN + self.body.wire_len()
    }

    /// Split a list body into requests whose whole OpenFlow message
    /// (headers included) is at most `max_len` bytes, setting
    /// `OFPMPF_REQ_MORE` on all but the last. Non-list bodies, and lists
    /// that fit, come back as one message. A single entry larger than the
    /// budget gets a message of its own.
    pub fn split(self, max_len: usize) -> Vec<MultipartRequest> {
        let bodies = self.body.split_body(max_len.saturating_sub(FRAMING_LEN));
        flag_all_but_last(bodies, self.flags, OFPMPF_REQ_MORE, |flags, body| MultipartRequest {
            flags,
            body,
        })
    }
}

impl MultipartReply {
    /// Parse everything after the OpenFlow header.
    pub fn parse(body: &[u8]) -> Result<Self> {
        let (ty, flags, b) = parse_header(body)?;
        Ok(MultipartReply { flags, body: MultipartReplyBody::parse(ty, b)? })
    }

    /// Append everything after the OpenFlow header.
    pub fn emit(&self, out: &mut Vec<u8>) {
        emit_header(out, self.body.type_code(), self.flags);
        self.body.emit(out);
    }

    /// Encoded length after the OpenFlow header.
    pub fn wire_len(&self) -> usize {
        MULTIPART_HEADER_LEN + self.body.wire_len()
    }

    /// Split a list body into replies whose whole OpenFlow message
    /// (headers included) is at most `max_len` bytes (use
    /// [`DEFAULT_MAX_LEN`]), setting `OFPMPF_REPLY_MORE` on all but the
    /// last. Non-list bodies, and lists that fit, come back as one message.
    /// A single entry larger than the budget gets a message of its own.
    pub fn split(self, max_len: usize) -> Vec<MultipartReply> {
        let bodies = self.body.split_body(max_len.saturating_sub(FRAMING_LEN));
        flag_all_but_last(bodies, self.flags, OFPMPF_REPLY_MORE, |flags, body| MultipartReply {
            flags,
            body,
        })
    }
}

#[cfg(test)]
pub(crate) mod arb {
    //! Generators of every request and reply body.
    use super::*;
    use crate::group::{arb_bucket, arb_group_type};
    use crate::meter::arb_meter_band;
    use crate::oxm::Match;
    use crate::port::arb_port;
    use proptest::collection::vec;
    use proptest::prelude::*;

    pub fn arb_match() -> impl Strategy<Value = Match> {
        crate::oxm::arb_match()
    }

    pub fn arb_instructions() -> impl Strategy<Value = Vec<crate::instruction::Instruction>> {
        vec(crate::instruction::arb_instruction(), 0..3)
    }

    pub fn flow_stats_request() -> impl Strategy<Value = FlowStatsRequest> {
        (any::<u8>(), any::<u32>(), any::<u32>(), any::<u64>(), any::<u64>(), arb_match()).prop_map(
            |(table_id, out_port, out_group, cookie, cookie_mask, match_)| FlowStatsRequest {
                table_id,
                out_port,
                out_group,
                cookie,
                cookie_mask,
                match_,
            },
        )
    }

    pub fn experimenter() -> impl Strategy<Value = MultipartExperimenter> {
        (any::<u32>(), any::<u32>(), vec(any::<u8>(), 0..24)).prop_map(
            |(experimenter, exp_type, data)| MultipartExperimenter { experimenter, exp_type, data },
        )
    }

    pub fn request_body() -> impl Strategy<Value = MultipartRequestBody> {
        use MultipartRequestBody as B;
        prop_oneof![
            Just(B::Desc),
            flow_stats_request().prop_map(B::Flow),
            flow_stats_request().prop_map(B::Aggregate),
            Just(B::Table),
            any::<u32>().prop_map(|port_no| B::PortStats { port_no }),
            (any::<u32>(), any::<u32>())
                .prop_map(|(port_no, queue_id)| B::Queue { port_no, queue_id }),
            any::<u32>().prop_map(|group_id| B::Group { group_id }),
            Just(B::GroupDesc),
            Just(B::GroupFeatures),
            any::<u32>().prop_map(|meter_id| B::Meter { meter_id }),
            any::<u32>().prop_map(|meter_id| B::MeterConfig { meter_id }),
            Just(B::MeterFeatures),
            vec(table_features::arb::table_features(), 0..3).prop_map(B::TableFeatures),
            Just(B::PortDesc),
            experimenter().prop_map(B::Experimenter),
        ]
    }

    pub fn desc() -> impl Strategy<Value = Desc> {
        let s = || "[ -~]{0,255}";
        (s(), s(), s(), "[ -~]{0,31}", s()).prop_map(
            |(mfr_desc, hw_desc, sw_desc, serial_num, dp_desc)| Desc {
                mfr_desc,
                hw_desc,
                sw_desc,
                serial_num,
                dp_desc,
            },
        )
    }

    pub fn flow_stats() -> impl Strategy<Value = FlowStats> {
        (
            (
                any::<u8>(),
                any::<u32>(),
                any::<u32>(),
                any::<u16>(),
                any::<u16>(),
                any::<u16>(),
                any::<u16>(),
            ),
            (any::<u64>(), any::<u64>(), any::<u64>()),
            arb_match(),
            arb_instructions(),
        )
            .prop_map(
                |(
                    (
                        table_id,
                        duration_sec,
                        duration_nsec,
                        priority,
                        idle_timeout,
                        hard_timeout,
                        flags,
                    ),
                    (cookie, packet_count, byte_count),
                    match_,
                    instructions,
                )| FlowStats {
                    table_id,
                    duration_sec,
                    duration_nsec,
                    priority,
                    idle_timeout,
                    hard_timeout,
                    flags,
                    cookie,
                    packet_count,
                    byte_count,
                    match_,
                    instructions,
                },
            )
    }

    pub fn table_stats() -> impl Strategy<Value = TableStats> {
        (any::<u8>(), any::<u32>(), any::<u64>(), any::<u64>()).prop_map(
            |(table_id, active_count, lookup_count, matched_count)| TableStats {
                table_id,
                active_count,
                lookup_count,
                matched_count,
            },
        )
    }

    pub fn port_stats() -> impl Strategy<Value = PortStats> {
        (any::<u32>(), any::<[u64; 12]>(), any::<u32>(), any::<u32>()).prop_map(
            |(port_no, c, duration_sec, duration_nsec)| PortStats {
                port_no,
                rx_packets: c[0],
                tx_packets: c[1],
                rx_bytes: c[2],
                tx_bytes: c[3],
                rx_dropped: c[4],
                tx_dropped: c[5],
                rx_errors: c[6],
                tx_errors: c[7],
                rx_frame_err: c[8],
                rx_over_err: c[9],
                rx_crc_err: c[10],
                collisions: c[11],
                duration_sec,
                duration_nsec,
            },
        )
    }

    pub fn queue_stats() -> impl Strategy<Value = QueueStats> {
        (any::<u32>(), any::<u32>(), any::<[u64; 3]>(), any::<u32>(), any::<u32>()).prop_map(
            |(port_no, queue_id, c, duration_sec, duration_nsec)| QueueStats {
                port_no,
                queue_id,
                tx_bytes: c[0],
                tx_packets: c[1],
                tx_errors: c[2],
                duration_sec,
                duration_nsec,
            },
        )
    }

    pub fn group_stats() -> impl Strategy<Value = GroupStats> {
        (
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            vec(any::<(u64, u64)>(), 0..4),
        )
            .prop_map(
                |(
                    group_id,
                    ref_count,
                    packet_count,
                    byte_count,
                    duration_sec,
                    duration_nsec,
                    b,
                )| GroupStats {
                    group_id,
                    ref_count,
                    packet_count,
                    byte_count,
                    duration_sec,
                    duration_nsec,
                    bucket_stats: b
                        .into_iter()
                        .map(|(packet_count, byte_count)| BucketCounter {
                            packet_count,
                            byte_count,
                        })
                        .collect(),
                },
            )
    }

    pub fn group_desc() -> impl Strategy<Value = GroupDesc> {
        (arb_group_type(), any::<u32>(), vec(arb_bucket(), 0..3))
            .prop_map(|(group_type, group_id, buckets)| GroupDesc { group_type, group_id, buckets })
    }

    pub fn group_features() -> impl Strategy<Value = GroupFeatures> {
        (any::<u32>(), any::<u32>(), any::<[u32; 4]>(), any::<[u32; 4]>()).prop_map(
            |(types, capabilities, max_groups, actions)| GroupFeatures {
                types,
                capabilities,
                max_groups,
                actions,
            },
        )
    }

    pub fn meter_stats() -> impl Strategy<Value = MeterStats> {
        (
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            vec(any::<(u64, u64)>(), 0..4),
        )
            .prop_map(
                |(
                    meter_id,
                    flow_count,
                    packet_in_count,
                    byte_in_count,
                    duration_sec,
                    duration_nsec,
                    b,
                )| MeterStats {
                    meter_id,
                    flow_count,
                    packet_in_count,
                    byte_in_count,
                    duration_sec,
                    duration_nsec,
                    band_stats: b
                        .into_iter()
                        .map(|(packet_band_count, byte_band_count)| MeterBandStats {
                            packet_band_count,
                            byte_band_count,
                        })
                        .collect(),
                },
            )
    }

    pub fn meter_config() -> impl Strategy<Value = MeterConfig> {
        (any::<u16>(), any::<u32>(), vec(arb_meter_band(), 0..3))
            .prop_map(|(flags, meter_id, bands)| MeterConfig { flags, meter_id, bands })
    }

    pub fn meter_features() -> impl Strategy<Value = MeterFeatures> {
        (any::<u32>(), any::<u32>(), any::<u32>(), any::<u8>(), any::<u8>()).prop_map(
            |(max_meter, band_types, capabilities, max_bands, max_color)| MeterFeatures {
                max_meter,
                band_types,
                capabilities,
                max_bands,
                max_color,
            },
        )
    }

    pub fn aggregate() -> impl Strategy<Value = AggregateStats> {
        (any::<u64>(), any::<u64>(), any::<u32>()).prop_map(
            |(packet_count, byte_count, flow_count)| AggregateStats {
                packet_count,
                byte_count,
                flow_count,
            },
        )
    }

    pub fn reply_body() -> impl Strategy<Value = MultipartReplyBody> {
        use MultipartReplyBody as B;
        prop_oneof![
            desc().prop_map(B::Desc),
            vec(flow_stats(), 0..3).prop_map(B::Flow),
            aggregate().prop_map(B::Aggregate),
            vec(table_stats(), 0..4).prop_map(B::Table),
            vec(port_stats(), 0..3).prop_map(B::PortStats),
            vec(queue_stats(), 0..3).prop_map(B::Queue),
            vec(group_stats(), 0..3).prop_map(B::Group),
            vec(group_desc(), 0..3).prop_map(B::GroupDesc),
            group_features().prop_map(B::GroupFeatures),
            vec(meter_stats(), 0..3).prop_map(B::Meter),
            vec(meter_config(), 0..3).prop_map(B::MeterConfig),
            meter_features().prop_map(B::MeterFeatures),
            vec(table_features::arb::table_features(), 0..3).prop_map(B::TableFeatures),
            vec(arb_port(), 0..3).prop_map(B::PortDesc),
            experimenter().prop_map(B::Experimenter),
        ]
    }
}

/// Generator of arbitrary multipart requests (every body type).
#[cfg(test)]
pub(crate) fn arb_multipart_request() -> impl proptest::strategy::Strategy<Value = MultipartRequest>
{
    use proptest::prelude::*;
    (any::<u16>(), arb::request_body()).prop_map(|(flags, body)| MultipartRequest { flags, body })
}

/// Generator of arbitrary multipart replies (every body type).
#[cfg(test)]
pub(crate) fn arb_multipart_reply() -> impl proptest::strategy::Strategy<Value = MultipartReply> {
    use proptest::prelude::*;
    (any::<u16>(), arb::reply_body()).prop_map(|(flags, body)| MultipartReply { flags, body })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::{Bucket, GroupType};
    use crate::meter::MeterBand;
    use proptest::prelude::*;

    fn req(b: &[u8]) -> Result<MultipartRequest> {
        MultipartRequest::parse(b)
    }
    fn rep(b: &[u8]) -> Result<MultipartReply> {
        MultipartReply::parse(b)
    }
    fn emit_req(m: &MultipartRequest) -> Vec<u8> {
        let mut v = Vec::new();
        m.emit(&mut v);
        v
    }
    fn emit_rep(m: &MultipartReply) -> Vec<u8> {
        let mut v = Vec::new();
        m.emit(&mut v);
        v
    }
    /// Multipart header + body.
    fn mp(ty: u16, flags: u16, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&ty.to_be_bytes());
        v.extend_from_slice(&flags.to_be_bytes());
        v.extend_from_slice(&[0; 4]);
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn simple_request_literals() {
        let cases: Vec<(Vec<u8>, MultipartRequestBody)> = vec![
            (mp(0, 0, &[]), MultipartRequestBody::Desc),
            (mp(3, 0, &[]), MultipartRequestBody::Table),
            (
                mp(4, 0, &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]),
                MultipartRequestBody::PortStats { port_no: 0xffff_ffff },
            ),
            (
                mp(5, 0, &[0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]),
                MultipartRequestBody::Queue { port_no: 1, queue_id: 0xffff_ffff },
            ),
            (
                mp(6, 0, &[0xff, 0xff, 0xff, 0xfc, 0, 0, 0, 0]),
                MultipartRequestBody::Group { group_id: 0xffff_fffc },
            ),
            (mp(7, 0, &[]), MultipartRequestBody::GroupDesc),
            (mp(8, 0, &[]), MultipartRequestBody::GroupFeatures),
            (mp(9, 0, &[0, 0, 0, 5, 0, 0, 0, 0]), MultipartRequestBody::Meter { meter_id: 5 }),
            (
                mp(10, 0, &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]),
                MultipartRequestBody::MeterConfig { meter_id: !0 },
            ),
            (mp(11, 0, &[]), MultipartRequestBody::MeterFeatures),
            (mp(12, 0, &[]), MultipartRequestBody::TableFeatures(vec![])),
            (mp(13, 0, &[]), MultipartRequestBody::PortDesc),
            (
                mp(0xffff, 1, &[0, 0, 0x23, 0x20, 0, 0, 0, 9, 0xaa]),
                MultipartRequestBody::Experimenter(MultipartExperimenter {
                    experimenter: 0x2320,
                    exp_type: 9,
                    data: vec![0xaa],
                }),
            ),
        ];
        for (bytes, body) in cases {
            let m = req(&bytes).unwrap();
            assert_eq!(m.body, body);
            assert_eq!(m.body.type_code(), u16::from_be_bytes([bytes[0], bytes[1]]));
            assert_eq!(emit_req(&m), bytes);
            assert_eq!(m.wire_len(), bytes.len());
        }
    }

    #[test]
    fn reply_literals() {
        // Table stats: two entries.
        #[rustfmt::skip]
        let t = mp(3, 1, &[
            0x00, 0, 0, 0, 0x00, 0x00, 0x00, 0x02,
            0, 0, 0, 0, 0, 0, 0, 10,
            0, 0, 0, 0, 0, 0, 0, 7,
            0x01, 0, 0, 0, 0x00, 0x00, 0x00, 0x00,
            0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0,
        ]);
        let m = rep(&t).unwrap();
        assert_eq!(m.flags, OFPMPF_REPLY_MORE);
        assert_eq!(
            m.body,
            MultipartReplyBody::Table(vec![
                TableStats { table_id: 0, active_count: 2, lookup_count: 10, matched_count: 7 },
                TableStats { table_id: 1, ..Default::default() },
            ])
        );
        assert_eq!(emit_rep(&m), t);

        // Aggregate.
        #[rustfmt::skip]
        let a = mp(2, 0, &[0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0]);
        let m = rep(&a).unwrap();
        assert_eq!(
            m.body,
            MultipartReplyBody::Aggregate(AggregateStats {
                packet_count: 256,
                byte_count: 65536,
                flow_count: 3
            })
        );
        assert_eq!(emit_rep(&m), a);

        // Queue stats.
        #[rustfmt::skip]
        let q = mp(5, 0, &[
            0, 0, 0, 1, 0, 0, 0, 2,
            0, 0, 0, 0, 0, 0, 0, 100, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 9, 0, 0, 0, 8,
        ]);
        let m = rep(&q).unwrap();
        assert_eq!(
            m.body,
            MultipartReplyBody::Queue(vec![QueueStats {
                port_no: 1,
                queue_id: 2,
                tx_bytes: 100,
                tx_packets: 1,
                tx_errors: 0,
                duration_sec: 9,
                duration_nsec: 8
            }])
        );
        assert_eq!(emit_rep(&m), q);

        // Group features.
        #[rustfmt::skip]
        let g = mp(8, 0, &[
            0, 0, 0, 0x0f, 0, 0, 0, 0x07,
            0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4,
            0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0, 7, 0, 0, 0, 8,
        ]);
        let m = rep(&g).unwrap();
        assert_eq!(
            m.body,
            MultipartReplyBody::GroupFeatures(GroupFeatures {
                types: 15,
                capabilities: 7,
                max_groups: [1, 2, 3, 4],
                actions: [5, 6, 7, 8]
            })
        );
        assert_eq!(emit_rep(&m), g);

        // Meter features.
        let f = mp(11, 0, &[0, 0, 0, 64, 0, 0, 0, 6, 0, 0, 0, 0x0f, 2, 1, 0, 0]);
        let m = rep(&f).unwrap();
        assert_eq!(
            m.body,
            MultipartReplyBody::MeterFeatures(MeterFeatures {
                max_meter: 64,
                band_types: 6,
                capabilities: 15,
                max_bands: 2,
                max_color: 1
            })
        );
        assert_eq!(emit_rep(&m), f);
    }

    #[test]
    fn desc_reply_literal() {
        let mut body = Vec::new();
        for (s, n) in [("sluice", 256), ("hw", 256), ("0.1", 256), ("42", 32), ("dp0", 256)] {
            let mut f = s.as_bytes().to_vec();
            f.resize(n, 0);
            body.extend_from_slice(&f);
        }
        let b = mp(0, 0, &body);
        assert_eq!(b.len(), 8 + 1056);
        let m = rep(&b).unwrap();
        let MultipartReplyBody::Desc(d) = &m.body else { panic!("{m:?}") };
        assert_eq!(d.mfr_desc, "sluice");
        assert_eq!(d.serial_num, "42");
        assert_eq!(d.dp_desc, "dp0");
        assert_eq!(emit_rep(&m), b);
        assert_eq!(rep(&b[..b.len() - 1]), Err(ErrorCode::BRC_BAD_LEN));
    }

    #[test]
    fn group_desc_meter_config_meter_stats_group_stats_literals() {
        #[rustfmt::skip]
        let gd = mp(7, 0, &[
            0x00, 0x28, 0x01, 0x00, 0x00, 0x00, 0x00, 0x0a, // len 40, SELECT, group 10
            0x00, 0x10, 0x00, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, // bucket w=2
            0x00, 0x10, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, // bucket w=3
            0x00, 0x08, 0x09, 0x00, 0x00, 0x00, 0x00, 0x0b, // len 8, unknown type 9, group 11
        ]);
        let m = rep(&gd).unwrap();
        let bucket =
            |weight, watch_port| Bucket { weight, watch_port, watch_group: !0, actions: vec![] };
        assert_eq!(
            m.body,
            MultipartReplyBody::GroupDesc(vec![
                GroupDesc {
                    group_type: GroupType::Select,
                    group_id: 10,
                    buckets: vec![bucket(2, !0), bucket(3, 1)]
                },
                GroupDesc { group_type: GroupType::Unknown(9), group_id: 11, buckets: vec![] },
            ])
        );
        assert_eq!(emit_rep(&m), gd);

        #[rustfmt::skip]
        let mc = mp(10, 0, &[
            0x00, 0x18, 0x00, 0x05, 0x00, 0x00, 0x00, 0x01, // len 24, KBPS|BURST, meter 1
            0x00, 0x01, 0x00, 0x10, 0, 0, 0x03, 0xe8, 0, 0, 0, 0x64, 0, 0, 0, 0,
        ]);
        let m = rep(&mc).unwrap();
        assert_eq!(
            m.body,
            MultipartReplyBody::MeterConfig(vec![MeterConfig {
                flags: 5,
                meter_id: 1,
                bands: vec![MeterBand::Drop { rate: 1000, burst_size: 100 }]
            }])
        );
        assert_eq!(emit_rep(&m), mc);

        #[rustfmt::skip]
        let ms = mp(9, 0, &[
            0x00, 0x00, 0x00, 0x01, 0x00, 0x38, 0, 0, 0, 0, 0, 0, // meter 1, len 56
            0, 0, 0, 2, // flow_count
            0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 1, 0, // in packets/bytes
            0, 0, 0, 3, 0, 0, 0, 4, // duration
            0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 64, // band stats
        ]);
        let m = rep(&ms).unwrap();
        assert_eq!(
            m.body,
            MultipartReplyBody::Meter(vec![MeterStats {
                meter_id: 1,
                flow_count: 2,
                packet_in_count: 5,
                byte_in_count: 256,
                duration_sec: 3,
                duration_nsec: 4,
                band_stats: vec![MeterBandStats { packet_band_count: 1, byte_band_count: 64 }],
            }])
        );
        assert_eq!(emit_rep(&m), ms);

        #[rustfmt::skip]
        let gs = mp(6, 0, &[
            0x00, 0x38, 0, 0, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 0, // len 56, group 7, ref 1
            0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 90, 0, 0, 0, 1, 0, 0, 0, 2,
            0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 90,
        ]);
        let m = rep(&gs).unwrap();
        assert_eq!(
            m.body,
            MultipartReplyBody::Group(vec![GroupStats {
                group_id: 7,
                ref_count: 1,
                packet_count: 9,
                byte_count: 90,
                duration_sec: 1,
                duration_nsec: 2,
                bucket_stats: vec![BucketCounter { packet_count: 9, byte_count: 90 }],
            }])
        );
        assert_eq!(emit_rep(&m), gs);
    }

    #[test]
    fn port_stats_and_port_desc_literals() {
        let mut ps = vec![0, 0, 0, 3, 0, 0, 0, 0];
        for i in 1..=12u64 {
            ps.extend_from_slice(&i.to_be_bytes());
        }
        ps.extend_from_slice(&[0, 0, 0, 100, 0, 0, 0, 200]);
        let b = mp(4, 0, &ps);
        let m = rep(&b).unwrap();
        let MultipartReplyBody::PortStats(v) = &m.body else { panic!() };
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].port_no, v[0].rx_packets, v[0].collisions), (3, 1, 12));
        assert_eq!((v[0].duration_sec, v[0].duration_nsec), (100, 200));
        assert_eq!(emit_rep(&m), b);
        assert_eq!(rep(&b[..b.len() - 8]), Err(ErrorCode::BRC_BAD_LEN));

        let mut pd = vec![0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 1, 0, 0];
        pd.extend_from_slice(b"p1\0\0\0\0\0\0\0\0\0\0\0\0\0\0");
        pd.extend_from_slice(&[0; 32]);
        let b = mp(13, 0, &pd);
        let m = rep(&b).unwrap();
        assert_eq!(
            m.body,
            MultipartReplyBody::PortDesc(vec![Port {
                port_no: 1,
                hw_addr: [2, 0, 0, 0, 0, 1],
                name: "p1".into(),
                ..Default::default()
            }])
        );
        assert_eq!(emit_rep(&m), b);
    }

    #[test]
    fn table_features_reply_literal() {
        #[rustfmt::skip]
        let mut tf = vec![
            0x00, 0x68, 0x00, 0, 0, 0, 0, 0, // len 104, table 0
        ];
        let mut name = b"classifier".to_vec();
        name.resize(32, 0);
        tf.extend_from_slice(&name);
        #[rustfmt::skip]
        tf.extend_from_slice(&[
            0, 0, 0, 0, 0, 0, 0, 0, // metadata_match
            0, 0, 0, 0, 0, 0, 0, 0, // metadata_write
            0, 0, 0, 0, // config
            0, 0, 0x04, 0x00, // max_entries 1024
            // INSTRUCTIONS_MISS: APPLY_ACTIONS (4), CLEAR_ACTIONS (5); len 12
            0x00, 0x01, 0x00, 0x0c, 0x00, 0x04, 0x00, 0x04, 0x00, 0x05, 0x00, 0x04, 0, 0, 0, 0,
            // NEXT_TABLES: 1, 2; len 6
            0x00, 0x02, 0x00, 0x06, 1, 2, 0, 0,
            // WRITE_ACTIONS_MISS: OUTPUT; len 8
            0x00, 0x05, 0x00, 0x08, 0x00, 0x00, 0x00, 0x04,
            // APPLY_SETFIELD: VLAN_VID (0x80000c02); len 8
            0x00, 0x0e, 0x00, 0x08, 0x80, 0x00, 0x0c, 0x02,
        ]);
        assert_eq!(tf.len(), 104);
        let b = mp(12, 0, &tf);
        let m = rep(&b).unwrap();
        let MultipartReplyBody::TableFeatures(v) = &m.body else { panic!() };
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].name, "classifier");
        assert_eq!(v[0].max_entries, 1024);
        assert_eq!(
            v[0].properties,
            vec![
                TableFeatureProp::Instructions {
                    miss: true,
                    ids: vec![FeatureId::Type(4), FeatureId::Type(5)]
                },
                TableFeatureProp::NextTables { miss: false, tables: vec![1, 2] },
                TableFeatureProp::WriteActions { miss: true, ids: vec![FeatureId::Type(0)] },
                TableFeatureProp::ApplySetfield {
                    miss: false,
                    ids: vec![OxmId::new(crate::oxm::OxmHeader(0x8000_0c02))]
                },
            ]
        );
        assert_eq!(v[0].check_known(), Ok(()));
        assert_eq!(emit_rep(&m), b);
        // The same entry as a request (set features).
        let q = req(&b).unwrap();
        assert_eq!(q.body, MultipartRequestBody::TableFeatures(v.clone()));
        // Entry length lying upwards / downwards.
        let mut c = b.clone();
        c[9] = 0x70;
        assert_eq!(rep(&c), Err(ErrorCode::BRC_BAD_LEN));
        c[9] = 0x60;
        // Shorter entry: the trailing 8 bytes then form a second, too-short entry.
        assert_eq!(rep(&c), Err(ErrorCode::BRC_BAD_LEN));
    }

    #[test]
    fn experimenter_multipart_preserved() {
        let b = mp(0xffff, 0, &[0x53, 0x4c, 0x49, 0x43, 0, 0, 0, 1, 1, 2, 3]);
        let m = rep(&b).unwrap();
        assert_eq!(
            m.body,
            MultipartReplyBody::Experimenter(MultipartExperimenter {
                experimenter: 0x534c_4943,
                exp_type: 1,
                data: vec![1, 2, 3]
            })
        );
        assert_eq!(emit_rep(&m), b);
        assert_eq!(rep(&b[..8 + 7]), Err(ErrorCode::BRC_BAD_LEN));
        assert_eq!(req(&b[..8 + 7]), Err(ErrorCode::BRC_BAD_LEN));
    }

    #[test]
    fn unknown_type_is_bad_multipart() {
        for t in [14u16, 15, 100, 0xfffe] {
            assert_eq!(req(&mp(t, 0, &[])), Err(ErrorCode::BRC_BAD_MULTIPART));
            assert_eq!(rep(&mp(t, 0, &[0; 16])), Err(ErrorCode::BRC_BAD_MULTIPART));
        }
    }

    #[test]
    fn length_errors_are_bad_len() {
        // Multipart header shorter than 8.
        assert_eq!(req(&[0, 0, 0, 0, 0, 0, 0]), Err(ErrorCode::BRC_BAD_LEN));
        assert_eq!(rep(&[]), Err(ErrorCode::BRC_BAD_LEN));
        // Empty request bodies that are not empty.
        for t in [0u16, 3, 7, 8, 11, 13] {
            assert_eq!(req(&mp(t, 0, &[0; 8])), Err(ErrorCode::BRC_BAD_LEN), "type {t}");
        }
        // 8-byte request bodies of 4, 12 bytes.
        for t in [4u16, 5, 6, 9, 10] {
            assert_eq!(req(&mp(t, 0, &[0; 4])), Err(ErrorCode::BRC_BAD_LEN), "type {t}");
            assert_eq!(req(&mp(t, 0, &[0; 12])), Err(ErrorCode::BRC_BAD_LEN), "type {t}");
        }
        // Flow stats request shorter than its fixed part.
        assert_eq!(req(&mp(1, 0, &[0; 31])), Err(ErrorCode::BRC_BAD_LEN));
        assert_eq!(req(&mp(2, 0, &[0; 16])), Err(ErrorCode::BRC_BAD_LEN));
        // Fixed reply bodies of the wrong size.
        assert_eq!(rep(&mp(0, 0, &[0; 1055])), Err(ErrorCode::BRC_BAD_LEN));
        assert_eq!(rep(&mp(2, 0, &[0; 32])), Err(ErrorCode::BRC_BAD_LEN));
        assert_eq!(rep(&mp(8, 0, &[0; 36])), Err(ErrorCode::BRC_BAD_LEN));
        assert_eq!(rep(&mp(11, 0, &[0; 8])), Err(ErrorCode::BRC_BAD_LEN));
        // Lists of fixed entries that are not whole entries.
        assert_eq!(rep(&mp(3, 0, &[0; 25])), Err(ErrorCode::BRC_BAD_LEN));
        assert_eq!(rep(&mp(4, 0, &[0; 111])), Err(ErrorCode::BRC_BAD_LEN));
        assert_eq!(rep(&mp(5, 0, &[0; 48])), Err(ErrorCode::BRC_BAD_LEN));
        assert_eq!(rep(&mp(13, 0, &[0; 65])), Err(ErrorCode::BRC_BAD_LEN));
        // Empty lists are fine.
        for t in [1u16, 3, 4, 5, 6, 7, 9, 10, 12, 13] {
            assert!(rep(&mp(t, 0, &[])).is_ok(), "type {t}");
        }
    }

    #[test]
    fn variable_entry_length_errors_are_bad_len() {
        // group stats: 40 bytes, len field at 0.
        let mut g = vec![0u8; 40];
        g[1] = 40;
        assert!(rep(&mp(6, 0, &g)).is_ok());
        for len in [0u16, 32, 48, 44, 41] {
            let mut c = g.clone();
            c[0..2].copy_from_slice(&len.to_be_bytes());
            assert_eq!(rep(&mp(6, 0, &c)), Err(ErrorCode::BRC_BAD_LEN), "group stats len {len}");
        }
        // group stats with 8 extra bytes (not a whole bucket counter).
        let mut c = g.clone();
        c.extend_from_slice(&[0; 8]);
        c[1] = 48;
        assert_eq!(rep(&mp(6, 0, &c)), Err(ErrorCode::BRC_BAD_LEN));
        // meter stats: len field at 4.
        let mut m = vec![0u8; 40];
        m[5] = 40;
        assert!(rep(&mp(9, 0, &m)).is_ok());
        for len in [0u16, 8, 39, 56] {
            let mut c = m.clone();
            c[4..6].copy_from_slice(&len.to_be_bytes());
            assert_eq!(rep(&mp(9, 0, &c)), Err(ErrorCode::BRC_BAD_LEN), "meter stats len {len}");
        }
        let mut c = m.clone();
        c.extend_from_slice(&[0; 8]);
        c[5] = 48;
        assert_eq!(rep(&mp(9, 0, &c)), Err(ErrorCode::BRC_BAD_LEN));
        // group desc / meter config: len 0 must not loop; short; overrun; odd.
        for t in [7u16, 10] {
            for e in [
                [0u8, 0, 0, 0, 0, 0, 0, 0],
                [0, 4, 0, 0, 0, 0, 0, 0],
                [0, 16, 0, 0, 0, 0, 0, 0],
                [0, 12, 0, 0, 0, 0, 0, 0],
            ] {
                assert_eq!(rep(&mp(t, 0, &e)), Err(ErrorCode::BRC_BAD_LEN), "type {t} {e:?}");
            }
            assert_eq!(rep(&mp(t, 0, &[0, 8, 0, 0])), Err(ErrorCode::BRC_BAD_LEN));
        }
        // flow stats: len below 56, not a multiple of 8, overrunning, 0.
        for len in [0u16, 48, 60, 64] {
            let mut c = vec![0u8; 56];
            c[0..2].copy_from_slice(&len.to_be_bytes());
            assert_eq!(rep(&mp(1, 0, &c)), Err(ErrorCode::BRC_BAD_LEN), "flow stats len {len}");
        }
        // Trailing partial entry after a good group desc.
        assert_eq!(rep(&mp(7, 0, &[0, 8, 0, 0, 0, 0, 0, 1, 0, 8])), Err(ErrorCode::BRC_BAD_LEN));
    }

    #[test]
    fn nested_errors_keep_their_codes() {
        // Group desc whose bucket is too short.
        let gd = [0, 16, 0, 0, 0, 0, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0];
        assert_eq!(rep(&mp(7, 0, &gd)), Err(ErrorCode::GMFC_BAD_BUCKET));
        // Meter config with an unknown band type.
        let mc = [0, 24, 0, 1, 0, 0, 0, 1, 0, 7, 0, 16, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0];
        assert_eq!(rep(&mp(10, 0, &mc)), Err(ErrorCode::MMFC_BAD_BAND));
        // Meter config with a bad band length.
        let mc = [0, 24, 0, 1, 0, 0, 0, 1, 0, 1, 0, 8, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0];
        assert_eq!(rep(&mp(10, 0, &mc)), Err(ErrorCode::MMFC_BAD_BAND));
    }

    fn ts(id: u8) -> TableStats {
        TableStats { table_id: id, ..Default::default() }
    }

    #[test]
    fn split_table_stats() {
        let all: Vec<TableStats> = (0..10).map(ts).collect();
        let m = MultipartReply { flags: 0, body: MultipartReplyBody::Table(all.clone()) };
        // 16 bytes of framing + 3 entries of 24 = 88: at most 3 per message.
        let parts = m.clone().split(16 + 3 * 24 + 23);
        assert_eq!(parts.len(), 4);
        for (i, p) in parts.iter().enumerate() {
            let more = i + 1 < parts.len();
            assert_eq!(p.flags & OFPMPF_REPLY_MORE != 0, more);
            assert!(8 + p.wire_len() <= 16 + 3 * 24 + 23);
        }
        let mut r: Reassembler<MultipartReply> = Reassembler::default();
        let mut done = None;
        for p in parts {
            done = r.feed(1, p).unwrap();
        }
        assert_eq!(done, Some(m.clone()));
        // Fits: one message, flags untouched.
        assert_eq!(m.clone().split(DEFAULT_MAX_LEN), vec![m.clone()]);
        // Tiny budget: one entry per message.
        assert_eq!(m.split(0).len(), 10);
    }

    #[test]
    fn split_keeps_non_list_bodies_and_empty_lists() {
        let d = MultipartReply { flags: 0, body: MultipartReplyBody::Desc(Default::default()) };
        assert_eq!(d.clone().split(100), vec![d]);
        let e = MultipartReply { flags: 0, body: MultipartReplyBody::Flow(vec![]) };
        assert_eq!(e.clone().split(100), vec![e]);
        let q = MultipartRequest { flags: 0, body: MultipartRequestBody::Desc };
        assert_eq!(q.clone().split(10), vec![q]);
    }

    #[test]
    fn split_experimenter_data() {
        let m = MultipartReply {
            flags: 0,
            body: MultipartReplyBody::Experimenter(MultipartExperimenter {
                experimenter: 1,
                exp_type: 2,
                data: (0..100).collect(),
            }),
        };
        let parts = m.clone().split(16 + 8 + 30);
        assert_eq!(parts.len(), 4);
        let mut r: Reassembler<MultipartReply> = Reassembler::default();
        let mut done = None;
        for p in parts {
            assert!(8 + p.wire_len() <= 16 + 8 + 30);
            done = r.feed(9, p).unwrap();
        }
        assert_eq!(done, Some(m));
    }

    #[test]
    fn split_request_table_features() {
        let t = |id| TableFeatures { table_id: id, ..Default::default() };
        let m = MultipartRequest {
            flags: 0,
            body: MultipartRequestBody::TableFeatures((0..5).map(t).collect()),
        };
        let parts = m.clone().split(16 + 128);
        assert_eq!(parts.len(), 3);
        assert!(parts[0].flags & OFPMPF_REQ_MORE != 0);
        assert!(parts[2].flags & OFPMPF_REQ_MORE == 0);
        let mut r: Reassembler = Reassembler::default();
        let mut done = None;
        for p in parts {
            let bytes = emit_req(&p);
            done = r.feed(4, MultipartRequest::parse(&bytes).unwrap()).unwrap();
        }
        assert_eq!(done, Some(m));
    }

    /// Parsing never panics, and whatever parses re-encodes to bytes that
    /// parse back to the same value.
    fn check_fixpoint(b: &[u8]) {
        if let Ok(m) = MultipartReply::parse(b) {
            assert_eq!(MultipartReply::parse(&emit_rep(&m)), Ok(m));
        }
        if let Ok(q) = MultipartRequest::parse(b) {
            assert_eq!(MultipartRequest::parse(&emit_req(&q)), Ok(q));
        }
    }

    proptest! {
        #[test]
        fn request_round_trips(m in arb_multipart_request()) {
            let b = emit_req(&m);
            prop_assert_eq!(b.len(), m.wire_len());
            prop_assert_eq!(MultipartRequest::parse(&b).unwrap(), m);
        }

        #[test]
        fn reply_round_trips(m in arb_multipart_reply()) {
            let b = emit_rep(&m);
            prop_assert_eq!(b.len(), m.wire_len());
            prop_assert_eq!(MultipartReply::parse(&b).unwrap(), m);
        }

        #[test]
        fn split_then_reassemble_is_identity(m in arb_multipart_reply(), max in 0usize..400) {
            let m = MultipartReply { flags: m.flags & !OFPMPF_REPLY_MORE, body: m.body };
            let parts = m.clone().split(max);
            prop_assert!(!parts.is_empty());
            let mut r: Reassembler<MultipartReply> = Reassembler::default();
            let n = parts.len();
            let mut done = None;
            for (i, p) in parts.into_iter().enumerate() {
                prop_assert_eq!(p.flags & OFPMPF_REPLY_MORE != 0, i + 1 < n);
                let b = emit_rep(&p);
                done = r.feed(1, MultipartReply::parse(&b).unwrap()).unwrap();
                prop_assert_eq!(done.is_some(), i + 1 == n);
            }
            prop_assert_eq!(done, Some(m));
        }

        #[test]
        fn parsers_never_panic(ty in prop_oneof![0u16..16, Just(0xffffu16)], flags in any::<u16>(),
                               body in proptest::collection::vec(any::<u8>(), 0..300)) {
            check_fixpoint(&mp(ty, flags, &body));
            check_fixpoint(&body);
        }

        /// Mutating one byte of a valid encoding never panics, and whatever
        /// still parses re-encodes to a fixpoint.
        #[test]
        fn mutated_encodings_never_panic(m in arb_multipart_reply(), q in arb_multipart_request(),
                                         at in any::<usize>(), v in any::<u8>()) {
            for mut b in [emit_rep(&m), emit_req(&q)] {
                if !b.is_empty() {
                    let i = at % b.len();
                    b[i] = v;
                }
                check_fixpoint(&b);
            }
        }
    }
}
