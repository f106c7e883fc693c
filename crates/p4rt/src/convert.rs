//! Conversions between sluice's values and P4Runtime's wire forms:
//! [`p4info`] turns `sluice_p4::p4info`'s model into the prost `P4Info`,
//! [`encode`]/[`decode`] are the bytestrings of P4Runtime spec §8.4.
//!
//! # Bytestrings
//! A value is sent big-endian in the shortest form (`canonical`: no
//! leading zero bytes, zero is one `0x00` byte). [`decode`] accepts any
//! length (the spec lets a server accept padded forms) but refuses an
//! empty string (INVALID_ARGUMENT) and a value that does not fit the
//! field's bit width (OUT_OF_RANGE), naming the field.

use sluice_p4::ast::BigValue;
use sluice_p4::p4info as model;
use tonic::Code;

use crate::proto::p4::config::v1 as cfg;

/// A P4Runtime error: the canonical code and a message naming what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct P4Error {
    pub code: Code,
    pub message: String,
}

impl P4Error {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        P4Error { code, message: message.into() }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(Code::InvalidArgument, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(Code::NotFound, message)
    }
    pub fn unimplemented(message: impl Into<String>) -> Self {
        Self::new(Code::Unimplemented, message)
    }
    pub fn status(&self) -> tonic::Status {
        tonic::Status::new(self.code, self.message.clone())
    }
}

pub type P4Result<T> = Result<T, P4Error>;

/// UNIMPLEMENTED for an entity kind the server does not handle yet,
/// naming it (shared by Read and Write: what they leave out is the same).
pub fn not_built(e: &crate::proto::p4::v1::entity::Entity) -> P4Error {
    use crate::proto::p4::v1::entity::Entity as E;
    let what = match e {
        E::TableEntry(_) => "table entries here",
        E::RegisterEntry(_) => "registers here",
        E::PacketReplicationEngineEntry(_) => "clone sessions",
        E::CounterEntry(_)
        | E::DirectCounterEntry(_)
        | E::MeterEntry(_)
        | E::DirectMeterEntry(_) => "counters and meters here",
        E::DigestEntry(_) => "digest entries here",
        E::ActionProfileMember(_) | E::ActionProfileGroup(_) => "action profiles",
        E::ValueSetEntry(_) => "value sets",
        E::ExternEntry(_) => "extern entries",
    };
    P4Error::unimplemented(format!("{what} are not implemented"))
}

/// The canonical bytestring of `v`: big-endian, no leading zero bytes,
/// zero as one `0x00`.
pub fn encode(v: &BigValue) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.0.len() * 8);
    for limb in v.0.iter().rev() {
        out.extend_from_slice(&limb.to_be_bytes());
    }
    let first = out.iter().position(|&b| b != 0).unwrap_or(out.len());
    out.drain(..first);
    if out.is_empty() {
        out.push(0);
    }
    out
}

/// The value of a big-endian bytestring for a field of `width` bits;
/// `what` names the field in errors.
pub fn decode(bytes: &[u8], width: u32, what: &str) -> P4Result<BigValue> {
    if bytes.is_empty() {
        return Err(P4Error::invalid(format!("{what}: empty bytestring")));
    }
    let skip = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
    let sig = &bytes[skip..];
    let bits = match sig.first() {
        None => 0,
        Some(&b) => (sig.len() as u64 - 1) * 8 + u64::from(8 - b.leading_zeros()),
    };
    if bits > u64::from(width) {
        return Err(P4Error::new(
            Code::OutOfRange,
            format!("{what}: value 0x{} does not fit in {width} bits", hex(sig)),
        ));
    }
    let mut limbs = Vec::with_capacity(sig.len().div_ceil(8));
    for chunk in sig.rchunks(8) {
        let mut b = [0u8; 8];
        b[8 - chunk.len()..].copy_from_slice(chunk);
        limbs.push(u64::from_be_bytes(b));
    }
    while limbs.last() == Some(&0) {
        limbs.pop();
    }
    Ok(BigValue(limbs))
}

/// Lower-case hex of a byte string.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `v & mask`, limb by limb.
pub fn and(v: &BigValue, mask: &BigValue) -> BigValue {
    let mut limbs: Vec<u64> =
        v.0.iter().zip(mask.0.iter().chain(std::iter::repeat(&0))).map(|(a, b)| a & b).collect();
    while limbs.last() == Some(&0) {
        limbs.pop();
    }
    BigValue(limbs)
}

/// The mask of the top `len` bits of a `width`-bit field.
pub fn prefix_mask(width: u32, len: u32) -> BigValue {
    let mut limbs = vec![0u64; width.div_ceil(64) as usize];
    for bit in width - len.min(width)..width {
        limbs[(bit / 64) as usize] |= 1 << (bit % 64);
    }
    while limbs.last() == Some(&0) {
        limbs.pop();
    }
    BigValue(limbs)
}

/// All ones in `width` bits.
pub fn all_ones(width: u32) -> BigValue {
    prefix_mask(width, width)
}

