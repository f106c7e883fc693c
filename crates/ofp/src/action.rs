//! Actions (OpenFlow 1.3.5 §7.2.5 and §A.2.5, `struct ofp_action_*`).
//!
//! ## What
//! [`Action`] is the value form of one OpenFlow 1.3 action, with
//! [`Action::parse`] / [`Action::emit`] / [`Action::wire_len`] for one action
//! and [`Action::parse_list`] / [`Action::emit_list`] / [`Action::list_len`]
//! for the action lists carried by `WRITE_ACTIONS` / `APPLY_ACTIONS`
//! instructions, group buckets and `PACKET_OUT`.
//!
//! ## Wire layouts (all big-endian; every action is a multiple of 8 bytes)
//! ```text
//! header        type:u16 len:u16                                       (4)
//! output        header port:u32 max_len:u16 pad[6]                     16
//! generic       header pad[4]          COPY_TTL_OUT/IN, DEC_MPLS_TTL,   8
//!                                      POP_VLAN, DEC_NW_TTL, POP_PBB
//! mpls_ttl      header mpls_ttl:u8 pad[3]                               8
//! push          header ethertype:u16 pad[2]   PUSH_VLAN/MPLS/PBB        8
//! pop_mpls      header ethertype:u16 pad[2]                             8
//! set_queue     header queue_id:u32                                     8
//! group         header group_id:u32                                     8
//! nw_ttl        header nw_ttl:u8 pad[3]                                 8
//! set_field     header OXM(4 + oxm_len) zero-pad to a multiple of 8     pad8(8 + oxm_len)
//! experimenter  header experimenter:u32 data                            8 + data
//! ```
//!
//! ## Errors (all `OFPET_BAD_ACTION`)
//! Checked in this order, so one malformed action always yields one answer:
//! 1. *Framing* — fewer than 4 bytes left for the header, `len < 8`, `len`
//!    not a multiple of 8, or `len` longer than what remains:
//!    `OFPBAC_BAD_LEN`. This is decided before the type is looked at, since
//!    it is a property of the generic `ofp_action_header`.
//! 2. Unknown `type`: `OFPBAC_BAD_TYPE`.
//! 3. A fixed-size action whose `len` differs from its struct size:
//!    `OFPBAC_BAD_LEN`.
//! 4. `SET_FIELD` (the action itself is well framed by now, so every
//!    remaining problem is specific to the set-field contents and gets a
//!    `BAD_SET_*` code rather than the generic `BAD_LEN`):
//!    - OXM class other than `OFPXMC_OPENFLOW_BASIC`, or a basic field number
//!      the spec does not define: `OFPBAC_BAD_SET_TYPE`;
//!    - `OXM_HASMASK` set (1.3 set-field values are never masked; a mask also
//!      doubles the payload length away from the field's size), `oxm_len`
//!      different from the field's size, the OXM overrunning the action, or
//!      the action longer than the OXM plus the 0–7 bytes of padding the spec
//!      prescribes (`((oxm_len + 4) + 7) / 8 * 8 - (oxm_len + 4)`):
//!      `OFPBAC_BAD_SET_LEN`;
//!    - a value wider than the field (e.g. `vlan_vid > 0x1fff`,
//!      `ip_dscp > 63`, `mpls_label > 0xfffff`): `OFPBAC_BAD_SET_ARGUMENT`.
//!
//!    Set-field on fields that are not packet headers (`IN_PORT`,
//!    `IN_PHY_PORT`, `METADATA`) decodes fine; rejecting it (with
//!    `OFPBAC_BAD_SET_TYPE`) is the pipeline's decision, made against the
//!    table features it advertises.
//!
//! The reader's own short-read error is never used: an action that does not
//! fit is `OFPBAC_BAD_LEN` wherever it is embedded. On failure `parse` leaves
//! the reader where it was.
//!
//! ## Padding and round trips
//! Padding bytes are ignored on input, even when non-zero: the spec asks
//! senders for zeros but names no error for a receiver to answer with.
//! `emit` always writes zero padding, so `parse(emit(x)) == x` for every
//! value `parse` can produce, while `emit(parse(b)) == b` holds only for
//! byte strings with zero padding. Experimenter `data` is kept verbatim,
//! padding included; `emit` zero-pads it to a multiple of 8 if a
//! hand-built value is not.
//!
//! Lengths above 65535 cannot be encoded: a hand-built experimenter action
//! with that much data would be emitted with a truncated length. Nothing
//! `parse` returns comes near that, and an OpenFlow message cannot carry it.

