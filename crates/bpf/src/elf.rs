//! ELF loader for objects built by `clang -O2 -g -target bpf -c prog.c`.
//!
//! What? Turns a relocatable eBPF ELF object into [`Program`]s: every
//! non-empty executable section is one program (its type guessed from the
//! section name like libbpf does: `xdp*` → XDP, `socket*` → socket filter,
//! anything else XDP); maps come from
//! - the legacy `maps` section: `struct bpf_map_def { u32 type, key_size,
//!   value_size, max_entries, map_flags; ... }`, one per symbol, and
//! - BTF-defined maps in `.maps`: the `.BTF` section describes each map
//!   variable as a struct whose members encode the parameters
//!   (`__uint(name, n)` is `int (*name)[n]`, `__type(key, T)` is `T *key`).
//!   `.maps` without `.BTF` (built without `-g`) is an error, as in libbpf.
//!
//! Map references are `R_BPF_64_64` relocations on `LDDW` instructions;
//! the loader rewrites them to `LDDW src=BPF_PSEUDO_MAP_FD imm=map index`.
//! Everything else — relocations against global data (`.rodata`, `.data`,
//! `.bss`), bpf-to-bpf calls (`R_BPF_64_32`) — is refused with an error
//! naming it, never silently ignored. ELF parsing is the `object` crate's;
//! this file only reads the eBPF-specific layouts, with bounds checks on
//! every field (no panics on arbitrary bytes: see `fuzz_load`).

use std::collections::HashMap;

use object::{
    Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget, SectionKind, SymbolKind,
};

use crate::insn::{decode_all, LDDW, PSEUDO_MAP_FD};
use crate::maps::MapDef;
use crate::{ProgType, Program};

/// Maximum number of maps one object may declare.
pub const MAX_MAPS: usize = 64;

/// Why an object could not be loaded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("load error: {0}")]
pub struct LoadError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, LoadError> {
    Err(LoadError(msg.into()))
}

fn u32_at(d: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(d.get(off..off.checked_add(4)?)?.try_into().ok()?))
}

/// Program type from a section name (libbpf conventions).
pub fn prog_type_of_section(name: &str) -> ProgType {
    if name.starts_with("socket") {
        ProgType::SocketFilter
    } else {
        ProgType::Xdp
    }
}

