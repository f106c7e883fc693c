//! sluice's live trace messages: `sluice ctl TARGET trace FLOW` asks a
//! running switch to trace one packet through its current tables and
//! caches and gets the trace's text back (experimenter
//! [`SLUICE_EXPERIMENTER_ID`], layout in `docs/EXPERIMENTER.md`):
//!
//! ```text
//! TRACE_REQUEST (exp_type 10)           TRACE_REPLY (exp_type 11)
//!   kind u8: 0 a flow description,        the trace, UTF-8
//!            1 a frame
//!   pad[3] (zero)
//!   in_port u32 (kind 1; 0 for kind 0)
//!   the description (UTF-8) or the frame
//! ```
//!
//! The reply has the request's xid. A request shorter than 8 bytes is
//! refused with `OFPBRC_BAD_LEN`; another kind, non-zero padding, a
//! description that is not UTF-8, a frame without an in-port or an empty
//! frame with the experimenter error [`BAD_TRACE`] (and so is a
//! description the switch cannot build a packet from; the text names the
//! bad token). Every decoder here is total: no input panics.

use crate::consts::SLUICE_EXPERIMENTER_ID;
use crate::error::ErrorCode;
use crate::filterprog::{Decoded, Refusal};
use crate::message::{ExperimenterMsg, Message};

/// `exp_type` of a trace request.
pub const TRACE_REQUEST: u32 = 10;
/// `exp_type` of its answer.
pub const TRACE_REPLY: u32 = 11;
/// The experimenter error code of a request that cannot be traced
/// (`SLICTR_BAD_TRACE`, in the code space of sluice's experimenter
/// errors, after the filter programs' `SLICFPC_*`).
pub const BAD_TRACE: u16 = 12;

const KIND_FLOW: u8 = 0;
const KIND_FRAME: u8 = 1;
const HDR_LEN: usize = 8;
/// Longest reply text: what fits one message after its 16 bytes of
/// headers.
pub const MAX_REPLY_TEXT: usize = u16::MAX as usize - 16;

/// What to trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceRequest {
    /// An ovs-ofctl flow description (`in_port=1,tcp,nw_dst=10.0.0.1`),
    /// built into a packet by the switch.
    Flow(String),
    /// A frame received on `in_port`.
    Frame { in_port: u32, frame: Vec<u8> },
}

impl TraceRequest {
    /// The request as an `OFPT_EXPERIMENTER` message.
    pub fn to_message(&self) -> Message {
        let mut data = Vec::with_capacity(HDR_LEN);
        match self {
            TraceRequest::Flow(text) => {
                data.extend_from_slice(&[KIND_FLOW, 0, 0, 0, 0, 0, 0, 0]);
                data.extend_from_slice(text.as_bytes());
            }
            TraceRequest::Frame { in_port, frame } => {
                data.extend_from_slice(&[KIND_FRAME, 0, 0, 0]);
                data.extend_from_slice(&in_port.to_be_bytes());
                data.extend_from_slice(frame);
            }
        }
        Message::Experimenter(ExperimenterMsg {
            experimenter: SLUICE_EXPERIMENTER_ID,
            exp_type: TRACE_REQUEST,
            data,
        })
    }

    /// `None` if `e` is not a trace request; otherwise the request or the
    /// refusal to answer it with.
    pub fn parse(e: &ExperimenterMsg) -> Option<Decoded<TraceRequest>> {
        if e.experimenter != SLUICE_EXPERIMENTER_ID || e.exp_type != TRACE_REQUEST {
            return None;
        }
        Some(Self::decode(&e.data))
    }

    fn decode(d: &[u8]) -> Decoded<TraceRequest> {
        let (Some(h), Some(body)) = (d.get(..HDR_LEN), d.get(HDR_LEN..)) else {
            return Err(Refusal::Std(ErrorCode::BRC_BAD_LEN));
        };
        if h[1..4] != [0, 0, 0] {
            return Err(Refusal::exp(BAD_TRACE, "a trace request with non-zero padding"));
        }
        let in_port = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
        match h[0] {
            KIND_FLOW if in_port != 0 => {
                Err(Refusal::exp(BAD_TRACE, "a flow trace request with an in_port field"))
            }
            KIND_FLOW => String::from_utf8(body.to_vec())
                .map(TraceRequest::Flow)
                .map_err(|_| Refusal::exp(BAD_TRACE, "the flow description is not UTF-8")),
            KIND_FRAME if in_port == 0 => {
                Err(Refusal::exp(BAD_TRACE, "a frame trace request without an in_port"))
            }
            KIND_FRAME if body.is_empty() => {
                Err(Refusal::exp(BAD_TRACE, "a frame trace request with an empty frame"))
            }
            KIND_FRAME => Ok(TraceRequest::Frame { in_port, frame: body.to_vec() }),
            k => Err(Refusal::exp(BAD_TRACE, format!("a trace request of unknown kind {k}"))),
        }
    }
}

