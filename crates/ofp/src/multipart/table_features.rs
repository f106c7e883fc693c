//! Table features (OpenFlow 1.3.5 §7.3.5.5): `struct ofp_table_features`
//! and its properties, the body of `OFPMP_TABLE_FEATURES` requests and
//! replies.
//!
//! ```text
//! struct ofp_table_features (64 + properties):
//!  0 length u16   2 table_id u8   3 pad[5]   8 name[32]
//! 40 metadata_match u64   48 metadata_write u64   56 config u32
//! 60 max_entries u32      64 properties…
//! property: type u16, length u16, body (length - 4 bytes), then zero
//!           padding to a multiple of 8 that `length` does not count.
//! ```
//!
//! Property bodies by type:
//! - `INSTRUCTIONS(0)`/`_MISS(1)`: instruction ids; `WRITE_ACTIONS(4)`,
//!   `APPLY_ACTIONS(6)` and their `_MISS` (5, 7): action ids. An id is the
//!   object's header only: `type u16, len u16`, 4 bytes for standard types;
//!   an experimenter id (type 0xffff) is `type, len, experimenter u32` plus
//!   whatever experimenter bytes `len` covers ([`FeatureId`]).
//! - `NEXT_TABLES(2)`/`_MISS(3)`: one byte per table id.
//! - `MATCH(8)`, `WILDCARDS(10)`, `WRITE_SETFIELD(12)`/`_MISS(13)`,
//!   `APPLY_SETFIELD(14)`/`_MISS(15)`: OXM ids, 32-bit OXM headers, or 64
//!   bits (header + experimenter id) when the class is `OFPXMC_EXPERIMENTER`,
//!   as the spec says for experimenter fields ([`OxmId`]).
//! - `EXPERIMENTER(0xfffe)`/`_MISS(0xffff)`: experimenter u32, exp_type u32,
//!   data.
//! - Any other type is kept verbatim as [`TableFeatureProp::Unknown`].
//!
//! Errors, decided as follows:
//! - The `ofp_table_features` entry itself is a multipart list entry: a
//!   `length` below 64, not a multiple of 8, or past the end of the body is
//!   `OFPBRC_BAD_LEN`, like every other multipart entry.
//! - Everything inside the property list is `OFPTFFC_BAD_LEN` ("length
//!   problem in properties"): a property `length` below 4 (or below 12 for
//!   experimenter properties), a property whose padded length runs past the
//!   end of the entry, an id whose `len` is below 4 (8 for experimenter
//!   ids) or runs past its property, a standard id whose `len` is not 4, and
//!   an OXM id list that does not divide into whole ids.
//! - `OFPTFFC_BAD_TYPE` ("unknown property type") is not raised by the
//!   parser, which preserves unknown properties as the crate promises;
//!   [`TableFeatures::check_known`] returns it for the first unknown
//!   property, for a switch that must refuse to apply such a request.

use crate::consts::OFP_MAX_TABLE_NAME_LEN;
use crate::error::{ErrorCode, Result};
use crate::oxm::{OxmHeader, OFPXMC_EXPERIMENTER};
use crate::wire::{pad8, patch_u16, Put, Reader};
use crate::wire::{put_str, read_str};

use super::stats::Entry;

const TF_LEN: ErrorCode = ErrorCode::TFFC_BAD_LEN;

/// `OFPTFPT_*` property types.
pub mod prop_type {
    pub const INSTRUCTIONS: u16 = 0;
    pub const INSTRUCTIONS_MISS: u16 = 1;
    pub const NEXT_TABLES: u16 = 2;
    pub const NEXT_TABLES_MISS: u16 = 3;
    pub const WRITE_ACTIONS: u16 = 4;
    pub const WRITE_ACTIONS_MISS: u16 = 5;
    pub const APPLY_ACTIONS: u16 = 6;
    pub const APPLY_ACTIONS_MISS: u16 = 7;
    pub const MATCH: u16 = 8;
    pub const WILDCARDS: u16 = 10;
    pub const WRITE_SETFIELD: u16 = 12;
    pub const WRITE_SETFIELD_MISS: u16 = 13;
    pub const APPLY_SETFIELD: u16 = 14;
    pub const APPLY_SETFIELD_MISS: u16 = 15;
    pub const EXPERIMENTER: u16 = 0xfffe;
    pub const EXPERIMENTER_MISS: u16 = 0xffff;
}

