#!/usr/bin/python3
"""Generate tests/data/vectors.rs for crates/pipeline/tests/actions.rs: one
ovs-ofctl flow, one input frame on port 1, and the exact frames each port
must send, built by scapy (checksums, CRC32c included: an implementation
independent of sluice). Run with Debian's /usr/bin/python3 (python3-scapy):

    /usr/bin/python3 tests/gen_vectors.py > tests/data/vectors.rs
"""
from scapy.all import Ether, Dot1Q, Dot1AD, IP, IPv6, TCP, UDP, ICMP, ARP, Raw
from scapy.layers.inet6 import (ICMPv6EchoRequest, ICMPv6ND_NS, ICMPv6ND_NA,
    ICMPv6NDOptSrcLLAddr, ICMPv6NDOptDstLLAddr)
from scapy.layers.sctp import SCTP, SCTPChunkData
from scapy.contrib.mpls import MPLS
import struct
from scapy.layers.inet import in4_chksum

D = '00:00:00:00:00:02'
S = '00:00:00:00:00:01'
PAY = bytes(range(0x40, 0x60))

def pad(b, n=60):
    return b + b'\x00' * max(0, n - len(b))

def eth(t=None, dst=D, src=S):
    return Ether(dst=dst, src=src) if t is None else Ether(dst=dst, src=src, type=t)

def ip4(**kw):
    a = dict(src='10.0.0.1', dst='10.0.0.2', ttl=64, id=7, tos=0x22)
    a.update(kw)
    return IP(**a)

def ip6(**kw):
    a = dict(src='2001:db8::1', dst='2001:db8::2', hlim=64, tc=0x22, fl=0x12345)
    a.update(kw)
    return IPv6(**a)

def tcp(**kw):
    a = dict(sport=1000, dport=80, seq=1, ack=2, flags='A', window=8192)
    a.update(kw)
    return TCP(**a)

def udp(**kw):
    a = dict(sport=1000, dport=53)
    a.update(kw)
    return UDP(**a)

def sctp(**kw):
    a = dict(sport=1000, dport=2000, tag=0x01020304)
    a.update(kw)
    return SCTP(**a) / SCTPChunkData(data=b'abcdefgh')

def arp(**kw):
    a = dict(op=1, hwsrc=S, psrc='10.0.0.1', hwdst='00:00:00:00:00:00', pdst='10.0.0.2')
    a.update(kw)
    return ARP(**a)

def ns(tgt='fe80::2', sll=S):
    return ip6(src='fe80::1', dst='ff02::1:ff00:2', hlim=255, tc=0, fl=0) / ICMPv6ND_NS(tgt=tgt) / ICMPv6NDOptSrcLLAddr(lladdr=sll)

def na(tgt='fe80::2', tll=D):
    return ip6(src='fe80::2', dst='fe80::1', hlim=255, tc=0, fl=0) / ICMPv6ND_NA(tgt=tgt, R=0, S=1, O=1) / ICMPv6NDOptDstLLAddr(lladdr=tll)

def itag(isid, pcp=0):
    return Raw(struct.pack('!I', (pcp << 29) | isid))

def b(p):
    return pad(bytes(p))

TCP4 = eth() / ip4() / tcp() / PAY
UDP4 = eth() / ip4() / udp() / PAY

def udp_as(proto):
    # UDP4's datagram checksummed as if the IP header named `proto`.
    raw = bytearray(bytes(udp() / PAY))
    raw[6:8] = b'\x00\x00'
    raw[6:8] = struct.pack('!H', in4_chksum(proto, ip4(proto=proto), bytes(raw)))
    return bytes(raw)
