//! The P4-16 lexer: one file's text to tokens with byte spans.
//!
//! Preprocessor lines (`#define ...`) become one [`Tok::Directive`]
//! token each, carrying the rest of the logical line (backslash-newline
//! continues it), so [`crate::pre`] works on tokens alone. `>` is always
//! its own token (`>=` excepted): the parser joins two adjacent `>` into
//! a shift, which lets `bit<bit<8>>`-like type argument lists close
//! without splitting tokens.

use crate::ast::BigValue;
use crate::diag::{Diagnostic, Span};

/// One token and where its text is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub kind: Tok,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    Ident(String),
    Kw(Kw),
    /// An integer literal: exact magnitude and, for `8w5`/`4s3`, the
    /// `(signed, width)` prefix.
    Int {
        value: BigValue,
        width: Option<(bool, u32)>,
    },
    /// A string literal, escapes resolved.
    Str(String),
    /// Operators and punctuation, as written (`"&&&"`, `"("`, `"@"`).
    Punct(&'static str),
    /// `#name ...` up to the end of the logical line. `body` is the rest
    /// lexed as tokens; for `#error`, `#warning`, `#pragma` and `#line`
    /// it is empty and `text` holds the raw rest of the line instead.
    Directive {
        name: String,
        body: Vec<Token>,
        text: String,
    },
    /// `<file>` after `#include`.
    HeaderName(String),
}

macro_rules! keywords {
    ($($v:ident = $s:literal,)*) => {
        /// Reserved words (and `_`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Kw { $($v,)* }

        impl Kw {
            pub fn as_str(self) -> &'static str {
                match self { $(Kw::$v => $s,)* }
            }

            pub fn from_word(w: &str) -> Option<Kw> {
                match w { $($s => Some(Kw::$v),)* _ => None }
            }
        }
    };
}

keywords! {
    Abstract = "abstract",
    Action = "action",
    Actions = "actions",
    Apply = "apply",
    Bit = "bit",
    Bool = "bool",
    Break = "break",
    Const = "const",
    Continue = "continue",
    Control = "control",
    Default = "default",
    Else = "else",
    Entries = "entries",
    Enum = "enum",
    Error = "error",
    Exit = "exit",
    Extern = "extern",
    False = "false",
    For = "for",
    Header = "header",
    HeaderUnion = "header_union",
    If = "if",
    In = "in",
    Inout = "inout",
    Int = "int",
    Key = "key",
    List = "list",
    MatchKind = "match_kind",
    Out = "out",
    Package = "package",
    Parser = "parser",
    Priority = "priority",
    Return = "return",
    Select = "select",
    State = "state",
    String = "string",
    Struct = "struct",
    Switch = "switch",
    Table = "table",
    This = "this",
    Transition = "transition",
    True = "true",
    Tuple = "tuple",
    Type = "type",
    Typedef = "typedef",
    ValueSet = "value_set",
    Varbit = "varbit",
    Void = "void",
    DontCare = "_",
}

impl Tok {
    /// How the token reads in a message (`` `;` ``, `` identifier `x` ``).
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("identifier `{s}`"),
            Tok::Kw(k) => format!("`{}`", k.as_str()),
            Tok::Int { .. } => "an integer".to_string(),
            Tok::Str(_) => "a string".to_string(),
            Tok::Punct(p) => format!("`{p}`"),
            Tok::Directive { name, .. } => format!("`#{name}`"),
            Tok::HeaderName(n) => format!("`<{n}>`"),
        }
    }
}

/// Operators, longest first so the first match is the longest.
const PUNCTS: &[&str] = &[
    "|+|=", "|-|=", "&&&", "|+|", "|-|", "<<=", "...", "&&", "||", "==", "!=", "<=", ">=", "<<",
    "++", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "..", "<", ">", "=", "!", "~", "+", "-",
    "*", "/", "%", "&", "|", "^", "?", ":", ";", ",", ".", "(", ")", "[", "]", "{", "}", "@",
];

/// Directives whose rest of line is kept as raw text, not tokens.
const RAW_DIRECTIVES: &[&str] = &["error", "warning", "pragma", "line"];