/// Loads every program in an object. All programs share the object's maps.
pub fn load(data: &[u8]) -> Result<Vec<Program>, LoadError> {
    let file =
        object::File::parse(data).map_err(|e| LoadError(format!("not an ELF object: {e}")))?;
    if file.architecture() != object::Architecture::Bpf {
        return err(format!("not an eBPF object (architecture {:?})", file.architecture()));
    }
    // Maps, keyed by (section index, offset).
    let mut maps: Vec<MapDef> = Vec::new();
    let mut map_at: HashMap<(usize, u64), usize> = HashMap::new();
    let mut maps_sections = Vec::new();
    for sec in file.sections() {
        let name = sec.name().unwrap_or("");
        if name == "maps" {
            maps_sections.push(sec.index().0);
            let d = sec.data().map_err(|e| LoadError(format!("maps section: {e}")))?;
            let mut syms: Vec<_> = file
                .symbols()
                .filter(|s| {
                    s.section_index() == Some(sec.index()) && s.kind() != SymbolKind::Section
                })
                .collect();
            syms.sort_by_key(|s| s.address());
            for s in syms {
                let off = s.address() as usize;
                let f = |i: usize| u32_at(d, off.saturating_add(i * 4));
                let (Some(t), Some(k), Some(v), Some(m)) = (f(0), f(1), f(2), f(3)) else {
                    return err(format!("map {}: truncated bpf_map_def", s.name().unwrap_or("?")));
                };
                let def = MapDef {
                    name: s.name().unwrap_or("?").to_string(),
                    map_type: t,
                    key_size: k,
                    value_size: v,
                    max_entries: m,
                    flags: f(4).unwrap_or(0),
                };
                push_map(&mut maps, &mut map_at, (sec.index().0, s.address()), def)?;
            }
        } else if name == ".maps" {
            maps_sections.push(sec.index().0);
            let btf =
                file.section_by_name(".BTF").and_then(|s| s.data().ok()).ok_or_else(|| {
                    LoadError("BTF-defined maps (.maps) need .BTF: build with -g".into())
                })?;
            // In an object file (before libbpf's fix-up) the DATASEC
            // offsets are all 0: each map's place in `.maps` is its
            // symbol's address, which relocations name.
            let placed: HashMap<String, u64> = file
                .symbols()
                .filter(|s| {
                    s.section_index() == Some(sec.index()) && s.kind() != SymbolKind::Section
                })
                .filter_map(|s| Some((s.name().ok()?.to_string(), s.address())))
                .collect();
            for (off, def) in btf_maps(btf)? {
                let off = placed.get(&def.name).copied().unwrap_or(off);
                push_map(&mut maps, &mut map_at, (sec.index().0, off), def)?;
            }
        }
    }

    let mut progs = Vec::new();
    for sec in file.sections() {
        if sec.kind() != SectionKind::Text || sec.size() == 0 {
            continue;
        }
        let name = sec.name().unwrap_or("?").to_string();
        let d = sec.data().map_err(|e| LoadError(format!("section {name}: {e}")))?;
        let (mut insns, rest) = decode_all(d);
        if rest != 0 {
            return err(format!("section {name}: size is not a multiple of 8"));
        }
        for (off, rel) in sec.relocations() {
            let RelocationFlags::Elf { r_type } = rel.flags() else {
                return err("unexpected relocation encoding");
            };
            let idx = (off / 8) as usize;
            if off % 8 != 0 || idx >= insns.len() {
                return err(format!("section {name}: relocation at bad offset {off}"));
            }
            let RelocationTarget::Symbol(si) = rel.target() else {
                return err(format!("section {name}: relocation without symbol"));
            };
            let sym =
                file.symbol_by_index(si).map_err(|e| LoadError(format!("section {name}: {e}")))?;
            let sym_name = sym.name().unwrap_or("?").to_string();
            match r_type {
                1 => {}
                10 => {
                    return err(format!(
                        "insn {idx}: bpf-to-bpf call to {sym_name} is not supported"
                    ))
                }
                t => {
                    return err(format!("insn {idx}: unsupported relocation type {t} ({sym_name})"))
                }
            }
            let Some(target_sec) = sym.section_index() else {
                return err(format!("insn {idx}: relocation against undefined symbol {sym_name}"));
            };
            let insn = &mut insns[idx];
            if insn.code != LDDW {
                return err(format!("insn {idx}: map relocation on a non-LDDW instruction"));
            }
            if !maps_sections.contains(&target_sec.0) {
                let sname = file
                    .section_by_index(target_sec)
                    .ok()
                    .and_then(|s| s.name().ok().map(str::to_string))
                    .unwrap_or_default();
                return err(format!(
                    "insn {idx}: reference to {sym_name} in section {sname}: global data is not supported"
                ));
            }
            let mut moff = sym.address();
            if sym.kind() == SymbolKind::Section {
                moff = moff.wrapping_add(insn.imm as u32 as u64);
            }
            let Some(&m) = map_at.get(&(target_sec.0, moff)) else {
                return err(format!("insn {idx}: relocation to {sym_name} is not a map"));
            };
            insn.src = PSEUDO_MAP_FD;
            insn.imm = m as i32;
        }
        progs.push(Program {
            prog_type: prog_type_of_section(&name),
            name,
            insns,
            maps: maps.clone(),
        });
    }
    if progs.is_empty() {
        return err("object contains no program section");
    }
    Ok(progs)
}

fn push_map(
    maps: &mut Vec<MapDef>,
    map_at: &mut HashMap<(usize, u64), usize>,
    key: (usize, u64),
    def: MapDef,
) -> Result<(), LoadError> {
    if maps.len() >= MAX_MAPS {
        return err(format!("more than {MAX_MAPS} maps"));
    }
    map_at.insert(key, maps.len());
    maps.push(def);
    Ok(())
}

// ---- BTF (just enough for map definitions) ----

