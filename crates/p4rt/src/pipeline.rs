//! A forwarding pipeline as P4Runtime sees it: the P4 source (the
//! `p4_device_config`), the P4Info sluice builds from it, and the map from
//! P4Info's ids to the names the engine ([`sluice_p4::engines::Engine`])
//! answers to.
//!
//! P4Info and the engine name tables, actions and key elements alike
//! (both follow p4c's front end), so each P4Info table is paired with the
//! engine table of the same name (or one whose name is a dot-suffix of
//! the other), its match fields with the engine's key elements by
//! position, and each action with the table's action of the same name. A
//! P4Info object with no engine counterpart is left out of the map, and
//! using it is an error naming it, never a guess.

use std::collections::HashMap;

use sluice_p4::engines::Engine;
use sluice_p4::p4info::{self as model, P4Info};
use sluice_p4::parse::Loaded;
use sluice_p4::target::{Manage as _, MatchKind};
use tonic::Code;

use crate::convert::{self, P4Error, P4Result};
use crate::proto::p4::config::v1 as cfg;

/// A match field of a table.
#[derive(Clone, Debug)]
pub struct FieldMap {
    pub id: u32,
    pub name: String,
    /// The engine's key element name.
    pub engine_name: String,
    pub width: u32,
    pub kind: MatchKind,
}

/// An action a table may run.
#[derive(Clone, Debug)]
pub struct ActionUse {
    /// The engine's name for it in this table.
    pub engine_name: String,
    pub scope: model::Scope,
}

#[derive(Clone, Debug)]
pub struct TableMap {
    pub id: u32,
    pub name: String,
    pub engine_name: String,
    /// In P4Info order, which is the engine's key order.
    pub fields: Vec<FieldMap>,
    pub actions: HashMap<u32, ActionUse>,
    pub is_const: bool,
    pub const_default: bool,
    pub needs_priority: bool,
    pub initial_default: Option<model::TableActionCall>,
    /// `support_timeout = true`: entries may have idle timeouts
    /// ([`crate::idle`]).
    pub supports_timeout: bool,
}

impl TableMap {
    pub fn field(&self, id: u32) -> Option<&FieldMap> {
        self.fields.iter().find(|f| f.id == id)
    }
}

/// An action: its name and parameters `(id, name, width)`.
#[derive(Clone, Debug)]
pub struct ActionMap {
    pub name: String,
    pub params: Vec<(u32, String, u32)>,
}

/// A controller header's fields `(id, name, width)`, in header order.
pub type HeaderFields = Vec<(u32, String, u32)>;

/// An indexed extern (counter or register): its name and size.
#[derive(Clone, Debug)]
pub struct Indexed {
    pub name: String,
    pub size: i64,
    /// Registers: the cell width in bits.
    pub width: u32,
}

/// A loaded pipeline.
#[derive(Clone, Debug)]
pub struct Pipeline {
    /// The P4 source text, as given.
    pub source: Vec<u8>,
    pub info: P4Info,
    pub proto: cfg::P4Info,
    pub cookie: Option<u64>,
    pub tables: HashMap<u32, TableMap>,
    /// Table ids in P4Info order (reads answer in this order).
    pub table_order: Vec<u32>,
    pub actions: HashMap<u32, ActionMap>,
    pub counters: HashMap<u32, Indexed>,
    pub registers: HashMap<u32, Indexed>,
    /// Indexed meters (`width` unused).
    pub meters: HashMap<u32, Indexed>,
    /// Direct counters and direct meters: name and the table's id.
    pub direct_counters: HashMap<u32, (String, u32)>,
    pub direct_meters: HashMap<u32, (String, u32)>,
    pub packet_out: Option<HeaderFields>,
    pub packet_in: Option<HeaderFields>,
}

/// Whether two control-plane names denote the same object: equal, or
/// one a dot-separated suffix of the other.
pub(crate) fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim_start_matches('.'), b.trim_start_matches('.'));
    a == b || a.ends_with(&format!(".{b}")) || b.ends_with(&format!(".{a}"))
}

fn render(loaded: &Loaded, d: &sluice_p4::diag::Diagnostic) -> String {
    loaded.sources.render(d)
}

