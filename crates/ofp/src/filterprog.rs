//! Filter programs (issue 13): sluice's experimenter messages, match
//! fields and action for Oko-style eBPF programs attached to flow rules.
//!
//! # What
//! A controller loads an eBPF ELF object into the switch under a program
//! id ([`LoadFilterProg`], in fragments: an object may be larger than one
//! OpenFlow message), unloads it ([`UnloadFilterProg`]), writes and deletes
//! entries of its maps ([`UpdateMap`]) and reads a whole map back
//! ([`DumpMapRequest`] / [`DumpMapReply`], an experimenter multipart). A flow
//! rule runs a program as a match field ([`FILTER_PROG_FIELD`]: the rule
//! matches when the program returns non-zero) or a pcap-filter expression
//! the switch compiles ([`PCAP_FILTER_FIELD`]); its `send_maps` action
//! ([`SendMaps`]) sends chosen maps to the controller as an asynchronous
//! [`MapsReport`]. Everything is an experimenter object of sluice's id
//! ([`SLUICE_EXPERIMENTER_ID`], "SLIC"); the byte layouts, the errors and
//! a worked example are in `docs/EXPERIMENTER.md` ("Filter programs").
//! This module is the wire format and its checks only: loading, verifying
//! and running programs is the switch's business. The text syntax is
//! [`crate::ofctl::filterprog`] (`filter_prog=7`, `pcap_filter="tcp port
//! 80"`, `send_maps:7:conns`), printed by [`crate::print::fields`],
//! [`crate::print::actions`] and [`crate::print::filterprog`].
//!
//! # Basic design
//! Each message is a value type with `decode(body)` (the bytes after the
//! experimenter id and `exp_type`) and `encode()`; a value built by hand
//! is checked with `check()`, which applies exactly the rules `decode`
//! applies after reading, in the same order. Message decoders refuse with
//! a [`Refusal`]: either a standard OpenFlow error (framing:
//! `OFPBRC_BAD_LEN`) or one of sluice's experimenter error codes ([`err`])
//! with a human text, sent as an `OFPET_EXPERIMENTER` error
//! ([`error_msg`]). Match fields and the action use the standard
//! `OFPBMC_*` / `OFPBAC_*` codes only, like every other match field and
//! action.
//!
//! Message decoders check in two phases, and the first failure is the
//! answer: first *framing* (lengths, counts, reserved bits and padding,
//! each `OFPBRC_BAD_LEN`; an unknown `UPDATE_MAP` command is
//! `MAP_OP_FAILED` at the point its framing depends on it), then *meaning*:
//! the program id (`BAD_PROG_ID`), fragment bounds (`PROG_TOO_BIG`,
//! `BAD_FRAGMENT`), then map names (`BAD_MAP_NAME`).
//!
//! - **Program ids** are 1..=0xfffffffe; 0 and 0xffffffff are reserved.
//! - **Map names** are 1..=[`MAX_MAP_NAME`] bytes of `[A-Za-z0-9_.]`. In a
//!   message a `name_len` of 0 or above 64 is framing (`OFPBRC_BAD_LEN`), a
//!   character outside the set is `BAD_MAP_NAME`; in the action both are
//!   `OFPBAC_BAD_ARGUMENT`, and so is a name given twice (a report's maps
//!   are then told apart by name).
//! - **Maps** have `key_size >= 1` and `value_size >= 1` wherever a map
//!   block describes them (as in BPF hash and array maps), so every entry
//!   takes at least two bytes and a count can never make a decoder
//!   allocate more than its input.
//!
//! # Fragmentation
//! [`fragments`] cuts an object into [`LoadFilterProg`] messages in order;
//! [`Assembly`] (the switch's side) puts them back together: per program
//! id the fragments must arrive in order (offset = bytes so far, the same
//! total length), a fragment with offset 0 starts over, at most
//! [`MAX_ASSEMBLIES`] objects are in assembly at once, and any refused
//! fragment drops its program's partial object.
//!
//! # Invariants
//! - Decoding never panics, never reads out of bounds (all reads go
//!   through [`Reader`]) and allocates at most a constant factor of its
//!   input (counts are checked against the bytes present first).
//! - Decoding is exact: there is one encoding per value (reserved bits,
//!   zero fields and padding must be zero), so whatever a decoder accepts
//!   re-encodes to the same bytes, and `decode(encode(x)) == Ok(x)` for
//!   every `x` whose `check()` is `Ok` (property-tested below, fuzzed by
//!   `fuzz/fuzz_targets/filterprog.rs`).
//! - Every body a `decode` accepts fits one OpenFlow message
//!   ([`MAX_MSG_BODY`], [`MAX_MULTIPART_BODY`]), so its `to_message`
//!   encodes faithfully; [`split_report`], [`split_dump`] and
//!   [`fragments`] cut larger contents to fit.

use crate::action::Action;
use crate::consts::{ERROR_DATA_LEN, OFP_HEADER_LEN, SLUICE_EXPERIMENTER_ID};
use crate::error::{ErrorCode, Result};
use crate::message::{ErrorMsg, ExperimenterMsg, Message};
use crate::multipart::{
    MultipartExperimenter, MultipartReply, MultipartReplyBody, MultipartRequest,
    MultipartRequestBody, OFPMPF_REPLY_MORE,
};
use crate::oxm::{Oxm, MAX_EXPERIMENTER_PAYLOAD};
use crate::pof::action_data_len;
use crate::wire::{pad8, Put, Reader};
use core::fmt;
use std::borrow::Cow;

/// `exp_type`s of sluice's filter-program messages and multiparts.
pub mod exp_type {
    /// Controller → switch: one fragment of a program's ELF object.
    pub const LOAD_FILTER_PROG: u32 = 2;
    /// Controller → switch: remove a program.
    pub const UNLOAD_FILTER_PROG: u32 = 3;
    /// Controller → switch: insert, replace or delete map entries.
    pub const UPDATE_MAP: u32 = 4;
    /// Experimenter multipart: read a whole map.
    pub const DUMP_MAP: u32 = 5;
    /// Switch → controller, asynchronous: maps sent by `send_maps`.
    pub const MAPS_REPORT: u32 = 6;

    /// The name of a filter-program `exp_type`.
    pub fn name(t: u32) -> Option<&'static str> {
        Some(match t {
            LOAD_FILTER_PROG => "LOAD_FILTER_PROG",
            UNLOAD_FILTER_PROG => "UNLOAD_FILTER_PROG",
            UPDATE_MAP => "UPDATE_MAP",
            DUMP_MAP => "DUMP_MAP",
            MAPS_REPORT => "MAPS_REPORT",
            _ => return None,
        })
    }
}

/// The `exp_code`s of sluice's `OFPET_EXPERIMENTER` errors (experimenter
/// [`SLUICE_EXPERIMENTER_ID`]); names from [`err_name`].
pub mod err {
    /// No program of that id is loaded.
    pub const UNKNOWN_PROG: u16 = 0;
    /// A program of that id is already loaded.
    pub const PROG_EXISTS: u16 = 1;
    /// The program is still used by a flow rule.
    pub const PROG_IN_USE: u16 = 2;
    /// The ELF loader or the verifier refused the program.
    pub const PROG_REJECTED: u16 = 3;
    /// The object's total length is above [`super::MAX_OBJECT`].
    pub const PROG_TOO_BIG: u16 = 4;
    /// A fragment out of order, overlapping, empty or past the object.
    pub const BAD_FRAGMENT: u16 = 5;
    /// The program has no map of that name.
    pub const UNKNOWN_MAP: u16 = 6;
    /// Key or value size differ from the map's.
    pub const BAD_MAP_SIZES: u16 = 7;
    /// The map operation failed (map full, key absent, unknown command).
    pub const MAP_OP_FAILED: u16 = 8;
    /// The pcap-filter expression does not compile.
    pub const BAD_PCAP_FILTER: u16 = 9;
    /// Program id 0 or 0xffffffff.
    pub const BAD_PROG_ID: u16 = 10;
    /// A map name with characters outside `[A-Za-z0-9_.]`.
    pub const BAD_MAP_NAME: u16 = 11;
}

/// The spec-style name of an [`err`] code, e.g. `SLICFPC_PROG_REJECTED`,
/// or of another of sluice's experimenter error codes (12 is the live
/// trace's `SLICTR_BAD_TRACE`, [`crate::tracemsg::BAD_TRACE`]).
pub fn err_name(code: u16) -> Option<&'static str> {
    const NAMES: [&str; 14] = [
        "SLICFPC_UNKNOWN_PROG",
        "SLICFPC_PROG_EXISTS",
        "SLICFPC_PROG_IN_USE",
        "SLICFPC_PROG_REJECTED",
        "SLICFPC_PROG_TOO_BIG",
        "SLICFPC_BAD_FRAGMENT",
        "SLICFPC_UNKNOWN_MAP",
        "SLICFPC_BAD_MAP_SIZES",
        "SLICFPC_MAP_OP_FAILED",
        "SLICFPC_BAD_PCAP_FILTER",
        "SLICFPC_BAD_PROG_ID",
        "SLICFPC_BAD_MAP_NAME",
        "SLICTR_BAD_TRACE",
        "SLICCAP_BAD_CAPTURE",
    ];
    NAMES.get(usize::from(code)).copied()
}

/// The OXM field number of `filter_prog` (class `OFPXMC_EXPERIMENTER`,
/// experimenter [`SLUICE_EXPERIMENTER_ID`]; POF owns 0–15).
pub const FILTER_PROG_FIELD: u8 = 16;
/// The OXM field number of `pcap_filter`.
pub const PCAP_FILTER_FIELD: u8 = 17;
/// The action subtype of `send_maps` (POF owns 0–15).
pub const SEND_MAPS_SUBTYPE: u16 = 16;

/// Largest ELF object, in bytes.
pub const MAX_OBJECT: u32 = 4 << 20;
/// Longest map name, in bytes.
pub const MAX_MAP_NAME: usize = 64;
/// Most maps one `send_maps` names.
pub const MAX_SEND_MAPS: usize = 16;
/// Longest pcap-filter expression: the OXM's length byte counts the
/// 4-byte experimenter id too.
pub const MAX_PCAP_FILTER: usize = MAX_EXPERIMENTER_PAYLOAD;
/// Most objects in assembly at once in one [`Assembly`].
pub const MAX_ASSEMBLIES: usize = 8;

/// Largest OpenFlow message.
const MAX_MSG_LEN: usize = u16::MAX as usize;
/// Bytes of an `OFPT_EXPERIMENTER` message before its body: the OpenFlow
/// header, experimenter id and `exp_type`.
pub const MSG_HEADER_LEN: usize = OFP_HEADER_LEN + 8;
/// Largest message body (after `exp_type`).
pub const MAX_MSG_BODY: usize = MAX_MSG_LEN - MSG_HEADER_LEN;
/// Bytes of an experimenter multipart message before its body: the
/// OpenFlow header, the multipart header, experimenter id and `exp_type`.
pub const MULTIPART_HEADER_LEN: usize = OFP_HEADER_LEN + 8 + 8;
/// Largest experimenter multipart body (after `exp_type`).
pub const MAX_MULTIPART_BODY: usize = MAX_MSG_LEN - MULTIPART_HEADER_LEN;
/// Largest fragment: what one `LOAD_FILTER_PROG` message carries.
pub const MAX_FRAGMENT: usize = MAX_MSG_BODY - LOAD_HDR_LEN;

const BAD_LEN: ErrorCode = ErrorCode::BRC_BAD_LEN;
const LOAD_HDR_LEN: usize = 16;
const UNLOAD_LEN: usize = 8;
const UPDATE_HDR_LEN: usize = 16;
const REPORT_HDR_LEN: usize = 16;
const DUMP_REQ_HDR_LEN: usize = 8;
const DUMP_REPLY_HDR_LEN: usize = 8;
/// `LOAD_FILTER_PROG` flags and `MAPS_REPORT` flags: more follows.
const FLAG_MORE: u16 = 1;
const SUBTYPE_LEN: usize = 2;

// ---------------------------------------------------------------------------
// Refusals and experimenter errors

/// Why a message decoder refused: the `OFPT_ERROR` the switch answers with.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// A standard OpenFlow error (for framing: `OFPBRC_BAD_LEN`).
    Std(ErrorCode),
    /// One of sluice's experimenter errors: the [`err`] code and a human
    /// text for the controller's operator.
    Exp(u16, String),
}

/// Result of the message decoders.
pub type Decoded<T> = core::result::Result<T, Refusal>;

impl From<ErrorCode> for Refusal {
    fn from(e: ErrorCode) -> Refusal {
        Refusal::Std(e)
    }
}

impl Refusal {
    /// An experimenter refusal.
    pub fn exp(code: u16, text: impl Into<String>) -> Refusal {
        Refusal::Exp(code, text.into())
    }

    /// The experimenter code, if this is one.
    pub fn exp_code(&self) -> Option<u16> {
        match self {
            Refusal::Exp(c, _) => Some(*c),
            Refusal::Std(_) => None,
        }
    }

    /// The refusal as an [`ErrorCode`]: a standard one as it is, an
    /// experimenter one as type `OFPET_EXPERIMENTER` with its code (the
    /// text is lost; [`Refusal::to_error`] keeps it).
    pub fn error_code(&self) -> ErrorCode {
        match self {
            Refusal::Std(e) => *e,
            Refusal::Exp(c, _) => ErrorCode::new(crate::error::OFPET_EXPERIMENTER, *c),
        }
    }

    /// The `OFPT_ERROR` answering `request` (the offending message's bytes,
    /// of which the first [`ERROR_DATA_LEN`] are echoed).
    pub fn to_error(&self, request: &[u8]) -> Message {
        match self {
            Refusal::Std(code) => Message::Error(ErrorMsg::Standard {
                code: *code,
                data: request[..request.len().min(ERROR_DATA_LEN)].to_vec(),
            }),
            Refusal::Exp(code, text) => error_msg(*code, text, request),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Std(e) => write!(f, "{e}"),
            Refusal::Exp(code, text) => match err_name(*code) {
                Some(n) => write!(f, "{n}: {text}"),
                None => write!(f, "SLICFPC(code={code}): {text}"),
            },
        }
    }
}

