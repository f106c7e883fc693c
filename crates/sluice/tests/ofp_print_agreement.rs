//! Printer agreement: for every message of every committed fixture, run
//! the real `ovs-ofctl ofp-print HEX` and `sluice ofp-print HEX` and
//! compare what both print.
//!
//! Normalisation: OVS's log lines are dropped; the text is split into
//! whitespace-separated tokens, each split on commas outside parentheses.
//! A token `key=value` is a field; a token after `actions=` (until the next
//! `key=value`) is an action. For every key both printers use, the sets of
//! values must be equal; where both print actions, the sets of action
//! tokens must be equal; a `***decode error: X***` must name the same X.
//! Tokens only one side prints are not compared (ovs-ofctl leaves out
//! defaults and dissects packets; sluice prints every field).
//!
//! Deliberate differences are listed in [`KEY_DIFFERENCES`] and
//! [`DECODE_DIFFERENCES`] with their reasons. Fails (does not skip) when
//! ovs-ofctl is missing.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// (fixture, key, reason): values of `key` in `fixture` are not compared.
const KEY_DIFFERENCES: &[(&str, &str, &str)] = &[];

/// (fixture, message type, reason): ovs-ofctl reports a decode error, sluice
/// decodes. The type is that of the message itself, or of the request an
/// `OFPT_ERROR` carries.
const DECODE_DIFFERENCES: &[(&str, u8, &str)] = &[
    (
        "raw-errors",
        4,
        "an unknown experimenter id: sluice's codec keeps experimenter payloads verbatim and its \
         registry rejects them later with OFPBRC_BAD_EXPERIMENTER, the code OVS answered with \
         (ovs-ofctl calls it OFPBRC_BAD_VENDOR)",
    ),
    (
        "raw-errors",
        14,
        "a match without its prerequisites: the codec decodes it and Match::check_prereqs answers \
         OFPBMC_BAD_PREREQ when the switch validates the flow-mod, as OVS did",
    ),
];

#[derive(Default, Debug)]
struct Tokens {
    kv: BTreeMap<String, BTreeSet<String>>,
    actions: BTreeSet<String>,
    decode_error: Option<String>,
}

/// Split on commas that are not inside parentheses.
fn split_commas(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out.into_iter().filter(|t| !t.is_empty()).collect()
}

fn is_ovs_log_line(l: &str) -> bool {
    let b = l.as_bytes();
    b.len() > 20 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && l.contains('|')
}

/// Record `key=value`, without the parentheses and colon of `(xid=0x2):`.
fn add(t: &mut Tokens, k: &str, v: &str) {
    let k = k.trim_start_matches('(');
    let v = v.trim_end_matches([')', ':']);
    t.kv.entry(k.to_string()).or_default().insert(v.to_string());
}

fn tokens(text: &str) -> Tokens {
    let mut t = Tokens::default();
    for line in text.lines().filter(|l| !is_ovs_log_line(l)) {
        if let Some(i) = line.find("***decode error: ") {
            let rest = &line[i + 17..];
            t.decode_error = rest.split("***").next().map(str::to_string);
            continue;
        }
        // Hex dump lines carry no fields.
        if line.len() > 10
            && line.as_bytes()[..8].iter().all(u8::is_ascii_hexdigit)
            && line[8..].starts_with("  ")
        {
            continue;
        }
        let mut in_actions = false;
        for word in line.split_whitespace() {
            for item in split_commas(word) {
                if let Some(i) = item.find("actions=") {
                    let (before, after) = (&item[..i], &item[i + 8..]);
                    if let Some((k, v)) = before.split_once('=') {
                        add(&mut t, k, v);
                    }
                    if !after.is_empty() {
                        t.actions.insert(after.to_string());
                    }
                    in_actions = true;
                } else if let Some((k, v)) = item.split_once('=') {
                    add(&mut t, k, v);
                    in_actions = false;
                } else if in_actions {
                    t.actions.insert(item.to_string());
                }
            }
        }
    }
    t
}

