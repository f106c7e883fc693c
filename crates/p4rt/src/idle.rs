//! Idle timeouts (P4Runtime spec §9.1.8 "Idle-timeout" and §16.3
//! "Table Idle Timeout Notification").
//!
//! # What
//! A table declared with `support_timeout = true` is NOTIFY_CONTROL in
//! the P4Info. Its entries may be written with `idle_timeout_ns` (a TTL;
//! 0: never expires). When an entry has not been hit for its TTL, the
//! primary client of every role gets an `IdleTimeoutNotification`
//! on its stream. The entry stays installed (the controller decides what
//! to do, usually a DELETE); its timer is reset by the notification, so
//! an entry nobody hits is reported again after each further TTL, and a
//! hit re-arms it. A Read whose entry sets `time_since_last_hit` gets
//! the time since the entry's last hit (for every entry of such a table,
//! TTL or not). `idle_timeout_ns` on a table without support, on a
//! default entry, or negative is INVALID_ARGUMENT, and so is
//! `time_since_last_hit` in a write or in a read of such a table or of a
//! default entry.
//!
//! # Basic design
//! The engine counts hits per entry ([`Manage::entry_hits`]: the
//! interpreter's per-entry count, the compiled core's per-rule tally,
//! which cache hits bump too). Every [`SCAN_PERIOD`] a task
//! ([`run`]) reads the counts of every table with idle timeouts; a count
//! that changed since the last scan is a hit at the time of the scan.
//! Expired entries of one table go out in one notification (entries
//! batched per table and scan, never held longer than one scan).
//!
//! Resolution: [`SCAN_PERIOD`] (50 ms). A notification comes between
//! TTL and TTL + 2 × [`SCAN_PERIOD`] after the last hit (a hit is seen
//! at the first scan after it); `time_since_last_hit` is 0 for an entry
//! hit since the last scan, else the time since the scan that saw its
//! last hit (at most one period short). TTLs below the period act as
//! one period, as the spec allows ("the smallest value they can
//! support").
//!
//! Cost: a scan takes the state and engine locks once and reads one
//! count per entry of the tables that support timeouts (none: nothing
//! is read); the forwarding thread waits for the engine lock meanwhile.
//! The per-packet cost is the engine's own hit counting.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use sluice_p4::engines::Engine;
use sluice_p4::target::Manage as _;

use crate::convert::{P4Error, P4Result};
use crate::device::{lock, Device, State};
use crate::pipeline::{Pipeline, TableMap};
use crate::proto::p4::v1 as p4v1;

/// How often the engine's hit counts are read.
pub const SCAN_PERIOD: Duration = Duration::from_millis(50);

/// An installed entry's idle-timeout state.
#[derive(Clone, Copy, Debug)]
pub struct Watch {
    /// The TTL as written (0: no notifications).
    pub timeout_ns: i64,
    /// The engine's hit count at the last scan.
    pub hits: u64,
    /// When the entry was last seen hit (when it was added, if never).
    pub last_hit: Instant,
    /// When its TTL started: the last hit, notification or write.
    pub armed: Instant,
}

impl Watch {
    /// The watch of an entry just added (`None` if its table has no idle
    /// timeouts); its engine count starts at 0.
    pub fn new(t: &TableMap, e: &p4v1::TableEntry, now: Instant) -> Option<Watch> {
        t.supports_timeout.then_some(Watch {
            timeout_ns: e.idle_timeout_ns,
            hits: 0,
            last_hit: now,
            armed: now,
        })
    }

    /// The watch after a MODIFY (the engine's entry is a new one, counting
    /// from 0): the TTL written, counted from now; the last hit kept.
    pub fn modified(self, timeout_ns: i64, now: Instant) -> Watch {
        Watch { timeout_ns, hits: 0, last_hit: self.last_hit, armed: now }
    }

    /// The same entry's watch in a new engine (RECONCILE_AND_COMMIT),
    /// given the old engine's count now: its count starts at 0; its last
    /// hit and its TTL's start are kept, unless it was hit since the last
    /// scan (then both are now).
    pub fn carried(self, hits: Option<u64>, now: Instant) -> Watch {
        let hit = hits.is_some_and(|h| h != self.hits);
        Watch {
            hits: 0,
            last_hit: if hit { now } else { self.last_hit },
            armed: if hit { now } else { self.armed },
            ..self
        }
    }

    /// Time since the last hit, given the engine's count now.
    pub fn elapsed(&self, hits: Option<u64>, now: Instant) -> Duration {
        if hits.is_some_and(|h| h != self.hits) {
            return Duration::ZERO;
        }
        now.saturating_duration_since(self.last_hit)
    }
}

/// Checks an INSERT's or MODIFY's idle-timeout fields.
pub fn check_write(t: &TableMap, e: &p4v1::TableEntry) -> P4Result<()> {
    if e.time_since_last_hit.is_some() {
        return Err(P4Error::invalid(format!(
            "table `{}`: time_since_last_hit is read-only; leave it unset in a write",
            t.name
        )));
    }
    if e.idle_timeout_ns < 0 {
        return Err(P4Error::invalid(format!(
            "table `{}`: idle_timeout_ns {} is negative",
            t.name, e.idle_timeout_ns
        )));
    }
    if e.idle_timeout_ns != 0 && !t.supports_timeout {
        return Err(P4Error::invalid(format!(
            "table `{}` does not support idle timeouts (no `support_timeout = true`): \
             idle_timeout_ns must be 0, not {}",
            t.name, e.idle_timeout_ns
        )));
    }
    Ok(())
}

