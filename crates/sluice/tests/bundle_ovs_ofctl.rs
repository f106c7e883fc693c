//! Bundles from the reference client: `ovs-ofctl -O OpenFlow13 --bundle`
//! (ONF extension 230) against `sluice run` (two pcap ports, one worker,
//! fail mode `secure`, a passive listener on a free local port; no root
//! needed).
//!
//! - `--bundle add-flows` of many flows: all arrive, ovs-ofctl is silent;
//! - `--bundle add-flows` of good flows and one whose action names a group
//!   that does not exist: ovs-ofctl fails and prints the flow's error and
//!   the commit's `OFPBFC_MSG_FAILED`; not one flow of the file arrived;
//! - `--bundle replace-flows`: the table is exactly the new file's.
//!
//! The test FAILS (it does not skip) when `ovs-ofctl` is missing: install
//! `openvswitch-common`. The switch is our child (`pcap_switch`), stopped
//! by PID on drop; ovs-ofctl runs under `timeout`, so every wait is bounded.

mod pcap_switch;

use pcap_switch::{which, PcapSwitch};
use std::process::Command;

struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn ofctl(args: &[&str]) -> Out {
    let o = Command::new("timeout")
        .arg("30")
        .arg("ovs-ofctl")
        .args(["-O", "OpenFlow13"])
        .args(args)
        .output()
        .expect("running ovs-ofctl");
    Out {
        ok: o.status.success(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The flows of a dump, without counters and durations, sorted.
fn flows(target: &str) -> Vec<String> {
    let o = ofctl(&["dump-flows", target]);
    assert!(o.ok, "dump-flows failed: {}", o.stderr);
    let mut v: Vec<String> = o
        .stdout
        .lines()
        .filter(|l| l.contains("actions="))
        .map(|l| {
            l.split(", ")
                .filter(|f| {
                    !f.trim_start().starts_with("cookie=")
                        && !f.contains("duration=")
                        && !f.contains("n_packets=")
                        && !f.contains("n_bytes=")
                })
                .collect::<Vec<_>>()
                .join(", ")
                .trim()
                .to_string()
        })
        .collect();
    v.sort();
    v
}

fn write(sw: &PcapSwitch, name: &str, lines: &[String]) -> String {
    let p = sw.dir.join(name);
    std::fs::write(&p, lines.join("\n") + "\n").expect("write flow file");
    p.display().to_string()
}

#[test]
fn ovs_ofctl_bundles_are_all_or_nothing() {
    assert!(which("ovs-ofctl"), "ovs-ofctl is required: install openvswitch-common");
    let sw = PcapSwitch::start("bundle");
    let t = sw.target();

    // Many flows in one bundle: all arrive.
    let good: Vec<String> = (0..300)
        .map(|i| format!("table=0,priority={},udp,tp_dst={},actions=output:2", 100 + i, 1000 + i))
        .collect();
    let f = write(&sw, "good.flows", &good);
    let o = ofctl(&["--bundle", "add-flows", &t, &f]);
    assert!(o.ok && o.stderr.is_empty(), "bundle add-flows failed: {}", o.stderr);
    let after_good = flows(&t);
    assert_eq!(after_good.len(), 300, "{after_good:?}");

    // One bad flow (a group that does not exist) among good ones: nothing.
    let mut bad: Vec<String> = (0..50)
        .map(|i| format!("table=0,priority={},udp,tp_dst={},actions=output:1", 5000 + i, 7000 + i))
        .collect();
    bad.insert(25, "table=0,priority=9,ip,actions=group:77".to_string());
    let f = write(&sw, "bad.flows", &bad);
    let o = ofctl(&["--bundle", "add-flows", &t, &f]);
    assert!(!o.ok, "a bundle with a bad flow must fail: {}", o.stdout);
    assert!(o.stderr.contains("OFPBAC_BAD_OUT_GROUP"), "the flow's error: {}", o.stderr);
    assert!(o.stderr.contains("OFPBFC_MSG_FAILED"), "the commit's error: {}", o.stderr);
    assert_eq!(flows(&t), after_good, "the failed bundle changed the table");

    // replace-flows in a bundle: exactly the new set.
    let new: Vec<String> = (0..40)
        .map(|i| format!("table=0,priority={},tcp,tp_dst={},actions=output:1", 200 + i, 80 + i))
        .collect();
    let f = write(&sw, "new.flows", &new);
    let o = ofctl(&["--bundle", "replace-flows", &t, &f]);
    assert!(o.ok && o.stderr.is_empty(), "bundle replace-flows failed: {}", o.stderr);
    let now = flows(&t);
    assert_eq!(now.len(), 40, "{now:?}");
    assert!(now.iter().all(|l| l.contains("tcp") && l.contains("actions=output:1")), "{now:?}");

    // The switch is still fine: a plain request works.
    assert!(ofctl(&["show", &t]).ok);
}
