//! Digests (P4Runtime spec §9.8 `DigestEntry`, §16 `DigestList`).
//!
//! # What
//! The program's `digest()` calls queue data in the engine. The
//! forwarding thread hands it over once per round
//! ([`crate::device::Device::hand_over_digests`]: one short lock, a
//! wake-up, nothing else); a task on the server's runtime ([`run`])
//! turns it into `DigestList`s for every role's primary client.
//!
//! # Basic design
//! [`Digests`] is plain state with the clock passed in (tests drive it
//! without a runtime):
//! - A digest is configured by a `DigestEntry` write; data for a digest
//!   that is not configured is discarded (nothing is sent for it).
//! - Each digest's data becomes `P4Data` (a `struct` of `bitstring`s in
//!   the type's member order, canonical bytestrings); its protobuf
//!   encoding is its identity ("duplicate" in the spec's words).
//! - A buffer per digest holds distinct data not in the cache; it is
//!   sent as one `DigestList` when it holds `max_list_size` members (0:
//!   no limit) or its oldest member is `max_timeout_ns` old (0: at the
//!   next round).
//! - The cache: the data of each list sent, by list id, until a
//!   `DigestListAck` for it arrives or it is `ack_timeout_ns` old; data in
//!   the cache or the buffer is not buffered again. `ack_timeout_ns` 0
//!   keeps no cache.
//! - A list with no primary in any role is dropped, counted, and not
//!   cached (nobody saw it). A full stream holds the task back ([`run`]).
//!
//! # Bounds
//! At most [`MAX_WAITING`] digests wait between the forwarding thread and
//! the task (more are dropped and counted); buffers are bounded by
//! `max_list_size` or by the `max_timeout_ns` of their digest.
//!
//! # Thread-safety
//! One mutex in the device, taken after `state` and `engine` and before
//! `arb` (lists are sent while it is held), never across an `.await`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use prost::Message as _;
use sluice_p4::interp::Digest;
use sluice_p4::value::Value;
use tonic::Code;

use crate::convert::{self, P4Error, P4Result};
use crate::device::{lock, Device};
use crate::pipeline::Pipeline;
use crate::proto::p4::v1 as p4v1;
use p4v1::update::Type as U;

/// Most digests waiting for the digest task; later ones are dropped.
pub const MAX_WAITING: usize = 65_536;

/// The longest a buffer waits when `max_list_size` is 0 and
/// `max_timeout_ns` is unset (0 means "at once" anyway); also the
/// longest the task sleeps with nothing to do.
const IDLE: Duration = Duration::from_secs(3600);

/// One configured digest.
#[derive(Clone, Debug)]
struct Configured {
    config: p4v1::digest_entry::Config,
    /// Distinct data waiting, in arrival order, and their encodings.
    buffer: Vec<p4v1::P4Data>,
    buffered: HashSet<Vec<u8>>,
    /// When the oldest member of `buffer` arrived.
    first: Option<Instant>,
    /// The data of each unacked list sent: list id → (sent at, encodings).
    sent: HashMap<u64, (Instant, Vec<Vec<u8>>)>,
    /// The union of `sent`'s encodings.
    cache: HashSet<Vec<u8>>,
}

impl Configured {
    fn new(config: p4v1::digest_entry::Config) -> Self {
        Configured {
            config,
            buffer: Vec::new(),
            buffered: HashSet::new(),
            first: None,
            sent: HashMap::new(),
            cache: HashSet::new(),
        }
    }

    fn max_timeout(&self) -> Duration {
        Duration::from_nanos(self.config.max_timeout_ns.max(0) as u64)
    }

    fn ack_timeout(&self) -> Duration {
        Duration::from_nanos(self.config.ack_timeout_ns.max(0) as u64)
    }

    fn forget(&mut self, list_id: u64) {
        if let Some((_, keys)) = self.sent.remove(&list_id) {
            for k in keys {
                self.cache.remove(&k);
            }
        }
    }
}

/// One digest's state saved by [`Digests::save`].
#[derive(Debug)]
pub struct DigestSaved(u32, Option<Configured>);

