//! The fixed-layout and per-entry multipart bodies (OpenFlow 1.3.5 §7.3.5.1
//! to §7.3.5.13, except table features which have their own module).
//!
//! Sizes (from the spec's `OFP_ASSERT`s): `ofp_desc` 1056,
//! `ofp_flow_stats_request` 32 + match, `ofp_flow_stats` 48 + match +
//! instructions, `ofp_aggregate_stats_reply` 24, `ofp_table_stats` 24,
//! `ofp_port_stats` 112, `ofp_queue_stats` 40, `ofp_group_stats` 40 + 16 per
//! bucket counter, `ofp_group_desc` 8 + buckets, `ofp_group_features` 40,
//! `ofp_meter_stats` 40 + 16 per band, `ofp_meter_config` 8 + bands,
//! `ofp_meter_features` 16.
//!
//! Length rules, all answered with `OFPBRC_BAD_LEN`: fixed-size bodies must
//! have exactly their size; lists of fixed-size entries must be a whole
//! number of entries; a variable entry's own length field must be at least
//! its fixed part, a multiple of 8, and within the body, and for entries
//! made of 16-byte counters the counter area must be a whole number of
//! counters. Errors inside nested objects keep their own codes (match:
//! `OFPBMC_*`, instructions: `OFPBIC_*`, buckets: `OFPGMFC_BAD_BUCKET`,
//! actions: `OFPBAC_*`, bands: `OFPMMFC_BAD_BAND`).

use crate::consts::{DESC_STR_LEN, SERIAL_NUM_LEN};
use crate::error::{ErrorCode, Result};
use crate::group::{Bucket, GroupType};
use crate::instruction::Instruction;
use crate::meter::MeterBand;
use crate::oxm::Match;
use crate::wire::{patch_u16, Put, Reader};
use crate::wire::{put_str, read_str};

const BAD_LEN: ErrorCode = ErrorCode::BRC_BAD_LEN;

/// A multipart list entry: parsed from and emitted to a body one after the
/// other.
pub(crate) trait Entry: Sized {
    fn parse_entry(r: &mut Reader<'_>) -> Result<Self>;
    fn emit_entry(&self, out: &mut Vec<u8>);
    fn entry_len(&self) -> usize;
}

/// Parse a list of entries occupying all of `buf`.
pub(crate) fn parse_entries<E: Entry>(buf: &[u8]) -> Result<Vec<E>> {
    let mut r = Reader::new(buf, BAD_LEN);
    let mut v = Vec::new();
    while !r.is_empty() {
        let before = r.remaining();
        v.push(E::parse_entry(&mut r)?);
        if r.remaining() >= before {
            // Every entry has a non-empty fixed part; this is a guard.
            return Err(BAD_LEN);
        }
    }
    Ok(v)
}

pub(crate) fn emit_entries<E: Entry>(list: &[E], out: &mut Vec<u8>) {
    for e in list {
        e.emit_entry(out);
    }
}

pub(crate) fn entries_len<E: Entry>(list: &[E]) -> usize {
    list.iter().map(E::entry_len).sum()
}

/// Take one variable-length entry whose u16 length is at `len_at`: checks
/// the length (>= `fixed`, multiple of 8, within `r`) and returns a reader
/// over exactly the entry.
fn take_entry<'a>(r: &mut Reader<'a>, len_at: usize, fixed: usize) -> Result<Reader<'a>> {
    let rem = r.remaining();
    if rem < fixed {
        return Err(BAD_LEN);
    }
    let len = r.peek_u16(len_at).map_err(|_| BAD_LEN)? as usize;
    if len < fixed || len % 8 != 0 || len > rem {
        return Err(BAD_LEN);
    }
    Ok(Reader::new(r.bytes(len)?, BAD_LEN))
}

/// Fixed-size entries: generate `Entry` from inherent `parse`/`emit`.
macro_rules! fixed_entry {
    ($t:ty) => {
        impl Entry for $t {
            fn parse_entry(r: &mut Reader<'_>) -> Result<Self> {
                if r.remaining() < <$t>::LEN {
                    return Err(BAD_LEN);
                }
                <$t>::parse(r)
            }
            fn emit_entry(&self, out: &mut Vec<u8>) {
                self.emit(out)
            }
            fn entry_len(&self) -> usize {
                <$t>::LEN
            }
        }
    };
}

/// Variable entries: `Entry` from inherent `parse`/`emit`/`wire_len`.
macro_rules! var_entry {
    ($t:ty) => {
        impl Entry for $t {
            fn parse_entry(r: &mut Reader<'_>) -> Result<Self> {
                <$t>::parse(r)
            }
            fn emit_entry(&self, out: &mut Vec<u8>) {
                self.emit(out)
            }
            fn entry_len(&self) -> usize {
                self.wire_len()
            }
        }
    };
}

