//! One client-side OpenFlow 1.3 connection for `sluice ctl`.
//!
//! # What
//! [`Target`] names the switch (`tcp:IP[:PORT]`, `unix:PATH`); [`Conn`]
//! connects to it, negotiates OpenFlow 1.3 with HELLO (OpenFlow 1.3.5
//! §6.3.1: any other outcome is an error that says what the switch
//! offered), and then offers the few exchanges a command-line client needs:
//! a pipelined batch of modifications followed by one barrier
//! ([`Conn::send_batch`], [`Conn::barrier`]), a request with one reply
//! ([`Conn::transact`]), a multipart request whose replies are collected
//! until one arrives without `OFPMPF_REPLY_MORE` ([`Conn::multipart`]), and
//! the raw stream of incoming messages ([`Conn::recv_until`]) for
//! `monitor`.
//!
//! # Design
//! Blocking std I/O and one reader thread. The reader frames the byte
//! stream with [`sluice_ofp::message::frame`], decodes each message,
//! answers `OFPT_ECHO_REQUEST` itself (so a long `monitor` or a slow
//! barrier never loses the connection to the switch's keep-alive probe) and
//! hands everything else to the main thread over a channel. Because the
//! reader always drains the socket, the main thread can write a batch of
//! any size without waiting for replies and without risking a deadlock
//! where both sides block on full socket buffers.
//!
//! # Bounds
//! The reader holds at most one partial message (OpenFlow lengths are 16
//! bits) plus one read chunk; what it queues is what the switch sent.
//! Every wait has the command's deadline if one was given, and connecting
//! is bounded by 10 s without one. Closing the connection (drop) shuts the
//! socket down, which ends the reader.

use anyhow::{anyhow, bail, Result};
use sluice_ofp::consts::{OFP_VERSION, SLUICE_EXPERIMENTER_ID};
use sluice_ofp::filterprog;
use sluice_ofp::message::{frame, ErrorMsg, Header, Hello, Message};
use sluice_ofp::multipart::{
    Limits, MultipartReply, MultipartRequest, MultipartRequestBody, Reassembler,
};
use sluice_ofp::print::{print_hex_stream, print_message};
use sluice_ofp::ErrorCode;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The IANA OpenFlow port, used when a `tcp:` target gives none.
pub const OFP_TCP_PORT: u16 = 6653;

/// Bound on connecting when the command has no deadline.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Writes are gathered into chunks of this size.
const WRITE_CHUNK: usize = 256 * 1024;

/// Where the switch listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `tcp:HOST[:PORT]`; an IPv6 address is written in brackets.
    Tcp { host: String, port: u16 },
    /// `unix:PATH`.
    Unix(PathBuf),
}

impl Target {
    /// Parse `tcp:HOST[:PORT]`, `tcp:[V6ADDR][:PORT]` or `unix:PATH`.
    pub fn parse(s: &str) -> Result<Target, String> {
        if let Some(p) = s.strip_prefix("unix:") {
            if p.is_empty() {
                return Err(format!("`{s}`: unix: needs a socket path"));
            }
            return Ok(Target::Unix(PathBuf::from(p)));
        }
        let Some(rest) = s.strip_prefix("tcp:") else {
            return Err(format!("`{s}` is not a target: use tcp:IP[:PORT] or unix:PATH"));
        };
        let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
            let Some((h, after)) = v6.split_once(']') else {
                return Err(format!("`{s}`: missing `]` after the IPv6 address"));
            };
            match after {
                "" => (h, None),
                p => match p.strip_prefix(':') {
                    Some(p) => (h, Some(p)),
                    None => return Err(format!("`{s}`: expected `:PORT` after `]`")),
                },
            }
        } else {
            match rest.split_once(':') {
                Some((_, p)) if p.contains(':') => {
                    return Err(format!(
                        "`{s}`: write an IPv6 address in brackets: tcp:[ADDR]:PORT"
                    ))
                }
                Some((h, p)) => (h, Some(p)),
                None => (rest, None),
            }
        };
        if host.is_empty() {
            return Err(format!("`{s}`: missing host"));
        }
        let port = match port {
            None => OFP_TCP_PORT,
            Some(p) => p.parse().map_err(|_| format!("`{s}`: `{p}` is not a TCP port"))?,
        };
        Ok(Target::Tcp { host: host.to_string(), port })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Tcp { host, port } if host.contains(':') => write!(f, "tcp:[{host}]:{port}"),
            Target::Tcp { host, port } => write!(f, "tcp:{host}:{port}"),
            Target::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// A connected socket of either kind.
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }

    fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_write_timeout(t),
            Stream::Unix(s) => s.set_write_timeout(t),
        }
    }

    fn shutdown(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
        };
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}

