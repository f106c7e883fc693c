//! Text protobuf for P4Info: [`print`] in p4c's layout (two-space
//! indent, fields in field-number order, proto3 defaults left out,
//! strings and bytes C-escaped as protobuf's `TextFormat` does), and
//! [`parse`], a small reader of any text-format message into a
//! [`Node`] tree (what the corpus test reads p4c's files with).
//!
//! The reader takes untrusted text: it never panics, nests at most
//! [`MAX_NESTING`] messages deep and reports the byte offset of what it
//! cannot read.

use std::fmt::Write;

use super::{P4Info, Param, Preamble, Scope, TypeSpec};

/// How deeply [`parse`] lets messages nest.
pub const MAX_NESTING: usize = 64;

struct Out {
    s: String,
    depth: usize,
}

impl Out {
    fn open(&mut self, name: &str) {
        self.line(&format!("{name} {{"));
        self.depth += 1;
    }
    fn close(&mut self) {
        self.depth -= 1;
        self.line("}");
    }
    fn line(&mut self, l: &str) {
        for _ in 0..self.depth {
            self.s.push_str("  ");
        }
        self.s.push_str(l);
        self.s.push('\n');
    }
    fn num(&mut self, name: &str, v: impl Into<i64>) {
        let v = v.into();
        if v != 0 {
            self.line(&format!("{name}: {v}"));
        }
    }
    fn str(&mut self, name: &str, v: &[u8]) {
        if !v.is_empty() {
            self.line(&format!("{name}: \"{}\"", escape(v)));
        }
    }
    fn ident(&mut self, name: &str, v: &str) {
        self.line(&format!("{name}: {v}"));
    }
    fn flag(&mut self, name: &str, v: bool) {
        if v {
            self.line(&format!("{name}: true"));
        }
    }
    fn annotations(&mut self, a: &[String]) {
        for x in a {
            self.str("annotations", x.as_bytes());
        }
    }
    fn preamble(&mut self, p: &Preamble) {
        self.open("preamble");
        self.num("id", p.id);
        self.str("name", p.name.as_bytes());
        self.str("alias", p.alias.as_bytes());
        self.annotations(&p.annotations);
        self.close();
    }
    fn param(&mut self, tag: &str, p: &Param) {
        self.open(tag);
        self.num("id", p.id);
        self.str("name", p.name.as_bytes());
        self.annotations(&p.annotations);
        self.num("bitwidth", p.bitwidth);
        self.close();
    }
    fn bitstring(&mut self, t: &TypeSpec) {
        let (k, f, w) = match t {
            TypeSpec::Bit(w) => ("bit", "bitwidth", *w),
            TypeSpec::Int(w) => ("int", "bitwidth", *w),
            TypeSpec::Varbit(w) => ("varbit", "max_bitwidth", *w),
            _ => return,
        };
        self.open(k);
        self.num(f, w);
        self.close();
    }
    fn type_spec(&mut self, t: &TypeSpec) {
        self.open("type_spec");
        match t {
            TypeSpec::Bit(_) | TypeSpec::Int(_) | TypeSpec::Varbit(_) => {
                self.open("bitstring");
                self.bitstring(t);
                self.close();
            }
            TypeSpec::Bool => {
                self.open("bool");
                self.close();
            }
            TypeSpec::Error => {
                self.open("error");
                self.close();
            }
            TypeSpec::Struct(n) | TypeSpec::Header(n) => {
                self.open(if matches!(t, TypeSpec::Struct(_)) { "struct" } else { "header" });
                self.str("name", n.as_bytes());
                self.close();
            }
        }
        self.close();
    }
    fn unit(&mut self, u: super::Unit) {
        self.open("spec");
        self.ident("unit", u.proto_name());
        self.close();
    }
}

/// protobuf's C escaping of string and bytes fields.
pub fn escape(v: &[u8]) -> String {
    let mut s = String::new();
    for &b in v {
        match b {
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            b'"' => s.push_str("\\\""),
            b'\'' => s.push_str("\\'"),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\{b:03o}");
            }
        }
    }
    s
}

