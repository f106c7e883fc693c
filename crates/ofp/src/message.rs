//! OpenFlow 1.3.5 messages: `struct ofp_header` and every message type
//! 0–29 (§7.1, §7.3–7.5, Appendix A of the spec / `openflow.h`).
//!
//! ## What
//! [`Message`] has one variant per `enum ofp_type` value. Each variant's body
//! is a plain value type (named struct where the body has fields) that can be
//! built by other code, encoded with [`Message::encode`] and decoded with
//! [`Message::parse`]. Nested structures (matches, instructions, actions,
//! buckets, meter bands, ports, queues, multipart bodies) are delegated to
//! their own modules, which pick their own error codes.
//!
//! ## Framing and header checks
//! [`frame`] finds message boundaries in a byte stream. [`Message::parse`]
//! takes exactly one message and checks, in this order:
//! 1. fewer than 8 bytes, `length < 8`, or `length != buf.len()` →
//!    `OFPBRC_BAD_LEN`;
//! 2. `OFPT_HELLO` is accepted at *any* version, so version negotiation
//!    (§6.3.1) can happen; every other type needs version 0x04, else
//!    `OFPBRC_BAD_VERSION`;
//! 3. a type above 29 → `OFPBRC_BAD_TYPE`.
//!
//! ## Body errors
//! - A fixed-size body of the wrong size (too short *or* too long) and a
//!   variable body shorter than its fixed part are `OFPBRC_BAD_LEN`. This
//!   includes `OFPT_SET_CONFIG`: `OFPSCFC_BAD_LEN` is documented as "specified
//!   len is invalid", which refers to the `miss_send_len` *value* (checked by
//!   [`SwitchConfig::validate`]), not to the message length, which every other
//!   message reports as `OFPBRC_BAD_LEN`.
//! - An `ofp_match` that overruns its message, or is malformed, is a
//!   `OFPBMC_*` error (a match overrun is `OFPBMC_BAD_LEN`, as in Open
//!   vSwitch).
//! - Instruction, action, bucket, band, queue and multipart lists report
//!   whatever their own module decides (`OFPBIC_*`, `OFPBAC_*`,
//!   `OFPGMFC_BAD_BUCKET`, `OFPMMFC_*`, …).
//! - `OFPT_PACKET_OUT` whose `actions_len` overruns the message or is not a
//!   multiple of 8 is `OFPBRC_BAD_LEN` (as in Open vSwitch).
//! - `OFPT_PACKET_IN` without the two padding bytes after the match is
//!   `OFPBRC_BAD_LEN`.
//!
//! ## Losslessness
//! Commands, reasons, roles, flags and capabilities are raw numbers (with the
//! spec's names in const modules below), so unknown values survive a parse /
//! encode round trip; group types keep `GroupType::Unknown(n)`. Reserved
//! fields that are not padding (`ofp_switch_features.reserved`) are kept.
//! Padding is written as zeros and ignored when read. Unknown hello elements
//! are kept as [`HelloElem::Unknown`].
//!
//! ## Hello at other versions
//! A version-0x04 `OFPT_HELLO` must carry well-formed elements
//! (`OFPBRC_BAD_LEN` otherwise). A hello of any other version whose body is
//! not a well-formed element list is accepted with no elements: OpenFlow 1.0
//! says a hello body must be ignored, and negotiation then falls back on the
//! header version ([`Hello::negotiate`]).
//!
//! ## Invariants
//! No decoder panics or indexes untrusted data directly (all reads go through
//! [`Reader`]); allocation is bounded by the input size; every loop consumes
//! at least one byte per iteration or fails. `parse(encode(m, xid)) ==
//! Ok((xid, m))` for every value `m` whose encoding fits in 65535 bytes (see
//! [`Message::try_encode`]), checked by property tests, and
//! [`fuzz_one`] checks it on parsed inputs.

use crate::action::Action;
use crate::consts::{ERROR_DATA_LEN, OFPCML_MAX, OFPCML_NO_BUFFER, OFP_HEADER_LEN, OFP_VERSION};
use crate::error::{ErrorCode, Result, OFPET_EXPERIMENTER};
use crate::group::{Bucket, GroupType};
use crate::instruction::Instruction;
use crate::meter::MeterBand;
use crate::multipart::{MultipartReply, MultipartRequest};
use crate::oxm::Match;
use crate::port::Port;
use crate::queue::PacketQueue;
use crate::wire::{patch_u16, Put, Reader};

/// `enum ofp_type`.
pub mod msg_type {
    pub const HELLO: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const ECHO_REQUEST: u8 = 2;
    pub const ECHO_REPLY: u8 = 3;
    pub const EXPERIMENTER: u8 = 4;
    pub const FEATURES_REQUEST: u8 = 5;
    pub const FEATURES_REPLY: u8 = 6;
    pub const GET_CONFIG_REQUEST: u8 = 7;
    pub const GET_CONFIG_REPLY: u8 = 8;
    pub const SET_CONFIG: u8 = 9;
    pub const PACKET_IN: u8 = 10;
    pub const FLOW_REMOVED: u8 = 11;
    pub const PORT_STATUS: u8 = 12;
    pub const PACKET_OUT: u8 = 13;
    pub const FLOW_MOD: u8 = 14;
    pub const GROUP_MOD: u8 = 15;
    pub const PORT_MOD: u8 = 16;
    pub const TABLE_MOD: u8 = 17;
    pub const MULTIPART_REQUEST: u8 = 18;
    pub const MULTIPART_REPLY: u8 = 19;
    pub const BARRIER_REQUEST: u8 = 20;
    pub const BARRIER_REPLY: u8 = 21;
    pub const QUEUE_GET_CONFIG_REQUEST: u8 = 22;
    pub const QUEUE_GET_CONFIG_REPLY: u8 = 23;
    pub const ROLE_REQUEST: u8 = 24;
    pub const ROLE_REPLY: u8 = 25;
    pub const GET_ASYNC_REQUEST: u8 = 26;
    pub const GET_ASYNC_REPLY: u8 = 27;
    pub const SET_ASYNC: u8 = 28;
    pub const METER_MOD: u8 = 29;
    /// The highest type number OpenFlow 1.3.5 defines.
    pub const MAX: u8 = METER_MOD;
}

