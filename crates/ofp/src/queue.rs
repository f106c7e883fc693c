//! Queues and queue properties (OpenFlow 1.3.5 §7.2.2), as carried by
//! `OFPT_QUEUE_GET_CONFIG_REPLY`.
//!
//! ```text
//! struct ofp_packet_queue (16 + props):
//!  0  queue_id u32   4  port u32   8  len u16   10  pad[6]   16  properties…
//! struct ofp_queue_prop_header (8):
//!  0  property u16   2  len u16   4  pad[4]
//! min_rate / max_rate (16):  header, rate u16, pad[6]
//! experimenter (16 + data):  header, experimenter u32, pad[4], data…
//! ```
//!
//! Errors are all `OFPBRC_BAD_LEN` (the queue config reply has no error type
//! of its own): a queue shorter than 16 bytes or whose `len` is below 16, not
//! a multiple of 8, or past the end of the input; a property whose `len` is
//! below 8, not a multiple of 8 or past the end of its queue; a rate property
//! whose `len` is not 16; an experimenter property shorter than 16. Unknown
//! property types are kept as [`QueueProp::Unknown`] with their body.

use crate::error::{ErrorCode, Result};
use crate::wire::{patch_u16, Put, Reader};

/// `OFPQT_*` queue property types.
pub mod prop_type {
    pub const MIN_RATE: u16 = 1;
    pub const MAX_RATE: u16 = 2;
    pub const EXPERIMENTER: u16 = 0xffff;
}

/// `struct ofp_queue_prop_*`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum QueueProp {
    MinRate(u16),
    MaxRate(u16),
    /// `data` after the experimenter id and pad, verbatim.
    Experimenter {
        experimenter: u32,
        data: Vec<u8>,
    },
    /// Unknown property type, preserved (body after the 8-byte header).
    /// Only produced for types other than 1, 2 and 0xffff.
    Unknown {
        property: u16,
        data: Vec<u8>,
    },
}

impl QueueProp {
    pub const HEADER_LEN: usize = 8;

    pub fn property(&self) -> u16 {
        match self {
            QueueProp::MinRate(_) => prop_type::MIN_RATE,
            QueueProp::MaxRate(_) => prop_type::MAX_RATE,
            QueueProp::Experimenter { .. } => prop_type::EXPERIMENTER,
            QueueProp::Unknown { property, .. } => *property,
        }
    }

    pub fn wire_len(&self) -> usize {
        match self {
            QueueProp::MinRate(_) | QueueProp::MaxRate(_) => 16,
            QueueProp::Experimenter { data, .. } => 16 + data.len(),
            QueueProp::Unknown { data, .. } => Self::HEADER_LEN + data.len(),
        }
    }

    /// Parse one property at the reader's position.
    pub fn parse(r: &mut Reader<'_>) -> Result<QueueProp> {
        const BAD: ErrorCode = ErrorCode::BRC_BAD_LEN;
        let rem = r.remaining();
        if rem < Self::HEADER_LEN {
            return Err(BAD);
        }
        let property = r.peek_u16(0).map_err(|_| BAD)?;
        let len = r.peek_u16(2).map_err(|_| BAD)? as usize;
        if len < Self::HEADER_LEN || len % 8 != 0 || len > rem {
            return Err(BAD);
        }
        let mut p = Reader::new(r.bytes(len).map_err(|_| BAD)?, BAD);
        p.skip(Self::HEADER_LEN)?;
        Ok(match property {
            prop_type::MIN_RATE | prop_type::MAX_RATE => {
                if len != 16 {
                    return Err(BAD);
                }
                let rate = p.u16()?;
                if property == prop_type::MIN_RATE {
                    QueueProp::MinRate(rate)
                } else {
                    QueueProp::MaxRate(rate)
                }
            }
            prop_type::EXPERIMENTER => {
                let experimenter = p.u32()?;
                p.skip(4)?;
                QueueProp::Experimenter { experimenter, data: p.rest().to_vec() }
            }
            _ => QueueProp::Unknown { property, data: p.rest().to_vec() },
        })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.put_u16(self.property());
        out.put_u16(self.wire_len() as u16);
        out.put_zeros(4);
        match self {
            QueueProp::MinRate(rate) | QueueProp::MaxRate(rate) => {
                out.put_u16(*rate);
                out.put_zeros(6);
            }
            QueueProp::Experimenter { experimenter, data } => {
                out.put_u32(*experimenter);
                out.put_zeros(4);
                out.put_slice(data);
            }
            QueueProp::Unknown { data, .. } => out.put_slice(data),
        }
    }
}

/// `struct ofp_packet_queue`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PacketQueue {
    pub queue_id: u32,
    pub port: u32,
    pub properties: Vec<QueueProp>,
}

impl PacketQueue {
    /// Length of the fixed part.
    pub const HEADER_LEN: usize = 16;

    /// Parse one queue description at the reader's position.
    pub fn parse(r: &mut Reader<'_>) -> Result<PacketQueue> {
        const BAD: ErrorCode = ErrorCode::BRC_BAD_LEN;
        let rem = r.remaining();
        if rem < Self::HEADER_LEN {
            return Err(BAD);
        }
        let len = r.peek_u16(8).map_err(|_| BAD)? as usize;
        if len < Self::HEADER_LEN || len % 8 != 0 || len > rem {
            return Err(BAD);
        }
        let mut q = Reader::new(r.bytes(len).map_err(|_| BAD)?, BAD);
        let queue_id = q.u32()?;
        let port = q.u32()?;
        q.skip(8)?;
        let mut properties = Vec::new();
        while !q.is_empty() {
            // Every successful parse consumes at least 8 bytes.
            properties.push(QueueProp::parse(&mut q)?);
        }
        Ok(PacketQueue { queue_id, port, properties })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u32(self.queue_id);
        out.put_u32(self.port);
        out.put_u16(0);
        out.put_zeros(6);
        for p in &self.properties {
            p.emit(out);
        }
        let len = out.len() - start;
        patch_u16(out, start + 8, len as u16);
    }