ICMP4 = eth() / ip4() / ICMP(type=8, code=0, id=1, seq=1) / PAY
SCTP4 = eth() / ip4() / sctp()
ARP_ = eth() / arp()
TCP6 = eth() / ip6() / tcp() / PAY
UDP6 = eth() / ip6() / udp() / PAY
ICMP6 = eth() / ip6() / ICMPv6EchoRequest(id=1, seq=1, data=PAY)
NS = eth(dst='33:33:ff:00:00:02') / ns()
NA = eth() / na()
VLAN4 = eth() / Dot1Q(vlan=100, prio=3) / ip4() / udp() / PAY
SHORT_VLAN = eth() / Dot1Q(vlan=100, prio=3) / ip4() / udp()       # 46 bytes: a pop must pad
QINQ = eth() / Dot1AD(vlan=10, prio=5) / Dot1Q(vlan=100, prio=3) / ip4() / udp() / PAY
MPLS4 = eth() / MPLS(label=100, cos=3, s=1, ttl=20) / ip4() / udp() / PAY
MPLS2 = eth() / MPLS(label=100, cos=3, s=0, ttl=20) / MPLS(label=200, cos=5, s=1, ttl=30) / ip4() / udp() / PAY
SHORT_MPLS = eth() / MPLS(label=100, cos=0, s=1, ttl=20) / ip4() / udp()   # 46 bytes
PBB = eth(0x88e7, dst='00:00:00:00:00:0b', src='00:00:00:00:00:0a') / itag(0x123456, 2) / UDP4

V = []

def vec(name, flow, inp, *outs):
    """outs: (port, packet) pairs, in the order the pipeline sends them."""
    V.append((name, flow, b(inp), [(p, b(o)) for p, o in outs]))

# ---- outputs
vec('output_physical', 'in_port=1,actions=output:2', UDP4, (2, UDP4))
vec('output_two_ports_in_order', 'in_port=1,actions=output:3,output:2', UDP4, (3, UDP4), (2, UDP4))
vec('output_to_ingress_needs_in_port', 'in_port=1,actions=output:1', UDP4)
vec('output_in_port', 'in_port=1,actions=output:in_port', UDP4, (1, UDP4))
vec('output_all', 'in_port=1,actions=output:all', UDP4, (2, UDP4), (3, UDP4), (4, UDP4))
vec('output_flood', 'in_port=1,actions=output:flood', UDP4, (2, UDP4), (3, UDP4), (4, UDP4))
vec('apply_sees_earlier_edits', 'in_port=1,ip,actions=output:2,dec_ttl,output:3', UDP4,
    (2, UDP4), (3, eth() / ip4(ttl=63) / udp() / PAY))

# ---- TTLs
vec('dec_ttl_ipv4', 'ip,actions=dec_ttl,output:2', UDP4, (2, eth() / ip4(ttl=63) / udp() / PAY))
vec('set_nw_ttl_ipv4', 'ip,actions=set_nw_ttl:5,output:2', TCP4, (2, eth() / ip4(ttl=5) / tcp() / PAY))
vec('dec_ttl_ipv6', 'ipv6,actions=dec_ttl,output:2', UDP6, (2, eth() / ip6(hlim=63) / udp() / PAY))
vec('set_nw_ttl_ipv6', 'ipv6,actions=set_nw_ttl:9,output:2', UDP6, (2, eth() / ip6(hlim=9) / udp() / PAY))
vec('set_mpls_ttl', 'mpls,actions=set_mpls_ttl:9,output:2', MPLS4,
    (2, eth() / MPLS(label=100, cos=3, s=1, ttl=9) / ip4() / udp() / PAY))
vec('dec_mpls_ttl', 'mpls,actions=dec_mpls_ttl,output:2', MPLS4,
    (2, eth() / MPLS(label=100, cos=3, s=1, ttl=19) / ip4() / udp() / PAY))
vec('copy_ttl_in_mpls_to_ipv4', 'mpls,actions=copy_ttl_in,output:2', MPLS4,
    (2, eth() / MPLS(label=100, cos=3, s=1, ttl=20) / ip4(ttl=20) / udp() / PAY))
vec('copy_ttl_out_ipv4_to_mpls', 'mpls,actions=copy_ttl_out,output:2', MPLS4,
    (2, eth() / MPLS(label=100, cos=3, s=1, ttl=64) / ip4() / udp() / PAY))
