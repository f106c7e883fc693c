//! `Write`: table entries (every match kind, priorities, default
//! entries, direct counter and meter data), register cells, counters
//! and meters ([`crate::resources`]) and multicast groups, one update at a time
//! (CONTINUE_ON_ERROR: each update succeeds or fails on its own;
//! [`crate::batch`] undoes a batch's updates for the all-or-none modes).
//!
//! Entries are checked as P4Runtime spec §9.1 asks before the engine
//! sees them: ids must exist (NOT_FOUND), values must fit their fields
//! (OUT_OF_RANGE), an LPM value has no bits past its prefix, a ternary
//! value none outside its mask, a range's low is at most its high, a
//! don't-care is left out rather than written (zero mask, zero prefix,
//! full range), exact fields are present, and a priority is given
//! exactly when the table has a ternary, range or optional field
//! (INVALID_ARGUMENT). Entries are found again by their key (the match
//! fields in canonical bytes and the priority) in the device's index.

use std::cmp::Ordering;

use sluice_p4::ast::BigValue;
use sluice_p4::target::{EntrySpec, KeyMatch, Manage as _, MatchKind, Target as _};
use tonic::Code;

use crate::convert::{self, P4Error, P4Result};
use crate::device::{Installed, State};
use crate::pipeline::{Pipeline, TableMap};
use crate::proto::p4::v1 as p4v1;
use p4v1::field_match::FieldMatchType as F;
use p4v1::update::Type as U;
use sluice_p4::engines::Engine;
use sluice_p4::p4info::Scope;

fn cmp_big(a: &BigValue, b: &BigValue) -> Ordering {
    a.0.len().cmp(&b.0.len()).then_with(|| a.0.iter().rev().cmp(b.0.iter().rev()))
}

/// An entry checked and converted: its index key and the engine's spec.
pub struct Checked {
    pub key: Vec<u8>,
    pub spec: EntrySpec,
}

fn push_bytes(key: &mut Vec<u8>, b: &[u8]) {
    key.extend_from_slice(&(b.len() as u32).to_be_bytes());
    key.extend_from_slice(b);
}

/// An entry's canonical key and its key elements for the engine.
pub type KeyParts = (Vec<u8>, Vec<(String, KeyMatch)>);

