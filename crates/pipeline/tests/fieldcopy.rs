//! Nicira `move`/`load` and the ONF copy-field through the pipeline:
//! flow-mod validation (the decoder's errors, prerequisites against the
//! match) and an ARP and ICMP echo responder on every datapath, the
//! reference included.

mod common;

use common::{add, add_ports, flow};
use sluice_ofp::action::Action;
use sluice_ofp::error::ErrorCode;
use sluice_ofp::message::flow_mod_command as fc;
use sluice_pipeline::{CacheMode, Config, Datapath, Pipeline};

const GW_MAC: [u8; 6] = [2, 0, 0, 0, 0x4f, 0xfe];
const H_MAC: [u8; 6] = [2, 0, 0, 0, 0x4f, 1];

const ARP_FLOW: &str = "priority=100,arp,arp_op=1,arp_tpa=10.79.0.254,actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],mod_dl_src:02:00:00:00:4f:fe,load:0x2->NXM_OF_ARP_OP[],move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],load:0x20000004ffe->NXM_NX_ARP_SHA[],load:0xa4f00fe->NXM_OF_ARP_SPA[],output:in_port";
const ICMP_FLOW: &str = "priority=100,icmp,nw_dst=10.79.0.254,icmp_type=8,icmp_code=0,actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],mod_dl_src:02:00:00:00:4f:fe,move:NXM_OF_IP_SRC[]->NXM_OF_IP_DST[],mod_nw_src:10.79.0.254,load:0->NXM_OF_ICMP_TYPE[],output:in_port";

/// The folded one's-complement sum of `b` (0xffff over a header whose
/// checksum is right).
fn csum(b: &[u8]) -> u16 {
    sluice_packet::checksum::fold(sluice_packet::checksum::sum(b))
}

fn arp_request() -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend(H_MAC);
    f.extend([0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1]);
    f.extend(H_MAC);
    f.extend([10, 79, 0, 1]);
    f.extend([0; 6]);
    f.extend([10, 79, 0, 254]);
    f.resize(60, 0);
    f
}

