//! TABLE_FEATURES set requests: reconfiguring the flow tables (OpenFlow
//! 1.3.5 §7.3.5.18).
//!
//! A TABLE_FEATURES multipart request with a body describes the whole
//! pipeline the controller wants: per table its name, `max_entries`,
//! metadata bits, config and properties (match fields, wildcards,
//! instructions, next tables, actions and set-fields, each also for the
//! table-miss entry). [`Pipeline::set_table_features`] checks the request
//! as a whole and then applies it, or refuses it and changes nothing.
//!
//! ## What a set request means here
//! - The request replaces the description of every table. Tables it does
//!   not list are removed: flow-mods, flow stats and table-mods naming
//!   them are refused as for a table that does not exist, table stats and
//!   table features leave them out, and their capacity becomes 0. Table 0
//!   must be listed (every packet starts there).
//! - Every flow entry of every table is removed (with FLOW_REMOVED,
//!   reason DELETE, for entries that asked for it): entries installed
//!   under the old description may break the new one, and a controller
//!   that reconfigures tables reinstalls its flows (Faucet deletes all
//!   flows right after its request). Groups and meters stay.
//! - A property left out of a table allows nothing of its kind (no match
//!   field, no instruction, …), except the `_MISS` variants: a missing
//!   `_MISS` property means the table-miss entry may use what the regular
//!   property allows. An empty property allows nothing.
//! - The reply is the new description, exactly what a query (an empty
//!   request) answers from then on, with every property written out.
//!
//! ## Enforced on later FLOW_MODs (add and modify; deletes only need the
//! table to exist). "miss" lists apply to a flow-mod for the table-miss
//! entry (priority 0, empty match).
//! - a match field not in `MATCH`: `OFPBMC_BAD_FIELD`; masked where the
//!   `MATCH` id has no mask: `OFPBMC_BAD_MASK`; a `MATCH` field that is not
//!   in `WILDCARDS` left out or masked: `OFPBMC_BAD_WILDCARDS` (not for the
//!   table-miss entry, which by definition wildcards everything); metadata
//!   mask bits outside `metadata_match`: `OFPBMC_BAD_MASK`;
//! - an instruction type not in `INSTRUCTIONS[_MISS]`: `OFPBIC_UNSUP_INST`;
//!   a goto to a table not in `NEXT_TABLES[_MISS]`: `OFPBIC_BAD_TABLE_ID`;
//!   write-metadata mask bits outside `metadata_write`:
//!   `OFPBIC_UNSUP_METADATA_MASK`;
//! - an action type not in `APPLY_ACTIONS[_MISS]` (apply-actions) or
//!   `WRITE_ACTIONS[_MISS]` (write-actions): `OFPBAC_BAD_TYPE`; a set-field
//!   of a field not in `APPLY_SETFIELD[_MISS]` / `WRITE_SETFIELD[_MISS]`:
//!   `OFPBAC_BAD_SET_TYPE`;
//! - more entries than `max_entries`: `OFPFMFC_TABLE_FULL`.
//!
//! ## Refusals (`OFPET_TABLE_FEATURES_FAILED`), checked before anything
//! changes; [`TfmRefusal`] carries the code and a text naming the table,
//! property and id at fault.
//! - `OFPTFFC_BAD_LEN`: the parser's (property and id lengths);
//! - `OFPTFFC_BAD_TABLE`: table id 255 or past the switch's table count, a
//!   table listed twice, table 0 missing;
//! - `OFPTFFC_BAD_TYPE`: an unknown property type, or an experimenter
//!   property (sluice defines none);
//! - `OFPTFFC_BAD_METADATA`: `MATCH` lists metadata while `metadata_match`
//!   is 0, or `WRITE_METADATA` is allowed while `metadata_write` is 0;
//! - `OFPTFFC_BAD_ARGUMENT`: a property given twice; a match, wildcard or
//!   set-field id sluice cannot match or write (unknown field, a mask on a
//!   field that takes none, an experimenter field without an extension, a
//!   wildcard not in `MATCH`); an instruction or action type sluice does not
//!   implement; a next table that is not after the table or not listed;
//!   `max_entries` above the switch's per-table limit; config bits other
//!   than `OFPTC_DEPRECATED_MASK`;
//! - `OFPTFFC_EPERM`: a front end replaced the OpenFlow table sequence with
//!   a graph of its own (a P4 program): its tables are not OpenFlow's to
//!   reconfigure.