impl std::error::Error for Refusal {}

/// Longest error text: the whole error message (16 bytes of headers, the
/// text, its NUL and 64 request bytes) fits 65535 bytes.
const MAX_ERROR_TEXT: usize = MAX_MSG_LEN - 16 - 1 - ERROR_DATA_LEN;

/// The `OFPET_EXPERIMENTER` error of sluice's id with `exp_code` `code`:
/// its data is `text` (cut at any NUL and to what fits a message, on a
/// character boundary), one NUL byte, and the first [`ERROR_DATA_LEN`]
/// bytes of the offending `request`.
pub fn error_msg(code: u16, text: &str, request: &[u8]) -> Message {
    let mut t = text.split('\0').next().unwrap_or("");
    let mut cut = t.len().min(MAX_ERROR_TEXT);
    while !t.is_char_boundary(cut) {
        cut -= 1;
    }
    t = &t[..cut];
    let req = &request[..request.len().min(ERROR_DATA_LEN)];
    let mut data = Vec::with_capacity(t.len() + 1 + req.len());
    data.put_slice(t.as_bytes());
    data.put_u8(0);
    data.put_slice(req);
    Message::Error(ErrorMsg::Experimenter {
        exp_type: code,
        experimenter: SLUICE_EXPERIMENTER_ID,
        data,
    })
}

/// Split the data of one of sluice's experimenter errors into its text
/// (invalid UTF-8 replaced) and the echoed request bytes. Data without a
/// NUL is all text.
pub fn error_text(data: &[u8]) -> (Cow<'_, str>, &[u8]) {
    match data.iter().position(|&b| b == 0) {
        Some(i) => (String::from_utf8_lossy(&data[..i]), &data[i + 1..]),
        None => (String::from_utf8_lossy(data), &[]),
    }
}

// ---------------------------------------------------------------------------
// Program ids and map names

/// Whether `id` may name a program (not 0, not 0xffffffff).
pub const fn prog_id_valid(id: u32) -> bool {
    id != 0 && id != u32::MAX
}

/// Whether `name` is a map name: 1..=[`MAX_MAP_NAME`] bytes of
/// `[A-Za-z0-9_.]`.
pub fn map_name_valid(name: &[u8]) -> bool {
    (1..=MAX_MAP_NAME).contains(&name.len()) && name.iter().all(|&b| name_byte(b))
}

fn name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'.'
}

fn check_prog_id(id: u32) -> Decoded<()> {
    if prog_id_valid(id) {
        Ok(())
    } else {
        Err(Refusal::exp(err::BAD_PROG_ID, format!("program id {id:#x} is reserved")))
    }
}

/// A name whose length framing already accepted: its characters.
fn check_name(name: &[u8]) -> Decoded<String> {
    if name.iter().all(|&b| name_byte(b)) {
        // All ASCII.
        Ok(name.iter().map(|&b| char::from(b)).collect())
    } else {
        Err(Refusal::exp(
            err::BAD_MAP_NAME,
            format!(
                "map name {:?} has characters outside [A-Za-z0-9_.]",
                String::from_utf8_lossy(name)
            ),
        ))
    }
}

fn name_len_ok(len: usize) -> bool {
    (1..=MAX_MAP_NAME).contains(&len)
}

/// A message's name field: `len` bytes, zero-padded to a multiple of 8.
fn read_name<'a>(r: &mut Reader<'a>, len: usize) -> Result<&'a [u8]> {
    let (name, pad) = r.bytes(pad8(len))?.split_at(len);
    zeros(pad)?;
    Ok(name)
}

fn put_name(out: &mut Vec<u8>, name: &str) {
    let start = out.len();
    out.put_slice(name.as_bytes());
    out.pad8_from(start);
}

/// `OFPBRC_BAD_LEN` unless every byte is zero.
fn zeros(b: &[u8]) -> Result<()> {
    if b.iter().all(|&x| x == 0) {
        Ok(())
    } else {
        Err(BAD_LEN)
    }
}

fn bad_len<T>() -> Decoded<T> {
    Err(Refusal::Std(BAD_LEN))
}

/// The `(key, value)` entries of `data` (a multiple of `key + value`
/// bytes).
fn split_entries(data: &[u8], key_size: usize, value_size: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let esz = key_size + value_size;
    if esz == 0 {
        return Vec::new();
    }
    data.chunks_exact(esz)
        .map(|c| {
            let (k, v) = c.split_at(key_size);
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

/// Whether every entry has exactly `key_size` and `value_size` bytes.
fn entries_sized(entries: &[(Vec<u8>, Vec<u8>)], key_size: u16, value_size: u16) -> bool {
    entries
        .iter()
        .all(|(k, v)| k.len() == usize::from(key_size) && v.len() == usize::from(value_size))
}

fn entries_len(entries: &[(Vec<u8>, Vec<u8>)]) -> usize {
    entries.iter().map(|(k, v)| k.len() + v.len()).sum()
}

fn put_entries(out: &mut Vec<u8>, entries: &[(Vec<u8>, Vec<u8>)]) {
    for (k, v) in entries {
        out.put_slice(k);
        out.put_slice(v);
    }
}

fn experimenter_msg(exp_type: u32, data: Vec<u8>) -> Message {
    Message::Experimenter(ExperimenterMsg { experimenter: SLUICE_EXPERIMENTER_ID, exp_type, data })
}

// ---------------------------------------------------------------------------
// LOAD_FILTER_PROG

/// `LOAD_FILTER_PROG` (controller → switch): `bytes` of the program's
/// ELF object from `offset`; `more` unless this fragment ends it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LoadFilterProg {
    pub prog_id: u32,
    pub more: bool,
    pub offset: u32,
    pub total_len: u32,
    pub bytes: Vec<u8>,
}

impl LoadFilterProg {
    /// Decode a body. Framing (`OFPBRC_BAD_LEN`): at least 16 bytes, at
    /// most [`MAX_MSG_BODY`], flag bits other than MORE and the zero field
    /// clear. Then [`LoadFilterProg::check`]'s rules.
    pub fn decode(body: &[u8]) -> Decoded<Self> {
        if body.len() > MAX_MSG_BODY {
            return bad_len();
        }
        let mut r = Reader::new(body, BAD_LEN);
        let prog_id = r.u32()?;
        let flags = r.u16()?;
        let zero = r.u16()?;
        let offset = r.u32()?;
        let total_len = r.u32()?;
        if flags & !FLAG_MORE != 0 || zero != 0 {
            return bad_len();
        }
        let more = flags & FLAG_MORE != 0;
        check_fragment(prog_id, more, offset, total_len, r.remaining())?;
        Ok(LoadFilterProg { prog_id, more, offset, total_len, bytes: r.rest().to_vec() })
    }

    /// The rules for a fragment, in order: at most [`MAX_FRAGMENT`] bytes
    /// (`OFPBRC_BAD_LEN`); the program id (`BAD_PROG_ID`); `total_len`
    /// at most [`MAX_OBJECT`] (`PROG_TOO_BIG`); then `BAD_FRAGMENT`:
    /// `total_len` 0, no bytes, bytes past `total_len`, a last fragment
    /// (no MORE) that does not end at `total_len`, or one with MORE that
    /// does (nothing could follow it).
    pub fn check(&self) -> Decoded<()> {
        if self.bytes.len() > MAX_FRAGMENT {
            return bad_len();
        }
        check_fragment(self.prog_id, self.more, self.offset, self.total_len, self.bytes.len())
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(LOAD_HDR_LEN + self.bytes.len());
        out.put_u32(self.prog_id);
        out.put_u16(if self.more { FLAG_MORE } else { 0 });
        out.put_u16(0);
        out.put_u32(self.offset);
        out.put_u32(self.total_len);
        out.put_slice(&self.bytes);
        out
    }

    /// The `OFPT_EXPERIMENTER` message carrying this fragment.
    pub fn to_message(&self) -> Message {
        experimenter_msg(exp_type::LOAD_FILTER_PROG, self.encode())
    }

    /// The offset just past this fragment.
    pub fn end(&self) -> u64 {
        u64::from(self.offset) + self.bytes.len() as u64
    }
}

fn check_fragment(prog_id: u32, more: bool, offset: u32, total_len: u32, n: usize) -> Decoded<()> {
    check_prog_id(prog_id)?;
    if total_len > MAX_OBJECT {
        return Err(Refusal::exp(
            err::PROG_TOO_BIG,
            format!("object of {total_len} bytes; at most {MAX_OBJECT}"),
        ));
    }
    let bad = |text: String| Err(Refusal::exp(err::BAD_FRAGMENT, text));
    let end = u64::from(offset) + n as u64;
    if total_len == 0 {
        return bad("total_len 0: an object has at least one byte".into());
    }
    if n == 0 {
        return bad(format!("empty fragment at offset {offset}"));
    }
    if end > u64::from(total_len) {
        return bad(format!("fragment {offset}..{end} runs past the object's {total_len} bytes"));
    }
    if !more && end != u64::from(total_len) {
        return bad(format!("last fragment ends at {end}, the object is {total_len} bytes"));
    }
    if more && end == u64::from(total_len) {
        return bad(format!("fragment ends the {total_len}-byte object but has MORE set"));
    }
    Ok(())
}

/// Cut `object` into `LOAD_FILTER_PROG` fragments of at most
/// `max_fragment` bytes each (clamped to 1..=[`MAX_FRAGMENT`], so every
/// message fits 65535 bytes), in order, MORE on all but the last. Every
/// fragment passes [`LoadFilterProg::check`]; refused up front are a
/// reserved program id (`BAD_PROG_ID`), an empty object (`BAD_FRAGMENT`)
/// and one above [`MAX_OBJECT`] (`PROG_TOO_BIG`).
pub fn fragments(prog_id: u32, object: &[u8], max_fragment: usize) -> Decoded<Vec<LoadFilterProg>> {
    check_prog_id(prog_id)?;
    let total_len = u32::try_from(object.len()).unwrap_or(u32::MAX);
    if total_len > MAX_OBJECT {
        return Err(Refusal::exp(
            err::PROG_TOO_BIG,
            format!("object of {} bytes; at most {MAX_OBJECT}", object.len()),
        ));
    }
    if object.is_empty() {
        return Err(Refusal::exp(err::BAD_FRAGMENT, "empty object"));
    }
    let step = max_fragment.clamp(1, MAX_FRAGMENT);
    // `object.len() <= MAX_OBJECT`, so offsets fit u32.
    Ok(object
        .chunks(step)
        .enumerate()
        .map(|(i, c)| {
            let offset = (i * step) as u32;
            LoadFilterProg {
                prog_id,
                more: offset as usize + c.len() < object.len(),
                offset,
                total_len,
                bytes: c.to_vec(),
            }
        })
        .collect())
}

/// Reassembly of fragmented objects (the switch's side of
/// `LOAD_FILTER_PROG`).
///
/// Rules, per program id: the first fragment has offset 0; each next one
/// starts where the bytes so far end and repeats the same `total_len`; a
/// fragment with offset 0 drops whatever was in assembly for its id and
/// starts over; the fragment without MORE completes the object. At most
/// [`MAX_ASSEMBLIES`] objects are in assembly at once (a complete object
/// in one fragment does not count). Every fragment is checked
/// ([`LoadFilterProg::check`]); any refusal drops that program's partial
/// object. Memory: at most [`MAX_ASSEMBLIES`] × [`MAX_OBJECT`] bytes.
#[derive(Clone, Debug, Default)]
pub struct Assembly {
    partial: Vec<Partial>,
}

#[derive(Clone, Debug)]
struct Partial {
    prog_id: u32,
    total_len: u32,
    bytes: Vec<u8>,
}

impl Assembly {
    pub fn new() -> Self {
        Self::default()
    }

    /// Take one fragment: `Some((prog_id, object))` when it completes an
    /// object, `None` while more are expected, or the refusal to send
    /// (the program's partial object is then dropped).
    pub fn push(&mut self, f: &LoadFilterProg) -> Decoded<Option<(u32, Vec<u8>)>> {
        let at = self.partial.iter().position(|p| p.prog_id == f.prog_id);
        let r = self.take(at, f);
        if r.is_err() {
            if let Some(i) = self.partial.iter().position(|p| p.prog_id == f.prog_id) {
                self.partial.swap_remove(i);
            }
        }
        r
    }

    fn take(&mut self, at: Option<usize>, f: &LoadFilterProg) -> Decoded<Option<(u32, Vec<u8>)>> {
        f.check()?;
        let bad = |text: String| Err(Refusal::exp(err::BAD_FRAGMENT, text));
        if f.offset == 0 {
            if let Some(i) = at {
                self.partial.swap_remove(i);
            }
            if !f.more {
                return Ok(Some((f.prog_id, f.bytes.clone())));
            }
            if self.partial.len() >= MAX_ASSEMBLIES {
                return bad(format!(
                    "{MAX_ASSEMBLIES} objects are already in assembly; finish one first"
                ));
            }
            self.partial.push(Partial {
                prog_id: f.prog_id,
                total_len: f.total_len,
                bytes: f.bytes.clone(),
            });
            return Ok(None);
        }
        let Some(i) = at else {
            return bad(format!(
                "no object of program {} in assembly: its first fragment has offset 0",
                f.prog_id
            ));
        };
        let p = &mut self.partial[i];
        if f.total_len != p.total_len {
            return bad(format!("total_len {} changed from {}", f.total_len, p.total_len));
        }
        if f.offset as usize != p.bytes.len() {
            return bad(format!("fragment at offset {}, expected {}", f.offset, p.bytes.len()));
        }
        // `check` bounds the fragment by `total_len <= MAX_OBJECT`.
        p.bytes.extend_from_slice(&f.bytes);
        if f.more {
            return Ok(None);
        }
        let p = self.partial.swap_remove(i);
        Ok(Some((p.prog_id, p.bytes)))
    }

    /// Drop the partial object of `prog_id`; whether there was one.
    pub fn abandon(&mut self, prog_id: u32) -> bool {
        match self.partial.iter().position(|p| p.prog_id == prog_id) {
            Some(i) => {
                self.partial.swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// Objects in assembly.
    pub fn len(&self) -> usize {
        self.partial.len()
    }

    pub fn is_empty(&self) -> bool {
        self.partial.is_empty()
    }

    /// Bytes held over all partial objects.
    pub fn held_bytes(&self) -> usize {
        self.partial.iter().map(|p| p.bytes.len()).sum()
    }
}

// ---------------------------------------------------------------------------
// UNLOAD_FILTER_PROG

/// `UNLOAD_FILTER_PROG` (controller → switch).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UnloadFilterProg {
    pub prog_id: u32,
}

impl UnloadFilterProg {
    /// Decode a body: exactly 8 bytes with the last four zero
    /// (`OFPBRC_BAD_LEN`), then the program id (`BAD_PROG_ID`).
    pub fn decode(body: &[u8]) -> Decoded<Self> {
        if body.len() != UNLOAD_LEN {
            return bad_len();
        }
        let mut r = Reader::new(body, BAD_LEN);
        let prog_id = r.u32()?;
        if r.u32()? != 0 {
            return bad_len();
        }
        check_prog_id(prog_id)?;
        Ok(UnloadFilterProg { prog_id })
    }

    /// The program id (`BAD_PROG_ID`).
    pub fn check(&self) -> Decoded<()> {
        check_prog_id(self.prog_id)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(UNLOAD_LEN);
        out.put_u32(self.prog_id);
        out.put_u32(0);
        out
    }

    pub fn to_message(&self) -> Message {
        experimenter_msg(exp_type::UNLOAD_FILTER_PROG, self.encode())
    }
}

// ---------------------------------------------------------------------------
// UPDATE_MAP

/// `UPDATE_MAP` (controller → switch): insert or replace (`delete ==
/// false`) or delete entries of a program's map. Values are empty for a
/// delete.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UpdateMap {
    pub prog_id: u32,
    pub delete: bool,
    pub map: String,
    pub key_size: u16,
    pub value_size: u16,
    pub entries: Vec<(Vec<u8>, Vec<u8>)>,
}

/// `UPDATE_MAP` commands.
const CMD_UPDATE: u8 = 0;
const CMD_DELETE: u8 = 1;

impl UpdateMap {
    /// Decode a body, in order: the 16-byte header, at most
    /// [`MAX_MSG_BODY`]; zero field, `name_len` 1..=64, `key_size` and
    /// `count` at least 1 (`OFPBRC_BAD_LEN`); the command, 0 or 1
    /// (`MAP_OP_FAILED`); `value_size` 0 for a delete, at least 1 for an
    /// update; the body exactly header + padded name + `count × (key_size
    /// + value_size)`, the name's padding zero (`OFPBRC_BAD_LEN`); the
    /// program id (`BAD_PROG_ID`); the name's characters (`BAD_MAP_NAME`).
    pub fn decode(body: &[u8]) -> Decoded<Self> {
        if body.len() > MAX_MSG_BODY {
            return bad_len();
        }
        let mut r = Reader::new(body, BAD_LEN);
        let prog_id = r.u32()?;
        let command = r.u8()?;
        let name_len = usize::from(r.u8()?);
        let key_size = r.u16()?;
        let value_size = r.u16()?;
        let count = r.u16()?;
        let zero = r.u32()?;
        if zero != 0 || !name_len_ok(name_len) || key_size == 0 || count == 0 {
            return bad_len();
        }
        let delete = match command {
            CMD_UPDATE => false,
            CMD_DELETE => true,
            c => {
                return Err(Refusal::exp(
                    err::MAP_OP_FAILED,
                    format!("unknown UPDATE_MAP command {c} (0 update, 1 delete)"),
                ))
            }
        };
        if delete != (value_size == 0) {
            return bad_len();
        }
        let name = read_name(&mut r, name_len)?;
        let (ks, vs) = (usize::from(key_size), usize::from(value_size));
        if r.remaining() != usize::from(count) * (ks + vs) {
            return bad_len();
        }
        check_prog_id(prog_id)?;
        let map = check_name(name)?;
        let entries = split_entries(r.rest(), ks, vs);
        Ok(UpdateMap { prog_id, delete, map, key_size, value_size, entries })
    }

    /// The rules [`UpdateMap::decode`] applies, for a value built by hand:
    /// name length, sizes, 1..=65535 entries of exactly those sizes, the
    /// body within one message (`OFPBRC_BAD_LEN`); the program id; the
    /// name's characters.
    pub fn check(&self) -> Decoded<()> {
        let sizes_ok = self.key_size >= 1 && self.delete == (self.value_size == 0);
        if !name_len_ok(self.map.len())
            || !sizes_ok
            || self.entries.is_empty()
            || self.entries.len() > usize::from(u16::MAX)
            || !entries_sized(&self.entries, self.key_size, self.value_size)
            || self.wire_len() > MAX_MSG_BODY
        {
            return bad_len();
        }
        check_prog_id(self.prog_id)?;
        check_name(self.map.as_bytes()).map(drop)
    }

    /// Length of the encoded body.
    pub fn wire_len(&self) -> usize {
        UPDATE_HDR_LEN + pad8(self.map.len()) + entries_len(&self.entries)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.wire_len());
        out.put_u32(self.prog_id);
        out.put_u8(if self.delete { CMD_DELETE } else { CMD_UPDATE });
        out.put_u8(self.map.len() as u8);
        out.put_u16(self.key_size);
        out.put_u16(self.value_size);
        out.put_u16(self.entries.len() as u16);
        out.put_u32(0);
        put_name(&mut out, &self.map);
        put_entries(&mut out, &self.entries);
        out
    }

    pub fn to_message(&self) -> Message {
        experimenter_msg(exp_type::UPDATE_MAP, self.encode())
    }
}

// ---------------------------------------------------------------------------
// Map blocks, MAPS_REPORT

/// A map's name, sizes and entries: the unit of `MAPS_REPORT` and
/// `DUMP_MAP` replies.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MapBlock {
    pub name: String,
    pub key_size: u16,
    pub value_size: u16,
    pub entries: Vec<(Vec<u8>, Vec<u8>)>,
}

impl MapBlock {
    /// The fixed part before the name.
    pub const HEADER_LEN: usize = 16;

    /// Encoded length: header, padded name, padded entries.
    pub fn wire_len(&self) -> usize {
        Self::HEADER_LEN + pad8(self.name.len()) + pad8(entries_len(&self.entries))
    }

    /// Framing of a block built by hand (`OFPBRC_BAD_LEN`): name length,
    /// sizes at least 1, entries of exactly those sizes and a count that
    /// fits 32 bits.
    fn framing_ok(&self) -> bool {
        name_len_ok(self.name.len())
            && self.key_size >= 1
            && self.value_size >= 1
            && u32::try_from(self.entries.len()).is_ok()
            && entries_sized(&self.entries, self.key_size, self.value_size)
    }

    /// Read one block's framing; the name's characters are checked by the
    /// caller, after its own framing.
    fn read<'a>(r: &mut Reader<'a>) -> Result<(&'a [u8], MapBlock)> {
        let name_len = usize::from(r.u8()?);
        let zero1 = r.u8()?;
        let key_size = r.u16()?;
        let value_size = r.u16()?;
        let zero2 = r.u16()?;
        let count = r.u32()?;
        let zero3 = r.u32()?;
        if zero1 != 0 || zero2 != 0 || zero3 != 0 {
            return Err(BAD_LEN);
        }
        if !name_len_ok(name_len) || key_size == 0 || value_size == 0 {
            return Err(BAD_LEN);
        }
        let name = read_name(r, name_len)?;
        let (ks, vs) = (usize::from(key_size), usize::from(value_size));
        // Before allocating: the entries must be there.
        let data_len = u64::from(count) * (ks + vs) as u64;
        if data_len > r.remaining() as u64 {
            return Err(BAD_LEN);
        }
        let data_len = data_len as usize;
        let (data, pad) = r.bytes(pad8(data_len))?.split_at(data_len);
        zeros(pad)?;
        let entries = split_entries(data, ks, vs);
        Ok((name, MapBlock { name: String::new(), key_size, value_size, entries }))
    }

    fn put(&self, out: &mut Vec<u8>) {
        out.put_u8(self.name.len() as u8);
        out.put_u8(0);
        out.put_u16(self.key_size);
        out.put_u16(self.value_size);
        out.put_u16(0);
        out.put_u32(self.entries.len() as u32);
        out.put_u32(0);
        put_name(out, &self.name);
        let start = out.len();
        put_entries(out, &self.entries);
        out.pad8_from(start);
    }
}