/// P4Info as text protobuf, as p4c writes `--p4runtime-files x.txtpb`.
pub fn print(info: &P4Info) -> String {
    let mut o = Out {
        s: "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"
            .to_string(),
        depth: 0,
    };
    o.open("pkg_info");
    o.str("arch", info.arch.as_bytes());
    o.close();
    for t in &info.tables {
        o.open("tables");
        o.preamble(&t.preamble);
        for m in &t.match_fields {
            o.open("match_fields");
            o.num("id", m.id);
            o.str("name", m.name.as_bytes());
            o.annotations(&m.annotations);
            o.num("bitwidth", m.bitwidth);
            match &m.match_type {
                super::MatchType::Other(s) => o.str("other_match_type", s.as_bytes()),
                mt => o.ident("match_type", mt.proto_name()),
            }
            o.close();
        }
        for r in &t.action_refs {
            o.open("action_refs");
            o.num("id", r.id);
            o.annotations(&r.annotations);
            match r.scope {
                Scope::TableAndDefault => {}
                Scope::TableOnly => o.ident("scope", "TABLE_ONLY"),
                Scope::DefaultOnly => o.ident("scope", "DEFAULT_ONLY"),
            }
            o.close();
        }
        o.num("const_default_action_id", t.const_default_action_id);
        if let Some(d) = &t.initial_default_action {
            o.open("initial_default_action");
            o.num("action_id", d.action_id);
            for (id, v) in &d.arguments {
                o.open("arguments");
                o.num("param_id", *id);
                o.str("value", v);
                o.close();
            }
            o.close();
        }
        for id in &t.direct_resource_ids {
            o.num("direct_resource_ids", *id);
        }
        o.num("size", t.size);
        if t.idle_timeout_notify {
            o.ident("idle_timeout_behavior", "NOTIFY_CONTROL");
        }
        o.flag("is_const_table", t.is_const_table);
        o.flag("has_initial_entries", t.has_initial_entries);
        o.close();
    }
    for a in &info.actions {
        o.open("actions");
        o.preamble(&a.preamble);
        for p in &a.params {
            o.param("params", p);
        }
        o.close();
    }
    for c in &info.counters {
        o.open("counters");
        o.preamble(&c.preamble);
        o.unit(c.unit);
        o.num("size", c.size);
        o.close();
    }
    for c in &info.direct_counters {
        o.open("direct_counters");
        o.preamble(&c.preamble);
        o.unit(c.unit);
        o.num("direct_table_id", c.direct_table_id);
        o.close();
    }
    for m in &info.meters {
        o.open("meters");
        o.preamble(&m.preamble);
        o.unit(m.unit);
        o.num("size", m.size);
        o.close();
    }
    for m in &info.direct_meters {
        o.open("direct_meters");
        o.preamble(&m.preamble);
        o.unit(m.unit);
        o.num("direct_table_id", m.direct_table_id);
        o.close();
    }
    for c in &info.controller_packet_metadata {
        o.open("controller_packet_metadata");
        o.preamble(&c.preamble);
        for m in &c.metadata {
            o.param("metadata", m);
        }
        o.close();
    }
    for r in &info.registers {
        o.open("registers");
        o.preamble(&r.preamble);
        o.type_spec(&r.type_spec);
        o.num("size", r.size);
        o.close();
    }
    for d in &info.digests {
        o.open("digests");
        o.preamble(&d.preamble);
        o.type_spec(&d.type_spec);
        o.close();
    }
    if let Some(ti) = &info.type_info {
        o.open("type_info");
        for (name, members) in &ti.structs {
            o.open("structs");
            o.str("key", name.as_bytes());
            o.open("value");
            for (f, t) in members {
                o.open("members");
                o.str("name", f.as_bytes());
                o.type_spec(t);
                o.close();
            }
            o.close();
            o.close();
        }
        for (name, members) in &ti.headers {
            o.open("headers");
            o.str("key", name.as_bytes());
            o.open("value");
            for (f, t) in members {
                o.open("members");
                o.str("name", f.as_bytes());
                o.open("type_spec");
                o.bitstring(t);
                o.close();
                o.close();
            }
            o.close();
            o.close();
        }
        o.close();
    }
    o.s
}

/// A text-format message: its fields in order, repeated ones repeated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Node {
    pub fields: Vec<(String, Val)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Val {
    /// A number, enumerator or `true`/`false`, as written.
    Scalar(String),
    /// A string or bytes value, unescaped.
    Bytes(Vec<u8>),
    Msg(Node),
}

impl Node {
    /// Every value of field `name`.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Val> + 'a {
        self.fields.iter().filter(move |(n, _)| n == name).map(|(_, v)| v)
    }

    /// The first submessage `name`.
    pub fn msg<'a>(&'a self, name: &'a str) -> Option<&'a Node> {
        self.all(name).find_map(|v| match v {
            Val::Msg(m) => Some(m),
            _ => None,
        })
    }

    /// The first scalar or string `name`, as text.
    pub fn get<'a>(&'a self, name: &'a str) -> Option<String> {
        self.all(name).find_map(|v| match v {
            Val::Scalar(s) => Some(s.clone()),
            Val::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
            Val::Msg(_) => None,
        })
    }
}