use std::fmt;
use std::sync::Arc;

use crate::stats::{settable_fields, ACTIONS};
use crate::Pipeline;
use sluice_core::graph::Graph;
use sluice_core::upcall::Removal;
use sluice_ofp::action::Action;
use sluice_ofp::consts::table_id;
use sluice_ofp::error::ErrorCode;
use sluice_ofp::instruction::{ty as it, Instruction};
use sluice_ofp::message::FlowMod;
use sluice_ofp::multipart::table_features::{FeatureId, OxmId, TableFeatureProp, TableFeatures};
use sluice_ofp::oxm::{FieldId, Match, Oxm, OxmHeader, OFPXMC_EXPERIMENTER};

/// `OFPTC_DEPRECATED_MASK`: the only table config bits 1.3 defines.
const TABLE_CONFIG_BITS: u32 = 3;

/// A refused set request: the error code and what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TfmRefusal {
    pub code: ErrorCode,
    pub why: String,
}

impl fmt::Display for TfmRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.code, self.why)
    }
}

impl std::error::Error for TfmRefusal {}

fn refuse<T>(code: ErrorCode, why: String) -> Result<T, TfmRefusal> {
    Err(TfmRefusal { code, why })
}

/// One table as a set request configured it. Lists indexed `[regular,
/// table-miss]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableProfile {
    pub table_id: u8,
    pub name: String,
    pub metadata_match: u64,
    pub metadata_write: u64,
    pub config: u32,
    pub max_entries: u32,
    pub instructions: [Vec<FeatureId>; 2],
    pub next_tables: [Vec<u8>; 2],
    pub write_actions: [Vec<FeatureId>; 2],
    pub apply_actions: [Vec<FeatureId>; 2],
    pub matches: Vec<OxmId>,
    pub wildcards: Vec<OxmId>,
    pub write_setfield: [Vec<OxmId>; 2],
    pub apply_setfield: [Vec<OxmId>; 2],
}

/// The tables a set request configured, by table id (ascending).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profiles {
    tables: Vec<TableProfile>,
}

impl Profiles {
    pub fn get(&self, table: u8) -> Option<&TableProfile> {
        self.tables.binary_search_by_key(&table, |t| t.table_id).ok().map(|i| &self.tables[i])
    }

    pub fn contains(&self, table: u8) -> bool {
        self.get(table).is_some()
    }

    pub fn iter(&self) -> impl Iterator<Item = &TableProfile> {
        self.tables.iter()
    }
}

/// The basic field an OXM id names, if it is one.
fn basic(id: &OxmId) -> Option<FieldId> {
    id.header.basic_field()
}

fn oxm_name(id: &OxmId) -> String {
    match basic(id) {
        Some(f) => format!("{}{}", f.spec_name(), if id.header.has_mask() { "/mask" } else { "" }),
        None => format!("OXM header {:#010x}", id.header.0),
    }
}

fn feature_name(id: &FeatureId) -> String {
    match id {
        FeatureId::Type(t) => format!("type {t}"),
        FeatureId::Experimenter { experimenter, .. } => format!("experimenter {experimenter:#x}"),
    }
}

