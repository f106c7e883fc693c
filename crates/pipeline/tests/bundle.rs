//! Bundles (ONF extension 230 over OpenFlow 1.3): the codec in
//! `sluice_ofp::bundle` (lossless, every lying length refused with the
//! spec's error) and the semantics in `sluice_pipeline::bundle` (open,
//! add, close, commit, discard; all or nothing, in order, one
//! publication; per connection; limits).

use sluice_ofp::action::Action;
use sluice_ofp::bundle::{
    ctrl_type as ct, err, err_name, flags as bf, BundleAdd, BundleCtrl, BundleMsg, BundleRefusal,
    ONF_EXPERIMENTER_ID,
};
use sluice_ofp::consts::{group_id, port_no, OFP_NO_BUFFER};
use sluice_ofp::error::ErrorCode;
use sluice_ofp::group::{Bucket, GroupType};
use sluice_ofp::instruction::Instruction;
use sluice_ofp::message::{
    flow_mod_command as fc, group_mod_command as gc, ErrorMsg, ExperimenterMsg, FlowMod, GroupMod,
    Message,
};
use sluice_ofp::oxm::{FieldBytes, FieldId, Match, Oxm};
use sluice_pipeline::bundle::Limits;
use sluice_pipeline::publish::Publisher;
use sluice_pipeline::{Config, Outgoing, Pipeline};

mod common;

const BOTH: u16 = bf::ATOMIC | bf::ORDERED;

fn pipeline() -> Pipeline {
    let mut p = Pipeline::new(Config::default());
    common::add_ports(&mut p, &[1, 2, 3]);
    p
}

fn send(p: &mut Pipeline, conn: u64, xid: u32, msg: &Message) -> Vec<Outgoing> {
    let raw = msg.encode(xid);
    p.handle_from(conn, xid, msg, &raw, &mut |_: u32, _: Option<u32>, _: &[u8]| {})
}

fn ctrl(id: u32, ty: u16, flags: u16) -> Message {
    BundleCtrl { bundle_id: id, ctrl_type: ty, flags, properties: vec![] }.to_message()
}

fn add(id: u32, flags: u16, xid: u32, inner: &Message) -> Message {
    BundleAdd { bundle_id: id, pad: 0, flags, message: inner.encode(xid), trailer: vec![] }
        .to_message()
}

fn flow(port: u32, out: u32) -> Message {
    Message::FlowMod(FlowMod {
        command: fc::ADD,
        priority: 10,
        buffer_id: OFP_NO_BUFFER,
        out_port: port_no::ANY,
        out_group: group_id::ANY,
        r#match: Match {
            oxms: vec![Oxm::Basic {
                field: FieldId::InPort,
                value: FieldBytes::from_u128(u128::from(port), 4),
                mask: None,
            }],
        },
        instructions: vec![Instruction::ApplyActions(vec![Action::Output {
            port: out,
            max_len: 0,
        }])],
        ..FlowMod::default()
    })
}

fn to_group(port: u32, group: u32) -> Message {
    let Message::FlowMod(mut fm) = flow(port, 1) else { unreachable!() };
    fm.instructions = vec![Instruction::ApplyActions(vec![Action::Group(group)])];
    Message::FlowMod(fm)
}

fn group(cmd: u16, id: u32) -> Message {
    Message::GroupMod(GroupMod {
        command: cmd,
        group_type: GroupType::All,
        group_id: id,
        buckets: vec![Bucket {
            weight: 0,
            watch_port: port_no::ANY,
            watch_group: group_id::ANY,
            actions: vec![Action::Output { port: 2, max_len: 0 }],
        }],
    })
}

fn n_flows(p: &Pipeline) -> usize {
    p.tables()[0].entries().len()
}

