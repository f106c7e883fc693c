//! Instructions (OpenFlow 1.3.5 §7.2.4 and §A.2.4, `struct ofp_instruction_*`).
//!
//! ## What
//! [`Instruction`] is the value form of one instruction of a flow entry, with
//! [`Instruction::parse`] / [`Instruction::emit`] / [`Instruction::wire_len`]
//! and the list forms used by `OFPT_FLOW_MOD` and flow-stats replies.
//!
//! ## Wire layouts (big-endian; every instruction is a multiple of 8 bytes)
//! ```text
//! header           type:u16 len:u16                              (4)
//! goto_table       header table_id:u8 pad[3]                      8
//! write_metadata   header pad[4] metadata:u64 metadata_mask:u64  24
//! write/apply      header pad[4] actions...                       8 + actions
//! clear_actions    header pad[4]                                  8
//! meter            header meter_id:u32                            8
//! experimenter     header experimenter:u32 data                   8 + data
//! ```
//!
//! ## Errors
//! Checked in this order (all `OFPET_BAD_INSTRUCTION` unless noted):
//! 1. Framing — fewer than 4 bytes left for the header, `len < 4`, `len`
//!    not a multiple of 8, or `len` longer than what remains:
//!    `OFPBIC_BAD_LEN` (decided before the type, as for actions).
//! 2. Unknown `type`: `OFPBIC_UNKNOWN_INST`.
//! 3. A fixed-size instruction (all but WRITE/APPLY_ACTIONS and
//!    EXPERIMENTER) whose `len` differs from its struct size:
//!    `OFPBIC_BAD_LEN`.
//! 4. An action inside WRITE/APPLY_ACTIONS that fails keeps the action's own
//!    error (`OFPET_BAD_ACTION` / `OFPBAC_*`), see [`crate::action`].
//!
//! A list holding the same instruction type twice decodes fine: the spec's
//! "at most one of each" rule is enforced by the pipeline when the flow is
//! installed, not by the codec. On failure `parse` leaves the reader where it
//! was; the reader's own short-read error is never used.
//!
//! Padding bytes are ignored on input, even when non-zero; `emit` writes
//! zeros, so `parse(emit(x)) == x` for every value `parse` produces.
//! Experimenter `data` is kept verbatim (padding included) and zero-padded on
//! output if a hand-built value is not a multiple of 8 long. Lengths above
//! 65535 (hand-built values only) cannot be encoded and are truncated.

use crate::action::Action;
use crate::error::{ErrorCode, Result};
use crate::wire::{pad8, Put, Reader};

/// `enum ofp_instruction_type` (OpenFlow 1.3.5 §A.2.4).
pub mod ty {
    pub const GOTO_TABLE: u16 = 1;
    pub const WRITE_METADATA: u16 = 2;
    pub const WRITE_ACTIONS: u16 = 3;
    pub const APPLY_ACTIONS: u16 = 4;
    pub const CLEAR_ACTIONS: u16 = 5;
    pub const METER: u16 = 6;
    pub const EXPERIMENTER: u16 = 0xffff;
}

/// Length of `ofp_instruction_write_metadata`.
const WRITE_METADATA_LEN: usize = 24;
/// Length of the other fixed-size instructions and of the
/// `ofp_instruction_actions` / experimenter headers.
const SHORT_LEN: usize = 8;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Instruction {
    GotoTable(u8),
    WriteMetadata {
        metadata: u64,
        mask: u64,
    },
    WriteActions(Vec<Action>),
    ApplyActions(Vec<Action>),
    ClearActions,
    Meter(u32),
    /// `OFPIT_EXPERIMENTER`: `data` after the experimenter id, verbatim.
    Experimenter {
        experimenter: u32,
        data: Vec<u8>,
    },
}

impl Instruction {
    /// Where the instruction runs among an entry's: OpenFlow 1.3 §5.9
    /// executes meter, apply-actions, clear-actions, write-actions,
    /// write-metadata, goto-table in that order whatever order the
    /// FLOW_MOD listed them in (experimenter instructions last). Switches
    /// execute in this order and ovs-ofctl prints in it.
    pub fn exec_rank(&self) -> u8 {
        match self {
            Instruction::Meter(_) => 0,
            Instruction::ApplyActions(_) => 1,
            Instruction::ClearActions => 2,
            Instruction::WriteActions(_) => 3,
            Instruction::WriteMetadata { .. } => 4,
            Instruction::GotoTable(_) => 5,
            Instruction::Experimenter { .. } => 6,
        }
    }