impl Pipeline {
    /// Compiles P4 source text into its pipeline and a fresh engine
    /// (`reference`: the interpreter even if the program compiles). A
    /// program sluice refuses is INVALID_ARGUMENT with its
    /// `file:line:col` diagnostic.
    pub fn compile(source: &[u8], reference: bool) -> P4Result<(Pipeline, Engine)> {
        let text = std::str::from_utf8(source).map_err(|e| {
            P4Error::invalid(format!("p4_device_config must be the P4-16 source text (UTF-8): {e}"))
        })?;
        if text.trim().is_empty() {
            return Err(P4Error::invalid(
                "p4_device_config is empty: it must be the P4-16 source text of the program",
            ));
        }
        let loaded = sluice_p4::parse::load_str("p4_device_config.p4", text)
            .map_err(|e| P4Error::invalid(e.render()))?;
        let (engine, _) =
            Engine::load(&loaded, reference).map_err(|d| P4Error::invalid(render(&loaded, &d)))?;
        let p = Pipeline::new(&loaded, source.to_vec(), &engine)?;
        Ok((p, engine))
    }

    /// The pipeline of a program already loaded on `engine`.
    pub fn new(loaded: &Loaded, source: Vec<u8>, engine: &Engine) -> P4Result<Pipeline> {
        let info = P4Info::build(loaded).map_err(|d| P4Error::invalid(render(loaded, &d)))?;
        let proto = convert::p4info(&info);
        let engine_tables = engine.tables();
        let actions: HashMap<u32, ActionMap> = info
            .actions
            .iter()
            .map(|a| {
                let params = a
                    .params
                    .iter()
                    .map(|p| (p.id, p.name.clone(), p.bitwidth.max(0) as u32))
                    .collect();
                (a.preamble.id, ActionMap { name: a.preamble.name.clone(), params })
            })
            .collect();
        let mut tables = HashMap::new();
        let mut table_order = Vec::new();
        for t in &info.tables {
            let Some(et) = engine_tables.iter().find(|e| same_name(&e.name, &t.preamble.name))
            else {
                continue;
            };
            if et.keys.len() != t.match_fields.len() {
                continue;
            }
            let fields = t
                .match_fields
                .iter()
                .zip(&et.keys)
                .map(|(f, k)| FieldMap {
                    id: f.id,
                    name: f.name.clone(),
                    engine_name: k.name.clone(),
                    width: f.bitwidth.max(0) as u32,
                    kind: k.kind,
                })
                .collect();
            let mut acts = HashMap::new();
            for r in &t.action_refs {
                let Some(a) = actions.get(&r.id) else { continue };
                if let Some(ea) = et.actions.iter().find(|ea| same_name(&ea.name, &a.name)) {
                    acts.insert(r.id, ActionUse { engine_name: ea.name.clone(), scope: r.scope });
                }
            }
            table_order.push(t.preamble.id);
            tables.insert(
                t.preamble.id,
                TableMap {
                    id: t.preamble.id,
                    name: t.preamble.name.clone(),
                    engine_name: et.name.clone(),
                    fields,
                    actions: acts,
                    is_const: t.is_const_table || et.const_entries,
                    const_default: t.const_default_action_id != 0 || et.const_default,
                    needs_priority: et.needs_priority(),
                    initial_default: t.initial_default_action.clone(),
                    supports_timeout: t.idle_timeout_notify,
                },
            );
        }
        let counters = info
            .counters
            .iter()
            .map(|c| {
                (c.preamble.id, Indexed { name: c.preamble.name.clone(), size: c.size, width: 0 })
            })
            .collect();
        let registers = info
            .registers
            .iter()
            .map(|r| {
                let width = match r.type_spec {
                    model::TypeSpec::Bit(w) | model::TypeSpec::Int(w) => w,
                    model::TypeSpec::Bool => 1,
                    _ => 0,
                };
                let i = Indexed { name: r.preamble.name.clone(), size: i64::from(r.size), width };
                (r.preamble.id, i)
            })
            .collect();
        let meters = info
            .meters
            .iter()
            .map(|m| {
                (m.preamble.id, Indexed { name: m.preamble.name.clone(), size: m.size, width: 0 })
            })
            .collect();
        let direct_counters = info
            .direct_counters
            .iter()
            .map(|c| (c.preamble.id, (c.preamble.name.clone(), c.direct_table_id)))
            .collect();
        let direct_meters = info
            .direct_meters
            .iter()
            .map(|m| (m.preamble.id, (m.preamble.name.clone(), m.direct_table_id)))
            .collect();
        let header = |name: &str| -> P4Result<Option<HeaderFields>> {
            let Some(h) = info.controller_packet_metadata.iter().find(|c| c.preamble.name == name)
            else {
                return Ok(None);
            };
            let fields: HeaderFields = h
                .metadata
                .iter()
                .map(|m| (m.id, m.name.clone(), m.bitwidth.max(0) as u32))
                .collect();
            let bits: u32 = fields.iter().map(|f| f.2).sum();
            if !bits.is_multiple_of(8) {
                return Err(P4Error::new(
                    Code::Unimplemented,
                    format!("@controller_header(\"{name}\") is {bits} bits, not whole bytes"),
                ));
            }
            Ok(Some(fields))
        };
        let packet_out = header("packet_out")?;
        let packet_in = header("packet_in")?;
        Ok(Pipeline {
            source,
            info,
            proto,
            cookie: None,
            tables,
            table_order,
            actions,
            counters,
            registers,
            meters,
            direct_counters,
            direct_meters,
            packet_out,
            packet_in,
        })
    }

