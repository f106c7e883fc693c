//! The reference interpreter: defines what a program means.
//!
//! What? Executes instructions one by one over a *virtual* address space:
//! every pointer a program holds is `region_tag << 40 | offset`, and every
//! load or store is checked against the region's bounds and permissions
//! before it happens. The interpreter is therefore memory-safe without any
//! `unsafe` and without trusting the verifier: a program the verifier wrongly
//! accepted faults ([`Fault`]) instead of corrupting memory. The fuzz target
//! uses exactly this to find verifier bugs (accepted + fault = bug).
//!
//! Regions: context (read-only, fields synthesised on read), stack (512
//! bytes, read/write), packet (read-only: filter programs never write the
//! packet), map handles (not dereferenceable) and map value slabs.
//!
//! Semantics follow Linux: 32-bit ALU ops zero-extend; shift amounts are
//! masked to the operand width; division by zero yields 0 and modulo by zero
//! leaves the dividend (truncated to 32 bits for ALU32); `LD_ABS`/`LD_IND`
//! out of bounds end the program with return value 0. A step limit turns an
//! (unverified) endless loop into a fault.

use crate::helpers::{self, Env};
use crate::insn::{alu, class, jmp, mode, size, size_bytes, Insn, LDDW, PSEUDO_MAP_FD};
use crate::ProgType;

/// Address-space layout of the interpreter.
pub const TAG_SHIFT: u32 = 40;
const OFF_MASK: u64 = (1 << TAG_SHIFT) - 1;
pub const TAG_CTX: u64 = 1;
pub const TAG_STACK: u64 = 2;
pub const TAG_PKT: u64 = 3;
pub const TAG_MAP: u64 = 4;
/// Map value slab `s` of map `m` has tag `TAG_VALUE + m * 256 + s`.
pub const TAG_VALUE: u64 = 0x1000;
pub const STACK_SIZE: usize = 512;
/// Interpreter step limit (verified programs finish far earlier).
pub const MAX_STEPS: u64 = 1 << 22;

/// A run-time fault: the program was stopped at `pc`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub pc: usize,
    pub reason: String,
}

/// The per-packet input of a run.
#[derive(Clone, Copy, Debug)]
pub struct Input<'a> {
    pub packet: &'a [u8],
    pub ingress_ifindex: u32,
    pub rx_queue_index: u32,
}

impl<'a> Input<'a> {
    pub fn packet(packet: &'a [u8]) -> Input<'a> {
        Input { packet, ingress_ifindex: 0, rx_queue_index: 0 }
    }
}

pub fn addr(tag: u64, off: u64) -> u64 {
    (tag << TAG_SHIFT).wrapping_add(off)
}

/// Value of a context field read (offset, size), or None if not readable.
/// XDP: `struct xdp_md`; socket filter: `struct __sk_buff` (only `len`).
pub fn ctx_field(ptype: ProgType, off: i64, sz: u32) -> Option<CtxField> {
    match (ptype, off, sz) {
        (ProgType::Xdp, 0, 4) => Some(CtxField::Data),
        (ProgType::Xdp, 4, 4) => Some(CtxField::DataEnd),
        (ProgType::Xdp, 12, 4) => Some(CtxField::IngressIfindex),
        (ProgType::Xdp, 16, 4) => Some(CtxField::RxQueueIndex),
        (ProgType::SocketFilter, 0, 4) => Some(CtxField::Len),
        _ => None,
    }
}

/// Context fields sluice offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtxField {
    Data,
    DataEnd,
    IngressIfindex,
    RxQueueIndex,
    Len,
}

struct Mem<'a, 'e> {
    stack: [u8; STACK_SIZE],
    input: Input<'a>,
    env: &'e mut Env,
    ptype: ProgType,
}