/// Parse a body that must be exactly one `N`-byte struct.
fn exact<'a>(buf: &'a [u8], n: usize) -> Result<Reader<'a>> {
    if buf.len() != n {
        return Err(BAD_LEN);
    }
    Ok(Reader::new(buf, BAD_LEN))
}

/// `struct ofp_desc` (reply to `OFPMP_DESC`), 1056 bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Desc {
    /// Manufacturer description (at most 255 bytes on the wire).
    pub mfr_desc: String,
    /// Hardware description.
    pub hw_desc: String,
    /// Software description.
    pub sw_desc: String,
    /// Serial number (at most 31 bytes).
    pub serial_num: String,
    /// Human readable description of the datapath.
    pub dp_desc: String,
}

impl Desc {
    pub const LEN: usize = 4 * DESC_STR_LEN + SERIAL_NUM_LEN;

    /// Parse a body of exactly 1056 bytes.
    pub fn parse(buf: &[u8]) -> Result<Desc> {
        let mut r = exact(buf, Self::LEN)?;
        Ok(Desc {
            mfr_desc: read_str(r.bytes(DESC_STR_LEN)?),
            hw_desc: read_str(r.bytes(DESC_STR_LEN)?),
            sw_desc: read_str(r.bytes(DESC_STR_LEN)?),
            serial_num: read_str(r.bytes(SERIAL_NUM_LEN)?),
            dp_desc: read_str(r.bytes(DESC_STR_LEN)?),
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        put_str(out, &self.mfr_desc, DESC_STR_LEN);
        put_str(out, &self.hw_desc, DESC_STR_LEN);
        put_str(out, &self.sw_desc, DESC_STR_LEN);
        put_str(out, &self.serial_num, SERIAL_NUM_LEN);
        put_str(out, &self.dp_desc, DESC_STR_LEN);
    }
}

/// `struct ofp_flow_stats_request`, the body of `OFPMP_FLOW` and
/// `OFPMP_AGGREGATE` requests (`ofp_aggregate_stats_request` has the same
/// layout).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowStatsRequest {
    /// `OFPTT_ALL` (0xff) for all tables.
    pub table_id: u8,
    /// `OFPP_ANY` for no filter.
    pub out_port: u32,
    /// `OFPG_ANY` for no filter.
    pub out_group: u32,
    pub cookie: u64,
    pub cookie_mask: u64,
    /// The match (`match` is a Rust keyword).
    pub match_: Match,
}

impl FlowStatsRequest {
    /// Length of the part before the match.
    pub const FIXED_LEN: usize = 32;

    /// Parse a whole request body: 32 bytes, a match, nothing after it.
    pub fn parse(buf: &[u8]) -> Result<FlowStatsRequest> {
        if buf.len() < Self::FIXED_LEN {
            return Err(BAD_LEN);
        }
        let mut r = Reader::new(buf, BAD_LEN);
        let table_id = r.u8()?;
        r.skip(3)?;
        let out_port = r.u32()?;
        let out_group = r.u32()?;
        r.skip(4)?;
        let cookie = r.u64()?;
        let cookie_mask = r.u64()?;
        let match_ = Match::parse(&mut r)?;
        if !r.is_empty() {
            return Err(BAD_LEN);
        }
        Ok(FlowStatsRequest { table_id, out_port, out_group, cookie, cookie_mask, match_ })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u8(self.table_id);
        out.put_zeros(3);
        out.put_u32(self.out_port);
        out.put_u32(self.out_group);
        out.put_zeros(4);
        out.put_u64(self.cookie);
        out.put_u64(self.cookie_mask);
        self.match_.emit(out);
    }

    pub fn wire_len(&self) -> usize {
        Self::FIXED_LEN + self.match_.wire_len()
    }
}

/// `struct ofp_flow_stats`, one entry of an `OFPMP_FLOW` reply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowStats {
    pub table_id: u8,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub priority: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    /// `OFPFF_*` bits.
    pub flags: u16,
    pub cookie: u64,
    pub packet_count: u64,
    pub byte_count: u64,
    pub match_: Match,
    pub instructions: Vec<Instruction>,
}

impl FlowStats {
    /// Length of the part before the match.
    pub const FIXED_LEN: usize = 48;
    /// Smallest valid entry: fixed part and an empty 8-byte match.
    pub const MIN_LEN: usize = 56;