/// `enum ofp_flow_mod_command`.
pub mod flow_mod_command {
    pub const ADD: u8 = 0;
    pub const MODIFY: u8 = 1;
    pub const MODIFY_STRICT: u8 = 2;
    pub const DELETE: u8 = 3;
    pub const DELETE_STRICT: u8 = 4;
}

/// `enum ofp_flow_mod_flags`.
pub mod flow_mod_flags {
    pub const SEND_FLOW_REM: u16 = 1 << 0;
    pub const CHECK_OVERLAP: u16 = 1 << 1;
    pub const RESET_COUNTS: u16 = 1 << 2;
    pub const NO_PKT_COUNTS: u16 = 1 << 3;
    pub const NO_BYT_COUNTS: u16 = 1 << 4;
}

/// `enum ofp_packet_in_reason`.
pub mod packet_in_reason {
    pub const NO_MATCH: u8 = 0;
    pub const ACTION: u8 = 1;
    pub const INVALID_TTL: u8 = 2;
}

/// `enum ofp_flow_removed_reason`.
pub mod flow_removed_reason {
    pub const IDLE_TIMEOUT: u8 = 0;
    pub const HARD_TIMEOUT: u8 = 1;
    pub const DELETE: u8 = 2;
    pub const GROUP_DELETE: u8 = 3;
    /// Listed in the 1.3.5 `openflow.h` (and OpenFlow 1.4+).
    pub const METER_DELETE: u8 = 4;
}

/// `enum ofp_port_reason`.
pub mod port_reason {
    pub const ADD: u8 = 0;
    pub const DELETE: u8 = 1;
    pub const MODIFY: u8 = 2;
}

/// `enum ofp_group_mod_command`.
pub mod group_mod_command {
    pub const ADD: u16 = 0;
    pub const MODIFY: u16 = 1;
    pub const DELETE: u16 = 2;
}

/// `enum ofp_meter_mod_command`.
pub mod meter_mod_command {
    pub const ADD: u16 = 0;
    pub const MODIFY: u16 = 1;
    pub const DELETE: u16 = 2;
}

/// `enum ofp_controller_role`.
pub mod controller_role {
    pub const NOCHANGE: u32 = 0;
    pub const EQUAL: u32 = 1;
    pub const MASTER: u32 = 2;
    pub const SLAVE: u32 = 3;
}

/// `enum ofp_config_flags` (`ofp_switch_config.flags`).
pub mod config_flags {
    pub const FRAG_NORMAL: u16 = 0;
    pub const FRAG_DROP: u16 = 1 << 0;
    pub const FRAG_REASM: u16 = 1 << 1;
    pub const FRAG_MASK: u16 = 3;
}

/// `enum ofp_capabilities` (`ofp_switch_features.capabilities`).
pub mod capabilities {
    pub const FLOW_STATS: u32 = 1 << 0;
    pub const TABLE_STATS: u32 = 1 << 1;
    pub const PORT_STATS: u32 = 1 << 2;
    pub const GROUP_STATS: u32 = 1 << 3;
    pub const IP_REASM: u32 = 1 << 5;
    pub const QUEUE_STATS: u32 = 1 << 6;
    pub const PORT_BLOCKED: u32 = 1 << 8;
}

/// `enum ofp_hello_elem_type`.
pub mod hello_elem_type {
    pub const VERSIONBITMAP: u16 = 1;
}

/// `struct ofp_header`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    pub version: u8,
    pub msg_type: u8,
    pub length: u16,
    pub xid: u32,
}

impl Header {
    pub const LEN: usize = OFP_HEADER_LEN;

    /// Parse the first 8 bytes (does not check version, type or length;
    /// fewer than 8 bytes is `OFPBRC_BAD_LEN`).
    pub fn parse(buf: &[u8]) -> Result<Header> {
        let mut r = Reader::new(buf, ErrorCode::BRC_BAD_LEN);
        Ok(Header { version: r.u8()?, msg_type: r.u8()?, length: r.u16()?, xid: r.u32()? })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u8(self.version);
        out.put_u8(self.msg_type);
        out.put_u16(self.length);
        out.put_u32(self.xid);
    }
}

/// Stream framing: is there one complete message at the front of `buf`?
///
/// `None`: need more bytes. `Some(Ok(n))`: the first `n` bytes are one
/// message (pass them to [`Message::parse`]). `Some(Err(OFPBRC_BAD_LEN))`:
/// the header's length is below 8, so the stream cannot be resynchronised.
pub fn frame(buf: &[u8]) -> Option<Result<usize>> {
    let h = Header::parse(buf).ok()?;
    let n = usize::from(h.length);
    if n < Header::LEN {
        return Some(Err(ErrorCode::BRC_BAD_LEN));
    }
    if buf.len() < n {
        return None;
    }
    Some(Ok(n))
}

/// The `OFPT_ERROR` a switch answers an offending message with: `code` plus
/// the first [`ERROR_DATA_LEN`] (64) bytes of the offending message.
///
/// A code of type `OFPET_EXPERIMENTER` is one of sluice's own
/// (`crate::filterprog::err`): it goes out as an experimenter error of
/// sluice's id with `exp_type` = the code.
pub fn error_reply(code: ErrorCode, offending: &[u8]) -> Message {
    let n = offending.len().min(ERROR_DATA_LEN);
    let data = offending.get(..n).unwrap_or_default().to_vec();
    if code.ty == crate::error::OFPET_EXPERIMENTER {
        return Message::Error(ErrorMsg::Experimenter {
            exp_type: code.code,
            experimenter: crate::consts::SLUICE_EXPERIMENTER_ID,
            data,
        });
    }
    Message::Error(ErrorMsg::Standard { code, data })
}

