//! Filter programs and pcap-filter expressions as guards on flow rules
//! (Oko's model, issue 13).
//!
//! # What
//! A controller loads an eBPF object under a *program id*
//! (`LOAD_FILTER_PROG`, `docs/EXPERIMENTER.md`); a flow rule names it with
//! the `filter_prog` match field, or carries a pcap-filter expression in
//! the `pcap_filter` field. Both become guards (`sluice_core::guard`):
//! after the rule's fields match, the program runs on the packet and the
//! rule matches only if it returns non-zero; otherwise the lookup goes on
//! with lower-priority rules.
//!
//! # Semantics
//! - **One id, one program, one set of maps**, shared by every rule that
//!   names the id (Oko's model). Loading an id that is loaded is refused
//!   (`PROG_EXISTS`): unload it first. Unloading an id that a rule still
//!   names is refused (`PROG_IN_USE`).
//! - **Runs are serialised per program** that has maps (one without
//!   maps has no state and runs without the lock): a run holds its program's maps
//!   (a mutex per loaded program) from its first instruction to its
//!   return, so every run — and therefore every map operation in it — is
//!   atomic with respect to the other workers' runs and to the
//!   controller's `UPDATE_MAP`/`DUMP_MAP`. Workers contend only when they
//!   run the same program at the same moment. Per-worker arrays
//!   (`BPF_MAP_TYPE_PERCPU_ARRAY`) have one slab per counter shard (the
//!   worker's shard index picks it); the controller reads slab 0 of them
//!   (`DUMP_MAP`) and writes every slab (`UPDATE_MAP`).
//! - **What a program sees**: the frame as it is at the lookup, with its
//!   true length (Oko passed the pointer size), read-only (the verifier
//!   refuses writes to packet memory); the ingress port as
//!   `ingress_ifindex` (XDP) — `__sk_buff.len` for socket filters; time
//!   (`bpf_ktime_get_ns`) is the pipeline clock's reading for the burst
//!   (`GuardAt::now_ns`), so a replay or a test is deterministic.
//! - **Bounded**: the verifier accepts only programs whose every path
//!   ends (loops unrolled, at most `verifier::Config` steps), and the
//!   JIT, or the interpreter where the JIT cannot compile a program, runs
//!   exactly what it verified. A run that faults (impossible after
//!   verification, but checked by the interpreter) counts as 0: no match.
//! - **`send_maps`** (a flow's apply-actions only) lowers to an
//!   `Op::Report` holding a [`MapsReporter`] of its own, made when the
//!   rule is installed: the rule's rate limit ([`REPORT_INTERVAL_NS`]).
//!   The reporter copies the maps under the program's lock and the
//!   worker queues the bodies as upcalls; nothing waits for the
//!   controller.
//! - A pcap-filter expression is compiled once per distinct text by
//!   `sluice-filter` (native code through Cranelift) and has no state.

use crate::table::FlowEntry;
use crate::Pipeline;
use sluice_bpf::helpers::{Clock, Env};
use sluice_bpf::interp::{self, Input};
use sluice_bpf::jit::Jitted;
use sluice_bpf::maps::{Map, MapDef, BPF_MAP_TYPE_PERCPU_ARRAY};
use sluice_bpf::Program;
use sluice_core::guard::{Guard, GuardInput};
use sluice_core::op::{Op, ReportOp, Reporter};
use sluice_ofp::action::Action;
use sluice_ofp::consts::SLUICE_EXPERIMENTER_ID;
use sluice_ofp::error::ErrorCode;
use sluice_ofp::filterprog::{self, DumpMapRequest, FilterMsg, MapBlock, Refusal, SendMaps};
use sluice_ofp::message::ExperimenterMsg;
use sluice_ofp::message::Message;
use sluice_ofp::multipart::{MultipartExperimenter, DEFAULT_MAX_LEN};
use sluice_ofp::oxm::{Match, Oxm};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use sluice_ofp::filterprog::err as code;

/// Guard-id spaces: a program's and an expression's ids never collide.
const PROG_GUARD: u64 = 1 << 40;
const PCAP_GUARD: u64 = 2 << 40;

