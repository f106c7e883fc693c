//! sluice's port capture messages: `sluice ctl TARGET capture PORT FILE`
//! asks a running switch to record the frames a port receives and reads
//! them back in pieces (experimenter [`SLUICE_EXPERIMENTER_ID`], layout in
//! `docs/EXPERIMENTER.md`):
//!
//! ```text
//! CAPTURE_REQUEST (exp_type 12)          CAPTURE_REPLY (exp_type 13)
//!   op u8: 0 start, 1 read                 id u32
//!   pad[3] (zero)                          flags u8 (bit 0: done, nothing more
//!   start: port u32, count u32,                      will come)
//!          seconds u32 (each 0: the        pad[3]
//!          switch's limit)                 dropped u32 (frames not kept:
//!   read:  id u32                                     the switch's buffer was full)
//!                                          records, each: time_ns u64 (Unix
//!                                            time), orig_len u32, incl_len
//!                                            u32, incl_len bytes of frame
//! ```
//!
//! A start is answered by a reply with the new capture's id and no
//! records; each read by the records buffered since the last one (as many
//! as fit one message). The reply has the request's xid. A request shorter
//! than its op's layout is refused with `OFPBRC_BAD_LEN`; an unknown op or
//! non-zero padding with the experimenter error [`BAD_CAPTURE`] (and so is
//! a port or id the switch does not know; the text names it). Every
//! decoder here is total: no input panics.

use crate::consts::SLUICE_EXPERIMENTER_ID;
use crate::error::ErrorCode;
use crate::filterprog::{Decoded, Refusal};
use crate::message::{ExperimenterMsg, Message};

/// `exp_type` of a capture request.
pub const CAPTURE_REQUEST: u32 = 12;
/// `exp_type` of its answer.
pub const CAPTURE_REPLY: u32 = 13;
/// The experimenter error code of a request that cannot be served
/// (`SLICCAP_BAD_CAPTURE`).
pub const BAD_CAPTURE: u16 = 13;

const OP_START: u8 = 0;
const OP_READ: u8 = 1;
const REPLY_HDR: usize = 12;
const RECORD_HDR: usize = 16;
/// Bytes of records one reply carries at most (a message is at most
/// 65535 bytes: 16 of headers, 12 of reply header).
pub const MAX_RECORDS_LEN: usize = u16::MAX as usize - 16 - REPLY_HDR;
/// Longest frame part a record keeps (longer frames are cut, `orig_len`
/// keeps their length), so that any one record fits a reply.
pub const MAX_INCL: usize = 16 * 1024;

/// What to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaptureRequest {
    /// Start recording what `port` receives: at most `count` frames (0:
    /// the switch's limit) for at most `seconds` (0: the switch's limit).
    Start { port: u32, count: u32, seconds: u32 },
    /// The frames recorded since the last read of capture `id`.
    Read { id: u32 },
}

impl CaptureRequest {
    /// The request as an `OFPT_EXPERIMENTER` message.
    pub fn to_message(&self) -> Message {
        let mut data = Vec::with_capacity(16);
        match self {
            CaptureRequest::Start { port, count, seconds } => {
                data.extend_from_slice(&[OP_START, 0, 0, 0]);
                for v in [port, count, seconds] {
                    data.extend_from_slice(&v.to_be_bytes());
                }
            }
            CaptureRequest::Read { id } => {
                data.extend_from_slice(&[OP_READ, 0, 0, 0]);
                data.extend_from_slice(&id.to_be_bytes());
            }
        }
        Message::Experimenter(ExperimenterMsg {
            experimenter: SLUICE_EXPERIMENTER_ID,
            exp_type: CAPTURE_REQUEST,
            data,
        })
    }

    /// `None` if `e` is not a capture request; otherwise the request or
    /// the refusal to answer it with.
    pub fn parse(e: &ExperimenterMsg) -> Option<Decoded<CaptureRequest>> {
        if e.experimenter != SLUICE_EXPERIMENTER_ID || e.exp_type != CAPTURE_REQUEST {
            return None;
        }
        Some(Self::decode(&e.data))
    }

