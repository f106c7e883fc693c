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
//! - malformed bundle messages over a raw connection get the spec's
//!   errors and leave the connection in step.
//!
//! The test FAILS (it does not skip) when `ovs-ofctl` is missing: install
//! `openvswitch-common`. The switch is our child (`pcap_switch`), stopped
//! by PID on drop; ovs-ofctl runs under `timeout`, so every wait is bounded.

mod ofconn;
mod pcap_switch;

use ofconn::Conn;
use pcap_switch::{which, PcapSwitch};
use sluice_ofp::bundle::{err, BundleAdd, BundleCtrl, ONF_EXPERIMENTER_ID};
use sluice_ofp::message::Message;
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

/// The ONF bundle error code of an `OFPT_ERROR` (`OFPET_EXPERIMENTER`,
/// experimenter ONF), or the standard `(type, code)` as `Err`.
fn bundle_err(m: &[u8]) -> Result<u16, (u16, u16)> {
    assert_eq!(m[1], 1, "an OFPT_ERROR: {m:02x?}");
    let (ty, code) = (u16::from_be_bytes([m[8], m[9]]), u16::from_be_bytes([m[10], m[11]]));
    if ty == 0xffff && m[12..16] == ONF_EXPERIMENTER_ID.to_be_bytes() {
        Ok(code)
    } else {
        Err((ty, code))
    }
}

#[test]
fn malformed_bundle_messages_get_the_specs_errors() {
    let sw = PcapSwitch::start("bundle-bad");
    let mut c = Conn::open(sw.addr());
    let ctrl = |id: u32, ty: u16, flags: u16| {
        BundleCtrl { bundle_id: id, ctrl_type: ty, flags, properties: vec![] }.to_message()
    };
    let barrier = |xid: u32| Message::BarrierRequest.encode(xid);

    // A control body too short for its fixed part: OFPBRC_BAD_LEN.
    let mut short = ctrl(1, 0, 0).encode(0x10);
    short.truncate(short.len() - 4);
    let len = short.len() as u16;
    short[2..4].copy_from_slice(&len.to_be_bytes());
    c.send(&short);
    assert_eq!(bundle_err(&c.reply_to(0x10)), Err((1, 6)));
    // Unknown flags, unknown control type, unknown id.
    c.send(&ctrl(1, 0, 0x80).encode(0x11));
    assert_eq!(bundle_err(&c.reply_to(0x11)), Ok(err::BAD_FLAGS));
    c.send(&ctrl(1, 9, 0).encode(0x12));
    assert_eq!(bundle_err(&c.reply_to(0x12)), Ok(err::BAD_TYPE));
    c.send(&ctrl(77, 4, 0).encode(0x13));
    assert_eq!(bundle_err(&c.reply_to(0x13)), Ok(err::BAD_ID));
    // An ADD whose inner message's length lies, whose xid differs from
    // the ADD's, or whose type may not be bundled.
    let add = |xid: u32, message: Vec<u8>| {
        BundleAdd { bundle_id: 2, flags: 0, message, ..Default::default() }.to_message().encode(xid)
    };
    let mut lying = add(0x14, barrier(0x14));
    let at = lying.len() - 8;
    lying[at + 3] = 64;
    c.send(&lying);
    assert_eq!(bundle_err(&c.reply_to(0x14)), Ok(err::MSG_BAD_LEN));
    c.send(&add(0x15, barrier(0x99)));
    assert_eq!(bundle_err(&c.reply_to(0x15)), Ok(err::MSG_BAD_XID));
    c.send(&add(0x16, barrier(0x16)));
    assert_eq!(bundle_err(&c.reply_to(0x16)), Ok(err::MSG_UNSUP));
    // A commit whose flags differ from the open's discards the bundle.
    c.send(&ctrl(3, 0, 1).encode(0x17));
    assert_eq!(c.reply_to(0x17)[1], 4, "OPEN_REPLY");
    c.send(&ctrl(3, 4, 3).encode(0x18));
    assert_eq!(bundle_err(&c.reply_to(0x18)), Ok(err::BAD_FLAGS));
    c.send(&ctrl(3, 4, 1).encode(0x19));
    assert_eq!(bundle_err(&c.reply_to(0x19)), Ok(err::BAD_ID));
    // Still in step.
    c.barrier(0x1a);
}
