//! The flow key: a fixed array of `u64` words, and the layout table that
//! says which field of the fixed parser ([`Field`]) sits in which bits.
//!
//! This crate knows no control protocol. Field values and widths are those
//! of the corresponding OpenFlow 1.3.5 OXM fields, which is why the docs
//! below argue in OXM terms: the OpenFlow front end maps OXM fields onto
//! [`Field`] one to one, and its matches must mean exactly what OXM says.
//!
//! # What
//! A [`FlowKey`] is what the parser extracts from one packet; a
//! [`FlowMask`] says which key bits a rule looks at; a rule's value is
//! another `FlowKey`, pre-masked. Matching is
//! `(key & mask) == value` on every word ([`FlowKey::matches`]), so the
//! classifier, the caches and generated code work on words and never need
//! to know what a field means. Only the parser and the actions do.
//!
//! # Basic design
//! The [`Layout`] is data: for each of the 40 [`Field`]s a [`Slot`]
//! (word index, bit offset from the least significant bit, bit width, and
//! the presence bit it depends on). [`FIXED_LAYOUT`] is the layout the parser
//! fills. The last [`POF_WORDS`] words are reserved for protocol-oblivious
//! `{offset, length}` windows captured later; no OXM field lives there.
//!
//! A field value is the field's OXM bytes read as one big-endian unsigned
//! integer, truncated to the field's *meaningful* width (13 bits for
//! `vlan_vid`, 20 for `mpls_label`, 6 for `ip_dscp`, …) and stored in its
//! slot. Fields wider than 64 bits (the 128-bit IPv6 addresses) use two
//! whole words: high half in `word`, low half in `word + 1`.
//!
//! # Why a masked compare on words equals the OXM masked compare
//! The map `enc` from a field's width-bit integer to key bits is bitwise
//! (bit *i* of the value goes to one fixed key bit) and injective, so
//! `enc(a & b) == enc(a) & enc(b)` and `enc(a) == enc(b) ⇔ a == b`. OXM
//! says a packet with field bytes `P` matches value `V` under mask `M` when
//! `P & M == V & M`. The parser never produces bits above the meaningful
//! width, and a rule's value may not have any ([`Layout::put`] rejects
//! them, as a switch must with `OFPBMC_BAD_VALUE`); mask bits above the
//! width are therefore irrelevant and [`Layout::set_field_mask`] drops
//! them. Hence `P & M == V & M ⇔ enc(P) & enc(M) == enc(V & M)`, and since
//! distinct fields occupy disjoint bits, the per-field conjunction of a rule
//! is exactly the per-word compare.
//!
//! # Absent fields and presence bits
//! OpenFlow only lets a rule match a field when the field's prerequisites
//! are also in the rule (`ipv4_src` needs `eth_type=0x0800`, `tcp_dst`
//! needs `ip_proto=6`, `vlan_pcp` needs `vlan_vid != NONE`, …) and the
//! pipeline enforces this at flow-mod time. Prerequisite fields are always
//! filled from the packet, so a rule with `eth_type=0x0800,ipv4_src=X`
//! cannot match an ARP packet: its `eth_type` bits say 0x0806. That alone
//! makes "absent fields are zero" sound for *well-formed* packets.
//!
//! It is not enough for *malformed* ones: an IPv4 frame whose header is
//! truncated has `eth_type=0x0800` but no addresses, and a non-first
//! fragment has `ip_proto=6` but no TCP header. A rule `tcp_dst=0` must not
//! match those. So the key also carries **presence bits** (word 7, bits
//! 0–15, see [`presence`]): one per header the parser validated. Each slot
//! names the presence bit it depends on; [`Layout::put`] sets that bit in a
//! rule value and [`Layout::set_field_mask`] sets it in the mask whenever
//! the field's mask is non-zero. A rule that looks at any bit of a field
//! therefore also requires the field's header to have been present and
//! complete. Absent fields are zero in the key *and* have their presence
//! bit clear.
//!
//! One visible consequence: an NS without a source link-layer option does
//! not match `ipv6_nd_sll=00:00:00:00:00:00` (Open vSwitch reports the
//! missing option as zero and would match); the same holds for `nd_tll`,
//! and for L4 fields of non-first fragments.
//!
//! Two fields carry their own presence and have no presence bit:
//! `vlan_vid` (OpenFlow encodes "no tag" as `OFPVID_NONE` = 0 and "tagged"
//! as `OFPVID_PRESENT | vid`, and a rule `vlan_vid=OFPVID_NONE` must match
//! untagged frames) and the pipeline fields `in_port`, `in_phy_port`,
//! `metadata`, `tunnel_id`, which every packet has.
//!
//! # Invariants
//! - Slots never overlap each other, the presence bits or the POF words
//!   (checked by [`Layout::validate`] and a unit test for [`FIXED_LAYOUT`]).
//! - A key produced by the parser has no bit set outside some slot or
//!   presence bit, and no field bit set without its presence bit.
//! - Keys are plain data (`Copy`), compared and hashed word-wise.