/// Checks an entry's match and priority; returns the canonical key and
/// the key elements in the engine's order (`Any` for those left out).
pub fn entry_key(t: &TableMap, e: &p4v1::TableEntry) -> P4Result<KeyParts> {
    let mut given: Vec<Option<&p4v1::FieldMatch>> = vec![None; t.fields.len()];
    for m in &e.r#match {
        let i = t.fields.iter().position(|f| f.id == m.field_id).ok_or_else(|| {
            // The spec's "Match Format": a field_id that is not the
            // table's is INVALID_ARGUMENT (like every match error there).
            P4Error::invalid(format!(
                "table `{}` has no match field with id {}",
                t.name, m.field_id
            ))
        })?;
        if given[i].is_some() {
            return Err(P4Error::invalid(format!(
                "match field `{}` (id {}) is given twice",
                t.fields[i].name, m.field_id
            )));
        }
        given[i] = Some(m);
    }
    let mut key = Vec::new();
    let mut keys = Vec::with_capacity(t.fields.len());
    for (f, m) in t.fields.iter().zip(given) {
        let what = format!("match field `{}`", f.name);
        let w = f.width;
        key.extend_from_slice(&f.id.to_be_bytes());
        let km = match (f.kind, m.and_then(|m| m.field_match_type.as_ref())) {
            (MatchKind::Exact, None) => {
                return Err(P4Error::invalid(format!("{what} is exact and must be given")))
            }
            (_, None) => {
                key.push(0);
                KeyMatch::Any
            }
            (MatchKind::Exact, Some(F::Exact(x))) => {
                let v = convert::decode(&x.value, w, &what)?;
                key.push(1);
                push_bytes(&mut key, &convert::encode(&v));
                KeyMatch::Exact(v)
            }
            (MatchKind::Optional, Some(F::Optional(x))) => {
                let v = convert::decode(&x.value, w, &what)?;
                key.push(2);
                push_bytes(&mut key, &convert::encode(&v));
                KeyMatch::Exact(v)
            }
            (MatchKind::Lpm, Some(F::Lpm(x))) => {
                let v = convert::decode(&x.value, w, &what)?;
                if x.prefix_len < 0 || x.prefix_len as u32 > w {
                    return Err(P4Error::invalid(format!(
                        "{what}: prefix length {} is not in 1..={w}",
                        x.prefix_len
                    )));
                }
                if x.prefix_len == 0 {
                    return Err(P4Error::invalid(format!(
                        "{what}: a prefix length of 0 is a don't-care; leave the field out"
                    )));
                }
                let l = x.prefix_len as u32;
                if convert::and(&v, &convert::prefix_mask(w, l)) != v {
                    return Err(P4Error::invalid(format!(
                        "{what}: value 0x{} has bits set past its /{l} prefix",
                        convert::hex(&convert::encode(&v))
                    )));
                }
                key.push(3);
                push_bytes(&mut key, &convert::encode(&v));
                key.extend_from_slice(&l.to_be_bytes());
                KeyMatch::Lpm { value: v, prefix_len: l }
            }
            (MatchKind::Ternary, Some(F::Ternary(x))) => {
                let v = convert::decode(&x.value, w, &what)?;
                let mask = convert::decode(&x.mask, w, &format!("{what} (mask)"))?;
                if mask.is_zero() {
                    return Err(P4Error::invalid(format!(
                        "{what}: a zero mask is a don't-care; leave the field out"
                    )));
                }
                if convert::and(&v, &mask) != v {
                    return Err(P4Error::invalid(format!(
                        "{what}: value 0x{} has bits set outside its mask 0x{}",
                        convert::hex(&convert::encode(&v)),
                        convert::hex(&convert::encode(&mask))
                    )));
                }
                key.push(4);
                push_bytes(&mut key, &convert::encode(&v));
                push_bytes(&mut key, &convert::encode(&mask));
                KeyMatch::Ternary { value: v, mask }
            }
            (MatchKind::Range, Some(F::Range(x))) => {
                let lo = convert::decode(&x.low, w, &format!("{what} (low)"))?;
                let hi = convert::decode(&x.high, w, &format!("{what} (high)"))?;
                if cmp_big(&lo, &hi) == Ordering::Greater {
                    return Err(P4Error::invalid(format!("{what}: low is above high")));
                }
                if lo.is_zero() && hi == convert::all_ones(w) {
                    return Err(P4Error::invalid(format!(
                        "{what}: the full range is a don't-care; leave the field out"
                    )));
                }
                key.push(5);
                push_bytes(&mut key, &convert::encode(&lo));
                push_bytes(&mut key, &convert::encode(&hi));
                KeyMatch::Range { lo, hi }
            }
            (kind, Some(_)) => {
                return Err(P4Error::invalid(format!(
                    "{what} is a {} field; the match given is of another kind",
                    kind.name()
                )))
            }
        };
        keys.push((f.engine_name.clone(), km));
    }
    if t.needs_priority && e.priority <= 0 {
        return Err(P4Error::invalid(format!(
            "table `{}` has ternary, range or optional fields: entries need a priority above 0",
            t.name
        )));
    }
    if !t.needs_priority && e.priority != 0 {
        return Err(P4Error::invalid(format!(
            "table `{}` has only exact and LPM fields: priority must be 0, not {}",
            t.name, e.priority
        )));
    }
    key.extend_from_slice(&e.priority.to_be_bytes());
    Ok((key, keys))
}

