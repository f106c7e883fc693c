#!/usr/bin/python3
"""Generate the replay scenarios under tests/trace/: for each scenario a
flow file (and groups/meters), input pcaps, and the exact pcaps each port
must receive, built by scapy (checksums included) — independently of
sluice. Run from the repository root with Debian's python3-scapy:

    /usr/bin/python3 tests/trace/gen.py

Each scenario directory holds `steps`: one replay per line,
`ARGS => EXPECT` where ARGS are `sluice replay` arguments (paths relative
to the scenario directory; --flows/--groups/--meters are added when the
files exist) and EXPECT is a directory of expected `port-N.pcap` /
`controller.pcap` files (every file there, and no other, must be written)
or `spread` (SELECT groups: checked by property, see replay_scenarios.rs).
"""
import os, struct
from scapy.all import Ether, Dot1Q, Dot1AD, IP, TCP, UDP, ARP, Raw, wrpcap
from scapy.contrib.mpls import MPLS

ROOT = os.path.dirname(os.path.abspath(__file__))
H1, H2, R = '00:00:00:00:01:01', '00:00:00:00:02:02', '00:00:00:00:aa:aa'
PAY = bytes(range(0x30, 0x50))

def pad(p):
    b = bytes(p)
    return Ether(b + b'\x00' * max(0, 60 - len(b)))

def at(pkts, t0=1700000000.0, step=0.001):
    out = []
    for i, p in enumerate(pkts):
        p = pad(p)
        p.time = t0 + i * step if isinstance(step, float) else step[i]
        out.append(p)
    return out

def udp(i=0, src='10.0.0.1', dst='10.0.1.2', ttl=64, tos=0, dport=53, dst_mac=H2, src_mac=H1):
    return Ether(dst=dst_mac, src=src_mac) / IP(src=src, dst=dst, ttl=ttl, tos=tos, id=i) / UDP(sport=1000 + i, dport=dport) / PAY

def tcp(i=0, dport=80, src='10.0.0.1', dst='10.0.1.2', ttl=64):
    return Ether(dst=H2, src=H1) / IP(src=src, dst=dst, ttl=ttl, id=i) / TCP(sport=2000 + i, dport=dport, flags='S') / PAY

def scenario(name, flows, steps, groups=None, meters=None, pcaps=None, expect=None):
    d = os.path.join(ROOT, name)
    os.makedirs(d, exist_ok=True)
    for fn, text in (('flows', flows), ('groups', groups), ('meters', meters)):
        if text:
            open(os.path.join(d, fn), 'w').write(text.strip() + '\n')
    for fn, pk in (pcaps or {}).items():
        wrpcap(os.path.join(d, fn), pk)
    for sub, files in (expect or {}).items():
        e = os.path.join(d, sub)
        os.makedirs(e, exist_ok=True)
        for f in os.listdir(e):
            os.remove(os.path.join(e, f))
        for fn, pk in files.items():
            wrpcap(os.path.join(e, fn), pk)
    open(os.path.join(d, 'steps'), 'w').write('\n'.join(steps) + '\n')

def same_times(src, pkts):
    out = []
    for s, p in zip(src, pkts):
        p = pad(p)
        p.time = s.time
        out.append(p)
    return out

# ---- QinQ (802.1ad): the provider edge pushes a C-tag and an S-tag, the
# far edge pops both. Push onto a tagged frame copies the inner VID/PCP,
# then set_field rewrites the new outer tag.
cust = at([udp(i) for i in range(4)])
qinq = same_times(cust, [Ether(dst=H2, src=H1) / Dot1AD(vlan=10, prio=5) / Dot1Q(vlan=100, prio=0) / IP(bytes(c[IP])) for c in cust])
scenario('qinq', '''
# customer port 1 -> provider port 2: C-tag 100, S-tag 10 (pcp 5)
in_port=1,actions=push_vlan:0x8100,set_field:4196->vlan_vid,push_vlan:0x88a8,set_field:4106->vlan_vid,set_field:5->vlan_pcp,output:2
# provider port 2 -> customer port 1: pop both tags
in_port=2,vlan_vid=0x100a,actions=pop_vlan,pop_vlan,output:1
''', ['--in-port 1 --pcap customer.pcap => push', '--in-port 2 --pcap push/port-2.pcap => pop'],
    pcaps={'customer.pcap': cust}, expect={'push': {'port-2.pcap': qinq}, 'pop': {'port-1.pcap': cust}})

# ---- MPLS: ingress LER pushes label 1001 (TTL copied from IP), the LSR
# swaps to 2002 and decrements, the egress LER copies the TTL in and pops.
# The IP packet with TTL 1 expires at the LSR: INVALID_TTL packet-in.
ips = at([udp(0), udp(1), udp(2, ttl=1), tcp(3)])
def lse(p, label, ttl):
    return Ether(dst=H2, src=H1) / MPLS(label=label, cos=0, s=1, ttl=ttl) / IP(bytes(p[IP]))
