//! # sluice-core: the protocol-neutral forwarding core
//!
//! What every front end (OpenFlow today; POF fields, filter-program guards
//! and P4 programs next) lowers into, and the only place the forwarding
//! machinery lives once the move described in ARCHITECTURE.md ("Target
//! map") is complete. It knows no control protocol: nothing here names an
//! OpenFlow message, match field or action (the boundary test in
//! `crates/sluice/tests/boundaries.rs` fails if this crate ever reaches
//! `sluice-ofp`).
//!
//! What it holds so far:
//! - [`graph`]: the control graph a walk follows (apply a table, then go
//!   on by the entry's next table, hit or miss, or the entry's action;
//!   branch on key bits); OpenFlow's goto-table is its simplest form.
//! - [`guard`]: predicates rules carry after their mask/value match, and
//!   the per-packet record and replay of their results that keeps caches
//!   exact and runs no guard twice for one packet.
//! - [`op`]: the op IR front ends lower their actions into, and the
//!   executor of its header edits.
//! - [`keyop`]: register programs over key words, for front ends whose
//!   key is their header vector (P4): actions and computed conditions.
//! - [`window`]: protocol-oblivious window edits (POF's `{offset,
//!   length}` in bits): set, modify, insert, remove, Internet checksum and
//!   copy to the metadata, at any bit position ([`fuzz_window`] checks
//!   them against a bit-by-bit model).
//! - [`publish`]: one writer, many lock-free readers of a pipeline
//!   version (left-right copies brought up to date by replaying the
//!   master's change log), and the wait a barrier needs.
//! - [`tally`]: counters kept per worker shard, merged on read.
//! - [`upcall`]: what workers hand up to the control plane, as neutral
//!   values the front end turns into its messages.
//! - [`cache`]: the exact-match and megaflow caches a worker keeps in
//!   front of the tables, holding resolved chains, guard results and the
//!   front end's composed programs; the recorder that decides what a
//!   slow-path walk may cache.
//! - [`pkt`]: a packet on its way through a walk (buffer, metadata, key,
//!   parse), re-parsed only when an edit changed the frame's layout.
//! - [`walk`]: the fast walk every front end's fast configurations run:
//!   the control graph, lookups with guards, entries' ops, the caches in
//!   front, composed programs and staged bursts, generic over the
//!   front end's tables and forwarding ([`walk::Frontend`]), and the
//!   worker state it keeps.
//! - [`adapt`]: the governor of [`walk::CacheMode::Auto`], which keeps
//!   whichever caches this worker measured to pay on its traffic.
//! - [`prefetch()`]: the software prefetch that staged bursts use.
//! - [`layout`]: the key layout at run time, the fixed parser's fields
//!   plus windows declared when a pipeline is built, each with a value
//!   slot in the reserved words and a presence bit from a second presence
//!   area; and [`extract`]: the program that fills those windows from the
//!   frame after the fixed parser ([`fuzz_extract`] checks it).
//!
//! Still the front end's: the tables themselves (OpenFlow's flow tables
//! with their index and compiled code implement [`walk::Table`]), ports,
//! groups, meters and the making of upcalls (the forwarding ops'
//! executor, [`walk::Frontend::forward`]).
//!
//! ## Invariants
//! - No control protocol (see above).
//! - No I/O and no threads of its own. The publisher's barrier wait
//!   yields and sleeps on the caller's thread, bounding a wait; the cache
//!   governor ([`adapt`]) reads the cycle counter to choose which caches
//!   a worker uses, which changes speed, never what a packet gets. No
//!   clock decides forwarding.
#![deny(unsafe_code)]

pub mod adapt;
pub mod cache;
pub mod extract;
pub mod graph;
pub mod guard;
pub mod keyop;
pub mod layout;
pub mod op;
pub mod pkt;
mod prefetch;
pub mod publish;
pub mod tally;
pub mod upcall;
pub mod walk;
pub mod window;

pub use extract::fuzz_extract;
pub use prefetch::prefetch;
pub use window::fuzz_window;