/// A loaded, verified program with its maps.
pub struct LoadedProg {
    pub id: u32,
    /// The program's section name in its object.
    pub name: String,
    /// Unique over the switch's life (reloading an id makes a new one).
    serial: u64,
    program: Program,
    jit: Option<Jitted>,
    env: Mutex<Env>,
}

impl fmt::Debug for LoadedProg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedProg")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("jit", &self.jit.is_some())
            .finish()
    }
}

impl LoadedProg {
    /// Verifies `program` and makes its maps (per-worker arrays with
    /// `shards` slabs); the JIT compiles it where it can.
    fn from_program(
        id: u32,
        program: Program,
        shards: usize,
        serial: u64,
    ) -> Result<LoadedProg, Refusal> {
        let verified = sluice_bpf::verifier::verify(&program).map_err(|e| {
            Refusal::exp(code::PROG_REJECTED, format!("{}: rejected: {e}", program.name))
        })?;
        let workers = u32::try_from(shards).unwrap_or(u32::MAX);
        let mut maps = Vec::with_capacity(program.maps.len());
        for def in &program.maps {
            maps.push(
                Map::new(def.clone(), workers).map_err(|e| Refusal::exp(code::PROG_REJECTED, e))?,
            );
        }
        // The interpreter stays the fallback: a program the JIT cannot
        // compile still runs, verified, only slower.
        let jit = sluice_bpf::jit::compile(&program, &verified).ok();
        let mut env = Env::new(maps);
        env.clock = Clock::Fixed(0);
        Ok(LoadedProg {
            id,
            name: program.name.clone(),
            serial,
            program,
            jit,
            env: Mutex::new(env),
        })
    }

    /// Whether the program runs as native code.
    pub fn is_jitted(&self) -> bool {
        self.jit.is_some()
    }

    fn env(&self) -> MutexGuard<'_, Env> {
        // A run never panics; if one ever did, its maps are still whole
        // (every map operation completes before the next starts).
        self.env.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One run on `input`: the program's return value (0 after a fault).
    /// A program without maps has no state to guard: it runs in an
    /// environment of its own on the stack, without the lock (and what
    /// it prints with `bpf_trace_printk` is dropped).
    #[inline]
    pub fn run(&self, input: &GuardInput<'_>) -> u64 {
        if self.program.maps.is_empty() {
            let mut env = Env {
                maps: Vec::new(),
                clock: Clock::Fixed(input.at.now_ns),
                trace: Vec::new(),
                worker: input.at.worker,
            };
            return self.run_in(&mut env, input);
        }
        let mut env = self.env_at(input);
        self.run_in(&mut env, input)
    }