use crate::field::Field;

/// Words in a key.
pub const KEY_WORDS: usize = 24;
/// Words at the end of the key reserved for protocol-oblivious windows.
pub const POF_WORDS: usize = 3;
/// First reserved POF word.
pub const POF_FIRST_WORD: usize = KEY_WORDS - POF_WORDS;
/// Word holding the presence bits in [`FIXED_LAYOUT`].
pub const PRESENCE_WORD: usize = 7;

/// `OFPVID_PRESENT`: set in `vlan_vid` when the frame has a VLAN tag.
pub const OFPVID_PRESENT: u16 = 0x1000;
/// `OFPVID_NONE`: `vlan_vid` of an untagged frame.
pub const OFPVID_NONE: u16 = 0;

/// `ipv6_exthdr` flags (`enum ofp_ipv6exthdr_flags`).
pub mod exthdr {
    /// "No next header" encountered.
    pub const NONEXT: u16 = 1 << 0;
    /// Encrypted Sec Payload header present.
    pub const ESP: u16 = 1 << 1;
    /// Authentication header present.
    pub const AUTH: u16 = 1 << 2;
    /// 1 or 2 destination-options headers present.
    pub const DEST: u16 = 1 << 3;
    /// Fragment header present.
    pub const FRAG: u16 = 1 << 4;
    /// Router header present.
    pub const ROUTER: u16 = 1 << 5;
    /// Hop-by-hop header present.
    pub const HOP: u16 = 1 << 6;
    /// Unexpected repeats encountered.
    pub const UNREP: u16 = 1 << 7;
    /// Unexpected sequencing encountered.
    pub const UNSEQ: u16 = 1 << 8;
}

/// Presence bits (bit numbers inside [`PRESENCE_WORD`]).
pub mod presence {
    /// Complete Ethernet header (eth_dst, eth_src, eth_type).
    pub const ETH: u8 = 0;
    /// Outer VLAN tag readable (vlan_pcp).
    pub const VLAN: u8 = 1;
    /// Top MPLS label stack entry readable.
    pub const MPLS: u8 = 2;
    /// PBB I-TAG readable.
    pub const PBB: u8 = 3;
    /// Ethernet/IPv4 ARP packet.
    pub const ARP: u8 = 4;
    /// Valid IPv4 or IPv6 header (ip_dscp, ip_ecn, ip_proto).
    pub const IP: u8 = 5;
    /// Valid IPv4 header.
    pub const IPV4: u8 = 6;
    /// Valid IPv6 header.
    pub const IPV6: u8 = 7;
    /// Complete TCP header (in a first or unfragmented datagram).
    pub const TCP: u8 = 8;
    /// Complete UDP header.
    pub const UDP: u8 = 9;
    /// Complete SCTP common header.
    pub const SCTP: u8 = 10;
    /// ICMPv4 type/code/checksum.
    pub const ICMPV4: u8 = 11;
    /// ICMPv6 type/code/checksum.
    pub const ICMPV6: u8 = 12;
    /// Valid NS/NA message (ipv6_nd_target).
    pub const ND_TARGET: u8 = 13;
    /// Source link-layer address option in an NS.
    pub const ND_SLL: u8 = 14;
    /// Target link-layer address option in an NA.
    pub const ND_TLL: u8 = 15;
    /// Number of presence bits.
    pub const COUNT: u8 = 16;
    /// "This field has no presence bit."
    pub const NONE: u8 = 0xff;
}

/// Where one field lives in the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slot {
    /// Word index (for 128-bit fields: the word holding the high half).
    pub word: u8,
    /// Offset of the field's least significant bit inside the word.
    pub shift: u8,
    /// Meaningful width in bits (1..=64, or 128).
    pub width: u8,
    /// Presence bit this field depends on, or [`presence::NONE`].
    pub presence: u8,
}