use crate::error::{ErrorCode, Result};
use crate::oxm::{FieldBytes, FieldId, Oxm, OxmHeader, OFPXMC_OPENFLOW_BASIC};
use crate::wire::{pad8, Put, Reader};

/// `enum ofp_action_type` (OpenFlow 1.3.5 §A.2.5).
pub mod ty {
    pub const OUTPUT: u16 = 0;
    pub const COPY_TTL_OUT: u16 = 11;
    pub const COPY_TTL_IN: u16 = 12;
    pub const SET_MPLS_TTL: u16 = 15;
    pub const DEC_MPLS_TTL: u16 = 16;
    pub const PUSH_VLAN: u16 = 17;
    pub const POP_VLAN: u16 = 18;
    pub const PUSH_MPLS: u16 = 19;
    pub const POP_MPLS: u16 = 20;
    pub const SET_QUEUE: u16 = 21;
    pub const GROUP: u16 = 22;
    pub const SET_NW_TTL: u16 = 23;
    pub const DEC_NW_TTL: u16 = 24;
    pub const SET_FIELD: u16 = 25;
    pub const PUSH_PBB: u16 = 26;
    pub const POP_PBB: u16 = 27;
    pub const EXPERIMENTER: u16 = 0xffff;
}

/// Length of `ofp_action_output`.
const OUTPUT_LEN: usize = 16;
/// Length of every other fixed-size action and of the generic header.
const SHORT_LEN: usize = 8;
/// Bytes of `type` + `len` in front of the set-field OXM.
const SET_FIELD_HDR: usize = 4;

/// One action. `SetField` carries exactly one OXM (no mask allowed).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    Output {
        port: u32,
        max_len: u16,
    },
    CopyTtlOut,
    CopyTtlIn,
    SetMplsTtl(u8),
    DecMplsTtl,
    PushVlan(u16),
    PopVlan,
    PushMpls(u16),
    PopMpls(u16),
    SetQueue(u32),
    Group(u32),
    SetNwTtl(u8),
    DecNwTtl,
    SetField(Oxm),
    PushPbb(u16),
    PopPbb,
    /// `OFPAT_EXPERIMENTER`: `data` is everything after the experimenter id
    /// (including the experimenter's own padding), preserved verbatim.
    Experimenter {
        experimenter: u32,
        data: Vec<u8>,
    },
}

impl Action {
    /// The `OFPAT_*` number of this action (see [`ty`]).
    pub fn type_code(&self) -> u16 {
        match self {
            Action::Output { .. } => ty::OUTPUT,
            Action::CopyTtlOut => ty::COPY_TTL_OUT,
            Action::CopyTtlIn => ty::COPY_TTL_IN,
            Action::SetMplsTtl(_) => ty::SET_MPLS_TTL,
            Action::DecMplsTtl => ty::DEC_MPLS_TTL,
            Action::PushVlan(_) => ty::PUSH_VLAN,
            Action::PopVlan => ty::POP_VLAN,
            Action::PushMpls(_) => ty::PUSH_MPLS,
            Action::PopMpls(_) => ty::POP_MPLS,
            Action::SetQueue(_) => ty::SET_QUEUE,
            Action::Group(_) => ty::GROUP,
            Action::SetNwTtl(_) => ty::SET_NW_TTL,
            Action::DecNwTtl => ty::DEC_NW_TTL,
            Action::SetField(_) => ty::SET_FIELD,
            Action::PushPbb(_) => ty::PUSH_PBB,
            Action::PopPbb => ty::POP_PBB,
            Action::Experimenter { .. } => ty::EXPERIMENTER,
        }
    }

