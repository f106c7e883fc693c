//! Table features as ovs-ofctl 3.1 prints them: `dump-table-features`, and
//! the body of an `OFPST_TABLE_FEATURES` request or reply.
//!
//! ovs-ofctl does not print the properties as they come. It first reduces
//! each table to Open vSwitch's own view of it (the rules below are facts
//! read from Open vSwitch's lib/ofp-table.c, lib/nx-match.c and
//! include/openvswitch/meta-flow.h; the code is sluice's):
//!
//! - match fields become a set of Open vSwitch fields: an OXM or NXM id
//!   names a field when its class, number (and experimenter) are one of the
//!   field's ids and its length is the field's (any length for the variable
//!   `tun_metadata` fields); other ids are skipped. A masked id in the match
//!   property makes the field "arbitrary mask"; a field in the wildcards
//!   property may be wildcarded;
//! - actions become Open vSwitch action kinds (OpenFlow 1.3's `pop_vlan` is
//!   `strip_vlan`, `set_nw_ttl` is `mod_nw_ttl`, ...; `copy_ttl_*` and the
//!   PBB actions are dropped), printed in Open vSwitch's order;
//! - instructions likewise (`meter apply_actions clear_actions write_actions
//!   write_metadata goto_table`), experimenter ones dropped;
//! - a `_MISS` property that is absent takes the non-miss one's value.
//!
//! Then each table is compared with the one before it: an equal table with
//! no name joins a run printed as `tables A...B: ditto`, and parts equal to
//! the previous table's print as `(same instructions)`, `(same actions)`,
//! `(same matching)`. Two tables' next-table sets count as equal when they
//! differ only in the later table's own id. Field lists are condensed:
//! names sharing a prefix up to an `_` are grouped as `eth_{src,dst}`
//! (nested), and runs of names numbered one apart as `reg0...reg15`.
//!
//! A table ovs-ofctl cannot decode (a required property missing or given
//! twice, a next table 255, a masked id where masks are not allowed, an
//! experimenter OXM id shorter than its experimenter field) gives the name
//! of the error it reports instead.

use crate::multipart::table_features::{FeatureId, OxmId, TableFeatureProp, TableFeatures};
use core::fmt::Write;

/// Where a field's id lives: the OXM class and, for the experimenter class,
/// the experimenter.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Class(u16, Option<u32>);

const NXM0: Class = Class(0x0000, None);
const NXM1: Class = Class(0x0001, None);
const ERIC: Class = Class(0x1000, None);
const BASIC: Class = Class(0x8000, None);
const PKT_REG: Class = Class(0x8001, None);
const NX_EXP: Class = Class(0xffff, Some(0x0000_2320));
const ONF_EXP: Class = Class(0xffff, Some(0x4f4e_4600));
const NSH_EXP: Class = Class(0xffff, Some(0x005a_d650));

/// One Open vSwitch field, or a numbered family of them (`reg0`...`reg15`):
/// `count` fields named `name` followed by `first`, `first + 1`, ...; each
/// id's number grows by one from field to field. `bytes` 0 is a field of
/// variable length.
struct Def {
    name: &'static str,
    first: u8,
    count: u8,
    bytes: u8,
    ids: &'static [(Class, u8)],
}

const fn one(name: &'static str, bytes: u8, ids: &'static [(Class, u8)]) -> Def {
    Def { name, first: 0, count: 0, bytes, ids }
}

const fn family(
    name: &'static str,
    first: u8,
    count: u8,
    bytes: u8,
    ids: &'static [(Class, u8)],
) -> Def {
    Def { name, first, count, bytes, ids }
}

