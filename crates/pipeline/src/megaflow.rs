//! What the caches make of one packet, for traces (`sluice trace`, the
//! daemon's live trace): the megaflow the fast walk installs and which
//! cache serves the packet.
//!
//! # Basic design
//! Nothing is recomputed here: [`Pipeline::cache_trace`] runs the packet
//! through the core's fast walk (`sluice_core::walk::run_served`) with a
//! fresh worker, twice. The first run misses and records as every miss
//! does; its [`Recording`] (the recorder's key and un-wildcarding mask
//! `wc`, how far it recorded, why it stopped) is what the cache installed.
//! The second run says which cache serves the same packet next. With the
//! pipeline's caches off, the first run uses the megaflow cache anyway,
//! so the trace shows what a cache would install, and the second runs
//! with caches off.
//!
//! [`megaflow_match`] turns `key & wc` back into an OpenFlow [`Match`]
//! (every OXM basic field with a bit in `wc`, its value masked), so it
//! prints with the ovs-ofctl printer (`in_port=1,ip,nw_dst=10.0.0.0/8`).
//! The presence bits of the fixed layout are left out (each field implies
//! its own); key bits no OXM field names (POF windows and their presence
//! bits) are returned beside the match as raw key words.
//!
//! # Side effects
//! None on the switch's state: the two runs go through the fast walk with
//! a dry shard ([`Shard::dry`]), like [`Pipeline::trace`], so counters,
//! last-use times, meter buckets and filter-program maps are left as they
//! were (programs run on copies of their maps) and no packet-in is
//! buffered. The outputs go to the caller's transmit function, the
//! packet-ins nowhere (the throwaway worker's queue).

use crate::exec::{OfWorker, Worker};
use crate::oxm_field;
use crate::Pipeline;
use sluice_core::cache::Closed;
use sluice_core::tally::Shard;
use sluice_core::walk::{run_served, CacheMode, Served, Tx};
use sluice_ofp::oxm::{FieldBytes, FieldId, Match, Oxm};
use sluice_ofp::print::fields::match_str;
use sluice_packet::key::{FlowKey, FlowMask, FIXED_LAYOUT, KEY_WORDS};
use sluice_packet::parse::Meta;

pub use sluice_core::walk::Recording;

/// What the caches made of one packet ([`Pipeline::cache_trace`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheTrace {
    /// The pipeline's cache mode.
    pub mode: CacheMode,
    /// The first run: a miss and its recording (or the tables, when the
    /// frame could not be loaded).
    pub first: Served,
    /// The same packet again, in the pipeline's cache mode.
    pub second: Served,
}

impl Pipeline {
    /// Run `frame`, received on `in_port`, twice through the fast walk
    /// with a fresh worker and report what the caches did (see the module
    /// docs). Outputs go to `tx`.
    pub fn cache_trace(&mut self, in_port: u32, frame: &[u8], tx: &mut dyn Tx) -> CacheTrace {
        self.settle();
        let mode = self.cfg.cache;
        let mut w: Worker = Worker::new(Shard::OWNER.dry(), OfWorker::default());
        w.set_now(self.now_ns);
        let meta = Meta { in_port, in_phy_port: in_port, metadata: 0, tunnel_id: 0 };
        let mut once = |w: &mut Worker, mode: CacheMode| {
            let mut pkt = w.take_pkt();
            pkt.set_extract(self.windows.extract());
            let served = if pkt.load(frame, meta) {
                Some(run_served(&*self, w, &mut pkt, tx, mode))
            } else {
                None
            };
            w.put_pkt(pkt);
            served
        };
        // Auto is traced as its fullest choice, both caches.
        let run = if mode == CacheMode::Auto { CacheMode::On } else { mode };
        let record = if run == CacheMode::Off { CacheMode::Megaflow } else { run };
        let first = once(&mut w, record).unwrap_or(Served::Tables);
        let second = once(&mut w, run).unwrap_or(Served::Tables);
        CacheTrace { mode, first, second }
    }
}

/// Key bits of a megaflow that no OXM field names: `(word, value, mask)`.
pub type RawWords = Vec<(usize, u64, u64)>;

/// The megaflow `key & wc` as an OpenFlow match, and the masked key bits
/// no OXM basic field names (see the module docs).
pub fn megaflow_match(key: &FlowKey, wc: &FlowMask) -> (Match, RawWords) {
    let as_key = FlowKey { words: wc.words };
    let mut covered = FlowMask::ZERO;
    let mut oxms = Vec::new();
    for &f in FieldId::ALL {
        let field = oxm_field::field(f);
        let ones = [0xffu8; 16];
        // Every field fits its own length of ones.
        let _ = FIXED_LAYOUT.set_field_mask(&mut covered, field, &ones[..f.len()]);
        let mask = FIXED_LAYOUT.get(&as_key, field).to_u128();
        if mask == 0 {
            continue;
        }
        let value = FIXED_LAYOUT.get(key, field).to_u128() & mask;
        let full = if f.bits() >= 128 { u128::MAX } else { (1u128 << f.bits()) - 1 };
        let mask = (mask != full).then(|| FieldBytes::from_u128(mask, f.len()));
        oxms.push(Oxm::Basic { field: f, value: FieldBytes::from_u128(value, f.len()), mask });
    }
    let presence = FIXED_LAYOUT.presence_word();
    let raw = (0..KEY_WORDS)
        .filter(|&i| i != presence)
        .filter_map(|i| {
            let m = wc.words[i] & !covered.words[i];
            (m != 0).then_some((i, key.words[i] & m, m))
        })
        .collect();
    (Match::new(oxms), raw)
}

