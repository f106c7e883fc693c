//! Externs and replication in the compiled engine against the reference
//! interpreter, beyond the STF corpus: digests, register state that
//! changes what later packets do (with every cache mode), counters and
//! registers as the control plane sees them, and multicast copies.

mod common;
use common::{examples, load_text, one_header_program};

use sluice_core::walk::CacheMode;
use sluice_p4::interp::Interp;
use sluice_p4::lower::engine::Compiled;
use sluice_p4::target::{Manage, Output, Target};
use sluice_p4::{ast::BigValue, parse};

const MODES: [CacheMode; 3] = [CacheMode::Off, CacheMode::Megaflow, CacheMode::On];

/// Runs `frames` through both engines; each packet's outputs must agree.
fn same_outputs(c: &mut Compiled, i: &mut Interp, frames: &[(u32, Vec<u8>)]) -> Vec<Vec<Output>> {
    let mut all = Vec::new();
    for (n, (port, f)) in frames.iter().enumerate() {
        let want = i.packet(*port, f).expect("interpreter");
        let got = c.packet(*port, f).expect("compiled");
        assert_eq!(got, want, "packet {n} ({port}, {f:02x?})");
        all.push(got);
    }
    all
}

/// A register counts packets per `h.a`; the count, read back, picks the
/// port through a branch and a table, so a cache that replayed the first
/// packet's walk would send every later one the same way.
const COUNTING: &str = r#"
    register<bit<8>>(4) seen;
    counter(4, CounterType.packets_and_bytes) hits;
    action to(bit<9> p) { sm.egress_spec = p; }
    table by_count {
        key = { m.x: exact; }
        actions = { to; NoAction; }
        const entries = { 2 : to(7); }
        default_action = NoAction();
    }
"#;
const COUNTING_APPLY: &str = r#"
    seen.read(m.x, (bit<32>) hdr.h.a);
    hits.count((bit<32>) hdr.h.a);
    if (m.x == 0) { sm.egress_spec = 1; } else { sm.egress_spec = 2; }
    seen.write((bit<32>) hdr.h.a, m.x + 1);
    hdr.h.b = m.x;
    by_count.apply();
"#;

#[test]
fn register_state_changes_what_later_packets_do_in_every_cache_mode() {
    let loaded = load_text("count.p4", &one_header_program(COUNTING, COUNTING_APPLY));
    let frames: Vec<(u32, Vec<u8>)> =
        [0u8, 0, 1, 0, 0, 1, 9, 0].iter().map(|&a| (3, vec![a, 0x55])).collect();
    for mode in MODES {
        let mut c = Compiled::new(&loaded).expect("compiles");
        assert!(c.stateful(), "a register read turns the caches off");
        c.set_cache_mode(mode);
        let mut i = Interp::new(&loaded).expect("interpreter");
        let outs = same_outputs(&mut c, &mut i, &frames);
        // The state did change the answer: ports 1, 2, then the table's 7.
        let ports: Vec<u32> = outs.iter().map(|o| o[0].port).collect();
        assert_eq!(&ports[..3], &[1, 2, 1], "{mode:?}");
        assert_eq!(ports[3], 7, "{mode:?}");
        // The control plane sees the same cells in both.
        assert_eq!(c.register_cells("seen").unwrap(), i.register_cells("seen").unwrap());
        assert_eq!(c.counter_cells("hits").unwrap(), i.counter_cells("hits").unwrap());
        // A write from the control plane changes the next packet alike.
        let v = BigValue::from_u128(1);
        c.register_write("seen", 0, &v).unwrap();
        i.register_write("seen", 0, &v).unwrap();
        same_outputs(&mut c, &mut i, &[(3, vec![0, 0])]);
        assert!(c.register_write("seen", 4, &v).is_err());
    }
}

