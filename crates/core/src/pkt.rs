//! One packet on its way through a walk: the frame in a buffer with
//! headroom, its metadata, its key and its parse, kept in step.
//!
//! The key is the parse's summary of the bytes. Edits go through
//! [`Pkt::edit`], which runs the core's executor ([`crate::op::edit`])
//! and keeps the two in step the cheap way: an edit that changes the
//! frame's layout re-parses at once; one that writes a field in place
//! (see [`in_place`]) leaves the parse's offsets valid and only marks the
//! key [`Pkt::stale`]. Whatever reads the key (a lookup, a branch, a
//! select group's hash, a meter's remark) calls [`Pkt::fresh`] first, so
//! a run of set-fields followed by outputs never re-parses.
//!
//! Every parse runs the pipeline's extract program after the fixed parser
//! ([`Pkt::extract`], set by the walk from [`crate::walk::Frontend::extract`]
//! before a frame is loaded), so window bits are part of the key wherever
//! the key is: a lookup after an edit sees the edited windows.
//!
//! A front end may replace the fixed parser and the extract program with
//! its own ([`Parse`], set with [`Pkt::set_parser`]): P4's parse program
//! fills the whole key, its header vector, and its ops then change the
//! key, not the frame ([`crate::keyop`]), until the front end deparses.
//!
//! Knows no control protocol: ports, queues and metadata are numbers.

use std::fmt;
use std::sync::Arc;

use crate::cache::{set_field_effect, SetFieldEffect};
use crate::extract::Extract;
use crate::op::{Edited, Op};
use sluice_packet::buf::PacketBuf;
use sluice_packet::key::FlowKey;
use sluice_packet::parse::{parse_into, Meta, ParseInfo};

/// Largest frame a packet holds.
pub const MAX_FRAME: usize = 65_535;

/// A front end's own parser: fills the whole key and the parse summary
/// from the frame, instead of the fixed parser and the extract program.
/// Must not panic on any frame.
pub trait Parse: Send + Sync + fmt::Debug {
    /// Parses `data` into `key` and `info` and returns how many leading
    /// bytes of it the result may depend on, besides the frame's length
    /// and `meta` ([`usize::MAX`]: not known). The raw-header cache learns
    /// a frame only when that is within its window, so an answer too small
    /// would let two frames that parse differently share a key.
    fn parse(&self, data: &[u8], meta: &Meta, key: &mut FlowKey, info: &mut ParseInfo) -> usize;
}

/// One packet being processed.
#[derive(Clone, Debug)]
pub struct Pkt {
    pub buf: PacketBuf,
    pub meta: Meta,
    pub key: FlowKey,
    pub info: ParseInfo,
    /// The output queue an op chose, if any.
    pub queue: Option<u32>,
    /// Re-parsed since it was loaded: an op may have changed the frame
    /// (guards see the frame, so a cache entry stops recording guard
    /// results there).
    pub edited: bool,
    /// The key lags behind the bytes: an in-place header edit (one that
    /// leaves the frame's layout, so `info`, as it was) changed a field
    /// the key holds. Whatever reads the key calls [`Pkt::fresh`] first.
    pub stale: bool,
    /// The extract program every parse runs after the fixed parser (none:
    /// no windows). Set with [`Pkt::set_extract`] before loading a frame.
    pub extract: Option<Arc<Extract>>,
    /// The front end's own parser, used instead of the fixed parser and
    /// [`Pkt::extract`] (none: the fixed parser). Set with
    /// [`Pkt::set_parser`] before loading a frame.
    pub parser: Option<Arc<dyn Parse>>,
    /// What the last parse by [`Pkt::parser`] returned (see
    /// [`Parse::parse`]).
    pub parser_extent: usize,
}

impl Default for Pkt {
    fn default() -> Self {
        Pkt::new()
    }
}

impl Pkt {
    /// An empty packet whose buffer holds [`MAX_FRAME`] bytes after the
    /// default headroom (one allocation, reused for every frame loaded).
    pub fn new() -> Pkt {
        Pkt {
            buf: PacketBuf::new(PacketBuf::DEFAULT_HEADROOM, MAX_FRAME + 64),
            meta: Meta::default(),
            key: FlowKey::ZERO,
            info: ParseInfo::default(),
            queue: None,
            edited: false,
            stale: false,
            extract: None,
            parser: None,
            parser_extent: usize::MAX,
        }
    }

    /// Use `x` as the extract program from the next parse on. Clones the
    /// `Arc` only when the program changed (a pooled packet keeps it from
    /// burst to burst).
    #[inline]
    pub fn set_extract(&mut self, x: Option<&Arc<Extract>>) {
        let same = match (x, &self.extract) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        if !same {
            self.extract = x.cloned();
        }
    }

