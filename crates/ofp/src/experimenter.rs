//! The experimenter registry: how extensions plug into the codec without
//! touching it.
//!
//! The core codec is *lossless* for experimenter payloads: every
//! experimenter message, multipart body, action, instruction, OXM field,
//! meter band, queue property and table-feature property is kept as its
//! experimenter id plus raw bytes. An [`Extension`] registered here gives
//! those bytes a meaning: it validates them (answering with the error the
//! switch should send) and describes them for the printer. sluice's own
//! extensions (POF fields, pcap-filter matches, filter programs, SEND_MAPS)
//! live in other crates and use one experimenter id,
//! [`SLUICE_EXPERIMENTER_ID`](crate::consts::SLUICE_EXPERIMENTER_ID).
//!
//! A payload whose experimenter id has no registered extension is answered
//! with the spec's "unknown experimenter" error for that kind of object
//! ([`Kind::unknown_experimenter`]).

use crate::error::{ErrorCode, Result};

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
    /// multiparts, the field number of an OXM); 0 otherwise.
    pub exp_type: u32,
    pub data: &'a [u8],
}

/// An extension: gives meaning to the payloads of one experimenter id.
pub trait Extension: Send + Sync {
    fn experimenter(&self) -> u32;
    /// Short name used by the printer, e.g. `sluice`.
    fn name(&self) -> &str;
    /// Validate a payload; `Ok` carries a one-line description in ovs-ofctl
    /// style for the printer. `Err` is the error the switch answers with.
    fn check(&self, p: &Payload<'_>) -> Result<String>;
}

/// The set of registered extensions.
#[derive(Default)]
pub struct Registry {
    exts: Vec<Box<dyn Extension>>,
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
        self.exts.push(ext);
        Ok(())
    }

    pub fn get(&self, experimenter: u32) -> Option<&dyn Extension> {
        self.exts.iter().find(|e| e.experimenter() == experimenter).map(|e| e.as_ref())
    }

    /// Validate a payload against its extension, or answer the kind's
    /// "unknown experimenter" error.
    pub fn check(&self, p: &Payload<'_>) -> Result<String> {
        match self.get(p.experimenter) {
            Some(e) => e.check(p),
            None => Err(p.kind.unknown_experimenter()),
        }
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
}
