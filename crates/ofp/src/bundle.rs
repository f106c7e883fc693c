//! Bundles over OpenFlow 1.3: ONF extension 230, the encoding
//! `ovs-ofctl -O OpenFlow13 --bundle` speaks, with OpenFlow 1.4's bundle
//! semantics (spec 1.4 §6.8 and §7.3.9).
//!
//! Both messages are `OFPT_EXPERIMENTER` with experimenter id
//! [`ONF_EXPERIMENTER_ID`]; the payload after `exp_type` is OpenFlow 1.4's
//! `ofp_bundle_ctrl_msg` body:
//!
//! ```text
//! ONFT_BUNDLE_CONTROL (2300)       ONFT_BUNDLE_ADD_MESSAGE (2301)
//!   bundle_id u32                    bundle_id u32
//!   type      u16 (OFPBCT_*)         pad       u16 (kept as read)
//!   flags     u16 (OFPBF_*)          flags     u16
//!   properties                       message   (a whole OpenFlow message,
//!                                               same version and xid)
//!                                    0..7 bytes of padding, then
//!                                    properties (only if any)
//! ```
//!
//! Errors are the extension's: `OFPET_EXPERIMENTER` with experimenter
//! [`ONF_EXPERIMENTER_ID`] and `exp_type` one of [`err`] (2300 + the
//! `OFPBFC_*` code of OpenFlow 1.4). A body too short for its fixed part,
//! or properties whose lengths lie, is `OFPBRC_BAD_LEN`; an inner message
//! whose length lies is `OFPBFC_MSG_BAD_LEN`.
//!
//! Lossless: the decoded values keep every byte (the ADD's unused field,
//! padding and properties) and `emit` writes them back.

use crate::consts::{ERROR_DATA_LEN, OFP_VERSION};
use crate::error::ErrorCode;
use crate::message::{error_reply, ErrorMsg, ExperimenterMsg, Header, Message};
use crate::wire::{Put, Reader};

/// The ONF's experimenter id (`ONF_VENDOR_ID`, "ONF\0").
pub const ONF_EXPERIMENTER_ID: u32 = 0x4F4E_4600;
/// `ONFT_BUNDLE_CONTROL`.
pub const ONFT_BUNDLE_CONTROL: u32 = 2300;
/// `ONFT_BUNDLE_ADD_MESSAGE`.
pub const ONFT_BUNDLE_ADD_MESSAGE: u32 = 2301;

/// `OFPBCT_*`: the bundle control types.
pub mod ctrl_type {
    pub const OPEN_REQUEST: u16 = 0;
    pub const OPEN_REPLY: u16 = 1;
    pub const CLOSE_REQUEST: u16 = 2;
    pub const CLOSE_REPLY: u16 = 3;
    pub const COMMIT_REQUEST: u16 = 4;
    pub const COMMIT_REPLY: u16 = 5;
    pub const DISCARD_REQUEST: u16 = 6;
    pub const DISCARD_REPLY: u16 = 7;
}

/// `OFPBF_*`: the bundle flags.
pub mod flags {
    /// `OFPBF_ATOMIC`: all or nothing.
    pub const ATOMIC: u16 = 1 << 0;
    /// `OFPBF_ORDERED`: in the order added.
    pub const ORDERED: u16 = 1 << 1;
    /// Every flag defined.
    pub const ALL: u16 = ATOMIC | ORDERED;
}

/// The extension's error codes (`exp_type` of an `OFPET_EXPERIMENTER`
/// error from [`ONF_EXPERIMENTER_ID`]): 2300 + OpenFlow 1.4's `OFPBFC_*`.
pub mod err {
    pub const UNKNOWN: u16 = 2300;
    pub const EPERM: u16 = 2301;
    pub const BAD_ID: u16 = 2302;
    pub const BUNDLE_EXIST: u16 = 2303;
    pub const BUNDLE_CLOSED: u16 = 2304;
    pub const OUT_OF_BUNDLES: u16 = 2305;
    pub const BAD_TYPE: u16 = 2306;
    pub const BAD_FLAGS: u16 = 2307;
    pub const MSG_BAD_LEN: u16 = 2308;
    pub const MSG_BAD_XID: u16 = 2309;
    pub const MSG_UNSUP: u16 = 2310;
    pub const MSG_CONFLICT: u16 = 2311;
    pub const MSG_TOO_MANY: u16 = 2312;
    pub const MSG_FAILED: u16 = 2313;
    pub const TIMEOUT: u16 = 2314;
    pub const BUNDLE_IN_PROGRESS: u16 = 2315;
}

