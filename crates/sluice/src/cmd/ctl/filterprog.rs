//! `sluice ctl`'s filter-program commands (issue 13): load and unload eBPF
//! programs, write and read their maps, with sluice's experimenter
//! messages ([`sluice_ofp::filterprog`]; semantics in
//! `docs/EXPERIMENTER.md`, "Filter programs").
//!
//! ```text
//! load-filter-prog ID FILE.o             the object in LOAD_FILTER_PROG fragments
//! unload-filter-prog ID
//! update-map ID MAP KEY_HEX VALUE_HEX [KEY_HEX VALUE_HEX ...]
//! update-map --delete ID MAP KEY_HEX [KEY_HEX ...]
//! dump-map ID MAP                        one `key=HEX value=HEX` line per entry
//! ```
//!
//! # Design
//! As for every ctl command, the arguments are turned into messages here
//! before any connection: a bad program id, map name or hex string, keys
//! or values of different sizes, a missing or empty file are errors that
//! name the bad token, and the switch is never contacted. Everything a
//! message decoder on the switch would refuse for its form (the program
//! id, the map name, an update too large for one message) is refused here
//! first, with the codec's own `check()`.
//!
//! A successful load, unload or update has no reply; like every ctl
//! modification it is followed by one barrier, and the errors that arrive
//! before the barrier's reply are the answer. A load is one request sent
//! as several messages: the first fragment refused is its answer (the
//! switch drops the partial object then, so later fragments are refused
//! as a consequence and only counted).
//!
//! `dump-map` prints entries in the order the switch sends them, across
//! all replies of the multipart (`OFPMPF_REPLY_MORE`), lowercase hex
//! without `0x`, so the output can be fed back to `update-map`.

use super::conn::{Conn, SwitchError};
use super::input::Item;
use anyhow::{anyhow, bail, Context, Result};
use sluice_ofp::filterprog::{
    self, map_name_valid, prog_id_valid, DumpMapReply, DumpMapRequest, LoadFilterProg, Refusal,
    UnloadFilterProg, UpdateMap, MAX_MAP_NAME, MAX_MSG_BODY,
};
use sluice_ofp::multipart::{MultipartReply, MultipartReplyBody, MultipartRequestBody};
use std::fmt::Write;

/// Bytes of an object per `LOAD_FILTER_PROG` message: as many as fit.
const FRAGMENT: usize = filterprog::MAX_FRAGMENT;

/// A program id: decimal or `0x` hex, 1 to 0xfffffffe.
pub fn prog_id(cmd: &str, tok: &str) -> Result<u32> {
    let n = match tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => tok.parse().ok(),
    };
    match n {
        Some(id) if prog_id_valid(id) => Ok(id),
        Some(_) => bail!("{cmd}: program id `{tok}` is reserved (ids are 1 to 4294967294)"),
        None => bail!("{cmd}: `{tok}` is not a program id (1 to 4294967294)"),
    }
}

/// A map name: 1 to 64 bytes of `[A-Za-z0-9_.]`.
pub fn map_name(cmd: &str, tok: &str) -> Result<String> {
    if !map_name_valid(tok.as_bytes()) {
        bail!(
            "{cmd}: `{tok}` is not a map name (1 to {MAX_MAP_NAME} characters of A-Z a-z 0-9 _ .)"
        );
    }
    Ok(tok.to_string())
}

/// Bytes from hex: an optional `0x`, then an even number (at least two)
/// of hex digits.
pub fn hex(cmd: &str, what: &str, tok: &str) -> Result<Vec<u8>> {
    let digits = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")).unwrap_or(tok);
    if digits.is_empty() {
        bail!("{cmd}: {what} `{tok}` is empty (give at least one byte as hex)");
    }
    if let Some(c) = digits.chars().find(|c| !c.is_ascii_hexdigit()) {
        bail!("{cmd}: {what} `{tok}` is not hex (`{c}`)");
    }
    if digits.len() % 2 != 0 {
        bail!("{cmd}: {what} `{tok}` has an odd number of hex digits (two per byte)");
    }
    // All ASCII hex digits, so every two-byte slice is a valid number.
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&digits[i..i + 2], 16)
                .map_err(|e| anyhow!("{cmd}: {what} `{tok}`: {e}"))
        })
        .collect()
}

