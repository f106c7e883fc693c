//! `verify_checksum` and `update_checksum` over a varbit field in the
//! compiled engine against the reference interpreter: the checksum
//! covers the field's current bits only, whatever its length, on random
//! frames (right and wrong checksums, every length the parser takes, and
//! frames too short for it) in every cache mode.

mod common;
use common::{compiled_agrees, csum16, Rng};

use sluice_p4::interp::Interp;
use sluice_p4::parse;

const PROGRAM: &str = r#"#include <core.p4>
#include <v1model.p4>
header h_t { bit<4> n; bit<4> x; bit<16> sum; bit<8> err; bit<16> upd; }
header v_t { varbit<88> opts; }
struct H { h_t h; v_t v; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.v, (bit<32>)hdr.h.n * 8);
        transition accept;
    }
}
control V(inout H hdr, inout M m) {
    apply {
        verify_checksum(hdr.v.isValid(), { hdr.h.x, 4w0, hdr.v.opts }, hdr.h.sum, HashAlgorithm.csum16);
    }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        hdr.h.err = (bit<8>)sm.checksum_error;
        hdr.v.setInvalid();
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) {
    apply {
        update_checksum(true, { hdr.v.opts, hdr.h.n, hdr.h.x }, hdr.h.upd, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

#[test]
fn a_checksum_covers_a_varbit_fields_current_bits() {
    let dir = std::env::temp_dir().join(format!("sluice-lower-csum-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("csum.p4");
    std::fs::write(&path, PROGRAM).expect("write");
    let loaded = parse::load_file(&path).expect("load");
    let mut interp = Interp::new(&loaded).expect("interpreter");
    let mut r = Rng(0x1234_5678_9abc_def1);
    let mut frames = Vec::new();
    for _ in 0..200 {
        let n = (r.next() % 12) as usize; // 11 bytes is the varbit's maximum
        let x = (r.next() % 16) as u8;
        let opts: Vec<u8> = (0..n).map(|_| r.next() as u8).collect();
        let mut covered = vec![x << 4];
        covered.extend(&opts);
        let mut sum = csum16(&covered);
        if r.next() % 3 == 0 {
            sum ^= 1 << (r.next() % 16);
        }
        let mut f = vec![(n as u8) << 4 | x];
        f.extend(sum.to_be_bytes());
        f.extend([0, 0, 0]);
        f.extend(&opts);
        let tail = (r.next() % 4) as usize;
        f.extend((0..tail).map(|_| r.next() as u8));
        if r.next() % 8 == 0 {
            f.truncate(f.len().saturating_sub(1 + tail));
        }
        frames.push(f);
    }
    let (mut wrong, mut right) = (0, 0);
    compiled_agrees(&loaded, &mut interp, &frames, |_, _, want| {
        // The test means something: some frames pass verification and
        // some fail (`err` is the header's fourth byte).
        match want.first().and_then(|o| o.data.get(3)) {
            Some(1) => wrong += 1,
            Some(0) => right += 1,
            _ => {}
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
    assert!(wrong > 0 && right > 0, "{wrong} frames with a wrong checksum, {right} right");
}