/// Blocks read by framing, then the program id, then every name.
fn finish_blocks(prog_id: u32, raw: Vec<(&[u8], MapBlock)>) -> Decoded<Vec<MapBlock>> {
    check_prog_id(prog_id)?;
    raw.into_iter()
        .map(|(name, mut b)| {
            b.name = check_name(name)?;
            Ok(b)
        })
        .collect()
}

/// `MAPS_REPORT` (switch → controller, asynchronous): maps a rule's
/// `send_maps` action sent. A report too big for one message continues
/// in the next `MAPS_REPORT` of the same xid (`more` on all but the
/// last); a map cut there continues as the next message's first block.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MapsReport {
    pub prog_id: u32,
    /// The table of the rule whose action fired.
    pub table_id: u8,
    /// The cookie of that rule.
    pub cookie: u64,
    pub more: bool,
    pub maps: Vec<MapBlock>,
}

impl MapsReport {
    /// Decode a body, in order (`OFPBRC_BAD_LEN` until the program id): at
    /// most [`MAX_MSG_BODY`] bytes, the 16-byte header, flag bits other
    /// than MORE clear, `n_maps` blocks each framed as documented (zero
    /// fields, `name_len` 1..=64, sizes at least 1, zero padding), nothing
    /// after them; the program id (`BAD_PROG_ID`); the names
    /// (`BAD_MAP_NAME`).
    pub fn decode(body: &[u8]) -> Decoded<Self> {
        if body.len() > MAX_MSG_BODY {
            return bad_len();
        }
        let mut r = Reader::new(body, BAD_LEN);
        let prog_id = r.u32()?;
        let table_id = r.u8()?;
        let flags = r.u8()?;
        let n_maps = r.u16()?;
        let cookie = r.u64()?;
        if u16::from(flags) & !FLAG_MORE != 0 {
            return bad_len();
        }
        let cap = usize::from(n_maps).min(r.remaining() / MapBlock::HEADER_LEN);
        let mut raw = Vec::with_capacity(cap);
        for _ in 0..n_maps {
            raw.push(MapBlock::read(&mut r)?);
        }
        if !r.is_empty() {
            return bad_len();
        }
        let maps = finish_blocks(prog_id, raw)?;
        Ok(MapsReport { prog_id, table_id, cookie, more: u16::from(flags) & FLAG_MORE != 0, maps })
    }

    /// The rules [`MapsReport::decode`] applies, for a value built by hand.
    pub fn check(&self) -> Decoded<()> {
        if self.maps.len() > usize::from(u16::MAX)
            || !self.maps.iter().all(MapBlock::framing_ok)
            || self.wire_len() > MAX_MSG_BODY
        {
            return bad_len();
        }
        check_prog_id(self.prog_id)?;
        self.maps.iter().try_for_each(|b| check_name(b.name.as_bytes()).map(drop))
    }

    /// Length of the encoded body.
    pub fn wire_len(&self) -> usize {
        REPORT_HDR_LEN + self.maps.iter().map(MapBlock::wire_len).sum::<usize>()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.wire_len());
        out.put_u32(self.prog_id);
        out.put_u8(self.table_id);
        out.put_u8(if self.more { FLAG_MORE as u8 } else { 0 });
        out.put_u16(self.maps.len() as u16);
        out.put_u64(self.cookie);
        for b in &self.maps {
            b.put(&mut out);
        }
        out
    }

    pub fn to_message(&self) -> Message {
        experimenter_msg(exp_type::MAPS_REPORT, self.encode())
    }
}

/// Pack `maps` into groups of blocks whose blocks take at most `budget`
/// bytes per group, cutting a map's entries where needed. Every group
/// holds at least one block piece; a group exceeds `budget` only when it
/// holds a single block with at most one entry that alone does not fit.
/// At most 65535 blocks per group (`n_maps` is 16 bits).
fn pack(maps: Vec<MapBlock>, budget: usize) -> Vec<Vec<MapBlock>> {
    let mut groups: Vec<Vec<MapBlock>> = Vec::new();
    let mut cur: Vec<MapBlock> = Vec::new();
    let mut used = 0usize;
    let flush = |groups: &mut Vec<Vec<MapBlock>>, cur: &mut Vec<MapBlock>, used: &mut usize| {
        groups.push(std::mem::take(cur));
        *used = 0;
    };
    for MapBlock { name, key_size, value_size, entries } in maps {
        let head = MapBlock::HEADER_LEN + pad8(name.len());
        let empty_map = entries.is_empty();
        let mut piece = MapBlock { name, key_size, value_size, entries: Vec::new() };
        let mut data = 0usize;
        for e in entries {
            let elen = e.0.len() + e.1.len();
            loop {
                if cur.len() == usize::from(u16::MAX) {
                    flush(&mut groups, &mut cur, &mut used);
                }
                let fits = used + head + pad8(data + elen) <= budget;
                if fits || (cur.is_empty() && piece.entries.is_empty()) {
                    piece.entries.push(e);
                    data += elen;
                    break;
                }
                if !piece.entries.is_empty() {
                    let next = MapBlock {
                        name: piece.name.clone(),
                        key_size: piece.key_size,
                        value_size: piece.value_size,
                        entries: Vec::new(),
                    };
                    cur.push(std::mem::replace(&mut piece, next));
                    data = 0;
                }
                flush(&mut groups, &mut cur, &mut used);
            }
        }
        if empty_map || !piece.entries.is_empty() {
            if cur.len() == usize::from(u16::MAX) || (!cur.is_empty() && used + head > budget) {
                flush(&mut groups, &mut cur, &mut used);
            }
            used += head + pad8(data);
            cur.push(piece);
        }
    }
    if !cur.is_empty() || groups.is_empty() {
        groups.push(cur);
    }
    groups
}

