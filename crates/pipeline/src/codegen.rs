//! Native code for flow tables, built off the forwarding path.
//!
//! ## What
//! With `Datapath::Compiled` every flow table gets native code from
//! `sluice-tablejit` (Cranelift) that gives exactly the answer of
//! [`crate::table::FlowTable::lookup`] (same entry; consulted bits valid
//! for the megaflow cache):
//! - **straight-line code** for a table of at most
//!   [`JitOptions::straight_max`] entries: one test per entry, in table
//!   order, masks and values as immediates;
//! - **per-ingress-port variants** of that code when entries match on
//!   `in_port` (VOSYSwitch): one variant per port named by some entry,
//!   holding only the entries that can match packets from that port and
//!   without the `in_port` tests; packets from other ports use the
//!   full code. Made only when a variant removes work;
//! - **specialised hash probes** for larger tables: one tuple-space probe
//!   per distinct mask, with that mask, its words and its hash as
//!   constants in the code (`sluice_tablejit::ProbeTable`).
//!
//! While code is being built, after any change to the table and when
//! Cranelift refuses a table (too many masks, say), the tuple-space index
//! serves lookups: code is an accelerator, never a dependency.
//!
//! ## Design: built in the background
//! [`JitOptions::background`] (the daemon's and `sluice bench`'s setting)
//! moves building to a [`Compiler`]: one process-wide compiler thread that
//! the *caller* supplies (`Config::compiler`; the daemon's is
//! `sluice_datapath::compiler()`), since this crate starts no thread and
//! reads no clock of its own. Without a compiler, building happens at
//! settle time as without `background`. A table whose
//! entries changed *submits* a [`Job`] holding a copy of its rules when it
//! is settled (small tables at once; tables above `straight_max` only after
//! [`QUIET`] without changes, so a burst of 100k flow-mods copies the
//! rules once, not per flow-mod). Forwarding never waits: until the job is
//! done the table uses its index, and a flow-mod is visible to packets at
//! the next publication (microseconds), whatever the compiler is doing.
//! When a job is done, the next settle of the master installs its code (if
//! no change came in between: a change cancels the job) and the next
//! publication hands it to the published copies, which never compile
//! themselves. Without `background` (tests), settling builds the code at
//! once, so results are deterministic.
//!
//! ## Costs
//! Compiling runs on its own thread (measured in `sluice-tablejit`:
//! ~75 µs for 1 rule, ~1.6 ms for 64; probe tables: see its docs). The
//! control thread pays one copy of the rules per submitted job (384 bytes
//! per entry) and an atomic load per waiting table per settle.
//!
//! ## Invariants
//! - Installed code was built from the entries the table holds now, in
//!   this order (a change drops the code and cancels the job).
//! - Code is immutable and shared (`Arc`) by the master and its copies.
#![allow(clippy::type_complexity)]

use crate::table::FlowEntry;
use sluice_packet::key::{FlowKey, FlowMask, FIXED_LAYOUT, KEY_WORDS};
use sluice_tablejit::{CompileOptions, CompiledTable, NotResumable, ProbeTable, Rule, RuleWords};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a large table must stay unchanged before its code is built.
pub const QUIET: Duration = Duration::from_millis(50);

/// Where table code is built in the background, and the clock that times
/// a large table's [`QUIET`] period. Supplied by whoever runs the pipeline
/// (the daemon, `sluice bench`, tests): the pipeline starts no thread and
/// reads no clock.
pub trait Compiler: Send + Sync + std::fmt::Debug {
    /// Runs `job` ([`Job::run`]) soon, off the caller's thread. A compiler
    /// that cannot must run it before returning: code must always come.
    fn submit(&self, job: Arc<Job>);
    /// Monotonic time in nanoseconds.
    fn now_ns(&self) -> u64;
}

