//! Multipart replies: description, flow/aggregate/table/port/queue/group/
//! meter statistics, group and meter configuration and features, and table
//! features — all reported truthfully from the pipeline's state.

use crate::flow_mod::outputs_to;
use crate::Pipeline;
use sluice_ofp::action::ty as at;
use sluice_ofp::consts::table_id;
use sluice_ofp::error::{ErrorCode, Result};
use sluice_ofp::instruction::{ty as it, Instruction};
use sluice_ofp::multipart::table_features::{FeatureId, OxmId, TableFeatureProp, TableFeatures};
use sluice_ofp::multipart::{
    AggregateStats, Desc, FlowStats, FlowStatsRequest, GroupFeatures, MeterFeatures,
    MultipartReplyBody, MultipartRequestBody, TableStats,
};
use sluice_ofp::oxm::{FieldId, OxmHeader};

/// Fields SET_FIELD may write (every basic field but in_port,
/// in_phy_port and ipv6_exthdr).
pub(crate) fn settable_fields() -> impl Iterator<Item = FieldId> {
    FieldId::ALL
        .iter()
        .copied()
        .filter(|f| !matches!(f, FieldId::InPort | FieldId::InPhyPort | FieldId::Ipv6Exthdr))
}

pub(crate) const ACTIONS: &[u16] = &[
    at::OUTPUT,
    at::COPY_TTL_OUT,
    at::COPY_TTL_IN,
    at::SET_MPLS_TTL,
    at::DEC_MPLS_TTL,
    at::PUSH_VLAN,
    at::POP_VLAN,
    at::PUSH_MPLS,
    at::POP_MPLS,
    at::SET_QUEUE,
    at::GROUP,
    at::SET_NW_TTL,
    at::DEC_NW_TTL,
    at::SET_FIELD,
    at::PUSH_PBB,
    at::POP_PBB,
];

impl Pipeline {
    fn selected_flows(&self, req: &FlowStatsRequest) -> Result<Vec<(u8, usize)>> {
        if req.table_id != table_id::ALL && !self.table_exists(req.table_id) {
            return Err(ErrorCode::BRC_BAD_TABLE_ID);
        }
        let mut out = Vec::new();
        // A `pof` field on a window no rule uses selects no flow.
        let Some(rule) = self.compile_match(&req.match_)? else { return Ok(out) };
        let fields = crate::filterprog::GuardFields::of(&req.match_)?;
        for (t, table) in self.tables.iter().enumerate() {
            if req.table_id != table_id::ALL && usize::from(req.table_id) != t {
                continue;
            }
            for (i, e) in table.entries().iter().enumerate() {
                if rule.covers(&e.rule)
                    && (e.cookie & req.cookie_mask) == (req.cookie & req.cookie_mask)
                    && outputs_to(&e.instructions, req.out_port, req.out_group)
                    && fields.selects(e, false)
                {
                    out.push((t as u8, i));
                }
            }
        }
        Ok(out)
    }

    fn table_features(&self) -> Vec<TableFeatures> {
        if let Some(p) = self.table_profiles() {
            return p.iter().map(|t| t.to_features()).collect();
        }
        let all_fields: Vec<OxmId> =
            FieldId::ALL.iter().map(|&f| OxmId::new(OxmHeader::basic(f, f.maskable()))).collect();
        let wild: Vec<OxmId> =
            FieldId::ALL.iter().map(|&f| OxmId::new(OxmHeader::basic(f, false))).collect();
        let set: Vec<OxmId> =
            settable_fields().map(|f| OxmId::new(OxmHeader::basic(f, false))).collect();
        let actions: Vec<FeatureId> = ACTIONS.iter().map(|&a| FeatureId::Type(a)).collect();
        let n = self.cfg.n_tables;
        (0..n)
            .map(|t| {
                let mut instr = vec![
                    it::WRITE_METADATA,
                    it::WRITE_ACTIONS,
                    it::APPLY_ACTIONS,
                    it::CLEAR_ACTIONS,
                    it::METER,
                ];
                if t + 1 < n {
                    instr.insert(0, it::GOTO_TABLE);
                }
                let instr: Vec<FeatureId> = instr.into_iter().map(FeatureId::Type).collect();
                let next: Vec<u8> = (t + 1..n).collect();
                let mut props = Vec::new();
                for miss in [false, true] {
                    props.push(TableFeatureProp::Instructions { miss, ids: instr.clone() });
                    props.push(TableFeatureProp::NextTables { miss, tables: next.clone() });
                    props.push(TableFeatureProp::WriteActions { miss, ids: actions.clone() });
                    props.push(TableFeatureProp::ApplyActions { miss, ids: actions.clone() });
                }
                props.push(TableFeatureProp::Match(all_fields.clone()));
                props.push(TableFeatureProp::Wildcards(wild.clone()));
                for miss in [false, true] {
                    props.push(TableFeatureProp::WriteSetfield { miss, ids: set.clone() });
                    props.push(TableFeatureProp::ApplySetfield { miss, ids: set.clone() });
                }
                TableFeatures {
                    table_id: t,
                    name: format!("table{t}"),
                    metadata_match: u64::MAX,
                    metadata_write: u64::MAX,
                    config: 0,
                    max_entries: self.cfg.max_flows_per_table.min(u32::MAX as usize) as u32,
                    properties: props,
                }
            })
            .collect()
    }