/// The bundle reply of `out`'s only message.
fn reply_of(out: &[Outgoing]) -> (u32, BundleCtrl) {
    match out {
        [Outgoing { xid, msg: Message::Experimenter(e) }] => match BundleMsg::decode(e) {
            Some(Ok(BundleMsg::Ctrl(c))) => (*xid, c),
            other => panic!("not a bundle reply: {other:?}"),
        },
        other => panic!("expected one reply, got {other:?}"),
    }
}

/// The ONF bundle error code of an error message.
fn onf_err(m: &Message) -> Option<u16> {
    match m {
        Message::Error(ErrorMsg::Experimenter { exp_type, experimenter, .. })
            if *experimenter == ONF_EXPERIMENTER_ID =>
        {
            Some(*exp_type)
        }
        _ => None,
    }
}

fn only_onf_err(out: &[Outgoing]) -> u16 {
    match out {
        [o] => onf_err(&o.msg).unwrap_or_else(|| panic!("not an ONF error: {o:?}")),
        other => panic!("expected one error, got {other:?}"),
    }
}

fn std_err(out: &[Outgoing]) -> ErrorCode {
    match out {
        [Outgoing { msg: Message::Error(ErrorMsg::Standard { code, .. }), .. }] => *code,
        other => panic!("expected one standard error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Codec

#[test]
fn codec_round_trips_losslessly() {
    let c = BundleCtrl {
        bundle_id: 0xdead_beef,
        ctrl_type: ct::COMMIT_REQUEST,
        flags: BOTH,
        properties: vec![0xff, 0xff, 0, 12, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0],
    };
    let Message::Experimenter(e) = c.to_message() else { unreachable!() };
    assert_eq!(BundleMsg::decode(&e), Some(Ok(BundleMsg::Ctrl(c.clone()))));
    let bytes = c.to_message().encode(9);
    let (_, back) = Message::parse(&bytes).unwrap();
    assert_eq!(back, c.to_message());

    // An ADD with a 12-byte inner message, padding to 8 and a property.
    let inner = Message::EchoRequest(vec![1, 2, 3, 4]).encode(5);
    assert_eq!(inner.len(), 12);
    let a = BundleAdd {
        bundle_id: 3,
        pad: 0x1234,
        flags: bf::ORDERED,
        message: inner.clone(),
        trailer: vec![0, 0, 0, 0, 0xff, 0xff, 0, 4],
    };
    let Message::Experimenter(e) = a.to_message() else { unreachable!() };
    assert_eq!(BundleMsg::decode(&e), Some(Ok(BundleMsg::Add(a.clone()))));
    assert_eq!(a.inner(5).unwrap(), (5, Message::EchoRequest(vec![1, 2, 3, 4])));
    // Not ours: other ONF types and other experimenters.
    let other = ExperimenterMsg { experimenter: ONF_EXPERIMENTER_ID, exp_type: 3200, data: vec![] };
    assert_eq!(BundleMsg::decode(&other), None);
    let other = ExperimenterMsg { experimenter: 0x2320, exp_type: 2300, data: vec![0; 8] };
    assert_eq!(BundleMsg::decode(&other), None);
    assert_eq!(err_name(err::MSG_FAILED), Some("OFPBFC_MSG_FAILED"));
    assert_eq!(err_name(err::BUNDLE_IN_PROGRESS), Some("OFPBFC_BUNDLE_IN_PROGRESS"));
    assert_eq!(err_name(2316), None);
    assert_eq!(err_name(7), None);
}

#[test]
fn lying_lengths_get_the_specs_errors() {
    let dec = |ty: u32, data: Vec<u8>| {
        BundleMsg::decode(&ExperimenterMsg {
            experimenter: ONF_EXPERIMENTER_ID,
            exp_type: ty,
            data,
        })
        .unwrap()
    };
    let bad_len = Err(BundleRefusal::Std(ErrorCode::BRC_BAD_LEN));
    let msg_bad_len = Err(BundleRefusal::Bundle(err::MSG_BAD_LEN));
    // Control: fixed part short; a property shorter than its header, or
    // running past the end.
    for n in 0..8 {
        assert_eq!(dec(2300, vec![0; n]), bad_len, "{n} bytes");
    }
    assert_eq!(dec(2300, [vec![0; 8], vec![0xff, 0xff, 0, 3]].concat()), bad_len);
    assert_eq!(dec(2300, [vec![0; 8], vec![0xff, 0xff, 0, 9, 0, 0, 0, 0]].concat()), bad_len);
    assert_eq!(dec(2300, [vec![0; 8], vec![0xff, 0xff]].concat()), bad_len);
    // Add: fixed part short.
    for n in 0..8 {
        assert_eq!(dec(2301, vec![0; n]), bad_len, "{n} bytes");
    }
    let echo = Message::EchoRequest(vec![1, 2, 3, 4]).encode(5); // 12 bytes
    let with = |m: &[u8], trailer: &[u8]| [&[0u8; 8][..], m, trailer].concat();
    // No room for the inner header; inner length below 8; inner length past
    // the end.
    assert_eq!(dec(2301, with(&echo[..7], &[])), msg_bad_len);
    let mut short = echo.clone();
    short[2..4].copy_from_slice(&7u16.to_be_bytes());
    assert_eq!(dec(2301, with(&short, &[])), msg_bad_len);
    let mut long = echo.clone();
    long[2..4].copy_from_slice(&13u16.to_be_bytes());
    assert_eq!(dec(2301, with(&long, &[])), msg_bad_len);
    // A trailer shorter than the padding, or with non-zero padding.
    assert_eq!(dec(2301, with(&echo, &[0, 0])), msg_bad_len);
    assert_eq!(dec(2301, with(&echo, &[0, 1, 0, 0, 0xff, 0xff, 0, 4])), msg_bad_len);
    // Padding fine, property lying.
    assert_eq!(dec(2301, with(&echo, &[0, 0, 0, 0, 0xff, 0xff, 0, 9])), bad_len);
    // Every length consistent: accepted.
    assert!(dec(2301, with(&echo, &[])).is_ok());
}

// ---------------------------------------------------------------------------
// Semantics

#[test]
fn open_add_commit_applies_in_order_and_replies() {
    let mut p = pipeline();
    let (xid, r) = reply_of(&send(&mut p, 1, 10, &ctrl(7, ct::OPEN_REQUEST, BOTH)));
    assert_eq!((xid, r.bundle_id, r.ctrl_type, r.flags), (10, 7, ct::OPEN_REPLY, BOTH));
    // A group, a flow using it (valid only after the group), a flow
    // replaced by a later one with the same match.
    for (xid, m) in
        [(11, group(gc::ADD, 5)), (12, to_group(1, 5)), (13, flow(2, 1)), (14, flow(2, 3))]
    {
        assert!(send(&mut p, 1, xid, &add(7, BOTH, xid, &m)).is_empty());
    }
    assert_eq!(n_flows(&p), 0, "nothing before the commit");
    let (_, r) = reply_of(&send(&mut p, 1, 15, &ctrl(7, ct::CLOSE_REQUEST, BOTH)));
    assert_eq!(r.ctrl_type, ct::CLOSE_REPLY);
    let (xid, r) = reply_of(&send(&mut p, 1, 16, &ctrl(7, ct::COMMIT_REQUEST, BOTH)));
    assert_eq!((xid, r.ctrl_type), (16, ct::COMMIT_REPLY));
    assert_eq!(n_flows(&p), 2);
    let Message::FlowMod(want) = flow(2, 3) else { unreachable!() };
    let e = p.tables()[0].entries().iter().find(|e| e.r#match == want.r#match);
    assert_eq!(e.unwrap().instructions[..], want.instructions[..], "the later flow-mod won");
    // The bundle is gone.
    assert_eq!(only_onf_err(&send(&mut p, 1, 17, &ctrl(7, ct::COMMIT_REQUEST, BOTH))), err::BAD_ID);
}

#[test]
fn a_failing_message_fails_the_commit_and_changes_nothing() {
    let mut p = pipeline();
    send(&mut p, 1, 1, &flow(3, 1)); // untouched by the failed bundle
    assert_eq!(n_flows(&p), 1);
    reply_of(&send(&mut p, 1, 2, &ctrl(1, ct::OPEN_REQUEST, BOTH)));
    send(&mut p, 1, 3, &add(1, BOTH, 3, &flow(1, 2)));
    send(&mut p, 1, 4, &add(1, BOTH, 4, &group(gc::ADD, 9)));
    // MODIFY of a group that does not exist: OFPGMFC_UNKNOWN_GROUP.
    send(&mut p, 1, 5, &add(1, BOTH, 5, &group(gc::MODIFY, 10)));
    send(&mut p, 1, 6, &add(1, BOTH, 6, &flow(2, 2)));
    let out = send(&mut p, 1, 7, &ctrl(1, ct::COMMIT_REQUEST, BOTH));
    assert_eq!(out.len(), 2, "{out:?}");
    // First the failing message's own error, with its xid and bytes...
    match &out[0] {
        Outgoing { xid: 5, msg: Message::Error(ErrorMsg::Standard { code, data }) } => {
            assert_eq!(*code, ErrorCode::GMFC_UNKNOWN_GROUP);
            assert_eq!(data[..], group(gc::MODIFY, 10).encode(5)[..data.len()]);
        }
        other => panic!("{other:?}"),
    }
    // ...then the commit's.
    assert_eq!(out[1].xid, 7);
    assert_eq!(onf_err(&out[1].msg), Some(err::MSG_FAILED));
    assert_eq!(n_flows(&p), 1);
    assert!(p.groups().is_empty(), "the group added before the failure is not there");
    assert_eq!(p.bundles().count(1), 0);
}

#[test]
fn a_commit_is_one_publication() {
    let mut pb = Publisher::new(pipeline());
    let pubd = pb.published();
    let count = |q: &Pipeline| q.tables()[0].entries().len();
    let m = pb.master_mut();
    send(m, 1, 1, &ctrl(2, ct::OPEN_REQUEST, BOTH));
    for i in 0..50u32 {
        send(m, 1, 100 + i, &add(2, BOTH, 100 + i, &flow(1000 + i, 1)));
    }
    pb.publish();
    assert_eq!(count(&pubd.load()), 0, "adding publishes nothing");
    reply_of(&send(pb.master_mut(), 1, 3, &ctrl(2, ct::COMMIT_REQUEST, BOTH)));
    assert_eq!(count(&pubd.load()), 0);
    pb.publish();
    assert_eq!(count(&pubd.load()), 50, "all at once");
}

#[test]
fn flags_are_checked() {
    let mut p = pipeline();
    assert_eq!(only_onf_err(&send(&mut p, 1, 1, &ctrl(1, ct::OPEN_REQUEST, 4))), err::BAD_FLAGS);
    assert_eq!(p.bundles().count(1), 0);
    // Commit with other flags than the open's: refused, bundle dropped.
    reply_of(&send(&mut p, 1, 2, &ctrl(1, ct::OPEN_REQUEST, bf::ATOMIC)));
    send(&mut p, 1, 3, &add(1, bf::ATOMIC, 3, &flow(1, 2)));
    assert_eq!(
        only_onf_err(&send(&mut p, 1, 4, &ctrl(1, ct::COMMIT_REQUEST, BOTH))),
        err::BAD_FLAGS
    );
    assert_eq!(n_flows(&p), 0);
    assert_eq!(only_onf_err(&send(&mut p, 1, 5, &ctrl(1, ct::DISCARD_REQUEST, 0))), err::BAD_ID);
    // Add with other flags: refused, bundle dropped.
    reply_of(&send(&mut p, 1, 6, &ctrl(1, ct::OPEN_REQUEST, 0)));
    assert_eq!(
        only_onf_err(&send(&mut p, 1, 7, &add(1, bf::ORDERED, 7, &flow(1, 2)))),
        err::BAD_FLAGS
    );
    assert_eq!(p.bundles().count(1), 0);
    // Add with unknown flags.
    assert_eq!(only_onf_err(&send(&mut p, 1, 8, &add(1, 0x80, 8, &flow(1, 2)))), err::BAD_FLAGS);
    // Flags 0 work too (committed atomically and in order anyway).
    reply_of(&send(&mut p, 1, 9, &ctrl(1, ct::OPEN_REQUEST, 0)));
    send(&mut p, 1, 10, &add(1, 0, 10, &flow(1, 2)));
    reply_of(&send(&mut p, 1, 11, &ctrl(1, ct::COMMIT_REQUEST, 0)));
    assert_eq!(n_flows(&p), 1);
}

#[test]
fn ids_states_and_types() {
    let mut p = pipeline();
    for ty in [ct::CLOSE_REQUEST, ct::COMMIT_REQUEST, ct::DISCARD_REQUEST] {
        assert_eq!(only_onf_err(&send(&mut p, 1, 1, &ctrl(4, ty, 0))), err::BAD_ID);
    }
    for ty in [ct::OPEN_REPLY, ct::CLOSE_REPLY, ct::COMMIT_REPLY, ct::DISCARD_REPLY, 8, 0xffff] {
        assert_eq!(only_onf_err(&send(&mut p, 1, 1, &ctrl(4, ty, 0))), err::BAD_TYPE);
    }
    // Open twice: the old one is dropped.
    reply_of(&send(&mut p, 1, 2, &ctrl(4, ct::OPEN_REQUEST, 0)));
    assert_eq!(only_onf_err(&send(&mut p, 1, 3, &ctrl(4, ct::OPEN_REQUEST, 0))), err::BAD_ID);
    assert_eq!(p.bundles().count(1), 0);
    // ADD opens implicitly; after CLOSE, ADD is BUNDLE_CLOSED and drops it.
    assert!(send(&mut p, 1, 4, &add(4, 0, 4, &flow(1, 2))).is_empty());
    reply_of(&send(&mut p, 1, 5, &ctrl(4, ct::CLOSE_REQUEST, 0)));
    assert_eq!(only_onf_err(&send(&mut p, 1, 6, &add(4, 0, 6, &flow(2, 1)))), err::BUNDLE_CLOSED);
    assert_eq!(p.bundles().count(1), 0);
    // Closing twice: BUNDLE_CLOSED.
    reply_of(&send(&mut p, 1, 7, &ctrl(4, ct::OPEN_REQUEST, 0)));
    reply_of(&send(&mut p, 1, 8, &ctrl(4, ct::CLOSE_REQUEST, 0)));
    assert_eq!(
        only_onf_err(&send(&mut p, 1, 9, &ctrl(4, ct::CLOSE_REQUEST, 0))),
        err::BUNDLE_CLOSED
    );
    // Discard.
    reply_of(&send(&mut p, 1, 10, &ctrl(4, ct::OPEN_REQUEST, 0)));
    send(&mut p, 1, 11, &add(4, 0, 11, &flow(1, 2)));
    let (_, r) = reply_of(&send(&mut p, 1, 12, &ctrl(4, ct::DISCARD_REQUEST, 0)));
    assert_eq!(r.ctrl_type, ct::DISCARD_REPLY);
    assert_eq!(n_flows(&p), 0);
    // An empty bundle commits.
    reply_of(&send(&mut p, 1, 13, &ctrl(4, ct::OPEN_REQUEST, 0)));
    reply_of(&send(&mut p, 1, 14, &ctrl(4, ct::COMMIT_REQUEST, 0)));
}

#[test]
fn inner_messages_are_checked_when_added() {
    let mut p = pipeline();
    reply_of(&send(&mut p, 1, 1, &ctrl(1, ct::OPEN_REQUEST, 0)));
    // Another xid than the ADD's.
    assert_eq!(only_onf_err(&send(&mut p, 1, 2, &add(1, 0, 3, &flow(1, 2)))), err::MSG_BAD_XID);
    // Another version.
    let mut v = flow(1, 2).encode(4);
    v[0] = 5;
    let m = BundleAdd { bundle_id: 1, pad: 0, flags: 0, message: v, trailer: vec![] }.to_message();
    assert_eq!(std_err(&send(&mut p, 1, 4, &m)), ErrorCode::BRC_BAD_VERSION);
    // Not bundlable.
    for inner in
        [Message::BarrierRequest, Message::EchoRequest(vec![]), ctrl(2, ct::OPEN_REQUEST, 0)]
    {
        assert_eq!(only_onf_err(&send(&mut p, 1, 5, &add(1, 0, 5, &inner))), err::MSG_UNSUP);
    }
    // A flow-mod naming a buffer.
    let Message::FlowMod(mut fm) = flow(1, 2) else { unreachable!() };
    fm.buffer_id = 3;
    let out = send(&mut p, 1, 6, &add(1, 0, 6, &Message::FlowMod(fm)));
    assert_eq!(only_onf_err(&out), err::MSG_UNSUP);
    // One that does not decode gets its own error (a flow-mod cut short).
    let mut cut = flow(1, 2).encode(7);
    cut.truncate(40);
    cut[2..4].copy_from_slice(&40u16.to_be_bytes());
    let m =
        BundleAdd { bundle_id: 1, pad: 0, flags: 0, message: cut, trailer: vec![] }.to_message();
    assert_eq!(std_err(&send(&mut p, 1, 7, &m)), ErrorCode::BRC_BAD_LEN);
    // The bundle is still open and empty.
    reply_of(&send(&mut p, 1, 8, &ctrl(1, ct::COMMIT_REQUEST, 0)));
    assert_eq!(n_flows(&p), 0);
}

#[test]
fn bundles_are_per_connection_and_go_with_it() {
    let mut p = pipeline();
    reply_of(&send(&mut p, 1, 1, &ctrl(1, ct::OPEN_REQUEST, 0)));
    reply_of(&send(&mut p, 2, 1, &ctrl(1, ct::OPEN_REQUEST, 0)));
    send(&mut p, 1, 2, &add(1, 0, 2, &flow(1, 2)));
    send(&mut p, 2, 2, &add(1, 0, 2, &flow(2, 1)));
    p.conn_closed(2);
    assert_eq!(only_onf_err(&send(&mut p, 2, 3, &ctrl(1, ct::COMMIT_REQUEST, 0))), err::BAD_ID);
    reply_of(&send(&mut p, 1, 3, &ctrl(1, ct::COMMIT_REQUEST, 0)));
    assert_eq!(n_flows(&p), 1);
}

#[test]
fn too_many_bundles() {
    let mut p = pipeline();
    let max = p.config().bundle_limits.bundles as u32;
    for id in 0..max {
        reply_of(&send(&mut p, 1, id, &ctrl(id, ct::OPEN_REQUEST, 0)));
    }
    assert_eq!(
        only_onf_err(&send(&mut p, 1, 1, &ctrl(max, ct::OPEN_REQUEST, 0))),
        err::OUT_OF_BUNDLES
    );
    assert_eq!(
        only_onf_err(&send(&mut p, 1, 1, &add(max, 0, 1, &flow(1, 2)))),
        err::OUT_OF_BUNDLES
    );
    // Another connection has its own allowance.
    reply_of(&send(&mut p, 2, 1, &ctrl(max, ct::OPEN_REQUEST, 0)));
}

/// Messages per bundle and bytes per connection: the ADD past either
/// limit is `OFPBFC_MSG_TOO_MANY` and the bundle keeps what it had (its
/// commit installs exactly that); the byte limit counts all the
/// connection's bundles, and other connections have their own.
#[test]
fn message_and_byte_limits() {
    let flow_len = flow(1, 2).encode(0).len();
    let mut p = Pipeline::new(Config {
        bundle_limits: Limits { bundles: 8, messages: 3, bytes: 5 * flow_len },
        ..Config::default()
    });
    common::add_ports(&mut p, &[1, 2, 3]);
    for i in 0..3 {
        assert!(send(&mut p, 1, i, &add(1, 0, i, &flow(i + 1, 2))).is_empty());
    }
    assert_eq!(only_onf_err(&send(&mut p, 1, 4, &add(1, 0, 4, &flow(9, 2)))), err::MSG_TOO_MANY);
    // Bundle 2 of the same connection: room for two more flows' bytes.
    for i in 0..2 {
        assert!(send(&mut p, 1, 5 + i, &add(2, 0, 5 + i, &flow(20 + i, 2))).is_empty());
    }
    assert_eq!(only_onf_err(&send(&mut p, 1, 7, &add(2, 0, 7, &flow(30, 2)))), err::MSG_TOO_MANY);
    assert_eq!(p.bundles().bytes(1), 5 * flow_len);
    // Another connection is not charged for connection 1's bytes.
    assert!(send(&mut p, 2, 8, &add(1, 0, 8, &flow(40, 2))).is_empty());
    reply_of(&send(&mut p, 1, 9, &ctrl(1, ct::COMMIT_REQUEST, 0)));
    assert_eq!(n_flows(&p), 3, "the commit installs the three accepted flows");
    // Committing frees the bytes.
    assert!(send(&mut p, 1, 10, &add(2, 0, 10, &flow(31, 2))).is_empty());
}

#[test]
fn plain_handle_is_connection_zero() {
    let mut p = pipeline();
    let m = ctrl(1, ct::OPEN_REQUEST, 0);
    let raw = m.encode(1);
    let out = p.handle(1, &m, &raw, &mut |_: u32, _: Option<u32>, _: &[u8]| {});
    reply_of(&out);
    assert_eq!(p.bundles().count(0), 1);
}

/// A bundled flow with a `pcap_filter` field installs with its guard (the
/// scratch replica checks it against the master's programs); one with an
/// expression that does not compile fails the commit and installs nothing.
#[test]
fn flows_with_filter_fields_commit() {
    let mut p = pipeline();
    let guarded = |expr: &str| {
        let Message::FlowMod(mut fm) = flow(1, 2) else { unreachable!() };
        fm.r#match.oxms.push(sluice_ofp::filterprog::pcap_filter_oxm(expr));
        Message::FlowMod(fm)
    };
    send(&mut p, 1, 1, &ctrl(9, ct::OPEN_REQUEST, BOTH));
    assert!(send(&mut p, 1, 2, &add(9, BOTH, 2, &guarded("udp dst port 53"))).is_empty());
    let out = send(&mut p, 1, 3, &ctrl(9, ct::COMMIT_REQUEST, BOTH));
    assert_eq!(reply_of(&out).1.ctrl_type, ct::COMMIT_REPLY, "{out:?}");
    assert_eq!(n_flows(&p), 1);

    send(&mut p, 1, 4, &ctrl(10, ct::OPEN_REQUEST, BOTH));
    send(&mut p, 1, 5, &add(10, BOTH, 5, &flow(3, 1)));
    send(&mut p, 1, 6, &add(10, BOTH, 6, &guarded("udp dst port 53 andd tcp")));
    let out = send(&mut p, 1, 7, &ctrl(10, ct::COMMIT_REQUEST, BOTH));
    assert!(out.iter().any(|o| onf_err(&o.msg) == Some(err::MSG_FAILED)), "{out:?}");
    assert_eq!(n_flows(&p), 1, "nothing of the failed bundle installed");
}
