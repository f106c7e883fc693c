//! `Read`: table entries (table id 0: every table; no match: every
//! entry; `is_default_action`: the default entry; with their direct
//! counter and meter cells when the query sets `counter_data` /
//! `meter_config`), counters, meters and direct cells
//! ([`crate::resources`]), registers (id 0: all; no index: every cell), multicast groups
//! written over P4Runtime. The engine's tables are the truth: entries
//! come from its dump, in the order they were installed.

use sluice_p4::ast::BigValue;
use sluice_p4::engines::Engine;
use sluice_p4::target::{EntryDump, KeyMatch, Manage as _, MatchKind};

use crate::convert::{self, P4Error, P4Result};
use crate::device::State;
use crate::pipeline::{Pipeline, TableMap};
use crate::proto::p4::v1 as p4v1;
use p4v1::entity::Entity as E;
use p4v1::field_match::FieldMatchType as F;

fn table_action(
    p: &Pipeline,
    t: &TableMap,
    name: &str,
    args: &[(String, BigValue)],
) -> Option<p4v1::TableAction> {
    let (&id, _) = t.actions.iter().find(|(_, u)| u.engine_name == name)?;
    let am = p.actions.get(&id)?;
    let params = am
        .params
        .iter()
        .map(|(pid, pname, _)| {
            let v =
                args.iter().find(|(n, _)| n == pname).map(|(_, v)| v.clone()).unwrap_or_default();
            p4v1::action::Param { param_id: *pid, value: convert::encode(&v) }
        })
        .collect();
    Some(p4v1::TableAction {
        r#type: Some(p4v1::table_action::Type::Action(p4v1::Action { action_id: id, params })),
    })
}

/// An engine entry as P4Runtime's TableEntry.
pub fn entry_of(p: &Pipeline, t: &TableMap, d: &EntryDump) -> p4v1::TableEntry {
    let mut matches = Vec::new();
    for (f, (_, m)) in t.fields.iter().zip(&d.keys) {
        let fm = match m {
            KeyMatch::Any => None,
            KeyMatch::Exact(v) if f.kind == MatchKind::Optional => {
                Some(F::Optional(p4v1::field_match::Optional { value: convert::encode(v) }))
            }
            KeyMatch::Exact(v) => {
                Some(F::Exact(p4v1::field_match::Exact { value: convert::encode(v) }))
            }
            KeyMatch::Lpm { prefix_len: 0, .. } => None,
            KeyMatch::Lpm { value, prefix_len } => Some(F::Lpm(p4v1::field_match::Lpm {
                value: convert::encode(value),
                prefix_len: *prefix_len as i32,
            })),
            KeyMatch::Ternary { mask, .. } if mask.is_zero() => None,
            KeyMatch::Ternary { value, mask } => Some(F::Ternary(p4v1::field_match::Ternary {
                value: convert::encode(value),
                mask: convert::encode(mask),
            })),
            KeyMatch::Range { lo, hi } if lo.is_zero() && *hi == convert::all_ones(f.width) => None,
            KeyMatch::Range { lo, hi } => Some(F::Range(p4v1::field_match::Range {
                low: convert::encode(lo),
                high: convert::encode(hi),
            })),
        };
        if let Some(fm) = fm {
            matches.push(p4v1::FieldMatch { field_id: f.id, field_match_type: Some(fm) });
        }
    }
    p4v1::TableEntry {
        table_id: t.id,
        r#match: matches,
        action: table_action(p, t, &d.action, &d.args),
        priority: if t.needs_priority {
            d.priority.unwrap_or(0).min(i32::MAX as u64) as i32
        } else {
            0
        },
        is_const: t.is_const,
        ..Default::default()
    }
}