const BTF_KIND_INT: u32 = 1;
const BTF_KIND_PTR: u32 = 2;
const BTF_KIND_ARRAY: u32 = 3;
const BTF_KIND_STRUCT: u32 = 4;
const BTF_KIND_UNION: u32 = 5;
const BTF_KIND_ENUM: u32 = 6;
const BTF_KIND_TYPEDEF: u32 = 8;
const BTF_KIND_VOLATILE: u32 = 9;
const BTF_KIND_CONST: u32 = 10;
const BTF_KIND_RESTRICT: u32 = 11;
const BTF_KIND_VAR: u32 = 14;
const BTF_KIND_DATASEC: u32 = 15;
const BTF_KIND_FLOAT: u32 = 16;
const BTF_KIND_TYPE_TAG: u32 = 18;
const BTF_KIND_ENUM64: u32 = 19;

#[derive(Clone, Copy, Debug)]
struct BtfType {
    name_off: u32,
    kind: u32,
    vlen: u32,
    size_or_type: u32,
    /// Offset of the kind-specific data in the type section.
    extra: usize,
}

struct Btf<'a> {
    types: Vec<BtfType>,
    tdata: &'a [u8],
    strs: &'a [u8],
}

impl<'a> Btf<'a> {
    fn parse(d: &'a [u8]) -> Result<Btf<'a>, LoadError> {
        let bad = |m: &str| LoadError(format!("bad .BTF: {m}"));
        if d.get(0..2) != Some(&[0x9f, 0xeb]) {
            return Err(bad("magic"));
        }
        let hdr_len = u32_at(d, 4).ok_or_else(|| bad("header"))? as usize;
        let f = |i: usize| u32_at(d, 8 + 4 * i).map(|v| v as usize).ok_or_else(|| bad("header"));
        let (type_off, type_len, str_off, str_len) = (f(0)?, f(1)?, f(2)?, f(3)?);
        let sect = |o: usize, l: usize| {
            let s = hdr_len.checked_add(o).ok_or_else(|| bad("offset"))?;
            d.get(s..s.checked_add(l).ok_or_else(|| bad("offset"))?)
                .ok_or_else(|| bad("section out of range"))
        };
        let tdata = sect(type_off, type_len)?;
        let strs = sect(str_off, str_len)?;
        // Type id 0 is void.
        let mut types = vec![BtfType { name_off: 0, kind: 0, vlen: 0, size_or_type: 0, extra: 0 }];
        let mut p = 0usize;
        while p + 12 <= tdata.len() {
            let name_off = u32_at(tdata, p).ok_or_else(|| bad("type"))?;
            let info = u32_at(tdata, p + 4).ok_or_else(|| bad("type"))?;
            let size_or_type = u32_at(tdata, p + 8).ok_or_else(|| bad("type"))?;
            let kind = (info >> 24) & 0x1f;
            let vlen = info & 0xffff;
            let extra = p + 12;
            let extra_len = match kind {
                BTF_KIND_INT | BTF_KIND_VAR | 17 => 4,
                BTF_KIND_ARRAY => 12,
                BTF_KIND_STRUCT | BTF_KIND_UNION | BTF_KIND_DATASEC | BTF_KIND_ENUM64 => {
                    12 * vlen as usize
                }
                BTF_KIND_ENUM | 13 => 8 * vlen as usize,
                _ => 0,
            };
            types.push(BtfType { name_off, kind, vlen, size_or_type, extra });
            p = extra + extra_len;
        }
        Ok(Btf { types, tdata, strs })
    }

    fn name(&self, off: u32) -> &str {
        let s = self.strs.get(off as usize..).unwrap_or(&[]);
        let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
        std::str::from_utf8(&s[..end]).unwrap_or("?")
    }

    fn ty(&self, id: u32) -> Option<&BtfType> {
        self.types.get(id as usize)
    }

    /// Follows typedef/const/volatile/restrict/type-tag.
    fn skip_mods(&self, mut id: u32) -> Option<&BtfType> {
        for _ in 0..32 {
            let t = self.ty(id)?;
            match t.kind {
                BTF_KIND_TYPEDEF | BTF_KIND_VOLATILE | BTF_KIND_CONST | BTF_KIND_RESTRICT
                | BTF_KIND_TYPE_TAG => id = t.size_or_type,
                _ => return Some(t),
            }
        }
        None
    }

    fn size_of(&self, id: u32, depth: u32) -> Option<u64> {
        if depth > 32 {
            return None;
        }
        let t = self.skip_mods(id)?;
        match t.kind {
            BTF_KIND_INT | BTF_KIND_STRUCT | BTF_KIND_UNION | BTF_KIND_ENUM | BTF_KIND_FLOAT
            | BTF_KIND_ENUM64 => Some(t.size_or_type as u64),
            BTF_KIND_PTR => Some(8),
            BTF_KIND_ARRAY => {
                let elem = u32_at(self.tdata, t.extra)?;
                let n = u32_at(self.tdata, t.extra + 8)? as u64;
                self.size_of(elem, depth + 1)?.checked_mul(n)
            }
            _ => None,
        }
    }

    /// `int (*name)[N]` → N.
    fn uint_member(&self, ty: u32) -> Option<u32> {
        let p = self.skip_mods(ty)?;
        if p.kind != BTF_KIND_PTR {
            return None;
        }
        let a = self.skip_mods(p.size_or_type)?;
        if a.kind != BTF_KIND_ARRAY {
            return None;
        }
        u32_at(self.tdata, a.extra + 8)
    }

    /// `T *name` → sizeof(T).
    fn type_member(&self, ty: u32) -> Option<u32> {
        let p = self.skip_mods(ty)?;
        if p.kind != BTF_KIND_PTR {
            return None;
        }
        u32::try_from(self.size_of(p.size_or_type, 0)?).ok()
    }
}

/// Map definitions of the `.maps` DATASEC: (offset in `.maps`, definition).
fn btf_maps(d: &[u8]) -> Result<Vec<(u64, MapDef)>, LoadError> {
    let btf = Btf::parse(d)?;
    let mut out = Vec::new();
    let Some(sec) =
        btf.types.iter().find(|t| t.kind == BTF_KIND_DATASEC && btf.name(t.name_off) == ".maps")
    else {
        return err("no .maps DATASEC in .BTF");
    };
    for i in 0..sec.vlen as usize {
        let e = sec.extra + 12 * i;
        let (Some(var_id), Some(off)) = (u32_at(btf.tdata, e), u32_at(btf.tdata, e + 4)) else {
            return err("bad .BTF: truncated DATASEC");
        };
        let var = btf.ty(var_id).filter(|t| t.kind == BTF_KIND_VAR);
        let Some(var) = var else {
            return err("bad .BTF: DATASEC entry is not a VAR");
        };
        let name = btf.name(var.name_off).to_string();
        let Some(st) = btf.skip_mods(var.size_or_type).filter(|t| t.kind == BTF_KIND_STRUCT) else {
            return err(format!("map {name}: definition is not a struct"));
        };
        let mut def = MapDef {
            name: name.clone(),
            map_type: 0,
            key_size: 0,
            value_size: 0,
            max_entries: 0,
            flags: 0,
        };
        for m in 0..st.vlen as usize {
            let me = st.extra + 12 * m;
            let (Some(mname), Some(mty)) = (u32_at(btf.tdata, me), u32_at(btf.tdata, me + 4))
            else {
                return err("bad .BTF: truncated struct");
            };
            let mname = btf.name(mname);
            let bad = || LoadError(format!("map {name}: cannot read member {mname}"));
            match mname {
                "type" => def.map_type = btf.uint_member(mty).ok_or_else(bad)?,
                "max_entries" => def.max_entries = btf.uint_member(mty).ok_or_else(bad)?,
                "map_flags" => def.flags = btf.uint_member(mty).ok_or_else(bad)?,
                "key_size" => def.key_size = btf.uint_member(mty).ok_or_else(bad)?,
                "value_size" => def.value_size = btf.uint_member(mty).ok_or_else(bad)?,
                "key" => def.key_size = btf.type_member(mty).ok_or_else(bad)?,
                "value" => def.value_size = btf.type_member(mty).ok_or_else(bad)?,
                other => return err(format!("map {name}: unsupported attribute {other}")),
            }
        }
        out.push((off as u64, def));
    }
    Ok(out)
}