    /// Parse one action at the reader's position and consume exactly its
    /// `len` bytes. Errors as listed in the module docs; on error the reader
    /// is not advanced.
    pub fn parse(r: &mut Reader<'_>) -> Result<Action> {
        const BAD_LEN: ErrorCode = ErrorCode::BAC_BAD_LEN;
        let (Ok(t), Ok(len)) = (r.peek_u16(0), r.peek_u16(2)) else {
            return Err(BAD_LEN);
        };
        let len = usize::from(len);
        if len < SHORT_LEN || len % 8 != 0 {
            return Err(BAD_LEN);
        }
        let bytes = r.peek_rest().get(..len).ok_or(BAD_LEN)?;
        let mut b = Reader::new(bytes, BAD_LEN);
        b.skip(4)?;
        let fixed = |want: usize| if len == want { Ok(()) } else { Err(BAD_LEN) };
        let action = match t {
            ty::OUTPUT => {
                fixed(OUTPUT_LEN)?;
                let port = b.u32()?;
                let max_len = b.u16()?;
                Action::Output { port, max_len }
            }
            ty::COPY_TTL_OUT => fixed(SHORT_LEN).map(|()| Action::CopyTtlOut)?,
            ty::COPY_TTL_IN => fixed(SHORT_LEN).map(|()| Action::CopyTtlIn)?,
            ty::DEC_MPLS_TTL => fixed(SHORT_LEN).map(|()| Action::DecMplsTtl)?,
            ty::POP_VLAN => fixed(SHORT_LEN).map(|()| Action::PopVlan)?,
            ty::DEC_NW_TTL => fixed(SHORT_LEN).map(|()| Action::DecNwTtl)?,
            ty::POP_PBB => fixed(SHORT_LEN).map(|()| Action::PopPbb)?,
            ty::SET_MPLS_TTL => {
                fixed(SHORT_LEN)?;
                Action::SetMplsTtl(b.u8()?)
            }
            ty::SET_NW_TTL => {
                fixed(SHORT_LEN)?;
                Action::SetNwTtl(b.u8()?)
            }
            ty::PUSH_VLAN => {
                fixed(SHORT_LEN)?;
                Action::PushVlan(b.u16()?)
            }
            ty::PUSH_MPLS => {
                fixed(SHORT_LEN)?;
                Action::PushMpls(b.u16()?)
            }
            ty::POP_MPLS => {
                fixed(SHORT_LEN)?;
                Action::PopMpls(b.u16()?)
            }
            ty::PUSH_PBB => {
                fixed(SHORT_LEN)?;
                Action::PushPbb(b.u16()?)
            }
            ty::SET_QUEUE => {
                fixed(SHORT_LEN)?;
                Action::SetQueue(b.u32()?)
            }
            ty::GROUP => {
                fixed(SHORT_LEN)?;
                Action::Group(b.u32()?)
            }
            ty::SET_FIELD => Action::SetField(parse_set_field(b.rest(), len)?),
            ty::EXPERIMENTER => {
                let experimenter = b.u32()?;
                Action::Experimenter { experimenter, data: b.rest().to_vec() }
            }
            _ => return Err(ErrorCode::BAC_BAD_TYPE),
        };
        // `len <= r.remaining()` was established by the `get` above.
        r.skip(len)?;
        Ok(action)
    }

    /// Append the wire form (always with zero padding).
    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(self.type_code());
        out.put_u16(self.wire_len() as u16);
        match self {
            Action::Output { port, max_len } => {
                out.put_u32(*port);
                out.put_u16(*max_len);
                out.put_zeros(6);
            }
            Action::CopyTtlOut
            | Action::CopyTtlIn
            | Action::DecMplsTtl
            | Action::PopVlan
            | Action::DecNwTtl
            | Action::PopPbb => out.put_zeros(4),
            Action::SetMplsTtl(ttl) | Action::SetNwTtl(ttl) => {
                out.put_u8(*ttl);
                out.put_zeros(3);
            }
            Action::PushVlan(eth)
            | Action::PushMpls(eth)
            | Action::PopMpls(eth)
            | Action::PushPbb(eth) => {
                out.put_u16(*eth);
                out.put_zeros(2);
            }
            Action::SetQueue(id) | Action::Group(id) => out.put_u32(*id),
            Action::SetField(oxm) => {
                oxm.emit(out);
                out.pad8_from(start);
            }
            Action::Experimenter { experimenter, data } => {
                out.put_u32(*experimenter);
                out.put_slice(data);
                out.pad8_from(start);
            }
        }
        debug_assert_eq!(out.len() - start, self.wire_len());
    }

    /// Encoded length in bytes, padding included (always a multiple of 8).
    pub fn wire_len(&self) -> usize {
        match self {
            Action::Output { .. } => OUTPUT_LEN,
            Action::SetField(oxm) => pad8(SET_FIELD_HDR + oxm.wire_len()),
            Action::Experimenter { data, .. } => pad8(SHORT_LEN + data.len()),
            _ => SHORT_LEN,
        }
    }

    /// Parse a whole action list occupying all of `buf`.
    ///
    /// Fails with the first failing action's error; trailing bytes too short
    /// to be an action are `OFPBAC_BAD_LEN`.
    pub fn parse_list(buf: &[u8]) -> Result<Vec<Action>> {
        let mut r = Reader::new(buf, ErrorCode::BAC_BAD_LEN);
        let mut list = Vec::new();
        // Each successful parse consumes at least 8 bytes.
        while !r.is_empty() {
            list.push(Action::parse(&mut r)?);
        }
        Ok(list)
    }

    pub fn emit_list(list: &[Action], out: &mut Vec<u8>) {
        for a in list {
            a.emit(out);
        }
    }

    pub fn list_len(list: &[Action]) -> usize {
        list.iter().map(Action::wire_len).sum()
    }
}