// ---------------------------------------------------------------------------
// Hello

/// One hello element (`struct ofp_hello_elem_header` and what follows).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum HelloElem {
    /// `OFPHET_VERSIONBITMAP`: bit `v % 32` of word `v / 32` set means
    /// version `v` is supported.
    VersionBitmap(Vec<u32>),
    /// Any other element type, kept verbatim (`data` excludes the 4-byte
    /// element header and the padding). `ty` must not be
    /// `OFPHET_VERSIONBITMAP` (such a value would be re-read as a bitmap).
    Unknown { ty: u16, data: Vec<u8> },
}

/// `OFPT_HELLO` body: zero or more elements.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Hello {
    pub elements: Vec<HelloElem>,
}

impl Hello {
    /// A hello advertising exactly `versions` in a version bitmap.
    pub fn with_versions(versions: &[u8]) -> Hello {
        let words = versions.iter().map(|&v| usize::from(v) / 32 + 1).max().unwrap_or(1);
        let mut bitmap = vec![0u32; words];
        for &v in versions {
            if let Some(w) = bitmap.get_mut(usize::from(v) / 32) {
                *w |= 1 << (v % 32);
            }
        }
        Hello { elements: vec![HelloElem::VersionBitmap(bitmap)] }
    }

    /// The first version bitmap element, if any.
    pub fn bitmap(&self) -> Option<&[u32]> {
        self.elements.iter().find_map(|e| match e {
            HelloElem::VersionBitmap(b) => Some(b.as_slice()),
            HelloElem::Unknown { .. } => None,
        })
    }

    /// Version negotiation, OpenFlow 1.3.5 §6.3.1.
    ///
    /// `self` is the peer's hello, received with `header_version`; `ours`
    /// are the versions we support, which we are assumed to have advertised
    /// in a version bitmap (as [`Hello::with_versions`] does) with
    /// `max(ours)` in our header. If the peer also sent a bitmap, the result
    /// is the highest version in both; otherwise it is
    /// `min(header_version, max(ours))`, provided we support it. `None`
    /// means no common version: answer `OFPET_HELLO_FAILED /
    /// OFPHFC_INCOMPATIBLE` and close.
    pub fn negotiate(&self, header_version: u8, ours: &[u8]) -> Option<u8> {
        let our_max = ours.iter().copied().max()?;
        match self.bitmap() {
            Some(bm) => ours.iter().copied().filter(|&v| bitmap_has(bm, v)).max(),
            None => {
                let v = header_version.min(our_max);
                ours.contains(&v).then_some(v)
            }
        }
    }

    fn parse(body: &[u8], version: u8) -> Result<Hello> {
        match Self::parse_elements(body) {
            Ok(h) => Ok(h),
            Err(e) if version == OFP_VERSION => Err(e),
            Err(_) => Ok(Hello::default()),
        }
    }

    fn parse_elements(body: &[u8]) -> Result<Hello> {
        let mut r = Reader::new(body, ErrorCode::BRC_BAD_LEN);
        let mut elements = Vec::new();
        while !r.is_empty() {
            let ty = r.u16()?;
            let len = usize::from(r.u16()?);
            let data_len = len.checked_sub(4).ok_or(ErrorCode::BRC_BAD_LEN)?;
            let data = r.bytes(data_len)?;
            r.skip(crate::wire::pad8(len) - len)?;
            if ty == hello_elem_type::VERSIONBITMAP {
                if data_len % 4 != 0 {
                    return Err(ErrorCode::BRC_BAD_LEN);
                }
                let mut br = Reader::new(data, ErrorCode::BRC_BAD_LEN);
                let mut words = Vec::with_capacity(data_len / 4);
                while !br.is_empty() {
                    words.push(br.u32()?);
                }
                elements.push(HelloElem::VersionBitmap(words));
            } else {
                elements.push(HelloElem::Unknown { ty, data: data.to_vec() });
            }
        }
        Ok(Hello { elements })
    }

    fn emit(&self, out: &mut Vec<u8>) {
        for e in &self.elements {
            let start = out.len();
            match e {
                HelloElem::VersionBitmap(words) => {
                    out.put_u16(hello_elem_type::VERSIONBITMAP);
                    out.put_u16(0);
                    for &w in words {
                        out.put_u32(w);
                    }
                }
                HelloElem::Unknown { ty, data } => {
                    out.put_u16(*ty);
                    out.put_u16(0);
                    out.put_slice(data);
                }
            }
            let len = out.len() - start;
            patch_u16(out, start + 2, u16::try_from(len).unwrap_or(u16::MAX));
            out.pad8_from(start);
        }
    }
}

/// Whether `bitmap` (hello version bitmap words) has version `v` set.
pub fn bitmap_has(bitmap: &[u32], v: u8) -> bool {
    bitmap.get(usize::from(v) / 32).is_some_and(|w| w & (1 << (v % 32)) != 0)
}

// ---------------------------------------------------------------------------
// Bodies

/// `OFPT_ERROR` body (`struct ofp_error_msg` / `ofp_error_experimenter_msg`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ErrorMsg {
    /// Any type other than `OFPET_EXPERIMENTER` (0xffff), named or not.
    /// `data` is usually the start of the offending message (ASCII text for
    /// `OFPET_HELLO_FAILED`). A `code.ty` of 0xffff is encoded as given and
    /// reads back as `Experimenter`.
    Standard { code: ErrorCode, data: Vec<u8> },
    /// `OFPET_EXPERIMENTER`.
    Experimenter { exp_type: u16, experimenter: u32, data: Vec<u8> },
}