/// The `OFPBFC_*` name of one of [`err`]'s codes.
pub fn err_name(code: u16) -> Option<&'static str> {
    const NAMES: [&str; 16] = [
        "OFPBFC_UNKNOWN",
        "OFPBFC_EPERM",
        "OFPBFC_BAD_ID",
        "OFPBFC_BUNDLE_EXIST",
        "OFPBFC_BUNDLE_CLOSED",
        "OFPBFC_OUT_OF_BUNDLES",
        "OFPBFC_BAD_TYPE",
        "OFPBFC_BAD_FLAGS",
        "OFPBFC_MSG_BAD_LEN",
        "OFPBFC_MSG_BAD_XID",
        "OFPBFC_MSG_UNSUP",
        "OFPBFC_MSG_CONFLICT",
        "OFPBFC_MSG_TOO_MANY",
        "OFPBFC_MSG_FAILED",
        "OFPBFC_TIMEOUT",
        "OFPBFC_BUNDLE_IN_PROGRESS",
    ];
    NAMES.get(usize::from(code.checked_sub(err::UNKNOWN)?)).copied()
}

/// Why a bundle message is refused: a standard error, or one of the
/// extension's ([`err`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BundleRefusal {
    Std(ErrorCode),
    Bundle(u16),
}

impl From<ErrorCode> for BundleRefusal {
    fn from(e: ErrorCode) -> Self {
        BundleRefusal::Std(e)
    }
}

impl BundleRefusal {
    /// The `OFPT_ERROR` answering `request` (its first bytes echoed).
    pub fn to_error(self, request: &[u8]) -> Message {
        match self {
            BundleRefusal::Std(code) => error_reply(code, request),
            BundleRefusal::Bundle(code) => bundle_error(code, request),
        }
    }
}

impl std::fmt::Display for BundleRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BundleRefusal::Std(e) => write!(f, "{e}"),
            BundleRefusal::Bundle(c) => match err_name(*c) {
                Some(n) => f.write_str(n),
                None => write!(f, "ONFERR(code={c})"),
            },
        }
    }
}

/// One of the extension's errors answering `request`.
pub fn bundle_error(code: u16, request: &[u8]) -> Message {
    let n = request.len().min(ERROR_DATA_LEN);
    Message::Error(ErrorMsg::Experimenter {
        exp_type: code,
        experimenter: ONF_EXPERIMENTER_ID,
        data: request[..n].to_vec(),
    })
}

/// Check the framing of bundle properties (`ofp_bundle_prop_header`: type,
/// length including the 4-byte header, padded to 8): a length below 4 or
/// past the end is `OFPBRC_BAD_LEN`. The last property may omit its
/// padding.
fn check_props(mut b: &[u8]) -> Result<(), BundleRefusal> {
    while !b.is_empty() {
        let r = Reader::new(b, ErrorCode::BRC_BAD_LEN);
        let len = usize::from(r.peek_u16(2)?);
        if len < 4 || len > b.len() {
            return Err(ErrorCode::BRC_BAD_LEN.into());
        }
        let padded = len.div_ceil(8) * 8;
        b = &b[padded.min(b.len())..];
    }
    Ok(())
}

/// `ONFT_BUNDLE_CONTROL`'s body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct BundleCtrl {
    pub bundle_id: u32,
    /// One of [`ctrl_type`] (others are kept and refused by the switch).
    pub ctrl_type: u16,
    pub flags: u16,
    /// Properties, verbatim (framing checked).
    pub properties: Vec<u8>,
}

impl BundleCtrl {
    /// Decode the experimenter payload (after `exp_type`).
    pub fn parse(data: &[u8]) -> Result<BundleCtrl, BundleRefusal> {
        let mut r = Reader::new(data, ErrorCode::BRC_BAD_LEN);
        let bundle_id = r.u32()?;
        let ctrl_type = r.u16()?;
        let flags = r.u16()?;
        let properties = r.rest();
        check_props(properties)?;
        Ok(BundleCtrl { bundle_id, ctrl_type, flags, properties: properties.to_vec() })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.bundle_id);
        out.put_u16(self.ctrl_type);
        out.put_u16(self.flags);
        out.put_slice(&self.properties);
    }

    /// As an `OFPT_EXPERIMENTER` message.
    pub fn to_message(&self) -> Message {
        let mut data = Vec::with_capacity(8 + self.properties.len());
        self.emit(&mut data);
        Message::Experimenter(ExperimenterMsg {
            experimenter: ONF_EXPERIMENTER_ID,
            exp_type: ONFT_BUNDLE_CONTROL,
            data,
        })
    }
}