/// Decode the body of an `OFPAT_SET_FIELD` action: `body` is everything
/// after the 4-byte `type`/`len` header, `action_len` the action's `len`.
fn parse_set_field(body: &[u8], action_len: usize) -> Result<Oxm> {
    const BAD_SET_LEN: ErrorCode = ErrorCode::BAC_BAD_SET_LEN;
    // `action_len >= 8`, so the 4-byte OXM header is always there.
    let mut r = Reader::new(body, BAD_SET_LEN);
    let header = OxmHeader(r.u32()?);
    let (class, field) = (header.class(), header.field());
    let (has_mask, oxm_len) = (header.has_mask(), usize::from(header.length()));
    if class != OFPXMC_OPENFLOW_BASIC {
        return Err(ErrorCode::BAC_BAD_SET_TYPE);
    }
    let field = FieldId::from_u8(field).ok_or(ErrorCode::BAC_BAD_SET_TYPE)?;
    if has_mask || oxm_len != field.len() {
        return Err(BAD_SET_LEN);
    }
    // OXM overrunning the action.
    let value = r.bytes(oxm_len)?;
    // Exactly the spec's 0-7 padding bytes after the OXM, no more.
    if action_len != pad8(SET_FIELD_HDR + 4 + oxm_len) {
        return Err(BAD_SET_LEN);
    }
    let value = FieldBytes::new(value).ok_or(BAD_SET_LEN)?;
    // Fields narrower than their bytes (OpenFlow 1.3.5 Table 12 "Bits").
    if value.to_u128() > field.max_value() {
        return Err(ErrorCode::BAC_BAD_SET_ARGUMENT);
    }
    Ok(Oxm::Basic { field, value, mask: None })
}

