//! Experimenter messages through the real switch: `sluice run` (two pcap
//! ports, so no root or namespace, one worker, fail mode `secure`) with a
//! passive listener on a free local port, and a controller written here
//! that speaks OpenFlow 1.3 over TCP byte by byte. It sends sluice's probe
//! (`docs/EXPERIMENTER.md`) and checks the reply's exact bytes, then checks
//! the errors for an unknown experimenter and for unknown sluice subtypes;
//! and that a Nicira action sent by `ovs-ofctl` (required) is refused with `OFPBAC_BAD_EXPERIMENTER` (which it prints as
//! `OFPBAC_BAD_VENDOR`).
//!
//! The switch is our child (`pcap_switch`), stopped by PID on drop; every
//! wait is bounded.

mod ofconn;
mod pcap_switch;

use ofconn::Conn;
use pcap_switch::{which, PcapSwitch};
use std::process::Command;

use sluice_ofp::action::Action;
use sluice_ofp::consts::{group_id, port_no, OFP_NO_BUFFER, SLUICE_EXPERIMENTER_ID};
use sluice_ofp::instruction::Instruction;
use sluice_ofp::message::{flow_mod_command, FlowMod, Message};

/// `(type, code)` of an OFPT_ERROR.
fn error_code(m: &[u8]) -> (u16, u16) {
    assert_eq!(m[1], 1, "an OFPT_ERROR: {m:02x?}");
    (u16::from_be_bytes([m[8], m[9]]), u16::from_be_bytes([m[10], m[11]]))
}

#[test]
fn probe_and_experimenter_errors_over_a_real_connection() {
    let sw = PcapSwitch::start("exp");
    let mut c = Conn::open(sw.addr());

    // sluice's probe: EXPERIMENTER, xid 0x2a, "SLIC", PROBE_REQUEST (0),
    // three bytes of data.
    #[rustfmt::skip]
    c.send(&[
        0x04, 0x04, 0x00, 0x13, 0x00, 0x00, 0x00, 0x2a,
        0x53, 0x4c, 0x49, 0x43,
        0x00, 0x00, 0x00, 0x00,
        b'x', b'y', b'z',
    ]);
    #[rustfmt::skip]
    let want = [
        0x04, 0x04, 0x00, 0x53, 0x00, 0x00, 0x00, 0x2a, // EXPERIMENTER, 83 bytes, same xid
        0x53, 0x4c, 0x49, 0x43,                         // "SLIC"
        0x00, 0x00, 0x00, 0x01,                         // PROBE_REPLY
        0x00, 0x01,                                     // extension version 1
        0x00, 0x0f,                                     // fifteen supported subtypes:
        0x00, 0x00, 0x00, 0x00,                         //   message PROBE_REQUEST
        0x00, 0x00, 0x00, 0x02,                         //   message LOAD_FILTER_PROG
        0x00, 0x00, 0x00, 0x03,                         //   message UNLOAD_FILTER_PROG
        0x00, 0x00, 0x00, 0x04,                         //   message UPDATE_MAP
        0x00, 0x01, 0x00, 0x05,                         //   multipart DUMP_MAP
        0x00, 0x02, 0x00, 0x00,                         //   action pof_set
        0x00, 0x02, 0x00, 0x01,                         //   action pof_modify
        0x00, 0x02, 0x00, 0x02,                         //   action pof_add
        0x00, 0x02, 0x00, 0x03,                         //   action pof_del
        0x00, 0x02, 0x00, 0x04,                         //   action pof_checksum
        0x00, 0x02, 0x00, 0x05,                         //   action pof_write_metadata
        0x00, 0x02, 0x00, 0x10,                         //   action send_maps
        0x00, 0x04, 0x00, 0x00,                         //   OXM field pof
        0x00, 0x04, 0x00, 0x10,                         //   OXM field filter_prog
        0x00, 0x04, 0x00, 0x11,                         //   OXM field pcap_filter
        b'x', b'y', b'z',                               // the request's data
    ];
    assert_eq!(c.reply_to(0x2a), want);

    // Another experimenter id: OFPET_BAD_REQUEST / OFPBRC_BAD_EXPERIMENTER,
    // with the request as the error's data.
    let nicira =
        [0x04, 0x04, 0x00, 0x10, 0x00, 0x00, 0x00, 0x2b, 0x00, 0x00, 0x23, 0x20, 0, 0, 0, 0];
    c.send(&nicira);
    let e = c.reply_to(0x2b);
    assert_eq!(error_code(&e), (1, 3));
    assert_eq!(&e[12..], nicira);

    // sluice's id, an unassigned message subtype (7): OFPBRC_BAD_EXP_TYPE.
    c.send(&[0x04, 0x04, 0x00, 0x10, 0, 0, 0, 0x2c, 0x53, 0x4c, 0x49, 0x43, 0, 0, 0, 7]);
    assert_eq!(error_code(&c.reply_to(0x2c)), (1, 4));

    // A flow-mod with a sluice action of an unknown subtype:
    // OFPET_BAD_ACTION / OFPBAC_BAD_EXP_TYPE.
    let fm = Message::FlowMod(FlowMod {
        command: flow_mod_command::ADD,
        buffer_id: OFP_NO_BUFFER,
        out_port: port_no::ANY,
        out_group: group_id::ANY,
        instructions: vec![Instruction::ApplyActions(vec![Action::Experimenter {
            experimenter: SLUICE_EXPERIMENTER_ID,
            data: vec![0, 0x7f, 0, 0, 0, 0],
        }])],
        ..FlowMod::default()
    });
    c.send(&fm.encode(0x2d));
    assert_eq!(error_code(&c.reply_to(0x2d)), (2, 3));

    // The same action of an unknown experimenter: OFPBAC_BAD_EXPERIMENTER,
    // as always.
    let fm = Message::FlowMod(FlowMod {
        command: flow_mod_command::ADD,
        buffer_id: OFP_NO_BUFFER,
        out_port: port_no::ANY,
        out_group: group_id::ANY,
        instructions: vec![Instruction::ApplyActions(vec![Action::Experimenter {
            experimenter: 0x00ab_cdef,
            data: vec![0, 0x7f, 0, 0, 0, 0],
        }])],
        ..FlowMod::default()
    });
    c.send(&fm.encode(0x2e));
    assert_eq!(error_code(&c.reply_to(0x2e)), (2, 2));

    // Still connected and in step: a barrier is answered.
    c.send(&[0x04, 20, 0x00, 0x08, 0, 0, 0, 0x2f]);
    assert_eq!(c.reply_to(0x2f)[1], 21);

    // ovs-ofctl (a real peer; the test fails without it): a Nicira action
    // (note) is refused with the spec's error for an unknown experimenter.
    assert!(
        which("ovs-ofctl"),
        "`ovs-ofctl` not found: this test needs it (apt-get install openvswitch-common)"
    );
    let out = Command::new("ovs-ofctl")
        .env("OVS_RUNDIR", &sw.dir)
        .args(["-O", "OpenFlow13", "--timeout=20", "add-flow"])
        .arg(sw.target())
        .arg("actions=note:01,output:1")
        .output()
        .expect("running ovs-ofctl");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "ovs-ofctl add-flow succeeded");
    // Open vSwitch names OFPBAC_BAD_EXPERIMENTER (type 2, code 2) by its
    // OpenFlow 1.0 name.
    assert!(stderr.contains("OFPBAC_BAD_VENDOR"), "ovs-ofctl said: {stderr}");
}