/// Experimenter instruction/action type (`OFPIT_EXPERIMENTER`,
/// `OFPAT_EXPERIMENTER`).
const EXPERIMENTER_ID_TYPE: u16 = 0xffff;

/// An instruction id or action id: the header of an instruction or action,
/// without its body.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FeatureId {
    /// A standard (or unknown non-experimenter) type; 4 bytes on the wire
    /// with `len` 4. The type must not be 0xffff.
    Type(u16),
    /// Type 0xffff: the experimenter id and any further bytes the id's `len`
    /// covers, verbatim.
    Experimenter { experimenter: u32, data: Vec<u8> },
}

/// Instruction ids of `OFPTFPT_INSTRUCTIONS[_MISS]`.
pub type InstructionId = FeatureId;
/// Action ids of `OFPTFPT_*_ACTIONS[_MISS]`.
pub type ActionId = FeatureId;

impl FeatureId {
    pub fn wire_len(&self) -> usize {
        match self {
            FeatureId::Type(_) => 4,
            FeatureId::Experimenter { data, .. } => 8 + data.len(),
        }
    }

    fn parse(r: &mut Reader<'_>) -> Result<FeatureId> {
        let rem = r.remaining();
        let ty = r.peek_u16(0).map_err(|_| TF_LEN)?;
        let len = r.peek_u16(2).map_err(|_| TF_LEN)? as usize;
        let min = if ty == EXPERIMENTER_ID_TYPE { 8 } else { 4 };
        if len < min || len > rem || (ty != EXPERIMENTER_ID_TYPE && len != 4) {
            return Err(TF_LEN);
        }
        let mut b = Reader::new(r.bytes(len)?, TF_LEN);
        b.skip(4)?;
        if ty == EXPERIMENTER_ID_TYPE {
            Ok(FeatureId::Experimenter { experimenter: b.u32()?, data: b.rest().to_vec() })
        } else {
            Ok(FeatureId::Type(ty))
        }
    }

    fn emit(&self, out: &mut Vec<u8>) {
        match self {
            FeatureId::Type(t) => {
                out.put_u16(*t);
                out.put_u16(4);
            }
            FeatureId::Experimenter { experimenter, data } => {
                out.put_u16(EXPERIMENTER_ID_TYPE);
                out.put_u16(self.wire_len() as u16);
                out.put_u32(*experimenter);
                out.put_slice(data);
            }
        }
    }

    fn parse_list(buf: &[u8]) -> Result<Vec<FeatureId>> {
        let mut r = Reader::new(buf, TF_LEN);
        let mut v = Vec::new();
        while !r.is_empty() {
            // Every successful parse consumes at least 4 bytes.
            v.push(FeatureId::parse(&mut r)?);
        }
        Ok(v)
    }
}

/// An OXM id: a 32-bit OXM header, plus the experimenter id when the class
/// is `OFPXMC_EXPERIMENTER`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OxmId {
    pub header: OxmHeader,
    /// `Some` exactly when the header's class is `OFPXMC_EXPERIMENTER`.
    pub experimenter: Option<u32>,
}

impl OxmId {
    /// A non-experimenter id.
    pub fn new(header: OxmHeader) -> Self {
        OxmId { header, experimenter: None }
    }

    fn is_experimenter_class(h: u32) -> bool {
        (h >> 16) as u16 == OFPXMC_EXPERIMENTER
    }

    pub fn wire_len(&self) -> usize {
        if self.experimenter.is_some() {
            8
        } else {
            4
        }
    }

    fn parse_list(buf: &[u8]) -> Result<Vec<OxmId>> {
        let mut r = Reader::new(buf, TF_LEN);
        let mut v = Vec::with_capacity(buf.len() / 4);
        while !r.is_empty() {
            let h = r.u32()?;
            let experimenter = if Self::is_experimenter_class(h) { Some(r.u32()?) } else { None };
            v.push(OxmId { header: OxmHeader(h), experimenter });
        }
        Ok(v)
    }

    fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.header.0);
        if let Some(e) = self.experimenter {
            out.put_u32(e);
        }
    }
}

