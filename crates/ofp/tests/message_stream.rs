//! Integration test of the public message API as a connection handler uses
//! it: frame a byte stream that arrives in arbitrary pieces, parse each
//! message, negotiate the version from the peer's hello, and answer bad
//! messages with an `OFPT_ERROR` carrying the first 64 bytes.

use sluice_ofp::message::{
    error_reply, frame, msg_type, ErrorMsg, FlowMod, Hello, Message, RoleMsg, SwitchConfig,
};
use sluice_ofp::{ErrorCode, Header};

/// What a switch would do with `stream` delivered in chunks of `chunk`
/// bytes: the parsed messages, and error replies for the bad ones.
fn run(stream: &[u8], chunk: usize) -> (Vec<(u32, Message)>, Vec<Message>) {
    let mut buf = Vec::new();
    let mut got = Vec::new();
    let mut errors = Vec::new();
    for piece in stream.chunks(chunk.max(1)) {
        buf.extend_from_slice(piece);
        loop {
            match frame(&buf) {
                None => break,
                Some(Err(e)) => {
                    // Unframeable: answer and drop the connection (here:
                    // the rest of the stream).
                    errors.push(error_reply(e, &buf));
                    return (got, errors);
                }
                Some(Ok(n)) => {
                    let one: Vec<u8> = buf.drain(..n).collect();
                    match Message::parse(&one) {
                        Ok(m) => got.push(m),
                        Err(e) => errors.push(error_reply(e, &one)),
                    }
                }
            }
        }
    }
    (got, errors)
}

fn stream() -> (Vec<u8>, Vec<(u32, Message)>) {
    let msgs = vec![
        (1, Message::Hello(Hello::with_versions(&[1, 4]))),
        (2, Message::FeaturesRequest),
        (3, Message::SetConfig(SwitchConfig { flags: 0, miss_send_len: 0xffff })),
        (4, Message::EchoRequest(b"ping".to_vec())),
        (5, Message::FlowMod(FlowMod { priority: 7, ..FlowMod::default() })),
        (6, Message::RoleRequest(RoleMsg { role: 2, generation_id: 9 })),
        (7, Message::BarrierRequest),
    ];
    let mut bytes = Vec::new();
    for (xid, m) in &msgs {
        bytes.extend(m.encode(*xid));
    }
    (bytes, msgs)
}

#[test]
fn a_stream_in_any_chunking_gives_the_same_messages() {
    let (bytes, want) = stream();
    for chunk in [1, 3, 7, 8, 13, 64, bytes.len()] {
        let (got, errors) = run(&bytes, chunk);
        assert!(errors.is_empty(), "chunk {chunk}: {errors:?}");
        assert_eq!(got, want, "chunk {chunk}");
    }
}

#[test]
fn negotiation_from_the_first_message() {
    let (bytes, _) = stream();
    let Some(Ok(n)) = frame(&bytes) else { panic!("no hello") };
    let h = Header::parse(&bytes[..n]).unwrap();
    let Ok((_, Message::Hello(hello))) = Message::parse(&bytes[..n]) else { panic!() };
    assert_eq!(hello.negotiate(h.version, &[4]), Some(4));
    assert_eq!(hello.negotiate(h.version, &[5, 6]), None);
}

#[test]
fn bad_messages_are_answered_and_the_stream_continues() {
    let (mut bytes, want) = stream();
    // A message of unknown type (xid 0xaa) with a 70-byte body, and a
    // features request whose version is wrong, between good messages.
    let mut bad_type = vec![4, 99, 0, 78, 0, 0, 0, 0xaa];
    bad_type.extend_from_slice(&[0x5a; 70]);
    let bad_version = [3, msg_type::FEATURES_REQUEST, 0, 8, 0, 0, 0, 0xbb];
    let good = Message::BarrierReply.encode(0xcc);
    bytes.extend_from_slice(&bad_type);
    bytes.extend_from_slice(&bad_version);
    bytes.extend_from_slice(&good);

    let (got, errors) = run(&bytes, 5);
    assert_eq!(got.len(), want.len() + 1);
    assert_eq!(got.last(), Some(&(0xcc, Message::BarrierReply)));
    assert_eq!(
        errors,
        vec![
            Message::Error(ErrorMsg::Standard {
                code: ErrorCode::BRC_BAD_TYPE,
                data: bad_type[..64].to_vec()
            }),
            Message::Error(ErrorMsg::Standard {
                code: ErrorCode::BRC_BAD_VERSION,
                data: bad_version.to_vec()
            }),
        ]
    );
    // The reply to a 78-byte message carries exactly 64 bytes of it.
    assert_eq!(errors[0].encode(0xaa).len(), 8 + 4 + 64);
}

#[test]
fn a_header_length_below_8_stops_framing() {
    let (mut bytes, want) = stream();
    bytes.extend_from_slice(&[4, 2, 0, 4, 0, 0, 0, 1, 0xde, 0xad]);
    bytes.extend(Message::BarrierRequest.encode(99));
    let (got, errors) = run(&bytes, 4);
    assert_eq!(got, want);
    assert_eq!(errors.len(), 1);
    let Message::Error(ErrorMsg::Standard { code, .. }) = &errors[0] else { panic!() };
    assert_eq!(*code, ErrorCode::BRC_BAD_LEN);
}
