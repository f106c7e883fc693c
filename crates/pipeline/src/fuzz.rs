//! The fuzz entry point: arbitrary bytes read as a small switch
//! configuration (groups, a meter, flows in up to four tables) followed by
//! one packet, which then goes through every entry path of the pipeline.
//!
//! The decoder never fails: when the bytes run out every further read is
//! zero, and every choice is taken modulo its range, so each input is a
//! valid recipe. Flow-mods and group-mods the pipeline rejects are simply
//! skipped — rejecting is behaviour under test too. The only property is
//! "no panic, no unbounded work": a `cargo fuzz` target calls
//! [`fuzz_pipeline`] (wired by the workspace's `fuzz/` crate) and the
//! crate's property test runs it on random and structured inputs.
//!
//! Layout (each item one byte unless noted):
//! `n_groups` (≤ 3) × group { type, n_buckets (≤ 3) × bucket { weight,
//! watch port, action list } }, `n_flows` (≤ 8) × flow { table (≤ 3),
//! priority, n_match (≤ 3) × match field { one time in 8 a `pof` field
//! (position, length, value, optional mask), else field index, mask flag,
//! value (field length) }, instruction flags, action lists (POF actions
//! among them) }, then the packet (the rest of the input).

use crate::Pipeline;
use sluice_ofp::action::Action;
use sluice_ofp::consts::{port_no, OFP_NO_BUFFER};
use sluice_ofp::fieldcopy::{FieldAction, FieldRef, MoveEncoding, Subfield};
use sluice_ofp::group::{Bucket, GroupType};
use sluice_ofp::instruction::Instruction;
use sluice_ofp::message::{group_mod_command, FlowMod, GroupMod, Message, PacketOut};
use sluice_ofp::meter::MeterBand;
use sluice_ofp::oxm::{FieldBytes, FieldId, Match, Oxm};
use sluice_ofp::pof::{self, PofAction, PofBase, PofField, PofMatch, PofPos};
use sluice_ofp::port::Port;

/// A reader that yields zeros once the input is exhausted.
struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos = self.pos.saturating_add(1);
        b
    }

    fn below(&mut self, n: u8) -> u8 {
        self.u8() % n.max(1)
    }

    fn field_bytes(&mut self, f: FieldId) -> FieldBytes {
        let mut v = 0u128;
        for _ in 0..f.len() {
            v = (v << 8) | u128::from(self.u8());
        }
        FieldBytes::from_u128(v, f.len())
    }

    fn rest(&self) -> &[u8] {
        self.data.get(self.pos..).unwrap_or(&[])
    }
}

const PORTS: [u32; 4] = [1, 2, 3, 4];

fn port(b: &mut Bytes<'_>) -> u32 {
    match b.below(10) {
        0..=3 => PORTS[usize::from(b.below(4))],
        4 => port_no::IN_PORT,
        5 => port_no::ALL,
        6 => port_no::FLOOD,
        7 => port_no::CONTROLLER,
        8 => port_no::LOCAL,
        _ => port_no::TABLE,
    }
}

fn field(b: &mut Bytes<'_>) -> FieldId {
    let all = FieldId::ALL;
    all[usize::from(b.u8()) % all.len()]
}

fn action(b: &mut Bytes<'_>) -> Action {
    match b.below(24) {
        0 => Action::Output { port: port(b), max_len: u16::from(b.u8()) * 4 },
        1 => Action::PushVlan(if b.u8() & 1 == 0 { 0x8100 } else { 0x88a8 }),
        2 => Action::PopVlan,
        3 => Action::PushMpls(0x8847),
        4 => Action::PopMpls(if b.u8() & 1 == 0 { 0x0800 } else { 0x8847 }),
        5 => Action::PushPbb(0x88e7),
        6 => Action::PopPbb,
        7 => Action::DecNwTtl,
        8 => Action::DecMplsTtl,
        9 => Action::SetNwTtl(b.u8()),
        10 => Action::SetMplsTtl(b.u8()),
        11 => Action::CopyTtlIn,
        12 => Action::CopyTtlOut,
        13 => Action::SetQueue(u32::from(b.below(3))),
        14 => Action::Group(u32::from(b.below(4))),
        15 | 16 => pof_action(b).to_action(),
        17 | 18 => field_action(b).to_action(),
        _ => {
            let f = field(b);
            Action::SetField(Oxm::Basic { field: f, value: b.field_bytes(f), mask: None })
        }
    }
}