    /// The `OFPIT_*` number of this instruction (see [`ty`]).
    pub fn type_code(&self) -> u16 {
        match self {
            Instruction::GotoTable(_) => ty::GOTO_TABLE,
            Instruction::WriteMetadata { .. } => ty::WRITE_METADATA,
            Instruction::WriteActions(_) => ty::WRITE_ACTIONS,
            Instruction::ApplyActions(_) => ty::APPLY_ACTIONS,
            Instruction::ClearActions => ty::CLEAR_ACTIONS,
            Instruction::Meter(_) => ty::METER,
            Instruction::Experimenter { .. } => ty::EXPERIMENTER,
        }
    }

    /// Parse one instruction at the reader's position and consume exactly
    /// its `len` bytes. Errors as listed in the module docs; on error the
    /// reader is not advanced.
    pub fn parse(r: &mut Reader<'_>) -> Result<Instruction> {
        const BAD_LEN: ErrorCode = ErrorCode::BIC_BAD_LEN;
        let (Ok(t), Ok(len)) = (r.peek_u16(0), r.peek_u16(2)) else {
            return Err(BAD_LEN);
        };
        let len = usize::from(len);
        // `len >= 4` and a multiple of 8 means `len >= 8`.
        if len < 4 || len % 8 != 0 {
            return Err(BAD_LEN);
        }
        let bytes = r.peek_rest().get(..len).ok_or(BAD_LEN)?;
        let mut b = Reader::new(bytes, BAD_LEN);
        b.skip(4)?;
        let fixed = |want: usize| if len == want { Ok(()) } else { Err(BAD_LEN) };
        let inst = match t {
            ty::GOTO_TABLE => {
                fixed(SHORT_LEN)?;
                Instruction::GotoTable(b.u8()?)
            }
            ty::WRITE_METADATA => {
                fixed(WRITE_METADATA_LEN)?;
                b.skip(4)?;
                let metadata = b.u64()?;
                let mask = b.u64()?;
                Instruction::WriteMetadata { metadata, mask }
            }
            ty::WRITE_ACTIONS => {
                b.skip(4)?;
                Instruction::WriteActions(Action::parse_list(b.rest())?)
            }
            ty::APPLY_ACTIONS => {
                b.skip(4)?;
                Instruction::ApplyActions(Action::parse_list(b.rest())?)
            }
            ty::CLEAR_ACTIONS => fixed(SHORT_LEN).map(|()| Instruction::ClearActions)?,
            ty::METER => {
                fixed(SHORT_LEN)?;
                Instruction::Meter(b.u32()?)
            }
            ty::EXPERIMENTER => {
                let experimenter = b.u32()?;
                Instruction::Experimenter { experimenter, data: b.rest().to_vec() }
            }
            _ => return Err(ErrorCode::BIC_UNKNOWN_INST),
        };
        // `len <= r.remaining()` was established by the `get` above.
        r.skip(len)?;
        Ok(inst)
    }

    /// Append the wire form (always with zero padding).
    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(self.type_code());
        out.put_u16(self.wire_len() as u16);
        match self {
            Instruction::GotoTable(table) => {
                out.put_u8(*table);
                out.put_zeros(3);
            }
            Instruction::WriteMetadata { metadata, mask } => {
                out.put_zeros(4);
                out.put_u64(*metadata);
                out.put_u64(*mask);
            }
            Instruction::WriteActions(list) | Instruction::ApplyActions(list) => {
                out.put_zeros(4);
                Action::emit_list(list, out);
            }
            Instruction::ClearActions => out.put_zeros(4),
            Instruction::Meter(id) => out.put_u32(*id),
            Instruction::Experimenter { experimenter, data } => {
                out.put_u32(*experimenter);
                out.put_slice(data);
                out.pad8_from(start);
            }
        }
        debug_assert_eq!(out.len() - start, self.wire_len());
    }

    /// Encoded length in bytes (always a multiple of 8).
    pub fn wire_len(&self) -> usize {
        match self {
            Instruction::WriteMetadata { .. } => WRITE_METADATA_LEN,
            Instruction::WriteActions(list) | Instruction::ApplyActions(list) => {
                SHORT_LEN + Action::list_len(list)
            }
            Instruction::Experimenter { data, .. } => pad8(SHORT_LEN + data.len()),
            Instruction::GotoTable(_) | Instruction::ClearActions | Instruction::Meter(_) => {
                SHORT_LEN
            }
        }
    }

    /// Parse a whole instruction list occupying all of `buf`.
    ///
    /// Fails with the first failing instruction's error; trailing bytes too
    /// short to be an instruction are `OFPBIC_BAD_LEN`. Duplicate types are
    /// not rejected here (see the module docs).
    pub fn parse_list(buf: &[u8]) -> Result<Vec<Instruction>> {
        let mut r = Reader::new(buf, ErrorCode::BIC_BAD_LEN);
        let mut list = Vec::new();
        // Each successful parse consumes at least 8 bytes.
        while !r.is_empty() {
            list.push(Instruction::parse(&mut r)?);
        }
        Ok(list)
    }

    pub fn emit_list(list: &[Instruction], out: &mut Vec<u8>) {
        for i in list {
            i.emit(out);
        }
    }

    /// Encoded length of a whole list.
    pub fn list_len(list: &[Instruction]) -> usize {
        list.iter().map(Instruction::wire_len).sum()
    }
}

