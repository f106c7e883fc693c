//! FLOW_MOD semantics (OpenFlow 1.3.5 §6.4, §7.3.4.1) and the validation of
//! instructions and actions shared with PACKET_OUT and GROUP_MOD.
//!
//! Order of checks (each failure is the error the spec names):
//! 1. command (`OFPFMFC_BAD_COMMAND`), flags (`OFPFMFC_BAD_FLAGS`), table id
//!    (`OFPFMFC_BAD_TABLE_ID`; `OFPTT_ALL` only for deletes);
//! 2. the match: prerequisites (`OFPBMC_BAD_PREREQ`), then compilation
//!    (`OFPBMC_BAD_VALUE`, `OFPBMC_BAD_WILDCARDS`, `OFPBMC_BAD_FIELD`);
//! 3. instructions (add/modify only): at most one of each type
//!    (`OFPBIC_UNSUP_INST`, OpenFlow 1.3 has no DUP_INST code), goto-table
//!    forward and in range (`OFPBIC_BAD_TABLE_ID`), meters exist
//!    (`OFPMMFC_UNKNOWN_METER`), experimenter instructions
//!    (`OFPBIC_BAD_EXPERIMENTER`); then every action (see
//!    [`Pipeline::validate_actions`]).
//! 4. add: `CHECK_OVERLAP` (`OFPFMFC_OVERLAP`), table full
//!    (`OFPFMFC_TABLE_FULL`).
//!
//! Experimenter objects go through the experimenter registry: match fields
//! of a registered extension just before compilation, actions, set-fields
//! and instructions where the order above meets them. No extension for the
//! id gives the error above, at the same point as before; a registered
//! extension's `check` decides (see `extension.rs` for what an accepted
//! object does).
//!
//! Output ports are checked for range, not existence: ports come and go
//! (hot-plug), as in Open vSwitch. Port 0, `OFPP_ANY`, `OFPP_TABLE` (outside
//! packet-out), `OFPP_NORMAL` (not implemented) and numbers above
//! `OFPP_MAX` that are not reserved ports are `OFPBAC_BAD_OUT_PORT`.

use crate::filterprog::{is_guard_field, GuardFields};
use crate::pof::Windows;
use crate::rule::Rule;
use crate::table::FlowEntry;
use crate::tally::Shard;
use crate::Pipeline;
use sluice_core::guard::GuardSet;
use sluice_core::upcall::{Removal, Removed, Upcall};
use sluice_ofp::action::Action;
use sluice_ofp::consts::{group_id, port_no, table_id, OFPVID_PRESENT};
use sluice_ofp::error::{ErrorCode, Result};
use sluice_ofp::experimenter::Payload;
use sluice_ofp::fieldcopy::FieldAction;
use sluice_ofp::filterprog::{Refusal, SendMaps};
use sluice_ofp::instruction::Instruction;
use sluice_ofp::message::{flow_mod_command as cmd, flow_mod_flags as ff, FlowMod};
use sluice_ofp::oxm::{FieldBytes, FieldId, Match, Oxm};
use sluice_ofp::pof::{PofField, PofMatch};
use std::sync::Arc;

const KNOWN_FLAGS: u16 = ff::SEND_FLOW_REM
    | ff::CHECK_OVERLAP
    | ff::RESET_COUNTS
    | ff::NO_PKT_COUNTS
    | ff::NO_BYT_COUNTS;

/// What is known about the packet at some point of an action list, for
/// set-field prerequisite checks: exact field values from the match,
/// updated by push/pop actions.
#[derive(Clone, Debug, Default)]
pub struct PacketFacts {
    pub eth_type: Option<u16>,
    pub ip_proto: Option<u8>,
    pub icmpv6_type: Option<u8>,
    /// `Some(true)`: tagged; `Some(false)`: untagged; `None`: unknown.
    pub vlan: Option<bool>,
}

