//! Controller messages: the dispatcher of [`Pipeline::handle`], and the
//! group-mod, meter-mod and table-mod commands.
//!
//! Role, async-config and hello/echo handling belong to the agent (the
//! channel layer); the pipeline answers them with `OFPBRC_BAD_TYPE` so an
//! offline user notices instead of getting a silent no-op. Messages a
//! controller never sends (replies, async messages) are `OFPBRC_BAD_TYPE`
//! too.
//!
//! EXPERIMENTER messages and experimenter meter bands go through the
//! experimenter registry (`Config::extensions`; see `extension.rs`).

use crate::exec::Tx;
use crate::Pipeline;
use sluice_core::guard::GuardSet;
use sluice_ofp::consts::{group_id, port_no, table_id};
use sluice_ofp::error::{ErrorCode, Result};
use sluice_ofp::experimenter::Payload;
use sluice_ofp::filterprog::Refusal;
use sluice_ofp::instruction::Instruction;
use sluice_ofp::message::{
    capabilities as cap, error_reply, group_mod_command as gcmd, meter_mod_command as mcmd,
    FeaturesReply, GroupMod, Message, MeterMod, QueueGetConfigReply, TableMod,
};
use sluice_ofp::multipart::{
    MultipartReply, MultipartReplyBody, MultipartRequestBody, DEFAULT_MAX_LEN,
};
use sluice_ofp::queue::PacketQueue;

pub use sluice_ofp::message::Outgoing;

impl Pipeline {
    /// Apply one controller message. `raw` is its encoding (the first 64
    /// bytes go into an error reply). Frames sent by PACKET_OUT go to `tx`.
    /// Returns the replies, in order; asynchronous messages caused by the
    /// command (FLOW_REMOVED, PORT_STATUS, PACKET_IN) are queued for
    /// [`Pipeline::take_async`].
    pub fn handle(
        &mut self,
        xid: u32,
        msg: &Message,
        raw: &[u8],
        tx: &mut dyn Tx,
    ) -> Vec<Outgoing> {
        // Bundles (`bundle.rs`); `handle_from` names the connection.
        if let Some(out) = self.bundle_message(0, xid, msg, raw) {
            return out;
        }
        let mut out = Vec::new();
        if let Err(r) = self.handle_inner(xid, msg, tx, &mut out) {
            let msg = match r {
                Refusal::Std(code) => error_reply(code, raw),
                exp => exp.to_error(raw),
            };
            out.push(Outgoing { xid, msg });
        }
        out
    }

    fn handle_inner(
        &mut self,
        xid: u32,
        msg: &Message,
        tx: &mut dyn Tx,
        out: &mut Vec<Outgoing>,
    ) -> std::result::Result<(), Refusal> {
        let mut reply = |m: Message| out.push(Outgoing { xid, msg: m });
        match msg {
            Message::EchoRequest(d) => reply(Message::EchoReply(d.clone())),
            Message::FeaturesRequest => reply(Message::FeaturesReply(FeaturesReply {
                datapath_id: self.cfg.datapath_id,
                n_buffers: self.cfg.n_buffers,
                n_tables: self.cfg.n_tables,
                auxiliary_id: 0,
                capabilities: cap::FLOW_STATS
                    | cap::TABLE_STATS
                    | cap::PORT_STATS
                    | cap::GROUP_STATS
                    | cap::QUEUE_STATS,
                reserved: 0,
            })),
            Message::GetConfigRequest => reply(Message::GetConfigReply(self.switch_config)),
            Message::SetConfig(c) => {
                c.validate()?;
                self.switch_config = *c;
            }
            Message::FlowMod(fm) => {
                self.flow_mod_full(fm, GuardSet::default())?;
                if fm.buffer_id != sluice_ofp::consts::OFP_NO_BUFFER && matches!(fm.command, 0..=2)
                {
                    let (in_port, data) =
                        self.take_buffer(fm.buffer_id).ok_or(ErrorCode::BRC_BUFFER_UNKNOWN)?;
                    self.process(in_port, &data, tx);
                }
            }
            Message::GroupMod(gm) => self.group_mod(gm)?,
            Message::MeterMod(mm) => self.meter_mod(mm)?,
            Message::PortMod(pm) => {
                if let Some(ps) = self.ports.port_mod(pm)? {
                    self.async_out.push(Message::PortStatus(ps));
                }
            }
            Message::TableMod(tm) => self.table_mod(tm)?,
            Message::PacketOut(po) => self.packet_out(po, tx)?,
            Message::MultipartRequest(req) => {
                // sluice's DUMP_MAP: one reply per part of the map.
                if let MultipartRequestBody::Experimenter(e) = &req.body {
                    if let Some(parts) = self.dump_map(e) {
                        parts?.into_iter().for_each(&mut reply);
                        return Ok(());
                    }
                }
                let body = match &req.body {
                    MultipartRequestBody::TableFeatures(set) if !set.is_empty() => {
                        MultipartReplyBody::TableFeatures(
                            self.set_table_features(set).map_err(|r| r.code)?,
                        )
                    }
                    body => self.multipart(body)?,
                };
                for part in (MultipartReply { flags: 0, body }).split(DEFAULT_MAX_LEN) {
                    reply(Message::MultipartReply(part));
                }
            }
            // Every earlier message has been fully applied: the pipeline is
            // synchronous, and counters are updated before this returns.
            Message::BarrierRequest => reply(Message::BarrierReply),
            Message::QueueGetConfigRequest(q) => {
                let queues: Vec<PacketQueue> = if q.port == port_no::ANY {
                    self.ports
                        .iter()
                        .flat_map(|p| {
                            p.queue_ids().map(|queue_id| PacketQueue {
                                queue_id,
                                port: p.desc.port_no,
                                properties: vec![],
                            })
                        })
                        .collect()
                } else {
                    let p = self.ports.get(q.port).ok_or(ErrorCode::QOFC_BAD_PORT)?;
                    p.queue_ids()
                        .map(|queue_id| PacketQueue { queue_id, port: q.port, properties: vec![] })
                        .collect()
                };
                reply(Message::QueueGetConfigReply(QueueGetConfigReply { port: q.port, queues }))
            }
            // The registry answers: no extension for the id is
            // `OFPBRC_BAD_EXPERIMENTER`, else the extension's verdict and
            // replies (see `extension.rs`).
            Message::Experimenter(e) => {
                // sluice's filter-program messages change the pipeline's
                // state, so the pipeline answers them (`filterprog.rs`).
                if let Some(r) = self.filter_message(e) {
                    return r;
                }
                for m in self.cfg.extensions.handle_message(e)? {
                    reply(m);
                }
            }
            _ => return Err(ErrorCode::BRC_BAD_TYPE.into()),
        }
        Ok(())
    }