/// How flow tables are compiled (`Datapath::Compiled` only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JitOptions {
    /// Build code on the compiler thread (else when the table settles).
    pub background: bool,
    /// Largest table compiled to straight-line code; larger tables get
    /// hash probes.
    pub straight_max: usize,
}

impl Default for JitOptions {
    fn default() -> Self {
        JitOptions { background: false, straight_max: crate::table::COMPILE_MAX }
    }
}

/// A table's native code.
pub enum Code {
    Straight(CompiledTable),
    /// Variants by ingress port (sorted by port), and the full code for
    /// the ports no variant covers.
    PerPort {
        word: usize,
        shift: u32,
        ports: Vec<(u32, CompiledTable)>,
        any: CompiledTable,
    },
    /// Tuple-space probes with constant masks (large tables).
    Probe(ProbeTable),
}

impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Code::Straight(c) => write!(f, "Straight({} rules)", c.len()),
            Code::PerPort { ports, any, .. } => {
                write!(f, "PerPort({} rules, {} ports)", any.len(), ports.len())
            }
            Code::Probe(p) => write!(f, "Probe({} rules, {} masks)", p.len(), p.subtables()),
        }
    }
}

impl Code {
    /// The index of the entry `key` hits; ORs the consulted bits into `wc`.
    #[inline]
    pub fn lookup(&self, key: &FlowKey, wc: &mut FlowMask) -> Option<usize> {
        match self {
            Code::Straight(c) => c.lookup(key, wc),
            Code::PerPort { word, shift, ports, any } => {
                let port = key.words.get(*word).map_or(0, |w| (w >> shift) as u32);
                match ports.binary_search_by_key(&port, |p| p.0) {
                    Ok(i) => ports.get(i).map_or(any, |p| &p.1).lookup(key, wc),
                    Err(_) => any.lookup(key, wc),
                }
            }
            Code::Probe(p) => p.lookup(key, wc),
        }
    }

    /// The lookup of a table with guarded entries: the first entry in table
    /// order that matches `key` and that `accept` takes, `accept` called
    /// on matching entries in that order, each at most once (see
    /// `FlowTable::lookup_guarded`). `Err` when the code was built without
    /// the resumable entry (the caller uses the index).
    pub fn lookup_guarded(
        &self,
        key: &FlowKey,
        wc: &mut FlowMask,
        accept: &mut dyn FnMut(usize) -> bool,
    ) -> Result<Option<usize>, NotResumable> {
        match self {
            Code::Straight(c) => c.lookup_guarded(key, wc, accept),
            Code::PerPort { word, shift, ports, any } => {
                let port = key.words.get(*word).map_or(0, |w| (w >> shift) as u32);
                let c = match ports.binary_search_by_key(&port, |p| p.0) {
                    Ok(i) => ports.get(i).map_or(any, |p| &p.1),
                    Err(_) => any,
                };
                c.lookup_guarded(key, wc, accept)
            }
            Code::Probe(p) => Ok(p.lookup_guarded(key, wc, accept)),
        }
    }

    /// A short description for logs and tests.
    pub fn kind(&self) -> &'static str {
        match self {
            Code::Straight(_) => "straight",
            Code::PerPort { .. } => "per-port",
            Code::Probe(_) => "probe",
        }
    }
}

/// Most per-port variants per table.
const MAX_PORT_VARIANTS: usize = 16;

/// Builds the code for `rules` (table order), or `None` when the table is
/// left to the index. `resumable`: the table has guarded entries, so the
/// straight-line code also gets the entry that resumes after a rejected
/// candidate (probe tables always can).
pub fn build(entries: &[Arc<FlowEntry>], opts: &JitOptions, resumable: bool) -> Option<Code> {
    if entries.len() > opts.straight_max {
        // Read from the entries in place (a copy of every rule is 384
        // bytes each). More than MAX_PROBE_MASKS masks: the index serves
        // the table.
        return ProbeTable::build(entries).ok().map(Code::Probe);
    }
    let rules = rules_of(entries);
    let rules = &rules[..];
    let with = |known| CompileOptions { known, resumable };
    let any = CompiledTable::compile_with(rules, &with(None)).ok()?;
    Some(match per_port(rules, resumable) {
        Some((word, shift, ports)) => Code::PerPort { word, shift, ports, any },
        None => Code::Straight(any),
    })
}