impl Slot {
    const fn new(word: u8, shift: u8, width: u8, presence: u8) -> Slot {
        Slot { word, shift, width, presence }
    }
    /// Mask of the field's bits within its word (for widths ≤ 64).
    pub const fn word_mask(self) -> u64 {
        if self.width >= 64 {
            u64::MAX
        } else {
            ((1u64 << self.width) - 1) << self.shift
        }
    }
}

/// A flow key: what the parser extracted from one packet, or a rule value.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub words: [u64; KEY_WORDS],
}

/// Which key bits a rule looks at (same word layout as [`FlowKey`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowMask {
    pub words: [u64; KEY_WORDS],
}

impl FlowKey {
    /// The all-zero key.
    pub const ZERO: FlowKey = FlowKey { words: [0; KEY_WORDS] };

    /// `(self & mask) == value` on every word. `value` must already be
    /// masked (see [`FlowKey::masked`]); a value with bits outside the mask
    /// never matches.
    #[inline]
    pub fn matches(&self, mask: &FlowMask, value: &FlowKey) -> bool {
        let mut diff = 0u64;
        for i in 0..KEY_WORDS {
            diff |= (self.words[i] & mask.words[i]) ^ value.words[i];
        }
        diff == 0
    }
    /// `self & mask`.
    pub fn masked(&self, mask: &FlowMask) -> FlowKey {
        let mut k = *self;
        for (w, m) in k.words.iter_mut().zip(mask.words.iter()) {
            *w &= *m;
        }
        k
    }
    /// Whether presence bit `bit` (see [`presence`]) is set.
    pub fn has(&self, bit: u8) -> bool {
        bit < 64 && self.words[PRESENCE_WORD] >> bit & 1 != 0
    }
}

impl Default for FlowKey {
    fn default() -> Self {
        FlowKey::ZERO
    }
}

impl FlowMask {
    /// Looks at nothing (matches every packet).
    pub const ZERO: FlowMask = FlowMask { words: [0; KEY_WORDS] };
    /// Looks at every bit.
    pub const ALL: FlowMask = FlowMask { words: [u64::MAX; KEY_WORDS] };
    /// Whether no bit is looked at.
    pub fn is_zero(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }
    /// [`Layout::set_field_mask`] in [`FIXED_LAYOUT`].
    pub fn set_field_mask(&mut self, field: Field, mask_bytes: &[u8]) -> Result<(), KeyError> {
        FIXED_LAYOUT.set_field_mask(self, field, mask_bytes)
    }
}

impl Default for FlowMask {
    fn default() -> Self {
        FlowMask::ZERO
    }
}

impl core::fmt::Debug for FlowKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("FlowKey[")?;
        for (i, w) in self.words.iter().enumerate() {
            if *w != 0 {
                write!(f, " {i}:{w:016x}")?;
            }
        }
        f.write_str(" ]")
    }
}

impl core::fmt::Debug for FlowMask {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("FlowMask[")?;
        for (i, w) in self.words.iter().enumerate() {
            if *w != 0 {
                write!(f, " {i}:{w:016x}")?;
            }
        }
        f.write_str(" ]")
    }
}

/// A field value read back from a key: `len` big-endian bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldValue {
    len: u8,
    bytes: [u8; 16],
}

impl FieldValue {
    /// The value's bytes in network order (exactly the field's OXM length).
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
    /// The value as an unsigned integer.
    pub fn to_u128(&self) -> u128 {
        self.as_slice().iter().fold(0u128, |a, &b| (a << 8) | u128::from(b))
    }
    /// A value from its network-order bytes (at most 16); `None` if longer.
    pub fn from_be_slice(b: &[u8]) -> Option<FieldValue> {
        let mut bytes = [0u8; 16];
        bytes.get_mut(..b.len())?.copy_from_slice(b);
        Some(FieldValue { len: b.len() as u8, bytes })
    }
    fn from_u128(v: u128, len: usize) -> FieldValue {
        let all = v.to_be_bytes();
        let mut bytes = [0u8; 16];
        let len = len.min(16);
        bytes[..len].copy_from_slice(&all[16 - len..]);
        FieldValue { len: len as u8, bytes }
    }
}

