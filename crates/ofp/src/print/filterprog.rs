//! sluice's filter-program messages, `DUMP_MAP` multiparts and
//! experimenter errors ([`crate::filterprog`]) for `sluice ofp-print`:
//!
//! ```text
//! OFPT_EXPERIMENTER (OF1.3) (xid=0x1): SLIC LOAD_FILTER_PROG prog=7 offset=0 total=5120 more fragment=4000 bytes
//! OFPT_EXPERIMENTER (OF1.3) (xid=0x2): SLIC UPDATE_MAP prog=7 map=conns delete=false key_size=4 value_size=8 entries=1
//!  key=0x0a000001 value=0x0000000000000005
//! OFPT_ERROR (OF1.3) (xid=0x3): SLICFPC_PROG_REJECTED: insn 12: invalid mem access 'scalar'
//! ```
//!
//! Maps (`MAPS_REPORT`, `DUMP_MAP` replies) print a line per map
//! (`map=NAME key_size=K value_size=V entries=N`) and one per entry
//! (`map=NAME key=HEX value=HEX`). A body that does not decode prints the
//! decoder's refusal and a hex dump.

use super::fields::hex_bytes;
use super::hex_dump;
use crate::consts::SLUICE_EXPERIMENTER_ID;
use crate::filterprog::{
    err_name, error_text, exp_type, DumpMapReply, DumpMapRequest, FilterMsg, MapBlock, Refusal,
};
use crate::message::ExperimenterMsg;
use crate::multipart::MultipartExperimenter;
use core::fmt::Write;

/// `SLIC NAME`, then the decoded body or the refusal and a hex dump.
fn body<T>(
    ty: u32,
    data: &[u8],
    decoded: Result<T, Refusal>,
    f: impl FnOnce(&T) -> String,
) -> String {
    let name = exp_type::name(ty).unwrap_or("UNKNOWN");
    match decoded {
        Ok(v) => format!(" SLIC {name}{}", f(&v)),
        Err(e) => {
            let mut s = format!(" SLIC {name} ***decode error: {e}***");
            if !data.is_empty() {
                let _ = write!(s, "\n{}", hex_dump(data));
            }
            s
        }
    }
}

/// A map's line and its entries' lines.
fn map_lines(s: &mut String, b: &MapBlock) {
    let _ = write!(
        s,
        "\n map={} key_size={} value_size={} entries={}",
        b.name,
        b.key_size,
        b.value_size,
        b.entries.len()
    );
    for (k, v) in &b.entries {
        let _ = write!(s, "\n map={} key={} value={}", b.name, hex_bytes(k), hex_bytes(v));
    }
}

/// The body of an `OFPT_EXPERIMENTER` message of sluice's filter-program
/// `exp_type`s (2, 3, 4, 6); `None` for any other.
pub fn message(e: &ExperimenterMsg) -> Option<String> {
    let decoded = FilterMsg::from_experimenter(e)?;
    Some(body(e.exp_type, &e.data, decoded, |m| {
        let mut s = String::new();
        match m {
            FilterMsg::Load(l) => {
                let _ = write!(s, " prog={} offset={} total={}", l.prog_id, l.offset, l.total_len);
                if l.more {
                    s.push_str(" more");
                }
                let _ = write!(s, " fragment={} bytes", l.bytes.len());
            }
            FilterMsg::Unload(u) => {
                let _ = write!(s, " prog={}", u.prog_id);
            }
            FilterMsg::UpdateMap(u) => {
                let _ = write!(
                    s,
                    " prog={} map={} delete={} key_size={} value_size={} entries={}",
                    u.prog_id,
                    u.map,
                    u.delete,
                    u.key_size,
                    u.value_size,
                    u.entries.len()
                );
                for (k, v) in &u.entries {
                    if u.delete {
                        let _ = write!(s, "\n key={}", hex_bytes(k));
                    } else {
                        let _ = write!(s, "\n key={} value={}", hex_bytes(k), hex_bytes(v));
                    }
                }
            }
            FilterMsg::MapsReport(r) => {
                let _ =
                    write!(s, " prog={} table={} cookie=0x{:x}", r.prog_id, r.table_id, r.cookie);
                if r.more {
                    s.push_str(" more");
                }
                let _ = write!(s, " maps={}", r.maps.len());
                for b in &r.maps {
                    map_lines(&mut s, b);
                }
            }
        }
        s
    }))
}

