//! Counters and meters over P4Runtime: `CounterEntry` writes,
//! `MeterEntry`, `DirectCounterEntry` and `DirectMeterEntry` writes and
//! reads, and a table entry's direct resources (`counter_data`,
//! `meter_config`) on insert, modify and read.
//!
//! As the spec says: these entities are only ever MODIFYed (INSERT and
//! DELETE are INVALID_ARGUMENT: direct cells come and go with their
//! table entries); an unknown counter, meter or table id is NOT_FOUND,
//! and so is a table without the direct resource asked for or an entry
//! that is not installed; an index outside the array is
//! INVALID_ARGUMENT; a write without an index writes every cell. A
//! `MeterConfig` left out resets the meter to unconfigured (every packet
//! GREEN); `CounterData` left out sets the cell to zero. Reads take the
//! spec's wildcards (id 0: every counter or meter, or every table with
//! the direct resource; no index: every cell; no match: every entry).
//! A direct meter's per-colour counts (`MeterCounterData`, P4Runtime
//! 1.4: packets and bytes the meter coloured GREEN, YELLOW, RED) are
//! read with a `DirectMeterEntry` and with a table entry whose query sets
//! `meter_counter_data`; writing them is UNIMPLEMENTED, and indexed
//! meters do not count them.
//!
//! A table's default entry has its own direct counter and meter cells
//! (what misses count and meter): `DirectCounterEntry` and
//! `DirectMeterEntry` with `is_default_action` read and write them, and
//! so do the default entry's `counter_data` / `meter_config` in a table
//! entry MODIFY or Read.

use std::collections::HashMap;

use sluice_p4::engines::Engine;
use sluice_p4::target::{DirectCells, Manage as _, MeterConfig, DEFAULT_ENTRY};

use crate::convert::{P4Error, P4Result};
use crate::device::State;
use crate::pipeline::{Indexed, Pipeline, TableMap};
use crate::proto::p4::v1 as p4v1;
use p4v1::entity::Entity as E;
use p4v1::update::Type as U;

fn modify_only(ty: U, what: &str) -> P4Result<()> {
    match ty {
        U::Modify => Ok(()),
        U::Insert | U::Delete => Err(P4Error::invalid(format!(
            "{what}: only MODIFY is allowed (cells are not inserted or deleted)"
        ))),
        U::Unspecified => Err(P4Error::invalid("update type is UNSPECIFIED")),
    }
}

/// A P4Runtime meter configuration checked: rates and bursts not
/// negative, `cir <= pir`, no `eburst` (sluice's meters are trTCM).
pub fn meter_config(c: &p4v1::MeterConfig, what: &str) -> P4Result<MeterConfig> {
    let field = |v: i64, name: &str| {
        u64::try_from(v).map_err(|_| P4Error::invalid(format!("{what}: {name} {v} is negative")))
    };
    let m = MeterConfig {
        cir: field(c.cir, "cir")?,
        cburst: field(c.cburst, "cburst")?,
        pir: field(c.pir, "pir")?,
        pburst: field(c.pburst, "pburst")?,
    };
    if c.eburst != 0 {
        return Err(P4Error::invalid(format!(
            "{what}: eburst {} is for single-rate meters; sluice's are two-rate (leave it 0)",
            c.eburst
        )));
    }
    if m.cir > m.pir {
        return Err(P4Error::invalid(format!(
            "{what}: cir {} is above pir {} (a two-rate meter needs cir <= pir)",
            m.cir, m.pir
        )));
    }
    Ok(m)
}

fn config_proto(m: MeterConfig) -> p4v1::MeterConfig {
    let i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    p4v1::MeterConfig {
        cir: i(m.cir),
        cburst: i(m.cburst),
        pir: i(m.pir),
        pburst: i(m.pburst),
        eburst: 0,
    }
}

/// Counter data checked: counts not negative.
pub fn counter_data(d: Option<&p4v1::CounterData>, what: &str) -> P4Result<(u64, u64)> {
    let Some(d) = d else { return Ok((0, 0)) };
    let n = |v: i64, name: &str| {
        u64::try_from(v).map_err(|_| P4Error::invalid(format!("{what}: {name} {v} is negative")))
    };
    Ok((n(d.packet_count, "packet_count")?, n(d.byte_count, "byte_count")?))
}

fn data_proto((packets, bytes): (u64, u64)) -> p4v1::CounterData {
    let i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    p4v1::CounterData { byte_count: i(bytes), packet_count: i(packets) }
}