impl core::fmt::Debug for FieldValue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("0x")?;
        for b in self.as_slice() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// Why a value or mask could not be stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// The byte string is not the field's OXM length.
    BadLength,
    /// The value has bits set above the field's meaningful width
    /// (OpenFlow: `OFPBMC_BAD_VALUE`).
    BadValue,
    /// The value has bits set where the mask is 0
    /// (OpenFlow: `OFPBMC_BAD_WILDCARDS`).
    ValueOutsideMask,
}

impl core::fmt::Display for KeyError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            KeyError::BadLength => "field value has the wrong length",
            KeyError::BadValue => "field value has bits above the field's width",
            KeyError::ValueOutsideMask => "field value has bits outside its mask",
        })
    }
}

impl std::error::Error for KeyError {}

/// Why a layout table is unusable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// A slot does not fit its word(s) or runs into the reserved words.
    OutOfRange(Field),
    /// Two slots (or a slot and the presence bits) share a bit.
    Overlap(Field),
}

/// Field positions in the key: data, not code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Indexed by `Field as usize`.
    fields: [Slot; Field::COUNT],
    /// Word of the presence bits.
    presence_word: u8,
    /// First word reserved for POF windows (they run to the end of the key).
    reserved_from: u8,
}

use presence as p;

/// The layout the fixed parser fills (every [`Field`]).
///
/// Words 0–7 (one cache line) hold what an L2/L3/L4 5-tuple rule looks at.
///
/// | word | bits 63 … 0 |
/// |---|---|
/// | 0 | in_phy_port 32 · in_port 32 |
/// | 1 | eth_dst 48 · eth_type 16 |
/// | 2 | eth_src 48 · vlan_vid 13 · vlan_pcp 3 |
/// | 3 | ipv4_src 32 · ipv4_dst 32 |
/// | 4 | tcp_src · tcp_dst · udp_src · udp_dst (16 each) |
/// | 5 | sctp_src 16 · sctp_dst 16 · ip_proto 8 · ip_dscp 6 · ip_ecn 2 · icmpv4_type 8 · icmpv4_code 8 |
/// | 6 | metadata 64 |
/// | 7 | mpls_label 20 · mpls_tc 3 · mpls_bos 1 · pbb_isid 24 · presence bits 16 |
/// | 8–9 | ipv6_src 128 |
/// | 10–11 | ipv6_dst 128 |
/// | 12 | ipv6_flabel 20 · (3 free) · ipv6_exthdr 9 · icmpv6_type 8 · icmpv6_code 8 · arp_op 16 |
/// | 13 | arp_spa 32 · arp_tpa 32 |
/// | 14 | arp_sha 48 · (16 free) |
/// | 15 | arp_tha 48 · (16 free) |
/// | 16–17 | ipv6_nd_target 128 |
/// | 18 | ipv6_nd_sll 48 · (16 free) |
/// | 19 | ipv6_nd_tll 48 · (16 free) |
/// | 20 | tunnel_id 64 |
/// | 21–23 | reserved for POF windows |
pub const FIXED_LAYOUT: Layout = {
    let none = p::NONE;
    let mut f = [Slot::new(0, 0, 0, p::NONE); Field::COUNT];
    f[Field::InPort as usize] = Slot::new(0, 0, 32, none);
    f[Field::InPhyPort as usize] = Slot::new(0, 32, 32, none);
    f[Field::EthDst as usize] = Slot::new(1, 16, 48, p::ETH);
    f[Field::EthType as usize] = Slot::new(1, 0, 16, p::ETH);
    f[Field::EthSrc as usize] = Slot::new(2, 16, 48, p::ETH);
    f[Field::VlanVid as usize] = Slot::new(2, 3, 13, none);
    f[Field::VlanPcp as usize] = Slot::new(2, 0, 3, p::VLAN);
    f[Field::Ipv4Src as usize] = Slot::new(3, 32, 32, p::IPV4);
    f[Field::Ipv4Dst as usize] = Slot::new(3, 0, 32, p::IPV4);
    f[Field::TcpSrc as usize] = Slot::new(4, 48, 16, p::TCP);
    f[Field::TcpDst as usize] = Slot::new(4, 32, 16, p::TCP);
    f[Field::UdpSrc as usize] = Slot::new(4, 16, 16, p::UDP);
    f[Field::UdpDst as usize] = Slot::new(4, 0, 16, p::UDP);
    f[Field::SctpSrc as usize] = Slot::new(5, 48, 16, p::SCTP);
    f[Field::SctpDst as usize] = Slot::new(5, 32, 16, p::SCTP);
    f[Field::IpProto as usize] = Slot::new(5, 24, 8, p::IP);
    f[Field::IpDscp as usize] = Slot::new(5, 18, 6, p::IP);
    f[Field::IpEcn as usize] = Slot::new(5, 16, 2, p::IP);
    f[Field::Icmpv4Type as usize] = Slot::new(5, 8, 8, p::ICMPV4);
    f[Field::Icmpv4Code as usize] = Slot::new(5, 0, 8, p::ICMPV4);
    f[Field::Metadata as usize] = Slot::new(6, 0, 64, none);
    f[Field::MplsLabel as usize] = Slot::new(7, 44, 20, p::MPLS);
    f[Field::MplsTc as usize] = Slot::new(7, 41, 3, p::MPLS);
    f[Field::MplsBos as usize] = Slot::new(7, 40, 1, p::MPLS);
    f[Field::PbbIsid as usize] = Slot::new(7, 16, 24, p::PBB);
    f[Field::Ipv6Src as usize] = Slot::new(8, 0, 128, p::IPV6);
    f[Field::Ipv6Dst as usize] = Slot::new(10, 0, 128, p::IPV6);
    f[Field::Ipv6Flabel as usize] = Slot::new(12, 44, 20, p::IPV6);
    f[Field::Ipv6Exthdr as usize] = Slot::new(12, 32, 9, p::IPV6);
    f[Field::Icmpv6Type as usize] = Slot::new(12, 24, 8, p::ICMPV6);
    f[Field::Icmpv6Code as usize] = Slot::new(12, 16, 8, p::ICMPV6);
    f[Field::ArpOp as usize] = Slot::new(12, 0, 16, p::ARP);
    f[Field::ArpSpa as usize] = Slot::new(13, 32, 32, p::ARP);
    f[Field::ArpTpa as usize] = Slot::new(13, 0, 32, p::ARP);
    f[Field::ArpSha as usize] = Slot::new(14, 16, 48, p::ARP);
    f[Field::ArpTha as usize] = Slot::new(15, 16, 48, p::ARP);
    f[Field::Ipv6NdTarget as usize] = Slot::new(16, 0, 128, p::ND_TARGET);
    f[Field::Ipv6NdSll as usize] = Slot::new(18, 16, 48, p::ND_SLL);
    f[Field::Ipv6NdTll as usize] = Slot::new(19, 16, 48, p::ND_TLL);
    f[Field::TunnelId as usize] = Slot::new(20, 0, 64, none);
    Layout { fields: f, presence_word: PRESENCE_WORD as u8, reserved_from: POF_FIRST_WORD as u8 }
};

