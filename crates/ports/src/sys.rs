//! Thin, checked wrappers over the Linux system calls the ports need.
//!
//! Every `unsafe` block of the crate except the ring code in `afpacket` lives here:
//! socket creation, `setsockopt`/`getsockopt`, interface ioctls (`SIOCGIFFLAGS`,
//! `SIOCGIFINDEX`, `SIOCGIFNAME`, `SIOCGIFHWADDR`, `SIOCGIFMTU`, `TUNSETIFF`), `read`,
//! `write`, `send`, `recv`, `poll`, `mmap` and `setns`. Each wrapper takes only safe
//! Rust types (slices, owned fds) and converts the C return convention into
//! `io::Result`, so the callers contain no `unsafe` at all.
//!
//! Interface ioctls are issued on a socket the caller passes in. The kernel answers
//! them in that socket's network namespace, which is what keeps a port opened inside
//! a namespace (see `testutil::NetNs::enter`) talking about its own interface even
//! when it is later used from a thread in another namespace.
#![allow(unsafe_code)]

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;

use libc::{c_int, c_void};

/// Longest interface name plus its NUL (`IFNAMSIZ` of `<linux/if.h>`).
pub(crate) const IFNAMSIZ: usize = 16;

/// `ETH_P_ALL` of `<linux/if_ether.h>`: every protocol.
pub(crate) const ETH_P_ALL: u16 = 0x0003;

/// Converts a `-1`-on-error return into `io::Result`.
fn cvt(r: c_int) -> io::Result<c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Converts a `-1`-on-error `ssize_t` return into `io::Result<usize>`.
fn cvt_size(r: isize) -> io::Result<usize> {
    usize::try_from(r).map_err(|_| io::Error::last_os_error())
}

/// Checks an interface name the way the kernel's `dev_valid_name` does and returns
/// it NUL-padded to `IFNAMSIZ`.
pub(crate) fn ifname_bytes(name: &str) -> io::Result<[u8; IFNAMSIZ]> {
    let b = name.as_bytes();
    let bad = b.is_empty()
        || b.len() >= IFNAMSIZ
        || name == "."
        || name == ".."
        || b.iter().any(|&c| c == b'/' || c == b':' || c == 0 || c.is_ascii_whitespace());
    if bad {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid interface name {name:?}"),
        ));
    }
    let mut out = [0u8; IFNAMSIZ];
    out[..b.len()].copy_from_slice(b);
    Ok(out)
}