/// The cells a write or read addresses: one, or every one if no index.
fn cells(x: &Indexed, kind: &str, index: Option<&p4v1::Index>) -> P4Result<Vec<usize>> {
    match index {
        Some(i) if i.index < 0 || i.index >= x.size => Err(P4Error::invalid(format!(
            "{kind} `{}` has {} cells; index {} is outside",
            x.name, x.size, i.index
        ))),
        Some(i) => Ok(vec![i.index as usize]),
        None => Ok((0..x.size.max(0) as usize).collect()),
    }
}

/// A `CounterEntry` write: sets one cell, or every cell without an index.
pub fn counter_update(
    p: &Pipeline,
    engine: &mut Engine,
    ty: U,
    c: &p4v1::CounterEntry,
) -> P4Result<()> {
    let x = p
        .counters
        .get(&c.counter_id)
        .ok_or_else(|| P4Error::not_found(format!("no counter with id {}", c.counter_id)))?;
    modify_only(ty, &format!("counter `{}`", x.name))?;
    let v = counter_data(c.data.as_ref(), &format!("counter `{}`", x.name))?;
    for i in cells(x, "counter", c.index.as_ref())? {
        engine.counter_write(&x.name, i, v).map_err(P4Error::invalid)?;
    }
    Ok(())
}

/// A `MeterEntry` write: configures one cell, or every cell without an
/// index; no config unconfigures.
pub fn meter_update(
    p: &Pipeline,
    engine: &mut Engine,
    ty: U,
    m: &p4v1::MeterEntry,
) -> P4Result<()> {
    let x = p
        .meters
        .get(&m.meter_id)
        .ok_or_else(|| P4Error::not_found(format!("no meter with id {}", m.meter_id)))?;
    let what = format!("meter `{}`", x.name);
    modify_only(ty, &what)?;
    if m.counter_data.is_some() {
        return Err(P4Error::unimplemented(format!("{what}: per-colour meter counters")));
    }
    let cfg = m.config.as_ref().map(|c| meter_config(c, &what)).transpose()?;
    for i in cells(x, "meter", m.index.as_ref())? {
        engine.meter_write(&x.name, i, cfg).map_err(P4Error::invalid)?;
    }
    Ok(())
}

/// The direct counter (`counter: true`) or meter of table `t`: its id
/// and name, NOT_FOUND if the table has none.
fn direct_of(p: &Pipeline, t: &TableMap, counter: bool) -> P4Result<(u32, String)> {
    let (id, map, kind) = if counter {
        (p.direct_counter_of(t.id), &p.direct_counters, "direct counter")
    } else {
        (p.direct_meter_of(t.id), &p.direct_meters, "direct meter")
    };
    match id.and_then(|id| map.get(&id).map(|(n, _)| (id, n.clone()))) {
        Some(x) => Ok(x),
        None => Err(P4Error::not_found(format!("table `{}` has no {kind}", t.name))),
    }
}

/// The engine handle of the installed entry `e` names (its match and
/// priority): P4Runtime's entries by the index, const entries by the
/// engine's dump.
pub(crate) fn handle_of(
    p: &Pipeline,
    st: &State,
    engine: &Engine,
    t: &TableMap,
    e: &p4v1::TableEntry,
) -> P4Result<u64> {
    if e.is_default_action {
        if !e.r#match.is_empty() || e.priority != 0 {
            return Err(P4Error::invalid(format!(
                "the default entry of table `{}` has no match fields and no priority",
                t.name
            )));
        }
        return Ok(DEFAULT_ENTRY);
    }
    let (key, _) = crate::write::entry_key(t, e)?;
    if let Some(i) = st.index.get(&t.id).and_then(|m| m.get(&key)) {
        return Ok(i.handle);
    }
    let (entries, _) = engine.dump(&t.engine_name).map_err(P4Error::invalid)?;
    for d in &entries {
        let pe = crate::read::entry_of(p, t, d);
        if crate::write::entry_key(t, &pe).is_ok_and(|(k, _)| k == key) {
            return Ok(d.handle);
        }
    }
    Err(P4Error::not_found(format!("table `{}` has no entry with this match and priority", t.name)))
}

/// A `DirectCounterEntry` write: sets the entry's cell (no data: zero).
pub fn direct_counter_update(
    p: &Pipeline,
    st: &State,
    engine: &mut Engine,
    ty: U,
    d: &p4v1::DirectCounterEntry,
) -> P4Result<()> {
    let e = d
        .table_entry
        .as_ref()
        .ok_or_else(|| P4Error::invalid("a DirectCounterEntry needs its table_entry"))?;
    let t = p.table(e.table_id)?;
    let (_, name) = direct_of(p, t, true)?;
    modify_only(ty, &format!("direct counter `{name}`"))?;
    let v = counter_data(d.data.as_ref(), &format!("direct counter `{name}`"))?;
    let h = handle_of(p, st, engine, t, e)?;
    engine.direct_write(&t.engine_name, h, Some(v), None).map_err(P4Error::invalid)
}