/// `Field` for an index into the field table (`ALL` is in wire order).
fn field_at(i: usize) -> Field {
    Field::ALL.get(i).copied().unwrap_or(Field::InPort)
}

impl Layout {
    /// Build a layout from a slot table; checks it with [`Layout::validate`].
    pub fn new(
        fields: [Slot; Field::COUNT],
        presence_word: u8,
        reserved_from: u8,
    ) -> Result<Layout, LayoutError> {
        let l = Layout { fields, presence_word, reserved_from };
        l.validate()?;
        Ok(l)
    }

    /// The slot of `field`.
    #[inline]
    pub const fn slot(&self, field: Field) -> Slot {
        self.fields[field as usize]
    }

    /// Word holding the presence bits.
    pub const fn presence_word(&self) -> usize {
        self.presence_word as usize
    }

    /// The words reserved for protocol-oblivious windows.
    pub const fn reserved_words(&self) -> core::ops::Range<usize> {
        self.reserved_from as usize..KEY_WORDS
    }

    /// Check that every slot fits inside the unreserved words and that no
    /// two slots (or a slot and the presence bits) share a bit.
    pub fn validate(&self) -> Result<(), LayoutError> {
        let mut used = [0u64; KEY_WORDS];
        let pw = usize::from(self.presence_word);
        if pw >= usize::from(self.reserved_from) || usize::from(self.reserved_from) > KEY_WORDS {
            return Err(LayoutError::OutOfRange(Field::InPort));
        }
        used[pw] = (1u64 << p::COUNT) - 1;
        for (i, s) in self.fields.iter().enumerate() {
            let id = field_at(i);
            let w = usize::from(s.word);
            let bits: &[(usize, u64)] = &if s.width == 128 {
                if s.shift != 0 || w + 1 >= usize::from(self.reserved_from) {
                    return Err(LayoutError::OutOfRange(id));
                }
                [(w, u64::MAX), (w + 1, u64::MAX)]
            } else {
                if s.width == 0
                    || s.width > 64
                    || u32::from(s.shift) + u32::from(s.width) > 64
                    || w >= usize::from(self.reserved_from)
                {
                    return Err(LayoutError::OutOfRange(id));
                }
                [(w, s.word_mask()), (w, 0)]
            };
            if s.presence != p::NONE && s.presence >= p::COUNT {
                return Err(LayoutError::OutOfRange(id));
            }
            for &(w, m) in bits {
                if used[w] & m != 0 {
                    return Err(LayoutError::Overlap(id));
                }
                used[w] |= m;
            }
        }
        Ok(())
    }