/// The megaflow of a recording in ovs-ofctl match syntax, raw key words
/// after the fields (`key_word21=0x1f/0xff`); `(all packets)` when the
/// walk consulted nothing.
pub fn megaflow_str(r: &Recording) -> String {
    let (m, raw) = megaflow_match(&r.key, &r.wc);
    let mut parts = vec![match_str(&m)];
    parts.retain(|p| !p.is_empty());
    parts.extend(raw.iter().map(|(i, v, m)| format!("key_word{i}={v:#x}/{m:#x}")));
    if parts.is_empty() {
        "(all packets)".to_string()
    } else {
        parts.join(",")
    }
}

fn mode_str(m: CacheMode) -> &'static str {
    match m {
        CacheMode::Off => "off",
        CacheMode::Megaflow => "megaflow",
        CacheMode::On => "on (exact-match, then megaflow)",
        CacheMode::Auto => "auto, traced as on (exact-match, then megaflow)",
    }
}

fn served_str(s: &Served) -> String {
    match s {
        Served::Tables => "the tables (no cache)".to_string(),
        Served::Exact => "the exact-match cache".to_string(),
        Served::Megaflow => "the megaflow cache".to_string(),
        Served::Miss(r) if r.installed => "a cache miss: the tables".to_string(),
        Served::Miss(_) => "a cache miss: the tables (not cacheable)".to_string(),
    }
}

fn closed_str(c: Closed, hops: usize) -> String {
    let s = if hops == 1 { "" } else { "s" };
    format!(
        "not cacheable after {hops} recorded lookup{s}: recording stopped at {c}; \
         the lookups after it run live on a cache hit"
    )
}

/// The trace's cache lines: `Megaflow: ...` and `Cache: ...`.
pub fn cache_lines(t: &CacheTrace) -> Vec<String> {
    let mut lines = Vec::new();
    match &t.first {
        Served::Miss(r) if !r.installed => lines.push(
            "Megaflow: not cacheable (nothing was recorded, or too many guard results)".into(),
        ),
        Served::Miss(r) => {
            let mut l = format!("Megaflow: {}", megaflow_str(r));
            if let Some(c) = r.closed {
                l.push_str(&format!(" ({})", closed_str(c, r.hops)));
            }
            if t.mode == CacheMode::Off {
                l.push_str(
                    " (what a megaflow cache would install; this pipeline's caches are off)",
                );
            }
            lines.push(l);
        }
        other => lines.push(format!("Megaflow: none ({})", served_str(other))),
    }
    let mut l = format!("Cache: {}", mode_str(t.mode));
    if t.mode != CacheMode::Off {
        l.push_str(&format!(
            "; this packet: {}; the same packet again: {}",
            served_str(&t.first),
            served_str(&t.second)
        ));
        if let Served::Miss(r) = &t.first {
            if r.installed && !r.composed {
                l.push_str(" (the entry replays its lookups: no composed program)");
            }
        }
    } else {
        l.push_str("; every packet is looked up in the tables");
    }
    lines.push(l);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_ofp::ofctl::{parse_flow, Usage};

    fn rule(text: &str) -> (FlowKey, FlowMask) {
        let spec = parse_flow(text, Usage::Add).expect("a flow");
        let r = crate::rule::Rule::compile(&spec.r#match).expect("compiles");
        (r.value, r.mask)
    }

    #[test]
    fn a_compiled_match_prints_back() {
        for (text, want) in [
            ("in_port=1,ip,nw_dst=10.0.0.0/8,actions=drop", "ip,in_port=1,nw_dst=10.0.0.0/8"),
            ("dl_dst=02:00:00:00:00:02,actions=drop", "dl_dst=02:00:00:00:00:02"),
            ("tcp,tp_dst=80,actions=drop", "tcp,tp_dst=80"),
            ("actions=drop", ""),
        ] {
            let (key, wc) = rule(text);
            let (m, raw) = megaflow_match(&key, &wc);
            assert_eq!(match_str(&m), want, "{text}");
            assert!(raw.is_empty(), "{text}: {raw:?}");
        }
        // Bits outside every field are shown as key words.
        let mut wc = FlowMask::ZERO;
        wc.words[KEY_WORDS - 1] = 0xff;
        let mut key = FlowKey::ZERO;
        key.words[KEY_WORDS - 1] = 0x1234;
        let r = Recording { key, wc, hops: 1, closed: None, installed: true, composed: true };
        assert_eq!(megaflow_str(&r), format!("key_word{}=0x34/0xff", KEY_WORDS - 1));
    }
}
