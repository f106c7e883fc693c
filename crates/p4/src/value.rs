//! Runtime values of P4 programs.
//!
//! [`Bits`] is a fixed-width bit vector over `u64` limbs with
//! wrap-around arithmetic; `bit<W>` values use it as unsigned numbers and
//! `int<W>` values as two's complement. Arbitrary-precision `int` is an
//! `i128`: anything that would overflow it is refused with an error
//! rather than wrapped. Aggregates carry their resolved type
//! ([`crate::types::AggTy`]) so fields are found by name.
//!
//! Every operation that can fail (division by zero, an `int` overflow,
//! operands of the wrong kind) returns `Err(String)`; nothing here
//! panics.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use crate::ast::{AggregateKind, BigValue, BinOp, UnOp};
use crate::types::{AggTy, Ty};

/// The widest `bit<W>`/`int<W>`/`varbit<W>` sluice accepts.
pub const MAX_WIDTH: u32 = 1 << 16;

/// A fixed-width bit vector. Bits above `width` are always zero.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Bits {
    width: u32,
    limbs: Vec<u64>,
}

fn limbs_for(width: u32) -> usize {
    (width as usize).div_ceil(64)
}

impl fmt::Debug for Bits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}w0x{}", self.width, self.to_hex())
    }
}

impl Bits {
    /// Zero of the given width (widths above [`MAX_WIDTH`] are clamped).
    pub fn zero(width: u32) -> Bits {
        let width = width.min(MAX_WIDTH);
        Bits { width, limbs: vec![0; limbs_for(width)] }
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn limbs(&self) -> &[u64] {
        &self.limbs
    }

    fn norm(mut self) -> Bits {
        let n = limbs_for(self.width);
        self.limbs.resize(n, 0);
        let rem = self.width % 64;
        if rem != 0 {
            if let Some(last) = self.limbs.last_mut() {
                *last &= (1u64 << rem) - 1;
            }
        }
        self
    }

    pub fn from_u128(width: u32, v: u128) -> Bits {
        let mut b = Bits::zero(width);
        if let Some(l) = b.limbs.get_mut(0) {
            *l = v as u64;
        }
        if let Some(l) = b.limbs.get_mut(1) {
            *l = (v >> 64) as u64;
        }
        b.norm()
    }

    pub fn from_u64(width: u32, v: u64) -> Bits {
        Bits::from_u128(width, v as u128)
    }

    /// Two's complement of `v` at `width` (wrapping).
    pub fn from_i128(width: u32, v: i128) -> Bits {
        let mut b = Bits::zero(width);
        let fill = if v < 0 { u64::MAX } else { 0 };
        for (i, l) in b.limbs.iter_mut().enumerate() {
            *l = match i {
                0 => v as u64,
                1 => (v >> 64) as u64,
                _ => fill,
            };
        }
        b.norm()
    }

    /// The literal's digits truncated to `width`.
    pub fn from_big(width: u32, v: &BigValue) -> Bits {
        let mut b = Bits::zero(width);
        for (l, src) in b.limbs.iter_mut().zip(v.0.iter()) {
            *l = *src;
        }
        b.norm()
    }

    /// Whether the literal's value fits in `width` bits unsigned.
    pub fn big_fits(width: u32, v: &BigValue) -> bool {
        let bits = big_bit_len(v);
        bits <= width as usize
    }

    pub fn to_big(&self) -> BigValue {
        let mut l = self.limbs.clone();
        while l.last() == Some(&0) {
            l.pop();
        }
        BigValue(l)
    }

    /// The low 64 bits.
    pub fn low_u64(&self) -> u64 {
        self.limbs.first().copied().unwrap_or(0)
    }

    /// The value if it fits in a `u64`.
    pub fn to_u64(&self) -> Option<u64> {
        if self.limbs.iter().skip(1).any(|&l| l != 0) {
            None
        } else {
            Some(self.low_u64())
        }
    }

    pub fn to_u128(&self) -> Option<u128> {
        if self.limbs.iter().skip(2).any(|&l| l != 0) {
            None
        } else {
            let lo = self.limbs.first().copied().unwrap_or(0) as u128;
            let hi = self.limbs.get(1).copied().unwrap_or(0) as u128;
            Some(lo | hi << 64)
        }
    }

    /// The value read as two's complement, if it fits in an `i128`.
    pub fn to_i128_signed(&self) -> Option<i128> {
        if self.width == 0 {
            return Some(0);
        }
        if self.sign_bit() {
            let neg = self.neg();
            let m = neg.to_u128()?;
            if m > (i128::MAX as u128) + 1 {
                None
            } else {
                Some((m as i128).wrapping_neg())
            }
        } else {
            let m = self.to_u128()?;
            i128::try_from(m).ok()
        }
    }

    pub fn is_zero(&self) -> bool {
        self.limbs.iter().all(|&l| l == 0)
    }

    pub fn bit(&self, i: u32) -> bool {
        if i >= self.width {
            return false;
        }
        self.limbs.get((i / 64) as usize).is_some_and(|l| (l >> (i % 64)) & 1 == 1)
    }

    pub fn set_bit(&mut self, i: u32, v: bool) {
        if i >= self.width {
            return;
        }
        if let Some(l) = self.limbs.get_mut((i / 64) as usize) {
            if v {
                *l |= 1 << (i % 64);
            } else {
                *l &= !(1 << (i % 64));
            }
        }
    }

    pub fn sign_bit(&self) -> bool {
        self.width > 0 && self.bit(self.width - 1)
    }

    /// Zero-extends or truncates.
    pub fn resize(&self, width: u32) -> Bits {
        let mut b = Bits::zero(width);
        for (d, s) in b.limbs.iter_mut().zip(self.limbs.iter()) {
            *d = *s;
        }
        b.norm()
    }

    /// Sign-extends or truncates.
    pub fn resize_signed(&self, width: u32) -> Bits {
        let mut b = self.resize(width);
        if self.sign_bit() && width > self.width {
            for i in self.width..b.width {
                b.set_bit(i, true);
            }
        }
        b
    }

    pub fn all_ones(width: u32) -> Bits {
        let mut b = Bits::zero(width);
        for l in b.limbs.iter_mut() {
            *l = u64::MAX;
        }
        b.norm()
    }

    pub fn not(&self) -> Bits {
        let mut b = self.clone();
        for l in b.limbs.iter_mut() {
            *l = !*l;
        }
        b.norm()
    }

    fn zip(&self, o: &Bits, f: impl Fn(u64, u64) -> u64) -> Bits {
        let mut b = self.clone();
        for (i, l) in b.limbs.iter_mut().enumerate() {
            *l = f(*l, o.limbs.get(i).copied().unwrap_or(0));
        }
        b.norm()
    }

    pub fn and(&self, o: &Bits) -> Bits {
        self.zip(o, |a, b| a & b)
    }

    pub fn or(&self, o: &Bits) -> Bits {
        self.zip(o, |a, b| a | b)
    }

    pub fn xor(&self, o: &Bits) -> Bits {
        self.zip(o, |a, b| a ^ b)
    }

    pub fn add(&self, o: &Bits) -> Bits {
        let mut b = self.clone();
        let mut carry = 0u64;
        for (i, l) in b.limbs.iter_mut().enumerate() {
            let (s1, c1) = l.overflowing_add(o.limbs.get(i).copied().unwrap_or(0));
            let (s2, c2) = s1.overflowing_add(carry);
            *l = s2;
            carry = (c1 as u64) + (c2 as u64);
        }
        b.norm()
    }

    pub fn neg(&self) -> Bits {
        self.not().add(&Bits::from_u64(self.width, 1))
    }

    pub fn sub(&self, o: &Bits) -> Bits {
        self.add(&o.resize(self.width).neg())
    }

    pub fn mul(&self, o: &Bits) -> Bits {
        let n = self.limbs.len();
        let mut out = vec![0u64; n];
        for i in 0..n {
            let a = self.limbs[i] as u128;
            if a == 0 {
                continue;
            }
            let mut carry = 0u128;
            for j in 0..(n - i) {
                let bj = o.limbs.get(j).copied().unwrap_or(0) as u128;
                let cur = out[i + j] as u128 + a * bj + carry;
                out[i + j] = cur as u64;
                carry = cur >> 64;
            }
        }
        Bits { width: self.width, limbs: out }.norm()
    }

    /// Unsigned comparison (widths may differ).
    pub fn cmp_unsigned(&self, o: &Bits) -> Ordering {
        let n = self.limbs.len().max(o.limbs.len());
        for i in (0..n).rev() {
            let a = self.limbs.get(i).copied().unwrap_or(0);
            let b = o.limbs.get(i).copied().unwrap_or(0);
            match a.cmp(&b) {
                Ordering::Equal => {}
                x => return x,
            }
        }
        Ordering::Equal
    }

    /// Two's complement comparison of two same-width values.
    pub fn cmp_signed(&self, o: &Bits) -> Ordering {
        match (self.sign_bit(), o.sign_bit()) {
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            _ => self.cmp_unsigned(o),
        }
    }

    pub fn shl(&self, n: u64) -> Bits {
        let mut b = Bits::zero(self.width);
        if n >= self.width as u64 {
            return b;
        }
        let n = n as u32;
        for i in 0..self.width - n {
            if self.bit(i) {
                b.set_bit(i + n, true);
            }
        }
        b
    }

    /// Logical (`arith: false`) or arithmetic right shift.
    pub fn shr(&self, n: u64, arith: bool) -> Bits {
        let fill = arith && self.sign_bit();
        let mut b = if fill { Bits::all_ones(self.width) } else { Bits::zero(self.width) };
        if n >= self.width as u64 {
            return b;
        }
        let n = n as u32;
        for i in 0..self.width - n {
            b.set_bit(i, self.bit(i + n));
        }
        b
    }

    /// Unsigned division and remainder.
    pub fn divmod(&self, o: &Bits) -> Result<(Bits, Bits), String> {
        if o.is_zero() {
            return Err("division by zero".into());
        }
        let o = o.resize(self.width);
        let mut q = Bits::zero(self.width);
        let mut r = Bits::zero(self.width.saturating_add(1));
        let ow = o.resize(self.width.saturating_add(1));
        for i in (0..self.width).rev() {
            r = r.shl(1);
            r.set_bit(0, self.bit(i));
            if r.cmp_unsigned(&ow) != Ordering::Less {
                r = r.sub(&ow);
                q.set_bit(i, true);
            }
        }
        Ok((q, r.resize(self.width)))
    }

    /// `self[hi:lo]`.
    pub fn slice(&self, hi: u32, lo: u32) -> Bits {
        if hi < lo {
            return Bits::zero(0);
        }
        let w = hi - lo + 1;
        self.shr(lo as u64, false).resize(w)
    }

    /// Returns `self` with bits `hi..=lo` replaced by `v`.
    pub fn with_slice(&self, hi: u32, lo: u32, v: &Bits) -> Bits {
        let mut b = self.clone();
        if hi < lo {
            return b;
        }
        for i in lo..=hi.min(self.width.saturating_sub(1)) {
            b.set_bit(i, v.bit(i - lo));
        }
        b
    }

    /// `self ++ o`: `self` in the high bits.
    pub fn concat(&self, o: &Bits) -> Bits {
        let w = self.width.saturating_add(o.width).min(MAX_WIDTH);
        let hi = self.resize(w).shl(o.width as u64);
        hi.or(&o.resize(w))
    }

    /// Big-endian bytes, the value right-aligned (leading pad bits zero).
    pub fn to_bytes_be(&self) -> Vec<u8> {
        let n = (self.width as usize).div_ceil(8);
        let mut out = vec![0u8; n];
        for (i, byte) in out.iter_mut().rev().enumerate() {
            let limb = self.limbs.get(i / 8).copied().unwrap_or(0);
            *byte = (limb >> ((i % 8) * 8)) as u8;
        }
        out
    }

    pub fn to_hex(&self) -> String {
        let bytes = self.to_bytes_be();
        let mut s: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        while s.len() > 1 && s.starts_with('0') {
            s.remove(0);
        }
        if s.is_empty() {
            s.push('0');
        }
        s
    }
}

fn big_bit_len(v: &BigValue) -> usize {
    match v.0.iter().rposition(|&l| l != 0) {
        None => 0,
        Some(i) => i * 64 + (64 - v.0[i].leading_zeros() as usize),
    }
}

/// A header's or struct's or union's fields, in declaration order.
#[derive(Clone, Debug, PartialEq)]
pub struct Aggregate {
    pub ty: Arc<AggTy>,
    /// Headers only (structs are always "valid"; a union's validity is
    /// its members').
    pub valid: bool,
    pub fields: Vec<Value>,
}

impl Aggregate {
    pub fn index(&self, name: &str) -> Option<usize> {
        self.ty.fields.iter().position(|(n, _)| n == name)
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.index(name).and_then(|i| self.fields.get(i))
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        let i = self.index(name)?;
        self.fields.get_mut(i)
    }
}

/// A header stack.
#[derive(Clone, Debug, PartialEq)]
pub struct Stack {
    pub elem: Ty,
    pub elems: Vec<Value>,
    pub next_index: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Bool(bool),
    /// Arbitrary-precision `int` (refused past `i128`).
    Int(i128),
    /// `bit<W>` (and serializable enums over it).
    Bits(Bits),
    /// `int<W>`, two's complement.
    Signed(Bits),
    /// `varbit<max>`: the current bits (their width is the length).
    Varbit {
        max: u32,
        bits: Bits,
    },
    Str(String),
    Error(String),
    MatchKind(String),
    /// A member of a non-serializable enum.
    Enum {
        ty: String,
        member: String,
    },
    Header(Box<Aggregate>),
    Union(Box<Aggregate>),
    Struct(Box<Aggregate>),
    Stack(Box<Stack>),
    Tuple(Vec<Value>),
    /// A reference to something that is not data (an extern instance,
    /// `packet_in`, a table's apply result's action): the interpreter's
    /// own handle.
    Opaque {
        kind: String,
        id: usize,
    },
    Void,
}

impl Value {
    pub fn bits(width: u32, v: u128) -> Value {
        Value::Bits(Bits::from_u128(width, v))
    }