impl PacketFacts {
    pub fn from_match(m: &Match) -> Self {
        let mut f = PacketFacts::default();
        for o in &m.oxms {
            if let Oxm::Basic { field, value, mask } = o {
                let v = value.to_u128();
                match (field, mask) {
                    (FieldId::EthType, None) => f.eth_type = Some(v as u16),
                    (FieldId::IpProto, None) => f.ip_proto = Some(v as u8),
                    (FieldId::Icmpv6Type, None) => f.icmpv6_type = Some(v as u8),
                    (FieldId::VlanVid, None) => f.vlan = Some(v as u16 & OFPVID_PRESENT != 0),
                    (FieldId::VlanVid, Some(m)) if m.to_u128() as u16 & OFPVID_PRESENT != 0 => {
                        f.vlan = Some(v as u16 & OFPVID_PRESENT != 0)
                    }
                    _ => {}
                }
            }
        }
        f
    }

    /// Whether setting `field` is consistent with what is known, by asking
    /// the match-prerequisite table about a match made of the facts.
    fn allows_set(&self, field: FieldId, value: &FieldBytes) -> bool {
        let b = |f: FieldId, v: u128| Oxm::Basic {
            field: f,
            value: FieldBytes::from_u128(v, f.len()),
            mask: None,
        };
        let mut m = Match::default();
        if let Some(t) = self.eth_type {
            m.oxms.push(b(FieldId::EthType, t.into()));
        }
        if let Some(p) = self.ip_proto {
            m.oxms.push(b(FieldId::IpProto, p.into()));
        }
        if let Some(t) = self.icmpv6_type {
            m.oxms.push(b(FieldId::Icmpv6Type, t.into()));
        }
        if self.vlan == Some(true) && field != FieldId::VlanVid {
            m.oxms.push(Oxm::Basic {
                field: FieldId::VlanVid,
                value: FieldBytes::from_u128(OFPVID_PRESENT.into(), 2),
                mask: Some(FieldBytes::from_u128(OFPVID_PRESENT.into(), 2)),
            });
        }
        if !m.oxms.iter().any(|o| matches!(o, Oxm::Basic { field: f, .. } if *f == field)) {
            m.oxms.push(Oxm::Basic { field, value: *value, mask: None });
        }
        m.check_prereqs().is_ok()
    }

    /// Whether reading or writing `field` is consistent with what is
    /// known (its prerequisites follow from the facts).
    pub fn allows_field(&self, field: FieldId) -> bool {
        self.allows_set(field, &FieldBytes::from_u128(0, field.len()))
    }

    fn apply(&mut self, a: &Action) {
        match a {
            Action::PushVlan(_) => self.vlan = Some(true),
            Action::PopVlan => self.vlan = None,
            Action::PushMpls(t) => {
                // The label is the outermost tag (OpenFlow 1.3 §5.12): no
                // VLAN tag follows the MAC addresses any more.
                self.eth_type = Some(*t);
                self.vlan = Some(false);
                self.ip_proto = None;
                self.icmpv6_type = None;
            }
            Action::PopMpls(t) => {
                self.eth_type = Some(*t);
                if matches!(t, 0x8100 | 0x88a8) {
                    self.vlan = Some(true);
                }
                self.ip_proto = None;
                self.icmpv6_type = None;
            }
            // After push_pbb the outer header is the backbone one: B-MACs,
            // the I-TAG ethertype, no VLAN tag.
            Action::PushPbb(t) => {
                *self = PacketFacts { eth_type: Some(*t), vlan: Some(false), ..Default::default() }
            }
            Action::PopPbb => *self = PacketFacts::default(),
            Action::SetField(Oxm::Basic { field, value, .. }) => match field {
                FieldId::EthType => self.eth_type = Some(value.to_u128() as u16),
                FieldId::IpProto => self.ip_proto = Some(value.to_u128() as u8),
                _ => {}
            },
            _ => {}
        }
    }
}

/// Fields a SET_FIELD may not write.
fn settable(f: FieldId) -> bool {
    !matches!(f, FieldId::InPort | FieldId::InPhyPort | FieldId::Ipv6Exthdr)
}

impl Pipeline {
    /// Check one action list. `packet_out` allows `OFPP_TABLE`.
    pub fn validate_actions(
        &self,
        actions: &[Action],
        facts: &mut PacketFacts,
        packet_out: bool,
    ) -> Result<()> {
        self.validate_actions_in(actions, facts, packet_out, false)
    }