    pub fn wire_len(&self) -> usize {
        Self::HEADER_LEN + self.properties.iter().map(QueueProp::wire_len).sum::<usize>()
    }

    /// Parse a list of queues occupying all of `buf`.
    pub fn parse_list(buf: &[u8]) -> Result<Vec<PacketQueue>> {
        let mut r = Reader::new(buf, ErrorCode::BRC_BAD_LEN);
        let mut v = Vec::new();
        while !r.is_empty() {
            v.push(PacketQueue::parse(&mut r)?);
        }
        Ok(v)
    }
}

/// Generator of arbitrary queue properties that round-trip (unknown types
/// avoid the known numbers; variable data is a multiple of 8 bytes).
#[cfg(test)]
pub(crate) fn arb_queue_prop() -> impl proptest::strategy::Strategy<Value = QueueProp> {
    use proptest::prelude::*;
    let data = || proptest::collection::vec(any::<[u8; 8]>(), 0..3).prop_map(|d| d.concat());
    prop_oneof![
        any::<u16>().prop_map(QueueProp::MinRate),
        any::<u16>().prop_map(QueueProp::MaxRate),
        (any::<u32>(), data())
            .prop_map(|(experimenter, data)| QueueProp::Experimenter { experimenter, data }),
        (3u16..0xffff, data()).prop_map(|(property, data)| QueueProp::Unknown { property, data }),
    ]
}

/// Generator of arbitrary queue descriptions.
#[cfg(test)]
pub(crate) fn arb_packet_queue() -> impl proptest::strategy::Strategy<Value = PacketQueue> {
    use proptest::prelude::*;
    (any::<u32>(), any::<u32>(), proptest::collection::vec(arb_queue_prop(), 0..4))
        .prop_map(|(queue_id, port, properties)| PacketQueue { queue_id, port, properties })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn literal() -> Vec<u8> {
        vec![
            0x00, 0x00, 0x00, 0x01, // queue_id 1
            0x00, 0x00, 0x00, 0x02, // port 2
            0x00, 0x40, // len 64
            0, 0, 0, 0, 0, 0, // pad
            // min_rate 500
            0x00, 0x01, 0x00, 0x10, 0, 0, 0, 0, 0x01, 0xf4, 0, 0, 0, 0, 0, 0, //
            // max_rate 1000
            0x00, 0x02, 0x00, 0x10, 0, 0, 0, 0, 0x03, 0xe8, 0, 0, 0, 0, 0, 0, //
            // unknown property 7 with 8 bytes of body
            0x00, 0x07, 0x00, 0x10, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8,
        ]
    }

    #[test]
    fn literal_queue() {
        let b = literal();
        let v = PacketQueue::parse_list(&b).unwrap();
        assert_eq!(
            v,
            vec![PacketQueue {
                queue_id: 1,
                port: 2,
                properties: vec![
                    QueueProp::MinRate(500),
                    QueueProp::MaxRate(1000),
                    QueueProp::Unknown { property: 7, data: vec![1, 2, 3, 4, 5, 6, 7, 8] },
                ],
            }]
        );
        let mut out = Vec::new();
        v[0].emit(&mut out);
        assert_eq!(out, b);
        assert_eq!(v[0].wire_len(), b.len());
    }

    #[test]
    fn queue_length_errors() {
        let bad =
            |b: &[u8]| assert_eq!(PacketQueue::parse_list(b), Err(ErrorCode::BRC_BAD_LEN), "{b:?}");
        let b = literal();
        bad(&b[..15]);
        bad(&b[..63]);
        for n in [0u8, 8, 0x48, 0x3c] {
            let mut c = b.clone();
            c[9] = n;
            bad(&c);
        }
        // Property len 0, 4, 12, overrunning.
        for n in [0u8, 4, 12, 0x40] {
            let mut c = b.clone();
            c[19] = n;
            bad(&c);
        }
        // min_rate with len 24 (queue grown to match).
        let mut c = b.clone();
        c[19] = 24;
        c.splice(32..32, [0u8; 8]);
        c[9] = 72;
        bad(&c);
        // Experimenter property of 8 bytes (needs 16).
        let e = [0, 0, 0, 9, 0, 0, 0, 9, 0, 0x18, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 8, 0, 0, 0, 0];
        bad(&e);
    }

    proptest! {
        #[test]
        fn packet_queue_round_trips(q in arb_packet_queue()) {
            let mut out = Vec::new();
            q.emit(&mut out);
            prop_assert_eq!(out.len(), q.wire_len());
            let mut r = Reader::new(&out, ErrorCode::BRC_BAD_LEN);
            prop_assert_eq!(PacketQueue::parse(&mut r).unwrap(), q);
            prop_assert!(r.is_empty());
        }

        #[test]
        fn queue_parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..96)) {
            let _ = PacketQueue::parse_list(&b);
        }
    }
}