/// A bit range of a field: in range mostly, past its end one time in 8
/// (validation must refuse those).
fn subfield(b: &mut Bytes<'_>, f: FieldId, n_bits: Option<u16>) -> Subfield {
    let bits = f.bits() as u16;
    let n = n_bits.unwrap_or_else(|| u16::from(b.u8()) % bits + 1);
    let room = bits.saturating_sub(n);
    let ofs = if b.below(8) == 0 { u16::from(b.u8()) } else { u16::from(b.u8()) % (room + 1) };
    Subfield { field: FieldRef::of(f), ofs, n_bits: n }
}

/// A Nicira move or load, or an ONF copy-field, between any two fields.
fn field_action(b: &mut Bytes<'_>) -> FieldAction {
    let dst_f = field(b);
    if b.u8() & 1 == 0 {
        let dst = subfield(b, dst_f, None);
        let dst = Subfield { n_bits: dst.n_bits.min(64), ..dst };
        let mut v = 0u64;
        for _ in 0..8 {
            v = (v << 8) | u64::from(b.u8());
        }
        let value = if dst.n_bits >= 64 { v } else { v & ((1 << dst.n_bits) - 1) };
        return FieldAction::Load { dst, value };
    }
    let src_f = field(b);
    let src = subfield(b, src_f, None);
    let dst = subfield(b, dst_f, Some(src.n_bits));
    let encoding = if b.u8() & 1 == 0 { MoveEncoding::Nicira } else { MoveEncoding::Onf };
    FieldAction::Move { src, dst, encoding }
}

/// A POF position: any base, a bit offset within the first 128 bytes
/// (or, one time in 16, anywhere up to the largest offset).
fn pof_pos(b: &mut Bytes<'_>) -> PofPos {
    let base = PofBase::ALL[usize::from(b.below(6))];
    let far = b.below(16) == 0;
    let bit_offset = u32::from(b.u8()) << 2 | u32::from(b.below(4));
    let bit_offset = if far { bit_offset * 511 } else { bit_offset };
    PofPos { base, bit_offset: bit_offset.min(pof::MAX_BIT_OFFSET - 128) }
}

/// A POF field of 1..=`max` bits.
fn pof_field(b: &mut Bytes<'_>, max: u8) -> PofField {
    let pos = pof_pos(b);
    PofField { pos, bit_len: u16::from(b.below(max)) + 1 }
}

fn pof_value(b: &mut Bytes<'_>, f: PofField) -> u128 {
    let mut v = 0u128;
    for _ in 0..usize::from(f.bit_len).div_ceil(8) {
        v = (v << 8) | u128::from(b.u8());
    }
    v & f.max_value()
}

/// A POF action (any of the six, valid by construction).
fn pof_action(b: &mut Bytes<'_>) -> PofAction {
    match b.below(6) {
        0 => {
            let field = pof_field(b, 128);
            let value = pof_value(b, field);
            let mask = (b.u8() & 1 == 1).then(|| pof_value(b, field));
            let value = mask.map_or(value, |m| value & m);
            PofAction::Set { field, value, mask }
        }
        1 => {
            let field = pof_field(b, 128);
            let d = pof_value(b, field) as i128;
            let delta = if b.u8() & 1 == 1 { d.wrapping_neg() } else { d };
            PofAction::Modify {
                field,
                delta: if field.bit_len >= 128 { delta } else { delta % (1i128 << field.bit_len) },
            }
        }
        2 => {
            let pos = pof_pos(b);
            let n = usize::from(b.below(16)) + 1;
            PofAction::Add { pos, bytes: (0..n).map(|_| b.u8()).collect() }
        }
        3 => PofAction::Delete { pos: pof_pos(b), len_bits: 8 * (u32::from(b.below(32)) + 1) },
        4 => {
            let field = PofField { pos: pof_pos(b), bit_len: pof::CHECKSUM_FIELD_BITS };
            let calc_len_bits = 8 * (u32::from(b.below(64)) + 1);
            PofAction::Checksum { field, start: pof_pos(b), calc_len_bits }
        }
        _ => {
            let from = pof_field(b, 64);
            let meta_bit = b.below(65 - from.bit_len as u8);
            PofAction::WriteMetadata { meta_bit, from }
        }
    }
}

