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
    fn add_entry(&mut self, entry: &EntrySpec) -> CtlResult<()>;
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
}