/// Lexes one file (`file` is its index in [`crate::diag::Sources`]).
pub fn lex(file: u32, text: &str) -> Result<Vec<Token>, Diagnostic> {
    let mut lx = Lexer { file, src: text, bytes: text.as_bytes(), pos: 0 };
    let mut out = Vec::new();
    // Whether only whitespace/comments precede `pos` on its line.
    let mut line_start = true;
    loop {
        if lx.skip_space(false)? {
            line_start = true;
        }
        if lx.pos >= lx.bytes.len() {
            return Ok(out);
        }
        if lx.bytes[lx.pos] == b'#' {
            if !line_start {
                return Err(lx.err(lx.pos, lx.pos + 1, "`#` must start a line (a directive)"));
            }
            out.push(lx.directive()?);
            line_start = true;
            continue;
        }
        line_start = false;
        out.push(lx.token()?);
    }
}

struct Lexer<'a> {
    file: u32,
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn span(&self, start: usize, end: usize) -> Span {
        Span::new(self.file, start as u32, end as u32)
    }

    fn err(&self, start: usize, end: usize, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::new(self.span(start, end), msg)
    }

    fn at(&self, i: usize) -> u8 {
        self.bytes.get(i).copied().unwrap_or(0)
    }

    /// Skips whitespace and comments; returns whether a line ended. In a
    /// directive (`in_directive`) it stops before a newline that is not
    /// escaped by a backslash.
    fn skip_space(&mut self, in_directive: bool) -> Result<bool, Diagnostic> {
        let mut newline = false;
        loop {
            let c = self.at(self.pos);
            match c {
                b'\n' => {
                    if in_directive {
                        return Ok(true);
                    }
                    newline = true;
                    self.pos += 1;
                }
                b' ' | b'\t' | b'\r' | 0x0b | 0x0c if self.pos < self.bytes.len() => self.pos += 1,
                b'\\' if in_directive && self.continuation(self.pos).is_some() => {
                    self.pos = self.continuation(self.pos).unwrap_or(self.pos + 1);
                }
                b'/' if self.at(self.pos + 1) == b'/' => {
                    // A line comment; in a directive a backslash at its
                    // end still continues the line (as in C).
                    while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                        if in_directive && self.bytes[self.pos] == b'\\' {
                            if let Some(n) = self.continuation(self.pos) {
                                self.pos = n;
                                continue;
                            }
                        }
                        self.pos += 1;
                    }
                }
                b'/' if self.at(self.pos + 1) == b'*' => {
                    let start = self.pos;
                    match self.src[self.pos + 2..].find("*/") {
                        Some(i) => {
                            let end = self.pos + 2 + i + 2;
                            if self.src[start..end].contains('\n') {
                                newline = true;
                            }
                            self.pos = end;
                        }
                        None => return Err(self.err(start, start + 2, "unterminated comment")),
                    }
                }
                _ => return Ok(newline),
            }
        }
    }

    /// If a backslash at `i` ends its line (trailing spaces allowed),
    /// the position after the newline.
    fn continuation(&self, i: usize) -> Option<usize> {
        let mut j = i + 1;
        while matches!(self.at(j), b' ' | b'\t' | b'\r') && j < self.bytes.len() {
            j += 1;
        }
        (self.at(j) == b'\n').then_some(j + 1)
    }

    /// `#name rest-of-line` as one token.
    fn directive(&mut self) -> Result<Token, Diagnostic> {
        let start = self.pos;
        self.pos += 1;
        while matches!(self.at(self.pos), b' ' | b'\t') {
            self.pos += 1;
        }
        let name_start = self.pos;
        while self.at(self.pos).is_ascii_alphanumeric() || self.at(self.pos) == b'_' {
            self.pos += 1;
        }
        let name = self.src[name_start..self.pos].to_string();
        let span = self.span(start, self.pos);
        let mut body = Vec::new();
        let mut text = String::new();
        if RAW_DIRECTIVES.contains(&name.as_str()) {
            while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                if self.bytes[self.pos] == b'\\' {
                    if let Some(n) = self.continuation(self.pos) {
                        text.push(' ');
                        self.pos = n;
                        continue;
                    }
                }
                let ch = self.src[self.pos..].chars().next().unwrap_or(' ');
                text.push(ch);
                self.pos += ch.len_utf8();
            }
            text = text.trim().to_string();
        } else {
            loop {
                if self.skip_space(true)? || self.pos >= self.bytes.len() {
                    break;
                }
                if name == "include" && body.is_empty() && self.at(self.pos) == b'<' {
                    let s = self.pos;
                    let Some(i) = self.src[s..].find(['>', '\n']) else {
                        return Err(self.err(s, s + 1, "unterminated `<file>` name"));
                    };
                    if self.at(s + i) != b'>' {
                        return Err(self.err(s, s + 1, "unterminated `<file>` name"));
                    }
                    self.pos = s + i + 1;
                    body.push(Token {
                        kind: Tok::HeaderName(self.src[s + 1..s + i].to_string()),
                        span: self.span(s, self.pos),
                    });
                    continue;
                }
                if self.at(self.pos) == b'#' {
                    // Stringizing/pasting in a macro body: kept for the
                    // preprocessor to refuse by name.
                    let s = self.pos;
                    self.pos += if self.at(s + 1) == b'#' { 2 } else { 1 };
                    let p = if self.pos - s == 2 { "##" } else { "#" };
                    body.push(Token { kind: Tok::Punct(p), span: self.span(s, self.pos) });
                    continue;
                }
                body.push(self.token()?);
            }
        }
        Ok(Token { kind: Tok::Directive { name, body, text }, span })
    }

    /// One ordinary token at `pos` (whitespace already skipped).
    fn token(&mut self) -> Result<Token, Diagnostic> {
        let start = self.pos;
        let c = self.bytes[start];
        let kind = if c.is_ascii_alphabetic() || c == b'_' {
            while self.at(self.pos).is_ascii_alphanumeric() || self.at(self.pos) == b'_' {
                self.pos += 1;
            }
            let w = &self.src[start..self.pos];
            match Kw::from_word(w) {
                Some(k) => Tok::Kw(k),
                None => Tok::Ident(w.to_string()),
            }
        } else if c.is_ascii_digit() {
            self.number()?
        } else if c == b'"' {
            self.string()?
        } else if let Some(p) = PUNCTS.iter().find(|p| self.src[start..].starts_with(**p)) {
            self.pos += p.len();
            Tok::Punct(p)
        } else {
            let ch = self.src[start..].chars().next().unwrap_or('?');
            return Err(self.err(
                start,
                start + ch.len_utf8(),
                format!("unexpected character `{}`", ch.escape_default()),
            ));
        };
        Ok(Token { kind, span: self.span(start, self.pos) })
    }

    fn string(&mut self) -> Result<Tok, Diagnostic> {
        let start = self.pos;
        self.pos += 1;
        let mut s = String::new();
        loop {
            let Some(ch) = self.src[self.pos..].chars().next() else {
                return Err(self.err(start, start + 1, "unterminated string literal"));
            };
            match ch {
                '"' => {
                    self.pos += 1;
                    return Ok(Tok::Str(s));
                }
                '\n' => return Err(self.err(start, start + 1, "unterminated string literal")),
                '\\' => {
                    let Some(e) = self.src[self.pos + 1..].chars().next() else {
                        return Err(self.err(start, start + 1, "unterminated string literal"));
                    };
                    s.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        '0' => '\0',
                        other => other,
                    });
                    self.pos += 1 + e.len_utf8();
                }
                c => {
                    s.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
    }

    /// `123`, `0x1F`, `0b1_0`, `8w5`, `4s0x3`, ...
    fn number(&mut self) -> Result<Tok, Diagnostic> {
        let start = self.pos;
        let mut end = start;
        while self.at(end).is_ascii_alphanumeric() || self.at(end) == b'_' {
            end += 1;
        }
        let word = &self.src[start..end];
        self.pos = end;
        let bad = |msg: &str| self.err(start, end, format!("{msg} `{word}`"));
        // Width prefix: decimal digits then `w` or `s`.
        let digits_end = word.find(|c: char| !c.is_ascii_digit()).unwrap_or(word.len());
        let (width, rest) = match word[digits_end..].chars().next() {
            Some(c @ ('w' | 's')) => {
                let w: u32 =
                    word[..digits_end].parse().map_err(|_| bad("integer width too large in"))?;
                (Some((c == 's', w)), &word[digits_end + 1..])
            }
            _ => (None, word),
        };
        let (radix, digits) = match rest.get(..2) {
            Some("0x" | "0X") => (16, &rest[2..]),
            Some("0o" | "0O") => (8, &rest[2..]),
            Some("0b" | "0B") => (2, &rest[2..]),
            Some("0d" | "0D") => (10, &rest[2..]),
            _ => (10, rest),
        };
        if !digits
            .starts_with(|c: char| c.is_ascii_digit() || (radix == 16 && c.is_ascii_hexdigit()))
        {
            return Err(bad("invalid integer literal"));
        }
        let mut value = BigValue::default();
        for ch in digits.chars() {
            if ch == '_' {
                continue;
            }
            let Some(d) = ch.to_digit(radix) else {
                return Err(bad("invalid integer literal"));
            };
            mul_add(&mut value, radix as u64, d as u64);
        }
        Ok(Tok::Int { value, width })
    }
}

