//! One controller connection: HELLO exchange, framing, the inactivity
//! probe, and the socket reads and writes. Transport-agnostic (plain TCP
//! or TLS): anything `AsyncRead + AsyncWrite`.
//!
//! ## Life of a connection
//! 1. Send our HELLO (version 0x04 and a version bitmap with only 0x04).
//! 2. Read the peer's first message within `probe_interval`. It must be a
//!    HELLO; negotiation follows §6.3.1 ([`Hello::negotiate`]). No common
//!    version → `OFPET_HELLO_FAILED / OFPHFC_INCOMPATIBLE` with an ASCII
//!    explanation, then close. A first message that is not a HELLO gets
//!    `OFPET_HELLO_FAILED / OFPHFC_EPERM`.
//! 3. Register with the core, then run the reader and the writer side by
//!    side until either ends, the core kills the connection (queue
//!    overflow) or the agent shuts down.
//!
//! ## Reader
//! Frames the byte stream with [`frame`]; each complete message is parsed
//! and passed to the core in arrival order (awaiting the core's bounded
//! input queue: a controller that floods the switch is slowed down, never
//! the reverse). Undecodable messages go to the core too, so their error
//! replies keep their place in the reply order. A header length below 8
//! cannot be resynchronised and closes the connection.
//!
//! ## Inactivity probe
//! Anything received counts as life. After `probe_interval` of silence an
//! ECHO_REQUEST is queued; after another `probe_interval` of silence the
//! connection is dropped. ECHO_REPLYs are consumed here.
//!
//! ## Writer
//! Drains the bounded outbound queue, coalescing what is already queued
//! into one write.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use sluice_ofp::consts::OFP_VERSION;
use sluice_ofp::error::ErrorCode;
use sluice_ofp::message::{error_reply, frame, msg_type, ErrorMsg, Header, Hello, Message};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch, Notify};
use tokio::time::{timeout_at, Instant};
use tracing::{debug, info};

use crate::config::{AgentConfig, Endpoint, Target};
use crate::core::CoreIn;
use crate::roles::ConnId;
use crate::Shared;

/// Largest OpenFlow message (the header length is 16 bits).
const MAX_MSG: usize = 65_535;
/// Frames coalesced into one write at most.
const MAX_BATCH: usize = 64;

/// What every connection task needs.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub cfg: Arc<AgentConfig>,
    pub shared: Arc<Shared>,
    pub core: mpsc::Sender<CoreIn>,
    pub shutdown: watch::Receiver<bool>,
}

/// How a connection ended.
#[derive(Debug)]
pub(crate) struct Ended {
    /// The HELLO exchange completed (used to reset reconnect backoff).
    pub established: bool,
    pub reason: String,
}

/// Reads whole OpenFlow messages from a stream.
struct MsgReader<R> {
    r: R,
    buf: Vec<u8>,
    /// Bytes of `buf` already handed out.
    start: usize,
}

enum Read {
    Msg(Vec<u8>),
    Eof,
    Timeout,
}

impl<R: AsyncRead + Unpin> MsgReader<R> {
    fn new(r: R) -> Self {
        MsgReader { r, buf: Vec::with_capacity(16 * 1024), start: 0 }
    }

    /// The next complete message, or `Timeout` if `deadline` passes first.
    /// Cancel-safe: bytes read stay in the buffer.
    async fn next(&mut self, deadline: Instant) -> Result<Read, String> {
        let mut chunk = [0u8; 8192];
        // Each iteration either returns or appends at least one byte;
        // `buf` never holds more than one maximal message plus one chunk.
        loop {
            let pending = self.buf.get(self.start..).unwrap_or_default();
            match frame(pending) {
                Some(Ok(n)) => {
                    let m = pending.get(..n).unwrap_or_default().to_vec();
                    self.start += n;
                    if self.start == self.buf.len() {
                        self.buf.clear();
                        self.start = 0;
                    }
                    return Ok(Read::Msg(m));
                }
                Some(Err(_)) => return Err("header length below 8: stream cannot be framed".into()),
                None => {}
            }
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            debug_assert!(self.buf.len() < MAX_MSG);
            let n = match timeout_at(deadline, self.r.read(&mut chunk)).await {
                Err(_) => return Ok(Read::Timeout),
                Ok(Err(e)) => return Err(format!("read: {e}")),
                Ok(Ok(0)) => return Ok(Read::Eof),
                Ok(Ok(n)) => n,
            };
            self.buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
        }
    }
}

