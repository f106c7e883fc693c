//! Arbitrary bytes as a P4 program: the lexer, preprocessor and parser
//! reject or accept, never panic or overflow the stack; a program they
//! accept is loaded into the reference interpreter, which refuses it or
//! runs two packets (the input's first bytes) through it, within its
//! step bounds, traces one, and builds a frame from the text's tail as
//! a header-field description.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_p4::lex::{lex, Tok};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // `#include "file"` would read the fuzzing machine's files; only the
    // built-in `<...>` includes are exercised.
    if let Ok(toks) = lex(0, text) {
        let reads_files = toks.iter().any(|t| {
            matches!(&t.kind, Tok::Directive { name, body, .. }
                if name == "include" && !matches!(body.first().map(|b| &b.kind), Some(Tok::HeaderName(_))))
        });
        if reads_files {
            return;
        }
    }
    let loaded = match sluice_p4::parse::load_str("fuzz.p4", text) {
        Ok(l) => l,
        Err(e) => {
            // Rendering must not panic either.
            let _ = e.render();
            return;
        }
    };
    match sluice_p4::interp::Interp::new(&loaded) {
        Ok(mut sw) => {
            use sluice_p4::target::Target;
            let frame = &data[..data.len().min(64)];
            let _ = sw.packet(1, frame);
            let _ = sw.packet(2, &[]);
            // The trace hook on the same packet, and the text's tail as a
            // `--flow` description: refused or built, never a panic.
            let _ = sw.trace_packet(1, frame);
            let tail = text.len().saturating_sub(128);
            let desc = text.get(tail..).unwrap_or(text);
            let _ = sw.flow_frame(desc);
        }
        Err(d) => {
            let _ = loaded.sources.render(&d);
        }
    }
});