    /// Answer one (reassembled) multipart request.
    pub fn multipart(&self, body: &MultipartRequestBody) -> Result<MultipartReplyBody> {
        use MultipartReplyBody as R;
        use MultipartRequestBody as Q;
        let now = self.now_ns;
        let dur = |since: u64| {
            let d = now.saturating_sub(since);
            ((d / 1_000_000_000) as u32, (d % 1_000_000_000) as u32)
        };
        Ok(match body {
            Q::Desc => R::Desc(Desc {
                mfr_desc: self.cfg.mfr_desc.clone(),
                hw_desc: self.cfg.hw_desc.clone(),
                sw_desc: self.cfg.sw_desc.clone(),
                serial_num: self.cfg.serial_num.clone(),
                dp_desc: self.cfg.dp_desc.clone(),
            }),
            Q::Flow(req) => R::Flow(
                self.selected_flows(req)?
                    .into_iter()
                    .map(|(t, i)| {
                        let e = &self.tables[usize::from(t)].entries()[i];
                        let (duration_sec, duration_nsec) = dur(e.installed_ns);
                        FlowStats {
                            table_id: t,
                            duration_sec,
                            duration_nsec,
                            priority: e.priority,
                            idle_timeout: e.idle_timeout,
                            hard_timeout: e.hard_timeout,
                            flags: e.flags,
                            cookie: e.cookie,
                            packet_count: e.packet_count(),
                            byte_count: e.byte_count(),
                            match_: e.r#match.clone(),
                            instructions: e.instructions.to_vec(),
                        }
                    })
                    .collect(),
            ),
            Q::Aggregate(req) => {
                let mut a = AggregateStats::default();
                for (t, i) in self.selected_flows(req)? {
                    let e = &self.tables[usize::from(t)].entries()[i];
                    a.packet_count += e.packet_count();
                    a.byte_count += e.byte_count();
                    a.flow_count += 1;
                }
                R::Aggregate(a)
            }
            Q::Table => R::Table(
                self.tables
                    .iter()
                    .enumerate()
                    .filter(|(t, _)| self.table_exists(*t as u8))
                    .map(|(t, tb)| TableStats {
                        table_id: t as u8,
                        active_count: tb.len() as u32,
                        lookup_count: tb.lookup_count(),
                        matched_count: tb.matched_count(),
                    })
                    .collect(),
            ),
            Q::PortStats { port_no } => {
                if *port_no != sluice_ofp::consts::port_no::ANY
                    && self.ports.get(*port_no).is_none()
                {
                    return Err(ErrorCode::BRC_BAD_PORT);
                }
                R::PortStats(self.ports.stats(*port_no, now))
            }
            Q::Queue { port_no, queue_id } => {
                if *port_no != sluice_ofp::consts::port_no::ANY
                    && self.ports.get(*port_no).is_none()
                {
                    return Err(ErrorCode::QOFC_BAD_PORT);
                }
                let q = self.ports.queue_stats(*port_no, *queue_id, now);
                if q.is_empty() && *queue_id != sluice_ofp::consts::queue_id::ALL {
                    return Err(ErrorCode::QOFC_BAD_QUEUE);
                }
                R::Queue(q)
            }
            Q::Group { group_id } => {
                R::Group(self.groups.stats(*group_id, now, |g| self.group_ref_count(g)))
            }
            Q::GroupDesc => R::GroupDesc(self.groups.descs()),
            Q::GroupFeatures => R::GroupFeatures(GroupFeatures {
                // ALL, SELECT, INDIRECT, FAST_FAILOVER.
                types: 0b1111,
                // SELECT_WEIGHT, SELECT_LIVENESS, CHAINING, CHAINING_CHECKS.
                capabilities: 0b1111,
                max_groups: [self.cfg.max_groups; 4],
                actions: [ACTIONS.iter().fold(0u32, |m, &a| m | (1 << a)); 4],
            }),
            Q::Meter { meter_id } => {
                R::Meter(self.meters.stats(*meter_id, now, |m| self.meter_flow_count(m)))
            }
            Q::MeterConfig { meter_id } => R::MeterConfig(self.meters.configs(*meter_id)),
            Q::MeterFeatures => R::MeterFeatures(MeterFeatures {
                max_meter: self.cfg.max_meters,
                // DROP and DSCP_REMARK.
                band_types: (1 << 1) | (1 << 2),
                // KBPS, PKTPS, BURST, STATS.
                capabilities: 0b1111,
                max_bands: self.cfg.max_bands,
                max_color: 0,
            }),
            Q::TableFeatures(set) => {
                if !set.is_empty() {
                    // A set request changes the tables: `Pipeline::handle`
                    // gives it to `set_table_features`; this read-only
                    // path cannot apply it.
                    return Err(ErrorCode::TFFC_EPERM);
                }
                R::TableFeatures(self.table_features())
            }
            Q::PortDesc => R::PortDesc(self.ports.iter().map(|p| p.desc.clone()).collect()),
            // No extension for the id: `OFPBRC_BAD_EXPERIMENTER`; else the
            // extension's verdict and reply body (see `extension.rs`).
            Q::Experimenter(e) => R::Experimenter(self.cfg.extensions.handle_multipart(e)?),
        })
    }

    /// Flows and groups that forward to group `g`.
    pub fn group_ref_count(&self, g: u32) -> u32 {
        let flows = self
            .tables
            .iter()
            .flat_map(|t| t.entries())
            .filter(|e| instructions_use_group(&e.instructions, g))
            .count();
        (flows + self.groups.referrers(g)) as u32
    }

    pub fn meter_flow_count(&self, m: u32) -> u32 {
        self.tables
            .iter()
            .flat_map(|t| t.entries())
            .filter(|e| {
                e.instructions.iter().any(|i| matches!(i, Instruction::Meter(x) if *x == m))
            })
            .count() as u32
    }
}

pub(crate) fn instructions_use_group(ins: &[Instruction], g: u32) -> bool {
    outputs_to(ins, sluice_ofp::consts::port_no::ANY, g)
}