/// Lowercase hex without `0x`.
fn to_hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// A codec refusal of a value built here, as a command-line error.
fn refused(cmd: &str, r: Refusal) -> anyhow::Error {
    anyhow!("{cmd}: {r}")
}

/// `load-filter-prog ID FILE`: the object's fragments (`FILE` `-` is
/// standard input).
pub fn load(cmd: &str, args: &[String]) -> Result<Vec<Item>> {
    let [id, file] = args else {
        bail!("{cmd}: expected ID FILE (an eBPF ELF object), got {} arguments", args.len());
    };
    let id = prog_id(cmd, id)?;
    let object = if file == "-" {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut b)
            .with_context(|| format!("{cmd}: cannot read standard input"))?;
        b
    } else {
        std::fs::read(file).with_context(|| format!("{cmd}: cannot read `{file}`"))?
    };
    if object.is_empty() {
        bail!("{cmd}: `{file}` is empty (expected an eBPF ELF object)");
    }
    let frags = filterprog::fragments(id, &object, FRAGMENT).map_err(|r| refused(cmd, r))?;
    Ok(fragment_items(cmd, id, frags))
}

fn fragment_items(cmd: &str, id: u32, frags: Vec<LoadFilterProg>) -> Vec<Item> {
    let n = frags.len();
    frags
        .into_iter()
        .enumerate()
        .map(|(i, f)| Item {
            label: if n == 1 {
                format!("{cmd} {id}")
            } else {
                format!("{cmd} {id} (fragment {} of {n}, bytes {}..{})", i + 1, f.offset, f.end())
            },
            msg: f.to_message(),
        })
        .collect()
}

/// `unload-filter-prog ID`.
pub fn unload(cmd: &str, args: &[String]) -> Result<Vec<Item>> {
    let [id] = args else {
        bail!("{cmd}: expected ID, got {} arguments", args.len());
    };
    let prog_id = prog_id(cmd, id)?;
    Ok(vec![Item {
        label: format!("{cmd} {prog_id}"),
        msg: UnloadFilterProg { prog_id }.to_message(),
    }])
}

/// `update-map ID MAP KEY VALUE [KEY VALUE ...]`, or with `delete`
/// `update-map --delete ID MAP KEY [KEY ...]`. The first entry sets the
/// key and value sizes; every other must agree.
pub fn update_map(cmd: &str, args: &[String], delete: bool) -> Result<Vec<Item>> {
    let usage = if delete {
        "--delete ID MAP KEY_HEX [KEY_HEX ...]"
    } else {
        "ID MAP KEY_HEX VALUE_HEX [KEY_HEX VALUE_HEX ...]"
    };
    let [id, map, rest @ ..] = args else {
        bail!("{cmd}: expected {usage}");
    };
    let prog_id = prog_id(cmd, id)?;
    let map = map_name(cmd, map)?;
    if rest.is_empty() {
        bail!(
            "{cmd}: missing {}; expected {usage}",
            if delete { "KEY_HEX" } else { "KEY_HEX VALUE_HEX" }
        );
    }
    let step = if delete { 1 } else { 2 };
    if rest.len() % step != 0 {
        let last = &rest[rest.len() - 1];
        bail!("{cmd}: key `{last}` has no value (give KEY_HEX VALUE_HEX pairs)");
    }
    let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(rest.len() / step);
    for pair in rest.chunks(step) {
        let key = hex(cmd, "key", &pair[0])?;
        let value = match pair.get(1) {
            Some(v) => hex(cmd, "value", v)?,
            None => Vec::new(),
        };
        if let Some((k0, v0)) = entries.first() {
            if key.len() != k0.len() {
                bail!(
                    "{cmd}: key `{}` is {} bytes, the first key is {} bytes (all keys of a map have one size)",
                    pair[0],
                    key.len(),
                    k0.len()
                );
            }
            if value.len() != v0.len() {
                bail!(
                    "{cmd}: value `{}` is {} bytes, the first value is {} bytes (all values of a map have one size)",
                    pair[1],
                    value.len(),
                    v0.len()
                );
            }
        }
        entries.push((key, value));
    }
    let size = |b: &[u8], what: &str, tok: &str| {
        u16::try_from(b.len()).map_err(|_| anyhow!("{cmd}: {what} `{tok}` is over 65535 bytes"))
    };
    let key_size = size(&entries[0].0, "key", &rest[0])?;
    let value_size = match rest.get(1).filter(|_| !delete) {
        Some(tok) => size(&entries[0].1, "value", tok)?,
        None => 0,
    };
    let n = entries.len();
    let u = UpdateMap { prog_id, delete, map, key_size, value_size, entries };
    if u.wire_len() > MAX_MSG_BODY {
        bail!(
            "{cmd}: {n} entries take {} bytes, more than one message carries ({MAX_MSG_BODY}); \
             give them in several {cmd} commands",
            u.wire_len()
        );
    }
    u.check().map_err(|r| refused(cmd, r))?;
    let label = if delete {
        format!("{cmd} --delete {prog_id} {} ({n} keys)", u.map)
    } else {
        format!("{cmd} {prog_id} {} ({n} entries)", u.map)
    };
    Ok(vec![Item { label, msg: u.to_message() }])
}