/// Open vSwitch 3.1's fields that have an OXM or NXM id, in Open vSwitch's
/// order (the order it prints them in), with their ids.
const DEFS: &[Def] = &[
    one("dp_hash", 4, &[(NXM1, 35), (NX_EXP, 0)]),
    one("recirc_id", 4, &[(NXM1, 36)]),
    one("packet_type", 4, &[(BASIC, 44)]),
    one("conj_id", 4, &[(NXM1, 37)]),
    one("tun_id", 8, &[(NXM1, 16), (BASIC, 38)]),
    one("tun_src", 4, &[(NXM1, 31)]),
    one("tun_dst", 4, &[(NXM1, 32)]),
    one("tun_ipv6_src", 16, &[(NXM1, 109)]),
    one("tun_ipv6_dst", 16, &[(NXM1, 110)]),
    one("tun_flags", 2, &[(NXM1, 104)]),
    one("tun_gbp_id", 2, &[(NXM1, 38)]),
    one("tun_gbp_flags", 1, &[(NXM1, 39)]),
    one("tun_erspan_idx", 4, &[(NX_EXP, 11)]),
    one("tun_erspan_ver", 1, &[(NX_EXP, 12)]),
    one("tun_erspan_dir", 1, &[(NX_EXP, 13)]),
    one("tun_erspan_hwid", 1, &[(NX_EXP, 14)]),
    one("tun_gtpu_flags", 1, &[(NX_EXP, 15)]),
    one("tun_gtpu_msgtype", 1, &[(NX_EXP, 16)]),
    family("tun_metadata", 0, 64, 0, &[(NXM1, 40)]),
    one("metadata", 8, &[(BASIC, 2)]),
    one("in_port", 2, &[(NXM0, 0)]),
    one("in_port_oxm", 4, &[(BASIC, 0)]),
    one("actset_output", 4, &[(ONF_EXP, 43)]),
    one("pkt_mark", 4, &[(NXM1, 33)]),
    one("ct_state", 4, &[(NXM1, 105)]),
    one("ct_zone", 2, &[(NXM1, 106)]),
    one("ct_mark", 4, &[(NXM1, 107)]),
    one("ct_label", 16, &[(NXM1, 108)]),
    one("ct_nw_proto", 1, &[(NXM1, 119)]),
    one("ct_nw_src", 4, &[(NXM1, 120)]),
    one("ct_nw_dst", 4, &[(NXM1, 121)]),
    one("ct_ipv6_src", 16, &[(NXM1, 122)]),
    one("ct_ipv6_dst", 16, &[(NXM1, 123)]),
    one("ct_tp_src", 2, &[(NXM1, 124)]),
    one("ct_tp_dst", 2, &[(NXM1, 125)]),
    family("reg", 0, 16, 4, &[(NXM1, 0)]),
    family("xreg", 0, 8, 8, &[(PKT_REG, 0)]),
    family("xxreg", 0, 4, 16, &[(NXM1, 111)]),
    one("eth_src", 6, &[(NXM0, 2), (BASIC, 4)]),
    one("eth_dst", 6, &[(NXM0, 1), (BASIC, 3)]),
    one("eth_type", 2, &[(NXM0, 3), (BASIC, 5)]),
    one("vlan_tci", 2, &[(NXM0, 4)]),
    one("vlan_vid", 2, &[(BASIC, 6)]),
    one("vlan_pcp", 1, &[(BASIC, 7)]),
    one("mpls_label", 4, &[(BASIC, 34)]),
    one("mpls_tc", 1, &[(BASIC, 35)]),
    one("mpls_bos", 1, &[(BASIC, 36)]),
    one("mpls_ttl", 1, &[(NXM1, 30)]),
    one("ip_src", 4, &[(NXM0, 7), (BASIC, 11)]),
    one("ip_dst", 4, &[(NXM0, 8), (BASIC, 12)]),
    one("ipv6_src", 16, &[(NXM1, 19), (BASIC, 26)]),
    one("ipv6_dst", 16, &[(NXM1, 20), (BASIC, 27)]),
    one("ipv6_label", 4, &[(NXM1, 27), (BASIC, 28)]),
    one("nw_proto", 1, &[(NXM0, 6), (BASIC, 10)]),
    one("nw_tos", 1, &[(NXM0, 5)]),
    one("ip_dscp", 1, &[(BASIC, 8)]),
    one("nw_ecn", 1, &[(NXM1, 28), (BASIC, 9)]),
    one("nw_ttl", 1, &[(NXM1, 29)]),
    one("ip_frag", 1, &[(NXM1, 26)]),
    one("arp_op", 2, &[(NXM0, 15), (BASIC, 21)]),
    one("arp_spa", 4, &[(NXM0, 16), (BASIC, 22)]),
    one("arp_tpa", 4, &[(NXM0, 17), (BASIC, 23)]),
    one("arp_sha", 6, &[(NXM1, 17), (BASIC, 24)]),
    one("arp_tha", 6, &[(NXM1, 18), (BASIC, 25)]),
    one("tcp_src", 2, &[(NXM0, 9), (BASIC, 13)]),
    one("tcp_dst", 2, &[(NXM0, 10), (BASIC, 14)]),
    one("tcp_flags", 2, &[(NXM1, 34), (ONF_EXP, 42)]),
    one("udp_src", 2, &[(NXM0, 11), (BASIC, 15)]),
    one("udp_dst", 2, &[(NXM0, 12), (BASIC, 16)]),
    one("sctp_src", 2, &[(BASIC, 17)]),
    one("sctp_dst", 2, &[(BASIC, 18)]),
    one("icmp_type", 1, &[(NXM0, 13), (BASIC, 19)]),
    one("icmp_code", 1, &[(NXM0, 14), (BASIC, 20)]),
    one("icmpv6_type", 1, &[(NXM1, 21), (BASIC, 29)]),
    one("icmpv6_code", 1, &[(NXM1, 22), (BASIC, 30)]),
    one("nd_target", 16, &[(NXM1, 23), (BASIC, 31)]),
    one("nd_sll", 6, &[(NXM1, 24), (BASIC, 32)]),
    one("nd_tll", 6, &[(NXM1, 25), (BASIC, 33)]),
    one("nd_reserved", 4, &[(ERIC, 1)]),
    one("nd_options_type", 1, &[(ERIC, 2)]),
    one("nsh_flags", 1, &[(NSH_EXP, 1)]),
    one("nsh_mdtype", 1, &[(NSH_EXP, 2)]),
    one("nsh_np", 1, &[(NSH_EXP, 3)]),
    one("nsh_spi", 4, &[(NSH_EXP, 4)]),
    one("nsh_si", 1, &[(NSH_EXP, 5)]),
    family("nsh_c", 1, 4, 4, &[(NSH_EXP, 6)]),
    one("nsh_ttl", 1, &[(NSH_EXP, 10)]),
];