/// One message from the switch: its header, its bytes and its decoding
/// (a decode failure is kept, not dropped, so it can be shown).
#[derive(Clone, Debug)]
pub struct Received {
    pub header: Header,
    pub raw: Vec<u8>,
    pub msg: Result<Message, ErrorCode>,
}

impl Received {
    /// The message in ovs-ofctl's words (a decode failure as a hex dump
    /// with the error name).
    pub fn print(&self) -> String {
        match &self.msg {
            Ok(m) if self.header.version == OFP_VERSION => print_message(self.header.xid, m),
            _ => print_hex_stream(&self.raw),
        }
    }

    /// The error if this is an `OFPT_ERROR`.
    pub fn error(&self) -> Option<&ErrorMsg> {
        match &self.msg {
            Ok(Message::Error(e)) => Some(e),
            _ => None,
        }
    }
}

/// `OFPET_* OFPxxx_*` names of an error, e.g.
/// `OFPET_BAD_INSTRUCTION OFPBIC_BAD_TABLE_ID`; one of sluice's own
/// experimenter errors by its `SLICFPC_*` name and its text.
pub fn error_names(e: &ErrorMsg) -> String {
    if let Some(s) = sluice_error(e) {
        return s;
    }
    match e {
        ErrorMsg::Standard { code, .. } => match code.names() {
            Some((ty, Some(c))) => format!("{ty} {c}"),
            Some((ty, None)) => format!("{ty} code={}", code.code),
            None => format!("type={} code={}", code.ty, code.code),
        },
        ErrorMsg::Experimenter { exp_type, experimenter, .. } => {
            format!("OFPET_EXPERIMENTER experimenter=0x{experimenter:08x} exp_type={exp_type}")
        }
    }
}

/// `SLICFPC_NAME: text` for one of sluice's experimenter errors (filter
/// programs, `docs/EXPERIMENTER.md`) of a known code; `None` for any other.
pub fn sluice_error(e: &ErrorMsg) -> Option<String> {
    let ErrorMsg::Experimenter { exp_type, experimenter, data } = e else { return None };
    if *experimenter != SLUICE_EXPERIMENTER_ID {
        return None;
    }
    let name = filterprog::err_name(*exp_type)?;
    let (text, _request) = filterprog::error_text(data);
    Some(format!("{name}: {text}"))
}

/// The switch answered a request with `OFPT_ERROR`.
#[derive(Debug)]
pub struct SwitchError {
    /// e.g. `tcp:127.0.0.1:6653: the switch rejected the flow-mod`.
    pub context: String,
    pub reply: Received,
}

impl fmt::Display for SwitchError {
    /// The context, the error's names and the switch's copy of the
    /// request; for sluice's own errors the name and the switch's text
    /// say it all (the echoed request is a fragment of bytes), so one line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.reply.error().and_then(sluice_error) {
            return write!(f, "{}: {line}", self.context);
        }
        let names = self.reply.error().map(error_names).unwrap_or_default();
        write!(f, "{}: {names}\n{}", self.context, self.reply.print())
    }
}

impl std::error::Error for SwitchError {}

enum Event {
    Msg(Received),
    Closed(String),
}

/// An OpenFlow 1.3 session with a switch; see the module docs.
pub struct Conn {
    target: Target,
    writer: Arc<Mutex<Stream>>,
    rx: Receiver<Event>,
    next_xid: u32,
    deadline: Option<Instant>,
    closed: Option<String>,
}

fn remaining(deadline: Option<Instant>) -> Option<Duration> {
    deadline.map(|d| d.saturating_duration_since(Instant::now()))
}