/// One table feature property. `miss` selects the `_MISS` variant of the
/// type (the table-miss flow entry's capabilities).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TableFeatureProp {
    Instructions {
        miss: bool,
        ids: Vec<InstructionId>,
    },
    NextTables {
        miss: bool,
        tables: Vec<u8>,
    },
    WriteActions {
        miss: bool,
        ids: Vec<ActionId>,
    },
    ApplyActions {
        miss: bool,
        ids: Vec<ActionId>,
    },
    Match(Vec<OxmId>),
    Wildcards(Vec<OxmId>),
    WriteSetfield {
        miss: bool,
        ids: Vec<OxmId>,
    },
    ApplySetfield {
        miss: bool,
        ids: Vec<OxmId>,
    },
    Experimenter {
        miss: bool,
        experimenter: u32,
        exp_type: u32,
        data: Vec<u8>,
    },
    /// Any other type (never one of the numbers above): the body between
    /// the 4-byte header and the padding, verbatim.
    Unknown {
        ty: u16,
        data: Vec<u8>,
    },
}

impl TableFeatureProp {
    /// The `OFPTFPT_*` type number.
    pub fn prop_type(&self) -> u16 {
        use prop_type as t;
        let m = |miss: &bool, base: u16| base + u16::from(*miss);
        match self {
            TableFeatureProp::Instructions { miss, .. } => m(miss, t::INSTRUCTIONS),
            TableFeatureProp::NextTables { miss, .. } => m(miss, t::NEXT_TABLES),
            TableFeatureProp::WriteActions { miss, .. } => m(miss, t::WRITE_ACTIONS),
            TableFeatureProp::ApplyActions { miss, .. } => m(miss, t::APPLY_ACTIONS),
            TableFeatureProp::Match(_) => t::MATCH,
            TableFeatureProp::Wildcards(_) => t::WILDCARDS,
            TableFeatureProp::WriteSetfield { miss, .. } => m(miss, t::WRITE_SETFIELD),
            TableFeatureProp::ApplySetfield { miss, .. } => m(miss, t::APPLY_SETFIELD),
            TableFeatureProp::Experimenter { miss, .. } => m(miss, t::EXPERIMENTER),
            TableFeatureProp::Unknown { ty, .. } => *ty,
        }
    }

    /// The `length` field: header and body, without the padding.
    pub fn unpadded_len(&self) -> usize {
        let ids = |v: &[FeatureId]| v.iter().map(FeatureId::wire_len).sum::<usize>();
        let oxms = |v: &[OxmId]| v.iter().map(OxmId::wire_len).sum::<usize>();
        4 + match self {
            TableFeatureProp::Instructions { ids: v, .. }
            | TableFeatureProp::WriteActions { ids: v, .. }
            | TableFeatureProp::ApplyActions { ids: v, .. } => ids(v),
            TableFeatureProp::NextTables { tables, .. } => tables.len(),
            TableFeatureProp::Match(v)
            | TableFeatureProp::Wildcards(v)
            | TableFeatureProp::WriteSetfield { ids: v, .. }
            | TableFeatureProp::ApplySetfield { ids: v, .. } => oxms(v),
            TableFeatureProp::Experimenter { data, .. } => 8 + data.len(),
            TableFeatureProp::Unknown { data, .. } => data.len(),
        }
    }

    /// Bytes on the wire, padding included.
    pub fn wire_len(&self) -> usize {
        pad8(self.unpadded_len())
    }

    /// Parse one property (with its padding) at the reader's position.
    pub fn parse(r: &mut Reader<'_>) -> Result<TableFeatureProp> {
        use prop_type as t;
        let rem = r.remaining();
        let ty = r.peek_u16(0).map_err(|_| TF_LEN)?;
        let len = r.peek_u16(2).map_err(|_| TF_LEN)? as usize;
        if len < 4 || pad8(len) > rem {
            return Err(TF_LEN);
        }
        let mut p = Reader::new(r.bytes(len)?, TF_LEN);
        r.skip(pad8(len) - len)?;
        p.skip(4)?;
        let miss = ty & 1 == 1;
        Ok(match ty {
            t::INSTRUCTIONS | t::INSTRUCTIONS_MISS => {
                TableFeatureProp::Instructions { miss, ids: FeatureId::parse_list(p.rest())? }
            }
            t::NEXT_TABLES | t::NEXT_TABLES_MISS => {
                TableFeatureProp::NextTables { miss, tables: p.rest().to_vec() }
            }
            t::WRITE_ACTIONS | t::WRITE_ACTIONS_MISS => {
                TableFeatureProp::WriteActions { miss, ids: FeatureId::parse_list(p.rest())? }
            }
            t::APPLY_ACTIONS | t::APPLY_ACTIONS_MISS => {
                TableFeatureProp::ApplyActions { miss, ids: FeatureId::parse_list(p.rest())? }
            }
            t::MATCH => TableFeatureProp::Match(OxmId::parse_list(p.rest())?),
            t::WILDCARDS => TableFeatureProp::Wildcards(OxmId::parse_list(p.rest())?),
            t::WRITE_SETFIELD | t::WRITE_SETFIELD_MISS => {
                TableFeatureProp::WriteSetfield { miss, ids: OxmId::parse_list(p.rest())? }
            }
            t::APPLY_SETFIELD | t::APPLY_SETFIELD_MISS => {
                TableFeatureProp::ApplySetfield { miss, ids: OxmId::parse_list(p.rest())? }
            }
            t::EXPERIMENTER | t::EXPERIMENTER_MISS => {
                let experimenter = p.u32()?;
                let exp_type = p.u32()?;
                TableFeatureProp::Experimenter {
                    miss,
                    experimenter,
                    exp_type,
                    data: p.rest().to_vec(),
                }
            }
            _ => TableFeatureProp::Unknown { ty, data: p.rest().to_vec() },
        })
    }

