//! The op IR: what actions do, in the core's vocabulary.
//!
//! # What
//! Front ends lower their actions into [`Op`]s once, when a rule is
//! installed or a cache entry is composed, never per packet: OpenFlow's
//! `OFPAT_*` actions today (`sluice_pipeline::lower`), POF's field actions
//! and P4 action bodies next. The core executes ops; it never sees a
//! front end's action type.
//!
//! # Basic design
//! Header edits ([`Op::SetField`], tag pushes and pops, TTL operations) are
//! executed here, by [`edit`], on a packet buffer and its current parse
//! ([`sluice_packet::rewrite`] does the byte work and keeps checksums
//! right). Forwarding ops ([`Op::Output`], [`Op::Group`], [`Op::SetQueue`])
//! name the front end's port, group and queue numbers; until ports, groups
//! and upcalls move into the core their executor is the front end's, which
//! is why [`edit`] reports them as [`Edited::NotAnEdit`].
//!
//! Protocol-oblivious window edits ([`Op::Window`]: set, modify, insert
//! and remove bits at any bit position, checksum, copy to the metadata)
//! are [`crate::window`]'s, run from [`edit`] like the others. Beyond
//! what OpenFlow 1.3.5 needs and those, meters and neutral upcalls are
//! the next ops (ARCHITECTURE.md, target map).
//!
//! # Invariants
//! - [`edit`] never panics and never reads or writes outside the buffer:
//!   an op whose header is absent, or whose value does not fit its field,
//!   leaves the packet as it was ([`Edited::Unchanged`]).
//! - After [`Edited::Changed`] the caller must re-parse before the next op
//!   (the op used the parse it was given; the bytes no longer match it).

use sluice_packet::buf::PacketBuf;
use sluice_packet::key::{FlowKey, FIXED_LAYOUT};
use sluice_packet::parse::{parse, Meta, ParseInfo};
use sluice_packet::rewrite as rw;
use sluice_packet::{Field, FieldValue};

use crate::window::{self, WindowOp};

/// One thing an action does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Write a fixed-parser field: header fields in the packet's bytes
    /// (checksums fixed), `Metadata` and `TunnelId` in its metadata.
    SetField { field: Field, value: FieldValue },
    /// Push an 802.1Q/802.1ad tag with this TPID.
    PushVlan(u16),
    /// Pop the outermost VLAN tag.
    PopVlan,
    /// Push an MPLS label stack entry; the frame's ethertype becomes this.
    PushMpls(u16),
    /// Pop the top MPLS label; the payload's ethertype is this.
    PopMpls(u16),
    /// Push a PBB I-TAG header with this ethertype.
    PushPbb(u16),
    /// Pop the PBB header.
    PopPbb,
    /// Set the top MPLS label's TTL.
    SetMplsTtl(u8),
    /// Decrement the top MPLS label's TTL.
    DecMplsTtl,
    /// Set the IPv4 TTL or IPv6 hop limit.
    SetNwTtl(u8),
    /// Decrement the IPv4 TTL or IPv6 hop limit.
    DecNwTtl,
    /// Copy the TTL inwards-to-outermost.
    CopyTtlOut,
    /// Copy the TTL outermost-to-next-inwards.
    CopyTtlIn,
    /// Send the packet out of a port (the front end's port numbers,
    /// reserved ports included); `max_len` is what an upcall carries.
    Output { port: u32, max_len: u16 },
    /// Run a group.
    Group(u32),
    /// Choose the output queue.
    SetQueue(u32),
    /// Does nothing (an action the front end accepted that changes
    /// nothing the core models).
    Nop,
    /// A protocol-oblivious window edit ([`crate::window`]). Boxed: a
    /// `WindowOp` is several times the size of every other op.
    Window(Box<WindowOp>),
    /// Copy bits from one fixed-parser field to another, or load a
    /// constant into some of a field's bits ([`FieldCopy`]). Boxed like
    /// [`Op::Window`], to keep every op small.
    CopyField(Box<FieldCopy>),
    /// An asynchronous report the rule asks for (OpenFlow: sluice's
    /// `send_maps`), handed to the front end's executor like a forwarding
    /// op; it changes nothing in the packet.
    Report(ReportOp),
    /// A program over key words ([`crate::keyop`]): it changes the key,
    /// not the frame (a front end whose key is its header vector, P4's,
    /// deparses the frame from the key when it forwards).
    Key(std::sync::Arc<crate::keyop::KeyProg>),
}