fn read_tables(
    p: &Pipeline,
    st: &State,
    engine: &Engine,
    q: &p4v1::TableEntry,
    out: &mut Vec<p4v1::Entity>,
) -> P4Result<()> {
    let ids: Vec<u32> =
        if q.table_id == 0 { p.table_order.clone() } else { vec![p.table(q.table_id)?.id] };
    // A filter on the match: the entry with exactly this key.
    let filter = if q.r#match.is_empty() || q.table_id == 0 {
        None
    } else {
        let t = p.table(q.table_id)?;
        Some(crate::write::entry_key(t, q)?.0)
    };
    let now = std::time::Instant::now();
    for id in ids {
        let t = &p.tables[&id];
        let (entries, (daction, dargs)) = engine.dump(&t.engine_name).map_err(P4Error::invalid)?;
        if q.is_default_action {
            crate::idle::check_default(t, q)?;
            let mut e = p4v1::TableEntry {
                table_id: t.id,
                is_default_action: true,
                action: table_action(p, t, &daction, &dargs),
                ..Default::default()
            };
            e.is_const = t.const_default;
            if q.counter_data.is_some()
                || q.meter_config.is_some()
                || q.meter_counter_data.is_some()
            {
                let cell = crate::resources::default_cells(p, engine, t)?;
                crate::resources::fill_entry(p, t, q, cell.as_ref(), &mut e);
            }
            out.push(p4v1::Entity { entity: Some(E::TableEntry(e)) });
            continue;
        }
        // A wildcard read gives `time_since_last_hit` where there is one.
        if q.table_id != 0 {
            crate::idle::check_read(t, q)?;
        }
        let cells = if q.counter_data.is_some()
            || q.meter_config.is_some()
            || q.meter_counter_data.is_some()
        {
            crate::resources::cells_by_handle(p, engine, t)?
        } else {
            Default::default()
        };
        let hits = if q.time_since_last_hit.is_some() {
            crate::idle::hits_of(engine, t)?
        } else {
            Default::default()
        };
        let installed: std::collections::HashMap<u64, &crate::device::Installed> = st
            .index
            .get(&t.id)
            .map(|m| m.values().map(|i| (i.handle, i)).collect())
            .unwrap_or_default();
        for d in &entries {
            let mut e = entry_of(p, t, d);
            crate::resources::fill_entry(p, t, q, cells.get(&d.handle), &mut e);
            let inst = installed.get(&d.handle).copied();
            if let Some(i) = inst {
                i.cookie.fill(&mut e);
            }
            let w = inst.and_then(|i| i.idle.as_ref());
            crate::idle::fill_entry(q, w, hits.get(&d.handle).copied(), now, &mut e);
            if let Some(k) = &filter {
                match crate::write::entry_key(t, &e) {
                    Ok((key, _)) if key == *k => {}
                    _ => continue,
                }
            } else if q.priority != 0 && e.priority != q.priority {
                continue;
            }
            out.push(p4v1::Entity { entity: Some(E::TableEntry(e)) });
        }
    }
    Ok(())
}

