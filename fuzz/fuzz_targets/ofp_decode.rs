//! Any bytes given to the OpenFlow decoder: it must not panic, and whatever
//! it accepts must re-encode to a message that decodes to the same value.
//! An experimenter message also goes through the live trace request's
//! decoder (`sluice_ofp::tracemsg`), whose accepted requests must
//! re-encode to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_ofp::message::Message;
use sluice_ofp::tracemsg::TraceRequest;

// `sluice_ofp::message::fuzz_one` holds the same oracle; it is spelled out
// here so the target states its property on its own.

fuzz_target!(|data: &[u8]| {
    if let Ok((xid, msg)) = Message::parse(data) {
        let bytes = msg.encode(xid);
        let (xid2, msg2) = Message::parse(&bytes).expect("re-encoded message must decode");
        assert_eq!(xid, xid2);
        assert_eq!(msg, msg2);
        if let Message::Experimenter(e) = &msg {
            if let Some(Ok(req)) = TraceRequest::parse(e) {
                assert_eq!(req.to_message(), msg, "a trace request re-encodes as it came");
            }
        }
    }
});