    /// Use `p` instead of the fixed parser from the next parse on (see
    /// [`Pkt::set_extract`]).
    #[inline]
    pub fn set_parser(&mut self, p: Option<&Arc<dyn Parse>>) {
        let same = match (p, &self.parser) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        if !same {
            self.parser = p.cloned();
        }
    }

    /// Make this the packet `data` received with `meta` (parsed); false if
    /// the frame does not fit.
    #[inline]
    pub fn load(&mut self, data: &[u8], meta: Meta) -> bool {
        if self.buf.load(data).is_err() {
            return false;
        }
        self.adopt(meta);
        true
    }

    /// Make the frame already in [`Pkt::buf`] (copied in by
    /// [`Pkt::load`], or swapped in by the caller, see
    /// `walk::burst_lent`) the packet received with `meta` (parsed).
    #[inline]
    pub fn adopt(&mut self, meta: Meta) {
        self.meta = meta;
        self.queue = None;
        self.reparse();
        self.edited = false;
    }

    /// Make the frame already in [`Pkt::buf`] the packet received with
    /// `meta`, whose key and [`ParseInfo`] the caller already wrote into
    /// [`Pkt::key`] and [`Pkt::info`] (a raw-header cache hit: what this
    /// frame's parse gives, see [`Pkt::parse_extent`]).
    #[inline]
    pub fn adopt_parsed(&mut self, meta: Meta) {
        self.meta = meta;
        self.queue = None;
        self.edited = false;
        self.stale = false;
    }

    /// After a parse: how many leading bytes of the frame it may have read
    /// (the fixed parser's and the extract program's extents, see
    /// [`sluice_packet::parse::extent`]), or what a front end's own
    /// parser said ([`Parse::parse`]); `None` when not known.
    #[inline]
    pub fn parse_extent(&self) -> Option<usize> {
        if self.parser.is_some() {
            return Some(self.parser_extent).filter(|&x| x != usize::MAX);
        }
        let fixed = sluice_packet::parse::extent(&self.info);
        Some(self.extract.as_ref().map_or(fixed, |x| fixed.max(x.extent(&self.info))))
    }

    /// Make this a copy of `other` (its key and parse need no redoing);
    /// false if the frame does not fit.
    pub fn copy_of(&mut self, other: &Pkt) -> bool {
        if self.buf.load(other.data()).is_err() {
            return false;
        }
        self.set_extract(other.extract.as_ref());
        self.set_parser(other.parser.as_ref());
        self.meta = other.meta;
        self.key = other.key;
        self.info = other.info;
        self.parser_extent = other.parser_extent;
        self.queue = other.queue;
        self.edited = other.edited;
        self.stale = other.stale;
        true
    }

    #[inline]
    pub fn data(&self) -> &[u8] {
        self.buf.data()
    }

    /// Parse the bytes again (key and offsets), then capture the extract
    /// program's windows.
    pub fn reparse(&mut self) {
        let data = self.buf.data();
        if let Some(p) = &self.parser {
            self.parser_extent = p.parse(data, &self.meta, &mut self.key, &mut self.info);
        } else {
            parse_into(data, &self.meta, &mut self.key, &mut self.info);
            if let Some(x) = &self.extract {
                x.run(data, &self.info, &mut self.key);
            }
        }
        self.edited = true;
        self.stale = false;
    }

    /// Runs a header-edit op (the core's executor) and keeps the parse in
    /// step: a structural change re-parses at once; a field written in
    /// place leaves the layout (`info`) valid and only marks the key
    /// [`Pkt::stale`].
    #[inline]
    pub fn edit(&mut self, op: &Op) -> Edited {
        let r = crate::op::edit(op, &mut self.buf, &self.info, &mut self.meta);
        if r == Edited::Changed {
            if in_place(op) {
                self.stale = true;
                self.edited = true;
            } else {
                self.reparse();
            }
        }
        r
    }

    /// Brings the key up to date with the bytes (see [`Pkt::stale`]).
    #[inline]
    pub fn fresh(&mut self) {
        if self.stale {
            self.reparse();
        }
    }
}

/// Whether `op` keeps the frame's layout as parsed: a header field written
/// in place, a pipeline field (metadata, tunnel id) that lives beside the
/// frame (see [`set_field_effect`]), or a TTL set or decrement (TTLs are
/// not key fields, but an extract window may cover one, so the key is
/// still marked stale). Copying TTLs in or out, and every other edit, is
/// left to a full re-parse.
#[inline]
pub fn in_place(op: &Op) -> bool {
    match op {
        Op::SetField { field, .. } => {
            !matches!(set_field_effect(*field), SetFieldEffect::Structural)
        }
        Op::SetNwTtl(_) | Op::DecNwTtl | Op::SetMplsTtl(_) | Op::DecMplsTtl => true,
        _ => false,
    }
}