impl Conn {
    /// Connect to `target` and negotiate OpenFlow 1.3. Every later wait
    /// ends at `deadline` (if given) with an error naming the target.
    pub fn connect(target: &Target, deadline: Option<Instant>) -> Result<Conn> {
        let stream =
            Self::open(target, deadline).map_err(|e| anyhow!("cannot connect to {target}: {e}"))?;
        let reader = stream.try_clone().map_err(|e| anyhow!("{target}: {e}"))?;
        let writer = Arc::new(Mutex::new(stream));
        let (tx, rx) = mpsc::channel();
        let echo = Arc::clone(&writer);
        std::thread::Builder::new()
            .name("ctl-reader".into())
            .spawn(move || read_loop(reader, tx, echo))
            .map_err(|e| anyhow!("cannot start the reader thread: {e}"))?;
        let mut conn =
            Conn { target: target.clone(), writer, rx, next_xid: 1, deadline, closed: None };
        conn.hello()?;
        Ok(conn)
    }

    fn open(target: &Target, deadline: Option<Instant>) -> io::Result<Stream> {
        let limit = remaining(deadline).unwrap_or(CONNECT_TIMEOUT).min(CONNECT_TIMEOUT);
        match target {
            Target::Unix(p) => Ok(Stream::Unix(UnixStream::connect(p)?)),
            Target::Tcp { host, port } => {
                let addrs: Vec<SocketAddr> = (host.as_str(), *port).to_socket_addrs()?.collect();
                let mut last = io::Error::new(io::ErrorKind::NotFound, "no address for the host");
                for a in addrs {
                    if limit.is_zero() {
                        return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out"));
                    }
                    match TcpStream::connect_timeout(&a, limit) {
                        Ok(s) => {
                            let _ = s.set_nodelay(true);
                            return Ok(Stream::Tcp(s));
                        }
                        Err(e) => last = e,
                    }
                }
                Err(last)
            }
        }
    }

    /// The target this connection talks to.
    pub fn target(&self) -> &Target {
        &self.target
    }

    fn hello(&mut self) -> Result<()> {
        self.send(&Message::Hello(Hello::with_versions(&[OFP_VERSION])))?;
        let r = self.recv()?;
        let t = self.target.clone();
        match &r.msg {
            Ok(Message::Hello(h)) => match h.negotiate(r.header.version, &[OFP_VERSION]) {
                Some(OFP_VERSION) => Ok(()),
                _ => {
                    let offered = match h.bitmap() {
                        Some(bm) => {
                            let v: Vec<String> = (0..=255u8)
                                .filter(|&v| sluice_ofp::message::bitmap_has(bm, v))
                                .map(|v| format!("0x{v:02x}"))
                                .collect();
                            format!("versions {}", v.join(", "))
                        }
                        None => format!("version 0x{:02x}", r.header.version),
                    };
                    let text = format!("We support version 0x04, you support {offered}.");
                    let err = Message::Error(ErrorMsg::Standard {
                        code: ErrorCode::HFC_INCOMPATIBLE,
                        data: text.into_bytes(),
                    });
                    let _ = self.send(&err);
                    bail!("{t}: the switch does not speak OpenFlow 1.3 (it offers {offered})")
                }
            },
            Ok(Message::Error(e)) => {
                bail!("{t}: the switch refused the connection: {}\n{}", error_names(e), r.print())
            }
            _ => bail!("{t}: expected OFPT_HELLO from the switch, got:\n{}", r.print()),
        }
    }

