//! Checksums over one whole header but their own field (IPv4's), which
//! the compiled engine sums from bytes — the packet's when verifying,
//! the deparser's output when updating — against the reference
//! interpreter, which sums the fields. Random frames with right and
//! wrong checksums, in every cache mode, over the cases where the
//! engine must fall back to summing the fields: a header that is not on
//! a byte boundary (after a 4-bit header) and a header whose field the
//! parser writes after extracting it (the key no longer holds the
//! packet's bits).

mod common;
use common::{compiled_agrees, csum16, Rng};

use sluice_p4::interp::Interp;
use sluice_p4::parse;

const PROGRAM: &str = r#"#include <core.p4>
#include <v1model.p4>
header e_t { bit<8> kind; }
header nib_t { bit<4> v; }
header ip_t {
    bit<8> vihl; bit<8> tos; bit<16> len; bit<16> id;
    bit<8> ttl; bit<8> proto; bit<16> sum; bit<32> src; bit<32> dst;
}
header w_t { bit<16> a; bit<16> c; bit<16> b; }
struct H { e_t e; nib_t nib; ip_t ip; w_t w; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.e);
        transition select(hdr.e.kind) { 1: with_nib; 2: with_w; default: ip; }
    }
    state with_nib { pkt.extract(hdr.nib); transition ip; }
    state with_w { pkt.extract(hdr.w); hdr.w.a = hdr.w.a + 1; transition ip; }
    state ip { pkt.extract(hdr.ip); transition accept; }
}
control V(inout H hdr, inout M m) {
    apply {
        verify_checksum(hdr.ip.isValid(),
            { hdr.ip.vihl, hdr.ip.tos, hdr.ip.len, hdr.ip.id, hdr.ip.ttl, hdr.ip.proto,
              hdr.ip.src, hdr.ip.dst },
            hdr.ip.sum, HashAlgorithm.csum16);
        verify_checksum(hdr.w.isValid(), { hdr.w.a, hdr.w.b }, hdr.w.c, HashAlgorithm.csum16);
    }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        hdr.ip.tos = (bit<8>)sm.checksum_error;
        if (hdr.ip.ttl > 0) { hdr.ip.ttl = hdr.ip.ttl - 1; }
        hdr.ip.id = hdr.ip.id + hdr.ip.len;
        hdr.w.b = hdr.w.b ^ 16w0x0101;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) {
    apply {
        update_checksum(hdr.ip.isValid(),
            { hdr.ip.vihl, hdr.ip.tos, hdr.ip.len, hdr.ip.id, hdr.ip.ttl, hdr.ip.proto,
              hdr.ip.src, hdr.ip.dst },
            hdr.ip.sum, HashAlgorithm.csum16);
        update_checksum(hdr.w.isValid(), { hdr.w.a, hdr.w.b }, hdr.w.c, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in H hdr) {
    apply { pkt.emit(hdr.e); pkt.emit(hdr.nib); pkt.emit(hdr.ip); pkt.emit(hdr.w); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// An 18-byte IPv4-like header whose checksum is right unless `wrong`.
fn ip(r: &mut Rng, wrong: bool) -> Vec<u8> {
    let mut h: Vec<u8> = (0..18).map(|_| r.next() as u8).collect();
    // `sum` is bytes 8 and 9 (no flags and fragment offset here).
    h[8] = 0;
    h[9] = 0;
    let mut sum = csum16(&h);
    if wrong {
        sum ^= 1 << (r.next() % 16);
    }
    h[8..10].copy_from_slice(&sum.to_be_bytes());
    h
}

#[test]
fn whole_header_checksums_agree_with_the_fields_sum() {
    let loaded = parse::load_str("whole.p4", PROGRAM).expect("load");
    let mut interp = Interp::new(&loaded).expect("interpreter");
    let mut r = Rng(0x5eed_0c5e_u64 ^ 0x1234_5678_9abc_def1);
    let mut frames = Vec::new();
    for _ in 0..400 {
        let kind = (r.next() % 4) as u8;
        let wrong = r.next() % 3 == 0;
        let mut f = vec![kind];
        match kind {
            // The 4-bit header: everything after it is off a byte boundary.
            1 => f.push(r.next() as u8),
            2 => {
                // The parser adds one to `a` before the checksum is
                // verified: right against the packet's `a` or the new one.
                let a = r.next() as u16;
                let b = r.next() as u16;
                let seen = if r.next() % 2 == 0 { a.wrapping_add(1) } else { a };
                let mut cover = seen.to_be_bytes().to_vec();
                cover.extend(b.to_be_bytes());
                let mut c = csum16(&cover);
                if wrong {
                    c ^= 1 << (r.next() % 16);
                }
                f.extend(a.to_be_bytes());
                f.extend(c.to_be_bytes());
                f.extend(b.to_be_bytes());
            }
            _ => {}
        }
        f.extend(ip(&mut r, wrong));
        let tail = (r.next() % 6) as usize;
        f.extend((0..tail).map(|_| r.next() as u8));
        if r.next() % 10 == 0 {
            f.truncate(f.len().saturating_sub(1 + tail + (r.next() % 4) as usize));
        }
        frames.push(f);
    }
    let (mut wrong, mut right) = (0, 0);
    compiled_agrees(&loaded, &mut interp, &frames, |_, f, want| {
        // Some frames pass verification and some fail (`tos` is the
        // IPv4 header's second byte, after the one-byte `e`).
        if f.first() == Some(&0) {
            match want.first().and_then(|o| o.data.get(2)) {
                Some(1) => wrong += 1,
                Some(0) => right += 1,
                _ => {}
            }
        }
    });
    assert!(wrong > 0 && right > 0, "{wrong} frames with a wrong checksum, {right} right");
}
