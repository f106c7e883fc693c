//! Source files, spans and diagnostics.
//!
//! Every file the preprocessor reads (the program, its `#include`s and
//! the built-in `core.p4`/`v1model.p4`) is kept in a [`Sources`] so a
//! [`Span`] — a file number and a byte range — can be rendered as
//! `file:line:column`, the source line and a caret under the offending
//! text.

use std::fmt;

/// A byte range in one source file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// Index into [`Sources`].
    pub file: u32,
    /// Byte offset of the first byte.
    pub start: u32,
    /// Byte offset one past the last byte (`start` for an empty span).
    pub end: u32,
}

impl Span {
    pub fn new(file: u32, start: u32, end: u32) -> Self {
        Span { file, start, end }
    }

    /// The smallest span covering both (same file assumed; `self`'s file
    /// wins otherwise).
    pub fn to(self, other: Span) -> Span {
        if other.file != self.file {
            return self;
        }
        Span { file: self.file, start: self.start.min(other.start), end: self.end.max(other.end) }
    }
}

/// One source file: its name as the user should see it and its text.
#[derive(Clone, Debug)]
pub struct Source {
    pub name: String,
    pub text: String,
}

/// All files read while building one program.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    pub files: Vec<Source>,
}

impl Sources {
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> u32 {
        self.files.push(Source { name: name.into(), text: text.into() });
        (self.files.len() - 1) as u32
    }

    pub fn get(&self, file: u32) -> Option<&Source> {
        self.files.get(file as usize)
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, file: u32, offset: u32) -> (usize, usize) {
        let Some(src) = self.get(file) else {
            return (0, 0);
        };
        let offset = (offset as usize).min(src.text.len());
        let before = &src.text[..floor_char(&src.text, offset)];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = before[line_start..].chars().count() + 1;
        (line, col)
    }

    /// `file:line:column: message`, the source line and a caret line.
    pub fn render(&self, d: &Diagnostic) -> String {
        let Some(span) = d.span else {
            return format!("error: {}", d.message);
        };
        let Some(src) = self.get(span.file) else {
            return format!("error: {}", d.message);
        };
        let (line, col) = self.line_col(span.file, span.start);
        let start = floor_char(&src.text, (span.start as usize).min(src.text.len()));
        let line_start = src.text[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = src.text[start..].find('\n').map_or(src.text.len(), |i| start + i);
        let text = src.text[line_start..line_end].trim_end_matches('\r');
        let end = (span.end as usize).clamp(start, line_end);
        let width = src.text[start..floor_char(&src.text, end)].chars().count().max(1);
        // Keep tabs so the caret lines up under tabbed source.
        let pad: String = src.text[line_start..start]
            .chars()
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        let mut out = format!(
            "{}:{}:{}: error: {}\n{}\n{}{}",
            src.name,
            line,
            col,
            d.message,
            text,
            pad,
            "^".repeat(width)
        );
        for note in &d.notes {
            out.push_str("\nnote: ");
            out.push_str(note);
        }
        out
    }
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// An error in a program: what is wrong (or not supported) and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub message: String,
    pub span: Option<Span>,
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn new(span: Span, message: impl Into<String>) -> Self {
        Diagnostic { message: message.into(), span: Some(span), notes: Vec::new() }
    }

    /// An error with no place in the source (a missing file, say).
    pub fn bare(message: impl Into<String>) -> Self {
        Diagnostic { message: message.into(), span: None, notes: Vec::new() }
    }

    /// "not supported: ..." — sluice refuses rather than miscompiles.
    pub fn unsupported(span: Span, what: impl fmt::Display) -> Self {
        Diagnostic::new(span, format!("not supported: {what}"))
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Diagnostic {}

pub type Result<T> = std::result::Result<T, Diagnostic>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_under_the_span() {
        let mut s = Sources::default();
        let f = s.add("a.p4", "header h {\n    bit<8> x;\n\tbogus y;\n}\n");
        let at = s.files[0].text.find("bogus").unwrap() as u32;
        let d = Diagnostic::new(Span::new(f, at, at + 5), "unknown type `bogus`");
        let r = s.render(&d);
        assert_eq!(r, "a.p4:3:2: error: unknown type `bogus`\n\tbogus y;\n\t^^^^^");
    }
}