/// The action of an entry (or default entry): engine name and arguments.
fn action(
    p: &Pipeline,
    t: &TableMap,
    a: Option<&p4v1::TableAction>,
    default: bool,
) -> P4Result<(String, Vec<(String, BigValue)>)> {
    use p4v1::table_action::Type as A;
    let a = match a.and_then(|a| a.r#type.as_ref()) {
        Some(A::Action(a)) => a,
        Some(_) => {
            return Err(P4Error::unimplemented(
                "action profiles (members, groups, action sets) are not implemented",
            ))
        }
        None => {
            return Err(P4Error::invalid(format!("an entry of table `{}` needs an action", t.name)))
        }
    };
    let am = p.actions.get(&a.action_id).ok_or_else(|| {
        P4Error::not_found(format!("no action with id {} in the P4Info", a.action_id))
    })?;
    let u = t.actions.get(&a.action_id).ok_or_else(|| {
        P4Error::invalid(format!("action `{}` is not an action of table `{}`", am.name, t.name))
    })?;
    match (u.scope, default) {
        (Scope::DefaultOnly, false) => {
            return Err(P4Error::invalid(format!(
                "action `{}` is @defaultonly in table `{}`",
                am.name, t.name
            )))
        }
        (Scope::TableOnly, true) => {
            return Err(P4Error::invalid(format!(
                "action `{}` is @tableonly in table `{}`: it cannot be the default",
                am.name, t.name
            )))
        }
        _ => {}
    }
    let mut args = Vec::with_capacity(am.params.len());
    for q in &a.params {
        if !am.params.iter().any(|x| x.0 == q.param_id) {
            return Err(P4Error::not_found(format!(
                "action `{}` has no parameter with id {}",
                am.name, q.param_id
            )));
        }
    }
    for (id, name, w) in &am.params {
        let mut given = a.params.iter().filter(|q| q.param_id == *id);
        let q = given.next().ok_or_else(|| {
            P4Error::invalid(format!("action `{}`: parameter `{name}` is missing", am.name))
        })?;
        if given.next().is_some() {
            return Err(P4Error::invalid(format!(
                "action `{}`: parameter `{name}` is given twice",
                am.name
            )));
        }
        let v = convert::decode(&q.value, *w, &format!("parameter `{name}` of `{}`", am.name))?;
        args.push((name.clone(), v));
    }
    Ok((u.engine_name.clone(), args))
}

/// Checks and converts a (non-default) table entry.
pub fn check_entry(p: &Pipeline, e: &p4v1::TableEntry, with_action: bool) -> P4Result<Checked> {
    let t = p.table(e.table_id)?;
    if with_action {
        crate::idle::check_write(t, e)?;
    }
    crate::resources::entry_resources(p, t, e)?;
    let (key, keys) = entry_key(t, e)?;
    let (action, args) = if with_action {
        action(p, t, e.action.as_ref(), false)?
    } else {
        (String::new(), Vec::new())
    };
    let priority = t.needs_priority.then_some(e.priority as u64);
    Ok(Checked {
        key,
        spec: EntrySpec { table: t.engine_name.clone(), keys, action, args, priority },
    })
}

fn engine_err(table: &str, e: String) -> P4Error {
    if e.contains("already has an entry") {
        P4Error::new(Code::AlreadyExists, e)
    } else {
        P4Error::invalid(format!("table `{table}`: {e}"))
    }
}