vec('copy_ttl_in_label_to_label', 'mpls,actions=copy_ttl_in,output:2', MPLS2,
    (2, eth() / MPLS(label=100, cos=3, s=0, ttl=20) / MPLS(label=200, cos=5, s=1, ttl=20) / ip4() / udp() / PAY))
vec('copy_ttl_out_label_to_label', 'mpls,actions=copy_ttl_out,output:2', MPLS2,
    (2, eth() / MPLS(label=100, cos=3, s=0, ttl=30) / MPLS(label=200, cos=5, s=1, ttl=30) / ip4() / udp() / PAY))

# ---- VLAN
vec('push_vlan_8100_untagged', 'in_port=1,actions=push_vlan:0x8100,output:2', UDP4,
    (2, eth() / Dot1Q(vlan=0, prio=0) / ip4() / udp() / PAY))
vec('push_vlan_then_set_vid_pcp', 'in_port=1,actions=push_vlan:0x8100,set_field:4196->vlan_vid,set_field:5->vlan_pcp,output:2', UDP4,
    (2, eth() / Dot1Q(vlan=100, prio=5) / ip4() / udp() / PAY))
vec('push_vlan_88a8_copies_tci', 'vlan_vid=0x1000/0x1000,actions=push_vlan:0x88a8,output:2', VLAN4,
    (2, eth() / Dot1AD(vlan=100, prio=3) / Dot1Q(vlan=100, prio=3) / ip4() / udp() / PAY))
vec('pop_vlan', 'vlan_vid=0x1000/0x1000,actions=pop_vlan,output:2', VLAN4, (2, UDP4))
vec('pop_vlan_pads_to_60', 'vlan_vid=0x1000/0x1000,actions=pop_vlan,output:2', SHORT_VLAN,
    (2, eth() / ip4() / udp()))
vec('pop_vlan_outer_of_qinq', 'vlan_vid=0x1000/0x1000,actions=pop_vlan,output:2', QINQ,
    (2, eth() / Dot1Q(vlan=100, prio=3) / ip4() / udp() / PAY))

# ---- MPLS (OpenFlow 1.3: the new label is outermost, before VLAN tags)
vec('push_mpls_ipv4_copies_ttl', 'ip,actions=push_mpls:0x8847,output:2', UDP4,
    (2, eth() / MPLS(label=0, cos=0, s=1, ttl=64) / ip4() / udp() / PAY))
vec('push_mpls_multicast_ipv6', 'ipv6,actions=push_mpls:0x8848,output:2', UDP6,
    (2, eth(0x8848) / MPLS(label=0, cos=0, s=1, ttl=64) / ip6() / udp() / PAY))
vec('push_mpls_on_mpls_copies_label', 'mpls,actions=push_mpls:0x8847,output:2', MPLS4,
    (2, eth() / MPLS(label=100, cos=3, s=0, ttl=20) / MPLS(label=100, cos=3, s=1, ttl=20) / ip4() / udp() / PAY))
vec('push_mpls_outermost_before_vlan', 'vlan_vid=0x1000/0x1000,ip,actions=push_mpls:0x8847,output:2', VLAN4,
    (2, eth(0x8847) / MPLS(label=0, cos=0, s=1, ttl=64) / Raw(b'\x60\x64\x08\x00') / ip4() / udp() / PAY))
vec('pop_mpls', 'mpls,actions=pop_mpls:0x0800,output:2', MPLS4, (2, UDP4))
vec('pop_mpls_pads_to_60', 'mpls,actions=pop_mpls:0x0800,output:2', SHORT_MPLS, (2, eth() / ip4() / udp()))
vec('pop_mpls_inner_label', 'mpls,mpls_bos=0,actions=pop_mpls:0x8847,output:2', MPLS2,
    (2, eth() / MPLS(label=200, cos=5, s=1, ttl=30) / ip4() / udp() / PAY))