/// Where a [`FieldCopy`]'s bits come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopySource {
    /// Bits `ofs..ofs + n_bits` of a field (bit 0 its least significant).
    Field { field: Field, ofs: u16 },
    /// A constant (below `2^n_bits`).
    Value(u128),
}

/// Bits `dst_ofs..dst_ofs + n_bits` of `dst` take the source's bits
/// (OpenFlow: Nicira's `move`/`load`, OpenFlow 1.5's copy-field). Bit 0
/// is a field's least significant bit, as in [`Field`]'s values.
///
/// Semantics (as Open vSwitch's): the op reads the packet as it is when
/// the op runs; if the source field or the destination field is absent
/// from the packet, nothing changes. Header destinations are written like
/// [`Op::SetField`] (checksums fixed), `Metadata` and `TunnelId` go to the
/// packet's metadata. A source and destination that overlap behave as if
/// the source were read first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldCopy {
    pub src: CopySource,
    pub dst: Field,
    pub dst_ofs: u16,
    pub n_bits: u16,
}

impl FieldCopy {
    /// Whether the bit ranges lie inside their fields and are not empty.
    pub fn is_valid(&self) -> bool {
        let fits = |f: Field, ofs: u16| u32::from(ofs) + u32::from(self.n_bits) <= f.bits();
        self.n_bits > 0
            && fits(self.dst, self.dst_ofs)
            && match self.src {
                CopySource::Field { field, ofs } => fits(field, ofs),
                CopySource::Value(v) => self.n_bits >= 128 || v >> self.n_bits == 0,
            }
    }
}

/// Ones in the low `n` bits.
fn low_ones(n: u16) -> u128 {
    if n >= 128 {
        u128::MAX
    } else {
        (1u128 << n) - 1
    }
}

/// Runs a [`FieldCopy`] (see its docs). Reads the fields from a parse of
/// the bytes as they are (the caller's key may be stale after in-place
/// edits).
fn copy_field(c: &FieldCopy, buf: &mut PacketBuf, info: &ParseInfo, meta: &mut Meta) -> Edited {
    if !c.is_valid() {
        return Edited::Unchanged;
    }
    let mut key = FlowKey::ZERO;
    let _ = parse(buf.data(), meta, &mut key);
    let read =
        |f: Field| FIXED_LAYOUT.present(&key, f).then(|| FIXED_LAYOUT.get(&key, f).to_u128());
    let ones = low_ones(c.n_bits);
    let bits = match c.src {
        CopySource::Field { field, ofs } => match read(field) {
            Some(v) => (v >> ofs) & ones,
            None => return Edited::Unchanged,
        },
        CopySource::Value(v) => v & ones,
    };
    let Some(old) = read(c.dst) else { return Edited::Unchanged };
    let new = (old & !(ones << c.dst_ofs)) | (bits << c.dst_ofs);
    let be = new.to_be_bytes();
    let Some(value) = be.get(16 - c.dst.len()..).and_then(FieldValue::from_be_slice) else {
        return Edited::Unchanged;
    };
    edit(&Op::SetField { field: c.dst, value }, buf, info, meta)
}

/// What a [`Op::Report`] asks for: made by the front end when the rule is
/// installed (one per rule, so its rate limit is the rule's), asked once
/// for each packet that runs the op.
pub trait Reporter: Send + Sync + std::fmt::Debug {
    /// The report for a packet at pipeline time `now_ns`, as the front
    /// end's own message bodies; none when the reporter's rate limit holds
    /// it back. Must not block on anything but the reporter's own state.
    fn report(&self, now_ns: u64) -> Vec<Vec<u8>>;
}

/// A shared [`Reporter`]; two are equal when they are the same one.
#[derive(Clone, Debug)]
pub struct ReportOp(pub std::sync::Arc<dyn Reporter>);

impl PartialEq for ReportOp {
    fn eq(&self, other: &ReportOp) -> bool {
        std::ptr::addr_eq(std::sync::Arc::as_ptr(&self.0), std::sync::Arc::as_ptr(&other.0))
    }
}

impl Eq for ReportOp {}

/// What [`edit`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edited {
    /// The packet (bytes or metadata) changed: re-parse before going on.
    Changed,
    /// Nothing changed (the op's header was absent, or the value did not
    /// fit): go on with the same parse.
    Unchanged,
    /// A TTL decrement reached zero (or the TTL was already zero): the
    /// packet must not be forwarded; the front end decides what happens
    /// (OpenFlow: an INVALID_TTL packet-in).
    InvalidTtl,
    /// Not a header edit: a forwarding op, for the front end's executor.
    NotAnEdit,
}

