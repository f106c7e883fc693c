//! What a loaded P4 program offers its control plane, whichever engine
//! runs it: the reference interpreter ([`crate::interp`]) now, the
//! program compiled into the core later. The STF runner
//! ([`crate::stf`]), `sluice p4 ctl` and P4Runtime all drive a program
//! through this trait, so every engine is tested the same way.
//!
//! Names (tables, actions, key elements, action parameters) are resolved
//! by suffix on `.`-separated components, as p4c's STF runner does:
//! `ipv4_lpm` finds `ingress.ipv4_lpm`, `fwd.out_bd` finds the key
//! element `meta.fwd.out_bd`; a suffix matching two names is an error
//! naming both. A key element's name is its `@name` annotation if it has
//! one, otherwise its expression as written (`hdr.ipv4.dstAddr`).

use crate::ast::BigValue;
pub use crate::meter::{Clock, Meter, MeterConfig};

/// How one key element of an entry matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyMatch {
    /// Exactly this value.
    Exact(BigValue),
    /// `value &&& mask` (a `*` nibble in STF clears four mask bits).
    /// Bits above the written digits are part of the mask.
    Ternary { value: BigValue, mask: BigValue },
    /// The top `prefix_len` bits of `value`.
    Lpm { value: BigValue, prefix_len: u32 },
    /// `lo ..= hi`.
    Range { lo: BigValue, hi: BigValue },
    /// Any value (ternary, LPM, range or optional key left out).
    Any,
}

/// A table entry as the control plane writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntrySpec {
    /// Table name (suffix-resolved).
    pub table: String,
    /// Key element name (suffix-resolved) and how it matches. A key
    /// element not listed matches anything if its kind allows that
    /// (ternary, LPM, range, optional) and is an error otherwise.
    pub keys: Vec<(String, KeyMatch)>,
    /// Action name (suffix-resolved); must be in the table's `actions`.
    pub action: String,
    /// Action data by parameter name.
    pub args: Vec<(String, BigValue)>,
    /// Larger wins (STF's and P4Runtime's convention; `sluice p4 ctl`
    /// converts simple_switch_CLI's smaller-wins numbers). `None`: the
    /// target assigns one below every entry added so far, so earlier
    /// entries win among overlapping ones.
    pub priority: Option<u64>,
}

/// A packet leaving the switch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    pub port: u32,
    pub data: Vec<u8>,
}

/// A control-plane operation's failure, worded for the user.
pub type CtlResult<T> = Result<T, String>;

/// A running P4 program as its control plane sees it.
pub trait Target {
    /// Adds an entry; a duplicate key (same matches and priority)
    /// replaces nothing and is an error.
    /// Adds an entry; its handle (unique in its table, never reused).
    fn add_entry(&mut self, entry: &EntrySpec) -> CtlResult<u64>;
    /// Sets a table's default action (refused if it is `const`).
    fn set_default(
        &mut self,
        table: &str,
        action: &str,
        args: &[(String, BigValue)],
    ) -> CtlResult<()>;
    /// Removes every entry added through this trait (not `const
    /// entries`) and restores every default action.
    fn remove_all(&mut self) -> CtlResult<()>;
    /// Sets multicast group `group` to these `(replication id, port)`
    /// copies (an empty list deletes it).
    fn set_multicast_group(&mut self, group: u32, copies: &[(u32, u32)]) -> CtlResult<()>;
    /// Runs one packet through the program; returns what leaves, in the
    /// order the switch sends it.
    fn packet(&mut self, port: u32, data: &[u8]) -> CtlResult<Vec<Output>>;
    /// [`Target::packet`] handing each output, in the same order, to
    /// `out` (its port and frame) instead of returning copies: an engine
    /// may lend frames from its own buffers (the compiled engine does, so
    /// a packet costs no allocation and no copy of its output). The
    /// frame is only valid during the call.
    fn packet_into(
        &mut self,
        port: u32,
        data: &[u8],
        out: &mut dyn FnMut(u32, &[u8]),
    ) -> CtlResult<()> {
        for o in self.packet(port, data)? {
            out(o.port, &o.data);
        }
        Ok(())
    }
    /// [`Target::packet_into`] for frames received together on `port`,
    /// in order: the outputs are what running them one at a time gives,
    /// in the same order. A frame the program refuses goes to `refused`
    /// (its index in `frames` and why) and the others still run. An
    /// engine may look several frames up before running the first (the
    /// compiled engine's staged burst).
    fn burst_into(
        &mut self,
        port: u32,
        frames: &[&[u8]],
        out: &mut dyn FnMut(u32, &[u8]),
        refused: &mut dyn FnMut(usize, String),
    ) {
        frame_by_frame(self, port, frames, out, refused);
    }
}