/// Counts of the digest path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DigestCounts {
    /// Lists sent to at least one primary.
    pub lists: u64,
    /// Lists dropped: no primary, or every primary's stream stayed full
    /// ([`SEND_WAIT`]).
    pub lists_dropped: u64,
    /// Digests dropped before the task saw them ([`MAX_WAITING`]).
    pub digests_dropped: u64,
    /// Digests whose data's type is no digest of the pipeline's P4Info.
    pub unknown: u64,
}

/// Digest configuration, buffers and cache (see the module docs).
#[derive(Debug, Default)]
pub struct Digests {
    /// The pipeline's digests: (type name, id).
    names: Vec<(String, u32)>,
    configured: HashMap<u32, Configured>,
    waiting: VecDeque<(Instant, Digest)>,
    next_list: u64,
    pub counts: DigestCounts,
}

/// Whether a value's type is named `name` (the P4Info may qualify it).
fn type_name(v: &Value) -> Option<&str> {
    match v {
        Value::Struct(a) | Value::Header(a) => Some(&a.ty.name),
        _ => None,
    }
}

/// The P4Runtime form of a digest's data; errors name what cannot be sent.
pub fn p4data(v: &Value) -> P4Result<p4v1::P4Data> {
    use p4v1::p4_data::Data as D;
    let members = |a: &sluice_p4::value::Aggregate| -> P4Result<Vec<p4v1::P4Data>> {
        a.fields.iter().map(p4data).collect()
    };
    let data = match v {
        Value::Bits(b) | Value::Signed(b) => D::Bitstring(convert::encode(&b.to_big())),
        Value::Bool(b) => D::Bool(*b),
        Value::Varbit { bits, .. } => D::Varbit(p4v1::P4Varbit {
            bitstring: convert::encode(&bits.to_big()),
            bitwidth: bits.width() as i32,
        }),
        Value::Error(e) => D::Error(e.clone()),
        Value::Enum { member, .. } => D::Enum(member.clone()),
        Value::Struct(a) => D::Struct(p4v1::P4StructLike { members: members(a)? }),
        Value::Tuple(vs) => D::Tuple(p4v1::P4StructLike {
            members: vs.iter().map(p4data).collect::<P4Result<_>>()?,
        }),
        Value::Header(a) => {
            let bitstrings = a
                .fields
                .iter()
                .map(|f| match f {
                    Value::Bits(b) | Value::Signed(b) => Ok(convert::encode(&b.to_big())),
                    other => Err(P4Error::unimplemented(format!(
                        "a digest header member of kind {}",
                        other.kind_name()
                    ))),
                })
                .collect::<P4Result<_>>()?;
            D::Header(p4v1::P4Header { is_valid: a.valid, bitstrings })
        }
        other => {
            return Err(P4Error::unimplemented(format!(
                "digest data of kind {} cannot be sent",
                other.kind_name()
            )))
        }
    };
    Ok(p4v1::P4Data { data: Some(data) })
}

fn now_ns() -> i64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64)
}

impl Digests {
    /// Forgets every configuration, buffer and cache: `pipeline` (or
    /// none) is the new program.
    pub fn reset(&mut self, pipeline: Option<&Pipeline>) {
        self.names = pipeline
            .map(|p| {
                p.info.digests.iter().map(|d| (d.preamble.name.clone(), d.preamble.id)).collect()
            })
            .unwrap_or_default();
        self.configured.clear();
        self.waiting.clear();
    }

    fn id_of(&self, v: &Value) -> Option<u32> {
        let n = type_name(v)?;
        self.names
            .iter()
            .find(|(name, _)| crate::pipeline::same_name(name, n))
            .map(|(_, id)| *id)
            .or_else(|| (self.names.len() == 1).then(|| self.names[0].1))
    }

    fn known(&self, id: u32) -> P4Result<()> {
        if self.names.iter().any(|(_, i)| *i == id) {
            Ok(())
        } else {
            Err(P4Error::not_found(format!("the P4Info has no digest with id {id}")))
        }
    }

    /// Digests from the forwarding thread, arrived at `at`.
    pub fn arrive(&mut self, at: Instant, ds: Vec<Digest>) {
        for d in ds {
            if self.waiting.len() >= MAX_WAITING {
                self.counts.digests_dropped += 1;
            } else {
                self.waiting.push_back((at, d));
            }
        }
    }