    /// The program's environment, held, set to `input`'s time and worker.
    fn env_at(&self, input: &GuardInput<'_>) -> MutexGuard<'_, Env> {
        let mut env = self.env();
        env.clock = Clock::Fixed(input.at.now_ns);
        env.worker = input.at.worker;
        env
    }

    /// A copy of the program's environment for a dry run (a trace) on
    /// `input`: its maps cloned under the lock (so no other run's writes
    /// are half in them), set to `input`'s time and worker. A run in it
    /// answers as a run in the live maps would and leaves them as they are.
    fn dry_env(&self, input: &GuardInput<'_>) -> Env {
        let maps = self.env().maps.clone();
        Env {
            maps,
            clock: Clock::Fixed(input.at.now_ns),
            trace: Vec::new(),
            worker: input.at.worker,
        }
    }

    #[inline]
    fn run_in(&self, env: &mut Env, input: &GuardInput<'_>) -> u64 {
        let i = Input { packet: input.frame, ingress_ifindex: input.in_port, rx_queue_index: 0 };
        match &self.jit {
            Some(j) => j.run(env, i),
            None => interp::run(&self.program.insns, self.program.prog_type, env, i).unwrap_or(0),
        }
    }

    /// The definitions of the program's maps.
    pub fn maps(&self) -> &[MapDef] {
        &self.program.maps
    }

    fn map_index(&self, name: &str) -> Result<usize, Refusal> {
        self.program.maps.iter().position(|m| m.name == name).ok_or_else(|| {
            Refusal::exp(code::UNKNOWN_MAP, format!("program {} has no map {name:?}", self.id))
        })
    }

    /// Inserts or replaces `entries` in map `name` (every slab of a
    /// per-worker array), all under one hold of the maps; the first
    /// failing entry stops the update (the earlier ones stay).
    pub fn update_map(&self, name: &str, entries: &[(Vec<u8>, Vec<u8>)]) -> Result<(), Refusal> {
        let i = self.map_index(name)?;
        let mut env = self.env();
        let Some(map) = env.maps.get_mut(i) else {
            return Err(Refusal::exp(code::UNKNOWN_MAP, name));
        };
        check_sizes(&map.def, entries.iter().map(|(k, v)| (k.len(), Some(v.len()))))?;
        let slabs =
            if map.def.map_type == BPF_MAP_TYPE_PERCPU_ARRAY { map.slab_count() } else { 1 };
        for (n, (k, v)) in entries.iter().enumerate() {
            for slab in 0..slabs {
                let r = map.update(k, v, sluice_bpf::maps::BPF_ANY, slab);
                if r != 0 {
                    return Err(Refusal::exp(
                        code::MAP_OP_FAILED,
                        format!("map {name:?}: entry {n}: update failed ({})", errno(r)),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Deletes `keys` from map `name`; a key that is absent fails the
    /// request at that key (as Linux's `BPF_MAP_DELETE_ELEM`).
    pub fn delete_from_map(&self, name: &str, keys: &[Vec<u8>]) -> Result<(), Refusal> {
        let i = self.map_index(name)?;
        let mut env = self.env();
        let Some(map) = env.maps.get_mut(i) else {
            return Err(Refusal::exp(code::UNKNOWN_MAP, name));
        };
        check_sizes(&map.def, keys.iter().map(|k| (k.len(), None)))?;
        for (n, k) in keys.iter().enumerate() {
            let r = map.delete(k);
            if r != 0 {
                return Err(Refusal::exp(
                    code::MAP_OP_FAILED,
                    format!("map {name:?}: entry {n}: delete failed ({})", errno(r)),
                ));
            }
        }
        Ok(())
    }

    /// Map `name`'s entries (slab 0 of a per-worker array), in key order,
    /// with its key and value sizes.
    pub fn dump_map(&self, name: &str) -> Result<MapBlock, Refusal> {
        let i = self.map_index(name)?;
        let env = self.env();
        let map = env.maps.get(i).ok_or_else(|| Refusal::exp(code::UNKNOWN_MAP, name))?;
        Ok(MapBlock {
            name: map.def.name.clone(),
            key_size: map.def.key_size as u16,
            value_size: map.def.value_size as u16,
            entries: map.entries(),
        })
    }
}

fn errno(r: i64) -> &'static str {
    match r.wrapping_neg() {
        sluice_bpf::maps::ENOENT => "no such key",
        sluice_bpf::maps::E2BIG => "map full",
        sluice_bpf::maps::EEXIST => "key exists",
        sluice_bpf::maps::EINVAL => "invalid key or value",
        _ => "error",
    }
}

/// Every key (and value, where given) has the map's size.
fn check_sizes(
    def: &MapDef,
    sizes: impl Iterator<Item = (usize, Option<usize>)>,
) -> Result<(), Refusal> {
    for (n, (k, v)) in sizes.enumerate() {
        let v_ok = v.is_none_or(|v| v == def.value_size as usize);
        if k != def.key_size as usize || !v_ok {
            return Err(Refusal::exp(
                code::BAD_MAP_SIZES,
                format!(
                    "map {:?} has {}-byte keys and {}-byte values; entry {n} has a {k}-byte key{}",
                    def.name,
                    def.key_size,
                    def.value_size,
                    v.map(|v| format!(" and a {v}-byte value")).unwrap_or_default()
                ),
            ));
        }
    }
    Ok(())
}

/// A rule's `filter_prog` guard: runs the program, matches on non-zero.
#[derive(Debug)]
pub struct ProgGuard(pub Arc<LoadedProg>);

impl Guard for ProgGuard {
    fn id(&self) -> u64 {
        PROG_GUARD | self.0.serial
    }
    /// A dry run (a trace's) runs on copies of the maps
    /// ([`LoadedProg::dry_env`]).
    fn eval(&self, input: &GuardInput<'_>) -> bool {
        if input.at.dry {
            let p = &self.0;
            return p.run_in(&mut p.dry_env(input), input) != 0;
        }
        self.0.run(input) != 0
    }
    fn describe(&self) -> String {
        format!("filter_prog={} ({})", self.0.id, self.0.name)
    }
    /// The run with its return value and every map entry it added,
    /// changed or removed (maps compared before and after, under the
    /// program's lock, so no other run's writes are mixed in). A dry run
    /// makes those changes in copies of the maps: they are reported, not
    /// kept.
    fn eval_traced(&self, input: &GuardInput<'_>) -> (bool, Vec<String>) {
        let p = &self.0;
        let mut held: Option<MutexGuard<'_, Env>> = None;
        let mut copy: Option<Env> = None;
        let env: &mut Env =
            if input.at.dry { copy.insert(p.dry_env(input)) } else { held.insert(p.env_at(input)) };
        let before: Vec<_> = env.maps.iter().map(|m| m.entries()).collect();
        let r = p.run_in(env, input);
        let mut changes = vec![format!("returned {r}")];
        for (m, old) in env.maps.iter().zip(before) {
            let old: BTreeMap<_, _> = old.into_iter().collect();
            let new: BTreeMap<_, _> = m.entries().into_iter().collect();
            let name = &m.def.name;
            for (k, v) in &new {
                match old.get(k) {
                    None => {
                        changes.push(format!("map {name}: add key={} value={}", hex(k), hex(v)))
                    }
                    Some(o) if o != v => changes.push(format!(
                        "map {name}: key={} value={} -> {}",
                        hex(k),
                        hex(o),
                        hex(v)
                    )),
                    Some(_) => {}
                }
            }
            for k in old.keys().filter(|k| !new.contains_key(*k)) {
                changes.push(format!("map {name}: delete key={}", hex(k)));
            }
        }
        (r != 0, changes)
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A rule's `pcap_filter` guard.
pub struct PcapGuard {
    serial: u64,
    pub expr: String,
    filter: sluice_filter::Filter,
}

impl fmt::Debug for PcapGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PcapGuard({:?})", self.expr)
    }
}

impl Guard for PcapGuard {
    fn id(&self) -> u64 {
        PCAP_GUARD | self.serial
    }
    fn eval(&self, input: &GuardInput<'_>) -> bool {
        self.filter.matches(input.frame)
    }
    fn describe(&self) -> String {
        format!("pcap_filter={:?}", self.expr)
    }
}

/// Shortest time between two reports of one rule's `send_maps` (10 a
/// second at most): a rule hit at line rate must not flood the
/// controller channel or spend the worker's time copying maps.
pub const REPORT_INTERVAL_NS: u64 = 100_000_000;

/// One rule's `send_maps`: the program, the maps to send and the time of
/// the last report (the rule's rate limit).
#[derive(Debug)]
pub struct MapsReporter {
    prog: Arc<LoadedProg>,
    maps: Vec<String>,
    /// Pipeline time of the last report, plus one (0: never).
    last: std::sync::atomic::AtomicU64,
}

impl Reporter for MapsReporter {
    /// The maps as `MAPS_REPORT` bodies with table 0 and cookie 0 (the
    /// front end fills in the rule's when it turns them into messages),
    /// or nothing within [`REPORT_INTERVAL_NS`] of the last report. Two
    /// workers hitting the rule at once: one of them reports.
    fn report(&self, now_ns: u64) -> Vec<Vec<u8>> {
        use std::sync::atomic::Ordering::Relaxed;
        let last = self.last.load(Relaxed);
        if last != 0 && now_ns.saturating_add(1) < last.saturating_add(REPORT_INTERVAL_NS) {
            return Vec::new();
        }
        if self.last.compare_exchange(last, now_ns.saturating_add(1), Relaxed, Relaxed).is_err() {
            return Vec::new();
        }
        let blocks = self.maps.iter().filter_map(|m| self.prog.dump_map(m).ok()).collect();
        filterprog::split_report(self.prog.id, 0, 0, blocks, usize::from(u16::MAX))
            .iter()
            .map(|r| r.encode())
            .collect()
    }
}

/// The switch's loaded programs and compiled expressions. A clone shares
/// the programs (and their maps) with the original: a bundle's scratch
/// replica checks flows that name them against the same programs.
#[derive(Clone, Debug, Default)]
pub struct FilterProgs {
    progs: BTreeMap<u32, Arc<LoadedProg>>,
    pcaps: HashMap<String, Arc<PcapGuard>>,
    /// Size of `pcaps` at which compiling a new expression first forgets
    /// those no rule holds (doubling: amortised O(1) per expression, and
    /// the set stays within twice the expressions in use plus a floor).
    pcap_sweep_at: usize,
    serial: u64,
}

/// `pcaps` is not swept below this many expressions.
const PCAP_SWEEP_FLOOR: usize = 64;

impl FilterProgs {
    /// Loads the first program of ELF `object` as program `id`.
    pub fn load(&mut self, id: u32, object: &[u8], shards: usize) -> Result<(), Refusal> {
        if self.progs.contains_key(&id) {
            return Err(Refusal::exp(
                code::PROG_EXISTS,
                format!("program {id} is loaded; unload it first"),
            ));
        }
        // The object's first program (Oko's convention); verified once,
        // by `insert`.
        let program = sluice_bpf::elf::load(object)
            .map_err(|e| Refusal::exp(code::PROG_REJECTED, e.to_string()))?
            .into_iter()
            .next()
            .ok_or_else(|| Refusal::exp(code::PROG_REJECTED, "the object holds no program"))?;
        self.insert(id, program, shards)
    }

    /// Verifies `program` (from an object, or built in memory for
    /// benchmarks and tests) and installs it as program `id`.
    pub fn insert(&mut self, id: u32, program: Program, shards: usize) -> Result<(), Refusal> {
        if self.progs.contains_key(&id) {
            return Err(Refusal::exp(
                code::PROG_EXISTS,
                format!("program {id} is loaded; unload it first"),
            ));
        }
        self.serial += 1;
        let p = LoadedProg::from_program(id, program, shards, self.serial)?;
        self.progs.insert(id, Arc::new(p));
        Ok(())
    }

    /// Unloads program `id`; `in_use` says whether a rule names it.
    pub fn unload(&mut self, id: u32, in_use: bool) -> Result<(), Refusal> {
        if !self.progs.contains_key(&id) {
            return Err(unknown(id));
        }
        if in_use {
            return Err(Refusal::exp(
                code::PROG_IN_USE,
                format!("program {id} is named by flow rules; delete them first"),
            ));
        }
        self.progs.remove(&id);
        Ok(())
    }

    /// Program `id`.
    pub fn get(&self, id: u32) -> Result<&Arc<LoadedProg>, Refusal> {
        self.progs.get(&id).ok_or_else(|| unknown(id))
    }

    /// The loaded programs, by id.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<LoadedProg>> {
        self.progs.values()
    }

    /// The guard of a rule's `filter_prog=id`.
    pub fn prog_guard(&self, id: u32) -> Result<Arc<dyn Guard>, Refusal> {
        Ok(Arc::new(ProgGuard(self.get(id)?.clone())))
    }

    /// The guard of a rule's `pcap_filter=expr`, compiled once per text;
    /// a bad expression's error has the column and a caret.
    pub fn pcap_guard(&mut self, expr: &str) -> Result<Arc<dyn Guard>, Refusal> {
        if let Some(g) = self.pcaps.get(expr) {
            return Ok(g.clone());
        }
        let filter = sluice_filter::Filter::compile(expr, sluice_filter::Options::default())
            .map_err(|e| Refusal::exp(code::BAD_PCAP_FILTER, e.to_string()))?;
        if self.pcaps.len() >= self.pcap_sweep_at.max(PCAP_SWEEP_FLOOR) {
            self.sweep_pcaps();
            self.pcap_sweep_at = 2 * self.pcaps.len();
        }
        self.serial += 1;
        let g = Arc::new(PcapGuard { serial: self.serial, expr: expr.to_owned(), filter });
        self.pcaps.insert(expr.to_owned(), g.clone());
        Ok(g)
    }

    /// Whether `send_maps` can run: its program is loaded and has the maps.
    pub fn check_send_maps(&self, sm: &SendMaps) -> Result<(), Refusal> {
        let p = self.get(sm.prog_id)?;
        for m in &sm.maps {
            p.map_index(m)?;
        }
        Ok(())
    }

    /// The op of a `send_maps` action (`None`: not one, or one that
    /// [`FilterProgs::check_send_maps`] refuses): a reporter of its own.
    pub fn report_op(&self, a: &Action) -> Option<Op> {
        let sm = SendMaps::from_action(a)?.ok()?;
        self.check_send_maps(&sm).ok()?;
        let prog = self.get(sm.prog_id).ok()?.clone();
        let r = MapsReporter { prog, maps: sm.maps, last: std::sync::atomic::AtomicU64::new(0) };
        Some(Op::Report(ReportOp(Arc::new(r))))
    }

    /// Forget compiled expressions no rule (nor cache entry, nor older
    /// published version) holds any more. Run by [`FilterProgs::pcap_guard`]
    /// as the set grows.
    pub fn sweep_pcaps(&mut self) {
        self.pcaps.retain(|_, g| Arc::strong_count(g) > 1);
    }
}

fn unknown(id: u32) -> Refusal {
    Refusal::exp(code::UNKNOWN_PROG, format!("no filter program {id} is loaded"))
}

/// The guard fields of a match: what a rule carries besides its
/// mask/value fields. A rule names at most one program and one
/// expression (the duplicate-field check sees to it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GuardFields {
    pub prog: Option<u32>,
    pub pcap: Option<String>,
}

impl GuardFields {
    /// The guard fields of `m` (decode errors are the field's `OFPBMC_*`).
    pub fn of(m: &Match) -> Result<GuardFields, ErrorCode> {
        let mut g = GuardFields::default();
        for o in &m.oxms {
            if let Some(id) = filterprog::filter_prog_from_oxm(o) {
                g.prog = Some(id?);
            } else if let Some(e) = filterprog::pcap_filter_from_oxm(o) {
                g.pcap = Some(e?);
            }
        }
        Ok(g)
    }

    pub fn is_empty(&self) -> bool {
        self.prog.is_none() && self.pcap.is_none()
    }

    /// Non-strict selection (modify, delete, flow stats): every field a
    /// request names, the entry names with the same value.
    pub fn covers(&self, entry: &GuardFields) -> bool {
        self.prog.is_none_or(|p| entry.prog == Some(p))
            && self.pcap.as_ref().is_none_or(|e| entry.pcap.as_ref() == Some(e))
    }

    /// Whether a request with these fields selects `e`: strict requests
    /// need the same guard fields, others [`GuardFields::covers`].
    pub fn selects(&self, e: &FlowEntry, strict: bool) -> bool {
        if self.is_empty() {
            return !strict || e.guards.is_empty();
        }
        let theirs = GuardFields::of(&e.r#match).unwrap_or_default();
        if strict {
            *self == theirs
        } else {
            self.covers(&theirs)
        }
    }
}

/// Whether `o` is one of sluice's guard fields (matched by guards, not by
/// the rule's mask and value).
pub fn is_guard_field(o: &Oxm) -> bool {
    filterprog::filter_prog_from_oxm(o).is_some() || filterprog::pcap_filter_from_oxm(o).is_some()
}

impl FilterProgs {
    /// The guards of a rule with guard fields `g`, in their evaluation
    /// order: the expression first (stateless: the program's maps see
    /// only packets it passes), then the program.
    pub fn guards(&mut self, g: &GuardFields) -> Result<Vec<Arc<dyn Guard>>, Refusal> {
        let mut out = Vec::new();
        if let Some(e) = &g.pcap {
            out.push(self.pcap_guard(e)?);
        }
        if let Some(id) = g.prog {
            out.push(self.prog_guard(id)?);
        }
        Ok(out)
    }
}

impl Pipeline {
    /// Whether a flow rule names program `id`.
    pub fn prog_in_use(&self, id: u32) -> bool {
        self.tables.iter().any(|t| {
            t.entries().iter().any(|e| {
                !e.guards.is_empty()
                    && e.r#match.oxms.iter().any(
                        |o| matches!(filterprog::filter_prog_from_oxm(o), Some(Ok(p)) if p == id),
                    )
            })
        })
    }

    /// One of sluice's filter-program messages from a controller (`None`:
    /// not one). Loading and unloading change no rule and no cache.
    pub(crate) fn filter_message(&mut self, m: &ExperimenterMsg) -> Option<Result<(), Refusal>> {
        // The switch sends reports; it never takes one, whatever it holds.
        if m.experimenter == SLUICE_EXPERIMENTER_ID
            && m.exp_type == filterprog::exp_type::MAPS_REPORT
        {
            return Some(Err(Refusal::Std(ErrorCode::BRC_BAD_EXP_TYPE)));
        }
        let msg = match FilterMsg::from_experimenter(m)? {
            Ok(msg) => msg,
            Err(r) => return Some(Err(r)),
        };
        Some(match msg {
            FilterMsg::Load(f) => match self.assembly.push(&f) {
                Ok(Some((id, object))) => self.filters.load(id, &object, self.cfg.shards()),
                Ok(None) => Ok(()),
                Err(r) => Err(r),
            },
            FilterMsg::Unload(u) => {
                let in_use = self.prog_in_use(u.prog_id);
                self.filters.unload(u.prog_id, in_use)
            }
            FilterMsg::UpdateMap(u) => self.filters.get(u.prog_id).and_then(|p| {
                if u.delete {
                    let keys: Vec<Vec<u8>> = u.entries.iter().map(|(k, _)| k.clone()).collect();
                    p.delete_from_map(&u.map, &keys)
                } else {
                    p.update_map(&u.map, &u.entries)
                }
            }),
            FilterMsg::MapsReport(_) => Err(Refusal::Std(ErrorCode::BRC_BAD_EXP_TYPE)),
        })
    }

    /// The replies to a `DUMP_MAP` multipart request (`None`: not one),
    /// split so each fits one message.
    pub(crate) fn dump_map(
        &self,
        m: &MultipartExperimenter,
    ) -> Option<Result<Vec<Message>, Refusal>> {
        let req = match DumpMapRequest::from_multipart(m)? {
            Ok(r) => r,
            Err(r) => return Some(Err(r)),
        };
        Some((|| {
            let block = self.filters.get(req.prog_id)?.dump_map(&req.map)?;
            let parts = filterprog::split_dump(req.prog_id, block, DEFAULT_MAX_LEN);
            let n = parts.len();
            Ok(parts.iter().enumerate().map(|(i, r)| r.to_message(i + 1 < n)).collect())
        })())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expressions no rule holds are forgotten as new ones come: a
    /// controller churning rules with distinct expressions does not grow
    /// the set without bound; one still held survives every sweep.
    #[test]
    fn compiled_expressions_nobody_holds_are_swept() {
        let mut f = FilterProgs::default();
        let held = f.pcap_guard("udp port 53").expect("compiles");
        for i in 0..1000 {
            let g = f.pcap_guard(&format!("tcp dst port {}", 1 + i)).expect("compiles");
            drop(g);
            assert!(f.pcaps.len() <= 2 * PCAP_SWEEP_FLOOR + 1, "{} after {i}", f.pcaps.len());
        }
        assert!(f.pcaps.contains_key("udp port 53"));
        let again = f.pcap_guard("udp port 53").expect("compiles");
        assert_eq!(again.id(), held.id(), "the held one is the same guard");
    }
}
