//! `varbit` in the compiled engine against the reference interpreter: a
//! program that extracts varbits with run-time lengths (one wider than a
//! key word, one behind fixed fields), swaps and copies them through
//! locals, whole headers, table actions and function parameters,
//! compares them (`==` and `!=`: length and bits) and emits them, run on
//! random frames built to hit equal and unequal values, short frames
//! and every cache mode, indexed and scanned.

mod common;
use common::Rng;

use sluice_core::walk::CacheMode;
use sluice_p4::ast::BigValue;
use sluice_p4::interp::Interp;
use sluice_p4::lower::engine::Compiled;
use sluice_p4::parse;
use sluice_p4::target::{EntrySpec, KeyMatch, Target};

const PROGRAM: &str = r#"
#include <core.p4>
#include <v1model.p4>
header len_t { bit<8> l1; bit<8> l2; bit<8> op; }
header v_t { varbit<120> v; }
header w_t { bit<4> k; bit<4> pad; varbit<32> w; }
header o_t { bit<8> flags; bit<8> more; }
struct H { o_t o; len_t len; v_t a; v_t b; w_t c; }
struct M { }

bool same(in varbit<120> x, in varbit<120> y) { return x == y; }

parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.len);
        pkt.extract(hdr.a, (bit<32>)(hdr.len.l1 & 15) * 8);
        transition select(hdr.len.op[0:0]) {
            1: parse_b;
            default: parse_c;
        }
    }
    state parse_b {
        pkt.extract(hdr.b, (bit<32>)(hdr.len.l2 >> 4) * 8);
        transition parse_c;
    }
    state parse_c {
        pkt.extract(hdr.c, (bit<32>)hdr.len.l2[1:0] * 8);
        transition accept;
    }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    varbit<120> s;
    action swap() {
        s = hdr.a.v;
        hdr.a.v = hdr.b.v;
        hdr.b.v = s;
    }
    action cp() { hdr.b.v = hdr.a.v; }
    action nop() { }
    table t {
        key = { hdr.len.op: ternary; }
        actions = { swap; cp; nop; }
        default_action = nop();
    }
    apply {
        v_t keep = hdr.a;
        varbit<32> w0 = hdr.c.w;
        bool before = hdr.a.v == hdr.b.v;
        t.apply();
        if (hdr.len.op[3:3] == 1) {
            hdr.b = keep;
        }
        if (hdr.len.op[6:6] == 1) {
            hdr.a.setInvalid();
            hdr.a.setValid();
        }
        hdr.o.setValid();
        hdr.o.flags = (before ? 8w1 : 8w0)
            | (hdr.a.v == hdr.b.v ? 8w2 : 8w0)
            | (keep.v != hdr.a.v ? 8w4 : 8w0)
            | (same(hdr.b.v, keep.v) ? 8w8 : 8w0)
            | (w0 == hdr.c.w ? 8w16 : 8w0)
            | (hdr.a.v != s ? 8w32 : 8w0);
        if (hdr.b.v == keep.v) {
            hdr.o.more = 1;
        } else {
            hdr.o.more = 2;
        }
        sm.egress_spec = 3;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        if (hdr.len.op[7:7] == 1) {
            hdr.c.w = hdr.c.w;
            hdr.b.setInvalid();
        }
    }
}
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) {
    apply { pkt.emit(hdr.o); pkt.emit(hdr.len); pkt.emit(hdr.a); pkt.emit(hdr.b); pkt.emit(hdr.c); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"#;

/// A frame for `PROGRAM`: lengths and op, `a`, maybe `b` (half the time
/// equal to `a`, else often of the same length or the same number with
/// a zero byte in front: equal bits, another length), `c`, a payload;
/// sometimes cut short.
fn frame(r: &mut Rng) -> Vec<u8> {
    let la = r.below(15) as u8;
    let lb = match r.below(4) {
        0 => la,
        1 => la + 1,
        _ => r.below(16) as u8,
    };
    let lc = r.below(4) as u8;
    let op = r.next() as u8;
    let mut f =
        vec![la | ((r.next() as u8) & 0xf0), (lb << 4) | lc | ((r.next() as u8) & 0x0c), op];
    let a = r.bytes(usize::from(la));
    f.extend_from_slice(&a);
    if op & 1 == 1 {
        if lb == la && r.below(2) == 0 {
            f.extend_from_slice(&a);
        } else if lb == la + 1 {
            f.push(0);
            f.extend_from_slice(&a);
        } else {
            let b = r.bytes(usize::from(lb));
            f.extend_from_slice(&b);
        }
    }
    let c = r.bytes(1 + usize::from(lc));
    f.extend_from_slice(&c);
    let tail = r.below(6) as usize;
    f.extend_from_slice(&r.bytes(tail));
    if r.below(8) == 0 {
        let cut = r.below(f.len() as u64) as usize;
        f.truncate(cut);
    }
    f
}

fn entries() -> Vec<EntrySpec> {
    [(0x10u128, "swap"), (0x20, "cp")]
        .into_iter()
        .map(|(bit, action)| EntrySpec {
            table: "t".into(),
            keys: vec![(
                "hdr.len.op".into(),
                KeyMatch::Ternary {
                    value: BigValue::from_u128(bit),
                    mask: BigValue::from_u128(bit),
                },
            )],
            action: action.into(),
            args: vec![],
            priority: Some(bit as u64),
        })
        .collect()
}

#[test]
fn varbits_agree_with_the_interpreter() {
    let loaded = parse::load_str("varbit.p4", PROGRAM).expect("load");
    let mut interp = Interp::new(&loaded).expect("interp");
    for e in entries() {
        interp.add_entry(&e).expect("interp entry");
    }
    let modes = [CacheMode::Off, CacheMode::Megaflow, CacheMode::On];
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    let (mut equal, mut outputs) = (0, 0);
    for (m, mode) in modes.into_iter().enumerate() {
        for indexed in [true, false] {
            let mut eng = match Compiled::new(&loaded) {
                Ok(c) => c,
                Err(d) => panic!("refused: {}", loaded.sources.render(&d)),
            };
            eng.set_cache_mode(mode);
            eng.set_indexed(indexed);
            for e in entries() {
                eng.add_entry(&e).expect("engine entry");
            }
            let mut seen: Vec<Vec<u8>> = Vec::new();
            for i in 0..400 {
                // Every fourth packet repeats an earlier one (cache hits).
                let f = match (i % 4, seen.len()) {
                    (3, n) if n > 0 => seen[r.below(n as u64) as usize].clone(),
                    _ => frame(&mut r),
                };
                let want = interp.packet(0, &f).expect("interp packet");
                let got = eng.packet(0, &f).expect("engine packet");
                assert_eq!(got, want, "{mode:?} indexed {indexed}, frame {f:02x?}");
                if m == 0 && indexed {
                    outputs += want.len();
                    // `flags` bit 1: `a == b` after the table.
                    equal +=
                        want.iter().filter(|o| o.data.first().is_some_and(|x| x & 2 != 0)).count();
                }
                seen.push(f);
            }
        }
    }
    println!("{equal} of {outputs} outputs with `a == b`");
    // The frames reach both outcomes of the comparisons.
    assert!(outputs > 300 && equal > 30 && equal < outputs - 30, "{equal} of {outputs}");
}

/// What varbits still cannot do is refused at its span, by name.
#[test]
fn varbit_refusals_name_the_construct() {
    let cases = [
        (
            "hdr.o.flags = (bit<8>)(hdr.a.v == hdr.len.l1);",
            "a comparison of a varbit with another type",
        ),
        ("hdr.a.v = hdr.c.w;", "an assignment between values of different shapes"),
        ("hdr.o.flags = hdr.len.l1 + (bit<8>)hdr.a.v;", "a varbit in an expression"),
        ("hdr.o.more = (bit<8>)hdr.c.w;", "a varbit in an expression"),
        ("hdr.o.more = (bit<8>)s;", "a varbit in an expression"),
    ];
    let mut checked = 0;
    for (i, (stmt, what)) in cases.iter().enumerate() {
        let text = PROGRAM.replace("sm.egress_spec = 3;", &format!("sm.egress_spec = 3; {stmt}"));
        let loaded = match parse::load_str(&format!("refuse{i}.p4"), &text) {
            Ok(l) => l,
            // The front end's own type check may refuse it first.
            Err(_) => continue,
        };
        let d = Compiled::new(&loaded).expect_err("refused");
        let shown = loaded.sources.render(&d);
        assert!(d.message.contains(what), "{what}: {shown}");
        assert!(shown.contains(&format!("refuse{i}.p4:70:")), "at the statement: {shown}");
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} refusals reached the lowering");
}
