//! The OpenFlow reference: what OpenFlow 1.3.5 says happens to a packet,
//! interpreted straight from the spec.
//!
//! This walk is the oracle every fast path is tested against, so it is
//! written to be obviously right rather than fast:
//! - each table is scanned linearly in priority order
//!   ([`FlowTable::lookup`], or with guards the scan that runs each
//!   candidate's guards in the order ARCHITECTURE.md defines);
//! - an entry's instructions run in the spec's order (§5.9: meter,
//!   apply-actions, clear-actions, write-actions, write-metadata,
//!   goto-table, whatever order the flow-mod listed them in);
//! - apply-actions and the action set (§5.10) are interpreted as
//!   `sluice_ofp::action::Action` values by [`Pipeline::action`] and
//!   `edit.rs`, never through the ops `lower.rs` makes of them;
//! - no cache, no recording, no composed program.
//!
//! It runs for the configuration that *is* the oracle
//! (`Datapath::Reference` with caches off) and for every trace
//! ([`Pipeline::trace`], whatever the configuration: a trace explains
//! what the spec says, and the differential tests hold every other
//! configuration to the same answer). Every other configuration runs the
//! fast walk of `exec.rs` over lowered ops.
//!
//! Shared with the fast walk, and so checked by the same differential
//! tests from both sides: the control graph's traversal rules
//! (`Graph::after`), ports, groups, meters and packet-ins (`exec.rs`).

use crate::edit;
use crate::exec::{Ctx, Flow, Pkt, TraceEvent, Tx, Worker};
use crate::table::FlowTable;
use crate::Pipeline;
use sluice_core::graph::{Next, Node};
use sluice_core::guard::{Answers, GuardAt, GuardInput};
use sluice_core::op::Op;
use sluice_core::upcall::Reason;
use sluice_core::walk::tag;
use sluice_ofp::action::Action;
use sluice_ofp::instruction::Instruction;
use sluice_ofp::oxm::{FieldId, Oxm};
use sluice_packet::key::FlowMask;
use sluice_packet::parse::refresh_metadata;

/// The action set of §5.10: at most one action of each type (one set-field
/// per field).
#[derive(Clone, Debug, Default)]
pub struct ActionSet {
    actions: Vec<Action>,
}

/// Which action an action set holds at most one of: its type, and for a
/// set-field its field.
pub(crate) fn set_slot(a: &Action) -> (u16, Option<FieldId>) {
    let f = match a {
        Action::SetField(Oxm::Basic { field, .. }) => Some(*field),
        _ => None,
    };
    (a.type_code(), f)
}

/// Execution rank of an action in the action set.
pub(crate) fn set_rank(a: &Action) -> u8 {
    match a {
        Action::CopyTtlIn => 0,
        Action::PopVlan | Action::PopMpls(_) | Action::PopPbb => 1,
        Action::PushMpls(_) => 2,
        Action::PushPbb(_) => 3,
        Action::PushVlan(_) => 4,
        Action::CopyTtlOut => 5,
        Action::DecMplsTtl | Action::DecNwTtl => 6,
        Action::SetMplsTtl(_) | Action::SetNwTtl(_) | Action::SetField(_) => 7,
        Action::SetQueue(_) => 8,
        Action::Group(_) => 9,
        Action::Output { .. } => 10,
        Action::Experimenter { .. } => 11,
    }
}

impl ActionSet {
    pub fn clear(&mut self) {
        self.actions.clear();
    }

    pub fn write(&mut self, list: &[Action]) {
        for a in list {
            let slot = set_slot(a);
            match self.actions.iter_mut().find(|x| set_slot(x) == slot) {
                Some(x) => *x = a.clone(),
                None => self.actions.push(a.clone()),
            }
        }
    }

    /// The actions in execution order; with a group action the output is
    /// dropped (§5.10).
    pub fn ordered(&self) -> Vec<Action> {
        let mut v = self.actions.clone();
        v.sort_by_key(set_rank);
        if v.iter().any(|a| matches!(a, Action::Group(_))) {
            v.retain(|a| !matches!(a, Action::Output { .. }));
        }
        v
    }

    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }
}

impl Pipeline {
    /// Whether packets take the reference walk: the oracle configuration,
    /// or a trace.
    #[inline]
    pub(crate) fn is_oracle(&self, w: &Worker) -> bool {
        w.ext.trace.is_some() || self.cfg.is_oracle()
    }