    /// The table with this id: NOT_FOUND if P4Info has none, UNIMPLEMENTED
    /// if the engine has no counterpart.
    pub fn table(&self, id: u32) -> P4Result<&TableMap> {
        if let Some(t) = self.tables.get(&id) {
            return Ok(t);
        }
        match self.info.tables.iter().find(|t| t.preamble.id == id) {
            Some(t) => Err(P4Error::unimplemented(format!(
                "table `{}` (id {id}) has no counterpart in sluice's engine",
                t.preamble.name
            ))),
            None => Err(P4Error::not_found(format!("no table with id {id} in the P4Info"))),
        }
    }

    /// The id of the direct counter attached to table `table_id`.
    pub fn direct_counter_of(&self, table_id: u32) -> Option<u32> {
        self.direct_counters.iter().find(|(_, (_, t))| *t == table_id).map(|(id, _)| *id)
    }

    /// The id of the direct meter attached to table `table_id`.
    pub fn direct_meter_of(&self, table_id: u32) -> Option<u32> {
        self.direct_meters.iter().find(|(_, (_, t))| *t == table_id).map(|(id, _)| *id)
    }

    /// Checks a P4Info a client sent along with the source: every table and
    /// action it names must have the id and name sluice's P4Info gives it.
    pub fn check_client_p4info(&self, client: &cfg::P4Info) -> P4Result<()> {
        let ours: HashMap<u32, &str> = self
            .proto
            .tables
            .iter()
            .chain(std::iter::empty())
            .filter_map(|t| t.preamble.as_ref().map(|p| (p.id, p.name.as_str())))
            .chain(
                self.proto
                    .actions
                    .iter()
                    .filter_map(|a| a.preamble.as_ref().map(|p| (p.id, p.name.as_str()))),
            )
            .collect();
        let theirs = client
            .tables
            .iter()
            .filter_map(|t| t.preamble.as_ref())
            .chain(client.actions.iter().filter_map(|a| a.preamble.as_ref()));
        for p in theirs {
            match ours.get(&p.id) {
                Some(n) if *n == p.name => {}
                Some(n) => {
                    return Err(P4Error::invalid(format!(
                        "the P4Info sent names id {} `{}`, sluice's P4Info of the source names it `{n}`",
                        p.id, p.name
                    )))
                }
                None => {
                    return Err(P4Error::invalid(format!(
                        "the P4Info sent has `{}` with id {}, which sluice's P4Info of the source does not have",
                        p.name, p.id
                    )))
                }
            }
        }
        Ok(())
    }
}