fn actions(b: &mut Bytes<'_>) -> Vec<Action> {
    (0..b.below(5)).map(|_| action(b)).collect()
}

/// One flow-mod (ADD) decoded from the input.
fn flow_mod(b: &mut Bytes<'_>) -> FlowMod {
    let table_id = b.below(4);
    let priority = u16::from(b.u8());
    let mut m = Match::default();
    for _ in 0..b.below(4) {
        if b.below(8) == 0 {
            // A `pof` field, masked one time in two.
            let field = pof_field(b, 128);
            let value = pof_value(b, field);
            let mask = (b.u8() & 1 == 1).then(|| pof_value(b, field));
            let value = mask.map_or(value, |m| value & m);
            m.oxms.push(PofMatch { field, value, mask }.to_oxm());
            continue;
        }
        let f = field(b);
        let masked = b.u8() & 1 == 1 && f.maskable();
        let value = b.field_bytes(f);
        let mask = masked.then(|| b.field_bytes(f));
        // Keep value bits inside the mask so more matches compile.
        let value = match &mask {
            Some(mk) => FieldBytes::from_u128(value.to_u128() & mk.to_u128(), f.len()),
            None => value,
        };
        m.oxms.push(Oxm::Basic { field: f, value, mask });
    }
    let flags = b.u8();
    let mut ins = Vec::new();
    if flags & 1 != 0 {
        ins.push(Instruction::Meter(1));
    }
    if flags & 2 != 0 {
        ins.push(Instruction::ApplyActions(actions(b)));
    }
    if flags & 4 != 0 {
        ins.push(Instruction::ClearActions);
    }
    if flags & 8 != 0 {
        ins.push(Instruction::WriteActions(actions(b)));
    }
    if flags & 16 != 0 {
        ins.push(Instruction::WriteMetadata { metadata: u64::from(b.u8()), mask: 0xff });
    }
    if flags & 32 != 0 {
        ins.push(Instruction::GotoTable(table_id + 1));
    }
    if flags & 64 != 0 {
        ins.reverse(); // any wire order must work
    }
    FlowMod {
        table_id,
        priority,
        r#match: m,
        instructions: ins,
        buffer_id: OFP_NO_BUFFER,
        out_port: port_no::ANY,
        out_group: sluice_ofp::consts::group_id::ANY,
        ..FlowMod::default()
    }
}

/// Run the pipeline on a configuration and packet decoded from `data`.
/// Never panics (that is what fuzzing checks).
pub fn fuzz_pipeline(data: &[u8]) {
    let (mut p, packet) = build(data);
    run(&mut p, &packet);
}

/// Decode the switch configuration; returns it and the packet bytes.
fn build(data: &[u8]) -> (Pipeline, Vec<u8>) {
    let mut b = Bytes { data, pos: 0 };
    let p = build_from(&mut b, crate::Config::default());
    (p, b.rest().to_vec())
}

/// Decode the switch configuration from `b` into a pipeline made with
/// `cfg` (its table and buffer counts are overridden).
fn build_from(b: &mut Bytes<'_>, cfg: crate::Config) -> Pipeline {
    let cfg = crate::Config { n_tables: 4, n_buffers: 4, ..cfg };
    let mut p = Pipeline::new(cfg);
    for n in PORTS.into_iter().chain([port_no::LOCAL]) {
        let desc = Port { port_no: n, name: format!("p{n}"), ..Port::default() };
        p.ports_mut().add(desc, 0);
        p.ports_mut().add_queue(n, 1, 0);
    }
    let _ = p.meter_mod(&sluice_ofp::message::MeterMod {
        command: 0,
        flags: sluice_ofp::meter::flags::PKTPS | sluice_ofp::meter::flags::BURST,
        meter_id: 1,
        bands: vec![MeterBand::Drop { rate: 1, burst_size: 2 }],
    });
    for id in 1..=u32::from(b.below(4)) {
        let group_type = match b.below(4) {
            0 => GroupType::All,
            1 => GroupType::Select,
            2 => GroupType::Indirect,
            _ => GroupType::FastFailover,
        };
        let buckets = (0..b.below(4))
            .map(|_| Bucket {
                weight: u16::from(b.u8()),
                watch_port: PORTS[usize::from(b.below(4))],
                watch_group: sluice_ofp::consts::group_id::ANY,
                actions: actions(b),
            })
            .collect();
        let gm = GroupMod { command: group_mod_command::ADD, group_type, group_id: id, buckets };
        if p.group_mod(&gm).is_err() {
            // Retry as the type's most permissive form.
            let gm = GroupMod {
                group_type: GroupType::All,
                buckets: gm.buckets.into_iter().map(|b| Bucket { weight: 0, ..b }).collect(),
                ..gm
            };
            let _ = p.group_mod(&gm);
        }
    }
    for _ in 0..b.below(9) {
        let fm = flow_mod(b);
        let _ = p.flow_mod(&fm);
    }
    p
}

