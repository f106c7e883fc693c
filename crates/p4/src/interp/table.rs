//! Tables: their keys, actions and entries, the control plane's
//! requests converted to match patterns, and lookup.
//!
//! Lookup rules: a table with a ternary, range or optional key picks
//! the matching entry with the largest priority (ties: the entry added
//! first); otherwise a table with an LPM key picks the longest prefix;
//! otherwise (exact keys only) the one matching entry. `const entries`
//! and `entries` without `priority =` get priorities by position, the
//! first the highest.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use super::{name_annotation, Builder, ExternState, Inst, Obj};
use crate::ast::{self, BigValue, Decl, Direction, Expr, ExprKind, Keyset, Local, TableProp};
use crate::diag::{Diagnostic, Result};
use crate::meter::Meter;
use crate::target::{CtlResult, EntryDump, EntrySpec, KeyMatch, MatchKind};
use crate::types::Ty;
use crate::value::{Bits, Value};

#[derive(Clone, Debug)]
pub(crate) struct KeySpec {
    /// Control-plane name: `@name` or the expression as written.
    pub name: String,
    pub kind: MatchKind,
    pub width: u32,
    pub expr: Expr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ActionLoc {
    /// `locals[idx]` of the control `decl`.
    Local { decl: usize, idx: usize },
    /// A top-level action.
    Global(usize),
}

#[derive(Clone, Debug)]
pub(crate) struct ActionSpec {
    /// Control-plane name (`ingress.fwd`, `NoAction`).
    pub name: String,
    /// The name as declared (for `switch (t.apply().action_run)`).
    pub short: String,
    pub loc: ActionLoc,
    /// Arguments bound in `actions = { a(x); }` (the directionful ones).
    pub bound: Vec<ast::Arg>,
    /// The action-data (directionless) parameters.
    pub data: Vec<(String, Ty)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    Exact,
    Lpm,
    Priority,
}

#[derive(Clone, Debug)]
pub(crate) struct TableStatic {
    pub name: String,
    pub keys: Vec<KeySpec>,
    pub actions: Vec<ActionSpec>,
    pub default_const: bool,
    pub entries_const: bool,
    pub lookup: Lookup,
    pub direct_counter: Option<usize>,
    /// The `meters` property's `direct_meter` instance.
    pub direct_meter: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Pat {
    Exact(Bits),
    Ternary(Bits, Bits),
    Lpm(Bits, u32),
    Range(Bits, Bits),
    Any,
}

#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub keys: Vec<Pat>,
    pub action: usize,
    pub args: Vec<Value>,
    pub prio: i128,
    /// Whether the priority was given (by the program or the control
    /// plane) rather than implied by the order of adding.
    pub explicit_prio: bool,
    pub seq: u64,
    /// The control plane's name for it.
    pub handle: u64,
    /// Its cell of the table's direct counter: (packets, bytes).
    pub counter: (u64, u64),
    /// Its cell of the table's direct meter.
    pub meter: Meter,
    /// `(packets, bytes)` its direct meter coloured GREEN, YELLOW, RED.
    pub colours: [(u64, u64); 3],
    /// Lookups that selected it (P4Runtime's idle timeouts watch it).
    pub hits: u64,
}

/// The default entry's direct cells: what a miss counts and meters.
#[derive(Clone, Debug, Default)]
pub(crate) struct DefaultCells {
    pub counter: (u64, u64),
    pub meter: Meter,
    pub colours: [(u64, u64); 3],
}

#[derive(Clone, Debug)]
pub(crate) struct TableDyn {
    pub entries: Vec<Entry>,
    pub default: (usize, Vec<Value>),
    /// The default entry's direct counter and meter cells.
    pub default_cells: DefaultCells,
    /// The handle the next added entry gets.
    pub next_handle: u64,
    /// How many entries hold each slot (`slot`): the control plane's
    /// duplicate check without a scan of the table.
    slots: HashMap<(Vec<Pat>, i128), u32>,
    /// How many entries have each priority: the lowest in O(log n).
    prios: BTreeMap<i128, u32>,
}

impl TableDyn {
    fn new(default: (usize, Vec<Value>)) -> Self {
        TableDyn {
            entries: Vec::new(),
            default,
            default_cells: DefaultCells::default(),
            next_handle: 0,
            slots: HashMap::new(),
            prios: BTreeMap::new(),
        }
    }