impl Mem<'_, '_> {
    fn load(&mut self, a: u64, n: u32) -> Result<u64, String> {
        let (tag, off) = (a >> TAG_SHIFT, a & OFF_MASK);
        if tag == TAG_CTX {
            let f = ctx_field(self.ptype, off as i64, n)
                .ok_or_else(|| format!("invalid context read at offset {off} size {n}"))?;
            return Ok(match f {
                CtxField::Data => addr(TAG_PKT, 0),
                CtxField::DataEnd => addr(TAG_PKT, self.input.packet.len() as u64),
                CtxField::IngressIfindex => self.input.ingress_ifindex as u64,
                CtxField::RxQueueIndex => self.input.rx_queue_index as u64,
                CtxField::Len => self.input.packet.len() as u64,
            });
        }
        if tag == TAG_PKT {
            let p = self.input.packet;
            let end = off.checked_add(n as u64).ok_or("address overflow")?;
            let b = p
                .get(off as usize..end as usize)
                .ok_or_else(|| format!("packet access out of bounds: off {off} size {n}"))?;
            return Ok(le(b));
        }
        Ok(le(self.slice(tag, off, n)?))
    }

    /// A writable region's bytes (stack or map value).
    fn slice(&mut self, tag: u64, off: u64, n: u32) -> Result<&mut [u8], String> {
        let n = n as u64;
        let region: &mut [u8] = match tag {
            TAG_STACK => &mut self.stack,
            TAG_PKT => return Err("write to packet".into()),
            t if t >= TAG_VALUE => {
                let m = ((t - TAG_VALUE) / 256) as usize;
                let s = ((t - TAG_VALUE) % 256) as usize;
                self.env
                    .maps
                    .get_mut(m)
                    .and_then(|m| m.slab_mut(s))
                    .ok_or_else(|| format!("invalid map value address {:#x}", addr(t, off)))?
            }
            _ => return Err(format!("invalid memory access at {:#x}", addr(tag, off))),
        };
        let end = off.checked_add(n).ok_or("address overflow")?;
        if end > region.len() as u64 {
            return Err(format!("memory access out of bounds at {:#x} size {n}", addr(tag, off)));
        }
        Ok(&mut region[off as usize..end as usize])
    }

    fn store(&mut self, a: u64, n: u32, v: u64) -> Result<(), String> {
        let (tag, off) = (a >> TAG_SHIFT, a & OFF_MASK);
        if tag == TAG_CTX {
            return Err("write to context".into());
        }
        let dst = self.slice(tag, off, n)?;
        dst.copy_from_slice(&v.to_le_bytes()[..n as usize]);
        Ok(())
    }

    /// Reads `n` bytes at a virtual address into a fresh buffer (helper arguments).
    fn read_bytes(&mut self, a: u64, n: u64) -> Result<Vec<u8>, String> {
        if n > 4096 {
            return Err("helper memory argument too large".into());
        }
        let (tag, off) = (a >> TAG_SHIFT, a & OFF_MASK);
        if tag == TAG_PKT {
            let end = off.checked_add(n).ok_or("address overflow")?;
            return self
                .input
                .packet
                .get(off as usize..end as usize)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| "packet access out of bounds".into());
        }
        Ok(self.slice(tag, off, n as u32)?.to_vec())
    }
}