/// Run one connection to the end. `controller`: whether it counts for the
/// fail mode.
pub(crate) async fn run<S>(
    ctx: Ctx,
    stream: S,
    peer: Endpoint,
    target: Target,
    controller: bool,
) -> Ended
where
    S: AsyncRead + AsyncWrite + Send + Unpin,
{
    let (r, mut w) = tokio::io::split(stream);
    let mut reader = MsgReader::new(r);
    let ended = |established, reason: String| Ended { established, reason };
    let hello = Message::Hello(Hello::with_versions(&[OFP_VERSION])).encode(0);
    if let Err(e) = w.write_all(&hello).await {
        return ended(false, format!("write hello: {e}"));
    }
    let deadline = Instant::now() + ctx.cfg.probe_interval;
    let first = match reader.next(deadline).await {
        Ok(Read::Msg(m)) => m,
        Ok(Read::Eof) => return ended(false, "closed before hello".into()),
        Ok(Read::Timeout) => return ended(false, "no hello in time".into()),
        Err(e) => return ended(false, e),
    };
    if let Err(reason) = negotiate(&first, &mut w).await {
        info!(%peer, %target, %reason, "hello failed");
        return ended(false, reason);
    }

    let id: ConnId = ctx.shared.next_id.fetch_add(1, Relaxed);
    let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(ctx.cfg.queue_len.max(1));
    let kill = Arc::new(Notify::new());
    let open =
        CoreIn::Open { id, peer, target, controller, out: out_tx.clone(), kill: kill.clone() };
    if ctx.core.send(open).await.is_err() {
        return ended(true, "agent stopped".into());
    }
    let mut shutdown = ctx.shutdown.clone();
    let reason = tokio::select! {
        r = read_loop(&ctx, id, &mut reader, &out_tx) => r,
        r = write_loop(&mut w, out_rx) => r,
        _ = kill.notified() => "disconnected by the agent".to_string(),
        _ = wait_true(&mut shutdown) => "agent shutting down".to_string(),
    };
    let _ = ctx.core.send(CoreIn::Closed { id, reason: reason.clone() }).await;
    let _ = w.shutdown().await;
    ended(true, reason)
}

async fn wait_true(rx: &mut watch::Receiver<bool>) {
    // Ends when the value becomes true or the sender is gone.
    let _ = rx.wait_for(|v| *v).await;
}

/// Check the peer's first message; on failure answer it and say why.
async fn negotiate<W: AsyncWrite + Unpin>(first: &[u8], w: &mut W) -> Result<(), String> {
    let xid = Header::parse(first).map(|h| h.xid).unwrap_or(0);
    let fail = |code: ErrorCode, text: String| {
        (
            Message::Error(ErrorMsg::Standard { code, data: text.clone().into_bytes() })
                .encode(xid),
            text,
        )
    };
    let (bytes, why) = match Message::parse_with_header(first) {
        Ok((h, Message::Hello(hello))) => match hello.negotiate(h.version, &[OFP_VERSION]) {
            Some(_) => return Ok(()),
            None => fail(
                ErrorCode::HFC_INCOMPATIBLE,
                format!(
                    "this switch supports only OpenFlow 1.3 (version 0x04); peer sent version {:#04x}{}",
                    h.version,
                    if hello.bitmap().is_some() { " with a version bitmap" } else { "" }
                ),
            ),
        },
        Ok((h, _)) => fail(ErrorCode::HFC_EPERM, format!("expected HELLO, got message type {}", h.msg_type)),
        Err(code) => {
            let is_hello = Header::parse(first).is_ok_and(|h| h.msg_type == msg_type::HELLO);
            if is_hello {
                (error_reply(code, first).encode(xid), format!("malformed hello: {code:?}"))
            } else {
                fail(ErrorCode::HFC_EPERM, "expected HELLO".into())
            }
        }
    };
    let _ = w.write_all(&bytes).await;
    let _ = w.flush().await;
    Err(why)
}

