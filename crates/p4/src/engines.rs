//! The engine a switch runs a program on: compiled into the core when the
//! lowering takes the program, else the reference interpreter.
//!
//! # What
//! [`Engine::load`] tries [`crate::lower::engine::Compiled`] first and,
//! if the lowering refuses the program (meters, `clone`, header stacks
//! as values, ... — its diagnostic says which construct), falls back to
//! [`Interp`], saying why ([`Engine::fallback`]). `reference: true`
//! asks for the interpreter outright. Both answer the same control plane
//! ([`Target`], [`Manage`]), so `sluice p4 run` and `sluice bench` do
//! not care which one runs.
//!
//! # Invariants
//! - Whatever is compiled behaves as the interpreter would
//!   (`tests/lower_engine.rs` runs every compiled program's STF test in
//!   every cache mode); a program the lowering cannot take still runs.

pub use sluice_core::walk::CacheMode;

use crate::ast::BigValue;
use crate::diag::Diagnostic;
use crate::interp::{Digest, Interp};
use crate::lower::engine::Compiled;
use crate::parse::Loaded;
use crate::target::{
    Clock, CtlResult, DirectCells, DirectState, EntryDump, EntrySpec, Manage, Meter, MeterConfig,
    Output, TableInfo, Target,
};

/// A program ready to run.
#[derive(Debug)]
pub enum Engine {
    /// Compiled into the core's walk, with its caches.
    Compiled(Box<Compiled>),
    /// The reference interpreter.
    Reference(Box<Interp>),
}

/// Why a program runs on the interpreter.
#[derive(Debug)]
pub enum Fallback {
    /// Asked for.
    Asked,
    /// The lowering refused it.
    Refused(Diagnostic),
}

impl Engine {
    /// The compiled engine if the lowering takes `loaded` (and `reference`
    /// is false), else the interpreter with the reason. `Err` only if the
    /// interpreter refuses the program too.
    pub fn load(
        loaded: &Loaded,
        reference: bool,
    ) -> Result<(Engine, Option<Fallback>), Diagnostic> {
        if reference {
            return Ok((Engine::Reference(Box::new(Interp::new(loaded)?)), Some(Fallback::Asked)));
        }
        match Compiled::new(loaded) {
            Ok(c) => Ok((Engine::Compiled(Box::new(c)), None)),
            Err(why) => {
                let i = Interp::new(loaded)?;
                Ok((Engine::Reference(Box::new(i)), Some(Fallback::Refused(why))))
            }
        }
    }

    /// `compiled` or `reference`.
    pub fn name(&self) -> &'static str {
        match self {
            Engine::Compiled(_) => "compiled",
            Engine::Reference(_) => "reference",
        }
    }

    /// The caches in front of a compiled program's tables (the
    /// interpreter has none).
    pub fn set_cache_mode(&mut self, mode: CacheMode) {
        if let Engine::Compiled(c) = self {
            c.set_cache_mode(mode);
        }
    }

    fn manage(&self) -> &dyn Manage {
        match self {
            Engine::Compiled(c) => &**c,
            Engine::Reference(i) => &**i,
        }
    }

    fn manage_mut(&mut self) -> &mut dyn Manage {
        match self {
            Engine::Compiled(c) => &mut **c,
            Engine::Reference(i) => &mut **i,
        }
    }

    /// Digests queued since the last call.
    pub fn take_digests(&mut self) -> Vec<Digest> {
        match self {
            Engine::Compiled(c) => c.take_digests(),
            Engine::Reference(i) => i.take_digests(),
        }
    }

    /// Digests dropped because the queue was full.
    pub fn digests_dropped(&self) -> u64 {
        match self {
            Engine::Compiled(c) => c.digests_dropped(),
            Engine::Reference(i) => i.digests_dropped(),
        }
    }
}

impl Target for Engine {
    fn add_entry(&mut self, entry: &EntrySpec) -> CtlResult<u64> {
        self.manage_mut().add_entry(entry)
    }

    fn set_default(
        &mut self,
        table: &str,
        action: &str,
        args: &[(String, BigValue)],
    ) -> CtlResult<()> {
        self.manage_mut().set_default(table, action, args)
    }