/// The configurations [`fuzz_datapath_diff`] compares; the first is the
/// oracle. `true`: packets are forwarded by a worker context through the
/// published copy while every other operation changes the master, which
/// is published after it (see `publish.rs`). The published compiled
/// configuration compiles every table to hash probes (`straight_max: 0`),
/// the other one to straight-line code and per-port variants.
const DIFF_CONFIGS: [(crate::Datapath, crate::CacheMode, bool); 10] = [
    (crate::Datapath::Reference, crate::CacheMode::Off, false),
    (crate::Datapath::Classifier, crate::CacheMode::Off, false),
    (crate::Datapath::Classifier, crate::CacheMode::Megaflow, false),
    (crate::Datapath::Classifier, crate::CacheMode::On, false),
    (crate::Datapath::Reference, crate::CacheMode::On, false),
    (crate::Datapath::Compiled, crate::CacheMode::Off, false),
    (crate::Datapath::Compiled, crate::CacheMode::On, false),
    (crate::Datapath::Compiled, crate::CacheMode::On, true),
    (crate::Datapath::Classifier, crate::CacheMode::Off, true),
    (crate::Datapath::Compiled, crate::CacheMode::Auto, false),
];

/// What one pipeline showed the outside world.
#[derive(Debug, Default, PartialEq)]
struct Observed {
    tx: Vec<(u32, Option<u32>, Vec<u8>)>,
    results: Vec<bool>,
    asyncs: Vec<Message>,
    stats: Vec<Message>,
}

/// Differential fuzz entry: bytes read as a configuration (as
/// [`fuzz_pipeline`]), then up to 24 operations — packets (the trailing
/// packet with one byte changed, on a chosen port), flow-mods of every
/// command, clock steps, packet-outs to `TABLE` — run through the
/// reference pipeline and every fast-path configuration. Panics if any
/// transmitted frame, flow-mod result, asynchronous message or statistics
/// reply differs from the reference (that is the finding).
pub fn fuzz_datapath_diff(data: &[u8]) {
    let mut seen: Vec<Observed> = Vec::new();
    for (datapath, cache, published) in DIFF_CONFIGS {
        let mut b = Bytes { data, pos: 0 };
        let mut jit = crate::JitOptions::default();
        if published && datapath == crate::Datapath::Compiled {
            jit.straight_max = 0;
        }
        let cfg = crate::Config { datapath, cache, jit, ..crate::Config::default() };
        let mut master = build_from(&mut b, cfg);
        let mut w = master.worker();
        let mut pb = crate::publish::Publisher::new(master);
        let mut o = Observed::default();
        let mut ops = Vec::new();
        for _ in 0..b.below(25) {
            let kind = b.below(10);
            let (x, y) = (b.u8(), b.u8());
            let extra = match kind {
                6 => {
                    let mut fm = flow_mod(&mut b);
                    fm.command = b.below(5);
                    fm.priority = u16::from(b.below(4));
                    Some(fm)
                }
                _ => None,
            };
            ops.push((kind, x, y, extra));
        }
        let base = b.rest().to_vec();
        for (kind, x, y, fm) in ops {
            let mut frame = base.clone();
            if let Some(byte) = frame.get_mut(usize::from(x)) {
                *byte ^= y;
            }
            let mut sink = |port: u32, q: Option<u32>, f: &[u8]| o.tx.push((port, q, f.to_vec()));
            let is_packet = fm.is_none() && kind != 7 && kind != 8;
            if published && is_packet {
                w.set_now(pb.master().now_ns());
                pb.published().load().process_with(
                    &mut w,
                    PORTS[usize::from(y % 4)],
                    &frame,
                    &mut sink,
                );
                o.asyncs.extend(crate::WorkerExt::take_async(&mut w));
                continue;
            }
            let p = pb.master_mut();
            match (kind, fm) {
                (_, Some(fm)) => o.results.push(p.flow_mod(&fm).is_ok()),
                (7, _) => p.advance(p.now_ns() + u64::from(y) * 20_000_000),
                (8, _) => {
                    let po = PacketOut {
                        buffer_id: OFP_NO_BUFFER,
                        in_port: PORTS[usize::from(y % 4)],
                        actions: vec![Action::Output { port: port_no::TABLE, max_len: 0 }],
                        data: frame,
                    };
                    o.results.push(p.packet_out(&po, &mut sink).is_ok());
                }
                _ => p.process(PORTS[usize::from(y % 4)], &frame, &mut sink),
            }
            o.asyncs.extend(p.take_async());
            pb.publish();
        }
        o.stats = diff_stats(pb.master_mut());
        assert_eq!(pb.master().cache_stats().chain_mismatches, 0, "{datapath:?}/{cache:?}");
        assert_eq!(w.cache_stats().chain_mismatches, 0, "{datapath:?}/{cache:?} published");
        assert_eq!(pb.fallbacks(), 0, "nobody holds a version here");
        if let Some(first) = seen.first() {
            assert!(
                *first == o,
                "{datapath:?}/{cache:?}/published {published} differs from the reference\nreference: {first:?}\nthis: {o:?}"
            );
        }
        seen.push(o);
    }
}