impl TableProfile {
    /// Check one table of a request (against the switch `p` and the set of
    /// listed tables) and build its profile.
    fn from_request(
        p: &Pipeline,
        t: &TableFeatures,
        listed: &[u8],
    ) -> Result<TableProfile, TfmRefusal> {
        let id = t.table_id;
        let arg = |why: String| refuse(ErrorCode::TFFC_BAD_ARGUMENT, format!("table {id}: {why}"));
        let mut seen = Vec::new();
        let mut prof = TableProfile {
            table_id: id,
            name: t.name.clone(),
            metadata_match: t.metadata_match,
            metadata_write: t.metadata_write,
            config: t.config,
            max_entries: t.max_entries,
            instructions: Default::default(),
            next_tables: Default::default(),
            write_actions: Default::default(),
            apply_actions: Default::default(),
            matches: Vec::new(),
            wildcards: Vec::new(),
            write_setfield: Default::default(),
            apply_setfield: Default::default(),
        };
        if t.config & !TABLE_CONFIG_BITS != 0 {
            return arg(format!(
                "config {:#x} has bits other than OFPTC_DEPRECATED_MASK",
                t.config
            ));
        }
        let limit = p.cfg.max_flows_per_table;
        if t.max_entries as usize > limit {
            return arg(format!("max_entries {} above the switch's {limit}", t.max_entries));
        }
        for prop in &t.properties {
            let ty = prop.prop_type();
            if !prop.is_known() || matches!(prop, TableFeatureProp::Experimenter { .. }) {
                return refuse(
                    ErrorCode::TFFC_BAD_TYPE,
                    format!("table {id}: property type {ty:#x} is not one sluice knows"),
                );
            }
            if seen.contains(&ty) {
                return arg(format!("property type {ty} given twice"));
            }
            seen.push(ty);
            let m = |miss: bool| usize::from(miss);
            match prop {
                TableFeatureProp::Instructions { miss, ids } => {
                    for i in ids {
                        if !p.instruction_supported(i) {
                            return arg(format!("instruction {} not supported", feature_name(i)));
                        }
                    }
                    prof.instructions[m(*miss)] = ids.clone();
                }
                TableFeatureProp::NextTables { miss, tables } => {
                    for &n in tables {
                        if n <= id {
                            return arg(format!("next table {n} is not after table {id}"));
                        }
                        if !listed.contains(&n) {
                            return arg(format!("next table {n} is not in the request"));
                        }
                    }
                    prof.next_tables[m(*miss)] = tables.clone();
                }
                TableFeatureProp::WriteActions { miss, ids }
                | TableFeatureProp::ApplyActions { miss, ids } => {
                    for a in ids {
                        if !p.action_supported(a) {
                            return arg(format!("action {} not supported", feature_name(a)));
                        }
                    }
                    if matches!(prop, TableFeatureProp::WriteActions { .. }) {
                        prof.write_actions[m(*miss)] = ids.clone();
                    } else {
                        prof.apply_actions[m(*miss)] = ids.clone();
                    }
                }
                TableFeatureProp::Match(ids) => {
                    for o in ids {
                        if !p.oxm_matchable(o) {
                            return arg(format!("match field {} cannot be matched", oxm_name(o)));
                        }
                    }
                    prof.matches = ids.clone();
                }
                TableFeatureProp::Wildcards(ids) => prof.wildcards = ids.clone(),
                TableFeatureProp::WriteSetfield { miss, ids }
                | TableFeatureProp::ApplySetfield { miss, ids } => {
                    for o in ids {
                        let ok = !o.header.has_mask()
                            && basic(o).is_some_and(|f| settable_fields().any(|s| s == f));
                        if !ok {
                            return arg(format!("set-field {} cannot be written", oxm_name(o)));
                        }
                    }
                    if matches!(prop, TableFeatureProp::WriteSetfield { .. }) {
                        prof.write_setfield[m(*miss)] = ids.clone();
                    } else {
                        prof.apply_setfield[m(*miss)] = ids.clone();
                    }
                }
                TableFeatureProp::Experimenter { .. } | TableFeatureProp::Unknown { .. } => {}
            }
        }
        if prof.metadata_match == 0
            && prof.matches.iter().any(|o| basic(o) == Some(FieldId::Metadata))
        {
            return refuse(
                ErrorCode::TFFC_BAD_METADATA,
                format!("table {id}: MATCH lists metadata but metadata_match is 0"),
            );
        }
        let wm = FeatureId::Type(it::WRITE_METADATA);
        if prof.metadata_write == 0 && prof.instructions.iter().any(|v| v.contains(&wm)) {
            return refuse(
                ErrorCode::TFFC_BAD_METADATA,
                format!("table {id}: WRITE_METADATA allowed but metadata_write is 0"),
            );
        }
        // A `_MISS` property left out: the table-miss entry may use what
        // the regular one allows.
        let has = |ty: u16| seen.contains(&ty);
        use sluice_ofp::multipart::table_features::prop_type as pt;
        if !has(pt::INSTRUCTIONS_MISS) {
            prof.instructions[1] = prof.instructions[0].clone();
        }
        if !has(pt::NEXT_TABLES_MISS) {
            prof.next_tables[1] = prof.next_tables[0].clone();
        }
        if !has(pt::WRITE_ACTIONS_MISS) {
            prof.write_actions[1] = prof.write_actions[0].clone();
        }
        if !has(pt::APPLY_ACTIONS_MISS) {
            prof.apply_actions[1] = prof.apply_actions[0].clone();
        }
        if !has(pt::WRITE_SETFIELD_MISS) {
            prof.write_setfield[1] = prof.write_setfield[0].clone();
        }
        if !has(pt::APPLY_SETFIELD_MISS) {
            prof.apply_setfield[1] = prof.apply_setfield[0].clone();
        }
        for w in &prof.wildcards {
            if !prof
                .matches
                .iter()
                .any(|m| basic(m) == basic(w) && m.header.class() == w.header.class())
            {
                return arg(format!("wildcard {} is not a match field", oxm_name(w)));
            }
        }
        Ok(prof)
    }

