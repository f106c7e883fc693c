//! Any bytes as sluice's POF match field payload (with and without mask)
//! and as POF action data: decoding must not panic, whatever it accepts
//! must re-encode to exactly the same bytes, and its canonical text must
//! read back to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_ofp::action::Action;
use sluice_ofp::consts::SLUICE_EXPERIMENTER_ID;
use sluice_ofp::ofctl::pof::{parse_action, parse_match};
use sluice_ofp::oxm::Oxm;
use sluice_ofp::pof::{PofAction, PofMatch, POF_FIELD};
use sluice_ofp::print::actions::pof_action;
use sluice_ofp::print::fields::pof_match;

fuzz_target!(|data: &[u8]| {
    for has_mask in [false, true] {
        let o = Oxm::Experimenter {
            experimenter: SLUICE_EXPERIMENTER_ID,
            field: POF_FIELD,
            has_mask,
            payload: data.to_vec(),
        };
        match PofMatch::from_oxm(&o) {
            None => panic!("sluice's POF field must be decoded"),
            Some(Err(_)) => {}
            Some(Ok(m)) => {
                assert_eq!(m.validate(), Ok(()));
                assert_eq!(m.to_oxm(), o, "re-encoding changed the payload");
                assert_eq!(parse_match(&pof_match(&m)), Ok(m), "text round trip");
            }
        }
    }
    let a = Action::Experimenter { experimenter: SLUICE_EXPERIMENTER_ID, data: data.to_vec() };
    if let Some(Ok(p)) = PofAction::from_action(&a) {
        assert_eq!(p.validate(), Ok(()));
        assert_eq!(p.to_action(), a, "re-encoding changed the data");
        assert_eq!(parse_action(&pof_action(&p)), Ok(p), "text round trip");
    }
});
