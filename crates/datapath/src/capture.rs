//! Port captures: `sluice ctl TARGET capture PORT FILE.pcap` through the
//! control channel (`sluice_ofp::capturemsg`).
//!
//! A capture records what one port receives, as received (before the
//! worker completes partial checksums), until it has `count` frames or
//! `seconds` have passed, whichever comes first. The client starts it and
//! then reads the frames buffered so far, again and again, until a reply
//! says it is done; the client writes the pcap file, so the switch never
//! opens a file on a client's behalf.
//!
//! Cost on the forwarding path: each `PortSlot` has a `capturing` flag;
//! a worker loads it (relaxed) once per received burst and only when it
//! is set takes the capture table's mutex and copies the burst's frames.
//!
//! Bounds: at most [`MAX_CAPTURES`] at once, [`MAX_COUNT`] frames and
//! [`MAX_SECONDS`] each (0 in a request means these), frames cut to
//! `capturemsg::MAX_INCL` bytes, and at most [`MAX_BUFFERED`] bytes
//! waiting to be read per capture (frames beyond are counted as dropped
//! and reported). A capture whose connection closes is discarded. A port
//! that is removed and re-added is a new port: its captures stop getting
//! frames (and end at their deadline).
//!
//! Lock order: `captures` → the port table (read); workers take
//! `captures` without holding any other lock.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant, SystemTime};

use sluice_agent::ConnId;
use sluice_ofp::capturemsg::{
    CaptureReply, CaptureRequest, Record, BAD_CAPTURE, MAX_INCL, MAX_RECORDS_LEN,
};
use sluice_ofp::filterprog::{Decoded, Refusal};
use sluice_ports::RxBuf;

use crate::shared::{lock, Shared};

/// Most captures running at once.
pub const MAX_CAPTURES: usize = 16;
/// Most frames one capture records (and what a count of 0 means).
pub const MAX_COUNT: u32 = 1_000_000;
/// Longest a capture runs (and what 0 seconds means).
pub const MAX_SECONDS: u32 = 3600;
/// Most bytes of frames one capture holds until they are read.
pub const MAX_BUFFERED: usize = 32 << 20;

struct Capture {
    id: u32,
    conn: ConnId,
    port: u32,
    /// Frames still to record.
    left: u32,
    deadline: Instant,
    frames: VecDeque<Record>,
    buffered: usize,
    dropped: u32,
    /// Count reached or deadline passed: nothing more is recorded.
    over: bool,
}

/// Every running capture.
#[derive(Default)]
pub(crate) struct Captures {
    next_id: u32,
    list: Vec<Capture>,
}

impl Shared {
    /// Records a received burst on every capture of `port` (called by a
    /// worker only when the port's `capturing` flag is set).
    pub(crate) fn capture_rx(&self, port: u32, bufs: &[RxBuf]) {
        let now = Instant::now();
        let time_ns = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut caps = lock(&self.captures);
        let mut ended = false;
        for c in caps.list.iter_mut().filter(|c| c.port == port && !c.over) {
            for b in bufs {
                if c.left == 0 || now >= c.deadline {
                    break;
                }
                let f = b.frame();
                let keep = &f[..f.len().min(MAX_INCL)];
                if c.buffered + keep.len() > MAX_BUFFERED {
                    c.dropped = c.dropped.saturating_add(1);
                } else {
                    c.buffered += keep.len();
                    c.frames.push_back(Record {
                        time_ns,
                        orig_len: f.len() as u32,
                        data: keep.to_vec(),
                    });
                }
                c.left -= 1;
            }
            if c.left == 0 || now >= c.deadline {
                c.over = true;
                ended = true;
            }
        }
        if ended {
            self.capture_flags(&caps);
        }
    }

    /// Sets each port's `capturing` flag from the captures still recording.
    fn capture_flags(&self, caps: &Captures) {
        for s in self.ports.read().unwrap_or_else(|e| e.into_inner()).values() {
            let on = caps.list.iter().any(|c| c.port == s.no && !c.over);
            s.capturing.store(on, Relaxed);
        }
    }

    /// Answers a capture request from connection `conn`.
    pub(crate) fn capture_request(
        &self,
        conn: ConnId,
        req: Decoded<CaptureRequest>,
    ) -> Decoded<CaptureReply> {
        let bad = |text: String| Refusal::exp(BAD_CAPTURE, text);
        let mut caps = lock(&self.captures);
        match req? {
            CaptureRequest::Start { port, count, seconds } => {
                if self.slot(port).is_none_or(|s| s.is_gone()) {
                    return Err(bad(format!("no port {port} to capture on")));
                }
                if caps.list.len() >= MAX_CAPTURES {
                    return Err(bad(format!(
                        "{MAX_CAPTURES} captures are running already; wait for one to end"
                    )));
                }
                let count = if count == 0 { MAX_COUNT } else { count.min(MAX_COUNT) };
                let seconds = if seconds == 0 { MAX_SECONDS } else { seconds.min(MAX_SECONDS) };
                caps.next_id = caps.next_id.wrapping_add(1).max(1);
                let id = caps.next_id;
                caps.list.push(Capture {
                    id,
                    conn,
                    port,
                    left: count,
                    deadline: Instant::now() + Duration::from_secs(u64::from(seconds)),
                    frames: VecDeque::new(),
                    buffered: 0,
                    dropped: 0,
                    over: false,
                });
                self.capture_flags(&caps);
                tracing::info!(port, id, count, seconds, "capture started");
                Ok(CaptureReply { id, ..Default::default() })
            }
            CaptureRequest::Read { id } => {
                let Some(i) = caps.list.iter().position(|c| c.id == id && c.conn == conn) else {
                    return Err(bad(format!("no capture {id} on this connection")));
                };
                let c = &mut caps.list[i];
                if !c.over && Instant::now() >= c.deadline {
                    c.over = true;
                }
                let mut records = Vec::new();
                let mut len = 0;
                while let Some(r) = c.frames.front() {
                    if len + r.wire_len() > MAX_RECORDS_LEN {
                        break;
                    }
                    len += r.wire_len();
                    c.buffered -= r.data.len();
                    records.extend(c.frames.pop_front());
                }
                let done = c.over && c.frames.is_empty();
                let reply = CaptureReply { id, done, dropped: c.dropped, records };
                if done {
                    caps.list.remove(i);
                    tracing::info!(id, "capture finished");
                }
                self.capture_flags(&caps);
                Ok(reply)
            }
        }
    }

    /// Discards `conn`'s captures.
    pub(crate) fn capture_conn_closed(&self, conn: ConnId) {
        let mut caps = lock(&self.captures);
        let before = caps.list.len();
        caps.list.retain(|c| c.conn != conn);
        if caps.list.len() != before {
            self.capture_flags(&caps);
        }
    }
}