/// The answer: the trace's text, cut to [`MAX_REPLY_TEXT`] bytes on a
/// character boundary.
pub fn reply(text: &str) -> Message {
    let mut cut = text.len().min(MAX_REPLY_TEXT);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    Message::Experimenter(ExperimenterMsg {
        experimenter: SLUICE_EXPERIMENTER_ID,
        exp_type: TRACE_REPLY,
        data: text.as_bytes()[..cut].to_vec(),
    })
}

/// The text of a trace reply; `None` if `e` is not one, `Some(Err)` if
/// it is not UTF-8.
pub fn parse_reply(e: &ExperimenterMsg) -> Option<Result<String, String>> {
    if e.experimenter != SLUICE_EXPERIMENTER_ID || e.exp_type != TRACE_REPLY {
        return None;
    }
    Some(String::from_utf8(e.data.clone()).map_err(|_| "a trace reply that is not UTF-8".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(m: &Message) -> &ExperimenterMsg {
        let Message::Experimenter(e) = m else { panic!("{m:?}") };
        e
    }

    #[test]
    fn requests_round_trip_through_bytes() {
        for r in [
            TraceRequest::Flow("in_port=1,tcp,tp_dst=80".into()),
            TraceRequest::Frame { in_port: 0xffff_fffe, frame: vec![1, 2, 3] },
        ] {
            let m = r.to_message();
            let bytes = m.encode(7);
            let back = Message::parse(&bytes).expect("parses").1;
            assert_eq!(TraceRequest::parse(exp(&back)), Some(Ok(r)));
        }
        // Literal bytes of a flow request for `ip`.
        let m = TraceRequest::Flow("ip".into()).to_message();
        assert_eq!(exp(&m).data, [0, 0, 0, 0, 0, 0, 0, 0, b'i', b'p']);
        let m = TraceRequest::Frame { in_port: 2, frame: vec![0xab] }.to_message();
        assert_eq!(exp(&m).data, [1, 0, 0, 0, 0, 0, 0, 2, 0xab]);
    }

    #[test]
    fn bad_requests_are_refused_not_panicked_on() {
        let e = |data: Vec<u8>| ExperimenterMsg {
            experimenter: SLUICE_EXPERIMENTER_ID,
            exp_type: TRACE_REQUEST,
            data,
        };
        assert_eq!(
            TraceRequest::parse(&e(vec![0; 7])),
            Some(Err(Refusal::Std(ErrorCode::BRC_BAD_LEN)))
        );
        for bad in [
            vec![0, 1, 0, 0, 0, 0, 0, 0],
            vec![0, 0, 0, 0, 0, 0, 0, 1],
            vec![0, 0, 0, 0, 0, 0, 0, 0, 0xff],
            vec![1, 0, 0, 0, 0, 0, 0, 0, 1],
            vec![1, 0, 0, 0, 0, 0, 0, 1],
            vec![2, 0, 0, 0, 0, 0, 0, 0],
        ] {
            let r = TraceRequest::parse(&e(bad.clone())).expect("a trace request");
            assert_eq!(r.map_err(|r| r.exp_code()), Err(Some(BAD_TRACE)), "{bad:?}");
        }
        let other = ExperimenterMsg { exp_type: TRACE_REPLY, ..e(vec![]) };
        assert_eq!(TraceRequest::parse(&other), None);
        assert_eq!(parse_reply(&other), Some(Ok(String::new())));
        assert_eq!(parse_reply(exp(&reply("outputs: 2\n"))), Some(Ok("outputs: 2\n".into())));
        let long = "é".repeat(MAX_REPLY_TEXT);
        let Some(Ok(t)) = parse_reply(exp(&reply(&long))) else { panic!("a reply") };
        assert!(t.len() <= MAX_REPLY_TEXT && !t.is_empty());
    }
}
