//! The input bytes as the choices of `sluice_p4::gen`: a small random P4
//! program (headers, a parser with `select`, tables with entries and
//! defaults, `if`/`else`, assignments, validity, drops, egress ports),
//! and packets for it, run through the reference interpreter and the
//! compiled engine in every cache mode, indexed and scanned. The outputs
//! (ports, bytes, drops) must agree; a program the lowering refuses is
//! skipped (the refusal itself must not panic); a program the front end
//! or interpreter rejects is a generator bug and fails too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_p4::gen::{check, program, Check, Source, MODES};

fuzz_target!(|data: &[u8]| {
    let p = program(&mut Source::bytes(data), 6);
    match check(&p, &MODES) {
        Check::Agreed | Check::Refused(_) => {}
        Check::Rejected(r) => panic!("generated program rejected: {r}\n{}", p.text),
        Check::Mismatch(m) => panic!("compiled engine and interpreter disagree: {m}\n{}", p.text),
    }
});