/// Bits for every field of [`DEFS`] (fewer than 256 of them).
const SET_WORDS: usize = 4;

/// A set of fields, by their position in Open vSwitch's order.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Fields([u64; SET_WORDS]);

impl Fields {
    fn insert(&mut self, i: usize) {
        if let Some(w) = self.0.get_mut(i / 64) {
            *w |= 1 << (i % 64);
        }
    }
    fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }
    fn zip(self, o: Fields, f: impl Fn(u64, u64) -> u64) -> Fields {
        let mut r = Fields::default();
        for (i, w) in r.0.iter_mut().enumerate() {
            *w = f(self.0[i], o.0[i]);
        }
        r
    }
    fn and(self, o: Fields) -> Fields {
        self.zip(o, |a, b| a & b)
    }
    fn or(self, o: Fields) -> Fields {
        self.zip(o, |a, b| a | b)
    }
    fn not(self) -> Fields {
        self.zip(self, |a, _| !a)
    }
}

/// One expanded field: its name and what identifies it on the wire.
struct Field {
    name: String,
    bytes: u8,
    ids: Vec<(Class, u8)>,
}

fn fields() -> Vec<Field> {
    let mut v = Vec::new();
    for d in DEFS {
        if d.count == 0 {
            v.push(Field { name: d.name.to_string(), bytes: d.bytes, ids: d.ids.to_vec() });
            continue;
        }
        for i in 0..d.count {
            v.push(Field {
                name: format!("{}{}", d.name, u32::from(d.first) + u32::from(i)),
                bytes: d.bytes,
                ids: d.ids.iter().map(|&(c, n)| (c, n.wrapping_add(i))).collect(),
            });
        }
    }
    v
}

/// The field an OXM id names, as Open vSwitch looks it up: class, number
/// and experimenter, then the length (halved, past the experimenter field,
/// for a masked id) must be the field's unless the field's is variable.
/// `Err` is the decode error for an experimenter id too short to hold its
/// experimenter.
fn lookup(fields: &[Field], id: &OxmId) -> Result<Option<(usize, bool)>, &'static str> {
    let h = id.header;
    let exp_len = if id.experimenter.is_some() { 4 } else { 0 };
    let len = u32::from(h.length());
    if len < exp_len {
        return Err("OFPBMC_BAD_LEN");
    }
    let exact_len = if h.has_mask() { (len - exp_len) / 2 + exp_len } else { len };
    let class = Class(h.class(), id.experimenter);
    for (i, f) in fields.iter().enumerate() {
        if f.ids.iter().any(|&(c, n)| c == class && n == h.field()) {
            let ok = f.bytes == 0 || exact_len == u32::from(f.bytes) + exp_len;
            return Ok(ok.then_some((i, h.has_mask())));
        }
    }
    Ok(None)
}

/// `(exact, masked)` field sets of an OXM id list.
fn oxm_sets(fields: &[Field], ids: &[OxmId]) -> Result<(Fields, Fields), &'static str> {
    let (mut exact, mut masked) = (Fields::default(), Fields::default());
    for id in ids {
        match lookup(fields, id)? {
            Some((i, true)) => masked.insert(i),
            Some((i, false)) => exact.insert(i),
            None => {}
        }
    }
    Ok((exact, masked))
}

