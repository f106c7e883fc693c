//! What the P4 integration tests share: where p4c's STF corpus and the
//! project's own example programs are.

#![allow(dead_code)] // each test uses what it needs

use std::path::{Path, PathBuf};

/// `samples/` of p4c's STF corpus: `$SLUICE_P4C_STF`, else `shared/p4c-stf`
/// beside the checkout, else `/work/shared/p4c-stf`.
pub fn corpus_dir() -> Option<PathBuf> {
    let mut cands = Vec::new();
    if let Ok(d) = std::env::var("SLUICE_P4C_STF") {
        cands.push(PathBuf::from(d));
    }
    cands.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/p4c-stf"));
    cands.push(PathBuf::from("/work/shared/p4c-stf"));
    cands.into_iter().map(|d| d.join("samples")).find(|d| d.is_dir())
}

/// `examples/p4`.
pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/p4")
}

/// `(name, program, script)` of every `NAME.p4` in `dir` with a
/// `NAME.stf`, by name.
pub fn programs_in(dir: &Path) -> Vec<(String, PathBuf, PathBuf)> {
    let mut out: Vec<(String, PathBuf, PathBuf)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "p4"))
        .filter_map(|p| {
            let stf = p.with_extension("stf");
            let name = p.file_stem()?.to_str()?.to_string();
            stf.is_file().then_some((name, p, stf))
        })
        .collect();
    out.sort();
    out
}

/// A small deterministic generator (xorshift64) for random frames,
/// entries and program pieces; seeded by each test so failures repeat.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Writes `text` as `name` into this test process's own temporary
/// directory and loads it (it must load: the tests' programs are valid).
/// Tests running at once in one process use different names.
pub fn load_text(name: &str, text: &str) -> sluice_p4::parse::Loaded {
    let dir = std::env::temp_dir().join(format!("sluice-p4-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    sluice_p4::parse::load_file(&path).expect("load")
}

/// Runs `frames` through the interpreter and through a fresh compiled
/// engine in each cache mode (off, megaflow, on), asserting that the
/// outputs agree frame by frame; `each` sees the mode, the frame and
/// the interpreter's outputs (for a test's own counts).
pub fn compiled_agrees(
    loaded: &sluice_p4::parse::Loaded,
    interp: &mut sluice_p4::interp::Interp,
    frames: &[Vec<u8>],
    mut each: impl FnMut(sluice_core::walk::CacheMode, &[u8], &[sluice_p4::target::Output]),
) {
    use sluice_core::walk::CacheMode;
    use sluice_p4::target::Target;
    for mode in [CacheMode::Off, CacheMode::Megaflow, CacheMode::On, CacheMode::Auto] {
        let mut eng = sluice_p4::lower::engine::Compiled::new(loaded).expect("compiles");
        eng.set_cache_mode(mode);
        for f in frames {
            let want = interp.packet(1, f).expect("interp packet");
            let got = eng.packet(1, f).expect("engine packet");
            assert_eq!(got, want, "{mode:?} on {f:02x?}");
            each(mode, f, &want);
        }
    }
}

/// A v1model program over one two-byte header `h` (fields `a`, `b`; user
/// metadata `m.x`) whose ingress declares `locals` and applies `apply`;
/// the deparser emits `h`.
pub fn one_header_program(locals: &str, apply: &str) -> String {
    format!(
        r#"#include <core.p4>
#include <v1model.p4>
header h_t {{ bit<8> a; bit<8> b; }}
struct H {{ h_t h; }}
struct M {{ bit<8> x; }}
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.h); transition accept; }}
}}
control V(inout H hdr, inout M m) {{ apply {{ }} }}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {{
    {locals}
    apply {{ {apply} }}
}}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {{ apply {{ }} }}
control C(inout H hdr, inout M m) {{ apply {{ }} }}
control D(packet_out pkt, in H hdr) {{ apply {{ pkt.emit(hdr.h); }} }}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#
    )
}

/// One's complement sum of 16-bit words (the last byte padded), negated:
/// the tests' own reference for `csum16`.
pub fn csum16(bytes: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in bytes.chunks(2) {
        s += u32::from(c[0]) << 8 | u32::from(c.get(1).copied().unwrap_or(0));
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}
