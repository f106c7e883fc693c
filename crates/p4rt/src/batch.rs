//! `Write` batches under ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC: all of
//! the batch or none of it.
//!
//! # How
//! Updates are applied in order, as under CONTINUE_ON_ERROR
//! ([`crate::write::update`]), but before each one an undo record of
//! what it may change is taken ([`Undo`]): the entry at its match key
//! (spec, and its direct cells whole: counter, meter buckets, colour
//! counts), a table's default action with its direct cells, the
//! register, counter or meter cells (meters with their buckets) it
//! addresses, a multicast group's
//! replicas, a digest's configuration with its buffers and cache. At the
//! first update that fails, the records of the updates applied so far and
//! of the failing one (it may have changed something before failing) are
//! replayed newest first, leaving the switch as before the batch.
//! An update whose record cannot be taken fails without being applied.
//!
//! # Errors
//! The spec (§12.3, "Batch Atomicity" and "Error Reporting") asks for one
//! `p4.Error` per update, in order, and does not name a code for the
//! updates that did not fail under rollback. They report ABORTED (gRPC's
//! code for an aborted transaction), never OK, because none of them took
//! effect: "rolled back" for those applied before the failure, "not
//! attempted" for those after it. The failing update has its own code.
//!
//! # Data plane
//! The caller holds the engine lock (the lock the forwarding thread takes
//! per packet) from before the first update until after the last one or
//! the rollback, so a packet sees the tables as before the batch or as
//! after it: DATAPLANE_ATOMIC's guarantee, given to ROLLBACK_ON_ERROR too.
//!
//! # Limits
//! An entry deleted or modified and then restored gets a new engine
//! handle (nothing outside the index sees handles) and, among entries of
//! equal priority that overlap, comes after the others (the spec leaves
//! the order of such entries to the target).

use sluice_p4::ast::BigValue;
use sluice_p4::engines::Engine;
use sluice_p4::target::{DirectState, Manage as _, Meter, Target as _, DEFAULT_ENTRY};
use tonic::Code;

use crate::convert::{P4Error, P4Result};
use crate::device::{Installed, State};
use crate::digest::{DigestSaved, Digests};
use crate::pipeline::Pipeline;
use crate::proto::p4::v1 as p4v1;
use p4v1::entity::Entity as E;

/// An entry as it was: its index record and its direct cells (`None`
/// when the table has neither a direct counter nor a direct meter).
type EntryBefore = (Installed, Option<DirectState>);

/// What puts back the state one update may change.
#[derive(Debug)]
enum Undo {
    /// The update changes nothing that needs restoring (it fails first).
    Nothing,
    /// The entry at `key` of `table_id`: absent, or as it was.
    Entry {
        table_id: u32,
        table: String,
        key: Vec<u8>,
        before: Option<Box<EntryBefore>>,
    },
    /// A table's default action and its direct cells.
    Default {
        table: String,
        action: String,
        args: Vec<(String, BigValue)>,
        direct: Option<DirectState>,
    },
    Register {
        name: String,
        cells: Vec<(usize, BigValue)>,
    },
    Counter {
        name: String,
        cells: Vec<(usize, (u64, u64))>,
    },
    Meter {
        name: String,
        cells: Vec<(usize, Meter)>,
    },
    /// The direct cells of the entry at `key` (found again by the index,
    /// else by `handle` for a const entry).
    Direct {
        table_id: u32,
        table: String,
        key: Vec<u8>,
        handle: u64,
        direct: Option<DirectState>,
    },
    Multicast {
        id: u32,
        before: Option<Vec<(u32, u32)>>,
    },
    Digest(DigestSaved),
}

fn engine_err(what: &str) -> impl Fn(String) -> P4Error + '_ {
    move |e| P4Error::invalid(format!("{what}: {e}"))
}

/// The cells an update with `index` addresses in an extern of `size`
/// cells: one, or all (an index outside fails the update itself).
fn addressed(index: Option<&p4v1::Index>, len: usize) -> Vec<usize> {
    match index {
        Some(i) if i.index >= 0 && (i.index as usize) < len => vec![i.index as usize],
        Some(_) => Vec::new(),
        None => (0..len).collect(),
    }
}

