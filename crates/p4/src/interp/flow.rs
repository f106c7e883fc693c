//! Frames from descriptions of P4 header fields, for `sluice p4 trace
//! --flow`: `eth.dst=00:00:00:00:00:02,eth.ethertype=0x0800,ip.ttl=64`.
//!
//! # Rules
//!
//! * Each item is `HEADER.FIELD=VALUE` with the program's own names:
//!   `HEADER` is a path below the parser's headers parameter (`eth`,
//!   `outer.ip`, `vlan[1]` for a stack element; a leading `hdr.` — the
//!   parser's or deparser's name for that parameter — may be written);
//!   or `payload=HEX`, bytes appended after the headers.
//! * Values: decimal, `0x` hex, `0b` binary, IPv4 dotted for 32-bit
//!   fields, MAC colon form for 48-bit ones, IPv6 for 128-bit ones
//!   ([`crate::ctl::parse_value`], the `table_add` syntax).
//! * The frame is the named headers in the order the **deparser** emits
//!   them, each with the fields given and zero elsewhere, then the
//!   payload. Fields the description leaves out that the program's
//!   `computeChecksum` control writes (header checksums) get the value
//!   it computes, run on the named headers; a field given explicitly
//!   keeps its value (so a bad checksum can be traced too). The order comes from a static walk of the deparser's
//!   `apply` body: every `P.emit(E)` on its `packet_out` parameter, in
//!   source order, both branches of an `if` included; emitting a struct
//!   or a stack emits its headers (elements) in field (index) order. The
//!   deparser's order is the one the program writes packets in, so a
//!   traced program's own output has the same shape as its input;
//!   `emit`s inside functions or sub-controls the deparser calls are not
//!   seen.
//! * Refused, by name: an item that is not `NAME=VALUE`, an unknown
//!   header (listing the program's headers) or field (listing the
//!   header's fields), a field given twice, a value that does not fit
//!   the field's width, a header the deparser never emits, a field of a
//!   type the builder cannot write (`varbit`, structs in headers).

use std::collections::HashMap;
use std::sync::Arc;

use super::{visit_decl_exprs, Inst, Interp, Static};
use crate::ast::{Decl, Expr, ExprKind};
use crate::target::CtlResult;
use crate::types::{AggTy, Ty};
use crate::value::{BitWriter, Bits, Value};

/// A header the frame may carry: its path below `hdr` and its type.
#[derive(Clone, Debug)]
struct HeaderSlot {
    path: String,
    ty: Arc<AggTy>,
}

/// Most headers a walk of the header type lists (bounds huge stacks).
const MAX_HEADERS: usize = 4096;

impl Interp {
    /// The paths (below the headers parameter) of the headers the
    /// deparser emits, in its order.
    pub fn emitted_headers(&self) -> Vec<String> {
        emitted(&self.s).into_iter().map(|h| h.path).collect()
    }