ingress = same_times(ips, [lse(p, 1001, p[IP].ttl) for p in ips])
lsr_ok = [p for p in ips if p[IP].ttl > 1]
lsr = same_times(lsr_ok, [lse(p, 2002, p[IP].ttl - 1) for p in lsr_ok])
# The packet-in carries the packet as modified so far (label already swapped).
expired = same_times([ips[2]], [lse(ips[2], 2002, 1)])
def egress_of(p):
    ip = IP(bytes(p[IP]))
    ip.ttl -= 1
    del ip.chksum
    return Ether(dst=H2, src=H1) / IP(bytes(ip))
egress = same_times(lsr_ok, [egress_of(p) for p in lsr_ok])
scenario('mpls', '''
# ingress LER (port 1 -> 2)
in_port=1,ip,actions=push_mpls:0x8847,set_field:1001->mpls_label,output:2
# LSR (port 2 -> 3): swap and decrement
in_port=2,mpls,mpls_label=1001,actions=set_field:2002->mpls_label,dec_mpls_ttl,output:3
# egress LER (port 3 -> 4): TTL back into IP, pop
in_port=3,mpls,mpls_label=2002,mpls_bos=1,actions=copy_ttl_in,pop_mpls:0x0800,output:4
''', ['--in-port 1 --pcap ip.pcap => ingress', '--in-port 2 --pcap ingress/port-2.pcap => lsr',
      '--in-port 3 --pcap lsr/port-3.pcap => egress'],
    pcaps={'ip.pcap': ips},
    expect={'ingress': {'port-2.pcap': ingress}, 'lsr': {'port-3.pcap': lsr, 'controller.pcap': expired},
            'egress': {'port-4.pcap': egress}})

# ---- PBB (802.1ah): the backbone edge encapsulates customer frames with
# B-DA/B-SA and I-SID 0xabcd; the far edge decapsulates.
BDA, BSA = '00:00:00:00:b0:02', '00:00:00:00:b0:01'
cust2 = at([udp(i) for i in range(3)] + [Ether(dst=H2, src=H1) / Dot1Q(vlan=7) / IP(src='10.0.0.1', dst='10.0.1.2') / UDP() / PAY])
def pbb_of(c):
    return Ether(dst=BDA, src=BSA, type=0x88e7) / Raw(struct.pack('!I', 0xabcd)) / Raw(bytes(c))
enc = same_times(cust2, [pbb_of(c) for c in cust2])
scenario('pbb', '''
in_port=1,actions=push_pbb:0x88e7,set_field:0xabcd->pbb_isid,set_field:00:00:00:00:b0:02->eth_dst,set_field:00:00:00:00:b0:01->eth_src,output:2
in_port=2,dl_type=0x88e7,pbb_isid=0xabcd,actions=pop_pbb,output:1
''', ['--in-port 1 --pcap customer.pcap => encap', '--in-port 2 --pcap encap/port-2.pcap => decap'],
    pcaps={'customer.pcap': cust2}, expect={'encap': {'port-2.pcap': enc}, 'decap': {'port-1.pcap': cust2}})

# ---- Fast failover: port 2 is primary, port 3 backup; port 2's link goes
# down before the 4th packet.
ff_in = at([udp(i) for i in range(7)])
scenario('fast_failover', 'in_port=1,actions=group:1',
    ['--in-port 1 --pcap in.pcap --down-at 3:2 => failover', '--in-port 1 --pcap in.pcap --down 2,3 => dead'],
    groups='group_id=1,type=ff,bucket=watch_port:2,output:2,bucket=watch_port:3,output:3',
    pcaps={'in.pcap': ff_in}, expect={'failover': {'port-2.pcap': ff_in[:3], 'port-3.pcap': ff_in[3:]}, 'dead': {}})