    /// A fresh transaction id.
    pub fn xid(&mut self) -> u32 {
        let x = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(1).max(1);
        x
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        let t = &self.target;
        let mut w = self.writer.lock().map_err(|_| anyhow!("{t}: writer lock poisoned"))?;
        if self.deadline.is_some() {
            let left = remaining(self.deadline).unwrap_or_default().max(Duration::from_millis(1));
            let _ = w.set_write_timeout(Some(left));
        }
        w.write_all(bytes).map_err(|e| match e.kind() {
            // A write timeout shows up as EAGAIN: say what it means.
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                anyhow!("{t}: timed out sending (the switch stopped reading; see --timeout)")
            }
            _ => anyhow!("{t}: cannot send: {e}"),
        })
    }

    fn encode(&self, msg: &Message, xid: u32) -> Result<Vec<u8>> {
        msg.try_encode(xid).map_err(|e| {
            anyhow!("{}: message too long for OpenFlow (over 65535 bytes): {e}", self.target)
        })
    }

    /// Send one message; returns its xid.
    pub fn send(&mut self, msg: &Message) -> Result<u32> {
        let xid = self.xid();
        let bytes = self.encode(msg, xid)?;
        self.write(&bytes)?;
        Ok(xid)
    }

    /// Send `msgs` back to back without waiting for anything; their xids
    /// are consecutive from the returned first one (wrapping past zero is
    /// avoided by the caller's batch being far below 2^32).
    pub fn send_batch<'a, I>(&mut self, msgs: I) -> Result<u32>
    where
        I: IntoIterator<Item = &'a Message>,
        I::IntoIter: ExactSizeIterator,
    {
        let msgs = msgs.into_iter();
        let n = u32::try_from(msgs.len()).map_err(|_| anyhow!("too many messages in one batch"))?;
        if self.next_xid.checked_add(n.saturating_add(1)).is_none() {
            self.next_xid = 1;
        }
        let first = self.next_xid;
        let mut chunk = Vec::with_capacity(WRITE_CHUNK + 1024);
        for m in msgs {
            let xid = self.xid();
            chunk.extend_from_slice(&self.encode(m, xid)?);
            if chunk.len() >= WRITE_CHUNK {
                self.write(&chunk)?;
                chunk.clear();
            }
        }
        if !chunk.is_empty() {
            self.write(&chunk)?;
        }
        Ok(first)
    }

    /// The next message, waiting until the deadline; `Ok(None)` when
    /// `until` passes first.
    pub fn recv_until(&mut self, until: Option<Instant>) -> Result<Option<Received>> {
        if let Some(why) = &self.closed {
            bail!("{}: {why}", self.target);
        }
        let ev = match until {
            None => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(d) => self.rx.recv_timeout(d.saturating_duration_since(Instant::now())),
        };
        match ev {
            Ok(Event::Msg(r)) => Ok(Some(r)),
            Ok(Event::Closed(why)) => {
                self.closed = Some(why.clone());
                bail!("{}: {why}", self.target)
            }
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => bail!("{}: connection lost", self.target),
        }
    }

    /// The next message; the command's deadline passing is an error.
    pub fn recv(&mut self) -> Result<Received> {
        match self.recv_until(self.deadline)? {
            Some(r) => Ok(r),
            None => bail!("{}: timed out waiting for the switch", self.target),
        }
    }

    /// Send a barrier and wait for its reply. Returns every `OFPT_ERROR`
    /// that arrived before it (OpenFlow answers in order, so these are the
    /// errors for everything sent before the barrier).
    pub fn barrier(&mut self) -> Result<Vec<Received>> {
        let xid = self.send(&Message::BarrierRequest)?;
        let mut errors = Vec::new();
        loop {
            let r = self.recv()?;
            match &r.msg {
                Ok(Message::BarrierReply) if r.header.xid == xid => return Ok(errors),
                Ok(Message::Error(_)) => errors.push(r),
                _ => {}
            }
        }
    }

    /// Send `msg` and wait for the reply with the same xid. An
    /// `OFPT_ERROR` answer is a [`SwitchError`].
    pub fn transact(&mut self, msg: &Message, what: &str) -> Result<Received> {
        let xid = self.send(msg)?;
        loop {
            let r = self.recv()?;
            if r.header.xid != xid {
                continue;
            }
            if r.error().is_some() {
                let context = format!("{}: the switch rejected {what}", self.target);
                return Err(SwitchError { context, reply: r }.into());
            }
            return Ok(r);
        }
    }

    /// Send a multipart request and collect its replies until one comes
    /// without `OFPMPF_REPLY_MORE`; returns the joined reply and its xid.
    pub fn multipart(
        &mut self,
        body: MultipartRequestBody,
        what: &str,
    ) -> Result<(u32, MultipartReply)> {
        let xid = self.send(&Message::MultipartRequest(MultipartRequest { flags: 0, body }))?;
        // One xid; the switch's reply may be large (100k flows is ~10 MB).
        let limits = Limits { max_xids: 1, max_parts: 1 << 20, max_bytes: 1 << 30 };
        let mut re: Reassembler<MultipartReply> = Reassembler::new(limits);
        loop {
            let r = self.recv()?;
            if r.header.xid != xid {
                continue;
            }
            match r.msg {
                Ok(Message::MultipartReply(part)) => {
                    let t = &self.target;
                    match re.feed(xid, part) {
                        Ok(Some(done)) => return Ok((xid, done)),
                        Ok(None) => {}
                        Err(e) => bail!("{t}: bad multipart reply to {what}: {e}"),
                    }
                }
                Ok(Message::Error(_)) => {
                    let context = format!("{}: the switch rejected {what}", self.target);
                    return Err(SwitchError { context, reply: r }.into());
                }
                _ => bail!("{}: unexpected reply to {what}:\n{}", self.target, r.print()),
            }
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Ok(w) = self.writer.lock() {
            w.shutdown();
        }
    }
}

