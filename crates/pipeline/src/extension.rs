//! Experimenter extensions in the OpenFlow front end: the registry the
//! pipeline dispatches through, and sluice's own extension.
//!
//! [`Config::extensions`] is the [`Registry`] every experimenter object a
//! controller sends goes through (`docs/EXPERIMENTER.md`); by default it
//! holds [`SluiceExtension`] (experimenter id
//! [`SLUICE_EXPERIMENTER_ID`], "SLIC"), and [`Config::register`] adds more
//! before the pipeline is built. Where each kind is dispatched:
//!
//! | object | where | no extension for the id | extension's `check` |
//! |---|---|---|---|
//! | `OFPT_EXPERIMENTER` | `control.rs` | `OFPBRC_BAD_EXPERIMENTER` | `Err` sent; `Ok`: [`Extension::handle_message`] answers (sluice's filter-program messages, `exp_type` 2–4, are answered by the pipeline first: `filterprog.rs`) |
//! | experimenter multipart request | `stats.rs` | `OFPBRC_BAD_EXPERIMENTER` | `Err` sent; `Ok`: [`Extension::handle_multipart`] answers (sluice's `DUMP_MAP`, 5, by the pipeline in `control.rs`) |
//! | experimenter action (flow-mod, packet-out, bucket) | `flow_mod.rs` | `OFPBAC_BAD_EXPERIMENTER` | `Err` sent; `Ok`: sluice's POF actions run (`pof.rs`), others kept, inert |
//!
//! One exception, built into the front end rather than registered:
//! Nicira's `NXAST_REG_MOVE`/`NXAST_REG_LOAD` and the ONF copy-field
//! actions are decoded, validated and executed by `fieldcopy.rs` before
//! the registry is asked; every other object of those two ids still takes
//! the table's path.
//! | set-field of an experimenter OXM | `flow_mod.rs` | `OFPBAC_BAD_SET_TYPE` | `Err` sent; `Ok`: kept, inert |
//! | experimenter instruction | `flow_mod.rs` | `OFPBIC_BAD_EXPERIMENTER` | `Err` sent; `Ok`: kept, inert |
//! | experimenter OXM in a match (flow-mod, flow stats) | `flow_mod.rs` | `OFPBMC_BAD_FIELD` (from `Rule::compile`) | `Err` sent; `Ok`: sluice's `pof` field is matched (`pof.rs`), `filter_prog` and `pcap_filter` become guards (`filterprog.rs`); others `OFPBMC_BAD_FIELD` |
//! | experimenter meter band | `control.rs` | `OFPMMFC_BAD_BAND` (from `meter.rs`) | `Err` sent; `Ok`: still `OFPMMFC_BAD_BAND` |
//!
//! The errors without an extension are exactly the ones the switch
//! answered before the registry was consulted, at the same point of each
//! check order: objects of an unregistered experimenter id take the old
//! code path unchanged.
//!
//! **What accepted objects do.** sluice's filter programs (issue 13,
//! `filterprog.rs`) are loaded, unloaded, read and written by the
//! pipeline, and its `filter_prog`/`pcap_filter` match fields are the
//! rule's guards. sluice's own POF objects (issue 14, `pof.rs`) are
//! executed: the `pof` match field (OXM field 0 of sluice's
//! id) compiles onto extract windows, so a rule matches on it like on any
//! field, and the POF actions (subtypes 0–5) lower to window edits. Every
//! other accepted object has no datapath meaning yet: an accepted action
//! or instruction is stored verbatim in the flow entry (or bucket) and
//! does nothing when it runs (it lowers to `Op::Nop`, the reference skips
//! it); an accepted match field is still refused with `OFPBMC_BAD_FIELD`
//! (the engine cannot match on it, and leaving it out would widen the
//! rule) until it is lowered to guards (`Pipeline::flow_mod_guarded`); a
//! set-field of an accepted field is refused with `OFPBAC_BAD_SET_TYPE`
//! for `pof` (`pof_set` writes it) and kept inert otherwise; an accepted
//! meter band is still refused by the meter table. Execution hooks belong
//! here, next to the registry: they find the objects where the switch
//! stored them, already checked by the extension. An extension should
//! therefore accept only what the switch can carry out; [`SluiceExtension`]
//! accepts the probe, the `pof` field, the POF actions and the guard
//! fields, `send_maps` (in a flow's apply-actions only), and nothing
//! else.

