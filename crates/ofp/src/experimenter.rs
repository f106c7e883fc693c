//! The experimenter registry: how extensions plug into the codec and the
//! switch without touching either.
//!
//! The core codec is *lossless* for experimenter payloads: every
//! experimenter message, multipart body, action, instruction, OXM field,
//! meter band, queue property and table-feature property is kept as its
//! experimenter id plus raw bytes. An [`Extension`] registered here gives
//! those bytes a meaning: it validates them (answering with the error the
//! switch should send), describes them for the printer and answers the
//! EXPERIMENTER messages and experimenter multipart requests addressed to
//! it. The OpenFlow front end (`sluice-pipeline`) holds a [`Registry`] and
//! routes every experimenter object a controller sends through it; sluice's
//! own extension (experimenter id
//! [`SLUICE_EXPERIMENTER_ID`](crate::consts::SLUICE_EXPERIMENTER_ID),
//! `docs/EXPERIMENTER.md`) is registered there.
//!
//! Dispatch rules (the helpers on [`Registry`]):
//! - no extension for the experimenter id: the spec's "unknown
//!   experimenter" error for that kind of object
//!   ([`Kind::unknown_experimenter`]);
//! - otherwise the extension's [`Extension::check`] decides: its `Err` is
//!   the `OFPT_ERROR` the switch sends, its `Ok` means accepted;
//! - an accepted EXPERIMENTER message or experimenter multipart request is
//!   then answered by [`Extension::handle_message`] /
//!   [`Extension::handle_multipart`] (by default: the kind's "unknown
//!   subtype" error, [`Kind::unknown_exp_type`]).
//!
//! The payload constructors ([`Payload::message`], [`Payload::action`],
//! [`Payload::oxm`], …) say which bytes an extension sees for each kind.

use crate::action::Action;
use crate::error::{ErrorCode, Result};
use crate::instruction::Instruction;
use crate::message::{ExperimenterMsg, Message};
use crate::meter::MeterBand;
use crate::multipart::MultipartExperimenter;
use crate::oxm::Oxm;
use std::sync::Arc;

/// The kind of object an experimenter payload was found in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Message,
    Multipart,
    Action,
    Instruction,
    Oxm,
    MeterBand,
    QueueProp,
    TableFeatureProp,
}

impl Kind {
    /// The error a switch answers when no extension knows the experimenter.
    pub fn unknown_experimenter(self) -> ErrorCode {
        match self {
            Kind::Message | Kind::Multipart | Kind::QueueProp => ErrorCode::BRC_BAD_EXPERIMENTER,
            Kind::Action => ErrorCode::BAC_BAD_EXPERIMENTER,
            Kind::Instruction => ErrorCode::BIC_BAD_EXPERIMENTER,
            Kind::Oxm => ErrorCode::BMC_BAD_FIELD,
            Kind::MeterBand => ErrorCode::MMFC_BAD_BAND,
            Kind::TableFeatureProp => ErrorCode::TFFC_BAD_TYPE,
        }
    }

    /// The error for a known experimenter but an unknown subtype.
    pub fn unknown_exp_type(self) -> ErrorCode {
        match self {
            Kind::Message | Kind::Multipart | Kind::QueueProp => ErrorCode::BRC_BAD_EXP_TYPE,
            Kind::Action => ErrorCode::BAC_BAD_EXP_TYPE,
            Kind::Instruction => ErrorCode::BIC_BAD_EXP_TYPE,
            Kind::Oxm => ErrorCode::BMC_BAD_FIELD,
            Kind::MeterBand => ErrorCode::MMFC_BAD_BAND,
            Kind::TableFeatureProp => ErrorCode::TFFC_BAD_TYPE,
        }
    }
}

/// One experimenter payload as the codec preserved it.
#[derive(Clone, Copy, Debug)]
pub struct Payload<'a> {
    pub kind: Kind,
    pub experimenter: u32,
    /// The subtype where the wire format has one (`exp_type` of messages and
    /// multiparts; for an OXM the field number, plus [`Payload::OXM_HAS_MASK`]
    /// when the field has a mask); 0 otherwise (actions, instructions and
    /// meter bands carry their subtype, if any, inside `data`).
    pub exp_type: u32,
    pub data: &'a [u8],
}

impl<'a> Payload<'a> {
    /// Set in an OXM payload's `exp_type` when the field has a mask (field
    /// numbers are 7 bits, so this never collides with one).
    pub const OXM_HAS_MASK: u32 = 0x100;

