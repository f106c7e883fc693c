//! A raw OpenFlow 1.3 controller connection for integration tests: bytes
//! in, bytes out, so a test can send what no encoder would (malformed
//! objects) and check the exact bytes that come back. The switch's echo
//! requests are answered while waiting; every wait is bounded.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use sluice_ofp::message::frame;

/// How long any one wait for the switch may take.
pub const WAIT: Duration = Duration::from_secs(20);

/// A controller connection that has said HELLO.
pub struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    /// Connects to the switch's listener at `addr` and exchanges HELLOs.
    pub fn open(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect_timeout(&addr, WAIT).expect("connect");
        s.set_read_timeout(Some(Duration::from_millis(200))).expect("timeout");
        let mut c = Conn { s, buf: Vec::new() };
        c.send(&[0x04, 0x00, 0x00, 0x08, 0, 0, 0, 1]);
        let hello = c.recv();
        assert_eq!(&hello[..2], [0x04, 0x00], "the switch's HELLO");
        c
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).expect("write to the switch");
    }

    /// The next message other than an echo request (those are answered,
    /// keeping their xid and data).
    pub fn recv(&mut self) -> Vec<u8> {
        let deadline = Instant::now() + WAIT;
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(n) = frame(&self.buf) {
                let n = n.expect("a framed stream");
                let m: Vec<u8> = self.buf.drain(..n).collect();
                if m[1] == 2 {
                    let mut r = m.clone();
                    r[1] = 3;
                    self.send(&r);
                    continue;
                }
                return m;
            }
            assert!(Instant::now() < deadline, "no message from the switch within {WAIT:?}");
            match self.s.read(&mut chunk) {
                Ok(0) => panic!("the switch closed the connection"),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    /// The reply with `xid` (anything else unsolicited is skipped).
    pub fn reply_to(&mut self, xid: u32) -> Vec<u8> {
        for _ in 0..1000 {
            let m = self.recv();
            if m[4..8] == xid.to_be_bytes() {
                return m;
            }
        }
        panic!("no reply with xid {xid:#x}");
    }

    /// Sends a barrier and waits for its reply, which must be the next
    /// message.
    pub fn barrier(&mut self, xid: u32) {
        let mut barrier = vec![0x04, 20, 0x00, 0x08];
        barrier.extend(xid.to_be_bytes());
        self.send(&barrier);
        let r = self.recv();
        assert!(r[1] == 21 && r[4..8] == xid.to_be_bytes(), "not the barrier reply: {r:02x?}");
    }

    /// Sends `msg` (xid `xid`) and a barrier: `None` if the barrier reply
    /// comes first (nothing went wrong), else the one message before it.
    pub fn send_then_barrier(&mut self, msg: &[u8], xid: u32) -> Option<Vec<u8>> {
        self.send(msg);
        let bxid = xid | 0x8000_0000;
        let mut barrier = vec![0x04, 20, 0x00, 0x08];
        barrier.extend(bxid.to_be_bytes());
        self.send(&barrier);
        let first = self.recv();
        if first[1] == 21 && first[4..8] == bxid.to_be_bytes() {
            return None;
        }
        assert_eq!(first[4..8], xid.to_be_bytes(), "a reply to another request: {first:02x?}");
        let next = self.recv();
        assert!(
            next[1] == 21 && next[4..8] == bxid.to_be_bytes(),
            "more than one reply before the barrier's: {next:02x?}"
        );
        Some(first)
    }
}