    fn decode(d: &[u8]) -> Decoded<CaptureRequest> {
        let u32_at =
            |i: usize| d.get(i..i + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        let Some(h) = d.get(..4) else {
            return Err(Refusal::Std(ErrorCode::BRC_BAD_LEN));
        };
        if h[1..4] != [0, 0, 0] {
            return Err(Refusal::exp(BAD_CAPTURE, "a capture request with non-zero padding"));
        }
        let (want, req) = match h[0] {
            OP_START => (
                16,
                (|| {
                    Some(CaptureRequest::Start {
                        port: u32_at(4)?,
                        count: u32_at(8)?,
                        seconds: u32_at(12)?,
                    })
                })(),
            ),
            OP_READ => (8, u32_at(4).map(|id| CaptureRequest::Read { id })),
            op => {
                return Err(Refusal::exp(
                    BAD_CAPTURE,
                    format!("a capture request of unknown op {op}"),
                ))
            }
        };
        match req {
            Some(r) if d.len() == want => Ok(r),
            _ => Err(Refusal::Std(ErrorCode::BRC_BAD_LEN)),
        }
    }
}

/// One recorded frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Reception time, nanoseconds since the Unix epoch.
    pub time_ns: u64,
    /// The frame's length on the wire.
    pub orig_len: u32,
    /// The frame, cut to [`MAX_INCL`] bytes.
    pub data: Vec<u8>,
}

impl Record {
    /// Bytes the record takes in a reply.
    pub fn wire_len(&self) -> usize {
        RECORD_HDR + self.data.len()
    }
}

/// A reply: capture `id`, whether it is over, frames not kept, records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaptureReply {
    pub id: u32,
    pub done: bool,
    pub dropped: u32,
    pub records: Vec<Record>,
}

impl CaptureReply {
    /// The reply as an `OFPT_EXPERIMENTER` message (the caller keeps the
    /// records within [`MAX_RECORDS_LEN`]; any beyond are left out).
    pub fn to_message(&self) -> Message {
        let mut data = Vec::with_capacity(REPLY_HDR);
        data.extend_from_slice(&self.id.to_be_bytes());
        data.extend_from_slice(&[u8::from(self.done), 0, 0, 0]);
        data.extend_from_slice(&self.dropped.to_be_bytes());
        for r in &self.records {
            if data.len() - REPLY_HDR + r.wire_len() > MAX_RECORDS_LEN {
                break;
            }
            let incl = r.data.len().min(MAX_INCL);
            data.extend_from_slice(&r.time_ns.to_be_bytes());
            data.extend_from_slice(&r.orig_len.to_be_bytes());
            data.extend_from_slice(&(incl as u32).to_be_bytes());
            data.extend_from_slice(&r.data[..incl]);
        }
        Message::Experimenter(ExperimenterMsg {
            experimenter: SLUICE_EXPERIMENTER_ID,
            exp_type: CAPTURE_REPLY,
            data,
        })
    }

    /// `None` if `e` is not a capture reply; `Some(Err)` naming what is
    /// wrong with a malformed one.
    pub fn parse(e: &ExperimenterMsg) -> Option<Result<CaptureReply, String>> {
        if e.experimenter != SLUICE_EXPERIMENTER_ID || e.exp_type != CAPTURE_REPLY {
            return None;
        }
        Some(Self::decode(&e.data))
    }