fn preamble(p: &model::Preamble) -> Option<cfg::Preamble> {
    Some(cfg::Preamble {
        id: p.id,
        name: p.name.clone(),
        alias: p.alias.clone(),
        annotations: p.annotations.clone(),
        ..Default::default()
    })
}

fn counter_unit(u: model::Unit) -> i32 {
    (match u {
        model::Unit::Bytes => cfg::counter_spec::Unit::Bytes,
        model::Unit::Packets => cfg::counter_spec::Unit::Packets,
        model::Unit::Both => cfg::counter_spec::Unit::Both,
    }) as i32
}

fn meter_unit(u: model::Unit) -> i32 {
    (match u {
        model::Unit::Bytes => cfg::meter_spec::Unit::Bytes,
        _ => cfg::meter_spec::Unit::Packets,
    }) as i32
}

fn bitstring(t: &model::TypeSpec) -> Option<cfg::P4BitstringLikeTypeSpec> {
    use cfg::p4_bitstring_like_type_spec::TypeSpec as B;
    let ts = match t {
        model::TypeSpec::Bit(w) => B::Bit(cfg::P4BitTypeSpec { bitwidth: *w as i32 }),
        model::TypeSpec::Int(w) => B::Int(cfg::P4IntTypeSpec { bitwidth: *w as i32 }),
        model::TypeSpec::Varbit(w) => B::Varbit(cfg::P4VarbitTypeSpec { max_bitwidth: *w as i32 }),
        _ => return None,
    };
    Some(cfg::P4BitstringLikeTypeSpec { type_spec: Some(ts), ..Default::default() })
}

fn type_spec(t: &model::TypeSpec) -> cfg::P4DataTypeSpec {
    use cfg::p4_data_type_spec::TypeSpec as T;
    let named = |n: &String| cfg::P4NamedType { name: n.clone() };
    let ts = match t {
        model::TypeSpec::Bool => T::Bool(cfg::P4BoolType {}),
        model::TypeSpec::Error => T::Error(cfg::P4ErrorType {}),
        model::TypeSpec::Struct(n) => T::Struct(named(n)),
        model::TypeSpec::Header(n) => T::Header(named(n)),
        other => T::Bitstring(bitstring(other).unwrap_or_default()),
    };
    cfg::P4DataTypeSpec { type_spec: Some(ts) }
}