/// A list where masks are not allowed.
fn oxm_exact(fields: &[Field], ids: &[OxmId]) -> Result<Fields, &'static str> {
    let (exact, masked) = oxm_sets(fields, ids)?;
    if masked.is_empty() {
        Ok(exact)
    } else {
        Err("OFPBMC_BAD_MASK")
    }
}

/// Open vSwitch's action kinds that OpenFlow 1.3 action types map to, in
/// Open vSwitch's order: (OpenFlow 1.3 type, name).
const ACTIONS: &[(u16, &str)] = &[
    (0, "output"),
    (22, "group"),
    (25, "set_field"),
    (18, "strip_vlan"),
    (17, "push_vlan"),
    (23, "mod_nw_ttl"),
    (24, "dec_ttl"),
    (15, "set_mpls_ttl"),
    (16, "dec_mpls_ttl"),
    (19, "push_mpls"),
    (20, "pop_mpls"),
    (21, "set_queue"),
];

/// Open vSwitch's instruction kinds in its order: (OpenFlow type, name).
const INSTRUCTIONS: &[(u16, &str)] = &[
    (6, "meter"),
    (4, "apply_actions"),
    (5, "clear_actions"),
    (3, "write_actions"),
    (2, "write_metadata"),
    (1, "goto_table"),
];

/// Bits of `table` (positions in `table`) for the ids whose type it lists.
fn kinds(ids: &[FeatureId], table: &[(u16, &str)]) -> u32 {
    let mut bits = 0;
    for id in ids {
        if let FeatureId::Type(t) = id {
            if let Some(i) = table.iter().position(|(ty, _)| ty == t) {
                bits |= 1 << i;
            }
        }
    }
    bits
}

fn kind_names(bits: u32, table: &[(u16, &str)]) -> String {
    let names: Vec<&str> = table
        .iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .map(|(_, (_, n))| *n)
        .collect();
    names.join(" ")
}

#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Actions {
    kinds: u32,
    set_fields: Fields,
}

impl Actions {
    fn is_empty(&self) -> bool {
        self.kinds == 0 && self.set_fields.is_empty()
    }
}

#[derive(Clone, Copy, Default)]
struct Instructions {
    /// Next tables 0..=254.
    next: [u64; 4],
    kinds: u32,
    write: Actions,
    apply: Actions,
}

fn next_has(next: &[u64; 4], t: usize) -> bool {
    next.get(t / 64).is_some_and(|w| w & (1 << (t % 64)) != 0)
}

impl Instructions {
    fn is_empty(&self) -> bool {
        self.next.iter().all(|w| *w == 0)
            && self.kinds == 0
            && self.write.is_empty()
            && self.apply.is_empty()
    }

    /// Equal, where the next-table sets of consecutive tables may differ in
    /// the later table's id (a table cannot go to itself).
    fn same(&self, a_id: u8, b: &Instructions, b_id: u8) -> bool {
        next_same(&self.next, a_id, &b.next, b_id)
            && self.kinds == b.kinds
            && self.write == b.write
            && self.apply == b.apply
    }
}

fn next_same(a: &[u64; 4], a_id: u8, b: &[u64; 4], b_id: u8) -> bool {
    let (a_id, b_id) = (usize::from(a_id), usize::from(b_id));
    if b_id == a_id + 1 && next_has(a, b_id) && !next_has(b, b_id) {
        (0..4).all(|i| {
            let mut diff = a[i] ^ b[i];
            if i == b_id / 64 {
                diff &= !(1 << (b_id % 64));
            }
            diff == 0
        })
    } else if a_id == b_id + 1 {
        next_same(b, b_id as u8, a, a_id as u8)
    } else {
        a == b
    }
}

/// One table as Open vSwitch sees it.
struct Table {
    id: u8,
    name: String,
    metadata_match: u64,
    metadata_write: u64,
    max_entries: u32,
    nonmiss: Instructions,
    miss: Instructions,
    matching: Fields,
    mask: Fields,
    wildcard: Fields,
}

impl Table {
    fn same(&self, p: &Table) -> bool {
        self.metadata_match == p.metadata_match
            && self.metadata_write == p.metadata_write
            && self.max_entries == p.max_entries
            && self.nonmiss.same(self.id, &p.nonmiss, p.id)
            && self.miss.same(self.id, &p.miss, p.id)
            && self.matching == p.matching
    }
}

/// Property types OpenFlow 1.3 requires: instructions, next tables, write
/// and apply actions, match, wildcards, write and apply set-field.
const REQUIRED: u32 = 1 | 1 << 2 | 1 << 4 | 1 << 6 | 1 << 8 | 1 << 10 | 1 << 12 | 1 << 14;