/// `dump-map ID MAP`.
pub fn dump_map_request(cmd: &str, args: &[String]) -> Result<DumpMapRequest> {
    let [id, map] = args else {
        bail!("{cmd}: expected ID MAP, got {} arguments", args.len());
    };
    let req = DumpMapRequest { prog_id: prog_id(cmd, id)?, map: map_name(cmd, map)? };
    req.check().map_err(|r| refused(cmd, r))?;
    Ok(req)
}

/// Send a load's fragments, then one barrier; the first refused fragment
/// is the error.
pub fn load_exec(conn: &mut Conn, items: &[Item]) -> Result<()> {
    let first = conn.send_batch(items.iter().map(|i| &i.msg))?;
    let errors = conn.barrier()?;
    let mut errors = errors.into_iter();
    let Some(reply) = errors.next() else { return Ok(()) };
    let later = errors.len();
    let i = reply.header.xid.wrapping_sub(first) as usize;
    let label = match items.get(i) {
        Some(item) => item.label.clone(),
        None => format!("a request with xid 0x{:x}", reply.header.xid),
    };
    let mut context = format!("{}: the switch rejected {label}", conn.target());
    if later > 0 {
        let _ = write!(context, " (and {later} later fragments with it)");
    }
    Err(SwitchError { context, reply }.into())
}

/// The `key=HEX value=HEX` lines of a `DUMP_MAP` reply (all its parts,
/// joined by the multipart reassembly), in the switch's order.
pub fn dump_lines(what: &str, reply: &MultipartReply) -> Result<String> {
    let MultipartReplyBody::Experimenter(e) = &reply.body else {
        bail!("unexpected reply to {what}: not an experimenter multipart");
    };
    let replies = match DumpMapReply::from_multipart(e) {
        None => bail!(
            "unexpected reply to {what}: experimenter 0x{:08x} exp_type {}",
            e.experimenter,
            e.exp_type
        ),
        Some(Err(r)) => bail!("bad reply to {what}: {r}"),
        Some(Ok(r)) => r,
    };
    let mut out = String::new();
    for r in &replies {
        for (k, v) in &r.map.entries {
            if !out.is_empty() {
                out.push('\n');
            }
            let _ = write!(out, "key={} value={}", to_hex(k), to_hex(v));
        }
    }
    Ok(out)
}

