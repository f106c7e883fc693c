//! A minimal OpenFlow 1.3 controller for daemon tests: it listens on
//! 127.0.0.1, the switch under test connects to it (`--controller
//! tcp:127.0.0.1:PORT`), and the test speaks decoded messages through
//! [`OfConn`]. Every wait is bounded; the switch's echo requests are
//! answered while waiting.
#![allow(dead_code)]

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use sluice_ofp::message::{flow_mod_command, frame, FeaturesReply, Hello, Message};
use sluice_ofp::ofctl::{parse_flow, Usage};

/// The switch process a test watches while it waits for a connection.
pub trait Watched {
    /// Its exit status, if it has exited.
    fn exited(&mut self) -> Option<ExitStatus>;
    /// Its log so far.
    fn log_text(&self) -> String;
}

/// (Every test with this module has `mod netlab` too.)
impl Watched for crate::netlab::Proc {
    fn exited(&mut self) -> Option<ExitStatus> {
        self.try_wait()
    }

    fn log_text(&self) -> String {
        self.log()
    }
}

/// The controller's passive socket on 127.0.0.1.
pub struct Controller {
    listener: TcpListener,
    pub port: u16,
}

impl Controller {
    /// Listens on `port` (0: any free port); retries a busy port for 5 s
    /// (a restart on the same port).
    pub fn bind(port: u16) -> Controller {
        let deadline = Instant::now() + Duration::from_secs(5);
        let listener = loop {
            match TcpListener::bind(("127.0.0.1", port)) {
                Ok(l) => break l,
                Err(e) if e.kind() == ErrorKind::AddrInUse && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => panic!("controller bind 127.0.0.1:{port}: {e}"),
            }
        };
        listener.set_nonblocking(true).expect("nonblocking listener");
        let port = listener.local_addr().expect("local addr").port();
        Controller { listener, port }
    }

    /// Accepts the switch's connection within `timeout` (fails at once,
    /// with its log, if the switch exits meanwhile).
    pub fn accept(&self, timeout: Duration, sw: &mut impl Watched) -> OfConn {
        let deadline = Instant::now() + timeout;
        loop {
            match self.listener.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(false).expect("blocking stream");
                    s.set_nodelay(true).expect("nodelay");
                    return OfConn { s, buf: Vec::new(), xid: 100 };
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => panic!("accept: {e}"),
            }
            if let Some(st) = sw.exited() {
                panic!("sluice run exited: {st}\n{}", sw.log_text());
            }
            assert!(Instant::now() < deadline, "the switch did not connect within {timeout:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// What one read brought.
pub enum Got {
    Msg(u32, Message),
    Timeout,
    Closed,
}

/// One OpenFlow connection from the switch.
pub struct OfConn {
    pub s: TcpStream,
    /// Received bytes not yet framed; at most one message plus one read.
    buf: Vec<u8>,
    xid: u32,
}

impl OfConn {
    /// Connects to the switch's passive listener on 127.0.0.1:`port` (a
    /// second controller), within 10 s.
    pub fn connect(port: u16) -> OfConn {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let s = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("connect to the switch's listener {addr}: {e}"));
        s.set_nodelay(true).expect("nodelay");
        OfConn { s, buf: Vec::new(), xid: 100 }
    }

    pub fn send(&mut self, m: &Message) -> u32 {
        self.xid += 1;
        self.s.write_all(&m.encode(self.xid)).expect("write to the switch");
        self.xid
    }

    /// The next message, waiting at most `timeout`.
    pub fn recv(&mut self, timeout: Duration) -> Got {
        let deadline = Instant::now() + timeout;
        let mut chunk = vec![0u8; 65_536];
        loop {
            match frame(&self.buf) {
                Some(Ok(n)) => {
                    let bytes: Vec<u8> = self.buf.drain(..n).collect();
                    return match Message::parse_with_header(&bytes) {
                        Ok((h, m)) => Got::Msg(h.xid, m),
                        Err(e) => panic!(
                            "undecodable message from the switch ({e:?}): {}",
                            hex::encode(&bytes)
                        ),
                    };
                }
                Some(Err(e)) => panic!("unframeable stream from the switch: {e:?}"),
                None => {}
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Got::Timeout;
            }
            self.s.set_read_timeout(Some(left.max(Duration::from_millis(1)))).expect("timeout");
            match self.s.read(&mut chunk) {
                Ok(0) => return Got::Closed,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) => {}
                Err(_) => return Got::Closed,
            }
        }
    }

    /// Reads messages (answering ECHO_REQUESTs) until `f` returns a value,
    /// the connection closes or `timeout` passes.
    pub fn wait_for<T>(
        &mut self,
        timeout: Duration,
        mut f: impl FnMut(u32, &Message) -> Option<T>,
    ) -> Result<T, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.recv(left) {
                Got::Msg(xid, m) => {
                    if let Message::EchoRequest(d) = &m {
                        self.s
                            .write_all(&Message::EchoReply(d.clone()).encode(xid))
                            .expect("echo reply");
                    }
                    if let Some(v) = f(xid, &m) {
                        return Ok(v);
                    }
                }
                Got::Timeout => return Err(format!("nothing suitable within {timeout:?}")),
                Got::Closed => return Err("connection closed".into()),
            }
        }
    }

    /// HELLO both ways, then FEATURES_REQUEST / FEATURES_REPLY.
    pub fn handshake(&mut self) -> FeaturesReply {
        self.send(&Message::Hello(Hello::with_versions(&[4])));
        let first = self.recv(Duration::from_secs(10));
        assert!(
            matches!(first, Got::Msg(_, Message::Hello(_))),
            "the switch's first message was not HELLO"
        );
        let xid = self.send(&Message::FeaturesRequest);
        self.wait_for(Duration::from_secs(10), |x, m| match m {
            Message::FeaturesReply(f) if x == xid => Some(f.clone()),
            _ => None,
        })
        .expect("FEATURES_REPLY")
    }

    pub fn add_flow(&mut self, text: &str) {
        let spec = parse_flow(text, Usage::Add).unwrap_or_else(|e| panic!("{text}: {e}"));
        self.send(&Message::FlowMod(spec.to_flow_mod(flow_mod_command::ADD)));
    }

    /// BARRIER_REQUEST, then waits for its reply; fails on any OFPT_ERROR.
    pub fn barrier(&mut self) {
        let xid = self.send(&Message::BarrierRequest);
        self.wait_for(Duration::from_secs(10), |x, m| match m {
            Message::BarrierReply if x == xid => Some(()),
            Message::Error(e) => panic!("the switch answered with an error: {e:?}"),
            _ => None,
        })
        .expect("BARRIER_REPLY");
    }
}