/// The direct cells of `handle` (or [`DEFAULT_ENTRY`]) in table `t`;
/// `None` if it has neither a direct counter nor a direct meter.
fn direct_of(
    p: &Pipeline,
    engine: &Engine,
    t: &crate::pipeline::TableMap,
    handle: u64,
) -> P4Result<Option<DirectState>> {
    if p.direct_counter_of(t.id).is_none() && p.direct_meter_of(t.id).is_none() {
        return Ok(None);
    }
    let d = engine.direct_state(&t.engine_name, handle).map_err(|e| {
        P4Error::new(Code::Internal, format!("table `{}`: direct cells: {e}", t.name))
    })?;
    Ok(Some(d))
}

/// The undo record of `u`, taken before it is applied.
fn record(
    p: &Pipeline,
    st: &State,
    engine: &Engine,
    digests: &Digests,
    u: &p4v1::Update,
) -> P4Result<Undo> {
    use p4v1::packet_replication_engine_entry::Type as Pre;
    let Some(ent) = u.entity.as_ref().and_then(|e| e.entity.as_ref()) else {
        return Ok(Undo::Nothing);
    };
    Ok(match ent {
        E::TableEntry(e) => {
            let Ok(t) = p.table(e.table_id) else { return Ok(Undo::Nothing) };
            if e.is_default_action {
                let (_, (action, args)) =
                    engine.dump(&t.engine_name).map_err(engine_err(&t.name))?;
                let direct = direct_of(p, engine, t, DEFAULT_ENTRY)?;
                return Ok(Undo::Default { table: t.engine_name.clone(), action, args, direct });
            }
            let Ok((key, _)) = crate::write::entry_key(t, e) else { return Ok(Undo::Nothing) };
            let before = match st.index.get(&t.id).and_then(|m| m.get(&key)) {
                Some(i) => Some(Box::new((i.clone(), direct_of(p, engine, t, i.handle)?))),
                None => None,
            };
            Undo::Entry { table_id: t.id, table: t.engine_name.clone(), key, before }
        }
        E::RegisterEntry(r) => {
            let Some(reg) = p.registers.get(&r.register_id) else { return Ok(Undo::Nothing) };
            let (_, _, cells) = engine.register_cells(&reg.name).map_err(engine_err(&reg.name))?;
            let at = addressed(r.index.as_ref(), cells.len());
            Undo::Register {
                name: reg.name.clone(),
                cells: at.into_iter().map(|i| (i, cells[i].clone())).collect(),
            }
        }
        E::CounterEntry(c) => {
            let Some(x) = p.counters.get(&c.counter_id) else { return Ok(Undo::Nothing) };
            let (_, cells) = engine.counter_cells(&x.name).map_err(engine_err(&x.name))?;
            let at = addressed(c.index.as_ref(), cells.len());
            Undo::Counter {
                name: x.name.clone(),
                cells: at.into_iter().map(|i| (i, cells[i])).collect(),
            }
        }
        E::MeterEntry(m) => {
            let Some(x) = p.meters.get(&m.meter_id) else { return Ok(Undo::Nothing) };
            let cells = engine.meter_states(&x.name).map_err(engine_err(&x.name))?;
            let at = addressed(m.index.as_ref(), cells.len());
            Undo::Meter {
                name: x.name.clone(),
                cells: at.into_iter().map(|i| (i, cells[i].clone())).collect(),
            }
        }
        E::DirectCounterEntry(p4v1::DirectCounterEntry { table_entry: Some(e), .. })
        | E::DirectMeterEntry(p4v1::DirectMeterEntry { table_entry: Some(e), .. }) => {
            let Ok(t) = p.table(e.table_id) else { return Ok(Undo::Nothing) };
            let Ok((key, _)) = crate::write::entry_key(t, e) else { return Ok(Undo::Nothing) };
            let Ok(handle) = crate::resources::handle_of(p, st, engine, t, e) else {
                return Ok(Undo::Nothing);
            };
            Undo::Direct {
                table_id: t.id,
                table: t.engine_name.clone(),
                key,
                handle,
                direct: direct_of(p, engine, t, handle)?,
            }
        }
        E::DirectCounterEntry(_) | E::DirectMeterEntry(_) => Undo::Nothing,
        E::PacketReplicationEngineEntry(pre) => match &pre.r#type {
            Some(Pre::MulticastGroupEntry(g)) if g.multicast_group_id == 0 => Undo::Nothing,
            Some(Pre::MulticastGroupEntry(g)) => Undo::Multicast {
                id: g.multicast_group_id,
                before: st.mcast.get(&g.multicast_group_id).cloned(),
            },
            _ => Undo::Nothing,
        },
        E::DigestEntry(d) => Undo::Digest(digests.save(d.digest_id)),
        _ => Undo::Nothing,
    })
}