/// Split a report of `maps` into `MAPS_REPORT`s whose whole messages
/// (headers included) are at most `max_len` bytes (clamped to 65535),
/// cutting maps between entries where needed; `more` on all but the
/// last. Nothing is lost or reordered: [`join_blocks`] over the messages'
/// maps in order gives `maps` back (when no two neighbouring maps share a
/// name). A message exceeds `max_len` only when one entry with its
/// headers does not fit it; it then carries that entry alone. No maps: one
/// empty report.
pub fn split_report(
    prog_id: u32,
    table_id: u8,
    cookie: u64,
    maps: Vec<MapBlock>,
    max_len: usize,
) -> Vec<MapsReport> {
    let budget = max_len.min(MAX_MSG_LEN).saturating_sub(MSG_HEADER_LEN + REPORT_HDR_LEN);
    let groups = pack(maps, budget);
    let n = groups.len();
    groups
        .into_iter()
        .enumerate()
        .map(|(i, maps)| MapsReport { prog_id, table_id, cookie, more: i + 1 < n, maps })
        .collect()
}

/// Join neighbouring blocks of the same map (name and sizes) into one:
/// the inverse of the cutting [`split_report`] and [`split_dump`] do.
pub fn join_blocks(blocks: impl IntoIterator<Item = MapBlock>) -> Vec<MapBlock> {
    let mut out: Vec<MapBlock> = Vec::new();
    for b in blocks {
        match out.last_mut() {
            Some(last)
                if last.name == b.name
                    && last.key_size == b.key_size
                    && last.value_size == b.value_size =>
            {
                last.entries.extend(b.entries)
            }
            _ => out.push(b),
        }
    }
    out
}

// ---------------------------------------------------------------------------
// DUMP_MAP

/// `DUMP_MAP` multipart request: the whole of one map.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DumpMapRequest {
    pub prog_id: u32,
    pub map: String,
}

impl DumpMapRequest {
    /// Decode a body, in order: the 8-byte header, the zero bytes,
    /// `name_len` 1..=64, the body exactly 8 + the padded name, its
    /// padding zero (`OFPBRC_BAD_LEN`); the program id (`BAD_PROG_ID`);
    /// the name (`BAD_MAP_NAME`).
    pub fn decode(body: &[u8]) -> Decoded<Self> {
        let mut r = Reader::new(body, BAD_LEN);
        let prog_id = r.u32()?;
        let name_len = usize::from(r.u8()?);
        zeros(r.bytes(3)?)?;
        if !name_len_ok(name_len) || r.remaining() != pad8(name_len) {
            return bad_len();
        }
        let name = read_name(&mut r, name_len)?;
        check_prog_id(prog_id)?;
        Ok(DumpMapRequest { prog_id, map: check_name(name)? })
    }

    /// The rules [`DumpMapRequest::decode`] applies, for a value built by
    /// hand.
    pub fn check(&self) -> Decoded<()> {
        if !name_len_ok(self.map.len()) {
            return bad_len();
        }
        check_prog_id(self.prog_id)?;
        check_name(self.map.as_bytes()).map(drop)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(DUMP_REQ_HDR_LEN + pad8(self.map.len()));
        out.put_u32(self.prog_id);
        out.put_u8(self.map.len() as u8);
        out.put_zeros(3);
        put_name(&mut out, &self.map);
        out
    }

    /// `None` unless sluice's `DUMP_MAP`; else the decoded request.
    pub fn from_multipart(m: &MultipartExperimenter) -> Option<Decoded<Self>> {
        is_dump(m).then(|| Self::decode(&m.data))
    }

    pub fn to_multipart(&self) -> MultipartExperimenter {
        dump_multipart(self.encode())
    }

    /// The `OFPT_MULTIPART_REQUEST` carrying it.
    pub fn to_message(&self) -> Message {
        Message::MultipartRequest(MultipartRequest {
            flags: 0,
            body: MultipartRequestBody::Experimenter(self.to_multipart()),
        })
    }
}

fn is_dump(m: &MultipartExperimenter) -> bool {
    m.experimenter == SLUICE_EXPERIMENTER_ID && m.exp_type == exp_type::DUMP_MAP
}

fn dump_multipart(data: Vec<u8>) -> MultipartExperimenter {
    MultipartExperimenter {
        experimenter: SLUICE_EXPERIMENTER_ID,
        exp_type: exp_type::DUMP_MAP,
        data,
    }
}

/// `DUMP_MAP` multipart reply: the map, or (in all replies but the last,
/// which carry `OFPMPF_REPLY_MORE`) a run of its entries.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DumpMapReply {
    pub prog_id: u32,
    pub map: MapBlock,
}

impl DumpMapReply {
    /// Decode a body, in order: at most [`MAX_MULTIPART_BODY`] bytes, the
    /// 8-byte header with its zero field, one block framed as for
    /// `MAPS_REPORT`, nothing after it (`OFPBRC_BAD_LEN`); the program id
    /// (`BAD_PROG_ID`); the name (`BAD_MAP_NAME`).
    pub fn decode(body: &[u8]) -> Decoded<Self> {
        if body.len() > MAX_MULTIPART_BODY {
            return bad_len();
        }
        let mut r = Reader::new(body, BAD_LEN);
        let (prog_id, raw) = Self::read(&mut r)?;
        if !r.is_empty() {
            return bad_len();
        }
        Self::finish(prog_id, raw)
    }

    /// Decode one or more replies back to back (what multipart reassembly
    /// makes of a split dump: the bodies concatenated). Each reply as in
    /// [`DumpMapReply::decode`] but for the overall size limit; framing of
    /// all of them is checked before any program id or name.
    pub fn decode_all(data: &[u8]) -> Decoded<Vec<Self>> {
        let mut r = Reader::new(data, BAD_LEN);
        let mut raw = Vec::new();
        loop {
            // Each pass consumes at least 24 bytes or fails.
            raw.push(Self::read(&mut r)?);
            if r.is_empty() {
                break;
            }
        }
        raw.into_iter().map(|(prog_id, raw)| Self::finish(prog_id, raw)).collect()
    }

    fn read<'a>(r: &mut Reader<'a>) -> Result<(u32, (&'a [u8], MapBlock))> {
        let prog_id = r.u32()?;
        if r.u32()? != 0 {
            return Err(BAD_LEN);
        }
        Ok((prog_id, MapBlock::read(r)?))
    }

    fn finish(prog_id: u32, (name, mut map): (&[u8], MapBlock)) -> Decoded<Self> {
        check_prog_id(prog_id)?;
        map.name = check_name(name)?;
        Ok(DumpMapReply { prog_id, map })
    }

    /// The rules [`DumpMapReply::decode`] applies, for a value built by
    /// hand.
    pub fn check(&self) -> Decoded<()> {
        if !self.map.framing_ok() || self.wire_len() > MAX_MULTIPART_BODY {
            return bad_len();
        }
        check_prog_id(self.prog_id)?;
        check_name(self.map.name.as_bytes()).map(drop)
    }

    /// Length of the encoded body.
    pub fn wire_len(&self) -> usize {
        DUMP_REPLY_HDR_LEN + self.map.wire_len()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.wire_len());
        out.put_u32(self.prog_id);
        out.put_u32(0);
        self.map.put(&mut out);
        out
    }

    /// `None` unless sluice's `DUMP_MAP`; else the decoded replies
    /// ([`DumpMapReply::decode_all`]: one, or several reassembled).
    pub fn from_multipart(m: &MultipartExperimenter) -> Option<Decoded<Vec<Self>>> {
        is_dump(m).then(|| Self::decode_all(&m.data))
    }

    pub fn to_multipart(&self) -> MultipartExperimenter {
        dump_multipart(self.encode())
    }

    /// The `OFPT_MULTIPART_REPLY` carrying it, `OFPMPF_REPLY_MORE` if
    /// `more`.
    pub fn to_message(&self, more: bool) -> Message {
        Message::MultipartReply(MultipartReply {
            flags: if more { OFPMPF_REPLY_MORE } else { 0 },
            body: MultipartReplyBody::Experimenter(self.to_multipart()),
        })
    }
}

/// Split a dump of `block` into replies whose bodies are at most
/// `max_body` bytes each (clamped to [`MAX_MULTIPART_BODY`]), cutting
/// between entries; the caller sets `OFPMPF_REPLY_MORE` on all but the
/// last. [`join_blocks`] over the replies' maps gives `block` back. A
/// reply exceeds `max_body` only when one entry with the headers does not
/// fit it; it then carries that entry alone. An empty map: one reply.
pub fn split_dump(prog_id: u32, block: MapBlock, max_body: usize) -> Vec<DumpMapReply> {
    let budget = max_body.min(MAX_MULTIPART_BODY).saturating_sub(DUMP_REPLY_HDR_LEN);
    // One map: `pack` closes a piece only when it starts a new group.
    pack(vec![block], budget)
        .into_iter()
        .flatten()
        .map(|map| DumpMapReply { prog_id, map })
        .collect()
}

// ---------------------------------------------------------------------------
// Message dispatch

/// One of sluice's filter-program `OFPT_EXPERIMENTER` messages.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FilterMsg {
    Load(LoadFilterProg),
    Unload(UnloadFilterProg),
    UpdateMap(UpdateMap),
    MapsReport(MapsReport),
}

impl FilterMsg {
    /// `None` unless sluice's id and `exp_type` 2, 3, 4 or 6; else the
    /// decoded message or the refusal.
    pub fn from_experimenter(m: &ExperimenterMsg) -> Option<Decoded<FilterMsg>> {
        if m.experimenter != SLUICE_EXPERIMENTER_ID {
            return None;
        }
        let d = &m.data;
        Some(match m.exp_type {
            exp_type::LOAD_FILTER_PROG => LoadFilterProg::decode(d).map(FilterMsg::Load),
            exp_type::UNLOAD_FILTER_PROG => UnloadFilterProg::decode(d).map(FilterMsg::Unload),
            exp_type::UPDATE_MAP => UpdateMap::decode(d).map(FilterMsg::UpdateMap),
            exp_type::MAPS_REPORT => MapsReport::decode(d).map(FilterMsg::MapsReport),
            _ => return None,
        })
    }

    pub fn exp_type(&self) -> u32 {
        match self {
            FilterMsg::Load(_) => exp_type::LOAD_FILTER_PROG,
            FilterMsg::Unload(_) => exp_type::UNLOAD_FILTER_PROG,
            FilterMsg::UpdateMap(_) => exp_type::UPDATE_MAP,
            FilterMsg::MapsReport(_) => exp_type::MAPS_REPORT,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        match self {
            FilterMsg::Load(m) => m.encode(),
            FilterMsg::Unload(m) => m.encode(),
            FilterMsg::UpdateMap(m) => m.encode(),
            FilterMsg::MapsReport(m) => m.encode(),
        }
    }

    pub fn to_message(&self) -> Message {
        experimenter_msg(self.exp_type(), self.encode())
    }
}

// ---------------------------------------------------------------------------
// OXM match fields

/// Decode an OXM: `None` unless it is sluice's `filter_prog` field, else
/// the program id or the error: a mask (`OFPBMC_BAD_MASK`), a payload
/// other than 4 bytes (`OFPBMC_BAD_LEN`), a reserved id
/// (`OFPBMC_BAD_VALUE`).
pub fn filter_prog_from_oxm(o: &Oxm) -> Option<Result<u32>> {
    let Oxm::Experimenter {
        experimenter: SLUICE_EXPERIMENTER_ID,
        field: FILTER_PROG_FIELD,
        has_mask,
        payload,
    } = o
    else {
        return None;
    };
    Some((|| {
        if *has_mask {
            return Err(ErrorCode::BMC_BAD_MASK);
        }
        let b: [u8; 4] = payload.as_slice().try_into().map_err(|_| ErrorCode::BMC_BAD_LEN)?;
        let id = u32::from_be_bytes(b);
        if !prog_id_valid(id) {
            return Err(ErrorCode::BMC_BAD_VALUE);
        }
        Ok(id)
    })())
}

/// The `filter_prog` OXM for program `id`.
pub fn filter_prog_oxm(id: u32) -> Oxm {
    Oxm::Experimenter {
        experimenter: SLUICE_EXPERIMENTER_ID,
        field: FILTER_PROG_FIELD,
        has_mask: false,
        payload: id.to_be_bytes().to_vec(),
    }
}

/// Decode an OXM: `None` unless it is sluice's `pcap_filter` field, else
/// the expression or the error: a mask (`OFPBMC_BAD_MASK`), then
/// [`check_pcap_filter`]'s.
pub fn pcap_filter_from_oxm(o: &Oxm) -> Option<Result<String>> {
    let Oxm::Experimenter {
        experimenter: SLUICE_EXPERIMENTER_ID,
        field: PCAP_FILTER_FIELD,
        has_mask,
        payload,
    } = o
    else {
        return None;
    };
    Some((|| {
        if *has_mask {
            return Err(ErrorCode::BMC_BAD_MASK);
        }
        if payload.is_empty() || payload.len() > MAX_PCAP_FILTER {
            return Err(ErrorCode::BMC_BAD_LEN);
        }
        let s = core::str::from_utf8(payload).map_err(|_| ErrorCode::BMC_BAD_VALUE)?;
        check_pcap_filter(s)?;
        Ok(s.to_string())
    })())
}

/// Whether `expr` can travel as a `pcap_filter` field: 1..=251 bytes
/// (`OFPBMC_BAD_LEN`), no NUL (`OFPBMC_BAD_VALUE`). (Whether it compiles
/// is the switch's question: `BAD_PCAP_FILTER`.)
pub fn check_pcap_filter(expr: &str) -> Result<()> {
    if expr.is_empty() || expr.len() > MAX_PCAP_FILTER {
        return Err(ErrorCode::BMC_BAD_LEN);
    }
    if expr.contains('\0') {
        return Err(ErrorCode::BMC_BAD_VALUE);
    }
    Ok(())
}

/// The `pcap_filter` OXM for `expr` (which [`check_pcap_filter`] should
/// accept: the decoder refuses what it refuses, and an OXM cannot carry
/// more than 251 bytes).
pub fn pcap_filter_oxm(expr: &str) -> Oxm {
    Oxm::Experimenter {
        experimenter: SLUICE_EXPERIMENTER_ID,
        field: PCAP_FILTER_FIELD,
        has_mask: false,
        payload: expr.as_bytes().to_vec(),
    }
}

// ---------------------------------------------------------------------------
// The send_maps action

/// `send_maps:PROG:MAP[:MAP...]`: send these maps of the program to the
/// controller as a [`MapsReport`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SendMaps {
    pub prog_id: u32,
    pub maps: Vec<String>,
}

