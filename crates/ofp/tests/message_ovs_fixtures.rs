//! Every OpenFlow message captured between `ovs-ofctl` and Open vSwitch 3.1
//! (`tests/fixtures/ovs-ofctl/*.hex`: one message per line, `>` client to
//! switch, `<` switch to client) must parse and re-encode to the very same
//! bytes, except the hand-written bad requests in `raw-*` captures, which
//! must be rejected with the error Open vSwitch answered them with.

use std::path::Path;

use sluice_ofp::message::{ErrorMsg, Message};
use sluice_ofp::ErrorCode;

struct Line {
    file: String,
    dir: char,
    bytes: Vec<u8>,
}

fn fixtures() -> Vec<Line> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ovs-ofctl");
    let entries =
        std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("no fixtures at {}: {e}", dir.display()));
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "hex"))
        .collect();
    files.sort();
    let mut lines = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for l in text.lines() {
            let l = l.trim();
            let Some(dir) = l.chars().next().filter(|c| *c == '<' || *c == '>') else { continue };
            let bytes = hex::decode(l[1..].trim()).unwrap_or_else(|e| panic!("{f:?}: {e}: {l}"));
            let file = f.file_name().unwrap().to_string_lossy().into_owned();
            lines.push(Line { file, dir, bytes });
        }
    }
    lines
}

#[test]
fn captured_messages_round_trip_byte_for_byte() {
    let lines = fixtures();
    let mut ok = 0;
    let mut rejected = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        match Message::parse(&l.bytes) {
            Ok((xid, m)) => {
                assert_eq!(
                    m.encode(xid),
                    l.bytes,
                    "{} {} re-encodes differently: {m:?}",
                    l.file,
                    l.dir
                );
                sluice_ofp::message::fuzz_one(&l.bytes);
                ok += 1;
            }
            Err(e) => {
                // Only requests we wrote by hand to provoke errors may fail,
                // and Open vSwitch must have answered them with the same
                // error (the next reply carrying these bytes).
                assert!(
                    l.file.starts_with("raw-") && l.dir == '>',
                    "{}: {e} for {}",
                    l.file,
                    hex::encode(&l.bytes)
                );
                let answer =
                    lines[i + 1..].iter().filter(|r| r.dir == '<').find_map(
                        |r| match Message::parse(&r.bytes) {
                            Ok((_, Message::Error(ErrorMsg::Standard { code, data })))
                                if l.bytes.starts_with(&data) || data.starts_with(&l.bytes) =>
                            {
                                Some(code)
                            }
                            _ => None,
                        },
                    );
                rejected.push((l.file.clone(), hex::encode(&l.bytes), e, answer));
            }
        }
    }
    for (file, hex, ours, ovs) in &rejected {
        eprintln!("{file}: {hex}: ours {ours}, ovs {ovs:?}");
    }
    for (file, hex, ours, ovs) in &rejected {
        if let Some(ovs) = ovs {
            assert_eq!(ours, ovs, "{file}: {hex}");
        }
    }
    eprintln!("{ok} captured messages round-tripped, {} rejected", rejected.len());
    if !lines.is_empty() {
        assert!(ok > 50, "only {ok} messages parsed");
    }
    let _ = ErrorCode::BRC_BAD_LEN;
}