/// The prost `P4Info` of sluice's model.
pub fn p4info(m: &model::P4Info) -> cfg::P4Info {
    use cfg::match_field::{Match, MatchType as M};
    let tables = m
        .tables
        .iter()
        .map(|t| cfg::Table {
            preamble: preamble(&t.preamble),
            match_fields: t
                .match_fields
                .iter()
                .map(|f| cfg::MatchField {
                    id: f.id,
                    name: f.name.clone(),
                    annotations: f.annotations.clone(),
                    bitwidth: f.bitwidth,
                    r#match: Some(match &f.match_type {
                        model::MatchType::Exact => Match::MatchType(M::Exact as i32),
                        model::MatchType::Lpm => Match::MatchType(M::Lpm as i32),
                        model::MatchType::Ternary => Match::MatchType(M::Ternary as i32),
                        model::MatchType::Range => Match::MatchType(M::Range as i32),
                        model::MatchType::Optional => Match::MatchType(M::Optional as i32),
                        model::MatchType::Other(s) => Match::OtherMatchType(s.clone()),
                    }),
                    ..Default::default()
                })
                .collect(),
            action_refs: t
                .action_refs
                .iter()
                .map(|a| cfg::ActionRef {
                    id: a.id,
                    scope: (match a.scope {
                        model::Scope::TableAndDefault => cfg::action_ref::Scope::TableAndDefault,
                        model::Scope::TableOnly => cfg::action_ref::Scope::TableOnly,
                        model::Scope::DefaultOnly => cfg::action_ref::Scope::DefaultOnly,
                    }) as i32,
                    annotations: a.annotations.clone(),
                    ..Default::default()
                })
                .collect(),
            const_default_action_id: t.const_default_action_id,
            initial_default_action: t.initial_default_action.as_ref().map(|c| {
                cfg::TableActionCall {
                    action_id: c.action_id,
                    arguments: c
                        .arguments
                        .iter()
                        .map(|(id, v)| cfg::table_action_call::Argument {
                            param_id: *id,
                            value: v.clone(),
                        })
                        .collect(),
                }
            }),
            direct_resource_ids: t.direct_resource_ids.clone(),
            size: t.size,
            idle_timeout_behavior: if t.idle_timeout_notify {
                cfg::table::IdleTimeoutBehavior::NotifyControl as i32
            } else {
                0
            },
            is_const_table: t.is_const_table,
            has_initial_entries: t.has_initial_entries,
            ..Default::default()
        })
        .collect();
    let actions = m
        .actions
        .iter()
        .map(|a| cfg::Action {
            preamble: preamble(&a.preamble),
            params: a
                .params
                .iter()
                .map(|p| cfg::action::Param {
                    id: p.id,
                    name: p.name.clone(),
                    annotations: p.annotations.clone(),
                    bitwidth: p.bitwidth,
                    ..Default::default()
                })
                .collect(),
        })
        .collect();
    let type_info = m.type_info.as_ref().map(|ti| cfg::P4TypeInfo {
        structs: ti
            .structs
            .iter()
            .map(|(n, fs)| {
                let members = fs
                    .iter()
                    .map(|(f, t)| cfg::p4_struct_type_spec::Member {
                        name: f.clone(),
                        type_spec: Some(type_spec(t)),
                    })
                    .collect();
                (n.clone(), cfg::P4StructTypeSpec { members, ..Default::default() })
            })
            .collect(),
        headers: ti
            .headers
            .iter()
            .map(|(n, fs)| {
                let members = fs
                    .iter()
                    .map(|(f, t)| cfg::p4_header_type_spec::Member {
                        name: f.clone(),
                        type_spec: bitstring(t),
                    })
                    .collect();
                (n.clone(), cfg::P4HeaderTypeSpec { members, ..Default::default() })
            })
            .collect(),
        ..Default::default()
    });
    cfg::P4Info {
        pkg_info: Some(cfg::PkgInfo { arch: m.arch.clone(), ..Default::default() }),
        tables,
        actions,
        counters: m
            .counters
            .iter()
            .map(|c| cfg::Counter {
                preamble: preamble(&c.preamble),
                spec: Some(cfg::CounterSpec { unit: counter_unit(c.unit) }),
                size: c.size,
                ..Default::default()
            })
            .collect(),
        direct_counters: m
            .direct_counters
            .iter()
            .map(|c| cfg::DirectCounter {
                preamble: preamble(&c.preamble),
                spec: Some(cfg::CounterSpec { unit: counter_unit(c.unit) }),
                direct_table_id: c.direct_table_id,
            })
            .collect(),
        meters: m
            .meters
            .iter()
            .map(|c| cfg::Meter {
                preamble: preamble(&c.preamble),
                spec: Some(cfg::MeterSpec { unit: meter_unit(c.unit), ..Default::default() }),
                size: c.size,
                ..Default::default()
            })
            .collect(),
        direct_meters: m
            .direct_meters
            .iter()
            .map(|c| cfg::DirectMeter {
                preamble: preamble(&c.preamble),
                spec: Some(cfg::MeterSpec { unit: meter_unit(c.unit), ..Default::default() }),
                direct_table_id: c.direct_table_id,
            })
            .collect(),
        controller_packet_metadata: m
            .controller_packet_metadata
            .iter()
            .map(|c| cfg::ControllerPacketMetadata {
                preamble: preamble(&c.preamble),
                metadata: c
                    .metadata
                    .iter()
                    .map(|p| cfg::controller_packet_metadata::Metadata {
                        id: p.id,
                        name: p.name.clone(),
                        annotations: p.annotations.clone(),
                        bitwidth: p.bitwidth,
                        ..Default::default()
                    })
                    .collect(),
            })
            .collect(),
        registers: m
            .registers
            .iter()
            .map(|r| cfg::Register {
                preamble: preamble(&r.preamble),
                type_spec: Some(type_spec(&r.type_spec)),
                size: r.size,
                ..Default::default()
            })
            .collect(),
        digests: m
            .digests
            .iter()
            .map(|d| cfg::Digest {
                preamble: preamble(&d.preamble),
                type_spec: Some(type_spec(&d.type_spec)),
            })
            .collect(),
        type_info,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytestrings_are_shortest_big_endian() {
        assert_eq!(encode(&BigValue::default()), vec![0]);
        assert_eq!(encode(&BigValue::from_u128(0x0a00_0001)), vec![0x0a, 0, 0, 1]);
        assert_eq!(encode(&BigValue::from_u128(1 << 64)), vec![1, 0, 0, 0, 0, 0, 0, 0, 0]);
        let v = decode(&[0, 0, 0x0a, 0, 0, 1], 32, "f").unwrap();
        assert_eq!(v, BigValue::from_u128(0x0a00_0001));
        assert_eq!(decode(&[0], 9, "f").unwrap(), BigValue::default());
        assert_eq!(decode(&[1, 0xff], 9, "f").unwrap(), BigValue::from_u128(0x1ff));
        let e = decode(&[2, 0], 9, "field `port`").unwrap_err();
        assert_eq!(e.code, Code::OutOfRange);
        assert!(e.message.contains("field `port`") && e.message.contains("0x0200"), "{e:?}");
        assert_eq!(decode(&[], 9, "f").unwrap_err().code, Code::InvalidArgument);
        let big = decode(&[1, 2, 3, 4, 5, 6, 7, 8, 9], 72, "f").unwrap();
        assert_eq!(encode(&big), vec![1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn masks() {
        assert_eq!(prefix_mask(32, 8), BigValue::from_u128(0xff00_0000));
        assert_eq!(prefix_mask(32, 0), BigValue::default());
        assert_eq!(all_ones(9), BigValue::from_u128(0x1ff));
        assert_eq!(prefix_mask(72, 72).0.len(), 2);
        let v = BigValue::from_u128(0x0a0b_0c0d);
        assert_eq!(and(&v, &prefix_mask(32, 16)), BigValue::from_u128(0x0a0b_0000));
    }
}