/// [`Target::burst_into`] as [`Target::packet_into`] per frame, in order.
pub fn frame_by_frame<T: Target + ?Sized>(
    t: &mut T,
    port: u32,
    frames: &[&[u8]],
    out: &mut dyn FnMut(u32, &[u8]),
    refused: &mut dyn FnMut(usize, String),
) {
    for (i, f) in frames.iter().enumerate() {
        if let Err(e) = t.packet_into(port, f, out) {
            refused(i, e);
        }
    }
}

/// How a key element matches, as declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchKind {
    Exact,
    Lpm,
    Ternary,
    Range,
    Optional,
}

impl MatchKind {
    pub fn name(self) -> &'static str {
        match self {
            MatchKind::Exact => "exact",
            MatchKind::Lpm => "lpm",
            MatchKind::Ternary => "ternary",
            MatchKind::Range => "range",
            MatchKind::Optional => "optional",
        }
    }
}

/// A key element of a table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyInfo {
    pub name: String,
    pub kind: MatchKind,
    pub width: u32,
}

/// An action a table may run: its name and action-data parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionInfo {
    pub name: String,
    pub params: Vec<(String, u32)>,
}

/// A table as its control plane sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableInfo {
    /// The full control-plane name (`ingress.ipv4_lpm`).
    pub name: String,
    pub keys: Vec<KeyInfo>,
    pub actions: Vec<ActionInfo>,
    /// `const entries`: the control plane may not add or delete.
    pub const_entries: bool,
    /// A `const default_action`.
    pub const_default: bool,
}

impl TableInfo {
    /// Whether entries need a priority (a ternary, range or optional key).
    pub fn needs_priority(&self) -> bool {
        self.keys
            .iter()
            .any(|k| matches!(k.kind, MatchKind::Ternary | MatchKind::Range | MatchKind::Optional))
    }
}

/// One installed entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryDump {
    pub handle: u64,
    /// Every key element, in declaration order.
    pub keys: Vec<(String, KeyMatch)>,
    pub action: String,
    pub args: Vec<(String, BigValue)>,
    /// As given (larger wins); `None` if the entry had none.
    pub priority: Option<u64>,
}

/// The table-management part of a control plane beyond [`Target`]: what
/// `sluice p4 ctl` (simple_switch_CLI's vocabulary) needs.
pub trait Manage: Target {
    /// Every table.
    fn tables(&self) -> Vec<TableInfo>;
    /// Removes the entry with this handle.
    fn delete_entry(&mut self, table: &str, handle: u64) -> CtlResult<()>;
    /// The entries of a table (const entries included, handles in the
    /// order installed) and its default action with arguments.
    #[allow(clippy::type_complexity)]
    fn dump(&self, table: &str) -> CtlResult<(Vec<EntryDump>, (String, Vec<(String, BigValue)>))>;
    /// A counter's `(packets, bytes)` cells; the full name.
    fn counter_cells(&self, name: &str) -> CtlResult<(String, Vec<(u64, u64)>)>;
    /// A register's cells and their width; the full name.
    fn register_cells(&self, name: &str) -> CtlResult<(String, u32, Vec<BigValue>)>;
    /// Writes one register cell.
    fn register_write(&mut self, name: &str, index: usize, value: &BigValue) -> CtlResult<()>;

    // Counters and meters beyond reading counters. The defaults refuse:
    // only the interpreter runs programs with meters or direct counters
    // (the lowering refuses them).