fn decode(fields: &[Field], t: &TableFeatures) -> Result<Table, &'static str> {
    if t.table_id == 0xff {
        return Err("OFPTFFC_BAD_TABLE");
    }
    let mut nonmiss = Instructions::default();
    let mut miss = Instructions::default();
    let (mut matching, mut mask, mut wildcard) = Default::default();
    let mut seen = 0u32;
    for p in &t.properties {
        let ty = p.prop_type();
        if ty < 32 {
            if seen & (1 << ty) != 0 {
                return Err("OFPTFFC_BAD_FEATURES");
            }
            seen |= 1 << ty;
        }
        let which = usize::from;
        let both = [&mut nonmiss, &mut miss];
        match p {
            TableFeatureProp::Instructions { miss: m, ids } => {
                both[which(*m)].kinds = kinds(ids, INSTRUCTIONS);
            }
            TableFeatureProp::NextTables { miss: m, tables } => {
                let mut next = [0u64; 4];
                for &n in tables {
                    if n == 0xff {
                        return Err("OFPBPC_BAD_VALUE");
                    }
                    next[usize::from(n) / 64] |= 1 << (n % 64);
                }
                both[which(*m)].next = next;
            }
            TableFeatureProp::WriteActions { miss: m, ids } => {
                both[which(*m)].write.kinds = kinds(ids, ACTIONS);
            }
            TableFeatureProp::ApplyActions { miss: m, ids } => {
                both[which(*m)].apply.kinds = kinds(ids, ACTIONS);
            }
            TableFeatureProp::Match(ids) => (matching, mask) = oxm_sets(fields, ids)?,
            TableFeatureProp::Wildcards(ids) => wildcard = oxm_exact(fields, ids)?,
            TableFeatureProp::WriteSetfield { miss: m, ids } => {
                both[which(*m)].write.set_fields = oxm_exact(fields, ids)?;
            }
            TableFeatureProp::ApplySetfield { miss: m, ids } => {
                both[which(*m)].apply.set_fields = oxm_exact(fields, ids)?;
            }
            TableFeatureProp::Experimenter { .. } | TableFeatureProp::Unknown { .. } => {}
        }
    }
    if seen & REQUIRED != REQUIRED {
        return Err("OFPTFFC_BAD_FEATURES");
    }
    // An absent table-miss property is the same as its non-miss one.
    let absent = |ty: u32| seen & (1 << ty) == 0;
    if absent(1) {
        miss.kinds = nonmiss.kinds;
    }
    if absent(3) {
        miss.next = nonmiss.next;
    }
    if absent(5) {
        miss.write.kinds = nonmiss.write.kinds;
    }
    if absent(7) {
        miss.apply.kinds = nonmiss.apply.kinds;
    }
    if absent(13) {
        miss.write.set_fields = nonmiss.write.set_fields;
    }
    if absent(15) {
        miss.apply.set_fields = nonmiss.apply.set_fields;
    }
    // A maskable field is matchable and may be wildcarded; only a
    // matchable field can be wildcarded.
    let matching: Fields = matching.or(mask);
    let wildcard: Fields = wildcard.or(mask).and(matching);
    Ok(Table {
        id: t.table_id,
        name: t.name.clone(),
        metadata_match: t.metadata_match,
        metadata_write: t.metadata_write,
        max_entries: t.max_entries,
        nonmiss,
        miss,
        matching,
        mask,
        wildcard,
    })
}

/// The length of the longest common prefix of `a` and `b` that ends in `_`.
fn common_prefix(a: &str, b: &str) -> usize {
    let mut len = 0;
    for (i, (x, y)) in a.bytes().zip(b.bytes()).enumerate() {
        if x != y {
            break;
        }
        if x == b'_' {
            len = i + 1;
        }
    }
    len
}

/// Whether `b` is `a` with a number one larger at its end (`reg0`, `reg1`).
fn sequential(a: &str, b: &str) -> bool {
    let same = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let (ra, rb) = (&a.as_bytes()[same..], &b.as_bytes()[same..]);
    let number = |r: &[u8]| -> Option<u64> {
        if r.is_empty() || r.len() >= 10 || !r.iter().all(u8::is_ascii_digit) {
            return None;
        }
        core::str::from_utf8(r).ok()?.parse().ok()
    };
    match (number(ra), number(rb)) {
        (Some(x), Some(y)) => x + 1 == y,
        _ => false,
    }
}

fn tail(s: &str, from: usize) -> &str {
    s.get(from..).unwrap_or("")
}