/// `OFPT_EXPERIMENTER` body (`struct ofp_experimenter_header`): the payload
/// is kept verbatim; [`crate::experimenter::Registry`] gives it meaning.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ExperimenterMsg {
    pub experimenter: u32,
    pub exp_type: u32,
    pub data: Vec<u8>,
}

/// `OFPT_FEATURES_REPLY` body (`struct ofp_switch_features`, 32 bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FeaturesReply {
    pub datapath_id: u64,
    pub n_buffers: u32,
    pub n_tables: u8,
    pub auxiliary_id: u8,
    /// [`capabilities`] bits.
    pub capabilities: u32,
    /// `reserved` (sent as 0), kept so nothing a peer sent is lost.
    pub reserved: u32,
}

/// `struct ofp_switch_config` body (`OFPT_GET_CONFIG_REPLY`,
/// `OFPT_SET_CONFIG`; 12 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SwitchConfig {
    /// [`config_flags`] bits.
    pub flags: u16,
    pub miss_send_len: u16,
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            flags: config_flags::FRAG_NORMAL,
            miss_send_len: crate::consts::OFP_DEFAULT_MISS_SEND_LEN,
        }
    }
}

impl SwitchConfig {
    /// Semantic check a switch applies to `OFPT_SET_CONFIG`: unknown flag
    /// bits are `OFPSCFC_BAD_FLAGS`; a `miss_send_len` above `OFPCML_MAX`
    /// other than `OFPCML_NO_BUFFER` is `OFPSCFC_BAD_LEN`.
    pub fn validate(&self) -> Result<()> {
        if self.flags & !config_flags::FRAG_MASK != 0 {
            return Err(ErrorCode::SCFC_BAD_FLAGS);
        }
        if self.miss_send_len > OFPCML_MAX && self.miss_send_len != OFPCML_NO_BUFFER {
            return Err(ErrorCode::SCFC_BAD_LEN);
        }
        Ok(())
    }
}

/// `OFPT_PACKET_IN` body (`struct ofp_packet_in`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PacketIn {
    pub buffer_id: u32,
    pub total_len: u16,
    /// [`packet_in_reason`].
    pub reason: u8,
    pub table_id: u8,
    pub cookie: u64,
    pub r#match: Match,
    /// The Ethernet frame (possibly truncated to `miss_send_len`/`max_len`).
    pub data: Vec<u8>,
}

/// `OFPT_FLOW_REMOVED` body (`struct ofp_flow_removed`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowRemoved {
    pub cookie: u64,
    pub priority: u16,
    /// [`flow_removed_reason`].
    pub reason: u8,
    pub table_id: u8,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub packet_count: u64,
    pub byte_count: u64,
    pub r#match: Match,
}

/// `OFPT_PORT_STATUS` body (`struct ofp_port_status`, 80 bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PortStatus {
    /// [`port_reason`].
    pub reason: u8,
    pub desc: Port,
}

/// `OFPT_PACKET_OUT` body (`struct ofp_packet_out`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PacketOut {
    pub buffer_id: u32,
    pub in_port: u32,
    pub actions: Vec<Action>,
    /// Packet data; meaningful only with `buffer_id == OFP_NO_BUFFER`.
    pub data: Vec<u8>,
}

/// `OFPT_FLOW_MOD` body (`struct ofp_flow_mod`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowMod {
    pub cookie: u64,
    pub cookie_mask: u64,
    pub table_id: u8,
    /// [`flow_mod_command`].
    pub command: u8,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub priority: u16,
    pub buffer_id: u32,
    pub out_port: u32,
    pub out_group: u32,
    /// [`flow_mod_flags`] bits.
    pub flags: u16,
    pub r#match: Match,
    pub instructions: Vec<Instruction>,
}

/// `OFPT_GROUP_MOD` body (`struct ofp_group_mod`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroupMod {
    /// [`group_mod_command`].
    pub command: u16,
    pub group_type: GroupType,
    pub group_id: u32,
    pub buckets: Vec<Bucket>,
}

/// `OFPT_PORT_MOD` body (`struct ofp_port_mod`, 40 bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PortMod {
    pub port_no: u32,
    pub hw_addr: [u8; 6],
    /// `OFPPC_*` bits ([`crate::port::config`]).
    pub config: u32,
    /// Which `config` bits to change.
    pub mask: u32,
    /// `OFPPF_*` bits; 0 means "do not change".
    pub advertise: u32,
}

/// `OFPT_TABLE_MOD` body (`struct ofp_table_mod`, 16 bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TableMod {
    pub table_id: u8,
    /// `OFPTC_*` bits (all deprecated in 1.3).
    pub config: u32,
}

/// `OFPT_QUEUE_GET_CONFIG_REQUEST` body (16 bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct QueueGetConfigRequest {
    pub port: u32,
}

/// `OFPT_QUEUE_GET_CONFIG_REPLY` body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct QueueGetConfigReply {
    pub port: u32,
    pub queues: Vec<PacketQueue>,
}

/// `struct ofp_role_request` body (`OFPT_ROLE_REQUEST`, `OFPT_ROLE_REPLY`;
/// 24 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RoleMsg {
    /// [`controller_role`].
    pub role: u32,
    pub generation_id: u64,
}

/// `struct ofp_async_config` body (`OFPT_GET_ASYNC_REPLY`,
/// `OFPT_SET_ASYNC`; 32 bytes). Index 0 is for the master/equal role,
/// index 1 for slaves. Each mask has bit `1 << reason` set for reasons
/// that are sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AsyncConfig {
    pub packet_in_mask: [u32; 2],
    pub port_status_mask: [u32; 2],
    pub flow_removed_mask: [u32; 2],
}

/// `OFPT_METER_MOD` body (`struct ofp_meter_mod`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MeterMod {
    /// [`meter_mod_command`].
    pub command: u16,
    /// `OFPMF_*` bits ([`crate::meter::flags`]).
    pub flags: u16,
    pub meter_id: u32,
    pub bands: Vec<MeterBand>,
}