use crate::Config;
use sluice_ofp::action::Action;
use sluice_ofp::consts::SLUICE_EXPERIMENTER_ID;
use sluice_ofp::error::{ErrorCode, Result};
use sluice_ofp::experimenter::{Extension, Kind, Payload, Registry};
use sluice_ofp::filterprog;
use sluice_ofp::message::{ExperimenterMsg, Message};
use sluice_ofp::oxm::Oxm;
use sluice_ofp::pof::{action_subtype as pof_action, PofAction, PofMatch, POF_FIELD};
use std::sync::Arc;

/// Version of sluice's extension protocol, reported by the probe.
pub const VERSION: u16 = 1;

/// `exp_type` of sluice's `OFPT_EXPERIMENTER` messages.
pub mod msg_type {
    /// Controller → switch: which extension version and subtypes do you
    /// support? Implemented.
    pub const PROBE_REQUEST: u32 = 0;
    /// Switch → controller: the answer to [`PROBE_REQUEST`]. Implemented.
    pub const PROBE_REPLY: u32 = 1;
    /// Filter programs (`sluice_ofp::filterprog`): answered by the
    /// pipeline itself (`filterprog.rs`), since they change its state.
    pub use sluice_ofp::filterprog::exp_type::{
        DUMP_MAP, LOAD_FILTER_PROG, MAPS_REPORT, UNLOAD_FILTER_PROG, UPDATE_MAP,
    };
}

/// The kind numbers of the probe reply's list of supported subtypes.
pub mod kind_code {
    pub const MESSAGE: u16 = 0;
    pub const MULTIPART: u16 = 1;
    pub const ACTION: u16 = 2;
    pub const INSTRUCTION: u16 = 3;
    pub const OXM: u16 = 4;
    pub const METER_BAND: u16 = 5;
}

/// What the switch takes from a controller, as (kind code, subtype): the
/// list a probe reply carries.
pub const SUPPORTED: &[(u16, u16)] = &[
    (kind_code::MESSAGE, msg_type::PROBE_REQUEST as u16),
    (kind_code::MESSAGE, msg_type::LOAD_FILTER_PROG as u16),
    (kind_code::MESSAGE, msg_type::UNLOAD_FILTER_PROG as u16),
    (kind_code::MESSAGE, msg_type::UPDATE_MAP as u16),
    (kind_code::MULTIPART, msg_type::DUMP_MAP as u16),
    (kind_code::ACTION, pof_action::SET_FIELD),
    (kind_code::ACTION, pof_action::MODIFY_FIELD),
    (kind_code::ACTION, pof_action::ADD_FIELD),
    (kind_code::ACTION, pof_action::DELETE_FIELD),
    (kind_code::ACTION, pof_action::CALC_CHECKSUM),
    (kind_code::ACTION, pof_action::WRITE_METADATA),
    (kind_code::ACTION, filterprog::SEND_MAPS_SUBTYPE),
    (kind_code::OXM, POF_FIELD as u16),
    (kind_code::OXM, filterprog::FILTER_PROG_FIELD as u16),
    (kind_code::OXM, filterprog::PCAP_FILTER_FIELD as u16),
];

/// Length of the probe reply's data before the echoed request data.
pub fn probe_reply_header_len() -> usize {
    4 + 4 * SUPPORTED.len()
}

/// The longest probe request data: its echo must fit in one reply
/// (`ofp_header` 8 + experimenter id 4 + exp_type 4 + the reply's header).
pub fn max_probe_data() -> usize {
    usize::from(u16::MAX) - 16 - probe_reply_header_len()
}

/// The data of a PROBE_REPLY answering a PROBE_REQUEST that carried
/// `echo`: version (u16), number of entries (u16), the [`SUPPORTED`]
/// entries (kind code u16, subtype u16), then `echo` verbatim. All
/// big-endian.
pub fn probe_reply_data(echo: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(probe_reply_header_len() + echo.len());
    d.extend_from_slice(&VERSION.to_be_bytes());
    d.extend_from_slice(&(SUPPORTED.len() as u16).to_be_bytes());
    for (kind, sub) in SUPPORTED {
        d.extend_from_slice(&kind.to_be_bytes());
        d.extend_from_slice(&sub.to_be_bytes());
    }
    d.extend_from_slice(echo);
    d
}