    /// Builds a frame from a description of header fields (see the
    /// module docs); every error names the item that was wrong.
    pub fn flow_frame(&self, desc: &str) -> CtlResult<Vec<u8>> {
        let s = &self.s;
        let emitted = emitted(s);
        let mut all = Vec::new();
        headers_in(&s.hdr_ty, "", &mut all);
        let prefixes = header_param_names(s);
        let mut values: HashMap<String, Vec<(usize, Value)>> = HashMap::new();
        let mut payload = Vec::new();
        for item in desc.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let Some((name, val)) = item.split_once('=') else {
                return Err(format!("`{item}` is not HEADER.FIELD=VALUE"));
            };
            let (name, val) = (name.trim(), val.trim());
            if name == "payload" {
                payload = parse_hex(val).map_err(|e| format!("payload: {e}"))?;
                continue;
            }
            let mut name = name;
            for p in &prefixes {
                if let Some(rest) = name.strip_prefix(p.as_str()).and_then(|r| r.strip_prefix('.'))
                {
                    if !all
                        .iter()
                        .any(|h| h.path == p.as_str() || h.path.starts_with(&format!("{p}.")))
                    {
                        name = rest;
                    }
                }
            }
            let Some((hpath, field)) = name.rsplit_once('.') else {
                return Err(format!("`{name}` is not HEADER.FIELD (in `{item}`)"));
            };
            let Some(slot) = emitted.iter().find(|h| h.path == hpath) else {
                let list = join(all.iter().map(|h| h.path.as_str()));
                if all.iter().any(|h| h.path == hpath) {
                    return Err(format!(
                        "header `{hpath}` is never emitted by the deparser, so a frame \
                         cannot carry it (it emits: {})",
                        join(emitted.iter().map(|h| h.path.as_str()))
                    ));
                }
                return Err(format!("unknown header `{hpath}` (the program's headers: {list})"));
            };
            let Some(fi) = slot.ty.fields.iter().position(|(n, _)| n == field) else {
                return Err(format!(
                    "header `{hpath}` has no field `{field}` (its fields: {})",
                    join(slot.ty.fields.iter().map(|(n, _)| n.as_str()))
                ));
            };
            let fty = &slot.ty.fields[fi].1;
            let v = field_value(fty, val).map_err(|e| format!("{hpath}.{field}: {e}"))?;
            let set = values.entry(hpath.to_string()).or_default();
            if set.iter().any(|(i, _)| *i == fi) {
                return Err(format!("field `{hpath}.{field}` is given twice"));
            }
            set.push((fi, v));
        }
        // The headers value: named headers valid with their fields...
        let mut hdr = s.hdr_ty.default_value();
        let put = |hdr: &mut Value, fresh: bool| -> CtlResult<()> {
            for slot in &emitted {
                let Some(set) = values.get(&slot.path) else {
                    continue;
                };
                let h = value_at(hdr, &slot.path)
                    .ok_or_else(|| format!("internal error: no header `{}`", slot.path))?;
                if fresh {
                    *h = Ty::Header(slot.ty.clone()).default_value();
                    h.set_valid(true);
                }
                if let Value::Header(agg) = h {
                    for (i, v) in set {
                        if let Some(f) = agg.fields.get_mut(*i) {
                            *f = v.clone();
                        }
                    }
                }
            }
            Ok(())
        };
        put(&mut hdr, true)?;
        // ...checksums as computeChecksum writes them, except where the
        // description gives the field...
        let mut d = self.d.clone();
        hdr = super::exec::compute_checksums(s, &mut d, hdr)?;
        put(&mut hdr, false)?;
        // ...serialized in the deparser's order.
        let mut out = BitWriter::default();
        for slot in &emitted {
            if values.contains_key(&slot.path) {
                if let Some(h) = value_at(&mut hdr, &slot.path) {
                    h.serialize(&mut out);
                }
            }
        }
        let mut bytes = out.bytes;
        bytes.extend_from_slice(&payload);
        Ok(bytes)
    }
}

fn join<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let v: Vec<&str> = names.collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// Hex bytes (spaces and `:` allowed between them).
pub fn parse_hex(s: &str) -> Result<Vec<u8>, String> {
    let digits: String = s.chars().filter(|c| !c.is_whitespace() && *c != ':').collect();
    let digits = digits.strip_prefix("0x").unwrap_or(&digits);
    if digits.len() % 2 != 0 {
        return Err(format!("`{s}` has an odd number of hex digits"));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            digits
                .get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or_else(|| format!("`{s}` is not hex"))
        })
        .collect()
}

/// A field's value from its text.
fn field_value(ty: &Ty, text: &str) -> CtlResult<Value> {
    let (width, make): (u32, fn(Bits) -> Value) = match ty {
        Ty::Bits { signed: false, width } => (*width, Value::Bits),
        Ty::Bits { signed: true, width } => (*width, Value::Signed),
        Ty::Bool => (1, |b| Value::Bool(!b.is_zero())),
        Ty::Enum(e) if e.underlying.is_some() => {
            let (signed, w) = e.underlying.unwrap_or((false, 0));
            (w, if signed { Value::Signed } else { Value::Bits })
        }
        other => return Err(format!("not supported: writing a field of type {other}")),
    };
    let v = crate::ctl::parse_value(text, width)?;
    Ok(make(Bits::from_big(width, &v)))
}

/// The names the parser and the deparser give the headers parameter.
fn header_param_names(s: &Static) -> Vec<String> {
    let mut v = Vec::new();
    for (i, param) in [(0usize, 1usize), (5, 1)] {
        let Some(Inst::Block(b)) = s.insts.get(s.pipeline[i]) else {
            continue;
        };
        let name = match s.prog.decls.get(b.decl) {
            Some(Decl::Parser(p)) => p.params.get(param).map(|p| p.name.name.clone()),
            Some(Decl::Control(c)) => c.params.get(param).map(|p| p.name.name.clone()),
            _ => None,
        };
        if let Some(n) = name {
            if !v.contains(&n) {
                v.push(n);
            }
        }
    }
    v
}

