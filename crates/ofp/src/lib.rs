//! # sluice-ofp: the OpenFlow 1.3.5 wire protocol
//!
//! Value types with `parse` and `emit` for every OpenFlow 1.3.5 message
//! (wire version 0x04), OXM match field, action, instruction, group bucket,
//! meter band, queue property and multipart body, plus a printer in
//! `ovs-ofctl`'s vocabulary.
//!
//! ## Conventions
//! - No I/O, no clocks, no threads: bytes in, values out.
//! - Every decode failure is an [`ErrorCode`], the exact `OFPT_ERROR`
//!   type/code the spec asks a switch to answer with.
//! - Decoders never panic, never read out of bounds, never allocate more
//!   than a constant factor of their input, and always make progress (every
//!   loop consumes at least one byte or fails).
//! - Unknown protocol numbers are either preserved (unknown OXM classes,
//!   experimenter bodies, unknown hello elements, unknown table-feature
//!   properties) or rejected with the spec's error; they are never silently
//!   dropped.
//! - `emit` writes exactly what `parse` reads: `parse(emit(x)) == x` for
//!   every value, checked by property tests.
#![forbid(unsafe_code)]

pub mod action;
pub mod bundle;
pub mod capturemsg;
pub mod consts;
pub mod error;
pub mod experimenter;
pub mod fieldcopy;
pub mod filterprog;
pub mod group;
pub mod instruction;
pub mod message;
pub mod meter;
pub mod multipart;
pub mod ofctl;
pub mod oxm;
pub mod p4ctl;
pub mod pof;
pub mod port;
pub mod print;
pub mod queue;
pub mod tracemsg;
pub mod wire;

pub use error::{ErrorCode, Result};
pub use message::{Header, Message};