    /// The reference walk of one packet from the graph's start (see the
    /// module docs).
    pub(crate) fn ref_walk(&self, w: &mut Worker, pkt: &mut Pkt, tx: &mut dyn Tx) {
        let graph = &*self.graph;
        let mut node = graph.start();
        // The context of the last entry hit: the action set runs in it.
        let mut last_ctx: Option<Ctx> = None;
        let mut set = ActionSet::default();
        // Guard results of this packet (made on the first guarded lookup).
        let mut answers: Option<Box<Answers>> = None;
        // Bounded: a graph is acyclic and its goto edges only go to
        // higher tables, so no walk visits more nodes than the graph has.
        for _ in 0..=graph.nodes().len() {
            let (table, next) = match graph.node(node) {
                Some(Node::Apply { table, next }) => (*table, next),
                Some(Node::Branch { test, then, otherwise }) => {
                    pkt.fresh();
                    node = if test.eval(&pkt.key) { *then } else { *otherwise };
                    continue;
                }
                Some(Node::End) | None => break,
            };
            let Some(t) = self.tables.get(usize::from(table)) else { return };
            pkt.fresh();
            t.stats.add(w.shard, FlowTable::LOOKUPS, 1);
            let found = if t.has_guards() {
                let answers = answers.get_or_insert_default();
                let at =
                    GuardAt { now_ns: w.now_ns, worker: w.shard.index(), dry: w.shard.is_dry() };
                let input = GuardInput { frame: pkt.data(), in_port: pkt.meta.in_port, at };
                let entries = t.entries();
                let mut unused_wc = FlowMask::ZERO;
                let ext = &mut w.ext;
                t.lookup_guarded(&pkt.key, &mut unused_wc, false, &mut |i| match entries.get(i) {
                    Some(e) => answers.all_with(
                        e.guards.as_slice(),
                        |g| tag(table, i, g),
                        |g| {
                            if !ext.tracing() {
                                return g.eval(&input);
                            }
                            let (result, changes) = g.eval_traced(&input);
                            let (priority, guard) = (e.priority, g.describe());
                            ext.note(|| TraceEvent::Guard {
                                table,
                                priority,
                                guard,
                                result,
                                changes,
                            });
                            result
                        },
                    ),
                    None => false,
                })
            } else {
                t.lookup(&pkt.key)
            };
            let Some(e) = found.and_then(|i| t.entries().get(i)) else {
                w.ext.note(|| TraceEvent::Lookup { table, entry: None });
                if let Next::Entry = next {
                    w.ext.note(|| TraceEvent::Drop("no matching entry and no table-miss entry"));
                    return;
                }
                // A graph that goes on after a miss (P4's default path).
                match graph.after(table, next, None) {
                    Some(n) => node = n,
                    None => break,
                }
                continue;
            };
            t.stats.add(w.shard, FlowTable::MATCHED, 1);
            w.ext.note(|| TraceEvent::Lookup {
                table,
                entry: Some((e.priority, e.cookie, e.r#match.clone())),
            });
            e.hit(w.shard, pkt.data().len(), w.now_ns);
            let ctx = Ctx { spec: true, ..self.entry_ctx(table, e) };
            last_ctx = Some(ctx);
            let mut goto = None;
            let mut order: Vec<&Instruction> = e.instructions.iter().collect();
            order.sort_by_key(|i| i.exec_rank());
            for ins in order {
                w.ext.note(|| TraceEvent::Instruction(ins.clone()));
                match ins {
                    Instruction::Meter(m) => {
                        if let Flow::Stop = self.meter(w, *m, pkt) {
                            return;
                        }
                    }
                    Instruction::ApplyActions(list) => {
                        if let Flow::Stop = self.apply_actions(w, list, &e.ops.apply, pkt, ctx, tx)
                        {
                            return;
                        }
                    }
                    Instruction::ClearActions => set.clear(),
                    Instruction::WriteActions(list) => set.write(list),
                    Instruction::WriteMetadata { metadata, mask } => {
                        pkt.meta.metadata = (pkt.meta.metadata & !mask) | (metadata & mask);
                        refresh_metadata(&mut pkt.key, &pkt.meta);
                    }
                    Instruction::GotoTable(t) => goto = Some(*t),
                    Instruction::Experimenter { .. } => {}
                }
            }
            match graph.after(table, next, Some((e.ops.action, goto))) {
                Some(n) => node = n,
                None => break,
            }
        }
        // The end of the walk: the action set, in the context of the last
        // entry hit.
        let Some(ctx) = last_ctx else { return };
        let ordered = set.ordered();
        w.ext.note(|| TraceEvent::ActionSet(ordered.clone()));
        self.actions(w, &ordered, pkt, ctx, tx);
    }

    /// Interprets an action list in order until one stops the packet.
    pub(crate) fn actions(
        &self,
        w: &mut Worker,
        list: &[Action],
        pkt: &mut Pkt,
        ctx: Ctx,
        tx: &mut dyn Tx,
    ) -> Flow {
        for a in list {
            if let Flow::Stop = self.action(w, a, pkt, ctx, tx) {
                return Flow::Stop;
            }
        }
        Flow::Continue
    }

    /// A flow's apply-actions: [`Pipeline::actions`], except that a
    /// `send_maps` runs the entry's reporter (its op at the same place in
    /// `ops`, lowered one for one from the list: the reporter holds the
    /// rule's rate limit, so the reference must ask the same one).
    fn apply_actions(
        &self,
        w: &mut Worker,
        list: &[Action],
        ops: &[Op],
        pkt: &mut Pkt,
        ctx: Ctx,
        tx: &mut dyn Tx,
    ) -> Flow {
        for (i, a) in list.iter().enumerate() {
            if let Some(Op::Report(r)) = ops.get(i) {
                self.report(w, r, ctx);
                continue;
            }
            if let Flow::Stop = self.action(w, a, pkt, ctx, tx) {
                return Flow::Stop;
            }
        }
        Flow::Continue
    }

    /// Interprets one action from the spec (`edit.rs` for header edits).
    pub(crate) fn action(
        &self,
        w: &mut Worker,
        a: &Action,
        pkt: &mut Pkt,
        ctx: Ctx,
        tx: &mut dyn Tx,
    ) -> Flow {
        match a {
            Action::Output { port, max_len } => self.output(w, *port, *max_len, pkt, ctx, tx),
            Action::Group(g) => self.group(w, *g, pkt, ctx, tx),
            Action::SetQueue(q) => pkt.queue = Some(*q),
            _ => match edit::apply(a, pkt) {
                edit::Outcome::Done => {}
                edit::Outcome::InvalidTtl => {
                    let ctx = Ctx { reason: Reason::InvalidTtl, ..ctx };
                    let len = self.invalid_ttl_max_len();
                    self.packet_in(w, pkt, ctx, len);
                    return Flow::Stop;
                }
            },
        }
        Flow::Continue
    }
}