impl SendMaps {
    /// Decode an action: `None` unless it is sluice's and its subtype is
    /// [`SEND_MAPS_SUBTYPE`], else the action or the `OFPBAC_*` error, in
    /// order: data shorter than 8 bytes (`OFPBAC_BAD_LEN`); `n_maps` 0 or
    /// above 16 (`OFPBAC_BAD_ARGUMENT`); names overrunning the data, the
    /// data not exactly the padded length its names call for, non-zero
    /// padding (`OFPBAC_BAD_LEN`); a reserved program id, a bad name
    /// (length or characters), a name twice (`OFPBAC_BAD_ARGUMENT`).
    pub fn from_action(a: &Action) -> Option<Result<SendMaps>> {
        let Action::Experimenter { experimenter: SLUICE_EXPERIMENTER_ID, data } = a else {
            return None;
        };
        let st = data.get(..SUBTYPE_LEN)?;
        (u16::from_be_bytes([st[0], st[1]]) == SEND_MAPS_SUBTYPE).then(|| Self::decode(data))
    }

    fn decode(data: &[u8]) -> Result<SendMaps> {
        const BAD_LEN: ErrorCode = ErrorCode::BAC_BAD_LEN;
        let mut r = Reader::new(data, BAD_LEN);
        r.skip(SUBTYPE_LEN)?;
        let n = usize::from(r.u16()?);
        let prog_id = r.u32()?;
        if n == 0 || n > MAX_SEND_MAPS {
            return Err(ErrorCode::BAC_BAD_ARGUMENT);
        }
        let mut names = Vec::with_capacity(n);
        for _ in 0..n {
            let len = usize::from(r.u8()?);
            names.push(r.bytes(len)?);
        }
        // The body after the subtype: `n_maps`, `prog_id`, the names.
        if data.len() != action_data_len(r.position() - SUBTYPE_LEN) {
            return Err(BAD_LEN);
        }
        if r.rest().iter().any(|&b| b != 0) {
            return Err(BAD_LEN);
        }
        let s = SendMaps {
            prog_id,
            maps: names.iter().map(|n| String::from_utf8_lossy(n).into_owned()).collect(),
        };
        // A lossy name is not a valid name: `check` refuses it.
        s.check()?;
        Ok(s)
    }

    /// The argument rules (`OFPBAC_BAD_ARGUMENT`): 1..=16 maps, valid
    /// names, each once, a program id that is not reserved.
    pub fn check(&self) -> Result<()> {
        let names_ok = (1..=MAX_SEND_MAPS).contains(&self.maps.len())
            && self.maps.iter().all(|m| map_name_valid(m.as_bytes()))
            && self.maps.iter().enumerate().all(|(i, m)| !self.maps[..i].contains(m));
        if names_ok && prog_id_valid(self.prog_id) {
            Ok(())
        } else {
            Err(ErrorCode::BAC_BAD_ARGUMENT)
        }
    }