# ---- PBB
vec('push_pbb', 'in_port=1,actions=push_pbb:0x88e7,output:2', UDP4,
    (2, eth(0x88e7) / itag(0) / UDP4))
vec('push_pbb_then_set_isid', 'in_port=1,actions=push_pbb:0x88e7,set_field:0xabcdef->pbb_isid,output:2', UDP4,
    (2, eth(0x88e7) / itag(0xabcdef) / UDP4))
vec('pop_pbb', 'dl_type=0x88e7,actions=pop_pbb,output:2', PBB, (2, UDP4))

# ---- set_field, every settable field (tunnel_id is metadata: see actions.rs)
sf = lambda name, flow, inp, out: vec('set_field_' + name, flow, inp, (2, out))
sf('eth_dst', 'in_port=1,actions=set_field:aa:bb:cc:dd:ee:ff->eth_dst,output:2', UDP4, eth(dst='aa:bb:cc:dd:ee:ff') / ip4() / udp() / PAY)
sf('eth_src', 'in_port=1,actions=set_field:aa:bb:cc:dd:ee:01->eth_src,output:2', UDP4, eth(src='aa:bb:cc:dd:ee:01') / ip4() / udp() / PAY)
sf('eth_type', 'dl_type=0x0806,actions=set_field:0x88b5->eth_type,output:2', ARP_, eth(0x88b5) / arp())
sf('vlan_vid', 'vlan_vid=0x1000/0x1000,actions=set_field:4097->vlan_vid,output:2', VLAN4, eth() / Dot1Q(vlan=1, prio=3) / ip4() / udp() / PAY)
sf('vlan_pcp', 'vlan_vid=0x1000/0x1000,actions=set_field:7->vlan_pcp,output:2', VLAN4, eth() / Dot1Q(vlan=100, prio=7) / ip4() / udp() / PAY)
sf('ip_dscp_ipv4', 'ip,actions=set_field:46->ip_dscp,output:2', UDP4, eth() / ip4(tos=(46 << 2) | 2) / udp() / PAY)
sf('ip_ecn_ipv4', 'ip,actions=set_field:1->ip_ecn,output:2', UDP4, eth() / ip4(tos=0x21) / udp() / PAY)
sf('ip_dscp_ipv6', 'ipv6,actions=set_field:46->ip_dscp,output:2', UDP6, eth() / ip6(tc=(46 << 2) | 2) / udp() / PAY)
sf('ip_ecn_ipv6', 'ipv6,actions=set_field:3->ip_ecn,output:2', UDP6, eth() / ip6(tc=0x23) / udp() / PAY)
# ip_proto is part of the UDP pseudo-header: the UDP checksum follows it.
sf('ip_proto_ipv4', 'ip,actions=set_field:99->ip_proto,output:2', UDP4, eth() / ip4(proto=99) / Raw(udp_as(99)))
sf('ipv4_src_udp', 'ip,actions=set_field:192.168.1.1->ip_src,output:2', UDP4, eth() / ip4(src='192.168.1.1') / udp() / PAY)
sf('ipv4_dst_tcp', 'ip,actions=set_field:172.16.0.9->ip_dst,output:2', TCP4, eth() / ip4(dst='172.16.0.9') / tcp() / PAY)
sf('ipv4_src_icmp', 'ip,actions=set_field:192.168.1.1->ip_src,output:2', ICMP4, eth() / ip4(src='192.168.1.1') / ICMP(type=8, code=0, id=1, seq=1) / PAY)
sf('ipv4_dst_sctp', 'ip,actions=set_field:172.16.0.9->ip_dst,output:2', SCTP4, eth() / ip4(dst='172.16.0.9') / sctp())
sf('tcp_src', 'tcp,actions=set_field:4321->tcp_src,output:2', TCP4, eth() / ip4() / tcp(sport=4321) / PAY)
sf('tcp_dst', 'tcp,actions=set_field:8080->tcp_dst,output:2', TCP4, eth() / ip4() / tcp(dport=8080) / PAY)
sf('tcp_dst_ipv6', 'tcp6,actions=set_field:8080->tcp_dst,output:2', TCP6, eth() / ip6() / tcp(dport=8080) / PAY)
sf('udp_src', 'udp,actions=set_field:5353->udp_src,output:2', UDP4, eth() / ip4() / udp(sport=5353) / PAY)
sf('udp_dst', 'udp,actions=set_field:5353->udp_dst,output:2', UDP4, eth() / ip4() / udp(dport=5353) / PAY)
sf('udp_dst_ipv6', 'udp6,actions=set_field:5353->udp_dst,output:2', UDP6, eth() / ip6() / udp(dport=5353) / PAY)
sf('sctp_src', 'sctp,actions=set_field:7->sctp_src,output:2', SCTP4, eth() / ip4() / sctp(sport=7))
sf('sctp_dst', 'sctp,actions=set_field:9->sctp_dst,output:2', SCTP4, eth() / ip4() / sctp(dport=9))
sf('icmpv4_type', 'icmp,actions=set_field:0->icmp_type,output:2', ICMP4, eth() / ip4() / ICMP(type=0, code=0, id=1, seq=1) / PAY)
sf('icmpv4_code', 'icmp,actions=set_field:3->icmp_code,output:2', ICMP4, eth() / ip4() / ICMP(type=8, code=3, id=1, seq=1) / PAY)
sf('arp_op', 'arp,actions=set_field:2->arp_op,output:2', ARP_, eth() / arp(op=2))
sf('arp_spa', 'arp,actions=set_field:10.9.9.9->arp_spa,output:2', ARP_, eth() / arp(psrc='10.9.9.9'))
sf('arp_tpa', 'arp,actions=set_field:10.9.9.8->arp_tpa,output:2', ARP_, eth() / arp(pdst='10.9.9.8'))
sf('arp_sha', 'arp,actions=set_field:aa:bb:cc:00:00:01->arp_sha,output:2', ARP_, eth() / arp(hwsrc='aa:bb:cc:00:00:01'))
sf('arp_tha', 'arp,actions=set_field:aa:bb:cc:00:00:02->arp_tha,output:2', ARP_, eth() / arp(hwdst='aa:bb:cc:00:00:02'))
sf('ipv6_src', 'ipv6,actions=set_field:2001:db8::99->ipv6_src,output:2', TCP6, eth() / ip6(src='2001:db8::99') / tcp() / PAY)
sf('ipv6_dst', 'ipv6,actions=set_field:2001:db8:1::7->ipv6_dst,output:2', UDP6, eth() / ip6(dst='2001:db8:1::7') / udp() / PAY)
sf('ipv6_dst_icmpv6', 'ipv6,actions=set_field:2001:db8:1::7->ipv6_dst,output:2', ICMP6, eth() / ip6(dst='2001:db8:1::7') / ICMPv6EchoRequest(id=1, seq=1, data=PAY))
sf('ipv6_flabel', 'ipv6,actions=set_field:0xfedcb->ipv6_label,output:2', UDP6, eth() / ip6(fl=0xfedcb) / udp() / PAY)
sf('icmpv6_type', 'icmp6,actions=set_field:129->icmpv6_type,output:2', ICMP6, eth() / ip6() / ICMPv6EchoRequest(type=129, id=1, seq=1, data=PAY))
sf('icmpv6_code', 'icmp6,actions=set_field:4->icmpv6_code,output:2', ICMP6, eth() / ip6() / ICMPv6EchoRequest(code=4, id=1, seq=1, data=PAY))
sf('ipv6_nd_target', 'icmp6,icmpv6_type=135,actions=set_field:fe80::99->nd_target,output:2', NS, eth(dst='33:33:ff:00:00:02') / ns(tgt='fe80::99'))
sf('ipv6_nd_sll', 'icmp6,icmpv6_type=135,actions=set_field:aa:bb:cc:00:00:03->nd_sll,output:2', NS, eth(dst='33:33:ff:00:00:02') / ns(sll='aa:bb:cc:00:00:03'))
sf('ipv6_nd_tll', 'icmp6,icmpv6_type=136,actions=set_field:aa:bb:cc:00:00:04->nd_tll,output:2', NA, eth() / na(tll='aa:bb:cc:00:00:04'))
sf('mpls_label', 'mpls,actions=set_field:0xfffff->mpls_label,output:2', MPLS4, eth() / MPLS(label=0xfffff, cos=3, s=1, ttl=20) / ip4() / udp() / PAY)
sf('mpls_tc', 'mpls,actions=set_field:6->mpls_tc,output:2', MPLS4, eth() / MPLS(label=100, cos=6, s=1, ttl=20) / ip4() / udp() / PAY)
sf('mpls_bos', 'mpls,actions=set_field:0->mpls_bos,output:2', MPLS4, eth() / MPLS(label=100, cos=3, s=0, ttl=20) / ip4() / udp() / PAY)
sf('pbb_isid', 'dl_type=0x88e7,actions=set_field:0x000042->pbb_isid,output:2', PBB, eth(0x88e7, dst='00:00:00:00:00:0b', src='00:00:00:00:00:0a') / itag(0x42, 2) / UDP4)