    /// Parse one entry at the reader's position.
    pub fn parse(r: &mut Reader<'_>) -> Result<FlowStats> {
        let mut e = take_entry(r, 0, Self::MIN_LEN)?;
        e.skip(2)?;
        let table_id = e.u8()?;
        e.skip(1)?;
        let duration_sec = e.u32()?;
        let duration_nsec = e.u32()?;
        let priority = e.u16()?;
        let idle_timeout = e.u16()?;
        let hard_timeout = e.u16()?;
        let flags = e.u16()?;
        e.skip(4)?;
        let cookie = e.u64()?;
        let packet_count = e.u64()?;
        let byte_count = e.u64()?;
        let match_ = Match::parse(&mut e)?;
        let instructions = Instruction::parse_list(e.rest())?;
        Ok(FlowStats {
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
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(0);
        out.put_u8(self.table_id);
        out.put_zeros(1);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
        out.put_u16(self.priority);
        out.put_u16(self.idle_timeout);
        out.put_u16(self.hard_timeout);
        out.put_u16(self.flags);
        out.put_zeros(4);
        out.put_u64(self.cookie);
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
        self.match_.emit(out);
        Instruction::emit_list(&self.instructions, out);
        let len = out.len() - start;
        patch_u16(out, start, len as u16);
    }

    pub fn wire_len(&self) -> usize {
        Self::FIXED_LEN
            + self.match_.wire_len()
            + self.instructions.iter().map(Instruction::wire_len).sum::<usize>()
    }
}
var_entry!(FlowStats);

/// `struct ofp_aggregate_stats_reply`, 24 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AggregateStats {
    pub packet_count: u64,
    pub byte_count: u64,
    pub flow_count: u32,
}

impl AggregateStats {
    pub const LEN: usize = 24;

    /// Parse a body of exactly 24 bytes.
    pub fn parse(buf: &[u8]) -> Result<AggregateStats> {
        let mut r = exact(buf, Self::LEN)?;
        Ok(AggregateStats { packet_count: r.u64()?, byte_count: r.u64()?, flow_count: r.u32()? })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
        out.put_u32(self.flow_count);
        out.put_zeros(4);
    }
}

/// `struct ofp_table_stats`, 24 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TableStats {
    pub table_id: u8,
    pub active_count: u32,
    pub lookup_count: u64,
    pub matched_count: u64,
}

impl TableStats {
    pub const LEN: usize = 24;

    pub fn parse(r: &mut Reader<'_>) -> Result<TableStats> {
        let table_id = r.u8()?;
        r.skip(3)?;
        Ok(TableStats {
            table_id,
            active_count: r.u32()?,
            lookup_count: r.u64()?,
            matched_count: r.u64()?,
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u8(self.table_id);
        out.put_zeros(3);
        out.put_u32(self.active_count);
        out.put_u64(self.lookup_count);
        out.put_u64(self.matched_count);
    }
}
fixed_entry!(TableStats);

/// `struct ofp_port_stats`, 112 bytes. Unsupported counters are all ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PortStats {
    pub port_no: u32,
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
    pub rx_frame_err: u64,
    pub rx_over_err: u64,
    pub rx_crc_err: u64,
    pub collisions: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
}

impl PortStats {
    pub const LEN: usize = 112;

    pub fn parse(r: &mut Reader<'_>) -> Result<PortStats> {
        let port_no = r.u32()?;
        r.skip(4)?;
        Ok(PortStats {
            port_no,
            rx_packets: r.u64()?,
            tx_packets: r.u64()?,
            rx_bytes: r.u64()?,
            tx_bytes: r.u64()?,
            rx_dropped: r.u64()?,
            tx_dropped: r.u64()?,
            rx_errors: r.u64()?,
            tx_errors: r.u64()?,
            rx_frame_err: r.u64()?,
            rx_over_err: r.u64()?,
            rx_crc_err: r.u64()?,
            collisions: r.u64()?,
            duration_sec: r.u32()?,
            duration_nsec: r.u32()?,
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.port_no);
        out.put_zeros(4);
        for v in [
            self.rx_packets,
            self.tx_packets,
            self.rx_bytes,
            self.tx_bytes,
            self.rx_dropped,
            self.tx_dropped,
            self.rx_errors,
            self.tx_errors,
            self.rx_frame_err,
            self.rx_over_err,
            self.rx_crc_err,
            self.collisions,
        ] {
            out.put_u64(v);
        }
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
    }
}
fixed_entry!(PortStats);

/// `struct ofp_queue_stats`, 40 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct QueueStats {
    pub port_no: u32,
    pub queue_id: u32,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errors: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
}

impl QueueStats {
    pub const LEN: usize = 40;