    /// Append the property and its zero padding.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(self.prop_type());
        out.put_u16(self.unpadded_len() as u16);
        match self {
            TableFeatureProp::Instructions { ids, .. }
            | TableFeatureProp::WriteActions { ids, .. }
            | TableFeatureProp::ApplyActions { ids, .. } => ids.iter().for_each(|i| i.emit(out)),
            TableFeatureProp::NextTables { tables, .. } => out.put_slice(tables),
            TableFeatureProp::Match(v)
            | TableFeatureProp::Wildcards(v)
            | TableFeatureProp::WriteSetfield { ids: v, .. }
            | TableFeatureProp::ApplySetfield { ids: v, .. } => v.iter().for_each(|i| i.emit(out)),
            TableFeatureProp::Experimenter { experimenter, exp_type, data, .. } => {
                out.put_u32(*experimenter);
                out.put_u32(*exp_type);
                out.put_slice(data);
            }
            TableFeatureProp::Unknown { data, .. } => out.put_slice(data),
        }
        out.pad8_from(start);
    }

    /// Whether this is a property type the spec defines.
    pub fn is_known(&self) -> bool {
        !matches!(self, TableFeatureProp::Unknown { .. })
    }
}

/// `struct ofp_table_features`: one table's capabilities.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TableFeatures {
    pub table_id: u8,
    /// At most 31 bytes on the wire.
    pub name: String,
    pub metadata_match: u64,
    pub metadata_write: u64,
    /// `OFPTC_*` bits.
    pub config: u32,
    pub max_entries: u32,
    pub properties: Vec<TableFeatureProp>,
}

impl TableFeatures {
    pub const FIXED_LEN: usize = 64;