# ---- the action set executes in the spec's order (5.10), not as written
vec('action_set_order_push_set_dec_output', 'ip,actions=write_actions(output:2,set_field:4196->vlan_vid,dec_ttl,push_vlan:0x8100)', UDP4,
    (2, eth() / Dot1Q(vlan=100, prio=0) / ip4(ttl=63) / udp() / PAY))
vec('action_set_order_copy_ttl_in_before_pop', 'mpls,actions=write_actions(output:2,pop_mpls:0x0800,copy_ttl_in)', MPLS4,
    (2, eth() / ip4(ttl=20) / udp() / PAY))
vec('action_set_order_mpls_before_vlan', 'ip,actions=write_actions(output:2,push_vlan:0x8100,push_mpls:0x8847)', UDP4,
    (2, eth() / Dot1Q(vlan=0, prio=0, type=0x8847) / MPLS(label=0, cos=0, s=1, ttl=64) / ip4() / udp() / PAY))
vec('action_set_order_copy_ttl_out_after_push', 'ip,actions=write_actions(output:2,copy_ttl_out,push_mpls:0x8847,dec_mpls_ttl)', UDP4,
    (2, eth() / MPLS(label=0, cos=0, s=1, ttl=63) / ip4() / udp() / PAY))
vec('action_set_one_per_type_last_wins', 'ip,actions=write_actions(set_nw_ttl:7,output:3),goto_table:1|table=1,actions=write_actions(set_nw_ttl:9,output:2)', UDP4,
    (2, eth() / ip4(ttl=9) / udp() / PAY))
vec('action_list_order_push_vlan_then_mpls', 'ip,actions=push_vlan:0x8100,push_mpls:0x8847,output:2', UDP4,
    (2, eth() / MPLS(label=0, cos=0, s=1, ttl=64) / Raw(b'\x00\x00\x08\x00') / ip4() / udp() / PAY))

print('// Generated by tests/gen_vectors.py (scapy); do not edit by hand.')
print('// (name, flows separated by |, input frame on port 1, frames sent as (port, frame)).')
print('/// (name, flows, input hex, expected (port, hex) frames).')
print('pub type Vector = (&\'static str, &\'static str, &\'static str, &\'static [(u32, &\'static str)]);')
print('#[rustfmt::skip]')
print('pub const VECTORS: &[Vector] = &[')
for name, flow, inp, outs in V:
    o = ', '.join('(%d, "%s")' % (p, x.hex()) for p, x in outs)
    print('    ("%s", "%s", "%s", &[%s]),' % (name, flow, inp.hex(), o))
print('];')