fn hex(b: &[u8]) -> String {
    let mut s = String::from("0x");
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// sluice's own extension (experimenter id `0x534c4943`, "SLIC"): answers
/// the probe, accepts the `pof` match field and the POF actions that
/// `sluice_ofp::pof` decodes (its errors are the verdicts), and refuses
/// everything else with the kind's "unknown subtype" error
/// (`OFPBRC_BAD_EXP_TYPE`, `OFPBAC_BAD_EXP_TYPE`, `OFPBIC_BAD_EXP_TYPE`,
/// `OFPBMC_BAD_FIELD`, `OFPMMFC_BAD_BAND`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SluiceExtension;

impl Extension for SluiceExtension {
    fn experimenter(&self) -> u32 {
        SLUICE_EXPERIMENTER_ID
    }

    fn name(&self) -> &str {
        "sluice"
    }

    fn check(&self, p: &Payload<'_>) -> Result<String> {
        match (p.kind, p.exp_type) {
            (Kind::Message, msg_type::PROBE_REQUEST) => {
                if p.data.len() > max_probe_data() {
                    return Err(ErrorCode::BRC_BAD_LEN);
                }
                Ok(format!("sluice_probe_request(data={})", hex(p.data)))
            }
            (Kind::Message, msg_type::PROBE_REPLY) => {
                let d = p.data;
                if d.len() < 4 {
                    return Err(ErrorCode::BRC_BAD_LEN);
                }
                let version = u16::from_be_bytes([d[0], d[1]]);
                let n = usize::from(u16::from_be_bytes([d[2], d[3]]));
                let list = d.get(4..4 + 4 * n).ok_or(ErrorCode::BRC_BAD_LEN)?;
                let supported: Vec<String> = list
                    .chunks(4)
                    .map(|c| {
                        let kind = u16::from_be_bytes([c[0], c[1]]);
                        let sub = u16::from_be_bytes([c[2], c[3]]);
                        format!("{kind}:{sub}")
                    })
                    .collect();
                Ok(format!(
                    "sluice_probe_reply(version={version},supported={},data={})",
                    supported.join("/"),
                    hex(&d[4 + 4 * n..])
                ))
            }
            (Kind::Oxm, _) => {
                let o = Oxm::Experimenter {
                    experimenter: p.experimenter,
                    field: p.oxm_field(),
                    has_mask: p.oxm_has_mask(),
                    payload: p.data.to_vec(),
                };
                if let Some(m) = PofMatch::from_oxm(&o) {
                    return Ok(sluice_ofp::print::fields::pof_match(&m?));
                }
                if let Some(id) = filterprog::filter_prog_from_oxm(&o) {
                    return Ok(format!("filter_prog={}", id?));
                }
                match filterprog::pcap_filter_from_oxm(&o) {
                    Some(e) => Ok(format!("pcap_filter={:?}", e?)),
                    None => Err(ErrorCode::BMC_BAD_FIELD),
                }
            }
            (Kind::Action, _) => {
                let a =
                    Action::Experimenter { experimenter: p.experimenter, data: p.data.to_vec() };
                if let Some(sm) = filterprog::SendMaps::from_action(&a) {
                    return Ok(sluice_ofp::print::actions::send_maps_action(&sm?));
                }
                match PofAction::from_action(&a) {
                    Some(a) => Ok(sluice_ofp::print::actions::pof_action(&a?)),
                    None => Err(ErrorCode::BAC_BAD_EXP_TYPE),
                }
            }
            (kind, _) => Err(kind.unknown_exp_type()),
        }
    }

    fn handle_message(&self, p: &Payload<'_>) -> Result<Vec<Message>> {
        match p.exp_type {
            msg_type::PROBE_REQUEST => Ok(vec![Message::Experimenter(ExperimenterMsg {
                experimenter: SLUICE_EXPERIMENTER_ID,
                exp_type: msg_type::PROBE_REPLY,
                data: probe_reply_data(p.data),
            })]),
            // A reply sent to the switch: valid, but not a request.
            _ => Err(p.kind.unknown_exp_type()),
        }
    }
}

/// The registry a pipeline starts with: [`SluiceExtension`].
pub fn default_registry() -> Registry {
    let mut r = Registry::new();
    if r.register(Box::new(SluiceExtension)).is_err() {
        unreachable!("an empty registry takes any id");
    }
    r
}

impl Config {
    /// Add an extension to the registry the pipeline will dispatch
    /// experimenter objects through; fails (returning it) if its
    /// experimenter id is taken (sluice's own is, by default).
    pub fn register(
        &mut self,
        ext: Box<dyn Extension>,
    ) -> core::result::Result<(), Box<dyn Extension>> {
        Arc::make_mut(&mut self.extensions).register(ext)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_reply_layout() {
        #[rustfmt::skip]
        let want = [
            0, 1, 0, 15,                        // version 1, fifteen entries
            0, 0, 0, 0,                         // message PROBE_REQUEST
            0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, // LOAD_FILTER_PROG, UNLOAD_FILTER_PROG, UPDATE_MAP
            0, 1, 0, 5,                         // multipart DUMP_MAP
            0, 2, 0, 0, 0, 2, 0, 1, 0, 2, 0, 2, // actions pof_set, pof_modify, pof_add
            0, 2, 0, 3, 0, 2, 0, 4, 0, 2, 0, 5, // pof_del, pof_checksum, pof_write_metadata
            0, 2, 0, 16,                        // send_maps
            0, 4, 0, 0,                         // OXM field `pof`
            0, 4, 0, 16, 0, 4, 0, 17,           // OXM fields `filter_prog`, `pcap_filter`
            0xab,                               // the echo
        ];
        assert_eq!(probe_reply_data(&[0xab]), want);
        assert_eq!(max_probe_data(), 65535 - 16 - 4 - 4 * 15);
    }

    #[test]
    fn sluice_extension_verdicts() {
        let e = SluiceExtension;
        let p = |kind, exp_type, data| Payload {
            kind,
            experimenter: SLUICE_EXPERIMENTER_ID,
            exp_type,
            data,
        };
        assert_eq!(
            e.check(&p(Kind::Message, 0, &[1, 2])).unwrap(),
            "sluice_probe_request(data=0x0102)"
        );
        let reply = probe_reply_data(&[7]);
        assert_eq!(
            e.check(&p(Kind::Message, 1, &reply)).unwrap(),
            "sluice_probe_reply(version=1,supported=0:0/0:2/0:3/0:4/1:5/2:0/2:1/2:2/2:3/2:4/2:5/2:16/4:0/4:16/4:17,data=0x07)"
        );
        assert_eq!(e.check(&p(Kind::Message, 1, &[0, 1, 0, 2, 0])), Err(ErrorCode::BRC_BAD_LEN));
        // The filter-program messages (2-4) are the pipeline's to answer
        // (`filterprog.rs`), never the extension object's; 6 is a report
        // the switch sends.
        for t in 2..=6 {
            assert_eq!(e.check(&p(Kind::Message, t, &[])), Err(ErrorCode::BRC_BAD_EXP_TYPE));
        }
        assert_eq!(e.check(&p(Kind::Multipart, 0, &[])), Err(ErrorCode::BRC_BAD_EXP_TYPE));
        // Action subtypes 6..=15 are POF's but unassigned; 16 is
        // send_maps (this body is too short for it); 17 on are unassigned.
        assert_eq!(
            e.check(&p(Kind::Action, 0, &[0, 9, 0, 0, 0, 0])),
            Err(ErrorCode::BAC_BAD_EXP_TYPE)
        );
        assert_eq!(e.check(&p(Kind::Action, 0, &[0, 16, 0, 0, 0, 0])), Err(ErrorCode::BAC_BAD_LEN));
        assert_eq!(
            e.check(&p(Kind::Action, 0, &[0, 17, 0, 0, 0, 0])),
            Err(ErrorCode::BAC_BAD_EXP_TYPE)
        );
        // A POF action with a body too short for its subtype.
        assert_eq!(e.check(&p(Kind::Action, 0, &[0; 6])), Err(ErrorCode::BAC_BAD_LEN));
        assert_eq!(e.check(&p(Kind::Instruction, 0, &[0; 4])), Err(ErrorCode::BIC_BAD_EXP_TYPE));
        assert_eq!(e.check(&p(Kind::Oxm, 3, &[0; 4])), Err(ErrorCode::BMC_BAD_FIELD));
        assert_eq!(e.check(&p(Kind::MeterBand, 0, &[])), Err(ErrorCode::MMFC_BAD_BAND));
        // A reply is a valid object but not something the switch takes.
        assert_eq!(
            e.handle_message(&p(Kind::Message, 1, &reply)),
            Err(ErrorCode::BRC_BAD_EXP_TYPE)
        );
    }

    #[test]
    fn config_registers_extensions() {
        let mut cfg = Config::default();
        assert!(cfg.register(Box::new(SluiceExtension)).is_err());
        assert_eq!(cfg.extensions.iter().map(|e| e.name()).collect::<Vec<_>>(), ["sluice"]);
    }
}