async fn read_loop<R: AsyncRead + Unpin>(
    ctx: &Ctx,
    id: ConnId,
    reader: &mut MsgReader<R>,
    out: &mpsc::Sender<Vec<u8>>,
) -> String {
    let interval = ctx.cfg.probe_interval.max(Duration::from_millis(1));
    let mut last_rx = Instant::now();
    let mut probed = false;
    let mut echo_xid: u32 = 0x5100_0000;
    loop {
        let deadline = if probed { last_rx + interval * 2 } else { last_rx + interval };
        let raw = match reader.next(deadline).await {
            Ok(Read::Msg(m)) => m,
            Ok(Read::Eof) => return "closed by peer".into(),
            Err(e) => return e,
            Ok(Read::Timeout) => {
                if probed {
                    ctx.shared.counters.probe_timeouts.fetch_add(1, Relaxed);
                    return format!("no reply to inactivity probe in {interval:?}");
                }
                echo_xid = echo_xid.wrapping_add(1);
                // A full queue means the writer is stuck; the probe
                // timeout will then end the connection.
                let _ = out.try_send(Message::EchoRequest(Vec::new()).encode(echo_xid));
                probed = true;
                debug!(conn = id, "inactivity probe sent");
                continue;
            }
        };
        last_rx = Instant::now();
        probed = false;
        let input = match Message::parse(&raw) {
            Ok((_, Message::EchoReply(_))) => continue,
            Ok((xid, msg)) => CoreIn::Msg { id, xid, msg, raw },
            Err(code) => {
                let xid = Header::parse(&raw).map(|h| h.xid).unwrap_or(0);
                CoreIn::Bad { id, xid, code, raw }
            }
        };
        if ctx.core.send(input).await.is_err() {
            return "agent stopped".into();
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(w: &mut W, mut rx: mpsc::Receiver<Vec<u8>>) -> String {
    let mut batch: Vec<u8> = Vec::with_capacity(64 * 1024);
    loop {
        let Some(first) = rx.recv().await else { return "outbound queue closed".into() };
        batch.clear();
        batch.extend_from_slice(&first);
        let mut n = 1;
        while n < MAX_BATCH && batch.len() < 4 * MAX_MSG {
            match rx.try_recv() {
                Ok(m) => batch.extend_from_slice(&m),
                Err(_) => break,
            }
            n += 1;
        }
        if let Err(e) = w.write_all(&batch).await {
            return format!("write: {e}");
        }
        if let Err(e) = w.flush().await {
            return format!("flush: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    }

    #[test]
    fn reader_frames_messages_across_reads() {
        rt().block_on(async {
            // HELLO (8 bytes), ECHO_REQUEST with 2 data bytes, then 3 bytes
            // of an incomplete header.
            let bytes: &[u8] = &[
                0x04, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x01, //
                0x04, 0x02, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x02, 0xbe, 0xef, //
                0x04, 0x00, 0x00,
            ];
            let mut r = MsgReader::new(bytes);
            let Ok(Read::Msg(m)) = r.next(far()).await else { panic!() };
            assert_eq!(m, &bytes[..8]);
            let Ok(Read::Msg(m)) = r.next(far()).await else { panic!() };
            assert_eq!(m, &bytes[8..18]);
            assert!(matches!(r.next(far()).await, Ok(Read::Eof)));
        });
    }

    #[test]
    fn reader_rejects_short_length() {
        rt().block_on(async {
            let bytes: &[u8] = &[0x04, 0x00, 0x00, 0x07, 0, 0, 0, 0];
            let mut r = MsgReader::new(bytes);
            assert!(r.next(far()).await.is_err());
        });
    }

    #[test]
    fn reader_times_out() {
        rt().block_on(async {
            let (a, _b) = tokio::io::duplex(64);
            let mut r = MsgReader::new(a);
            let t = Instant::now() + Duration::from_millis(20);
            assert!(matches!(r.next(t).await, Ok(Read::Timeout)));
        });
    }

    async fn nego(first: &[u8]) -> (Result<(), String>, Vec<u8>) {
        let mut out = Vec::new();
        let r = negotiate(first, &mut out).await;
        (r, out)
    }

    #[test]
    fn hello_negotiation() {
        rt().block_on(async {
            // 1.3 header, no elements.
            assert!(nego(&[0x04, 0, 0, 8, 0, 0, 0, 1]).await.0.is_ok());
            // 1.5 header, bitmap {1, 4}: element type 1, length 8.
            let h = [0x06, 0, 0, 16, 0, 0, 0, 2, 0, 1, 0, 8, 0, 0, 0, 0x12];
            assert!(nego(&h).await.0.is_ok());
            // 1.5 header, bitmap {1, 5}: no common version.
            let h = [0x06, 0, 0, 16, 0, 0, 0, 3, 0, 1, 0, 8, 0, 0, 0, 0x22];
            let (r, out) = nego(&h).await;
            assert!(r.is_err());
            // OFPT_ERROR, xid 3, HELLO_FAILED / INCOMPATIBLE, then text.
            assert_eq!(&out[..1], &[0x04]);
            assert_eq!(&out[1..2], &[0x01]);
            assert_eq!(&out[4..12], &[0, 0, 0, 3, 0, 0, 0, 0]);
            assert!(out.len() > 12);
            // OpenFlow 1.0 header, no bitmap.
            let (r, out) = nego(&[0x01, 0, 0, 8, 0, 0, 0, 4]).await;
            assert!(r.is_err());
            assert_eq!(&out[8..12], &[0, 0, 0, 0]);
            // Not a hello: HELLO_FAILED / EPERM.
            let (r, out) = nego(&[0x04, 5, 0, 8, 0, 0, 0, 5]).await;
            assert!(r.is_err());
            assert_eq!(&out[8..12], &[0, 0, 0, 1]);
        });
    }
}