    /// An entry's slot: its keys, and its priority in a table that
    /// orders by priority (in exact and LPM tables a key is one entry
    /// whatever the priority).
    fn slot(by_prio: bool, keys: &[Pat], prio: i128) -> (Vec<Pat>, i128) {
        (keys.to_vec(), if by_prio { prio } else { 0 })
    }

    fn push(&mut self, by_prio: bool, e: Entry) {
        *self.slots.entry(Self::slot(by_prio, &e.keys, e.prio)).or_default() += 1;
        *self.prios.entry(e.prio).or_default() += 1;
        self.entries.push(e);
    }

    fn remove(&mut self, by_prio: bool, i: usize) {
        let e = self.entries.remove(i);
        let slot = Self::slot(by_prio, &e.keys, e.prio);
        if let Some(c) = self.slots.get_mut(&slot) {
            *c -= 1;
            if *c == 0 {
                self.slots.remove(&slot);
            }
        }
        if let Some(c) = self.prios.get_mut(&e.prio) {
            *c -= 1;
            if *c == 0 {
                self.prios.remove(&e.prio);
            }
        }
    }
}

/// Builds a table of the control instance `block` (declaration `decl`).
pub(super) fn build(
    b: &mut Builder<'_>,
    block: usize,
    decl: usize,
    t: &ast::TableDecl,
    path: &str,
    consts: &dyn Fn(&str) -> Option<Value>,
) -> Result<(TableStatic, TableDyn)> {
    let name = match name_annotation(&t.annotations) {
        Some(n) if n.starts_with('.') => n[1..].to_string(),
        Some(n) => format!("{path}.{n}"),
        None => format!("{path}.{}", t.name.name),
    };
    let mut keys = Vec::new();
    let mut actions: Vec<ActionSpec> = Vec::new();
    let mut default = None;
    let mut default_const = false;
    let mut entries_prop = None;
    let mut direct_counter = None;
    let mut direct_meter = None;
    for p in &t.props {
        match p {
            TableProp::Key { elems, .. } => {
                for k in elems {
                    let kind = match k.match_kind.name.as_str() {
                        "exact" => MatchKind::Exact,
                        "lpm" => MatchKind::Lpm,
                        "ternary" => MatchKind::Ternary,
                        "range" => MatchKind::Range,
                        "optional" => MatchKind::Optional,
                        other => {
                            return Err(Diagnostic::unsupported(
                                k.match_kind.span,
                                format!("match kind `{other}`"),
                            ))
                        }
                    };
                    let ty = static_type(b, decl, &k.expr, 0).ok_or_else(|| {
                        Diagnostic::unsupported(
                            k.expr.span,
                            "a key whose type sluice cannot determine",
                        )
                    })?;
                    let width = match &ty {
                        Ty::Bits { width, .. } => *width,
                        Ty::Bool => 1,
                        Ty::Enum(e) if e.underlying.is_some() => e.underlying.map_or(0, |u| u.1),
                        // Errors match by their number in declaration order.
                        Ty::Error => 32,
                        other => {
                            return Err(Diagnostic::unsupported(
                                k.expr.span,
                                format!("a table key of type {other}"),
                            ))
                        }
                    };
                    let kname = name_annotation(&k.annotations)
                        .unwrap_or_else(|| super::render_expr(&k.expr));
                    keys.push(KeySpec { name: kname, kind, width, expr: k.expr.clone() });
                }
            }
            TableProp::Actions { actions: refs, .. } => {
                for r in refs {
                    actions.push(action_spec(b, block, decl, path, r)?);
                }
            }
            TableProp::DefaultAction { action, is_const, .. } => {
                default = Some(action);
                default_const = *is_const;
            }
            TableProp::Entries { entries, is_const, .. } => {
                entries_prop = Some((entries, *is_const));
            }
            TableProp::Other { name: pn, value, .. } => match pn.name.as_str() {
                "size"
                | "max_size"
                | "support_timeout"
                | "largest_priority_wins"
                | "priority_delta" => {}
                "counters" => {
                    if let ExprKind::Name { id, .. } = &value.kind {
                        if let Some(Inst::Block(bl)) = b.insts.get(block) {
                            if let Some(Obj::Inst(i)) = bl.objects.get(&id.name) {
                                direct_counter = Some(*i);
                            }
                        }
                    }
                }
                "meters" => {
                    if let ExprKind::Name { id, .. } = &value.kind {
                        if let Some(Inst::Block(bl)) = b.insts.get(block) {
                            if let Some(Obj::Inst(i)) = bl.objects.get(&id.name) {
                                direct_meter = Some(*i);
                            }
                        }
                    }
                }
                other => {
                    return Err(Diagnostic::unsupported(
                        pn.span,
                        format!("table property `{other}`"),
                    ))
                }
            },
        }
    }
    let lookup = if keys
        .iter()
        .any(|k| matches!(k.kind, MatchKind::Ternary | MatchKind::Range | MatchKind::Optional))
    {
        Lookup::Priority
    } else if keys.iter().any(|k| k.kind == MatchKind::Lpm) {
        if keys.iter().filter(|k| k.kind == MatchKind::Lpm).count() > 1 {
            return Err(Diagnostic::unsupported(t.span, "a table with two LPM keys"));
        }
        Lookup::Lpm
    } else {
        Lookup::Exact
    };
    let mut ts = TableStatic {
        name,
        keys,
        actions,
        default_const,
        entries_const: false,
        lookup,
        direct_counter,
        direct_meter,
    };
    // Default action: as written, else NoAction.
    let default = match default {
        Some(r) => {
            let idx = find_action(&ts, &r.name.name).ok_or_else(|| {
                Diagnostic::new(r.span, format!("`{}` is not in the table's actions", r.name.name))
            })?;
            let args = const_action_args(b, &ts.actions[idx], &r.args, consts, r.span)?;
            (idx, args)
        }
        None => match find_action(&ts, "NoAction") {
            Some(i) => (i, Vec::new()),
            None => {
                let na = ast::ActionRef {
                    annotations: Vec::new(),
                    name: ast::Ident { name: "NoAction".into(), span: t.span },
                    args: Vec::new(),
                    span: t.span,
                };
                let spec = action_spec(b, block, decl, path, &na).map_err(|_| {
                    Diagnostic::unsupported(
                        t.span,
                        "a table without a default action when `NoAction` is not declared",
                    )
                })?;
                ts.actions.push(spec);
                (ts.actions.len() - 1, Vec::new())
            }
        },
    };
    let mut dynm = TableDyn::new(default);
    if let Some((entries, is_const)) = entries_prop {
        ts.entries_const = is_const;
        let n = entries.len() as i128;
        let mut last_prio: Option<i128> = None;
        for (i, e) in entries.iter().enumerate() {
            let keys = const_entry_keys(b, &ts, e, consts)?;
            let action = find_action(&ts, &e.action.name.name).ok_or_else(|| {
                Diagnostic::new(
                    e.action.span,
                    format!("`{}` is not in the table's actions", e.action.name.name),
                )
            })?;
            let args =
                const_action_args(b, &ts.actions[action], &e.action.args, consts, e.action.span)?;
            let prio = match &e.priority {
                Some(p) => {
                    let v = b.env.eval_const(p, None, consts)?;
                    v.to_i128()
                        .ok_or_else(|| Diagnostic::new(p.span, "a priority must be a number"))?
                }
                None => match last_prio {
                    Some(lp) => lp,
                    None => n - i as i128,
                },
            };
            last_prio = e.priority.as_ref().map(|_| prio).or(last_prio);
            let explicit_prio = e.priority.is_some();
            let handle = i as u64;
            let by_prio = ts.lookup == Lookup::Priority;
            dynm.push(
                by_prio,
                Entry {
                    keys,
                    action,
                    args,
                    prio,
                    explicit_prio,
                    seq: i as u64,
                    handle,
                    counter: (0, 0),
                    meter: Meter::default(),
                    colours: [(0, 0); 3],
                    hits: 0,
                },
            );
            dynm.next_handle = handle + 1;
        }
    }
    Ok((ts, dynm))
}

fn find_action(ts: &TableStatic, name: &str) -> Option<usize> {
    ts.actions.iter().position(|a| a.short == name || a.name == name)
}

fn action_spec(
    b: &Builder<'_>,
    block: usize,
    decl: usize,
    path: &str,
    r: &ast::ActionRef,
) -> Result<ActionSpec> {
    let _ = block;
    let locals: &[Local] = match &b.prog.decls[decl] {
        Decl::Control(c) => &c.locals,
        _ => &[],
    };
    let found = locals.iter().enumerate().find_map(|(i, l)| match l {
        Local::Action(a) if a.name.name == r.name.name => Some((i, a)),
        _ => None,
    });
    let (loc, a, full) = if let Some((i, a)) = found {
        let full = match name_annotation(&a.annotations) {
            Some(n) if n.starts_with('.') => n[1..].to_string(),
            Some(n) => format!("{path}.{n}"),
            None => format!("{path}.{}", a.name.name),
        };
        (ActionLoc::Local { decl, idx: i }, a, full)
    } else if let Some(&g) = b.actions.get(&r.name.name) {
        let Decl::Action(a) = &b.prog.decls[g] else {
            return Err(Diagnostic::new(r.span, "not an action"));
        };
        let full = name_annotation(&a.annotations)
            .map(|n| n.trim_start_matches('.').to_string())
            .unwrap_or(a.name.name.clone());
        (ActionLoc::Global(g), a, full)
    } else {
        return Err(Diagnostic::new(r.name.span, format!("no action `{}`", r.name.name)));
    };
    let mut data = Vec::new();
    let mut ndir = 0;
    for p in &a.params {
        if p.dir == Direction::None {
            data.push((p.name.name.clone(), b.env.resolve(&p.ty, &[])?));
        } else {
            ndir += 1;
        }
    }
    if r.args.len() != ndir && !r.args.is_empty() {
        return Err(Diagnostic::unsupported(
            r.span,
            "binding an action's data parameters in the table's `actions`",
        ));
    }
    if ndir > 0 && r.args.len() != ndir {
        return Err(Diagnostic::new(
            r.span,
            format!("action `{}` needs its {ndir} directional arguments here", r.name.name),
        ));
    }
    Ok(ActionSpec { name: full, short: a.name.name.clone(), loc, bound: r.args.clone(), data })
}

/// Action data from a `default_action`/entry written in the program:
/// either just the data arguments or all arguments (the directional
/// ones then as written in `actions`).
fn const_action_args(
    b: &Builder<'_>,
    spec: &ActionSpec,
    args: &[ast::Arg],
    consts: &dyn Fn(&str) -> Option<Value>,
    span: crate::diag::Span,
) -> Result<Vec<Value>> {
    let skip = if args.len() == spec.data.len() {
        0
    } else if args.len() == spec.data.len() + spec.bound.len() {
        spec.bound.len()
    } else {
        return Err(Diagnostic::new(
            span,
            format!("action `{}` takes {} action-data arguments", spec.short, spec.data.len()),
        ));
    };
    let mut out = Vec::new();
    for (a, (_, ty)) in args.iter().skip(skip).zip(spec.data.iter()) {
        out.push(b.env.eval_const(&a.value, Some(ty), consts)?);
    }
    Ok(out)
}

fn const_entry_keys(
    b: &Builder<'_>,
    ts: &TableStatic,
    e: &ast::TableEntry,
    consts: &dyn Fn(&str) -> Option<Value>,
) -> Result<Vec<Pat>> {
    let all_any = e.keys.len() == 1
        && ts.keys.len() != 1
        && matches!(e.keys[0], Keyset::Default(_) | Keyset::DontCare(_));
    if all_any {
        return Ok(ts.keys.iter().map(|_| Pat::Any).collect());
    }
    if e.keys.len() != ts.keys.len() {
        return Err(Diagnostic::new(
            e.span,
            format!("the entry has {} keys, the table {}", e.keys.len(), ts.keys.len()),
        ));
    }
    let mut out = Vec::new();
    for (ks, k) in e.keys.iter().zip(&ts.keys) {
        let bits = |x: &Expr| -> Result<Bits> {
            let v = b.env.eval_const(x, None, consts)?;
            key_bits(&v, k.width, &b.env.errors).map_err(|m| Diagnostic::new(x.span, m))
        };
        let m = match ks {
            Keyset::Expr(x) => KeyPatIn::Exact(bits(x)?),
            Keyset::Mask(v, m) => KeyPatIn::Mask(bits(v)?, bits(m)?),
            Keyset::Range(lo, hi) => KeyPatIn::Range(bits(lo)?, bits(hi)?),
            Keyset::Default(_) | Keyset::DontCare(_) => KeyPatIn::Any,
        };
        out.push(to_pat(k, m).map_err(|msg| Diagnostic::new(e.span, msg))?);
    }
    Ok(out)
}

enum KeyPatIn {
    Exact(Bits),
    Mask(Bits, Bits),
    Lpm(Bits, u32),
    Range(Bits, Bits),
    Any,
}

pub(crate) fn prefix_mask(width: u32, len: u32) -> Bits {
    Bits::all_ones(width).shl((width - len.min(width)) as u64)
}

/// The prefix length of a prefix-shaped mask.
fn mask_prefix(width: u32, m: &Bits) -> Option<u32> {
    (0..=width).find(|&len| prefix_mask(width, len) == *m)
}

fn to_pat(k: &KeySpec, m: KeyPatIn) -> CtlResult<Pat> {
    let w = k.width;
    let full = Bits::all_ones(w);
    Ok(match (k.kind, m) {
        (_, KeyPatIn::Any) if k.kind != MatchKind::Exact => Pat::Any,
        (MatchKind::Exact, KeyPatIn::Any) => {
            return Err(format!("exact key `{}` needs a value", k.name))
        }
        (MatchKind::Exact | MatchKind::Optional, KeyPatIn::Exact(v)) => Pat::Exact(v),
        (MatchKind::Exact | MatchKind::Optional, KeyPatIn::Mask(v, m)) if m == full => {
            Pat::Exact(v)
        }
        (MatchKind::Optional, KeyPatIn::Mask(_, m)) if m.is_zero() => Pat::Any,
        (MatchKind::Exact | MatchKind::Optional, KeyPatIn::Lpm(v, l)) if l == w => Pat::Exact(v),
        (MatchKind::Exact | MatchKind::Optional, _) => {
            return Err(format!("key `{}` matches exactly; it needs a full value", k.name))
        }
        (MatchKind::Lpm, KeyPatIn::Exact(v)) => Pat::Lpm(v, w),
        (MatchKind::Lpm, KeyPatIn::Lpm(v, l)) => {
            if l > w {
                return Err(format!("prefix length {l} is longer than key `{}`", k.name));
            }
            Pat::Lpm(v.and(&prefix_mask(w, l)), l)
        }
        (MatchKind::Lpm, KeyPatIn::Mask(v, m)) => {
            let l = mask_prefix(w, &m)
                .ok_or_else(|| format!("the mask for LPM key `{}` is not a prefix", k.name))?;
            Pat::Lpm(v.and(&m), l)
        }
        (MatchKind::Lpm, KeyPatIn::Range(..)) => {
            return Err(format!("a range for LPM key `{}`", k.name))
        }
        (MatchKind::Ternary, KeyPatIn::Exact(v)) => Pat::Ternary(v, full),
        (MatchKind::Ternary, KeyPatIn::Mask(v, m)) => Pat::Ternary(v.and(&m), m),
        (MatchKind::Ternary, KeyPatIn::Lpm(v, l)) => {
            let m = prefix_mask(w, l);
            Pat::Ternary(v.and(&m), m)
        }
        (MatchKind::Ternary, KeyPatIn::Range(..)) => {
            return Err(format!("a range for ternary key `{}`", k.name))
        }
        (MatchKind::Range, KeyPatIn::Exact(v)) => Pat::Range(v.clone(), v),
        (MatchKind::Range, KeyPatIn::Range(lo, hi)) => Pat::Range(lo, hi),
        (MatchKind::Range, KeyPatIn::Mask(v, m)) if m == full => Pat::Range(v.clone(), v),
        (MatchKind::Range, _) => return Err(format!("range key `{}` needs a range", k.name)),
        (_, KeyPatIn::Any) => Pat::Any,
    })
}

/// A key value (or keyset bound) as bits of the key's width; errors are
/// numbered by their place in `errors`.
pub(crate) fn key_bits(v: &Value, width: u32, errors: &[String]) -> CtlResult<Bits> {
    match v {
        Value::Error(e) => match errors.iter().position(|x| x == e) {
            Some(i) => Ok(Bits::from_u64(width, i as u64)),
            None => Err(format!("unknown error `{e}`")),
        },
        Value::Bits(b) | Value::Signed(b) => Ok(b.resize(width)),
        Value::Int(i) => Ok(Bits::from_i128(width, *i)),
        Value::Bool(x) => Ok(Bits::from_u64(width, *x as u64)),
        other => Err(format!("a {} cannot be a table key", other.kind_name())),
    }
}

pub(crate) fn big_bits(v: &BigValue, width: u32, what: &str) -> CtlResult<Bits> {
    if !Bits::big_fits(width, v) {
        return Err(format!("value for {what} does not fit in {width} bits"));
    }
    Ok(Bits::from_big(width, v))
}

/// Adds a control-plane entry.
pub(crate) fn add_entry(
    ts: &TableStatic,
    td: &mut TableDyn,
    e: &EntrySpec,
    seq: u64,
) -> CtlResult<u64> {
    if ts.entries_const {
        return Err(format!("table `{}` has `const entries`", ts.name));
    }
    let mut given: Vec<Option<&KeyMatch>> = vec![None; ts.keys.len()];
    for (kname, m) in &e.keys {
        let i = super::resolve_suffix(
            kname,
            ts.keys.iter().enumerate().map(|(i, k)| (k.name.as_str(), i)),
            &format!("key of table `{}`", ts.name),
        )?;
        if given[i].is_some() {
            return Err(format!("key `{kname}` given twice"));
        }
        given[i] = Some(m);
    }
    let mut keys = Vec::new();
    for (k, m) in ts.keys.iter().zip(given) {
        let what = format!("key `{}`", k.name);
        let m = match m {
            None | Some(KeyMatch::Any) => KeyPatIn::Any,
            Some(KeyMatch::Exact(v)) => KeyPatIn::Exact(big_bits(v, k.width, &what)?),
            Some(KeyMatch::Ternary { value, mask }) => {
                KeyPatIn::Mask(big_bits(value, k.width, &what)?, Bits::from_big(k.width, mask))
            }
            Some(KeyMatch::Lpm { value, prefix_len }) => {
                KeyPatIn::Lpm(big_bits(value, k.width, &what)?, *prefix_len)
            }
            Some(KeyMatch::Range { lo, hi }) => {
                KeyPatIn::Range(big_bits(lo, k.width, &what)?, big_bits(hi, k.width, &what)?)
            }
        };
        keys.push(to_pat(k, m)?);
    }
    let action = resolve_action(ts, &e.action)?;
    let args = ctl_action_args(ts, action, &e.args)?;
    let prio = match e.priority {
        Some(p) => p as i128,
        None => td.prios.keys().next().map_or(0, |m| m - 1),
    };
    // A key is one entry: in exact and LPM tables whatever the priority
    // (the order of adding gives none its meaning), with priorities at
    // the same priority.
    let by_prio = ts.lookup == Lookup::Priority;
    if td.slots.contains_key(&TableDyn::slot(by_prio, &keys, prio)) {
        return Err(format!("table `{}` already has an entry with this key", ts.name));
    }
    let handle = td.next_handle;
    td.next_handle += 1;
    let explicit_prio = e.priority.is_some();
    td.push(
        by_prio,
        Entry {
            keys,
            action,
            args,
            prio,
            explicit_prio,
            seq: seq + (1 << 32),
            handle,
            counter: (0, 0),
            meter: Meter::default(),
            colours: [(0, 0); 3],
            hits: 0,
        },
    );
    Ok(handle)
}

/// Removes the entry with `handle`.
pub(crate) fn delete_entry(ts: &TableStatic, td: &mut TableDyn, handle: u64) -> CtlResult<()> {
    if ts.entries_const {
        return Err(format!("table `{}` has `const entries`", ts.name));
    }
    let i = td
        .entries
        .iter()
        .position(|e| e.handle == handle)
        .ok_or_else(|| format!("table `{}` has no entry with handle {handle}", ts.name))?;
    td.remove(ts.lookup == Lookup::Priority, i);
    Ok(())
}

pub(crate) fn value_big(v: &Value) -> BigValue {
    match v {
        Value::Bits(b) | Value::Signed(b) => b.to_big(),
        Value::Bool(x) => BigValue::from_u128(u128::from(*x)),
        _ => BigValue::default(),
    }
}

fn args_big(spec: &ActionSpec, args: &[Value]) -> Vec<(String, BigValue)> {
    spec.data.iter().zip(args).map(|((n, _), v)| (n.clone(), value_big(v))).collect()
}

/// The entries (in handle order) and the default action of a table.
#[allow(clippy::type_complexity)]
pub(crate) fn dump(
    ts: &TableStatic,
    td: &TableDyn,
) -> (Vec<EntryDump>, (String, Vec<(String, BigValue)>)) {
    let mut entries: Vec<EntryDump> = td
        .entries
        .iter()
        .map(|e| EntryDump {
            handle: e.handle,
            keys: ts
                .keys
                .iter()
                .zip(&e.keys)
                .map(|(k, p)| {
                    let m = match p {
                        Pat::Exact(v) => KeyMatch::Exact(v.to_big()),
                        Pat::Ternary(v, m) => {
                            KeyMatch::Ternary { value: v.to_big(), mask: m.to_big() }
                        }
                        Pat::Lpm(v, l) => KeyMatch::Lpm { value: v.to_big(), prefix_len: *l },
                        Pat::Range(lo, hi) => KeyMatch::Range { lo: lo.to_big(), hi: hi.to_big() },
                        Pat::Any => KeyMatch::Any,
                    };
                    (k.name.clone(), m)
                })
                .collect(),
            action: ts.actions[e.action].name.clone(),
            args: args_big(&ts.actions[e.action], &e.args),
            priority: e.explicit_prio.then(|| u64::try_from(e.prio).unwrap_or(0)),
        })
        .collect();
    entries.sort_by_key(|e| e.handle);
    let (a, args) = &td.default;
    (entries, (ts.actions[*a].name.clone(), args_big(&ts.actions[*a], args)))
}

fn resolve_action(ts: &TableStatic, name: &str) -> CtlResult<usize> {
    super::resolve_suffix(
        name,
        ts.actions.iter().enumerate().map(|(i, a)| (a.name.as_str(), i)),
        &format!("action of table `{}`", ts.name),
    )
}

fn ctl_action_args(
    ts: &TableStatic,
    action: usize,
    args: &[(String, BigValue)],
) -> CtlResult<Vec<Value>> {
    let spec = &ts.actions[action];
    let mut out = Vec::new();
    for (pname, pty) in &spec.data {
        let Some((_, v)) = args.iter().find(|(n, _)| n == pname) else {
            return Err(format!("action `{}` needs parameter `{pname}`", spec.name));
        };
        let what = format!("parameter `{pname}`");
        out.push(match pty {
            Ty::Bits { signed: false, width } => Value::Bits(big_bits(v, *width, &what)?),
            Ty::Bits { signed: true, width } => Value::Signed(big_bits(v, *width, &what)?),
            Ty::Bool => Value::Bool(!big_bits(v, 1, &what)?.is_zero()),
            Ty::Enum(e) if e.underlying.is_some() => {
                let (s, w) = e.underlying.unwrap_or((false, 0));
                let b = big_bits(v, w, &what)?;
                if s {
                    Value::Signed(b)
                } else {
                    Value::Bits(b)
                }
            }
            other => {
                return Err(format!("{what} has type {other}, which the control plane cannot set"))
            }
        });
    }
    for (n, _) in args {
        if !spec.data.iter().any(|(p, _)| p == n) {
            return Err(format!("action `{}` has no parameter `{n}`", spec.name));
        }
    }
    Ok(out)
}

pub(crate) fn set_default(
    ts: &TableStatic,
    td: &mut TableDyn,
    action: &str,
    args: &[(String, BigValue)],
) -> CtlResult<()> {
    if ts.default_const {
        return Err(format!("table `{}` has a const default action", ts.name));
    }
    let a = resolve_action(ts, action)?;
    let args = ctl_action_args(ts, a, args)?;
    td.default = (a, args);
    Ok(())
}

fn pat_matches(p: &Pat, k: &Bits) -> bool {
    match p {
        Pat::Any => true,
        Pat::Exact(v) => v == k,
        Pat::Ternary(v, m) => k.and(m) == *v,
        Pat::Lpm(v, l) => k.and(&prefix_mask(k.width(), *l)) == *v,
        Pat::Range(lo, hi) => {
            lo.cmp_unsigned(k) != Ordering::Greater && k.cmp_unsigned(hi) != Ordering::Greater
        }
    }
}

pub(crate) fn prefix_len(e: &Entry) -> u32 {
    e.keys
        .iter()
        .map(|p| match p {
            Pat::Lpm(_, l) => *l,
            _ => 0,
        })
        .sum()
}

/// The position in `td.entries` of the entry matching `keys`, if any.
pub(crate) fn lookup_index(ts: &TableStatic, td: &TableDyn, keys: &[Bits]) -> Option<usize> {
    let mut best: Option<(usize, &Entry)> = None;
    for (i, e) in td.entries.iter().enumerate() {
        if !e.keys.iter().zip(keys).all(|(p, k)| pat_matches(p, k)) {
            continue;
        }
        let better = match best {
            None => true,
            Some((_, b)) => {
                let by_prio = e.prio.cmp(&b.prio).then(b.seq.cmp(&e.seq));
                match ts.lookup {
                    Lookup::Exact => false,
                    Lookup::Lpm => {
                        prefix_len(e).cmp(&prefix_len(b)).then(by_prio) == Ordering::Greater
                    }
                    Lookup::Priority => by_prio == Ordering::Greater,
                }
            }
        };
        if better {
            best = Some((i, e));
        }
    }
    best.map(|(i, _)| i)
}

/// Counts a hit in the table's direct counter.
pub(crate) fn count_direct(st: &mut ExternState, bytes: u64) {
    if let ExternState::Counter(c) = st {
        if let Some(cell) = c.first_mut() {
            cell.0 += 1;
            cell.1 += bytes;
        }
    }
}

/// The static type of a key expression in control declaration `decl`.
fn static_type(b: &Builder<'_>, decl: usize, e: &Expr, depth: u32) -> Option<Ty> {
    if depth > 64 {
        return None;
    }
    let Decl::Control(c) = &b.prog.decls[decl] else {
        return None;
    };
    let tps: Vec<String> = c.type_params.iter().map(|t| t.name.clone()).collect();
    match &e.kind {
        ExprKind::Name { id, .. } => {
            for p in c.params.iter().chain(c.ctor_params.iter()) {
                if p.name.name == id.name {
                    return b.env.resolve(&p.ty, &tps).ok();
                }
            }
            for l in &c.locals {
                match l {
                    Local::Var(v) if v.name.name == id.name => {
                        return b.env.resolve(&v.ty, &tps).ok()
                    }
                    Local::Const(k) if k.name.name == id.name => {
                        return b.env.resolve(&k.ty, &tps).ok()
                    }
                    _ => {}
                }
            }
            b.env.consts.get(&id.name).map(|(t, _)| t.clone())
        }
        ExprKind::Member(base, m) => {
            if let Some(v) = b.env.type_member(base, &m.name) {
                return match v.ok()? {
                    Value::Error(_) => Some(Ty::Error),
                    _ => b.env.type_of_type_expr(base),
                };
            }
            match static_type(b, decl, base, depth + 1)? {
                Ty::Header(a) | Ty::Struct(a) | Ty::HeaderUnion(a) => a.field(&m.name).cloned(),
                Ty::Stack(elem, _) => match m.name.as_str() {
                    "next" | "last" => Some(*elem),
                    "lastIndex" | "nextIndex" => Some(Ty::Bits { signed: false, width: 32 }),
                    _ => None,
                },
                _ => None,
            }
        }
        ExprKind::Index(base, _) => match static_type(b, decl, base, depth + 1)? {
            Ty::Stack(elem, _) => Some(*elem),
            _ => None,
        },
        ExprKind::Slice(_, hi, lo) => {
            let hi = b.env.eval_const(hi, None, &|_| None).ok()?.to_u64()?;
            let lo = b.env.eval_const(lo, None, &|_| None).ok()?.to_u64()?;
            let w = u32::try_from(hi.checked_sub(lo)? + 1).ok()?;
            Some(Ty::Bits { signed: false, width: w })
        }
        ExprKind::Cast(t, _) => b.env.resolve(t, &tps).ok(),
        ExprKind::Int { width: Some((signed, w)), .. } => {
            Some(Ty::Bits { signed: *signed, width: *w })
        }
        ExprKind::Bool(_) => Some(Ty::Bool),
        ExprKind::Call { func, .. } => match &func.kind {
            ExprKind::Member(_, m) if m.name == "isValid" => Some(Ty::Bool),
            _ => None,
        },
        ExprKind::Unary(ast::UnOp::Not, _) => Some(Ty::Bool),
        ExprKind::Unary(_, x) => static_type(b, decl, x, depth + 1),
        ExprKind::Binary(op, l, r) => {
            use ast::BinOp::*;
            match op {
                Lt | Le | Gt | Ge | Eq | Ne | And | Or => Some(Ty::Bool),
                Shl | Shr => static_type(b, decl, l, depth + 1),
                Concat => {
                    let a = static_type(b, decl, l, depth + 1)?.bit_width()?;
                    let c = static_type(b, decl, r, depth + 1)?.bit_width()?;
                    Some(Ty::Bits { signed: false, width: a.checked_add(c)? })
                }
                _ => static_type(b, decl, l, depth + 1)
                    .filter(|t| !matches!(t, Ty::Int))
                    .or_else(|| static_type(b, decl, r, depth + 1)),
            }
        }
        ExprKind::Mux(_, x, y) => static_type(b, decl, x, depth + 1)
            .filter(|t| !matches!(t, Ty::Int))
            .or_else(|| static_type(b, decl, y, depth + 1)),
        ExprKind::Int { width: None, .. } => Some(Ty::Int),
        _ => None,
    }
}
