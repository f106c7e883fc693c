//! Any bytes as every body of sluice's filter-program extension
//! (`sluice_ofp::filterprog`): the four message bodies, both `DUMP_MAP`
//! multipart bodies (a reply also as a reassembled sequence), both OXM
//! payloads with and without mask, and the `send_maps` action data.
//! Decoding must not panic; whatever is accepted must pass `check`,
//! re-encode to exactly the same bytes, and read back equal from its text
//! form where it has one. The printer must not panic on any of them.
//! Fragments cut from the input are fed to an `Assembly` in order (the
//! object comes back exactly) and in a fuzzer-chosen order under many
//! program ids (no panic, state bounded).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_ofp::action::Action;
use sluice_ofp::consts::SLUICE_EXPERIMENTER_ID;
use sluice_ofp::filterprog::{
    exp_type, filter_prog_from_oxm, filter_prog_oxm, fragments, pcap_filter_from_oxm,
    pcap_filter_oxm, Assembly, DumpMapReply, DumpMapRequest, LoadFilterProg, MapsReport, SendMaps,
    UnloadFilterProg, UpdateMap, FILTER_PROG_FIELD, MAX_ASSEMBLIES, MAX_OBJECT, PCAP_FILTER_FIELD,
    SEND_MAPS_SUBTYPE,
};
use sluice_ofp::message::{ExperimenterMsg, Message};
use sluice_ofp::multipart::{
    MultipartExperimenter, MultipartReply, MultipartReplyBody, MultipartRequest,
    MultipartRequestBody,
};
use sluice_ofp::ofctl::filterprog::{parse_action, parse_match};
use sluice_ofp::oxm::Oxm;
use sluice_ofp::print::actions::send_maps_action;
use sluice_ofp::print::fields::{filter_prog_match, pcap_filter_match};
use sluice_ofp::print::print_message;