/// Reads a text-format message (`#` comments, `name: value`,
/// `name { ... }`, `name: { ... }`, `"..."` strings with C escapes,
/// adjacent strings concatenated).
pub fn parse(text: &str) -> Result<Node, String> {
    let mut r = Reader { b: text.as_bytes(), pos: 0 };
    let n = r.message(0)?;
    r.skip();
    if r.pos < r.b.len() {
        return Err(format!("offset {}: unexpected `{}`", r.pos, r.b[r.pos] as char));
    }
    Ok(n)
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn skip(&mut self) {
        while let Some(&c) = self.b.get(self.pos) {
            if c == b'#' {
                while self.b.get(self.pos).is_some_and(|&c| c != b'\n') {
                    self.pos += 1;
                }
            } else if c.is_ascii_whitespace() {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn err(&self, what: &str) -> String {
        format!("offset {}: {what}", self.pos)
    }

    fn word(&mut self) -> String {
        let start = self.pos;
        while self
            .b
            .get(self.pos)
            .is_some_and(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-' | b'+'))
        {
            self.pos += 1;
        }
        String::from_utf8_lossy(&self.b[start..self.pos]).into_owned()
    }

    fn message(&mut self, depth: usize) -> Result<Node, String> {
        if depth > MAX_NESTING {
            return Err(self.err("messages nested too deeply"));
        }
        let mut node = Node::default();
        loop {
            self.skip();
            match self.b.get(self.pos) {
                None | Some(b'}') => return Ok(node),
                _ => {}
            }
            let name = self.word();
            if name.is_empty() {
                return Err(self.err("expected a field name"));
            }
            self.skip();
            let colon = self.b.get(self.pos) == Some(&b':');
            if colon {
                self.pos += 1;
                self.skip();
            }
            let val = match self.b.get(self.pos) {
                Some(b'{') => {
                    self.pos += 1;
                    let m = self.message(depth + 1)?;
                    self.skip();
                    if self.b.get(self.pos) != Some(&b'}') {
                        return Err(self.err("expected `}`"));
                    }
                    self.pos += 1;
                    Val::Msg(m)
                }
                Some(b'"') | Some(b'\'') if colon => {
                    let mut out = Vec::new();
                    while let Some(&q @ (b'"' | b'\'')) = self.b.get(self.pos) {
                        self.pos += 1;
                        self.string(q, &mut out)?;
                        self.skip();
                    }
                    Val::Bytes(out)
                }
                _ if colon => {
                    let w = self.word();
                    if w.is_empty() {
                        return Err(self.err("expected a value"));
                    }
                    Val::Scalar(w)
                }
                _ => return Err(self.err("expected `:` or `{`")),
            };
            node.fields.push((name, val));
        }
    }

    fn string(&mut self, quote: u8, out: &mut Vec<u8>) -> Result<(), String> {
        loop {
            let Some(&c) = self.b.get(self.pos) else {
                return Err(self.err("unterminated string"));
            };
            self.pos += 1;
            if c == quote {
                return Ok(());
            }
            if c != b'\\' {
                out.push(c);
                continue;
            }
            let Some(&e) = self.b.get(self.pos) else {
                return Err(self.err("unterminated escape"));
            };
            self.pos += 1;
            match e {
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'0'..=b'7' => {
                    let mut v: u32 = (e - b'0') as u32;
                    for _ in 0..2 {
                        match self.b.get(self.pos) {
                            Some(&d @ b'0'..=b'7') => {
                                v = v * 8 + (d - b'0') as u32;
                                self.pos += 1;
                            }
                            _ => break,
                        }
                    }
                    out.push(v as u8);
                }
                b'x' => {
                    let mut v: u32 = 0;
                    let mut n = 0;
                    while n < 2 {
                        match self.b.get(self.pos).and_then(|d| (*d as char).to_digit(16)) {
                            Some(d) => {
                                v = v * 16 + d;
                                self.pos += 1;
                                n += 1;
                            }
                            None => break,
                        }
                    }
                    if n == 0 {
                        return Err(self.err("bad \\x escape"));
                    }
                    out.push(v as u8);
                }
                other => out.push(other),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_protobuf_does() {
        assert_eq!(escape(b"\0\0\0\n"), "\\000\\000\\000\\n");
        assert_eq!(escape(b"@noWarn(\"unused\")"), "@noWarn(\\\"unused\\\")");
        assert_eq!(escape(&[0xff, b'a']), "\\377a");
    }

    #[test]
    fn reads_what_it_prints() {
        let t = "# c\nx {\n  id: 5\n  name: \"a\\\"b\\000\"\n  e: EXACT\n}\nx {\n}\ny: { z: 'q' \"r\" }\n";
        let n = parse(t).unwrap();
        let xs: Vec<&Val> = n.all("x").collect();
        assert_eq!(xs.len(), 2);
        let x = n.msg("x").unwrap();
        assert_eq!(x.get("id").as_deref(), Some("5"));
        assert_eq!(x.all("name").next(), Some(&Val::Bytes(b"a\"b\0".to_vec())));
        assert_eq!(x.get("e").as_deref(), Some("EXACT"));
        assert_eq!(n.msg("y").unwrap().get("z").as_deref(), Some("qr"));
    }

    #[test]
    fn refuses_bad_text_without_panicking() {
        for t in ["x {", "x: ", "x \"a\"", "}", "x: \"abc", "x: \"\\", "x: {{", &"a {".repeat(100)]
        {
            assert!(parse(t).is_err(), "{t:?}");
        }
    }
}
