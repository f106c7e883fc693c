//! sluice's P4 control messages: `sluice p4 ctl` sends one command line
//! in simple_switch_CLI's vocabulary to a `sluice p4 run` switch and gets
//! its answer (experimenter [`SLUICE_EXPERIMENTER_ID`], layout in
//! `docs/EXPERIMENTER.md`):
//!
//! ```text
//! P4_CTL_REQUEST (exp_type 8)      P4_CTL_REPLY (exp_type 9)
//!   the command, UTF-8               status u8: 0 done, 1 refused
//!                                    the answer or the refusal, UTF-8
//! ```
//!
//! The reply has the request's xid. A request whose text is not UTF-8,
//! or a reply without its status byte or with another status, does not
//! decode.

use crate::consts::SLUICE_EXPERIMENTER_ID;
use crate::message::{ExperimenterMsg, Message};

/// `exp_type` of a command.
pub const P4_CTL_REQUEST: u32 = 8;
/// `exp_type` of its answer.
pub const P4_CTL_REPLY: u32 = 9;

/// A command line as an `OFPT_EXPERIMENTER` message.
pub fn request(line: &str) -> Message {
    Message::Experimenter(ExperimenterMsg {
        experimenter: SLUICE_EXPERIMENTER_ID,
        exp_type: P4_CTL_REQUEST,
        data: line.as_bytes().to_vec(),
    })
}

/// The command line of `e`; `None` if `e` is not a P4 control request,
/// `Some(Err)` if its text is not UTF-8.
pub fn parse_request(e: &ExperimenterMsg) -> Option<Result<String, String>> {
    if e.experimenter != SLUICE_EXPERIMENTER_ID || e.exp_type != P4_CTL_REQUEST {
        return None;
    }
    Some(String::from_utf8(e.data.clone()).map_err(|_| "the command is not UTF-8".to_string()))
}

/// The answer to a command: done with this text, or refused with this
/// reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CtlReply {
    pub ok: bool,
    pub text: String,
}

impl CtlReply {
    pub fn to_message(&self) -> Message {
        let mut data = vec![u8::from(!self.ok)];
        data.extend_from_slice(self.text.as_bytes());
        Message::Experimenter(ExperimenterMsg {
            experimenter: SLUICE_EXPERIMENTER_ID,
            exp_type: P4_CTL_REPLY,
            data,
        })
    }

    /// `None` if `e` is not a P4 control reply; `Some(Err)` if it does not
    /// decode.
    pub fn parse(e: &ExperimenterMsg) -> Option<Result<CtlReply, String>> {
        if e.experimenter != SLUICE_EXPERIMENTER_ID || e.exp_type != P4_CTL_REPLY {
            return None;
        }
        let Some((&status, text)) = e.data.split_first() else {
            return Some(Err("a P4 control reply without its status byte".into()));
        };
        if status > 1 {
            return Some(Err(format!("a P4 control reply with status {status}")));
        }
        Some(
            String::from_utf8(text.to_vec())
                .map(|text| CtlReply { ok: status == 0, text })
                .map_err(|_| "a P4 control reply whose text is not UTF-8".to_string()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refusals() {
        let Message::Experimenter(e) = request("table_dump ipv4_lpm") else { unreachable!() };
        assert_eq!(parse_request(&e), Some(Ok("table_dump ipv4_lpm".into())));
        let r = CtlReply { ok: false, text: "no table named `x`".into() };
        let Message::Experimenter(e) = r.to_message() else { unreachable!() };
        assert_eq!(CtlReply::parse(&e), Some(Ok(r)));
        assert!(parse_request(&e).is_none());
        let bad = ExperimenterMsg { exp_type: P4_CTL_REPLY, data: vec![7], ..e.clone() };
        assert!(CtlReply::parse(&bad).unwrap().is_err());
        let empty = ExperimenterMsg { exp_type: P4_CTL_REPLY, data: vec![], ..e };
        assert!(CtlReply::parse(&empty).unwrap().is_err());
        let bin = ExperimenterMsg {
            experimenter: SLUICE_EXPERIMENTER_ID,
            exp_type: P4_CTL_REQUEST,
            data: vec![0xff],
        };
        assert!(parse_request(&bin).unwrap().is_err());
    }
}