/// `v = v * m + a` on the little-endian limbs.
fn mul_add(v: &mut BigValue, m: u64, a: u64) {
    let mut carry = a as u128;
    for limb in v.0.iter_mut() {
        let x = *limb as u128 * m as u128 + carry;
        *limb = x as u64;
        carry = x >> 64;
    }
    if carry != 0 {
        v.0.push(carry as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<Tok> {
        lex(0, s).unwrap().into_iter().map(|t| t.kind).collect()
    }

    fn int(v: u128, width: Option<(bool, u32)>) -> Tok {
        Tok::Int { value: BigValue::from_u128(v), width }
    }

    #[test]
    fn integer_forms() {
        assert_eq!(
            kinds("0 12_3 0x1F 0o17 0b1_01 0d99 8w5 4s3 16w0x1F 32w0b1"),
            vec![
                int(0, None),
                int(123, None),
                int(31, None),
                int(15, None),
                int(5, None),
                int(99, None),
                int(5, Some((false, 8))),
                int(3, Some((true, 4))),
                int(31, Some((false, 16))),
                int(1, Some((false, 32))),
            ]
        );
        let big = kinds("0x1_0000_0000_0000_0000_0000_0000_0000_0000");
        assert_eq!(big, vec![Tok::Int { value: BigValue(vec![0, 0, 1]), width: None }]);
        assert!(lex(0, "0x").is_err());
        assert!(lex(0, "12ab").is_err());
        assert!(lex(0, "8w").is_err());
    }

    #[test]
    fn operators_longest_first_and_angles_apart() {
        assert_eq!(
            kinds("a &&& b .. |+| |-|= ++ >> >>= <<"),
            vec![
                Tok::Ident("a".into()),
                Tok::Punct("&&&"),
                Tok::Ident("b".into()),
                Tok::Punct(".."),
                Tok::Punct("|+|"),
                Tok::Punct("|-|="),
                Tok::Punct("++"),
                Tok::Punct(">"),
                Tok::Punct(">"),
                Tok::Punct(">"),
                Tok::Punct(">="),
                Tok::Punct("<<"),
            ]
        );
    }

    #[test]
    fn keywords_strings_comments() {
        assert_eq!(
            kinds("header /* x\n y */ _ _a // c\n \"a\\\"b\""),
            vec![
                Tok::Kw(Kw::Header),
                Tok::Kw(Kw::DontCare),
                Tok::Ident("_a".into()),
                Tok::Str("a\"b".into()),
            ]
        );
        let e = lex(0, "a /* b").unwrap_err();
        assert_eq!(e.message, "unterminated comment");
        assert_eq!(e.span, Some(Span::new(0, 2, 4)));
        assert!(lex(0, "\"abc").is_err());
        assert!(lex(0, "a $").is_err());
    }

    #[test]
    fn directives_take_the_logical_line() {
        let toks =
            lex(0, "#define F(x) \\\n  (x + 1)\nF(2)\n  # include <core.p4>\n#error it's bad\n")
                .unwrap();
        assert_eq!(toks.len(), 7);
        match &toks[0].kind {
            Tok::Directive { name, body, .. } => {
                assert_eq!(name, "define");
                assert_eq!(body.len(), 9);
            }
            t => panic!("{t:?}"),
        }
        assert_eq!(toks[1].kind, Tok::Ident("F".into()));
        match &toks[5].kind {
            Tok::Directive { name, body, .. } => {
                assert_eq!(name, "include");
                assert_eq!(body[0].kind, Tok::HeaderName("core.p4".into()));
            }
            t => panic!("{t:?}"),
        }
        match &toks[6].kind {
            Tok::Directive { text, .. } => assert_eq!(text, "it's bad"),
            t => panic!("{t:?}"),
        }
        assert!(lex(0, "a # b").is_err());
    }
}
