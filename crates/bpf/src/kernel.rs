//! The Linux kernel as test oracle: `bpf()` syscall wrappers.
//!
//! What? Loads a [`Program`] into the running kernel (creating its maps with
//! `BPF_MAP_CREATE` and patching map indices into file descriptors), returns
//! the kernel verifier's verdict and log, runs accepted programs with
//! `BPF_PROG_TEST_RUN` and reads map contents back. Tests compare all of it
//! against sluice's verifier, interpreter and JIT.
//!
//! Two verifier modes: [`Mode::Root`] (full capabilities: the kernel then
//! allows uninitialised stack reads and pointer leaks) and [`Mode::Strict`]
//! (the loading thread drops `CAP_SYS_ADMIN` and `CAP_PERFMON` from its
//! effective set but keeps `CAP_BPF` and `CAP_NET_ADMIN`: the kernel then
//! refuses uninitialised stack reads and pointer leaks like sluice does, and
//! applies its Spectre-v1 restrictions). Capabilities are per thread in
//! Linux, so strict loads run on a short-lived thread of their own.
//!
//! Not used by the switch at run time; it exists for the oracle tests and
//! for `sluice bpf verify --kernel`. Every `unsafe` block is a syscall with
//! pointers to live, correctly sized buffers.
#![allow(unsafe_code)]

use crate::insn::{encode_all, Insn, LDDW, PSEUDO_MAP_FD};
use crate::maps::{MapDef, BPF_MAP_TYPE_PERCPU_ARRAY};
use crate::Program;

/// Map contents: (key, value) pairs.
pub type Entries = Vec<(Vec<u8>, Vec<u8>)>;

const BPF_MAP_CREATE: i64 = 0;
const BPF_MAP_LOOKUP_ELEM: i64 = 1;
const BPF_MAP_GET_NEXT_KEY: i64 = 4;
const BPF_PROG_LOAD: i64 = 5;
const BPF_PROG_TEST_RUN: i64 = 10;

/// Which capability set the kernel verifier sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Root,
    Strict,
}

fn bpf(cmd: i64, attr: &mut [u8; 144]) -> i64 {
    // SAFETY: `attr` is a live, zero-padded 144-byte buffer laid out as
    // `union bpf_attr` for `cmd`; every pointer stored inside it points to a
    // buffer that outlives this call and is as large as the size field
    // stored next to it. The kernel reads/writes only within those bounds.
    unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), attr.len()) }
}

fn put32(a: &mut [u8; 144], off: usize, v: u32) {
    a[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(a: &mut [u8; 144], off: usize, v: u64) {
    a[off..off + 8].copy_from_slice(&v.to_le_bytes());
}
fn get32(a: &[u8; 144], off: usize) -> u32 {
    u32::from_le_bytes([a[off], a[off + 1], a[off + 2], a[off + 3]])
}

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// An owned file descriptor.
#[derive(Debug)]
pub struct Fd(i32);
impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own this descriptor and close it exactly once.
        unsafe {
            libc::close(self.0);
        }
    }
}

/// A map created in the kernel.
#[derive(Debug)]
pub struct KernelMap {
    pub fd: Fd,
    pub def: MapDef,
}

/// A program loaded into the kernel, with its maps.
#[derive(Debug)]
pub struct KernelProg {
    pub fd: Fd,
    pub maps: Vec<KernelMap>,
    pub log: String,
}

/// Is the `bpf()` syscall usable here (root, not disabled)?
pub fn available() -> bool {
    let def = MapDef {
        name: "probe".into(),
        map_type: 2,
        key_size: 4,
        value_size: 4,
        max_entries: 1,
        flags: 0,
    };
    create_map(&def).is_ok()
}

pub fn create_map(def: &MapDef) -> Result<KernelMap, String> {
    let mut a = [0u8; 144];
    put32(&mut a, 0, def.map_type);
    put32(&mut a, 4, def.key_size);
    put32(&mut a, 8, def.value_size);
    put32(&mut a, 12, def.max_entries);
    put32(&mut a, 16, def.flags);
    let fd = bpf(BPF_MAP_CREATE, &mut a);
    if fd < 0 {
        return Err(format!("BPF_MAP_CREATE {}: {}", def.name, errno()));
    }
    Ok(KernelMap { fd: Fd(fd as i32), def: def.clone() })
}

/// Loads a program: `Err(log)` when the kernel verifier rejects it.
pub fn load(prog: &Program, mode: Mode) -> Result<KernelProg, String> {
    let maps = prog.maps.iter().map(create_map).collect::<Result<Vec<_>, _>>()?;
    let mut insns: Vec<Insn> = prog.insns.clone();
    for i in insns.iter_mut() {
        if i.code == LDDW && i.src == PSEUDO_MAP_FD {
            if let Some(m) = maps.get(i.imm as usize) {
                i.imm = m.fd.0;
            }
        }
    }
    let ptype = prog.prog_type.linux_number();
    let res = match mode {
        Mode::Root => load_raw(ptype, &insns),
        Mode::Strict => std::thread::spawn(move || {
            drop_caps()?;
            load_raw(ptype, &insns)
        })
        .join()
        .map_err(|_| "loader thread panicked".to_string())?,
    };
    let (fd, log) = res?;
    Ok(KernelProg { fd, maps, log })
}