fn read_counters(
    p: &Pipeline,
    engine: &Engine,
    q: &p4v1::CounterEntry,
    out: &mut Vec<p4v1::Entity>,
) -> P4Result<()> {
    let ids: Vec<u32> = if q.counter_id == 0 {
        p.info.counters.iter().map(|c| c.preamble.id).collect()
    } else if p.counters.contains_key(&q.counter_id) {
        vec![q.counter_id]
    } else {
        return Err(P4Error::not_found(format!("no counter with id {}", q.counter_id)));
    };
    for id in ids {
        let c = &p.counters[&id];
        let (_, cells) = engine.counter_cells(&c.name).map_err(P4Error::invalid)?;
        for (i, (packets, bytes)) in cells.iter().enumerate() {
            if q.index.as_ref().is_some_and(|x| x.index != i as i64) {
                continue;
            }
            out.push(p4v1::Entity {
                entity: Some(E::CounterEntry(p4v1::CounterEntry {
                    counter_id: id,
                    index: Some(p4v1::Index { index: i as i64 }),
                    data: Some(p4v1::CounterData {
                        byte_count: *bytes as i64,
                        packet_count: *packets as i64,
                    }),
                })),
            });
        }
        if let Some(x) = &q.index {
            if x.index < 0 || x.index as usize >= cells.len() {
                return Err(P4Error::new(
                    tonic::Code::OutOfRange,
                    format!(
                        "counter `{}` has {} cells; index {} is outside",
                        c.name,
                        cells.len(),
                        x.index
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn read_registers(
    p: &Pipeline,
    engine: &Engine,
    q: &p4v1::RegisterEntry,
    out: &mut Vec<p4v1::Entity>,
) -> P4Result<()> {
    let ids: Vec<u32> = if q.register_id == 0 {
        p.info.registers.iter().map(|c| c.preamble.id).collect()
    } else if p.registers.contains_key(&q.register_id) {
        vec![q.register_id]
    } else {
        return Err(P4Error::not_found(format!("no register with id {}", q.register_id)));
    };
    for id in ids {
        let r = &p.registers[&id];
        let (_, _, cells) = engine.register_cells(&r.name).map_err(P4Error::invalid)?;
        if let Some(x) = &q.index {
            if x.index < 0 || x.index as usize >= cells.len() {
                return Err(P4Error::new(
                    tonic::Code::OutOfRange,
                    format!(
                        "register `{}` has {} cells; index {} is outside",
                        r.name,
                        cells.len(),
                        x.index
                    ),
                ));
            }
        }
        for (i, v) in cells.iter().enumerate() {
            if q.index.as_ref().is_some_and(|x| x.index != i as i64) {
                continue;
            }
            out.push(p4v1::Entity {
                entity: Some(E::RegisterEntry(p4v1::RegisterEntry {
                    register_id: id,
                    index: Some(p4v1::Index { index: i as i64 }),
                    data: Some(p4v1::P4Data {
                        data: Some(p4v1::p4_data::Data::Bitstring(convert::encode(v))),
                    }),
                })),
            });
        }
    }
    Ok(())
}

fn read_mcast(
    st: &State,
    q: &p4v1::PacketReplicationEngineEntry,
    out: &mut Vec<p4v1::Entity>,
) -> P4Result<()> {
    use p4v1::packet_replication_engine_entry::Type as Pre;
    let Some(Pre::MulticastGroupEntry(g)) = &q.r#type else {
        return Err(P4Error::unimplemented("reading clone sessions is not implemented"));
    };
    for (id, copies) in &st.mcast {
        if g.multicast_group_id != 0 && g.multicast_group_id != *id {
            continue;
        }
        let replicas = copies
            .iter()
            .map(|(inst, port)| p4v1::Replica {
                instance: *inst,
                port_kind: Some(p4v1::replica::PortKind::Port(convert::encode(
                    &BigValue::from_u128(u128::from(*port)),
                ))),
                ..Default::default()
            })
            .collect();
        let e =
            p4v1::MulticastGroupEntry { multicast_group_id: *id, replicas, ..Default::default() };
        out.push(p4v1::Entity {
            entity: Some(E::PacketReplicationEngineEntry(p4v1::PacketReplicationEngineEntry {
                r#type: Some(Pre::MulticastGroupEntry(e)),
            })),
        });
    }
    Ok(())
}

/// The entities one query entity asks for.
pub fn read(
    p: &Pipeline,
    st: &State,
    engine: &Engine,
    q: &p4v1::Entity,
    out: &mut Vec<p4v1::Entity>,
) -> P4Result<()> {
    match &q.entity {
        Some(E::TableEntry(t)) => read_tables(p, st, engine, t, out),
        Some(E::CounterEntry(c)) => read_counters(p, engine, c, out),
        Some(E::RegisterEntry(r)) => read_registers(p, engine, r, out),
        Some(E::MeterEntry(m)) => crate::resources::read_meters(p, engine, m, out),
        Some(E::DirectCounterEntry(d)) => {
            crate::resources::read_direct(p, engine, d.table_entry.as_ref(), true, out)
        }
        Some(E::DirectMeterEntry(d)) => {
            crate::resources::read_direct(p, engine, d.table_entry.as_ref(), false, out)
        }
        Some(E::PacketReplicationEngineEntry(pre)) => read_mcast(st, pre, out),
        Some(other) => Err(convert::not_built(other)),
        None => Err(P4Error::invalid("read of an entity with nothing set")),
    }
}