fn write_default(
    p: &Pipeline,
    engine: &mut Engine,
    t: &TableMap,
    e: &p4v1::TableEntry,
) -> P4Result<()> {
    if !e.r#match.is_empty() || e.priority != 0 {
        return Err(P4Error::invalid(format!(
            "the default entry of table `{}` has no match fields and no priority",
            t.name
        )));
    }
    crate::idle::check_default(t, e)?;
    if t.const_default {
        return Err(P4Error::new(
            Code::PermissionDenied,
            format!("table `{}` has a const default action", t.name),
        ));
    }
    let (act, args) = match &e.action {
        Some(_) => action(p, t, e.action.as_ref(), true)?,
        None => {
            // No action: back to the program's initial default.
            let Some(init) = &t.initial_default else {
                return Err(P4Error::invalid(format!("table `{}` has no initial default", t.name)));
            };
            let ta = p4v1::TableAction {
                r#type: Some(p4v1::table_action::Type::Action(p4v1::Action {
                    action_id: init.action_id,
                    params: init
                        .arguments
                        .iter()
                        .map(|(id, v)| p4v1::action::Param { param_id: *id, value: v.clone() })
                        .collect(),
                })),
            };
            action(p, t, Some(&ta), true)?
        }
    };
    // The default entry's direct cells, as an entry MODIFY sets them:
    // the counter keeps its value unless counter_data is given; the meter
    // takes meter_config, or is reset to unconfigured without one.
    let (counter, meter) = crate::resources::entry_resources(p, t, e)?;
    let meter = p.direct_meter_of(t.id).map(|_| meter);
    engine.set_default(&t.engine_name, &act, &args).map_err(|e| engine_err(&t.name, e))?;
    if counter.is_some() || meter.is_some() {
        engine
            .direct_write(&t.engine_name, sluice_p4::target::DEFAULT_ENTRY, counter, meter)
            .map_err(|e| engine_err(&t.name, e))?;
    }
    Ok(())
}

/// Applies one table-entry update.
pub fn table_update(
    p: &Pipeline,
    st: &mut State,
    engine: &mut Engine,
    ty: U,
    e: &p4v1::TableEntry,
) -> P4Result<()> {
    let t = p.table(e.table_id)?;
    if e.is_default_action {
        return match ty {
            U::Modify => write_default(p, engine, t, e),
            _ => Err(P4Error::invalid(format!(
                "the default entry of table `{}` can only be modified",
                t.name
            ))),
        };
    }
    if t.is_const {
        return Err(P4Error::new(
            Code::PermissionDenied,
            format!("table `{}` has const entries", t.name),
        ));
    }
    let index = st.index.entry(t.id).or_default();
    match ty {
        U::Insert => {
            let c = check_entry(p, e, true)?;
            if index.contains_key(&c.key) {
                return Err(P4Error::new(
                    Code::AlreadyExists,
                    format!("table `{}` already has an entry with this match and priority", t.name),
                ));
            }
            let (counter, meter) = crate::resources::entry_resources(p, t, e)?;
            let handle = engine.add_entry(&c.spec).map_err(|e| engine_err(&t.name, e))?;
            if counter.is_some() || meter.is_some() {
                if let Err(why) =
                    engine.direct_write(&t.engine_name, handle, counter, meter.map(Some))
                {
                    let _ = engine.delete_entry(&t.engine_name, handle);
                    return Err(engine_err(&t.name, why));
                }
            }
            let idle = crate::idle::Watch::new(t, e, std::time::Instant::now());
            let cookie = crate::device::Cookie::of(e);
            index.insert(c.key, Installed { handle, spec: c.spec, idle, cookie });
            Ok(())
        }
        U::Modify => {
            let c = check_entry(p, e, true)?;
            let Some(old) = index.get(&c.key).cloned() else {
                return Err(P4Error::not_found(format!(
                    "table `{}` has no entry with this match and priority to modify",
                    t.name
                )));
            };
            // The entry's direct cells: the counter keeps its value unless
            // counter_data is given; the meter takes meter_config, or is
            // reset to unconfigured without one (the spec's MODIFY).
            let (counter, meter) = crate::resources::entry_resources(p, t, e)?;
            let kept = match counter {
                Some(c) => Some(c),
                None if p.direct_counter_of(t.id).is_some() => engine
                    .direct_cells(&t.engine_name)
                    .map_err(|e| engine_err(&t.name, e))?
                    .into_iter()
                    .find(|x| x.handle == old.handle)
                    .map(|x| x.counter),
                None => None,
            };
            let meter = p.direct_meter_of(t.id).map(|_| meter);
            engine.delete_entry(&t.engine_name, old.handle).map_err(|e| engine_err(&t.name, e))?;
            match engine.add_entry(&c.spec) {
                Ok(handle) => {
                    // Indexed first: the index names what the engine holds
                    // even if the cells cannot be written (a rollback,
                    // crate::batch, finds the entry by it).
                    let now = std::time::Instant::now();
                    let idle = old.idle.map(|w| w.modified(e.idle_timeout_ns, now));
                    // MODIFY writes every non-key field, the cookie too.
                    let cookie = crate::device::Cookie::of(e);
                    index.insert(c.key, Installed { handle, spec: c.spec, idle, cookie });
                    if kept.is_some() || meter.is_some() {
                        engine
                            .direct_write(&t.engine_name, handle, kept, meter)
                            .map_err(|e| engine_err(&t.name, e))?;
                    }
                    Ok(())
                }
                Err(why) => {
                    // Put the old entry back (it was accepted before).
                    match engine.add_entry(&old.spec) {
                        Ok(h) => {
                            let now = std::time::Instant::now();
                            let idle = old.idle.map(|w| w.modified(w.timeout_ns, now));
                            let cookie = old.cookie;
                            index.insert(
                                c.key,
                                Installed { handle: h, spec: old.spec, idle, cookie },
                            );
                        }
                        Err(_) => {
                            index.remove(&c.key);
                        }
                    }
                    Err(engine_err(&t.name, why))
                }
            }
        }
        U::Delete => {
            // A delete needs only the key (spec §9.1: the action is ignored).
            let c = check_entry(p, e, false)?;
            let Some(old) = index.get(&c.key) else {
                return Err(P4Error::not_found(format!(
                    "table `{}` has no entry with this match and priority to delete",
                    t.name
                )));
            };
            engine.delete_entry(&t.engine_name, old.handle).map_err(|e| engine_err(&t.name, e))?;
            index.remove(&c.key);
            Ok(())
        }
        U::Unspecified => Err(P4Error::invalid("update type is UNSPECIFIED")),
    }
}