/// `socket(2)` with `SOCK_CLOEXEC` added.
pub(crate) fn socket(domain: c_int, ty: c_int, proto: c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with integer arguments; on success the returned fd is
    // fresh and owned by nobody else, so `OwnedFd` may take it.
    unsafe {
        let fd = cvt(libc::socket(domain, ty | libc::SOCK_CLOEXEC, proto))?;
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// `open(2)` of a device path for read/write, close-on-exec, non-blocking.
pub(crate) fn open_rw_nonblock(path: &std::ffi::CStr) -> io::Result<OwnedFd> {
    // SAFETY: `path` is a valid NUL-terminated string; the fd returned on success is
    // fresh and owned by us.
    unsafe {
        let fd = cvt(libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC | libc::O_NONBLOCK))?;
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// `setsockopt(2)` with a plain-data value.
pub(crate) fn setsockopt<T: Copy>(fd: RawFd, level: c_int, name: c_int, val: &T) -> io::Result<()> {
    // SAFETY: `val` points to `size_of::<T>()` readable bytes for the whole call; `T`
    // is `Copy` plain data whose layout the caller matched to the option.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (val as *const T).cast::<c_void>(),
            size_of::<T>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// `getsockopt(2)` into a plain-data value; returns the value and the length the
/// kernel wrote.
pub(crate) fn getsockopt<T: Copy + Default>(
    fd: RawFd,
    level: c_int,
    name: c_int,
) -> io::Result<(T, usize)> {
    let mut val = T::default();
    let mut len = size_of::<T>() as libc::socklen_t;
    // SAFETY: `val` is writable for `len` bytes and `len` is a valid in/out pointer;
    // the kernel writes at most `len` bytes.
    cvt(unsafe {
        libc::getsockopt(fd, level, name, (&mut val as *mut T).cast::<c_void>(), &mut len)
    })?;
    Ok((val, len as usize))
}

/// Reads and clears the socket's pending error (`SO_ERROR`).
pub(crate) fn take_socket_error(fd: RawFd) -> io::Result<Option<io::Error>> {
    let (err, _) = getsockopt::<c_int>(fd, libc::SOL_SOCKET, libc::SO_ERROR)?;
    Ok((err != 0).then(|| io::Error::from_raw_os_error(err)))
}

/// `struct ifreq`: a name and a 24-byte union (40 bytes on 64-bit Linux).
#[repr(C)]
#[derive(Clone, Copy)]
struct IfReq {
    name: [u8; IFNAMSIZ],
    data: [u8; 24],
}

impl IfReq {
    fn named(name: &str) -> io::Result<Self> {
        Ok(IfReq { name: ifname_bytes(name)?, data: [0; 24] })
    }
}

/// Issues an ifreq ioctl on `fd`.
fn ifreq_ioctl(fd: RawFd, req: libc::c_ulong, ifr: &mut IfReq) -> io::Result<()> {
    // SAFETY: every request used with this helper reads and writes at most a
    // `struct ifreq`, and `ifr` is a valid, writable one for the whole call.
    cvt(unsafe { libc::ioctl(fd, req as _, ifr as *mut IfReq) }).map(drop)
}

fn ifr_int(ifr: &IfReq) -> c_int {
    c_int::from_ne_bytes([ifr.data[0], ifr.data[1], ifr.data[2], ifr.data[3]])
}

/// Interface flags (`IFF_UP`, `IFF_RUNNING`, ...) of `name`.
pub(crate) fn if_flags(fd: RawFd, name: &str) -> io::Result<u32> {
    let mut ifr = IfReq::named(name)?;
    ifreq_ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr)?;
    Ok(u32::from(u16::from_ne_bytes([ifr.data[0], ifr.data[1]])))
}

/// Sets the interface flags of `name`.
pub(crate) fn set_if_flags(fd: RawFd, name: &str, flags: u32) -> io::Result<()> {
    let mut ifr = IfReq::named(name)?;
    ifr.data[..2].copy_from_slice(&(flags as u16).to_ne_bytes());
    ifreq_ioctl(fd, libc::SIOCSIFFLAGS, &mut ifr)
}

/// Interface index of `name`.
pub(crate) fn if_index(fd: RawFd, name: &str) -> io::Result<u32> {
    let mut ifr = IfReq::named(name)?;
    ifreq_ioctl(fd, libc::SIOCGIFINDEX, &mut ifr)?;
    u32::try_from(ifr_int(&ifr)).map_err(|_| io::Error::other("negative ifindex"))
}

/// Current name of interface `index` (fails with `ENODEV` once it is gone).
pub(crate) fn if_name(fd: RawFd, index: u32) -> io::Result<String> {
    let mut ifr = IfReq { name: [0; IFNAMSIZ], data: [0; 24] };
    ifr.data[..4].copy_from_slice(&(index as c_int).to_ne_bytes());
    ifreq_ioctl(fd, libc::SIOCGIFNAME, &mut ifr)?;
    let end = ifr.name.iter().position(|&c| c == 0).unwrap_or(IFNAMSIZ);
    Ok(String::from_utf8_lossy(&ifr.name[..end]).into_owned())
}

/// Hardware (MAC) address of `name`.
pub(crate) fn if_hwaddr(fd: RawFd, name: &str) -> io::Result<[u8; 6]> {
    let mut ifr = IfReq::named(name)?;
    ifreq_ioctl(fd, libc::SIOCGIFHWADDR, &mut ifr)?;
    // data = struct sockaddr { sa_family: u16, sa_data: [u8; 14] }
    let mut mac = [0u8; 6];
    mac.copy_from_slice(&ifr.data[2..8]);
    Ok(mac)
}

/// MTU of `name`.
pub(crate) fn if_mtu(fd: RawFd, name: &str) -> io::Result<u32> {
    let mut ifr = IfReq::named(name)?;
    ifreq_ioctl(fd, libc::SIOCGIFMTU, &mut ifr)?;
    u32::try_from(ifr_int(&ifr)).map_err(|_| io::Error::other("negative MTU"))
}

/// `TUNSETIFF` on an open `/dev/net/tun`; returns the name the kernel chose.
pub(crate) fn tun_set_iff(fd: RawFd, name: &str, flags: i16) -> io::Result<String> {
    let mut ifr = IfReq::named(name)?;
    ifr.data[..2].copy_from_slice(&flags.to_ne_bytes());
    ifreq_ioctl(fd, libc::TUNSETIFF as libc::c_ulong, &mut ifr)?;
    let end = ifr.name.iter().position(|&c| c == 0).unwrap_or(IFNAMSIZ);
    Ok(String::from_utf8_lossy(&ifr.name[..end]).into_owned())
}

/// `read(2)` into `buf`.
pub(crate) fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    cvt_size(unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) })
}

/// `write(2)` of `buf`.
pub(crate) fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes.
    cvt_size(unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) })
}