/// Ask for a map and print its entries.
pub fn dump_exec(conn: &mut Conn, req: &DumpMapRequest) -> Result<()> {
    let what = format!("dump-map {} {}", req.prog_id, req.map);
    let body = MultipartRequestBody::Experimenter(req.to_multipart());
    let (_, reply) = conn.multipart(body, &what)?;
    let lines = dump_lines(&what, &reply).map_err(|e| anyhow!("{}: {e}", conn.target()))?;
    if !lines.is_empty() {
        super::emit(&lines)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_ofp::filterprog::{split_dump, FilterMsg, MapBlock};
    use sluice_ofp::message::Message;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn err<T: std::fmt::Debug>(r: Result<T>) -> String {
        format!("{:#}", r.expect_err("an error"))
    }

    fn decoded(m: &Message) -> FilterMsg {
        let Message::Experimenter(e) = m else { panic!("{m:?}") };
        FilterMsg::from_experimenter(e).expect("sluice's").expect("decodes")
    }

    #[test]
    fn program_ids() {
        assert_eq!(prog_id("x", "7").unwrap(), 7);
        assert_eq!(prog_id("x", "0x10").unwrap(), 16);
        assert_eq!(prog_id("x", "4294967294").unwrap(), 0xffff_fffe);
        assert_eq!(
            err(prog_id("x", "0")),
            "x: program id `0` is reserved (ids are 1 to 4294967294)"
        );
        assert!(err(prog_id("x", "0xffffffff")).contains("`0xffffffff` is reserved"));
        assert_eq!(err(prog_id("x", "seven")), "x: `seven` is not a program id (1 to 4294967294)");
        assert!(err(prog_id("x", "4294967296")).contains("`4294967296` is not"));
        assert!(err(prog_id("x", "-1")).contains("`-1` is not"));
    }

    #[test]
    fn hex_strings() {
        assert_eq!(hex("c", "key", "0a0B").unwrap(), [0x0a, 0x0b]);
        assert_eq!(hex("c", "key", "0x00000001").unwrap(), [0, 0, 0, 1]);
        assert_eq!(hex("c", "key", "0X7f").unwrap(), [0x7f]);
        assert_eq!(
            err(hex("c", "key", "0x123")),
            "c: key `0x123` has an odd number of hex digits (two per byte)"
        );
        assert_eq!(err(hex("c", "value", "12zz")), "c: value `12zz` is not hex (`z`)");
        assert!(err(hex("c", "key", "0x")).contains("`0x` is empty"));
        assert!(err(hex("c", "key", "é1")).contains("not hex"));
        assert_eq!(to_hex(&[0, 0xab, 0x10]), "00ab10");
    }

    #[test]
    fn updates_take_their_sizes_from_the_first_pair() {
        let items = update_map(
            "update-map",
            &s(&["7", "budget", "01000000", "0x03", "02000000", "ff"]),
            false,
        )
        .unwrap();
        assert_eq!(items.len(), 1);
        let FilterMsg::UpdateMap(u) = decoded(&items[0].msg) else { panic!() };
        assert_eq!((u.prog_id, u.delete, u.map.as_str()), (7, false, "budget"));
        assert_eq!((u.key_size, u.value_size), (4, 1));
        assert_eq!(u.entries, [(vec![1, 0, 0, 0], vec![3]), (vec![2, 0, 0, 0], vec![0xff])]);

        let items =
            update_map("update-map", &s(&["7", "conns", "0a000001", "0a000002"]), true).unwrap();
        let FilterMsg::UpdateMap(u) = decoded(&items[0].msg) else { panic!() };
        assert!(u.delete);
        assert_eq!((u.key_size, u.value_size, u.entries.len()), (4, 0, 2));
        assert!(u.entries.iter().all(|(_, v)| v.is_empty()));
    }

    #[test]
    fn update_errors_name_the_token() {
        let e = |a: &[&str], d: bool| err(update_map("update-map", &s(a), d));
        assert!(e(&["7", "m", "0102", "aa", "010203", "bb"], false)
            .contains("key `010203` is 3 bytes, the first key is 2 bytes"));
        assert!(e(&["7", "m", "0102", "aa", "0103", "bbcc"], false)
            .contains("value `bbcc` is 2 bytes, the first value is 1 bytes"));
        assert!(e(&["7", "m", "0102", "aa", "0103"], false).contains("key `0103` has no value"));
        assert!(e(&["7", "m", "0102", "a"], false).contains("value `a` has an odd number"));
        assert!(e(&["7", "m"], false).contains("missing KEY_HEX VALUE_HEX"));
        assert!(e(&["7", "m"], true).contains("missing KEY_HEX"));
        assert!(e(&["7"], false).contains("expected ID MAP"));
        assert!(e(&["0", "m", "01", "02"], false).contains("`0` is reserved"));
        assert!(e(&["7", "bad-name", "01", "02"], false).contains("`bad-name` is not a map name"));
        assert!(e(&["7", "m", "01", "02", "0304"], true).contains("key `0304` is 2 bytes"));
        // More than one message carries.
        let mut big = vec!["7".to_string(), "m".to_string()];
        for i in 0..9000u64 {
            big.push(format!("{i:016x}"));
        }
        let e = err(update_map("update-map", &big, true));
        assert!(e.contains("9000 entries take"), "{e}");
    }

    #[test]
    fn loads_are_fragmented_in_order() {
        let dir = std::env::temp_dir().join(format!("sluice-ctl-fp-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let obj = dir.join("big.o");
        let bytes: Vec<u8> = (0..(FRAGMENT * 2 + 10)).map(|i| i as u8).collect();
        std::fs::write(&obj, &bytes).unwrap();
        let empty = dir.join("empty.o");
        std::fs::write(&empty, b"").unwrap();
        let path = obj.display().to_string();
        let items = load("load-filter-prog", &s(&["9", &path])).unwrap();
        let e = err(load("load-filter-prog", &s(&["9", &empty.display().to_string()])));
        let missing = err(load("load-filter-prog", &s(&["9", "/nonexistent/x.o"])));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(items.len(), 3);
        let mut joined = Vec::new();
        for (i, it) in items.iter().enumerate() {
            let FilterMsg::Load(f) = decoded(&it.msg) else { panic!() };
            assert_eq!((f.prog_id, f.more, f.offset as usize), (9, i < 2, joined.len()));
            joined.extend_from_slice(&f.bytes);
        }
        assert_eq!(joined, bytes);
        assert!(items[1].label.contains("fragment 2 of 3"), "{}", items[1].label);
        assert!(e.contains("is empty"), "{e}");
        assert!(missing.contains("cannot read `/nonexistent/x.o`"), "{missing}");
        assert!(err(load("load-filter-prog", &s(&["9"]))).contains("expected ID FILE"));
        assert!(
            err(load("load-filter-prog", &s(&["x", &path]))).contains("`x` is not a program id")
        );
    }

    #[test]
    fn unload_and_dump_requests() {
        let items = unload("unload-filter-prog", &s(&["0x2a"])).unwrap();
        assert_eq!(decoded(&items[0].msg), FilterMsg::Unload(UnloadFilterProg { prog_id: 42 }));
        assert!(err(unload("unload-filter-prog", &s(&[]))).contains("expected ID"));
        let r = dump_map_request("dump-map", &s(&["7", "budget"])).unwrap();
        assert_eq!(r, DumpMapRequest { prog_id: 7, map: "budget".into() });
        assert!(err(dump_map_request("dump-map", &s(&["7"]))).contains("expected ID MAP"));
    }

    #[test]
    fn dumps_print_every_part_in_order() {
        let entries: Vec<(Vec<u8>, Vec<u8>)> =
            (0..100u32).map(|i| (i.to_be_bytes().to_vec(), vec![i as u8, 0xab])).collect();
        let block = MapBlock { name: "m".into(), key_size: 4, value_size: 2, entries };
        let parts = split_dump(7, block, 200);
        assert!(parts.len() > 1);
        // What multipart reassembly makes of them: the bodies joined.
        let mut data = Vec::new();
        for p in &parts {
            data.extend(p.encode());
        }
        let joined = MultipartReply {
            flags: 0,
            body: MultipartReplyBody::Experimenter(sluice_ofp::multipart::MultipartExperimenter {
                experimenter: sluice_ofp::consts::SLUICE_EXPERIMENTER_ID,
                exp_type: filterprog::exp_type::DUMP_MAP,
                data,
            }),
        };
        let text = dump_lines("d", &joined).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 100);
        assert_eq!(lines[0], "key=00000000 value=00ab");
        assert_eq!(lines[99], "key=00000063 value=63ab");
        let other = MultipartReply { flags: 0, body: MultipartReplyBody::Table(vec![]) };
        assert!(dump_lines("d", &other).is_err());
        let MultipartReplyBody::Experimenter(mut e) = joined.body else { panic!() };
        e.experimenter = 0x2320;
        let foreign = MultipartReply { flags: 0, body: MultipartReplyBody::Experimenter(e) };
        assert!(err(dump_lines("d", &foreign)).contains("experimenter 0x00002320"));
    }
}