/// A reply to a controller: the xid it answers and the message. What a
/// switch hands back to the agent for one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    pub xid: u32,
    pub msg: Message,
}

/// One OpenFlow 1.3.5 message: one variant per `enum ofp_type` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    Hello(Hello),
    Error(ErrorMsg),
    EchoRequest(Vec<u8>),
    EchoReply(Vec<u8>),
    Experimenter(ExperimenterMsg),
    FeaturesRequest,
    FeaturesReply(FeaturesReply),
    GetConfigRequest,
    GetConfigReply(SwitchConfig),
    SetConfig(SwitchConfig),
    PacketIn(PacketIn),
    FlowRemoved(FlowRemoved),
    PortStatus(PortStatus),
    PacketOut(PacketOut),
    FlowMod(FlowMod),
    GroupMod(GroupMod),
    PortMod(PortMod),
    TableMod(TableMod),
    MultipartRequest(MultipartRequest),
    MultipartReply(MultipartReply),
    BarrierRequest,
    BarrierReply,
    QueueGetConfigRequest(QueueGetConfigRequest),
    QueueGetConfigReply(QueueGetConfigReply),
    RoleRequest(RoleMsg),
    RoleReply(RoleMsg),
    GetAsyncRequest,
    GetAsyncReply(AsyncConfig),
    SetAsync(AsyncConfig),
    MeterMod(MeterMod),
}

// ---------------------------------------------------------------------------
// Decoding helpers

const BAD_LEN: ErrorCode = ErrorCode::BRC_BAD_LEN;

/// `Err(OFPBRC_BAD_LEN)` unless `body` is exactly `n` bytes.
fn exact(body: &[u8], n: usize) -> Result<Reader<'_>> {
    if body.len() != n {
        return Err(BAD_LEN);
    }
    Ok(Reader::new(body, BAD_LEN))
}

/// `Err(OFPBRC_BAD_LEN)` unless `body` has at least `n` bytes.
fn at_least(body: &[u8], n: usize) -> Result<Reader<'_>> {
    if body.len() < n {
        return Err(BAD_LEN);
    }
    Ok(Reader::new(body, BAD_LEN))
}

/// Run a nested parser on `r` with a different short-read error, then
/// advance `r` by what it consumed.
fn nested<'a, T>(
    r: &mut Reader<'a>,
    short: ErrorCode,
    f: impl FnOnce(&mut Reader<'a>) -> Result<T>,
) -> Result<T> {
    let mut sub = r.with_error(short);
    let v = f(&mut sub)?;
    let used = sub.position() - r.position();
    r.skip(used)?;
    Ok(v)
}

fn parse_match(r: &mut Reader<'_>) -> Result<Match> {
    nested(r, ErrorCode::BMC_BAD_LEN, Match::parse)
}

fn parse_error(body: &[u8]) -> Result<ErrorMsg> {
    let mut r = at_least(body, 4)?;
    let ty = r.u16()?;
    if ty == OFPET_EXPERIMENTER {
        let exp_type = r.u16()?;
        let experimenter = r.u32()?;
        return Ok(ErrorMsg::Experimenter { exp_type, experimenter, data: r.rest().to_vec() });
    }
    let code = r.u16()?;
    Ok(ErrorMsg::Standard { code: ErrorCode::new(ty, code), data: r.rest().to_vec() })
}

fn parse_packet_in(body: &[u8]) -> Result<PacketIn> {
    // 16 fixed bytes + the smallest ofp_match (8) = sizeof(ofp_packet_in) - 8.
    let mut r = at_least(body, 24)?;
    let buffer_id = r.u32()?;
    let total_len = r.u16()?;
    let reason = r.u8()?;
    let table_id = r.u8()?;
    let cookie = r.u64()?;
    let m = parse_match(&mut r)?;
    r.skip(2)?;
    Ok(PacketIn {
        buffer_id,
        total_len,
        reason,
        table_id,
        cookie,
        r#match: m,
        data: r.rest().to_vec(),
    })
}

fn parse_flow_removed(body: &[u8]) -> Result<FlowRemoved> {
    let mut r = at_least(body, 48)?;
    let fr = FlowRemoved {
        cookie: r.u64()?,
        priority: r.u16()?,
        reason: r.u8()?,
        table_id: r.u8()?,
        duration_sec: r.u32()?,
        duration_nsec: r.u32()?,
        idle_timeout: r.u16()?,
        hard_timeout: r.u16()?,
        packet_count: r.u64()?,
        byte_count: r.u64()?,
        r#match: parse_match(&mut r)?,
    };
    if !r.is_empty() {
        return Err(BAD_LEN);
    }
    Ok(fr)
}

fn parse_packet_out(body: &[u8]) -> Result<PacketOut> {
    let mut r = at_least(body, 16)?;
    let buffer_id = r.u32()?;
    let in_port = r.u32()?;
    let actions_len = usize::from(r.u16()?);
    r.skip(6)?;
    if actions_len % 8 != 0 {
        return Err(BAD_LEN);
    }
    let actions = Action::parse_list(r.bytes(actions_len)?)?;
    Ok(PacketOut { buffer_id, in_port, actions, data: r.rest().to_vec() })
}

fn parse_flow_mod(body: &[u8]) -> Result<FlowMod> {
    let mut r = at_least(body, 48)?;
    let cookie = r.u64()?;
    let cookie_mask = r.u64()?;
    let table_id = r.u8()?;
    let command = r.u8()?;
    let idle_timeout = r.u16()?;
    let hard_timeout = r.u16()?;
    let priority = r.u16()?;
    let buffer_id = r.u32()?;
    let out_port = r.u32()?;
    let out_group = r.u32()?;
    let flags = r.u16()?;
    r.skip(2)?;
    let m = parse_match(&mut r)?;
    let instructions = Instruction::parse_list(r.rest())?;
    Ok(FlowMod {
        cookie,
        cookie_mask,
        table_id,
        command,
        idle_timeout,
        hard_timeout,
        priority,
        buffer_id,
        out_port,
        out_group,
        flags,
        r#match: m,
        instructions,
    })
}