# ---- SELECT group (link aggregation, BOFUSS's load balancing use case):
# 48 flows, each sent twice.
sel = at([udp(i % 48, src='10.0.%d.%d' % (i % 48 // 8, i % 48)) for i in range(96)])
scenario('select', 'in_port=1,actions=group:7', ['--in-port 1 --pcap in.pcap => spread'],
    groups='group_id=7,type=select,bucket=output:2,bucket=output:3,bucket=output:4', pcaps={'in.pcap': sel})

# ---- Meter: 10 packets/s with a burst of 5. 12 packets within 11 ms:
# the first 5 pass; 0.5 s later 5 more tokens; then 1 s later all refill.
times = [1700000000.0 + i * 0.001 for i in range(12)] + [1700000000.511 + i * 0.001 for i in range(7)] + [1700000002.0]
m_in = at([udp(i) for i in range(20)], step=times)
passed = m_in[0:5] + m_in[12:17] + m_in[19:20]
scenario('meter_drop', 'in_port=1,actions=meter:1,output:2', ['--in-port 1 --pcap in.pcap => rate'],
    meters='meter=1,pktps,burst,band=type=drop,rate=10,burst_size=5', pcaps={'in.pcap': m_in},
    expect={'rate': {'port-2.pcap': passed}})

# ---- DSCP remark (QoS per application flow): AF11 traffic above 10 pkt/s
# is remarked AF12 instead of dropped.
d_in = at([udp(i, tos=10 << 2) for i in range(8)])
def remark(p):
    ip = IP(bytes(p[IP]))
    ip.tos = 12 << 2
    del ip.chksum
    return Ether(dst=H2, src=H1) / IP(bytes(ip))
d_out = d_in[:3] + same_times(d_in[3:], [remark(p) for p in d_in[3:]])
scenario('meter_dscp_remark', 'ip,actions=meter:2,output:2', ['--in-port 1 --pcap in.pcap => remark'],
    meters='meter=2,pktps,burst,band=type=dscp_remark,rate=10,burst_size=3,prec_level=1', pcaps={'in.pcap': d_in},
    expect={'remark': {'port-2.pcap': d_out}})

# ---- Multi-table L2/L3 pipeline: table 0 ACL, table 1 IPv4 routing
# (longest prefix by priority: rewrite MACs, dec_ttl), table 2 L2 by MAC.
N1, N2, N3 = '00:00:00:00:0b:01', '00:00:00:00:0b:02', '00:00:00:00:0b:03'
l3_in = at([
    udp(0, dst='10.1.0.5', dst_mac=R),          # 10.1/16 -> N1 on port 2
    udp(1, dst='10.1.2.9', dst_mac=R),          # 10.1.2/24 -> N2 on port 3
    tcp(2, dport=23, dst='10.1.0.5'),           # telnet: ACL drop
    udp(3, dst='192.168.0.1', dst_mac=R),       # no route: to the controller
    udp(4, dst='10.1.2.9', dst_mac=R, ttl=1),   # expires: INVALID_TTL packet-in
    Ether(dst='ff:ff:ff:ff:ff:ff', src=H1) / ARP(op=1, hwsrc=H1, psrc='10.0.0.1', pdst='10.0.0.254'),  # ARP: flood
    udp(6, dst='10.1.0.7', dst_mac=N3),         # not to the router MAC: L2 switched to port 4
])
def routed(p, mac):
    ip = IP(bytes(p[IP]))
    ip.ttl -= 1
    del ip.chksum
    return Ether(dst=mac, src=R) / IP(bytes(ip))
scenario('l2_l3_pipeline', '''
table=0,priority=100,tcp,tp_dst=23,actions=drop
table=0,priority=50,arp,actions=output:flood
table=0,priority=10,dl_dst=00:00:00:00:aa:aa,ip,actions=goto_table:1
table=0,priority=0,actions=goto_table:2
table=1,priority=24,ip,nw_dst=10.1.2.0/24,actions=set_field:00:00:00:00:0b:02->eth_dst,set_field:00:00:00:00:aa:aa->eth_src,dec_ttl,goto_table:2
table=1,priority=16,ip,nw_dst=10.1.0.0/16,actions=set_field:00:00:00:00:0b:01->eth_dst,set_field:00:00:00:00:aa:aa->eth_src,dec_ttl,goto_table:2
table=1,priority=0,actions=controller:128
table=2,dl_dst=00:00:00:00:0b:01,actions=output:2
table=2,dl_dst=00:00:00:00:0b:02,actions=output:3
table=2,dl_dst=00:00:00:00:0b:03,actions=output:4
''', ['--in-port 1 --pcap in.pcap --ports 1,2,3,4 => route'], pcaps={'in.pcap': l3_in},
    expect={'route': {
        'port-2.pcap': same_times([l3_in[0]], [routed(l3_in[0], N1)]) + [l3_in[5]],
        'port-3.pcap': same_times([l3_in[1]], [routed(l3_in[1], N2)]) + [l3_in[5]],
        'port-4.pcap': [l3_in[5], l3_in[6]],
        'port-LOCAL.pcap': [l3_in[5]],
        # No route: as received. Expired: as modified so far (MACs rewritten).
        'controller.pcap': [l3_in[3]] + same_times([l3_in[4]], [Ether(dst=N2, src=R) / IP(bytes(l3_in[4][IP]))]),
    }})

# ---- BOFUSS's AOSS firewall example: proactive drop rules, and unmatched
# packets take the default path (a table-miss entry to port 2) instead of
# going to the controller.
fw_in = at([udp(0), tcp(1, dport=23), udp(2, src='10.6.6.6'), tcp(3, dport=80), udp(4, dport=161)])
scenario('aoss_firewall', '''
priority=100,tcp,tp_dst=23,actions=drop
priority=100,ip,nw_src=10.6.6.0/24,actions=drop
priority=100,udp,tp_dst=161,actions=drop
priority=0,actions=output:2
''', ['--in-port 1 --pcap in.pcap => fw'], pcaps={'in.pcap': fw_in},
    expect={'fw': {'port-2.pcap': [fw_in[0], fw_in[3]]}})