/// Any instruction `parse` can produce, nested action lists included.
#[cfg(test)]
pub(crate) fn arb_instruction() -> impl proptest::strategy::Strategy<Value = Instruction> {
    use crate::action::arb_action;
    use proptest::collection::vec;
    use proptest::prelude::*;
    prop_oneof![
        any::<u8>().prop_map(Instruction::GotoTable),
        (any::<u64>(), any::<u64>())
            .prop_map(|(metadata, mask)| Instruction::WriteMetadata { metadata, mask }),
        vec(arb_action(), 0..6).prop_map(Instruction::WriteActions),
        vec(arb_action(), 0..6).prop_map(Instruction::ApplyActions),
        Just(Instruction::ClearActions),
        any::<u32>().prop_map(Instruction::Meter),
        (any::<u32>(), (0usize..4).prop_flat_map(|n| vec(any::<u8>(), n * 8)))
            .prop_map(|(experimenter, data)| Instruction::Experimenter { experimenter, data }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_one(b: &[u8]) -> Result<Instruction> {
        let mut r = Reader::new(b, ErrorCode::BRC_BAD_LEN);
        let i = Instruction::parse(&mut r)?;
        assert!(r.is_empty(), "parse must consume exactly len bytes");
        Ok(i)
    }

    fn emit_one(i: &Instruction) -> Vec<u8> {
        let mut v = Vec::new();
        i.emit(&mut v);
        assert_eq!(v.len(), i.wire_len());
        v
    }

    fn check(bytes: &[u8], want: Instruction) {
        assert_eq!(parse_one(bytes), Ok(want.clone()), "parse {}", hex::encode(bytes));
        assert_eq!(emit_one(&want), bytes, "emit {want:?}");
    }

    #[test]
    fn type_numbers_match_openflow_h() {
        assert_eq!(Instruction::GotoTable(1).type_code(), 1);
        assert_eq!(Instruction::WriteMetadata { metadata: 0, mask: 0 }.type_code(), 2);
        assert_eq!(Instruction::WriteActions(vec![]).type_code(), 3);
        assert_eq!(Instruction::ApplyActions(vec![]).type_code(), 4);
        assert_eq!(Instruction::ClearActions.type_code(), 5);
        assert_eq!(Instruction::Meter(1).type_code(), 6);
        assert_eq!(ty::EXPERIMENTER, 0xffff);
    }

    #[test]
    fn fixed_instructions() {
        check(&[0, 1, 0, 8, 3, 0, 0, 0], Instruction::GotoTable(3));
        check(
            &[
                0, 2, 0, 24, 0, 0, 0, 0, // header + pad
                0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, // metadata
                0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, // mask
            ],
            Instruction::WriteMetadata { metadata: 0x0123_4567_89ab_cdef, mask: 0xffff_ffff },
        );
        check(&[0, 5, 0, 8, 0, 0, 0, 0], Instruction::ClearActions);
        check(&[0, 6, 0, 8, 0, 0, 0, 42], Instruction::Meter(42));
    }

    #[test]
    fn action_instructions() {
        check(&[0, 4, 0, 8, 0, 0, 0, 0], Instruction::ApplyActions(vec![]));
        check(
            &[
                0, 4, 0, 32, 0, 0, 0, 0, // apply_actions, len 32
                0, 18, 0, 8, 0, 0, 0, 0, // pop_vlan
                0, 0, 0, 16, 0xff, 0xff, 0xff, 0xfd, 0, 128, 0, 0, 0, 0, 0,
                0, // CONTROLLER:128
            ],
            Instruction::ApplyActions(vec![
                Action::PopVlan,
                Action::Output { port: 0xffff_fffd, max_len: 128 },
            ]),
        );
        check(
            &[0, 3, 0, 16, 0, 0, 0, 0, 0, 22, 0, 8, 0, 0, 0, 5],
            Instruction::WriteActions(vec![Action::Group(5)]),
        );
    }

    #[test]
    fn experimenter() {
        check(
            &[0xff, 0xff, 0, 8, 0x4f, 0x4e, 0x46, 0x00],
            Instruction::Experimenter { experimenter: 0x4f4e_4600, data: vec![] },
        );
        check(
            &[0xff, 0xff, 0, 16, 0, 0, 0x23, 0x20, 8, 7, 6, 5, 4, 3, 2, 1],
            Instruction::Experimenter { experimenter: 0x2320, data: vec![8, 7, 6, 5, 4, 3, 2, 1] },
        );
        let i = Instruction::Experimenter { experimenter: 1, data: vec![1, 2, 3] };
        assert_eq!(emit_one(&i), [0xff, 0xff, 0, 16, 0, 0, 0, 1, 1, 2, 3, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn length_errors() {
        let e = |b: &[u8]| parse_one(b).unwrap_err();
        // Header truncated.
        assert_eq!(e(&[]), ErrorCode::BIC_BAD_LEN);
        assert_eq!(e(&[0, 1, 0]), ErrorCode::BIC_BAD_LEN);
        // len < 4 (0 is a multiple of 8 and must not loop).
        assert_eq!(e(&[0, 1, 0, 0, 0, 0, 0, 0]), ErrorCode::BIC_BAD_LEN);
        assert_eq!(e(&[0, 5, 0, 2, 0, 0, 0, 0]), ErrorCode::BIC_BAD_LEN);
        // Not a multiple of 8 (4 is the bare header size).
        assert_eq!(e(&[0, 5, 0, 4]), ErrorCode::BIC_BAD_LEN);
        assert_eq!(e(&[0, 5, 0, 4, 0, 0, 0, 0]), ErrorCode::BIC_BAD_LEN);
        assert_eq!(e(&[0, 5, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0]), ErrorCode::BIC_BAD_LEN);
        // Overrunning.
        assert_eq!(e(&[0, 2, 0, 24, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]), ErrorCode::BIC_BAD_LEN);
        assert_eq!(e(&[0, 4, 0, 16, 0, 0, 0, 0]), ErrorCode::BIC_BAD_LEN);
        // Wrong fixed size.
        assert_eq!(e(&[0, 2, 0, 8, 0, 0, 0, 0]), ErrorCode::BIC_BAD_LEN);
        assert_eq!(e(&[0, 1, 0, 16, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), ErrorCode::BIC_BAD_LEN);
        assert_eq!(e(&[0, 5, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), ErrorCode::BIC_BAD_LEN);
        assert_eq!(e(&[0, 6, 0, 16, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]), ErrorCode::BIC_BAD_LEN);
    }

    #[test]
    fn unknown_types() {
        for t in [0u16, 7, 8, 0x100, 0xfffe] {
            let mut b = t.to_be_bytes().to_vec();
            b.extend([0, 8, 0, 0, 0, 0]);
            assert_eq!(parse_one(&b), Err(ErrorCode::BIC_UNKNOWN_INST), "type {t}");
        }
    }

    #[test]
    fn action_errors_keep_their_own_code() {
        // apply_actions holding an unknown action type.
        let b = [0, 4, 0, 16, 0, 0, 0, 0, 0, 1, 0, 8, 0, 0, 0, 0];
        assert_eq!(parse_one(&b), Err(ErrorCode::BAC_BAD_TYPE));
        // write_actions holding an output with the wrong length.
        let b = [0, 3, 0, 16, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 1];
        assert_eq!(parse_one(&b), Err(ErrorCode::BAC_BAD_LEN));
        // an action overrunning its instruction (but not the buffer).
        let b = [
            0, 4, 0, 16, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 1, // apply, len 16
            0, 0, 0, 0, 0, 0, 0, 0, // the output's second half, outside
        ];
        let mut r = Reader::new(&b, ErrorCode::BRC_BAD_LEN);
        assert_eq!(Instruction::parse(&mut r), Err(ErrorCode::BAC_BAD_LEN));
        assert_eq!(r.position(), 0);
        // a bad set-field inside apply_actions.
        let b = [
            0, 4, 0, 24, 0, 0, 0, 0, //
            0, 25, 0, 16, 0x80, 0x00, 0x0c, 0x02, 0x20, 0x00, 0, 0, 0, 0, 0, 0,
        ];
        assert_eq!(parse_one(&b), Err(ErrorCode::BAC_BAD_SET_ARGUMENT));
    }

    #[test]
    fn nonzero_padding_is_tolerated() {
        assert_eq!(parse_one(&[0, 1, 0, 8, 7, 1, 2, 3]), Ok(Instruction::GotoTable(7)));
        assert_eq!(parse_one(&[0, 5, 0, 8, 1, 2, 3, 4]), Ok(Instruction::ClearActions));
        assert_eq!(
            parse_one(&[0, 4, 0, 16, 9, 9, 9, 9, 0, 18, 0, 8, 0, 0, 0, 0]),
            Ok(Instruction::ApplyActions(vec![Action::PopVlan]))
        );
    }

    #[test]
    fn lists_allow_duplicates() {
        let b = [
            0, 6, 0, 8, 0, 0, 0, 1, // meter:1
            0, 4, 0, 8, 0, 0, 0, 0, // apply_actions()
            0, 4, 0, 16, 0, 0, 0, 0, 0, 24, 0, 8, 0, 0, 0, 0, // apply_actions(dec_ttl)
            0, 1, 0, 8, 2, 0, 0, 0, // goto_table:2
        ];
        let list = Instruction::parse_list(&b).unwrap();
        assert_eq!(
            list,
            [
                Instruction::Meter(1),
                Instruction::ApplyActions(vec![]),
                Instruction::ApplyActions(vec![Action::DecNwTtl]),
                Instruction::GotoTable(2),
            ]
        );
        assert_eq!(Instruction::list_len(&list), b.len());
        let mut out = Vec::new();
        Instruction::emit_list(&list, &mut out);
        assert_eq!(out, b);
        assert_eq!(Instruction::parse_list(&[]), Ok(vec![]));
        assert_eq!(Instruction::parse_list(&b[..b.len() - 2]), Err(ErrorCode::BIC_BAD_LEN));
        let mut bad = b.to_vec();
        bad.extend([0, 9, 0, 8, 0, 0, 0, 0]);
        assert_eq!(Instruction::parse_list(&bad), Err(ErrorCode::BIC_UNKNOWN_INST));
    }

    proptest! {
        #[test]
        fn instruction_round_trips(i in arb_instruction()) {
            let b = emit_one(&i);
            prop_assert_eq!(b.len() % 8, 0);
            prop_assert_eq!(parse_one(&b), Ok(i));
        }

        #[test]
        fn list_round_trips(list in proptest::collection::vec(arb_instruction(), 0..6)) {
            let mut b = Vec::new();
            Instruction::emit_list(&list, &mut b);
            prop_assert_eq!(b.len(), Instruction::list_len(&list));
            prop_assert_eq!(Instruction::parse_list(&b), Ok(list));
        }

        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..160)) {
            let _ = Instruction::parse_list(&b);
        }

        /// Well-framed headers with random bodies, so that action lists
        /// inside WRITE/APPLY_ACTIONS get exercised too.
        #[test]
        fn framed_garbage_never_panics(
            parts in proptest::collection::vec(
                (prop_oneof![0u16..8, Just(0xffff)], 0usize..4, proptest::collection::vec(any::<u8>(), 0..32)),
                0..6,
            )
        ) {
            let mut b = Vec::new();
            for (t, len8, mut body) in parts {
                let len = 8 * (len8 + 1);
                body.resize(len - 4, 0);
                b.extend(t.to_be_bytes());
                b.extend((len as u16).to_be_bytes());
                b.extend(body);
            }
            if let Ok(list) = Instruction::parse_list(&b) {
                prop_assert_eq!(Instruction::list_len(&list), b.len());
                let mut again = Vec::new();
                Instruction::emit_list(&list, &mut again);
                prop_assert_eq!(Instruction::parse_list(&again), Ok(list));
            }
        }
    }
}