/// `names` condensed, each without its first `skip` bytes (already printed
/// as a common prefix).
fn condense(out: &mut String, names: &[&str], skip: usize) {
    let mut rest = names;
    let mut first = true;
    while let Some(head) = rest.first() {
        if !first {
            out.push(if skip > 0 { ',' } else { ' ' });
        }
        first = false;
        // The run sharing a further prefix with the first name ...
        let (prefix_run, extra) = match rest.get(1) {
            None => (1, 0),
            Some(second) => match common_prefix(tail(head, skip), tail(second, skip)) {
                0 => (1, 0),
                extra => {
                    let n = 2 + rest[2..]
                        .iter()
                        .take_while(|n| common_prefix(tail(head, skip), tail(n, skip)) > 0)
                        .count();
                    (n, extra)
                }
            },
        };
        // ... and the run of numbered names (a run of two is not one).
        let mut seq = 1;
        while seq < rest.len() && sequential(rest[seq - 1], rest[seq]) {
            seq += 1;
        }
        if seq == 2 {
            seq = 1;
        }
        let run = prefix_run.max(seq);
        if seq >= prefix_run {
            out.push_str(tail(head, skip));
            if run > 1 {
                let _ = write!(out, "...{}", tail(rest[run - 1], skip));
            }
        } else {
            out.push_str(tail(head, skip).get(..extra).unwrap_or(""));
            out.push('{');
            condense(out, &rest[..run], skip + extra);
            out.push('}');
        }
        rest = &rest[run..];
    }
}

fn field_list(out: &mut String, fields: &[Field], set: Fields) {
    let names: Vec<&str> = fields
        .iter()
        .enumerate()
        .filter(|(i, _)| set.contains(*i))
        .map(|(_, f)| f.name.as_str())
        .collect();
    if !names.is_empty() {
        out.push(' ');
        condense(out, &names, 0);
    }
}

fn actions(out: &mut String, fields: &[Field], a: &Actions) {
    if a.kinds != 0 {
        let _ = writeln!(out, "        actions: {}", kind_names(a.kinds, ACTIONS));
    }
    if !a.set_fields.is_empty() {
        out.push_str("        supported on Set-Field:");
        field_list(out, fields, a.set_fields);
        out.push('\n');
    }
}

fn instructions(out: &mut String, fields: &[Field], i: &Instructions, prev: Option<&Instructions>) {
    let next: Vec<usize> = (0..255).filter(|&t| next_has(&i.next, t)).collect();
    if !next.is_empty() {
        let mut ranges: Vec<String> = Vec::new();
        let mut k = 0;
        while k < next.len() {
            let mut end = k;
            while end + 1 < next.len() && next[end + 1] == next[end] + 1 {
                end += 1;
            }
            ranges.push(if end == k {
                next[k].to_string()
            } else {
                format!("{}-{}", next[k], next[end])
            });
            k = end + 1;
        }
        let _ = writeln!(out, "      next tables: {}", ranges.join(","));
    }
    if i.kinds != 0 {
        if prev.is_some_and(|p| p.kinds == i.kinds) {
            out.push_str("      (same instructions)\n");
        } else {
            let _ = writeln!(out, "      instructions: {}", kind_names(i.kinds, INSTRUCTIONS));
        }
    }
    if prev.is_some_and(|p| p.write == i.write && p.apply == i.apply)
        && !i.write.set_fields.is_empty()
    {
        out.push_str("      (same actions)\n");
    } else if i.write != i.apply {
        out.push_str("      Write-Actions features:\n");
        actions(out, fields, &i.write);
        out.push_str("      Apply-Actions features:\n");
        actions(out, fields, &i.apply);
    } else if !i.write.is_empty() {
        out.push_str("      Write-Actions and Apply-Actions features:\n");
        actions(out, fields, &i.write);
    }
}

/// `%#x`: `0` for zero, else `0x` and hex digits.
fn alt_hex(v: u64) -> String {
    if v == 0 {
        "0".into()
    } else {
        format!("{v:#x}")
    }
}

/// The printer's state from one table to the next.
#[derive(Default)]
struct Printer {
    out: String,
    prev: Option<Table>,
    ditto: Option<(u8, u8)>,
}

impl Printer {
    fn finish_ditto(&mut self) {
        match self.ditto.take() {
            Some((a, b)) if a == b => {
                let _ = write!(self.out, "\n  table {a}: ditto\n");
            }
            Some((a, b)) => {
                let _ = write!(self.out, "\n  tables {a}...{b}: ditto\n");
            }
            None => {}
        }
    }