    /// A `DigestEntry` update.
    pub fn write(&mut self, ty: U, e: &p4v1::DigestEntry) -> P4Result<()> {
        self.known(e.digest_id)?;
        let id = e.digest_id;
        let config = || -> P4Result<p4v1::digest_entry::Config> {
            let c = e.config.ok_or_else(|| {
                P4Error::invalid(format!("digest entry {id}: INSERT and MODIFY need a config"))
            })?;
            for (name, v) in [
                ("max_timeout_ns", c.max_timeout_ns),
                ("max_list_size", i64::from(c.max_list_size)),
                ("ack_timeout_ns", c.ack_timeout_ns),
            ] {
                if v < 0 {
                    return Err(P4Error::invalid(format!(
                        "digest entry {id}: {name} is negative ({v})"
                    )));
                }
            }
            Ok(c)
        };
        match ty {
            U::Insert => {
                let c = config()?;
                if self.configured.contains_key(&id) {
                    return Err(P4Error::new(
                        Code::AlreadyExists,
                        format!("digest {id} is already configured (MODIFY changes it)"),
                    ));
                }
                self.configured.insert(id, Configured::new(c));
            }
            U::Modify => {
                let c = config()?;
                let d = self.configured.get_mut(&id).ok_or_else(|| {
                    P4Error::not_found(format!("digest {id} is not configured (INSERT it first)"))
                })?;
                d.config = c;
                if c.ack_timeout_ns == 0 {
                    d.sent.clear();
                    d.cache.clear();
                }
            }
            U::Delete => {
                if self.configured.remove(&id).is_none() {
                    return Err(P4Error::not_found(format!("digest {id} is not configured")));
                }
            }
            U::Unspecified => return Err(P4Error::invalid("update type is UNSPECIFIED")),
        }
        Ok(())
    }

    /// Digest `id`'s configuration, buffers and cache as they are now,
    /// for [`Digests::restore`] (a Write batch's rollback).
    pub fn save(&self, id: u32) -> DigestSaved {
        DigestSaved(id, self.configured.get(&id).cloned())
    }

    /// Puts back what [`Digests::save`] saved.
    pub fn restore(&mut self, saved: DigestSaved) {
        match saved {
            DigestSaved(id, Some(c)) => self.configured.insert(id, c),
            DigestSaved(id, None) => self.configured.remove(&id),
        };
    }

    /// The configured digest entries a query asks for (`digest_id` 0:
    /// all), in id order.
    pub fn read(&self, q: &p4v1::DigestEntry, out: &mut Vec<p4v1::Entity>) -> P4Result<()> {
        if q.digest_id != 0 {
            self.known(q.digest_id)?;
        }
        let mut ids: Vec<u32> = self
            .configured
            .keys()
            .copied()
            .filter(|i| q.digest_id == 0 || *i == q.digest_id)
            .collect();
        ids.sort_unstable();
        for id in ids {
            let e = p4v1::DigestEntry { digest_id: id, config: Some(self.configured[&id].config) };
            out.push(p4v1::Entity { entity: Some(p4v1::entity::Entity::DigestEntry(e)) });
        }
        Ok(())
    }

    /// A `DigestListAck`: the list's data leaves the cache. An ack of a
    /// list not (or no longer) cached is ignored, as the spec allows.
    pub fn ack(&mut self, a: &p4v1::DigestListAck) -> P4Result<()> {
        self.known(a.digest_id).map_err(|e| P4Error::invalid(e.message))?;
        if let Some(d) = self.configured.get_mut(&a.digest_id) {
            d.forget(a.list_id);
        }
        Ok(())
    }