    /// Encode as an `OFPAT_EXPERIMENTER` action, its data padded
    /// (`from_action(&s.to_action()) == Some(Ok(s))` for every `s` that
    /// `check`s; names are cut to 255 bytes, so the data stays framed).
    pub fn to_action(&self) -> Action {
        let mut d = Vec::new();
        d.put_u16(SEND_MAPS_SUBTYPE);
        d.put_u16(self.maps.len().min(usize::from(u16::MAX)) as u16);
        d.put_u32(self.prog_id);
        for m in self.maps.iter().take(usize::from(u16::MAX)) {
            let b = &m.as_bytes()[..m.len().min(255)];
            d.put_u8(b.len() as u8);
            d.put_slice(b);
        }
        // With the 8-byte action header in front, a multiple of 8.
        d.pad8_from(0);
        Action::Experimenter { experimenter: SLUICE_EXPERIMENTER_ID, data: d }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oxm::Match;
    use proptest::collection::vec;
    use proptest::prelude::*;

    const BL: Refusal = Refusal::Std(BAD_LEN);

    fn code(r: Decoded<impl fmt::Debug>) -> Option<u16> {
        r.expect_err("refused").exp_code()
    }

    /// A message through the wire: encoded, parsed back.
    fn via_wire(m: &Message) -> Message {
        let bytes = m.try_encode(5).expect("fits a message");
        let (xid, back) = Message::parse(&bytes).expect("parses");
        assert_eq!(xid, 5);
        back
    }

    fn body_of(m: &Message) -> Vec<u8> {
        match m {
            Message::Experimenter(e) => {
                assert_eq!(e.experimenter, SLUICE_EXPERIMENTER_ID);
                e.data.clone()
            }
            other => panic!("not an experimenter message: {other:?}"),
        }
    }

    fn block(name: &str, ks: u16, vs: u16, n: usize) -> MapBlock {
        MapBlock {
            name: name.into(),
            key_size: ks,
            value_size: vs,
            entries: (0..n)
                .map(|i| (vec![i as u8; usize::from(ks)], vec![(i >> 8) as u8; usize::from(vs)]))
                .collect(),
        }
    }

    fn update(delete: bool, n: usize) -> UpdateMap {
        UpdateMap {
            prog_id: 7,
            delete,
            map: "conns".into(),
            key_size: 4,
            value_size: if delete { 0 } else { 8 },
            entries: (0..n)
                .map(|i| (vec![10, 0, 0, i as u8], if delete { vec![] } else { vec![i as u8; 8] }))
                .collect(),
        }
    }

    fn report() -> MapsReport {
        MapsReport {
            prog_id: 7,
            table_id: 3,
            cookie: 0x0123_4567_89ab_cdef,
            more: false,
            maps: vec![block("conns", 4, 8, 3), block("stats.v4", 1, 3, 0), block("x", 2, 2, 1)],
        }
    }

    #[test]
    fn error_codes_have_names() {
        let all = [
            (err::UNKNOWN_PROG, "SLICFPC_UNKNOWN_PROG"),
            (err::PROG_EXISTS, "SLICFPC_PROG_EXISTS"),
            (err::PROG_IN_USE, "SLICFPC_PROG_IN_USE"),
            (err::PROG_REJECTED, "SLICFPC_PROG_REJECTED"),
            (err::PROG_TOO_BIG, "SLICFPC_PROG_TOO_BIG"),
            (err::BAD_FRAGMENT, "SLICFPC_BAD_FRAGMENT"),
            (err::UNKNOWN_MAP, "SLICFPC_UNKNOWN_MAP"),
            (err::BAD_MAP_SIZES, "SLICFPC_BAD_MAP_SIZES"),
            (err::MAP_OP_FAILED, "SLICFPC_MAP_OP_FAILED"),
            (err::BAD_PCAP_FILTER, "SLICFPC_BAD_PCAP_FILTER"),
            (err::BAD_PROG_ID, "SLICFPC_BAD_PROG_ID"),
            (err::BAD_MAP_NAME, "SLICFPC_BAD_MAP_NAME"),
        ];
        for (i, (c, n)) in all.iter().enumerate() {
            assert_eq!(usize::from(*c), i);
            assert_eq!(err_name(*c), Some(*n));
        }
        assert_eq!(err_name(crate::tracemsg::BAD_TRACE), Some("SLICTR_BAD_TRACE"));
        assert_eq!(err_name(crate::capturemsg::BAD_CAPTURE), Some("SLICCAP_BAD_CAPTURE"));
        assert_eq!(err_name(14), None);
        assert_eq!(Refusal::exp(err::BAD_FRAGMENT, "x").to_string(), "SLICFPC_BAD_FRAGMENT: x");
        assert_eq!(Refusal::exp(40, "x").to_string(), "SLICFPC(code=40): x");
        assert_eq!(BL.to_string(), "OFPBRC_BAD_LEN");
        for t in 2..=6 {
            assert!(exp_type::name(t).is_some());
        }
        assert_eq!(exp_type::name(1), None);
    }

    #[test]
    fn experimenter_errors_carry_text_and_request() {
        let req: Vec<u8> = (0..100).collect();
        let m = error_msg(err::PROG_REJECTED, "insn 12: invalid mem access 'scalar'", &req);
        let Message::Error(ErrorMsg::Experimenter { exp_type, experimenter, data }) = via_wire(&m)
        else {
            panic!("an experimenter error")
        };
        assert_eq!((exp_type, experimenter), (err::PROG_REJECTED, SLUICE_EXPERIMENTER_ID));
        let (text, echoed) = error_text(&data);
        assert_eq!(text, "insn 12: invalid mem access 'scalar'");
        assert_eq!(echoed, &req[..64]);
        // A NUL in the text ends it; no NUL in the data: all text.
        let m = error_msg(err::UNKNOWN_MAP, "a\0b", &[1]);
        let Message::Error(ErrorMsg::Experimenter { data, .. }) = &m else { unreachable!() };
        assert_eq!(data, b"a\0\x01");
        assert_eq!(error_text(b"only text"), ("only text".into(), &[][..]));
        assert_eq!(error_text(b"\xff\0\x02").0, "\u{fffd}");
        // A huge text is cut so the error fits one message.
        let big = "é".repeat(40_000);
        assert!(error_msg(err::PROG_REJECTED, &big, &req).try_encode(1).is_ok());
        // Refusals become the error to send.
        assert_eq!(
            BL.to_error(&req),
            Message::Error(ErrorMsg::Standard { code: BAD_LEN, data: req[..64].to_vec() })
        );
        assert_eq!(Refusal::exp(err::PROG_IN_USE, "t").to_error(&req), error_msg(2, "t", &req));
        assert_eq!(BL.error_code(), BAD_LEN);
        assert_eq!(Refusal::exp(err::PROG_IN_USE, "t").error_code(), ErrorCode::new(0xffff, 2));
    }

    #[test]
    fn ids_and_names() {
        assert!(!prog_id_valid(0) && !prog_id_valid(u32::MAX));
        assert!(prog_id_valid(1) && prog_id_valid(0xffff_fffe));
        assert!(
            map_name_valid(b"conns") && map_name_valid(b"A_z.09") && map_name_valid(&[b'a'; 64])
        );
        for bad in [&b""[..], &[b'a'; 65], b"a-b", b"a b", b"\xc3\xa9", b"a:b", b"a\0"] {
            assert!(!map_name_valid(bad), "{bad:?}");
        }
    }

    /// The worked examples in `docs/EXPERIMENTER.md` ("Filter programs",
    /// "Worked examples"): every indented hex block there, in order.
    #[test]
    fn worked_examples_in_the_docs() {
        let doc = include_str!("../../../docs/EXPERIMENTER.md");
        let start = doc.find("\n## Filter programs").expect("the section");
        let section = &doc[start..];
        let start = section.find("\n### Worked examples").expect("the examples");
        let section = &section[start + 1..];
        let section = &section[..section.find("\n## ").unwrap_or(section.len())];
        let mut blocks: Vec<Vec<u8>> = Vec::new();
        let mut in_block = false;
        for line in section.lines() {
            let Some(code) = line.strip_prefix("    ") else {
                in_block = false;
                continue;
            };
            if !in_block {
                blocks.push(Vec::new());
                in_block = true;
            }
            // Bytes, then two spaces and a comment.
            let bytes = code.split("  ").next().unwrap_or("");
            let b = blocks.last_mut().unwrap();
            for t in bytes.split_whitespace() {
                b.push(u8::from_str_radix(t, 16).unwrap_or_else(|_| panic!("hex byte: {line}")));
            }
        }
        assert_eq!(blocks.len(), 3, "three examples");
        // The printed form shown after the first.
        let shown = section.split("```text\n").nth(1).and_then(|t| t.split("\n```").next());
        assert_eq!(shown, Some(crate::print::print_hex_stream(&blocks[0]).as_str()));
        // UPDATE_MAP, xid 1: conns[10.0.0.1] = 5.
        let upd = UpdateMap {
            prog_id: 7,
            delete: false,
            map: "conns".into(),
            key_size: 4,
            value_size: 8,
            entries: vec![(vec![10, 0, 0, 1], 5u64.to_be_bytes().to_vec())],
        };
        assert_eq!(blocks[0], upd.to_message().encode(1));
        let (_, m) = Message::parse(&blocks[0]).unwrap();
        let Message::Experimenter(e) = &m else { panic!() };
        assert_eq!(FilterMsg::from_experimenter(e), Some(Ok(FilterMsg::UpdateMap(upd))));
        // filter_prog=7 as an OXM.
        let mut o = Vec::new();
        filter_prog_oxm(7).emit(&mut o);
        assert_eq!(blocks[1], o);
        // send_maps:7:conns:stats as an action.
        let mut a = Vec::new();
        let sm = SendMaps { prog_id: 7, maps: vec!["conns".into(), "stats".into()] };
        sm.to_action().emit(&mut a);
        assert_eq!(blocks[2], a);
        let mut r = Reader::new(&blocks[2], BAD_LEN);
        assert_eq!(SendMaps::from_action(&Action::parse(&mut r).unwrap()), Some(Ok(sm)));
    }

    #[test]
    fn literal_messages() {
        let load = LoadFilterProg {
            prog_id: 7,
            more: true,
            offset: 0,
            total_len: 5,
            bytes: vec![0x7f, b'E'],
        };
        assert_eq!(load.encode(), [0, 0, 0, 7, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0x7f, b'E']);
        assert_eq!(UnloadFilterProg { prog_id: 0x0102_0304 }.encode(), [1, 2, 3, 4, 0, 0, 0, 0]);
        let mut r = report();
        r.maps.truncate(1);
        r.maps[0].entries.truncate(1);
        r.more = true;
        #[rustfmt::skip]
        let want = [
            0, 0, 0, 7, 3, 1, 0, 1,                 // prog 7, table 3, MORE, one map
            0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, // cookie
            5, 0, 0, 4, 0, 8, 0, 0,                 // name_len, zero, key 4, value 8, zero
            0, 0, 0, 1, 0, 0, 0, 0,                 // count 1, zero
            b'c', b'o', b'n', b'n', b's', 0, 0, 0,  // name, padded
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,     // key, value
            0, 0, 0, 0,                             // entries padded to 8
        ];
        assert_eq!(r.encode(), want);
        let req = DumpMapRequest { prog_id: 9, map: "conns".into() };
        assert_eq!(req.encode(), [0, 0, 0, 9, 5, 0, 0, 0, b'c', b'o', b'n', b'n', b's', 0, 0, 0]);
        let rep = DumpMapReply { prog_id: 9, map: block("m", 1, 1, 0) };
        assert_eq!(
            rep.encode(),
            [
                0, 0, 0, 9, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, b'm', 0, 0,
                0, 0, 0, 0, 0
            ]
        );
    }

    #[test]
    fn round_trips_through_messages() {
        let msgs = [
            FilterMsg::Load(LoadFilterProg {
                prog_id: 1,
                more: false,
                offset: 3,
                total_len: 4,
                bytes: vec![9],
            }),
            FilterMsg::Unload(UnloadFilterProg { prog_id: 0xffff_fffe }),
            FilterMsg::UpdateMap(update(false, 3)),
            FilterMsg::UpdateMap(update(true, 2)),
            FilterMsg::MapsReport(report()),
        ];
        for m in msgs {
            let back = via_wire(&m.to_message());
            let Message::Experimenter(e) = &back else { panic!() };
            assert_eq!(e.exp_type, m.exp_type());
            assert_eq!(FilterMsg::from_experimenter(e), Some(Ok(m.clone())));
        }
        let req = DumpMapRequest { prog_id: 4, map: "a.b_C9".into() };
        let Message::MultipartRequest(r) = via_wire(&req.to_message()) else { panic!() };
        let MultipartRequestBody::Experimenter(mp) = &r.body else { panic!() };
        assert_eq!(DumpMapRequest::from_multipart(mp), Some(Ok(req)));
        let rep = DumpMapReply { prog_id: 4, map: block("m", 2, 3, 5) };
        let Message::MultipartReply(r) = via_wire(&rep.to_message(true)) else { panic!() };
        assert_eq!(r.flags, OFPMPF_REPLY_MORE);
        let MultipartReplyBody::Experimenter(mp) = &r.body else { panic!() };
        assert_eq!(DumpMapReply::from_multipart(mp), Some(Ok(vec![rep])));
        // Not ours.
        let other = ExperimenterMsg { experimenter: 0x2320, exp_type: 2, data: vec![] };
        assert_eq!(FilterMsg::from_experimenter(&other), None);
        for t in [0, 1, 5, 7] {
            let m =
                ExperimenterMsg { experimenter: SLUICE_EXPERIMENTER_ID, exp_type: t, data: vec![] };
            assert_eq!(FilterMsg::from_experimenter(&m), None, "exp_type {t}");
        }
        let mp = MultipartExperimenter {
            experimenter: SLUICE_EXPERIMENTER_ID,
            exp_type: 4,
            data: vec![],
        };
        assert_eq!(DumpMapRequest::from_multipart(&mp), None);
        assert_eq!(DumpMapReply::from_multipart(&mp), None);
    }

    /// Every decoder that frames with lengths: any truncation, and any
    /// byte added, is `OFPBRC_BAD_LEN`.
    #[test]
    fn short_and_long_bodies_are_bad_len() {
        type Dec = fn(&[u8]) -> bool;
        let bodies: Vec<(Vec<u8>, Dec)> = vec![
            (UnloadFilterProg { prog_id: 7 }.encode(), |b| UnloadFilterProg::decode(b) == Err(BL)),
            (update(false, 3).encode(), |b| UpdateMap::decode(b) == Err(BL)),
            (update(true, 2).encode(), |b| UpdateMap::decode(b) == Err(BL)),
            (report().encode(), |b| MapsReport::decode(b) == Err(BL)),
            (DumpMapRequest { prog_id: 7, map: "m".repeat(64) }.encode(), |b| {
                DumpMapRequest::decode(b) == Err(BL)
            }),
            (DumpMapReply { prog_id: 7, map: block("conns", 3, 2, 3) }.encode(), |b| {
                DumpMapReply::decode(b) == Err(BL)
            }),
        ];
        for (body, refused) in bodies {
            for n in 0..body.len() {
                assert!(refused(&body[..n]), "{} cut to {n}", hex::encode(&body));
            }
            for extra in [0u8, 1] {
                let mut long = body.clone();
                long.push(extra);
                assert!(refused(&long), "{} + {extra}", hex::encode(&body));
                long.extend([0; 7]);
                assert!(refused(&long), "{} + 8", hex::encode(&body));
            }
        }
        // The fragment's length is its body: cut or extended, it no longer
        // ends where it says.
        let load = LoadFilterProg {
            prog_id: 7,
            more: false,
            offset: 0,
            total_len: 3,
            bytes: vec![1, 2, 3],
        }
        .encode();
        for n in 0..16 {
            assert_eq!(LoadFilterProg::decode(&load[..n]), Err(BL));
        }
        for n in 16..load.len() {
            assert_eq!(code(LoadFilterProg::decode(&load[..n])), Some(err::BAD_FRAGMENT));
        }
        assert_eq!(
            code(LoadFilterProg::decode(&[&load[..], &[0]].concat())),
            Some(err::BAD_FRAGMENT)
        );
        // Bodies above what a message can carry.
        let mut big = load.clone();
        big.resize(MAX_MSG_BODY + 1, 0);
        assert_eq!(LoadFilterProg::decode(&big), Err(BL));
        let mut big = DumpMapReply { prog_id: 7, map: block("m", 1, 1, 0) }.encode();
        big.resize(MAX_MULTIPART_BODY + 1, 0);
        assert_eq!(DumpMapReply::decode(&big), Err(BL));
    }

    /// Lengths and counts that lie, and non-zero reserved bytes.
    #[test]
    fn lying_fields_and_reserved_bytes_are_bad_len() {
        let set = |mut b: Vec<u8>, at: usize, v: &[u8]| {
            b[at..at + v.len()].copy_from_slice(v);
            b
        };
        // UPDATE_MAP: name_len 0, 65, 4, 9; key_size 0, 5; value_size;
        // count 0, 2, 4; zero field; name padding.
        let u = update(false, 3).encode();
        for (at, v) in [
            (5, &[0u8][..]),
            (5, &[65]),
            (5, &[4]),
            (5, &[9]),
            (6, &[0, 0]),
            (6, &[0, 5]),
            (8, &[0, 7]),
            (8, &[0, 0]),
            (10, &[0, 0]),
            (10, &[0, 2]),
            (10, &[0, 4]),
            (12, &[0, 0, 0, 1]),
            (15, &[0x80]),
            (21, &[1]),
            (23, b"x"),
        ] {
            assert_eq!(UpdateMap::decode(&set(u.clone(), at, v)), Err(BL), "at {at} {v:?}");
        }
        // A delete with values, an update without.
        let d = update(true, 2).encode();
        assert_eq!(UpdateMap::decode(&set(d.clone(), 8, &[0, 1])), Err(BL));
        assert_eq!(UpdateMap::decode(&set(u.clone(), 4, &[1])), Err(BL));
        // MAPS_REPORT: reserved flag bits, n_maps, block fields.
        let r = report().encode();
        for (at, v) in [
            (5, &[2u8][..]),
            (5, &[0x81]),
            (6, &[0, 2]),
            (6, &[0, 4]),
            (16, &[0]),
            (16, &[65]),
            (16, &[4]),
            (16, &[9]),
            (17, &[1]),
            (18, &[0, 0]),
            (18, &[0, 7]),
            (20, &[0, 0]),
            (22, &[0, 1]),
            (24, &[0, 0, 0, 2]),
            (24, &[0, 0, 0, 4]),
            (24, &[0xff, 0xff, 0xff, 0xff]),
            (28, &[1, 0, 0, 0]),
            (37, &[1]),
            (32 + 8 + 36, &[1]),
        ] {
            assert_eq!(MapsReport::decode(&set(r.clone(), at, v)), Err(BL), "at {at} {v:?}");
        }
        // LOAD: flag bits, zero field.
        let l = LoadFilterProg { prog_id: 7, more: true, offset: 0, total_len: 3, bytes: vec![1] }
            .encode();
        for (at, v) in [(4, &[0u8, 2][..]), (4, &[0x80, 1]), (6, &[0, 1])] {
            assert_eq!(LoadFilterProg::decode(&set(l.clone(), at, v)), Err(BL), "at {at}");
        }
        // UNLOAD, DUMP_MAP: reserved bytes and name lengths.
        assert_eq!(UnloadFilterProg::decode(&[0, 0, 0, 7, 0, 0, 0, 1]), Err(BL));
        let q = DumpMapRequest { prog_id: 7, map: "conns".into() }.encode();
        for (at, v) in [(4, &[0u8][..]), (4, &[4]), (4, &[9]), (5, &[1]), (7, &[1]), (15, &[1])] {
            assert_eq!(DumpMapRequest::decode(&set(q.clone(), at, v)), Err(BL), "at {at}");
        }
        let p = DumpMapReply { prog_id: 7, map: block("conns", 1, 1, 1) }.encode();
        for (at, v) in
            [(4, &[1u8][..]), (7, &[1]), (8 + 15, &[1]), (8 + 16 + 5, &[1]), (8 + 24 + 2, &[1])]
        {
            assert_eq!(DumpMapReply::decode(&set(p.clone(), at, v)), Err(BL), "at {at}");
        }
    }

    #[test]
    fn meaning_errors_after_framing() {
        // Program ids.
        for id in [0u32, u32::MAX] {
            let b = id.to_be_bytes();
            assert_eq!(
                code(UnloadFilterProg::decode(&[&b[..], &[0; 4]].concat())),
                Some(err::BAD_PROG_ID)
            );
            let mut u = update(false, 1);
            u.prog_id = id;
            assert_eq!(code(UpdateMap::decode(&u.encode())), Some(err::BAD_PROG_ID));
            let mut r = report();
            r.prog_id = id;
            assert_eq!(code(MapsReport::decode(&r.encode())), Some(err::BAD_PROG_ID));
            let q = DumpMapRequest { prog_id: id, map: "m".into() };
            assert_eq!(code(DumpMapRequest::decode(&q.encode())), Some(err::BAD_PROG_ID));
            let p = DumpMapReply { prog_id: id, map: block("m", 1, 1, 1) };
            assert_eq!(code(DumpMapReply::decode(&p.encode())), Some(err::BAD_PROG_ID));
            let l = LoadFilterProg {
                prog_id: id,
                more: false,
                offset: 0,
                total_len: 1,
                bytes: vec![1],
            };
            assert_eq!(code(LoadFilterProg::decode(&l.encode())), Some(err::BAD_PROG_ID));
        }
        // Framing comes first: a short body with a bad id is BAD_LEN.
        assert_eq!(UnloadFilterProg::decode(&[0; 7]), Err(BL));
        // Names: bad characters after framing and the id.
        let mut u = update(false, 1);
        u.map = "co-ns".into();
        assert_eq!(code(UpdateMap::decode(&u.encode())), Some(err::BAD_MAP_NAME));
        u.prog_id = 0;
        assert_eq!(code(UpdateMap::decode(&u.encode())), Some(err::BAD_PROG_ID));
        let mut r = report();
        r.maps[2].name = "é".into();
        assert_eq!(code(MapsReport::decode(&r.encode())), Some(err::BAD_MAP_NAME));
        let q = DumpMapRequest { prog_id: 1, map: "a b".into() };
        assert_eq!(code(DumpMapRequest::decode(&q.encode())), Some(err::BAD_MAP_NAME));
        let p = DumpMapReply { prog_id: 1, map: block("a\u{1}", 1, 1, 0) };
        assert_eq!(code(DumpMapReply::decode(&p.encode())), Some(err::BAD_MAP_NAME));
        // Unknown commands: MAP_OP_FAILED, after the header's own framing.
        let mut b = update(false, 1).encode();
        b[4] = 2;
        let e = UpdateMap::decode(&b).unwrap_err();
        assert_eq!(
            e,
            Refusal::exp(err::MAP_OP_FAILED, "unknown UPDATE_MAP command 2 (0 update, 1 delete)")
        );
        b[5] = 0;
        assert_eq!(UpdateMap::decode(&b), Err(BL));
        // `check` agrees with `decode` on hand-built values.
        assert_eq!(code(u.check()), Some(err::BAD_PROG_ID));
        let mut u = update(false, 1);
        u.entries[0].1.pop();
        assert_eq!(u.check(), Err(BL));
        assert_eq!(update(true, 0).check(), Err(BL));
        assert_eq!(UpdateMap { value_size: 1, ..update(true, 1) }.check(), Err(BL));
        let mut r = report();
        r.maps[0].key_size = 0;
        assert_eq!(r.check(), Err(BL));
        assert_eq!(DumpMapRequest { prog_id: 1, map: String::new() }.check(), Err(BL));
        assert_eq!(code(UnloadFilterProg { prog_id: 0 }.check()), Some(err::BAD_PROG_ID));
    }

    #[test]
    fn fragment_rules() {
        let f = |more: bool, offset: u32, total_len: u32, n: usize| {
            let l = LoadFilterProg { prog_id: 7, more, offset, total_len, bytes: vec![0xaa; n] };
            let d = LoadFilterProg::decode(&l.encode());
            assert_eq!(d.as_ref().err(), l.check().err().as_ref());
            d.map(drop).map_err(|e| e.exp_code())
        };
        assert_eq!(f(false, 0, 1, 1), Ok(()));
        assert_eq!(f(true, 0, 2, 1), Ok(()));
        assert_eq!(f(false, 10, 12, 2), Ok(()));
        assert_eq!(f(false, 0, MAX_OBJECT, 1), Err(Some(err::BAD_FRAGMENT)));
        assert_eq!(f(false, MAX_OBJECT - 1, MAX_OBJECT, 1), Ok(()));
        assert_eq!(f(true, 0, MAX_OBJECT + 1, 1), Err(Some(err::PROG_TOO_BIG)));
        assert_eq!(f(true, 0, u32::MAX, 1), Err(Some(err::PROG_TOO_BIG)));
        assert_eq!(f(false, 0, 0, 1), Err(Some(err::BAD_FRAGMENT)));
        assert_eq!(f(true, 0, 5, 0), Err(Some(err::BAD_FRAGMENT)));
        assert_eq!(f(false, 4, 5, 2), Err(Some(err::BAD_FRAGMENT)));
        assert_eq!(f(true, u32::MAX, 5, 2), Err(Some(err::BAD_FRAGMENT)));
        assert_eq!(f(false, 0, 5, 4), Err(Some(err::BAD_FRAGMENT)));
        assert_eq!(f(true, 0, 5, 5), Err(Some(err::BAD_FRAGMENT)));
        // Hand-built fragments larger than a message.
        let l = LoadFilterProg {
            prog_id: 7,
            more: true,
            offset: 0,
            total_len: MAX_OBJECT,
            bytes: vec![0; MAX_FRAGMENT + 1],
        };
        assert_eq!(l.check(), Err(BL));
    }

    fn object(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn fragments_reassemble_exactly() {
        for size in [1usize, 65535, 200_000] {
            let obj = object(size);
            for max in [0usize, 1000, 4096, 65503, usize::MAX] {
                if size == 200_000 && max == 0 {
                    continue; // 200000 one-byte messages: covered by smaller sizes
                }
                let frags = fragments(9, &obj, max).unwrap();
                let step = max.clamp(1, MAX_FRAGMENT);
                assert_eq!(frags.len(), size.div_ceil(step), "size {size} max {max}");
                let mut asm = Assembly::new();
                for (i, f) in frags.iter().enumerate() {
                    // Every fragment fits a message and decodes to itself.
                    let m = f.to_message();
                    assert!(m.try_encode(1).unwrap().len() <= 65535);
                    assert_eq!(LoadFilterProg::decode(&body_of(&m)).as_ref(), Ok(f));
                    let got = asm.push(f).unwrap();
                    if i + 1 < frags.len() {
                        assert_eq!(got, None);
                        assert_eq!(asm.held_bytes(), f.end() as usize);
                    } else {
                        assert_eq!(got, Some((9, obj.clone())));
                    }
                }
                assert!(asm.is_empty());
            }
        }
        assert_eq!(code(fragments(9, &[], 10)), Some(err::BAD_FRAGMENT));
        assert_eq!(code(fragments(0, &[1], 10)), Some(err::BAD_PROG_ID));
        assert_eq!(
            code(fragments(9, &vec![0; MAX_OBJECT as usize + 1], 10)),
            Some(err::PROG_TOO_BIG)
        );
        let max = fragments(9, &vec![1; MAX_OBJECT as usize], MAX_FRAGMENT).unwrap();
        assert_eq!(max.last().map(LoadFilterProg::end), Some(u64::from(MAX_OBJECT)));
    }

    #[test]
    fn assembly_refuses_disorder() {
        let obj = object(30);
        let fr = fragments(5, &obj, 10).unwrap();
        assert_eq!(fr.len(), 3);
        let bad = |r: Decoded<Option<(u32, Vec<u8>)>>| assert_eq!(code(r), Some(err::BAD_FRAGMENT));

        // Out of order: the second fragment first, then a gap.
        let mut a = Assembly::new();
        bad(a.push(&fr[1]));
        assert_eq!(a.push(&fr[0]), Ok(None));
        bad(a.push(&fr[2]));
        assert!(a.is_empty(), "the partial object is dropped");
        bad(a.push(&fr[1]));

        // A duplicate middle fragment drops the object.
        let mut a = Assembly::new();
        a.push(&fr[0]).unwrap();
        a.push(&fr[1]).unwrap();
        bad(a.push(&fr[1]));
        bad(a.push(&fr[2]));

        // A duplicate first fragment restarts; so does any offset 0.
        let mut a = Assembly::new();
        a.push(&fr[0]).unwrap();
        a.push(&fr[1]).unwrap();
        a.push(&fr[0]).unwrap();
        bad(a.push(&fr[2]));
        a.push(&fr[0]).unwrap();
        a.push(&fr[1]).unwrap();
        assert_eq!(a.push(&fr[2]), Ok(Some((5, obj.clone()))));

        // total_len must not change.
        let mut a = Assembly::new();
        a.push(&fr[0]).unwrap();
        let mut other = fr[1].clone();
        other.total_len = 31;
        other.more = true;
        bad(a.push(&other));
        assert!(a.is_empty());

        // Hand-built fragments are checked; a refusal drops the program.
        let mut a = Assembly::new();
        a.push(&fr[0]).unwrap();
        let mut broken = fr[1].clone();
        broken.bytes.clear();
        bad(a.push(&broken));
        assert!(a.is_empty());

        // Programs interleave; at most eight in assembly.
        let mut a = Assembly::new();
        for id in 1..=8u32 {
            let f = fragments(id, &obj, 10).unwrap();
            assert_eq!(a.push(&f[0]), Ok(None));
        }
        assert_eq!(a.len(), MAX_ASSEMBLIES);
        let ninth = fragments(9, &obj, 10).unwrap();
        bad(a.push(&ninth[0]));
        // A whole object in one fragment needs no slot.
        assert_eq!(a.push(&fragments(9, &obj, 100).unwrap()[0]), Ok(Some((9, obj.clone()))));
        // Restarting one of the eight is fine; finishing one frees a slot.
        let f3 = fragments(3, &obj, 10).unwrap();
        assert_eq!(a.push(&f3[0]), Ok(None));
        a.push(&f3[1]).unwrap();
        assert_eq!(a.push(&f3[2]), Ok(Some((3, obj.clone()))));
        assert_eq!(a.push(&ninth[0]), Ok(None));
        assert!(a.abandon(9));
        assert!(!a.abandon(9));
        assert_eq!(a.len(), 7);
        assert!(a.held_bytes() <= 7 * 10);
    }

    /// Whole messages of a report: their bytes and decoded maps.
    fn report_wire(parts: &[MapsReport]) -> Vec<(usize, MapsReport)> {
        parts
            .iter()
            .map(|p| {
                let m = p.to_message();
                let len = m.try_encode(1).unwrap().len();
                let back = MapsReport::decode(&body_of(&m)).unwrap();
                assert_eq!(&back, p);
                (len, back)
            })
            .collect()
    }

    #[test]
    fn split_report_edges() {
        // No maps: one empty report.
        let parts = split_report(7, 1, 2, vec![], 100);
        assert_eq!(
            parts,
            vec![MapsReport { prog_id: 7, table_id: 1, cookie: 2, more: false, maps: vec![] }]
        );
        // Everything fits: one message.
        let maps = report().maps;
        let parts = split_report(7, 3, 9, maps.clone(), 65535);
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].maps, maps);
        // An entry too big for the limit travels alone.
        let big = block("big", 100, 100, 3);
        let parts = split_report(7, 3, 9, vec![block("a", 1, 1, 1), big.clone()], 64);
        let wire = report_wire(&parts);
        assert_eq!(parts.len(), 4);
        for (len, p) in &wire[1..] {
            assert!(*len > 64);
            assert_eq!(p.maps.len(), 1);
            assert_eq!(p.maps[0].entries.len(), 1);
        }
        assert_eq!(wire[0].0, 16 + 16 + 16 + 8 + 8);
        let joined = join_blocks(parts.into_iter().flat_map(|p| p.maps));
        assert_eq!(joined, vec![block("a", 1, 1, 1), big]);
        // A limit above 65535 is 65535: a map of 100000 bytes takes two.
        let parts = split_report(7, 3, 9, vec![block("m", 4, 6, 10_000)], usize::MAX);
        assert_eq!(parts.len(), 2);
        assert!(report_wire(&parts).iter().all(|(len, _)| *len <= 65535));
        let dumps = split_dump(7, block("m", 4, 6, 10_000), usize::MAX);
        assert_eq!(dumps.len(), 2);
        assert!(dumps.iter().all(|d| d.wire_len() <= MAX_MULTIPART_BODY && d.check().is_ok()));
        assert_eq!(
            split_dump(7, block("m", 4, 6, 0), 10),
            vec![DumpMapReply { prog_id: 7, map: block("m", 4, 6, 0) }]
        );
    }