    fn table(&mut self, fields: &[Field], t: Table) {
        let same = self.prev.as_ref().is_some_and(|p| t.same(p));
        if same && t.name.is_empty() {
            self.ditto = Some((self.ditto.map_or(t.id, |d| d.0), t.id));
            self.prev = Some(t);
            return;
        }
        self.finish_ditto();
        let out = &mut self.out;
        let _ = write!(out, "\n  table {}", t.id);
        if !t.name.is_empty() {
            let _ = write!(out, " (\"{}\")", t.name);
        }
        out.push(':');
        if same {
            out.push_str(" ditto");
            self.prev = Some(t);
            return;
        }
        out.push('\n');
        if t.metadata_match != 0 || t.metadata_write != 0 {
            let _ = writeln!(
                out,
                "    metadata: match={} write={}",
                alt_hex(t.metadata_match),
                alt_hex(t.metadata_write)
            );
        }
        if t.max_entries != 0 {
            let _ = writeln!(out, "    max_entries={}", t.max_entries);
        }
        let prev = self.prev.as_ref();
        if prev.is_some_and(|p| {
            t.nonmiss.same(t.id, &p.nonmiss, p.id) && t.miss.same(t.id, &p.miss, p.id)
        }) {
            if !t.nonmiss.is_empty() {
                out.push_str("    (same instructions)\n");
            }
        } else if !t.nonmiss.same(t.id, &t.miss, t.id) {
            out.push_str("    instructions (other than table miss):\n");
            instructions(out, fields, &t.nonmiss, prev.map(|p| &p.nonmiss));
            out.push_str("    instructions (table miss):\n");
            instructions(out, fields, &t.miss, prev.map(|p| &p.miss));
        } else if !t.nonmiss.is_empty() {
            out.push_str("    instructions (table miss and others):\n");
            instructions(out, fields, &t.nonmiss, prev.map(|p| &p.nonmiss));
        }
        if !t.matching.is_empty() {
            if prev.is_some_and(|p| p.matching == t.matching) {
                out.push_str("    (same matching)\n");
            } else {
                out.push_str("    matching:\n");
                let kinds = [
                    (t.mask, t.wildcard, "arbitrary mask"),
                    (t.mask.not(), t.wildcard, "exact match or wildcard"),
                    (t.mask.not(), t.wildcard.not(), "must exact match"),
                ];
                for (m, w, title) in kinds {
                    let set = t.matching.and(m).and(w);
                    if !set.is_empty() {
                        let _ = write!(out, "      {title}:");
                        field_list(out, fields, set);
                        out.push('\n');
                    }
                }
            }
        }
        self.prev = Some(t);
    }

    /// All of `tables`; `Err` carries what was printed before the first
    /// table that does not decode, and the decode error's name.
    fn run(tables: &[TableFeatures]) -> Result<String, (String, &'static str)> {
        let fields = fields();
        let mut p = Printer::default();
        for t in tables {
            match decode(&fields, t) {
                Ok(t) => p.table(&fields, t),
                Err(e) => {
                    p.finish_ditto();
                    return Err((p.out, e));
                }
            }
        }
        p.finish_ditto();
        Ok(p.out)
    }
}

/// What `ovs-ofctl -O OpenFlow13 dump-table-features` writes for a switch
/// that answers with `tables` (all parts of the reply, in order), without
/// the final newline; `Err` is the name of the decode error ovs-ofctl
/// reports instead (it then prints nothing).
pub fn ofctl_dump(tables: &[TableFeatures]) -> Result<String, &'static str> {
    let out = Printer::run(tables).map_err(|(_, e)| e)?;
    Ok(out.strip_prefix('\n').unwrap_or(&out).to_string())
}