    /// Parse one entry at the reader's position.
    pub fn parse(r: &mut Reader<'_>) -> Result<TableFeatures> {
        const BAD: ErrorCode = ErrorCode::BRC_BAD_LEN;
        let rem = r.remaining();
        if rem < Self::FIXED_LEN {
            return Err(BAD);
        }
        let len = r.peek_u16(0).map_err(|_| BAD)? as usize;
        if len < Self::FIXED_LEN || len % 8 != 0 || len > rem {
            return Err(BAD);
        }
        let mut e = Reader::new(r.bytes(len)?, BAD);
        e.skip(2)?;
        let table_id = e.u8()?;
        e.skip(5)?;
        let name = read_str(e.bytes(OFP_MAX_TABLE_NAME_LEN)?);
        let metadata_match = e.u64()?;
        let metadata_write = e.u64()?;
        let config = e.u32()?;
        let max_entries = e.u32()?;
        let mut p = e.with_error(TF_LEN);
        let mut properties = Vec::new();
        while !p.is_empty() {
            // Every successful parse consumes at least 8 bytes (4 rounded up).
            properties.push(TableFeatureProp::parse(&mut p)?);
        }
        Ok(TableFeatures {
            table_id,
            name,
            metadata_match,
            metadata_write,
            config,
            max_entries,
            properties,
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(0);
        out.put_u8(self.table_id);
        out.put_zeros(5);
        put_str(out, &self.name, OFP_MAX_TABLE_NAME_LEN);
        out.put_u64(self.metadata_match);
        out.put_u64(self.metadata_write);
        out.put_u32(self.config);
        out.put_u32(self.max_entries);
        for p in &self.properties {
            p.emit(out);
        }
        let len = out.len() - start;
        patch_u16(out, start, len as u16);
    }

    pub fn wire_len(&self) -> usize {
        Self::FIXED_LEN + self.properties.iter().map(TableFeatureProp::wire_len).sum::<usize>()
    }

    /// `OFPTFFC_BAD_TYPE` if any property has a type the spec does not
    /// define (the parser keeps such properties; a switch asked to apply
    /// them answers with this).
    pub fn check_known(&self) -> Result<()> {
        if self.properties.iter().all(TableFeatureProp::is_known) {
            Ok(())
        } else {
            Err(ErrorCode::TFFC_BAD_TYPE)
        }
    }
}

impl Entry for TableFeatures {
    fn parse_entry(r: &mut Reader<'_>) -> Result<Self> {
        TableFeatures::parse(r)
    }
    fn emit_entry(&self, out: &mut Vec<u8>) {
        self.emit(out)
    }
    fn entry_len(&self) -> usize {
        self.wire_len()
    }
}

#[cfg(test)]
pub(crate) mod arb {
    use super::*;
    use proptest::prelude::*;

    pub fn feature_id() -> impl Strategy<Value = FeatureId> {
        prop_oneof![
            (0u16..0xffff).prop_map(FeatureId::Type),
            (any::<u32>(), proptest::collection::vec(any::<u8>(), 0..6))
                .prop_map(|(experimenter, data)| FeatureId::Experimenter { experimenter, data }),
        ]
    }

    pub fn oxm_id() -> impl Strategy<Value = OxmId> {
        prop_oneof![
            any::<u32>().prop_filter_map("experimenter class", |h| {
                (!OxmId::is_experimenter_class(h)).then(|| OxmId::new(OxmHeader(h)))
            }),
            (any::<u16>(), any::<u32>()).prop_map(|(lo, e)| OxmId {
                header: OxmHeader(((OFPXMC_EXPERIMENTER as u32) << 16) | lo as u32),
                experimenter: Some(e),
            }),
        ]
    }

    pub fn prop() -> impl Strategy<Value = TableFeatureProp> {
        use proptest::collection::vec;
        let ids = || vec(feature_id(), 0..4);
        let oxms = || vec(oxm_id(), 0..4);
        prop_oneof![
            (any::<bool>(), ids())
                .prop_map(|(miss, ids)| TableFeatureProp::Instructions { miss, ids }),
            (any::<bool>(), vec(any::<u8>(), 0..10))
                .prop_map(|(miss, tables)| TableFeatureProp::NextTables { miss, tables }),
            (any::<bool>(), ids())
                .prop_map(|(miss, ids)| TableFeatureProp::WriteActions { miss, ids }),
            (any::<bool>(), ids())
                .prop_map(|(miss, ids)| TableFeatureProp::ApplyActions { miss, ids }),
            oxms().prop_map(TableFeatureProp::Match),
            oxms().prop_map(TableFeatureProp::Wildcards),
            (any::<bool>(), oxms())
                .prop_map(|(miss, ids)| TableFeatureProp::WriteSetfield { miss, ids }),
            (any::<bool>(), oxms())
                .prop_map(|(miss, ids)| TableFeatureProp::ApplySetfield { miss, ids }),
            (any::<bool>(), any::<u32>(), any::<u32>(), vec(any::<u8>(), 0..10)).prop_map(
                |(miss, experimenter, exp_type, data)| TableFeatureProp::Experimenter {
                    miss,
                    experimenter,
                    exp_type,
                    data
                }
            ),
            (prop_oneof![Just(9u16), Just(11u16), 16u16..0xfffe], vec(any::<u8>(), 0..10))
                .prop_map(|(ty, data)| TableFeatureProp::Unknown { ty, data }),
        ]
    }

    pub fn table_features() -> impl Strategy<Value = TableFeatures> {
        (
            any::<u8>(),
            "[ -~]{0,31}",
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            proptest::collection::vec(prop(), 0..5),
        )
            .prop_map(
                |(
                    table_id,
                    name,
                    metadata_match,
                    metadata_write,
                    config,
                    max_entries,
                    properties,
                )| {
                    TableFeatures {
                        table_id,
                        name,
                        metadata_match,
                        metadata_write,
                        config,
                        max_entries,
                        properties,
                    }
                },
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn entry(props: &[u8]) -> Vec<u8> {
        let len = 64 + props.len();
        let mut v = vec![(len >> 8) as u8, len as u8, 3, 0, 0, 0, 0, 0];
        let mut name = b"acl".to_vec();
        name.resize(32, 0);
        v.extend_from_slice(&name);
        v.extend_from_slice(&[0xff; 8]); // metadata_match
        v.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0xff]); // metadata_write
        v.extend_from_slice(&[0, 0, 0, 3]); // config
        v.extend_from_slice(&[0, 0, 0x10, 0]); // max_entries 4096
        v.extend_from_slice(props);
        v
    }

    fn parse_one(b: &[u8]) -> Result<TableFeatures> {
        let mut r = Reader::new(b, ErrorCode::BRC_BAD_LEN);
        let t = TableFeatures::parse(&mut r)?;
        assert!(r.is_empty());
        Ok(t)
    }

    #[test]
    fn literal_with_every_kind_of_property() {
        #[rustfmt::skip]
        let props = [
            // INSTRUCTIONS: GOTO_TABLE(1), APPLY_ACTIONS(4), experimenter "SLIC"; len 4+4+4+8 = 20, pad 4
            0x00, 0x00, 0x00, 0x14,
            0x00, 0x01, 0x00, 0x04,
            0x00, 0x04, 0x00, 0x04,
            0xff, 0xff, 0x00, 0x08, 0x53, 0x4c, 0x49, 0x43,
            0, 0, 0, 0,
            // NEXT_TABLES_MISS: tables 4, 5, 6; len 7, pad 1
            0x00, 0x03, 0x00, 0x07, 4, 5, 6, 0,
            // APPLY_ACTIONS: OUTPUT(0), SET_FIELD(25); len 12, pad 4
            0x00, 0x06, 0x00, 0x0c,
            0x00, 0x00, 0x00, 0x04,
            0x00, 0x19, 0x00, 0x04,
            0, 0, 0, 0,
            // MATCH: IN_PORT (0x80000004), ETH_DST with mask (0x8000070c),
            // experimenter class 0xffff field 1 len 4 + exp id; len 4+4+4+8 = 20, pad 4
            0x00, 0x08, 0x00, 0x14,
            0x80, 0x00, 0x00, 0x04,
            0x80, 0x00, 0x07, 0x0c,
            0xff, 0xff, 0x02, 0x04, 0x53, 0x4c, 0x49, 0x43,
            0, 0, 0, 0,
            // WILDCARDS: empty; len 4, pad 4
            0x00, 0x0a, 0x00, 0x04, 0, 0, 0, 0,
            // EXPERIMENTER_MISS: exp 0x00002320, exp_type 7, data [9]; len 13, pad 3
            0xff, 0xff, 0x00, 0x0d, 0x00, 0x00, 0x23, 0x20, 0x00, 0x00, 0x00, 0x07, 9, 0, 0, 0,
            // Unknown type 0x0042, body [1, 2]; len 6, pad 2
            0x00, 0x42, 0x00, 0x06, 1, 2, 0, 0,
        ];
        let b = entry(&props);
        let t = parse_one(&b).unwrap();
        assert_eq!(t.table_id, 3);
        assert_eq!(t.name, "acl");
        assert_eq!(t.metadata_match, u64::MAX);
        assert_eq!(t.metadata_write, 0xff);
        assert_eq!(t.config, 3);
        assert_eq!(t.max_entries, 4096);
        assert_eq!(
            t.properties,
            vec![
                TableFeatureProp::Instructions {
                    miss: false,
                    ids: vec![
                        FeatureId::Type(1),
                        FeatureId::Type(4),
                        FeatureId::Experimenter { experimenter: 0x534c_4943, data: vec![] },
                    ],
                },
                TableFeatureProp::NextTables { miss: true, tables: vec![4, 5, 6] },
                TableFeatureProp::ApplyActions {
                    miss: false,
                    ids: vec![FeatureId::Type(0), FeatureId::Type(25)]
                },
                TableFeatureProp::Match(vec![
                    OxmId::new(OxmHeader(0x8000_0004)),
                    OxmId::new(OxmHeader(0x8000_070c)),
                    OxmId { header: OxmHeader(0xffff_0204), experimenter: Some(0x534c_4943) },
                ]),
                TableFeatureProp::Wildcards(vec![]),
                TableFeatureProp::Experimenter {
                    miss: true,
                    experimenter: 0x2320,
                    exp_type: 7,
                    data: vec![9]
                },
                TableFeatureProp::Unknown { ty: 0x42, data: vec![1, 2] },
            ]
        );
        assert_eq!(t.check_known(), Err(ErrorCode::TFFC_BAD_TYPE));
        let mut out = Vec::new();
        t.emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(t.wire_len(), b.len());
    }

    #[test]
    fn entry_length_errors_are_bad_request() {
        let b = entry(&[0x00, 0x0a, 0x00, 0x04, 0, 0, 0, 0]);
        assert!(parse_one(&b).is_ok());
        for len in [0u16, 8, 63, 68, 80] {
            let mut c = b.clone();
            c[0..2].copy_from_slice(&len.to_be_bytes());
            let mut r = Reader::new(&c, ErrorCode::BRC_BAD_LEN);
            assert_eq!(TableFeatures::parse(&mut r), Err(ErrorCode::BRC_BAD_LEN), "len {len}");
        }
        let mut r = Reader::new(&b[..40], ErrorCode::BRC_BAD_LEN);
        assert_eq!(TableFeatures::parse(&mut r), Err(ErrorCode::BRC_BAD_LEN));
    }

    #[test]
    fn property_length_errors_are_tffc_bad_len() {
        let bad = |props: &[u8]| assert_eq!(parse_one(&entry(props)), Err(TF_LEN), "{props:?}");
        // Property length 0, 2 (below the header).
        bad(&[0x00, 0x0a, 0x00, 0x00, 0, 0, 0, 0]);
        bad(&[0x00, 0x0a, 0x00, 0x02, 0, 0, 0, 0]);
        // Padded length overruns the entry.
        bad(&[0x00, 0x02, 0x00, 0x09, 1, 2, 3, 4]);
        bad(&[0x00, 0x02, 0x00, 0x10, 1, 2, 3, 4]);
        // OXM list not a whole number of ids: 6 bytes.
        bad(&[0x00, 0x08, 0x00, 0x0a, 0x80, 0, 0, 4, 0x80, 0, 0, 0, 0, 0, 0, 0]);
        // Experimenter OXM id missing its experimenter field.
        bad(&[0x00, 0x08, 0x00, 0x08, 0xff, 0xff, 0, 4]);
        // Instruction id len 0 (must not loop), 2, 8 for a standard type, overrunning.
        bad(&[0x00, 0x00, 0x00, 0x08, 0x00, 0x01, 0x00, 0x00]);
        bad(&[0x00, 0x00, 0x00, 0x08, 0x00, 0x01, 0x00, 0x02]);
        bad(&[0x00, 0x00, 0x00, 0x0c, 0x00, 0x01, 0x00, 0x08, 0, 0, 0, 0, 0, 0, 0, 0]);
        bad(&[0x00, 0x04, 0x00, 0x08, 0x00, 0x01, 0x00, 0x08]);
        // Experimenter action id shorter than 8.
        bad(&[0x00, 0x04, 0x00, 0x08, 0xff, 0xff, 0x00, 0x04]);
        // Truncated instruction id (2 bytes).
        bad(&[0x00, 0x00, 0x00, 0x06, 0x00, 0x01, 0, 0]);
        // Experimenter property shorter than 12.
        bad(&[0xff, 0xfe, 0x00, 0x08, 0, 0, 0, 1]);
        // A trailing half property (4 bytes) — the entry is then not a multiple
        // of 8, which is the entry's error.
        let c = entry(&[0x00, 0x0a, 0x00, 0x04]);
        assert_eq!(parse_one(&c), Err(ErrorCode::BRC_BAD_LEN));
    }

    proptest! {
        #[test]
        fn table_features_round_trip(t in arb::table_features()) {
            let mut out = Vec::new();
            t.emit(&mut out);
            prop_assert_eq!(out.len(), t.wire_len());
            prop_assert_eq!(out.len() % 8, 0);
            prop_assert_eq!(parse_one(&out).unwrap(), t);
        }

        #[test]
        fn property_parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = parse_one(&entry(&b));
            let mut r = Reader::new(&b, TF_LEN);
            while !r.is_empty() {
                if TableFeatureProp::parse(&mut r).is_err() { break; }
            }
        }
    }
}