/// Flow, table, group, meter and port statistics replies.
/// The op IR's fuzz entry: up to 8 actions decoded like a flow's (see the
/// module docs), then a frame (the rest of the input). Each action runs on
/// one copy of the packet as the spec reads it (`edit::apply`, the
/// reference's path) and, lowered (`lower.rs`), on another copy the way
/// the fast paths run it (`Pkt::edit`: the core's executor, re-parsing
/// only after structural edits, so later ops work on a parse whose key
/// may be stale). Panics on the first difference in outcome, bytes or
/// metadata, on a key not marked stale that differs, and on a key that
/// differs once brought up to date at the end.
pub fn fuzz_ops(data: &[u8]) {
    use crate::edit::{self, Outcome};
    use crate::exec::Pkt;
    use sluice_core::op::{Edited, Op};
    let mut b = Bytes { data, pos: 0 };
    let list: Vec<Action> = (0..b.below(9)).map(|_| action(&mut b)).collect();
    let frame = b.rest();
    let meta = sluice_packet::parse::Meta { in_port: 1, in_phy_port: 1, metadata: 5, tunnel_id: 0 };
    let fresh = || {
        let mut p = Pkt { meta, ..Pkt::new() };
        p.buf.load(frame).ok().map(|()| {
            p.reparse();
            p
        })
    };
    let (Some(mut spec), Some(mut ops)) = (fresh(), fresh()) else { return };
    for a in &list {
        let op = crate::lower::lower(a);
        match (a, &op) {
            (Action::Output { port, max_len }, Op::Output { port: p, max_len: m }) => {
                assert_eq!((port, max_len), (p, m));
                continue;
            }
            (Action::Group(g), Op::Group(h)) | (Action::SetQueue(g), Op::SetQueue(h)) => {
                assert_eq!(g, h);
                continue;
            }
            (Action::Output { .. } | Action::Group(_) | Action::SetQueue(_), _) => {
                panic!("{a:?} lowered to {op:?}")
            }
            _ => {}
        }
        let by_spec = edit::apply(a, &mut spec);
        // The fast paths' executor: in-place edits leave the key stale
        // and the next edits work on the parse as it was.
        let by_op = ops.edit(&op);
        let ttl_expired = |o: &Outcome| matches!(o, Outcome::InvalidTtl);
        assert_eq!(ttl_expired(&by_spec), by_op == Edited::InvalidTtl, "{a:?} as {op:?}");
        assert_ne!(by_op, Edited::NotAnEdit, "{a:?} as {op:?}");
        assert_eq!(spec.data(), ops.data(), "bytes after {a:?} as {op:?}");
        assert_eq!(spec.meta, ops.meta, "metadata after {a:?} as {op:?}");
        if ttl_expired(&by_spec) {
            break;
        }
        // A key not marked stale must be the full parse already.
        if !ops.stale {
            assert_eq!(spec.key, ops.key, "key after {a:?} as {op:?}");
        }
    }
    // However the edits went, the key brought up to date is a full parse.
    ops.fresh();
    assert_eq!(spec.key, ops.key, "key after {list:?}");
}