/// `send(2)` with `MSG_DONTWAIT`.
pub(crate) fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes.
    cvt_size(unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) })
}

/// `recv(2)` with `MSG_DONTWAIT`; with `trunc` the return is the full datagram
/// length even if it did not fit (`MSG_TRUNC`).
pub(crate) fn recv(fd: RawFd, buf: &mut [u8], trunc: bool) -> io::Result<usize> {
    let flags = libc::MSG_DONTWAIT | if trunc { libc::MSG_TRUNC } else { 0 };
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    cvt_size(unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) })
}

/// `sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0)`: asks the kernel to transmit the
/// frames queued in a packet socket's TX ring.
pub(crate) fn kick_tx(fd: RawFd) -> io::Result<usize> {
    // SAFETY: a zero-length send with null buffer and address is valid for a
    // packet socket with a TX ring; no memory is passed.
    cvt_size(unsafe {
        libc::sendto(fd, std::ptr::null(), 0, libc::MSG_DONTWAIT, std::ptr::null(), 0)
    })
}

/// Waits up to `timeout_ms` for `fd` to become readable (or report an error).
pub(crate) fn poll_readable(fd: RawFd, timeout_ms: i32) -> io::Result<bool> {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: `p` is one valid pollfd for the whole call.
    let n = cvt(unsafe { libc::poll(&mut p, 1, timeout_ms) })?;
    Ok(n > 0)
}

/// Binds a packet socket to `ifindex` for `proto` (host order).
pub(crate) fn bind_packet(fd: RawFd, ifindex: u32, proto: u16) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto.to_be();
    sll.sll_ifindex = ifindex as c_int;
    // SAFETY: `sll` is a valid sockaddr_ll and the length passed matches it.
    cvt(unsafe {
        libc::bind(
            fd,
            (&sll as *const libc::sockaddr_ll).cast(),
            size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// Puts the interface in promiscuous mode for as long as the packet socket lives
/// (`PACKET_ADD_MEMBERSHIP` / `PACKET_MR_PROMISC`; released by the kernel on close).
pub(crate) fn packet_promisc(fd: RawFd, ifindex: u32) -> io::Result<()> {
    // SAFETY: packet_mreq is plain data; all-zero is a valid value.
    let mut mr: libc::packet_mreq = unsafe { std::mem::zeroed() };
    mr.mr_ifindex = ifindex as c_int;
    mr.mr_type = libc::PACKET_MR_PROMISC as u16;
    setsockopt(fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mr)
}

/// A shared memory mapping of a file descriptor, unmapped on drop.
pub(crate) struct Mmap {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mmap {
    /// `mmap(NULL, len, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_POPULATE, fd, 0)`.
    pub(crate) fn shared(fd: RawFd, len: usize) -> io::Result<Mmap> {
        // SAFETY: a fresh mapping chosen by the kernel cannot alias any Rust object.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave NULL"))?;
        Ok(Mmap { ptr, len })
    }

    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` describe exactly the mapping created in `shared`, and
        // no reference into it outlives `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

// SAFETY: the mapping is plain memory shared with the kernel; moving the owner to
// another thread does not change who may access it.
unsafe impl Send for Mmap {}

/// Moves the calling thread into the network namespace referred to by `fd`
/// (`setns(fd, CLONE_NEWNET)`).
pub(crate) fn setns_net(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain syscall on an fd we hold; only changes this thread's namespace.
    cvt(unsafe { libc::setns(fd, libc::CLONE_NEWNET) }).map(drop)
}

/// A bound `AF_NETLINK` socket (`NETLINK_ROUTE`) subscribed to `groups`.
pub(crate) fn netlink_route(groups: u32) -> io::Result<OwnedFd> {
    let fd = socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_NONBLOCK, libc::NETLINK_ROUTE)?;
    // SAFETY: sockaddr_nl is plain data; all-zero is a valid value.
    let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    sa.nl_family = libc::AF_NETLINK as u16;
    sa.nl_groups = groups;
    // SAFETY: `sa` is a valid sockaddr_nl and the length matches.
    cvt(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_nl).cast(),
            size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    })?;
    Ok(fd)
}

/// True when the process runs with effective uid 0.
pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The interface index a packet socket is bound to (`getsockname`); the kernel
/// reports `-1` once that interface has been unregistered.
pub(crate) fn packet_bound_ifindex(fd: RawFd) -> io::Result<i32> {
    // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    // SAFETY: `sll` is writable for `len` bytes and `len` is a valid in/out pointer.
    cvt(unsafe { libc::getsockname(fd, (&mut sll as *mut libc::sockaddr_ll).cast(), &mut len) })?;
    Ok(sll.sll_ifindex)
}
