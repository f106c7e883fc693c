//! Expressions rendered back to text, for key element names.
//!
//! The form is p4c's for the common cases: names and members joined by
//! `.`, `a[2]` for indices, `a[7:0]` for slices, integer literals in
//! decimal with their width prefix (`8w5`), binary operators with single
//! spaces (`hdr.x & 0xff` renders as `hdr.x & 255`), calls as
//! `f(a, b)`. Anything deeper than 64 levels renders as `...`.

use crate::ast::{BinOp, Expr, ExprKind, Type, TypeKind, UnOp};

/// `hdr.ipv4.dstAddr`, `h.h[0].x`, `meta.x[7:0]`, `hdr.isValid()`.
pub fn render_expr(e: &Expr) -> String {
    let mut s = String::new();
    go(e, &mut s, 0);
    s
}

fn go(e: &Expr, s: &mut String, depth: u32) {
    if depth > 64 {
        s.push_str("...");
        return;
    }
    let d = depth + 1;
    match &e.kind {
        ExprKind::Int { value, width } => {
            if let Some((signed, w)) = width {
                s.push_str(&format!("{w}{}", if *signed { 's' } else { 'w' }));
            }
            match value.to_u128() {
                Some(v) => s.push_str(&v.to_string()),
                None => {
                    s.push_str("0x");
                    for (i, l) in value.0.iter().rev().enumerate() {
                        if i == 0 {
                            s.push_str(&format!("{l:x}"));
                        } else {
                            s.push_str(&format!("{l:016x}"));
                        }
                    }
                }
            }
        }
        ExprKind::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
        ExprKind::Str(x) => {
            s.push('"');
            s.push_str(x);
            s.push('"');
        }
        ExprKind::Name { id, dot_prefix } => {
            if *dot_prefix {
                s.push('.');
            }
            s.push_str(&id.name);
        }
        ExprKind::Member(b, m) => {
            go(b, s, d);
            s.push('.');
            s.push_str(&m.name);
        }
        ExprKind::Index(b, i) => {
            go(b, s, d);
            s.push('[');
            go(i, s, d);
            s.push(']');
        }
        ExprKind::Slice(b, hi, lo) => {
            go(b, s, d);
            s.push('[');
            go(hi, s, d);
            s.push(':');
            go(lo, s, d);
            s.push(']');
        }
        ExprKind::Call { func, args, .. } => {
            go(func, s, d);
            s.push('(');
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                go(&a.value, s, d);
            }
            s.push(')');
        }
        ExprKind::Unary(op, x) => {
            s.push_str(match op {
                UnOp::Neg => "-",
                UnOp::Plus => "+",
                UnOp::Not => "!",
                UnOp::BitNot => "~",
            });
            go(x, s, d);
        }
        ExprKind::Binary(op, a, b) => {
            go(a, s, d);
            s.push(' ');
            s.push_str(binop(*op));
            s.push(' ');
            go(b, s, d);
        }
        ExprKind::Mux(c, a, b) => {
            go(c, s, d);
            s.push_str(" ? ");
            go(a, s, d);
            s.push_str(" : ");
            go(b, s, d);
        }
        ExprKind::Cast(t, x) => {
            s.push('(');
            ty(t, s, d);
            s.push(')');
            go(x, s, d);
        }
        ExprKind::List(items) => {
            s.push('{');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                go(x, s, d);
            }
            s.push('}');
        }
        ExprKind::StructInit(items) => {
            s.push('{');
            for (i, (n, x)) in items.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                s.push_str(&n.name);
                s.push_str(" = ");
                go(x, s, d);
            }
            s.push('}');
        }
        ExprKind::DontCare => s.push('_'),
        ExprKind::TypeRef(t) => ty(t, s, d),
    }
}

fn ty(t: &Type, s: &mut String, depth: u32) {
    match &t.kind {
        TypeKind::Bits { signed, width } => {
            s.push_str(if *signed { "int<" } else { "bit<" });
            go(width, s, depth + 1);
            s.push('>');
        }
        TypeKind::Varbit(w) => {
            s.push_str("varbit<");
            go(w, s, depth + 1);
            s.push('>');
        }
        TypeKind::Int => s.push_str("int"),
        TypeKind::Bool => s.push_str("bool"),
        TypeKind::Void => s.push_str("void"),
        TypeKind::Error => s.push_str("error"),
        TypeKind::MatchKind => s.push_str("match_kind"),
        TypeKind::String => s.push_str("string"),
        TypeKind::Named { name, .. } => s.push_str(&name.name),
        TypeKind::Stack { elem, .. } => ty(elem, s, depth + 1),
        TypeKind::Tuple(_) => s.push_str("tuple"),
        TypeKind::DontCare => s.push('_'),
    }
}

fn binop(op: BinOp) -> &'static str {
    use BinOp::*;
    match op {
        Mul => "*",
        Div => "/",
        Mod => "%",
        Add => "+",
        Sub => "-",
        AddSat => "|+|",
        SubSat => "|-|",
        Shl => "<<",
        Shr => ">>",
        Lt => "<",
        Le => "<=",
        Gt => ">",
        Ge => ">=",
        Eq => "==",
        Ne => "!=",
        BitAnd => "&",
        BitXor => "^",
        BitOr => "|",
        Concat => "++",
        And => "&&",
        Or => "||",
    }
}
