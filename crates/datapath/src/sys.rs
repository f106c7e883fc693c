//! The system calls the datapath needs that std does not wrap: `poll(2)`
//! over many descriptors, `setns(2)` into a network namespace, and for
//! `sluice ctl reload` `SO_PEERCRED` and `kill(2)`.
//!
//! This is the only module of the crate with `unsafe` code; each block says
//! why it is sound.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};

/// One entry of a poll set: the descriptor, and after [`poll`] whether it was
/// ready (readable, or in error/hang-up so that a read will report why).
#[derive(Clone, Copy, Debug)]
#[repr(transparent)]
pub struct PollEntry {
    pfd: libc::pollfd,
}

impl PollEntry {
    /// Watch `fd` for input.
    pub fn readable(fd: RawFd) -> PollEntry {
        PollEntry { pfd: libc::pollfd { fd, events: libc::POLLIN, revents: 0 } }
    }

    /// Whether the last [`poll`] found the descriptor ready.
    #[cfg(test)]
    pub fn ready(&self) -> bool {
        self.pfd.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0
    }
}

/// Waits until one of `set` is ready or `timeout_ms` passes; returns how many
/// are ready (0 on timeout). `EINTR` counts as a timeout.
pub fn poll(set: &mut [PollEntry], timeout_ms: i32) -> io::Result<usize> {
    for e in set.iter_mut() {
        e.pfd.revents = 0;
    }
    let n = set.len() as libc::nfds_t;
    // SAFETY: `PollEntry` is `repr(transparent)` over `libc::pollfd`, so the
    // slice is a valid `pollfd` array of `n` entries. It is exclusively
    // borrowed for the call and the kernel writes only the `revents` fields
    // inside it.
    let rc = unsafe { libc::poll(set.as_mut_ptr().cast::<libc::pollfd>(), n, timeout_ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(rc as usize)
}

/// Moves the calling thread into the network namespace `/run/netns/{name}`
/// (as `ip netns exec` does). Sockets the thread opens afterwards belong to
/// that namespace, whichever thread uses them later.
pub fn enter_netns(name: &str) -> io::Result<()> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "bad namespace name"));
    }
    let f = File::open(format!("/run/netns/{name}"))
        .map_err(|e| io::Error::new(e.kind(), format!("network namespace {name}: {e}")))?;
    // SAFETY: `setns` takes a descriptor we own for the duration of the call
    // and a constant flag; it touches no memory of ours.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The process id of the process listening on the unix socket a connected
/// stream reaches (`SO_PEERCRED`: the credentials the listener had when it
/// called `listen(2)`).
pub fn peer_pid(s: &std::os::unix::net::UnixStream) -> io::Result<u32> {
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` is a valid, writable `ucred` and `len` holds its size,
    // which is what getsockopt(SO_PEERCRED) writes; the descriptor is owned
    // by `s`, alive for the call.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    u32::try_from(cred.pid)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| io::Error::other("the socket's peer has no process id"))
}

/// Sends SIGHUP to process `pid`.
pub fn sighup(pid: u32) -> io::Result<()> {
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| io::Error::other("process id out of range"))?;
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    if unsafe { libc::kill(pid, libc::SIGHUP) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    #[test]
    fn poll_reports_readable_and_timeout() {
        let (mut a, b) = UnixStream::pair().unwrap();
        let mut set = [PollEntry::readable(b.as_raw_fd())];
        assert_eq!(poll(&mut set, 0).unwrap(), 0);
        assert!(!set[0].ready());
        a.write_all(b"x").unwrap();
        assert_eq!(poll(&mut set, 1000).unwrap(), 1);
        assert!(set[0].ready());
    }

    #[test]
    fn empty_set_times_out() {
        assert_eq!(poll(&mut [], 1).unwrap(), 0);
    }

    #[test]
    fn bad_namespace_names_are_refused() {
        for n in ["", "..", "a/b"] {
            assert_eq!(enter_netns(n).unwrap_err().kind(), io::ErrorKind::InvalidInput);
        }
        assert!(enter_netns("sluice-no-such-namespace-here").is_err());
    }
}