/// The body of a `DUMP_MAP` multipart request (`reply == false`) or reply;
/// `None` for any other experimenter multipart.
pub fn multipart(e: &MultipartExperimenter, reply: bool) -> Option<String> {
    if reply {
        let decoded = DumpMapReply::from_multipart(e)?;
        Some(body(e.exp_type, &e.data, decoded, |replies| {
            let mut s = String::new();
            for (i, r) in replies.iter().enumerate() {
                if i > 0 {
                    s.push_str("\n SLIC DUMP_MAP");
                }
                let _ = write!(s, " prog={}", r.prog_id);
                map_lines(&mut s, &r.map);
            }
            s
        }))
    } else {
        let decoded = DumpMapRequest::from_multipart(e)?;
        Some(body(e.exp_type, &e.data, decoded, |r| format!(" prog={} map={}", r.prog_id, r.map)))
    }
}

/// The body of an `OFPET_EXPERIMENTER` error of sluice's id with a known
/// code: `SLICFPC_NAME: text` and a hex dump of the echoed request;
/// `None` for any other.
pub fn error(exp_code: u16, experimenter: u32, data: &[u8]) -> Option<String> {
    if experimenter != SLUICE_EXPERIMENTER_ID {
        return None;
    }
    let name = err_name(exp_code)?;
    let (text, request) = error_text(data);
    let mut s = format!(" {name}: {text}");
    if !request.is_empty() {
        let _ = write!(s, "\n{}", hex_dump(request));
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use crate::filterprog::*;
    use crate::message::{ErrorMsg, Message};
    use crate::print::{print_hex_stream, print_message};

    fn block(name: &str, entries: &[(&[u8], &[u8])]) -> MapBlock {
        MapBlock {
            name: name.into(),
            key_size: entries.first().map_or(4, |e| e.0.len() as u16),
            value_size: entries.first().map_or(8, |e| e.1.len() as u16),
            entries: entries.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect(),
        }
    }

    /// Each printed message also survives bytes and `print_hex_stream`.
    fn printed(xid: u32, m: &Message) -> String {
        let text = print_message(xid, m);
        assert_eq!(print_hex_stream(&m.encode(xid)), text);
        text
    }

    #[test]
    fn messages_print_readably() {
        let load = LoadFilterProg {
            prog_id: 7,
            more: true,
            offset: 0,
            total_len: 5120,
            bytes: vec![0x7f; 4000],
        };
        assert_eq!(
            printed(1, &load.to_message()),
            "OFPT_EXPERIMENTER (OF1.3) (xid=0x1): SLIC LOAD_FILTER_PROG prog=7 offset=0 total=5120 more fragment=4000 bytes"
        );
        let last = LoadFilterProg { more: false, offset: 4000, bytes: vec![0; 1120], ..load };
        assert_eq!(
            printed(1, &last.to_message()),
            "OFPT_EXPERIMENTER (OF1.3) (xid=0x1): SLIC LOAD_FILTER_PROG prog=7 offset=4000 total=5120 fragment=1120 bytes"
        );
        assert_eq!(
            printed(2, &UnloadFilterProg { prog_id: 9 }.to_message()),
            "OFPT_EXPERIMENTER (OF1.3) (xid=0x2): SLIC UNLOAD_FILTER_PROG prog=9"
        );
        let update = UpdateMap {
            prog_id: 7,
            delete: false,
            map: "conns".into(),
            key_size: 4,
            value_size: 8,
            entries: vec![
                (vec![10, 0, 0, 1], vec![0, 0, 0, 0, 0, 0, 0, 5]),
                (vec![0; 4], vec![1; 8]),
            ],
        };
        assert_eq!(
            printed(3, &update.to_message()),
            "OFPT_EXPERIMENTER (OF1.3) (xid=0x3): SLIC UPDATE_MAP prog=7 map=conns delete=false key_size=4 value_size=8 entries=2\n \
             key=0x0a000001 value=0x0000000000000005\n \
             key=0x00000000 value=0x0101010101010101"
        );
        let delete = UpdateMap {
            delete: true,
            value_size: 0,
            entries: vec![(vec![10, 0, 0, 1], vec![])],
            ..update
        };
        assert_eq!(
            printed(4, &delete.to_message()),
            "OFPT_EXPERIMENTER (OF1.3) (xid=0x4): SLIC UPDATE_MAP prog=7 map=conns delete=true key_size=4 value_size=0 entries=1\n \
             key=0x0a000001"
        );
        let report = MapsReport {
            prog_id: 7,
            table_id: 2,
            cookie: 0xabc,
            more: true,
            maps: vec![block("conns", &[(&[1, 2], &[3])]), block("empty", &[])],
        };
        assert_eq!(
            printed(5, &report.to_message()),
            "OFPT_EXPERIMENTER (OF1.3) (xid=0x5): SLIC MAPS_REPORT prog=7 table=2 cookie=0xabc more maps=2\n \
             map=conns key_size=2 value_size=1 entries=1\n \
             map=conns key=0x0102 value=0x03\n \
             map=empty key_size=4 value_size=8 entries=0"
        );
    }

    #[test]
    fn dump_map_prints_readably() {
        let req = DumpMapRequest { prog_id: 7, map: "conns".into() };
        assert_eq!(
            printed(6, &req.to_message()),
            "OFPST_EXPERIMENTER request (OF1.3) (xid=0x6): SLIC DUMP_MAP prog=7 map=conns"
        );
        let reply = DumpMapReply { prog_id: 7, map: block("conns", &[(&[1], &[2, 3])]) };
        assert_eq!(
            printed(7, &reply.to_message(true)),
            "OFPST_EXPERIMENTER reply (OF1.3) (xid=0x7): flags=[more] SLIC DUMP_MAP prog=7\n \
             map=conns key_size=1 value_size=2 entries=1\n \
             map=conns key=0x01 value=0x0203"
        );
        // Two replies reassembled (their bodies back to back).
        let mut mp = reply.to_multipart();
        mp.data.extend(DumpMapReply { prog_id: 7, map: block("conns", &[]) }.encode());
        let text = super::multipart(&mp, true).unwrap();
        assert!(
            text.ends_with("\n SLIC DUMP_MAP prog=7\n map=conns key_size=4 value_size=8 entries=0"),
            "{text}"
        );
        // Other multiparts are not ours.
        let other = crate::multipart::MultipartExperimenter { exp_type: 4, ..mp.clone() };
        assert_eq!(super::multipart(&other, true), None);
    }

    #[test]
    fn undecodable_bodies_print_the_refusal_and_the_bytes() {
        let m = Message::Experimenter(crate::message::ExperimenterMsg {
            experimenter: crate::consts::SLUICE_EXPERIMENTER_ID,
            exp_type: exp_type::UNLOAD_FILTER_PROG,
            data: vec![0, 0, 0, 0, 0, 0, 0, 0],
        });
        assert_eq!(
            printed(8, &m),
            "OFPT_EXPERIMENTER (OF1.3) (xid=0x8): SLIC UNLOAD_FILTER_PROG ***decode error: \
             SLICFPC_BAD_PROG_ID: program id 0x0 is reserved***\n\
             00000000  00 00 00 00 00 00 00 00-                        |........        |"
        );
        let m = Message::Experimenter(crate::message::ExperimenterMsg {
            experimenter: crate::consts::SLUICE_EXPERIMENTER_ID,
            exp_type: exp_type::UPDATE_MAP,
            data: vec![],
        });
        assert_eq!(
            printed(8, &m),
            "OFPT_EXPERIMENTER (OF1.3) (xid=0x8): SLIC UPDATE_MAP ***decode error: OFPBRC_BAD_LEN***"
        );
        // PROBE and unknown exp_types keep the generic form.
        let m = Message::Experimenter(crate::message::ExperimenterMsg {
            experimenter: crate::consts::SLUICE_EXPERIMENTER_ID,
            exp_type: 9,
            data: vec![1],
        });
        assert!(printed(8, &m).starts_with(
            "OFPT_EXPERIMENTER (OF1.3) (xid=0x8): experimenter=0x534c4943 exp_type=9\n"
        ));
    }

    #[test]
    fn experimenter_errors_print_their_name_and_text() {
        let req = UnloadFilterProg { prog_id: 7 }.to_message().encode(3);
        let e = error_msg(err::PROG_REJECTED, "insn 12: invalid mem access 'scalar'", &req);
        let text = printed(3, &e);
        assert!(
            text.starts_with(
                "OFPT_ERROR (OF1.3) (xid=0x3): SLICFPC_PROG_REJECTED: insn 12: invalid mem access 'scalar'\n00000000  04 04 00 18"
            ),
            "{text}"
        );
        // Unknown codes and other experimenters: the generic form.
        let e = Message::Error(ErrorMsg::Experimenter {
            exp_type: 99,
            experimenter: crate::consts::SLUICE_EXPERIMENTER_ID,
            data: vec![],
        });
        assert_eq!(
            printed(3, &e),
            "OFPT_ERROR (OF1.3) (xid=0x3): OFPET_EXPERIMENTER exp_type=99 experimenter=0x534c4943"
        );
        assert_eq!(super::error(err::PROG_REJECTED, 0x2320, b"x"), None);
    }
}