fn ovs_ofctl_print(bytes: &[u8]) -> String {
    let hex = support::hex_encode(bytes);
    // One command-line argument may not exceed 128 KiB: large messages go
    // through a file with `ofp-parse`, which prints the same way.
    let out = if hex.len() < 100_000 {
        Command::new("ovs-ofctl").args(["ofp-print", &hex]).output()
    } else {
        // Tests run on several threads of one process: one file per call.
        static SERIAL: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("sluice-agree-{}-{n}.bin", std::process::id()));
        std::fs::write(&path, bytes).expect("write temp file");
        let o = Command::new("ovs-ofctl").args(["ofp-parse", &path.display().to_string()]).output();
        let _ = std::fs::remove_file(&path);
        o
    };
    let out = out.unwrap_or_else(|e| {
        panic!("cannot run ovs-ofctl (apt-get install openvswitch-common): {e}")
    });
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn sluice_print(bytes: &[u8]) -> String {
    let hex = support::hex_encode(bytes);
    // Split into arguments of at most 64 KiB; sluice concatenates them.
    let args: Vec<&str> =
        hex.as_bytes().chunks(65536).map(|c| std::str::from_utf8(c).unwrap_or("")).collect();
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("ofp-print")
        .args(&args)
        .output()
        .expect("run sluice");
    assert!(
        out.status.success(),
        "sluice ofp-print failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn sluice_and_ovs_ofctl_print_the_same_fields() {
    support::check_tools().unwrap_or_else(|e| panic!("{e}"));
    let fixtures = support::load_fixtures().expect("fixtures");
    let (mut keys_compared, mut actions_compared, mut messages) = (0usize, 0usize, 0usize);
    let mut failures = Vec::new();
    let mut seen_types = BTreeSet::new();
    for f in &fixtures {
        for (i, (_, bytes)) in f.messages.iter().enumerate() {
            messages += 1;
            let ovs_text = ovs_ofctl_print(bytes);
            let our_text = sluice_print(bytes);
            seen_types.insert(bytes[1]);
            assert!(!our_text.trim().is_empty(), "{} #{i}: sluice printed nothing", f.name);
            let (ovs, ours) = (tokens(&ovs_text), tokens(&our_text));
            let ctx = || {
                format!(
                    "{} #{i}\n  ovs-ofctl: {}\n  sluice:    {}",
                    f.name,
                    ovs_text.trim(),
                    our_text.trim()
                )
            };
            match (&ovs.decode_error, &ours.decode_error) {
                (Some(a), Some(b)) if a != b => {
                    failures.push(format!("decode errors differ ({a} vs {b}): {}", ctx()))
                }
                (Some(_), None) => {
                    let ty =
                        if bytes[1] == 1 { bytes.get(13).copied().unwrap_or(1) } else { bytes[1] };
                    if !DECODE_DIFFERENCES.iter().any(|(n, t, _)| *n == f.name && *t == ty) {
                        failures.push(format!("only ovs-ofctl reports a decode error: {}", ctx()));
                    }
                }
                (None, Some(_)) => {
                    failures.push(format!("only sluice reports a decode error: {}", ctx()))
                }
                _ => {}
            }
            for (k, ov) in &ovs.kv {
                let Some(sv) = ours.kv.get(k) else { continue };
                if KEY_DIFFERENCES.iter().any(|(n, key, _)| *n == f.name && key == k) {
                    continue;
                }
                keys_compared += 1;
                if ov != sv {
                    failures.push(format!("{k}: ovs-ofctl {ov:?} vs sluice {sv:?}: {}", ctx()));
                }
            }
            if !ovs.actions.is_empty() && !ours.actions.is_empty() {
                actions_compared += 1;
                if ovs.actions != ours.actions {
                    failures.push(format!(
                        "actions: ovs-ofctl {:?} vs sluice {:?}: {}",
                        ovs.actions,
                        ours.actions,
                        ctx()
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} disagreements:\n{}", failures.len(), failures.join("\n\n"));
    eprintln!(
        "{messages} messages, {keys_compared} key comparisons, {actions_compared} action lists"
    );
    // The comparison must have had something to compare.
    assert!(keys_compared > 400, "only {keys_compared} keys compared");
    assert!(actions_compared >= 25, "only {actions_compared} action lists compared");
    assert!(seen_types.len() >= 28, "message types seen: {seen_types:?}");
}

#[test]
fn normaliser_splits_fields_and_actions() {
    let t = tokens(
        "OFPT_FLOW_MOD (OF1.3) (xid=0x2): ADD table:1 priority=100,tcp,nw_src=10.0.0.0/8 actions=set_field:10.1.1.1->ip_dst,write_actions(output:3,group:1),output:2",
    );
    assert_eq!(
        t.kv.get("priority").map(|v| v.iter().cloned().collect::<Vec<_>>()),
        Some(vec!["100".to_string()])
    );
    assert!(t.kv.contains_key("nw_src") && t.kv.contains_key("xid"));
    assert_eq!(t.actions.len(), 3, "{:?}", t.actions);
    let t = tokens(" group_id=2,type=select,bucket=weight:10,actions=output:1,bucket=weight:20,actions=output:2");
    assert_eq!(t.kv["bucket"].len(), 2);
    assert_eq!(t.actions.len(), 2);
    let t = tokens("2026-11-21T01:43:29Z|00001|ofp_msgs|WARN|x=1\n***decode error: OFPBRC_BAD_TYPE***\n00000000  04 28 00 08 00 00 00 50-   |.(.....P  |");
    assert_eq!(t.decode_error.as_deref(), Some("OFPBRC_BAD_TYPE"));
    assert!(t.kv.is_empty());
}

/// Bundle messages (ONF extension 230): every control type with every
/// flag combination, an error carrying its request, and an ADD carrying
/// a flow-mod of the fixtures, printed by both. Controls and errors must
/// print exactly alike; the ADD's lines must agree on every field both
/// print.
#[test]
fn bundle_messages_print_as_ovs_ofctl_does() {
    use sluice_ofp::bundle::{bundle_error, err, BundleAdd, BundleCtrl};
    support::check_tools().unwrap_or_else(|e| panic!("{e}"));
    let mut exact = Vec::new();
    for ctrl_type in 0..8u16 {
        for flags in 0..4u16 {
            let c = BundleCtrl {
                bundle_id: 0x10 + u32::from(ctrl_type),
                ctrl_type,
                flags,
                properties: vec![],
            };
            exact.push(c.to_message().encode(7));
        }
    }
    let commit = BundleCtrl { bundle_id: 2, ctrl_type: 4, flags: 1, properties: vec![] };
    for code in [err::BAD_ID, err::BAD_FLAGS, err::MSG_FAILED, err::OUT_OF_BUNDLES] {
        exact.push(bundle_error(code, &commit.to_message().encode(9)).encode(9));
    }
    for bytes in &exact {
        let (ovs, ours) = (ovs_ofctl_print(bytes), sluice_print(bytes));
        assert_eq!(ours.trim(), ovs.trim(), "{}", support::hex_encode(bytes));
    }

    let fixtures = support::load_fixtures().expect("fixtures");
    let (_, flow_mod) = fixtures
        .iter()
        .find(|f| f.name == "add-flow-udp")
        .and_then(|f| f.messages.iter().find(|(_, b)| b[1] == 14))
        .expect("the add-flow-udp fixture's flow-mod");
    let xid = u32::from_be_bytes(flow_mod[4..8].try_into().unwrap());
    let add = BundleAdd { bundle_id: 1, flags: 3, message: flow_mod.clone(), ..Default::default() };
    let bytes = add.to_message().encode(xid);
    let (ovs_text, our_text) = (ovs_ofctl_print(&bytes), sluice_print(&bytes));
    let (ovs, ours) = (tokens(&ovs_text), tokens(&our_text));
    assert!(
        ovs_text.starts_with("ONFT_BUNDLE_ADD_MESSAGE") && ovs.kv.contains_key("tp_dst"),
        "{ovs_text}"
    );
    for (k, v) in &ovs.kv {
        assert_eq!(ours.kv.get(k), Some(v), "{k}:\n ovs-ofctl: {ovs_text}\n sluice: {our_text}");
    }
    assert_eq!(ovs.actions, ours.actions, "\n ovs-ofctl: {ovs_text}\n sluice: {our_text}");
}