    /// Raw write of an already-range-checked value into `words`.
    #[inline]
    fn write(words: &mut [u64; KEY_WORDS], s: Slot, v: u128) {
        let w = usize::from(s.word);
        if s.width == 128 {
            words[w] = (v >> 64) as u64;
            words[w + 1] = v as u64;
        } else {
            let m = s.word_mask();
            words[w] = (words[w] & !m) | (((v as u64) << s.shift) & m);
        }
    }

    #[inline]
    fn read(words: &[u64; KEY_WORDS], s: Slot) -> u128 {
        let w = usize::from(s.word);
        if s.width == 128 {
            (u128::from(words[w]) << 64) | u128::from(words[w + 1])
        } else {
            u128::from((words[w] & s.word_mask()) >> s.shift)
        }
    }

    fn to_int(field: Field, bytes: &[u8]) -> Result<u128, KeyError> {
        if bytes.len() != field.len() {
            return Err(KeyError::BadLength);
        }
        Ok(bytes.iter().fold(0u128, |a, &b| (a << 8) | u128::from(b)))
    }

    fn width_mask(s: Slot) -> u128 {
        if s.width >= 128 {
            u128::MAX
        } else {
            (1u128 << s.width) - 1
        }
    }

    /// Store `value_bytes` (the field's OXM bytes, network order) into
    /// `key`, and set the field's presence bit.
    pub fn put(&self, key: &mut FlowKey, field: Field, value_bytes: &[u8]) -> Result<(), KeyError> {
        let s = self.slot(field);
        let v = Self::to_int(field, value_bytes)?;
        if v & !Self::width_mask(s) != 0 {
            return Err(KeyError::BadValue);
        }
        Self::write(&mut key.words, s, v);
        if s.presence != p::NONE {
            key.words[self.presence_word()] |= 1u64 << s.presence;
        }
        Ok(())
    }

    /// Read `field` back from `key` as OXM bytes (zero if absent).
    pub fn get(&self, key: &FlowKey, field: Field) -> FieldValue {
        FieldValue::from_u128(Self::read(&key.words, self.slot(field)), field.len())
    }

    /// Whether `field` was present in the packet `key` came from (always
    /// true for fields without a presence bit).
    pub fn present(&self, key: &FlowKey, field: Field) -> bool {
        let s = self.slot(field);
        s.presence == p::NONE || key.words[self.presence_word()] >> s.presence & 1 != 0
    }

    /// Set the mask bits of `field` from `mask_bytes` (OXM bytes; bits above
    /// the meaningful width are ignored). A non-zero mask also sets the
    /// field's presence bit in the mask; the bit is never cleared, since
    /// several fields share it.
    pub fn set_field_mask(
        &self,
        mask: &mut FlowMask,
        field: Field,
        mask_bytes: &[u8],
    ) -> Result<(), KeyError> {
        let s = self.slot(field);
        let m = Self::to_int(field, mask_bytes)? & Self::width_mask(s);
        Self::write(&mut mask.words, s, m);
        if m != 0 && s.presence != p::NONE {
            mask.words[self.presence_word()] |= 1u64 << s.presence;
        }
        Ok(())
    }