fn diff_stats(p: &mut Pipeline) -> Vec<Message> {
    use sluice_ofp::multipart::{FlowStatsRequest, MultipartRequest, MultipartRequestBody as B};
    let all = FlowStatsRequest {
        table_id: sluice_ofp::consts::table_id::ALL,
        out_port: port_no::ANY,
        out_group: sluice_ofp::consts::group_id::ANY,
        cookie: 0,
        cookie_mask: 0,
        match_: Match::default(),
    };
    let bodies = [
        B::Flow(all),
        B::Table,
        B::Group { group_id: sluice_ofp::consts::group_id::ALL },
        B::Meter { meter_id: 0xffff_ffff },
        B::PortStats { port_no: port_no::ANY },
    ];
    let mut out = Vec::new();
    for body in bodies {
        let msg = Message::MultipartRequest(MultipartRequest { flags: 0, body });
        let mut sink = |_: u32, _: Option<u32>, _: &[u8]| {};
        out.extend(p.handle(0, &msg, &[], &mut sink).into_iter().map(|r| r.msg));
    }
    out
}

fn run(p: &mut Pipeline, packet: &[u8]) {
    let mut sink = |_: u32, _: Option<u32>, _: &[u8]| {};
    for in_port in [1, 2] {
        p.process(in_port, packet, &mut sink);
        let _ = p.trace(in_port, packet, &mut sink);
    }
    let po = PacketOut {
        buffer_id: OFP_NO_BUFFER,
        in_port: 1,
        actions: vec![Action::Output { port: port_no::TABLE, max_len: 0 }],
        data: packet.to_vec(),
    };
    let _ = p.packet_out(&po, &mut sink);
    // Buffered packet-ins can be released again.
    for m in p.take_async() {
        if let sluice_ofp::message::Message::PacketIn(pi) = m {
            if pi.buffer_id != OFP_NO_BUFFER {
                let po = PacketOut {
                    buffer_id: pi.buffer_id,
                    in_port: 1,
                    actions: vec![Action::Output { port: 2, max_len: 0 }],
                    data: vec![],
                };
                let _ = p.packet_out(&po, &mut sink);
            }
        }
    }
    p.advance(3_000_000_000);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
        /// The differential fuzz entry on random bytes (the fuzzer finds
        /// far more; this keeps the entry point working).
        #[test]
        fn datapath_diff_random(data in prop::collection::vec(any::<u8>(), 0..400)) {
            fuzz_datapath_diff(&data);
        }

        /// Lowered ops do what the spec's reading of each action does.
        #[test]
        fn ops_agree_with_actions(data in prop::collection::vec(any::<u8>(), 0..200)) {
            fuzz_ops(&data);
        }
    }

    /// The decoder reaches real configurations: a group with buckets, flows
    /// in two tables, and a packet that comes out.
    #[test]
    fn structured_input_builds_groups_and_flows() {
        let mut data = vec![
            1,
            0,
            1,
            0,
            1,
            1,
            0,
            0,
            1,
            0, // group 1: ALL, one bucket [output:2]
            2, // two flows
            0,
            10,
            0,
            2 | 32,
            1,
            14,
            1, // t0: apply [group 1], goto 1
            1,
            5,
            0,
            8,
            1,
            0,
            0,
            3,
            0, // t1: write [output:4]
        ];
        data.extend_from_slice(&[0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x88, 0xb5, 1, 2, 3]);
        let (mut p, packet) = build(&data);
        assert_eq!(p.groups().len(), 1);
        assert_eq!((p.tables()[0].len(), p.tables()[1].len()), (1, 1));
        let mut out = Vec::new();
        p.process(1, &packet, &mut |port: u32, _: Option<u32>, _: &[u8]| out.push(port));
        assert_eq!(out, [2, 4]);
    }
}