    /// [`Pipeline::validate_actions`]; `reports`: the list is a flow's
    /// apply-actions, the one place `send_maps` may stand (elsewhere it is
    /// `OFPBAC_BAD_ARGUMENT`: a report needs the rule it belongs to).
    fn validate_actions_in(
        &self,
        actions: &[Action],
        facts: &mut PacketFacts,
        packet_out: bool,
        reports: bool,
    ) -> Result<()> {
        for a in actions {
            match a {
                Action::Output { port, .. } => self.validate_out_port(*port, packet_out)?,
                Action::Group(g) if !self.groups.contains(*g) => {
                    return Err(ErrorCode::BAC_BAD_OUT_GROUP)
                }
                Action::PushVlan(t) if !matches!(t, 0x8100 | 0x88a8) => {
                    return Err(ErrorCode::BAC_BAD_ARGUMENT)
                }
                Action::PushMpls(t) if !matches!(t, 0x8847 | 0x8848) => {
                    return Err(ErrorCode::BAC_BAD_ARGUMENT)
                }
                Action::PushPbb(t) if *t != 0x88e7 => return Err(ErrorCode::BAC_BAD_ARGUMENT),
                Action::PopVlan if facts.vlan == Some(false) => {
                    return Err(ErrorCode::BAC_MATCH_INCONSISTENT)
                }
                Action::SetField(o) => match o {
                    Oxm::Basic { field, value, mask: None } => {
                        if !settable(*field) {
                            return Err(ErrorCode::BAC_BAD_SET_TYPE);
                        }
                        if *field == FieldId::VlanVid
                            && value.to_u128() as u16 & OFPVID_PRESENT == 0
                        {
                            // A VID without the present bit cannot be written
                            // into a tag.
                            return Err(ErrorCode::BAC_BAD_SET_ARGUMENT);
                        }
                        if *field == FieldId::VlanVid && facts.vlan != Some(true) {
                            // Setting a VID needs a tag: the match must say
                            // the frame is tagged, or a push_vlan must come
                            // first (Open vSwitch rejects it the same way).
                            return Err(ErrorCode::BAC_MATCH_INCONSISTENT);
                        }
                        if !facts.allows_set(*field, value) {
                            return Err(ErrorCode::BAC_MATCH_INCONSISTENT);
                        }
                    }
                    Oxm::Basic { mask: Some(_), .. } => {
                        return Err(ErrorCode::BAC_BAD_SET_ARGUMENT)
                    }
                    Oxm::Experimenter { experimenter, .. }
                        if self.cfg.extensions.get(*experimenter).is_some() =>
                    {
                        // The extension's verdict on its field; accepted:
                        // kept, inert (see `extension.rs`). A `pof` field
                        // is written with `pof_set`, not set-field.
                        if let Some(p) = Payload::oxm(o) {
                            self.cfg.extensions.check(&p)?;
                        }
                        if PofMatch::from_oxm(o).is_some() {
                            return Err(ErrorCode::BAC_BAD_SET_TYPE);
                        }
                    }
                    _ => return Err(ErrorCode::BAC_BAD_SET_TYPE),
                },
                Action::Experimenter { .. } => {
                    // Nicira's move/load and the ONF copy-field are the
                    // front end's own (`fieldcopy.rs`): the decoder's
                    // error, then the fields' prerequisites.
                    if let Some(f) = FieldAction::from_action(a) {
                        crate::fieldcopy::check_prereqs(&f?, facts)?;
                        facts.apply(a);
                        continue;
                    }
                    // No extension for the id: `OFPBAC_BAD_EXPERIMENTER`.
                    if let Some(p) = Payload::action(a) {
                        self.cfg.extensions.check(&p)?;
                    }
                    if let Some(sm) = SendMaps::from_action(a) {
                        if !reports {
                            return Err(ErrorCode::BAC_BAD_ARGUMENT);
                        }
                        self.filters.check_send_maps(&sm?).map_err(|r| r.error_code())?;
                    }
                }
                _ => {}
            }
            facts.apply(a);
        }
        Ok(())
    }

    fn validate_out_port(&self, port: u32, packet_out: bool) -> Result<()> {
        match port {
            0 | port_no::ANY | port_no::NORMAL => Err(ErrorCode::BAC_BAD_OUT_PORT),
            port_no::TABLE if !packet_out => Err(ErrorCode::BAC_BAD_OUT_PORT),
            p if p <= port_no::MAX => Ok(()),
            port_no::IN_PORT
            | port_no::TABLE
            | port_no::FLOOD
            | port_no::ALL
            | port_no::CONTROLLER
            | port_no::LOCAL => Ok(()),
            _ => Err(ErrorCode::BAC_BAD_OUT_PORT),
        }
    }