/// Per-port variants, when entries match exactly on `in_port` and every
/// variant drops at least a quarter of the entries for its port.
fn per_port(rules: &[Rule], resumable: bool) -> Option<(usize, u32, Vec<(u32, CompiledTable)>)> {
    let slot = FIXED_LAYOUT.slot(sluice_packet::Field::InPort);
    let word = usize::from(slot.word);
    let full = slot.word_mask();
    let mut ports: Vec<u32> = rules
        .iter()
        .filter(|(m, _)| m.get(word).is_some_and(|w| w & full == full))
        .filter_map(|(_, v)| v.get(word).map(|w| ((w & full) >> slot.shift) as u32))
        .collect();
    ports.sort_unstable();
    ports.dedup();
    if ports.len() < 2 || ports.len() > MAX_PORT_VARIANTS {
        return None;
    }
    let mut known_mask = FlowMask::ZERO;
    *known_mask.words.get_mut(word)? = full;
    let mut variants = Vec::with_capacity(ports.len());
    for p in ports {
        let mut known = FlowKey::ZERO;
        *known.words.get_mut(word)? = u64::from(p) << slot.shift;
        let opts = CompileOptions { known: Some((known_mask, known)), resumable };
        let v = CompiledTable::compile_with(rules, &opts).ok()?;
        if v.live_rules() * 4 > rules.len() * 3 {
            return None;
        }
        variants.push((p, v));
    }
    Some((word, u32::from(slot.shift), variants))
}

/// One build request: the rules (taken by the compiler thread, dropped on
/// cancel) and the result.
#[derive(Debug, Default)]
pub struct Job {
    /// The table's entries when the job was submitted (shared pointers, not
    /// copies).
    rules: Mutex<Option<(Vec<Arc<FlowEntry>>, JitOptions, bool)>>,
    cancelled: AtomicBool,
    done: AtomicBool,
    out: Mutex<Option<Arc<Code>>>,
}

impl Job {
    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// The built code (`None` if the table is left to the index).
    pub fn take(&self) -> Option<Arc<Code>> {
        self.out.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// The table changed: drop the rules if the job has not started.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
        self.rules.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// Builds the code (the compiler's side; a cancelled job builds
    /// nothing).
    pub fn run(&self) {
        let work = self.rules.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((rules, opts, resumable)) = work {
            if !self.cancelled.load(Ordering::Acquire) {
                let code = build(&rules, &opts, resumable).map(Arc::new);
                *self.out.lock().unwrap_or_else(|e| e.into_inner()) = code;
            }
        }
        self.done.store(true, Ordering::Release);
    }
}

/// Hands `rules` to `compiler` as a new job.
pub fn submit(
    rules: Vec<Arc<FlowEntry>>,
    opts: JitOptions,
    resumable: bool,
    compiler: &dyn Compiler,
) -> Arc<Job> {
    let job = Arc::new(Job { rules: Mutex::new(Some((rules, opts, resumable))), ..Job::default() });
    compiler.submit(job.clone());
    job
}

/// Rules of a (small) table in the form the straight-line compiler takes.
pub fn rules_of(entries: &[Arc<FlowEntry>]) -> Vec<Rule> {
    entries.iter().map(|e| (e.rule.mask.words, e.rule.value.words)).collect()
}

/// The probe compiler reads an entry's rule where it is.
impl RuleWords for FlowEntry {
    fn words(&self) -> (&[u64; KEY_WORDS], &[u64; KEY_WORDS]) {
        (&self.rule.mask.words, &self.rule.value.words)
    }
}
