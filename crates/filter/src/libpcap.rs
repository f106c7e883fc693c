//! Minimal binding to libpcap's filter compiler and `pcap_offline_filter`,
//! used as the oracle in tests and by `sluice filter --bench` (cargo
//! feature `libpcap`, links `-lpcap`).
//!
//! Only this module uses `unsafe`: each FFI call is wrapped in a safe
//! function and says why it is sound.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_long, c_uint, c_void, CStr, CString};
use std::sync::Mutex;

#[repr(C)]
struct BpfProgram {
    bf_len: c_uint,
    bf_insns: *mut c_void,
}

#[repr(C)]
struct Timeval {
    tv_sec: c_long,
    tv_usec: c_long,
}

#[repr(C)]
struct PcapPkthdr {
    ts: Timeval,
    caplen: u32,
    len: u32,
}

#[repr(C)]
struct PcapT {
    _opaque: [u8; 0],
}

#[link(name = "pcap")]
extern "C" {
    fn pcap_open_dead(linktype: c_int, snaplen: c_int) -> *mut PcapT;
    fn pcap_compile(
        p: *mut PcapT,
        fp: *mut BpfProgram,
        s: *const c_char,
        optimize: c_int,
        netmask: u32,
    ) -> c_int;
    fn pcap_offline_filter(fp: *const BpfProgram, h: *const PcapPkthdr, pkt: *const u8) -> c_int;
    fn pcap_freecode(fp: *mut BpfProgram);
    fn pcap_geterr(p: *mut PcapT) -> *mut c_char;
    fn pcap_close(p: *mut PcapT);
}

/// libpcap's parser keeps global state in some versions: serialise compiles.
static COMPILE_LOCK: Mutex<()> = Mutex::new(());

/// `PCAP_NETMASK_UNKNOWN`.
pub const NETMASK_UNKNOWN: u32 = 0xffff_ffff;

/// A BPF program compiled by libpcap for DLT_EN10MB.
pub struct Bpf {
    prog: BpfProgram,
}

// SAFETY: the program is plain owned memory; `pcap_offline_filter` only reads it.
unsafe impl Send for Bpf {}
// SAFETY: as above, concurrent readers are fine.
unsafe impl Sync for Bpf {}

impl Bpf {
    /// Compiles `expr` with libpcap (`optimize` as in `pcap_compile`).
    pub fn compile(expr: &str, optimize: bool, netmask: u32) -> Result<Bpf, String> {
        let cexpr = CString::new(expr).map_err(|_| "NUL in expression".to_string())?;
        let _g = COMPILE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: plain constructor; returns NULL only on allocation failure.
        let p = unsafe { pcap_open_dead(1, 262_144) };
        if p.is_null() {
            return Err("pcap_open_dead failed".into());
        }
        let mut prog = BpfProgram { bf_len: 0, bf_insns: std::ptr::null_mut() };
        // SAFETY: `p` is a live handle, `prog` a valid out-parameter, `cexpr`
        // a NUL-terminated string that outlives the call.
        let rc =
            unsafe { pcap_compile(p, &mut prog, cexpr.as_ptr(), c_int::from(optimize), netmask) };
        let res = if rc == 0 {
            Ok(Bpf { prog })
        } else {
            // SAFETY: pcap_geterr returns a NUL-terminated buffer owned by `p`,
            // copied before `p` is closed.
            let msg = unsafe { CStr::from_ptr(pcap_geterr(p)) }.to_string_lossy().into_owned();
            Err(msg)
        };
        // SAFETY: `p` is not used after this; the compiled program does not
        // reference it.
        unsafe { pcap_close(p) };
        res
    }

    /// libpcap's verdict for a packet of `pkt.len()` captured bytes and
    /// `wirelen` bytes on the wire.
    pub fn matches(&self, pkt: &[u8], wirelen: u32) -> bool {
        let hdr = PcapPkthdr {
            ts: Timeval { tv_sec: 0, tv_usec: 0 },
            caplen: pkt.len() as u32,
            len: wirelen,
        };
        // SAFETY: `prog` came from a successful pcap_compile; the header's
        // caplen is exactly the readable length of `pkt`.
        unsafe { pcap_offline_filter(&self.prog, &hdr, pkt.as_ptr()) != 0 }
    }
}

impl Drop for Bpf {
    fn drop(&mut self) {
        // SAFETY: the program was produced by pcap_compile and is freed once.
        unsafe { pcap_freecode(&mut self.prog) };
    }
}