/// Executes a header-edit op on `buf`, whose current parse is `info`;
/// `Metadata` and `TunnelId` writes go to `meta`.
pub fn edit(op: &Op, buf: &mut PacketBuf, info: &ParseInfo, meta: &mut Meta) -> Edited {
    let r: Result<(), rw::RewriteError> = match op {
        Op::SetField { field: Field::Metadata, value } => {
            meta.metadata = value.to_u128() as u64;
            return Edited::Changed;
        }
        Op::SetField { field: Field::TunnelId, value } => {
            meta.tunnel_id = value.to_u128() as u64;
            return Edited::Changed;
        }
        Op::SetField { field, value } => rw::apply_set_field(buf, info, *field, value.as_slice()),
        Op::PushVlan(t) => rw::push_vlan(buf, info, *t),
        Op::PopVlan => rw::pop_vlan(buf, info),
        Op::PushMpls(t) => rw::push_mpls(buf, info, *t),
        Op::PopMpls(t) => rw::pop_mpls(buf, info, *t),
        Op::PushPbb(t) => rw::push_pbb(buf, info, *t),
        Op::PopPbb => rw::pop_pbb(buf, info),
        Op::SetMplsTtl(t) => rw::set_mpls_ttl(buf, info, *t),
        Op::DecMplsTtl => rw::dec_mpls_ttl(buf, info).map(drop),
        Op::SetNwTtl(t) => rw::set_nw_ttl(buf, info, *t),
        Op::DecNwTtl => rw::dec_nw_ttl(buf, info).map(drop),
        Op::CopyTtlOut => rw::copy_ttl_out(buf, info),
        Op::CopyTtlIn => rw::copy_ttl_in(buf, info),
        Op::Nop => return Edited::Unchanged,
        Op::Window(w) => return window::apply(w, buf, info, meta),
        Op::CopyField(c) => return copy_field(c, buf, info, meta),
        Op::Output { .. } | Op::Group(_) | Op::SetQueue(_) | Op::Report(_) | Op::Key(_) => {
            return Edited::NotAnEdit
        }
    };
    match r {
        Ok(()) => Edited::Changed,
        Err(rw::RewriteError::InvalidTtl) => Edited::InvalidTtl,
        Err(_) => Edited::Unchanged,
    }
}

/// An op held back until the end of a packet's walk: OpenFlow's action
/// set (1.3.5 §5.10) is one use. The front end decides, when it lowers,
/// which ops replace each other (`slot`), the order they run in (`rank`)
/// and which op makes another one void (`supersedes`); the core only keeps
/// the set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deferred {
    /// Writing an op replaces the set's op in the same slot (in place: it
    /// keeps the old one's position among equal ranks).
    pub slot: u32,
    /// The set runs in ascending rank; equal ranks in the order their
    /// slots were first written.
    pub rank: u8,
    /// While this op is in the set, the op in that slot does not run
    /// (OpenFlow: a group action voids the output action).
    pub supersedes: Option<u32>,
    pub op: Op,
}

/// The deferred ops a packet has collected ([`Deferred`]): references to
/// the entries' own ops (which outlive the walk), never copies, kept in
/// the set itself up to [`DeferredSet::INLINE`] slots, so a walk neither
/// allocates nor clones an op for them. More distinct slots than that (an
/// OpenFlow action set has at most a few dozen) spill to the heap.
#[derive(Clone, Debug)]
pub struct DeferredSet<'a> {
    len: usize,
    inline: [&'a Deferred; DeferredSet::INLINE],
    spill: Vec<&'a Deferred>,
}

/// What fills the set's unused inline slots.
static EMPTY: Deferred = Deferred { slot: u32::MAX, rank: u8::MAX, supersedes: None, op: Op::Nop };

impl Default for DeferredSet<'_> {
    fn default() -> Self {
        DeferredSet { len: 0, inline: [&EMPTY; DeferredSet::INLINE], spill: Vec::new() }
    }
}

impl<'a> DeferredSet<'a> {
    /// Slots kept without allocating.
    pub const INLINE: usize = 16;

    /// The ops in the set, in the order they were first written (sorted
    /// by [`DeferredSet::ordered`]).
    fn ops(&mut self) -> &mut [&'a Deferred] {
        if self.spill.is_empty() {
            &mut self.inline[..self.len.min(Self::INLINE)]
        } else {
            &mut self.spill
        }
    }