fn parse_group_mod(body: &[u8]) -> Result<GroupMod> {
    let mut r = at_least(body, 8)?;
    let command = r.u16()?;
    let group_type = GroupType::from_u8(r.u8()?);
    r.skip(1)?;
    let group_id = r.u32()?;
    let buckets = Bucket::parse_list(r.rest())?;
    Ok(GroupMod { command, group_type, group_id, buckets })
}

fn parse_port_mod(body: &[u8]) -> Result<PortMod> {
    let mut r = exact(body, 32)?;
    let port_no = r.u32()?;
    r.skip(4)?;
    let hw_addr = r.array()?;
    r.skip(2)?;
    let pm = PortMod { port_no, hw_addr, config: r.u32()?, mask: r.u32()?, advertise: r.u32()? };
    Ok(pm)
}

fn parse_queue_reply(body: &[u8]) -> Result<QueueGetConfigReply> {
    let mut r = at_least(body, 8)?;
    let port = r.u32()?;
    r.skip(4)?;
    let queues = PacketQueue::parse_list(r.rest())?;
    Ok(QueueGetConfigReply { port, queues })
}

fn parse_role(body: &[u8]) -> Result<RoleMsg> {
    let mut r = exact(body, 16)?;
    let role = r.u32()?;
    r.skip(4)?;
    Ok(RoleMsg { role, generation_id: r.u64()? })
}

fn parse_async(body: &[u8]) -> Result<AsyncConfig> {
    let mut r = exact(body, 24)?;
    Ok(AsyncConfig {
        packet_in_mask: [r.u32()?, r.u32()?],
        port_status_mask: [r.u32()?, r.u32()?],
        flow_removed_mask: [r.u32()?, r.u32()?],
    })
}

fn parse_config(body: &[u8]) -> Result<SwitchConfig> {
    let mut r = exact(body, 4)?;
    Ok(SwitchConfig { flags: r.u16()?, miss_send_len: r.u16()? })
}

fn empty(body: &[u8], m: Message) -> Result<Message> {
    exact(body, 0).map(|_| m)
}

impl Message {
    /// Parse one complete message (`buf` holds exactly `header.length`
    /// bytes). Returns the xid and the message. See the module docs for the
    /// order of checks and the errors.
    pub fn parse(buf: &[u8]) -> Result<(u32, Message)> {
        Self::parse_with_header(buf).map(|(h, m)| (h.xid, m))
    }

    /// [`Message::parse`], returning the whole header (its version is what
    /// [`Hello::negotiate`] needs). To answer a message that fails to parse,
    /// take its xid from [`Header::parse`].
    pub fn parse_with_header(buf: &[u8]) -> Result<(Header, Message)> {
        let h = Header::parse(buf)?;
        if usize::from(h.length) < Header::LEN || usize::from(h.length) != buf.len() {
            return Err(BAD_LEN);
        }
        let body = buf.get(Header::LEN..).unwrap_or_default();
        if h.msg_type == msg_type::HELLO {
            return Ok((h, Message::Hello(Hello::parse(body, h.version)?)));
        }
        if h.version != OFP_VERSION {
            return Err(ErrorCode::BRC_BAD_VERSION);
        }
        Ok((h, Self::parse_body(h.msg_type, body)?))
    }

    /// Decode the body (everything after the header) of a version-0x04
    /// message of type `ty`.
    pub fn parse_body(ty: u8, body: &[u8]) -> Result<Message> {
        use msg_type as t;
        Ok(match ty {
            t::HELLO => Message::Hello(Hello::parse(body, OFP_VERSION)?),
            t::ERROR => Message::Error(parse_error(body)?),
            t::ECHO_REQUEST => Message::EchoRequest(body.to_vec()),
            t::ECHO_REPLY => Message::EchoReply(body.to_vec()),
            t::EXPERIMENTER => {
                let mut r = at_least(body, 8)?;
                Message::Experimenter(ExperimenterMsg {
                    experimenter: r.u32()?,
                    exp_type: r.u32()?,
                    data: r.rest().to_vec(),
                })
            }
            t::FEATURES_REQUEST => return empty(body, Message::FeaturesRequest),
            t::FEATURES_REPLY => {
                let mut r = exact(body, 24)?;
                let datapath_id = r.u64()?;
                let n_buffers = r.u32()?;
                let n_tables = r.u8()?;
                let auxiliary_id = r.u8()?;
                r.skip(2)?;
                Message::FeaturesReply(FeaturesReply {
                    datapath_id,
                    n_buffers,
                    n_tables,
                    auxiliary_id,
                    capabilities: r.u32()?,
                    reserved: r.u32()?,
                })
            }
            t::GET_CONFIG_REQUEST => return empty(body, Message::GetConfigRequest),
            t::GET_CONFIG_REPLY => Message::GetConfigReply(parse_config(body)?),
            t::SET_CONFIG => Message::SetConfig(parse_config(body)?),
            t::PACKET_IN => Message::PacketIn(parse_packet_in(body)?),
            t::FLOW_REMOVED => Message::FlowRemoved(parse_flow_removed(body)?),
            t::PORT_STATUS => {
                let mut r = exact(body, 8 + Port::LEN)?;
                let reason = r.u8()?;
                r.skip(7)?;
                Message::PortStatus(PortStatus { reason, desc: Port::parse(&mut r)? })
            }
            t::PACKET_OUT => Message::PacketOut(parse_packet_out(body)?),
            t::FLOW_MOD => Message::FlowMod(parse_flow_mod(body)?),
            t::GROUP_MOD => Message::GroupMod(parse_group_mod(body)?),
            t::PORT_MOD => Message::PortMod(parse_port_mod(body)?),
            t::TABLE_MOD => {
                let mut r = exact(body, 8)?;
                let table_id = r.u8()?;
                r.skip(3)?;
                Message::TableMod(TableMod { table_id, config: r.u32()? })
            }
            t::MULTIPART_REQUEST => Message::MultipartRequest(MultipartRequest::parse(body)?),
            t::MULTIPART_REPLY => Message::MultipartReply(MultipartReply::parse(body)?),
            t::BARRIER_REQUEST => return empty(body, Message::BarrierRequest),
            t::BARRIER_REPLY => return empty(body, Message::BarrierReply),
            t::QUEUE_GET_CONFIG_REQUEST => {
                let mut r = exact(body, 8)?;
                Message::QueueGetConfigRequest(QueueGetConfigRequest { port: r.u32()? })
            }
            t::QUEUE_GET_CONFIG_REPLY => Message::QueueGetConfigReply(parse_queue_reply(body)?),
            t::ROLE_REQUEST => Message::RoleRequest(parse_role(body)?),
            t::ROLE_REPLY => Message::RoleReply(parse_role(body)?),
            t::GET_ASYNC_REQUEST => return empty(body, Message::GetAsyncRequest),
            t::GET_ASYNC_REPLY => Message::GetAsyncReply(parse_async(body)?),
            t::SET_ASYNC => Message::SetAsync(parse_async(body)?),
            t::METER_MOD => {
                let mut r = at_least(body, 8)?;
                let command = r.u16()?;
                let flags = r.u16()?;
                let meter_id = r.u32()?;
                let bands = MeterBand::parse_list(r.rest())?;
                Message::MeterMod(MeterMod { command, flags, meter_id, bands })
            }
            _ => return Err(ErrorCode::BRC_BAD_TYPE),
        })
    }