    /// Does what is due at `now`: expires cached lists, buffers the data
    /// that arrived, and sends the buffers that are full or old enough
    /// through `send` (false: not delivered, counted as dropped).
    pub fn process(&mut self, now: Instant, send: &mut dyn FnMut(p4v1::DigestList) -> bool) {
        for d in self.configured.values_mut() {
            let t = d.ack_timeout();
            let old: Vec<u64> = d
                .sent
                .iter()
                .filter(|(_, (at, _))| now.saturating_duration_since(*at) >= t)
                .map(|(id, _)| *id)
                .collect();
            for id in old {
                d.forget(id);
            }
        }
        let waiting = std::mem::take(&mut self.waiting);
        for (at, dg) in waiting {
            let Some(id) = self.id_of(&dg.data) else {
                self.counts.unknown += 1;
                continue;
            };
            let Some(d) = self.configured.get_mut(&id) else { continue };
            let data = match p4data(&dg.data) {
                Ok(x) => x,
                Err(e) => {
                    tracing::debug!(digest = id, error = %e.message, "digest data not sent");
                    self.counts.unknown += 1;
                    continue;
                }
            };
            let key = data.encode_to_vec();
            if d.cache.contains(&key) || d.buffered.contains(&key) {
                continue;
            }
            d.first.get_or_insert(at);
            d.buffered.insert(key);
            d.buffer.push(data);
            let max = d.config.max_list_size;
            if max > 0 && d.buffer.len() >= max as usize {
                flush(id, d, &mut self.next_list, &mut self.counts, now, send);
            }
        }
        for (&id, d) in &mut self.configured {
            if d.first.is_some_and(|f| now.saturating_duration_since(f) >= d.max_timeout()) {
                flush(id, d, &mut self.next_list, &mut self.counts, now, send);
            }
        }
    }

    /// When [`Digests::process`] next has something to do, if ever.
    pub fn next_deadline(&self) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        let mut at = |t: Instant| next = Some(next.map_or(t, |n| n.min(t)));
        for d in self.configured.values() {
            if let Some(f) = d.first {
                at(f + d.max_timeout());
            }
            for (sent, _) in d.sent.values() {
                at(*sent + d.ack_timeout());
            }
        }
        if !self.waiting.is_empty() {
            at(Instant::now());
        }
        next
    }

    /// Unacked lists cached now, over all digests.
    pub fn cached_lists(&self) -> usize {
        self.configured.values().map(|d| d.sent.len()).sum()
    }
}

/// Sends `d`'s buffer as one list.
fn flush(
    id: u32,
    d: &mut Configured,
    next_list: &mut u64,
    counts: &mut DigestCounts,
    now: Instant,
    send: &mut dyn FnMut(p4v1::DigestList) -> bool,
) {
    d.first = None;
    let keys: Vec<Vec<u8>> = std::mem::take(&mut d.buffered).into_iter().collect();
    let data = std::mem::take(&mut d.buffer);
    if data.is_empty() {
        return;
    }
    *next_list += 1;
    let list_id = *next_list;
    let list = p4v1::DigestList { digest_id: id, list_id, data, timestamp: now_ns() };
    if send(list) {
        counts.lists += 1;
        if d.config.ack_timeout_ns > 0 {
            d.cache.extend(keys.iter().cloned());
            d.sent.insert(list_id, (now, keys));
        }
    } else {
        counts.lists_dropped += 1;
    }
}

/// How long the digest task waits for room on a primary's stream
/// before that primary misses a list.
pub const SEND_WAIT: Duration = Duration::from_secs(1);