/// Applies one register update (MODIFY of one cell, or of every cell
/// when the index is left out).
pub fn register_update(
    p: &Pipeline,
    engine: &mut Engine,
    ty: U,
    r: &p4v1::RegisterEntry,
) -> P4Result<()> {
    let reg = p
        .registers
        .get(&r.register_id)
        .ok_or_else(|| P4Error::not_found(format!("no register with id {}", r.register_id)))?;
    if ty != U::Modify {
        return Err(P4Error::invalid(format!(
            "register `{}`: cells can only be modified",
            reg.name
        )));
    }
    let v = match r.data.as_ref().and_then(|d| d.data.as_ref()) {
        Some(p4v1::p4_data::Data::Bitstring(b)) => {
            convert::decode(b, reg.width, &format!("register `{}`", reg.name))?
        }
        Some(p4v1::p4_data::Data::Bool(b)) => BigValue::from_u128(u128::from(*b)),
        Some(_) => {
            return Err(P4Error::unimplemented(format!(
                "register `{}`: only bitstring and bool data are implemented",
                reg.name
            )))
        }
        None => return Err(P4Error::invalid(format!("register `{}`: no data", reg.name))),
    };
    let cells: Vec<usize> = match &r.index {
        Some(i) if i.index < 0 || i.index >= reg.size => {
            return Err(P4Error::new(
                Code::OutOfRange,
                format!(
                    "register `{}` has {} cells; index {} is outside",
                    reg.name, reg.size, i.index
                ),
            ))
        }
        Some(i) => vec![i.index as usize],
        None => (0..reg.size.max(0) as usize).collect(),
    };
    for i in cells {
        engine.register_write(&reg.name, i, &v).map_err(P4Error::invalid)?;
    }
    Ok(())
}