/// The body of a table features request or reply message, as ovs-ofctl
/// prints one message: the tables, then any decode error as
/// `***decode error: NAME***` (without the hex dump ovs-ofctl adds).
pub fn message_body(tables: &[TableFeatures]) -> String {
    match Printer::run(tables) {
        Ok(s) => s.trim_end_matches(' ').to_string(),
        Err((mut s, e)) => {
            if !s.is_empty() && !s.ends_with('\n') {
                s.push('\n');
            }
            if s.is_empty() {
                s.push(' ');
            }
            let _ = write!(s, "***decode error: {e}***");
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multipart::table_features::OxmId;
    use crate::oxm::OxmHeader;

    fn condensed(names: &[&str]) -> String {
        let mut s = String::new();
        condense(&mut s, names, 0);
        s
    }

    #[test]
    fn names_condense_by_prefix_and_by_number() {
        assert_eq!(condensed(&["eth_src", "eth_dst", "eth_type"]), "eth_{src,dst,type}");
        assert_eq!(condensed(&["reg0", "reg1", "reg2", "reg3"]), "reg0...reg3");
        // Two numbered names are not a run.
        assert_eq!(condensed(&["x0", "x1"]), "x0 x1");
        assert_eq!(condensed(&["reg9", "reg10", "reg11"]), "reg9...reg11");
        // Nested prefixes, and a numbered run inside a group.
        assert_eq!(
            condensed(&["tun_id", "tun_ipv6_src", "tun_ipv6_dst", "tun_m0", "tun_m1", "tun_m2"]),
            "tun_{id,ipv6_{src,dst},m0...m2}"
        );
        assert_eq!(condensed(&["metadata", "in_port", "ip_dscp"]), "metadata in_port ip_dscp");
        assert_eq!(condensed(&[]), "");
        // Odd names never panic.
        assert_eq!(condensed(&["a_b_c", "a_b_d", "a_x"]), "a_b_{c,d,}");
    }

    fn basic(field: u8, mask: bool, len: u8) -> OxmId {
        OxmId::new(OxmHeader::new(0x8000, field, mask, len))
    }

    /// A table with every required property; `next` its next tables.
    fn table(id: u8, next: Vec<u8>, instr: Vec<u16>) -> TableFeatures {
        let ids = |v: &[u16]| v.iter().map(|&t| FeatureId::Type(t)).collect::<Vec<_>>();
        TableFeatures {
            table_id: id,
            max_entries: 100,
            properties: vec![
                TableFeatureProp::Instructions { miss: false, ids: ids(&instr) },
                TableFeatureProp::NextTables { miss: false, tables: next },
                TableFeatureProp::WriteActions { miss: false, ids: ids(&[0, 22]) },
                TableFeatureProp::ApplyActions { miss: false, ids: ids(&[0, 17, 18, 25]) },
                TableFeatureProp::Match(vec![
                    basic(4, true, 12),
                    basic(3, false, 6),
                    basic(5, false, 2),
                    basic(0, false, 4),
                    // Wrong length: not Open vSwitch's eth_type, skipped.
                    basic(5, false, 3),
                ]),
                TableFeatureProp::Wildcards(vec![basic(5, false, 2)]),
                TableFeatureProp::WriteSetfield { miss: false, ids: vec![] },
                TableFeatureProp::ApplySetfield {
                    miss: false,
                    ids: vec![basic(4, false, 6), basic(3, false, 6)],
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn tables_are_reduced_and_compared_as_ovs_ofctl_does() {
        let mut v = vec![table(0, vec![1, 2, 3], vec![1, 4, 6])];
        v.push(table(1, vec![2, 3], vec![1, 4, 6]));
        v.push(table(2, vec![3], vec![1, 4, 6]));
        v.push(table(3, vec![], vec![4, 6]));
        assert_eq!(
            ofctl_dump(&v).unwrap(),
            "  table 0:\n    max_entries=100\n    instructions (table miss and others):\n      \
             next tables: 1-3\n      instructions: meter apply_actions goto_table\n      \
             Write-Actions features:\n        actions: output group\n      \
             Apply-Actions features:\n        actions: output set_field strip_vlan push_vlan\n        \
             supported on Set-Field: eth_{src,dst}\n    matching:\n      \
             arbitrary mask: eth_src\n      exact match or wildcard: eth_type\n      \
             must exact match: in_port_oxm eth_dst\n\
             \n  tables 1...2: ditto\n\
             \n  table 3:\n    max_entries=100\n    instructions (table miss and others):\n      \
             instructions: meter apply_actions\n      Write-Actions features:\n        \
             actions: output group\n      Apply-Actions features:\n        \
             actions: output set_field strip_vlan push_vlan\n        \
             supported on Set-Field: eth_{src,dst}\n    (same matching)\n"
        );
        // A named table is never part of a run.
        v[1].name = "one".into();
        let s = ofctl_dump(&v).unwrap();
        assert!(s.contains("\n  table 1 (\"one\"): ditto\n  table 2: ditto\n"), "{s}");
    }

    #[test]
    fn undecodable_tables_give_ovs_ofctls_error() {
        let mut t = table(0, vec![1], vec![1]);
        t.properties.remove(0);
        assert_eq!(ofctl_dump(&[t]), Err("OFPTFFC_BAD_FEATURES"));
        let t = table(0, vec![255], vec![1]);
        assert_eq!(ofctl_dump(&[t]), Err("OFPBPC_BAD_VALUE"));
        let mut t = table(0, vec![1], vec![1]);
        t.properties[5] = TableFeatureProp::Wildcards(vec![basic(4, true, 12)]);
        assert_eq!(ofctl_dump(&[t.clone()]), Err("OFPBMC_BAD_MASK"));
        let body = message_body(&[table(0, vec![1], vec![1]), t]);
        assert!(
            body.starts_with("\n  table 0:")
                && body.ends_with("\n***decode error: OFPBMC_BAD_MASK***")
        );
    }
}
