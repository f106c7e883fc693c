//! Splitting ovs-ofctl text into tokens that remember where they came from.

use super::{TextError, TextResult};

/// A slice of the input and its byte offset in the whole input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tok<'a> {
    pub text: &'a str,
    pub start: usize,
}

impl<'a> Tok<'a> {
    pub fn end(&self) -> usize {
        self.start + self.text.len()
    }

    pub fn err(&self, msg: impl Into<String>) -> TextError {
        TextError::new(self.start, self.end(), msg)
    }

    /// A sub-token `text[from..to]`.
    pub fn slice(&self, from: usize, to: usize) -> Tok<'a> {
        Tok { text: &self.text[from..to], start: self.start + from }
    }

    /// Split at the first `sep` (one of the given characters) into key and
    /// value tokens.
    pub fn split_kv(&self, seps: &[char]) -> (Tok<'a>, Option<Tok<'a>>) {
        match self.text.find(|c| seps.contains(&c)) {
            Some(i) => (self.slice(0, i), Some(self.slice(i + 1, self.text.len()))),
            None => (*self, None),
        }
    }

    /// Strip surrounding whitespace.
    pub fn trim(&self) -> Tok<'a> {
        let lead = self.text.len() - self.text.trim_start().len();
        let t = self.text.trim();
        Tok { text: t, start: self.start + lead }
    }
}

/// The byte length of the double-quoted string `s` starts with (`s[0]`
/// is `"`), both quotes included; a backslash escapes the character after
/// it (which escapes are allowed is the reader's business). `None` if the
/// string is not closed.
pub(crate) fn quoted_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            // Skip the escaped byte. Only ASCII bytes are compared, and
            // no byte of a multi-byte character is ASCII.
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Split `tok` at top-level commas (and whitespace runs), ignoring
/// separators inside parentheses and double-quoted strings (`"..."`, see
/// [`quoted_len`]). Empty items are dropped.
pub(crate) fn split_items(tok: Tok<'_>) -> TextResult<Vec<Tok<'_>>> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut item_start = 0usize;
    // Every byte compared below is ASCII, so `i` is always on a character
    // boundary where it is used to slice.
    let b = tok.text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let n = quoted_len(&tok.text[i..])
                    .ok_or_else(|| TextError::new(tok.start + i, tok.end(), "unterminated `\"`"))?;
                i += n;
                continue;
            }
            b'(' => depth += 1,
            b')' => {
                depth = depth.checked_sub(1).ok_or_else(|| {
                    TextError::new(tok.start + i, tok.start + i + 1, "unbalanced `)`")
                })?;
            }
            b',' | b' ' | b'\t' if depth == 0 => {
                push_item(&mut out, tok.slice(item_start, i));
                item_start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if depth != 0 {
        return Err(TextError::new(tok.start + item_start, tok.end(), "unbalanced `(`"));
    }
    push_item(&mut out, tok.slice(item_start, tok.text.len()));
    Ok(out)
}

fn push_item<'a>(out: &mut Vec<Tok<'a>>, t: Tok<'a>) {
    let t = t.trim();
    if !t.text.is_empty() {
        out.push(t);
    }
}

/// Parse an unsigned integer in decimal or `0x` hex that must fit `max`.
pub(crate) fn parse_uint(t: Tok<'_>, max: u128, what: &str) -> TextResult<u128> {
    let s = t.text;
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u128::from_str_radix(h, 16)
    } else {
        s.parse::<u128>()
    };
    match v {
        Ok(v) if v <= max => Ok(v),
        Ok(_) => Err(t.err(format!("{what}: `{s}` is out of range (max {max})"))),
        Err(_) => Err(t.err(format!("{what}: `{s}` is not a number"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<&str> {
        split_items(Tok { text: s, start: 0 }).unwrap().into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn splits_at_top_level_only() {
        assert_eq!(texts("a=1, b , write_actions(x,y),c"), ["a=1", "b", "write_actions(x,y)", "c"]);
        assert_eq!(texts(""), Vec::<&str>::new());
        assert!(split_items(Tok { text: "a(b", start: 0 }).is_err());
        assert!(split_items(Tok { text: "a)b", start: 0 }).is_err());
    }

    #[test]
    fn quoted_strings_are_one_item() {
        assert_eq!(
            texts(r#"a="x, (y z", b=1 c="q\"r\\",d"#),
            [r#"a="x, (y z""#, "b=1", r#"c="q\"r\\""#, "d"]
        );
        assert_eq!(texts(r#""""#), [r#""""#]);
        let e = split_items(Tok { text: r#"a=1,b="open, x"#, start: 5 }).unwrap_err();
        assert_eq!((e.start, e.end), (11, 19));
        assert!(e.msg.contains("unterminated"));
        // A backslash before the end does not close the string.
        assert!(split_items(Tok { text: r#"a="x\""#, start: 0 }).is_err());
        assert_eq!(quoted_len(r#""é\"\\" rest"#), Some(8));
        assert_eq!(quoted_len(r#""\"#), None);
    }

    #[test]
    fn offsets_are_kept() {
        let items = split_items(Tok { text: "ab, cd", start: 10 }).unwrap();
        assert_eq!(items[1], Tok { text: "cd", start: 14 });
        let (k, v) = items[0].split_kv(&['=']);
        assert_eq!(k.text, "ab");
        assert!(v.is_none());
    }

    #[test]
    fn numbers() {
        let t = |s| Tok { text: s, start: 0 };
        assert_eq!(parse_uint(t("0x10"), 255, "x"), Ok(16));
        assert_eq!(parse_uint(t("255"), 255, "x"), Ok(255));
        assert!(parse_uint(t("256"), 255, "x").is_err());
        assert!(parse_uint(t("-1"), 255, "x").is_err());
        assert!(parse_uint(t("0x"), 255, "x").is_err());
    }
}