    fn table_mod(&mut self, tm: &TableMod) -> Result<()> {
        // OFPTC_DEPRECATED_MASK (3) is the only config defined in 1.3.
        if tm.config & !3 != 0 {
            return Err(ErrorCode::TMFC_BAD_CONFIG);
        }
        self.tables_changed();
        if tm.table_id == table_id::ALL {
            self.tables.iter_mut().for_each(|t| t.config = tm.config);
        } else {
            if !self.table_exists(tm.table_id) {
                return Err(ErrorCode::TMFC_BAD_TABLE);
            }
            let t =
                self.tables.get_mut(usize::from(tm.table_id)).ok_or(ErrorCode::TMFC_BAD_TABLE)?;
            t.config = tm.config;
        }
        Ok(())
    }

    /// Apply a GROUP_MOD (see `group` for the checks).
    pub fn group_mod(&mut self, gm: &GroupMod) -> Result<()> {
        let id = gm.group_id;
        match gm.command {
            gcmd::ADD | gcmd::MODIFY => {
                if id > group_id::MAX {
                    return Err(ErrorCode::GMFC_INVALID_GROUP);
                }
                let exists = self.groups.contains(id);
                if gm.command == gcmd::ADD && exists {
                    return Err(ErrorCode::GMFC_GROUP_EXISTS);
                }
                if gm.command == gcmd::MODIFY && !exists {
                    return Err(ErrorCode::GMFC_UNKNOWN_GROUP);
                }
                if gm.command == gcmd::ADD && self.groups.len() >= self.cfg.max_groups as usize {
                    return Err(ErrorCode::GMFC_OUT_OF_GROUPS);
                }
                self.groups.check_buckets(id, gm.group_type, &gm.buckets, self.cfg.max_buckets)?;
                for b in &gm.buckets {
                    self.validate_actions(&b.actions, &mut Default::default(), false)?;
                }
                if gm.command == gcmd::ADD {
                    self.groups.insert(id, gm.group_type, gm.buckets.clone(), self.now_ns);
                } else {
                    self.groups.modify(id, gm.group_type, gm.buckets.clone());
                }
                Ok(())
            }
            gcmd::DELETE => {
                let ids = if id == group_id::ALL {
                    self.groups.ids()
                } else if id > group_id::MAX {
                    return Err(ErrorCode::GMFC_INVALID_GROUP);
                } else {
                    vec![id]
                };
                if id != group_id::ALL && self.groups.contains(id) && self.groups.referrers(id) > 0
                {
                    return Err(ErrorCode::GMFC_CHAINED_GROUP);
                }
                for g in ids {
                    if self.groups.remove(g).is_some() {
                        self.remove_flows_using(
                            |ins| crate::stats::instructions_use_group(ins, g),
                            sluice_core::upcall::Removal::GroupDeleted,
                        );
                    }
                }
                Ok(())
            }
            _ => Err(ErrorCode::GMFC_BAD_COMMAND),
        }
    }

    /// Apply a METER_MOD (see `meter` for the checks).
    pub fn meter_mod(&mut self, mm: &MeterMod) -> Result<()> {
        let max = (self.cfg.max_meters, self.cfg.max_bands);
        if matches!(mm.command, mcmd::ADD | mcmd::MODIFY) {
            // Experimenter bands of a registered extension get its verdict
            // first; those of other ids take the meter table's checks as
            // before (`OFPMMFC_BAD_BAND`, in its order). The meter table
            // runs no experimenter band, so it refuses accepted ones too.
            for p in mm.bands.iter().filter_map(Payload::meter_band) {
                if self.cfg.extensions.get(p.experimenter).is_some() {
                    self.cfg.extensions.check(&p)?;
                }
            }
        }
        match mm.command {
            mcmd::ADD => self.meters.add(mm.meter_id, mm.flags, mm.bands.clone(), max, self.now_ns),
            mcmd::MODIFY => {
                self.meters.modify(mm.meter_id, mm.flags, mm.bands.clone(), max.1, self.now_ns)
            }
            mcmd::DELETE => {
                for m in self.meters.delete(mm.meter_id)? {
                    self.remove_flows_using(
                        |ins| ins.iter().any(|i| matches!(i, Instruction::Meter(x) if *x == m)),
                        sluice_core::upcall::Removal::MeterDeleted,
                    );
                }
                Ok(())
            }
            _ => Err(ErrorCode::MMFC_BAD_COMMAND),
        }
    }

    /// Move the pipeline clock to `now_ns` (never backwards) and expire
    /// flows whose timeouts passed.
    pub fn advance(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        self.expire_flows();
    }
}