/// A `DirectMeterEntry` write: configures the entry's meter (no config:
/// unconfigured).
pub fn direct_meter_update(
    p: &Pipeline,
    st: &State,
    engine: &mut Engine,
    ty: U,
    d: &p4v1::DirectMeterEntry,
) -> P4Result<()> {
    let e = d
        .table_entry
        .as_ref()
        .ok_or_else(|| P4Error::invalid("a DirectMeterEntry needs its table_entry"))?;
    let t = p.table(e.table_id)?;
    let (_, name) = direct_of(p, t, false)?;
    let what = format!("direct meter `{name}`");
    modify_only(ty, &what)?;
    if d.counter_data.is_some() {
        return Err(P4Error::unimplemented(format!(
            "{what}: per-colour meter counters (MeterCounterData) can be read, not written"
        )));
    }
    let cfg = d.config.as_ref().map(|c| meter_config(c, &what)).transpose()?;
    let h = handle_of(p, st, engine, t, e)?;
    engine.direct_write(&t.engine_name, h, None, Some(cfg)).map_err(P4Error::invalid)
}

/// Checks a table entry's direct resource fields for INSERT/MODIFY:
/// the counter value and meter configuration to set (`None`: not given).
#[allow(clippy::type_complexity)]
pub fn entry_resources(
    p: &Pipeline,
    t: &TableMap,
    e: &p4v1::TableEntry,
) -> P4Result<(Option<(u64, u64)>, Option<MeterConfig>)> {
    if e.meter_counter_data.is_some() {
        return Err(P4Error::unimplemented(
            "per-colour meter counters (meter_counter_data) can be read, not written",
        ));
    }
    let counter = match &e.counter_data {
        Some(d) => {
            let Some(id) = p.direct_counter_of(t.id) else {
                return Err(P4Error::invalid(format!(
                    "table `{}` has no direct counter: counter_data must be left out",
                    t.name
                )));
            };
            let name = p.direct_counters.get(&id).map_or("", |x| x.0.as_str());
            Some(counter_data(Some(d), &format!("direct counter `{name}`"))?)
        }
        None => None,
    };
    let meter = match &e.meter_config {
        Some(c) => {
            let Some(id) = p.direct_meter_of(t.id) else {
                return Err(P4Error::invalid(format!(
                    "table `{}` has no direct meter: meter_config must be left out",
                    t.name
                )));
            };
            let name = p.direct_meters.get(&id).map_or("", |x| x.0.as_str());
            Some(meter_config(c, &format!("direct meter `{name}`"))?)
        }
        None => None,
    };
    Ok((counter, meter))
}

/// The direct cells of a table's entries by engine handle (empty if the
/// table has neither a direct counter nor a direct meter).
pub fn cells_by_handle(
    p: &Pipeline,
    engine: &Engine,
    t: &TableMap,
) -> P4Result<HashMap<u64, DirectCells>> {
    if p.direct_counter_of(t.id).is_none() && p.direct_meter_of(t.id).is_none() {
        return Ok(HashMap::new());
    }
    let cells = engine.direct_cells(&t.engine_name).map_err(P4Error::invalid)?;
    Ok(cells.into_iter().map(|c| (c.handle, c)).collect())
}

/// The default entry's direct cells (`None` if the table has neither a
/// direct counter nor a direct meter).
pub fn default_cells(p: &Pipeline, engine: &Engine, t: &TableMap) -> P4Result<Option<DirectCells>> {
    if p.direct_counter_of(t.id).is_none() && p.direct_meter_of(t.id).is_none() {
        return Ok(None);
    }
    engine.default_cells(&t.engine_name).map(Some).map_err(P4Error::invalid)
}

/// The per-colour counts of a direct meter's cell.
fn colours_proto(c: &DirectCells) -> p4v1::MeterCounterData {
    let [g, y, r] = c.colours;
    p4v1::MeterCounterData {
        green: Some(data_proto(g)),
        yellow: Some(data_proto(y)),
        red: Some(data_proto(r)),
    }
}

