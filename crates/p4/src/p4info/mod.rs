//! P4Info: the control-plane description of a v1model program, as the
//! P4Runtime specification defines it (`p4/config/v1/p4info.proto`),
//! with the ids p4c assigns, so a controller written against p4c's
//! P4Info works unchanged against sluice.
//!
//! # What
//!
//! [`P4Info::build`] walks the front end's syntax tree from `main` (a
//! `V1Switch`) and produces the [`P4Info`] model; [`text::print`] prints it
//! as text protobuf in p4c's layout (fields in field-number order, proto3
//! defaults omitted, bytes C-escaped). `sluice p4 info PROG.p4` is the
//! front door.
//!
//! # Names (what p4c's front end makes of them)
//!
//! - A control's declarations are named `Control.decl` after the
//!   control's *declaration* name (`HierarchicalNames`); an `@name("x")`
//!   replaces `decl`, an `@name(".x")` is absolute (`x`).
//! - A nested control instance `C() c;` (or a direct `C.apply()`, which
//!   instantiates `C` under the name `C`) prefixes its declarations with
//!   the instance's name (inlining): `cIngress.E.c1.stats`.
//! - A top-level action keeps its own name (`NoAction`), wherever used.
//! - Actions are those that survive p4c's front end: every action a
//!   table lists or the control body calls directly (one only called
//!   from other actions is inlined away). A directly called action loses
//!   all its parameters, a table's action keeps its directionless ones.
//! - What a constant condition (`if (false)`, `false ? a : b`, `false
//!   && e`) leaves out is left out, as p4c's constant folding removes it
//!   before anything is named.
//! - Tables are those the control applies. A table without
//!   `default_action` gets `NoAction` as its (non-const) default and, if
//!   it does not list it, a `@defaultonly NoAction` action reference.
//! - Key names: an `@name` on the key element, else the expression as
//!   written with `isValid()` as `$valid$` (`hdr.u.short.$valid$`),
//!   `a[i]`, `a[h:l]` and `a & b`; anything else must carry `@name`.
//! - A digest is named after its data's type; a controller header's
//!   preamble carries the `@controller_header` name, its id hashes the
//!   header type's name.
//!
//! # Ids
//!
//! An id is the resource type's prefix (the spec's `P4Ids.Prefix`:
//! actions 0x01, tables 0x02, value sets 0x03, controller headers 0x04,
//! counters 0x12, direct counters 0x13, meters 0x14, direct meters
//! 0x15, registers 0x16, digests 0x17) in the top byte and 24 bits
//! below it: an `@id(n)` (its top byte, if set, must be the prefix), else
//! the low 24 bits of the Jenkins one-at-a-time hash of the fully
//! qualified name, names of one type hashed in byte order and a taken
//! id probed linearly to the next free one, after every `@id` is
//! placed. Aliases are the shortest dot-separated suffix that no other
//! symbol (of any type) shares. Match fields, action parameters and
//! controller-header fields are numbered 1, 2, ... in order, `@id`s
//! first and skipped.
//!
//! # Not handled (refused at their span, never guessed)
//!
//! Value sets, action profiles and selectors (`implementation`),
//! user-defined types (`type`, enums) as key, parameter or register
//! types, generic controls, extern instances at top level, key
//! expressions it cannot type. Annotations are copied as written in
//! the source (p4c prints them back from its syntax tree, which agrees
//! for the usual forms `@defaultonly`, `@noWarn("unused")`).

mod build;
pub mod text;

/// The id prefixes of `P4Ids.Prefix` (p4info.proto).
pub mod prefix {
    pub const ACTION: u8 = 0x01;
    pub const TABLE: u8 = 0x02;
    pub const VALUE_SET: u8 = 0x03;
    pub const CONTROLLER_HEADER: u8 = 0x04;
    pub const COUNTER: u8 = 0x12;
    pub const DIRECT_COUNTER: u8 = 0x13;
    pub const METER: u8 = 0x14;
    pub const DIRECT_METER: u8 = 0x15;
    pub const REGISTER: u8 = 0x16;
    pub const DIGEST: u8 = 0x17;
}

use std::collections::BTreeMap;

