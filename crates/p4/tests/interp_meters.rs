//! Meters and direct counters in the reference interpreter, on a clock
//! the test drives: the colours of a direct meter and an indexed meter
//! follow the trTCM worked out by hand below, the direct counter counts
//! each entry's hits (not misses), and the control plane's writes and
//! their errors. The program is the P4Runtime tests' `meter.p4`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use sluice_p4::ast::BigValue;
use sluice_p4::engines::{Engine, Fallback};
use sluice_p4::parse;
use sluice_p4::target::{Clock, EntrySpec, KeyMatch, Manage, MeterConfig, Target};

const PROG: &str = include_str!("../../p4rt/tests/p4/meter.p4");
const MS: u64 = 1_000_000;

fn frame(src: u8, ethertype: u16) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&[0, 0, 0, 0, 0, 0xdd]);
    f[6..12].copy_from_slice(&[0, 0, 0, 0, 0, src]);
    f[12..14].copy_from_slice(&ethertype.to_be_bytes());
    f
}

/// The port a packet leaves by, or `None` if dropped.
fn port(e: &mut Engine, src: u8, ethertype: u16) -> Option<u32> {
    let out = e.packet(0, &frame(src, ethertype)).expect("packet runs");
    assert!(out.len() <= 1, "one packet in, at most one out: {out:?}");
    out.first().map(|o| o.port)
}

fn load() -> (Engine, Arc<AtomicU64>) {
    let loaded = parse::load_str("meter.p4", PROG).expect("meter.p4 parses");
    let (mut e, why) = Engine::load(&loaded, false).expect("meter.p4 loads");
    // The compiled engine refuses meters, so the interpreter serves them.
    assert!(matches!(why, Some(Fallback::Refused(_))), "expected the interpreter: {why:?}");
    assert_eq!(e.name(), "reference");
    let now = Arc::new(AtomicU64::new(0));
    e.set_clock(Clock::manual(now.clone()));
    (e, now)
}

fn police(e: &mut Engine, src: u8, out: u8) -> u64 {
    e.add_entry(&EntrySpec {
        table: "policer".into(),
        keys: vec![("hdr.eth.src".into(), KeyMatch::Exact(BigValue::from_u128(src.into())))],
        action: "police".into(),
        args: vec![("port".into(), BigValue::from_u128(out.into()))],
        priority: None,
    })
    .expect("entry added")
}

#[test]
fn direct_meter_colours_and_direct_counter() {
    let (mut e, now) = load();
    let h = police(&mut e, 0xa, 2);
    // Unconfigured: every packet GREEN.
    for _ in 0..3 {
        assert_eq!(port(&mut e, 0xa, 0), Some(2));
    }
    // cir 1 packet/s, cburst 1, pir 2 packets/s, pburst 2. By hand:
    // t=0: Tp 2 Tc 1 -> GREEN (1, 0); YELLOW (0, 0); RED.
    // t=500ms: Tp 1 Tc 0.5 -> YELLOW (0, 0.5).
    // t=1500ms: Tp 2 (cap) Tc 1 (cap) -> GREEN.
    let cfg = MeterConfig { cir: 1, cburst: 1, pir: 2, pburst: 2 };
    e.direct_write("policer", h, Some((0, 0)), Some(Some(cfg))).unwrap();
    let mut got = Vec::new();
    for t in [0, 0, 0, 500, 1500] {
        now.store(t * MS, Ordering::Relaxed);
        got.push(port(&mut e, 0xa, 0));
    }
    assert_eq!(got, vec![Some(2), Some(2), None, Some(2), Some(2)]);
    // By colour: GREEN 3 (unconfigured) + 2, YELLOW 2, RED 1.
    let (_, colours) = e.counter_cells("colours").unwrap();
    assert_eq!(colours.iter().map(|c| c.0).collect::<Vec<_>>(), vec![5, 2, 1]);
    // A miss is not counted in the entry's cell and is GREEN.
    assert_eq!(port(&mut e, 0xb, 0), Some(1));
    let cells = e.direct_cells("policer").unwrap();
    assert_eq!(cells.len(), 1);
    assert_eq!(cells[0].handle, h);
    assert_eq!(cells[0].counter, (5, 5 * 60));
    assert_eq!(cells[0].meter, Some(cfg));
    // Unconfigured again: GREEN however fast.
    e.direct_write("policer", h, None, Some(None)).unwrap();
    for _ in 0..4 {
        assert_eq!(port(&mut e, 0xa, 0), Some(2));
    }
    let cells = e.direct_cells("policer").unwrap();
    assert_eq!((cells[0].counter, cells[0].meter), ((9, 9 * 60), None));
    // Errors name what is wrong.
    let err = e.direct_write("policer", 99, Some((0, 0)), None).unwrap_err();
    assert!(err.contains("handle 99"), "{err}");
    let err = e.direct_cells("nosuch").unwrap_err();
    assert!(err.contains("nosuch"), "{err}");
}

#[test]
fn indexed_meter_in_bytes_and_counter_writes() {
    let (mut e, now) = load();
    // Cell 1: 100-byte bursts, 60 B/s committed, 120 B/s peak; 60-byte
    // frames. t=0: GREEN (Tp 40, Tc 40); RED (40 < 60).
    // t=500ms: Tp 100 (cap) Tc 70 -> GREEN (40, 10).
    // t=750ms: Tp 70 Tc 25 -> YELLOW (10, 25).
    let cfg = MeterConfig { cir: 60, cburst: 100, pir: 120, pburst: 100 };
    e.meter_write("port_rate", 1, Some(cfg)).unwrap();
    let mut got = Vec::new();
    for t in [0, 0, 500, 750] {
        now.store(t * MS, Ordering::Relaxed);
        got.push(port(&mut e, 0xb, 1));
    }
    assert_eq!(got, vec![Some(1), None, Some(1), Some(1)]);
    let (_, colours) = e.counter_cells("colours").unwrap();
    assert_eq!(colours, vec![(2, 120), (1, 60), (1, 60)]);
    // Cell 0 is unconfigured: GREEN.
    assert_eq!(port(&mut e, 0xb, 0), Some(1));
    let (name, cells) = e.meter_cells("port_rate").unwrap();
    assert_eq!(name, "I.port_rate");
    assert_eq!(cells, vec![None, Some(cfg), None, None]);
    let err = e.meter_write("port_rate", 4, Some(cfg)).unwrap_err();
    assert!(err.contains("index 4") && err.contains("4 cells"), "{err}");
    // Counter cells can be set.
    e.counter_write("colours", 2, (7, 8)).unwrap();
    assert_eq!(e.counter_cells("colours").unwrap().1[2], (7, 8));
    let err = e.counter_write("colours", 3, (0, 0)).unwrap_err();
    assert!(err.contains("index 3"), "{err}");
    let err = e.counter_write("police_hits", 0, (0, 0)).unwrap_err();
    assert!(err.contains("not an indexed counter"), "{err}");
    let err = e.meter_write("colours", 0, None).unwrap_err();
    assert!(err.contains("not a meter"), "{err}");
}
