//! Real-peer captures: the fixture generator (ignored, run on demand) and
//! the live test that captures fresh bytes from Open vSwitch + ovs-ofctl.
//!
//! Regenerate the committed fixtures with `tests/ovs/regen-fixtures.sh`
//! (or `cargo test -p sluice --test ovs_capture -- --ignored
//! regenerate_fixtures`). Needs root (network namespaces) and Debian's
//! `openvswitch-switch`.

mod support;

use support::{render_fixture, scenario, Dir, Ovs};

/// Capture every scenario step and write
/// `crates/ofp/tests/fixtures/ovs-ofctl/NAME.hex`.
#[test]
#[ignore = "rewrites the committed fixtures; run tests/ovs/regen-fixtures.sh"]
fn regenerate_fixtures() {
    let ovs = Ovs::start().unwrap_or_else(|e| panic!("cannot start Open vSwitch: {e}"));
    let dir = support::fixture_dir();
    std::fs::create_dir_all(&dir).expect("fixture dir");
    for step in scenario::steps() {
        let cap = scenario::run(&ovs, &step).unwrap_or_else(|e| panic!("{}: {e}", step.name));
        let path = dir.join(format!("{}.hex", step.name));
        std::fs::write(&path, render_fixture(&cap)).expect("write fixture");
        eprintln!(
            "{}: {} messages{}",
            step.name,
            cap.records.len(),
            if cap.status_ok { "" } else { " (ovs-ofctl failed)" }
        );
    }
}

/// The live test: a fresh private Open vSwitch 3.1 and the real ovs-ofctl,
/// every scenario step captured through the recording proxy, and every
/// captured message checked exactly like the committed fixtures: it
/// decodes, re-encodes to identical bytes, and carries the values its
/// command asked for. Fails (does not skip) when Open vSwitch is missing:
/// the README's test command installs it.
#[test]
fn live_capture_decodes_reencodes_and_has_the_expected_values() {
    let ovs = Ovs::start().unwrap_or_else(|e| panic!("cannot start Open vSwitch: {e}"));
    let mut total = 0;
    for step in scenario::steps() {
        let cap = scenario::run(&ovs, &step).unwrap_or_else(|e| panic!("{}: {e}", step.name));
        for r in &cap.records {
            assert_eq!(
                r.bytes.first(),
                Some(&4),
                "{}: not OpenFlow 1.3: {:02x?}",
                step.name,
                r.bytes
            );
            assert_eq!(
                u16::from_be_bytes([r.bytes[2], r.bytes[3]]) as usize,
                r.bytes.len(),
                "{}: framing",
                step.name
            );
        }
        assert!(
            cap.records.iter().any(|r| r.dir == Dir::ToSwitch),
            "{}: no request recorded",
            step.name
        );
        assert!(
            cap.records.iter().any(|r| r.dir == Dir::FromSwitch),
            "{}: no reply recorded",
            step.name
        );
        let fixture = support::Fixture {
            name: step.name.to_string(),
            command: cap.command.clone(),
            messages: cap.records.iter().map(|r| (r.dir, r.bytes.clone())).collect(),
        };
        support::expect::check(&fixture);
        total += fixture.messages.len();
    }
    assert!(total > 300, "only {total} messages captured");
}