/// `ONFT_BUNDLE_ADD_MESSAGE`'s body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct BundleAdd {
    pub bundle_id: u32,
    /// The unused `type` field, kept as read.
    pub pad: u16,
    pub flags: u16,
    /// The whole inner message, header included (its length field checked
    /// against what is there).
    pub message: Vec<u8>,
    /// What follows the inner message: padding to 8 bytes, then
    /// properties; empty when there are no properties.
    pub trailer: Vec<u8>,
}

impl BundleAdd {
    /// Decode the experimenter payload (after `exp_type`). A payload
    /// shorter than 8 bytes is `OFPBRC_BAD_LEN`; an inner message shorter
    /// than its header or than its length field says, or a length field
    /// below 8, is `OFPBFC_MSG_BAD_LEN`; so is a trailer shorter than the
    /// padding or whose padding is not zero.
    pub fn parse(data: &[u8]) -> Result<BundleAdd, BundleRefusal> {
        let mut r = Reader::new(data, ErrorCode::BRC_BAD_LEN);
        let bundle_id = r.u32()?;
        let pad = r.u16()?;
        let flags = r.u16()?;
        let rest = r.rest();
        let bad_len = BundleRefusal::Bundle(err::MSG_BAD_LEN);
        let h = Header::parse(rest).map_err(|_| bad_len)?;
        let len = usize::from(h.length);
        if len < Header::LEN || len > rest.len() {
            return Err(bad_len);
        }
        let (message, trailer) = rest.split_at(len);
        if !trailer.is_empty() {
            let padding = (8 - len % 8) % 8;
            if trailer.len() < padding || trailer[..padding].iter().any(|&b| b != 0) {
                return Err(bad_len);
            }
            check_props(&trailer[padding..])?;
        }
        Ok(BundleAdd {
            bundle_id,
            pad,
            flags,
            message: message.to_vec(),
            trailer: trailer.to_vec(),
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u32(self.bundle_id);
        out.put_u16(self.pad);
        out.put_u16(self.flags);
        out.put_slice(&self.message);
        out.put_slice(&self.trailer);
    }

    /// As an `OFPT_EXPERIMENTER` message.
    pub fn to_message(&self) -> Message {
        let mut data = Vec::with_capacity(8 + self.message.len() + self.trailer.len());
        self.emit(&mut data);
        Message::Experimenter(ExperimenterMsg {
            experimenter: ONF_EXPERIMENTER_ID,
            exp_type: ONFT_BUNDLE_ADD_MESSAGE,
            data,
        })
    }

    /// Decode the inner message of an ADD whose xid is `outer_xid`: another
    /// version is `OFPBRC_BAD_VERSION`, another xid `OFPBFC_MSG_BAD_XID`,
    /// and a message that does not decode gets the error it would get
    /// outside a bundle.
    pub fn inner(&self, outer_xid: u32) -> Result<(u32, Message), BundleRefusal> {
        let h =
            Header::parse(&self.message).map_err(|_| BundleRefusal::Bundle(err::MSG_BAD_LEN))?;
        if h.version != OFP_VERSION {
            return Err(ErrorCode::BRC_BAD_VERSION.into());
        }
        if h.xid != outer_xid {
            return Err(BundleRefusal::Bundle(err::MSG_BAD_XID));
        }
        Ok(Message::parse(&self.message)?)
    }
}

/// A decoded bundle message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BundleMsg {
    Ctrl(BundleCtrl),
    Add(BundleAdd),
}

impl BundleMsg {
    /// `None` when `e` is not one of the extension's bundle messages (other
    /// ONF experimenter messages keep going to the registry).
    pub fn decode(e: &ExperimenterMsg) -> Option<Result<BundleMsg, BundleRefusal>> {
        if e.experimenter != ONF_EXPERIMENTER_ID {
            return None;
        }
        match e.exp_type {
            ONFT_BUNDLE_CONTROL => Some(BundleCtrl::parse(&e.data).map(BundleMsg::Ctrl)),
            ONFT_BUNDLE_ADD_MESSAGE => Some(BundleAdd::parse(&e.data).map(BundleMsg::Add)),
            _ => None,
        }
    }

    pub fn to_message(&self) -> Message {
        match self {
            BundleMsg::Ctrl(c) => c.to_message(),
            BundleMsg::Add(a) => a.to_message(),
        }
    }
}