    /// Check an instruction list installed in `table`.
    pub fn validate_instructions(&self, table: u8, ins: &[Instruction], m: &Match) -> Result<()> {
        let mut seen = [false; 7];
        for i in ins {
            let slot = match i {
                Instruction::GotoTable(_) => 1,
                Instruction::WriteMetadata { .. } => 2,
                Instruction::WriteActions(_) => 3,
                Instruction::ApplyActions(_) => 4,
                Instruction::ClearActions => 5,
                Instruction::Meter(_) => 6,
                Instruction::Experimenter { .. } => {
                    // No extension for the id: `OFPBIC_BAD_EXPERIMENTER`.
                    // Accepted ones may repeat (an extension can refuse).
                    if let Some(p) = Payload::instruction(i) {
                        self.cfg.extensions.check(&p)?;
                    }
                    continue;
                }
            };
            if std::mem::replace(&mut seen[slot], true) {
                return Err(ErrorCode::BIC_UNSUP_INST);
            }
        }
        let facts = PacketFacts::from_match(m);
        for i in ins {
            match i {
                Instruction::GotoTable(t) if *t <= table || *t >= self.cfg.n_tables => {
                    return Err(ErrorCode::BIC_BAD_TABLE_ID)
                }
                Instruction::Meter(id) if !self.meters.contains(*id) => {
                    return Err(ErrorCode::MMFC_UNKNOWN_METER)
                }
                Instruction::ApplyActions(a) => {
                    self.validate_actions_in(a, &mut facts.clone(), false, true)?
                }
                Instruction::WriteActions(a) => {
                    // The action set runs pushes before set-fields, so check
                    // set-fields against the facts after the set's pushes.
                    let mut f = facts.clone();
                    for push in a.iter().filter(|a| {
                        matches!(
                            a,
                            Action::PushVlan(_)
                                | Action::PushMpls(_)
                                | Action::PopVlan
                                | Action::PopMpls(_)
                        )
                    }) {
                        f.apply(push);
                    }
                    self.validate_actions(a, &mut f, false)?
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Apply a FLOW_MOD. On success returns the buffer id whose packet must
    /// now be run through the tables (`OFP_NO_BUFFER` if none). A refusal
    /// of sluice's filter-program extension comes back as an
    /// `OFPET_EXPERIMENTER` code ([`Pipeline::flow_mod_full`] keeps its
    /// text).
    pub fn flow_mod(&mut self, fm: &FlowMod) -> Result<()> {
        self.flow_mod_full(fm, GuardSet::default()).map_err(|r| r.error_code())
    }

    /// [`Pipeline::flow_mod`] keeping a refusal's text (sluice's
    /// experimenter errors say what was wrong: an unknown program, where
    /// a pcap-filter expression went wrong).
    pub fn flow_mod_explained(&mut self, fm: &FlowMod) -> std::result::Result<(), Refusal> {
        self.flow_mod_full(fm, GuardSet::default())
    }

    /// [`Pipeline::flow_mod`] for a rule that carries guards besides those
    /// its match names (predicates run after its match; see
    /// `sluice_core::guard` and the guard semantics in ARCHITECTURE.md).
    /// An ADD installs them after the match's own (`filterprog.rs`);
    /// other commands ignore them.
    pub fn flow_mod_guarded(&mut self, fm: &FlowMod, guards: GuardSet) -> Result<()> {
        self.flow_mod_full(fm, guards).map_err(|r| r.error_code())
    }

    /// The flow-mod itself. Guard fields (`filter_prog`, `pcap_filter`)
    /// are part of a rule's identity: an ADD replaces an entry with the
    /// same match, guard fields included, and priority; strict
    /// modify/delete select entries with exactly the request's guard
    /// fields, the others entries that carry at least them.
    pub fn flow_mod_full(
        &mut self,
        fm: &FlowMod,
        extra: GuardSet,
    ) -> std::result::Result<(), Refusal> {
        // Conservatively, every flow-mod (even a rejected one) invalidates
        // the caches; only its table (or all, for OFPTT_ALL) is settled.
        self.table_changed(fm.table_id);
        if fm.command > cmd::DELETE_STRICT {
            return Err(ErrorCode::FMFC_BAD_COMMAND.into());
        }
        let deleting = matches!(fm.command, cmd::DELETE | cmd::DELETE_STRICT);
        if fm.flags & !KNOWN_FLAGS != 0 {
            return Err(ErrorCode::FMFC_BAD_FLAGS.into());
        }
        if !(fm.table_id < self.cfg.n_tables || (deleting && fm.table_id == table_id::ALL)) {
            return Err(ErrorCode::FMFC_BAD_TABLE_ID.into());
        }
        // After a TABLE_FEATURES set request: the table must be listed and
        // the entry keep to its description (`features.rs`).
        self.check_table_profile(fm)?;
        fm.r#match.check_prereqs()?;
        if fm.command == cmd::ADD {
            let (rule, windows) = self.compile_add(&fm.r#match)?;
            let fields = GuardFields::of(&fm.r#match)?;
            let mut guards = self.filters.guards(&fields)?;
            guards.extend(extra.as_slice().iter().cloned());
            self.flow_add(fm, rule, GuardSet::new(guards), &fields)?;
            if let Some(w) = windows {
                self.windows = Arc::new(w);
            }
            return Ok(());
        }
        let rule = self.compile_match(&fm.r#match)?;
        let fields = GuardFields::of(&fm.r#match)?;
        match fm.command {
            cmd::MODIFY | cmd::MODIFY_STRICT => {
                self.validate_instructions(fm.table_id, &fm.instructions, &fm.r#match)?;
                // A `pof` field on a window no rule uses selects nothing.
                let Some(rule) = rule else { return Ok(()) };
                let strict = fm.command == cmd::MODIFY_STRICT;
                let shards = self.cfg.shards();
                let chosen: Vec<usize> = self.tables[usize::from(fm.table_id)]
                    .entries()
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| {
                        let selected = if strict {
                            e.priority == fm.priority && e.rule == rule
                        } else {
                            rule.covers(&e.rule)
                        };
                        selected
                            && (e.cookie & fm.cookie_mask) == (fm.cookie & fm.cookie_mask)
                            && fields.selects(e, strict)
                    })
                    .map(|(i, _)| i)
                    .collect();
                let instructions: Arc<[Instruction]> = fm.instructions.as_slice().into();
                // One lowering for all, unless `send_maps` gives each rule
                // a reporter (and rate limit) of its own.
                let ops = Arc::new(self.lower(&instructions));
                let own = ops.apply.iter().any(|o| matches!(o, sluice_core::op::Op::Report(_)));
                let each: Vec<Arc<sluice_core::op::EntryOps>> = chosen
                    .iter()
                    .map(|_| if own { Arc::new(self.lower(&instructions)) } else { ops.clone() })
                    .collect();
                let t = &mut self.tables[usize::from(fm.table_id)];
                for (i, ops) in chosen.into_iter().zip(each) {
                    t.update(i, |e| {
                        e.instructions = instructions.clone();
                        e.ops = ops;
                        if fm.flags & ff::RESET_COUNTS != 0 {
                            // Fresh cells: workers still counting into the
                            // old ones cannot undo the reset. The last use
                            // time is not a counter and carries over.
                            let fresh = FlowEntry::new_stats(shards);
                            fresh.raise(Shard::OWNER, FlowEntry::USED, e.last_used_ns());
                            e.stats = fresh;
                        }
                    });
                }
                Ok(())
            }
            _ => {
                let Some(rule) = rule else { return Ok(()) };
                let strict = fm.command == cmd::DELETE_STRICT;
                let tables: Vec<usize> = if fm.table_id == table_id::ALL {
                    (0..self.tables.len()).collect()
                } else {
                    vec![usize::from(fm.table_id)]
                };
                let also = |e: &FlowEntry| {
                    (e.cookie & fm.cookie_mask) == (fm.cookie & fm.cookie_mask)
                        && outputs_to(&e.instructions, fm.out_port, fm.out_group)
                        && fields.selects(e, strict)
                };
                for t in tables {
                    let removed = if strict {
                        // The strict index finds the one (priority, rule).
                        self.tables[t].remove_strict(&rule, fm.priority, also)
                    } else {
                        self.tables[t].remove_where(|e| rule.covers(&e.rule) && also(e))
                    };
                    self.flows_removed(t as u8, removed, Removal::Deleted);
                }
                Ok(())
            }
        }
    }

    /// Compile a match that selects rules (modify, delete, flow stats).
    /// Experimenter fields of a registered extension get its verdict
    /// first; then the fields compile in order: basic fields through the
    /// fixed layout, sluice's `pof` fields onto their windows (see
    /// `pof.rs`), any other experimenter or non-basic field is
    /// `OFPBMC_BAD_FIELD` (the engine cannot match on it, and leaving it
    /// out would widen the rule). `None`: a `pof` field on a window no rule
    /// has declared, so no rule is selected.
    pub fn compile_match(&self, m: &Match) -> Result<Option<Rule>> {
        self.compile_in(m, None)
    }

    /// Compile the match of a rule being added: `pof` fields declare their
    /// windows in a copy of the pipeline's, returned when it grew (the
    /// caller keeps it once the rule is in).
    fn compile_add(&self, m: &Match) -> Result<(Rule, Option<Windows>)> {
        if !m.oxms.iter().any(|o| matches!(PofMatch::from_oxm(o), Some(Ok(_)))) {
            let r = self.compile_in(m, None)?;
            return r.map(|r| (r, None)).ok_or(ErrorCode::BMC_BAD_FIELD);
        }
        let mut w = (*self.windows).clone();
        let n = w.layout().windows().len();
        let r = self.compile_in(m, Some(&mut w))?.ok_or(ErrorCode::BMC_BAD_FIELD)?;
        Ok((r, (w.layout().windows().len() != n).then_some(w)))
    }

    fn compile_in(&self, m: &Match, mut declare: Option<&mut Windows>) -> Result<Option<Rule>> {
        let reg = &self.cfg.extensions;
        for o in &m.oxms {
            if let Oxm::Experimenter { experimenter, .. } = o {
                if reg.get(*experimenter).is_some() {
                    if let Some(p) = Payload::oxm(o) {
                        reg.check(&p)?;
                    }
                }
            }
        }
        let mut rule = Rule::ANY;
        let mut seen: Vec<PofField> = Vec::new();
        // A field on an undeclared window: the match selects nothing, but
        // the fields after it are still checked for errors.
        let mut selects_nothing = false;
        for o in &m.oxms {
            let pm = match PofMatch::from_oxm(o) {
                // Guard fields are matched by guards (`filterprog.rs`).
                None if is_guard_field(o) => continue,
                None => {
                    rule.add_basic(o)?;
                    continue;
                }
                Some(pm) => pm?,
            };
            if seen.contains(&pm.field) {
                return Err(ErrorCode::BMC_DUP_FIELD);
            }
            seen.push(pm.field);
            let ids = match declare.as_deref_mut() {
                Some(w) => w.declare(&pm.field)?,
                None => match self.windows.find(&pm.field) {
                    Some(ids) => ids,
                    None => {
                        selects_nothing = true;
                        continue;
                    }
                },
            };
            let w = declare.as_deref().unwrap_or(&self.windows);
            w.add_match(&mut rule, &pm, &ids)?;
        }
        Ok((!selects_nothing).then_some(rule))
    }

    fn flow_add(
        &mut self,
        fm: &FlowMod,
        rule: Rule,
        guards: GuardSet,
        fields: &GuardFields,
    ) -> Result<()> {
        self.validate_instructions(fm.table_id, &fm.instructions, &fm.r#match)?;
        let now = self.now_ns;
        let ops = Arc::new(self.lower(&fm.instructions));
        let t = &mut self.tables[usize::from(fm.table_id)];
        let existing = t.find_strict_by(&rule, fm.priority, |e| fields.selects(e, true));
        if fm.flags & ff::CHECK_OVERLAP != 0
            && t.entries().iter().enumerate().any(|(i, e)| {
                Some(i) != existing && e.priority == fm.priority && e.rule.overlaps(&rule)
            })
        {
            return Err(ErrorCode::FMFC_OVERLAP);
        }
        if existing.is_none() && t.is_full() {
            return Err(ErrorCode::FMFC_TABLE_FULL);
        }
        // Replacing an identical entry keeps its counters (shares its
        // cells) unless RESET_COUNTS; its idle time restarts either way.
        let stats = match existing {
            Some(i) if fm.flags & ff::RESET_COUNTS == 0 => t.entries()[i].stats.clone(),
            _ => FlowEntry::new_stats(self.cfg.shards()),
        };
        self.seq += 1;
        let entry = FlowEntry {
            rule,
            r#match: fm.r#match.clone(),
            priority: fm.priority,
            cookie: fm.cookie,
            idle_timeout: fm.idle_timeout,
            hard_timeout: fm.hard_timeout,
            flags: fm.flags,
            instructions: fm.instructions.as_slice().into(),
            ops,
            installed_ns: now,
            stats,
            seq: existing.map_or(self.seq, |i| t.entries()[i].seq),
            guards,
        };
        match existing {
            Some(i) => t.replace(i, entry),
            None => t.insert(entry),
        }
        Ok(())
    }

    /// A rule's instructions lowered to ops, its `send_maps` actions to
    /// reporters of their own (the rule's rate limit).
    fn lower(&self, ins: &[Instruction]) -> sluice_core::op::EntryOps {
        crate::lower::lower_instructions_with(ins, &mut |a| self.filters.report_op(a))
    }

    /// Queue FLOW_REMOVED for the removed entries that asked for it.
    pub(crate) fn flows_removed(
        &mut self,
        table: u8,
        removed: Vec<Arc<FlowEntry>>,
        reason: Removal,
    ) {
        let now = self.now_ns;
        for e in removed {
            if e.flags & ff::SEND_FLOW_REM == 0 {
                continue;
            }
            let up = Upcall::Removed(Removed {
                table,
                reason,
                priority: e.priority,
                cookie: e.cookie,
                timeouts: e.timeouts(),
                duration_ns: now.saturating_sub(e.installed_ns),
                packets: e.packet_count(),
                bytes: e.byte_count(),
                rule: e.r#match.clone(),
            });
            self.async_out.push(crate::exec::message_of(up));
        }
    }

    /// Remove every flow for which `uses` is true (group or meter deletion).
    pub(crate) fn remove_flows_using(
        &mut self,
        uses: impl Fn(&[Instruction]) -> bool,
        reason: Removal,
    ) {
        for t in 0..self.tables.len() {
            let removed = self.tables[t].remove_where(|e| uses(&e.instructions));
            if !removed.is_empty() {
                self.table_changed(t as u8);
            }
            self.flows_removed(t as u8, removed, reason);
        }
    }

    /// Expire flows whose idle or hard timeout has passed at `now_ns`
    /// (the core's rule, `Timeouts::expired`).
    pub(crate) fn expire_flows(&mut self) {
        let now = self.now_ns;
        for t in 0..self.tables.len() {
            if !self.tables[t].has_timeouts() {
                continue;
            }
            let mut reasons = Vec::new();
            let removed = self.tables[t].remove_where(|e| {
                let why = e.timeouts().expired(e.installed_ns, e.last_used_ns(), now);
                reasons.extend(why);
                why.is_some()
            });
            if !removed.is_empty() {
                self.table_changed(t as u8);
            }
            for (e, r) in removed.into_iter().zip(reasons) {
                self.flows_removed(t as u8, vec![e], r);
            }
        }
    }
}

/// The out_port / out_group filter of delete and stats requests: the entry
/// must have an output to `out_port` (a group action to `out_group`) in an
/// apply- or write-actions instruction, unless the filter is ANY.
pub fn outputs_to(ins: &[Instruction], out_port: u32, out_group: u32) -> bool {
    let actions = || {
        ins.iter().flat_map(|i| match i {
            Instruction::ApplyActions(a) | Instruction::WriteActions(a) => a.as_slice(),
            _ => &[],
        })
    };
    (out_port == port_no::ANY
        || actions().any(|a| matches!(a, Action::Output { port, .. } if *port == out_port)))
        && (out_group == group_id::ANY
            || actions().any(|a| matches!(a, Action::Group(g) if *g == out_group)))
}