/// Any action `parse` can produce (set-field values in range, experimenter
/// data a multiple of 8 bytes).
#[cfg(test)]
pub(crate) fn arb_action() -> impl proptest::strategy::Strategy<Value = Action> {
    use proptest::prelude::*;
    prop_oneof![
        (any::<u32>(), any::<u16>()).prop_map(|(port, max_len)| Action::Output { port, max_len }),
        Just(Action::CopyTtlOut),
        Just(Action::CopyTtlIn),
        any::<u8>().prop_map(Action::SetMplsTtl),
        Just(Action::DecMplsTtl),
        any::<u16>().prop_map(Action::PushVlan),
        Just(Action::PopVlan),
        any::<u16>().prop_map(Action::PushMpls),
        any::<u16>().prop_map(Action::PopMpls),
        any::<u32>().prop_map(Action::SetQueue),
        any::<u32>().prop_map(Action::Group),
        any::<u8>().prop_map(Action::SetNwTtl),
        Just(Action::DecNwTtl),
        crate::oxm::arb_set_field_oxm().prop_map(Action::SetField),
        any::<u16>().prop_map(Action::PushPbb),
        Just(Action::PopPbb),
        (
            any::<u32>(),
            (0usize..4).prop_flat_map(|n| proptest::collection::vec(any::<u8>(), n * 8))
        )
            .prop_map(|(experimenter, data)| Action::Experimenter { experimenter, data }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_one(b: &[u8]) -> Result<Action> {
        let mut r = Reader::new(b, ErrorCode::BRC_BAD_LEN);
        let a = Action::parse(&mut r)?;
        assert!(r.is_empty(), "parse must consume exactly len bytes");
        Ok(a)
    }

    fn emit_one(a: &Action) -> Vec<u8> {
        let mut v = Vec::new();
        a.emit(&mut v);
        assert_eq!(v.len(), a.wire_len());
        v
    }

    /// Parses to `want`, and `want` emits back to exactly `bytes`.
    fn check(bytes: &[u8], want: Action) {
        assert_eq!(parse_one(bytes), Ok(want.clone()), "parse {}", hex::encode(bytes));
        assert_eq!(emit_one(&want), bytes, "emit {want:?}");
        assert_eq!(want.wire_len(), bytes.len());
    }

    #[test]
    fn type_numbers_match_openflow_h() {
        assert_eq!(Action::Output { port: 1, max_len: 0 }.type_code(), 0);
        assert_eq!(Action::CopyTtlOut.type_code(), 11);
        assert_eq!(Action::SetField(vlan_vid(1)).type_code(), 25);
        assert_eq!(Action::PopPbb.type_code(), 27);
        assert_eq!(ty::EXPERIMENTER, 0xffff);
    }

    #[test]
    fn output() {
        check(
            &[0, 0, 0, 16, 0xff, 0xff, 0xff, 0xfd, 0xff, 0xe5, 0, 0, 0, 0, 0, 0],
            Action::Output { port: 0xffff_fffd, max_len: 0xffe5 },
        );
    }

    #[test]
    fn generic_actions() {
        check(&[0, 11, 0, 8, 0, 0, 0, 0], Action::CopyTtlOut);
        check(&[0, 12, 0, 8, 0, 0, 0, 0], Action::CopyTtlIn);
        check(&[0, 16, 0, 8, 0, 0, 0, 0], Action::DecMplsTtl);
        check(&[0, 18, 0, 8, 0, 0, 0, 0], Action::PopVlan);
        check(&[0, 24, 0, 8, 0, 0, 0, 0], Action::DecNwTtl);
        check(&[0, 27, 0, 8, 0, 0, 0, 0], Action::PopPbb);
    }

    #[test]
    fn ttl_push_pop_queue_group() {
        check(&[0, 15, 0, 8, 63, 0, 0, 0], Action::SetMplsTtl(63));
        check(&[0, 23, 0, 8, 0xff, 0, 0, 0], Action::SetNwTtl(255));
        check(&[0, 17, 0, 8, 0x81, 0x00, 0, 0], Action::PushVlan(0x8100));
        check(&[0, 19, 0, 8, 0x88, 0x47, 0, 0], Action::PushMpls(0x8847));
        check(&[0, 20, 0, 8, 0x08, 0x00, 0, 0], Action::PopMpls(0x0800));
        check(&[0, 26, 0, 8, 0x88, 0xe7, 0, 0], Action::PushPbb(0x88e7));
        check(&[0, 21, 0, 8, 0, 0, 0, 7], Action::SetQueue(7));
        check(&[0, 22, 0, 8, 0x12, 0x34, 0x56, 0x78], Action::Group(0x1234_5678));
    }

    #[test]
    fn experimenter() {
        check(
            &[0xff, 0xff, 0, 8, 0x00, 0x00, 0x23, 0x20],
            Action::Experimenter { experimenter: 0x2320, data: vec![] },
        );
        check(
            &[0xff, 0xff, 0, 16, 0x53, 0x4c, 0x49, 0x43, 1, 2, 3, 4, 5, 6, 7, 8],
            Action::Experimenter { experimenter: 0x534c_4943, data: vec![1, 2, 3, 4, 5, 6, 7, 8] },
        );
        // A hand-built value with unaligned data is zero-padded on output.
        let a = Action::Experimenter { experimenter: 1, data: vec![9] };
        assert_eq!(a.wire_len(), 16);
        assert_eq!(emit_one(&a), [0xff, 0xff, 0, 16, 0, 0, 0, 1, 9, 0, 0, 0, 0, 0, 0, 0]);
    }

    fn vlan_vid(v: u16) -> Oxm {
        Oxm::Basic {
            field: FieldId::VlanVid,
            value: FieldBytes::new(&v.to_be_bytes()).unwrap(),
            mask: None,
        }
    }

    /// Byte-level set-field cases decode without the OXM module's help.
    #[test]
    fn set_field_parse() {
        // vlan_vid=0x1005: OXM 80 00 0c 02 10 05, 2 bytes padding -> 16.
        let b = [0, 25, 0, 16, 0x80, 0x00, 0x0c, 0x02, 0x10, 0x05, 0, 0, 0, 0, 0, 0];
        assert_eq!(parse_one(&b), Ok(Action::SetField(vlan_vid(0x1005))));
        // eth_dst: 80 00 06 06 + 6 bytes = 10, +4 header = 14, padded 16.
        let b = [0, 25, 0, 16, 0x80, 0x00, 0x06, 0x06, 0, 1, 2, 3, 4, 5, 0, 0];
        let want = Oxm::Basic {
            field: FieldId::EthDst,
            value: FieldBytes::new(&[0, 1, 2, 3, 4, 5]).unwrap(),
            mask: None,
        };
        assert_eq!(parse_one(&b), Ok(Action::SetField(want)));
        // ipv6_src: 80 00 34 10 + 16 bytes = 20, +4 = 24, no padding.
        let mut b = vec![0, 25, 0, 24, 0x80, 0x00, 0x34, 0x10];
        b.extend(1..=16u8);
        let want = Oxm::Basic {
            field: FieldId::Ipv6Src,
            value: FieldBytes::new(&b[8..]).unwrap(),
            mask: None,
        };
        assert_eq!(parse_one(&b), Ok(Action::SetField(want)));
        // ip_dscp=63 (top of range): 80 00 10 01 3f -> 9, +4 = 13, padded 16.
        let b = [0, 25, 0, 16, 0x80, 0x00, 0x10, 0x01, 0x3f, 0, 0, 0, 0, 0, 0, 0];
        assert!(parse_one(&b).is_ok());
    }

    /// Needs `Oxm::emit` / `Oxm::wire_len` from the OXM module.
    #[test]
    fn set_field_emit() {
        check(
            &[0, 25, 0, 16, 0x80, 0x00, 0x0c, 0x02, 0x10, 0x05, 0, 0, 0, 0, 0, 0],
            Action::SetField(vlan_vid(0x1005)),
        );
        let mut b = vec![0, 25, 0, 24, 0x80, 0x00, 0x34, 0x10];
        b.extend(1..=16u8);
        let oxm = Oxm::Basic {
            field: FieldId::Ipv6Src,
            value: FieldBytes::new(&b[8..]).unwrap(),
            mask: None,
        };
        check(&b, Action::SetField(oxm));
    }

    #[test]
    fn set_field_errors() {
        let set = |oxm: &[u8], len: u16| {
            let mut b = vec![0, 25];
            b.extend(len.to_be_bytes());
            b.extend(oxm);
            b.resize(usize::from(len).max(b.len()), 0);
            parse_one(&b)
        };
        // Not OPENFLOW_BASIC: NXM_1 and experimenter classes.
        assert_eq!(set(&[0x00, 0x01, 0x0c, 0x02, 0, 1], 16), Err(ErrorCode::BAC_BAD_SET_TYPE));
        assert_eq!(
            set(&[0xff, 0xff, 0x0c, 0x06, 0, 0, 0x23, 0x20, 0, 1], 16),
            Err(ErrorCode::BAC_BAD_SET_TYPE)
        );
        // Field 40 is not defined in 1.3.5.
        assert_eq!(set(&[0x80, 0x00, 40 << 1, 0x02, 0, 1], 16), Err(ErrorCode::BAC_BAD_SET_TYPE));
        // Masked vlan_vid.
        assert_eq!(
            set(&[0x80, 0x00, 0x0d, 0x04, 0x10, 0x01, 0x1f, 0xff], 16),
            Err(ErrorCode::BAC_BAD_SET_LEN)
        );
        // oxm_len 3 for a 2-byte field.
        assert_eq!(set(&[0x80, 0x00, 0x0c, 0x03, 0x10, 1, 0], 16), Err(ErrorCode::BAC_BAD_SET_LEN));
        // eth_dst needs 14 bytes; an 8-byte action cannot hold it.
        assert_eq!(set(&[0x80, 0x00, 0x06, 0x06], 8), Err(ErrorCode::BAC_BAD_SET_LEN));
        // ipv6_src (20 bytes of OXM) in a 16-byte action.
        assert_eq!(
            set(&[0x80, 0x00, 0x34, 0x10, 1, 2, 3, 4, 5, 6, 7, 8], 16),
            Err(ErrorCode::BAC_BAD_SET_LEN)
        );
        // vlan_vid padded to 24 instead of 16: more than the spec's padding.
        assert_eq!(set(&[0x80, 0x00, 0x0c, 0x02, 0x10, 0x01], 24), Err(ErrorCode::BAC_BAD_SET_LEN));
        // Values wider than the field.
        assert_eq!(
            set(&[0x80, 0x00, 0x0c, 0x02, 0x20, 0x00], 16),
            Err(ErrorCode::BAC_BAD_SET_ARGUMENT)
        );
        assert_eq!(set(&[0x80, 0x00, 0x10, 0x01, 0x40], 16), Err(ErrorCode::BAC_BAD_SET_ARGUMENT));
        assert_eq!(set(&[0x80, 0x00, 0x12, 0x01, 0x04], 16), Err(ErrorCode::BAC_BAD_SET_ARGUMENT));
        assert_eq!(
            set(&[0x80, 0x00, 0x44, 0x04, 0x00, 0x10, 0x00, 0x00], 16),
            Err(ErrorCode::BAC_BAD_SET_ARGUMENT)
        );
        assert_eq!(set(&[0x80, 0x00, 0x48, 0x01, 0x02], 16), Err(ErrorCode::BAC_BAD_SET_ARGUMENT));
        // Framing problems stay generic BAD_LEN even for set-field.
        assert_eq!(
            set(&[0x80, 0x00, 0x0c, 0x02, 0x10, 0x01, 0, 0], 12),
            Err(ErrorCode::BAC_BAD_LEN)
        );
    }

    #[test]
    fn length_errors() {
        let e = |b: &[u8]| parse_one(b).unwrap_err();
        // Header truncated.
        assert_eq!(e(&[]), ErrorCode::BAC_BAD_LEN);
        assert_eq!(e(&[0, 0, 0]), ErrorCode::BAC_BAD_LEN);
        // len < 8 (including 0, which must not loop).
        assert_eq!(e(&[0, 11, 0, 0, 0, 0, 0, 0]), ErrorCode::BAC_BAD_LEN);
        assert_eq!(e(&[0, 11, 0, 4, 0, 0, 0, 0]), ErrorCode::BAC_BAD_LEN);
        // Not a multiple of 8.
        assert_eq!(e(&[0, 11, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0]), ErrorCode::BAC_BAD_LEN);
        // Longer than what remains.
        assert_eq!(e(&[0, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0, 0]), ErrorCode::BAC_BAD_LEN);
        // Wrong fixed size.
        assert_eq!(e(&[0, 0, 0, 8, 0, 0, 0, 1]), ErrorCode::BAC_BAD_LEN);
        assert_eq!(e(&[0, 22, 0, 16, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]), ErrorCode::BAC_BAD_LEN);
        assert_eq!(e(&[0, 11, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), ErrorCode::BAC_BAD_LEN);
        // Experimenter shorter than 8.
        assert_eq!(e(&[0xff, 0xff, 0, 4, 0, 0, 0x23, 0x20]), ErrorCode::BAC_BAD_LEN);
    }

    #[test]
    fn unknown_types() {
        // OpenFlow 1.0's SET_VLAN_VID (1), the unused 13/14, and 28.
        for t in [1u16, 2, 10, 13, 14, 28, 0x1000, 0xfffe] {
            let mut b = t.to_be_bytes().to_vec();
            b.extend([0, 8, 0, 0, 0, 0]);
            assert_eq!(parse_one(&b), Err(ErrorCode::BAC_BAD_TYPE), "type {t}");
        }
    }

    #[test]
    fn failed_parse_does_not_advance() {
        let b = [0, 0, 0, 8, 0, 0, 0, 1];
        let mut r = Reader::new(&b, ErrorCode::BRC_BAD_LEN);
        assert_eq!(Action::parse(&mut r), Err(ErrorCode::BAC_BAD_LEN));
        assert_eq!(r.position(), 0);
    }

    #[test]
    fn nonzero_padding_is_tolerated() {
        assert_eq!(
            parse_one(&[0, 0, 0, 16, 0, 0, 0, 2, 0, 0, 0xde, 0xad, 0xbe, 0xef, 1, 2]),
            Ok(Action::Output { port: 2, max_len: 0 })
        );
        assert_eq!(parse_one(&[0, 18, 0, 8, 1, 2, 3, 4]), Ok(Action::PopVlan));
        assert_eq!(parse_one(&[0, 15, 0, 8, 9, 1, 1, 1]), Ok(Action::SetMplsTtl(9)));
        assert_eq!(
            parse_one(&[0, 25, 0, 16, 0x80, 0x00, 0x0c, 0x02, 0x10, 0x05, 1, 2, 3, 4, 5, 6]),
            Ok(Action::SetField(vlan_vid(0x1005)))
        );
    }

    #[test]
    fn lists() {
        let b = [
            0, 17, 0, 8, 0x81, 0x00, 0, 0, // push_vlan
            0, 0, 0, 16, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, // output:3
            0, 22, 0, 8, 0, 0, 0, 9, // group:9
        ];
        let list = Action::parse_list(&b).unwrap();
        assert_eq!(
            list,
            [Action::PushVlan(0x8100), Action::Output { port: 3, max_len: 0 }, Action::Group(9)]
        );
        assert_eq!(Action::list_len(&list), b.len());
        let mut out = Vec::new();
        Action::emit_list(&list, &mut out);
        assert_eq!(out, b);
        assert_eq!(Action::parse_list(&[]), Ok(vec![]));
        // The first bad action's error wins; trailing junk is BAD_LEN.
        assert_eq!(Action::parse_list(&b[..b.len() - 1]), Err(ErrorCode::BAC_BAD_LEN));
        let mut bad = b.to_vec();
        bad.extend([0, 1, 0, 8, 0, 0, 0, 0]);
        assert_eq!(Action::parse_list(&bad), Err(ErrorCode::BAC_BAD_TYPE));
        let mut bad = b.to_vec();
        bad.extend([0, 0]);
        assert_eq!(Action::parse_list(&bad), Err(ErrorCode::BAC_BAD_LEN));
    }

    #[test]
    fn set_field_limits_follow_table_12() {
        let limits = [
            (FieldId::VlanVid, 0x1fffu128),
            (FieldId::VlanPcp, 7),
            (FieldId::IpDscp, 63),
            (FieldId::IpEcn, 3),
            (FieldId::Ipv6Flabel, 0xf_ffff),
            (FieldId::MplsLabel, 0xf_ffff),
            (FieldId::MplsTc, 7),
            (FieldId::MplsBos, 1),
            (FieldId::PbbIsid, 0xff_ffff),
            (FieldId::Ipv6Exthdr, 0x1ff),
            (FieldId::EthDst, 0xffff_ffff_ffff),
            (FieldId::Ipv6Dst, u128::MAX),
        ];
        for (field, max) in limits {
            let enc = |v: u128| {
                let mut b = vec![0, 25, 0, 0, 0x80, 0x00, (field as u8) << 1, field.len() as u8];
                b.extend(FieldBytes::from_u128(v, field.len()).as_slice());
                b.resize(pad8(b.len()), 0);
                let n = b.len() as u16;
                b[2..4].copy_from_slice(&n.to_be_bytes());
                b
            };
            let ok =
                Oxm::Basic { field, value: FieldBytes::from_u128(max, field.len()), mask: None };
            assert_eq!(parse_one(&enc(max)), Ok(Action::SetField(ok)), "{field:?} at max");
            // One past the maximum, where the field's bytes can hold it.
            if max < FieldBytes::from_u128(u128::MAX, field.len()).to_u128() {
                assert_eq!(
                    parse_one(&enc(max + 1)),
                    Err(ErrorCode::BAC_BAD_SET_ARGUMENT),
                    "{field:?} past max"
                );
            }
        }
    }

    proptest! {
        #[test]
        fn action_round_trips(a in arb_action()) {
            let b = emit_one(&a);
            prop_assert_eq!(b.len() % 8, 0);
            prop_assert_eq!(parse_one(&b), Ok(a));
        }

        #[test]
        fn list_round_trips(list in proptest::collection::vec(arb_action(), 0..8)) {
            let mut b = Vec::new();
            Action::emit_list(&list, &mut b);
            prop_assert_eq!(b.len(), Action::list_len(&list));
            prop_assert_eq!(Action::parse_list(&b), Ok(list));
        }

        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = Action::parse_list(&b);
        }

        /// Mostly well-framed garbage: valid-looking headers with random
        /// bodies reach deeper than uniform random bytes.
        #[test]
        fn framed_garbage_never_panics(
            parts in proptest::collection::vec(
                (
                    prop_oneof![0u16..30, Just(0xffff)],
                    0usize..4,
                    proptest::collection::vec(any::<u8>(), 0..32),
                    any::<bool>(),
                ),
                0..6,
            )
        ) {
            let mut b = Vec::new();
            for (t, len8, mut body, basic) in parts {
                let len = 8 * (len8 + 1);
                body.resize(len - 4, 0);
                if basic {
                    // Reach past the set-field class check.
                    body[..2].copy_from_slice(&OFPXMC_OPENFLOW_BASIC.to_be_bytes());
                }
                b.extend(t.to_be_bytes());
                b.extend((len as u16).to_be_bytes());
                b.extend(body);
            }
            if let Ok(list) = Action::parse_list(&b) {
                // Every decoded action accounts for exactly its bytes, and
                // re-encoding (with zeroed padding) decodes to the same list.
                prop_assert_eq!(Action::list_len(&list), b.len());
                let mut again = Vec::new();
                Action::emit_list(&list, &mut again);
                prop_assert_eq!(Action::parse_list(&again), Ok(list));
            }
        }
    }
}