    #[test]
    fn dumps_reassembled_decode_as_a_sequence() {
        let parts = split_dump(3, block("conns", 4, 8, 40), 200);
        assert!(parts.len() > 2);
        let cat: Vec<u8> = parts.iter().flat_map(DumpMapReply::encode).collect();
        assert_eq!(DumpMapReply::decode_all(&cat), Ok(parts.clone()));
        assert_eq!(DumpMapReply::decode(&cat), Err(BL));
        assert_eq!(DumpMapReply::decode_all(&cat[..cat.len() - 1]), Err(BL));
        assert_eq!(DumpMapReply::decode_all(&[]), Err(BL));
        let joined = join_blocks(parts.into_iter().map(|p| p.map));
        assert_eq!(joined, vec![block("conns", 4, 8, 40)]);
    }

    #[test]
    fn filter_prog_field() {
        let o = |has_mask, payload: &[u8]| Oxm::Experimenter {
            experimenter: SLUICE_EXPERIMENTER_ID,
            field: FILTER_PROG_FIELD,
            has_mask,
            payload: payload.to_vec(),
        };
        assert_eq!(filter_prog_from_oxm(&o(false, &[0, 0, 0, 7])), Some(Ok(7)));
        assert_eq!(filter_prog_from_oxm(&filter_prog_oxm(7)), Some(Ok(7)));
        assert_eq!(
            filter_prog_from_oxm(&o(true, &[0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff])),
            Some(Err(ErrorCode::BMC_BAD_MASK))
        );
        assert_eq!(filter_prog_from_oxm(&o(true, &[])), Some(Err(ErrorCode::BMC_BAD_MASK)));
        for len in [0, 3, 5, 8] {
            assert_eq!(
                filter_prog_from_oxm(&o(false, &vec![1; len])),
                Some(Err(ErrorCode::BMC_BAD_LEN))
            );
        }
        assert_eq!(filter_prog_from_oxm(&o(false, &[0; 4])), Some(Err(ErrorCode::BMC_BAD_VALUE)));
        assert_eq!(
            filter_prog_from_oxm(&o(false, &[0xff; 4])),
            Some(Err(ErrorCode::BMC_BAD_VALUE))
        );
        // Not ours: other fields, other experimenters, POF's field.
        assert_eq!(filter_prog_from_oxm(&pcap_filter_oxm("tcp")), None);
        let other = Oxm::Experimenter {
            experimenter: 0x2320,
            field: FILTER_PROG_FIELD,
            has_mask: false,
            payload: vec![0, 0, 0, 7],
        };
        assert_eq!(filter_prog_from_oxm(&other), None);
        assert_eq!(crate::pof::PofMatch::from_oxm(&filter_prog_oxm(7)), None);
        // On the wire: OXM header, id, program.
        let mut b = Vec::new();
        filter_prog_oxm(0x0102_0304).emit(&mut b);
        assert_eq!(b, [0xff, 0xff, 0x20, 8, 0x53, 0x4c, 0x49, 0x43, 1, 2, 3, 4]);
    }

    #[test]
    fn pcap_filter_field() {
        let o = |has_mask, payload: &[u8]| Oxm::Experimenter {
            experimenter: SLUICE_EXPERIMENTER_ID,
            field: PCAP_FILTER_FIELD,
            has_mask,
            payload: payload.to_vec(),
        };
        assert_eq!(
            pcap_filter_from_oxm(&pcap_filter_oxm("tcp port 80")),
            Some(Ok("tcp port 80".into()))
        );
        assert_eq!(pcap_filter_from_oxm(&o(true, b"tcp")), Some(Err(ErrorCode::BMC_BAD_MASK)));
        assert_eq!(pcap_filter_from_oxm(&o(false, b"")), Some(Err(ErrorCode::BMC_BAD_LEN)));
        assert_eq!(
            pcap_filter_from_oxm(&o(false, &[b'a'; 252])),
            Some(Err(ErrorCode::BMC_BAD_LEN))
        );
        assert!(matches!(pcap_filter_from_oxm(&o(false, &[b'a'; 251])), Some(Ok(_))));
        assert_eq!(pcap_filter_from_oxm(&o(false, b"a\0b")), Some(Err(ErrorCode::BMC_BAD_VALUE)));
        assert_eq!(pcap_filter_from_oxm(&o(false, b"\xc3")), Some(Err(ErrorCode::BMC_BAD_VALUE)));
        assert_eq!(pcap_filter_from_oxm(&filter_prog_oxm(1)), None);
        // The longest expression survives the wire.
        let e = "x".repeat(MAX_PCAP_FILTER);
        let mut b = Vec::new();
        pcap_filter_oxm(&e).emit(&mut b);
        assert_eq!(b.len(), 4 + 255);
        let mut r = Reader::new(&b, BAD_LEN);
        assert_eq!(pcap_filter_from_oxm(&Oxm::parse(&mut r).unwrap()), Some(Ok(e)));
    }

    /// The match's duplicate check keys experimenter fields by (id,
    /// field): one `filter_prog` and one `pcap_filter` per rule.
    #[test]
    fn one_of_each_field_per_match() {
        let dup = ErrorCode::BMC_DUP_FIELD;
        let both = Match::new(vec![filter_prog_oxm(1), pcap_filter_oxm("tcp")]);
        assert_eq!(both.validate(), Ok(()));
        assert_eq!(Match::new(vec![filter_prog_oxm(1), filter_prog_oxm(2)]).validate(), Err(dup));
        assert_eq!(
            Match::new(vec![pcap_filter_oxm("a"), pcap_filter_oxm("b")]).validate(),
            Err(dup)
        );
        let mut b = Vec::new();
        Match::new(vec![filter_prog_oxm(1), filter_prog_oxm(1)]).emit(&mut b);
        assert_eq!(Match::parse(&mut Reader::new(&b, BAD_LEN)), Err(dup));
    }

    fn sm_action(data: &[u8]) -> Action {
        Action::Experimenter { experimenter: SLUICE_EXPERIMENTER_ID, data: data.to_vec() }
    }

    fn decode_sm(data: &[u8]) -> Result<SendMaps> {
        SendMaps::from_action(&sm_action(data)).expect("a send_maps action")
    }