    pub fn parse(r: &mut Reader<'_>) -> Result<QueueStats> {
        Ok(QueueStats {
            port_no: r.u32()?,
            queue_id: r.u32()?,
            tx_bytes: r.u64()?,
            tx_packets: r.u64()?,
            tx_errors: r.u64()?,
            duration_sec: r.u32()?,
            duration_nsec: r.u32()?,
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.port_no);
        out.put_u32(self.queue_id);
        out.put_u64(self.tx_bytes);
        out.put_u64(self.tx_packets);
        out.put_u64(self.tx_errors);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
    }
}
fixed_entry!(QueueStats);

/// `struct ofp_bucket_counter`, 16 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BucketCounter {
    pub packet_count: u64,
    pub byte_count: u64,
}

/// `struct ofp_group_stats`, one entry of an `OFPMP_GROUP` reply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GroupStats {
    pub group_id: u32,
    pub ref_count: u32,
    pub packet_count: u64,
    pub byte_count: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    /// One counter per bucket, in bucket order.
    pub bucket_stats: Vec<BucketCounter>,
}

impl GroupStats {
    pub const FIXED_LEN: usize = 40;

    pub fn parse(r: &mut Reader<'_>) -> Result<GroupStats> {
        let mut e = take_entry(r, 0, Self::FIXED_LEN)?;
        if (e.remaining() - Self::FIXED_LEN) % 16 != 0 {
            return Err(BAD_LEN);
        }
        e.skip(4)?;
        let group_id = e.u32()?;
        let ref_count = e.u32()?;
        e.skip(4)?;
        let packet_count = e.u64()?;
        let byte_count = e.u64()?;
        let duration_sec = e.u32()?;
        let duration_nsec = e.u32()?;
        let mut bucket_stats = Vec::with_capacity(e.remaining() / 16);
        while !e.is_empty() {
            bucket_stats.push(BucketCounter { packet_count: e.u64()?, byte_count: e.u64()? });
        }
        Ok(GroupStats {
            group_id,
            ref_count,
            packet_count,
            byte_count,
            duration_sec,
            duration_nsec,
            bucket_stats,
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u16(self.wire_len() as u16);
        out.put_zeros(2);
        out.put_u32(self.group_id);
        out.put_u32(self.ref_count);
        out.put_zeros(4);
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
        for c in &self.bucket_stats {
            out.put_u64(c.packet_count);
            out.put_u64(c.byte_count);
        }
    }

    pub fn wire_len(&self) -> usize {
        Self::FIXED_LEN + 16 * self.bucket_stats.len()
    }
}
var_entry!(GroupStats);

/// `struct ofp_group_desc`, one entry of an `OFPMP_GROUP_DESC` reply.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroupDesc {
    pub group_type: GroupType,
    pub group_id: u32,
    pub buckets: Vec<Bucket>,
}

impl GroupDesc {
    pub const FIXED_LEN: usize = 8;

    pub fn parse(r: &mut Reader<'_>) -> Result<GroupDesc> {
        let mut e = take_entry(r, 0, Self::FIXED_LEN)?;
        e.skip(2)?;
        let group_type = GroupType::from_u8(e.u8()?);
        e.skip(1)?;
        let group_id = e.u32()?;
        let buckets = Bucket::parse_list(e.rest())?;
        Ok(GroupDesc { group_type, group_id, buckets })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(0);
        out.put_u8(self.group_type.to_u8());
        out.put_zeros(1);
        out.put_u32(self.group_id);
        Bucket::emit_list(&self.buckets, out);
        let len = out.len() - start;
        patch_u16(out, start, len as u16);
    }

    pub fn wire_len(&self) -> usize {
        Self::FIXED_LEN + Bucket::list_len(&self.buckets)
    }
}
var_entry!(GroupDesc);

/// `struct ofp_group_features`, 40 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GroupFeatures {
    /// Bitmap of `1 << OFPGT_*` supported.
    pub types: u32,
    /// `OFPGFC_*` bits.
    pub capabilities: u32,
    /// Maximum number of groups, per type.
    pub max_groups: [u32; 4],
    /// Bitmaps of `1 << OFPAT_*` supported, per type.
    pub actions: [u32; 4],
}

impl GroupFeatures {
    pub const LEN: usize = 40;

