//! Link-state detection: which interfaces are up, down, or gone.
//!
//! [`LinkMonitor`] listens on an rtnetlink socket (`NETLINK_ROUTE`, multicast group
//! `RTMGRP_LINK`) of the network namespace it was created in. The kernel sends
//! `RTM_NEWLINK` whenever anything about a link changes and `RTM_DELLINK` when it is
//! unregistered (or moved to another namespace). The monitor keeps the last known
//! state per ifindex and reports only *changes* as [`LinkEvent`]s: `Up`
//! (`IFF_UP && IFF_RUNNING`, i.e. administratively up with carrier), `Down`, or
//! `Removed`. [`LinkMonitor::request_dump`] asks for every link once (an
//! `RTM_GETLINK` dump) so the first poll reports the current state of all of them.
//! If the socket overflows (`ENOBUFS`: events were lost), the monitor re-dumps by
//! itself, so its state converges to the kernel's.
//!
//! The message parser ([`parse_links`]) is pure (bytes in, values out) and tested
//! with literal netlink bytes; it never panics on malformed input.
//!
//! [`sysfs_state`] is the polling alternative: `/sys/class/net/IF/operstate` and
//! `carrier` of the namespace whose sysfs is mounted.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use crate::sys;

const NLMSG_HDRLEN: usize = 16;
const NLMSG_DONE: u16 = 3;
const RTM_NEWLINK: u16 = 16;
const RTM_DELLINK: u16 = 17;
const RTM_GETLINK: u16 = 18;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
const IFINFOMSG_LEN: usize = 16;
const IFLA_IFNAME: u16 = 3;
const IFF_UP: u32 = 0x1;
const IFF_RUNNING: u32 = 0x40;
const RTMGRP_LINK: u32 = 1;

/// One link record from a netlink message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkInfo {
    /// Interface index.
    pub ifindex: u32,
    /// Interface name (empty if the message carried none).
    pub name: String,
    /// `ifi_flags`.
    pub flags: u32,
    /// True for `RTM_DELLINK`.
    pub deleted: bool,
}

impl LinkInfo {
    /// Administratively up with carrier.
    pub fn is_up(&self) -> bool {
        self.flags & IFF_UP != 0 && self.flags & IFF_RUNNING != 0
    }
}

/// What changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkChange {
    /// Link is up and has carrier.
    Up,
    /// Link exists but is down or has no carrier.
    Down,
    /// Link was unregistered (or left this namespace).
    Removed,
}

/// A change of one link's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkEvent {
    /// Interface index.
    pub ifindex: u32,
    /// Interface name.
    pub name: String,
    /// New state.
    pub change: LinkChange,
}

fn rd16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn rd32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Parses the link messages in one netlink datagram, appending them to `out`.
/// Returns `true` if the datagram ended a dump (`NLMSG_DONE`). Malformed messages
/// end the parse of this datagram; nothing panics.
pub fn parse_links(mut buf: &[u8], out: &mut Vec<LinkInfo>) -> bool {
    let mut done = false;
    while buf.len() >= NLMSG_HDRLEN {
        let Some(len) = rd32(buf, 0).map(|l| l as usize) else { break };
        let Some(ty) = rd16(buf, 4) else { break };
        if len < NLMSG_HDRLEN || len > buf.len() {
            break;
        }
        let body = &buf[NLMSG_HDRLEN..len];
        match ty {
            NLMSG_DONE => done = true,
            RTM_NEWLINK | RTM_DELLINK => {
                if let Some(info) = parse_ifinfo(body, ty == RTM_DELLINK) {
                    out.push(info);
                }
            }
            _ => {}
        }
        buf = buf.get(align4(len)..).unwrap_or(&[]);
    }
    done
}

fn parse_ifinfo(body: &[u8], deleted: bool) -> Option<LinkInfo> {
    let ifindex = u32::try_from(i32::from_ne_bytes(body.get(4..8)?.try_into().ok()?)).ok()?;
    let flags = rd32(body, 8)?;
    let mut name = String::new();
    let mut attrs = body.get(IFINFOMSG_LEN..)?;
    while attrs.len() >= 4 {
        let alen = usize::from(rd16(attrs, 0)?);
        let aty = rd16(attrs, 2)? & 0x3fff;
        if alen < 4 || alen > attrs.len() {
            break;
        }
        if aty == IFLA_IFNAME {
            let v = &attrs[4..alen];
            let end = v.iter().position(|&c| c == 0).unwrap_or(v.len());
            name = String::from_utf8_lossy(&v[..end]).into_owned();
        }
        attrs = attrs.get(align4(alen)..).unwrap_or(&[]);
    }
    Some(LinkInfo { ifindex, name, flags, deleted })
}

/// Watches link state through rtnetlink. See the module docs.
pub struct LinkMonitor {
    fd: OwnedFd,
    buf: Vec<u8>,
    scratch: Vec<LinkInfo>,
    state: HashMap<u32, (String, bool)>,
    seq: u32,
}

impl LinkMonitor {
    /// Subscribes to link changes in the calling thread's network namespace and
    /// requests a dump of the current links.
    pub fn new() -> io::Result<LinkMonitor> {
        let fd = sys::netlink_route(RTMGRP_LINK)?;
        let mut m = LinkMonitor {
            fd,
            buf: vec![0u8; 64 * 1024],
            scratch: Vec::new(),
            state: HashMap::new(),
            seq: 0,
        };
        m.request_dump()?;
        Ok(m)
    }