/// The digest task: runs [`Digests::process`] whenever the forwarding
/// thread hands digests over or a deadline comes. Lists go to every
/// role's primary with back-pressure: a full stream holds the task
/// (digests wait, up to [`MAX_WAITING`]) for at most [`SEND_WAIT`] per
/// list and primary; a list no primary took is dropped and counted; such a list stays cached
/// until its ack timeout, like any list sent and not acked. It runs until
/// aborted ([`crate::server::serve`] aborts it when the server stops).
pub async fn run(device: Arc<Device>) {
    let mut out: Vec<(Vec<crate::stream::Tx>, p4v1::DigestList)> = Vec::new();
    loop {
        let deadline = lock(&device.digests).next_deadline();
        let wait = deadline.map_or(IDLE, |d| d.saturating_duration_since(Instant::now()));
        if !wait.is_zero() {
            // A hand-over while this task was busy left a permit: no
            // wake-up is lost.
            let _ = tokio::time::timeout(wait, device.digest_wake.notified()).await;
        }
        lock(&device.digests).process(Instant::now(), &mut |list| {
            let txs = lock(&device.arb).primaries_tx();
            if txs.is_empty() {
                return false;
            }
            out.push((txs, list));
            true
        });
        for (txs, list) in out.drain(..) {
            let msg = p4v1::StreamMessageResponse {
                update: Some(p4v1::stream_message_response::Update::Digest(list)),
            };
            // Every role's primary gets the list; it counts as sent if
            // one of them took it (an ack from any of them clears it).
            let mut sent = false;
            for tx in txs {
                let r = tokio::time::timeout(SEND_WAIT, tx.send(Ok(msg.clone()))).await;
                sent |= matches!(r, Ok(Ok(())));
            }
            if !sent {
                let mut ds = lock(&device.digests);
                ds.counts.lists -= 1;
                ds.counts.lists_dropped += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_p4::value::Bits;

    fn learn(mac: u64) -> Digest {
        let ty = Arc::new(sluice_p4::types::AggTy {
            kind: sluice_p4::ast::AggregateKind::Struct,
            name: "learn_t".into(),
            fields: vec![],
        });
        let fields = vec![Value::Bits(Bits::from_u128(48, u128::from(mac)))];
        let a = sluice_p4::value::Aggregate { ty, valid: true, fields };
        Digest { receiver: 1, data: Value::Struct(Box::new(a)) }
    }

    fn configured(list: i32, timeout_ns: i64, ack_ns: i64) -> Digests {
        let mut d = Digests { names: vec![("learn_t".into(), 7)], ..Digests::default() };
        let c = p4v1::digest_entry::Config {
            max_timeout_ns: timeout_ns,
            max_list_size: list,
            ack_timeout_ns: ack_ns,
        };
        d.write(U::Insert, &p4v1::DigestEntry { digest_id: 7, config: Some(c) }).unwrap();
        d
    }

    /// Runs `process` at `now`; the lists sent.
    fn step(d: &mut Digests, now: Instant) -> Vec<p4v1::DigestList> {
        let mut out = Vec::new();
        d.process(now, &mut |l| {
            out.push(l);
            true
        });
        out
    }

    #[test]
    fn the_cache_expires_after_the_ack_timeout() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut d = configured(1, 0, 100_000_000);
        d.arrive(t0, vec![learn(1)]);
        assert_eq!(step(&mut d, t0).len(), 1);
        d.arrive(t0 + ms(50), vec![learn(1)]);
        assert!(step(&mut d, t0 + ms(50)).is_empty(), "cached for 100 ms");
        assert_eq!(d.next_deadline(), Some(t0 + ms(100)), "the cache's expiry wakes the task");
        d.arrive(t0 + ms(100), vec![learn(1)]);
        assert_eq!(step(&mut d, t0 + ms(100)).len(), 1, "expired at 100 ms");
    }

    #[test]
    fn the_oldest_member_sets_the_timeout() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut d = configured(0, 30_000_000, 0);
        d.arrive(t0, vec![learn(1)]);
        assert!(step(&mut d, t0).is_empty());
        d.arrive(t0 + ms(20), vec![learn(2)]);
        assert!(step(&mut d, t0 + ms(20)).is_empty());
        assert_eq!(d.next_deadline(), Some(t0 + ms(30)));
        let l = step(&mut d, t0 + ms(30));
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].data.len(), 2);
        assert_eq!(d.next_deadline(), None);
    }

    #[test]
    fn unconfigured_and_unknown_data_is_not_sent() {
        let t0 = Instant::now();
        let mut d = configured(1, 0, 0);
        d.write(U::Delete, &p4v1::DigestEntry { digest_id: 7, config: None }).unwrap();
        d.arrive(t0, vec![learn(1)]);
        assert!(step(&mut d, t0).is_empty());
        let mut d = configured(1, 0, 0);
        d.arrive(t0, vec![Digest { receiver: 1, data: Value::Bool(true) }]);
        assert!(step(&mut d, t0).is_empty());
        assert_eq!(d.counts.unknown, 1);
    }
}
