//! What each captured command must contain, written out by hand from the
//! command line in `scenario.rs` (not from the codec's output): the match
//! fields, priorities, actions, group buckets, meter bands, and the values
//! OVS answers with. Used on the committed fixtures and on fresh captures.
//!
//! Every message must also decode and re-encode to identical bytes
//! ([`decode_all`]); the only message allowed not to decode is the one
//! deliberately invalid request of `raw-errors`.

use super::{hex_decode, hex_encode, scenario, Dir, Fixture};
use sluice_ofp::action::Action;
use sluice_ofp::consts::{group_id as gid, port_no, OFP_NO_BUFFER};
use sluice_ofp::experimenter::{Kind, Payload, Registry};
use sluice_ofp::group::{Bucket, GroupType};
use sluice_ofp::instruction::Instruction;
use sluice_ofp::message::{
    controller_role, flow_mod_command as fmc, flow_removed_reason, group_mod_command as gmc,
    meter_mod_command as mmc, packet_in_reason, port_reason, ErrorMsg, FlowMod, Message,
};
use sluice_ofp::meter::{flags as mf, MeterBand};
use sluice_ofp::multipart::{
    MultipartReplyBody as Rep, MultipartRequestBody as Req, OFPMPF_REPLY_MORE,
};
use sluice_ofp::oxm::{FieldId as F, Match, Oxm};
use sluice_ofp::ErrorCode;

/// One decoded message of a fixture.
pub struct Decoded {
    pub dir: Dir,
    pub bytes: Vec<u8>,
    pub result: Result<(u32, Message), ErrorCode>,
}

/// Decode every message; panic unless each decodable one re-encodes to
/// the same bytes.
pub fn decode_all(f: &Fixture) -> Vec<Decoded> {
    f.messages
        .iter()
        .enumerate()
        .map(|(i, (dir, bytes))| {
            let result = Message::parse(bytes);
            if let Ok((xid, m)) = &result {
                assert_eq!(
                    hex_encode(&m.encode(*xid)),
                    hex_encode(bytes),
                    "{}: message {i} re-encodes differently\n{m:?}",
                    f.name
                );
            }
            Decoded { dir: *dir, bytes: bytes.clone(), result }
        })
        .collect()
}

fn ok(d: &[Decoded], dir: Dir) -> impl Iterator<Item = (u32, &Message)> {
    d.iter()
        .filter(move |x| x.dir == dir)
        .filter_map(|x| x.result.as_ref().ok().map(|(xid, m)| (*xid, m)))
}

fn sent(d: &[Decoded]) -> Vec<&Message> {
    ok(d, Dir::ToSwitch).map(|(_, m)| m).collect()
}

fn got(d: &[Decoded]) -> Vec<&Message> {
    ok(d, Dir::FromSwitch).map(|(_, m)| m).collect()
}

fn flow_mod<'a>(name: &str, d: &'a [Decoded]) -> &'a FlowMod {
    let fms: Vec<&FlowMod> = sent(d)
        .into_iter()
        .filter_map(|m| if let Message::FlowMod(f) = m { Some(f) } else { None })
        .collect();
    assert_eq!(fms.len(), 1, "{name}: expected one flow-mod");
    fms[0]
}

fn no_errors(name: &str, d: &[Decoded]) {
    for m in got(d) {
        assert!(!matches!(m, Message::Error(_)), "{name}: OVS answered with an error: {m:?}");
    }
}

/// A match given as (field, value, mask): exactly these fields, any order.
fn assert_match(name: &str, m: &Match, want: &[(F, u128, Option<u128>)]) {
    assert_eq!(m.oxms.len(), want.len(), "{name}: match has {:?}", m.oxms);
    for &(f, v, mask) in want {
        let (gv, gm) = m.get(f).unwrap_or_else(|| panic!("{name}: no {f:?} in {:?}", m.oxms));
        assert_eq!(gv.to_u128(), v, "{name}: {f:?} value");
        assert_eq!(gm.map(|x| x.to_u128()), mask, "{name}: {f:?} mask");
    }
    m.check_prereqs().unwrap_or_else(|e| panic!("{name}: prerequisites: {e}"));
}

fn out(p: u32) -> Action {
    Action::Output { port: p, max_len: 0 }
}

fn set(f: F, v: u128) -> Action {
    Action::SetField(Oxm::exact(f, v))
}

fn apply(a: Vec<Action>) -> Vec<Instruction> {
    vec![Instruction::ApplyActions(a)]
}

fn packet() -> Vec<u8> {
    hex_decode(scenario::PACKET).expect("packet hex")
}