fuzz_target!(|data: &[u8]| {
    // Message bodies.
    if let Ok(m) = LoadFilterProg::decode(data) {
        assert!(m.check().is_ok());
        assert_eq!(m.encode(), data, "LOAD_FILTER_PROG re-encoded differently");
        // Alone, a first fragment is taken and any other is out of order.
        let mut a = Assembly::new();
        let r = a.push(&m);
        if m.offset == 0 {
            assert!(r.is_ok());
        } else {
            assert_eq!(r.map_err(|e| e.exp_code()), Err(Some(sluice_ofp::filterprog::err::BAD_FRAGMENT)));
        }
    }
    if let Ok(m) = UnloadFilterProg::decode(data) {
        assert!(m.check().is_ok());
        assert_eq!(m.encode(), data, "UNLOAD_FILTER_PROG re-encoded differently");
    }
    if let Ok(m) = UpdateMap::decode(data) {
        assert!(m.check().is_ok());
        assert_eq!(m.encode(), data, "UPDATE_MAP re-encoded differently");
    }
    if let Ok(m) = MapsReport::decode(data) {
        assert!(m.check().is_ok());
        assert_eq!(m.encode(), data, "MAPS_REPORT re-encoded differently");
    }
    // Multipart bodies.
    if let Ok(m) = DumpMapRequest::decode(data) {
        assert!(m.check().is_ok());
        assert_eq!(m.encode(), data, "DUMP_MAP request re-encoded differently");
    }
    if let Ok(m) = DumpMapReply::decode(data) {
        assert!(m.check().is_ok());
        assert_eq!(m.encode(), data, "DUMP_MAP reply re-encoded differently");
    }
    if let Ok(v) = DumpMapReply::decode_all(data) {
        let again: Vec<u8> = v.iter().flat_map(DumpMapReply::encode).collect();
        assert_eq!(again, data, "DUMP_MAP replies re-encoded differently");
    }

    // The printer, on every kind.
    for ty in exp_type::LOAD_FILTER_PROG..=exp_type::MAPS_REPORT {
        let e = ExperimenterMsg { experimenter: SLUICE_EXPERIMENTER_ID, exp_type: ty, data: data.to_vec() };
        let _ = print_message(1, &Message::Experimenter(e));
    }
    let mp = MultipartExperimenter {
        experimenter: SLUICE_EXPERIMENTER_ID,
        exp_type: exp_type::DUMP_MAP,
        data: data.to_vec(),
    };
    let req = MultipartRequest { flags: 0, body: MultipartRequestBody::Experimenter(mp.clone()) };
    let _ = print_message(1, &Message::MultipartRequest(req));
    let rep = MultipartReply { flags: 0, body: MultipartReplyBody::Experimenter(mp) };
    let _ = print_message(1, &Message::MultipartReply(rep));
    if let Some((&code, rest)) = data.split_first() {
        let _ = print_message(1, &sluice_ofp::filterprog::error_msg(u16::from(code % 16), "x", rest));
    }

    // OXM payloads.
    for has_mask in [false, true] {
        let o = |field| Oxm::Experimenter {
            experimenter: SLUICE_EXPERIMENTER_ID,
            field,
            has_mask,
            payload: data.to_vec(),
        };
        let p = o(FILTER_PROG_FIELD);
        match filter_prog_from_oxm(&p) {
            None => panic!("sluice's filter_prog field must be decoded"),
            Some(Err(_)) => {}
            Some(Ok(id)) => {
                assert_eq!(filter_prog_oxm(id), p, "filter_prog re-encoded differently");
                assert_eq!(parse_match(&filter_prog_match(id)), Ok(p), "filter_prog text");
            }
        }
        let q = o(PCAP_FILTER_FIELD);
        match pcap_filter_from_oxm(&q) {
            None => panic!("sluice's pcap_filter field must be decoded"),
            Some(Err(_)) => {}
            Some(Ok(expr)) => {
                assert_eq!(pcap_filter_oxm(&expr), q, "pcap_filter re-encoded differently");
                assert_eq!(parse_match(&pcap_filter_match(&expr)), Ok(q), "pcap_filter text");
            }
        }
    }

    // Action data, as it is and with the send_maps subtype in front.
    let mut forced = SEND_MAPS_SUBTYPE.to_be_bytes().to_vec();
    forced.extend_from_slice(data.get(2..).unwrap_or_default());
    for d in [data, &forced[..]] {
        let a = Action::Experimenter { experimenter: SLUICE_EXPERIMENTER_ID, data: d.to_vec() };
        if let Some(Ok(s)) = SendMaps::from_action(&a) {
            assert_eq!(s.check(), Ok(()));
            assert_eq!(s.to_action(), a, "send_maps re-encoded differently");
            assert_eq!(parse_action(&send_maps_action(&s)), Ok(s), "send_maps text");
        }
    }

    // Fragments of the input: first byte the fragment size, second the
    // program, the rest the object.
    if let [size, prog, object @ ..] = data {
        if object.is_empty() {
            return;
        }
        let id = 1 + u32::from(*prog % 32);
        let frags = fragments(id, object, usize::from(*size) + 1).expect("a valid object");
        let mut a = Assembly::new();
        let mut done = None;
        for f in &frags {
            assert!(done.is_none());
            done = a.push(f).expect("in-order fragments are taken");
        }
        assert_eq!(done, Some((id, object.to_vec())));
        assert!(a.is_empty());
        // Any order, many programs: never a panic, never over the limits.
        let mut a = Assembly::new();
        for &b in object.iter().take(512) {
            let mut f = frags[usize::from(b) % frags.len()].clone();
            f.prog_id = 1 + u32::from(b >> 4);
            if let Ok(Some((pid, obj))) = a.push(&f) {
                assert_eq!(pid, f.prog_id);
                assert_eq!(obj.len(), f.total_len as usize);
            }
            assert!(a.len() <= MAX_ASSEMBLIES);
            assert!(a.held_bytes() <= MAX_ASSEMBLIES * MAX_OBJECT as usize);
        }
    }
});