/// Checks a default entry's idle-timeout fields (the spec gives default
/// entries none), in a write or a read.
pub fn check_default(t: &TableMap, e: &p4v1::TableEntry) -> P4Result<()> {
    if e.idle_timeout_ns != 0 || e.time_since_last_hit.is_some() {
        return Err(P4Error::invalid(format!(
            "the default entry of table `{}` has no idle timeout: leave idle_timeout_ns 0 and \
             time_since_last_hit unset",
            t.name
        )));
    }
    Ok(())
}

/// Checks a Read query's `time_since_last_hit` against table `t`.
pub fn check_read(t: &TableMap, q: &p4v1::TableEntry) -> P4Result<()> {
    if q.time_since_last_hit.is_some() && !t.supports_timeout {
        return Err(P4Error::invalid(format!(
            "table `{}` does not support idle timeouts (no `support_timeout = true`): \
             time_since_last_hit cannot be read",
            t.name
        )));
    }
    Ok(())
}

/// The engine's hit counts of table `t` by handle (empty for a table
/// without idle timeouts).
pub fn hits_of(engine: &Engine, t: &TableMap) -> P4Result<HashMap<u64, u64>> {
    if !t.supports_timeout {
        return Ok(HashMap::new());
    }
    let hits = engine.entry_hits(&t.engine_name).map_err(P4Error::invalid)?;
    Ok(hits.into_iter().collect())
}

/// Fills a read entry's idle-timeout fields from its watch: always
/// `idle_timeout_ns`, and `time_since_last_hit` when the query sets it.
pub fn fill_entry(
    q: &p4v1::TableEntry,
    w: Option<&Watch>,
    hits: Option<u64>,
    now: Instant,
    e: &mut p4v1::TableEntry,
) {
    let Some(w) = w else { return };
    e.idle_timeout_ns = w.timeout_ns;
    if q.time_since_last_hit.is_some() {
        let ns = w.elapsed(hits, now).as_nanos().min(i64::MAX as u128) as i64;
        e.time_since_last_hit = Some(p4v1::table_entry::IdleTimeout { elapsed_ns: ns });
    }
}

/// One scan at `now`: absorbs the hits since the last scan and returns
/// the notifications due (one per table with expired entries), each
/// entry's timer reset. A table whose counts cannot be read is skipped
/// (and logged).
pub fn scan(
    p: &Pipeline,
    st: &mut State,
    engine: &Engine,
    now: Instant,
) -> Vec<p4v1::IdleTimeoutNotification> {
    let mut out = Vec::new();
    for id in &p.table_order {
        let Some(t) = p.tables.get(id).filter(|t| t.supports_timeout) else { continue };
        let Some(entries) = st.index.get_mut(id).filter(|m| !m.is_empty()) else { continue };
        let hits = match hits_of(engine, t) {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(table = %t.name, error = %e.message, "idle timeouts: no hit counts");
                continue;
            }
        };
        let mut expired = Vec::new();
        for inst in entries.values_mut() {
            let Some(w) = inst.idle.as_mut() else { continue };
            if let Some(&h) = hits.get(&inst.handle) {
                if h != w.hits {
                    w.hits = h;
                    w.last_hit = now;
                    w.armed = now;
                }
            }
            let ttl = Duration::from_nanos(w.timeout_ns.max(0) as u64);
            if w.timeout_ns > 0 && now.saturating_duration_since(w.armed) >= ttl {
                w.armed = now;
                expired.push((inst.handle, w.timeout_ns));
            }
        }
        if expired.is_empty() {
            continue;
        }
        let dump = match engine.dump(&t.engine_name) {
            Ok((d, _)) => d,
            Err(e) => {
                tracing::warn!(table = %t.name, error = %e, "idle timeouts: no dump");
                continue;
            }
        };
        let by_handle: HashMap<u64, i64> = expired.into_iter().collect();
        let table_entry: Vec<p4v1::TableEntry> = dump
            .iter()
            .filter_map(|d| {
                let ttl = by_handle.get(&d.handle)?;
                let mut e = crate::read::entry_of(p, t, d);
                e.idle_timeout_ns = *ttl;
                Some(e)
            })
            .collect();
        if table_entry.is_empty() {
            continue;
        }
        let timestamp = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos().min(i64::MAX as u128) as i64);
        out.push(p4v1::IdleTimeoutNotification { table_entry, timestamp });
    }
    out
}

/// Scans every [`SCAN_PERIOD`] and sends the notifications due to every
/// role's primary (dropped for one whose stream is full, or if there is
/// none: the spec
/// lets a server drop them, and the entry is reported again after
/// another TTL).
pub async fn run(device: Arc<Device>) {
    let mut tick = tokio::time::interval(SCAN_PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let msgs = {
            let mut st = lock(&device.state);
            let Some(p) = st.pipeline.clone() else { continue };
            if !p.tables.values().any(|t| t.supports_timeout) {
                continue;
            }
            let engine = lock(&device.engine);
            scan(&p, &mut st, &engine, Instant::now())
        };
        for m in msgs {
            let msg = p4v1::StreamMessageResponse {
                update: Some(p4v1::stream_message_response::Update::IdleTimeoutNotification(m)),
            };
            lock(&device.arb).send_to_primaries(msg);
        }
    }
}