    /// An `OFPT_EXPERIMENTER` message: `exp_type`, and the bytes after it.
    pub fn message(m: &'a ExperimenterMsg) -> Payload<'a> {
        Payload {
            kind: Kind::Message,
            experimenter: m.experimenter,
            exp_type: m.exp_type,
            data: &m.data,
        }
    }

    /// An experimenter multipart request or reply body: `exp_type`, and the
    /// bytes after it.
    pub fn multipart(m: &'a MultipartExperimenter) -> Payload<'a> {
        Payload {
            kind: Kind::Multipart,
            experimenter: m.experimenter,
            exp_type: m.exp_type,
            data: &m.data,
        }
    }

    /// An experimenter action: the bytes after the experimenter id
    /// (padding included). `None` for any other action.
    pub fn action(a: &'a Action) -> Option<Payload<'a>> {
        match a {
            Action::Experimenter { experimenter, data } => {
                Some(Payload { kind: Kind::Action, experimenter: *experimenter, exp_type: 0, data })
            }
            _ => None,
        }
    }

    /// An experimenter instruction: the bytes after the experimenter id.
    /// `None` for any other instruction.
    pub fn instruction(i: &'a Instruction) -> Option<Payload<'a>> {
        match i {
            Instruction::Experimenter { experimenter, data } => Some(Payload {
                kind: Kind::Instruction,
                experimenter: *experimenter,
                exp_type: 0,
                data,
            }),
            _ => None,
        }
    }

    /// An `OFPXMC_EXPERIMENTER` OXM field: the field number (and
    /// [`Payload::OXM_HAS_MASK`]) as `exp_type`, the value (and mask) after
    /// the experimenter id as `data`. `None` for any other class.
    pub fn oxm(o: &'a Oxm) -> Option<Payload<'a>> {
        match o {
            Oxm::Experimenter { experimenter, field, has_mask, payload } => Some(Payload {
                kind: Kind::Oxm,
                experimenter: *experimenter,
                exp_type: u32::from(*field) | if *has_mask { Self::OXM_HAS_MASK } else { 0 },
                data: payload,
            }),
            _ => None,
        }
    }

    /// An experimenter meter band: the bytes after the experimenter id (the
    /// band's rate and burst size are the meter's). `None` for other bands.
    pub fn meter_band(b: &'a MeterBand) -> Option<Payload<'a>> {
        match b {
            MeterBand::Experimenter { experimenter, data, .. } => Some(Payload {
                kind: Kind::MeterBand,
                experimenter: *experimenter,
                exp_type: 0,
                data,
            }),
            _ => None,
        }
    }

    /// The field number of an OXM payload.
    pub fn oxm_field(&self) -> u8 {
        (self.exp_type & 0x7f) as u8
    }

    /// Whether an OXM payload carries a mask.
    pub fn oxm_has_mask(&self) -> bool {
        self.exp_type & Self::OXM_HAS_MASK != 0
    }
}

/// An extension: gives meaning to the payloads of one experimenter id.
///
/// `check` is the only required behaviour: it validates any payload (the
/// switch's verdict) and describes it (the printer's text). The switch
/// calls the `handle_*` hooks only for payloads `check` accepted.
///
/// What "accepted" means for objects the switch would have to execute
/// (actions, instructions, match fields, meter bands) is the OpenFlow front
/// end's business and is documented there (`sluice_pipeline::extension`):
/// the objects are kept verbatim where the switch stores them (a flow
/// entry's match and instructions, a group's buckets), so an execution hook
/// added later finds them decoded by the codec and checked by `check`.
pub trait Extension: Send + Sync {
    fn experimenter(&self) -> u32;
    /// Short name used by the printer, e.g. `sluice`.
    fn name(&self) -> &str;
    /// Validate a payload; `Ok` carries a one-line description in ovs-ofctl
    /// style for the printer. `Err` is the error the switch answers with.
    fn check(&self, p: &Payload<'_>) -> Result<String>;

    /// Answer an `OFPT_EXPERIMENTER` message (`p.kind == Kind::Message`)
    /// that `check` accepted: the messages to send back, in order, with the
    /// request's xid (none is fine: not every experimenter message has a
    /// reply). `Err` is the error sent instead. By default the switch takes
    /// no experimenter message: `OFPBRC_BAD_EXP_TYPE`.
    fn handle_message(&self, p: &Payload<'_>) -> Result<Vec<Message>> {
        Err(p.kind.unknown_exp_type())
    }

    /// Answer an experimenter multipart request (`p.kind ==
    /// Kind::Multipart`) that `check` accepted with the reply body (the
    /// switch splits it over as many replies as needed). By default:
    /// `OFPBRC_BAD_EXP_TYPE`.
    fn handle_multipart(&self, p: &Payload<'_>) -> Result<MultipartExperimenter> {
        Err(p.kind.unknown_exp_type())
    }
}

/// The set of registered extensions. Cheap to clone (extensions are
/// shared), so a switch configuration can carry one.
#[derive(Clone, Default)]
pub struct Registry {
    exts: Vec<Arc<dyn Extension>>,
}

impl core::fmt::Debug for Registry {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.exts.iter().map(|e| (e.name(), e.experimenter()))).finish()
    }
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Register `ext`; fails (returning it) if its id is already taken.
    pub fn register(
        &mut self,
        ext: Box<dyn Extension>,
    ) -> core::result::Result<(), Box<dyn Extension>> {
        if self.get(ext.experimenter()).is_some() {
            return Err(ext);
        }
        self.exts.push(Arc::from(ext));
        Ok(())
    }

    pub fn get(&self, experimenter: u32) -> Option<&dyn Extension> {
        self.exts.iter().find(|e| e.experimenter() == experimenter).map(|e| e.as_ref())
    }

    /// The registered extensions, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Extension> {
        self.exts.iter().map(|e| e.as_ref())
    }

    /// The extension for `p`, or the kind's "unknown experimenter" error.
    fn extension(&self, p: &Payload<'_>) -> Result<&dyn Extension> {
        self.get(p.experimenter).ok_or_else(|| p.kind.unknown_experimenter())
    }

    /// Validate a payload against its extension, or answer the kind's
    /// "unknown experimenter" error.
    pub fn check(&self, p: &Payload<'_>) -> Result<String> {
        self.extension(p)?.check(p)
    }

    /// Answer an `OFPT_EXPERIMENTER` message: unknown experimenter
    /// (`OFPBRC_BAD_EXPERIMENTER`), else the extension's `check`, then its
    /// [`Extension::handle_message`].
    pub fn handle_message(&self, m: &ExperimenterMsg) -> Result<Vec<Message>> {
        let p = Payload::message(m);
        let e = self.extension(&p)?;
        e.check(&p)?;
        e.handle_message(&p)
    }

    /// Answer an experimenter multipart request: unknown experimenter
    /// (`OFPBRC_BAD_EXPERIMENTER`), else the extension's `check`, then its
    /// [`Extension::handle_multipart`].
    pub fn handle_multipart(&self, m: &MultipartExperimenter) -> Result<MultipartExperimenter> {
        let p = Payload::multipart(m);
        let e = self.extension(&p)?;
        e.check(&p)?;
        e.handle_multipart(&p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo;
    impl Extension for Echo {
        fn experimenter(&self) -> u32 {
            0x1234
        }
        fn name(&self) -> &str {
            "echo"
        }
        fn check(&self, p: &Payload<'_>) -> Result<String> {
            if p.exp_type == 7 {
                Ok(format!("echo({})", p.data.len()))
            } else {
                Err(p.kind.unknown_exp_type())
            }
        }
        fn handle_message(&self, p: &Payload<'_>) -> Result<Vec<Message>> {
            Ok(vec![Message::Experimenter(ExperimenterMsg {
                experimenter: p.experimenter,
                exp_type: 8,
                data: p.data.iter().rev().copied().collect(),
            })])
        }
    }

    /// Accepts everything, answers nothing (the default hooks).
    struct Quiet;
    impl Extension for Quiet {
        fn experimenter(&self) -> u32 {
            0x5678
        }
        fn name(&self) -> &str {
            "quiet"
        }
        fn check(&self, _: &Payload<'_>) -> Result<String> {
            Ok("quiet".into())
        }
    }

    #[test]
    fn unknown_and_known_experimenters() {
        let mut reg = Registry::new();
        assert!(reg.register(Box::new(Echo)).is_ok());
        assert!(reg.register(Box::new(Echo)).is_err());
        let mut p =
            Payload { kind: Kind::Action, experimenter: 0x1234, exp_type: 7, data: &[1, 2] };
        assert_eq!(reg.check(&p).unwrap(), "echo(2)");
        p.exp_type = 8;
        assert_eq!(reg.check(&p), Err(ErrorCode::BAC_BAD_EXP_TYPE));
        p.experimenter = 9;
        assert_eq!(reg.check(&p), Err(ErrorCode::BAC_BAD_EXPERIMENTER));
        p.kind = Kind::Oxm;
        assert_eq!(reg.check(&p), Err(ErrorCode::BMC_BAD_FIELD));
    }

    #[test]
    fn unknown_experimenter_error_for_every_kind() {
        let reg = Registry::new();
        let want = [
            (Kind::Message, ErrorCode::BRC_BAD_EXPERIMENTER),
            (Kind::Multipart, ErrorCode::BRC_BAD_EXPERIMENTER),
            (Kind::QueueProp, ErrorCode::BRC_BAD_EXPERIMENTER),
            (Kind::Action, ErrorCode::BAC_BAD_EXPERIMENTER),
            (Kind::Instruction, ErrorCode::BIC_BAD_EXPERIMENTER),
            (Kind::Oxm, ErrorCode::BMC_BAD_FIELD),
            (Kind::MeterBand, ErrorCode::MMFC_BAD_BAND),
            (Kind::TableFeatureProp, ErrorCode::TFFC_BAD_TYPE),
        ];
        for (kind, code) in want {
            let p = Payload { kind, experimenter: 0x1234, exp_type: 7, data: &[] };
            assert_eq!(reg.check(&p), Err(code), "{kind:?}");
        }
    }

    #[test]
    fn payloads_of_each_kind() {
        let a = Action::Experimenter { experimenter: 0x1234, data: vec![0, 3, 0, 0, 0, 0] };
        let p = Payload::action(&a).unwrap();
        assert_eq!(
            (p.kind, p.experimenter, p.exp_type, p.data.len()),
            (Kind::Action, 0x1234, 0, 6)
        );
        assert!(Payload::action(&Action::PopVlan).is_none());

        let i = Instruction::Experimenter { experimenter: 0x1234, data: vec![1] };
        let p = Payload::instruction(&i).unwrap();
        assert_eq!((p.kind, p.data), (Kind::Instruction, &[1][..]));
        assert!(Payload::instruction(&Instruction::ClearActions).is_none());

        let o = Oxm::Experimenter {
            experimenter: 0x1234,
            field: 5,
            has_mask: true,
            payload: vec![1, 2],
        };
        let p = Payload::oxm(&o).unwrap();
        assert_eq!(
            (p.kind, p.oxm_field(), p.oxm_has_mask(), p.data),
            (Kind::Oxm, 5, true, &[1, 2][..])
        );
        let o =
            Oxm::Experimenter { experimenter: 0x1234, field: 5, has_mask: false, payload: vec![] };
        assert_eq!(Payload::oxm(&o).unwrap().exp_type, 5);

        let b =
            MeterBand::Experimenter { rate: 1, burst_size: 2, experimenter: 0x1234, data: vec![9] };
        let p = Payload::meter_band(&b).unwrap();
        assert_eq!((p.kind, p.data), (Kind::MeterBand, &[9][..]));
        assert!(Payload::meter_band(&MeterBand::Drop { rate: 1, burst_size: 0 }).is_none());

        let m = ExperimenterMsg { experimenter: 0x1234, exp_type: 7, data: vec![4] };
        let p = Payload::message(&m);
        assert_eq!((p.kind, p.exp_type, p.data), (Kind::Message, 7, &[4][..]));
        let m = MultipartExperimenter { experimenter: 0x1234, exp_type: 7, data: vec![] };
        assert_eq!(Payload::multipart(&m).kind, Kind::Multipart);
    }

    #[test]
    fn registered_extension_decides_and_answers() {
        let mut reg = Registry::new();
        reg.register(Box::new(Echo)).ok().unwrap();
        reg.register(Box::new(Quiet)).ok().unwrap();
        assert_eq!(format!("{reg:?}"), r#"[("echo", 4660), ("quiet", 22136)]"#);
        // Echo accepts subtype 7 and answers with its own message.
        let m = ExperimenterMsg { experimenter: 0x1234, exp_type: 7, data: vec![1, 2, 3] };
        let got = reg.handle_message(&m).unwrap();
        assert_eq!(
            got,
            vec![Message::Experimenter(ExperimenterMsg {
                experimenter: 0x1234,
                exp_type: 8,
                data: vec![3, 2, 1]
            })]
        );
        // Its check refuses other subtypes before the handler runs.
        let m = ExperimenterMsg { exp_type: 1, ..m };
        assert_eq!(reg.handle_message(&m), Err(ErrorCode::BRC_BAD_EXP_TYPE));
        // An unknown experimenter: the spec's error.
        let m = ExperimenterMsg { experimenter: 0x9999, ..m };
        assert_eq!(reg.handle_message(&m), Err(ErrorCode::BRC_BAD_EXPERIMENTER));
        let mp = MultipartExperimenter { experimenter: 0x9999, exp_type: 0, data: vec![] };
        assert_eq!(reg.handle_multipart(&mp), Err(ErrorCode::BRC_BAD_EXPERIMENTER));
        // Accepted by check, but no handler: the default hooks' error.
        let m = ExperimenterMsg { experimenter: 0x5678, exp_type: 0, data: vec![] };
        assert_eq!(reg.handle_message(&m), Err(ErrorCode::BRC_BAD_EXP_TYPE));
        let mp = MultipartExperimenter { experimenter: 0x5678, ..mp };
        assert_eq!(reg.handle_multipart(&mp), Err(ErrorCode::BRC_BAD_EXP_TYPE));
        // Accepted objects of other kinds: the description.
        let a = Action::Experimenter { experimenter: 0x5678, data: vec![] };
        assert_eq!(reg.check(&Payload::action(&a).unwrap()).unwrap(), "quiet");
        // A clone shares the extensions.
        assert_eq!(reg.clone().iter().map(|e| e.name()).collect::<Vec<_>>(), ["echo", "quiet"]);
    }
}