fn ip(s: &str) -> u128 {
    let a: std::net::IpAddr = s.parse().expect("ip");
    match a {
        std::net::IpAddr::V4(a) => u32::from(a) as u128,
        std::net::IpAddr::V6(a) => u128::from(a),
    }
}

fn bucket(weight: u16, watch_port: u32, watch_group: u32, actions: Vec<Action>) -> Bucket {
    Bucket { weight, watch_port, watch_group, actions }
}

/// Multipart replies other than port descriptions (ovs-ofctl fetches those
/// on the side before many commands).
fn mp_reply(d: &[Decoded]) -> Vec<&Rep> {
    got(d)
        .into_iter()
        .filter_map(|m| if let Message::MultipartReply(r) = m { Some(&r.body) } else { None })
        .filter(|b| !matches!(b, Rep::PortDesc(_)))
        .collect()
}

/// Multipart requests other than port descriptions.
fn mp_request(d: &[Decoded]) -> Vec<&Req> {
    sent(d)
        .into_iter()
        .filter_map(|m| if let Message::MultipartRequest(r) = m { Some(&r.body) } else { None })
        .filter(|b| !matches!(b, Req::PortDesc))
        .collect()
}

/// Check one fixture (committed or freshly captured). Panics with the
/// fixture's name on any mismatch; unknown names fail too, so a new
/// scenario step cannot go unchecked.
pub fn check(f: &Fixture) {
    let d = decode_all(f);
    let n = f.name.as_str();
    // Only raw-errors may contain a message that does not decode.
    for x in &d {
        if let Err(e) = &x.result {
            assert!(
                n == "raw-errors" && x.bytes.get(1) == Some(&40),
                "{n}: {e} on {}",
                hex_encode(&x.bytes)
            );
            assert_eq!(*e, ErrorCode::BRC_BAD_TYPE);
        }
    }
    // Every session starts with HELLOs; OVS's (and ovs-ofctl's, not our
    // raw client's) advertise OpenFlow 1.3 in a version bitmap.
    let peers = if n.starts_with("raw-") {
        got(&d)
    } else {
        ok(&d, Dir::FromSwitch).chain(ok(&d, Dir::ToSwitch)).map(|(_, m)| m).collect()
    };
    let hellos: Vec<_> = peers
        .into_iter()
        .filter_map(|m| if let Message::Hello(h) = m { Some(h) } else { None })
        .collect();
    assert!(!hellos.is_empty(), "{n}: no hello");
    for h in hellos {
        assert!(
            h.bitmap().is_some_and(|b| sluice_ofp::message::bitmap_has(b, 4)),
            "{n}: hello {h:?}"
        );
    }
    let fm = |d: &[Decoded]| flow_mod(n, d).clone();
    match n {
        "show" => {
            let fr = got(&d).into_iter().find_map(|m| {
                if let Message::FeaturesReply(f) = m {
                    Some(f)
                } else {
                    None
                }
            });
            let fr = fr.expect("features reply");
            assert_eq!((fr.datapath_id, fr.n_tables), (1, 254));
            let ports = port_desc(&d);
            assert_eq!(
                ports,
                vec![
                    (1, "p1".into()),
                    (2, "p2".into()),
                    (3, "p3".into()),
                    (port_no::LOCAL, "br0".into())
                ]
            );
            assert!(got(&d).iter().any(|m| matches!(m, Message::GetConfigReply(_))));
        }
        "dump-desc" => match mp_reply(&d).as_slice() {
            [Rep::Desc(desc)] => {
                assert_eq!(
                    (desc.mfr_desc.as_str(), desc.hw_desc.as_str()),
                    ("Nicira, Inc.", "Open vSwitch")
                );
                assert!(desc.sw_desc.starts_with("3.1"), "{desc:?}");
            }
            other => panic!("{n}: {other:?}"),
        },
        "get-config" => {
            assert!(sent(&d).iter().any(|m| matches!(m, Message::GetConfigRequest)));
            assert!(got(&d)
                .iter()
                .any(|m| matches!(m, Message::GetConfigReply(c) if c.flags == 0)));
        }
        "set-config" => {
            assert!(
                sent(&d).iter().any(|m| matches!(m, Message::SetConfig(c) if c.flags == 1)),
                "{n}: no frags=drop"
            );
        }
        "dump-ports-desc" => assert_eq!(port_desc(&d).len(), 4),
        "dump-tables" => match mp_reply(&d).as_slice() {
            [Rep::Table(t)] => {
                assert_eq!(t.len(), 254);
                assert!(t.iter().enumerate().all(|(i, t)| t.table_id as usize == i));
            }
            other => panic!("{n}: {other:?}"),
        },
        "dump-table-features" => {
            assert!(matches!(mp_request(&d).as_slice(), [Req::TableFeatures(v)] if v.is_empty()));
            let replies: Vec<(u16, &Rep)> = got(&d)
                .into_iter()
                .filter_map(|m| {
                    if let Message::MultipartReply(r) = m {
                        Some((r.flags, &r.body))
                    } else {
                        None
                    }
                })
                .collect();
            assert_eq!(replies.len(), 2, "{n}: first and last reply are kept");
            assert_eq!(replies[0].0 & OFPMPF_REPLY_MORE, OFPMPF_REPLY_MORE);
            assert_eq!(replies[1].0 & OFPMPF_REPLY_MORE, 0);
            let Rep::TableFeatures(t) = replies[0].1 else { panic!("{n}: {:?}", replies[0].1) };
            assert_eq!(t[0].table_id, 0);
            assert_eq!((t[0].metadata_match, t[0].max_entries), (u64::MAX, 1_000_000));
            assert!(!t[0].properties.is_empty());
            let Rep::TableFeatures(t) = replies[1].1 else { panic!() };
            assert_eq!(t.last().map(|t| t.table_id), Some(253));
        }
        "probe" => {
            assert!(sent(&d).iter().any(|m| matches!(m, Message::EchoRequest(v) if v.is_empty())));
            assert!(got(&d).iter().any(|m| matches!(m, Message::EchoReply(v) if v.is_empty())));
        }
        "mod-port" => {
            let pm = sent(&d).into_iter().find_map(|m| {
                if let Message::PortMod(p) = m {
                    Some(p)
                } else {
                    None
                }
            });
            let pm = pm.expect("port-mod");
            assert_eq!((pm.port_no, pm.config, pm.mask, pm.advertise), (3, 1, 1, 0));
            let hw = got(&d).into_iter().find_map(|m| match m {
                Message::MultipartReply(r) => match &r.body {
                    Rep::PortDesc(p) => p.iter().find(|p| p.port_no == 3).map(|p| p.hw_addr),
                    _ => None,
                },
                _ => None,
            });
            assert_eq!(Some(pm.hw_addr), hw, "{n}: port-mod names port 3's address");
            no_errors(n, &d);
        }
        "add-meter-kbps"
        | "add-meter-pktps"
        | "add-meter-dscp-remark"
        | "mod-meter"
        | "del-meters" => {
            let mm = sent(&d).into_iter().find_map(|m| {
                if let Message::MeterMod(x) = m {
                    Some(x)
                } else {
                    None
                }
            });
            let mm = mm.expect("meter-mod");
            let want = match n {
                "add-meter-kbps" => (
                    mmc::ADD,
                    1,
                    mf::KBPS | mf::BURST | mf::STATS,
                    vec![MeterBand::Drop { rate: 1000, burst_size: 100 }],
                ),
                "add-meter-pktps" => (
                    mmc::ADD,
                    2,
                    mf::PKTPS | mf::STATS,
                    vec![MeterBand::Drop { rate: 500, burst_size: 0 }],
                ),
                "add-meter-dscp-remark" => (
                    mmc::ADD,
                    3,
                    mf::KBPS | mf::BURST,
                    vec![MeterBand::DscpRemark { rate: 2000, burst_size: 200, prec_level: 1 }],
                ),
                "mod-meter" => (
                    mmc::MODIFY,
                    2,
                    mf::PKTPS | mf::STATS,
                    vec![MeterBand::Drop { rate: 800, burst_size: 0 }],
                ),
                _ => (mmc::DELETE, 2, 0, vec![]),
            };
            assert_eq!((mm.command, mm.meter_id, mm.flags, mm.bands.clone()), want, "{n}");
            if n == "add-meter-dscp-remark" {
                // OVS's userspace datapath has no dscp_remark bands.
                let err = got(&d).into_iter().find_map(|m| {
                    if let Message::Error(e) = m {
                        Some(e)
                    } else {
                        None
                    }
                });
                match err {
                    Some(ErrorMsg::Standard { code, data }) => {
                        assert_eq!(*code, ErrorCode::MMFC_BAD_BAND);
                        let (_, echoed) = Message::parse(data).expect("error data is the request");
                        assert_eq!(echoed, Message::MeterMod(mm.clone()));
                    }
                    other => panic!("{n}: {other:?}"),
                }
            } else {
                no_errors(n, &d);
            }
        }
        "add-group-all" | "add-group-select" | "add-group-indirect" | "add-group-ff"
        | "mod-group" | "del-groups" => {
            let g = sent(&d).into_iter().find_map(|m| {
                if let Message::GroupMod(x) = m {
                    Some(x)
                } else {
                    None
                }
            });
            let g = g.expect("group-mod");
            let any = (port_no::ANY, gid::ANY);
            let b = |w, a| bucket(w, any.0, any.1, a);
            let want = match n {
                "add-group-all" => {
                    (gmc::ADD, 1, GroupType::All, vec![b(0, vec![out(1)]), b(0, vec![out(2)])])
                }
                "add-group-select" => (
                    gmc::ADD,
                    2,
                    GroupType::Select,
                    vec![b(10, vec![out(1)]), b(20, vec![set(F::EthDst, 0x22), out(2)])],
                ),
                "add-group-indirect" => (
                    gmc::ADD,
                    3,
                    GroupType::Indirect,
                    vec![b(0, vec![set(F::EthDst, 0x0011_2233_4455), out(3)])],
                ),
                "add-group-ff" => (
                    gmc::ADD,
                    4,
                    GroupType::FastFailover,
                    vec![bucket(0, 1, gid::ANY, vec![out(1)]), bucket(0, 2, 1, vec![out(2)])],
                ),
                "mod-group" => (
                    gmc::MODIFY,
                    1,
                    GroupType::All,
                    vec![b(0, vec![out(1)]), b(0, vec![out(3)]), b(0, vec![Action::Group(3)])],
                ),
                _ => (gmc::DELETE, 4, GroupType::All, vec![]),
            };
            assert_eq!((g.command, g.group_id, g.group_type, g.buckets.clone()), want, "{n}");
            no_errors(n, &d);
        }
        "add-flow-l2" => {
            let f = fm(&d);
            assert_eq!(
                (f.command, f.table_id, f.priority, f.buffer_id),
                (fmc::ADD, 0, 10, OFP_NO_BUFFER)
            );
            assert_match(
                n,
                &f.r#match,
                &[
                    (F::InPort, 1, None),
                    (F::EthSrc, 1, None),
                    (F::EthDst, 1 << 40, Some(1 << 40)),
                    (F::EthType, 0x88cc, None),
                ],
            );
            assert_eq!(f.instructions, apply(vec![out(2)]));
            no_errors(n, &d);
        }
        "add-flow-vlan-pop" => {
            let f = fm(&d);
            assert_eq!(f.priority, 30);
            assert_match(
                n,
                &f.r#match,
                &[(F::InPort, 1, None), (F::VlanVid, 0x1000 | 10, None), (F::VlanPcp, 3, None)],
            );
            assert_eq!(f.instructions, apply(vec![Action::PopVlan, out(2)]));
        }
        "add-flow-vlan-push" => {
            let f = fm(&d);
            assert_match(n, &f.r#match, &[(F::InPort, 2, None), (F::VlanVid, 0, Some(0x1000))]);
            assert_eq!(
                f.instructions,
                apply(vec![
                    Action::PushVlan(0x8100),
                    set(F::VlanVid, 4106),
                    set(F::VlanPcp, 5),
                    out(1)
                ])
            );
        }
        "add-flow-ipv4-tcp" => {
            let f = fm(&d);
            assert_eq!((f.table_id, f.priority), (1, 100));
            assert_match(
                n,
                &f.r#match,
                &[
                    (F::InPort, 1, None),
                    (F::EthType, 0x0800, None),
                    (F::IpProto, 6, None),
                    (F::Ipv4Src, ip("10.0.0.0"), Some(ip("255.0.0.0"))),
                    (F::Ipv4Dst, ip("192.168.1.0"), Some(ip("255.255.255.0"))),
                    (F::IpDscp, 10, None),
                    (F::IpEcn, 1, None),
                    (F::TcpSrc, 1024, None),
                    (F::TcpDst, 80, None),
                ],
            );
            assert_eq!(
                f.instructions,
                apply(vec![set(F::Ipv4Dst, ip("10.1.1.1")), set(F::TcpDst, 8080), out(2)])
            );
        }
        "add-flow-udp" => {
            let f = fm(&d);
            assert_match(
                n,
                &f.r#match,
                &[
                    (F::EthType, 0x0800, None),
                    (F::IpProto, 17, None),
                    (F::UdpSrc, 53, None),
                    (F::UdpDst, 5353, None),
                ],
            );
            assert_eq!(f.instructions, apply(vec![set(F::UdpSrc, 1234), out(2)]));
        }
        "add-flow-sctp" => {
            let f = fm(&d);
            assert_match(
                n,
                &f.r#match,
                &[
                    (F::EthType, 0x0800, None),
                    (F::IpProto, 132, None),
                    (F::SctpSrc, 1, None),
                    (F::SctpDst, 2, None),
                ],
            );
        }
        "add-flow-icmp" => {
            let f = fm(&d);
            assert_match(
                n,
                &f.r#match,
                &[
                    (F::EthType, 0x0800, None),
                    (F::IpProto, 1, None),
                    (F::Icmpv4Type, 8, None),
                    (F::Icmpv4Code, 0, None),
                ],
            );
            assert_eq!(f.instructions, apply(vec![Action::DecNwTtl, Action::SetNwTtl(9), out(2)]));
        }
        "add-flow-ipv6" => {
            let f = fm(&d);
            assert_match(
                n,
                &f.r#match,
                &[
                    (F::InPort, 3, None),
                    (F::EthType, 0x86dd, None),
                    (F::IpProto, 58, None),
                    (F::Ipv6Src, ip("2001:db8::"), Some(ip("ffff:ffff::"))),
                    (F::Ipv6Dst, ip("2001:db8::1"), None),
                    (F::Ipv6Flabel, 0x12345, None),
                    (F::Icmpv6Type, 135, None),
                    (F::Icmpv6Code, 0, None),
                    (F::Ipv6NdTarget, ip("2001:db8::2"), None),
                    (F::Ipv6NdSll, 0xaa, None),
                ],
            );
            assert_eq!(f.instructions, apply(vec![set(F::Ipv6Dst, ip("2001:db8::99")), out(1)]));
        }
        "add-flow-arp" => {
            let f = fm(&d);
            assert_match(
                n,
                &f.r#match,
                &[
                    (F::EthType, 0x0806, None),
                    (F::ArpOp, 1, None),
                    (F::ArpSpa, ip("10.0.0.1"), None),
                    (F::ArpTpa, ip("10.0.0.0"), Some(ip("255.255.255.0"))),
                    (F::ArpSha, 1, None),
                    (F::ArpTha, 0, None),
                ],
            );
            assert_eq!(
                f.instructions,
                apply(vec![
                    set(F::ArpSha, 0x99),
                    out(port_no::IN_PORT),
                    Action::Output { port: port_no::CONTROLLER, max_len: 128 }
                ])
            );
        }
        "add-flow-mpls-pop" => {
            let f = fm(&d);
            assert_match(
                n,
                &f.r#match,
                &[
                    (F::EthType, 0x8847, None),
                    (F::MplsLabel, 100, None),
                    (F::MplsTc, 3, None),
                    (F::MplsBos, 1, None),
                ],
            );
            assert_eq!(f.instructions, apply(vec![Action::PopMpls(0x0800), out(2)]));
        }
        "add-flow-mpls-push" => {
            let f = fm(&d);
            assert_eq!(f.table_id, 2);
            assert_match(n, &f.r#match, &[(F::EthType, 0x0800, None)]);
            assert_eq!(
                f.instructions,
                apply(vec![
                    Action::PushMpls(0x8847),
                    set(F::MplsLabel, 10),
                    set(F::MplsTc, 2),
                    Action::SetMplsTtl(64),
                    Action::DecMplsTtl,
                    out(2)
                ])
            );
        }
        "add-flow-set-field" => {
            let f = fm(&d);
            assert_match(n, &f.r#match, &[(F::EthType, 0x0800, None), (F::IpProto, 6, None)]);
            assert_eq!(
                f.instructions,
                apply(vec![
                    set(F::EthSrc, 0x0011_2233_4455),
                    set(F::EthDst, 0x6677_8899_aabb),
                    set(F::Ipv4Src, ip("10.0.0.2")),
                    set(F::IpDscp, 46),
                    set(F::TcpSrc, 80),
                    Action::SetQueue(1),
                    out(3)
                ])
            );
        }
        "add-flow-instructions" => {
            let f = fm(&d);
            assert_eq!(
                (f.cookie, f.idle_timeout, f.hard_timeout, f.priority, f.flags),
                (0x1234, 60, 120, 5, 1)
            );
            assert_match(
                n,
                &f.r#match,
                &[(F::Metadata, 1, Some(0xff)), (F::TunnelId, 5, Some(0xff))],
            );
            assert_eq!(
                f.instructions,
                vec![
                    Instruction::Meter(1),
                    Instruction::ApplyActions(vec![out(1)]),
                    Instruction::WriteActions(vec![out(3)]),
                    Instruction::WriteMetadata { metadata: 5, mask: 0xff },
                    Instruction::GotoTable(2),
                ]
            );
            no_errors(n, &d);
        }
        "add-flow-clear-actions" => {
            let f = fm(&d);
            assert_match(n, &f.r#match, &[(F::InPort, 3, None)]);
            assert_eq!(
                f.instructions,
                vec![
                    Instruction::ClearActions,
                    Instruction::WriteActions(vec![Action::Group(3)]),
                    Instruction::GotoTable(3)
                ]
            );
        }
        "add-flow-group" => {
            let f = fm(&d);
            assert_eq!((f.table_id, f.priority), (3, 1));
            assert_eq!(f.instructions, apply(vec![Action::Group(1)]));
        }
        "mod-flows" => {
            let f = fm(&d);
            assert_eq!((f.command, f.table_id), (fmc::MODIFY, 3));
            assert_eq!(f.instructions, apply(vec![Action::Group(2)]));
        }
        "packet-out" => {
            let po = sent(&d).into_iter().find_map(|m| {
                if let Message::PacketOut(p) = m {
                    Some(p)
                } else {
                    None
                }
            });
            let po = po.expect("packet-out");
            assert_eq!(
                (po.buffer_id, po.in_port, po.actions.clone(), po.data.clone()),
                (OFP_NO_BUFFER, 1, vec![out(2)], packet())
            );
            no_errors(n, &d);
        }
        "dump-flows" => {
            let flows: Vec<_> = mp_reply(&d)
                .into_iter()
                .flat_map(|r| if let Rep::Flow(f) = r { f.clone() } else { vec![] })
                .collect();
            assert_eq!(flows.len(), 15, "{n}");
            let f = flows.iter().find(|f| f.cookie == 0x1234).expect("the instructions flow");
            assert_eq!((f.idle_timeout, f.hard_timeout, f.priority), (60, 120, 5));
            assert_eq!(f.instructions.first(), Some(&Instruction::Meter(1)));
            for f in &flows {
                f.match_.check_prereqs().unwrap_or_else(|e| panic!("{n}: {e} in {:?}", f.match_));
            }
        }
        "dump-flows-filtered" => {
            let r = mp_request(&d).into_iter().find_map(|r| {
                if let Req::Flow(r) = r {
                    Some(r)
                } else {
                    None
                }
            });
            let r = r.expect("flow stats request");
            assert_eq!(r.table_id, 1);
            assert_match(n, &r.match_, &[(F::EthType, 0x0800, None), (F::IpProto, 6, None)]);
            match mp_reply(&d).last() {
                Some(Rep::Flow(f)) => {
                    assert_eq!(f.iter().map(|f| f.priority).collect::<Vec<_>>(), vec![100])
                }
                other => panic!("{n}: {other:?}"),
            }
        }
        "dump-aggregate" => match mp_reply(&d).as_slice() {
            [Rep::Aggregate(a)] => assert_eq!(a.flow_count, 15),
            other => panic!("{n}: {other:?}"),
        },
        "dump-ports" | "dump-ports-one" => {
            let want_req = if n == "dump-ports" { port_no::ANY } else { 1 };
            assert!(
                matches!(mp_request(&d).as_slice(), [Req::PortStats { port_no }] if *port_no == want_req)
            );
            match mp_reply(&d).as_slice() {
                [Rep::PortStats(p)] => {
                    let mut ports: Vec<u32> = p.iter().map(|p| p.port_no).collect();
                    ports.sort();
                    let want =
                        if n == "dump-ports" { vec![1, 2, 3, port_no::LOCAL] } else { vec![1] };
                    assert_eq!(ports, want);
                }
                other => panic!("{n}: {other:?}"),
            }
        }
        "queue-stats" => {
            assert!(matches!(
                mp_request(&d).as_slice(),
                [Req::Queue { port_no: port_no::ANY, queue_id: u32::MAX }]
            ));
            assert!(matches!(mp_reply(&d).as_slice(), [Rep::Queue(q)] if q.is_empty()));
        }
        "queue-get-config" => {
            assert!(sent(&d)
                .iter()
                .any(|m| matches!(m, Message::QueueGetConfigRequest(q) if q.port == 1)));
            assert!(got(&d)
                .iter()
                .any(|m| matches!(m, Message::QueueGetConfigReply(q) if q.queues.is_empty())));
        }
        "dump-groups" => match mp_reply(&d).as_slice() {
            [Rep::GroupDesc(g)] => {
                let mut ids: Vec<u32> = g.iter().map(|g| g.group_id).collect();
                ids.sort();
                assert_eq!(ids, vec![1, 2, 3, 4]);
                let sel = g.iter().find(|g| g.group_id == 2).expect("group 2");
                assert_eq!(sel.group_type, GroupType::Select);
                assert_eq!(sel.buckets.iter().map(|b| b.weight).collect::<Vec<_>>(), vec![10, 20]);
            }
            other => panic!("{n}: {other:?}"),
        },
        "dump-group-stats" => {
            assert!(matches!(mp_request(&d).as_slice(), [Req::Group { group_id: gid::ALL }]));
            match mp_reply(&d).as_slice() {
                [Rep::Group(g)] => {
                    assert_eq!(g.len(), 4);
                    assert_eq!(
                        g.iter().find(|g| g.group_id == 1).map(|g| g.bucket_stats.len()),
                        Some(3)
                    );
                }
                other => panic!("{n}: {other:?}"),
            }
        }
        "dump-group-features" => match mp_reply(&d).as_slice() {
            [Rep::GroupFeatures(g)] => {
                assert_eq!(g.types, 0xf);
                assert!(g.max_groups.iter().all(|&m| m == 0xffff_ff00));
                assert!(g.actions.iter().all(|&a| a & 1 != 0), "output is supported");
            }
            other => panic!("{n}: {other:?}"),
        },
        "dump-meters" => match mp_reply(&d).as_slice() {
            [Rep::MeterConfig(m)] => {
                assert_eq!(m.iter().map(|m| m.meter_id).collect::<Vec<_>>(), vec![1, 2]);
                // OVS reports an unset burst size as equal to the rate.
                assert_eq!(m[1].bands, vec![MeterBand::Drop { rate: 800, burst_size: 800 }]);
            }
            other => panic!("{n}: {other:?}"),
        },
        "meter-stats" => match mp_reply(&d).as_slice() {
            [Rep::Meter(m)] => {
                assert_eq!(
                    m.iter().map(|m| (m.meter_id, m.flow_count)).collect::<Vec<_>>(),
                    vec![(1, 1), (2, 0)]
                );
                assert!(m.iter().all(|m| m.band_stats.len() == 1));
            }
            other => panic!("{n}: {other:?}"),
        },
        "meter-features" => match mp_reply(&d).as_slice() {
            [Rep::MeterFeatures(m)] => {
                assert_eq!((m.max_bands, m.band_types & 2), (8, 2));
                assert!(m.max_meter > 0);
            }
            other => panic!("{n}: {other:?}"),
        },
        "monitor" => {
            assert!(sent(&d)
                .iter()
                .any(|m| matches!(m, Message::SetConfig(c) if c.miss_send_len == 65535)));
            // ovs-ofctl asks for Nicira's packet-in format: kept verbatim.
            assert!(sent(&d)
                .iter()
                .any(|m| matches!(m, Message::Experimenter(e) if e.experimenter == 0x2320)));
            let fr = got(&d).into_iter().find_map(|m| {
                if let Message::FlowRemoved(f) = m {
                    Some(f)
                } else {
                    None
                }
            });
            let fr = fr.expect("flow removed");
            assert_eq!(
                (fr.reason, fr.table_id, fr.cookie, fr.priority),
                (flow_removed_reason::DELETE, 5, 0x77, 7)
            );
            assert_match(n, &fr.r#match, &[(F::EthType, 0x0800, None), (F::IpProto, 17, None)]);
            let ps = got(&d).into_iter().find_map(|m| {
                if let Message::PortStatus(p) = m {
                    Some(p)
                } else {
                    None
                }
            });
            let ps = ps.expect("port status");
            assert_eq!(
                (ps.reason, ps.desc.port_no, ps.desc.name.as_str()),
                (port_reason::ADD, 4, "p4")
            );
        }
        "del-flows-strict" => {
            let f = fm(&d);
            assert_eq!((f.command, f.table_id, f.priority), (fmc::DELETE_STRICT, 1, 80));
            assert_match(
                n,
                &f.r#match,
                &[
                    (F::EthType, 0x0800, None),
                    (F::IpProto, 132, None),
                    (F::SctpSrc, 1, None),
                    (F::SctpDst, 2, None),
                ],
            );
        }
        "del-flows-cookie" | "del-flows-all" => {
            let f = fm(&d);
            assert_eq!(
                (f.command, f.table_id, f.out_port, f.out_group),
                (fmc::DELETE, 0xff, port_no::ANY, gid::ANY)
            );
            let cookie = if n == "del-flows-cookie" { (0x1234, u64::MAX) } else { (0, 0) };
            assert_eq!((f.cookie, f.cookie_mask), cookie);
            assert!(f.r#match.oxms.is_empty());
        }
        "raw-role-request" => {
            let replies: Vec<&Message> =
                got(&d).into_iter().filter(|m| !matches!(m, Message::Hello(_))).collect();
            match replies.as_slice() {
                [Message::RoleReply(a), Message::RoleReply(b), Message::Error(ErrorMsg::Standard { code, .. })] =>
                {
                    assert_eq!((a.role, a.generation_id), (controller_role::MASTER, 5));
                    assert_eq!((b.role, b.generation_id), (controller_role::MASTER, 5));
                    assert_eq!(*code, ErrorCode::RRFC_STALE);
                }
                other => panic!("{n}: {other:?}"),
            }
        }
        "raw-async-config" => {
            let replies: Vec<_> = got(&d)
                .into_iter()
                .filter_map(|m| if let Message::GetAsyncReply(a) = m { Some(*a) } else { None })
                .collect();
            let set = sent(&d).into_iter().find_map(|m| {
                if let Message::SetAsync(a) = m {
                    Some(*a)
                } else {
                    None
                }
            });
            let set = set.expect("set-async");
            assert_eq!(
                (set.packet_in_mask, set.port_status_mask, set.flow_removed_mask),
                ([7, 1], [7, 7], [0xf, 0])
            );
            assert_eq!(replies.len(), 2);
            assert_eq!(replies[1], set, "{n}: OVS reports what was set");
            assert_eq!(
                replies[0].packet_in_mask[0] & 3,
                3,
                "{n}: OVS's default asks for no_match and action"
            );
        }
        "raw-echo-barrier-features" => {
            assert!(got(&d)
                .iter()
                .any(|m| matches!(m, Message::EchoReply(v) if v == b"sluice echo")));
            assert!(got(&d)
                .iter()
                .any(|m| matches!(m, Message::FeaturesReply(f) if f.datapath_id == 1)));
            assert!(ok(&d, Dir::FromSwitch)
                .any(|(x, m)| x == 0x32 && matches!(m, Message::BarrierReply)));
        }
        "raw-table-mod" => {
            assert!(sent(&d)
                .iter()
                .any(|m| matches!(m, Message::TableMod(t) if t.table_id == 0 && t.config == 0)));
            no_errors(n, &d);
            assert!(got(&d).iter().any(|m| matches!(m, Message::BarrierReply)));
        }
        "raw-async-messages" => {
            let pi = got(&d).into_iter().find_map(|m| {
                if let Message::PacketIn(p) = m {
                    Some(p)
                } else {
                    None
                }
            });
            let pi = pi.expect("packet-in");
            assert_eq!(
                (pi.reason, pi.total_len, pi.buffer_id),
                (packet_in_reason::ACTION, 50, OFP_NO_BUFFER)
            );
            assert_eq!(pi.r#match.get(F::InPort).map(|(v, _)| v.to_u128()), Some(2));
            assert_eq!(pi.data, packet());
            let fr = got(&d).into_iter().find_map(|m| {
                if let Message::FlowRemoved(f) = m {
                    Some(f)
                } else {
                    None
                }
            });
            assert_eq!(fr.map(|f| (f.table_id, f.cookie)), Some((6, 0x88)));
            let ps = got(&d).into_iter().find_map(|m| {
                if let Message::PortStatus(p) = m {
                    Some(p)
                } else {
                    None
                }
            });
            assert_eq!(
                ps.map(|p| (p.reason, p.desc.port_no, p.desc.name.clone())),
                Some((port_reason::ADD, 5, "p5".into()))
            );
        }
        "raw-errors" => {
            // OVS's verdicts on the three bad requests, and sluice's on the same bytes.
            let codes: Vec<ErrorCode> = got(&d)
                .into_iter()
                .filter_map(|m| {
                    if let Message::Error(ErrorMsg::Standard { code, .. }) = m {
                        Some(*code)
                    } else {
                        None
                    }
                })
                .collect();
            assert_eq!(
                codes,
                vec![
                    ErrorCode::BRC_BAD_TYPE,
                    ErrorCode::BRC_BAD_EXPERIMENTER,
                    ErrorCode::BMC_BAD_PREREQ
                ]
            );
            let exp = sent(&d).into_iter().find_map(|m| {
                if let Message::Experimenter(e) = m {
                    Some(e)
                } else {
                    None
                }
            });
            let exp = exp.expect("experimenter request");
            let p = Payload {
                kind: Kind::Message,
                experimenter: exp.experimenter,
                exp_type: exp.exp_type,
                data: &exp.data,
            };
            assert_eq!(Registry::new().check(&p).map(|_| ()), Err(ErrorCode::BRC_BAD_EXPERIMENTER));
            let f = fm(&d);
            assert_eq!(f.r#match.check_prereqs(), Err(ErrorCode::BMC_BAD_PREREQ));
        }
        other => panic!("no expectations written for fixture {other:?}"),
    }
}

/// (port number, name) of every port description reply, sorted by number.
fn port_desc(d: &[Decoded]) -> Vec<(u32, String)> {
    let mut v: Vec<(u32, String)> = got(d)
        .into_iter()
        .filter_map(|m| if let Message::MultipartReply(r) = m { Some(&r.body) } else { None })
        .flat_map(|r| {
            if let Rep::PortDesc(p) = r {
                p.iter().map(|p| (p.port_no, p.name.clone())).collect()
            } else {
                vec![]
            }
        })
        .collect();
    v.sort();
    v
}