    pub fn is_true(&self) -> Result<bool, String> {
        match self {
            Value::Bool(b) => Ok(*b),
            other => Err(format!("expected a bool, found {}", other.kind_name())),
        }
    }

    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Bits(_) => "bit<W>",
            Value::Signed(_) => "int<W>",
            Value::Varbit { .. } => "varbit",
            Value::Str(_) => "string",
            Value::Error(_) => "error",
            Value::MatchKind(_) => "match_kind",
            Value::Enum { .. } => "enum",
            Value::Header(_) => "header",
            Value::Union(_) => "header_union",
            Value::Struct(_) => "struct",
            Value::Stack(_) => "header stack",
            Value::Tuple(_) => "tuple",
            Value::Opaque { .. } => "object",
            Value::Void => "void",
        }
    }

    /// The value as an unsigned number, if it is a number that fits.
    pub fn to_u64(&self) -> Option<u64> {
        match self {
            Value::Bits(b) => b.to_u64(),
            Value::Signed(b) => b.to_i128_signed().and_then(|v| u64::try_from(v).ok()),
            Value::Int(i) => u64::try_from(*i).ok(),
            Value::Bool(b) => Some(*b as u64),
            _ => None,
        }
    }

    /// The value as a signed number, if it fits in `i128`.
    pub fn to_i128(&self) -> Option<i128> {
        match self {
            Value::Bits(b) => b.to_u128().and_then(|v| i128::try_from(v).ok()),
            Value::Signed(b) => b.to_i128_signed(),
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The header's validity (false for anything that is not a header;
    /// a union is valid when one member is).
    pub fn is_valid(&self) -> bool {
        match self {
            Value::Header(h) => h.valid,
            Value::Union(u) => u.fields.iter().any(|f| f.is_valid()),
            _ => false,
        }
    }

    /// The same shape with every header invalid and every number zero
    /// (the "unspecified" value of an `out` parameter).
    pub fn unspecified(&self) -> Value {
        match self {
            Value::Bool(_) => Value::Bool(false),
            Value::Int(_) => Value::Int(0),
            Value::Bits(b) => Value::Bits(Bits::zero(b.width())),
            Value::Signed(b) => Value::Signed(Bits::zero(b.width())),
            Value::Varbit { max, .. } => Value::Varbit { max: *max, bits: Bits::zero(0) },
            Value::Header(h) | Value::Struct(h) | Value::Union(h) => {
                let agg = Aggregate {
                    ty: h.ty.clone(),
                    valid: false,
                    fields: h.fields.iter().map(|f| f.unspecified()).collect(),
                };
                match self {
                    Value::Header(_) => Value::Header(Box::new(agg)),
                    Value::Union(_) => Value::Union(Box::new(agg)),
                    _ => Value::Struct(Box::new(agg)),
                }
            }
            Value::Stack(s) => Value::Stack(Box::new(Stack {
                elem: s.elem.clone(),
                elems: s.elems.iter().map(|e| e.unspecified()).collect(),
                next_index: 0,
            })),
            Value::Tuple(t) => Value::Tuple(t.iter().map(|v| v.unspecified()).collect()),
            other => other.clone(),
        }
    }

    /// Sets a header valid or invalid (`setValid()`/`setInvalid()`).
    /// Setting one member of a union valid invalidates the others; that
    /// is done by the caller, which knows the union.
    pub fn set_valid(&mut self, v: bool) {
        if let Value::Header(h) = self {
            h.valid = v;
        }
    }

    /// Bits of this value in network order, for `emit`, checksums and
    /// hashes: numbers as they are, headers' fields when valid (nothing
    /// when invalid), structs, tuples and stacks element by element.
    pub fn serialize(&self, out: &mut BitWriter) {
        match self {
            Value::Bits(b) | Value::Signed(b) => out.push(b),
            Value::Varbit { bits, .. } => out.push(bits),
            Value::Bool(b) => out.push(&Bits::from_u64(1, *b as u64)),
            Value::Header(h) if h.valid => {
                for f in &h.fields {
                    f.serialize(out);
                }
            }
            Value::Header(_) => {}
            Value::Struct(s) => {
                for f in &s.fields {
                    f.serialize(out);
                }
            }
            Value::Union(u) => {
                for f in &u.fields {
                    f.serialize(out);
                }
            }
            Value::Stack(s) => {
                for e in &s.elems {
                    e.serialize(out);
                }
            }
            Value::Tuple(t) => {
                for e in t {
                    e.serialize(out);
                }
            }
            _ => {}
        }
    }
}

/// Accumulates bits most significant first into bytes.
#[derive(Clone, Debug, Default)]
pub struct BitWriter {
    pub bytes: Vec<u8>,
    pub nbits: usize,
}

impl BitWriter {
    pub fn push_bit(&mut self, b: bool) {
        if self.nbits % 8 == 0 {
            self.bytes.push(0);
        }
        if b {
            if let Some(last) = self.bytes.last_mut() {
                *last |= 0x80 >> (self.nbits % 8);
            }
        }
        self.nbits += 1;
    }

    pub fn push(&mut self, b: &Bits) {
        for i in (0..b.width()).rev() {
            self.push_bit(b.bit(i));
        }
    }
}

/// Reads `width` bits starting at bit `pos` of `data` (most significant
/// first); `None` past the end.
pub fn read_bits(data: &[u8], pos: usize, width: u32) -> Option<Bits> {
    let end = pos.checked_add(width as usize)?;
    if end > data.len().checked_mul(8)? {
        return None;
    }
    let mut b = Bits::zero(width);
    for i in 0..width as usize {
        let p = pos + i;
        let byte = data.get(p / 8).copied().unwrap_or(0);
        let bit = (byte >> (7 - (p % 8))) & 1 == 1;
        b.set_bit(width - 1 - i as u32, bit);
    }
    Some(b)
}

fn int_ck(v: Option<i128>) -> Result<Value, String> {
    v.map(Value::Int)
        .ok_or_else(|| "integer overflow in an arbitrary-precision `int` expression".to_string())
}

/// Converts an `int` to `bit<W>`/`int<W>` like the other operand.
fn int_like(i: i128, like: &Value) -> Option<Value> {
    match like {
        Value::Bits(b) => Some(Value::Bits(Bits::from_i128(b.width(), i))),
        Value::Signed(b) => Some(Value::Signed(Bits::from_i128(b.width(), i))),
        _ => None,
    }
}

/// Unary operators.
pub fn unary(op: UnOp, v: &Value) -> Result<Value, String> {
    match (op, v) {
        (UnOp::Plus, Value::Int(_) | Value::Bits(_) | Value::Signed(_)) => Ok(v.clone()),
        (UnOp::Neg, Value::Int(i)) => int_ck(i.checked_neg()),
        (UnOp::Neg, Value::Bits(b)) => Ok(Value::Bits(b.neg())),
        (UnOp::Neg, Value::Signed(b)) => Ok(Value::Signed(b.neg())),
        (UnOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
        (UnOp::BitNot, Value::Bits(b)) => Ok(Value::Bits(b.not())),
        (UnOp::BitNot, Value::Signed(b)) => Ok(Value::Signed(b.not())),
        (UnOp::BitNot, Value::Int(i)) => Ok(Value::Int(!i)),
        _ => Err(format!("operator {op:?} does not apply to {}", v.kind_name())),
    }
}

/// Binary operators except the short-circuit `&&`/`||` (evaluated by
/// the caller, which must not evaluate the right side needlessly — they
/// are accepted here on two bools too). An `int` operand takes the type
/// of a fixed-width other operand.
pub fn binary(op: BinOp, a: &Value, b: &Value) -> Result<Value, String> {
    use BinOp::*;
    // Shifts: the right side is any unsigned number.
    if matches!(op, Shl | Shr) {
        let n = match b {
            Value::Bits(x) => x.to_u64().unwrap_or(u64::MAX),
            Value::Int(i) if *i >= 0 => u64::try_from(*i).unwrap_or(u64::MAX),
            _ => return Err("a shift amount must be a non-negative number".into()),
        };
        return match a {
            Value::Bits(x) => Ok(Value::Bits(if op == Shl { x.shl(n) } else { x.shr(n, false) })),
            Value::Signed(x) => {
                Ok(Value::Signed(if op == Shl { x.shl(n) } else { x.shr(n, true) }))
            }
            Value::Int(i) => {
                if op == Shl {
                    let n = u32::try_from(n).ok().filter(|&n| n < 127);
                    let r = n.and_then(|n| i.checked_mul(1i128.checked_shl(n)?));
                    int_ck(r)
                } else {
                    Ok(Value::Int(if n >= 127 {
                        if *i < 0 {
                            -1
                        } else {
                            0
                        }
                    } else {
                        i >> n
                    }))
                }
            }
            _ => Err(format!("cannot shift a {}", a.kind_name())),
        };
    }
    if op == Concat {
        return match (a, b) {
            (Value::Bits(x) | Value::Signed(x), Value::Bits(y) | Value::Signed(y)) => {
                let r = x.concat(y);
                Ok(if matches!(a, Value::Signed(_)) { Value::Signed(r) } else { Value::Bits(r) })
            }
            _ => Err(format!(
                "`++` needs two fixed-width operands, found {} and {}",
                a.kind_name(),
                b.kind_name()
            )),
        };
    }
    // Int operand adapts to the other side.
    if let (Value::Int(i), other @ (Value::Bits(_) | Value::Signed(_))) = (a, b) {
        if let Some(a2) = int_like(*i, other) {
            return binary(op, &a2, b);
        }
    }
    if let (other @ (Value::Bits(_) | Value::Signed(_)), Value::Int(i)) = (a, b) {
        if let Some(b2) = int_like(*i, other) {
            return binary(op, a, &b2);
        }
    }
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => {
            let (x, y) = (*x, *y);
            match op {
                Mul => int_ck(x.checked_mul(y)),
                Div | Mod => {
                    if y == 0 {
                        return Err("division by zero".into());
                    }
                    if x < 0 || y < 0 {
                        return Err("`/` and `%` on negative `int` values".into());
                    }
                    Ok(Value::Int(if op == Div { x / y } else { x % y }))
                }
                Add => int_ck(x.checked_add(y)),
                Sub => int_ck(x.checked_sub(y)),
                AddSat | SubSat => Err("saturating arithmetic on `int`".into()),
                Lt => Ok(Value::Bool(x < y)),
                Le => Ok(Value::Bool(x <= y)),
                Gt => Ok(Value::Bool(x > y)),
                Ge => Ok(Value::Bool(x >= y)),
                Eq => Ok(Value::Bool(x == y)),
                Ne => Ok(Value::Bool(x != y)),
                BitAnd => Ok(Value::Int(x & y)),
                BitOr => Ok(Value::Int(x | y)),
                BitXor => Ok(Value::Int(x ^ y)),
                _ => Err(format!("operator {op:?} does not apply to int")),
            }
        }
        (Value::Bits(x), Value::Bits(y)) | (Value::Signed(x), Value::Signed(y)) => {
            let signed = matches!(a, Value::Signed(_));
            let y = &y.resize(x.width());
            let wrap = |b: Bits| {
                if signed {
                    Value::Signed(b)
                } else {
                    Value::Bits(b)
                }
            };
            let ord = || {
                if signed {
                    x.cmp_signed(y)
                } else {
                    x.cmp_unsigned(y)
                }
            };
            match op {
                Mul => Ok(wrap(x.mul(y))),
                Div | Mod => {
                    if signed {
                        return Err("`/` and `%` on `int<W>` values".into());
                    }
                    let (q, r) = x.divmod(y)?;
                    Ok(wrap(if op == Div { q } else { r }))
                }
                Add => Ok(wrap(x.add(y))),
                Sub => Ok(wrap(x.sub(y))),
                AddSat => Ok(wrap(sat_add(x, y, signed))),
                SubSat => Ok(wrap(sat_sub(x, y, signed))),
                Lt => Ok(Value::Bool(ord() == Ordering::Less)),
                Le => Ok(Value::Bool(ord() != Ordering::Greater)),
                Gt => Ok(Value::Bool(ord() == Ordering::Greater)),
                Ge => Ok(Value::Bool(ord() != Ordering::Less)),
                Eq => Ok(Value::Bool(x == y)),
                Ne => Ok(Value::Bool(x != y)),
                BitAnd => Ok(wrap(x.and(y))),
                BitOr => Ok(wrap(x.or(y))),
                BitXor => Ok(wrap(x.xor(y))),
                _ => Err(format!("operator {op:?} does not apply to bit<W>")),
            }
        }
        (Value::Bool(x), Value::Bool(y)) => match op {
            Eq => Ok(Value::Bool(x == y)),
            Ne => Ok(Value::Bool(x != y)),
            And => Ok(Value::Bool(*x && *y)),
            Or => Ok(Value::Bool(*x || *y)),
            _ => Err(format!("operator {op:?} does not apply to bool")),
        },
        _ if matches!(op, Eq | Ne) => {
            let eq = values_equal(a, b)?;
            Ok(Value::Bool(if op == Eq { eq } else { !eq }))
        }
        _ => Err(format!(
            "operator {op:?} does not apply to {} and {}",
            a.kind_name(),
            b.kind_name()
        )),
    }
}

fn sat_add(x: &Bits, y: &Bits, signed: bool) -> Bits {
    let w = x.width();
    let s = x.add(y);
    if signed {
        let (sx, sy, ss) = (x.sign_bit(), y.sign_bit(), s.sign_bit());
        if sx == sy && ss != sx {
            return if sx { signed_min(w) } else { signed_max(w) };
        }
        s
    } else if s.cmp_unsigned(x) == Ordering::Less {
        Bits::all_ones(w)
    } else {
        s
    }
}

fn sat_sub(x: &Bits, y: &Bits, signed: bool) -> Bits {
    let w = x.width();
    if signed {
        let s = x.sub(y);
        let (sx, sy, ss) = (x.sign_bit(), y.sign_bit(), s.sign_bit());
        if sx != sy && ss != sx {
            return if sx { signed_min(w) } else { signed_max(w) };
        }
        s
    } else if x.cmp_unsigned(y) == Ordering::Less {
        Bits::zero(w)
    } else {
        x.sub(y)
    }
}

fn signed_min(w: u32) -> Bits {
    let mut b = Bits::zero(w);
    if w > 0 {
        b.set_bit(w - 1, true);
    }
    b
}

fn signed_max(w: u32) -> Bits {
    signed_min(w).not()
}

/// Structural equality (`==` on headers, structs, tuples, stacks,
/// errors, enums). Headers are equal when both are invalid or both are
/// valid with equal fields.
pub fn values_equal(a: &Value, b: &Value) -> Result<bool, String> {
    Ok(match (a, b) {
        (Value::Header(x), Value::Header(y)) => {
            if !x.valid && !y.valid {
                true
            } else if x.valid != y.valid {
                false
            } else {
                fields_equal(&x.fields, &y.fields)?
            }
        }
        (Value::Struct(x), Value::Struct(y)) | (Value::Union(x), Value::Union(y)) => {
            fields_equal(&x.fields, &y.fields)?
        }
        (Value::Struct(x), Value::Tuple(t)) | (Value::Tuple(t), Value::Struct(x)) => {
            fields_equal(&x.fields, t)?
        }
        (Value::Tuple(x), Value::Tuple(y)) => fields_equal(x, y)?,
        (Value::Stack(x), Value::Stack(y)) => fields_equal(&x.elems, &y.elems)?,
        (Value::Varbit { bits: x, .. }, Value::Varbit { bits: y, .. }) => {
            x.width() == y.width() && x == y
        }
        (Value::Error(x), Value::Error(y)) => x == y,
        (Value::MatchKind(x), Value::MatchKind(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Enum { ty: t1, member: m1 }, Value::Enum { ty: t2, member: m2 }) => {
            t1 == t2 && m1 == m2
        }
        (Value::Bool(_) | Value::Int(_) | Value::Bits(_) | Value::Signed(_), _) => {
            binary(BinOp::Eq, a, b)?.is_true()?
        }
        _ => return Err(format!("cannot compare {} with {}", a.kind_name(), b.kind_name())),
    })
}

fn fields_equal(a: &[Value], b: &[Value]) -> Result<bool, String> {
    if a.len() != b.len() {
        return Ok(false);
    }
    for (x, y) in a.iter().zip(b) {
        if !values_equal(x, y)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// An explicit cast `(T) v` (typedefs already resolved in `ty`).
pub fn cast(v: &Value, ty: &Ty) -> Result<Value, String> {
    match (ty, v) {
        (Ty::Bits { signed, width }, _) => {
            let b = match v {
                Value::Int(i) => Bits::from_i128(*width, *i),
                Value::Bits(b) => b.resize(*width),
                Value::Signed(b) => b.resize_signed(*width),
                Value::Bool(x) => Bits::from_u64(*width, *x as u64),
                _ => return Err(format!("cannot cast a {} to a number", v.kind_name())),
            };
            Ok(if *signed { Value::Signed(b) } else { Value::Bits(b) })
        }
        (Ty::Bool, Value::Bits(b)) if b.width() == 1 => Ok(Value::Bool(b.bit(0))),
        (Ty::Bool, Value::Bool(_)) => Ok(v.clone()),
        (Ty::Bool, Value::Int(i)) if *i == 0 || *i == 1 => Ok(Value::Bool(*i == 1)),
        (Ty::Int, Value::Int(_)) => Ok(v.clone()),
        (Ty::Int, Value::Bits(_) | Value::Signed(_)) => {
            v.to_i128().map(Value::Int).ok_or_else(|| "value too large for `int`".to_string())
        }
        (Ty::Enum(e), _) => match (&e.underlying, v) {
            (Some((signed, width)), Value::Bits(_) | Value::Signed(_) | Value::Int(_)) => {
                cast(v, &Ty::Bits { signed: *signed, width: *width })
            }
            (_, Value::Enum { ty, .. }) if *ty == e.name => Ok(v.clone()),
            _ => Err(format!("cannot cast a {} to enum {}", v.kind_name(), e.name)),
        },
        _ => coerce(v, ty),
    }
}

/// The implicit conversion of a value to a declared type: an `int`
/// takes the width of `bit<W>`/`int<W>`, a list or a `{ f = ... }`
/// initialiser becomes a struct, header (valid) or tuple; anything else
/// must already be of the type.
pub fn coerce(v: &Value, ty: &Ty) -> Result<Value, String> {
    match (ty, v) {
        (Ty::Bits { .. }, Value::Int(_)) => cast(v, ty),
        (Ty::Bits { signed: false, width }, Value::Bits(b)) if b.width() == *width => Ok(v.clone()),
        (Ty::Bits { signed: true, width }, Value::Signed(b)) if b.width() == *width => {
            Ok(v.clone())
        }
        (Ty::Bits { .. }, Value::Bits(_) | Value::Signed(_)) => cast(v, ty),
        (Ty::Enum(e), Value::Int(_)) if e.underlying.is_some() => cast(v, ty),
        (Ty::Header(t) | Ty::Struct(t), Value::Tuple(items)) => {
            if items.len() != t.fields.len() {
                return Err(format!(
                    "{} has {} fields but the list has {} values",
                    t.name,
                    t.fields.len(),
                    items.len()
                ));
            }
            let mut fields = Vec::with_capacity(items.len());
            for ((_, fty), item) in t.fields.iter().zip(items) {
                fields.push(coerce(item, fty)?);
            }
            let agg = Box::new(Aggregate { ty: t.clone(), valid: true, fields });
            Ok(if matches!(ty, Ty::Header(_)) { Value::Header(agg) } else { Value::Struct(agg) })
        }
        (
            Ty::Header(t) | Ty::Struct(t) | Ty::HeaderUnion(t),
            Value::Header(a) | Value::Struct(a) | Value::Union(a),
        ) if a.ty.name == t.name && a.fields.len() == t.fields.len() => {
            let mut out = a.clone();
            for (f, (_, fty)) in out.fields.iter_mut().zip(t.fields.iter()) {
                *f = coerce(f, fty)?;
            }
            Ok(match ty {
                Ty::Header(_) => Value::Header(out),
                Ty::HeaderUnion(_) => Value::Union(out),
                _ => Value::Struct(out),
            })
        }
        (Ty::Tuple(ts), Value::Tuple(items)) if ts.len() == items.len() => {
            let mut out = Vec::with_capacity(items.len());
            for (t, item) in ts.iter().zip(items) {
                out.push(coerce(item, t)?);
            }
            Ok(Value::Tuple(out))
        }
        (Ty::Varbit(_), Value::Varbit { .. }) => Ok(v.clone()),
        (Ty::Stack(elem, _), Value::Stack(s)) => {
            let mut s = s.clone();
            for e in s.elems.iter_mut() {
                *e = coerce(e, elem)?;
            }
            Ok(Value::Stack(s))
        }
        (Ty::Stack(elem, n), Value::Tuple(items)) if items.len() == *n as usize => {
            let mut elems = Vec::with_capacity(items.len());
            for item in items {
                elems.push(coerce(item, elem)?);
            }
            Ok(Value::Stack(Box::new(Stack { elem: (**elem).clone(), elems, next_index: 0 })))
        }
        (Ty::Int, Value::Int(_))
        | (Ty::Bool, Value::Bool(_))
        | (Ty::String, Value::Str(_))
        | (Ty::Error, Value::Error(_))
        | (Ty::MatchKind, Value::MatchKind(_))
        | (Ty::Enum(_), _)
        | (Ty::Var(_) | Ty::DontCare | Ty::Extern { .. } | Ty::Void, _)
        | (Ty::Parser(_) | Ty::Control(_) | Ty::Package(_), _) => Ok(v.clone()),
        _ => Err(format!("a {} value cannot be used as {}", v.kind_name(), ty)),
    }
}

/// Builds a struct or header from `{ name = value, ... }`.
pub fn from_named(ty: &Ty, items: &[(String, Value)]) -> Result<Value, String> {
    let t = match ty {
        Ty::Header(t) | Ty::Struct(t) => t,
        _ => return Err(format!("a `{{ f = ... }}` initialiser cannot make {ty}")),
    };
    if items.len() != t.fields.len() {
        return Err(format!("{} needs {} fields", t.name, t.fields.len()));
    }
    let mut fields = Vec::with_capacity(t.fields.len());
    for (fname, fty) in &t.fields {
        let Some((_, v)) = items.iter().find(|(n, _)| n == fname) else {
            return Err(format!("initialiser of {} lacks field `{fname}`", t.name));
        };
        fields.push(coerce(v, fty)?);
    }
    let agg = Box::new(Aggregate { ty: t.clone(), valid: true, fields });
    Ok(if t.kind == AggregateKind::Header { Value::Header(agg) } else { Value::Struct(agg) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_arith_wraps() {
        let a = Bits::all_ones(320);
        let one = Bits::from_u64(320, 1);
        assert!(a.add(&one).is_zero());
        assert_eq!(Bits::zero(320).sub(&one), a);
        let x = Bits::from_u128(320, 0xffff_ffff_ffff_ffff_ffff);
        let y = Bits::from_u64(320, 0x1_0000);
        assert_eq!(x.mul(&y).to_hex(), "ffffffffffffffffffff0000");
        let (q, r) = x.divmod(&y).unwrap();
        assert_eq!(q.to_hex(), "ffffffffffffffff");
        assert_eq!(r.to_hex(), "ffff");
    }

    #[test]
    fn signed_and_saturating() {
        let m = Bits::from_i128(8, -128);
        assert_eq!(m.to_i128_signed(), Some(-128));
        let r = binary(BinOp::SubSat, &Value::Signed(m.clone()), &Value::Int(1)).unwrap();
        assert_eq!(r, Value::Signed(m));
        let r = binary(BinOp::AddSat, &Value::bits(8, 250), &Value::Int(10)).unwrap();
        assert_eq!(r, Value::bits(8, 255));
        let r = binary(BinOp::SubSat, &Value::bits(8, 5), &Value::Int(10)).unwrap();
        assert_eq!(r, Value::bits(8, 0));
        let r = binary(BinOp::Shr, &Value::Signed(Bits::from_i128(8, -4)), &Value::Int(1));
        assert_eq!(r.unwrap(), Value::Signed(Bits::from_i128(8, -2)));
        let lt = binary(
            BinOp::Lt,
            &Value::Signed(Bits::from_i128(8, -1)),
            &Value::Signed(Bits::from_i128(8, 1)),
        );
        assert_eq!(lt.unwrap(), Value::Bool(true));
    }

    #[test]
    fn slices_and_concat() {
        let x = Bits::from_u64(16, 0xabcd);
        assert_eq!(x.slice(11, 4), Bits::from_u64(8, 0xbc));
        assert_eq!(x.with_slice(7, 0, &Bits::from_u64(8, 0x12)), Bits::from_u64(16, 0xab12));
        let c = Bits::from_u64(4, 0xa).concat(&Bits::from_u64(8, 0x5f));
        assert_eq!(c, Bits::from_u64(12, 0xa5f));
        assert_eq!(read_bits(&[0xab, 0xcd], 4, 8), Some(Bits::from_u64(8, 0xbc)));
        assert_eq!(read_bits(&[0xab], 4, 8), None);
    }

    #[test]
    fn int_overflow_refused() {
        assert!(binary(BinOp::Mul, &Value::Int(i128::MAX), &Value::Int(2)).is_err());
        assert!(binary(BinOp::Div, &Value::bits(8, 1), &Value::Int(0)).is_err());
    }
}