    fn remove_all(&mut self) -> CtlResult<()> {
        self.manage_mut().remove_all()
    }

    fn set_multicast_group(&mut self, group: u32, copies: &[(u32, u32)]) -> CtlResult<()> {
        self.manage_mut().set_multicast_group(group, copies)
    }

    fn packet(&mut self, port: u32, data: &[u8]) -> CtlResult<Vec<Output>> {
        match self {
            Engine::Compiled(c) => c.packet(port, data),
            Engine::Reference(i) => i.packet(port, data),
        }
    }

    fn packet_into(
        &mut self,
        port: u32,
        data: &[u8],
        out: &mut dyn FnMut(u32, &[u8]),
    ) -> CtlResult<()> {
        match self {
            Engine::Compiled(c) => c.packet_into(port, data, out),
            Engine::Reference(i) => i.packet_into(port, data, out),
        }
    }

    fn burst_into(
        &mut self,
        port: u32,
        frames: &[&[u8]],
        out: &mut dyn FnMut(u32, &[u8]),
        refused: &mut dyn FnMut(usize, String),
    ) {
        match self {
            Engine::Compiled(c) => c.burst_into(port, frames, out, refused),
            Engine::Reference(i) => i.burst_into(port, frames, out, refused),
        }
    }
}

impl Manage for Engine {
    fn tables(&self) -> Vec<TableInfo> {
        self.manage().tables()
    }

    fn delete_entry(&mut self, table: &str, handle: u64) -> CtlResult<()> {
        self.manage_mut().delete_entry(table, handle)
    }

    fn dump(&self, table: &str) -> CtlResult<(Vec<EntryDump>, (String, Vec<(String, BigValue)>))> {
        self.manage().dump(table)
    }

    fn counter_cells(&self, name: &str) -> CtlResult<(String, Vec<(u64, u64)>)> {
        self.manage().counter_cells(name)
    }

    fn register_cells(&self, name: &str) -> CtlResult<(String, u32, Vec<BigValue>)> {
        self.manage().register_cells(name)
    }

    fn register_write(&mut self, name: &str, index: usize, value: &BigValue) -> CtlResult<()> {
        self.manage_mut().register_write(name, index, value)
    }

    fn counter_write(&mut self, name: &str, index: usize, value: (u64, u64)) -> CtlResult<()> {
        self.manage_mut().counter_write(name, index, value)
    }

    fn meter_cells(&self, name: &str) -> CtlResult<(String, Vec<Option<MeterConfig>>)> {
        self.manage().meter_cells(name)
    }

    fn meter_write(
        &mut self,
        name: &str,
        index: usize,
        config: Option<MeterConfig>,
    ) -> CtlResult<()> {
        self.manage_mut().meter_write(name, index, config)
    }

    fn direct_cells(&self, table: &str) -> CtlResult<Vec<DirectCells>> {
        self.manage().direct_cells(table)
    }

    fn direct_write(
        &mut self,
        table: &str,
        handle: u64,
        counter: Option<(u64, u64)>,
        meter: Option<Option<MeterConfig>>,
    ) -> CtlResult<()> {
        self.manage_mut().direct_write(table, handle, counter, meter)
    }

    fn meter_states(&self, name: &str) -> CtlResult<Vec<Meter>> {
        self.manage().meter_states(name)
    }

    fn meter_restore(&mut self, name: &str, index: usize, state: &Meter) -> CtlResult<()> {
        self.manage_mut().meter_restore(name, index, state)
    }

    fn direct_state(&self, table: &str, handle: u64) -> CtlResult<DirectState> {
        self.manage().direct_state(table, handle)
    }

    fn direct_restore(&mut self, table: &str, handle: u64, state: &DirectState) -> CtlResult<()> {
        self.manage_mut().direct_restore(table, handle, state)
    }

    fn set_clock(&mut self, clock: Clock) {
        self.manage_mut().set_clock(clock)
    }

    fn default_cells(&self, table: &str) -> CtlResult<DirectCells> {
        self.manage().default_cells(table)
    }

    fn entry_hits(&self, table: &str) -> CtlResult<Vec<(u64, u64)>> {
        self.manage().entry_hits(table)
    }
}