/// Fills a read table entry's `counter_data` / `meter_config` as the
/// query asks (only for tables with the resource; a meter with no
/// configuration leaves `meter_config` out, as the spec says).
pub fn fill_entry(
    p: &Pipeline,
    t: &TableMap,
    q: &p4v1::TableEntry,
    cell: Option<&DirectCells>,
    e: &mut p4v1::TableEntry,
) {
    let Some(c) = cell else { return };
    if q.counter_data.is_some() && p.direct_counter_of(t.id).is_some() {
        e.counter_data = Some(data_proto(c.counter));
    }
    if q.meter_config.is_some() && p.direct_meter_of(t.id).is_some() {
        e.meter_config = c.meter.map(config_proto);
    }
    if q.meter_counter_data.is_some() && p.direct_meter_of(t.id).is_some() {
        e.meter_counter_data = Some(colours_proto(c));
    }
}

/// Reads `MeterEntry`s.
pub fn read_meters(
    p: &Pipeline,
    engine: &Engine,
    q: &p4v1::MeterEntry,
    out: &mut Vec<p4v1::Entity>,
) -> P4Result<()> {
    let ids: Vec<u32> = if q.meter_id == 0 {
        p.info.meters.iter().map(|m| m.preamble.id).collect()
    } else if p.meters.contains_key(&q.meter_id) {
        vec![q.meter_id]
    } else {
        return Err(P4Error::not_found(format!("no meter with id {}", q.meter_id)));
    };
    for id in ids {
        let x = &p.meters[&id];
        let want = cells(x, "meter", q.index.as_ref())?;
        let (_, cfgs) = engine.meter_cells(&x.name).map_err(P4Error::invalid)?;
        for i in want {
            let Some(cfg) = cfgs.get(i) else { continue };
            out.push(p4v1::Entity {
                entity: Some(E::MeterEntry(p4v1::MeterEntry {
                    meter_id: id,
                    index: Some(p4v1::Index { index: i as i64 }),
                    config: cfg.map(config_proto),
                    counter_data: None,
                })),
            });
        }
    }
    Ok(())
}

/// Reads `DirectCounterEntry`s (`counter: true`) or `DirectMeterEntry`s.
pub fn read_direct(
    p: &Pipeline,
    engine: &Engine,
    q: Option<&p4v1::TableEntry>,
    counter: bool,
    out: &mut Vec<p4v1::Entity>,
) -> P4Result<()> {
    let kind = if counter { "DirectCounterEntry" } else { "DirectMeterEntry" };
    let q = q.ok_or_else(|| P4Error::invalid(format!("a {kind} read needs its table_entry")))?;
    let tables: Vec<&TableMap> = if q.table_id == 0 {
        p.table_order
            .iter()
            .filter_map(|id| p.tables.get(id))
            .filter(|t| {
                if counter {
                    p.direct_counter_of(t.id).is_some()
                } else {
                    p.direct_meter_of(t.id).is_some()
                }
            })
            .collect()
    } else {
        let t = p.table(q.table_id)?;
        direct_of(p, t, counter)?;
        vec![t]
    };
    let filter = if q.r#match.is_empty() || q.table_id == 0 || q.is_default_action {
        None
    } else {
        Some(crate::write::entry_key(tables[0], q)?.0)
    };
    let entity = |e: p4v1::TableEntry, c: &DirectCells| {
        let entity = if counter {
            E::DirectCounterEntry(p4v1::DirectCounterEntry {
                table_entry: Some(e),
                data: Some(data_proto(c.counter)),
            })
        } else {
            E::DirectMeterEntry(p4v1::DirectMeterEntry {
                table_entry: Some(e),
                config: c.meter.map(config_proto),
                counter_data: Some(colours_proto(c)),
            })
        };
        p4v1::Entity { entity: Some(entity) }
    };
    for t in tables {
        if q.is_default_action {
            let Some(c) = default_cells(p, engine, t)? else { continue };
            let e =
                p4v1::TableEntry { table_id: t.id, is_default_action: true, ..Default::default() };
            out.push(entity(e, &c));
            continue;
        }
        let by_handle = cells_by_handle(p, engine, t)?;
        let (entries, _) = engine.dump(&t.engine_name).map_err(P4Error::invalid)?;
        for d in &entries {
            let Some(c) = by_handle.get(&d.handle) else { continue };
            let mut e = crate::read::entry_of(p, t, d);
            if let Some(k) = &filter {
                match crate::write::entry_key(t, &e) {
                    Ok((key, _)) if key == *k => {}
                    _ => continue,
                }
            }
            e.action = None;
            e.is_const = false;
            out.push(entity(e, c));
        }
    }
    Ok(())
}