fn echo_request() -> Vec<u8> {
    let mut icmp = vec![8, 0, 0, 0, 0x0b, 0xad, 0, 1];
    icmp.extend(0u8..24);
    let c = !csum(&icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    let total = 20 + icmp.len();
    let mut ip = vec![0x45, 0, 0, total as u8, 0x12, 0x34, 0x40, 0, 64, 1, 0, 0];
    ip.extend([10, 79, 0, 1, 10, 79, 0, 254]);
    let c = !csum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut f = GW_MAC.to_vec();
    f.extend(H_MAC);
    f.extend([0x08, 0x00]);
    f.extend(ip);
    f.extend(icmp);
    f
}

fn pipeline(datapath: Datapath, cache: CacheMode) -> Pipeline {
    let mut p = Pipeline::new(Config { datapath, cache, ..Config::default() });
    add_ports(&mut p, &[1, 2]);
    p
}

#[test]
fn responder_answers_on_every_datapath() {
    let mut want_arp = H_MAC.to_vec();
    want_arp.extend(GW_MAC);
    want_arp.extend([0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 2]);
    want_arp.extend(GW_MAC);
    want_arp.extend([10, 79, 0, 254]);
    want_arp.extend(H_MAC);
    want_arp.extend([10, 79, 0, 1]);
    want_arp.resize(60, 0);
    for (d, c) in [
        (Datapath::Reference, CacheMode::Off),
        (Datapath::Classifier, CacheMode::On),
        (Datapath::Compiled, CacheMode::Megaflow),
    ] {
        let mut p = pipeline(d, c);
        add(&mut p, ARP_FLOW);
        add(&mut p, ICMP_FLOW);
        // Twice: the second packet may take a cache hit.
        for _ in 0..2 {
            let mut out = Vec::new();
            p.process(2, &arp_request(), &mut |port: u32, _: Option<u32>, f: &[u8]| {
                out.push((port, f.to_vec()))
            });
            assert_eq!(out, vec![(2, want_arp.clone())], "{d:?}/{c:?} ARP");
            let mut out = Vec::new();
            p.process(2, &echo_request(), &mut |port: u32, _: Option<u32>, f: &[u8]| {
                out.push((port, f.to_vec()))
            });
            assert_eq!(out.len(), 1, "{d:?}/{c:?} echo");
            let (port, f) = &out[0];
            assert_eq!(*port, 2);
            assert_eq!((&f[..6], &f[6..12]), (&H_MAC[..], &GW_MAC[..]));
            assert_eq!(&f[26..34], &[10, 79, 0, 254, 10, 79, 0, 1]);
            assert_eq!(csum(&f[14..34]), 0xffff, "IPv4 checksum");
            assert_eq!(f[34], 0, "echo reply");
            assert_eq!(csum(&f[34..]), 0xffff, "ICMP checksum");
            assert_eq!(&f[38..], &echo_request()[38..]);
        }
    }
}

#[test]
fn validation_errors() {
    let mut p = pipeline(Datapath::Reference, CacheMode::Off);
    let e = |p: &mut Pipeline, text: &str| flow(p, fc::ADD, text).err();
    // Prerequisites of the source and of the destination.
    assert_eq!(
        e(&mut p, "actions=move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[]"),
        Some(ErrorCode::BAC_MATCH_INCONSISTENT)
    );
    assert_eq!(
        e(&mut p, "ip,actions=move:NXM_OF_IP_SRC[]->NXM_OF_ARP_TPA[]"),
        Some(ErrorCode::BAC_MATCH_INCONSISTENT)
    );
    assert_eq!(
        e(&mut p, "ip,actions=load:0->NXM_OF_ICMP_TYPE[]"),
        Some(ErrorCode::BAC_MATCH_INCONSISTENT)
    );
    assert_eq!(
        e(&mut p, "actions=load:1->OXM_OF_VLAN_VID[0..3]"),
        Some(ErrorCode::BAC_MATCH_INCONSISTENT)
    );
    // In write-actions too.
    assert_eq!(
        e(&mut p, "actions=write_actions(load:1->NXM_OF_IP_DST[0..7])"),
        Some(ErrorCode::BAC_MATCH_INCONSISTENT)
    );
    // Accepted with the prerequisites; fields with none need nothing.
    assert_eq!(e(&mut p, "arp,actions=move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[]"), None);
    assert_eq!(e(&mut p, "actions=move:NXM_OF_ETH_SRC[0..15]->OXM_OF_METADATA[8..23]"), None);
    assert_eq!(e(&mut p, "vlan_vid=0x1000/0x1000,actions=load:5->OXM_OF_VLAN_VID[0..3]"), None);
    // The decoder's errors, in a flow-mod from the wire: a move from
    // NXM_NX_REG0 (sluice has no registers), a load into eth_type (not
    // writable); another Nicira subtype is as if nobody knew Nicira.
    let wire = |p: &mut Pipeline, data: Vec<u8>| {
        let a = Action::Experimenter { experimenter: 0x2320, data };
        let fm = sluice_ofp::message::FlowMod {
            command: fc::ADD,
            buffer_id: sluice_ofp::consts::OFP_NO_BUFFER,
            out_port: sluice_ofp::consts::port_no::ANY,
            out_group: sluice_ofp::consts::group_id::ANY,
            instructions: vec![sluice_ofp::instruction::Instruction::ApplyActions(vec![a])],
            ..Default::default()
        };
        p.flow_mod(&fm).err()
    };
    let mv = [0, 6, 0, 16, 0, 0, 0, 0, 0, 1, 0, 4, 0, 0, 2, 6];
    assert_eq!(wire(&mut p, mv.to_vec()), Some(ErrorCode::BMC_BAD_FIELD));
    let ld = [0, 7, 0, 15, 0, 0, 6, 2, 0, 0, 0, 0, 0, 0, 8, 0];
    assert_eq!(wire(&mut p, ld.to_vec()), Some(ErrorCode::BAC_BAD_SET_ARGUMENT));
    assert_eq!(wire(&mut p, vec![0, 8, 0, 0, 0, 0]), Some(ErrorCode::BAC_BAD_EXPERIMENTER));
}