/// The reader thread: frame, decode, answer echo requests, forward the
/// rest. Ends when the socket closes or cannot be framed.
fn read_loop(mut s: Stream, tx: Sender<Event>, echo: Arc<Mutex<Stream>>) {
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 17);
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let mut pos = 0;
        loop {
            let rest = buf.get(pos..).unwrap_or_default();
            let n = match frame(rest) {
                None => break,
                Some(Ok(n)) => n,
                Some(Err(_)) => {
                    let _ = tx.send(Event::Closed(
                        "the switch sent a message header with length below 8; stream lost".into(),
                    ));
                    return;
                }
            };
            let raw = rest.get(..n).unwrap_or_default().to_vec();
            pos += n;
            let (header, msg) = match Message::parse_with_header(&raw) {
                Ok((h, m)) => (h, Ok(m)),
                Err(e) => match Header::parse(&raw) {
                    Ok(h) => (h, Err(e)),
                    Err(_) => continue,
                },
            };
            if let Ok(Message::EchoRequest(data)) = &msg {
                let reply = Message::EchoReply(data.clone()).encode(header.xid);
                if let Ok(mut w) = echo.lock() {
                    let _ = w.write_all(&reply);
                }
                continue;
            }
            if tx.send(Event::Msg(Received { header, raw, msg })).is_err() {
                return;
            }
        }
        buf.drain(..pos.min(buf.len()));
        match s.read(&mut chunk) {
            Ok(0) => {
                let _ = tx.send(Event::Closed("the switch closed the connection".into()));
                return;
            }
            Ok(n) => buf.extend_from_slice(chunk.get(..n).unwrap_or_default()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                let _ = tx.send(Event::Closed(format!("connection lost: {e}")));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(
            Target::parse("tcp:127.0.0.1:6654"),
            Ok(Target::Tcp { host: "127.0.0.1".into(), port: 6654 })
        );
        assert_eq!(
            Target::parse("tcp:10.0.0.1"),
            Ok(Target::Tcp { host: "10.0.0.1".into(), port: 6653 })
        );
        assert_eq!(
            Target::parse("tcp:[::1]:7000"),
            Ok(Target::Tcp { host: "::1".into(), port: 7000 })
        );
        assert_eq!(Target::parse("unix:/run/s.sock"), Ok(Target::Unix("/run/s.sock".into())));
        assert_eq!(Target::parse("tcp:[::1]:7000").unwrap().to_string(), "tcp:[::1]:7000");
        assert_eq!(Target::parse("tcp:h").unwrap().to_string(), "tcp:h:6653");
        for bad in ["br0", "tcp:", "tcp:1.2.3.4:x", "tcp:::1", "tcp:[::1", "unix:", "ssl:1.2.3.4"] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn error_names_spell_type_and_code() {
        let e = ErrorMsg::Standard { code: ErrorCode::new(3, 2), data: vec![] };
        assert_eq!(error_names(&e), "OFPET_BAD_INSTRUCTION OFPBIC_BAD_TABLE_ID");
        let e = ErrorMsg::Standard { code: ErrorCode::new(1, 99), data: vec![] };
        assert_eq!(error_names(&e), "OFPET_BAD_REQUEST code=99");
        let e = ErrorMsg::Standard { code: ErrorCode::new(77, 1), data: vec![] };
        assert_eq!(error_names(&e), "type=77 code=1");
        let Message::Error(e) =
            filterprog::error_msg(filterprog::err::PROG_IN_USE, "program 7 is named", &[4, 4])
        else {
            panic!()
        };
        assert_eq!(error_names(&e), "SLICFPC_PROG_IN_USE: program 7 is named");
        let e = ErrorMsg::Experimenter {
            exp_type: 999,
            experimenter: SLUICE_EXPERIMENTER_ID,
            data: vec![],
        };
        assert_eq!(error_names(&e), "OFPET_EXPERIMENTER experimenter=0x534c4943 exp_type=999");
    }
}