    /// Encode with the given xid, including the header.
    ///
    /// A message longer than 65535 bytes cannot be represented; it is cut to
    /// 65535 bytes (so the stream stays framed and the peer answers with an
    /// error). Use [`Message::try_encode`] to detect this instead.
    pub fn encode(&self, xid: u32) -> Vec<u8> {
        let mut out = self.encode_unchecked(xid);
        out.truncate(usize::from(u16::MAX));
        let len = u16::try_from(out.len()).unwrap_or(u16::MAX);
        patch_u16(&mut out, 2, len);
        out
    }

    /// Encode, or `Err(OFPBRC_BAD_LEN)` if the message is longer than the
    /// 65535 bytes a header length can express.
    pub fn try_encode(&self, xid: u32) -> Result<Vec<u8>> {
        let mut out = self.encode_unchecked(xid);
        let len = u16::try_from(out.len()).map_err(|_| BAD_LEN)?;
        patch_u16(&mut out, 2, len);
        Ok(out)
    }

    fn encode_unchecked(&self, xid: u32) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        Header { version: OFP_VERSION, msg_type: self.msg_type(), length: 0, xid }.emit(&mut out);
        self.emit_body(&mut out);
        out
    }

    /// Append the body (everything after the 8-byte header) to `out`.
    pub fn emit_body(&self, out: &mut Vec<u8>) {
        match self {
            Message::Hello(h) => h.emit(out),
            Message::Error(ErrorMsg::Standard { code, data }) => {
                out.put_u16(code.ty);
                out.put_u16(code.code);
                out.put_slice(data);
            }
            Message::Error(ErrorMsg::Experimenter { exp_type, experimenter, data }) => {
                out.put_u16(OFPET_EXPERIMENTER);
                out.put_u16(*exp_type);
                out.put_u32(*experimenter);
                out.put_slice(data);
            }
            Message::EchoRequest(d) | Message::EchoReply(d) => out.put_slice(d),
            Message::Experimenter(e) => {
                out.put_u32(e.experimenter);
                out.put_u32(e.exp_type);
                out.put_slice(&e.data);
            }
            Message::FeaturesRequest
            | Message::GetConfigRequest
            | Message::BarrierRequest
            | Message::BarrierReply
            | Message::GetAsyncRequest => {}
            Message::FeaturesReply(f) => {
                out.put_u64(f.datapath_id);
                out.put_u32(f.n_buffers);
                out.put_u8(f.n_tables);
                out.put_u8(f.auxiliary_id);
                out.put_zeros(2);
                out.put_u32(f.capabilities);
                out.put_u32(f.reserved);
            }
            Message::GetConfigReply(c) | Message::SetConfig(c) => {
                out.put_u16(c.flags);
                out.put_u16(c.miss_send_len);
            }
            Message::PacketIn(p) => {
                out.put_u32(p.buffer_id);
                out.put_u16(p.total_len);
                out.put_u8(p.reason);
                out.put_u8(p.table_id);
                out.put_u64(p.cookie);
                p.r#match.emit(out);
                out.put_zeros(2);
                out.put_slice(&p.data);
            }
            Message::FlowRemoved(f) => {
                out.put_u64(f.cookie);
                out.put_u16(f.priority);
                out.put_u8(f.reason);
                out.put_u8(f.table_id);
                out.put_u32(f.duration_sec);
                out.put_u32(f.duration_nsec);
                out.put_u16(f.idle_timeout);
                out.put_u16(f.hard_timeout);
                out.put_u64(f.packet_count);
                out.put_u64(f.byte_count);
                f.r#match.emit(out);
            }
            Message::PortStatus(p) => {
                out.put_u8(p.reason);
                out.put_zeros(7);
                p.desc.emit(out);
            }
            Message::PacketOut(p) => {
                out.put_u32(p.buffer_id);
                out.put_u32(p.in_port);
                let len_at = out.len();
                out.put_u16(0);
                out.put_zeros(6);
                let start = out.len();
                Action::emit_list(&p.actions, out);
                let n = u16::try_from(out.len() - start).unwrap_or(u16::MAX);
                patch_u16(out, len_at, n);
                out.put_slice(&p.data);
            }
            Message::FlowMod(f) => {
                out.put_u64(f.cookie);
                out.put_u64(f.cookie_mask);
                out.put_u8(f.table_id);
                out.put_u8(f.command);
                out.put_u16(f.idle_timeout);
                out.put_u16(f.hard_timeout);
                out.put_u16(f.priority);
                out.put_u32(f.buffer_id);
                out.put_u32(f.out_port);
                out.put_u32(f.out_group);
                out.put_u16(f.flags);
                out.put_zeros(2);
                f.r#match.emit(out);
                Instruction::emit_list(&f.instructions, out);
            }
            Message::GroupMod(g) => {
                out.put_u16(g.command);
                out.put_u8(g.group_type.to_u8());
                out.put_zeros(1);
                out.put_u32(g.group_id);
                for b in &g.buckets {
                    b.emit(out);
                }
            }
            Message::PortMod(p) => {
                out.put_u32(p.port_no);
                out.put_zeros(4);
                out.put_slice(&p.hw_addr);
                out.put_zeros(2);
                out.put_u32(p.config);
                out.put_u32(p.mask);
                out.put_u32(p.advertise);
                out.put_zeros(4);
            }
            Message::TableMod(t) => {
                out.put_u8(t.table_id);
                out.put_zeros(3);
                out.put_u32(t.config);
            }
            Message::MultipartRequest(m) => m.emit(out),
            Message::MultipartReply(m) => m.emit(out),
            Message::QueueGetConfigRequest(q) => {
                out.put_u32(q.port);
                out.put_zeros(4);
            }
            Message::QueueGetConfigReply(q) => {
                out.put_u32(q.port);
                out.put_zeros(4);
                for pq in &q.queues {
                    pq.emit(out);
                }
            }
            Message::RoleRequest(r) | Message::RoleReply(r) => {
                out.put_u32(r.role);
                out.put_zeros(4);
                out.put_u64(r.generation_id);
            }
            Message::GetAsyncReply(a) | Message::SetAsync(a) => {
                for w in
                    a.packet_in_mask.iter().chain(&a.port_status_mask).chain(&a.flow_removed_mask)
                {
                    out.put_u32(*w);
                }
            }
            Message::MeterMod(m) => {
                out.put_u16(m.command);
                out.put_u16(m.flags);
                out.put_u32(m.meter_id);
                for b in &m.bands {
                    b.emit(out);
                }
            }
        }
    }

    /// `enum ofp_type` number.
    pub fn msg_type(&self) -> u8 {
        use msg_type as t;
        match self {
            Message::Hello(_) => t::HELLO,
            Message::Error(_) => t::ERROR,
            Message::EchoRequest(_) => t::ECHO_REQUEST,
            Message::EchoReply(_) => t::ECHO_REPLY,
            Message::Experimenter(_) => t::EXPERIMENTER,
            Message::FeaturesRequest => t::FEATURES_REQUEST,
            Message::FeaturesReply(_) => t::FEATURES_REPLY,
            Message::GetConfigRequest => t::GET_CONFIG_REQUEST,
            Message::GetConfigReply(_) => t::GET_CONFIG_REPLY,
            Message::SetConfig(_) => t::SET_CONFIG,
            Message::PacketIn(_) => t::PACKET_IN,
            Message::FlowRemoved(_) => t::FLOW_REMOVED,
            Message::PortStatus(_) => t::PORT_STATUS,
            Message::PacketOut(_) => t::PACKET_OUT,
            Message::FlowMod(_) => t::FLOW_MOD,
            Message::GroupMod(_) => t::GROUP_MOD,
            Message::PortMod(_) => t::PORT_MOD,
            Message::TableMod(_) => t::TABLE_MOD,
            Message::MultipartRequest(_) => t::MULTIPART_REQUEST,
            Message::MultipartReply(_) => t::MULTIPART_REPLY,
            Message::BarrierRequest => t::BARRIER_REQUEST,
            Message::BarrierReply => t::BARRIER_REPLY,
            Message::QueueGetConfigRequest(_) => t::QUEUE_GET_CONFIG_REQUEST,
            Message::QueueGetConfigReply(_) => t::QUEUE_GET_CONFIG_REPLY,
            Message::RoleRequest(_) => t::ROLE_REQUEST,
            Message::RoleReply(_) => t::ROLE_REPLY,
            Message::GetAsyncRequest => t::GET_ASYNC_REQUEST,
            Message::GetAsyncReply(_) => t::GET_ASYNC_REPLY,
            Message::SetAsync(_) => t::SET_ASYNC,
            Message::MeterMod(_) => t::METER_MOD,
        }
    }
}

/// Fuzzing oracle (wired into cargo-fuzz by the lead): frame and parse
/// `data`; if it parses, re-encode it and check that the encoding fits a
/// header length, frames as one message, parses back to the same xid and
/// value, and re-encodes to the same bytes.
///
/// This is the one function in the module that panics on purpose: a panic
/// here is a finding (a decoder panic, or a value the codec cannot round
/// trip).
pub fn fuzz_one(data: &[u8]) {
    let _ = frame(data);
    let _ = Header::parse(data);
    let Ok((xid, m)) = Message::parse(data) else { return };
    let bytes = match m.try_encode(xid) {
        Ok(b) => b,
        Err(e) => panic!("parsed message does not re-encode ({e}): {m:?}"),
    };
    assert_eq!(frame(&bytes), Some(Ok(bytes.len())), "framing of re-encoded {m:?}");
    match Message::parse(&bytes) {
        Ok((xid2, m2)) => {
            assert_eq!(xid2, xid);
            assert_eq!(m2, m, "round trip changed the value");
            assert_eq!(m2.encode(xid2), bytes, "encoding is not a fixpoint");
        }
        Err(e) => panic!("re-encoded message does not parse ({e}): {m:?}"),
    }
}

#[cfg(test)]
mod tests;
