//! Bundle messages and errors (ONF extension 230, [`crate::bundle`]) for
//! `sluice ofp-print`, as `ovs-ofctl ofp-print` prints them:
//!
//! ```text
//! ONFT_BUNDLE_CONTROL (OF1.3) (xid=0x3):
//!  bundle_id=0x1 type=OPEN_REQUEST flags=atomic ordered
//! ONFT_BUNDLE_ADD_MESSAGE (OF1.3) (xid=0x6):
//!  bundle_id=0x1 flags=atomic ordered
//! OFPT_FLOW_MOD (OF1.3) (xid=0x6): ADD table:1 priority=90,udp,... actions=output:2
//! OFPT_ERROR (OF1.3) (xid=0x3): OFPBFC_MSG_FAILED
//! ONFT_BUNDLE_CONTROL (OF1.3) (xid=0x3):
//!  bundle_id=0x2 type=COMMIT_REQUEST flags=0
//! ```
//!
//! A body that does not decode prints the refusal and a hex dump; an ADD
//! whose inner message does not decode prints the inner message's own
//! decode error.

use super::{error_request, hex_dump, print_hex_stream};
use crate::bundle::{
    ctrl_type, err_name, flags, BundleMsg, ONFT_BUNDLE_ADD_MESSAGE, ONFT_BUNDLE_CONTROL,
    ONF_EXPERIMENTER_ID,
};
use crate::message::ExperimenterMsg;
use core::fmt::Write;

/// The message's name when `e` is a bundle message.
pub fn name(e: &ExperimenterMsg) -> Option<&'static str> {
    match (e.experimenter, e.exp_type) {
        (ONF_EXPERIMENTER_ID, ONFT_BUNDLE_CONTROL) => Some("ONFT_BUNDLE_CONTROL"),
        (ONF_EXPERIMENTER_ID, ONFT_BUNDLE_ADD_MESSAGE) => Some("ONFT_BUNDLE_ADD_MESSAGE"),
        _ => None,
    }
}

fn type_name(t: u16) -> String {
    const NAMES: [&str; 8] = [
        "OPEN_REQUEST",
        "OPEN_REPLY",
        "CLOSE_REQUEST",
        "CLOSE_REPLY",
        "COMMIT_REQUEST",
        "COMMIT_REPLY",
        "DISCARD_REQUEST",
        "DISCARD_REPLY",
    ];
    debug_assert_eq!(NAMES[usize::from(ctrl_type::DISCARD_REPLY)], "DISCARD_REPLY");
    NAMES.get(usize::from(t)).map_or_else(|| format!("{t}"), |n| n.to_string())
}

fn flag_names(f: u16) -> String {
    if f == 0 {
        return "0".into();
    }
    let mut v = Vec::new();
    if f & flags::ATOMIC != 0 {
        v.push("atomic".to_string());
    }
    if f & flags::ORDERED != 0 {
        v.push("ordered".to_string());
    }
    if f & !flags::ALL != 0 {
        v.push(format!("0x{:x}", f & !flags::ALL));
    }
    v.join(" ")
}

/// The body of a bundle message; `None` for any other experimenter message.
pub fn message(e: &ExperimenterMsg) -> Option<String> {
    let decoded = BundleMsg::decode(e)?;
    let mut s = String::new();
    match decoded {
        Ok(BundleMsg::Ctrl(c)) => {
            let _ = write!(
                s,
                "\n bundle_id=0x{:x} type={} flags={}",
                c.bundle_id,
                type_name(c.ctrl_type),
                flag_names(c.flags)
            );
            if !c.properties.is_empty() {
                let _ = write!(s, "\n properties:\n{}", hex_dump(&c.properties));
            }
        }
        Ok(BundleMsg::Add(a)) => {
            let _ = write!(s, "\n bundle_id=0x{:x} flags={}", a.bundle_id, flag_names(a.flags));
            let _ = write!(s, "\n{}", print_hex_stream(&a.message));
        }
        Err(r) => {
            let _ = write!(s, " ***decode error: {r}***");
            if !e.data.is_empty() {
                let _ = write!(s, "\n{}", hex_dump(&e.data));
            }
        }
    }
    Some(s)
}

/// The body of an ONF bundle error (`OFPBFC_*`); `None` for any other
/// experimenter error.
pub fn error(exp_code: u16, experimenter: u32, data: &[u8]) -> Option<String> {
    if experimenter != ONF_EXPERIMENTER_ID {
        return None;
    }
    let name = err_name(exp_code)?;
    Some(format!(" {name}{}", error_request(data)))
}

#[cfg(test)]
mod tests {
    use crate::bundle::{bundle_error, ctrl_type, BundleAdd, BundleCtrl};
    use crate::message::Message;
    use crate::print::print_message;

    fn ctrl(t: u16, f: u16) -> Message {
        BundleCtrl { bundle_id: 1, ctrl_type: t, flags: f, properties: Vec::new() }.to_message()
    }

    #[test]
    fn control_add_and_errors_print_as_ovs_ofctl_does() {
        assert_eq!(
            print_message(3, &ctrl(ctrl_type::OPEN_REQUEST, 3)),
            "ONFT_BUNDLE_CONTROL (OF1.3) (xid=0x3):\n bundle_id=0x1 type=OPEN_REQUEST flags=atomic ordered"
        );
        assert_eq!(
            print_message(3, &ctrl(ctrl_type::COMMIT_REPLY, 0)),
            "ONFT_BUNDLE_CONTROL (OF1.3) (xid=0x3):\n bundle_id=0x1 type=COMMIT_REPLY flags=0"
        );
        let inner = Message::BarrierRequest.encode(6);
        let add = BundleAdd { bundle_id: 2, flags: 1, message: inner, ..Default::default() };
        assert_eq!(
            print_message(6, &add.to_message()),
            "ONFT_BUNDLE_ADD_MESSAGE (OF1.3) (xid=0x6):\n bundle_id=0x2 flags=atomic\n\
             OFPT_BARRIER_REQUEST (OF1.3) (xid=0x6):"
        );
        let req = ctrl(ctrl_type::COMMIT_REQUEST, 0).encode(3);
        assert_eq!(
            print_message(3, &bundle_error(crate::bundle::err::MSG_FAILED, &req)),
            "OFPT_ERROR (OF1.3) (xid=0x3): OFPBFC_MSG_FAILED\n\
             ONFT_BUNDLE_CONTROL (OF1.3) (xid=0x3):\n bundle_id=0x1 type=COMMIT_REQUEST flags=0"
        );
    }

    #[test]
    fn a_short_body_is_a_decode_error() {
        let m = Message::Experimenter(crate::message::ExperimenterMsg {
            experimenter: crate::bundle::ONF_EXPERIMENTER_ID,
            exp_type: crate::bundle::ONFT_BUNDLE_CONTROL,
            data: vec![0, 0, 0, 1],
        });
        let p = print_message(1, &m);
        assert!(
            p.starts_with(
                "ONFT_BUNDLE_CONTROL (OF1.3) (xid=0x1): ***decode error: OFPBRC_BAD_LEN***"
            ),
            "{p}"
        );
    }
}