/// Replays one undo record.
fn undo(st: &mut State, engine: &mut Engine, digests: &mut Digests, u: Undo) -> Result<(), String> {
    match u {
        Undo::Nothing => {}
        Undo::Entry { table_id, table, key, before } => {
            let index = st.index.entry(table_id).or_default();
            let now = index.get(&key).map(|i| i.handle);
            if let (Some(b), Some(h)) = (&before, now) {
                if b.0.handle == h {
                    // Still the same entry (the update failed before
                    // replacing it): its record (cookie, idle watch) and
                    // its cells may have changed.
                    index.insert(key.clone(), b.0.clone());
                    if let Some(d) = &b.1 {
                        engine.direct_restore(&table, h, d)?;
                    }
                    return Ok(());
                }
            }
            if let Some(now) = index.remove(&key) {
                engine.delete_entry(&table, now.handle)?;
            }
            if let Some(b) = before {
                let (inst, direct) = *b;
                let handle = engine.add_entry(&inst.spec)?;
                index.insert(key, Installed { handle, ..inst });
                if let Some(d) = direct {
                    engine.direct_restore(&table, handle, &d)?;
                }
            }
        }
        Undo::Default { table, action, args, direct } => {
            engine.set_default(&table, &action, &args)?;
            if let Some(d) = direct {
                engine.direct_restore(&table, DEFAULT_ENTRY, &d)?;
            }
        }
        Undo::Register { name, cells } => {
            for (i, v) in cells {
                engine.register_write(&name, i, &v)?;
            }
        }
        Undo::Counter { name, cells } => {
            for (i, v) in cells {
                engine.counter_write(&name, i, v)?;
            }
        }
        Undo::Meter { name, cells } => {
            for (i, v) in cells {
                engine.meter_restore(&name, i, &v)?;
            }
        }
        Undo::Direct { table_id, table, key, handle, direct } => {
            let h = st.index.get(&table_id).and_then(|m| m.get(&key)).map_or(handle, |i| i.handle);
            if let Some(d) = direct {
                engine.direct_restore(&table, h, &d)?;
            }
        }
        Undo::Multicast { id, before } => {
            engine.set_multicast_group(id, before.as_deref().unwrap_or(&[]))?;
            match before {
                Some(copies) => st.mcast.insert(id, copies),
                None => st.mcast.remove(&id),
            };
        }
        Undo::Digest(saved) => digests.restore(saved),
    }
    Ok(())
}

/// Applies `updates` all or none (ROLLBACK_ON_ERROR, DATAPLANE_ATOMIC):
/// `Ok` if every one was applied, else one result per update (see the
/// module docs) with the switch as before. The caller holds the engine
/// lock for the whole call.
pub fn apply(
    p: &Pipeline,
    st: &mut State,
    engine: &mut Engine,
    digests: &mut Digests,
    updates: &[p4v1::Update],
) -> Result<(), Vec<P4Result<()>>> {
    let mut log = Vec::with_capacity(updates.len());
    for (n, u) in updates.iter().enumerate() {
        let r = record(p, st, engine, digests, u).and_then(|rec| {
            log.push(rec);
            crate::write::update_with_digests(p, st, engine, digests, u)
        });
        let Err(mut failed) = r else { continue };
        let mut broken = Vec::new();
        for rec in log.drain(..).rev() {
            if let Err(e) = undo(st, engine, digests, rec) {
                broken.push(e);
            }
        }
        if !broken.is_empty() {
            // Not expected: every record restores what was accepted before.
            failed.message = format!(
                "{}; the rollback failed too, the switch may differ from before the batch: {}",
                failed.message,
                broken.join("; ")
            );
            tracing::error!(error = %failed.message, "P4Runtime: rollback failed");
        }
        let aborted = |why: &str| Err(P4Error::new(Code::Aborted, why.to_string()));
        let mut out: Vec<P4Result<()>> = Vec::with_capacity(updates.len());
        let before = format!("rolled back: update {n} of the batch failed");
        let after = format!("not attempted: update {n} of the batch failed");
        out.extend((0..n).map(|_| aborted(&before)));
        out.push(Err(failed));
        out.extend((n + 1..updates.len()).map(|_| aborted(&after)));
        return Err(out);
    }
    Ok(())
}