    #[test]
    fn send_maps_action() {
        let s = SendMaps { prog_id: 7, maps: vec!["conns".into(), "ab".into()] };
        #[rustfmt::skip]
        let data = [
            0, 16, 0, 2, 0, 0, 0, 7,            // subtype, n_maps, prog_id
            5, b'c', b'o', b'n', b'n', b's',    // "conns"
            2, b'a', b'b',                      // "ab"
            0, 0, 0, 0, 0, 0, 0,                // pad: 8 + 24 is a multiple of 8
        ];
        assert_eq!(s.to_action(), sm_action(&data));
        assert_eq!(decode_sm(&data), Ok(s.clone()));
        assert_eq!(crate::pof::PofAction::from_action(&s.to_action()), None);
        // Not ours.
        assert_eq!(SendMaps::from_action(&sm_action(&[0, 15, 0, 1])), None);
        assert_eq!(SendMaps::from_action(&sm_action(&[0])), None);
        assert_eq!(
            SendMaps::from_action(&Action::Experimenter { experimenter: 1, data: data.to_vec() }),
            None
        );
        assert_eq!(SendMaps::from_action(&Action::PopVlan), None);

        use ErrorCode as E;
        // Short; n_maps; framing; padding.
        assert_eq!(decode_sm(&[0, 16]), Err(E::BAC_BAD_LEN));
        assert_eq!(decode_sm(&data[..7]), Err(E::BAC_BAD_LEN));
        let with = |at: usize, v: &[u8]| {
            let mut d = data.to_vec();
            d[at..at + v.len()].copy_from_slice(v);
            decode_sm(&d)
        };
        assert_eq!(with(2, &[0, 0]), Err(E::BAC_BAD_ARGUMENT));
        assert_eq!(with(2, &[0, 17]), Err(E::BAC_BAD_ARGUMENT));
        assert_eq!(with(2, &[0xff, 0xff]), Err(E::BAC_BAD_ARGUMENT));
        // A third name: the first padding byte, an empty name.
        assert_eq!(with(2, &[0, 3]), Err(E::BAC_BAD_ARGUMENT));
        assert_eq!(with(2, &[0, 10]), Err(E::BAC_BAD_LEN));
        assert_eq!(with(2, &[0, 1]), Err(E::BAC_BAD_LEN));
        assert_eq!(with(8, &[30]), Err(E::BAC_BAD_LEN));
        assert_eq!(with(23, &[1]), Err(E::BAC_BAD_LEN));
        assert_eq!(decode_sm(&data[..16]), Err(E::BAC_BAD_LEN));
        assert_eq!(decode_sm(&[&data[..], &[0; 8]].concat()), Err(E::BAC_BAD_LEN));
        // Arguments.
        assert_eq!(with(4, &[0, 0, 0, 0]), Err(E::BAC_BAD_ARGUMENT));
        assert_eq!(with(4, &[0xff; 4]), Err(E::BAC_BAD_ARGUMENT));
        assert_eq!(with(9, b"-"), Err(E::BAC_BAD_ARGUMENT));
        assert_eq!(with(9, &[0xc3]), Err(E::BAC_BAD_ARGUMENT));
        assert_eq!(with(14, &[20]), Err(E::BAC_BAD_LEN));
        // A longer name that stays inside the padding frames fine; its
        // NUL bytes make it a bad name.
        assert_eq!(with(14, &[5]), Err(E::BAC_BAD_ARGUMENT));
        let twice = SendMaps { prog_id: 7, maps: vec!["ab".into(), "ab".into()] };
        assert_eq!(decode_sm(&action_data(&twice)), Err(E::BAC_BAD_ARGUMENT));
        let empty = SendMaps { prog_id: 7, maps: vec!["".into()] };
        assert_eq!(decode_sm(&action_data(&empty)), Err(E::BAC_BAD_ARGUMENT));
        let long = SendMaps { prog_id: 7, maps: vec!["m".repeat(65)] };
        assert_eq!(decode_sm(&action_data(&long)), Err(E::BAC_BAD_ARGUMENT));
        let many = SendMaps { prog_id: 7, maps: (0..16).map(|i| "m".repeat(64 - i)).collect() };
        assert_eq!(decode_sm(&action_data(&many)), Ok(many.clone()));
        assert_eq!(many.check(), Ok(()));
        let mut too_many = many;
        too_many.maps.push("x".into());
        assert_eq!(too_many.check(), Err(E::BAC_BAD_ARGUMENT));
        assert_eq!(decode_sm(&action_data(&too_many)), Err(E::BAC_BAD_ARGUMENT));
    }

    fn action_data(s: &SendMaps) -> Vec<u8> {
        match s.to_action() {
            Action::Experimenter { data, .. } => data,
            _ => unreachable!(),
        }
    }

    /// Whether an accepted body re-encodes to `b` and passes `check`
    /// (refused bodies are fine).
    fn exact<T>(
        b: &[u8],
        decoded: Decoded<T>,
        encode: fn(&T) -> Vec<u8>,
        check: fn(&T) -> Decoded<()>,
    ) -> bool {
        decoded.map_or(true, |m| encode(&m) == b && check(&m).is_ok())
    }

    fn arb_name() -> impl Strategy<Value = String> {
        "[A-Za-z0-9_.]{1,64}"
    }

    fn arb_prog() -> impl Strategy<Value = u32> {
        prop_oneof![1u32..=16, 1u32..=0xffff_fffe, Just(0xffff_fffe)]
    }

    fn arb_entries(
        ks: u16,
        vs: u16,
        n: std::ops::RangeInclusive<usize>,
    ) -> impl Strategy<Value = Vec<(Vec<u8>, Vec<u8>)>> {
        vec((vec(any::<u8>(), usize::from(ks)), vec(any::<u8>(), usize::from(vs))), n)
    }

    fn arb_block(max_entries: usize) -> impl Strategy<Value = MapBlock> {
        (arb_name(), 1u16..=12, 1u16..=12, 0..=max_entries).prop_flat_map(|(name, ks, vs, n)| {
            arb_entries(ks, vs, n..=n).prop_map(move |entries| MapBlock {
                name: name.clone(),
                key_size: ks,
                value_size: vs,
                entries,
            })
        })
    }

    fn arb_update() -> impl Strategy<Value = UpdateMap> {
        (arb_prog(), any::<bool>(), arb_name(), 1u16..=12, 1u16..=12, 1usize..=20).prop_flat_map(
            |(prog_id, delete, map, ks, vs, n)| {
                let vs = if delete { 0 } else { vs };
                arb_entries(ks, vs, n..=n).prop_map(move |entries| UpdateMap {
                    prog_id,
                    delete,
                    map: map.clone(),
                    key_size: ks,
                    value_size: vs,
                    entries,
                })
            },
        )
    }

    fn arb_load() -> impl Strategy<Value = LoadFilterProg> {
        (arb_prog(), 1u32..=300, any::<u32>(), any::<u32>(), any::<u8>()).prop_map(
            |(prog_id, total_len, a, b, byte)| {
                let offset = a % total_len;
                let n = 1 + b % (total_len - offset);
                LoadFilterProg {
                    prog_id,
                    more: offset + n < total_len,
                    offset,
                    total_len,
                    bytes: vec![byte; n as usize],
                }
            },
        )
    }

    fn arb_report() -> impl Strategy<Value = MapsReport> {
        (arb_prog(), any::<u8>(), any::<u64>(), any::<bool>(), vec(arb_block(6), 0..5)).prop_map(
            |(prog_id, table_id, cookie, more, maps)| MapsReport {
                prog_id,
                table_id,
                cookie,
                more,
                maps,
            },
        )
    }

    fn arb_send_maps() -> impl Strategy<Value = SendMaps> {
        (arb_prog(), proptest::collection::btree_set(arb_name(), 1..=MAX_SEND_MAPS))
            .prop_map(|(prog_id, maps)| SendMaps { prog_id, maps: maps.into_iter().collect() })
    }

    /// Maps with distinct neighbouring names (so joining is unambiguous).
    fn arb_report_maps() -> impl Strategy<Value = Vec<MapBlock>> {
        vec(arb_block(40), 0..6).prop_map(|mut maps| {
            for (i, m) in maps.iter_mut().enumerate() {
                m.name = format!("{i}{}", &m.name[..m.name.len().min(60)]);
            }
            maps
        })
    }

    proptest! {
        #[test]
        fn messages_round_trip(
            load in arb_load(),
            prog in arb_prog(),
            upd in arb_update(),
            rep in arb_report(),
            name in arb_name(),
            block in arb_block(20),
        ) {
            let msgs = [
                FilterMsg::Load(load),
                FilterMsg::Unload(UnloadFilterProg { prog_id: prog }),
                FilterMsg::UpdateMap(upd),
                FilterMsg::MapsReport(rep),
            ];
            for m in msgs {
                let back = via_wire(&m.to_message());
                let Message::Experimenter(e) = &back else { unreachable!() };
                prop_assert_eq!(FilterMsg::from_experimenter(e), Some(Ok(m)));
            }
            let req = DumpMapRequest { prog_id: prog, map: name };
            prop_assert_eq!(req.check(), Ok(()));
            prop_assert_eq!(DumpMapRequest::decode(&req.encode()), Ok(req));
            let rep = DumpMapReply { prog_id: prog, map: block };
            prop_assert_eq!(rep.check(), Ok(()));
            prop_assert_eq!(DumpMapReply::decode(&rep.encode()), Ok(rep));
        }

        #[test]
        fn send_maps_round_trips(s in arb_send_maps()) {
            prop_assert_eq!(s.check(), Ok(()));
            let a = s.to_action();
            let mut b = Vec::new();
            a.emit(&mut b);
            prop_assert_eq!(b.len() % 8, 0);
            let back = Action::parse(&mut Reader::new(&b, BAD_LEN)).unwrap();
            prop_assert_eq!(&back, &a);
            prop_assert_eq!(SendMaps::from_action(&back), Some(Ok(s)));
        }

        /// Any bytes, as every body: no panic, and what is accepted
        /// re-encodes to the same bytes and passes `check`.
        #[test]
        fn arbitrary_bodies(bytes in vec(any::<u8>(), 0..200), valid_id: bool) {
            // Often a valid program id, so decoding goes past it.
            let mut b = bytes;
            if valid_id && b.len() >= 4 {
                b[..4].copy_from_slice(&7u32.to_be_bytes());
            }
            prop_assert!(exact(
                &b,
                LoadFilterProg::decode(&b),
                LoadFilterProg::encode,
                LoadFilterProg::check
            ));
            prop_assert!(exact(
                &b,
                UnloadFilterProg::decode(&b),
                UnloadFilterProg::encode,
                UnloadFilterProg::check
            ));
            prop_assert!(exact(&b, UpdateMap::decode(&b), UpdateMap::encode, UpdateMap::check));
            prop_assert!(exact(&b, MapsReport::decode(&b), MapsReport::encode, MapsReport::check));
            prop_assert!(exact(
                &b,
                DumpMapRequest::decode(&b),
                DumpMapRequest::encode,
                DumpMapRequest::check
            ));
            prop_assert!(exact(
                &b,
                DumpMapReply::decode(&b),
                DumpMapReply::encode,
                DumpMapReply::check
            ));
            if let Ok(v) = DumpMapReply::decode_all(&b) {
                let again: Vec<u8> = v.iter().flat_map(DumpMapReply::encode).collect();
                prop_assert_eq!(again, b.clone());
            }
            let mut d = b.clone();
            if d.len() >= 2 {
                d[..2].copy_from_slice(&SEND_MAPS_SUBTYPE.to_be_bytes());
            }
            let a = sm_action(&d);
            if let Some(Ok(s)) = SendMaps::from_action(&a) {
                prop_assert_eq!(s.to_action(), a);
            }
        }

        /// Valid encodings with one byte changed: never a panic; accepted
        /// means re-encoded identically.
        #[test]
        fn mutated_bodies(upd in arb_update(), rep in arb_report(), at: usize, byte: u8) {
            for (mut b, which) in [(upd.encode(), 0), (rep.encode(), 1)] {
                let i = at % b.len();
                b[i] = byte;
                if which == 0 {
                    if let Ok(m) = UpdateMap::decode(&b) { prop_assert_eq!(m.encode(), b); }
                } else if let Ok(m) = MapsReport::decode(&b) {
                    prop_assert_eq!(m.encode(), b);
                }
            }
        }

        /// Split reports: every message within the limit (or one entry
        /// alone), MORE on all but the last, nothing lost or reordered.
        #[test]
        fn split_report_keeps_everything(maps in arb_report_maps(), max_len in 40usize..700) {
            let parts = split_report(7, 1, 2, maps.clone(), max_len);
            prop_assert!(!parts.is_empty());
            for (i, (len, p)) in report_wire(&parts).iter().enumerate() {
                prop_assert_eq!(p.more, i + 1 < parts.len());
                prop_assert!(!p.maps.is_empty() || maps.is_empty());
                if *len > max_len {
                    prop_assert_eq!(p.maps.len(), 1);
                    prop_assert!(p.maps[0].entries.len() <= 1);
                }
            }
            prop_assert_eq!(join_blocks(parts.into_iter().flat_map(|p| p.maps)), maps);
        }

        #[test]
        fn split_dump_keeps_everything(block in arb_block(60), max_body in 16usize..500) {
            let parts = split_dump(9, block.clone(), max_body);
            prop_assert!(!parts.is_empty());
            for p in &parts {
                prop_assert_eq!(&DumpMapReply::decode(&p.encode()), &Ok(p.clone()));
                if p.wire_len() > max_body {
                    prop_assert!(p.map.entries.len() <= 1);
                }
            }
            prop_assert_eq!(join_blocks(parts.into_iter().map(|p| p.map)), vec![block]);
        }

        /// Fragments of any object under any limit reassemble exactly.
        #[test]
        fn fragments_reassemble(obj in vec(any::<u8>(), 1..3000), max in 0usize..700) {
            let mut asm = Assembly::new();
            let frags = fragments(3, &obj, max).unwrap();
            let mut out = None;
            for f in &frags {
                prop_assert!(out.is_none());
                prop_assert_eq!(f.check(), Ok(()));
                out = asm.push(f).unwrap();
            }
            prop_assert_eq!(out, Some((3, obj)));
        }
    }
}
