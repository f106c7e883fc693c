//! `tap:NAME` — a TAP device, the switch's LOCAL port.
//!
//! Opens `/dev/net/tun` with `IFF_TAP | IFF_NO_PI` (plain Ethernet frames, no
//! packet-information prefix), creating the interface `NAME` if it does not exist,
//! and sets it administratively up. Frames the switch transmits appear as received
//! by the host's stack on `NAME`; frames the host sends out of `NAME` are what
//! `rx_burst` returns. One `read`/`write` per frame (a TAP fd has no batch
//! interface); the fd is non-blocking, so `rx_burst` stops at `EAGAIN` and
//! `tx_burst` stops (returning the count so far) when the queue is full.
//!
//! The interface lives as long as the port (it is not persistent). Link state is
//! `IFF_UP && IFF_RUNNING` read through a control socket opened in the same network
//! namespace as the device.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use crate::sys;
use crate::{Port, PortStats, RxBuf};

/// A TAP port. See the module docs.
pub struct Tap {
    fd: OwnedFd,
    ctl: OwnedFd,
    name: String,
    hw: [u8; 6],
    stats: PortStats,
}

fn ctx(what: &str, name: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("tap:{name}: {what}: {e}"))
}

impl Tap {
    /// Creates (or attaches to) TAP interface `name` and brings it up.
    pub fn open(name: &str) -> io::Result<Tap> {
        sys::ifname_bytes(name)?;
        let dev = c"/dev/net/tun";
        let fd = sys::open_rw_nonblock(dev).map_err(|e| ctx("open /dev/net/tun", name, e))?;
        let flags = (libc::IFF_TAP | libc::IFF_NO_PI) as i16;
        let real =
            sys::tun_set_iff(fd.as_raw_fd(), name, flags).map_err(|e| ctx("TUNSETIFF", name, e))?;
        let ctl = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)
            .map_err(|e| ctx("control socket", name, e))?;
        let c = ctl.as_raw_fd();
        let f = sys::if_flags(c, &real).map_err(|e| ctx("SIOCGIFFLAGS", name, e))?;
        sys::set_if_flags(c, &real, f | libc::IFF_UP as u32)
            .map_err(|e| ctx("SIOCSIFFLAGS", name, e))?;
        let hw = sys::if_hwaddr(c, &real).map_err(|e| ctx("SIOCGIFHWADDR", name, e))?;
        Ok(Tap { fd, ctl, name: real, hw, stats: PortStats::default() })
    }
}

impl Port for Tap {
    fn rx_burst(&mut self, bufs: &mut [RxBuf]) -> io::Result<usize> {
        let mut n = 0;
        // Bounded by bufs.len() reads plus one per oversized frame; each read
        // consumes a frame from the device queue.
        let mut budget = bufs.len() * 2;
        while n < bufs.len() && budget > 0 {
            budget -= 1;
            let Some(buf) = bufs.get_mut(n) else { break };
            let spare = buf.spare_mut();
            let cap = spare.len();
            match sys::read(self.fd.as_raw_fd(), spare) {
                Ok(0) => break,
                Ok(len) if len >= cap => {
                    // Possibly truncated by a short buffer: TAP reads truncate silently.
                    self.stats.rx_errors += 1;
                }
                Ok(len) => {
                    buf.commit(len, false);
                    self.stats.rx_packets += 1;
                    self.stats.rx_bytes += len as u64;
                    n += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ctx("read", &self.name, e)),
            }
        }
        Ok(n)
    }

    fn tx_burst(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        let mut done = 0;
        for f in frames {
            if f.len() < 14 || f.len() > 65535 {
                self.stats.tx_errors += 1;
                done += 1;
                continue;
            }
            match sys::write(self.fd.as_raw_fd(), f) {
                Ok(_) => {
                    self.stats.tx_packets += 1;
                    self.stats.tx_bytes += f.len() as u64;
                    done += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if done > 0 => {
                    // Report what went out; the error will repeat on the next call.
                    let _ = e;
                    break;
                }
                Err(e) => {
                    self.stats.tx_dropped += 1;
                    return Err(ctx("write", &self.name, e));
                }
            }
        }
        Ok(done)
    }

    fn link_up(&self) -> bool {
        match sys::if_flags(self.ctl.as_raw_fd(), &self.name) {
            Ok(f) => f & libc::IFF_UP as u32 != 0 && f & libc::IFF_RUNNING as u32 != 0,
            Err(_) => false,
        }
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn hw_addr(&self) -> [u8; 6] {
        self.hw
    }

    fn raw_fd(&self) -> Option<RawFd> {
        Some(self.fd.as_raw_fd())
    }

    fn stats(&self) -> PortStats {
        self.stats
    }
}