    /// Sets one cell of an indexed counter to `(packets, bytes)`.
    fn counter_write(&mut self, name: &str, index: usize, _value: (u64, u64)) -> CtlResult<()> {
        Err(format!("this engine cannot write counter `{name}` (cell {index})"))
    }
    /// An indexed meter's cells' configurations (`None`: unconfigured);
    /// the full name.
    fn meter_cells(&self, name: &str) -> CtlResult<(String, Vec<Option<MeterConfig>>)> {
        Err(format!("this engine has no meter `{name}`"))
    }
    /// Configures (or with `None` unconfigures) one meter cell.
    fn meter_write(
        &mut self,
        name: &str,
        index: usize,
        _config: Option<MeterConfig>,
    ) -> CtlResult<()> {
        Err(format!("this engine cannot configure meter `{name}` (cell {index})"))
    }
    /// An indexed meter's cells whole, buckets included (what
    /// [`Manage::meter_restore`] puts back: a rollback loses no fill).
    fn meter_states(&self, name: &str) -> CtlResult<Vec<Meter>> {
        Err(format!("this engine has no meter `{name}`"))
    }
    /// Puts back one cell [`Manage::meter_states`] gave.
    fn meter_restore(&mut self, name: &str, index: usize, _state: &Meter) -> CtlResult<()> {
        Err(format!("this engine cannot restore meter `{name}` (cell {index})"))
    }
    /// The direct counter and meter cells of a table's entries, in the
    /// order of [`Manage::dump`].
    fn direct_cells(&self, table: &str) -> CtlResult<Vec<DirectCells>> {
        Err(format!("this engine has no direct counters or meters (table `{table}`)"))
    }
    /// Sets the direct counter cell and/or the direct meter configuration
    /// of the entry with `handle` (`None`: leave as is).
    fn direct_write(
        &mut self,
        table: &str,
        handle: u64,
        _counter: Option<(u64, u64)>,
        _meter: Option<Option<MeterConfig>>,
    ) -> CtlResult<()> {
        Err(format!(
            "this engine has no direct counters or meters (table `{table}`, entry {handle})"
        ))
    }
    /// Everything an entry's direct cells hold (handle [`DEFAULT_ENTRY`]:
    /// the default entry's), the meter's buckets included: what a
    /// rollback or a pipeline change puts back with
    /// [`Manage::direct_restore`] so that nothing counted or earned is
    /// lost.
    fn direct_state(&self, table: &str, handle: u64) -> CtlResult<DirectState> {
        Err(format!(
            "this engine has no direct counters or meters (table `{table}`, entry {handle})"
        ))
    }
    /// Puts back what [`Manage::direct_state`] gave (possibly another
    /// engine's, for the same table after a pipeline change).
    fn direct_restore(&mut self, table: &str, handle: u64, _state: &DirectState) -> CtlResult<()> {
        Err(format!(
            "this engine has no direct counters or meters (table `{table}`, entry {handle})"
        ))
    }
    /// The clock meters read from now on.
    fn set_clock(&mut self, _clock: Clock) {}

    /// The default entry's direct counter and meter cells (handle
    /// [`DEFAULT_ENTRY`]): what a miss counts and meters.
    fn default_cells(&self, table: &str) -> CtlResult<DirectCells> {
        Err(format!("this engine has no direct counters or meters (table `{table}`)"))
    }

    /// How many times each entry of a table was hit, `(handle, hits)`,
    /// in the order of [`Manage::dump`]. An entry's count only grows while
    /// it is installed (another entry's change does not reset it), so a
    /// count that changed between two calls is a hit: what P4Runtime's
    /// idle timeouts watch.
    fn entry_hits(&self, table: &str) -> CtlResult<Vec<(u64, u64)>> {
        Err(format!("this engine does not count hits of table `{table}`'s entries"))
    }
}

/// The handle naming a table's default entry in [`Manage::direct_write`]
/// (no added entry gets it: handles count up from 0).
pub const DEFAULT_ENTRY: u64 = u64::MAX;

/// An entry's direct cells whole ([`Manage::direct_state`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirectState {
    /// `(packets, bytes)`.
    pub counter: (u64, u64),
    /// The direct meter's configuration and buckets.
    pub meter: Meter,
    /// `(packets, bytes)` coloured GREEN, YELLOW and RED.
    pub colours: [(u64, u64); 3],
}

/// An entry's cells of its table's direct counter and direct meter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirectCells {
    pub handle: u64,
    /// `(packets, bytes)`.
    pub counter: (u64, u64),
    pub meter: Option<MeterConfig>,
    /// `(packets, bytes)` the direct meter coloured GREEN, YELLOW and
    /// RED (all zero for a table without a direct meter).
    pub colours: [(u64, u64); 3],
}