/// Applies one multicast-group update.
pub fn multicast_update(
    st: &mut State,
    engine: &mut Engine,
    ty: U,
    g: &p4v1::MulticastGroupEntry,
) -> P4Result<()> {
    use p4v1::replica::PortKind;
    let id = g.multicast_group_id;
    if id == 0 {
        return Err(P4Error::invalid("multicast group id 0 is not a group"));
    }
    let mut copies = Vec::with_capacity(g.replicas.len());
    for r in &g.replicas {
        #[allow(deprecated)] // `egress_port`: what clients before 1.4 send
        let port = match &r.port_kind {
            Some(PortKind::EgressPort(p)) => *p,
            Some(PortKind::Port(b)) => {
                let v = convert::decode(b, 32, "replica port")?;
                v.to_u128().unwrap_or(0) as u32
            }
            None => return Err(P4Error::invalid(format!("group {id}: a replica has no port"))),
        };
        if copies.contains(&(r.instance, port)) {
            return Err(P4Error::invalid(format!(
                "group {id}: replica (instance {}, port {port}) is given twice",
                r.instance
            )));
        }
        copies.push((r.instance, port));
    }
    let exists = st.mcast.contains_key(&id);
    match ty {
        U::Insert if exists => {
            return Err(P4Error::new(Code::AlreadyExists, format!("multicast group {id} exists")))
        }
        U::Modify | U::Delete if !exists => {
            return Err(P4Error::not_found(format!("no multicast group {id}")))
        }
        U::Unspecified => return Err(P4Error::invalid("update type is UNSPECIFIED")),
        _ => {}
    }
    if ty == U::Delete {
        engine.set_multicast_group(id, &[]).map_err(P4Error::invalid)?;
        st.mcast.remove(&id);
    } else {
        engine.set_multicast_group(id, &copies).map_err(P4Error::invalid)?;
        st.mcast.insert(id, copies);
    }
    Ok(())
}

/// Applies one update of any kind, digest entries included (their
/// configuration is `digests`', the digest task's state).
pub fn update_with_digests(
    p: &Pipeline,
    st: &mut State,
    engine: &mut Engine,
    digests: &mut crate::digest::Digests,
    u: &p4v1::Update,
) -> P4Result<()> {
    match u.entity.as_ref().and_then(|e| e.entity.as_ref()) {
        Some(p4v1::entity::Entity::DigestEntry(d)) => {
            let ty = U::try_from(u.r#type)
                .map_err(|_| P4Error::invalid(format!("unknown update type {}", u.r#type)))?;
            digests.write(ty, d)
        }
        _ => update(p, st, engine, u),
    }
}

/// Applies one update of any kind but digest entries (see
/// [`update_with_digests`]).
pub fn update(p: &Pipeline, st: &mut State, engine: &mut Engine, u: &p4v1::Update) -> P4Result<()> {
    use p4v1::entity::Entity as E;
    use p4v1::packet_replication_engine_entry::Type as Pre;
    let ty = U::try_from(u.r#type)
        .map_err(|_| P4Error::invalid(format!("unknown update type {}", u.r#type)))?;
    match u.entity.as_ref().and_then(|e| e.entity.as_ref()) {
        Some(E::TableEntry(e)) => table_update(p, st, engine, ty, e),
        Some(E::RegisterEntry(r)) => register_update(p, engine, ty, r),
        Some(E::CounterEntry(c)) => crate::resources::counter_update(p, engine, ty, c),
        Some(E::MeterEntry(m)) => crate::resources::meter_update(p, engine, ty, m),
        Some(E::DirectCounterEntry(d)) => {
            crate::resources::direct_counter_update(p, st, engine, ty, d)
        }
        Some(E::DirectMeterEntry(d)) => crate::resources::direct_meter_update(p, st, engine, ty, d),
        Some(E::PacketReplicationEngineEntry(pre)) => match &pre.r#type {
            Some(Pre::MulticastGroupEntry(g)) => multicast_update(st, engine, ty, g),
            Some(Pre::CloneSessionEntry(_)) => {
                Err(P4Error::unimplemented("clone sessions are not implemented"))
            }
            None => Err(P4Error::invalid("packet replication entry with no type")),
        },
        Some(other) => Err(convert::not_built(other)),
        None => Err(P4Error::invalid("update with no entity")),
    }
}