#[test]
fn hashes_agree_with_the_interpreter_and_stay_cacheable() {
    let locals = r#"
        action to(bit<9> p) { sm.egress_spec = p; }
        table pick {
            key = { m.x: exact; }
            actions = { to; NoAction; }
            const entries = { 0 : to(1); 1 : to(2); 2 : to(3); }
            default_action = NoAction();
        }
    "#;
    for algo in ["crc16", "crc32", "csum16", "xor16", "identity"] {
        let apply = format!(
            "hash(m.x, HashAlgorithm.{algo}, 8w0, {{ hdr.h.a, hdr.h.b }}, 16w3); \
             hdr.h.b = m.x; pick.apply();"
        );
        let loaded = load_text(&format!("hash-{algo}.p4"), &one_header_program(locals, &apply));
        let frames: Vec<(u32, Vec<u8>)> =
            (0..40u8).map(|n| (1, vec![n.wrapping_mul(37), n ^ 0x5a])).collect();
        for mode in MODES {
            let mut c = Compiled::new(&loaded).expect("compiles");
            assert!(!c.stateful(), "{algo}");
            c.set_cache_mode(mode);
            let mut i = Interp::new(&loaded).expect("interpreter");
            same_outputs(&mut c, &mut i, &frames);
            same_outputs(&mut c, &mut i, &frames);
        }
    }
}

#[test]
fn the_l2_switch_learns_and_floods_as_the_interpreter_does() {
    let loaded = parse::load_file(&examples().join("l2switch.p4")).expect("load l2switch");
    let mac = |n: u8| [2, 0, 0, 0, 1, n];
    let frame = |dst: [u8; 6], src: [u8; 6]| {
        let mut f = dst.to_vec();
        f.extend_from_slice(&src);
        f.extend_from_slice(&[0x88, 0xb5, 1, 2, 3]);
        f
    };
    let frames = vec![
        (1, frame(mac(2), mac(1))),
        (2, frame(mac(1), mac(2))),
        (1, frame(mac(2), mac(1))),
        (3, frame([0xff; 6], mac(3))),
        (3, frame([0xff; 6], mac(3))),
    ];
    for mode in MODES {
        let mut c = Compiled::new(&loaded).expect("l2switch compiles");
        c.set_cache_mode(mode);
        let mut i = Interp::new(&loaded).expect("interpreter");
        for t in [&mut c as &mut dyn Target, &mut i] {
            t.set_multicast_group(1, &[(0, 1), (0, 2), (7, 3)]).unwrap();
        }
        let outs = same_outputs(&mut c, &mut i, &frames);
        assert_eq!(outs[0].iter().map(|o| o.port).collect::<Vec<_>>(), vec![2, 3], "flooded");
        // Every packet learned (no entries yet): one digest each, alike.
        let (dc, di) = (c.take_digests(), i.take_digests());
        assert_eq!(dc.len(), frames.len(), "{mode:?}");
        assert_eq!(dc, di, "{mode:?}");
        // Learned: no more digests for that source; forwarded, not flooded.
        for t in [&mut c as &mut dyn Manage, &mut i] {
            let e = |table: &str, key: &str, action: &str, args: Vec<(String, BigValue)>| {
                sluice_p4::target::EntrySpec {
                    table: table.into(),
                    keys: vec![(
                        key.into(),
                        sluice_p4::target::KeyMatch::Exact(BigValue::from_u128(0x0200_0000_0101)),
                    )],
                    action: action.into(),
                    args,
                    priority: None,
                }
            };
            t.add_entry(&e("learned", "hdr.eth.src", "known", vec![])).unwrap();
            let port = vec![("port".to_string(), BigValue::from_u128(1))];
            t.add_entry(&e("forwarding", "hdr.eth.dst", "forward", port)).unwrap();
        }
        let outs = same_outputs(&mut c, &mut i, &frames);
        assert_eq!(outs[1].iter().map(|o| o.port).collect::<Vec<_>>(), vec![1], "forwarded");
        let (dc, di) = (c.take_digests(), i.take_digests());
        assert_eq!(dc.len(), frames.len() - 2, "{mode:?}");
        assert_eq!(dc, di, "{mode:?}");
        // A changed group changes the copies alike.
        for t in [&mut c as &mut dyn Target, &mut i] {
            t.set_multicast_group(1, &[(5, 3)]).unwrap();
        }
        same_outputs(&mut c, &mut i, &frames);
    }
}