    /// The table's description as a TABLE_FEATURES entry, every property
    /// written out.
    pub fn to_features(&self) -> TableFeatures {
        let mut props = Vec::new();
        for miss in [false, true] {
            let i = usize::from(miss);
            props.push(TableFeatureProp::Instructions { miss, ids: self.instructions[i].clone() });
            props.push(TableFeatureProp::NextTables { miss, tables: self.next_tables[i].clone() });
            props.push(TableFeatureProp::WriteActions { miss, ids: self.write_actions[i].clone() });
            props.push(TableFeatureProp::ApplyActions { miss, ids: self.apply_actions[i].clone() });
        }
        props.push(TableFeatureProp::Match(self.matches.clone()));
        props.push(TableFeatureProp::Wildcards(self.wildcards.clone()));
        for miss in [false, true] {
            let i = usize::from(miss);
            props.push(TableFeatureProp::WriteSetfield {
                miss,
                ids: self.write_setfield[i].clone(),
            });
            props.push(TableFeatureProp::ApplySetfield {
                miss,
                ids: self.apply_setfield[i].clone(),
            });
        }
        TableFeatures {
            table_id: self.table_id,
            name: self.name.clone(),
            metadata_match: self.metadata_match,
            metadata_write: self.metadata_write,
            config: self.config,
            max_entries: self.max_entries,
            properties: props,
        }
    }