fn drop_caps() -> Result<(), String> {
    #[repr(C)]
    struct Hdr {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut h = Hdr { version: 0x2008_0522, pid: 0 };
    let mut d = [Data::default(); 2];
    // SAFETY: capget with a v3 header and a two-element data array, as the
    // ABI requires; both live on this stack frame.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut h as *mut Hdr, d.as_mut_ptr()) };
    if r != 0 {
        return Err(format!("capget: {}", errno()));
    }
    d[0].effective &= !(1 << 21); // CAP_SYS_ADMIN
    d[1].effective &= !(1 << (38 - 32)); // CAP_PERFMON
                                         // SAFETY: as above; capset only changes this thread's capabilities.
    let r = unsafe { libc::syscall(libc::SYS_capset, &mut h as *mut Hdr, d.as_ptr()) };
    if r != 0 {
        return Err(format!("capset: {}", errno()));
    }
    Ok(())
}

fn load_raw(ptype: u32, insns: &[Insn]) -> Result<(Fd, String), String> {
    let code = encode_all(insns);
    let license = b"GPL\0";
    let mut log = vec![0u8; 1 << 20];
    let mut a = [0u8; 144];
    put32(&mut a, 0, ptype);
    put32(&mut a, 4, insns.len() as u32);
    put64(&mut a, 8, code.as_ptr() as u64);
    put64(&mut a, 16, license.as_ptr() as u64);
    put32(&mut a, 24, 1); // log_level
    put32(&mut a, 28, log.len() as u32);
    put64(&mut a, 32, log.as_mut_ptr() as u64);
    let fd = bpf(BPF_PROG_LOAD, &mut a);
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    let text = String::from_utf8_lossy(&log[..end]).into_owned();
    if fd < 0 {
        let e = errno();
        return Err(format!("{e}\n{text}"));
    }
    Ok((Fd(fd as i32), text))
}

impl KernelProg {
    /// `BPF_PROG_TEST_RUN` on one packet: the program's return value.
    pub fn test_run(&self, packet: &[u8]) -> Result<u32, String> {
        let mut out = vec![0u8; packet.len() + 512];
        let mut a = [0u8; 144];
        put32(&mut a, 0, self.fd.0 as u32);
        put32(&mut a, 8, packet.len() as u32);
        put32(&mut a, 12, out.len() as u32);
        put64(&mut a, 16, packet.as_ptr() as u64);
        put64(&mut a, 24, out.as_mut_ptr() as u64);
        put32(&mut a, 32, 1);
        let r = bpf(BPF_PROG_TEST_RUN, &mut a);
        if r < 0 {
            return Err(format!("BPF_PROG_TEST_RUN: {}", errno()));
        }
        Ok(get32(&a, 4))
    }

    /// Entries of map `m`, sorted by key. Per-CPU arrays: the values of all
    /// possible CPUs, concatenated (each padded to 8 bytes).
    pub fn map_entries(&self, m: usize) -> Result<Entries, String> {
        let map = self.maps.get(m).ok_or("no such map")?;
        map_entries(map)
    }
}

/// Number of possible CPUs (per-CPU map values have one slot each).
pub fn possible_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| {
            let last = s.trim().rsplit(['-', ',']).next()?.to_string();
            last.parse::<usize>().ok().map(|n| n + 1)
        })
        .unwrap_or(1)
}

fn map_entries(map: &KernelMap) -> Result<Entries, String> {
    let ks = map.def.key_size as usize;
    let vs = map.def.value_size as usize;
    let vlen = if map.def.map_type == BPF_MAP_TYPE_PERCPU_ARRAY {
        vs.div_ceil(8) * 8 * possible_cpus()
    } else {
        vs
    };
    let mut out = Vec::new();
    let mut key = vec![0u8; ks];
    let mut next = vec![0u8; ks];
    let mut first = true;
    for _ in 0..=map.def.max_entries {
        let mut a = [0u8; 144];
        put32(&mut a, 0, map.fd.0 as u32);
        put64(&mut a, 8, if first { 0 } else { key.as_ptr() as u64 });
        put64(&mut a, 16, next.as_mut_ptr() as u64);
        if bpf(BPF_MAP_GET_NEXT_KEY, &mut a) < 0 {
            break;
        }
        first = false;
        key.copy_from_slice(&next);
        let mut val = vec![0u8; vlen];
        let mut a = [0u8; 144];
        put32(&mut a, 0, map.fd.0 as u32);
        put64(&mut a, 8, key.as_ptr() as u64);
        put64(&mut a, 16, val.as_mut_ptr() as u64);
        if bpf(BPF_MAP_LOOKUP_ELEM, &mut a) < 0 {
            return Err(format!("BPF_MAP_LOOKUP_ELEM: {}", errno()));
        }
        out.push((key.clone(), val));
    }
    out.sort();
    Ok(out)
}