    /// Parse a body of exactly 40 bytes.
    pub fn parse(buf: &[u8]) -> Result<GroupFeatures> {
        let mut r = exact(buf, Self::LEN)?;
        let types = r.u32()?;
        let capabilities = r.u32()?;
        let mut max_groups = [0u32; 4];
        for m in &mut max_groups {
            *m = r.u32()?;
        }
        let mut actions = [0u32; 4];
        for a in &mut actions {
            *a = r.u32()?;
        }
        Ok(GroupFeatures { types, capabilities, max_groups, actions })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.types);
        out.put_u32(self.capabilities);
        for v in self.max_groups.iter().chain(self.actions.iter()) {
            out.put_u32(*v);
        }
    }
}

/// `struct ofp_meter_band_stats`, 16 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MeterBandStats {
    pub packet_band_count: u64,
    pub byte_band_count: u64,
}

/// `struct ofp_meter_stats`, one entry of an `OFPMP_METER` reply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MeterStats {
    pub meter_id: u32,
    pub flow_count: u32,
    pub packet_in_count: u64,
    pub byte_in_count: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    /// One per band, in the order of the meter's configuration.
    pub band_stats: Vec<MeterBandStats>,
}

impl MeterStats {
    pub const FIXED_LEN: usize = 40;

    pub fn parse(r: &mut Reader<'_>) -> Result<MeterStats> {
        let mut e = take_entry(r, 4, Self::FIXED_LEN)?;
        if (e.remaining() - Self::FIXED_LEN) % 16 != 0 {
            return Err(BAD_LEN);
        }
        let meter_id = e.u32()?;
        e.skip(8)?;
        let flow_count = e.u32()?;
        let packet_in_count = e.u64()?;
        let byte_in_count = e.u64()?;
        let duration_sec = e.u32()?;
        let duration_nsec = e.u32()?;
        let mut band_stats = Vec::with_capacity(e.remaining() / 16);
        while !e.is_empty() {
            band_stats
                .push(MeterBandStats { packet_band_count: e.u64()?, byte_band_count: e.u64()? });
        }
        Ok(MeterStats {
            meter_id,
            flow_count,
            packet_in_count,
            byte_in_count,
            duration_sec,
            duration_nsec,
            band_stats,
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.meter_id);
        out.put_u16(self.wire_len() as u16);
        out.put_zeros(6);
        out.put_u32(self.flow_count);
        out.put_u64(self.packet_in_count);
        out.put_u64(self.byte_in_count);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
        for b in &self.band_stats {
            out.put_u64(b.packet_band_count);
            out.put_u64(b.byte_band_count);
        }
    }

    pub fn wire_len(&self) -> usize {
        Self::FIXED_LEN + 16 * self.band_stats.len()
    }
}
var_entry!(MeterStats);

/// `struct ofp_meter_config`, one entry of an `OFPMP_METER_CONFIG` reply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MeterConfig {
    /// `OFPMF_*` bits.
    pub flags: u16,
    pub meter_id: u32,
    pub bands: Vec<MeterBand>,
}

impl MeterConfig {
    pub const FIXED_LEN: usize = 8;

    pub fn parse(r: &mut Reader<'_>) -> Result<MeterConfig> {
        let mut e = take_entry(r, 0, Self::FIXED_LEN)?;
        e.skip(2)?;
        let flags = e.u16()?;
        let meter_id = e.u32()?;
        let bands = MeterBand::parse_list(e.rest())?;
        Ok(MeterConfig { flags, meter_id, bands })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(0);
        out.put_u16(self.flags);
        out.put_u32(self.meter_id);
        MeterBand::emit_list(&self.bands, out);
        let len = out.len() - start;
        patch_u16(out, start, len as u16);
    }

    pub fn wire_len(&self) -> usize {
        Self::FIXED_LEN + MeterBand::list_len(&self.bands)
    }
}
var_entry!(MeterConfig);

/// `struct ofp_meter_features`, 16 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MeterFeatures {
    pub max_meter: u32,
    /// Bitmap of `1 << OFPMBT_*` supported.
    pub band_types: u32,
    /// `OFPMF_*` bits supported.
    pub capabilities: u32,
    pub max_bands: u8,
    pub max_color: u8,
}

impl MeterFeatures {
    pub const LEN: usize = 16;

    /// Parse a body of exactly 16 bytes.
    pub fn parse(buf: &[u8]) -> Result<MeterFeatures> {
        let mut r = exact(buf, Self::LEN)?;
        Ok(MeterFeatures {
            max_meter: r.u32()?,
            band_types: r.u32()?,
            capabilities: r.u32()?,
            max_bands: r.u8()?,
            max_color: r.u8()?,
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.max_meter);
        out.put_u32(self.band_types);
        out.put_u32(self.capabilities);
        out.put_u8(self.max_bands);
        out.put_u8(self.max_color);
        out.put_zeros(2);
    }
}

fixed_entry!(crate::port::Port);