/// `p4.config.v1.P4Info`, the parts a v1model program produces.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct P4Info {
    /// `pkg_info.arch`.
    pub arch: String,
    pub tables: Vec<Table>,
    pub actions: Vec<Action>,
    pub counters: Vec<Counter>,
    pub direct_counters: Vec<DirectCounter>,
    pub meters: Vec<Meter>,
    pub direct_meters: Vec<DirectMeter>,
    pub controller_packet_metadata: Vec<ControllerPacketMetadata>,
    pub registers: Vec<Register>,
    pub digests: Vec<Digest>,
    /// `None` when p4c would leave the message unset (it sets it, maybe
    /// empty, as soon as a table, an extern instance or an extern
    /// function call in a control is seen).
    pub type_info: Option<TypeInfo>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Preamble {
    pub id: u32,
    pub name: String,
    pub alias: String,
    pub annotations: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub preamble: Preamble,
    pub match_fields: Vec<MatchField>,
    pub action_refs: Vec<ActionRef>,
    /// 0 unless the default action is `const`.
    pub const_default_action_id: u32,
    pub initial_default_action: Option<TableActionCall>,
    pub direct_resource_ids: Vec<u32>,
    pub size: i64,
    /// `support_timeout = true` (NOTIFY_CONTROL).
    pub idle_timeout_notify: bool,
    pub is_const_table: bool,
    pub has_initial_entries: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MatchField {
    pub id: u32,
    pub name: String,
    pub annotations: Vec<String>,
    pub bitwidth: i32,
    pub match_type: MatchType,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatchType {
    Exact,
    Lpm,
    Ternary,
    Range,
    Optional,
    /// A match kind P4Info has no enumerator for (`other_match_type`).
    Other(String),
}

impl MatchType {
    pub fn proto_name(&self) -> &str {
        match self {
            MatchType::Exact => "EXACT",
            MatchType::Lpm => "LPM",
            MatchType::Ternary => "TERNARY",
            MatchType::Range => "RANGE",
            MatchType::Optional => "OPTIONAL",
            MatchType::Other(s) => s,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    TableAndDefault,
    TableOnly,
    DefaultOnly,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ActionRef {
    pub id: u32,
    pub scope: Scope,
    pub annotations: Vec<String>,
}

/// `TableActionCall`: an action with its arguments (`param_id`, bytes).
#[derive(Clone, Debug, PartialEq)]
pub struct TableActionCall {
    pub action_id: u32,
    pub arguments: Vec<(u32, Vec<u8>)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Action {
    pub preamble: Preamble,
    pub params: Vec<Param>,
}

/// An action parameter or a controller header's field.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub id: u32,
    pub name: String,
    pub annotations: Vec<String>,
    pub bitwidth: i32,
}

/// `CounterSpec.Unit` / `MeterSpec.Unit` (meters have no BOTH).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    Packets,
    Both,
}

impl Unit {
    pub fn proto_name(self) -> &'static str {
        match self {
            Unit::Bytes => "BYTES",
            Unit::Packets => "PACKETS",
            Unit::Both => "BOTH",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Counter {
    pub preamble: Preamble,
    pub unit: Unit,
    pub size: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DirectCounter {
    pub preamble: Preamble,
    pub unit: Unit,
    pub direct_table_id: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Meter {
    pub preamble: Preamble,
    pub unit: Unit,
    pub size: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DirectMeter {
    pub preamble: Preamble,
    pub unit: Unit,
    pub direct_table_id: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ControllerPacketMetadata {
    pub preamble: Preamble,
    pub metadata: Vec<Param>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Register {
    pub preamble: Preamble,
    pub type_spec: TypeSpec,
    pub size: i32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Digest {
    pub preamble: Preamble,
    pub type_spec: TypeSpec,
}

/// `P4DataTypeSpec`, the forms sluice produces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeSpec {
    Bit(u32),
    Int(u32),
    Varbit(u32),
    Bool,
    Error,
    Struct(String),
    Header(String),
}

/// `P4TypeInfo`: the structs and headers named by type specs, by name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TypeInfo {
    pub structs: BTreeMap<String, Vec<(String, TypeSpec)>>,
    pub headers: BTreeMap<String, Vec<(String, TypeSpec)>>,
}

impl P4Info {
    /// The P4Info of a loaded program (its `main` must be a `V1Switch`).
    pub fn build(loaded: &crate::parse::Loaded) -> crate::diag::Result<P4Info> {
        build::build(loaded)
    }
}

/// p4c's hash of a name (Jenkins' one-at-a-time hash).
pub fn name_hash(name: &str) -> u32 {
    let mut h: u32 = 0;
    for &b in name.as_bytes() {
        h = h.wrapping_add(b as u32);
        h = h.wrapping_add(h << 10);
        h ^= h >> 6;
    }
    h = h.wrapping_add(h << 3);
    h ^= h >> 11;
    h.wrapping_add(h << 15)
}

/// Shortest unique dot-separated suffixes over a set of names (p4c's
/// aliases): a trie of components from the right, counting the names
/// through each node.
#[derive(Default)]
pub struct Suffixes {
    names: std::collections::BTreeSet<String>,
    /// Node `i`'s children by component, and how many names pass.
    nodes: Vec<(BTreeMap<String, usize>, u32)>,
}

impl Suffixes {
    pub fn add(&mut self, name: &str) {
        if !self.names.insert(name.to_string()) {
            return;
        }
        if self.nodes.is_empty() {
            self.nodes.push(Default::default());
        }
        let mut node = 0;
        for c in name.rsplit('.') {
            let next = match self.nodes[node].0.get(c) {
                Some(&n) => n,
                None => {
                    self.nodes.push(Default::default());
                    let n = self.nodes.len() - 1;
                    self.nodes[node].0.insert(c.to_string(), n);
                    n
                }
            };
            node = next;
            self.nodes[node].1 += 1;
        }
    }

    /// The alias of `name` (itself if it was never added).
    pub fn alias(&self, name: &str) -> String {
        let comps: Vec<&str> = name.split('.').collect();
        let mut node = 0;
        let mut needed = 0;
        for c in comps.iter().rev() {
            let Some(&n) = self.nodes.get(node).and_then(|(e, _)| e.get(*c)) else {
                return name.to_string();
            };
            node = n;
            needed += 1;
            if self.nodes[node].1 < 2 {
                break;
            }
        }
        comps[comps.len() - needed..].join(".")
    }
}

/// Ids of a list of fields as p4c numbers them: `@id`s first, then
/// 1, 2, ... by position, skipping taken ones. `None` in `explicit` is
/// no `@id`; an explicit 0 or a duplicate is an error (the index).
pub fn field_ids(explicit: &[Option<u32>]) -> std::result::Result<Vec<u32>, usize> {
    let mut taken = std::collections::BTreeSet::new();
    for (i, e) in explicit.iter().enumerate() {
        if let Some(id) = e {
            if *id == 0 || !taken.insert(*id) {
                return Err(i);
            }
        }
    }
    let mut out = Vec::with_capacity(explicit.len());
    let mut index: u32 = 1;
    for e in explicit {
        match e {
            Some(id) => {
                out.push(*id);
                index = index.saturating_add(1);
            }
            None => {
                while taken.contains(&index) {
                    index = index.saturating_add(1);
                }
                taken.insert(index);
                out.push(index);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_matches_p4c_ids() {
        // Ids from p4c's P4Info of its STF samples.
        let id = |p: u8, n: &str| (p as u32) << 24 | (name_hash(n) & 0xff_ffff);
        assert_eq!(id(prefix::TABLE, "ingress.t"), 34728461);
        assert_eq!(id(prefix::ACTION, "NoAction"), 21257015);
        assert_eq!(id(prefix::COUNTER, "cIngress.E.c1.stats"), 314274935);
        assert_eq!(id(prefix::REGISTER, "IngressImpl.testRegister"), 377042504);
    }

    #[test]
    fn aliases_are_shortest_unique_suffixes() {
        let mut s = Suffixes::default();
        for n in ["d.a.c", "e.b.c", "x.t", "y.u", "c"] {
            s.add(n);
        }
        assert_eq!(s.alias("d.a.c"), "a.c");
        assert_eq!(s.alias("e.b.c"), "b.c");
        assert_eq!(s.alias("x.t"), "t");
        assert_eq!(s.alias("c"), "c");
    }

    #[test]
    fn field_ids_skip_explicit_ones() {
        assert_eq!(field_ids(&[None, None]), Ok(vec![1, 2]));
        assert_eq!(field_ids(&[None, Some(1), None]), Ok(vec![2, 1, 3]));
        assert_eq!(field_ids(&[Some(3), None, None]), Ok(vec![3, 2, 4]));
        assert_eq!(field_ids(&[Some(2), Some(2)]), Err(1));
        assert_eq!(field_ids(&[Some(0)]), Err(0));
    }
}