fn le(b: &[u8]) -> u64 {
    let mut x = [0u8; 8];
    x[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
    u64::from_le_bytes(x)
}

/// Linux ALU semantics on 64-bit operands. `None` for an unknown op.
pub fn alu64(op: u8, d: u64, s: u64) -> Option<u64> {
    Some(match op {
        alu::ADD => d.wrapping_add(s),
        alu::SUB => d.wrapping_sub(s),
        alu::MUL => d.wrapping_mul(s),
        alu::DIV => d.checked_div(s).unwrap_or(0),
        alu::OR => d | s,
        alu::AND => d & s,
        alu::LSH => d.wrapping_shl((s & 63) as u32),
        alu::RSH => d.wrapping_shr((s & 63) as u32),
        alu::NEG => d.wrapping_neg(),
        alu::MOD => d.checked_rem(s).unwrap_or(d),
        alu::XOR => d ^ s,
        alu::MOV => s,
        alu::ARSH => ((d as i64) >> (s & 63)) as u64,
        _ => return None,
    })
}

/// Linux ALU semantics on 32-bit operands; the result is zero-extended.
pub fn alu32(op: u8, d: u64, s: u64) -> Option<u64> {
    let (d, s) = (d as u32, s as u32);
    Some(
        (match op {
            alu::ADD => d.wrapping_add(s),
            alu::SUB => d.wrapping_sub(s),
            alu::MUL => d.wrapping_mul(s),
            alu::DIV => d.checked_div(s).unwrap_or(0),
            alu::OR => d | s,
            alu::AND => d & s,
            alu::LSH => d.wrapping_shl(s & 31),
            alu::RSH => d.wrapping_shr(s & 31),
            alu::NEG => d.wrapping_neg(),
            alu::MOD => d.checked_rem(s).unwrap_or(d),
            alu::XOR => d ^ s,
            alu::MOV => s,
            alu::ARSH => ((d as i32) >> (s & 31)) as u32,
            _ => return None,
        }) as u64,
    )
}

/// Byte-order conversion (`BPF_END`): `to_be` for `BPF_TO_BE`, width 16/32/64.
pub fn endian(v: u64, width: i32, to_be: bool) -> Option<u64> {
    Some(match (width, to_be) {
        (16, true) => (v as u16).swap_bytes() as u64,
        (32, true) => (v as u32).swap_bytes() as u64,
        (64, true) => v.swap_bytes(),
        (16, false) => v as u16 as u64,
        (32, false) => v as u32 as u64,
        (64, false) => v,
        _ => return None,
    })
}

/// Linux jump conditions; `wide` false compares the low 32 bits.
pub fn cond(op: u8, a: u64, b: u64, wide: bool) -> Option<bool> {
    let (a, b, sa, sb) = if wide {
        (a, b, a as i64, b as i64)
    } else {
        (a as u32 as u64, b as u32 as u64, a as i32 as i64, b as i32 as i64)
    };
    Some(match op {
        jmp::JEQ => a == b,
        jmp::JNE => a != b,
        jmp::JGT => a > b,
        jmp::JGE => a >= b,
        jmp::JLT => a < b,
        jmp::JLE => a <= b,
        jmp::JSET => a & b != 0,
        jmp::JSGT => sa > sb,
        jmp::JSGE => sa >= sb,
        jmp::JSLT => sa < sb,
        jmp::JSLE => sa <= sb,
        _ => return None,
    })
}

/// Runs `insns` on one packet. Map references in `LDDW` are map indices
/// into `env.maps`.
pub fn run(insns: &[Insn], ptype: ProgType, env: &mut Env, input: Input<'_>) -> Result<u64, Fault> {
    let mut mem = Mem { stack: [0; STACK_SIZE], input, env, ptype };
    let mut r = [0u64; 11];
    r[1] = addr(TAG_CTX, 0);
    r[10] = addr(TAG_STACK, STACK_SIZE as u64);
    let mut pc = 0usize;
    let mut steps = 0u64;
    loop {
        steps += 1;
        if steps > MAX_STEPS {
            return Err(Fault { pc, reason: "step limit exceeded".into() });
        }
        let fault = |reason: String| Fault { pc, reason };
        let Some(&i) = insns.get(pc) else {
            return Err(fault("fell off the end of the program".into()));
        };
        let (d, s) = (i.dst as usize, i.src as usize);
        if d > 10 || s > 10 {
            return Err(fault("invalid register".into()));
        }
        let imm = i.imm as i64 as u64;
        let next = pc + 1;
        match i.class() {
            class::ALU64 | class::ALU => {
                let wide = i.class() == class::ALU64;
                let v = if i.op() == alu::END {
                    if wide {
                        return Err(fault("unsupported instruction (bswap)".into()));
                    }
                    endian(r[d], i.imm, i.is_src_x())
                } else {
                    let sv = if i.is_src_x() { r[s] } else { imm };
                    if wide {
                        alu64(i.op(), r[d], sv)
                    } else {
                        alu32(i.op(), r[d], sv)
                    }
                };
                r[d] = v.ok_or_else(|| fault(format!("invalid opcode {:#04x}", i.code)))?;
                pc = next;
            }
            class::JMP | class::JMP32 => {
                let wide = i.class() == class::JMP;
                match i.op() {
                    jmp::JA if wide => {
                        pc = jump(pc, i.off).ok_or_else(|| fault("bad jump".into()))?
                    }
                    jmp::EXIT if wide => return Ok(r[0]),
                    jmp::CALL if wide => {
                        r[0] = call(&mut mem, i.imm, &r).map_err(fault)?;
                        // Caller-saved registers are clobbered (made 0 so that
                        // a buggy program's use of them is deterministic).
                        r[1..=5].fill(0);
                        pc = next;
                    }
                    op => {
                        let sv = if i.is_src_x() { r[s] } else { imm };
                        let c = cond(op, r[d], sv, wide)
                            .ok_or_else(|| fault(format!("invalid opcode {:#04x}", i.code)))?;
                        pc = if c {
                            jump(pc, i.off).ok_or_else(|| fault("bad jump".into()))?
                        } else {
                            next
                        };
                    }
                }
            }
            class::LDX if i.mode() == mode::MEM => {
                let a = r[s].wrapping_add(i.off as i64 as u64);
                r[d] = mem.load(a, size_bytes(i.size())).map_err(fault)?;
                pc = next;
            }
            class::STX if i.mode() == mode::ATOMIC => {
                let n = size_bytes(i.size());
                if n < 4 {
                    return Err(fault("invalid atomic operand size".into()));
                }
                let a = r[d].wrapping_add(i.off as i64 as u64);
                let old = mem.load(a, n).map_err(fault)?;
                let (new, fetched) = atomic_op(i.imm, old, r[s], r[0], n == 8)
                    .ok_or_else(|| fault(format!("invalid atomic op {:#x}", i.imm)))?;
                mem.store(a, n, new).map_err(fault)?;
                if let Some((reg, v)) = fetched {
                    r[reg] = v;
                }
                if i.imm & crate::insn::atomic::FETCH != 0 && i.imm != crate::insn::atomic::CMPXCHG
                {
                    r[s] = old;
                }
                pc = next;
            }
            class::STX if i.mode() == mode::MEM => {
                let a = r[d].wrapping_add(i.off as i64 as u64);
                mem.store(a, size_bytes(i.size()), r[s]).map_err(fault)?;
                pc = next;
            }
            class::ST if i.mode() == mode::MEM => {
                let a = r[d].wrapping_add(i.off as i64 as u64);
                mem.store(a, size_bytes(i.size()), imm).map_err(fault)?;
                pc = next;
            }
            class::LD if i.code == LDDW => {
                let Some(hi) = insns.get(pc + 1) else {
                    return Err(fault("truncated LDDW".into()));
                };
                r[d] = match i.src {
                    0 => (i.imm as u32 as u64) | ((hi.imm as u32 as u64) << 32),
                    PSEUDO_MAP_FD => addr(TAG_MAP, i.imm as u32 as u64),
                    _ => return Err(fault("unsupported LDDW source".into())),
                };
                pc += 2;
            }
            class::LD if matches!(i.mode(), mode::ABS | mode::IND) => {
                let n = size_bytes(i.size());
                if i.size() == size::DW {
                    return Err(fault("LD_ABS/LD_IND of size DW".into()));
                }
                let base = if i.mode() == mode::IND { r[s] as u32 as i64 } else { 0 };
                let off = base + i.imm as i64;
                let p = mem.input.packet;
                let v = if off < 0 { None } else { p.get(off as usize..off as usize + n as usize) };
                match v {
                    None => return Ok(0),
                    Some(b) => {
                        r[0] = b.iter().fold(0u64, |acc, &x| (acc << 8) | x as u64);
                    }
                }
                r[1..=5].fill(0);
                pc = next;
            }
            _ => return Err(fault(format!("invalid opcode {:#04x}", i.code))),
        }
    }
}

/// Linux atomic semantics: returns (value to store, register to load with
/// the old value: r0 for CMPXCHG). `old` is already zero-extended.
pub fn atomic_op(
    imm: i32,
    old: u64,
    src: u64,
    r0: u64,
    wide: bool,
) -> Option<(u64, Option<(usize, u64)>)> {
    use crate::insn::atomic;
    let mask = if wide { u64::MAX } else { u32::MAX as u64 };
    let src = src & mask;
    let new = match imm & !atomic::FETCH {
        atomic::ADD => old.wrapping_add(src) & mask,
        atomic::OR => old | src,
        atomic::AND => old & src,
        atomic::XOR => old ^ src,
        _ if imm == atomic::XCHG => src,
        _ if imm == atomic::CMPXCHG => {
            let new = if old == r0 & mask { src } else { old };
            return Some((new, Some((0, old))));
        }
        _ => return None,
    };
    Some((new, None))
}

fn jump(pc: usize, off: i16) -> Option<usize> {
    let t = pc as i64 + 1 + off as i64;
    (t >= 0).then_some(t as usize)
}

fn map_index(v: u64) -> Result<usize, String> {
    if v >> TAG_SHIFT != TAG_MAP {
        return Err("helper argument is not a map".into());
    }
    Ok((v & OFF_MASK) as usize)
}

fn call(mem: &mut Mem<'_, '_>, id: i32, r: &[u64; 11]) -> Result<u64, String> {
    match id {
        helpers::MAP_LOOKUP | helpers::MAP_UPDATE | helpers::MAP_DELETE => {
            let m = map_index(r[1])?;
            let def = &mem.env.maps.get(m).ok_or("no such map")?.def;
            let (ks, vs) = (def.key_size as u64, def.value_size as u64);
            let key = mem.read_bytes(r[2], ks)?;
            Ok(match id {
                helpers::MAP_LOOKUP => match mem.env.lookup(m, &key) {
                    Some(v) => addr(TAG_VALUE + m as u64 * 256 + v.slab as u64, v.offset as u64),
                    None => 0,
                },
                helpers::MAP_UPDATE => {
                    let val = mem.read_bytes(r[3], vs)?;
                    mem.env.update(m, &key, &val, r[4])
                }
                _ => mem.env.delete(m, &key),
            })
        }
        helpers::KTIME_GET_NS => Ok(mem.env.ktime_ns()),
        helpers::TRACE_PRINTK => {
            let fmt = mem.read_bytes(r[1], r[2])?;
            Ok(mem.env.trace_printk(&fmt, [r[3], r[4], r[5]]))
        }
        helpers::SLUICE_HASH => {
            let data = mem.read_bytes(r[1], r[2])?;
            Ok(helpers::sluice_hash(&data, r[3]))
        }
        _ => Err(format!("unknown helper {id}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asm::*;
    use crate::prog;

    fn run_on(insns: Vec<Insn>, pkt: &[u8]) -> Result<u64, Fault> {
        run(&insns, ProgType::Xdp, &mut Env::new(vec![]), Input::packet(pkt))
    }
    fn run_sk(insns: Vec<Insn>, pkt: &[u8]) -> Result<u64, Fault> {
        run(&insns, ProgType::SocketFilter, &mut Env::new(vec![]), Input::packet(pkt))
    }

    #[test]
    fn linux_division_semantics() {
        // x / 0 = 0, x % 0 = x; 32-bit mod by 0 truncates the dividend.
        let div0 = prog![lddw(0, 0x1_0000_0007), mov64_imm(1, 0), alu64_reg(op::DIV, 0, 1), exit()];
        assert_eq!(run_on(div0, &[]), Ok(0));
        let mod0 = prog![lddw(0, 0x1_0000_0007), mov64_imm(1, 0), alu64_reg(op::MOD, 0, 1), exit()];
        assert_eq!(run_on(mod0, &[]), Ok(0x1_0000_0007));
        let mod32 =
            prog![lddw(0, 0x1_0000_0007), mov64_imm(1, 0), alu32_reg(op::MOD, 0, 1), exit()];
        assert_eq!(run_on(mod32, &[]), Ok(7));
    }

    #[test]
    fn alu32_zero_extends_and_shifts_mask() {
        let p = prog![mov64_imm(0, -1), alu32_imm(op::ADD, 0, 1), exit()];
        assert_eq!(run_on(p, &[]), Ok(0));
        let p = prog![mov64_imm(0, 1), mov64_imm(1, 65), alu64_reg(op::LSH, 0, 1), exit()];
        assert_eq!(run_on(p, &[]), Ok(2));
        let p = prog![mov64_imm(0, -8), alu32_imm(op::ARSH, 0, 1), exit()];
        assert_eq!(run_on(p, &[]), Ok(0xffff_fffc));
        let p = prog![mov64_imm(0, 0x1234), crate::asm::endian(true, 0, 16), exit()];
        assert_eq!(run_on(p, &[]), Ok(0x3412));
    }

    #[test]
    fn ld_abs_is_big_endian_and_oob_returns_zero() {
        let p = prog![mov64_reg(6, 1), ld_abs(size::H, 1), exit()];
        assert_eq!(run_sk(p.clone(), &[0xaa, 0x12, 0x34]), Ok(0x1234));
        assert_eq!(run_sk(p, &[0xaa, 0x12]), Ok(0));
        let p = prog![
            mov64_reg(6, 1),
            mov64_imm(2, -1),
            ld_ind(size::B, 2, 0),
            mov64_imm(0, 9),
            exit()
        ];
        assert_eq!(run_sk(p, &[1, 2, 3]), Ok(0));
    }

    #[test]
    fn unverified_programs_fault_instead_of_misbehaving() {
        // Unchecked packet read beyond the end.
        let p = prog![ldx(size::W, 2, 1, 0), ldx(size::B, 0, 2, 5), exit()];
        assert!(run_on(p.clone(), &[1, 2, 3]).is_err());
        assert_eq!(run_on(p, &[0, 0, 0, 0, 0, 9]), Ok(9));
        // Packet write.
        let p = prog![ldx(size::W, 2, 1, 0), st(size::B, 2, 0, 1), mov64_imm(0, 0), exit()];
        assert!(run_on(p, &[1, 2, 3]).unwrap_err().reason.contains("write to packet"));
        // Stack overflow below the frame.
        let p = prog![st(size::DW, 10, -520, 1), mov64_imm(0, 0), exit()];
        assert!(run_on(p, &[]).is_err());
        // Endless loop hits the step limit.
        let p = prog![mov64_imm(0, 0), ja(-1)];
        assert!(run_on(p, &[]).unwrap_err().reason.contains("step limit"));
        // Scalar dereference.
        let p = prog![mov64_imm(1, 4096), ldx(size::DW, 0, 1, 0), exit()];
        assert!(run_on(p, &[]).is_err());
    }

    #[test]
    fn xdp_context_fields() {
        let p =
            prog![ldx(size::W, 2, 1, 0), ldx(size::W, 0, 1, 4), alu64_reg(alu::SUB, 0, 2), exit()];
        assert_eq!(run_on(p, &[0; 77]), Ok(77));
        let p = prog![ldx(size::W, 0, 1, 12), exit()];
        let mut i = Input::packet(&[]);
        i.ingress_ifindex = 5;
        assert_eq!(run(&p, ProgType::Xdp, &mut Env::new(vec![]), i), Ok(5));
    }
}