    /// Check an ADD or MODIFY flow-mod against the table's description.
    fn check_flow_mod(&self, fm: &FlowMod) -> Result<(), ErrorCode> {
        let miss = usize::from(fm.priority == 0 && fm.r#match.is_empty());
        self.check_match(&fm.r#match, miss == 1)?;
        for ins in &fm.instructions {
            let id = match ins {
                Instruction::Experimenter { experimenter, .. } => {
                    if !self.instructions[miss].iter().any(|i| {
                        matches!(i, FeatureId::Experimenter { experimenter: e, .. } if e == experimenter)
                    }) {
                        return Err(ErrorCode::BIC_UNSUP_INST);
                    }
                    continue;
                }
                other => FeatureId::Type(other.type_code()),
            };
            if !self.instructions[miss].contains(&id) {
                return Err(ErrorCode::BIC_UNSUP_INST);
            }
            match ins {
                Instruction::GotoTable(t) if !self.next_tables[miss].contains(t) => {
                    return Err(ErrorCode::BIC_BAD_TABLE_ID)
                }
                Instruction::WriteMetadata { mask, .. } if mask & !self.metadata_write != 0 => {
                    return Err(ErrorCode::BIC_UNSUP_METADATA_MASK)
                }
                Instruction::ApplyActions(a) => {
                    check_actions(a, &self.apply_actions[miss], &self.apply_setfield[miss])?
                }
                Instruction::WriteActions(a) => {
                    check_actions(a, &self.write_actions[miss], &self.write_setfield[miss])?
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn check_match(&self, m: &Match, table_miss: bool) -> Result<(), ErrorCode> {
        for o in &m.oxms {
            let allowed = self.matches.iter().filter(|id| same_field(id, o));
            let mut any = false;
            let mut maskable = false;
            for id in allowed {
                any = true;
                maskable |= id.header.has_mask();
            }
            if !any {
                return Err(ErrorCode::BMC_BAD_FIELD);
            }
            if o.has_mask() && !maskable {
                return Err(ErrorCode::BMC_BAD_MASK);
            }
            if let Oxm::Basic { field: FieldId::Metadata, mask, .. } = o {
                let mask = mask.map_or(u64::MAX, |m| m.to_u128() as u64);
                if mask & !self.metadata_match != 0 {
                    return Err(ErrorCode::BMC_BAD_MASK);
                }
            }
        }
        if table_miss {
            return Ok(());
        }
        // Fields that may not be wildcarded: present, and exact.
        for id in &self.matches {
            if self.wildcards.iter().any(|w| same_id_field(w, id)) {
                continue;
            }
            match m.oxms.iter().find(|o| same_field(id, o)) {
                Some(o) if !o.has_mask() => {}
                _ => return Err(ErrorCode::BMC_BAD_WILDCARDS),
            }
        }
        Ok(())
    }
}

/// Whether OXM id `id` names the field of `o` (mask aside).
fn same_field(id: &OxmId, o: &Oxm) -> bool {
    let h = o.header();
    id.header.class() == h.class()
        && id.header.field() == h.field()
        && match o {
            Oxm::Experimenter { experimenter, .. } => id.experimenter == Some(*experimenter),
            _ => true,
        }
}

fn same_id_field(a: &OxmId, b: &OxmId) -> bool {
    a.header.class() == b.header.class()
        && a.header.field() == b.header.field()
        && a.experimenter == b.experimenter
}

fn check_actions(actions: &[Action], ids: &[FeatureId], set: &[OxmId]) -> Result<(), ErrorCode> {
    for a in actions {
        let ok = match a {
            Action::Experimenter { experimenter, .. } => ids.iter().any(
                |i| matches!(i, FeatureId::Experimenter { experimenter: e, .. } if e == experimenter),
            ),
            other => ids.contains(&FeatureId::Type(other.type_code())),
        };
        if !ok {
            return Err(ErrorCode::BAC_BAD_TYPE);
        }
        if let Action::SetField(o) = a {
            if !set.iter().any(|id| same_field(id, o)) {
                return Err(ErrorCode::BAC_BAD_SET_TYPE);
            }
        }
    }
    Ok(())
}

impl Pipeline {
    fn instruction_supported(&self, i: &FeatureId) -> bool {
        match i {
            FeatureId::Type(t) => (it::GOTO_TABLE..=it::METER).contains(t),
            FeatureId::Experimenter { experimenter, .. } => {
                self.cfg.extensions.get(*experimenter).is_some()
            }
        }
    }

    fn action_supported(&self, a: &FeatureId) -> bool {
        match a {
            FeatureId::Type(t) => ACTIONS.contains(t),
            FeatureId::Experimenter { experimenter, .. } => {
                self.cfg.extensions.get(*experimenter).is_some()
                    || *experimenter == sluice_ofp::fieldcopy::NX_EXPERIMENTER_ID
                    || *experimenter == sluice_ofp::fieldcopy::ONF_EXPERIMENTER_ID
            }
        }
    }

    fn oxm_matchable(&self, o: &OxmId) -> bool {
        if o.header.class() == OFPXMC_EXPERIMENTER {
            return o.experimenter.is_some_and(|e| self.cfg.extensions.get(e).is_some());
        }
        match basic(o) {
            Some(f) => !o.header.has_mask() || f.maskable(),
            None => false,
        }
    }

    /// The configured tables, if a set request replaced the defaults.
    pub fn table_profiles(&self) -> Option<&Profiles> {
        self.profiles.as_deref()
    }

    /// Whether table `t` exists: below the table count and, after a set
    /// request, listed by it.
    pub fn table_exists(&self, t: u8) -> bool {
        t < self.cfg.n_tables && self.profiles.as_ref().is_none_or(|p| p.contains(t))
    }

    /// Apply a TABLE_FEATURES set request (see the module docs). On
    /// success every flow entry is gone and the new description is
    /// returned; on refusal nothing changed.
    pub fn set_table_features(
        &mut self,
        req: &[TableFeatures],
    ) -> Result<Vec<TableFeatures>, TfmRefusal> {
        if *self.graph != Graph::tables(self.cfg.n_tables) {
            return refuse(
                ErrorCode::TFFC_EPERM,
                "the tables belong to another front end's pipeline graph".into(),
            );
        }
        let mut listed: Vec<u8> = Vec::with_capacity(req.len());
        for t in req {
            if t.table_id == table_id::ALL || t.table_id >= self.cfg.n_tables {
                return refuse(
                    ErrorCode::TFFC_BAD_TABLE,
                    format!(
                        "table {} does not exist (the switch has {})",
                        t.table_id, self.cfg.n_tables
                    ),
                );
            }
            if listed.contains(&t.table_id) {
                return refuse(
                    ErrorCode::TFFC_BAD_TABLE,
                    format!("table {} listed twice", t.table_id),
                );
            }
            listed.push(t.table_id);
        }
        if !listed.contains(&0) {
            return refuse(
                ErrorCode::TFFC_BAD_TABLE,
                "table 0 is not listed (every packet starts there)".into(),
            );
        }
        let mut tables = req
            .iter()
            .map(|t| TableProfile::from_request(self, t, &listed))
            .collect::<Result<Vec<_>, _>>()?;
        tables.sort_by_key(|t| t.table_id);
        let profiles = Profiles { tables };
        for t in 0..self.tables.len() {
            let removed = self.tables[t].remove_where(|_| true);
            self.flows_removed(t as u8, removed, Removal::Deleted);
            let p = profiles.get(t as u8);
            self.tables[t].max_entries = p.map_or(0, |p| p.max_entries as usize);
            self.tables[t].config = p.map_or(0, |p| p.config);
        }
        let reply = profiles.iter().map(TableProfile::to_features).collect();
        self.profiles = Some(Arc::new(profiles));
        self.tables_changed();
        Ok(reply)
    }

    /// Check a flow-mod against the configured tables: the table must
    /// exist (`OFPFMFC_BAD_TABLE_ID`), and an ADD or MODIFY must keep to
    /// its description (see the module docs). Nothing to check before a
    /// set request.
    pub(crate) fn check_table_profile(&self, fm: &FlowMod) -> Result<(), ErrorCode> {
        let Some(profiles) = &self.profiles else { return Ok(()) };
        if fm.table_id == table_id::ALL {
            return Ok(());
        }
        let Some(p) = profiles.get(fm.table_id) else {
            return Err(ErrorCode::FMFC_BAD_TABLE_ID);
        };
        use sluice_ofp::message::flow_mod_command as cmd;
        if matches!(fm.command, cmd::ADD | cmd::MODIFY | cmd::MODIFY_STRICT) {
            p.check_flow_mod(fm)?;
        }
        Ok(())
    }
}

/// The header of an OXM id for a basic field (for tests and callers
/// building requests).
pub fn oxm_id(field: FieldId, has_mask: bool) -> OxmId {
    OxmId::new(OxmHeader::basic(field, has_mask))
}