/// Every header below a value of type `ty` at `path`, in field order.
fn headers_in(ty: &Ty, path: &str, out: &mut Vec<HeaderSlot>) {
    if out.len() >= MAX_HEADERS {
        return;
    }
    let join = |n: &str| if path.is_empty() { n.to_string() } else { format!("{path}.{n}") };
    match ty {
        Ty::Header(a) => out.push(HeaderSlot { path: path.to_string(), ty: a.clone() }),
        Ty::Struct(a) | Ty::HeaderUnion(a) => {
            for (n, t) in &a.fields {
                headers_in(t, &join(n), out);
            }
        }
        Ty::Stack(elem, n) => {
            for i in 0..*n {
                headers_in(elem, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// The headers the deparser emits, in order, each once.
fn emitted(s: &Static) -> Vec<HeaderSlot> {
    let Some(Inst::Block(b)) = s.insts.get(s.pipeline[5]) else {
        return Vec::new();
    };
    let Some(d @ Decl::Control(c)) = s.prog.decls.get(b.decl) else {
        return Vec::new();
    };
    let (Some(pkt), Some(hdr)) = (c.params.first(), c.params.get(1)) else {
        return Vec::new();
    };
    let (pkt, hdr) = (pkt.name.name.as_str(), hdr.name.name.as_str());
    let mut paths: Vec<Vec<String>> = Vec::new();
    visit_decl_exprs(d, &mut |e| {
        let ExprKind::Call { func, args, .. } = &e.kind else {
            return;
        };
        let ExprKind::Member(base, m) = &func.kind else {
            return;
        };
        let is_pkt = matches!(&base.kind, ExprKind::Name { id, .. } if id.name == pkt);
        if m.name != "emit" || !is_pkt {
            return;
        }
        if let Some(p) = args.first().and_then(|a| member_path(&a.value, hdr, 0)) {
            paths.push(p);
        }
    });
    let mut out: Vec<HeaderSlot> = Vec::new();
    for p in paths {
        let Some(ty) = type_at(&s.hdr_ty, &p) else {
            continue;
        };
        let mut found = Vec::new();
        headers_in(&ty, &p.join("."), &mut found);
        for h in found {
            if !out.iter().any(|o| o.path == h.path) {
                out.push(h);
            }
        }
    }
    out
}

/// `hdr.a.b` as `["a", "b"]` (`hdr` itself: `[]`; `hdr.s[1]`: `["s[1]"]`).
fn member_path(e: &Expr, root: &str, depth: u32) -> Option<Vec<String>> {
    if depth > 64 {
        return None;
    }
    match &e.kind {
        ExprKind::Name { id, .. } if id.name == root => Some(Vec::new()),
        ExprKind::Member(b, m) => {
            let mut p = member_path(b, root, depth + 1)?;
            p.push(m.name.clone());
            Some(p)
        }
        ExprKind::Index(b, i) => {
            let mut p = member_path(b, root, depth + 1)?;
            let ExprKind::Int { value, .. } = &i.kind else {
                return None;
            };
            let last = p.pop()?;
            p.push(format!("{last}[{}]", value.to_u128()?));
            Some(p)
        }
        _ => None,
    }
}

/// The value at a header path (`a.b`, `s[1]`) below `v`.
fn value_at<'a>(v: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    let mut cur = v;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (name, index) = match part.split_once('[') {
            Some((n, i)) => (n, Some(i.strip_suffix(']')?.parse::<usize>().ok()?)),
            None => (part, None),
        };
        cur = match cur {
            Value::Struct(a) | Value::Union(a) | Value::Header(a) => a.get_mut(name)?,
            _ => return None,
        };
        if let Some(i) = index {
            cur = match cur {
                Value::Stack(st) => st.elems.get_mut(i)?,
                _ => return None,
            };
        }
    }
    Some(cur)
}

/// The type at a member path below `ty`.
fn type_at(ty: &Ty, path: &[String]) -> Option<Ty> {
    let Some((first, rest)) = path.split_first() else {
        return Some(ty.clone());
    };
    let (name, index) = match first.split_once('[') {
        Some((n, i)) => (n, i.strip_suffix(']')?.parse::<u32>().ok()),
        None => (first.as_str(), None),
    };
    let field = match ty {
        Ty::Struct(a) | Ty::HeaderUnion(a) | Ty::Header(a) => a.field(name)?.clone(),
        _ => return None,
    };
    let field = match (index, field) {
        (Some(i), Ty::Stack(elem, n)) if i < n => *elem,
        (Some(_), _) => return None,
        (None, f) => f,
    };
    type_at(&field, rest)
}