    /// Add one OXM match (`mask_bytes = None` means exact) to a rule: sets
    /// the mask and the (masked) value, presence bits included.
    pub fn add_match(
        &self,
        value: &mut FlowKey,
        mask: &mut FlowMask,
        field: Field,
        value_bytes: &[u8],
        mask_bytes: Option<&[u8]>,
    ) -> Result<(), KeyError> {
        let s = self.slot(field);
        let v = Self::to_int(field, value_bytes)?;
        if v & !Self::width_mask(s) != 0 {
            return Err(KeyError::BadValue);
        }
        let m = match mask_bytes {
            Some(mb) => Self::to_int(field, mb)? & Self::width_mask(s),
            None => Self::width_mask(s),
        };
        if v & !m != 0 {
            return Err(KeyError::ValueOutsideMask);
        }
        Self::write(&mut mask.words, s, m);
        Self::write(&mut value.words, s, v);
        if m != 0 && s.presence != p::NONE {
            mask.words[self.presence_word()] |= 1u64 << s.presence;
            value.words[self.presence_word()] |= 1u64 << s.presence;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oxm_layout_is_valid() {
        FIXED_LAYOUT.validate().unwrap();
        // every field's width covers its meaningful bits and no more than
        // its OXM length
        for &f in Field::ALL {
            let s = FIXED_LAYOUT.slot(f);
            assert!(usize::from(s.width) <= f.len() * 8, "{f:?}");
            assert!(s.width > 0, "{f:?}");
        }
        assert_eq!(FIXED_LAYOUT.reserved_words(), 21..24);
    }

    #[test]
    fn validate_catches_overlap_and_range() {
        let mut f = FIXED_LAYOUT.fields;
        f[Field::TcpSrc as usize] = f[Field::TcpDst as usize];
        assert_eq!(Layout::new(f, 7, 21), Err(LayoutError::Overlap(Field::TcpDst)));
        let mut f = FIXED_LAYOUT.fields;
        f[Field::TunnelId as usize].word = 21;
        assert_eq!(Layout::new(f, 7, 21), Err(LayoutError::OutOfRange(Field::TunnelId)));
        let mut f = FIXED_LAYOUT.fields;
        f[Field::PbbIsid as usize].shift = 0;
        assert!(matches!(Layout::new(f, 7, 21), Err(LayoutError::Overlap(_))));
    }

    #[test]
    fn put_get_roundtrip_every_field() {
        for &f in Field::ALL {
            let s = FIXED_LAYOUT.slot(f);
            // all-ones within the meaningful width
            let v: u128 = if s.width == 128 { u128::MAX } else { (1u128 << s.width) - 1 };
            let bytes = FieldValue::from_u128(v, f.len());
            let mut k = FlowKey::ZERO;
            FIXED_LAYOUT.put(&mut k, f, bytes.as_slice()).unwrap();
            assert_eq!(FIXED_LAYOUT.get(&k, f), bytes, "{f:?}");
            assert!(FIXED_LAYOUT.present(&k, f));
            // no other field is disturbed
            for &g in Field::ALL {
                if g != f {
                    assert_eq!(FIXED_LAYOUT.get(&k, g).to_u128(), 0, "{f:?} leaked into {g:?}");
                }
            }
        }
    }

    #[test]
    fn put_rejects_bad_values() {
        let mut k = FlowKey::ZERO;
        assert_eq!(FIXED_LAYOUT.put(&mut k, Field::VlanVid, &[0x20, 0]), Err(KeyError::BadValue));
        assert_eq!(FIXED_LAYOUT.put(&mut k, Field::IpDscp, &[64]), Err(KeyError::BadValue));
        assert_eq!(FIXED_LAYOUT.put(&mut k, Field::EthType, &[8]), Err(KeyError::BadLength));
        assert_eq!(k, FlowKey::ZERO);
        let mut m = FlowMask::ZERO;
        assert_eq!(
            FIXED_LAYOUT.add_match(
                &mut k,
                &mut m,
                Field::Ipv4Src,
                &[10, 0, 0, 1],
                Some(&[255, 0, 0, 0])
            ),
            Err(KeyError::ValueOutsideMask)
        );
    }

    #[test]
    fn literal_positions() {
        let mut k = FlowKey::ZERO;
        FIXED_LAYOUT.put(&mut k, Field::EthType, &[0x08, 0x00]).unwrap();
        FIXED_LAYOUT.put(&mut k, Field::VlanVid, &[0x10, 0x64]).unwrap();
        FIXED_LAYOUT.put(&mut k, Field::Ipv4Src, &[192, 168, 0, 1]).unwrap();
        FIXED_LAYOUT
            .put(&mut k, Field::Ipv6Src, &[0x20, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])
            .unwrap();
        assert_eq!(k.words[1], 0x0800);
        assert_eq!(k.words[2], 0x1064 << 3);
        assert_eq!(k.words[3], 0xc0a8_0001_0000_0000);
        assert_eq!(k.words[8], 0x2001_0000_0000_0000);
        assert_eq!(k.words[9], 1);
        assert_eq!(
            k.words[7],
            (1 << presence::ETH) | (1 << presence::IPV4) | (1 << presence::IPV6)
        );
    }

    #[test]
    fn masked_compare_and_presence() {
        // rule: eth_type=0x0800, ipv4_src=10.0.0.0/8
        let (mut v, mut m) = (FlowKey::ZERO, FlowMask::ZERO);
        FIXED_LAYOUT.add_match(&mut v, &mut m, Field::EthType, &[8, 0], None).unwrap();
        FIXED_LAYOUT
            .add_match(&mut v, &mut m, Field::Ipv4Src, &[10, 0, 0, 0], Some(&[255, 0, 0, 0]))
            .unwrap();
        let mut pkt = FlowKey::ZERO;
        FIXED_LAYOUT.put(&mut pkt, Field::EthType, &[8, 0]).unwrap();
        FIXED_LAYOUT.put(&mut pkt, Field::Ipv4Src, &[10, 9, 8, 7]).unwrap();
        assert!(pkt.matches(&m, &v));
        let mut other = pkt;
        FIXED_LAYOUT.put(&mut other, Field::Ipv4Src, &[11, 9, 8, 7]).unwrap();
        assert!(!other.matches(&m, &v));
        // an IPv4 frame whose header was truncated: eth_type says IPv4,
        // address zero, IPV4 presence clear -> a rule on 0.0.0.0/8 misses it
        let (mut v0, mut m0) = (FlowKey::ZERO, FlowMask::ZERO);
        FIXED_LAYOUT.add_match(&mut v0, &mut m0, Field::EthType, &[8, 0], None).unwrap();
        FIXED_LAYOUT
            .add_match(&mut v0, &mut m0, Field::Ipv4Src, &[0, 0, 0, 0], Some(&[255, 0, 0, 0]))
            .unwrap();
        let mut trunc = FlowKey::ZERO;
        FIXED_LAYOUT.put(&mut trunc, Field::EthType, &[8, 0]).unwrap();
        assert!(!trunc.matches(&m0, &v0));
        // a fully wildcarded field requires nothing
        let (mut v1, mut m1) = (FlowKey::ZERO, FlowMask::ZERO);
        FIXED_LAYOUT.add_match(&mut v1, &mut m1, Field::Ipv4Src, &[0; 4], Some(&[0; 4])).unwrap();
        assert!(m1.is_zero());
        let mut m2 = FlowMask::ZERO;
        m2.set_field_mask(Field::VlanVid, &[0xff, 0xff]).unwrap();
        assert_eq!(m2.words[2], 0x1fff << 3);
        assert!(trunc.matches(&m1, &v1));
    }

    #[test]
    fn vlan_none_matches_untagged() {
        let (mut v, mut m) = (FlowKey::ZERO, FlowMask::ZERO);
        FIXED_LAYOUT.add_match(&mut v, &mut m, Field::VlanVid, &[0, 0], None).unwrap();
        assert!(FlowKey::ZERO.matches(&m, &v));
        let mut tagged = FlowKey::ZERO;
        FIXED_LAYOUT.put(&mut tagged, Field::VlanVid, &[0x10, 0]).unwrap();
        assert!(!tagged.matches(&m, &v));
        // OFPVID_PRESENT/OFPVID_PRESENT: any tagged frame
        let (mut v, mut m) = (FlowKey::ZERO, FlowMask::ZERO);
        FIXED_LAYOUT
            .add_match(&mut v, &mut m, Field::VlanVid, &[0x10, 0], Some(&[0x10, 0]))
            .unwrap();
        assert!(tagged.matches(&m, &v));
        assert!(!FlowKey::ZERO.matches(&m, &v));
    }
}
