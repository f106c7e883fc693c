//! sluice's own P4 programs (`examples/p4/*.p4`) against their STF tests
//! (`examples/p4/*.stf`, written by `examples/p4/stf-model.py` from a
//! Python model of each program, not by sluice) in the reference
//! interpreter. Every example must have a test and pass it.

use std::path::{Path, PathBuf};

use sluice_p4::interp::Interp;
use sluice_p4::target::Target;
use sluice_p4::{parse, stf};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/p4")
}

fn load(name: &str) -> Interp {
    let loaded = parse::load_file(&examples().join(format!("{name}.p4")))
        .unwrap_or_else(|e| panic!("{name}.p4:\n{}", e.render()));
    Interp::new(&loaded).unwrap_or_else(|d| panic!("{name}.p4:\n{}", loaded.sources.render(&d)))
}

#[test]
fn every_example_passes_its_stf() {
    let mut names: Vec<String> = std::fs::read_dir(examples())
        .expect("examples/p4")
        .filter_map(|e| e.ok()?.path().file_name()?.to_str().map(str::to_string))
        .filter_map(|f| f.strip_suffix(".p4").map(str::to_string))
        .collect();
    names.sort();
    assert!(names.len() >= 3, "{names:?}");
    for name in names {
        let script = std::fs::read_to_string(examples().join(format!("{name}.stf")))
            .unwrap_or_else(|e| panic!("{name}.stf: {e}"));
        let mut interp = load(&name);
        let report = stf::run(&mut interp, &script);
        assert!(report.passed(), "{name}: {report:#?}");
        assert!(report.packets_in >= 3 && report.packets_out >= 3, "{name}: {report:?}");
    }
}

/// The L2 switch's misses queue digests (source MAC, ingress port) for the
/// learning controller; a learned source queues none.
#[test]
fn l2switch_digests_unknown_sources() {
    let mut sw = load("l2switch");
    let frame = |src: u8| {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&[2, 0, 0, 0, 1, src, 0x88, 0xb5]);
        f.extend_from_slice(b"payload");
        f
    };
    sw.packet(3, &frame(7)).unwrap();
    let d = sw.take_digests();
    assert_eq!(d.len(), 1, "{d:?}");
    let shown = format!("{:?}", d[0]);
    // A `learn_t` struct, with its field names.
    assert!(
        shown.contains("Struct") && shown.contains("\"mac\"") && shown.contains("\"port\""),
        "{shown}"
    );
    assert!(shown.contains("48w0x20000000107") && shown.contains("9w0x3"), "{shown}");
    let entry = sluice_p4::target::EntrySpec {
        table: "learned".into(),
        keys: vec![(
            "hdr.eth.src".into(),
            sluice_p4::target::KeyMatch::Exact(sluice_p4::ast::BigValue::from_u128(0x020000000107)),
        )],
        action: "known".into(),
        args: vec![],
        priority: None,
    };
    sw.add_entry(&entry).unwrap();
    sw.packet(3, &frame(7)).unwrap();
    assert!(sw.take_digests().is_empty());
}