    /// Forget every op.
    pub fn clear(&mut self) {
        self.len = 0;
        self.spill.clear();
    }

    /// Add `list`'s ops, each replacing the one in its slot.
    pub fn write(&mut self, list: &'a [Deferred]) {
        for d in list {
            if let Some(x) = self.ops().iter_mut().find(|x| x.slot == d.slot) {
                *x = d;
                continue;
            }
            if self.len < Self::INLINE && self.spill.is_empty() {
                self.inline[self.len] = d;
            } else {
                if self.spill.is_empty() {
                    self.spill.extend_from_slice(&self.inline[..self.len]);
                }
                self.spill.push(d);
            }
            self.len += 1;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Puts the set in running order and returns the ops to run, in that
    /// order, leaving out superseded ones. The sort is stable and in
    /// place.
    pub fn ordered(&mut self) -> impl Iterator<Item = &'a Op> + '_ {
        let ops = self.ops();
        ops.sort_by_key(|d| d.rank);
        let ops = &*ops;
        ops.iter().filter(move |d| !ops.iter().any(|x| x.supersedes == Some(d.slot))).map(|d| &d.op)
    }
}

/// What a table entry does to a packet that hits it, lowered by a front
/// end once, when the entry is installed. The core runs the parts in the
/// order of the fields: meter, apply (ops now, in order), clear the
/// deferred set, write to it, metadata, then go on to `next` or, without
/// one, run the deferred set and end the walk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryOps {
    /// Meter the packet first (it may be dropped or remarked).
    pub meter: Option<u32>,
    /// Ops run at once, in order.
    pub apply: Box<[Op]>,
    /// Empty the deferred set.
    pub clear: bool,
    /// Ops written to the deferred set.
    pub write: Box<[Deferred]>,
    /// `(value, mask)` written into the metadata under the mask.
    pub metadata: Option<(u64, u64)>,
    /// The table the walk goes on to (a control graph's
    /// `Next::Entry` edge; see [`crate::graph`]).
    pub next: Option<u8>,
    /// Which of its table's actions the entry runs, for graphs that branch
    /// on it (P4's `switch (t.apply().action_run)`); 0 for OpenFlow.
    pub action: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_packet::key::{FlowKey, FIXED_LAYOUT};
    use sluice_packet::parse::parse;

    /// Ethernet + IPv4 (TTL 1) + UDP, 64 bytes.
    fn udp_frame() -> Vec<u8> {
        let mut f = vec![0u8; 64];
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        let ip = &mut f[14..34];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&50u16.to_be_bytes());
        ip[8] = 1;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 0, 0, 2]);
        let sum = sluice_packet::checksum::fold(sluice_packet::checksum::sum(ip));
        ip[10..12].copy_from_slice(&(!sum).to_be_bytes());
        f[34..36].copy_from_slice(&53u16.to_be_bytes());
        f[36..38].copy_from_slice(&5353u16.to_be_bytes());
        f[38..40].copy_from_slice(&30u16.to_be_bytes());
        f
    }

    fn run(op: &Op, frame: &[u8]) -> (Edited, Vec<u8>, Meta, FlowKey) {
        let mut buf = PacketBuf::from_slice(frame).unwrap();
        let mut meta = Meta::default();
        let mut key = FlowKey::ZERO;
        let info = parse(buf.data(), &meta, &mut key);
        let e = edit(op, &mut buf, &info, &mut meta);
        parse(buf.data(), &meta, &mut key);
        (e, buf.data().to_vec(), meta, key)
    }

    fn value(bytes: &[u8]) -> FieldValue {
        FieldValue::from_be_slice(bytes).unwrap()
    }

    #[test]
    fn set_field_rewrites_the_header_and_the_key_follows() {
        let op = Op::SetField { field: Field::Ipv4Dst, value: value(&[192, 168, 1, 1]) };
        let (e, bytes, _, key) = run(&op, &udp_frame());
        assert_eq!(e, Edited::Changed);
        assert_eq!(&bytes[30..34], &[192, 168, 1, 1]);
        assert_eq!(FIXED_LAYOUT.get(&key, Field::Ipv4Dst).as_slice(), &[192, 168, 1, 1]);
    }

    #[test]
    fn pipeline_fields_go_to_the_metadata() {
        let op = Op::SetField { field: Field::Metadata, value: value(&7u64.to_be_bytes()) };
        let (e, bytes, meta, _) = run(&op, &udp_frame());
        assert_eq!((e, meta.metadata), (Edited::Changed, 7));
        assert_eq!(bytes, udp_frame());
    }

    #[test]
    fn absent_headers_and_expired_ttls_leave_the_packet_alone() {
        let (e, bytes, _, _) = run(&Op::PopVlan, &udp_frame());
        assert_eq!((e, bytes), (Edited::Unchanged, udp_frame()));
        let (e, bytes, _, _) = run(&Op::PopMpls(0x0800), &udp_frame());
        assert_eq!((e, bytes), (Edited::Unchanged, udp_frame()));
        // TTL 1 -> 0: not forwarded.
        assert_eq!(run(&Op::DecNwTtl, &udp_frame()).0, Edited::InvalidTtl);
        assert_eq!(run(&Op::Nop, &udp_frame()).0, Edited::Unchanged);
        assert_eq!(run(&Op::Group(1), &udp_frame()).0, Edited::NotAnEdit);
    }

    #[test]
    fn push_vlan_then_the_parse_sees_the_tag() {
        let (e, bytes, _, key) = run(&Op::PushVlan(0x8100), &udp_frame());
        assert_eq!(e, Edited::Changed);
        assert_eq!(bytes.len(), 68);
        assert_eq!(&bytes[12..14], &[0x81, 0x00]);
        assert!(FIXED_LAYOUT.get(&key, Field::VlanVid).to_u128() & 0x1000 != 0);
    }

    #[test]
    fn window_edits_run_through_edit() {
        use crate::layout::Base;
        use crate::window::Pos;
        // The IPv4 TTL (L3 bit 64) set to 9 through a window; the checksum
        // is the caller's business (a Checksum window op).
        let set = WindowOp::Set { at: Pos::new(Base::L3, 64), len: 8, value: 9, mask: 0xff };
        let (e, bytes, _, key) = run(&Op::Window(Box::new(set)), &udp_frame());
        assert_eq!((e, bytes[22]), (Edited::Changed, 9));
        assert_eq!(FIXED_LAYOUT.get(&key, Field::Ipv4Dst).as_slice(), &[10, 0, 0, 2]);
        let past = WindowOp::Remove { at: Pos::new(Base::Payload, 0), len_bits: 8 * 40 };
        let (e, bytes, _, _) = run(&Op::Window(Box::new(past)), &udp_frame());
        assert_eq!((e, bytes), (Edited::Unchanged, udp_frame()));
    }

    #[test]
    fn copy_field_copies_bits_and_keeps_checksums() {
        let frame = udp_frame();
        // ipv4_src -> ipv4_dst, whole.
        let mv = FieldCopy {
            src: CopySource::Field { field: Field::Ipv4Src, ofs: 0 },
            dst: Field::Ipv4Dst,
            dst_ofs: 0,
            n_bits: 32,
        };
        let (e, bytes, _, key) = run(&Op::CopyField(Box::new(mv)), &frame);
        assert_eq!(e, Edited::Changed);
        assert_eq!(&bytes[30..34], &[10, 0, 0, 1]);
        assert_eq!(FIXED_LAYOUT.get(&key, Field::Ipv4Dst).as_slice(), &[10, 0, 0, 1]);
        let sum = sluice_packet::checksum::fold(sluice_packet::checksum::sum(&bytes[14..34]));
        assert_eq!(sum, 0xffff, "IPv4 header checksum still verifies");
        // A constant into bits 8..15 of eth_dst's low end, and one bit.
        let ld =
            FieldCopy { src: CopySource::Value(0xab), dst: Field::EthDst, dst_ofs: 8, n_bits: 8 };
        let (_, bytes, _, _) = run(&Op::CopyField(Box::new(ld)), &frame);
        assert_eq!(&bytes[..6], &[2, 0, 0, 0, 0xab, 1]);
        // eth_src[0..15] -> eth_dst[32..47].
        let part = FieldCopy {
            src: CopySource::Field { field: Field::EthSrc, ofs: 0 },
            dst: Field::EthDst,
            dst_ofs: 32,
            n_bits: 16,
        };
        let (_, bytes, _, _) = run(&Op::CopyField(Box::new(part)), &frame);
        assert_eq!(&bytes[..6], &[0, 2, 0, 0, 0, 1]);
        // The metadata as a destination.
        let meta = FieldCopy {
            src: CopySource::Field { field: Field::UdpDst, ofs: 0 },
            dst: Field::Metadata,
            dst_ofs: 16,
            n_bits: 16,
        };
        let (e, _, m, _) = run(&Op::CopyField(Box::new(meta)), &frame);
        assert_eq!((e, m.metadata), (Edited::Changed, 5353 << 16));
        // An absent source or destination changes nothing; so does an
        // invalid range.
        let arp = FieldCopy {
            src: CopySource::Field { field: Field::ArpSpa, ofs: 0 },
            dst: Field::Ipv4Dst,
            dst_ofs: 0,
            n_bits: 32,
        };
        assert_eq!(run(&Op::CopyField(Box::new(arp)), &frame).0, Edited::Unchanged);
        let bad = FieldCopy { src: CopySource::Value(1), dst: Field::IpEcn, dst_ofs: 2, n_bits: 1 };
        assert_eq!(run(&Op::CopyField(Box::new(bad)), &frame).0, Edited::Unchanged);
    }

    /// `Op` was 20 bytes (alignment 4) before `Op::Window`. Any pointer in
    /// a variant raises the alignment to 8, so 24 is the least it can be
    /// with a boxed variant; the box keeps `WindowOp`'s own size (48
    /// bytes, 16-aligned) out of every op.
    #[test]
    fn window_edits_are_boxed_so_op_stays_small() {
        assert!(std::mem::size_of::<Op>() <= 24, "{}", std::mem::size_of::<Op>());
        assert!(std::mem::size_of::<WindowOp>() > 24);
    }

    fn d(slot: u32, rank: u8, supersedes: Option<u32>, port: u32) -> Deferred {
        Deferred { slot, rank, supersedes, op: Op::Output { port, max_len: 0 } }
    }

    fn ports(set: &mut DeferredSet) -> Vec<u32> {
        set.ordered()
            .map(|op| match op {
                Op::Output { port, .. } => *port,
                _ => u32::MAX,
            })
            .collect()
    }

    #[test]
    fn deferred_set_replaces_by_slot_and_runs_by_rank() {
        let (first, again) =
            ([d(1, 5, None, 10), d(2, 1, None, 20), d(3, 5, None, 30)], [d(1, 5, None, 11)]);
        let mut set = DeferredSet::default();
        assert!(set.is_empty());
        set.write(&first);
        // Slot 1 rewritten in place: still ahead of slot 3 (equal rank).
        set.write(&again);
        assert_eq!(ports(&mut set), [20, 11, 30]);
        // Running does not consume the set; sorting again is stable.
        assert_eq!(ports(&mut set), [20, 11, 30]);
        set.clear();
        assert!(set.is_empty());
        assert_eq!(ports(&mut set), Vec::<u32>::new());
    }

    #[test]
    fn a_superseding_op_voids_its_target_only_while_present() {
        let (both, one) = ([d(7, 9, None, 1), d(8, 8, Some(7), 2)], [d(7, 9, None, 1)]);
        let mut set = DeferredSet::default();
        set.write(&both);
        assert_eq!(ports(&mut set), [2]);
        set.clear();
        set.write(&one);
        assert_eq!(ports(&mut set), [1]);
    }

    /// More slots than the set keeps inline spill to the heap with the
    /// same order and replacement rules; clearing goes back inline.
    #[test]
    fn a_large_set_spills_and_keeps_its_rules() {
        let n = DeferredSet::INLINE as u32 + 5;
        let many: Vec<Deferred> = (0..n).map(|i| d(i, (n - i) as u8 % 3, None, i)).collect();
        let later = [d(2, 0, None, 1000), d(n + 1, 0, Some(0), 2000)];
        let mut set = DeferredSet::default();
        set.write(&many[..4]);
        set.write(&many);
        set.write(&later);
        let mut want: Vec<(u8, u32)> =
            many.iter().map(|x| (x.rank, x.slot)).chain([(0, n + 1)]).collect();
        want.retain(|&(_, slot)| slot != 0);
        want.iter_mut().filter(|w| w.1 == 2).for_each(|w| w.0 = 0);
        // Stable by rank over first-written order (slot order here).
        want.sort_by_key(|w| w.0);
        let ports_want: Vec<u32> = want
            .iter()
            .map(|&(_, slot)| match slot {
                2 => 1000,
                s if s == n + 1 => 2000,
                s => s,
            })
            .collect();
        assert_eq!(ports(&mut set), ports_want);
        set.clear();
        set.write(&later[..1]);
        assert_eq!(ports(&mut set), [1000]);
    }
}