    fn decode(d: &[u8]) -> Result<CaptureReply, String> {
        let u32_at =
            |i: usize| d.get(i..i + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        let short = || format!("a capture reply of {} bytes is too short", d.len());
        let id = u32_at(0).ok_or_else(short)?;
        let flags = *d.get(4).ok_or_else(short)?;
        let dropped = u32_at(8).ok_or_else(short)?;
        let mut records = Vec::new();
        let mut at = REPLY_HDR;
        while at < d.len() {
            let hdr =
                d.get(at..at + RECORD_HDR).ok_or_else(|| format!("a record cut at byte {at}"))?;
            let mut t = [0u8; 8];
            t.copy_from_slice(&hdr[..8]);
            let orig_len = u32::from_be_bytes([hdr[8], hdr[9], hdr[10], hdr[11]]);
            let incl = u32::from_be_bytes([hdr[12], hdr[13], hdr[14], hdr[15]]) as usize;
            let start = at + RECORD_HDR;
            let data = d
                .get(start..start.saturating_add(incl))
                .ok_or_else(|| format!("a record at byte {at} says {incl} bytes, fewer follow"))?;
            records.push(Record { time_ns: u64::from_be_bytes(t), orig_len, data: data.to_vec() });
            at = start + incl;
        }
        Ok(CaptureReply { id, done: flags & 1 != 0, dropped, records })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(m: &Message) -> &ExperimenterMsg {
        let Message::Experimenter(e) = m else { panic!("{m:?}") };
        e
    }

    #[test]
    fn requests_and_replies_round_trip_through_bytes() {
        for r in [
            CaptureRequest::Start { port: 2, count: 10, seconds: 0 },
            CaptureRequest::Read { id: 0xdead_beef },
        ] {
            let bytes = r.to_message().encode(9);
            let back = Message::parse(&bytes).expect("parses").1;
            assert_eq!(CaptureRequest::parse(exp(&back)), Some(Ok(r)));
        }
        let m = CaptureRequest::Start { port: 1, count: 2, seconds: 3 }.to_message();
        assert_eq!(exp(&m).data, [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]);
        let rep = CaptureReply {
            id: 7,
            done: true,
            dropped: 1,
            records: vec![
                Record { time_ns: 1, orig_len: 3, data: vec![1, 2, 3] },
                Record { time_ns: 2, orig_len: 100, data: vec![9] },
            ],
        };
        let bytes = rep.to_message().encode(3);
        let back = Message::parse(&bytes).expect("parses").1;
        assert_eq!(CaptureReply::parse(exp(&back)), Some(Ok(rep)));
    }

    #[test]
    fn a_reply_holds_what_fits_one_message() {
        let big = Record { time_ns: 0, orig_len: 9000, data: vec![0; 9000] };
        let rep = CaptureReply { records: vec![big; 10], ..Default::default() };
        let m = rep.to_message();
        let bytes = m.encode(1);
        assert!(bytes.len() <= u16::MAX as usize);
        let back = CaptureReply::parse(exp(&m)).unwrap().unwrap();
        assert_eq!(back.records.len(), MAX_RECORDS_LEN / 9016);
    }

    #[test]
    fn bad_requests_and_replies_are_refused_not_panicked_on() {
        let e = |exp_type, data: Vec<u8>| ExperimenterMsg {
            experimenter: SLUICE_EXPERIMENTER_ID,
            exp_type,
            data,
        };
        for short in [vec![], vec![0, 0, 0], vec![0, 0, 0, 0, 0, 0, 0, 1], vec![1, 0, 0, 0, 1]] {
            assert_eq!(
                CaptureRequest::parse(&e(CAPTURE_REQUEST, short.clone())),
                Some(Err(Refusal::Std(ErrorCode::BRC_BAD_LEN))),
                "{short:?}"
            );
        }
        for bad in [vec![2, 0, 0, 0, 0, 0, 0, 0], vec![1, 1, 0, 0, 0, 0, 0, 0]] {
            let r = CaptureRequest::parse(&e(CAPTURE_REQUEST, bad.clone())).unwrap();
            assert_eq!(r.map_err(|r| r.exp_code()), Err(Some(BAD_CAPTURE)), "{bad:?}");
        }
        assert_eq!(CaptureRequest::parse(&e(CAPTURE_REPLY, vec![])), None);
        assert!(CaptureReply::parse(&e(CAPTURE_REPLY, vec![0; 11])).unwrap().is_err());
        let mut cut = vec![0; 12];
        cut.extend_from_slice(&[0; 12]);
        cut.extend_from_slice(&[0, 0, 0, 9, 1]);
        assert!(CaptureReply::parse(&e(CAPTURE_REPLY, cut)).unwrap().is_err());
    }
}