    /// The netlink fd, readable when events are waiting.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Asks the kernel for every link (answered through [`LinkMonitor::poll`]).
    pub fn request_dump(&mut self) -> io::Result<()> {
        self.seq = self.seq.wrapping_add(1);
        let mut msg = [0u8; NLMSG_HDRLEN + IFINFOMSG_LEN];
        let len = msg.len() as u32;
        msg[0..4].copy_from_slice(&len.to_ne_bytes());
        msg[4..6].copy_from_slice(&RTM_GETLINK.to_ne_bytes());
        msg[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
        msg[8..12].copy_from_slice(&self.seq.to_ne_bytes());
        // ifinfomsg: family AF_UNSPEC, everything else zero.
        sys::send(self.fd.as_raw_fd(), &msg).map(drop)
    }

    /// Reads every waiting message (non-blocking) and appends the resulting state
    /// changes to `out`; returns how many were appended.
    pub fn poll(&mut self, out: &mut Vec<LinkEvent>) -> io::Result<usize> {
        let before = out.len();
        // Each datagram is consumed; a flood is bounded per call so a caller's
        // loop stays responsive.
        for _ in 0..1024 {
            match sys::recv(self.fd.as_raw_fd(), &mut self.buf, true) {
                Ok(len) => {
                    let len = len.min(self.buf.len());
                    self.scratch.clear();
                    parse_links(&self.buf[..len], &mut self.scratch);
                    for i in 0..self.scratch.len() {
                        let info = self.scratch[i].clone();
                        self.apply(info, out);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => self.request_dump()?,
                Err(e) => return Err(e),
            }
        }
        Ok(out.len() - before)
    }

    fn apply(&mut self, info: LinkInfo, out: &mut Vec<LinkEvent>) {
        if info.deleted {
            if let Some((name, _)) = self.state.remove(&info.ifindex) {
                let name = if info.name.is_empty() { name } else { info.name };
                out.push(LinkEvent { ifindex: info.ifindex, name, change: LinkChange::Removed });
            }
            return;
        }
        let up = info.is_up();
        let prev = self.state.insert(info.ifindex, (info.name.clone(), up));
        if prev.as_ref().map(|(_, u)| *u) != Some(up) {
            let change = if up { LinkChange::Up } else { LinkChange::Down };
            out.push(LinkEvent { ifindex: info.ifindex, name: info.name, change });
        }
    }

    /// Last known state of the link called `name`: `Some(up)`, or `None` if unknown
    /// or removed.
    pub fn state_of(&self, name: &str) -> Option<bool> {
        self.state.values().find(|(n, _)| n == name).map(|(_, up)| *up)
    }
}

/// Link state from sysfs: `Some(true)` if `operstate` is `up` (or `unknown`, as for
/// TAP/loopback) and `carrier` is 1, `Some(false)` if the interface exists but is
/// not, `None` if it does not exist.
pub fn sysfs_state(name: &str) -> Option<bool> {
    sys::ifname_bytes(name).ok()?;
    let base = std::path::Path::new("/sys/class/net").join(name);
    let oper = std::fs::read_to_string(base.join("operstate")).ok()?;
    // Reading `carrier` fails with EINVAL while the interface is down.
    let carrier = std::fs::read_to_string(base.join("carrier")).map(|c| c.trim() == "1");
    let oper_ok = matches!(oper.trim(), "up" | "unknown");
    Some(oper_ok && carrier.unwrap_or(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An RTM_NEWLINK for ifindex 7 "veth0" (flags UP|RUNNING|BROADCAST),
    /// followed by NLMSG_DONE, as the kernel lays them out (little endian).
    const NEWLINK_AND_DONE: [u8; 60] = [
        // nlmsghdr: len 44, type 16, flags 2 (MULTI), seq 1, pid 0
        44, 0, 0, 0, 16, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, //
        // ifinfomsg: family 0, pad, type 1 (ARPHRD_ETHER), index 7, flags 0x1043, change 0
        0, 0, 1, 0, 7, 0, 0, 0, 0x43, 0x10, 0, 0, 0, 0, 0, 0, //
        // rtattr: len 10, type 3 (IFLA_IFNAME) "veth0\0", padded to 12
        10, 0, 3, 0, b'v', b'e', b't', b'h', b'0', 0, 0, 0, //
        // NLMSG_DONE: len 16, type 3
        16, 0, 0, 0, 3, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn parses_newlink_and_done() {
        let mut out = Vec::new();
        assert!(parse_links(&NEWLINK_AND_DONE, &mut out));
        assert_eq!(
            out,
            vec![LinkInfo { ifindex: 7, name: "veth0".into(), flags: 0x1043, deleted: false }]
        );
        assert!(out[0].is_up());
    }

    #[test]
    fn parses_dellink_and_down_flags() {
        let mut m = NEWLINK_AND_DONE;
        m[4] = 17; // RTM_DELLINK
        m[24] = 0x02; // flags: BROADCAST only
        let mut out = Vec::new();
        parse_links(&m[..44], &mut out);
        assert!(out[0].deleted);
        assert!(!out[0].is_up());
    }

    #[test]
    fn malformed_input_stops_without_panic() {
        let mut out = Vec::new();
        for cut in 0..NEWLINK_AND_DONE.len() {
            out.clear();
            parse_links(&NEWLINK_AND_DONE[..cut], &mut out);
        }
        let mut bad = NEWLINK_AND_DONE;
        bad[32] = 200; // attribute length past the end
        out.clear();
        parse_links(&bad, &mut out);
        assert_eq!(out[0].name, "");
        let mut bad = NEWLINK_AND_DONE;
        bad[0] = 3; // message length below the header
        out.clear();
        assert!(!parse_links(&bad, &mut out));
        assert!(out.is_empty());
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let mut out = Vec::new();
            parse_links(&data, &mut out);
        }
    }
}
